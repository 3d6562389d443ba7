/* bench_swap.c - the data-migration table of `make bench`: per
 * shipped graph and three budgets (60% and 40% of plain backpropagation's
 * peak, and one below the least budget of recompute-only plans, halfway to
 * the lower bound mp_min_budget), the simulated peak and predicted time of
 * none / exact / swap / hybrid / layrub and each solve's wall time. Default
 * device (12 GB/s each way, 10 us per copy, two copy engines, 0.25 ms per
 * Kusumoto time unit), intra-layer reuse off except for layrub, whose policy
 * it is. Prints figures; asserts nothing. Called through a weak symbol by
 * bench_planner.c (`bench_planner swap`). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "formats.h"
#include "plan.h"

void mp_bench_swap_table(void);

static double ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One solve: "peak/time wall" or "-" (no plan) in cell. */
static void cell_at(const mp_graph_t *g, mp_solver_t solver, uint64_t budget, char *cell,
                    size_t n) {
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  double t0 = ms_now(), dt;
  int rc;
  mp_plan_options_init(&o);
  o.solver = solver;
  /* none and layrub have no budget: their one plan, marked when over it */
  o.budget = solver == MP_SOLVER_NONE || solver == MP_SOLVER_LAYRUB ? UINT64_MAX : budget;
  o.deadline_ms = 20000; /* past 20 s the exact DP falls back to approx */
  rc = mp_plan(g, &o, &r, &err);
  dt = ms_now() - t0;
  if (rc != 0) {
    snprintf(cell, n, "error %s", mp_err_name(rc));
    return;
  }
  if (solver == MP_SOLVER_NONE)
    snprintf(cell, n, "%.3f/%-5.0f%s", r.sim.peak_bytes / 1e9, r.sim.time_total,
             r.sim.peak_bytes > budget ? " over" : "");
  else if (solver == MP_SOLVER_LAYRUB)
    snprintf(cell, n, "%.3f/%-5.0f%s %5.1fms", r.sim.peak_bytes / 1e9, r.sim.time_total,
             r.sim.peak_bytes > budget ? " over" : "     ", dt);
  else if (!r.feasible)
    snprintf(cell, n, "-           %7.1fms", dt);
  else
    snprintf(cell, n, "%.3f/%-5.0f%s%7.1fms", r.sim.peak_bytes / 1e9, r.sim.time_total,
             solver == MP_SOLVER_EXACT && !r.exact ? "*" : " ", dt);
  mp_plan_result_free(&r);
}

void mp_bench_swap_table(void) {
  static const char *const names[] = {"vgg19",     "unet",   "resnet50", "resnet152",
                                      "googlenet", "pspnet", "densenet"};
  static const mp_solver_t solvers[] = {MP_SOLVER_NONE, MP_SOLVER_EXACT, MP_SOLVER_SWAP,
                                        MP_SOLVER_HYBRID};
  size_t i, k, j;
  printf("data migration: peak GB / predicted time (graph units) and wall time per solve;\n"
         "'-' = no plan, '*' = exact fell back to approx, 'over' = above the budget.\n"
         "Budgets: 60%% and 40%% of plain backpropagation's peak, and halfway between the\n"
         "lower bound and the least budget of recompute-only plans. Layrub has no budget.\n");
  printf("%-10s %-9s %-18s %-22s %-22s %-22s %s\n", "graph", "budget", "none", "exact", "swap",
         "hybrid", "layrub (reuse on)");
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char path[128], cells[5][64];
    mp_graph_t *g;
    mp_error_t err;
    mp_plan_options_t o;
    mp_plan_result_t r;
    uint64_t lb = 0, p0, least, b[3];
    snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", names[i]);
    if (mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
      printf("%s: %s\n", path, err.message);
      continue;
    }
    mp_min_budget(g, &lb);
    mp_plan_options_init(&o);
    o.solver = MP_SOLVER_NONE;
    if (mp_plan(g, &o, &r, &err) != 0) {
      mp_graph_free(g);
      continue;
    }
    p0 = r.sim.peak_bytes;
    mp_plan_result_free(&r);
    o.solver = MP_SOLVER_AUTO;
    o.budget = lb;
    o.deadline_ms = 20000;
    if (mp_plan(g, &o, &r, &err) != 0) {
      mp_graph_free(g);
      continue;
    }
    least = r.feasible ? lb : r.min_feasible_budget;
    mp_plan_result_free(&r);
    b[0] = (uint64_t)(0.6 * (double)p0);
    b[1] = (uint64_t)(0.4 * (double)p0);
    b[2] = lb + (least - lb) / 2;
    for (k = 0; k < 3; k++) {
      for (j = 0; j < 4; j++) cell_at(g, solvers[j], b[k], cells[j], sizeof(cells[j]));
      cell_at(g, MP_SOLVER_LAYRUB, b[k], cells[4], sizeof(cells[4]));
      printf("%-10s %6.3f GB %-18s %-22s %-22s %-22s %s\n", k == 0 ? names[i] : "",
             b[k] / 1e9, cells[0], cells[1], cells[2], cells[3], cells[4]);
      fflush(stdout);
    }
    mp_graph_free(g);
  }
}
