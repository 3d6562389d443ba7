/* jobs.h - the work queue and the planner workers.
 *
 * A job is one computation: a plan (public, with an id, persisted in the
 * store before it is acknowledged) or a frontier (internal, for /v1/fit and
 * the frontier route; only its result is persisted). Jobs wait in a bounded
 * queue and run on --workers threads of our own.
 *
 * The queue is fair between clients (srv_plan_params_t.client: the
 * principal, else the peer address; see http.h srv_req_client): each client
 * has its own FIFO, a free worker takes the oldest job of the client with
 * the fewest jobs running (ties: the one served longest ago), and a client
 * may have at most max_queued_per_client jobs waiting (SRV_ECLIENTFULL,
 * 429), so a flood from one client delays another's next plan only until
 * the first worker frees. --queue-size still bounds the whole queue.
 *
 * A write the store refuses never leaves a plan in a false state: see
 * "recording" in jobs.c (srv_jobs_flush, srv_job_unrecorded). While the
 * store is full (srv_store_health says SRV_ENOSPACE) no new job is taken.
 *
 * Why our own pthreads and not libuv's threadpool: the pool is global and
 * shared with libuv's file-system work, its queue is unbounded and has no
 * way to drop a queued item other than uv_cancel racing the pool; here the
 * queue must be bounded (503 when full), must let DELETE remove a queued
 * plan, must stop handing out work while draining, and must know how many
 * plans are running. A mutex, a condition variable and N threads give all
 * of that in a few lines, and leave the libuv loop to signals and timers.
 *
 * Identical work is shared: while a job with a given cache key is queued or
 * running, a second submission with the same key joins it instead of
 * computing again, under a handle of its own (its own plan id and owner:
 * store.h). A job is cancelled when its last live handle is.
 *
 * With a shared store (srv_store_shared: PostgreSQL, several replicas) the
 * store's jobs table is the plans' queue for every replica: a submission
 * is deduplicated and bounded there (--queue-size counts the cluster's
 * queued plans), any replica's idle worker claims the oldest plan under a
 * lease of --store-lease seconds that srv_jobs_tick renews, and a plan
 * whose replica died is claimed again when its lease is over. Plans
 * running elsewhere are known here as far as a client asks about them, and
 * end when the store's notification says so (srv_jobs_store_event), waking
 * their waiters through on_finished like local ones. Frontiers stay local.
 *
 * Ownership: srv_job_t objects are reference counted. Every function that
 * returns one returns a new reference; release it with srv_job_unref().
 * Fields marked "immutable" may be read without a lock; the others through
 * the accessors (srv_job_snapshot, srv_job_to_json). */
#ifndef SRV_JOBS_H
#define SRV_JOBS_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "keys.h"
#include "plan.h"
#include "server.h"

typedef enum {
  SRV_JOB_QUEUED = 0,
  SRV_JOB_RUNNING = 1,
  SRV_JOB_DONE = 2,
  SRV_JOB_FAILED = 3,
  SRV_JOB_CANCELLED = 4
} srv_job_status_t;

typedef enum { SRV_JOB_PLAN = 0, SRV_JOB_FRONTIER = 1 } srv_job_kind_t;

#define SRV_JOB_NSTATUS 5

/* A status's name ("queued", "running", "done", "failed", "cancelled"),
 * and back: the status named `name`, or -1. */
const char *srv_job_status_name(srv_job_status_t s);
int srv_job_status_parse(const char *name);

typedef struct srv_job_s srv_job_t;

typedef struct srv_jobs_config_s {
  unsigned workers;
  unsigned planner_threads;  /* mp_plan_options_t.threads of every job */
  unsigned queue_size;
  unsigned max_queued_per_client; /* 0: only queue_size bounds a client */
  double plan_timeout_s;
  double lease_s;            /* shared store: a claim's lease */
  mp_limits_t limits;        /* for graphs reloaded from the store */
  srv_store_t *store;        /* borrowed */
  srv_cache_t *cache;        /* borrowed */
  srv_metrics_t *metrics;    /* borrowed */
  /* Called (from any thread, without locks held) when a job reaches a final
   * state, or goes back to queued at shutdown. The job is borrowed. */
  void (*on_finished)(srv_job_t *job, void *arg);
  void *arg;
} srv_jobs_config_t;

int srv_jobs_new(const srv_jobs_config_t *cfg, srv_jobs_t **out);
/* Re-queue every job the store has as queued or running (after a crash or
 * a drain). Call before srv_jobs_start. *n receives the count. */
int srv_jobs_recover(srv_jobs_t *jobs, size_t *n);
int srv_jobs_start(srv_jobs_t *jobs);

/* Outcomes of a submission (positive) or errors (negative SRV_E*). */
enum { SRV_SUBMIT_CACHED = 1, SRV_SUBMIT_JOINED = 2, SRV_SUBMIT_QUEUED = 3 };

/* Submit a plan under `key`, which must be srv_keys_plan(p) (the
 * caller has it already: it looks the rendered answer up first). *graph (may be NULL when the graph is in the store) is
 * taken over when a job is created and set to NULL; otherwise it stays the
 * caller's. graph_json (the canonical native JSON, may be NULL when the
 * store already has it) is written with the job row in one transaction.
 * CACHED: *result (malloc'd) and result_job_id are set. JOINED / QUEUED:
 * *job is a new reference. Errors: SRV_EFULL, SRV_EDRAINING, SRV_ESTORE,
 * SRV_ENOMEM, SRV_ECLIENTFULL (p->client has its share queued), SRV_ENOSPACE
 * (the store is full). handle_id receives the submission's own plan id:
 * the new job's (QUEUED), or a new handle's on the joined job (JOINED,
 * owned by p->owner: srv_store_add_handle); "" when CACHED. */
int srv_jobs_submit_plan(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key, mp_graph_t **graph,
                         const char *graph_json, size_t graph_json_len, srv_job_t **job, char **result,
                         size_t *result_len, char result_job_id[33], char handle_id[33]);

/* A submission `p` answered from the result kept under `key`: its own
 * plan handle, owned by p->owner. On job `result_job_id` (the job that
 * computed the result, "" when unknown) when the store holds it done: one
 * insert (srv_store_add_done_handle). Otherwise (a result a fit computed,
 * or one whose job retention deleted) a done job of its own for the
 * result, with its first handle and, when graph_json is not NULL, its graph
 * (n_nodes nodes), in one transaction; no worker runs it. 0 with
 * handle_id and job_id (the job the handle reads); SRV_ENOSPACE,
 * SRV_ESTORE. */
int srv_jobs_cached_handle(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key,
                           const char *result_job_id, const char *graph_json, size_t graph_json_len, size_t n_nodes,
                           char handle_id[33], char job_id[33]);

/* Submit a frontier computation for p's graph_hash, solver, swap and
 * device under `key`, which must be srv_keys_frontier(p); or, with budgets
 * (*budgets taken over and set to NULL when a job is created), a fit: the
 * plans at those budgets (mp_fit) under the fit's key (frontiers.c), and
 * with SRV_FIT_LEAST in `fit_flags` the plan at the least budget that fits
 * (mp_fit_least, as "least" and "min_feasible_budget" in the result); a
 * maximize (p->maximize) with SRV_FIT_EACH answers each budget with its
 * maximize (mp_maximize_entry_to_json) as a fit's entries. Either
 * runs on behalf of p->client (its turn in the ring and its
 * --max-queued-per-client share, as for a plan). The same outcomes (no job
 * row). */
/* A fit's flags: also the least budget that fits; maximize at each budget
 * (rather than the one budget's Maximize answer). */
enum { SRV_FIT_LEAST = 1, SRV_FIT_EACH = 2 };

int srv_jobs_submit_frontier(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key,
                             uint64_t **budgets, size_t n_budgets, int fit_flags, mp_graph_t **graph,
                             srv_job_t **job, char **result, size_t *result_len);

/* An active (queued or running) plan by id, or NULL. New reference. */
srv_job_t *srv_jobs_find(srv_jobs_t *jobs, const char *id);

/* Cancel a plan. 0 when cancelled (queued) or cancelling (running);
 * SRV_ENOTFOUND; SRV_ECONFLICT when it already finished. */
int srv_jobs_cancel(srv_jobs_t *jobs, const char *id);

void srv_job_ref(srv_job_t *job);
void srv_job_unref(srv_job_t *job);

typedef struct srv_job_snapshot_s {
  srv_job_kind_t kind;
  srv_job_status_t status;
  char id[33];
  char key[256];
  char graph_hash[65];
  char err_code[32];
  char err_msg[512];
} srv_job_snapshot_t;
void srv_job_snapshot(srv_job_t *job, srv_job_snapshot_t *out);
int srv_job_is_final(srv_job_t *job);
/* A plan job as the API shows it (id, status, parameters, timings, error,
 * and while it runs its progress). New reference or NULL. */
json_t *srv_job_to_json(srv_job_t *job);
/* A running job's progress, {"phase", "fraction", "elapsed_ms"} (phase
 * and fraction null when unknown, as for a plan running on another
 * replica); NULL when the job is not running (or out of memory). New
 * reference. */
json_t *srv_job_progress_json(srv_job_t *job);

/* Whether plan `job` ended here but the store has not taken its final
 * state yet (it is then shown from memory). */
int srv_job_unrecorded(srv_job_t *job);
/* Write the final states the store refused before; returns how many are
 * still unrecorded. Blocking (store writes): the upkeep calls it off the
 * loop. */
size_t srv_jobs_flush(srv_jobs_t *jobs);
/* The plans by status (queued, running, done, failed, cancelled): the
 * store's counts corrected with what is known here and not yet written
 * (plans that ended unrecorded, recovered plans the store still says are
 * running), taken so that no status write lands between the two. 0 or the
 * store's error. Blocking (a store read). */
int srv_jobs_count_status(srv_jobs_t *jobs, uint64_t counts[SRV_JOB_NSTATUS]);

void srv_jobs_stats(srv_jobs_t *jobs, uint64_t *queued, uint64_t *capacity, uint64_t *running,
                    uint64_t *workers);

/* Draining: workers take no new job; srv_jobs_running() says how many are
 * still running; srv_jobs_interrupt() stops them (they go back to queued
 * in the store, to be finished by the next start). */
void srv_jobs_pause(srv_jobs_t *jobs);
uint64_t srv_jobs_running(srv_jobs_t *jobs);
void srv_jobs_interrupt(srv_jobs_t *jobs);

/* ---- shared store only (no-ops otherwise) ---- */

/* This replica's id in the store's leases ("" with an embedded store). */
const char *srv_jobs_owner(srv_jobs_t *jobs);
/* Upkeep, every second or so (store_watch.c calls it on a libuv pool
 * thread: it waits on the store): renew the leases of the plans running
 * here (stopping those cancelled elsewhere or no longer this replica's),
 * refresh the store's queued count, and wake idle workers to claim (a dead
 * replica's plan becomes claimable with no notification). `recheck` also
 * asks the store about the plans running elsewhere that are known here, in
 * case a notification was missed (after the listener reconnected). */
void srv_jobs_tick(srv_jobs_t *jobs, int recheck);
/* A notification from the store (channel and payload as store.h says).
 * Any thread. */
void srv_jobs_store_event(srv_jobs_t *jobs, const char *channel, const char *payload);

/* Retention deleted these stored rows (job ids, result keys, graph
 * hashes): memory forgets what it kept of them (the cache's tags), so
 * that nothing is answered from a row the store no longer has. A shared
 * store's other replicas hear of them through srv_jobs_store_event. A
 * reader that read a row just before the sweep deleted it can still put
 * it in memory after this; that entry lasts until the LRU evicts it. Any
 * thread. */
void srv_jobs_forget(srv_jobs_t *jobs, const char *const *keys, size_t n);

/* Stop and join the workers, release every job. */
void srv_jobs_free(srv_jobs_t *jobs);

#endif
