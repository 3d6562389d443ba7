/* cand_refine.c - the local search that lowers a plan's simulated peak
 * (mp__cand_refine_least): from a lower-set strategy, move one activation
 * at a time into the segment before or after its own (with `far`, also two
 * segments away, and closure moves: a node with the nodes of its segment
 * that must go with it), keep a move when the simulator says the peak went
 * down, and stop when no move helps.
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
 * moves simulated times the graph's nodes. On every shipped graph the near
 * search ends by itself well within it (the longest: 435 moves on
 * ResNet-152's 986 nodes, a fifth of the limit); the far search, with its
 * closure moves, reaches it on ResNet-152 and DenseNet (about 2,000 moves,
 * a fifth of a second; four times the limit found the same least
 * budgets). On the generated 10,000-node chain and transformer of `make
 * bench` it stops a search after 210 moves and 0.35 s (8 Mi visits took a
 * second there and found nothing more). */
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

/* The strategy `cur` with the nodes mem[0..nm) of segment `from` moved to
 * `to`; when they were all of it, the segments after it close up (a
 * strategy has no empty segment). */
static mp_strategy_t *mp__moved(const mp_strategy_t *cur, const uint32_t *count, const uint32_t *mem,
                                size_t nm, uint32_t from, uint32_t to) {
  mp_strategy_t *s = mp_strategy_copy(cur);
  size_t u;
  if (s == NULL) return NULL;
  for (u = 0; u < nm; u++) s->seg[mem[u]] = to;
  if (count[from] == nm) {
    for (u = 0; u < s->n_nodes; u++)
      if (s->seg[u] != MP_SEG_NONE && s->seg[u] > from) s->seg[u]--;
    s->n_segments--;
  }
  return s;
}

/* A closure move: v with every node of its segment that must go with it
 * for the strategy to stay valid, its ancestors within the segment when it
 * moves to the segment before (up), its descendants within it when it moves
 * to the one after. Writes them to mem (v first) and returns their number;
 * `in` is a scratch array of n_nodes zeros, left zeroed. */
static size_t mp__closure(const mp_graph_t *g, const uint32_t *seg, size_t v, int up, uint32_t *mem,
                          unsigned char *in) {
  size_t nm = 0, h = 0, k;
  uint32_t s = seg[v];
  mem[nm++] = (uint32_t)v;
  in[v] = 1;
  while (h < nm) {
    uint32_t x = mem[h++];
    uint32_t lo = up ? g->pred_off[x] : g->succ_off[x], hi = up ? g->pred_off[x + 1] : g->succ_off[x + 1];
    for (k = lo; k < hi; k++) {
      uint32_t u = up ? g->pred[k] : g->succ[k];
      if (seg[u] == s && !in[u]) {
        in[u] = 1;
        mem[nm++] = u;
      }
    }
  }
  for (k = 0; k < nm; k++) in[mem[k]] = 0;
  return nm;
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

/* The moves tried on a node, in order: single-node moves by -1, +1, -2,
 * +2 segments, then the closure moves to the segment before and after
 * (mp__closure). The near search tries the first two; the far search all. */
#define MP__MOVES_NEAR 2
#define MP__MOVES_FAR 6

static int mp__refine_search(const mp_graph_t *g, const mp_plan_options_t *o,
                             const mp__refine_start_t *start, int far, mp__cand_t *out,
                             mp_error_t *err) {
  static const int steps[MP__MOVES_FAR] = {-1, 1, -2, 2, -1, 1};
  mp__cand_t best;
  uint32_t *count = NULL, *mem = NULL;
  unsigned char *in = NULL;
  uint64_t work = 0, per = g->n_nodes ? g->n_nodes : 1;
  double floor = start->recompute;
  int improved = 1, accepted = 0, rc = 0;
  size_t v;

  /* (*out is empty and start->strategy set: mp__cand_refine_least) */
  memset(&best, 0, sizeof(best));
  if ((best.strategy = mp_strategy_copy(start->strategy)) == NULL) goto nomem;
  if ((mem = malloc((g->n_nodes + 1) * sizeof(*mem))) == NULL) goto nomem;
  if ((in = calloc(g->n_nodes + 1, 1)) == NULL) goto nomem;
  best.sim.peak_bytes = start->peak;
  best.sim.time_recompute = start->recompute;
  while (improved && work < MP__REFINE_WORK) {
    improved = 0;
    if ((rc = mp__refine_count(best.strategy, &count)) != 0) goto nomem;
    for (v = 0; v < g->n_nodes && work < MP__REFINE_WORK; v++) {
      uint32_t from = best.strategy->seg[v];
      int k, moved = 0;
      if (from == MP_SEG_NONE) continue;
      for (k = 0; k < (far ? MP__MOVES_FAR : MP__MOVES_NEAR) && !moved; k++) {
        int d = steps[k], closure = k >= 4;
        uint32_t to = from + (uint32_t)d;
        size_t nm = 1;
        mp_strategy_t *st;
        mp__cand_t c;
        if ((d < 0 && from < (uint32_t)-d) || (d > 0 && from + (uint32_t)d >= best.strategy->n_segments))
          continue;
        if (closure) {
          /* valid by construction; of one node it is the single move */
          if ((nm = mp__closure(g, best.strategy->seg, v, d < 0, mem, in)) < 2) continue;
        } else {
          /* far: until a move is taken, no single moves by one segment (the
           * start is the near search's plan, which none of them lowers,
           * unless that search stopped at the work limit) */
          if (far && !accepted && (d == 1 || d == -1)) continue;
          if (!mp__move_ok(g, best.strategy->seg, v, to)) continue;
          mem[0] = (uint32_t)v;
        }
        if (o->should_stop != NULL && o->should_stop(o->stop_arg)) {
          rc = mp_error_set(err, MP_ECANCELED, "", "planning was cancelled");
          goto fail;
        }
        if ((st = mp__moved(best.strategy, count, mem, nm, from, to)) == NULL) goto nomem;
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
  free(mem);
  free(in);
  if (best.schedule != NULL) *out = best; /* some move helped */
  else mp__cand_free(&best);
  return 0;

nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
fail:
  free(count);
  free(mem);
  free(in);
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
