/* fit_json.c - the fit answer as JSON, and a frontier read back from JSON;
 * see fit_json.h. */
#include "fit_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "plan_json.h"

/* A byte count written by mp_json_u64: an integer, or a real past 2^63. */
static uint64_t mp__bytes(const json_t *v) {
  return json_is_integer(v) ? (uint64_t)json_integer_value(v) : (uint64_t)json_number_value(v);
}

int mp_frontier_from_json(const json_t *v, mp_frontier_t *f) {
  const json_t *pts = json_object_get(v, "points"), *pt;
  const char *s;
  size_t i;
  memset(f, 0, sizeof(*f));
  if (!json_is_array(pts)) return MP_EINVAL;
  if ((s = json_string_value(json_object_get(v, "solver"))) != NULL) mp_solver_parse(s, &f->solver);
  if ((s = json_string_value(json_object_get(v, "solver_used"))) != NULL) mp_solver_parse(s, &f->solver_used);
  if ((s = json_string_value(json_object_get(v, "exact_reason"))) != NULL)
    snprintf(f->exact_reason, sizeof(f->exact_reason), "%s", s);
  f->exact = json_is_true(json_object_get(v, "exact"));
  f->peak_no_recompute = mp__bytes(json_object_get(v, "peak_no_recompute"));
  f->solve_ms = json_number_value(json_object_get(v, "solve_ms"));
  /* A migration frontier (it carries its device) costs extra time, not
   * only recomputation. */
  f->migrate = json_is_object(json_object_get(v, "device"));
  f->n_points = json_array_size(pts);
  f->points = calloc(f->n_points ? f->n_points : 1, sizeof(*f->points));
  if (f->points == NULL) {
    f->n_points = 0;
    return MP_ENOMEM;
  }
  for (i = 0; i < f->n_points; i++) {
    mp_frontier_point_t *q = &f->points[i];
    pt = json_array_get(pts, i);
    q->budget = mp__bytes(json_object_get(pt, "budget"));
    q->recompute = json_number_value(json_object_get(pt, "recompute"));
    q->overhead_pct = json_number_value(json_object_get(pt, "overhead_pct"));
    q->extra_time = json_number_value(json_object_get(pt, "extra_time"));
    q->stall = json_number_value(json_object_get(pt, "stall"));
    q->peak_bytes = mp__bytes(json_object_get(pt, "peak_bytes"));
    q->host_peak_bytes = mp__bytes(json_object_get(pt, "host_peak_bytes"));
    q->n_swapped = (size_t)json_integer_value(json_object_get(pt, "swapped"));
    q->n_recomputed = (size_t)json_integer_value(json_object_get(pt, "recomputed"));
  }
  return 0;
}

/* The entry of one budget. "peak" and "min_budget" are the deprecated
 * names of peak_bytes and min_feasible_budget, kept for one version. */
json_t *mp_fit_entry_to_json(const mp_fit_t *f, const mp_fit_answer_t *a) {
  json_t *e = json_object();
  if (e == NULL) return NULL;
  if (mp_json_set(e, "budget", mp_json_u64(a->budget)) || mp_json_set(e, "fits", json_boolean(a->feasible)) ||
      mp_json_set(e, "solver_used", json_string(mp_solver_name(a->solver_used))) ||
      mp_json_set(e, "exact", json_boolean(a->exact)))
    goto fail;
  if (a->feasible) {
    if (mp_json_set(e, "overhead_pct", mp_json_number(a->overhead_pct)) ||
        mp_json_set(e, "recompute", mp_json_number(a->recompute)) ||
        mp_json_set(e, "peak_bytes", mp_json_u64(a->peak_bytes)) ||
        mp_json_set(e, "peak", mp_json_u64(a->peak_bytes)))
      goto fail;
    if (f->migrate && (mp_json_set(e, "extra_time", mp_json_number(a->extra_time)) ||
                       mp_json_set(e, "stall", mp_json_number(a->stall)) ||
                       mp_json_set(e, "host_peak_bytes", mp_json_u64(a->host_peak_bytes))))
      goto fail;
  } else if (a->min_feasible_budget > 0 &&
             (mp_json_set(e, "min_feasible_budget", mp_json_u64(a->min_feasible_budget)) ||
              mp_json_set(e, "min_budget", mp_json_u64(a->min_feasible_budget)))) {
    goto fail;
  }
  return e;
fail:
  json_decref(e);
  return NULL;
}

json_t *mp_fit_result_to_json(const mp_fit_t *f, const char *graph_hash) {
  json_t *o = json_object(), *arr = json_array();
  size_t i;
  int exact = f->n > 0;
  for (i = 0; i < f->n; i++) exact = exact && f->answers[i].exact;
  if (o == NULL || arr == NULL || mp_json_set(o, "graph_hash", json_string(graph_hash ? graph_hash : "")) ||
      mp_json_set(o, "solver", json_string(mp_solver_name(f->solver))) ||
      mp_json_set(o, "solver_used", json_string(mp_solver_name(f->n ? f->answers[0].solver_used : f->solver))) ||
      mp_json_set(o, "exact", json_boolean(exact)) ||
      mp_json_set(o, "peak_no_recompute", mp_json_u64(f->peak_no_recompute)))
    goto fail;
  if (f->migrate) {
    /* the device with its time unit resolved for the graph, as a frontier's */
    mp_device_t d = f->device;
    d.time_unit_s = f->time_unit_s;
    if (mp_json_set(o, "device", mp_device_to_json(&d, NULL))) goto fail;
  }
  if (mp_json_set(o, "budgets", arr)) {
    arr = NULL;
    goto fail;
  }
  for (i = 0; i < f->n; i++)
    if (json_array_append_new(arr, mp_fit_entry_to_json(f, &f->answers[i])) != 0) goto fail;
  return o;
fail:
  if (arr != NULL && json_object_get(o, "budgets") != arr) json_decref(arr);
  json_decref(o);
  return NULL;
}

int mp_fit_least_to_json(json_t *fit, const mp_fit_t *least) {
  if (least->n == 0) return 0;
  if (mp_json_set(fit, "least", mp_fit_entry_to_json(least, &least->answers[0])) ||
      mp_json_set(fit, "min_feasible_budget", mp_json_u64(least->answers[0].budget)))
    return MP_ENOMEM;
  return 0;
}

json_t *mp_maximize_entry_to_json(const mp_maximize_t *m, uint64_t budget) {
  json_t *e = json_object(), *next = json_null();
  if (m->next_value > 0)
    next = json_pack("{s:I,s:o}", "value", (json_int_t)m->next_value, "min_feasible_budget",
                     m->next_min_feasible_budget ? mp_json_u64(m->next_min_feasible_budget) : json_null());
  if (e == NULL || mp_json_set(e, "budget", mp_json_u64(budget)) ||
      mp_json_set(e, "fits", json_boolean(m->value > 0)) || mp_json_set(e, "value", json_integer(m->value)) ||
      mp_json_set(e, "limit", json_integer(m->limit)) || mp_json_set(e, "next", next))
    goto fail;
  if (m->value > 0 && (mp_json_set(e, "peak_bytes", mp_json_u64(m->plan.sim.peak_bytes)) ||
                       mp_json_set(e, "overhead_pct", mp_json_number(m->plan.sim.overhead_pct)) ||
                       mp_json_set(e, "recompute", mp_json_number(m->plan.sim.time_recompute)) ||
                       mp_json_set(e, "solver_used", json_string(mp_solver_name(m->plan.solver_used))) ||
                       mp_json_set(e, "exact", json_boolean(m->plan.exact))))
    goto fail;
  return e;
fail:
  json_decref(e);
  return NULL;
}

static int mp__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

size_t mp_fit_canonical_budgets(uint64_t *b, size_t n) {
  size_t i, k = 0;
  if (n == 0) return 0;
  qsort(b, n, sizeof(*b), mp__cmp_u64);
  for (i = 1; i < n; i++)
    if (b[i] != b[k]) b[++k] = b[i];
  return k + 1;
}

/* The entry of `budget` in the ascending entries of a canonical fit. */
static json_t *mp__entry_of(const json_t *entries, uint64_t budget) {
  size_t lo = 0, hi = json_array_size(entries);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    json_t *e = json_array_get(entries, mid);
    uint64_t b = mp__bytes(json_object_get(e, "budget"));
    if (b == budget) return e;
    if (b < budget)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

json_t *mp_fit_answer(const json_t *canonical, const uint64_t *budgets, size_t n, const mp_gpu_t *gpus,
                      size_t n_gpus) {
  const json_t *entries = json_object_get(canonical, "budgets");
  json_t *o = json_object(), *arr = json_array(), *devs = NULL, *v, *e;
  const char *k;
  size_t i;
  int exact = 1;
  if (o == NULL || arr == NULL || !json_is_object(canonical) || !json_is_array(entries)) goto fail;
  json_object_foreach((json_t *)canonical, k, v) {
    if (strcmp(k, "budgets") != 0 && json_object_set(o, k, v) != 0) goto fail;
  }
  for (i = 0; i < n; i++) {
    if ((e = mp__entry_of(entries, budgets[i])) == NULL || json_array_append(arr, e) != 0) goto fail;
    exact = exact && json_is_true(json_object_get(e, "exact"));
    if (i == 0 && json_object_get(e, "solver_used") &&
        json_object_set(o, "solver_used", json_object_get(e, "solver_used")) != 0)
      goto fail;
  }
  if (mp_json_set(o, "budgets", arr)) {
    arr = NULL;
    goto fail;
  }
  arr = NULL;
  if (n_gpus > 0) {
    if ((devs = json_array()) == NULL) goto fail;
    if (mp_json_set(o, "devices", devs)) goto fail;
  }
  for (i = 0; i < n_gpus; i++) {
    json_t *d = mp_gpu_to_json(&gpus[i]);
    if (d == NULL || json_array_append_new(devs, d) != 0) goto fail;
    json_object_del(d, "source");
    if ((e = mp__entry_of(entries, mp_gpu_usable(&gpus[i]))) == NULL) goto fail;
    json_object_foreach(e, k, v) {
      if (strcmp(k, "budget") != 0 && json_object_set(d, k, v) != 0) goto fail;
    }
    exact = exact && json_is_true(json_object_get(e, "exact"));
    if (n == 0 && i == 0 && json_object_get(e, "solver_used") &&
        json_object_set(o, "solver_used", json_object_get(e, "solver_used")) != 0)
      goto fail;
  }
  if (n + n_gpus > 0 && mp_json_set(o, "exact", json_boolean(exact))) goto fail;
  return o;
fail:
  json_decref(arr);
  json_decref(o);
  return NULL;
}
