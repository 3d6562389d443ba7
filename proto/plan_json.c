/* plan_json.c - the planner's answer and the device model as JSON; see
 * plan_json.h. */
#include "plan_json.h"

#include <stdint.h>

#include "dims_json.h"
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

json_t *mp_device_to_json(const mp_device_t *d, const mp_graph_t *g) {
  json_t *o = json_object();
  if (o == NULL) return NULL;
  if (mp_json_set(o, "h2d_bandwidth", mp_json_number(d->h2d_bytes_per_s)) ||
      mp_json_set(o, "d2h_bandwidth", mp_json_number(d->d2h_bytes_per_s)) ||
      mp_json_set(o, "latency", json_real(d->latency_s)) ||
      mp_json_set(o, "copy_engines", json_integer(d->copy_engines)) ||
      mp_json_set(o, "host_budget", d->host_bytes == UINT64_MAX ? json_null() : mp_json_u64(d->host_bytes)) ||
      mp_json_set(o, "time_unit_seconds", json_real(g ? mp_device_unit_s(d, g) : d->time_unit_s)) ||
      mp_json_set(o, "intra_layer_reuse", json_boolean(d->intra_layer_reuse)) ||
      /* the request's form: "jit", or the lookahead in backward steps */
      mp_json_set(o, "prefetch", d->prefetch_lookahead == 0 ? json_string("jit")
                                                             : json_integer(d->prefetch_lookahead)) ||
      mp_json_set(o, "allocator", json_string(mp_allocator_name(d->allocator)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The constant memory under the device's allocator (saturated: the
 * simulator refuses a graph whose rounded constant passes 64 bits). */
static uint64_t mp__const_bytes(const mp_graph_t *g, const mp_device_t *d) {
  uint64_t c;
  return mp_device_const_bytes(d, g, &c) == 0 ? c : UINT64_MAX;
}

/* Does the answer carry the migration fields? For the swap solvers always
 * (a client asking for migration gets the same shape even when nothing had
 * to move), for the others when the schedule happens to swap. */
static int mp__migrates(const mp_plan_result_t *r) {
  return mp_solver_swaps(r->solver) || mp_solver_swaps(r->solver_used) || r->sim.n_swap_out > 0 ||
         r->sim.n_swapped > 0;
}

json_t *mp_plan_result_to_json_ex(const mp_graph_t *g, const mp_plan_result_t *r,
                                  const char *graph_hash, const mp_device_t *device,
                                  int with_schedule, int with_timeline) {
  json_t *o = json_object(), *t;
  const mp_sim_report_t *s = &r->sim;
  mp_device_t defaults;
  int have = r->schedule != NULL, migrates = mp__migrates(r);
  if (o == NULL) return NULL;
  if (device == NULL) {
    mp_device_init(&defaults);
    device = &defaults;
  }
  if (mp_json_set(o, "feasible", json_boolean(r->feasible)) ||
      mp_json_set(o, "solver", json_string(mp_solver_name(r->solver))) ||
      mp_json_set(o, "solver_used", json_string(mp_solver_name(r->solver_used))) ||
      mp_json_set(o, "objective", json_string(mp_objective_name(r->objective))) ||
      mp_json_set(o, "accounting", json_string(mp_accounting_name(r->accounting))) ||
      mp_json_set(o, "exact", json_boolean(r->exact)) ||
      mp_json_set(o, "budget", mp_json_u64(r->budget)) ||
      mp_json_set(o, "const_bytes", mp_json_u64(mp__const_bytes(g, device))))
    goto fail;
  if (r->exact_reason[0] && mp_json_set(o, "exact_reason", json_string(r->exact_reason))) goto fail;
  if (r->source && mp_json_set(o, "source", json_string(r->source))) goto fail;
  if (r->n_lower_sets && mp_json_set(o, "lower_sets", mp_json_u64(r->n_lower_sets))) goto fail;
  if (!r->feasible && mp_json_set(o, "min_feasible_budget", r->min_feasible_budget
                                                                ? mp_json_u64(r->min_feasible_budget)
                                                                : json_null()))
    goto fail;
  if (have) {
    if ((s->reserved_peak_bytes && mp_json_set(o, "reserved_peak_bytes", mp_json_u64(s->reserved_peak_bytes))) ||
        mp_json_set(o, "peak_bytes", mp_json_u64(s->peak_bytes)) ||
        mp_json_set(o, "overhead_pct", json_real(s->overhead_pct)) ||
        mp_json_set(o, "segments", json_integer(r->n_segments)) ||
        mp_json_set(o, "checkpoints", mp__ids(g, r->checkpoints, r->n_checkpoints)) ||
        mp_json_set(o, "recomputed", mp__ids(g, s->recomputed, s->n_recomputed)))
      goto fail;
    t = json_object();
    if (mp_json_set(o, "time", t) || mp_json_set(t, "forward", mp_json_number(s->time_forward)) ||
        mp_json_set(t, "backward", mp_json_number(s->time_backward)) ||
        mp_json_set(t, "recompute", mp_json_number(s->time_recompute)) ||
        mp_json_set(t, "stall", mp_json_number(s->time_stall)) ||
        mp_json_set(t, "total", mp_json_number(s->time_total)))
      goto fail;
    if (migrates || device->intra_layer_reuse) {
      if (mp_json_set(o, "reused", mp_json_u64(s->n_reused))) goto fail;
    }
    if (migrates) {
      if (mp_json_set(o, "swapped", mp__ids(g, s->swapped, s->n_swapped)) ||
          mp_json_set(o, "host_peak_bytes", mp_json_u64(s->host_peak_bytes)))
        goto fail;
      t = json_object();
      if (mp_json_set(o, "transfers", t) || mp_json_set(t, "swap_out", mp_json_u64(s->n_swap_out)) ||
          mp_json_set(t, "swap_in", mp_json_u64(s->n_swap_in)) ||
          mp_json_set(t, "bytes_out", mp_json_u64(s->bytes_swapped_out)) ||
          mp_json_set(t, "bytes_in", mp_json_u64(s->bytes_swapped_in)) ||
          mp_json_set(t, "d2h_time", mp_json_number(s->time_copy_d2h)) ||
          mp_json_set(t, "h2d_time", mp_json_number(s->time_copy_h2d)))
        goto fail;
    }
  }
  if ((migrates || device->intra_layer_reuse || device->allocator != MP_ALLOCATOR_EXACT) &&
      mp_json_set(o, "device", mp_device_to_json(device, g)))
    goto fail;
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
      mp_json_set(o, "solve_ms", json_real(r->solve_ms)) || mp_forecast_json_add(o, g) != 0)
    goto fail;
  return o;
fail:
  json_decref(o);
  return NULL;
}

json_t *mp_plan_result_to_json(const mp_graph_t *g, const mp_plan_result_t *r,
                               const char *graph_hash, int with_schedule, int with_timeline) {
  return mp_plan_result_to_json_ex(g, r, graph_hash, NULL, with_schedule, with_timeline);
}
