/* upkeep.c - the store's upkeep timer and its work on the thread pool (see
 * upkeep.h). One piece of work at a time: a tick that finds the previous
 * one still running (a long sweep) is skipped. */
#include "upkeep.h"

#include <stdlib.h>

#include "log.h"
#include "store.h"
#include "util.h"

/* While the store is full, sweeping is how it may get room back; no more
 * often than this, though, when the retention finds nothing to delete. */
#define SRV__FULL_SWEEP_MS 5000.0

struct srv_upkeep_s {
  uv_loop_t *loop;
  srv_store_t *store;
  srv_jobs_t *jobs;
  const srv_config_t *cfg;
  uv_timer_t timer;
  uv_work_t work;
  int busy, closing;
  double next_sweep_ms;    /* monotonic */
  /* handed to the pool thread (uv_queue_work orders them) */
  int do_sweep;
};

/* The sweep deleted rows: memory forgets them. */
static void srv__forget(void *arg, const char *what, const char *const *keys, size_t n) {
  srv_upkeep_t *u = arg;
  (void)what;
  srv_jobs_forget(u->jobs, keys, n);
}

static void srv__upkeep_work(uv_work_t *req) {
  srv_upkeep_t *u = req->data;
  srv_sweep_stats_t o;
  int full = srv_store_health(u->store, NULL, 0) == SRV_ENOSPACE;
  if (u->do_sweep) {
    double before = u->cfg->retain_age_s > 0 ? srv_now_ms() - u->cfg->retain_age_s * 1000.0 : 0;
    double t0 = srv_mono_ms();
    /* A plan lives one sweep interval at least, whatever the bytes. */
    double keep_after = srv_now_ms() - u->cfg->sweep_interval_s * 1000.0;
    int rc = srv_store_sweep(u->store, before, keep_after, u->cfg->retain_bytes, srv__forget, u, &o);
    if (rc == 0 && o.jobs + o.results + o.graphs > 0)
      srv_log(SRV_LOG_INFO, "retention sweep",
              json_pack("{s:I,s:I,s:I,s:I,s:f}", "jobs", (json_int_t)o.jobs, "results", (json_int_t)o.results,
                        "graphs", (json_int_t)o.graphs, "bytes_used", (json_int_t)(o.bytes_used & INT64_MAX),
                        "dur_ms", srv_mono_ms() - t0));
    else if (rc == 0 && o.skipped)
      srv_log(SRV_LOG_DEBUG, "retention sweep skipped: another replica is sweeping", NULL);
    else if (rc != 0 && rc != SRV_EINVAL)
      srv_log(SRV_LOG_WARN, "retention sweep failed", NULL);
  }
  if (full) srv_store_probe(u->store);
  srv_jobs_flush(u->jobs);
}

static void srv__upkeep_done(uv_work_t *req, int status) {
  srv_upkeep_t *u = req->data;
  (void)status;
  u->busy = 0;
}

static void srv__upkeep_tick(uv_timer_t *t) {
  srv_upkeep_t *u = t->data;
  double now = srv_mono_ms();
  int full;
  if (u->busy || u->closing) return;
  full = srv_store_health(u->store, NULL, 0) == SRV_ENOSPACE;
  u->do_sweep = (u->cfg->retain_age_s > 0 || u->cfg->retain_bytes > 0) && now >= u->next_sweep_ms;
  if (u->do_sweep)
    u->next_sweep_ms = now + (full && u->cfg->sweep_interval_s * 1000.0 > SRV__FULL_SWEEP_MS
                                  ? SRV__FULL_SWEEP_MS
                                  : u->cfg->sweep_interval_s * 1000.0);
  if (uv_queue_work(u->loop, &u->work, srv__upkeep_work, srv__upkeep_done) == 0) u->busy = 1;
}

int srv_upkeep_start(uv_loop_t *loop, srv_store_t *store, srv_jobs_t *jobs, const srv_config_t *cfg,
                     srv_upkeep_t **out) {
  srv_upkeep_t *u = calloc(1, sizeof(*u));
  double every_ms = cfg->sweep_interval_s * 1000.0;
  if (u == NULL) return SRV_ENOMEM;
  u->loop = loop;
  u->store = store;
  u->jobs = jobs;
  u->cfg = cfg;
  u->work.data = u;
  u->next_sweep_ms = srv_mono_ms(); /* the first tick sweeps */
  uv_timer_init(loop, &u->timer);
  u->timer.data = u;
  if (every_ms > 1000) every_ms = 1000;
  uv_timer_start(&u->timer, srv__upkeep_tick, (uint64_t)every_ms, (uint64_t)every_ms);
  *out = u;
  return 0;
}

void srv_upkeep_close(srv_upkeep_t *u) {
  if (u == NULL || u->closing) return;
  u->closing = 1;
  uv_timer_stop(&u->timer);
  uv_close((uv_handle_t *)&u->timer, NULL);
}

void srv_upkeep_free(srv_upkeep_t *u) { free(u); }
