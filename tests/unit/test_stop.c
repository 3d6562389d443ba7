/* test_stop.c - every phase of every solver stops on request: for each
 * solver, each phase it reports (mp_plan_options_t.progress) is driven to a
 * stop (should_stop says so from its first report on) and the plan must
 * answer MP_ECANCELED; on a dense graph, where the lower-set phases run for
 * seconds, the stop is taken inside the phase that was asked (the
 * approximate family's closures, the per-set preparation). The verdicts
 * count phases and polls, never time. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "suites.h"
#include "test_util.h"

#define MAX_PHASES 16

typedef struct {
  const char *stop_in; /* stop from this phase's first report on; NULL: never */
  int armed;           /* it was reported */
  const char *stopped_in; /* the phase of the first stop */
  int moved;              /* phases begun after it was armed, before a stop */
  int stop_frac;       /* only once a report of it has a fraction > 0 */
  const char *cur;     /* the phase reported last */
  double frac;
  const char *seen[MAX_PHASES];
  int n_seen;
  int stops;           /* how often should_stop said stop */
} watch_t;

static void on_progress(void *arg, const char *phase, double fraction) {
  watch_t *w = arg;
  int i;
  if (w->armed && w->stops == 0 && w->cur && strcmp(w->cur, phase) != 0) w->moved++;
  w->cur = phase;
  w->frac = fraction;
  if (w->stop_in && strcmp(phase, w->stop_in) == 0 && (!w->stop_frac || fraction > 0)) w->armed = 1;
  for (i = 0; i < w->n_seen; i++)
    if (strcmp(w->seen[i], phase) == 0) return;
  if (w->n_seen < MAX_PHASES) w->seen[w->n_seen++] = phase;
}

static int should_stop(void *arg) {
  watch_t *w = arg;
  if (!w->armed) return 0;
  if (w->stops++ == 0) w->stopped_in = w->cur;
  return 1;
}

static int run(const mp_graph_t *g, mp_solver_t solver, uint64_t budget, watch_t *w, mp_plan_result_t *r) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = solver;
  o.budget = budget;
  o.should_stop = should_stop;
  o.stop_arg = w;
  o.progress = on_progress;
  o.progress_arg = w;
  if (mp_solver_swaps(solver)) o.swap = 1;
  mp_error_clear(&err);
  memset(r, 0, sizeof(*r));
  return mp_plan(g, &o, r, &err);
}

/* Every phase each solver reports, driven to a stop in turn. */
START_TEST(test_every_phase_stops) {
  static const mp_solver_t solvers[] = {MP_SOLVER_AUTO, MP_SOLVER_EXACT,  MP_SOLVER_APPROX, MP_SOLVER_WINDOW,
                                        MP_SOLVER_CHAIN, MP_SOLVER_MEMONGER, MP_SOLVER_SQRT, MP_SOLVER_SWAP,
                                        MP_SOLVER_HYBRID, MP_SOLVER_LAYRUB};
  mp_graph_t *g = mp_test_load_shipped("resnet50");
  size_t s;
  int total = 0;
  ck_assert_ptr_nonnull(g);
  for (s = 0; s < sizeof(solvers) / sizeof(solvers[0]); s++) {
    watch_t all;
    mp_plan_result_t r;
    /* a budget between the least and plain backpropagation's peak: every
     * phase of the solver runs */
    uint64_t budget = g->const_bytes + g->activation_bytes / 3;
    int i, rc;
    memset(&all, 0, sizeof(all));
    rc = run(g, solvers[s], budget, &all, &r);
    ck_assert_msg(rc == 0, "%s: %d", mp_solver_name(solvers[s]), rc);
    mp_plan_result_free(&r);
    ck_assert_msg(all.n_seen >= 2, "%s reported %d phases", mp_solver_name(solvers[s]), all.n_seen);
    for (i = 0; i < all.n_seen; i++) {
      watch_t w;
      memset(&w, 0, sizeof(w));
      w.stop_in = all.seen[i];
      rc = run(g, solvers[s], budget, &w, &r);
      mp_plan_result_free(&r);
      ck_assert_msg(rc == MP_ECANCELED, "%s stopped in %s: rc %d", mp_solver_name(solvers[s]), all.seen[i], rc);
      ck_assert_msg(w.stops >= 1, "%s: %s never polled", mp_solver_name(solvers[s]), all.seen[i]);
      total++;
    }
  }
  ck_assert_int_ge(total, 20);
  mp_graph_free(g);
}
END_TEST

/* A graph whose every node feeds every later one: n + 1 lower sets, but
 * each set's figures read up to n^2/2 edges, so preparing them all reads
 * about n^3/6 (225 million here): the preparation must poll as it goes. */
static mp_graph_t *dense_graph(size_t n) {
  mp_graph_t *g = mp_graph_new();
  mp_limits_t lim;
  mp_error_t err;
  char **ids = calloc(n, sizeof(char *));
  size_t v, u;
  ck_assert_ptr_nonnull(g);
  ck_assert_ptr_nonnull(ids);
  mp_limits_default(&lim);
  for (v = 0; v < n; v++) {
    mp_node_spec_t spec;
    char where[32];
    ids[v] = malloc(16);
    snprintf(ids[v], 16, "d%zu", v);
    snprintf(where, sizeof(where), "node %zu", v);
    mp_node_spec_init(&spec);
    spec.id = ids[v];
    spec.inputs = (const char *const *)ids;
    spec.n_inputs = v;
    spec.bytes = 1000 + v;
    spec.time = 1.0;
    spec.where = where;
    mp_error_clear(&err);
    ck_assert_int_eq(mp_graph_add_node(g, &spec, &lim, &err), 0);
  }
  mp_error_clear(&err);
  ck_assert_int_eq(mp_graph_finalize(g, &lim, &err), 0);
  for (u = 0; u < n; u++) free(ids[u]);
  free(ids);
  return g;
}

START_TEST(test_lower_set_phases_stop) {
  mp_graph_t *g = dense_graph(1100);
  watch_t w;
  mp_plan_result_t r;
  /* the approximate family's closures: 600,000 edges of 18 words each */
  memset(&w, 0, sizeof(w));
  w.stop_in = "lower_sets";
  ck_assert_int_eq(run(g, MP_SOLVER_APPROX, g->const_bytes + g->activation_bytes / 2, &w, &r), MP_ECANCELED);
  mp_plan_result_free(&r);
  ck_assert_str_eq(w.stopped_in, "lower_sets");
  memset(&w, 0, sizeof(w));
  w.stop_in = "prepare";
  w.stop_frac = 1; /* only a poll from inside the per-set loop stops it */
  ck_assert_int_eq(run(g, MP_SOLVER_EXACT, g->const_bytes + g->activation_bytes / 2, &w, &r), MP_ECANCELED);
  mp_plan_result_free(&r);
  ck_assert_str_eq(w.stopped_in, "prepare");
  ck_assert(w.frac > 0 && w.frac < 0.5);
  mp_graph_free(g);
}
END_TEST

/* A deadline that passes in the lower-set phases hands the solve to the
 * fallback, which answers. */
START_TEST(test_deadline_in_lower_sets_falls_back) {
  mp_graph_t *g = dense_graph(300);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_EXACT;
  o.budget = UINT64_MAX / 4;
  o.deadline_ms = 1e-9; /* passed at the first look */
  mp_error_clear(&err);
  memset(&r, 0, sizeof(r));
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
  ck_assert(r.feasible);
  ck_assert_int_eq(r.exact, 0);
  ck_assert_msg(strstr(r.exact_reason, "deadline") != NULL, "reason: %s", r.exact_reason);
  mp_plan_result_free(&r);
  mp_graph_free(g);
}
END_TEST

Suite *suite_stop(void) {
  Suite *s = suite_create("stop");
  TCase *tc = tcase_create("phases");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_phase_stops);
  tcase_add_test(tc, test_lower_set_phases_stop);
  tcase_add_test(tc, test_deadline_in_lower_sets_falls_back);
  suite_add_tcase(s, tc);
  return s;
}
