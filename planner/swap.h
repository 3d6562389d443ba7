/* swap.h - data migration: a per-activation residency decision (keep it on
 * the device, swap it to pinned host memory, or recompute it), the schedule a
 * decision vector implies (swap_schedule.c), and the internals shared by the
 * three solvers that choose decisions (swap_greedy.c: the `swap` greedy;
 * hybrid.c: the DP's recomputation plan plus swaps; layrub.c: Layrub's fixed
 * policy). mp_plan() reaches them through the solver table (solver.h); every
 * figure they report is the simulator's (mp_simulate_ex under the plan's
 * device, simulator.c's event model).
 *
 * Ownership: mp_schedule_from_residency returns a new schedule the caller
 * frees with mp_schedule_free(). The graph, the decision vector and the
 * options are borrowed for the call. The internal mp__res_info_t owns its
 * arrays (mp__res_info_free). No global state.
 */
#ifndef MP_SWAP_H
#define MP_SWAP_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"
#include "graph.h"
#include "plan.h"
#include "schedule.h"
#include "simulator.h"

/* What happens to an activation's value between its last forward reader and
 * the backward steps that need it again. */
typedef enum {
  MP_RES_KEEP = 0,     /* stays on the device */
  MP_RES_SWAP = 1,     /* copied to host after its last forward reader, copied
                        * back ahead of its first backward-time reader */
  MP_RES_RECOMPUTE = 2 /* dropped after its last forward reader, recomputed
                        * right before its first backward-time reader */
} mp_residency_t;

typedef struct mp_residency_options_s {
  const mp_device_t *device; /* copy durations for the just-in-time prefetch;
                              * NULL: mp_device_init's defaults */
  uint32_t lookahead;        /* 0: just in time (below); k > 0: each swap-in is
                              * issued at the start of the backward step k
                              * places before the one that first needs it */
  int sync_swap_out;         /* 1: a `wait` for each value swapped out after a
                              * forward step, right after its swap-outs
                              * (Layrub's sync after each layer) */
  int auto_free;             /* 1: no free steps, s->auto_free set (the
                              * simulator's liveness pass frees); 0: explicit
                              * frees inserted by mp_schedule_insert_frees */
  /* Optional, per node (NULL: none): a swap-in of node v is issued no earlier
   * than the start of backward step number swap_in_after[v] (backward steps
   * numbered 0, 1, ... in the order they run, i.e. by decreasing topological
   * index; 0 means no constraint), and never later than its first reader.
   * The swap greedy uses it to keep a value off the device at a peak even
   * when the copy then cannot be hidden. */
  const uint32_t *swap_in_after;
  /* Optional, per node (NULL: none): wait_before[v] = w + 1 (w < number of
   * nodes) puts a `wait v` right before the forward compute of node w, and
   * wait_before[v] = n_nodes + k + 1 at the start of backward step k (before
   * its swap-ins); 0: no wait. So v's swap-out has returned its device
   * memory by then, at the price of a stall. When v's swap-out comes later
   * than a forward anchor, the wait follows the swap-out instead. */
  const uint32_t *wait_before;
  /* Optional, per node (NULL: none): remat_from[v] = a > 0 makes backward
   * step a and every later one read a fresh instance of v, recomputed (after
   * its own inputs, as for RECOMPUTE) when first needed from there on; the
   * earlier instance (kept, swapped in or recomputed) ends at its last read
   * before. Only for nodes that may be recomputed (MP_EINVAL otherwise). */
  const uint32_t *remat_from;
} mp_residency_options_t;

/* device NULL, just in time, no sync, explicit frees, no constraint. */
void mp_residency_options_init(mp_residency_options_t *o);

/* The schedule of a decision vector (decision[v] is an mp_residency_t for
 * every node; non-activations are ignored):
 *  - forward: compute every activation in topological order; right after the
 *    compute of a SWAP node's last forward reader (its own compute when no
 *    activation reads it) comes `swap_out v` (several: ascending index), and
 *    with sync_swap_out a `wait v` for each;
 *  - backward: backward steps in reverse topological order. Before each, the
 *    values it reads are made present: KEEP values are (the liveness pass
 *    keeps them until their last reader); a RECOMPUTE value is recomputed,
 *    after whatever of its own inputs must be re-materialised (recomputed
 *    or swapped in, recursively), in topological order; a SWAP value was
 *    swapped in earlier. Once re-materialised a value stays until its last
 *    reader (one swap-in per SWAP value, one recompute per RECOMPUTE value),
 *    except that remat_from (below) starts a fresh, recomputed instance;
 *  - swap-ins: ahead of the value's first backward-time reader (a backward
 *    step or a recompute), either `lookahead` backward steps earlier, or just
 *    in time: the latest point at which the compute still to run before the
 *    reader (estimated without stalls) covers the copy, walking the copies
 *    latest-first so that each also finishes before the next one starts on
 *    the copy queue, and never before the backward pass starts. Swap-ins at
 *    the same point are issued in the order of their readers;
 *  - frees: the liveness pass (auto_free, or explicit).
 * A SWAP or RECOMPUTE value that no backward-time step reads is left as KEEP
 * (nothing to move). With remat_from, a value may be recomputed twice. Returns 0 and a new schedule in *out, or MP_EINVAL
 * (graph not finalized, decision out of range, RECOMPUTE on a
 * recompute:false node: err->path "$.decisions[i]") or MP_ENOMEM. */
int mp_schedule_from_residency(const mp_graph_t *g, const uint8_t *decision,
                               const mp_residency_options_t *o, mp_schedule_t **out,
                               mp_error_t *err);

/* ---- Internal (mp__), shared by the migration solvers ------------------- */

/* The schedule builder's estimates, and migration plans (swap_schedule.c). */

#define MP__RES_NONE SIZE_MAX

/* What the builder knows about the schedule it produced (auto_free step
 * indices, i.e. without free steps), for the greedy's analytical estimates.
 * Times are estimates in graph time units without stalls; positions are step
 * indices or MP__RES_NONE. */
typedef struct mp__res_info_s {
  size_t n_steps;          /* steps of the schedule (without frees) */
  size_t n_fwd;            /* steps of the forward part */
  size_t n_ord;            /* backward steps (= activations) */
  double *t_start;         /* per step: estimated start time */
  double t_end;            /* estimated end of the compute queue */
  uint32_t *ord;           /* per step: ordinal of its backward block
                            * (UINT32_MAX in the forward part) */
  size_t *block_start;     /* per ordinal: first step of its block (swap-ins
                            * issued before it included) */
  uint32_t *bord;          /* per node: backward ordinal (UINT32_MAX for
                            * non-activations) */
  uint8_t *eff;            /* per node: the effective decision */
  size_t *pos_compute;     /* per node: its compute step */
  size_t *pos_last_fwd;    /* per node: the compute step of its last forward
                            * reader (its own compute when none) */
  size_t *pos_swap_out;    /* per node */
  size_t *pos_swap_in;     /* per node */
  size_t *pos_first_bwd;   /* per node: first backward-time step reading it */
  size_t *pos_last_bwd;    /* per node: last backward-time step reading it */
  double *d2h_end;         /* per node: estimated end of its swap-out copy */
  double *d2h_free;        /* per node: when the D2H queue is free after the
                            * swap-outs issued right after its compute */
  double *h2d_end;         /* per node: estimated end of its swap-in copy */
  double *h2d_busy;        /* per step: H2D queue busy time before t_start */
  size_t *pos_rec1, *pos_rec2; /* per node: its first and second recompute */
  size_t *rd_off, *rd;     /* per node v: rd[rd_off[v] .. rd_off[v+1]) are the
                            * backward-time steps reading v, ascending */
} mp__res_info_t;

void mp__res_info_free(mp__res_info_t *info);

/* mp_schedule_from_residency that also fills *info (when not NULL). */
int mp__schedule_from_residency(const mp_graph_t *g, const uint8_t *decision,
                                const mp_residency_options_t *o, mp_schedule_t **out,
                                mp__res_info_t *info, mp_error_t *err);

/* Values the backward step of v reads (bwd_reads): calls fn(arg, u) for each
 * activation input (when it reads inputs) and for v (when it reads its
 * output). */
void mp__bwd_reads_each(const mp_graph_t *g, uint32_t v, void (*fn)(void *, uint32_t),
                        void *arg);

/* A migration plan: decisions, the schedule (explicit frees) and its report
 * under the plan's device. */
typedef struct mp__mig_s {
  uint8_t *dec;           /* per node, mp_residency_t */
  uint32_t *after;        /* per node, swap_in_after */
  uint32_t *wait;         /* per node, wait_before */
  uint32_t *remat;        /* per node, remat_from */
  mp_schedule_t *schedule;
  mp_sim_report_t sim;
  int feasible;           /* peak <= budget and host peak <= host budget */
  uint64_t least_peak;    /* the least peak the search reached (any plan
                           * within the host budget) */
  size_t n_decisions;     /* values the plan swaps or recomputes */
} mp__mig_t;

void mp__mig_free(mp__mig_t *m);

/* Fill a plan result from a migration plan (takes its schedule and report). */
int mp__mig_adopt(const mp_graph_t *g, mp__mig_t *m, mp_plan_result_t *r);

/* The swap greedy (swap_greedy.c) from an initial decision vector (NULL: keep everything;
 * copied, not taken), at o->budget under o->device, probed again below its
 * plan's peak for a faster plan (MP__SWAP_PROBES). On success *m holds the
 * final decisions and, when feasible, the schedule and report; when not,
 * m->least_peak is what the search reached. Honours o->should_stop and
 * o->deadline_ms from t0 (MP_ECANCELED, MP_ETIMEDOUT). */
int mp__swap_greedy(const mp_graph_t *g, const mp_plan_options_t *o, const uint8_t *init,
                    double t0, mp__mig_t *m, mp_error_t *err);

/* The swap greedy from keeping everything pushed toward budget 0, answering
 * with the plan of least peak it met (no undo pass): a plan that does not
 * depend on o->budget, judged against it (m->feasible) and within the host
 * budget; m->least_peak is its peak (UINT64_MAX when nothing it met fits
 * the host budget; m->schedule is then NULL). Errors as mp__swap_greedy. */
int mp__swap_least(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__mig_t *m,
                   mp_error_t *err);

/* Layrub's fixed policy (layrub.c) as a migration plan, built and simulated
 * under `dev` (layrub itself forces intra-layer reuse on; hybrid uses the
 * plan's device as it is), judged against o->budget and dev->host_bytes.
 * 0 with *m filled (mp__mig_free), or MP_EINVAL / MP_ENOMEM / MP_ESCHEDULE
 * with *m zeroed. */
int mp__layrub_mig(const mp_graph_t *g, const mp_plan_options_t *o, const mp_device_t *dev,
                   mp__mig_t *m, mp_error_t *err);

#endif
