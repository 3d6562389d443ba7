/* fit.c - mp_fit() (fit.h): plans at several budgets on one graph, each
 * exactly as mp_plan() makes it. The plans share DP sessions and their
 * answers through one reuse record (reuse.c), which changes no answer.
 */
#include "fit.h"

#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "progress.h"

void mp_fit_free(mp_fit_t *f) {
  if (f == NULL) return;
  free(f->answers);
  memset(f, 0, sizeof(*f));
}

/* The answer of one plan. */
static void mp__answer(uint64_t budget, const mp_plan_result_t *r, mp_fit_answer_t *a) {
  const mp_sim_report_t *m = &r->sim;
  memset(a, 0, sizeof(*a));
  a->budget = budget;
  a->feasible = r->feasible && r->schedule != NULL;
  a->solver_used = r->solver_used;
  a->exact = r->exact;
  if (!a->feasible) {
    a->min_feasible_budget = r->min_feasible_budget;
    return;
  }
  a->peak_bytes = m->peak_bytes;
  a->host_peak_bytes = m->host_peak_bytes;
  a->recompute = m->time_recompute;
  a->extra_time = m->time_total - m->time_forward - m->time_backward;
  if (a->extra_time < 0) a->extra_time = 0; /* rounding of the event times */
  a->stall = m->time_stall;
  a->overhead_pct = m->overhead_pct;
}

static int mp__cmp_budget(const void *x, const void *y) {
  const mp_fit_answer_t *a = x, *b = y;
  return a->budget < b->budget ? -1 : a->budget > b->budget;
}

int mp_fit(const mp_graph_t *g, const mp_plan_options_t *asked, const uint64_t *budgets, size_t n,
           mp_fit_t *out, mp_error_t *err) {
  double t0 = mp__now_ms();
  mp__progress_t tracker;
  mp_plan_options_t tracked;
  const mp_plan_options_t *o = mp__progress_wrap(asked, &tracker, &tracked);
  mp_fit_answer_t *order = NULL; /* the distinct budgets, ascending; .min_feasible_budget: asked index */
  mp__cand_t all;
  uint64_t *distinct = NULL;
  mp_plan_result_t *results = NULL;
  mp__many_ctx_t many;
  mp_fit_answer_t a;
  size_t i, j, nd;
  int rc;

  memset(out, 0, sizeof(*out));
  memset(&many, 0, sizeof(many));
  if (!g->finalized) return mp_error_set(err, MP_EINVAL, "", "graph is not finalized");
  if ((rc = mp_device_check(&o->device, err)) != 0) return rc;
  out->solver = o->solver;
  out->migrate = mp_solver_swaps(o->solver) || (o->swap && o->solver == MP_SOLVER_AUTO);
  out->device = o->device;
  out->time_unit_s = mp_device_unit_s(&o->device, g);
  if ((rc = mp__cand_make(g, o, NULL, &all, err)) != 0) return rc;
  out->peak_no_recompute = all.sim.peak_bytes;
  mp__cand_free(&all);
  out->n = n;
  if ((out->answers = calloc(n ? n : 1, sizeof(*out->answers))) == NULL ||
      (order = calloc(n ? n : 1, sizeof(*order))) == NULL ||
      (distinct = calloc(n ? n : 1, sizeof(*distinct))) == NULL ||
      (results = calloc(n ? n : 1, sizeof(*results))) == NULL) {
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
    goto out;
  }
  for (i = 0; i < n; i++) {
    order[i].budget = budgets[i];
    order[i].min_feasible_budget = i;
  }
  qsort(order, n, sizeof(*order), mp__cmp_budget);
  for (i = j = 0; i < n; i++) /* the distinct budgets, in place */
    if (j == 0 || order[i].budget != distinct[j - 1]) distinct[j++] = order[i].budget;
  nd = j;
  /* the plans share DP sessions and answers, on o->threads threads
   * (plan_many.c) */
  if ((rc = mp__many_open(g, o, &many, err)) != 0) goto out;
  /* from a few budgets on, the DP families' staircases pay for themselves
   * (reuse.c) */
  if (nd >= MP__FIT_STAIRS) mp__reuse_use_staircases(many.o.reuse);
  if ((rc = mp__plan_many(g, &many.o, -1, distinct, nd, results, err)) != 0) goto out;
  for (i = j = 0; i < n; i++) {
    if (i == 0 || order[i].budget != order[i - 1].budget) mp__answer(order[i].budget, &results[j++], &a);
    out->answers[order[i].min_feasible_budget] = a;
  }
  for (j = 0; j < nd; j++) mp_plan_result_free(&results[j]);
  rc = 0;
out:
  mp__many_close(&many);
  free(results);
  free(distinct);
  free(order);
  if (rc != 0) mp_fit_free(out);
  else out->solve_ms = mp__now_ms() - t0;
  return rc;
}

int mp_fit_least(const mp_graph_t *g, const mp_plan_options_t *o, mp_fit_t *out, mp_error_t *err) {
  uint64_t one = 1, least;
  int rc = mp_fit(g, o, &one, 1, out, err);
  if (rc != 0 || out->answers[0].feasible) return rc;
  least = out->answers[0].min_feasible_budget;
  mp_fit_free(out);
  if (least == 0) {
    /* unknown: an empty fit that still carries the figures of the graph */
    rc = mp_fit(g, o, &least, 0, out, err);
    return rc;
  }
  return mp_fit(g, o, &least, 1, out, err);
}
