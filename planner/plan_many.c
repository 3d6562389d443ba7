/* plan_many.c - mp__plan_many (plan_internal.h): plans at several budgets
 * on one graph, on parallel threads, for the callers that make many
 * independent plans (mp_fit, a sampled frontier).
 *
 * Each plan is mp_plan's at its budget, whatever thread makes it: the
 * threads share nothing that changes an answer. Each has a reuse record of
 * its own (a DP session is one thread's at a time), sharing one book of DP
 * answers (reuse.c), so a budget one thread solved is not solved again by
 * another. Each thread plans a run of consecutive budgets in order, and
 * when done takes budgets from the end of the longest run left: threads that
 * took budgets in turn climbed the same slack-walk rungs side by side and
 * solved each twice at once (cand_recompute.c). With one thread the
 * caller's thread plans, in order.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "progress.h"

/* The budgets are split into one run of consecutive indices per thread; a
 * thread plans its run in order, and when it is done takes the last budget
 * of the longest run left. */
typedef struct {
  size_t next, end; /* [next, end): the budgets left in the run */
} mp__run_t;

typedef struct {
  const mp_graph_t *g;
  const mp_plan_options_t *o;
  double t0;
  const uint64_t *budgets;
  size_t n;
  mp_plan_result_t *results;
  pthread_mutex_t lock;
  mp__run_t *runs;  /* one per thread */
  size_t nt;
  int rc;           /* the first failure's, 0 while none */
  mp_error_t err;
} mp__many_t;

/* The next budget thread t plans (m->n: none left), the lock held. */
static size_t mp__many_take(mp__many_t *m, size_t t) {
  size_t j, best = t;
  if (m->rc != 0) return m->n;
  if (m->runs[t].next < m->runs[t].end) return m->runs[t].next++;
  for (j = 0; j < m->nt; j++)
    if (m->runs[j].end - m->runs[j].next > m->runs[best].end - m->runs[best].next) best = j;
  if (m->runs[best].next == m->runs[best].end) return m->n;
  return --m->runs[best].end;
}

/* One plan at budgets[i] with record u; 0 or the plan's error. */
static int mp__many_one(mp__many_t *m, mp__reuse_t *u, size_t i, mp_error_t *err) {
  mp_plan_options_t po = *m->o;
  int rc;
  if ((rc = mp__plan_stop(m->o, m->t0 < 0 ? mp__now_ms() : m->t0, err)) != 0) return rc;
  po.budget = m->budgets[i];
  po.reuse = u;
  if (m->o->deadline_ms > 0 && m->t0 >= 0) po.deadline_ms = m->o->deadline_ms - (mp__now_ms() - m->t0);
  return mp_plan(m->g, &po, &m->results[i], err);
}

/* A thread's loop: take the next budget and plan it, until none is left or
 * some plan failed. The first failure is kept, and stops the other threads'
 * plans through the shared should_stop. */
static void mp__many_run(mp__many_t *m, size_t t, mp__reuse_t *u) {
  for (;;) {
    size_t i;
    int rc;
    mp_error_t e;
    pthread_mutex_lock(&m->lock);
    i = mp__many_take(m, t);
    pthread_mutex_unlock(&m->lock);
    if (i == m->n) return;
    mp_error_clear(&e);
    if ((rc = mp__many_one(m, u, i, &e)) == 0) continue;
    pthread_mutex_lock(&m->lock);
    if (m->rc == 0) {
      m->rc = rc;
      m->err = e;
    }
    pthread_mutex_unlock(&m->lock);
    if (m->o->should_stop == mp__serial_poll) mp__serial_abort(m->o->stop_arg);
    return;
  }
}

typedef struct {
  mp__many_t *m;
  size_t t;
  mp__reuse_t *u;
} mp__many_thread_t;

static void *mp__many_thread(void *arg) {
  mp__many_thread_t *t = arg;
  mp__many_run(t->m, t->t, t->u);
  return NULL;
}

int mp__many_open(const mp_graph_t *g, const mp_plan_options_t *o, mp__many_ctx_t *c, mp_error_t *err) {
  int rc;
  memset(c, 0, sizeof(*c));
  c->o = *o;
  if (o->threads > 1) {
    if ((rc = mp__serial_wrap(o, &c->serial, &c->o)) != 0) return mp_error_set(err, rc, "", "out of memory");
    c->serial_on = 1;
  }
  c->o.reuse = mp__reuse_new(g); /* NULL (out of memory): no sharing */
  return 0;
}

void mp__many_close(mp__many_ctx_t *c) {
  mp__reuse_free(c->o.reuse);
  if (c->serial_on) mp__serial_done(&c->serial);
  memset(c, 0, sizeof(*c));
}

int mp__plan_many(const mp_graph_t *g, const mp_plan_options_t *o, double t0, const uint64_t *budgets,
                  size_t n, mp_plan_result_t *results, mp_error_t *err) {
  mp__many_t m;
  mp__many_thread_t *th = NULL;
  pthread_t *tid = NULL;
  size_t i, nt = o->threads > 1 && o->should_stop == mp__serial_poll ? o->threads : 1, started = 0;

  memset(results, 0, n * sizeof(*results));
  memset(&m, 0, sizeof(m));
  m.g = g;
  m.o = o;
  m.t0 = t0;
  m.budgets = budgets;
  m.n = n;
  m.results = results;
  if (nt > n) nt = n;
  if (nt < 1) nt = 1;
  if (pthread_mutex_init(&m.lock, NULL) != 0) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  if (nt > 1 && ((th = calloc(nt, sizeof(*th))) == NULL || (tid = calloc(nt, sizeof(*tid))) == NULL))
    nt = 1; /* plan on this thread alone */
  if ((m.runs = calloc(nt, sizeof(*m.runs))) == NULL) {
    free(th);
    free(tid);
    pthread_mutex_destroy(&m.lock);
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  }
  for (i = 0; i < nt; i++) {
    m.runs[i].next = n * i / nt;
    m.runs[i].end = n * (i + 1) / nt;
  }
  m.nt = nt;
  /* thread 0 is this one, with the caller's record; the others get records
   * sharing its book (or none when the caller has none: out of memory).
   * A thread that cannot start leaves its run to the others. */
  for (i = 1; i < nt; i++) {
    th[i].m = &m;
    th[i].t = i;
    th[i].u = o->reuse ? mp__reuse_new_sharing(o->reuse) : NULL;
    if (o->reuse && th[i].u == NULL) break;
    if (pthread_create(&tid[i], NULL, mp__many_thread, &th[i]) != 0) {
      mp__reuse_free(th[i].u);
      break;
    }
    started = i;
  }
  mp__many_run(&m, 0, o->reuse);
  for (i = 1; i <= started; i++) {
    pthread_join(tid[i], NULL);
    mp__reuse_free(th[i].u);
  }
  free(th);
  free(tid);
  free(m.runs);
  pthread_mutex_destroy(&m.lock);
  if (m.rc != 0) {
    for (i = 0; i < n; i++) mp_plan_result_free(&results[i]);
    if (err) *err = m.err;
    return m.rc;
  }
  return 0;
}
