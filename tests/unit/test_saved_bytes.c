/* test_saved_bytes.c - a node's saved_bytes (what its operation stashes for
 * backward beyond its inputs and output: dropout masks, max-pool indices):
 * when the simulator holds them, the lower bound, the hash and the round
 * trip through native JSON.
 *
 * The graph: a (100 B, saves 10) -> b (50 B, saves 7) -> c (20 B), no
 * constant memory, every backward reading its inputs. Live figures are
 * worked out by hand in the comments: "->" the transient moment, "=>" after
 * the step (and its automatic frees). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "graph.h"
#include "schedule.h"
#include "simulator.h"
#include "suites.h"
#include "test_util.h"

static const char *const chain =
    "{\"format\": \"memplan.graph/1\", \"nodes\": ["
    "{\"id\": \"a\", \"bytes\": 100, \"saved_bytes\": 10},"
    "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 50, \"saved_bytes\": 7},"
    "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 20}]}";

static mp_graph_t *load(const char *json) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  ck_assert_msg(mp_graph_load_buffer(json, strlen(json), MP_FORMAT_AUTO, NULL, NULL, &g, NULL,
                                     &err) == 0,
                "%s", err.message);
  return g;
}

/* Plain backpropagation: every computation is the last before its backward,
 * so every saved buffer is held from the compute to the backward.
 *  C a => 110 (a + its 10); C b => 167 (+ b + 7); C c -> 187, c unread => 167
 *  B c: seed gc 20, gb 50 -> 237; gc freed => 217; b unread after => 167
 *  B b: ga 100 -> 267; gb and b's 7 freed => 210; a unread after => 110
 *  B a -> 110; ga and a's 10 freed => 0.  Without saved bytes: 250. */
START_TEST(test_plain_holds_saved) {
  mp_graph_t *g = load(chain);
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a");
  mp_sim_report_t rep;
  static const uint64_t tl[] = {110, 167, 167, 167, 110, 0};
  size_t i;
  ck_assert_uint_eq(g->saved_bytes, 17);
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 267);
  ck_assert_uint_eq(rep.peak_step, 4);
  ck_assert_uint_eq(rep.n_steps, 6);
  for (i = 0; i < 6; i++) ck_assert_uint_eq(rep.timeline[i], tl[i]);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* b is recomputed before its backward: its first computation holds its
 * saved bytes only while it runs, the recomputation holds them.
 *  C a => 110; C b -> 167 (transient 7) => 160; C c => 180; F c => 160;
 *  F b => 110; R b => 167 (held); B c: gc 20, gb 50 -> 237 => 217;
 *  B b: ga 100 -> 317; gb 50 and b's 7 freed => 260; F b => 210;
 *  B a -> 210; ga 100 and a's 10 freed => 100; F a => 0. */
START_TEST(test_recompute_holds_last) {
  mp_graph_t *g = load(chain);
  mp_schedule_t *s =
      mp_test_schedule(g, 0, "C a; C b; C c; F c; F b; R b; B c; B b; F b; B a; F a");
  mp_sim_report_t rep;
  static const uint64_t tl[] = {110, 160, 180, 160, 110, 167, 217, 260, 210, 100, 0};
  size_t i;
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 317);
  ck_assert_uint_eq(rep.peak_step, 7);
  for (i = 0; i < 11; i++) ck_assert_uint_eq(rep.timeline[i], tl[i]);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* The transient of a computation that does not hold: a single node whose
 * first compute is followed by a recompute.
 *  C a -> 110 (transient 10) => 100; F a => 0; R a => 110 (held);
 *  B a: seed 100 -> 210; the seed and the 10 freed => 100; F a => 0. */
START_TEST(test_transient_not_held) {
  mp_graph_t *g = load("{\"format\": \"memplan.graph/1\", \"nodes\": ["
                       "{\"id\": \"a\", \"bytes\": 100, \"saved_bytes\": 10}]}");
  mp_schedule_t *s = mp_test_schedule(g, 0, "C a; F a; R a; B a; F a");
  mp_sim_report_t rep;
  static const uint64_t tl[] = {100, 0, 110, 100, 0};
  size_t i;
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 210);
  ck_assert_uint_eq(rep.peak_step, 3);
  for (i = 0; i < 5; i++) ck_assert_uint_eq(rep.timeline[i], tl[i]);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* The lower bound counts saved bytes in both needs. b: forward 100 + 50 + 7
 * = 157, backward gb 50 + ga 100 + a read 100 + 7 = 257; a: 110 and 110;
 * c: forward 70, backward 20 + 50 + 50 = 120. So 257 (250 without). */
START_TEST(test_min_budget_counts_saved) {
  mp_graph_t *g = load(chain);
  uint64_t lb = 0;
  ck_assert_int_eq(mp_min_budget(g, &lb), 0);
  ck_assert_uint_eq(lb, 257);
  mp_graph_free(g);
}
END_TEST

/* An explicit 0 hashes like an absent field, and hashes are unchanged for
 * graphs without it (the cache keys of stored graphs survive); any non-zero
 * value changes the hash. */
START_TEST(test_hash) {
  static const char *const without =
      "{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 100}]}";
  static const char *const zero =
      "{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 100, "
      "\"saved_bytes\": 0}]}";
  static const char *const one =
      "{\"format\": \"memplan.graph/1\", \"nodes\": [{\"id\": \"a\", \"bytes\": 100, "
      "\"saved_bytes\": 1}]}";
  char h0[65], h1[65], h2[65];
  mp_graph_t *g;
  g = load(without);
  ck_assert_int_eq(mp_graph_hash(g, h0), 0);
  mp_graph_free(g);
  g = load(zero);
  ck_assert_int_eq(mp_graph_hash(g, h1), 0);
  mp_graph_free(g);
  g = load(one);
  ck_assert_int_eq(mp_graph_hash(g, h2), 0);
  mp_graph_free(g);
  /* The hash of this one-node graph before saved_bytes existed. */
  ck_assert_str_eq(h0, "83ec22af42147cc4b540bcf9baf1e9215bbfb3ae888899041c7d9cba989cd232");
  ck_assert_str_eq(h0, h1);
  ck_assert_str_ne(h0, h2);
}
END_TEST

Suite *suite_saved_bytes(void) {
  Suite *s = suite_create("saved_bytes");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_plain_holds_saved);
  tcase_add_test(tc, test_recompute_holds_last);
  tcase_add_test(tc, test_transient_not_held);
  tcase_add_test(tc, test_min_budget_counts_saved);
  tcase_add_test(tc, test_hash);
  suite_add_tcase(s, tc);
  return s;
}
