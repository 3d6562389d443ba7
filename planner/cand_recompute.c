/* cand_recompute.c - the recompute-only candidates: Chen's proposals
 * (mp__cand_chen) and the portfolio a DP solver answers with
 * (mp__cand_portfolio), which hybrid also starts from. Declared in
 * plan_internal.h; the solvers' entries that use them live in recompute.c
 * and hybrid.c.
 *
 * Chen's proposals. memonger knows no budget: it proposes plans over a
 * series of thresholds (mxnet-memonger's search: B = 0, then three
 * refinements B = sqrt(x*y/2), then a grid of six between the smallest
 * segment seen and sqrt(2) times the last guess; we add B = infinity, no cut
 * at all); sqrt proposes one plan. Every proposal is simulated and handed to
 * the caller's visitor.
 *
 * The portfolio. With the reference accounting: the DP alone, as the
 * reference solver does. With memplan's own accounting, the DP's model is
 * conservative (it ignores liveness inside a segment: VGG19's plain
 * backpropagation peaks at 2.13 GB of activations where the model says
 * 4.01), so the DP's plan is one candidate among several, all simulated:
 *   - keeping everything (optimal whenever it fits);
 *   - the DP's plan at the budget, from the family the solver names
 *     (mp__family_t: the exact DP's, the approximate DP's, or for `chain`
 *     the prefix DP's);
 *   - for exact: the approximate DP's plan too (its family is a subset, so
 *     exact is never worse than approx);
 *   - the prefix-cut plans of Chen's family (memonger's threshold search),
 *     which a model-exact approximate DP would also consider;
 *   - for each DP family that finds no plan at the budget, its plan at its
 *     own least model budget, which simulates below that budget (the PSPNet
 *     plan at the exact DP's least budget, 1.53 GB, peaks at 1.41 GB), so
 *     that every budget down to the least simulated peak of a candidate has
 *     a plan and the least feasible budget is a plan's exact peak (and
 *     below the DP's least budget, that plan and Chen's least-peak one
 *     lowered by the local search: cand_refine.c);
 *   - for exact after a fallback to the window family, in the top quarter
 *     of plain backpropagation's peak, the climb's plan (cand_climb.c);
 * and the answer is the best that fits by the simulator's figures. Every
 * candidate is a lower-set strategy run through the same schedule builder,
 * so the result is a plan of the asked solver's family or smaller.
 */
#include "plan_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_chain.h"
#include "memonger.h"
#include "progress.h"

int mp__cand_chen(const mp_graph_t *g, const mp_plan_options_t *o, double t0, int sqrt_cuts,
                  mp__cand_visit_cb visit, void *arg, mp_error_t *err) {
  uint32_t *cand = NULL;
  size_t ncand = 0;
  mp__cand_t c;
  int rc, i;

  mp__progress_phase(o->should_stop, o->stop_arg, "simulation", -1);
  if ((rc = mp__plan_stop(o, t0, err)) != 0) return rc;
  if ((rc = mp_cut_candidates(g, &cand, &ncand)) != 0)
    return mp_error_set(err, rc, "", "out of memory");
  if (sqrt_cuts) {
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

void mp__dp_options_from(const mp_plan_options_t *o, int exact, mp_dp_options_t *d) {
  mp_dp_options_init(d);
  d->exact = exact;
  d->max_lower_sets = o->max_lower_sets;
  d->window = exact && o->solver == MP_SOLVER_WINDOW;
  d->window_sets = o->window_sets;
  d->deadline_ms = o->deadline_ms;
  d->should_stop = o->should_stop;
  d->stop_arg = o->stop_arg;
  d->threads = o->threads;
}

/* Run the family's DP at o->budget (the prefix DP counts its deadline from
 * t0, the others from now, as mp_dp_solve does). */
static int mp__dp_at(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__family_t family,
                     mp_dp_result_t *dr, mp_error_t *err) {
  mp_dp_options_t d;
  if (family == MP__FAMILY_CHAIN) return mp__chain_solve(g, o, t0, dr, err);
  mp__dp_options_from(o, family == MP__FAMILY_EXACT, &d);
  d.objective = o->objective;
  d.accounting = o->accounting;
  d.budget = o->budget;
  if (o->reuse != NULL) return mp__reuse_solve(o, &d, dr, err);
  return mp_dp_solve(g, &d, dr, err);
}

/* The `source` of a plan the family's DP found: at the budget (at 0), at
 * its own least budget (1), at a larger model budget (2, the slack search
 * below), or the least budget's plan lowered by the local search (3,
 * cand_refine.c). */
static const char *mp__dp_source(mp__family_t family, const mp_dp_result_t *dr, int at) {
  static const char *const names[4][4] = {
      {"chain-dp", "chain-dp-least", "chain-dp-slack", "chain-dp-refined"},
      {"exact-dp", "exact-dp-least", "exact-dp-slack", "exact-dp-refined"},
      {"window-dp", "window-dp-least", "window-dp-slack", "window-dp-refined"},
      {"approx-dp", "approx-dp-least", "approx-dp-slack", "approx-dp-refined"}};
  int f = family == MP__FAMILY_CHAIN ? 0 : dr->exact_used ? 1 : dr->window_width > 0 ? 2 : 3;
  return names[f][at];
}

/* The DP result's plan simulated under o->device (takes its strategy);
 * c->schedule is NULL when the DP found none. With the default accounting
 * and the exact allocator the model bounds the simulated peak from above,
 * so a plan that simulates above `model_budget`, the budget the DP was
 * asked, is a bug in one of them. Under the pytorch-cuda allocator
 * (device.h) the simulator rounds every allocation and the model does not,
 * so there the simulation alone judges the plan. */
static int mp__dp_cand(const mp_graph_t *g, const mp_plan_options_t *o, uint64_t model_budget,
                       mp_dp_result_t *dr, mp__cand_t *c, mp_error_t *err) {
  int rc;
  memset(c, 0, sizeof(*c));
  if (!dr->feasible) return 0;
  rc = mp__cand_make(g, o, dr->strategy, c, err);
  dr->strategy = NULL; /* owned by the candidate now */
  if (rc == 0 && o->accounting == MP_ACCOUNTING_DEFAULT && o->device.allocator == MP_ALLOCATOR_EXACT &&
      c->sim.peak_bytes > model_budget) {
    mp__cand_free(c);
    rc = mp_error_set(err, MP_ESCHEDULE, "", "planner bug: the DP's plan simulates above its model budget");
  }
  return rc;
}

/* Keep c if it beats p's best (mp__cand_pick: taken, or left to the
 * caller); when it does, the answer records that this DP plan answered. */
static void mp__pick_dp(mp__cand_pick_t *p, mp_plan_result_t *r, mp__cand_t *c, const char *source,
                        const mp_dp_result_t *dr) {
  mp_schedule_t *sched = c->schedule;
  mp__cand_pick(p, c);
  if (p->best.schedule != sched) return;
  r->source = source;
  r->has_model = 1;
  r->model_recompute = dr->recompute_time;
  r->model_peak = dr->model_peak;
}

/* Offer the plan of a DP solved at p->o->budget (takes its strategy);
 * *peak receives its simulated peak (UINT64_MAX: no plan). */
static int mp__offer_dp(const mp_graph_t *g, mp_dp_result_t *dr, const char *source,
                        mp__cand_pick_t *p, mp_plan_result_t *r, uint64_t *peak, mp_error_t *err) {
  mp__cand_t c;
  int rc;
  *peak = UINT64_MAX;
  if (!dr->feasible) return 0;
  mp__progress_phase(p->o->should_stop, p->o->stop_arg, "simulation", -1);
  if ((rc = mp__dp_cand(g, p->o, p->o->budget, dr, &c, err)) != 0) return rc;
  *peak = c.sim.peak_bytes;
  mp__pick_dp(p, r, &c, source, dr);
  mp__cand_free(&c);
  return 0;
}

/* The model's slack. The DP's model peak bounds the simulated one from
 * above, often by a wide margin (a transformer exported from PyTorch: a plan
 * the DP finds at a model budget of 50 MB simulates at 31 MB), so at budget
 * B the DP can miss plans it finds at a larger model budget whose simulated
 * peak still fits B. So the DP is also asked at larger model budgets, and
 * each plan that simulates within B is offered (source *-dp-slack).
 *
 * Which model budgets must not depend on B except through where they start
 * and through the plans' own peaks, or a larger budget could miss a plan a
 * smaller one found and cost more (a search that jumped by B's simulated
 * headroom would ask different model budgets at nearby B and let the
 * recomputation rise with the budget). They are the rungs of one fixed ladder,
 * each 1/32 above the last (integers: x + x/32, from 1). From the first
 * rung above the model budget the DP solved at (`solved`: B, or the DP's
 * least budget when B is below it), the walk asks consecutive rungs while
 * their plans fit B, at most MP__WALK_MAX of them. If B1 < B2, every rung
 * B1's walk found fitting is either at most B2, where the DP at B2 finds
 * no more recomputation by the model's figures (the simulated ones have
 * followed on every graph the tests plan: test_consistency.c), or on B2's
 * walk too: B2's walk starts no later, and stops no earlier, since a plan
 * that fits B1 fits B2. DP solves are pure (dp.h: a session's earlier
 * answers never bound them), so a rung's plan is the same whoever asks. */
#define MP__RUNG_SHIFT 5 /* each rung 1/32 above the last */
#define MP__WALK_MAX 16  /* rungs a walk asks at most: up to 1.64x `solved` */

uint64_t mp__rung_next(uint64_t x) {
  uint64_t s = x >> MP__RUNG_SHIFT;
  if (s == 0) s = 1;
  return x > UINT64_MAX - s ? UINT64_MAX : x + s;
}

uint64_t mp__rung_ceil(uint64_t x) {
  uint64_t rung = 1;
  while (rung < x && rung != UINT64_MAX) rung = mp__rung_next(rung);
  return rung;
}

/* Answers the prefix DP solved ahead (dp_chain_many.c): dr[next .. n) at
 * budget[next .. n), handed out in order. The slack walk's rungs are known
 * before their answers, so on several threads a large chain's plan solves
 * its budget and the first rungs above it at once, and each later batch of
 * rungs together. The answers are the same (every solve is pure); only
 * rungs past where the walk stops are solved for nothing. */
typedef struct {
  size_t n, next;
  uint64_t budget[MP__CHAIN_MANY_MAX];
  mp_dp_result_t dr[MP__CHAIN_MANY_MAX];
  int rc[MP__CHAIN_MANY_MAX];
  mp_error_t err[MP__CHAIN_MANY_MAX];
} mp__ahead_t;

static void mp__ahead_free(mp__ahead_t *a) {
  for (; a->next < a->n; a->next++) mp_dp_result_free(&a->dr[a->next]);
  a->n = a->next = 0;
}

/* How many budgets the family's DP solves at once: several only for the
 * prefix DP (no session to share) on several threads, and not inside a
 * fit's or frontier's plans, which already run on the threads. */
static size_t mp__ahead_width(const mp_plan_options_t *o, mp__family_t family) {
  size_t w = o->threads;
  if (family != MP__FAMILY_CHAIN || w <= 1 || o->should_stop == mp__serial_poll) return 1;
  return w > MP__CHAIN_MANY_MAX ? MP__CHAIN_MANY_MAX : w;
}

/* The family's DP at `budget` (o->budget is ignored): from `a` when it was
 * solved ahead; else solved now, and, when the family allows and `a` is
 * given, up to `left` - 1 rungs from `next_rung` on solved with it into
 * `a`. */
static int mp__dp_ahead(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                        mp__family_t family, mp__ahead_t *a, uint64_t budget, uint64_t next_rung,
                        size_t left, mp_dp_result_t *dr, mp_error_t *err) {
  mp_plan_options_t mo = *o;
  size_t w = mp__ahead_width(o, family), i;
  int rc;
  mo.budget = budget;
  if (a == NULL || (a->next >= a->n && (w <= 1 || left <= 1)))
    return mp__dp_at(g, &mo, t0, family, dr, err);
  if (a->next >= a->n) {
    uint64_t b[MP__CHAIN_MANY_MAX];
    size_t n = 1;
    if (w > left) w = left;
    b[0] = budget;
    if (budget != UINT64_MAX)
      for (b[n] = next_rung; n < w; n++) {
        if (n > 1) b[n] = mp__rung_next(b[n - 1]);
        if (b[n] == UINT64_MAX) {
          n++;
          break;
        }
      }
    if ((rc = mp__chain_solve_many(g, &mo, t0, b, n, a->dr, a->rc, a->err)) != 0) {
      *err = a->err[0];
      return rc;
    }
    for (i = 0; i < n; i++) a->budget[i] = b[i];
    a->n = n;
    a->next = 0;
  }
  i = a->next++;
  if (a->budget[i] != budget) { /* never: the walk asks the rungs in order */
    memset(dr, 0, sizeof(*dr));
    return mp_error_set(err, MP_ESCHEDULE, "", "planner bug: the slack walk skipped a rung");
  }
  *dr = a->dr[i];
  memset(&a->dr[i], 0, sizeof(a->dr[i]));
  if (a->rc[i] != 0) *err = a->err[i];
  return a->rc[i];
}

/* The first rung above x. */
static uint64_t mp__rung_above(uint64_t x) { return x == UINT64_MAX ? x : mp__rung_ceil(x + 1); }

/* The walk from the first rung above `solved`; `a` (NULL: none) holds the
 * rungs solved ahead of it, and is left empty. */
static int mp__offer_dp_slack(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                              mp__family_t family, mp__cand_pick_t *p, mp_plan_result_t *r,
                              uint64_t solved, mp__ahead_t *a, mp_error_t *err) {
  mp_plan_options_t mo = *o;
  mp__ahead_t own;
  uint64_t rung = mp__rung_above(solved);
  int k, rc = 0;
  if (a == NULL) {
    own.n = own.next = 0;
    a = &own;
  }
  for (k = 0; k < MP__WALK_MAX; k++, rung = mp__rung_next(rung)) {
    mp_dp_result_t dr;
    mp__cand_t c;
    int fits;
    mo.budget = rung;
    if ((rc = mp__dp_ahead(g, o, t0, family, a, rung, mp__rung_next(rung),
                           (size_t)(MP__WALK_MAX - k), &dr, err)) != 0)
      break;
    if (dr.feasible) mp__progress_phase(o->should_stop, o->stop_arg, "simulation", -1);
    if ((rc = mp__dp_cand(g, &mo, rung, &dr, &c, err)) != 0) {
      mp_dp_result_free(&dr);
      break;
    }
    fits = c.schedule != NULL && c.sim.peak_bytes <= o->budget;
    if (fits) mp__pick_dp(p, r, &c, mp__dp_source(family, &dr, 2), &dr);
    mp__cand_free(&c);
    mp_dp_result_free(&dr);
    if (!fits || rung == UINT64_MAX) break;
  }
  mp__ahead_free(a);
  return rc;
}

/* Offer the local search's plan from `start` (cand_refine.c), when it
 * finds one below the start's peak; the answer records `source` when it
 * wins. Only where the family's DP fails at the budget (the callers): the
 * searched plan never recomputes less than its start, which every larger
 * budget is offered, so cost stays monotone. */
static void mp__pick_refined(mp__cand_pick_t *p, mp_plan_result_t *r, mp__cand_t *c,
                             const char *source) {
  mp_schedule_t *sched = c->schedule;
  if (sched == NULL) return; /* the search found nothing */
  mp__cand_pick(p, c);
  if (p->best.schedule == sched) {
    r->source = source;
    r->has_model = 0;
  }
  mp__cand_free(c);
}

/* Two searches are offered: moves to the neighbouring segments, then, from
 * its plan (or the start when it found none), moves up to two segments
 * away and closure moves (cand_refine.c). The second reaches plans the
 * first cannot (a node whose move by one segment is invalid or raises the
 * peak, or that lowers it only together with its ancestors or descendants
 * in its segment); offering both keeps every plan the first search gives,
 * so no budget loses its plan or pays more for the second. */
static int mp__offer_refined(const mp_graph_t *g, const mp_plan_options_t *o,
                             const mp_strategy_t *start, const mp_sim_report_t *start_sim,
                             const char *source, mp__cand_pick_t *p, mp_plan_result_t *r,
                             mp_error_t *err) {
  mp__refine_start_t rs;
  mp__cand_t near, far;
  int rc;
  rs.strategy = start;
  rs.peak = start_sim->peak_bytes;
  rs.recompute = start_sim->time_recompute;
  if ((rc = mp__cand_refine_least(g, o, &rs, 0, &near, err)) != 0) return rc;
  if (near.schedule != NULL) {
    rs.strategy = near.strategy;
    rs.peak = near.sim.peak_bytes;
    rs.recompute = near.sim.time_recompute;
  }
  rc = mp__cand_refine_least(g, o, &rs, 1, &far, err);
  mp__pick_refined(p, r, &near, source);
  if (rc != 0) return rc;
  mp__pick_refined(p, r, &far, source);
  return 0;
}

/* Chen-family candidates offered to a DP solver, recording the source. */
typedef struct {
  mp__cand_pick_t *p;
  mp_plan_result_t *r;
  /* when track_low: the least-peak proposal that cuts (ties: less
   * recomputation, then the first), where the local search starts (a
   * copy), or NULL; nomem: a copy failed */
  int track_low;
  mp_strategy_t *low;
  mp_sim_report_t low_sim; /* its peak and recomputation alone */
  uint64_t all_peak;       /* keeping everything's simulated peak (0: not seen) */
  int nomem;
} mp__portfolio_t;

static void mp__portfolio_visit(void *arg, mp__cand_t *c) {
  mp__portfolio_t *pf = arg;
  mp__cand_t *before = &pf->p->best;
  mp_schedule_t *old = before->schedule;
  if (pf->track_low && c->strategy != NULL && c->schedule != NULL &&
      (pf->low == NULL || c->sim.peak_bytes < pf->low_sim.peak_bytes ||
       (c->sim.peak_bytes == pf->low_sim.peak_bytes &&
        c->sim.time_recompute < pf->low_sim.time_recompute))) {
    mp_strategy_t *cp = mp_strategy_copy(c->strategy);
    if (cp == NULL) {
      pf->nomem = 1;
    } else {
      mp_strategy_free(pf->low);
      pf->low = cp;
      pf->low_sim.peak_bytes = c->sim.peak_bytes;
      pf->low_sim.time_recompute = c->sim.time_recompute;
    }
  }
  if (c->strategy == NULL && c->schedule != NULL) pf->all_peak = c->sim.peak_bytes;
  mp__cand_pick(pf->p, c);
  if (pf->p->best.schedule != old) {
    pf->r->source = pf->p->best.strategy ? "memonger-candidate" : "keep-all";
    pf->r->has_model = 0;
  }
}

/* The family's least model budget: where its DP, solved at model budget
 * 0, says a plan starts; *least 0 when unknown (the exact search passed its
 * deadline) or when a plan needs no memory. 0 or the DP's error. */
static int mp__dp_least_budget(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                               mp__family_t family, uint64_t *least, mp_error_t *err) {
  mp_plan_options_t mo = *o;
  mp_dp_result_t dr;
  int rc;
  mo.budget = 0;
  *least = 0;
  if ((rc = mp__dp_at(g, &mo, t0, family, &dr, err)) != 0) return rc;
  if (!dr.feasible) *least = dr.min_feasible_budget;
  mp_dp_result_free(&dr);
  return 0;
}

int mp__cand_dp_least(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__family_t family,
                      uint64_t least, mp__cand_t *c, mp_dp_result_t *figs, mp_error_t *err) {
  mp_plan_options_t mo = *o;
  int rc;
  memset(c, 0, sizeof(*c));
  memset(figs, 0, sizeof(*figs));
  if (least == 0) {
    if ((rc = mp__dp_least_budget(g, o, t0, family, &least, err)) != 0) return rc;
    if (least == 0) return 0; /* unknown (the search passed the deadline) */
  }
  mo.budget = least;
  if ((rc = mp__dp_at(g, &mo, t0, family, figs, err)) != 0) return rc;
  if ((rc = mp__dp_cand(g, o, least, figs, c, err)) != 0) mp_dp_result_free(figs);
  return rc;
}

/* Offer the family's DP plan at o->budget and, when
 * it finds none there, with the default accounting, its plan at its own
 * least model budget (mp__cand_dp_least). The DP is solved at its least
 * budget only when it fails at the budget, so below that budget the
 * candidates are always the same plans, and the set of budgets with a plan
 * is an interval from the least simulated peak among them: the plan at
 * that least budget peaks exactly there. *first (when not NULL) receives
 * the figures of the solve at o->budget (no strategy). */
int mp__offer_dp_family(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                        mp__family_t family, mp__cand_pick_t *p, mp_plan_result_t *r,
                        mp_dp_result_t *first, mp_error_t *err) {
  mp_dp_result_t dr;
  mp__cand_t c;
  uint64_t dp_min;
  int rc, walks = o->accounting == MP_ACCOUNTING_DEFAULT && o->objective == MP_OBJECTIVE_TIME;
  uint64_t peak;
  mp__ahead_t ahead;
  ahead.n = ahead.next = 0;
  /* with the walk's first rungs, when they can be solved at once */
  if ((rc = mp__dp_ahead(g, o, t0, family, walks ? &ahead : NULL, o->budget,
                         mp__rung_above(o->budget), MP__WALK_MAX + 1, &dr, err)) != 0) {
    mp__ahead_free(&ahead);
    return rc;
  }
  dp_min = dr.feasible ? 0 : dr.min_feasible_budget;
  rc = mp__offer_dp(g, &dr, mp__dp_source(family, &dr, 0), p, r, &peak, err);
  if (rc == 0 && peak != UINT64_MAX && walks)
    rc = mp__offer_dp_slack(g, o, t0, family, p, r, o->budget, &ahead, err);
  mp__ahead_free(&ahead);
  if (first) {
    *first = dr; /* the figures; its strategy went to the candidate */
    first->strategy = NULL;
  } else {
    mp_dp_result_free(&dr);
  }
  if (rc != 0 || dp_min == 0 || o->accounting != MP_ACCOUNTING_DEFAULT) return rc;
  if ((rc = mp__cand_dp_least(g, o, t0, family, dp_min, &c, &dr, err)) != 0) return rc;
  if (c.schedule != NULL) {
    peak = c.sim.peak_bytes;
    /* the same plan lowered by the simulator's figures (cand_refine.c),
     * searched before the candidate is taken */
    if (o->objective == MP_OBJECTIVE_TIME)
      rc = mp__offer_refined(g, o, c.strategy, &c.sim, mp__dp_source(family, &dr, 3), p, r, err);
    if (rc != 0) {
      mp__cand_free(&c);
      mp_dp_result_free(&dr);
      return rc;
    }
    mp__pick_dp(p, r, &c, mp__dp_source(family, &dr, 1), &dr);
    mp__cand_free(&c);
    /* the least plan fits the budget with room: so may plans the DP finds
     * at larger model budgets. Not at exactly its peak: when that is the
     * least budget, the plan there must be the one that peaks there (a
     * slack plan peaking lower would have no plan at its own peak, where
     * this one does not fit and the walk does not run). */
    if (o->objective == MP_OBJECTIVE_TIME && peak < o->budget)
      rc = mp__offer_dp_slack(g, o, t0, family, p, r, dp_min, NULL, err);
  }
  mp_dp_result_free(&dr);
  return rc;
}

int mp__cand_portfolio(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__family_t family,
                       mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_pick_t p;
  mp__portfolio_t pf;
  mp_dp_result_t dr;
  int rc, dr_window, dr_part;
  uint64_t dp_min = 0;

  mp_plan_options_t so = *o;
  mp__reuse_t *own = NULL;

  /* The DP solves of one plan (at the budget, at the least budget, the
   * slack walk) share DP sessions: the caller's (mp_fit's, a sampled
   * frontier's), or the plan's own. Sharing never changes an answer: every
   * solve is pure (mp__reuse_solve), the same whatever was asked before. */
  if (so.reuse != NULL && mp__reuse_graph(so.reuse) != g) so.reuse = NULL; /* (another graph's) */
  if (so.reuse == NULL && family != MP__FAMILY_CHAIN &&
      (own = mp__reuse_new(g)) != NULL)
    so.reuse = own;
  o = &so;
  mp__cand_pick_init(&p, o);
  if ((rc = mp__offer_dp_family(g, o, t0, family, &p, r, &dr, err)) != 0) goto fail;
  r->exact = dr.exact_used;
  r->solver_used = family == MP__FAMILY_CHAIN ? MP_SOLVER_CHAIN
                   : dr.exact_used           ? MP_SOLVER_EXACT
                   : dr.window_width > 0     ? MP_SOLVER_WINDOW
                                             : MP_SOLVER_APPROX;
  if (family != MP__FAMILY_APPROX && !dr.exact_used)
    memcpy(r->exact_reason, dr.fallback_reason, sizeof(r->exact_reason));
  r->n_lower_sets = dr.n_lower_sets;
  if (!dr.feasible) dp_min = dr.min_feasible_budget;
  dr_window = dr.window_width > 0;
  dr_part = dr_window && dr.window_width < g->n_activations;
  mp_dp_result_free(&dr);

  if (o->accounting == MP_ACCOUNTING_DEFAULT) {
    /* for exact, the approx family's plan too: a subfamily of the exact
     * one, and not of the window family it falls back to (dp_window.c); the
     * prefix DP holds approx's family on the chains it serves */
    if (family == MP__FAMILY_EXACT && (r->exact || dr_window) &&
        (rc = mp__offer_dp_family(g, o, t0, MP__FAMILY_APPROX, &p, r, NULL, err)) != 0)
      goto fail;
    memset(&pf, 0, sizeof(pf));
    pf.p = &p;
    pf.r = r;
    pf.track_low = dp_min != 0 && o->objective == MP_OBJECTIVE_TIME; /* a search runs below */
    {
      mp_plan_options_t co = *o;
      co.deadline_ms = 0; /* the deadline bounds the exact DP, which fell back if it hit it */
      rc = mp__cand_chen(g, &co, t0, 0, mp__portfolio_visit, &pf, err);
      if (rc == 0 && pf.nomem) rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      /* Below the DP's least model budget, Chen's least-peak plan lowered
       * by the local search (cand_refine.c), like the DP's least plan: the
       * start is offered at every budget, the searched plan only here, and
       * it never recomputes less than the start. */
      if (rc == 0 && pf.low != NULL)
        rc = mp__offer_refined(g, o, pf.low, &pf.low_sim, "memonger-refined", &p, r, err);
      mp_strategy_free(pf.low);
      if (rc != 0) goto fail;
    }
    /* a window holding part of the lattice: the same DP in other orders
     * (cand_orders.c) */
    if (family == MP__FAMILY_EXACT && dr_part && o->objective == MP_OBJECTIVE_TIME && pf.all_peak > 0 &&
        (rc = mp__offer_orders(g, o, t0, &p, r, err)) != 0)
      goto fail;
    /* The climb (cand_climb.c): where the window family answered and its
     * DP plans at the budget, when the best plan so far fits and still
     * recomputes (nothing could beat it otherwise) */
    if (family == MP__FAMILY_EXACT && dr_window && dp_min == 0 && o->objective == MP_OBJECTIVE_TIME &&
        p.best.schedule != NULL && mp__cand_fits(o, &p.best.sim) && p.best.sim.time_recompute > 0 &&
        pf.all_peak > 0) {
      if ((rc = mp__offer_climb(g, o, t0, pf.all_peak, &p, r, err)) != 0) goto fail;
    }
  }

  /* The reference accounting's budget is on activations alone and its
   * verdict is the DP's model (plan.h): the only candidate is the DP's plan,
   * offered when the DP found one. Memplan's own accounting asks the
   * simulator. */
  if (o->accounting == MP_ACCOUNTING_REFERENCE)
    r->feasible = p.best.schedule != NULL;
  else
    r->feasible = p.best.schedule != NULL && mp__cand_fits(o, &p.best.sim);
  if (!r->feasible) {
    /* The least budget at which this portfolio plans. Reference
     * accounting: the DP's model minimum (the DP succeeds there). Default:
     * the least simulated peak among the candidates, which include the
     * DP's plan at its least budget (mp__offer_dp_family), so the plan at
     * exactly that budget peaks there. */
    if (o->accounting == MP_ACCOUNTING_REFERENCE)
      r->min_feasible_budget = dp_min;
    else
      r->min_feasible_budget = p.least_peak == UINT64_MAX ? 0 : p.least_peak;
    r->source = NULL;
    r->has_model = 0;
    mp__cand_free(&p.best);
    mp__reuse_free(own);
    return 0;
  }
  rc = mp__cand_adopt(g, &p.best, r);
  mp__reuse_free(own);
  return rc;
fail:
  mp__cand_free(&p.best);
  mp__reuse_free(own);
  return rc;
}

