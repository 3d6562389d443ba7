/* waits.c - parked connections and their timers, on the loop thread (see
 * waits.h). */
#include "waits.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct srv__waiter_s {
  uv_timer_t timer;              /* timer.data = the waiter */
  struct MHD_Connection *conn;
  srv_job_t *job;                /* a reference */
  double timeout_s;
  struct srv_waits_s *owner;
  struct srv__waiter_s *prev, *next;
  int resolved;
} srv__waiter_t;

typedef struct srv__event_s {
  srv__waiter_t *waiter;         /* a new waiter, or */
  srv_job_t *job;                /* a finished job (a reference) */
  struct srv__event_s *next;
} srv__event_t;

struct srv_waits_s {
  uv_loop_t *loop;
  uv_async_t doorbell;
  pthread_mutex_t mu;            /* guards the mailbox only */
  srv__event_t *mhead, *mtail;
  srv__waiter_t *list;           /* loop thread only */
  size_t count;
  int closed;                    /* loop thread: resolve newcomers at once */
  int mailbox_closed;            /* under mu: refuse new events */
};

static void srv__waiter_closed(uv_handle_t *h) {
  srv__waiter_t *wt = h->data;
  srv_job_unref(wt->job);
  free(wt);
}

/* Resume the connection once and retire the waiter. */
static void srv__resolve(srv_waits_t *w, srv__waiter_t *wt) {
  if (wt->resolved) return;
  wt->resolved = 1;
  if (wt->prev) wt->prev->next = wt->next; else w->list = wt->next;
  if (wt->next) wt->next->prev = wt->prev;
  w->count--;
  uv_timer_stop(&wt->timer);
  MHD_resume_connection(wt->conn);
  uv_close((uv_handle_t *)&wt->timer, srv__waiter_closed);
}

static void srv__on_timeout(uv_timer_t *t) {
  srv__waiter_t *wt = t->data;
  srv__resolve(wt->owner, wt);
}

static void srv__register(srv_waits_t *w, srv__waiter_t *wt) {
  uint64_t ms;
  uv_timer_init(w->loop, &wt->timer);
  wt->timer.data = wt;
  wt->next = w->list;
  if (w->list) w->list->prev = wt;
  w->list = wt;
  w->count++;
  /* The job may have finished before this waiter reached the loop; its
   * "finished" event is then already consumed, so look at the job itself. */
  if (srv_job_is_final(wt->job) || w->closed) {
    srv__resolve(w, wt);
    return;
  }
  ms = wt->timeout_s > 0 ? (uint64_t)(wt->timeout_s * 1000.0) : 0;
  uv_timer_start(&wt->timer, srv__on_timeout, ms, 0);
}

static void srv__on_doorbell(uv_async_t *a) {
  srv_waits_t *w = a->data;
  srv__event_t *ev;
  pthread_mutex_lock(&w->mu);
  ev = w->mhead;
  w->mhead = w->mtail = NULL;
  pthread_mutex_unlock(&w->mu);
  while (ev) {
    srv__event_t *next = ev->next;
    if (ev->waiter) {
      srv__register(w, ev->waiter);
    } else {
      srv__waiter_t *wt = w->list, *wn;
      for (; wt; wt = wn) {
        wn = wt->next;
        if (wt->job == ev->job) srv__resolve(w, wt);
      }
      srv_job_unref(ev->job);
    }
    free(ev);
    ev = next;
  }
}

static int srv__post(srv_waits_t *w, srv__event_t *ev) {
  pthread_mutex_lock(&w->mu);
  if (w->mailbox_closed) {
    pthread_mutex_unlock(&w->mu);
    return -1;
  }
  if (w->mtail) w->mtail->next = ev; else w->mhead = ev;
  w->mtail = ev;
  pthread_mutex_unlock(&w->mu);
  /* The event is in the mailbox now, so it is not the caller's to free
   * whatever this returns (it cannot fail while the mailbox is open). */
  uv_async_send(&w->doorbell);
  return 0;
}

int srv_waits_new(uv_loop_t *loop, srv_waits_t **out) {
  srv_waits_t *w = calloc(1, sizeof(*w));
  if (w == NULL) return SRV_ENOMEM;
  w->loop = loop;
  pthread_mutex_init(&w->mu, NULL);
  if (uv_async_init(loop, &w->doorbell, srv__on_doorbell) != 0) {
    pthread_mutex_destroy(&w->mu);
    free(w);
    return SRV_ENOMEM;
  }
  w->doorbell.data = w;
  *out = w;
  return 0;
}

int srv_waits_add(srv_waits_t *w, struct MHD_Connection *conn, srv_job_t *job, double timeout_s) {
  srv__waiter_t *wt = calloc(1, sizeof(*wt));
  srv__event_t *ev = calloc(1, sizeof(*ev));
  if (wt == NULL || ev == NULL) {
    free(wt);
    free(ev);
    return SRV_ENOMEM;
  }
  srv_job_ref(job);
  wt->conn = conn;
  wt->job = job;
  wt->timeout_s = timeout_s;
  wt->owner = w;
  ev->waiter = wt;
  if (srv__post(w, ev) != 0) {
    srv_job_unref(job);
    free(wt);
    free(ev);
    return SRV_EDRAINING;
  }
  return 0;
}

void srv_waits_job_finished(srv_waits_t *w, srv_job_t *job) {
  srv__event_t *ev = calloc(1, sizeof(*ev));
  if (ev == NULL) return; /* the waiters' timers still bound their wait */
  srv_job_ref(job);
  ev->job = job;
  if (srv__post(w, ev) != 0) {
    srv_job_unref(job);
    free(ev);
  }
}

void srv_waits_resume_all(srv_waits_t *w) {
  /* First take in waiters still in the mailbox. */
  srv__on_doorbell(&w->doorbell);
  w->closed = 1; /* later arrivals resolve at once */
  while (w->list) srv__resolve(w, w->list);
}

size_t srv_waits_count(srv_waits_t *w) { return w->count; }

void srv_waits_close(srv_waits_t *w) {
  pthread_mutex_lock(&w->mu);
  w->mailbox_closed = 1;
  pthread_mutex_unlock(&w->mu);
  srv_waits_resume_all(w);
  uv_close((uv_handle_t *)&w->doorbell, NULL);
}

void srv_waits_free(srv_waits_t *w) {
  srv__event_t *ev, *next;
  if (w == NULL) return;
  /* Events that arrived after the loop stopped (none normally). */
  for (ev = w->mhead; ev; ev = next) {
    next = ev->next;
    if (ev->waiter) {
      MHD_resume_connection(ev->waiter->conn);
      srv_job_unref(ev->waiter->job);
      free(ev->waiter);
    } else {
      srv_job_unref(ev->job);
    }
    free(ev);
  }
  pthread_mutex_destroy(&w->mu);
  free(w);
}
