/* bench_wide.c - the wide-graph table of `make bench`:
 * how close the fallback that answers when the exact DP cannot enumerate
 * its lower sets comes to the exact answer. Per graph (GoogLeNet, ResNet-50
 * and random layered DAGs of tests/layered_dag.h), at budgets evenly spaced
 * from the exact solver's least feasible budget to plain backpropagation's
 * peak: the exact solver's simulated recomputation, the fallback's (the
 * exact solver with a lower-set limit of 1, which forces it) and the
 * approx solver's, the worst ratio to exact, the budgets where a plan is
 * missing, and the times of one exact solve and of the fallback's frontier.
 * The random DAGs' rows hold the fallback to a quarter of the lower sets, a
 * harsh proxy; a second table runs it at its default window on DAGs of 130
 * to 170 nodes whose lower sets are 1.1 to 15 times more, as it really
 * answers, against exact forced through (minutes). For DAGs of 250 nodes
 * and more, beyond the exact DP, the fallback against approx. Every figure
 * is mp_plan's, simulated. Prints; asserts nothing.
 * Called through a weak symbol by bench_planner.c (`bench_planner wide`). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../layered_dag.h"
#include "dp_internal.h"
#include "fit.h"
#include "formats.h"
#include "frontier.h"
#include "lowerset.h"
#include "plan.h"

void mp_bench_wide_table(void);

static double wide_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One mp_plan: *rc_out the simulated recomputation (-1: no plan), returns
 * the wall time in ms. max_sets 1 forces the exact solver's fallback. */
static double wide_plan(const mp_graph_t *g, mp_solver_t solver, size_t max_sets, size_t win,
                        uint64_t budget, double *rc_out, uint64_t *min_out) {
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  double t0 = wide_now();
  mp_plan_options_init(&o);
  o.solver = solver;
  o.budget = budget;
  o.max_lower_sets = max_sets;
  o.window_sets = win;
  o.threads = 1;
  *rc_out = -1;
  if (mp_plan(g, &o, &r, &err) != 0) {
    printf("    plan failed: %s\n", err.message);
    return 0;
  }
  if (r.feasible) *rc_out = r.sim.time_recompute;
  if (min_out) *min_out = r.min_feasible_budget;
  mp_plan_result_free(&r);
  return wide_now() - t0;
}

/* Plain backpropagation's simulated peak (0 when it fails). */
static uint64_t wide_peak(const mp_graph_t *g) {
  mp_plan_options_t no;
  mp_plan_result_t r;
  mp_error_t err;
  uint64_t p;
  mp_plan_options_init(&no);
  no.solver = MP_SOLVER_NONE;
  if (mp_plan(g, &no, &r, &err) != 0) return 0;
  p = r.sim.peak_bytes;
  mp_plan_result_free(&r);
  return p;
}

/* The wall time of mp_frontier (auto) with the given lower-set limit (1:
 * the fallback's) on `threads` threads, -1 when it fails. */
static double wide_frontier(const mp_graph_t *g, size_t max_sets, size_t win, unsigned threads) {
  mp_plan_options_t o;
  mp_frontier_t f;
  mp_error_t err;
  double t0 = wide_now();
  mp_plan_options_init(&o);
  o.max_lower_sets = max_sets;
  o.window_sets = win;
  o.threads = threads;
  if (mp_frontier(g, &o, &f, &err) != 0) {
    printf("    frontier failed: %s\n", err.message);
    return -1;
  }
  mp_frontier_free(&f);
  return wide_now() - t0;
}

static double wide_ratio(double x, double ex) {
  if (x < 0) return HUGE_VAL;
  if (ex <= 0) return x <= 0 ? 1.0 : HUGE_VAL;
  return x / ex;
}

/* The table's row for one graph on which the exact DP runs; win: the
 * fallback's window family size (0: its default). */
static void wide_row(const char *label, const mp_graph_t *g, int nb, size_t win) {
  uint64_t lo = 0, hi = wide_peak(g), b;
  double rc, ex, fb, ap, worst_fb = 1, worst_ap = 1, tex = 0, tfb = 0, tfr, tfe, tfe2;
  int k, miss_fb = 0, miss_ap = 0, n = 0;
  size_t nls = 0;
  char wcell[24];
  int cnt = mp_lowerset_count(g, 10000000, &nls);
  wide_plan(g, MP_SOLVER_EXACT, 0, 0, 0, &rc, &lo);
  for (k = 0; k < nb; k++) {
    double dt;
    b = lo + (hi - lo) / (uint64_t)(nb - 1) * (uint64_t)k;
    dt = wide_plan(g, MP_SOLVER_EXACT, 0, 0, b, &ex, NULL);
    if (ex < 0) continue;
    if (dt > tex) tex = dt;
    dt = wide_plan(g, MP_SOLVER_EXACT, 1, win, b, &fb, NULL);
    if (dt > tfb) tfb = dt;
    wide_plan(g, MP_SOLVER_APPROX, 0, 0, b, &ap, NULL);
    n++;
    if (fb < 0) miss_fb++;
    if (ap < 0) miss_ap++;
    /* worst: among the budgets where it plans (the misses are counted apart) */
    if (fb >= 0 && wide_ratio(fb, ex) > worst_fb) worst_fb = wide_ratio(fb, ex);
    if (ap >= 0 && wide_ratio(ap, ex) > worst_ap) worst_ap = wide_ratio(ap, ex);
  }
  tfe = wide_frontier(g, 0, 0, 1);
  tfe2 = wide_frontier(g, 0, 0, 2);
  tfr = wide_frontier(g, 1, win, 1);
  if (win) snprintf(wcell, sizeof(wcell), "%zu", win);
  else snprintf(wcell, sizeof(wcell), "dflt");
  printf("%-16s %5zu %9zu%s %6s %3d  %6.2fx %2d   %6.2fx %2d   %8.1f %8.1f %9.1f %9.1f %9.1f  %5.2fx %5.2fx\n",
         label, g->n_activations, nls, cnt == 0 ? " " : "+", wcell, n, worst_fb, miss_fb, worst_ap,
         miss_ap, tex, tfb, tfe, tfe2, tfr, tex > 0 ? tfe / tex : 0, tex > 0 ? tfe2 / tex : 0);
  fflush(stdout);
}

/* Beyond the exact DP: the fallback against approx at nb budgets from the
 * fallback's least budget to plain backpropagation's peak. */
static void wide_big_row(const char *label, const mp_graph_t *g, int nb) {
  uint64_t lo = 0, lo_ap = 0, hi = wide_peak(g), b;
  double rc, fb, ap, sum_fb = 0, sum_ap = 0, tfb = 0, tap = 0, best = HUGE_VAL, worst = 0, tfr;
  int k, n = 0, miss_fb = 0, miss_ap = 0;
  wide_plan(g, MP_SOLVER_EXACT, 0, 0, 0, &rc, &lo);
  wide_plan(g, MP_SOLVER_APPROX, 0, 0, 0, &rc, &lo_ap);
  if (lo_ap < lo) lo = lo_ap;
  for (k = 0; k < nb; k++) {
    double dt, q;
    b = lo + (hi - lo) / (uint64_t)(nb - 1) * (uint64_t)k;
    dt = wide_plan(g, MP_SOLVER_EXACT, 0, 0, b, &fb, NULL);
    if (dt > tfb) tfb = dt;
    dt = wide_plan(g, MP_SOLVER_APPROX, 0, 0, b, &ap, NULL);
    if (dt > tap) tap = dt;
    if (fb < 0) miss_fb++;
    if (ap < 0) miss_ap++;
    if (fb < 0 || ap < 0) continue;
    n++;
    sum_fb += fb;
    sum_ap += ap;
    q = ap > 0 ? fb / ap : (fb > 0 ? HUGE_VAL : 1);
    if (q < best) best = q;
    if (q > worst) worst = q;
  }
  tfr = wide_frontier(g, 0, 0, 1);
  printf("%-16s %5zu  %3d  recompute fallback/approx: total %.3f, per budget %.2f .. %.2f;"
         " no plan: fallback %d, approx %d; slowest solve %.1f / %.1f ms; frontier %.1f ms\n",
         label, g->n_activations, n, sum_ap > 0 ? sum_fb / sum_ap : 1, best, worst, miss_fb, miss_ap,
         tfb, tap, tfr);
  fflush(stdout);
}

/* The fallback as it really answers: its default window on a DAG whose
 * lattice is many times larger (the quarter windows above are a harsher
 * proxy: several are below the 512 sets the default never goes under). At
 * nb budgets from exact's least to plain backpropagation's peak, a fit
 * each way on two threads: exact forced through (lower-set limit 5
 * million) and the fallback forced (limit 1). */
static void wide_dflt_row(const char *label, const mp_graph_t *g, int nb) {
  uint64_t lo = 0, hi = wide_peak(g), b[16];
  mp_plan_options_t o;
  mp_fit_t fe, ff;
  mp_error_t err;
  double rc, t0, te, tf, worst = 1;
  size_t nls = 0, win = mp__window_sets(g->n_activations); /* dp_window.c */
  int k, miss = 0, n = 0;
  if (nb > 16) nb = 16;
  mp_lowerset_count(g, 0, &nls);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.threads = 2;
  o.max_lower_sets = 5000000;
  wide_plan(g, MP_SOLVER_EXACT, o.max_lower_sets, 0, 0, &rc, &lo); /* exact's least budget */
  if (lo == 0) return; /* (wide_plan said why) */
  for (k = 0; k < nb; k++) b[k] = lo + (hi - lo) / (uint64_t)(nb - 1) * (uint64_t)k;
  t0 = wide_now();
  if (mp_fit(g, &o, b, (size_t)nb, &fe, &err) != 0) {
    printf("%s: exact fit: %s\n", label, err.message);
    return;
  }
  te = wide_now() - t0;
  o.max_lower_sets = 1;
  t0 = wide_now();
  if (mp_fit(g, &o, b, (size_t)nb, &ff, &err) != 0) {
    printf("%s: fallback fit: %s\n", label, err.message);
    mp_fit_free(&fe);
    return;
  }
  tf = wide_now() - t0;
  for (k = 0; k < nb; k++) {
    if (!fe.answers[k].feasible || !fe.answers[k].exact) continue;
    n++;
    rc = ff.answers[k].feasible ? ff.answers[k].recompute : -1;
    if (rc < 0) miss++;
    else if (wide_ratio(rc, fe.answers[k].recompute) > worst) worst = wide_ratio(rc, fe.answers[k].recompute);
  }
  printf("%-16s %5zu %10zu %6zu %3d  %6.2fx %2d   %8.1f %8.1f\n", label, g->n_activations, nls, win, n,
         worst, miss, te / 1e3, tf / 1e3);
  fflush(stdout);
  mp_fit_free(&fe);
  mp_fit_free(&ff);
}

void mp_bench_wide_table(void) {
  static const char *const names[] = {"resnet50", "googlenet"};
  static const size_t sizes[] = {60, 80, 100, 120};
  static const size_t big[] = {250, 400};
  /* lattices of 3,456 to 38,596 lower sets, 1.1 to 15 times the window */
  static const struct {
    size_t n;
    unsigned seed;
  } dflt[] = {{130, 1}, {130, 2}, {140, 1}, {140, 2}, {150, 1},
              {150, 2}, {160, 1}, {160, 2}, {160, 3}, {170, 3}};
  char label[64];
  size_t i;
  unsigned seed;
  printf("\nwide graphs: the exact solver's fallback (lower-set limit 1; its window family of the\n"
         "size shown, dflt: the default) and approx against exact, simulated recomputation at 9\n"
         "budgets from exact's least to plain backpropagation's peak; worst = the largest ratio to\n"
         "exact where it plans, miss = budgets exact meets and it does not; times in ms: the\n"
         "slowest solve (one thread), the exact frontier on one thread and on two, the fallback\n"
         "frontier; the exact frontier's time over the slowest exact solve's, on one thread and\n"
         "on two\n");
  printf("%-16s %5s %10s %6s %3s  %-11s  %-11s  %8s %8s %9s %9s %9s  %s\n", "graph", "nodes",
         "lower sets", "window", "n", "fallback", "approx", "exact ms", "fb ms", "ex front",
         "ex fr 2t", "fb front", "front/solve 1t 2t");
  printf("%-16s %5s %10s %6s %3s  %-11s  %-11s\n", "", "", "", "sets", "", "worst miss",
         "worst miss");
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char path[128];
    mp_graph_t *g;
    mp_error_t err;
    snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", names[i]);
    if (mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
      printf("%s: %s\n", path, err.message);
      continue;
    }
    /* the default window: on ResNet-50 all its 241 lower sets */
    wide_row(names[i], g, 9, 0);
    mp_graph_free(g);
  }
  for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
    for (seed = 1; seed <= 3; seed++) {
      mp_graph_t *g = mp_tl_layered_dag(sizes[i], seed, 30);
      if (g == NULL) continue;
      snprintf(label, sizeof(label), "layered%zu/s%u", sizes[i], seed);
      {
        size_t nls = 0;
        mp_lowerset_count(g, 0, &nls);
        wide_row(label, g, 9, nls / 4); /* a quarter of the lower sets */
      }
      mp_graph_free(g);
    }
  printf("\nthe fallback at its default window (at most 400,000 / nodes sets, within 512 .. 4,096),\n"
         "on DAGs whose lower sets are 1.1 to 15 times more, against exact forced through; a fit\n"
         "at 9 budgets each way, two threads, times in s\n");
  printf("%-16s %5s %10s %6s %3s  %-11s  %8s %8s\n", "graph", "nodes", "lower sets", "window", "n",
         "fallback", "exact s", "fb s");
  printf("%-16s %5s %10s %6s %3s  %-11s\n", "", "", "", "sets", "", "worst miss");
  for (i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++) {
    mp_graph_t *g = mp_tl_layered_dag(dflt[i].n, dflt[i].seed, 30);
    if (g == NULL) continue;
    snprintf(label, sizeof(label), "layered%zu/s%u", dflt[i].n, dflt[i].seed);
    wide_dflt_row(label, g, 9);
    mp_graph_free(g);
  }
  printf("\nbeyond the exact DP: the fallback against approx, 9 budgets\n");
  for (i = 0; i < sizeof(big) / sizeof(big[0]); i++)
    for (seed = 1; seed <= 2; seed++) {
      mp_graph_t *g = mp_tl_layered_dag(big[i], seed, 30);
      if (g == NULL) continue;
      snprintf(label, sizeof(label), "layered%zu/s%u", big[i], seed);
      wide_big_row(label, g, 9);
      mp_graph_free(g);
    }
}
