/* graph_stats_json.h - a graph's figures as JSON, what `memplan inspect`
 * and GET /v1/graphs/{hash} report:
 *   {"name", "nodes" (activations), "edges" (between activations),
 *    "activation_bytes", "param_bytes", "peak_no_recompute" (plain
 *    backpropagation, simulated), "budget_lower_bound" (schedule.h's
 *    cheap lower bound on every schedule's peak: no plan fits below it, but
 *    the least budget that fits may be higher; "min_budget" is its
 *    deprecated name, kept one version), "forward_time", "backward_time",
 *    "time_unit"}
 * Callers add their own fields (the CLI: format, warnings, graph_hash).
 *
 * Returns 0 with *out a new reference, or MP_ENOMEM, or the simulator's
 * error (err says why); the graph is borrowed. */
#ifndef MP_GRAPH_STATS_JSON_H
#define MP_GRAPH_STATS_JSON_H

#include <jansson.h>

#include "error.h"
#include "graph.h"

int mp_graph_stats_json(const mp_graph_t *g, json_t **out, mp_error_t *err);

#endif
