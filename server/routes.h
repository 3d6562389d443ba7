/* routes.h - the route table (method, path pattern, handler) and its
 * matcher. Patterns are literal segments and {name} placeholders, which
 * match one non-empty segment and land in srv_req_t.params in order. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>
#include <stdio.h>

#include "http.h"

/* Who may call a route when the daemon has a bearer token (--token-file);
 * without one every route is open. */
typedef enum {
  SRV_ROUTE_OPEN = 0, /* health, readiness, metrics, status, the dashboard page */
  SRV_ROUTE_READ,     /* shows plans or graphs: the token, unless --public-reads */
  SRV_ROUTE_WORK      /* starts, changes or may start work: always the token */
} srv_route_access_t;

typedef struct srv_route_s {
  const char *method;
  const char *pattern;
  enum MHD_Result (*handler)(srv_req_t *r);
  srv_route_access_t access;
} srv_route_t;

/* The route for (method, url), filling r->params; or NULL with *status 404
 * (no such path) or 405 (path known, method not; `allow` lists the methods
 * that are, with HEAD after GET and OPTIONS last). HEAD matches the GET
 * route of its path (libmicrohttpd leaves the body out). */
const srv_route_t *srv_route_match(const char *method, const char *url, srv_req_t *r, char *allow,
                                   size_t allow_len, int *status);

#endif
