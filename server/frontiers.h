/* frontiers.h - the frontier and fit service behind POST /v1/fit and
 * GET /v1/graphs/{hash}/frontier: everything between a parsed request and
 * its answer, so that the route handlers (routes.c) only parse and answer.
 *
 * A frontier is computed once per (graph, solver, swap, device) by jobs.c
 * and kept (memory, then the store). A fit is the plans at its budgets
 * (mp_fit: each budget answered with what POST /v1/plans returns there),
 * computed by jobs.c once per (graph, solver, swap, device, least, the set
 * of budgets) and kept under a key of its own ("fit|" and a SHA-256 of the
 * frontier key and the canonical budgets: the asked ones and the asked
 * GPUs' usable bytes, ascending, each once), so that the order budgets are
 * asked in and their repeats never compute again. Each answer is rendered
 * from that canonical fit in the asked order (mp_fit_answer), and the
 * rendered bytes are kept under the query's keep_key (the raw body of a
 * small POST, or the async fit's id), so that the same request again is
 * answered from those bytes (srv_frontiers_cached) without parsing,
 * hashing or rendering. srv_frontiers_get answers from what
 * is kept or starts (or joins) the computation; srv_frontiers_finish
 * answers once it is over; srv_frontiers_pending describes it meanwhile
 * (the frontier route's 202). A computation that failed is remembered for
 * SRV_FRONTIER_FAIL_S seconds (srv_frontiers_job_finished), so that
 * clients polling the route hear why instead of starting it again.
 *
 * Every call borrows the server and keeps no pointer to it. */
#ifndef SRV_FRONTIERS_H
#define SRV_FRONTIERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "device.h"
#include "gpus.h"
#include "graph.h"
#include "jobs.h"
#include "server.h"

/* A fit request as kept for its poll (routes.c): its id and text. */
typedef struct srv_fit_request_s {
  char id[33];
  char *text;
} srv_fit_request_t;

/* What is asked: the frontier of a graph, whole or at some budgets. */
typedef struct srv_frontier_query_s {
  char graph_hash[65];       /* a graph the store holds, or the inline graph's */
  mp_solver_t solver;
  int swap;
  const mp_device_t *device; /* borrowed; NULL: mp_device_init's defaults */
  int fit;                   /* /v1/fit (else the whole frontier): */
  const uint64_t *budgets;   /*   the budgets asked, in order (borrowed) */
  size_t n_budgets;
  const mp_gpu_t *gpus;      /*   the GPUs asked, in order (borrowed) */
  size_t n_gpus;
  int least;                 /*   also the least budget that fits */
  const char *keep_key;      /*   where to keep the rendered answer (NULL: nowhere) */
  const srv_fit_request_t *request; /* the request as kept for an async poll (copied) */
  char client[68];           /* who asks (srv_req_client): the queue's fairness and cap */
  char maximize[33];         /* /v1/fit with "maximize": the dimension (one budget); "" otherwise */
  int64_t max_value;         /* its limit (0: planner/dims.h's MP_DIM_VALUE_MAX) */
} srv_frontier_query_t;

/* The rendered answer kept under `keep_key` (a new reference), or NULL. */
srv_blob_t *srv_frontiers_cached(srv_server_t *s, const char *keep_key);

/* The key a small request body's answer is kept under ("fitb|" and the
 * body itself), or NULL when the body is too large or holds a NUL.
 * malloc'd. */
char *srv_frontiers_body_key(const char *body, size_t len);

/* A query whose frontier is being computed: what srv_frontiers_finish
 * needs once it is over. Owned by the caller (srv_frontier_free). */
typedef struct srv_frontier_s srv_frontier_t;
void srv_frontier_free(void *f); /* void *: it fits srv_req_t.ctx_free */

/* srv_frontiers_get: the same computation failed within the last
 * SRV_FRONTIER_FAIL_S seconds (out->err_code, out->err_msg say why). */
enum { SRV_FRONTIER_FAILED = 4 };
#define SRV_FRONTIER_FAIL_S 60.0

typedef struct srv_frontier_outcome_s {
  const char *cache;         /* "hit", "joined" or "miss" (for the answer's "cache" and
                                the request log); NULL when nothing answered */
  char err_code[32];         /* SRV_FRONTIER_FAILED */
  char err_msg[512];
  json_t *answer;            /* SRV_SUBMIT_CACHED: the answer (a new reference) */
  srv_job_t *job;            /* JOINED / QUEUED: the computation (a reference) */
  srv_frontier_t *pending;   /* JOINED / QUEUED: the caller's */
} srv_frontier_outcome_t;

/* Answer q from the frontier kept, or start (or join) its computation.
 * An inline graph (*graph not NULL) is put in the store first unless it is
 * there, so that the worker can reload it and later requests can name it;
 * *graph is taken over (set to NULL) when a computation is created.
 * Returns SRV_SUBMIT_CACHED, SRV_SUBMIT_JOINED or SRV_SUBMIT_QUEUED (see
 * the outcome), SRV_FRONTIER_FAILED, or SRV_EFULL, SRV_EDRAINING, SRV_ESTORE, SRV_ENOMEM,
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

/* Whether f is a fit's rather than the frontier route's. */
int srv_frontier_is_fit(const srv_frontier_t *f);

/* The request of a fit's f (query.request), or NULL. */
const srv_fit_request_t *srv_frontier_request(const srv_frontier_t *f);

/* The view of a computation not over yet: {"id", "status", "graph_hash",
 * "solver", "cache", "progress"} (progress while it runs). New reference
 * or NULL (out of memory). */
json_t *srv_frontiers_pending(const srv_frontier_t *f, srv_job_t *job);

/* A job reached its end (jobs.c's on_finished, any thread): a frontier
 * that failed is remembered under its key. */
void srv_frontiers_job_finished(srv_server_t *s, srv_job_t *job);

#endif
