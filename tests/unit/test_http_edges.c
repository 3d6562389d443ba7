/* test_http_edges.c - memplan-server against a hostile or odd client, end
 * to end on the real daemon (test_daemon.c) with raw sockets: requests
 * judged from their head before any body is read (404/405/401/413/503),
 * the bound on bodies in flight, which routes need the token (and
 * --public-reads), the head deadline and the minimum body rate (also when
 * the connection slots are nearly all taken), protocol edges (%00, two
 * Content-Lengths, transfer codings, garbage, HEAD, OPTIONS) and CORS.
 *
 * Where a test bounds a time, the bound is a few times what the daemon is
 * configured for and far below libmicrohttpd's own defaults (a 30 s idle
 * timeout, or none): a behaviour check, not a speed one. */
#include <check.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

/* ---- raw HTTP ---- */

/* Send `len` bytes of `req` on fd. */
static void raw_send(int fd, const char *req, size_t len) {
  ck_assert_int_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Read one answer from fd: until the head and Content-Length bytes of
 * body are in (or none, for HEAD and 204, when `bodiless`), the peer
 * closes, or `ms` pass. Returns the text (malloc'd, possibly empty). */
static char *raw_read(int fd, int ms, int bodiless) {
  size_t cap = 1 << 16, got = 0;
  char *buf = malloc(cap);
  double t0 = mp_test_now_ms();
  ck_assert_ptr_nonnull(buf);
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    char *end;
    ssize_t n;
    int left = ms - (int)(mp_test_now_ms() - t0);
    buf[got] = '\0';
    if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
      const char *cl = strstr(buf, "Content-Length: ");
      size_t want = bodiless || cl == NULL ? 0 : (size_t)atol(cl + 16);
      if (got >= (size_t)(end + 4 - buf) + want) break;
    }
    if (left <= 0 || poll(&p, 1, left) <= 0) break;
    n = recv(fd, buf + got, cap - 1 - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
    if (got + 1 >= cap) break;
  }
  buf[got] = '\0';
  return buf;
}

/* One request on a fresh connection; the answer as raw_read gives it (the
 * connection is closed after). */
static char *raw_ask(int port, const char *req, int bodiless) {
  int fd = mp_test_raw_connect(port);
  char *out;
  ck_assert_int_ge(fd, 0);
  raw_send(fd, req, strlen(req));
  out = raw_read(fd, 10000, bodiless);
  close(fd);
  return out;
}

/* Does the answer start with "HTTP/1.1 <status>"? */
static int status_is(const char *answer, int status) {
  char want[32];
  snprintf(want, sizeof(want), "HTTP/1.1 %d ", status);
  return strncmp(answer, want, strlen(want)) == 0;
}

/* A header line "Name: value" (case as the daemon writes it) in the answer. */
static int has_header(const char *answer, const char *line) {
  const char *end = strstr(answer, "\r\n\r\n");
  const char *at = strstr(answer, line);
  return at != NULL && (end == NULL || at < end);
}

/* Check the status of an answer, failing with the answer in the message. */
#define ASSERT_STATUS(answer, status) \
  ck_assert_msg(status_is((answer), (status)), "expected %d, got: %.300s", (status), (answer))

/* The head of a POST announcing `length` body bytes, with extra headers. */
static void post_head(char *out, size_t n, const char *path, unsigned long length, const char *extra) {
  snprintf(out, n, "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %lu\r\n%s\r\n",
           path, length, extra ? extra : "");
}

/* Start a daemon with --token-file holding "tok" and then `flags`. */
static void start_with_token(mp_test_daemon_t *d, const char *flags) {
  char path[256], all[1024];
  mp_test_daemon_mkdir(d);
  snprintf(path, sizeof(path), "%s/token", d->dir);
  mp_test_write_file(path, "tok\n");
  snprintf(all, sizeof(all), "--token-file %s %s", path, flags ? flags : "");
  mp_test_daemon_start_in(d, all, 0);
}

/* ---- item: a body is judged from the head ---- */

/* 404, 405, 401 and 413 come back at once on a request whose head
 * announces a megabyte that is never sent: nothing waits for the body. */
START_TEST(test_refused_before_the_body) {
  mp_test_daemon_t s;
  char head[512], *a;
  start_with_token(&s, "--max-body-bytes 1MiB");
  post_head(head, sizeof(head), "/no/such/route", 1000000, NULL);
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 404);
  ck_assert(has_header(a, "Connection: close"));
  free(a);
  post_head(head, sizeof(head), "/healthz", 1000000, NULL);
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 405);
  ck_assert(has_header(a, "Allow: GET, HEAD, OPTIONS"));
  free(a);
  post_head(head, sizeof(head), "/v1/plans", 1000000, NULL);
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 401);
  ck_assert(has_header(a, "WWW-Authenticate: Bearer"));
  free(a);
  post_head(head, sizeof(head), "/v1/plans", 1000000, "Authorization: Bearer wrong\r\n");
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 401);
  free(a);
  /* with the token, over --max-body-bytes */
  post_head(head, sizeof(head), "/v1/plans", 2000000, "Authorization: Bearer tok\r\n");
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 413);
  free(a);
  /* with the token and within the limit, the daemon waits for the body:
   * nothing comes back until it is sent */
  {
    int fd = mp_test_raw_connect(s.port);
    static const char body[] = "{\"graph_hash\": \"nope\", \"budget\": 1}";
    post_head(head, sizeof(head), "/v1/plans", sizeof(body) - 1, "Authorization: Bearer tok\r\n");
    raw_send(fd, head, strlen(head));
    a = raw_read(fd, 300, 0);
    ck_assert_str_eq(a, "");
    free(a);
    raw_send(fd, body, sizeof(body) - 1);
    a = raw_read(fd, 10000, 0);
    ASSERT_STATUS(a, 400); /* a bad hash, but a body that was read */
    ck_assert_ptr_nonnull(strstr(a, "graph_hash"));
    free(a);
    close(fd);
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* --max-inflight-body-bytes: two bodies announced at the bound hold all
 * of it; a third gets 503 with Retry-After at once, a chunked one (no
 * Content-Length) when it has grown past the room left; once the first
 * two go, bodies are taken again. A GET route's body is never kept. */
START_TEST(test_bodies_in_flight) {
  mp_test_daemon_t s;
  char head[512], *a;
  int h1, h2, fd;
  size_t i;
  mp_test_daemon_start(&s, "--max-body-bytes 1MiB --max-inflight-body-bytes 2MiB", 0);
  post_head(head, sizeof(head), "/v1/plans", 1048576, NULL);
  h1 = mp_test_raw_connect(s.port);
  h2 = mp_test_raw_connect(s.port);
  raw_send(h1, head, strlen(head));
  raw_send(h2, head, strlen(head));
  /* both are waiting for their bodies */
  a = raw_read(h2, 300, 0);
  ck_assert_str_eq(a, "");
  free(a);
  post_head(head, sizeof(head), "/v1/plans", 1000, NULL);
  a = raw_ask(s.port, head, 0);
  ASSERT_STATUS(a, 503);
  ck_assert(has_header(a, "Retry-After: "));
  ck_assert_ptr_nonnull(strstr(a, "\"busy\""));
  free(a);
  /* chunked: the first 64 KiB step does not fit either */
  fd = mp_test_raw_connect(s.port);
  raw_send(fd, "POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 64);
  for (i = 0; i < 4; i++) raw_send(fd, "5\r\n{    \r\n", 10);
  raw_send(fd, "0\r\n\r\n", 5);
  a = raw_read(fd, 10000, 0);
  ASSERT_STATUS(a, 503);
  free(a);
  close(fd);
  /* a body sent to a GET route is read and dropped, not held */
  a = raw_ask(s.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 0);
  ASSERT_STATUS(a, 200);
  free(a);
  close(h1);
  close(h2);
  /* the room comes back when they go (the daemon notices the close) */
  {
    double t0 = mp_test_now_ms();
    int ok = 0;
    while (!ok && mp_test_now_ms() - t0 < 10000) {
      a = raw_ask(s.port, "POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", 0);
      ok = status_is(a, 400); /* read and parsed: an invalid request */
      free(a);
      if (!ok) mp_test_nap_ms(50);
    }
    ck_assert_msg(ok, "bodies were still refused after the others closed");
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* ---- item: which routes need the token ---- */

/* With a token, routes that start work or show plans and graphs need it;
 * health, readiness, metrics, status and the dashboard page do not. With
 * --public-reads the reads are open, the routes that start work are not. */
START_TEST(test_token_levels) {
  static const char *const open_paths[] = {"/", "/healthz", "/livez", "/readyz", "/metrics", "/v1/status"};
  static const char *const auth = "-H 'Authorization: Bearer tok'";
  mp_test_daemon_t s;
  char id[64] = "", hash[80] = "", path[256], *body;
  json_t *o = NULL;
  size_t i;
  int pass;
  for (pass = 0; pass < 2; pass++) {
    int reads = pass == 1 ? 200 : 401;
    start_with_token(&s, pass == 1 ? "--public-reads" : NULL);
    for (i = 0; i < sizeof(open_paths) / sizeof(open_paths[0]); i++)
      ck_assert_int_eq(mp_test_daemon_http(&s, "GET", open_paths[i], NULL, NULL, NULL, NULL), 200);
    body = strdup("{\"graph\": {\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 10, "
                  "\"time\": 1}]}, \"budget\": 1000, \"solver\": \"none\", \"wait\": 30}");
    ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, NULL, NULL, NULL), 401);
    ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, auth, &o, NULL), 200);
    free(body);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(o, "id")));
    snprintf(hash, sizeof(hash), "%s", json_string_value(json_object_get(o, "graph_hash")));
    json_decref(o);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/v1/plans", NULL, NULL, NULL, NULL), reads);
    snprintf(path, sizeof(path), "/v1/plans/%s", id);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, NULL, NULL), reads);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, auth, NULL, NULL), 200);
    snprintf(path, sizeof(path), "/v1/graphs/%s", hash);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, NULL, NULL), reads);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, auth, NULL, NULL), 200);
    /* the frontier route starts work: the token, public reads or not */
    snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?solver=exact&wait=60", hash);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, NULL, NULL), 401);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, auth, NULL, NULL), 200);
    ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit", "{}", NULL, NULL, NULL), 401);
    snprintf(path, sizeof(path), "/v1/plans/%s", id);
    ck_assert_int_eq(mp_test_daemon_http(&s, "DELETE", path, NULL, NULL, NULL, NULL), 401);
    mp_test_daemon_cleanup(&s);
  }
}
END_TEST

/* ---- item: slow heads and slow bodies ---- */

/* --header-timeout: a head sent a byte every 100 ms, a connection that
 * says nothing, and a kept-alive connection that sends no next request are
 * all closed after about a second, not after --request-timeout (60 s).
 * The trickled head would take some 30 s whole, and a whole head is
 * answered, not closed: closed at all, it was closed by the deadline,
 * however slow the machine. */
START_TEST(test_head_deadline) {
  char head[400];
  mp_test_daemon_t s;
  int fd, silent, i, closed = 0;
  char *a;
  snprintf(head, sizeof(head), "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: %0260d\r\n\r\n", 0);
  mp_test_daemon_start(&s, "--header-timeout 1 --request-timeout 60", 0);
  fd = mp_test_raw_connect(s.port);
  silent = mp_test_raw_connect(s.port);
  for (i = 0; i < (int)strlen(head) && !closed; i++) {
    if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1)
      closed = 1;
    else
      closed = mp_test_raw_closed(fd, 100);
  }
  ck_assert_msg(closed, "a head sent a byte at a time outlived --header-timeout");
  close(fd);
  ck_assert_msg(mp_test_raw_closed(silent, 8000), "a silent connection outlived --header-timeout");
  close(silent);
  /* keep-alive: answered, then closed when no next head comes */
  fd = mp_test_raw_connect(s.port);
  raw_send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 34);
  a = raw_read(fd, 5000, 0);
  ASSERT_STATUS(a, 200);
  ck_assert(!has_header(a, "Connection: close"));
  free(a);
  ck_assert_msg(mp_test_raw_closed(fd, 8000), "an idle kept-alive connection outlived --header-timeout");
  close(fd);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/healthz", NULL, NULL, NULL, NULL), 200);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* --min-body-rate: a body trickling at 10 bytes a second is closed once
 * --header-timeout has passed (about a second; the test tries for 60 s,
 * well before --max-upload-seconds would close it); one that keeps the
 * rate is read whole (its first 10 kB buy it 10 s of slack, so a stalled
 * test process does not fall below the rate). */
START_TEST(test_body_rate) {
  mp_test_daemon_t s;
  char head[256], *a, lead[10000];
  int fd, i, closed = 0;
  mp_test_daemon_start(&s, "--header-timeout 1 --min-body-rate 1000 --max-upload-seconds 100", 0);
  post_head(head, sizeof(head), "/v1/plans", 100000, NULL);
  fd = mp_test_raw_connect(s.port);
  raw_send(fd, head, strlen(head));
  for (i = 0; i < 600 && !closed; i++) {
    if (send(fd, " ", 1, MSG_NOSIGNAL) != 1)
      closed = 1;
    else
      closed = mp_test_raw_closed(fd, 100);
  }
  ck_assert_msg(closed, "a trickling body outlived --min-body-rate");
  close(fd);
  /* 10 kB at once, then 10 kB in 2 s (5 kB/s), keeps the rate */
  post_head(head, sizeof(head), "/v1/plans", 20002, NULL);
  fd = mp_test_raw_connect(s.port);
  raw_send(fd, head, strlen(head));
  raw_send(fd, "{", 1);
  memset(lead, ' ', sizeof(lead));
  raw_send(fd, lead, sizeof(lead));
  for (i = 0; i < 20; i++) {
    char chunk[500];
    memset(chunk, ' ', sizeof(chunk));
    raw_send(fd, chunk, sizeof(chunk));
    mp_test_nap_ms(100);
  }
  raw_send(fd, "}", 1);
  a = raw_read(fd, 10000, 0);
  ASSERT_STATUS(a, 400); /* read whole: {} is not a plan request */
  ck_assert_ptr_nonnull(strstr(a, "invalid_request"));
  free(a);
  close(fd);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* More than 3/4 of --max-connections taken by slow heads: they get a
 * second, not --header-timeout (60 s here), and /healthz is answered.
 * Polled for up to 50 s: any shedding before the 60 s is the pressure's. */
START_TEST(test_slow_heads_shed_under_pressure) {
  enum { N = 36 };
  mp_test_daemon_t s;
  int fds[N], i, closed = 0;
  double t0;
  mp_test_daemon_start(&s, "--max-connections 40 --max-connections-per-ip 0 --header-timeout 60 --http-threads 1", 0);
  for (i = 0; i < N; i++) {
    fds[i] = mp_test_raw_connect(s.port);
    ck_assert_int_ge(fds[i], 0);
    raw_send(fds[i], "G", 1);
  }
  t0 = mp_test_now_ms();
  while (closed < N - 10 && mp_test_now_ms() - t0 < 50000) {
    closed = 0;
    for (i = 0; i < N; i++) closed += fds[i] < 0 || mp_test_raw_closed(fds[i], 0);
    mp_test_nap_ms(100);
  }
  /* all but a quarter at most: once below 3/4 the full deadline holds */
  ck_assert_msg(closed >= N - 10, "only %d of %d slow heads were shed", closed, N);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/healthz", NULL, NULL, NULL, NULL), 200);
  for (i = 0; i < N; i++) close(fds[i]);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* ---- item: protocol edges ---- */

START_TEST(test_protocol_edges) {
  mp_test_daemon_t s;
  char *a;
  mp_test_daemon_start(&s, "--header-timeout 2", 0);
  /* %00 does not cut the path or a query argument short */
  a = raw_ask(s.port, "GET /healthz%00x HTTP/1.1\r\nHost: t\r\n\r\n", 0);
  ASSERT_STATUS(a, 400);
  ck_assert_ptr_nonnull(strstr(a, "bad_url"));
  free(a);
  a = raw_ask(s.port, "GET /v1/plans?status=done%00x HTTP/1.1\r\nHost: t\r\n\r\n", 0);
  ASSERT_STATUS(a, 400);
  free(a);
  a = raw_ask(s.port, "GET /healthz%41 HTTP/1.1\r\nHost: t\r\n\r\n", 0);
  ASSERT_STATUS(a, 404); /* other escapes decode as before: /healthzA */
  free(a);
  /* two different Content-Lengths; Content-Length with Transfer-Encoding */
  a = raw_ask(s.port, "POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", 0);
  ASSERT_STATUS(a, 400);
  ck_assert_ptr_nonnull(strstr(a, "Content-Length"));
  free(a);
  a = raw_ask(s.port,
              "POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0);
  ASSERT_STATUS(a, 400);
  free(a);
  /* a transfer coding other than chunked: 501 at once */
  a = raw_ask(s.port, "POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nxyz", 0);
  ASSERT_STATUS(a, 501);
  free(a);
  /* HEAD is GET without the body */
  a = raw_ask(s.port, "HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 1);
  ASSERT_STATUS(a, 200);
  ck_assert(has_header(a, "Content-Type: application/json"));
  ck_assert_ptr_nonnull(strstr(a, "\r\n\r\n"));
  ck_assert_str_eq(strstr(a, "\r\n\r\n"), "\r\n\r\n");
  free(a);
  a = raw_ask(s.port, "HEAD /v1/plans HTTP/1.1\r\nHost: t\r\n\r\n", 1);
  ASSERT_STATUS(a, 200);
  free(a);
  a = raw_ask(s.port, "HEAD /v1/nothing HTTP/1.1\r\nHost: t\r\n\r\n", 1);
  ASSERT_STATUS(a, 404);
  free(a);
  /* OPTIONS lists the methods of a path */
  a = raw_ask(s.port, "OPTIONS /v1/plans HTTP/1.1\r\nHost: t\r\n\r\n", 1);
  ASSERT_STATUS(a, 204);
  ck_assert(has_header(a, "Allow: POST, GET, HEAD, OPTIONS"));
  ck_assert(!has_header(a, "Access-Control-Allow-Origin"));
  free(a);
  a = raw_ask(s.port, "DELETE /v1/plans HTTP/1.1\r\nHost: t\r\n\r\n", 0);
  ASSERT_STATUS(a, 405);
  ck_assert(has_header(a, "Allow: POST, GET, HEAD, OPTIONS"));
  free(a);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/healthz", NULL, NULL, NULL, NULL), 200);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* ---- item: strict framing ---- */

/* One request on a fresh connection whose answer must be a 400 naming
 * `code`, after which the connection closes with nothing more: whatever
 * followed the bad head (here always a second request) is never served. */
static void expect_refused(int port, const char *req, size_t len, const char *code) {
  int fd = mp_test_raw_connect(port);
  char *a;
  ck_assert_int_ge(fd, 0);
  raw_send(fd, req, len);
  a = raw_read(fd, 15000, 0);
  ck_assert_msg(status_is(a, 400), "expected 400 for %.60s, got: %.300s", req, a);
  ck_assert_msg(strstr(a, code) != NULL, "expected %s in: %.300s", code, a);
  ck_assert_msg(strstr(a, "}HTTP/1.1 ") == NULL && strstr(a, "\nHTTP/1.1 ") == NULL, "a second answer followed: %.600s", a);
  ck_assert_msg(mp_test_raw_closed(fd, 15000), "the connection stayed open after a refused head");
  free(a);
  close(fd);
}

/* RFC 9112's 400s, each answered (never only closed), each closing the
 * connection: whitespace before a header's colon (else the body would be
 * read as a second request: request smuggling behind a lenient proxy),
 * Transfer-Encoding repeated or listing codings, a NUL, space or control
 * character in the request target, and request lines that are not one. */
START_TEST(test_strict_framing) {
  static const char nul_target[] = "GET /healthz\0x HTTP/1.1\r\nHost: t\r\n\r\n";
  static const char bin_line[] = "\0\x01\x02 \x03\r\n\r\n";
  mp_test_daemon_t s;
  mp_test_daemon_start(&s, "", 0);
  expect_refused(s.port,
                 "POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length : 37\r\n\r\n"
                 "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n",
                 strlen("POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length : 37\r\n\r\n"
                        "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"),
                 "bad_framing");
  expect_refused(s.port,
                 "POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length\t: 2\r\n\r\n{}", 
                 strlen("POST /v1/plans HTTP/1.1\r\nHost: t\r\nContent-Length\t: 2\r\n\r\n{}"), "bad_framing");
  expect_refused(s.port,
                 "POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
                 strlen("POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                        "Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n"),
                 "Transfer-Encoding");
  expect_refused(s.port,
                 "POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 strlen("POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                 "Transfer-Encoding");
  expect_refused(s.port, "POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                 strlen("POST /v1/plans HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
                 "Transfer-Encoding");
  expect_refused(s.port, nul_target, sizeof(nul_target) - 1, "bad_url");
  expect_refused(s.port, "GET /healthz\x01 HTTP/1.1\r\nHost: t\r\n\r\n",
                 strlen("GET /healthz\x01 HTTP/1.1\r\nHost: t\r\n\r\n"), "bad_url");
  expect_refused(s.port, "GET /heal thz HTTP/1.1\r\nHost: t\r\n\r\n",
                 strlen("GET /heal thz HTTP/1.1\r\nHost: t\r\n\r\n"), "bad_url");
  expect_refused(s.port, "GARBAGE\r\n\r\n", strlen("GARBAGE\r\n\r\n"), "bad_request_line");
  expect_refused(s.port, bin_line, sizeof(bin_line) - 1, "bad_request_line");
  expect_refused(s.port, "GET /healthz HTTP/9.9 extra\r\n\r\n", strlen("GET /healthz HTTP/9.9 extra\r\n\r\n"),
                 "bad_request_line");
  /* the strictness costs sound requests nothing: kept alive, answered */
  {
    int fd = mp_test_raw_connect(s.port);
    char *a;
    ck_assert_int_ge(fd, 0);
    raw_send(fd, "\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", strlen("\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
    a = raw_read(fd, 15000, 0);
    ASSERT_STATUS(a, 200);
    free(a);
    raw_send(fd, "GET /v1/plans/%41?x=%20 HTTP/1.1\r\nHost: t\r\n\r\n",
             strlen("GET /v1/plans/%41?x=%20 HTTP/1.1\r\nHost: t\r\n\r\n"));
    a = raw_read(fd, 15000, 0);
    ASSERT_STATUS(a, 404);
    free(a);
    close(fd);
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* ---- item: refusal before work ---- */

/* A graph over --max-nodes is refused by the counting pre-scan with the
 * array it overflows named, inline as native JSON, as node-link and as
 * Kusumoto text; one at the limit is planned. */
START_TEST(test_refused_by_count) {
  mp_test_daemon_t s;
  size_t cap = 1 << 20, n, i;
  char *body = malloc(cap);
  json_t *ans = NULL;
  int code;
  ck_assert_ptr_nonnull(body);
  mp_test_daemon_start(&s, "--max-nodes 200", 0);
  for (int over = 0; over <= 1; over++) {
    size_t count = 200 + (size_t)over;
    n = (size_t)snprintf(body, cap, "{\"budget\":\"1GiB\",\"graph\":{\"format\":\"memplan.graph/1\",\"nodes\":["
                                    "{\"id\":\"n0\",\"bytes\":8,\"time\":1}");
    for (i = 1; i < count; i++)
      n += (size_t)snprintf(body + n, cap - n, ",{\"id\":\"n%zu\",\"bytes\":8,\"time\":1,\"inputs\":[\"n%zu\"]}", i,
                            i - 1);
    snprintf(body + n, cap - n, "]}}");
    code = mp_test_daemon_http(&s, "POST", "/v1/plans?wait=60", body, NULL, &ans, NULL);
    if (over) {
      ck_assert_int_eq(code, 413);
      ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "error"), "code")), "graph_too_large");
      ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "error"), "path")), "$.graph.nodes");
    } else {
      ck_assert_msg(code == 200 || code == 202, "the graph at the limit: %d", code);
    }
    json_decref(ans);
    ans = NULL;
  }
  /* node-link */
  n = (size_t)snprintf(body, cap, "{\"budget\":\"1GiB\",\"graph\":{\"directed\":true,\"nodes\":[");
  for (i = 0; i < 201; i++) n += (size_t)snprintf(body + n, cap - n, "%s{\"id\":%zu}", i ? "," : "", i);
  snprintf(body + n, cap - n, "],\"links\":[]}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, NULL, &ans, NULL), 413);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "error"), "path")), "$.graph.nodes");
  json_decref(ans);
  /* Kusumoto text declaring 5000 variables */
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", "{\"budget\":1,\"graph\":\"5000 2\\n\"}", NULL, &ans, NULL),
                   413);
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(ans, "error"), "message")), "5000"));
  json_decref(ans);
  free(body);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* ---- item: CORS ---- */

/* --cors-origin (repeated, or a comma list): an allowed origin is echoed
 * with the headers a browser may read, and a preflight is answered; any
 * other origin gets no CORS header. */
START_TEST(test_cors) {
  mp_test_daemon_t s;
  char *a;
  mp_test_daemon_start(&s, "--cors-origin https://a.example --cors-origin https://b.example,http://c.example:8080",
                       0);
  a = raw_ask(s.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n", 0);
  ASSERT_STATUS(a, 200);
  ck_assert(has_header(a, "Access-Control-Allow-Origin: https://a.example\r\n"));
  ck_assert(has_header(a, "Access-Control-Expose-Headers: X-Request-ID"));
  ck_assert(has_header(a, "Vary: Origin"));
  free(a);
  a = raw_ask(s.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: http://c.example:8080\r\n\r\n", 0);
  ck_assert(has_header(a, "Access-Control-Allow-Origin: http://c.example:8080\r\n"));
  free(a);
  a = raw_ask(s.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n\r\n", 0);
  ASSERT_STATUS(a, 200);
  ck_assert(!has_header(a, "Access-Control-Allow-Origin"));
  free(a);
  /* a preflight: no token needed, the methods and headers allowed */
  a = raw_ask(s.port,
              "OPTIONS /v1/plans HTTP/1.1\r\nHost: t\r\nOrigin: https://b.example\r\n"
              "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization\r\n\r\n",
              1);
  ASSERT_STATUS(a, 204);
  ck_assert(has_header(a, "Access-Control-Allow-Origin: https://b.example\r\n"));
  ck_assert(has_header(a, "Access-Control-Allow-Methods: POST, GET, HEAD, OPTIONS"));
  ck_assert(has_header(a, "Access-Control-Allow-Headers: Authorization, Content-Type, X-Request-ID"));
  free(a);
  a = raw_ask(s.port,
              "OPTIONS /v1/plans HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n"
              "Access-Control-Request-Method: POST\r\n\r\n",
              1);
  ASSERT_STATUS(a, 204);
  ck_assert(!has_header(a, "Access-Control-Allow"));
  free(a);
  /* errors carry the header too, so a page can read them */
  a = raw_ask(s.port, "GET /nope HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n", 0);
  ASSERT_STATUS(a, 404);
  ck_assert(has_header(a, "Access-Control-Allow-Origin: https://a.example\r\n"));
  free(a);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* The new flags' values are checked like the others: a bad one stops the
 * daemon before it listens (exit status 2). */
START_TEST(test_new_flags) {
  static const char *const bad[] = {
      "--max-body-bytes 64MiB --max-inflight-body-bytes 1MiB", "--cors-origin 'a b'", "--cors-origin ,x",
      "--public-reads=maybe", "--min-body-rate fast", "--header-timeout -1"};
  char cmd[512], *out = NULL;
  size_t i;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    snprintf(cmd, sizeof(cmd), "timeout 20 %s %s --listen 127.0.0.1:0 --data-dir /nonexistent/x >/dev/null 2>&1",
             mp_test_daemon_bin(), bad[i]);
    ck_assert_msg(mp_test_run(cmd, NULL) == 2, "accepted: %s", bad[i]);
  }
  snprintf(cmd, sizeof(cmd), "%s --help", mp_test_daemon_bin());
  ck_assert_int_eq(mp_test_run(cmd, &out), 0);
  ck_assert_ptr_nonnull(strstr(out, "MEMPLAN_HEADER_TIMEOUT"));
  ck_assert_ptr_nonnull(strstr(out, "MEMPLAN_MIN_BODY_RATE"));
  ck_assert_ptr_nonnull(strstr(out, "MEMPLAN_MAX_INFLIGHT_BODY_BYTES"));
  ck_assert_ptr_nonnull(strstr(out, "MEMPLAN_PUBLIC_READS"));
  ck_assert_ptr_nonnull(strstr(out, "MEMPLAN_CORS_ORIGIN"));
  free(out);
}
END_TEST

Suite *suite_http_edges(void) {
  Suite *s = suite_create("http_edges");
  TCase *body = tcase_create("body"), *conn = tcase_create("conn"), *proto = tcase_create("proto");
  tcase_set_timeout(body, 120);
  tcase_set_timeout(conn, 120);
  tcase_set_timeout(proto, 120);
  tcase_add_test(body, test_refused_before_the_body);
  tcase_add_test(body, test_bodies_in_flight);
  tcase_add_test(body, test_token_levels);
  tcase_add_test(conn, test_head_deadline);
  tcase_add_test(conn, test_body_rate);
  tcase_add_test(conn, test_slow_heads_shed_under_pressure);
  tcase_add_test(proto, test_protocol_edges);
  tcase_add_test(proto, test_cors);
  tcase_add_test(proto, test_strict_framing);
  tcase_add_test(body, test_refused_by_count);
  tcase_add_test(proto, test_new_flags);
  suite_add_tcase(s, body);
  suite_add_tcase(s, conn);
  suite_add_tcase(s, proto);
  return s;
}
