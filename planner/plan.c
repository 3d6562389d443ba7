/* plan.c - mp_plan(), the planner's single entry point: it checks the
 * request, looks the solver up in the solver table (solver.h; auto with
 * o->swap becomes hybrid there), refuses an accounting the solver does not
 * take, and calls the solver's entry. Whatever the solver, its answer is a
 * schedule the simulator has replayed (cand.c), so a solver's model can never
 * overstate what a plan achieves. Also the options' defaults and the
 * objective's names.
 */
#include "plan.h"

#include <string.h>

#include "plan_internal.h"
#include "progress.h"
#include "solver.h"

const char *mp_objective_name(mp_objective_t o) {
  return o == MP_OBJECTIVE_MEMORY ? "memory" : "time";
}

int mp_objective_parse(const char *s, mp_objective_t *out) {
  if (strcmp(s, "time") == 0) *out = MP_OBJECTIVE_TIME;
  else if (strcmp(s, "memory") == 0) *out = MP_OBJECTIVE_MEMORY;
  else return MP_EINVAL;
  return 0;
}

void mp_plan_options_init(mp_plan_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->solver = MP_SOLVER_AUTO;
  o->objective = MP_OBJECTIVE_TIME;
  o->accounting = MP_ACCOUNTING_DEFAULT;
  o->budget = UINT64_MAX;
  mp_device_init(&o->device);
}

int mp_plan(const mp_graph_t *g, const mp_plan_options_t *asked, mp_plan_result_t *r,
            mp_error_t *err) {
  double t0 = mp__now_ms();
  const mp__solver_t *e;
  mp__progress_t tracker;
  mp_plan_options_t tracked;
  const mp_plan_options_t *o = mp__progress_wrap(asked, &tracker, &tracked);
  int rc;
  memset(r, 0, sizeof(*r));
  if (!g->finalized) return mp_error_set(err, MP_EINVAL, "", "graph is not finalized");
  if ((e = mp__solver_get(o->solver)) == NULL)
    return mp_error_set(err, MP_EINVAL, "$.solver", "unknown solver");
  if ((rc = mp_device_check(&o->device, err)) != 0) return rc;
  r->solver = o->solver;
  r->objective = o->objective;
  r->accounting = o->accounting;
  r->budget = o->budget;

  if (o->swap && e->swap_as >= 0) e = mp__solver_get((mp_solver_t)e->swap_as);
  if (o->accounting != MP_ACCOUNTING_DEFAULT && !(e->caps & MP__CAP_REFERENCE))
    rc = mp_error_set(err, MP_EINVAL, "$.accounting",
                      "the reference accounting applies to the DP solvers only");
  else
    rc = e->plan(e, g, o, t0, r, err);
  if (rc != 0) {
    mp_plan_result_free(r);
    if (rc == MP_ENOMEM && err && err->code == 0) mp_error_set(err, rc, "", "out of memory");
    return rc;
  }
  r->solve_ms = mp__now_ms() - t0;
  return 0;
}
