/* test_server_fit.c - POST /v1/fit against the real daemon, as a
 * scheduler calls it: fit across the GPUs of a device catalogue
 * (--devices), each GPU's largest batch of a symbolic graph ("maximize"),
 * the least budget that fits, the async form (202, then
 * GET /v1/fit/{id}), and the cache: the order and repeats of the budgets
 * never compute again, and the same request again is answered from the
 * bytes rendered the first time (the answer's "cache" and the cache-hit
 * counter say so, never a timing). Every figure is checked against the
 * planner run here (mp_plan at that budget). */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

static const char *jstr(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "";
}

static uint64_t ju(json_t *o, const char *key) { return (uint64_t)json_integer_value(json_object_get(o, key)); }

/* POST /v1/fit with `body`; the status, *out the answer. */
static int fit(mp_test_daemon_t *s, const char *body, json_t **out) {
  return mp_test_daemon_http(s, "POST", "/v1/fit", body, NULL, out, NULL);
}

/* The hash of ResNet-50 once the daemon holds it (a fit sends it inline). */
static void put_resnet(mp_test_daemon_t *s, char hash[80]) {
  char *text = mp_test_read_file("tests/graphs/cg_resnet50.txt", NULL), *body;
  json_t *req, *o = NULL;
  ck_assert_ptr_nonnull(text);
  req = json_pack("{s:s,s:[i],s:s}", "graph", text, "budgets", 1, "solver", "approx");
  free(text);
  body = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  ck_assert_int_eq(fit(s, body, &o), 200);
  free(body);
  snprintf(hash, 80, "%s", jstr(o, "graph_hash"));
  ck_assert_uint_eq(strlen(hash), 64);
  json_decref(o);
}

/* The cache-hit counter of /metrics. */
static double hits(mp_test_daemon_t *s) {
  json_t *o = NULL;
  double v;
  ck_assert_int_eq(mp_test_daemon_http(s, "GET", "/v1/status", NULL, NULL, &o, NULL), 200);
  v = json_number_value(json_object_get(json_object_get(o, "cache"), "hits"));
  json_decref(o);
  return v;
}

/* What the planner returns here at `budget` (approx, as the fits ask). */
static void plan_at(const mp_graph_t *g, uint64_t budget, mp_plan_result_t *r) {
  mp_plan_options_t po;
  mp_error_t err;
  mp_plan_options_init(&po);
  po.solver = MP_SOLVER_APPROX;
  po.budget = budget;
  ck_assert_int_eq(mp_plan(g, &po, r, &err), 0);
}

/* An entry (a budget's or a device's) is the plan at `budget`. */
static void check_entry(const mp_graph_t *g, json_t *e, uint64_t budget) {
  mp_plan_result_t r;
  plan_at(g, budget, &r);
  ck_assert_int_eq(json_is_true(json_object_get(e, "fits")), r.feasible);
  if (r.feasible) {
    ck_assert_uint_eq(ju(e, "peak_bytes"), r.sim.peak_bytes);
    ck_assert_uint_eq(ju(e, "peak"), r.sim.peak_bytes); /* the deprecated name, one version */
    ck_assert(json_number_value(json_object_get(e, "overhead_pct")) == r.sim.overhead_pct);
  } else {
    ck_assert_uint_eq(ju(e, "min_feasible_budget"), r.min_feasible_budget);
    ck_assert_uint_eq(ju(e, "min_budget"), r.min_feasible_budget);
  }
  mp_plan_result_free(&r);
}

/* The order of the budgets and their repeats never compute again; the
 * same body again is answered from its rendered bytes. */
START_TEST(test_fit_cache_order_free) {
  mp_test_daemon_t s;
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  json_t *a = NULL, *b = NULL, *c = NULL, *ea, *eb;
  char hash[80], body[400];
  double h0;
  mp_test_daemon_start(&s, "", 0);
  put_resnet(&s, hash);
  snprintf(body, sizeof(body), "{\"graph_hash\": \"%s\", \"budgets\": [\"2Gi\", \"40Gi\"], \"solver\": \"approx\"}",
           hash);
  ck_assert_int_eq(fit(&s, body, &a), 200);
  ck_assert_str_eq(jstr(a, "cache"), "miss");
  /* the other order, a repeat, another spelling of the same bytes */
  snprintf(body, sizeof(body),
           "{\"graph_hash\": \"%s\", \"budgets\": [\"40Gi\", 2147483648, \"2GiB\"], \"solver\": \"approx\"}", hash);
  h0 = hits(&s);
  ck_assert_int_eq(fit(&s, body, &b), 200);
  ck_assert_str_eq(jstr(b, "cache"), "hit");
  ck_assert(hits(&s) > h0);
  ck_assert_uint_eq(json_array_size(json_object_get(b, "budgets")), 3);
  ea = json_object_get(a, "budgets");
  eb = json_object_get(b, "budgets");
  /* in the asked order, each the same entry */
  ck_assert(json_equal(json_array_get(eb, 0), json_array_get(ea, 1)));
  ck_assert(json_equal(json_array_get(eb, 1), json_array_get(ea, 0)));
  ck_assert(json_equal(json_array_get(eb, 2), json_array_get(ea, 0)));
  check_entry(g, json_array_get(eb, 0), 40ULL << 30);
  check_entry(g, json_array_get(eb, 1), 2ULL << 30);
  /* the same bytes again: the rendered answer, equal but for "cache" */
  h0 = hits(&s);
  ck_assert_int_eq(fit(&s, body, &c), 200);
  ck_assert_str_eq(jstr(c, "cache"), "hit");
  ck_assert(hits(&s) > h0);
  json_object_del(b, "cache");
  json_object_del(c, "cache");
  ck_assert(json_equal(b, c));
  json_decref(a);
  json_decref(b);
  json_decref(c);
  mp_test_daemon_cleanup(&s);
  mp_graph_free(g);
}
END_TEST

/* --devices FILE: each device is answered at total - context - reserve,
 * with what the planner returns there; the catalogue is listed; an
 * unknown device and a bad catalogue are refused with the field named. */
START_TEST(test_fit_devices) {
  mp_test_daemon_t s;
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  json_t *o = NULL, *d, *e;
  char hash[80], body[600], path[300], flags[400], cmd[800];
  size_t i;
  mp_test_daemon_mkdir(&s);
  snprintf(path, sizeof(path), "%s/devices.json", s.dir);
  mp_test_write_file(path,
                     "{\"devices\": ["
                     "{\"name\": \"small-1g\", \"total_bytes\": 1000000000, \"context_bytes\": \"100MB\", "
                     "\"reserve_bytes\": 0},"
                     "{\"name\": \"mid-2g\", \"total_bytes\": \"2GiB\", \"context_bytes\": \"256MiB\", "
                     "\"reserve_bytes\": \"2%\", \"source\": \"a test\"},"
                     "{\"name\": \"big-80g\", \"total_bytes\": \"80GiB\"}]}");
  snprintf(flags, sizeof(flags), "--devices %s", path);
  mp_test_daemon_start_in(&s, flags, 0);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/v1/devices", NULL, NULL, &o, NULL), 200);
  d = json_object_get(o, "devices");
  ck_assert_uint_eq(json_array_size(d), 3);
  ck_assert_str_eq(jstr(json_array_get(d, 1), "source"), "a test");
  ck_assert_uint_eq(ju(json_array_get(d, 1), "reserve_bytes"), (2ULL << 30) / 50);
  json_decref(o);
  put_resnet(&s, hash);
  snprintf(body, sizeof(body),
           "{\"graph_hash\": \"%s\", \"devices\": [\"big-80g\", \"small-1g\", \"mid-2g\"], \"solver\": \"approx\"}",
           hash);
  ck_assert_int_eq(fit(&s, body, &o), 200);
  ck_assert_uint_eq(json_array_size(json_object_get(o, "budgets")), 0);
  d = json_object_get(o, "devices");
  ck_assert_uint_eq(json_array_size(d), 3);
  for (i = 0; i < 3; i++) {
    uint64_t usable;
    e = json_array_get(d, i);
    usable = ju(e, "total_bytes") - ju(e, "context_bytes") - ju(e, "reserve_bytes");
    ck_assert_uint_eq(ju(e, "usable_bytes"), usable);
    check_entry(g, e, usable);
  }
  ck_assert_str_eq(jstr(json_array_get(d, 0), "name"), "big-80g");
  ck_assert(json_is_true(json_object_get(json_array_get(d, 0), "fits")));
  ck_assert_int_eq(json_number_value(json_object_get(json_array_get(d, 0), "overhead_pct")), 0);
  /* 900 MB is below ResNet-50's least budget (969,269,792 B with approx) */
  ck_assert_str_eq(jstr(json_array_get(d, 1), "name"), "small-1g");
  ck_assert(json_is_false(json_object_get(json_array_get(d, 1), "fits")));
  ck_assert_uint_eq(ju(json_array_get(d, 1), "min_feasible_budget"), 969269792u);
  ck_assert(json_is_true(json_object_get(json_array_get(d, 2), "fits")));
  ck_assert_uint_le(ju(json_array_get(d, 2), "peak_bytes"), ju(json_array_get(d, 2), "usable_bytes"));
  json_decref(o);
  snprintf(body, sizeof(body), "{\"graph_hash\": \"%s\", \"devices\": [\"big-80g\", \"a100-40gb\"]}", hash);
  ck_assert_int_eq(fit(&s, body, &o), 400);
  ck_assert_str_eq(jstr(json_object_get(o, "error"), "path"), "$.devices[1]");
  ck_assert_str_eq(jstr(json_object_get(o, "error"), "code"), "unknown_device");
  json_decref(o);
  mp_test_daemon_stop(&s, SIGTERM);

  /* a catalogue with a fault: the daemon does not start, and says where */
  mp_test_write_file(path, "{\"devices\": [{\"name\": \"x\", \"total_bytes\": \"1GiB\", \"context_bytes\": \"2GiB\"}]}");
  snprintf(cmd, sizeof(cmd), "%s --listen 127.0.0.1:0 --data-dir %s/data2 --devices %s 2>&1", mp_test_daemon_bin(),
           s.dir, path);
  {
    char *out = NULL;
    ck_assert_int_ne(mp_test_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "$.devices[0].total_bytes"));
    free(out);
  }
  mp_test_daemon_cleanup(&s);
  mp_graph_free(g);
}
END_TEST

/* "least": the plan at the least budget that fits, which is the budget
 * every infeasible entry names; the planner here agrees. */
START_TEST(test_fit_least) {
  mp_test_daemon_t s;
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  json_t *o = NULL, *l;
  char hash[80], body[400];
  mp_plan_result_t r;
  uint64_t least;
  mp_test_daemon_start(&s, "", 0);
  put_resnet(&s, hash);
  snprintf(body, sizeof(body), "{\"graph_hash\": \"%s\", \"least\": true, \"budgets\": [1000], \"solver\": \"approx\"}",
           hash);
  ck_assert_int_eq(fit(&s, body, &o), 200);
  l = json_object_get(o, "least");
  least = ju(o, "min_feasible_budget");
  ck_assert_uint_eq(ju(l, "budget"), least);
  ck_assert(json_is_true(json_object_get(l, "fits")));
  ck_assert_uint_le(ju(l, "peak_bytes"), least);
  ck_assert_uint_eq(ju(json_array_get(json_object_get(o, "budgets"), 0), "min_feasible_budget"), least);
  check_entry(g, l, least);
  plan_at(g, least, &r);
  ck_assert(r.feasible);
  mp_plan_result_free(&r);
  json_decref(o);
  mp_test_daemon_cleanup(&s);
  mp_graph_free(g);
}
END_TEST

/* The async form: "wait": 0 answers 202 with the fit's id and Location;
 * GET /v1/fit/{id}?wait= answers the fit, then from its rendered bytes;
 * the request is kept in the store, so the poll works after a restart. */
START_TEST(test_fit_async) {
  mp_test_daemon_t s;
  json_t *o = NULL, *sync = NULL;
  char hash[80], body[400], id[64], path[128], *hdr = NULL;
  mp_test_daemon_start(&s, "", 0);
  put_resnet(&s, hash);
  mp_test_daemon_hold(&s); /* the fit is held until answered: a wait of 0 sees it unfinished */
  snprintf(body, sizeof(body), "{\"graph_hash\": \"%s\", \"budgets\": [\"3GiB\", \"2GiB\"], \"solver\": \"approx\", "
           "\"wait\": 0}", hash);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit", body, NULL, &o, &hdr), 202);
  snprintf(id, sizeof(id), "%s", jstr(o, "id"));
  ck_assert_uint_eq(strlen(id), 32);
  ck_assert(strcmp(jstr(o, "status"), "queued") == 0 || strcmp(jstr(o, "status"), "running") == 0);
  snprintf(path, sizeof(path), "Location: /v1/fit/%s", id);
  ck_assert_ptr_nonnull(strstr(hdr, path));
  free(hdr);
  json_decref(o);
  mp_test_daemon_release(&s);
  snprintf(path, sizeof(path), "/v1/fit/%s?wait=120", id);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_uint_eq(json_array_size(json_object_get(o, "budgets")), 2);
  ck_assert_uint_eq(ju(json_array_get(json_object_get(o, "budgets"), 0), "budget"), 3ULL << 30);
  /* the same fit asked synchronously: the same answer, from the cache */
  snprintf(body, sizeof(body), "{\"graph_hash\": \"%s\", \"budgets\": [\"3GiB\", \"2GiB\"], \"solver\": \"approx\"}",
           hash);
  ck_assert_int_eq(fit(&s, body, &sync), 200);
  ck_assert_str_eq(jstr(sync, "cache"), "hit");
  json_object_del(sync, "cache");
  json_object_del(o, "cache");
  ck_assert(json_equal(o, sync));
  json_decref(o);
  snprintf(path, sizeof(path), "/v1/fit/%s", id);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_str_eq(jstr(o, "cache"), "hit");
  json_decref(o);
  /* after a restart: the request and the result come back from the store */
  mp_test_daemon_stop(&s, SIGTERM);
  mp_test_daemon_start_in(&s, "", 0);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_str_eq(jstr(o, "cache"), "hit");
  json_object_del(o, "cache");
  ck_assert(json_equal(o, sync));
  json_decref(o);
  json_decref(sync);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/v1/fit/0123456789abcdef0123456789abcdef", NULL, NULL, &o, NULL),
                   404);
  json_decref(o);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* "maximize" with "devices": each device's largest batch at its usable
 * bytes, the same value and plan as a maximize asked at that one budget;
 * a larger GPU takes a larger batch. */
START_TEST(test_fit_devices_maximize) {
  mp_test_daemon_t s;
  json_t *o = NULL, *one = NULL, *d;
  char *g = mp_test_read_file("tests/graphs/sym_mlp.json", NULL), body[8192];
  size_t i;
  ck_assert_ptr_nonnull(g);
  mp_test_daemon_start(&s, "", 0);
  snprintf(body, sizeof(body), "{\"graph\": %s, \"maximize\": \"batch\", \"devices\": [\"t4-16gb\", \"h100-80gb\"]}",
           g);
  ck_assert_int_eq(fit(&s, body, &o), 200);
  ck_assert_str_eq(jstr(o, "maximize"), "batch");
  d = json_object_get(o, "devices");
  ck_assert_uint_eq(json_array_size(d), 2);
  ck_assert_uint_gt(ju(json_array_get(d, 0), "value"), 0);
  ck_assert_uint_gt(ju(json_array_get(d, 1), "value"), ju(json_array_get(d, 0), "value"));
  for (i = 0; i < 2; i++) {
    json_t *e = json_array_get(d, i);
    snprintf(body, sizeof(body), "{\"graph\": %s, \"maximize\": \"batch\", \"budgets\": [%llu]}", g,
             (unsigned long long)ju(e, "usable_bytes"));
    ck_assert_int_eq(fit(&s, body, &one), 200);
    ck_assert_uint_eq(ju(e, "value"), ju(one, "value"));
    ck_assert_uint_eq(ju(e, "peak_bytes"), ju(json_object_get(one, "plan"), "peak_bytes"));
    ck_assert_uint_le(ju(e, "peak_bytes"), ju(e, "usable_bytes"));
    ck_assert_uint_gt(ju(json_object_get(e, "next"), "min_feasible_budget"), ju(e, "usable_bytes"));
    json_decref(one);
  }
  json_decref(o);
  free(g);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* The request lines the daemon writes by hand are JSON with every field,
 * whatever the path holds (quotes, control bytes, bytes that are not
 * UTF-8), and a path that is not UTF-8 still gets its 404 with a JSON
 * body. The log is read once the daemon has exited (request lines are
 * buffered up to 100 ms). */
START_TEST(test_request_log_lines) {
  mp_test_daemon_t s;
  json_t *o = NULL;
  char path[256], *log, *line, *next;
  int seen = 0;
  mp_test_daemon_start(&s, "", 0);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/a%ffb%22c%01d", NULL, NULL, &o, NULL), 404);
  ck_assert_str_eq(jstr(json_object_get(o, "error"), "code"), "not_found");
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", "/healthz", NULL, "-H 'X-Request-ID: log-line-1'", NULL, NULL),
                   200);
  mp_test_daemon_stop(&s, SIGTERM);
  snprintf(path, sizeof(path), "%s/log", s.dir);
  log = mp_test_read_file(path, NULL);
  ck_assert_ptr_nonnull(log);
  for (line = log; line && *line; line = next) {
    json_t *l;
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    l = json_loads(line, 0, NULL);
    ck_assert_msg(l != NULL, "not JSON: %.300s", line);
    if (strcmp(jstr(l, "msg"), "request") == 0) {
      static const char *const keys[] = {"ts", "level", "request_id", "method", "path", "route", "status",
                                         "dur_ms", "graph_hash", "cache"};
      size_t k;
      for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        ck_assert_msg(json_object_get(l, keys[k]) != NULL, "no %s in %.300s", keys[k], line);
      if (strcmp(jstr(l, "request_id"), "log-line-1") == 0) {
        ck_assert_str_eq(jstr(l, "route"), "/healthz");
        ck_assert_int_eq(json_integer_value(json_object_get(l, "status")), 200);
        seen |= 1;
      }
      if (strcmp(jstr(l, "route"), "unmatched") == 0) {
        ck_assert_ptr_nonnull(strstr(jstr(l, "path"), "\"c\001d"));
        ck_assert_int_eq(json_integer_value(json_object_get(l, "status")), 404);
        seen |= 2;
      }
    }
    json_decref(l);
  }
  ck_assert_int_eq(seen, 3);
  free(log);
  mp_test_daemon_cleanup(&s);
}
END_TEST

Suite *suite_server_fit(void) {
  Suite *su = suite_create("server_fit");
  TCase *tc = tcase_create("fit");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_fit_cache_order_free);
  tcase_add_test(tc, test_fit_devices);
  tcase_add_test(tc, test_fit_least);
  tcase_add_test(tc, test_fit_async);
  tcase_add_test(tc, test_fit_devices_maximize);
  tcase_add_test(tc, test_request_log_lines);
  suite_add_tcase(su, tc);
  return su;
}
