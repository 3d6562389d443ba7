/* store_watch.h - a shared store on the libuv loop: the connection that
 * LISTENs to the store's notifications, polled by the loop (uv_poll on its
 * socket), and the timer of the replica's upkeep (srv_jobs_tick: lease
 * renewal, the queued count, claims of a dead replica's plans), which runs
 * on libuv's thread pool because it waits on the store.
 *
 * A notification goes to jobs.c (srv_jobs_store_event): a plan finished on
 * another replica ends here too, and its long polls (waits.c) are answered.
 * When the listening connection breaks it is opened again from a later
 * tick (with a backoff), and the tick after that asks the store about the
 * plans it may have missed.
 *
 * Everything here runs on the loop thread, except srv_jobs_tick and the
 * (blocking) opening of the connection, on a pool thread. */
#ifndef SRV_STORE_WATCH_H
#define SRV_STORE_WATCH_H

#include <uv.h>

#include "jobs.h"
#include "server.h"

typedef struct srv_store_watch_s srv_store_watch_t;

/* Start watching `store` (a shared one) for `jobs`; the upkeep runs every
 * lease_s / 3 seconds, at most every second. 0 or SRV_ENOMEM. */
int srv_store_watch_start(uv_loop_t *loop, srv_store_t *store, srv_jobs_t *jobs, double lease_s,
                          srv_store_watch_t **out);
/* Loop thread: stop and close the handles (NULL is a no-op). The struct is
 * freed by srv_store_watch_free once uv_run has returned. */
void srv_store_watch_close(srv_store_watch_t *w);
void srv_store_watch_free(srv_store_watch_t *w);

#endif
