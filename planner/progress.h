/* progress.h - the planner's progress reports (mp_plan_options_t.progress),
 * private to planner/.
 *
 * mp_plan and mp_frontier, when asked for progress, install a tracker in
 * place of the caller's should_stop: every place that already polls for
 * cancellation (the DP's passes, the lower-set enumeration, the candidates'
 * simulations, the swap search) then also reports the current phase, and
 * the code that starts a phase names it with mp__progress_phase. Without a
 * progress callback nothing is installed and nothing changes; with one the
 * answers do not change either, since the tracker only passes the
 * caller's verdict on.
 *
 * Phases (static strings): "start", "lower_sets", "prepare", "reverse_pass",
 * "search", "simulation", "swap". A fraction is in [0, 1], or -1 when the
 * phase cannot know how far it is. It runs on the planning thread (the
 * DP's helper threads never poll); plans on parallel threads poll through
 * mp__serial_poll, which lets one thread at a time in. */
#ifndef MP_PROGRESS_H
#define MP_PROGRESS_H

#include <pthread.h>

#include "plan.h"

typedef struct mp__progress_s {
  int (*should_stop)(void *arg); /* the caller's */
  void *stop_arg;
  void (*progress)(void *arg, const char *phase, double fraction);
  void *progress_arg;
  const char *phase;
  double fraction;
} mp__progress_t;

/* The options the solvers get: `o` itself when it asks for no progress (or
 * a tracker is installed already); else a copy in *copy whose should_stop
 * is the tracker `t` (set up here), with progress cleared so that nested
 * calls (a sampled frontier's plans) report through the same tracker. */
const mp_plan_options_t *mp__progress_wrap(const mp_plan_options_t *o, mp__progress_t *t,
                                           mp_plan_options_t *copy);

/* The tracker's should_stop: reports the phase, then asks the caller's. */
int mp__progress_poll(void *arg);

/* A phase starts (or moves on, `fraction` done): reported when a tracker
 * is installed as this should_stop (or behind an mp__serial_poll), ignored
 * otherwise. */
void mp__progress_phase(int (*should_stop)(void *), void *stop_arg, const char *phase,
                        double fraction);

/* A should_stop for plans on parallel threads (plan_many.c): it calls the
 * caller's (and mp__progress_phase passes through it to a tracker) under a
 * mutex, one thread at a time, and says stop once mp__serial_abort was
 * called (a plan on another thread failed). */
typedef struct mp__serial_s {
  int (*should_stop)(void *arg); /* the caller's, or NULL */
  void *stop_arg;
  pthread_mutex_t lock;
  int aborted;
} mp__serial_t;

/* A copy of o in *copy whose should_stop is s (set up here; release it
 * with mp__serial_done once no thread uses it); 0, or MP_ENOMEM. */
int mp__serial_wrap(const mp_plan_options_t *o, mp__serial_t *s, mp_plan_options_t *copy);
void mp__serial_done(mp__serial_t *s);
int mp__serial_poll(void *arg);
void mp__serial_abort(mp__serial_t *s);

#endif
