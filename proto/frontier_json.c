/* frontier_json.c - the frontier as JSON; see frontier_json.h. */
#include "frontier_json.h"

#include "json_util.h"
#include "plan_json.h"

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
  if (f->migrate) {
    /* the device with its time unit resolved for the graph */
    mp_device_t d = f->device;
    d.time_unit_s = f->time_unit_s;
    if (mp_json_set(o, "device", mp_device_to_json(&d, NULL))) goto fail;
  }
  for (i = 0; i < f->n_points; i++) {
    const mp_frontier_point_t *q = &f->points[i];
    json_t *p = json_object();
    if (json_array_append_new(pts, p) != 0 || p == NULL ||
        mp_json_set(p, "budget", mp_json_u64(q->budget)) ||
        mp_json_set(p, "recompute", mp_json_number(q->recompute)) ||
        mp_json_set(p, "overhead_pct", json_real(q->overhead_pct)))
      goto fail;
    if (f->migrate &&
        (mp_json_set(p, "extra_time", mp_json_number(q->extra_time)) ||
         mp_json_set(p, "stall", mp_json_number(q->stall)) ||
         mp_json_set(p, "peak_bytes", mp_json_u64(q->peak_bytes)) ||
         mp_json_set(p, "host_peak_bytes", mp_json_u64(q->host_peak_bytes)) ||
         mp_json_set(p, "swapped", mp_json_u64(q->n_swapped)) ||
         mp_json_set(p, "recomputed", mp_json_u64(q->n_recomputed))))
      goto fail;
  }
  return o;
fail:
  json_decref(o);
  return NULL;
}
