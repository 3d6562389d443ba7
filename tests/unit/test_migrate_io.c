/* test_migrate_io.c - the input/output wiring of data migration (suite
 * migrate_io): the "swap" switch and the "device" section of the API's
 * request bodies (every field, the defaults, each bad value naming its
 * path), the text forms of bandwidths and durations, the new fields of the
 * plan, simulation and frontier answers, the CLI's device flags, the
 * frontier of the swap solvers, and the daemon end to end (the harness of
 * test_daemon.c: the real memplan-server on a free loopback port in a temp
 * dir, HTTP through curl). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats.h"
#include "frontier.h"
#include "frontier_json.h"
#include "plan.h"
#include "plan_json.h"
#include "request_json.h"
#include "schedule_json.h"
#include "simulator.h"
#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

#define HASH64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* ---- request parsing ---- */

/* Parse `text` as a plan request; the document is released (the request
 * keeps no pointer into it when graph_hash is used). */
static int parse_plan(const char *text, mp_plan_request_t *req, mp_error_t *err) {
  json_t *root = json_loads(text, 0, NULL);
  int rc;
  ck_assert_msg(root != NULL, "bad test JSON: %s", text);
  mp_error_clear(err);
  rc = mp_plan_request_parse(root, 60, req, err);
  json_decref(root);
  return rc;
}

static int parse_fit(const char *text, mp_fit_request_t *req, mp_error_t *err) {
  json_t *root = json_loads(text, 0, NULL);
  int rc;
  ck_assert_msg(root != NULL, "bad test JSON: %s", text);
  mp_error_clear(err);
  rc = mp_fit_request_parse(root, 16, req, err);
  json_decref(root);
  return rc;
}

START_TEST(test_request_defaults) {
  mp_plan_request_t q;
  mp_fit_request_t f;
  mp_error_t err;
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": \"1GiB\"}", &q, &err), 0);
  ck_assert_int_eq(q.swap, 0);
  ck_assert_int_eq(q.solver, MP_SOLVER_AUTO);
  /* device.h's documented defaults: PCIe 3.0 x16, 10 us, two engines,
   * unlimited pinned memory, unit from the graph, no reuse */
  ck_assert_double_eq(q.device.h2d_bytes_per_s, 12e9);
  ck_assert_double_eq(q.device.d2h_bytes_per_s, 12e9);
  ck_assert_double_eq(q.device.latency_s, 10e-6);
  ck_assert_int_eq(q.device.copy_engines, 2);
  ck_assert(q.device.host_bytes == UINT64_MAX);
  ck_assert_double_eq(q.device.time_unit_s, 0);
  ck_assert_int_eq(q.device.intra_layer_reuse, 0);
  ck_assert_uint_eq(q.device.prefetch_lookahead, 0); /* just in time */
  /* an empty device object changes nothing */
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 1, \"device\": {}}", &q, &err), 0);
  ck_assert_double_eq(q.device.h2d_bytes_per_s, 12e9);
  ck_assert(q.device.host_bytes == UINT64_MAX);
  ck_assert_int_eq(parse_fit("{\"graph_hash\": \"" HASH64 "\", \"budgets\": [1]}", &f, &err), 0);
  ck_assert_int_eq(f.swap, 0);
  ck_assert_int_eq(f.device.copy_engines, 2);
  mp_fit_request_free(&f);
}
END_TEST

START_TEST(test_request_every_field) {
  mp_plan_request_t q;
  mp_fit_request_t f;
  mp_error_t err;
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"solver\": \"auto\", "
                              "\"swap\": true, \"device\": {\"h2d_bandwidth\": \"6GB/s\", "
                              "\"d2h_bandwidth\": 3e9, \"latency\": \"5us\", \"copy_engines\": 1, "
                              "\"host_budget\": \"64GiB\", \"time_unit_seconds\": 0.001, "
                              "\"intra_layer_reuse\": true, \"prefetch\": 3}}",
                              &q, &err),
                   0);
  ck_assert_int_eq(q.swap, 1);
  ck_assert_int_eq(q.solver, MP_SOLVER_AUTO); /* a plan with auto + swap stays auto (plans as hybrid) */
  ck_assert_double_eq(q.device.h2d_bytes_per_s, 6e9);
  ck_assert_double_eq(q.device.d2h_bytes_per_s, 3e9);
  ck_assert_double_eq_tol(q.device.latency_s, 5e-6, 1e-18);
  ck_assert_int_eq(q.device.copy_engines, 1);
  ck_assert(q.device.host_bytes == 68719476736ULL); /* 64 * 2^30 */
  ck_assert_double_eq(q.device.time_unit_s, 0.001);
  ck_assert_int_eq(q.device.intra_layer_reuse, 1);
  ck_assert_uint_eq(q.device.prefetch_lookahead, 3);
  /* prefetch: "jit" and 0 are both just in time; the largest lookahead */
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"device\": {\"prefetch\": \"jit\"}}",
                              &q, &err),
                   0);
  ck_assert_uint_eq(q.device.prefetch_lookahead, 0);
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"device\": {\"prefetch\": 0}}", &q,
                              &err),
                   0);
  ck_assert_uint_eq(q.device.prefetch_lookahead, 0);
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"device\": {\"prefetch\": 9999}}",
                              &q, &err),
                   0);
  ck_assert_uint_eq(q.device.prefetch_lookahead, MP_DEVICE_MAX_PREFETCH);
  /* numbers as plain JSON numbers, host budget as integer bytes, then null */
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"solver\": \"layrub\", "
                              "\"device\": {\"h2d_bandwidth\": 16000000000, \"latency\": 0, "
                              "\"host_budget\": 1000, \"time_unit_seconds\": \"2ms\"}}",
                              &q, &err),
                   0);
  ck_assert_int_eq(q.swap, 1); /* the swap solvers always migrate */
  ck_assert_int_eq(q.solver, MP_SOLVER_LAYRUB);
  ck_assert_double_eq(q.device.h2d_bytes_per_s, 16e9);
  ck_assert_double_eq(q.device.latency_s, 0);
  ck_assert(q.device.host_bytes == 1000);
  ck_assert_double_eq_tol(q.device.time_unit_s, 0.002, 1e-15);
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, "
                              "\"device\": {\"host_budget\": null}}",
                              &q, &err),
                   0);
  ck_assert(q.device.host_bytes == UINT64_MAX);
  /* the new solver names wherever solvers are */
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"solver\": \"swap\"}", &q, &err), 0);
  ck_assert_int_eq(q.solver, MP_SOLVER_SWAP);
  ck_assert_int_eq(q.swap, 1);
  ck_assert_int_eq(parse_plan("{\"graph_hash\": \"" HASH64 "\", \"budget\": 5, \"solver\": \"hybrid\", \"swap\": true}",
                              &q, &err),
                   0);
  ck_assert_int_eq(q.solver, MP_SOLVER_HYBRID);
  /* fit: auto with swap is the hybrid frontier; the device is parsed too */
  ck_assert_int_eq(parse_fit("{\"graph_hash\": \"" HASH64 "\", \"budgets\": [\"1GiB\", 7], \"swap\": true, "
                             "\"device\": {\"copy_engines\": 1, \"d2h_bandwidth\": \"1.5GiB\", \"prefetch\": 2}}",
                             &f, &err),
                   0);
  ck_assert_int_eq(f.solver, MP_SOLVER_HYBRID);
  ck_assert_int_eq(f.swap, 1);
  ck_assert_int_eq(f.device.copy_engines, 1);
  ck_assert_uint_eq(f.device.prefetch_lookahead, 2);
  ck_assert_double_eq(f.device.d2h_bytes_per_s, 1610612736.0);
  ck_assert_uint_eq(f.n_budgets, 2);
  mp_fit_request_free(&f);
  ck_assert_int_eq(parse_fit("{\"graph_hash\": \"" HASH64 "\", \"budgets\": [7], \"solver\": \"swap\"}", &f, &err), 0);
  ck_assert_int_eq(f.solver, MP_SOLVER_SWAP);
  ck_assert_int_eq(f.swap, 1);
  mp_fit_request_free(&f);
}
END_TEST

/* Each bad value: the fragment merged into a valid request, the path the
 * error names, and a piece of its message. */
static const struct {
  const char *extra;
  const char *path;
  const char *msg;
} bad_requests[] = {
  {"\"device\": 5", "$.device", "must be an object with h2d_bandwidth, d2h_bandwidth, latency, copy_engines, "
                                "host_budget, time_unit_seconds, intra_layer_reuse, prefetch and allocator (all optional)"},
  {"\"device\": [1]", "$.device", "must be an object"},
  {"\"device\": {\"bandwidth\": 1}", "$.device.bandwidth", "unknown field"},
  {"\"device\": {\"h2d_bandwidth\": 0}", "$.device.h2d_bandwidth", "positive number of bytes per second"},
  {"\"device\": {\"h2d_bandwidth\": -12e9}", "$.device.h2d_bandwidth", "positive"},
  {"\"device\": {\"h2d_bandwidth\": \"0GB/s\"}", "$.device.h2d_bandwidth", "positive"},
  {"\"device\": {\"d2h_bandwidth\": \"fast\"}", "$.device.d2h_bandwidth", "'fast' is not a bandwidth"},
  {"\"device\": {\"d2h_bandwidth\": true}", "$.device.d2h_bandwidth", "bytes per second"},
  {"\"device\": {\"d2h_bandwidth\": null}", "$.device.d2h_bandwidth", "bytes per second"},
  {"\"device\": {\"latency\": -1e-6}", "$.device.latency", "non-negative"},
  {"\"device\": {\"latency\": \"3 parsecs\"}", "$.device.latency", "not a duration"},
  {"\"device\": {\"latency\": \"1h\"}", "$.device.latency", "not a duration"},
  {"\"device\": {\"latency\": {}}", "$.device.latency", "number of seconds"},
  {"\"device\": {\"copy_engines\": 3}", "$.device.copy_engines", "must be 1 (one queue for both directions) or 2"},
  {"\"device\": {\"copy_engines\": 0}", "$.device.copy_engines", "or 2"},
  {"\"device\": {\"copy_engines\": 1.5}", "$.device.copy_engines", "or 2"},
  {"\"device\": {\"copy_engines\": \"2\"}", "$.device.copy_engines", "or 2"},
  {"\"device\": {\"host_budget\": -5}", "$.device.host_budget", "cannot be negative"},
  {"\"device\": {\"host_budget\": \"12Q\"}", "$.device.host_budget", "has an unknown unit 'Q'"},
  {"\"device\": {\"host_budget\": true}", "$.device.host_budget", "is a number of bytes"},
  {"\"device\": {\"host_budget\": 1e300}", "$.device.host_budget", "must be written as an integer"},
  {"\"device\": {\"time_unit_seconds\": -0.5}", "$.device.time_unit_seconds", "non-negative"},
  {"\"device\": {\"time_unit_seconds\": \"soon\"}", "$.device.time_unit_seconds", "not a duration"},
  {"\"device\": {\"intra_layer_reuse\": \"yes\"}", "$.device.intra_layer_reuse", "true or false"},
  {"\"device\": {\"intra_layer_reuse\": 1}", "$.device.intra_layer_reuse", "true or false"},
  {"\"device\": {\"prefetch\": -1}", "$.device.prefetch",
   "must be \"jit\" (just in time) or a number of backward steps from 1 to 9999"},
  {"\"device\": {\"prefetch\": \"soon\"}", "$.device.prefetch", "must be \"jit\""},
  {"\"device\": {\"prefetch\": 2000000}", "$.device.prefetch", "from 1 to 9999"},
  {"\"device\": {\"prefetch\": 10000}", "$.device.prefetch", "from 1 to 9999"},
  {"\"device\": {\"prefetch\": 4294967297}", "$.device.prefetch", "from 1 to 9999"}, /* 2^32 + 1 */
  {"\"device\": {\"prefetch\": 2.5}", "$.device.prefetch", "from 1 to 9999"},
  {"\"device\": {\"prefetch\": \"3\"}", "$.device.prefetch", "from 1 to 9999"},
  {"\"device\": {\"prefetch\": \"JIT\"}", "$.device.prefetch", "must be \"jit\""},
  {"\"device\": {\"prefetch\": null}", "$.device.prefetch", "must be \"jit\""},
  {"\"device\": {\"prefetch\": true}", "$.device.prefetch", "must be \"jit\""},
  {"\"device\": {\"lookahead\": 2}", "$.device.lookahead", "unknown field (the device has h2d_bandwidth"},
  {"\"swap\": \"yes\"", "$.swap", "true or false"},
  {"\"swap\": 1", "$.swap", "true or false"},
  {"\"swap\": true, \"solver\": \"exact\"", "$.swap", "exact only recomputes"},
  {"\"swap\": true, \"solver\": \"memonger\"", "$.swap", "needs the solver auto, swap, hybrid or layrub"},
  {"\"swap\": false, \"solver\": \"hybrid\"", "$.swap", "hybrid solver always moves"},
  {"\"solver\": \"swapp\"", "$.solver", "\"swap\", \"hybrid\", \"layrub\""},
  {"\"swapp\": true", "$.swapp", "unknown field"},
};

START_TEST(test_request_bad_values) {
  size_t i;
  for (i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]); i++) {
    char text[512];
    mp_plan_request_t q;
    mp_fit_request_t f;
    mp_error_t err;
    snprintf(text, sizeof(text), "{\"graph_hash\": \"%s\", \"budget\": 5, %s}", HASH64, bad_requests[i].extra);
    ck_assert_int_eq(parse_plan(text, &q, &err), MP_EINVAL);
    ck_assert_msg(strcmp(err.path, bad_requests[i].path) == 0, "%s: path %s, want %s", bad_requests[i].extra,
                  err.path, bad_requests[i].path);
    ck_assert_msg(strstr(err.message, bad_requests[i].msg) != NULL, "%s: message '%s' lacks '%s'",
                  bad_requests[i].extra, err.message, bad_requests[i].msg);
    /* the same in a fit request */
    snprintf(text, sizeof(text), "{\"graph_hash\": \"%s\", \"budgets\": [5], %s}", HASH64, bad_requests[i].extra);
    ck_assert_int_eq(parse_fit(text, &f, &err), MP_EINVAL);
    ck_assert_msg(strcmp(err.path, bad_requests[i].path) == 0, "fit %s: path %s, want %s", bad_requests[i].extra,
                  err.path, bad_requests[i].path);
    mp_fit_request_free(&f);
  }
}
END_TEST

START_TEST(test_rate_and_seconds_text) {
  double d;
  mp_error_t err;
  ck_assert_int_eq(mp_parse_rate("12e9", &d, &err), 0);
  ck_assert_double_eq(d, 12e9);
  ck_assert_int_eq(mp_parse_rate("12GB", &d, &err), 0);
  ck_assert_double_eq(d, 12e9);
  ck_assert_int_eq(mp_parse_rate("12GB/s", &d, &err), 0);
  ck_assert_double_eq(d, 12e9);
  ck_assert_int_eq(mp_parse_rate("1.5GiB/s", &d, &err), 0);
  ck_assert_double_eq(d, 1610612736.0);
  ck_assert_int_eq(mp_parse_rate("250.5", &d, &err), 0); /* a plain number may be fractional */
  ck_assert_double_eq(d, 250.5);
  ck_assert_int_eq(mp_parse_rate("0", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_rate("-3", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_rate("inf", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_rate("GB/s", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_rate("12G", &d, &err), 0); /* a Kubernetes quantity, as for budgets */
  ck_assert(d == 12e9);
  ck_assert_int_eq(mp_parse_rate("12Q", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_rate("", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_seconds("10us", &d, &err), 0);
  ck_assert_double_eq_tol(d, 1e-5, 1e-20);
  ck_assert_int_eq(mp_parse_seconds("0.5ms", &d, &err), 0);
  ck_assert_double_eq_tol(d, 5e-4, 1e-18);
  ck_assert_int_eq(mp_parse_seconds("2", &d, &err), 0);
  ck_assert_double_eq(d, 2);
  ck_assert_int_eq(mp_parse_seconds("2s", &d, &err), 0);
  ck_assert_double_eq(d, 2);
  ck_assert_int_eq(mp_parse_seconds("3ns", &d, &err), 0);
  ck_assert_double_eq_tol(d, 3e-9, 1e-22);
  ck_assert_int_eq(mp_parse_seconds("0", &d, &err), 0);
  ck_assert_double_eq(d, 0);
  ck_assert_int_eq(mp_parse_seconds("-1", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_seconds("1h", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_seconds(" 1", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_seconds("", &d, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_seconds("us", &d, &err), MP_EINVAL);
}
END_TEST

/* ---- the answers' new fields, from hand-made results ---- */

static mp_graph_t *load_text(const char *text) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  ck_assert_int_eq(mp_graph_load_buffer(text, strlen(text), MP_FORMAT_AUTO, NULL, NULL, &g, NULL, &err), 0);
  return g;
}

static mp_graph_t *tiny(void) {
  /* the chain a(10) -> b(20) -> c(30), 1000 bytes of parameters, in ms */
  return load_text("{\"format\": \"memplan.graph/1\", \"time_unit\": \"ms\", \"param_bytes\": 1000, \"nodes\": ["
                   "{\"id\": \"a\", \"bytes\": 10, \"time\": 1},"
                   "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 20, \"time\": 2},"
                   "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 30, \"time\": 3}]}");
}

static double num(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  ck_assert_msg(json_is_number(v), "%s is not a number", key);
  return json_number_value(v);
}

/* A swap plan's answer: every migration field, from figures set by hand
 * (the writer copies the simulator's report; it computes nothing). */
START_TEST(test_plan_json_migration_fields) {
  mp_graph_t *g = tiny();
  mp_plan_result_t r;
  mp_device_t d;
  uint32_t sw[1] = {1};
  json_t *j, *t, *tr, *dev;
  memset(&r, 0, sizeof(r));
  r.feasible = 1;
  r.solver = MP_SOLVER_SWAP;
  r.solver_used = MP_SOLVER_SWAP;
  r.budget = 1050;
  r.schedule = mp_schedule_new();
  r.sim.peak_bytes = 1045;
  r.sim.time_forward = 6;
  r.sim.time_backward = 12;
  r.sim.time_recompute = 0;
  r.sim.time_stall = 1.5;
  r.sim.time_total = 19.5;
  r.sim.overhead_pct = 1.5 / 18 * 100;
  r.sim.n_swap_out = 1;
  r.sim.n_swap_in = 1;
  r.sim.bytes_swapped_out = 20;
  r.sim.bytes_swapped_in = 20;
  r.sim.time_copy_d2h = 0.25;
  r.sim.time_copy_h2d = 0.75;
  r.sim.host_peak_bytes = 20;
  r.sim.n_swapped = 1;
  r.sim.swapped = sw;
  mp_device_init(&d);
  d.copy_engines = 1;
  d.host_bytes = 4096;
  j = mp_plan_result_to_json_ex(g, &r, HASH64, &d, 0, 0);
  ck_assert_ptr_nonnull(j);
  t = json_object_get(j, "time");
  ck_assert_double_eq(num(t, "forward"), 6);
  ck_assert_double_eq(num(t, "backward"), 12);
  ck_assert_double_eq(num(t, "stall"), 1.5);
  ck_assert_double_eq(num(t, "total"), 19.5);
  ck_assert_double_eq_tol(num(j, "overhead_pct"), 8.3333333, 1e-6);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "swapped")), 1);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "swapped"), 0)), "b");
  ck_assert_double_eq(num(j, "host_peak_bytes"), 20);
  ck_assert_double_eq(num(j, "reused"), 0);
  tr = json_object_get(j, "transfers");
  ck_assert_double_eq(num(tr, "swap_out"), 1);
  ck_assert_double_eq(num(tr, "swap_in"), 1);
  ck_assert_double_eq(num(tr, "bytes_out"), 20);
  ck_assert_double_eq(num(tr, "bytes_in"), 20);
  ck_assert_double_eq(num(tr, "d2h_time"), 0.25);
  ck_assert_double_eq(num(tr, "h2d_time"), 0.75);
  dev = json_object_get(j, "device");
  ck_assert_double_eq(num(dev, "h2d_bandwidth"), 12e9);
  ck_assert_double_eq(num(dev, "d2h_bandwidth"), 12e9);
  ck_assert_double_eq(num(dev, "latency"), 1e-5);
  ck_assert_double_eq(num(dev, "copy_engines"), 1);
  ck_assert_double_eq(num(dev, "host_budget"), 4096);
  ck_assert_double_eq(num(dev, "time_unit_seconds"), 1e-3); /* resolved from the graph's "ms" */
  ck_assert(json_is_false(json_object_get(dev, "intra_layer_reuse")));
  ck_assert_str_eq(json_string_value(json_object_get(dev, "prefetch")), "jit");
  json_decref(j);
  /* the device's own unit wins over the graph's; no host limit is null; a
   * lookahead is echoed as its number */
  d.time_unit_s = 0.02;
  d.host_bytes = UINT64_MAX;
  d.prefetch_lookahead = 4;
  j = mp_plan_result_to_json_ex(g, &r, HASH64, &d, 0, 0);
  dev = json_object_get(j, "device");
  ck_assert_double_eq(num(dev, "time_unit_seconds"), 0.02);
  ck_assert(json_is_null(json_object_get(dev, "host_budget")));
  ck_assert(json_is_integer(json_object_get(dev, "prefetch")));
  ck_assert_int_eq(json_integer_value(json_object_get(dev, "prefetch")), 4);
  json_decref(j);
  /* a recompute-only answer keeps its old shape, plus time.stall */
  r.solver = r.solver_used = MP_SOLVER_EXACT;
  r.sim.n_swap_out = r.sim.n_swap_in = 0;
  r.sim.n_swapped = 0;
  r.sim.swapped = NULL;
  r.sim.time_stall = 0;
  r.sim.time_total = 18;
  j = mp_plan_result_to_json(g, &r, HASH64, 0, 0);
  ck_assert_double_eq(num(json_object_get(j, "time"), "stall"), 0);
  ck_assert_ptr_null(json_object_get(j, "swapped"));
  ck_assert_ptr_null(json_object_get(j, "transfers"));
  ck_assert_ptr_null(json_object_get(j, "host_peak_bytes"));
  ck_assert_ptr_null(json_object_get(j, "device"));
  json_decref(j);
  mp_schedule_free(r.schedule);
  mp_graph_free(g);
}
END_TEST

/* The simulation report of a swap schedule carries its transfers; a graph
 * without a unit of time (as the Kusumoto ones) echoes the default 0.25 ms
 * per unit. */
START_TEST(test_report_json_migration_fields) {
  mp_graph_t *g = tiny();
  mp_sim_report_t r;
  uint32_t sw[2] = {0, 1};
  json_t *j, *tr;
  mp_device_t d;
  memset(&r, 0, sizeof(r));
  r.n_swap_out = 2;
  r.n_swap_in = 2;
  r.bytes_swapped_out = 30;
  r.bytes_swapped_in = 30;
  r.host_peak_bytes = 30;
  r.time_copy_d2h = 1;
  r.time_copy_h2d = 2;
  r.time_stall = 0.5;
  r.time_total = 18.5;
  r.n_swapped = 2;
  r.swapped = sw;
  j = mp_sim_report_to_json(g, &r, 0);
  ck_assert_ptr_nonnull(j);
  ck_assert_double_eq(num(json_object_get(j, "time"), "stall"), 0.5);
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 18.5);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "swapped")), 2);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "swapped"), 1)), "b");
  ck_assert_double_eq(num(j, "host_peak_bytes"), 30);
  tr = json_object_get(j, "transfers");
  ck_assert_double_eq(num(tr, "swap_out"), 2);
  ck_assert_double_eq(num(tr, "bytes_in"), 30);
  ck_assert_double_eq(num(tr, "h2d_time"), 2);
  json_decref(j);
  mp_graph_free(g);
  /* a unitless graph: the default seconds per unit */
  g = load_text("{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 1, \"time\": 1}]}");
  mp_device_init(&d);
  j = mp_device_to_json(&d, g);
  ck_assert_double_eq(num(j, "time_unit_seconds"), 2.5e-4);
  json_decref(j);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_frontier_json_migration_fields) {
  mp_frontier_t f;
  mp_frontier_point_t pts[2];
  json_t *j, *p;
  memset(&f, 0, sizeof(f));
  memset(pts, 0, sizeof(pts));
  f.solver = f.solver_used = MP_SOLVER_HYBRID;
  f.peak_no_recompute = 5000;
  f.n_points = 2;
  f.points = pts;
  pts[0].budget = 3000;
  pts[0].recompute = 4;
  pts[0].extra_time = 6;
  pts[0].stall = 2;
  pts[0].overhead_pct = 50;
  pts[0].peak_bytes = 2990;
  pts[0].host_peak_bytes = 700;
  pts[0].n_swapped = 3;
  pts[0].n_recomputed = 2;
  pts[1].budget = 5000;
  j = mp_frontier_to_json(&f, HASH64);
  p = json_array_get(json_object_get(j, "points"), 0);
  ck_assert_ptr_null(json_object_get(p, "extra_time")); /* not a migration frontier */
  ck_assert_ptr_null(json_object_get(j, "device"));
  json_decref(j);
  f.migrate = 1;
  mp_device_init(&f.device);
  f.time_unit_s = 2.5e-4;
  j = mp_frontier_to_json(&f, HASH64);
  p = json_array_get(json_object_get(j, "points"), 0);
  ck_assert_double_eq(num(p, "budget"), 3000);
  ck_assert_double_eq(num(p, "recompute"), 4);
  ck_assert_double_eq(num(p, "extra_time"), 6);
  ck_assert_double_eq(num(p, "stall"), 2);
  ck_assert_double_eq(num(p, "overhead_pct"), 50);
  ck_assert_double_eq(num(p, "peak_bytes"), 2990);
  ck_assert_double_eq(num(p, "host_peak_bytes"), 700);
  ck_assert_double_eq(num(p, "swapped"), 3);
  ck_assert_double_eq(num(p, "recomputed"), 2);
  ck_assert_double_eq(num(json_object_get(j, "device"), "time_unit_seconds"), 2.5e-4);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "device"), "prefetch")), "jit");
  ck_assert_str_eq(json_string_value(json_object_get(j, "solver")), "hybrid");
  json_decref(j);
  f.device.prefetch_lookahead = 12;
  j = mp_frontier_to_json(&f, HASH64);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "device"), "prefetch")), 12);
  json_decref(j);
}
END_TEST

/* ---- the CLI ---- */

/* Run `memplan ARGS`; stdout (and stderr when args say 2>&1) in *out when
 * out is not NULL. Returns the exit status. */
static int cli(const char *args, char **out) {
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "%s %s%s", mp_test_cli(), args, strstr(args, "2>") ? "" : " 2>/dev/null");
  return mp_test_run(cmd, out);
}

static json_t *cli_json(const char *args, int want_rc) {
  char *text = NULL;
  json_t *j;
  int rc = cli(args, &text);
  ck_assert_msg(rc == want_rc, "memplan %s: exit %d, want %d", args, rc, want_rc);
  j = text ? json_loads(text, 0, NULL) : NULL;
  ck_assert_msg(j != NULL, "memplan %s: output is not JSON: %.300s", args, text ? text : "");
  free(text);
  return j;
}

/* Every device flag reaches the plan: the answer echoes the device (intra-
 * layer reuse on makes it part of even a recompute-only answer). The tiny
 * chain's times are 1 + 2 + 3 = 6 forward and twice that backward. */
START_TEST(test_cli_device_flags) {
  json_t *j = cli_json("plan tests/cli/tiny.json --budget 2000 --solver none --intra-layer-reuse "
                       "--h2d-bandwidth 6GB/s --d2h-bandwidth 3e9 --copy-latency 5us --copy-engines 1 "
                       "--host-budget 64GiB --time-unit-seconds 2ms --prefetch 5 --summary",
                       0);
  json_t *d = json_object_get(j, "device"), *t = json_object_get(j, "time");
  ck_assert_ptr_nonnull(d);
  ck_assert_double_eq(num(d, "h2d_bandwidth"), 6e9);
  ck_assert_double_eq(num(d, "d2h_bandwidth"), 3e9);
  ck_assert_double_eq_tol(num(d, "latency"), 5e-6, 1e-18);
  ck_assert_double_eq(num(d, "copy_engines"), 1);
  ck_assert_double_eq(num(d, "host_budget"), 68719476736.0);
  ck_assert_double_eq_tol(num(d, "time_unit_seconds"), 0.002, 1e-15);
  ck_assert(json_is_true(json_object_get(d, "intra_layer_reuse")));
  ck_assert_double_eq(num(d, "prefetch"), 5);
  ck_assert_double_eq(num(t, "forward"), 6);
  ck_assert_double_eq(num(t, "backward"), 12);
  ck_assert_double_eq(num(t, "stall"), 0);
  ck_assert_double_eq(num(t, "total"), 18);
  ck_assert_ptr_null(json_object_get(j, "transfers")); /* nothing moves */
  json_decref(j);
  /* without reuse and without migration the answer has no device */
  j = cli_json("plan tests/cli/tiny.json --budget 2000 --solver none --copy-engines 1 --summary", 0);
  ck_assert_ptr_null(json_object_get(j, "device"));
  json_decref(j);
  /* simulate takes the device flags; they time swap steps only, so a
   * schedule without any is timed as before: no stall, the same total
   * (test_cli_simulate_swap_schedule checks what they do to swaps) */
  j = cli_json("simulate tests/cli/tiny.json tests/cli/tiny_recompute.schedule.json --copy-engines 1 "
               "--h2d-bandwidth 1GB/s --intra-layer-reuse --prefetch 2",
               0);
  ck_assert(json_is_true(json_object_get(j, "valid")));
  ck_assert_double_eq(num(json_object_get(j, "time"), "stall"), 0);
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 19);
  json_decref(j);
}
END_TEST

static const struct {
  const char *args;
  const char *msg; /* the whole first line of stderr */
} bad_cli[] = {
  {"plan tests/cli/tiny.json --budget 1000 --solver swap --copy-engines 3",
   "memplan: --copy-engines must be 1 (one queue for both directions) or 2 (one each), not '3'"},
  {"plan tests/cli/tiny.json --budget 1000 --solver swap --h2d-bandwidth 0",
   "memplan: --h2d-bandwidth: a bandwidth must be a positive number of bytes per second"},
  {"plan tests/cli/tiny.json --budget 1000 --solver swap --d2h-bandwidth fast",
   "memplan: --d2h-bandwidth: 'fast' is not a bandwidth (bytes per second, e.g. 12e9, 12GB/s or 11GiB/s)"},
  {"plan tests/cli/tiny.json --budget 1000 --solver hybrid --copy-latency -1",
   "memplan: --copy-latency: a duration must be a non-negative number of seconds"},
  {"plan tests/cli/tiny.json --budget 1000 --solver layrub --copy-latency 3parsecs",
   "memplan: --copy-latency: '3parsecs' is not a duration (seconds, or a number with s, ms, us or ns)"},
  {"plan tests/cli/tiny.json --budget 1000 --swap --time-unit-seconds soon",
   "memplan: --time-unit-seconds: 'soon' is not a duration (seconds, or a number with s, ms, us or ns)"},
  {"plan tests/cli/tiny.json --budget 1000 --solver exact --swap",
   "memplan: --swap: swap needs the solver auto, swap, hybrid or layrub; exact only recomputes"},
  {"plan tests/cli/tiny.json --budget 1000 --solver swapp",
   "memplan: --solver must be auto, exact, window, closures (or approx), chain, memonger, sqrt, none, swap, hybrid or layrub, not 'swapp'"},
  {"frontier tests/cli/tiny.json --solver none",
   "memplan: --solver must be auto, exact, window, closures (or approx), chain, memonger, sqrt, swap, hybrid or layrub, not 'none'"},
  {"frontier tests/cli/tiny.json --solver sqrt --swap",
   "memplan: --swap: swap needs the solver auto, swap, hybrid or layrub; sqrt only recomputes"},
  {"frontier tests/cli/tiny.json --solver swap --copy-engines two",
   "memplan: --copy-engines must be 1 (one queue for both directions) or 2 (one each), not 'two'"},
  {"simulate tests/cli/tiny.json tests/cli/tiny_recompute.schedule.json --swap",
   "memplan simulate: unknown option '--swap' (see memplan --help)"},
  {"simulate tests/cli/tiny.json tests/cli/tiny_recompute.schedule.json --d2h-bandwidth -5GB",
   "memplan: --d2h-bandwidth: '-5GB' is not a bandwidth (bytes per second, e.g. 12e9, 12GB/s or 11GiB/s)"},
  {"inspect tests/cli/tiny.json --copy-engines 1", "memplan inspect: unknown option '--copy-engines' (see memplan --help)"},
  {"plan tests/cli/tiny.json --budget 1000 --solver swap --prefetch soon",
   "memplan: --prefetch: 'soon' is not a prefetch: jit (just in time) or a number of backward steps from 1 to 9999"},
  {"plan tests/cli/tiny.json --budget 1000 --solver swap --prefetch -1",
   "memplan: --prefetch: '-1' is not a prefetch: jit (just in time) or a number of backward steps from 1 to 9999"},
  {"frontier tests/cli/tiny.json --solver hybrid --prefetch 10000",
   "memplan: --prefetch: '10000' is not a prefetch: jit (just in time) or a number of backward steps from 1 to 9999"},
  {"simulate tests/cli/tiny.json tests/cli/tiny_recompute.schedule.json --prefetch 2x",
   "memplan: --prefetch: '2x' is not a prefetch: jit (just in time) or a number of backward steps from 1 to 9999"},
  {"inspect tests/cli/tiny.json --prefetch 1", "memplan inspect: unknown option '--prefetch' (see memplan --help)"},
};

START_TEST(test_cli_bad_flags) {
  size_t i;
  for (i = 0; i < sizeof(bad_cli) / sizeof(bad_cli[0]); i++) {
    char args[512], *out = NULL, *nl;
    int rc;
    snprintf(args, sizeof(args), "%s 2>&1 >/dev/null", bad_cli[i].args);
    rc = cli(args, &out);
    ck_assert_msg(rc == 2, "memplan %s: exit %d, want 2", bad_cli[i].args, rc);
    ck_assert_ptr_nonnull(out);
    if ((nl = strchr(out, '\n')) != NULL) *nl = '\0';
    ck_assert_msg(strcmp(out, bad_cli[i].msg) == 0, "memplan %s:\n  said '%s'\n  want '%s'", bad_cli[i].args, out,
                  bad_cli[i].msg);
    free(out);
  }
}
END_TEST

START_TEST(test_cli_help_lists_flags) {
  static const char *const want[] = {"--swap", "--h2d-bandwidth", "--d2h-bandwidth", "--copy-latency",
                                     "--copy-engines", "--host-budget", "--time-unit-seconds",
                                     "--intra-layer-reuse", "--prefetch P", "swap | hybrid | layrub", NULL};
  char *out = NULL;
  size_t i;
  ck_assert_int_eq(cli("--help", &out), 0);
  ck_assert_ptr_nonnull(out);
  for (i = 0; want[i]; i++) ck_assert_msg(strstr(out, want[i]) != NULL, "--help does not list %s", want[i]);
  free(out);
}
END_TEST

/* One copy of the tiny chain's `a` (10 bytes) under the default device, in
 * the chain's unit (ms): (10 us + 10 B / 12 GB/s) / 1 ms. */
#define TINY_COPY ((10e-6 + 10 / 12e9) / 1e-3)

/* Plans of the tiny chain (a 10, b 20, c 30 bytes, 1000 of parameters; 6
 * units forward, 12 backward). Plain backpropagation peaks at 1080, in the
 * backward of c (a, b, the seed gradient of c and the new gradient of b).
 * At 1070 one of a's 10 bytes must go: swapping a costs one copy each way
 * (at most TINY_COPY exposed), recomputing it 1 unit. The device decides. */
START_TEST(test_cli_swap_plans) {
  json_t *j, *t, *tr;
  /* default link: the swap is nearly free, and hybrid takes it */
  j = cli_json("plan tests/cli/tiny.json --budget 1070 --swap --summary", 0);
  ck_assert_str_eq(json_string_value(json_object_get(j, "solver")), "auto");
  ck_assert_str_eq(json_string_value(json_object_get(j, "solver_used")), "hybrid");
  ck_assert_double_eq(num(j, "peak_bytes"), 1070);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "swapped")), 1);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "swapped"), 0)), "a");
  ck_assert_uint_eq(json_array_size(json_object_get(j, "recomputed")), 0);
  ck_assert_double_eq(num(j, "host_peak_bytes"), 10);
  tr = json_object_get(j, "transfers");
  ck_assert_double_eq(num(tr, "swap_out"), 1);
  ck_assert_double_eq(num(tr, "swap_in"), 1);
  ck_assert_double_eq(num(tr, "bytes_out"), 10);
  ck_assert_double_eq(num(tr, "bytes_in"), 10);
  ck_assert_double_eq_tol(num(tr, "d2h_time"), TINY_COPY, 1e-12);
  ck_assert_double_eq_tol(num(tr, "h2d_time"), TINY_COPY, 1e-12);
  t = json_object_get(j, "time");
  ck_assert_double_eq(num(t, "recompute"), 0);
  /* a must be off the device through c's backward, so b's backward waits
   * for the whole copy back */
  ck_assert_double_eq_tol(num(t, "stall"), TINY_COPY, 1e-12);
  ck_assert_double_eq_tol(num(t, "total"), 18 + TINY_COPY, 1e-12);
  json_decref(j);
  /* 1000 bytes/s: a copy lasts 10 units, more than recomputing a (1) even
   * if the 6 units of c's backward hid part of it: hybrid recomputes */
  j = cli_json("plan tests/cli/tiny.json --budget 1070 --swap --summary --h2d-bandwidth 1000 --copy-latency 0", 0);
  ck_assert_double_eq(num(j, "peak_bytes"), 1070);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "swapped")), 0);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "recomputed"), 0)), "a");
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 19);
  ck_assert_double_eq(num(json_object_get(j, "device"), "h2d_bandwidth"), 1000);
  json_decref(j);
  /* 5 bytes of pinned host memory cannot hold a: swap recomputes too */
  j = cli_json("plan tests/cli/tiny.json --budget 1070 --solver swap --summary --host-budget 5", 0);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "swapped")), 0);
  ck_assert_double_eq(num(j, "host_peak_bytes"), 0);
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 19);
  ck_assert_double_eq(num(json_object_get(j, "device"), "host_budget"), 5);
  json_decref(j);
  /* below every plan: infeasible (exit 1), the answer still printed */
  j = cli_json("plan tests/cli/tiny.json --budget 1010 --solver hybrid --summary", 1);
  ck_assert(json_is_false(json_object_get(j, "feasible")));
  ck_assert_ptr_nonnull(json_object_get(j, "device"));
  json_decref(j);
  /* the frontier: auto with --swap is hybrid's; two steps, 1070 with the
   * swap and 1080 with nothing */
  j = cli_json("frontier tests/cli/tiny.json --swap --copy-engines 1", 0);
  ck_assert_str_eq(json_string_value(json_object_get(j, "solver")), "hybrid");
  ck_assert_double_eq(num(json_object_get(j, "device"), "copy_engines"), 1);
  ck_assert_double_eq(num(j, "peak_no_recompute"), 1080);
  t = json_object_get(j, "points");
  ck_assert_uint_eq(json_array_size(t), 2);
  ck_assert_double_eq(num(json_array_get(t, 0), "budget"), 1070);
  ck_assert_double_eq(num(json_array_get(t, 0), "swapped"), 1);
  ck_assert_double_eq_tol(num(json_array_get(t, 0), "extra_time"), TINY_COPY, 1e-12);
  ck_assert_double_eq(num(json_array_get(t, 1), "budget"), 1080);
  ck_assert_double_eq(num(json_array_get(t, 1), "extra_time"), 0);
  json_decref(j);
}
END_TEST

/* A hand-written swap schedule of the tiny chain replayed under two
 * devices (simulator.c's event model, figures by hand):
 *   compute a [0,1], compute b [1,3], swap_out a, compute c [3,6], free c,
 *   backward c [6,12], free b, swap_in a, backward b, free a, backward a.
 * 1000 B/s, no latency: each copy of a lasts 10 units. The swap-out runs
 * [3,13], so a's bytes are still on the device during backward c: peak
 * 1000 + a 10 + b 20 + seed 30 + grad b 20 = 1080. The swap-in cannot
 * start before the swap-out ends: [13,23]; backward b waits from 12 to 23
 * (stall 11), runs [23,27], backward a [27,29]: total 29.
 * The default link: copies of TINY_COPY; a is gone before backward c (peak
 * 1070) and backward b waits for one copy: total 18 + TINY_COPY. */
START_TEST(test_cli_simulate_swap_schedule) {
  char path[64], args[512];
  json_t *j, *t;
  FILE *f;
  snprintf(path, sizeof(path), "/tmp/mp-wire-sched-%d.json", (int)getpid());
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"format\": \"memplan.schedule/1\", \"steps\": ["
        "{\"op\": \"compute\", \"node\": \"a\"}, {\"op\": \"compute\", \"node\": \"b\"},"
        "{\"op\": \"swap_out\", \"node\": \"a\"}, {\"op\": \"compute\", \"node\": \"c\"},"
        "{\"op\": \"free\", \"node\": \"c\"}, {\"op\": \"backward\", \"node\": \"c\"},"
        "{\"op\": \"free\", \"node\": \"b\"}, {\"op\": \"swap_in\", \"node\": \"a\"},"
        "{\"op\": \"backward\", \"node\": \"b\"}, {\"op\": \"free\", \"node\": \"a\"},"
        "{\"op\": \"backward\", \"node\": \"a\"}]}",
        f);
  fclose(f);
  snprintf(args, sizeof(args), "simulate tests/cli/tiny.json %s --h2d-bandwidth 1000 --d2h-bandwidth 1000B/s "
           "--copy-latency 0", path);
  j = cli_json(args, 0);
  t = json_object_get(j, "time");
  ck_assert_double_eq(num(j, "peak_bytes"), 1080);
  ck_assert_double_eq(num(t, "stall"), 11);
  ck_assert_double_eq(num(t, "total"), 29);
  ck_assert_double_eq(num(json_object_get(j, "transfers"), "d2h_time"), 10);
  ck_assert_double_eq(num(json_object_get(j, "transfers"), "h2d_time"), 10);
  ck_assert_double_eq(num(j, "host_peak_bytes"), 10);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "swapped"), 0)), "a");
  json_decref(j);
  snprintf(args, sizeof(args), "simulate tests/cli/tiny.json %s", path);
  j = cli_json(args, 0);
  t = json_object_get(j, "time");
  ck_assert_double_eq(num(j, "peak_bytes"), 1070);
  ck_assert_double_eq_tol(num(t, "stall"), TINY_COPY, 1e-12);
  ck_assert_double_eq_tol(num(t, "total"), 18 + TINY_COPY, 1e-12);
  json_decref(j);
  unlink(path);
}
END_TEST

/* The solver tests' chain (test_solver_swap.c, above test_prefetch_schedules)
 * as a file: x -> a 46 MB, 5 ms -> b 10, 10 -> c 30, 100 -> d 30, 10 -> e 1, 1.
 * Under a 1 GB/s link without latency, at 146 MB the swap solver moves a and,
 * just in time, brings it back before c's backward (peak 102 MB); two
 * backward steps ahead it comes back before d's, which then holds 146 MB.
 * Both take 378 ms with no stall. */
START_TEST(test_cli_prefetch) {
  char path[64], args[512];
  json_t *j;
  FILE *f;
  static const char *const dev = "--h2d-bandwidth 1GB/s --d2h-bandwidth 1GB/s --copy-latency 0";
  snprintf(path, sizeof(path), "/tmp/mp-prefetch-chain-%d.json", (int)getpid());
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"format\": \"memplan.graph/1\", \"time_unit\": \"ms\", \"nodes\": ["
        "{\"id\": \"x\", \"kind\": \"input\", \"bytes\": 0},"
        "{\"id\": \"a\", \"inputs\": [\"x\"], \"bytes\": 46000000, \"time\": 5},"
        "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 10000000, \"time\": 10},"
        "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 30000000, \"time\": 100},"
        "{\"id\": \"d\", \"inputs\": [\"c\"], \"bytes\": 30000000, \"time\": 10},"
        "{\"id\": \"e\", \"inputs\": [\"d\"], \"bytes\": 1000000, \"time\": 1}]}",
        f);
  fclose(f);
  snprintf(args, sizeof(args), "plan %s --budget 146MB --solver swap --summary %s", path, dev);
  j = cli_json(args, 0);
  ck_assert_double_eq(num(j, "peak_bytes"), 102e6);
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 378);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "device"), "prefetch")), "jit");
  json_decref(j);
  snprintf(args, sizeof(args), "plan %s --budget 146MB --solver swap --summary %s --prefetch 2", path, dev);
  j = cli_json(args, 0);
  ck_assert_double_eq(num(j, "peak_bytes"), 146e6);
  ck_assert_double_eq(num(json_object_get(j, "time"), "total"), 378);
  ck_assert_double_eq(num(json_object_get(j, "time"), "stall"), 0);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "swapped"), 0)), "a");
  ck_assert_double_eq(num(json_object_get(j, "device"), "prefetch"), 2);
  json_decref(j);
  /* jit and 0 spell the default */
  snprintf(args, sizeof(args), "plan %s --budget 146MB --solver swap --summary %s --prefetch=0", path, dev);
  j = cli_json(args, 0);
  ck_assert_double_eq(num(j, "peak_bytes"), 102e6);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "device"), "prefetch")), "jit");
  json_decref(j);
  snprintf(args, sizeof(args), "plan %s --budget 146MB --solver hybrid --summary %s --prefetch jit", path, dev);
  j = cli_json(args, 0);
  ck_assert_double_eq(num(j, "peak_bytes"), 102e6);
  json_decref(j);
  /* the frontier plans under it and says so */
  snprintf(args, sizeof(args), "frontier %s --solver swap %s --prefetch 2", path, dev);
  j = cli_json(args, 0);
  ck_assert_double_eq(num(json_object_get(j, "device"), "prefetch"), 2);
  json_decref(j);
  unlink(path);
}
END_TEST

/* ---- the frontier of the swap solvers ---- */

/* The staircase is strictly improving, and each point is the plan mp_plan
 * returns at exactly its budget: re-planned and re-simulated under the
 * device, it fits that budget with that peak and that extra time. */
static void check_migration_frontier(const mp_graph_t *g, const mp_plan_options_t *o, const mp_frontier_t *f) {
  size_t i;
  ck_assert_int_eq(f->migrate, 1);
  ck_assert_int_eq(f->solver, o->solver);
  ck_assert_uint_ge(f->n_points, 1);
  ck_assert_int_eq(f->device.copy_engines, o->device.copy_engines);
  for (i = 0; i < f->n_points; i++) {
    const mp_frontier_point_t *p = &f->points[i];
    mp_plan_options_t po = *o;
    mp_plan_result_t r;
    mp_sim_report_t rep;
    mp_sim_options_t so;
    mp_error_t err;
    if (i > 0) {
      ck_assert_msg(p->budget > f->points[i - 1].budget, "point %zu: budget does not increase", i);
      ck_assert_msg(p->extra_time < f->points[i - 1].extra_time, "point %zu: extra time does not decrease", i);
    }
    ck_assert_uint_le(p->peak_bytes, p->budget);
    po.budget = p->budget;
    ck_assert_int_eq(mp_plan(g, &po, &r, &err), 0);
    ck_assert_msg(r.feasible, "point %zu (budget %llu) does not plan", i, (unsigned long long)p->budget);
    ck_assert_uint_eq(r.sim.peak_bytes, p->peak_bytes);
    ck_assert_double_eq_tol(r.sim.time_total - r.sim.time_forward - r.sim.time_backward, p->extra_time, 1e-9);
    ck_assert_double_eq_tol(r.sim.time_stall, p->stall, 1e-9);
    ck_assert_uint_eq(r.sim.n_swapped, p->n_swapped);
    so.device = &o->device;
    ck_assert_int_eq(mp_simulate_ex(g, r.schedule, &so, &rep, &err), 0);
    ck_assert_uint_le(rep.peak_bytes, p->budget);
    ck_assert_uint_eq(rep.peak_bytes, p->peak_bytes);
    ck_assert_double_eq_tol(rep.time_total, r.sim.time_total, 1e-9);
    ck_assert(rep.host_peak_bytes <= o->device.host_bytes);
    mp_sim_report_free(&rep);
    mp_plan_result_free(&r);
  }
}

START_TEST(test_frontier_swap_solvers) {
  mp_graph_t *g = mp_test_load_shipped("vgg19");
  mp_plan_options_t o;
  mp_frontier_t f;
  mp_error_t err;
  static const mp_solver_t solvers[] = {MP_SOLVER_SWAP, MP_SOLVER_HYBRID};
  size_t k;
  for (k = 0; k < 2; k++) {
    mp_plan_options_init(&o);
    o.solver = solvers[k];
    o.device.copy_engines = 1;
    ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
    check_migration_frontier(g, &o, &f);
    /* it reaches below plain backpropagation, and at its top costs nothing */
    ck_assert_uint_ge(f.n_points, 2);
    ck_assert_uint_lt(f.points[0].budget, f.peak_no_recompute);
    ck_assert_uint_le(f.points[f.n_points - 1].budget, f.peak_no_recompute);
    ck_assert_double_eq(f.points[f.n_points - 1].extra_time, 0);
    mp_frontier_free(&f);
  }
  /* layrub: one point, its fixed policy at its own peak */
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_LAYRUB;
  ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
  ck_assert_uint_eq(f.n_points, 1);
  ck_assert_uint_eq(f.points[0].budget, f.points[0].peak_bytes);
  check_migration_frontier(g, &o, &f);
  mp_frontier_free(&f);
  mp_graph_free(g);
}
END_TEST

/* ---- the daemon, end to end ---- */

/* A request body: {"graph": <the Kusumoto text of tests/graphs/NAME>} merged
 * with the object text `extra`. malloc'd. */
static char *body_with_graph(const char *name, const char *extra) {
  char path[256], *text, *out;
  size_t len;
  json_t *o = json_loads(extra, 0, NULL);
  ck_assert_msg(o != NULL, "bad test JSON: %s", extra);
  snprintf(path, sizeof(path), "tests/graphs/%s", name);
  text = mp_test_read_file(path, &len);
  ck_assert_ptr_nonnull(text);
  json_object_set_new(o, "graph", json_stringn(text, len));
  free(text);
  out = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return out;
}

/* A minimal validator of a JSON document against a schema of
 * proto/openapi.yaml (type, enum, nullable, required, properties, items,
 * oneOf, allOf, $ref), strict about objects: a key the schema's properties
 * do not list is an error, so every field the daemon sends is documented.
 * Written here (python3-yaml is a dependency, jsonschema is not). */
static const char validator_py[] =
    "import json, sys, yaml\n"
    "spec = yaml.safe_load(open(sys.argv[1]))\n"
    "def res(s):\n"
    "    while isinstance(s, dict) and '$ref' in s:\n"
    "        node = spec\n"
    "        for part in s['$ref'][2:].split('/'): node = node[part]\n"
    "        s = node\n"
    "    return s\n"
    "def check(v, s, path, errs):\n"
    "    s = res(s)\n"
    "    if v is None and s.get('nullable'): return\n"
    "    for sub in s.get('allOf', []): check(v, sub, path, errs)\n"
    "    if 'oneOf' in s:\n"
    "        n = sum(1 for o in s['oneOf'] if not check(v, o, path, []))\n"
    "        if n != 1: errs.append('%s: matches %d of oneOf' % (path, n))\n"
    "    t = s.get('type')\n"
    "    ok = {None: True, 'object': isinstance(v, dict), 'array': isinstance(v, list),\n"
    "          'string': isinstance(v, str), 'boolean': isinstance(v, bool),\n"
    "          'integer': isinstance(v, int) and not isinstance(v, bool),\n"
    "          'number': isinstance(v, (int, float)) and not isinstance(v, bool)}[t]\n"
    "    if not ok:\n"
    "        errs.append('%s: %s is not %s' % (path, json.dumps(v)[:80], t)); return errs\n"
    "    if 'enum' in s and v not in s['enum']: errs.append('%s: %r not in %r' % (path, v, s['enum']))\n"
    "    if isinstance(v, dict) and t == 'object':\n"
    "        props = s.get('properties', {})\n"
    "        for r in s.get('required', []):\n"
    "            if r not in v: errs.append('%s: missing %s' % (path, r))\n"
    "        for k, x in v.items():\n"
    "            if k in props: check(x, props[k], path + '.' + k, errs)\n"
    "            elif props: errs.append('%s.%s: not documented' % (path, k))\n"
    "    if isinstance(v, list) and 'items' in s:\n"
    "        for i, x in enumerate(v): check(x, s['items'], '%s[%d]' % (path, i), errs)\n"
    "    return errs\n"
    "errs = check(json.load(open(sys.argv[3])), {'$ref': '#/components/schemas/' + sys.argv[2]}, '$', [])\n"
    "print('\\n'.join(errs[:10]))\n"
    "sys.exit(1 if errs else 0)\n";

/* Check `doc` against the schema `name` of proto/openapi.yaml. */
static void assert_schema(mp_test_daemon_t *s, json_t *doc, const char *name) {
  char py[256], js[256], cmd[1024], *out = NULL;
  int rc;
  snprintf(py, sizeof(py), "%s/validate.py", s->dir);
  snprintf(js, sizeof(js), "%s/doc.json", s->dir);
  mp_test_write_file(py, validator_py);
  ck_assert_int_eq(json_dump_file(doc, js, JSON_COMPACT), 0);
  snprintf(cmd, sizeof(cmd), "python3 %s proto/openapi.yaml %s %s 2>&1", py, name, js);
  rc = mp_test_run(cmd, &out);
  ck_assert_msg(rc == 0, "the answer does not follow proto/openapi.yaml's %s:\n%s", name, out ? out : "");
  free(out);
}

/* Bad device values are 400s naming the field, on both routes; the error
 * body follows the documented Error schema. */
START_TEST(test_server_bad_device) {
  mp_test_daemon_t s;
  json_t *o = NULL, *e;
  mp_test_daemon_start(&s, NULL, 0);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans",
                                       "{\"graph_hash\": \"" HASH64 "\", \"budget\": \"1GiB\", \"solver\": \"swap\", "
                                       "\"device\": {\"copy_engines\": 3}}",
                                       NULL, &o, NULL),
                   400);
  e = json_object_get(o, "error");
  ck_assert_str_eq(json_string_value(json_object_get(e, "code")), "invalid_request");
  ck_assert_str_eq(json_string_value(json_object_get(e, "path")), "$.device.copy_engines");
  ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
                   "must be 1 (one queue for both directions) or 2 (one each)");
  assert_schema(&s, o, "Error");
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit",
                                       "{\"graph_hash\": \"" HASH64 "\", \"budgets\": [1], \"solver\": \"hybrid\", "
                                       "\"device\": {\"latency\": -1}}",
                                       NULL, &o, NULL),
                   400);
  e = json_object_get(o, "error");
  ck_assert_str_eq(json_string_value(json_object_get(e, "path")), "$.device.latency");
  ck_assert_str_eq(json_string_value(json_object_get(e, "message")), "must be a non-negative number of seconds");
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans",
                                       "{\"graph_hash\": \"" HASH64 "\", \"budget\": 1, \"solver\": \"exact\", "
                                       "\"swap\": true}",
                                       NULL, &o, NULL),
                   400);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "path")), "$.swap");
  json_decref(o);
  ck_assert_int_eq(
      mp_test_daemon_http(&s, "GET", "/v1/graphs/" HASH64 "/frontier?solver=swapp", NULL, NULL, &o, NULL), 404);
  json_decref(o);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* Plans are cached per device: the same request again is a hit, a request
 * that differs only in one device field is computed afresh and echoes its
 * own device. A recompute-only plan with intra-layer reuse on carries the
 * device, which is what shows here which device computed the answer. Then
 * a job accepted under a custom device survives kill -9 with that device:
 * the store's row has no device columns, so the restart reads it back from
 * the job's cache key. The prefetch is part of the key too (a token after
 * the others, only when it is not just in time: a key from before it reads
 * back as jit, and is still the key of its jit plan). */
START_TEST(test_server_device_keys_and_recovery) {
  mp_test_daemon_t s;
  json_t *o = NULL, *r, *d;
  char *b, id[64], ids[2][64], path[128];
  const char *st;
  double t0;
  int i;
  mp_test_daemon_start(&s, NULL, 0);
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"4GiB\", \"solver\": \"none\", \"wait\": 30, "
                                      "\"device\": {\"intra_layer_reuse\": true, \"latency\": \"7us\"}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  ck_assert_ptr_null(json_object_get(o, "cache"));
  r = json_object_get(o, "result");
  d = json_object_get(r, "device");
  ck_assert_double_eq_tol(num(d, "latency"), 7e-6, 1e-18);
  ck_assert(json_is_true(json_object_get(d, "intra_layer_reuse")));
  ck_assert_double_eq(num(d, "time_unit_seconds"), 2.5e-4);
  ck_assert_double_eq(num(json_object_get(r, "time"), "total"), 570);
  assert_schema(&s, o, "Plan");
  json_decref(o);
  /* the same again: answered from the cache */
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o, "cache")), "hit");
  free(b);
  json_decref(o);
  /* the prefetch alone: two steps ahead is another entry (and another
   * answer, echoing it); asked again it is a hit; 0 is "jit", the first
   * entry, whose key is the one written before the prefetch existed */
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"4GiB\", \"solver\": \"none\", \"wait\": 30, "
                                      "\"device\": {\"intra_layer_reuse\": true, \"latency\": \"7us\", "
                                      "\"prefetch\": 2}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  ck_assert_ptr_null(json_object_get(o, "cache"));
  d = json_object_get(json_object_get(o, "result"), "device");
  ck_assert_double_eq(num(d, "prefetch"), 2);
  ck_assert_double_eq_tol(num(d, "latency"), 7e-6, 1e-18);
  assert_schema(&s, o, "Plan");
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  free(b);
  ck_assert_str_eq(json_string_value(json_object_get(o, "cache")), "hit");
  ck_assert_double_eq(num(json_object_get(json_object_get(o, "result"), "device"), "prefetch"), 2);
  json_decref(o);
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"4GiB\", \"solver\": \"none\", \"wait\": 30, "
                                      "\"device\": {\"intra_layer_reuse\": true, \"latency\": \"7us\", "
                                      "\"prefetch\": 0}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  free(b);
  ck_assert_str_eq(json_string_value(json_object_get(o, "cache")), "hit");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "result"), "device"), "prefetch")),
                   "jit");
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans",
                                       "{\"graph_hash\": \"" HASH64 "\", \"budget\": 1, "
                                       "\"device\": {\"prefetch\": \"soon\"}}",
                                       NULL, &o, NULL),
                   400);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "path")), "$.device.prefetch");
  json_decref(o);
  /* one field differs (latency 8 us): a new computation with its own device */
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"4GiB\", \"solver\": \"none\", \"wait\": 30, "
                                      "\"device\": {\"intra_layer_reuse\": true, \"latency\": \"8us\"}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  free(b);
  ck_assert_ptr_null(json_object_get(o, "cache"));
  ck_assert_double_eq_tol(num(json_object_get(json_object_get(o, "result"), "device"), "latency"), 8e-6, 1e-18);
  json_decref(o);
  /* and so does the host budget alone */
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"4GiB\", \"solver\": \"none\", \"wait\": 30, "
                                      "\"device\": {\"intra_layer_reuse\": true, \"latency\": \"7us\", "
                                      "\"host_budget\": \"1GiB\"}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 200);
  free(b);
  ck_assert_ptr_null(json_object_get(o, "cache"));
  ck_assert_double_eq(num(json_object_get(json_object_get(o, "result"), "device"), "host_budget"), 1073741824.0);
  json_decref(o);
  mp_test_daemon_stop(&s, SIGTERM);

  /* recovery: a job held running (mp_test_daemon_hold: until the kill),
   * kill -9, restart */
  mp_test_daemon_start_in(&s, NULL, 0);
  mp_test_daemon_hold(&s);
  b = body_with_graph("cg_vgg19.txt", "{\"budget\": \"3GiB\", \"solver\": \"none\", "
                                      "\"device\": {\"intra_layer_reuse\": true, \"copy_engines\": 1, "
                                      "\"h2d_bandwidth\": \"6GB/s\", \"host_budget\": 123456789, "
                                      "\"time_unit_seconds\": 0.001, \"prefetch\": 7}}");
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 202);
  free(b);
  snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(o, "id")));
  json_decref(o);
  /* and the longest keys there are (jobs.c: 117 + 128 + 10 = 255
   * characters): a 20-digit budget and host budget, four 23-character
   * numbers, the largest prefetch, and the longest names. memonger with the
   * reference accounting (the 255) fails when it plans, but only a key that
   * reads back gets that far (else the job fails as a bad row); approx (253)
   * plans and echoes the device. Queued behind the first, recovered too. */
  for (i = 0; i < 2; i++) {
    char extra[1024];
    snprintf(extra, sizeof(extra),
             "{\"budget\": \"16383PiB\", \"solver\": \"%s\", "
             "\"objective\": \"memory\", \"accounting\": \"reference\", "
             "\"device\": {\"intra_layer_reuse\": true, "
             "\"h2d_bandwidth\": 2.8507215452428453e+300, "
             "\"d2h_bandwidth\": 2.0510660821920897e+301, "
             "\"latency\": 4.0551058552328596e-300, \"host_budget\": \"16383PiB\", "
             "\"time_unit_seconds\": 1.0165822422712861e-301, \"prefetch\": 9999}}",
             i == 0 ? "memonger" : "approx");
    b = body_with_graph("cg_vgg19.txt", extra);
    ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o, NULL), 202);
    free(b);
    snprintf(ids[i], sizeof(ids[i]), "%s", json_string_value(json_object_get(o, "id")));
    json_decref(o);
  }
  snprintf(path, sizeof(path), "/v1/plans/%s", id);
  t0 = mp_test_now_ms();
  for (;;) {
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
    st = json_string_value(json_object_get(o, "status"));
    if (st && strcmp(st, "running") == 0) break;
    json_decref(o);
    ck_assert_msg(mp_test_now_ms() - t0 < 30000, "the plan never ran");
    mp_test_nap_ms(20);
  }
  json_decref(o);
  mp_test_daemon_stop(&s, SIGKILL);
  mp_test_daemon_release(&s);
  mp_test_daemon_start_in(&s, NULL, 0);
  snprintf(path, sizeof(path), "/v1/plans/%s?wait=30", id);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "done");
  d = json_object_get(json_object_get(o, "result"), "device");
  ck_assert_double_eq(num(d, "copy_engines"), 1);
  ck_assert_double_eq(num(d, "h2d_bandwidth"), 6e9);
  ck_assert_double_eq(num(d, "d2h_bandwidth"), 12e9);
  ck_assert_double_eq(num(d, "host_budget"), 123456789);
  ck_assert_double_eq(num(d, "time_unit_seconds"), 0.001);
  ck_assert(json_is_true(json_object_get(d, "intra_layer_reuse")));
  ck_assert_double_eq(num(d, "prefetch"), 7); /* read back from the key's last device token */
  json_decref(o);
  snprintf(path, sizeof(path), "/v1/plans/%s?wait=30", ids[0]);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "failed");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "code")), "planner_einval");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "message")),
                   "the reference accounting applies to the DP solvers only");
  json_decref(o);
  snprintf(path, sizeof(path), "/v1/plans/%s?wait=30", ids[1]);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "done");
  r = json_object_get(o, "result");
  ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "closures");
  ck_assert_double_eq(num(r, "budget"), 18445618173802708992.0);
  d = json_object_get(r, "device");
  ck_assert_double_eq_tol(num(d, "h2d_bandwidth"), 2.8507215452428453e+300, 1e-15 * 2.9e300);
  ck_assert_double_eq_tol(num(d, "d2h_bandwidth"), 2.0510660821920897e+301, 1e-15 * 2.1e301);
  ck_assert_double_eq_tol(num(d, "latency"), 4.0551058552328596e-300, 1e-15 * 4.1e-300);
  ck_assert_double_eq_tol(num(d, "time_unit_seconds"), 1.0165822422712861e-301, 1e-15 * 1.1e-301);
  ck_assert_double_eq(num(d, "host_budget"), 18445618173802708992.0);
  ck_assert_double_eq(num(d, "prefetch"), 9999);
  json_decref(o);
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* The swap solvers through the daemon. The in-process frontier of swap on
 * VGG19 under a one-engine 6 GB/s device gives the budget (its lowest
 * point, below plain backpropagation) and the figures the daemon must
 * answer with: the same call, the same device, the same plan. */
START_TEST(test_server_swap_end_to_end) {
  mp_test_daemon_t s;
  mp_graph_t *g = mp_test_load_shipped("vgg19");
  mp_plan_options_t o;
  mp_frontier_t f;
  mp_plan_result_t pr;
  mp_error_t err;
  json_t *o1 = NULL, *r, *t, *tr, *d, *bs, *e;
  char extra[512], *b, hash[80], path[200];
  uint64_t lo;
  size_t i;

  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_SWAP;
  o.device.copy_engines = 1;
  o.device.h2d_bytes_per_s = 6e9;
  ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
  ck_assert_uint_ge(f.n_points, 2);
  lo = f.points[0].budget;
  o.budget = lo;
  ck_assert_int_eq(mp_plan(g, &o, &pr, &err), 0);
  ck_assert(pr.feasible);
  ck_assert_uint_gt(pr.sim.n_swapped, 0);

  mp_test_daemon_start(&s, NULL, 0);
  snprintf(extra, sizeof(extra),
           "{\"budget\": %llu, \"solver\": \"swap\", \"wait\": 60, "
           "\"device\": {\"copy_engines\": 1, \"h2d_bandwidth\": \"6GB/s\"}}",
           (unsigned long long)lo);
  b = body_with_graph("cg_vgg19.txt", extra);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o1, NULL), 200);
  free(b);
  ck_assert_str_eq(json_string_value(json_object_get(o1, "status")), "done");
  snprintf(hash, sizeof(hash), "%s", json_string_value(json_object_get(o1, "graph_hash")));
  r = json_object_get(o1, "result");
  ck_assert(json_is_true(json_object_get(r, "feasible")));
  ck_assert_str_eq(json_string_value(json_object_get(r, "solver")), "swap");
  ck_assert_double_eq(num(r, "peak_bytes"), (double)pr.sim.peak_bytes);
  ck_assert_uint_le((uint64_t)num(r, "peak_bytes"), lo);
  t = json_object_get(r, "time");
  ck_assert_double_eq_tol(num(t, "total"), pr.sim.time_total, 1e-9);
  ck_assert_double_eq_tol(num(t, "stall"), pr.sim.time_stall, 1e-9);
  ck_assert_double_eq(num(t, "forward"), 190);
  ck_assert_double_eq(num(t, "backward"), 380);
  ck_assert_uint_eq(json_array_size(json_object_get(r, "swapped")), pr.sim.n_swapped);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "swapped"), 0)),
                   g->nodes[pr.sim.swapped[0]].id);
  ck_assert_double_eq(num(r, "host_peak_bytes"), (double)pr.sim.host_peak_bytes);
  ck_assert_double_gt(num(r, "host_peak_bytes"), 0);
  tr = json_object_get(r, "transfers");
  ck_assert_double_eq(num(tr, "swap_out"), (double)pr.sim.n_swap_out);
  ck_assert_double_eq(num(tr, "bytes_out"), (double)pr.sim.bytes_swapped_out);
  ck_assert_double_gt(num(tr, "bytes_out"), 0);
  ck_assert_double_eq_tol(num(tr, "d2h_time"), pr.sim.time_copy_d2h, 1e-9);
  d = json_object_get(r, "device");
  ck_assert_double_eq(num(d, "copy_engines"), 1);
  ck_assert_double_eq(num(d, "h2d_bandwidth"), 6e9);
  ck_assert_double_eq(num(d, "time_unit_seconds"), 2.5e-4);
  /* the schedule has the new ops */
  {
    json_t *st, *step;
    int outs = 0;
    st = json_object_get(r, "schedule");
    json_array_foreach(st, i, step) outs += strcmp(json_string_value(json_object_get(step, "op")), "swap_out") == 0;
    ck_assert_int_eq(outs, (int)pr.sim.n_swap_out);
  }
  assert_schema(&s, o1, "Plan");
  json_decref(o1);
  mp_plan_result_free(&pr);

  /* two copy engines: another device, another answer */
  snprintf(extra, sizeof(extra),
           "{\"budget\": %llu, \"solver\": \"swap\", \"wait\": 60, \"device\": {\"h2d_bandwidth\": \"6GB/s\"}}",
           (unsigned long long)lo);
  b = body_with_graph("cg_vgg19.txt", extra);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", b, NULL, &o1, NULL), 200);
  free(b);
  ck_assert_ptr_null(json_object_get(o1, "cache"));
  ck_assert_double_eq(num(json_object_get(json_object_get(o1, "result"), "device"), "copy_engines"), 2);
  json_decref(o1);

  /* fit with hybrid, by hash, under the first device */
  snprintf(extra, sizeof(extra),
           "{\"graph_hash\": \"%s\", \"budgets\": [1000, %llu, %llu], \"solver\": \"hybrid\", "
           "\"device\": {\"copy_engines\": 1, \"h2d_bandwidth\": \"6GB/s\"}}",
           hash, (unsigned long long)lo, (unsigned long long)f.peak_no_recompute);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit", extra, NULL, &o1, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o1, "solver")), "hybrid");
  ck_assert_double_eq(num(json_object_get(o1, "device"), "copy_engines"), 1);
  bs = json_object_get(o1, "budgets");
  ck_assert_uint_eq(json_array_size(bs), 3);
  ck_assert(json_is_false(json_object_get(json_array_get(bs, 0), "fits")));
  e = json_array_get(bs, 2);
  ck_assert(json_is_true(json_object_get(e, "fits")));
  ck_assert_double_eq(num(e, "extra_time"), 0); /* plain backpropagation's budget */
  assert_schema(&s, o1, "Fit");
  json_decref(o1);
  {
    /* the same fit again: from the cache, and as the library plans it */
    mp_plan_result_t fp;
    o.solver = MP_SOLVER_HYBRID;
    o.budget = lo;
    ck_assert_int_eq(mp_plan(g, &o, &fp, &err), 0);
    ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit", extra, NULL, &o1, NULL), 200);
    ck_assert_str_eq(json_string_value(json_object_get(o1, "cache")), "hit");
    e = json_array_get(json_object_get(o1, "budgets"), 1);
    ck_assert(json_is_boolean(json_object_get(e, "fits")));
    ck_assert_int_eq(json_is_true(json_object_get(e, "fits")), fp.feasible);
    ck_assert(fp.feasible); /* swap's least budget: hybrid reaches it too */
    ck_assert(num(e, "extra_time") == fp.sim.time_total - fp.sim.time_forward - fp.sim.time_backward ||
              (num(e, "extra_time") == 0 && fp.sim.time_total - fp.sim.time_forward - fp.sim.time_backward < 0));
    ck_assert_uint_eq((uint64_t)num(e, "peak"), fp.sim.peak_bytes);
    json_decref(o1);
    mp_plan_result_free(&fp);
    o.budget = UINT64_MAX;
  }
  /* the same fit under another device (two engines) is another fit */
  snprintf(extra, sizeof(extra),
           "{\"graph_hash\": \"%s\", \"budgets\": [%llu], \"solver\": \"hybrid\", "
           "\"device\": {\"h2d_bandwidth\": \"6GB/s\"}}",
           hash, (unsigned long long)lo);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/fit", extra, NULL, &o1, NULL), 200);
  ck_assert_str_eq(json_string_value(json_object_get(o1, "cache")), "miss");
  ck_assert_double_eq(num(json_object_get(o1, "device"), "copy_engines"), 2);
  json_decref(o1);
  /* the frontier route takes the swap solvers (default device) */
  snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?solver=layrub&wait=60", hash);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o1, NULL), 200);
  ck_assert_uint_eq(json_array_size(json_object_get(o1, "points")), 1);
  ck_assert_double_eq(num(json_object_get(o1, "device"), "copy_engines"), 2);
  assert_schema(&s, o1, "Frontier");
  json_decref(o1);
  mp_test_daemon_cleanup(&s);
  mp_frontier_free(&f);
  mp_graph_free(g);
}
END_TEST

/* ---- the suite ---- */

Suite *suite_migrate_io(void) {
  Suite *s = suite_create("migrate_io");
  TCase *req = tcase_create("request");
  TCase *out = tcase_create("answers");
  TCase *cl = tcase_create("cli");
  TCase *fro = tcase_create("frontier");
  TCase *srv = tcase_create("server");
  tcase_add_test(req, test_request_defaults);
  tcase_add_test(req, test_request_every_field);
  tcase_add_test(req, test_request_bad_values);
  tcase_add_test(req, test_rate_and_seconds_text);
  suite_add_tcase(s, req);
  tcase_add_test(out, test_plan_json_migration_fields);
  tcase_add_test(out, test_report_json_migration_fields);
  tcase_add_test(out, test_frontier_json_migration_fields);
  suite_add_tcase(s, out);
  tcase_set_timeout(cl, 60);
  tcase_add_test(cl, test_cli_device_flags);
  tcase_add_test(cl, test_cli_bad_flags);
  tcase_add_test(cl, test_cli_help_lists_flags);
  tcase_add_test(cl, test_cli_swap_plans);
  tcase_add_test(cl, test_cli_simulate_swap_schedule);
  tcase_add_test(cl, test_cli_prefetch);
  suite_add_tcase(s, cl);
  tcase_set_timeout(fro, 120);
  tcase_add_test(fro, test_frontier_swap_solvers);
  suite_add_tcase(s, fro);
  tcase_set_timeout(srv, 120);
  tcase_add_test(srv, test_server_bad_device);
  tcase_add_test(srv, test_server_device_keys_and_recovery);
  tcase_add_test(srv, test_server_swap_end_to_end);
  suite_add_tcase(s, srv);
  return s;
}
