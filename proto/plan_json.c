/* plan_json.c - the planner's answer as JSON; see plan_json.h. */
#include "plan_json.h"

#include "json_util.h"
#include "schedule_json.h"

static json_t *mp__ids(const mp_graph_t *g, const uint32_t *idx, size_t n) {
  json_t *a = json_array();
  size_t i;
  if (a == NULL) return NULL;
  for (i = 0; i < n; i++)
    if (json_array_append_new(a, json_string(g->nodes[idx[i]].id)) != 0) {
      json_decref(a);
      return NULL;
    }
  return a;
}

json_t *mp_plan_result_to_json(const mp_graph_t *g, const mp_plan_result_t *r,
                               const char *graph_hash, int with_schedule, int with_timeline) {
  json_t *o = json_object(), *t;
  const mp_sim_report_t *s = &r->sim;
  int have = r->schedule != NULL;
  if (o == NULL) return NULL;
  if (mp_json_set(o, "feasible", json_boolean(r->feasible)) ||
      mp_json_set(o, "solver", json_string(mp_solver_name(r->solver))) ||
      mp_json_set(o, "solver_used", json_string(mp_solver_name(r->solver_used))) ||
      mp_json_set(o, "objective", json_string(mp_objective_name(r->objective))) ||
      mp_json_set(o, "accounting", json_string(mp_accounting_name(r->accounting))) ||
      mp_json_set(o, "exact", json_boolean(r->exact)) ||
      mp_json_set(o, "budget", mp_json_u64(r->budget)) ||
      mp_json_set(o, "const_bytes", mp_json_u64(g->const_bytes)))
    goto fail;
  if (r->exact_reason[0] && mp_json_set(o, "exact_reason", json_string(r->exact_reason))) goto fail;
  if (r->source && mp_json_set(o, "source", json_string(r->source))) goto fail;
  if (r->n_lower_sets && mp_json_set(o, "lower_sets", mp_json_u64(r->n_lower_sets))) goto fail;
  if (!r->feasible && mp_json_set(o, "min_feasible_budget", r->min_feasible_budget
                                                                ? mp_json_u64(r->min_feasible_budget)
                                                                : json_null()))
    goto fail;
  if (have) {
    if (mp_json_set(o, "peak_bytes", mp_json_u64(s->peak_bytes)) ||
        mp_json_set(o, "overhead_pct", json_real(s->overhead_pct)) ||
        mp_json_set(o, "segments", json_integer(r->n_segments)) ||
        mp_json_set(o, "checkpoints", mp__ids(g, r->checkpoints, r->n_checkpoints)) ||
        mp_json_set(o, "recomputed", mp__ids(g, s->recomputed, s->n_recomputed)))
      goto fail;
    t = json_object();
    if (mp_json_set(o, "time", t) || mp_json_set(t, "forward", mp_json_number(s->time_forward)) ||
        mp_json_set(t, "backward", mp_json_number(s->time_backward)) ||
        mp_json_set(t, "recompute", mp_json_number(s->time_recompute)) ||
        mp_json_set(t, "total", mp_json_number(s->time_total)))
      goto fail;
  }
  if (r->has_model) {
    t = json_object();
    if (mp_json_set(o, "model", t) || mp_json_set(t, "recompute", mp_json_number(r->model_recompute)) ||
        mp_json_set(t, "peak", mp_json_u64(r->model_peak)))
      goto fail;
  }
  if (have && with_schedule) {
    json_t *sj = mp_schedule_to_json(g, r->schedule), *steps;
    if (sj == NULL) goto fail;
    steps = json_object_get(sj, "steps");
    if (steps == NULL || json_object_set(o, "schedule", steps) != 0) {
      json_decref(sj);
      goto fail;
    }
    json_decref(sj);
  }
  if (have && with_timeline) {
    json_t *a = json_array();
    size_t i;
    if (mp_json_set(o, "timeline", a)) goto fail;
    for (i = 0; i < s->n_steps; i++)
      if (json_array_append_new(a, mp_json_u64(s->timeline[i])) != 0) goto fail;
  }
  if (mp_json_set(o, "graph_hash", json_string(graph_hash ? graph_hash : "")) ||
      mp_json_set(o, "solve_ms", json_real(r->solve_ms)))
    goto fail;
  return o;
fail:
  json_decref(o);
  return NULL;
}
