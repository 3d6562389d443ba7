/* frontiers.h - the frontier service behind POST /v1/fit and
 * GET /v1/graphs/{hash}/frontier: everything between a parsed request and
 * its answer, so that the route handlers (routes.c) only parse and answer.
 *
 * A frontier is computed once per (graph, solver, swap, device) by jobs.c
 * and kept (memory, then the store); a fit is answered from it, one point
 * per budget (mp_frontier_lookup). srv_frontiers_get answers from what is
 * kept or starts (or joins) the computation; srv_frontiers_finish answers
 * once it is over.
 *
 * Every call borrows the server and keeps no pointer to it. */
#ifndef SRV_FRONTIERS_H
#define SRV_FRONTIERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "graph.h"
#include "jobs.h"
#include "server.h"

/* What is asked: the frontier of a graph, whole or at some budgets. */
typedef struct srv_frontier_query_s {
  char graph_hash[65];       /* a graph the store holds, or the inline graph's */
  mp_solver_t solver;
  int swap;
  const mp_device_t *device; /* borrowed; NULL: mp_device_init's defaults */
  uint64_t *budgets;         /* /v1/fit: the budgets to answer, taken over
                                (freed even on failure); NULL: the whole frontier */
  size_t n_budgets;
} srv_frontier_query_t;

/* A query whose frontier is being computed: what srv_frontiers_finish
 * needs once it is over. Owned by the caller (srv_frontier_free). */
typedef struct srv_frontier_s srv_frontier_t;
void srv_frontier_free(void *f); /* void *: it fits srv_req_t.ctx_free */

typedef struct srv_frontier_outcome_s {
  const char *cache;         /* "hit", "joined" or "miss" (for the answer's "cache" and
                                the request log); NULL when nothing answered */
  json_t *answer;            /* SRV_SUBMIT_CACHED: the answer (a new reference) */
  srv_job_t *job;            /* JOINED / QUEUED: the computation (a reference) */
  srv_frontier_t *pending;   /* JOINED / QUEUED: the caller's */
} srv_frontier_outcome_t;

/* Answer q from the frontier kept, or start (or join) its computation.
 * An inline graph (*graph not NULL) is put in the store first unless it is
 * there, so that the worker can reload it and later requests can name it;
 * *graph is taken over (set to NULL) when a computation is created.
 * Returns SRV_SUBMIT_CACHED, SRV_SUBMIT_JOINED or SRV_SUBMIT_QUEUED (see
 * the outcome), or SRV_EFULL, SRV_EDRAINING, SRV_ESTORE, SRV_ENOMEM,
 * SRV_EBADRESULT (the kept frontier does not read back; out->cache is
 * "hit"). */
int srv_frontiers_get(srv_server_t *s, const srv_frontier_query_t *q, mp_graph_t **graph,
                      srv_frontier_outcome_t *out);

/* The answer once `job` (the computation srv_frontiers_get gave with f) is
 * over: 0 with *answer (a new reference); SRV_EBADRESULT or SRV_ENOMEM when
 * it cannot be rendered; SRV_ENOTFOUND when there is no frontier: *snap
 * then says whether the job failed (and why) or is not finished. */
int srv_frontiers_finish(srv_server_t *s, const srv_frontier_t *f, srv_job_t *job, srv_job_snapshot_t *snap,
                         json_t **answer);

#endif
