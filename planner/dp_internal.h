/* dp_internal.h - what the files of the lower-set DP share (private to
 * planner/dp*.c; dp.h is the API).
 *
 * The DP is in files by what each owns and why it changes:
 *  - dp.c: the API (dp.h): sessions, the fallback to the approximate
 *    family, plans and frontiers read off the passes;
 *  - dp_family.c: the context, its family of lower sets and the per-set
 *    figures of the model;
 *  - dp_forward.c: the forward passes (their Pareto sets, the walks into a
 *    set with their cuts and part skipping) and the search for the answer
 *    at one budget;
 *  - dp_reverse.c: what remains from each set to V (hq, the time and memory
 *    bounds) in reverse passes, and those passes on several threads;
 *  - dp_staircase.c: the time objective's whole staircase in one reverse
 *    pass, with its own sets of pairs;
 *  - threadpool.c (not the DP's): the parallel loop the reverse passes run on.
 *
 * Here: the context every pass reads and writes (mp__dp_t), the figures of
 * one step of the model, and the small functions that the hot loops of more
 * than one file call, all inline so that splitting the files costs no call
 * (saturating sums, the step's cost and gain, the reverse walk with its
 * visitor inlined into each pass). Functions with a body elsewhere are
 * listed by the file that has it, with their comments there.
 */
#ifndef MP_DP_INTERNAL_H
#define MP_DP_INTERNAL_H

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "lowerset.h"
#include "progress.h"
#include "threadpool.h"

/* ---- Saturating arithmetic ---------------------------------------------- */

static inline uint64_t mp__sadd(uint64_t x, uint64_t y) {
  return x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

static inline uint64_t mp__sdbl(uint64_t x) { return x > UINT64_MAX / 2 ? UINT64_MAX : 2 * x; }

/* The array p of *cap elements of `size` bytes, grown (doubling from
 * `first`) to hold at least `need` (>= 1): p itself when it already does,
 * else the reallocated array with *cap updated, or NULL when out of memory
 * (p is then still valid and *cap unchanged). */
static inline void *mp__grow(void *p, size_t *cap, size_t need, size_t size, size_t first) {
  size_t nc = *cap ? *cap : first;
  void *np;
  if (p != NULL && need <= *cap) return p;
  while (nc < need) {
    if (nc > SIZE_MAX / 2 / size) return NULL;
    nc *= 2;
  }
  if ((np = realloc(p, nc * size)) == NULL) return NULL;
  *cap = nc;
  return np;
}

/* mp__grow into the pointer `ptr` (an lvalue), or return MP_ENOMEM. */
#define MP__GROW(ptr, cap, need, first)                                        \
  do {                                                                         \
    void *mp__g = mp__grow((ptr), &(cap), (need), sizeof(*(ptr)), (first));    \
    if (mp__g == NULL) return MP_ENOMEM;                                       \
    (ptr) = mp__g;                                                             \
  } while (0)

/* ---- State -------------------------------------------------------------- */

/* Number of multipliers of the Lagrangian bounds (see mp__reverse_q); the
 * candidate filter (mp__relax_stair) is written out for exactly four. */
#define MP__NLAM 4

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
  uint32_t node; /* exact family: the node this step removed (the walk's tree) */
  uint64_t cost, mw;
  uint64_t sw;   /* exact family: saved bytes of L_j \ L_i (the cost's saved term) */
  double tw, ch;
} mp__vis_t;

/* Per set, what remains to V (mp__reverse_q), together in one record since
 * a reverse walk updates them all for the same set. */
typedef struct {
  uint64_t hq;          /* least peak from the set with nothing kept */
  double ht;            /* least charged time, relaxed */
  double hl[MP__NLAM];  /* the Lagrangian bounds */
  uint32_t qnext;       /* the step achieving hq (ties: the largest) */
  atomic_uchar lock;    /* held by a thread folding into the record */
} mp__rrec_t;

/* Exact family, per set, what a walk reads when it reaches the set as a
 * step's source: its bytes, the source's term of the step cost (g(L) in the
 * default accounting, 0 in the reference one) and its cover edges. */
typedef struct {
  uint64_t m, csrc;
  uint32_t dlo, dhi;
} mp__wset_t;

/* What a forward pass's pairs hold at best over a set of lower sets: the
 * least kept memory k and the least charged time so far c (t(L) - a) of
 * any pair there (UINT64_MAX and HUGE_VAL: no pair). See mp__agg_fill. */
typedef struct {
  uint64_t k;
  double c;
} mp__agg_t;

/* A cover edge L -> L \ {v} with what a walk needs of its lower end s, so
 * that reaching s reads nothing else: its bytes, cost term and own edges. */
typedef struct {
  uint32_t s, v;
  uint64_t m, csrc;
  uint32_t dlo, dhi;
} mp__dedge_t;

/* A set on the stack of mp__reverse_q's walk: its edges, the node removed
 * to reach it, and the step's kept memory and charged time so far. */
typedef struct {
  uint32_t dlo, dhi, node, s;
  uint64_t mw, cost, sw;
  double ch;
} mp__rframe_t;

/* What one thread's reverse walks write: the stack (one frame per set), the
 * boundary marks (one per node) and the steps walked since it last polled. */
typedef struct {
  mp__rframe_t *stack;
  uint32_t *fmark;
  size_t work;
} mp__rwalker_t;

/* The context of one DP: a graph under one accounting, its family of lower
 * sets and their figures (dp_family.c), what the reverse passes found, the
 * forward passes' pairs, and the scratch of both. */
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
  /* Saved bytes (default accounting; all zero in the reference one or when
   * no node has any): nsv the node's saved bytes, nk what keeping the node
   * adds to the kept memory (its value and its saved bytes), nc what it adds
   * when it is charged instead (its saved bytes when it may hold them from
   * the forward pass all the same, mp__saved_held; else 0). */
  uint64_t *nsv, *nk, *nc;

  /* per set */
  uint64_t *m, *back;
  uint64_t *mr;    /* the kept memory every segment holding the set's nodes adds
                    * whatever its bounds: nk of the recompute:false nodes, nc
                    * of the others (0 in the reference accounting) */
  uint64_t *sv;    /* default accounting: the saved bytes of the set's nodes */
  uint64_t *gsrc;  /* default accounting: m of the nodes of L with a successor outside L */
  uint64_t max_ws; /* default accounting: the largest workspace of any activation */
  int has_saved;   /* default accounting and some node has saved bytes */
  double *t, *tr;
  uint32_t *fb_off, *fb; /* F'(L): boundary nodes that are not recompute:false */
  uint32_t *approx_top;  /* approx: the node whose closure set i is, or UINT32_MAX */
  mp__rrec_t *rr;        /* what remains (mp__reverse_q), per set */
  double lam[MP__NLAM];  /* the multipliers of rr[].hl (nlam of them) */
  int nlam;
  uint64_t *hk;          /* the memory objective's bound (mp__reverse_kept) */
  int qcap_all;          /* compute rr[] for every budget at once (sessions) */
  unsigned tuning;       /* MP_DP_TUNE_* */
  int hq_done;           /* rr[].hq computed for this family ... */
  int hq_part;           /* ... for the plans within a time cap only ... */
  int ht_done;           /* ... and rr[].ht, rr[].hl too ... */
  uint64_t hq_cap;       /* ... exact up to this cap */
  mp__wset_t *wset;      /* exact family: per set, what its walks read */
  mp__dedge_t *dedge;    /* exact family: the cover edges */
  mp__agg_t *eagg;       /* exact family, per cover edge, in a forward pass:
                          * the pairs of the walk subtree below it (mp__agg_fill);
                          * pm[pmi[e]] copied next to the edge, so the walk reads
                          * it in edge order instead of at the child's pm */
  mp__agg_t *pm;         /* ... per set s, from pm_base(s): its own pairs, then
                          * with its edges' subtrees added one by one */
  uint32_t *pmi;         /* ... per cover edge L -> s = L \ {v}: where in pm the
                          * subtree the walk explores below s is */
  mp__rframe_t *rstack;  /* exact family: mp__reverse_q's walk, one per set */
  uint32_t *rvis;        /* exact family: steps mp__reverse_q walked into each set */
  size_t rvis_total;     /* ... and in all */
  uint32_t *live;        /* mp__run: the sets that have pairs so far, ascending */
  size_t n_live;
  uint64_t *ctgt;        /* per set as a step's target: the cost's own term */

  /* the DP */
  mp__pair_t *arena;
  size_t n_arena, cap_arena;
  size_t *front_off;
  uint32_t *front_len;

  /* scratch */
  uint32_t *fmark;       /* per node: in the boundary of the current walk's L_j */
  mp__vis_t *vis;        /* the current walk's steps, one per set at most */
  mp__pair_t *cand;     /* the state being built (bounded: its staircase) */
  size_t n_cand, cap_cand;
  mp__pair_t *cand2;    /* merge output, swapped with cand */
  size_t cap_cand2;
  mp__pair_t *surv;     /* one source's candidates that survive the filter */
  size_t cap_surv;
  mp__pair_t *stair3; /* frontier sweep */
  size_t cap_stair3;

  /* stopping */
  double deadline_at; /* 0: none */
  int timed_out;      /* the deadline changed an answer: moved it to the
                         fallback family, or left a least budget unknown */
  int (*should_stop)(void *);
  void *stop_arg;
  size_t work;
  size_t passes; /* the time objective's bounded forward passes, in all (tests) */
  double tol; /* slack for comparing sums of times */

  /* reverse passes on several threads (mp__par_pass) */
  size_t threads;         /* 1 .. MP_DP_MAX_THREADS */
  mp__rwalker_t *xwalk;   /* the walk state of threads 1 .. */
  size_t n_xwalk;
} mp__dp_t;

/* ---- The context and its family (dp_family.c) -------------------------------- */

int mp__dp_init(mp__dp_t *c, const mp_graph_t *g, mp_accounting_t acc);
int mp__load_family(mp__dp_t *c, const mp_dp_options_t *o, double t0, char *reason,
                    size_t reason_len, int *exact_used);
int mp__dp_prepare(mp__dp_t *c);
void mp__dp_free_family(mp__dp_t *c);
void mp__dp_free(mp__dp_t *c);

/* ---- Sessions, for the reuse record (dp.c, reuse.c) -------------------------- */

/* mp_dp_session_solve with deadline_ms (0: none) in place of the session's
 * own: the caller's plan decides how long its solve may take. */
int mp__dp_session_solve_until(mp_dp_session_t *s, uint64_t budget, double deadline_ms,
                               mp_dp_result_t *res, mp_error_t *err);
/* Whether a deadline has changed one of the session's answers: moved it to
 * the fallback family (while enumerating its lower sets or during an exact
 * solve) or left an infeasible answer without its least budget. Until then
 * its answers are those of a session without a deadline. */
int mp__dp_session_timed_out(const mp_dp_session_t *s);

/* The time objective's staircase of the session's family
 * (mp_dp_session_staircase up to every budget, with a work limit meant for
 * a caller that will solve many budgets: 12 times the reverse walk's steps,
 * clamped to 256 million .. a billion candidates, where one solve's caller
 * gets 64 million .. a billion). *points is malloc'd, the
 * caller frees it. deadline_ms (0: none) counts from now, as a solve's
 * does; a staircase that passes it changes no answer of the session (the
 * solves that follow have their own deadlines). 0, MP_ELIMIT (too large:
 * solve without it), or the pass's error (cancel, deadline, out of
 * memory), as an MP_E* code with err set. */
int mp__dp_session_optima(mp_dp_session_t *s, double deadline_ms, mp_dp_point_t **points,
                          size_t *n_points, mp_error_t *err);
/* Let the session's time-objective solves start their search at the
 * optimum the staircase `points` gives for the budget (points borrowed:
 * they must outlive the session's solves, or be unset with NULL first).
 * The points must be mp__dp_session_optima's from a session of the same
 * graph and options: they are used only when the family has as many lower
 * sets as n_sets says (the session that computed them). No answer changes
 * (mp__hint_t); the search finds it in one pass where it took several. */
void mp__dp_session_use_optima(mp_dp_session_t *s, const mp_dp_point_t *points, size_t n_points,
                               size_t n_sets);
/* The number of lower sets of the session's family. */
size_t mp__dp_session_sets(const mp_dp_session_t *s);
/* The forward passes its time-objective solves have run so far (tests). */
size_t mp__dp_session_passes(const mp_dp_session_t *s);

/* ---- The fallback family (dp_window.c) -------------------------------------- */

/* The window family's size for a graph of n activations: MP__WINDOW_WORK /
 * n sets, within [MP__WINDOW_MIN_SETS, MP__WINDOW_MAX_SETS]. */
#define MP__WINDOW_WORK 400000
#define MP__WINDOW_MIN_SETS 512
#define MP__WINDOW_MAX_SETS 4096
/* A lattice of at most this many lower sets is taken whole by the default
 * window (dp_window.c): the window of full width, every lower set. */
#define MP__WINDOW_WHOLE_SETS 16384

size_t mp__window_sets(size_t n_activations);
int mp__fallback_family(mp__dp_t *c, const mp_dp_options_t *o);

/* Whether c's family is every lower set (the exact DP proper), as opposed
 * to the approximate family or the window family of a fallback. */
static inline int mp__complete(const mp__dp_t *c) { return c->fam.exact && !c->fam.window; }

/* ---- One step of the model ---------------------------------------------- */

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
 * which the walks' pruning relies on.
 *
 * Saved bytes (graph.h; the simulator holds a node's from its last
 * computation before its backward step to that step) add sv(L_j) - sv(L_i),
 * the saved bytes of V: while V runs forward, those of its nodes computed
 * so far, held or for the moment of their computation; while V runs
 * backward, at most all of them. Nodes of later segments hold none: not
 * computed yet while V runs forward, and their backward steps, which free
 * them, are over while V runs backward. The nodes of L_i that hold theirs
 * while V runs are the ones that are not recomputed before their backward:
 * those kept (their saved bytes are in nk, so in the pair's k) and those that
 * the schedule does not need to recompute (mp__saved_held; nc, in k too). So
 * every held saved byte is counted once, and only while it may be live. The
 * term grows as L_i shrinks, like the others. */
static inline uint64_t mp__step_cost(const mp__dp_t *c, size_t i, size_t j) {
  if (c->acc == MP_ACCOUNTING_DEFAULT)
    return mp__sadd(mp__sadd(mp__sadd(mp__sdbl(c->m[j] - c->m[i]), c->gsrc[i]), c->max_ws),
                    c->sv[j] - c->sv[i]);
  return mp__sadd(mp__sdbl(c->m[j] - c->m[i]), c->back[j]);
}

/* Whether activation v of g, in a segment that is not the last one and not
 * kept (no successor in a later segment, recompute allowed), may still hold
 * its saved bytes from its forward computation until its backward step. The
 * strategy's schedule (schedule.c) recomputes such a node only when the
 * segment's backward needs its value: surely when v's backward reads its
 * output or an activation successor's backward reads its inputs (every
 * successor is in v's segment); otherwise it depends on the segment, and the
 * model counts the saved bytes as held. */
static inline int mp__saved_held(const mp_graph_t *g, uint32_t v) {
  const mp_node_t *nd = &g->nodes[v];
  size_t k;
  if (nd->bwd_reads == MP_BWD_READS_OUTPUT || nd->bwd_reads == MP_BWD_READS_BOTH) return 0;
  for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
    const mp_node_t *w = &g->nodes[g->succ[k]];
    if (w->kind == MP_KIND_ACTIVATION &&
        (w->bwd_reads == MP_BWD_READS_INPUTS || w->bwd_reads == MP_BWD_READS_BOTH))
      return 0;
  }
  return 1;
}

/* What a step L_i -> L_j keeps: m(W) (plus recompute:false nodes, and the
 * saved bytes that the segment's nodes hold from the forward pass on, see
 * mp__step_cost) and the time it does not charge, from scratch (the approx
 * family's walk). */
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
      m += c->nk[v] - c->nc[v]; /* nc[v] is in mr already */
      t += c->nt[v];
    }
    *mw = m;
    *tw = t;
  }
}

/* ---- Walks ------------------------------------------------------------- */

/* Cancel and deadline: 0 or MP_ECANCELED / MP_ETIMEDOUT. Passes call it
 * every few hundred thousand steps. */
static inline int mp__poll(mp__dp_t *c) {
  if (c->should_stop && c->should_stop(c->stop_arg)) return MP_ECANCELED;
  if (c->deadline_at > 0 && mp_lowerset_clock_ms() > c->deadline_at) return MP_ETIMEDOUT;
  return 0;
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
  /* The Lagrangian cut (forward passes with a time cut): a step is cut when
   * ch + lam_z * mw > lagoff_z for some z; ch and mw only grow as L_i
   * shrinks, so it is sound for the subsets too. lagbase_z converts back to
   * the bound value, for cut_t. */
  int nlag;
  const double *lam;
  double lagoff[MP__NLAM], lagbase[MP__NLAM];
  /* Exact family's forward passes: per cover edge, the best the pairs in
   * the walk's part below it hold (mp__agg_cut); NULL: none. agg_slack: the
   * margin its time cuts keep beyond the per-pair ones, which sum the same
   * times in another order. */
  const mp__agg_t *agg;
  double agg_slack;
  double cut_ch;     /* out: least ch cut (HUGE_VAL: none) */
  uint64_t cut_mw;   /* out: least mw cut (UINT64_MAX: none) */
  double cut_t;      /* out: least bound cut by the Lagrangian cut */
} mp__wlim_t;

static inline void mp__wlim_init(mp__wlim_t *wl, uint64_t budget, double chlim, uint64_t mwlim) {
  wl->budget = budget;
  wl->chlim = chlim;
  wl->mwlim = mwlim;
  wl->nlag = 0;
  wl->lam = NULL;
  wl->agg = NULL;
  wl->agg_slack = 0;
  wl->cut_ch = HUGE_VAL;
  wl->cut_mw = UINT64_MAX;
  wl->cut_t = HUGE_VAL;
}

/* The steps into L_j that pass the limits, in c->vis[0 .. *nv) (dp_forward.c). */
void mp__walk(mp__dp_t *c, size_t j, mp__wlim_t *wl, size_t *nv_out);

/* The steps into L_j for a reverse pass, each handed to visit(c, ctx, i,
 * cost, mw, ch) (i the smaller set) and cut, with everything below it, when
 * cost > qcap, mw > mwlim or ch > chlim. Returns the number of steps. The
 * exact family's walk is the tree walk of mp__walk, depth first, with the
 * steps handed over as they are found (a stack that stays small instead of
 * a list of every step); the walk is bound by memory latency, so a set's
 * children are found first, with their records and edge lists prefetched,
 * and handed over after: their cache misses overlap. Always inlined, so
 * that each pass gets its own copy with its visitor inlined too. */
typedef void (*mp__rvisit_t)(mp__dp_t *c, void *ctx, uint32_t i, uint64_t cost, uint64_t mw,
                             double ch);
/* Prefetch hook: `found` when a step into set i is found (before the batch
 * it belongs to is visited). */
typedef void (*mp__rhook_t)(mp__dp_t *c, void *ctx, uint32_t i);

static inline __attribute__((always_inline)) size_t
mp__rwalk(mp__dp_t *c, mp__rwalker_t *w, size_t j, uint64_t qcap, uint64_t mwlim, double chlim,
          mp__rvisit_t visit, mp__rhook_t found, void *ctx) {
  size_t last = c->fam.n_sets - 1, nw = 0;
  int into_v = j == last, dflt = c->acc == MP_ACCOUNTING_DEFAULT;
  if (c->fam.exact) {
    const mp__dedge_t *D = c->dedge;
    mp__rframe_t *st = w->stack;
    uint32_t *fmark = w->fmark;
    uint64_t mj = c->wset[j].m, tg = c->ctgt[j];
    uint32_t mark = (uint32_t)(j + 1), e;
    size_t sp = 0;
    for (e = c->fb_off[j]; e < c->fb_off[j + 1]; e++) fmark[c->fb[e]] = mark;
    st[sp].dlo = c->wset[j].dlo;
    st[sp].dhi = c->wset[j].dhi;
    st[sp].node = UINT32_MAX;
    st[sp].s = (uint32_t)j;
    st[sp].mw = 0;
    st[sp].cost = 0;
    st[sp].sw = 0;
    st[sp].ch = 0;
    sp++;
    while (sp > 0) {
      const mp__rframe_t par = st[--sp];
      size_t first = sp, k;
      for (e = par.dlo; e < par.dhi; e++) {
        const mp__dedge_t *d = &D[e];
        uint32_t v = d->v;
        uint64_t mw = par.mw, cost, sw = par.sw;
        double ch = par.ch;
        if (v >= par.node) break;
        if (into_v) {
          if (!dflt) ch += c->nt[v];
        } else if (fmark[v] == mark || c->nofree[v]) {
          mw = mp__sadd(mw, c->nk[v]);
        } else {
          ch += c->nt[v];
          mw = mp__sadd(mw, c->nc[v]);
        }
        sw = mp__sadd(sw, c->nsv[v]);
        cost = mp__sadd(mp__sadd(mp__sadd(mp__sdbl(mj - d->m), d->csrc), tg), sw);
        w->work++;
        if (cost > qcap || mw > mwlim || ch > chlim) continue; /* and every subset */
        if (found) found(c, ctx, d->s);
        __builtin_prefetch(&D[d->dlo]);
        st[sp].dlo = d->dlo;
        st[sp].dhi = d->dhi;
        st[sp].node = v;
        st[sp].s = d->s;
        st[sp].mw = mw;
        st[sp].cost = cost;
        st[sp].sw = sw;
        st[sp].ch = ch;
        sp++;
      }
      nw += sp - first;
      for (k = first; k < sp; k++) visit(c, ctx, st[k].s, st[k].cost, st[k].mw, st[k].ch);
    }
  } else {
    mp__wlim_t wl;
    size_t q;
    mp__wlim_init(&wl, qcap, chlim, mwlim);
    mp__walk(c, j, &wl, &nw);
    w->work += nw;
    for (q = 0; q < nw; q++) {
      const mp__vis_t *x = &c->vis[q];
      visit(c, ctx, x->i, x->cost, x->mw, x->ch);
    }
  }
  return nw;
}

/* ---- Reverse passes (dp_reverse.c) ------------------------------------------ */

int mp__reverse_q(mp__dp_t *c, uint64_t qcap, int with_time, double tcap);
int mp__reverse_kept(mp__dp_t *c, uint64_t budget, uint64_t cap_u);
double mp__qchain_charged(const mp__dp_t *c);

/* The time bound at budget B of a pair with kept memory k (<= B) at set j
 * (charged time still to come): the largest of ht and the Lagrangian bounds.
 * (With B far above m(V) the Lagrangian ones are hugely negative, never
 * above ht, so their rounding does not matter.) */
static inline double mp__tbound(const mp__dp_t *c, size_t j, uint64_t k, uint64_t B) {
  double b = c->rr[j].ht, room = B > k ? (double)(B - k) : 0;
  int z;
  for (z = 0; z < c->nlam; z++) {
    double v = c->rr[j].hl[z] - c->lam[z] * room;
    if (v > b) b = v;
  }
  return b;
}

size_t mp__par_threads(const mp__dp_t *c, size_t want);
int mp__par_pass(mp__dp_t *c, mp__par_job_t *job, size_t threads, void **ctx, size_t *used);

/* One thread's share of a reverse pass, its argument in the pool: the
 * context, the thread's walk state and the pass's own record. The threads'
 * records sit side by side (mp__par_pass), and each is written at every step
 * (w.work): one cache line each, so that no two threads write the same. */
typedef struct {
  _Alignas(64) mp__dp_t *c;
  mp__rwalker_t w;
  void *ctx;
} mp__pw_t;

/* Thread t, after a source it pushed: thread 0 polls every 2^18 steps. */
static inline int mp__pw_poll(mp__pw_t *me, size_t t) {
  if (t != 0 || me->w.work <= (1u << 18)) return 0;
  me->w.work = 0;
  return mp__poll(me->c);
}

/* ---- The forward passes (dp_forward.c) -------------------------------------- */

/* What is known before a solve, as bounds. known/feasible/charged/kept/
 * min_peak: what the approx family found at the same budget and objective
 * (exact family only): the approx family is a subfamily, so its plan is a
 * plan of the exact family too (exact is never worse), and its least
 * feasible budget is at least the exact one. opt_known/opt_charged (time
 * objective, any family): this family's own least charged time at the
 * budget, read from its staircase (mp__dp_session_use_optima); the search
 * then starts its cut there. Neither changes the answer, only how fast it
 * is found: a cut below the optimum fails and grows, one above it gives
 * the uncut DP's answer. */
typedef struct {
  int known;
  int feasible;
  double charged;      /* t(V) - a of its answer */
  uint64_t kept;       /* k of its answer */
  uint64_t min_peak;   /* when infeasible: its least feasible activation budget */
  int opt_known;
  double opt_charged;  /* the optimum t(V) - a at this budget */
} mp__hint_t;

static inline void mp__hint_init(mp__hint_t *h) { memset(h, 0, sizeof(*h)); }

int mp__solve_bounded(mp__dp_t *c, mp_objective_t obj, uint64_t budget, const mp__hint_t *hint);
int mp__solve_minpeak(mp__dp_t *c, const mp__hint_t *hint, uint64_t *peak);
int mp__solve_frontier(mp__dp_t *c);

/* ---- The staircase (dp_staircase.c) ----------------------------------------- */

int mp__staircase_points(mp__dp_t *c, uint64_t cst, uint64_t max_budget, size_t max_work,
                         size_t min_work, mp_dp_point_t **points, size_t *n_points);

#endif
