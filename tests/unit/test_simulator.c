/* test_simulator.c - what the simulator's data cases cannot say. The
 * hand-computed memory model (graph + schedule -> peak, step of the peak,
 * timeline, times, recomputed nodes, the liveness pass, the lower bound) and
 * one case per validity rule and per schedule-reader error are data:
 * tests/cases/sim_* and tests/cases/schedule_json_*, run by test_cases.c.
 * Here: steps no text can spell (an unknown op, a node index out of range),
 * 64-bit overflow, a broken strategy, reader paths under a base, the schedule
 * and report JSON writers, properties on random graphs, a 100,000-node chain
 * and the shipped graphs. Graphs are built through the builder API.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "graph.h"
#include "schedule.h"
#include "schedule_json.h"
#include "simulator.h"
#include "strategy.h"
#include "suites.h"
#include "test_util.h"

typedef struct {
  const char *id;
  const char *inputs[4];
  uint64_t bytes;
  double time;
  mp_kind_t kind;
  int no_recompute;
  mp_bwd_reads_t reads;
  uint64_t ws;
} tn_t;

static mp_graph_t *build(const tn_t *ns, size_t n, uint64_t param_bytes) {
  mp_graph_t *g = mp_graph_new();
  mp_error_t err;
  size_t i;
  ck_assert_ptr_nonnull(g);
  g->param_bytes = param_bytes;
  for (i = 0; i < n; i++) {
    mp_node_spec_t s;
    size_t k = 0;
    mp_node_spec_init(&s);
    s.id = ns[i].id;
    while (k < 4 && ns[i].inputs[k]) k++;
    s.inputs = ns[i].inputs;
    s.n_inputs = k;
    s.bytes = ns[i].bytes;
    s.time = ns[i].time;
    s.kind = ns[i].kind;
    s.recompute = !ns[i].no_recompute;
    s.bwd_reads = ns[i].reads;
    s.workspace_bytes = ns[i].ws;
    s.where = "$.nodes[?]";
    ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  }
  ck_assert_msg(mp_graph_finalize(g, NULL, &err) == 0, "%s", err.message);
  return g;
}

static uint64_t sim_peak(const mp_graph_t *g, const mp_schedule_t *s) {
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t p;
  ck_assert_msg(mp_simulate(g, s, &r, &err) == 0, "%s", err.message);
  p = r.peak_bytes;
  mp_sim_report_free(&r);
  return p;
}

/* Expect an invalid schedule: code, path and a message fragment. */
static void expect_err(const mp_graph_t *g, mp_schedule_t *s, int code, const char *path,
                       const char *msg) {
  mp_sim_report_t r;
  mp_error_t err;
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), code);
  ck_assert_int_eq(err.code, code);
  ck_assert_str_eq(err.path, path);
  ck_assert_msg(strstr(err.message, msg) != NULL, "message '%s' lacks '%s'", err.message, msg);
  ck_assert_ptr_null(r.timeline);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
}

/* a(10) -> b(20) -> c(30); times 1, 2, 3 (tests/cases/sim_chain3_*). */
static const tn_t chain3[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 2}, {"c", {"b"}, 30, 3}};

/* a(10) -> b(20) -> c(30) -> d(40), times 1..4 (tests/cases/sim_chain4_*),
 * and the schedule of sim_chain4_hand_recompute: peak 110 at step 6. */
static const tn_t chain4[] = {{"a", {0}, 10, 1},
                              {"b", {"a"}, 20, 2},
                              {"c", {"b"}, 30, 3},
                              {"d", {"c"}, 40, 4}};
static const char *const hand4 =
    "C a; C b; C c; F b; C d; F d; B d; F c; R b; B c; F b; B b; F a; B a";

START_TEST(test_malformed_steps) {
  const tn_t big[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 1, 0, 0, 0, UINT64_MAX - 25}};
  mp_graph_t *g = build(chain3, 3, 0), *g3 = build(big, 2, 0);
  mp_schedule_t *s;
  uint64_t mb;
  /* steps built in C */
  s = mp_test_schedule(g, 0, "C a");
  s->steps[0].op = 7;
  expect_err(g, s, MP_ESCHEDULE, "$.steps[0]", "unknown op 7");
  s = mp_test_schedule(g, 0, "C a");
  s->steps[0].node = 99;
  expect_err(g, s, MP_ESCHEDULE, "$.steps[0]", "step 0 (compute '#99'): node index 99");
  /* 64-bit overflow of the transient moment: 10 + 20 + (2^64 - 26) (a
   * workspace no graph file can hold) */
  expect_err(g3, mp_test_schedule(g3, 0, "C a; C b"), MP_EOVERFLOW, "$.steps[1]", "overflow");
  ck_assert_int_eq(mp_min_budget(g3, &mb), MP_EOVERFLOW);
  mp_graph_free(g);
  mp_graph_free(g3);
}
END_TEST

/* A strategy with n1 after its successor n2 is refused (the valid one is
 * tests/cases/sim_chain6_three_segments_keep). */
START_TEST(test_broken_strategy) {
  const tn_t chain6[] = {{"n0", {0}, 10, 1},    {"n1", {"n0"}, 20, 2},
                         {"n2", {"n1"}, 30, 3, 0, 1}, {"n3", {"n2"}, 40, 4},
                         {"n4", {"n3"}, 50, 5}, {"n5", {"n4"}, 60, 6}};
  const uint32_t seg[] = {0, 0, 1, 1, 2, 2};
  mp_graph_t *g = build(chain6, 6, 0);
  mp_strategy_t *st = mp_strategy_new(g);
  mp_schedule_t *s;
  mp_error_t err;
  ck_assert_ptr_nonnull(st);
  memcpy(st->seg, seg, sizeof(seg));
  st->n_segments = 3;
  ck_assert_msg(mp_strategy_check(g, st, &err) == 0, "%s", err.message);
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  mp_schedule_free(s);
  st->seg[1] = 2;
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), MP_EINVAL);
  ck_assert_ptr_null(s);
  mp_strategy_free(st);
  mp_graph_free(g);
}
END_TEST

/* Inside a larger document the reader's paths start at base. */
START_TEST(test_json_read_base) {
  mp_graph_t *g = build(chain3, 3, 0);
  mp_error_t err;
  mp_schedule_t *s;
  json_t *doc = json_pack("{s:[{s:s,s:s}]}", "steps", "op", "compute", "node", "nope");
  ck_assert_int_eq(mp_schedule_from_json(g, doc, "$.schedule", &s, &err), MP_EUNKNOWN);
  ck_assert_str_eq(err.path, "$.schedule.steps[0].node");
  json_decref(doc);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_json_round_trip) {
  mp_graph_t *g = build(chain4, 4, 0);
  mp_schedule_t *s = mp_test_schedule(g, 0, hand4), *back, *af = mp_test_schedule(g, 1, "C a; C b; C c; C d; B d; R b; B c; B b; B a");
  mp_error_t err;
  json_t *j;
  char *text;
  size_t i;

  j = mp_schedule_to_json(g, s);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(json_string_value(json_object_get(j, "format")), "memplan.schedule/1");
  ck_assert_ptr_null(json_object_get(j, "auto_free"));
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "steps"), 8),
                                                     "op")),
                   "recompute");
  text = json_dumps(j, JSON_COMPACT);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(mp_schedule_load_buffer(g, text, strlen(text), &back, &err), 0);
  ck_assert_uint_eq(back->n_steps, s->n_steps);
  for (i = 0; i < s->n_steps; i++) {
    ck_assert_uint_eq(back->steps[i].op, s->steps[i].op);
    ck_assert_uint_eq(back->steps[i].node, s->steps[i].node);
  }
  ck_assert_int_eq(back->auto_free, 0);
  free(text);
  json_decref(j);
  mp_schedule_free(back);

  j = mp_schedule_to_json(g, af);
  ck_assert(json_is_true(json_object_get(j, "auto_free")));
  text = json_dumps(j, 0);
  ck_assert_int_eq(mp_schedule_load_buffer(g, text, strlen(text), &back, &err), 0);
  ck_assert_int_eq(back->auto_free, 1);
  ck_assert_str_eq(mp_test_schedule_text(g, back), "C a; C b; C c; C d; B d; R b; B c; B b; B a");
  ck_assert_uint_eq(sim_peak(g, back), 110);
  free(text);
  json_decref(j);
  mp_schedule_free(back);
  mp_schedule_free(s);
  mp_schedule_free(af);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_report_json) {
  mp_graph_t *g = build(chain4, 4, 0);
  mp_schedule_t *s = mp_test_schedule(g, 0, hand4);
  mp_sim_report_t r;
  mp_error_t err;
  json_t *j, *t, *tl;
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  j = mp_sim_report_to_json(g, &r, 1);
  ck_assert_ptr_nonnull(j);
  ck_assert(json_is_true(json_object_get(j, "valid")));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "peak_bytes")), 110);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "peak_step")), 6);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "const_bytes")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "steps")), 14);
  t = json_object_get(j, "time");
  ck_assert_double_eq(json_number_value(json_object_get(t, "forward")), 10);
  ck_assert_double_eq(json_number_value(json_object_get(t, "backward")), 20);
  ck_assert_double_eq(json_number_value(json_object_get(t, "recompute")), 2);
  ck_assert_double_eq(json_number_value(json_object_get(t, "total")), 32);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "overhead_pct")), 6.6666667, 1e-6);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "recomputed")), 1);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "recomputed"), 0)), "b");
  tl = json_object_get(j, "timeline");
  ck_assert_uint_eq(json_array_size(tl), 14);
  ck_assert_int_eq(json_integer_value(json_array_get(tl, 6)), 70);
  json_decref(j);
  j = mp_sim_report_to_json(g, &r, 0);
  ck_assert_ptr_null(json_object_get(j, "timeline"));
  json_decref(j);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* ---- Properties on random graphs ----------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)((rng_state >> 33) % n);
}

/* A random DAG: 2 sources (input, param) and n activations with up to 3
 * inputs among earlier nodes, random sizes, reads, workspace, flags. */
static mp_graph_t *random_graph(size_t n) {
  mp_graph_t *g = mp_graph_new();
  mp_error_t err;
  char ids[512][8];
  size_t i, total = n + 2;
  ck_assert_uint_le(total, 512);
  for (i = 0; i < total; i++) {
    mp_node_spec_t s;
    const char *in[3];
    size_t k, nin = 0;
    snprintf(ids[i], sizeof(ids[i]), "v%zu", i);
    mp_node_spec_init(&s);
    s.id = ids[i];
    s.where = "$";
    s.bytes = 1 + rnd(100);
    if (i < 2) {
      s.kind = i == 0 ? MP_KIND_INPUT : MP_KIND_PARAM;
    } else {
      nin = i == 2 ? 1 : 1 + rnd(3);
      for (k = 0; k < nin; k++) in[k] = ids[rnd(4) == 0 ? rnd(2) : i - 1 - rnd((uint32_t)(i < 6 ? i : 6))];
      s.inputs = in;
      s.n_inputs = nin;
      s.time = rnd(10);
      s.bwd_reads = (mp_bwd_reads_t)rnd(4);
      s.recompute = rnd(7) != 0;
      s.workspace_bytes = rnd(3) == 0 ? rnd(50) : 0;
    }
    ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  }
  ck_assert_msg(mp_graph_finalize(g, NULL, &err) == 0, "%s", err.message);
  return g;
}

/* A random valid strategy: each node's segment is at least its inputs'. */
static mp_strategy_t *random_strategy(const mp_graph_t *g) {
  mp_strategy_t *st = mp_strategy_new(g);
  /* a segment number grows by at most 2 per node */
  uint32_t *map = calloc(2 * g->n_nodes + 1, sizeof(uint32_t));
  uint32_t used = 0;
  size_t v, k;
  mp_error_t err;
  ck_assert_ptr_nonnull(st);
  ck_assert_ptr_nonnull(map);
  for (v = 0; v < g->n_nodes; v++) {
    uint32_t sg = 0;
    if (g->nodes[v].kind != MP_KIND_ACTIVATION) continue;
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
      if (st->seg[g->pred[k]] != MP_SEG_NONE && st->seg[g->pred[k]] > sg) sg = st->seg[g->pred[k]];
    if (rnd(4) == 0) sg += 1 + rnd(2);
    st->seg[v] = sg;
  }
  /* compact to 0..k-1 keeping the order */
  for (v = 0; v < g->n_nodes; v++)
    if (st->seg[v] != MP_SEG_NONE) map[st->seg[v]] = 1;
  for (v = 0; v <= 2 * g->n_nodes; v++)
    if (map[v]) map[v] = ++used;
  for (v = 0; v < g->n_nodes; v++)
    if (st->seg[v] != MP_SEG_NONE) st->seg[v] = map[st->seg[v]] - 1;
  st->n_segments = used;
  free(map);
  ck_assert_msg(mp_strategy_check(g, st, &err) == 0, "%s", err.message);
  return st;
}

START_TEST(test_random_properties) {
  int round;
  rng_state = 12345;
  for (round = 0; round < 200; round++) {
    mp_graph_t *g = random_graph(5 + rnd(40));
    mp_strategy_t *st = random_strategy(g);
    mp_schedule_t *s, *all, *raw, *af;
    mp_sim_report_t r, r2;
    mp_error_t err;
    uint64_t mb, p_all;
    size_t i, v;

    ck_assert_int_eq(mp_min_budget(g, &mb), 0);
    ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
    ck_assert_int_eq(mp_simulate(g, all, &r, &err), 0);
    p_all = r.peak_bytes;
    ck_assert_uint_ge(p_all, mb);
    ck_assert_uint_eq(r.timeline[r.n_steps - 1], g->const_bytes); /* all freed */
    ck_assert_uint_eq(r.n_recomputed, 0);
    ck_assert_double_eq_tol(r.time_forward, g->fwd_time, 1e-9);
    ck_assert_double_eq_tol(r.time_backward, g->bwd_time, 1e-9);
    mp_sim_report_free(&r);

    /* store_all without frees: valid, never lower */
    raw = mp_schedule_new();
    for (i = 0; i < all->n_steps; i++)
      if (all->steps[i].op != MP_STEP_FREE)
        ck_assert_int_eq(mp_schedule_push(raw, all->steps[i].op, all->steps[i].node), 0);
    ck_assert_uint_ge(sim_peak(g, raw), p_all);

    ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
    ck_assert_msg(mp_simulate(g, s, &r, &err) == 0, "round %d: %s", round, err.message);
    ck_assert_uint_ge(r.peak_bytes, mb);
    ck_assert_uint_eq(r.timeline[r.n_steps - 1], g->const_bytes);
    for (i = 0; i < r.n_recomputed; i++) {
      v = r.recomputed[i];
      ck_assert(g->nodes[v].recompute);
      ck_assert_uint_lt(st->seg[v], st->n_segments - 1);
    }
    /* the same schedule with its frees left to auto_free measures the same */
    af = mp_schedule_new();
    af->auto_free = 1;
    for (i = 0; i < s->n_steps; i++)
      if (s->steps[i].op != MP_STEP_FREE)
        ck_assert_int_eq(mp_schedule_push(af, s->steps[i].op, s->steps[i].node), 0);
    ck_assert_int_eq(mp_simulate(g, af, &r2, &err), 0);
    ck_assert_uint_eq(r2.peak_bytes, r.peak_bytes);
    ck_assert_uint_eq(r2.n_recomputed, r.n_recomputed);
    ck_assert_double_eq(r2.time_recompute, r.time_recompute);
    mp_sim_report_free(&r2);
    mp_sim_report_free(&r);
    mp_schedule_free(s);

    /* one segment: the strategy schedule is store_all */
    mp_strategy_free(st);
    st = mp_strategy_new(g);
    ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
    ck_assert_uint_eq(s->n_steps, all->n_steps);
    for (i = 0; i < s->n_steps; i++) {
      ck_assert_uint_eq(s->steps[i].op, all->steps[i].op);
      ck_assert_uint_eq(s->steps[i].node, all->steps[i].node);
    }

    mp_schedule_free(s);
    mp_schedule_free(af);
    mp_schedule_free(raw);
    mp_schedule_free(all);
    mp_strategy_free(st);
    mp_graph_free(g);
  }
}
END_TEST

START_TEST(test_large_chain) {
  /* 100,000 nodes of 1 byte: store_all peaks at B of the last node:
   * n - 1 values + its seed + its input's gradient = n + 1. */
  const size_t n = 100000;
  mp_graph_t *g = mp_graph_new();
  mp_strategy_t *st;
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  char id[16], prev[16];
  size_t v;
  uint64_t mb, p_all;
  for (v = 0; v < n; v++) {
    mp_node_spec_t sp;
    const char *in[1] = {prev};
    mp_node_spec_init(&sp);
    snprintf(id, sizeof(id), "n%zu", v);
    sp.id = id;
    sp.inputs = in;
    sp.n_inputs = v > 0;
    sp.bytes = 1;
    sp.time = 1;
    sp.where = "$";
    ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, &err), 0);
    memcpy(prev, id, sizeof(id));
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, &err), 0);
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  p_all = r.peak_bytes;
  ck_assert_uint_eq(p_all, n + 1);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  /* sqrt(n)-style segments of 316 nodes */
  st = mp_strategy_new(g);
  for (v = 0; v < n; v++) st->seg[v] = (uint32_t)(v / 316);
  st->n_segments = (uint32_t)((n - 1) / 316 + 1);
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 3);
  ck_assert_uint_lt(r.peak_bytes, 2000);
  ck_assert_uint_ge(r.peak_bytes, mb);
  /* every node but the kept ones (segment ends and the last segment) is
   * recomputed at most once */
  ck_assert_double_eq(r.time_recompute, (double)r.n_recompute_steps);
  ck_assert_uint_eq(r.n_recompute_steps, r.n_recomputed);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_strategy_free(st);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_shipped_plain_backprop) {
  /* docs/reference-figures.md: plain backpropagation freeing each value after
   * its last use peaks at 2.13 GB of activations on VGG19 and 3.47 GB on
   * ResNet50 (constant memory excluded). store_all is exactly that plan. */
  static const struct {
    const char *path;
    double gb;
  } cases[] = {{"tests/graphs/cg_vgg19.txt", 2.13}, {"tests/graphs/cg_resnet50.txt", 3.47}};
  size_t c;
  rng_state = 777;
  for (c = 0; c < 2; c++) {
    mp_graph_t *g;
    mp_schedule_t *s;
    mp_sim_report_t r;
    mp_error_t err;
    mp_strategy_t *st;
    uint64_t mb;
    int k;
    ck_assert_msg(mp_graph_load_file(cases[c].path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) == 0,
                  "%s: %s", cases[c].path, err.message);
    ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
    ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
    ck_assert_double_eq_tol((double)(r.peak_bytes - r.const_bytes) / 1e9, cases[c].gb, 0.005);
    ck_assert_int_eq(mp_min_budget(g, &mb), 0);
    ck_assert_uint_le(mb, r.peak_bytes);
    mp_sim_report_free(&r);
    mp_schedule_free(s);
    /* random strategies on real graphs give valid schedules */
    for (k = 0; k < 5; k++) {
      st = random_strategy(g);
      ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
      ck_assert_msg(mp_simulate(g, s, &r, &err) == 0, "%s", err.message);
      ck_assert_uint_ge(r.peak_bytes, mb);
      mp_sim_report_free(&r);
      mp_schedule_free(s);
      mp_strategy_free(st);
    }
    mp_graph_free(g);
  }
}
END_TEST

Suite *suite_simulator(void) {
  Suite *s = suite_create("simulator");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_malformed_steps);
  tcase_add_test(tc, test_broken_strategy);
  tcase_add_test(tc, test_json_read_base);
  tcase_add_test(tc, test_json_round_trip);
  tcase_add_test(tc, test_report_json);
  tcase_add_test(tc, test_random_properties);
  tcase_add_test(tc, test_large_chain);
  tcase_add_test(tc, test_shipped_plain_backprop);
  suite_add_tcase(s, tc);
  return s;
}
