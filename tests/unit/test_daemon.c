/* test_daemon.c - the memplan-server harness of the end-to-end tests:
 * start, restart, signal, stop and clean up the daemon, and HTTP to it
 * through curl (see test_daemon.h). */
#include "test_daemon.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

const char *mp_test_daemon_bin(void) {
  const char *p = getenv("MEMPLAN_SERVER");
  return p && p[0] ? p : "build/memplan-server";
}

void mp_test_daemon_mkdir(mp_test_daemon_t *d) {
  memset(d, 0, sizeof(*d));
  snprintf(d->dir, sizeof(d->dir), "/tmp/mp-srv-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d->dir));
}

void mp_test_daemon_start_in(mp_test_daemon_t *d, const char *flags, int delay_ms) {
  char portfile[256], hold[256], cmdline[2048], delay[32], *argv[64], *tok, *save = NULL;
  int argc = 0;
  double t0;
  pid_t pid;

  snprintf(portfile, sizeof(portfile), "%s/port", d->dir);
  unlink(portfile);
  snprintf(cmdline, sizeof(cmdline),
           "%s --listen 127.0.0.1:0 --port-file %s --data-dir %s/data --log-file %s/log --workers 2 %s",
           mp_test_daemon_bin(), portfile, d->dir, d->dir, flags ? flags : "");
  for (tok = strtok_r(cmdline, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save)) argv[argc++] = tok;
  argv[argc] = NULL;
  snprintf(delay, sizeof(delay), "%d", delay_ms);
  snprintf(hold, sizeof(hold), "%s/hold", d->dir);
  d->tls = strstr(flags ? flags : "", "--tls-cert") != NULL;
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char errpath[256];
    FILE *e;
    /* Die with the test process, even when an assertion ends it early. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    snprintf(errpath, sizeof(errpath), "%s/stderr", d->dir);
    e = freopen(errpath, "a", stderr);
    (void)e;
    if (delay_ms > 0)
      setenv("MEMPLAN_TEST_PLAN_DELAY_MS", delay, 1);
    else
      unsetenv("MEMPLAN_TEST_PLAN_DELAY_MS");
    setenv("MEMPLAN_TEST_PLAN_HOLD_FILE", hold, 1);
    execv(argv[0], argv);
    _exit(127);
  }
  d->pid = pid;
  t0 = mp_test_now_ms();
  for (;;) {
    char *p = mp_test_read_file(portfile, NULL);
    int st;
    if (p) {
      d->port = atoi(p);
      free(p);
      if (d->port > 0 && mp_test_daemon_http(d, "GET", "/healthz", NULL, NULL, NULL, NULL) == 200) return;
    }
    ck_assert_msg(waitpid(pid, &st, WNOHANG) == 0, "memplan-server exited during start-up (see %s)", d->dir);
    ck_assert_msg(mp_test_now_ms() - t0 < 30000, "memplan-server did not become healthy");
    mp_test_nap_ms(20);
  }
}

void mp_test_daemon_start(mp_test_daemon_t *d, const char *flags, int delay_ms) {
  mp_test_daemon_mkdir(d);
  mp_test_daemon_start_in(d, flags, delay_ms);
}

void mp_test_daemon_hold(mp_test_daemon_t *d) {
  char path[256];
  snprintf(path, sizeof(path), "%s/hold", d->dir);
  mp_test_write_file(path, "");
}

void mp_test_daemon_release(mp_test_daemon_t *d) {
  char path[256];
  snprintf(path, sizeof(path), "%s/hold", d->dir);
  ck_assert_msg(unlink(path) == 0 || errno == ENOENT, "cannot remove %s", path);
}

void mp_test_daemon_kill(mp_test_daemon_t *d, int sig) {
  if (d->pid > 0) kill(d->pid, sig);
}

int mp_test_daemon_wait_exit(mp_test_daemon_t *d, double timeout_ms) {
  double t0 = mp_test_now_ms();
  int st;
  for (;;) {
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) {
      d->pid = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    if (mp_test_now_ms() - t0 > timeout_ms) {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, &st, 0);
      d->pid = 0;
      return -1;
    }
    mp_test_nap_ms(20);
  }
}

void mp_test_daemon_stop(mp_test_daemon_t *d, int sig) {
  int rc;
  if (d->pid <= 0) return;
  mp_test_daemon_release(d);
  kill(d->pid, sig);
  rc = mp_test_daemon_wait_exit(d, 60000);
  if (sig == SIGTERM) ck_assert_msg(rc == 0, "memplan-server did not exit cleanly (see %s)", d->dir);
}

void mp_test_daemon_cleanup(mp_test_daemon_t *d) {
  char cmd[256], path[256];
  mp_test_daemon_stop(d, SIGTERM);
  snprintf(path, sizeof(path), "%s/stderr", d->dir);
  mp_test_assert_no_sanitizer_report(path);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", d->dir);
  ck_assert_int_eq(system(cmd), 0);
}

int mp_test_daemon_http(mp_test_daemon_t *d, const char *method, const char *path, const char *body,
                        const char *extra, json_t **out, char **headers) {
  char cmd[4096], reqf[256], bodyf[256], hdrf[256], *text = NULL;
  int n = ++d->nreq, status;
  snprintf(reqf, sizeof(reqf), "%s/req%d", d->dir, n);
  snprintf(bodyf, sizeof(bodyf), "%s/body%d", d->dir, n);
  snprintf(hdrf, sizeof(hdrf), "%s/hdr%d", d->dir, n);
  if (body) mp_test_write_file(reqf, body);
  snprintf(cmd, sizeof(cmd),
           "curl -s -k --max-time 120 -o %s -D %s -w '%%{http_code}' -X %s %s%s %s '%s://127.0.0.1:%d%s'", bodyf,
           hdrf, method, body ? "--data-binary @" : "", body ? reqf : "", extra ? extra : "",
           d->tls ? "https" : "http", d->port, path);
  mp_test_run(cmd, &text);
  status = text ? atoi(text) : 0;
  free(text);
  if (out) {
    char *b = mp_test_read_file(bodyf, NULL);
    *out = b ? json_loads(b, 0, NULL) : NULL;
    free(b);
  }
  if (headers) *headers = mp_test_read_file(hdrf, NULL);
  unlink(reqf);
  unlink(bodyf);
  unlink(hdrf);
  return status;
}

int mp_test_raw_connect(int port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int mp_test_raw_closed(int fd, int ms) {
  struct pollfd p = {fd, POLLIN, 0};
  char c;
  if (poll(&p, 1, ms) <= 0) return 0;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}
