/* frontier_json.h - a frontier (planner/frontier.h) as JSON:
 *   {"graph_hash", "solver", "solver_used", "exact", "exact_reason"?,
 *    "peak_no_recompute", "points": [{"budget", "recompute", "overhead_pct"}],
 *    "solve_ms"}
 * and for a data-migration frontier (swap, hybrid, layrub) also
 *   "device" (as plan_json.h writes it) and, per point, "extra_time"
 *   (recompute + stall, what overhead_pct measures), "stall", "peak_bytes",
 *   "host_peak_bytes", "swapped" and "recomputed" (counts).
 * New reference or NULL when out of memory; arguments are borrowed. */
#ifndef MP_FRONTIER_JSON_H
#define MP_FRONTIER_JSON_H

#include <jansson.h>

#include "frontier.h"

json_t *mp_frontier_to_json(const mp_frontier_t *f, const char *graph_hash);

#endif
