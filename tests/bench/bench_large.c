/* bench_large.c - `make bench` on large generated graphs (gen_graphs.h):
 * auto on a 10,000-node chain, a 10,000-node transformer-shaped graph and a
 * 100,000-node chain, at budgets 30%, 50% and 70% of the way from the
 * graph's lower bound (mp_min_budget) to plain backpropagation's peak. Also
 * `bench_planner gen chain|transformer N [SEED]`, which prints a generated
 * graph as native JSON for the CLI and the daemon. Prints figures; asserts
 * nothing. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats.h"
#include "gen_graphs.h"
#include "plan.h"
#include "schedule.h"

static double large_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static mp_graph_t *large_make(const char *kind, size_t n, uint64_t seed) {
  if (strcmp(kind, "chain") == 0) return mp_gen_chain(n, seed);
  if (strcmp(kind, "transformer") == 0) return mp_gen_transformer(n, seed);
  return NULL;
}

int mp_bench_gen(int argc, char **argv);
int mp_bench_gen(int argc, char **argv) {
  mp_graph_t *g;
  json_t *j;
  if (argc < 4) {
    fprintf(stderr, "usage: bench_planner gen chain|transformer N [SEED]\n");
    return 2;
  }
  g = large_make(argv[2], (size_t)strtoull(argv[3], NULL, 10),
                 argc > 4 ? strtoull(argv[4], NULL, 10) : 1);
  if (g == NULL) {
    fprintf(stderr, "cannot generate %s %s\n", argv[2], argv[3]);
    return 2;
  }
  j = mp_graph_to_json(g);
  if (j == NULL || json_dumpf(j, stdout, JSON_COMPACT) != 0) return 3;
  putchar('\n');
  json_decref(j);
  mp_graph_free(g);
  return 0;
}

void mp_bench_large_table(void);
void mp_bench_large_table(void) {
  static const struct {
    const char *kind;
    size_t n;
  } graphs[] = {{"chain", 10000}, {"transformer", 10000}, {"chain", 100000}};
  static const double fractions[] = {0.3, 0.5, 0.7};
  size_t i, k;
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned cores = nc < 1 ? 1 : nc > 8 ? 8 : (unsigned)nc;
  printf("large generated graphs: auto at 30/50/70%% from the lower bound to plain "
         "backpropagation's peak, on one thread and on every core (at most 8)\n");
  for (i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
    mp_graph_t *g = large_make(graphs[i].kind, graphs[i].n, 1);
    mp_schedule_t *s = NULL;
    mp_sim_report_t rep;
    uint64_t lo, hi;
    if (g == NULL || mp_schedule_store_all(g, &s) != 0 ||
        mp_simulate(g, s, &rep, NULL) != 0) {
      printf("%-12s %zu: cannot generate or simulate\n", graphs[i].kind, graphs[i].n);
      exit(1);
    }
    hi = rep.peak_bytes;
    if (mp_min_budget(g, &lo) != 0) exit(1);
    mp_sim_report_free(&rep);
    mp_schedule_free(s);
    printf("%-12s nodes %6zu  lower bound %.3f GiB, no-recompute peak %.3f GiB\n",
           graphs[i].kind, g->n_activations, (double)lo / (1 << 30), (double)hi / (1 << 30));
    for (k = 0; k < sizeof(fractions) / sizeof(fractions[0]); k++) {
      mp_plan_options_t o;
      mp_plan_result_t r, rn;
      mp_error_t err;
      double t0, dt, dtn = -1;
      int rc, rcn = -1;
      mp_plan_options_init(&o);
      o.budget = lo + (uint64_t)((double)(hi - lo) * fractions[k]);
      o.threads = 1;
      t0 = large_now_ms();
      rc = mp_plan(g, &o, &r, &err);
      dt = large_now_ms() - t0;
      if (rc != 0) {
        printf("    %2.0f%%  budget %7.3f GiB  error: %s\n", fractions[k] * 100,
               (double)o.budget / (1 << 30), err.message);
        continue;
      }
      /* again on every core, as the CLI plans by default: the same answer */
      if (cores > 1) {
        o.threads = cores;
        t0 = large_now_ms();
        rcn = mp_plan(g, &o, &rn, &err);
        dtn = large_now_ms() - t0;
        if (rcn == 0) {
          if (rn.feasible != r.feasible || rn.sim.peak_bytes != r.sim.peak_bytes ||
              rn.sim.time_recompute != r.sim.time_recompute)
            printf("    MISMATCH: %u threads answer differently from one\n", cores);
          mp_plan_result_free(&rn);
        }
      }
      printf("    %2.0f%%  budget %7.3f GiB  %9.1f ms, %9.1f ms on %u threads  %s  solver %s (%s), "
             "recompute %g, peak %.3f GiB\n",
             fractions[k] * 100, (double)o.budget / (1 << 30), dt, dtn, cores,
             r.feasible ? "feasible  " : "infeasible", mp_solver_name(r.solver_used),
             r.source ? r.source : "-", r.sim.time_recompute,
             (double)r.sim.peak_bytes / (1 << 30));
      fflush(stdout);
      mp_plan_result_free(&r);
    }
    mp_graph_free(g);
  }
}
