/* schedule_json.h - the memplan.schedule/1 JSON format (proto/schedule.md)
 * and the JSON form of a simulation report.
 *
 * Readers borrow the json_t and the graph; on success they return 0 and a new
 * schedule in *out (caller frees with mp_schedule_free), otherwise a negative
 * MP_E* code with `err` naming the JSON path of the offending item
 * ("$.steps[12].node"). `base` is the path of the schedule value inside a
 * larger document ("$" for a standalone file, "$.schedule" inside a request).
 * Writers return a new reference, or NULL when out of memory (or, for
 * schedules, when a step names a node index outside the graph).
 */
#ifndef MP_SCHEDULE_JSON_H
#define MP_SCHEDULE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "graph.h"
#include "schedule.h"
#include "simulator.h"

#define MP_SCHEDULE_FORMAT "memplan.schedule/1"

/* {"format": "memplan.schedule/1", "auto_free": bool?, "steps": [{"op", "node"}...]}.
 * "format" may be omitted (a schedule embedded in a request) but must be
 * that string when present; other top-level keys are ignored; a step object
 * has exactly the keys "op" and "node". With "auto_free": true a free step is
 * an error (MP_EINVAL at $.steps[i].op). Unknown node ids are MP_EUNKNOWN;
 * wrong types, missing fields and unknown ops are MP_EINVAL. */
int mp_schedule_from_json(const mp_graph_t *g, json_t *root, const char *base,
                          mp_schedule_t **out, mp_error_t *err);

/* Parse JSON text (duplicate keys rejected) and read it as above. Syntax
 * errors are MP_EPARSE with err->line / err->column set. */
int mp_schedule_load_buffer(const mp_graph_t *g, const char *buf, size_t len,
                            mp_schedule_t **out, mp_error_t *err);

/* The schedule as a document; "auto_free" is written only when set. */
json_t *mp_schedule_to_json(const mp_graph_t *g, const mp_schedule_t *s);

/* A successful report:
 * {"valid": true, "peak_bytes", "peak_step", "const_bytes",
 *  "time": {"forward", "backward", "recompute", "stall", "total"},
 *  "overhead_pct", "recomputed": [node ids], "steps": n,
 *  "timeline": [bytes...] (only when with_timeline)}, and for a schedule
 *  that swaps or reuses memory also "swapped": [node ids], "host_peak_bytes",
 *  "reused", "transfers": {"swap_out", "swap_in", "bytes_out", "bytes_in",
 *  "d2h_time", "h2d_time"}. time.total is the makespan (simulator.h). Byte
 *  counts above 2^63-1 (beyond JSON integers in jansson) are written as
 *  reals. */
json_t *mp_sim_report_to_json(const mp_graph_t *g, const mp_sim_report_t *r, int with_timeline);

#endif
