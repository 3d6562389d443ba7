/* test_graph.c - the graph builder: validation errors, topological order,
 * adjacency, sums and the canonical hash, on graphs built through the API. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "suites.h"

typedef struct {
  const char *id;
  const char *inputs[4];
  uint64_t bytes;
  double time;
  mp_kind_t kind;
} tnode_t;

static int build(const tnode_t *ns, size_t n, mp_graph_t **out, mp_error_t *err) {
  mp_graph_t *g = mp_graph_new();
  size_t i;
  int rc = 0;
  for (i = 0; i < n && rc == 0; i++) {
    mp_node_spec_t s;
    char where[32];
    size_t k = 0;
    mp_node_spec_init(&s);
    snprintf(where, sizeof(where), "$.nodes[%zu]", i);
    s.id = ns[i].id;
    while (k < 4 && ns[i].inputs[k]) k++;
    s.inputs = ns[i].inputs;
    s.n_inputs = k;
    s.bytes = ns[i].bytes;
    s.time = ns[i].time;
    s.kind = ns[i].kind;
    s.where = where;
    rc = mp_graph_add_node(g, &s, NULL, err);
  }
  if (rc == 0) rc = mp_graph_finalize(g, NULL, err);
  if (rc != 0) {
    mp_graph_free(g);
    g = NULL;
  }
  *out = g;
  return rc;
}

START_TEST(test_topo_order_and_sums) {
  /* Listed out of order: c reads b reads a; x is a param. */
  tnode_t ns[] = {{"c", {"b", "x"}, 30, 3, 0},
                  {"b", {"a", "a"}, 20, 2, 0},
                  {"a", {0}, 10, 1, 0},
                  {"x", {0}, 1000, 0, MP_KIND_PARAM}};
  mp_graph_t *g;
  mp_error_t err;
  ck_assert_int_eq(build(ns, 4, &g, &err), 0);
  ck_assert_uint_eq(g->n_nodes, 4);
  ck_assert_uint_eq(g->n_activations, 3);
  ck_assert_uint_eq(g->activation_bytes, 60);
  ck_assert_uint_eq(g->const_bytes, 1000);
  ck_assert_double_eq(g->fwd_time, 6);
  ck_assert_double_eq(g->bwd_time, 12); /* default factor 2 */
  /* stable topological order: a (ready first), b, c needs x: x before c */
  ck_assert_str_eq(g->nodes[0].id, "a");
  ck_assert_str_eq(g->nodes[1].id, "b");
  ck_assert_str_eq(g->nodes[2].id, "x");
  ck_assert_str_eq(g->nodes[3].id, "c");
  ck_assert_uint_eq(g->n_edges, 3); /* a->b (twice, deduplicated), b->c, x->c */
  ck_assert_uint_eq(g->nodes[1].n_inputs, 2);
  ck_assert_uint_eq(mp_graph_npred(g, 1), 1);
  ck_assert_uint_eq(mp_graph_nsucc(g, 0), 1);
  ck_assert_uint_eq(mp_graph_npred(g, 3), 2);
  ck_assert_int_eq(mp_graph_find(g, "c"), 3);
  ck_assert_int_eq(mp_graph_find(g, "nope"), -1);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_errors) {
  mp_graph_t *g;
  mp_error_t err;
  tnode_t dup[] = {{"a", {0}, 1, 1, 0}, {"a", {0}, 1, 1, 0}};
  tnode_t unk[] = {{"a", {"zz"}, 1, 1, 0}};
  tnode_t cyc[] = {{"s", {0}, 1, 1, 0}, {"a", {"s", "c"}, 1, 1, 0}, {"b", {"a"}, 1, 1, 0},
                   {"c", {"b"}, 1, 1, 0}};
  tnode_t ovf[] = {{"a", {0}, UINT64_MAX, 1, 0}, {"b", {"a"}, 2, 1, 0}};
  tnode_t onlyp[] = {{"w", {0}, 1, 0, MP_KIND_PARAM}};
  tnode_t pin[] = {{"a", {0}, 1, 1, 0}, {"w", {"a"}, 1, 0, MP_KIND_PARAM}};

  ck_assert_int_eq(build(dup, 2, &g, &err), MP_EDUP);
  ck_assert_str_eq(err.path, "$.nodes[1].id");
  ck_assert_ptr_nonnull(strstr(err.message, "$.nodes[0]"));

  ck_assert_int_eq(build(unk, 1, &g, &err), MP_EUNKNOWN);
  ck_assert_str_eq(err.path, "$.nodes[0].inputs[0]");
  ck_assert_ptr_nonnull(strstr(err.message, "'zz'"));

  ck_assert_int_eq(build(cyc, 4, &g, &err), MP_ECYCLE);
  /* the cycle is named in data-flow order, from any of its nodes */
  ck_assert_ptr_nonnull(strstr(err.message, "a -> b"));
  ck_assert_ptr_nonnull(strstr(err.message, "b -> c"));
  ck_assert_ptr_nonnull(strstr(err.message, "c -> a"));
  ck_assert_ptr_null(strstr(err.message, "s ->"));

  ck_assert_int_eq(build(ovf, 2, &g, &err), MP_EOVERFLOW);
  ck_assert_str_eq(err.path, "$.nodes[1].bytes");

  ck_assert_int_eq(build(onlyp, 1, &g, &err), MP_EEMPTY);
  ck_assert_int_eq(build(NULL, 0, &g, &err), MP_EEMPTY);

  ck_assert_int_eq(build(pin, 2, &g, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.nodes[1].inputs");
}
END_TEST

START_TEST(test_limits_and_times) {
  mp_graph_t *g = mp_graph_new();
  mp_limits_t lim;
  mp_node_spec_t s;
  mp_error_t err;
  mp_limits_default(&lim);
  lim.max_nodes = 1;
  lim.max_id_len = 3;
  mp_node_spec_init(&s);
  s.where = "$.nodes[0]";
  s.id = "long";
  ck_assert_int_eq(mp_graph_add_node(g, &s, &lim, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes[0].id");
  s.id = "a";
  s.time = -1;
  ck_assert_int_eq(mp_graph_add_node(g, &s, &lim, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.nodes[0].time");
  s.time = 1;
  ck_assert_int_eq(mp_graph_add_node(g, &s, &lim, &err), 0);
  s.id = "b";
  s.where = "$.nodes[1]";
  ck_assert_int_eq(mp_graph_add_node(g, &s, &lim, &err), MP_ELIMIT);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_hash_is_canonical) {
  tnode_t one[] = {{"a", {0}, 10, 1, 0}, {"b", {"a"}, 20, 2, 0}};
  tnode_t two[] = {{"b", {"a"}, 20, 2, 0}, {"a", {0}, 10, 1, 0}};
  tnode_t three[] = {{"a", {0}, 10, 1, 0}, {"b", {"a"}, 21, 2, 0}};
  mp_graph_t *g1, *g2, *g3;
  mp_error_t err;
  char h1[65], h2[65], h3[65];
  ck_assert_int_eq(build(one, 2, &g1, &err), 0);
  ck_assert_int_eq(build(two, 2, &g2, &err), 0);
  ck_assert_int_eq(build(three, 2, &g3, &err), 0);
  mp_graph_set_name(g2, "renamed");
  ck_assert_int_eq(mp_graph_hash(g1, h1), 0);
  ck_assert_int_eq(mp_graph_hash(g2, h2), 0);
  ck_assert_int_eq(mp_graph_hash(g3, h3), 0);
  ck_assert_uint_eq(strlen(h1), 64);
  ck_assert_str_eq(h1, h2);
  ck_assert_str_ne(h1, h3);
  mp_graph_free(g1);
  mp_graph_free(g2);
  mp_graph_free(g3);
}
END_TEST

Suite *suite_graph(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_topo_order_and_sums);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_limits_and_times);
  tcase_add_test(tc, test_hash_is_canonical);

  suite_add_tcase(s, tc);
  return s;
}
