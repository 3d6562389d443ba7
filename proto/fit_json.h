/* fit_json.h - a frontier read back from its JSON (frontier_json.h's
 * form), and the answer to "does the graph fit these budgets?" computed
 * from it: the body of POST /v1/fit and the output of `memplan fit`, one
 * code for both so that the daemon and the CLI answer alike.
 *
 *   {"graph_hash", "solver", "solver_used", "exact", "peak_no_recompute",
 *    "device"? (migration frontiers),
 *    "budgets": [{"budget", "fits",
 *                 when it fits: "overhead_pct", "recompute", "peak" (the
 *                   point's budget: the most memory its plan needs), and for
 *                   a migration frontier "extra_time", "stall",
 *                   "host_peak_bytes";
 *                 when it does not: "min_budget" (the first point's)}]}
 *
 * Each budget takes the point that applies to it (mp_frontier_lookup). The
 * daemon adds "cache". Arguments are borrowed; results are new. */
#ifndef MP_FIT_JSON_H
#define MP_FIT_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier.h"

/* Fill *f (zeroed first; release with mp_frontier_free) from a frontier's
 * JSON: solver, solver_used, exact, exact_reason, peak_no_recompute,
 * solve_ms, the points and, when "device" is there, migrate (the device
 * itself is not read back). 0, MP_EINVAL (not a frontier: no "points"
 * array) or MP_ENOMEM. */
int mp_frontier_from_json(const json_t *v, mp_frontier_t *f);

/* The fit answer for `budgets` from a frontier's JSON. 0 with *out, or
 * MP_EINVAL / MP_ENOMEM. */
int mp_fit_to_json(const json_t *frontier, const uint64_t *budgets, size_t n_budgets, json_t **out);

#endif
