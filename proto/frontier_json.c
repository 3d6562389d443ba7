/* frontier_json.c - the frontier as JSON; see frontier_json.h. */
#include "frontier_json.h"

#include "json_util.h"

json_t *mp_frontier_to_json(const mp_frontier_t *f, const char *graph_hash) {
  json_t *o = json_object(), *pts = json_array();
  size_t i;
  if (o == NULL || pts == NULL) {
    json_decref(o);
    json_decref(pts);
    return NULL;
  }
  if (mp_json_set(o, "points", pts) ||
      mp_json_set(o, "graph_hash", json_string(graph_hash ? graph_hash : "")) ||
      mp_json_set(o, "solver", json_string(mp_solver_name(f->solver))) ||
      mp_json_set(o, "solver_used", json_string(mp_solver_name(f->solver_used))) ||
      mp_json_set(o, "exact", json_boolean(f->exact)) ||
      mp_json_set(o, "peak_no_recompute", mp_json_u64(f->peak_no_recompute)) ||
      mp_json_set(o, "solve_ms", json_real(f->solve_ms)))
    goto fail;
  if (f->exact_reason[0] && mp_json_set(o, "exact_reason", json_string(f->exact_reason))) goto fail;
  for (i = 0; i < f->n_points; i++) {
    json_t *p = json_object();
    if (json_array_append_new(pts, p) != 0 || p == NULL ||
        mp_json_set(p, "budget", mp_json_u64(f->points[i].budget)) ||
        mp_json_set(p, "recompute", mp_json_number(f->points[i].recompute)) ||
        mp_json_set(p, "overhead_pct", json_real(f->points[i].overhead_pct)))
      goto fail;
  }
  return o;
fail:
  json_decref(o);
  return NULL;
}
