/* http.c - libmicrohttpd wiring: daemon options, the access handler, request
 * state and body accumulation, limits (bodies in flight among them),
 * authentication, CORS, response building, the per-request log line and
 * request metrics. The connection watchdog is conns.c. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "cache.h"
#include "conns.h"
#include "front.h"
#include "json_util.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"
#include "util.h"
#include "waits.h"

enum { SRV__REQ_NEW = 0, SRV__REQ_SUSPENDED = 1, SRV__REQ_ANSWERED = 2 };

struct srv_http_s {
  srv_conns_t *conns;
  srv_front_t *front;  /* NULL with TLS: libmicrohttpd listens itself */
  int listen_fd;       /* the front's socket, or -1 */
  _Atomic uint64_t inflight; /* body bytes reserved by requests */
};

/* A chunked body reserves room in steps of at least this much. */
#define SRV__RESERVE_STEP (64u * 1024u)

/* ---- responses ---- */

/* A request's log line being written: out[0..n) of cap bytes. Every
 * append stops short rather than overflow (the line is then cut, still
 * JSON once closed: srv__log_request keeps room for its last fields). */
typedef struct {
  char *out;
  size_t n, cap;
} srv__line_t;

static void srv__lit(srv__line_t *l, const char *s, size_t len) {
  if (l->n + len > l->cap) return;
  memcpy(l->out + l->n, s, len);
  l->n += len;
}
#define SRV__LIT(l, s) srv__lit((l), (s), sizeof(s) - 1)

static void srv__u64(srv__line_t *l, unsigned long long v) {
  char d[24];
  size_t k = sizeof(d);
  do {
    d[--k] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  srv__lit(l, d + k, sizeof(d) - k);
}

/* `s` as a JSON string: quotes, backslashes and control characters
 * escaped, bytes past ASCII as \u00XX (a request path need not be UTF-8);
 * at most `room` bytes of the line (what is left is cut). NULL is "". */
static void srv__str(srv__line_t *l, const char *s, size_t room) {
  static const char hex[] = "0123456789abcdef";
  size_t end = l->n + room < l->cap ? l->n + room : l->cap, k = l->n;
  char *out = l->out;
  if (k + 2 > end) return;
  out[k++] = '"';
  for (; s && *s && k + 7 < end; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      out[k++] = '\\';
      out[k++] = (char)c;
    } else if (c < 0x20 || c >= 0x7f) {
      memcpy(out + k, "\\u00", 4);
      out[k + 4] = hex[c >> 4];
      out[k + 5] = hex[c & 15];
      k += 6;
    } else {
      out[k++] = (char)c;
    }
  }
  out[k++] = '"';
  l->n = k;
}

/* The request's log line, written by hand: it is written for every
 * request, and jansson's objects or printf cost more than the answer of a
 * cached GET. */
static void srv__log_request(srv_req_t *r, unsigned status) {
  int level = status >= 500 ? SRV_LOG_WARN : SRV_LOG_INFO;
  char buf[1536];
  srv__line_t l = {buf, 0, sizeof(buf)};
  double us;
  unsigned long long whole;
  if (!srv_log_enabled(level)) return;
  SRV__LIT(&l, "\"request_id\":");
  srv__str(&l, r->request_id, 200);
  SRV__LIT(&l, ",\"method\":");
  srv__str(&l, r->method, 100);
  SRV__LIT(&l, ",\"path\":");
  srv__str(&l, r->url, 880);
  SRV__LIT(&l, ",\"route\":");
  srv__str(&l, r->route, 80);
  SRV__LIT(&l, ",\"status\":");
  srv__u64(&l, status);
  /* dur_ms with three decimals */
  us = floor((srv_mono_ms() - r->t0) * 1000.0 + 0.5);
  whole = us > 0 ? (unsigned long long)us : 0;
  SRV__LIT(&l, ",\"dur_ms\":");
  srv__u64(&l, whole / 1000);
  {
    char frac[4] = {'.', (char)('0' + whole / 100 % 10), (char)('0' + whole / 10 % 10), (char)('0' + whole % 10)};
    srv__lit(&l, frac, 4);
  }
  SRV__LIT(&l, ",\"graph_hash\":");
  if (r->graph_hash[0])
    srv__str(&l, r->graph_hash, 80);
  else
    SRV__LIT(&l, "null");
  SRV__LIT(&l, ",\"cache\":");
  if (r->cache)
    srv__str(&l, r->cache, 20);
  else
    SRV__LIT(&l, "null");
  srv_log_request_line(level, buf, l.n);
}

static enum MHD_Result srv__queue(srv_req_t *r, unsigned status, struct MHD_Response *resp,
                                  const char *ctype) {
  enum MHD_Result ret;
  if (resp == NULL) return MHD_NO;
  if (ctype) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(resp, "X-Request-ID", r->request_id);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (r->srv->cfg.cors_origins[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
  if (r->origin) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, r->origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "X-Request-ID, Location, Retry-After, WWW-Authenticate");
  }
  srv_conns_answering(r->srv->http->conns, r->guard);
  ret = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  r->state = SRV__REQ_ANSWERED;
  srv_metrics_request_done(r->srv->metrics, r->method, r->route, status, (srv_mono_ms() - r->t0) / 1000.0);
  srv__log_request(r, status);
  return ret;
}

enum MHD_Result srv_respond_bytes(srv_req_t *r, unsigned status, const char *ctype, const void *data,
                                  size_t len, const char *extra_name, const char *extra_value) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
  if (resp && extra_name) MHD_add_response_header(resp, extra_name, extra_value);
  return srv__queue(r, status, resp, ctype);
}

enum MHD_Result srv_respond_text_owned(srv_req_t *r, unsigned status, char *text, size_t len) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) free(text);
  return srv__queue(r, status, resp, "application/json");
}

static void srv__blob_done(void *cls) { srv_blob_unref(cls); }

enum MHD_Result srv_respond_blob(srv_req_t *r, unsigned status, srv_blob_t *blob) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer_with_free_callback_cls(blob->len, blob->data, srv__blob_done, blob);
  if (resp == NULL) srv_blob_unref(blob);
  return srv__queue(r, status, resp, "application/json");
}

/* A cached answer sent with an id of its own in front: the id's bytes and
 * the blob's, one response without a copy of the blob. */
typedef struct {
  srv_blob_t *blob;
  char head[64]; /* {"id":"<id>", */
} srv__id_blob_t;

static void srv__id_blob_done(void *cls) {
  srv__id_blob_t *b = cls;
  srv_blob_unref(b->blob);
  free(b);
}

enum MHD_Result srv_respond_blob_id(srv_req_t *r, unsigned status, srv_blob_t *blob, size_t skip, const char *id) {
  srv__id_blob_t *b;
  struct MHD_IoVec iov[2];
  struct MHD_Response *resp;
  const char *obj = blob->data + skip;
  size_t len = blob->len - skip;
  if (len < 2 || obj[0] != '{' || (b = malloc(sizeof(*b))) == NULL) {
    srv_blob_unref(blob);
    return srv_respond_error(r, 500, "internal", "", "the cached answer is unreadable");
  }
  b->blob = blob;
  /* {"id":"...", then the object's members; "{}" gets no comma */
  snprintf(b->head, sizeof(b->head), "{\"id\":\"%.32s\"%s", id, obj[1] == '}' ? "" : ",");
  iov[0].iov_base = b->head;
  iov[0].iov_len = strlen(b->head);
  iov[1].iov_base = obj + 1;
  iov[1].iov_len = len - 1;
  resp = MHD_create_response_from_iovec(iov, 2, srv__id_blob_done, b);
  if (resp == NULL) {
    srv__id_blob_done(b);
    return MHD_NO;
  }
  return srv__queue(r, status, resp, "application/json");
}

enum MHD_Result srv_respond_json(srv_req_t *r, unsigned status, json_t *body) {
  char *text = body ? mp_json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (text == NULL) {
    static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\",\"path\":\"\"}}";
    return srv_respond_bytes(r, 500, "application/json", oom, sizeof(oom) - 1, NULL, NULL);
  }
  return srv_respond_text_owned(r, status, text, strlen(text));
}

enum MHD_Result srv_respond_error_hdr(srv_req_t *r, unsigned status, const char *code, const char *path,
                                      const char *hname, const char *hvalue, const char *message) {
  json_t *o = json_pack("{s:{s:s,s:s,s:s},s:s}", "error", "code", code, "message", message, "path",
                        path ? path : "", "request_id", r->request_id);
  char *text;
  if (o == NULL) {
    /* a message quoting the request (its path) that is not UTF-8: the
     * bytes past ASCII become '?' */
    char clean[800];
    size_t i;
    snprintf(clean, sizeof(clean), "%s", message);
    for (i = 0; clean[i]; i++)
      if ((unsigned char)clean[i] >= 0x80) clean[i] = '?';
    o = json_pack("{s:{s:s,s:s,s:s},s:s}", "error", "code", code, "message", clean, "path", path ? path : "",
                  "request_id", r->request_id);
  }
  text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  struct MHD_Response *resp;
  json_decref(o);
  if (text == NULL) return MHD_NO;
  resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free(text);
    return MHD_NO;
  }
  if (hname) MHD_add_response_header(resp, hname, hvalue);
  return srv__queue(r, status, resp, "application/json");
}

enum MHD_Result srv_respond_error(srv_req_t *r, unsigned status, const char *code, const char *path,
                                  const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return srv_respond_error_hdr(r, status, code, path, NULL, NULL, msg);
}

static int srv__valid_request_id(const char *v);

void srv_req_client(srv_req_t *r, char out[68]) {
  const char *id = r->via_proxy ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Client-Id") : NULL;
  if (srv__valid_request_id(id))
    snprintf(out, 68, "id:%s", id);
  else if (r->principal && !srv_auth_single(r->srv->auth))
    snprintf(out, 68, "p:%s", r->principal->name);
  else
    snprintf(out, 68, "addr:%s", r->addr);
}

const char *srv_req_owner(const srv_req_t *r) { return r->principal ? r->principal->name : ""; }

/* The peer's address as text into r->addr; from a trusted proxy, the
 * rightmost address of X-Forwarded-For that is not a trusted proxy
 * itself (the one the nearest proxy saw), when it is a valid address. */
static void srv__client_addr(srv_server_t *s, srv_req_t *r) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  const char *xff;
  snprintf(r->addr, sizeof(r->addr), "unknown");
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->addr, sizeof(r->addr));
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->addr, sizeof(r->addr));
  r->via_proxy = srv_auth_trusted(s->auth, sa);
  if (!r->via_proxy) return;
  xff = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Forwarded-For");
  if (xff == NULL) return;
  {
    size_t end = strlen(xff);
    while (end > 0) {
      size_t start = end, a, b;
      char item[48];
      unsigned char raw[16];
      while (start > 0 && xff[start - 1] != ',') start--;
      a = start;
      b = end;
      while (a < b && (xff[a] == ' ' || xff[a] == '\t')) a++;
      while (b > a && (xff[b - 1] == ' ' || xff[b - 1] == '\t')) b--;
      if (b - a == 0 || b - a >= sizeof(item)) return;
      memcpy(item, xff + a, b - a);
      item[b - a] = '\0';
      if (inet_pton(AF_INET, item, raw) != 1 && inet_pton(AF_INET6, item, raw) != 1) return;
      if (!srv_auth_trusted_text(s->auth, item)) {
        snprintf(r->addr, sizeof(r->addr), "%s", item);
        return;
      }
      end = start > 0 ? start - 1 : 0;
    }
  }
}

const char *srv_req_arg(srv_req_t *r, const char *key) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

enum MHD_Result srv_suspend(srv_req_t *r, srv_job_t *job, double timeout_s, srv_resume_fn on_resume) {
  srv_job_ref(job);
  r->job = job;
  r->on_resume = on_resume;
  r->state = SRV__REQ_SUSPENDED;
  MHD_suspend_connection(r->conn);
  if (srv_waits_add(r->srv->waits, r->conn, job, timeout_s) != 0) {
    /* Shutting down (or out of memory): answer with what we have now. */
    MHD_resume_connection(r->conn);
  }
  return MHD_YES;
}

/* ---- the access handler ---- */

static int srv__valid_request_id(const char *v) {
  size_t i;
  if (v == NULL || v[0] == '\0') return 0;
  for (i = 0; v[i]; i++) {
    char c = v[i];
    if (i >= 64) return 0;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.' || c == ':'))
      return 0;
  }
  return 1;
}

/* The principal of a route that needs one (a token file is configured and
 * the route is not open): throttled addresses get 429, a missing or wrong
 * token 401 (counted against the address), a role that may not do this
 * 403. Sets r->principal and r->sees_all. Returns 1 after answering. */
static int srv__authenticate(srv_server_t *s, srv_req_t *r, enum MHD_Result *ret) {
  const char *authz;
  int work;
  unsigned retry;
  r->sees_all = 1;
  if (!srv_auth_enabled(s->auth) || r->rt->access == SRV_ROUTE_OPEN) return 0;
  work = r->rt->access == SRV_ROUTE_WORK;
  authz = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!work && authz == NULL && s->cfg.public_reads) return 0;
  r->sees_all = 0;
  if (srv_auth_throttled(s->auth, r->addr, srv_mono_ms(), &retry)) {
    char ra[16], msg[200];
    snprintf(ra, sizeof(ra), "%u", retry);
    snprintf(msg, sizeof(msg),
             "too many failed authentications from %s (--auth-failures-per-minute); retry in %u s", r->addr, retry);
    *ret = srv_respond_error_hdr(r, 429, "auth_throttled", "", "Retry-After", ra, msg);
    return 1;
  }
  r->principal = srv_auth_check(s->auth, authz);
  if (r->principal == NULL) {
    srv_auth_failed(s->auth, r->addr, srv_mono_ms());
    *ret = srv_respond_error_hdr(r, MHD_HTTP_UNAUTHORIZED, "unauthorized", "", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                 "Bearer realm=\"memplan\"", "this route needs an Authorization: Bearer token");
    return 1;
  }
  if (!srv_role_allows(r->principal->role, work)) {
    *ret = srv_respond_error(r, MHD_HTTP_FORBIDDEN, "forbidden", "",
                             "the principal %s has the role %s, which may not start or cancel work",
                             r->principal->name, srv_role_name(r->principal->role));
    return 1;
  }
  r->sees_all = srv_role_sees_all(r->principal->role);
  return 0;
}

/* Is `origin` in the comma list of allowed origins ("*" allows any)? */
static int srv__origin_allowed(const char *list, const char *origin) {
  size_t n = strlen(origin);
  while (*list) {
    size_t k = strcspn(list, ",");
    if ((k == 1 && list[0] == '*') || (k == n && memcmp(list, origin, n) == 0)) return 1;
    list += k;
    if (*list == ',') list++;
  }
  return 0;
}

typedef struct {
  const char *first; /* the first Content-Length */
  int differ;        /* a later one says something else */
  int codings;       /* Transfer-Encoding headers seen */
  int spaced;        /* a header name holds whitespace */
} srv__lengths_t;

static enum MHD_Result srv__count_lengths(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  srv__lengths_t *l = cls;
  (void)kind;
  /* libmicrohttpd keeps "Content-Length : 60" as a header named
   * "Content-Length " and frames the message without it. */
  if (strpbrk(key, " \t") != NULL) l->spaced = 1;
  if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) l->codings++;
  if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0 || value == NULL) return MHD_YES;
  if (l->first == NULL)
    l->first = value;
  else if (strcmp(l->first, value) != 0)
    l->differ = 1;
  return MHD_YES;
}

/* Framing libmicrohttpd lets through but that must not be guessed at (RFC
 * 9112 asks for 400 on each): whitespace between a header's name and its
 * colon (it would frame the message without that header, so a body would
 * be read as the next request), two different Content-Lengths (it would
 * take the first), Content-Length with Transfer-Encoding, Transfer-Encoding
 * repeated or listing codings, and a single transfer coding other than
 * chunked (501: it would read the body until the connection closes). NULL
 * when the framing is sound; else the reason, with *status 400 or 501. */
static const char *srv__framing_error(struct MHD_Connection *conn, unsigned *status) {
  srv__lengths_t l = {NULL, 0, 0, 0};
  const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  MHD_get_connection_values(conn, MHD_HEADER_KIND, srv__count_lengths, &l);
  *status = MHD_HTTP_BAD_REQUEST;
  if (l.spaced) return "a header has whitespace between its name and the colon";
  if (l.differ) return "the request has two different Content-Length headers";
  if (l.codings > 1) return "the request has more than one Transfer-Encoding header";
  if (te && strchr(te, ',')) return "Transfer-Encoding lists more than one coding";
  if (te && l.first) return "the request has both Transfer-Encoding and Content-Length";
  if (te && strcasecmp(te, "chunked") != 0) {
    *status = MHD_HTTP_NOT_IMPLEMENTED;
    return "the only transfer coding accepted is chunked";
  }
  return NULL;
}

/* Does the head announce a body? */
static int srv__has_body(struct MHD_Connection *conn, uint64_t *declared) {
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  *declared = cl ? strtoull(cl, NULL, 10) : 0;
  return *declared > 0 ||
         MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* Take n more bytes of --max-inflight-body-bytes for r; -1 when they are
 * not there. */
static int srv__reserve(srv_server_t *s, srv_req_t *r, uint64_t n) {
  uint64_t cur = atomic_load(&s->http->inflight);
  do {
    if (cur + n > s->cfg.max_inflight_body_bytes) return -1;
  } while (!atomic_compare_exchange_weak(&s->http->inflight, &cur, cur + n));
  r->reserved += n;
  return 0;
}

/* Free the body and give its room back. */
static void srv__drop_body(srv_server_t *s, srv_req_t *r) {
  free(r->body);
  r->body = NULL;
  r->body_len = r->body_cap = 0;
  if (r->reserved) atomic_fetch_sub(&s->http->inflight, r->reserved);
  r->reserved = 0;
}

/* OPTIONS on a known path: the methods, and a CORS preflight's answer
 * when the origin is allowed. */
static enum MHD_Result srv__options(srv_req_t *r, const char *allow) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
  if (r->origin) {
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow);
    MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, X-Request-ID, X-Client-Id");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
  }
  return srv__queue(r, MHD_HTTP_NO_CONTENT, resp, NULL);
}

/* Everything the head decides, in order: the URL, the framing, the route
 * and method, the token, the declared size and the room for the body.
 * Returns 1 after answering (*ret), 0 when the request may go on. */
static int srv__precheck(srv_server_t *s, srv_req_t *r, int has_body, enum MHD_Result *ret) {
  char allow[96];
  const char *why;
  unsigned code;
  int status;

  r->checked = 1;
  /* Errors in the framing or the request line close the connection: what
   * follows on it cannot be trusted to start a request. */
  if (r->bad_target) {
    *ret = srv_respond_error_hdr(r, MHD_HTTP_BAD_REQUEST, "bad_url", "", MHD_HTTP_HEADER_CONNECTION, "close",
                                 "the request target holds a NUL, a space or a control character");
    return 1;
  }
  if (r->bad_url) {
    *ret = srv_respond_error(r, MHD_HTTP_BAD_REQUEST, "bad_url", "", "the URL holds an encoded NUL (%%00)");
    return 1;
  }
  if ((why = srv__framing_error(r->conn, &code)) != NULL) {
    *ret = srv_respond_error_hdr(r, code, code == MHD_HTTP_NOT_IMPLEMENTED ? "not_implemented" : "bad_framing", "",
                                 MHD_HTTP_HEADER_CONNECTION, "close", why);
    return 1;
  }
  r->rt = srv_route_match(r->method, r->url, r, allow, sizeof(allow), &status);
  if (r->rt == NULL) {
    r->route = "unmatched";
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED && strcmp(r->method, MHD_HTTP_METHOD_OPTIONS) == 0)
      *ret = srv__options(r, allow);
    else if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
      *ret = srv_respond_error_hdr(r, status, "method_not_allowed", "", MHD_HTTP_HEADER_ALLOW, allow,
                                   "this method is not allowed here; see the Allow header");
    else
      *ret = srv_respond_error(r, MHD_HTTP_NOT_FOUND, "not_found", "", "no route for %.200s", r->url);
    return 1;
  }
  r->route = r->rt->pattern;
  if (srv__authenticate(s, r, ret)) return 1;
  if (!has_body) return 0;
  if (r->declared > s->cfg.max_body_bytes) {
    *ret = srv_respond_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large", "$",
                             "the request body is larger than %llu bytes (--max-body-bytes)",
                             (unsigned long long)s->cfg.max_body_bytes);
    return 1;
  }
  if (strcmp(r->rt->method, MHD_HTTP_METHOD_POST) != 0) {
    r->discard = 1; /* a body the route does not read is not kept */
    return 0;
  }
  if (r->declared > 0 && srv__reserve(s, r, r->declared) != 0) {
    *ret = srv_respond_error_hdr(r, MHD_HTTP_SERVICE_UNAVAILABLE, "busy", "", "Retry-After", "2",
                                 "too many request bodies are being received (--max-inflight-body-bytes); "
                                 "retry later");
    return 1;
  }
  return 0;
}

static enum MHD_Result srv__dispatch(srv_server_t *s, srv_req_t *r) {
  enum MHD_Result ret;
  if (!r->checked && srv__precheck(s, r, 0, &ret)) return ret;
  if (r->too_large) {
    srv__drop_body(s, r);
    return srv_respond_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large", "$",
                             "the request body is larger than %llu bytes (--max-body-bytes)",
                             (unsigned long long)s->cfg.max_body_bytes);
  }
  if (r->overloaded) {
    srv__drop_body(s, r);
    return srv_respond_error_hdr(r, MHD_HTTP_SERVICE_UNAVAILABLE, "busy", "", "Retry-After", "2",
                                 "too many request bodies are being received (--max-inflight-body-bytes); "
                                 "retry later");
  }
  srv_conns_answering(s->http->conns, r->guard);
  ret = r->rt->handler(r);
  /* The handlers are done with the body when they return, parked or not. */
  srv__drop_body(s, r);
  return ret;
}

/* Keep n bytes of body; 0, or -1 when out of memory (the connection is
 * then dropped). Past a limit the body is dropped and the request marked. */
static int srv__take_body(srv_server_t *s, srv_req_t *r, const char *data, size_t n) {
  if (r->too_large || r->overloaded || r->discard) return 0;
  if ((uint64_t)r->body_len + n > s->cfg.max_body_bytes) {
    /* Chunked uploads have no Content-Length: count, discard, answer 413
     * once the body is over (no response may be queued before). */
    r->too_large = 1;
    srv__drop_body(s, r);
    return 0;
  }
  if (r->body_len + n + 1 > r->body_cap) {
    size_t cap;
    char *nb;
    if (r->declared) {
      cap = (size_t)r->declared + 1; /* its room was reserved up front */
    } else {
      cap = r->body_cap ? r->body_cap : 4096;
      while (cap < r->body_len + n + 1) cap *= 2;
      if (cap > r->reserved) {
        uint64_t need = cap - r->reserved;
        if (need < SRV__RESERVE_STEP) need = SRV__RESERVE_STEP;
        if (srv__reserve(s, r, need) != 0) {
          r->overloaded = 1;
          srv__drop_body(s, r);
          return 0;
        }
      }
    }
    nb = realloc(r->body, cap);
    if (nb == NULL) return -1;
    r->body = nb;
    r->body_cap = cap;
  }
  memcpy(r->body + r->body_len, data, n);
  r->body_len += n;
  r->body[r->body_len] = '\0';
  return 0;
}

/* The watchdog's record of a connection (NULL if it could not be made). */
static srv_conn_t *srv__guard_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

static enum MHD_Result srv__handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                    const char *version, const char *upload_data, size_t *upload_data_size,
                                    void **con_cls) {
  srv_server_t *s = cls;
  srv_req_t *r = *con_cls;
  enum MHD_Result ret;

  if (r == NULL || !r->started) {
    const char *rid, *origin;
    if (r == NULL) {
      if ((r = calloc(1, sizeof(*r))) == NULL) return MHD_NO;
      r->t0 = srv_mono_ms();
    }
    r->started = 1;
    r->srv = s;
    r->conn = conn;
    r->url = url;
    r->method = method;
    /* A raw NUL in the target ends the URL libmicrohttpd hands over short
     * of the request line's version. */
    if (r->uri_tail && version && version[0] && r->uri_tail != version) r->bad_target = 1;
    r->route = "unmatched";
    r->guard = srv__guard_of(conn);
    r->bad_url = srv_conns_head_done(s->http->conns, r->guard);
    srv__client_addr(s, r);
    rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-ID");
    if (srv__valid_request_id(rid))
      snprintf(r->request_id, sizeof(r->request_id), "%s", rid);
    else
      srv_request_id(r->request_id);
    origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    if (origin && s->cfg.cors_origins[0] && srv__origin_allowed(s->cfg.cors_origins, origin)) r->origin = origin;
    *con_cls = r;
    atomic_fetch_add(&s->in_flight, 1);
    /* A request with a body is judged before any of it is read; see
     * http.h. */
    if (srv__has_body(conn, &r->declared) && srv__precheck(s, r, 1, &ret)) return ret;
    return MHD_YES;
  }

  if (*upload_data_size > 0) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    srv_conns_body_bytes(s->http->conns, r->guard, n);
    /* The idle timeout cannot stop a body that trickles in a byte at a
     * time; past --max-upload-seconds the connection is dropped (no answer
     * can be queued mid-upload). */
    if (srv_mono_ms() - r->t0 > 1000.0 * s->cfg.max_upload_s) {
      srv_log(SRV_LOG_WARN, "upload too slow, connection closed",
              json_pack("{s:s,s:s}", "request_id", r->request_id, "route", r->url ? r->url : ""));
      return MHD_NO;
    }
    return srv__take_body(s, r, upload_data, n) == 0 ? MHD_YES : MHD_NO;
  }

  if (r->state == SRV__REQ_SUSPENDED) {
    r->state = SRV__REQ_NEW;
    return r->on_resume(r);
  }
  if (r->state == SRV__REQ_ANSWERED) return MHD_YES;
  return srv__dispatch(s, r);
}

static void srv__completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  srv_server_t *s = cls;
  srv_req_t *r = *con_cls;
  (void)conn;
  (void)toe;
  if (r == NULL) return;
  if (!r->started) {
    /* refused by libmicrohttpd after its request line */
    free(r);
    *con_cls = NULL;
    return;
  }
  if (r->ctx_free) r->ctx_free(r->ctx);
  srv_job_unref(r->job);
  srv__drop_body(s, r);
  srv_conns_request_done(s->http->conns, r->guard);
  free(r);
  *con_cls = NULL;
  atomic_fetch_sub(&s->in_flight, 1);
}

/* libmicrohttpd's connection notifications: the watchdog's records. */
static void srv__connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe) {
  srv_server_t *s = cls;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = ci ? srv_conns_opened(s->http->conns, ci->connect_fd) : NULL;
  } else {
    srv_conns_closed(s->http->conns, *socket_context);
    *socket_context = NULL;
  }
}

static int srv__hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t srv_http_unescape(char *str, int *had_nul) {
  char *rd = str, *wr = str;
  while (*rd) {
    int hi, lo;
    if (rd[0] == '%' && (hi = srv__hexval(rd[1])) >= 0 && (lo = srv__hexval(rd[2])) >= 0) {
      if (hi == 0 && lo == 0) {
        *had_nul = 1; /* kept as the three characters */
      } else {
        *wr++ = (char)(hi * 16 + lo);
        rd += 3;
        continue;
      }
    }
    *wr++ = *rd++;
  }
  *wr = '\0';
  return (size_t)(wr - str);
}

/* libmicrohttpd's unescaper for the path and the query arguments. */
static size_t srv__unescape(void *cls, struct MHD_Connection *conn, char *str) {
  srv_server_t *s = cls;
  int had_nul = 0;
  size_t n = srv_http_unescape(str, &had_nul);
  if (had_nul) srv_conns_mark_bad_url(s->http->conns, srv__guard_of(conn));
  return n;
}

/* libmicrohttpd's request-line callback, called with the raw target
 * before it is split or decoded: the request's record starts here, marked
 * when the target holds a space or a control character, and noting where
 * its text ends (the handler compares that with where the version starts:
 * a raw NUL ends the text early). */
static void *srv__uri_seen(void *cls, const char *uri, struct MHD_Connection *conn) {
  srv_req_t *r = calloc(1, sizeof(*r));
  size_t i, n;
  (void)conn;
  if (r == NULL) return NULL;
  r->srv = cls;
  r->t0 = srv_mono_ms();
  if (uri) {
    n = strlen(uri);
    for (i = 0; i < n; i++)
      if ((unsigned char)uri[i] < 0x21 || (unsigned char)uri[i] == 0x7f) r->bad_target = 1;
    r->uri_tail = uri + n + 1;
  }
  return r;
}

static void srv__mhd_log(void *cls, const char *fmt, va_list ap) {
  char msg[512];
  size_t n;
  (void)cls;
  vsnprintf(msg, sizeof(msg), fmt, ap);
  n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
  srv_log(SRV_LOG_WARN, "libmicrohttpd", json_pack("{s:s}", "detail", msg));
}

/* A listening socket on `ss` for the front: non-blocking, address reuse as
 * libmicrohttpd sets it, IPv6 only for an IPv6 address. The descriptor, or
 * -1 after writing why to errbuf. */
static int srv__listen(const struct sockaddr_storage *ss, char *errbuf, size_t errlen, const char *where) {
  int one = 1, fd;
  socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(errbuf, errlen, "cannot listen on %s: %s", where, strerror(errno));
    return -1;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss->ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, SOMAXCONN) != 0) {
    snprintf(errbuf, errlen, "cannot listen on %s: %s", where, strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

int srv_http_start(srv_server_t *s, char *errbuf, size_t errlen) {
  struct sockaddr_storage ss;
  struct MHD_OptionItem ops[20];
  /* poll(), not epoll: libmicrohttpd 0.9.75's epoll loop stalled with
   * exactly 256 or 512 busy keep-alive clients on a thread until the
   * connection timeout (after a full batch of 128 events it seems to wait
   * again with the blocking timeout); poll() serves them at the same rate
   * (test_many_keepalive_clients). */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  int n = 0;
  const union MHD_DaemonInfo *info;
  srv_conns_config_t cc;

  s->http = calloc(1, sizeof(*s->http));
  if (s->http == NULL) {
    snprintf(errbuf, errlen, "out of memory");
    return -1;
  }
  atomic_init(&s->http->inflight, 0);
  s->http->listen_fd = -1;
  memset(&cc, 0, sizeof(cc));
  cc.header_timeout_ms = 1000.0 * s->cfg.header_timeout_s;
  cc.min_body_rate = s->cfg.min_body_rate;
  cc.max_connections = s->cfg.max_connections;
  cc.tick_ms = 100;
  if (srv_conns_new(&cc, &s->http->conns) != 0) {
    free(s->http);
    s->http = NULL;
    snprintf(errbuf, errlen, "cannot start the connection watchdog");
    return -1;
  }

  memset(&ss, 0, sizeof(ss));
  if (strchr(s->cfg.host, ':')) {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(s->cfg.port);
    inet_pton(AF_INET6, s->cfg.host, &a6->sin6_addr);
    flags |= MHD_USE_IPv6;
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons(s->cfg.port);
    inet_pton(AF_INET, s->cfg.host, &a4->sin_addr);
  }
#define SRV__OPT(o, v, p) \
  do {                    \
    ops[n].option = (o);  \
    ops[n].value = (v);   \
    ops[n].ptr_value = (p); \
    n++;                  \
  } while (0)
  /* The logger first: options parsed before it log through MHD's own. */
  SRV__OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)srv__mhd_log, s);
  if (s->tls_cert_pem) {
    SRV__OPT(MHD_OPTION_SOCK_ADDR, 0, &ss);
  } else {
    /* the front accepts (front.c) and hands connections over */
    flags |= MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    if ((s->http->listen_fd = srv__listen(&ss, errbuf, errlen, s->cfg.listen)) < 0) {
      srv_conns_free(s->http->conns);
      free(s->http);
      s->http = NULL;
      return -1;
    }
  }
  if (s->cfg.http_threads > 1) SRV__OPT(MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)s->cfg.http_threads, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections, NULL);
  SRV__OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections_per_ip, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->cfg.request_timeout_s, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->cfg.max_header_bytes, NULL);
  SRV__OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)srv__completed, s);
  SRV__OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv__connection, s);
  SRV__OPT(MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)srv__unescape, s);
  SRV__OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)srv__uri_seen, s);
  if (s->tls_cert_pem) {
    flags |= MHD_USE_TLS;
    SRV__OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert_pem);
    SRV__OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key_pem);
  }
  SRV__OPT(MHD_OPTION_END, 0, NULL);
#undef SRV__OPT
  s->mhd = MHD_start_daemon(flags, s->cfg.port, NULL, NULL, srv__handler, s, MHD_OPTION_ARRAY, ops,
                            MHD_OPTION_END);
  if (s->mhd == NULL) {
    snprintf(errbuf, errlen, "cannot listen on %s (address in use, or bad TLS files?)", s->cfg.listen);
    if (s->http->listen_fd >= 0) close(s->http->listen_fd);
    srv_conns_free(s->http->conns);
    free(s->http);
    s->http = NULL;
    return -1;
  }
  if (s->http->listen_fd >= 0) {
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    if (srv_front_start(s->http->listen_fd, s->mhd, s->http->conns, s->cfg.max_connections, &s->http->front) != 0) {
      snprintf(errbuf, errlen, "cannot start the accepting thread");
      MHD_stop_daemon(s->mhd);
      s->mhd = NULL;
      close(s->http->listen_fd);
      srv_conns_free(s->http->conns);
      free(s->http);
      s->http = NULL;
      return -1;
    }
    memset(&bound, 0, sizeof(bound));
    getsockname(s->http->listen_fd, (struct sockaddr *)&bound, &blen);
    s->bound_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                      : ((struct sockaddr_in *)&bound)->sin_port);
    return 0;
  }
  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
  s->bound_port = info ? info->port : s->cfg.port;
  return 0;
}

void srv_http_stop(srv_server_t *s) {
  MHD_socket fd = MHD_INVALID_SOCKET;
  if (s->mhd == NULL) return;
  if (s->http->front) {
    srv_front_stop(s->http->front); /* accepts no more */
    close(s->http->listen_fd);
  } else {
    fd = MHD_quiesce_daemon(s->mhd);
  }
  MHD_stop_daemon(s->mhd);
  if (fd != MHD_INVALID_SOCKET) close(fd);
  s->mhd = NULL;
  srv_conns_free(s->http->conns);
  free(s->http);
  s->http = NULL;
}
