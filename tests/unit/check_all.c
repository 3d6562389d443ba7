/* check_all.c - the one test runner: every suite in suites.h, one summary.
 *
 * Check's per-test timeouts are there to catch a hang, never to judge
 * speed: a loaded machine (a shared CI runner, a laptop building something
 * else) runs a test several times slower than a quiet one. So every timeout
 * is scaled by CK_TIMEOUT_MULTIPLIER, which defaults here to
 * MP_TEST_TIMEOUT_MULTIPLIER when the environment does not set it (make asan
 * sets a larger one for the sanitizers' slowdown).
 *
 * The suites run on MP_TEST_JOBS processes at once (default: one per online
 * core, at most MP_TEST_MAX_JOBS), each taking the next suite from a shared
 * queue, heaviest first; every test already isolates itself (its own temp
 * directory, daemons on free ports, Check's fork per test). Each suite
 * prints its Check report whole as it ends, and the runner one summary
 * line.
 * CK_RUN_SUITE (one suite, Check's own filter) or MP_TEST_JOBS=1 runs them
 * in this process, one after the other; MP_TEST_SUITES="a b ..." runs only
 * those suites. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"

/* Tens of times the quiet machine's time: a test that hits it is hung. */
#define MP_TEST_TIMEOUT_MULTIPLIER "10"
#define MP_TEST_MAX_JOBS 4

typedef struct {
  const char *name;
  Suite *(*make)(void);
} mp__suite_t;

#define MP_SUITE_ENTRY(name) {#name, suite_##name},
static const mp__suite_t mp__suites[] = {MP_SUITES(MP_SUITE_ENTRY)};
#undef MP_SUITE_ENTRY
#define MP__N_SUITES (sizeof(mp__suites) / sizeof(mp__suites[0]))

/* Taken first, so that the longest suites do not start last: the planner's
 * heavy sweeps, then the daemon's. */
static const char *const mp__heavy[] = {"plan",   "consistency", "wide",       "solver_dp",
                                        "server", "solver_chain", "saved_bytes", "cli_server"};

/* One suite's outcome, as a worker reports it. */
typedef struct {
  int idx, run, failed;
} mp__outcome_t;

static int mp__wanted(const char *name) {
  const char *list = getenv("MP_TEST_SUITES"), *p;
  size_t n = strlen(name);
  if (list == NULL || *list == '\0') return 1;
  for (p = list; (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ' ' || p[-1] == ',') && (p[n] == '\0' || p[n] == ' ' || p[n] == ','))
      return 1;
  return 0;
}

/* The suites to run, in the order the queue hands them out. */
static size_t mp__order(int *order) {
  size_t n = 0, i, h;
  int taken[MP__N_SUITES] = {0};
  for (h = 0; h < sizeof(mp__heavy) / sizeof(mp__heavy[0]); h++)
    for (i = 0; i < MP__N_SUITES; i++)
      if (!taken[i] && strcmp(mp__suites[i].name, mp__heavy[h]) == 0) {
        taken[i] = 1;
        order[n++] = (int)i;
      }
  for (i = 0; i < MP__N_SUITES; i++)
    if (!taken[i]) order[n++] = (int)i;
  for (i = h = 0; i < n; i++)
    if (mp__suites[order[i]].make != NULL && mp__wanted(mp__suites[order[i]].name)) order[h++] = order[i];
  return h;
}

/* One suite, its report printed whole when it ends (CK_VERBOSITY as usual),
 * so that suites running at once do not interleave their lines. */
static void mp__run_suite(int idx, mp__outcome_t *out) {
  SRunner *sr = srunner_create(mp__suites[idx].make());
  srunner_run_all(sr, CK_SILENT);
  printf("Running suite(s): %s\n", mp__suites[idx].name);
  srunner_print(sr, CK_ENV);
  out->idx = idx;
  out->run = srunner_ntests_run(sr);
  out->failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  fflush(stdout);
  fflush(stderr);
}

/* A worker: suites from the queue until it is empty, each outcome written
 * back (one write of a few bytes: atomic on a pipe). */
static void mp__worker(int queue, int results) {
  int idx;
  mp__outcome_t o;
  while (read(queue, &idx, sizeof(idx)) == (ssize_t)sizeof(idx)) {
    mp__run_suite(idx, &o);
    if (write(results, &o, sizeof(o)) != (ssize_t)sizeof(o)) _exit(2);
  }
  _exit(0);
}

static int mp__jobs(size_t n_suites) {
  const char *e = getenv("MP_TEST_JOBS");
  long j = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (getenv("CK_RUN_SUITE") && *getenv("CK_RUN_SUITE")) return 1;
  if (j < 1) j = 1;
  if (!(e && *e) && j > MP_TEST_MAX_JOBS) j = MP_TEST_MAX_JOBS;
  if ((size_t)j > n_suites) j = (long)n_suites;
  return (int)j;
}

/* Every suite in this process (Check filters them by CK_RUN_SUITE). */
static int mp__run_here(const int *order, size_t n) {
  SRunner *sr = NULL;
  size_t i;
  int failed;
  for (i = 0; i < n; i++) {
    if (sr == NULL) sr = srunner_create(mp__suites[order[i]].make());
    else srunner_add_suite(sr, mp__suites[order[i]].make());
  }
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(void) {
  int order[MP__N_SUITES], queue[2], results[2], jobs, k, bad_exit = 0;
  int done[MP__N_SUITES] = {0};
  size_t n, i, n_done = 0;
  long run = 0, failed = 0;
  mp__outcome_t o;
  /* before any suite exists: Check reads it when each test case is made */
  setenv("CK_TIMEOUT_MULTIPLIER", MP_TEST_TIMEOUT_MULTIPLIER, 0);
  n = mp__order(order);
  if (n == 0) {
    fprintf(stderr, "check_all: no suites linked (or none of MP_TEST_SUITES)\n");
    return 1;
  }
  jobs = mp__jobs(n);
  if (jobs <= 1) return mp__run_here(order, n);

  if (pipe(queue) != 0 || pipe(results) != 0) {
    perror("check_all: pipe");
    return 1;
  }
  for (i = 0; i < n; i++) /* a few bytes each, all within the pipe's buffer */
    if (write(queue[1], &order[i], sizeof(order[i])) != (ssize_t)sizeof(order[i])) {
      perror("check_all: queue");
      return 1;
    }
  close(queue[1]);
  fflush(stdout);
  fflush(stderr);
  for (k = 0; k < jobs; k++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("check_all: fork");
      return 1;
    }
    if (pid == 0) {
      close(results[0]);
      mp__worker(queue[0], results[1]);
    }
  }
  close(queue[0]);
  close(results[1]);
  for (;;) {
    ssize_t r = read(results[0], &o, sizeof(o));
    if (r < 0 && errno == EINTR) continue;
    if (r != (ssize_t)sizeof(o)) break;
    if (o.idx < 0 || (size_t)o.idx >= MP__N_SUITES) continue;
    done[o.idx] = 1;
    n_done++;
    run += o.run;
    failed += o.failed;
  }
  for (k = 0; k < jobs; k++) {
    int st;
    if (wait(&st) < 0) break;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad_exit = 1;
  }
  printf("check_all: %ld checks in %zu suites on %d processes: %ld failed or errored", run, n_done, jobs, failed);
  for (i = 0; i < n; i++)
    if (!done[order[i]]) printf("; suite %s did not report", mp__suites[order[i]].name);
  printf("\n");
  return failed == 0 && n_done == n && !bad_exit ? EXIT_SUCCESS : EXIT_FAILURE;
}
