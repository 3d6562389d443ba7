/* metrics.c - counters, the solve-time histogram and the Prometheus text
 * exposition (see metrics.h).
 *
 * Requests are counted per (route, status) pair. The routes are a fixed
 * table and the statuses a handful, so a small array searched linearly is
 * enough; a pair past its capacity is counted under route "other". */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define SRV__MAX_PAIRS 256
#define SRV__NSOLVERS (MP_SOLVER_CHAIN + 1)
#define SRV__NSTATUS 3 /* done, failed, cancelled */

static const double srv__buckets[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define SRV__NBUCKETS (sizeof(srv__buckets) / sizeof(srv__buckets[0]))
static const char *const srv__status_names[SRV__NSTATUS] = {"done", "failed", "cancelled"};

typedef struct {
  const char *route;
  unsigned status;
  uint64_t count;
} srv__pair_t;

struct srv_metrics_s {
  pthread_mutex_t mu;
  srv__pair_t pairs[SRV__MAX_PAIRS];
  size_t n_pairs;
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

void srv_metrics_request(srv_metrics_t *m, const char *route, unsigned status) {
  size_t i;
  pthread_mutex_lock(&m->mu);
  for (i = 0; i < m->n_pairs; i++)
    if (m->pairs[i].status == status && strcmp(m->pairs[i].route, route) == 0) break;
  if (i == m->n_pairs) {
    if (m->n_pairs == SRV__MAX_PAIRS) {
      route = "other";
      for (i = 0; i < m->n_pairs; i++)
        if (m->pairs[i].status == status && strcmp(m->pairs[i].route, route) == 0) break;
      if (i == m->n_pairs) i = m->n_pairs - 1; /* give up on precision, not on counting */
    } else {
      m->pairs[i].route = route;
      m->pairs[i].status = status;
      m->n_pairs++;
    }
  }
  m->pairs[i].count++;
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
  pthread_mutex_lock(&m->mu);
  srv__family(&sb, "memplan_http_requests_total", "counter", "HTTP requests answered, by route and status.");
  for (i = 0; i < m->n_pairs; i++)
    srv__add(&sb, "memplan_http_requests_total{route=\"%s\",status=\"%u\"} %llu\n", m->pairs[i].route,
             m->pairs[i].status, (unsigned long long)m->pairs[i].count);
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
  srv__family(&sb, "memplan_plan_solve_seconds", "histogram", "Wall time of successful plans, by solver asked.");
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
  if (sb.oom) {
    free(sb.buf);
    return NULL;
  }
  *len = sb.len;
  return sb.buf;
}
