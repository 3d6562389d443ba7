/* frontier.h - the memory/time frontier of a graph: for every budget, the
 * least recomputation a solver achieves, as a staircase of points.
 *
 * Point i says: from points[i].budget on (up to the next point), the solver
 * plans with recomputation points[i].recompute. Below points[0].budget it
 * finds no plan. Budgets are total device memory (default accounting).
 *
 * The figures are guarantees the simulator backs: for the DP solvers each
 * point comes from the DP's model, whose peak and recomputation bound the
 * simulated ones from above (tests/unit/test_plan.c checks this on every
 * shipped graph), and the last point is plain backpropagation at its
 * simulated peak with no recomputation. For memonger and sqrt the points
 * are their simulated candidate plans, Pareto-filtered.
 *
 * Ownership: mp_frontier() fills a caller-provided struct; release it with
 * mp_frontier_free() (safe on a zeroed struct). The graph is borrowed.
 */
#ifndef MP_FRONTIER_H
#define MP_FRONTIER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "plan.h"

typedef struct mp_frontier_point_s {
  uint64_t budget;     /* least total device memory for this point */
  double recompute;    /* recomputation time at that budget, graph time unit */
  double overhead_pct; /* recompute / (forward + backward) * 100 */
} mp_frontier_point_t;

typedef struct mp_frontier_s {
  mp_solver_t solver;       /* the solver asked for */
  mp_solver_t solver_used;  /* exact / approx after a fallback, or memonger / sqrt */
  int exact;                /* the exact DP answered */
  char exact_reason[160];
  uint64_t peak_no_recompute; /* simulated peak of plain backpropagation */
  size_t n_points;
  mp_frontier_point_t *points; /* strictly increasing budget, strictly decreasing recompute */
  double solve_ms;
} mp_frontier_t;

/* Compute the frontier for o->solver (auto, exact, approx, memonger or
 * sqrt; none gives the single no-recompute point). o->budget, objective and
 * accounting are ignored (time objective, default accounting); the lower-set
 * limit, deadline and cancel callback apply. 0 or a negative MP_E* code. */
int mp_frontier(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                mp_error_t *err);
void mp_frontier_free(mp_frontier_t *f);

/* Index of the point that applies at `budget`, or -1 when nothing fits. */
long mp_frontier_lookup(const mp_frontier_t *f, uint64_t budget);

#endif
