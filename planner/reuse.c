/* reuse.c - the reuse record (plan_internal.h): what the DP solves of one
 * plan (at its budget, at the DP's least budget, the slack walk of
 * cand_recompute.c) and the plans of one caller on one graph (mp_fit, a
 * sampled frontier) share, and the local searches' answers they share.
 *
 * Two things of the DP are shared. A DP session per family holds the lower
 * sets, their figures and the reverse pass, which hold at every budget, so a
 * later solve costs a forward search. And the sessions' answers: a session's
 * solves are pure (dp.h: the answer at a budget depends on the budget
 * alone), so an answer, once found, is kept and given again, at its budget
 * and at every budget from its model peak up to it, where it is the answer
 * too (mp__answer_holds). The plans of a fit or a frontier ask the same
 * model budgets many times, since every slack walk climbs the same fixed
 * ladder, and a frontier's search for its breakpoints asks budgets just
 * below the ones it solved. Sharing changes no answer: a session
 * never bounds a solve by its earlier answers, which would break ties
 * differently from a fresh solve.
 *
 * A session is one thread's at a time (its search scratch is in it), so
 * plans on parallel threads (plan_many.c) each have a record of their own,
 * with their own sessions, sharing one book of answers under a mutex.
 *
 * Under a deadline (mp_plan_options_t.deadline_ms; the daemon enforces its
 * plan timeout through should_stop instead) the same holds. A deadline
 * changes an exact solve's answer only when it passes: the exact DP then
 * falls back to the window family, and the answer depends on the clock.
 * Until then the answer is the deadline-free one, so it is kept and given
 * again like any other; each solve runs under its caller's deadline, not
 * the session's. A session the deadline has moved to the
 * fallback (mp__dp_session_timed_out) answers the solve that moved it and
 * is dropped, its answer not kept; the next solve makes a new session, as a
 * fresh mp_dp_solve would have.
 *
 * The book also keeps the local searches' answers (cand_refine.c), by
 * start and goal: a search depends on them and the device alone, and the
 * plans of a frontier or a fit below the DP's least budget search from the
 * same few starts (the DP's least plans, Chen's least-peak one), so each
 * search runs once.
 *
 * A record for many plans (mp__reuse_use_staircases: a frontier's, a fit's
 * of several budgets) also shares each family's staircase: the least
 * charged time at every budget, in one reverse pass (dp_staircase.c),
 * computed by the first session that needs it and lent to every session of
 * the book. A solve then starts its search at the optimum and answers in
 * one forward pass, instead of climbing to it in several that fail. The
 * answers are the same: the search's cut moves, not what it finds. When the
 * staircase passes its work limit or the caller's deadline, the solves
 * climb from below.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"
#include "plan_internal.h"

/* A session's answer at one budget. */
typedef struct {
  uint64_t budget;
  mp_dp_result_t r; /* owns its strategy */
} mp__answer_t;

/* The answers a book keeps, all families together, at most this many
 * bytes of strategies (4 bytes a node): beyond, solves are answered but not
 * kept. ResNet-152's 61-budget fit keeps about 600 answers of 2 KB. */
#define MP__BOOK_BYTES ((size_t)64 << 20)

/* A local search's answer (cand_refine.c) from one start, under one
 * device: the plan it found, or none when no move helped. */
typedef struct {
  mp_strategy_t *start;
  int far;              /* the search's moves (cand_refine.c) */
  uint64_t cap;         /* its goal: 0 the peak, else the recomputation under this cap */
  mp_strategy_t *found; /* NULL: no move helped */
  mp_device_t dev;
} mp__refined_t;

typedef struct {
  pthread_mutex_t lock;
  int refs; /* records sharing the book */
  struct {
    int set;             /* d holds the options its answers were solved under */
    mp_dp_options_t d;
    mp__answer_t *ans;   /* by ascending budget */
    size_t n, cap;
  } fam[2];              /* [0] approx, [1] exact */
  size_t bytes;          /* of the kept strategies */
  int stairs;            /* share the families' staircases (many plans; set
                          * before the plans start, read-only after) */
  pthread_cond_t stair_done; /* signalled when a staircase's state leaves 1 */
  struct {
    int state;           /* 0: not tried, 1: being computed, 2: held, -1: none */
    mp_dp_options_t d;   /* the options of the session that computed it */
    mp_dp_point_t *pts;  /* held: the staircase, lent to the sessions */
    size_t n, sets;      /* its points; the lower sets of its family */
  } stair[2];
  mp__refined_t *refined; /* the local searches' answers, in the order made */
  size_t n_refined, cap_refined;
  size_t n_refine_searches; /* searches run for the book (mp__reuse_refined_count) */
} mp__book_t;

struct mp__reuse_s {
  const mp_graph_t *g;
  struct {
    int made;          /* a session was asked for (s may be NULL: it failed) */
    mp_dp_options_t d; /* the options it was made with */
    mp_dp_session_t *s;
    int lent;          /* s was given the book's staircase, or there is none */
  } fam[2];            /* [0] approx, [1] exact */
  mp__book_t *book;
};

static mp__reuse_t *mp__reuse_make(const mp_graph_t *g, mp__book_t *book) {
  mp__reuse_t *u = calloc(1, sizeof(*u));
  if (u == NULL) return NULL;
  u->g = g;
  if (book == NULL) {
    if ((book = calloc(1, sizeof(*book))) == NULL || pthread_mutex_init(&book->lock, NULL) != 0) {
      free(book);
      free(u);
      return NULL;
    }
    if (pthread_cond_init(&book->stair_done, NULL) != 0) {
      pthread_mutex_destroy(&book->lock);
      free(book);
      free(u);
      return NULL;
    }
  }
  pthread_mutex_lock(&book->lock);
  book->refs++;
  pthread_mutex_unlock(&book->lock);
  u->book = book;
  return u;
}

mp__reuse_t *mp__reuse_new(const mp_graph_t *g) { return mp__reuse_make(g, NULL); }

mp__reuse_t *mp__reuse_new_sharing(mp__reuse_t *other) { return mp__reuse_make(other->g, other->book); }

const mp_graph_t *mp__reuse_graph(const mp__reuse_t *u) { return u->g; }

static void mp__book_release(mp__book_t *b) {
  int k, last;
  size_t i;
  pthread_mutex_lock(&b->lock);
  last = --b->refs == 0;
  pthread_mutex_unlock(&b->lock);
  if (!last) return;
  for (k = 0; k < 2; k++) {
    for (i = 0; i < b->fam[k].n; i++) mp_dp_result_free(&b->fam[k].ans[i].r);
    free(b->fam[k].ans);
    free(b->stair[k].pts);
  }
  for (i = 0; i < b->n_refined; i++) {
    mp_strategy_free(b->refined[i].start);
    mp_strategy_free(b->refined[i].found);
  }
  free(b->refined);
  pthread_cond_destroy(&b->stair_done);
  pthread_mutex_destroy(&b->lock);
  free(b);
}

void mp__reuse_use_staircases(mp__reuse_t *u) {
  if (u != NULL) u->book->stairs = 1; /* before the plans' threads start */
}

void mp__reuse_free(mp__reuse_t *u) {
  if (u == NULL) return;
  mp_dp_session_free(u->fam[0].s);
  mp_dp_session_free(u->fam[1].s);
  mp__book_release(u->book);
  free(u);
}

/* Would a session made with `a` answer a solve with `b` (budgets and
 * deadlines aside: only answers no deadline touched are kept)? */
static int mp__same_dp(const mp_dp_options_t *a, const mp_dp_options_t *b) {
  return a->exact == b->exact && a->window == b->window && a->objective == b->objective && a->accounting == b->accounting &&
         a->max_lower_sets == b->max_lower_sets && a->window_sets == b->window_sets &&
         a->should_stop == b->should_stop &&
         a->stop_arg == b->stop_arg && a->tuning == b->tuning && a->threads == b->threads;
}

mp_dp_session_t *mp__reuse_session(mp__reuse_t *u, const mp_dp_options_t *d, int *rc, mp_error_t *err) {
  int k = d->exact ? 1 : 0;
  *rc = 0;
  if (!u->fam[k].made) {
    u->fam[k].made = 1;
    u->fam[k].d = *d;
    if ((*rc = mp_dp_session_new(u->g, d, &u->fam[k].s, err)) != 0) {
      u->fam[k].s = NULL;
      u->fam[k].made = 0; /* the error is the caller's; a later call tries again */
      return NULL;
    }
  }
  return mp__same_dp(&u->fam[k].d, d) ? u->fam[k].s : NULL;
}

/* The index of the first answer of family k at a budget >= budget (the
 * book's lock held). */
static size_t mp__book_at(const mp__book_t *b, int k, uint64_t budget) {
  size_t lo = 0, hi = b->fam[k].n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->fam[k].ans[mid].budget < budget) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* *dst = a copy of src with its own strategy; 0 or MP_ENOMEM (*dst zeroed). */
static int mp__result_copy(const mp_dp_result_t *src, mp_dp_result_t *dst) {
  *dst = *src;
  if (src->strategy != NULL && (dst->strategy = mp_strategy_copy(src->strategy)) == NULL) {
    memset(dst, 0, sizeof(*dst));
    return MP_ENOMEM;
  }
  return 0;
}

/* Whether the answer `a`, solved at a budget at or above `budget`, is the
 * answer at `budget` too. A solve at B picks, among the plans whose model
 * peak fits B, the best by an order that does not depend on B (least
 * recomputation, then least kept memory, then the tie rules of
 * dp_forward.c, mp__tie_better, which compare pairs along a path and never
 * the budget), and every state keeps the pairs that no pair fitting B
 * dominates. Lowering the budget to B' only removes plans: the answer at B
 * still fits B' when its model peak does, no plan that fits B' beats it
 * (each fits B too), and the states on its path keep its pairs (a pair that
 * dominates one at B' fits B too). So the answer at B holds at every
 * budget from its model peak to B. A budget below a family's least one
 * has no plan whatever it is, with the same least budget. */
static int mp__answer_holds(const mp__answer_t *a, uint64_t budget) {
  if (a->budget == budget) return 1;
  if (a->r.feasible) return a->r.model_peak <= budget;
  return a->r.min_feasible_budget > a->budget; /* (0: unknown) */
}

/* The book's answer for family k under options d at `budget`, copied into
 * *dr: 1 when it has one, 0 when not, or MP_ENOMEM. The answer is the one
 * kept at `budget`, or one kept at a larger budget that holds there
 * (mp__answer_holds): of the answers at or above `budget`, only the first
 * can (an answer at a larger budget that held would be the first's too). */
static int mp__book_find(mp__book_t *b, int k, const mp_dp_options_t *d, uint64_t budget,
                         mp_dp_result_t *dr) {
  int found = 0;
  pthread_mutex_lock(&b->lock);
  if (b->fam[k].set && mp__same_dp(&b->fam[k].d, d)) {
    size_t i = mp__book_at(b, k, budget);
    if (i < b->fam[k].n && mp__answer_holds(&b->fam[k].ans[i], budget))
      found = mp__result_copy(&b->fam[k].ans[i].r, dr) == 0 ? 1 : MP_ENOMEM;
  }
  pthread_mutex_unlock(&b->lock);
  return found;
}

/* Keep a copy of dr, family k's answer under d at `budget`, unless the
 * book is full, holds answers under other options, has it already (another
 * thread solved the same budget) or memory runs out: a book that does not
 * keep an answer only solves again. */
static void mp__book_keep(mp__book_t *b, int k, const mp_dp_options_t *d, uint64_t budget,
                          const mp_dp_result_t *dr) {
  size_t bytes = dr->strategy ? dr->strategy->n_nodes * sizeof(uint32_t) : 0, i;
  mp__answer_t a;
  pthread_mutex_lock(&b->lock);
  if (!b->fam[k].set) {
    b->fam[k].set = 1;
    b->fam[k].d = *d;
  }
  if (!mp__same_dp(&b->fam[k].d, d) || b->bytes + bytes > MP__BOOK_BYTES) goto out;
  i = mp__book_at(b, k, budget);
  if (i < b->fam[k].n && b->fam[k].ans[i].budget == budget) goto out;
  if (b->fam[k].n == b->fam[k].cap) {
    size_t nc = b->fam[k].cap ? 2 * b->fam[k].cap : 32;
    mp__answer_t *na = realloc(b->fam[k].ans, nc * sizeof(*na));
    if (na == NULL) goto out;
    b->fam[k].ans = na;
    b->fam[k].cap = nc;
  }
  a.budget = budget;
  if (mp__result_copy(dr, &a.r) != 0) goto out;
  memmove(&b->fam[k].ans[i + 1], &b->fam[k].ans[i], (b->fam[k].n - i) * sizeof(a));
  b->fam[k].ans[i] = a;
  b->fam[k].n++;
  b->bytes += bytes;
out:
  pthread_mutex_unlock(&b->lock);
}

/* Lend session s (family k, made under d) the book's staircase of the
 * family, computing it first when no session has tried. A thread that
 * finds another computing it waits: the staircase's reverse pass runs on
 * the session's threads, and a solve beside it, without the staircase,
 * would compete for them and climb the long way. 0, or the error that
 * stops the plan (cancel); a
 * staircase that fails otherwise (its work limit, the caller's deadline,
 * out of memory) is not used, and the solves climb as they would without.
 * (Under a deadline the staircase's time counts against it like a solve's:
 * the answers it does not move are the same.) */
static int mp__reuse_stair(mp__reuse_t *u, int k, const mp_dp_options_t *d, mp_dp_session_t *s,
                           mp_error_t *err) {
  mp__book_t *b = u->book;
  mp_dp_point_t *pts = NULL;
  size_t n = 0;
  int state, rc;
  pthread_mutex_lock(&b->lock);
  while (b->stair[k].state == 1) pthread_cond_wait(&b->stair_done, &b->lock);
  state = b->stair[k].state;
  if (state == 0) {
    b->stair[k].state = 1;
    b->stair[k].d = *d;
  } else if (state == 2 && mp__same_dp(&b->stair[k].d, d)) {
    mp__dp_session_use_optima(s, b->stair[k].pts, b->stair[k].n, b->stair[k].sets);
  }
  if (state != 0) u->fam[k].lent = 1;
  pthread_mutex_unlock(&b->lock);
  if (state != 0) return 0;
  rc = mp__dp_session_optima(s, d->deadline_ms, &pts, &n, err);
  pthread_mutex_lock(&b->lock);
  if (rc == 0) {
    b->stair[k].pts = pts;
    b->stair[k].n = n;
    b->stair[k].sets = mp__dp_session_sets(s);
    b->stair[k].state = 2;
    mp__dp_session_use_optima(s, pts, n, b->stair[k].sets);
  } else {
    b->stair[k].state = rc == MP_ECANCELED ? 0 : -1;
  }
  if (rc != MP_ECANCELED) u->fam[k].lent = 1;
  pthread_cond_broadcast(&b->stair_done);
  pthread_mutex_unlock(&b->lock);
  if (rc == MP_ECANCELED) return rc;
  mp_error_clear(err);
  return 0;
}

int mp__reuse_solve(const mp_plan_options_t *o, const mp_dp_options_t *d, mp_dp_result_t *dr,
                    mp_error_t *err) {
  mp__reuse_t *u = o->reuse;
  int rc, k = d->exact ? 1 : 0;
  mp_dp_session_t *s = mp__reuse_session(u, d, &rc, err);
  if (rc != 0) {
    memset(dr, 0, sizeof(*dr));
    return rc;
  }
  if (s == NULL) return mp_dp_solve(u->g, d, dr, err);
  if ((rc = mp__book_find(u->book, k, d, d->budget, dr)) == 1) return 0;
  if (rc != 0) return mp_error_set(err, rc, "", "out of memory");
  if (u->book->stairs && !u->fam[k].lent && d->objective == MP_OBJECTIVE_TIME &&
      (rc = mp__reuse_stair(u, k, d, s, err)) != 0) {
    memset(dr, 0, sizeof(*dr));
    return rc;
  }
  rc = mp__dp_session_solve_until(s, d->budget, d->deadline_ms, dr, err);
  if (mp__dp_session_timed_out(s)) {
    /* on the fallback because of the clock: answer, keep nothing */
    mp_dp_session_free(s);
    u->fam[k].s = NULL;
    u->fam[k].made = 0;
    u->fam[k].lent = 0;
    return rc;
  }
  if (rc != 0) return rc;
  mp__book_keep(u->book, k, d, d->budget, dr);
  return 0;
}

/* ---- The local searches' answers ---------------------------------------- */

/* The entry for start under dev (the lock held), or NULL. */
static mp__refined_t *mp__refined_at(mp__book_t *b, const mp_device_t *dev,
                                     const mp_strategy_t *start, int far, uint64_t cap) {
  size_t i;
  for (i = 0; i < b->n_refined; i++)
    if (b->refined[i].far == far && b->refined[i].cap == cap && mp_device_same(&b->refined[i].dev, dev) &&
        mp_strategy_equal(b->refined[i].start, start))
      return &b->refined[i];
  return NULL;
}

int mp__reuse_refined_find(mp__reuse_t *u, const mp_graph_t *g, const mp_device_t *dev,
                           const mp_strategy_t *start, int far, uint64_t cap,
                           mp_strategy_t **found) {
  mp__refined_t *e;
  int rc = 0;
  *found = NULL;
  if (u == NULL || u->g != g) return 0;
  pthread_mutex_lock(&u->book->lock);
  if ((e = mp__refined_at(u->book, dev, start, far, cap)) != NULL) {
    rc = 1;
    if (e->found != NULL && (*found = mp_strategy_copy(e->found)) == NULL) rc = MP_ENOMEM;
  }
  if (rc == 0) u->book->n_refine_searches++; /* the caller searches now */
  pthread_mutex_unlock(&u->book->lock);
  return rc;
}

void mp__reuse_refined_keep(mp__reuse_t *u, const mp_graph_t *g, const mp_device_t *dev,
                            const mp_strategy_t *start, int far, uint64_t cap,
                            const mp_strategy_t *found) {
  mp__book_t *b;
  mp__refined_t e;
  size_t bytes;
  if (u == NULL || u->g != g) return;
  b = u->book;
  bytes = (start->n_nodes + (found ? found->n_nodes : 0)) * sizeof(uint32_t);
  pthread_mutex_lock(&b->lock);
  if (b->bytes + bytes > MP__BOOK_BYTES || mp__refined_at(b, dev, start, far, cap) != NULL) goto out;
  if (b->n_refined == b->cap_refined) {
    size_t nc = b->cap_refined ? 2 * b->cap_refined : 8;
    mp__refined_t *na = realloc(b->refined, nc * sizeof(*na));
    if (na == NULL) goto out;
    b->refined = na;
    b->cap_refined = nc;
  }
  e.dev = *dev;
  e.far = far;
  e.cap = cap;
  e.start = mp_strategy_copy(start);
  e.found = found ? mp_strategy_copy(found) : NULL;
  if (e.start == NULL || (found != NULL && e.found == NULL)) {
    mp_strategy_free(e.start);
    mp_strategy_free(e.found);
    goto out;
  }
  b->refined[b->n_refined++] = e;
  b->bytes += bytes;
out:
  pthread_mutex_unlock(&b->lock);
}

size_t mp__reuse_refined_count(const mp__reuse_t *u) {
  size_t n;
  pthread_mutex_lock(&u->book->lock);
  n = u->book->n_refine_searches;
  pthread_mutex_unlock(&u->book->lock);
  return n;
}
