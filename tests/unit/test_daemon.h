/* test_daemon.h - the memplan-server harness shared by the end-to-end tests
 * (test_server.c, test_migrate_io.c): the real daemon on a free loopback
 * port in a temp dir of its own, HTTP through the curl command line.
 *
 * Ownership: an mp_test_daemon_t lives on the test's stack. It owns its temp
 * dir (made by mp_test_daemon_mkdir or mp_test_daemon_start, removed by
 * mp_test_daemon_cleanup) and the daemon process while pid > 0 (started by
 * mp_test_daemon_start_in, reaped by mp_test_daemon_wait_exit,
 * mp_test_daemon_stop or mp_test_daemon_cleanup). The daemon dies with the
 * test process (PR_SET_PDEATHSIG), even when an assertion ends it early.
 * Every function fails the running test (ck_assert) where it says so. */
#ifndef MP_TEST_DAEMON_H
#define MP_TEST_DAEMON_H

#include <jansson.h>
#include <sys/types.h>

typedef struct {
  char dir[128]; /* temp dir: data/, port, log, stderr, request and reply files */
  pid_t pid;     /* the running daemon, 0 when there is none */
  int port;      /* its port, read from dir/port at start-up */
  int tls;       /* started with --tls-cert: requests go over https */
  int nreq;      /* requests so far: names each exchange's files */
} mp_test_daemon_t;

/* Path of the daemon under test: $MEMPLAN_SERVER or build/memplan-server. */
const char *mp_test_daemon_bin(void);

/* Zero *d and make a fresh temp dir for it (/tmp/mp-srv-test-XXXXXX). */
void mp_test_daemon_mkdir(mp_test_daemon_t *d);

/* Start the daemon on d->dir (made by mp_test_daemon_mkdir, kept across
 * restarts: the store in d->dir/data, the log in d->dir/log, its stderr
 * appended to d->dir/stderr) on 127.0.0.1:0 with --workers 2 and then
 * `flags` (may be NULL; space-separated, no quoting; a later flag wins).
 * `delay_ms` > 0 sets MEMPLAN_TEST_PLAN_DELAY_MS (server/jobs.c: every job
 * is held that long) in the daemon's environment; otherwise the daemon runs
 * without it. MEMPLAN_TEST_PLAN_HOLD_FILE is always set, to d->dir/hold
 * (see mp_test_daemon_hold). Waits (up to 30 s) until GET /healthz answers 200; fails the
 * test if the daemon exits or never gets there. */
void mp_test_daemon_start_in(mp_test_daemon_t *d, const char *flags, int delay_ms);

/* mp_test_daemon_mkdir, then mp_test_daemon_start_in: a fresh data dir. */
void mp_test_daemon_start(mp_test_daemon_t *d, const char *flags, int delay_ms);

/* Hold every job the daemon picks from now on before it plans, until
 * mp_test_daemon_release (server/jobs.c: MEMPLAN_TEST_PLAN_HOLD_FILE; a
 * cancel, --plan-timeout or a shutdown's stop still ends a held job). A
 * test that needs a plan still running at some later moment holds it so,
 * rather than for a time the machine's load can outrun. */
void mp_test_daemon_hold(mp_test_daemon_t *d);

/* End the hold: held jobs go on planning. */
void mp_test_daemon_release(mp_test_daemon_t *d);

/* Send `sig` to the daemon, if it runs. */
void mp_test_daemon_kill(mp_test_daemon_t *d, int sig);

/* Wait for the daemon to exit and reap it; returns its exit status, or -1
 * on a signal or timeout (after which it is killed with SIGKILL). */
int mp_test_daemon_wait_exit(mp_test_daemon_t *d, double timeout_ms);

/* Stop the daemon (if it runs) with `sig` and reap it, waiting up to 60 s
 * (a hold is released first, so a drain does not wait on held jobs);
 * with SIGTERM it must exit cleanly (status 0, which under the sanitizers
 * also means no leak), else the test fails. The dir stays, for a restart. */
void mp_test_daemon_stop(mp_test_daemon_t *d, int sig);

/* End of a test: mp_test_daemon_stop(d, SIGTERM), no sanitizer report in
 * the daemon's stderr (mp_test_assert_no_sanitizer_report), then the temp
 * dir goes. */
void mp_test_daemon_cleanup(mp_test_daemon_t *d);

/* One HTTP exchange through curl (https when d->tls, certificate not
 * checked). `body` (may be NULL) is sent as is; `extra` (may be NULL) adds
 * curl arguments (headers). Returns the status code (0 when the connection
 * failed); *out (when out is not NULL) receives the body parsed as JSON, or
 * NULL when it is not JSON; *headers (when not NULL) the raw header block,
 * malloc'd. */
int mp_test_daemon_http(mp_test_daemon_t *d, const char *method, const char *path, const char *body,
                        const char *extra, json_t **out, char **headers);

/* A raw TCP connection to 127.0.0.1:port (blocking); -1 on failure. */
int mp_test_raw_connect(int port);

/* Whether the peer closed the connection within `ms` (EOF or reset); data
 * that arrives first counts as not closed. */
int mp_test_raw_closed(int fd, int ms);

#endif
