/* request_json.h - the daemon's API requests as plain data: the body of
 * POST /v1/plans and POST /v1/fit, validated field by field, and the
 * parsers of the device model's values shared with the CLI.
 *
 *   plan: {"graph" | "graph_hash", "budget", "solver"?, "objective"?,
 *          "accounting"?, "wait"?, "timeline"?, "swap"?, "device"?, "dims"?}
 *   fit:  {"graph" | "graph_hash", "budgets"?: [...], "devices"?: [...],
 *          "least"?, "wait"?, "solver"?, "swap"?, "device"?, "dims"?,
 *          "maximize"?, "max_value"?}
 *          (budgets, devices or least: at least one of them; "devices"
 *          names GPUs of the device catalogue, gpus.h, checked by the
 *          caller; "wait" is a number of seconds, range checked by the
 *          caller)
 *   dims: {"batch": 64, ...}: values for a symbolic graph's dimensions
 *         (planner/dims.h; checked against the graph by mp_graph_bind).
 *   maximize: a dimension's name: the largest value whose plan fits the
 *         one budget given (planner/maximize.h), tried up to max_value;
 *         with exactly one budget, or with "devices" and no budget (each
 *         device maximized at its usable bytes); never with "least".
 *   device: {"h2d_bandwidth"?, "d2h_bandwidth"?, "latency"?,
 *            "copy_engines"?, "host_budget"?, "time_unit_seconds"?,
 *            "intra_layer_reuse"?, "prefetch"?, "allocator"?}   (defaults: planner/device.h)
 *
 * A budget is a non-negative integer of bytes or a string with a unit
 * ("12GiB", see planner/units.h). A bandwidth is a positive number of bytes
 * per second or a string such as "12GB" or "12GB/s". The latency and the
 * time unit are numbers of seconds. host_budget is a budget, or null for no
 * limit. "prefetch" is "jit" (just in time, the default) or a whole number
 * of backward steps from 1 to MP_DEVICE_MAX_PREFETCH (0 means jit too): where
 * the swap and hybrid solvers issue swap-ins (device.h). Unknown keys are
 * refused, at the top level and inside "device", so that a typo ("budjet")
 * is an error naming the field rather than a silent default.
 *
 * Solvers and migration: the swap solvers (swap, hybrid, layrub) always
 * migrate, so the parsed `swap` is 1 for them ("swap": false with one of them
 * is an error); "swap": true needs solver auto (which then plans as hybrid)
 * or a swap solver. A fit (a frontier) with auto and swap uses hybrid.
 *
 * Pure jansson: no HTTP here. Errors fill `err` with the JSON path of the
 * field at fault ("$.budgets[2]", "$.device.copy_engines") and return
 * MP_EINVAL (MP_ELIMIT for too many budgets).
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

#include "device.h"
#include "dims.h"
#include "error.h"
#include "plan.h"

typedef struct mp_plan_request_s {
  json_t *graph;              /* borrowed; NULL when graph_hash was given */
  char graph_hash[65];        /* 64 lowercase hex digits, or "" */
  const char *graph_name;     /* borrowed from root; NULL when absent */
  uint64_t budget;
  mp_solver_t solver;         /* default auto */
  mp_objective_t objective;   /* default time */
  mp_accounting_t accounting; /* default default */
  double wait_s;              /* 0 when absent; at most max_wait_s */
  int timeline;               /* default 0 */
  int swap;                   /* migration on; 1 for the swap solvers */
  mp_device_t device;         /* mp_device_init's defaults, then "device" */
  mp_binding_t dims;          /* "dims" (base "$.dims"); n == 0 when absent */
} mp_plan_request_t;

/* Parse a plan request. `max_wait_s` bounds "wait" (larger is an error). */
int mp_plan_request_parse(json_t *root, double max_wait_s, mp_plan_request_t *out,
                          mp_error_t *err);

typedef struct mp_fit_request_s {
  json_t *graph;
  char graph_hash[65];
  const char *graph_name;     /* as in mp_plan_request_t */
  mp_solver_t solver;         /* default auto; hybrid for auto with swap */
  uint64_t *budgets;          /* owned */
  size_t n_budgets;           /* 1 .. max_budgets */
  int swap;                   /* as in mp_plan_request_t */
  mp_device_t device;
  const char **devices;       /* owned array of names borrowed from root */
  size_t n_devices;
  int least;                  /* also answer the least budget that fits */
  double wait_s;              /* "wait", when wait_given */
  int wait_given;
  mp_binding_t dims;          /* as in mp_plan_request_t */
  char maximize[MP_DIM_NAME_MAX + 1]; /* "" unless maximizing (then one budget, or devices) */
  int64_t max_value;          /* 0: MP_DIM_VALUE_MAX */
} mp_fit_request_t;

int mp_fit_request_parse(json_t *root, size_t max_budgets, mp_fit_request_t *out,
                         mp_error_t *err);
void mp_fit_request_free(mp_fit_request_t *r);

/* One budget value (integer bytes or a unit string) at `path`. */
int mp_json_budget(const json_t *v, const char *path, uint64_t *out, mp_error_t *err);

/* The "device" object `v` at `path` ("$.device"): each field present
 * overrides *d (initialise it with mp_device_init), then mp_device_check
 * judges the ranges. 0 or MP_EINVAL naming "<path>.<field>". */
int mp_json_device(const json_t *v, const char *path, mp_device_t *d, mp_error_t *err);

/* The migration switch against the solver (see the top of this file):
 * `swap_given` says whether the user set it. Sets *swap to 1 for the swap
 * solvers. 0 or MP_EINVAL at "$.swap". */
int mp_swap_check(mp_solver_t solver, int swap_given, int *swap, mp_error_t *err);

/* A bandwidth as text: a number of bytes per second ("12e9") or a byte
 * quantity with an optional "/s" ("12GB", "12GB/s", "11GiB/s"). Must be
 * positive and finite. 0 or MP_EINVAL with a message (path left empty). */
int mp_parse_rate(const char *s, double *out, mp_error_t *err);

/* A duration as text: a number of seconds ("1e-5") or a number with a unit
 * s, ms, us or ns ("10us"). Must be finite and non-negative. 0 or MP_EINVAL
 * with a message (path left empty). */
int mp_parse_seconds(const char *s, double *out, mp_error_t *err);

/* A prefetch as text (the CLI's --prefetch): "jit" or a whole number from 0
 * (jit) to MP_DEVICE_MAX_PREFETCH, digits only. 0 or MP_EINVAL with a
 * message (path left empty). */
int mp_parse_prefetch(const char *s, uint32_t *out, mp_error_t *err);

/* Is `s` a graph hash as the planner prints it (64 lowercase hex digits)? */
int mp_is_graph_hash(const char *s);

/* The longest "graph_name" a request may give, in bytes. */
#define MP_GRAPH_NAME_MAX 256

#endif
