/* store_sweep.c - retention: the sweep of srv_store_sweep (see store.h),
 * one algorithm and one set of statements over every backend's primitives
 * (srv_store_ops_t's sweep_*), so that SQLite and PostgreSQL delete the
 * same things in the same order.
 *
 * The statements are written in the SQL both backends speak: $1 is the one
 * parameter (a time in ms since the epoch), a derived table has an alias,
 * and each DELETE returns the deleted keys as its column k, which the
 * backend hands to the caller's srv_sweep_deleted_fn (and a shared store
 * to its other replicas: store_pg.c notifies them). Each statement is its
 * own transaction, so a sweep never holds the store for long, and what it
 * deletes is final at once; a sweep cut short by a failure resumes where it
 * stopped at the next interval. */
#include "store.h"

#include <stdio.h>
#include <string.h>

#define SRV__FINISHED "status IN ('done','failed','cancelled') AND finished_ms > 0"

/* A finished job is last used at its end or when its newest handle was
 * made, whichever is later: a submission answered from a done job's
 * result is a handle on that job, made long after it ended, and it keeps
 * the job (and so the result and graph) as long as a job that ended then. */
#define SRV__NO_NEWER_HANDLE "NOT EXISTS (SELECT 1 FROM handles WHERE handles.job_id = jobs.id AND handles.created_ms > $1)"
#define SRV__LAST_USED                                                                                      \
  "CASE WHEN h > finished_ms THEN h ELSE finished_ms END AS t FROM (SELECT finished_ms,"                     \
  " (SELECT MAX(created_ms) FROM handles WHERE handles.job_id = jobs.id) AS h FROM jobs WHERE " SRV__FINISHED \
  ") AS a"

/* Finished jobs last used at or before $1, a batch at a time, then the
 * results and graphs no job refers to, created at or before it. */
static const char *const srv__del_jobs =
    "DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE " SRV__FINISHED " AND finished_ms <= $1 AND "
    SRV__NO_NEWER_HANDLE " ORDER BY finished_ms LIMIT 500) RETURNING id AS k";
/* The handles of the jobs deleted (each older than its job's end). */
static const char *const srv__del_handles =
    "DELETE FROM handles WHERE created_ms <= $1 AND job_id NOT IN (SELECT id FROM jobs) RETURNING id AS k";
static const char *const srv__del_results =
    "DELETE FROM results WHERE created_ms <= $1 AND key NOT IN (SELECT result_key FROM jobs) RETURNING key AS k";
static const char *const srv__del_graphs =
    "DELETE FROM graphs WHERE created_ms <= $1 AND hash NOT IN (SELECT graph_hash FROM jobs) RETURNING hash AS k";

typedef struct {
  srv_store_t *st;
  void *h;
  srv_sweep_deleted_fn fn;
  void *arg;
  srv_sweep_stats_t *o;
} srv__sweep_t;

/* Everything deletable up to `upto`; -1 when the store failed. */
static int srv__sweep_upto(srv__sweep_t *s, double upto) {
  const srv_store_ops_t *ops = s->st->ops;
  long long n;
  do {
    if ((n = ops->sweep_exec(s->st, s->h, srv__del_jobs, upto, "jobs", s->fn, s->arg)) < 0) return -1;
    s->o->jobs += (uint64_t)n;
  } while (n > 0);
  if ((n = ops->sweep_exec(s->st, s->h, srv__del_handles, upto, "jobs", s->fn, s->arg)) < 0) return -1;
  if ((n = ops->sweep_exec(s->st, s->h, srv__del_results, upto, "results", s->fn, s->arg)) < 0) return -1;
  s->o->results += (uint64_t)n;
  if ((n = ops->sweep_exec(s->st, s->h, srv__del_graphs, upto, "graphs", s->fn, s->arg)) < 0) return -1;
  s->o->graphs += (uint64_t)n;
  return 0;
}

/* How far the next step of the size bound deletes: the time the least
 * recently used eighth of the finished jobs was last used (1 to 256 of
 * them, so as not to overshoot the bound by much); without any, the
 * creation time of the oldest results, then graphs, that nothing refers
 * to. -1: nothing. */
static double srv__next_upto(srv__sweep_t *s) {
  const srv_store_ops_t *ops = s->st->ops;
  double finished = ops->sweep_value(s->st, s->h, "SELECT count(*) FROM jobs WHERE " SRV__FINISHED, 0, 0), upto;
  long batch = (long)(finished / 8);
  char sql[512];
  snprintf(sql, sizeof(sql), "SELECT MAX(t) FROM (SELECT " SRV__LAST_USED " ORDER BY t LIMIT %ld) AS b",
           batch < 1 ? 1L : batch > 256 ? 256L : batch);
  upto = ops->sweep_value(s->st, s->h, sql, 0, -1);
  if (upto < 0)
    upto = ops->sweep_value(s->st, s->h,
                            "SELECT MAX(created_ms) FROM (SELECT created_ms FROM results WHERE key NOT IN"
                            " (SELECT result_key FROM jobs) ORDER BY created_ms LIMIT 64) AS t",
                            0, -1);
  if (upto < 0)
    upto = ops->sweep_value(s->st, s->h,
                            "SELECT MAX(created_ms) FROM (SELECT created_ms FROM graphs WHERE hash NOT IN"
                            " (SELECT graph_hash FROM jobs) ORDER BY created_ms LIMIT 64) AS t",
                            0, -1);
  return upto;
}

int srv_store_sweep(srv_store_t *st, double before_ms, double keep_after_ms, uint64_t max_bytes,
                    srv_sweep_deleted_fn deleted, void *arg, srv_sweep_stats_t *out) {
  const srv_store_ops_t *ops = st->ops;
  srv__sweep_t s;
  int rc = 0;
  memset(out, 0, sizeof(*out));
  if (ops->sweep_begin == NULL) return SRV_EINVAL;
  s.st = st;
  s.fn = deleted;
  s.arg = arg;
  s.o = out;
  if ((rc = ops->sweep_begin(st, &s.h)) != 0) {
    out->skipped = rc == 1;
    return rc == 1 ? 0 : rc;
  }
  if (before_ms > 0 && srv__sweep_upto(&s, before_ms) != 0) rc = SRV_ESTORE;
  while (rc == 0 && max_bytes > 0 && (out->bytes_used = ops->sweep_bytes(st, s.h)) > max_bytes) {
    uint64_t before = out->jobs + out->results + out->graphs;
    double upto = srv__next_upto(&s);
    if (upto > keep_after_ms) upto = keep_after_ms;
    if (upto < 0 || srv__sweep_upto(&s, upto) != 0) break;
    if (out->jobs + out->results + out->graphs == before) break;
  }
  if (rc == 0) out->bytes_used = ops->sweep_bytes(st, s.h);
  ops->sweep_end(st, s.h);
  return rc;
}
