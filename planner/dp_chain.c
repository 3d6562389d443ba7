/* dp_chain.c - the prefix DP (dp_chain.h): the lower-set DP of
 * docs/algorithms.md restricted to the n+1 prefixes of the activations'
 * topological order, in the default accounting and the time objective.
 * On a chain the prefixes are all the lower sets, so the answer is the exact
 * DP's optimum; on a near-chain it is the best plan whose segments are runs
 * of that order.
 *
 * Notation. State L (0..n) is the first L activations; M, T, SV are prefix
 * sums of bytes, time and saved bytes; TR of the time of recompute:false
 * nodes; MR of what a segment keeps of its nodes whatever its bounds (the
 * bytes and saved bytes of recompute:false nodes, the saved bytes the others
 * may hold from the forward pass, mp__saved_held). bd(L) is the nodes before
 * L that a node at or after L reads (the checkpoints a step into L keeps,
 * recompute:false ones aside), g(L) their bytes with the recompute:false
 * ones. A step L' -> L costs k + 2 (M_L - M_L') + g(L') + C + SV_L - SV_L'
 * (C: the largest workspace), keeps bd(L) from L' on (their bytes and the
 * saved bytes not in MR) plus the MR of the segment, and charges the rest
 * of the segment; a step into V keeps nothing and charges nothing. These are
 * the exact DP's figures (dp_internal.h, mp__step_cost) for these sets.
 *
 * Why it is fast. A pair (a, k) of state L' is carried as a^ = a - TR_L',
 * k^ = k - MR_L'; then a step into L adds the same (t, m) of bd(L) to every
 * source L' <= first(L) (the earliest node of bd(L)), and the source is
 * feasible exactly while sigma = cap - C - g(L') + 2 M_L' + SV_L' - k >=
 * 2 M_L + SV_L:
 * every pair has a fixed expiry, and 2 M_L + SV_L only grows, so expired pairs are
 * dropped for good. A forward pass keeps only pairs whose charged time plus a
 * Lagrangian lower bound on what remains stays within a cut R, and that test
 * is linear in the source pair: a^ - lambda k^ >= a threshold of L. The
 * pairs sit in one array in state order; a max-tree over the states holds
 * each state's best score among its alive pairs, so the sources of L that can
 * pass are found without looking at the others;
 * the few sources after first(L) are stepped one by one. R grows until a
 * pass's best plan is within it, which then is optimal (the pairs of an
 * optimal path pass every cut at or above the optimum). The bound's
 * multiplier is the one that maximises the bound at {} (golden-section
 * search; the bound is concave in it). Before the exact passes, the beam's
 * (below) find a plan whose charged time U caps R and lets it jump to U
 * (mp__chain_next_cut); on a chain the beam is wide (MP__CHAIN_BEAM_WIDE),
 * since its plan is also the answer when the exact passes stop at a limit.
 * An exact pass's candidates wait in a buffer and join their target's
 * staircase in sorted batches (mp__chain_flush), not one insertion each.
 * The reverse passes
 * (least peak to finish, hq, and the Lagrangian bound) are O(n window) and
 * O(n span).
 *
 * The tail bound. On chains whose sizes and times are drawn independently
 * (close to a knapsack, thousands of checkpoints) the Lagrangian bound
 * misses the optimum by what the last few dozen segments cost beyond their
 * relaxation, and every pair along the chain sits within that gap. So
 * after the beam, on a chain, the last MP__CHAIN_TAIL states (more while
 * that stays cheap: MP__CHAIN_TAIL_MAX, MP__CHAIN_TAIL_WORK) get an exact
 * cost to finish as a function of the kept memory, up to a cap
 * (mp__chain_tail): the exact passes cut pairs of those states by it, and
 * the Lagrangian bounds of the states before them are raised through it
 * (mp__chain_tail_floor), which brings the bound at {} to within about a
 * unit of the optimum on the random chains of `make bench`. What remains
 * slow: chains where many pairs tie within that unit (sizes and times
 * proportional to each other, or shrinking by stages), where a solve can
 * still stop at the work or pair limit with the beam's plan
 * (docs/algorithms.md).
 */
#include "dp_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"
#include "plan_internal.h"

/* Past this many candidate steps in all exact passes, the search stops and
 * answers with the best plan a pass found (exact_used = 0). Near-chains get a fifth:
 * their pairs are many (every state mixes the choices of several open
 * values) and their answer is not exact anyway. */
#define MP__CHAIN_WORK_LIMIT 100000000u
#define MP__CHAIN_NEAR_WORK_LIMIT 20000000u
/* The beam: passes keeping only the few pairs of least charged time plus
 * bound per state, their cut growing four times faster until one finds a
 * plan, valid but not proven best. They run before the exact passes, for
 * an upper bound, and their plan answers when the exact passes stop at a
 * limit first. On a near-chain it keeps MP__CHAIN_BEAM pairs per state. On
 * a chain it keeps MP__CHAIN_BEAM_WIDE (fewer past MP__CHAIN_BEAM_WORK / n
 * activations, down to MP__CHAIN_BEAM, so that the beam's share of a solve
 * stays about the same on longer chains): its plan is the upper bound that
 * the exact passes' cut goes to, and the answer when they stop at a limit.
 * On the random 10,000-node chains of `make bench` at 10-90% of the range
 * 64 pairs find plans that charge up to 0.06% less than 4 pairs' with
 * uniform sizes and up to 17.5% less with heavy-tailed ones, at about the
 * same time per solve, and let more solves prove their optimum. */
#define MP__CHAIN_BEAM 4
#define MP__CHAIN_BEAM_WIDE 64
#define MP__CHAIN_BEAM_WORK 640000u
/* The exact passes merge their candidates into the staircase in batches of
 * this many plus a quarter of the staircase (mp__chain_push). */
#define MP__CHAIN_BATCH 64
/* The tail bound (mp__chain_tail): over the last MP__CHAIN_TAIL states;
 * when its bound at {} is still below the beam's plan by more than
 * MP__CHAIN_TAIL_GAP of itself, built again over up to MP__CHAIN_TAIL_MAX
 * while it has merged fewer than MP__CHAIN_TAIL_WORK labels. Labels up to
 * MP__CHAIN_TAIL_VBAR times the
 * beam plan's cost to finish from n - MP__CHAIN_TAIL_MAX (plus a margin).
 * On random 10,000-node chains at 10% of the range the end's extra cost
 * can reach back further than 256 states (heavy-tailed sizes, seed 2: the
 * bound misses the optimum by 22 with 256 states, proven with 512). */
#define MP__CHAIN_TAIL 256
#define MP__CHAIN_TAIL_MAX 1024
#define MP__CHAIN_TAIL_WORK 20000000u
#define MP__CHAIN_TAIL_GAP 1e-3
#define MP__CHAIN_TAIL_VBAR 1.5
/* Chains longer than this get no tail bound: on random 100,000-node chains
 * every solve stops at the pair limit with or without it (the bound is
 * within a unit of the optimum, but millions of pairs tie within that), so
 * it would only add its own time to every solve of the slack walk (the
 * staged 100,000-node chain at 10%: 32.7 s of CPU with it, 16-18 s
 * without). */
#define MP__CHAIN_TAIL_MAX_N 20000

/* The bound of one multiplier is tight for the pairs whose kept memory is
 * what its optimum keeps, and weak for the others: four more multipliers,
 * 0.5, 0.8, 1.25 and 2 times the best one, filter the rest. */
#define MP__CHAIN_NXLAM 4
static const double mp__chain_xlam[MP__CHAIN_NXLAM] = {0.5, 0.8, 1.25, 2.0};

typedef struct {
  double a;        /* a^: retained time minus TR of the state */
  uint64_t k;      /* k^: kept bytes minus MR of the state */
  uint64_t p;      /* largest step peak along the path (activation terms) */
  uint32_t state;  /* the pair's state L */
  uint32_t from;   /* index of the previous pair, UINT32_MAX at {} */
} mp__cpair_t;

/* A label of the tail bound: from its state, a pair keeping at most k
 * (k^, as the pairs) can finish charging v more. */
typedef struct {
  uint64_t k;
  double v;
} mp__ctail_t;

/* A node of the max-tree over states, on the beam's heap. */
typedef struct {
  double v;           /* its best score */
  size_t x, first, len; /* its index and the states it covers */
} mp__cnode_t;

typedef struct {
  const mp_graph_t *g;
  size_t n;
  uint32_t *act;              /* compact -> graph index */
  uint64_t *M, *MR, *SV;      /* per state, n+1 */
  uint64_t *kb;               /* per node: what keeping it in bd adds beyond MR */
  double *T, *TR;
  uint64_t *gb;               /* g(L) */
  uint64_t *mb;               /* bytes of bd(L) without recompute:false nodes */
  double *tb;                 /* ... and their time */
  uint32_t *bd_off, *bd;      /* bd(L) without recompute:false nodes, ascending */
  uint32_t *first;            /* first(L): earliest node of bd(L), or L */
  size_t span;                /* largest L - first(L) */
  uint64_t C, cap;
  uint64_t *hq;               /* least peak to finish from L with nothing kept */
  double lam, *H;             /* the multiplier and the Lagrangian bound */
  double xlam[MP__CHAIN_NXLAM]; /* more multipliers around lam, and their bounds */
  double *xH[MP__CHAIN_NXLAM];
  /* the pairs */
  mp__cpair_t *pr;
  size_t npr, cappr;
  size_t *off;                /* pairs of state L: pr[off[L] .. off[L+1]) */
  double *pm;                 /* per pair: the best score of its state's pairs up to it */
  uint32_t *alive;            /* per state: its pairs still feasible for some target */
  double *tree;               /* max-tree over the states (mp__chain_tree_set) */
  size_t tcap;
  mp__cpair_t *cand;
  size_t ncand, capcand;
  mp__cpair_t *buf, *tmp;     /* exact passes: candidates not yet merged, and merge space */
  size_t nbuf, *runs;         /* (capacity capcand, as cand's) */
  size_t hint;                /* where the last push placed or met its pair */
  size_t work, limit;          /* candidate steps so far, and the limit */
  size_t beam;                /* the beam's pairs per state (0: all, an exact pass) */
  int no_skip;                /* tests: the beam's far steps by mp__chain_far */
  mp__chain_stats_t *stats;   /* NULL, or figures for the tests */
  mp__cnode_t *heap;          /* the beam's far search: tree nodes, best first */
  size_t nheap, capheap;
  /* the tail bound (mp__chain_tail): for the states tail0 .. n-1, the
   * labels tl[toff[L - tbase] ..) (tnum[L - tbase] of them), kept memory
   * k^ ascending and cost rising; 0 tail0: none */
  size_t tail0, tbase;
  size_t *toff, *tnum;
  mp__ctail_t *tl;
  double tvbar;               /* the labels' cap: beyond the last, at least this */
} mp__chain_t;

static double mp__cscore(const mp__chain_t *c, const mp__cpair_t *x) {
  return x->a - c->lam * (double)x->k;
}

/* sigma of a pair: its source stays feasible for targets L with 2 M_L + SV_L <= it. */
static uint64_t mp__csigma(const mp__chain_t *c, const mp__cpair_t *x) {
  uint32_t s = x->state;
  uint64_t lose = c->C + c->gb[s] + c->MR[s] + x->k;
  uint64_t gain = c->cap + 2 * c->M[s] + c->SV[s];
  return gain > lose ? gain - lose : 0;
}

/* ---- The shape ----------------------------------------------------------- */

static int mp__chain_index(const mp_graph_t *g, uint32_t **act_out, int32_t **pos_out,
                           size_t *n_out) {
  size_t v, n = 0;
  uint32_t *act = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  int32_t *pos = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(int32_t));
  if (!act || !pos) {
    free(act);
    free(pos);
    return MP_ENOMEM;
  }
  for (v = 0; v < g->n_nodes; v++) {
    pos[v] = -1;
    if (g->nodes[v].kind == MP_KIND_ACTIVATION) {
      pos[v] = (int32_t)n;
      act[n++] = (uint32_t)v;
    }
  }
  *act_out = act;
  *pos_out = pos;
  *n_out = n;
  return 0;
}

/* The last activation that reads compact node i (or i itself). */
static size_t mp__chain_reach(const mp_graph_t *g, const int32_t *pos, uint32_t v, size_t i) {
  size_t r = i, k;
  for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
    int32_t p = pos[g->succ[k]];
    if (p >= 0 && (size_t)p > r) r = (size_t)p;
  }
  return r;
}

int mp__chain_shape(const mp_graph_t *g, mp__chain_shape_t *out) {
  uint32_t *act;
  int32_t *pos;
  size_t n, i, k, live = 0, *ends;
  memset(out, 0, sizeof(*out));
  if (mp__chain_index(g, &act, &pos, &n) != 0) return MP_ENOMEM;
  /* width: for each boundary L, the nodes before L read at or after L;
   * ends[r] counts the nodes whose last reader is r */
  ends = calloc(n + 1, sizeof(size_t));
  if (ends == NULL) {
    free(act);
    free(pos);
    return MP_ENOMEM;
  }
  out->n_act = n;
  out->chain = 1;
  for (i = 0; i < n; i++) {
    size_t r = mp__chain_reach(g, pos, act[i], i);
    int reads_prev = i == 0;
    if (live > out->width) out->width = live; /* the boundary before i */
    live -= ends[i];
    if (r > i) {
      ends[r]++;
      live++;
    }
    for (k = g->pred_off[act[i]]; k < g->pred_off[act[i] + 1] && !reads_prev; k++)
      reads_prev = pos[g->pred[k]] == (int32_t)i - 1;
    if (!reads_prev) out->chain = 0;
  }
  free(ends);
  free(act);
  free(pos);
  return 0;
}

/* ---- Figures per state --------------------------------------------------- */

static void mp__chain_free(mp__chain_t *c) {
  free(c->act);
  free(c->M);
  free(c->MR);
  free(c->SV);
  free(c->kb);
  free(c->T);
  free(c->TR);
  free(c->gb);
  free(c->mb);
  free(c->tb);
  free(c->bd_off);
  free(c->bd);
  free(c->first);
  free(c->hq);
  free(c->H);
  for (int i = 0; i < MP__CHAIN_NXLAM; i++) free(c->xH[i]);
  free(c->pr);
  free(c->off);
  free(c->tree);
  free(c->pm);
  free(c->alive);
  free(c->cand);
  free(c->buf);
  free(c->tmp);
  free(c->runs);
  free(c->heap);
  free(c->toff);
  free(c->tnum);
  free(c->tl);
}

static int mp__chain_init(mp__chain_t *c, const mp_graph_t *g, uint64_t budget) {
  int32_t *pos = NULL;
  size_t n, i, L, nbd = 0, capbd;
  uint32_t *reach = NULL, *open = NULL;
  size_t nopen = 0;
  memset(c, 0, sizeof(*c));
  c->g = g;
  if (mp__chain_index(g, &c->act, &pos, &c->n) != 0) return MP_ENOMEM;
  n = c->n;
  c->M = calloc(n + 1, sizeof(uint64_t));
  c->MR = calloc(n + 1, sizeof(uint64_t));
  c->SV = calloc(n + 1, sizeof(uint64_t));
  c->kb = calloc(n ? n : 1, sizeof(uint64_t));
  c->T = calloc(n + 1, sizeof(double));
  c->TR = calloc(n + 1, sizeof(double));
  c->gb = calloc(n + 1, sizeof(uint64_t));
  c->mb = calloc(n + 1, sizeof(uint64_t));
  c->tb = calloc(n + 1, sizeof(double));
  c->bd_off = calloc(n + 2, sizeof(uint32_t));
  c->first = calloc(n + 1, sizeof(uint32_t));
  c->hq = calloc(n + 1, sizeof(uint64_t));
  c->H = calloc(n + 1, sizeof(double));
  c->off = calloc(n + 2, sizeof(size_t));
  c->alive = calloc(n + 1, sizeof(uint32_t));
  for (c->tcap = 1; c->tcap < n + 1; c->tcap *= 2) {
  }
  c->tree = malloc(2 * c->tcap * sizeof(double));
  reach = malloc((n ? n : 1) * sizeof(uint32_t));
  open = malloc((n ? n : 1) * sizeof(uint32_t));
  capbd = 2 * n + 16;
  c->bd = malloc(capbd * sizeof(uint32_t));
  if (!c->M || !c->MR || !c->SV || !c->kb || !c->T || !c->TR || !c->gb || !c->mb || !c->tb || !c->bd_off ||
      !c->first || !c->hq || !c->H || !c->off || !reach || !open || !c->bd || !c->alive ||
      !c->tree) {
    free(pos);
    free(reach);
    free(open);
    return MP_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    const mp_node_t *nd = &g->nodes[c->act[i]];
    /* no overflow: activation bytes plus saved bytes fit (graph.c) */
    uint64_t held = !nd->recompute || mp__saved_held(g, c->act[i]) ? nd->saved_bytes : 0;
    c->M[i + 1] = c->M[i] + nd->bytes;
    c->T[i + 1] = c->T[i] + nd->time;
    c->SV[i + 1] = c->SV[i] + nd->saved_bytes;
    c->MR[i + 1] = c->MR[i] + (nd->recompute ? 0 : nd->bytes) + held;
    c->kb[i] = nd->bytes + nd->saved_bytes - held;
    c->TR[i + 1] = c->TR[i] + (nd->recompute ? 0 : nd->time);
    if (nd->workspace_bytes > c->C) c->C = nd->workspace_bytes;
    reach[i] = (uint32_t)mp__chain_reach(g, pos, c->act[i], i);
  }
  /* bd(L) for every L: the open nodes (read at or after L), kept ascending
   * by removing the ones whose last reader is before L. */
  for (L = 0; L <= n; L++) {
    size_t w = 0, k;
    uint64_t gsum = 0, msum = 0;
    double tsum = 0;
    if (L > 0 && reach[L - 1] >= L) open[nopen++] = (uint32_t)(L - 1);
    for (k = 0; k < nopen; k++)
      if (reach[open[k]] >= L) open[w++] = open[k];
    nopen = w;
    c->bd_off[L] = (uint32_t)nbd;
    c->first[L] = (uint32_t)L;
    for (k = 0; k < nopen; k++) {
      const mp_node_t *nd = &g->nodes[c->act[open[k]]];
      gsum += nd->bytes;
      if (!nd->recompute) continue;
      if (nbd == capbd) {
        uint32_t *nb = realloc(c->bd, 2 * capbd * sizeof(uint32_t));
        if (nb == NULL) {
          free(pos);
          free(reach);
          free(open);
          return MP_ENOMEM;
        }
        c->bd = nb;
        capbd *= 2;
      }
      c->bd[nbd++] = open[k];
      msum += c->kb[open[k]];
      tsum += nd->time;
      if (open[k] < c->first[L]) c->first[L] = open[k];
    }
    c->gb[L] = L < n ? gsum : 0;
    c->mb[L] = msum;
    c->tb[L] = tsum;
    if (L - c->first[L] > c->span) c->span = L - c->first[L];
  }
  c->bd_off[n + 1] = (uint32_t)nbd;
  free(pos);
  free(reach);
  free(open);
  c->cap = budget;
  return 0;
}

/* What a step from L' to L < n keeps of bd(L) (bytes, time): the nodes at or
 * after L'. */
static void mp__chain_keep(const mp__chain_t *c, size_t Lp, size_t L, uint64_t *m, double *t) {
  uint32_t e;
  if (Lp <= c->first[L]) {
    *m = c->mb[L];
    *t = c->tb[L];
    return;
  }
  *m = 0;
  *t = 0;
  for (e = c->bd_off[L]; e < c->bd_off[L + 1]; e++)
    if (c->bd[e] >= Lp) {
      *m += c->kb[c->bd[e]];
      *t += c->g->nodes[c->act[c->bd[e]]].time;
    }
}

/* The step cost without the kept memory; saturates. */
static uint64_t mp__chain_cost(const mp__chain_t *c, size_t Lp, size_t L) {
  uint64_t x = 2 * (c->M[L] - c->M[Lp]) + (c->SV[L] - c->SV[Lp]);
  x = x > UINT64_MAX - c->gb[Lp] ? UINT64_MAX : x + c->gb[Lp];
  return x > UINT64_MAX - c->C ? UINT64_MAX : x + c->C;
}

/* ---- Reverse passes ------------------------------------------------------- */

/* hq(L): the least model peak (activation terms) of any way from L to V
 * started with nothing kept; the step achieving it goes to qnext. */
static void mp__chain_hq(mp__chain_t *c, uint32_t *qnext) {
  size_t n = c->n, L, Ln;
  c->hq[n] = 0;
  for (L = n; L-- > 0;) {
    uint64_t best = UINT64_MAX;
    uint32_t arg = (uint32_t)n;
    for (Ln = L + 1; Ln <= n; Ln++) {
      uint64_t cost = mp__chain_cost(c, L, Ln), v = cost;
      if (cost >= best) break;
      if (Ln < n) {
        uint64_t m, rest;
        double t;
        mp__chain_keep(c, L, Ln, &m, &t);
        m += c->MR[Ln] - c->MR[L];
        rest = c->hq[Ln] > UINT64_MAX - m ? UINT64_MAX : c->hq[Ln] + m;
        if (rest > v) v = rest;
      }
      if (v < best) {
        best = v;
        arg = (uint32_t)Ln;
      }
    }
    c->hq[L] = best;
    if (qnext) qnext[L] = arg;
  }
}

/* ---- The tail bound ------------------------------------------------------ */

/* The cost to finish from state L >= tail0 with kept memory k^ (as the
 * pairs carry it), at least: the cost of the first label keeping at least
 * k^, else tvbar. */
static double mp__chain_tail_at(const mp__chain_t *c, size_t L, uint64_t k) {
  size_t lo = c->toff[L - c->tbase], end = lo + c->tnum[L - c->tbase], hi = end;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->tl[mid].k < k) lo = mid + 1;
    else hi = mid;
  }
  return lo < end ? c->tl[lo].v : c->tvbar;
}

/* The labels' merge order: kept memory ascending, then cost descending
 * (so that a sweep from the end meets the cheapest of equal ones first). */
static inline int mp__ctail_before(const mp__ctail_t *a, const mp__ctail_t *b) {
  return a->k < b->k || (a->k == b->k && a->v > b->v);
}

/* Sort x[0 .. n) into merge order, the runs (ascending already: one
 * target's labels) starting at runs[0 .. nr), merged pairwise with
 * scratch w; the result is in x or w (returned). */
static mp__ctail_t *mp__ctail_sort(mp__ctail_t *x, mp__ctail_t *w, size_t n, size_t *runs,
                                   size_t nr) {
  while (nr > 1) {
    size_t r, nn = 0;
    mp__ctail_t *t;
    for (r = 0; r < nr; r += 2) {
      size_t a = runs[r], ae = r + 1 < nr ? runs[r + 1] : n, b = ae,
             be = r + 2 < nr ? runs[r + 2] : n, o = a;
      while (a < ae && b < be) w[o++] = mp__ctail_before(&x[b], &x[a]) ? x[b++] : x[a++];
      while (a < ae) w[o++] = x[a++];
      while (b < be) w[o++] = x[b++];
      runs[nn++] = runs[r];
    }
    nr = nn;
    t = x;
    x = w;
    w = t;
  }
  return x;
}

/* Room for need labels in *x of capacity *cap. */
static int mp__ctail_room(mp__ctail_t **x, size_t *cap, size_t need) {
  size_t nc = *cap;
  mp__ctail_t *nx;
  if (need <= nc) return 0;
  while (nc < need) nc *= 2;
  if ((nx = realloc(*x, nc * sizeof(*nx))) == NULL) return MP_ENOMEM;
  *x = nx;
  *cap = nc;
  return 0;
}

/* The tail bound over the states from n - 1 down: at least down to
 * n - MP__CHAIN_TAIL, and on down to lo while it has merged fewer than
 * MP__CHAIN_TAIL_WORK labels (c->tail0: the last state built). For each,
 * every way to finish whose cost is at most vbar, as labels (the most k^
 * a pair may keep to take it, its cost), those another beats (allows at
 * least as much for no more) dropped. A step L -> L'' with kept (m, t)
 * turns a label (k, v) of L'' into (min(k - m, the most the step's own
 * peak allows), v + its charged time); a step into V gives (the most its
 * peak allows, 0). By induction every way of cost at most vbar is
 * represented, so from L with k^ kept no way costs less than the first
 * label allowing k^, and when none does, none costs vbar or less. */
static int mp__chain_tail(mp__chain_t *c, size_t lo_state, double vbar) {
  size_t n = c->n, L, L2, i, ntl = 0, captl = 1024, nb, capb = 1024, capsc = 1024, nr,
         caprun = 64;
  mp__ctail_t *b = malloc(capb * sizeof(*b)), *sc = malloc(capsc * sizeof(*sc));
  size_t *runs = malloc(caprun * sizeof(*runs));
  int rc = MP_ENOMEM;
  size_t tail0 = lo_state, merged = 0;
  c->toff = calloc(n - tail0 + 1, sizeof(size_t));
  c->tnum = calloc(n - tail0 + 1, sizeof(size_t));
  c->tl = malloc(captl * sizeof(mp__ctail_t));
  if (b == NULL || sc == NULL || runs == NULL || c->toff == NULL || c->tnum == NULL ||
      c->tl == NULL)
    goto out;
  c->tbase = tail0;
  c->tvbar = vbar;
  for (L = n; L-- > tail0;) {
    if (merged > MP__CHAIN_TAIL_WORK && L + MP__CHAIN_TAIL < n) break;
    c->tail0 = L;
    nb = 0;
    nr = 0;
    c->toff[L - tail0] = ntl;
    if (c->hq[L] > c->cap) continue; /* nothing finishes from L */
    for (L2 = L + 1; L2 <= n; L2++) {
      uint64_t m = 0, clim, cst = mp__chain_cost(c, L, L2);
      double t = 0, ch;
      size_t lo, hi;
      /* the step's peak only grows with L2 */
      if (cst > c->cap || c->MR[L] > c->cap - cst) break;
      clim = c->cap - cst - c->MR[L];
      if (nr == caprun) {
        size_t *nrun = realloc(runs, 2 * caprun * sizeof(*runs));
        if (nrun == NULL) goto out;
        runs = nrun;
        caprun *= 2;
      }
      runs[nr++] = nb;
      if (L2 == n) {
        if ((rc = mp__ctail_room(&b, &capb, nb + 1)) != 0) goto out;
        if ((rc = mp__ctail_room(&sc, &capsc, nb + 1)) != 0) goto out;
        b[nb].k = clim;
        b[nb++].v = 0;
        continue;
      }
      mp__chain_keep(c, L, L2, &m, &t);
      ch = c->T[L2] - c->T[L] - t - (c->TR[L2] - c->TR[L]);
      lo = c->toff[L2 - tail0];
      hi = lo + c->tnum[L2 - tail0];
      if ((rc = mp__ctail_room(&b, &capb, nb + (hi - lo))) != 0) goto out;
      if ((rc = mp__ctail_room(&sc, &capsc, nb + (hi - lo))) != 0) goto out;
      for (i = lo; i < hi; i++) {
        const mp__ctail_t *x = &c->tl[i];
        double v = x->v + ch;
        if (x->k < m) continue;
        if (v > vbar) break;
        b[nb].v = v;
        if (x->k - m >= clim) { /* the later labels allow no more, cost more */
          b[nb++].k = clim;
          break;
        }
        b[nb++].k = x->k - m;
      }
    }
    {
      /* the sweep from the most kept memory down keeps each label
       * cheaper than every one allowing at least as much */
      mp__ctail_t *sorted = mp__ctail_sort(b, sc, nb, runs, nr);
      double best = HUGE_VAL;
      size_t w = 0;
      if ((rc = mp__ctail_room(&c->tl, &captl, ntl + nb)) != 0) goto out;
      for (i = nb; i-- > 0;)
        if (sorted[i].v < best) {
          best = sorted[i].v;
          c->tl[ntl + w++] = sorted[i];
        }
      for (i = 0; i < w / 2; i++) { /* k ascending */
        mp__ctail_t t = c->tl[ntl + i];
        c->tl[ntl + i] = c->tl[ntl + w - 1 - i];
        c->tl[ntl + w - 1 - i] = t;
      }
      c->tnum[L - tail0] = w;
      ntl += w;
      merged += nb;
    }
  }
  rc = 0;
out:
  free(b);
  free(sc);
  free(runs);
  return rc;
}

/* H(L) raised by the tail bound (L >= tail0), for multiplier lam, H(L) =
 * h: the largest H' such that every way from L with real kept memory K
 * costs at least H' - lam (cap - K). Over the k^ a label allows (up to its
 * k) it costs at least its v, over those past the last label up to what
 * L can keep at least tvbar, and everywhere at least h - lam (cap - K); so
 * H' - lam cap is the least, over those ranges, of max(v - lam K at the
 * range's top, h - lam cap). */
static double mp__chain_tail_floor(const mp__chain_t *c, size_t L, double lam, double h) {
  size_t i, o = c->toff[L - c->tbase], nl = c->tnum[L - c->tbase];
  double c0 = h - lam * (double)c->cap, a = HUGE_VAL, x;
  if (c->hq[L] > c->cap) return h;
  for (i = o; i < o + nl; i++) {
    x = c->tl[i].v - lam * (double)(c->tl[i].k + c->MR[L]);
    if (x < a) a = x;
  }
  x = c->tvbar - lam * (double)(c->cap - c->hq[L]);
  if (x < a) a = x;
  if (a < c0) a = c0;
  return a + lam * (double)c->cap;
}

/* H(L) for multiplier lam: the least over the ways from L to V of charged
 * time + lam (kept memory added before the last step + the last step's
 * cost). A pair (c, k) at L then needs at least H(L) - lam (cap - k) more
 * charged time. Steps whose cost alone passes cap are left out. The steps
 * into L'' > L + span keep all of bd(L''), so their terms are
 * Phi(L'') - Psi(L): a sliding-window minimum (window ends nonincreasing as
 * L falls); the others are stepped one by one. Returns H(0) - lam cap. */
static double mp__chain_lagrange(mp__chain_t *c, double lam, double *H, uint32_t *dq,
                                 double *phi) {
  size_t n = c->n, L, Ln, head = 0, tail = 0, next_in = n; /* deque dq[head..tail) */
  size_t e = n;                                            /* window end (exclusive of V) */
  for (L = n; L-- > 0;) {
    uint64_t lastc = mp__chain_cost(c, L, n);
    double best = lam * (double)lastc, psi;
    size_t lim;
    /* the window: Ln < n with 2 (M_Ln - M_L) + SV_Ln - SV_L + C <= cap */
    while (e > L + 1 && (e - 1 >= n || c->C > c->cap ||
                         2 * (c->M[e - 1] - c->M[L]) + (c->SV[e - 1] - c->SV[L]) >
                             c->cap - c->C))
      e--;
    /* near steps, one by one */
    lim = L + c->span + 1;
    for (Ln = L + 1; Ln < n && Ln <= lim && Ln < e; Ln++) {
      uint64_t m;
      double t, ch;
      if (mp__chain_cost(c, L, Ln) > c->cap) continue;
      mp__chain_keep(c, L, Ln, &m, &t);
      m += c->MR[Ln] - c->MR[L];
      t += c->TR[Ln] - c->TR[L];
      ch = c->T[Ln] - c->T[L] - t;
      if (ch + lam * (double)m + H[Ln] < best) best = ch + lam * (double)m + H[Ln];
    }
    /* far steps: Ln in (lim, e), from the deque */
    while (next_in > lim + 1 && next_in > L + 1) {
      size_t x = --next_in;
      if (x >= n) continue;
      phi[x] = (c->T[x] - c->TR[x]) - c->tb[x] + lam * (double)(c->mb[x] + c->MR[x]) + H[x];
      while (tail > head && phi[dq[tail - 1]] >= phi[x]) tail--;
      /* the deque holds indices in decreasing order of entry: push at the
       * back, the oldest (largest index) leave from the front */
      dq[tail++] = (uint32_t)x;
    }
    while (tail > head && dq[head] >= e) head++;
    psi = (c->T[L] - c->TR[L]) + lam * (double)c->MR[L];
    if (tail > head && phi[dq[head]] - psi < best) best = phi[dq[head]] - psi;
    if (c->tail0 > 0 && L >= c->tail0) best = mp__chain_tail_floor(c, L, lam, best);
    H[L] = best;
  }
  return H[0] - lam * (double)c->cap;
}

/* ---- The forward pass ------------------------------------------------------ */

/* The tree over states: leaf L holds the best score among the alive pairs
 * of state L (their prefix maximum pm at the last alive one). */
static void mp__chain_tree_set(mp__chain_t *c, size_t L) {
  size_t x = c->tcap + L;
  double v = c->alive[L] > 0 ? c->pm[c->off[L] + c->alive[L] - 1] : -HUGE_VAL;
  c->tree[x] = v;
  for (x /= 2; x >= 1; x /= 2) {
    double m = c->tree[2 * x] > c->tree[2 * x + 1] ? c->tree[2 * x] : c->tree[2 * x + 1];
    if (c->tree[x] == m) break;
    c->tree[x] = m;
  }
}

/* x is a better pair than y for the same state: no more kept memory and at
 * least as much retained time, exact ties going to the lower peak, then the
 * earlier predecessor. */
static int mp__cpair_beats(const mp__cpair_t *x, const mp__cpair_t *y) {
  if (x->k != y->k || x->a != y->a) return x->k <= y->k && x->a >= y->a;
  if (x->p != y->p) return x->p < y->p;
  return x->from <= y->from;
}

/* The candidates of the state being built, c->cand[0 .. ncand), are a
 * Pareto staircase sorted by kept memory, retained time strictly rising.
 *
 * The first entry with more kept memory than yk. A state's pairs are
 * stepped in order of kept memory, so the entry where the last one was
 * placed or beaten (c->hint) is tried first, a few entries on, before a
 * binary search of the rest. */
static size_t mp__chain_find(mp__chain_t *c, uint64_t yk) {
  size_t lo = c->hint, hi = c->ncand, lin;
  if (lo > hi || (lo > 0 && c->cand[lo - 1].k > yk)) lo = 0;
  for (lin = 0; lin < 3 && lo < hi && c->cand[lo].k <= yk; lin++) lo++;
  if (lin < 3) return lo;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->cand[mid].k <= yk) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The merge order of candidates: kept memory ascending, then retained time
 * descending, then peak and predecessor ascending (so of two candidates
 * with the same kept memory and retained time, the one that beats the
 * other comes first). */
static inline int mp__cpair_order(const mp__cpair_t *x, const mp__cpair_t *y) {
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  if (x->a != y->a) return x->a > y->a ? -1 : 1;
  if (x->p != y->p) return x->p < y->p ? -1 : 1;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* Sort x[0 .. n) into merge order, with scratch space w of n entries; the
 * result is in x or w (returned). The candidates come in runs already in
 * order (one source's pairs, stepped in order of kept memory), so the
 * runs are found first and merged pairwise. */
static mp__cpair_t *mp__cpair_sort(mp__cpair_t *x, mp__cpair_t *w, size_t n, size_t *runs) {
  size_t nr = 0, i;
  for (i = 0; i < n; i++)
    if (i == 0 || mp__cpair_order(&x[i - 1], &x[i]) > 0) runs[nr++] = i;
  while (nr > 1) {
    size_t r, nn = 0;
    for (r = 0; r < nr; r += 2) {
      size_t a = runs[r], ae = r + 1 < nr ? runs[r + 1] : n, b = ae,
             be = r + 2 < nr ? runs[r + 2] : n, o = a;
      while (a < ae && b < be) w[o++] = mp__cpair_order(&x[b], &x[a]) < 0 ? x[b++] : x[a++];
      while (a < ae) w[o++] = x[a++];
      while (b < be) w[o++] = x[b++];
      runs[nn++] = runs[r];
    }
    nr = nn;
    {
      mp__cpair_t *t = x;
      x = w;
      w = t;
    }
  }
  return x;
}

/* Merge the pending candidates c->buf into the staircase: both in merge
 * order, one sweep keeps each entry whose retained time passes every
 * entry before it (the others are beaten by one of those: no less kept
 * memory and no more retained time, or an exact tie that comes later in
 * the order). The result is the set of candidates no other beats, the
 * same as inserting them one at a time (beating is transitive). */
/* Room for need entries in each of cand, buf and tmp (one capacity,
 * capcand, so that they can trade places) and in runs. */
static int mp__chain_room(mp__chain_t *c, size_t need) {
  size_t nc = c->capcand ? c->capcand : 1024;
  mp__cpair_t *x;
  size_t *r;
  if (need <= c->capcand) return 0;
  while (nc < need) nc *= 2;
  if ((x = realloc(c->cand, nc * sizeof(*x))) == NULL) return MP_ENOMEM;
  c->cand = x;
  if ((x = realloc(c->buf, nc * sizeof(*x))) == NULL) return MP_ENOMEM;
  c->buf = x;
  if ((x = realloc(c->tmp, nc * sizeof(*x))) == NULL) return MP_ENOMEM;
  c->tmp = x;
  if ((r = realloc(c->runs, nc * sizeof(*r))) == NULL) return MP_ENOMEM;
  c->runs = r;
  c->capcand = nc;
  return 0;
}

static void mp__cpair_swap(mp__cpair_t **x, mp__cpair_t **y) {
  mp__cpair_t *t = *x;
  *x = *y;
  *y = t;
}

static int mp__chain_flush(mp__chain_t *c) {
  size_t i = 0, j = 0, nt = 0;
  double top = -HUGE_VAL;
  if (c->nbuf == 0) return 0;
  /* sorted buffer into buf (the sort may end in tmp) */
  if (mp__cpair_sort(c->buf, c->tmp, c->nbuf, c->runs) == c->tmp) mp__cpair_swap(&c->buf, &c->tmp);
  while (i < c->ncand || j < c->nbuf) {
    const mp__cpair_t *x;
    if (j == c->nbuf || (i < c->ncand && mp__cpair_order(&c->cand[i], &c->buf[j]) <= 0))
      x = &c->cand[i++];
    else
      x = &c->buf[j++];
    if (nt == 0 || x->a > top) {
      c->tmp[nt++] = *x;
      top = x->a;
    }
  }
  mp__cpair_swap(&c->cand, &c->tmp);
  c->ncand = nt;
  c->nbuf = 0;
  c->hint = 0;
  return 0;
}

/* Merge candidate y into the staircase at `at` = mp__chain_find(c, y->k).
 * In the exact passes a candidate the staircase does not beat waits in
 * c->buf, merged in batches (mp__chain_flush): inserting into the middle
 * of a staircase of thousands of entries one at a time moved most of them
 * each time. The beam inserts at once (its bar reads the staircase). */
static int mp__chain_push(mp__chain_t *c, const mp__cpair_t *y, size_t at) {
  size_t k;
  if (at > 0 && mp__cpair_beats(&c->cand[at - 1], y)) {
    c->hint = at;
    return 0;
  }
  if (c->beam == 0) {
    int rc = mp__chain_room(c, c->ncand + c->nbuf + 1);
    if (rc != 0) return rc;
    c->buf[c->nbuf++] = *y;
    c->hint = at;
    if (c->nbuf >= MP__CHAIN_BATCH + c->ncand / 4) return mp__chain_flush(c);
    return 0;
  }
  /* y goes at `at`, replacing the entries it beats from at - 1 on */
  if (at > 0 && mp__cpair_beats(y, &c->cand[at - 1])) at--;
  for (k = at; k < c->ncand && mp__cpair_beats(y, &c->cand[k]); k++) {
  }
  if (k == at) {
    int rc = mp__chain_room(c, c->ncand + 1);
    if (rc != 0) return rc;
    memmove(&c->cand[at + 1], &c->cand[at], (c->ncand - at) * sizeof(*y));
    c->ncand++;
  } else if (k > at + 1) {
    memmove(&c->cand[at + 1], &c->cand[k], (c->ncand - k) * sizeof(*y));
    c->ncand -= k - at - 1;
  }
  c->cand[at] = *y;
  c->hint = at + 1;
  return 0;
}

/* The pass's cut and the current target's figures. */
typedef struct {
  double R, tol;
  size_t L;
  uint64_t twoM; /* 2 M_L + SV_L: sources with a smaller sigma have expired */
  uint64_t kmax; /* the most a pair of L may keep and still finish: cap - hq(L) */
  /* the cut per multiplier, for the candidate's retained time a^ and kept
   * memory k^: lam k^ - a^ <= cut */
  double cut[1 + MP__CHAIN_NXLAM];
} mp__cpass_t;

/* The figures of target L in *ps. */
static void mp__chain_target(const mp__chain_t *c, mp__cpass_t *ps, size_t L) {
  int l;
  double base = ps->R + ps->tol - (c->T[L] - c->TR[L]);
  ps->L = L;
  ps->twoM = 2 * c->M[L] + c->SV[L];
  ps->kmax = c->hq[L] > c->cap ? 0 : c->cap - c->hq[L];
  ps->cut[0] = base - c->H[L] + c->lam * (double)(c->cap - c->MR[L]);
  for (l = 0; l < MP__CHAIN_NXLAM; l++)
    ps->cut[1 + l] = base - c->xH[l][L] + c->xlam[l] * (double)(c->cap - c->MR[L]);
}

/* Step pair index xi into the current target with kept (m, t) of bd(L);
 * pushes the candidate when it can still finish and passes the cut. `far`:
 * the pair is alive for this target (mp__chain_alive), so its expiry needs
 * no test. */
static inline int mp__chain_step_x(mp__chain_t *c, const mp__cpass_t *ps, uint32_t xi,
                                   uint64_t m, double t, int far) {
  const mp__cpair_t *x = &c->pr[xi];
  size_t L = ps->L;
  mp__cpair_t y;
  uint64_t kx = x->k + c->MR[x->state], peak;
  double kd;
  int l;
  size_t at;
  c->work++;
  if (!far && mp__csigma(c, x) < ps->twoM) return 0;
  y.a = x->a + t;
  y.k = x->k + m;
  /* A candidate the staircase beats outright goes before its peak is
   * worked out (on the transformer of `make bench`, one in eight). Only a
   * strict beat: ties of kept memory and retained time, which on a chain
   * are nearly all the candidates (the same checkpoints reached from
   * different prefixes), go to mp__chain_push's order by peak. */
  at = mp__chain_find(c, y.k);
  if (at > 0 && c->cand[at - 1].a >= y.a && (c->cand[at - 1].k < y.k || c->cand[at - 1].a > y.a)) {
    c->hint = at;
    return 0;
  }
  if (y.k + c->MR[L] > ps->kmax) return 0;
  /* charged + H(L) - lam (cap - k) <= R, for every multiplier */
  kd = (double)y.k;
  if (c->lam * kd - y.a > ps->cut[0]) return 0;
  for (l = 0; l < MP__CHAIN_NXLAM; l++)
    if (c->xlam[l] * kd - y.a > ps->cut[1 + l]) return 0;
  if (c->tail0 > 0 && L >= c->tail0 &&
      c->T[L] - c->TR[L] - y.a + mp__chain_tail_at(c, L, y.k) > ps->R + ps->tol)
    return 0;
  peak = kx + mp__chain_cost(c, x->state, L);
  y.p = x->p > peak ? x->p : peak;
  y.state = (uint32_t)L;
  y.from = xi;
  return mp__chain_push(c, &y, at);
}

static int mp__chain_step(mp__chain_t *c, const mp__cpass_t *ps, uint32_t xi, uint64_t m,
                          double t) {
  return mp__chain_step_x(c, ps, xi, m, t, 0);
}

static int mp__chain_step_far(mp__chain_t *c, const mp__cpass_t *ps, uint32_t xi, uint64_t m,
                              double t) {
  return mp__chain_step_x(c, ps, xi, m, t, 1);
}

/* State L's pairs still alive for targets of 2 M + SV = twoM, the expired
 * ones dropped for good (its leaf updated). A state's pairs are sorted by
 * kept memory, so its sigma falls along them and its alive pairs are a
 * prefix, which shrinks for good. */
static size_t mp__chain_alive(mp__chain_t *c, size_t L, uint64_t twoM) {
  size_t o = c->off[L], na = c->alive[L];
  while (na > 0 && mp__csigma(c, &c->pr[o + na - 1]) < twoM) na--;
  if (na != c->alive[L]) {
    c->alive[L] = (uint32_t)na;
    mp__chain_tree_set(c, L);
  }
  return na;
}

/* Every alive pair of the states [lo, hi) whose score reaches thr, stepped
 * with (m, t). */
static int mp__chain_far(mp__chain_t *c, const mp__cpass_t *ps, size_t lo, size_t hi, double thr,
                         uint64_t m, double t) {
  size_t stack[3 * 80], sp = 0;
  int rc;
  if (lo >= hi) return 0;
  stack[sp++] = 1, stack[sp++] = 0, stack[sp++] = c->tcap;
  while (sp > 0) {
    size_t len = stack[--sp], first = stack[--sp], x = stack[--sp];
    if (c->tree[x] < thr || first >= hi || first + len <= lo) continue;
    if (len == 1) {
      size_t L = first, i, o = c->off[L], na = mp__chain_alive(c, L, ps->twoM);
      for (i = o; i < o + na; i++)
        if (mp__cscore(c, &c->pr[i]) >= thr &&
            (rc = mp__chain_step_far(c, ps, (uint32_t)i, m, t)) != 0)
          return rc;
      continue;
    }
    stack[sp++] = 2 * x + 1, stack[sp++] = first + len / 2, stack[sp++] = len / 2;
    stack[sp++] = 2 * x, stack[sp++] = first, stack[sp++] = len / 2;
  }
  return 0;
}

/* A pair's charged time so far plus its best bound on what remains. */
static double mp__chain_promise(const mp__chain_t *c, const mp__cpair_t *y, size_t L) {
  uint64_t kreal = y->k + c->MR[L];
  double lb = c->H[L] - c->lam * (double)(c->cap - kreal);
  int l;
  for (l = 0; l < MP__CHAIN_NXLAM; l++) {
    double x = c->xH[l][L] - c->xlam[l] * (double)(c->cap - kreal);
    if (x > lb) lb = x;
  }
  return c->T[L] - c->TR[L] - y->a + lb;
}

/* The beam-th least promise among the candidates of target L so far, or
 * HUGE_VAL while they are fewer. */
static double mp__chain_beam_bar(const mp__chain_t *c, size_t L) {
  double b[MP__CHAIN_BEAM_WIDE];
  size_t i, nb = 0, k = c->beam;
  if (c->ncand < k || k > MP__CHAIN_BEAM_WIDE) return HUGE_VAL;
  for (i = 0; i < c->ncand; i++) { /* b: the k least, ascending */
    double v = mp__chain_promise(c, &c->cand[i], L);
    size_t j;
    if (nb == k && v >= b[k - 1]) continue;
    j = nb < k ? nb++ : k - 1;
    while (j > 0 && b[j - 1] > v) b[j] = b[j - 1], j--;
    b[j] = v;
  }
  return b[k - 1];
}

/* The heap of tree nodes (a max-heap on v). */
static int mp__chain_heap_push(mp__chain_t *c, size_t x, size_t first, size_t len) {
  size_t i;
  double v = c->tree[x];
  if (c->nheap == c->capheap) {
    size_t nc = c->capheap ? 2 * c->capheap : 256;
    mp__cnode_t *nh = realloc(c->heap, nc * sizeof(*nh));
    if (nh == NULL) return MP_ENOMEM;
    c->heap = nh;
    c->capheap = nc;
  }
  for (i = c->nheap++; i > 0 && c->heap[(i - 1) / 2].v < v; i = (i - 1) / 2)
    c->heap[i] = c->heap[(i - 1) / 2];
  c->heap[i].v = v;
  c->heap[i].x = x;
  c->heap[i].first = first;
  c->heap[i].len = len;
  return 0;
}

static mp__cnode_t mp__chain_heap_pop(mp__chain_t *c) {
  mp__cnode_t top = c->heap[0], last = c->heap[--c->nheap];
  size_t i = 0, n = c->nheap;
  if (n == 0) return top;
  for (;;) {
    size_t l = 2 * i + 1, b;
    if (l >= n) break;
    b = l + 1 < n && c->heap[l + 1].v > c->heap[l].v ? l + 1 : l;
    if (c->heap[b].v <= last.v) break;
    c->heap[i] = c->heap[b];
    i = b;
  }
  c->heap[i] = last;
  return top;
}

/* The beam's far steps: mp__chain_far's, with one more skip. The beam keeps
 * the c->beam candidates of least promise, and a far source's candidate
 * has promise at least K - score (K fixed by the target; the first
 * multiplier's term alone), so once `beam` candidates promise less than
 * some bar, a source whose score is below K - bar cannot be kept: it is
 * skipped unstepped. The states are visited best score first (a heap over
 * the max-tree), so the bar falls early and whole subtrees are skipped.
 *
 * The bar is taken from the candidates' staircase as it stands. The
 * staircase loses candidates only to ones that beat them, whose promise is
 * no larger, so the bar can rise only when one candidate beats two of the
 * best ones; a source skipped before that could have been kept. The beam
 * makes no optimality claim either way; on the generated
 * transformers of the bench it keeps the same pairs as without the skip
 * (tests/unit/test_solver_chain.c, test_near_chain_beam_skip). */
static int mp__chain_far_beam(mp__chain_t *c, const mp__cpass_t *ps, size_t lo, size_t hi,
                              double thr, uint64_t m, double t) {
  size_t L = ps->L;
  double K = c->T[L] - c->TR[L] - t + c->H[L] - c->lam * (double)(c->cap - m - c->MR[L]);
  double eps = 1e-9 * (fabs(K) + 1), th = thr, bar;
  int rc;
  if (lo >= hi) return 0;
  c->nheap = 0;
  if ((rc = mp__chain_heap_push(c, 1, 0, c->tcap)) != 0) return rc;
  bar = mp__chain_beam_bar(c, L);
  if (bar < HUGE_VAL && K - bar - eps > th) th = K - bar - eps;
  while (c->nheap > 0) {
    mp__cnode_t nd = mp__chain_heap_pop(c);
    if (nd.v < th) break; /* the best left: nothing else reaches th */
    if (nd.first >= hi || nd.first + nd.len <= lo) continue;
    if (nd.len == 1) {
      size_t S = nd.first, i, o = c->off[S], na = mp__chain_alive(c, S, ps->twoM);
      for (i = o; i < o + na; i++)
        if (mp__cscore(c, &c->pr[i]) >= th &&
            (rc = mp__chain_step_far(c, ps, (uint32_t)i, m, t)) != 0)
          return rc;
      bar = mp__chain_beam_bar(c, L);
      if (bar < HUGE_VAL && K - bar - eps > th) th = K - bar - eps;
      continue;
    }
    if (c->tree[2 * nd.x] >= th && (rc = mp__chain_heap_push(c, 2 * nd.x, nd.first, nd.len / 2)) != 0)
      return rc;
    if (c->tree[2 * nd.x + 1] >= th &&
        (rc = mp__chain_heap_push(c, 2 * nd.x + 1, nd.first + nd.len / 2, nd.len / 2)) != 0)
      return rc;
  }
  return 0;
}

/* The beam: keep the c->beam most promising pairs of the
 * state being built (a sub-staircase, still sorted by kept memory). */
static void mp__chain_beam(mp__chain_t *c, size_t L) {
  size_t i, kept = 0, cnt;
  double lo = HUGE_VAL, hi = -HUGE_VAL, mid;
  int it;
  for (i = 0; i < c->ncand; i++) {
    double v = mp__chain_promise(c, &c->cand[i], L);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  for (it = 0; it < 50 && lo < hi; it++) { /* the promise that keeps at most beam */
    mid = lo + (hi - lo) / 2;
    for (i = 0, cnt = 0; i < c->ncand; i++) cnt += mp__chain_promise(c, &c->cand[i], L) <= mid;
    if (cnt > c->beam) hi = mid;
    else lo = mid;
  }
  for (i = 0; i < c->ncand && kept < c->beam; i++)
    if (mp__chain_promise(c, &c->cand[i], L) <= lo) c->cand[kept++] = c->cand[i];
  if (kept == 0) c->cand[kept++] = c->cand[0];
  c->ncand = kept;
}

/* An exact pass past the work limit or holding more than
 * MP__CHAIN_PAIR_LIMIT pairs (dp_chain.h): it stops, and so do the passes. */
static int mp__chain_over(const mp__chain_t *c) {
  return c->work > c->limit || (c->beam == 0 && c->npr > MP__CHAIN_PAIR_LIMIT);
}

/* One forward pass with cut R. *best_i is the pair that ends the best plan
 * into V (UINT32_MAX: none), *best_c its charged time. */
static int mp__chain_pass(mp__chain_t *c, const mp_plan_options_t *o, double t0, double R,
                          double tol, uint32_t *best_i, double *best_c, mp_error_t *err) {
  size_t n = c->n, L, i;
  mp__cpass_t ps;
  int rc;
  c->npr = 0;
  for (i = 0; i < 2 * c->tcap; i++) c->tree[i] = -HUGE_VAL;
  memset(c->alive, 0, (n + 1) * sizeof(uint32_t));
  ps.R = R;
  ps.tol = tol;
  /* {} holds the one pair (0, 0) */
  if (c->cappr < 1) {
    c->pr = malloc(1024 * sizeof(mp__cpair_t));
    c->pm = malloc(1024 * sizeof(double));
    if (c->pr == NULL || c->pm == NULL) return MP_ENOMEM;
    c->cappr = 1024;
  }
  memset(&c->pr[0], 0, sizeof(c->pr[0]));
  c->pr[0].from = UINT32_MAX;
  c->npr = 1;
  c->off[0] = 0;
  c->off[1] = 1;
  c->pm[0] = 0;
  c->alive[0] = 1;
  mp__chain_tree_set(c, 0);
  for (L = 1; L < n; L++) {
    size_t fst = c->first[L], Lp, k;
    double thr;
    mp__chain_target(c, &ps, L);
    c->ncand = 0;
    c->nbuf = 0;
    /* sources up to first(L): all of bd(L) kept */
    thr = c->T[L] - c->TR[L] - c->tb[L] + c->H[L] - c->lam * (double)c->cap +
          c->lam * (double)(c->mb[L] + c->MR[L]) - R - tol - 1e-9 * fabs(c->lam * (double)c->cap);
    if (c->beam == 0 && (rc = mp__chain_far(c, &ps, 0, fst + 1, thr, c->mb[L], c->tb[L])) != 0)
      return rc;
    /* the sources after it, one by one (in the beam, first: their
     * candidates set the bar of the far steps) */
    for (Lp = fst + 1; Lp < L; Lp++) {
      uint64_t m;
      double t;
      mp__chain_keep(c, Lp, L, &m, &t);
      for (k = c->off[Lp]; k < c->off[Lp + 1]; k++)
        if ((rc = mp__chain_step(c, &ps, (uint32_t)k, m, t)) != 0) return rc;
    }
    if (c->beam > 0 &&
        (rc = c->no_skip ? mp__chain_far(c, &ps, 0, fst + 1, thr, c->mb[L], c->tb[L])
                         : mp__chain_far_beam(c, &ps, 0, fst + 1, thr, c->mb[L], c->tb[L])) != 0)
      return rc;
    if ((rc = mp__chain_flush(c)) != 0) return rc;
    if (c->npr + c->ncand > c->cappr) {
      size_t nc = c->cappr;
      mp__cpair_t *np;
      double *npm;
      while (nc < c->npr + c->ncand) nc *= 2;
      if ((np = realloc(c->pr, nc * sizeof(*np))) == NULL) return MP_ENOMEM;
      c->pr = np;
      if ((npm = realloc(c->pm, nc * sizeof(*npm))) == NULL) return MP_ENOMEM;
      c->pm = npm;
      c->cappr = nc;
    }
    if (c->npr + c->ncand > UINT32_MAX - 1)
      return mp_error_set(err, MP_ENOMEM, "", "the chain DP holds too many pairs");
    if (c->beam > 0 && c->ncand > c->beam) mp__chain_beam(c, L);
    for (k = 0; k < c->ncand; k++) {
      double sc;
      c->pr[c->npr] = c->cand[k];
      sc = mp__cscore(c, &c->cand[k]);
      c->pm[c->npr] = c->npr > c->off[L] && c->pm[c->npr - 1] > sc ? c->pm[c->npr - 1] : sc;
      c->npr++;
    }
    c->off[L + 1] = c->npr;
    c->alive[L] = (uint32_t)(c->npr - c->off[L]);
    mp__chain_tree_set(c, L);
    if (c->stats && c->npr > c->stats->most_pairs) c->stats->most_pairs = c->npr;
    if (mp__chain_over(c)) { /* the plans of the states built so far */
      for (L++; L < n; L++) c->off[L + 1] = c->npr;
      break;
    }
    if ((L & 255) == 0 && (rc = mp__plan_stop(o, t0, err)) != 0) return rc;
  }
  /* into V: the least charged time, then the least kept, then the least peak */
  *best_i = UINT32_MAX;
  *best_c = HUGE_VAL;
  {
    uint64_t best_k = 0, best_p = 0;
    for (i = 0; i < c->npr; i++) {
      const mp__cpair_t *x = &c->pr[i];
      uint64_t kx = x->k + c->MR[x->state], cost, peak;
      double ch;
      if (mp__csigma(c, x) < 2 * c->M[n] + c->SV[n]) continue;
      cost = mp__chain_cost(c, x->state, n);
      peak = kx + cost;
      if (x->p > peak) peak = x->p;
      ch = c->T[x->state] - c->TR[x->state] - x->a;
      if (*best_i == UINT32_MAX || ch < *best_c - tol ||
          (ch <= *best_c + tol && (kx < best_k || (kx == best_k && peak < best_p)))) {
        *best_i = (uint32_t)i;
        *best_c = ch;
        best_k = kx;
        best_p = peak;
      }
    }
  }
  return 0;
}

/* ---- The answer ------------------------------------------------------------ */

/* The strategy whose segments end at the states ends[0 .. ne) (ascending,
 * the last one n). */
static int mp__chain_strategy(const mp__chain_t *c, const uint32_t *ends, size_t ne,
                              mp_strategy_t **out) {
  mp_strategy_t *st = mp_strategy_new(c->g);
  size_t s, i = 0;
  if (st == NULL) return MP_ENOMEM;
  for (s = 0; s < ne; s++)
    for (; i < ends[s]; i++) st->seg[c->act[i]] = (uint32_t)s;
  st->n_segments = (uint32_t)ne;
  *out = st;
  return 0;
}

/* The plan ending in pair bi: its segment ends, last first, into ends
 * (returns how many), and its kept memory and model peak (activation
 * terms). */
static size_t mp__chain_path(const mp__chain_t *c, uint32_t bi, uint32_t *ends, uint64_t *kept,
                             uint64_t *peak) {
  const mp__cpair_t *b = &c->pr[bi];
  uint32_t x = bi;
  size_t ne = 0;
  uint64_t pk;
  ends[ne++] = (uint32_t)c->n;
  while (x != UINT32_MAX && c->pr[x].state != 0) {
    ends[ne++] = c->pr[x].state;
    x = c->pr[x].from;
  }
  *kept = b->k + c->MR[b->state];
  pk = *kept + mp__chain_cost(c, b->state, c->n);
  *peak = b->p > pk ? b->p : pk;
  return ne;
}

/* The exact passes' cut after one at R held no plan: R + step, the step
 * doubling. It never passes U, the charged time of the best plan found so
 * far (the beam's first, an upper bound on the optimum), and goes to U at once
 * when U is within MP__CHAIN_JUMP steps of the next cut. Near the optimum a
 * pass's cost depends little on its cut: the 10,000-node chain of `make
 * bench` at 30% takes 17.5 million candidate steps at the bound + 1 and 17.6
 * million at + 3, with the optimum at + 2.27. So one pass at U costs about
 * what the pass that finds the optimum would, and saves the passes before
 * it. The exact answer is the same whichever cut first reaches the optimum:
 * every pair of an optimal plan passes such a cut, and so does every pair
 * that beats one (no more kept memory, at least as much retained time, so
 * no more charged time plus bound), so the pass's best plan, ties and all,
 * is the same. */
#define MP__CHAIN_JUMP 2
static double mp__chain_next_cut(double R, double *step, double U) {
  double next = R + *step;
  *step *= 2;
  if (U < HUGE_VAL && R < U && (next >= U || U - next <= MP__CHAIN_JUMP * *step)) return U;
  return next;
}

int mp__chain_solve(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                    mp_dp_result_t *res, mp_error_t *err) {
  return mp__chain_solve_ex(g, o, t0, 0, NULL, res, err);
}

int mp__chain_solve_ex(const mp_graph_t *g, const mp_plan_options_t *o, double t0, int no_skip,
                       mp__chain_stats_t *stats, mp_dp_result_t *res, mp_error_t *err) {
  mp__chain_t c;
  mp__chain_shape_t sh;
  uint32_t *qnext = NULL, *dq = NULL, *ends = NULL;
  double *phi = NULL, lb0, R, step, step0, tol, best_c = HUGE_VAL, ctg = 0;
  size_t ne = 0, n, beam_work = 0, tail0 = 0;
  uint64_t budget = o->budget;
  int rc, proven = 0;

  memset(res, 0, sizeof(*res));
  if (stats) {
    memset(stats, 0, sizeof(*stats));
    stats->beam_charged = HUGE_VAL;
  }
  if ((rc = mp__chain_shape(g, &sh)) != 0) return mp_error_set(err, rc, "", "out of memory");
  if ((rc = mp__chain_init(&c, g, budget > g->const_bytes ? budget - g->const_bytes : 0)) != 0)
    goto nomem;
  n = c.n;
  c.no_skip = no_skip;
  c.stats = stats;
  res->n_lower_sets = n + 1;
  qnext = malloc((n + 1) * sizeof(uint32_t));
  dq = malloc((n + 1) * sizeof(uint32_t));
  phi = malloc((n + 1) * sizeof(double));
  ends = malloc((n + 1) * sizeof(uint32_t));
  if (!qnext || !dq || !phi || !ends) goto nomem;
  mp__chain_hq(&c, qnext);
  if (budget < g->const_bytes || c.hq[0] > c.cap) {
    res->min_feasible_budget = c.hq[0] > UINT64_MAX - g->const_bytes
                                   ? UINT64_MAX
                                   : c.hq[0] + g->const_bytes;
    res->exact_used = sh.chain;
    if (!sh.chain)
      snprintf(res->fallback_reason, sizeof(res->fallback_reason),
               "the prefix DP searches the prefixes of a near-chain, not all its lower sets");
    rc = 0;
    goto out;
  }
  tol = 1e-9 * (g->fwd_time > 1 ? g->fwd_time : 1);
  /* The multiplier: golden-section search for the largest bound at {}. */
  {
    double lo = 0, hi, m1, m2, v1, v2, bestl = 0, bestv;
    int it;
    hi = c.M[n] > 0 ? 8 * (c.T[n] + 1) / (double)c.M[n] : 1;
    bestv = mp__chain_lagrange(&c, 0, c.H, dq, phi);
    for (it = 0; it < 24; it++) {
      m1 = lo + (hi - lo) * 0.381966;
      m2 = lo + (hi - lo) * 0.618034;
      v1 = mp__chain_lagrange(&c, m1, c.H, dq, phi);
      v2 = mp__chain_lagrange(&c, m2, c.H, dq, phi);
      if (v1 > bestv) bestv = v1, bestl = m1;
      if (v2 > bestv) bestv = v2, bestl = m2;
      if (v1 < v2) lo = m1;
      else hi = m2;
    }
    c.lam = bestl;
    lb0 = mp__chain_lagrange(&c, bestl, c.H, dq, phi);
    if (lb0 < 0) lb0 = 0;
    for (it = 0; it < MP__CHAIN_NXLAM; it++) {
      if ((c.xH[it] = malloc((n + 1) * sizeof(double))) == NULL) goto nomem;
      c.xlam[it] = bestl * mp__chain_xlam[it];
      mp__chain_lagrange(&c, c.xlam[it], c.xH[it], dq, phi);
    }
  }
  if (stats) stats->lb_plain = stats->lb = lb0;
  if ((rc = mp__plan_stop(o, t0, err)) != 0) goto out;
  /* The passes, with a cut that grows until it holds the pass's best. First
   * the beam's (an upper bound: their plan's charged time U), then the
   * exact ones, whose cut never passes U and goes straight to it once U is
   * near (mp__chain_next_cut). */
  step0 = c.T[n] * 1e-4 > tol ? c.T[n] * 1e-4 : 1;
  if (step0 > 1) step0 = 1;
  c.beam = MP__CHAIN_BEAM;
  if (sh.chain) {
    c.beam = n > 0 && MP__CHAIN_BEAM_WORK / n < MP__CHAIN_BEAM_WIDE ? MP__CHAIN_BEAM_WORK / n
                                                                    : MP__CHAIN_BEAM_WIDE;
    if (c.beam < MP__CHAIN_BEAM) c.beam = MP__CHAIN_BEAM;
  }
  c.limit = SIZE_MAX;
  for (R = lb0, step = step0;; R += step, step *= 4) {
    uint32_t bi = UINT32_MAX;
    double bc = HUGE_VAL;
    if (stats) stats->beam_passes++;
    if ((rc = mp__chain_pass(&c, o, t0, R, tol, &bi, &bc, err)) != 0) goto out;
    if (bi != UINT32_MAX) {
      best_c = bc;
      ne = mp__chain_path(&c, bi, ends, &res->kept_bytes, &res->model_peak);
      if (sh.chain && n <= MP__CHAIN_TAIL_MAX_N) {
        /* the beam plan's cost to finish from its first state in the tail */
        uint32_t x = bi;
        tail0 = n > MP__CHAIN_TAIL_MAX + 1 ? n - MP__CHAIN_TAIL_MAX : 1;
        for (; x != UINT32_MAX; x = c.pr[x].from)
          if (c.pr[x].state >= tail0)
            ctg = bc - (c.T[c.pr[x].state] - c.TR[c.pr[x].state] - c.pr[x].a);
      }
      break;
    }
    /* far past any plan's charged time plus bound: the beam holds no plan */
    if (R > 4 * (c.T[n] + fabs(lb0)) + 1) break;
  }
  beam_work = c.work;
  if (stats) stats->beam_charged = best_c;
  if (tail0 > 0 && n > 1) {
    double vbar = ctg * MP__CHAIN_TAIL_VBAR + 4 * (best_c - lb0) + 1, lbt;
    size_t first = n > MP__CHAIN_TAIL + 1 ? n - MP__CHAIN_TAIL : 1;
    if ((rc = mp__chain_tail(&c, first, vbar)) != 0) goto nomem;
    lbt = mp__chain_lagrange(&c, c.lam, c.H, dq, phi);
    if (tail0 < first && best_c - lbt > MP__CHAIN_TAIL_GAP * fabs(lbt)) {
      /* far from the beam's plan still: the tail again, reaching further */
      free(c.toff);
      free(c.tnum);
      free(c.tl);
      c.toff = c.tnum = NULL;
      c.tl = NULL;
      c.tail0 = 0;
      if ((rc = mp__chain_tail(&c, tail0, vbar)) != 0) goto nomem;
    }
    mp__chain_lagrange(&c, c.lam, c.H, dq, phi);
    for (int it = 0; it < MP__CHAIN_NXLAM; it++) mp__chain_lagrange(&c, c.xlam[it], c.xH[it], dq, phi);
    if (c.H[0] - c.lam * (double)c.cap > lb0) lb0 = c.H[0] - c.lam * (double)c.cap;
    if (stats) {
      stats->lb = lb0;
      stats->tail_labels = c.toff[c.tail0 - c.tbase] + c.tnum[c.tail0 - c.tbase];
    }
  }
  c.work = 0;
  c.beam = 0;
  c.limit = sh.chain ? MP__CHAIN_WORK_LIMIT : MP__CHAIN_NEAR_WORK_LIMIT;
  for (R = lb0, step = step0;; R = mp__chain_next_cut(R, &step, best_c)) {
    uint32_t bi = UINT32_MAX;
    double bc = HUGE_VAL;
    if (stats) stats->exact_passes++;
    if ((rc = mp__chain_pass(&c, o, t0, R, tol, &bi, &bc, err)) != 0) goto out;
    /* The plan of the exact pass that proves the optimum is the answer, even
     * where an earlier plan (the beam's, or an exact pass's below the
     * optimum) charged as much: its ties went to the least kept memory, then
     * the least peak, among all the pairs within a cut at or above the
     * optimum, so the answer does not depend on which cuts came before. */
    if (bi != UINT32_MAX && (bc < best_c || (bc <= R + tol && bc <= best_c + tol))) {
      best_c = bc;
      ne = mp__chain_path(&c, bi, ends, &res->kept_bytes, &res->model_peak);
    }
    if (bi != UINT32_MAX && bc <= R + tol) {
      proven = 1;
      break;
    }
    /* past a limit: the best plan so far (the beam's, if any), else the
     * least-peak plan below */
    if (mp__chain_over(&c)) break;
  }
  if (ne == 0) {
    /* no pass found a plan within the work limit: the least-peak plan */
    size_t L = 0, cnt = 0;
    uint64_t k = 0, pk = 0;
    double ch = 0;
    while (L < n) {
      size_t Ln = qnext[L];
      uint64_t cost = k + mp__chain_cost(&c, L, Ln), m;
      double t;
      if (cost > pk) pk = cost;
      if (Ln < n) {
        mp__chain_keep(&c, L, Ln, &m, &t);
        k += m + c.MR[Ln] - c.MR[L];
        ch += c.T[Ln] - c.T[L] - t - (c.TR[Ln] - c.TR[L]);
      }
      ends[cnt++] = (uint32_t)Ln;
      L = Ln;
    }
    ne = cnt;
    best_c = ch;
    res->kept_bytes = k;
    res->model_peak = pk;
  } else {
    /* ends were collected backwards */
    size_t a = 0, b = ne - 1;
    while (a < b) {
      uint32_t t = ends[a];
      ends[a++] = ends[b];
      ends[b--] = t;
    }
  }
  if ((rc = mp__chain_strategy(&c, ends, ne, &res->strategy)) != 0) goto nomem;
  res->feasible = 1;
  res->exact_used = sh.chain && proven;
  if (!sh.chain)
    snprintf(res->fallback_reason, sizeof(res->fallback_reason),
             "the prefix DP searches the prefixes of a near-chain, not all its lower sets");
  else if (!proven)
    snprintf(res->fallback_reason, sizeof(res->fallback_reason),
             "the prefix DP passed its work or memory limit; best plan found");
  res->recompute_time = best_c;
  res->retained_time = g->fwd_time - best_c;
  res->model_peak = res->model_peak > UINT64_MAX - g->const_bytes ? UINT64_MAX
                                                                  : res->model_peak + g->const_bytes;
  rc = 0;
  goto out;
nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
out:
  if (rc != 0) mp_dp_result_free(res);
  if (stats) stats->work = beam_work + c.work;
  mp__chain_free(&c);
  free(qnext);
  free(dq);
  free(phi);
  free(ends);
  return rc;
}
