/* store_watch.c - the listening connection and the upkeep timer of a
 * shared store (see store_watch.h). */
#include "store_watch.h"

#include <stdlib.h>

#include "log.h"
#include "store.h"
#include "util.h"

enum { SRV__POLL_NONE = 0, SRV__POLL_OPEN = 1, SRV__POLL_CLOSING = 2 };

struct srv_store_watch_s {
  uv_loop_t *loop;
  srv_store_t *store;
  srv_jobs_t *jobs;
  uv_timer_t timer;
  uv_poll_t poll;
  uv_work_t work;
  int poll_state;
  int closing;
  int busy;               /* a tick is on the pool */
  unsigned ticks;
  int recheck;            /* the next tick asks about plans running elsewhere */
  double next_listen_ms;  /* monotonic: no listening connection before */
  double listen_backoff_ms;
  /* handed to the pool thread and back (uv_queue_work orders them) */
  int tick_recheck, tick_listen, opened_fd;
};

static void srv__on_event(void *arg, const char *channel, const char *payload) {
  srv_store_watch_t *w = arg;
  srv_jobs_store_event(w->jobs, channel, payload);
}

static void srv__poll_closed(uv_handle_t *h) {
  srv_store_watch_t *w = h->data;
  srv_store_listen_close(w->store);
  w->poll_state = SRV__POLL_NONE;
  w->recheck = 1; /* what finished meanwhile was not heard */
}

static void srv__on_readable(uv_poll_t *h, int status, int events) {
  srv_store_watch_t *w = h->data;
  (void)events;
  if (status >= 0 && srv_store_listen_read(w->store, srv__on_event, w) == 0) return;
  srv_log(SRV_LOG_WARN, "store notifications interrupted; reconnecting", NULL);
  uv_poll_stop(h);
  w->poll_state = SRV__POLL_CLOSING;
  uv_close((uv_handle_t *)h, srv__poll_closed);
}

/* Pool thread: the upkeep, and the listening connection when it is due. */
static void srv__tick_work(uv_work_t *req) {
  srv_store_watch_t *w = req->data;
  srv_jobs_tick(w->jobs, w->tick_recheck);
  if (w->tick_listen) {
    char err[256];
    int fd;
    if (srv_store_listen_open(w->store, &fd, err, sizeof(err)) == 0) w->opened_fd = fd;
  }
}

static void srv__tick_done(uv_work_t *req, int status) {
  srv_store_watch_t *w = req->data;
  (void)status;
  w->busy = 0;
  if (w->opened_fd >= 0) {
    if (w->closing || uv_poll_init(w->loop, &w->poll, w->opened_fd) != 0) {
      srv_store_listen_close(w->store);
    } else {
      w->poll.data = w;
      w->poll_state = SRV__POLL_OPEN;
      uv_poll_start(&w->poll, UV_READABLE, srv__on_readable);
      w->listen_backoff_ms = 100;
      w->recheck = 1;
      srv_log(SRV_LOG_INFO, "store notifications on", NULL);
    }
    w->opened_fd = -1;
  } else if (w->tick_listen) {
    w->next_listen_ms = srv_mono_ms() + w->listen_backoff_ms;
    w->listen_backoff_ms = w->listen_backoff_ms * 2 > 2000 ? 2000 : w->listen_backoff_ms * 2;
  }
}

static void srv__on_timer(uv_timer_t *t) {
  srv_store_watch_t *w = t->data;
  if (w->busy || w->closing) return;
  w->ticks++;
  /* Every tenth tick too, in case a notification went astray. */
  w->tick_recheck = w->recheck || w->ticks % 10 == 0;
  w->recheck = 0;
  w->tick_listen = w->poll_state == SRV__POLL_NONE && srv_mono_ms() >= w->next_listen_ms;
  w->opened_fd = -1;
  if (uv_queue_work(w->loop, &w->work, srv__tick_work, srv__tick_done) == 0) w->busy = 1;
}

int srv_store_watch_start(uv_loop_t *loop, srv_store_t *store, srv_jobs_t *jobs, double lease_s,
                          srv_store_watch_t **out) {
  srv_store_watch_t *w = calloc(1, sizeof(*w));
  double every_ms = lease_s * 1000.0 / 3.0;
  if (w == NULL) return SRV_ENOMEM;
  w->loop = loop;
  w->store = store;
  w->jobs = jobs;
  w->listen_backoff_ms = 100;
  w->opened_fd = -1;
  w->work.data = w;
  uv_timer_init(loop, &w->timer);
  w->timer.data = w;
  if (every_ms > 1000) every_ms = 1000;
  if (every_ms < 100) every_ms = 100;
  uv_timer_start(&w->timer, srv__on_timer, 0, (uint64_t)every_ms);
  *out = w;
  return 0;
}

void srv_store_watch_close(srv_store_watch_t *w) {
  if (w == NULL || w->closing) return;
  w->closing = 1;
  uv_timer_stop(&w->timer);
  uv_close((uv_handle_t *)&w->timer, NULL);
  if (w->poll_state == SRV__POLL_OPEN) {
    uv_poll_stop(&w->poll);
    w->poll_state = SRV__POLL_CLOSING;
    uv_close((uv_handle_t *)&w->poll, srv__poll_closed);
  }
}

void srv_store_watch_free(srv_store_watch_t *w) { free(w); }
