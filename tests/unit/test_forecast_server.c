/* test_forecast_server.c - symbolic graphs through the real daemon
 * (test_daemon.h): "dims" on /v1/plans, /v1/fit and the frontier route, the
 * binding in the cache key and in every answer, the errors that name the
 * field, and /v1/fit with "maximize" against the planner's own search. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims.h"
#include "formats.h"
#include "maximize.h"
#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

#define SYM_MLP "tests/graphs/sym_mlp.json"

static json_t *sym_graph(void) {
  json_error_t e;
  json_t *g = json_load_file(SYM_MLP, 0, &e);
  ck_assert_msg(g != NULL, "%s: %s", SYM_MLP, e.text);
  return g;
}

static const char *jstr(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "";
}

static const char *err_path(json_t *o) { return jstr(json_object_get(o, "error"), "path"); }

/* POST `req` (released) to `path`; the status, the answer in *out. */
static int post(mp_test_daemon_t *s, const char *path, json_t *req, json_t **out) {
  char *body = json_dumps(req, JSON_COMPACT);
  int st;
  json_decref(req);
  st = mp_test_daemon_http(s, "POST", path, body, NULL, out, NULL);
  free(body);
  return st;
}

/* The hash of the shipped graph bound at batch=v, as the planner makes it. */
static void bound_hash(int64_t v, char out[65]) {
  mp_graph_t *g = NULL, *b = NULL;
  mp_binding_t bd;
  mp_error_t err;
  ck_assert_int_eq(mp_graph_load_file(SYM_MLP, MP_FORMAT_AUTO, NULL, &g, NULL, &err), 0);
  mp_binding_init(&bd, "$.dims");
  ck_assert_int_eq(mp_binding_set(&bd, "batch", v, &err), 0);
  ck_assert_int_eq(mp_graph_bind(g, &bd, NULL, &b, &err), 0);
  ck_assert_int_eq(mp_graph_hash(b, out), 0);
  mp_graph_free(b);
  mp_graph_free(g);
}

static int64_t dim_of(json_t *o) { return json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")); }

/* Plans at a binding: the answer echoes it, names the bound graph, and a
 * plan cached at one binding never answers another. */
START_TEST(test_plans_dims) {
  mp_test_daemon_t s;
  json_t *o, *res;
  char h64[65], h32[65], sym_hash[65], id64[40];
  bound_hash(64, h64);
  bound_hash(32, h32);
  mp_test_daemon_start(&s, NULL, 0);
  ck_assert_int_eq(post(&s, "/v1/plans",
                        json_pack("{s:o,s:s,s:i,s:{s:i}}", "graph", sym_graph(), "budget", "1GB", "wait", 30, "dims",
                                  "batch", 64),
                        &o),
                   200);
  ck_assert_str_eq(jstr(o, "status"), "done");
  snprintf(id64, sizeof(id64), "%s", jstr(o, "id"));
  res = json_object_get(o, "result");
  ck_assert(json_is_true(json_object_get(res, "feasible")));
  ck_assert_int_eq(dim_of(res), 64);
  ck_assert(json_is_true(json_object_get(json_object_get(res, "forecast"), "extrapolated")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "forecast"), "bounded_nodes")), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(res, "warnings")), 1);
  ck_assert_str_eq(jstr(res, "graph_hash"), h64);
  ck_assert_str_eq(jstr(o, "graph_hash"), h64);
  json_decref(o);

  /* another binding: another graph, planned anew */
  ck_assert_int_eq(post(&s, "/v1/plans",
                        json_pack("{s:o,s:s,s:i,s:{s:i}}", "graph", sym_graph(), "budget", "1GB", "wait", 30, "dims",
                                  "batch", 32),
                        &o),
                   200);
  ck_assert_str_ne(jstr(o, "id"), id64);
  ck_assert_str_eq(jstr(o, "graph_hash"), h32);
  ck_assert_int_eq(dim_of(json_object_get(o, "result")), 32);
  json_decref(o);

  /* no dims: the default (4); the graph named by its own hash is then
   * bound again at 64, the first plan's graph: a cache hit */
  ck_assert_int_eq(post(&s, "/v1/plans",
                        json_pack("{s:o,s:s,s:i}", "graph", sym_graph(), "budget", "1GB", "wait", 30), &o),
                   200);
  ck_assert_int_eq(dim_of(json_object_get(o, "result")), 4);
  ck_assert(json_is_false(json_object_get(json_object_get(json_object_get(o, "result"), "forecast"), "extrapolated")));
  snprintf(sym_hash, sizeof(sym_hash), "%s", jstr(o, "graph_hash"));
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/plans",
                        json_pack("{s:s,s:s,s:i,s:{s:i}}", "graph_hash", sym_hash, "budget", "1GB", "wait", 30,
                                  "dims", "batch", 64),
                        &o),
                   200);
  ck_assert_str_eq(jstr(o, "cache"), "hit");
  ck_assert_str_eq(jstr(o, "graph_hash"), h64);
  ck_assert_int_eq(dim_of(json_object_get(o, "result")), 64);
  json_decref(o);
  /* and the bound graph is kept under its own hash */
  {
    char path[128];
    snprintf(path, sizeof(path), "/v1/graphs/%s", h64);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
    ck_assert_int_eq(dim_of(o), 64);
    json_decref(o);
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* Bad bindings are 400s naming the field. */
START_TEST(test_dims_errors) {
  mp_test_daemon_t s;
  json_t *o;
  const char *neg = "{\"format\": \"memplan.graph/2\", \"dims\": {\"batch\": {\"exported_at\": [8], \"default\": 8}},"
                    " \"nodes\": [{\"id\": \"a\", \"bytes\": 1}, {\"id\": \"b\", \"inputs\": [\"a\"],"
                    " \"bytes\": {\"terms\": [{\"c\": 1000, \"batch\": 1}, {\"c\": -5000}]}}]}";
  const char *shrinks = "{\"format\": \"memplan.graph/2\", \"dims\": {\"batch\": {\"exported_at\": [8], \"default\": 8}},"
                        " \"nodes\": [{\"id\": \"a\", \"bytes\": 1}, {\"id\": \"b\", \"inputs\": [\"a\"],"
                        " \"bytes\": {\"terms\": [{\"c\": -10, \"batch\": 1}, {\"c\": 100000}]}}]}";
  mp_test_daemon_start(&s, NULL, 0);
  ck_assert_int_eq(post(&s, "/v1/plans", json_pack("{s:o,s:i,s:{s:i}}", "graph", sym_graph(), "budget", 1000000,
                                                   "dims", "seq", 3), &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims.seq");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/plans", json_pack("{s:o,s:i,s:{s:i}}", "graph", sym_graph(), "budget", 1000000,
                                                   "dims", "batch", 0), &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims.batch");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:{s:s}}", "graph", sym_graph(), "budgets", 1000000,
                                                 "dims", "batch", "64"), &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims.batch");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:{s:i,s:i,s:i,s:i,s:i}}", "graph", sym_graph(),
                                                 "budgets", 1000000, "dims", "a", 1, "b", 1, "c", 1, "d", 1, "e", 1),
                        &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims");
  json_decref(o);
  /* a graph without dimensions */
  ck_assert_int_eq(post(&s, "/v1/plans", json_pack("{s:{s:s,s:[{s:s,s:i}]},s:i,s:{s:i}}", "graph", "format",
                                                   "memplan.graph/1", "nodes", "id", "a", "bytes", 10, "budget",
                                                   1000000, "dims", "batch", 2), &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims.batch");
  json_decref(o);
  /* a law that goes negative at the binding, in the inline graph */
  ck_assert_int_eq(post(&s, "/v1/plans", json_pack("{s:o,s:i,s:{s:i}}", "graph", json_loads(neg, 0, NULL), "budget",
                                                   1000000, "dims", "batch", 2), &o), 400);
  ck_assert_str_eq(err_path(o), "$.graph.nodes[1].bytes");
  ck_assert_str_eq(jstr(json_object_get(o, "error"), "message"), "law gives -3000 at batch=2");
  json_decref(o);
  /* maximize's own rules */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:s}", "graph", sym_graph(), "budgets", 1000000,
                                                 "maximize", "seq"), &o), 400);
  ck_assert_str_eq(err_path(o), "$.maximize");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i,i],s:s}", "graph", sym_graph(), "budgets", 1000000,
                                                 2000000, "maximize", "batch"), &o), 400);
  ck_assert_str_eq(err_path(o), "$.budgets");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:s,s:{s:i}}", "graph", sym_graph(), "budgets", 1000000,
                                                 "maximize", "batch", "dims", "batch", 3), &o), 400);
  ck_assert_str_eq(err_path(o), "$.dims.batch");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:i}", "graph", sym_graph(), "budgets", 1000000,
                                                 "max_value", 3), &o), 400);
  ck_assert_str_eq(err_path(o), "$.max_value");
  json_decref(o);
  /* the search starts at the min, where this law is negative */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:s}", "graph", json_loads(neg, 0, NULL), "budgets",
                                                 1000000, "maximize", "batch"), &o), 400);
  ck_assert_str_eq(err_path(o), "$.graph.nodes[1].bytes");
  ck_assert_str_eq(jstr(json_object_get(o, "error"), "message"), "law gives -4000 at batch=1");
  json_decref(o);
  /* a size that shrinks as the batch grows: no monotone search */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:s}", "graph", json_loads(shrinks, 0, NULL), "budgets",
                                                 1000000, "maximize", "batch"), &o), 400);
  ck_assert_str_eq(err_path(o), "$.maximize");
  ck_assert_ptr_nonnull(strstr(jstr(json_object_get(o, "error"), "message"), "$.nodes[1].bytes: the law has a negative coefficient on batch"));
  json_decref(o);
  /* the frontier route's query */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i]}", "graph", sym_graph(), "budgets", 1000000), &o), 200);
  {
    char path[200];
    snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?dims=seq:3", jstr(o, "graph_hash"));
    json_decref(o);
    ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 400);
    ck_assert_str_eq(err_path(o), "?dims.seq");
    json_decref(o);
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

/* /v1/fit and the frontier at a binding; and maximize, whose answer is the
 * planner's own search's: the plan at the value fits, the next value's
 * least feasible budget is above the budget. */
START_TEST(test_fit_frontier_maximize) {
  mp_test_daemon_t s;
  json_t *o, *plan, *next;
  mp_graph_t *g = NULL;
  mp_maximize_t m;
  mp_plan_options_t po;
  mp_binding_t none;
  mp_error_t err;
  char path[200], h8[65];
  const uint64_t budget = 200000000;
  int64_t value;
  bound_hash(8, h8);
  mp_test_daemon_start(&s, NULL, 0);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[s,i],s:{s:i}}", "graph", sym_graph(), "budgets", "1GB",
                                                 1000, "dims", "batch", 8), &o), 200);
  ck_assert_int_eq(dim_of(o), 8);
  ck_assert_str_eq(jstr(o, "graph_hash"), h8);
  ck_assert(json_is_true(json_object_get(json_array_get(json_object_get(o, "budgets"), 0), "fits")));
  ck_assert(json_is_false(json_object_get(json_array_get(json_object_get(o, "budgets"), 1), "fits")));
  /* the frontier of the symbolic graph at batch=8 is that of the bound graph */
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i]}", "graph", sym_graph(), "budgets", 1000), &o), 200);
  snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?dims=batch:8&wait=30", jstr(o, "graph_hash"));
  json_decref(o);
  ck_assert_int_eq(mp_test_daemon_http(&s, "GET", path, NULL, NULL, &o, NULL), 200);
  ck_assert_int_eq(dim_of(o), 8);
  ck_assert_str_eq(jstr(o, "graph_hash"), h8);
  ck_assert(json_array_size(json_object_get(o, "points")) > 0);
  json_decref(o);

  /* maximize */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[I],s:s}", "graph", sym_graph(), "budgets",
                                                 (json_int_t)budget, "maximize", "batch"), &o), 200);
  ck_assert_str_eq(jstr(o, "maximize"), "batch");
  plan = json_object_get(o, "plan");
  next = json_object_get(o, "next");
  ck_assert(json_is_true(json_object_get(plan, "feasible")));
  ck_assert(json_integer_value(json_object_get(plan, "peak_bytes")) <= (json_int_t)budget);
  ck_assert_int_eq(dim_of(plan), json_integer_value(json_object_get(o, "value")));
  ck_assert_int_eq(json_integer_value(json_object_get(next, "value")), json_integer_value(json_object_get(o, "value")) + 1);
  ck_assert(json_integer_value(json_object_get(next, "min_feasible_budget")) > (json_int_t)budget);
  /* the planner's search gives the same value */
  ck_assert_int_eq(mp_graph_load_file(SYM_MLP, MP_FORMAT_AUTO, NULL, &g, NULL, &err), 0);
  mp_plan_options_init(&po);
  po.budget = budget;
  mp_binding_init(&none, "$.dims");
  ck_assert_int_eq(mp_maximize(g, &none, "batch", 0, &po, NULL, &m, &err), 0);
  ck_assert_int_eq(m.value, json_integer_value(json_object_get(o, "value")));
  ck_assert_uint_eq(m.next_min_feasible_budget, json_integer_value(json_object_get(next, "min_feasible_budget")));
  value = m.value;
  mp_maximize_free(&m);
  mp_graph_free(g);
  json_decref(o);
  /* asked again: the cache; with a limit below the answer: the limit */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[I],s:s}", "graph", sym_graph(), "budgets",
                                                 (json_int_t)budget, "maximize", "batch"), &o), 200);
  ck_assert_str_eq(jstr(o, "cache"), "hit");
  json_decref(o);
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[I],s:s,s:i}", "graph", sym_graph(), "budgets",
                                                 (json_int_t)budget, "maximize", "batch", "max_value", 5), &o), 200);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "value")), 5);
  ck_assert(json_is_null(json_object_get(o, "next")));
  ck_assert_ptr_nonnull(strstr(jstr(o, "reason"), "the limit"));
  json_decref(o);
  /* nothing fits: value 0 and why */
  ck_assert_int_eq(post(&s, "/v1/fit", json_pack("{s:o,s:[i],s:s}", "graph", sym_graph(), "budgets", 1000,
                                                 "maximize", "batch"), &o), 200);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "value")), 0);
  ck_assert(json_is_null(json_object_get(o, "plan")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "next"), "value")), 1);
  ck_assert_ptr_nonnull(strstr(jstr(o, "reason"), "does not fit"));
  json_decref(o);
  /* the CLI asks the daemon the same question, with --dim for another
   * dimension refused by this graph */
  {
    char cmd[600], *text = NULL;
    json_t *c;
    snprintf(cmd, sizeof(cmd), "%s plan " SYM_MLP " --budget %llu --maximize batch --summary --compact --server http://127.0.0.1:%d 2>/dev/null",
             mp_test_cli(), (unsigned long long)budget, s.port);
    ck_assert_int_eq(mp_test_run(cmd, &text), 0);
    c = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(json_integer_value(json_object_get(c, "value")), value);
    ck_assert_ptr_null(json_object_get(c, "cache"));
    ck_assert_ptr_null(json_object_get(json_object_get(c, "plan"), "schedule"));
    json_decref(c);
    free(text);
    snprintf(cmd, sizeof(cmd), "%s plan " SYM_MLP " --budget 1GB --maximize batch --dim seq=2 --server http://127.0.0.1:%d 2>&1",
             mp_test_cli(), s.port);
    ck_assert_int_eq(mp_test_run(cmd, &text), 2);
    ck_assert_ptr_nonnull(strstr(text, "$.dims.seq"));
    free(text);
  }
  mp_test_daemon_cleanup(&s);
}
END_TEST

Suite *suite_forecast_server(void) {
  Suite *s = suite_create("forecast_server");
  TCase *tc = tcase_create("daemon");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_plans_dims);
  tcase_add_test(tc, test_dims_errors);
  tcase_add_test(tc, test_fit_frontier_maximize);
  suite_add_tcase(s, tc);
  return s;
}
