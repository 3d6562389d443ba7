/* dp_staircase.c - the time objective's whole staircase in one reverse pass
 * (mp_dp_session_staircase, dp.h).
 *
 * hq extends to two dimensions: for every lower set L, the Pareto set H(L)
 * of its continuations by (charged time c, peak offset q), q being the
 * peak of the continuation started with nothing kept (started with k kept it
 * peaks at k + q, as for hq). A continuation is a first step then a
 * continuation from L', so H(L) is the Pareto set of (ch + c', max(cost,
 * mw + q')) over the steps and the pairs of H(L'): one pass in decreasing
 * index order, each set's H pushed to its subsets once complete. H({}) is
 * the time objective's whole staircase: at budget B the least recomputation
 * is the least c with q <= B. The sets are two-dimensional (the forward
 * frontier pass needs three) but not cut by any budget, so this pass costs
 * about a forward pass above the optimum: on the shipped graphs about one
 * solve at the graph's hardest budget, but it has no bound of its own;
 * hence the work limit. Nine steps
 * in ten add nothing to H(L_i), and the pass is bound by the cache misses
 * of reaching H(L_i) to find that out: see mp__cqh_t.
 *
 * Each H(L) is kept sorted by q ascending with c strictly decreasing; a pair
 * is dominated iff the last one with q'' <= q has c'' <= c. Pairs above qmax
 * (no budget of interest) or cmax (no plan from {} through them can be of
 * use) are not kept.
 *
 * Like the other reverse passes it may run on several threads
 * (mp__par_pass): a size's sets push at the same time, each push under the
 * target's lock, and the sets of a size are freed once the size is done.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* A pair of H(L): charged time c, peak offset q. */
typedef struct {
  double c;
  uint64_t q;
} mp__cq_t;

typedef struct {
  mp__cq_t *v;
  size_t n, cap;
} mp__cqs_t;

/* H(L) in the pass: its pairs, and six of them summarised next to the
 * pointer (at 1/7 .. 6/7 of the set, q ascending), so that most steps are
 * rejected from this one cache line (mp__st_visit) instead of a search
 * through pairs elsewhere in memory: the pass is bound by those misses.
 * The summary is in floats rounded up, so a rejection it allows is one the
 * exact pairs allow too (a pair no worse than the rounded one exists). */
#define MP__NSUM 6
typedef struct {
  mp__cq_t *v;
  uint32_t n, cap;
  float sq[MP__NSUM], sc[MP__NSUM];
} mp__cqh_t;

typedef struct {
  mp__cqh_t *H;          /* per set */
  atomic_uchar *locks;   /* per set, when the pass may run on several threads */
  const mp__cqh_t *hj;   /* the set being pushed */
  uint64_t qmax;
  double cmax;
  size_t cand;           /* candidates so far */
  mp__cq_t *surv, *tmp;  /* scratch */
  size_t cap_surv, cap_tmp;
  int rc;                /* MP_ENOMEM when a push failed */
  size_t max_work;
  atomic_size_t *cand_all; /* candidates so far, all threads */
  size_t left, walked, mark_w, mark_c; /* thread 0: the projection */
} mp__st_ctx_t;

static inline int mp__cq_reserve(mp__cq_t **v, size_t *cap, size_t need) {
  MP__GROW(*v, *cap, need, 16);
  return 0;
}

static inline void mp__st_found(mp__dp_t *c, void *ctx, uint32_t i) {
  (void)c;
  __builtin_prefetch(&((mp__st_ctx_t *)ctx)->H[i]);
}

/* x as a float no smaller than x. */
static inline float mp__f_up(double x) {
  float f = (float)x;
  return (double)f < x ? nextafterf(f, HUGE_VALF) : f;
}

/* The index of summary entry z in a set of n pairs. */
static inline size_t mp__sum_at(uint32_t n, int z) {
  return (size_t)n * (size_t)(z + 1) / (MP__NSUM + 1);
}

/* Set the summary of h (n > 0) from its pairs. */
static inline void mp__cqh_summarise(mp__cqh_t *h) {
  int z;
  for (z = 0; z < MP__NSUM; z++) {
    const mp__cq_t *p = &h->v[mp__sum_at(h->n, z)];
    /* (beyond 2^53 bytes a double may round below the exact q; no budget of
     * interest is there, so such a pair is left out of the summary) */
    h->sq[z] = p->q > (UINT64_C(1) << 53) ? HUGE_VALF : mp__f_up((double)p->q);
    h->sc[z] = mp__f_up(p->c);
  }
}

/* Push H(L_j) through the step i -> j into H(L_i): filter the shifted pairs
 * against H(L_i) (read only, the position only moving forward), then merge
 * the survivors in one pass. */
static inline void mp__st_push(mp__st_ctx_t *x, uint32_t i, uint64_t cost, uint64_t mw,
                               double ch) {
  const mp__cq_t *J = x->hj->v;
  mp__cqh_t *hi = &x->H[i];
  size_t nj = x->hj->n, r0 = 0, rend, r, pos = 0, nu = 0, lo, hi_, a, b, out;
  double clim = x->cmax - ch, cbest;
  uint64_t q0;
  /* the pairs with mw + q' <= cost all give q = cost: only the last (least
   * c) of them counts; those with c' > cmax - ch are of no use */
  lo = 0;
  hi_ = nj;
  while (lo < hi_) {
    size_t mid = lo + (hi_ - lo) / 2;
    if (mw + J[mid].q <= cost) lo = mid + 1;
    else hi_ = mid;
  }
  lo = lo > 0 ? lo - 1 : 0;
  hi_ = nj;
  while (lo < hi_) { /* c falls strictly: the first within clim */
    size_t mid = lo + (hi_ - lo) / 2;
    if (J[mid].c > clim) lo = mid + 1;
    else hi_ = mid;
  }
  r0 = lo;
  if (r0 >= nj) return;
  /* The work counted: the candidates within qmax (r0 .. the first beyond),
   * whatever H(L_i) holds, so that the count, and whether the work limit
   * stops the pass, do not depend on the order of the pushes (threads). */
  hi_ = nj;
  while (lo < hi_) {
    size_t mid = lo + (hi_ - lo) / 2;
    if (mp__sadd(mw, J[mid].q) <= x->qmax) lo = mid + 1;
    else hi_ = mid;
  }
  rend = lo;
  x->cand += rend - r0;
  /* Most steps add nothing (nine in ten on GoogLeNet). When a pair of
   * H(L_i) with q'' <= the least candidate peak has c'' <= the least
   * candidate time, it dominates every candidate. The summary's pairs are
   * tried first, from the cache line the walk has prefetched; then, when
   * H(L_i) is large enough for the summary to miss, a search. */
  q0 = mp__sadd(mw, J[r0].q);
  if (q0 < cost) q0 = cost;
  cbest = ch + J[nj - 1].c;
  if (hi->n > 0) {
    int z;
    size_t from, to;
    double q0d = (double)q0;
    for (z = MP__NSUM - 1; z >= 0; z--)
      if ((double)hi->sq[z] <= q0d) break;
    if (z >= 0 && (double)hi->sc[z] <= cbest) return;
    /* The first pair with q'' > q0 is past the summary's z-th entry (its
     * rounded q is <= q0, so its exact one is), and usually at most at the
     * next entry (its rounded q is above q0, but the exact one may not be). */
    from = z >= 0 ? mp__sum_at(hi->n, z) + 1 : 0;
    to = hi->n;
    if (z + 1 < MP__NSUM) {
      size_t t = mp__sum_at(hi->n, z + 1);
      if (hi->v[t].q > q0) to = t;
      else from = t + 1;
    }
    lo = from;
    hi_ = to;
    while (lo < hi_) {
      size_t mid = lo + (hi_ - lo) / 2;
      if (hi->v[mid].q <= q0) lo = mid + 1;
      else hi_ = mid;
    }
    if (lo > 0 && hi->v[lo - 1].c <= cbest) return;
    pos = lo; /* where the candidates' filter starts (their q >= q0) */
  }
  if (mp__cq_reserve(&x->surv, &x->cap_surv, rend - r0) != 0) {
    x->rc = MP_ENOMEM;
    return;
  }
  for (r = r0; r < rend; r++) { /* (cost <= qmax: the walk's cap) */
    uint64_t q = mp__sadd(mw, J[r].q);
    double cc = ch + J[r].c;
    if (q < cost) q = cost;
    if (pos < hi->n && hi->v[pos].q <= q) { /* gallop to the first q'' > q */
      size_t l = pos + 1, h2 = pos + 1, width = 1;
      while (h2 < hi->n && hi->v[h2].q <= q) {
        l = h2 + 1;
        h2 = l + width;
        width *= 2;
      }
      if (h2 > hi->n) h2 = hi->n;
      while (l < h2) {
        size_t mid = l + (h2 - l) / 2;
        if (hi->v[mid].q <= q) l = mid + 1;
        else h2 = mid;
      }
      pos = l;
    }
    if (pos > 0 && hi->v[pos - 1].c <= cc) continue;
    if (nu > 0 && x->surv[nu - 1].q == q) {
      if (cc < x->surv[nu - 1].c) x->surv[nu - 1].c = cc; /* (q saturated) */
      continue;
    }
    x->surv[nu].c = cc;
    x->surv[nu].q = q;
    nu++;
  }
  if (nu == 0) return;
  if ((size_t)hi->n + nu > UINT32_MAX) {
    x->rc = MP_ELIMIT; /* (the work limit is far below) */
    return;
  }
  if (mp__cq_reserve(&x->tmp, &x->cap_tmp, hi->n + nu) != 0) {
    x->rc = MP_ENOMEM;
    return;
  }
  /* merge by q (for equal q the smaller c first); keep what lowers c */
  a = b = out = 0;
  while (a < hi->n || b < nu) {
    const mp__cq_t *e;
    if (b == nu || (a < hi->n && (hi->v[a].q < x->surv[b].q ||
                                  (hi->v[a].q == x->surv[b].q && hi->v[a].c <= x->surv[b].c))))
      e = &hi->v[a++];
    else
      e = &x->surv[b++];
    if (out > 0 && x->tmp[out - 1].c <= e->c) continue;
    x->tmp[out++] = *e;
  }
  { /* the merged set becomes H(L_i); its old buffer the next scratch */
    mp__cq_t *ov = hi->v;
    size_t oc = hi->cap;
    hi->v = x->tmp;
    hi->cap = x->cap_tmp > UINT32_MAX ? UINT32_MAX : (uint32_t)x->cap_tmp;
    hi->n = (uint32_t)out;
    x->tmp = ov;
    x->cap_tmp = oc;
    mp__cqh_summarise(hi);
  }
}

/* The visitors: the push, under the set's lock when threads share the sets. */
static inline void mp__st_visit(mp__dp_t *c, void *ctx, uint32_t i, uint64_t cost, uint64_t mw,
                                double ch) {
  (void)c;
  mp__st_push(ctx, i, cost, mw, ch);
}

static inline void mp__st_visit_locked(mp__dp_t *c, void *ctx, uint32_t i, uint64_t cost,
                                       uint64_t mw, double ch) {
  mp__st_ctx_t *x = ctx;
  (void)c;
  mp__spin_lock(&x->locks[i]);
  mp__st_push(x, i, cost, mw, ch);
  mp__spin_unlock(&x->locks[i]);
}

static int mp__st_source(void *arg, size_t t, size_t nthreads, size_t j) {
  mp__pw_t *me = arg;
  mp__st_ctx_t *x = me->ctx;
  mp__cqh_t *h = &x->H[j];
  size_t before = x->cand, all;
  if (h->n == 0) return 0;
  x->hj = h;
  if (nthreads > 1)
    mp__rwalk(me->c, &me->w, j, x->qmax, x->qmax - h->v[0].q, x->cmax - h->v[h->n - 1].c,
              mp__st_visit_locked, mp__st_found, x);
  else
    mp__rwalk(me->c, &me->w, j, x->qmax, x->qmax - h->v[0].q, x->cmax - h->v[h->n - 1].c,
              mp__st_visit, mp__st_found, x);
  if (x->rc != 0) return x->rc;
  if (nthreads == 1) { /* read no more (with threads: after the size) */
    free(h->v);
    memset(h, 0, sizeof(*h));
  }
  all = atomic_fetch_add_explicit(x->cand_all, x->cand - before, memory_order_relaxed) +
        (x->cand - before);
  return all > x->max_work ? MP_ELIMIT : mp__pw_poll(me, t);
}

/* Thread 0, after each size: every 1/32 of the walk (counted in the
 * reverse pass's steps, which this pass cuts further, so that rate and rest
 * compare), project the rest at twice the recent rate of candidates per
 * step (the sets grow towards {}), and give up early when that passes the
 * limit. */
static int mp__st_size_done(void *arg, size_t lo, size_t hi) {
  mp__pw_t *me = arg;
  mp__dp_t *c = me->c;
  mp__st_ctx_t *x = me->ctx;
  size_t j, cand;
  double rate;
  if (!(c->fam.exact && c->hq_done)) return 0;
  for (j = lo; j < hi; j++) {
    x->left -= c->rvis[j];
    x->walked += c->rvis[j];
  }
  if (x->walked - x->mark_w <= (x->walked + x->left) / 32) return 0;
  cand = atomic_load_explicit(x->cand_all, memory_order_relaxed);
  rate = (double)(cand - x->mark_c) / (double)(x->walked - x->mark_w);
  if ((double)cand + 2 * rate * (double)x->left > (double)x->max_work) return MP_ELIMIT;
  x->mark_w = x->walked;
  x->mark_c = cand;
  return 0;
}

/* Every thread, once a size is pushed: free its share of the size's sets. */
static void mp__st_size_after(void *arg, size_t t, size_t nthreads, size_t lo, size_t hi) {
  mp__st_ctx_t *x = ((mp__pw_t *)arg)->ctx;
  size_t j;
  for (j = lo + t; j < hi; j += nthreads) {
    free(x->H[j].v);
    memset(&x->H[j], 0, sizeof(x->H[j]));
  }
}

/* H({}) up to qmax, into *out (q ascending, c strictly decreasing), or
 * MP_ELIMIT once the candidates exceed max_work or are projected to (the
 * candidates per step so far, times the steps still to walk, known from the
 * reverse pass that counted them). On c->threads threads (mp__par_pass). */
static int mp__staircase(mp__dp_t *c, uint64_t qmax, double cmax, size_t max_work, mp__cqs_t *out) {
  size_t ns = c->fam.n_sets, last = ns - 1, j, t, used = 0;
  mp__st_ctx_t x[MP_DP_MAX_THREADS];
  void *ctx[MP_DP_MAX_THREADS];
  atomic_size_t cand_all;
  atomic_uchar *locks = NULL;
  mp__cqh_t *H;
  mp__par_job_t job = {.item = mp__st_source,
                       .level_check = mp__st_size_done,
                       .level_after = mp__st_size_after};
  int rc = 0;
  memset(out, 0, sizeof(*out));
  memset(x, 0, sizeof(x));
  atomic_init(&cand_all, 0);
  /* one cache line per set (sizeof is 64) */
  H = aligned_alloc(64, ns * sizeof(*H));
  if (H == NULL) return MP_ENOMEM;
  memset(H, 0, ns * sizeof(*H));
  if (mp__par_threads(c, c->threads) > 1 && (locks = calloc(ns, sizeof(*locks))) == NULL) {
    rc = MP_ENOMEM;
    goto done;
  }
  if ((H[last].v = malloc(sizeof(*H[last].v))) == NULL) {
    rc = MP_ENOMEM;
    goto done;
  }
  H[last].cap = 1;
  H[last].v[0].c = 0;
  H[last].v[0].q = 0;
  H[last].n = 1;
  mp__cqh_summarise(&H[last]);
  for (t = 0; t < c->threads; t++) {
    x[t].H = H;
    x[t].locks = locks;
    x[t].qmax = qmax;
    x[t].cmax = cmax;
    x[t].max_work = max_work;
    x[t].cand_all = &cand_all;
    ctx[t] = &x[t];
  }
  if (c->fam.exact && c->hq_done)
    for (j = 1; j < ns; j++) x[0].left += c->rvis[j];
  if ((rc = mp__par_pass(c, &job, c->threads, ctx, &used)) != 0) goto done;
  out->v = H[0].v;
  out->n = H[0].n;
  out->cap = H[0].cap;
  memset(&H[0], 0, sizeof(H[0]));
done:
  for (j = 0; j < ns; j++) free(H[j].v);
  for (t = 0; t < c->threads; t++) {
    free(x[t].surv);
    free(x[t].tmp);
  }
  free(H);
  free(locks);
  return rc;
}

/* The staircase up to max_budget, for mp_dp_session_staircase (which sets
 * the deadline and turns a code into an error): cst is the constant memory
 * in the options' terms (0 in the reference accounting); max_work 0 is the
 * default limit (dp.h), raised to at least min_work (and still at most a
 * billion). Returns 0 or an MP_E* code; on error *points is NULL and
 * *n_points 0. */
int mp__staircase_points(mp__dp_t *c, uint64_t cst, uint64_t max_budget, size_t max_work,
                         size_t min_work, mp_dp_point_t **points, size_t *n_points) {
  uint64_t qmax;
  size_t last = c->fam.n_sets - 1, i;
  double cmax = HUGE_VAL;
  mp__cqs_t h;
  int rc;
  *points = NULL;
  *n_points = 0;
  if (max_budget < cst) return 0;
  qmax = max_budget - cst;
  /* hq for the projection (the steps each set's walk takes) and for cmax:
   * the least-peak plan's charged time bounds every useful point */
  if (!(c->hq_done && !c->hq_part && c->hq_cap >= qmax && c->ht_done) &&
      (rc = mp__reverse_q(c, c->qcap_all ? UINT64_MAX : qmax, 1, HUGE_VAL)) != 0)
    return rc; /* (a session's solves need it for every budget: then once) */
  if (c->rr[0].hq > qmax) return 0; /* no plan up to max_budget */
  cmax = mp__qchain_charged(c) + c->tol;
  if (max_work == 0) {
    double w = 12.0 * (double)(c->fam.exact ? c->rvis_total : (last + 1) * (last + 1));
    if (w < 64e6) w = 64e6;
    if (w < (double)min_work) w = (double)min_work;
    max_work = w > 1e9 ? (size_t)1e9 : (size_t)w;
  }
  /* The pass costs more the larger cmax is, and the least-peak plan's
   * charged time (cmax here) can be several times the staircase's largest
   * point (on GoogLeNet five times). So unless the time bound at the least peak (the
   * reverse pass's) rules it out, try a quarter of it first: the points
   * are exact up to that time, and all of them are there when the one at
   * the least peak is (the others need less recomputation). Otherwise,
   * the whole pass. */
  rc = -1;
  if (mp__tbound(c, 0, 0, c->rr[0].hq) <= cmax / 4) {
    rc = mp__staircase(c, qmax, cmax / 4, max_work, &h);
    if (rc == 0 && !(h.n > 0 && h.v[0].q == c->rr[0].hq)) {
      free(h.v);
      rc = -1;
    }
  }
  if (rc == -1) rc = mp__staircase(c, qmax, cmax, max_work, &h);
  if (rc != 0) return rc;
  *points = malloc((h.n ? h.n : 1) * sizeof(**points));
  if (*points == NULL) {
    free(h.v);
    return MP_ENOMEM;
  }
  for (i = 0; i < h.n; i++) {
    (*points)[i].budget = mp__sadd(h.v[i].q, cst);
    (*points)[i].recompute_time = h.v[i].c > 0 ? h.v[i].c : 0;
    (*points)[i].kept_bytes = 0;
  }
  *n_points = h.n;
  free(h.v);
  return 0;
}

