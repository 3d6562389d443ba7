/* dp_chain_many.c - the prefix DP (dp_chain.c) at several budgets at once,
 * one solve per thread (mp__chain_solve_many, dp_chain.h).
 *
 * Why: a plan of a large chain or near-chain asks the prefix DP at its
 * budget and then at the rungs of the slack walk (cand_recompute.c), one
 * after the other, each a whole solve (no session: the prefix DP keeps
 * nothing between budgets). On a 10,000-node transformer-shaped graph that
 * is six solves of about a second. The walk's rungs are known before their
 * answers are, so the walk asks several at once and reads the answers in
 * order, dropping those past the rung where it stops. Every solve is pure
 * (its answer depends on its budget alone), so the answers, and which
 * rungs the walk reads, are the same on any number of threads; only the
 * work thrown away differs.
 *
 * Polls: the solves poll should_stop from their threads, so it is wrapped
 * in mp__serial_poll (progress.h), which lets one thread at a time in,
 * unless it already is one.
 */
#include "dp_chain.h"

#include <string.h>

#include "plan_internal.h"
#include "progress.h"
#include "threadpool.h"

typedef struct {
  const mp_graph_t *g;
  const mp_plan_options_t *o;
  double t0;
  const uint64_t *budgets;
  mp_dp_result_t *res;
  int *rcs;
  mp_error_t *errs;
} mp__chain_many_t;

static int mp__chain_many_item(void *arg, size_t t, size_t nthreads, size_t i) {
  mp__chain_many_t *m = arg;
  mp_plan_options_t oi = *m->o;
  (void)t;
  (void)nthreads;
  oi.budget = m->budgets[i];
  m->rcs[i] = mp__chain_solve(m->g, &oi, m->t0, &m->res[i], &m->errs[i]);
  return 0; /* each solve's outcome is its own: the caller reads them in order */
}

int mp__chain_solve_many(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                         const uint64_t *budgets, size_t n, mp_dp_result_t *res, int *rcs,
                         mp_error_t *errs) {
  mp__chain_many_t m;
  mp__serial_t serial;
  mp_plan_options_t so;
  const mp_plan_options_t *use = o;
  void *args[MP__CHAIN_MANY_MAX];
  size_t bound[2], i, used, threads = o->threads > 1 ? o->threads : 1;
  mp__par_job_t job;
  int rc, wrapped = 0;

  if (n > MP__CHAIN_MANY_MAX) n = MP__CHAIN_MANY_MAX;
  memset(res, 0, n * sizeof(*res));
  if (threads > n) threads = n;
  if (threads > 1 && o->should_stop != NULL && o->should_stop != mp__serial_poll) {
    if ((rc = mp__serial_wrap(o, &serial, &so)) != 0)
      return mp_error_set(&errs[0], rc, "", "out of memory");
    use = &so;
    wrapped = 1;
  }
  m.g = g;
  m.o = use;
  m.t0 = t0;
  m.budgets = budgets;
  m.res = res;
  m.rcs = rcs;
  m.errs = errs;
  for (i = 0; i < n; i++) {
    rcs[i] = MP_ECANCELED; /* overwritten by the item; a run that starts none leaves this */
    args[i] = &m;
  }
  memset(&job, 0, sizeof(job));
  bound[0] = 0;
  bound[1] = n;
  job.n_levels = 1;
  job.bound = bound;
  job.item = mp__chain_many_item;
  rc = mp__par_run(&job, args, threads, &used);
  if (wrapped) mp__serial_done(&serial);
  if (rc != 0) {
    for (i = 0; i < n; i++) mp_dp_result_free(&res[i]);
    return mp_error_set(&errs[0], rc, "", "out of memory");
  }
  return 0;
}
