/* graphs.h - the graph service: the graphs the daemon keeps, for the route
 * handlers and the plan and frontier services. A graph is stored once, as
 * its canonical native JSON under its hash, and never removed; a request
 * may then name it by hash instead of sending it again.
 *
 * Every call borrows the server's store; none keeps a pointer. */
#ifndef SRV_GRAPHS_H
#define SRV_GRAPHS_H

#include <stddef.h>

#include "graph.h"
#include "server.h"

/* Whether the store holds the graph `hash`: 1 or 0 (0 too when the store
 * fails). */
int srv_graphs_known(srv_server_t *s, const char *hash);

/* The canonical native JSON of `g` (malloc'd, the caller frees it) when the
 * store does not hold `hash` yet, for the caller to store with its job row;
 * *json NULL when it does (it is not rendered again). 0 or SRV_ENOMEM. */
int srv_graphs_render_new(srv_server_t *s, const mp_graph_t *g, const char *hash, char **json, size_t *len);

#endif
