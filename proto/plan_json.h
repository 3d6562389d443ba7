/* plan_json.h - the planner's answer as JSON (the CLI's `plan` output and the
 * daemon's result body).
 *
 *   {"feasible", "solver", "solver_used", "objective", "accounting", "exact",
 *    "exact_reason"?, "source"?, "budget", "peak_bytes", "const_bytes",
 *    "time": {"forward", "backward", "recompute", "total"}, "overhead_pct",
 *    "segments", "checkpoints": [ids], "recomputed": [ids],
 *    "model": {"recompute", "peak"}?, "lower_sets"?,
 *    "min_feasible_budget"? (when infeasible), "schedule"? (steps),
 *    "timeline"?, "graph_hash", "solve_ms"}
 *
 * Every figure but "model" is the simulator's. Returns a new reference or
 * NULL when out of memory; the graph and result are borrowed. */
#ifndef MP_PLAN_JSON_H
#define MP_PLAN_JSON_H

#include <jansson.h>

#include "plan.h"

json_t *mp_plan_result_to_json(const mp_graph_t *g, const mp_plan_result_t *r,
                               const char *graph_hash, int with_schedule, int with_timeline);

#endif
