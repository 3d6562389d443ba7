/* front.c - the listening socket's front: accepts each connection and
 * reads (peeks) its first request line before libmicrohttpd takes it.
 *
 * libmicrohttpd closes a connection whose request line it cannot split
 * (no space, say) without a word, and gives the application no hook before
 * that. The front answers such a line with a 400 that names the problem,
 * as RFC 9112 asks. A line of request shape is left in the socket (it was
 * only peeked) and the connection handed to libmicrohttpd with
 * MHD_add_connection, which then applies its own limits (connections, per
 * address) as on its own accepts. The target's characters, the headers and
 * the framing are judged later, per request, by http.c, so the front only
 * asks: a method token, a space, something, a space, HTTP/d.d.
 *
 * While the front holds a connection it is in the watchdog's registry
 * (conns.c) like any other, so a slow or silent first line is shut down at
 * the head deadline (sooner under pressure); the front then sees the end of
 * the stream and closes it. A refused connection is closed gracefully: the
 * answer is sent, the write side shut, and what the client still sends is
 * read and dropped for a moment, so the close does not reset the answer
 * away. TLS connections skip the front (libmicrohttpd listens itself). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, pipe2 */
#endif
#include "front.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conns.h"
#include "log.h"
#include "util.h"

/* Bytes peeked for the first line: a line longer than this is handed to
 * libmicrohttpd, whose header memory limit then applies. */
#define SRV__FRONT_PEEK 4096
/* A refused connection's draining read lasts at most this long. */
#define SRV__FRONT_LINGER_MS 2000.0
/* A first line still incomplete is peeked again after this pause (the
 * socket stays readable while unread bytes wait: no busy loop). */
#define SRV__FRONT_REPEEK_MS 20.0

typedef struct {
  int fd;
  srv_conn_t *rec;             /* the watchdog's record */
  struct sockaddr_storage addr;
  socklen_t addr_len;
  size_t seen;                 /* bytes peeked last time */
  double wake_ms;              /* not polled before this */
  double linger_until;         /* > 0: refused, draining until then */
} srv__held_t;

struct srv_front_s {
  int listen_fd;
  struct MHD_Daemon *mhd;
  srv_conns_t *conns;
  size_t max_held;
  int wake[2];
  pthread_t thread;
  _Atomic int stop;
  srv__held_t *held;
  size_t n_held;
};

static void srv__front_drop(srv_front_t *f, size_t i) {
  srv__held_t *h = &f->held[i];
  srv_conns_closed(f->conns, h->rec); /* before the descriptor can be reused */
  close(h->fd);
  f->held[i] = f->held[--f->n_held];
}

/* Hand connection i to libmicrohttpd (which closes it if it refuses). */
static void srv__front_pass(srv_front_t *f, size_t i) {
  srv__held_t h = f->held[i];
  srv_conns_closed(f->conns, h.rec);
  f->held[i] = f->held[--f->n_held];
  (void)MHD_add_connection(f->mhd, h.fd, (const struct sockaddr *)&h.addr, h.addr_len);
}

static int srv__tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

/* Is [line, line + n) (no CR or LF) of a request line's shape? NULL when
 * it is, else why not. */
static const char *srv__front_line_error(const char *line, size_t n) {
  size_t i = 0, sp;
  if (n == 0) return "the request line is empty";
  while (i < n && line[i] != ' ') {
    if (line[i] == '\0' || !srv__tchar((unsigned char)line[i])) return "the method is not a token";
    i++;
  }
  if (i == 0) return "the request line has no method";
  if (i == n) return "the request line has no target and no version";
  for (sp = n; sp > i && line[sp - 1] != ' '; sp--) {
  }
  if (sp <= i + 1) return "the request line has no version";
  if (n - sp != 8 || memcmp(line + sp, "HTTP/", 5) != 0 || line[sp + 5] < '0' || line[sp + 5] > '9' ||
      line[sp + 6] != '.' || line[sp + 7] < '0' || line[sp + 7] > '9')
    return "the request line does not end in an HTTP version (HTTP/1.1)";
  return NULL;
}

/* Answer connection i with a 400 naming `why`, then drain it. */
static void srv__front_refuse(srv_front_t *f, size_t i, const char *why, size_t consumed) {
  srv__held_t *h = &f->held[i];
  char rid[40], body[400], msg[600], sink[SRV__FRONT_PEEK];
  int blen, mlen;
  /* take the peeked bytes: unread data at close() would reset the answer */
  while (consumed > 0) {
    ssize_t r = recv(h->fd, sink, consumed < sizeof(sink) ? consumed : sizeof(sink), MSG_DONTWAIT);
    if (r <= 0) break;
    consumed -= (size_t)r;
  }
  srv_random_hex(rid, 16);
  blen = snprintf(body, sizeof(body),
                  "{\"error\":{\"code\":\"bad_request_line\",\"message\":\"%s\",\"path\":\"\"},\"request_id\":\"%s\"}",
                  why, rid);
  mlen = snprintf(msg, sizeof(msg),
                  "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  "Cache-Control: no-store\r\nX-Request-ID: %s\r\nContent-Length: %d\r\n\r\n%s",
                  rid, blen, body);
  (void)send(h->fd, msg, (size_t)mlen, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(h->fd, SHUT_WR);
  h->linger_until = srv_mono_ms() + SRV__FRONT_LINGER_MS;
  h->wake_ms = 0;
  srv_log(SRV_LOG_INFO, "request",
          json_pack("{s:s,s:s,s:i,s:s}", "request_id", rid, "route", "bad_request_line", "status", 400, "detail", why));
}

/* Look at connection i's first bytes; it may be passed on, refused or
 * dropped (then the slot i holds another connection: returns 1). `hup`:
 * the peer closed its side, or the watchdog shut the socket down (a peek
 * still sees the bytes that came before, so the end must come from poll). */
static int srv__front_look(srv_front_t *f, size_t i, double now, int hup) {
  srv__held_t *h = &f->held[i];
  char buf[SRV__FRONT_PEEK];
  ssize_t n;
  size_t start = 0, end;
  if (h->linger_until > 0) {
    n = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || hup || (n < 0 && errno != EAGAIN && errno != EINTR) || now >= h->linger_until) {
      srv__front_drop(f, i);
      return 1;
    }
    return 0;
  }
  n = recv(h->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    srv__front_drop(f, i); /* gone, or shut down by the watchdog */
    return 1;
  }
  if (n < 0) return 0;
  /* libmicrohttpd skips empty lines before a request line */
  while (start < (size_t)n && (buf[start] == '\r' || buf[start] == '\n')) start++;
  for (end = start; end < (size_t)n && buf[end] != '\n'; end++) {
  }
  if (end == (size_t)n) {
    if (hup) {
      srv__front_drop(f, i); /* no request line will come */
      return 1;
    }
    if ((size_t)n == sizeof(buf)) {
      srv__front_pass(f, i); /* a very long line: libmicrohttpd's limits */
      return 1;
    }
    if ((size_t)n == h->seen) h->wake_ms = now + SRV__FRONT_REPEEK_MS;
    h->seen = (size_t)n;
    return 0;
  }
  {
    size_t len = end - start;
    const char *why;
    if (len > 0 && buf[start + len - 1] == '\r') len--;
    if ((why = srv__front_line_error(buf + start, len)) != NULL) {
      srv__front_refuse(f, i, why, end + 1);
      return 0;
    }
  }
  srv__front_pass(f, i);
  return 1;
}

/* Whether the open connections (held here and libmicrohttpd's, as the
 * watchdog counts them) leave room for one more: at the limit new ones wait
 * in the listen backlog, as they do under libmicrohttpd's own accepts,
 * rather than being accepted and closed. */
static int srv__front_room(srv_front_t *f) {
  size_t open = 0;
  uint64_t h, b;
  srv_conns_counts(f->conns, &open, &h, &b);
  return open < f->max_held && f->n_held < f->max_held;
}

static void srv__front_accept(srv_front_t *f) {
  while (srv__front_room(f)) {
    srv__held_t h;
    memset(&h, 0, sizeof(h));
    h.addr_len = sizeof(h.addr);
    h.fd = accept4(f->listen_fd, (struct sockaddr *)&h.addr, &h.addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (h.fd < 0) return; /* EAGAIN, or out of descriptors: poll again */
    h.rec = srv_conns_opened(f->conns, h.fd);
    f->held[f->n_held++] = h;
  }
}

static void *srv__front_run(void *arg) {
  srv_front_t *f = arg;
  struct pollfd *p = malloc((f->max_held + 2) * sizeof(*p));
  size_t *slot = malloc((f->max_held + 2) * sizeof(*slot));
  if (p == NULL || slot == NULL) {
    srv_log(SRV_LOG_ERROR, "front: out of memory", NULL);
    free(p);
    free(slot);
    return NULL;
  }
  while (!f->stop) {
    double now = srv_mono_ms(), next = now + 1000.0;
    size_t np = 0, i;
    int timeout, room = srv__front_room(f);
    p[np++] = (struct pollfd){f->wake[0], POLLIN, 0};
    /* at the limit, look again within a tick for a slot freed elsewhere */
    p[np++] = (struct pollfd){room ? f->listen_fd : -1, POLLIN, 0};
    if (!room) next = now + 50.0;
    for (i = 0; i < f->n_held; i++) {
      srv__held_t *h = &f->held[i];
      double until = h->linger_until > 0 ? h->linger_until : h->wake_ms;
      if (h->linger_until > 0 && until < next) next = until;
      if (h->wake_ms > now) {
        if (h->wake_ms < next) next = h->wake_ms;
        continue;
      }
      slot[np] = i;
      p[np++] = (struct pollfd){h->fd, POLLIN | POLLRDHUP, 0};
    }
    timeout = (int)(next - now) + 1;
    if (poll(p, np, timeout < 1 ? 1 : timeout) < 0 && errno != EINTR) break;
    if (p[0].revents) {
      char c[16];
      while (read(f->wake[0], c, sizeof(c)) > 0) {
      }
    }
    now = srv_mono_ms();
    /* from the last slot down, so a dropped slot's replacement (the last)
     * has been looked at already */
    for (i = np; i-- > 2;)
      if (p[i].revents)
        (void)srv__front_look(f, slot[i], now, (p[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
    for (i = f->n_held; i-- > 0;) {
      srv__held_t *h = &f->held[i];
      if (h->linger_until > 0 && now >= h->linger_until) srv__front_drop(f, i);
    }
    if (p[1].revents) srv__front_accept(f);
  }
  free(p);
  free(slot);
  return NULL;
}

int srv_front_start(int listen_fd, struct MHD_Daemon *mhd, srv_conns_t *conns, size_t max_held, srv_front_t **out) {
  srv_front_t *f = calloc(1, sizeof(*f));
  *out = NULL;
  if (f == NULL) return -1;
  f->listen_fd = listen_fd;
  f->mhd = mhd;
  f->conns = conns;
  f->max_held = max_held ? max_held : 1;
  f->held = calloc(f->max_held, sizeof(*f->held));
  if (f->held == NULL || pipe2(f->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    free(f->held);
    free(f);
    return -1;
  }
  if (pthread_create(&f->thread, NULL, srv__front_run, f) != 0) {
    close(f->wake[0]);
    close(f->wake[1]);
    free(f->held);
    free(f);
    return -1;
  }
  *out = f;
  return 0;
}

void srv_front_stop(srv_front_t *f) {
  if (f == NULL) return;
  f->stop = 1;
  (void)!write(f->wake[1], "x", 1);
  pthread_join(f->thread, NULL);
  while (f->n_held > 0) srv__front_drop(f, f->n_held - 1);
  close(f->wake[0]);
  close(f->wake[1]);
  free(f->held);
  free(f);
}
