/* schedule.h - the schedule type (a sequence of compute / recompute / free /
 * backward steps over a finalized graph) and the builders that produce one:
 * the liveness pass that inserts frees, the no-recomputation plan, the plan of
 * a lower-set strategy, and the cheap lower bound on any schedule's peak.
 *
 * The memory model a schedule is judged by is documented at the top of
 * simulator.c and in proto/schedule.md; mp_simulate() (simulator.h) is the
 * only place that validates a schedule and measures it.
 *
 * Ownership: a schedule owns its step array; create with mp_schedule_new()
 * or a builder, free with mp_schedule_free(). Builders borrow the graph and
 * the strategy. Node indices refer to the graph's topological order.
 */
#ifndef MP_SCHEDULE_H
#define MP_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "strategy.h"

typedef enum {
  MP_STEP_COMPUTE = 0,   /* forward computation, exactly once per activation */
  MP_STEP_RECOMPUTE = 1, /* re-run a forward op whose value was dropped */
  MP_STEP_FREE = 2,      /* drop a node's forward value */
  MP_STEP_BACKWARD = 3,  /* backpropagate through a node, exactly once */
  /* Data migration (device.h; timing in simulator.c): */
  MP_STEP_SWAP_OUT = 4,  /* copy a node's value to pinned host memory on a copy
                          * queue; the value is unreadable from this step on
                          * and its device memory is returned when the copy
                          * completes */
  MP_STEP_SWAP_IN = 5,   /* allocate the value on the device again and copy it
                          * back from its host copy; readers wait for the copy */
  MP_STEP_WAIT = 6       /* the compute queue waits until every copy of the
                          * node issued so far has completed (Layrub's sync) */
} mp_step_op_t;

#define MP_STEP_OP_COUNT 7

typedef struct mp_step_s {
  uint8_t op;    /* an mp_step_op_t */
  uint32_t node; /* node index in the graph */
} mp_step_t;

typedef struct mp_schedule_s {
  mp_step_t *steps;
  size_t n_steps;
  size_t cap;
  /* 1: the schedule lists no frees and the simulator inserts them with the
   * liveness pass (mp_schedule_insert_frees); an explicit free is an error. */
  int auto_free;
} mp_schedule_t;

/* Names as used in JSON: "compute", "recompute", "free", "backward",
 * "swap_out", "swap_in", "wait". */
const char *mp_step_op_name(int op); /* "?" when out of range */
int mp_step_op_parse(const char *s, mp_step_op_t *out); /* 0 or MP_EINVAL */

/* An empty schedule (auto_free off), or NULL when out of memory. */
mp_schedule_t *mp_schedule_new(void);
void mp_schedule_free(mp_schedule_t *s);
/* Append a step. 0 or MP_ENOMEM (the schedule is unchanged on failure). */
int mp_schedule_push(mp_schedule_t *s, mp_step_op_t op, uint32_t node);

/* Liveness pass, in place. `s` holds compute / recompute / backward / swap_out
 * / swap_in / wait steps and no frees. A step "reads" the current instance of
 * a value v when it is a compute or recompute of an activation successor of
 * v, a backward of a successor whose bwd_reads includes inputs, or the
 * backward of v itself when its bwd_reads includes output. Every instance of
 * a value (made by a compute, recompute or swap_in) gets one `free v` right
 * after the last step that reads it, or right after the step that made it
 * when nothing reads it; values still live at the end are freed too. An
 * instance ended by a swap_out gets no free (the copy returns its memory);
 * wait steps read nothing. Frees inserted after the same step keep the
 * order in which the pass discovered them. If `s` was valid without frees
 * (in the simulator's model), the result is valid and its peak is no higher.
 * O(steps + edges). Returns 0, MP_EINVAL (s already has a free step, or a
 * node index out of range), or MP_ENOMEM (s is unchanged on failure).
 * Clears s->auto_free: the frees are now explicit. */
int mp_schedule_insert_frees(const mp_graph_t *g, mp_schedule_t *s);

/* The no-recomputation plan: compute every activation in topological order,
 * then backward in reverse topological order, frees by the liveness pass.
 * Its simulated peak is the baseline `peak_no_recompute`.
 * 0 and a new schedule in *out, or MP_EINVAL (graph not finalized) / MP_ENOMEM. */
int mp_schedule_store_all(const mp_graph_t *g, mp_schedule_t **out);

/* The schedule of a lower-set strategy (docs/model.md):
 *  - forward: compute the activations segment by segment, in topological
 *    order within each segment (so segments never interleave);
 *  - for segments i = k-1 down to 0: recompute, in topological order, the
 *    nodes of segment i that are needed and not kept, then backward the
 *    nodes of segment i in reverse topological order;
 *  - frees by the liveness pass.
 * Kept from the forward pass (never recomputed): nodes with an activation
 * successor in a later segment (the W sets), nodes with recompute:false, and
 * every node of the last segment. "Needed": read by a backward of the
 * segment, or an input of a needed recomputation. Because frees come from the
 * liveness pass, a kept value is dropped as soon as nothing later reads it
 * (it is not held for the whole backward pass as the DP's model assumes).
 * The strategy is checked with mp_strategy_check (call it yourself for the
 * message). 0 and a new schedule in *out, MP_EINVAL or MP_ENOMEM. */
int mp_schedule_from_strategy(const mp_graph_t *g, const mp_strategy_t *st, mp_schedule_t **out);

/* A lower bound on the peak (constant memory included) of every valid
 * schedule of g, swap steps included, without intra-layer reuse (with it a
 * gradient may share its input's value buffer, so the backward need below
 * can overstate what a step holds): const_bytes + the largest, over activations v, of
 *   forward need  = bytes of v's distinct activation inputs + bytes(v)
 *                   + workspace(v) + saved(v),
 *   backward need = bytes(v) (its gradient) + bytes of v's distinct
 *                   activation inputs (their gradients) + the values its
 *                   backward reads + workspace(v) + saved(v).
 * A budget below it is infeasible in this model (proof in schedule.c).
 * 0, MP_EINVAL (not finalized) or MP_EOVERFLOW. */
int mp_min_budget(const mp_graph_t *g, uint64_t *out);

/* Internal, shared with simulator.c: the frees the liveness pass would insert,
 * without building the schedule. On success *free_off has s->n_steps + 1
 * entries and free_node[free_off[i] .. free_off[i+1]) are the nodes to free
 * right after step i (both malloc'd, caller frees). Steps with an unknown op
 * or node index are ignored, as are free steps (the caller rejects them).
 * 0 or MP_ENOMEM. */
int mp__schedule_liveness(const mp_graph_t *g, const mp_schedule_t *s, size_t **free_off,
                          uint32_t **free_node);

#endif
