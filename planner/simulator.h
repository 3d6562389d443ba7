/* simulator.h - validate a schedule against a graph and measure it: peak
 * memory (with the step where it happens), the live-bytes timeline, and the
 * forward / backward / recomputation times. The one source of truth for every
 * figure memplan reports; the memory model is documented at the top of
 * simulator.c and in proto/schedule.md.
 *
 * Ownership: mp_simulate() fills a caller-provided report whose arrays
 * (timeline, recomputed) it allocates; release them with
 * mp_sim_report_free(), which also accepts a report zeroed by a failed call.
 * The graph and the schedule are borrowed.
 */
#ifndef MP_SIMULATOR_H
#define MP_SIMULATOR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "schedule.h"

typedef struct mp_sim_report_s {
  /* Largest live byte count (constant memory included) over every moment
   * of the schedule, including the transient moment inside each step
   * (the op's output or new gradients plus its workspace). */
  uint64_t peak_bytes;
  size_t peak_step;          /* index of the (first) step where the peak occurs */
  uint64_t const_bytes;      /* g->const_bytes, live throughout */
  double time_forward;       /* sum of time over compute steps */
  double time_backward;      /* sum of bwd_time over backward steps */
  double time_recompute;     /* sum of time over recompute steps */
  double time_total;         /* the three above */
  double overhead_pct;       /* recompute / (forward + backward) * 100, 0 if that is 0 */
  size_t n_steps;            /* steps of the schedule as given (== timeline length) */
  /* timeline[i]: live bytes (constant memory included) after step i; with
   * auto_free, after step i and the frees the liveness pass puts after it. */
  uint64_t *timeline;
  size_t n_recompute_steps;  /* recompute steps (a node may count several times) */
  size_t n_recomputed;       /* distinct recomputed nodes */
  uint32_t *recomputed;      /* their indices, ascending (topological) */
  size_t n_frees;            /* free steps, explicit or inserted by auto_free */
} mp_sim_report_t;

/* Run the schedule. Returns 0 and fills *out, or a negative code with *out
 * zeroed: MP_ESCHEDULE for an invalid step (err->path "$.steps[i]", message
 * "step i (op 'node'): reason"; "$.steps" for a rule checked at the end, such
 * as "node 'x' never backpropagated"), MP_EOVERFLOW when a byte count would
 * overflow 64 bits or a time sum is not finite, MP_EINVAL for a graph that is
 * not finalized, MP_ENOMEM. With s->auto_free, step indices (errors, peak_step,
 * timeline) refer to the schedule as given, without the inserted frees.
 * Runs in O(steps + edges touched by the steps) time and O(nodes + steps)
 * memory. */
int mp_simulate(const mp_graph_t *g, const mp_schedule_t *s, mp_sim_report_t *out,
                mp_error_t *err);

void mp_sim_report_free(mp_sim_report_t *r);

#endif
