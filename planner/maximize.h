/* maximize.h - the largest value of a dimension whose plan fits a budget:
 * `memplan plan --maximize batch` and POST /v1/fit with "maximize".
 *
 * mp_maximize binds a symbolic graph (dims.h) at values of one dimension
 * (the others at a given binding) and plans each with mp_plan at the
 * options' budget. It requires every size law to be non-decreasing in that
 * dimension (mp_graph_dims_monotone): then each schedule's peak only grows
 * with it, and feasibility is monotone. For the DP solvers each probe asks
 * only for the least feasible budget and the search steers by those budgets;
 * the others plan each probe at the budget, doubling then bisecting
 * (maximize.c says how). Its answer is always locally right whatever the
 * solver: the plan at `value` fits, and `value` + 1 does not.
 *
 * Ownership: mp_maximize fills a caller-provided struct; release it with
 * mp_maximize_free (safe on a zeroed struct). g, others, o are borrowed.
 */
#ifndef MP_MAXIMIZE_H
#define MP_MAXIMIZE_H

#include <stddef.h>
#include <stdint.h>

#include "dims.h"
#include "error.h"
#include "graph.h"
#include "plan.h"

typedef struct mp_maximize_s {
  char dim[MP_DIM_NAME_MAX + 1];
  int64_t limit;                /* the largest value tried */
  int64_t value;                /* the largest value that fits; 0: none does */
  mp_graph_t *graph;            /* g bound at value (NULL when none fits) */
  mp_plan_result_t plan;        /* its plan (zeroed when none fits) */
  int64_t next_value;           /* value + 1, or min when none fits; 0 when
                                 * value is the limit (nothing larger tried) */
  int next_overflows;           /* the next value's sizes pass 64 bits */
  uint64_t next_min_feasible_budget; /* least budget the solver meets at
                                      * next_value (0: unknown) */
  size_t n_plans;               /* plans the search made */
  double solve_ms;
} mp_maximize_t;

/* Maximize dimension `dim` of g (other dimensions at `others`, which must
 * not bind `dim`) at o->budget, trying values up to `limit` (<= 0 or above
 * MP_DIM_VALUE_MAX: MP_DIM_VALUE_MAX). 0 with *out filled (value 0 when
 * even the min does not fit), or MP_EINVAL (no such dimension, sizes that
 * shrink as it grows, a bad binding: err names the field, "$.maximize" for
 * the dimension), or mp_plan's errors. */
int mp_maximize(const mp_graph_t *g, const mp_binding_t *others, const char *dim, int64_t limit,
                const mp_plan_options_t *o, const mp_limits_t *lim, mp_maximize_t *out, mp_error_t *err);
void mp_maximize_free(mp_maximize_t *m);

#endif
