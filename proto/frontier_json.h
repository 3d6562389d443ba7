/* frontier_json.h - a frontier (planner/frontier.h) as JSON:
 *   {"graph_hash", "solver", "solver_used", "exact", "exact_reason"?,
 *    "peak_no_recompute", "points": [{"budget", "recompute", "overhead_pct"}],
 *    "solve_ms"}
 * New reference or NULL when out of memory; arguments are borrowed. */
#ifndef MP_FRONTIER_JSON_H
#define MP_FRONTIER_JSON_H

#include <jansson.h>

#include "frontier.h"

json_t *mp_frontier_to_json(const mp_frontier_t *f, const char *graph_hash);

#endif
