/* fit_json.h - the answer to "does the graph fit these budgets?" (fit.h),
 * the body of POST /v1/fit and the output of `memplan fit`, one code for
 * both so that the daemon and the CLI answer alike; and a frontier read back
 * from its JSON (frontier_json.h's form), for `memplan frontier --server`.
 *
 *   {"graph_hash", "solver", "solver_used" (the first budget's plan's),
 *    "exact" (every budget's plan came from the exact DP),
 *    "peak_no_recompute", "device"? (migration: the plans swap),
 *    "budgets": [{"budget", "fits", "solver_used", "exact",
 *                 when it fits: "overhead_pct", "recompute", "peak" (the
 *                   plan's simulated peak), and for a migration fit
 *                   "extra_time", "stall", "host_peak_bytes";
 *                 when it does not: "min_budget" (the plan's
 *                   min_feasible_budget, when known)}]}
 *
 * Each entry is what mp_plan returns at that budget (mp_fit). The daemon
 * adds "cache". Arguments are borrowed; results are new. */
#ifndef MP_FIT_JSON_H
#define MP_FIT_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "fit.h"
#include "frontier.h"

/* Fill *f (zeroed first; release with mp_frontier_free) from a frontier's
 * JSON: solver, solver_used, exact, exact_reason, peak_no_recompute,
 * solve_ms, the points and, when "device" is there, migrate (the device
 * itself is not read back). 0, MP_EINVAL (not a frontier: no "points"
 * array) or MP_ENOMEM. */
int mp_frontier_from_json(const json_t *v, mp_frontier_t *f);

/* The fit answer of f for the graph of hash graph_hash. New reference, or
 * NULL when out of memory. */
json_t *mp_fit_result_to_json(const mp_fit_t *f, const char *graph_hash);

#endif
