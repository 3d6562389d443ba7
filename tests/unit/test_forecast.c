/* test_forecast.c - graphs with symbolic dimensions (memplan.graph/2,
 * planner/dims.h): reading and writing the laws, binding, the errors that
 * name their field, the forecast facts and the CLI's --dim. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dims.h"
#include "dims_json.h"
#include "formats.h"
#include "../layered_dag.h"
#include "maximize.h"
#include "plan.h"
#include "suites.h"
#include "test_util.h"

#define SYM_MLP "tests/graphs/sym_mlp.json"

static mp_graph_t *load_text(const char *text, mp_error_t *err) {
  mp_graph_t *g = NULL;
  mp_error_clear(err);
  mp_graph_load_buffer(text, strlen(text), MP_FORMAT_NATIVE, NULL, NULL, &g, NULL, err);
  return g;
}

static mp_graph_t *load_file(const char *path) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  mp_error_clear(&err);
  ck_assert_msg(mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) == 0, "%s: %s: %s", path, err.path,
                err.message);
  return g;
}

static const mp_node_t *node(const mp_graph_t *g, const char *id) {
  long v = mp_graph_find(g, id);
  ck_assert_msg(v >= 0, "no node %s", id);
  return &g->nodes[v];
}

static mp_graph_t *bind1(const mp_graph_t *g, const char *name, int64_t value) {
  mp_binding_t b;
  mp_graph_t *out = NULL;
  mp_error_t err;
  mp_binding_init(&b, "$.dims");
  mp_error_clear(&err);
  ck_assert_int_eq(mp_binding_set(&b, name, value, &err), 0);
  ck_assert_msg(mp_graph_bind(g, &b, NULL, &out, &err) == 0, "%s: %s", err.path, err.message);
  return out;
}

static void hash_of(const mp_graph_t *g, char h[65]) { ck_assert_int_eq(mp_graph_hash(g, h), 0); }

/* The shipped example at its default (batch=4) and bound at 64: every law's
 * field takes its value there, plain fields stay, an omitted bwd_time
 * follows the time law (twice it). */
START_TEST(test_read_and_bind) {
  mp_graph_t *g = load_file(SYM_MLP), *b;
  size_t bounded;
  int extra;
  ck_assert_ptr_nonnull(g->sym);
  ck_assert_uint_eq(g->sym->n_dims, 1);
  ck_assert_str_eq(g->sym->dims[0].name, "batch");
  ck_assert_int_eq(g->sym->dims[0].value, 4);
  ck_assert_uint_eq(node(g, "fc1")->bytes, 4 * 524288);
  ck_assert_uint_eq(node(g, "fc2")->bytes, 4 * 526336 + 8192);
  ck_assert_uint_eq(node(g, "x")->bytes, 4 * 3072);
  ck_assert_uint_eq(node(g, "fc3")->workspace_bytes, 4 * 65536);
  ck_assert_uint_eq(node(g, "drop")->saved_bytes, 4 * 131072);
  ck_assert_double_eq_tol(node(g, "fc1")->time, 1.1, 1e-12);
  ck_assert_double_eq_tol(node(g, "fc1")->bwd_time, 2.2, 1e-12);
  ck_assert_double_eq_tol(node(g, "fc4")->bwd_time, 0.24, 1e-12);
  ck_assert_uint_eq(node(g, "loss")->bytes, 4);
  ck_assert_uint_eq(g->param_bytes, 4194304);
  ck_assert_uint_eq(g->n_warnings, 1);
  mp_graph_forecast(g, &bounded, &extra);
  ck_assert_uint_eq(bounded, 1);
  ck_assert_int_eq(extra, 0);

  b = bind1(g, "batch", 64);
  ck_assert_int_eq(b->sym->dims[0].value, 64);
  ck_assert_uint_eq(node(b, "fc1")->bytes, 64 * 524288);
  ck_assert_uint_eq(node(b, "fc2")->bytes, 64 * 526336 + 8192);
  ck_assert_uint_eq(node(b, "fc3")->workspace_bytes, 64 * 65536);
  ck_assert_uint_eq(node(b, "drop")->saved_bytes, 64 * 131072);
  ck_assert_double_eq_tol(node(b, "fc1")->time, 16.1, 1e-12);
  ck_assert_double_eq_tol(node(b, "fc1")->bwd_time, 32.2, 1e-12);
  ck_assert_double_eq_tol(node(b, "fc4")->bwd_time, 0.84, 1e-12);
  ck_assert(node(b, "fc4")->time == 0.1);
  ck_assert_uint_eq(node(b, "loss")->bytes, 4);
  ck_assert_uint_eq(b->n_nodes, g->n_nodes);
  ck_assert_uint_eq(b->n_warnings, 1);
  ck_assert_uint_eq(b->activation_bytes,
                    64 * (524288 * 5 + 526336 + 40) + 8192 + 4); /* x is an input: not an activation */
  mp_graph_forecast(b, &bounded, &extra);
  ck_assert_uint_eq(bounded, 1);
  ck_assert_int_eq(extra, 1); /* 64 lies outside [2, 4] */
  mp_graph_free(b);
  /* batch=3 lies inside what was exported */
  b = bind1(g, "batch", 3);
  mp_graph_forecast(b, &bounded, &extra);
  ck_assert_int_eq(extra, 0);
  mp_graph_free(b);
  mp_graph_free(g);
}
END_TEST

/* The hash names the graph and its binding: binding at the default gives
 * the same graph, any other value another hash; writing and reading back
 * keeps the hash (laws, dims, warnings and values all survive). */
START_TEST(test_hash_and_round_trip) {
  mp_graph_t *g = load_file(SYM_MLP), *same = bind1(g, "batch", 4), *b = bind1(g, "batch", 5), *back;
  char h[65], hs[65], hb[65], hback[65];
  json_t *doc;
  char *text;
  mp_error_t err;
  hash_of(g, h);
  hash_of(same, hs);
  hash_of(b, hb);
  ck_assert_str_eq(h, hs);
  ck_assert_str_ne(h, hb);
  /* b written out reads back as b: a graph/2 whose default is 5 */
  doc = mp_graph_to_json(b);
  ck_assert_ptr_nonnull(doc);
  ck_assert_str_eq(json_string_value(json_object_get(doc, "format")), "memplan.graph/2");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "dims"), "batch"),
                                                      "default")),
                   5);
  text = json_dumps(doc, JSON_COMPACT);
  back = load_text(text, &err);
  ck_assert_msg(back != NULL, "%s: %s", err.path, err.message);
  hash_of(back, hback);
  ck_assert_str_eq(hb, hback);
  ck_assert_uint_eq(node(back, "fc2")->bytes, 5 * 526336 + 8192);
  ck_assert_uint_eq(back->n_warnings, 1);
  free(text);
  json_decref(doc);
  mp_graph_free(back);
  mp_graph_free(b);
  mp_graph_free(same);
  mp_graph_free(g);
}
END_TEST

/* A graph/2 with nothing symbolic is a graph/1: same hash, written as /1. */
START_TEST(test_graph2_without_dims_is_graph1) {
  const char *g1 = "{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 10, \"time\": 1},"
                   " {\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 20}]}";
  const char *g2 = "{\"format\": \"memplan.graph/2\", \"nodes\": [{\"id\": \"a\", \"bytes\": 10, \"time\": 1},"
                   " {\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 20}]}";
  mp_error_t err;
  mp_graph_t *a = load_text(g1, &err), *b = load_text(g2, &err);
  char ha[65], hb[65];
  json_t *doc;
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_null(b->sym);
  hash_of(a, ha);
  hash_of(b, hb);
  ck_assert_str_eq(ha, hb);
  doc = mp_graph_to_json(b);
  ck_assert_str_eq(json_string_value(json_object_get(doc, "format")), "memplan.graph/1");
  json_decref(doc);
  mp_graph_free(a);
  mp_graph_free(b);
}
END_TEST

/* Two dimensions with a quadratic term (attention's seq^2), bound one at a
 * time and both at once; the dims' key order does not matter. */
START_TEST(test_two_dims_quadratic) {
  const char *doc =
      "{\"format\": \"memplan.graph/2\", \"dims\": {\"seq\": {\"exported_at\": [16, 32], \"default\": 32},"
      " \"batch\": {\"exported_at\": [2, 4], \"default\": 2, \"min\": 2}},"
      " \"nodes\": [{\"id\": \"q\", \"bytes\": {\"terms\": [{\"c\": 256, \"batch\": 1, \"seq\": 1}]}},"
      "  {\"id\": \"att\", \"inputs\": [\"q\"], \"bytes\": {\"terms\": [{\"c\": 4, \"batch\": 1, \"seq\": 2},"
      "   {\"c\": 64}]}, \"time\": {\"terms\": [{\"c\": 1e-6, \"batch\": 1, \"seq\": 2}]}}]}";
  mp_error_t err;
  mp_graph_t *g = load_text(doc, &err), *b;
  mp_binding_t bd;
  ck_assert_msg(g != NULL, "%s: %s", err.path, err.message);
  ck_assert_str_eq(g->sym->dims[0].name, "batch"); /* sorted by name */
  ck_assert_uint_eq(node(g, "att")->bytes, 4 * 2 * 32 * 32 + 64);
  mp_binding_init(&bd, "$.dims");
  ck_assert_int_eq(mp_binding_set(&bd, "seq", 1024, &err), 0);
  ck_assert_int_eq(mp_binding_set(&bd, "batch", 8, &err), 0);
  ck_assert_int_eq(mp_graph_bind(g, &bd, NULL, &b, &err), 0);
  ck_assert_uint_eq(node(b, "q")->bytes, 256 * 8 * 1024);
  ck_assert_uint_eq(node(b, "att")->bytes, 4ull * 8 * 1024 * 1024 + 64);
  ck_assert_double_eq_tol(node(b, "att")->time, 1e-6 * 8 * 1024 * 1024, 1e-9);
  mp_graph_free(b);
  /* below batch's min of 2 */
  mp_binding_init(&bd, "$.dims");
  ck_assert_int_eq(mp_binding_set(&bd, "batch", 1, &err), 0);
  ck_assert_int_eq(mp_graph_bind(g, &bd, NULL, &b, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims.batch");
  ck_assert_ptr_nonnull(strstr(err.message, "at least 2"));
  mp_graph_free(g);
}
END_TEST

/* Bad documents: each error names its field. */
static void expect_bad(const char *doc, int code, const char *path, const char *words) {
  mp_error_t err;
  mp_graph_t *g = load_text(doc, &err);
  ck_assert_msg(g == NULL, "accepted: %s", doc);
  ck_assert_msg(err.code == code, "%s: code %d, expected %d (%s)", doc, err.code, code, err.message);
  ck_assert_msg(strcmp(err.path, path) == 0, "%s: path %s, expected %s", doc, err.path, path);
  ck_assert_msg(strstr(err.message, words) != NULL, "%s: message '%s' lacks '%s'", doc, err.message, words);
}

#define G2(dims, nodes) "{\"format\": \"memplan.graph/2\", \"dims\": " dims ", \"nodes\": [" nodes "]}"
#define BATCH "{\"batch\": {\"exported_at\": [2, 4], \"default\": 4}}"

START_TEST(test_bad_documents) {
  expect_bad("{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 1}]}}]}",
             MP_EINVAL, "$.nodes[0].bytes", "memplan.graph/2");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 1, \"seq\": 1}]}}"), MP_EINVAL,
             "$.nodes[0].bytes.terms[0].seq", "unknown dimension");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 1, \"batch\": 3}]}}"), MP_EINVAL,
             "$.nodes[0].bytes.terms[0].batch", "exponent");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 1.5, \"batch\": 1}]}}"), MP_EINVAL,
             "$.nodes[0].bytes.terms[0].c", "integer");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"batch\": 1}]}}"), MP_EINVAL,
             "$.nodes[0].bytes.terms[0].c", "missing");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": []}}"), MP_EINVAL, "$.nodes[0].bytes.terms",
             "1 to 16");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"termz\": []}}"), MP_EINVAL, "$.nodes[0].bytes.termz",
             "unknown field");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 100, \"batch\": 1}, {\"c\": -500}]}}"),
             MP_EINVAL, "$.nodes[0].bytes", "law gives -100 at batch=4");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": {\"terms\": [{\"c\": 4611686018427387904, \"batch\": 1}]}}"),
             MP_EOVERFLOW, "$.nodes[0].bytes", "overflows 64 bits at batch=4");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": 1, \"time\": {\"terms\": [{\"c\": -1, \"batch\": 1}]}}"),
             MP_EINVAL, "$.nodes[0].time", "law gives -4");
  expect_bad(G2(BATCH, "{\"id\": \"a\", \"bytes\": 1, \"time\": {\"terms\": [{\"c\": 1}], \"bound\": 1}}"),
             MP_EINVAL, "$.nodes[0].time.bound", "boolean");
  expect_bad(G2("{\"Batch\": {\"exported_at\": [2], \"default\": 4}}", "{\"id\": \"a\", \"bytes\": 1}"), MP_EINVAL,
             "$.dims.Batch", "a-z");
  expect_bad(G2("{\"batch\": {\"exported_at\": [2], \"default\": 4, \"min\": 8}}", "{\"id\": \"a\", \"bytes\": 1}"),
             MP_EINVAL, "$.dims.batch.default", "from 8");
  expect_bad(G2("{\"batch\": {\"default\": 4}}", "{\"id\": \"a\", \"bytes\": 1}"), MP_EINVAL,
             "$.dims.batch.exported_at", "missing");
  expect_bad(G2("{\"batch\": {\"exported_at\": [], \"default\": 4}}", "{\"id\": \"a\", \"bytes\": 1}"), MP_EINVAL,
             "$.dims.batch.exported_at", "1 to 32");
  expect_bad(G2("{\"batch\": {\"exported_at\": [2], \"default\": 4, \"max\": 9}}", "{\"id\": \"a\", \"bytes\": 1}"),
             MP_EINVAL, "$.dims.batch.max", "unknown field");
  expect_bad(G2("{\"a\": {\"exported_at\": [2], \"default\": 4}, \"b\": {\"exported_at\": [2], \"default\": 4},"
                " \"c\": {\"exported_at\": [2], \"default\": 4}, \"d\": {\"exported_at\": [2], \"default\": 4},"
                " \"e\": {\"exported_at\": [2], \"default\": 4}}",
                "{\"id\": \"a\", \"bytes\": 1}"),
             MP_ELIMIT, "$.dims", "at most 4");
  expect_bad(G2("{\"a\": {\"exported_at\": [2], \"default\": 4}, \"b\": {\"exported_at\": [2], \"default\": 4}}",
                "{\"id\": \"x\", \"bytes\": {\"terms\": [{\"c\": 1, \"a\": 2, \"b\": 2}]}}"),
             MP_EINVAL, "$.nodes[0].bytes.terms[0]", "total degree");
  expect_bad("{\"format\": \"memplan.graph/2\", \"warnings\": [3], \"nodes\": [{\"id\": \"a\", \"bytes\": 1}]}",
             MP_EINVAL, "$.warnings[0]", "string");
  expect_bad("{\"format\": \"memplan.graph/2\", \"dimz\": {}, \"nodes\": [{\"id\": \"a\", \"bytes\": 1}]}", MP_EINVAL,
             "$.dimz", "unknown field");
  expect_bad("{\"format\": \"memplan.graph/3\", \"nodes\": [{\"id\": \"a\", \"bytes\": 1}]}", MP_EINVAL, "$.format",
             "memplan.graph/2");
}
END_TEST

/* A law that is fine at the default may go negative at a binding: the
 * error names the node's field in the document and the binding. */
START_TEST(test_bind_errors) {
  const char *doc = G2("{\"batch\": {\"exported_at\": [8], \"default\": 8}}",
                       "{\"id\": \"a\", \"bytes\": 1}, {\"id\": \"b\", \"inputs\": [\"a\"],"
                       " \"bytes\": {\"terms\": [{\"c\": 1000, \"batch\": 1}, {\"c\": -5000}]}}");
  mp_error_t err;
  mp_graph_t *g = load_text(doc, &err), *b = NULL, *plain;
  mp_binding_t bd;
  json_t *j;
  ck_assert_msg(g != NULL, "%s", err.message);
  mp_binding_init(&bd, "$.dims");
  ck_assert_int_eq(mp_binding_set(&bd, "batch", 2, &err), 0);
  ck_assert_int_eq(mp_graph_bind(g, &bd, NULL, &b, &err), MP_EINVAL);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(err.path, "$.nodes[1].bytes");
  ck_assert_str_eq(err.message, "law gives -3000 at batch=2");
  /* a dimension the graph lacks */
  mp_binding_init(&bd, "$.dims");
  ck_assert_int_eq(mp_binding_set(&bd, "seq", 2, &err), 0);
  ck_assert_int_eq(mp_graph_bind(g, &bd, NULL, &b, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims.seq");
  ck_assert_ptr_nonnull(strstr(err.message, "its dimensions: batch"));
  /* a binding's own checks */
  ck_assert_int_eq(mp_binding_set(&bd, "seq", 3, &err), MP_EINVAL); /* twice */
  ck_assert_int_eq(mp_binding_set(&bd, "x", 0, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims.x");
  ck_assert_int_eq(mp_binding_set(&bd, "x", MP_DIM_VALUE_MAX + 1, &err), MP_EINVAL);
  ck_assert_int_eq(mp_binding_set(&bd, "Bad", 1, &err), MP_EINVAL);
  /* from JSON: values must be integers, at most 4 names */
  mp_binding_init(&bd, "$.dims");
  j = json_pack("{s:f}", "batch", 2.5);
  ck_assert_int_eq(mp_binding_from_json(j, &bd, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims.batch");
  json_decref(j);
  mp_binding_init(&bd, "$.dims");
  j = json_pack("{s:i,s:i,s:i,s:i,s:i}", "a", 1, "b", 1, "c", 1, "d", 1, "e", 1);
  ck_assert_int_eq(mp_binding_from_json(j, &bd, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims");
  json_decref(j);
  mp_binding_init(&bd, "--dim");
  ck_assert_int_eq(mp_binding_parse_arg(&bd, "batch", &err), MP_EINVAL);
  ck_assert_int_eq(mp_binding_parse_arg(&bd, "batch=12x", &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "--dim batch");
  ck_assert_int_eq(mp_binding_parse_arg(&bd, "batch=12", &err), 0);
  ck_assert_int_eq(bd.values[0], 12);
  /* a graph without dimensions accepts no binding */
  plain = load_text("{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 1}]}", &err);
  ck_assert_int_eq(mp_graph_bind(plain, &bd, NULL, &b, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "--dim batch");
  mp_graph_free(plain);
  mp_graph_free(g);
}
END_TEST

/* The answer fields: "dims" is the full binding, "forecast" the facts. */
START_TEST(test_answer_fields) {
  mp_graph_t *g = load_file(SYM_MLP), *b = bind1(g, "batch", 64);
  json_t *o = json_object();
  ck_assert_int_eq(mp_forecast_json_add(o, b), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 64);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "forecast"), "bounded_nodes")), 1);
  ck_assert(json_is_true(json_object_get(json_object_get(o, "forecast"), "extrapolated")));
  ck_assert_uint_eq(json_array_size(json_object_get(o, "warnings")), 1);
  json_decref(o);
  mp_graph_free(b);
  mp_graph_free(g);
}
END_TEST

/* A symbolic layered DAG: mp_tl_layered_dag's graph (n activations, seed)
 * with every size a law in the batch (exported at 2-4, default 4): linear,
 * linear plus a constant, or with a quadratic term, and linear times; the
 * coefficients from the node's size at the default, all >= 0. */
static mp_graph_t *sym_layered(size_t n, uint64_t seed) {
  mp_graph_t *g = mp_tl_layered_dag(n, seed, 30), *out = NULL;
  json_t *doc = mp_graph_to_json(g), *nd;
  uint64_t rng = seed * 7919 + 1;
  mp_error_t err;
  size_t i;
  char *text;
  ck_assert_ptr_nonnull(doc);
  json_object_set_new(doc, "format", json_string("memplan.graph/2"));
  json_object_set_new(doc, "dims", json_pack("{s:{s:[i,i,i],s:i}}", "batch", "exported_at", 2, 3, 4, "default", 4));
  json_array_foreach(json_object_get(doc, "nodes"), i, nd) {
    json_int_t b = json_integer_value(json_object_get(nd, "bytes"));
    double t = json_number_value(json_object_get(nd, "time"));
    json_t *law;
    switch (mp_tl_next(&rng) % 3) {
    case 0: law = json_pack("{s:[{s:I,s:i}]}", "terms", "c", b / 4, "batch", 1); break;
    case 1: law = json_pack("{s:[{s:I,s:i},{s:I}]}", "terms", "c", b / 8, "batch", 1, "c", b / 2); break;
    default: law = json_pack("{s:[{s:I,s:i},{s:I,s:i}]}", "terms", "c", b / 64, "batch", 2, "c", b / 8, "batch", 1);
    }
    json_object_set_new(nd, "bytes", law);
    if (t > 0) json_object_set_new(nd, "time", json_pack("{s:[{s:f,s:i},{s:f}]}", "terms", "c", t / 4, "batch", 1, "c", t / 10));
  }
  text = json_dumps(doc, JSON_COMPACT);
  out = load_text(text, &err);
  ck_assert_msg(out != NULL, "%s: %s", err.path, err.message);
  free(text);
  json_decref(doc);
  mp_graph_free(g);
  return out;
}

/* Feasibility at a fixed budget is monotone in the batch: over symbolic
 * graphs (the shipped MLP and four random layered DAGs) and five budgets
 * each (a quarter to four times plain backpropagation's peak at the
 * default), once a batch does not fit, no larger one does, and the least
 * feasible budget of those that do not fit never falls. mp_maximize then
 * answers the last batch that fits: its plan fits (simulated again here),
 * the next batch's plan does not, and its least feasible budget is above
 * the budget. */
START_TEST(test_maximize_monotone) {
  static const double fractions[] = {0.25, 0.5, 1.0, 2.0, 4.0};
  const int64_t scan = 40;
  size_t gi, bi;
  for (gi = 0; gi < 5; gi++) {
    mp_graph_t *g = gi == 0 ? load_file(SYM_MLP) : sym_layered(14 + 4 * gi, gi);
    mp_plan_options_t po;
    mp_plan_result_t r;
    mp_error_t err;
    uint64_t peak4;
    mp_plan_options_init(&po);
    po.solver = MP_SOLVER_NONE;
    ck_assert_int_eq(mp_plan(g, &po, &r, &err), 0);
    peak4 = r.sim.peak_bytes;
    mp_plan_result_free(&r);
    for (bi = 0; bi < sizeof(fractions) / sizeof(fractions[0]); bi++) {
      int64_t v, last_fit = 0;
      uint64_t last_mfb = 0;
      mp_maximize_t m;
      mp_binding_t none;
      mp_plan_options_init(&po);
      po.budget = (uint64_t)(fractions[bi] * (double)peak4);
      for (v = 1; v <= scan; v++) {
        mp_graph_t *b = bind1(g, "batch", v);
        int fits;
        ck_assert_int_eq(mp_plan(b, &po, &r, &err), 0);
        fits = r.feasible && r.schedule != NULL;
        ck_assert_msg(!fits || last_fit == v - 1, "graph %zu budget %llu: batch %lld fits after %lld did not", gi,
                      (unsigned long long)po.budget, (long long)v, (long long)last_fit + 1);
        if (fits) {
          last_fit = v;
        } else if (r.min_feasible_budget) {
          ck_assert_msg(r.min_feasible_budget > po.budget, "min feasible budget %llu within the budget",
                        (unsigned long long)r.min_feasible_budget);
          ck_assert_msg(r.min_feasible_budget >= last_mfb, "graph %zu: least feasible budget falls at batch %lld", gi,
                        (long long)v);
          last_mfb = r.min_feasible_budget;
        }
        mp_plan_result_free(&r);
        mp_graph_free(b);
        if (!fits && v > last_fit + 3) break; /* a few past the last fit */
      }
      mp_binding_init(&none, "$.dims");
      ck_assert_int_eq(mp_maximize(g, &none, "batch", 0, &po, NULL, &m, &err), 0);
      if (last_fit < scan) ck_assert_int_eq(m.value, last_fit);
      if (m.value > 0) {
        mp_sim_report_t rep;
        mp_graph_t *next;
        ck_assert_int_eq(m.graph->sym->dims[0].value, m.value);
        mp_test_simulate(m.graph, m.plan.schedule, NULL, &rep);
        ck_assert_uint_le(rep.peak_bytes, po.budget);
        mp_sim_report_free(&rep);
        ck_assert_int_eq(m.next_value, m.value + 1);
        next = bind1(g, "batch", m.next_value);
        ck_assert_int_eq(mp_plan(next, &po, &r, &err), 0);
        ck_assert(!r.feasible);
        mp_plan_result_free(&r);
        mp_graph_free(next);
      } else {
        ck_assert_int_eq(m.next_value, 1);
      }
      ck_assert_uint_gt(m.next_min_feasible_budget, po.budget);
      ck_assert_uint_le(m.n_plans, 2 * 32 + 2);
      mp_maximize_free(&m);
    }
    mp_graph_free(g);
  }
}
END_TEST

/* mp_maximize's refusals and its limit. */
START_TEST(test_maximize_edges) {
  mp_graph_t *g = load_file(SYM_MLP);
  const char *shrinks = G2("{\"batch\": {\"exported_at\": [8], \"default\": 8}}",
                           "{\"id\": \"a\", \"bytes\": 1}, {\"id\": \"b\", \"inputs\": [\"a\"],"
                           " \"bytes\": {\"terms\": [{\"c\": -10, \"batch\": 1}, {\"c\": 100000}]}}");
  mp_graph_t *s;
  mp_plan_options_t po;
  mp_maximize_t m;
  mp_binding_t b;
  mp_error_t err;
  mp_plan_options_init(&po);
  po.budget = 1000000000;
  mp_binding_init(&b, "$.dims");
  ck_assert_int_eq(mp_maximize(g, &b, "seq", 0, &po, NULL, &m, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.maximize");
  ck_assert_int_eq(mp_binding_set(&b, "batch", 3, &err), 0);
  ck_assert_int_eq(mp_maximize(g, &b, "batch", 0, &po, NULL, &m, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.dims.batch");
  mp_binding_init(&b, "$.dims");
  /* the limit fits: it is the answer, nothing larger is tried */
  ck_assert_int_eq(mp_maximize(g, &b, "batch", 10, &po, NULL, &m, &err), 0);
  ck_assert_int_eq(m.value, 10);
  ck_assert_int_eq(m.next_value, 0);
  mp_maximize_free(&m);
  /* a huge budget: the search stops at 2^31 or where sizes pass 64 bits */
  po.budget = UINT64_MAX / 2;
  ck_assert_int_eq(mp_maximize(g, &b, "batch", 0, &po, NULL, &m, &err), 0);
  ck_assert(m.value > 1000000);
  mp_maximize_free(&m);
  s = load_text(shrinks, &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(mp_maximize(s, &b, "batch", 0, &po, NULL, &m, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.nodes[1].bytes");
  mp_graph_free(s);
  mp_graph_free(g);
}
END_TEST

/* Run `memplan ARGS`; stdout parsed as JSON into *out when given. */
static int cli(const char *args, json_t **out) {
  char cmd[2048];
  char *text = NULL;
  int rc;
  snprintf(cmd, sizeof(cmd), "%s %s%s", mp_test_cli(), args, strstr(args, "2>") ? "" : " 2>/dev/null");
  rc = mp_test_run(cmd, &text);
  if (out) *out = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  return rc;
}

/* Run `memplan ARGS 2>&1` and return its exit status, the output in *text. */
static int cli_text(const char *args, char **text) {
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "%s %s 2>&1", mp_test_cli(), args);
  return mp_test_run(cmd, text);
}

/* The CLI binds with --dim on every command that loads a graph, and its
 * answers echo the full binding; a bad --dim is a usage error naming it. */
START_TEST(test_cli_dim) {
  json_t *o, *p;
  char *text = NULL;
  ck_assert_int_eq(cli("plan " SYM_MLP " --budget 1GB --dim batch=64 --summary", &o), 0);
  ck_assert_ptr_nonnull(o);
  ck_assert(json_is_true(json_object_get(o, "feasible")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 64);
  ck_assert(json_is_true(json_object_get(json_object_get(o, "forecast"), "extrapolated")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "forecast"), "bounded_nodes")), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(o, "warnings")), 1);
  /* the plan's graph is the bound one: inspect at the same binding agrees */
  ck_assert_int_eq(cli("inspect " SYM_MLP " --dim batch=64", &p), 0);
  ck_assert_str_eq(json_string_value(json_object_get(o, "graph_hash")),
                   json_string_value(json_object_get(p, "graph_hash")));
  ck_assert_int_eq(json_integer_value(json_object_get(p, "activation_bytes")),
                   64 * (524288 * 5 + 526336 + 40) + 8192 + 4);
  json_decref(o);
  json_decref(p);
  /* without --dim: the default (4) */
  ck_assert_int_eq(cli("fit " SYM_MLP " --budgets 1GB", &o), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 4);
  ck_assert(json_is_false(json_object_get(json_object_get(o, "forecast"), "extrapolated")));
  json_decref(o);
  ck_assert_int_eq(cli("frontier " SYM_MLP " --dim batch=8", &o), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 8);
  json_decref(o);
  /* errors */
  ck_assert_int_eq(cli_text("inspect " SYM_MLP " --dim seq=3", &text), 2);
  ck_assert_ptr_nonnull(strstr(text, "--dim seq: the graph has no dimension seq"));
  free(text);
  ck_assert_int_eq(cli_text("plan " SYM_MLP " --budget 1GB --dim batch=0", &text), 2);
  ck_assert_ptr_nonnull(strstr(text, "--dim batch: a dimension's value must be a whole number from 1"));
  free(text);
  ck_assert_int_eq(cli("inspect tests/graphs/tiny_layered.json --dim batch=2", NULL), 2);
  /* a plan's schedule replayed by simulate at the same binding peaks where
   * the plan said; at a larger batch the same schedule peaks higher */
  {
    char dir[] = "/tmp/mp-forecast-XXXXXX", args[300];
    json_int_t peak8;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(args, sizeof(args), "plan " SYM_MLP " --budget 40MB --dim batch=8 > %s/p.json", dir);
    ck_assert_int_eq(cli(args, NULL), 0);
    snprintf(args, sizeof(args), "simulate " SYM_MLP " %s/p.json --dim batch=8", dir);
    ck_assert_int_eq(cli(args, &o), 0);
    peak8 = json_integer_value(json_object_get(o, "peak_bytes"));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 8);
    json_decref(o);
    snprintf(args, sizeof(args), "%s/p.json", dir);
    o = json_load_file(args, 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "peak_bytes")), peak8);
    json_decref(o);
    snprintf(args, sizeof(args), "simulate " SYM_MLP " %s/p.json --dim batch=16", dir);
    ck_assert_int_eq(cli(args, &o), 0);
    ck_assert_int_gt(json_integer_value(json_object_get(o, "peak_bytes")), peak8);
    json_decref(o);
    snprintf(args, sizeof(args), "%s/p.json", dir);
    unlink(args);
    rmdir(dir);
  }
  /* --maximize: the largest batch, its plan, the next batch's least budget */
  ck_assert_int_eq(cli("plan " SYM_MLP " --budget 15216800 --maximize batch --summary", &o), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "value")), 5);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "dims"), "batch")), 5);
  ck_assert(json_integer_value(json_object_get(json_object_get(o, "plan"), "peak_bytes")) <= 15216800);
  ck_assert_ptr_null(json_object_get(json_object_get(o, "plan"), "schedule"));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "next"), "value")), 6);
  ck_assert(json_integer_value(json_object_get(json_object_get(o, "next"), "min_feasible_budget")) > 15216800);
  json_decref(o);
  ck_assert_int_eq(cli("plan " SYM_MLP " --budget 1000 --maximize batch", &o), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(o, "value")), 0);
  json_decref(o);
  ck_assert_int_eq(cli_text("plan " SYM_MLP " --budget 1GB --maximize seq", &text), 2);
  ck_assert_ptr_nonnull(strstr(text, "--maximize: the graph has no dimension seq"));
  free(text);
  ck_assert_int_eq(cli("plan " SYM_MLP " --budget 1GB --max-value 3", NULL), 2);
}
END_TEST

Suite *suite_forecast(void) {
  Suite *s = suite_create("forecast");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_read_and_bind);
  tcase_add_test(tc, test_hash_and_round_trip);
  tcase_add_test(tc, test_graph2_without_dims_is_graph1);
  tcase_add_test(tc, test_two_dims_quadratic);
  tcase_add_test(tc, test_bad_documents);
  tcase_add_test(tc, test_bind_errors);
  tcase_add_test(tc, test_answer_fields);
  tcase_add_test(tc, test_cli_dim);
  tcase_add_test(tc, test_maximize_monotone);
  tcase_add_test(tc, test_maximize_edges);
  suite_add_tcase(s, tc);
  return s;
}
