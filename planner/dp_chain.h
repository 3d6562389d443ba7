/* dp_chain.h - the prefix DP for chains and near-chains (dp_chain.c),
 * private to the planner library (mp__ prefix).
 *
 * Its states are the n+1 prefixes of the activations' topological order,
 * which are lower sets of any DAG; on a chain they are all of its lower sets,
 * so there the DP is the exact DP of docs/algorithms.md (same model, same
 * optimum). On a near-chain (few values live across any prefix boundary: a
 * transformer's residual blocks) it searches a subfamily of the lower sets
 * and its plan is valid but may recompute more than the exact DP's.
 *
 * Ownership: the result is an mp_dp_result_t (dp.h), freed with
 * mp_dp_result_free; the graph and options are borrowed for the call.
 */
#ifndef MP_DP_CHAIN_H
#define MP_DP_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "dp.h"
#include "error.h"
#include "graph.h"
#include "plan.h"

/* What the prefix DP sees of a graph: its activations, whether their order
 * is a chain (every activation reads the one before it, so the prefixes are
 * all the lower sets), and its width: the most activations computed before
 * some prefix boundary that an activation after it reads. */
typedef struct {
  size_t n_act;
  int chain;
  size_t width;
} mp__chain_shape_t;

/* The near-chain rule of auto: at least MP__CHAIN_AUTO_MIN activations (below,
 * the exact DP answers in well under a second) and a width of at most
 * MP__CHAIN_AUTO_WIDTH. */
#define MP__CHAIN_AUTO_MIN 1000
#define MP__CHAIN_AUTO_WIDTH 8

/* 0 or MP_ENOMEM. */
int mp__chain_shape(const mp_graph_t *g, mp__chain_shape_t *out);

/* The prefix DP at o->budget (default accounting, time objective: the
 * caller checks). Fills *res like mp_dp_solve: feasible, exact_used (1 when
 * the graph is a chain and the search finished within its work limit; else
 * fallback_reason says why not), n_lower_sets (the states), the strategy
 * and the model figures, or min_feasible_budget. Honours o->should_stop and
 * o->deadline_ms from t0. 0, MP_ENOMEM, MP_ECANCELED or MP_ETIMEDOUT. */
int mp__chain_solve(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                    mp_dp_result_t *res, mp_error_t *err);

/* An exact pass that holds more pairs than this stops as at the work limit
 * (the work limit alone allows 100 million, 4 GB): a pair and its score
 * take 40 bytes, so this is about 670 MB. A pass that needs more is on a
 * chain too long for a proof within the work limit anyway (the 100,000-node
 * chain of `make bench` at 70%), so stopping it early changes no answer
 * and saves the memory; proofs that fit keep it (a 30,000-node chain at 74%
 * proves every rung of its walk exact well under it). */
#define MP__CHAIN_PAIR_LIMIT ((size_t)1 << 24)

/* What a solve did, for the tests. */
typedef struct {
  size_t work;         /* candidate steps in all passes */
  size_t beam_passes;  /* passes of the beam (before the exact ones) */
  double beam_charged; /* the charged time of the beam's plan (HUGE_VAL: none) */
  size_t exact_passes; /* passes that kept every pair within the cut */
  size_t most_pairs;   /* the most pairs a pass held */
  double lb_plain;     /* the Lagrangian bound on the charged time at {} */
  double lb;           /* the bound the exact passes start from (the tail
                          bound's, when it was built; else lb_plain) */
  size_t tail_labels;  /* labels of the tail bound (0: not built) */
} mp__chain_stats_t;

/* mp__chain_solve, for the tests: no_skip != 0 steps every far source of
 * the beam that passes the cut (mp__chain_far, as outside the beam) instead
 * of skipping those it could not keep (mp__chain_far_beam, dp_chain.c);
 * stats (NULL: none) gets what it did. */
int mp__chain_solve_ex(const mp_graph_t *g, const mp_plan_options_t *o, double t0, int no_skip,
                       mp__chain_stats_t *stats, mp_dp_result_t *res, mp_error_t *err);

/* The most budgets mp__chain_solve_many solves at once. */
#define MP__CHAIN_MANY_MAX 8

/* mp__chain_solve at budgets[0 .. n) (n <= MP__CHAIN_MANY_MAX; more are
 * ignored), o's other options alike, the solves shared out over up to
 * o->threads threads (dp_chain_many.c): res[i], rcs[i] and errs[i] are
 * what mp__chain_solve returns at budgets[i], the same on any number of
 * threads. should_stop is polled one thread at a time. Returns 0, or
 * MP_ENOMEM before any solve (errs[0] says so, every res[i] zeroed). The
 * caller frees every res[i]. */
int mp__chain_solve_many(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                         const uint64_t *budgets, size_t n, mp_dp_result_t *res, int *rcs,
                         mp_error_t *errs);

#endif
