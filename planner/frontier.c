/* frontier.c - the memory/time frontier of a graph for one solver.
 *
 * DP solvers: mp_plan() weighs several candidate families for a DP solver
 * (plan.c), and the frontier is the Pareto staircase of the same families:
 * the DP's frontier pass (dp.h: least model budget, recomputation), the
 * approximate DP's as well for exact, Chen's prefix-cut plans at their
 * simulated peaks, and plain backpropagation at its simulated peak with no
 * recomputation. Each point is a budget at which mp_plan() has a candidate
 * that fits with at most that recomputation, so a frontier lookup bounds
 * what a plan at that budget costs, and says whether one exists.
 *
 * memonger and sqrt: their candidate plans (threshold search, which for
 * memonger includes keeping everything) are simulated and Pareto-filtered on
 * (peak, recomputation).
 */
#include "frontier.h"

#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

void mp_frontier_free(mp_frontier_t *f) {
  if (f == NULL) return;
  free(f->points);
  memset(f, 0, sizeof(*f));
}

long mp_frontier_lookup(const mp_frontier_t *f, uint64_t budget) {
  size_t lo = 0, hi = f->n_points;
  /* the last point whose budget is <= budget */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->points[mid].budget <= budget) lo = mid + 1;
    else hi = mid;
  }
  return (long)lo - 1;
}

static int mp__push(mp_frontier_t *f, size_t *cap, uint64_t budget, double recompute) {
  if (f->n_points == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    mp_frontier_point_t *np = realloc(f->points, nc * sizeof(*np));
    if (np == NULL) return MP_ENOMEM;
    f->points = np;
    *cap = nc;
  }
  f->points[f->n_points].budget = budget;
  f->points[f->n_points].recompute = recompute;
  f->points[f->n_points].overhead_pct = 0;
  f->n_points++;
  return 0;
}

static int mp__cmp_point(const void *a, const void *b) {
  const mp_frontier_point_t *x = a, *y = b;
  if (x->budget != y->budget) return x->budget < y->budget ? -1 : 1;
  return x->recompute < y->recompute ? -1 : x->recompute > y->recompute;
}

/* Sort by budget and keep only points that strictly improve recomputation:
 * the staircase. Then fill in overheads. */
static void mp__staircase(const mp_graph_t *g, mp_frontier_t *f) {
  size_t i, w = 0;
  double denom = g->fwd_time + g->bwd_time;
  qsort(f->points, f->n_points, sizeof(*f->points), mp__cmp_point);
  for (i = 0; i < f->n_points; i++)
    if (w == 0 || f->points[i].recompute < f->points[w - 1].recompute) f->points[w++] = f->points[i];
  f->n_points = w;
  for (i = 0; i < w; i++)
    f->points[i].overhead_pct = denom > 0 ? f->points[i].recompute / denom * 100.0 : 0;
}

typedef struct {
  mp_frontier_t *f;
  size_t *cap;
  int rc;
} mp__collect_t;

static void mp__collect(void *arg, mp__cand_t *c) {
  mp__collect_t *k = arg;
  if (k->rc == 0) k->rc = mp__push(k->f, k->cap, c->sim.peak_bytes, c->sim.time_recompute);
}

/* Graphs up to this many activations get the DP's one-pass frontier (every
 * point exact); larger ones a sampled staircase (mp__sampled), because the
 * one pass keeps three-way Pareto sets without the budget's pruning and
 * grows too slow: minutes on ResNet-152. */
#define MP__FULL_PASS_MAX_NODES 64
#define MP__SAMPLES 32

/* A staircase from single-budget solves: the least feasible budget, then
 * MP__SAMPLES budgets up to the model's no-recompute budget. Each solve's
 * plan gives the point (its model peak, its recomputation): at any budget
 * from that peak on, the DP finds a plan at least as good, because a larger
 * budget only adds feasible steps. So every point bounds what mp_plan()
 * returns, and the first point is exactly where plans begin. When the exact
 * DP falls back once, the remaining solves use approx. */
static int mp__sampled(const mp_graph_t *g, mp_dp_options_t *d, mp_frontier_t *out, size_t *cap,
                       mp_error_t *err) {
  mp_dp_result_t r;
  uint64_t lo, hi;
  int k, rc, first = 1;
  d->budget = UINT64_MAX;
  if ((rc = mp_dp_solve(g, d, &r, err)) != 0) return rc;
  out->exact = r.exact_used;
  out->solver_used = r.exact_used ? MP_SOLVER_EXACT : MP_SOLVER_APPROX;
  if (d->exact && !r.exact_used) {
    memcpy(out->exact_reason, r.fallback_reason, sizeof(out->exact_reason));
    d->exact = 0;
  }
  hi = r.model_peak;
  mp_dp_result_free(&r);
  d->budget = 0;
  if ((rc = mp_dp_solve(g, d, &r, err)) != 0) return rc;
  lo = r.feasible ? 0 : r.min_feasible_budget;
  mp_dp_result_free(&r);
  if (lo == 0 || lo > hi) lo = hi;
  for (k = 0; k <= MP__SAMPLES; k++) {
    d->budget = lo + (uint64_t)((double)(hi - lo) * k / MP__SAMPLES);
    if ((rc = mp_dp_solve(g, d, &r, err)) != 0) return rc;
    if (d->exact && !r.exact_used) {
      if (first) memcpy(out->exact_reason, r.fallback_reason, sizeof(out->exact_reason));
      out->exact = 0;
      out->solver_used = MP_SOLVER_APPROX;
      d->exact = 0;
    }
    first = 0;
    if (r.feasible && r.model_peak < out->peak_no_recompute)
      rc = mp__push(out, cap, r.model_peak, r.recompute_time);
    mp_dp_result_free(&r);
    if (rc != 0) return mp_error_set(err, rc, "", "out of memory");
  }
  return 0;
}

int mp_frontier(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                mp_error_t *err) {
  double t0 = mp__now_ms();
  mp__cand_t all;
  size_t cap = 0, i;
  int rc;

  memset(out, 0, sizeof(*out));
  if (!g->finalized) return mp_error_set(err, MP_EINVAL, "", "graph is not finalized");
  if (mp_solver_swaps(o->solver)) return mp__frontier_migrate(g, o, out, err);
  out->solver = o->solver;
  out->solver_used = o->solver;
  if ((rc = mp__cand_make(g, NULL, &all, err)) != 0) return rc;
  out->peak_no_recompute = all.sim.peak_bytes;
  mp__cand_free(&all);

  switch (o->solver) {
  case MP_SOLVER_NONE:
    break;
  case MP_SOLVER_MEMONGER:
  case MP_SOLVER_SQRT: {
    mp__collect_t k = {out, &cap, 0};
    rc = mp__chen_search(g, o, t0, mp__collect, &k, err);
    if (rc == 0 && k.rc != 0) rc = mp_error_set(err, k.rc, "", "out of memory");
    if (rc != 0) goto fail;
    break;
  }
  default: {
    /* The same candidate families mp_plan() weighs for a DP solver: the
     * DP's own staircase (model figures, which bound the simulated ones),
     * the approximate DP's for exact, and Chen's prefix-cut plans. */
    mp_dp_options_t d;
    mp_dp_frontier_t df;
    mp__collect_t k = {out, &cap, 0};
    mp_plan_options_t co = *o;
    int pass;
    mp_dp_options_init(&d);
    d.exact = o->solver != MP_SOLVER_APPROX;
    d.max_lower_sets = o->max_lower_sets;
    d.deadline_ms = o->deadline_ms;
    d.should_stop = o->should_stop;
    d.stop_arg = o->stop_arg;
    if (g->n_activations <= MP__FULL_PASS_MAX_NODES) {
      for (pass = 0; pass < 2; pass++) {
        if ((rc = mp_dp_frontier(g, &d, &df, err)) != 0) goto fail;
        if (pass == 0) {
          out->exact = df.exact_used;
          out->solver_used = df.exact_used ? MP_SOLVER_EXACT : MP_SOLVER_APPROX;
          if (d.exact && !df.exact_used)
            memcpy(out->exact_reason, df.fallback_reason, sizeof(out->exact_reason));
        }
        for (i = 0; i < df.n_points && rc == 0; i++)
          if (df.points[i].budget < out->peak_no_recompute)
            rc = mp__push(out, &cap, df.points[i].budget, df.points[i].recompute_time);
        mp_dp_frontier_free(&df);
        if (rc != 0) {
          mp_error_set(err, rc, "", "out of memory");
          goto fail;
        }
        if (!out->exact) break; /* approx already done */
        d.exact = 0;
      }
    } else if ((rc = mp__sampled(g, &d, out, &cap, err)) != 0) {
      goto fail;
    }
    co.solver = MP_SOLVER_MEMONGER;
    co.deadline_ms = 0; /* the deadline bounds the exact DP, which fell back if it hit it */
    rc = mp__chen_search(g, &co, t0, mp__collect, &k, err);
    if (rc == 0 && k.rc != 0) rc = mp_error_set(err, k.rc, "", "out of memory");
    if (rc != 0) goto fail;
    break;
  }
  }
  /* Keeping everything is a point of every family but sqrt's (memonger's
   * search proposes it itself). */
  if (o->solver != MP_SOLVER_SQRT && o->solver != MP_SOLVER_MEMONGER &&
      (rc = mp__push(out, &cap, out->peak_no_recompute, 0)) != 0) {
    mp_error_set(err, rc, "", "out of memory");
    goto fail;
  }
  mp__staircase(g, out);
  out->solve_ms = mp__now_ms() - t0;
  return 0;
fail:
  mp_frontier_free(out);
  return rc;
}
