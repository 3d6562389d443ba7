/* cand_refine.c - the local searches over a lower-set strategy's segments:
 * move one activation at a time into the segment before or after its own
 * (with `far`, also two segments away, and closure moves: a node with the
 * nodes of its segment that must go with it), keep a move when the
 * simulator says it helped, and stop when no move helps. Two goals:
 *  - mp__cand_refine_least lowers the simulated peak, never below the
 *    start's recomputation: cand_recompute.c offers its plans beside the
 *    DP's plan at the DP's least budget (one searched from that plan, one
 *    from the least-peak plan of Chen's family);
 *  - mp__cand_lower lowers the recomputation while the peak stays within a
 *    cap: the climb's step (cand_climb.c).
 * Declared in plan_internal.h.
 *
 * Why: the DP's model ignores liveness inside a segment, so the plan it
 * finds at its least model budget is the least by the model's figures,
 * not by the simulator's. Moving a node across a segment boundary changes
 * which values a segment's recomputation and backward hold at once, which
 * the model does not see. On the shipped graphs the search lowers the
 * least budget a plan exists at by up to an eighth (GoogLeNet), in
 * milliseconds (docs/algorithms.md, "Lowering the least budget"). The
 * same blindness leaves room under a budget: a DP plan often peaks well
 * below its model budget, and moves that spend that room recompute less.
 *
 * What they promise, which the planner's consistency rests on
 * (cand_recompute.c, cand_climb.c):
 *  - each depends on its start, its goal (the cap) and the options alone,
 *    never on the budget nor on the clock (its work limit counts moves, and
 *    the deadline, which bounds the exact DP, is not polled: only
 *    cancellation, like Chen's proposals), so every budget that asks gets
 *    the same plan;
 *  - the peak search's plan recomputes no less than the start (`floor`): it
 *    trades recomputation for memory and never the reverse. Its starts are
 *    offered at every budget from the DP's least model budget on, where
 *    the searched plans are not, so these cannot make a smaller budget
 *    cost less than a larger one;
 *  - the recomputation search's plan peaks within its cap and recomputes
 *    no more than its start.
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

/* What a search wants. The peak goal (cap 0): a lower peak, or the same
 * peak and less recomputation, and never less recomputation than the
 * floor. The recomputation goal (cap > 0): a peak within the cap, and less
 * recomputation, or the same and a lower peak. */
typedef struct {
  int far;      /* the moves tried: MP__MOVES_FAR, else MP__MOVES_NEAR */
  uint64_t cap; /* 0: the peak goal */
  double floor; /* the peak goal's */
} mp__goal_t;

/* Does candidate a beat b under the goal? */
static int mp__refine_better(const mp__cand_t *a, const mp__cand_t *b, const mp__goal_t *goal) {
  if (goal->cap > 0) {
    if (a->sim.peak_bytes > goal->cap) return 0;
    if (a->sim.time_recompute != b->sim.time_recompute)
      return a->sim.time_recompute < b->sim.time_recompute;
    return a->sim.peak_bytes < b->sim.peak_bytes;
  }
  if (a->sim.time_recompute < goal->floor) return 0;
  if (a->sim.peak_bytes != b->sim.peak_bytes) return a->sim.peak_bytes < b->sim.peak_bytes;
  return a->sim.time_recompute < b->sim.time_recompute;
}

/* The moves tried on a node, in order: single-node moves by -1, +1, -2,
 * +2 segments, then the closure moves to the segment before and after
 * (mp__closure). The near search tries the first two; the far search all. */
#define MP__MOVES_NEAR 2
#define MP__MOVES_FAR 6

/* ---- The moves' memo --------------------------------------------------------
 *
 * The climb (cand_climb.c) searches from the plan of the rung before under
 * a cap a little larger, and on most rungs from the very plan its last
 * search ended at, whose every move that search simulated and turned down.
 * The memo keeps those outcomes (peak and recomputation per node and move)
 * for one strategy, so the next search takes them without simulating
 * again. A search with the memo makes the same moves as one without (it
 * counts a remembered move's work too, and simulates a move it takes):
 * only the time differs. */
struct mp__moves_memo_s {
  mp_strategy_t *of; /* the strategy the outcomes are from (a copy), or NULL */
  size_t n_slots;    /* MP__MOVES_FAR a node */
  uint32_t gen;      /* an outcome holds when its stamp equals it */
  struct {
    uint32_t stamp;
    uint64_t peak;
    double recompute;
  } *out;            /* per node and move */
};

mp__moves_memo_t *mp__moves_memo_new(const mp_graph_t *g) {
  mp__moves_memo_t *m = calloc(1, sizeof(*m));
  if (m == NULL) return NULL;
  m->n_slots = (g->n_nodes ? g->n_nodes : 1) * MP__MOVES_FAR;
  if ((m->out = calloc(m->n_slots, sizeof(*m->out))) == NULL) {
    free(m);
    return NULL;
  }
  return m;
}

void mp__moves_memo_free(mp__moves_memo_t *m) {
  if (m == NULL) return;
  mp_strategy_free(m->of);
  free(m->out);
  free(m);
}

/* Make m hold outcomes from s (none yet unless it did already). 0 or
 * MP_ENOMEM (m then holds none). */
static int mp__memo_on(mp__moves_memo_t *m, const mp_strategy_t *s) {
  size_t i;
  if (m->of != NULL && mp_strategy_equal(m->of, s)) return 0;
  mp_strategy_free(m->of);
  if (++m->gen == 0) { /* (wrapped: clear the stamps) */
    for (i = 0; i < m->n_slots; i++) m->out[i].stamp = 0;
    m->gen = 1;
  }
  return (m->of = mp_strategy_copy(s)) == NULL ? MP_ENOMEM : 0;
}

static int mp__refine_search(const mp_graph_t *g, const mp_plan_options_t *o,
                             const mp__refine_start_t *start, const mp__goal_t *goal,
                             mp__moves_memo_t *memo, mp__cand_t *out, mp_error_t *err) {
  static const int steps[MP__MOVES_FAR] = {-1, 1, -2, 2, -1, 1};
  mp__cand_t best;
  uint32_t *count = NULL, *mem = NULL;
  unsigned char *in = NULL;
  uint64_t work = 0, per = g->n_nodes ? g->n_nodes : 1;
  int far = goal->far, improved = 1, accepted = 0, rc = 0;
  size_t v;

  /* (*out is empty and start->strategy set: mp__cand_refine_least) */
  memset(&best, 0, sizeof(best));
  if ((best.strategy = mp_strategy_copy(start->strategy)) == NULL) goto nomem;
  if ((mem = malloc((g->n_nodes + 1) * sizeof(*mem))) == NULL) goto nomem;
  if ((in = calloc(g->n_nodes + 1, 1)) == NULL) goto nomem;
  best.sim.peak_bytes = start->peak;
  best.sim.time_recompute = start->recompute;
  if (memo != NULL && mp__memo_on(memo, best.strategy) != 0) goto nomem;
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
        size_t nm = 1, slot;
        mp_strategy_t *st;
        mp__cand_t c;
        if ((d < 0 && from < (uint32_t)-d) || (d > 0 && from + (uint32_t)d >= best.strategy->n_segments))
          continue;
        if (closure) {
          /* valid by construction; of one node it is the single move */
          if ((nm = mp__closure(g, best.strategy->seg, v, d < 0, mem, in)) < 2) continue;
        } else {
          /* the far peak search: until a move is taken, no single moves by
           * one segment (the start is the near search's plan, which none of
           * them lowers, unless that search stopped at the work limit) */
          if (far && goal->cap == 0 && !accepted && (d == 1 || d == -1)) continue;
          if (!mp__move_ok(g, best.strategy->seg, v, to)) continue;
          mem[0] = (uint32_t)v;
        }
        slot = v * MP__MOVES_FAR + (size_t)k;
        if (memo != NULL && memo->out[slot].stamp == memo->gen) {
          /* simulated from this strategy before: take its outcome, unless
           * the move is taken now (then it is simulated again below) */
          c.sim.peak_bytes = memo->out[slot].peak;
          c.sim.time_recompute = memo->out[slot].recompute;
          if (!mp__refine_better(&c, &best, goal)) {
            work += per;
            continue;
          }
        }
        if (o->should_stop != NULL && o->should_stop(o->stop_arg)) {
          rc = mp_error_set(err, MP_ECANCELED, "", "planning was cancelled");
          goto fail;
        }
        if ((st = mp__moved(best.strategy, count, mem, nm, from, to)) == NULL) goto nomem;
        if ((rc = mp__cand_make(g, o, st, &c, err)) != 0) goto fail;
        work += per;
        if (memo != NULL) {
          memo->out[slot].stamp = memo->gen;
          memo->out[slot].peak = c.sim.peak_bytes;
          memo->out[slot].recompute = c.sim.time_recompute;
        }
        if (mp__refine_better(&c, &best, goal)) {
          mp__cand_free(&best);
          best = c;
          improved = moved = accepted = 1;
          if ((rc = mp__refine_count(best.strategy, &count)) != 0) goto nomem;
          if (memo != NULL && mp__memo_on(memo, best.strategy) != 0) goto nomem;
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

/* The search toward `goal`, or its answer from the reuse book when the
 * plans of a frontier or a fit have run it from the same start (reuse.c).
 * The answer's candidate is simulated again: the same strategy simulates
 * the same. */
static int mp__refine_kept(const mp_graph_t *g, const mp_plan_options_t *o,
                           const mp__refine_start_t *start, const mp__goal_t *goal,
                           mp__moves_memo_t *memo, mp__cand_t *out, mp_error_t *err) {
  mp_strategy_t *found;
  int rc;
  memset(out, 0, sizeof(*out));
  if (start->strategy == NULL) return 0;
  rc = mp__reuse_refined_find(o->reuse, g, &o->device, start->strategy, goal->far, goal->cap, &found);
  if (rc == 1) return found ? mp__cand_make(g, o, found, out, err) : 0;
  if (rc != 0) return mp_error_set(err, rc, "", "out of memory");
  if ((rc = mp__refine_search(g, o, start, goal, memo, out, err)) != 0) return rc;
  mp__reuse_refined_keep(o->reuse, g, &o->device, start->strategy, goal->far, goal->cap, out->strategy);
  return 0;
}

int mp__cand_refine_least(const mp_graph_t *g, const mp_plan_options_t *o,
                          const mp__refine_start_t *start, int far, mp__cand_t *out, mp_error_t *err) {
  mp__goal_t goal;
  goal.far = far;
  goal.cap = 0;
  goal.floor = start->recompute;
  return mp__refine_kept(g, o, start, &goal, NULL, out, err);
}

int mp__cand_lower(const mp_graph_t *g, const mp_plan_options_t *o, const mp__refine_start_t *start,
                   uint64_t cap, mp__moves_memo_t *memo, mp__cand_t *out, mp_error_t *err) {
  mp__goal_t goal;
  goal.far = 1;
  goal.cap = cap ? cap : 1; /* (cap 0 would mean the peak goal; nothing peaks at 0) */
  goal.floor = 0;
  return mp__refine_kept(g, o, start, &goal, memo, out, err);
}
