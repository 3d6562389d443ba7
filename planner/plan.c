/* plan.c - mp_plan(): it looks the solver up in the solver table
 * (solver.h) and calls its entry; the recompute-only solvers' entries
 * (none, memonger, sqrt and the DP solvers), schedule construction and the
 * simulator check that every answer goes through.
 *
 * Each solver yields a strategy (or, for `none`, the store-everything
 * schedule); the strategy becomes a schedule (schedule.c) and the schedule is
 * replayed by the simulator. The result carries the simulator's figures, so
 * a solver's model can never overstate what a plan achieves.
 *
 * memonger knows no budget: it proposes plans over a series of thresholds
 * (mxnet-memonger's search: B = 0, then three refinements B = sqrt(x*y/2),
 * then a grid of six between the smallest segment seen and sqrt(2) times the
 * last guess; we add B = infinity, no cut at all). Every proposal is simulated; with a budget, the answer is the
 * proposal of least recomputation among those that fit (least peak with the
 * memory objective), and when none fits, the least peak seen is the
 * `min_feasible_budget`.
 */
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memonger.h"
#include "plan_internal.h"
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

void mp_plan_result_free(mp_plan_result_t *r) {
  if (r == NULL) return;
  free(r->checkpoints);
  free(r->swapped);
  mp_schedule_free(r->schedule);
  mp_sim_report_free(&r->sim);
  memset(r, 0, sizeof(*r));
}

double mp__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void mp__cand_free(mp__cand_t *c) {
  mp_strategy_free(c->strategy);
  mp_schedule_free(c->schedule);
  mp_sim_report_free(&c->sim);
  memset(c, 0, sizeof(*c));
}

int mp__simulate_planned(const mp_graph_t *g, const mp_device_t *dev, const mp_schedule_t *s,
                         const char *what, mp_sim_report_t *out, mp_error_t *err) {
  mp_sim_options_t so;
  mp_error_t serr;
  int rc;
  so.device = dev;
  rc = mp_simulate_ex(g, s, &so, out, &serr);
  if (rc == MP_ESCHEDULE)
    return mp_error_set(err, MP_ESCHEDULE, "", "planner bug: the %s schedule does not simulate: %s",
                        what, serr.message);
  if (rc != 0) return mp_error_set(err, rc, "", "%s", serr.message);
  return 0;
}

/* Build and simulate the schedule of `st` (store-all when st is NULL) under
 * the plan's device. Takes ownership of st. A simulation failure is a
 * planner bug: MP_ESCHEDULE. */
int mp__cand_make(const mp_graph_t *g, const mp_plan_options_t *o, mp_strategy_t *st,
                  mp__cand_t *c, mp_error_t *err) {
  int rc;
  memset(c, 0, sizeof(*c));
  c->strategy = st;
  rc = st ? mp_schedule_from_strategy(g, st, &c->schedule) : mp_schedule_store_all(g, &c->schedule);
  if (rc != 0) {
    mp__cand_free(c);
    return mp_error_set(err, rc, "", "cannot build the schedule (%s)", mp_err_name(rc));
  }
  if ((rc = mp__simulate_planned(g, &o->device, c->schedule, "planned", &c->sim, err)) != 0)
    mp__cand_free(c);
  return rc;
}

/* Checkpoints of a strategy: activations with an activation successor in a
 * later segment, and recompute:false nodes outside the last segment. */
static int mp__checkpoints(const mp_graph_t *g, const mp_strategy_t *st, mp_plan_result_t *r) {
  size_t v, k, n = 0;
  r->n_segments = st ? st->n_segments : 1;
  if (st == NULL) return 0;
  r->checkpoints = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  if (r->checkpoints == NULL) return MP_ENOMEM;
  for (v = 0; v < g->n_nodes; v++) {
    int keep = 0;
    if (st->seg[v] == MP_SEG_NONE || st->seg[v] + 1 == st->n_segments) continue;
    if (!g->nodes[v].recompute) keep = 1;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1] && !keep; k++)
      if (st->seg[g->succ[k]] != MP_SEG_NONE && st->seg[g->succ[k]] > st->seg[v]) keep = 1;
    if (keep) r->checkpoints[n++] = (uint32_t)v;
  }
  r->n_checkpoints = n;
  return 0;
}

/* Move a candidate into the result. */
static int mp__adopt(const mp_graph_t *g, mp__cand_t *c, mp_plan_result_t *r) {
  int rc = mp__checkpoints(g, c->strategy, r);
  if (rc != 0) return rc;
  r->schedule = c->schedule;
  r->sim = c->sim;
  c->schedule = NULL;
  memset(&c->sim, 0, sizeof(c->sim));
  mp__cand_free(c);
  return 0;
}

static int mp__fits(const mp_plan_options_t *o, const mp_sim_report_t *s) {
  return s->peak_bytes <= o->budget;
}

/* Is candidate a better answer than the current best? Among fitting plans:
 * least recompute (time objective) or least peak (memory objective); a
 * fitting plan beats any that does not fit; among non-fitting, least peak. */
static int mp__better(const mp_plan_options_t *o, const mp__cand_t *a, const mp__cand_t *best) {
  int fa = mp__fits(o, &a->sim), fb;
  if (best->schedule == NULL) return 1;
  fb = mp__fits(o, &best->sim);
  if (fa != fb) return fa;
  if (!fa || o->objective == MP_OBJECTIVE_MEMORY) {
    if (a->sim.peak_bytes != best->sim.peak_bytes) return a->sim.peak_bytes < best->sim.peak_bytes;
    return a->sim.time_recompute < best->sim.time_recompute;
  }
  if (a->sim.time_recompute != best->sim.time_recompute)
    return a->sim.time_recompute < best->sim.time_recompute;
  return a->sim.peak_bytes < best->sim.peak_bytes;
}

int mp__plan_stop(const mp_plan_options_t *o, double t0, mp_error_t *err) {
  if (o->should_stop && o->should_stop(o->stop_arg))
    return mp_error_set(err, MP_ECANCELED, "", "planning was cancelled");
  if (o->deadline_ms > 0 && mp__now_ms() - t0 > o->deadline_ms)
    return mp_error_set(err, MP_ETIMEDOUT, "", "planning passed its deadline of %.0f ms",
                        o->deadline_ms);
  return 0;
}

int mp__chen_search(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                    mp__chen_visit_cb visit, void *arg, mp_error_t *err) {
  uint32_t *cand = NULL;
  size_t ncand = 0;
  mp__cand_t c;
  int rc, i;

  if ((rc = mp_cut_candidates(g, &cand, &ncand)) != 0)
    return mp_error_set(err, rc, "", "out of memory");
  if (o->solver == MP_SOLVER_SQRT) {
    mp_strategy_t *st;
    if ((rc = mp_sqrt_strategy(g, cand, ncand, &st)) != 0) goto fail_nomem;
    if ((rc = mp__cand_make(g, o, st, &c, err)) != 0) goto fail;
    visit(arg, &c);
    mp__cand_free(&c);
  } else {
    /* memonger's threshold search, plus the threshold "infinity" (never
     * cut: keep everything), so that a budget that needs no recomputation
     * gets none. */
    double thr = 0, last_guess = 0;
    if ((rc = mp__cand_make(g, o, NULL, &c, err)) != 0) goto fail;
    visit(arg, &c);
    mp__cand_free(&c);
    uint64_t smallest_seen = UINT64_MAX;
    for (i = 0; i < 4 + 6; i++) {
      mp_strategy_t *st;
      uint64_t x, y, smallest;
      if ((rc = mp__plan_stop(o, t0, err)) != 0) goto fail;
      if (i >= 4) {
        /* the grid: six thresholds from the smallest segment seen up to
         * sqrt(2) times the last refined guess */
        double lo = smallest_seen == UINT64_MAX ? 0 : (double)smallest_seen;
        double hi = sqrt(2.0) * last_guess;
        if (hi < lo) hi = lo;
        thr = lo + (hi - lo) * (double)(i - 4) / 5.0;
      }
      if ((rc = mp_memonger_greedy(g, cand, ncand, thr, &st, &x, &y, &smallest)) != 0)
        goto fail_nomem;
      if (smallest > 0 && smallest < smallest_seen) smallest_seen = smallest;
      if ((rc = mp__cand_make(g, o, st, &c, err)) != 0) goto fail;
      visit(arg, &c);
      mp__cand_free(&c);
      if (i < 3) {
        thr = sqrt((double)x * (double)y / 2.0);
        last_guess = thr;
      }
    }
  }
  free(cand);
  return 0;

fail_nomem:
  mp_error_set(err, rc, "", "out of memory");
fail:
  free(cand);
  return rc;
}

typedef struct {
  const mp_plan_options_t *o;
  mp__cand_t best;
  uint64_t least_peak;
} mp__chen_pick_t;

/* Keep the better of the visited candidate and the best so far. */
static void mp__chen_pick(void *arg, mp__cand_t *c) {
  mp__chen_pick_t *p = arg;
  if (c->sim.peak_bytes < p->least_peak) p->least_peak = c->sim.peak_bytes;
  if (mp__better(p->o, c, &p->best)) {
    mp__cand_free(&p->best);
    p->best = *c;
    memset(c, 0, sizeof(*c));
  }
}

/* memonger and sqrt: Chen's candidates, the best that fits. */
int mp__plan_chen(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__chen_pick_t p;
  int rc;
  memset(&p, 0, sizeof(p));
  p.o = o;
  p.least_peak = UINT64_MAX;
  r->solver_used = self->id;
  if ((rc = mp__chen_search(g, o, t0, mp__chen_pick, &p, err)) != 0) {
    mp__cand_free(&p.best);
    return rc;
  }
  r->feasible = p.best.schedule != NULL && mp__fits(o, &p.best.sim);
  if (!r->feasible) {
    r->min_feasible_budget = p.least_peak;
    mp__cand_free(&p.best);
    return 0;
  }
  r->source = p.best.strategy ? self->name : "keep-all";
  return mp__adopt(g, &p.best, r);
}

/* Run the DP of the asked family (exact, or approx) at the budget. */
static int mp__dp_at(const mp_graph_t *g, const mp_plan_options_t *o, int exact,
                     mp_dp_result_t *dr, mp_error_t *err) {
  mp_dp_options_t d;
  mp_dp_options_init(&d);
  d.exact = exact;
  d.objective = o->objective;
  d.accounting = o->accounting;
  d.budget = o->budget;
  d.max_lower_sets = o->max_lower_sets;
  d.deadline_ms = o->deadline_ms;
  d.should_stop = o->should_stop;
  d.stop_arg = o->stop_arg;
  d.threads = o->threads;
  return mp_dp_solve(g, &d, dr, err);
}

/* Offer a DP result's plan as a candidate (takes its strategy). */
static int mp__offer_dp(const mp_graph_t *g, mp_dp_result_t *dr, const char *source,
                        mp__chen_pick_t *p, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_t c;
  int rc;
  if (!dr->feasible) return 0;
  rc = mp__cand_make(g, p->o, dr->strategy, &c, err);
  dr->strategy = NULL; /* owned by the candidate now */
  if (rc != 0) return rc;
  /* The model bounds the simulated peak from above; a plan the model
   * accepts that the simulator finds over budget is a bug in one of them. */
  if (p->o->accounting == MP_ACCOUNTING_DEFAULT && !mp__fits(p->o, &c.sim)) {
    mp__cand_free(&c);
    return mp_error_set(err, MP_ESCHEDULE, "",
                        "planner bug: the DP's plan simulates above the budget");
  }
  if (c.sim.peak_bytes < p->least_peak) p->least_peak = c.sim.peak_bytes;
  if (mp__better(p->o, &c, &p->best)) {
    mp__cand_free(&p->best);
    p->best = c;
    r->source = source;
    r->has_model = 1;
    r->model_recompute = dr->recompute_time;
    r->model_peak = dr->model_peak;
  } else {
    mp__cand_free(&c);
  }
  return 0;
}

/* Chen-family candidates offered to a DP solver, recording the source. */
typedef struct {
  mp__chen_pick_t *p;
  mp_plan_result_t *r;
} mp__portfolio_t;

static void mp__portfolio_visit(void *arg, mp__cand_t *c) {
  mp__portfolio_t *pf = arg;
  mp__cand_t *before = &pf->p->best;
  mp_schedule_t *old = before->schedule;
  mp__chen_pick(pf->p, c);
  if (pf->p->best.schedule != old) {
    pf->r->source = pf->p->best.strategy ? "memonger-candidate" : "keep-all";
    pf->r->has_model = 0;
  }
}

/* The DP solvers. With the reference accounting: the DP alone, as the
 * reference solver does. With memplan's own accounting, the DP's model is
 * conservative (it ignores liveness inside a segment: VGG19's plain
 * backpropagation peaks at 2.13 GB of activations where the model says
 * 4.01), so the DP's plan is one candidate among several, all simulated:
 *   - keeping everything (optimal whenever it fits);
 *   - the DP's plan at the budget;
 *   - for exact: the approximate DP's plan too (its family is a subset, so
 *     exact is never worse than approx);
 *   - the prefix-cut plans of Chen's family (memonger's threshold search),
 *     which a model-exact approximate DP would also consider;
 * and the answer is the best that fits by the simulator's figures. Every
 * candidate is a lower-set strategy run through the same schedule builder,
 * so the result is a plan of the asked solver's family or smaller. */
int mp__plan_dp(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__chen_pick_t p;
  mp__portfolio_t pf;
  mp_dp_result_t dr;
  int want_exact = (self->caps & MP__CAP_EXACT) != 0, rc;
  uint64_t dp_min = 0;

  memset(&p, 0, sizeof(p));
  p.o = o;
  p.least_peak = UINT64_MAX;
  if ((rc = mp__dp_at(g, o, want_exact, &dr, err)) != 0) return rc;
  r->exact = dr.exact_used;
  r->solver_used = dr.exact_used ? MP_SOLVER_EXACT : MP_SOLVER_APPROX;
  if (want_exact && !dr.exact_used)
    memcpy(r->exact_reason, dr.fallback_reason, sizeof(r->exact_reason));
  r->n_lower_sets = dr.n_lower_sets;
  if (!dr.feasible) dp_min = dr.min_feasible_budget;
  rc = mp__offer_dp(g, &dr, dr.exact_used ? "exact-dp" : "approx-dp", &p, r, err);
  mp_dp_result_free(&dr);
  if (rc != 0) goto fail;

  if (o->accounting == MP_ACCOUNTING_DEFAULT) {
    if (r->exact) {
      if ((rc = mp__dp_at(g, o, 0, &dr, err)) != 0) goto fail;
      rc = mp__offer_dp(g, &dr, "approx-dp", &p, r, err);
      mp_dp_result_free(&dr);
      if (rc != 0) goto fail;
    }
    pf.p = &p;
    pf.r = r;
    {
      mp_plan_options_t co = *o;
      co.solver = MP_SOLVER_MEMONGER;
      co.deadline_ms = 0; /* the deadline bounds the exact DP, which fell back if it hit it */
      if ((rc = mp__chen_search(g, &co, t0, mp__portfolio_visit, &pf, err)) != 0) goto fail;
    }
  }

  r->feasible = p.best.schedule != NULL && mp__fits(o, &p.best.sim);
  if (!r->feasible) {
    /* The least budget some candidate family meets: the DP's model minimum
     * (the DP succeeds there) or the smallest simulated peak seen. */
    r->min_feasible_budget = p.least_peak;
    if (dp_min != 0 && dp_min < r->min_feasible_budget) r->min_feasible_budget = dp_min;
    if (r->min_feasible_budget == UINT64_MAX) r->min_feasible_budget = 0;
    r->source = NULL;
    r->has_model = 0;
    mp__cand_free(&p.best);
    return 0;
  }
  return mp__adopt(g, &p.best, r);
fail:
  mp__cand_free(&p.best);
  return rc;
}

/* none: keep everything. Its schedule is returned whether it fits or not. */
int mp__plan_none(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_t c;
  int rc;
  (void)t0;
  r->solver_used = self->id;
  r->source = "keep-all";
  if ((rc = mp__cand_make(g, o, NULL, &c, err)) != 0) return rc;
  r->feasible = mp__fits(o, &c.sim);
  if (!r->feasible) r->min_feasible_budget = c.sim.peak_bytes;
  return mp__adopt(g, &c, r);
}

int mp_plan(const mp_graph_t *g, const mp_plan_options_t *o, mp_plan_result_t *r,
            mp_error_t *err) {
  double t0 = mp__now_ms();
  const mp__solver_t *e;
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
