/* frontier_recompute.c - the frontier entries (solver.h) of the
 * recompute-only solvers: the candidate points mp_frontier() (frontier.c)
 * makes a staircase of.
 *
 * DP solvers: mp_plan() weighs several candidate families for a DP solver
 * (the portfolio, cand_recompute.c), and the frontier is the Pareto
 * staircase of the same families: the DP's staircase (dp.h: least model
 * budget, recomputation; one reverse pass, or sampled solves when that would
 * take too long), Chen's prefix-cut plans at their simulated peaks, and plain
 * backpropagation at its simulated peak with no recomputation. Each point is
 * a budget at which mp_plan() has a candidate that fits with at most that
 * recomputation, so a frontier lookup bounds what a plan at that budget
 * costs, and says whether one exists.
 *
 * memonger and sqrt: their candidate plans (threshold search, which for
 * memonger includes keeping everything) are simulated and Pareto-filtered on
 * (peak, recomputation). none: the single no-recompute point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "plan_internal.h"
#include "solver.h"

/* Append a candidate point (mp_frontier makes the staircase). */
static int mp__push(const mp_graph_t *g, mp_frontier_t *f, size_t *cap, uint64_t budget,
                    double recompute) {
  double denom = g->fwd_time + g->bwd_time;
  if (f->n_points == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    mp_frontier_point_t *np = realloc(f->points, nc * sizeof(*np));
    if (np == NULL) return MP_ENOMEM;
    f->points = np;
    *cap = nc;
  }
  memset(&f->points[f->n_points], 0, sizeof(f->points[0]));
  f->points[f->n_points].budget = budget;
  f->points[f->n_points].recompute = recompute;
  f->points[f->n_points].extra_time = recompute; /* (no copies: recomputation is the extra) */
  f->points[f->n_points].overhead_pct = denom > 0 ? recompute / denom * 100.0 : 0;
  f->n_points++;
  return 0;
}

typedef struct {
  const mp_graph_t *g;
  mp_frontier_t *f;
  size_t *cap;
  int rc;
} mp__collect_t;

static void mp__collect(void *arg, mp__cand_t *c) {
  mp__collect_t *k = arg;
  if (k->rc == 0) k->rc = mp__push(k->g, k->f, k->cap, c->sim.peak_bytes, c->sim.time_recompute);
}

/* Budgets sampled when the DP's one-pass staircase gives up (mp__dp_points). */
#define MP__SAMPLES 32

/* The k-th sample index (0..MP__SAMPLES, a power of two) in coarse-to-fine
 * order: 0, S, S/2, S/4, 3S/4, S/8, 3S/8, ... */
static int mp__coarse_to_fine(int k) {
  int step = MP__SAMPLES / 2, at = k - 2;
  if (k < 2) return k * MP__SAMPLES;
  while (at >= MP__SAMPLES / (2 * step)) { /* the level holding it */
    at -= MP__SAMPLES / (2 * step);
    step /= 2;
  }
  return step + 2 * step * at;
}

/* The DP's points: its whole staircase from one reverse pass when that
 * stays within its work limit (dp.h, mp_dp_session_staircase: every point
 * exact), up to plain backpropagation's simulated peak (above it keeping
 * everything wins, so a DP point there would be dropped anyway).
 *
 * Otherwise a staircase from single-budget solves: the least feasible budget, then
 * MP__SAMPLES budgets up to the model's no-recompute budget. Each solve's
 * plan gives the point (its model peak, its recomputation): at any budget
 * from that peak on, the DP finds a plan at least as good, because a larger
 * budget only adds feasible steps. So every point bounds what mp_plan()
 * returns, and the first point is exactly where plans begin. The solves
 * share one DP session (dp.h): the lower sets and the reverse pass are done
 * once, and each solve is bounded by the others' answers. The samples are
 * solved coarse to fine (both ends, the middle, the quarters, ...) so that
 * each has solved neighbours on both sides, whose answers bracket its own;
 * when those are equal, so is its own (recomputation only falls as the
 * budget grows), and its point would add nothing to the staircase (the
 * smaller neighbour's plan is as good and peaks no higher), so it is not
 * solved. When the exact DP falls back (the deadline applies to each
 * solve), the remaining solves use approx. */
static int mp__dp_points(const mp_graph_t *g, mp_dp_options_t *d, mp_frontier_t *out,
                         size_t *cap, mp_error_t *err) {
  mp_dp_session_t *s = NULL;
  mp_dp_result_t r;
  uint64_t lo, hi;
  int k, rc, noted = 0;
  double rec[MP__SAMPLES + 1]; /* each sample's recomputation, -1: no plan, -2: not solved */
  const char *why;
  if ((rc = mp_dp_session_new(g, d, &s, err)) != 0) return rc;
  out->exact = mp_dp_session_exact_used(s, &why);
  out->solver_used = out->exact ? MP_SOLVER_EXACT : MP_SOLVER_APPROX;
  if (d->exact && !out->exact) {
    snprintf(out->exact_reason, sizeof(out->exact_reason), "%s", why);
    noted = 1;
  }
  if (out->peak_no_recompute > 0) {
    mp_dp_point_t *pts = NULL;
    size_t n = 0, i;
    rc = mp_dp_session_staircase(s, out->peak_no_recompute - 1, 0, &pts, &n, err);
    if (rc == 0) {
      for (i = 0; i < n && rc == 0; i++) rc = mp__push(g, out, cap, pts[i].budget, pts[i].recompute_time);
      free(pts);
      if (rc != 0) rc = mp_error_set(err, rc, "", "out of memory");
      goto done;
    }
    if (rc != MP_ELIMIT && rc != MP_ETIMEDOUT) goto done;
    rc = 0; /* too much work: sample budgets instead */
    if (d->exact && out->exact) {
      /* The samples are the exact DP's answers, but between them the
       * staircase keeps the last sample's recomputation, which may be far
       * above the DP's answer there: not the exact frontier. */
      snprintf(out->exact_reason, sizeof(out->exact_reason),
               "the exact DP's staircase passed its work limit: %d budgets sampled, "
               "an upper bound between them", MP__SAMPLES + 1);
      noted = 1;
      out->exact = 0;
    }
  }
  if ((rc = mp_dp_session_solve(s, UINT64_MAX, &r, err)) != 0) goto done;
  if (d->exact && !r.exact_used) {
    if (!noted) memcpy(out->exact_reason, r.fallback_reason, sizeof(out->exact_reason));
    noted = 1;
    out->exact = 0;
    out->solver_used = MP_SOLVER_APPROX;
  }
  hi = r.model_peak;
  mp_dp_result_free(&r);
  if ((rc = mp_dp_session_solve(s, 0, &r, err)) != 0) goto done;
  lo = r.feasible ? 0 : r.min_feasible_budget;
  mp_dp_result_free(&r);
  if (lo == 0 || lo > hi) lo = hi;
  for (k = 0; k <= MP__SAMPLES; k++) rec[k] = -2;
  for (k = 0; k <= MP__SAMPLES; k++) {
    int idx = mp__coarse_to_fine(k), w = idx & -idx; /* its neighbours: idx -/+ w */
    uint64_t b = lo + (uint64_t)((double)(hi - lo) * idx / MP__SAMPLES);
    if (k >= 2 && rec[idx - w] >= 0 && rec[idx + w] >= 0 && rec[idx - w] == rec[idx + w]) {
      rec[idx] = rec[idx - w];
      continue;
    }
    if ((rc = mp_dp_session_solve(s, b, &r, err)) != 0) goto done;
    rec[idx] = r.feasible ? r.recompute_time : -1;
    if (d->exact && !r.exact_used) {
      if (!noted) memcpy(out->exact_reason, r.fallback_reason, sizeof(out->exact_reason));
      noted = 1;
      out->exact = 0;
      out->solver_used = MP_SOLVER_APPROX;
    }
    if (r.feasible && r.model_peak < out->peak_no_recompute)
      rc = mp__push(g, out, cap, r.model_peak, r.recompute_time);
    mp_dp_result_free(&r);
    if (rc != 0) {
      rc = mp_error_set(err, rc, "", "out of memory");
      goto done;
    }
  }
done:
  mp_dp_session_free(s);
  return rc;
}

/* What every recomputation frontier starts from: the solver, and plain
 * backpropagation's simulated peak. */
static int mp__begin(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                     mp_error_t *err) {
  mp__cand_t all;
  int rc;
  out->solver = o->solver;
  out->solver_used = o->solver;
  if ((rc = mp__cand_make(g, o, NULL, &all, err)) != 0) return rc;
  out->peak_no_recompute = all.sim.peak_bytes;
  mp__cand_free(&all);
  return 0;
}

/* Chen's proposals as points (sqrt_cuts as for mp__cand_chen). */
static int mp__chen_points(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                           int sqrt_cuts, mp_frontier_t *out, size_t *cap, mp_error_t *err) {
  mp__collect_t k = {g, out, cap, 0};
  int rc = mp__cand_chen(g, o, t0, sqrt_cuts, mp__collect, &k, err);
  if (rc == 0 && k.rc != 0) rc = mp_error_set(err, k.rc, "", "out of memory");
  return rc;
}

/* Keeping everything: a point of the none and DP families (memonger's
 * search proposes it itself, sqrt's never). */
static int mp__keep_all_point(const mp_graph_t *g, mp_frontier_t *out, size_t *cap,
                              mp_error_t *err) {
  int rc = mp__push(g, out, cap, out->peak_no_recompute, 0);
  return rc != 0 ? mp_error_set(err, rc, "", "out of memory") : 0;
}

/* none: the single no-recompute point. */
int mp__frontier_none(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                      double t0, mp_frontier_t *out, mp_error_t *err) {
  size_t cap = 0;
  int rc;
  (void)self;
  (void)t0;
  if ((rc = mp__begin(g, o, out, err)) != 0) return rc;
  return mp__keep_all_point(g, out, &cap, err);
}

/* memonger and sqrt: their simulated candidate plans. */
int mp__frontier_chen(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                      double t0, mp_frontier_t *out, mp_error_t *err) {
  size_t cap = 0;
  int rc;
  if ((rc = mp__begin(g, o, out, err)) != 0) return rc;
  return mp__chen_points(g, o, t0, self->id == MP_SOLVER_SQRT, out, &cap, err);
}

/* The DP family's plan at its least model budget (mp__cand_dp_least), at
 * its simulated peak: mp_plan() offers it below the DP's least budget. */
static int mp__least_point(const mp_graph_t *g, const mp_plan_options_t *o, double t0, int exact,
                           mp_frontier_t *out, size_t *cap, mp_error_t *err) {
  mp_plan_options_t po = *o;
  mp_dp_result_t figs;
  mp__cand_t c;
  int rc;
  po.objective = MP_OBJECTIVE_TIME;
  po.accounting = MP_ACCOUNTING_DEFAULT;
  if ((rc = mp__cand_dp_least(g, &po, t0, exact ? MP__FAMILY_EXACT : MP__FAMILY_APPROX, 0, &c, &figs, err)) !=
      0)
    return rc;
  mp_dp_result_free(&figs);
  if (c.schedule != NULL && (rc = mp__push(g, out, cap, c.sim.peak_bytes, c.sim.time_recompute)) != 0)
    rc = mp_error_set(err, rc, "", "out of memory");
  mp__cand_free(&c);
  return rc;
}

/* The DP solvers: the same candidate families mp_plan() weighs for them:
 * the DP's own staircase (model figures, which bound the simulated ones;
 * for exact, the approximate DP's would add nothing: at every budget exact
 * needs no more recomputation, unless it fell back to the window family),
 * each family's plan at its least budget at its simulated peak, Chen's
 * prefix-cut plans, and keeping everything. */
int mp__frontier_dp(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                    double t0, mp_frontier_t *out, mp_error_t *err) {
  mp_dp_options_t d;
  mp_plan_options_t co = *o;
  size_t cap = 0;
  int rc;
  if ((rc = mp__begin(g, o, out, err)) != 0) return rc;
  mp__dp_options_from(o, (self->caps & MP__CAP_EXACT) != 0, &d);
  if ((rc = mp__dp_points(g, &d, out, &cap, err)) != 0) return rc;
  if (d.exact && !out->exact) {
    /* the exact DP fell back to the window family (dp_window.c), which does
     * not hold the approximate family: mp_plan weighs the approximate DP's
     * plan as well, and so does its frontier */
    d.exact = 0;
    if ((rc = mp__dp_points(g, &d, out, &cap, err)) != 0) return rc;
    d.exact = 1;
  }
  if ((rc = mp__least_point(g, o, t0, d.exact, out, &cap, err)) != 0) return rc;
  if (d.exact && (rc = mp__least_point(g, o, t0, 0, out, &cap, err)) != 0) return rc;
  co.deadline_ms = 0; /* the deadline bounds the exact DP, which fell back if it hit it */
  if ((rc = mp__chen_points(g, &co, t0, 0, out, &cap, err)) != 0) return rc;
  return mp__keep_all_point(g, out, &cap, err);
}

