/* bench_moccasin.c - `make bench` on DAGs shaped like Moccasin's random
 * layered graphs (tests/layered_dag.h, mp_tl_moccasin_dag): the window
 * solver (the exact DP's fallback, asked for by name) against exact forced
 * through (a lower-set limit of 5 million), a fit each way at nine budgets
 * from exact's least budget to plain backpropagation's peak, on two
 * threads. Prints each budget's recomputation both ways, the worst ratio
 * over the budgets where both plan, the budgets where exact plans and
 * window does not, and the times. `bench_planner moccasin FILE...` runs the
 * same on node-link files instead (Moccasin's own, from a copy outside this
 * repository). Prints figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../layered_dag.h"
#include "fit.h"
#include "formats.h"
#include "lowerset.h"
#include "plan.h"

static double moc_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void moc_row(const char *name, const mp_graph_t *g) {
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_fit_t fe, fw;
  mp_error_t err;
  uint64_t lo, hi, b[9];
  size_t nls = 0, k, misses = 0;
  double te, tw, worst = 0, t0;
  mp_lowerset_count(g, 0, &nls);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_NONE;
  if (mp_plan(g, &o, &r, &err) != 0) return;
  hi = r.sim.peak_bytes;
  mp_plan_result_free(&r);
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.max_lower_sets = 5000000;
  o.threads = 2;
  o.budget = 1;
  if (mp_plan(g, &o, &r, &err) != 0) return;
  lo = r.min_feasible_budget;
  mp_plan_result_free(&r);
  for (k = 0; k < 9; k++) b[k] = lo + (hi - lo) * k / 8;
  t0 = moc_ms();
  if (mp_fit(g, &o, b, 9, &fe, &err) != 0) return;
  te = moc_ms() - t0;
  o.solver = MP_SOLVER_WINDOW;
  o.max_lower_sets = 0;
  t0 = moc_ms();
  if (mp_fit(g, &o, b, 9, &fw, &err) != 0) {
    mp_fit_free(&fe);
    return;
  }
  tw = moc_ms() - t0;
  printf("%-44s nodes %4zu lower sets %8zu\n", name, g->n_activations, nls);
  for (k = 0; k < 9; k++) {
    const mp_fit_answer_t *e = &fe.answers[k], *w = &fw.answers[k];
    double ratio = e->feasible && w->feasible ? (e->recompute > 0 ? w->recompute / e->recompute
                                                          : (w->recompute > 0 ? 1e9 : 1.0))
                                      : 0;
    if (e->feasible && !w->feasible) misses++;
    if (e->feasible && w->feasible && ratio > worst) worst = ratio;
    printf("    budget %10llu  exact %s %10.0f  window %s %10.0f  ratio %6.3f\n",
           (unsigned long long)b[k], e->feasible ? "fits" : "----", e->recompute,
           w->feasible ? "fits" : "----", w->recompute, ratio);
  }
  printf("  worst %.3f, window misses %zu of the budgets exact plans; exact fit %.0f ms, window "
         "fit %.0f ms\n",
         worst, misses, te, tw);
  fflush(stdout);
  mp_fit_free(&fe);
  mp_fit_free(&fw);
}

void mp_bench_moccasin_table(int argc, char **argv);
void mp_bench_moccasin_table(int argc, char **argv) {
  static const struct {
    size_t n;
    unsigned seed;
    double w;
  } dags[] = {{100, 1, 0.27}, {100, 2, 0.27}, {120, 1, 0.27}};
  int i;
  printf("Moccasin-shaped layered DAGs: window against exact (forced through), a 9-budget fit "
         "each way, 2 threads\n");
  if (argc > 0) {
    for (i = 0; i < argc; i++) {
      mp_graph_t *g = NULL;
      mp_error_t err;
      if (mp_graph_load_file(argv[i], MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
        printf("%s: %s\n", argv[i], err.message);
        continue;
      }
      moc_row(argv[i], g);
      mp_graph_free(g);
    }
    return;
  }
  for (i = 0; i < (int)(sizeof(dags) / sizeof(dags[0])); i++) {
    char name[96];
    mp_graph_t *g = mp_tl_moccasin_dag(dags[i].n, dags[i].seed, dags[i].w, 0.75, 0.2, 0.14);
    if (g == NULL) continue;
    snprintf(name, sizeof(name), "moccasin-shaped n%zu w%.2f seed %u", dags[i].n, dags[i].w,
             dags[i].seed);
    moc_row(name, g);
    mp_graph_free(g);
  }
}
