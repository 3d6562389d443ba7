/* test_consistency.c - one truth per solver (mp_consistency_check,
 * consistency.h): plans, least feasible budgets, frontiers and the fit
 * lookup agree, on random layered DAGs with skip edges (a fixed seed) and
 * on shipped graphs at a few budgets.
 *
 * What every solver must satisfy: feasibility is monotone in the budget; a
 * frontier point's budget plans, no more costly than the point; mp_fit
 * (what /v1/fit and `memplan fit` answer) is the plan, exactly (fits, least
 * budget, cost, peak, solver), at every budget the check plans. Every
 * solver but the greedy migration ones (swap, hybrid) also: min_feasible_
 * budget is the least budget with a plan and the plan there peaks exactly
 * at it; the frontier's first point is that budget (the greedy searches
 * from the budget may plan below the least budget they name). Solvers
 * whose plans come from a fixed family (none, memonger, sqrt, layrub) agree
 * exactly: every frontier point is the plan's cost, and a plan's own peak
 * plans it again. chain's frontier is sampled from its plans, so every
 * point is the plan's cost there too. The other DP solvers' frontier above
 * their least model budget is the model's staircase, an upper bound on what
 * plan finds there (frontier.h). Set
 * MP_CONSISTENCY_VERBOSE to see every count.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consistency.h"
#include "dp.h"
#include "dp_internal.h"
#include "../layered_dag.h"
#include "plan_internal.h"
#include "fit.h"
#include "formats.h"
#include "frontier.h"
#include "schedule.h"
#include "suites.h"
#include "test_util.h"

/* A random layered DAG: an input, then `layers` layers of 1..3 nodes, each
 * reading one or two nodes of the layer before and, one time in three, a
 * node of an earlier layer (a skip edge). Sizes 1..16 MB, times 1..10. */
static mp_graph_t *random_dag(uint64_t *s, int layers) {
  mp_graph_t *g = mp_graph_new();
  char ids[128][16];
  int first[64], width[64], n = 0, l, k;
  mp_node_spec_t sp;
  ck_assert_ptr_nonnull(g);
  mp_node_spec_init(&sp);
  sp.id = "in";
  sp.kind = MP_KIND_INPUT;
  sp.bytes = 4000000;
  ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
  for (l = 0; l < layers; l++) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    first[l] = n;
    width[l] = l == 0 || l == layers - 1 ? 1 : 1 + (int)(*s % 3);
    for (k = 0; k < width[l]; k++, n++) {
      const char *in[3];
      size_t ni = 0;
      mp_node_spec_init(&sp);
      snprintf(ids[n], sizeof(ids[n]), "n%d", n);
      sp.id = ids[n];
      *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
      if (l == 0) {
        in[ni++] = "in";
      } else {
        int a = first[l - 1] + (int)(*s % (uint64_t)width[l - 1]);
        int b = first[l - 1] + (int)((*s >> 8) % (uint64_t)width[l - 1]);
        in[ni++] = ids[a];
        if (b != a && (*s >> 16) % 2) in[ni++] = ids[b];
        if (l >= 2 && (*s >> 20) % 3 == 0) in[ni++] = ids[(int)((*s >> 24) % (uint64_t)first[l - 1])];
      }
      sp.inputs = in;
      sp.n_inputs = ni;
      sp.bytes = 1000000 * (1 + (*s >> 32) % 16);
      sp.time = (double)(1 + (*s >> 40) % 10);
      ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
    }
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, NULL), 0);
  return g;
}

/* `n` budgets from the graph's lower bound to 5% above plain
 * backpropagation's simulated peak. */
static void grid(const mp_graph_t *g, uint64_t *b, size_t n) {
  mp_schedule_t *all;
  mp_sim_report_t rep;
  uint64_t lo, hi;
  size_t i;
  ck_assert_int_eq(mp_min_budget(g, &lo), 0);
  ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
  mp_test_simulate(g, all, NULL, &rep);
  hi = rep.peak_bytes + rep.peak_bytes / 20;
  for (i = 0; i < n; i++) b[i] = lo + (uint64_t)((double)(hi - lo) * (double)i / (double)(n - 1));
  mp_sim_report_free(&rep);
  mp_schedule_free(all);
}

/* What each solver must satisfy (see the top of the file), under the
 * options o (its solver among them). */
static void check_options(const char *what, const mp_graph_t *g, const mp_plan_options_t *po,
                          const uint64_t *b, size_t n) {
  mp_plan_options_t o = *po;
  mp_consistency_t c;
  mp_error_t err;
  mp_solver_t s = o.solver;
  int fixed = s == MP_SOLVER_NONE || s == MP_SOLVER_MEMONGER || s == MP_SOLVER_SQRT ||
              s == MP_SOLVER_LAYRUB;
  int greedy = s == MP_SOLVER_SWAP || s == MP_SOLVER_HYBRID;
  ck_assert_msg(mp_consistency_check(g, &o, b, n, &c, &err) == 0, "%s %s: %s", what,
                mp_solver_name(s), err.message);
  if (getenv("MP_CONSISTENCY_VERBOSE"))
    fprintf(stderr, "%s %s: plans %zu points %zu mono %zu least %zu closure %zu cost_up %zu fit %zu/%zu/%zu/%zu points %zu/%zu/%zu/%zu/%zu %s\n", what,
            mp_solver_name(s), c.n_plans, c.n_points, c.monotone, c.least, c.closure, c.cost_up, c.fit_feasible,
            c.fit_promise, c.fit_cost, c.fit_peak, c.point_feasible, c.point_promise, c.point_cost, c.point_least,
            c.point_between, c.first);
  ck_assert_msg(c.n_plans >= n && c.n_points >= 1, "%s %s: %zu plans, %zu points", what,
                mp_solver_name(s), c.n_plans, c.n_points);
  ck_assert_msg(c.n_fit == c.n_plans, "%s %s: %zu budgets fitted, %zu planned", what, mp_solver_name(s),
                c.n_fit, c.n_plans);
  ck_assert_msg(c.fit_feasible + c.fit_promise + c.fit_cost + c.fit_peak == 0,
                "%s %s: fit against plan: fits %zu, above %zu, costs %zu, peaks/solvers %zu (first: %s)", what,
                mp_solver_name(s), c.fit_feasible, c.fit_promise, c.fit_cost, c.fit_peak, c.first);
  ck_assert_msg(c.monotone + c.point_feasible + c.point_promise == 0,
                "%s %s: monotone %zu, points %zu/%zu (first: %s)", what, mp_solver_name(s),
                c.monotone, c.point_feasible, c.point_promise, c.first);
  if (!greedy)
    ck_assert_msg(c.least + c.point_least == 0, "%s %s: least %zu, first point %zu (first: %s)", what,
                  mp_solver_name(s), c.least, c.point_least, c.first);
  /* every frontier point is the plan at its budget, cost for cost (the DP
   * solvers' and the migration solvers' sampled from their plans,
   * frontier_sampled.c; the others' are their fixed proposals) */
  ck_assert_msg(c.point_cost == 0, "%s %s: point costs %zu (first: %s)", what, mp_solver_name(s),
                c.point_cost, c.first);
  /* a larger budget never costs more, so the staircase bounds the plans
   * between its points (the migration solvers' greedy promises neither) */
  if (!greedy)
    ck_assert_msg(c.cost_up + c.point_between == 0, "%s %s: cost up %zu, above the staircase %zu (first: %s)",
                  what, mp_solver_name(s), c.cost_up, c.point_between, c.first);
  if (fixed)
    ck_assert_msg(c.closure + c.point_cost == 0, "%s %s: closure %zu, point costs %zu (first: %s)", what,
                  mp_solver_name(s), c.closure, c.point_cost, c.first);
}

static void check_solver(const char *what, const mp_graph_t *g, mp_solver_t s, int reuse,
                         const uint64_t *b, size_t n) {
  mp_plan_options_t o;
  mp_plan_options_init(&o);
  o.solver = s;
  o.threads = 1;
  o.device.intra_layer_reuse = reuse;
  check_options(what, g, &o, b, n);
}

static const mp_solver_t all_solvers[] = {
    MP_SOLVER_EXACT, MP_SOLVER_APPROX, MP_SOLVER_AUTO, MP_SOLVER_CHAIN, MP_SOLVER_MEMONGER,
    MP_SOLVER_SQRT,  MP_SOLVER_NONE,   MP_SOLVER_LAYRUB, MP_SOLVER_SWAP, MP_SOLVER_HYBRID};
#define N_SOLVERS (sizeof(all_solvers) / sizeof(all_solvers[0]))

/* Random DAGs, every solver, twelve budgets each. */
START_TEST(test_consistency_random) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL + (uint64_t)_i * 7919u, b[12];
  int d;
  for (d = 0; d < 3; d++) {
    char what[32];
    mp_graph_t *g = random_dag(&seed, 6 + d * 3);
    size_t k;
    snprintf(what, sizeof(what), "dag %d.%d", _i, d);
    grid(g, b, 12);
    for (k = 0; k < N_SOLVERS; k++) check_solver(what, g, all_solvers[k], 0, b, 12);
    mp_graph_free(g);
  }
}
END_TEST

/* The exact solver's fallback (the window family of 300 sets, with its
 * slack walk, least plans and climb: cand_climb.c) on layered DAGs of 60
 * and 80 nodes whose lattices hold 8.2 and 3.6 times that (2,460 and 1,082
 * lower sets), at twelve budgets (on 80/s1 the climb answers the
 * eleventh: it recomputes 6, as the slack plan that answered before it
 * did, at a lower peak). */
START_TEST(test_consistency_fallback) {
  static const struct {
    size_t n;
    unsigned seed;
  } dags[] = {{60, 1}, {80, 1}};
  mp_graph_t *g = mp_tl_layered_dag(dags[_i].n, dags[_i].seed, 30);
  mp_plan_options_t o;
  uint64_t b[12];
  char what[32];
  ck_assert_ptr_nonnull(g);
  snprintf(what, sizeof(what), "layered %zu/%u", dags[_i].n, dags[_i].seed);
  grid(g, b, 12);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.threads = 1;
  o.max_lower_sets = 1;
  o.window_sets = 300;
  check_options(what, g, &o, b, 12);
  mp_graph_free(g);
}
END_TEST

/* The shipped graphs that plan in milliseconds, at eight budgets. */
START_TEST(test_consistency_shipped) {
  static const char *const names[] = {"vgg19", "unet", "resnet50"};
  mp_graph_t *g = mp_test_load_shipped(names[_i]);
  uint64_t b[8];
  size_t k;
  grid(g, b, 8);
  for (k = 0; k < N_SOLVERS; k++)
    if (all_solvers[k] != MP_SOLVER_HYBRID && all_solvers[k] != MP_SOLVER_SWAP)
      check_solver(names[_i], g, all_solvers[k], 0, b, 8);
  mp_graph_free(g);
}
END_TEST

/* A transformer-shaped chain: `layers` blocks of layer norm, a fused QKV
 * projection, attention scores and softmax (the big values), context,
 * projection, a residual add, then the feed-forward pair (4x wide) and a
 * second residual add. */
static mp_graph_t *transformer(int layers) {
  static const struct {
    const char *op;
    int in1, in2; /* inputs: 0 the block's input, k > 0 the k-th node of the block, -1 none */
    uint64_t mb;
    double time;
  } blk[] = {{"ln1", 0, -1, 48, 4},   {"qkv", 1, -1, 144, 30}, {"scores", 2, -1, 192, 20},
             {"softmax", 3, -1, 192, 8}, {"ctx", 4, 2, 48, 20}, {"proj", 5, -1, 48, 10},
             {"add1", 6, 0, 48, 2},   {"ln2", 7, -1, 48, 4},   {"ffn1", 8, -1, 192, 40},
             {"gelu", 9, -1, 192, 6}, {"ffn2", 10, -1, 48, 40}, {"add2", 11, 7, 48, 2}};
  mp_graph_t *g = mp_graph_new();
  char ids[12][24], prev[24] = "in";
  mp_node_spec_t sp;
  int l, k;
  mp_node_spec_init(&sp);
  sp.id = "in";
  sp.kind = MP_KIND_INPUT;
  sp.bytes = 48u << 20;
  ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
  for (l = 0; l < layers; l++) {
    for (k = 0; k < 12; k++) {
      const char *in[2];
      mp_node_spec_init(&sp);
      snprintf(ids[k], sizeof(ids[k]), "%s_%d", blk[k].op, l);
      in[0] = blk[k].in1 == 0 ? prev : ids[blk[k].in1 - 1];
      sp.n_inputs = 1;
      if (blk[k].in2 >= 0) in[sp.n_inputs++] = blk[k].in2 == 0 ? prev : ids[blk[k].in2 - 1];
      sp.id = ids[k];
      sp.inputs = in;
      sp.bytes = blk[k].mb << 20;
      sp.time = blk[k].time;
      ck_assert_int_eq(mp_graph_add_node(g, &sp, NULL, NULL), 0);
    }
    snprintf(prev, sizeof(prev), "%s", ids[11]);
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, NULL), 0);
  return g;
}

/* swap's greedy from the budget is not monotone on a 24-block transformer
 * (it planned at 15.4 GB, not at 17.0 GB, naming 18.4 GB as its least
 * budget): with the least-peak plan of its search as the fallback, every
 * budget above that plan's peak plans, and every answer names that peak. */
START_TEST(test_swap_monotone_transformer) {
  mp_graph_t *g = transformer(24);
  uint64_t b[21];
  grid(g, b, 21);
  check_solver("transformer24", g, MP_SOLVER_SWAP, 0, b, 21);
  mp_graph_free(g);
}
END_TEST

/* auto sends a transformer-shaped graph of 1,008 activations (width 4) to
 * chain, so its frontier is chain's, sampled from chain's plans: every point
 * is what plan --solver auto returns at its budget, cost for cost (it was
 * the exact DP's staircase, promising plans of another family). */
START_TEST(test_auto_chain_frontier_is_its_plans) {
  mp_graph_t *g = transformer(84);
  mp_plan_options_t o;
  mp_frontier_t f;
  mp_consistency_t c;
  mp_error_t err;
  uint64_t b[9];
  grid(g, b, 9);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_AUTO;
  o.threads = 1;
  ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
  ck_assert_int_eq(f.solver_used, MP_SOLVER_CHAIN);
  ck_assert(!f.exact);
  ck_assert_ptr_nonnull(strstr(f.exact_reason, "sampled"));
  ck_assert_uint_ge(f.n_points, 2);
  mp_frontier_free(&f);
  ck_assert_int_eq(mp_consistency_check(g, &o, b, 9, &c, &err), 0);
  ck_assert_uint_ge(c.n_points, 2);
  ck_assert_msg(c.monotone + c.least + c.point_feasible + c.point_promise + c.point_cost + c.point_least == 0,
                "auto on a near-chain: monotone %zu least %zu points %zu/%zu/%zu/%zu (first: %s)", c.monotone,
                c.least, c.point_feasible, c.point_promise, c.point_cost, c.point_least, c.first);
  ck_assert_msg(c.fit_feasible + c.fit_promise + c.fit_cost + c.fit_peak == 0, "fit: %s", c.first);
  mp_graph_free(g);
}
END_TEST

/* The exact DP's least model budget on g. */
static uint64_t exact_dp_least(const mp_graph_t *g) {
  mp_dp_options_t d;
  mp_dp_result_t dr;
  uint64_t least;
  mp_dp_options_init(&d);
  d.budget = 0;
  ck_assert_int_eq(mp_dp_solve(g, &d, &dr, NULL), 0);
  ck_assert(!dr.feasible);
  least = dr.min_feasible_budget;
  mp_dp_result_free(&dr);
  return least;
}

/* `exact` on g at `budget`, one thread; the caller frees *r. */
static void plan_exact(const mp_graph_t *g, uint64_t budget, mp_plan_result_t *r) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.threads = 1;
  o.budget = budget;
  ck_assert_msg(mp_plan(g, &o, r, &err) == 0, "%s", err.message);
}

/* The exact DP's own plan at `budget` on g, simulated: its recomputation
 * (the baseline the portfolio must never do worse than). */
static double dp_plan_recompute(const mp_graph_t *g, uint64_t budget) {
  mp_dp_options_t d;
  mp_dp_result_t dr;
  mp_schedule_t *s = NULL;
  mp_sim_report_t rep;
  double rec;
  mp_dp_options_init(&d);
  d.budget = budget;
  ck_assert_int_eq(mp_dp_solve(g, &d, &dr, NULL), 0);
  ck_assert(dr.feasible);
  ck_assert_int_eq(mp_schedule_from_strategy(g, dr.strategy, &s), 0);
  mp_test_simulate(g, s, NULL, &rep);
  rec = rep.time_recompute;
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_dp_result_free(&dr);
  return rec;
}

/* The slack walk (cand_recompute.c): U-Net at 5,489,154,824 B is a budget
 * where a DP plan asked at a larger model budget still simulates within
 * this one and recomputes less than the exact DP's plan at the budget, so
 * the walk must answer there: the answer fits, comes from a rung of the
 * walk (a model peak above the budget), and recomputes less than the DP's
 * own plan. */
START_TEST(test_slack_plan) {
  const uint64_t budget = 5489154824u;
  mp_graph_t *g = mp_test_load_shipped("unet");
  mp_plan_result_t r;
  const char *s;
  double dp_rec = dp_plan_recompute(g, budget);
  plan_exact(g, budget, &r);
  ck_assert(r.feasible);
  ck_assert_uint_le(r.sim.peak_bytes, budget);
  s = r.source;
  ck_assert_msg(strlen(s) > 9 && strcmp(s + strlen(s) - 9, "-dp-slack") == 0, "source %s", s);
  ck_assert_uint_gt(r.model_peak, budget); /* found at a larger model budget */
  ck_assert_msg(r.sim.time_recompute < dp_rec, "slack plan %g, the DP's plan at the budget %g",
                r.sim.time_recompute, dp_rec);
  mp_plan_result_free(&r);
  mp_graph_free(g);
}
END_TEST

/* More memory never costs more: `exact` on U-Net and ResNet-50 at 121
 * budgets from the least one to plain backpropagation's peak. mp_fit
 * answers as mp_plan does (test_consistency_shipped checks it). */
START_TEST(test_cost_monotone) {
  static const char *const names[] = {"unet", "resnet50"};
  size_t k, i, n = 121, ups = 0;
  for (k = 0; k < 2; k++) {
    mp_graph_t *g = mp_test_load_shipped(names[k]);
    mp_plan_options_t o;
    mp_plan_result_t r;
    mp_fit_t fit;
    mp_error_t err;
    uint64_t b[121], lo, hi;
    double least = 1e300;
    mp_plan_options_init(&o);
    o.solver = MP_SOLVER_EXACT;
    o.threads = 1;
    o.budget = 0;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
    ck_assert(!r.feasible);
    lo = r.min_feasible_budget;
    mp_plan_result_free(&r);
    o.budget = UINT64_MAX;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
    hi = r.sim.peak_bytes;
    mp_plan_result_free(&r);
    for (i = 0; i < n; i++) b[i] = lo + (hi - lo) / (n - 1) * i;
    ck_assert_int_eq(mp_fit(g, &o, b, n, &fit, &err), 0);
    for (i = 0; i < n; i++) {
      ck_assert_msg(fit.answers[i].feasible, "%s: no plan at %llu", names[k], (unsigned long long)b[i]);
      if (fit.answers[i].recompute > least) {
        if (ups++ == 0)
          fprintf(stderr, "%s at %llu: %g after %g\n", names[k], (unsigned long long)b[i],
                  fit.answers[i].recompute, least);
      }
      if (fit.answers[i].recompute < least) least = fit.answers[i].recompute;
    }
    mp_fit_free(&fit);
    mp_graph_free(g);
  }
  ck_assert_uint_eq(ups, 0);
}
END_TEST

/* `exact`'s least feasible budget on g: what it names at budget 0. */
static uint64_t exact_least(const mp_graph_t *g) {
  mp_plan_result_t r;
  uint64_t least;
  plan_exact(g, 0, &r);
  ck_assert(!r.feasible);
  least = r.min_feasible_budget;
  mp_plan_result_free(&r);
  return least;
}

/* The least budgets are simulated peaks, below the DP's own least model
 * budget (the model is pessimistic, and the least plans' local search,
 * cand_refine.c, lowers them further): on U-Net, VGG-19 and ResNet-50,
 * `exact`'s least budget L is above mp_min_budget's bound and below the
 * exact DP's least model budget; one byte less has no plan and names L;
 * the plan at L peaks exactly at L, from a plan the model did not give
 * (no model figures); and cost never falls as the budget shrinks: the plan
 * at L recomputes no less than the plans at the DP's least model budget,
 * one byte under it and one byte over it, which recompute no less than each
 * other in that order. On VGG-19 L is mp_min_budget's bound itself, which
 * no schedule beats. */
START_TEST(test_least_budget_is_a_peak) {
  static const char *const names[] = {"unet", "vgg19", "resnet50"};
  size_t i;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    mp_graph_t *g = mp_test_load_shipped(names[i]);
    mp_plan_result_t r, below, at_min, at_min_less, above_min;
    uint64_t least = exact_least(g), dp_min = exact_dp_least(g), lb;
    ck_assert_int_eq(mp_min_budget(g, &lb), 0);
    ck_assert_msg(lb <= least && least < dp_min, "%s: bound %llu, least %llu, the DP's least %llu", names[i],
                  (unsigned long long)lb, (unsigned long long)least, (unsigned long long)dp_min);
    if (strcmp(names[i], "vgg19") == 0) ck_assert_uint_eq(least, lb);
    plan_exact(g, least, &r);
    ck_assert_msg(r.feasible, "%s", names[i]);
    ck_assert_uint_eq(r.sim.peak_bytes, least);
    ck_assert_int_eq(r.has_model, 0);
    plan_exact(g, least - 1, &below);
    ck_assert(!below.feasible);
    ck_assert_uint_eq(below.min_feasible_budget, least);
    plan_exact(g, dp_min, &at_min);
    plan_exact(g, dp_min - 1, &at_min_less);
    plan_exact(g, dp_min + 1, &above_min);
    ck_assert(at_min.feasible && at_min_less.feasible && above_min.feasible);
    ck_assert_double_ge(r.sim.time_recompute, at_min_less.sim.time_recompute);
    ck_assert_double_ge(at_min_less.sim.time_recompute, at_min.sim.time_recompute);
    ck_assert_double_ge(at_min.sim.time_recompute, above_min.sim.time_recompute);
    mp_plan_result_free(&r);
    mp_plan_result_free(&below);
    mp_plan_result_free(&at_min);
    mp_plan_result_free(&at_min_less);
    mp_plan_result_free(&above_min);
    mp_graph_free(g);
  }
}
END_TEST

/* Cancelling a plan at any of its polls, the least plans' local search
 * (cand_refine.c) among them: ResNet-50 at budget 1 (infeasible, so the
 * DP's least plan and both searches run) polls should_stop some hundreds
 * of times; stopped at the k-th poll, for 40 values of k spread over all
 * of them, the plan returns MP_ECANCELED with a message and no answer, or,
 * where a poll's verdict comes after the work it guards, the uncancelled
 * answer. (The ASan build checks that nothing leaks on the way out.) */
typedef struct {
  long polls, stop_at;
} poll_count_t;

static int stop_at_poll(void *arg) {
  poll_count_t *p = arg;
  return ++p->polls >= p->stop_at && p->stop_at > 0;
}

START_TEST(test_cancel_anywhere) {
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  mp_plan_options_t o;
  mp_plan_result_t full, r;
  mp_error_t err;
  poll_count_t pc = {0, 0};
  long total, k;
  int i, cancelled = 0;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.budget = 1;
  o.threads = 1;
  o.should_stop = stop_at_poll;
  o.stop_arg = &pc;
  ck_assert_int_eq(mp_plan(g, &o, &full, &err), 0);
  ck_assert(!full.feasible);
  ck_assert_uint_eq(full.min_feasible_budget, 969269792u);
  total = pc.polls;
  ck_assert_int_gt(total, 40);
  for (i = 0; i < 40; i++) {
    int rc;
    k = 1 + (total - 1) * i / 39;
    pc.polls = 0;
    pc.stop_at = k;
    rc = mp_plan(g, &o, &r, &err);
    if (rc == MP_ECANCELED) {
      ck_assert_ptr_null(r.schedule);
      ck_assert(err.message[0] != '\0');
      cancelled++;
    } else {
      ck_assert_msg(rc == 0, "stopped at poll %ld of %ld: %d %s", k, total, rc, err.message);
      ck_assert_uint_eq(r.min_feasible_budget, full.min_feasible_budget);
      mp_plan_result_free(&r);
    }
  }
  ck_assert_int_gt(cancelled, 30);
  mp_plan_result_free(&full);
  mp_graph_free(g);
}
END_TEST

/* hybrid dominates Layrub under the same device: at Layrub's own peak (the
 * least budget it meets) and above, hybrid fits, no slower. */
START_TEST(test_hybrid_dominates_layrub) {
  static const char *const names[] = {"unet", "vgg19", "resnet50"};
  mp_graph_t *g = mp_test_load_shipped(names[_i]);
  mp_plan_options_t o;
  mp_plan_result_t l, h;
  mp_error_t err;
  int k;
  mp_plan_options_init(&o);
  o.device.intra_layer_reuse = 1;
  o.solver = MP_SOLVER_LAYRUB;
  ck_assert_int_eq(mp_plan(g, &o, &l, &err), 0);
  for (k = 0; k < 2; k++) {
    o.solver = MP_SOLVER_HYBRID;
    o.budget = l.sim.peak_bytes + (uint64_t)k * (l.sim.peak_bytes / 50);
    ck_assert_int_eq(mp_plan(g, &o, &h, &err), 0);
    ck_assert_msg(h.feasible && h.sim.time_total <= l.sim.time_total + 1e-9,
                  "%s at %llu: hybrid %s, time %g vs layrub %g", names[_i],
                  (unsigned long long)o.budget, h.feasible ? "fits" : "does not fit",
                  h.sim.time_total, l.sim.time_total);
    mp_plan_result_free(&h);
  }
  mp_plan_result_free(&l);
  mp_graph_free(g);
}
END_TEST

/* A plan of a large near-chain solves the prefix DP at its budget and the
 * slack walk's first rungs at once, on its threads (dp_chain_many.c): the
 * answers equal one thread's, field for field, at 13 budgets of a
 * 1,008-activation transformer (auto plans it with the prefix DP), with a
 * should_stop that counts its calls (one thread at a time, so a plain
 * counter) and never stops. Some answers must come from the walk, or the
 * test would not test it. A should_stop that stops at once cancels on
 * every thread count. */
static int count_calls(void *arg) {
  ++*(long *)arg;
  return 0;
}

static int stop_now(void *arg) {
  (void)arg;
  return 1;
}

START_TEST(test_chain_walk_threads) {
  mp_graph_t *g = transformer(84);
  uint64_t b[13];
  size_t i;
  int walked = 0;
  long calls = 0;
  grid(g, b, 13);
  for (i = 0; i < 13; i++) {
    mp_plan_result_t r1, r3;
    mp_plan_options_t o;
    mp_error_t err;
    mp_plan_options_init(&o);
    o.budget = b[i];
    o.threads = 1;
    ck_assert_int_eq(mp_plan(g, &o, &r1, &err), 0);
    o.threads = 3;
    o.should_stop = count_calls;
    o.stop_arg = &calls;
    ck_assert_msg(mp_plan(g, &o, &r3, &err) == 0, "%s", err.message);
    ck_assert_int_eq(r1.solver_used, MP_SOLVER_CHAIN);
    ck_assert_msg(r1.feasible == r3.feasible && r1.sim.peak_bytes == r3.sim.peak_bytes &&
                      r1.sim.time_recompute == r3.sim.time_recompute &&
                      r1.n_segments == r3.n_segments &&
                      r1.min_feasible_budget == r3.min_feasible_budget &&
                      (r1.source == NULL) == (r3.source == NULL) &&
                      (r1.source == NULL || strcmp(r1.source, r3.source) == 0),
                  "at %llu: 1 thread %s %g, 3 threads %s %g", (unsigned long long)b[i],
                  r1.source ? r1.source : "-", r1.sim.time_recompute, r3.source ? r3.source : "-",
                  r3.sim.time_recompute);
    walked += r1.source != NULL && strcmp(r1.source, "chain-dp-slack") == 0;
    mp_plan_result_free(&r1);
    mp_plan_result_free(&r3);
  }
  ck_assert_int_gt(walked, 0);
  ck_assert_int_gt(calls, 0);
  {
    mp_plan_result_t r;
    mp_plan_options_t o;
    mp_error_t err;
    mp_plan_options_init(&o);
    o.budget = b[6];
    o.threads = 3;
    o.should_stop = stop_now;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), MP_ECANCELED);
  }
  mp_graph_free(g);
}
END_TEST

/* Plans on parallel threads answer as one thread does (plan_many.c): a
 * fit and a frontier with 3 threads equal those with 1, field for field, for
 * a DP solver and a migration one, on U-Net and a random DAG, and for auto
 * on a near-chain (where it plans with the prefix DP, which shares no
 * session; hybrid there takes a minute). */
static void fit_and_frontier(const mp_graph_t *g, mp_solver_t s, unsigned threads, const uint64_t *b,
                             size_t n, mp_fit_t *fit, mp_frontier_t *f) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = s;
  o.threads = threads;
  ck_assert_msg(mp_fit(g, &o, b, n, fit, &err) == 0, "%s", err.message);
  ck_assert_msg(mp_frontier(g, &o, f, &err) == 0, "%s", err.message);
}

START_TEST(test_threads_same_answers) {
  static const mp_solver_t solvers[] = {MP_SOLVER_AUTO, MP_SOLVER_HYBRID};
  uint64_t seed = 0x5eed1234u, b[13];
  mp_graph_t *gs[3];
  size_t k, i, j;
  gs[0] = mp_test_load_shipped("unet");
  gs[1] = random_dag(&seed, 12);
  gs[2] = transformer(84);
  for (k = 0; k < 3; k++) {
    grid(gs[k], b, 13);
    for (j = 0; j < (k == 2 ? 1u : 2u); j++) {
      mp_fit_t f1, f3;
      mp_frontier_t p1, p3;
      fit_and_frontier(gs[k], solvers[j], 1, b, 13, &f1, &p1);
      fit_and_frontier(gs[k], solvers[j], 3, b, 13, &f3, &p3);
      for (i = 0; i < 13; i++) {
        const mp_fit_answer_t *x = &f1.answers[i], *y = &f3.answers[i];
        ck_assert_msg(x->feasible == y->feasible && x->peak_bytes == y->peak_bytes &&
                          x->recompute == y->recompute && x->extra_time == y->extra_time &&
                          x->solver_used == y->solver_used &&
                          x->min_feasible_budget == y->min_feasible_budget,
                      "graph %zu %s fit at %llu differs with 3 threads", k, mp_solver_name(solvers[j]),
                      (unsigned long long)b[i]);
      }
      ck_assert_uint_eq(p1.n_points, p3.n_points);
      ck_assert_uint_ge(p1.n_points, 2);
      ck_assert_int_eq(p1.solver_used, p3.solver_used);
      for (i = 0; i < p1.n_points; i++)
        ck_assert_msg(memcmp(&p1.points[i], &p3.points[i], sizeof(p1.points[i])) == 0,
                      "graph %zu %s frontier point %zu differs with 3 threads", k,
                      mp_solver_name(solvers[j]), i);
      mp_fit_free(&f1);
      mp_fit_free(&f3);
      mp_frontier_free(&p1);
      mp_frontier_free(&p3);
    }
    mp_graph_free(gs[k]);
  }
}
END_TEST

/* mp_fit plans each distinct budget once, whatever the order and however
 * often it is asked, and answers every asked budget with its plan: budgets
 * given three, two and one times, out of order, on one thread and on two. */
START_TEST(test_fit_repeated_budgets) {
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  uint64_t grid4[4], b[9];
  unsigned threads;
  size_t i;
  grid(g, grid4, 4);
  b[0] = grid4[2], b[1] = grid4[1], b[2] = grid4[2], b[3] = grid4[3], b[4] = grid4[2];
  b[5] = grid4[1], b[6] = grid4[0], b[7] = grid4[3], b[8] = grid4[3];
  for (threads = 1; threads <= 2; threads++) {
    mp_plan_options_t o;
    mp_fit_t fit;
    mp_error_t err;
    mp_plan_options_init(&o);
    o.solver = MP_SOLVER_EXACT;
    o.threads = threads;
    ck_assert_int_eq(mp_fit(g, &o, b, 9, &fit, &err), 0);
    ck_assert_uint_eq(fit.n, 9);
    for (i = 0; i < 9; i++) {
      mp_plan_result_t r;
      const mp_fit_answer_t *a = &fit.answers[i];
      o.budget = b[i];
      ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
      ck_assert_uint_eq(a->budget, b[i]);
      ck_assert_int_eq(a->feasible, r.feasible);
      if (r.feasible) {
        ck_assert_uint_eq(a->peak_bytes, r.sim.peak_bytes);
        ck_assert(a->recompute == r.sim.time_recompute);
      } else {
        ck_assert_uint_eq(a->min_feasible_budget, r.min_feasible_budget);
      }
      mp_plan_result_free(&r);
    }
    mp_fit_free(&fit);
  }
  mp_graph_free(g);
}
END_TEST

/* A fit on parallel threads that is cancelled midway returns MP_ECANCELED,
 * with no answers, and leaks nothing (the ASan build checks). Midway: half
 * the polls of a whole fit. */
static int stop_after(void *arg) {
  long *left = arg; /* calls come one at a time (mp__serial_poll) */
  return --*left < 0;
}

START_TEST(test_threads_cancel) {
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  mp_plan_options_t o;
  mp_fit_t fit;
  mp_error_t err;
  uint64_t b[12];
  long left = 1L << 40, polls;
  grid(g, b, 12);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.threads = 2;
  o.should_stop = stop_after;
  o.stop_arg = &left;
  ck_assert_int_eq(mp_fit(g, &o, b, 12, &fit, &err), 0);
  mp_fit_free(&fit);
  polls = (1L << 40) - left;
  ck_assert_int_gt(polls, 20);
  left = polls / 2;
  ck_assert_int_eq(mp_fit(g, &o, b, 12, &fit, &err), MP_ECANCELED);
  ck_assert_ptr_null(fit.answers);
  mp_graph_free(g);
}
END_TEST


/* A should_stop that counts its calls. */
static int count_polls(void *arg) {
  (*(size_t *)arg)++;
  return 0;
}

/* A DP session lent its family's staircase (reuse.c does so for a fit's
 * and a frontier's sessions) starts each time-objective search at the
 * optimum: the same answer, strategy for strategy, at every budget, in one
 * forward pass where the search climbed through several. So does the
 * session of a reuse record for many plans (mp__reuse_use_staircases),
 * which is lent the staircase by reuse.c. On the exact family (a layered
 * DAG, ResNet-50) and on the window family of the fallback. */
static void stair_lent_agrees(const mp_graph_t *g, size_t max_sets, size_t window) {
  mp_dp_options_t d, du;
  mp_plan_options_t po;
  mp_dp_session_t *s[2], *su;
  mp_dp_point_t *pts = NULL;
  mp_dp_result_t r[2], ru;
  mp_error_t err;
  size_t n = 0, i, k, v, solves = 0, feasible = 0, nb = 40;
  uint64_t lo, hi, b;
  int rc;
  mp_dp_options_init(&d);
  d.max_lower_sets = max_sets;
  d.window_sets = window;
  mp_plan_options_init(&po);
  po.max_lower_sets = max_sets;
  po.window_sets = window;
  po.reuse = mp__reuse_new(g);
  ck_assert_ptr_nonnull(po.reuse);
  mp__reuse_use_staircases(po.reuse);
  mp__dp_options_from(&po, 1, &du);
  du.objective = po.objective;
  du.accounting = po.accounting;
  for (k = 0; k < 2; k++) ck_assert_int_eq(mp_dp_session_new(g, &d, &s[k], &err), 0);
  ck_assert_int_eq(mp_dp_session_exact_used(s[0], NULL), max_sets == 0);
  ck_assert_int_eq(mp__dp_session_optima(s[1], 0, &pts, &n, &err), 0);
  ck_assert_uint_gt(n, 3);
  mp__dp_session_use_optima(s[1], pts, n, mp__dp_session_sets(s[1]));
  lo = pts[0].budget - 1; /* no plan there */
  hi = pts[n - 1].budget + pts[n - 1].budget / 8;
  for (i = 0; i <= nb + n; i++) {
    /* evenly spaced budgets, then every point's own (where the optimum
     * changes) */
    b = i <= nb ? lo + (hi - lo) / nb * i : pts[i - nb - 1].budget;
    for (k = 0; k < 2; k++) ck_assert_int_eq(mp_dp_session_solve(s[k], b, &r[k], &err), 0);
    du.budget = b;
    ck_assert_int_eq(mp__reuse_solve(&po, &du, &ru, &err), 0);
    ck_assert_int_eq(ru.feasible, r[0].feasible);
    if (ru.feasible) {
      ck_assert(ru.recompute_time == r[0].recompute_time);
      for (v = 0; v < g->n_nodes; v++) ck_assert_uint_eq(ru.strategy->seg[v], r[0].strategy->seg[v]);
    }
    mp_dp_result_free(&ru);
    solves++;
    ck_assert_int_eq(r[1].feasible, r[0].feasible);
    ck_assert_int_eq(r[1].feasible, b >= pts[0].budget);
    if (r[0].feasible) {
      feasible++;
      ck_assert(r[1].recompute_time == r[0].recompute_time);
      ck_assert_uint_eq(r[1].kept_bytes, r[0].kept_bytes);
      ck_assert_uint_eq(r[1].model_peak, r[0].model_peak);
      for (v = 0; v < g->n_nodes; v++) ck_assert_uint_eq(r[1].strategy->seg[v], r[0].strategy->seg[v]);
    } else {
      ck_assert_uint_eq(r[1].min_feasible_budget, r[0].min_feasible_budget);
      ck_assert_uint_eq(r[1].min_feasible_budget, pts[0].budget);
    }
    for (k = 0; k < 2; k++) mp_dp_result_free(&r[k]);
  }
  if (getenv("MP_CONSISTENCY_VERBOSE"))
    fprintf(stderr, "%zu sets: %zu solves (%zu feasible), passes %zu without the staircase, %zu with\n",
            mp__dp_session_sets(s[1]), solves, feasible, mp__dp_session_passes(s[0]),
            mp__dp_session_passes(s[1]));
  /* one pass per feasible solve (none below the least budget, where hq
   * answers), against several */
  ck_assert_uint_eq(mp__dp_session_passes(s[1]), feasible);
  ck_assert_uint_gt(mp__dp_session_passes(s[0]), 2 * feasible);
  /* the record's session: at most one pass per feasible budget (a budget
   * asked twice comes from the book) */
  su = mp__reuse_session(po.reuse, &du, &rc, &err);
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_nonnull(su);
  ck_assert_uint_gt(mp__dp_session_passes(su), 0);
  ck_assert_uint_le(mp__dp_session_passes(su), feasible);
  mp__reuse_free(po.reuse);
  for (k = 0; k < 2; k++) mp_dp_session_free(s[k]);
  free(pts);
}

START_TEST(test_staircase_starts_search) {
  mp_graph_t *g = mp_tl_layered_dag(60, 1, 30), *r50 = mp_test_load_shipped("resnet50");
  ck_assert_ptr_nonnull(g);
  stair_lent_agrees(g, 0, 0);
  stair_lent_agrees(r50, 0, 0);
  stair_lent_agrees(g, 1, 600); /* the window family */
  mp_graph_free(g);
  mp_graph_free(r50);
}
END_TEST

/* A DP answer holds from its model peak up to the budget it was solved at
 * (reuse.c, mp__answer_holds): the book answers a budget in between from
 * it, with no search, and that answer is a fresh session's there, strategy
 * and figures. Below the least budget an answer without a plan holds at
 * every lower budget. Solves at random budgets, then at random budgets
 * between each answer's model peak and its budget (and at the model peak
 * itself), on the exact family (a layered DAG, ResNet-50), the window
 * family and the approx family. */
static void answers_hold_below(const mp_graph_t *g, int exact, size_t max_sets, size_t window,
                               uint64_t seed) {
  mp_plan_options_t po;
  mp_dp_options_t d, du;
  mp_dp_session_t *fresh, *su;
  mp_dp_point_t *pts = NULL;
  mp_dp_result_t r1, r2, rf;
  mp_error_t err;
  size_t n = 0, i, v, held = 0;
  uint64_t lo, hi;
  int rc;
  mp_plan_options_init(&po);
  po.max_lower_sets = max_sets;
  po.window_sets = window;
  po.reuse = mp__reuse_new(g);
  ck_assert_ptr_nonnull(po.reuse);
  mp__dp_options_from(&po, exact, &du);
  du.objective = po.objective;
  du.accounting = po.accounting;
  d = du;
  ck_assert_int_eq(mp_dp_session_new(g, &d, &fresh, &err), 0);
  ck_assert_int_eq(mp_dp_session_staircase(fresh, UINT64_MAX, 0, &pts, &n, &err), 0);
  ck_assert_uint_gt(n, 3);
  lo = pts[0].budget - pts[0].budget / 16;
  hi = pts[n - 1].budget + pts[n - 1].budget / 8;
  free(pts);
  for (i = 0; i < 24; i++) {
    uint64_t b1, b2;
    size_t passes;
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    b1 = lo + seed % (hi - lo);
    du.budget = b1;
    ck_assert_int_eq(mp__reuse_solve(&po, &du, &r1, &err), 0);
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    if (r1.feasible)
      b2 = i % 3 == 0 ? r1.model_peak : r1.model_peak + seed % (b1 - r1.model_peak + 1);
    else
      b2 = b1 - seed % (b1 - lo + 1);
    su = mp__reuse_session(po.reuse, &du, &rc, &err);
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(su);
    passes = mp__dp_session_passes(su);
    du.budget = b2;
    ck_assert_int_eq(mp__reuse_solve(&po, &du, &r2, &err), 0);
    ck_assert_uint_eq(mp__dp_session_passes(su), passes); /* from the book */
    ck_assert_int_eq(mp_dp_session_solve(fresh, b2, &rf, &err), 0);
    ck_assert_int_eq(r2.feasible, r1.feasible);
    ck_assert_int_eq(rf.feasible, r1.feasible);
    if (rf.feasible) {
      ck_assert(r2.recompute_time == rf.recompute_time);
      ck_assert_uint_eq(r2.kept_bytes, rf.kept_bytes);
      ck_assert_uint_eq(r2.model_peak, rf.model_peak);
      for (v = 0; v < g->n_nodes; v++) ck_assert_uint_eq(r2.strategy->seg[v], rf.strategy->seg[v]);
      held += b2 < b1;
    } else {
      ck_assert_uint_eq(r2.min_feasible_budget, rf.min_feasible_budget);
    }
    mp_dp_result_free(&r1);
    mp_dp_result_free(&r2);
    mp_dp_result_free(&rf);
  }
  ck_assert_uint_ge(held, 8);
  mp__reuse_free(po.reuse);
  mp_dp_session_free(fresh);
}

START_TEST(test_answer_holds_below) {
  mp_graph_t *g = mp_tl_layered_dag(60, 3, 30), *r50 = mp_test_load_shipped("resnet50");
  ck_assert_ptr_nonnull(g);
  answers_hold_below(g, 1, 0, 0, 0x1234567ULL);
  answers_hold_below(r50, 1, 0, 0, 0x7654321ULL);
  answers_hold_below(g, 1, 1, 600, 0xabcdefULL); /* the window family */
  answers_hold_below(r50, 0, 0, 0, 0xfedcbaULL); /* the approx family */
  mp_graph_free(g);
  mp_graph_free(r50);
}
END_TEST

/* The local searches below the DP's least budget (cand_refine.c) are kept
 * in the reuse book: on ResNet-50, plans at six budgets from the least
 * budget (969,269,792 B, where exact-dp-refined answers) to just below the
 * exact DP's least model budget, planned through one record, run exactly
 * the searches that one plan at the least budget runs (their starts are the
 * same at every such budget), and answer exactly as plans of their own do:
 * peak, recomputation, source and checkpoints. (With the keeping off the
 * six plans ran 36 searches, 6 each.) */
START_TEST(test_refine_kept) {
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  const uint64_t least = 969269792u;
  mp_plan_options_t o;
  mp_error_t err;
  mp__reuse_t *one;
  size_t i, k, single;
  uint64_t dp_min;

  dp_min = exact_dp_least(g);
  ck_assert_uint_gt(dp_min, least + 5);

  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.threads = 1;
  o.budget = least;
  o.reuse = one = mp__reuse_new(g);
  ck_assert_ptr_nonnull(one);
  {
    mp_plan_result_t r;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
    ck_assert(r.feasible);
    ck_assert_uint_eq(r.sim.peak_bytes, least);
    mp_plan_result_free(&r);
  }
  single = mp__reuse_refined_count(one);
  ck_assert_uint_ge(single, 1);
  ck_assert_uint_le(single, 6); /* three starts, two searches each (cand_recompute.c) */
  mp__reuse_free(one);

  o.reuse = mp__reuse_new(g);
  ck_assert_ptr_nonnull(o.reuse);
  for (i = 0; i < 6; i++) {
    mp_plan_result_t kept, own;
    mp_plan_options_t oo = o;
    o.budget = oo.budget = least + (dp_min - 1 - least) / 5 * i;
    oo.reuse = NULL;
    ck_assert_int_eq(mp_plan(g, &o, &kept, &err), 0);
    ck_assert_int_eq(mp_plan(g, &oo, &own, &err), 0);
    ck_assert(kept.feasible && own.feasible);
    ck_assert_uint_eq(kept.sim.peak_bytes, own.sim.peak_bytes);
    ck_assert(kept.sim.time_recompute == own.sim.time_recompute);
    ck_assert_str_eq(kept.source, own.source);
    ck_assert_uint_eq(kept.n_checkpoints, own.n_checkpoints);
    for (k = 0; k < own.n_checkpoints; k++) ck_assert_uint_eq(kept.checkpoints[k], own.checkpoints[k]);
    mp_plan_result_free(&kept);
    mp_plan_result_free(&own);
  }
  ck_assert_uint_eq(mp__reuse_refined_count(o.reuse), single);
  mp__reuse_free(o.reuse);
  mp_graph_free(g);
}
END_TEST

/* Under a deadline (mp_plan_options_t.deadline_ms) the DP's sessions and
 * answers are shared as without (reuse.c): a budget solved once is
 * answered from the book, with no search (no poll), and a fit and a
 * frontier under a deadline answer exactly as without one. An answer the
 * deadline changed (the exact DP fell back when it passed) is not kept:
 * the same budget asked again without a deadline gets the exact answer. */
START_TEST(test_reuse_under_deadline) {
  mp_graph_t *g = mp_test_load_shipped("resnet50"), *w = mp_tl_layered_dag(60, 2, 30);
  mp_plan_options_t o;
  mp_dp_options_t d;
  mp_dp_result_t r1, r2, r3;
  mp_error_t err;
  size_t polls = 0, v, k;
  uint64_t b[10], lo, hi;
  mp_fit_t fit[2];
  mp_frontier_t fr[2];

  mp_plan_options_init(&o);
  o.deadline_ms = 300000;
  o.should_stop = count_polls;
  o.stop_arg = &polls;
  o.reuse = mp__reuse_new(g);
  ck_assert_ptr_nonnull(o.reuse);
  mp__dp_options_from(&o, 1, &d);
  d.objective = o.objective;
  d.accounting = o.accounting;
  d.budget = (uint64_t)2 << 30;
  ck_assert_int_eq(mp__reuse_solve(&o, &d, &r1, &err), 0);
  ck_assert_uint_gt(polls, 0);
  ck_assert(r1.feasible && r1.exact_used);
  polls = 0;
  ck_assert_int_eq(mp__reuse_solve(&o, &d, &r2, &err), 0);
  ck_assert_uint_eq(polls, 0); /* from the book */
  ck_assert(r2.recompute_time == r1.recompute_time);
  ck_assert_uint_eq(r2.model_peak, r1.model_peak);
  for (v = 0; v < g->n_nodes; v++) ck_assert_uint_eq(r2.strategy->seg[v], r1.strategy->seg[v]);
  mp_dp_result_free(&r1);
  mp_dp_result_free(&r2);
  mp__reuse_free(o.reuse);

  /* a fit and a frontier, with and without a deadline */
  for (k = 0; k < 2; k++) {
    mp_plan_options_t po;
    mp_plan_options_init(&po);
    po.threads = 2;
    po.deadline_ms = k ? 300000 : 0;
    ck_assert_int_eq(mp_frontier(g, &po, &fr[k], &err), 0);
    lo = fr[k].points[0].budget;
    hi = fr[k].peak_no_recompute;
    for (v = 0; v < 10; v++) b[v] = lo - 1 + (hi - lo) / 9 * v;
    ck_assert_int_eq(mp_fit(g, &po, b, 10, &fit[k], &err), 0);
  }
  ck_assert_uint_eq(fr[0].n_points, fr[1].n_points);
  for (v = 0; v < fr[0].n_points; v++) {
    ck_assert_uint_eq(fr[0].points[v].budget, fr[1].points[v].budget);
    ck_assert(fr[0].points[v].recompute == fr[1].points[v].recompute);
    ck_assert_uint_eq(fr[0].points[v].peak_bytes, fr[1].points[v].peak_bytes);
  }
  for (v = 0; v < 10; v++) {
    ck_assert_int_eq(fit[0].answers[v].feasible, fit[1].answers[v].feasible);
    ck_assert_uint_eq(fit[0].answers[v].peak_bytes, fit[1].answers[v].peak_bytes);
    ck_assert(fit[0].answers[v].recompute == fit[1].answers[v].recompute);
    ck_assert_uint_eq(fit[0].answers[v].min_feasible_budget, fit[1].answers[v].min_feasible_budget);
  }
  ck_assert_int_eq(fit[0].answers[0].feasible, 0); /* one byte below the least budget */
  for (k = 0; k < 2; k++) {
    mp_fit_free(&fit[k]);
    mp_frontier_free(&fr[k]);
  }

  /* a deadline that passes at once: the exact DP falls back, and that
   * answer is not kept */
  ck_assert_ptr_nonnull(w);
  mp_plan_options_init(&o);
  o.deadline_ms = 1e-6;
  o.reuse = mp__reuse_new(w);
  mp__dp_options_from(&o, 1, &d);
  d.objective = o.objective;
  d.accounting = o.accounting;
  d.budget = UINT64_MAX / 4;
  ck_assert_int_eq(mp__reuse_solve(&o, &d, &r1, &err), 0);
  ck_assert_int_eq(r1.exact_used, 0);
  ck_assert_ptr_nonnull(strstr(r1.fallback_reason, "deadline"));
  d.deadline_ms = 0;
  ck_assert_int_eq(mp__reuse_solve(&o, &d, &r2, &err), 0);
  ck_assert_int_eq(r2.exact_used, 1);
  ck_assert_int_eq(mp_dp_solve(w, &d, &r3, &err), 0);
  ck_assert(r2.recompute_time == r3.recompute_time);
  ck_assert_uint_eq(r2.model_peak, r3.model_peak);
  mp_dp_result_free(&r1);
  mp_dp_result_free(&r2);
  mp_dp_result_free(&r3);
  mp__reuse_free(o.reuse);
  mp_graph_free(w);
  mp_graph_free(g);
}
END_TEST

/* The frontier is plan's answer at every budget, for the solvers whose
 * frontier promises it (auto, closures, memonger, sqrt): 50 random budgets
 * on each graph (from a twentieth of the range below the frontier's first
 * point to a twentieth above plain backpropagation's peak), and plan's
 * overhead there with the same solver equals the value of the frontier
 * point with the largest budget not above it (no plan below the first
 * point). The frontier is searched as `memplan frontier` asks
 * (MP_FRONTIER_SOLVES, no time limit, two threads) and finds every
 * breakpoint (exact). Graphs: VGG19, U-Net, ResNet-50, the two tiny
 * shipped ones and three random DAGs (the wider shipped graphs' frontiers
 * are make bench's). */
START_TEST(test_frontier_is_plan) {
  static const char *const shipped[] = {"tests/graphs/cg_vgg19.txt", "tests/graphs/cg_unet.txt",
                                        "tests/graphs/cg_resnet50.txt",
                                        "tests/graphs/tiny_layered.json",
                                        "tests/graphs/tiny_resblock.json"};
  static const mp_solver_t solvers[] = {MP_SOLVER_AUTO, MP_SOLVER_APPROX, MP_SOLVER_MEMONGER,
                                        MP_SOLVER_SQRT};
  uint64_t seed = 0x9e3779b97f4a7c15ULL + (uint64_t)_i, lo, hi, span;
  mp_graph_t *g = NULL;
  mp_plan_options_t o;
  mp_frontier_t f;
  mp_error_t err;
  size_t sv;
  int k, n_equal;
  if (_i < 5) {
    ck_assert_int_eq(mp_graph_load_file(shipped[_i], MP_FORMAT_AUTO, NULL, &g, NULL, &err), 0);
  } else {
    uint64_t s = 0xf00dULL * (uint64_t)(_i + 1);
    g = random_dag(&s, 8 + 4 * (_i - 5));
  }
  for (sv = 0; sv < sizeof(solvers) / sizeof(solvers[0]); sv++) {
    mp_plan_options_init(&o);
    o.solver = solvers[sv];
    o.threads = 2;
    o.frontier_solves = MP_FRONTIER_SOLVES;
    ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
    ck_assert_uint_ge(f.n_points, 1);
    ck_assert_msg(f.exact, "%s: %s", mp_solver_name(o.solver), f.exact_reason);
    n_equal = 0;
    lo = f.points[0].budget;
    hi = f.peak_no_recompute;
    span = (hi > lo ? hi - lo : 1) / 20 + 1;
    for (k = 0; k < 50; k++) {
      mp_plan_options_t po;
      mp_plan_result_t r;
      uint64_t b;
      long at;
      seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
      b = lo - (lo > span ? span : lo) + seed % (hi - lo + 2 * span + 1);
      mp_plan_options_init(&po);
      po.solver = solvers[sv];
      po.threads = 1;
      po.budget = b;
      ck_assert_int_eq(mp_plan(g, &po, &r, &err), 0);
      at = mp_frontier_lookup(&f, b);
      if (at < 0) {
        ck_assert_msg(!r.feasible, "%s: a plan at %llu, below the frontier's first point %llu",
                      mp_solver_name(o.solver), (unsigned long long)b, (unsigned long long)lo);
      } else {
        double base = r.sim.time_forward + r.sim.time_backward, extra = r.sim.time_total - base;
        double want = f.points[at].extra_time;
        if (extra < 0) extra = 0;
        ck_assert_msg(r.feasible, "%s: no plan at %llu, above the frontier's point at %llu",
                      mp_solver_name(o.solver), (unsigned long long)b,
                      (unsigned long long)f.points[at].budget);
        ck_assert_msg(extra == want, "%s at %llu: plan %.17g, frontier %.17g (point at %llu)",
                      mp_solver_name(o.solver), (unsigned long long)b, extra, want,
                      (unsigned long long)f.points[at].budget);
        n_equal++;
      }
      mp_plan_result_free(&r);
    }
    if (getenv("MP_CONSISTENCY_VERBOSE"))
      fprintf(stderr, "frontier_is_plan %d %s: %zu points, %d equal\n", (int)_i,
              mp_solver_name(o.solver), f.n_points, n_equal);
    mp_frontier_free(&f);
  }
  mp_graph_free(g);
}
END_TEST

/* A frontier whose search is cut short (o.frontier_solves) says so, and
 * its staircase still bounds every plan: at 25 random budgets plan's
 * overhead lies between the value of the point that applies there and
 * that of the next point, and within 1% of the first when exact_reason says
 * so. ResNet-50 after 40 of the 227 plans its search takes, and after 2. */
START_TEST(test_frontier_cut_short) {
  static const size_t solves[] = {40, 2};
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  uint64_t seed = 0x51ed2701ULL;
  size_t sv;
  for (sv = 0; sv < 2; sv++) {
    mp_plan_options_t o;
    mp_frontier_t f;
    mp_error_t err;
    int k, within;
    mp_plan_options_init(&o);
    o.threads = 1;
    o.frontier_solves = solves[sv];
    ck_assert_int_eq(mp_frontier(g, &o, &f, &err), 0);
    ck_assert(!f.exact);
    within = strstr(f.exact_reason, "within 1%") != NULL;
    ck_assert(within || strstr(f.exact_reason, "upper bound") != NULL);
    for (k = 0; k < 25; k++) {
      mp_plan_options_t po;
      mp_plan_result_t r;
      uint64_t b, lo = f.points[0].budget, hi = f.peak_no_recompute;
      double base, extra, at_b, next;
      long at;
      seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
      b = lo + seed % (hi - lo + 1);
      mp_plan_options_init(&po);
      po.threads = 1;
      po.budget = b;
      ck_assert_int_eq(mp_plan(g, &po, &r, &err), 0);
      ck_assert(r.feasible);
      at = mp_frontier_lookup(&f, b);
      ck_assert_int_ge(at, 0);
      base = r.sim.time_forward + r.sim.time_backward;
      extra = r.sim.time_total - base;
      if (extra < 0) extra = 0;
      at_b = f.points[at].extra_time;
      next = (size_t)at + 1 < f.n_points ? f.points[at + 1].extra_time : at_b;
      ck_assert_msg(extra <= at_b && extra >= next, "at %llu: plan %.17g, staircase %.17g, next %.17g",
                    (unsigned long long)b, extra, at_b, next);
      if (within) ck_assert(extra >= at_b * 0.99 - 1e-9);
      mp_plan_result_free(&r);
    }
    mp_frontier_free(&f);
  }
  mp_graph_free(g);
}
END_TEST

Suite *suite_consistency(void) {
  Suite *s = suite_create("consistency");
  TCase *tc = tcase_create("one truth");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_consistency_random, 0, 4);
  tcase_add_loop_test(tc, test_consistency_shipped, 0, 3);
  tcase_add_loop_test(tc, test_consistency_fallback, 0, 2);
  tcase_add_loop_test(tc, test_hybrid_dominates_layrub, 0, 3);
  tcase_add_test(tc, test_swap_monotone_transformer);
  tcase_add_test(tc, test_auto_chain_frontier_is_its_plans);
  tcase_add_test(tc, test_least_budget_is_a_peak);
  tcase_add_test(tc, test_cancel_anywhere);
  tcase_add_test(tc, test_slack_plan);
  tcase_add_test(tc, test_cost_monotone);
  tcase_add_test(tc, test_threads_same_answers);
  tcase_add_test(tc, test_chain_walk_threads);
  tcase_add_test(tc, test_threads_cancel);
  tcase_add_test(tc, test_fit_repeated_budgets);
  tcase_add_test(tc, test_reuse_under_deadline);
  tcase_add_test(tc, test_staircase_starts_search);
  tcase_add_test(tc, test_answer_holds_below);
  tcase_add_test(tc, test_refine_kept);
  suite_add_tcase(s, tc);
  tc = tcase_create("frontier");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_frontier_is_plan, 0, 8);
  tcase_add_test(tc, test_frontier_cut_short);
  suite_add_tcase(s, tc);
  return s;
}
