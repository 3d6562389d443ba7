/* swap_greedy.c - the `swap` greedy (mp__swap_greedy, swap.h), which hybrid
 * also runs from its DP plans, and the swap solver's entry in the solver
 * table (mp__plan_swap: the greedy from keeping everything). It chooses
 * decisions; swap_schedule.c turns them into schedules and estimates, and
 * the simulator measures them.
 *
 * The greedy (Capuchin-like, deterministic)
 * -----------------------------------------
 * Start from a decision vector (keep everything, or hybrid's DP plan), build
 * its schedule, simulate it. While the simulated peak exceeds the budget,
 * look at the peak step p and at the values whose device memory is live
 * there, and estimate for each what taking it off the device at p costs:
 *  - a KEEP value whose last forward reader ran before p and whose first
 *    backward-time reader runs after p can be swapped or recomputed. A swap
 *    frees its bytes at p only if its swap-out has ended by then (estimated
 *    on the D2H queue), or with a `wait` before p's step (the stall is its
 *    cost); in the backward pass its swap-in is held back until after p's
 *    backward step. A recompute needs its inputs at the recompute: a KEEP
 *    input still live at p costs nothing, one already dead by p is
 *    recomputed too when it may be (Chen's segments), else it lives on and
 *    its bytes count against the saving;
 *  - a SWAP value still on the device at p (swap-out not done, or swap-in
 *    issued before p to hide the copy) gets a wait, its swap-in held back,
 *    or a recompute instead;
 *  - in the backward pass, a value read at or before p and next read in a
 *    later backward step (a recompute chain needed it early) gets a fresh,
 *    recomputed instance from the next backward step on (remat_from).
 * The exposed cost of a swap is the part of its host-to-device copy that the
 * compute between the earliest allowed issue point and the reader does not
 * hide, counting the time the copy queue is already busy there, plus any
 * wait's stall (the builder's estimates, no simulation). Just in time, the
 * builder issues the copy at the latest point of that window that hides it,
 * so the window is what the copy can use; with a fixed prefetch lookahead k
 * (device.prefetch_lookahead) the copy is issued k backward steps before its
 * reader, or at the allowed point when that is later, so the window starts
 * there instead (a short lookahead exposes copies that just in time would
 * hide; a long one hides them but holds the value on the device earlier,
 * which the simulation of the round shows as a peak to fix). The cost of a
 * recompute is the forward time it re-runs. A value is swapped when its
 * transfer is hidden or cheaper than recomputing it, else recomputed (never
 * a recompute:false one). Candidates are ranked by bytes saved per unit of
 * exposed cost (free ones first, biggest first; ties by node index) and
 * taken best-first until they cover the excess at p (at most a tenth of the
 * peak per round; new swap-outs must still end by p one after the other);
 * the new decisions are built and simulated once. A round that raises the
 * peak is retried as its single best candidate, and a single candidate that
 * raises it is banned until the peak changes. The search stops when the
 * budget is met, when nothing is left to move, or when the least peak has
 * not improved for a while. A final pass then undoes, most expensive first,
 * every decision whose removal keeps the plan within the budget (and the
 * host budget) without making it slower: decisions taken for an earlier
 * peak that the later ones made useless.
 *
 * Pinned host memory: a swap is only proposed while the bytes of every
 * swapped value (an upper bound on the host peak) fit device.host_bytes.
 * Every estimate is only a ranking device: feasibility and every figure come
 * from the simulator's replay of the final schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"
#include "swap.h"

#define NONE MP__RES_NONE

static int mp__is_act(const mp_graph_t *g, uint32_t v) {
  return g->nodes[v].kind == MP_KIND_ACTIVATION;
}

static int mp__host_ok(const mp_plan_options_t *o, const mp_sim_report_t *s) {
  return s->host_peak_bytes <= o->device.host_bytes;
}

/* One decision vector, built (auto_free, with the builder's estimates) and
 * simulated under the plan's device. */
typedef struct {
  uint8_t *dec;
  uint32_t *after;
  uint32_t *wait;
  uint32_t *remat;
  mp_schedule_t *s;
  mp__res_info_t info;
  mp_sim_report_t sim;
} mp__st_t;

static void mp__st_free(mp__st_t *st) {
  free(st->dec);
  free(st->after);
  free(st->wait);
  free(st->remat);
  mp_schedule_free(st->s);
  mp__res_info_free(&st->info);
  mp_sim_report_free(&st->sim);
  memset(st, 0, sizeof(*st));
}

/* Build and simulate st->dec / st->after (which st owns). */
static int mp__st_eval(const mp_graph_t *g, const mp_plan_options_t *o, mp__st_t *st,
                       mp_error_t *err) {
  mp_residency_options_t ro;
  int rc;
  mp_residency_options_init(&ro);
  ro.device = &o->device;
  ro.lookahead = o->device.prefetch_lookahead;
  ro.auto_free = 1;
  ro.swap_in_after = st->after;
  ro.wait_before = st->wait;
  ro.remat_from = st->remat;
  if ((rc = mp__schedule_from_residency(g, st->dec, &ro, &st->s, &st->info, err)) != 0) return rc;
  return mp__simulate_planned(g, &o->device, st->s, "migration", &st->sim, err);
}

static int mp__st_copy(const mp_graph_t *g, const mp__st_t *from, mp__st_t *to) {
  size_t n = g->n_nodes;
  memset(to, 0, sizeof(*to));
  to->dec = malloc(n);
  to->after = malloc(n * sizeof(uint32_t));
  to->wait = malloc(n * sizeof(uint32_t));
  to->remat = malloc(n * sizeof(uint32_t));
  if (!to->dec || !to->after || !to->wait || !to->remat) {
    mp__st_free(to);
    return MP_ENOMEM;
  }
  memcpy(to->dec, from->dec, n);
  memcpy(to->after, from->after, n * sizeof(uint32_t));
  memcpy(to->wait, from->wait, n * sizeof(uint32_t));
  memcpy(to->remat, from->remat, n * sizeof(uint32_t));
  return 0;
}

/* A proposed move: node v to decision `to` (with swap_in_after `after`);
 * a recompute may bring along extra nodes to recompute with it
 * (xs[x_off .. x_off + x_cnt) of the candidate pool). */
typedef struct {
  uint32_t v;
  uint8_t to;
  uint32_t after;
  uint32_t wait; /* wait_before for a swap, 0: none */
  uint32_t remat; /* remat_from, 0: unchanged */
  double slack;   /* a new swap-out without a wait: time between its
                   * estimated end and the peak step */
  size_t x_off, x_cnt;
  double saving; /* estimated bytes off the device at the peak */
  double cost;   /* estimated exposed time */
} mp__mv_t;

#define MP__FREE_COST 1e-9

static int mp__mv_cmp(const void *a, const void *b) {
  const mp__mv_t *x = a, *y = b;
  int zx = x->cost <= MP__FREE_COST, zy = y->cost <= MP__FREE_COST;
  if (zx != zy) return zx ? -1 : 1;
  if (zx) {
    if (x->saving != y->saving) return x->saving > y->saving ? -1 : 1;
  } else {
    double rx = x->saving / x->cost, ry = y->saving / y->cost;
    if (rx != ry) return rx > ry ? -1 : 1;
  }
  return x->v < y->v ? -1 : (x->v > y->v ? 1 : 0);
}

/* Scratch of the candidate search. */
typedef struct {
  uint32_t *stamp; /* per node: the candidate that last visited it */
  uint32_t cur;
  uint32_t *stack;
  uint32_t *xs;    /* pool of extra recomputations */
  size_t n_xs, cap_xs;
} mp__scr_t;

/* Extra recomputations one candidate may bring along (the rest of its
 * inputs are kept alive instead). */
#define MP__RC_EXTRA_MAX 32

/* Recomputing v instead of keeping it through the peak step p (its first
 * backward-time reader runs after p). Its inputs must be present then: a
 * KEEP input still live at p costs nothing; one dead by p either lives on
 * until the recompute (its bytes count against the saving at p) or, when it
 * may be recomputed, is recomputed too from its own inputs, recursively
 * (Chen's segments): those extras are appended to the pool. A RECOMPUTE
 * input nothing re-materialises yet is recomputed as well. Returns the time
 * re-run and the bytes off the device at p; 0 when out of memory. */
static int mp__rc_plan(const mp_graph_t *g, const mp__st_t *st, uint32_t v, size_t p,
                       mp__scr_t *sc, size_t *x_off, size_t *x_cnt, double *cost,
                       double *saving) {
  const mp__res_info_t *in = &st->info;
  size_t top = 0, k;
  *cost = g->nodes[v].time;
  *saving = (double)g->nodes[v].bytes;
  *x_off = sc->n_xs;
  *x_cnt = 0;
  sc->cur++;
  sc->stamp[v] = sc->cur;
  sc->stack[top++] = v;
  while (top > 0) {
    uint32_t w = sc->stack[--top];
    for (k = g->pred_off[w]; k < g->pred_off[w + 1]; k++) {
      uint32_t y = g->pred[k];
      if (!mp__is_act(g, y) || sc->stamp[y] == sc->cur) continue;
      sc->stamp[y] = sc->cur;
      if (st->dec[y] == MP_RES_KEEP) {
        size_t last = in->pos_last_fwd[y];
        if (in->pos_last_bwd[y] != NONE && in->pos_last_bwd[y] > last) last = in->pos_last_bwd[y];
        if (last >= p) continue; /* live at p anyway */
        if (g->nodes[y].recompute && *x_cnt < MP__RC_EXTRA_MAX) {
          if (sc->n_xs == sc->cap_xs) {
            size_t nc = sc->cap_xs ? 2 * sc->cap_xs : 256;
            uint32_t *nx = realloc(sc->xs, nc * sizeof(uint32_t));
            if (nx == NULL) return 0;
            sc->xs = nx;
            sc->cap_xs = nc;
          }
          sc->xs[sc->n_xs++] = y;
          (*x_cnt)++;
          *cost += g->nodes[y].time;
          sc->stack[top++] = y;
        } else {
          *saving -= (double)g->nodes[y].bytes;
        }
      } else if (in->pos_first_bwd[y] == NONE && st->dec[y] == MP_RES_RECOMPUTE) {
        *cost += g->nodes[y].time;
        sc->stack[top++] = y;
      }
    }
  }
  return 1;
}

/* Free compute time of the H2D queue between steps a and q. */
static double mp__h2d_window(const mp__res_info_t *in, size_t a, size_t q) {
  return (in->t_start[q] - in->t_start[a]) - (in->h2d_busy[q] - in->h2d_busy[a]);
}

/* The moves that take a value off the device at the current peak step. */
static size_t mp__candidates(const mp_graph_t *g, const mp_plan_options_t *o, const mp__st_t *st,
                             uint64_t host_used, const uint64_t *ban, mp__scr_t *sc,
                             mp__mv_t *mv, int *nomem) {
  const mp__res_info_t *in = &st->info;
  const mp_device_t *dev = &o->device;
  size_t p = st->sim.peak_step, n = g->n_nodes, v, cnt = 0, i;
  uint64_t peak = st->sim.peak_bytes;
  int fwd = p < in->n_fwd;
  double tp = in->t_start[p];
  uint32_t ka = fwd ? 0 : in->ord[p] + 1, wnext = 0;

  /* A swap-out that cannot end by p can still free its bytes in time with a
   * wait: before the compute at (or after) p in the forward pass, at the
   * start of p's backward step in the backward pass; tw is when it runs. */
  double tw = tp;
  if (fwd) {
    for (i = p; i < in->n_fwd; i++)
      if (st->s->steps[i].op == MP_STEP_COMPUTE) {
        wnext = st->s->steps[i].node + 1;
        break;
      }
  } else {
    wnext = (uint32_t)(n + in->ord[p] + 1);
    tw = in->t_start[in->block_start[in->ord[p]]];
  }

  for (v = 0; v < n; v++) {
    const mp_node_t *nd = &g->nodes[v];
    size_t q = in->pos_first_bwd[v], a;
    double b = (double)nd->bytes, h2d, rc_cost = 0, rc_save = 0, sw_cost = 0;
    size_t x_off = 0, x_cnt = 0;
    uint32_t sw_after = 0, sw_wait = 0;
    double slack = INFINITY;
    int rc_ok, sw_ok = 0;
    if (!mp__is_act(g, (uint32_t)v) || nd->bytes == 0 || q == NONE || q <= p) continue;
    if (ban[v] != 0 && ban[v] == peak) continue;
    if (in->eff[v] != MP_RES_KEEP && in->eff[v] != MP_RES_SWAP) continue;
    h2d = mp_device_copy_time(dev, g, nd->bytes, 1);
    a = fwd ? in->n_fwd : (ka >= in->n_ord ? q : in->block_start[ka]);
    if (a > q) a = q;
    /* A fixed lookahead issues the copy no earlier than k backward steps
     * before the reader (the builder's pass 2): the window starts there. */
    if (dev->prefetch_lookahead > 0) {
      uint32_t oq = in->ord[q];
      size_t la = in->block_start[oq >= dev->prefetch_lookahead ? oq - dev->prefetch_lookahead : 0];
      if (la > a) a = la;
    }

    if (in->eff[v] == MP_RES_KEEP) {
      if (!(in->pos_last_fwd[v] < p)) continue;
      sw_ok = nd->bytes <= dev->host_bytes && host_used <= dev->host_bytes - nd->bytes;
      if (sw_ok) {
        /* Its swap-out would follow its last forward reader on the D2H
         * queue; the device bytes come back only once the copy ends. */
        size_t lf = in->pos_last_fwd[v];
        uint32_t lfn = st->s->steps[lf].node;
        double issue = in->t_start[lf] + g->nodes[lfn].time;
        double beg = issue > in->d2h_free[lfn] ? issue : in->d2h_free[lfn];
        double end = beg + mp_device_copy_time(dev, g, nd->bytes, 0), w;
        slack = tp - end;
        if (end > tp) {
          if (wnext != 0) {
            sw_wait = wnext;
            sw_cost += end - tw;
            slack = INFINITY;
          } else {
            sw_ok = 0;
          }
        }
        w = mp__h2d_window(in, a, q);
        sw_cost += h2d > w ? h2d - w : 0;
        sw_after = fwd ? 0 : ka;
      }
    } else {
      /* A SWAP value still on the device at p. */
      double cur = in->h2d_end[v] - in->t_start[q];
      if (cur < 0) cur = 0;
      if (fwd) {
        if (!(in->pos_swap_out[v] <= p && in->d2h_end[v] > tp)) continue;
        if (wnext != 0 && (st->wait[v] == 0 || st->wait[v] > wnext)) {
          sw_ok = 1;
          sw_wait = wnext;
          sw_cost = in->d2h_end[v] - tp;
          sw_after = st->after[v];
        }
      } else {
        if (!(in->pos_swap_in[v] <= p)) continue;
        if (ka > st->after[v]) {
          /* Hold its swap-in back until after p: its own copy leaves the
           * window it now occupies. */
          double fin = in->h2d_end[v] < in->t_start[q] ? in->h2d_end[v] : in->t_start[q];
          double own = fin - in->t_start[a], w;
          if (own < 0) own = 0;
          if (own > h2d) own = h2d;
          w = mp__h2d_window(in, a, q) + own;
          sw_cost = (h2d > w ? h2d - w : 0) - cur;
          if (sw_cost < 0) sw_cost = 0;
          sw_ok = 1;
          sw_after = ka;
          sw_wait = st->wait[v];
        }
      }
      rc_cost = -cur; /* a recompute also saves the swap's exposure */
    }

    rc_ok = nd->recompute;
    if (rc_ok) {
      double c0 = rc_cost;
      if (!mp__rc_plan(g, st, (uint32_t)v, p, sc, &x_off, &x_cnt, &rc_cost, &rc_save)) {
        *nomem = 1;
        return 0;
      }
      rc_cost += c0;
      if (rc_cost < 0) rc_cost = 0;
      if (rc_save <= 0) rc_ok = 0;
    }
    mv[cnt].x_off = mv[cnt].x_cnt = 0;
    mv[cnt].wait = 0;
    mv[cnt].after = 0;
    mv[cnt].remat = 0;
    mv[cnt].slack = INFINITY;
    if (sw_ok && (sw_cost <= MP__FREE_COST || !rc_ok || sw_cost < rc_cost)) {
      mv[cnt].to = MP_RES_SWAP;
      mv[cnt].after = sw_after;
      mv[cnt].wait = sw_wait;
      mv[cnt].slack = slack;
      mv[cnt].saving = b;
      mv[cnt].cost = sw_cost;
    } else if (rc_ok) {
      mv[cnt].to = MP_RES_RECOMPUTE;
      mv[cnt].x_off = x_off;
      mv[cnt].x_cnt = x_cnt;
      mv[cnt].saving = rc_save;
      mv[cnt].cost = rc_cost;
    } else {
      continue;
    }
    mv[cnt++].v = (uint32_t)v;
  }

  /* In the backward pass: a value live at p between a read at or before p
   * and its next read in a later backward step (a recompute chain read it
   * early) gets a fresh instance from the next backward step on. */
  if (!fwd && ka < in->n_ord)
    for (v = 0; v < n; v++) {
      const mp_node_t *nd = &g->nodes[v];
      const size_t *rd = in->rd + in->rd_off[v];
      size_t nr = in->rd_off[v + 1] - in->rd_off[v], lo = 0, hi = nr, r2, mk;
      double cost, save;
      size_t x_off, x_cnt;
      if (!mp__is_act(g, (uint32_t)v) || nd->bytes == 0 || !nd->recompute || st->remat[v] != 0 ||
          nr == 0)
        continue;
      if (ban[v] != 0 && ban[v] == peak) continue;
      while (lo < hi) { /* first read after p */
        size_t mid = lo + (hi - lo) / 2;
        if (rd[mid] <= p) lo = mid + 1;
        else hi = mid;
      }
      if (lo == nr || lo == 0) continue; /* no read after p, or none before */
      r2 = rd[lo];
      if (r2 < in->block_start[ka]) continue;
      /* The instance r2 reads began at the last make before it. */
      mk = in->pos_compute[v];
      if (in->pos_swap_in[v] != NONE && in->pos_swap_in[v] <= r2 && in->pos_swap_in[v] > mk)
        mk = in->pos_swap_in[v];
      if (in->pos_rec1[v] != NONE && in->pos_rec1[v] <= r2 && in->pos_rec1[v] > mk)
        mk = in->pos_rec1[v];
      if (in->pos_rec2[v] != NONE && in->pos_rec2[v] <= r2 && in->pos_rec2[v] > mk)
        mk = in->pos_rec2[v];
      if (mk > p || rd[lo - 1] < mk) continue;
      if (!mp__rc_plan(g, st, (uint32_t)v, p, sc, &x_off, &x_cnt, &cost, &save)) {
        *nomem = 1;
        return 0;
      }
      if (save <= 0) continue;
      mv[cnt].v = (uint32_t)v;
      mv[cnt].to = st->dec[v];
      mv[cnt].after = 0;
      mv[cnt].wait = 0;
      mv[cnt].remat = ka;
      mv[cnt].slack = INFINITY;
      mv[cnt].x_off = x_off;
      mv[cnt].x_cnt = x_cnt;
      mv[cnt].saving = save;
      mv[cnt++].cost = cost;
    }
  return cnt;
}

/* Apply moves mv[0..cnt) to a copy of cur. */
static int mp__st_apply(const mp_graph_t *g, const mp_plan_options_t *o, const mp__st_t *cur,
                        const mp__mv_t *mv, size_t cnt, const uint32_t *xs, mp__st_t *out,
                        mp_error_t *err) {
  size_t j;
  int rc;
  if ((rc = mp__st_copy(g, cur, out)) != 0) return mp_error_set(err, rc, "", "out of memory");
  for (j = 0; j < cnt; j++) {
    size_t x;
    for (x = 0; x < mv[j].x_cnt; x++) out->dec[xs[mv[j].x_off + x]] = MP_RES_RECOMPUTE;
    if (mv[j].remat != 0) {
      out->remat[mv[j].v] = mv[j].remat;
      continue;
    }
    out->dec[mv[j].v] = mv[j].to;
    if (mv[j].to == MP_RES_SWAP) {
      if (mv[j].after > out->after[mv[j].v]) out->after[mv[j].v] = mv[j].after;
      if (mv[j].wait != 0 && (out->wait[mv[j].v] == 0 || mv[j].wait < out->wait[mv[j].v]))
        out->wait[mv[j].v] = mv[j].wait;
    } else {
      out->after[mv[j].v] = out->wait[mv[j].v] = 0;
    }
  }
  if ((rc = mp__st_eval(g, o, out, err)) != 0) mp__st_free(out);
  return rc;
}

/* Bytes of pinned host memory the SWAP decisions may hold at once (each
 * value has one host copy at most: an upper bound on the host peak). */
static uint64_t mp__host_need(const mp_graph_t *g, const uint8_t *dec) {
  uint64_t h = 0;
  size_t v;
  for (v = 0; v < g->n_nodes; v++)
    if (mp__is_act(g, (uint32_t)v) && dec[v] == MP_RES_SWAP &&
        __builtin_add_overflow(h, g->nodes[v].bytes, &h))
      return UINT64_MAX;
  return h;
}

typedef struct {
  uint32_t v;
  double cost;
} mp__undo_t;

static int mp__undo_cmp(const void *a, const void *b) {
  const mp__undo_t *x = a, *y = b;
  if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  return x->v > y->v ? -1 : (x->v < y->v ? 1 : 0);
}

/* A round targets at most 1/MP__BATCH_FRACTION of the peak. */
#define MP__BATCH_FRACTION 10

/* Searches that stop improving the least peak for this many rounds end. */
#define MP__NOPROG_MAX 48

/* The greedy (mp__swap_greedy), or with least_plan the search pushed
 * toward budget 0 whose answer is the plan of least peak it met
 * (mp__swap_least): no undo pass, judged against o->budget. */
static int mp__greedy(const mp_graph_t *g, const mp_plan_options_t *o, const uint8_t *init,
                      double t0, int least_plan, mp__mig_t *m, mp_error_t *err) {
  size_t n = g->n_nodes, v, iters = 0, cap_iters, noprog = 0;
  const mp_plan_options_t *asked = o;
  mp_plan_options_t zo;
  mp__st_t cur, trial, best;
  mp__mv_t *mv = NULL;
  mp__scr_t sc;
  uint64_t *ban = NULL, least = UINT64_MAX;
  double *cost_at = NULL;
  uint8_t *init_dec = NULL;
  int rc;

  mp__progress_phase(o->should_stop, o->stop_arg, "swap", -1);
  memset(m, 0, sizeof(*m));
  memset(&cur, 0, sizeof(cur));
  memset(&trial, 0, sizeof(trial));
  memset(&best, 0, sizeof(best));
  memset(&sc, 0, sizeof(sc));
  if (least_plan) {
    zo = *o;
    zo.budget = 0;
    o = &zo;
  }
  sc.stamp = calloc(n, sizeof(uint32_t));
  sc.stack = malloc(n * sizeof(uint32_t));
  cur.dec = calloc(n, 1);
  cur.after = calloc(n, sizeof(uint32_t));
  cur.wait = calloc(n, sizeof(uint32_t));
  cur.remat = calloc(n, sizeof(uint32_t));
  init_dec = calloc(n, 1);
  mv = malloc(n * sizeof(*mv));
  ban = calloc(n, sizeof(uint64_t));
  cost_at = calloc(n, sizeof(double));
  if (!cur.dec || !cur.after || !cur.wait || !cur.remat || !init_dec || !mv || !ban || !cost_at || !sc.stamp || !sc.stack) {
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
    goto out;
  }
  if (init) {
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v)) init_dec[v] = init[v];
    memcpy(cur.dec, init_dec, n);
  }
  if ((rc = mp__st_eval(g, o, &cur, err)) != 0) goto out;
  if (mp__host_ok(o, &cur.sim)) {
    least = cur.sim.peak_bytes;
    if (least_plan && (rc = mp__st_copy(g, &cur, &best)) != 0) goto out_nomem;
  }
  /* Each accepted round changes at least one decision along KEEP -> SWAP
   * -> RECOMPUTE or holds a swap-in back; the cap only guards against
   * estimates that keep proposing moves the simulator does not reward. */
  cap_iters = 4 * g->n_activations + 64;

  while (cur.sim.peak_bytes > o->budget && iters++ < cap_iters && noprog <= MP__NOPROG_MAX) {
    uint64_t peak = cur.sim.peak_bytes, excess = peak - o->budget, host_used;
    /* Far above the budget, moderate batches: the estimates hold for small
     * changes, and a plan that moved everything at once is hard to repair. */
    if (excess > peak / MP__BATCH_FRACTION) excess = peak / MP__BATCH_FRACTION;
    size_t cnt, take = 0, j, kept;
    double sum = 0, d2h_acc = 0;
    int nomem = 0;
    if ((rc = mp__plan_stop(o, t0, err)) != 0) goto out;
    host_used = mp__host_need(g, cur.dec);
    sc.n_xs = 0;
    cnt = mp__candidates(g, o, &cur, host_used, ban, &sc, mv, &nomem);
    if (nomem) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto out;
    }
    if (cnt == 0) break;
    qsort(mv, cnt, sizeof(*mv), mp__mv_cmp);
    /* Best first until the excess is covered, within the host budget; new
     * swap-outs share the D2H queue, so each must still end by the peak
     * after the ones taken before it (estimated one after the other). */
    for (j = 0, kept = 0; j < cnt && sum < (double)excess; j++) {
      if (mv[j].to == MP_RES_SWAP && cur.dec[mv[j].v] != MP_RES_SWAP) {
        uint64_t b = g->nodes[mv[j].v].bytes;
        if (b > o->device.host_bytes || host_used > o->device.host_bytes - b) continue;
        if (mv[j].slack < INFINITY) {
          if (d2h_acc > mv[j].slack) continue;
          d2h_acc += mp_device_copy_time(&o->device, g, b, 0);
        }
        host_used += b;
      }
      mv[kept++] = mv[j];
      sum += mv[j].saving;
    }
    take = kept;
    if (take == 0) break;
    if ((rc = mp__st_apply(g, o, &cur, mv, take, sc.xs, &trial, err)) != 0) goto out;
    if (trial.sim.peak_bytes > peak && take > 1) {
      mp__st_free(&trial);
      take = 1;
      if ((rc = mp__st_apply(g, o, &cur, mv, take, sc.xs, &trial, err)) != 0) goto out;
    }
    if (trial.sim.peak_bytes > peak) {
      mp__st_free(&trial);
      ban[mv[0].v] = peak;
      noprog++;
      continue;
    }
    for (j = 0; j < take; j++) {
      size_t x;
      cost_at[mv[j].v] += mv[j].cost + MP__FREE_COST;
      for (x = 0; x < mv[j].x_cnt; x++) cost_at[sc.xs[mv[j].x_off + x]] += MP__FREE_COST;
    }
    mp__st_free(&cur);
    cur = trial;
    memset(&trial, 0, sizeof(trial));
    if (mp__host_ok(o, &cur.sim) && cur.sim.peak_bytes < least) {
      least = cur.sim.peak_bytes;
      noprog = 0;
      if (least_plan) {
        mp__st_free(&best);
        if ((rc = mp__st_copy(g, &cur, &best)) != 0) goto out_nomem;
      }
    } else {
      noprog++;
    }
  }

  o = asked;
  if (least_plan) {
    /* the plan of least peak met, rebuilt from its decisions (the search
     * is deterministic: the same schedule and figures) */
    mp__st_free(&cur);
    cur = best;
    memset(&best, 0, sizeof(best));
    if (cur.dec == NULL) { /* nothing within the host budget: keep everything */
      if ((cur.dec = calloc(n, 1)) == NULL || (cur.after = calloc(n, sizeof(uint32_t))) == NULL ||
          (cur.wait = calloc(n, sizeof(uint32_t))) == NULL ||
          (cur.remat = calloc(n, sizeof(uint32_t))) == NULL)
        goto out_nomem;
    }
    if ((rc = mp__st_eval(g, o, &cur, err)) != 0) goto out;
  }
  m->feasible = cur.sim.peak_bytes <= o->budget && mp__host_ok(o, &cur.sim);
  if (m->feasible && !least_plan) {
    /* Undo what the final plan does not need, most expensive first. */
    mp__undo_t *ud = malloc(n * sizeof(*ud));
    size_t nu = 0, j;
    if (ud == NULL) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto out;
    }
    for (v = 0; v < n; v++)
      if (mp__is_act(g, (uint32_t)v) &&
          (cur.dec[v] != init_dec[v] || cur.remat[v] != 0 ||
           (cur.dec[v] == MP_RES_SWAP && (cur.after[v] != 0 || cur.wait[v] != 0)))) {
        ud[nu].v = (uint32_t)v;
        ud[nu++].cost = cost_at[v];
      }
    qsort(ud, nu, sizeof(*ud), mp__undo_cmp);
    for (j = 0; j < nu; j++) {
      uint32_t u = ud[j].v;
      double tol = 1e-9 * (1.0 + fabs(cur.sim.time_total));
      if ((rc = mp__plan_stop(o, t0, err)) != 0) {
        free(ud);
        goto out;
      }
      if ((rc = mp__st_copy(g, &cur, &trial)) != 0) {
        free(ud);
        rc = mp_error_set(err, rc, "", "out of memory");
        goto out;
      }
      trial.dec[u] = init_dec[u];
      trial.after[u] = 0;
      trial.wait[u] = 0;
      trial.remat[u] = 0;
      if ((rc = mp__st_eval(g, o, &trial, err)) != 0) {
        free(ud);
        mp__st_free(&trial);
        goto out;
      }
      if (trial.sim.peak_bytes <= o->budget && mp__host_ok(o, &trial.sim) &&
          trial.sim.time_total <= cur.sim.time_total + tol) {
        mp__st_free(&cur);
        cur = trial;
        memset(&trial, 0, sizeof(trial));
      } else {
        mp__st_free(&trial);
      }
    }
    free(ud);
  }

  /* The answer: cur's schedule with explicit frees (the liveness pass's, so
   * the same plan), simulated once more in that form. */
  m->dec = cur.dec;
  m->after = cur.after;
  m->wait = cur.wait;
  m->remat = cur.remat;
  cur.dec = NULL;
  cur.after = NULL;
  cur.wait = NULL;
  cur.remat = NULL;
  m->least_peak = least;
  for (v = 0; v < n; v++)
    if (mp__is_act(g, (uint32_t)v) && cur.info.eff && cur.info.eff[v] != MP_RES_KEEP)
      m->n_decisions++;
  if (m->feasible || (least_plan && mp__host_ok(o, &cur.sim))) {
    m->schedule = cur.s;
    cur.s = NULL;
    if (mp_schedule_insert_frees(g, m->schedule) != 0) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto out;
    }
    if ((rc = mp__simulate_planned(g, &o->device, m->schedule, "migration", &m->sim, err)) != 0)
      goto out;
    m->feasible = m->sim.peak_bytes <= o->budget && mp__host_ok(o, &m->sim);
    if (mp__host_ok(o, &m->sim) && (least_plan || m->sim.peak_bytes < m->least_peak))
      m->least_peak = m->sim.peak_bytes;
  }
  rc = 0;
  goto out;
out_nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
out:
  if (rc != 0) mp__mig_free(m);
  mp__st_free(&cur);
  mp__st_free(&trial);
  mp__st_free(&best);
  free(mv);
  free(ban);
  free(cost_at);
  free(sc.stamp);
  free(sc.stack);
  free(sc.xs);
  free(init_dec);
  return rc;
}

/* Probes of mp__swap_greedy below the plan's own peak. */
#define MP__SWAP_PROBES 2

/* The greedy at o->budget and, when it plans, again just below the peak of
 * its plan, MP__SWAP_PROBES times down the peaks, keeping the fastest plan.
 * The search's path depends on the budget (each round covers the excess
 * over it, and the undo pass keeps what the budget needs), so a tighter
 * budget may lead it to a faster plan that also fits this one: U-Net
 * planned 714 at 5,440,408,525 B (peak 5,371,050,760) and 713 at
 * 5,337,559,152 B. Every probe's plan peaks below the budget, so this only
 * lowers the time, and feasibility is the first search's. A probe that
 * passes the deadline ends the probing with the plan so far. */
int mp__swap_greedy(const mp_graph_t *g, const mp_plan_options_t *o, const uint8_t *init,
                    double t0, mp__mig_t *m, mp_error_t *err) {
  uint64_t p;
  int rc = mp__greedy(g, o, init, t0, 0, m, err), k;
  if (rc != 0 || !m->feasible) return rc;
  p = m->sim.peak_bytes;
  for (k = 0; k < MP__SWAP_PROBES && p > 0; k++) {
    mp_plan_options_t po = *o;
    mp__mig_t x;
    double tol = 1e-9 * (1.0 + fabs(m->sim.time_total));
    po.budget = p - 1;
    rc = mp__greedy(g, &po, init, t0, 0, &x, err);
    if (rc == MP_ETIMEDOUT) return 0;
    if (rc != 0) {
      mp__mig_free(m);
      return rc;
    }
    if (!x.feasible) {
      mp__mig_free(&x);
      break;
    }
    p = x.sim.peak_bytes;
    if (x.least_peak > m->least_peak) x.least_peak = m->least_peak;
    if (x.sim.time_total < m->sim.time_total - tol) {
      mp__mig_free(m);
      *m = x;
    } else {
      if (x.least_peak < m->least_peak) m->least_peak = x.least_peak;
      mp__mig_free(&x);
    }
  }
  return 0;
}

int mp__swap_least(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__mig_t *m,
                   mp_error_t *err) {
  return mp__greedy(g, o, NULL, t0, 1, m, err);
}

/* The swap solver: the greedy from keeping everything; when it ends above
 * the budget, the least-peak plan of the search pushed toward budget 0
 * (mp__swap_least), which does not depend on the budget: every budget from
 * its peak on plans, and min_feasible_budget is that peak, the same
 * whatever budget was asked. */
int mp__plan_swap(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp__mig_t m;
  int rc;
  r->solver_used = self->id;
  if ((rc = mp__swap_greedy(g, o, NULL, t0, &m, err)) != 0) return rc;
  if (m.feasible) {
    r->source = m.n_decisions > 0 ? "swap-greedy" : "keep-all";
  } else {
    mp__mig_free(&m);
    if ((rc = mp__swap_least(g, o, t0, &m, err)) != 0) return rc;
    if (m.feasible) r->source = "swap-least";
  }
  rc = mp__mig_adopt(g, &m, r);
  mp__mig_free(&m);
  if (rc != 0) return mp_error_set(err, rc, "", "out of memory");
  return 0;
}
