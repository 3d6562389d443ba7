/* fuzz_route.c - libFuzzer harness for the daemon's URL decoding and route
 * matching (server/http.c srv_http_unescape, server/routes.c
 * srv_route_match, on the real route table). The first byte of an input
 * picks the method, the rest (cut at a NUL) is the request target; its path
 * is decoded as libmicrohttpd would with our unescaper, then matched. A
 * match must be of the method asked (GET for HEAD), with every placeholder
 * a non-empty segment; a miss must be 404 or 405 with an Allow list that
 * ends in OPTIONS; a %00 must survive decoding as text. Built by
 * `make fuzz`, replayed by `make test` (tests/fuzz/replay_main.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {"GET", "HEAD", "POST", "DELETE", "OPTIONS", "PUT", "PATCH", "get"};

static size_t placeholders(const char *pattern) {
  size_t n = 0;
  for (; *pattern; pattern++) n += *pattern == '{';
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *method;
  char *path, allow[96], *q;
  size_t n, i;
  int status = 0, had_nul = 0;
  srv_req_t *r;
  const srv_route_t *rt;
  if (size == 0) return 0;
  method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
  path = malloc(size);
  r = calloc(1, sizeof(*r));
  if (path == NULL || r == NULL) abort();
  memcpy(path, data + 1, size - 1);
  path[size - 1] = '\0';
  /* libmicrohttpd cuts the query off before decoding the path */
  if ((q = strchr(path, '?')) != NULL) *q = '\0';
  n = strlen(path);
  i = srv_http_unescape(path, &had_nul);
  if (i > n || strlen(path) != i) abort();
  if (had_nul && strstr(path, "%00") == NULL) abort();

  rt = srv_route_match(method, path, r, allow, sizeof(allow), &status);
  if (rt) {
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    if (status != 200 || strcmp(rt->method, want) != 0) abort();
    for (i = 0; i < placeholders(rt->pattern); i++)
      if (r->params[i][0] == '\0' || strchr(r->params[i], '/') != NULL) abort();
  } else if (status == 405) {
    n = strlen(allow);
    if (n < 7 || strcmp(allow + n - 7, "OPTIONS") != 0) abort();
  } else if (status != 404 || allow[0] != '\0') {
    abort();
  }
  free(r);
  free(path);
  return 0;
}
