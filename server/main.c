/* main.c - memplan-server's entry point: configuration, start-up (store,
 * cache, workers, recovery of unfinished jobs, HTTP), the libuv loop with
 * its signals, and the orderly shutdown on SIGTERM.
 *
 * Shutdown, step by step (all on the loop thread):
 *   1. SIGTERM: /readyz answers 503 and new work 503; workers take no new
 *      job; plans already running continue.
 *   2. When they are done, or --grace has passed (then they are stopped and
 *      their rows go back to "queued" for the next start), every parked
 *      connection is resumed and answered.
 *   3. After the answers are out (or 2 s), the loop closes its handles and
 *      returns; libmicrohttpd is quiesced and stopped, the workers joined,
 *      and the store closed: the exit status is 0.
 * A second SIGTERM or SIGINT skips the grace period. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "auth.h"
#include "cache.h"
#include "config.h"
#include "frontiers.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "store.h"
#include "store_watch.h"
#include "upkeep.h"
#include "util.h"
#include "waits.h"

/* ---- start-up helpers ---- */

static int srv__read_small_file(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (f == NULL) return -errno;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (1 << 20) || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return -EINVAL;
  }
  buf = malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return -EIO;
  }
  fclose(f);
  buf[n] = '\0';
  *out = buf;
  *len = (size_t)n;
  return 0;
}

static void srv__fatal(const char *msg, const char *detail) {
  srv_log(SRV_LOG_ERROR, msg, json_pack("{s:s}", "error", detail ? detail : ""));
}

static int srv__write_port_file(const char *path, unsigned port) {
  char tmp[SRV_PATH_MAX + 8];
  FILE *f;
  snprintf(tmp, sizeof(tmp), "%.1000s.tmp", path);
  f = fopen(tmp, "w");
  if (f == NULL) return -errno;
  fprintf(f, "%u\n", port);
  if (fclose(f) != 0) return -EIO;
  return rename(tmp, path) == 0 ? 0 : -errno;
}

/* ---- signals and the drain ---- */

/* A shared store's listener and upkeep timer (NULL otherwise). */
static srv_store_watch_t *srv__watch;
/* Every store's upkeep: late writes, a full store's probe, retention. */
static srv_upkeep_t *srv__upkeep;

static void srv__close_handles(srv_server_t *s) {
  srv_store_watch_close(srv__watch);
  srv_upkeep_close(srv__upkeep);
  uv_close((uv_handle_t *)&s->sig_term, NULL);
  uv_close((uv_handle_t *)&s->sig_int, NULL);
  uv_close((uv_handle_t *)&s->sig_hup, NULL);
  uv_close((uv_handle_t *)&s->drain_timer, NULL);
}

static void srv__drain_tick(uv_timer_t *t) {
  srv_server_t *s = t->data;
  double elapsed = srv_mono_ms() - s->drain_started_ms;
  static int interrupted;
  static double flush_started;

  if (s->drain_phase == 1) {
    uint64_t running = srv_jobs_running(s->jobs);
    if (running > 0) {
      if (!interrupted && elapsed > s->cfg.grace_s * 1000.0) {
        interrupted = 1;
        srv_log(SRV_LOG_WARN, "grace period over: stopping running plans (they stay queued)",
                json_pack("{s:I}", "running", (json_int_t)running));
        srv_jobs_interrupt(s->jobs);
      }
      return;
    }
    /* No plan runs: answer every parked connection with what it has. */
    srv_waits_close(s->waits);
    s->drain_phase = 2;
    flush_started = srv_mono_ms();
    return;
  }
  if (s->drain_phase == 2) {
    if (atomic_load(&s->in_flight) > 0 && srv_mono_ms() - flush_started < 2000) return;
    s->drain_phase = 3;
    uv_timer_stop(t);
    srv__close_handles(s);
  }
}

static void srv__on_signal(uv_signal_t *h, int signum) {
  srv_server_t *s = h->data;
  if (signum == SIGHUP) {
    int rc = srv_log_reopen();
    srv_log(rc ? SRV_LOG_ERROR : SRV_LOG_INFO, "log reopened", json_pack("{s:i}", "rc", rc));
    return;
  }
  if (atomic_load(&s->draining)) {
    srv_log(SRV_LOG_WARN, "second signal: stopping running plans now", NULL);
    s->cfg.grace_s = 0;
    return;
  }
  atomic_store(&s->draining, 1);
  srv_jobs_pause(s->jobs);
  s->drain_started_ms = srv_mono_ms();
  s->drain_phase = 1;
  srv_log(SRV_LOG_INFO, "draining",
          json_pack("{s:s,s:I,s:f}", "signal", signum == SIGTERM ? "SIGTERM" : "SIGINT", "running",
                    (json_int_t)srv_jobs_running(s->jobs), "grace_s", s->cfg.grace_s));
  uv_timer_start(&s->drain_timer, srv__drain_tick, 0, 20);
}

static void srv__on_job_finished(srv_job_t *job, void *arg) {
  srv_server_t *s = arg;
  srv_frontiers_job_finished(s, job); /* before the waiters wake: they may poll again */
  srv_waits_job_finished(s->waits, job);
}

/* ---- main ---- */

int main(int argc, char **argv) {
  static srv_server_t srv;
  srv_server_t *s = &srv;
  srv_jobs_config_t jc;
  char errbuf[512];
  json_t *cfgj;
  size_t recovered = 0, len;
  int rc, status = 1;

  rc = srv_config_load(&s->cfg, argc, argv);
  if (rc == SRV_CONFIG_EXIT_OK) return 0;
  if (rc != SRV_CONFIG_RUN) return 2;

  /* Before any thread exists: jansson's hash seed, and no SIGPIPE when a
   * client goes away mid-answer. */
  json_object_seed(0);
  signal(SIGPIPE, SIG_IGN);
  s->start_ms = srv_now_ms();
  atomic_init(&s->draining, 0);
  atomic_init(&s->in_flight, 0);

  if ((rc = srv_log_open(s->cfg.log_file, s->cfg.log_level)) != 0) {
    fprintf(stderr, "memplan-server: cannot open log file %s: %s\n", s->cfg.log_file, strerror(-rc));
    return 1;
  }
  cfgj = srv_config_to_json(&s->cfg);
  if (cfgj) json_object_set_new(cfgj, "version", json_string(SRV_VERSION));
  srv_log(SRV_LOG_INFO, "config", cfgj ? json_pack("{s:o}", "config", cfgj) : NULL);

  if (srv_auth_new(s->cfg.token_file, s->cfg.trusted_proxies, s->cfg.auth_failures_per_minute, &s->auth, errbuf,
                   sizeof(errbuf)) != 0) {
    srv__fatal("cannot load the principals", errbuf);
    goto out_log;
  }
  {
    mp_error_t gerr;
    mp_error_clear(&gerr);
    rc = s->cfg.devices_file[0] ? mp_gpus_load_file(s->cfg.devices_file, &s->gpus, &gerr) : mp_gpus_default(&s->gpus);
    if (rc != 0) {
      snprintf(errbuf, sizeof(errbuf), "%.200s%s%.300s", gerr.path, gerr.path[0] ? ": " : "", gerr.message);
      srv__fatal("cannot read the device catalogue", errbuf);
      goto out_log;
    }
  }
  if (s->cfg.tls_cert[0]) {
    if (srv__read_small_file(s->cfg.tls_cert, &s->tls_cert_pem, &len) != 0 ||
        srv__read_small_file(s->cfg.tls_key, &s->tls_key_pem, &len) != 0) {
      srv__fatal("cannot read the TLS certificate or key", s->cfg.tls_cert);
      goto out_log;
    }
  }

  if (srv_store_open(s->cfg.store, s->cfg.data_dir, s->cfg.workers + s->cfg.http_threads + 2, &s->store, errbuf,
                     sizeof(errbuf)) != 0) {
    srv__fatal("cannot open the store", errbuf);
    goto out_log;
  }
  s->cache = srv_cache_new(s->cfg.cache_max_bytes);
  s->metrics = srv_metrics_new();
  if (s->cache == NULL || s->metrics == NULL) {
    srv__fatal("out of memory", NULL);
    goto out_store;
  }

  s->loop = uv_default_loop();
  if (srv_waits_new(s->loop, &s->waits) != 0) {
    srv__fatal("cannot create the wait doorbell", NULL);
    goto out_store;
  }
  memset(&jc, 0, sizeof(jc));
  jc.workers = s->cfg.workers;
  jc.planner_threads = s->cfg.planner_threads;
  jc.queue_size = s->cfg.queue_size;
  jc.max_queued_per_client = s->cfg.max_queued_per_client;
  jc.plan_timeout_s = s->cfg.plan_timeout_s;
  jc.lease_s = s->cfg.store_lease_s;
  mp_limits_default(&jc.limits);
  jc.limits.max_nodes = s->cfg.max_nodes;
  jc.store = s->store;
  jc.cache = s->cache;
  jc.metrics = s->metrics;
  jc.on_finished = srv__on_job_finished;
  jc.arg = s;
  if (srv_jobs_new(&jc, &s->jobs) != 0 || srv_jobs_recover(s->jobs, &recovered) != 0) {
    srv__fatal("cannot recover the jobs of the store", NULL);
    goto out_loop;
  }
  if (recovered)
    srv_log(SRV_LOG_INFO, "recovered unfinished plans", json_pack("{s:I}", "count", (json_int_t)recovered));
  if (srv_jobs_start(s->jobs) != 0) {
    srv__fatal("cannot start the workers", NULL);
    goto out_loop;
  }
  if (srv_upkeep_start(s->loop, s->store, s->jobs, &s->cfg, &srv__upkeep) != 0) {
    srv__fatal("out of memory", NULL);
    goto out_loop;
  }
  if (srv_store_shared(s->store)) {
    char why[256];
    if (srv_store_watch_start(s->loop, s->store, s->jobs, s->cfg.store_lease_s, &srv__watch) != 0) {
      srv__fatal("out of memory", NULL);
      goto out_loop;
    }
    srv_log(SRV_LOG_INFO, "shared store",
            json_pack("{s:s,s:s,s:s?}", "store", srv_store_kind(s->store), "replica", srv_jobs_owner(s->jobs),
                      "unavailable", srv_store_health(s->store, why, sizeof(why)) ? why : NULL));
  }

  uv_signal_init(s->loop, &s->sig_term);
  uv_signal_init(s->loop, &s->sig_int);
  uv_signal_init(s->loop, &s->sig_hup);
  uv_timer_init(s->loop, &s->drain_timer);
  s->sig_term.data = s->sig_int.data = s->sig_hup.data = s->drain_timer.data = s;
  uv_signal_start(&s->sig_term, srv__on_signal, SIGTERM);
  uv_signal_start(&s->sig_int, srv__on_signal, SIGINT);
  uv_signal_start(&s->sig_hup, srv__on_signal, SIGHUP);

  if (srv_http_start(s, errbuf, sizeof(errbuf)) != 0) {
    srv__fatal("cannot start HTTP", errbuf);
    srv_waits_close(s->waits);
    srv__close_handles(s);
    uv_run(s->loop, UV_RUN_DEFAULT);
    goto out_loop;
  }
  if (s->cfg.port_file[0] && srv__write_port_file(s->cfg.port_file, s->bound_port) != 0)
    srv__fatal("cannot write the port file", s->cfg.port_file);
  srv_log(SRV_LOG_INFO, "listening",
          json_pack("{s:s,s:i,s:b,s:b}", "host", s->cfg.host, "port", (int)s->bound_port, "tls",
                    s->tls_cert_pem != NULL, "auth", srv_auth_enabled(s->auth)));

  uv_run(s->loop, UV_RUN_DEFAULT);
  srv_http_stop(s);
  status = 0;

out_loop:
  if ((srv__watch || srv__upkeep) && status != 0) {
    /* Start-up failed after the timers began: let their handles close. */
    srv_store_watch_close(srv__watch);
    srv_upkeep_close(srv__upkeep);
    uv_run(s->loop, UV_RUN_DEFAULT);
  }
  srv_store_watch_free(srv__watch);
  srv__watch = NULL;
  srv_upkeep_free(srv__upkeep);
  srv__upkeep = NULL;
  srv_jobs_free(s->jobs); /* joins the workers: nothing calls back after this */
  s->jobs = NULL;
  srv_waits_free(s->waits);
  if (uv_loop_close(s->loop) != 0) srv_log(SRV_LOG_WARN, "the loop had open handles at exit", NULL);
out_store:
  srv_metrics_free(s->metrics);
  srv_cache_free(s->cache);
  srv_store_close(s->store);
out_log:
  srv_log(status == 0 ? SRV_LOG_INFO : SRV_LOG_ERROR, "stopped", json_pack("{s:i}", "exit", status));
  srv_log_close();
  srv_auth_free(s->auth);
  free(s->tls_cert_pem);
  free(s->tls_key_pem);
  mp_gpus_free(&s->gpus);
  return status;
}
