/* schedule.c - the schedule container and the schedule builders: the liveness
 * pass (frees), the no-recomputation plan, the plan of a lower-set strategy
 * and the lower bound mp_min_budget. Validation and measurement live in
 * simulator.c; everything here only arranges steps.
 */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

static const char *const mp__step_op_names[MP_STEP_OP_COUNT] = {
    "compute", "recompute", "free", "backward", "swap_out", "swap_in", "wait"};

const char *mp_step_op_name(int op) {
  return op >= 0 && op < MP_STEP_OP_COUNT ? mp__step_op_names[op] : "?";
}

int mp_step_op_parse(const char *s, mp_step_op_t *out) {
  int i;
  for (i = 0; i < MP_STEP_OP_COUNT; i++)
    if (strcmp(s, mp__step_op_names[i]) == 0) {
      *out = (mp_step_op_t)i;
      return 0;
    }
  return MP_EINVAL;
}

mp_schedule_t *mp_schedule_new(void) { return calloc(1, sizeof(mp_schedule_t)); }

void mp_schedule_free(mp_schedule_t *s) {
  if (s == NULL) return;
  free(s->steps);
  free(s);
}

static int mp__schedule_reserve(mp_schedule_t *s, size_t want) {
  size_t cap;
  mp_step_t *p;
  if (want <= s->cap) return 0;
  cap = s->cap ? s->cap : 16;
  while (cap < want) {
    if (cap > SIZE_MAX / 2 / sizeof(mp_step_t)) return MP_ENOMEM;
    cap *= 2;
  }
  p = realloc(s->steps, cap * sizeof(mp_step_t));
  if (p == NULL) return MP_ENOMEM;
  s->steps = p;
  s->cap = cap;
  return 0;
}

int mp_schedule_push(mp_schedule_t *s, mp_step_op_t op, uint32_t node) {
  if (s->n_steps == SIZE_MAX || mp__schedule_reserve(s, s->n_steps + 1) != 0) return MP_ENOMEM;
  s->steps[s->n_steps].op = (uint8_t)op;
  s->steps[s->n_steps].node = node;
  s->n_steps++;
  return 0;
}

static int mp__is_act(const mp_graph_t *g, uint32_t v) {
  return v < g->n_nodes && g->nodes[v].kind == MP_KIND_ACTIVATION;
}

/* ---- Liveness ------------------------------------------------------------
 * One forward scan. For every activation v, last[v] is the index of the last
 * step so far that made or read the current instance of v's value (NONE when
 * there is no instance). When a compute/recompute/swap_in makes a new
 * instance, the old one (if any) dies after last[v]: that is a free event. A
 * swap_out ends the instance without an event: the copy takes the value and
 * returns its memory, so a free would be an error. At the end every
 * remaining instance dies after its last[v]. Events are then bucketed by step
 * with a counting sort, which keeps discovery order within a step. Each step
 * costs O(1 + in-degree of its node), so the pass is O(steps + edges) for
 * schedules that touch each node a bounded number of times. Wait steps read
 * nothing. */
#define MP__NONE SIZE_MAX

int mp__schedule_liveness(const mp_graph_t *g, const mp_schedule_t *s, size_t **free_off,
                          uint32_t **free_node) {
  size_t n = g->n_nodes, ns = s->n_steps, i, v, k, n_make = 0, n_ev = 0;
  size_t *last = NULL, *ev_step = NULL, *off = NULL, *fill = NULL;
  uint32_t *ev_node = NULL, *out_node = NULL;
  int rc = MP_ENOMEM;

  *free_off = NULL;
  *free_node = NULL;
  for (i = 0; i < ns; i++)
    if ((s->steps[i].op == MP_STEP_COMPUTE || s->steps[i].op == MP_STEP_RECOMPUTE ||
         s->steps[i].op == MP_STEP_SWAP_IN) &&
        mp__is_act(g, s->steps[i].node))
      n_make++;
  last = malloc((n ? n : 1) * sizeof(size_t));
  ev_step = malloc((n_make ? n_make : 1) * sizeof(size_t));
  ev_node = malloc((n_make ? n_make : 1) * sizeof(uint32_t));
  off = calloc(ns + 1, sizeof(size_t));
  fill = calloc(ns + 1, sizeof(size_t));
  out_node = malloc((n_make ? n_make : 1) * sizeof(uint32_t));
  if (!last || !ev_step || !ev_node || !off || !fill || !out_node) goto out;
  for (v = 0; v < n; v++) last[v] = MP__NONE;

  for (i = 0; i < ns; i++) {
    uint32_t w = s->steps[i].node;
    int op = s->steps[i].op;
    int reads_inputs = 0;
    if (!mp__is_act(g, w)) continue;
    if (op == MP_STEP_COMPUTE || op == MP_STEP_RECOMPUTE) {
      reads_inputs = 1;
    } else if (op == MP_STEP_BACKWARD) {
      mp_bwd_reads_t r = g->nodes[w].bwd_reads;
      reads_inputs = r == MP_BWD_READS_INPUTS || r == MP_BWD_READS_BOTH;
      if ((r == MP_BWD_READS_OUTPUT || r == MP_BWD_READS_BOTH) && last[w] != MP__NONE)
        last[w] = i;
    } else if (op == MP_STEP_SWAP_OUT) {
      last[w] = MP__NONE; /* no free for a value a copy takes */
      continue;
    } else if (op == MP_STEP_SWAP_IN) {
      if (last[w] != MP__NONE) { /* invalid (value present), the simulator says so */
        ev_step[n_ev] = last[w];
        ev_node[n_ev++] = w;
      }
      last[w] = i;
      continue;
    } else {
      continue; /* free, wait or unknown op: not ours to judge */
    }
    if (reads_inputs)
      for (k = g->pred_off[w]; k < g->pred_off[w + 1]; k++) {
        uint32_t u = g->pred[k];
        if (g->nodes[u].kind == MP_KIND_ACTIVATION && last[u] != MP__NONE) last[u] = i;
      }
    if (op == MP_STEP_COMPUTE || op == MP_STEP_RECOMPUTE) {
      if (last[w] != MP__NONE) {
        ev_step[n_ev] = last[w];
        ev_node[n_ev++] = w;
      }
      last[w] = i;
    }
  }
  for (v = 0; v < n; v++)
    if (last[v] != MP__NONE) {
      ev_step[n_ev] = last[v];
      ev_node[n_ev++] = (uint32_t)v;
    }
  /* n_ev <= n_make: every event ends an instance some step made. */
  for (k = 0; k < n_ev; k++) off[ev_step[k] + 1]++;
  for (i = 0; i < ns; i++) off[i + 1] += off[i];
  for (k = 0; k < n_ev; k++) out_node[off[ev_step[k]] + fill[ev_step[k]]++] = ev_node[k];
  *free_off = off;
  *free_node = out_node;
  off = NULL;
  out_node = NULL;
  rc = 0;
out:
  free(last);
  free(ev_step);
  free(ev_node);
  free(off);
  free(fill);
  free(out_node);
  return rc;
}

int mp_schedule_insert_frees(const mp_graph_t *g, mp_schedule_t *s) {
  size_t *off = NULL, i, k, j = 0, total;
  uint32_t *fn = NULL;
  mp_step_t *steps;
  int rc;
  if (g == NULL || !g->finalized || s == NULL) return MP_EINVAL;
  for (i = 0; i < s->n_steps; i++)
    if (s->steps[i].op == MP_STEP_FREE || s->steps[i].op >= MP_STEP_OP_COUNT ||
        s->steps[i].node >= g->n_nodes)
      return MP_EINVAL;
  rc = mp__schedule_liveness(g, s, &off, &fn);
  if (rc != 0) return rc;
  total = s->n_steps + off[s->n_steps];
  steps = malloc((total ? total : 1) * sizeof(mp_step_t));
  if (steps == NULL) {
    free(off);
    free(fn);
    return MP_ENOMEM;
  }
  for (i = 0; i < s->n_steps; i++) {
    steps[j++] = s->steps[i];
    for (k = off[i]; k < off[i + 1]; k++) {
      steps[j].op = MP_STEP_FREE;
      steps[j++].node = fn[k];
    }
  }
  free(s->steps);
  s->steps = steps;
  s->n_steps = s->cap = total;
  if (s->cap == 0) s->cap = 1;
  s->auto_free = 0;
  free(off);
  free(fn);
  return 0;
}

int mp_schedule_store_all(const mp_graph_t *g, mp_schedule_t **out) {
  mp_schedule_t *s;
  size_t v;
  int rc = 0;
  *out = NULL;
  if (g == NULL || !g->finalized) return MP_EINVAL;
  s = mp_schedule_new();
  if (s == NULL) return MP_ENOMEM;
  rc = mp__schedule_reserve(s, 3 * g->n_activations);
  for (v = 0; v < g->n_nodes && rc == 0; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION) rc = mp_schedule_push(s, MP_STEP_COMPUTE, (uint32_t)v);
  for (v = g->n_nodes; v > 0 && rc == 0; v--)
    if (g->nodes[v - 1].kind == MP_KIND_ACTIVATION)
      rc = mp_schedule_push(s, MP_STEP_BACKWARD, (uint32_t)(v - 1));
  if (rc == 0) rc = mp_schedule_insert_frees(g, s);
  if (rc != 0) {
    mp_schedule_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* ---- Strategy schedule ---------------------------------------------------
 * Nodes are bucketed by segment with a stable counting sort, so each bucket
 * is in topological order. For segment i the "needed" marks are stamped with
 * i + 1 (no clearing between segments): first what the segment's backward
 * steps read, then, walking the bucket backwards, the activation inputs of
 * every needed node that is not kept (it will be recomputed, so its inputs
 * must be present). Inputs in earlier segments are W nodes, hence kept, so
 * only nodes of segment i are ever recomputed, each at most once per
 * segment. Total work O(nodes + edges) plus the liveness pass. */
int mp_schedule_from_strategy(const mp_graph_t *g, const mp_strategy_t *st, mp_schedule_t **out) {
  size_t n, v, k, p;
  uint32_t nseg, i;
  uint8_t *kept = NULL;
  uint32_t *mark = NULL, *order = NULL;
  size_t *seg_off = NULL, *fill = NULL;
  mp_schedule_t *s = NULL;
  int rc = MP_ENOMEM;

  *out = NULL;
  if (g == NULL || !g->finalized || st == NULL || st->seg == NULL) return MP_EINVAL;
  if (mp_strategy_check(g, st, NULL) != 0 || st->n_segments == 0) return MP_EINVAL;
  n = g->n_nodes;
  nseg = st->n_segments;
  kept = calloc(n, 1);
  mark = calloc(n, sizeof(uint32_t));
  order = malloc(n * sizeof(uint32_t));
  seg_off = calloc((size_t)nseg + 1, sizeof(size_t));
  fill = calloc((size_t)nseg, sizeof(size_t));
  s = mp_schedule_new();
  if (!kept || !mark || !order || !seg_off || !fill || !s) goto out;

  for (v = 0; v < n; v++) {
    const mp_node_t *nd = &g->nodes[v];
    if (nd->kind != MP_KIND_ACTIVATION) continue;
    seg_off[st->seg[v] + 1]++;
    if (!nd->recompute || st->seg[v] == nseg - 1) {
      kept[v] = 1;
      continue;
    }
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
      uint32_t w = g->succ[k];
      if (g->nodes[w].kind == MP_KIND_ACTIVATION && st->seg[w] > st->seg[v]) {
        kept[v] = 1;
        break;
      }
    }
  }
  for (i = 0; i < nseg; i++) seg_off[i + 1] += seg_off[i];
  for (v = 0; v < n; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION)
      order[seg_off[st->seg[v]] + fill[st->seg[v]]++] = (uint32_t)v;

  /* The forward pass runs segment by segment (topological order within
   * each): while segment i is computed, only the kept values of earlier
   * segments and segment i's own values are live, which is what the DP's
   * step bound assumes. A global topological order could interleave
   * segments and hold the kept values of a later segment early. */
  rc = mp__schedule_reserve(s, 3 * g->n_activations);
  for (p = 0; p < seg_off[nseg] && rc == 0; p++) rc = mp_schedule_push(s, MP_STEP_COMPUTE, order[p]);

  for (i = nseg; i > 0 && rc == 0; i--) {
    uint32_t sg = i - 1, stamp = i;
    size_t lo = seg_off[sg], hi = seg_off[sg + 1];
    /* What the backward steps of the segment read. */
    for (p = lo; p < hi; p++) {
      uint32_t w = order[p];
      mp_bwd_reads_t r = g->nodes[w].bwd_reads;
      if (r == MP_BWD_READS_OUTPUT || r == MP_BWD_READS_BOTH) mark[w] = stamp;
      if (r == MP_BWD_READS_INPUTS || r == MP_BWD_READS_BOTH)
        for (k = g->pred_off[w]; k < g->pred_off[w + 1]; k++) mark[g->pred[k]] = stamp;
    }
    /* Close under "input of a needed recomputation". */
    for (p = hi; p > lo; p--) {
      uint32_t w = order[p - 1];
      if (mark[w] == stamp && !kept[w])
        for (k = g->pred_off[w]; k < g->pred_off[w + 1]; k++) mark[g->pred[k]] = stamp;
    }
    for (p = lo; p < hi && rc == 0; p++)
      if (mark[order[p]] == stamp && !kept[order[p]])
        rc = mp_schedule_push(s, MP_STEP_RECOMPUTE, order[p]);
    for (p = hi; p > lo && rc == 0; p--) rc = mp_schedule_push(s, MP_STEP_BACKWARD, order[p - 1]);
  }
  if (rc == 0) rc = mp_schedule_insert_frees(g, s);
  if (rc == 0) {
    *out = s;
    s = NULL;
  }
out:
  mp_schedule_free(s);
  free(kept);
  free(mark);
  free(order);
  free(seg_off);
  free(fill);
  return rc;
}

/* ---- Lower bound ---------------------------------------------------------
 * Claim: every schedule that mp_simulate accepts has a peak of at least
 * const_bytes + max_v max(F(v), B(v)), F and B as in schedule.h.
 * Proof. Constant memory is live at every moment. Every activation v is
 * computed exactly once (backward requires it, and every activation must be
 * backpropagated). At the transient moment of that compute step the values
 * of all of v's activation inputs are present (precondition), v's value has
 * just been allocated and its workspace is live: these are distinct buffers,
 * so live >= const + F(v); its saved bytes are live too, held or transient.
 * Every activation v is also backpropagated once. At
 * the transient moment of that step: v's gradient exists (seeded by the step
 * or created by the backward of a successor, and only freed after the step);
 * the gradient of every activation input u exists (created by this step or
 * earlier, and u's gradient is freed only by u's own backward, which must
 * come after v's since v is a successor of u); the values the step reads are
 * present (precondition); its workspace is live, and so are its saved bytes
 * (held by the last computation of v before this step, which exists since v
 * was computed). Values and gradients are
 * different buffers and the nodes involved are distinct, so live >=
 * const + B(v). The peak is the maximum over all such moments. */
int mp_min_budget(const mp_graph_t *g, uint64_t *out) {
  uint64_t best = 0;
  size_t v, k;
  *out = 0;
  if (g == NULL || !g->finalized) return MP_EINVAL;
  for (v = 0; v < g->n_nodes; v++) {
    const mp_node_t *nd = &g->nodes[v];
    uint64_t in = 0, fwd, bwd;
    int ov = 0;
    if (nd->kind != MP_KIND_ACTIVATION) continue;
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
      const mp_node_t *u = &g->nodes[g->pred[k]];
      if (u->kind == MP_KIND_ACTIVATION) ov |= __builtin_add_overflow(in, u->bytes, &in);
    }
    ov |= __builtin_add_overflow(in, nd->bytes, &fwd);
    ov |= __builtin_add_overflow(fwd, nd->workspace_bytes, &fwd);
    ov |= __builtin_add_overflow(fwd, nd->saved_bytes, &fwd);
    /* gradient of v + gradients of the inputs + workspace + saved bytes ... */
    ov |= __builtin_add_overflow(nd->bytes, in, &bwd);
    ov |= __builtin_add_overflow(bwd, nd->workspace_bytes, &bwd);
    ov |= __builtin_add_overflow(bwd, nd->saved_bytes, &bwd);
    /* ... + the values the backward reads */
    if (nd->bwd_reads == MP_BWD_READS_INPUTS || nd->bwd_reads == MP_BWD_READS_BOTH)
      ov |= __builtin_add_overflow(bwd, in, &bwd);
    if (nd->bwd_reads == MP_BWD_READS_OUTPUT || nd->bwd_reads == MP_BWD_READS_BOTH)
      ov |= __builtin_add_overflow(bwd, nd->bytes, &bwd);
    if (ov) return MP_EOVERFLOW;
    if (fwd > best) best = fwd;
    if (bwd > best) best = bwd;
  }
  if (__builtin_add_overflow(best, g->const_bytes, &best)) return MP_EOVERFLOW;
  *out = best;
  return 0;
}
