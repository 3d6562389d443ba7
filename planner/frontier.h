/* frontier.h - the memory/time frontier of a graph: for every budget, the
 * least recomputation a solver achieves, as a staircase of points.
 *
 * Point i says: from points[i].budget on (up to the next point), the solver
 * plans with recomputation points[i].recompute. Below points[0].budget it
 * finds no plan. Budgets are total device memory (default accounting).
 *
 * Every point is what mp_plan() returns at exactly points[i].budget with
 * the same solver (time objective, default accounting):
 *
 * memonger, sqrt and none: their fixed proposals, simulated and
 * Pareto-filtered; exact is 1.
 *
 * The solvers that search toward the budget (auto, exact, window, closures,
 * chain, swap, hybrid; frontier_sampled.c): sampled from their own plans,
 * the least budget and 16 more up to plain backpropagation's peak. For the
 * recompute solvers, whose plans never cost more at a larger budget
 * (tests/unit/test_consistency.c counts any that do), a search then finds
 * the breakpoints between the samples, each to the byte, within
 * o->frontier_solves more solves and o->frontier_ms: when it finds them all
 * exact is 1 and the staircase is plan's answer at every budget; cut short,
 * exact is 0 and exact_reason says whether every budget's plan is within 1%
 * (relative) of the staircase's overhead there, or the staircase is only an
 * upper bound between its points. The migration solvers' greedy promises no
 * such order: their points are the samples. For swap, hybrid and layrub the cost of a point is its extra time,
 * total - forward - backward (recomputation plus stalls), not recomputation
 * alone, and `migrate` is set; they plan under o->device. layrub has one
 * point: its fixed policy at its own peak.
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

/* The frontier search `memplan frontier` and the daemon ask (plan.h's
 * frontier_solves and frontier_ms): every breakpoint of the shipped graphs
 * within it in CPU time on one thread (ResNet-152's 485 take about 2,040
 * plans); frontier_ms is wall-clock time, so a loaded machine can still cut
 * the slowest short. */
#define MP_FRONTIER_SOLVES 4096
#define MP_FRONTIER_MS 60000.0

typedef struct mp_frontier_point_s {
  uint64_t budget;     /* least total device memory for this point */
  double recompute;    /* recomputation time at that budget, graph time unit */
  double overhead_pct; /* recompute / (forward + backward) * 100; for a
                        * migration frontier extra_time / (forward +
                        * backward) * 100 */
  double extra_time;   /* total - forward - backward: recompute + stalls
                        * (recompute itself for the other solvers) */
  /* Set for migration frontiers only (mp_frontier_t.migrate); the other
   * solvers' points leave them 0. */
  double stall;        /* compute idle waiting for copies */
  uint64_t peak_bytes; /* simulated device peak of the point's plan (<= budget) */
  uint64_t host_peak_bytes; /* its pinned host memory peak */
  size_t n_swapped;    /* activations it moves to host memory */
  size_t n_recomputed; /* activations it recomputes */
} mp_frontier_point_t;

typedef struct mp_frontier_s {
  mp_solver_t solver;       /* the solver asked for */
  mp_solver_t solver_used;  /* exact / approx after a fallback, or memonger / sqrt */
  int exact;                /* 1: the staircase is every budget's answer (the
                             * fixed proposals, or every breakpoint found); 0:
                             * sampled from plans, within 1% or an upper bound
                             * between the points (exact_reason says which) */
  char exact_reason[160];
  uint64_t peak_no_recompute; /* simulated peak of plain backpropagation */
  size_t n_points;
  mp_frontier_point_t *points; /* strictly increasing budget, strictly decreasing
                                * recompute (migration: extra_time) */
  double solve_ms;
  /* Data migration: the points carry extra_time and the rest; `device` is
   * the device they were planned under and time_unit_s its seconds per
   * graph time unit for this graph. peak_no_recompute is then the plain
   * backpropagation peak under that device. */
  int migrate;
  mp_device_t device;
  double time_unit_s;
} mp_frontier_t;

/* Compute the frontier for o->solver (auto, exact, approx, memonger or
 * sqrt; none gives the single no-recompute point; swap, hybrid and layrub
 * plan under o->device). o->budget, objective and accounting are ignored
 * (time objective, default accounting); o->swap is not consulted (ask for
 * hybrid rather than auto with swap); the lower-set limit, deadline and
 * cancel callback apply. A device with the pytorch-cuda allocator is
 * refused (MP_EINVAL at "$.device.allocator": the staircase is found at
 * the DP's unrounded model budgets). 0 or a negative MP_E* code. */
int mp_frontier(const mp_graph_t *g, const mp_plan_options_t *o, mp_frontier_t *out,
                mp_error_t *err);
void mp_frontier_free(mp_frontier_t *f);

/* Index of the point that applies at `budget`, or -1 when nothing fits. */
long mp_frontier_lookup(const mp_frontier_t *f, uint64_t budget);

#endif
