/* dims_json.h - symbolic dimensions on the wire (planner/dims.h): the
 * "dims" declaration and the laws of memplan.graph/2 (read and written by
 * graph_json.c through the mp__ functions), a request's binding
 * ("dims": {"batch": 64}) and the fields an answer about a symbolic graph
 * carries:
 *
 *   "dims": {"batch": 64, ...}   the full binding the answer is at,
 *   "forecast": {"bounded_nodes": K, "extrapolated": bool},
 *   "warnings": [...]            the graph's, when it has any.
 *
 * Arguments are borrowed; json_t results are new references (NULL when out
 * of memory). */
#ifndef MP_DIMS_JSON_H
#define MP_DIMS_JSON_H

#include <jansson.h>

#include "dims.h"
#include "error.h"
#include "graph.h"

/* A request's "dims" object at `path` into b (initialised by the caller
 * with mp_binding_init(b, path)): each value a whole number. 0, or
 * MP_EINVAL naming "<path>.<name>" (or <path> for more than MP_DIMS_MAX). */
int mp_binding_from_json(const json_t *v, mp_binding_t *b, mp_error_t *err);

/* {"batch": 64, ...}: the values g's dimensions are at ({} without any). */
json_t *mp_binding_to_json(const mp_graph_t *g);

/* {"bounded_nodes", "extrapolated"} of mp_graph_forecast. */
json_t *mp_forecast_to_json(const mp_graph_t *g);

/* Add "dims", "forecast" and "warnings" (when it has any) to `answer` when g
 * is symbolic; nothing otherwise. 0, or -1 when out of memory. */
int mp_forecast_json_add(json_t *answer, const mp_graph_t *g);

/* ---- For graph_json.c ---- */

/* Read the graph's "dims" object at `path` into d (sorted by name). */
int mp__dims_read(json_t *v, const char *path, mp_graph_dims_t *d, mp_error_t *err);
/* Read a law object at `path` (size: integer coefficients) over d's
 * dimensions; *out is new. */
int mp__law_read(json_t *v, const char *path, int size, const mp_graph_dims_t *d, mp_law_t **out,
                 mp_error_t *err);
/* Evaluate a law read at `path` at d's current values, naming the path and
 * the values when it goes negative or overflows. */
int mp__law_value(const mp_law_t *law, const char *path, const mp_graph_dims_t *d, uint64_t *u, double *t,
                  mp_error_t *err);
json_t *mp__dims_write(const mp_graph_dims_t *d);
json_t *mp__law_write(const mp_law_t *law, const mp_graph_dims_t *d);

#endif
