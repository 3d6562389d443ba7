/* frontier_recompute.c - the frontier entries (solver.h) of the solvers
 * that propose the same plans whatever the budget: the candidate points
 * mp_frontier() (frontier.c) makes a staircase of.
 *
 * memonger and sqrt: their candidate plans (threshold search, which for
 * memonger includes keeping everything) are simulated and Pareto-filtered on
 * (peak, recomputation), so each point is a plan mp_plan() returns at its
 * budget, and the staircase is its answer at every budget (exact). none:
 * the single no-recompute point. (The DP solvers' frontiers
 * are sampled from their plans: frontier_sampled.c.)
 */
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

/* What every recomputation frontier starts from: the solver, and plain
 * backpropagation's simulated peak. */
static int mp__begin(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                     mp_error_t *err) {
  mp__cand_t all;
  int rc;
  out->solver = o->solver;
  out->solver_used = o->solver;
  out->exact = 1; /* the staircase of every plan the solver can return */
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

/* Keeping everything: none's one point. */
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
