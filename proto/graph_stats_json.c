/* graph_stats_json.c - the figures of a graph (graph_stats_json.h): edge
 * count, plain backpropagation's simulated peak and the least budget. */
#include "graph_stats_json.h"

#include <string.h>

#include "dims_json.h"
#include "json_util.h"
#include "schedule.h"
#include "simulator.h"

int mp_graph_stats_json(const mp_graph_t *g, json_t **out, mp_error_t *err) {
  mp_schedule_t *sched = NULL;
  mp_sim_report_t rep;
  uint64_t min_budget = 0;
  size_t v, k, edges = 0;
  json_t *o;
  int rc;
  *out = NULL;
  memset(&rep, 0, sizeof(rep));
  for (v = 0; v < g->n_nodes; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION)
      for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
        if (g->nodes[g->pred[k]].kind == MP_KIND_ACTIVATION) edges++;
  if ((rc = mp_schedule_store_all(g, &sched)) != 0) {
    rc = mp_error_set(err, rc, "", "plain backpropagation's schedule: %s", mp_err_name(rc));
    goto done;
  }
  if ((rc = mp_simulate(g, sched, &rep, err)) != 0) goto done;
  if ((rc = mp_min_budget(g, &min_budget)) != 0) {
    rc = mp_error_set(err, rc, "", "the least budget: %s", mp_err_name(rc));
    goto done;
  }
  o = json_object();
  if (o == NULL || mp_json_set(o, "name", json_string(g->name)) ||
      mp_json_set(o, "nodes", mp_json_u64(g->n_activations)) ||
      mp_json_set(o, "edges", mp_json_u64(edges)) ||
      mp_json_set(o, "activation_bytes", mp_json_u64(g->activation_bytes)) ||
      mp_json_set(o, "param_bytes", mp_json_u64(g->const_bytes)) ||
      mp_json_set(o, "peak_no_recompute", mp_json_u64(rep.peak_bytes)) ||
      mp_json_set(o, "budget_lower_bound", mp_json_u64(min_budget)) ||
      mp_json_set(o, "min_budget", mp_json_u64(min_budget)) || /* deprecated name, one version */
      mp_json_set(o, "forward_time", mp_json_number(g->fwd_time)) ||
      mp_json_set(o, "backward_time", mp_json_number(g->bwd_time)) ||
      mp_json_set(o, "time_unit", json_string(g->time_unit)) || mp_forecast_json_add(o, g) != 0) {
    json_decref(o);
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
    goto done;
  }
  *out = o;
done:
  mp_sim_report_free(&rep);
  mp_schedule_free(sched);
  return rc;
}
