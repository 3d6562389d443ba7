/* http.c - libmicrohttpd wiring: daemon options, the access handler, request
 * state and body accumulation, limits, authentication, response building,
 * the per-request log line and request metrics. */
#include "http.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache.h"
#include "json_util.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"
#include "util.h"
#include "waits.h"

enum { SRV__REQ_NEW = 0, SRV__REQ_SUSPENDED = 1, SRV__REQ_ANSWERED = 2 };

/* ---- responses ---- */

static void srv__log_request(srv_req_t *r, unsigned status) {
  double dur = floor((srv_mono_ms() - r->t0) * 1000.0 + 0.5) / 1000.0;
  json_t *f = json_pack("{s:s,s:s,s:s,s:s,s:i,s:f}", "request_id", r->request_id, "method", r->method,
                        "path", r->url, "route", r->route, "status", (int)status, "dur_ms", dur);
  if (f) {
    json_object_set_new(f, "graph_hash", r->graph_hash[0] ? json_string(r->graph_hash) : json_null());
    json_object_set_new(f, "cache", r->cache ? json_string(r->cache) : json_null());
  }
  srv_log(status >= 500 ? SRV_LOG_WARN : SRV_LOG_INFO, "request", f);
}

static enum MHD_Result srv__queue(srv_req_t *r, unsigned status, struct MHD_Response *resp,
                                  const char *ctype) {
  enum MHD_Result ret;
  if (resp == NULL) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  MHD_add_response_header(resp, "X-Request-ID", r->request_id);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  ret = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  r->state = SRV__REQ_ANSWERED;
  srv_metrics_request(r->srv->metrics, r->route, status);
  srv_metrics_request_seconds(r->srv->metrics, r->route, (srv_mono_ms() - r->t0) / 1000.0);
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
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
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

/* Constant-time comparison, so the token cannot be guessed byte by byte
 * from response times. */
static int srv__token_ok(srv_server_t *s, const char *header) {
  size_t i, n;
  unsigned char diff = 0;
  if (header == NULL || strncmp(header, "Bearer ", 7) != 0) return 0;
  header += 7;
  n = strlen(header);
  if (n != s->token_len) return 0;
  for (i = 0; i < n; i++) diff |= (unsigned char)(header[i] ^ s->token[i]);
  return diff == 0;
}

static enum MHD_Result srv__dispatch(srv_server_t *s, srv_req_t *r) {
  const srv_route_t *route;
  char allow[64];
  int status;

  if (r->too_large)
    return srv_respond_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "body_too_large", "$",
                             "the request body is larger than %llu bytes (--max-body-bytes)",
                             (unsigned long long)s->cfg.max_body_bytes);
  route = srv_route_match(r->method, r->url, r, allow, sizeof(allow), &status);
  if (route == NULL) {
    r->route = "unmatched";
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
      return srv_respond_error_hdr(r, status, "method_not_allowed", "", MHD_HTTP_HEADER_ALLOW, allow,
                                   "this method is not allowed here; see the Allow header");
    return srv_respond_error(r, MHD_HTTP_NOT_FOUND, "not_found", "", "no route for %.200s", r->url);
  }
  r->route = route->pattern;
  if (s->token && route->write &&
      !srv__token_ok(s, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)))
    return srv_respond_error_hdr(r, MHD_HTTP_UNAUTHORIZED, "unauthorized", "", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                 "Bearer realm=\"memplan\"",
                                 "this route needs an Authorization: Bearer token");
  return route->handler(r);
}

static enum MHD_Result srv__handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                    const char *version, const char *upload_data, size_t *upload_data_size,
                                    void **con_cls) {
  srv_server_t *s = cls;
  srv_req_t *r = *con_cls;
  (void)version;

  if (r == NULL) {
    const char *rid, *cl;
    r = calloc(1, sizeof(*r));
    if (r == NULL) return MHD_NO;
    r->srv = s;
    r->conn = conn;
    r->url = url;
    r->method = method;
    r->t0 = srv_mono_ms();
    r->route = "unmatched";
    rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-ID");
    if (srv__valid_request_id(rid))
      snprintf(r->request_id, sizeof(r->request_id), "%s", rid);
    else
      srv_random_hex(r->request_id, 16);
    *con_cls = r;
    atomic_fetch_add(&s->in_flight, 1);
    /* A declared length over the limit is refused before reading: here a
     * closed connection is what we want, so answering early is fine. */
    cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body_bytes) {
      r->too_large = 1;
      return srv__dispatch(s, r);
    }
    return MHD_YES;
  }

  if (*upload_data_size > 0) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    /* The idle timeout cannot stop a body that trickles in a byte at a
     * time; past --max-upload-seconds the connection is dropped (no answer
     * can be queued mid-upload). */
    if (srv_mono_ms() - r->t0 > 1000.0 * s->cfg.max_upload_s) {
      srv_log(SRV_LOG_WARN, "upload too slow, connection closed",
              json_pack("{s:s,s:s}", "request_id", r->request_id, "route", r->url ? r->url : ""));
      return MHD_NO;
    }
    if (r->too_large) return MHD_YES;
    if ((uint64_t)r->body_len + n > s->cfg.max_body_bytes) {
      /* Chunked uploads have no Content-Length: count, discard, answer 413
       * once the body is over (no response may be queued before). */
      r->too_large = 1;
      free(r->body);
      r->body = NULL;
      r->body_len = r->body_cap = 0;
      return MHD_YES;
    }
    if (r->body_len + n + 1 > r->body_cap) {
      size_t cap = r->body_cap ? r->body_cap : 4096;
      char *nb;
      while (cap < r->body_len + n + 1) cap *= 2;
      nb = realloc(r->body, cap);
      if (nb == NULL) return MHD_NO;
      r->body = nb;
      r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, upload_data, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return MHD_YES;
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
  if (r->ctx_free) r->ctx_free(r->ctx);
  srv_job_unref(r->job);
  free(r->body);
  free(r);
  *con_cls = NULL;
  atomic_fetch_sub(&s->in_flight, 1);
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

int srv_http_start(srv_server_t *s, char *errbuf, size_t errlen) {
  struct sockaddr_storage ss;
  struct MHD_OptionItem ops[16];
  /* poll(), not epoll: libmicrohttpd 0.9.75's epoll loop stalled with
   * exactly 256 or 512 busy keep-alive clients on a thread until the
   * connection timeout (after a full batch of 128 events it seems to wait
   * again with the blocking timeout); poll() serves them at the same rate
   * (test_many_keepalive_clients). */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  int n = 0;
  const union MHD_DaemonInfo *info;

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
  SRV__OPT(MHD_OPTION_SOCK_ADDR, 0, &ss);
  if (s->cfg.http_threads > 1) SRV__OPT(MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)s->cfg.http_threads, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections, NULL);
  SRV__OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections_per_ip, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->cfg.request_timeout_s, NULL);
  SRV__OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->cfg.max_header_bytes, NULL);
  SRV__OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)srv__completed, s);
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
    return -1;
  }
  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
  s->bound_port = info ? info->port : s->cfg.port;
  return 0;
}

void srv_http_stop(srv_server_t *s) {
  MHD_socket fd;
  if (s->mhd == NULL) return;
  fd = MHD_quiesce_daemon(s->mhd);
  MHD_stop_daemon(s->mhd);
  if (fd != MHD_INVALID_SOCKET) close(fd);
  s->mhd = NULL;
}
