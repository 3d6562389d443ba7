/* dp.c - the exact and approximate lower-set DPs (ALGORITHMS.md sections 3-5),
 * both objectives, both accountings, multi-budget sessions, the whole
 * staircase in one pass, and the three-way frontier pass.
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
 * A solve at one budget (mp__solve_bounded) is, in order:
 *  - a reverse pass (mp__reverse_q, dp_reverse.c): for every set, hq, the
 *    least peak of what remains (exact: feasibility, the least feasible
 *    budget, and a cut that drops every pair that cannot finish), and lower
 *    bounds on the charged time still to come (ht, and Lagrangian bounds
 *    that weigh the kept memory);
 *  - forward passes, Pareto on (max a, min k) with steps limited by the
 *    budget, cut at a charged time R that grows until V is reached (the
 *    answer is then the uncut DP's). At V the time objective takes the
 *    largest a (then least k), the memory objective the least k (then
 *    largest a; its passes are cut by kept memory instead). The exact
 *    family's walks skip whole parts of the subsets where no pair could
 *    pass a cut (mp__agg_cut; at tight budgets most sets hold none).
 * The reverse pass holds for every budget up to its cap, so a session
 * (several budgets on one graph) does it once.
 *
 * The staircase (mp__staircase, dp_staircase.c): hq in two dimensions, the
 * Pareto set of (charged time, peak) of what remains, in one reverse pass;
 * at {} it is the time objective's answer at every budget.
 *
 * Reverse passes (mp__reverse_q, mp__staircase) may run on several threads
 * (mp__par_pass, dp_reverse.c, on the thread pool of threadpool.h): the
 * sets of one size push into smaller sets only, so each size is shared out,
 * with a lock per target set and a barrier per size. The forward passes stay
 * on the caller's thread.
 *
 * The frontier pass (mp_dp_frontier): no budget, Pareto on (max a, min k,
 * min p). Dominance in all three is sound: a continuation's steps cost k +
 * (something independent of the pair), so a pair with more a, less k and a
 * lower peak so far does at least as well on every continuation under every
 * budget. Hence the set at V, filtered by p <= budget, holds the bounded
 * pass's answer for every budget, and sorting it by p gives the staircase
 * (least budget, best answer, ties included) in one pass; slow on large
 * graphs (no budget cuts it), where the staircase above is the fast way.
 *
 * Accounting details are in dp.h. Internally `a` is always "forward time not
 * charged": in the default accounting the last step into V adds the time of
 * the whole last segment, so recompute = fwd_time - a in both accountings.
 */
#include "dp_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowerset.h"
#include "threadpool.h"

/* The threads an options struct asks for (mp__check_options bounds it). */
static size_t mp__opt_threads(const mp_dp_options_t *o) { return o->threads > 1 ? o->threads : 1; }

static void mp__dp_free_family(mp__dp_t *c) {
  if (c->have_fam) mp_lowerset_family_free(&c->fam);
  c->have_fam = 0;
  free(c->m);
  free(c->back);
  free(c->gsrc);
  free(c->mr);
  free(c->t);
  free(c->tr);
  free(c->fb_off);
  free(c->fb);
  free(c->approx_top);
  free(c->arena);
  free(c->front_off);
  free(c->front_len);
  free(c->fmark);
  free(c->vis);
  free(c->rr);
  free(c->wset);
  free(c->dedge);
  free(c->eagg);
  free(c->pm);
  free(c->pmi);
  free(c->rstack);
  free(c->rvis);
  free(c->live);
  free(c->ctgt);
  free(c->hk);
  while (c->n_xwalk > 0) {
    c->n_xwalk--;
    free(c->xwalk[c->n_xwalk].stack);
    free(c->xwalk[c->n_xwalk].fmark);
  }
  free(c->xwalk);
  c->xwalk = NULL;
  c->m = c->back = c->mr = c->gsrc = NULL;
  c->t = c->tr = NULL;
  c->fb_off = c->fb = c->approx_top = NULL;
  c->arena = NULL;
  c->n_arena = c->cap_arena = 0;
  c->front_off = NULL;
  c->front_len = NULL;
  c->fmark = NULL;
  c->vis = NULL;
  c->rr = NULL;
  c->wset = NULL;
  c->dedge = NULL;
  c->eagg = NULL;
  c->pm = NULL;
  c->pmi = NULL;
  c->rstack = NULL;
  c->rvis = NULL;
  c->live = NULL;
  c->ctgt = NULL;
  c->hk = NULL;
  c->hq_done = c->ht_done = c->hq_part = 0;
}

static void mp__dp_free(mp__dp_t *c) {
  mp__dp_free_family(c);
  mp_actdag_free(&c->dag);
  free(c->nm);
  free(c->nt);
  free(c->nofree);
  free(c->cand);
  free(c->cand2);
  free(c->surv);
  free(c->stair3);
}

static int mp__dp_init(mp__dp_t *c, const mp_graph_t *g, mp_accounting_t acc) {
  size_t v;
  int rc;
  memset(c, 0, sizeof(*c));
  c->threads = 1;
  c->g = g;
  c->acc = acc;
  c->tol = 1e-9 * (g->fwd_time > 1 ? g->fwd_time : 1);
  if ((rc = mp_actdag_init(&c->dag, g)) != 0) return rc;
  c->nm = malloc((c->dag.n ? c->dag.n : 1) * sizeof(uint64_t));
  c->nt = malloc((c->dag.n ? c->dag.n : 1) * sizeof(double));
  c->nofree = calloc(c->dag.n ? c->dag.n : 1, 1);
  if (!c->nm || !c->nt || !c->nofree) return MP_ENOMEM;
  for (v = 0; v < c->dag.n; v++) {
    const mp_node_t *nd = &g->nodes[c->dag.node[v]];
    c->nm[v] = nd->bytes;
    c->nt[v] = nd->time;
    /* The reference has no notion of recompute:false. */
    c->nofree[v] = acc == MP_ACCOUNTING_DEFAULT && !nd->recompute;
    if (acc == MP_ACCOUNTING_DEFAULT && nd->workspace_bytes > c->max_ws) c->max_ws = nd->workspace_bytes;
  }
  return 0;
}

/* Per-set quantities: m, t, back = m(A) + m(B), F' and the recompute:false
 * sums. Uses two stamp arrays over nodes to mark A and B once per set. */
static int mp__dp_prepare(mp__dp_t *c) {
  const mp_actdag_t *d = &c->dag;
  mp_lowerset_family_t *f = &c->fam;
  size_t ns = f->n_sets, words = f->words, i, w, k, nfb = 0, cap_fb = 1024;
  uint32_t *mark = NULL, *list = NULL;
  uint32_t gen = 0;
  int rc = MP_ENOMEM;

  c->m = malloc(ns * sizeof(uint64_t));
  c->back = malloc(ns * sizeof(uint64_t));
  c->gsrc = malloc(ns * sizeof(uint64_t));
  c->mr = malloc(ns * sizeof(uint64_t));
  c->t = malloc(ns * sizeof(double));
  c->tr = malloc(ns * sizeof(double));
  c->fb_off = malloc((ns + 1) * sizeof(uint32_t));
  c->fb = malloc(cap_fb * sizeof(uint32_t));
  c->front_off = malloc(ns * sizeof(size_t));
  c->front_len = calloc(ns, sizeof(uint32_t));
  c->vis = malloc(ns * sizeof(mp__vis_t));
  c->fmark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  c->rr = malloc(ns * sizeof(mp__rrec_t));
  c->ctgt = malloc(ns * sizeof(uint64_t));
  c->hk = malloc(ns * sizeof(uint64_t));
  c->hq_done = c->ht_done = c->hq_part = 0;
  mark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  list = malloc((d->n ? d->n : 1) * sizeof(uint32_t));
  if (!c->m || !c->back || !c->gsrc || !c->mr || !c->t || !c->tr || !c->fb_off || !c->fb ||
      !c->front_off || !c->front_len || !c->vis || !c->fmark || !c->rr || !c->ctgt || !c->hk || !mark || !list)
    goto out;
  if (!f->exact) {
    c->approx_top = malloc(ns * sizeof(uint32_t));
    if (!c->approx_top) goto out;
    for (i = 0; i < ns; i++) c->approx_top[i] = UINT32_MAX;
    for (k = 0; k < d->n; k++) c->approx_top[f->by_node[k]] = (uint32_t)k;
  }
  c->fb_off[0] = 0;
  for (i = 0; i < ns; i++) {
    const uint64_t *b = f->bits + i * words;
    uint64_t m = 0, mr = 0, ma = 0, mb = 0, mg = 0;
    double t = 0, tr = 0;
    size_t na = 0, a;
    /* generation marks: 2*gen+1 = in A, 2*gen+2 = in B */
    gen++;
    if (gen > UINT32_MAX / 2 - 2) {
      memset(mark, 0, (d->n ? d->n : 1) * sizeof(uint32_t));
      gen = 1;
    }
    for (w = 0; w < words; w++) {
      uint64_t x = b[w];
      while (x) {
        uint32_t v = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
        int boundary = 0;
        x &= x - 1;
        m += c->nm[v]; /* no overflow: activation_bytes fits */
        t += c->nt[v];
        if (c->nofree[v]) {
          mr += c->nm[v];
          tr += c->nt[v];
        }
        for (k = d->succ_off[v]; k < d->succ_off[v + 1]; k++) {
          uint32_t s = d->succ[k];
          if ((b[s >> 6] >> (s & 63)) & 1u) continue;
          boundary = 1;
          if (mark[s] != 2 * gen + 1) {
            mark[s] = 2 * gen + 1;
            list[na++] = s;
            ma = mp__sadd(ma, c->nm[s]);
          }
        }
        if (boundary) mg = mp__sadd(mg, c->nm[v]);
        if (boundary && !c->nofree[v]) {
          if (nfb == cap_fb) {
            uint32_t *nf = realloc(c->fb, 2 * cap_fb * sizeof(uint32_t));
            if (nf == NULL) goto out;
            c->fb = nf;
            cap_fb *= 2;
          }
          c->fb[nfb++] = v;
        }
      }
    }
    /* B(L): nodes outside L that feed a node of A(L). A node may be in both
     * A and B; the model counts it in both sums (values and gradients). */
    for (a = 0; a < na; a++) {
      uint32_t s = list[a];
      for (k = d->pred_off[s]; k < d->pred_off[s + 1]; k++) {
        uint32_t u = d->pred[k];
        if ((b[u >> 6] >> (u & 63)) & 1u) continue;
        if (mark[u] == 2 * gen + 2) continue;
        /* u may already be marked as A: it is in B as well and counted in
         * both sums; the B mark keeps a second reader from adding it again. */
        mark[u] = 2 * gen + 2;
        mb = mp__sadd(mb, c->nm[u]);
      }
    }
    c->m[i] = m;
    c->t[i] = t;
    c->mr[i] = mr;
    c->tr[i] = tr;
    c->back[i] = mp__sadd(ma, mb);
    c->gsrc[i] = mg;
    if (nfb > UINT32_MAX) goto out;
    c->fb_off[i + 1] = (uint32_t)nfb;
  }
  for (i = 0; i < ns; i++) c->ctgt[i] = c->acc == MP_ACCOUNTING_DEFAULT ? c->max_ws : c->back[i];
  if (f->exact) {
    size_t ne = f->down_off[ns];
    if ((uint64_t)ne + ns > UINT32_MAX) { /* pmi indexes pm, ne + ns entries */
      rc = MP_ELIMIT;
      goto out;
    }
    c->wset = malloc(ns * sizeof(*c->wset));
    c->dedge = malloc((ne ? ne : 1) * sizeof(*c->dedge));
    c->rstack = malloc(ns * sizeof(*c->rstack));
    c->rvis = calloc(ns, sizeof(*c->rvis));
    c->live = malloc(ns * sizeof(*c->live));
    c->eagg = malloc((ne ? ne : 1) * sizeof(*c->eagg));
    c->pm = malloc((ne + ns) * sizeof(*c->pm));
    c->pmi = malloc((ne ? ne : 1) * sizeof(*c->pmi));
    if (!c->wset || !c->dedge || !c->rstack || !c->rvis || !c->live || !c->eagg || !c->pm || !c->pmi)
      goto out;
    for (i = 0; i < ns; i++) {
      c->wset[i].m = c->m[i];
      c->wset[i].csrc = c->acc == MP_ACCOUNTING_DEFAULT ? c->gsrc[i] : 0;
      c->wset[i].dlo = f->down_off[i];
      c->wset[i].dhi = f->down_off[i + 1];
    }
    for (k = 0; k < ne; k++) {
      uint32_t t = f->down[k];
      c->dedge[k].s = t;
      c->dedge[k].v = f->down_node[k];
      c->dedge[k].m = c->wset[t].m;
      c->dedge[k].csrc = c->wset[t].csrc;
      c->dedge[k].dlo = c->wset[t].dlo;
      c->dedge[k].dhi = c->wset[t].dhi;
      /* the walk enters t by removing v and goes on removing nodes below
       * v only: t's edges before the first one at v or above (they are
       * sorted by node) */
      {
        uint32_t e = f->down_off[t];
        while (e < f->down_off[t + 1] && f->down_node[e] < f->down_node[k]) e++;
        c->pmi[k] = e + t; /* pm_base(t) + (e - down_off[t]) */
      }
    }
  }
  rc = 0;
out:
  free(mark);
  free(list);
  return rc;
}

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

static int mp__cand_reserve(mp__dp_t *c, size_t extra) {
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
                                uint32_t node, uint64_t cost, uint64_t mw, double tw, double ch) {
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
      uint64_t pmw = par->mw;
      double ptw = par->tw, pch = par->ch;
      uint32_t e_end = W[pi].dhi;
      for (e = W[pi].dlo; e < e_end; e++) {
        const mp__dedge_t *d = &D[e];
        uint32_t s = d->s, v = d->v;
        uint64_t mw = pmw, cost;
        double tw = ptw, ch = pch;
        if (v >= below) break;
        if (into_v) {
          if (dflt) tw += c->nt[v];
          else ch += c->nt[v];
        } else if (c->fmark[v] == mark || c->nofree[v]) {
          mw = mp__sadd(mw, c->nm[v]);
          tw += c->nt[v];
        } else {
          ch += c->nt[v];
        }
        cost = mp__sadd(mp__sadd(mp__sdbl(mj - d->m), d->csrc), tg);
        if (wl->agg && mp__agg_cut(wl, &wl->agg[e], cost, mw, ch)) continue;
        mp__walk_keep(c, wl, &nv, s, v, cost, mw, tw, ch);
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
        mp__walk_keep(c, wl, &nv, i, 0, cost, mw, tw, (c->t[j] - c->t[i]) - tw);
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
    mp__walk_keep(c, wl, &nv, i, 0, mp__step_cost(c, i, j), mw, tw, (c->t[j] - c->t[i]) - tw);
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

/* What is known before a solve, as bounds. known/feasible/charged/kept/
 * min_peak: what the approx family found at the same budget and objective
 * (exact family only): the approx family is a subfamily, so its plan is a
 * plan of the exact family too (exact is never worse), and its least
 * feasible budget is at least the exact one. cap_t / floor_t (time
 * objective): the charged time of some plan that fits this budget and a
 * lower bound on the optimum, from the same session's answers at smaller and
 * larger budgets (a plan that fits a smaller budget fits this one, and a
 * larger budget can only do better). */
typedef struct {
  int known;
  int feasible;
  double charged;      /* t(V) - a of its answer */
  uint64_t kept;       /* k of its answer */
  uint64_t min_peak;   /* when infeasible: its least feasible activation budget */
  double cap_t;        /* HUGE_VAL: none */
  double floor_t;      /* 0: none */
} mp__hint_t;

static void mp__hint_init(mp__hint_t *h) {
  memset(h, 0, sizeof(*h));
  h->cap_t = HUGE_VAL;
  h->floor_t = 0;
}

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
 * plan caps R (a pass at the cap succeeds): the approx family's answer, the
 * session's answers at smaller budgets, or the least-peak plan hq gives.
 *
 * Memory objective: a one-pair-per-state pass (the least kept memory at each
 * state) gives the least kept memory at V, the answer's (an iteration on hk
 * alone is slower: the relaxed bound is weak when the budget binds); one
 * pass cut there with hk gives its ties. */
static int mp__solve_bounded(mp__dp_t *c, mp_objective_t obj, uint64_t budget,
                             const mp__hint_t *hint) {
  size_t last = c->fam.n_sets - 1;
  mp__bound_t bd;
  int rc, use_q = !(c->tuning & MP_DP_TUNE_NO_QCUT);
  double cap_plan = hint->known && hint->feasible ? hint->charged : HUGE_VAL, qc;
  uint64_t qcap = c->qcap_all ? UINT64_MAX : budget;
  if (hint->known && !hint->feasible && hint->min_peak > qcap) qcap = hint->min_peak;
  if (hint->cap_t < cap_plan) cap_plan = hint->cap_t;
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
    if (hint->floor_t - c->tol > lo) lo = hint->floor_t - c->tol;
    if (!(lo > 0)) lo = 0;
    if (lo > cap) lo = cap;
    r = lo;
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
static int mp__solve_minpeak(mp__dp_t *c, const mp__hint_t *hint, uint64_t *peak) {
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

/* ---- Families and fallback ------------------------------------------------ */

static int mp__load_family(mp__dp_t *c, const mp_dp_options_t *o, double t0, char *reason,
                           size_t reason_len, int *exact_used) {
  int rc;
  *exact_used = 0;
  reason[0] = '\0';
  if (o->exact) {
    mp_lowerset_limits_t lim;
    size_t seen = 0;
    memset(&lim, 0, sizeof(lim));
    lim.max_sets = o->max_lower_sets ? o->max_lower_sets : MP_DP_DEFAULT_MAX_LOWER_SETS;
    lim.deadline_at_ms = o->deadline_ms > 0 ? t0 + o->deadline_ms : 0;
    lim.should_stop = o->should_stop;
    lim.stop_arg = o->stop_arg;
    rc = mp_lowerset_enumerate(&c->dag, &lim, &c->fam, &seen);
    if (rc == 0) {
      c->have_fam = 1;
      *exact_used = 1;
    } else if (rc == MP_ELIMIT) {
      if (seen > lim.max_sets)
        snprintf(reason, reason_len, "more than %zu lower sets (the limit)", lim.max_sets);
      else
        snprintf(reason, reason_len, "the lower sets exceed the memory cap after %zu", seen);
    } else if (rc == MP_ETIMEDOUT) {
      snprintf(reason, reason_len,
               "the deadline of %.0f ms passed while enumerating lower sets (%zu so far)",
               o->deadline_ms, seen);
    } else {
      return rc;
    }
  }
  if (!c->have_fam) {
    c->deadline_at = 0; /* the approx DP runs without a deadline */
    if ((rc = mp_lowerset_approx(&c->dag, &c->fam)) != 0) return rc;
    c->have_fam = 1;
  }
  return mp__dp_prepare(c);
}

/* One solve on the loaded family: the bounded pass (frontier = 0) or the
 * frontier pass (frontier = 1). The hint only applies to the exact family. */
static int mp__exec(mp__dp_t *c, int frontier, mp_objective_t obj, uint64_t budget,
                    const mp__hint_t *hint) {
  mp__bound_t bd;
  if (!frontier) return mp__solve_bounded(c, obj, budget, hint);
  mp__bound_init(&bd, UINT64_MAX);
  return mp__run(c, MP__FRONTIER, &bd);
}

/* mp__exec; when the exact DP passes its deadline, switch to the approx
 * family (which runs without a deadline, only the cancel callback). */
static int mp__exec_with_fallback(mp__dp_t *c, const mp_dp_options_t *o, int frontier,
                                  uint64_t budget, const mp__hint_t *hint, char *reason,
                                  size_t reason_len, int *exact_used) {
  int rc = mp__exec(c, frontier, o->objective, budget, hint);
  if (rc == MP_ETIMEDOUT && c->fam.exact) {
    mp__dp_free_family(c);
    snprintf(reason, reason_len, "the deadline of %.0f ms passed during the exact DP",
             o->deadline_ms);
    *exact_used = 0;
    c->deadline_at = 0;
    if ((rc = mp_lowerset_approx(&c->dag, &c->fam)) != 0) return rc;
    c->have_fam = 1;
    if ((rc = mp__dp_prepare(c)) != 0) return rc;
    {
      /* The hint's plans (the approx family's answer, the session's exact
       * answers at smaller budgets) cap nothing for the approx DP, which
       * may need more; its lower bound still holds (exact <= approx). */
      mp__hint_t h = *hint;
      h.known = 0;
      h.feasible = 0;
      h.cap_t = HUGE_VAL;
      rc = mp__exec(c, frontier, o->objective, budget, &h);
    }
  }
  return rc;
}

/* The approx family's answer at the same budget and objective (its least
 * feasible budget when it has no plan), as bounds for the exact DP, from the
 * approx context `a` (family loaded). It costs a few percent of an exact
 * solve. `bact` is the activation budget, `below_const` says the budget does
 * not even cover the constant memory. */
static int mp__approx_hint(mp__dp_t *a, mp_objective_t obj, uint64_t bact, int below_const,
                           mp__hint_t *h) {
  mp__hint_t none;
  size_t last = a->fam.n_sets - 1;
  int rc;
  mp__hint_init(&none);
  if (!below_const) {
    if ((rc = mp__solve_bounded(a, obj, bact, &none)) != 0) return rc;
    if (a->front_len[last] > 0) {
      const mp__pair_t *P = a->arena + a->front_off[last];
      size_t pick = obj == MP_OBJECTIVE_TIME ? a->front_len[last] - 1 : 0;
      h->known = 1;
      h->feasible = 1;
      h->charged = a->t[last] - P[pick].a;
      h->kept = P[pick].k;
      return 0;
    }
  }
  if ((rc = mp__solve_minpeak(a, &none, &h->min_peak)) != 0) return rc;
  h->known = 1;
  h->feasible = 0;
  return 0;
}

static int mp__check_options(const mp_dp_options_t *o, mp_error_t *err) {
  if ((unsigned)o->objective > MP_OBJECTIVE_MEMORY)
    return mp_error_set(err, MP_EINVAL, "$.objective", "unknown objective");
  if ((unsigned)o->accounting > MP_ACCOUNTING_REFERENCE)
    return mp_error_set(err, MP_EINVAL, "$.accounting", "unknown accounting");
  if (o->threads > MP_DP_MAX_THREADS)
    return mp_error_set(err, MP_EINVAL, "$.threads", "more threads than %d", MP_DP_MAX_THREADS);
  return 0;
}

static int mp__fail(int rc, mp_error_t *err) {
  switch (rc) {
  case MP_ENOMEM: return mp_error_set(err, rc, "", "out of memory");
  case MP_ECANCELED: return mp_error_set(err, rc, "", "the DP was canceled");
  case MP_ETIMEDOUT: return mp_error_set(err, rc, "", "the DP passed its deadline");
  case MP_ELIMIT:
    return mp_error_set(err, rc, "", "the graph is too large for the lower-set DP");
  default: return mp_error_set(err, rc, "", "lower-set DP failed");
  }
}

void mp_dp_options_init(mp_dp_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->exact = 1;
  o->objective = MP_OBJECTIVE_TIME;
  o->accounting = MP_ACCOUNTING_DEFAULT;
  o->budget = UINT64_MAX;
  o->max_lower_sets = MP_DP_DEFAULT_MAX_LOWER_SETS;
}

void mp_dp_result_free(mp_dp_result_t *res) {
  if (res == NULL) return;
  mp_strategy_free(res->strategy);
  memset(res, 0, sizeof(*res));
}

/* Segment index per node from the back-pointers of pair `at` (a pair of V). */
static int mp__strategy(const mp__dp_t *c, size_t at, mp_strategy_t **out) {
  const mp_lowerset_family_t *f = &c->fam;
  mp_strategy_t *s = mp_strategy_new(c->g);
  uint32_t *chain = NULL;
  size_t len = 0, cur = f->n_sets - 1, pi = at, seg, w;
  if (s == NULL) return MP_ENOMEM;
  chain = malloc((c->dag.n + 2) * sizeof(uint32_t));
  if (chain == NULL) {
    mp_strategy_free(s);
    return MP_ENOMEM;
  }
  /* chain[0] = V, ..., chain[len-1] = {} */
  for (;;) {
    chain[len++] = (uint32_t)cur;
    if (c->arena[pi].from_set == UINT32_MAX) break;
    cur = c->arena[pi].from_set;
    pi = c->arena[pi].from_pair;
  }
  s->n_segments = (uint32_t)(len - 1);
  for (seg = 0; seg + 1 < len; seg++) {
    const uint64_t *lo = f->bits + (size_t)chain[len - 1 - seg] * f->words;
    const uint64_t *hi = f->bits + (size_t)chain[len - 2 - seg] * f->words;
    for (w = 0; w < f->words; w++) {
      uint64_t x = hi[w] & ~lo[w];
      while (x) {
        uint32_t v = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
        x &= x - 1;
        s->seg[c->dag.node[v]] = (uint32_t)seg;
      }
    }
  }
  free(chain);
  *out = s;
  return 0;
}

/* ---- Sessions: one graph, several budgets ----------------------------------- */

struct mp_dp_session_s {
  const mp_graph_t *g;
  mp_dp_options_t o;
  mp__dp_t c;           /* the asked family (the approx one after a fallback) */
  mp__dp_t a;           /* exact sessions: the approx family, for the hints */
  int have_a;
  int exact_used;
  char reason[160];
  /* the time objective's answers so far, for the next solves' bounds */
  uint64_t *sb;         /* activation budgets solved, feasible ones */
  double *sr;           /* their charged times */
  size_t n_solved, cap_solved;
};

static void mp__session_close(mp_dp_session_t *s) {
  mp__dp_free(&s->c);
  if (s->have_a) mp__dp_free(&s->a);
  free(s->sb);
  free(s->sr);
}

/* Open: the context and the family (exact, or approx when the enumeration
 * passes a limit or the deadline counted from t0). `all`: compute the
 * reverse pass for every budget at once (more than one solve to come). */
static int mp__session_open(mp_dp_session_t *s, const mp_graph_t *g, const mp_dp_options_t *o,
                            double t0, int all) {
  int rc;
  memset(s, 0, sizeof(*s));
  s->g = g;
  s->o = *o;
  if ((rc = mp__dp_init(&s->c, g, o->accounting)) != 0) return rc;
  s->c.should_stop = o->should_stop;
  s->c.stop_arg = o->stop_arg;
  s->c.qcap_all = all;
  s->c.tuning = o->tuning;
  s->c.threads = mp__opt_threads(o);
  s->c.deadline_at = o->exact && o->deadline_ms > 0 ? t0 + o->deadline_ms : 0;
  return mp__load_family(&s->c, o, t0, s->reason, sizeof(s->reason), &s->exact_used);
}

/* The session's bounds on the time objective's answer at activation budget
 * b from its earlier answers: at a smaller budget a plan (a cap), at a
 * larger one a floor. */
static void mp__session_bounds(const mp_dp_session_t *s, uint64_t b, mp__hint_t *h) {
  size_t i;
  if (s->o.objective != MP_OBJECTIVE_TIME) return;
  for (i = 0; i < s->n_solved; i++) {
    if (s->sb[i] <= b && s->sr[i] < h->cap_t) h->cap_t = s->sr[i];
    if (s->sb[i] >= b && s->sr[i] > h->floor_t) h->floor_t = s->sr[i];
  }
}

static int mp__session_record(mp_dp_session_t *s, uint64_t b, double charged) {
  if (s->n_solved == s->cap_solved) {
    size_t nc = s->cap_solved ? 2 * s->cap_solved : 16;
    uint64_t *nb = realloc(s->sb, nc * sizeof(*nb));
    double *nr;
    if (nb == NULL) return MP_ENOMEM;
    s->sb = nb;
    nr = realloc(s->sr, nc * sizeof(*nr));
    if (nr == NULL) return MP_ENOMEM;
    s->sr = nr;
    s->cap_solved = nc;
  }
  s->sb[s->n_solved] = b;
  s->sr[s->n_solved] = charged;
  s->n_solved++;
  return 0;
}

/* One solve at `budget` (in the options' terms), the deadline counted from
 * t0. Fills *res (zeroed first); on error *res is left zeroed. */
static int mp__session_solve(mp_dp_session_t *s, uint64_t budget, double t0, mp_dp_result_t *res) {
  const mp_graph_t *g = s->g;
  const mp_dp_options_t *o = &s->o;
  mp__dp_t *c = &s->c;
  mp__hint_t hint;
  uint64_t bact = 0;
  int rc, below_const = 0;
  size_t last, len, pick;

  memset(res, 0, sizeof(*res));
  mp__hint_init(&hint);
  c->deadline_at = c->fam.exact && o->deadline_ms > 0 ? t0 + o->deadline_ms : 0;
  if (o->accounting == MP_ACCOUNTING_REFERENCE) {
    bact = budget;
  } else if (budget < g->const_bytes) {
    below_const = 1;
  } else {
    bact = budget - g->const_bytes;
  }
  if (c->fam.exact) {
    if (!s->have_a) {
      mp__dp_t *a = &s->a;
      s->have_a = 1; /* mp__dp_init zeroes it first: freeing is safe */
      if ((rc = mp__dp_init(a, g, o->accounting)) != 0) goto fail;
      a->should_stop = o->should_stop;
      a->stop_arg = o->stop_arg;
      a->qcap_all = c->qcap_all;
      a->tuning = c->tuning;
      if ((rc = mp_lowerset_approx(&a->dag, &a->fam)) != 0) goto fail;
      a->have_fam = 1;
      if ((rc = mp__dp_prepare(a)) != 0) goto fail;
    }
    if ((rc = mp__approx_hint(&s->a, o->objective, bact, below_const, &hint)) != 0) goto fail;
  }
  if (!below_const) {
    int was_exact = c->fam.exact;
    mp__session_bounds(s, bact, &hint);
    rc = mp__exec_with_fallback(c, o, 0, bact, &hint, s->reason, sizeof(s->reason),
                                &s->exact_used);
    if (rc != 0) goto fail;
    if (was_exact && !c->fam.exact) s->n_solved = 0; /* exact plans are no caps for approx */
  }
  last = c->fam.n_sets - 1;
  res->exact_used = s->exact_used;
  memcpy(res->fallback_reason, s->reason, sizeof(res->fallback_reason));
  res->n_lower_sets = c->fam.n_sets;
  if (!below_const && c->front_len[last] > 0) {
    const mp__pair_t *P = c->arena + c->front_off[last];
    len = c->front_len[last];
    /* sorted by k ascending with a strictly increasing */
    pick = o->objective == MP_OBJECTIVE_TIME ? len - 1 : 0;
    res->feasible = 1;
    res->retained_time = P[pick].a;
    res->recompute_time = g->fwd_time - P[pick].a;
    if (res->recompute_time < 0) res->recompute_time = 0; /* rounding */
    res->kept_bytes = P[pick].k;
    res->model_peak =
        o->accounting == MP_ACCOUNTING_DEFAULT ? mp__sadd(P[pick].p, g->const_bytes) : P[pick].p;
    if ((rc = mp__strategy(c, c->front_off[last] + pick, &res->strategy)) != 0) goto fail;
    if (o->objective == MP_OBJECTIVE_TIME &&
        (rc = mp__session_record(s, bact, c->t[last] - P[pick].a)) != 0)
      goto fail;
  } else {
    /* Infeasible: the least budget at which this family has a plan. */
    uint64_t p = 0;
    if (!c->fam.exact) mp__hint_init(&hint); /* after a fallback */
    rc = mp__solve_minpeak(c, &hint, &p);
    if (rc == MP_ETIMEDOUT) {
      /* the answer (no plan) stands; only the least budget is unknown */
      size_t n = strlen(res->fallback_reason);
      snprintf(res->fallback_reason + n, sizeof(res->fallback_reason) - n, "%s%s",
               n ? "; " : "", "deadline passed before the least feasible budget was found");
    } else if (rc != 0) {
      goto fail;
    } else {
      res->min_feasible_budget =
          o->accounting == MP_ACCOUNTING_DEFAULT ? mp__sadd(p, g->const_bytes) : p;
    }
  }
  return 0;
fail:
  mp_dp_result_free(res);
  return rc;
}

int mp_dp_solve(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_result_t *res,
                mp_error_t *err) {
  mp_dp_session_t s;
  mp_dp_options_t def;
  double t0 = mp_lowerset_clock_ms();
  int rc;

  memset(res, 0, sizeof(*res));
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  rc = mp__session_open(&s, g, opts, t0, 0);
  if (rc == 0) rc = mp__session_solve(&s, opts->budget, t0, res);
  mp__session_close(&s);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp_dp_session_new(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_session_t **out,
                      mp_error_t *err) {
  mp_dp_session_t *s;
  mp_dp_options_t def;
  int rc;
  *out = NULL;
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  if ((s = malloc(sizeof(*s))) == NULL) return mp__fail(MP_ENOMEM, err);
  if ((rc = mp__session_open(s, g, opts, mp_lowerset_clock_ms(), 1)) != 0) {
    mp__session_close(s);
    free(s);
    return mp__fail(rc, err);
  }
  *out = s;
  return 0;
}

int mp_dp_session_solve(mp_dp_session_t *s, uint64_t budget, mp_dp_result_t *res,
                        mp_error_t *err) {
  int rc = mp__session_solve(s, budget, mp_lowerset_clock_ms(), res);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp_dp_session_staircase(mp_dp_session_t *s, uint64_t max_budget, size_t max_work,
                            mp_dp_point_t **points, size_t *n_points, mp_error_t *err) {
  uint64_t cst = s->o.accounting == MP_ACCOUNTING_DEFAULT ? s->g->const_bytes : 0;
  int rc;
  s->c.deadline_at =
      s->c.fam.exact && s->o.deadline_ms > 0 ? mp_lowerset_clock_ms() + s->o.deadline_ms : 0;
  rc = mp__staircase_points(&s->c, cst, max_budget, max_work, points, n_points);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp_dp_session_exact_used(const mp_dp_session_t *s, const char **reason) {
  if (reason) *reason = s->reason;
  return s->exact_used;
}

void mp_dp_session_free(mp_dp_session_t *s) {
  if (s == NULL) return;
  mp__session_close(s);
  free(s);
}

/* ---- The frontier ------------------------------------------------------------ */

void mp_dp_frontier_free(mp_dp_frontier_t *f) {
  if (f == NULL) return;
  free(f->points);
  memset(f, 0, sizeof(*f));
}

/* Lexicographic order of the objective: u strictly better than v. */
static int mp__better(mp_objective_t o, const mp__pair_t *u, const mp__pair_t *v) {
  if (o == MP_OBJECTIVE_TIME) {
    if (u->a != v->a) return u->a > v->a;
    return u->k < v->k;
  }
  if (u->k != v->k) return u->k < v->k;
  return u->a > v->a;
}

int mp_dp_frontier(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_frontier_t *out,
                   mp_error_t *err) {
  mp__dp_t c;
  mp_dp_options_t def;
  mp__hint_t hint;
  int rc, exact_used = 0;
  double t0 = mp_lowerset_clock_ms();
  size_t last, len, i, np = 0;
  mp__pair_t *P;
  const mp__pair_t *best = NULL;

  memset(out, 0, sizeof(*out));
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  if ((rc = mp__dp_init(&c, g, opts->accounting)) != 0) goto fail;
  c.should_stop = opts->should_stop;
  c.stop_arg = opts->stop_arg;
  c.deadline_at = opts->exact && opts->deadline_ms > 0 ? t0 + opts->deadline_ms : 0;
  c.threads = mp__opt_threads(opts);
  if ((rc = mp__load_family(&c, opts, t0, out->fallback_reason, sizeof(out->fallback_reason),
                            &exact_used)) != 0)
    goto fail;
  mp__hint_init(&hint);
  rc = mp__exec_with_fallback(&c, opts, 1, UINT64_MAX, &hint, out->fallback_reason,
                              sizeof(out->fallback_reason), &exact_used);
  if (rc != 0) goto fail;
  out->exact_used = exact_used;
  out->n_lower_sets = c.fam.n_sets;
  last = c.fam.n_sets - 1;
  len = c.front_len[last];
  P = c.arena + c.front_off[last];
  /* Sort V's pairs by peak ascending, best first among equal peaks (a merge
   * sort, since the order depends on the objective and qsort takes no
   * context), then sweep: a pair becomes a point when it beats every pair of
   * lower or equal peak. */
  {
    mp__pair_t *tmp = malloc((len ? len : 1) * sizeof(*tmp));
    size_t width;
    if (tmp == NULL) {
      rc = MP_ENOMEM;
      goto fail;
    }
    for (width = 1; width < len; width *= 2) {
      size_t lo;
      for (lo = 0; lo < len; lo += 2 * width) {
        size_t mid = lo + width < len ? lo + width : len;
        size_t hi = lo + 2 * width < len ? lo + 2 * width : len;
        size_t x = lo, y = mid, o = lo;
        while (x < mid && y < hi) {
          const mp__pair_t *u = &P[x], *v = &P[y];
          int take_u = u->p < v->p || (u->p == v->p && !mp__better(opts->objective, v, u));
          tmp[o++] = take_u ? P[x++] : P[y++];
        }
        while (x < mid) tmp[o++] = P[x++];
        while (y < hi) tmp[o++] = P[y++];
      }
      memcpy(P, tmp, len * sizeof(*P));
    }
    free(tmp);
  }
  out->points = malloc((len ? len : 1) * sizeof(*out->points));
  if (out->points == NULL) {
    rc = MP_ENOMEM;
    goto fail;
  }
  for (i = 0; i < len; i++) {
    if (best != NULL && !mp__better(opts->objective, &P[i], best)) continue;
    best = &P[i];
    out->points[np].budget = opts->accounting == MP_ACCOUNTING_DEFAULT
                                 ? mp__sadd(P[i].p, g->const_bytes)
                                 : P[i].p;
    out->points[np].recompute_time = g->fwd_time - P[i].a;
    if (out->points[np].recompute_time < 0) out->points[np].recompute_time = 0;
    out->points[np].kept_bytes = P[i].k;
    /* equal budgets cannot repeat: the first pair at a peak is the best */
    np++;
  }
  out->n_points = np;
  mp__dp_free(&c);
  return 0;
fail:
  mp__dp_free(&c);
  mp_dp_frontier_free(out);
  return mp__fail(rc, err);
}

long mp_dp_frontier_lookup(const mp_dp_frontier_t *f, uint64_t budget) {
  size_t lo = 0, hi = f->n_points;
  while (lo < hi) { /* first point with budget > given */
    size_t mid = (lo + hi) / 2;
    if (f->points[mid].budget <= budget) lo = mid + 1;
    else hi = mid;
  }
  return (long)lo - 1;
}
