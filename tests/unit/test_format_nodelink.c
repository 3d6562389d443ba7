/* test_format_nodelink.c - the networkx node-link importer (proto/nodelink.c):
 * the two shipped tiny graphs with hand-checked figures, a joint
 * forward+backward graph, id and number rules, and one error per class with
 * its JSON path. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "suites.h"
#include "test_util.h"

static int load_text(const char *text, const char *base, const mp_limits_t *lim, mp_graph_t **g,
                     mp_error_t *err) {
  json_error_t jerr;
  json_t *root = json_loads(text, MP_JSON_LOAD_FLAGS, &jerr);
  int rc;
  ck_assert_msg(root != NULL, "bad test JSON: %s", jerr.text);
  memset(err, 0, sizeof(*err));
  rc = mp_nodelink_from_json(root, base, "argname", lim, g, err);
  json_decref(root);
  if (rc != 0) ck_assert_ptr_null(*g);
  return rc;
}

static mp_graph_t *load_path(const char *path) {
  size_t len;
  char *buf = mp_test_read_file(path, &len);
  mp_graph_t *g = NULL;
  mp_error_t err;
  int rc;
  ck_assert_msg(buf != NULL, "cannot read %s", path);
  rc = load_text(buf, "$", NULL, &g, &err);
  free(buf);
  ck_assert_msg(rc == 0, "%s: %s at %s: %s", path, mp_err_name(rc), err.path, err.message);
  return g;
}

static const mp_node_t *node(const mp_graph_t *g, const char *id) {
  long v = mp_graph_find(g, id);
  ck_assert_msg(v >= 0, "no node '%s'", id);
  return &g->nodes[v];
}

static const char *in_id(const mp_graph_t *g, const mp_node_t *n, unsigned k) {
  ck_assert_uint_lt(k, n->n_inputs);
  return g->nodes[n->inputs[k]].id;
}

START_TEST(test_tiny_resblock) {
  /* input -> conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> add(bn2, relu1) -> relu2
   * -> pool -> fc. Bytes: input 6422528; seven of 25690112; pool 524288;
   * fc 4000. Times: 410+60+20+400+60+25+20+35+15 = 1045 (the input's 0 is not
   * an activation's). */
  mp_graph_t *g = load_path("tests/graphs/tiny_resblock.json");
  static const char *const order[] = {"input", "conv1", "bn1", "relu1", "conv2",
                                      "bn2",   "add",   "relu2", "pool", "fc"};
  const mp_node_t *n;
  size_t v;
  ck_assert_str_eq(g->name, "tiny_resblock_forward"); /* graph.name beats the argument */
  ck_assert_uint_eq(g->n_nodes, 10);
  ck_assert_uint_eq(g->n_activations, 9);
  ck_assert_uint_eq(g->activation_bytes, 7ULL * 25690112 + 524288 + 4000);
  ck_assert_uint_eq(g->activation_bytes, 180359072ULL);
  ck_assert_uint_eq(g->const_bytes, 6422528);
  ck_assert_uint_eq(g->param_bytes, 0);
  ck_assert_double_eq(g->fwd_time, 1045);
  ck_assert_uint_eq(g->n_edges, 10);
  ck_assert_uint_eq(g->n_warnings, 0);
  for (v = 0; v < 10; v++) ck_assert_str_eq(g->nodes[v].id, order[v]);
  n = node(g, "input");
  ck_assert_int_eq(n->kind, MP_KIND_INPUT);
  ck_assert_uint_eq(n->bytes, 6422528);
  n = node(g, "conv1");
  ck_assert_str_eq(n->op, "conv1");
  ck_assert_double_eq(n->time, 410);
  ck_assert_uint_eq(n->bytes, 25690112);
  ck_assert_int_eq(n->kind, MP_KIND_ACTIVATION);
  ck_assert_int_eq(n->recompute, 1);
  ck_assert_int_eq(n->bwd_reads, MP_BWD_READS_INPUTS);
  n = node(g, "add"); /* links 5->6 then 3->6, in that order */
  ck_assert_uint_eq(n->n_inputs, 2);
  ck_assert_str_eq(in_id(g, n, 0), "bn2");
  ck_assert_str_eq(in_id(g, n, 1), "relu1");
  ck_assert_uint_eq(mp_graph_nsucc(g, (uint32_t)mp_graph_find(g, "relu1")), 2);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_tiny_layered) {
  /* Node 0 is the only source; 1 hangs off 4. out_cost of 1..5: 2+4+1+3+1 = 11,
   * durations 3+5+2+4+1 = 15, param_cost 1+2 = 3. */
  mp_graph_t *g = load_path("tests/graphs/tiny_layered.json");
  static const char *const order[] = {"0", "2", "3", "4", "1", "5"};
  const mp_node_t *n;
  size_t v;
  ck_assert_str_eq(g->name, "tiny_layered");
  ck_assert_uint_eq(g->n_nodes, 6);
  ck_assert_uint_eq(g->n_activations, 5);
  ck_assert_uint_eq(g->activation_bytes, 11);
  ck_assert_uint_eq(g->param_bytes, 3);
  ck_assert_uint_eq(g->const_bytes, 3); /* param_bytes + the input's 0 bytes */
  ck_assert_double_eq(g->fwd_time, 15);
  ck_assert_uint_eq(g->n_edges, 7);
  for (v = 0; v < 6; v++) ck_assert_str_eq(g->nodes[v].id, order[v]);
  ck_assert_int_eq(node(g, "0")->kind, MP_KIND_INPUT);
  n = node(g, "4");
  ck_assert_uint_eq(n->n_inputs, 2);
  ck_assert_str_eq(in_id(g, n, 0), "2");
  ck_assert_str_eq(in_id(g, n, 1), "3");
  ck_assert_double_eq(n->time, 4);
  ck_assert_uint_eq(n->bytes, 3);
  n = node(g, "1");
  ck_assert_uint_eq(n->n_inputs, 1);
  ck_assert_str_eq(in_id(g, n, 0), "4");
  n = node(g, "5");
  ck_assert_str_eq(in_id(g, n, 0), "4");
  ck_assert_str_eq(in_id(g, n, 1), "3");
  mp_graph_free(g);
}
END_TEST

/* Forward a -> b -> c plus backward nodes gc, gb, ga wired to everything. */
static const char joint[] =
    "{\"directed\": true, \"multigraph\": false, \"graph\": {},"
    " \"nodes\": ["
    "  {\"id\": 0, \"name\": \"a\", \"cost_cpu\": 0, \"cost_ram\": 10, \"backward\": false},"
    "  {\"id\": 1, \"name\": \"b\", \"cost_cpu\": 5, \"cost_ram\": 20, \"backward\": false},"
    "  {\"id\": 2, \"name\": \"c\", \"cost_cpu\": 7, \"cost_ram\": 30, \"backward\": false},"
    "  {\"id\": 3, \"name\": \"gc\", \"cost_cpu\": 9, \"cost_ram\": 30, \"backward\": true},"
    "  {\"id\": 4, \"name\": \"gb\", \"cost_cpu\": 9, \"cost_ram\": 20, \"backward\": true},"
    "  {\"id\": 5, \"name\": \"a\", \"cost_cpu\": 9, \"cost_ram\": 10, \"backward\": true}],"
    " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2},"
    "  {\"source\": 2, \"target\": 3}, {\"source\": 3, \"target\": 4}, {\"source\": 1, \"target\": 4},"
    "  {\"source\": 4, \"target\": 5}, {\"source\": 0, \"target\": 5}]}";

START_TEST(test_joint_graph) {
  mp_graph_t *g;
  mp_error_t err;
  ck_assert_int_eq(load_text(joint, "$", NULL, &g, &err), 0);
  ck_assert_uint_eq(g->n_nodes, 3);
  ck_assert_uint_eq(g->n_activations, 2);
  ck_assert_uint_eq(g->n_edges, 2);
  ck_assert_uint_eq(g->activation_bytes, 50);
  ck_assert_uint_eq(g->const_bytes, 10);
  ck_assert_double_eq(g->fwd_time, 12);
  ck_assert_str_eq(g->name, "argname"); /* graph has no name */
  /* the backward node reusing the name "a" does not stop names being ids */
  ck_assert_int_ge(mp_graph_find(g, "c"), 0);
  ck_assert_uint_eq(g->n_warnings, 1);
  ck_assert_str_eq(g->warnings[0],
                   "joint forward+backward graph: imported the forward part (3 forward nodes), "
                   "dropped 3 backward nodes");
  mp_graph_free(g);
}
END_TEST

START_TEST(test_ids_and_numbers) {
  mp_graph_t *g;
  mp_error_t err;
  /* No names: ids as text, strings and integers mixed; multigraph duplicates
   * are fine and deduplicated; integral reals accepted; null = absent. */
  ck_assert_int_eq(
      load_text("{\"directed\": true, \"multigraph\": true,"
                " \"nodes\": [{\"id\": \"x\", \"out_cost\": 2.0, \"duration\": 0.5},"
                "  {\"id\": 7, \"out_cost\": 3, \"duration\": 1.5, \"param_cost\": 4.0,"
                "   \"name\": null, \"extra\": [1, {\"k\": 2}]}],"
                " \"links\": [{\"source\": \"x\", \"target\": 7, \"key\": 0},"
                "  {\"source\": \"x\", \"target\": \"7\", \"key\": 1}]}",
                "$", NULL, &g, &err),
      0);
  ck_assert_uint_eq(g->n_nodes, 2);
  ck_assert_str_eq(g->nodes[0].id, "x");
  ck_assert_str_eq(g->nodes[1].id, "7");
  ck_assert_str_eq(g->nodes[1].op, "");
  ck_assert_uint_eq(g->nodes[1].n_inputs, 2);
  ck_assert_uint_eq(g->n_edges, 1);
  ck_assert_uint_eq(g->const_bytes, 2 + 4);
  ck_assert_double_eq(g->fwd_time, 1.5);
  mp_graph_free(g);

  /* Names not unique: ids are used, ops keep the names. */
  ck_assert_int_eq(
      load_text("{\"directed\": true, \"nodes\": [{\"id\": 1, \"name\": \"relu\"},"
                " {\"id\": 2, \"name\": \"relu\"}], \"links\": [{\"source\": 1, \"target\": 2}]}",
                "$", NULL, &g, &err),
      0);
  ck_assert_str_eq(g->nodes[1].id, "2");
  ck_assert_str_eq(g->nodes[1].op, "relu");
  mp_graph_free(g);

  /* One name missing: ids are used. networkx 3.4's "edges" key works too. */
  ck_assert_int_eq(
      load_text("{\"directed\": true, \"nodes\": [{\"id\": 1, \"name\": \"a\"}, {\"id\": 2}],"
                " \"edges\": [{\"source\": 1, \"target\": 2}]}",
                "$", NULL, &g, &err),
      0);
  ck_assert_str_eq(g->nodes[0].id, "1");
  ck_assert_str_eq(g->nodes[0].op, "a");
  mp_graph_free(g);
}
END_TEST

typedef struct {
  const char *json;
  int code;
  const char *path;
  const char *msg;
} ecase_t;

#define NL(nodes, links) "{\"directed\": true, \"nodes\": [" nodes "], \"links\": [" links "]}"
#define AB "{\"id\": 0, \"name\": \"a\"}, {\"id\": 1, \"name\": \"b\"}"
#define L01 "{\"source\": 0, \"target\": 1}"

START_TEST(test_errors) {
  static const ecase_t t[] = {
      {"[1, 2]", MP_EINVAL, "$.graph", "must be a JSON object"},
      {"{\"directed\": false, \"nodes\": [], \"links\": []}", MP_EINVAL, "$.graph.directed",
       "undirected"},
      {"{\"directed\": 1, \"nodes\": [], \"links\": []}", MP_EINVAL, "$.graph.directed",
       "must be a boolean"},
      {"{\"multigraph\": \"no\", \"nodes\": [], \"links\": []}", MP_EINVAL, "$.graph.multigraph",
       "must be a boolean"},
      {"{\"graph\": [], \"nodes\": [], \"links\": []}", MP_EINVAL, "$.graph.graph",
       "must be an object"},
      {"{\"graph\": {\"name\": 5}, \"nodes\": [], \"links\": []}", MP_EINVAL,
       "$.graph.graph.name", "must be a string"},
      {"{\"links\": []}", MP_EINVAL, "$.graph.nodes", "has no nodes array"},
      {"{\"nodes\": {}, \"links\": []}", MP_EINVAL, "$.graph.nodes", "must be an array"},
      {"{\"nodes\": []}", MP_EINVAL, "$.graph.links", "has no links array"},
      {"{\"nodes\": [], \"links\": 3}", MP_EINVAL, "$.graph.links", "must be an array"},
      {NL("3", ""), MP_EINVAL, "$.graph.nodes[0]", "must be an object"},
      {NL("{\"label\": \"a\"}", ""), MP_EINVAL, "$.graph.nodes[0].id", "has no id"},
      {NL("{\"name\": [1]}", ""), MP_EINVAL, "$.graph.nodes[0].name", "integer or a string"},
      {NL("{\"id\": 1.5}", ""), MP_EINVAL, "$.graph.nodes[0].id", "integer or a string"},
      {NL("{\"id\": 1}, {\"id\": \"1\"}", ""), MP_EDUP, "$.graph.nodes[1].id",
       "duplicate node id '1' (first at $.graph.nodes[0])"},
      {NL("{\"id\": 1, \"name\": 2}", ""), MP_EINVAL, "$.graph.nodes[0].name", "must be a string"},
      {NL("{\"id\": 1, \"backward\": 0}", ""), MP_EINVAL, "$.graph.nodes[0].backward",
       "must be a boolean"},
      {NL("{\"id\": 1, \"cost_cpu\": \"3\"}", ""), MP_EINVAL, "$.graph.nodes[0].cost_cpu",
       "must be a number"},
      {NL("{\"id\": 1, \"duration\": -1}", ""), MP_EINVAL, "$.graph.nodes[0].duration",
       "non-negative"},
      {NL("{\"id\": 1, \"cost_cpu\": 1, \"duration\": 1}", ""), MP_EINVAL,
       "$.graph.nodes[0].duration", "either cost_cpu or duration"},
      {NL("{\"id\": 1, \"cost_ram\": 2.5}", ""), MP_EINVAL, "$.graph.nodes[0].cost_ram",
       "non-negative integer, got 2.5"},
      {NL("{\"id\": 1, \"out_cost\": -3}", ""), MP_EINVAL, "$.graph.nodes[0].out_cost",
       "non-negative integer"},
      {NL("{\"id\": 1, \"out_cost\": 1e300}", ""), MP_EINVAL, "$.graph.nodes[0].out_cost",
       "larger than a 64-bit"},
      {NL("{\"id\": 1, \"cost_ram\": true}", ""), MP_EINVAL, "$.graph.nodes[0].cost_ram",
       "non-negative integer"},
      {NL("{\"id\": 1, \"param_cost\": \"big\"}", ""), MP_EINVAL, "$.graph.nodes[0].param_cost",
       "non-negative integer"},
      {NL("{\"id\": 0}, {\"id\": 1, \"param_cost\": 9223372036854775807},"
          " {\"id\": 2, \"param_cost\": 9223372036854775807}, {\"id\": 3, \"param_cost\": 2}",
          "{\"source\": 0, \"target\": 1}"),
       MP_EOVERFLOW, "$.graph.nodes[3].param_cost", "overflows"},
      {NL(AB, "7"), MP_EINVAL, "$.graph.links[0]", "must be an object"},
      {NL(AB, L01 ", {\"source\": 5, \"target\": 1}"), MP_EUNKNOWN, "$.graph.links[1].source",
       "link source '5' is not a node id"},
      {NL(AB, "{\"source\": 0, \"target\": \"b\"}"), MP_EUNKNOWN, "$.graph.links[0].target",
       "link target 'b' is not a node id"},
      {NL(AB, "{\"source\": 0}"), MP_EINVAL, "$.graph.links[0].target", "link has no target"},
      {NL(AB, "{\"source\": [0], \"target\": 1}"), MP_EINVAL, "$.graph.links[0].source",
       "integer or a string"},
      {NL(AB, L01 ", " L01), MP_EDUP, "$.graph.links[1]", "not a multigraph"},
      {NL(AB, "{\"source\": 1, \"target\": 1}"), MP_ECYCLE, "$.graph.links[0]", "to itself"},
      {NL(AB, L01 ", {\"source\": 1, \"target\": 0}"), MP_ECYCLE, "$.graph.nodes[1]",
       "graph has a cycle"},
      {NL(AB, ""), MP_EEMPTY, "$.graph.nodes", "no activation nodes"},
      {NL("", ""), MP_EEMPTY, "$.graph.nodes", "no nodes"},
      {NL("{\"id\": 0, \"backward\": true}", ""), MP_EEMPTY, "$.graph.nodes",
       "every node is a backward node"},
      {NL(AB, L01), 0, NULL, NULL},
  };
  size_t i;
  for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    mp_graph_t *g = NULL;
    mp_error_t err;
    int rc = load_text(t[i].json, "$.graph", NULL, &g, &err);
    ck_assert_msg(rc == t[i].code, "case %zu: got %s at %s (%s), want %s", i, mp_err_name(rc),
                  err.path, err.message, mp_err_name(t[i].code));
    if (rc == 0) {
      mp_graph_free(g);
      continue;
    }
    ck_assert_msg(strcmp(err.path, t[i].path) == 0, "case %zu: path '%s', want '%s' (%s)", i,
                  err.path, t[i].path, err.message);
    ck_assert_msg(strstr(err.message, t[i].msg) != NULL, "case %zu: message '%s' lacks '%s'", i,
                  err.message, t[i].msg);
  }
}
END_TEST

START_TEST(test_limits) {
  mp_limits_t lim;
  mp_graph_t *g;
  mp_error_t err;
  mp_limits_default(&lim);
  lim.max_nodes = 1;
  ck_assert_int_eq(load_text(NL(AB, L01), "$", &lim, &g, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes");
  mp_limits_default(&lim);
  lim.max_edges = 0;
  ck_assert_int_eq(load_text(NL(AB, L01), "$", &lim, &g, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.links");
  mp_limits_default(&lim);
  lim.max_id_len = 2;
  ck_assert_int_eq(load_text(NL("{\"id\": \"long\"}", ""), "$", &lim, &g, &err), MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes[0].id");
  lim.max_id_len = 4;
  /* names are ids and ops: a long name is refused where it is used */
  ck_assert_int_eq(load_text(NL("{\"id\": 0, \"name\": \"x\"}, {\"id\": 1, \"name\": \"toolong\"}",
                                L01),
                             "$", &lim, &g, &err),
                   MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.nodes[1].id");
  mp_limits_default(&lim);
  lim.max_name_len = 3;
  ck_assert_int_eq(
      load_text("{\"graph\": {\"name\": \"abcd\"}, \"nodes\": [" AB "], \"links\": [" L01 "]}",
                "$", &lim, &g, &err),
      MP_ELIMIT);
  ck_assert_str_eq(err.path, "$.graph.name");
}
END_TEST

Suite *suite_format_nodelink(void) {
  Suite *s = suite_create("format_nodelink");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_tiny_resblock);
  tcase_add_test(tc, test_tiny_layered);
  tcase_add_test(tc, test_joint_graph);
  tcase_add_test(tc, test_ids_and_numbers);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_limits);
  suite_add_tcase(s, tc);
  return s;
}
