/* simulator.h - validate a schedule against a graph and measure it: peak
 * memory (with the step where it happens), the live-bytes timeline, the
 * forward / backward / recomputation times and, for schedules that move
 * values to host memory, the copies, the stalls of the compute queue and the
 * pinned host memory (a discrete-event model with one compute queue and one
 * or two copy queues). The one source of truth for every figure memplan
 * reports; the memory and event model is documented at the top of
 * simulator.c and in proto/schedule.md.
 *
 * Ownership: mp_simulate() fills a caller-provided report whose arrays
 * (timeline, recomputed, swapped) it allocates; release them with
 * mp_sim_report_free(), which also accepts a report zeroed by a failed call.
 * The graph and the schedule are borrowed.
 */
#ifndef MP_SIMULATOR_H
#define MP_SIMULATOR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "device.h"
#include "schedule.h"

typedef struct mp_sim_report_s {
  /* Largest live byte count (constant memory included) over every moment
   * of the schedule, including the transient moment inside each step
   * (the op's output or new gradients plus its workspace). */
  uint64_t peak_bytes;
  size_t peak_step;          /* index of the (first) step where the peak occurs */
  uint64_t const_bytes;      /* g->const_bytes (each block rounded under the device's allocator, device.h), live throughout */
  uint64_t reserved_peak_bytes; /* pytorch-cuda allocator: the most the caching
                              * allocator's model (cuda_caching.h) reserved from
                              * the driver, constant memory included; 0 under
                              * the exact allocator */
  double time_forward;       /* sum of time over compute steps */
  double time_backward;      /* sum of bwd_time over backward steps */
  double time_recompute;     /* sum of time over recompute steps */
  double time_total;         /* the makespan: when the compute queue and every
                              * copy queue are done. Without swap or wait
                              * steps, exactly forward + backward + recompute;
                              * otherwise that plus time_stall, or later if a
                              * copy is still running at the end */
  double overhead_pct;       /* (total - forward - backward) / (forward +
                              * backward) * 100, 0 if that is 0; without
                              * swap or wait steps computed as recompute /
                              * (forward + backward) * 100, as it always was */
  size_t n_steps;            /* steps of the schedule as given (== timeline length) */
  /* timeline[i]: live bytes (constant memory included) after step i; with
   * auto_free, after step i and the frees the liveness pass puts after it. */
  uint64_t *timeline;
  size_t n_recompute_steps;  /* recompute steps (a node may count several times) */
  size_t n_recomputed;       /* distinct recomputed nodes */
  uint32_t *recomputed;      /* their indices, ascending (topological) */
  size_t n_frees;            /* free steps, explicit or inserted by auto_free */

  /* Data migration and the event timing (all 0 / equal to the sums above for
   * a schedule without swap or wait steps). Times in the graph's unit. */
  double time_stall;         /* compute queue idle, waiting for a swap-in
                              * to land or for a wait step's copies */
  double time_copy_d2h;      /* busy time of swap-out copies */
  double time_copy_h2d;      /* busy time of swap-in copies */
  size_t n_swap_out;         /* swap_out steps */
  size_t n_swap_in;          /* swap_in steps */
  uint64_t bytes_swapped_out;/* sum of bytes over swap_out steps */
  uint64_t bytes_swapped_in; /* sum of bytes over swap_in steps */
  uint64_t host_peak_bytes;  /* most pinned host memory held at once (not
                              * checked against device->host_bytes here) */
  size_t n_reused;           /* gradients written over their dead value
                              * (intra-layer reuse) */
  size_t n_swapped;          /* distinct nodes swapped out */
  uint32_t *swapped;         /* their indices, ascending */
} mp_sim_report_t;

/* How mp_simulate_ex times and sizes a schedule. */
typedef struct mp_sim_options_s {
  const mp_device_t *device; /* NULL: mp_device_init's defaults */
} mp_sim_options_t;

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

/* mp_simulate under a device model (opt or opt->device NULL: the default
 * device, mp_device_init). Swap and wait steps are timed with the
 * discrete-event model of simulator.c; with device->intra_layer_reuse,
 * gradients of grad_inplace nodes may take their dead value's memory. An
 * invalid device is MP_EINVAL with mp_device_check's path ("$.device.x").
 * Without swap or wait steps and without reuse every figure is bit-identical
 * to mp_simulate's, whatever the device. Swap steps cost O(log copies) more
 * each (pending releases are kept in a heap).
 * mp_simulate(g, s, out, err) is mp_simulate_ex(g, s, NULL, out, err). */
int mp_simulate_ex(const mp_graph_t *g, const mp_schedule_t *s, const mp_sim_options_t *opt,
                   mp_sim_report_t *out, mp_error_t *err);

void mp_sim_report_free(mp_sim_report_t *r);

#endif
