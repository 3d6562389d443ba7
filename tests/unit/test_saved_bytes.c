/* test_saved_bytes.c - a node's saved_bytes (what its operation stashes for
 * backward beyond its inputs and output: dropout masks, max-pool indices):
 * when the simulator holds them, the lower bound, the hash, the round
 * trip through native JSON, and the DPs' model (dp_internal.h,
 * mp__step_cost): a per-segment term that finds plans a whole-graph sum
 * missed, and that still bounds the simulated peak on random DAGs.
 *
 * The graph: a (100 B, saves 10) -> b (50 B, saves 7) -> c (20 B), no
 * constant memory, every backward reading its inputs. Live figures are
 * worked out by hand in the comments: "->" the transient moment, "=>" after
 * the step (and its automatic frees). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "consistency.h"
#include "dp.h"
#include "dp_chain.h"
#include "formats.h"
#include "graph.h"
#include "plan.h"
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

/* The DP's saved-bytes term on a chain a..h of 100 B and time 1 each, every
 * backward reading its inputs, where b alone saves 300 B (no constant
 * memory, no workspace). A step from prefix i to prefix j costs k + 2 * 100
 * (j - i) + g (100 unless i is {}) + 300 when b is in the segment; keeping
 * a segment's last node adds its bytes (and b's 300 when b is that node) to
 * k. b not kept is recomputed before its backward (c reads its input), so it
 * holds nothing while later segments run.
 *  [a][bc][d][e][f][g][h]: 200 (k 100), 100 + 400 + 100 + 300 = 900 (k 200),
 *  then each single-node step k + 200 + 100, from 500 (k 300) to 900 (k 600
 *  into h): peak 900, recomputing b alone, kept 600.
 * The whole-graph sum added 300 to every step: the least budget of the
 * model without saved bytes (700) plus 300, so 1000, where its best plan
 * recomputes three nodes. It is emulated here by a 300 B workspace on b
 * instead of the saved bytes (the model reads only the largest workspace). */
static mp_graph_t *saved_chain(int as_workspace) {
  static const char *const ids[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  mp_graph_t *g = mp_graph_new();
  int i;
  ck_assert_ptr_nonnull(g);
  for (i = 0; i < 8; i++) {
    mp_node_spec_t sp;
    const char *in[1];
    mp_node_spec_init(&sp);
    sp.id = ids[i];
    in[0] = i > 0 ? ids[i - 1] : NULL;
    sp.inputs = in;
    sp.n_inputs = i > 0;
    sp.bytes = 100;
    sp.time = 1;
    if (i == 1 && as_workspace) sp.workspace_bytes = 300;
    if (i == 1 && !as_workspace) sp.saved_bytes = 300;
    ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, NULL), 0);
  return g;
}

static mp_dp_result_t dp_at(const mp_graph_t *g, int exact, uint64_t budget) {
  mp_dp_options_t o;
  mp_dp_result_t r;
  mp_error_t err;
  mp_dp_options_init(&o);
  o.exact = exact;
  o.budget = budget;
  ck_assert_msg(mp_dp_solve(g, &o, &r, &err) == 0, "%s", err.message);
  return r;
}

/* The simulated peak of a DP plan's schedule. */
static uint64_t sim_peak(const mp_graph_t *g, const mp_strategy_t *st) {
  mp_schedule_t *s;
  mp_sim_report_t rep;
  uint64_t peak;
  ck_assert_int_eq(mp_schedule_from_strategy(g, st, &s), 0);
  mp_test_simulate(g, s, NULL, &rep);
  peak = rep.peak_bytes;
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  return peak;
}

START_TEST(test_dp_per_segment_term) {
  mp_graph_t *g = saved_chain(0), *old = saved_chain(1);
  mp_dp_result_t r;
  mp_plan_options_t po;
  mp_plan_result_t pr;
  mp_error_t err;
  int exact;
  for (exact = 0; exact <= 1; exact++) { /* on a chain approx's family is every prefix too */
    r = dp_at(g, exact, 899);
    ck_assert_int_eq(r.feasible, 0);
    ck_assert_uint_eq(r.min_feasible_budget, 900);
    mp_dp_result_free(&r);
    r = dp_at(g, exact, 900);
    ck_assert_int_eq(r.feasible, 1);
    ck_assert_uint_eq(r.model_peak, 900);
    ck_assert_double_eq_tol(r.recompute_time, 1, 1e-12);
    ck_assert_uint_eq(r.strategy->n_segments, 7);
    ck_assert_uint_eq(r.kept_bytes, 600);
    ck_assert_uint_le(sim_peak(g, r.strategy), 900);
    mp_dp_result_free(&r);
    r = dp_at(g, exact, 1000);
    ck_assert_double_eq_tol(r.recompute_time, 1, 1e-12);
    mp_dp_result_free(&r);
    /* the old bound */
    r = dp_at(old, exact, 900);
    ck_assert_int_eq(r.feasible, 0);
    ck_assert_uint_eq(r.min_feasible_budget, 1000);
    mp_dp_result_free(&r);
    r = dp_at(old, exact, 1000);
    ck_assert_double_eq_tol(r.recompute_time, 3, 1e-12);
    mp_dp_result_free(&r);
  }
  /* the prefix DP has the same figures */
  mp_plan_options_init(&po);
  po.budget = 900;
  ck_assert_int_eq(mp__chain_solve(g, &po, 0, &r, &err), 0);
  ck_assert_int_eq(r.feasible, 1);
  ck_assert_uint_eq(r.model_peak, 900);
  ck_assert_double_eq_tol(r.recompute_time, 1, 1e-12);
  mp_dp_result_free(&r);
  po.budget = 899;
  ck_assert_int_eq(mp__chain_solve(g, &po, 0, &r, &err), 0);
  ck_assert_int_eq(r.feasible, 0);
  ck_assert_uint_eq(r.min_feasible_budget, 900);
  mp_dp_result_free(&r);
  /* and exact plans at 900 recomputing b alone (keeping everything holds
   * 800 B of values and b's 300 when the forward pass ends) */
  po.budget = 900;
  po.solver = MP_SOLVER_EXACT;
  ck_assert_int_eq(mp_plan(g, &po, &pr, &err), 0);
  ck_assert_int_eq(pr.feasible, 1);
  ck_assert_double_eq_tol(pr.sim.time_recompute, 1, 1e-12);
  ck_assert_uint_le(pr.sim.peak_bytes, 900);
  mp_plan_result_free(&pr);
  mp_graph_free(g);
  mp_graph_free(old);
}
END_TEST

static uint64_t sb_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A random layered DAG (layers of 1..3 nodes reading the layer before, one
 * time in three an earlier one too; with is_chain, a chain) whose nodes have
 * random bwd_reads, saved bytes (two in three, up to twice their bytes), now
 * and then a workspace, and one in eight recompute:false. */
static mp_graph_t *saved_dag(uint64_t *s, int layers, int is_chain) {
  mp_graph_t *g = mp_graph_new();
  char ids[64][16];
  int first[32], width[32], n = 0, l, k;
  mp_node_spec_t sp;
  ck_assert_ptr_nonnull(g);
  ck_assert_int_le(layers, 20);
  for (l = 0; l < layers; l++) { /* layer 0: one activation without inputs */
    first[l] = n;
    width[l] = is_chain || l == 0 || l == layers - 1 ? 1 : 1 + (int)(sb_next(s) % 3);
    for (k = 0; k < width[l]; k++, n++) {
      const char *in[3];
      size_t ni = 0;
      uint64_t r = sb_next(s);
      mp_node_spec_init(&sp);
      snprintf(ids[n], sizeof(ids[n]), "n%d", n);
      sp.id = ids[n];
      if (l > 0) {
        int a = first[l - 1] + (int)(r % (uint64_t)width[l - 1]);
        int b = first[l - 1] + (int)((r >> 4) % (uint64_t)width[l - 1]);
        in[ni++] = ids[a];
        if (b != a) in[ni++] = ids[b];
        if (!is_chain && l >= 2 && (r >> 8) % 3 == 0) in[ni++] = ids[(int)((r >> 10) % (uint64_t)first[l - 1])];
      }
      sp.inputs = in;
      sp.n_inputs = ni;
      sp.bytes = 1000 * (1 + (r >> 16) % 16);
      sp.time = (double)(1 + (r >> 24) % 10);
      sp.bwd_reads = (mp_bwd_reads_t)((r >> 28) % 4);
      if ((r >> 30) % 3 != 0) sp.saved_bytes = (r >> 32) % (2 * sp.bytes + 1);
      if ((r >> 44) % 6 == 0) sp.workspace_bytes = 500 * ((r >> 47) % 8);
      sp.recompute = (r >> 50) % 8 != 0;
      ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
    }
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, NULL), 0);
  return g;
}

/* On random DAGs and chains with saved bytes, at budgets from the lower
 * bound to above plain backpropagation's peak: every plan of the exact DP,
 * the approximate DP and the prefix DP simulates at or below its model peak,
 * which is within the budget; the least budget an infeasible answer names
 * plans there, at exactly that model peak; exact is never worse than approx,
 * nor the prefix DP (a subfamily) better than exact, and on chains it is
 * exact's optimum; and the solvers give one truth (mp_consistency_check:
 * monotone, least budgets, fit and frontier): exact, approx and auto, and
 * chain on chains (on other DAGs its answers do not agree yet, with or
 * without saved bytes). */
START_TEST(test_dp_model_bounds_sim_random) {
  uint64_t seed = 0x5eedULL * (uint64_t)(_i + 1) + 0x9e3779b97f4a7c15ULL;
  int d, checked = 0;
  for (d = 0; d < 5; d++) {
    int is_chain = d == 4;
    mp_graph_t *g = saved_dag(&seed, is_chain ? 6 + 2 * _i : 4 + d * 2 + _i % 3, is_chain);
    mp_schedule_t *all;
    mp_sim_report_t rep;
    uint64_t lo, hi, b[10];
    size_t i;
    int exact;
    ck_assert_int_eq(mp_min_budget(g, &lo), 0);
    ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
    mp_test_simulate(g, all, NULL, &rep);
    hi = rep.peak_bytes + rep.peak_bytes / 20;
    mp_sim_report_free(&rep);
    mp_schedule_free(all);
    for (i = 0; i < 10; i++) {
      double rec[2] = {HUGE_VAL, HUGE_VAL}; /* infeasible */
      b[i] = lo + (hi - lo) * i / 9;
      for (exact = 0; exact <= 1; exact++) {
        mp_dp_result_t r = dp_at(g, exact, b[i]);
        if (!r.feasible) {
          uint64_t m = r.min_feasible_budget;
          ck_assert_uint_gt(m, b[i]);
          mp_dp_result_free(&r);
          r = dp_at(g, exact, m);
          ck_assert_int_eq(r.feasible, 1);
          ck_assert_uint_eq(r.model_peak, m);
        } else {
          ck_assert_uint_le(r.model_peak, b[i]);
          rec[exact] = r.recompute_time;
        }
        ck_assert_msg(sim_peak(g, r.strategy) <= r.model_peak,
                      "dag %d seed %d budget %llu exact %d: simulated %llu above the model's %llu",
                      d, _i, (unsigned long long)b[i], exact,
                      (unsigned long long)sim_peak(g, r.strategy),
                      (unsigned long long)r.model_peak);
        checked++;
        mp_dp_result_free(&r);
      }
      {
        mp_plan_options_t po;
        mp_dp_result_t r, e = dp_at(g, 1, b[i]);
        mp_error_t err;
        mp_plan_options_init(&po);
        po.budget = b[i];
        ck_assert_int_eq(mp__chain_solve(g, &po, 0, &r, &err), 0);
        if (r.feasible) {
          ck_assert_int_eq(e.feasible, 1);
          ck_assert_uint_le(r.model_peak, b[i]);
          ck_assert_uint_le(sim_peak(g, r.strategy), r.model_peak);
          ck_assert(r.recompute_time >= e.recompute_time - 1e-9);
          if (is_chain) ck_assert_double_eq_tol(r.recompute_time, e.recompute_time, 1e-9);
          checked++;
        } else {
          ck_assert_uint_ge(r.min_feasible_budget, e.feasible ? 0 : e.min_feasible_budget);
          if (is_chain) ck_assert_uint_eq(r.min_feasible_budget, e.min_feasible_budget);
        }
        mp_dp_result_free(&r);
        mp_dp_result_free(&e);
      }
      ck_assert(rec[1] <= rec[0] + 1e-9); /* exact is never worse than approx */
    }
    if (is_chain || d % 2 == _i % 2) {
      static const mp_solver_t solvers[] = {MP_SOLVER_EXACT, MP_SOLVER_APPROX, MP_SOLVER_AUTO,
                                            MP_SOLVER_CHAIN};
      size_t k;
      for (k = 0; k < (is_chain ? 4u : 3u); k++) {
        mp_plan_options_t o;
        mp_consistency_t c;
        mp_error_t err;
        mp_plan_options_init(&o);
        o.solver = solvers[k];
        o.threads = 1;
        ck_assert_msg(mp_consistency_check(g, &o, b, 10, &c, &err) == 0, "%s", err.message);
        ck_assert_msg(c.monotone + c.point_feasible + c.point_promise + c.least + c.fit_feasible +
                              c.fit_promise + c.point_least == 0,
                      "dag %d seed %d %s: %s", d, _i, mp_solver_name(solvers[k]), c.first);
      }
    }
    mp_graph_free(g);
  }
  ck_assert_int_ge(checked, 80);
}
END_TEST

Suite *suite_saved_bytes(void) {
  Suite *s = suite_create("saved_bytes");
  TCase *tc = tcase_create("core");
  /* the random sweep plans at many budgets: a minute each on a quiet machine
   * at most, scaled by CK_TIMEOUT_MULTIPLIER (check_all.c) */
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_plain_holds_saved);
  tcase_add_test(tc, test_recompute_holds_last);
  tcase_add_test(tc, test_transient_not_held);
  tcase_add_test(tc, test_min_budget_counts_saved);
  tcase_add_test(tc, test_hash);
  tcase_add_test(tc, test_dp_per_segment_term);
  tcase_add_loop_test(tc, test_dp_model_bounds_sim_random, 0, 6);
  suite_add_tcase(s, tc);
  return s;
}
