/* test_shipped.c - every shipped graph (tests/graphs) loads through the
 * public file loader with format auto-detection, with the expected node and
 * activation counts, a hash that is stable across loads, and a native JSON
 * round trip (mp_graph_to_json, then reload) that keeps the hash. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "suites.h"

typedef struct {
  const char *path;
  mp_format_t format;
  const char *name;
  size_t nodes, activations;
} shipped_t;

/* Counts verified independently from the files (see test_format_kusumoto.c
 * and test_format_nodelink.c). Names: the base name without extension and
 * without "cg_", except node-link graphs that carry graph.name. */
static const shipped_t shipped[] = {
    {"tests/graphs/cg_vgg19.txt", MP_FORMAT_KUSUMOTO, "vgg19", 86, 46},
    {"tests/graphs/cg_unet.txt", MP_FORMAT_KUSUMOTO, "unet", 108, 60},
    {"tests/graphs/cg_resnet50.txt", MP_FORMAT_KUSUMOTO, "resnet50", 340, 176},
    {"tests/graphs/cg_resnet152.txt", MP_FORMAT_KUSUMOTO, "resnet152", 986, 516},
    {"tests/graphs/cg_googlenet.txt", MP_FORMAT_KUSUMOTO, "googlenet", 266, 134},
    {"tests/graphs/cg_pspnet.txt", MP_FORMAT_KUSUMOTO, "pspnet", 727, 385},
    {"tests/graphs/cg_densenet.txt", MP_FORMAT_KUSUMOTO, "densenet", 1054, 568},
    {"tests/graphs/tiny_resblock.json", MP_FORMAT_NODELINK, "tiny_resblock_forward", 10, 9},
    {"tests/graphs/tiny_layered.json", MP_FORMAT_NODELINK, "tiny_layered", 6, 5},
};

#define N_SHIPPED (sizeof(shipped) / sizeof(shipped[0]))

static mp_graph_t *load(const shipped_t *s, mp_format_t *used) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  int rc = mp_graph_load_file(s->path, MP_FORMAT_AUTO, NULL, &g, used, &err);
  ck_assert_msg(rc == 0, "%s: %s at %s %ld:%ld: %s", s->path, mp_err_name(rc), err.path, err.line,
                err.column, err.message);
  return g;
}

START_TEST(test_load_and_hash) {
  const shipped_t *s = &shipped[_i];
  mp_format_t used = MP_FORMAT_AUTO;
  mp_graph_t *g1 = load(s, &used), *g2;
  char h1[65], h2[65];
  ck_assert_int_eq(used, s->format);
  ck_assert_uint_eq(g1->n_nodes, s->nodes);
  ck_assert_uint_eq(g1->n_activations, s->activations);
  ck_assert_str_eq(g1->name, s->name);
  ck_assert_int_eq(mp_graph_hash(g1, h1), 0);
  g2 = load(s, NULL);
  ck_assert_int_eq(mp_graph_hash(g2, h2), 0);
  ck_assert_str_eq(h1, h2);
  mp_graph_free(g1);
  mp_graph_free(g2);
}
END_TEST

START_TEST(test_native_round_trip) {
  const shipped_t *s = &shipped[_i];
  mp_graph_t *g = load(s, NULL), *back = NULL;
  mp_error_t err;
  char h1[65], h2[65];
  json_t *doc;
  char *text;
  int rc;
  ck_assert_int_eq(mp_graph_hash(g, h1), 0);
  doc = mp_graph_to_json(g);
  ck_assert_msg(doc != NULL, "%s: mp_graph_to_json returned NULL", s->path);
  /* Through text, as a client would send it. */
  text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  ck_assert_ptr_nonnull(text);
  rc = mp_graph_load_buffer(text, strlen(text), MP_FORMAT_AUTO, NULL, NULL, &back, NULL, &err);
  free(text);
  ck_assert_msg(rc == 0, "%s: reload: %s at %s: %s", s->path, mp_err_name(rc), err.path,
                err.message);
  ck_assert_int_eq(mp_graph_hash(back, h2), 0);
  ck_assert_str_eq(h1, h2);
  ck_assert_uint_eq(back->n_nodes, g->n_nodes);
  ck_assert_uint_eq(back->activation_bytes, g->activation_bytes);
  ck_assert_uint_eq(back->const_bytes, g->const_bytes);
  ck_assert_str_eq(back->name, g->name);
  mp_graph_free(g);
  mp_graph_free(back);
}
END_TEST

Suite *suite_shipped(void) {
  Suite *s = suite_create("shipped");
  TCase *tc = tcase_create("load");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_load_and_hash, 0, (int)N_SHIPPED);
  tcase_add_loop_test(tc, test_native_round_trip, 0, (int)N_SHIPPED);
  suite_add_tcase(s, tc);
  return s;
}
