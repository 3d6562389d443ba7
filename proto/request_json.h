/* request_json.h - the daemon's API requests as plain data: the body of
 * POST /v1/plans and POST /v1/fit, validated field by field.
 *
 *   plan: {"graph" | "graph_hash", "budget", "solver"?, "objective"?,
 *          "accounting"?, "wait"?, "timeline"?}
 *   fit:  {"graph" | "graph_hash", "budgets": [...], "solver"?}
 *
 * A budget is a non-negative integer of bytes or a string with a unit
 * ("12GiB", see planner/units.h). Unknown keys are refused so that a typo
 * ("budjet") is an error naming the field rather than a silent default.
 *
 * Pure jansson: no HTTP here. Errors fill `err` with the JSON path of the
 * field at fault ("$.budgets[2]") and return MP_EINVAL.
 *
 * Ownership: `graph` points into the parsed document (borrowed; valid while
 * the caller holds the document). The fit request owns its `budgets` array;
 * release it with mp_fit_request_free() (safe on a zeroed or failed request).
 */
#ifndef MP_REQUEST_JSON_H
#define MP_REQUEST_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "plan.h"

typedef struct mp_plan_request_s {
  json_t *graph;              /* borrowed; NULL when graph_hash was given */
  char graph_hash[65];        /* 64 lowercase hex digits, or "" */
  uint64_t budget;
  mp_solver_t solver;         /* default auto */
  mp_objective_t objective;   /* default time */
  mp_accounting_t accounting; /* default default */
  double wait_s;              /* 0 when absent; at most max_wait_s */
  int timeline;               /* default 0 */
} mp_plan_request_t;

/* Parse a plan request. `max_wait_s` bounds "wait" (larger is an error). */
int mp_plan_request_parse(json_t *root, double max_wait_s, mp_plan_request_t *out,
                          mp_error_t *err);

typedef struct mp_fit_request_s {
  json_t *graph;
  char graph_hash[65];
  mp_solver_t solver;         /* default auto */
  uint64_t *budgets;          /* owned */
  size_t n_budgets;           /* 1 .. max_budgets */
} mp_fit_request_t;

int mp_fit_request_parse(json_t *root, size_t max_budgets, mp_fit_request_t *out,
                         mp_error_t *err);
void mp_fit_request_free(mp_fit_request_t *r);

/* One budget value (integer bytes or a unit string) at `path`. */
int mp_json_budget(const json_t *v, const char *path, uint64_t *out, mp_error_t *err);

/* Is `s` a graph hash as the planner prints it (64 lowercase hex digits)? */
int mp_is_graph_hash(const char *s);

#endif
