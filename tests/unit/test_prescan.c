/* test_prescan.c - the counting pre-scan of graph JSON (graph_prescan.c):
 * each format's counted arrays refused one past their limit and passed at
 * it, the graph found only where it is, strings that look like structure,
 * and every shipped JSON graph passing under the default limits. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "suites.h"
#include "test_util.h"

/* A native chain of n nodes as the value of "graph" (or the root when
 * wrapped is 0); malloc'd. */
static char *native_chain(size_t n, int wrapped) {
  size_t cap = 128 + n * 128, len = 0, i;
  char *b = malloc(cap);
  ck_assert_ptr_nonnull(b);
  len += (size_t)snprintf(b + len, cap - len, "%s{\"format\":\"memplan.graph/1\",\"name\":\"a \\\"nodes\\\": [\",\"nodes\":[",
                          wrapped ? "{\"budget\":1,\"graph\":" : "");
  for (i = 0; i < n; i++)
    len += (size_t)snprintf(b + len, cap - len, "%s{\"id\":\"n%zu\",\"bytes\":1,\"meta\":{\"nodes\":[1,2,3]}%s%zu\"]}",
                            i ? "," : "", i, i ? ",\"inputs\":[\"n" : ",\"x\":[\"", i ? i - 1 : 0);
  snprintf(b + len, cap - len, "]}%s", wrapped ? "}" : "");
  return b;
}

static int scan(const char *text, const char *key, size_t max_nodes, size_t max_edges, mp_error_t *err) {
  mp_limits_t lim;
  mp_limits_default(&lim);
  lim.max_nodes = max_nodes;
  lim.max_edges = max_edges;
  mp_error_clear(err);
  return mp_graph_prescan_json(text, strlen(text), key, &lim, err);
}

START_TEST(test_native_counts) {
  mp_error_t err;
  char *b = native_chain(50, 1);
  ck_assert_int_eq(scan(b, "graph", 50, 49, &err), 0);
  ck_assert_int_eq(scan(b, "graph", 49, 1000, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.graph.nodes");
  ck_assert_int_eq(scan(b, "graph", 1000, 48, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.graph");
  /* the same text as a bare graph is found at the root only */
  ck_assert_int_eq(scan(b, NULL, 10, 10, &err), 0);
  free(b);
  b = native_chain(50, 0);
  ck_assert_int_eq(scan(b, NULL, 49, 1000, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes");
  ck_assert_int_eq(scan(b, "graph", 10, 10, &err), 0);
  free(b);
}
END_TEST

START_TEST(test_nodelink_counts) {
  mp_error_t err;
  const char *g = "{\"graph\":{\"directed\":true,\"graph\":{\"name\":\"x\"},\"nodes\":[{\"id\":0},{\"id\":1},{\"id\":2}],"
                  "\"links\":[{\"source\":0,\"target\":1},{\"source\":1,\"target\":2}]}}";
  ck_assert_int_eq(scan(g, "graph", 3, 2, &err), 0);
  ck_assert_int_eq(scan(g, "graph", 2, 2, &err), MP_ELIMIT);
  ck_assert_int_eq(scan(g, "graph", 3, 1, &err), MP_ELIMIT);
}
END_TEST

START_TEST(test_kusumoto_header) {
  mp_error_t err;
  ck_assert_int_eq(scan("{\"graph\":\"3 4\\n...\"}", "graph", 3, 10, &err), 0);
  ck_assert_int_eq(scan("{\"graph\":\"4 4\\n...\"}", "graph", 3, 10, &err), MP_ELIMIT);
  ck_assert_ptr_nonnull(strstr(err.message, "4 variables"));
  /* a string elsewhere is not a graph */
  ck_assert_int_eq(scan("{\"name\":\"99 4\",\"graph\":\"1 2\\n\"}", "graph", 3, 10, &err), 0);
}
END_TEST

/* Truncated and malformed text is left to the parser: no refusal, no
 * read past the end. */
START_TEST(test_malformed_passes) {
  mp_error_t err;
  static const char *bad[] = {"", "{", "{\"graph\":{\"nodes\":[", "{\"graph\":{\"nodes\":[{\"id\":\"a\\", "]]]}}}",
                              "{\"graph\":{\"nodes\":\"x\"}}", "\"", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) ck_assert_int_eq(scan(bad[i], "graph", 1, 1, &err), 0);
}
END_TEST

/* The shipped node-link graphs pass under the default limits. */
START_TEST(test_shipped_pass) {
  static const char *files[] = {"tests/graphs/tiny_layered.json", "tests/graphs/tiny_resblock.json"};
  mp_limits_t lim;
  mp_error_t err;
  mp_limits_default(&lim);
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    size_t len;
    char *text = mp_test_read_file(files[i], &len);
    ck_assert_ptr_nonnull(text);
    mp_error_clear(&err);
    ck_assert_int_eq(mp_graph_prescan_json(text, len, NULL, &lim, &err), 0);
    free(text);
  }
}
END_TEST

Suite *suite_prescan(void) {
  Suite *s = suite_create("prescan");
  TCase *tc = tcase_create("counts");
  tcase_add_test(tc, test_native_counts);
  tcase_add_test(tc, test_nodelink_counts);
  tcase_add_test(tc, test_kusumoto_header);
  tcase_add_test(tc, test_malformed_passes);
  tcase_add_test(tc, test_shipped_pass);
  suite_add_tcase(s, tc);
  return s;
}
