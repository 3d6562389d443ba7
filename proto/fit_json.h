/* fit_json.h - the answer to "does the graph fit these budgets?" (fit.h),
 * the body of POST /v1/fit and the output of `memplan fit`, one code for
 * both so that the daemon and the CLI answer alike; and a frontier read back
 * from its JSON (frontier_json.h's form), for `memplan frontier --server`.
 *
 *   {"graph_hash", "solver", "solver_used" (the first budget's plan's),
 *    "exact" (every budget's plan came from the exact DP),
 *    "peak_no_recompute", "device"? (migration: the plans swap),
 *    "budgets": [{"budget", "fits", "solver_used", "exact",
 *                 when it fits: "overhead_pct", "recompute", "peak_bytes"
 *                   (the plan's simulated peak), and for a migration fit
 *                   "extra_time", "stall", "host_peak_bytes";
 *                 when it does not: "min_feasible_budget" (the plan's,
 *                   when known)}],
 *    "least"?, "min_feasible_budget"? (mp_fit_least_to_json),
 *    "devices"?: [{"name", "total_bytes", "context_bytes", "reserve_bytes",
 *                  "usable_bytes", and the entry of usable_bytes but its
 *                  "budget"}]}
 *
 * Each entry is what mp_plan returns at that budget (mp_fit). "peak" and
 * "min_budget" repeat peak_bytes and min_feasible_budget under their
 * deprecated names, for one version. The daemon adds "cache". Arguments
 * are borrowed; results are new. */
#ifndef MP_FIT_JSON_H
#define MP_FIT_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "fit.h"
#include "frontier.h"
#include "gpus.h"
#include "maximize.h"

/* Fill *f (zeroed first; release with mp_frontier_free) from a frontier's
 * JSON: solver, solver_used, exact, exact_reason, peak_no_recompute,
 * solve_ms, the points and, when "device" is there, migrate (the device
 * itself is not read back). 0, MP_EINVAL (not a frontier: no "points"
 * array) or MP_ENOMEM. */
int mp_frontier_from_json(const json_t *v, mp_frontier_t *f);

/* The fit answer of f for the graph of hash graph_hash. New reference, or
 * NULL when out of memory. */
json_t *mp_fit_result_to_json(const mp_fit_t *f, const char *graph_hash);

/* The entry of answer a of f (the "budgets" items above). New reference
 * or NULL. */
json_t *mp_fit_entry_to_json(const mp_fit_t *f, const mp_fit_answer_t *a);

/* Add the least budget's fit (mp_fit_least's) to a fit's JSON: "least"
 * (its entry) and "min_feasible_budget" (its budget); nothing when it has
 * no answer (least->n == 0). 0, or MP_ENOMEM. */
int mp_fit_least_to_json(json_t *fit, const mp_fit_t *least);

/* The entry of a maximize at `budget` (maximize.h), as a fit's entry for
 * a device with "maximize": {"budget", "fits" (value > 0), "value"
 * (the largest value of m->dim that fits; 0: none), "limit", "next"
 * ({"value", "min_feasible_budget"}, null when value is the limit), and
 * when it fits the plan's at value: "peak_bytes", "overhead_pct",
 * "recompute", "solver_used", "exact"}. New reference or NULL. */
json_t *mp_maximize_entry_to_json(const mp_maximize_t *m, uint64_t budget);

/* Sort b[0..n) ascending and drop repeats: the budgets of a canonical fit,
 * whose answer does not depend on the order they were asked in. Returns
 * how many remain. */
size_t mp_fit_canonical_budgets(uint64_t *b, size_t n);

/* The answer to a fit asked at budgets[0..n), in that order, and on
 * gpus[0..n_gpus), from `canonical`: the fit at the canonical budgets
 * (mp_fit_result_to_json of plans at ascending distinct budgets) that
 * include every asked budget and every GPU's usable bytes. Other top-level
 * fields of canonical are kept; "solver_used" becomes the first answer's,
 * "exact" whether every answer shown came from the exact DP. New reference,
 * or NULL when an entry is missing or out of memory. */
json_t *mp_fit_answer(const json_t *canonical, const uint64_t *budgets, size_t n, const mp_gpu_t *gpus,
                      size_t n_gpus);

#endif
