/* progress.c - the tracker behind mp_plan_options_t.progress (see
 * progress.h): a should_stop in front of the caller's that reports the
 * phase the planner last named. */
#include "progress.h"

#include <stddef.h>

const mp_plan_options_t *mp__progress_wrap(const mp_plan_options_t *o, mp__progress_t *t,
                                           mp_plan_options_t *copy) {
  if (o->progress == NULL || o->should_stop == mp__progress_poll) return o;
  t->should_stop = o->should_stop;
  t->stop_arg = o->stop_arg;
  t->progress = o->progress;
  t->progress_arg = o->progress_arg;
  t->phase = "start";
  t->fraction = -1;
  *copy = *o;
  copy->should_stop = mp__progress_poll;
  copy->stop_arg = t;
  copy->progress = NULL;
  copy->progress_arg = NULL;
  t->progress(t->progress_arg, t->phase, t->fraction);
  return copy;
}

int mp__progress_poll(void *arg) {
  mp__progress_t *t = arg;
  t->progress(t->progress_arg, t->phase, t->fraction);
  return t->should_stop ? t->should_stop(t->stop_arg) : 0;
}

void mp__progress_phase(int (*should_stop)(void *), void *stop_arg, const char *phase,
                        double fraction) {
  mp__progress_t *t = stop_arg;
  if (should_stop == mp__serial_poll) {
    mp__serial_t *s = stop_arg;
    pthread_mutex_lock(&s->lock);
    mp__progress_phase(s->should_stop, s->stop_arg, phase, fraction);
    pthread_mutex_unlock(&s->lock);
    return;
  }
  if (should_stop != mp__progress_poll) return;
  if (t->phase == phase && t->fraction == fraction) return;
  t->phase = phase;
  t->fraction = fraction;
  t->progress(t->progress_arg, phase, fraction);
}

int mp__serial_wrap(const mp_plan_options_t *o, mp__serial_t *s, mp_plan_options_t *copy) {
  s->should_stop = o->should_stop;
  s->stop_arg = o->stop_arg;
  s->aborted = 0;
  if (pthread_mutex_init(&s->lock, NULL) != 0) return MP_ENOMEM;
  *copy = *o;
  copy->should_stop = mp__serial_poll;
  copy->stop_arg = s;
  return 0;
}

void mp__serial_done(mp__serial_t *s) { pthread_mutex_destroy(&s->lock); }

int mp__serial_poll(void *arg) {
  mp__serial_t *s = arg;
  int stop;
  pthread_mutex_lock(&s->lock);
  stop = s->aborted || (s->should_stop && s->should_stop(s->stop_arg));
  pthread_mutex_unlock(&s->lock);
  return stop;
}

void mp__serial_abort(mp__serial_t *s) {
  pthread_mutex_lock(&s->lock);
  s->aborted = 1;
  pthread_mutex_unlock(&s->lock);
}
