/* consistency.h - the planner's self-check: does one solver give one truth
 * about a graph? mp_consistency_check() plans at a set of budgets, draws the
 * solver's frontier, and counts the places where the answers disagree:
 *
 *   monotone  a budget without a plan above one with a plan;
 *   least     an infeasible answer's min_feasible_budget m where the plan
 *             at m does not fit, does not peak exactly at m, or a plan
 *             exists at m - 1; or answers that name different m;
 *   closure   a plan at B peaking at P < B while the plan at P fits worse
 *             (more extra time) or not at all;
 *   fit       a budget where mp_fit (what /v1/fit and `memplan fit`
 *             answer, fit.h) and the plan disagree on whether it fits or
 *             on the least budget they name (fit_feasible), where the plan
 *             costs more than the fit says (fit_promise) or differently
 *             (fit_cost), or where their peaks or solvers differ
 *             (fit_peak); every budget planned for the other checks is
 *             asked of mp_fit at once, and costs compare exactly;
 *   cost      a plan that costs more than the plan at a smaller budget
 *             (cost_up), among all the budgets planned;
 *   frontier  a frontier point whose budget does not plan (point_feasible),
 *             where the plan costs more than the point (point_promise), or
 *             costs differently (point_cost); the first point lies below
 *             or above the least budget the plans name (point_least); a
 *             budget planned between two points that costs more than the
 *             staircase says there (point_between).
 *
 * The cost is the recomputation (time_recompute) for the recompute-only
 * solvers and the extra time (total - forward - backward) for the
 * migration solvers, as frontier.h counts it. Plans use the time objective
 * and the default accounting. The test suite (tests/unit/test_consistency.c)
 * and `make bench` call it; every plan it makes has been through the
 * simulator (mp_plan).
 *
 * Ownership: the graph and options are borrowed; nothing is kept.
 */
#ifndef MP_CONSISTENCY_H
#define MP_CONSISTENCY_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "plan.h"

typedef struct mp_consistency_s {
  size_t n_budgets;       /* budgets checked (the grid, the least budgets, the
                           * peaks and the frontier points) */
  size_t n_plans;         /* mp_plan calls */
  size_t n_points;        /* frontier points */
  size_t monotone, least, closure;
  size_t n_fit;           /* budgets asked of mp_fit */
  size_t fit_feasible, fit_promise, fit_cost, fit_peak;
  size_t cost_up;
  size_t point_feasible, point_promise, point_cost, point_least, point_between;
  char first[200];        /* the first violation found, "" when none */
} mp_consistency_t;

/* Check o->solver on g at budgets[0..n) (any order) as described above.
 * o->objective and o->accounting are overridden (time, default). 0 with
 * *out filled, or the first mp_plan / mp_frontier error. */
int mp_consistency_check(const mp_graph_t *g, const mp_plan_options_t *o, const uint64_t *budgets,
                         size_t n, mp_consistency_t *out, mp_error_t *err);

#endif
