/* simulator.c - runs a schedule over a graph, checks every step against the
 * memory and timing model below, and measures peak device memory, the
 * timeline, the times, and for data migration the copies, the stalls and the
 * pinned host memory. Every figure memplan reports comes from here.
 *
 * The memory model
 * ----------------
 * Buffers. Constant memory (g->const_bytes: the graph's param_bytes plus the
 * bytes of every input/param node) is live from start to end. Input and param
 * nodes are never computed, freed, swapped or backpropagated and are always
 * readable; only activations appear in steps. An activation v has at most one
 * forward value (bytes(v)) and at most one gradient buffer (bytes(v)) at a
 * time, and at most one host copy (bytes(v) of pinned host memory).
 * Weight gradients are not modelled (count them in param_bytes).
 * Saved bytes. saved_bytes(v) is what v's operation stashes for its backward
 * beyond the values of its inputs and output (a dropout mask, max-pool
 * indices). The last compute or recompute of v before its backward step
 * allocates them and v's backward step frees them (after its transient
 * moment); any earlier computation of v, one that is recomputed before its
 * backward (a forward inside a recomputed segment), only holds them during
 * its own transient moment. They stay on the device when v is swapped out.
 *
 * Steps (live = device bytes of every present value and gradient, of values
 * whose swap-out copy has not ended yet, plus constants):
 *  compute v    v not computed before, no backward has run yet, the values of
 *               all activation inputs of v readable. Allocates v's value
 *               and, when this is v's last computation before its backward,
 *               saved(v); transient moment: live + workspace(v) (+ saved(v)
 *               when not held). Once per activation.
 *  recompute v  v computed before, v->recompute true, v's value absent, the
 *               values of all activation inputs readable. Same memory effect.
 *  free v       v's value present; drops it.
 *  backward v   v computed, not yet backpropagated, every activation
 *               successor of v already backpropagated (v's gradient is
 *               complete), and the values its bwd_reads names readable
 *               (inputs: all activation inputs; output: v itself; both;
 *               none). If v has no activation successor its gradient (the
 *               seed) is allocated by this step. The step allocates the
 *               gradient of each activation input that has none yet
 *               (accumulating into an existing one costs nothing); the
 *               transient moment is live + workspace(v); then v's gradient
 *               and saved(v) are freed and v is marked backpropagated.
 *  swap_out v   v's value present (possibly still arriving from a swap_in)
 *               and v has no host copy. Starts a device-to-host copy; from
 *               this step on v's value is neither readable nor freeable, but
 *               its device bytes stay allocated until the copy ends. bytes(v)
 *               of host memory are allocated at once; v now has a host copy.
 *  swap_in v    v has a host copy and its value is absent. Allocates bytes(v)
 *               on the device at once (counted in this step's live bytes) and
 *               starts a host-to-device copy; v's value is present again, and
 *               readable once the copy ends. The host copy is dropped; its
 *               host bytes are returned when the copy ends.
 *  wait v       the compute queue waits for every copy of v issued so far.
 *  At the end every activation must have been backpropagated.
 * "Readable" is "present", except that a value swapped out is not readable
 * (error: swap it in first) and a value being swapped in is readable with a
 * stall (below).
 *
 * The event model (data migration)
 * --------------------------------
 * One compute queue runs the steps in list order with a clock `now` starting
 * at 0. Copies run on copy queues: with device->copy_engines == 2 one for
 * swap-outs (D2H) and one for swap-ins (H2D); with 1 a single queue for both.
 * Each queue is FIFO in issue order. A copy of b bytes lasts
 * mp_device_copy_time(device, g, b, h2d) graph time units.
 *  - compute / recompute / backward: start = max(now, the ready time of every
 *    value the step reads that came back by swap_in); time_stall grows by
 *    start - now; the step lasts its time (bwd_time for backward) and now
 *    becomes start + duration.
 *  - free, swap_out, swap_in: instant at now (they only issue work).
 *  - swap_out v: issued at now; the copy starts at max(now, its queue free,
 *    v's ready time) and ends after its D2H duration.
 *  - swap_in v: the copy starts at max(now, its queue free, the end of v's
 *    last swap-out copy) and ends after its H2D duration: v's ready time.
 *  - wait v: start = max(now, the end of every copy of v issued so far);
 *    that difference is stall. Without any copy of v it does nothing.
 * Memory returned by a copy (the device bytes of a swap-out, the host bytes
 * of a swap-in) is applied at the first compute-queue step boundary at or
 * after the copy's end: before step i takes effect, once its start time is
 * known, every pending release with end <= start is applied. So a step's
 * transient moment still counts a swap-out that ends while it runs:
 * conservative and simple. Freeing a value whose swap-in has not landed yet
 * (a swap_in nothing reads) returns its device bytes when that copy ends, for
 * the same reason: the copy is still writing them.
 *
 * Intra-layer reuse (device->intra_layer_reuse, Layrub's intra-layer
 * strategy): in the backward step of w that creates the gradient of an
 * activation input u (the first backward of a successor of u), if u is
 * flagged grad_inplace, u's value is present and ready, and that step is the
 * last reader of u's value (auto_free: the liveness pass frees u right after
 * the step; explicit frees: a `free u` is among the free steps immediately
 * following it), the gradient takes the value's buffer: nothing is allocated
 * for it and the following free of the value releases nothing. It never
 * changes validity, only memory; n_reused counts it.
 *
 * Measures. timeline[i] = device live bytes after step i (and its automatic
 * frees); the peak is the maximum over the transient moments and the
 * after-step values (the first step reaching it is reported). Forward time =
 * sum of time over compute steps, recompute time = sum of time over recompute
 * steps, backward time = sum of bwd_time over backward steps. Without swap or
 * wait steps the total is exactly their sum (no stall is possible). With them
 * the total is the makespan max(now at the end, end of the last copy) and
 * overhead_pct = (total - forward - backward) / (forward + backward) * 100.
 * host_peak_bytes is the most host memory held at once (a host copy never
 * swapped in is held to the end). Byte counts are uint64 with overflow
 * checks. The host budget of the device is not enforced here: the planner
 * compares host_peak_bytes with it.
 *
 * auto_free. A schedule flagged auto_free lists no frees; the liveness pass
 * (mp__schedule_liveness) decides them up front and they are applied right
 * after the step they follow, inside that step's timeline entry, so indices
 * stay those of the schedule as written. A value ended by a swap_out gets no
 * free; a value brought back by swap_in is a new one, freed after its last
 * reader like a recomputed value.
 *
 * Cost: each step is O(1 + in-degree of its node), plus O(out-degree) only
 * on the error path, plus O(log copies) per copy for the pending releases (a
 * binary heap ordered by end time). State per node: a byte of flags, a
 * pending-successor count and, only for schedules with swap or wait steps,
 * three times; with intra-layer reuse one step stamp.
 */
#include "simulator.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_caching.h"

enum {
  MP__F_COMPUTED = 1,
  MP__F_PRESENT = 2,  /* the value is allocated and may be read or freed */
  MP__F_GRAD = 4,
  MP__F_DONE = 8,
  MP__F_RECOMPUTED = 16,
  MP__F_HOST = 32,    /* a host copy exists (swapped out, not swapped in since) */
  MP__F_SWAPPED = 64, /* swapped out at least once (the report's list) */
  MP__F_ALIASED = 128 /* the value's buffer now holds its gradient: its free
                       * releases nothing (intra-layer reuse) */
};

/* Memory a copy returns when it ends: device bytes (a swap-out's value) or
 * host bytes (a swap-in's host copy). */
typedef struct mp__release_s {
  double t;
  uint64_t bytes;
  int host;
  int64_t block; /* the caching allocator's block it returns, -1: none */
} mp__release_t;

typedef struct mp__sim_s {
  const mp_graph_t *g;
  const mp_schedule_t *s;
  mp_error_t *err;
  const mp_device_t *dev;
  uint8_t *flags;
  uint32_t *pending; /* activation successors not yet backpropagated */
  uint64_t live;
  uint64_t peak;
  size_t peak_step;

  /* Event timing. The per-node arrays exist only for schedules with swap or
   * wait steps (NULL otherwise: every value is ready, no copy exists). */
  double now, stall;
  double *ready;    /* when v's current value is readable (end of its swap-in) */
  double *out_end;  /* end of v's last swap-out copy */
  double *copy_end; /* end of v's last copy, either direction */
  double queue[2];  /* when each copy queue is free: [0] D2H or the only one, [1] H2D */
  double last_end;  /* end of the last copy */
  double t_d2h, t_h2d;
  uint64_t host_live, host_peak;
  uint64_t bytes_out, bytes_in;
  size_t n_out, n_in;
  mp__release_t *heap; /* pending releases, a min-heap on t */
  size_t n_heap, cap_heap;

  /* Intra-layer reuse: dead_after[u] == i + 1 when a free of u follows step i
   * (NULL when reuse is off). */
  size_t *dead_after;
  size_t n_reused;

  /* Saved bytes: hold_at[v] == i + 1 when step i is v's last computation
   * before its backward (NULL when no node has saved_bytes). */
  size_t *hold_at;

  /* The pytorch-cuda allocator (device.h): the caching allocator's model
   * (cuda_caching.h), fed every allocation and free, for the reserved peak;
   * the blocks of each node's value, gradient and saved bytes (-1: none).
   * NULL under the exact allocator. */
  mp_cuda_caching_t *ca;
  int64_t *blk_val, *blk_grad, *blk_saved;
  uint64_t ca_const;  /* the model's allocated bytes of the constant memory */
} mp__sim_t;

/* The device bytes of a tensor of `b` bytes under the device's allocator
 * (device.h: rounded up to 512-byte blocks under pytorch-cuda). */
static uint64_t mp__sz(const mp__sim_t *sm, uint64_t b) { return mp_device_alloc_size(sm->dev, b); }

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

/* The caching allocator's model (when on): a block for `bytes` into *blk. */
static int mp__ca_take(mp__sim_t *sm, size_t i, uint64_t bytes, int64_t *blk) {
  int rc;
  if (sm->ca == NULL) return 0;
  if ((rc = mp_cuda_caching_malloc(sm->ca, bytes, blk)) != 0)
    return mp__step_error(sm, rc, i, rc == MP_ENOMEM ? "out of memory" : "reserved bytes overflow 64 bits");
  return 0;
}

/* Return *blk to the model (when on). */
static void mp__ca_give(mp__sim_t *sm, int64_t *blk) {
  if (sm->ca == NULL) return;
  mp_cuda_caching_release(sm->ca, *blk);
  *blk = -1;
}

/* A moment's temporaries (workspace, saved bytes of a computation that
 * does not hold them): taken and given back at once. */
static int mp__ca_moment(mp__sim_t *sm, size_t i, uint64_t a, uint64_t b) {
  int64_t x = -1, y = -1;
  int rc;
  if (sm->ca == NULL) return 0;
  if ((rc = mp__ca_take(sm, i, a, &x)) == 0) rc = mp__ca_take(sm, i, b, &y);
  mp__ca_give(sm, &y);
  mp__ca_give(sm, &x);
  return rc;
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

static double mp__ready(const mp__sim_t *sm, uint32_t v) { return sm->ready ? sm->ready[v] : 0; }

/* ---- Pending releases (binary min-heap on end time) ---------------------- */

static int mp__release_push(mp__sim_t *sm, double t, uint64_t bytes, int host, int64_t block) {
  size_t k;
  if (sm->n_heap == sm->cap_heap) {
    size_t cap = sm->cap_heap ? 2 * sm->cap_heap : 16;
    mp__release_t *p = realloc(sm->heap, cap * sizeof(*p));
    if (p == NULL) return MP_ENOMEM;
    sm->heap = p;
    sm->cap_heap = cap;
  }
  k = sm->n_heap++;
  while (k > 0 && sm->heap[(k - 1) / 2].t > t) {
    sm->heap[k] = sm->heap[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  sm->heap[k].t = t;
  sm->heap[k].bytes = bytes;
  sm->heap[k].host = host;
  sm->heap[k].block = block;
  return 0;
}

/* Apply every pending release that ends at or before t. Each release was
 * counted when its bytes were allocated, so the subtractions cannot wrap. */
static void mp__release_until(mp__sim_t *sm, double t) {
  while (sm->n_heap > 0 && sm->heap[0].t <= t) {
    mp__release_t top = sm->heap[0], last = sm->heap[--sm->n_heap];
    size_t k = 0;
    if (top.host) {
      sm->host_live -= top.bytes;
    } else {
      sm->live -= top.bytes;
      mp__ca_give(sm, &top.block);
    }
    if (sm->n_heap == 0) break;
    for (;;) {
      size_t c = 2 * k + 1;
      if (c >= sm->n_heap) break;
      if (c + 1 < sm->n_heap && sm->heap[c + 1].t < sm->heap[c].t) c++;
      if (sm->heap[c].t >= last.t) break;
      sm->heap[k] = sm->heap[c];
      k = c;
    }
    sm->heap[k] = last;
  }
}

/* The compute queue reaches a step boundary at time `start` (>= now): idle
 * time is stall, and memory returned by copies ended by then is applied. */
static void mp__begin(mp__sim_t *sm, double start) {
  if (start > sm->now) {
    sm->stall += start - sm->now;
    sm->now = start;
  }
  if (sm->n_heap > 0) mp__release_until(sm, sm->now);
}

/* Drop v's value (a free step, explicit or automatic). */
static int mp__drop_value(mp__sim_t *sm, uint32_t v) {
  uint8_t *f = &sm->flags[v];
  *f &= (uint8_t)~MP__F_PRESENT;
  if (*f & MP__F_ALIASED) { /* the buffer now belongs to v's gradient */
    *f &= (uint8_t)~MP__F_ALIASED;
    return 0;
  }
  if (mp__ready(sm, v) > sm->now) { /* a swap-in still writes the buffer */
    int64_t blk = sm->blk_val ? sm->blk_val[v] : -1;
    if (sm->blk_val) sm->blk_val[v] = -1;
    return mp__release_push(sm, sm->ready[v], mp__sz(sm, sm->g->nodes[v].bytes), 0, blk);
  }
  sm->live -= mp__sz(sm, sm->g->nodes[v].bytes);
  if (sm->ca) mp__ca_give(sm, &sm->blk_val[v]);
  return 0;
}

/* Is u's value readable? 0, or an error naming it (`what` is "input 'x'" or
 * "its own output"; `why` is appended). Raises *ready to u's ready time. */
static int mp__readable(mp__sim_t *sm, size_t i, uint32_t u, const char *what, const char *why,
                        double *ready) {
  const char *id = sm->g->nodes[u].id;
  if (!(sm->flags[u] & MP__F_PRESENT)) {
    if (sm->flags[u] & MP__F_HOST)
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "the value of %s'%.200s' was swapped out (it must be swapped in "
                            "first)%s",
                            what, id, why);
    return mp__step_error(sm, MP_ESCHEDULE, i, "%s'%.200s' is not in memory%s", what, id, why);
  }
  if (mp__ready(sm, u) > *ready) *ready = sm->ready[u];
  return 0;
}

/* Every activation input of v readable? Names the first that is not. */
static int mp__inputs_readable(mp__sim_t *sm, size_t i, uint32_t v, const char *why,
                               double *ready) {
  const mp_graph_t *g = sm->g;
  size_t k;
  int rc;
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    if (g->nodes[u].kind == MP_KIND_ACTIVATION &&
        (rc = mp__readable(sm, i, u, "input ", why, ready)) != 0)
      return rc;
  }
  return 0;
}

static int mp__do_forward(mp__sim_t *sm, size_t i, uint32_t v, int re, long first_bwd) {
  const mp_node_t *nd = &sm->g->nodes[v];
  uint8_t *f = &sm->flags[v];
  double start = sm->now;
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
  if ((rc = mp__inputs_readable(sm, i, v, "", &start)) != 0) return rc;
  mp__begin(sm, start);
  if ((rc = mp__alloc(sm, i, mp__sz(sm, nd->bytes))) != 0) return rc;
  if (sm->ca && (rc = mp__ca_take(sm, i, nd->bytes, &sm->blk_val[v])) != 0) return rc;
  if (nd->saved_bytes == 0) {
    if ((rc = mp__moment(sm, i, mp__sz(sm, nd->workspace_bytes))) != 0) return rc;
    if ((rc = mp__ca_moment(sm, i, nd->workspace_bytes, 0)) != 0) return rc;
  } else if (sm->hold_at[v] == i + 1) {
    if ((rc = mp__alloc(sm, i, mp__sz(sm, nd->saved_bytes))) != 0) return rc;
    if (sm->ca && (rc = mp__ca_take(sm, i, nd->saved_bytes, &sm->blk_saved[v])) != 0) return rc;
    if ((rc = mp__moment(sm, i, mp__sz(sm, nd->workspace_bytes))) != 0) return rc;
    if ((rc = mp__ca_moment(sm, i, nd->workspace_bytes, 0)) != 0) return rc;
  } else {
    uint64_t extra;
    if (__builtin_add_overflow(mp__sz(sm, nd->workspace_bytes), mp__sz(sm, nd->saved_bytes), &extra))
      return mp__step_error(sm, MP_EOVERFLOW, i, "workspace plus saved bytes overflow 64 bits");
    if ((rc = mp__moment(sm, i, extra)) != 0) return rc;
    if ((rc = mp__ca_moment(sm, i, nd->saved_bytes, nd->workspace_bytes)) != 0) return rc;
  }
  *f |= MP__F_PRESENT | (re ? MP__F_RECOMPUTED : MP__F_COMPUTED);
  if (sm->ready) sm->ready[v] = 0; /* made by the compute queue: ready for every later step */
  sm->now += nd->time;
  return 0;
}

static int mp__do_backward(mp__sim_t *sm, size_t i, uint32_t v) {
  const mp_graph_t *g = sm->g;
  const mp_node_t *nd = &g->nodes[v];
  uint8_t *f = &sm->flags[v];
  double start = sm->now;
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
    if ((rc = mp__inputs_readable(sm, i, v, " (its backward reads its inputs)", &start)) != 0)
      return rc;
  if (nd->bwd_reads == MP_BWD_READS_OUTPUT || nd->bwd_reads == MP_BWD_READS_BOTH) {
    if (!(*f & MP__F_PRESENT)) {
      if (*f & MP__F_HOST)
        return mp__step_error(sm, MP_ESCHEDULE, i,
                              "its own output was swapped out (it must be swapped in first; "
                              "its backward reads its output)");
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "its own output is not in memory (its backward reads its output)");
    }
    if (mp__ready(sm, v) > start) start = sm->ready[v];
  }
  mp__begin(sm, start);
  /* The seed: only a node without activation successors lacks a gradient
   * here, since each successor's backward created it. */
  if (!(*f & MP__F_GRAD)) {
    if ((rc = mp__alloc(sm, i, mp__sz(sm, nd->bytes))) != 0) return rc;
    if (sm->ca && (rc = mp__ca_take(sm, i, nd->bytes, &sm->blk_grad[v])) != 0) return rc;
    *f |= MP__F_GRAD;
  }
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    uint8_t *fu = &sm->flags[u];
    if (g->nodes[u].kind != MP_KIND_ACTIVATION || (*fu & MP__F_GRAD)) continue;
    /* Intra-layer reuse: the value is dead after this step (its free
     * follows), so the new gradient may take its buffer. */
    if (sm->dead_after && g->nodes[u].grad_inplace && sm->dead_after[u] == i + 1 &&
        (*fu & MP__F_PRESENT) && !(*fu & MP__F_ALIASED) && mp__ready(sm, u) <= sm->now) {
      *fu |= MP__F_GRAD | MP__F_ALIASED;
      sm->n_reused++;
      if (sm->ca) { /* the gradient takes the value's block */
        sm->blk_grad[u] = sm->blk_val[u];
        sm->blk_val[u] = -1;
      }
      continue;
    }
    if ((rc = mp__alloc(sm, i, mp__sz(sm, g->nodes[u].bytes))) != 0) return rc;
    if (sm->ca && (rc = mp__ca_take(sm, i, g->nodes[u].bytes, &sm->blk_grad[u])) != 0) return rc;
    *fu |= MP__F_GRAD;
  }
  if ((rc = mp__moment(sm, i, mp__sz(sm, nd->workspace_bytes))) != 0) return rc;
  if ((rc = mp__ca_moment(sm, i, nd->workspace_bytes, 0)) != 0) return rc;
  sm->live -= mp__sz(sm, nd->bytes);
  /* v is computed (checked above), so its last computation before this step
   * holds the saved bytes. */
  sm->live -= mp__sz(sm, nd->saved_bytes);
  if (sm->ca) {
    mp__ca_give(sm, &sm->blk_grad[v]);
    mp__ca_give(sm, &sm->blk_saved[v]);
  }
  *f = (uint8_t)((*f & ~MP__F_GRAD) | MP__F_DONE);
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
    uint32_t u = g->pred[k];
    if (g->nodes[u].kind == MP_KIND_ACTIVATION) sm->pending[u]--;
  }
  sm->now += nd->bwd_time;
  return 0;
}

static int mp__do_free(mp__sim_t *sm, size_t i, uint32_t v) {
  uint8_t f = sm->flags[v];
  mp__begin(sm, sm->now);
  if (!(f & MP__F_PRESENT)) {
    if (f & MP__F_HOST)
      return mp__step_error(sm, MP_ESCHEDULE, i,
                            "the value of '%.200s' was swapped out (its device memory is "
                            "returned when the copy ends; it cannot be freed)",
                            sm->g->nodes[v].id);
    return mp__step_error(sm, MP_ESCHEDULE, i, "the value of '%.200s' is not in memory",
                          sm->g->nodes[v].id);
  }
  if (mp__drop_value(sm, v) != 0) return mp__step_error(sm, MP_ENOMEM, i, "out of memory");
  return 0;
}

/* Queue a copy of `bytes` in direction h2d, not starting before `after`;
 * returns its end and accounts its duration. */
static double mp__copy(mp__sim_t *sm, uint32_t v, uint64_t bytes, int h2d, double after) {
  int q = sm->dev->copy_engines == 2 && h2d ? 1 : 0;
  double dur = mp_device_copy_time(sm->dev, sm->g, bytes, h2d);
  double start = sm->now, end;
  if (sm->queue[q] > start) start = sm->queue[q];
  if (after > start) start = after;
  end = start + dur;
  sm->queue[q] = end;
  if (end > sm->copy_end[v]) sm->copy_end[v] = end;
  if (end > sm->last_end) sm->last_end = end;
  if (h2d)
    sm->t_h2d += dur;
  else
    sm->t_d2h += dur;
  return end;
}

static int mp__do_swap_out(mp__sim_t *sm, size_t i, uint32_t v) {
  const mp_node_t *nd = &sm->g->nodes[v];
  uint8_t *f = &sm->flags[v];
  double end;
  mp__begin(sm, sm->now);
  if (!(*f & MP__F_PRESENT)) {
    if (*f & MP__F_HOST)
      return mp__step_error(sm, MP_ESCHEDULE, i, "the value of '%.200s' is already swapped out",
                            nd->id);
    return mp__step_error(sm, MP_ESCHEDULE, i, "the value of '%.200s' is not in memory", nd->id);
  }
  if (*f & MP__F_HOST)
    return mp__step_error(sm, MP_ESCHEDULE, i,
                          "'%.200s' already has a host copy (one host copy per node at a time)",
                          nd->id);
  if (__builtin_add_overflow(sm->host_live, nd->bytes, &sm->host_live))
    return mp__step_error(sm, MP_EOVERFLOW, i, "host bytes overflow 64 bits");
  if (__builtin_add_overflow(sm->bytes_out, nd->bytes, &sm->bytes_out))
    return mp__step_error(sm, MP_EOVERFLOW, i, "swapped-out bytes overflow 64 bits");
  if (sm->host_live > sm->host_peak) sm->host_peak = sm->host_live;
  /* A value still arriving from a swap-in is copied out once it has landed. */
  end = mp__copy(sm, v, nd->bytes, 0, sm->ready[v]);
  sm->out_end[v] = end;
  *f = (uint8_t)((*f & ~MP__F_PRESENT) | MP__F_HOST | MP__F_SWAPPED);
  sm->n_out++;
  /* The device bytes stay allocated until the copy ends. */
  if (mp__release_push(sm, end, mp__sz(sm, nd->bytes), 0, sm->blk_val ? sm->blk_val[v] : -1) != 0)
    return mp__step_error(sm, MP_ENOMEM, i, "out of memory");
  if (sm->blk_val) sm->blk_val[v] = -1;
  return 0;
}

static int mp__do_swap_in(mp__sim_t *sm, size_t i, uint32_t v) {
  const mp_node_t *nd = &sm->g->nodes[v];
  uint8_t *f = &sm->flags[v];
  int rc;
  mp__begin(sm, sm->now);
  if (*f & MP__F_PRESENT)
    return mp__step_error(sm, MP_ESCHEDULE, i, "the value of '%.200s' is already in memory",
                          nd->id);
  if (!(*f & MP__F_HOST))
    return mp__step_error(sm, MP_ESCHEDULE, i,
                          "'%.200s' has no host copy (swap_in needs an earlier swap_out)", nd->id);
  if (__builtin_add_overflow(sm->bytes_in, nd->bytes, &sm->bytes_in))
    return mp__step_error(sm, MP_EOVERFLOW, i, "swapped-in bytes overflow 64 bits");
  if ((rc = mp__alloc(sm, i, mp__sz(sm, nd->bytes))) != 0) return rc;
  if (sm->ca && (rc = mp__ca_take(sm, i, nd->bytes, &sm->blk_val[v])) != 0) return rc;
  if ((rc = mp__moment(sm, i, 0)) != 0) return rc;
  sm->ready[v] = mp__copy(sm, v, nd->bytes, 1, sm->out_end[v]);
  *f = (uint8_t)((*f & ~MP__F_HOST) | MP__F_PRESENT);
  sm->n_in++;
  /* The host copy is released when the copy has read it. */
  if (mp__release_push(sm, sm->ready[v], nd->bytes, 1, -1) != 0)
    return mp__step_error(sm, MP_ENOMEM, i, "out of memory");
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
  mp_device_t defdev;
  size_t n, ns, i, v, k, *free_off = NULL, n_rec = 0, n_swp = 0;
  uint32_t *free_node = NULL;
  uint64_t *timeline = NULL;
  uint32_t *recomputed = NULL, *swapped = NULL;
  double t_fwd = 0, t_bwd = 0, t_rec = 0;
  long first_bwd = -1;
  size_t n_rec_steps = 0, n_frees = 0;
  int rc = 0, timed = 0;

  memset(out, 0, sizeof(*out));
  mp_error_clear(err);
  if (g == NULL || !g->finalized || s == NULL)
    return mp_error_set(err, MP_EINVAL, "", "simulate needs a finalized graph and a schedule");
  memset(&sm, 0, sizeof(sm));
  if (opt != NULL && opt->device != NULL) {
    if ((rc = mp_device_check(opt->device, err)) != 0) return rc;
    sm.dev = opt->device;
  } else {
    mp_device_init(&defdev);
    sm.dev = &defdev;
  }
  n = g->n_nodes;
  ns = s->n_steps;
  sm.g = g;
  sm.s = s;
  sm.err = err;
  if (mp_device_const_bytes(sm.dev, g, &sm.live) != 0)
    return mp_error_set(err, MP_EOVERFLOW, "", "constant bytes overflow 64 bits under the allocator's rounding");
  sm.peak = sm.live;
  sm.flags = calloc(n, 1);
  sm.pending = malloc(n * sizeof(uint32_t));
  timeline = malloc((ns ? ns : 1) * sizeof(uint64_t));
  if (!sm.flags || !sm.pending || !timeline) goto nomem;
  if (sm.dev->allocator == MP_ALLOCATOR_PYTORCH_CUDA) {
    int64_t blk;
    int crc = 0;
    sm.ca = malloc(sizeof(*sm.ca));
    sm.blk_val = malloc(n * sizeof(int64_t));
    sm.blk_grad = malloc(n * sizeof(int64_t));
    sm.blk_saved = malloc(n * sizeof(int64_t));
    if (!sm.ca || !sm.blk_val || !sm.blk_grad || !sm.blk_saved) goto nomem;
    mp_cuda_caching_init(sm.ca);
    for (v = 0; v < n; v++) sm.blk_val[v] = sm.blk_grad[v] = sm.blk_saved[v] = -1;
    /* the constant memory, held throughout: param_bytes as one block, then
     * each input and parameter node */
    crc = mp_cuda_caching_malloc(sm.ca, g->param_bytes, &blk);
    for (v = 0; v < n && crc == 0; v++)
      if (g->nodes[v].kind != MP_KIND_ACTIVATION) crc = mp_cuda_caching_malloc(sm.ca, g->nodes[v].bytes, &blk);
    if (crc == MP_ENOMEM) goto nomem;
    if (crc != 0) {
      rc = mp_error_set(err, crc, "", "constant bytes overflow 64 bits in the caching allocator's reserve");
      goto out;
    }
    sm.ca_const = sm.ca->allocated;
  }
  for (v = 0; v < n; v++) {
    uint32_t c = 0;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
      if (g->nodes[g->succ[k]].kind == MP_KIND_ACTIVATION) c++;
    sm.pending[v] = c;
  }
  for (i = 0; i < ns && !timed; i++)
    timed = s->steps[i].op >= MP_STEP_SWAP_OUT && s->steps[i].op < MP_STEP_OP_COUNT;
  if (timed) {
    sm.ready = calloc(n, sizeof(double));
    sm.out_end = calloc(n, sizeof(double));
    sm.copy_end = calloc(n, sizeof(double));
    if (!sm.ready || !sm.out_end || !sm.copy_end) goto nomem;
  }
  if (sm.dev->intra_layer_reuse) {
    sm.dead_after = calloc(n, sizeof(size_t));
    if (sm.dead_after == NULL) goto nomem;
  }
  if (g->saved_bytes > 0) {
    /* Which computation of each node holds its saved bytes: the last one
     * before its first backward step. Steps naming bad nodes are skipped here
     * and reported by the main loop. */
    uint8_t *bwd_seen = calloc(n, 1);
    sm.hold_at = calloc(n, sizeof(size_t));
    if (bwd_seen == NULL || sm.hold_at == NULL) {
      free(bwd_seen);
      goto nomem;
    }
    for (i = 0; i < ns; i++) {
      const mp_step_t *st = &s->steps[i];
      if (st->node >= n) continue;
      if (st->op == MP_STEP_BACKWARD)
        bwd_seen[st->node] = 1;
      else if ((st->op == MP_STEP_COMPUTE || st->op == MP_STEP_RECOMPUTE) && !bwd_seen[st->node])
        sm.hold_at[st->node] = i + 1;
    }
    free(bwd_seen);
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
    if (st->op >= MP_STEP_OP_COUNT) {
      rc = mp__step_error(&sm, MP_ESCHEDULE, i, "unknown op %u", (unsigned)st->op);
      goto out;
    }
    if (node >= n) {
      rc = mp__step_error(&sm, MP_ESCHEDULE, i, "node index %u is out of range (%zu nodes)",
                          (unsigned)node, n);
      goto out;
    }
    if (g->nodes[node].kind != MP_KIND_ACTIVATION) {
      const char *kind = g->nodes[node].kind == MP_KIND_INPUT ? "an input" : "a param";
      if (st->op >= MP_STEP_SWAP_OUT)
        rc = mp__step_error(&sm, MP_ESCHEDULE, i,
                            "'%.200s' is %s node: inputs and params are constant memory that "
                            "stays on the device, never swapped",
                            g->nodes[node].id, kind);
      else
        rc = mp__step_error(&sm, MP_ESCHEDULE, i,
                            "'%.200s' is %s node: inputs and params are constant memory, never "
                            "computed, freed or backpropagated",
                            g->nodes[node].id, kind);
      goto out;
    }
    /* Intra-layer reuse needs to know which values die right after this
     * backward step: stamp the frees that follow it. Each free step is
     * stamped once, by the step it follows. */
    if (sm.dead_after && st->op == MP_STEP_BACKWARD) {
      if (free_off) {
        for (k = free_off[i]; k < free_off[i + 1]; k++) sm.dead_after[free_node[k]] = i + 1;
      } else {
        for (k = i + 1; k < ns && s->steps[k].op == MP_STEP_FREE; k++)
          if (s->steps[k].node < n) sm.dead_after[s->steps[k].node] = i + 1;
      }
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
      rc = mp__do_free(&sm, i, node);
      n_frees++;
      break;
    case MP_STEP_BACKWARD:
      rc = mp__do_backward(&sm, i, node);
      t_bwd += g->nodes[node].bwd_time;
      if (first_bwd < 0) first_bwd = (long)i;
      break;
    case MP_STEP_SWAP_OUT:
      rc = mp__do_swap_out(&sm, i, node);
      break;
    case MP_STEP_SWAP_IN:
      rc = mp__do_swap_in(&sm, i, node);
      break;
    default: /* MP_STEP_WAIT */
      mp__begin(&sm, sm.copy_end[node]);
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
        if (mp__drop_value(&sm, f) != 0) goto nomem;
        n_frees++;
      }
    timeline[i] = sm.live;
  }
  /* Every copy has ended by the makespan: return what is still pending. */
  mp__release_until(&sm, INFINITY);

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
      !isfinite(t_fwd + t_bwd + t_rec) || !isfinite(sm.now) || !isfinite(sm.last_end) ||
      !isfinite(sm.t_d2h) || !isfinite(sm.t_h2d)) {
    rc = mp_error_set(err, MP_EOVERFLOW, "$.steps", "total time is not a finite number");
    goto out;
  }

  for (v = 0; v < n; v++) {
    if (sm.flags[v] & MP__F_RECOMPUTED) n_rec++;
    if (sm.flags[v] & MP__F_SWAPPED) n_swp++;
  }
  recomputed = malloc((n_rec ? n_rec : 1) * sizeof(uint32_t));
  swapped = malloc((n_swp ? n_swp : 1) * sizeof(uint32_t));
  if (recomputed == NULL || swapped == NULL) goto nomem;
  for (v = 0, k = 0; v < n; v++)
    if (sm.flags[v] & MP__F_RECOMPUTED) recomputed[k++] = (uint32_t)v;
  for (v = 0, k = 0; v < n; v++)
    if (sm.flags[v] & MP__F_SWAPPED) swapped[k++] = (uint32_t)v;

  out->peak_bytes = sm.peak;
  out->peak_step = sm.peak_step;
  mp_device_const_bytes(sm.dev, g, &out->const_bytes); /* checked at the start */
  out->reserved_peak_bytes = sm.ca ? sm.ca->peak_reserved : 0;
  if (sm.ca && sm.live == out->const_bytes && sm.n_heap == 0 && sm.ca->allocated != sm.ca_const) {
    /* every tensor was freed, so every block must be back: a planner bug */
    rc = mp_error_set(err, MP_ESCHEDULE, "$.steps",
                      "internal: the caching allocator's model holds %llu bytes past the constant memory at "
                      "the end", (unsigned long long)(sm.ca->allocated - sm.ca_const));
    memset(out, 0, sizeof(*out));
    goto out;
  }
  out->time_forward = t_fwd;
  out->time_backward = t_bwd;
  out->time_recompute = t_rec;
  if (!timed) {
    /* No copy and no wait: nothing can stall, and the figures are the sums
     * exactly as they always were. */
    out->time_total = t_fwd + t_bwd + t_rec;
    out->overhead_pct = t_fwd + t_bwd > 0 ? t_rec / (t_fwd + t_bwd) * 100.0 : 0.0;
  } else {
    double total = sm.now > sm.last_end ? sm.now : sm.last_end, extra = total - t_fwd - t_bwd;
    out->time_total = total;
    /* now sums the same durations in step order, so without recomputation
     * or stall extra may be a rounding error below 0. */
    out->overhead_pct = t_fwd + t_bwd > 0 && extra > 0 ? extra / (t_fwd + t_bwd) * 100.0 : 0.0;
  }
  out->n_steps = ns;
  out->timeline = timeline;
  out->n_recompute_steps = n_rec_steps;
  out->n_recomputed = n_rec;
  out->recomputed = recomputed;
  out->n_frees = n_frees;
  out->time_stall = sm.stall;
  out->time_copy_d2h = sm.t_d2h;
  out->time_copy_h2d = sm.t_h2d;
  out->n_swap_out = sm.n_out;
  out->n_swap_in = sm.n_in;
  out->bytes_swapped_out = sm.bytes_out;
  out->bytes_swapped_in = sm.bytes_in;
  out->host_peak_bytes = sm.host_peak;
  out->n_reused = sm.n_reused;
  out->n_swapped = n_swp;
  out->swapped = swapped;
  timeline = NULL;
  recomputed = NULL;
  swapped = NULL;
  rc = 0;
  goto out;

nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
out:
  mp_cuda_caching_free(sm.ca);
  free(sm.ca);
  free(sm.blk_val);
  free(sm.blk_grad);
  free(sm.blk_saved);
  free(sm.flags);
  free(sm.pending);
  free(sm.ready);
  free(sm.out_end);
  free(sm.copy_end);
  free(sm.heap);
  free(sm.dead_after);
  free(sm.hold_at);
  free(free_off);
  free(free_node);
  free(timeline);
  free(recomputed);
  free(swapped);
  return rc;
}
