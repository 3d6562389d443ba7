/* status.c - readiness, the metrics text and the status object (see
 * status.h). The gauges are read from the modules that own them at the
 * moment of the request; metrics.c only renders what it is given. */
#include "status.h"

#include <stdint.h>
#include <string.h>

#include "cache.h"
#include "jobs.h"
#include "metrics.h"
#include "store.h"
#include "util.h"

const char *srv_status_readiness(srv_server_t *s) {
  uint64_t q, cap, run, w;
  int health;
  srv_jobs_stats(s->jobs, &q, &cap, &run, &w);
  if (atomic_load(&s->draining)) return "draining";
  if ((health = srv_store_health(s->store, NULL, 0)) == SRV_ENOSPACE) return "store_full";
  if (health != 0) return "store_unavailable";
  if (q >= cap) return "queue_full";
  return "ready";
}

json_t *srv_status_readiness_json(srv_server_t *s, const char *readiness) {
  char why[256];
  if ((strcmp(readiness, "store_unavailable") == 0 || strcmp(readiness, "store_full") == 0) &&
      srv_store_health(s->store, why, sizeof(why)) != 0)
    return json_pack("{s:s,s:s,s:s}", "status", readiness, "store", srv_store_kind(s->store), "reason", why);
  return json_pack("{s:s}", "status", readiness);
}

static void srv__gauges(srv_server_t *s, srv_gauges_t *g) {
  memset(g, 0, sizeof(*g));
  srv_jobs_stats(s->jobs, &g->queue_depth, &g->queue_capacity, &g->running, &g->workers);
  srv_cache_stats(s->cache, &g->cache_entries, &g->cache_bytes, &g->cache_max_bytes);
  g->draining = atomic_load(&s->draining);
  g->uptime_s = (srv_now_ms() - s->start_ms) / 1000.0;
}

char *srv_status_metrics(srv_server_t *s, size_t *len) {
  srv_gauges_t g;
  srv__gauges(s, &g);
  srv_procstat_read(&g.proc);
  return srv_metrics_render(s->metrics, &g, len);
}

json_t *srv_status_json(srv_server_t *s) {
  srv_gauges_t g;
  uint64_t hits, misses, counts[5];
  srv__gauges(s, &g);
  srv_metrics_cache_counts(s->metrics, &hits, &misses);
  if (srv_jobs_count_status(s->jobs, counts) != 0) memset(counts, 0, sizeof(counts));
  return json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:b,s:{s:I,s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I}}", "version",
                   SRV_VERSION, "uptime_s", g.uptime_s, "workers", (json_int_t)g.workers, "running",
                   (json_int_t)g.running, "queue_depth", (json_int_t)g.queue_depth, "queue_capacity",
                   (json_int_t)g.queue_capacity, "draining", g.draining, "cache", "entries",
                   (json_int_t)g.cache_entries, "bytes", (json_int_t)g.cache_bytes, "max_bytes",
                   (json_int_t)(g.cache_max_bytes & INT64_MAX), "hits", (json_int_t)hits, "misses",
                   (json_int_t)misses, "plans", "queued", (json_int_t)counts[0], "running",
                   (json_int_t)counts[1], "done", (json_int_t)counts[2], "failed", (json_int_t)counts[3],
                   "cancelled", (json_int_t)counts[4]);
}
