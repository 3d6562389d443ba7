/* bench_chains.c - `make bench` on random chains (gen_graphs.h's
 * mp_gen_chain_random): for each shape of sizes and times, several seeds,
 * auto on one thread at budgets between the chain's least budget and plain
 * backpropagation's peak: 10,000-node chains (two seeds, 10%, 50% and 90%
 * of the way) and 100,000-node ones (one seed, 10% and 90%). Prints, per
 * shape and length and over all shapes of a length, the spread of the plan
 * times (min / median / max, CPU time of the planning thread and wall
 * time), how many answers were exact and how many took over the target
 * (1 s at 10,000 nodes, 30 s at 100,000). A plan is the prefix DP at the
 * budget and at the rungs of the slack walk (docs/algorithms.md), each a
 * whole solve. `bench_planner chains [N]` runs only the length N. Prints
 * figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen_graphs.h"
#include "plan.h"
#include "schedule.h"

static double chains_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int chains_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One row: the spread of n plan times (sorted here) and the counts. */
static void chains_row(const char *name, size_t len, double *cpu, double *wall, size_t n,
                       size_t n_exact, size_t n_feasible, double target_ms, size_t n_over) {
  qsort(cpu, n, sizeof(cpu[0]), chains_cmp);
  qsort(wall, n, sizeof(wall[0]), chains_cmp);
  printf("%-8s n=%-6zu %2zu plans  cpu ms min %8.1f  median %8.1f  max %8.1f   wall ms min "
         "%8.1f  median %8.1f  max %8.1f   exact %zu/%zu  feasible %zu  over %.0f s: %zu\n",
         name, len, n, cpu[0], cpu[n / 2], cpu[n - 1], wall[0], wall[n / 2], wall[n - 1], n_exact,
         n, n_feasible, target_ms / 1000, n_over);
  fflush(stdout);
}

/* The least budget that plans (the planner's own answer at budget 1) and
 * plain backpropagation's peak. */
static int chains_range(const mp_graph_t *g, uint64_t *lo, uint64_t *hi) {
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_NONE;
  o.threads = 1;
  if (mp_plan(g, &o, &r, &err) != 0) return -1;
  *hi = r.sim.peak_bytes;
  mp_plan_result_free(&r);
  mp_plan_options_init(&o);
  o.budget = 1;
  o.threads = 1;
  if (mp_plan(g, &o, &r, &err) != 0) return -1;
  *lo = r.min_feasible_budget;
  mp_plan_result_free(&r);
  return *lo > 0 && *lo <= *hi ? 0 : -1;
}

void mp_bench_chains_table(size_t only_n);
void mp_bench_chains_table(size_t only_n) {
  static const struct {
    size_t n;
    unsigned seeds;
    unsigned pct[3]; /* budgets, % of the way from the least to the peak; 0 ends */
    double target_ms;
  } lens[] = {{10000, 2, {10, 50, 90}, 1000}, {100000, 1, {10, 90, 0}, 30000}};
  size_t li;
  int shape;
  printf("random chains: auto on one thread at 10%%, 50%% and 90%% (100,000 nodes: 10%% and "
         "90%%) of the way from the least budget to plain backpropagation's peak; plan time "
         "spread (cpu: the planning thread's CPU time; wall: elapsed)\n");
  for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
    double all_cpu[64], all_wall[64];
    size_t all_n = 0, all_exact = 0, all_feasible = 0, all_over = 0;
    if (only_n && lens[li].n != only_n) continue;
    for (shape = 0; shape < MP_GEN_CHAIN_SHAPES; shape++) {
      double cpu[16], wall[16];
      size_t n = 0, n_exact = 0, n_feasible = 0, n_over = 0;
      unsigned seed;
      for (seed = 1; seed <= lens[li].seeds; seed++) {
        mp_graph_t *g = mp_gen_chain_random(lens[li].n, seed, (mp_gen_chain_shape_t)shape);
        uint64_t lo, hi;
        unsigned k;
        if (g == NULL || chains_range(g, &lo, &hi) != 0) {
          printf("  %s n=%zu seed %u: cannot generate or size\n",
                 mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li].n, seed);
          mp_graph_free(g);
          continue;
        }
        for (k = 0; k < 3 && lens[li].pct[k] != 0; k++) {
          unsigned pct = lens[li].pct[k];
          mp_plan_options_t o;
          mp_plan_result_t r;
          mp_error_t err;
          double c0, w0;
          mp_plan_options_init(&o);
          o.threads = 1;
          o.budget = lo + (uint64_t)((double)(hi - lo) * pct / 100.0);
          c0 = chains_ms(CLOCK_THREAD_CPUTIME_ID);
          w0 = chains_ms(CLOCK_MONOTONIC);
          if (mp_plan(g, &o, &r, &err) != 0) {
            printf("  %s n=%zu seed %u at %u%%: error %s\n",
                   mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li].n, seed, pct,
                   err.message);
            continue;
          }
          cpu[n] = chains_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
          wall[n] = chains_ms(CLOCK_MONOTONIC) - w0;
          n_over += cpu[n] > lens[li].target_ms;
          n_exact += r.exact != 0;
          n_feasible += r.feasible != 0;
          if (!r.exact || cpu[n] > lens[li].target_ms)
            printf("  %s n=%zu seed %u at %u%%: %.0f ms cpu, exact %d (%s)\n",
                   mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li].n, seed, pct,
                   cpu[n], r.exact, r.exact_reason);
          n++;
          mp_plan_result_free(&r);
          fflush(stdout);
        }
        mp_graph_free(g);
      }
      if (n == 0) continue;
      memcpy(all_cpu + all_n, cpu, n * sizeof(cpu[0]));
      memcpy(all_wall + all_n, wall, n * sizeof(wall[0]));
      all_n += n;
      all_exact += n_exact;
      all_feasible += n_feasible;
      all_over += n_over;
      chains_row(mp_gen_chain_shape_name((mp_gen_chain_shape_t)shape), lens[li].n, cpu, wall, n,
                 n_exact, n_feasible, lens[li].target_ms, n_over);
    }
    if (all_n > 0)
      chains_row("all", lens[li].n, all_cpu, all_wall, all_n, all_exact, all_feasible,
                 lens[li].target_ms, all_over);
  }
}
