/* threadpool.c - the level-synchronous parallel loop (threadpool.h).
 *
 * Each level has a counter of the items claimed so far; a thread claims the
 * next with one atomic add and runs it, until the level is used up, then
 * waits at a barrier for the others. The counter costs one atomic add per
 * item and shares out items of very different lengths evenly; the barrier
 * (two with a check) is the price of a level, so a job gains from threads
 * only when its levels hold many items. The threads wait at a start gate
 * until all have been started, so that a failed start leaves no thread
 * inside the job (the barrier counts the threads that run). With one thread
 * the same loop runs in the caller's thread without barriers.
 */
#include "threadpool.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"

typedef struct mp__pool_s mp__pool_t;

/* One thread of a run. */
typedef struct {
  mp__pool_t *p;
  size_t t;  /* 0: the caller's thread */
  void *arg;
  pthread_t tid;
} mp__pool_thr_t;

struct mp__pool_s {
  const mp__par_job_t *job;
  size_t nthreads;
  atomic_size_t *next;   /* per level: the items claimed so far */
  atomic_int stop;       /* 0, or the code the job stopped with */
  pthread_barrier_t bar;
  pthread_mutex_t mu;    /* the start gate: */
  pthread_cond_t cv;
  int go;                /* 0 wait, 1 run, -1 leave (not every thread started) */
};

static inline void mp__pool_stop(mp__pool_t *p, int rc) {
  int zero = 0;
  atomic_compare_exchange_strong(&p->stop, &zero, rc);
}

static inline int mp__pool_stopped(mp__pool_t *p) {
  return atomic_load_explicit(&p->stop, memory_order_relaxed);
}

/* One thread's share of the job, level by level from the last down. */
static void mp__pool_levels(mp__pool_thr_t *me) {
  mp__pool_t *p = me->p;
  const mp__par_job_t *job = p->job;
  size_t l;
  for (l = job->n_levels; l-- > 0;) {
    size_t lo = job->bound[l], hi = job->bound[l + 1], k;
    int rc;
    while (mp__pool_stopped(p) == 0 &&
           (k = atomic_fetch_add_explicit(&p->next[l], 1, memory_order_relaxed)) < hi - lo) {
      if ((rc = job->item(me->arg, me->t, p->nthreads, hi - 1 - k)) != 0) {
        mp__pool_stop(p, rc);
        break;
      }
    }
    /* Once stopped, the levels left are passed through without items rather
     * than left: a thread that left could not tell whether another one had
     * seen the stop before its barrier or after, and would leave it there. */
    if (p->nthreads > 1) pthread_barrier_wait(&p->bar);
    /* the level's outcome is complete, the same for any thread count; a
     * second barrier keeps the next level's from mixing in before the check */
    if (job->level_check != NULL) {
      if (me->t == 0 && mp__pool_stopped(p) == 0 && (rc = job->level_check(me->arg, lo, hi)) != 0)
        mp__pool_stop(p, rc);
      if (p->nthreads > 1) pthread_barrier_wait(&p->bar);
    }
    if (job->level_after != NULL) job->level_after(me->arg, me->t, p->nthreads, lo, hi);
  }
}

static void *mp__pool_thread(void *arg) {
  mp__pool_thr_t *me = arg;
  mp__pool_t *p = me->p;
  int go;
  pthread_mutex_lock(&p->mu);
  while ((go = p->go) == 0) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  if (go > 0) mp__pool_levels(me);
  return NULL;
}

int mp__par_run(const mp__par_job_t *job, void *const *args, size_t threads, size_t *used) {
  mp__pool_t p;
  mp__pool_thr_t *wk;
  size_t l, t, started = 1;
  int rc, sync = 0, gate = 0;
  *used = 1;
  if (threads < 1) threads = 1;
  p.job = job;
  p.next = malloc((job->n_levels ? job->n_levels : 1) * sizeof(*p.next));
  wk = calloc(threads, sizeof(*wk));
  if (p.next == NULL || wk == NULL) {
    rc = MP_ENOMEM;
    goto done;
  }
  for (l = 0; l < job->n_levels; l++) atomic_init(&p.next[l], 0);
  atomic_init(&p.stop, 0);
  for (t = 0; t < threads; t++) {
    wk[t].p = &p;
    wk[t].t = t;
    wk[t].arg = args[t];
  }
  p.nthreads = 1;
  if (threads > 1 && pthread_mutex_init(&p.mu, NULL) == 0) {
    if (pthread_cond_init(&p.cv, NULL) == 0) {
      gate = 1;
      p.go = 0;
      for (; started < threads; started++)
        if (pthread_create(&wk[started].tid, NULL, mp__pool_thread, &wk[started]) != 0) break;
      /* the barrier counts the threads that started */
      if (started > 1 && pthread_barrier_init(&p.bar, NULL, (unsigned)started) == 0) {
        p.nthreads = started;
        sync = 1;
      }
      pthread_mutex_lock(&p.mu);
      p.go = sync ? 1 : -1;
      pthread_cond_broadcast(&p.cv);
      pthread_mutex_unlock(&p.mu);
      if (!sync) {
        for (t = 1; t < started; t++) pthread_join(wk[t].tid, NULL);
        started = 1;
      }
    } else {
      pthread_mutex_destroy(&p.mu);
    }
  }
  *used = started;
  mp__pool_levels(&wk[0]);
  for (t = 1; t < started; t++) pthread_join(wk[t].tid, NULL);
  if (sync) pthread_barrier_destroy(&p.bar);
  if (gate) {
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
  }
  rc = atomic_load(&p.stop);
done:
  free(wk);
  free(p.next);
  return rc;
}
