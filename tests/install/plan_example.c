/* plan_example.c - the smallest program built against an installed memplan
 * (libmemplan.a and its headers, found through `pkg-config memplan`): load a
 * graph in any of the three formats, plan it under a budget with mp_plan()
 * and print whether the plan fits and its simulated peak.
 *
 *   plan_example GRAPH BUDGET        e.g. plan_example cg_vgg19.txt 2GiB
 *
 * Exit status as memplan's: 0 a plan fits, 1 none does, 2 bad input, 3 the
 * planner failed. tests/install/run.sh builds and runs it (make test-install). */
#include <inttypes.h>
#include <stdio.h>

#include <memplan/formats.h>
#include <memplan/plan.h>
#include <memplan/units.h>

int main(int argc, char **argv) {
  mp_graph_t *g = NULL;
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  uint64_t budget;
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: plan_example GRAPH BUDGET\n");
    return 2;
  }
  mp_error_clear(&err);
  if (mp_parse_bytes(argv[2], &budget, &err) != 0 ||
      mp_graph_load_file(argv[1], MP_FORMAT_AUTO, NULL, &g, NULL, &err) != 0) {
    fprintf(stderr, "plan_example: %s: %s (%s)\n", argv[1], err.message, mp_err_name(err.code));
    return 2;
  }
  mp_plan_options_init(&o);
  o.budget = budget;
  if ((rc = mp_plan(g, &o, &r, &err)) != 0) {
    fprintf(stderr, "plan_example: planning failed: %s (%s)\n", err.message, mp_err_name(rc));
    mp_graph_free(g);
    return 3;
  }
  printf("feasible %s\npeak_bytes %" PRIu64 "\n", r.feasible ? "true" : "false", r.sim.peak_bytes);
  rc = r.feasible ? 0 : 1;
  mp_plan_result_free(&r);
  mp_graph_free(g);
  return rc;
}
