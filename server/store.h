/* store.h - the durable store and the interface its backends implement.
 *
 * The store holds
 *
 *   graphs   canonical native JSON of every submitted graph, by hash
 *   jobs     every accepted computation: parameters, status, timings, error,
 *            and how many handles still need it
 *   handles  every submission: a plan as its submitter sees it, with its own
 *            id, owner (the principal), time and request id, naming the job
 *            that computes it. The first submission's handle has the job's
 *            id; an identical submission while that job is in flight gets a
 *            handle of its own on the same job. A handle cancelled alone
 *            shows as cancelled while the job goes on for the others; the
 *            job is cancelled with its last live handle.
 *   results  plan results and frontiers (serialised JSON) by cache key
 *
 * A job row is committed before the client hears 202: that is what lets a
 * restart (or another replica) find every accepted job.
 *
 * Two backends, chosen by --store (srv_store_open):
 *
 *   sqlite:DIR          store_sqlite.c, the embedded default: one SQLite
 *                       database (WAL, synchronous=FULL) under DIR, one
 *                       process. Jobs are queued in memory (jobs.c) and
 *                       recovered from the store at start.
 *   postgresql://...    store_pg.c, shared by several replicas: the jobs
 *                       table is the queue. Workers claim rows (FOR UPDATE
 *                       SKIP LOCKED), fairly between clients, under a
 *                       lease they renew; a unique
 *                       index on the key of active jobs deduplicates across
 *                       replicas; LISTEN/NOTIFY tells every replica when a
 *                       job is queued, finished or to be cancelled
 *                       (store_watch.c listens on the libuv loop).
 *
 * Like libuv's per-platform code, a backend is a table of operations
 * (srv_store_ops_t) behind a struct whose first member is srv_store_t; the
 * srv_store_* functions below dispatch through it. The operations marked
 * "shared" exist only in shared backends (NULL in SQLite's table), and
 * srv_store_shared() says which kind the daemon runs on.
 *
 * Every call may come from any thread. Strings returned to the caller are
 * malloc'd copies the caller frees. */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

typedef struct srv_job_row_s {
  long long seq;            /* insertion order: newest has the largest */
  char id[33];
  char status[16];          /* queued, running, done, failed, cancelled */
  char graph_hash[65];
  char result_key[256];
  uint64_t budget;
  char solver[16], objective[16], accounting[16];
  int timeline;
  double created_ms, started_ms, finished_ms; /* 0 when not yet */
  char *error;              /* JSON text {"code","message"} or NULL; owned */
  char request_id[80];
  char client[68];          /* who submitted it: the queue is fair between clients */
  char owner[68];           /* the handle's principal ("" without a token file) */
  char job_id[33];          /* read through a handle (get_plan, list_jobs): the job computing it */
  int handle_cancelled;     /* read through a handle: that handle alone was cancelled */
  /* shared stores only (zero in SQLite) */
  int attempts;             /* claims so far, this one included */
  int cancel_requested;     /* a client asked to cancel it while it ran */
  char replica[68];         /* read through a handle: the replica whose lease it runs under ("" when none) */
  double lease_until_ms;    /* and when that lease ends, epoch ms on the database's clock (0 when none) */
} srv_job_row_t;

void srv_job_row_clear(srv_job_row_t *row);

/* What one retention sweep deleted, and the bytes in use after it.
 * `skipped`: another replica of a shared store was sweeping it. */
typedef struct srv_sweep_stats_s {
  uint64_t jobs, results, graphs;
  uint64_t bytes_used;
  int skipped;
} srv_sweep_stats_t;

/* Called by a sweep with what one of its statements deleted: job ids,
 * result keys or graph hashes (`what` is "jobs", "results" or "graphs";
 * the strings are borrowed for the call), so that memory forgets them
 * too (cache.h's tags). */
typedef void (*srv_sweep_deleted_fn)(void *arg, const char *what, const char *const *keys, size_t n);

/* What srv_store_renew_leases says of one job. */
enum { SRV_LEASE_KEPT = 0, SRV_LEASE_CANCEL = 1, SRV_LEASE_LOST = 2 };

/* A notification from a shared store's listener: channel and payload are
 * borrowed for the call. */
typedef void (*srv_store_event_fn)(void *arg, const char *channel, const char *payload);

/* The channels shared stores notify on (payloads in store_pg.c). */
#define SRV_STORE_CH_QUEUED "memplan_queued"
#define SRV_STORE_CH_DONE "memplan_done"
#define SRV_STORE_CH_CANCEL "memplan_cancel"
#define SRV_STORE_CH_SWEPT "memplan_swept"

typedef struct srv_store_ops_s {
  const char *name; /* "sqlite", "postgresql" */
  void (*close)(srv_store_t *st);
  int (*health)(srv_store_t *st, char *reason, size_t len);
  int (*accept_job)(srv_store_t *st, srv_job_row_t *row, const char *graph_json, size_t graph_len, size_t n_nodes,
                    unsigned max_queued, unsigned max_per_client, char joined_id[33]);
  int (*update_job)(srv_store_t *st, const char *id, const char *status, double started_ms, double finished_ms,
                    const char *error_json);
  int (*get_job)(srv_store_t *st, const char *id, srv_job_row_t *row);
  int (*pending_jobs)(srv_store_t *st, srv_job_row_t **rows, size_t *n);
  int (*list_jobs)(srv_store_t *st, const char *owner, const char *status, unsigned limit, long long before_seq,
                   json_t *arr, long long *last_seq);
  int (*get_plan)(srv_store_t *st, const char *id, srv_job_row_t *row);
  int (*add_handle)(srv_store_t *st, const srv_job_row_t *handle, const char *job_id);
  int (*add_done_handle)(srv_store_t *st, const srv_job_row_t *handle, const char *job_id);
  int (*cancel_handle)(srv_store_t *st, const char *id, double now_ms, int *remaining);
  int (*count_status)(srv_store_t *st, uint64_t counts[5]);
  int (*put_graph)(srv_store_t *st, const char *hash, const char *json, size_t len, size_t n_nodes);
  int (*get_graph)(srv_store_t *st, const char *hash, char **json, size_t *len);
  int (*has_graph)(srv_store_t *st, const char *hash);
  int (*put_result)(srv_store_t *st, const char *key, const char *json, size_t len, const char *job_id);
  int (*get_result)(srv_store_t *st, const char *key, char **json, size_t *len, char *job_id);
  int (*probe)(srv_store_t *st);
  /* retention (NULL in a backend without it): the primitives the sweep of
   * store_sweep.c runs on. begin: 0 with *h, 1 when another replica holds
   * the sweep, SRV_ESTORE. exec: one statement whose only parameter ($1,
   * if any) is t, returning the deleted keys in its first column, each
   * batch of them given to fn; the rows it deleted, or -1. value: one
   * number ($1 = t), `def` when NULL or failed. bytes: the live data. */
  int (*sweep_begin)(srv_store_t *st, void **h);
  long long (*sweep_exec)(srv_store_t *st, void *h, const char *sql, double t, const char *what,
                          srv_sweep_deleted_fn fn, void *arg);
  double (*sweep_value)(srv_store_t *st, void *h, const char *sql, double t, double def);
  uint64_t (*sweep_bytes)(srv_store_t *st, void *h);
  void (*sweep_end)(srv_store_t *st, void *h);
  /* shared */
  int (*claim_job)(srv_store_t *st, const char *owner, double lease_s, double now_ms, srv_job_row_t *row);
  int (*renew_leases)(srv_store_t *st, const char *owner, double lease_s, const char (*ids)[33], size_t n,
                      int *outcome);
  int (*finish_job)(srv_store_t *st, const char *id, const char *owner, const char *status, double finished_ms,
                    const char *error_json);
  int (*cancel_job)(srv_store_t *st, const char *id, double finished_ms);
  int (*listen_open)(srv_store_t *st, int *fd, char *err, size_t errlen);
  int (*listen_read)(srv_store_t *st, srv_store_event_fn fn, void *arg);
  void (*listen_close)(srv_store_t *st);
} srv_store_ops_t;

/* The head of every backend's struct. */
struct srv_store_s {
  const srv_store_ops_t *ops;
};

/* Open the store `url` names: "" or "sqlite:" (DIR = data_dir), "sqlite:DIR",
 * or a libpq URI ("postgresql://..." or "postgres://..."). A shared store
 * that cannot be reached yet still opens (it reconnects by itself and
 * srv_store_health says why it is unavailable); `pool` bounds its
 * connections. 0, SRV_ENOMEM or SRV_ESTORE with the reason in errbuf. */
int srv_store_open(const char *url, const char *data_dir, unsigned pool, srv_store_t **out, char *errbuf,
                   size_t errlen);
void srv_store_close(srv_store_t *st);

/* The backend's name, and whether it is shared by replicas. */
const char *srv_store_kind(srv_store_t *st);
int srv_store_shared(srv_store_t *st);
/* 0 when the store answered its last request, else SRV_ESTORE with why
 * in `reason`, or SRV_ENOSPACE when its last write failed for want of room
 * (a full disk: SQLITE_FULL; PostgreSQL's SQLSTATE class 53, disk_full,
 * out_of_memory, configuration_limit_exceeded, but not
 * too_many_connections) and no write that adds rows (with PostgreSQL: no
 * probe) has succeeded since.
 * Reads state only: no round trip. Writes that fail for want of room
 * return SRV_ENOSPACE. */
int srv_store_health(srv_store_t *st, char *reason, size_t len);

/* A full store (health SRV_ENOSPACE): try whether it can grow again (a
 * write of 64 KiB, deleted again) and, when it can, leave the full state.
 * 0 when it has room, SRV_ENOSPACE, SRV_ESTORE. Any thread; blocking. */
int srv_store_probe(srv_store_t *st);
/* Retention (store_sweep.c): delete finished jobs that finished before
 * before_ms (0: no age limit), then while the live data exceeds max_bytes
 * (0: no limit) the oldest finished jobs, a batch at a time, but none that
 * finished after keep_after_ms (what was just computed is read now); with
 * them every result and graph no remaining job refers to and not newer
 * than what was deleted. Never a queued or running job, nor what one
 * refers to. `deleted` (may be NULL) hears every key deleted. A shared
 * store is swept by one replica at a time (out->skipped for the others).
 * SRV_EINVAL when the backend has no retention. Blocking: the upkeep runs
 * it off the loop. */
int srv_store_sweep(srv_store_t *st, double before_ms, double keep_after_ms, uint64_t max_bytes,
                    srv_sweep_deleted_fn deleted, void *arg, srv_sweep_stats_t *out);

/* Record an accepted job, its first handle (the same id, row->owner) and,
 * when graph_json is not NULL, its graph, in one transaction. Fills row->seq.
 * row->status is "queued", or "done" (with started_ms and finished_ms) for
 * a job whose result the store already holds (no worker runs it). 0 or SRV_ESTORE. A shared store also
 * deduplicates and bounds its queue: SRV_ECONFLICT when a job with the
 * same result_key is queued or running (its id in joined_id), SRV_EFULL
 * when max_queued (0: no bound) jobs are already queued, SRV_ECLIENTFULL
 * when max_per_client (0: no bound) of row->client's are. SRV_ENOSPACE
 * when the store has no room. */
int srv_store_accept_job(srv_store_t *st, srv_job_row_t *row, const char *graph_json, size_t graph_len,
                         size_t n_nodes, unsigned max_queued, unsigned max_per_client, char joined_id[33]);
/* Set status and timings (0 leaves a timing unchanged) and error (NULL
 * clears it); "queued" (a plan waiting for a worker again) clears
 * started_ms. 0, SRV_ENOTFOUND or SRV_ESTORE. */
int srv_store_update_job(srv_store_t *st, const char *id, const char *status, double started_ms,
                         double finished_ms, const char *error_json);
int srv_store_get_job(srv_store_t *st, const char *id, srv_job_row_t *row);
/* Jobs that were queued or running, oldest first (*rows malloc'd; clear
 * each row and free the array). */
int srv_store_pending_jobs(srv_store_t *st, srv_job_row_t **rows, size_t *n);
/* A page of plans (handles), newest first, with seq < before_seq (0: from
 * the newest), owned by `owner` (NULL: anyone's), filtered by status when
 * not NULL: the rows of that status and every queued or running one, whose
 * plan may have that status in memory before its row says so (the caller
 * filters again by the live status). Appends row summaries to `arr` (each with "owner", and
 * "_job", the computing job's id, which the caller removes). */
int srv_store_list_jobs(srv_store_t *st, const char *owner, const char *status, unsigned limit,
                        long long before_seq, json_t *arr, long long *last_seq);
/* Plan `id` (a handle) as its submitter sees it: the job's row with the
 * handle's id, seq, owner, created_ms and request_id, job_id the job's
 * id, and status "cancelled" (finished at the cancel) when the handle alone
 * was cancelled. 0, SRV_ENOTFOUND, SRV_ESTORE. */
int srv_store_get_plan(srv_store_t *st, const char *id, srv_job_row_t *row);
/* A new handle (handle->id, owner, created_ms, request_id) on job `job_id`,
 * which must be queued or running and still needed by a live handle: 0,
 * SRV_ECONFLICT (it is not: its last handle was cancelled, or it ended),
 * SRV_ENOSPACE, SRV_ESTORE. */
int srv_store_add_handle(srv_store_t *st, const srv_job_row_t *handle, const char *job_id);
/* A new handle (handle->id, owner, created_ms, request_id) on job
 * `job_id` that is done: a submission answered from its result. One
 * insert. 0, SRV_ENOTFOUND (no such job, or it is not done), SRV_ENOSPACE,
 * SRV_ESTORE. */
int srv_store_add_done_handle(srv_store_t *st, const srv_job_row_t *handle, const char *job_id);
/* Cancel handle `id` alone: 0 with *remaining the live handles its job
 * still has (0: cancel the job too); SRV_ENOTFOUND; SRV_ECONFLICT when
 * the handle was cancelled before or its job ended; SRV_ESTORE. */
int srv_store_cancel_handle(srv_store_t *st, const char *id, double now_ms, int *remaining);
/* Counts by status: queued, running, done, failed, cancelled. */
int srv_store_count_status(srv_store_t *st, uint64_t counts[5]);

int srv_store_put_graph(srv_store_t *st, const char *hash, const char *json, size_t len, size_t n_nodes);
int srv_store_get_graph(srv_store_t *st, const char *hash, char **json, size_t *len);
/* Whether the store holds the graph, without reading its JSON: 1 or 0
 * (0 too when the store fails). */
int srv_store_has_graph(srv_store_t *st, const char *hash);

/* 0 when stored; 1 when a shared store already held a result for the key
 * and kept it (a result is written once); SRV_ESTORE. */
int srv_store_put_result(srv_store_t *st, const char *key, const char *json, size_t len, const char *job_id);
/* job_id (33 bytes, may be NULL) receives the job that computed it, or "". */
int srv_store_get_result(srv_store_t *st, const char *key, char **json, size_t *len, char *job_id);

/* ---- shared stores only ---- */

/* Claim a job that is running under an expired lease (its replica died),
 * else the oldest queued job of the client with the fewest running and
 * served longest ago, for `owner` for lease_s seconds: it becomes running
 * with started_ms = now_ms. 0 with *row, SRV_ENOTFOUND, SRV_ESTORE. */
int srv_store_claim_job(srv_store_t *st, const char *owner, double lease_s, double now_ms, srv_job_row_t *row);
/* Extend the leases of `owner` on jobs ids[0..n): outcome[i] receives
 * SRV_LEASE_KEPT, SRV_LEASE_CANCEL (kept, and a client asked to cancel it)
 * or SRV_LEASE_LOST (no longer this owner's). 0 or SRV_ESTORE. */
int srv_store_renew_leases(srv_store_t *st, const char *owner, double lease_s, const char (*ids)[33], size_t n,
                           int *outcome);
/* End `owner`'s claim on job `id` with `status` (a final one, or "queued"
 * to hand it back) and notify the replicas. 0; SRV_ECONFLICT when the job
 * is no longer this owner's; SRV_ESTORE. */
int srv_store_finish_job(srv_store_t *st, const char *id, const char *owner, const char *status,
                         double finished_ms, const char *error_json);
/* Cancel job `id`: 0 when it was queued (now cancelled), 1 when it is
 * running somewhere (its replica is asked to stop it), SRV_ENOTFOUND,
 * SRV_ECONFLICT (already final), SRV_ESTORE. */
int srv_store_cancel_job(srv_store_t *st, const char *id, double finished_ms);
/* The listening connection (store_watch.c drives it on the loop): open it
 * (blocking; *fd is its socket to poll), read what arrived (calling fn for
 * each notification; SRV_ESTORE when the connection broke), close it. */
int srv_store_listen_open(srv_store_t *st, int *fd, char *err, size_t errlen);
int srv_store_listen_read(srv_store_t *st, srv_store_event_fn fn, void *arg);
void srv_store_listen_close(srv_store_t *st);

/* ---- backends (store_sqlite.c, store_pg.c) ---- */

int srv_store_sqlite_open(const char *dir, srv_store_t **out, char *errbuf, size_t errlen);
int srv_store_pg_open(const char *uri, unsigned pool, srv_store_t **out, char *errbuf, size_t errlen);

/* A job row as the API shows it (without the result). New reference. */
json_t *srv_job_row_to_json(const srv_job_row_t *row);
/* Unix milliseconds as RFC 3339 text in UTC (a new reference). */
json_t *srv_rfc3339(double ms);
/* The same for a row read through a handle (list_jobs): with "owner" and
 * "_job" (the job's id, for the caller). New reference. */
json_t *srv_plan_row_to_json(const srv_job_row_t *row);
/* For a running row of a shared store: set "replica": {"id", "lease_until"}
 * on `view` (nothing otherwise). 0, or -1 when out of memory. */
int srv_row_replica_json(const srv_job_row_t *row, json_t *view);

#endif
