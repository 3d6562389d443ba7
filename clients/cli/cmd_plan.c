/* cmd_plan.c - `memplan plan GRAPH --budget B`: run the planner and print its
 * answer (plan_json.h). Exit 1 when no plan fits. The device flags and
 * --swap set up data migration (planner/device.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "plan.h"
#include "plan_json.h"

int mp_cli_plan(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_plan_options_t po;
  mp_plan_result_t r;
  mp_graph_t *g = NULL;
  mp_error_t err;
  char hash[65];
  int rc;

  if ((rc = mp_cli_parse(argc, argv,
                         "--budget --solver --objective --accounting --summary --timeline --swap --threads " MP_CLI_DEVICE_OPTS,
                         1, 1, &o)) != 0)
    return rc;
  mp_plan_options_init(&po);
  if (!o.has_budget) {
    fprintf(stderr, "memplan plan: --budget is required (bytes, or e.g. 12GiB)\n");
    return MP_CLI_EXIT_USAGE;
  }
  po.budget = o.budget;
  po.threads = mp_cli_threads(&o);
  if ((rc = mp_cli_solver(&o, 0, &po.solver, &po.swap)) != 0) return rc;
  if (o.objective && mp_objective_parse(o.objective, &po.objective) != 0) {
    fprintf(stderr, "memplan: --objective must be time or memory, not '%s'\n", o.objective);
    return MP_CLI_EXIT_USAGE;
  }
  if (o.accounting && mp_accounting_parse(o.accounting, &po.accounting) != 0) {
    fprintf(stderr, "memplan: --accounting must be default or reference, not '%s'\n", o.accounting);
    return MP_CLI_EXIT_USAGE;
  }
  if ((rc = mp_cli_device(&o, &po.device)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) return rc;
  mp_error_clear(&err);
  if ((rc = mp_graph_hash(g, hash)) != 0 || (rc = mp_plan(g, &po, &r, &err)) != 0) {
    if (err.code == 0) mp_error_set(&err, rc, "", "planning failed");
    mp_cli_report(o.pos[0], &err);
    /* bad options are the user's; anything else (a planner bug, memory,
     * cancellation) is internal */
    rc = rc == MP_EINVAL ? MP_CLI_EXIT_USAGE : MP_CLI_EXIT_INTERNAL;
    mp_graph_free(g);
    return rc;
  }
  rc = mp_cli_print_json(mp_plan_result_to_json_ex(g, &r, hash, &po.device, !o.summary, o.timeline), &o);
  if (rc == 0 && !r.feasible) rc = MP_CLI_EXIT_INFEASIBLE;
  mp_plan_result_free(&r);
  mp_graph_free(g);
  return rc;
}
