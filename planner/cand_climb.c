/* cand_climb.c - the climb (mp__offer_climb, plan_internal.h): the plans
 * the exact solver adds when its DP fell back to the window family, at
 * budgets in the top quarter of plain backpropagation's peak: a chain up
 * the slack walk's ladder, each rung's plan searched to recompute less
 * within that rung.
 *
 * Why: the window family misses lower sets the exact DP's plans use, so at
 * a budget where exact's answer is its DP's own plan the fallback can pay
 * more. Near plain backpropagation's peak that shows most: the plans
 * recompute a few units there, so one unit is a large share of the cost
 * (test_fallback_climbs, tests/unit/test_wide.c, has such budgets).
 * The DP's model is also conservative, so its plans often peak well below
 * the budget they were solved at; the recomputation search (cand_refine.c,
 * mp__cand_lower) spends that room, moving activations across segment
 * boundaries while the simulated peak stays within the cap.
 *
 * Why a chain and not a search from the answer at the budget: a search
 * capped by the budget could find less at a smaller budget than at a
 * larger one (it starts from different plans), and a larger budget must
 * never cost more (cand_recompute.c). So the plans are fixed by the
 * ladder, not by the budget: rung 0 is the first rung at or above plain
 * backpropagation's peak less a quarter; the plan at rung i is the search
 * within rung i from the better (less recomputation, then a lower peak) of
 * the plan at rung i-1 and, on every MP__CLIMB_DP_EVERY-th rung, the window
 * DP's plan there (none before the first such rung where the DP plans). The
 * plan at rung i-1 peaks within rung i, and the search never recomputes
 * more than its start, so the chain recomputes no more at each rung; a
 * budget is offered the plan of the last rung within it. Every budget that
 * reaches rung i computes the same chain up to it (the DP solves are pure,
 * the searches depend on their start and cap alone), and a frontier's or a
 * fit's plans share both through the reuse book.
 *
 * What it costs: the DP solves, not the searches (the DP's forward passes
 * take most of the time). Hence the top quarter only (about ten rungs,
 * three DP solves, each near the peak where the DP is quick) and a DP
 * solve on every fourth rung (each 1.13 times the last); the whole range
 * from the DP's least budget would cost several times as much.
 */
#include "plan_internal.h"

#include <string.h>

/* The chain's better start: less recomputation, then a lower peak. */
static int mp__climb_better(const mp__cand_t *a, const mp__cand_t *b) {
  if (b->schedule == NULL) return 1;
  if (a->sim.time_recompute != b->sim.time_recompute) return a->sim.time_recompute < b->sim.time_recompute;
  return a->sim.peak_bytes < b->sim.peak_bytes;
}

int mp__offer_climb(const mp_graph_t *g, const mp_plan_options_t *o, double t0, uint64_t top,
                    mp__cand_pick_t *p, mp_plan_result_t *r, mp_error_t *err) {
  mp__cand_t cur;
  mp__moves_memo_t *memo;
  mp_schedule_t *sched;
  uint64_t rung;
  size_t i;
  int rc = 0;
  memset(&cur, 0, sizeof(cur));
  /* rung 0: the first within the top part of plain backpropagation's
   * peak (the chain starts at the first DP rung where the DP plans) */
  if ((rung = mp__rung_ceil(top - (top >> MP__CLIMB_TOP_SHIFT))) > o->budget) return 0;
  if ((memo = mp__moves_memo_new(g)) == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  for (i = 0; rung <= o->budget; i++) {
    if (i % MP__CLIMB_DP_EVERY == 0) {
      mp__cand_t d;
      mp_dp_result_t figs;
      rc = mp__cand_dp_least(g, o, t0, MP__FAMILY_EXACT, rung, &d, &figs, err);
      mp_dp_result_free(&figs);
      if (rc != 0) goto out;
      if (d.schedule != NULL && mp__climb_better(&d, &cur)) {
        mp__cand_free(&cur);
        cur = d;
      } else {
        mp__cand_free(&d);
      }
    }
    if (cur.schedule != NULL && cur.sim.time_recompute > 0) {
      mp__refine_start_t rs;
      mp__cand_t low;
      rs.strategy = cur.strategy;
      rs.peak = cur.sim.peak_bytes;
      rs.recompute = cur.sim.time_recompute;
      if ((rc = mp__cand_lower(g, o, &rs, rung, memo, &low, err)) != 0) goto out;
      if (low.schedule != NULL) {
        mp__cand_free(&cur);
        cur = low;
      }
    }
    /* (no later rung recomputes less than nothing) */
    if (rung == UINT64_MAX || (cur.schedule != NULL && cur.sim.time_recompute <= 0)) break;
    rung = mp__rung_next(rung);
  }
  if ((sched = cur.schedule) == NULL) goto out;
  mp__cand_pick(p, &cur);
  if (p->best.schedule == sched) {
    r->source = "window-dp-climbed";
    r->has_model = 0;
  }
out:
  mp__cand_free(&cur);
  mp__moves_memo_free(memo);
  return rc;
}
