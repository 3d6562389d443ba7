/* threadpool.h - a level-synchronous parallel loop for the planner's passes
 * (private: mp__ names, not part of the library's API).
 *
 * A job is a row of levels, each a range of items. The items of one level
 * may run at the same time, in any order and on any thread; a level starts
 * once every item of the level before it has finished (a barrier). That is
 * the shape of a pass whose items only feed items of later levels, such as
 * the DP's reverse passes (a set's figures pushed into its subsets, one size
 * at a time; dp_reverse.c); a flat parallel loop is a job of one level.
 *
 * The threads are started for one run and joined at its end: a run is long
 * (a whole pass over a family, tens of milliseconds at the least), and no
 * thread outlives the call, so the library keeps no global state. The
 * caller's thread is thread 0 and takes its share like the others; a
 * caller that must not be called back from other threads (a cancel
 * callback, say) does that from thread 0's items only. When a thread cannot
 * be started the job runs on fewer, down to the caller's thread alone; the
 * outcome must not depend on how many.
 *
 * The pool knows nothing of what the items do: per-item locks, when items
 * of one level write the same data, are the caller's (mp__spin_lock below
 * suits a short write into one record).
 */
#ifndef MP_THREADPOOL_H
#define MP_THREADPOOL_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct mp__par_job_s {
  /* level l holds the items [bound[l], bound[l + 1]) (n_levels + 1 entries).
   * Levels run from the last down to the first, and each level's items are
   * claimed one at a time from its last down (the planner's passes go from
   * large sets to small ones); a thread claims the next item when it is done
   * with its last, so items of very different lengths share out evenly. */
  size_t n_levels;
  const size_t *bound;
  /* Run item i on thread t of nthreads (arg: thread t's). Nonzero (an MP_E*
   * code) stops the job: no further item is claimed, and the run returns the
   * first such code. */
  int (*item)(void *arg, size_t t, size_t nthreads, size_t i);
  /* Optional. After each level, once every thread is past it, on thread 0
   * (arg: thread 0's) while the others wait: a check of the level's outcome,
   * which does not depend on the thread count. Nonzero stops the job. Not
   * called once the job is stopped. */
  int (*level_check)(void *arg, size_t lo, size_t hi);
  /* Optional. After the level (and its check), on every thread: its share of
   * a clean-up of the level's items, say every nthreads-th from lo + t.
   * Called even once the job is stopped: the levels left are passed through
   * without items, so that no thread waits at a barrier another has left. */
  void (*level_after)(void *arg, size_t t, size_t nthreads, size_t lo, size_t hi);
} mp__par_job_t;

/* Run `job` on up to `threads` threads (>= 1), args[t] being thread t's
 * argument. Returns 0 once every level has run, the first nonzero code an
 * item or a check returned, or MP_ENOMEM (before any item ran). *used: the
 * threads it ran on (only args[0 .. *used) were passed to callbacks). */
int mp__par_run(const mp__par_job_t *job, void *const *args, size_t threads, size_t *used);

/* A spin lock of one byte, for a write that takes a short while and is
 * rarely contended (the DP's reverse passes: about once in 700 pushes on
 * GoogLeNet's staircase). After a while it yields the core: with more
 * threads than cores the holder may be waiting for one. */
static inline void mp__spin_lock(atomic_uchar *l) {
  unsigned spins = 0;
  while (atomic_exchange_explicit(l, 1, memory_order_acquire))
    while (atomic_load_explicit(l, memory_order_relaxed))
      if (++spins % 1024 == 0) sched_yield();
}

static inline void mp__spin_unlock(atomic_uchar *l) {
  atomic_store_explicit(l, 0, memory_order_release);
}

#endif
