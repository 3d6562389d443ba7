/* test_simulator.c - schedules, the liveness pass, the strategy and
 * store-all builders, the lower bound, the simulator's memory model (peaks,
 * timelines and times computed by hand in the comments), one test per
 * validity rule, and the schedule / report JSON. Graphs are built through
 * the builder API.
 *
 * Notation in the comments: "C x" compute, "R x" recompute, "F x" free,
 * "B x" backward; gX is the gradient of X; live figures include constant
 * memory; "->" gives the transient moment, "=>" the value after the step.
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


static void check_timeline(const mp_sim_report_t *r, const uint64_t *want, size_t n) {
  size_t i;
  ck_assert_uint_eq(r->n_steps, n);
  for (i = 0; i < n; i++)
    ck_assert_msg(r->timeline[i] == want[i], "timeline[%zu] = %llu, want %llu", i,
                  (unsigned long long)r->timeline[i], (unsigned long long)want[i]);
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

/* a(10) -> b(20) -> c(30); times 1, 2, 3; bwd times 2, 4, 6 (default 2x). */
static const tn_t chain3[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 2}, {"c", {"b"}, 30, 3}};

START_TEST(test_chain3_store_all) {
  mp_graph_t *g = build(chain3, 3, 0);
  mp_schedule_t *s, *raw, *af;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /* Reads: C b reads a, C c reads b, B c reads b, B b reads a; nothing
   * reads c, so c dies right after its compute; b after B c; a after B b.
   *  0 C a 10 | 1 C b 30 | 2 C c 60 | 3 F c 30
   *  4 B c: seed gc 30 -> 60, gb 20 -> 80 (peak), drop gc => 50
   *  5 F b 30 | 6 B b: ga 10 -> 40 => 20 | 7 F a 10 | 8 B a -> 10 => 0 */
  const uint64_t tl[] = {10, 30, 60, 30, 50, 30, 20, 10, 0};
  /* auto_free, per step as written: frees applied inside the step's entry:
   *  C a 10 | C b 30 | C c 60, F c => 30 | B c => 50, F b => 30
   *  | B b => 20, F a => 10 | B a => 0 */
  const uint64_t tl_auto[] = {10, 30, 30, 30, 10, 0};
  /* Without frees: 10, 30, 60; B c -> 60+30+20 = 110 => 80;
   * B b -> 90 => 70; B a -> 70 => 60. */
  const uint64_t tl_raw[] = {10, 30, 60, 80, 70, 60};

  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s), "C a; C b; C c; F c; B c; F b; B b; F a; B a");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 80);
  ck_assert_uint_eq(r.peak_step, 4);
  ck_assert_uint_eq(r.const_bytes, 0);
  check_timeline(&r, tl, 9);
  ck_assert_double_eq(r.time_forward, 6);
  ck_assert_double_eq(r.time_backward, 12);
  ck_assert_double_eq(r.time_recompute, 0);
  ck_assert_double_eq(r.time_total, 18);
  ck_assert_double_eq(r.overhead_pct, 0);
  ck_assert_uint_eq(r.n_recomputed, 0);
  ck_assert_uint_eq(r.n_frees, 3);
  mp_sim_report_free(&r);

  af = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a");
  ck_assert_int_eq(mp_simulate(g, af, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 80);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.n_frees, 3);
  check_timeline(&r, tl_auto, 6);
  mp_sim_report_free(&r);

  raw = mp_test_schedule(g, 0, "C a; C b; C c; B c; B b; B a");
  ck_assert_int_eq(mp_simulate(g, raw, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 110);
  ck_assert_uint_eq(r.peak_step, 3);
  check_timeline(&r, tl_raw, 6);
  mp_sim_report_free(&r);
  /* The liveness pass never raises the peak, and gives store_all exactly. */
  ck_assert_int_eq(mp_schedule_insert_frees(g, raw), 0);
  { /* (one text at a time: the buffer is shared) */
    char *want = strdup(mp_test_schedule_text(g, s));
    ck_assert_str_eq(mp_test_schedule_text(g, raw), want);
    free(want);
  }
  ck_assert_uint_le(sim_peak(g, raw), 110);
  /* insert_frees refuses a schedule that already has frees */
  ck_assert_int_eq(mp_schedule_insert_frees(g, raw), MP_EINVAL);

  /* min budget: a: max(10, 10) ; b: max(10+20, 20+10+10) = 40;
   * c: max(20+30, 30+20+20) = 70. */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 70);
  ck_assert_uint_le(mb, 80);
  mp_schedule_free(s);
  mp_schedule_free(raw);
  mp_schedule_free(af);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_diamond) {
  /* a(10) -> b(20), a -> c(30), b,c -> d(40); times 1..4, bwd 2..8. */
  const tn_t ns[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 2}, {"c", {"a"}, 30, 3},
                     {"d", {"b", "c"}, 40, 4}};
  mp_graph_t *g = build(ns, 4, 0);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /* Last reads: a by B b (orig 6), b and c by B d (4), d never (3).
   *  0 C a 10 | 1 C b 30 | 2 C c 60 | 3 C d 100 | 4 F d 60
   *  5 B d: gd 40, gb 20, gc 30 -> 150 (peak) => 110 | 6 F b 90 | 7 F c 60
   *  8 B c: ga 10 -> 70 => 40 | 9 B b: ga exists -> 40 => 20
   *  10 F a 10 | 11 B a => 0 */
  const uint64_t tl[] = {10, 30, 60, 100, 60, 110, 90, 60, 40, 20, 10, 0};
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s), "C a; C b; C c; C d; F d; B d; F b; F c; B c; B b; F a; B a");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 150);
  ck_assert_uint_eq(r.peak_step, 5);
  check_timeline(&r, tl, 12);
  ck_assert_double_eq(r.time_forward, 10);
  ck_assert_double_eq(r.time_backward, 20);
  ck_assert_double_eq(r.time_total, 30);
  mp_sim_report_free(&r);
  /* d: max(20+30+40, 40 + (20+30) grads + (20+30) values) = 140 */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 140);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_constant_memory) {
  /* x: input 100, w: param 1000, graph param_bytes 5: const = 1105.
   * a(10) = f(x, w), b(20) = f(a, w). */
  const tn_t ns[] = {{"x", {0}, 100, 0, MP_KIND_INPUT},
                     {"w", {0}, 1000, 0, MP_KIND_PARAM},
                     {"a", {"x", "w"}, 10, 1},
                     {"b", {"a", "w"}, 20, 2}};
  mp_graph_t *g = build(ns, 4, 5);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /*  0 C a 1115 | 1 C b 1135 | 2 F b 1115 | 3 B b: gb 20, ga 10 -> 1145 => 1125
   *  4 F a 1115 | 5 B a (reads x, w: constants) -> 1115 => 1105 */
  const uint64_t tl[] = {1115, 1135, 1115, 1125, 1115, 1105};
  ck_assert_uint_eq(g->const_bytes, 1105);
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s), "C a; C b; F b; B b; F a; B a");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 1145);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.const_bytes, 1105);
  check_timeline(&r, tl, 6);
  mp_sim_report_free(&r);
  /* b: max(10+20, 20+10+10) = 40, + 1105 */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 1145);
  mp_schedule_free(s);
  /* Inputs and params never appear in steps. */
  expect_err(g, mp_test_schedule(g, 0, "C x"), MP_ESCHEDULE, "$.steps[0]",
             "step 0 (compute 'x'): 'x' is an input node");
  expect_err(g, mp_test_schedule(g, 0, "C a; F w"), MP_ESCHEDULE, "$.steps[1]", "'w' is a param node");
  mp_graph_free(g);
}
END_TEST

START_TEST(test_bwd_reads_variants) {
  /* a(10) -> b(20, reads output) -> c(30, reads none). */
  const tn_t ns[] = {{"a", {0}, 10, 1},
                     {"b", {"a"}, 20, 1, 0, 0, MP_BWD_READS_OUTPUT},
                     {"c", {"b"}, 30, 1, 0, 0, MP_BWD_READS_NONE}};
  /* p(10) -> q(20, reads both) */
  const tn_t both[] = {{"p", {0}, 10, 1}, {"q", {"p"}, 20, 1, 0, 0, MP_BWD_READS_BOTH}};
  mp_graph_t *g = build(ns, 3, 0), *g2 = build(both, 2, 0);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /* Reads: C b reads a (1), C c reads b (2), B b reads b (4); B c and B a
   * read nothing. a dies after C b, c after C c, b after B b.
   *  0 C a 10 | 1 C b 30 | 2 F a 20 | 3 C c 50 | 4 F c 20
   *  5 B c: gc 30, gb 20 -> 70 (peak) => 40 | 6 B b: ga 10 -> 50 => 30
   *  7 F b 10 | 8 B a => 0 */
  const uint64_t tl[] = {10, 30, 20, 50, 20, 40, 30, 10, 0};
  /*  0 C p 10 | 1 C q 30 | 2 B q: gq 20, gp 10 -> 60 (peak) => 40
   *  3 F p 30 | 4 F q 10 | 5 B p => 0 */
  const uint64_t tl2[] = {10, 30, 40, 30, 10, 0};

  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s), "C a; C b; F a; C c; F c; B c; B b; F b; B a");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 70);
  ck_assert_uint_eq(r.peak_step, 5);
  check_timeline(&r, tl, 9);
  mp_sim_report_free(&r);
  /* c: max(20+30, 30+20+0) = 50; b: max(30, 20+10+20) = 50 */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 50);
  mp_schedule_free(s);
  /* B b reads its output: dropping it first is an error. */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; B c; F b; B b"), MP_ESCHEDULE, "$.steps[5]",
             "step 5 (backward 'b'): its own output is not in memory");
  /* B c reads nothing, so every value may be gone before it:
   *  0 C a 10 | 1 C b 30 | 2 F a 20 | 3 C c 50 | 4 F b 30 | 5 F c 0
   *  6 B c: gc 30, gb 20 -> 50 => 20 | 7 R a 30 | 8 R b 50
   *  9 B b: ga 10 -> 60 (peak) => 40 | 10 F b 20 | 11 F a 10 | 12 B a => 0 */
  s = mp_test_schedule(g, 0, "C a; C b; F a; C c; F b; F c; B c; R a; R b; B b; F b; F a; B a");
  ck_assert_uint_eq(sim_peak(g, s), 60);
  ck_assert_uint_ge(sim_peak(g, s), 50); /* min budget */
  mp_schedule_free(s);

  ck_assert_int_eq(mp_schedule_store_all(g2, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g2, s), "C p; C q; B q; F p; F q; B p");
  ck_assert_int_eq(mp_simulate(g2, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 60);
  ck_assert_uint_eq(r.peak_step, 2);
  check_timeline(&r, tl2, 6);
  mp_sim_report_free(&r);
  /* q: max(30, 20 + 10 + (10 + 20)) = 60: the bound is tight here. */
  ck_assert_int_eq(mp_min_budget(g2, &mb), 0);
  ck_assert_uint_eq(mb, 60);
  mp_schedule_free(s);
  mp_graph_free(g);
  mp_graph_free(g2);
}
END_TEST

START_TEST(test_workspace) {
  /* a(10) -> b(20, workspace 100). */
  const tn_t ns[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 1, 0, 0, 0, 100}};
  mp_graph_t *g = build(ns, 2, 0);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /*  0 C a 10 | 1 C b -> 10+20+100 = 130 => 30 | 2 F b 10
   *  3 B b: gb 20, ga 10 -> 40 + ws 100 = 140 (peak) => 20 | 4 F a 10 | 5 B a => 0 */
  const uint64_t tl[] = {10, 30, 10, 20, 10, 0};
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s), "C a; C b; F b; B b; F a; B a");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 140);
  ck_assert_uint_eq(r.peak_step, 3);
  check_timeline(&r, tl, 6);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  /* b: fwd 10+20+100 = 130, bwd 20+10+10+100 = 140. */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 140);
  mp_graph_free(g);
}
END_TEST

/* a(10) -> b(20) -> c(30) -> d(40), times 1..4, bwd 2..8. */
static const tn_t chain4[] = {{"a", {0}, 10, 1},
                              {"b", {"a"}, 20, 2},
                              {"c", {"b"}, 30, 3},
                              {"d", {"c"}, 40, 4}};
static const char *const hand4 =
    "C a; C b; C c; F b; C d; F d; B d; F c; R b; B c; F b; B b; F a; B a";

START_TEST(test_hand_recompute) {
  mp_graph_t *g = build(chain4, 4, 0);
  mp_schedule_t *s, *all, *af;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  /* Drop b after C c and recompute it for B c.
   *  0 C a 10 | 1 C b 30 | 2 C c 60 | 3 F b 40 | 4 C d 80 | 5 F d 40
   *  6 B d: gd 40, gc 30 -> 110 (peak) => 70 | 7 F c 40 | 8 R b 60
   *  9 B c: gb 20 -> 80 => 50 | 10 F b 30 | 11 B b: ga 10 -> 40 => 20
   *  12 F a 10 | 13 B a => 0 */
  const uint64_t tl[] = {10, 30, 60, 40, 80, 40, 70, 40, 60, 50, 30, 20, 10, 0};
  /* The same steps with auto_free (no frees written):
   *  C a 10 | C b 30 | C c 60, F b => 40 | C d 80, F d => 40
   *  | B d -> 110 => 70, F c => 40 | R b 60 | B c => 50, F b => 30
   *  | B b => 20, F a => 10 | B a => 0 */
  const uint64_t tl_auto[] = {10, 30, 40, 40, 40, 60, 30, 10, 0};
  s = mp_test_schedule(g, 0, hand4);
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 110);
  ck_assert_uint_eq(r.peak_step, 6);
  check_timeline(&r, tl, 14);
  ck_assert_double_eq(r.time_forward, 10);
  ck_assert_double_eq(r.time_recompute, 2);
  ck_assert_double_eq(r.time_backward, 20);
  ck_assert_double_eq(r.time_total, 32);
  ck_assert_double_eq_tol(r.overhead_pct, 100.0 * 2 / 30, 1e-12);
  ck_assert_uint_eq(r.n_recomputed, 1);
  ck_assert_uint_eq(r.recomputed[0], (uint32_t)mp_graph_find(g, "b"));
  ck_assert_uint_eq(r.n_recompute_steps, 1);
  mp_sim_report_free(&r);

  /* store_all on the same chain:
   *  C a 10 | C b 30 | C c 60 | C d 100 | F d 60 | B d -> 130 (peak) => 90
   *  | F c 60 | B c -> 80 => 50 | F b 30 | B b -> 40 => 20 | F a 10 | B a 0 */
  ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
  ck_assert_int_eq(mp_simulate(g, all, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 130);
  ck_assert_uint_eq(r.peak_step, 5);
  mp_sim_report_free(&r);

  af = mp_test_schedule(g, 1, "C a; C b; C c; C d; B d; R b; B c; B b; B a");
  ck_assert_int_eq(mp_simulate(g, af, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 110);
  ck_assert_uint_eq(r.peak_step, 4);
  check_timeline(&r, tl_auto, 9);
  ck_assert_uint_eq(r.n_frees, 5);
  mp_sim_report_free(&r);
  /* The liveness pass reproduces the hand-written frees exactly. */
  ck_assert_int_eq(mp_schedule_insert_frees(g, af), 0);
  ck_assert_int_eq(af->auto_free, 0);
  ck_assert_str_eq(mp_test_schedule_text(g, af), hand4);

  /* d: max(30+40, 40+30+30) = 100 <= 110 and <= 130 */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 100);
  mp_schedule_free(s);
  mp_schedule_free(all);
  mp_schedule_free(af);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_recompute_false) {
  tn_t ns[4];
  mp_graph_t *g;
  memcpy(ns, chain4, sizeof(ns));
  ns[1].no_recompute = 1; /* b: dropout-like */
  g = build(ns, 4, 0);
  expect_err(g, mp_test_schedule(g, 0, hand4), MP_ESCHEDULE, "$.steps[8]",
             "step 8 (recompute 'b'): node 'b' is marked recompute:false and must not be "
             "recomputed");
  mp_graph_free(g);
}
END_TEST

/* n0(10) -> n1(20) -> ... -> n5(60), times 1..6 (sum 21), bwd 2..12 (42). */
static const tn_t chain6[] = {{"n0", {0}, 10, 1},      {"n1", {"n0"}, 20, 2},
                              {"n2", {"n1"}, 30, 3},   {"n3", {"n2"}, 40, 4},
                              {"n4", {"n3"}, 50, 5},   {"n5", {"n4"}, 60, 6}};

static mp_strategy_t *strat(const mp_graph_t *g, const uint32_t *seg, uint32_t k) {
  mp_strategy_t *st = mp_strategy_new(g);
  mp_error_t err;
  ck_assert_ptr_nonnull(st);
  memcpy(st->seg, seg, g->n_nodes * sizeof(uint32_t));
  st->n_segments = k;
  ck_assert_msg(mp_strategy_check(g, st, &err) == 0, "%s", err.message);
  return st;
}

START_TEST(test_strategy_two_segments) {
  const uint32_t seg[] = {0, 0, 0, 1, 1, 1};
  mp_graph_t *g = build(chain6, 6, 0);
  mp_strategy_t *st = strat(g, seg, 2);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  /* Kept: n2 (W: successor n3 in segment 1) and segment 1 (last). Segment 0
   * backward reads n1 (B n2) and n0 (B n1): both recomputed, n0 first.
   *  0 C n0 10 | 1 C n1 30 | 2 F n0 20 | 3 C n2 50 | 4 F n1 30 | 5 C n3 70
   *  6 C n4 120 | 7 C n5 180 | 8 F n5 120
   *  9 B n5: g5 60, g4 50 -> 230 (peak) => 170 | 10 F n4 120
   *  11 B n4: g3 40 -> 160 => 110 | 12 F n3 70 | 13 B n3: g2 30 -> 100 => 60
   *  14 F n2 30 | 15 R n0 40 | 16 R n1 60 | 17 B n2: g1 20 -> 80 => 50
   *  18 F n1 30 | 19 B n1: g0 10 -> 40 => 20 | 20 F n0 10 | 21 B n0 => 0 */
  const uint64_t tl[] = {10, 30, 20, 50, 30, 70, 120, 180, 120, 170, 120,
                         110, 70, 60, 30, 40, 60, 50, 30, 20, 10, 0};
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s),
                   "C n0; C n1; F n0; C n2; F n1; C n3; C n4; C n5; F n5; B n5; F n4; B n4; "
                   "F n3; B n3; F n2; R n0; R n1; B n2; F n1; B n1; F n0; B n0");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 230);
  ck_assert_uint_eq(r.peak_step, 9);
  check_timeline(&r, tl, 22);
  ck_assert_uint_eq(r.n_recomputed, 2);
  ck_assert_uint_eq(r.recomputed[0], 0);
  ck_assert_uint_eq(r.recomputed[1], 1);
  ck_assert_double_eq(r.time_forward, 21);
  ck_assert_double_eq(r.time_recompute, 3);
  ck_assert_double_eq(r.time_backward, 42);
  ck_assert_double_eq(r.time_total, 66);
  mp_sim_report_free(&r);
  /* store_all peaks at B n5: 150 + g5 60 + g4 50 = 260 */
  mp_schedule_free(s);
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_uint_eq(sim_peak(g, s), 260);
  mp_schedule_free(s);
  mp_strategy_free(st);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_strategy_three_segments) {
  const uint32_t seg[] = {0, 0, 1, 1, 2, 2};
  mp_graph_t *g = build(chain6, 6, 0);
  mp_strategy_t *st = strat(g, seg, 3);
  mp_schedule_t *s;
  mp_sim_report_t r;
  mp_error_t err;
  uint64_t mb;
  tn_t ns[6];
  /* Kept: n1 (W0), n3 (W1), n4 and n5 (last segment). Segment 1: B n3
   * reads n2 -> recompute n2 (from n1); segment 0: B n1 reads n0 ->
   * recompute n0.
   *  0 C n0 10 | 1 C n1 30 | 2 F n0 20 | 3 C n2 50 | 4 C n3 90 | 5 F n2 60
   *  6 C n4 110 | 7 C n5 170 | 8 F n5 110
   *  9 B n5: g5 60, g4 50 -> 220 (peak) => 160 | 10 F n4 110
   *  11 B n4: g3 40 -> 150 => 100 | 12 F n3 60 | 13 R n2 90
   *  14 B n3: g2 30 -> 120 => 80 | 15 F n2 50 | 16 B n2: g1 20 -> 70 => 40
   *  17 F n1 20 | 18 R n0 30 | 19 B n1: g0 10 -> 40 => 20 | 20 F n0 10
   *  21 B n0 => 0 */
  const uint64_t tl[] = {10, 30, 20, 50, 90, 60, 110, 170, 110, 160, 110,
                         100, 60, 90, 80, 50, 40, 20, 30, 20, 10, 0};
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s),
                   "C n0; C n1; F n0; C n2; C n3; F n2; C n4; C n5; F n5; B n5; F n4; B n4; "
                   "F n3; R n2; B n3; F n2; B n2; F n1; R n0; B n1; F n0; B n0");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 220);
  ck_assert_uint_eq(r.peak_step, 9);
  check_timeline(&r, tl, 22);
  ck_assert_uint_eq(r.n_recomputed, 2);
  ck_assert_uint_eq(r.recomputed[0], 0);
  ck_assert_uint_eq(r.recomputed[1], 2);
  ck_assert_double_eq(r.time_recompute, 4);
  ck_assert_double_eq(r.time_total, 67);
  mp_sim_report_free(&r);
  /* n5: max(50+60, 60+50+50) = 160 */
  ck_assert_int_eq(mp_min_budget(g, &mb), 0);
  ck_assert_uint_eq(mb, 160);
  mp_schedule_free(s);
  mp_strategy_free(st);
  mp_graph_free(g);

  /* With n2 recompute:false it is kept: only n0 is recomputed.
   *  C n0 10 | C n1 30 | F n0 20 | C n2 50 | C n3 90 | C n4 140 | C n5 200
   *  | F n5 140 | B n5 -> 250 (peak, step 8) ... */
  memcpy(ns, chain6, sizeof(ns));
  ns[2].no_recompute = 1;
  g = build(ns, 6, 0);
  st = strat(g, seg, 3);
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s),
                   "C n0; C n1; F n0; C n2; C n3; C n4; C n5; F n5; B n5; F n4; B n4; F n3; "
                   "B n3; F n2; B n2; F n1; R n0; B n1; F n0; B n0");
  ck_assert_int_eq(mp_simulate(g, s, &r, &err), 0);
  ck_assert_uint_eq(r.peak_bytes, 250);
  ck_assert_uint_eq(r.peak_step, 8);
  ck_assert_uint_eq(r.n_recomputed, 1);
  ck_assert_uint_eq(r.recomputed[0], 0);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  /* A broken strategy (n1 after n2) is refused. */
  st->seg[1] = 2;
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), MP_EINVAL);
  ck_assert_ptr_null(s);
  mp_strategy_free(st);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_validity_rules) {
  /* a -> b, plus an independent activation z (its own output). */
  const tn_t two[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 1}, {"z", {0}, 5, 1}};
  const tn_t big[] = {{"a", {0}, 10, 1}, {"b", {"a"}, 20, 1, 0, 0, 0, UINT64_MAX - 25}};
  mp_graph_t *g = build(chain3, 3, 0), *g2 = build(two, 3, 0), *g3 = build(big, 2, 0);
  mp_schedule_t *s;

  /* operand missing */
  expect_err(g, mp_test_schedule(g, 0, "C a; F a; C b"), MP_ESCHEDULE, "$.steps[2]",
             "step 2 (compute 'b'): input 'a' is not in memory");
  /* double compute */
  expect_err(g, mp_test_schedule(g, 0, "C a; C a"), MP_ESCHEDULE, "$.steps[1]",
             "step 1 (compute 'a'): 'a' is already computed");
  /* recompute before compute */
  expect_err(g, mp_test_schedule(g, 0, "R a"), MP_ESCHEDULE, "$.steps[0]",
             "step 0 (recompute 'a'): 'a' has not been computed yet");
  /* recompute of a value still in memory */
  expect_err(g, mp_test_schedule(g, 0, "C a; R a"), MP_ESCHEDULE, "$.steps[1]",
             "the value of 'a' is already in memory");
  /* recompute with a missing operand */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; F a; F b; R b"), MP_ESCHEDULE, "$.steps[4]",
             "step 4 (recompute 'b'): input 'a' is not in memory");
  /* free of an absent value */
  expect_err(g, mp_test_schedule(g, 0, "C a; F a; F a"), MP_ESCHEDULE, "$.steps[2]",
             "step 2 (free 'a'): the value of 'a' is not in memory");
  /* backward before its successors */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; B b"), MP_ESCHEDULE, "$.steps[3]",
             "step 3 (backward 'b'): successor 'c' has not been backpropagated yet");
  /* backward reading a freed value */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; F b; B c"), MP_ESCHEDULE, "$.steps[4]",
             "step 4 (backward 'c'): input 'b' is not in memory (its backward reads its inputs)");
  /* backward twice */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; B c; B c"), MP_ESCHEDULE, "$.steps[4]",
             "'c' is already backpropagated");
  /* missing backward ("every node's gradient produced") */
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; B c; B b"), MP_ESCHEDULE, "$.steps",
             "node 'a' never backpropagated");
  expect_err(g, mp_test_schedule(g, 0, ""), MP_ESCHEDULE, "$.steps", "node 'a' never backpropagated (and 2 more)");
  /* compute after backward */
  expect_err(g2, mp_test_schedule(g2, 0, "C a; C b; B b; C z"), MP_ESCHEDULE, "$.steps[3]",
             "step 3 (compute 'z'): compute after the backward pass began at step 2");
  /* backward of a node never computed */
  expect_err(g2, mp_test_schedule(g2, 0, "C a; C b; B b; B a; B z"), MP_ESCHEDULE, "$.steps[4]",
             "'z' was never computed");
  /* auto_free with an explicit free */
  expect_err(g, mp_test_schedule(g, 1, "C a; F a"), MP_ESCHEDULE, "$.steps[1]", "explicit free in an auto_free");
  /* malformed steps built in C */
  s = mp_test_schedule(g, 0, "C a");
  s->steps[0].op = 7;
  expect_err(g, s, MP_ESCHEDULE, "$.steps[0]", "unknown op 7");
  s = mp_test_schedule(g, 0, "C a");
  s->steps[0].node = 99;
  expect_err(g, s, MP_ESCHEDULE, "$.steps[0]", "step 0 (compute '#99'): node index 99");
  /* 64-bit overflow of the transient moment: 10 + 20 + (2^64 - 26) */
  expect_err(g3, mp_test_schedule(g3, 0, "C a; C b"), MP_EOVERFLOW, "$.steps[1]", "overflow");
  {
    uint64_t mb;
    ck_assert_int_eq(mp_min_budget(g3, &mb), MP_EOVERFLOW);
  }
  mp_graph_free(g);
  mp_graph_free(g2);
  mp_graph_free(g3);
}
END_TEST

static void expect_json_err(const mp_graph_t *g, const char *text, int code, const char *path,
                            const char *msg) {
  mp_schedule_t *s = (mp_schedule_t *)1;
  mp_error_t err;
  ck_assert_int_eq(mp_schedule_load_buffer(g, text, strlen(text), &s, &err), code);
  ck_assert_ptr_null(s);
  ck_assert_str_eq(err.path, path);
  ck_assert_msg(strstr(err.message, msg) != NULL, "message '%s' lacks '%s'", err.message, msg);
}

START_TEST(test_json_read_errors) {
  mp_graph_t *g = build(chain3, 3, 0);
  mp_error_t err;
  mp_schedule_t *s;
  json_t *doc;
  expect_json_err(g, "{\"steps\":[{\"op\":\"compute\",\"node\":\"a\"},{\"op\":\"frob\",\"node\":\"b\"}]}",
                  MP_EINVAL, "$.steps[1].op", "unknown op 'frob'");
  expect_json_err(g, "{\"steps\":[{\"op\":\"compute\",\"node\":\"a\"},{\"op\":\"compute\",\"node\":\"zz\"}]}",
                  MP_EUNKNOWN, "$.steps[1].node", "unknown node 'zz'");
  expect_json_err(g, "{\"steps\":[{\"op\":\"compute\",\"node\":3}]}", MP_EINVAL, "$.steps[0].node",
                  "must be a string");
  expect_json_err(g, "{\"steps\":[{\"op\":1,\"node\":\"a\"}]}", MP_EINVAL, "$.steps[0].op",
                  "must be a string");
  expect_json_err(g, "{\"steps\":[{\"op\":\"compute\"}]}", MP_EINVAL, "$.steps[0]",
                  "missing field 'node'");
  expect_json_err(g, "{\"steps\":[{\"node\":\"a\"}]}", MP_EINVAL, "$.steps[0]", "missing field 'op'");
  expect_json_err(g, "{\"steps\":[{\"op\":\"compute\",\"node\":\"a\",\"x\":1}]}", MP_EINVAL,
                  "$.steps[0]", "unknown field 'x'");
  expect_json_err(g, "{\"steps\":[7]}", MP_EINVAL, "$.steps[0]", "must be an object");
  expect_json_err(g, "{\"steps\":{}}", MP_EINVAL, "$.steps", "must be an array");
  expect_json_err(g, "{}", MP_EINVAL, "$", "missing field 'steps'");
  expect_json_err(g, "[]", MP_EINVAL, "$", "must be a JSON object");
  expect_json_err(g, "{\"format\":\"memplan.schedule/2\",\"steps\":[]}", MP_EINVAL, "$.format",
                  "unknown schedule format");
  expect_json_err(g, "{\"auto_free\":1,\"steps\":[]}", MP_EINVAL, "$.auto_free", "true or false");
  expect_json_err(g,
                  "{\"auto_free\":true,\"steps\":[{\"op\":\"compute\",\"node\":\"a\"},"
                  "{\"op\":\"free\",\"node\":\"a\"}]}",
                  MP_EINVAL, "$.steps[1].op", "explicit free in an auto_free schedule");
  /* syntax errors carry a line */
  ck_assert_int_eq(mp_schedule_load_buffer(g, "{\n\"steps\": [,]}", 15, &s, &err), MP_EPARSE);
  ck_assert_int_eq(err.line, 2);
  ck_assert_int_eq(mp_schedule_load_buffer(g, "{\"steps\":[],\"steps\":[]}", 23, &s, &err),
                   MP_EPARSE);
  /* inside a larger document the paths start at base */
  doc = json_pack("{s:[{s:s,s:s}]}", "steps", "op", "compute", "node", "nope");
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
  /* ALGORITHMS.md section 4: plain backpropagation freeing each value after
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
  tcase_add_test(tc, test_chain3_store_all);
  tcase_add_test(tc, test_diamond);
  tcase_add_test(tc, test_constant_memory);
  tcase_add_test(tc, test_bwd_reads_variants);
  tcase_add_test(tc, test_workspace);
  tcase_add_test(tc, test_hand_recompute);
  tcase_add_test(tc, test_recompute_false);
  tcase_add_test(tc, test_strategy_two_segments);
  tcase_add_test(tc, test_strategy_three_segments);
  tcase_add_test(tc, test_validity_rules);
  tcase_add_test(tc, test_json_read_errors);
  tcase_add_test(tc, test_json_round_trip);
  tcase_add_test(tc, test_report_json);
  tcase_add_test(tc, test_random_properties);
  tcase_add_test(tc, test_large_chain);
  tcase_add_test(tc, test_shipped_plain_backprop);
  suite_add_tcase(s, tc);
  return s;
}
