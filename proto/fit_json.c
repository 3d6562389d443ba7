/* fit_json.c - a frontier read back from JSON and the fit answer computed
 * from it; see fit_json.h. */
#include "fit_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"

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

/* The entry of one budget. */
static json_t *mp__fit_entry(const mp_frontier_t *f, uint64_t budget) {
  long k = mp_frontier_lookup(f, budget);
  json_t *e = json_object();
  if (e == NULL) return NULL;
  if (mp_json_set(e, "budget", mp_json_u64(budget)) || mp_json_set(e, "fits", json_boolean(k >= 0))) goto fail;
  if (k >= 0) {
    const mp_frontier_point_t *q = &f->points[k];
    /* The point's budget is the memory the plan needs at most: an upper
     * bound on its simulated peak. */
    if (mp_json_set(e, "overhead_pct", mp_json_number(q->overhead_pct)) ||
        mp_json_set(e, "recompute", mp_json_number(q->recompute)) || mp_json_set(e, "peak", mp_json_u64(q->budget)))
      goto fail;
    if (f->migrate && (mp_json_set(e, "extra_time", mp_json_number(q->extra_time)) ||
                       mp_json_set(e, "stall", mp_json_number(q->stall)) ||
                       mp_json_set(e, "host_peak_bytes", mp_json_u64(q->host_peak_bytes))))
      goto fail;
  } else if (f->n_points > 0 && mp_json_set(e, "min_budget", mp_json_u64(f->points[0].budget))) {
    goto fail;
  }
  return e;
fail:
  json_decref(e);
  return NULL;
}

/* Copy key `k` of `from` into `to` when it is there. */
static int mp__copy(json_t *to, const json_t *from, const char *k) {
  json_t *v = json_object_get(from, k);
  return v ? json_object_set(to, k, v) : 0;
}

int mp_fit_to_json(const json_t *frontier, const uint64_t *budgets, size_t n_budgets, json_t **out) {
  mp_frontier_t f;
  json_t *o = NULL, *arr;
  size_t i;
  int rc;
  *out = NULL;
  if ((rc = mp_frontier_from_json(frontier, &f)) != 0) return rc;
  rc = MP_ENOMEM;
  if ((o = json_object()) == NULL || mp__copy(o, frontier, "graph_hash") || mp__copy(o, frontier, "solver") ||
      mp__copy(o, frontier, "solver_used") || mp__copy(o, frontier, "exact") ||
      mp__copy(o, frontier, "peak_no_recompute") || (f.migrate && mp__copy(o, frontier, "device")) ||
      mp_json_set(o, "budgets", arr = json_array()))
    goto out;
  for (i = 0; i < n_budgets; i++)
    if (json_array_append_new(arr, mp__fit_entry(&f, budgets[i])) != 0) goto out;
  *out = o;
  o = NULL;
  rc = 0;
out:
  json_decref(o);
  mp_frontier_free(&f);
  return rc;
}
