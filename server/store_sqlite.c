/* store_sqlite.c - the embedded store: one SQLite database under the data
 * directory (see store.h for what it holds and why).
 *
 * WAL with synchronous=FULL: a committed job row survives a crash or power
 * loss. One connection behind a mutex serves every thread (SQLite
 * serialises writers anyway); each call is short. Results are recomputable,
 * but sharing the one connection keeps them on the same durable path at no
 * extra cost.
 *
 * A write that fails with SQLITE_FULL (the disk, or the test cap below)
 * puts the store in the full state that srv_store_health reports: new work
 * is refused (507) until a write succeeds again, which the upkeep's probe
 * tries every second. The retention sweep (store_sweep.c, on the
 * primitives at the end of this file) deletes finished jobs and what only
 * they refer to; SQLite reuses the freed pages, so the file stops growing
 * but does not shrink.
 *
 * Test hook: MEMPLAN_TEST_STORE_MAX_PAGES_FILE names a file holding a page
 * count, applied as PRAGMA max_page_count at open and at every probe, so
 * that tests make real writes fail with SQLITE_FULL (and give the room
 * back) without filling a disk. Unset in service. */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jobs.h"
#include "json_util.h"
#include "log.h"
#include "util.h"

typedef struct srv__sqlite_s {
  srv_store_t base; /* first: the store is this struct */
  pthread_mutex_t mu;
  sqlite3 *db;
  atomic_int full;          /* the last write failed with SQLITE_FULL */
  char path[1200];
} srv__sqlite_t;


static const char *const srv__schema =
    "CREATE TABLE IF NOT EXISTS graphs ("
    "  hash TEXT PRIMARY KEY, json TEXT NOT NULL, nodes INTEGER NOT NULL, created_ms REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,"
    "  graph_hash TEXT NOT NULL, result_key TEXT NOT NULL, budget TEXT NOT NULL,"
    "  solver TEXT NOT NULL, objective TEXT NOT NULL, accounting TEXT NOT NULL,"
    "  timeline INTEGER NOT NULL, created_ms REAL NOT NULL, started_ms REAL NOT NULL DEFAULT 0,"
    "  finished_ms REAL NOT NULL DEFAULT 0, error TEXT, request_id TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status, seq);"
    "CREATE TABLE IF NOT EXISTS results ("
    "  key TEXT PRIMARY KEY, json TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '', created_ms REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS probe (b BLOB);"
    "CREATE TABLE IF NOT EXISTS handles ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, job_id TEXT NOT NULL,"
    "  owner TEXT NOT NULL DEFAULT '', created_ms REAL NOT NULL, request_id TEXT NOT NULL DEFAULT '',"
    "  cancelled_ms REAL NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS handles_by_job ON handles(job_id);"
    "CREATE INDEX IF NOT EXISTS handles_by_owner ON handles(owner, seq);";

/* Whether table `table` has column `col`. */
static int srv__has_column(sqlite3 *db, const char *table, const char *col) {
  sqlite3_stmt *s = NULL;
  int has = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, col, -1, SQLITE_STATIC);
    has = sqlite3_step(s) == SQLITE_ROW;
  }
  sqlite3_finalize(s);
  return has;
}

/* Columns added after the first release, for stores created before: the
 * client of a job; the live handles a job has, and a handle for every job
 * of a store from before handles (the job's own id, owned by nobody: only
 * principals that read all plans see them), in one transaction. */
static int srv__migrate(sqlite3 *db, char **emsg) {
  int rc;
  if (!srv__has_column(db, "jobs", "client") &&
      (rc = sqlite3_exec(db, "ALTER TABLE jobs ADD COLUMN client TEXT NOT NULL DEFAULT '';"
                             "CREATE INDEX IF NOT EXISTS jobs_by_finish ON jobs(finished_ms);",
                         NULL, NULL, emsg)) != SQLITE_OK)
    return rc;
  if (srv__has_column(db, "jobs", "handles")) return SQLITE_OK;
  return sqlite3_exec(db,
                      "BEGIN IMMEDIATE;"
                      "ALTER TABLE jobs ADD COLUMN handles INTEGER NOT NULL DEFAULT 1;"
                      "INSERT OR IGNORE INTO handles(id, job_id, owner, created_ms, request_id)"
                      "  SELECT id, id, '', created_ms, request_id FROM jobs ORDER BY seq;"
                      "COMMIT;",
                      NULL, NULL, emsg);
}

/* The test hook's page cap (see the top of the file); callers hold mu. */
static void srv__apply_test_cap(srv__sqlite_t *st) {
  const char *f = getenv("MEMPLAN_TEST_STORE_MAX_PAGES_FILE");
  FILE *fp;
  long pages = 0;
  char sql[64];
  if (f == NULL || f[0] == '\0' || (fp = fopen(f, "r")) == NULL) return;
  if (fscanf(fp, "%ld", &pages) != 1) pages = 0;
  fclose(fp);
  if (pages <= 0) return;
  snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %ld", pages);
  sqlite3_exec(st->db, sql, NULL, NULL, NULL);
}

/* The outcome of a write that adds rows: 0 on success (the store is no longer full),
 * SRV_ENOSPACE when SQLite found no room (the store is now full), else
 * SRV_ESTORE. `ok` says whether the write succeeded; callers hold mu. */
static int srv__write_rc(srv__sqlite_t *st, int ok) {
  if (ok) {
    atomic_store(&st->full, 0);
    return 0;
  }
  if ((sqlite3_extended_errcode(st->db) & 0xff) == SQLITE_FULL) {
    if (!atomic_exchange(&st->full, 1))
      srv_log(SRV_LOG_ERROR, "the store is full: new work is refused until it has room",
              json_pack("{s:s}", "path", st->path));
    return SRV_ENOSPACE;
  }
  return SRV_ESTORE;
}

static const srv_store_ops_t srv__sqlite_ops;

static double srv__now(void) { return srv_now_ms(); }

static void srv__log_db(srv__sqlite_t *st, const char *what) {
  srv_log(SRV_LOG_ERROR, "store error",
          json_pack("{s:s,s:s}", "op", what, "error", sqlite3_errmsg(st->db)));
}

int srv_store_sqlite_open(const char *dir, srv_store_t **out, char *errbuf, size_t errlen) {
  char path[1200];
  srv__sqlite_t *st;
  char *emsg = NULL;

  *out = NULL;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(errbuf, errlen, "cannot create %s: %s", dir, strerror(errno));
    return SRV_ESTORE;
  }
  snprintf(path, sizeof(path), "%s/memplan.db", dir);
  st = calloc(1, sizeof(*st));
  if (st) snprintf(st->path, sizeof(st->path), "%s", path);
  if (st == NULL) {
    snprintf(errbuf, errlen, "out of memory");
    return SRV_ENOMEM;
  }
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      NULL) != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot open %s: %s", path, st->db ? sqlite3_errmsg(st->db) : "out of memory");
    sqlite3_close(st->db);
    free(st);
    return SRV_ESTORE;
  }
  sqlite3_busy_timeout(st->db, 5000);
  if (sqlite3_exec(st->db,
                   "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, &emsg) != SQLITE_OK ||
      sqlite3_exec(st->db, srv__schema, NULL, NULL, &emsg) != SQLITE_OK || srv__migrate(st->db, &emsg) != SQLITE_OK) {
    snprintf(errbuf, errlen, "cannot initialise %s: %s", path, emsg ? emsg : "unknown error");
    sqlite3_free(emsg);
    sqlite3_close(st->db);
    free(st);
    return SRV_ESTORE;
  }
  pthread_mutex_init(&st->mu, NULL);
  atomic_init(&st->full, 0);
  srv__apply_test_cap(st);
  st->base.ops = &srv__sqlite_ops;
  *out = &st->base;
  return 0;
}

static void srv__sq_close(srv_store_t *base) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  /* A clean close checkpoints the WAL into the main file. */
  sqlite3_close(st->db);
  pthread_mutex_destroy(&st->mu);
  free(st);
}

static int srv__put_graph_locked(srv__sqlite_t *st, const char *hash, const char *json, size_t len,
                                 size_t n_nodes) {
  sqlite3_stmt *s = NULL;
  int rc;
  if (sqlite3_prepare_v2(st->db,
                         "INSERT OR IGNORE INTO graphs(hash, json, nodes, created_ms) VALUES(?,?,?,?)",
                         -1, &s, NULL) != SQLITE_OK)
    return SRV_ESTORE;
  sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, json, (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)n_nodes);
  sqlite3_bind_double(s, 4, srv__now());
  rc = srv__write_rc(st, sqlite3_step(s) == SQLITE_DONE);
  sqlite3_finalize(s);
  return rc;
}

static int srv__sq_put_graph(srv_store_t *base, const char *hash, const char *json, size_t len, size_t n_nodes) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  int rc;
  if (len > INT32_MAX) return SRV_ESTORE;
  pthread_mutex_lock(&st->mu);
  rc = srv__put_graph_locked(st, hash, json, len, n_nodes);
  if (rc) srv__log_db(st, "put graph");
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* Insert handle->id on job `job_id`; *seq its position. Callers hold mu,
 * in a transaction. 0 or -1. */
static int srv__insert_handle(srv__sqlite_t *st, const srv_job_row_t *handle, const char *job_id, long long *seq) {
  sqlite3_stmt *s = NULL;
  int ok;
  if (sqlite3_prepare_v2(st->db,
                         "INSERT INTO handles(id, job_id, owner, created_ms, request_id) VALUES(?,?,?,?,?)", -1, &s,
                         NULL) != SQLITE_OK)
    return -1;
  sqlite3_bind_text(s, 1, handle->id, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, job_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, handle->owner, -1, SQLITE_STATIC);
  sqlite3_bind_double(s, 4, handle->created_ms);
  sqlite3_bind_text(s, 5, handle->request_id, -1, SQLITE_STATIC);
  ok = sqlite3_step(s) == SQLITE_DONE;
  sqlite3_finalize(s);
  if (ok && seq) *seq = (long long)sqlite3_last_insert_rowid(st->db);
  return ok ? 0 : -1;
}

/* One process owns this store: jobs.c deduplicates and bounds its queue in
 * memory, so max_queued, max_per_client and joined_id are not used here. */
static int srv__sq_accept_job(srv_store_t *base, srv_job_row_t *row, const char *graph_json, size_t graph_len,
                              size_t n_nodes, unsigned max_queued, unsigned max_per_client, char joined_id[33]) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  char budget[32];
  int rc = SRV_ESTORE;

  (void)max_queued;
  (void)max_per_client;
  (void)joined_id;
  if (graph_len > INT32_MAX) return SRV_ESTORE;
  snprintf(budget, sizeof(budget), "%llu", (unsigned long long)row->budget);
  pthread_mutex_lock(&st->mu);
  if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) goto out;
  if (graph_json && srv__put_graph_locked(st, row->graph_hash, graph_json, graph_len, n_nodes) != 0) {
    rc = atomic_load(&st->full) ? SRV_ENOSPACE : SRV_ESTORE;
    srv__log_db(st, "accept job");
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    goto out;
  }
  if (sqlite3_prepare_v2(st->db,
                         "INSERT INTO jobs(id, status, graph_hash, result_key, budget, solver, objective,"
                         " accounting, timeline, created_ms, request_id, client, started_ms, finished_ms)"
                         " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &s, NULL) != SQLITE_OK)
    goto rollback;
  sqlite3_bind_text(s, 1, row->id, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, row->status, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, row->graph_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, row->result_key, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 5, budget, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 6, row->solver, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 7, row->objective, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 8, row->accounting, -1, SQLITE_STATIC);
  sqlite3_bind_int(s, 9, row->timeline);
  sqlite3_bind_double(s, 10, row->created_ms);
  sqlite3_bind_text(s, 11, row->request_id, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 12, row->client, -1, SQLITE_STATIC);
  sqlite3_bind_double(s, 13, row->started_ms);
  sqlite3_bind_double(s, 14, row->finished_ms);
  if (sqlite3_step(s) != SQLITE_DONE) goto rollback;
  sqlite3_finalize(s);
  s = NULL;
  if (srv__insert_handle(st, row, row->id, &row->seq) != 0) goto rollback;
  if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto rollback;
  rc = srv__write_rc(st, 1);
  goto out;
rollback:
  srv__log_db(st, "accept job");
  rc = srv__write_rc(st, 0);
  sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
out:
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_update_job(srv_store_t *base, const char *id, const char *status, double started_ms,
                         double finished_ms, const char *error_json) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db,
                         "UPDATE jobs SET status = ?1, started_ms = CASE WHEN ?1 = 'queued' THEN 0"
                         " WHEN ?2 > 0 THEN ?2 ELSE started_ms END,"
                         " finished_ms = CASE WHEN ?3 > 0 THEN ?3 ELSE finished_ms END, error = ?4 WHERE id = ?5",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, status, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, started_ms);
    sqlite3_bind_double(s, 3, finished_ms);
    if (error_json)
      sqlite3_bind_text(s, 4, error_json, -1, SQLITE_STATIC);
    else
      sqlite3_bind_null(s, 4);
    sqlite3_bind_text(s, 5, id, -1, SQLITE_STATIC);
    /* A row rewritten in place says nothing of room for new rows: a full
     * store stays full until an insert or the probe succeeds. */
    if (sqlite3_step(s) == SQLITE_DONE)
      rc = sqlite3_changes(st->db) > 0 ? 0 : SRV_ENOTFOUND;
    else
      rc = srv__write_rc(st, 0);
  }
  if (rc != 0 && rc != SRV_ENOTFOUND) srv__log_db(st, "update job");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

#define SRV__JOB_COLS                                                                              \
  "seq, id, status, graph_hash, result_key, budget, solver, objective, accounting, timeline,"     \
  " created_ms, started_ms, finished_ms, error, request_id, client"

static void srv__copy(char *dst, size_t n, const unsigned char *src) {
  snprintf(dst, n, "%s", src ? (const char *)src : "");
}

static int srv__read_row(sqlite3_stmt *s, srv_job_row_t *r) {
  const unsigned char *err;
  memset(r, 0, sizeof(*r));
  r->seq = sqlite3_column_int64(s, 0);
  srv__copy(r->id, sizeof(r->id), sqlite3_column_text(s, 1));
  srv__copy(r->status, sizeof(r->status), sqlite3_column_text(s, 2));
  srv__copy(r->graph_hash, sizeof(r->graph_hash), sqlite3_column_text(s, 3));
  srv__copy(r->result_key, sizeof(r->result_key), sqlite3_column_text(s, 4));
  r->budget = strtoull((const char *)sqlite3_column_text(s, 5), NULL, 10);
  srv__copy(r->solver, sizeof(r->solver), sqlite3_column_text(s, 6));
  srv__copy(r->objective, sizeof(r->objective), sqlite3_column_text(s, 7));
  srv__copy(r->accounting, sizeof(r->accounting), sqlite3_column_text(s, 8));
  r->timeline = sqlite3_column_int(s, 9);
  r->created_ms = sqlite3_column_double(s, 10);
  r->started_ms = sqlite3_column_double(s, 11);
  r->finished_ms = sqlite3_column_double(s, 12);
  err = sqlite3_column_text(s, 13);
  if (err) {
    r->error = strdup((const char *)err);
    if (r->error == NULL) return SRV_ENOMEM;
  }
  srv__copy(r->request_id, sizeof(r->request_id), sqlite3_column_text(s, 14));
  srv__copy(r->client, sizeof(r->client), sqlite3_column_text(s, 15));
  return 0;
}

static int srv__sq_get_job(srv_store_t *base, const char *id, srv_job_row_t *row) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE, step;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT " SRV__JOB_COLS " FROM jobs WHERE id = ?", -1, &s, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
      rc = srv__read_row(s, row);
    else if (step == SQLITE_DONE)
      rc = SRV_ENOTFOUND;
  }
  if (rc == SRV_ESTORE) srv__log_db(st, "get job");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_pending_jobs(srv_store_t *base, srv_job_row_t **rows, size_t *n) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  srv_job_row_t *arr = NULL;
  size_t cnt = 0, cap = 0;
  int rc = SRV_ESTORE, step;
  *rows = NULL;
  *n = 0;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db,
                         "SELECT " SRV__JOB_COLS " FROM jobs WHERE status IN ('queued','running') ORDER BY seq",
                         -1, &s, NULL) != SQLITE_OK)
    goto out;
  while ((step = sqlite3_step(s)) == SQLITE_ROW) {
    if (cnt == cap) {
      srv_job_row_t *na;
      cap = cap ? cap * 2 : 16;
      na = realloc(arr, cap * sizeof(*arr));
      if (na == NULL) {
        rc = SRV_ENOMEM;
        goto out;
      }
      arr = na;
    }
    if (srv__read_row(s, &arr[cnt]) != 0) {
      rc = SRV_ENOMEM;
      goto out;
    }
    cnt++;
  }
  if (step == SQLITE_DONE) rc = 0;
out:
  if (rc == SRV_ESTORE) srv__log_db(st, "pending jobs");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (rc != 0) {
    size_t i;
    for (i = 0; i < cnt; i++) srv_job_row_clear(&arr[i]);
    free(arr);
    return rc;
  }
  *rows = arr;
  *n = cnt;
  return 0;
}

/* A plan as its submitter sees it: the job's row through a handle (see
 * srv_store_get_plan), then owner, job id and whether the handle alone was
 * cancelled. */
#define SRV__PLAN_STATUS "CASE WHEN h.cancelled_ms > 0 THEN 'cancelled' ELSE j.status END"
#define SRV__PLAN_COLS                                                                                       \
  "h.seq, h.id, " SRV__PLAN_STATUS ", j.graph_hash, j.result_key, j.budget, j.solver, j.objective,"          \
  " j.accounting, j.timeline, h.created_ms,"                                                                 \
  " CASE WHEN h.cancelled_ms > 0 AND j.started_ms > h.cancelled_ms THEN 0 ELSE j.started_ms END,"           \
  " CASE WHEN h.cancelled_ms > 0 THEN h.cancelled_ms ELSE j.finished_ms END,"                               \
  " CASE WHEN h.cancelled_ms > 0 THEN NULL ELSE j.error END, h.request_id, j.client, h.owner, j.id,"        \
  " h.cancelled_ms > 0 FROM handles h JOIN jobs j ON j.id = h.job_id"

static int srv__read_plan(sqlite3_stmt *s, srv_job_row_t *r) {
  int rc = srv__read_row(s, r);
  srv__copy(r->owner, sizeof(r->owner), sqlite3_column_text(s, 16));
  srv__copy(r->job_id, sizeof(r->job_id), sqlite3_column_text(s, 17));
  r->handle_cancelled = sqlite3_column_int(s, 18);
  return rc;
}

static int srv__sq_list_jobs(srv_store_t *base, const char *owner, const char *status, unsigned limit,
                             long long before_seq, json_t *arr, long long *last_seq) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE, step;
  *last_seq = 0;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db,
                         "SELECT " SRV__PLAN_COLS " WHERE (?1 IS NULL OR " SRV__PLAN_STATUS " IN (?1, 'queued', 'running'))"
                         " AND (?2 = 0 OR h.seq < ?2) AND (?4 IS NULL OR h.owner = ?4) ORDER BY h.seq DESC LIMIT ?3",
                         -1, &s, NULL) != SQLITE_OK)
    goto out;
  if (status)
    sqlite3_bind_text(s, 1, status, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, 1);
  sqlite3_bind_int64(s, 2, before_seq);
  sqlite3_bind_int(s, 3, (int)limit);
  if (owner)
    sqlite3_bind_text(s, 4, owner, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(s, 4);
  while ((step = sqlite3_step(s)) == SQLITE_ROW) {
    srv_job_row_t r;
    json_t *j;
    if (srv__read_plan(s, &r) != 0) {
      srv_job_row_clear(&r);
      rc = SRV_ENOMEM;
      goto out;
    }
    j = srv_plan_row_to_json(&r);
    *last_seq = r.seq;
    srv_job_row_clear(&r);
    if (j == NULL || json_array_append_new(arr, j) != 0) {
      rc = SRV_ENOMEM;
      goto out;
    }
  }
  if (step == SQLITE_DONE) rc = 0;
out:
  if (rc == SRV_ESTORE) srv__log_db(st, "list jobs");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_get_plan(srv_store_t *base, const char *id, srv_job_row_t *row) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE, step;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT " SRV__PLAN_COLS " WHERE h.id = ?", -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
      rc = srv__read_plan(s, row);
    else if (step == SQLITE_DONE)
      rc = SRV_ENOTFOUND;
  }
  if (rc == SRV_ESTORE) srv__log_db(st, "get plan");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* One statement with text parameters and no rows; the rows it changed, or
 * -1. Callers hold mu. */
static int srv__change(srv__sqlite_t *st, const char *sql, const char *a, const char *b) {
  sqlite3_stmt *s = NULL;
  int n = -1;
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) return -1;
  sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
  if (b) sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
  if (sqlite3_step(s) == SQLITE_DONE) n = sqlite3_changes(st->db);
  sqlite3_finalize(s);
  return n;
}

static int srv__sq_add_handle(srv_store_t *base, const srv_job_row_t *handle, const char *job_id) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  int rc = SRV_ESTORE, n;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) goto out;
  n = srv__change(st,
                  "UPDATE jobs SET handles = handles + 1 WHERE id = ?1 AND status IN ('queued','running')"
                  " AND handles > 0",
                  job_id, NULL);
  if (n == 0) {
    rc = SRV_ECONFLICT;
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    goto out;
  }
  if (n < 0 || srv__insert_handle(st, handle, job_id, NULL) != 0 ||
      sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    srv__log_db(st, "add handle");
    rc = srv__write_rc(st, 0);
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    goto out;
  }
  rc = srv__write_rc(st, 1);
out:
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* One statement: the handle exists only if its job does and is done.
 * It is the whole cost of a submission answered from memory, so it is
 * committed without waiting for the disk (synchronous=NORMAL for this one
 * write; WAL): a killed daemon keeps it (the write is in the file), and
 * the next write that waits for the disk (any job's row) makes it durable
 * against a power cut too. Only a power cut before then loses it, and with
 * it only an id whose answer the client holds. */
static int srv__sq_add_done_handle(srv_store_t *base, const srv_job_row_t *handle, const char *job_id) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE;
  pthread_mutex_lock(&st->mu);
  sqlite3_exec(st->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
  if (sqlite3_prepare_v2(st->db,
                         "INSERT INTO handles(id, job_id, owner, created_ms, request_id)"
                         " SELECT ?1, id, ?3, ?4, ?5 FROM jobs WHERE id = ?2 AND status = 'done'",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, handle->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, handle->owner, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, handle->created_ms);
    sqlite3_bind_text(s, 5, handle->request_id, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_DONE)
      rc = sqlite3_changes(st->db) == 1 ? srv__write_rc(st, 1) : SRV_ENOTFOUND;
    else
      rc = srv__write_rc(st, 0);
  }
  if (rc != 0 && rc != SRV_ENOTFOUND) srv__log_db(st, "add done handle");
  sqlite3_finalize(s);
  sqlite3_exec(st->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_cancel_handle(srv_store_t *base, const char *id, double now_ms, int *remaining) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  char job_id[33] = "", now[40];
  int rc = SRV_ESTORE, step, live = 0;
  *remaining = 0;
  snprintf(now, sizeof(now), "%.17g", now_ms);
  pthread_mutex_lock(&st->mu);
  if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) goto out;
  if (sqlite3_prepare_v2(st->db,
                         "SELECT h.job_id, h.cancelled_ms = 0 AND j.status IN ('queued','running')"
                         " FROM handles h JOIN jobs j ON j.id = h.job_id WHERE h.id = ?",
                         -1, &s, NULL) != SQLITE_OK)
    goto rollback;
  sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
  step = sqlite3_step(s);
  if (step == SQLITE_ROW) {
    srv__copy(job_id, sizeof(job_id), sqlite3_column_text(s, 0));
    live = sqlite3_column_int(s, 1);
  }
  sqlite3_finalize(s);
  s = NULL;
  if (step != SQLITE_ROW && step != SQLITE_DONE) goto rollback;
  if (step == SQLITE_DONE || !live) {
    rc = step == SQLITE_DONE ? SRV_ENOTFOUND : SRV_ECONFLICT;
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    goto out;
  }
  if (srv__change(st, "UPDATE handles SET cancelled_ms = CAST(?2 AS REAL) WHERE id = ?1", id, now) != 1 ||
      srv__change(st, "UPDATE jobs SET handles = handles - 1 WHERE id = ?1 AND handles > 0", job_id, NULL) < 0 ||
      sqlite3_prepare_v2(st->db, "SELECT handles FROM jobs WHERE id = ?", -1, &s, NULL) != SQLITE_OK)
    goto rollback;
  sqlite3_bind_text(s, 1, job_id, -1, SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_ROW) goto rollback;
  *remaining = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  s = NULL;
  if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto rollback;
  rc = 0;
  goto out;
rollback:
  srv__log_db(st, "cancel handle");
  sqlite3_finalize(s);
  s = NULL;
  sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  rc = SRV_ESTORE;
out:
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_count_status(srv_store_t *base, uint64_t counts[5]) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE, step, i;
  memset(counts, 0, 5 * sizeof(counts[0]));
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT status, COUNT(*) FROM jobs GROUP BY status", -1, &s, NULL) ==
      SQLITE_OK) {
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      i = srv_job_status_parse((const char *)sqlite3_column_text(s, 0));
      if (i >= 0) counts[i] = (uint64_t)sqlite3_column_int64(s, 1);
    }
    if (step == SQLITE_DONE) rc = 0;
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__get_blob(srv__sqlite_t *st, const char *sql, const char *key, char **json, size_t *len,
                         char *extra, size_t extra_len) {
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE, step;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
      int n = sqlite3_column_bytes(s, 0);
      const unsigned char *t = sqlite3_column_text(s, 0);
      char *copy = malloc((size_t)n + 1);
      if (copy == NULL || t == NULL) {
        free(copy);
        rc = SRV_ENOMEM;
      } else {
        memcpy(copy, t, (size_t)n);
        copy[n] = '\0';
        *json = copy;
        *len = (size_t)n;
        if (extra) srv__copy(extra, extra_len, sqlite3_column_text(s, 1));
        rc = 0;
      }
    } else if (step == SQLITE_DONE) {
      rc = SRV_ENOTFOUND;
    }
  }
  if (rc == SRV_ESTORE) srv__log_db(st, "get");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_get_graph(srv_store_t *base, const char *hash, char **json, size_t *len) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  return srv__get_blob(st, "SELECT json, nodes FROM graphs WHERE hash = ?", hash, json, len, NULL, 0);
}

static int srv__sq_has_graph(srv_store_t *base, const char *hash) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int found = 0;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM graphs WHERE hash = ?", -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, hash, -1, SQLITE_STATIC);
    found = sqlite3_step(s) == SQLITE_ROW;
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return found;
}

static int srv__sq_put_result(srv_store_t *base, const char *key, const char *json, size_t len, const char *job_id) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  int rc = SRV_ESTORE;
  if (len > INT32_MAX) return SRV_ESTORE;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db,
                         "INSERT OR REPLACE INTO results(key, json, job_id, created_ms) VALUES(?,?,?,?)", -1,
                         &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, json, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, job_id ? job_id : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, srv__now());
    rc = srv__write_rc(st, sqlite3_step(s) == SQLITE_DONE);
  }
  if (rc) srv__log_db(st, "put result");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

static int srv__sq_get_result(srv_store_t *base, const char *key, char **json, size_t *len, char *job_id) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  if (job_id) job_id[0] = '\0';
  return srv__get_blob(st, "SELECT json, job_id FROM results WHERE key = ?", key, json, len, job_id,
                       job_id ? 33 : 0);
}

static int srv__sq_health(srv_store_t *base, char *reason, size_t len) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  if (len) reason[0] = '\0';
  if (!atomic_load(&st->full)) return 0; /* a local file: other failures show up on each call */
  if (len) snprintf(reason, len, "%s: %s", st->path, sqlite3_errstr(SQLITE_FULL));
  return SRV_ENOSPACE;
}

/* Commit 64 KiB, then delete it: a real write to the file and its WAL. */
static int srv__sq_probe(srv_store_t *base) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  int ok, rc;
  pthread_mutex_lock(&st->mu);
  srv__apply_test_cap(st);
  ok = sqlite3_exec(st->db, "BEGIN IMMEDIATE; INSERT INTO probe(b) VALUES(zeroblob(65536)); COMMIT;", NULL, NULL,
                    NULL) == SQLITE_OK;
  rc = srv__write_rc(st, ok);
  if (!ok) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_exec(st->db, "DELETE FROM probe", NULL, NULL, NULL);
  pthread_mutex_unlock(&st->mu);
  if (rc == 0) srv_log(SRV_LOG_INFO, "the store has room again: new work is taken", NULL);
  return rc;
}

/* ---- retention: the primitives of store_sweep.c ---- */

/* One process owns the store: nothing to take. */
static int srv__sq_sweep_begin(srv_store_t *base, void **h) {
  (void)base;
  *h = NULL;
  return 0;
}

static void srv__sq_sweep_end(srv_store_t *base, void *h) {
  (void)base;
  (void)h;
}

/* Run `sql` ($1 bound to `t` when it has a parameter) in its own
 * transaction, handing the keys it returns to fn; the rows it changed, or
 * -1. The keys are handed over after the lock is let go. */
static long long srv__sq_sweep_exec(srv_store_t *base, void *h, const char *sql, double t, const char *what,
                                    srv_sweep_deleted_fn fn, void *arg) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  char **keys = NULL;
  size_t n = 0, cap = 0, i;
  long long rows = -1;
  int step;
  (void)h;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    if (sqlite3_bind_parameter_count(s) > 0) sqlite3_bind_double(s, 1, t);
    long long seen = 0;
    /* A row per key deleted (memory short of room for a key: its entry
     * stays in memory, the row goes all the same). */
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      const unsigned char *k = sqlite3_column_text(s, 0);
      char **nk;
      seen++;
      if (n == cap && (nk = realloc(keys, (cap ? cap * 2 : 64) * sizeof(*keys))) != NULL) {
        keys = nk;
        cap = cap ? cap * 2 : 64;
      }
      if (n < cap && k && (keys[n] = strdup((const char *)k)) != NULL) n++;
    }
    if (step == SQLITE_DONE) rows = seen;
  }
  if (rows < 0) srv__log_db(st, "sweep");
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  if (fn && n) fn(arg, what, (const char *const *)keys, n);
  for (i = 0; i < n; i++) free(keys[i]);
  free(keys);
  return rows;
}

static double srv__sq_sweep_value(srv_store_t *base, void *h, const char *sql, double t, double def) {
  srv__sqlite_t *st = (srv__sqlite_t *)base;
  sqlite3_stmt *s = NULL;
  double v = def;
  (void)h;
  pthread_mutex_lock(&st->mu);
  if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) == SQLITE_OK) {
    if (sqlite3_bind_parameter_count(s) > 0) sqlite3_bind_double(s, 1, t);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) v = sqlite3_column_double(s, 0);
  }
  sqlite3_finalize(s);
  pthread_mutex_unlock(&st->mu);
  return v;
}

/* The pages in use: SQLite reuses freed pages, so the file's size is not
 * the measure. */
static uint64_t srv__sq_sweep_bytes(srv_store_t *base, void *h) {
  return (uint64_t)srv__sq_sweep_value(
      base, h,
      "SELECT ((SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()))"
      " * (SELECT page_size FROM pragma_page_size())",
      0, 0);
}

static const srv_store_ops_t srv__sqlite_ops = {
  .name = "sqlite",
  .close = srv__sq_close,
  .health = srv__sq_health,
  .accept_job = srv__sq_accept_job,
  .update_job = srv__sq_update_job,
  .get_job = srv__sq_get_job,
  .pending_jobs = srv__sq_pending_jobs,
  .list_jobs = srv__sq_list_jobs,
  .get_plan = srv__sq_get_plan,
  .add_handle = srv__sq_add_handle,
  .add_done_handle = srv__sq_add_done_handle,
  .cancel_handle = srv__sq_cancel_handle,
  .count_status = srv__sq_count_status,
  .put_graph = srv__sq_put_graph,
  .get_graph = srv__sq_get_graph,
  .has_graph = srv__sq_has_graph,
  .put_result = srv__sq_put_result,
  .get_result = srv__sq_get_result,
  .probe = srv__sq_probe,
  .sweep_begin = srv__sq_sweep_begin,
  .sweep_exec = srv__sq_sweep_exec,
  .sweep_value = srv__sq_sweep_value,
  .sweep_bytes = srv__sq_sweep_bytes,
  .sweep_end = srv__sq_sweep_end,
};
