/* simulator.c - runs a schedule over a graph, checks every step against the
 * memory model below, and measures peak memory, the timeline and the times.
 * Every figure memplan reports comes from here.
 *
 * The memory model
 * ----------------
 * Buffers. Constant memory (g->const_bytes: the graph's param_bytes plus the
 * bytes of every input/param node) is live from start to end. Input and param
 * nodes are never computed, freed or backpropagated and are always readable;
 * only activations appear in steps. An activation v has at most one forward
 * value (bytes(v)) and at most one gradient buffer (bytes(v)) at a time.
 * Weight gradients are not modelled (count them in param_bytes).
 *
 * Steps (live = bytes of every present value and gradient, plus constants):
 *  compute v    v not computed before, no backward has run yet, the values of
 *               all activation inputs of v present. Allocates v's value;
 *               transient moment: live + workspace(v). Once per activation.
 *  recompute v  v computed before, v->recompute true, v's value absent, the
 *               values of all activation inputs present. Same memory effect.
 *  free v       v's value present; drops it.
 *  backward v   v computed, not yet backpropagated, every activation
 *               successor of v already backpropagated (v's gradient is
 *               complete), and the values its bwd_reads names present
 *               (inputs: all activation inputs; output: v itself; both;
 *               none). If v has no activation successor its gradient (the
 *               seed) is allocated by this step. The step allocates the
 *               gradient of each activation input that has none yet
 *               (accumulating into an existing one costs nothing); the
 *               transient moment is live + workspace(v); then v's gradient
 *               is freed and v is marked backpropagated.
 *  At the end every activation must have been backpropagated.
 *
 * Measures. timeline[i] = live after step i; the peak is the maximum over
 * the transient moments and the after-step values (the first step reaching
 * it is reported). Forward time = sum of time over compute steps, recompute
 * time = sum of time over recompute steps, backward time = sum of bwd_time
 * over backward steps. Byte counts are uint64 with overflow checks.
 *
 * auto_free. A schedule flagged auto_free lists no frees; the liveness pass
 * (mp__schedule_liveness) decides them up front and they are applied right
 * after the step they follow, inside that step's timeline entry, so indices
 * stay those of the schedule as written.
 *
 * Cost: each step is O(1 + in-degree of its node), plus O(out-degree) only
 * on the error path; state is a byte of flags and a pending-successor count
 * per node.
 */
#include "simulator.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  MP__F_COMPUTED = 1,
  MP__F_PRESENT = 2,
  MP__F_GRAD = 4,
  MP__F_DONE = 8,
  MP__F_RECOMPUTED = 16
};

typedef struct mp__sim_s {
  const mp_graph_t *g;
  const mp_schedule_t *s;
  mp_error_t *err;
  uint8_t *flags;
  uint32_t *pending; /* activation successors not yet backpropagated */
  uint64_t live;
  uint64_t peak;
  size_t peak_step;
} mp__sim_t;

/* Error for step i: "step i (op 'node'): reason" at "$.steps[i]". */
static int mp__step_error(mp__sim_t *sm, int code, size_t i, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int mp__step_error(mp__sim_t *sm, int code, size_t i, const char *fmt, ...) {
  char reason[MP_ERROR_MSG_MAX], path[64], name[32];
  const mp_step_t *st = &sm->s->steps[i];
  const char *id = name;
  va_list ap;
  if (sm->err == NULL) return code;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  if (st->node < sm->g->n_nodes)
    id = sm->g->nodes[st->node].id;
  else
    snprintf(name, sizeof(name), "#%u", (unsigned)st->node);
  snprintf(path, sizeof(path), "$.steps[%zu]", i);
  return mp_error_set(sm->err, code, path, "step %zu (%s '%.200s'): %s", i,
                      mp_step_op_name(st->op), id, reason);
}

static int mp__alloc(mp__sim_t *sm, size_t i, uint64_t bytes) {
  if (__builtin_add_overflow(sm->live, bytes, &sm->live))
    return mp__step_error(sm, MP_EOVERFLOW, i, "live bytes overflow 64 bits");
  return 0;
}

/* Note the moment live + extra as a peak candidate. */
static int mp__moment(mp__sim_t *sm, size_t i, uint64_t extra) {
  uint64_t x;
  if (__builtin_add_overflow(sm->live, extra, &x))
    return mp__step_error(sm, MP_EOVERFLOW, i, "live bytes plus workspace overflow 64 bits");
  if (x > sm->peak) {
    sm->peak = x;
    sm->peak_step = i;
  }
  return 0;
}

/* Every activation input of v present? Names the first missing one. */
static int mp__inputs_present(mp__sim_t *sm, size_t i, uint32_t v, const char *why) {
  const mp_graph_t *g = sm->g;
  size_t k;
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    if (g->nodes[u].kind == MP_KIND_ACTIVATION && !(sm->flags[u] & MP__F_PRESENT))
      return mp__step_error(sm, MP_ESCHEDULE, i, "input '%.200s' is not in memory%s",
                            g->nodes[u].id, why);
  }
  return 0;
}

static int mp__do_forward(mp__sim_t *sm, size_t i, uint32_t v, int re, long first_bwd) {
  const mp_node_t *nd = &sm->g->nodes[v];
  uint8_t *f = &sm->flags[v];
  int rc;
  if (!re) {
    if (*f & MP__F_COMPUTED)
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "'%.200s' is already computed (compute runs once per activation; "
                            "use recompute)",
                            nd->id);
    if (first_bwd >= 0)
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "compute after the backward pass began at step %ld (every compute "
                            "must come before the first backward)",
                            first_bwd);
  } else {
    if (!(*f & MP__F_COMPUTED))
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "'%.200s' has not been computed yet (recompute needs an earlier "
                            "compute)",
                            nd->id);
    if (!nd->recompute)
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "node '%.200s' is marked recompute:false and must not be recomputed",
                            nd->id);
    if (*f & MP__F_PRESENT)
      return mp__step_error(sm, MP_ESCHEDULE, i, "the value of '%.200s' is already in memory",
                            nd->id);
  }
  if ((rc = mp__inputs_present(sm, i, v, "")) != 0) return rc;
  if ((rc = mp__alloc(sm, i, nd->bytes)) != 0) return rc;
  if ((rc = mp__moment(sm, i, nd->workspace_bytes)) != 0) return rc;
  *f |= MP__F_PRESENT | (re ? MP__F_RECOMPUTED : MP__F_COMPUTED);
  return 0;
}

static int mp__do_backward(mp__sim_t *sm, size_t i, uint32_t v) {
  const mp_graph_t *g = sm->g;
  const mp_node_t *nd = &g->nodes[v];
  uint8_t *f = &sm->flags[v];
  size_t k;
  int rc;
  if (!(*f & MP__F_COMPUTED))
    return mp__step_error(sm, MP_ESCHEDULE, i, "'%.200s' was never computed", nd->id);
  if (*f & MP__F_DONE)
    return mp__step_error(sm, MP_ESCHEDULE, i, "'%.200s' is already backpropagated", nd->id);
  if (sm->pending[v] > 0) {
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
      uint32_t w = g->succ[k];
      if (g->nodes[w].kind == MP_KIND_ACTIVATION && !(sm->flags[w] & MP__F_DONE)) break;
    }
    return mp__step_error(sm, MP_ESCHEDULE, i,
                          "successor '%.200s' has not been backpropagated yet (the gradient of "
                          "'%.200s' is incomplete)",
                          g->nodes[g->succ[k]].id, nd->id);
  }
  if (nd->bwd_reads == MP_BWD_READS_INPUTS || nd->bwd_reads == MP_BWD_READS_BOTH)
    if ((rc = mp__inputs_present(sm, i, v, " (its backward reads its inputs)")) != 0) return rc;
  if ((nd->bwd_reads == MP_BWD_READS_OUTPUT || nd->bwd_reads == MP_BWD_READS_BOTH) &&
      !(*f & MP__F_PRESENT))
    return mp__step_error(sm, MP_ESCHEDULE, i,
                          "its own output is not in memory (its backward reads its output)");
  /* The seed: only a node without activation successors lacks a gradient
   * here, since each successor's backward created it. */
  if (!(*f & MP__F_GRAD)) {
    if ((rc = mp__alloc(sm, i, nd->bytes)) != 0) return rc;
    *f |= MP__F_GRAD;
  }
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    if (g->nodes[u].kind != MP_KIND_ACTIVATION || (sm->flags[u] & MP__F_GRAD)) continue;
    if ((rc = mp__alloc(sm, i, g->nodes[u].bytes)) != 0) return rc;
    sm->flags[u] |= MP__F_GRAD;
  }
  if ((rc = mp__moment(sm, i, nd->workspace_bytes)) != 0) return rc;
  sm->live -= nd->bytes;
  *f = (uint8_t)((*f & ~MP__F_GRAD) | MP__F_DONE);
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    if (g->nodes[u].kind == MP_KIND_ACTIVATION) sm->pending[u]--;
  }
  return 0;
}

void mp_sim_report_free(mp_sim_report_t *r) {
  if (r == NULL) return;
  free(r->timeline);
  free(r->recomputed);
  free(r->swapped);
  memset(r, 0, sizeof(*r));
}

int mp_simulate(const mp_graph_t *g, const mp_schedule_t *s, mp_sim_report_t *out,
                mp_error_t *err) {
  return mp_simulate_ex(g, s, NULL, out, err);
}

int mp_simulate_ex(const mp_graph_t *g, const mp_schedule_t *s, const mp_sim_options_t *opt,
                   mp_sim_report_t *out, mp_error_t *err) {
  mp__sim_t sm;
  size_t n, ns, i, v, k, *free_off = NULL, n_rec = 0;
  uint32_t *free_node = NULL;
  uint64_t *timeline = NULL;
  uint32_t *recomputed = NULL;
  double t_fwd = 0, t_bwd = 0, t_rec = 0;
  long first_bwd = -1;
  size_t n_rec_steps = 0, n_frees = 0;
  int rc = 0;

  (void)opt; /* the event model for swap steps is not built yet */
  memset(out, 0, sizeof(*out));
  mp_error_clear(err);
  if (g == NULL || !g->finalized || s == NULL)
    return mp_error_set(err, MP_EINVAL, "", "simulate needs a finalized graph and a schedule");
  n = g->n_nodes;
  ns = s->n_steps;
  memset(&sm, 0, sizeof(sm));
  sm.g = g;
  sm.s = s;
  sm.err = err;
  sm.live = g->const_bytes;
  sm.peak = g->const_bytes;
  sm.flags = calloc(n, 1);
  sm.pending = malloc(n * sizeof(uint32_t));
  timeline = malloc((ns ? ns : 1) * sizeof(uint64_t));
  if (!sm.flags || !sm.pending || !timeline) goto nomem;
  for (v = 0; v < n; v++) {
    uint32_t c = 0;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
      if (g->nodes[g->succ[k]].kind == MP_KIND_ACTIVATION) c++;
    sm.pending[v] = c;
  }
  if (s->auto_free) {
    for (i = 0; i < ns; i++)
      if (s->steps[i].op == MP_STEP_FREE) {
        rc = mp__step_error(&sm, MP_ESCHEDULE, i,
                            "explicit free in an auto_free schedule (the simulator inserts the "
                            "frees)");
        goto out;
      }
    if (mp__schedule_liveness(g, s, &free_off, &free_node) != 0) goto nomem;
  }

  for (i = 0; i < ns; i++) {
    const mp_step_t *st = &s->steps[i];
    uint32_t node = st->node;
    if (st->op > MP_STEP_BACKWARD) { /* swap steps: the event model is not built yet */
      rc = mp__step_error(&sm, MP_ESCHEDULE, i, "unknown op %u", (unsigned)st->op);
      goto out;
    }
    if (node >= n) {
      rc = mp__step_error(&sm, MP_ESCHEDULE, i, "node index %u is out of range (%zu nodes)",
                          (unsigned)node, n);
      goto out;
    }
    if (g->nodes[node].kind != MP_KIND_ACTIVATION) {
      rc = mp__step_error(&sm, MP_ESCHEDULE, i,
                          "'%.200s' is %s node: inputs and params are constant memory, never "
                          "computed, freed or backpropagated",
                          g->nodes[node].id,
                          g->nodes[node].kind == MP_KIND_INPUT ? "an input" : "a param");
      goto out;
    }
    switch (st->op) {
    case MP_STEP_COMPUTE:
      rc = mp__do_forward(&sm, i, node, 0, first_bwd);
      t_fwd += g->nodes[node].time;
      break;
    case MP_STEP_RECOMPUTE:
      rc = mp__do_forward(&sm, i, node, 1, first_bwd);
      t_rec += g->nodes[node].time;
      n_rec_steps++;
      break;
    case MP_STEP_FREE:
      if (!(sm.flags[node] & MP__F_PRESENT)) {
        rc = mp__step_error(&sm, MP_ESCHEDULE, i, "the value of '%.200s' is not in memory",
                            g->nodes[node].id);
        break;
      }
      sm.flags[node] &= (uint8_t)~MP__F_PRESENT;
      sm.live -= g->nodes[node].bytes;
      n_frees++;
      break;
    default: /* MP_STEP_BACKWARD */
      rc = mp__do_backward(&sm, i, node);
      t_bwd += g->nodes[node].bwd_time;
      if (first_bwd < 0) first_bwd = (long)i;
      break;
    }
    if (rc != 0) goto out;
    if (free_off)
      for (k = free_off[i]; k < free_off[i + 1]; k++) {
        uint32_t f = free_node[k];
        /* Cannot fail for a schedule valid so far; checked all the same. */
        if (!(sm.flags[f] & MP__F_PRESENT)) {
          rc = mp__step_error(&sm, MP_ESCHEDULE, i, "internal: auto free of absent '%.200s'",
                              g->nodes[f].id);
          goto out;
        }
        sm.flags[f] &= (uint8_t)~MP__F_PRESENT;
        sm.live -= g->nodes[f].bytes;
        n_frees++;
      }
    timeline[i] = sm.live;
  }

  {
    size_t missing = 0, first = 0;
    for (v = 0; v < n; v++)
      if (g->nodes[v].kind == MP_KIND_ACTIVATION && !(sm.flags[v] & MP__F_DONE)) {
        if (missing++ == 0) first = v;
      }
    if (missing > 0) {
      if (missing == 1)
        rc = mp_error_set(err, MP_ESCHEDULE, "$.steps", "node '%.200s' never backpropagated",
                          g->nodes[first].id);
      else
        rc = mp_error_set(err, MP_ESCHEDULE, "$.steps",
                          "node '%.200s' never backpropagated (and %zu more)",
                          g->nodes[first].id, missing - 1);
      goto out;
    }
  }
  if (!isfinite(t_fwd) || !isfinite(t_bwd) || !isfinite(t_rec) ||
      !isfinite(t_fwd + t_bwd + t_rec)) {
    rc = mp_error_set(err, MP_EOVERFLOW, "$.steps", "total time is not a finite number");
    goto out;
  }

  for (v = 0; v < n; v++)
    if (sm.flags[v] & MP__F_RECOMPUTED) n_rec++;
  recomputed = malloc((n_rec ? n_rec : 1) * sizeof(uint32_t));
  if (recomputed == NULL) goto nomem;
  for (v = 0, k = 0; v < n; v++)
    if (sm.flags[v] & MP__F_RECOMPUTED) recomputed[k++] = (uint32_t)v;

  out->peak_bytes = sm.peak;
  out->peak_step = sm.peak_step;
  out->const_bytes = g->const_bytes;
  out->time_forward = t_fwd;
  out->time_backward = t_bwd;
  out->time_recompute = t_rec;
  out->time_total = t_fwd + t_bwd + t_rec;
  out->overhead_pct = t_fwd + t_bwd > 0 ? t_rec / (t_fwd + t_bwd) * 100.0 : 0.0;
  out->n_steps = ns;
  out->timeline = timeline;
  out->n_recompute_steps = n_rec_steps;
  out->n_recomputed = n_rec;
  out->recomputed = recomputed;
  out->n_frees = n_frees;
  timeline = NULL;
  recomputed = NULL;
  rc = 0;
  goto out;

nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
out:
  free(sm.flags);
  free(sm.pending);
  free(free_off);
  free(free_node);
  free(timeline);
  free(recomputed);
  return rc;
}
