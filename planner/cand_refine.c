/* cand_refine.c - the local search that lowers a plan's simulated peak
 * (mp__cand_refine_least): from a lower-set strategy, move one activation
 * at a time into the segment before or after its own (with `far`, also two
 * segments away), keep a move when the simulator says the peak went down,
 * and stop when no move helps.
 * Declared in plan_internal.h; cand_recompute.c offers its plans beside
 * the DP's plan at the DP's least budget: one searched from that plan, one
 * from the least-peak plan of Chen's family.
 *
 * Why: the DP's model ignores liveness inside a segment, so the plan it
 * finds at its least model budget is the least by the model's figures,
 * not by the simulator's. Moving a node across a segment boundary changes
 * which values a segment's recomputation and backward hold at once, which
 * the model does not see. On the shipped graphs the search lowers the
 * least budget a plan exists at by up to an eighth (GoogLeNet), in
 * milliseconds (docs/algorithms.md, "Lowering the least budget").
 *
 * What it promises, which the planner's consistency rests on
 * (cand_recompute.c):
 *  - it depends on its start and the options alone, never on the budget
 *    nor on the clock (its work limit counts moves, and the deadline,
 *    which bounds the exact DP, is not polled: only cancellation, like
 *    Chen's proposals), so every budget that asks gets the same plan;
 *  - its plan recomputes no less than the start (`floor`): it trades
 *    recomputation for memory and never the reverse. Its starts are
 *    offered at every budget from the DP's least model budget on, where
 *    the searched plans are not, so these cannot make a smaller budget
 *    cost less than a larger one.
 */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

/* The work limit, in node visits of the schedule builder and simulator:
 * moves simulated times the graph's nodes. Every shipped graph's searches
 * end by themselves well within it (the longest: 435 moves on ResNet-152's
 * 986 nodes, a fifth of the limit); on the generated 10,000-node chain and
 * transformer of `make bench` it stops the search after 210 moves and
 * 0.35 s (8 Mi visits took a second there and found nothing more). */
#define MP__REFINE_WORK ((uint64_t)2 << 20)

/* Whether moving activation v to segment `to` keeps the strategy valid:
 * no activation predecessor after it, no activation successor before it. */
static int mp__move_ok(const mp_graph_t *g, const uint32_t *seg, size_t v, uint32_t to) {
  size_t k;
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t s = seg[g->pred[k]];
    if (s != MP_SEG_NONE && s > to) return 0;
  }
  for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
    uint32_t s = seg[g->succ[k]];
    if (s != MP_SEG_NONE && s < to) return 0;
  }
  return 1;
}

/* The strategy `cur` with v moved to `to`; when v was alone in its segment,
 * the segments after it close up (a strategy has no empty segment). */
static mp_strategy_t *mp__moved(const mp_strategy_t *cur, const uint32_t *count, size_t v,
                                uint32_t to) {
  mp_strategy_t *s = mp_strategy_copy(cur);
  uint32_t from = cur->seg[v];
  size_t u;
  if (s == NULL) return NULL;
  s->seg[v] = to;
  if (count[from] == 1) {
    for (u = 0; u < s->n_nodes; u++)
      if (s->seg[u] != MP_SEG_NONE && s->seg[u] > from) s->seg[u]--;
    s->n_segments--;
  }
  return s;
}

/* (*count)[i]: the nodes of segment i, in an array made anew. */
static int mp__refine_count(const mp_strategy_t *s, uint32_t **count) {
  size_t v;
  free(*count);
  if ((*count = calloc((size_t)s->n_segments + 1, sizeof(uint32_t))) == NULL) return MP_ENOMEM;
  for (v = 0; v < s->n_nodes; v++)
    if (s->seg[v] != MP_SEG_NONE) (*count)[s->seg[v]]++;
  return 0;
}

/* The candidate a beats b: a lower peak, or the same peak and less
 * recomputation; and never less recomputation than the floor. */
static int mp__refine_better(const mp__cand_t *a, const mp__cand_t *b, double floor) {
  if (a->sim.time_recompute < floor) return 0;
  if (a->sim.peak_bytes != b->sim.peak_bytes) return a->sim.peak_bytes < b->sim.peak_bytes;
  return a->sim.time_recompute < b->sim.time_recompute;
}

static int mp__refine_search(const mp_graph_t *g, const mp_plan_options_t *o,
                             const mp__refine_start_t *start, int far, mp__cand_t *out,
                             mp_error_t *err) {
  mp__cand_t best;
  uint32_t *count = NULL;
  uint64_t work = 0, per = g->n_nodes ? g->n_nodes : 1;
  double floor = start->recompute;
  int improved = 1, accepted = 0, rc = 0;
  size_t v;

  /* (*out is empty and start->strategy set: mp__cand_refine_least) */
  memset(&best, 0, sizeof(best));
  if ((best.strategy = mp_strategy_copy(start->strategy)) == NULL) goto nomem;
  best.sim.peak_bytes = start->peak;
  best.sim.time_recompute = start->recompute;
  while (improved && work < MP__REFINE_WORK) {
    improved = 0;
    if ((rc = mp__refine_count(best.strategy, &count)) != 0) goto nomem;
    for (v = 0; v < g->n_nodes && work < MP__REFINE_WORK; v++) {
      uint32_t from = best.strategy->seg[v];
      int k, moved = 0;
      if (from == MP_SEG_NONE) continue;
      for (k = 0; k < (far ? 4 : 2) && !moved; k++) {
        static const int steps[4] = {-1, 1, -2, 2};
        int d = steps[k];
        uint32_t to = from + (uint32_t)d;
        mp_strategy_t *st;
        mp__cand_t c;
        if ((d < 0 && from < (uint32_t)-d) || (d > 0 && from + (uint32_t)d >= best.strategy->n_segments))
          continue;
        /* far: until a move is taken, only moves two segments away (the start
         * is the near search's plan, which no move by one segment lowers,
         * unless that search stopped at the work limit) */
        if (far && !accepted && (d == 1 || d == -1)) continue;
        if (!mp__move_ok(g, best.strategy->seg, v, to)) continue;
        if (o->should_stop != NULL && o->should_stop(o->stop_arg)) {
          rc = mp_error_set(err, MP_ECANCELED, "", "planning was cancelled");
          goto fail;
        }
        if ((st = mp__moved(best.strategy, count, v, to)) == NULL) goto nomem;
        if ((rc = mp__cand_make(g, o, st, &c, err)) != 0) goto fail;
        work += per;
        if (mp__refine_better(&c, &best, floor)) {
          mp__cand_free(&best);
          best = c;
          improved = moved = accepted = 1;
          if ((rc = mp__refine_count(best.strategy, &count)) != 0) goto nomem;
        } else {
          mp__cand_free(&c);
        }
      }
    }
  }
  free(count);
  if (best.schedule != NULL) *out = best; /* some move helped */
  else mp__cand_free(&best);
  return 0;

nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
fail:
  free(count);
  mp__cand_free(&best);
  return rc;
}

/* The search, or its answer from the reuse book when the plans of a
 * frontier or a fit have run it from the same start (reuse.c). The
 * answer's candidate is simulated again: the same strategy simulates the
 * same. */
int mp__cand_refine_least(const mp_graph_t *g, const mp_plan_options_t *o,
                          const mp__refine_start_t *start, int far, mp__cand_t *out, mp_error_t *err) {
  mp_strategy_t *found;
  int rc;
  memset(out, 0, sizeof(*out));
  if (start->strategy == NULL) return 0;
  rc = mp__reuse_refined_find(o->reuse, g, &o->device, start->strategy, far, &found);
  if (rc == 1) return found ? mp__cand_make(g, o, found, out, err) : 0;
  if (rc != 0) return mp_error_set(err, rc, "", "out of memory");
  if ((rc = mp__refine_search(g, o, start, far, out, err)) != 0) return rc;
  mp__reuse_refined_keep(o->reuse, g, &o->device, start->strategy, far, out->strategy);
  return 0;
}
