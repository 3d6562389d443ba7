/* maximize_json.h - the answer of a maximize (planner/maximize.h), the
 * output of `memplan plan --maximize DIM` and of POST /v1/fit with
 * "maximize", one code for both:
 *
 *   {"maximize": "batch", "budget", "value" (0: none fits), "limit",
 *    "plan": {the plan at value, as POST /v1/plans answers} | null,
 *    "next": {"value", "min_feasible_budget" (null: unknown or past 64
 *             bits)} | null (value is the limit: nothing larger tried),
 *    "reason"? (when value is 0 or the limit), "plans", "solve_ms",
 *    and at value: "dims", "forecast", "warnings"? (dims_json.h)}
 *
 * Arguments are borrowed; the result is new (NULL when out of memory). */
#ifndef MP_MAXIMIZE_JSON_H
#define MP_MAXIMIZE_JSON_H

#include <jansson.h>

#include "device.h"
#include "maximize.h"

json_t *mp_maximize_to_json(const mp_maximize_t *m, uint64_t budget, const mp_device_t *device, int with_schedule,
                            int with_timeline);

#endif
