/* conns.c - the connection watchdog (see conns.h): a list of open
 * connections with the phase of their current request, and a thread that
 * walks it every tick and shuts down the sockets of connections whose head
 * is late or whose body is below the minimum rate.
 *
 * The walk is linear in the open connections (at most --max-connections,
 * a few thousand), ten times a second: well under a millisecond. */
#include "conns.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "server.h"
#include "util.h"

enum {
  SRV__PHASE_HEAD = 0,   /* waiting for (the rest of) a request head */
  SRV__PHASE_BODY,       /* head read, body arriving */
  SRV__PHASE_ANSWERING,  /* being answered or parked: left alone */
  SRV__PHASE_CLOSING     /* shut down by the watchdog */
};

/* Under pressure (more than 3/4 of the slots taken) a head gets this long. */
#define SRV__PRESSURE_HEAD_MS 1000.0

struct srv_conn_s {
  srv_conn_t *prev, *next;
  int fd;
  int phase;
  int bad_url;
  double since_ms;     /* start of the phase, monotonic */
  uint64_t body_bytes; /* in the body phase */
};

struct srv_conns_s {
  srv_conns_config_t cfg;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int stop;
  srv_conn_t *head;
  size_t open;
  uint64_t closed_head, closed_body;
  uint64_t logged_head, logged_body;
  double logged_ms;
};

/* Is k late? Called under the lock. */
static int srv__late(const srv_conns_t *c, const srv_conn_t *k, double now, double head_ms) {
  double age = now - k->since_ms;
  if (k->phase == SRV__PHASE_HEAD) return age > head_ms;
  if (k->phase == SRV__PHASE_BODY && c->cfg.min_body_rate > 0)
    return age > c->cfg.header_timeout_ms + 1000.0 * (double)k->body_bytes / (double)c->cfg.min_body_rate;
  return 0;
}

/* One pass over the connections; under the lock. */
static void srv__scan(srv_conns_t *c) {
  double now = srv_mono_ms(), head_ms = c->cfg.header_timeout_ms;
  srv_conn_t *k;
  if ((double)c->open * 4.0 > (double)c->cfg.max_connections * 3.0 && head_ms > SRV__PRESSURE_HEAD_MS)
    head_ms = SRV__PRESSURE_HEAD_MS;
  for (k = c->head; k; k = k->next) {
    if (!srv__late(c, k, now, head_ms)) continue;
    if (k->phase == SRV__PHASE_HEAD)
      c->closed_head++;
    else
      c->closed_body++;
    k->phase = SRV__PHASE_CLOSING;
    /* The descriptor is still libmicrohttpd's: its close notification
     * needs this lock first. The end of stream makes it close the
     * connection on its next poll. */
    shutdown(k->fd, SHUT_RDWR);
  }
}

/* At most one log line a second, with what was closed since the last. */
static void srv__maybe_log(srv_conns_t *c) {
  uint64_t h = c->closed_head - c->logged_head, b = c->closed_body - c->logged_body;
  double now = srv_mono_ms();
  if ((h == 0 && b == 0) || now - c->logged_ms < 1000.0) return;
  c->logged_head = c->closed_head;
  c->logged_body = c->closed_body;
  c->logged_ms = now;
  srv_log(SRV_LOG_WARN, "closed slow connections",
          json_pack("{s:I,s:I,s:I}", "slow_head", (json_int_t)h, "slow_body", (json_int_t)b, "open",
                    (json_int_t)c->open));
}

static void *srv__watchdog(void *arg) {
  srv_conns_t *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->stop) {
    struct timespec ts;
    long ns;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns = ts.tv_nsec + (long)(c->cfg.tick_ms * 1e6);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) {
      srv__scan(c);
      srv__maybe_log(c);
    }
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

int srv_conns_new(const srv_conns_config_t *cfg, srv_conns_t **out) {
  srv_conns_t *c = calloc(1, sizeof(*c));
  pthread_condattr_t ca;
  *out = NULL;
  if (c == NULL) return SRV_ENOMEM;
  c->cfg = *cfg;
  if (c->cfg.tick_ms <= 0) c->cfg.tick_ms = 100;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&c->thread, NULL, srv__watchdog, c) != 0) {
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return SRV_ENOMEM;
  }
  *out = c;
  return 0;
}

void srv_conns_free(srv_conns_t *c) {
  srv_conn_t *k, *next;
  if (c == NULL) return;
  pthread_mutex_lock(&c->mu);
  c->stop = 1;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->thread, NULL);
  for (k = c->head; k; k = next) {
    next = k->next;
    free(k);
  }
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

srv_conn_t *srv_conns_opened(srv_conns_t *c, int fd) {
  srv_conn_t *k = calloc(1, sizeof(*k));
  if (k == NULL) return NULL;
  k->fd = fd;
  k->phase = SRV__PHASE_HEAD;
  k->since_ms = srv_mono_ms();
  pthread_mutex_lock(&c->mu);
  k->next = c->head;
  if (c->head) c->head->prev = k;
  c->head = k;
  c->open++;
  pthread_mutex_unlock(&c->mu);
  return k;
}

void srv_conns_closed(srv_conns_t *c, srv_conn_t *k) {
  if (k == NULL) return;
  pthread_mutex_lock(&c->mu);
  if (k->prev)
    k->prev->next = k->next;
  else
    c->head = k->next;
  if (k->next) k->next->prev = k->prev;
  c->open--;
  pthread_mutex_unlock(&c->mu);
  free(k);
}

/* Move k to `phase` from now, unless the watchdog already closed it; under
 * the lock. */
static void srv__enter(srv_conn_t *k, int phase) {
  if (k->phase == SRV__PHASE_CLOSING) return;
  k->phase = phase;
  k->since_ms = srv_mono_ms();
  k->body_bytes = 0;
}

int srv_conns_head_done(srv_conns_t *c, srv_conn_t *k) {
  int bad;
  if (k == NULL) return 0;
  pthread_mutex_lock(&c->mu);
  srv__enter(k, SRV__PHASE_BODY);
  bad = k->bad_url;
  k->bad_url = 0;
  pthread_mutex_unlock(&c->mu);
  return bad;
}

void srv_conns_body_bytes(srv_conns_t *c, srv_conn_t *k, size_t n) {
  if (k == NULL) return;
  pthread_mutex_lock(&c->mu);
  k->body_bytes += n;
  pthread_mutex_unlock(&c->mu);
}

static void srv__enter_locked(srv_conns_t *c, srv_conn_t *k, int phase) {
  if (k == NULL) return;
  pthread_mutex_lock(&c->mu);
  srv__enter(k, phase);
  pthread_mutex_unlock(&c->mu);
}

void srv_conns_answering(srv_conns_t *c, srv_conn_t *k) { srv__enter_locked(c, k, SRV__PHASE_ANSWERING); }

void srv_conns_request_done(srv_conns_t *c, srv_conn_t *k) { srv__enter_locked(c, k, SRV__PHASE_HEAD); }

void srv_conns_mark_bad_url(srv_conns_t *c, srv_conn_t *k) {
  if (k == NULL) return;
  pthread_mutex_lock(&c->mu);
  k->bad_url = 1;
  pthread_mutex_unlock(&c->mu);
}

void srv_conns_counts(srv_conns_t *c, size_t *open, uint64_t *closed_head, uint64_t *closed_body) {
  pthread_mutex_lock(&c->mu);
  if (open) *open = c->open;
  if (closed_head) *closed_head = c->closed_head;
  if (closed_body) *closed_body = c->closed_body;
  pthread_mutex_unlock(&c->mu);
}
