/* metrics.c - counters, the request-duration and solve-time histograms and
 * the Prometheus text exposition (see metrics.h).
 *
 * Requests are counted per (method, route, status) and timed per route. The
 * routes are a fixed table, the methods the standard ones (any other is
 * "other") and the statuses a handful, so small arrays searched linearly are
 * enough; a triple or a route past its capacity is counted under route
 * "other". */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define SRV__MAX_PAIRS 256
#define SRV__NSOLVERS (MP_SOLVER_WINDOW + 1) /* the solver ids are 0 .. window */
#define SRV__NSTATUS 3 /* done, failed, cancelled */

static const double srv__buckets[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define SRV__NBUCKETS (sizeof(srv__buckets) / sizeof(srv__buckets[0]))
static const char *const srv__status_names[SRV__NSTATUS] = {"done", "failed", "cancelled"};

/* Request durations: from a cached answer (well under a millisecond) to a
 * long poll held for --max-wait (300 s by default). */
static const double srv__http_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5,    1,     2.5,    5,     10,   30,    60,   300};
#define SRV__NHTTP_BUCKETS (sizeof(srv__http_buckets) / sizeof(srv__http_buckets[0]))
#define SRV__MAX_ROUTES 32

typedef struct {
  const char *route;
  uint64_t hist[SRV__NHTTP_BUCKETS]; /* cumulative, as exposed */
  uint64_t count;
  double sum;
} srv__route_time_t;

typedef struct {
  const char *method; /* one of srv__methods, or "other" */
  const char *route;
  unsigned status;
  uint64_t count;
} srv__pair_t;

/* The method label: a client may send any token as a method, and each
 * distinct label is a series, so unknown ones share one. */
static const char *const srv__methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};

static const char *srv__method_label(const char *method) {
  size_t i;
  for (i = 0; method && i < sizeof(srv__methods) / sizeof(srv__methods[0]); i++)
    if (strcmp(method, srv__methods[i]) == 0) return srv__methods[i];
  return "other";
}

struct srv_metrics_s {
  pthread_mutex_t mu;
  srv__pair_t pairs[SRV__MAX_PAIRS];
  size_t n_pairs;
  srv__route_time_t times[SRV__MAX_ROUTES];
  size_t n_times;
  uint64_t cache_hits, cache_misses, dedup, computations[2];
  uint64_t plans[SRV__NSOLVERS][SRV__NSTATUS];
  uint64_t hist[SRV__NSOLVERS][SRV__NBUCKETS];
  uint64_t hist_count[SRV__NSOLVERS];
  double hist_sum[SRV__NSOLVERS];
};

srv_metrics_t *srv_metrics_new(void) {
  srv_metrics_t *m = calloc(1, sizeof(*m));
  if (m) pthread_mutex_init(&m->mu, NULL);
  return m;
}

void srv_metrics_free(srv_metrics_t *m) {
  if (m == NULL) return;
  pthread_mutex_destroy(&m->mu);
  free(m);
}

static size_t srv__pair_find(const srv_metrics_t *m, const char *method, const char *route, unsigned status) {
  size_t i;
  for (i = 0; i < m->n_pairs; i++)
    if (m->pairs[i].status == status && m->pairs[i].method == method && strcmp(m->pairs[i].route, route) == 0)
      break;
  return i;
}

/* The count of (method, route, status); under m->mu. */
static void srv__count_request(srv_metrics_t *m, const char *method, const char *route, unsigned status) {
  size_t i;
  i = srv__pair_find(m, method, route, status);
  if (i == m->n_pairs) {
    if (m->n_pairs == SRV__MAX_PAIRS) {
      route = "other";
      i = srv__pair_find(m, method, route, status);
      if (i == m->n_pairs) i = m->n_pairs - 1; /* give up on precision, not on counting */
    } else {
      m->pairs[i].method = method;
      m->pairs[i].route = route;
      m->pairs[i].status = status;
      m->n_pairs++;
    }
  }
  m->pairs[i].count++;
}

/* The time of a request on `route`; under m->mu. */
static void srv__time_request(srv_metrics_t *m, const char *route, double seconds) {
  srv__route_time_t *t;
  size_t i, b;
  for (i = 0; i < m->n_times; i++)
    if (strcmp(m->times[i].route, route) == 0) break;
  if (i == m->n_times) {
    if (m->n_times == SRV__MAX_ROUTES) {
      /* the last slot becomes "other" and takes every route past the table */
      i = m->n_times - 1;
      m->times[i].route = "other";
    } else {
      m->times[i].route = route;
      m->n_times++;
    }
  }
  t = &m->times[i];
  for (b = 0; b < SRV__NHTTP_BUCKETS; b++)
    if (seconds <= srv__http_buckets[b]) t->hist[b]++;
  t->count++;
  t->sum += seconds;
}

void srv_metrics_request_done(srv_metrics_t *m, const char *method, const char *route, unsigned status,
                              double seconds) {
  method = srv__method_label(method);
  pthread_mutex_lock(&m->mu);
  srv__count_request(m, method, route, status);
  srv__time_request(m, route, seconds);
  pthread_mutex_unlock(&m->mu);
}

void srv_metrics_cache(srv_metrics_t *m, int hit) {
  pthread_mutex_lock(&m->mu);
  if (hit)
    m->cache_hits++;
  else
    m->cache_misses++;
  pthread_mutex_unlock(&m->mu);
}

void srv_metrics_dedup(srv_metrics_t *m) {
  pthread_mutex_lock(&m->mu);
  m->dedup++;
  pthread_mutex_unlock(&m->mu);
}

void srv_metrics_computation(srv_metrics_t *m, int frontier) {
  pthread_mutex_lock(&m->mu);
  m->computations[frontier ? 1 : 0]++;
  pthread_mutex_unlock(&m->mu);
}

void srv_metrics_plan_done(srv_metrics_t *m, int solver, const char *status, double seconds) {
  size_t b;
  int s;
  if (solver < 0 || solver >= SRV__NSOLVERS) return;
  for (s = 0; s < SRV__NSTATUS; s++)
    if (strcmp(srv__status_names[s], status) == 0) break;
  if (s == SRV__NSTATUS) return;
  pthread_mutex_lock(&m->mu);
  m->plans[solver][s]++;
  if (s == 0) {
    for (b = 0; b < SRV__NBUCKETS; b++)
      if (seconds <= srv__buckets[b]) m->hist[solver][b]++;
    m->hist_count[solver]++;
    m->hist_sum[solver] += seconds;
  }
  pthread_mutex_unlock(&m->mu);
}

void srv_metrics_cache_counts(srv_metrics_t *m, uint64_t *hits, uint64_t *misses) {
  pthread_mutex_lock(&m->mu);
  *hits = m->cache_hits;
  *misses = m->cache_misses;
  pthread_mutex_unlock(&m->mu);
}

/* ---- exposition ---- */

typedef struct {
  char *buf;
  size_t len, cap;
  int oom;
} srv__sb_t;

static void srv__add(srv__sb_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv__add(srv__sb_t *sb, const char *fmt, ...) {
  va_list ap;
  int n;
  if (sb->oom) return;
  for (;;) {
    size_t room = sb->cap - sb->len;
    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      sb->oom = 1;
      return;
    }
    if ((size_t)n < room) {
      sb->len += (size_t)n;
      return;
    }
    {
      size_t ncap = sb->cap * 2 + (size_t)n + 1;
      char *nb = realloc(sb->buf, ncap);
      if (nb == NULL) {
        sb->oom = 1;
        return;
      }
      sb->buf = nb;
      sb->cap = ncap;
    }
  }
}

static void srv__family(srv__sb_t *sb, const char *name, const char *type, const char *help) {
  srv__add(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *srv_metrics_render(srv_metrics_t *m, const srv_gauges_t *g, size_t *len) {
  srv__sb_t sb = {0};
  size_t i, b;
  int s, k;

  sb.cap = 8192;
  sb.buf = malloc(sb.cap);
  if (sb.buf == NULL) return NULL;
  sb.buf[0] = '\0';
  srv__family(&sb, "memplan_build_info", "gauge", "The daemon's version and its planner's (1).");
  srv__add(&sb, "memplan_build_info{version=\"%s\",planner_version=\"%s\"} 1\n", SRV_VERSION, SRV_PLANNER_VERSION);
  pthread_mutex_lock(&m->mu);
  srv__family(&sb, "memplan_http_requests_total", "counter", "HTTP requests answered, by method, route and status.");
  for (i = 0; i < m->n_pairs; i++)
    srv__add(&sb, "memplan_http_requests_total{method=\"%s\",route=\"%s\",status=\"%u\"} %llu\n",
             m->pairs[i].method, m->pairs[i].route, m->pairs[i].status, (unsigned long long)m->pairs[i].count);
  srv__family(&sb, "memplan_http_request_duration_seconds", "histogram",
              "Time from a request's first byte to its answer (long polls included), by route.");
  for (i = 0; i < m->n_times; i++) {
    const srv__route_time_t *t = &m->times[i];
    for (b = 0; b < SRV__NHTTP_BUCKETS; b++)
      srv__add(&sb, "memplan_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", t->route,
               srv__http_buckets[b], (unsigned long long)t->hist[b]);
    srv__add(&sb, "memplan_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", t->route,
             (unsigned long long)t->count);
    srv__add(&sb, "memplan_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", t->route, t->sum);
    srv__add(&sb, "memplan_http_request_duration_seconds_count{route=\"%s\"} %llu\n", t->route,
             (unsigned long long)t->count);
  }
  srv__family(&sb, "memplan_cache_hits_total", "counter", "Plan and frontier lookups answered from the cache.");
  srv__add(&sb, "memplan_cache_hits_total %llu\n", (unsigned long long)m->cache_hits);
  srv__family(&sb, "memplan_cache_misses_total", "counter", "Plan and frontier lookups that needed a computation.");
  srv__add(&sb, "memplan_cache_misses_total %llu\n", (unsigned long long)m->cache_misses);
  srv__family(&sb, "memplan_plans_deduplicated_total", "counter",
              "Submissions that joined an identical plan already queued or running.");
  srv__add(&sb, "memplan_plans_deduplicated_total %llu\n", (unsigned long long)m->dedup);
  srv__family(&sb, "memplan_computations_total", "counter", "Computations started by the workers, by kind.");
  srv__add(&sb, "memplan_computations_total{kind=\"plan\"} %llu\n", (unsigned long long)m->computations[0]);
  srv__add(&sb, "memplan_computations_total{kind=\"frontier\"} %llu\n", (unsigned long long)m->computations[1]);
  srv__family(&sb, "memplan_plans_finished_total", "counter", "Plans that finished, by solver and status.");
  for (k = 0; k < SRV__NSOLVERS; k++)
    for (s = 0; s < SRV__NSTATUS; s++)
      srv__add(&sb, "memplan_plans_finished_total{solver=\"%s\",status=\"%s\"} %llu\n",
               mp_solver_name((mp_solver_t)k), srv__status_names[s], (unsigned long long)m->plans[k][s]);
  srv__family(&sb, "memplan_plan_solve_seconds", "histogram",
              "Worker time of successful plans (loading the graph, planning, storing the result), by solver asked.");
  for (k = 0; k < SRV__NSOLVERS; k++) {
    const char *sn = mp_solver_name((mp_solver_t)k);
    for (b = 0; b < SRV__NBUCKETS; b++)
      srv__add(&sb, "memplan_plan_solve_seconds_bucket{solver=\"%s\",le=\"%g\"} %llu\n", sn, srv__buckets[b],
               (unsigned long long)m->hist[k][b]);
    srv__add(&sb, "memplan_plan_solve_seconds_bucket{solver=\"%s\",le=\"+Inf\"} %llu\n", sn,
             (unsigned long long)m->hist_count[k]);
    srv__add(&sb, "memplan_plan_solve_seconds_sum{solver=\"%s\"} %.6f\n", sn, m->hist_sum[k]);
    srv__add(&sb, "memplan_plan_solve_seconds_count{solver=\"%s\"} %llu\n", sn,
             (unsigned long long)m->hist_count[k]);
  }
  pthread_mutex_unlock(&m->mu);

  srv__family(&sb, "memplan_queue_depth", "gauge", "Plans waiting for a worker.");
  srv__add(&sb, "memplan_queue_depth %llu\n", (unsigned long long)g->queue_depth);
  srv__family(&sb, "memplan_queue_capacity", "gauge", "Most plans that may wait for a worker.");
  srv__add(&sb, "memplan_queue_capacity %llu\n", (unsigned long long)g->queue_capacity);
  srv__family(&sb, "memplan_running_jobs", "gauge", "Computations running on the workers.");
  srv__add(&sb, "memplan_running_jobs %llu\n", (unsigned long long)g->running);
  srv__family(&sb, "memplan_workers", "gauge", "Worker threads.");
  srv__add(&sb, "memplan_workers %llu\n", (unsigned long long)g->workers);
  srv__family(&sb, "memplan_cache_entries", "gauge", "Entries in the in-memory cache.");
  srv__add(&sb, "memplan_cache_entries %llu\n", (unsigned long long)g->cache_entries);
  srv__family(&sb, "memplan_cache_bytes", "gauge", "Bytes held by the in-memory cache.");
  srv__add(&sb, "memplan_cache_bytes %llu\n", (unsigned long long)g->cache_bytes);
  srv__family(&sb, "memplan_cache_max_bytes", "gauge", "Capacity of the in-memory cache.");
  srv__add(&sb, "memplan_cache_max_bytes %llu\n", (unsigned long long)g->cache_max_bytes);
  srv__family(&sb, "memplan_draining", "gauge", "1 after SIGTERM while the daemon drains.");
  srv__add(&sb, "memplan_draining %d\n", g->draining ? 1 : 0);
  srv__family(&sb, "memplan_uptime_seconds", "gauge", "Seconds since the daemon started.");
  srv__add(&sb, "memplan_uptime_seconds %.3f\n", g->uptime_s);
  if (g->proc.ok) {
    srv__family(&sb, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    srv__add(&sb, "process_cpu_seconds_total %.2f\n", g->proc.cpu_seconds);
    srv__family(&sb, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    srv__add(&sb, "process_resident_memory_bytes %llu\n", (unsigned long long)g->proc.resident_bytes);
    srv__family(&sb, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    srv__add(&sb, "process_virtual_memory_bytes %llu\n", (unsigned long long)g->proc.virtual_bytes);
    srv__family(&sb, "process_open_fds", "gauge", "Number of open file descriptors.");
    srv__add(&sb, "process_open_fds %llu\n", (unsigned long long)g->proc.open_fds);
    if (g->proc.max_fds > 0) {
      srv__family(&sb, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
      srv__add(&sb, "process_max_fds %llu\n", (unsigned long long)g->proc.max_fds);
    }
    srv__family(&sb, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
    srv__add(&sb, "process_start_time_seconds %.2f\n", g->proc.start_time_s);
  }
  if (sb.oom) {
    free(sb.buf);
    return NULL;
  }
  *len = sb.len;
  return sb.buf;
}
