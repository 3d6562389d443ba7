/* conns.h - the connection watchdog: where each open connection is in its
 * request, and a thread that closes the ones that hold a slot without
 * making progress.
 *
 * libmicrohttpd's own timeout (--request-timeout) only measures idle time,
 * so a client that sends one byte of its head every few seconds, or a body
 * at a trickle, keeps its connection forever. The watchdog puts a deadline
 * on the whole request head (--header-timeout, counted from the accept or
 * from the end of the previous request on a kept-alive connection) and a
 * minimum average rate on bodies (--min-body-rate, after a grace of
 * --header-timeout). When more than three quarters of --max-connections are
 * open, a head gets one second at most: slow heads are then shed first, so
 * /healthz and well-behaved clients find a free slot.
 *
 * A connection that is closed gets no answer: its socket is shut down, and
 * libmicrohttpd sees the end of the stream and closes the connection itself
 * (the registry lock is held across the shutdown, and the close notification
 * takes it before the descriptor is released, so the descriptor is never a
 * reused one). Connections whose request is being answered or is parked
 * (long polls) are never touched.
 *
 * Threads: srv_conns_opened/closed run on libmicrohttpd's threads (its
 * connection notifications), the phase updates on the thread that serves
 * the connection, the watchdog on its own thread. All take one mutex. */
#ifndef SRV_CONNS_H
#define SRV_CONNS_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_conns_s srv_conns_t;
typedef struct srv_conn_s srv_conn_t;

typedef struct srv_conns_config_s {
  double header_timeout_ms; /* the head's deadline, and the body's grace */
  uint64_t min_body_rate;   /* bytes per second; 0: no minimum */
  unsigned max_connections; /* for the pressure threshold */
  double tick_ms;           /* how often the watchdog looks (100 ms) */
} srv_conns_config_t;

/* A registry and its watchdog thread (started here). 0 or SRV_ENOMEM. */
int srv_conns_new(const srv_conns_config_t *cfg, srv_conns_t **out);
/* Stop the thread and free the registry. Every connection must have been
 * closed (libmicrohttpd stopped) before, or be left alone after. */
void srv_conns_free(srv_conns_t *c);

/* A connection was accepted (socket `fd`): a new record, in its head
 * phase; NULL when out of memory (the connection is then not watched). */
srv_conn_t *srv_conns_opened(srv_conns_t *c, int fd);
/* The connection is closing: forget it (NULL is ignored). */
void srv_conns_closed(srv_conns_t *c, srv_conn_t *k);

/* The request's head is complete: the body phase starts. Returns whether
 * the URL held an encoded NUL (see srv_conns_mark_bad_url), and clears it. */
int srv_conns_head_done(srv_conns_t *c, srv_conn_t *k);
/* n more bytes of the body arrived. */
void srv_conns_body_bytes(srv_conns_t *c, srv_conn_t *k, size_t n);
/* The request is being answered (or parked): not watched. */
void srv_conns_answering(srv_conns_t *c, srv_conn_t *k);
/* The request is over: the head of the next one is due from now. */
void srv_conns_request_done(srv_conns_t *c, srv_conn_t *k);
/* The URL of the request being read held %00 (from the unescaper). */
void srv_conns_mark_bad_url(srv_conns_t *c, srv_conn_t *k);

/* Open connections now, and how many the watchdog closed so far for a slow
 * head and for a slow body. */
void srv_conns_counts(srv_conns_t *c, size_t *open, uint64_t *closed_head, uint64_t *closed_body);

#endif
