/* bench_consist.c - `make bench`'s consistency table: for each shipped graph
 * and solver, mp_consistency_check (consistency.h) over ten budgets from
 * the graph's lower bound to 5% above plain backpropagation's peak, plus
 * the least budgets, the plans' own peaks and frontier points it adds:
 * how many budgets were planned and how many disagreements of each kind
 * it found (0 everywhere is one truth). Linked into bench_planner, which
 * calls mp_bench_consistency_table() when it is present.
 */
#include <stdio.h>
#include <stdlib.h>

#include "consistency.h"
#include "formats.h"
#include "schedule.h"

void mp_bench_consistency_table(void);

void mp_bench_consistency_table(void) {
  static const char *const names[] = {"vgg19", "unet", "resnet50", "resnet152", "densenet"};
  static const mp_solver_t solvers[] = {MP_SOLVER_EXACT,  MP_SOLVER_APPROX, MP_SOLVER_AUTO, MP_SOLVER_CHAIN, MP_SOLVER_MEMONGER,
                                        MP_SOLVER_SQRT,   MP_SOLVER_NONE,   MP_SOLVER_LAYRUB,
                                        MP_SOLVER_SWAP,   MP_SOLVER_HYBRID};
  size_t i, k, j;
  printf("\nconsistency (mp_consistency_check): budgets planned, frontier points, and the\n"
         "disagreements: mono(tone feasibility), least (min_feasible_budget), closure (a plan's\n"
         "own peak), fit fits/above/cost/peak (mp_fit vs plan), points fits/above/cost/first\n");
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char path[128];
    mp_graph_t *g;
    mp_error_t err;
    mp_schedule_t *all;
    mp_sim_report_t rep;
    uint64_t lo, hi, b[10];
    snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", names[i]);
    if (mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0 ||
        mp_min_budget(g, &lo) != 0 || mp_schedule_store_all(g, &all) != 0 ||
        mp_simulate(g, all, &rep, &err) != 0) {
      printf("%s: cannot load or simulate\n", path);
      exit(1);
    }
    hi = rep.peak_bytes + rep.peak_bytes / 20;
    mp_sim_report_free(&rep);
    mp_schedule_free(all);
    for (j = 0; j < 10; j++) b[j] = lo + (uint64_t)((double)(hi - lo) * (double)j / 9.0);
    for (k = 0; k < sizeof(solvers) / sizeof(solvers[0]); k++) {
      mp_plan_options_t o;
      mp_consistency_t c;
      mp_plan_options_init(&o);
      o.solver = solvers[k];
      o.threads = 2;
      if (mp_consistency_check(g, &o, b, 10, &c, &err) != 0) {
        printf("  %-10s %-8s error: %s\n", names[i], mp_solver_name(solvers[k]), err.message);
        continue;
      }
      printf("  %-10s %-8s budgets %3zu points %4zu  mono %zu least %zu closure %2zu cost_up %zu  "
             "fit %zu/%zu/%zu/%zu  points %zu/%zu/%2zu/%zu/%zu\n",
             names[i], mp_solver_name(solvers[k]), c.n_budgets, c.n_points, c.monotone, c.least,
             c.closure, c.cost_up, c.fit_feasible, c.fit_promise, c.fit_cost, c.fit_peak, c.point_feasible,
             c.point_promise, c.point_cost, c.point_least, c.point_between);
      fflush(stdout);
    }
    mp_graph_free(g);
  }
}
