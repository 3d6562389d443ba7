/* plan_internal.h - pieces of plan.c shared with frontier.c: simulated
 * candidate plans and the memonger / sqrt candidate search. Private to the
 * planner library (mp__ prefix). */
#ifndef MP_PLAN_INTERNAL_H
#define MP_PLAN_INTERNAL_H

#include "plan.h"

/* A strategy with its schedule and the simulator's report of it. */
typedef struct mp__cand_s {
  mp_strategy_t *strategy; /* NULL for store-all */
  mp_schedule_t *schedule;
  mp_sim_report_t sim;
} mp__cand_t;

/* Build and simulate the schedule of `st` (store-all when st is NULL) under
 * o->device; takes ownership of st. A simulation failure is a planner bug:
 * MP_ESCHEDULE. */
int mp__cand_make(const mp_graph_t *g, const mp_plan_options_t *o, mp_strategy_t *st,
                  mp__cand_t *c, mp_error_t *err);
void mp__cand_free(mp__cand_t *c);

/* Simulate a schedule a solver planned, under `dev`. A schedule the
 * simulator rejects is a planner bug: MP_ESCHEDULE with "planner bug: the
 * <what> schedule does not simulate: ..." in *err; other failures keep the
 * simulator's code and message. *out as mp_simulate_ex leaves it. */
int mp__simulate_planned(const mp_graph_t *g, const mp_device_t *dev, const mp_schedule_t *s,
                         const char *what, mp_sim_report_t *out, mp_error_t *err);

/* Called for each simulated candidate; it may take the candidate's contents
 * (leaving *c zeroed), otherwise the caller frees them after the call. */
typedef void (*mp__chen_visit_cb)(void *arg, mp__cand_t *c);

/* Generate Chen-style candidates for o->solver (memonger: the threshold
 * search: eleven proposals, one of them no cut at all; sqrt: one), simulate
 * each, and visit it. Honours
 * o->should_stop and o->deadline_ms measured from t0. */
int mp__chen_search(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                    mp__chen_visit_cb visit, void *arg, mp_error_t *err);

double mp__now_ms(void);

/* MP_ECANCELED when o->should_stop says so, MP_ETIMEDOUT once
 * o->deadline_ms has passed since t0 (mp__now_ms), else 0. */
int mp__plan_stop(const mp_plan_options_t *o, double t0, mp_error_t *err);

#endif
