/* dp_reverse.c - what remains from each lower set to V, found by reverse
 * passes over the family, and those passes shared out to threads.
 *
 * A solve at one budget starts with a reverse pass (mp__reverse_q): for
 * every set, hq, the least peak of what remains (exact: feasibility, the
 * least feasible budget, and a cut that drops every pair that cannot
 * finish), and lower bounds on the charged time still to come (ht, and
 * Lagrangian bounds that weigh the kept memory). The memory objective's
 * bound on the kept memory still to come (hk) is one more (mp__reverse_kept).
 * The forward passes (dp_forward.c) cut their pairs with these figures.
 *
 * Why it is fast: the reverse pass holds for every budget up to its cap, so
 * a session (several budgets on one graph) does it once; its walk goes
 * depth first down the cover relation with the steps' figures updated in
 * O(1) and whole branches cut by the cap (mp__rwalk, dp_internal.h); and
 * the sets of one size push into smaller sets only, so each size is shared
 * out to threads (mp__par_pass, a job of the thread pool, threadpool.h),
 * with a lock per target set and a barrier per size.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* ---- What remains: reverse passes ------------------------------------------ */

/* For every lower set L, figures about the continuations from L to V, all
 * shortest or bottleneck paths in the DAG of lower sets, which one pass in
 * decreasing index order computes (a superset has a larger index, so h(L_j)
 * is final when the steps into L_j are walked):
 *
 *  hq(L): the least peak of a continuation started at L with nothing kept,
 *         hq(L) = min over steps L -> L' of max(cost, mw + hq(L')).
 *         It is exact, not a relaxation: started with k kept instead, every
 *         step of a continuation peaks exactly k higher (a step's peak is the
 *         kept memory before it plus its cost, and the continuation's own
 *         kept memory only adds to k), so the least peak from a pair (a, k)
 *         at L is k + hq(L). Hence a pair can still reach V within budget B
 *         iff k + hq(L) <= B, and hq({}) is the least budget with any plan.
 *         It does not depend on the budget. qnext[L] records the step that
 *         achieves it, so following qnext from {} gives a least-peak plan.
 *
 * The others are lower bounds for every budget B up to the cap of the pass
 * (below), over the steps that fit the cap and can be viable for some pair
 * (cost <= cap and mw + hq(L') <= cap): these include every step a pair can
 * take at such a budget (k >= 0), so the bounds hold at all of them.
 * (Restricting them to the steps viable at B itself would make them tighter
 * in principle; on the shipped graphs it changes nothing measurable, and
 * this way one pass serves every budget.)
 *  ht(L): the least charged time of a continuation (t(segment) - tw summed
 *         over its steps), forgetting the kept memory;
 *  hk(L): the least kept memory it adds (mw summed), likewise;
 *  hl_z(L), for a multiplier lam_z > 0: the least of charged time +
 *         lam_z * (the mw of every step but the last + the cost of the last,
 *         into V). A continuation from a pair (a, k) fits B only if its last
 *         step does: k + (its mw before the last step) + (the last cost) <= B,
 *         so its charged time is at least hl_z(L) - lam_z * (B - k). This
 *         bound (a Lagrangian relaxation of that constraint) is what
 *         remembers that kept memory is scarce: at tight budgets it is far
 *         above ht. The best multiplier differs from graph to graph and
 *         budget to budget (about 0.1 to 3 times t(V) / m(V) on the shipped
 *         graphs), so a few are computed in the same walk and the largest
 *         bound is used.
 *
 * `cap`: values above it are of no use to the caller, so steps that would
 * only produce larger values are not walked. Such an h(L) comes out larger
 * than its true value but still above cap, which is all the caller needs;
 * every h(L) <= cap is exact, because the step that achieves it leads to an
 * L' whose own value is within cap (exact, by induction on the index), and
 * the walk from L' reaches L through supersets of L whose step values are no
 * larger (cost, mw and charged time only grow as the subset shrinks).
 * Used as cuts with a budget B <= cap, an inexact hq(L) > cap >= B cuts as
 * the exact one would. */

/* hq is usable for cuts at `budget`: computed with a cap at least that. */
static inline int mp__q_ready(const mp__dp_t *c, uint64_t budget) {
  return c->hq_done && c->hq_cap >= budget;
}

/* The multipliers of the Lagrangian bounds, in time per byte: multiples of
 * t(V) / m(V) (none when either is 0). */
static void mp__pick_lambdas(mp__dp_t *c) {
  static const double mult[MP__NLAM] = {3, 1, 0.3, 0.1};
  size_t last = c->fam.n_sets - 1;
  double scale = c->m[last] > 0 ? c->t[last] / (double)c->m[last] : 0;
  int z;
  c->nlam = 0;
  if (!(scale > 0)) return;
  for (z = 0; z < MP__NLAM; z++) c->lam[c->nlam++] = scale * mult[z];
}

/* Fold the step i -> j (its cost, kept memory and charged time; the walk
 * kept it within the cap) into the reverse record of i. `timed`: update the
 * time bounds too (j's are finite). */
static inline void mp__rq_fold(mp__dp_t *c, const mp__rrec_t *rj, int into_v, int timed,
                               uint32_t i, uint64_t cost, uint64_t mw, double ch) {
  mp__rrec_t *ri = &c->rr[i];
  uint64_t v = mw + rj->hq; /* <= qcap: no overflow */
  if (cost > v) v = cost;
  if (v < ri->hq || (v == ri->hq && (uint32_t)(rj - c->rr) > ri->qnext)) {
    ri->hq = v;
    ri->qnext = (uint32_t)(rj - c->rr);
  }
  if (timed) {
    double mc = (double)(into_v ? cost : mw);
    int z;
    if (ch + rj->ht < ri->ht) ri->ht = ch + rj->ht;
    for (z = 0; z < c->nlam; z++) {
      double w = ch + c->lam[z] * mc + rj->hl[z];
      if (w < ri->hl[z]) ri->hl[z] = w;
    }
  }
}

/* mp__reverse_q's visitor: fold the step i -> j into i's record. */
typedef struct {
  const mp__rrec_t *rj;
  int into_v, timed;
} mp__rq_ctx_t;

static inline void mp__rq_visit(mp__dp_t *c, void *ctx, uint32_t i, uint64_t cost, uint64_t mw,
                                double ch) {
  const mp__rq_ctx_t *x = ctx;
  mp__rq_fold(c, x->rj, x->into_v, x->timed, i, cost, mw, ch);
}

static inline void mp__rq_visit_locked(mp__dp_t *c, void *ctx, uint32_t i, uint64_t cost,
                                       uint64_t mw, double ch) {
  const mp__rq_ctx_t *x = ctx;
  mp__spin_lock(&c->rr[i].lock);
  mp__rq_fold(c, x->rj, x->into_v, x->timed, i, cost, mw, ch);
  mp__spin_unlock(&c->rr[i].lock);
}

static inline void mp__rq_found(mp__dp_t *c, void *ctx, uint32_t i) {
  (void)ctx;
  __builtin_prefetch(&c->rr[i], 1);
}

/* mp__reverse_q's pass, per thread. */
typedef struct {
  uint64_t qcap;
  double tcap;
  int with_time;
  size_t total; /* steps walked */
} mp__rq_thr_t;

static int mp__rq_source(void *arg, size_t t, size_t nthreads, size_t j) {
  mp__pw_t *me = arg;
  mp__dp_t *c = me->c;
  mp__rq_thr_t *r = me->ctx;
  mp__rq_ctx_t x;
  uint64_t hj = c->rr[j].hq;
  double chlim;
  size_t nw;
  if (hj > r->qcap) return 0;
  x.rj = &c->rr[j];
  x.into_v = j == c->fam.n_sets - 1;
  x.timed = r->with_time && x.rj->ht != HUGE_VAL;
  if (c->hq_part && !x.timed) return 0; /* (ht(L_j) > tcap or V unreachable) */
  chlim = c->hq_part ? r->tcap - x.rj->ht : HUGE_VAL;
  if (nthreads > 1)
    nw = mp__rwalk(c, &me->w, j, r->qcap, r->qcap - hj, chlim, mp__rq_visit_locked, mp__rq_found,
                   &x);
  else
    nw = mp__rwalk(c, &me->w, j, r->qcap, r->qcap - hj, chlim, mp__rq_visit, mp__rq_found, &x);
  if (c->fam.exact) c->rvis[j] = nw > UINT32_MAX ? UINT32_MAX : (uint32_t)nw;
  r->total += nw;
  return mp__pw_poll(me, t);
}

/* hq and qnext up to qcap; with_time: also ht and the hl_z, for every
 * budget up to qcap, in the same walk.
 *
 * tcap (with_time; HUGE_VAL: none): only continuations whose charged time is
 * at most tcap matter, so the steps with ch + ht(L') > tcap are left out
 * (and the walk below them: ch only grows). All the figures are then taken
 * over the continuations made of the remaining steps, which include every
 * continuation within tcap (each of its steps has ch + ht(L') <= its own
 * remaining time): they are exact or valid bounds for the pairs of any plan
 * within tcap, which is all a solve whose answer is known to be within tcap
 * needs (its cuts only drop pairs that no such plan has), but hq is no
 * longer the least peak of every plan (c->hq_part says so). */
int mp__reverse_q(mp__dp_t *c, uint64_t qcap, int with_time, double tcap) {
  size_t ns = c->fam.n_sets, last = ns - 1, j, t, used;
  mp__rq_thr_t thr[MP_DP_MAX_THREADS];
  void *ctx[MP_DP_MAX_THREADS];
  mp__par_job_t job = {.item = mp__rq_source};
  int rc, z;
  mp__progress_phase(c->should_stop, c->stop_arg, "reverse_pass", -1);
  for (j = 0; j < ns; j++) {
    mp__rrec_t *r = &c->rr[j];
    r->hq = UINT64_MAX;
    r->qnext = UINT32_MAX;
    r->ht = HUGE_VAL;
    for (z = 0; z < MP__NLAM; z++) r->hl[z] = HUGE_VAL;
    atomic_init(&r->lock, 0);
  }
  c->rr[last].hq = 0;
  c->rvis_total = 0;
  if (c->fam.exact) memset(c->rvis, 0, ns * sizeof(*c->rvis)); /* (sets this pass skips) */
  c->hq_done = 0;
  c->ht_done = 0;
  c->hq_part = with_time && tcap != HUGE_VAL;
  c->nlam = 0;
  if (with_time) {
    if (!(c->tuning & MP_DP_TUNE_NO_LAGRANGE)) mp__pick_lambdas(c);
    c->rr[last].ht = 0;
    for (z = 0; z < MP__NLAM; z++) c->rr[last].hl[z] = 0;
  }
  for (t = 0; t < c->threads; t++) {
    thr[t].qcap = qcap;
    thr[t].tcap = tcap;
    thr[t].with_time = with_time;
    thr[t].total = 0;
    ctx[t] = &thr[t];
  }
  if ((rc = mp__par_pass(c, &job, c->threads, ctx, &used)) != 0) return rc;
  for (t = 0; t < used; t++) c->rvis_total += thr[t].total;
  c->hq_done = 1;
  c->ht_done = with_time;
  c->hq_cap = qcap;
  return 0;
}

/* hk at `budget` up to cap_u (the memory objective), over viable steps when
 * hq is ready for the budget. */
int mp__reverse_kept(mp__dp_t *c, uint64_t budget, uint64_t cap_u) {
  size_t ns = c->fam.n_sets, last = ns - 1, j, nv, q;
  int use_q = mp__q_ready(c, budget);
  mp__wlim_t wl;
  int rc;
  for (j = 0; j < ns; j++) c->hk[j] = UINT64_MAX;
  c->hk[last] = 0;
  c->work = 0;
  if ((rc = mp__poll(c)) != 0) return rc;
  for (j = last; j >= 1; j--) {
    uint64_t hj = c->hk[j], mwlim;
    if (c->work > (1u << 18)) {
      c->work = 0;
      mp__progress_phase(c->should_stop, c->stop_arg, "reverse_pass", (double)(last - j) / (double)last);
      if ((rc = mp__poll(c)) != 0) return rc;
    }
    if (hj > cap_u) continue;
    mwlim = cap_u - hj;
    if (use_q) {
      if (c->rr[j].hq > budget) continue; /* no pair ever gets here */
      if (budget - c->rr[j].hq < mwlim) mwlim = budget - c->rr[j].hq;
    }
    mp__wlim_init(&wl, budget, HUGE_VAL, mwlim);
    mp__walk(c, j, &wl, &nv);
    for (q = 0; q < nv; q++) {
      uint64_t v = c->vis[q].mw + hj; /* <= cap_u: no overflow */
      if (v < c->hk[c->vis[q].i]) c->hk[c->vis[q].i] = v;
    }
  }
  return 0;
}

/* The charged time (t(V) - a) of the least-peak plan that qnext gives from
 * {}; hq({}) must be within the cap hq was computed with. */
double mp__qchain_charged(const mp__dp_t *c) {
  size_t last = c->fam.n_sets - 1, i = 0;
  double a = 0;
  while (i != last) {
    size_t j = c->rr[i].qnext;
    uint64_t mw;
    double tw;
    mp__step_gain(c, i, j, &mw, &tw);
    a += tw;
    i = j;
  }
  return c->t[last] - a;
}

/* ---- Reverse passes on several threads --------------------------------------
 *
 * A reverse pass pushes each set's figures into its subsets, sets in
 * decreasing index order. The family is sorted by size and a step goes
 * from a set to a strictly larger one, so once every set of size > s has
 * pushed, the sets of size s are complete: the sets of one size can push at
 * the same time. mp__par_pass runs the pass as a job of the thread pool
 * (threadpool.h) with one level per size, which shares each size's sources
 * out to the threads one at a time (their walks differ a lot in length);
 * the pass's visitor takes the target's lock for each push (two threads
 * rarely want the same set), and a barrier closes each size. With one
 * thread it is the same loop in the caller's thread, without locks or
 * barrier.
 *
 * Only the exact family's walks run on several threads (the approximate
 * family's walk writes c->vis, and its passes are short). Thread 0 is the
 * caller's: it alone polls (should_stop need not be thread-safe). */

/* Below these (sets in the family, sets per size on average) a pass runs on
 * the caller's thread whatever it was given (MP_DP_TUNE_THREADS_ALWAYS
 * aside). GoogLeNet has 27,358 sets in 135 sizes, PSPNet 12,533 in 386;
 * the other shipped graphs stay below. */
#define MP__PAR_MIN_SETS 4096
#define MP__PAR_MIN_PER_SIZE 8

/* The walk state of threads 1 .. threads - 1, kept in c across passes. */
static int mp__par_walkers(mp__dp_t *c, size_t threads) {
  size_t ns = c->fam.n_sets;
  while (c->n_xwalk + 1 < threads) {
    mp__rwalker_t *w, *nw = realloc(c->xwalk, (c->n_xwalk + 1) * sizeof(*nw));
    if (nw == NULL) return MP_ENOMEM;
    c->xwalk = nw;
    w = &c->xwalk[c->n_xwalk];
    w->stack = malloc(ns * sizeof(*w->stack));
    w->fmark = calloc(c->dag.n ? c->dag.n : 1, sizeof(uint32_t));
    w->work = 0;
    if (w->stack == NULL || w->fmark == NULL) {
      free(w->stack);
      free(w->fmark);
      return MP_ENOMEM;
    }
    c->n_xwalk++;
  }
  return 0;
}

/* The threads a pass asked for `want` runs on: one for the approximate
 * family, and for families with too few sets, or sets per size, to gain
 * from more (each size costs a barrier or two, and a thread start costs
 * about as much as a small family's whole pass: DenseNet, one set per size,
 * runs its pass slower on two threads than on one). Fewer still if a thread's walk
 * state or start fails (mp__par_pass). */
size_t mp__par_threads(const mp__dp_t *c, size_t want) {
  size_t ns = c->fam.n_sets, nlvl = (size_t)c->fam.card[ns - 1] + 1;
  if (want <= 1 || !c->fam.exact) return 1;
  if (!(c->tuning & MP_DP_TUNE_THREADS_ALWAYS) &&
      (ns < MP__PAR_MIN_SETS || ns < MP__PAR_MIN_PER_SIZE * nlvl))
    return 1;
  return want;
}

/* Run a reverse pass on up to `threads` threads (mp__par_threads): the
 * job's item (a source set, its argument the thread's mp__pw_t), and its
 * level_check and level_after if any, are the caller's; its levels, the
 * sizes from V's down to 1, are set here. ctx[t] is thread t's record.
 * Returns the code the pass stopped with (0: done); *used: the threads it
 * ran on (their ctx only are used). Thread 0 polls from the start. If a
 * thread cannot be started the pass runs on fewer. */
int mp__par_pass(mp__dp_t *c, mp__par_job_t *job, size_t threads, void **ctx,
                        size_t *used) {
  size_t ns = c->fam.n_sets, nlvl = (size_t)c->fam.card[ns - 1] + 1, j, t;
  mp__pw_t wk[MP_DP_MAX_THREADS];
  void *args[MP_DP_MAX_THREADS];
  size_t *lvl;
  int rc;
  threads = mp__par_threads(c, threads);
  *used = 1;
  if ((lvl = calloc(nlvl + 1, sizeof(*lvl))) == NULL) return MP_ENOMEM;
  if (threads > 1 && mp__par_walkers(c, threads) != 0)
    threads = c->n_xwalk + 1; /* as many as have their walk state */
  /* the sets of size s: [lvl[s], lvl[s + 1]) */
  for (j = 0; j < ns; j++) lvl[c->fam.card[j] + 1]++;
  for (j = 0; j < nlvl; j++) lvl[j + 1] += lvl[j];
  for (t = 0; t < threads; t++) {
    wk[t].c = c;
    wk[t].ctx = ctx[t];
    if (t == 0) {
      wk[t].w.stack = c->rstack;
      wk[t].w.fmark = c->fmark;
      wk[t].w.work = 0;
    } else {
      wk[t].w = c->xwalk[t - 1];
    }
    args[t] = &wk[t];
  }
  job->n_levels = nlvl - 1; /* sizes 1 .. nlvl - 1: {} pushes nothing */
  job->bound = lvl + 1;
  if ((rc = mp__poll(c)) == 0) rc = mp__par_run(job, args, threads, used);
  free(lvl);
  return rc;
}
