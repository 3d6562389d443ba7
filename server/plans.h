/* plans.h - the plan service: everything between a parsed plan request and
 * its answer, so that the route handlers (routes.c) only parse and answer.
 *
 * POST /v1/plans is served, cheapest first, from
 *   1. the body cache: the finished answer kept under the SHA-256 of the
 *      request's exact bytes, found before the body is even parsed;
 *   2. the answer cache: the rendered answer kept under the plan's key;
 *   3. jobs.c: a result computed before (memory, then the store), an
 *      identical plan queued or running (joined), or a new job.
 * Every submission gets a plan handle of its own, owned by its principal:
 * one answered from a cache or a result too, on the done job that shows
 * that result (srv_jobs_cached_handle).
 * The first is srv_plans_lookup_body (the handler parses only on a miss),
 * the rest srv_plans_submit. GET and DELETE /v1/plans/{id}, the long polls
 * and the listing go through srv_plans_view, srv_plans_unfinished,
 * srv_plans_cancel and srv_plans_list.
 *
 * Every call borrows the server (its cache, store, jobs and metrics) and
 * keeps no pointer to it. What a call hands back (blobs, texts, jobs, JSON)
 * becomes the caller's, as each field says. */
#ifndef SRV_PLANS_H
#define SRV_PLANS_H

#include <jansson.h>
#include <stddef.h>

#include "cache.h"
#include "graph.h"
#include "jobs.h"
#include "server.h"

/* Who reads: the owner whose plans it may see (a principal's name, "" with
 * no token file), and whether it sees everyone's (http.h sees_all). A plan
 * another may not see is answered as unknown (SRV_ENOTFOUND), so that its
 * existence does not show. */
typedef struct srv_viewer_s {
  const char *owner;
  int all;
} srv_viewer_t;

/* One POST /v1/plans on its way through the service; filled by
 * srv_plans_lookup_body, then srv_plans_submit. */
typedef struct srv_plan_submit_s {
  char body_key[80];        /* the body cache's key for this body */
  int have_body_key;
  const char *cache;        /* "hit", "joined", "miss", or NULL: for the request log */
  /* SRV_SUBMIT_CACHED: the answer without its id, a JSON object from
   * blob->data + skip (a reference, the caller's: srv_respond_blob_id) */
  srv_blob_t *blob;
  size_t skip;
  /* SRV_SUBMIT_JOINED or SRV_SUBMIT_QUEUED: the plan's job (a reference,
   * the caller's) */
  srv_job_t *job;
  /* every outcome: the submission's own plan id (its handle: the job's id
   * when it started the job, a new one when it joined or was answered
   * from a result) */
  char id[33];
} srv_plan_submit_t;

/* Before the body is parsed: SRV_EDRAINING while shutting down; then
 * SRV_SUBMIT_CACHED with sub->blob and sub->id (a handle owned by `owner`,
 * made with `request_id`) when a finished answer is kept for these exact
 * bytes (graph_hash receives the graph it names, for the request log);
 * SRV_ESTORE or SRV_ENOSPACE when the handle could not be stored; 0 to
 * parse the body and call srv_plans_submit. */
int srv_plans_lookup_body(srv_server_t *s, const char *body, size_t len, const char *owner, const char *request_id,
                          srv_plan_submit_t *sub, char graph_hash[65]);

/* Answer or start the plan `p` (its graph_hash names a graph sent inline
 * as *graph, or one the store holds, *graph NULL). *graph is taken over
 * (set to NULL) when a job is created; otherwise it stays the caller's.
 * Returns SRV_SUBMIT_CACHED (sub->blob, sub->id), SRV_SUBMIT_JOINED or
 * SRV_SUBMIT_QUEUED (sub->job, sub->id), the id owned by p->owner; or
 * SRV_EFULL, SRV_EDRAINING, SRV_ESTORE, SRV_ENOSPACE,
 * SRV_ENOMEM, SRV_EBADRESULT (a kept result does not read back). sub->cache
 * is set whenever a cache answered, even when rendering then failed. */
int srv_plans_submit(srv_server_t *s, const srv_plan_params_t *p, mp_graph_t **graph, srv_plan_submit_t *sub);

/* A plan's view as GET /v1/plans/{id} shows it: exactly one field is set. */
typedef struct srv_plan_view_s {
  srv_blob_t *blob;         /* final, kept in the cache (a reference), or */
  char *text;               /* final, rendered now and kept (malloc'd), or */
  size_t len;
  json_t *pending;          /* not final yet (a new reference) */
} srv_plan_view_t;

/* The view of plan `id` as `who` may see it, with the result's timeline
 * when `timeline`. 0, SRV_ENOTFOUND, SRV_ESTORE or SRV_ENOMEM. graph_hash receives the
 * graph the view names, for the request log (left alone when it names
 * none). */
int srv_plans_view(srv_server_t *s, const char *id, const srv_viewer_t *who, int timeline, srv_plan_view_t *v,
                   char graph_hash[65]);

/* Plan `id` when it is queued or running (a new reference), to wait for;
 * NULL when it is unknown or finished. */
srv_job_t *srv_plans_unfinished(srv_server_t *s, const char *id, const srv_viewer_t *who);

/* Cancel plan `id` (its handle): 0 when cancelled, or when the cancel was
 * only requested because it is running (*was_running). The computation
 * stops only when no other plan handle still needs it; otherwise this
 * handle alone is cancelled. SRV_ENOTFOUND (also: not `who`'s);
 * SRV_ECONFLICT when it already finished; SRV_ESTORE. */
int srv_plans_cancel(srv_server_t *s, const char *id, const srv_viewer_t *who, int *was_running);

/* A page of at most `limit` of the plans `who` may see, newest first, filtered by `status`
 * (NULL: all), older than plan `after` (NULL: from the newest), as
 * {"plans": [...], "next": the last id when the page is full, else null}.
 * 0 with *out (a new reference); SRV_ENOTFOUND when `after` names no plan;
 * SRV_ESTORE; SRV_ENOMEM. */
int srv_plans_list(srv_server_t *s, const srv_viewer_t *who, const char *status, unsigned limit, const char *after,
                   json_t **out);

#endif
