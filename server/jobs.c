/* jobs.c - the bounded queue, the worker threads and the life of a job
 * (see jobs.h for the design and the choice of pthreads).
 *
 * One mutex guards the queue, the list of active jobs and the mutable
 * fields of every job. The slow parts (planning, the store's fsync'd
 * writes, serialising results) run outside it.
 *
 * With a shared store the plans are not queued here: the store's jobs
 * table is the queue of every replica. An idle worker claims the oldest
 * plan from the store (under a lease that srv_jobs_tick renews), and the
 * active list also holds "remote" plans, known here but queued in the
 * store or running on another replica: a plan submitted here, one joined
 * by an identical submission, one looked up or waited for. Their end comes
 * from the store's notification (srv_jobs_store_event), which wakes their
 * waiters as a local end does. Frontiers stay local in both cases. */
#include "jobs.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "maximize.h"
#include "maximize_json.h"
#include "dims_json.h"
#include "formats.h"
#include "fit.h"
#include "fit_json.h"
#include "frontier.h"
#include "frontier_json.h"
#include "keys.h"
#include "log.h"
#include "metrics.h"
#include "plan_json.h"
#include "results.h"
#include "store.h"
#include "util.h"

/* Why a running solver was asked to stop (job->stop). LOST: a shared
 * store gave the plan's lease to another replica. */
enum { SRV__RUN = 0, SRV__STOP_CANCEL = 1, SRV__STOP_DEADLINE = 2, SRV__STOP_SHUTDOWN = 3, SRV__STOP_LOST = 4 };

/* A plan claimed this many times never finished: its replicas died on it. */
#define SRV__MAX_ATTEMPTS 5

struct srv_job_s {
  /* immutable after creation */
  srv_jobs_t *owner;
  srv_job_kind_t kind;
  char id[33];
  char key[256];
  srv_plan_params_t p;       /* for frontiers: graph_hash, solver, swap and device only */
  uint64_t *budgets;         /* a fit (a frontier-kind job): the budgets to plan at (owned) */
  size_t n_budgets;
  int fit_flags;             /* a fit: SRV_FIT_LEAST, SRV_FIT_EACH (jobs.h) */
  double created_ms;
  /* guarded by owner->mu */
  srv_job_status_t status;
  double started_ms, finished_ms;
  char err_code[32];
  char err_msg[512];
  int refs;
  int in_store;              /* the job row is committed */
  int unrecorded;            /* final here, but the store's row still says stored_status:
                                1 while srv__settle writes it, 2 once refused (srv_jobs_flush's) */
  srv_job_status_t stored_status; /* what the row said at the last write that landed */
  char *pending_error;       /* the unrecorded final write's error JSON (owned) */
  int listed;                /* on the active list */
  int remote;                /* shared store: not running on this replica */
  int attempts;              /* shared store: claims of the plan so far */
  mp_graph_t *graph;         /* owned; loaded from the store when NULL */
  struct srv_job_s *qnext;   /* its client's FIFO */
  struct srv_job_s *aprev, *anext; /* active list */
  /* read by the solver without the lock */
  atomic_int stop;
  double deadline_mono;
  /* progress of a running job: written by its worker (the planner's
   * progress callback), read by views without the lock. The phase is one
   * of the planner's static strings; the fraction in millionths, -1 when
   * unknown. */
  _Atomic(const char *) phase;
  atomic_int fraction_ppm;
};

/* One client's queued jobs, oldest first. A client is on the ring while it
 * has any: it joins at the head, and a worker serves the first client with
 * the fewest jobs running, which then moves to the tail (srv__pop). */
typedef struct srv__client_s {
  char id[68];
  srv_job_t *head, *tail;
  size_t running;            /* its jobs running here, counted by srv__pop */
  struct srv__client_s *next;
} srv__client_t;

struct srv_jobs_s {
  srv_jobs_config_t cfg;
  pthread_mutex_t mu;
  /* Held (before mu) across a local plan's status write to the store and
   * the stored_status it sets, and across srv_jobs_count_status's count of
   * the store and its correction from memory: a count never sees a row
   * written whose stored_status says otherwise (the plan counted twice). */
  pthread_mutex_t rows_mu;
  pthread_cond_t cv;
  srv__client_t *ring, *ring_tail; /* clients with queued jobs, next to serve first */
  size_t depth;              /* queued jobs, all clients */
  size_t reserved;           /* accepted, being written to the store */
  size_t running;
  srv_job_t *active;         /* queued or running, plans and frontiers */
  int paused, stopping;
  pthread_t *threads;
  unsigned n_threads;
  /* Test hook: MEMPLAN_TEST_PLAN_DELAY_MS holds every job this long before
   * it plans (cancellable), so end-to-end tests can observe a "running"
   * plan however fast the planner gets. Read once at start; 0 in service. */
  double test_delay_ms;
  /* Test hook: MEMPLAN_TEST_PLAN_HOLD_FILE names a file; while it exists
   * every job waits before it plans (cancellable, and ended by a shutdown
   * or --plan-timeout as the delay is), so a test holds plans running
   * exactly as long as it needs, whatever the machine's load. NULL in
   * service. */
  char *test_hold_file;
  /* shared store */
  int shared;
  char owner[96];            /* this replica in the store's leases */
  unsigned long claim_gen;   /* bumped when the store may hold a plan to claim */
  uint64_t store_queued;     /* the store's queued plans at the last tick */
  size_t unrecorded;         /* plans whose final state the store has not taken yet */
};

static char *srv__error_json(const char *code, const char *msg);

static const char *const srv__status_names[SRV_JOB_NSTATUS] = {"queued", "running", "done", "failed",
                                                               "cancelled"};

const char *srv_job_status_name(srv_job_status_t s) {
  return (unsigned)s < SRV_JOB_NSTATUS ? srv__status_names[s] : "unknown";
}

int srv_job_status_parse(const char *name) {
  int i;
  for (i = 0; name != NULL && i < SRV_JOB_NSTATUS; i++)
    if (strcmp(name, srv__status_names[i]) == 0) return i;
  return -1;
}

/* ---- references and the active list (callers hold mu) ---- */

static void srv__job_free(srv_job_t *job) {
  mp_graph_free(job->graph);
  free(job->pending_error);
  free(job->budgets);
  free(job);
}

void srv_job_ref(srv_job_t *job) {
  pthread_mutex_lock(&job->owner->mu);
  job->refs++;
  pthread_mutex_unlock(&job->owner->mu);
}

void srv_job_unref(srv_job_t *job) {
  int last;
  if (job == NULL) return;
  pthread_mutex_lock(&job->owner->mu);
  last = --job->refs == 0;
  pthread_mutex_unlock(&job->owner->mu);
  if (last) srv__job_free(job);
}

static void srv__active_add(srv_jobs_t *j, srv_job_t *job) {
  job->listed = 1;
  job->aprev = NULL;
  job->anext = j->active;
  if (j->active) j->active->aprev = job;
  j->active = job;
  job->refs++;
}

static void srv__active_remove(srv_jobs_t *j, srv_job_t *job) {
  if (job->aprev) job->aprev->anext = job->anext; else j->active = job->anext;
  if (job->anext) job->anext->aprev = job->aprev;
  job->aprev = job->anext = NULL;
  job->listed = 0;
  job->refs--; /* never the last: the caller holds one */
}

static srv_job_t *srv__active_by_key(srv_jobs_t *j, const char *key) {
  srv_job_t *job;
  for (job = j->active; job; job = job->anext)
    if (strcmp(job->key, key) == 0 && job->status <= SRV_JOB_RUNNING) return job;
  return NULL;
}

static srv_job_t *srv__active_by_id(srv_jobs_t *j, const char *id) {
  srv_job_t *job;
  for (job = j->active; job; job = job->anext)
    if (job->kind == SRV_JOB_PLAN && strcmp(job->id, id) == 0) return job;
  return NULL;
}

/* ---- the queue: one FIFO per client, fewest running first (callers hold mu) ----
 *
 * A client that queues a hundred plans waits behind itself, not in front
 * of everyone: each turn of the ring takes one job from every client that
 * has one. --max-queued-per-client bounds what one client may have queued
 * (srv__client_queued), so it cannot fill --queue-size alone either. */

/* The ring entry of client `id` and the one before it (NULL: the head). */
static srv__client_t *srv__client_find(srv_jobs_t *j, const char *id, srv__client_t **prev) {
  srv__client_t *c, *p = NULL;
  for (c = j->ring; c; p = c, c = c->next)
    if (strcmp(c->id, id) == 0) break;
  if (prev) *prev = p;
  return c;
}

static void srv__client_unlink(srv_jobs_t *j, srv__client_t *c, srv__client_t *prev) {
  if (prev) prev->next = c->next; else j->ring = c->next;
  if (j->ring_tail == c) j->ring_tail = prev;
  c->next = NULL;
}

static void srv__client_append(srv_jobs_t *j, srv__client_t *c) {
  c->next = NULL;
  if (j->ring_tail) j->ring_tail->next = c; else j->ring = c;
  j->ring_tail = c;
}

/* Queue a job at its client's tail; SRV_ENOMEM when a new client's entry
 * cannot be made. */
static int srv__push(srv_jobs_t *j, srv_job_t *job) {
  srv__client_t *c = srv__client_find(j, job->p.client, NULL);
  if (c == NULL) {
    if ((c = calloc(1, sizeof(*c))) == NULL) return SRV_ENOMEM;
    snprintf(c->id, sizeof(c->id), "%s", job->p.client);
    /* a client that had nothing queued was served longest ago: it goes
     * first among those with as few running */
    c->next = j->ring;
    j->ring = c;
    if (j->ring_tail == NULL) j->ring_tail = c;
  }
  job->qnext = NULL;
  if (c->tail) c->tail->qnext = job; else c->head = job;
  c->tail = job;
  j->depth++;
  job->refs++;
  pthread_cond_signal(&j->cv);
  return 0;
}

/* The next job to run: the oldest of the client on the ring with the
 * fewest jobs running here, the first such in ring order (served longest
 * ago); that client then goes to the ring's tail (or leaves the ring,
 * empty). A newcomer therefore waits only for the first worker to free,
 * not behind a flooding client's next plan: the flooder has its plans
 * running, the newcomer none. The queue's reference becomes the caller's.
 * NULL when nothing is queued. */
static srv_job_t *srv__pop(srv_jobs_t *j) {
  srv__client_t *c, *best = NULL, *best_prev = NULL, *prev = NULL;
  srv_job_t *job;
  if (j->ring == NULL) return NULL;
  for (c = j->ring; c; c = c->next) c->running = 0;
  for (job = j->active; job; job = job->anext)
    if (job->status == SRV_JOB_RUNNING && !job->remote && (c = srv__client_find(j, job->p.client, NULL)) != NULL)
      c->running++;
  for (c = j->ring; c; prev = c, c = c->next)
    if (best == NULL || c->running < best->running) {
      best = c;
      best_prev = prev;
    }
  c = best;
  job = c->head;
  c->head = job->qnext;
  if (c->head == NULL) c->tail = NULL;
  job->qnext = NULL;
  j->depth--;
  srv__client_unlink(j, c, best_prev);
  if (c->head) srv__client_append(j, c); else free(c);
  return job;
}

/* Remove a queued job; returns whether it was there. */
static int srv__unqueue(srv_jobs_t *j, srv_job_t *job) {
  srv__client_t *prev, *c = srv__client_find(j, job->p.client, &prev);
  srv_job_t **pp, *before = NULL;
  if (c == NULL) return 0;
  for (pp = &c->head; *pp && *pp != job; pp = &(*pp)->qnext) before = *pp;
  if (*pp == NULL) return 0;
  *pp = job->qnext;
  if (c->tail == job) c->tail = before;
  job->qnext = NULL;
  j->depth--;
  job->refs--;
  if (c->head == NULL) {
    srv__client_unlink(j, c, prev);
    free(c);
  }
  return 1;
}

/* Plans and frontiers of `client` accepted here and not started yet
 * (queued, or being written to the store). */
static size_t srv__client_queued(srv_jobs_t *j, const char *client) {
  srv_job_t *job;
  size_t n = 0;
  for (job = j->active; job; job = job->anext)
    if (job->status == SRV_JOB_QUEUED && !job->remote && strcmp(job->p.client, client) == 0) n++;
  return n;
}

static srv_job_t *srv__job_new(srv_jobs_t *j, srv_job_kind_t kind) {
  srv_job_t *job = calloc(1, sizeof(*job));
  if (job == NULL) return NULL;
  job->owner = j;
  job->kind = kind;
  job->refs = 1;
  job->created_ms = srv_now_ms();
  atomic_init(&job->stop, SRV__RUN);
  atomic_init(&job->phase, "start");
  atomic_init(&job->fraction_ppm, -1);
  srv_random_hex(job->id, 16);
  return job;
}

static srv_job_status_t srv__row_status(const srv_job_row_t *row) {
  int st = srv_job_status_parse(row->status);
  return st < 0 ? SRV_JOB_QUEUED : (srv_job_status_t)st;
}

/* A plan's parameters from its row; 0, or -1 when they do not read back. */
static int srv__from_row(srv_job_t *job, const srv_job_row_t *row) {
  memcpy(job->id, row->id, sizeof(job->id));
  snprintf(job->key, sizeof(job->key), "%s", row->result_key);
  memcpy(job->p.graph_hash, row->graph_hash, sizeof(job->p.graph_hash));
  job->p.budget = row->budget;
  if (mp_solver_parse(row->solver, &job->p.solver) != 0 || mp_objective_parse(row->objective, &job->p.objective) != 0 ||
      mp_accounting_parse(row->accounting, &job->p.accounting) != 0 ||
      srv_keys_device(row->result_key, &job->p.swap, &job->p.device) != 0)
    return -1;
  job->p.timeline = row->timeline;
  memcpy(job->p.request_id, row->request_id, sizeof(job->p.request_id));
  memcpy(job->p.client, row->client, sizeof(job->p.client));
  job->created_ms = row->created_ms;
  job->in_store = 1;
  job->stored_status = srv__row_status(row);
  return 0;
}

#define SRV__BAD_ROW "{\"code\":\"bad_row\",\"message\":\"the stored job has unknown parameters\"}"

static void srv__finish_notify(srv_jobs_t *jobs, srv_job_t *job) {
  if (jobs->cfg.on_finished) jobs->cfg.on_finished(job, jobs->cfg.arg);
}

/* ---- a shared store: plans known here but not running here ---- */

/* Remote plan `job` reached the final status `st`: end it here and wake
 * its waiters (once). */
static void srv__remote_end(srv_jobs_t *jobs, srv_job_t *job, srv_job_status_t st) {
  pthread_mutex_lock(&jobs->mu);
  if (!job->remote || !job->listed || job->status > SRV_JOB_RUNNING) {
    pthread_mutex_unlock(&jobs->mu);
    return;
  }
  job->status = st;
  job->finished_ms = srv_now_ms();
  job->refs++;
  srv__active_remove(jobs, job);
  pthread_mutex_unlock(&jobs->mu);
  srv__finish_notify(jobs, job);
  srv_job_unref(job);
}

/* Bring a remote plan up to date with its row. */
static void srv__remote_update(srv_jobs_t *jobs, srv_job_t *job, const srv_job_row_t *row) {
  int st = srv_job_status_parse(row->status);
  if (st >= SRV_JOB_DONE) {
    srv__remote_end(jobs, job, (srv_job_status_t)st);
    return;
  }
  pthread_mutex_lock(&jobs->mu);
  if (job->remote && job->listed && st >= 0) {
    job->status = (srv_job_status_t)st;
    job->started_ms = row->started_ms;
  }
  pthread_mutex_unlock(&jobs->mu);
}

/* Plan `id` as known here (a new reference): the active one, brought up to
 * date when it runs elsewhere, or a new remote one for a plan the store
 * has queued or running. NULL when the store knows no such active plan. */
static srv_job_t *srv__shared_find(srv_jobs_t *jobs, const char *id) {
  srv_job_row_t row;
  srv_job_t *job, *known;
  int remote = 0, st;
  pthread_mutex_lock(&jobs->mu);
  if ((job = srv__active_by_id(jobs, id)) != NULL) {
    job->refs++;
    remote = job->remote;
  }
  pthread_mutex_unlock(&jobs->mu);
  if (job && !remote) return job;
  if (srv_store_get_job(jobs->cfg.store, id, &row) != 0) return job; /* what is known, if anything */
  if (job) {
    srv__remote_update(jobs, job, &row);
    srv_job_row_clear(&row);
    return job;
  }
  st = srv_job_status_parse(row.status);
  if (st < 0 || st > SRV_JOB_RUNNING || (job = srv__job_new(jobs, SRV_JOB_PLAN)) == NULL) {
    srv_job_row_clear(&row);
    return NULL;
  }
  if (srv__from_row(job, &row) != 0) {
    srv_job_row_clear(&row);
    srv__job_free(job);
    return NULL;
  }
  srv_job_row_clear(&row);
  job->remote = 1;
  job->status = (srv_job_status_t)st;
  job->started_ms = row.started_ms;
  pthread_mutex_lock(&jobs->mu);
  if ((known = srv__active_by_id(jobs, id)) != NULL) {
    known->refs++;
    pthread_mutex_unlock(&jobs->mu);
    srv__job_free(job);
    return known;
  }
  srv__active_add(jobs, job);
  pthread_mutex_unlock(&jobs->mu);
  /* It may have ended between the read and the add, its notification then
   * finding nothing here: read it again now that a notification finds it. */
  if (srv_store_get_job(jobs->cfg.store, id, &row) == 0) {
    srv__remote_update(jobs, job, &row);
    srv_job_row_clear(&row);
  }
  return job;
}

/* Wake the idle workers: the store may hold a plan to claim. */
static void srv__poke(srv_jobs_t *jobs) {
  pthread_mutex_lock(&jobs->mu);
  jobs->claim_gen++;
  pthread_cond_broadcast(&jobs->cv);
  pthread_mutex_unlock(&jobs->mu);
}

void srv_jobs_forget(srv_jobs_t *jobs, const char *const *keys, size_t n) {
  srv_cache_drop_tags(jobs->cfg.cache, keys, n);
}

void srv_jobs_store_event(srv_jobs_t *jobs, const char *channel, const char *payload) {
  char id[33];
  size_t n = strcspn(payload, " ");
  srv_job_t *job;
  if (strcmp(channel, SRV_STORE_CH_QUEUED) == 0) {
    srv__poke(jobs);
    return;
  }
  if (strcmp(channel, SRV_STORE_CH_SWEPT) == 0) { /* a replica's retention deleted it */
    srv_jobs_forget(jobs, &payload, 1);
    return;
  }
  if (n >= sizeof(id)) return;
  memcpy(id, payload, n);
  id[n] = '\0';
  pthread_mutex_lock(&jobs->mu);
  job = srv__active_by_id(jobs, id);
  if (job && strcmp(channel, SRV_STORE_CH_CANCEL) == 0) {
    int expected = SRV__RUN;
    if (!job->remote && job->status == SRV_JOB_RUNNING)
      atomic_compare_exchange_strong(&job->stop, &expected, SRV__STOP_CANCEL);
    job = NULL;
  } else if (job && job->remote) {
    job->refs++;
  } else {
    job = NULL; /* a plan that ran here ends through its worker */
  }
  pthread_mutex_unlock(&jobs->mu);
  if (job) {
    int st = srv_job_status_parse(payload[n] ? payload + n + 1 : "");
    if (st >= SRV_JOB_DONE) srv__remote_end(jobs, job, (srv_job_status_t)st);
    srv_job_unref(job);
  }
}

/* The active plans matching `remote` and running (or any status when
 * `remote`), ids copied into *ids (malloc'd). */
static size_t srv__collect(srv_jobs_t *jobs, int remote, char (**ids)[33]) {
  srv_job_t *job;
  size_t n = 0, cap = 0;
  *ids = NULL;
  pthread_mutex_lock(&jobs->mu);
  for (job = jobs->active; job; job = job->anext)
    if (job->kind == SRV_JOB_PLAN && job->in_store && job->remote == remote &&
        (remote || job->status == SRV_JOB_RUNNING))
      cap++;
  if (cap && (*ids = malloc(cap * sizeof(**ids))) != NULL)
    for (job = jobs->active; job && n < cap; job = job->anext)
      if (job->kind == SRV_JOB_PLAN && job->in_store && job->remote == remote &&
          (remote || job->status == SRV_JOB_RUNNING))
        memcpy((*ids)[n++], job->id, 33);
  pthread_mutex_unlock(&jobs->mu);
  return n;
}

void srv_jobs_tick(srv_jobs_t *jobs, int recheck) {
  char (*ids)[33];
  int *outcome;
  uint64_t counts[5];
  size_t n, i;
  if (!jobs->shared) return;
  n = srv__collect(jobs, 0, &ids);
  outcome = n ? calloc(n, sizeof(*outcome)) : NULL;
  if (n && outcome && srv_store_renew_leases(jobs->cfg.store, jobs->owner, jobs->cfg.lease_s, (const char (*)[33])ids,
                                             n, outcome) == 0) {
    pthread_mutex_lock(&jobs->mu);
    for (i = 0; i < n; i++) {
      srv_job_t *job = srv__active_by_id(jobs, ids[i]);
      int expected = SRV__RUN;
      if (job == NULL || job->remote || outcome[i] == SRV_LEASE_KEPT) continue;
      atomic_compare_exchange_strong(&job->stop, &expected,
                                     outcome[i] == SRV_LEASE_CANCEL ? SRV__STOP_CANCEL : SRV__STOP_LOST);
      if (outcome[i] == SRV_LEASE_LOST)
        srv_log(SRV_LOG_WARN, "lease lost: another replica runs the plan", json_pack("{s:s}", "job_id", job->id));
    }
    pthread_mutex_unlock(&jobs->mu);
  }
  free(outcome);
  free(ids);
  /* Also how the store's health is checked while nothing runs. */
  if (srv_store_count_status(jobs->cfg.store, counts) == 0) {
    pthread_mutex_lock(&jobs->mu);
    jobs->store_queued = counts[SRV_JOB_QUEUED];
    pthread_mutex_unlock(&jobs->mu);
  }
  /* A plan whose replica died is claimable once its lease is over: no
   * notification says when. */
  srv__poke(jobs);
  if (!recheck) return;
  n = srv__collect(jobs, 1, &ids);
  for (i = 0; i < n; i++) {
    srv_job_t *job = srv__shared_find(jobs, ids[i]);
    srv_job_unref(job);
  }
  free(ids);
}

const char *srv_jobs_owner(srv_jobs_t *jobs) { return jobs->owner; }

/* ---- lookups ---- */

srv_job_t *srv_jobs_find(srv_jobs_t *jobs, const char *id) {
  srv_job_t *job;
  if (jobs->shared) return srv__shared_find(jobs, id);
  pthread_mutex_lock(&jobs->mu);
  for (job = jobs->active; job; job = job->anext)
    if (job->kind == SRV_JOB_PLAN && strcmp(job->id, id) == 0) {
      job->refs++;
      break;
    }
  pthread_mutex_unlock(&jobs->mu);
  return job;
}

void srv_job_snapshot(srv_job_t *job, srv_job_snapshot_t *o) {
  pthread_mutex_lock(&job->owner->mu);
  o->kind = job->kind;
  o->status = job->status;
  memcpy(o->id, job->id, sizeof(o->id));
  memcpy(o->key, job->key, sizeof(o->key));
  memcpy(o->graph_hash, job->p.graph_hash, sizeof(o->graph_hash));
  memcpy(o->err_code, job->err_code, sizeof(o->err_code));
  memcpy(o->err_msg, job->err_msg, sizeof(o->err_msg));
  pthread_mutex_unlock(&job->owner->mu);
}

int srv_job_is_final(srv_job_t *job) {
  int f;
  pthread_mutex_lock(&job->owner->mu);
  f = job->status >= SRV_JOB_DONE;
  pthread_mutex_unlock(&job->owner->mu);
  return f;
}

json_t *srv_job_to_json(srv_job_t *job) {
  srv_job_row_t r;
  memset(&r, 0, sizeof(r));
  pthread_mutex_lock(&job->owner->mu);
  memcpy(r.id, job->id, sizeof(r.id));
  snprintf(r.status, sizeof(r.status), "%s", srv_job_status_name(job->status));
  memcpy(r.graph_hash, job->p.graph_hash, sizeof(r.graph_hash));
  r.budget = job->p.budget;
  snprintf(r.solver, sizeof(r.solver), "%s", mp_solver_name(job->p.solver));
  snprintf(r.objective, sizeof(r.objective), "%s", mp_objective_name(job->p.objective));
  snprintf(r.accounting, sizeof(r.accounting), "%s", mp_accounting_name(job->p.accounting));
  r.created_ms = job->created_ms;
  r.started_ms = job->started_ms;
  r.finished_ms = job->finished_ms;
  memcpy(r.request_id, job->p.request_id, sizeof(r.request_id));
  if (job->status >= SRV_JOB_FAILED && job->err_code[0]) r.error = srv__error_json(job->err_code, job->err_msg);
  pthread_mutex_unlock(&job->owner->mu);
  {
    json_t *o = srv_job_row_to_json(&r), *pr = srv_job_progress_json(job);
    srv_job_row_clear(&r);
    if (o && pr) json_object_set_new(o, "progress", pr);
    else json_decref(pr);
    return o;
  }
}

json_t *srv_job_progress_json(srv_job_t *job) {
  double started;
  int running, remote, ppm;
  const char *phase;
  pthread_mutex_lock(&job->owner->mu);
  running = job->status == SRV_JOB_RUNNING;
  remote = job->remote;
  started = job->started_ms;
  pthread_mutex_unlock(&job->owner->mu);
  if (!running) return NULL;
  phase = remote ? NULL : atomic_load(&job->phase);
  ppm = remote ? -1 : atomic_load(&job->fraction_ppm);
  return json_pack("{s:o,s:o,s:f}", "phase", phase ? json_string(phase) : json_null(), "fraction",
                   ppm >= 0 ? json_real(ppm / 1e6) : json_null(), "elapsed_ms",
                   started > 0 ? floor(srv_now_ms() - started) : 0.0);
}

void srv_jobs_stats(srv_jobs_t *jobs, uint64_t *queued, uint64_t *capacity, uint64_t *running,
                    uint64_t *workers) {
  pthread_mutex_lock(&jobs->mu);
  *queued = jobs->depth + jobs->reserved + jobs->store_queued;
  *capacity = jobs->cfg.queue_size;
  *running = jobs->running;
  *workers = jobs->cfg.workers;
  pthread_mutex_unlock(&jobs->mu);
}

/* ---- submission ---- */

/* The row of a new plan job. */
static void srv__row_of(const srv_job_t *job, srv_job_row_t *row) {
  memset(row, 0, sizeof(*row));
  memcpy(row->id, job->id, sizeof(row->id));
  strcpy(row->status, "queued");
  memcpy(row->graph_hash, job->p.graph_hash, sizeof(row->graph_hash));
  memcpy(row->result_key, job->key, sizeof(row->result_key));
  row->budget = job->p.budget;
  snprintf(row->solver, sizeof(row->solver), "%s", mp_solver_name(job->p.solver));
  snprintf(row->objective, sizeof(row->objective), "%s", mp_objective_name(job->p.objective));
  snprintf(row->accounting, sizeof(row->accounting), "%s", mp_accounting_name(job->p.accounting));
  row->timeline = job->p.timeline;
  row->created_ms = job->created_ms;
  memcpy(row->request_id, job->p.request_id, sizeof(row->request_id));
  memcpy(row->client, job->p.client, sizeof(row->client));
  memcpy(row->owner, job->p.owner, sizeof(row->owner));
}

/* What a submission gets before any new job: a result computed before
 * (CACHED), a refusal while draining, or an identical job active here
 * (JOINED, *out a new reference). 0 when none, with jobs->mu then held. */
static int srv__existing(srv_jobs_t *jobs, const char *key, int join, srv_job_t **out, char **result,
                         size_t *result_len, char *result_job_id) {
  srv_job_t *job;
  if (srv_results_get(jobs->cfg.cache, jobs->cfg.store, key, result, result_len, result_job_id) == 0) {
    srv_metrics_cache(jobs->cfg.metrics, 1);
    return SRV_SUBMIT_CACHED;
  }
  pthread_mutex_lock(&jobs->mu);
  if (jobs->paused) {
    pthread_mutex_unlock(&jobs->mu);
    return SRV_EDRAINING;
  }
  if (join && (job = srv__active_by_key(jobs, key)) != NULL) {
    job->refs++;
    pthread_mutex_unlock(&jobs->mu);
    srv_metrics_dedup(jobs->cfg.metrics);
    *out = job;
    return SRV_SUBMIT_JOINED;
  }
  return 0;
}

/* A plan on a shared store: the store deduplicates (an identical plan in
 * flight on any replica is joined) and bounds the queue (--queue-size
 * queued plans in the whole cluster). The job is listed here only once its
 * row is committed, so nobody here joins a plan the store may refuse. */
static int srv__submit_shared(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key, mp_graph_t **graph,
                              const char *graph_json, size_t graph_json_len, srv_job_t **out, char **result,
                              size_t *result_len, char *result_job_id) {
  int attempt;
  for (attempt = 0; attempt < 3; attempt++) {
    srv_job_t *job;
    srv_job_row_t row;
    char joined[33];
    int rc;
    if ((rc = srv__existing(jobs, key, 1, out, result, result_len, result_job_id)) != 0) return rc;
    pthread_mutex_unlock(&jobs->mu);
    /* A full store takes no new work until a write finds room again (the
     * upkeep probes it), as below. */
    if (srv_store_health(jobs->cfg.store, NULL, 0) == SRV_ENOSPACE) return SRV_ENOSPACE;
    if ((job = srv__job_new(jobs, SRV_JOB_PLAN)) == NULL) return SRV_ENOMEM;
    job->p = *p;
    snprintf(job->key, sizeof(job->key), "%s", key);
    srv__row_of(job, &row);
    rc = srv_store_accept_job(jobs->cfg.store, &row, graph_json, graph_json_len,
                              graph && *graph ? (*graph)->n_nodes : 0, jobs->cfg.queue_size,
                              jobs->cfg.max_queued_per_client, joined);
    if (rc == 0) {
      srv_job_t *claimed;
      srv_metrics_cache(jobs->cfg.metrics, 0);
      job->in_store = 1;
      job->remote = 1; /* until a worker here claims it */
      job->graph = graph ? *graph : NULL;
      if (graph) *graph = NULL;
      pthread_mutex_lock(&jobs->mu);
      /* The row's notification may have let a worker here claim the plan
       * (listing it, running) before this line: that one is the plan. A
       * second object under the same id would end only when the store's
       * notification came, while lookups could find the other one still
       * running, and a waiter woken by the first would be shown the
       * second's "running". */
      if ((claimed = srv__active_by_id(jobs, job->id)) != NULL) {
        claimed->refs++;
        pthread_mutex_unlock(&jobs->mu);
        srv__job_free(job);
        *out = claimed;
        return SRV_SUBMIT_QUEUED;
      }
      srv__active_add(jobs, job);
      jobs->claim_gen++; /* the notification will say so too */
      pthread_cond_broadcast(&jobs->cv);
      pthread_mutex_unlock(&jobs->mu);
      *out = job;
      return SRV_SUBMIT_QUEUED;
    }
    srv__job_free(job);
    if (rc != SRV_ECONFLICT)
      return rc == SRV_EFULL || rc == SRV_ECLIENTFULL || rc == SRV_ENOSPACE ? rc : SRV_ESTORE;
    if ((*out = srv__shared_find(jobs, joined)) != NULL) {
      srv_metrics_dedup(jobs->cfg.metrics);
      return SRV_SUBMIT_JOINED;
    }
    /* The plan it met has finished since: its result is there now. */
  }
  return SRV_ESTORE;
}

static int srv__submit(srv_jobs_t *jobs, srv_job_kind_t kind, int join, const srv_plan_params_t *p, const char *key,
                       mp_graph_t **graph, const char *graph_json, size_t graph_json_len, srv_job_t **out,
                       char **result, size_t *result_len, char *result_job_id, uint64_t **budgets,
                       size_t n_budgets, int fit_flags) {
  srv_job_t *job;
  int rc;

  *out = NULL;
  if (jobs->shared && kind == SRV_JOB_PLAN)
    return srv__submit_shared(jobs, p, key, graph, graph_json, graph_json_len, out, result, result_len,
                              result_job_id);
  if ((rc = srv__existing(jobs, key, join, out, result, result_len, result_job_id)) != 0) return rc;
  /* A full store takes no new work until it has room again (the upkeep
   * probes it): what was accepted must still be able to end. */
  if (srv_store_health(jobs->cfg.store, NULL, 0) == SRV_ENOSPACE) {
    pthread_mutex_unlock(&jobs->mu);
    return SRV_ENOSPACE;
  }
  /* A job without a client ("": recovered, internal) is bounded by
   * --queue-size only. */
  if (jobs->cfg.max_queued_per_client && p->client[0] &&
      srv__client_queued(jobs, p->client) >= jobs->cfg.max_queued_per_client) {
    pthread_mutex_unlock(&jobs->mu);
    return SRV_ECLIENTFULL;
  }
  if (jobs->depth + jobs->reserved >= jobs->cfg.queue_size) {
    pthread_mutex_unlock(&jobs->mu);
    return SRV_EFULL;
  }
  if ((job = srv__job_new(jobs, kind)) == NULL) {
    pthread_mutex_unlock(&jobs->mu);
    return SRV_ENOMEM;
  }
  srv_metrics_cache(jobs->cfg.metrics, 0);
  job->p = *p;
  if (budgets) {
    job->budgets = *budgets;
    job->n_budgets = n_budgets;
    job->fit_flags = fit_flags;
    *budgets = NULL;
  }
  snprintf(job->key, sizeof(job->key), "%s", key);
  if (kind == SRV_JOB_FRONTIER) job->id[0] = 'f'; /* never a plan id: plans are pure hex */
  job->graph = graph ? *graph : NULL;
  if (graph) *graph = NULL;
  srv__active_add(jobs, job);
  jobs->reserved++;
  pthread_mutex_unlock(&jobs->mu);

  /* The job row is committed (fsync'd) before anyone hears of the job. */
  rc = 0;
  if (kind == SRV_JOB_PLAN) {
    srv_job_row_t row;
    srv__row_of(job, &row);
    rc = srv_store_accept_job(jobs->cfg.store, &row, graph_json, graph_json_len,
                              job->graph ? job->graph->n_nodes : 0, 0, 0, NULL);
  } else if (graph_json) {
    rc = srv_store_put_graph(jobs->cfg.store, p->graph_hash, graph_json, graph_json_len,
                             job->graph ? job->graph->n_nodes : 0);
  }

  pthread_mutex_lock(&jobs->mu);
  jobs->reserved--;
  if (rc == 0 && job->status == SRV_JOB_QUEUED && srv__push(jobs, job) != 0) rc = SRV_ENOMEM;
  if (rc != 0) {
    /* Not accepted: give the graph back so the caller frees it. */
    job->status = SRV_JOB_FAILED;
    srv__active_remove(jobs, job);
    if (graph) {
      *graph = job->graph;
      job->graph = NULL;
    }
    pthread_mutex_unlock(&jobs->mu);
    /* A plan whose row was written but could not be queued: not a job. */
    if (rc == SRV_ENOMEM && kind == SRV_JOB_PLAN)
      srv_store_update_job(jobs->cfg.store, job->id, "failed", 0, srv_now_ms(),
                           "{\"code\":\"out_of_memory\",\"message\":\"the plan could not be queued\"}");
    srv_job_unref(job);
    return rc == SRV_ENOSPACE || rc == SRV_ENOMEM ? rc : SRV_ESTORE;
  }
  job->in_store = kind == SRV_JOB_PLAN;
  if (job->status == SRV_JOB_QUEUED) {
    pthread_mutex_unlock(&jobs->mu);
  } else {
    /* Cancelled while its row was being written: the cancel could not
     * record it, so record it here. */
    pthread_mutex_unlock(&jobs->mu);
    if (kind == SRV_JOB_PLAN) srv_store_update_job(jobs->cfg.store, job->id, "cancelled", 0, srv_now_ms(), NULL);
  }
  *out = job;
  return SRV_SUBMIT_QUEUED;
}

int srv_jobs_submit_plan(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key, mp_graph_t **graph,
                         const char *graph_json, size_t graph_json_len, srv_job_t **job, char **result,
                         size_t *result_len, char result_job_id[33], char handle_id[33]) {
  int attempt, rc = SRV_ESTORE;
  handle_id[0] = '\0';
  for (attempt = 0; attempt < 3; attempt++) {
    srv_job_row_t h;
    /* After a failed join, the embedded store starts a job of its own (the
     * one it met is being cancelled); a shared store's unique key makes it
     * meet that one until it has ended. */
    rc = srv__submit(jobs, SRV_JOB_PLAN, attempt == 0 || jobs->shared, p, key, graph, graph_json, graph_json_len,
                     job, result, result_len, result_job_id, NULL, 0, 0);
    if (rc == SRV_SUBMIT_QUEUED) memcpy(handle_id, (*job)->id, 33);
    if (rc != SRV_SUBMIT_JOINED) return rc;
    /* Joined: a handle of its own on the job, owned by the submitter. */
    memset(&h, 0, sizeof(h));
    srv_random_hex(h.id, 16);
    memcpy(h.owner, p->owner, sizeof(h.owner));
    memcpy(h.request_id, p->request_id, sizeof(h.request_id));
    h.created_ms = srv_now_ms();
    rc = srv_store_add_handle(jobs->cfg.store, &h, (*job)->id);
    if (rc == 0) {
      memcpy(handle_id, h.id, 33);
      return SRV_SUBMIT_JOINED;
    }
    srv_job_unref(*job);
    *job = NULL;
    if (rc != SRV_ECONFLICT) return rc == SRV_ENOSPACE ? rc : SRV_ESTORE;
  }
  return SRV_ESTORE;
}

int srv_jobs_cached_handle(srv_jobs_t *jobs, const srv_plan_params_t *p, const char *key,
                           const char *result_job_id, const char *graph_json, size_t graph_json_len, size_t n_nodes,
                           char handle_id[33], char job_id[33]) {
  srv_job_row_t row;
  int rc;
  memset(&row, 0, sizeof(row));
  srv_random_hex(row.id, 16);
  memcpy(row.owner, p->owner, sizeof(row.owner));
  memcpy(row.request_id, p->request_id, sizeof(row.request_id));
  row.created_ms = srv_now_ms();
  memcpy(handle_id, row.id, 33);
  if (strlen(result_job_id) == 32) {
    rc = srv_store_add_done_handle(jobs->cfg.store, &row, result_job_id);
    if (rc == 0) {
      memcpy(job_id, result_job_id, 33);
      return 0;
    }
    if (rc != SRV_ENOTFOUND) return rc == SRV_ENOSPACE ? rc : SRV_ESTORE;
  }
  /* A done job of its own: the handle's id, computed at no time. */
  strcpy(row.status, "done");
  memcpy(row.graph_hash, p->graph_hash, sizeof(row.graph_hash));
  snprintf(row.result_key, sizeof(row.result_key), "%s", key);
  row.budget = p->budget;
  snprintf(row.solver, sizeof(row.solver), "%s", mp_solver_name(p->solver));
  snprintf(row.objective, sizeof(row.objective), "%s", mp_objective_name(p->objective));
  snprintf(row.accounting, sizeof(row.accounting), "%s", mp_accounting_name(p->accounting));
  row.timeline = p->timeline;
  row.started_ms = row.finished_ms = row.created_ms;
  memcpy(row.client, p->client, sizeof(row.client));
  rc = srv_store_accept_job(jobs->cfg.store, &row, graph_json, graph_json_len, n_nodes, 0, 0, NULL);
  if (rc != 0) return rc == SRV_ENOSPACE ? rc : SRV_ESTORE;
  memcpy(job_id, row.id, 33);
  return 0;
}

int srv_jobs_submit_frontier(srv_jobs_t *jobs, const srv_plan_params_t *fp, const char *key,
                             uint64_t **budgets, size_t n_budgets, int fit_flags, mp_graph_t **graph,
                             srv_job_t **job, char **result, size_t *result_len) {
  srv_plan_params_t p;
  memset(&p, 0, sizeof(p));
  snprintf(p.graph_hash, sizeof(p.graph_hash), "%s", fp->graph_hash);
  /* Whoever asked: the computation takes its turn, and counts in the
   * --max-queued-per-client share, as that client's. */
  memcpy(p.client, fp->client, sizeof(p.client));
  p.solver = fp->solver;
  p.swap = fp->swap;
  p.device = fp->device;
  memcpy(p.maximize, fp->maximize, sizeof(p.maximize));
  p.max_value = fp->max_value;
  /* A frontier's graph is already in the store when it came by hash; a
   * graph sent inline is stored by the caller (routes.c). */
  return srv__submit(jobs, SRV_JOB_FRONTIER, 1, &p, key, graph, NULL, 0, job, result, result_len, NULL, budgets,
                     n_budgets, fit_flags);
}

/* ---- recording a plan's state in the store (embedded store) ----
 *
 * A write the store refuses (a full disk, an I/O error) is tried again a
 * few times; a final state it still refuses stays here: the plan keeps its
 * place on the active list, marked unrecorded, and is shown from memory
 * (plans.c), counted as it ended (srv_jobs_count_status), and written by
 * srv_jobs_flush once the store takes writes again. So no plan is ever
 * shown queued or running once it has ended, whatever its row says; and a
 * plan that never got recorded runs again after a restart, which is true
 * to what the store knows (its result was not kept either). */

/* Write the row of plan `id`, tried `tries` times (three: over a quarter
 * of a second). 0, SRV_ENOTFOUND or the store's last error. */
static int srv__write_row(srv_jobs_t *jobs, const char *id, const char *status, double started_ms,
                          double finished_ms, const char *error_json, int tries) {
  long pause_ns = 50L * 1000000L;
  int rc, attempt;
  for (attempt = 1;; attempt++) {
    rc = srv_store_update_job(jobs->cfg.store, id, status, started_ms, finished_ms, error_json);
    if (rc == 0 || rc == SRV_ENOTFOUND || attempt >= tries) return rc;
    {
      struct timespec ts = {0, pause_ns};
      nanosleep(&ts, NULL);
    }
    pause_ns *= 4;
  }
}

/* Write the final state of plan `job` (ended here, still listed and
 * unrecorded) with its error JSON `ej`, tried `tries` times. When the
 * store takes it the plan leaves the active list (and the unrecorded
 * count). 0 or the store's error. */
static int srv__write_final(srv_jobs_t *jobs, srv_job_t *job, const char *ej, int tries) {
  srv_job_status_t st;
  double fin;
  int rc;
  pthread_mutex_lock(&jobs->mu);
  st = job->status;
  fin = job->finished_ms;
  pthread_mutex_unlock(&jobs->mu);
  pthread_mutex_lock(&jobs->rows_mu);
  rc = srv__write_row(jobs, job->id, srv_job_status_name(st), 0, fin, ej, tries);
  if (rc != 0 && rc != SRV_ENOTFOUND) {
    pthread_mutex_unlock(&jobs->rows_mu);
    return rc;
  }
  pthread_mutex_lock(&jobs->mu);
  if (job->unrecorded == 2) jobs->unrecorded--;
  job->unrecorded = 0;
  job->stored_status = st;
  if (job->listed) srv__active_remove(jobs, job);
  pthread_mutex_unlock(&jobs->mu);
  pthread_mutex_unlock(&jobs->rows_mu);
  return 0;
}

/* Plan `job` ended here: its final status, finish time and error are set
 * and it is still on the active list, marked unrecorded (1). Write its
 * row; when the store refuses, it stays unrecorded (2) with its error JSON
 * (`ej`, taken over) for srv_jobs_flush. */
static void srv__settle(srv_jobs_t *jobs, srv_job_t *job, char *ej) {
  if (srv__write_final(jobs, job, ej, 3) == 0) {
    free(ej);
    return;
  }
  pthread_mutex_lock(&jobs->mu);
  free(job->pending_error);
  job->pending_error = ej;
  job->unrecorded = 2;
  jobs->unrecorded++;
  pthread_mutex_unlock(&jobs->mu);
  srv_log(SRV_LOG_WARN, "the store did not take a plan's outcome; kept in memory until it does",
          json_pack("{s:s}", "job_id", job->id));
}

size_t srv_jobs_flush(srv_jobs_t *jobs) {
  srv_job_t *job, **todo = NULL;
  size_t n = 0, i, left;
  pthread_mutex_lock(&jobs->mu);
  if (jobs->unrecorded && (todo = malloc(jobs->unrecorded * sizeof(*todo))) != NULL)
    for (job = jobs->active; job && n < jobs->unrecorded; job = job->anext)
      if (job->unrecorded == 2) {
        job->refs++;
        todo[n++] = job;
      }
  pthread_mutex_unlock(&jobs->mu);
  for (i = 0; i < n; i++) {
    char *ej;
    /* pending_error changes only in srv__settle, before the plan is here */
    pthread_mutex_lock(&jobs->mu);
    ej = todo[i]->pending_error ? strdup(todo[i]->pending_error) : NULL;
    pthread_mutex_unlock(&jobs->mu);
    if (srv__write_final(jobs, todo[i], ej, 1) == 0)
      srv_log(SRV_LOG_INFO, "plan outcome recorded late", json_pack("{s:s}", "job_id", todo[i]->id));
    free(ej);
    srv_job_unref(todo[i]);
  }
  free(todo);
  pthread_mutex_lock(&jobs->mu);
  left = jobs->unrecorded;
  pthread_mutex_unlock(&jobs->mu);
  return left;
}

int srv_job_unrecorded(srv_job_t *job) {
  int u;
  pthread_mutex_lock(&job->owner->mu);
  u = job->unrecorded;
  pthread_mutex_unlock(&job->owner->mu);
  return u;
}

int srv_jobs_count_status(srv_jobs_t *jobs, uint64_t counts[SRV_JOB_NSTATUS]) {
  srv_job_t *job;
  int rc;
  pthread_mutex_lock(&jobs->rows_mu);
  if ((rc = srv_store_count_status(jobs->cfg.store, counts)) == 0) {
    pthread_mutex_lock(&jobs->mu);
    for (job = jobs->active; job; job = job->anext)
      if (job->kind == SRV_JOB_PLAN && job->in_store && !job->remote && job->stored_status != job->status) {
        if (counts[job->stored_status] > 0) counts[job->stored_status]--;
        counts[job->status]++;
      }
    pthread_mutex_unlock(&jobs->mu);
  }
  pthread_mutex_unlock(&jobs->rows_mu);
  return rc;
}

/* ---- cancellation ---- */

/* A shared store's plan: stopped here when it runs here; otherwise the
 * store cancels it when queued, or asks the replica running it to stop. */
static int srv__cancel_shared(srv_jobs_t *jobs, const char *id) {
  srv_job_t *job;
  int rc;
  pthread_mutex_lock(&jobs->mu);
  job = srv__active_by_id(jobs, id);
  if (job && !job->remote && job->status == SRV_JOB_RUNNING) {
    atomic_store(&job->stop, SRV__STOP_CANCEL);
    pthread_mutex_unlock(&jobs->mu);
    return 0;
  }
  if (job) job->refs++;
  pthread_mutex_unlock(&jobs->mu);
  rc = srv_store_cancel_job(jobs->cfg.store, id, srv_now_ms());
  if (rc == 0) {
    if (job) srv__remote_end(jobs, job, SRV_JOB_CANCELLED);
    srv_metrics_plan_done(jobs->cfg.metrics, job ? (int)job->p.solver : 0, "cancelled", 0);
  }
  srv_job_unref(job);
  return rc == 1 ? 0 : rc;
}

int srv_jobs_cancel(srv_jobs_t *jobs, const char *id) {
  srv_job_t *job;
  int in_store;
  if (jobs->shared) return srv__cancel_shared(jobs, id);
  pthread_mutex_lock(&jobs->mu);
  for (job = jobs->active; job; job = job->anext)
    if (job->kind == SRV_JOB_PLAN && strcmp(job->id, id) == 0) break;
  if (job == NULL || job->status > SRV_JOB_RUNNING) {
    pthread_mutex_unlock(&jobs->mu);
    if (job == NULL) {
      srv_job_row_t row;
      int rc = srv_store_get_job(jobs->cfg.store, id, &row);
      if (rc != 0) return rc;
      rc = (strcmp(row.status, "queued") == 0 || strcmp(row.status, "running") == 0) ? SRV_ENOTFOUND
                                                                                         : SRV_ECONFLICT;
      srv_job_row_clear(&row);
      return rc;
    }
    return SRV_ECONFLICT;
  }
  if (job->status == SRV_JOB_RUNNING) {
    atomic_store(&job->stop, SRV__STOP_CANCEL);
    pthread_mutex_unlock(&jobs->mu);
    return 0;
  }
  srv__unqueue(jobs, job); /* not there when its row is still being written */
  job->status = SRV_JOB_CANCELLED;
  job->finished_ms = srv_now_ms();
  in_store = job->in_store;
  job->refs++;
  if (in_store)
    job->unrecorded = 1; /* listed until srv__settle writes it */
  else
    srv__active_remove(jobs, job);
  pthread_mutex_unlock(&jobs->mu);
  if (in_store) srv__settle(jobs, job, NULL);
  srv_metrics_plan_done(jobs->cfg.metrics, (int)job->p.solver, "cancelled", 0);
  srv__finish_notify(jobs, job);
  srv_job_unref(job);
  return 0;
}

/* ---- the workers ---- */

static int srv__should_stop(void *arg) {
  srv_job_t *job = arg;
  int expected = SRV__RUN;
  if (atomic_load(&job->stop) != SRV__RUN) return 1;
  if (srv_mono_ms() > job->deadline_mono) {
    atomic_compare_exchange_strong(&job->stop, &expected, SRV__STOP_DEADLINE);
    return 1;
  }
  return 0;
}

/* The planner's progress callback: the job's phase and fraction for its views. */
static void srv__progress(void *arg, const char *phase, double fraction) {
  srv_job_t *job = arg;
  atomic_store(&job->phase, phase);
  atomic_store(&job->fraction_ppm, fraction < 0 ? -1 : (int)(fraction * 1e6));
}

static char *srv__error_json(const char *code, const char *msg) {
  json_t *o = json_pack("{s:s,s:s}", "code", code, "message", msg);
  char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return t;
}

/* The code and message of a job that failed because the store refused a
 * write (rc): store_full with the store's reason, or store_failed. */
static void srv__store_failure(srv_jobs_t *jobs, int rc, const char *what, char *code, size_t code_len, char *msg,
                               size_t msg_len) {
  char why[256] = "";
  srv_store_health(jobs->cfg.store, why, sizeof(why));
  snprintf(code, code_len, "%s", rc == SRV_ENOSPACE ? "store_full" : "store_failed");
  snprintf(msg, msg_len, "%s: %s", what,
           rc == SRV_ENOSPACE ? (why[0] ? why : "the store is full") : "the durable store failed");
}

/* Run one job; fills the result text or the error. Returns the final
 * status (QUEUED when interrupted by shutdown). */
static srv_job_status_t srv__run(srv_jobs_t *jobs, srv_job_t *job, char **text, size_t *len,
                                 char *code, size_t code_len, char *msg, size_t msg_len) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_graph_t *g = job->graph;
  json_t *out = NULL;
  int rc, stop;

  *text = NULL;
  mp_error_clear(&err);
  if (g == NULL) {
    char *gj = NULL;
    size_t gl = 0;
    rc = srv_store_get_graph(jobs->cfg.store, job->p.graph_hash, &gj, &gl);
    if (rc != 0) {
      snprintf(code, code_len, "graph_missing");
      snprintf(msg, msg_len, "the graph %s is not in the store", job->p.graph_hash);
      return SRV_JOB_FAILED;
    }
    rc = mp_graph_load_buffer(gj, gl, MP_FORMAT_NATIVE, NULL, &jobs->cfg.limits, &g, NULL, &err);
    free(gj);
    if (rc != 0) {
      snprintf(code, code_len, "graph_invalid");
      snprintf(msg, msg_len, "the stored graph does not load: %.400s", err.message);
      return SRV_JOB_FAILED;
    }
    pthread_mutex_lock(&jobs->mu);
    job->graph = g;
    pthread_mutex_unlock(&jobs->mu);
  }

  mp_plan_options_init(&o);
  o.solver = job->p.solver;
  o.objective = job->p.objective;
  o.accounting = job->p.accounting;
  o.budget = job->p.budget;
  o.swap = job->p.swap;
  o.device = job->p.device;
  o.threads = jobs->cfg.planner_threads;
  /* The per-plan deadline is enforced through should_stop, not through
   * o.deadline_ms: the planner's own deadline makes the exact DP fall back
   * to approx, which is a different, softer contract. --plan-timeout is a
   * hard limit: past it the plan fails and the worker is free again. */
  o.should_stop = srv__should_stop;
  o.stop_arg = job;
  o.progress = srv__progress;
  o.progress_arg = job;
  srv__progress(job, "start", -1);
  if (jobs->test_delay_ms > 0) {
    double until = srv_mono_ms() + jobs->test_delay_ms;
    struct timespec ts = {0, 10 * 1000000L};
    while (srv_mono_ms() < until && !srv__should_stop(job)) nanosleep(&ts, NULL);
  }
  if (jobs->test_hold_file) {
    struct timespec ts = {0, 10 * 1000000L};
    while (access(jobs->test_hold_file, F_OK) == 0 && !srv__should_stop(job)) nanosleep(&ts, NULL);
  }

  if (job->kind == SRV_JOB_PLAN) {
    mp_plan_result_t r;
    memset(&r, 0, sizeof(r));
    rc = mp_plan(g, &o, &r, &err);
    if (rc == 0) out = mp_plan_result_to_json_ex(g, &r, job->p.graph_hash, &job->p.device, 1, 1);
    mp_plan_result_free(&r);
  } else if (job->budgets && job->p.maximize[0] && (job->fit_flags & SRV_FIT_EACH)) {
    /* a maximize at each budget (the devices' usable bytes): a fit's
     * entries, rendered per device by mp_fit_answer */
    json_t *arr = json_array();
    size_t k;
    mp_binding_t none;
    mp_binding_init(&none, "$.dims");
    out = json_pack("{s:s,s:s,s:s}", "graph_hash", job->p.graph_hash, "solver", mp_solver_name(o.solver),
                    "maximize", job->p.maximize);
    rc = out == NULL || arr == NULL || json_object_set(out, "budgets", arr) != 0 ? MP_ENOMEM : 0;
    for (k = 0; rc == 0 && k < job->n_budgets; k++) {
      mp_maximize_t m;
      memset(&m, 0, sizeof(m));
      o.budget = job->budgets[k];
      rc = mp_maximize(g, &none, job->p.maximize, job->p.max_value, &o, &jobs->cfg.limits, &m, &err);
      if (rc == 0 && json_array_append_new(arr, mp_maximize_entry_to_json(&m, o.budget)) != 0) rc = MP_ENOMEM;
      mp_maximize_free(&m);
    }
    json_decref(arr);
    if (rc != 0) {
      json_decref(out);
      out = NULL;
    }
  } else if (job->budgets && job->p.maximize[0]) {
    /* the graph is bound at the request's other dimensions already */
    mp_maximize_t m;
    mp_binding_t none;
    mp_binding_init(&none, "$.dims");
    o.budget = job->budgets[0];
    rc = mp_maximize(g, &none, job->p.maximize, job->p.max_value, &o, &jobs->cfg.limits, &m, &err);
    if (rc == 0) out = mp_maximize_to_json(&m, o.budget, &job->p.device, 1, 0);
    mp_maximize_free(&m);
  } else if (job->budgets) {
    mp_fit_t f;
    memset(&f, 0, sizeof(f));
    rc = mp_fit(g, &o, job->budgets, job->n_budgets, &f, &err);
    if (rc == 0 && (out = mp_fit_result_to_json(&f, job->p.graph_hash)) && mp_forecast_json_add(out, g) != 0) {
      json_decref(out);
      out = NULL;
    }
    mp_fit_free(&f);
    if (rc == 0 && out && (job->fit_flags & SRV_FIT_LEAST)) {
      /* "least": the plan at the least budget that fits, and that budget */
      rc = mp_fit_least(g, &o, &f, &err);
      if (rc == 0) rc = mp_fit_least_to_json(out, &f);
      mp_fit_free(&f);
    }
  } else {
    mp_frontier_t f;
    memset(&f, 0, sizeof(f));
    o.frontier_solves = MP_FRONTIER_SOLVES; /* every breakpoint, in time (frontier.h) */
    o.frontier_ms = MP_FRONTIER_MS;
    rc = mp_frontier(g, &o, &f, &err);
    if (rc == 0 && (out = mp_frontier_to_json(&f, job->p.graph_hash)) && mp_forecast_json_add(out, g) != 0) {
      json_decref(out);
      out = NULL;
    }
    mp_frontier_free(&f);
  }
  stop = atomic_load(&job->stop);
  if (rc == 0 && out == NULL) {
    snprintf(code, code_len, "out_of_memory");
    snprintf(msg, msg_len, "out of memory while writing the result");
    return SRV_JOB_FAILED;
  }
  if (rc == 0) {
    *text = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    if (*text == NULL) {
      snprintf(code, code_len, "out_of_memory");
      snprintf(msg, msg_len, "out of memory while writing the result");
      return SRV_JOB_FAILED;
    }
    *len = strlen(*text);
    return SRV_JOB_DONE;
  }
  if (rc == MP_ECANCELED || rc == MP_ETIMEDOUT) {
    if (stop == SRV__STOP_SHUTDOWN || stop == SRV__STOP_LOST) return SRV_JOB_QUEUED;
    if (stop == SRV__STOP_CANCEL) {
      snprintf(code, code_len, "cancelled");
      snprintf(msg, msg_len, "cancelled by a client");
      return SRV_JOB_CANCELLED;
    }
    snprintf(code, code_len, "deadline_exceeded");
    snprintf(msg, msg_len, "the %s passed the deadline of %g s (--plan-timeout) and was stopped",
             job->kind == SRV_JOB_PLAN ? "plan" : job->budgets ? "fit" : "frontier", jobs->cfg.plan_timeout_s);
    return SRV_JOB_FAILED;
  }
  snprintf(code, code_len, "planner_%s", mp_err_name(rc));
  {
    size_t i;
    for (i = 0; code[i]; i++)
      if (code[i] >= 'A' && code[i] <= 'Z') code[i] = (char)(code[i] - 'A' + 'a');
  }
  snprintf(msg, msg_len, "%s", err.message[0] ? err.message : mp_err_name(rc));
  return SRV_JOB_FAILED;
}

/* A shared store's plan: claim the oldest claimable one (a new reference,
 * running here), or NULL when there is none or the store failed. */
static srv_job_t *srv__claim(srv_jobs_t *jobs) {
  srv_job_row_t row;
  srv_job_t *job, *fresh = NULL;
  if (srv_store_claim_job(jobs->cfg.store, jobs->owner, jobs->cfg.lease_s, srv_now_ms(), &row) != 0) return NULL;
  pthread_mutex_lock(&jobs->mu);
  job = srv__active_by_id(jobs, row.id);
  pthread_mutex_unlock(&jobs->mu);
  if (job == NULL) {
    if ((fresh = srv__job_new(jobs, SRV_JOB_PLAN)) == NULL) {
      srv_store_finish_job(jobs->cfg.store, row.id, jobs->owner, "queued", 0, NULL); /* hand it back */
      srv_job_row_clear(&row);
      return NULL;
    }
    if (srv__from_row(fresh, &row) != 0) {
      srv_store_finish_job(jobs->cfg.store, row.id, jobs->owner, "failed", srv_now_ms(), SRV__BAD_ROW);
      srv__job_free(fresh);
      srv_job_row_clear(&row);
      return NULL;
    }
  }
  pthread_mutex_lock(&jobs->mu);
  /* Looked up again: a lookup may have listed it meanwhile. */
  job = srv__active_by_id(jobs, row.id);
  if (job != NULL && !job->remote && job->status == SRV_JOB_RUNNING) {
    /* A worker here runs it already (running and not remote, as the
     * cancellations test it): its lease ran out while the store was out of
     * reach (the renewals failed), and this replica claimed it back.
     * That worker goes on and records it under the new lease; a second one
     * on the same job would free the graph the first one plans on. */
    pthread_mutex_unlock(&jobs->mu);
    srv_log(SRV_LOG_INFO, "plan claimed back while running here", json_pack("{s:s}", "job_id", row.id));
    if (fresh) srv__job_free(fresh);
    srv_job_row_clear(&row);
    return NULL;
  }
  if (job == NULL) {
    job = fresh;
    fresh = NULL;
    srv__active_add(jobs, job); /* the list's reference; the creation one is the worker's */
  } else {
    job->refs++; /* the worker's */
  }
  job->remote = 0;
  job->status = SRV_JOB_RUNNING;
  job->started_ms = row.started_ms;
  job->attempts = row.attempts;
  job->deadline_mono = srv_mono_ms() + jobs->cfg.plan_timeout_s * 1000.0;
  atomic_store(&job->stop, row.cancel_requested ? SRV__STOP_CANCEL : SRV__RUN);
  jobs->running++;
  pthread_mutex_unlock(&jobs->mu);
  if (fresh) srv__job_free(fresh);
  srv_job_row_clear(&row);
  return job;
}

static int srv__stopping(srv_jobs_t *jobs) {
  int s;
  pthread_mutex_lock(&jobs->mu);
  s = jobs->stopping;
  pthread_mutex_unlock(&jobs->mu);
  return s;
}

/* Record a shared store's plan as *st (a final status, or queued to hand
 * it back; code and msg the error of a failed or cancelled one), its
 * result first when done. A result the store has no room for fails the
 * plan (*st, code and msg then say so). While the store cannot be reached
 * or has no room for the row's new version this retries (the lease is
 * renewed meanwhile) for up to twice the lease plus half a minute. 0, or
 * SRV_ECONFLICT when the plan is no longer this replica's (another one
 * runs it, or ran it). */
static int srv__finish_shared(srv_jobs_t *jobs, srv_job_t *job, srv_job_status_t *st, const char *text,
                              size_t len, char *code, size_t code_len, char *msg, size_t msg_len) {
  double give_up = srv_mono_ms() + 2000.0 * jobs->cfg.lease_s + 30000.0, pause_ms = 100;
  int stored = *st != SRV_JOB_DONE, rc = SRV_ESTORE;
  char *ej = NULL;
  for (;;) {
    if (!stored) {
      rc = srv_results_put(jobs->cfg.cache, jobs->cfg.store, job->key, job->id, text, len);
      if (rc == SRV_ENOSPACE) {
        *st = SRV_JOB_FAILED;
        srv__store_failure(jobs, rc, "the result could not be stored", code, code_len, msg, msg_len);
      }
      stored = rc == 0 || rc == SRV_ENOSPACE;
    }
    if (stored) {
      if (ej == NULL && (*st == SRV_JOB_FAILED || *st == SRV_JOB_CANCELLED)) ej = srv__error_json(code, msg);
      rc = srv_store_finish_job(jobs->cfg.store, job->id, jobs->owner, srv_job_status_name(*st),
                                *st == SRV_JOB_QUEUED ? 0 : srv_now_ms(), ej);
      if (rc != SRV_ESTORE && rc != SRV_ENOSPACE) {
        free(ej);
        return rc;
      }
    }
    /* Shutting down (or stopped past --grace): the lease brings it back. */
    if (srv__stopping(jobs) || atomic_load(&job->stop) == SRV__STOP_SHUTDOWN || srv_mono_ms() + pause_ms > give_up) {
      free(ej);
      return SRV_ECONFLICT;
    }
    {
      struct timespec ts = {(time_t)(pause_ms / 1000), (long)((long)pause_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    pause_ms = pause_ms * 2 > 2000 ? 2000 : pause_ms * 2;
  }
}

/* The plan ran here but another replica has it now: it becomes remote,
 * to end when the store says so (or now, when it already has). */
static void srv__lost(srv_jobs_t *jobs, srv_job_t *job) {
  srv_job_row_t row;
  pthread_mutex_lock(&jobs->mu);
  jobs->running--;
  job->remote = 1;
  pthread_mutex_unlock(&jobs->mu);
  if (srv_store_get_job(jobs->cfg.store, job->id, &row) == 0) {
    srv__remote_update(jobs, job, &row);
    srv_job_row_clear(&row);
  }
  srv_log(SRV_LOG_INFO, "plan handed over to another replica", json_pack("{s:s}", "job_id", job->id));
}

/* Run one job taken by a worker (its reference is the worker's) to its
 * end: compute, record, wake the waiters. */
static void srv__execute(srv_jobs_t *jobs, srv_job_t *job) {
  srv_job_status_t st;
  char *text = NULL, code[32] = "", msg[512] = "";
  size_t len = 0;
  double t0;
  int shared = jobs->shared && job->kind == SRV_JOB_PLAN, local_plan = job->kind == SRV_JOB_PLAN && !shared;
  int rc = 0;

  if (local_plan) {
    pthread_mutex_lock(&jobs->rows_mu);
    if ((rc = srv__write_row(jobs, job->id, "running", job->started_ms, 0, NULL, 3)) == 0) {
      pthread_mutex_lock(&jobs->mu);
      job->stored_status = SRV_JOB_RUNNING;
      pthread_mutex_unlock(&jobs->mu);
    }
    pthread_mutex_unlock(&jobs->rows_mu);
  }
  t0 = srv_mono_ms();
  if (rc != 0 && rc != SRV_ENOTFOUND) {
    /* Its result could not be kept either: fail it now, with the reason. */
    st = SRV_JOB_FAILED;
    srv__store_failure(jobs, rc, "the store could not record the plan as running, so it was not run", code,
                       sizeof(code), msg, sizeof(msg));
  } else if (shared && job->attempts > SRV__MAX_ATTEMPTS) {
    st = SRV_JOB_FAILED;
    snprintf(code, sizeof(code), "abandoned");
    snprintf(msg, sizeof(msg), "the plan was claimed %d times and never finished: its replicas stopped on it",
             job->attempts - 1);
  } else if (shared &&
             srv_results_get(jobs->cfg.cache, jobs->cfg.store, job->key, &text, &len, NULL) == 0) {
    st = SRV_JOB_DONE; /* a replica that died had stored it: nothing to compute */
  } else {
    srv_metrics_computation(jobs->cfg.metrics, job->kind == SRV_JOB_FRONTIER);
    st = srv__run(jobs, job, &text, &len, code, sizeof(code), msg, sizeof(msg));
  }

  if (shared) {
    rc = srv__finish_shared(jobs, job, &st, text, len, code, sizeof(code), msg, sizeof(msg));
    free(text);
    if (rc != 0) {
      srv__lost(jobs, job);
      srv_job_unref(job);
      return;
    }
    if (st != SRV_JOB_QUEUED)
      srv_metrics_plan_done(jobs->cfg.metrics, (int)job->p.solver, srv_job_status_name(st),
                            (srv_mono_ms() - t0) / 1000.0);
  } else {
    if (st == SRV_JOB_DONE &&
        (rc = srv_results_put(jobs->cfg.cache, jobs->cfg.store, job->key, job->id, text, len)) != 0) {
      st = SRV_JOB_FAILED;
      srv__store_failure(jobs, rc, "the result could not be stored", code, sizeof(code), msg, sizeof(msg));
    }
    free(text);
    if (local_plan && st != SRV_JOB_QUEUED)
      srv_metrics_plan_done(jobs->cfg.metrics, (int)job->p.solver, srv_job_status_name(st),
                            (srv_mono_ms() - t0) / 1000.0);
  }
  srv_log(st == SRV_JOB_FAILED ? SRV_LOG_WARN : SRV_LOG_INFO, "job finished",
          json_pack("{s:s,s:s,s:s,s:s,s:s,s:f}", "job_id", job->id, "kind",
                    job->kind == SRV_JOB_PLAN ? "plan" : job->budgets ? "fit" : "frontier", "graph_hash",
                    job->p.graph_hash, "status",
                    srv_job_status_name(st), "reason", msg, "dur_ms", srv_mono_ms() - t0));

  pthread_mutex_lock(&jobs->mu);
  job->status = st;
  job->finished_ms = st == SRV_JOB_QUEUED ? 0 : srv_now_ms();
  snprintf(job->err_code, sizeof(job->err_code), "%s", code);
  snprintf(job->err_msg, sizeof(job->err_msg), "%s", msg);
  jobs->running--;
  mp_graph_free(job->graph);
  job->graph = NULL;
  if (local_plan && st != SRV_JOB_QUEUED)
    job->unrecorded = 1; /* listed until srv__settle writes it */
  else
    srv__active_remove(jobs, job);
  pthread_mutex_unlock(&jobs->mu);
  if (local_plan && st == SRV_JOB_QUEUED)
    srv_store_update_job(jobs->cfg.store, job->id, "queued", 0, 0, NULL); /* else recovery finds it running */
  else if (local_plan)
    srv__settle(jobs, job, st == SRV_JOB_FAILED || st == SRV_JOB_CANCELLED ? srv__error_json(code, msg) : NULL);
  srv__finish_notify(jobs, job);
  srv_job_unref(job);
}

/* A worker: the next local job (frontiers; every job with an embedded
 * store), else with a shared store a plan claimed from it whenever it may
 * hold one (after a claim, a notification or a tick). */
static void *srv__worker(void *arg) {
  srv_jobs_t *jobs = arg;
  unsigned long seen = 0;
  int again = 0;
  for (;;) {
    srv_job_t *job = NULL;

    pthread_mutex_lock(&jobs->mu);
    for (;;) {
      if (jobs->stopping) {
        pthread_mutex_unlock(&jobs->mu);
        return NULL;
      }
      if (!jobs->paused && jobs->ring) break;
      if (!jobs->paused && jobs->shared && (again || jobs->claim_gen != seen)) break;
      pthread_cond_wait(&jobs->cv, &jobs->mu);
    }
    if ((job = srv__pop(jobs)) != NULL) {
      /* the queue's reference becomes the worker's */
      job->status = SRV_JOB_RUNNING;
      job->started_ms = srv_now_ms();
      job->deadline_mono = srv_mono_ms() + jobs->cfg.plan_timeout_s * 1000.0;
      jobs->running++;
      pthread_mutex_unlock(&jobs->mu);
    } else {
      seen = jobs->claim_gen;
      pthread_mutex_unlock(&jobs->mu);
      job = srv__claim(jobs);
      again = job != NULL; /* there may be more */
      if (job == NULL) continue;
    }
    srv__execute(jobs, job);
  }
}

/* ---- life cycle ---- */

int srv_jobs_new(const srv_jobs_config_t *cfg, srv_jobs_t **out) {
  srv_jobs_t *j = calloc(1, sizeof(*j));
  if (j == NULL) return SRV_ENOMEM;
  j->cfg = *cfg;
  {
    const char *d = getenv("MEMPLAN_TEST_PLAN_DELAY_MS");
    j->test_delay_ms = d ? atof(d) : 0;
    d = getenv("MEMPLAN_TEST_PLAN_HOLD_FILE");
    if (d && d[0] && (j->test_hold_file = strdup(d)) == NULL) {
      free(j);
      return SRV_ENOMEM;
    }
  }
  j->shared = srv_store_shared(cfg->store);
  if (j->shared) {
    char host[64] = "", rnd[9];
    gethostname(host, sizeof(host) - 1);
    srv_random_hex(rnd, 4);
    snprintf(j->owner, sizeof(j->owner), "%.60s/%ld/%s", host[0] ? host : "replica", (long)getpid(), rnd);
  }
  pthread_mutex_init(&j->mu, NULL);
  pthread_mutex_init(&j->rows_mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  *out = j;
  return 0;
}

int srv_jobs_recover(srv_jobs_t *jobs, size_t *n) {
  srv_job_row_t *rows;
  size_t cnt, i;
  int rc;
  *n = 0;
  if (jobs->shared) return 0; /* the store's leases bring unfinished plans back */
  rc = srv_store_pending_jobs(jobs->cfg.store, &rows, &cnt);
  if (rc != 0) return rc;
  for (i = 0; i < cnt; i++) {
    srv_job_t *job = srv__job_new(jobs, SRV_JOB_PLAN);
    if (job == NULL) {
      rc = SRV_ENOMEM;
      break;
    }
    if (srv__from_row(job, &rows[i]) != 0) {
      srv_store_update_job(jobs->cfg.store, job->id, "failed", 0, srv_now_ms(), SRV__BAD_ROW);
      srv__job_free(job);
      continue;
    }
    /* A plan that was running when the daemon stopped waits for a worker
     * again: its row says so, so that listings (read from the store) and
     * the plan's own view (read here) agree. When the store refuses the
     * write, stored_status keeps the row's word for the status counts. */
    if (job->stored_status == SRV_JOB_RUNNING &&
        srv_store_update_job(jobs->cfg.store, job->id, "queued", 0, 0, NULL) == 0)
      job->stored_status = SRV_JOB_QUEUED;
    pthread_mutex_lock(&jobs->mu);
    srv__active_add(jobs, job);
    if (srv__push(jobs, job) != 0) { /* recovery ignores the bound: these were accepted */
      srv__active_remove(jobs, job);
      pthread_mutex_unlock(&jobs->mu);
      srv__job_free(job);
      rc = SRV_ENOMEM;
      break;
    }
    job->refs--;          /* the creation reference: active + queue hold it now */
    pthread_mutex_unlock(&jobs->mu);
    (*n)++;
  }
  for (i = 0; i < cnt; i++) srv_job_row_clear(&rows[i]);
  free(rows);
  return rc;
}

int srv_jobs_start(srv_jobs_t *jobs) {
  unsigned i;
  jobs->threads = calloc(jobs->cfg.workers, sizeof(*jobs->threads));
  if (jobs->threads == NULL) return SRV_ENOMEM;
  for (i = 0; i < jobs->cfg.workers; i++) {
    if (pthread_create(&jobs->threads[i], NULL, srv__worker, jobs) != 0) break;
    jobs->n_threads++;
  }
  return jobs->n_threads == jobs->cfg.workers ? 0 : SRV_ENOMEM;
}

void srv_jobs_pause(srv_jobs_t *jobs) {
  pthread_mutex_lock(&jobs->mu);
  jobs->paused = 1;
  pthread_mutex_unlock(&jobs->mu);
}

uint64_t srv_jobs_running(srv_jobs_t *jobs) {
  uint64_t r;
  pthread_mutex_lock(&jobs->mu);
  r = jobs->running;
  pthread_mutex_unlock(&jobs->mu);
  return r;
}

void srv_jobs_interrupt(srv_jobs_t *jobs) {
  srv_job_t *job;
  pthread_mutex_lock(&jobs->mu);
  for (job = jobs->active; job; job = job->anext)
    if (job->status == SRV_JOB_RUNNING) atomic_store(&job->stop, SRV__STOP_SHUTDOWN);
  pthread_mutex_unlock(&jobs->mu);
}

void srv_jobs_free(srv_jobs_t *jobs) {
  unsigned i;
  if (jobs == NULL) return;
  pthread_mutex_lock(&jobs->mu);
  jobs->stopping = 1;
  pthread_cond_broadcast(&jobs->cv);
  pthread_mutex_unlock(&jobs->mu);
  srv_jobs_interrupt(jobs);
  for (i = 0; i < jobs->n_threads; i++) pthread_join(jobs->threads[i], NULL);
  free(jobs->threads);
  /* What is still queued stays queued in the store for the next start. */
  {
    srv_job_t *job;
    while ((job = srv__pop(jobs)) != NULL)
      if (--job->refs == 0) srv__job_free(job);
  }
  if (jobs->unrecorded)
    srv_log(SRV_LOG_WARN, "stopping with plan outcomes the store did not take: they run again at the next start",
            json_pack("{s:I}", "count", (json_int_t)jobs->unrecorded));
  while (jobs->active) {
    srv_job_t *job = jobs->active;
    srv__active_remove(jobs, job); /* drops the list's reference */
    if (job->refs == 0) srv__job_free(job);
  }
  pthread_cond_destroy(&jobs->cv);
  pthread_mutex_destroy(&jobs->mu);
  pthread_mutex_destroy(&jobs->rows_mu);
  free(jobs->test_hold_file);
  free(jobs);
}
