/* bench_planner.c - `make bench`: planner speed and memory on the shipped
 * graphs and on a generated 1000-node DAG. Prints figures; asserts nothing
 * (the targets and measured figures live in docs/benchmarks.md, not in
 * timed tests).
 *
 * Per graph, in a child process of its own so that the peak RSS is the
 * graph's: activations, lower sets, the frontier's time and point count,
 * and the solve time of exact, approx and memonger at four budgets (the
 * least any candidate family meets, plain backpropagation's peak, their
 * midpoint, and the exact DP's own least budget, its hardest), with the
 * recomputation each plan needs, and the frontier `memplan frontier`
 * answers (every breakpoint) with its CPU time against the target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dp.h"
#include "frontier.h"
#include "formats.h"
#include "lowerset.h"
#include "plan.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long peak_rss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* One mp_plan solve, described in `cell`; returns its wall-clock ms. */
static double plan_at(const mp_graph_t *g, mp_solver_t solver, uint64_t budget, unsigned threads,
                      char *cell, size_t n) {
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  double t0 = now_ms(), dt;
  int rc;
  mp_plan_options_init(&o);
  o.solver = solver;
  o.budget = budget;
  o.threads = threads;
  rc = mp_plan(g, &o, &r, &err);
  dt = now_ms() - t0;
  if (rc != 0)
    snprintf(cell, n, "error %s", mp_err_name(rc));
  else if (!r.feasible)
    snprintf(cell, n, "%8.1f ms   (none)", dt);
  else
    snprintf(cell, n, "%8.1f ms rc=%-5g%s", dt, r.sim.time_recompute,
             (solver == MP_SOLVER_EXACT && !r.exact) ? "*" : "");
  mp_plan_result_free(&r);
  return dt;
}

/* The cores, for the runs on several threads (at most MP_DP_MAX_THREADS). */
static unsigned nthreads = 1;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bench_graph(const char *label, mp_graph_t *g) {
  mp_plan_options_t po;
  mp_frontier_t f;
  mp_error_t err;
  size_t nls = 0;
  double t0, tf, ex[4];
  uint64_t b[4];
  char cells[4][3][64];
  mp_dp_options_t dpo;
  mp_dp_result_t dr;
  int i, k, rc;
  static const mp_solver_t solvers[3] = {MP_SOLVER_EXACT, MP_SOLVER_APPROX, MP_SOLVER_MEMONGER};

  rc = mp_lowerset_count(g, 10000000, &nls);
  mp_plan_options_init(&po);
  po.deadline_ms = 300000; /* the frontier is ~17 plans (frontier_sampled.c): 15 s on GoogLeNet */
  t0 = now_ms();
  if (mp_frontier(g, &po, &f, &err) != 0) {
    printf("%-12s frontier failed: %s\n", label, err.message);
    return;
  }
  tf = now_ms() - t0;
  /* Three budgets (a fourth below): the least any candidate family meets, plain
   * backpropagation's peak, and their midpoint. */
  b[0] = f.points[0].budget;
  b[2] = f.peak_no_recompute;
  b[1] = b[0] + (b[2] - b[0]) / 2;
  /* and the exact DP's own least budget, where its solve works hardest
   * (its passes meet the most pairs near the optimum) */
  mp_dp_options_init(&dpo);
  dpo.budget = 0;
  b[3] = mp_dp_solve(g, &dpo, &dr, &err) == 0 && !dr.feasible ? dr.min_feasible_budget : b[0];
  mp_dp_result_free(&dr);
  for (i = 0; i < 4; i++)
    for (k = 0; k < 3; k++) {
      double dt = plan_at(g, solvers[k], b[i], 1, cells[i][k], sizeof(cells[i][k]));
      if (k == 0) ex[i] = dt;
    }
  printf("%-12s nodes %5zu  lower sets %8zu%s  frontier (auto) %9.1f ms, %zu points%s  peak RSS %ld MiB\n",
         label, g->n_activations, nls, rc == 0 ? "" : "+", tf, f.n_points,
         f.exact ? "" : " (sampled plans)", peak_rss_kib() / 1024);
  for (i = 0; i < 4; i++)
    printf("    budget %6.3f GiB  exact %-26s approx %-26s memonger %s%s\n",
           (double)b[i] / (1 << 30), cells[i][0], cells[i][1], cells[i][2],
           i == 3 ? "  (the exact DP's least budget)" : "");
  /* The frontier target ("about the time of one budget's solve"), measured
   * against these four exact solves: the slowest and the median. */
  qsort(ex, 4, sizeof(ex[0]), cmp_double);
  printf("    frontier / exact solve: %.2fx the slowest, %.2fx the median of the four\n",
         ex[3] > 0 ? tf / ex[3] : 0, ex[1] + ex[2] > 0 ? tf / ((ex[1] + ex[2]) / 2) : 0);
  /* The same on every core (mp_plan_options_t.threads): the frontier's
   * plans run on parallel threads (plan_many.c), and each solve's first pass
   * is a reverse pass, which shares out its sets; a solve's forward pass
   * stays on one thread. */
  if (nthreads > 1) {
    mp_frontier_t f2;
    double tf2, ex2[4];
    char cell[64];
    size_t k2;
    int same;
    po.threads = nthreads;
    t0 = now_ms();
    if (mp_frontier(g, &po, &f2, &err) != 0) {
      printf("    frontier on %u threads failed: %s\n", nthreads, err.message);
    } else {
      tf2 = now_ms() - t0;
      same = f2.n_points == f.n_points;
      for (k2 = 0; same && k2 < f.n_points; k2++)
        same = f2.points[k2].budget == f.points[k2].budget &&
               f2.points[k2].recompute == f.points[k2].recompute;
      for (i = 0; i < 4; i++) ex2[i] = plan_at(g, MP_SOLVER_EXACT, b[i], nthreads, cell, sizeof(cell));
      qsort(ex2, 4, sizeof(ex2[0]), cmp_double);
      printf("    on %u threads: frontier %9.1f ms (%s), exact solves %.1f-%.1f ms; frontier / "
             "exact solve: %.2fx the slowest (%.2fx the slowest on 1 thread), %.2fx the median\n",
             nthreads, tf2, same ? "same points" : "POINTS DIFFER", ex2[0], ex2[3],
             ex2[3] > 0 ? tf2 / ex2[3] : 0, ex[3] > 0 ? tf2 / ex[3] : 0,
             ex2[1] + ex2[2] > 0 ? tf2 / ((ex2[1] + ex2[2]) / 2) : 0);
      mp_frontier_free(&f2);
    }
  }
  /* The frontier `memplan frontier` answers: the samples, then the search
   * for every breakpoint (MP_FRONTIER_SOLVES plans, MP_FRONTIER_MS of wall
   * time), on one thread. Target: every breakpoint (exact) within the limit,
   * in CPU time, which a loaded machine does not inflate (this process does
   * nothing else meanwhile). */
  {
    mp_plan_options_t eo;
    mp_frontier_t fe;
    struct timespec c0, c1;
    double w0 = now_ms(), cpu;
    mp_plan_options_init(&eo);
    eo.threads = 1;
    eo.frontier_solves = MP_FRONTIER_SOLVES;
    eo.frontier_ms = MP_FRONTIER_MS;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    if (mp_frontier(g, &eo, &fe, &err) != 0) {
      printf("    frontier, every breakpoint: failed: %s\n", err.message);
    } else {
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
      cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
      printf("    frontier, every breakpoint (memplan frontier's search, 1 thread): %zu points, %s, "
             "%.1f s CPU, %.1f s wall; target exact within %.0f s: %s\n",
             fe.n_points, fe.exact ? "exact" : fe.exact_reason, cpu, (now_ms() - w0) / 1e3,
             MP_FRONTIER_MS / 1e3, fe.exact && cpu * 1e3 < MP_FRONTIER_MS ? "met" : "MISSED");
      mp_frontier_free(&fe);
    }
  }
  mp_frontier_free(&f);
}

/* A layered DAG: 1000 nodes in layers of 10, each node reading 6 distinct
 * nodes of the previous two layers (about 6000 edges). Deterministic. */
static mp_graph_t *layered_dag(void) {
  mp_graph_t *g = mp_graph_new();
  char ids[1000][8];
  const char *in[6];
  uint64_t s = 88172645463325252ULL;
  int v, k;
  for (v = 0; v < 1000; v++) {
    mp_node_spec_t sp;
    int layer = v / 10, n = 0;
    snprintf(ids[v], sizeof(ids[v]), "n%d", v);
    mp_node_spec_init(&sp);
    sp.id = ids[v];
    while (layer > 0 && n < 6) {
      int lo = (layer >= 2 ? layer - 2 : 0) * 10, hi = layer * 10, u, dup = 0;
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      u = lo + (int)(s % (uint64_t)(hi - lo));
      for (k = 0; k < n; k++) dup |= strcmp(in[k], ids[u]) == 0;
      if (!dup) in[n++] = ids[u];
    }
    sp.inputs = in;
    sp.n_inputs = (size_t)n;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    sp.bytes = 1000000 + s % 9000000;
    sp.time = 1 + (double)(s % 10);
    if (mp_graph_add_node(g, &sp, NULL, NULL) != 0) exit(1);
  }
  if (mp_graph_finalize(g, NULL, NULL) != 0) exit(1);
  return g;
}

static void bench_layered(void) {
  static const double fractions[] = {0.5, 0.8, 1.5};
  mp_graph_t *g = layered_dag();
  size_t i;
  printf("%-12s nodes %5zu  edges %5zu  (approx DP alone, memplan accounting)\n", "layered1000",
         g->n_activations, g->n_edges);
  for (i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++) {
    mp_dp_options_t o;
    mp_dp_result_t r;
    double t0, dt;
    mp_dp_options_init(&o);
    o.exact = 0;
    o.budget = g->const_bytes + (uint64_t)((double)g->activation_bytes * fractions[i]);
    t0 = now_ms();
    if (mp_dp_solve(g, &o, &r, NULL) != 0) exit(1);
    dt = now_ms() - t0;
    printf("    budget %.1fx activations: %9.1f ms  %s, recompute %g\n", fractions[i], dt,
           r.feasible ? "feasible" : "infeasible", r.recompute_time);
    fflush(stdout);
    mp_dp_result_free(&r);
  }
  printf("    peak RSS %ld MiB\n", peak_rss_kib() / 1024);
  mp_graph_free(g);
}

/* The data-migration table (tests/bench/bench_swap.c), when linked in. */
__attribute__((weak)) void mp_bench_swap_table(void);
/* The large generated graphs and their generator (tests/bench/bench_large.c). */
__attribute__((weak)) void mp_bench_large_table(void);
__attribute__((weak)) void mp_bench_moccasin_table(int argc, char **argv);
__attribute__((weak)) void mp_bench_chains_table(size_t only_n);
__attribute__((weak)) int mp_bench_gen(int argc, char **argv);

/* The consistency table (tests/bench/bench_consist.c), when linked in. */
__attribute__((weak)) void mp_bench_consistency_table(void);
/* The wide-graph table (tests/bench/bench_wide.c), when linked in. */
__attribute__((weak)) void mp_bench_wide_table(void);

/* `bench_planner sweep NAME`: the exact DP alone (mp_dp_solve, memplan's
 * accounting) at 24 budgets from its least one to the no-recompute
 * model peak, the least five a step apart (where its solves work hardest):
 * the "every budget under 10 s" figure. */
static int bench_sweep(const char *name) {
  char path[128];
  mp_graph_t *g;
  mp_error_t err;
  mp_dp_options_t o;
  mp_dp_result_t r;
  uint64_t lo, hi, b;
  double worst = 0, t0, dt;
  int k;
  snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", name);
  if (mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
    printf("%s: %s\n", path, err.message);
    return 1;
  }
  mp_dp_options_init(&o);
  o.budget = 0;
  if (mp_dp_solve(g, &o, &r, &err) != 0 || r.feasible) return 1;
  lo = r.min_feasible_budget;
  mp_dp_result_free(&r);
  o.budget = UINT64_MAX;
  if (mp_dp_solve(g, &o, &r, &err) != 0) return 1;
  hi = r.model_peak;
  mp_dp_result_free(&r);
  printf("%s: exact DP from its least budget %.3f GiB to %.3f GiB\n", name,
         (double)lo / (1 << 30), (double)hi / (1 << 30));
  for (k = 0; k < 24; k++) {
    b = k < 5 ? lo + (uint64_t)k * ((hi - lo) / 1000) : lo + (hi - lo) / 19 * (uint64_t)(k - 4);
    o.budget = b;
    t0 = now_ms();
    if (mp_dp_solve(g, &o, &r, &err) != 0) return 1;
    dt = now_ms() - t0;
    if (dt > worst) worst = dt;
    printf("    budget %6.3f GiB  %8.1f ms  rc=%g%s\n", (double)b / (1 << 30), dt, r.recompute_time,
           r.exact_used ? "" : "  (fell back to approx)");
    fflush(stdout);
    mp_dp_result_free(&r);
  }
  printf("    slowest: %.1f ms\n", worst);
  mp_graph_free(g);
  return 0;
}

int main(int argc, char **argv) {
  static const char *const names[] = {"vgg19", "unet", "resnet50", "resnet152", "densenet",
                                      "googlenet", "pspnet"};
  size_t i;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  nthreads = ncpu < 1 ? 1 : ncpu > MP_DP_MAX_THREADS ? MP_DP_MAX_THREADS : (unsigned)ncpu;
  if (argc > 2 && strcmp(argv[1], "sweep") == 0) return bench_sweep(argv[2]);
  if (argc > 1 && strcmp(argv[1], "gen") == 0 && mp_bench_gen) return mp_bench_gen(argc, argv);
  printf("memplan planner benchmark (%s). rc = recomputation in the graph's time unit;\n"
         "* = exact fell back to approx; times are wall clock on this machine.\n\n",
         argc > 1 ? argv[1] : "all shipped graphs");
  fflush(stdout);
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    pid_t pid;
    if (argc > 1 && strcmp(argv[1], names[i]) != 0) continue;
    pid = fork();
    if (pid == 0) {
      char path[128];
      mp_graph_t *g;
      mp_error_t err;
      snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", names[i]);
      if (mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
        printf("%s: %s\n", path, err.message);
        _exit(1);
      }
      bench_graph(names[i], g);
      mp_graph_free(g);
      fflush(stdout);
      _exit(0);
    }
    waitpid(pid, NULL, 0);
  }
  if (argc <= 1 || strcmp(argv[1], "layered1000") == 0) {
    if (fork() == 0) {
      bench_layered();
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "wide") == 0) && mp_bench_wide_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_wide_table();
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "swap") == 0) && mp_bench_swap_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_swap_table();
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "consistency") == 0) && mp_bench_consistency_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_consistency_table();
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "moccasin") == 0) && mp_bench_moccasin_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_moccasin_table(argc > 2 ? argc - 2 : 0, argv + 2);
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "chains") == 0) && mp_bench_chains_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_chains_table(argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 0);
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  if ((argc <= 1 || strcmp(argv[1], "large") == 0) && mp_bench_large_table) {
    fflush(stdout);
    if (fork() == 0) {
      mp_bench_large_table();
      fflush(stdout);
      _exit(0);
    }
    wait(NULL);
  }
  return 0;
}
