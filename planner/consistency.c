/* consistency.c - mp_consistency_check() (consistency.h): one solver's
 * plans at a set of budgets, its frontier, and the count of every
 * disagreement between them. Each budget is planned once (the answers are
 * kept in a small table, searched linearly: the checks ask for a few dozen
 * budgets), so that a check costs a few dozen plans and one frontier.
 */
#include "consistency.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "frontier.h"

typedef struct {
  uint64_t budget;
  int feasible;
  uint64_t peak;
  double cost;
  uint64_t least; /* min_feasible_budget when infeasible */
  mp_solver_t solver_used;
  int exact;
} mp__ans_t;

typedef struct {
  const mp_graph_t *g;
  mp_plan_options_t o;
  int migrate;
  mp__ans_t *a;
  size_t n, cap;
  mp_consistency_t *out;
} mp__ck_t;

static int mp__same(double x, double y) { return fabs(x - y) <= 1e-9 * (1.0 + fabs(x) + fabs(y)); }

static void mp__note(mp__ck_t *k, size_t *counter, const char *what, uint64_t b) {
  (*counter)++;
  if (k->out->first[0] == '\0')
    snprintf(k->out->first, sizeof(k->out->first), "%s at %llu", what, (unsigned long long)b);
}

/* The answer at budget b, planned on first use. */
static int mp__ans(mp__ck_t *k, uint64_t b, mp__ans_t *ans, mp_error_t *err) {
  mp_plan_result_t r;
  size_t i;
  int rc;
  for (i = 0; i < k->n; i++)
    if (k->a[i].budget == b) {
      *ans = k->a[i];
      return 0;
    }
  if (k->n == k->cap) {
    size_t nc = k->cap ? 2 * k->cap : 64;
    mp__ans_t *na = realloc(k->a, nc * sizeof(*na));
    if (na == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
    k->a = na;
    k->cap = nc;
  }
  k->o.budget = b;
  if ((rc = mp_plan(k->g, &k->o, &r, err)) != 0) return rc;
  memset(ans, 0, sizeof(*ans));
  ans->budget = b;
  ans->feasible = r.feasible && r.schedule != NULL;
  ans->peak = r.sim.peak_bytes;
  ans->cost = k->migrate ? r.sim.time_total - r.sim.time_forward - r.sim.time_backward
                         : r.sim.time_recompute;
  if (ans->cost < 0) ans->cost = 0; /* as frontier_sampled.c rounds it */
  ans->least = r.feasible ? 0 : r.min_feasible_budget;
  ans->solver_used = r.solver_used;
  ans->exact = r.exact;
  mp_plan_result_free(&r);
  k->a[k->n++] = *ans;
  k->out->n_plans++;
  return 0;
}

/* mp_fit at every budget planned so far: each answer must be the plan's. */
static int mp__fit_check(mp__ck_t *k, mp_error_t *err) {
  mp_fit_t fit;
  uint64_t *bs;
  size_t i, n = k->n;
  int rc;
  if ((bs = malloc((n ? n : 1) * sizeof(*bs))) == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  for (i = 0; i < n; i++) bs[i] = k->a[i].budget;
  rc = mp_fit(k->g, &k->o, bs, n, &fit, err);
  free(bs);
  if (rc != 0) return rc;
  for (i = 0; i < n; i++) {
    const mp__ans_t *a = &k->a[i];
    const mp_fit_answer_t *f = &fit.answers[i];
    double c = k->migrate ? f->extra_time : f->recompute;
    if (f->feasible != a->feasible || (!a->feasible && f->min_feasible_budget != a->least)) {
      mp__note(k, &k->out->fit_feasible, "fit and plan disagree on fitting", a->budget);
      continue;
    }
    if (f->solver_used != a->solver_used || f->exact != a->exact)
      mp__note(k, &k->out->fit_peak, "fit and plan name different solvers", a->budget);
    if (!a->feasible) continue;
    if (a->cost > c) mp__note(k, &k->out->fit_promise, "plan above the fit", a->budget);
    if (a->cost != c) mp__note(k, &k->out->fit_cost, "fit and plan costs differ", a->budget);
    if (f->peak_bytes != a->peak) mp__note(k, &k->out->fit_peak, "fit and plan peaks differ", a->budget);
  }
  k->out->n_fit = n;
  mp_fit_free(&fit);
  return 0;
}

static int mp__cmp_ans(const void *x, const void *y) {
  const mp__ans_t *a = x, *b = y;
  return a->budget < b->budget ? -1 : a->budget > b->budget;
}

/* Over every budget planned, ascending: a plan costing more than one at a
 * smaller budget (cost_up), and one costing more than the frontier's
 * staircase says at its budget (point_between). Sorts k->a. */
static void mp__cost_check(mp__ck_t *k, const mp_frontier_t *f) {
  double least = HUGE_VAL;
  size_t i;
  qsort(k->a, k->n, sizeof(*k->a), mp__cmp_ans);
  for (i = 0; i < k->n; i++) {
    const mp__ans_t *a = &k->a[i];
    long j;
    if (!a->feasible) continue;
    if (a->cost > least && !mp__same(a->cost, least))
      mp__note(k, &k->out->cost_up, "a plan costing more than at a smaller budget", a->budget);
    if (a->cost < least) least = a->cost;
    if ((j = mp_frontier_lookup(f, a->budget)) >= 0) {
      double c = f->migrate ? f->points[j].extra_time : f->points[j].recompute;
      if (a->cost > c && !mp__same(a->cost, c))
        mp__note(k, &k->out->point_between, "a plan above the staircase", a->budget);
    }
  }
}

static int mp__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

int mp_consistency_check(const mp_graph_t *g, const mp_plan_options_t *o, const uint64_t *budgets,
                         size_t n, mp_consistency_t *out, mp_error_t *err) {
  mp__ck_t k;
  mp_frontier_t f;
  mp__ans_t a, b;
  uint64_t *bs = NULL, least = 0;
  size_t i;
  int rc, seen_plan = 0;

  memset(out, 0, sizeof(*out));
  memset(&k, 0, sizeof(k));
  memset(&f, 0, sizeof(f));
  k.g = g;
  k.o = *o;
  k.o.objective = MP_OBJECTIVE_TIME;
  k.o.accounting = MP_ACCOUNTING_DEFAULT;
  k.migrate = mp_solver_swaps(o->solver);
  k.out = out;
  if ((bs = malloc((n ? n : 1) * sizeof(*bs))) == NULL)
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  memcpy(bs, budgets, n * sizeof(*bs));
  qsort(bs, n, sizeof(*bs), mp__cmp_u64);

  /* monotone, and the least budget the answers name */
  for (i = 0; i < n; i++) {
    if ((rc = mp__ans(&k, bs[i], &a, err)) != 0) goto out;
    if (a.feasible) seen_plan = 1;
    else if (seen_plan) mp__note(&k, &out->monotone, "no plan above a budget with one", a.budget);
    if (!a.feasible && a.least != 0) {
      if (least != 0 && a.least != least) mp__note(&k, &out->least, "two least budgets", a.budget);
      if (least == 0 || a.least < least) least = a.least;
    }
  }
  if (least != 0) {
    if ((rc = mp__ans(&k, least, &a, err)) != 0) goto out;
    if (!a.feasible || a.peak != least) mp__note(&k, &out->least, "the least budget's plan", least);
    if ((rc = mp__ans(&k, least - 1, &a, err)) != 0) goto out;
    if (a.feasible) mp__note(&k, &out->least, "a plan below the least budget", least - 1);
  }
  /* closure: a plan's own peak as a budget */
  for (i = 0; i < n; i++) {
    if ((rc = mp__ans(&k, bs[i], &a, err)) != 0) goto out;
    if (!a.feasible || a.peak >= a.budget) continue;
    if ((rc = mp__ans(&k, a.peak, &b, err)) != 0) goto out;
    if (!b.feasible || (b.cost > a.cost && !mp__same(a.cost, b.cost)))
      mp__note(&k, &out->closure, "the plan at its own peak", a.peak);
  }
  /* the frontier against the plans */
  k.o.budget = UINT64_MAX;
  if ((rc = mp_frontier(g, &k.o, &f, err)) != 0) goto out;
  out->n_points = f.n_points;
  if (least != 0 && f.n_points > 0 && f.points[0].budget != least)
    mp__note(&k, &out->point_least, "the frontier's first point", f.points[0].budget);
  for (i = 0; i < f.n_points; i++) {
    /* every point of a short frontier, else 16 spread over it */
    size_t j = f.n_points <= 16 ? i : i * (f.n_points - 1) / 15;
    double c = f.migrate ? f.points[j].extra_time : f.points[j].recompute;
    if (f.n_points > 16 && i >= 16) break;
    if ((rc = mp__ans(&k, f.points[j].budget, &a, err)) != 0) goto out;
    if (!a.feasible) {
      mp__note(&k, &out->point_feasible, "a frontier point without a plan", f.points[j].budget);
      continue;
    }
    if (a.cost > c && !mp__same(a.cost, c)) mp__note(&k, &out->point_promise, "plan above its point", f.points[j].budget);
    if (!mp__same(a.cost, c)) mp__note(&k, &out->point_cost, "point and plan costs differ", f.points[j].budget);
  }
  /* mp_fit (what /v1/fit and `memplan fit` answer) at every budget
   * planned, against the plans */
  if ((rc = mp__fit_check(&k, err)) != 0) goto out;
  mp__cost_check(&k, &f);
  out->n_budgets = k.n;
  rc = 0;
out:
  mp_frontier_free(&f);
  free(k.a);
  free(bs);
  return rc;
}
