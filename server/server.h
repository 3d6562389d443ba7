/* server.h - what every file of memplan-server shares: the version, the
 * error codes of the server modules, and srv_server_t, the one object that
 * ties the subsystems together (owned by main.c, borrowed by the others).
 *
 * Threads (the "Design A" of the project notes):
 *
 *   main thread      libuv loop: signals, the wait doorbell and timers
 *                    (long-poll deadlines, the drain clock)
 *   HTTP threads     libmicrohttpd's internal poll() pool: parse, route,
 *                    answer, or suspend a connection that waits for a job
 *   worker threads   jobs.c: plans and frontiers, one at a time each
 *
 * A connection that waits is suspended (it holds no thread); the worker
 * that finishes a job rings the doorbell and the loop thread resumes every
 * connection waiting for it.
 */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "config.h"
#include "gpus.h"

#define SRV_VERSION "0.1.0"
/* Part of every cache key: bump it whenever the planner's answers change,
 * so results computed by an older planner are not served again (a plan
 * cached by the older planner would disagree with a fit computed by the
 * newer). planner-2: the least plans' local search (planner/cand_refine.c)
 * and the slack walk before it changed answers. planner-3: the prefix DP's
 * beam skips sources (dp_chain.c); the same answers wherever measured, but
 * it may keep other pairs in a rare case, so a cached near-chain plan could
 * differ. */
#define SRV_PLANNER_VERSION "planner-3"

/* Error codes of the server modules: 0 or negative, like the planner's. */
enum {
  SRV_OK = 0,
  SRV_ENOMEM = -1,
  SRV_ENOTFOUND = -2,
  SRV_EFULL = -3,      /* the queue is at capacity */
  SRV_EDRAINING = -4,  /* shutting down: no new work */
  SRV_ESTORE = -5,     /* the durable store failed */
  SRV_ECONFLICT = -6,  /* the state does not allow it (cancel a finished job) */
  SRV_EINVAL = -7,
  SRV_EBADRESULT = -8, /* a result or frontier kept earlier does not read back */
  SRV_ENOSPACE = -9,   /* the store is full (disk or size cap): no new work */
  SRV_ECLIENTFULL = -10 /* this client has --max-queued-per-client jobs queued */
};

struct MHD_Daemon;
typedef struct srv_store_s srv_store_t;
typedef struct srv_cache_s srv_cache_t;
typedef struct srv_metrics_s srv_metrics_t;
typedef struct srv_jobs_s srv_jobs_t;
typedef struct srv_waits_s srv_waits_t;
typedef struct srv_http_s srv_http_t;

typedef struct srv_server_s {
  srv_config_t cfg;
  struct srv_auth_s *auth; /* principals, trusted proxies, the throttle (auth.h) */
  char *tls_cert_pem, *tls_key_pem;
  mp_gpus_t gpus;          /* the device catalogue (--devices, else the shipped one) */

  uv_loop_t *loop;
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t drain_timer;
  double drain_started_ms;
  int drain_phase;         /* 0 running, 1 finishing plans, 2 flushing replies */

  struct MHD_Daemon *mhd;
  srv_http_t *http;        /* http.c's state: the watchdog, bodies in flight */
  uint16_t bound_port;
  srv_store_t *store;
  srv_cache_t *cache;
  srv_metrics_t *metrics;
  srv_jobs_t *jobs;
  srv_waits_t *waits;

  atomic_int draining;     /* SIGTERM seen: not ready, no new work */
  atomic_long in_flight;   /* requests between first byte and completion */
  double start_ms;         /* wall clock at start, for uptime */
} srv_server_t;

/* Print the route table as JSON ([{"method","path"}]), for --routes. */
void srv_routes_print(FILE *f);

#endif
