/* fit.c - mp_fit() (fit.h): plans at several budgets on one graph, each
 * exactly as mp_plan() makes it; and the reuse record (plan_internal.h)
 * through which DP solves share one DP session per family: the solves of
 * one plan (at its budget, at the DP's least budget, the slack walk of
 * cand_recompute.c), and the plans of one fit or sampled frontier. A
 * session holds the lower sets, their figures and the reverse pass, which
 * hold at every budget, so a later solve costs a forward search. Sharing
 * changes no answer: a session's solves are pure (dp.h). (Sessions once
 * bounded each solve by their earlier answers, which broke ties
 * differently: fit and plan differed on 53 of 410 ResNet-50 budgets.)
 */
#include "fit.h"

#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "progress.h"

struct mp__reuse_s {
  const mp_graph_t *g;
  struct {
    int made;              /* a session was asked for (s may be NULL: it failed) */
    mp_dp_options_t d;     /* the options it was made with */
    mp_dp_session_t *s;
  } fam[2];                /* [0] approx, [1] exact */
};

mp__reuse_t *mp__reuse_new(const mp_graph_t *g) {
  mp__reuse_t *u = calloc(1, sizeof(*u));
  if (u) u->g = g;
  return u;
}

const mp_graph_t *mp__reuse_graph(const mp__reuse_t *u) { return u->g; }

void mp__reuse_free(mp__reuse_t *u) {
  if (u == NULL) return;
  mp_dp_session_free(u->fam[0].s);
  mp_dp_session_free(u->fam[1].s);
  free(u);
}

/* Would a session made with `a` answer a solve with `b` (budgets aside)? */
static int mp__same_dp(const mp_dp_options_t *a, const mp_dp_options_t *b) {
  return a->exact == b->exact && a->objective == b->objective && a->accounting == b->accounting &&
         a->max_lower_sets == b->max_lower_sets && a->window_sets == b->window_sets &&
         a->deadline_ms <= 0 && b->deadline_ms <= 0 && a->should_stop == b->should_stop &&
         a->stop_arg == b->stop_arg && a->tuning == b->tuning && a->threads == b->threads;
}

mp_dp_session_t *mp__reuse_session(mp__reuse_t *u, const mp_dp_options_t *d, int *rc, mp_error_t *err) {
  int k = d->exact ? 1 : 0;
  *rc = 0;
  if (d->deadline_ms > 0) return NULL;
  if (!u->fam[k].made) {
    u->fam[k].made = 1;
    u->fam[k].d = *d;
    if ((*rc = mp_dp_session_new(u->g, d, &u->fam[k].s, err)) != 0) {
      u->fam[k].s = NULL;
      u->fam[k].made = 0; /* the error is the caller's; a later call tries again */
      return NULL;
    }
  }
  return mp__same_dp(&u->fam[k].d, d) ? u->fam[k].s : NULL;
}

int mp__reuse_solve(const mp_plan_options_t *o, const mp_dp_options_t *d, mp_dp_result_t *dr,
                    mp_error_t *err) {
  int rc;
  mp_dp_session_t *s = mp__reuse_session(o->reuse, d, &rc, err);
  if (rc != 0) {
    memset(dr, 0, sizeof(*dr));
    return rc;
  }
  if (s == NULL) return mp_dp_solve(o->reuse->g, d, dr, err);
  return mp_dp_session_solve(s, d->budget, dr, err);
}

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
  mp_plan_options_t tracked, po;
  const mp_plan_options_t *o = mp__progress_wrap(asked, &tracker, &tracked);
  mp_fit_answer_t *order = NULL; /* the distinct budgets, ascending; .min_feasible_budget: asked index */
  mp__cand_t all;
  mp__reuse_t *shared = NULL;
  size_t i, j;
  int rc;

  memset(out, 0, sizeof(*out));
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
      (order = calloc(n ? n : 1, sizeof(*order))) == NULL) {
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
    goto out;
  }
  for (i = 0; i < n; i++) {
    order[i].budget = budgets[i];
    order[i].min_feasible_budget = i;
  }
  qsort(order, n, sizeof(*order), mp__cmp_budget);
  po = *o;
  if (po.deadline_ms <= 0 && (shared = mp__reuse_new(g)) != NULL) po.reuse = shared; /* see above */
  for (i = 0; i < n; i = j) {
    mp_plan_result_t r;
    mp_fit_answer_t a;
    po.budget = order[i].budget;
    if ((rc = mp_plan(g, &po, &r, err)) != 0) goto out;
    mp__answer(po.budget, &r, &a);
    mp_plan_result_free(&r);
    for (j = i; j < n && order[j].budget == order[i].budget; j++) out->answers[order[j].min_feasible_budget] = a;
  }
  rc = 0;
out:
  mp__reuse_free(shared);
  free(order);
  if (rc != 0) mp_fit_free(out);
  else out->solve_ms = mp__now_ms() - t0;
  return rc;
}
