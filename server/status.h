/* status.h - the daemon's own state as GET /readyz, /metrics and
 * /v1/status report it: the gauges gathered from jobs.c, cache.c and the
 * store, and the counters of metrics.c. Every call borrows the server. */
#ifndef SRV_STATUS_H
#define SRV_STATUS_H

#include <jansson.h>
#include <stddef.h>

#include "server.h"

/* "ready", or why not: "draining" (shutting down), "store_unavailable"
 * (a shared store cannot be reached; the daemon keeps reconnecting) or
 * "queue_full". */
const char *srv_status_readiness(srv_server_t *s);
/* The /readyz body for that answer: {"status"}, plus "store" and "reason"
 * (the store's last error) when it is store_unavailable. New reference. */
json_t *srv_status_readiness_json(srv_server_t *s, const char *readiness);

/* The Prometheus exposition text (malloc'd, the caller frees it; length in
 * *len), or NULL when out of memory. */
char *srv_status_metrics(srv_server_t *s, size_t *len);

/* The /v1/status object: version, uptime, workers, queue, cache and plans
 * by status. A new reference, or NULL when out of memory. */
json_t *srv_status_json(srv_server_t *s);

#endif
