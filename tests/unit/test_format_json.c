/* test_format_json.c - the native memplan.graph/1 reader and writer and the
 * load entry points (format names, detection, buffer/file/JSON loaders):
 * field semantics, defaults, the writer's omissions and number encoding, the
 * round trip on a pseudo-random graph, error paths under a `base`, limits,
 * file naming and the size cap. Per-error messages live in tests/cases/json_*.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats.h"
#include "suites.h"
#include "test_util.h"

static const char tiny[] =
    "{\"format\": \"memplan.graph/1\", \"name\": \"tiny\", \"time_unit\": \"ms\", "
    "\"param_bytes\": 1024,\n"
    " \"nodes\": [\n"
    "   {\"id\": \"x\", \"kind\": \"input\", \"bytes\": 100},\n"
    "   {\"id\": \"w\", \"kind\": \"param\", \"bytes\": 40},\n"
    "   {\"id\": \"conv1\", \"op\": \"Conv2d\", \"inputs\": [\"x\", \"w\"], \"bytes\": 200, "
    "\"time\": 10, \"bwd_time\": 20,\n"
    "    \"recompute\": true, \"stage\": \"s1\", \"bwd_reads\": \"inputs\", "
    "\"workspace_bytes\": 0}]}";

static int load_str(const char *s, mp_format_t fmt, mp_graph_t **g, mp_format_t *used,
                    mp_error_t *err) {
  return mp_graph_load_buffer(s, strlen(s), fmt, NULL, NULL, g, used, err);
}

/* Compact, key-sorted dump of the graph's native document (malloc'd). */
static char *dump_graph(const mp_graph_t *g) {
  json_t *j = mp_graph_to_json(g);
  char *s;
  ck_assert_ptr_nonnull(j);
  s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(j);
  ck_assert_ptr_nonnull(s);
  return s;
}

START_TEST(test_parse_example) {
  mp_graph_t *g;
  mp_error_t err;
  mp_format_t used;
  const mp_node_t *c;
  ck_assert_int_eq(load_str(tiny, MP_FORMAT_AUTO, &g, &used, &err), 0);
  ck_assert_int_eq(used, MP_FORMAT_NATIVE);
  ck_assert_str_eq(g->name, "tiny");
  ck_assert_str_eq(g->time_unit, "ms");
  ck_assert_uint_eq(g->param_bytes, 1024);
  ck_assert_uint_eq(g->const_bytes, 1024 + 100 + 40);
  ck_assert_uint_eq(g->n_nodes, 3);
  ck_assert_uint_eq(g->n_activations, 1);
  ck_assert_uint_eq(g->activation_bytes, 200);
  c = &g->nodes[mp_graph_find(g, "conv1")];
  ck_assert_str_eq(c->op, "Conv2d");
  ck_assert_str_eq(c->stage, "s1");
  ck_assert_int_eq(c->has_bwd_time, 1);
  ck_assert_double_eq(c->bwd_time, 20);
  ck_assert_double_eq(c->time, 10);
  ck_assert_int_eq(c->recompute, 1);
  ck_assert_int_eq(c->bwd_reads, MP_BWD_READS_INPUTS);
  ck_assert_uint_eq(c->n_inputs, 2);
  ck_assert_str_eq(g->nodes[c->inputs[0]].id, "x");
  ck_assert_str_eq(g->nodes[c->inputs[1]].id, "w");
  ck_assert_int_eq(g->nodes[mp_graph_find(g, "w")].kind, MP_KIND_PARAM);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_defaults_and_writer) {
  /* Every optional field at its default, given explicitly: the writer omits
   * them all; a missing bwd_time resolves to 2 x time. */
  const char *in =
      "{\"format\":\"memplan.graph/1\",\"name\":\"\",\"time_unit\":\"\",\"param_bytes\":0,"
      "\"nodes\":[{\"id\":\"a\",\"op\":\"\",\"inputs\":[],\"bytes\":5,\"time\":1.5,"
      "\"kind\":\"activation\",\"recompute\":true,\"bwd_reads\":\"inputs\","
      "\"workspace_bytes\":0},"
      "{\"id\":\"b\",\"inputs\":[\"a\"],\"bytes\":7,\"recompute\":false,\"stage\":3,"
      "\"bwd_reads\":\"none\",\"workspace_bytes\":9,\"bwd_time\":4.0}]}";
  const char *want =
      "{\"format\":\"memplan.graph/1\",\"nodes\":[{\"bytes\":5,\"id\":\"a\",\"time\":1.5},"
      "{\"bwd_reads\":\"none\",\"bwd_time\":4,\"bytes\":7,\"id\":\"b\",\"inputs\":[\"a\"],"
      "\"recompute\":false,\"stage\":\"3\",\"workspace_bytes\":9}]}";
  mp_graph_t *g;
  mp_error_t err;
  char *s;
  ck_assert_int_eq(load_str(in, MP_FORMAT_NATIVE, &g, NULL, &err), 0);
  ck_assert_int_eq(g->nodes[0].has_bwd_time, 0);
  ck_assert_double_eq(g->nodes[0].bwd_time, 3.0);
  ck_assert_ptr_null(g->nodes[0].stage);
  ck_assert_str_eq(g->nodes[1].stage, "3");
  ck_assert_int_eq(g->nodes[1].recompute, 0);
  ck_assert_uint_eq(g->nodes[1].workspace_bytes, 9);
  s = dump_graph(g);
  ck_assert_str_eq(s, want);
  free(s);
  mp_graph_free(g);
  ck_assert_ptr_null(mp_graph_to_json(NULL));
}
END_TEST

START_TEST(test_time_encoding) {
  /* Integral times below 2^53 come out as JSON integers, others as reals. */
  const char *in = "{\"format\":\"memplan.graph/1\",\"nodes\":["
                   "{\"id\":\"a\",\"bytes\":1,\"time\":3.0},"
                   "{\"id\":\"b\",\"bytes\":1,\"time\":0.5},"
                   "{\"id\":\"c\",\"bytes\":1,\"time\":9007199254740991},"
                   "{\"id\":\"d\",\"bytes\":1,\"time\":9007199254740992},"
                   "{\"id\":\"e\",\"bytes\":1,\"time\":1e300}]}";
  mp_graph_t *g;
  mp_error_t err;
  json_t *j, *nodes;
  ck_assert_int_eq(load_str(in, MP_FORMAT_AUTO, &g, NULL, &err), 0);
  j = mp_graph_to_json(g);
  nodes = json_object_get(j, "nodes");
  ck_assert(json_is_integer(json_object_get(json_array_get(nodes, 0), "time")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(nodes, 0), "time")), 3);
  ck_assert(json_is_real(json_object_get(json_array_get(nodes, 1), "time")));
  ck_assert(json_is_integer(json_object_get(json_array_get(nodes, 2), "time")));
  ck_assert(json_is_real(json_object_get(json_array_get(nodes, 3), "time")));
  ck_assert(json_is_real(json_object_get(json_array_get(nodes, 4), "time")));
  ck_assert_double_eq(json_real_value(json_object_get(json_array_get(nodes, 4), "time")), 1e300);
  json_decref(j);
  mp_graph_free(g);
}
END_TEST

/* A small deterministic generator, so the round trip sees many field
 * combinations without depending on the C library's rand(). */
static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

START_TEST(test_round_trip_random) {
  enum { N = 400 };
  static char ids[N][16];
  static char stages[N][16];
  uint64_t seed = 12345;
  mp_graph_t *g = mp_graph_new(), *g2 = NULL;
  mp_error_t err;
  char h1[65], h2[65];
  char *d1, *d2;
  json_t *j;
  size_t i, k;
  ck_assert_ptr_nonnull(g);
  g->param_bytes = 77;
  ck_assert_int_eq(mp_graph_set_time_unit(g, "us"), 0);
  ck_assert_int_eq(mp_graph_set_name(g, "random"), 0);
  for (i = 0; i < N; i++) snprintf(ids[i], sizeof(ids[i]), "n%zu", i);
  /* Nodes are added in reverse, so finalize must reorder them. */
  for (i = N; i-- > 0;) {
    mp_node_spec_t s;
    const char *ins[4];
    char where[32];
    mp_node_spec_init(&s);
    snprintf(where, sizeof(where), "$.nodes[%zu]", N - 1 - i);
    s.id = ids[i];
    s.where = where;
    s.bytes = lcg(&seed) % 100000 + (i % 7 == 0 ? (uint64_t)1 << 40 : 0);
    if (i < 5) {
      s.kind = i % 2 ? MP_KIND_PARAM : MP_KIND_INPUT;
    } else {
      size_t n_in = 1 + lcg(&seed) % 3;
      for (k = 0; k < n_in; k++) ins[k] = ids[lcg(&seed) % i];
      s.inputs = ins;
      s.n_inputs = n_in;
      switch (lcg(&seed) % 3) {
      case 0: s.time = (double)(lcg(&seed) % 50); break;
      case 1: s.time = (double)(lcg(&seed) % 1000) / 7.0; break;
      default: s.time = 0; break;
      }
      if (lcg(&seed) % 2) {
        s.has_bwd_time = 1;
        s.bwd_time = (double)(lcg(&seed) % 1000) / 3.0;
      }
      s.recompute = lcg(&seed) % 5 != 0;
      s.bwd_reads = (mp_bwd_reads_t)(lcg(&seed) % 4);
      if (lcg(&seed) % 3 == 0) {
        snprintf(stages[i], sizeof(stages[i]), "st%u", (unsigned)(lcg(&seed) % 9));
        s.stage = stages[i];
      }
      if (lcg(&seed) % 4 == 0) s.workspace_bytes = lcg(&seed);
      if (lcg(&seed) % 2) s.op = lcg(&seed) % 2 ? "Conv2d" : "ReLU";
    }
    ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, &err), 0);

  j = mp_graph_to_json(g);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(mp_native_from_json(j, "$", NULL, &g2, &err), 0);
  ck_assert_int_eq(mp_graph_hash(g, h1), 0);
  ck_assert_int_eq(mp_graph_hash(g2, h2), 0);
  ck_assert_str_eq(h1, h2);
  ck_assert_str_eq(g2->name, "random");
  /* Writing the re-read graph gives the same document, node order included. */
  d1 = dump_graph(g);
  d2 = dump_graph(g2);
  ck_assert_str_eq(d1, d2);
  free(d1);
  free(d2);
  json_decref(j);
  mp_graph_free(g);
  mp_graph_free(g2);
}
END_TEST

START_TEST(test_base_prefix) {
  /* A graph inside a request: every path points into the request. */
  const char *req = "{\"graph\": {\"format\": \"memplan.graph/1\", \"nodes\": ["
                    "{\"id\": \"a\", \"bytes\": 1}, {\"id\": \"b\", \"bytes\": -1}]},"
                    " \"g2\": {\"format\": \"memplan.graph/1\", \"extra\": 1, \"nodes\": []},"
                    " \"g3\": {\"format\": \"memplan.graph/1\", \"nodes\": ["
                    "{\"id\": \"w\", \"kind\": \"param\", \"bytes\": 1}]},"
                    " \"g4\": {\"nodes\": []}, \"g5\": [1], \"g6\": 5}";
  json_error_t jerr;
  json_t *r = json_loads(req, MP_JSON_LOAD_FLAGS, &jerr);
  mp_graph_t *g = NULL;
  mp_error_t err;
  mp_format_t used;
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "graph"), "$.graph", MP_FORMAT_AUTO,
                                      NULL, NULL, &g, &used, &err),
                   MP_EINVAL);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(used, MP_FORMAT_NATIVE);
  ck_assert_str_eq(err.path, "$.graph.nodes[1].bytes");
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "g2"), "$.g2", MP_FORMAT_AUTO, NULL,
                                      NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_str_eq(err.path, "$.g2.extra");
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "g3"), "$.g3", MP_FORMAT_AUTO, NULL,
                                      NULL, &g, NULL, &err),
                   MP_EEMPTY);
  ck_assert_str_eq(err.path, "$.g3.nodes");
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "g4"), "$.g4", MP_FORMAT_AUTO, NULL,
                                      NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_str_eq(err.path, "$.g4.format");
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "g5"), "$.g5", MP_FORMAT_AUTO, NULL,
                                      NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_str_eq(err.path, "$.g5");
  ck_assert_int_eq(mp_graph_load_json(json_object_get(r, "g6"), "$.g6", MP_FORMAT_NATIVE, NULL,
                                      NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_str_eq(err.path, "$.g6");
  ck_assert_int_eq(mp_graph_load_json(NULL, "$.x", MP_FORMAT_AUTO, NULL, NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_ptr_null(g);
  json_decref(r);
}
END_TEST

START_TEST(test_detect_and_names) {
  static const struct {
    const char *text;
    mp_format_t want;
  } cases[] = {
      {"{\"format\": \"memplan.graph/1\", \"nodes\": []}", MP_FORMAT_NATIVE},
      {"  \n{\"nodes\": [], \"links\": []}", MP_FORMAT_NODELINK},
      {"{\"graph\": {\"links\": []}}", MP_FORMAT_NATIVE}, /* only a top-level key counts */
      {"{ broken", MP_FORMAT_NATIVE},
      {"\xEF\xBB\xBF{}", MP_FORMAT_NATIVE},
      {"3 4\n0 10 _\n", MP_FORMAT_KUSUMOTO},
      {"  12\t34  \r\n", MP_FORMAT_KUSUMOTO},
      {"\n\n5 0", MP_FORMAT_KUSUMOTO},
      {"12\n34\n", MP_FORMAT_AUTO},
      {"-1 2\n", MP_FORMAT_AUTO},
      {"1 x\n", MP_FORMAT_AUTO},
      {"1 2x\n", MP_FORMAT_AUTO},
      {"[1, 2]", MP_FORMAT_AUTO},
      {"hello", MP_FORMAT_AUTO},
      {"", MP_FORMAT_AUTO},
      {"   \n", MP_FORMAT_AUTO},
  };
  size_t i;
  mp_format_t f;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(mp_format_detect(cases[i].text, strlen(cases[i].text)) == cases[i].want,
                  "detect case %zu", i);
  ck_assert_int_eq(mp_format_detect(NULL, 0), MP_FORMAT_AUTO);

  ck_assert_int_eq(mp_format_parse("native", &f), 0);
  ck_assert_int_eq(f, MP_FORMAT_NATIVE);
  ck_assert_int_eq(mp_format_parse("kusumoto", &f), 0);
  ck_assert_int_eq(f, MP_FORMAT_KUSUMOTO);
  ck_assert_int_eq(mp_format_parse("nodelink", &f), 0);
  ck_assert_int_eq(f, MP_FORMAT_NODELINK);
  ck_assert_int_eq(mp_format_parse("auto", &f), 0);
  ck_assert_int_eq(f, MP_FORMAT_AUTO);
  ck_assert_int_eq(mp_format_parse("Native", &f), MP_EINVAL);
  ck_assert_int_eq(mp_format_parse("", &f), MP_EINVAL);
  ck_assert_int_eq(mp_format_parse(NULL, &f), MP_EINVAL);
  ck_assert_str_eq(mp_format_name(MP_FORMAT_NATIVE), "native");
  ck_assert_str_eq(mp_format_name(MP_FORMAT_KUSUMOTO), "kusumoto");
  ck_assert_str_eq(mp_format_name(MP_FORMAT_NODELINK), "nodelink");
  ck_assert_str_eq(mp_format_name(MP_FORMAT_AUTO), "auto");
}
END_TEST

START_TEST(test_dispatch_and_syntax_errors) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  mp_format_t used;
  json_t *s;
  /* jansson's position and text come through. */
  ck_assert_int_eq(load_str("{\n  \"format\": x\n}", MP_FORMAT_AUTO, &g, NULL, &err), MP_EPARSE);
  ck_assert_int_eq(err.line, 2);
  ck_assert_int_gt(err.column, 0);
  ck_assert_str_eq(err.path, "");
  ck_assert_ptr_nonnull(strstr(err.message, "invalid JSON"));
  ck_assert_ptr_null(g);
  /* Forced formats are reported in *used even when the reader fails. */
  load_str(tiny, MP_FORMAT_NODELINK, &g, &used, &err);
  ck_assert_int_eq(used, MP_FORMAT_NODELINK);
  mp_graph_free(g);
  ck_assert_int_ne(load_str(tiny, MP_FORMAT_KUSUMOTO, &g, &used, &err), 0);
  ck_assert_int_eq(used, MP_FORMAT_KUSUMOTO);
  ck_assert_ptr_null(g);
  /* A JSON string holds Kusumoto text. */
  s = json_string("1 0\n0 8 _\n");
  mp_graph_load_json(s, "$.graph", MP_FORMAT_AUTO, NULL, NULL, &g, &used, &err);
  ck_assert_int_eq(used, MP_FORMAT_KUSUMOTO);
  mp_graph_free(g);
  g = NULL;
  ck_assert_int_eq(mp_graph_load_json(s, "$.graph", MP_FORMAT_NATIVE, NULL, NULL, &g, NULL, &err),
                   MP_EINVAL);
  ck_assert_str_eq(err.path, "$.graph");
  json_decref(s);
  /* Unknown format values are refused, not guessed. */
  ck_assert_int_eq(load_str(tiny, (mp_format_t)42, &g, NULL, &err), MP_EINVAL);
  ck_assert_ptr_null(g);
  /* Empty and undetectable input. */
  ck_assert_int_eq(load_str("", MP_FORMAT_AUTO, &g, NULL, &err), MP_EPARSE);
  ck_assert_int_eq(load_str("", MP_FORMAT_NATIVE, &g, NULL, &err), MP_EPARSE);
  ck_assert_int_eq(load_str("\n\n  what", MP_FORMAT_AUTO, &g, NULL, &err), MP_EPARSE);
  ck_assert_int_eq(err.line, 3);
  ck_assert_int_eq(err.column, 3);
  ck_assert_ptr_nonnull(strstr(err.message, "cannot detect the graph format"));
  /* The 1 GiB cap is checked before a byte is read. */
  ck_assert_int_eq(mp_graph_load_buffer(tiny, ((size_t)1 << 30) + 1, MP_FORMAT_AUTO, NULL, NULL,
                                        &g, NULL, &err),
                   MP_ELIMIT);
  ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_default_name) {
  const char *unnamed = "{\"format\":\"memplan.graph/1\",\"nodes\":[{\"id\":\"a\",\"bytes\":1}]}";
  mp_graph_t *g;
  mp_error_t err;
  ck_assert_int_eq(mp_graph_load_buffer(unnamed, strlen(unnamed), MP_FORMAT_AUTO, "fallback",
                                        NULL, &g, NULL, &err),
                   0);
  ck_assert_str_eq(g->name, "fallback");
  mp_graph_free(g);
  ck_assert_int_eq(
      mp_graph_load_buffer(tiny, strlen(tiny), MP_FORMAT_AUTO, "fallback", NULL, &g, NULL, &err),
      0);
  ck_assert_str_eq(g->name, "tiny");
  mp_graph_free(g);
  ck_assert_int_eq(load_str(unnamed, MP_FORMAT_AUTO, &g, NULL, &err), 0);
  ck_assert_str_eq(g->name, "");
  mp_graph_free(g);
}
END_TEST

START_TEST(test_load_file) {
  const char *unnamed = "{\"format\":\"memplan.graph/1\",\"nodes\":[{\"id\":\"a\",\"bytes\":1}]}";
  char dir[] = "/tmp/memplan_fmt_XXXXXX";
  char p1[128], p2[128], p3[128], p4[128], p5[128];
  mp_graph_t *g;
  mp_error_t err;
  mp_format_t used;
  FILE *f;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(p1, sizeof(p1), "%s/cg_tiny.v2.json", dir);
  snprintf(p2, sizeof(p2), "%s/named.json", dir);
  snprintf(p3, sizeof(p3), "%s/noext", dir);
  snprintf(p4, sizeof(p4), "%s/huge.json", dir);
  snprintf(p5, sizeof(p5), "%s/missing.json", dir);
  mp_test_write_file(p1, unnamed);
  mp_test_write_file(p2, tiny);
  mp_test_write_file(p3, unnamed);

  /* Base name, last extension and the cg_ prefix removed. */
  ck_assert_int_eq(mp_graph_load_file(p1, MP_FORMAT_AUTO, NULL, &g, &used, &err), 0);
  ck_assert_int_eq(used, MP_FORMAT_NATIVE);
  ck_assert_str_eq(g->name, "tiny.v2");
  mp_graph_free(g);
  /* A name in the document wins. */
  ck_assert_int_eq(mp_graph_load_file(p2, MP_FORMAT_NATIVE, NULL, &g, NULL, &err), 0);
  ck_assert_str_eq(g->name, "tiny");
  mp_graph_free(g);
  ck_assert_int_eq(mp_graph_load_file(p3, MP_FORMAT_AUTO, NULL, &g, NULL, &err), 0);
  ck_assert_str_eq(g->name, "noext");
  mp_graph_free(g);

  ck_assert_int_eq(mp_graph_load_file(p5, MP_FORMAT_AUTO, NULL, &g, NULL, &err), MP_ENOENT);
  ck_assert_ptr_null(g);
  ck_assert_str_eq(err.message, "no such file");

  /* A sparse file just over 1 GiB: refused from its size, never read. */
  f = fopen(p4, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(ftruncate(fileno(f), ((off_t)1 << 30) + 1), 0);
  fclose(f);
  ck_assert_int_eq(mp_graph_load_file(p4, MP_FORMAT_AUTO, NULL, &g, NULL, &err), MP_ELIMIT);
  ck_assert_ptr_null(g);

  unlink(p1);
  unlink(p2);
  unlink(p3);
  unlink(p4);
  rmdir(dir);
}
END_TEST

START_TEST(test_limits) {
  const char *three = "{\"format\":\"memplan.graph/1\",\"name\":\"long name\",\"time_unit\":\"ms\","
                      "\"nodes\":[{\"id\":\"a\",\"bytes\":1},{\"id\":\"bb\",\"bytes\":1,"
                      "\"inputs\":[\"a\",\"a\",\"a\"]},{\"id\":\"c\",\"bytes\":1}]}";
  mp_limits_t lim;
  mp_graph_t *g = NULL;
  mp_error_t err;
  size_t len = strlen(three);

  mp_limits_default(&lim);
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   0);
  mp_graph_free(g);
  g = NULL;

  mp_limits_default(&lim);
  lim.max_name_len = 4;
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.name");
  lim.max_name_len = 9; /* "long name" fits exactly; "ms" too */
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   0);
  mp_graph_free(g);
  g = NULL;
  {
    const char *unit = "{\"format\":\"memplan.graph/1\",\"time_unit\":\"seconds\","
                       "\"nodes\":[{\"id\":\"a\",\"bytes\":1}]}";
    lim.max_name_len = 6;
    ck_assert_int_eq(mp_graph_load_buffer(unit, strlen(unit), MP_FORMAT_AUTO, NULL, &lim, &g,
                                          NULL, &err),
                     MP_ELIMIT);
    ck_assert_str_eq(err.path, "$.time_unit");
  }

  mp_limits_default(&lim);
  lim.max_nodes = 2;
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes");

  mp_limits_default(&lim);
  lim.max_id_len = 1;
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes[1].id");

  mp_limits_default(&lim);
  lim.max_edges = 2;
  ck_assert_int_eq(mp_graph_load_buffer(three, len, MP_FORMAT_AUTO, NULL, &lim, &g, NULL, &err),
                   MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes[1].inputs");
  ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_hand_built_values) {
  /* Values a caller builds by hand (not from text): embedded NULs and
   * non-object nodes must be refused cleanly. */
  json_t *root = json_pack("{s:s, s:[{s:s%, s:i}]}", "format", "memplan.graph/1", "nodes", "id",
                           "a\0b", (size_t)3, "bytes", 1);
  mp_graph_t *g = NULL;
  mp_error_t err;
  ck_assert_ptr_nonnull(root);
  ck_assert_int_eq(mp_native_from_json(root, NULL, NULL, &g, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.nodes[0].id");
  ck_assert_ptr_null(g);
  json_decref(root);
  ck_assert_int_eq(mp_native_from_json(NULL, "$", NULL, &g, &err), MP_EINVAL);
  /* A NULL error record is allowed everywhere. */
  ck_assert_int_eq(load_str("{", MP_FORMAT_AUTO, &g, NULL, NULL), MP_EPARSE);
  ck_assert_int_eq(load_str("{\"format\":1}", MP_FORMAT_AUTO, &g, NULL, NULL), MP_EINVAL);
}
END_TEST

Suite *suite_format_json(void) {
  Suite *s = suite_create("format_json");
  TCase *tc = tcase_create("native");
  tcase_add_test(tc, test_parse_example);
  tcase_add_test(tc, test_defaults_and_writer);
  tcase_add_test(tc, test_time_encoding);
  tcase_add_test(tc, test_round_trip_random);
  tcase_add_test(tc, test_base_prefix);
  tcase_add_test(tc, test_detect_and_names);
  tcase_add_test(tc, test_dispatch_and_syntax_errors);
  tcase_add_test(tc, test_default_name);
  tcase_add_test(tc, test_load_file);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_hand_built_values);
  suite_add_tcase(s, tc);
  return s;
}
