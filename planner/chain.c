/* chain.c - the solver table's entries (solver.h) for `chain`, the prefix
 * DP of dp_chain.h with its portfolio, and for `auto`, which sends large
 * chains and near-chains to it and everything else to the exact DP's
 * portfolio (cand_recompute.c).
 *
 * The chain portfolio is the exact one (mp__cand_portfolio, cand_recompute.c;
 * docs/algorithms.md, "How a DP solver answers") around the prefix DP's
 * family: keeping everything, the prefix DP's plan (and, when it finds none
 * at the budget, its plan at its own least budget) and Chen's proposals,
 * all simulated, the best that fits. On a chain the prefix DP is the exact
 * DP, so the answer recomputes what `exact` recomputes; the approximate DP
 * is not run (on a chain its family is the same, on a near-chain it is
 * quadratic in the nodes). The prefix DP serves the time objective in the
 * default accounting; other requests get the exact DP's portfolio.
 *
 * auto's rule: with the time objective, the default accounting and no
 * swapping, a graph of at least MP__CHAIN_AUTO_MIN activations whose width
 * (dp_chain.h) is at most MP__CHAIN_AUTO_WIDTH is planned by `chain`.
 *
 * Frontiers follow the plans (frontier_sampled.c, for every DP solver):
 * each point is what `plan` returns at its budget with the same solver, so
 * chain's and auto's frontiers are drawn from the plans they make.
 */
#include "dp_chain.h"
#include "plan_internal.h"
#include "solver.h"

/* Does the request fall to the prefix DP at all? */
static int mp__chain_serves(const mp_plan_options_t *o) {
  return o->objective == MP_OBJECTIVE_TIME && o->accounting == MP_ACCOUNTING_DEFAULT;
}

/* Does auto send g to chain under o? 0 or 1, or a negative MP_E* code. */
static int mp__auto_is_chain(const mp_graph_t *g, const mp_plan_options_t *o) {
  mp__chain_shape_t sh;
  if (!mp__chain_serves(o)) return 0;
  if (mp__chain_shape(g, &sh) != 0) return MP_ENOMEM;
  return sh.n_act >= MP__CHAIN_AUTO_MIN && sh.width <= MP__CHAIN_AUTO_WIDTH;
}

int mp__plan_chain(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                   double t0, mp_plan_result_t *r, mp_error_t *err) {
  (void)self;
  return mp__cand_portfolio(g, o, t0, mp__chain_serves(o) ? MP__FAMILY_CHAIN : MP__FAMILY_EXACT, r, err);
}

int mp__plan_auto(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  int rc = mp__auto_is_chain(g, o);
  if (rc < 0) return mp_error_set(err, rc, "", "out of memory");
  if (rc) return mp__plan_chain(self, g, o, t0, r, err);
  return mp__cand_portfolio(g, o, t0, MP__FAMILY_EXACT, r, err);
}
