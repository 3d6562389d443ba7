/* upkeep.h - the store's upkeep on the libuv loop: a timer, every second,
 * whose work runs on libuv's thread pool because it waits on the store:
 *
 *   - plan outcomes the store refused before are written again
 *     (srv_jobs_flush);
 *   - a full store is probed (srv_store_probe): once it has room again it
 *     takes new work, and /readyz says ready;
 *   - every --sweep-interval seconds (and every 5 s while the store is
 *     full) the retention sweep (srv_store_sweep) deletes finished plans
 *     older than --retain-age, then the oldest ones while the store's live
 *     data exceeds --retain-bytes, with the results and graphs only they
 *     referred to, and what memory kept of them (srv_jobs_forget).
 *
 * Every backend has all three. With PostgreSQL every replica runs the
 * timer, but one at a time sweeps (store_pg.c's advisory lock; the others
 * skip their turn), and the others forget what it deleted when its
 * notification comes. */
#ifndef SRV_UPKEEP_H
#define SRV_UPKEEP_H

#include <uv.h>

#include "jobs.h"
#include "server.h"

typedef struct srv_upkeep_s srv_upkeep_t;

/* Start the upkeep of `store` and `jobs` with the retention of `cfg`
 * (retain_age_s, retain_bytes, sweep_interval_s; all borrowed). 0 or
 * SRV_ENOMEM. */
int srv_upkeep_start(uv_loop_t *loop, srv_store_t *store, srv_jobs_t *jobs, const srv_config_t *cfg,
                     srv_upkeep_t **out);
/* Loop thread: stop the timer and close its handle (NULL is a no-op); the
 * work on the pool finishes before uv_run returns. srv_upkeep_free after
 * uv_run. */
void srv_upkeep_close(srv_upkeep_t *u);
void srv_upkeep_free(srv_upkeep_t *u);

#endif
