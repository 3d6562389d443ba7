/* dp.h - the exact and approximate dynamic programs over lower sets
 * (Kusumoto et al., NeurIPS'19; docs/model.md, docs/algorithms.md,
 * docs/reference-figures.md), with the
 * time-centric and memory-centric objectives and the memory/time frontier.
 *
 * The model (all sizes in bytes). For a lower set L: m(L) its bytes, A(L) the
 * activations outside L with a predecessor in L, B(L) the activations outside
 * L that are predecessors of a node of A(L), back(L) = m(A(L)) + m(B(L)).
 * A step L_i -> L_j (L_i a strict subset of L_j) is allowed when
 *     kept + 2 * (m(L_j) - m(L_i)) + back(L_j) <= activation budget
 * and the left side is the step's "model peak". The step keeps W, the nodes
 * of L_j \ L_i with a successor outside L_j: kept += m(W), and W's time is
 * never recomputed.
 *
 * Accountings (strategy.h):
 *  - MP_ACCOUNTING_REFERENCE reproduces the reference solver: the budget is
 *    the activation budget, recompute = total forward time - sum of t(W)
 *    (so the whole last segment is charged), recompute:false is ignored.
 *  - MP_ACCOUNTING_DEFAULT: the budget is total device memory; the
 *    activation budget is budget - g->const_bytes (infeasible when the budget
 *    is below the constant memory). The last segment is still in memory when
 *    backward starts, so it is not charged: recompute = sum over segments but
 *    the last of t(V_i \ W_i). A node with recompute:false is never
 *    recomputed: it is kept like a W node (its bytes added to kept, its time
 *    to the retained time) in every segment but the last, where the whole
 *    segment is resident anyway.
 *    The step bound differs too: kept + 2 * (m(L_j) - m(L_i)) + g(L_i) +
 *    the largest workspace + the saved bytes of L_j \ L_i, where g(L) is
 *    the bytes of the nodes of L with a successor outside L, and kept holds
 *    the saved bytes of the nodes that keep theirs from the forward pass.
 *    That is what memplan's schedule really holds while a segment runs
 *    (dp_internal.h, mp__step_cost), so the model peak
 *    bounds the simulated peak; the paper's back(L_j) does not (gradients
 *    flowing into earlier segments at a join are missing from it).
 *  Neither uses bwd_reads for values (the default one reads it only to tell
 *  which saved bytes are held): in this model a segment is fully re-materialised
 *  before its backward runs, so a backward that reads its own output finds it;
 *  what the real schedule holds is the simulator's business.
 *
 * Budgets are never rounded; all sums saturate instead of wrapping.
 *
 * Ownership: results and frontiers own their arrays and strategy; free them
 * with mp_dp_result_free / mp_dp_frontier_free (safe on zeroed structs). The
 * graph and options are borrowed for the call; a session copies the options
 * and borrows the graph until mp_dp_session_free. No global state: calls on
 * different graphs (or sessions) may run in parallel.
 */
#ifndef MP_DP_H
#define MP_DP_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "strategy.h"

typedef enum {
  MP_OBJECTIVE_TIME = 0,  /* least recomputation; ties: least kept memory */
  MP_OBJECTIVE_MEMORY = 1 /* least kept memory; ties: least recomputation */
} mp_objective_t;

typedef struct mp_dp_options_s {
  int exact;                 /* 1: all lower sets (falls back to approx), 0: approx */
  mp_objective_t objective;
  mp_accounting_t accounting;
  uint64_t budget;           /* default accounting: total device memory;
                              * reference: activation memory. UINT64_MAX: none */
  size_t max_lower_sets;     /* exact only; 0 means the default 200000 */
  int window;                /* exact only: 1 skips the lower-set enumeration and
                              * runs over the window family (below) at once, as
                              * after a fallback */
  size_t window_sets;        /* exact only: past the limit (or the deadline) the
                              * DP falls back to the window family of lower sets
                              * (lowerset_window.h) of the largest width with at
                              * most this many sets; 0: a default that shrinks
                              * with the graph's length (dp_window.c) */
  double deadline_ms;        /* exact only; wall-clock ms from the call, <= 0: none */
  int (*should_stop)(void *arg); /* polled; nonzero cancels (MP_ECANCELED) */
  void *stop_arg;
  unsigned tuning;           /* MP_DP_TUNE_* flags, for tests and diagnosis: they
                              * change how the answer is found, never the answer */
  unsigned threads;          /* exact family: reverse passes (a solve's first, the
                              * staircase) on up to this many threads, when the
                              * family has enough sets per size to gain from them
                              * (thousands of sets, dozens per size); 0 or 1: the
                              * caller's alone. The answer does not depend on it,
                              * nor does a work limit's verdict. Each extra thread
                              * keeps a walk stack of 32 bytes per lower set while
                              * the session lives; should_stop is polled by the
                              * caller's thread alone, between its own walks. */
} mp_dp_options_t;

#define MP_DP_MAX_THREADS 64

/* Tuning flags (0, the default, lets the DP choose). */
#define MP_DP_TUNE_NO_QCUT 1u     /* passes do not drop pairs that cannot finish */
#define MP_DP_TUNE_NO_LAGRANGE 2u /* no Lagrangian time bounds, ht alone */
#define MP_DP_TUNE_WALK 4u        /* exact family: always walk down the cover relation */
#define MP_DP_TUNE_SCAN 8u        /* exact family: always scan the sets that have pairs */
#define MP_DP_TUNE_STOP 16u       /* stop the first pass that may be stopped at once */
#define MP_DP_TUNE_NO_PARTS 32u   /* exact family: forward walks do not skip the parts
                                   * that hold no useful pair */
#define MP_DP_TUNE_THREADS_ALWAYS 64u /* reverse passes use the threads asked for even
                                   * on families too small or with too few sets per
                                   * size to gain from them (dp_reverse.c,
                                   * MP__PAR_MIN_SETS) */

#define MP_DP_DEFAULT_MAX_LOWER_SETS 200000

/* exact = 1, time objective, default accounting, no budget bound, the
 * default lower-set limit, no deadline, no cancel callback. */
void mp_dp_options_init(mp_dp_options_t *o);

typedef struct mp_dp_result_s {
  int feasible;               /* a plan fits the budget */
  int exact_used;             /* the exact DP ran to completion */
  char fallback_reason[160];  /* why exact was not used ("" otherwise) */
  size_t n_lower_sets;        /* states of the DP that produced the answer */
  size_t window_width;        /* the exact DP fell back to the window family
                               * (lowerset_window.h) of this width; 0 otherwise */
  mp_strategy_t *strategy;    /* owned; NULL when infeasible */
  double recompute_time;      /* per the accounting, in the graph's time unit */
  double retained_time;       /* forward time not charged: fwd_time - recompute_time */
  uint64_t kept_bytes;        /* sum of m(W) over the steps (default accounting:
                               * with the saved bytes held from the forward pass) */
  uint64_t model_peak;        /* the model's peak along the plan, in budget terms
                               * (constant memory included in default accounting) */
  uint64_t min_feasible_budget; /* when infeasible: the least budget at which this
                               * solver (same family) finds a plan; 0 when feasible,
                               * or when the exact search for it passed the deadline
                               * (fallback_reason then says so) */
} mp_dp_result_t;

/* Solve at opts->budget. Returns 0 with *res filled, whether or not a plan
 * was found (see res->feasible), or MP_EINVAL (bad options), MP_ENOMEM,
 * MP_ECANCELED (should_stop said so), MP_ELIMIT (even the approx family does
 * not fit in memory). When opts->exact and the lower sets exceed
 * max_lower_sets or the deadline passes, the approximate DP answers instead:
 * exact_used = 0 and fallback_reason says why. On error *res is zeroed. */
int mp_dp_solve(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_result_t *res,
                mp_error_t *err);
void mp_dp_result_free(mp_dp_result_t *res);

/* Several budgets on one graph. A session enumerates the lower sets and
 * computes the per-set figures and the reverse pass (which hold at every
 * budget, dp_reverse.c) once; each later solve costs a forward search. A
 * solve is pure: its answer depends on its budget alone, never on what the
 * session was asked before (earlier answers would bound it and could break
 * ties between plans of equal model cost differently; the planner needs a
 * budget's plan to be the same whoever asks, cand_recompute.c). Its answer
 * is mp_dp_solve's with the session's options at that budget, except
 * that the deadline (opts->deadline_ms) applies to each solve on its own
 * (and to the enumeration, in mp_dp_session_new), and that once the exact
 * DP passes it, the session stays on the approx family (exact_used = 0 and
 * the reason in every later result). opts->budget is ignored. Same error
 * codes as mp_dp_solve. A session is not thread-safe; free it with
 * mp_dp_session_free (NULL is fine). */
typedef struct mp_dp_session_s mp_dp_session_t;

int mp_dp_session_new(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_session_t **out,
                      mp_error_t *err);
int mp_dp_session_solve(mp_dp_session_t *s, uint64_t budget, mp_dp_result_t *res,
                        mp_error_t *err);
void mp_dp_session_free(mp_dp_session_t *s);
/* Whether the session is on the exact family (1) or the approx one (0);
 * *reason (when reason is not NULL) is then why, owned by the session. */
int mp_dp_session_exact_used(const mp_dp_session_t *s, const char **reason);

/* The memory/time frontier: a staircase of points with strictly increasing
 * budget. Point i says: from `budget` on (up to the next point's budget),
 * mp_dp_solve with the same options returns this recompute_time and
 * kept_bytes. Below points[0].budget there is no plan. Consecutive points
 * improve the objective lexicographically (time objective: recompute, then
 * kept; memory objective: kept, then recompute). */
typedef struct mp_dp_point_s {
  uint64_t budget;       /* least budget for this point, in the options' terms */
  double recompute_time;
  uint64_t kept_bytes;
} mp_dp_point_t;

typedef struct mp_dp_frontier_s {
  int exact_used;
  char fallback_reason[160];
  size_t n_lower_sets;
  size_t n_points;
  mp_dp_point_t *points; /* owned */
} mp_dp_frontier_t;

/* One DP pass without a budget bound whose states carry, besides retained
 * time and kept memory, the largest model peak along the path; the Pareto
 * set at V over those three gives every budget's answer. opts->budget is
 * ignored. Same return codes and fallback as mp_dp_solve. */
int mp_dp_frontier(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_frontier_t *out,
                   mp_error_t *err);
void mp_dp_frontier_free(mp_dp_frontier_t *f);

/* Index of the point that applies at `budget`, or -1 below the first point. */
long mp_dp_frontier_lookup(const mp_dp_frontier_t *f, uint64_t budget);

/* The time objective's whole staircase up to max_budget (in the options'
 * terms), in one reverse pass (dp_staircase.c): *points (malloc'd, the
 * caller frees it) in strictly increasing budget and strictly decreasing
 * recompute_time, point i saying that from its budget on the least
 * recomputation of this family is its recompute_time (exactly what
 * mp_dp_session_solve returns there); kept_bytes is not tracked (0). No
 * points when nothing fits max_budget. The pass has no budget to cut its
 * sets with (on the shipped graphs it costs about one solve at the graph's
 * hardest budget, but nothing bounds it in general): once its work passes
 * max_work candidate pairs (0: a default of 12 times the reverse walk's steps
 * for the exact family, 12 n_sets^2 for the approx one, clamped to 64 million
 * .. a billion), or is projected to, it gives up with
 * MP_ELIMIT, and the caller can sample budgets with mp_dp_session_solve
 * instead. Deadline and cancel as for a solve (MP_ETIMEDOUT: the exact DP
 * passed the deadline). The pass, and the reverse pass before it, run on the
 * session's options' `threads` (the points do not depend on it; should_stop
 * is only ever called from the caller's thread). */
int mp_dp_session_staircase(mp_dp_session_t *s, uint64_t max_budget, size_t max_work,
                            mp_dp_point_t **points, size_t *n_points, mp_error_t *err);

#endif
