/* hybrid.c - the `hybrid` solver: recomputation and data migration together.
 *
 * It starts from what a recompute-only user gets (the DP solvers' portfolio,
 * mp__cand_portfolio, as auto runs it, with the caller's lower-set limit and
 * deadline) and adds swaps where they cut time or reach budgets the DP alone
 * cannot. Candidates, each simulated under the plan's device, in this order:
 *   1. the swap greedy from keeping everything ("hybrid-swap"), first
 *      because it is fast;
 *   2. the recompute-only DP plan at the budget ("hybrid-dp");
 *   3. the approximate DP's plans at three looser budgets, geometrically
 *      spaced between the budget and plain backpropagation's peak (they are
 *      starting points: the exact DP would cost seconds per budget on wide
 *      graphs), each brought down to the budget by the swap greedy
 *      starting from its recomputation decisions ("hybrid-dp+swap"): less
 *      recomputation, paid for with swaps the compute hides;
 *   4. Layrub's fixed policy (layrub.c) under the plan's device
 *      ("hybrid-layrub"), so that at every budget Layrub meets under the
 *      same device (with --intra-layer-reuse, as Layrub forces it on),
 *      hybrid fits too, with no more time.
 * The answer is the feasible candidate of least simulated time (ties: least
 * peak, then the earlier candidate), so hybrid is never slower than the
 * better of recompute-only and swap-only at the same budget. When none fits,
 *   5. the swap search's least-peak plan (mp__swap_least,
 *      "hybrid-swap-least") is offered too, and min_feasible_budget is the
 *      least peak of the plans that do not depend on the budget: the
 *      recompute-only portfolio's least feasible budget, Layrub's peak and
 *      that plan's peak. Every budget from there on plans, and the answer
 *      names the same least budget whatever budget was asked (the searches
 *      from the budget, 1 and 3, may still plan below it).
 *
 * Cancellation is an error (MP_ECANCELED). The deadline bounds the whole
 * search: the DP gets what is left of it (and falls back to approx when it
 * runs out, as for a recompute-only user); once it has passed, no further
 * candidate starts and the answer is the best one so far (min_feasible_budget
 * then only covers the candidates that ran); MP_ETIMEDOUT only when even the
 * swap greedy could not finish. mp__plan_hybrid is the hybrid entry of the
 * solver table (solver.h), and auto's when o->swap is set; ownership as in
 * plan.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"
#include "swap.h"

typedef struct {
  mp_plan_result_t best; /* the best feasible candidate (schedule set) */
  int have;
  int answered;          /* some candidate search ran to its end */
  uint64_t least;        /* least peak of the plans that do not depend on
                          * the budget (the anchors) */
} mp__hy_t;

static int mp__hy_better(const mp__hy_t *h, const mp_sim_report_t *s) {
  double tol;
  if (!h->have) return 1;
  tol = 1e-9 * (1.0 + fabs(h->best.sim.time_total));
  if (s->time_total < h->best.sim.time_total - tol) return 1;
  if (s->time_total > h->best.sim.time_total + tol) return 0;
  return s->peak_bytes < h->best.sim.peak_bytes;
}

/* Offer a migration plan (freed here); an anchor (a plan that does not
 * depend on the budget) also bounds min_feasible_budget. */
static int mp__hy_offer_mig(const mp_graph_t *g, mp__hy_t *h, mp__mig_t *m, const char *source,
                            int anchor) {
  int rc = 0;
  if (anchor && m->least_peak < h->least) h->least = m->least_peak;
  if (m->feasible && mp__hy_better(h, &m->sim)) {
    mp_plan_result_t c;
    memset(&c, 0, sizeof(c));
    if ((rc = mp__mig_adopt(g, m, &c)) == 0) {
      mp_plan_result_free(&h->best);
      h->best = c;
      h->best.source = source;
      h->have = 1;
    } else {
      mp_plan_result_free(&c);
    }
  }
  mp__mig_free(m);
  return rc;
}

/* The recompute-only plan at budget b, as the portfolio of the DP solvers
 * gives it (exact: what the auto solver gives a recompute-only user; else
 * approx's), under what is left of the deadline. */
static int mp__hy_dp(const mp_graph_t *g, const mp_plan_options_t *o, double t0, uint64_t b,
                     int exact, mp_plan_result_t *dr, mp_error_t *err) {
  mp_plan_options_t po = *o;
  po.swap = 0;
  po.budget = b;
  if (o->deadline_ms > 0) {
    po.deadline_ms = o->deadline_ms - (mp__now_ms() - t0);
    if (po.deadline_ms < 1) po.deadline_ms = 1;
  }
  memset(dr, 0, sizeof(*dr));
  return mp__cand_portfolio(g, &po, mp__now_ms(), exact ? MP__FAMILY_EXACT : MP__FAMILY_APPROX, dr, err);
}

/* Deadline between candidates: stop (1) with an answer in hand, else the
 * error. */
static int mp__hy_stop(const mp_plan_options_t *o, double t0, const mp__hy_t *h, int *stop,
                       mp_error_t *err) {
  int rc = mp__plan_stop(o, t0, err);
  *stop = 0;
  if (rc == MP_ETIMEDOUT && h->answered) {
    mp_error_clear(err);
    *stop = 1;
    return 0;
  }
  return rc;
}

int mp__plan_hybrid(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                    double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__hy_t h;
  mp_plan_result_t dr;
  mp__mig_t m;
  uint8_t *dec = NULL, *prev = NULL;
  uint64_t p0;
  int rc, stop = 0, i, exact = 0;
  char exact_reason[sizeof(r->exact_reason)];
  size_t n_lower_sets = 0;

  memset(&h, 0, sizeof(h));
  memset(&dr, 0, sizeof(dr));
  exact_reason[0] = '\0';
  h.least = UINT64_MAX;

  /* 1. Swaps alone: fast, so it runs first and a deadline that cuts the DP
   * short still leaves it in the race. */
  if ((rc = mp__swap_greedy(g, o, NULL, t0, &m, err)) != 0) goto fail;
  h.answered = 1;
  p0 = UINT64_MAX;
  if (m.n_decisions == 0 && m.feasible) p0 = m.sim.peak_bytes; /* kept everything */
  if ((rc = mp__hy_offer_mig(g, &h, &m, "hybrid-swap", 0)) != 0) goto nomem;
  if ((rc = mp__hy_stop(o, t0, &h, &stop, err)) != 0) goto fail;
  if (stop) goto done;

  /* 2. The recompute-only plan at the budget. */
  if ((rc = mp__hy_dp(g, o, t0, o->budget, 1, &dr, err)) != 0) goto fail;
  exact = dr.exact;
  memcpy(exact_reason, dr.exact_reason, sizeof(exact_reason));
  n_lower_sets = dr.n_lower_sets;
  if (dr.schedule != NULL && dr.feasible) {
    if (dr.sim.peak_bytes <= o->budget && dr.sim.host_peak_bytes <= o->device.host_bytes &&
        mp__hy_better(&h, &dr.sim)) {
      mp_plan_result_free(&h.best);
      h.best = dr;
      memset(&dr, 0, sizeof(dr));
      h.best.source = "hybrid-dp";
      h.have = 1;
    }
  } else if (dr.min_feasible_budget != 0 && dr.min_feasible_budget < h.least) {
    h.least = dr.min_feasible_budget;
  }
  mp_plan_result_free(&dr);
  if ((rc = mp__hy_stop(o, t0, &h, &stop, err)) != 0) goto fail;
  if (stop) goto done;

  /* 3. Looser DP plans, brought down to the budget with swaps. Plain
   * backpropagation's peak bounds the sweep: at or above it nothing needs
   * recomputing. */
  if (p0 == UINT64_MAX) {
    mp__cand_t all; /* plain backpropagation, as every solver simulates it */
    if ((rc = mp__cand_make(g, o, NULL, &all, err)) != 0) goto fail;
    p0 = all.sim.peak_bytes;
    mp__cand_free(&all);
  }
  dec = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  prev = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  if (!dec || !prev) goto nomem;
  for (i = 1; i <= 3 && o->budget < p0; i++) {
    double lo = o->budget > 0 ? (double)o->budget : 1.0;
    double bd = lo * pow((double)p0 / lo, (double)i / 4.0);
    uint64_t b = bd >= (double)p0 ? p0 : (uint64_t)bd;
    size_t k;
    if (b <= o->budget) continue;
    if ((rc = mp__hy_stop(o, t0, &h, &stop, err)) != 0) goto fail;
    if (stop) goto done;
    /* The approximate DP here: these plans are only starting points for the
     * swap greedy, and an exact DP per looser budget would cost seconds on
     * wide graphs (GoogLeNet, PSPNet) for little gain once swaps change the
     * plan anyway. */
    if ((rc = mp__hy_dp(g, o, t0, b, 0, &dr, err)) != 0) goto fail;
    if (!dr.feasible) {
      mp_plan_result_free(&dr);
      continue;
    }
    memset(dec, 0, g->n_nodes);
    for (k = 0; k < dr.sim.n_recomputed; k++) dec[dr.sim.recomputed[k]] = MP_RES_RECOMPUTE;
    mp_plan_result_free(&dr);
    if (i > 1 && memcmp(dec, prev, g->n_nodes) == 0) continue; /* same plan as before */
    memcpy(prev, dec, g->n_nodes);
    rc = mp__swap_greedy(g, o, dec, t0, &m, err);
    if (rc == MP_ETIMEDOUT) goto done_clear;
    if (rc != 0) goto fail;
    if ((rc = mp__hy_offer_mig(g, &h, &m, "hybrid-dp+swap", 0)) != 0) goto nomem;
  }
  goto done;

done_clear:
  mp_error_clear(err);
done:
  /* 4. Layrub's fixed policy under the plan's device: cheap, and offered
   * whatever the deadline left, so that hybrid meets every budget Layrub
   * meets, no slower (it wins only when strictly better, as it comes last). */
  if ((rc = mp__layrub_mig(g, o, &o->device, &m, err)) != 0) goto fail;
  if ((rc = mp__hy_offer_mig(g, &h, &m, "hybrid-layrub", 1)) != 0) goto nomem;
  /* 5. When nothing fits: the swap search's least-peak plan (mp__swap_least),
   * another plan that does not depend on the budget. */
  if (!h.have) {
    if ((rc = mp__swap_least(g, o, t0, &m, err)) == MP_ETIMEDOUT) {
      mp_error_clear(err);
    } else {
      if (rc != 0) goto fail;
      if ((rc = mp__hy_offer_mig(g, &h, &m, "hybrid-swap-least", 1)) != 0) goto nomem;
    }
  }
  *r = h.best; /* all zero when no candidate fits (h is zeroed first) */
  r->solver = o->solver;
  r->objective = o->objective;
  r->accounting = o->accounting;
  r->budget = o->budget;
  r->solver_used = self->id;
  r->exact = exact;
  memcpy(r->exact_reason, exact_reason, sizeof(r->exact_reason));
  r->n_lower_sets = n_lower_sets;
  r->feasible = h.have;
  r->min_feasible_budget = h.have || h.least == UINT64_MAX ? 0 : h.least;
  rc = 0;
  goto out;

nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
fail:
  mp_plan_result_free(&h.best);
out:
  mp_plan_result_free(&dr);
  free(dec);
  free(prev);
  return rc;
}
