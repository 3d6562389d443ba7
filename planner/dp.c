/* dp.c - the exact and approximate lower-set DPs (ALGORITHMS.md sections 3-5),
 * both objectives, both accountings, and the memory/time frontier.
 *
 * States are the lower sets of a family (lowerset.h), in size order. Each
 * state holds a Pareto set of pairs (retained time a, kept memory k), plus
 * the path's model peak p and a back-pointer. The sets are processed in
 * index order; for each L_j every proper subset L_i in the family is
 * "pulled": each pair of L_i whose step to L_j fits the budget gives a
 * candidate (a + t(W), k + m(W)). Pulling (rather than pushing from L_i)
 * lets one state's candidates be reduced as they arrive, and lets the exact
 * family walk its subsets down the Hasse diagram with pruning: the step cost
 * 2*(m(L_j) - m(L_i)) + back(L_j) only grows as L_i shrinks, so once it
 * exceeds the budget no smaller subset on that branch can fit either.
 *
 * Three passes share that loop:
 *  - bounded: Pareto on (max a, min k) with steps limited by the budget. At V
 *    the time objective takes the largest a (then least k), the memory
 *    objective the least k (then largest a).
 *  - min-peak: no budget, Pareto on (min p, min k): the least budget at which
 *    any plan exists, reported for infeasible budgets.
 *  - frontier: no budget, Pareto on (max a, min k, min p). Dominance in all
 *    three is sound: a continuation's steps cost k + (something independent
 *    of the pair), so a pair with more a, less k and a lower peak so far does
 *    at least as well on every continuation under every budget. Hence the set
 *    at V, filtered by p <= budget, holds the bounded pass's answer for every
 *    budget, and sorting it by p gives the staircase (least budget, best
 *    answer) in one pass.
 *
 * Accounting details are in dp.h. Internally `a` is always "forward time not
 * charged": in the default accounting the last step into V adds the time of
 * the whole last segment, so recompute = fwd_time - a in both accountings.
 */
#include "dp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowerset.h"

/* ---- Saturating arithmetic ---------------------------------------------- */

static inline uint64_t mp__sadd(uint64_t x, uint64_t y) {
  return x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

static inline uint64_t mp__sdbl(uint64_t x) { return x > UINT64_MAX / 2 ? UINT64_MAX : 2 * x; }

/* ---- State -------------------------------------------------------------- */

/* MINKEPT keeps one pair per state, the least kept memory: that alone
 * decides which continuations fit a budget, so it is the feasibility test. */
typedef enum { MP__BOUNDED = 0, MP__MINPEAK = 1, MP__FRONTIER = 2, MP__MINKEPT = 3 } mp__mode_t;


typedef struct {
  double a;           /* forward time not charged so far */
  uint64_t k;         /* kept bytes (sum of m(W)) */
  uint64_t p;         /* largest step peak along the path (activation terms) */
  uint32_t from_set;  /* previous lower set, UINT32_MAX at the start */
  uint32_t from_pair; /* index of the previous pair in the arena */
} mp__pair_t;

/* One step L_i -> L_j of a walk (j fixed): its cost (peak minus kept), kept
 * memory mw, time not charged tw, and charged time ch = t(L_j \ L_i) - tw. */
typedef struct {
  uint32_t i;
  uint64_t cost, mw;
  double tw, ch;
} mp__vis_t;

typedef struct {
  const mp_graph_t *g;
  mp_accounting_t acc;
  mp_actdag_t dag;
  mp_lowerset_family_t fam;
  int have_fam;

  /* per activation (compact index) */
  uint64_t *nm;
  double *nt;
  uint8_t *nofree; /* recompute:false, default accounting only */

  /* per set */
  uint64_t *m, *back, *mr;
  uint64_t *gsrc;  /* default accounting: m of the nodes of L with a successor outside L */
  uint64_t max_ws; /* default accounting: the largest workspace of any activation */
  double *t, *tr;
  uint32_t *fb_off, *fb; /* F'(L): boundary nodes that are not recompute:false */
  uint32_t *approx_top;  /* approx: the node whose closure set i is, or UINT32_MAX */
  double *ht;            /* lower bounds on what remains (mp__reverse) */
  uint64_t *hk, *hp;

  /* the DP */
  mp__pair_t *arena;
  size_t n_arena, cap_arena;
  size_t *front_off;
  uint32_t *front_len;

  /* scratch */
  uint32_t *stamp;       /* per set: seen by the current walk */
  uint32_t *fmark;       /* per node: in the boundary of the current walk's L_j */
  mp__vis_t *vis;        /* the current walk's steps, one per set at most */
  mp__pair_t *cand;
  size_t n_cand, cap_cand;
  mp__pair_t *stair3; /* frontier sweep */
  size_t cap_stair3;

  /* stopping */
  double deadline_at; /* 0: none */
  int (*should_stop)(void *);
  void *stop_arg;
  size_t work;
  double tol; /* slack for comparing sums of times */
} mp__dp_t;

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
  free(c->stamp);
  free(c->fmark);
  free(c->vis);
  free(c->ht);
  free(c->hk);
  free(c->hp);
  c->m = c->back = c->mr = c->gsrc = NULL;
  c->t = c->tr = NULL;
  c->fb_off = c->fb = c->approx_top = NULL;
  c->arena = NULL;
  c->n_arena = c->cap_arena = 0;
  c->front_off = NULL;
  c->front_len = NULL;
  c->stamp = c->fmark = NULL;
  c->vis = NULL;
  c->ht = NULL;
  c->hk = c->hp = NULL;
}

static void mp__dp_free(mp__dp_t *c) {
  mp__dp_free_family(c);
  mp_actdag_free(&c->dag);
  free(c->nm);
  free(c->nt);
  free(c->nofree);
  free(c->cand);
  free(c->stair3);
}

static int mp__dp_init(mp__dp_t *c, const mp_graph_t *g, mp_accounting_t acc) {
  size_t v;
  int rc;
  memset(c, 0, sizeof(*c));
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
  c->stamp = calloc(ns, sizeof(uint32_t));
  c->vis = malloc(ns * sizeof(mp__vis_t));
  c->fmark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  c->ht = malloc(ns * sizeof(double));
  c->hk = malloc(ns * sizeof(uint64_t));
  c->hp = malloc(ns * sizeof(uint64_t));
  mark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  list = malloc((d->n ? d->n : 1) * sizeof(uint32_t));
  if (!c->m || !c->back || !c->gsrc || !c->mr || !c->t || !c->tr || !c->fb_off || !c->fb ||
      !c->front_off || !c->front_len || !c->stamp || !c->vis || !c->fmark || !c->ht || !c->hk || !c->hp || !mark || !list)
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
  rc = 0;
out:
  free(mark);
  free(list);
  return rc;
}

/* ---- Pareto sets ---------------------------------------------------------- */

/* Bounded and min-peak passes keep the state being built as a staircase
 * sorted by k ascending in which the other coordinate strictly improves:
 * a strictly increasing (bounded) or p strictly decreasing (min-peak). A
 * candidate is dominated iff the last element with k' <= k is at least as
 * good in that coordinate. */

/* x-order: positive when u is strictly better than v in the mode's second
 * coordinate, 0 when equal. */
static inline int mp__xcmp(mp__mode_t mode, const mp__pair_t *u, const mp__pair_t *v) {
  if (mode == MP__MINKEPT) return 0;
  if (mode == MP__BOUNDED) return u->a > v->a ? 1 : (u->a < v->a ? -1 : 0);
  return u->p < v->p ? 1 : (u->p > v->p ? -1 : 0);
}

/* Among exact ties (same k and x), prefer the lower peak (bounded) or the
 * larger retained time (min-peak). */
static inline int mp__tie_better(mp__mode_t mode, const mp__pair_t *u, const mp__pair_t *v) {
  if (mode == MP__BOUNDED) return u->p < v->p;
  if (mode == MP__MINKEPT) return u->a > v->a;
  return u->a > v->a;
}

static int mp__cand_reserve(mp__dp_t *c, size_t extra) {
  if (c->n_cand + extra > c->cap_cand) {
    size_t ncap = c->cap_cand ? c->cap_cand : 64;
    mp__pair_t *nc;
    while (ncap < c->n_cand + extra) ncap *= 2;
    nc = realloc(c->cand, ncap * sizeof(*nc));
    if (nc == NULL) return MP_ENOMEM;
    c->cand = nc;
    c->cap_cand = ncap;
  }
  return 0;
}

static int mp__stair_insert(mp__dp_t *c, mp__mode_t mode, const mp__pair_t *q) {
  mp__pair_t *s = c->cand;
  size_t n = c->n_cand, lo = 0, hi = n, start, end;
  /* pos = first element with k > q->k */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s[mid].k <= q->k) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0) {
    const mp__pair_t *pr = &s[lo - 1];
    int x = mp__xcmp(mode, pr, q);
    if (x > 0) return 0;
    if (x == 0) {
      if (pr->k == q->k && mp__tie_better(mode, q, pr)) s[lo - 1] = *q;
      return 0;
    }
  }
  /* q is not dominated: drop what it dominates (same k just before it, and
   * the following elements that are not strictly better), then insert. */
  start = (lo > 0 && s[lo - 1].k == q->k) ? lo - 1 : lo;
  end = lo;
  while (end < n && mp__xcmp(mode, &s[end], q) <= 0) end++;
  if (end - start == 0) {
    if (mp__cand_reserve(c, 1) != 0) return MP_ENOMEM;
    s = c->cand;
    memmove(s + start + 1, s + start, (n - start) * sizeof(*s));
    c->n_cand = n + 1;
  } else if (end - start > 1) {
    memmove(s + start + 1, s + end, (n - end) * sizeof(*s));
    c->n_cand = n - (end - start) + 1;
  }
  s[start] = *q;
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
  if (c->cap_stair3 < c->n_cand) {
    mp__pair_t *n = realloc(c->stair3, c->n_cand * sizeof(*n));
    if (n == NULL) return MP_ENOMEM;
    c->stair3 = n;
    c->cap_stair3 = c->n_cand;
  }
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

static int mp__poll(mp__dp_t *c) {
  if (c->should_stop && c->should_stop(c->stop_arg)) return MP_ECANCELED;
  if (c->deadline_at > 0 && mp_lowerset_clock_ms() > c->deadline_at) return MP_ETIMEDOUT;
  return 0;
}

/* The step's peak minus the kept memory.
 *
 * Reference accounting: 2 * (m(L_j) - m(L_i)) + back(L_j), the paper's model.
 *
 * Default accounting: 2 * (m(L_j) - m(L_i)) + g(L_i) + the largest
 * workspace, where g(L) is the bytes of the nodes of L with a successor
 * outside L. This bounds what memplan's simulator sees while the schedule
 * (schedule.c) runs segment V = L_j \ L_i: besides the kept values of
 * earlier segments (the pair's k), at most the values and the gradients of V
 * (2 m(V)), and the gradients of earlier nodes that later backward steps have
 * already created, which are nodes of L_i with a successor outside L_i. Every
 * value and gradient of a later segment was freed by its own backward step,
 * so back(L_j), which counts nodes outside L_j, is not what the real
 * schedule holds: three chains joined at one sink showed the paper's term
 * missing the sink's input gradients. Like back(L_j), the cost only grows as
 * L_i shrinks (g(L_i') <= g(L_i) + m(L_i' \ L_i) for L_i subset of L_i'),
 * which the walks' pruning relies on. */
static inline uint64_t mp__step_cost(const mp__dp_t *c, size_t i, size_t j) {
  if (c->acc == MP_ACCOUNTING_DEFAULT)
    return mp__sadd(mp__sadd(mp__sdbl(c->m[j] - c->m[i]), c->gsrc[i]), c->max_ws);
  return mp__sadd(mp__sdbl(c->m[j] - c->m[i]), c->back[j]);
}

/* What a step L_i -> L_j keeps: m(W) (plus recompute:false nodes) and the
 * time it does not charge, from scratch (the approx family's walk). */
static inline void mp__step_gain(const mp__dp_t *c, size_t i, size_t j, uint64_t *mw,
                                 double *tw) {
  size_t last = c->fam.n_sets - 1;
  if (j == last) {
    /* Into V: nothing has a successor outside, W is empty; the default
     * accounting does not charge the last segment. */
    *mw = 0;
    *tw = c->acc == MP_ACCOUNTING_DEFAULT ? c->t[last] - c->t[i] : 0;
  } else {
    const uint64_t *bi = c->fam.bits + i * c->fam.words;
    uint64_t m = c->mr[j] - c->mr[i];
    double t = c->tr[j] - c->tr[i];
    uint32_t e;
    for (e = c->fb_off[j]; e < c->fb_off[j + 1]; e++) {
      uint32_t v = c->fb[e];
      if ((bi[v >> 6] >> (v & 63)) & 1u) continue;
      m += c->nm[v];
      t += c->nt[v];
    }
    *mw = m;
    *tw = t;
  }
}

/* Limits of one walk (the steps L_i -> L_j for a fixed j). A step is not
 * taken, and the subsets of its L_i are not walked, when its cost exceeds
 * `budget`, its charged time ch = t(L_j \ L_i) - tw exceeds `chlim`, or its
 * kept memory mw exceeds `mwlim`. That cut is sound for the subsets because
 * all three only grow as L_i shrinks: the segment L_j \ L_i grows, each node
 * added to it is either kept (mw and tw grow) or charged (ch grows), and
 * m(L_i) falls. The least value that was cut is reported, so that a caller
 * iterating on a bound knows the next bound worth trying. */
typedef struct {
  uint64_t budget;
  double chlim;      /* HUGE_VAL: none */
  uint64_t mwlim;    /* UINT64_MAX: none */
  double cut_ch;     /* out: least ch cut (HUGE_VAL: none) */
  uint64_t cut_mw;   /* out: least mw cut (UINT64_MAX: none) */
  uint64_t cut_cost; /* out: least cost above budget (UINT64_MAX: none) */
} mp__wlim_t;

static inline void mp__wlim_init(mp__wlim_t *wl, uint64_t budget, double chlim, uint64_t mwlim) {
  wl->budget = budget;
  wl->chlim = chlim;
  wl->mwlim = mwlim;
  wl->cut_ch = HUGE_VAL;
  wl->cut_mw = UINT64_MAX;
  wl->cut_cost = UINT64_MAX;
}

/* Append the step i -> j with the given gains to the visit list, unless a
 * limit cuts it. Returns 1 when appended. */
static inline int mp__walk_keep(mp__dp_t *c, mp__wlim_t *wl, size_t *nv, uint32_t i,
                                uint64_t cost, uint64_t mw, double tw, double ch) {
  mp__vis_t *x;
  if (cost > wl->budget) {
    if (cost < wl->cut_cost) wl->cut_cost = cost;
    return 0;
  }
  if (ch > wl->chlim) {
    if (ch < wl->cut_ch) wl->cut_ch = ch;
    return 0;
  }
  if (mw > wl->mwlim) {
    if (mw < wl->cut_mw) wl->cut_mw = mw;
    return 0;
  }
  x = &c->vis[(*nv)++];
  x->i = i;
  x->cost = cost;
  x->mw = mw;
  x->tw = tw;
  x->ch = ch;
  return 1;
}

/* The steps into L_j that pass the limits, in c->vis[0 .. *nv).
 *
 * Exact family: breadth first down the cover relation from L_j (the same
 * order as a plain walk), each subset once. Going from L_x to L_x \ {v}
 * adds v to the segment, so the gains are updated in O(1) from the parent's
 * instead of being recomputed over the boundary: v is kept when it has a
 * successor outside L_j or is recompute:false (default accounting), except
 * into V where nothing is kept and, in the default accounting, nothing is
 * charged.
 *
 * Approx family: the subsets are {} and the closures of the nodes of L_j
 * (closure(u) is inside L_j iff u is); there is no cover relation to walk, so
 * each step's gains are computed over the boundary of L_j. */
static void mp__walk(mp__dp_t *c, size_t j, mp__wlim_t *wl, size_t *nv_out) {
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
    root.cost = 0;
    root.mw = 0;
    root.tw = 0;
    root.ch = 0;
    /* h == SIZE_MAX stands for the root (L_j itself, never a step). */
    for (h = SIZE_MAX; h == SIZE_MAX || h < nv; h++) {
      const mp__vis_t *par = h == SIZE_MAX ? &root : &c->vis[h];
      uint32_t pi = par->i;
      uint64_t pmw = par->mw;
      double ptw = par->tw, pch = par->ch;
      for (e = f->down_off[pi]; e < f->down_off[pi + 1]; e++) {
        uint32_t s = f->down[e], v = f->down_node[e];
        uint64_t mw = pmw;
        double tw = ptw, ch = pch;
        if (c->stamp[s] == mark) continue;
        c->stamp[s] = mark;
        if (into_v) {
          if (dflt) tw += c->nt[v];
          else ch += c->nt[v];
        } else if (c->fmark[v] == mark || c->nofree[v]) {
          mw = mp__sadd(mw, c->nm[v]);
          tw += c->nt[v];
        } else {
          ch += c->nt[v];
        }
        c->work++;
        /* par may move? no: vis is preallocated (one entry per set) */
        mp__walk_keep(c, wl, &nv, s, mp__step_cost(c, s, j), mw, tw, ch);
      }
    }
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
        if (cost > wl->budget) {
          if (cost < wl->cut_cost) wl->cut_cost = cost;
          continue;
        }
        mp__step_gain(c, i, j, &mw, &tw);
        mp__walk_keep(c, wl, &nv, i, cost, mw, tw, (c->t[j] - c->t[i]) - tw);
      }
    }
  }
  *nv_out = nv;
}

/* ---- Lower bounds on what remains (reverse passes) ------------------------ */

/* Relaxing the model by forgetting the kept memory (every step only needs
 * cost <= budget instead of kept + cost <= budget) gives, for every lower
 * set L, bounds on any plan's continuation from L to V at that budget:
 *   ht(L): the least charged time (t(segment) - tw summed over the steps);
 *   hk(L): the least kept memory added (mw summed);
 *   hp(L): the least, over paths, of the largest step cost (a bottleneck
 *          path; the real peak of each later step is kept + cost >= kept at
 *          L + cost, so a pair (p, k) at L ends with a peak of at least
 *          max(p, k + hp(L))).
 * Every real continuation is a relaxed one, so these are lower bounds, and
 * they are exact shortest / bottleneck paths in the DAG of lower sets, which
 * one pass in decreasing index order computes (a superset has a larger
 * index, so h(L_j) is final when the steps into L_j are walked).
 *
 * `cap`: values above it are of no use to the caller (its cut is at most
 * cap), so steps that would only produce larger values are not walked. Such
 * an h(L) comes out larger than its true value but still above cap, which is
 * all the caller needs; every h(L) <= cap is exact, because the walk reaches
 * L through supersets whose step values are no larger (they only grow as the
 * subset shrinks). */
typedef enum { MP__H_TIME = 0, MP__H_KEPT = 1, MP__H_PEAK = 2 } mp__hkind_t;

static int mp__reverse(mp__dp_t *c, mp__hkind_t kind, uint64_t budget, double cap_t,
                       uint64_t cap_u, double *ht) {
  size_t ns = c->fam.n_sets, last = ns - 1, j, nv, q;
  mp__wlim_t wl;
  int rc;
  if (kind == MP__H_TIME) {
    for (j = 0; j < ns; j++) ht[j] = HUGE_VAL;
    ht[last] = 0;
  } else {
    uint64_t *h = kind == MP__H_KEPT ? c->hk : c->hp;
    for (j = 0; j < ns; j++) h[j] = UINT64_MAX;
    h[last] = 0;
  }
  memset(c->stamp, 0, ns * sizeof(uint32_t));
  c->work = 0;
  if ((rc = mp__poll(c)) != 0) return rc;
  for (j = last; j >= 1; j--) {
    if (c->work > (1u << 18)) {
      c->work = 0;
      if ((rc = mp__poll(c)) != 0) return rc;
    }
    if (kind == MP__H_TIME) {
      double hj = ht[j];
      if (hj > cap_t) continue;
      mp__wlim_init(&wl, budget, cap_t - hj, UINT64_MAX);
      mp__walk(c, j, &wl, &nv);
      for (q = 0; q < nv; q++) {
        double v = c->vis[q].ch + hj;
        if (v < ht[c->vis[q].i]) ht[c->vis[q].i] = v;
      }
    } else if (kind == MP__H_KEPT) {
      uint64_t hj = c->hk[j];
      if (hj > cap_u) continue;
      mp__wlim_init(&wl, budget, HUGE_VAL, cap_u - hj);
      mp__walk(c, j, &wl, &nv);
      for (q = 0; q < nv; q++) {
        uint64_t v = c->vis[q].mw + hj; /* <= cap_u: no overflow */
        if (v < c->hk[c->vis[q].i]) c->hk[c->vis[q].i] = v;
      }
    } else {
      uint64_t hj = c->hp[j], b = budget < cap_u ? budget : cap_u;
      if (hj > b) continue;
      mp__wlim_init(&wl, b, HUGE_VAL, UINT64_MAX);
      mp__walk(c, j, &wl, &nv);
      for (q = 0; q < nv; q++) {
        uint64_t v = c->vis[q].cost > hj ? c->vis[q].cost : hj;
        if (v < c->hp[c->vis[q].i]) c->hp[c->vis[q].i] = v;
      }
    }
  }
  return 0;
}

/* ---- The forward pass ------------------------------------------------------ */

/* Limits of one forward pass. Every step's model peak (kept + cost) is at most
 * `budget`. Branch-and-bound cuts, all sound by the lower bounds above (a pair
 * whose bound exceeds the cut cannot be on a path whose value is within it):
 *  - rt (time objective, ht computed): drop a pair when its charged time so
 *    far t(L) - a plus ht(L) exceeds rt;
 *  - rk (memory objective, hk computed): drop it when k + hk(L) > rk;
 *  - use_hp (hp computed for this budget): drop it when k + hp(L) > budget,
 *    no continuation fits.
 * A pair on a path whose final value is within the cut has every prefix
 * within it (the bound at L is at most what the rest of that path adds), and
 * a pair that dominates it in (a, k) has a bound no larger, so the Pareto set
 * of each state is exactly the uncut one restricted to the pairs within the
 * cut: the answer, its ties and its peak are those of the uncut DP.
 * `pruned` says whether a cut dropped anything (as opposed to the budget) and
 * next_* the least bound that was cut: the next cut worth trying. */
typedef struct {
  uint64_t budget;
  double rt;
  uint64_t rk;
  int use_hp;
  int pruned;
  double next_t;
  uint64_t next_k, next_p;
} mp__bound_t;

static void mp__bound_init(mp__bound_t *bd, uint64_t budget) {
  bd->budget = budget;
  bd->rt = HUGE_VAL;
  bd->rk = UINT64_MAX;
  bd->use_hp = 0;
  bd->pruned = 0;
  bd->next_t = HUGE_VAL;
  bd->next_k = UINT64_MAX;
  bd->next_p = UINT64_MAX;
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
  if (bd->rk != UINT64_MAX) {
    /* mw + hk(j) <= rk: the walk cut the rest */
    uint64_t l2 = bd->rk - mw - c->hk[j];
    if (l2 < lim) lim = l2;
  }
  if (bd->use_hp) {
    /* mw + hp(j) <= budget: the walk cut the rest */
    uint64_t l2 = bd->budget - mw - c->hp[j];
    if (l2 < lim) lim = l2;
  }
  q1 = P[0].k > lim ? 0 : mp__first_k_above(P, 0, len, lim);
  if (q1 < len && P[q1].k <= blim) {
    /* pairs cut by rk or hp, not by the budget: the least bound cut is the
     * first one's (k only grows along P) */
    bd->pruned = 1;
    if (bd->rk != UINT64_MAX) {
      uint64_t v = mp__sadd(mp__sadd(P[q1].k, mw), c->hk[j]);
      if (v < bd->next_k) bd->next_k = v;
    }
    if (mode == MP__MINPEAK) {
      uint64_t v = mp__sadd(mp__sadd(P[q1].k, mw), c->hp[j]);
      if (v < bd->next_p) bd->next_p = v;
    }
  }
  if (mode == MP__MINPEAK && q1 < len && P[q1].k > blim) {
    /* cut by the peak bound itself: its step would peak at k + cost */
    uint64_t v = mp__sadd(P[q1].k, cost);
    if (v < bd->next_p) bd->next_p = v;
  }
  if (bd->rt != HUGE_VAL && mode == MP__BOUNDED && q1 > 0) {
    /* the charged time t(L_j) - a - tw + ht(j) falls as a rises along P
     * (a strictly increasing in the bounded staircase) */
    double amin = c->t[j] + c->ht[j] - tw - bd->rt - c->tol;
    size_t lo = 0, hi = q1;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (P[mid].a < amin) lo = mid + 1;
      else hi = mid;
    }
    q0 = lo;
    if (q0 > 0) {
      double v = c->t[j] - (P[q0 - 1].a + tw) + c->ht[j];
      bd->pruned = 1;
      if (v < bd->next_t) bd->next_t = v;
    }
  }
  if (q0 >= q1) return 0;
  c->work += q1 - q0;
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
    } else if ((rc = mp__stair_insert(c, mode, &n)) != 0) {
      return rc;
    }
  }
  return 0;
}

static int mp__append_front(mp__dp_t *c, size_t j) {
  size_t n = c->n_cand;
  if (c->n_arena + n > UINT32_MAX) return MP_ELIMIT;
  if (c->n_arena + n > c->cap_arena) {
    size_t ncap = c->cap_arena ? c->cap_arena : 1024;
    mp__pair_t *na;
    while (ncap < c->n_arena + n) ncap *= 2;
    na = realloc(c->arena, ncap * sizeof(*na));
    if (na == NULL) return MP_ENOMEM;
    c->arena = na;
    c->cap_arena = ncap;
  }
  memcpy(c->arena + c->n_arena, c->cand, n * sizeof(*c->cand));
  c->front_off[j] = c->n_arena;
  c->front_len[j] = (uint32_t)n;
  c->n_arena += n;
  return 0;
}

static int mp__run(mp__dp_t *c, mp__mode_t mode, mp__bound_t *bd) {
  size_t ns = c->fam.n_sets, j, nv, q;
  int rc;
  bd->pruned = 0;
  bd->next_t = HUGE_VAL;
  bd->next_k = bd->next_p = UINT64_MAX;
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
  memset(c->stamp, 0, ns * sizeof(uint32_t));
  c->work = 0;
  if ((rc = mp__poll(c)) != 0) return rc;
  for (j = 1; j < ns; j++) {
    mp__wlim_t wl;
    double chlim = HUGE_VAL;
    uint64_t mwlim = UINT64_MAX;
    int skip = 0;
    c->n_cand = 0;
    if (c->work > (1u << 18)) {
      c->work = 0;
      if ((rc = mp__poll(c)) != 0) return rc;
    }
    /* The cuts bound the steps too: a step's own ch, mw or cost is a lower
     * bound on what any pair adds with it (charged time, kept memory, peak
     * are all >= 0 before the step). A state whose bound alone exceeds a cut
     * gets no pair at all. */
    if (bd->rt != HUGE_VAL) {
      if (c->ht[j] > bd->rt + c->tol) {
        skip = 1;
        if (c->ht[j] != HUGE_VAL) {
          bd->pruned = 1;
          if (c->ht[j] < bd->next_t) bd->next_t = c->ht[j];
        }
      } else {
        chlim = bd->rt + c->tol - c->ht[j];
      }
    }
    if (bd->rk != UINT64_MAX) {
      if (c->hk[j] > bd->rk) {
        skip = 1;
        if (c->hk[j] != UINT64_MAX) {
          bd->pruned = 1;
          if (c->hk[j] < bd->next_k) bd->next_k = c->hk[j];
        }
      } else {
        mwlim = bd->rk - c->hk[j];
      }
    }
    if (bd->use_hp) {
      if (c->hp[j] > bd->budget) {
        skip = 1;
        if (c->hp[j] != UINT64_MAX) {
          bd->pruned = 1;
          if (c->hp[j] < bd->next_p) bd->next_p = c->hp[j];
        }
      } else if (bd->budget - c->hp[j] < mwlim) {
        mwlim = bd->budget - c->hp[j];
      }
    }
    if (!skip) {
      mp__wlim_init(&wl, bd->budget, chlim, mwlim);
      mp__walk(c, j, &wl, &nv);
      if (wl.cut_ch != HUGE_VAL) {
        bd->pruned = 1;
        if (wl.cut_ch + c->ht[j] < bd->next_t) bd->next_t = wl.cut_ch + c->ht[j];
      }
      if (wl.cut_mw != UINT64_MAX) {
        bd->pruned = 1;
        if (bd->rk != UINT64_MAX) {
          uint64_t v = mp__sadd(wl.cut_mw, c->hk[j]);
          if (v < bd->next_k) bd->next_k = v;
        }
        if (bd->use_hp) {
          uint64_t v = mp__sadd(wl.cut_mw, c->hp[j]);
          if (v < bd->next_p) bd->next_p = v;
        }
      }
      if (wl.cut_cost < bd->next_p) bd->next_p = wl.cut_cost;
      for (q = 0; q < nv; q++)
        if ((rc = mp__relax(c, mode, bd, j, &c->vis[q])) != 0) return rc;
    }
    if (mode == MP__FRONTIER && (rc = mp__reduce3(c)) != 0) return rc;
    if ((rc = mp__append_front(c, j)) != 0) return rc;
  }
  return 0;
}

/* ---- Solving at one budget ------------------------------------------------- */

/* What the approx family found at the same budget and objective, used by the
 * exact DP as upper bounds: the approx family is a subfamily, so its plan is
 * a plan of the exact family too (exact is never worse), and its least
 * feasible budget is at least the exact one. */
typedef struct {
  int known;
  int feasible;
  double charged;      /* t(V) - a of its answer */
  uint64_t kept;       /* k of its answer */
  uint64_t min_peak;   /* when infeasible: its least feasible activation budget */
} mp__hint_t;

/* Next value of an iterated cut: at least the least value that was cut
 * (nothing between the two can change the outcome) and at least a fixed
 * fraction more, so that the number of passes stays logarithmic; never past
 * the cap (a value known to succeed). */
static double mp__next_rt(double r, double cut, double cap) {
  double g = r + r / 2;
  double n = cut > g ? cut : g;
  return n > cap ? cap : n;
}

static uint64_t mp__next_u(uint64_t r, uint64_t cut, uint64_t cap) {
  uint64_t g = mp__sadd(r, r / 2 + 1);
  uint64_t n = cut > g ? cut : g;
  return n > cap ? cap : n;
}

/* The bounded solve: afterwards front_len[last] > 0 iff a plan exists, and
 * V's staircase holds the answer (see mp_dp_solve).
 *
 * Time objective: R starts at ht({}), a lower bound on the answer's charged
 * time, and each pass drops the pairs whose bound exceeds R. When V is
 * reached, R is at least the optimum, so the answer is the uncut DP's (see
 * mp__bound_t); otherwise R grows to the least cut bound (or by an eighth).
 * An upper bound from the approx family caps R: a pass at the cap succeeds.
 * Without a hint, a first one-pair-per-state pass (the least kept memory at
 * each state decides which continuations fit) tells whether any plan exists.
 * The memory objective always takes that pass: its least kept memory at V
 * is the answer's, and one pass cut there with hk gives the ties. */
static int mp__solve_bounded(mp__dp_t *c, mp_objective_t obj, uint64_t budget,
                             const mp__hint_t *hint) {
  size_t last = c->fam.n_sets - 1;
  mp__bound_t bd;
  int rc, feasible = hint->known && hint->feasible;
  double cap_plan = feasible ? hint->charged : HUGE_VAL;
  if (!feasible || obj == MP_OBJECTIVE_MEMORY) {
    mp__bound_init(&bd, budget);
    if (!feasible) {
      /* hp first: a cheap certificate of infeasibility, and a cut for the
       * feasibility pass at tight budgets. */
      if ((rc = mp__reverse(c, MP__H_PEAK, budget, HUGE_VAL, budget, NULL)) != 0) return rc;
      if (c->hp[0] > budget) {
        c->front_len[last] = 0;
        return 0;
      }
      bd.use_hp = 1;
    }
    if ((rc = mp__run(c, MP__MINKEPT, &bd)) != 0) return rc;
    if (c->front_len[last] == 0) return 0;
    /* Its pair at V is a plan: its charged time caps the time loop below. */
    cap_plan = c->t[last] - c->arena[c->front_off[last]].a;
    if (obj == MP_OBJECTIVE_MEMORY) {
      /* The least kept memory at V is the answer's (an iteration on hk
       * alone is slower: the relaxed bound is weak when the budget binds).
       * One pass cut there gives its ties. */
      uint64_t kstar = c->arena[c->front_off[last]].k;
      if ((rc = mp__reverse(c, MP__H_KEPT, budget, HUGE_VAL, kstar, NULL)) != 0) return rc;
      mp__bound_init(&bd, budget);
      bd.rk = kstar;
      return mp__run(c, MP__BOUNDED, &bd);
    }
  }
  {
    double cap = cap_plan + c->tol, r;
    if ((rc = mp__reverse(c, MP__H_TIME, budget, cap, UINT64_MAX, c->ht)) != 0) return rc;
    r = c->ht[0];
    for (;;) {
      mp__bound_init(&bd, budget);
      bd.rt = r;
      if ((rc = mp__run(c, MP__BOUNDED, &bd)) != 0) return rc;
      if (c->front_len[last] > 0 || !bd.pruned || r == HUGE_VAL) return 0;
      r = r >= cap ? HUGE_VAL : mp__next_rt(r, bd.next_t, cap);
    }
  }
}

/* The least peak over all plans, known to exceed `known_infeasible`: the
 * min-peak pass (Pareto on least peak, least kept) with every step's peak
 * bounded by P and the pairs cut by hp (a pair (p, k) at L ends above
 * max(p, k + hp(L))). P starts at the largest lower bound at hand and grows
 * to the least cut bound (or by an eighth), capped by a budget known to
 * have a plan: the approx family's least budget, or the single step {} -> V
 * at 2 m(V). When V is reached the last pair's peak is the least: every
 * path whose peak is at most P survives the cuts. */
static int mp__solve_minpeak(mp__dp_t *c, uint64_t known_infeasible, const mp__hint_t *hint,
                             uint64_t *peak) {
  size_t last = c->fam.n_sets - 1, v;
  uint64_t p = known_infeasible, big = 0, cap = mp__sdbl(c->m[last]);
  mp__bound_t bd;
  int rc;
  if (hint->known && !hint->feasible && hint->min_peak < cap) cap = hint->min_peak;
  if ((rc = mp__reverse(c, MP__H_PEAK, UINT64_MAX, HUGE_VAL, cap, NULL)) != 0) return rc;
  for (v = 0; v < c->dag.n; v++)
    if (c->nm[v] > big) big = c->nm[v];
  big = mp__sdbl(big); /* the segment holding the largest node holds it twice */
  if (p < UINT64_MAX) p++;
  if (p < big) p = big;
  if (p < c->hp[0]) p = c->hp[0];
  if (p == 0) p = 1;
  if (p > cap) p = cap;
  for (;;) {
    mp__bound_init(&bd, p);
    bd.use_hp = 1;
    if ((rc = mp__run(c, MP__MINPEAK, &bd)) != 0) return rc;
    if (c->front_len[last] > 0) {
      /* p strictly decreases along k: the last pair has the least peak */
      *peak = c->arena[c->front_off[last] + c->front_len[last] - 1].p;
      return 0;
    }
    if (p == UINT64_MAX) return MP_EINVAL; /* unreachable: {} -> V always fits */
    p = p >= cap ? UINT64_MAX : mp__next_u(p, bd.next_p, cap);
  }
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
  mp__hint_t none;
  memset(&none, 0, sizeof(none));
  if (!frontier) return mp__solve_bounded(c, obj, budget, c->fam.exact ? hint : &none);
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
    rc = mp__exec(c, frontier, o->objective, budget, hint);
  }
  return rc;
}

/* The approx family's answer at the same budget and objective (its least
 * feasible budget when it has no plan), as bounds for the exact DP. It costs
 * a few percent of an exact solve and caps both the branch-and-bound loop
 * and the reverse passes. `bact` is the activation budget, `below_const`
 * says the budget does not even cover the constant memory. */
static int mp__approx_hint(const mp_graph_t *g, const mp_dp_options_t *o, uint64_t bact,
                           int below_const, mp__hint_t *h) {
  mp__dp_t a;
  mp__hint_t none;
  size_t last;
  int rc;
  memset(h, 0, sizeof(*h));
  memset(&none, 0, sizeof(none));
  if ((rc = mp__dp_init(&a, g, o->accounting)) != 0) goto out;
  a.should_stop = o->should_stop;
  a.stop_arg = o->stop_arg;
  if ((rc = mp_lowerset_approx(&a.dag, &a.fam)) != 0) goto out;
  a.have_fam = 1;
  if ((rc = mp__dp_prepare(&a)) != 0) goto out;
  last = a.fam.n_sets - 1;
  if (!below_const) {
    if ((rc = mp__solve_bounded(&a, o->objective, bact, &none)) != 0) goto out;
    if (a.front_len[last] > 0) {
      const mp__pair_t *P = a.arena + a.front_off[last];
      size_t pick = o->objective == MP_OBJECTIVE_TIME ? a.front_len[last] - 1 : 0;
      h->known = 1;
      h->feasible = 1;
      h->charged = a.t[last] - P[pick].a;
      h->kept = P[pick].k;
      goto out;
    }
  }
  if ((rc = mp__solve_minpeak(&a, below_const ? 0 : bact, &none, &h->min_peak)) != 0) goto out;
  h->known = 1;
  h->feasible = 0;
out:
  mp__dp_free(&a);
  return rc;
}

static int mp__check_options(const mp_dp_options_t *o, mp_error_t *err) {
  if ((unsigned)o->objective > MP_OBJECTIVE_MEMORY)
    return mp_error_set(err, MP_EINVAL, "$.objective", "unknown objective");
  if ((unsigned)o->accounting > MP_ACCOUNTING_REFERENCE)
    return mp_error_set(err, MP_EINVAL, "$.accounting", "unknown accounting");
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

int mp_dp_solve(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_result_t *res,
                mp_error_t *err) {
  mp__dp_t c;
  mp_dp_options_t def;
  mp__hint_t hint;
  uint64_t bact = 0;
  int rc, below_const = 0;
  double t0 = mp_lowerset_clock_ms();
  size_t last, len, pick;

  memset(res, 0, sizeof(*res));
  memset(&hint, 0, sizeof(hint));
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  if ((rc = mp__dp_init(&c, g, opts->accounting)) != 0) goto fail;
  c.should_stop = opts->should_stop;
  c.stop_arg = opts->stop_arg;
  c.deadline_at = opts->exact && opts->deadline_ms > 0 ? t0 + opts->deadline_ms : 0;
  if (opts->accounting == MP_ACCOUNTING_REFERENCE) {
    bact = opts->budget;
  } else if (opts->budget < g->const_bytes) {
    below_const = 1;
  } else {
    bact = opts->budget - g->const_bytes;
  }
  if ((rc = mp__load_family(&c, opts, t0, res->fallback_reason, sizeof(res->fallback_reason),
                            &res->exact_used)) != 0)
    goto fail;
  last = c.fam.n_sets - 1;
  if (c.fam.exact && (rc = mp__approx_hint(g, opts, bact, below_const, &hint)) != 0) goto fail;
  if (!below_const) {
    rc = mp__exec_with_fallback(&c, opts, 0, bact, &hint, res->fallback_reason,
                                sizeof(res->fallback_reason), &res->exact_used);
    if (rc != 0) goto fail;
    last = c.fam.n_sets - 1;
  }
  res->n_lower_sets = c.fam.n_sets;
  if (!below_const && c.front_len[last] > 0) {
    const mp__pair_t *P = c.arena + c.front_off[last];
    len = c.front_len[last];
    /* sorted by k ascending with a strictly increasing */
    pick = opts->objective == MP_OBJECTIVE_TIME ? len - 1 : 0;
    res->feasible = 1;
    res->retained_time = P[pick].a;
    res->recompute_time = g->fwd_time - P[pick].a;
    if (res->recompute_time < 0) res->recompute_time = 0; /* rounding */
    res->kept_bytes = P[pick].k;
    res->model_peak = opts->accounting == MP_ACCOUNTING_DEFAULT
                          ? mp__sadd(P[pick].p, g->const_bytes)
                          : P[pick].p;
    if ((rc = mp__strategy(&c, c.front_off[last] + pick, &res->strategy)) != 0) goto fail;
  } else {
    /* Infeasible: the least budget at which this family has a plan. */
    uint64_t p = 0;
    if (!c.fam.exact) memset(&hint, 0, sizeof(hint)); /* after a fallback */
    rc = mp__solve_minpeak(&c, below_const ? 0 : bact, &hint, &p);
    if (rc == MP_ETIMEDOUT) {
      /* the answer (no plan) stands; only the least budget is unknown */
      size_t n = strlen(res->fallback_reason);
      snprintf(res->fallback_reason + n, sizeof(res->fallback_reason) - n, "%s%s",
               n ? "; " : "", "deadline passed before the least feasible budget was found");
    } else if (rc != 0) {
      goto fail;
    } else {
      res->min_feasible_budget =
          opts->accounting == MP_ACCOUNTING_DEFAULT ? mp__sadd(p, g->const_bytes) : p;
    }
  }
  mp__dp_free(&c);
  return 0;
fail:
  mp__dp_free(&c);
  mp_dp_result_free(res);
  return mp__fail(rc, err);
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
  if ((rc = mp__load_family(&c, opts, t0, out->fallback_reason, sizeof(out->fallback_reason),
                            &exact_used)) != 0)
    goto fail;
  memset(&hint, 0, sizeof(hint));
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
