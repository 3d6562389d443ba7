/* test_solver_chain.c - the prefix DP (planner/dp_chain.h) and the `chain`
 * solver: on random chains (random sizes, times, bwd_reads, recompute:false
 * nodes, workspace and saved bytes) it must find the exact DP's optimum, its
 * least budget and, through the portfolio, the recomputation `exact`
 * answers with; on transformer-shaped near-chains (tests/bench/gen_graphs.h)
 * its plans must simulate within the budget and its model can only be at or
 * above the exact DP's; auto's rule; the generators' determinism. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/gen_graphs.h"
#include "dp.h"
#include "dp_chain.h"
#include "graph.h"
#include "plan.h"
#include "schedule.h"
#include "suites.h"
#include "test_util.h"

static uint64_t tc_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A random chain of n activations, with a parameter input now and then. */
static mp_graph_t *tc_random_chain(int n, uint64_t seed) {
  mp_graph_t *g = mp_graph_new();
  char id[16], prev[16];
  int i;
  ck_assert_ptr_nonnull(g);
  for (i = 0; i < n; i++) {
    mp_node_spec_t sp;
    const char *in[2];
    char pid[16];
    size_t nin = 0;
    uint64_t r = tc_next(&seed);
    mp_node_spec_init(&sp);
    if (i > 0) in[nin++] = prev;
    if (r % 7 == 0) { /* a weight: constant memory between the activations */
      mp_node_spec_t pp;
      snprintf(pid, sizeof(pid), "w%d", i);
      mp_node_spec_init(&pp);
      pp.id = pid;
      pp.kind = MP_KIND_PARAM;
      pp.bytes = 100;
      ck_assert_int_eq(mp_graph_add_node(g, &pp, NULL, NULL), 0);
      in[nin++] = pid;
    }
    snprintf(id, sizeof(id), "a%d", i);
    sp.id = id;
    sp.inputs = in;
    sp.n_inputs = nin;
    sp.bytes = 1000 + (r >> 3) % 9000;
    sp.time = (double)((r >> 17) % 10);
    sp.bwd_reads = (mp_bwd_reads_t)((r >> 23) % 3);
    sp.recompute = (r >> 29) % 10 != 0;
    if ((r >> 33) % 8 == 0) sp.workspace_bytes = (r >> 36) % 3000;
    if ((r >> 40) % 9 == 0) sp.saved_bytes = (r >> 44) % 2000;
    ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
    snprintf(prev, sizeof(prev), "%s", id);
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, NULL), 0);
  return g;
}

/* Plain backpropagation's simulated peak and the lower bound. */
static void tc_range(const mp_graph_t *g, uint64_t *lo, uint64_t *hi) {
  mp_schedule_t *s;
  mp_sim_report_t rep;
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  mp_test_simulate(g, s, NULL, &rep);
  *hi = rep.peak_bytes;
  ck_assert_int_eq(mp_min_budget(g, lo), 0);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
}

static void tc_plan(const mp_graph_t *g, mp_solver_t solver, uint64_t budget,
                    mp_plan_result_t *r) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = solver;
  o.budget = budget;
  ck_assert_msg(mp_plan(g, &o, r, &err) == 0, "%s at %llu: %s", mp_solver_name(solver),
                (unsigned long long)budget, err.message);
}

/* Both DPs at budget b: the exact one into *ex, the prefix one into *ch. */
static void tc_dps(const mp_graph_t *g, uint64_t b, mp_dp_result_t *ex, mp_dp_result_t *ch) {
  mp_plan_options_t o;
  mp_dp_options_t d;
  mp_error_t err;
  mp_dp_options_init(&d);
  d.budget = b;
  ck_assert_int_eq(mp_dp_solve(g, &d, ex, &err), 0);
  mp_plan_options_init(&o);
  o.budget = b;
  ck_assert_int_eq(mp__chain_solve(g, &o, 0, ch, &err), 0);
}

/* The prefix DP against the exact DP, in the model and through the
 * portfolio, on random chains at budgets across their range. */
START_TEST(test_chain_matches_exact) {
  int gi, bi, checked = 0;
  for (gi = 0; gi < 40; gi++) {
    mp_graph_t *g = tc_random_chain(2 + gi % 23, 0x9e3779b97f4a7c15ULL * (uint64_t)(gi + 1));
    mp__chain_shape_t sh;
    uint64_t lo, hi;
    ck_assert_int_eq(mp__chain_shape(g, &sh), 0);
    ck_assert_int_eq(sh.chain, 1);
    tc_range(g, &lo, &hi);
    for (bi = 0; bi <= 8; bi++) {
      uint64_t b = lo + (hi - lo) * (uint64_t)bi / 8 + (bi == 8 ? 1 : 0);
      mp_dp_result_t ex, ch;
      mp_plan_result_t re, rc;
      tc_dps(g, b, &ex, &ch);
      ck_assert_int_eq(ch.feasible, ex.feasible);
      if (ex.feasible) {
        ck_assert_int_eq(ch.exact_used, 1);
        ck_assert_msg(fabs(ch.recompute_time - ex.recompute_time) < 1e-6,
                      "chain %d budget %llu: prefix DP %g, exact DP %g", gi,
                      (unsigned long long)b, ch.recompute_time, ex.recompute_time);
        ck_assert_uint_le(ch.model_peak, b);
      } else {
        ck_assert_uint_eq(ch.min_feasible_budget, ex.min_feasible_budget);
      }
      mp_dp_result_free(&ex);
      mp_dp_result_free(&ch);
      tc_plan(g, MP_SOLVER_EXACT, b, &re);
      tc_plan(g, MP_SOLVER_CHAIN, b, &rc);
      ck_assert_int_eq(rc.feasible, re.feasible);
      if (re.feasible) {
        ck_assert_msg(fabs(rc.sim.time_recompute - re.sim.time_recompute) < 1e-6,
                      "chain %d budget %llu: chain recomputes %g, exact %g", gi,
                      (unsigned long long)b, rc.sim.time_recompute, re.sim.time_recompute);
        ck_assert_uint_le(rc.sim.peak_bytes, b);
        ck_assert_int_eq(rc.exact, 1);
        ck_assert_int_eq(rc.solver_used, MP_SOLVER_CHAIN);
        if (rc.has_model) ck_assert_uint_le(rc.sim.peak_bytes, rc.model_peak);
        checked++;
      } else {
        ck_assert_uint_eq(rc.min_feasible_budget, re.min_feasible_budget);
      }
      mp_plan_result_free(&re);
      mp_plan_result_free(&rc);
    }
    mp_graph_free(g);
  }
  ck_assert_int_gt(checked, 200);
}
END_TEST

/* The prefix DP is exact on chains of every shape of make bench's random
 * chains (gen_graphs.h: uniform, heavy-tailed, staged and coupled sizes and
 * times), 400 nodes and two seeds each, at 10%, 30%, ..., 90% of the range:
 * the exact DP's optimum (over the chain's 401 lower sets; the two sum the
 * same times in different orders), proven (exact).
 * Speed on 10,000 and 100,000 nodes is make bench's (bench_chains.c). */
START_TEST(test_chain_random_shapes) {
  int shape, seed, k, checked = 0;
  for (shape = 0; shape < MP_GEN_CHAIN_SHAPES; shape++)
    for (seed = 1; seed <= 2; seed++) {
      mp_graph_t *g = mp_gen_chain_random(400, (uint64_t)seed, (mp_gen_chain_shape_t)shape);
      uint64_t lo, hi;
      ck_assert_ptr_nonnull(g);
      tc_range(g, &lo, &hi);
      for (k = 1; k <= 9; k += 2) {
        uint64_t b = lo + (hi - lo) / 10 * (uint64_t)k;
        mp_dp_result_t ex, ch;
        tc_dps(g, b, &ex, &ch);
        ck_assert_int_eq(ch.feasible, ex.feasible);
        if (ex.feasible) {
          ck_assert_msg(ch.exact_used, "%s seed %d at %d0%%: not proven",
                        mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), seed, k);
          ck_assert_msg(fabs(ch.recompute_time - ex.recompute_time) <= 1e-9 * ex.recompute_time,
                        "%s seed %d at %d0%%: prefix DP %g, exact DP %g",
                        mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), seed, k,
                        ch.recompute_time, ex.recompute_time);
          ck_assert_uint_le(ch.model_peak, b);
          checked++;
        }
        mp_dp_result_free(&ex);
        mp_dp_result_free(&ch);
      }
      mp_graph_free(g);
    }
  ck_assert_int_gt(checked, 35);
}
END_TEST

/* More random chains, of other lengths and seeds, at every 10% of the
 * range and one byte below its least budget: the prefix DP against the exact DP
 * (the same optimum, proven, within the budget; below the least budget the
 * same least budget). The exact passes merge their candidates in batches
 * and the beam is wide on chains (dp_chain.c); both must leave the answer
 * the exact DP's. */
START_TEST(test_chain_random_lengths) {
  static const size_t lens[] = {150, 250};
  int shape, seed, k, checked = 0;
  size_t li;
  for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
    for (shape = 0; shape < MP_GEN_CHAIN_SHAPES; shape++)
      for (seed = 3; seed <= 4; seed++) {
        mp_graph_t *g = mp_gen_chain_random(lens[li], (uint64_t)seed, (mp_gen_chain_shape_t)shape);
        uint64_t lo, hi;
        ck_assert_ptr_nonnull(g);
        tc_range(g, &lo, &hi);
        for (k = 0; k <= 10; k++) {
          uint64_t b = k == 0 ? lo - 1 : lo + (hi - lo) / 10 * (uint64_t)k;
          mp_dp_result_t ex, ch;
          tc_dps(g, b, &ex, &ch);
          ck_assert_int_eq(ch.feasible, ex.feasible);
          if (ex.feasible) {
            ck_assert_msg(ch.exact_used, "%s n=%zu seed %d at %d%%: not proven",
                          mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li], seed,
                          10 * k);
            ck_assert_msg(fabs(ch.recompute_time - ex.recompute_time) <=
                              1e-9 * (ex.recompute_time + 1),
                          "%s n=%zu seed %d at %d%%: prefix DP %g, exact DP %g",
                          mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li], seed,
                          10 * k, ch.recompute_time, ex.recompute_time);
            ck_assert_uint_le(ch.model_peak, b);
            checked++;
          } else {
            ck_assert_uint_eq(ch.min_feasible_budget, ex.min_feasible_budget);
          }
          mp_dp_result_free(&ex);
          mp_dp_result_free(&ch);
        }
        mp_graph_free(g);
      }
  ck_assert_int_gt(checked, 120);
}
END_TEST

/* The tail bound (dp_chain.c, mp__chain_tail): on random chains of every
 * shape, two shorter than the tail (it covers every state; 120 nodes at
 * 10%, 20%, ..., 90% of the range, 400 at 10%, 50% and 90%) and one longer
 * (1,100 nodes at 50%, the first shape only, to keep the test short), the
 * bound the exact passes start
 * from is built, never below the plain Lagrangian bound and never above
 * the exact DP's optimum (the least charged time), and the answer is still
 * that optimum, proven: a bound above some state's true cost to finish
 * would cut a pair of some optimal plan at some budget. */
START_TEST(test_chain_tail_bound) {
  static const size_t lens[] = {120, 400, 1100};
  int shape, k, checked = 0, raised = 0;
  size_t li;
  for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
    for (shape = 0; shape < (li == 2 ? 1 : MP_GEN_CHAIN_SHAPES); shape++) {
      mp_graph_t *g = mp_gen_chain_random(lens[li], 5, (mp_gen_chain_shape_t)shape);
      uint64_t lo, hi;
      ck_assert_ptr_nonnull(g);
      tc_range(g, &lo, &hi);
      for (k = li == 2 ? 5 : 1; k <= (li == 2 ? 5 : 9); k += li == 1 ? 4 : 1) {
        uint64_t b = lo + (hi - lo) / 10 * (uint64_t)k;
        mp_dp_options_t d;
        mp_plan_options_t o;
        mp_dp_result_t ex, ch;
        mp__chain_stats_t st;
        mp_error_t err;
        double tol;
        mp_dp_options_init(&d);
        d.budget = b;
        ck_assert_int_eq(mp_dp_solve(g, &d, &ex, &err), 0);
        mp_plan_options_init(&o);
        o.budget = b;
        ck_assert_int_eq(mp__chain_solve_ex(g, &o, 0, 0, &st, &ch, &err), 0);
        ck_assert_int_eq(ch.feasible, ex.feasible);
        if (ex.feasible) {
          const char *name = mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape);
          tol = 1e-9 * (ex.recompute_time + 1);
          ck_assert_msg(st.tail_labels > 0, "%s n=%zu at %d0%%: no tail bound", name, lens[li], k);
          ck_assert_msg(st.lb >= st.lb_plain, "%s n=%zu at %d0%%: tail bound %g below %g", name,
                        lens[li], k, st.lb, st.lb_plain);
          ck_assert_msg(st.lb <= ex.recompute_time + tol,
                        "%s n=%zu at %d0%%: bound %g above the optimum %g", name, lens[li], k,
                        st.lb, ex.recompute_time);
          ck_assert_msg(ch.exact_used && fabs(ch.recompute_time - ex.recompute_time) <= tol,
                        "%s n=%zu at %d0%%: prefix DP %g (exact %d), exact DP %g", name, lens[li],
                        k, ch.recompute_time, ch.exact_used, ex.recompute_time);
          raised += st.lb > st.lb_plain + tol;
          checked++;
        }
        mp_dp_result_free(&ex);
        mp_dp_result_free(&ch);
      }
      mp_graph_free(g);
    }
  ck_assert_int_gt(checked, 40);
  ck_assert_int_gt(raised, checked / 2);
}
END_TEST

/* Transformer-shaped near-chains: valid plans within the budget, the model
 * at or above the exact DP's (the prefixes are some of the lower sets). */
START_TEST(test_near_chain_valid) {
  static const size_t sizes[] = {15, 29, 43, 50};
  size_t i;
  int bi;
  for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    mp_graph_t *g = mp_gen_transformer(sizes[i], 7 + i);
    mp__chain_shape_t sh;
    uint64_t lo, hi;
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(mp__chain_shape(g, &sh), 0);
    ck_assert_int_eq(sh.chain, 0);
    ck_assert_uint_le(sh.width, MP__CHAIN_AUTO_WIDTH);
    tc_range(g, &lo, &hi);
    for (bi = 1; bi <= 6; bi++) {
      uint64_t b = lo + (hi - lo) * (uint64_t)bi / 6;
      mp_dp_result_t ex, ch;
      mp_plan_result_t rc;
      mp_error_t err;
      tc_dps(g, b, &ex, &ch);
      ck_assert_int_eq(ch.exact_used, 0);
      if (ch.feasible) {
        ck_assert(ex.feasible);
        ck_assert(ch.recompute_time >= ex.recompute_time - 1e-6);
        ck_assert_int_eq(mp_strategy_check(g, ch.strategy, &err), 0);
      }
      mp_dp_result_free(&ex);
      mp_dp_result_free(&ch);
      tc_plan(g, MP_SOLVER_CHAIN, b, &rc);
      if (rc.feasible) ck_assert_uint_le(rc.sim.peak_bytes, b);
      mp_plan_result_free(&rc);
    }
    mp_graph_free(g);
  }
}
END_TEST

/* The beam's skip (dp_chain.c, mp__chain_far_beam) on transformer-shaped
 * near-chains: the beam finds a plan of the same charged time as without
 * it, and the solve the same answer, with fewer steps. */
START_TEST(test_near_chain_beam_skip) {
  static const unsigned pct[] = {20, 30};
  mp_graph_t *g = mp_gen_transformer(1500, 1);
  uint64_t lo, hi;
  size_t i, v;
  ck_assert_ptr_nonnull(g);
  tc_range(g, &lo, &hi);
  for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
    mp_plan_options_t o;
    mp_dp_result_t r[2];
    mp__chain_stats_t st[2];
    mp_error_t err;
    int k;
    mp_plan_options_init(&o);
    o.budget = lo + (hi - lo) / 100 * pct[i];
    for (k = 0; k < 2; k++) {
      ck_assert_int_eq(mp__chain_solve_ex(g, &o, 0, k, &st[k], &r[k], &err), 0);
      ck_assert(r[k].feasible);
      ck_assert_uint_gt(st[k].beam_passes, 0); /* the beam ran */
      ck_assert_uint_le(r[k].model_peak, o.budget);
      ck_assert_int_eq(mp_strategy_check(g, r[k].strategy, &err), 0);
    }
    ck_assert_uint_eq(st[0].beam_passes, st[1].beam_passes);
    ck_assert(st[0].beam_charged < HUGE_VAL);
    ck_assert(st[0].beam_charged == st[1].beam_charged);
    ck_assert_uint_lt(st[0].work, st[1].work);
    ck_assert(r[0].recompute_time == r[1].recompute_time);
    ck_assert_uint_eq(r[0].model_peak, r[1].model_peak);
    ck_assert_uint_eq(r[0].kept_bytes, r[1].kept_bytes);
    ck_assert_uint_eq(r[0].strategy->n_segments, r[1].strategy->n_segments);
    for (v = 0; v < g->n_nodes; v++) ck_assert_uint_eq(r[0].strategy->seg[v], r[1].strategy->seg[v]);
    mp_dp_result_free(&r[0]);
    mp_dp_result_free(&r[1]);
  }
  mp_graph_free(g);
}
END_TEST

/* The beam's upper bound (dp_chain.c, mp__chain_next_cut): on a 2,000-node
 * chain the beam runs first and the exact passes still prove the exact DP's
 * optimum; from 30% of the range on, where the bound lies within two steps,
 * they take two passes, the one at the lower bound and the one at the
 * beam's plan (with the cut only doubling from the bound, four at 30%). */
START_TEST(test_chain_bound_jump) {
  static const unsigned pct[] = {20, 30, 40, 50};
  mp_graph_t *g = mp_gen_chain(2000, 1);
  uint64_t lo, hi;
  size_t i;
  ck_assert_ptr_nonnull(g);
  tc_range(g, &lo, &hi);
  for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
    mp_plan_options_t o;
    mp_dp_options_t d;
    mp_dp_result_t ch, ex;
    mp__chain_stats_t st;
    mp_error_t err;
    mp_plan_options_init(&o);
    o.budget = lo + (hi - lo) / 100 * pct[i];
    ck_assert_int_eq(mp__chain_solve_ex(g, &o, 0, 0, &st, &ch, &err), 0);
    mp_dp_options_init(&d);
    d.budget = o.budget;
    ck_assert_int_eq(mp_dp_solve(g, &d, &ex, &err), 0);
    ck_assert(ch.feasible && ex.feasible);
    ck_assert_int_eq(ch.exact_used, 1);
    ck_assert_msg(ch.recompute_time == ex.recompute_time, "at %u%%: %g against exact %g", pct[i],
                  ch.recompute_time, ex.recompute_time);
    ck_assert_uint_le(ch.model_peak, o.budget);
    ck_assert_int_eq(mp_strategy_check(g, ch.strategy, &err), 0);
    ck_assert_uint_gt(st.beam_passes, 0);
    if (pct[i] >= 30) ck_assert_uint_eq(st.exact_passes, 2);
    mp_dp_result_free(&ch);
    mp_dp_result_free(&ex);
  }
  mp_graph_free(g);
}
END_TEST

/* The pair limit (dp_chain.h, MP__CHAIN_PAIR_LIMIT): at 74% of the range, a
 * 30,000-node chain proves its optimum under the limit; a 100,000-node
 * chain's exact pass passes it and stops there, holding no more than the
 * limit and one state's pairs, and the answer is the beam's own plan (not
 * proven best): feasible in the model and in the strategy check, and
 * recomputing at most each node once. */
START_TEST(test_chain_pair_limit) {
  static const size_t sizes[] = {30000, 100000};
  size_t i;
  for (i = 0; i < 2; i++) {
    mp_graph_t *g = mp_gen_chain(sizes[i], 1);
    mp_plan_options_t o;
    mp_dp_result_t r;
    mp__chain_stats_t st;
    mp_error_t err;
    uint64_t lo, hi;
    ck_assert_ptr_nonnull(g);
    tc_range(g, &lo, &hi);
    mp_plan_options_init(&o);
    o.budget = lo + (hi - lo) / 100 * 74;
    ck_assert_int_eq(mp__chain_solve_ex(g, &o, 0, 0, &st, &r, &err), 0);
    ck_assert(r.feasible);
    ck_assert_uint_le(r.model_peak, o.budget);
    ck_assert_int_eq(mp_strategy_check(g, r.strategy, &err), 0);
    ck_assert_uint_eq(st.exact_passes, 2);
    if (i == 0) {
      ck_assert_int_eq(r.exact_used, 1);
      ck_assert_uint_lt(st.most_pairs, MP__CHAIN_PAIR_LIMIT);
    } else {
      ck_assert_int_eq(r.exact_used, 0);
      ck_assert_uint_gt(st.most_pairs, MP__CHAIN_PAIR_LIMIT);
      ck_assert_uint_lt(st.most_pairs, MP__CHAIN_PAIR_LIMIT + ((size_t)1 << 16));
      ck_assert(st.beam_charged < HUGE_VAL);
      ck_assert_msg(r.recompute_time == st.beam_charged, "answer %g, the beam's plan %g", r.recompute_time,
                    st.beam_charged);
      /* no plan recomputes a node more than once: at most the forward time */
      ck_assert(r.recompute_time <= g->fwd_time);
      ck_assert_str_eq(r.fallback_reason, "the prefix DP passed its work or memory limit; best plan found");
    }
    mp_dp_result_free(&r);
    mp_graph_free(g);
  }
}
END_TEST

/* auto's rule: large chains and near-chains go to the prefix DP, small ones
 * and wide graphs to the exact DP. */
START_TEST(test_auto_rule) {
  mp_graph_t *big = mp_gen_chain(MP__CHAIN_AUTO_MIN, 3);
  mp_graph_t *small = mp_gen_chain(MP__CHAIN_AUTO_MIN - 1, 3);
  mp_graph_t *tf = mp_gen_transformer(MP__CHAIN_AUTO_MIN + 100, 3);
  mp_plan_result_t r;
  uint64_t lo, hi;
  tc_range(big, &lo, &hi);
  tc_plan(big, MP_SOLVER_AUTO, lo + (hi - lo) / 2, &r);
  ck_assert(r.feasible);
  ck_assert_int_eq(r.solver_used, MP_SOLVER_CHAIN);
  ck_assert_int_eq(r.exact, 1);
  ck_assert_str_eq(r.source, "chain-dp");
  mp_plan_result_free(&r);
  tc_range(small, &lo, &hi);
  tc_plan(small, MP_SOLVER_AUTO, lo + (hi - lo) / 2, &r);
  ck_assert_int_ne(r.solver_used, MP_SOLVER_CHAIN);
  mp_plan_result_free(&r);
  tc_range(tf, &lo, &hi);
  tc_plan(tf, MP_SOLVER_AUTO, lo + (hi - lo) * 7 / 10, &r);
  ck_assert(r.feasible);
  ck_assert_int_eq(r.solver_used, MP_SOLVER_CHAIN);
  ck_assert_int_eq(r.exact, 0);
  ck_assert_uint_le(r.sim.peak_bytes, lo + (hi - lo) * 7 / 10);
  mp_plan_result_free(&r);
  mp_graph_free(big);
  mp_graph_free(small);
  mp_graph_free(tf);
  {
    mp_solver_t s;
    ck_assert_int_eq(mp_solver_parse("chain", &s), 0);
    ck_assert_int_eq(s, MP_SOLVER_CHAIN);
    ck_assert_str_eq(mp_solver_name(MP_SOLVER_CHAIN), "chain");
  }
}
END_TEST

/* The generators: exactly n activations, the same graph for the same
 * arguments. */
START_TEST(test_generators) {
  char h1[65], h2[65];
  mp_graph_t *a = mp_gen_transformer(200, 5), *b = mp_gen_transformer(200, 5);
  mp_graph_t *c = mp_gen_chain(300, 2);
  mp__chain_shape_t sh;
  ck_assert_uint_eq(a->n_activations, 200);
  ck_assert_uint_eq(c->n_activations, 300);
  ck_assert_int_eq(mp_graph_hash(a, h1), 0);
  ck_assert_int_eq(mp_graph_hash(b, h2), 0);
  ck_assert_str_eq(h1, h2);
  ck_assert_int_eq(mp__chain_shape(c, &sh), 0);
  ck_assert_int_eq(sh.chain, 1);
  ck_assert_uint_eq(sh.width, 1);
  mp_graph_free(a);
  mp_graph_free(b);
  mp_graph_free(c);
}
END_TEST

Suite *suite_solver_chain(void) {
  Suite *s = suite_create("solver_chain");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_chain_matches_exact);
  tcase_add_test(tc, test_chain_random_shapes);
  tcase_add_test(tc, test_chain_random_lengths);
  tcase_add_test(tc, test_chain_tail_bound);
  tcase_add_test(tc, test_near_chain_valid);
  tcase_add_test(tc, test_near_chain_beam_skip);
  tcase_add_test(tc, test_chain_bound_jump);
  tcase_add_test(tc, test_chain_pair_limit);
  tcase_add_test(tc, test_auto_rule);
  tcase_add_test(tc, test_generators);
  suite_add_tcase(s, tc);
  return s;
}
