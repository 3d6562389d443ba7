/* waits.h - connections parked until a job finishes (long polls).
 *
 * An HTTP thread suspends the connection (MHD_suspend_connection) and hands
 * it here with the job and a time limit. Everything after that happens on
 * the libuv loop thread, which owns the list of waiters and their timers:
 * a doorbell (uv_async_t, whose sends coalesce, hence the mailbox list)
 * brings both new waiters and "job finished" events over, and the loop
 * resumes each connection exactly once, when its job finishes or its timer
 * fires. Suspended connections never time out inside libmicrohttpd, so the
 * timer is what bounds a wait, and srv_waits_resume_all() must run before
 * MHD_stop_daemon. */
#ifndef SRV_WAITS_H
#define SRV_WAITS_H

#include <stddef.h>

#include "jobs.h"
#include "server.h"

struct MHD_Connection;

int srv_waits_new(uv_loop_t *loop, srv_waits_t **out);
/* Park `conn` (already suspended) until `job` finishes or timeout_s pass.
 * Takes a new reference on the job. Any thread. 0 or SRV_ENOMEM (the
 * caller must then resume the connection itself). */
int srv_waits_add(srv_waits_t *w, struct MHD_Connection *conn, srv_job_t *job, double timeout_s);
/* A job reached a final state: wake its waiters. Any thread. */
void srv_waits_job_finished(srv_waits_t *w, srv_job_t *job);
/* Loop thread: resume every parked connection now (shutdown). */
void srv_waits_resume_all(srv_waits_t *w);
/* Loop thread: parked connections. */
size_t srv_waits_count(srv_waits_t *w);
/* Loop thread: close the doorbell (the struct is freed by srv_waits_free
 * once the loop has run the close callbacks). */
void srv_waits_close(srv_waits_t *w);
void srv_waits_free(srv_waits_t *w);

#endif
