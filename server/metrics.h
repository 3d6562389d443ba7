/* metrics.h - the daemon's counters and histograms, rendered in the
 * Prometheus text format 0.0.4 for GET /metrics.
 *
 * Counters are updated from any thread (one mutex; the updates are a few
 * additions, far cheaper than the requests they count). Gauges that other
 * modules own (queue depth, running jobs, cache size, the process's own
 * figures) are passed in at render time, so this module never reaches into
 * them. The series: memplan_build_info, requests and their duration by
 * route, cache and deduplication counters, computations, finished plans
 * and their solve time by solver, the queue, workers and cache gauges,
 * draining, uptime, and the standard process_* series. */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "procstat.h"
#include "server.h"

srv_metrics_t *srv_metrics_new(void);
void srv_metrics_free(srv_metrics_t *m);

/* One finished HTTP request, counted by (method, route, status) and timed
 * by route, under one lock. `method` is the request's method (any string;
 * the standard ones are labelled as such, others "other"), `route` a route
 * pattern (static string), `seconds` from its first byte to its answer
 * being queued (a long poll's wait included). */
void srv_metrics_request_done(srv_metrics_t *m, const char *method, const char *route, unsigned status,
                              double seconds);
/* A result or frontier lookup answered from the cache (hit) or not (miss). */
void srv_metrics_cache(srv_metrics_t *m, int hit);
/* A submission joined a computation already queued or running. */
void srv_metrics_dedup(srv_metrics_t *m);
/* A worker started a computation (plan or frontier). */
void srv_metrics_computation(srv_metrics_t *m, int frontier);
/* A plan finished: solver asked, final status, wall time in seconds. */
void srv_metrics_plan_done(srv_metrics_t *m, int solver, const char *status, double seconds);

void srv_metrics_cache_counts(srv_metrics_t *m, uint64_t *hits, uint64_t *misses);

typedef struct srv_gauges_s {
  uint64_t queue_depth, queue_capacity, running, workers;
  uint64_t cache_entries, cache_bytes, cache_max_bytes;
  int draining;
  double uptime_s;
  srv_procstat_t proc; /* the process_* series, when proc.ok */
} srv_gauges_t;

/* The exposition text (malloc'd, caller frees), length in *len. NULL when
 * out of memory. */
char *srv_metrics_render(srv_metrics_t *m, const srv_gauges_t *g, size_t *len);

#endif
