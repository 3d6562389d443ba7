/* http_client.h - the small blocking HTTP/1.1 client behind `memplan
 * --server URL`: plain http over TCP to a memplan-server on the same host
 * or the cluster network, one request per connection (Connection: close).
 * https is not supported (put the daemon on loopback, or reach it through
 * an SSH tunnel or a local proxy). Private to clients/cli. */
#ifndef MP_HTTP_CLIENT_H
#define MP_HTTP_CLIENT_H

#include <stddef.h>

/* A parsed "http://host[:port][/prefix]" (the scheme may be left out). */
typedef struct mp_http_url_s {
  char host[256];   /* as written: a name, an IPv4 address or [IPv6] */
  char port[8];     /* "80" when not given */
  char prefix[512]; /* path prefix without a trailing '/', often "" */
} mp_http_url_t;

/* 0, or -1 with a reason in why[n] (https, no host, a bad port). */
int mp_http_parse_url(const char *url, mp_http_url_t *u, char *why, size_t n);

typedef struct mp_http_response_s {
  int status;       /* 200, 404, ... */
  char *body;       /* malloc'd and NUL-terminated (the caller frees it) */
  size_t len;
  int retry_after;  /* seconds from Retry-After, 0 when absent */
} mp_http_response_t;

/* Send `method` `prefix+path` with an optional JSON body (NULL: none) and
 * an optional bearer token, and read the whole answer within timeout_s
 * seconds. 0 with *resp filled for any HTTP status; -1 with a reason in
 * why[n] when the daemon could not be reached or the answer was cut or
 * malformed. */
int mp_http_request(const mp_http_url_t *u, const char *method, const char *path, const char *token,
                    const char *body, size_t body_len, double timeout_s, mp_http_response_t *resp, char *why,
                    size_t n);

void mp_http_response_free(mp_http_response_t *resp);

#endif
