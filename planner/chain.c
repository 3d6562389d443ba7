/* chain.c - the solver table's entries (solver.h) for `chain`, the prefix
 * DP of dp_chain.h with its portfolio, and for `auto`, which sends large
 * chains and near-chains to it and everything else to the exact DP's
 * portfolio (cand_recompute.c).
 *
 * The chain portfolio is the exact one's (docs/algorithms.md, "How a DP
 * solver answers") with the prefix DP in the exact DP's place: keeping
 * everything, the prefix DP's plan and Chen's proposals, all simulated, the
 * best that fits. On a chain the prefix DP is the exact DP, so the answer
 * recomputes what `exact` recomputes; the approximate DP is not run (on a
 * chain its family is the same, on a near-chain it is quadratic in the
 * nodes). The prefix DP serves the time objective in the default
 * accounting; other requests get the exact DP's portfolio.
 *
 * auto's rule: with the time objective, the default accounting and no
 * swapping, a graph of at least MP__CHAIN_AUTO_MIN activations whose width
 * (dp_chain.h) is at most MP__CHAIN_AUTO_WIDTH is planned by `chain`.
 */
#include <string.h>

#include "dp_chain.h"
#include "plan_internal.h"
#include "solver.h"

/* Does the request fall to the prefix DP at all? */
static int mp__chain_serves(const mp_plan_options_t *o) {
  return o->objective == MP_OBJECTIVE_TIME && o->accounting == MP_ACCOUNTING_DEFAULT;
}

int mp__plan_chain(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                   double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_pick_t p;
  mp_dp_result_t dr;
  mp__cand_t dc;
  mp_plan_options_t co = *o;
  int rc, dp_won = 0;
  (void)self;
  if (!mp__chain_serves(o)) return mp__cand_portfolio(g, o, t0, 1, r, err);
  mp__cand_pick_init(&p, o);
  if ((rc = mp__chain_solve(g, o, t0, &dr, err)) != 0) return rc;
  r->solver_used = MP_SOLVER_CHAIN;
  r->exact = dr.exact_used;
  r->n_lower_sets = dr.n_lower_sets;
  memcpy(r->exact_reason, dr.fallback_reason, sizeof(r->exact_reason));
  if (dr.feasible) {
    rc = mp__cand_make(g, o, dr.strategy, &dc, err);
    dr.strategy = NULL; /* the candidate's now */
    if (rc != 0) goto fail;
    /* the model bounds the simulated peak (docs/model.md) */
    if (!mp__cand_fits(o, &dc.sim)) {
      mp__cand_free(&dc);
      rc = mp_error_set(err, MP_ESCHEDULE, "",
                        "planner bug: the prefix DP's plan simulates above the budget");
      goto fail;
    }
    mp__cand_pick(&p, &dc);
    mp__cand_free(&dc);
    dp_won = p.best.schedule != NULL;
  }
  if (!dr.feasible && dr.min_feasible_budget != 0) {
    /* As the DP families do (mp__cand_dp_least): the prefix DP's plan at
     * its own least model budget, which may simulate at or below this
     * budget, so that the budgets with a plan form one interval. */
    mp_plan_options_t lo = *o;
    mp_dp_result_t lr;
    lo.budget = dr.min_feasible_budget;
    if ((rc = mp__chain_solve(g, &lo, t0, &lr, err)) != 0) goto fail;
    if (lr.feasible) {
      rc = mp__cand_make(g, o, lr.strategy, &dc, err);
      lr.strategy = NULL;
      if (rc != 0) {
        mp_dp_result_free(&lr);
        goto fail;
      }
      mp__cand_pick(&p, &dc);
      mp__cand_free(&dc);
      if (p.best.schedule != NULL && mp__cand_fits(o, &p.best.sim)) {
        mp_dp_result_free(&dr);
        dr = lr; /* the figures of the plan that won */
        dr.feasible = 1;
        dp_won = 1;
      } else {
        mp_dp_result_free(&lr);
      }
    } else {
      mp_dp_result_free(&lr);
    }
  }
  co.deadline_ms = 0; /* as in the exact portfolio: Chen's proposals always run */
  {
    mp_schedule_t *before = p.best.schedule;
    if ((rc = mp__cand_chen(g, &co, t0, 0, mp__cand_pick, &p, err)) != 0) goto fail;
    if (p.best.schedule != before) dp_won = 0;
  }
  r->feasible = p.best.schedule != NULL && mp__cand_fits(o, &p.best.sim);
  if (!r->feasible) {
    r->min_feasible_budget = p.least_peak;
    if (!dr.feasible && dr.min_feasible_budget != 0 && dr.min_feasible_budget < p.least_peak)
      r->min_feasible_budget = dr.min_feasible_budget;
    mp__cand_free(&p.best);
    mp_dp_result_free(&dr);
    return 0;
  }
  if (dp_won) {
    r->source = dr.model_peak > o->budget ? "chain-dp-least" : "chain-dp";
    r->has_model = 1;
    r->model_recompute = dr.recompute_time;
    r->model_peak = dr.model_peak;
  } else {
    r->source = p.best.strategy ? "memonger-candidate" : "keep-all";
  }
  mp_dp_result_free(&dr);
  return mp__cand_adopt(g, &p.best, r);
fail:
  mp_dp_result_free(&dr);
  mp__cand_free(&p.best);
  return rc;
}

int mp__plan_auto(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__chain_shape_t sh;
  int rc;
  if (mp__chain_serves(o)) {
    if ((rc = mp__chain_shape(g, &sh)) != 0) return mp_error_set(err, rc, "", "out of memory");
    if (sh.n_act >= MP__CHAIN_AUTO_MIN && sh.width <= MP__CHAIN_AUTO_WIDTH)
      return mp__plan_chain(self, g, o, t0, r, err);
  }
  return mp__cand_portfolio(g, o, t0, 1, r, err);
}
