/* routes.h - the route table (method, path pattern, handler) and its
 * matcher. Patterns are literal segments and {name} placeholders, which
 * match one non-empty segment and land in srv_req_t.params in order. */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include <stddef.h>
#include <stdio.h>

#include "http.h"

typedef struct srv_route_s {
  const char *method;
  const char *pattern;
  enum MHD_Result (*handler)(srv_req_t *r);
  int write;                 /* guarded by the bearer token when one is set */
} srv_route_t;

/* The route for (method, url), filling r->params; or NULL with *status 404
 * (no such path) or 405 (path known, method not; `allow` lists the methods
 * that are). */
const srv_route_t *srv_route_match(const char *method, const char *url, srv_req_t *r, char *allow,
                                   size_t allow_len, int *status);

#endif
