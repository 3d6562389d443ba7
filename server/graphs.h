/* graphs.h - the graph service: the graphs the daemon keeps, for the route
 * handlers and the plan and frontier services. A graph is stored once, as
 * its canonical native JSON under its hash; a request may then name it by
 * hash instead of sending it again. Only the retention sweep removes a
 * graph (server/store_sweep.c), and only once no kept job refers to it.
 *
 * Every call borrows the server's store; none keeps a pointer. */
#ifndef SRV_GRAPHS_H
#define SRV_GRAPHS_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "graph.h"
#include "server.h"

/* Whether the store holds the graph `hash`: 1 or 0 (0 too when the store
 * fails). */
int srv_graphs_known(srv_server_t *s, const char *hash);

/* The canonical native JSON of `g` (malloc'd, the caller frees it) when the
 * store does not hold `hash` yet, for the caller to store with its job row;
 * *json NULL when it does (it is not rendered again). 0 or SRV_ENOMEM. */
int srv_graphs_render_new(srv_server_t *s, const mp_graph_t *g, const char *hash, char **json, size_t *len);

/* Store `g` under `hash` unless the store holds it already, so that a
 * worker can reload it and later requests can name it. 0, or SRV_ENOMEM
 * when it could not be rendered (a failed write is the store's to log). */
int srv_graphs_keep(srv_server_t *s, const mp_graph_t *g, const char *hash);

/* Load the stored graph `hash` (limits `lim`, NULL: the defaults) into *g:
 * 0, SRV_ESTORE when it cannot be read or parsed (err says why when it
 * parsed badly), SRV_ENOMEM. */
int srv_graphs_load(srv_server_t *s, const char *hash, const mp_limits_t *lim, mp_graph_t **g, mp_error_t *err);

/* The figures of `memplan inspect` for a stored graph, with its
 * "graph_hash": 0 with *out (a new reference); SRV_ESTORE when the stored
 * graph cannot be read; SRV_EINVAL when it cannot be measured (err says
 * why); SRV_ENOMEM. */
int srv_graphs_stats(srv_server_t *s, const char *hash, json_t **out, mp_error_t *err);

#endif
