/* cmd_inspect.c - `memplan inspect` (graph statistics) and `memplan convert`
 * (the graph as native JSON). */
#include <stdio.h>

#include "cli.h"
#include "json_util.h"
#include "schedule.h"
#include "simulator.h"

int mp_cli_inspect(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_graph_t *g = NULL;
  mp_format_t used = MP_FORMAT_AUTO;
  mp_schedule_t *sched = NULL;
  mp_sim_report_t rep = {0};
  mp_error_t err;
  uint64_t min_budget = 0;
  char hash[65];
  json_t *out = NULL, *warn;
  size_t v, k, edges = 0;
  int rc;

  if ((rc = mp_cli_parse(argc, argv, "", 1, 1, &o)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, &used)) != 0) return rc;
  /* edges between planning nodes (activations) */
  for (v = 0; v < g->n_nodes; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION)
      for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
        if (g->nodes[g->pred[k]].kind == MP_KIND_ACTIVATION) edges++;
  if ((rc = mp_schedule_store_all(g, &sched)) != 0 || (rc = mp_simulate(g, sched, &rep, &err)) != 0 ||
      (rc = mp_min_budget(g, &min_budget)) != 0 || (rc = mp_graph_hash(g, hash)) != 0) {
    fprintf(stderr, "memplan: %s: cannot measure the graph (%s)\n", o.pos[0], mp_err_name(rc));
    rc = rc == MP_ENOMEM ? MP_CLI_EXIT_INTERNAL : MP_CLI_EXIT_USAGE;
    goto out;
  }
  out = json_object();
  warn = json_array();
  if (out == NULL || warn == NULL || mp_json_set(out, "warnings", warn)) goto nomem;
  for (k = 0; k < g->n_warnings; k++)
    if (json_array_append_new(warn, json_string(g->warnings[k]))) goto nomem;
  if (mp_json_set(out, "name", json_string(g->name)) ||
      mp_json_set(out, "format", json_string(mp_format_name(used))) ||
      mp_json_set(out, "nodes", mp_json_u64(g->n_activations)) ||
      mp_json_set(out, "edges", mp_json_u64(edges)) ||
      mp_json_set(out, "activation_bytes", mp_json_u64(g->activation_bytes)) ||
      mp_json_set(out, "param_bytes", mp_json_u64(g->const_bytes)) ||
      mp_json_set(out, "peak_no_recompute", mp_json_u64(rep.peak_bytes)) ||
      mp_json_set(out, "min_budget", mp_json_u64(min_budget)) ||
      mp_json_set(out, "forward_time", mp_json_number(g->fwd_time)) ||
      mp_json_set(out, "backward_time", mp_json_number(g->bwd_time)) ||
      mp_json_set(out, "time_unit", json_string(g->time_unit)) ||
      mp_json_set(out, "graph_hash", json_string(hash)))
    goto nomem;
  rc = mp_cli_print_json(out, &o);
  out = NULL;
  goto out;
nomem:
  fprintf(stderr, "memplan: out of memory\n");
  rc = MP_CLI_EXIT_INTERNAL;
out:
  json_decref(out);
  mp_sim_report_free(&rep);
  mp_schedule_free(sched);
  mp_graph_free(g);
  return rc;
}

int mp_cli_convert(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_graph_t *g = NULL;
  int rc;
  if ((rc = mp_cli_parse(argc, argv, "", 1, 1, &o)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) return rc;
  rc = mp_cli_print_json(mp_graph_to_json(g), &o);
  mp_graph_free(g);
  return rc;
}
