/* fuzz_http.c - libFuzzer harness for the whole HTTP path: the daemon runs
 * in this process (server/main.c's main, renamed by the build to
 * srv_fuzz_daemon_main, on a thread of its own) on a free loopback port with
 * a bearer token, a CORS origin and small limits; each input is sent as raw
 * bytes on a fresh connection, the sending side is closed, and the answer
 * is read until the daemon closes. Our handler, the watchdog, the routes and
 * the services run instrumented in this process, so their coverage guides
 * the fuzzer; libmicrohttpd (the system's library, not instrumented) runs
 * here too, so a crash in it is a crash here as well.
 *
 * Each input is one connection, judged on its own; the daemon's store and
 * caches carry over from input to input (as they would in production), so
 * a replayed input meets a fresh daemon. The daemon must keep answering:
 * after every input a connection must still be accepted. Built by
 * `make fuzz`, replayed by `make test` (tests/fuzz/replay_main.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int srv_fuzz_daemon_main(int argc, char **argv);

static char dir[64];
static int port;

static void *daemon_thread(void *arg) {
  (void)arg;
  char portf[128], data[128], log[128], token[128];
  char *argv[] = {"memplan-server", "--listen", "127.0.0.1:0", "--port-file", portf, "--data-dir", data,
                  "--log-file", log, "--log-level", "error", "--token-file", token, "--workers", "1",
                  "--http-threads", "1", "--plan-timeout", "1", "--max-wait", "1", "--max-nodes", "64",
                  "--queue-size", "8", "--max-budgets", "16", "--max-body-bytes", "256KiB",
                  "--max-inflight-body-bytes", "1MiB", "--header-timeout", "2", "--request-timeout", "2",
                  "--cors-origin", "https://a.example", "--cache-max-bytes", "4MiB", NULL};
  snprintf(portf, sizeof(portf), "%s/port", dir);
  snprintf(data, sizeof(data), "%s/data", dir);
  snprintf(log, sizeof(log), "%s/log", dir);
  snprintf(token, sizeof(token), "%s/token", dir);
  srv_fuzz_daemon_main((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
  fprintf(stderr, "fuzz_http: the daemon stopped\n");
  abort();
  return NULL;
}

/* Start the daemon once and wait for its port. */
static void start_daemon(void) {
  char path[128];
  pthread_t t;
  FILE *f;
  int i;
  snprintf(dir, sizeof(dir), "/tmp/mp-fuzz-http-XXXXXX");
  if (mkdtemp(dir) == NULL) abort();
  snprintf(path, sizeof(path), "%s/token", dir);
  if ((f = fopen(path, "w")) == NULL) abort();
  fputs("tok\n", f);
  fclose(f);
  signal(SIGPIPE, SIG_IGN);
  if (pthread_create(&t, NULL, daemon_thread, NULL) != 0) abort();
  pthread_detach(t);
  snprintf(path, sizeof(path), "%s/port", dir);
  for (i = 0; i < 3000 && port <= 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    if ((f = fopen(path, "r")) != NULL) {
      if (fscanf(f, "%d", &port) != 1) port = 0;
      fclose(f);
    }
    if (port <= 0) nanosleep(&ts, NULL);
  }
  if (port <= 0) {
    fprintf(stderr, "fuzz_http: the daemon did not start (see %s)\n", dir);
    abort();
  }
}

static int connect_daemon(void) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), tries;
  if (fd < 0) abort();
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (tries = 0; connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0; tries++) {
    struct timespec ts = {0, 1000 * 1000};
    if (tries > 5000) {
      fprintf(stderr, "fuzz_http: the daemon no longer accepts connections\n");
      abort();
    }
    close(fd);
    nanosleep(&ts, NULL);
    if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) abort();
  }
  return fd;
}

/* Wait for fd to be ready for `events`, at most ms; 0 on a timeout. */
static int wait_fd(int fd, short events, int ms) {
  struct pollfd p = {fd, events, 0};
  int rc;
  do rc = poll(&p, 1, ms);
  while (rc < 0 && errno == EINTR);
  return rc > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t sent = 0;
  char buf[65536];
  int fd;
  /* FUZZ_HTTP_VERBOSE=1: print the first line of each read (the status
   * lines, mostly), to see what the seeds reach */
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
  if (port <= 0) start_daemon();
  fd = connect_daemon();
  /* everything, unless the daemon closes first (it may refuse early) */
  while (sent < size && wait_fd(fd, POLLOUT, 5000)) {
    ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    sent += (size_t)n;
  }
  shutdown(fd, SHUT_WR);
  /* until the daemon closes; a parked request lasts at most --max-wait or
   * --plan-timeout (1 s) plus 5 s */
  while (wait_fd(fd, POLLIN, 15000)) {
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) break;
    if (verbose) {
      buf[n] = '\0';
      fprintf(stderr, "fuzz_http: %.*s\n", (int)strcspn(buf, "\r\n"), buf);
    }
  }
  close(fd);
  return 0;
}
