/* fit.h - does a graph fit these budgets? mp_fit() answers each budget with
 * exactly what mp_plan() returns there (same options, that budget): whether
 * it fits, the simulated peak, the recomputation and extra time, the
 * solver used. It is the answer of `memplan fit` and POST /v1/fit.
 *
 * It costs one mp_plan per distinct budget (a budget asked twice is planned
 * once); the plans share DP sessions (the lower sets and the reverse pass
 * are done once) and the DP's answers (reuse.c), which changes no answer.
 * A deadline (o->deadline_ms > 0) applies to each plan; an answer it
 * changed (the exact DP fell back when it passed) is not shared. With
 * o->threads > 1 the budgets are planned on up to that many threads
 * (plan_many.c), with the same answers; o->should_stop is then called from
 * those threads, one at a time.
 *
 * Ownership: mp_fit fills a caller-provided struct; release it with
 * mp_fit_free (safe on a zeroed struct). The graph, options and budgets are
 * borrowed.
 */
#ifndef MP_FIT_H
#define MP_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"
#include "plan.h"

typedef struct mp_fit_answer_s {
  uint64_t budget;
  int feasible;                 /* mp_plan's verdict at this budget */
  mp_solver_t solver_used;      /* the plan's */
  int exact;                    /* the plan's: the exact DP answered */
  /* When feasible, the plan's simulated figures (mp_sim_report_t): */
  uint64_t peak_bytes;          /* device peak (<= budget) */
  uint64_t host_peak_bytes;     /* pinned host peak (data migration) */
  double recompute;             /* time_recompute */
  double extra_time;            /* time_total - time_forward - time_backward, >= 0 */
  double stall;                 /* time_stall */
  double overhead_pct;          /* the report's overhead_pct */
  /* When not: the plan's min_feasible_budget (0: unknown). */
  uint64_t min_feasible_budget;
} mp_fit_answer_t;

typedef struct mp_fit_s {
  mp_solver_t solver;           /* the solver asked for */
  int migrate;                  /* the plans migrate data (a swap solver, or
                                 * auto with o->swap: hybrid) */
  uint64_t peak_no_recompute;   /* simulated peak of plain backpropagation
                                 * under o->device */
  mp_device_t device;           /* o->device */
  double time_unit_s;           /* its seconds per graph time unit for this graph */
  size_t n;
  mp_fit_answer_t *answers;     /* one per asked budget, in the asked order */
  double solve_ms;
} mp_fit_t;

/* Plan g at budgets[0..n) with o (o->budget is ignored) and record each
 * answer. 0, or the first mp_plan error (MP_ECANCELED, MP_ENOMEM, ...). */
int mp_fit(const mp_graph_t *g, const mp_plan_options_t *o, const uint64_t *budgets, size_t n,
           mp_fit_t *out, mp_error_t *err);
void mp_fit_free(mp_fit_t *f);

/* The least budget that fits: a plan at one byte (which no graph with an
 * activation fits) says the least budget its solver meets
 * (min_feasible_budget), and *out is then the fit at exactly that budget
 * (n = 1: what mp_plan returns there). n = 0 when the planner knows no
 * such budget. 0, or mp_fit's error. */
int mp_fit_least(const mp_graph_t *g, const mp_plan_options_t *o, mp_fit_t *out, mp_error_t *err);

#endif
