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

int mp__schedule_from_residency(const mp_graph_t *g, const uint8_t *decision,
                                const mp_residency_options_t *o, mp_schedule_t **out,
                                mp__res_info_t *info, mp_error_t *err) {
  mp_device_t defdev;
  const mp_device_t *dev;
  mp_residency_options_t defopt;
  size_t n, n_act, v, k, i, j, len = 0, n_sw = 0, fwd_len, cap_seq;
  uint8_t *seq_op = NULL, *eff = NULL;
  uint32_t *seq_node = NULL, *seq_ord = NULL, *bord = NULL, *lfr = NULL, *bucket = NULL;
  size_t *blk = NULL, *bucket_off = NULL, *m_of = NULL, *wb_off = NULL, *sp_off = NULL;
  size_t *rec1 = NULL, *rec2 = NULL;
  uint32_t *wb = NULL, *sp = NULL;
  double *tb = NULL;
  mp__swin_t *sw = NULL;
  mp__p1_t p1;
  mp_schedule_t *s = NULL;
  mp__res_info_t inf;
  int rc = MP_ENOMEM;

  *out = NULL;
  memset(&p1, 0, sizeof(p1));
  memset(&inf, 0, sizeof(inf));
  if (info) memset(info, 0, sizeof(*info));
  if (g == NULL || !g->finalized || decision == NULL)
    return mp_error_set(err, MP_EINVAL, "", "the residency schedule needs a finalized graph");
  if (o == NULL) {
    mp_residency_options_init(&defopt);
    o = &defopt;
  }
  if (o->device == NULL) {
    mp_device_init(&defdev);
    dev = &defdev;
  } else {
    dev = o->device;
  }
  n = g->n_nodes;
  n_act = g->n_activations;
  for (v = 0; v < n; v++) {
    if (!mp__is_act(g, (uint32_t)v)) continue;
    if (decision[v] > MP_RES_RECOMPUTE)
      return mp_error_set(err, MP_EINVAL, "", "$.decisions[%zu]: unknown decision %u", v,
                          (unsigned)decision[v]);
    if ((decision[v] == MP_RES_RECOMPUTE ||
         (o && o->remat_from && o->remat_from[v] != 0)) &&
        !g->nodes[v].recompute)
      return mp_error_set(err, MP_EINVAL, "",
                          "$.decisions[%zu]: node '%.200s' is recompute:false and cannot be "
                          "recomputed",
                          v, g->nodes[v].id);
  }

  /* A value is recomputed at most twice: once as RECOMPUTE, once past its
   * remat_from point. */
  cap_seq = 3 * n_act + 1;
  bord = malloc(n * sizeof(uint32_t));
  lfr = malloc(n * sizeof(uint32_t));
  eff = calloc(n, 1);
  p1.present = calloc(n, 1);
  p1.split = calloc(n, 1);
  p1.swneed = malloc(n * sizeof(size_t));
  rec1 = malloc(n * sizeof(size_t));
  rec2 = malloc(n * sizeof(size_t));
  sp_off = calloc(n_act + 2, sizeof(size_t));
  sp = malloc((n ? n : 1) * sizeof(uint32_t));
  p1.first = malloc(n * sizeof(size_t));
  p1.last = malloc(n * sizeof(size_t));
  p1.stack = malloc(n * sizeof(uint32_t));
  p1.list = malloc(n * sizeof(uint32_t));
  seq_op = malloc(cap_seq);
  seq_node = malloc(cap_seq * sizeof(uint32_t));
  seq_ord = malloc(cap_seq * sizeof(uint32_t));
  blk = malloc((n_act + 1) * sizeof(size_t));
  tb = malloc((cap_seq + 1) * sizeof(double));
  sw = malloc((n_act ? n_act : 1) * sizeof(mp__swin_t));
  bucket_off = calloc(n + 1, sizeof(size_t));
  bucket = malloc((n ? n : 1) * sizeof(uint32_t));
  wb_off = calloc(n + n_act + 1, sizeof(size_t));
  wb = malloc((n ? n : 1) * sizeof(uint32_t));
  m_of = malloc(cap_seq * sizeof(size_t));
  s = mp_schedule_new();
  if (!bord || !lfr || !eff || !p1.present || !p1.first || !p1.last || !p1.stack || !p1.list ||
      !seq_op || !seq_node || !seq_ord || !blk || !tb || !sw || !bucket_off || !bucket || !m_of ||
      !wb_off || !wb || !s || !p1.split || !p1.swneed || !rec1 || !rec2 || !sp_off || !sp)
    goto fail;
  p1.g = g;
  p1.dec = decision;

  /* Backward ordinals and last forward readers. */
  {
    uint32_t ordc = 0;
    for (v = n; v > 0; v--) {
      uint32_t w = (uint32_t)(v - 1);
      bord[w] = mp__is_act(g, w) ? ordc++ : UINT32_MAX;
    }
  }
  for (v = 0; v < n; v++) {
    uint32_t last = (uint32_t)v;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
      if (mp__is_act(g, g->succ[k]) && g->succ[k] > last) last = g->succ[k];
    lfr[v] = last;
    p1.first[v] = p1.last[v] = p1.swneed[v] = rec1[v] = rec2[v] = NONE;
    if (mp__is_act(g, (uint32_t)v) && decision[v] == MP_RES_KEEP) p1.present[v] = 1;
  }
  /* Values re-materialised by recompute from backward step a on, bucketed
   * by a. */
  if (o->remat_from) {
    size_t *fill = calloc(n_act + 1, sizeof(size_t));
    if (fill == NULL) goto fail;
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) && o->remat_from[v] != 0 && o->remat_from[v] < n_act)
        sp_off[o->remat_from[v] + 1]++;
    for (k = 0; k < n_act; k++) sp_off[k + 1] += sp_off[k];
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) && o->remat_from[v] != 0 && o->remat_from[v] < n_act)
        sp[sp_off[o->remat_from[v]] + fill[o->remat_from[v]]++] = (uint32_t)v;
    free(fill);
  }

  /* Pass 1: the backward sequence. */
  for (v = n; v > 0; v--) {
    uint32_t w = (uint32_t)(v - 1), ordw;
    size_t q;
    if (!mp__is_act(g, w)) continue;
    ordw = bord[w];
    blk[ordw] = len;
    for (k = sp_off[ordw]; k < sp_off[ordw + 1]; k++) {
      p1.split[sp[k]] = 1;
      p1.present[sp[k]] = 0;
    }
    p1.n_stack = p1.n_list = 0;
    mp__bwd_reads_each(g, w, mp__p1_want, &p1);
    while (p1.n_stack > 0) {
      uint32_t x = p1.stack[--p1.n_stack];
      p1.list[p1.n_list++] = x;
      for (k = g->pred_off[x]; k < g->pred_off[x + 1]; k++)
        if (mp__is_act(g, g->pred[k])) mp__p1_want(&p1, g->pred[k]);
    }
    /* Inputs have smaller indices: ascending order recomputes each value
     * after everything it reads. */
    if (p1.n_list > 1) qsort(p1.list, p1.n_list, sizeof(uint32_t), mp__u32_cmp);
    for (q = 0; q < p1.n_list; q++) {
      uint32_t x = p1.list[q];
      p1.pos = len;
      for (k = g->pred_off[x]; k < g->pred_off[x + 1]; k++)
        if (mp__is_act(g, g->pred[k])) mp__p1_note(&p1, g->pred[k]);
      if (rec1[x] == NONE) rec1[x] = len;
      else rec2[x] = len;
      seq_op[len] = MP_STEP_RECOMPUTE;
      seq_node[len] = x;
      seq_ord[len++] = ordw;
    }
    p1.pos = len;
    mp__bwd_reads_each(g, w, mp__p1_note, &p1);
    seq_op[len] = MP_STEP_BACKWARD;
    seq_node[len] = w;
    seq_ord[len++] = ordw;
  }
  blk[n_act] = len;
  if (p1.nomem) goto fail;

  /* Effective decisions: moving a value nothing reads later is pointless. */
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v))
      eff[v] = p1.swneed[v] != NONE ? MP_RES_SWAP
               : rec1[v] != NONE    ? MP_RES_RECOMPUTE
                                    : MP_RES_KEEP;

  /* Estimated start times of the pass-1 steps (after the forward pass). */
  {
    double t = 0;
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v)) t += g->nodes[v].time;
    for (i = 0; i < len; i++) {
      tb[i] = t;
      t += mp__step_dur(g, seq_op[i], seq_node[i]);
    }
    tb[len] = t;
  }

  /* Pass 2: where each swap-in is issued. */
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v) && eff[v] == MP_RES_SWAP) {
      sw[n_sw].node = (uint32_t)v;
      sw[n_sw].need = p1.swneed[v];
      sw[n_sw++].pos = 0;
    }
  if (n_sw > 0) {
    if (o->lookahead > 0) {
      for (j = 0; j < n_sw; j++) {
        uint32_t on = seq_ord[sw[j].need];
        sw[j].pos = blk[on >= o->lookahead ? on - o->lookahead : 0];
      }
    } else {
      /* Latest first: each copy ends by its reader's start and before the
       * next copy (in time) starts, i.e. an as-late-as-possible FIFO. */
      double qfree = INFINITY;
      qsort(sw, n_sw, sizeof(*sw), mp__swin_by_need_desc);
      for (j = 0; j < n_sw; j++) {
        double fin = tb[sw[j].need] < qfree ? tb[sw[j].need] : qfree;
        double st = fin - mp_device_copy_time(dev, g, g->nodes[sw[j].node].bytes, 1);
        size_t lo = 0, hi = sw[j].need; /* largest i in [0, need] with tb[i] <= st */
        qfree = st;
        if (tb[0] > st) {
          sw[j].pos = 0;
        } else {
          while (lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2;
            if (tb[mid] <= st) lo = mid;
            else hi = mid - 1;
          }
          sw[j].pos = lo;
        }
      }
    }
    if (o->swap_in_after)
      for (j = 0; j < n_sw; j++) {
        uint32_t a = o->swap_in_after[sw[j].node];
        size_t ap;
        if (a == 0) continue;
        ap = a >= n_act ? sw[j].need : blk[a];
        if (ap > sw[j].pos) sw[j].pos = ap;
        if (sw[j].pos > sw[j].need) sw[j].pos = sw[j].need;
      }
    qsort(sw, n_sw, sizeof(*sw), mp__swin_by_pos);
  }

  /* Pass 3: emit. Swap-outs bucketed by the last forward reader. */
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v) && eff[v] == MP_RES_SWAP) bucket_off[lfr[v] + 1]++;
  for (v = 0; v < n; v++) bucket_off[v + 1] += bucket_off[v];
  /* Waits bucketed by the compute they precede (sync_swap_out, or a wait
   * anchored at or before its own swap-out, goes right after the swap-out).
   * Keys: w for the compute of node w, n + k for backward step k. */
  {
    size_t nk = n + n_act, *fill = calloc(nk + 1, sizeof(size_t));
    if (fill == NULL) goto fail;
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) && eff[v] == MP_RES_SWAP)
        bucket[bucket_off[lfr[v]] + fill[lfr[v]]++] = (uint32_t)v;
    if (o->wait_before) {
      for (v = 0; v < n; v++)
        if (mp__is_act(g, (uint32_t)v) && eff[v] == MP_RES_SWAP && o->wait_before[v] > lfr[v] + 1 &&
            o->wait_before[v] <= nk)
          wb_off[o->wait_before[v] - 1 + 1]++;
      for (k = 0; k < nk; k++) wb_off[k + 1] += wb_off[k];
      memset(fill, 0, (nk + 1) * sizeof(size_t));
      for (v = 0; v < n; v++)
        if (mp__is_act(g, (uint32_t)v) && eff[v] == MP_RES_SWAP && o->wait_before[v] > lfr[v] + 1 &&
            o->wait_before[v] <= nk) {
          size_t w = o->wait_before[v] - 1;
          wb[wb_off[w] + fill[w]++] = (uint32_t)v;
        }
    }
    free(fill);
  }
  if (info) {
    inf.n_ord = n_act;
    inf.bord = bord;
    inf.eff = eff;
    bord = NULL;
    eff = NULL;
    inf.pos_compute = malloc(n * sizeof(size_t));
    inf.pos_last_fwd = malloc(n * sizeof(size_t));
    inf.pos_swap_out = malloc(n * sizeof(size_t));
    inf.pos_swap_in = malloc(n * sizeof(size_t));
    inf.pos_first_bwd = malloc(n * sizeof(size_t));
    inf.pos_last_bwd = malloc(n * sizeof(size_t));
    inf.d2h_end = calloc(n, sizeof(double));
    inf.d2h_free = calloc(n, sizeof(double));
    inf.h2d_end = calloc(n, sizeof(double));
    inf.block_start = malloc((n_act + 1) * sizeof(size_t));
    if (!inf.pos_compute || !inf.pos_last_fwd || !inf.pos_swap_out || !inf.pos_swap_in ||
        !inf.pos_first_bwd || !inf.pos_last_bwd || !inf.d2h_end || !inf.d2h_free ||
        !inf.h2d_end || !inf.block_start)
      goto fail;
    for (v = 0; v < n; v++)
      inf.pos_compute[v] = inf.pos_last_fwd[v] = inf.pos_swap_out[v] = inf.pos_swap_in[v] =
          inf.pos_first_bwd[v] = inf.pos_last_bwd[v] = NONE;
  }
  rc = 0;
  for (v = 0; v < n && rc == 0; v++) {
    if (!mp__is_act(g, (uint32_t)v)) continue;
    for (k = wb_off[v]; k < wb_off[v + 1] && rc == 0; k++)
      rc = mp_schedule_push(s, MP_STEP_WAIT, wb[k]);
    if (info) inf.pos_compute[v] = s->n_steps;
    if (rc == 0) rc = mp_schedule_push(s, MP_STEP_COMPUTE, (uint32_t)v);
    for (k = bucket_off[v]; k < bucket_off[v + 1] && rc == 0; k++) {
      if (info) inf.pos_swap_out[bucket[k]] = s->n_steps;
      rc = mp_schedule_push(s, MP_STEP_SWAP_OUT, bucket[k]);
    }
    for (k = bucket_off[v]; k < bucket_off[v + 1] && rc == 0; k++)
      if (o->sync_swap_out ||
          (o->wait_before && o->wait_before[bucket[k]] != 0 && o->wait_before[bucket[k]] <= v + 1))
        rc = mp_schedule_push(s, MP_STEP_WAIT, bucket[k]);
  }
  fwd_len = s->n_steps;
  for (i = 0, j = 0; i < len && rc == 0; i++) {
    if (i == 0 || seq_ord[i] != seq_ord[i - 1]) {
      if (info) inf.block_start[seq_ord[i]] = s->n_steps;
      for (k = wb_off[n + seq_ord[i]]; k < wb_off[n + seq_ord[i] + 1] && rc == 0; k++)
        rc = mp_schedule_push(s, MP_STEP_WAIT, wb[k]);
    }
    for (; j < n_sw && sw[j].pos == i && rc == 0; j++) {
      if (info) inf.pos_swap_in[sw[j].node] = s->n_steps;
      rc = mp_schedule_push(s, MP_STEP_SWAP_IN, sw[j].node);
    }
    m_of[i] = s->n_steps;
    if (rc == 0) rc = mp_schedule_push(s, (mp_step_op_t)seq_op[i], seq_node[i]);
  }
  if (rc != 0) goto fail;
  rc = MP_ENOMEM;

  if (info) {
    size_t ns = s->n_steps, c;
    uint32_t last_c = 0;
    double t = 0, qd = 0, qh = 0;
    int shared = dev->copy_engines == 1;
    double *is = NULL, *ie = NULL;
    size_t n_iv = 0;
    inf.n_steps = ns;
    inf.n_fwd = fwd_len;
    inf.block_start[n_act] = ns;
    inf.t_start = malloc((ns + 1) * sizeof(double));
    inf.ord = malloc((ns ? ns : 1) * sizeof(uint32_t));
    inf.h2d_busy = malloc((ns + 1) * sizeof(double));
    is = malloc((n_sw ? n_sw : 1) * sizeof(double));
    ie = malloc((n_sw ? n_sw : 1) * sizeof(double));
    if (!inf.t_start || !inf.ord || !inf.h2d_busy || !is || !ie) {
      free(is);
      free(ie);
      goto fail;
    }
    inf.pos_rec1 = malloc(n * sizeof(size_t));
    inf.pos_rec2 = malloc(n * sizeof(size_t));
    inf.rd_off = calloc(n + 1, sizeof(size_t));
    inf.rd = malloc((p1.n_rd ? p1.n_rd : 1) * sizeof(size_t));
    if (!inf.pos_rec1 || !inf.pos_rec2 || !inf.rd_off || !inf.rd) {
      free(is);
      free(ie);
      goto fail;
    }
    for (v = 0; v < n; v++) {
      inf.pos_rec1[v] = rec1[v] == NONE ? NONE : m_of[rec1[v]];
      inf.pos_rec2[v] = rec2[v] == NONE ? NONE : m_of[rec2[v]];
      if (mp__is_act(g, (uint32_t)v)) {
        inf.pos_last_fwd[v] = inf.pos_compute[lfr[v]];
        if (p1.first[v] != NONE) {
          inf.pos_first_bwd[v] = m_of[p1.first[v]];
          inf.pos_last_bwd[v] = m_of[p1.last[v]];
        }
      }
    }
    /* Reads per node, in step order (the pairs are in step order). */
    for (k = 0; k < p1.n_rd; k++) inf.rd_off[p1.rd_node[k] + 1]++;
    for (v = 0; v < n; v++) inf.rd_off[v + 1] += inf.rd_off[v];
    {
      size_t *fill = calloc(n + 1, sizeof(size_t));
      if (fill == NULL) {
        free(is);
        free(ie);
        goto fail;
      }
      for (k = 0; k < p1.n_rd; k++)
        inf.rd[inf.rd_off[p1.rd_node[k]] + fill[p1.rd_node[k]]++] = m_of[p1.rd_pos[k]];
      free(fill);
    }
    /* Times and queues along the merged schedule, without stalls. */
    c = 0;
    for (i = 0; i < ns; i++) {
      const mp_step_t *st = &s->steps[i];
      inf.t_start[i] = t;
      if (i < fwd_len) {
        inf.ord[i] = UINT32_MAX;
      } else {
        while (c < len && m_of[c] < i) c++;
        inf.ord[i] = seq_ord[c < len ? c : len - 1];
      }
      if (st->op == MP_STEP_SWAP_OUT) {
        double q = shared ? (qd > qh ? qd : qh) : qd;
        double b = t > q ? t : q;
        qd = b + mp_device_copy_time(dev, g, g->nodes[st->node].bytes, 0);
        if (shared) qh = qd;
        inf.d2h_end[st->node] = qd;
      } else if (st->op == MP_STEP_SWAP_IN) {
        double q = shared ? (qd > qh ? qd : qh) : qh;
        double b = t > q ? t : q;
        if (inf.d2h_end[st->node] > b) b = inf.d2h_end[st->node];
        qh = b + mp_device_copy_time(dev, g, g->nodes[st->node].bytes, 1);
        if (shared) qd = qh;
        inf.h2d_end[st->node] = qh;
        is[n_iv] = b;
        ie[n_iv++] = qh;
      }
      t += mp__step_dur(g, st->op, st->node);
      /* The D2H queue as a forward step's trailing swap-outs leave it. */
      if (i < fwd_len) {
        if (st->op == MP_STEP_COMPUTE) last_c = st->node;
        inf.d2h_free[last_c] = shared ? (qd > qh ? qd : qh) : qd;
      }
    }
    inf.t_start[ns] = t;
    inf.t_end = t;
    /* H2D busy time before each step's start: the intervals are disjoint
     * and in time order (one FIFO queue). */
    {
      size_t p = 0;
      double acc = 0;
      for (i = 0; i <= ns; i++) {
        double ti = inf.t_start[i];
        while (p < n_iv && ie[p] <= ti) {
          acc += ie[p] - is[p];
          p++;
        }
        inf.h2d_busy[i] = acc + (p < n_iv && is[p] < ti ? ti - is[p] : 0);
      }
    }
    free(is);
    free(ie);
  }

  if (o->auto_free) {
    s->auto_free = 1;
  } else if (mp_schedule_insert_frees(g, s) != 0) {
    goto fail;
  }
  *out = s;
  s = NULL;
  if (info) {
    *info = inf;
    memset(&inf, 0, sizeof(inf));
  }
  rc = 0;
  goto done;

fail:
  mp_error_set(err, MP_ENOMEM, "", "out of memory");
  rc = MP_ENOMEM;
done:
  mp__res_info_free(&inf);
  mp_schedule_free(s);
  free(bord);
  free(lfr);
  free(eff);
  free(p1.present);
  free(p1.split);
  free(p1.swneed);
  free(p1.rd_node);
  free(p1.rd_pos);
  free(rec1);
  free(rec2);
  free(sp_off);
  free(sp);
  free(p1.first);
  free(p1.last);
  free(p1.stack);
  free(p1.list);
  free(seq_op);
  free(seq_node);
  free(seq_ord);
  free(blk);
  free(tb);
  free(sw);
  free(bucket_off);
  free(bucket);
  free(wb_off);
  free(wb);
  free(m_of);
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
