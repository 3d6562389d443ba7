/* http.h - the HTTP layer: libmicrohttpd in its own poll() thread pool,
 * request state, body limits, authentication, CORS, suspension, and the
 * one place where responses are built, logged and counted.
 *
 * Contract with libmicrohttpd (see the project notes): the handler answers
 * on the last call for a request, never while upload data is pending, and
 * a suspended connection is always resumed by waits.c before the daemon
 * stops. One exception to the first rule: a request that announces a body
 * is judged on the first call, from its head alone (route, method, token,
 * framing, size, room among the bodies in flight), and refused there
 * before a byte of the body is read; the connection then closes, which is
 * what a refused upload wants. A request without a body is judged on its
 * last call, so that keep-alive survives a 404. */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#include "jobs.h"
#include "server.h"

typedef struct srv_req_s srv_req_t;
struct srv_route_s;
struct srv_conn_s;
typedef enum MHD_Result (*srv_resume_fn)(srv_req_t *r);

struct srv_req_s {
  srv_server_t *srv;
  struct MHD_Connection *conn;
  const char *method;        /* borrowed from libmicrohttpd for the request */
  const char *url;
  char request_id[80];
  double t0;                 /* monotonic ms at the first byte */
  const char *route;         /* the matched pattern, for logs and metrics */
  char params[2][160];       /* path parameters ({id}, {hash}) */
  int state;
  const struct srv_route_s *rt; /* the matched route, once checked */
  struct srv_conn_s *guard;  /* the connection's watchdog record (conns.h) */
  const char *origin;        /* an allowed Origin (borrowed), for CORS */
  int checked;               /* route, method, token and limits decided */
  int bad_url;               /* the URL held %00 */
  char addr[48];             /* the client's address: the peer's, or forwarded by a trusted proxy */
  int via_proxy;             /* the peer is a --trusted-proxy */
  const struct srv_principal_s *principal; /* who authenticated (auth.h); NULL: no token given */
  int sees_all;              /* may read and cancel every plan (no token file, --public-reads
                                reads, or a read-all or admin principal) */
  int bad_target;            /* the raw target held a NUL, space or control */
  int started;               /* the handler has seen the request */
  const char *uri_tail;      /* where the raw target's text ended, + 1 */
  char *body;                /* owned; NUL-terminated */
  size_t body_len, body_cap;
  uint64_t declared;         /* Content-Length, 0 when absent */
  uint64_t reserved;         /* bytes of --max-inflight-body-bytes held */
  int too_large;             /* over --max-body-bytes: 413 at the end */
  int overloaded;            /* no room in --max-inflight-body-bytes: 503 */
  int discard;               /* the route takes no body: bytes dropped */
  /* while suspended */
  srv_job_t *job;            /* a reference, released with the request */
  srv_resume_fn on_resume;
  void *ctx;                 /* route data kept across the suspension */
  void (*ctx_free)(void *);
  /* for the log line */
  char graph_hash[65];
  const char *cache;         /* "hit", "miss", "joined" or NULL */
};

int srv_http_start(srv_server_t *s, char *errbuf, size_t errlen);
/* Decode %XX escapes in place, as libmicrohttpd does, except that %00
 * stays as it is (a NUL would cut the path short of what the client asked
 * for); sets *had_nul when there was one. Returns the new length. */
size_t srv_http_unescape(char *s, int *had_nul);
/* Stop accepting, then stop the daemon (every waiter must be resumed). */
void srv_http_stop(srv_server_t *s);

/* ---- for the routes ---- */

/* Send `body` (stolen) as JSON. */
enum MHD_Result srv_respond_json(srv_req_t *r, unsigned status, json_t *body);
/* Send bytes; `data` is copied. extra_name/extra_value (may be NULL) add
 * one header. */
enum MHD_Result srv_respond_bytes(srv_req_t *r, unsigned status, const char *ctype, const void *data,
                                  size_t len, const char *extra_name, const char *extra_value);
/* Send a JSON text we already hold (malloc'd; taken over). */
enum MHD_Result srv_respond_text_owned(srv_req_t *r, unsigned status, char *json_text, size_t len);
/* Send a cached JSON value from its own bytes (the reference is taken
 * over and dropped once libmicrohttpd has sent it). */
struct srv_blob_s;
enum MHD_Result srv_respond_blob(srv_req_t *r, unsigned status, struct srv_blob_s *blob);
/* Send the JSON object at blob->data + skip with "id": id as its first
 * member (the blob's bytes are not copied; the reference is taken over). */
enum MHD_Result srv_respond_blob_id(srv_req_t *r, unsigned status, struct srv_blob_s *blob, size_t skip,
                                    const char *id);
/* {"error": {"code", "message", "path"}, "request_id"} */
enum MHD_Result srv_respond_error(srv_req_t *r, unsigned status, const char *code, const char *path,
                                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
enum MHD_Result srv_respond_error_hdr(srv_req_t *r, unsigned status, const char *code, const char *path,
                                      const char *hname, const char *hvalue, const char *message);

/* Park the request until `job` finishes or timeout_s pass, then call
 * on_resume (on an HTTP thread). */
enum MHD_Result srv_suspend(srv_req_t *r, srv_job_t *job, double timeout_s, srv_resume_fn on_resume);

/* Who sent the request, for the queue's fairness between clients (jobs.h):
 * "id:" and its X-Client-Id when a trusted proxy sends a valid one (up to
 * 64 of [A-Za-z0-9._:-]), else "p:" and the principal's name (a token file
 * of named principals), else "addr:" and the client's address (no token
 * file, or its one-token form, which every client shares). */
void srv_req_client(srv_req_t *r, char out[68]);

/* The owner of what the request submits: the principal's name, "" when the
 * daemon has no token file (or the read was public). */
const char *srv_req_owner(const srv_req_t *r);

/* A query argument, or NULL. */
const char *srv_req_arg(srv_req_t *r, const char *key);

#endif
