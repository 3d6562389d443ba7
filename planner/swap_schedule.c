/* swap_schedule.c - the schedule of a per-activation keep / swap /
 * recompute decision (swap.h: mp_schedule_from_residency): the forward pass
 * with its swap-outs (and waits), the backward pass with the
 * recomputations each step needs, and the swap-ins placed just in time or
 * at a fixed lookahead; with, on request, the estimates of where and when
 * each step and copy runs (mp__res_info_t) that the swap greedy ranks its
 * moves by. Also the migration plan (mp__mig_t) that the three migration
 * solvers (swap_greedy.c, hybrid.c, layrub.c) build and hand back as a plan
 * result (mp__mig_adopt).
 */
#include "swap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE MP__RES_NONE

void mp_residency_options_init(mp_residency_options_t *o) { memset(o, 0, sizeof(*o)); }

void mp__res_info_free(mp__res_info_t *info) {
  if (info == NULL) return;
  free(info->t_start);
  free(info->ord);
  free(info->block_start);
  free(info->bord);
  free(info->eff);
  free(info->pos_compute);
  free(info->pos_last_fwd);
  free(info->pos_swap_out);
  free(info->pos_swap_in);
  free(info->pos_first_bwd);
  free(info->pos_last_bwd);
  free(info->d2h_end);
  free(info->d2h_free);
  free(info->h2d_end);
  free(info->h2d_busy);
  free(info->pos_rec1);
  free(info->pos_rec2);
  free(info->rd_off);
  free(info->rd);
  memset(info, 0, sizeof(*info));
}

void mp__bwd_reads_each(const mp_graph_t *g, uint32_t v, void (*fn)(void *, uint32_t),
                        void *arg) {
  mp_bwd_reads_t r = g->nodes[v].bwd_reads;
  size_t k;
  if (r == MP_BWD_READS_INPUTS || r == MP_BWD_READS_BOTH)
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
      if (g->nodes[g->pred[k]].kind == MP_KIND_ACTIVATION) fn(arg, g->pred[k]);
  if (r == MP_BWD_READS_OUTPUT || r == MP_BWD_READS_BOTH) fn(arg, v);
}

/* Compute-queue duration of a step (swap, wait and free steps only issue). */
static double mp__step_dur(const mp_graph_t *g, uint8_t op, uint32_t v) {
  if (op == MP_STEP_COMPUTE || op == MP_STEP_RECOMPUTE) return g->nodes[v].time;
  if (op == MP_STEP_BACKWARD) return g->nodes[v].bwd_time;
  return 0;
}

static int mp__is_act(const mp_graph_t *g, uint32_t v) {
  return g->nodes[v].kind == MP_KIND_ACTIVATION;
}

/* ---- The builder ----------------------------------------------------------
 * Pass 1 lays out the backward pass without swap-ins: per backward step (a
 * "block"), the recomputations it needs, then the step; it records where
 * each value is first and last read. Pass 2 places the swap-ins in that
 * sequence (lookahead or just in time). Pass 3 emits the forward part and
 * merges the swap-ins into the backward part, and estimates the times and
 * copy queues the greedy ranks candidates with. */

typedef struct {
  uint32_t node;
  size_t need; /* pass-1 index of its first reader */
  size_t pos;  /* pass-1 index it is issued before */
} mp__swin_t;

static int mp__swin_by_need_desc(const void *a, const void *b) {
  const mp__swin_t *x = a, *y = b;
  if (x->need != y->need) return x->need < y->need ? 1 : -1;
  return x->node < y->node ? 1 : (x->node > y->node ? -1 : 0);
}

static int mp__swin_by_pos(const void *a, const void *b) {
  const mp__swin_t *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  if (x->need != y->need) return x->need < y->need ? -1 : 1;
  return x->node < y->node ? -1 : (x->node > y->node ? 1 : 0);
}

static int mp__u32_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

typedef struct {
  const mp_graph_t *g;
  const uint8_t *dec;
  uint8_t *present;  /* the value is (or is queued to be) on the device */
  uint8_t *split;    /* past its remat_from point: recomputed from now on */
  size_t *first, *last, *swneed;
  size_t pos;        /* pass-1 index of the reading step */
  uint32_t *stack;
  size_t n_stack;
  uint32_t *list;
  size_t n_list;
  /* Every backward-time read, as (node, pass-1 index) pairs. */
  uint32_t *rd_node;
  size_t *rd_pos;
  size_t n_rd, cap_rd;
  int nomem;
} mp__p1_t;

/* A backward-time read of u by the step at p->pos. */
static void mp__p1_note(void *arg, uint32_t u) {
  mp__p1_t *p = arg;
  if (p->first[u] == NONE) p->first[u] = p->pos;
  p->last[u] = p->pos;
  if (p->dec[u] == MP_RES_SWAP && !p->split[u] && p->swneed[u] == NONE) p->swneed[u] = p->pos;
  if (p->n_rd == p->cap_rd) {
    size_t nc = p->cap_rd ? 2 * p->cap_rd : 1024;
    uint32_t *nn = realloc(p->rd_node, nc * sizeof(uint32_t));
    size_t *np;
    if (nn == NULL) {
      p->nomem = 1;
      return;
    }
    p->rd_node = nn;
    np = realloc(p->rd_pos, nc * sizeof(size_t));
    if (np == NULL) {
      p->nomem = 1;
      return;
    }
    p->rd_pos = np;
    p->cap_rd = nc;
  }
  p->rd_node[p->n_rd] = u;
  p->rd_pos[p->n_rd++] = p->pos;
}

/* Queue u for recomputation if it must be re-materialised. */
static void mp__p1_want(void *arg, uint32_t u) {
  mp__p1_t *p = arg;
  if ((p->dec[u] == MP_RES_RECOMPUTE || p->split[u]) && !p->present[u]) {
    p->present[u] = 1;
    p->stack[p->n_stack++] = u;
  }
}

/* The builder's state, from the checked arguments to the emitted schedule:
 * each step below fills some of it for the next. */
typedef struct {
  const mp_graph_t *g;
  const uint8_t *dec;
  const mp_residency_options_t *o;
  const mp_device_t *dev;
  size_t n, n_act;
  /* per node */
  uint32_t *bord;       /* backward ordinal (UINT32_MAX: not an activation) */
  uint32_t *lfr;        /* last forward reader (itself when none) */
  uint8_t *eff;         /* effective decision (after pass 1) */
  size_t *rec1, *rec2;  /* pass-1 index of its first and second recompute */
  /* values re-materialised from backward step a on: sp[sp_off[a] .. sp_off[a+1]) */
  size_t *sp_off;
  uint32_t *sp;
  /* pass 1: the backward sequence, len steps, blk[a] the first of step a's */
  mp__p1_t p1;
  uint8_t *seq_op;
  uint32_t *seq_node, *seq_ord;
  size_t len, cap_seq, *blk;
  double *tb;           /* estimated start of each pass-1 step, and the end */
  /* pass 2: the swap-ins, sorted by where they are issued */
  mp__swin_t *sw;
  size_t n_sw;
  /* pass 3: swap-outs by last forward reader, waits by the step they precede */
  size_t *bucket_off, *wb_off;
  uint32_t *bucket, *wb;
  size_t *m_of;         /* pass-1 index -> step of the emitted schedule */
  size_t fwd_len;       /* emitted steps of the forward part */
} mp__rb_t;

/* The arguments a schedule can be built from: known decisions, and no
 * recomputation of a recompute:false node. */
static int mp__rb_check(const mp_graph_t *g, const uint8_t *decision, const mp_residency_options_t *o,
                        mp_error_t *err) {
  size_t v;
  for (v = 0; v < g->n_nodes; v++) {
    if (!mp__is_act(g, (uint32_t)v)) continue;
    if (decision[v] > MP_RES_RECOMPUTE)
      return mp_error_set(err, MP_EINVAL, "", "$.decisions[%zu]: unknown decision %u", v,
                          (unsigned)decision[v]);
    if ((decision[v] == MP_RES_RECOMPUTE || (o->remat_from && o->remat_from[v] != 0)) &&
        !g->nodes[v].recompute)
      return mp_error_set(err, MP_EINVAL, "",
                          "$.decisions[%zu]: node '%.200s' is recompute:false and cannot be "
                          "recomputed",
                          v, g->nodes[v].id);
  }
  return 0;
}

static void mp__rb_free(mp__rb_t *b) {
  free(b->bord);
  free(b->lfr);
  free(b->eff);
  free(b->p1.present);
  free(b->p1.split);
  free(b->p1.swneed);
  free(b->p1.rd_node);
  free(b->p1.rd_pos);
  free(b->rec1);
  free(b->rec2);
  free(b->sp_off);
  free(b->sp);
  free(b->p1.first);
  free(b->p1.last);
  free(b->p1.stack);
  free(b->p1.list);
  free(b->seq_op);
  free(b->seq_node);
  free(b->seq_ord);
  free(b->blk);
  free(b->tb);
  free(b->sw);
  free(b->bucket_off);
  free(b->bucket);
  free(b->wb_off);
  free(b->wb);
  free(b->m_of);
}

/* Every array the passes use. 0 or MP_ENOMEM. */
static int mp__rb_alloc(mp__rb_t *b) {
  size_t n = b->n, n_act = b->n_act;
  /* A value is recomputed at most twice: once as RECOMPUTE, once past its
   * remat_from point. */
  b->cap_seq = 3 * n_act + 1;
  b->bord = malloc(n * sizeof(uint32_t));
  b->lfr = malloc(n * sizeof(uint32_t));
  b->eff = calloc(n, 1);
  b->p1.present = calloc(n, 1);
  b->p1.split = calloc(n, 1);
  b->p1.swneed = malloc(n * sizeof(size_t));
  b->rec1 = malloc(n * sizeof(size_t));
  b->rec2 = malloc(n * sizeof(size_t));
  b->sp_off = calloc(n_act + 2, sizeof(size_t));
  b->sp = malloc((n ? n : 1) * sizeof(uint32_t));
  b->p1.first = malloc(n * sizeof(size_t));
  b->p1.last = malloc(n * sizeof(size_t));
  b->p1.stack = malloc(n * sizeof(uint32_t));
  b->p1.list = malloc(n * sizeof(uint32_t));
  b->seq_op = malloc(b->cap_seq);
  b->seq_node = malloc(b->cap_seq * sizeof(uint32_t));
  b->seq_ord = malloc(b->cap_seq * sizeof(uint32_t));
  b->blk = malloc((n_act + 1) * sizeof(size_t));
  b->tb = malloc((b->cap_seq + 1) * sizeof(double));
  b->sw = malloc((n_act ? n_act : 1) * sizeof(mp__swin_t));
  b->bucket_off = calloc(n + 1, sizeof(size_t));
  b->bucket = malloc((n ? n : 1) * sizeof(uint32_t));
  b->wb_off = calloc(n + n_act + 1, sizeof(size_t));
  b->wb = malloc((n ? n : 1) * sizeof(uint32_t));
  b->m_of = malloc(b->cap_seq * sizeof(size_t));
  if (!b->bord || !b->lfr || !b->eff || !b->p1.present || !b->p1.first || !b->p1.last || !b->p1.stack ||
      !b->p1.list || !b->seq_op || !b->seq_node || !b->seq_ord || !b->blk || !b->tb || !b->sw ||
      !b->bucket_off || !b->bucket || !b->m_of || !b->wb_off || !b->wb || !b->p1.split || !b->p1.swneed ||
      !b->rec1 || !b->rec2 || !b->sp_off || !b->sp)
    return MP_ENOMEM;
  b->p1.g = b->g;
  b->p1.dec = b->dec;
  return 0;
}

/* Backward ordinals, last forward readers, what is on the device when the
 * backward pass starts, and the values re-materialised from each backward
 * step on (remat_from), bucketed by that step. 0 or MP_ENOMEM. */
static int mp__rb_prepare(mp__rb_t *b) {
  const mp_graph_t *g = b->g;
  size_t n = b->n, n_act = b->n_act, v, k;
  uint32_t ordc = 0;
  for (v = n; v > 0; v--) {
    uint32_t w = (uint32_t)(v - 1);
    b->bord[w] = mp__is_act(g, w) ? ordc++ : UINT32_MAX;
  }
  for (v = 0; v < n; v++) {
    uint32_t last = (uint32_t)v;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
      if (mp__is_act(g, g->succ[k]) && g->succ[k] > last) last = g->succ[k];
    b->lfr[v] = last;
    b->p1.first[v] = b->p1.last[v] = b->p1.swneed[v] = b->rec1[v] = b->rec2[v] = NONE;
    if (mp__is_act(g, (uint32_t)v) && b->dec[v] == MP_RES_KEEP) b->p1.present[v] = 1;
  }
  if (b->o->remat_from) {
    const uint32_t *rf = b->o->remat_from;
    size_t *fill = calloc(n_act + 1, sizeof(size_t));
    if (fill == NULL) return MP_ENOMEM;
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) && rf[v] != 0 && rf[v] < n_act) b->sp_off[rf[v] + 1]++;
    for (k = 0; k < n_act; k++) b->sp_off[k + 1] += b->sp_off[k];
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) && rf[v] != 0 && rf[v] < n_act)
        b->sp[b->sp_off[rf[v]] + fill[rf[v]]++] = (uint32_t)v;
    free(fill);
  }
  return 0;
}

/* Pass 1: the backward sequence without swap-ins. Per backward step, in the
 * order they run, the recomputations it needs (ascending, so each after the
 * values it reads) and then the step; every backward-time read is noted.
 * 0 or MP_ENOMEM. */
static int mp__rb_pass1(mp__rb_t *b) {
  const mp_graph_t *g = b->g;
  mp__p1_t *p1 = &b->p1;
  size_t v, k, q;
  for (v = b->n; v > 0; v--) {
    uint32_t w = (uint32_t)(v - 1), ordw;
    if (!mp__is_act(g, w)) continue;
    ordw = b->bord[w];
    b->blk[ordw] = b->len;
    for (k = b->sp_off[ordw]; k < b->sp_off[ordw + 1]; k++) {
      p1->split[b->sp[k]] = 1;
      p1->present[b->sp[k]] = 0;
    }
    p1->n_stack = p1->n_list = 0;
    mp__bwd_reads_each(g, w, mp__p1_want, p1);
    while (p1->n_stack > 0) {
      uint32_t x = p1->stack[--p1->n_stack];
      p1->list[p1->n_list++] = x;
      for (k = g->pred_off[x]; k < g->pred_off[x + 1]; k++)
        if (mp__is_act(g, g->pred[k])) mp__p1_want(p1, g->pred[k]);
    }
    /* Inputs have smaller indices: ascending order recomputes each value
     * after everything it reads. */
    if (p1->n_list > 1) qsort(p1->list, p1->n_list, sizeof(uint32_t), mp__u32_cmp);
    for (q = 0; q < p1->n_list; q++) {
      uint32_t x = p1->list[q];
      p1->pos = b->len;
      for (k = g->pred_off[x]; k < g->pred_off[x + 1]; k++)
        if (mp__is_act(g, g->pred[k])) mp__p1_note(p1, g->pred[k]);
      if (b->rec1[x] == NONE) b->rec1[x] = b->len;
      else b->rec2[x] = b->len;
      b->seq_op[b->len] = MP_STEP_RECOMPUTE;
      b->seq_node[b->len] = x;
      b->seq_ord[b->len++] = ordw;
    }
    p1->pos = b->len;
    mp__bwd_reads_each(g, w, mp__p1_note, p1);
    b->seq_op[b->len] = MP_STEP_BACKWARD;
    b->seq_node[b->len] = w;
    b->seq_ord[b->len++] = ordw;
  }
  b->blk[b->n_act] = b->len;
  return p1->nomem ? MP_ENOMEM : 0;
}

/* The effective decisions (moving a value nothing reads later is
 * pointless) and the estimated start times of the pass-1 steps, after the
 * forward pass. */
static void mp__rb_effective(mp__rb_t *b) {
  const mp_graph_t *g = b->g;
  size_t v, i;
  double t = 0;
  for (v = 0; v < b->n; v++)
    if (mp__is_act(g, (uint32_t)v))
      b->eff[v] = b->p1.swneed[v] != NONE ? MP_RES_SWAP
                  : b->rec1[v] != NONE    ? MP_RES_RECOMPUTE
                                          : MP_RES_KEEP;
  for (v = 0; v < b->n; v++)
    if (mp__is_act(g, (uint32_t)v)) t += g->nodes[v].time;
  for (i = 0; i < b->len; i++) {
    b->tb[i] = t;
    t += mp__step_dur(g, b->seq_op[i], b->seq_node[i]);
  }
  b->tb[b->len] = t;
}

/* Pass 2, just in time: latest first, each copy ends by its reader's start
 * and before the next copy (in time) starts, i.e. an as-late-as-possible
 * FIFO; each swap-in is issued at the last pass-1 step that starts by then. */
static void mp__rb_place_jit(mp__rb_t *b) {
  double qfree = INFINITY;
  size_t j;
  qsort(b->sw, b->n_sw, sizeof(*b->sw), mp__swin_by_need_desc);
  for (j = 0; j < b->n_sw; j++) {
    mp__swin_t *x = &b->sw[j];
    double fin = b->tb[x->need] < qfree ? b->tb[x->need] : qfree;
    double st = fin - mp_device_copy_time(b->dev, b->g, b->g->nodes[x->node].bytes, 1);
    size_t lo = 0, hi = x->need; /* largest i in [0, need] with tb[i] <= st */
    qfree = st;
    if (b->tb[0] > st) {
      x->pos = 0;
      continue;
    }
    while (lo < hi) {
      size_t mid = lo + (hi - lo + 1) / 2;
      if (b->tb[mid] <= st) lo = mid;
      else hi = mid - 1;
    }
    x->pos = lo;
  }
}

/* Pass 2: where each swap-in is issued (at a fixed lookahead, or just in
 * time), no earlier than swap_in_after allows; sorted by that place. */
static void mp__rb_pass2(mp__rb_t *b) {
  const mp_residency_options_t *o = b->o;
  size_t v, j;
  for (v = 0; v < b->n; v++)
    if (mp__is_act(b->g, (uint32_t)v) && b->eff[v] == MP_RES_SWAP) {
      b->sw[b->n_sw].node = (uint32_t)v;
      b->sw[b->n_sw].need = b->p1.swneed[v];
      b->sw[b->n_sw++].pos = 0;
    }
  if (b->n_sw == 0) return;
  if (o->lookahead > 0) {
    for (j = 0; j < b->n_sw; j++) {
      uint32_t on = b->seq_ord[b->sw[j].need];
      b->sw[j].pos = b->blk[on >= o->lookahead ? on - o->lookahead : 0];
    }
  } else {
    mp__rb_place_jit(b);
  }
  if (o->swap_in_after)
    for (j = 0; j < b->n_sw; j++) {
      uint32_t a = o->swap_in_after[b->sw[j].node];
      size_t ap;
      if (a == 0) continue;
      ap = a >= b->n_act ? b->sw[j].need : b->blk[a];
      if (ap > b->sw[j].pos) b->sw[j].pos = ap;
      if (b->sw[j].pos > b->sw[j].need) b->sw[j].pos = b->sw[j].need;
    }
  qsort(b->sw, b->n_sw, sizeof(*b->sw), mp__swin_by_pos);
}

/* Does v swap out, and does wait_before anchor its wait after its swap-out
 * (in bucket wb_off[w], w as in wait_before)? */
static int mp__rb_waits_later(const mp__rb_t *b, size_t v, size_t nk) {
  const uint32_t *wbf = b->o->wait_before;
  return mp__is_act(b->g, (uint32_t)v) && b->eff[v] == MP_RES_SWAP && wbf[v] > b->lfr[v] + 1 && wbf[v] <= nk;
}

/* The swap-outs bucketed by their last forward reader, and the waits by the
 * step they precede (a sync_swap_out wait, or one anchored at or before its
 * own swap-out, goes right after the swap-out instead). Wait keys: w for
 * the compute of node w, n + k for backward step k. 0 or MP_ENOMEM. */
static int mp__rb_buckets(mp__rb_t *b) {
  size_t n = b->n, nk = n + b->n_act, v, k, *fill;
  for (v = 0; v < n; v++)
    if (mp__is_act(b->g, (uint32_t)v) && b->eff[v] == MP_RES_SWAP) b->bucket_off[b->lfr[v] + 1]++;
  for (v = 0; v < n; v++) b->bucket_off[v + 1] += b->bucket_off[v];
  fill = calloc(nk + 1, sizeof(size_t));
  if (fill == NULL) return MP_ENOMEM;
  for (v = 0; v < n; v++)
    if (mp__is_act(b->g, (uint32_t)v) && b->eff[v] == MP_RES_SWAP)
      b->bucket[b->bucket_off[b->lfr[v]] + fill[b->lfr[v]]++] = (uint32_t)v;
  if (b->o->wait_before) {
    for (v = 0; v < n; v++)
      if (mp__rb_waits_later(b, v, nk)) b->wb_off[b->o->wait_before[v] - 1 + 1]++;
    for (k = 0; k < nk; k++) b->wb_off[k + 1] += b->wb_off[k];
    memset(fill, 0, (nk + 1) * sizeof(size_t));
    for (v = 0; v < n; v++)
      if (mp__rb_waits_later(b, v, nk)) {
        size_t w = b->o->wait_before[v] - 1;
        b->wb[b->wb_off[w] + fill[w]++] = (uint32_t)v;
      }
  }
  free(fill);
  return 0;
}

/* The per-node positions *inf records while the schedule is emitted,
 * unset. 0 or MP_ENOMEM. */
static int mp__rb_info_alloc(const mp__rb_t *b, mp__res_info_t *inf) {
  size_t n = b->n, v;
  inf->n_ord = b->n_act;
  inf->pos_compute = malloc(n * sizeof(size_t));
  inf->pos_last_fwd = malloc(n * sizeof(size_t));
  inf->pos_swap_out = malloc(n * sizeof(size_t));
  inf->pos_swap_in = malloc(n * sizeof(size_t));
  inf->pos_first_bwd = malloc(n * sizeof(size_t));
  inf->pos_last_bwd = malloc(n * sizeof(size_t));
  inf->d2h_end = calloc(n, sizeof(double));
  inf->d2h_free = calloc(n, sizeof(double));
  inf->h2d_end = calloc(n, sizeof(double));
  inf->block_start = malloc((b->n_act + 1) * sizeof(size_t));
  if (!inf->pos_compute || !inf->pos_last_fwd || !inf->pos_swap_out || !inf->pos_swap_in ||
      !inf->pos_first_bwd || !inf->pos_last_bwd || !inf->d2h_end || !inf->d2h_free || !inf->h2d_end ||
      !inf->block_start)
    return MP_ENOMEM;
  for (v = 0; v < n; v++)
    inf->pos_compute[v] = inf->pos_last_fwd[v] = inf->pos_swap_out[v] = inf->pos_swap_in[v] =
        inf->pos_first_bwd[v] = inf->pos_last_bwd[v] = NONE;
  return 0;
}

/* Pass 3: emit into s the forward part (per activation its waits, its
 * compute, the swap-outs it ends, and their waits when they come right
 * after) and the backward part (pass 1's sequence with each block's waits
 * and the swap-ins merged in); inf (NULL: none) gets where each step went.
 * 0 or the push's error. */
static int mp__rb_emit(mp__rb_t *b, mp_schedule_t *s, mp__res_info_t *inf) {
  const mp_residency_options_t *o = b->o;
  size_t n = b->n, v, k, i, j;
  int rc = 0;
  for (v = 0; v < n && rc == 0; v++) {
    if (!mp__is_act(b->g, (uint32_t)v)) continue;
    for (k = b->wb_off[v]; k < b->wb_off[v + 1] && rc == 0; k++) rc = mp_schedule_push(s, MP_STEP_WAIT, b->wb[k]);
    if (inf) inf->pos_compute[v] = s->n_steps;
    if (rc == 0) rc = mp_schedule_push(s, MP_STEP_COMPUTE, (uint32_t)v);
    for (k = b->bucket_off[v]; k < b->bucket_off[v + 1] && rc == 0; k++) {
      if (inf) inf->pos_swap_out[b->bucket[k]] = s->n_steps;
      rc = mp_schedule_push(s, MP_STEP_SWAP_OUT, b->bucket[k]);
    }
    for (k = b->bucket_off[v]; k < b->bucket_off[v + 1] && rc == 0; k++)
      if (o->sync_swap_out ||
          (o->wait_before && o->wait_before[b->bucket[k]] != 0 && o->wait_before[b->bucket[k]] <= v + 1))
        rc = mp_schedule_push(s, MP_STEP_WAIT, b->bucket[k]);
  }
  b->fwd_len = s->n_steps;
  for (i = 0, j = 0; i < b->len && rc == 0; i++) {
    if (i == 0 || b->seq_ord[i] != b->seq_ord[i - 1]) {
      if (inf) inf->block_start[b->seq_ord[i]] = s->n_steps;
      for (k = b->wb_off[n + b->seq_ord[i]]; k < b->wb_off[n + b->seq_ord[i] + 1] && rc == 0; k++)
        rc = mp_schedule_push(s, MP_STEP_WAIT, b->wb[k]);
    }
    for (; j < b->n_sw && b->sw[j].pos == i && rc == 0; j++) {
      if (inf) inf->pos_swap_in[b->sw[j].node] = s->n_steps;
      rc = mp_schedule_push(s, MP_STEP_SWAP_IN, b->sw[j].node);
    }
    b->m_of[i] = s->n_steps;
    if (rc == 0) rc = mp_schedule_push(s, (mp_step_op_t)b->seq_op[i], b->seq_node[i]);
  }
  return rc;
}

/* The emitted steps' positions of each node's recomputes, last forward
 * reader and backward-time reads. 0 or MP_ENOMEM. */
static int mp__rb_info_positions(const mp__rb_t *b, mp__res_info_t *inf) {
  const mp__p1_t *p1 = &b->p1;
  size_t n = b->n, v, k, *fill;
  inf->pos_rec1 = malloc(n * sizeof(size_t));
  inf->pos_rec2 = malloc(n * sizeof(size_t));
  inf->rd_off = calloc(n + 1, sizeof(size_t));
  inf->rd = malloc((p1->n_rd ? p1->n_rd : 1) * sizeof(size_t));
  if (!inf->pos_rec1 || !inf->pos_rec2 || !inf->rd_off || !inf->rd) return MP_ENOMEM;
  for (v = 0; v < n; v++) {
    inf->pos_rec1[v] = b->rec1[v] == NONE ? NONE : b->m_of[b->rec1[v]];
    inf->pos_rec2[v] = b->rec2[v] == NONE ? NONE : b->m_of[b->rec2[v]];
    if (mp__is_act(b->g, (uint32_t)v)) {
      inf->pos_last_fwd[v] = inf->pos_compute[b->lfr[v]];
      if (p1->first[v] != NONE) {
        inf->pos_first_bwd[v] = b->m_of[p1->first[v]];
        inf->pos_last_bwd[v] = b->m_of[p1->last[v]];
      }
    }
  }
  /* Reads per node, in step order (the pairs are in step order). */
  for (k = 0; k < p1->n_rd; k++) inf->rd_off[p1->rd_node[k] + 1]++;
  for (v = 0; v < n; v++) inf->rd_off[v + 1] += inf->rd_off[v];
  fill = calloc(n + 1, sizeof(size_t));
  if (fill == NULL) return MP_ENOMEM;
  for (k = 0; k < p1->n_rd; k++) inf->rd[inf->rd_off[p1->rd_node[k]] + fill[p1->rd_node[k]]++] = b->m_of[p1->rd_pos[k]];
  free(fill);
  return 0;
}

/* The estimated start of every emitted step, the backward block it belongs
 * to, the copies' ends on their queues and the H2D queue's busy time, all
 * along the schedule s without stalls. 0 or MP_ENOMEM. */
static int mp__rb_info_times(const mp__rb_t *b, const mp_schedule_t *s, mp__res_info_t *inf) {
  const mp_graph_t *g = b->g;
  const mp_device_t *dev = b->dev;
  size_t ns = s->n_steps, c = 0, i, p = 0, n_iv = 0;
  uint32_t last_c = 0;
  double t = 0, qd = 0, qh = 0, acc = 0;
  int shared = dev->copy_engines == 1;
  double *is, *ie;
  inf->n_steps = ns;
  inf->n_fwd = b->fwd_len;
  inf->block_start[b->n_act] = ns;
  inf->t_start = malloc((ns + 1) * sizeof(double));
  inf->ord = malloc((ns ? ns : 1) * sizeof(uint32_t));
  inf->h2d_busy = malloc((ns + 1) * sizeof(double));
  is = malloc((b->n_sw ? b->n_sw : 1) * sizeof(double));
  ie = malloc((b->n_sw ? b->n_sw : 1) * sizeof(double));
  if (!inf->t_start || !inf->ord || !inf->h2d_busy || !is || !ie) {
    free(is);
    free(ie);
    return MP_ENOMEM;
  }
  for (i = 0; i < ns; i++) {
    const mp_step_t *st = &s->steps[i];
    inf->t_start[i] = t;
    if (i < b->fwd_len) {
      inf->ord[i] = UINT32_MAX;
    } else {
      while (c < b->len && b->m_of[c] < i) c++;
      inf->ord[i] = b->seq_ord[c < b->len ? c : b->len - 1];
    }
    if (st->op == MP_STEP_SWAP_OUT) {
      double q = shared ? (qd > qh ? qd : qh) : qd;
      double bg = t > q ? t : q;
      qd = bg + mp_device_copy_time(dev, g, g->nodes[st->node].bytes, 0);
      if (shared) qh = qd;
      inf->d2h_end[st->node] = qd;
    } else if (st->op == MP_STEP_SWAP_IN) {
      double q = shared ? (qd > qh ? qd : qh) : qh;
      double bg = t > q ? t : q;
      if (inf->d2h_end[st->node] > bg) bg = inf->d2h_end[st->node];
      qh = bg + mp_device_copy_time(dev, g, g->nodes[st->node].bytes, 1);
      if (shared) qd = qh;
      inf->h2d_end[st->node] = qh;
      is[n_iv] = bg;
      ie[n_iv++] = qh;
    }
    t += mp__step_dur(g, st->op, st->node);
    /* The D2H queue as a forward step's trailing swap-outs leave it. */
    if (i < b->fwd_len) {
      if (st->op == MP_STEP_COMPUTE) last_c = st->node;
      inf->d2h_free[last_c] = shared ? (qd > qh ? qd : qh) : qd;
    }
  }
  inf->t_start[ns] = t;
  inf->t_end = t;
  /* H2D busy time before each step's start: the intervals are disjoint and
   * in time order (one FIFO queue). */
  for (i = 0; i <= ns; i++) {
    double ti = inf->t_start[i];
    while (p < n_iv && ie[p] <= ti) {
      acc += ie[p] - is[p];
      p++;
    }
    inf->h2d_busy[i] = acc + (p < n_iv && is[p] < ti ? ti - is[p] : 0);
  }
  free(is);
  free(ie);
  return 0;
}

/* The steps in order: check, lay out the backward pass (pass 1), decide
 * what really moves and estimate times, place the swap-ins (pass 2), bucket
 * the swap-outs and waits, emit (pass 3), then, asked for, the estimates.
 * Every failure past the check is out of memory. */
int mp__schedule_from_residency(const mp_graph_t *g, const uint8_t *decision,
                                const mp_residency_options_t *o, mp_schedule_t **out,
                                mp__res_info_t *info, mp_error_t *err) {
  mp_device_t defdev;
  mp_residency_options_t defopt;
  mp__rb_t b;
  mp_schedule_t *s = NULL;
  mp__res_info_t inf;
  int rc;

  *out = NULL;
  memset(&b, 0, sizeof(b));
  memset(&inf, 0, sizeof(inf));
  if (info) memset(info, 0, sizeof(*info));
  if (g == NULL || !g->finalized || decision == NULL)
    return mp_error_set(err, MP_EINVAL, "", "the residency schedule needs a finalized graph");
  if (o == NULL) {
    mp_residency_options_init(&defopt);
    o = &defopt;
  }
  if (o->device == NULL) mp_device_init(&defdev);
  if ((rc = mp__rb_check(g, decision, o, err)) != 0) return rc;
  b.g = g;
  b.dec = decision;
  b.o = o;
  b.dev = o->device ? o->device : &defdev;
  b.n = g->n_nodes;
  b.n_act = g->n_activations;

  rc = mp__rb_alloc(&b);
  if (rc == 0 && (s = mp_schedule_new()) == NULL) rc = MP_ENOMEM;
  if (rc == 0) rc = mp__rb_prepare(&b);
  if (rc == 0) rc = mp__rb_pass1(&b);
  if (rc == 0) {
    mp__rb_effective(&b);
    mp__rb_pass2(&b);
    rc = mp__rb_buckets(&b);
  }
  if (rc == 0 && info) {
    rc = mp__rb_info_alloc(&b, &inf);
    /* the estimates own the ordinals and effective decisions */
    inf.bord = b.bord;
    inf.eff = b.eff;
    b.bord = NULL;
    b.eff = NULL;
  }
  if (rc == 0) rc = mp__rb_emit(&b, s, info ? &inf : NULL);
  if (rc == 0 && info) rc = mp__rb_info_positions(&b, &inf);
  if (rc == 0 && info) rc = mp__rb_info_times(&b, s, &inf);
  if (rc == 0) {
    if (o->auto_free) s->auto_free = 1;
    else if (mp_schedule_insert_frees(g, s) != 0) rc = MP_ENOMEM;
  }
  if (rc == 0) {
    *out = s;
    s = NULL;
    if (info) {
      *info = inf;
      memset(&inf, 0, sizeof(inf));
    }
  } else {
    mp_error_set(err, MP_ENOMEM, "", "out of memory");
    rc = MP_ENOMEM;
  }
  mp__res_info_free(&inf);
  mp_schedule_free(s);
  mp__rb_free(&b);
  return rc;
}

int mp_schedule_from_residency(const mp_graph_t *g, const uint8_t *decision,
                               const mp_residency_options_t *o, mp_schedule_t **out,
                               mp_error_t *err) {
  return mp__schedule_from_residency(g, decision, o, out, NULL, err);
}

/* ---- Migration plans -------------------------------------------------- */

void mp__mig_free(mp__mig_t *m) {
  if (m == NULL) return;
  free(m->dec);
  free(m->after);
  free(m->wait);
  free(m->remat);
  mp_schedule_free(m->schedule);
  mp_sim_report_free(&m->sim);
  memset(m, 0, sizeof(*m));
}

typedef struct {
  uint8_t *read;
} mp__mark_t;

static void mp__mark_read(void *arg, uint32_t u) { ((mp__mark_t *)arg)->read[u] = 1; }

int mp__mig_adopt(const mp_graph_t *g, mp__mig_t *m, mp_plan_result_t *r) {
  size_t n = g->n_nodes, v, k, nc = 0;
  uint8_t *moved;
  mp__mark_t mk;
  r->n_segments = 1;
  r->feasible = m->feasible;
  if (!m->feasible) {
    r->min_feasible_budget = m->least_peak == UINT64_MAX ? 0 : m->least_peak;
    return 0;
  }
  moved = calloc(n ? n : 1, 1);
  mk.read = calloc(n ? n : 1, 1);
  r->swapped = malloc((m->sim.n_swapped ? m->sim.n_swapped : 1) * sizeof(uint32_t));
  r->checkpoints = malloc((n ? n : 1) * sizeof(uint32_t));
  if (!moved || !mk.read || !r->swapped || !r->checkpoints) {
    free(moved);
    free(mk.read);
    return MP_ENOMEM;
  }
  memcpy(r->swapped, m->sim.swapped, m->sim.n_swapped * sizeof(uint32_t));
  r->n_swapped = m->sim.n_swapped;
  for (k = 0; k < m->sim.n_swapped; k++) moved[m->sim.swapped[k]] = 1;
  for (k = 0; k < m->sim.n_recomputed; k++) moved[m->sim.recomputed[k]] = 1;
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v)) mp__bwd_reads_each(g, (uint32_t)v, mp__mark_read, &mk);
  /* Checkpoints: values kept on the device from the forward pass for a
   * backward step that reads them. */
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v) && mk.read[v] && !moved[v]) r->checkpoints[nc++] = (uint32_t)v;
  r->n_checkpoints = nc;
  free(moved);
  free(mk.read);
  r->schedule = m->schedule;
  r->sim = m->sim;
  m->schedule = NULL;
  memset(&m->sim, 0, sizeof(m->sim));
  return 0;
}
