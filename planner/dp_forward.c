/* dp_forward.c - the forward passes of the lower-set DP, and the search for
 * the answer at one budget with them (mp__solve_bounded), the least budget
 * (mp__solve_minpeak) and the frontier pass (mp__solve_frontier).
 *
 * States are the lower sets of a family (lowerset.h), in size order. Each
 * state holds a Pareto set of pairs (retained time a, kept memory k), plus
 * the path's model peak p and a back-pointer. The sets are processed in
 * index order; for each L_j the proper subsets L_i in the family are
 * "pulled": each pair of L_i whose step to L_j fits the budget gives a
 * candidate (a + t(W), k + m(W)). Pulling (rather than pushing from L_i)
 * lets one state's candidates be reduced as they arrive, and lets the exact
 * family walk its subsets down the Hasse diagram with pruning: the step cost
 * 2*(m(L_j) - m(L_i)) + back(L_j) only grows as L_i shrinks, so once it
 * exceeds the budget no smaller subset on that branch can fit either. When
 * few sets have pairs, they are scanned instead (mp__scan).
 *
 * A solve at one budget first has the reverse pass (dp_reverse.c) find,
 * for every set, the least peak of what remains and bounds on the time
 * still to be charged. Then forward passes, Pareto on (max a, min k) with
 * steps limited by the budget, cut at a charged time R that grows until V
 * is reached (the answer is then the uncut DP's). At V the time objective
 * takes the largest a (then least k), the memory objective the least k
 * (then largest a; its passes are cut by kept memory instead).
 *
 * Why it is fast: the cuts drop every pair that cannot finish within the
 * budget or within R, and R is grown so that passes stay close to the
 * optimum, where the pairs within R are few (mp__solve_bounded); the walks
 * into a set are cut with everything below them, and the exact family's
 * skip whole parts of the subsets where no pair could pass a cut
 * (mp__agg_cut; at tight budgets most sets hold none); a state's candidates
 * are filtered against its staircase read only, with a galloping position,
 * and the few survivors merged in one pass (mp__relax_stair).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* MINKEPT keeps one pair per state, the least kept memory (the memory
 * objective's first pass). */
typedef enum { MP__BOUNDED = 0, MP__FRONTIER = 1, MP__MINKEPT = 2 } mp__mode_t;

/* ---- Pareto sets ---------------------------------------------------------- */

/* Bounded passes keep the state being built as a staircase sorted by k
 * ascending in which a strictly increases (MINKEPT: a single pair, the least
 * k). A candidate is dominated iff the last element with k' <= k is at least
 * as good in a. */

/* Among exact ties (same k and a; MINKEPT: same k), prefer the larger
 * retained time (MINKEPT only), then the lower peak, then the earlier
 * predecessor, so that which pair a state keeps never depends on the order
 * candidates arrive in. */
static inline int mp__tie_better(mp__mode_t mode, const mp__pair_t *u, const mp__pair_t *v) {
  if (mode == MP__MINKEPT && u->a != v->a) return u->a > v->a;
  if (u->p != v->p) return u->p < v->p;
  if (u->from_set != v->from_set) return u->from_set < v->from_set;
  return u->from_pair < v->from_pair;
}

static inline int mp__cand_reserve(mp__dp_t *c, size_t extra) {
  MP__GROW(c->cand, c->cap_cand, c->n_cand + extra, 64);
  return 0;
}

/* MINKEPT: the state keeps one pair, the least kept memory (exact ties:
 * mp__tie_better). */
static int mp__keep_least_kept(mp__dp_t *c, const mp__pair_t *q) {
  if (c->n_cand == 0) {
    if (mp__cand_reserve(c, 1) != 0) return MP_ENOMEM;
    c->cand[0] = *q;
    c->n_cand = 1;
  } else if (q->k < c->cand[0].k ||
             (q->k == c->cand[0].k && mp__tie_better(MP__MINKEPT, q, &c->cand[0]))) {
    c->cand[0] = *q;
  }
  return 0;
}

/* Bounded passes: merge the staircase `u` (nu pairs, k ascending, a strictly
 * increasing, none dominated by the state's staircase when they were
 * filtered) into the state's staircase in one linear pass, instead of one
 * insertion (and memmove) each. The part of the staircase below u's first k
 * cannot change and is copied as a block. */
static int mp__stair_merge(mp__dp_t *c, const mp__pair_t *u, size_t nu) {
  mp__pair_t *s = c->cand, *t;
  size_t n = c->n_cand, p0, i, x = 0, out;
  MP__GROW(c->cand2, c->cap_cand2, n + nu, 64);
  t = c->cand2;
  /* p0 = first element with k >= u[0].k */
  {
    size_t lo = 0, hi = n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (s[mid].k < u[0].k) lo = mid + 1;
      else hi = mid;
    }
    p0 = lo;
  }
  memcpy(t, s, p0 * sizeof(*s));
  out = p0;
  i = p0;
  /* Take the pairs in k order (for equal k the better first); a pair stays
   * when its a beats everything taken before it. */
  while (i < n || x < nu) {
    const mp__pair_t *e;
    if (x == nu) {
      e = &s[i++];
    } else if (i == n) {
      e = &u[x++];
    } else {
      const mp__pair_t *a = &s[i], *b = &u[x];
      int take_a = a->k != b->k ? a->k < b->k
                                : (a->a != b->a ? a->a > b->a : !mp__tie_better(MP__BOUNDED, b, a));
      e = take_a ? &s[i++] : &u[x++];
    }
    if (out > 0 && t[out - 1].a >= e->a) continue;
    if (out > 0 && t[out - 1].k == e->k) t[out - 1] = *e; /* (only if k saturated) */
    else t[out++] = *e;
  }
  {
    size_t tc = c->cap_cand;
    c->cand = t;
    c->cap_cand = c->cap_cand2;
    c->cand2 = s;
    c->cap_cand2 = tc;
  }
  c->n_cand = out;
  return 0;
}

/* Frontier pass: candidates are buffered, then sorted by (k asc, a desc,
 * p asc) and swept with a staircase over (a, p) of what has been accepted so
 * far (all with smaller or equal k): a candidate is dominated iff some
 * accepted pair has a' >= a and p' <= p. The staircase is kept sorted by a
 * ascending, hence p ascending too, so the test looks at the first element
 * with a' >= a only. */
static int mp__cmp3(const void *pa, const void *pb) {
  const mp__pair_t *u = pa, *v = pb;
  if (u->k != v->k) return u->k < v->k ? -1 : 1;
  if (u->a != v->a) return u->a > v->a ? -1 : 1;
  if (u->p != v->p) return u->p < v->p ? -1 : 1;
  return 0;
}

static int mp__reduce3(mp__dp_t *c) {
  size_t i, out = 0, ns = 0;
  mp__pair_t *st;
  if (c->n_cand == 0) return 0;
  qsort(c->cand, c->n_cand, sizeof(mp__pair_t), mp__cmp3);
  MP__GROW(c->stair3, c->cap_stair3, c->n_cand, 64);
  st = c->stair3;
  for (i = 0; i < c->n_cand; i++) {
    mp__pair_t q = c->cand[i];
    size_t lo = 0, hi = ns, j;
    while (lo < hi) { /* first with a >= q.a */
      size_t mid = (lo + hi) / 2;
      if (st[mid].a < q.a) lo = mid + 1;
      else hi = mid;
    }
    if (lo < ns && st[lo].p <= q.p) continue; /* dominated */
    /* remove staircase points with a <= q.a and p >= q.p: a contiguous run
     * ending at lo (or lo+1 when st[lo].a == q.a, but then st[lo].p > q.p
     * and it is dominated in (a, p) as well). */
    hi = lo;
    if (lo < ns && st[lo].a == q.a) hi = lo + 1;
    j = lo;
    while (j > 0 && st[j - 1].p >= q.p) j--;
    memmove(st + j + 1, st + hi, (ns - hi) * sizeof(*st));
    st[j] = q;
    ns = ns - (hi - j) + 1;
    c->cand[out++] = q;
  }
  c->n_cand = out;
  return 0;
}

/* ---- Walking the steps into one lower set --------------------------------- */

/* Append the step i -> j with the given gains to the visit list, unless a
 * limit cuts it. Returns 1 when appended. */
static inline int mp__walk_keep(mp__dp_t *c, mp__wlim_t *wl, size_t *nv, uint32_t i,
                                uint32_t node, uint64_t cost, uint64_t mw, uint64_t sw, double tw,
                                double ch) {
  mp__vis_t *x;
  if (cost > wl->budget) return 0;
  if (ch > wl->chlim) {
    if (ch < wl->cut_ch) wl->cut_ch = ch;
    return 0;
  }
  if (mw > wl->mwlim) {
    if (mw < wl->cut_mw) wl->cut_mw = mw;
    return 0;
  }
  if (wl->nlag) {
    int z;
    for (z = 0; z < wl->nlag; z++) {
      double u = ch + wl->lam[z] * (double)mw;
      if (u > wl->lagoff[z]) {
        if (u + wl->lagbase[z] < wl->cut_t) wl->cut_t = u + wl->lagbase[z];
        return 0;
      }
    }
  }
  x = &c->vis[(*nv)++];
  x->i = i;
  x->node = node;
  x->cost = cost;
  x->mw = mw;
  x->sw = sw;
  x->tw = tw;
  x->ch = ch;
  return 1;
}

/* Whether no pair in the part of the walk below a cover edge (`a`, see
 * mp__agg_fill) can take the step into L_j that the edge leads to, or any
 * step below it: mp__walk_keep's cuts with the part's least kept memory and
 * least charged time so far added, which bound every pair there from below
 * (and the step's own figures only grow below the edge). The time and kept
 * memory cuts are recorded as mp__walk_keep records them. The time cuts
 * keep a margin (agg_slack) so that rounding never skips a pair the
 * per-pair check (mp__relax) would keep: a part is skipped only when every
 * pair in it is cut by more than that. */
static inline int mp__agg_cut(mp__wlim_t *wl, const mp__agg_t *a, uint64_t cost, uint64_t mw,
                              double ch) {
  uint64_t m;
  double h;
  int z;
  if (a->c == HUGE_VAL) return 1; /* no pair at all (a pair's c is finite) */
  if (mp__sadd(cost, a->k) > wl->budget) return 1;
  m = mp__sadd(mw, a->k);
  if (m > wl->mwlim) {
    if (m < wl->cut_mw) wl->cut_mw = m;
    return 1;
  }
  h = ch + a->c;
  if (h > wl->chlim + wl->agg_slack) {
    if (h < wl->cut_ch) wl->cut_ch = h;
    return 1;
  }
  for (z = 0; z < wl->nlag; z++) {
    double u = h + wl->lam[z] * (double)m;
    if (u > wl->lagoff[z] + wl->agg_slack) {
      if (u + wl->lagbase[z] < wl->cut_t) wl->cut_t = u + wl->lagbase[z];
      return 1;
    }
  }
  return 0;
}

/* The steps into L_j that pass the limits, in c->vis[0 .. *nv).
 *
 * Exact family: breadth first down the cover relation from L_j, along a
 * tree that reaches every subset once: the nodes of L_j \ L_i are removed
 * in decreasing order, so a set entered by removing v is left only through
 * edges that remove nodes below v (the node removed last is always maximal
 * in what remains, so every subset has exactly one such path; the cover
 * edges are sorted by node, lowerset.h, and the scan stops at v). A cut
 * subset's subtree is skipped: all three limits only grow as the subset
 * shrinks. Going from L_x to L_x \ {v} adds v to the segment, so the gains
 * are updated in O(1) from the parent's instead of being recomputed over the
 * boundary: v is kept when it has a successor outside L_j or is
 * recompute:false (default accounting), except into V where nothing is kept
 * and, in the default accounting, nothing is charged.
 *
 * Approx family: the subsets are {} and the closures of the nodes of L_j
 * (closure(u) is inside L_j iff u is); there is no cover relation to walk, so
 * each step's gains are computed over the boundary of L_j. */
void mp__walk(mp__dp_t *c, size_t j, mp__wlim_t *wl, size_t *nv_out) {
  const mp_lowerset_family_t *f = &c->fam;
  size_t last = f->n_sets - 1, nv = 0;
  c->work++;
  if (f->exact) {
    uint32_t mark = (uint32_t)(j + 1), e;
    size_t h;
    int into_v = j == last, dflt = c->acc == MP_ACCOUNTING_DEFAULT;
    mp__vis_t root;
    for (e = c->fb_off[j]; e < c->fb_off[j + 1]; e++) c->fmark[c->fb[e]] = mark;
    root.i = (uint32_t)j;
    root.node = UINT32_MAX;
    root.cost = 0;
    root.mw = 0;
    root.sw = 0;
    root.tw = 0;
    root.ch = 0;
    /* h == SIZE_MAX stands for the root (L_j itself, never a step). vis is
     * preallocated with one entry per set, and each set enters it once. */
    const mp__wset_t *W = c->wset;
    const mp__dedge_t *D = c->dedge;
    uint64_t mj = W[j].m, tg = c->ctgt[j];
    for (h = SIZE_MAX; h == SIZE_MAX || h < nv; h++) {
      const mp__vis_t *par = h == SIZE_MAX ? &root : &c->vis[h];
      uint32_t pi = par->i, below = par->node;
      uint64_t pmw = par->mw, psw = par->sw;
      double ptw = par->tw, pch = par->ch;
      uint32_t e_end = W[pi].dhi;
      for (e = W[pi].dlo; e < e_end; e++) {
        const mp__dedge_t *d = &D[e];
        uint32_t s = d->s, v = d->v;
        uint64_t mw = pmw, cost, sw = mp__sadd(psw, c->nsv[v]);
        double tw = ptw, ch = pch;
        if (v >= below) break;
        if (into_v) {
          if (dflt) tw += c->nt[v];
          else ch += c->nt[v];
        } else if (c->fmark[v] == mark || c->nofree[v]) {
          mw = mp__sadd(mw, c->nk[v]);
          tw += c->nt[v];
        } else {
          ch += c->nt[v];
          mw = mp__sadd(mw, c->nc[v]);
        }
        /* the saved term of mp__step_cost, summed along the walk */
        cost = mp__sadd(mp__sadd(mp__sadd(mp__sdbl(mj - d->m), d->csrc), tg), sw);
        if (wl->agg && mp__agg_cut(wl, &wl->agg[e], cost, mw, ch)) continue;
        mp__walk_keep(c, wl, &nv, s, v, cost, mw, sw, tw, ch);
      }
    }
    c->work += nv;
  } else {
    const uint64_t *b = f->bits + j * f->words;
    size_t w;
    for (w = 0; w <= f->words; w++) {
      uint64_t x = w == 0 ? 1 : b[w - 1]; /* w == 0: the step from {} */
      while (x) {
        uint32_t i;
        uint64_t cost, mw;
        double tw;
        if (w == 0) {
          i = 0;
          x = 0;
        } else {
          uint32_t u = (uint32_t)((w - 1) * 64 + (size_t)__builtin_ctzll(x));
          x &= x - 1;
          i = f->by_node[u];
          if (i == j) continue;
        }
        c->work++;
        cost = mp__step_cost(c, i, j);
        if (cost > wl->budget) continue;
        mp__step_gain(c, i, j, &mw, &tw);
        mp__walk_keep(c, wl, &nv, i, 0, cost, mw, 0, tw, (c->t[j] - c->t[i]) - tw);
      }
    }
  }
  *nv_out = nv;
}

/* mp__walk's steps into L_j, exact family, found the other way round: from
 * the sets that have pairs (c->live), each tested for inclusion in L_j, with
 * the gains computed over L_j's boundary like the approx family's. A pass
 * whose cut keeps few pairs alive leaves most sets empty, and walking down
 * from every L_j through them costs far more than this. The steps are the
 * same ones, with the same figures (times summed in another order). Listed
 * closest first, like the walk's. */
static void mp__scan(mp__dp_t *c, size_t j, mp__wlim_t *wl, size_t *nv_out) {
  const mp_lowerset_family_t *f = &c->fam;
  const uint64_t *bj = f->bits + j * f->words;
  size_t nv = 0, x, w, words = f->words;
  for (x = c->n_live; x-- > 0;) {
    uint32_t i = c->live[x];
    const uint64_t *bi = f->bits + (size_t)i * words;
    uint64_t mw;
    double tw;
    int sub = 1;
    for (w = 0; w < words && sub; w++) sub = (bi[w] & ~bj[w]) == 0;
    c->work++;
    if (!sub) continue;
    mp__step_gain(c, i, j, &mw, &tw);
    mp__walk_keep(c, wl, &nv, i, 0, mp__step_cost(c, i, j), mw, 0, tw, (c->t[j] - c->t[i]) - tw);
  }
  *nv_out = nv;
}

/* ---- The forward pass ------------------------------------------------------ */

/* Limits of one forward pass. Every step's model peak (kept + cost) is at most
 * `budget`. Cuts, all sound by the figures above:
 *  - use_q (hq ready for this budget): drop a pair when k + hq(L) > budget:
 *    it cannot reach V (exact, so this drops no pair on any plan);
 *  - rt (time objective, ht and hl computed): drop a pair when its charged
 *    time so far t(L) - a plus its time bound (mp__tbound) exceeds rt;
 *  - rk (memory objective, hk computed): drop it when k + hk(L) > rk.
 * A pair on a path whose final value is within the cut has every prefix
 * within it (the bound at L is at most what the rest of that path adds), and
 * a pair that dominates it in (a, k) has a bound no larger, so the Pareto set
 * of each state is exactly the uncut one restricted to the pairs within the
 * cut: the answer, its ties and its peak are those of the uncut DP.
 * `pruned` says whether the rt or rk cut dropped anything (as opposed to the
 * budget and the hq cut, which only drop pairs that cannot finish) and
 * next_* the least bound that was cut: the next cut worth trying. */
typedef struct {
  uint64_t budget;
  double rt;
  uint64_t rk;
  int use_q;
  int pruned;
  double next_t;
  uint64_t next_k;
  size_t work_limit; /* stop the pass once it has done this much work (0: none) */
  int stopped;       /* out: it did, and its outcome is unknown */
  size_t work;       /* out: the work it did (steps walked + candidates) */
} mp__bound_t;

static void mp__bound_init(mp__bound_t *bd, uint64_t budget) {
  bd->budget = budget;
  bd->rt = HUGE_VAL;
  bd->rk = UINT64_MAX;
  bd->use_q = 0;
  bd->pruned = 0;
  bd->next_t = HUGE_VAL;
  bd->next_k = UINT64_MAX;
  bd->work_limit = 0;
  bd->stopped = 0;
  bd->work = 0;
}

/* First index in [lo, hi) of P whose k exceeds lim (P sorted by k). */
static inline size_t mp__first_k_above(const mp__pair_t *P, size_t lo, size_t hi, uint64_t lim) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (P[mid].k <= lim) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Bounded mode's half of mp__relax: the candidates of pairs q0..q1-1 of
 * L_i (sorted by k, a strictly increasing, and so are the candidates) are
 * first checked against the staircase being built, read only, with a
 * position that only moves forward (galloping); the few that survive are
 * merged in one pass. */
static int mp__relax_stair(mp__dp_t *c, mp__bound_t *bd, size_t j, const mp__pair_t *P,
                           size_t off, size_t q0, size_t q1, const mp__vis_t *x) {
  mp__pair_t *S = c->cand;
  size_t n = c->n_cand, pos, q, nu = 0;
  uint64_t cost = x->cost, mw = x->mw;
  double tw = x->tw;
  int lag = bd->rt != HUGE_VAL && c->nlam > 0, z;
  /* the Lagrangian bounds at j as affine functions of k, hoisted: bound =
   * ht(j) or lagb_z + lam_z * k, whichever is largest (unused multipliers
   * give -inf) */
  double lagb[MP__NLAM], lam[MP__NLAM], htj = c->rr[j].ht, tj = c->t[j],
         rmax = bd->rt + c->tol;
  for (z = 0; z < MP__NLAM; z++) {
    lam[z] = z < c->nlam ? c->lam[z] : 0;
    lagb[z] = z < c->nlam ? c->rr[j].hl[z] - lam[z] * (double)bd->budget : -HUGE_VAL;
  }
  MP__GROW(c->surv, c->cap_surv, q1 - q0, 64);
  pos = mp__first_k_above(S, 0, n, mp__sadd(P[q0].k, mw));
  for (q = q0; q < q1; q++) {
    uint64_t nk = mp__sadd(P[q].k, mw), step = mp__sadd(P[q].k, cost);
    double na = P[q].a + tw;
    mp__pair_t cand;
    if (lag) {
      /* the Lagrangian bounds depend on k, so no range of P is cut at once
       * (written out for the four multipliers: independent, not a chain) */
      double kd = (double)nk, v;
      double u0 = lagb[0] + lam[0] * kd, u1 = lagb[1] + lam[1] * kd;
      double u2 = lagb[2] + lam[2] * kd, u3 = lagb[3] + lam[3] * kd;
      double m01 = u0 > u1 ? u0 : u1, m23 = u2 > u3 ? u2 : u3, b = m01 > m23 ? m01 : m23;
      v = (tj - na) + (b > htj ? b : htj);
      if (v > rmax) {
        bd->pruned = 1;
        if (v < bd->next_t) bd->next_t = v;
        continue;
      }
    }
    if (pos < n && S[pos].k <= nk) {
      size_t lo = pos + 1, hi = pos + 1, width = 1;
      while (hi < n && S[hi].k <= nk) {
        lo = hi + 1;
        hi = lo + width;
        width *= 2;
      }
      pos = mp__first_k_above(S, lo, hi < n ? hi : n, nk);
    }
    if (pos > 0 && (S[pos - 1].a > na || (S[pos - 1].a == na && S[pos - 1].k < nk))) continue;
    cand.a = na;
    cand.k = nk;
    cand.p = P[q].p > step ? P[q].p : step;
    cand.from_set = x->i;
    cand.from_pair = (uint32_t)(off + q);
    if (pos > 0 && S[pos - 1].a == na) {
      /* same k and a: an exact tie, settled in place */
      if (mp__tie_better(MP__BOUNDED, &cand, &S[pos - 1])) S[pos - 1] = cand;
      continue;
    }
    c->surv[nu++] = cand;
  }
  return nu ? mp__stair_merge(c, c->surv, nu) : 0;
}

/* Pull the step L_i -> L_j (j fixed) for every pair of L_i that passes. */
static int mp__relax(mp__dp_t *c, mp__mode_t mode, mp__bound_t *bd, size_t j,
                     const mp__vis_t *x) {
  const mp__pair_t *P;
  size_t i = x->i, len = c->front_len[i], off = c->front_off[i], q, q0 = 0, q1;
  uint64_t lim, blim, cost = x->cost, mw = x->mw;
  double tw = x->tw;
  int rc;
  if (len == 0) return 0;
  P = c->arena + off;
  blim = bd->budget - cost; /* cost <= budget here */
  lim = blim;
  if (bd->use_q) {
    /* mw + hq(j) <= budget: the walk cut the rest */
    uint64_t l2 = bd->budget - mw - c->rr[j].hq;
    if (l2 < lim) lim = l2;
    blim = lim; /* cut as by the budget: these pairs cannot finish */
  }
  if (bd->rk != UINT64_MAX) {
    /* mw + hk(j) <= rk: the walk cut the rest */
    uint64_t l2 = bd->rk - mw - c->hk[j];
    if (l2 < lim) lim = l2;
  }
  q1 = P[0].k > lim ? 0 : mp__first_k_above(P, 0, len, lim);
  if (q1 < len && P[q1].k <= blim && bd->rk != UINT64_MAX) {
    /* pairs cut by rk, not by the budget: the least bound cut is the first
     * one's (k only grows along P) */
    uint64_t v = mp__sadd(mp__sadd(P[q1].k, mw), c->hk[j]);
    bd->pruned = 1;
    if (v < bd->next_k) bd->next_k = v;
  }
  if (bd->rt != HUGE_VAL && mode == MP__BOUNDED && q1 > 0) {
    /* the charged time t(L_j) - a - tw + ht(j) falls as a rises along P
     * (a strictly increasing in the bounded staircase) */
    double amin = c->t[j] + c->rr[j].ht - tw - bd->rt - c->tol;
    size_t lo = 0, hi = q1;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (P[mid].a < amin) lo = mid + 1;
      else hi = mid;
    }
    q0 = lo;
    if (q0 > 0) {
      double v = c->t[j] - (P[q0 - 1].a + tw) + c->rr[j].ht;
      bd->pruned = 1;
      if (v < bd->next_t) bd->next_t = v;
    }
  }
  if (q0 >= q1) return 0;
  c->work += q1 - q0;
  if (mode == MP__BOUNDED) return mp__relax_stair(c, bd, j, P, off, q0, q1, x);
  if (mode == MP__FRONTIER && (rc = mp__cand_reserve(c, q1 - q0)) != 0) return rc;
  for (q = q0; q < q1; q++) {
    mp__pair_t n;
    uint64_t step = mp__sadd(P[q].k, cost);
    n.a = P[q].a + tw;
    n.k = mp__sadd(P[q].k, mw);
    n.p = P[q].p > step ? P[q].p : step;
    n.from_set = (uint32_t)i;
    n.from_pair = (uint32_t)(off + q);
    if (mode == MP__FRONTIER) {
      c->cand[c->n_cand++] = n;
    } else if ((rc = mp__keep_least_kept(c, &n)) != 0) { /* MINKEPT */
      return rc;
    }
  }
  return 0;
}

static int mp__append_front(mp__dp_t *c, size_t j) {
  size_t n = c->n_cand;
  if (c->n_arena + n > UINT32_MAX) return MP_ELIMIT;
  MP__GROW(c->arena, c->cap_arena, c->n_arena + n, 1024);
  memcpy(c->arena + c->n_arena, c->cand, n * sizeof(*c->cand));
  c->front_off[j] = c->n_arena;
  c->front_len[j] = (uint32_t)n;
  c->n_arena += n;
  return 0;
}

/* ---- Walk parts without a useful pair ---------------------------------------
 *
 * The exact family's walk (mp__walk) reaches each subset of L_j along one
 * tree: entering L_s by removing v, it goes on removing nodes below v only.
 * So the part of the tree below a cover edge L -> s = L \ {v} is the edge's
 * own, whatever j the walk started from: s, and for each edge of s at a node
 * below v, the part below that edge. A forward pass finishes the sets in
 * index order, a set after all its subsets, so when L_s is finished the best
 * its pairs hold (mp__agg_t: least kept memory, least charged time so far)
 * can be summed over each such part: pm[pm_base(s) + x] covers s and the
 * parts below its first x edges (sorted by node), and an edge's eagg is its
 * child's entry (pmi). A walk then skips a whole part that holds no pair, or
 * none any cut would let through (mp__agg_cut). At GoogLeNet's least budget
 * the pass at the optimum walked 57 million steps to sets of which 1.4
 * million held a pair that took the step. */

/* Before L_j's walk: the parts below its edges, from its children's sums. */
static void mp__agg_edges(mp__dp_t *c, size_t j) {
  uint32_t e;
  for (e = c->fam.down_off[j]; e < c->fam.down_off[j + 1]; e++) c->eagg[e] = c->pm[c->pmi[e]];
}

/* Once L_j's pairs are final: its sums (its edges' parts from mp__agg_edges). */
static void mp__agg_fill(mp__dp_t *c, size_t j) {
  size_t b = c->fam.down_off[j] + j, n = c->front_len[j], q; /* pm_base(j) */
  const mp__pair_t *P = c->arena + c->front_off[j];
  mp__agg_t a = {UINT64_MAX, HUGE_VAL};
  uint32_t e;
  for (q = 0; q < n; q++) {
    double ch = c->t[j] - P[q].a;
    if (P[q].k < a.k) a.k = P[q].k;
    if (ch < a.c) a.c = ch;
  }
  c->pm[b] = a;
  for (e = c->fam.down_off[j]; e < c->fam.down_off[j + 1]; e++) {
    if (c->eagg[e].k < a.k) a.k = c->eagg[e].k;
    if (c->eagg[e].c < a.c) a.c = c->eagg[e].c;
    c->pm[++b] = a;
  }
}

static int mp__run(mp__dp_t *c, mp__mode_t mode, mp__bound_t *bd) {
  size_t ns = c->fam.n_sets, j, nv, q;
  int rc;
  bd->pruned = 0;
  bd->next_t = HUGE_VAL;
  bd->next_k = UINT64_MAX;
  c->n_arena = 0;
  c->n_cand = 0;
  if ((rc = mp__cand_reserve(c, 1)) != 0) return rc;
  c->cand[0].a = 0;
  c->cand[0].k = 0;
  c->cand[0].p = 0;
  c->cand[0].from_set = UINT32_MAX;
  c->cand[0].from_pair = UINT32_MAX;
  c->n_cand = 1;
  if ((rc = mp__append_front(c, 0)) != 0) return rc;
  if (c->fam.exact) mp__agg_fill(c, 0);
  c->n_live = 0;
  if (c->live) c->live[c->n_live++] = 0;
  c->work = 0;
  bd->work = 0;
  bd->stopped = 0;
  mp__progress_phase(c->should_stop, c->stop_arg, "search", 0);
  if ((rc = mp__poll(c)) != 0) return rc;
  for (j = 1; j < ns; j++) {
    mp__wlim_t wl;
    double chlim = HUGE_VAL;
    uint64_t mwlim = UINT64_MAX;
    int skip = 0;
    c->n_cand = 0;
    if (bd->work_limit && bd->work + c->work > bd->work_limit) {
      bd->work += c->work;
      bd->stopped = 1;
      return 0;
    }
    if (c->work > (1u << 16)) {
      bd->work += c->work;
      c->work = 0;
      mp__progress_phase(c->should_stop, c->stop_arg, "search", (double)j / (double)ns);
      if ((rc = mp__poll(c)) != 0) return rc;
    }
    /* The cuts bound the steps too: a step's own ch, mw or cost is a lower
     * bound on what any pair adds with it (charged time, kept memory, peak
     * are all >= 0 before the step). A state whose bound alone exceeds a cut
     * gets no pair at all. */
    if (bd->use_q) {
      if (c->rr[j].hq > bd->budget) skip = 1;
      else mwlim = bd->budget - c->rr[j].hq;
    }
    if (bd->rt != HUGE_VAL) {
      double tb = mp__tbound(c, j, 0, bd->budget);
      if (tb > bd->rt + c->tol) {
        skip = 1;
        if (tb != HUGE_VAL) {
          bd->pruned = 1;
          if (tb < bd->next_t) bd->next_t = tb;
        }
      } else {
        chlim = bd->rt + c->tol - c->rr[j].ht;
      }
    }
    if (bd->rk != UINT64_MAX) {
      if (c->hk[j] > bd->rk) {
        skip = 1;
        if (c->hk[j] != UINT64_MAX) {
          bd->pruned = 1;
          if (c->hk[j] < bd->next_k) bd->next_k = c->hk[j];
        }
      } else if (bd->rk - c->hk[j] < mwlim) {
        mwlim = bd->rk - c->hk[j];
      }
    }
    if (c->fam.exact) mp__agg_edges(c, j);
    if (!skip) {
      mp__wlim_init(&wl, bd->budget, chlim, mwlim);
      wl.agg = c->fam.exact && !(c->tuning & MP_DP_TUNE_NO_PARTS) ? c->eagg : NULL;
      wl.agg_slack = c->tol;
      if (bd->rt != HUGE_VAL && c->nlam > 0) {
        /* a step's own ch and mw bound what any pair has after it */
        int z;
        wl.nlag = c->nlam;
        wl.lam = c->lam;
        for (z = 0; z < c->nlam; z++) {
          wl.lagbase[z] = c->rr[j].hl[z] - c->lam[z] * (double)bd->budget;
          wl.lagoff[z] = bd->rt + c->tol - wl.lagbase[z];
        }
      }
      if (c->fam.exact && c->hq_done && !(c->tuning & MP_DP_TUNE_WALK) &&
          ((c->tuning & MP_DP_TUNE_SCAN) || 2 * c->n_live < c->rvis[j]))
        mp__scan(c, j, &wl, &nv);
      else
        mp__walk(c, j, &wl, &nv);
      if (wl.cut_t != HUGE_VAL) {
        bd->pruned = 1;
        if (wl.cut_t < bd->next_t) bd->next_t = wl.cut_t;
      }
      if (wl.cut_ch != HUGE_VAL) {
        bd->pruned = 1;
        if (wl.cut_ch + c->rr[j].ht < bd->next_t) bd->next_t = wl.cut_ch + c->rr[j].ht;
      }
      if (wl.cut_mw != UINT64_MAX && bd->rk != UINT64_MAX) {
        uint64_t v = mp__sadd(wl.cut_mw, c->hk[j]);
        bd->pruned = 1;
        if (v < bd->next_k) bd->next_k = v;
      }
      /* Closest subsets first: their pairs tend to dominate, so fewer later
       * candidates survive the filter (the exact walk lists them in that
       * order, the approx walk in the opposite one). */
      for (q = 0; q < nv; q++) {
        const mp__vis_t *x = &c->vis[c->fam.exact ? q : nv - 1 - q];
        if ((rc = mp__relax(c, mode, bd, j, x)) != 0) return rc;
      }
    }
    if (mode == MP__FRONTIER && (rc = mp__reduce3(c)) != 0) return rc;
    if ((rc = mp__append_front(c, j)) != 0) return rc;
    if (c->fam.exact) mp__agg_fill(c, j);
    if (c->live && c->front_len[j] > 0) c->live[c->n_live++] = (uint32_t)j;
  }
  bd->work += c->work;
  return 0;
}

/* ---- Solving at one budget ------------------------------------------------- */

/* How close to the known least value lo (with a stopped value hi above it,
 * or HUGE_VAL) the time cut must come before it goes to either end instead
 * of halving the gap: a 64th of the scale, so that halving stays
 * logarithmic. */
static double mp__near(double lo, double hi, double tol) {
  double scale = lo > 0 ? lo : (hi != HUGE_VAL ? hi / 2 : 0), v = scale / 64;
  return v > tol ? v : tol;
}

/* The bounded solve: afterwards front_len[last] > 0 iff a plan exists, and
 * V's staircase holds the answer (see mp_dp_solve).
 *
 * First hq, at least up to the budget: hq({}) <= budget decides whether any
 * plan exists, and every pass below cuts the pairs that cannot finish. When
 * the approx family has no plan at this budget, hq goes up to its least
 * feasible budget, so that the same pass also answers the least feasible
 * budget (mp__solve_minpeak) when the exact family has no plan either. The
 * same walk computes the time bounds (mp__reverse_q).
 *
 * Time objective: passes cut at R, the charged time a pair may still reach
 * (mp__bound_t). When V is reached, R is at least the optimum and the answer
 * is the uncut DP's; otherwise the optimum is at least the least bound that
 * was cut, and R grows. How fast matters: a pass below the optimum is cheap,
 * but above it every pair within R of the optimum survives, and their number
 * explodes with the overshoot (PSPNet at 3.4 GB: 1.8 million candidates at
 * the optimum, 231, 18 million at 245, 79 million at 259). So R starts at
 * the bound at {} (which the Lagrangian bounds make close to the optimum)
 * and grows by steps that double from a fiftieth of it, never below the
 * least cut bound. Exact family only, as a guard against the explosion: a
 * pass that does 16 times the work of the last failed one (or of an eighth
 * of the reverse walk, when that one was a cheap scan) is stopped, and R is
 * halved back towards the least value not yet ruled out, with twice the
 * room; later steps stay below the stopped value (halfway to it), and once
 * close to either end R goes there whatever it costs, so R always moves on.
 * (These constants were tuned on the shipped graphs and the bench's layered
 * DAG; the answer does not depend on them.) The charged time of a known
 * plan caps R (a pass at the cap succeeds): the approx family's answer or
 * the least-peak plan hq gives. When the family's staircase is known (a fit
 * or a frontier: mp__dp_session_use_optima), R starts just above the
 * optimum it gives, and the first pass answers: on a 100-node layered DAG
 * of the bench (seed 1), four passes in five failed below the optimum, 72%
 * of its frontier's time.
 *
 * Memory objective: a one-pair-per-state pass (the least kept memory at each
 * state) gives the least kept memory at V, the answer's (an iteration on hk
 * alone is slower: the relaxed bound is weak when the budget binds); one
 * pass cut there with hk gives its ties. */
int mp__solve_bounded(mp__dp_t *c, mp_objective_t obj, uint64_t budget,
                             const mp__hint_t *hint) {
  size_t last = c->fam.n_sets - 1;
  mp__bound_t bd;
  int rc, use_q = !(c->tuning & MP_DP_TUNE_NO_QCUT);
  double cap_plan = hint->known && hint->feasible ? hint->charged : HUGE_VAL, qc;
  uint64_t qcap = c->qcap_all ? UINT64_MAX : budget;
  if (hint->known && !hint->feasible && hint->min_peak > qcap) qcap = hint->min_peak;
  /* the reverse pass holds for every budget up to its cap: a session's
   * earlier solves may have done it */
  if (!(c->hq_done && !c->hq_part && c->hq_cap >= qcap &&
        (c->ht_done || obj != MP_OBJECTIVE_TIME))) {
    /* A single solve that knows a plan at this budget (the approx family's)
     * needs the reverse pass only for the plans within its charged time. */
    double tcap = obj == MP_OBJECTIVE_TIME && !c->qcap_all && hint->known && hint->feasible
                      ? cap_plan + c->tol
                      : HUGE_VAL;
    if ((rc = mp__reverse_q(c, qcap, obj == MP_OBJECTIVE_TIME, tcap)) != 0) return rc;
  }
  if (c->rr[0].hq > budget) {
    c->front_len[last] = 0;
    return 0;
  }
  qc = mp__qchain_charged(c);
  if (qc < cap_plan) cap_plan = qc;
  if (obj == MP_OBJECTIVE_MEMORY) {
    uint64_t kstar;
    mp__bound_init(&bd, budget);
    bd.use_q = use_q;
    if ((rc = mp__run(c, MP__MINKEPT, &bd)) != 0) return rc;
    if (c->front_len[last] == 0) return MP_EINVAL; /* unreachable: hq({}) fits */
    kstar = c->arena[c->front_off[last]].k;
    if ((rc = mp__reverse_kept(c, budget, kstar)) != 0) return rc;
    mp__bound_init(&bd, budget);
    bd.use_q = use_q;
    bd.rk = kstar;
    return mp__run(c, MP__BOUNDED, &bd);
  }
  {
    double cap = cap_plan + c->tol, lo = mp__tbound(c, 0, 0, budget), r, step;
    double rstop = HUGE_VAL; /* the least R whose pass was stopped */
    double rprev = -1;       /* the R of the failed pass before the last */
    size_t base = 0;         /* the work of the last failed pass */
    size_t wprev = 0;        /* ... and of the one before */
    int nstops = 0, pay = 0; /* pay: run this pass whatever it costs */
    if (!(lo > 0)) lo = 0;
    if (lo > cap) lo = cap;
    /* The family's staircase knows the optimum: cut just above it, one
     * pass (a pass at or above the optimum gives the uncut DP's answer; if
     * rounding put the cut below, the search goes on from there). */
    if (hint->opt_known && hint->opt_charged > lo) lo = hint->opt_charged < cap ? hint->opt_charged : cap;
    r = hint->opt_known && lo + c->tol < cap ? lo + c->tol : lo;
    step = lo / 50;
    for (;;) {
      mp__bound_init(&bd, budget);
      bd.use_q = use_q;
      bd.rt = r;
      if (base > 0 && r > lo && !pay && c->fam.exact)
        bd.work_limit = (c->tuning & MP_DP_TUNE_STOP) && !nstops
                            ? 1
                            : 16 * (base > c->rvis_total / 8 ? base : c->rvis_total / 8) + (1u << 21);
      pay = 0;
      c->passes++;
      if ((rc = mp__run(c, MP__BOUNDED, &bd)) != 0) return rc;
      if (bd.stopped) {
        /* halfway back, with more room; close to lo, lo itself (never stopped) */
        nstops++;
        base *= 2;
        rstop = r;
        step = (r - lo) / 2;
        r = step <= mp__near(lo, rstop, c->tol) ? lo : lo + step;
        continue;
      }
      if (c->front_len[last] > 0 || !bd.pruned || r == HUGE_VAL) return 0;
      /* the optimum is at least the least bound cut (which exceeds r) */
      lo = bd.next_t > r ? bd.next_t : r;
      wprev = base;
      base = bd.work;
      if (r >= cap) {
        r = HUGE_VAL; /* (only if rounding failed the plan at the cap) */
        continue;
      }
      if (lo >= rstop) rstop = HUGE_VAL; /* that stop is behind: the optimum is above */
      if (rstop != HUGE_VAL) {
        /* below a stopped value: halfway to it, or, once close, that value
         * whatever it costs (the optimum is in between) */
        step = (rstop - lo) / 2;
        if (step <= mp__near(lo, rstop, c->tol)) {
          r = rstop;
          pay = 1;
        } else {
          r = lo + step;
        }
      } else {
        if (!(step > 0)) step = (cap - r) / 64;
        if (c->fam.exact && rprev >= 0 && wprev > 0 &&
            (base > 2 * wprev || (base > c->rvis_total / 4 && base > wprev + wprev / 4))) {
          /* The work grows fast, or is large and growing: near the
           * optimum, where an overshoot costs most (GoogLeNet at 537 MB:
           * 57 million steps at R = 77, 74 at the optimum, 85, and 380 at
           * the doubled step's 120), as opposed to the slow climb of
           * cheap passes (PSPNet: a few percent more per pass). Grow by
           * at most a twelfth, by less when the step at which the work
           * would grow four-fold again, at the last step's exponential
           * rate, is smaller, and do not double. */
          double k = lo / 12;
          if (base > 2 * wprev) {
            double e = (r - rprev) * log(4.0) / log((double)base / (double)wprev);
            if (e < k) k = e;
          }
          if (k < mp__near(lo, HUGE_VAL, c->tol)) k = mp__near(lo, HUGE_VAL, c->tol);
          if (k < step) step = k;
          rprev = r;
          r += step;
        } else {
          rprev = r;
          r += step;
          step *= 2;
        }
        if (r < lo) r = lo;
      }
      if (r > cap) r = cap;
    }
  }
}

/* The least peak over all plans: hq({}), exact once hq was computed with a
 * cap at least that large. The cap: a budget known to have a plan, the
 * approx family's least one when known, else the single step {} -> V. When
 * the bounded solve already computed hq with a cap that covers hq({}), that
 * pass answers. */
int mp__solve_minpeak(mp__dp_t *c, const mp__hint_t *hint, uint64_t *peak) {
  uint64_t cap = mp__step_cost(c, 0, c->fam.n_sets - 1);
  int rc;
  if (hint->known && !hint->feasible && hint->min_peak < cap) cap = hint->min_peak;
  if (!(c->hq_done && !c->hq_part && c->rr[0].hq <= c->hq_cap) &&
      (rc = mp__reverse_q(c, cap, 0, HUGE_VAL)) != 0)
    return rc;
  if (c->rr[0].hq > c->hq_cap) return MP_EINVAL; /* unreachable: a plan fits the cap */
  *peak = c->rr[0].hq;
  return 0;
}

/* The frontier pass (mp_dp_frontier, dp.c): no budget, Pareto on (max a,
 * min k, min p); afterwards V's pairs give every budget's answer. */
int mp__solve_frontier(mp__dp_t *c) {
  mp__bound_t bd;
  mp__bound_init(&bd, UINT64_MAX);
  return mp__run(c, MP__FRONTIER, &bd);
}
