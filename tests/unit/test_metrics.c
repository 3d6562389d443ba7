/* test_metrics.c - GET /metrics of the real daemon: the exposition passes
 * `promtool check metrics` (Debian's prometheus package, installed by
 * deploy/deps.sh; without it the test fails), and the build, request-count
 * (by method, route and status), request-duration, solve-time and
 * process series say what they should, checked line by line. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

/* The value of the series `name` (with its labels, as exposed), failing
 * the test when the scrape lacks it. */
static double series(const char *text, const char *name) {
  size_t n = strlen(name);
  const char *p = text;
  while ((p = strstr(p, name)) != NULL) {
    if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    p += n;
  }
  ck_abort_msg("no series %s in the scrape", name);
  return 0;
}

/* The daemon's soft limit on open files, from /proc/<pid>/limits. */
static double max_open_files(pid_t pid) {
  char path[64], *text, *p;
  double v;
  snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
  text = mp_test_read_file(path, NULL);
  ck_assert_ptr_nonnull(text);
  p = strstr(text, "Max open files");
  ck_assert_ptr_nonnull(p);
  v = strtod(p + strlen("Max open files"), NULL);
  free(text);
  return v;
}

START_TEST(test_metrics_scrape) {
  mp_test_daemon_t d;
  char path[256], cmd[512], *text, *hdr = NULL, *out = NULL;
  json_t *o = NULL;
  int i, rc;
  double now = (double)time(NULL);

  mp_test_daemon_start(&d, NULL, 0);
  for (i = 0; i < 3; i++) ck_assert_int_eq(mp_test_daemon_http(&d, "GET", "/v1/status", NULL, NULL, NULL, NULL), 200);
  {
    json_t *g = json_pack("{s:s,s:[{s:s,s:i,s:i},{s:s,s:[s],s:i,s:i}]}", "format", "memplan.graph/1", "nodes", "id",
                          "a", "bytes", 100, "time", 1, "id", "b", "inputs", "a", "bytes", 100, "time", 1);
    json_t *body = json_pack("{s:o,s:i,s:s,s:i}", "graph", g, "budget", 1 << 20, "solver", "approx", "wait", 30);
    char *b = json_dumps(body, JSON_COMPACT);
    ck_assert_int_eq(mp_test_daemon_http(&d, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
    ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "done");
    json_decref(o);
    json_decref(body);
    free(b);
  }
  /* a method no route has: counted under its own label, not as itself */
  ck_assert_int_eq(mp_test_daemon_http(&d, "FROB", "/v1/status", NULL, NULL, NULL, NULL), 405);
  snprintf(cmd, sizeof(cmd), "curl -s -D %s/metrics.hdr -o %s/metrics.txt http://127.0.0.1:%d/metrics", d.dir, d.dir,
           d.port);
  ck_assert_int_eq(mp_test_run(cmd, NULL), 0);
  snprintf(path, sizeof(path), "%s/metrics.hdr", d.dir);
  hdr = mp_test_read_file(path, NULL);
  ck_assert_ptr_nonnull(strstr(hdr, "Content-Type: text/plain; version=0.0.4"));
  free(hdr);
  snprintf(path, sizeof(path), "%s/metrics.txt", d.dir);
  text = mp_test_read_file(path, NULL);
  ck_assert_ptr_nonnull(text);

  /* the exposition as Prometheus's own linter reads it */
  ck_assert_msg(mp_test_run("command -v promtool >/dev/null 2>&1", NULL) == 0,
                "promtool is missing (Debian: apt-get install prometheus; deploy/deps.sh installs it)");
  snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
  rc = mp_test_run(cmd, &out);
  ck_assert_msg(rc == 0 && (out == NULL || out[0] == '\0'), "promtool check metrics: %s", out ? out : "");
  free(out);

  ck_assert_ptr_nonnull(strstr(text, "\nmemplan_build_info{version=\"0.1.0\",planner_version=\"planner-3\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(text, "\n# TYPE memplan_http_request_duration_seconds histogram\n"));
  ck_assert_double_eq(series(text, "memplan_http_requests_total{method=\"GET\",route=\"/v1/status\",status=\"200\"}"), 3);
  ck_assert_double_eq(series(text, "memplan_http_requests_total{method=\"POST\",route=\"/v1/plans\",status=\"200\"}"), 1);
  ck_assert_double_eq(series(text, "memplan_http_requests_total{method=\"other\",route=\"unmatched\",status=\"405\"}"), 1);
  ck_assert_ptr_null(strstr(text, "FROB"));
  ck_assert_double_eq(series(text, "memplan_http_request_duration_seconds_count{route=\"/v1/status\"}"), 3);
  ck_assert_double_eq(series(text, "memplan_http_request_duration_seconds_bucket{route=\"/v1/status\",le=\"+Inf\"}"),
                      3);
  /* a status answer is not held: all three well inside the 60 s bucket */
  ck_assert_double_eq(series(text, "memplan_http_request_duration_seconds_bucket{route=\"/v1/status\",le=\"60\"}"), 3);
  ck_assert_double_eq(series(text, "memplan_http_request_duration_seconds_count{route=\"/v1/plans\"}"), 1);
  ck_assert_double_eq(series(text, "memplan_plan_solve_seconds_count{solver=\"closures\"}"), 1);
  ck_assert_double_eq(series(text, "memplan_plan_solve_seconds_count{solver=\"exact\"}"), 0);
  ck_assert_double_eq(series(text, "memplan_plans_finished_total{solver=\"closures\",status=\"done\"}"), 1);

  /* the process, as /proc tells it */
  ck_assert_double_eq(series(text, "process_max_fds"), max_open_files(d.pid));
  ck_assert(series(text, "process_open_fds") >= 3);
  ck_assert(series(text, "process_resident_memory_bytes") > 1e6);
  ck_assert(series(text, "process_virtual_memory_bytes") >= series(text, "process_resident_memory_bytes"));
  ck_assert(series(text, "process_cpu_seconds_total") >= 0);
  /* started by this test: within a few minutes of its clock, on any load */
  ck_assert(series(text, "process_start_time_seconds") > now - 600);
  ck_assert(series(text, "process_start_time_seconds") < now + 600);
  free(text);
  mp_test_daemon_cleanup(&d);
}
END_TEST

Suite *suite_metrics(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("scrape");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_metrics_scrape);
  suite_add_tcase(s, tc);
  return s;
}
