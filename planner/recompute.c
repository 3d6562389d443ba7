/* recompute.c - the solver table's entries (solver.h) for the recompute-only
 * solvers: none (keep everything), memonger and sqrt (Chen's proposals, the
 * best that fits), and the DP solvers exact, approx, window and auto (the
 * portfolio). Each is a thin choice over the candidates of
 * cand_recompute.c; with a budget, memonger and sqrt answer with the
 * proposal of least recomputation among those that fit (least peak with the
 * memory objective), and when none fits, the least peak seen is the
 * min_feasible_budget. Ownership as in plan.h.
 */
#include <stdint.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"

/* none: keep everything. Its schedule is returned whether it fits or not. */
int mp__plan_none(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_t c;
  int rc;
  (void)t0;
  r->solver_used = self->id;
  r->source = "keep-all";
  if ((rc = mp__cand_make(g, o, NULL, &c, err)) != 0) return rc;
  r->feasible = mp__cand_fits(o, &c.sim);
  if (!r->feasible) r->min_feasible_budget = c.sim.peak_bytes;
  return mp__cand_adopt(g, &c, r);
}

/* memonger and sqrt: Chen's proposals, the best that fits. */
int mp__plan_chen(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_pick_t p;
  int rc;
  mp__cand_pick_init(&p, o);
  r->solver_used = self->id;
  if ((rc = mp__cand_chen(g, o, t0, self->id == MP_SOLVER_SQRT, mp__cand_pick, &p, err)) != 0) {
    mp__cand_free(&p.best);
    return rc;
  }
  r->feasible = p.best.schedule != NULL && mp__cand_fits(o, &p.best.sim);
  if (!r->feasible) {
    r->min_feasible_budget = p.least_peak;
    mp__cand_free(&p.best);
    return 0;
  }
  r->source = p.best.strategy ? self->name : "keep-all";
  return mp__cand_adopt(g, &p.best, r);
}

/* exact, approx, window and auto: the portfolio around the DP the entry names
 * (window: exact's, on the window family from the start). */
int mp__plan_dp(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                double t0, mp_plan_result_t *r, mp_error_t *err) {
  return mp__cand_portfolio(g, o, t0,
                            (self->caps & (MP__CAP_EXACT | MP__CAP_WINDOW)) ? MP__FAMILY_EXACT
                                                                          : MP__FAMILY_APPROX,
                            r, err);
}
