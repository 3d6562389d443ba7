/* test_format_kusumoto.c - the Kusumoto text importer (proto/kusumoto.c):
 * figures of the shipped graphs, the mapping rules on a hand-written graph,
 * line endings, every error class with its line and column, limits, and a
 * truncation sweep that must never crash or read past the buffer.
 *
 * The shipped-graph figures were computed independently of this code by a
 * short Python script reading tests/graphs/cg_*.txt (activation = a variable
 * some forward record outputs; time 10 for types starting with "Conv", else 1;
 * bwd_reads from the retain lists of the attribute JSON) and hard-coded here. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "suites.h"
#include "test_util.h"

/* Parse from an exact-size heap copy (no NUL terminator), so that a read past
 * `len` is caught by ASan. */
static int parse_n(const char *text, size_t len, const mp_limits_t *lim, mp_graph_t **g,
                   mp_error_t *err) {
  char *copy = malloc(len ? len : 1);
  int rc;
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, text, len);
  rc = mp_kusumoto_parse(copy, len, "t", lim, g, err);
  free(copy);
  return rc;
}

static int parse(const char *text, mp_graph_t **g, mp_error_t *err) {
  return parse_n(text, strlen(text), NULL, g, err);
}

static mp_graph_t *load_shipped(const char *path) {
  size_t len;
  char *buf = mp_test_read_file(path, &len);
  mp_graph_t *g = NULL;
  mp_error_t err;
  int rc;
  ck_assert_msg(buf != NULL, "cannot read %s", path);
  rc = parse_n(buf, len, NULL, &g, &err);
  free(buf);
  ck_assert_msg(rc == 0, "%s: %s at %ld:%ld: %s", path, mp_err_name(rc), err.line, err.column,
                err.message);
  return g;
}

typedef struct {
  size_t params, inputs, by_reads[4], no_recompute;
} counts_t;

static counts_t count(const mp_graph_t *g) {
  counts_t c;
  size_t v;
  memset(&c, 0, sizeof(c));
  for (v = 0; v < g->n_nodes; v++) {
    const mp_node_t *n = &g->nodes[v];
    if (n->kind == MP_KIND_PARAM) c.params++;
    if (n->kind == MP_KIND_INPUT) c.inputs++;
    if (n->kind == MP_KIND_ACTIVATION) {
      c.by_reads[n->bwd_reads]++;
      if (!n->recompute) c.no_recompute++;
    }
  }
  return c;
}

static const mp_node_t *node(const mp_graph_t *g, const char *id) {
  long v = mp_graph_find(g, id);
  ck_assert_msg(v >= 0, "no node '%s'", id);
  return &g->nodes[v];
}

START_TEST(test_vgg19) {
  mp_graph_t *g = load_shipped("tests/graphs/cg_vgg19.txt");
  counts_t c = count(g);
  const mp_node_t *n;
  ck_assert_uint_eq(g->n_nodes, 86);
  ck_assert_uint_eq(g->n_activations, 46);
  ck_assert_uint_eq(c.params, 38);
  ck_assert_uint_eq(c.inputs, 2);
  ck_assert_uint_eq(g->activation_bytes, 4004508676ULL);
  ck_assert_uint_eq(g->const_bytes, 593936672ULL);
  ck_assert_uint_eq(g->param_bytes, 0);
  ck_assert_double_eq(g->fwd_time, 190); /* docs/reference-figures.md */
  ck_assert_uint_eq(g->n_edges, 85);
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_INPUTS], 23);
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_OUTPUT], 18); /* the 18 ReLUs */
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_BOTH], 5);    /* the 5 max poolings */
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_NONE], 0);
  ck_assert_uint_eq(c.no_recompute, 2); /* the 2 dropouts */
  ck_assert_str_eq(g->name, "t");
  ck_assert_str_eq(g->time_unit, "ref");
  ck_assert_uint_eq(g->n_warnings, 0);

  /* Single records, read off the file. */
  n = node(g, "23"); /* Convolution2DFunction of 22, 56, 61 */
  ck_assert_str_eq(n->op, "Convolution2DFunction");
  ck_assert_uint_eq(n->n_inputs, 3);
  ck_assert_str_eq(g->nodes[n->inputs[0]].id, "22");
  ck_assert_str_eq(g->nodes[n->inputs[1]].id, "56");
  ck_assert_str_eq(g->nodes[n->inputs[2]].id, "61");
  ck_assert_double_eq(n->time, 10);
  ck_assert_int_eq(n->bwd_reads, MP_BWD_READS_INPUTS);
  ck_assert_uint_eq(n->bytes, 51380224);
  n = node(g, "15"); /* ReLU of 17 */
  ck_assert_str_eq(n->op, "ReLU");
  ck_assert_int_eq(n->bwd_reads, MP_BWD_READS_OUTPUT);
  ck_assert_double_eq(n->time, 1);
  n = node(g, "30"); /* MaxPooling2D of 27 */
  ck_assert_int_eq(n->bwd_reads, MP_BWD_READS_BOTH);
  n = node(g, "29"); /* Dropout of 15 */
  ck_assert_str_eq(n->op, "Dropout");
  ck_assert_int_eq(n->recompute, 0);
  ck_assert_str_eq(g->nodes[n->inputs[0]].id, "15");
  n = node(g, "5"); /* /predictor/fc6/W */
  ck_assert_int_eq(n->kind, MP_KIND_PARAM);
  ck_assert_uint_eq(n->bytes, 411041792);
  ck_assert_uint_eq(n->n_inputs, 0);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_resnet50) {
  mp_graph_t *g = load_shipped("tests/graphs/cg_resnet50.txt");
  counts_t c = count(g);
  ck_assert_uint_eq(g->n_nodes, 340);
  ck_assert_uint_eq(g->n_activations, 176);
  ck_assert_uint_eq(c.params, 162);
  ck_assert_uint_eq(c.inputs, 2);
  ck_assert_uint_eq(g->activation_bytes, 4605604868ULL);
  ck_assert_uint_eq(g->const_bytes, 121496096ULL);
  ck_assert_double_eq(g->fwd_time, 653); /* docs/reference-figures.md */
  ck_assert_uint_eq(g->n_edges, 355);
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_INPUTS], 125);
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_OUTPUT], 49);
  ck_assert_uint_eq(c.by_reads[MP_BWD_READS_BOTH], 2);
  ck_assert_uint_eq(c.no_recompute, 0);
  mp_graph_free(g);
}
END_TEST

/* The other five: every one imports, with its counts and total time. */
START_TEST(test_all_shipped) {
  static const struct {
    const char *path;
    size_t nodes, acts, params, inputs, edges, by_reads[3], norec;
    unsigned long long abytes, cbytes;
    double time;
  } t[] = {
      {"tests/graphs/cg_unet.txt", 108, 60, 46, 2, 111, {34, 22, 4}, 2, 11781604356ULL,
       139688712ULL, 231},
      {"tests/graphs/cg_googlenet.txt", 266, 134, 128, 4, 294, {82, 34, 18}, 1, 1273252884ULL,
       72781088ULL, 665},
      {"tests/graphs/cg_pspnet.txt", 727, 385, 340, 2, 765, {272, 108, 5}, 2, 7343443000ULL,
       290151576ULL, 1411},
      {"tests/graphs/cg_resnet152.txt", 986, 516, 468, 2, 1035, {363, 151, 2}, 0, 9974838276ULL,
       260039200ULL, 1911},
      {"tests/graphs/cg_densenet.txt", 1054, 568, 484, 2, 1131, {402, 161, 5}, 0, 11661796356ULL,
       133991712ULL, 2008},
  };
  size_t i;
  for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    mp_graph_t *g = load_shipped(t[i].path);
    counts_t c = count(g);
    ck_assert_uint_eq(g->n_nodes, t[i].nodes);
    ck_assert_uint_eq(g->n_activations, t[i].acts);
    ck_assert_uint_eq(c.params, t[i].params);
    ck_assert_uint_eq(c.inputs, t[i].inputs);
    ck_assert_uint_eq(g->n_edges, t[i].edges);
    ck_assert_uint_eq(c.by_reads[0], t[i].by_reads[0]);
    ck_assert_uint_eq(c.by_reads[1], t[i].by_reads[1]);
    ck_assert_uint_eq(c.by_reads[2], t[i].by_reads[2]);
    ck_assert_uint_eq(c.no_recompute, t[i].norec);
    ck_assert_uint_eq(g->activation_bytes, t[i].abytes);
    ck_assert_uint_eq(g->const_bytes, t[i].cbytes);
    ck_assert_double_eq(g->fwd_time, t[i].time);
    mp_graph_free(g);
  }
}
END_TEST

/* A hand-written graph: conv(0, W1) -> relu -> dropout -> maxpool -> linear(., W2). */
static const char small[] =
    "8 10\n"
    "0 100 0\n"
    "1 40 /conv/W\n"
    "2 200 _\n"
    "3 200 _\n"
    "4 200 _\n"
    "5 50 _\n"
    "6 8 /fc/W\n"
    "7 10 _\n"
    "forward\n2 1\n0 _\n1 _\n2\nConvolution2DFunction\n"
    "{\"_input_indexes_to_retain\": [0, 1], \"_output_indexes_to_retain\": null}\n"
    "forward\n1 1\n2 _\n3\nReLU\n"
    "{\"_input_indexes_to_retain\": null, \"_output_indexes_to_retain\": [0]}\n"
    "forward\n1 1\n3 _\n4\nDropout\n"
    "{\"dropout_ratio\": 0.5, \"_input_indexes_to_retain\": null, \"_output_indexes_to_retain\": null}\n"
    "forward\n1 1\n4 _\n5\nMaxPooling2D\n"
    "{\"_input_indexes_to_retain\": [0], \"_output_indexes_to_retain\": [0]}\n"
    "forward\n2 1\n5 _\n6 _\n7\nLinearFunction\n"
    "{\"_input_indexes_to_retain\": [0, 1], \"_output_indexes_to_retain\": []}\n"
    "backward\n4 2\n2 gradient\n0 input\n1 input\n2 output\n0\n1\nConvolution2DFunction\n{}\n"
    "backward\n2 1\n3 gradient\n3 output\n2\nReLU\n{}\n"
    "backward\n1 1\n4 gradient\n3\nDropout\n{}\n"
    "backward\n3 1\n5 gradient\n4 input\n5 output\n4\nMaxPooling2D\n{}\n"
    "backward\n3 2\n7 gradient\n5 input\n6 input\n5\n6\nLinearFunction\n{}\n";

START_TEST(test_small_mapping) {
  mp_graph_t *g;
  mp_error_t err;
  counts_t c;
  size_t v;
  static const char *const order[] = {"0", "1", "2", "3", "4", "5", "6", "7"};
  ck_assert_int_eq(parse(small, &g, &err), 0);
  c = count(g);
  ck_assert_uint_eq(g->n_nodes, 8);
  ck_assert_uint_eq(g->n_activations, 5);
  ck_assert_uint_eq(c.params, 2);
  ck_assert_uint_eq(c.inputs, 1);
  ck_assert_uint_eq(g->activation_bytes, 660);
  ck_assert_uint_eq(g->const_bytes, 148);
  ck_assert_double_eq(g->fwd_time, 14);
  ck_assert_uint_eq(g->n_edges, 7);
  for (v = 0; v < 8; v++) ck_assert_str_eq(g->nodes[v].id, order[v]);
  ck_assert_int_eq(node(g, "0")->kind, MP_KIND_INPUT);
  ck_assert_int_eq(node(g, "1")->kind, MP_KIND_PARAM);
  ck_assert_int_eq(node(g, "2")->bwd_reads, MP_BWD_READS_INPUTS);
  ck_assert_double_eq(node(g, "2")->time, 10);
  ck_assert_int_eq(node(g, "3")->bwd_reads, MP_BWD_READS_OUTPUT);
  ck_assert_int_eq(node(g, "4")->recompute, 0);
  ck_assert_int_eq(node(g, "4")->bwd_reads, MP_BWD_READS_INPUTS);
  ck_assert_int_eq(node(g, "5")->bwd_reads, MP_BWD_READS_BOTH);
  ck_assert_int_eq(node(g, "7")->bwd_reads, MP_BWD_READS_INPUTS); /* [] retains nothing */
  ck_assert_int_eq(node(g, "7")->recompute, 1);
  ck_assert_str_eq(node(g, "7")->op, "LinearFunction");
  mp_graph_free(g);

  /* NULL name gives "". */
  ck_assert_int_eq(mp_kusumoto_parse(small, strlen(small), NULL, NULL, &g, &err), 0);
  ck_assert_str_eq(g->name, "");
  mp_graph_free(g);
}
END_TEST

/* Replace every "\n" with "\r\n". */
static char *crlf(const char *s) {
  size_t n = strlen(s), i, o = 0;
  char *d = malloc(2 * n + 1);
  ck_assert_ptr_nonnull(d);
  for (i = 0; i < n; i++) {
    if (s[i] == '\n') d[o++] = '\r';
    d[o++] = s[i];
  }
  d[o] = '\0';
  return d;
}

START_TEST(test_line_endings) {
  mp_graph_t *g;
  mp_error_t err;
  char h0[65], h[65];
  char *dos = crlf(small);
  char *blank = malloc(strlen(small) + 16);
  ck_assert_int_eq(parse(small, &g, &err), 0);
  ck_assert_int_eq(mp_graph_hash(g, h0), 0);
  mp_graph_free(g);

  ck_assert_int_eq(parse(dos, &g, &err), 0);
  ck_assert_int_eq(mp_graph_hash(g, h), 0);
  ck_assert_str_eq(h, h0);
  mp_graph_free(g);
  /* CRLF file whose last line has no terminator */
  ck_assert_int_eq(parse_n(dos, strlen(dos) - 2, NULL, &g, &err), 0);
  ck_assert_int_eq(mp_graph_hash(g, h), 0);
  ck_assert_str_eq(h, h0);
  mp_graph_free(g);
  /* LF file without the final newline */
  ck_assert_int_eq(parse_n(small, strlen(small) - 1, NULL, &g, &err), 0);
  mp_graph_free(g);
  /* trailing blank lines and spaces are fine */
  ck_assert_ptr_nonnull(blank);
  strcpy(blank, small);
  strcat(blank, "\n  \n\t\n");
  ck_assert_int_eq(parse(blank, &g, &err), 0);
  mp_graph_free(g);
  free(dos);
  free(blank);
}
END_TEST

/* One record per error class: the text, the code, line, column and a piece
 * of the message. */
typedef struct {
  const char *text;
  int code;
  long line, column;
  const char *msg;
} ecase_t;

#define REC_F(in, out, type) "forward\n1 1\n" in " _\n" out "\n" type "\n{}\n"
#define REC_B(in, out, type) "backward\n1 1\n" in " gradient\n" out "\n" type "\n{}\n"

START_TEST(test_errors) {
  static const ecase_t t[] = {
      {"", MP_EPARSE, 1, 0, "expected the header line 'N M', got end of file"},
      {"2\n", MP_EPARSE, 1, 0, "expected 'N M' (2 integers), got 1 field"},
      {"2 x\n", MP_EPARSE, 1, 3, "function count M must be a non-negative integer, got 'x'"},
      {"-2 2\n", MP_EINVAL, 1, 1, "must be non-negative, got '-2'"},
      {"2 2 2\n", MP_EPARSE, 1, 5, "got 3 fields"},
      {"99999999999999999999 2\n", MP_EINVAL, 1, 1, "larger than the largest 64-bit"},
      {"99999999999 1\n", MP_EPARSE, 1, 1, "header declares 99999999999 variables but only 0"},
      {"1 99\n0 1 _\n", MP_EPARSE, 1, 3, "header declares 99 function records but only 1"},
      {"2 3\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EPARSE, 1, 3,
       "is odd"},
      {"2 2\n0 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EPARSE, 3, 0,
       "variable 2 of 2: expected 'id bytes name', got 1 field"},
      {"2 2\n0 1 _\n0 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EDUP, 3, 1,
       "variable 0 is defined twice (first at line 2)"},
      {"2 2\n0 1 _\n2 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EINVAL, 3, 1,
       "variable id 2 is out of range"},
      {"2 2\n0 1 _\n1 1x _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EPARSE, 3, 3,
       "variable size must be a non-negative integer, got '1x'"},
      {"2 2\n0 1 _\n1 -1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EINVAL, 3, 3,
       "variable size must be non-negative"},
      {"2 2\n0 1 _\n1 18446744073709551616 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"),
       MP_EINVAL, 3, 3, "larger than the largest 64-bit"},
      {"2 4\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_F("1", "0", "ReLU"), MP_EPARSE, 16, 0,
       "expected function record 3 of 4, got end of file"},
      {"2 2\n0 1 _\n1 1 _\nfrowned\n1 1\n0 _\n1\nReLU\n{}\n" REC_B("1", "0", "ReLU"), MP_EPARSE,
       4, 1, "expected 'forward' or 'backward', got 'frowned'"},
      {"2 2\n0 1 _\n1 1 _\n" REC_B("1", "0", "ReLU") REC_B("1", "0", "ReLU"), MP_EPARSE, 4, 1,
       "the forward and backward counts differ"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_F("0", "1", "ReLU"), MP_EPARSE, 10, 1,
       "the forward and backward counts differ"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 x\n", MP_EPARSE, 5, 3,
       "output count p must be a non-negative integer"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1000000 1\n0 _\n1\nReLU\n{}\n" REC_B("1", "0", "ReLU"),
       MP_EPARSE, 5, 0, "declares 1000000 inputs and 1 outputs but only 10 lines remain"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 0\n0 _\nReLU\n{}\n" REC_B("1", "0", "ReLU"), MP_EPARSE, 5,
       0, "at least one output"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("7", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_EUNKNOWN, 6, 1,
       "unknown input variable 7 (ids are 0..1)"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 1\n0\n1\nReLU\n{}\n" REC_B("1", "0", "ReLU"), MP_EPARSE, 6,
       0, "input 1 of 1: expected 'varid role', got 1 field"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "9", "ReLU") REC_B("1", "0", "ReLU"), MP_EUNKNOWN, 7, 1,
       "unknown output variable 9"},
      {"3 4\n0 1 _\n1 1 _\n2 1 _\n" REC_F("0", "1", "ReLU") REC_F("0", "1", "Sigmoid")
           REC_B("1", "0", "ReLU") REC_B("1", "0", "Sigmoid"),
       MP_EDUP, 14, 1, "variable 1 is produced by two forward functions (lines 5 and 11)"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 2\n0 _\n1\n1\nReLU\n{}\n" REC_B("1", "0", "ReLU"), MP_EDUP,
       8, 1, "lists output variable 1 twice"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 1\n0 _\n1\nReLU\n{\"a\": }\n" REC_B("1", "0", "ReLU"),
       MP_EPARSE, 9, 7, "attributes are not valid JSON"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 1\n0 _\n1\nReLU\n[1, 2]\n" REC_B("1", "0", "ReLU"),
       MP_EPARSE, 9, 1, "attributes must be a JSON object"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 1\n0 _\n1\nReLU\n{\"a\": 1, \"a\": 2}\n"
           REC_B("1", "0", "ReLU"),
       MP_EPARSE, 9, 12, "attributes are not valid JSON: duplicate object key"},
      {"2 2\n0 1 _\n1 1 _\nforward\n1 1\n0 _\n1\nReLU Sigmoid\n{}\n" REC_B("1", "0", "ReLU"),
       MP_EPARSE, 8, 6, "expected one function type name, got 2 fields"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU") "forward\n",
       MP_EPARSE, 16, 0, "unexpected content after the last of the 2 function records"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "5", "ReLU"), MP_EUNKNOWN, 13, 1,
       "unknown output variable 5"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") "backward\n1 1\n1 gradient\n0\nReLU\nnope\n",
       MP_EPARSE, 15, 4, "attributes are not valid JSON"}, /* jansson's column */
      {"2 2\n0 1 _\n1 1 _\n" REC_F("1", "1", "ReLU") REC_B("1", "0", "ReLU"), MP_ECYCLE, 7, 0,
       "graph has a cycle"},
      {"2 0\n0 1 _\n1 1 _\n", MP_EEMPTY, 1, 0, "nothing to plan"},
      {"2 2\n0 1 _\n1 1 _\n" REC_F("0", "1", "ReLU") REC_B("1", "0", "ReLU"), 0, 0, 0, NULL},
  };
  size_t i;
  for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    mp_graph_t *g = NULL;
    mp_error_t err;
    int rc;
    memset(&err, 0, sizeof(err));
    rc = parse(t[i].text, &g, &err);
    ck_assert_msg(rc == t[i].code, "case %zu: got %s (%s), want %s", i, mp_err_name(rc),
                  err.message, mp_err_name(t[i].code));
    if (rc == 0) {
      mp_graph_free(g);
      continue;
    }
    ck_assert_ptr_null(g);
    ck_assert_msg(err.line == t[i].line && err.column == t[i].column,
                  "case %zu: at %ld:%ld, want %ld:%ld (%s)", i, err.line, err.column, t[i].line,
                  t[i].column, err.message);
    ck_assert_str_eq(err.path, "");
    ck_assert_msg(strstr(err.message, t[i].msg) != NULL, "case %zu: message '%s' lacks '%s'", i,
                  err.message, t[i].msg);
  }
}
END_TEST

START_TEST(test_nul_and_binary) {
  static const char text[] = "2 2\n0 1 _\n1 1 _\nforward\n1 1\n0 _\n1\nRe\0LU\n{}\n";
  mp_graph_t *g = NULL;
  mp_error_t err;
  ck_assert_int_eq(parse_n(text, sizeof(text) - 1, NULL, &g, &err), MP_EPARSE);
  ck_assert_int_eq(err.line, 8);
  ck_assert_ptr_nonnull(strstr(err.message, "NUL"));
  ck_assert_int_eq(parse_n("\x89PNG\r\n\x1a\n", 8, NULL, &g, &err), MP_EPARSE);
  ck_assert_int_eq(err.line, 1);
  ck_assert_int_eq(mp_kusumoto_parse(NULL, 0, NULL, NULL, &g, &err), MP_EPARSE);
}
END_TEST

START_TEST(test_limits) {
  mp_limits_t lim;
  mp_graph_t *g = NULL;
  mp_error_t err;
  mp_limits_default(&lim);
  lim.max_nodes = 7;
  ck_assert_int_eq(parse_n(small, strlen(small), &lim, &g, &err), MP_ELIMIT);
  ck_assert_int_eq(err.line, 1);
  ck_assert_int_eq(err.column, 1);
  ck_assert_ptr_nonnull(strstr(err.message, "limit of 7 nodes"));
  lim.max_nodes = 8;
  ck_assert_int_eq(parse_n(small, strlen(small), &lim, &g, &err), 0);
  mp_graph_free(g);

  mp_limits_default(&lim);
  lim.max_edges = 6; /* the small graph has 7 input references */
  ck_assert_int_eq(parse_n(small, strlen(small), &lim, &g, &err), MP_ELIMIT);
  ck_assert_int_eq(err.line, 36); /* "k p" of the last forward record */

  mp_limits_default(&lim);
  lim.max_id_len = 10; /* "Convolution2DFunction" is too long an op */
  ck_assert_int_eq(parse_n(small, strlen(small), &lim, &g, &err), MP_ELIMIT);
  ck_assert_int_eq(err.line, 14); /* the output line of the convolution */
  ck_assert_str_eq(err.path, "");

  /* An absurd header fails at once on a large buffer without allocating. */
  {
    size_t n = 1 << 20;
    char *big = malloc(n);
    ck_assert_ptr_nonnull(big);
    memset(big, '\n', n);
    memcpy(big, "99999999999 1\n", 14);
    ck_assert_int_eq(parse_n(big, n, NULL, &g, &err), MP_EPARSE);
    ck_assert_int_eq(err.line, 1);
    memcpy(big, "10 99999999999", 14);
    ck_assert_int_eq(parse_n(big, n, NULL, &g, &err), MP_EPARSE);
    ck_assert_int_eq(err.line, 1);
    free(big);
  }
}
END_TEST

/* Every prefix of the small file, and every line prefix of VGG19: no crash,
 * no read past the end (ASan), an error with a line unless complete. */
START_TEST(test_truncation_sweep) {
  size_t n = strlen(small), i, len, ok = 0;
  char *buf;
  for (i = 0; i < n; i++) {
    mp_graph_t *g = NULL;
    mp_error_t err;
    int rc = parse_n(small, i, NULL, &g, &err);
    if (rc == 0) {
      ok++;
      mp_graph_free(g);
    } else {
      ck_assert_ptr_null(g);
      ck_assert_int_gt(err.line, 0);
      ck_assert_int_ne(err.message[0], '\0');
    }
  }
  /* The last attribute line must be complete JSON: only the prefix that
   * lacks just the final newline parses. */
  ck_assert_uint_eq(ok, 1);

  buf = mp_test_read_file("tests/graphs/cg_vgg19.txt", &len);
  ck_assert_ptr_nonnull(buf);
  ok = 0;
  for (i = 0; i < len; i++) {
    mp_graph_t *g = NULL;
    mp_error_t err;
    int rc;
    if (buf[i] != '\n') continue;
    rc = parse_n(buf, i, NULL, &g, &err); /* cut just before a newline */
    if (rc == 0) {
      ok++;
      mp_graph_free(g);
    } else {
      ck_assert_int_gt(err.line, 0);
    }
  }
  ck_assert_uint_eq(ok, 1); /* only the whole file minus its final newline */
  free(buf);
}
END_TEST

Suite *suite_format_kusumoto(void) {
  Suite *s = suite_create("format_kusumoto");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vgg19);
  tcase_add_test(tc, test_resnet50);
  tcase_add_test(tc, test_all_shipped);
  tcase_add_test(tc, test_small_mapping);
  tcase_add_test(tc, test_line_endings);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_nul_and_binary);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_truncation_sweep);
  suite_add_tcase(s, tc);
  return s;
}
