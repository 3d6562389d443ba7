/* plan_json.h - the planner's answer as JSON (the CLI's `plan` output and the
 * daemon's result body), and the device model as JSON.
 *
 *   {"feasible", "solver", "solver_used", "objective", "accounting", "exact",
 *    "exact_reason"?, "source"?, "budget", "peak_bytes", "const_bytes",
 *    "time": {"forward", "backward", "recompute", "stall", "total"},
 *    "overhead_pct", "segments", "checkpoints": [ids], "recomputed": [ids],
 *    "model": {"recompute", "peak"}?, "lower_sets"?,
 *    "min_feasible_budget"? (when infeasible), "schedule"? (steps),
 *    "timeline"?, "graph_hash", "solve_ms",
 *    and with data migration (a swap solver, or any swap in the schedule):
 *    "swapped": [ids], "host_peak_bytes", "reused",
 *    "transfers": {"swap_out", "swap_in", "bytes_out", "bytes_in",
 *                  "d2h_time", "h2d_time"},
 *    "device" (also when intra-layer reuse is on)}
 *
 * time.total is the simulator's makespan: forward + backward + recompute
 * when nothing is migrated, plus the stalls (time.stall) otherwise. Times
 * are in the graph's unit; the device's "time_unit_seconds" says how many
 * seconds one unit lasts. Every figure but "model" is the simulator's.
 * Writers return a new reference or NULL when out of memory; the graph,
 * result and device are borrowed. */
#ifndef MP_PLAN_JSON_H
#define MP_PLAN_JSON_H

#include <jansson.h>

#include "device.h"
#include "plan.h"

/* The answer of a plan made under `device` (NULL: mp_device_init's
 * defaults; pass the options' device so that "device" echoes it). */
json_t *mp_plan_result_to_json_ex(const mp_graph_t *g, const mp_plan_result_t *r,
                                  const char *graph_hash, const mp_device_t *device,
                                  int with_schedule, int with_timeline);

/* mp_plan_result_to_json_ex with the default device. */
json_t *mp_plan_result_to_json(const mp_graph_t *g, const mp_plan_result_t *r,
                               const char *graph_hash, int with_schedule, int with_timeline);

/* The effective device: {"h2d_bandwidth", "d2h_bandwidth" (bytes/s),
 * "latency" (s), "copy_engines", "host_budget" (bytes, null: no limit),
 * "time_unit_seconds" (resolved for g: the device's, else the graph's unit,
 * else MP_DEVICE_DEFAULT_UNIT_S), "intra_layer_reuse", "prefetch" ("jit" or
 * the lookahead in backward steps), "allocator" ("exact" or "pytorch-cuda")}. With g NULL,
 * time_unit_seconds is the device's own value (0: from the graph). */
json_t *mp_device_to_json(const mp_device_t *d, const mp_graph_t *g);

#endif
