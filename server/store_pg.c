/* store_pg.c - the shared store: PostgreSQL through libpq (see store.h).
 *
 * Several replicas share one database. The jobs table is the queue: a
 * worker claims the oldest queued row (UPDATE ... WHERE seq = (SELECT ...
 * FOR UPDATE SKIP LOCKED)), which sets its owner (the replica's id) and a
 * lease (lease_until, on the database's clock) that the replica renews; a
 * row still "running" past its lease belongs to a replica that died, and
 * the next claim takes it. A partial unique index on result_key over the
 * queued and running rows makes an identical submission on any replica
 * join the job in flight, and results are inserted once per key.
 *
 * Notifications (pg_notify, sent when the statement commits):
 *   memplan_queued  payload: a job id    a job can be claimed
 *   memplan_done    "ID STATUS"          a job reached a final status
 *   memplan_cancel  a job id             a client cancelled a running job
 * store_watch.c listens to them on a connection of its own.
 *
 * Connections: a pool of at most `pool` connections, opened when needed.
 * One found broken (the server restarted) is closed with every idle one
 * opened before it, and statements that are safe to repeat run once more
 * on a new connection. While the server cannot be reached, new connections
 * are tried no more often than a backoff allows (0.1 s doubling to 2 s);
 * in between, calls fail at once and srv_store_health says why.
 *
 * The schema is created and migrated by the first connection of each
 * process, under an advisory lock, so replicas starting together migrate
 * once; each migration is idempotent and recorded in schema_version.
 *
 * A statement that fails for want of room (SQLSTATE class 53: a full disk
 * under the tablespace, out of memory, temp_file_limit) puts the store in
 * the full state srv_store_health reports, as SQLITE_FULL does the
 * embedded store: new work gets 507 until the upkeep's probe, every
 * second, finds room again. Retention (the sweep,
 * store_sweep.c) runs on one replica at a time, below. */
#include "store.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

typedef struct srv__conn_s {
  PGconn *c;
  unsigned gen; /* the pool's generation when it was opened */
} srv__conn_t;

typedef struct srv__pg_s {
  srv_store_t base; /* first: the store is this struct */
  char *uri;
  unsigned max_open;
  pthread_mutex_t mu; /* the pool, the backoff and the reason */
  pthread_cond_t cv;
  srv__conn_t *idle;
  unsigned n_idle, n_open;
  unsigned gen;       /* bumped when a connection is found broken */
  double next_try_ms; /* monotonic: no new connection before */
  double backoff_ms;
  atomic_int migrated;
  atomic_int healthy;
  atomic_int full;    /* a write failed for want of room (SQLSTATE class 53) */
  char reason[256];
  char full_reason[256];
  PGconn *listen;     /* store_watch.c's connection, outside the pool */
} srv__pg_t;

/* The advisory lock migrations hold ("memplan" in ASCII), and the one a
 * replica holds while it sweeps (one more). */
#define SRV__PG_LOCK "7876826844192110"
#define SRV__PG_SWEEP_LOCK "7876826844192111"

static const char *const srv__migrations[] = {
  /* 1: graphs, jobs (with their leases) and results */
  "CREATE TABLE IF NOT EXISTS graphs ("
  "  hash TEXT PRIMARY KEY, json TEXT NOT NULL, nodes BIGINT NOT NULL, created_ms DOUBLE PRECISION NOT NULL);"
  "CREATE TABLE IF NOT EXISTS jobs ("
  "  seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,"
  "  graph_hash TEXT NOT NULL, result_key TEXT NOT NULL, budget TEXT NOT NULL,"
  "  solver TEXT NOT NULL, objective TEXT NOT NULL, accounting TEXT NOT NULL,"
  "  timeline INTEGER NOT NULL, created_ms DOUBLE PRECISION NOT NULL,"
  "  started_ms DOUBLE PRECISION NOT NULL DEFAULT 0, finished_ms DOUBLE PRECISION NOT NULL DEFAULT 0,"
  "  error TEXT, request_id TEXT NOT NULL DEFAULT '',"
  "  owner TEXT, lease_until TIMESTAMPTZ, attempts INTEGER NOT NULL DEFAULT 0,"
  "  cancel_requested BOOLEAN NOT NULL DEFAULT false);"
  "CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status, seq);"
  "CREATE UNIQUE INDEX IF NOT EXISTS jobs_active_key ON jobs(result_key)"
  "  WHERE status IN ('queued', 'running');"
  "CREATE TABLE IF NOT EXISTS results ("
  "  key TEXT PRIMARY KEY, json TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '',"
  "  created_ms DOUBLE PRECISION NOT NULL);",
  /* 2: who submitted each job, for the claims' fairness between clients */
  "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS client TEXT NOT NULL DEFAULT '';"
  "CREATE INDEX IF NOT EXISTS jobs_by_client ON jobs(client, status);",
  /* 3: retention (the sweep finds finished jobs by their end, and what a
   * job refers to), the full store's probe, and room in each page of jobs
   * for its rows' next versions, so that a plan's end is recorded in place
   * even when the disk has no room for new pages */
  "CREATE INDEX IF NOT EXISTS jobs_by_finish ON jobs(finished_ms);"
  "CREATE INDEX IF NOT EXISTS jobs_by_result ON jobs(result_key);"
  "CREATE INDEX IF NOT EXISTS jobs_by_graph ON jobs(graph_hash);"
  "CREATE TABLE IF NOT EXISTS probe (b BYTEA);"
  "ALTER TABLE jobs SET (fillfactor = 50);",
  /* 4: plans owned by who submitted them: a handle per submission on the
   * job that computes it, the live handles a job has, and for every job
   * from before a handle with its own id, owned by nobody (only principals
   * that read all plans see them) */
  "CREATE TABLE IF NOT EXISTS handles ("
  "  seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, job_id TEXT NOT NULL,"
  "  owner TEXT NOT NULL DEFAULT '', created_ms DOUBLE PRECISION NOT NULL,"
  "  request_id TEXT NOT NULL DEFAULT '', cancelled_ms DOUBLE PRECISION NOT NULL DEFAULT 0);"
  "CREATE INDEX IF NOT EXISTS handles_by_job ON handles(job_id);"
  "CREATE INDEX IF NOT EXISTS handles_by_owner ON handles(owner, seq);"
  "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS handles INTEGER NOT NULL DEFAULT 1;"
  "INSERT INTO handles(id, job_id, owner, created_ms, request_id)"
  "  SELECT id, id, '', created_ms, request_id FROM jobs ORDER BY seq ON CONFLICT (id) DO NOTHING;",
};
#define SRV__NMIGRATIONS ((int)(sizeof(srv__migrations) / sizeof(srv__migrations[0])))

#define SRV__JOB_COLS                                                                              \
  "seq, id, status, graph_hash, result_key, budget, solver, objective, accounting, timeline,"     \
  " created_ms, started_ms, finished_ms, error, request_id, attempts, cancel_requested, client"

static const srv_store_ops_t srv__pg_ops;

/* ---- connections ---- */

/* libpq prints server notices ("relation exists, skipping") on stderr,
 * which is the log: keep them out. */
static void srv__quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* A libpq message on one line. */
static void srv__one_line(char *dst, size_t n, const char *msg) {
  size_t i;
  snprintf(dst, n, "%s", msg && msg[0] ? msg : "unknown error");
  for (i = 0; dst[i]; i++)
    if (dst[i] == '\n' || dst[i] == '\r' || dst[i] == '\t') dst[i] = ' ';
  while (i > 0 && dst[i - 1] == ' ') dst[--i] = '\0';
}

static int srv__exec_simple(PGconn *c, const char *sql, char *err, size_t errlen) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType es = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  int ok = es == PGRES_COMMAND_OK || es == PGRES_TUPLES_OK;
  if (!ok) srv__one_line(err, errlen, r ? PQresultErrorMessage(r) : PQerrorMessage(c));
  PQclear(r);
  return ok ? 0 : -1;
}

/* Bring the schema to the newest version, holding the advisory lock. */
static int srv__migrate(PGconn *c, char *err, size_t errlen) {
  PGresult *r;
  int version, i, rc = -1;
  char sql[64];
  if (srv__exec_simple(c, "SELECT pg_advisory_lock(" SRV__PG_LOCK ")", err, errlen) != 0) return -1;
  if (srv__exec_simple(c,
                       "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
                       "INSERT INTO schema_version SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM schema_version)",
                       err, errlen) != 0)
    goto out;
  r = PQexec(c, "SELECT max(version) FROM schema_version");
  if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
    srv__one_line(err, errlen, PQresultErrorMessage(r));
    PQclear(r);
    goto out;
  }
  version = atoi(PQgetvalue(r, 0, 0));
  PQclear(r);
  if (version > SRV__NMIGRATIONS) {
    snprintf(err, errlen, "the database's schema (version %d) is newer than this server's (%d)", version,
             SRV__NMIGRATIONS);
    goto out;
  }
  for (i = version; i < SRV__NMIGRATIONS; i++) {
    snprintf(sql, sizeof(sql), "UPDATE schema_version SET version = %d", i + 1);
    if (srv__exec_simple(c, "BEGIN", err, errlen) != 0 || srv__exec_simple(c, srv__migrations[i], err, errlen) != 0 ||
        srv__exec_simple(c, sql, err, errlen) != 0 || srv__exec_simple(c, "COMMIT", err, errlen) != 0) {
      char ignored[8];
      srv__exec_simple(c, "ROLLBACK", ignored, sizeof(ignored));
      goto out;
    }
    srv_log(SRV_LOG_INFO, "store schema migrated", json_pack("{s:i}", "version", i + 1));
  }
  rc = 0;
out:
  {
    char ignored[8];
    srv__exec_simple(c, "SELECT pg_advisory_unlock(" SRV__PG_LOCK ")", ignored, sizeof(ignored));
  }
  return rc;
}

/* A new connection (the schema migrated first, once per process), or NULL
 * with why in err. */
static PGconn *srv__connect(srv__pg_t *pg, char *err, size_t errlen) {
  /* The URI's own parameters win over these defaults (expand_dbname). */
  const char *const keys[] = {"connect_timeout", "application_name", "client_encoding", "dbname", NULL};
  const char *const vals[] = {"5", "memplan-server", "UTF8", pg->uri, NULL};
  PGconn *c = PQconnectdbParams(keys, vals, 1);
  if (c == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (PQstatus(c) != CONNECTION_OK) {
    srv__one_line(err, errlen, PQerrorMessage(c));
    PQfinish(c);
    return NULL;
  }
  PQsetNoticeProcessor(c, srv__quiet, NULL);
  if (!atomic_load(&pg->migrated)) {
    char why[200];
    if (srv__migrate(c, why, sizeof(why)) != 0) {
      snprintf(err, errlen, "cannot migrate the schema: %s", why);
      PQfinish(c);
      return NULL;
    }
    atomic_store(&pg->migrated, 1);
  }
  return c;
}

/* Record whether the server answered; logged when it changes. */
static void srv__set_health(srv__pg_t *pg, int ok, const char *why) {
  int was;
  if (ok && atomic_load(&pg->healthy)) return;
  pthread_mutex_lock(&pg->mu);
  was = atomic_exchange(&pg->healthy, ok);
  if (!ok) snprintf(pg->reason, sizeof(pg->reason), "%s", why);
  pthread_mutex_unlock(&pg->mu);
  if (was && !ok)
    srv_log(SRV_LOG_WARN, "store unavailable", json_pack("{s:s}", "error", why));
  else if (!was && ok)
    srv_log(SRV_LOG_INFO, "store available", NULL);
}

/* A write failed for want of room (`why`, the server's message): new work
 * is refused until the probe finds room (srv__room). A small row that
 * still fits in a page's free space proves nothing of room, so unlike the
 * embedded store's, other writes that succeed meanwhile do not end it. */
static void srv__set_full(srv__pg_t *pg, const char *why) {
  int was;
  pthread_mutex_lock(&pg->mu);
  snprintf(pg->full_reason, sizeof(pg->full_reason), "%s", why);
  was = atomic_exchange(&pg->full, 1);
  pthread_mutex_unlock(&pg->mu);
  if (!was)
    srv_log(SRV_LOG_ERROR, "the store is full: new work is refused until it has room",
            json_pack("{s:s}", "error", why));
}

/* The probe found room. */
static void srv__room(srv__pg_t *pg) {
  if (atomic_exchange(&pg->full, 0)) srv_log(SRV_LOG_INFO, "the store has room again: new work is taken", NULL);
}

/* The error of a failed statement: SRV_ENOSPACE (and the full state) when
 * the server lacks room or memory (SQLSTATE class 53, "insufficient
 * resources": disk_full 53100, out_of_memory 53200,
 * configuration_limit_exceeded 53400 such as temp_file_limit), except
 * too_many_connections (53300), which is about connections, not room;
 * else SRV_ESTORE. */
static int srv__failure(srv__pg_t *pg, PGresult *r, const char *why) {
  const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
  if (state && strncmp(state, "53", 2) == 0 && strcmp(state, "53300") != 0) {
    srv__set_full(pg, why);
    return SRV_ENOSPACE;
  }
  return SRV_ESTORE;
}

/* A connection from the pool, opening one when none is idle (waiting when
 * the pool is at its bound). 0, or SRV_ESTORE when the server cannot be
 * reached (or is backing off). */
static int srv__take(srv__pg_t *pg, srv__conn_t *out) {
  char err[256];
  unsigned gen;
  PGconn *c;
  pthread_mutex_lock(&pg->mu);
  for (;;) {
    while (pg->n_idle > 0) {
      srv__conn_t cn = pg->idle[--pg->n_idle];
      /* Reading what is pending notices a server that closed it. */
      if (cn.gen == pg->gen && PQconsumeInput(cn.c) && PQstatus(cn.c) == CONNECTION_OK) {
        pthread_mutex_unlock(&pg->mu);
        *out = cn;
        return 0;
      }
      pg->n_open--;
      PQfinish(cn.c);
    }
    if (pg->n_open < pg->max_open) break;
    pthread_cond_wait(&pg->cv, &pg->mu);
  }
  if (srv_mono_ms() < pg->next_try_ms) {
    pthread_mutex_unlock(&pg->mu);
    return SRV_ESTORE;
  }
  pg->n_open++;
  gen = pg->gen;
  pthread_mutex_unlock(&pg->mu);
  c = srv__connect(pg, err, sizeof(err));
  pthread_mutex_lock(&pg->mu);
  if (c == NULL) {
    pg->n_open--;
    pg->next_try_ms = srv_mono_ms() + pg->backoff_ms;
    pg->backoff_ms = pg->backoff_ms * 2 > 2000 ? 2000 : pg->backoff_ms * 2;
    pthread_cond_signal(&pg->cv);
    pthread_mutex_unlock(&pg->mu);
    srv__set_health(pg, 0, err);
    return SRV_ESTORE;
  }
  pg->backoff_ms = 100;
  pg->next_try_ms = 0;
  pthread_mutex_unlock(&pg->mu);
  out->c = c;
  out->gen = gen;
  return 0;
}

/* Back to the pool; a broken connection is closed, and so will be every
 * idle one opened before it (the server probably dropped them all). */
static void srv__give(srv__pg_t *pg, srv__conn_t cn, int broken) {
  pthread_mutex_lock(&pg->mu);
  if (broken || PQstatus(cn.c) != CONNECTION_OK || PQtransactionStatus(cn.c) != PQTRANS_IDLE) {
    PQfinish(cn.c);
    pg->n_open--;
    if (broken) pg->gen++;
  } else {
    pg->idle[pg->n_idle++] = cn;
  }
  pthread_cond_signal(&pg->cv);
  pthread_mutex_unlock(&pg->mu);
}

/* Run one statement with text parameters (fmts may mark binary ones, of
 * lens bytes): 0 with *res (the caller clears it), SRV_ENOSPACE (the
 * server has no room: srv__failure), or SRV_ESTORE. `retry`:
 * the statement is safe to repeat, so a connection found broken is
 * replaced and the statement run once more. */
static int srv__exec(srv__pg_t *pg, const char *what, const char *sql, int n, const char *const *vals,
                     const int *lens, const int *fmts, int retry, PGresult **res) {
  int attempt;
  char why[256] = "the store cannot be reached";
  *res = NULL;
  for (attempt = 0; attempt < (retry ? 2 : 1); attempt++) {
    srv__conn_t cn;
    PGresult *r;
    ExecStatusType es;
    if (srv__take(pg, &cn) != 0) return SRV_ESTORE; /* health says why */
    r = PQexecParams(cn.c, sql, n, NULL, vals, lens, fmts, 0);
    es = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (es == PGRES_COMMAND_OK || es == PGRES_TUPLES_OK) {
      srv__give(pg, cn, 0);
      srv__set_health(pg, 1, NULL);
      *res = r;
      return 0;
    }
    if (PQstatus(cn.c) == CONNECTION_BAD) {
      srv__one_line(why, sizeof(why), PQerrorMessage(cn.c));
      PQclear(r);
      srv__give(pg, cn, 1);
      continue;
    }
    srv__one_line(why, sizeof(why), r ? PQresultErrorMessage(r) : PQerrorMessage(cn.c));
    {
      int rc = srv__failure(pg, r, why);
      PQclear(r);
      srv__give(pg, cn, 0);
      srv_log(SRV_LOG_ERROR, "store error", json_pack("{s:s,s:s}", "op", what, "error", why));
      return rc;
    }
  }
  srv__set_health(pg, 0, why);
  srv_log(SRV_LOG_WARN, "store error", json_pack("{s:s,s:s}", "op", what, "error", why));
  return SRV_ESTORE;
}

/* ---- rows ---- */

static void srv__copy(char *dst, size_t n, PGresult *r, int row, int col) {
  snprintf(dst, n, "%s", PQgetvalue(r, row, col));
}

static int srv__read_row(PGresult *r, int i, srv_job_row_t *row) {
  memset(row, 0, sizeof(*row));
  row->seq = strtoll(PQgetvalue(r, i, 0), NULL, 10);
  srv__copy(row->id, sizeof(row->id), r, i, 1);
  srv__copy(row->status, sizeof(row->status), r, i, 2);
  srv__copy(row->graph_hash, sizeof(row->graph_hash), r, i, 3);
  srv__copy(row->result_key, sizeof(row->result_key), r, i, 4);
  row->budget = strtoull(PQgetvalue(r, i, 5), NULL, 10);
  srv__copy(row->solver, sizeof(row->solver), r, i, 6);
  srv__copy(row->objective, sizeof(row->objective), r, i, 7);
  srv__copy(row->accounting, sizeof(row->accounting), r, i, 8);
  row->timeline = atoi(PQgetvalue(r, i, 9));
  row->created_ms = strtod(PQgetvalue(r, i, 10), NULL);
  row->started_ms = strtod(PQgetvalue(r, i, 11), NULL);
  row->finished_ms = strtod(PQgetvalue(r, i, 12), NULL);
  if (!PQgetisnull(r, i, 13) && (row->error = strdup(PQgetvalue(r, i, 13))) == NULL) return SRV_ENOMEM;
  srv__copy(row->request_id, sizeof(row->request_id), r, i, 14);
  row->attempts = atoi(PQgetvalue(r, i, 15));
  row->cancel_requested = PQgetvalue(r, i, 16)[0] == 't';
  srv__copy(row->client, sizeof(row->client), r, i, 17);
  return 0;
}

/* A double as SQL text, exactly. */
static void srv__num(char *buf, size_t n, double x) { snprintf(buf, n, "%.17g", x); }

/* ---- operations ---- */

static int srv__pg_health(srv_store_t *base, char *reason, size_t len) {
  srv__pg_t *pg = (srv__pg_t *)base;
  int healthy = atomic_load(&pg->healthy), full = atomic_load(&pg->full);
  if (healthy && !full) {
    if (len) reason[0] = '\0';
    return 0;
  }
  pthread_mutex_lock(&pg->mu);
  if (len) snprintf(reason, len, "%s", healthy ? pg->full_reason : pg->reason);
  pthread_mutex_unlock(&pg->mu);
  return healthy ? SRV_ENOSPACE : SRV_ESTORE;
}

/* Insert 64 KiB that does not compress (so that it takes new pages of the
 * probe table's TOAST), then truncate the table, which gives its files
 * back (so that the next probe needs new pages again): when that works,
 * the store has room again. */
static int srv__pg_probe(srv_store_t *base) {
  srv__pg_t *pg = (srv__pg_t *)base;
  PGresult *r;
  int rc = srv__exec(pg, "probe",
                     "INSERT INTO probe(b) SELECT decode(string_agg(md5(random()::text), ''), 'hex')"
                     " FROM generate_series(1, 4096)",
                     0, NULL, NULL, NULL, 1, &r);
  if (rc != 0) return rc;
  PQclear(r);
  srv__room(pg);
  if (srv__exec(pg, "probe", "TRUNCATE probe", 0, NULL, NULL, NULL, 1, &r) == 0) PQclear(r);
  return 0;
}

static int srv__pg_accept_job(srv_store_t *base, srv_job_row_t *row, const char *graph_json, size_t graph_len,
                              size_t n_nodes, unsigned max_queued, unsigned max_per_client, char joined_id[33]) {
  srv__pg_t *pg = (srv__pg_t *)base;
  /* One statement, so one transaction: the graph, the job row unless an
   * identical job is in flight or the queue is full, and the notification,
   * all committed before the caller answers 202. */
  static const char *const sql =
      "WITH g AS (INSERT INTO graphs(hash, json, nodes, created_ms)"
      "   SELECT $3, $12::text, $13::bigint, $10::float8 WHERE $12::text IS NOT NULL"
      "   ON CONFLICT (hash) DO NOTHING),"
      /* A graph already stored is used again now: the sweep, which deletes
       * graphs by age, must see it young (a sweep deleting it meanwhile
       * waits for this row and then finds it so). */
      " t AS (UPDATE graphs SET created_ms = $10::float8 WHERE hash = $3 AND created_ms < $10::float8),"
      " ins AS (INSERT INTO jobs(id, status, graph_hash, result_key, budget, solver, objective, accounting,"
      "   timeline, created_ms, request_id, client, started_ms, finished_ms)"
      "   SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::integer, $10::float8, $11, $15, $18::float8, $19::float8"
      "   WHERE ($14::bigint = 0 OR (SELECT count(*) FROM jobs WHERE status = 'queued') < $14::bigint)"
      "   AND ($16::bigint = 0 OR"
      "        (SELECT count(*) FROM jobs WHERE status = 'queued' AND client = $15) < $16::bigint)"
      "   ON CONFLICT (result_key) WHERE status IN ('queued', 'running') DO NOTHING"
      "   RETURNING seq, id),"
      " h AS (INSERT INTO handles(id, job_id, owner, created_ms, request_id)"
      "   SELECT id, id, $17, $10::float8, $11 FROM ins RETURNING seq, id)"
      /* a done job (a result held already) is for no worker to claim */
      " SELECT h.seq, CASE WHEN $2::text = 'queued' THEN pg_notify('" SRV_STORE_CH_QUEUED "', h.id) END FROM h";
  char budget[32], timeline[8], created[40], nodes[32], cap[16], client_cap[16], started[40], finished[40];
  const char *vals[19];
  int lens[19] = {0}, fmts[19] = {0};
  int attempt, rc;
  PGresult *r;

  snprintf(budget, sizeof(budget), "%llu", (unsigned long long)row->budget);
  snprintf(timeline, sizeof(timeline), "%d", row->timeline ? 1 : 0);
  srv__num(created, sizeof(created), row->created_ms);
  snprintf(nodes, sizeof(nodes), "%zu", n_nodes);
  snprintf(cap, sizeof(cap), "%u", max_queued);
  snprintf(client_cap, sizeof(client_cap), "%u", max_per_client);
  vals[0] = row->id;
  vals[1] = row->status;
  vals[2] = row->graph_hash;
  vals[3] = row->result_key;
  vals[4] = budget;
  vals[5] = row->solver;
  vals[6] = row->objective;
  vals[7] = row->accounting;
  vals[8] = timeline;
  vals[9] = created;
  vals[10] = row->request_id;
  vals[11] = graph_json; /* NULL: no graph to store */
  lens[11] = graph_json ? (int)graph_len : 0;
  fmts[11] = 1;          /* a text value's binary form is its bytes: no NUL needed */
  vals[12] = nodes;
  vals[13] = cap;
  vals[14] = row->client;
  vals[15] = client_cap;
  vals[16] = row->owner;
  srv__num(started, sizeof(started), row->started_ms);
  srv__num(finished, sizeof(finished), row->finished_ms);
  vals[17] = started;
  vals[18] = finished;
  if (graph_len > INT32_MAX) return SRV_ESTORE;
  if (joined_id) joined_id[0] = '\0';

  for (attempt = 0; attempt < 3; attempt++) {
    const char *key[1];
    int inserted;
    /* Not repeated on a broken connection: it may have committed. */
    if ((rc = srv__exec(pg, "accept job", sql, 19, vals, lens, fmts, 0, &r)) != 0) return rc;
    inserted = PQntuples(r) == 1;
    if (inserted) row->seq = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    if (inserted) return 0;
    /* Joined or full; or the job it met finished since: then again. */
    key[0] = row->result_key;
    if (srv__exec(pg, "accept job", "SELECT id FROM jobs WHERE result_key = $1 AND status IN ('queued', 'running')",
                  1, key, NULL, NULL, 1, &r) != 0)
      return SRV_ESTORE;
    rc = PQntuples(r) > 0;
    if (rc && joined_id) snprintf(joined_id, 33, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (rc) return SRV_ECONFLICT;
    if (max_queued > 0) {
      if (srv__exec(pg, "accept job", "SELECT count(*) FROM jobs WHERE status = 'queued'", 0, NULL, NULL, NULL, 1,
                    &r) != 0)
        return SRV_ESTORE;
      rc = strtoull(PQgetvalue(r, 0, 0), NULL, 10) >= max_queued;
      PQclear(r);
      if (rc) return SRV_EFULL;
    }
    if (max_per_client > 0) {
      const char *who[1];
      who[0] = row->client;
      if (srv__exec(pg, "accept job", "SELECT count(*) FROM jobs WHERE status = 'queued' AND client = $1", 1, who,
                    NULL, NULL, 1, &r) != 0)
        return SRV_ESTORE;
      rc = strtoull(PQgetvalue(r, 0, 0), NULL, 10) >= max_per_client;
      PQclear(r);
      if (rc) return SRV_ECLIENTFULL;
    }
  }
  return SRV_ESTORE;
}

static int srv__pg_update_job(srv_store_t *base, const char *id, const char *status, double started_ms,
                              double finished_ms, const char *error_json) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char started[40], finished[40];
  const char *vals[5];
  PGresult *r;
  int rc;
  srv__num(started, sizeof(started), started_ms);
  srv__num(finished, sizeof(finished), finished_ms);
  vals[0] = status;
  vals[1] = started;
  vals[2] = finished;
  vals[3] = error_json;
  vals[4] = id;
  if ((rc = srv__exec(pg, "update job",
                "UPDATE jobs SET status = $1,"
                " started_ms = CASE WHEN $1::text = 'queued' THEN 0 WHEN $2::float8 > 0 THEN $2::float8 ELSE started_ms END,"
                " finished_ms = CASE WHEN $3::float8 > 0 THEN $3::float8 ELSE finished_ms END,"
                " error = $4 WHERE id = $5",
                5, vals, NULL, NULL, 1, &r)) != 0)
    return rc;
  rc = atoi(PQcmdTuples(r)) > 0 ? 0 : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

static int srv__pg_get_job(srv_store_t *base, const char *id, srv_job_row_t *row) {
  srv__pg_t *pg = (srv__pg_t *)base;
  const char *vals[1] = {id};
  PGresult *r;
  int rc;
  if (srv__exec(pg, "get job", "SELECT " SRV__JOB_COLS " FROM jobs WHERE id = $1", 1, vals, NULL, NULL, 1, &r) != 0)
    return SRV_ESTORE;
  rc = PQntuples(r) == 1 ? srv__read_row(r, 0, row) : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

static int srv__pg_pending_jobs(srv_store_t *base, srv_job_row_t **rows, size_t *n) {
  srv__pg_t *pg = (srv__pg_t *)base;
  PGresult *r;
  int i, cnt;
  *rows = NULL;
  *n = 0;
  if (srv__exec(pg, "pending jobs",
                "SELECT " SRV__JOB_COLS " FROM jobs WHERE status IN ('queued', 'running') ORDER BY seq", 0, NULL,
                NULL, NULL, 1, &r) != 0)
    return SRV_ESTORE;
  cnt = PQntuples(r);
  if (cnt > 0 && (*rows = calloc((size_t)cnt, sizeof(**rows))) == NULL) {
    PQclear(r);
    return SRV_ENOMEM;
  }
  for (i = 0; i < cnt; i++) {
    if (srv__read_row(r, i, &(*rows)[i]) != 0) {
      PQclear(r);
      while (i >= 0) srv_job_row_clear(&(*rows)[i--]);
      free(*rows);
      *rows = NULL;
      return SRV_ENOMEM;
    }
  }
  PQclear(r);
  *n = (size_t)cnt;
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
  " CASE WHEN h.cancelled_ms > 0 THEN NULL ELSE j.error END, h.request_id, j.attempts, j.cancel_requested,"  \
  " j.client, h.owner, j.id, h.cancelled_ms > 0, coalesce(j.owner, ''),"                                  \
  " coalesce(extract(epoch FROM j.lease_until) * 1000, 0) FROM handles h JOIN jobs j ON j.id = h.job_id"

static int srv__read_plan(PGresult *r, int i, srv_job_row_t *row) {
  int rc = srv__read_row(r, i, row);
  srv__copy(row->owner, sizeof(row->owner), r, i, 18);
  srv__copy(row->job_id, sizeof(row->job_id), r, i, 19);
  row->handle_cancelled = PQgetvalue(r, i, 20)[0] == 't';
  srv__copy(row->replica, sizeof(row->replica), r, i, 21);
  row->lease_until_ms = strtod(PQgetvalue(r, i, 22), NULL);
  return rc;
}

static int srv__pg_list_jobs(srv_store_t *base, const char *owner, const char *status, unsigned limit,
                             long long before_seq, json_t *arr, long long *last_seq) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char before[32], lim[16];
  const char *vals[4];
  PGresult *r;
  int i, rc = 0;
  *last_seq = 0;
  snprintf(before, sizeof(before), "%lld", before_seq);
  snprintf(lim, sizeof(lim), "%u", limit);
  vals[0] = status;
  vals[1] = before;
  vals[2] = lim;
  vals[3] = owner;
  if (srv__exec(pg, "list jobs",
                "SELECT " SRV__PLAN_COLS " WHERE ($1::text IS NULL OR " SRV__PLAN_STATUS " IN ($1, 'queued', 'running'))"
                " AND ($2::bigint = 0 OR h.seq < $2::bigint) AND ($4::text IS NULL OR h.owner = $4)"
                " ORDER BY h.seq DESC LIMIT $3::bigint",
                4, vals, NULL, NULL, 1, &r) != 0)
    return SRV_ESTORE;
  for (i = 0; i < PQntuples(r) && rc == 0; i++) {
    srv_job_row_t row;
    json_t *j = NULL;
    if (srv__read_plan(r, i, &row) == 0) j = srv_plan_row_to_json(&row);
    *last_seq = row.seq;
    srv_job_row_clear(&row);
    if (j == NULL || json_array_append_new(arr, j) != 0) rc = SRV_ENOMEM;
  }
  PQclear(r);
  return rc;
}

static int srv__pg_get_plan(srv_store_t *base, const char *id, srv_job_row_t *row) {
  srv__pg_t *pg = (srv__pg_t *)base;
  const char *vals[1] = {id};
  PGresult *r;
  int rc;
  if (srv__exec(pg, "get plan", "SELECT " SRV__PLAN_COLS " WHERE h.id = $1", 1, vals, NULL, NULL, 1, &r) != 0)
    return SRV_ESTORE;
  rc = PQntuples(r) == 1 ? srv__read_plan(r, 0, row) : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

/* A new handle's parameters: $1 id, $2 job id, $3 owner, $4 creation
 * time (as text in `created`), $5 request id. */
static void srv__handle_vals(const srv_job_row_t *handle, const char *job_id, char created[40], const char *vals[5]) {
  srv__num(created, 40, handle->created_ms);
  vals[0] = handle->id;
  vals[1] = job_id;
  vals[2] = handle->owner;
  vals[3] = created;
  vals[4] = handle->request_id;
}

/* One statement: the job gains a live handle (its row lock orders this
 * with a cancel of its last one) only while it is in flight and needed. */
static int srv__pg_add_handle(srv_store_t *base, const srv_job_row_t *handle, const char *job_id) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char created[40];
  const char *vals[5];
  PGresult *r;
  int rc;
  srv__handle_vals(handle, job_id, created, vals);
  /* Not repeated on a broken connection: it may have committed. */
  if ((rc = srv__exec(pg, "add handle",
                      "WITH j AS (UPDATE jobs SET handles = handles + 1 WHERE id = $2"
                      "   AND status IN ('queued', 'running') AND handles > 0 AND NOT cancel_requested RETURNING id)"
                      " INSERT INTO handles(id, job_id, owner, created_ms, request_id)"
                      " SELECT $1, id, $3, $4::float8, $5 FROM j RETURNING seq",
                      5, vals, NULL, NULL, 0, &r)) != 0)
    return rc;
  rc = PQntuples(r) == 1 ? 0 : SRV_ECONFLICT;
  PQclear(r);
  return rc;
}

/* One statement: the handle exists only if its job does and is done. */
static int srv__pg_add_done_handle(srv_store_t *base, const srv_job_row_t *handle, const char *job_id) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char created[40];
  const char *vals[5];
  PGresult *r;
  int rc;
  srv__handle_vals(handle, job_id, created, vals);
  /* Not repeated on a broken connection: it may have committed. */
  if ((rc = srv__exec(pg, "add done handle",
                      "INSERT INTO handles(id, job_id, owner, created_ms, request_id)"
                      " SELECT $1, id, $3, $4::float8, $5 FROM jobs WHERE id = $2 AND status = 'done'"
                      " RETURNING seq",
                      5, vals, NULL, NULL, 0, &r)) != 0)
    return rc;
  rc = PQntuples(r) == 1 ? 0 : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

/* One statement: the handle is cancelled and its job loses a live handle
 * (under the job's row lock, so two cancels count down in turn and a join
 * cannot slip in after the last). */
static int srv__pg_cancel_handle(srv_store_t *base, const char *id, double now_ms, int *remaining) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char now[40];
  const char *vals[2];
  PGresult *r;
  int rc;
  *remaining = 0;
  srv__num(now, sizeof(now), now_ms);
  vals[0] = id;
  vals[1] = now;
  if ((rc = srv__exec(pg, "cancel handle",
                      "WITH h AS (UPDATE handles SET cancelled_ms = $2::float8 WHERE id = $1 AND cancelled_ms = 0"
                      "   AND job_id IN (SELECT id FROM jobs WHERE status IN ('queued', 'running')) RETURNING job_id),"
                      " j AS (UPDATE jobs SET handles = GREATEST(handles - 1, 0) FROM h WHERE jobs.id = h.job_id"
                      "   RETURNING jobs.handles)"
                      " SELECT handles FROM j",
                      2, vals, NULL, NULL, 0, &r)) != 0)
    return rc;
  if (PQntuples(r) == 1) {
    *remaining = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
  }
  PQclear(r);
  if (srv__exec(pg, "cancel handle", "SELECT 1 FROM handles WHERE id = $1", 1, vals, NULL, NULL, 1, &r) != 0)
    return SRV_ESTORE;
  rc = PQntuples(r) == 1 ? SRV_ECONFLICT : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

static int srv__pg_count_status(srv_store_t *base, uint64_t counts[5]) {
  srv__pg_t *pg = (srv__pg_t *)base;
  static const char *const names[5] = {"queued", "running", "done", "failed", "cancelled"};
  PGresult *r;
  int i, k;
  memset(counts, 0, 5 * sizeof(counts[0]));
  if (srv__exec(pg, "count jobs", "SELECT status, count(*) FROM jobs GROUP BY status", 0, NULL, NULL, NULL, 1, &r) !=
      0)
    return SRV_ESTORE;
  for (i = 0; i < PQntuples(r); i++)
    for (k = 0; k < 5; k++)
      if (strcmp(PQgetvalue(r, i, 0), names[k]) == 0) counts[k] = strtoull(PQgetvalue(r, i, 1), NULL, 10);
  PQclear(r);
  return 0;
}

static int srv__pg_put_graph(srv_store_t *base, const char *hash, const char *json, size_t len, size_t n_nodes) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char nodes[32], now[40];
  const char *vals[4];
  int lens[4] = {0}, fmts[4] = {0}, rc;
  PGresult *r;
  if (len > INT32_MAX) return SRV_ESTORE;
  snprintf(nodes, sizeof(nodes), "%zu", n_nodes);
  srv__num(now, sizeof(now), srv_now_ms());
  vals[0] = hash;
  vals[1] = json;
  lens[1] = (int)len;
  fmts[1] = 1;
  vals[2] = nodes;
  vals[3] = now;
  if ((rc = srv__exec(pg, "put graph",
                "INSERT INTO graphs(hash, json, nodes, created_ms) VALUES ($1, $2::text, $3::bigint, $4::float8)"
                " ON CONFLICT (hash) DO NOTHING",
                4, vals, lens, fmts, 1, &r)) != 0)
    return rc;
  PQclear(r);
  return 0;
}

/* The first column of the one row `sql` finds for `key` (malloc'd), and
 * the second in extra when asked. */
static int srv__get_text(srv__pg_t *pg, const char *what, const char *sql, const char *key, char **out, size_t *len,
                         char *extra, size_t extra_len) {
  const char *vals[1] = {key};
  PGresult *r;
  int rc = SRV_ENOTFOUND;
  if (srv__exec(pg, what, sql, 1, vals, NULL, NULL, 1, &r) != 0) return SRV_ESTORE;
  if (PQntuples(r) == 1) {
    size_t n = (size_t)PQgetlength(r, 0, 0);
    char *copy = malloc(n + 1);
    if (copy == NULL) {
      rc = SRV_ENOMEM;
    } else {
      memcpy(copy, PQgetvalue(r, 0, 0), n);
      copy[n] = '\0';
      *out = copy;
      *len = n;
      if (extra) srv__copy(extra, extra_len, r, 0, 1);
      rc = 0;
    }
  }
  PQclear(r);
  return rc;
}

static int srv__pg_get_graph(srv_store_t *base, const char *hash, char **json, size_t *len) {
  return srv__get_text((srv__pg_t *)base, "get graph", "SELECT json FROM graphs WHERE hash = $1", hash, json, len,
                       NULL, 0);
}

static int srv__pg_has_graph(srv_store_t *base, const char *hash) {
  srv__pg_t *pg = (srv__pg_t *)base;
  const char *vals[1] = {hash};
  PGresult *r;
  int found;
  if (srv__exec(pg, "has graph", "SELECT 1 FROM graphs WHERE hash = $1", 1, vals, NULL, NULL, 1, &r) != 0) return 0;
  found = PQntuples(r) > 0;
  PQclear(r);
  return found;
}

static int srv__pg_put_result(srv_store_t *base, const char *key, const char *json, size_t len, const char *job_id) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char now[40];
  const char *vals[4];
  int lens[4] = {0}, fmts[4] = {0};
  PGresult *r;
  int rc;
  if (len > INT32_MAX) return SRV_ESTORE;
  srv__num(now, sizeof(now), srv_now_ms());
  vals[0] = key;
  vals[1] = json;
  lens[1] = (int)len;
  fmts[1] = 1;
  vals[2] = job_id ? job_id : "";
  vals[3] = now;
  /* Written once: the same key is the same plan, whoever computed it. */
  if ((rc = srv__exec(pg, "put result",
                "INSERT INTO results(key, json, job_id, created_ms) VALUES ($1, $2::text, $3, $4::float8)"
                " ON CONFLICT (key) DO NOTHING RETURNING 1",
                4, vals, lens, fmts, 1, &r)) != 0)
    return rc;
  rc = PQntuples(r) == 1 ? 0 : 1;
  PQclear(r);
  return rc;
}

static int srv__pg_get_result(srv_store_t *base, const char *key, char **json, size_t *len, char *job_id) {
  if (job_id) job_id[0] = '\0';
  return srv__get_text((srv__pg_t *)base, "get result", "SELECT json, job_id FROM results WHERE key = $1", key, json,
                       len, job_id, job_id ? 33 : 0);
}

static int srv__pg_claim_job(srv_store_t *base, const char *owner, double lease_s, double now_ms,
                             srv_job_row_t *row) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char lease[40], now[40];
  const char *vals[3];
  PGresult *r;
  int rc;
  srv__num(lease, sizeof(lease), lease_s);
  srv__num(now, sizeof(now), now_ms);
  vals[0] = owner;
  vals[1] = lease;
  vals[2] = now;
  /* Not repeated on a broken connection: a claim that committed unseen
   * is not renewed, so it runs again once its lease is over.
   * The order is fair between clients: a dead replica's plans first, then
   * the oldest plan of the client with the fewest plans running in the
   * cluster, and among those the client served longest ago (the latest
   * start of its plans), so that clients take turns as they would in the
   * embedded store's round-robin. */
  if (srv__exec(pg, "claim job",
                "UPDATE jobs SET status = 'running', owner = $1,"
                " lease_until = clock_timestamp() + $2::float8 * interval '1 second',"
                " started_ms = $3::float8, attempts = attempts + 1"
                " WHERE seq = (SELECT j.seq FROM jobs j WHERE j.status IN ('queued', 'running')"
                "   AND (j.status = 'queued' OR j.lease_until IS NULL OR j.lease_until < clock_timestamp())"
                "   ORDER BY j.status = 'queued',"
                "     (SELECT count(*) FROM jobs r WHERE r.client = j.client AND r.status = 'running'),"
                "     (SELECT coalesce(max(r.started_ms), 0) FROM jobs r WHERE r.client = j.client), j.seq"
                "   LIMIT 1 FOR UPDATE OF j SKIP LOCKED)"
                " RETURNING " SRV__JOB_COLS,
                3, vals, NULL, NULL, 0, &r) != 0)
    return SRV_ESTORE;
  rc = PQntuples(r) == 1 ? srv__read_row(r, 0, row) : SRV_ENOTFOUND;
  PQclear(r);
  return rc;
}

static int srv__pg_renew_leases(srv_store_t *base, const char *owner, double lease_s, const char (*ids)[33],
                                size_t n, int *outcome) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char lease[40], *arr;
  const char *vals[3];
  PGresult *r;
  size_t i, k, at = 0;
  int t;
  if (n == 0) return 0;
  /* The ids as an array literal: they are hex, nothing to quote. */
  if ((arr = malloc(n * 33 + 3)) == NULL) return SRV_ENOMEM;
  arr[at++] = '{';
  for (i = 0; i < n; i++) {
    size_t l = strlen(ids[i]);
    if (i) arr[at++] = ',';
    memcpy(arr + at, ids[i], l);
    at += l;
    outcome[i] = SRV_LEASE_LOST;
  }
  arr[at++] = '}';
  arr[at] = '\0';
  srv__num(lease, sizeof(lease), lease_s);
  vals[0] = owner;
  vals[1] = lease;
  vals[2] = arr;
  t = srv__exec(pg, "renew leases",
                "UPDATE jobs SET lease_until = clock_timestamp() + $2::float8 * interval '1 second'"
                " WHERE owner = $1 AND status = 'running' AND id = ANY($3::text[]) RETURNING id, cancel_requested",
                3, vals, NULL, NULL, 1, &r);
  free(arr);
  if (t != 0) {
    for (i = 0; i < n; i++) outcome[i] = SRV_LEASE_KEPT; /* unknown: not lost */
    return SRV_ESTORE;
  }
  for (k = 0; k < (size_t)PQntuples(r); k++)
    for (i = 0; i < n; i++)
      if (strcmp(ids[i], PQgetvalue(r, (int)k, 0)) == 0)
        outcome[i] = PQgetvalue(r, (int)k, 1)[0] == 't' ? SRV_LEASE_CANCEL : SRV_LEASE_KEPT;
  PQclear(r);
  return 0;
}

static int srv__pg_finish_job(srv_store_t *base, const char *id, const char *owner, const char *status,
                              double finished_ms, const char *error_json) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char finished[40];
  const char *vals[5];
  PGresult *r;
  int rc;
  srv__num(finished, sizeof(finished), finished_ms);
  vals[0] = id;
  vals[1] = owner;
  vals[2] = status;
  vals[3] = finished;
  vals[4] = error_json;
  /* Safe to repeat: once done, the owner test fails and the caller reads
   * the row. */
  if ((rc = srv__exec(pg, "finish job",
                "WITH u AS (UPDATE jobs SET status = $3,"
                "   finished_ms = CASE WHEN $4::float8 > 0 THEN $4::float8 ELSE finished_ms END,"
                "   error = $5, owner = NULL, lease_until = NULL"
                "   WHERE id = $1 AND owner = $2 AND status = 'running' RETURNING id, status)"
                " SELECT pg_notify(CASE WHEN status = 'queued' THEN '" SRV_STORE_CH_QUEUED "'"
                "   ELSE '" SRV_STORE_CH_DONE "' END, CASE WHEN status = 'queued' THEN id ELSE id || ' ' || status END)"
                " FROM u",
                5, vals, NULL, NULL, 1, &r)) != 0)
    return rc;
  rc = PQntuples(r) == 1 ? 0 : SRV_ECONFLICT;
  PQclear(r);
  return rc;
}

static int srv__pg_cancel_job(srv_store_t *base, const char *id, double finished_ms) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char finished[40];
  const char *vals[2];
  PGresult *r;
  int attempt, n;
  srv__num(finished, sizeof(finished), finished_ms);
  vals[0] = id;
  vals[1] = finished;
  /* A claim or a hand-back may move the row between the two updates: then
   * the status says so, and the cancel tries again. */
  for (attempt = 0; attempt < 3; attempt++) {
    if (srv__exec(pg, "cancel job",
                  "WITH q AS (UPDATE jobs SET status = 'cancelled', finished_ms = $2::float8, owner = NULL,"
                  "   lease_until = NULL WHERE id = $1 AND status = 'queued' RETURNING id)"
                  " SELECT pg_notify('" SRV_STORE_CH_DONE "', id || ' cancelled') FROM q",
                  2, vals, NULL, NULL, 1, &r) != 0)
      return SRV_ESTORE;
    n = PQntuples(r);
    PQclear(r);
    if (n == 1) return 0;
    if (srv__exec(pg, "cancel job",
                  "WITH c AS (UPDATE jobs SET cancel_requested = true WHERE id = $1 AND status = 'running'"
                  "   RETURNING id) SELECT pg_notify('" SRV_STORE_CH_CANCEL "', id) FROM c",
                  1, vals, NULL, NULL, 1, &r) != 0)
      return SRV_ESTORE;
    n = PQntuples(r);
    PQclear(r);
    if (n == 1) return 1;
    if (srv__exec(pg, "cancel job", "SELECT status FROM jobs WHERE id = $1", 1, vals, NULL, NULL, 1, &r) != 0)
      return SRV_ESTORE;
    n = PQntuples(r) == 0 ? SRV_ENOTFOUND
        : (strcmp(PQgetvalue(r, 0, 0), "queued") == 0 || strcmp(PQgetvalue(r, 0, 0), "running") == 0) ? 1
                                                                                                        : SRV_ECONFLICT;
    PQclear(r);
    if (n != 1) return n;
  }
  return SRV_ESTORE;
}

/* ---- retention: the primitives of store_sweep.c ----
 *
 * One replica sweeps at a time: the one that takes the advisory lock
 * SRV__PG_SWEEP_LOCK (pg_try_advisory_lock) on the connection it holds for
 * the whole sweep; the others skip their turn, and take it at a later
 * interval when that replica has stopped (the server lets the lock go with
 * the connection). Two sweeps at once would do no harm (a row is deleted
 * once, and deletes of one row wait on each other) but the work twice.
 * Every key deleted is also notified (memplan_swept), so that every
 * replica's memory forgets it. */

static int srv__pg_sweep_begin(srv_store_t *base, void **h) {
  srv__pg_t *pg = (srv__pg_t *)base;
  srv__conn_t *cn = malloc(sizeof(*cn));
  PGresult *r;
  int got;
  if (cn == NULL) return SRV_ENOMEM;
  if (srv__take(pg, cn) != 0) {
    free(cn);
    return SRV_ESTORE;
  }
  r = PQexec(cn->c, "SELECT pg_try_advisory_lock(" SRV__PG_SWEEP_LOCK ")");
  if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
    PQclear(r);
    srv__give(pg, *cn, PQstatus(cn->c) == CONNECTION_BAD);
    free(cn);
    return SRV_ESTORE;
  }
  got = PQgetvalue(r, 0, 0)[0] == 't';
  PQclear(r);
  if (!got) {
    srv__give(pg, *cn, 0);
    free(cn);
    return 1;
  }
  *h = cn;
  return 0;
}

static void srv__pg_sweep_end(srv_store_t *base, void *h) {
  srv__pg_t *pg = (srv__pg_t *)base;
  srv__conn_t *cn = h;
  char ignored[8];
  srv__exec_simple(cn->c, "SELECT pg_advisory_unlock(" SRV__PG_SWEEP_LOCK ")", ignored, sizeof(ignored));
  srv__give(pg, *cn, PQstatus(cn->c) == CONNECTION_BAD);
  free(cn);
}

/* One statement of the sweep on its connection ($1 = t when it has it):
 * its rows, or NULL (logged; a full store noted). */
static PGresult *srv__sweep_run(srv__pg_t *pg, srv__conn_t *cn, const char *sql, double t) {
  char tv[40], why[256];
  const char *vals[1] = {tv};
  PGresult *r;
  srv__num(tv, sizeof(tv), t);
  r = PQexecParams(cn->c, sql, strstr(sql, "$1") ? 1 : 0, NULL, vals, NULL, NULL, 0);
  if (r && PQresultStatus(r) == PGRES_TUPLES_OK) return r;
  srv__one_line(why, sizeof(why), r ? PQresultErrorMessage(r) : PQerrorMessage(cn->c));
  srv__failure(pg, r, why);
  PQclear(r);
  srv_log(SRV_LOG_ERROR, "store error", json_pack("{s:s,s:s}", "op", "sweep", "error", why));
  return NULL;
}

static long long srv__pg_sweep_exec(srv_store_t *base, void *h, const char *sql, double t, const char *what,
                                    srv_sweep_deleted_fn fn, void *arg) {
  srv__pg_t *pg = (srv__pg_t *)base;
  char wrapped[1024];
  const char **keys;
  PGresult *r;
  long long n;
  int i;
  snprintf(wrapped, sizeof(wrapped), "WITH d AS (%s) SELECT k, pg_notify('" SRV_STORE_CH_SWEPT "', k) FROM d", sql);
  if ((r = srv__sweep_run(pg, h, wrapped, t)) == NULL) return -1;
  n = PQntuples(r);
  if (fn && n > 0 && (keys = malloc((size_t)n * sizeof(*keys))) != NULL) {
    for (i = 0; i < (int)n; i++) keys[i] = PQgetvalue(r, i, 0);
    fn(arg, what, keys, (size_t)n);
    free(keys);
  }
  PQclear(r);
  return n;
}

static double srv__pg_sweep_value(srv_store_t *base, void *h, const char *sql, double t, double def) {
  PGresult *r = srv__sweep_run((srv__pg_t *)base, h, sql, t);
  double v = def;
  if (r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) v = strtod(PQgetvalue(r, 0, 0), NULL);
  PQclear(r);
  return v;
}

/* The live data: the rows' sizes as the server stores them (compressed
 * JSON included), not the tables' files, which keep the room of deleted
 * rows for new ones (autovacuum) and so do not shrink. */
static uint64_t srv__pg_sweep_bytes(srv_store_t *base, void *h) {
  return (uint64_t)srv__pg_sweep_value(
      base, h,
      "SELECT (SELECT coalesce(sum(pg_column_size(json) + pg_column_size(hash)), 0) + 32 * count(*) FROM graphs)"
      " + (SELECT coalesce(sum(pg_column_size(json) + pg_column_size(key)), 0) + 32 * count(*) FROM results)"
      " + (SELECT coalesce(sum(pg_column_size(j.*)), 0) FROM jobs j)",
      0, 0);
}

/* ---- the listening connection ---- */

static int srv__pg_listen_open(srv_store_t *base, int *fd, char *err, size_t errlen) {
  srv__pg_t *pg = (srv__pg_t *)base;
  PGconn *c = srv__connect(pg, err, errlen);
  if (c == NULL) return SRV_ESTORE;
  if (srv__exec_simple(c,
                       "LISTEN " SRV_STORE_CH_QUEUED "; LISTEN " SRV_STORE_CH_DONE "; LISTEN " SRV_STORE_CH_CANCEL
                       "; LISTEN " SRV_STORE_CH_SWEPT,
                       err, errlen) != 0 ||
      PQsetnonblocking(c, 1) != 0) {
    PQfinish(c);
    return SRV_ESTORE;
  }
  pg->listen = c;
  *fd = PQsocket(c);
  return 0;
}

static int srv__pg_listen_read(srv_store_t *base, srv_store_event_fn fn, void *arg) {
  srv__pg_t *pg = (srv__pg_t *)base;
  PGnotify *n;
  if (pg->listen == NULL) return SRV_ESTORE;
  if (!PQconsumeInput(pg->listen)) return SRV_ESTORE;
  while ((n = PQnotifies(pg->listen)) != NULL) {
    fn(arg, n->relname, n->extra ? n->extra : "");
    PQfreemem(n);
  }
  return PQstatus(pg->listen) == CONNECTION_OK ? 0 : SRV_ESTORE;
}

static void srv__pg_listen_close(srv_store_t *base) {
  srv__pg_t *pg = (srv__pg_t *)base;
  PQfinish(pg->listen);
  pg->listen = NULL;
}

/* ---- open and close ---- */

static void srv__pg_close(srv_store_t *base) {
  srv__pg_t *pg = (srv__pg_t *)base;
  unsigned i;
  for (i = 0; i < pg->n_idle; i++) PQfinish(pg->idle[i].c);
  PQfinish(pg->listen);
  pthread_cond_destroy(&pg->cv);
  pthread_mutex_destroy(&pg->mu);
  free(pg->idle);
  free(pg->uri);
  free(pg);
}

int srv_store_pg_open(const char *uri, unsigned pool, srv_store_t **out, char *errbuf, size_t errlen) {
  srv__pg_t *pg;
  PQconninfoOption *opts;
  char *perr = NULL;
  srv__conn_t cn;

  *out = NULL;
  /* A URI that does not parse is a configuration error, not an outage. */
  if ((opts = PQconninfoParse(uri, &perr)) == NULL) {
    char why[200];
    srv__one_line(why, sizeof(why), perr ? perr : "out of memory");
    snprintf(errbuf, errlen, "bad PostgreSQL URI: %s", why);
    PQfreemem(perr);
    return SRV_ESTORE;
  }
  PQconninfoFree(opts);
  pg = calloc(1, sizeof(*pg));
  if (pg == NULL || (pg->uri = strdup(uri)) == NULL ||
      (pg->idle = calloc(pool ? pool : 1, sizeof(*pg->idle))) == NULL) {
    if (pg) free(pg->uri);
    free(pg);
    snprintf(errbuf, errlen, "out of memory");
    return SRV_ENOMEM;
  }
  pg->base.ops = &srv__pg_ops;
  pg->max_open = pool ? pool : 1;
  pg->backoff_ms = 100;
  atomic_init(&pg->migrated, 0);
  atomic_init(&pg->healthy, 1);
  atomic_init(&pg->full, 0);
  pthread_mutex_init(&pg->mu, NULL);
  pthread_cond_init(&pg->cv, NULL);
  /* Connect (and migrate) now when the server is there; when it is not,
   * start anyway: the pool keeps trying and /readyz says why. */
  if (srv__take(pg, &cn) == 0) srv__give(pg, cn, 0);
  *out = &pg->base;
  return 0;
}

static const srv_store_ops_t srv__pg_ops = {
  .name = "postgresql",
  .close = srv__pg_close,
  .health = srv__pg_health,
  .accept_job = srv__pg_accept_job,
  .update_job = srv__pg_update_job,
  .get_job = srv__pg_get_job,
  .pending_jobs = srv__pg_pending_jobs,
  .list_jobs = srv__pg_list_jobs,
  .get_plan = srv__pg_get_plan,
  .add_handle = srv__pg_add_handle,
  .add_done_handle = srv__pg_add_done_handle,
  .cancel_handle = srv__pg_cancel_handle,
  .count_status = srv__pg_count_status,
  .put_graph = srv__pg_put_graph,
  .get_graph = srv__pg_get_graph,
  .has_graph = srv__pg_has_graph,
  .put_result = srv__pg_put_result,
  .get_result = srv__pg_get_result,
  .probe = srv__pg_probe,
  .sweep_begin = srv__pg_sweep_begin,
  .sweep_exec = srv__pg_sweep_exec,
  .sweep_value = srv__pg_sweep_value,
  .sweep_bytes = srv__pg_sweep_bytes,
  .sweep_end = srv__pg_sweep_end,
  .claim_job = srv__pg_claim_job,
  .renew_leases = srv__pg_renew_leases,
  .finish_job = srv__pg_finish_job,
  .cancel_job = srv__pg_cancel_job,
  .listen_open = srv__pg_listen_open,
  .listen_read = srv__pg_listen_read,
  .listen_close = srv__pg_listen_close,
};
