/* formats.h - reading graphs in memplan's three input formats.
 *
 *   native    memplan.graph/1 JSON (proto/graph.schema.json, proto/README.md)
 *   kusumoto  the plain-text format of Kusumoto et al.'s reference solver
 *   nodelink  networkx node-link JSON (Checkmate / Moccasin benchmark graphs)
 *
 * Every loader returns 0 and a finalized graph in *out (caller frees with
 * mp_graph_free), or a negative MP_E* code with `err` naming the JSON path
 * ("$.nodes[3].bytes") or the line of the offending item. `lim` may be NULL
 * for the defaults. JSON loaders that take a json_t borrow it; `base` is the
 * path of that value inside a larger document ("$" or "$.graph"), so errors
 * from a graph embedded in an API request point into the request.
 */
#ifndef MP_FORMATS_H
#define MP_FORMATS_H

#include <jansson.h>
#include <stddef.h>

#include "graph.h"

typedef enum {
  MP_FORMAT_AUTO = 0,
  MP_FORMAT_NATIVE = 1,
  MP_FORMAT_KUSUMOTO = 2,
  MP_FORMAT_NODELINK = 3
} mp_format_t;

const char *mp_format_name(mp_format_t f);          /* "native", "kusumoto", "nodelink" */
int mp_format_parse(const char *s, mp_format_t *out); /* also accepts "auto"; 0 or MP_EINVAL */

/* Detect from content: a JSON object with "links" is node-link, any other
 * JSON object is native, text starting with two integers is Kusumoto. */
mp_format_t mp_format_detect(const char *buf, size_t len);

/* The counting pre-scan: refuse a graph in JSON text whose node or edge
 * count passes `lim` before anything is parsed, in time proportional to the
 * limit (graph_prescan.c). The graph is the value of top-level key
 * `graph_key` ("graph" in a request body), or the whole text when NULL.
 * 0 when no count passes its limit (the text may still be invalid), or
 * MP_ELIMIT naming the array. */
int mp_graph_prescan_json(const char *buf, size_t len, const char *graph_key, const mp_limits_t *lim,
                          mp_error_t *err);

/* Load from bytes (any format; `fmt` may be MP_FORMAT_AUTO). `name` is used
 * as the graph name when the format carries none (may be NULL). The format
 * actually used is stored in *used when not NULL. */
int mp_graph_load_buffer(const char *buf, size_t len, mp_format_t fmt, const char *name,
                         const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                         mp_error_t *err);

/* Load a file; the graph name defaults to the file's base name without its
 * last extension and without a "cg_" prefix ("cg_vgg19.txt" -> "vgg19").
 * Files (and buffers) over 1 GiB are refused with MP_ELIMIT. */
int mp_graph_load_file(const char *path, mp_format_t fmt, const mp_limits_t *lim,
                       mp_graph_t **out, mp_format_t *used, mp_error_t *err);

/* Load from an already parsed JSON value (native object, node-link object,
 * or a JSON string holding Kusumoto text): what the daemon's request parser
 * calls for the "graph" field. */
int mp_graph_load_json(json_t *value, const char *base, mp_format_t fmt, const char *name,
                       const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                       mp_error_t *err);

/* Individual formats. */
int mp_native_from_json(json_t *root, const char *base, const mp_limits_t *lim,
                        mp_graph_t **out, mp_error_t *err);
int mp_nodelink_from_json(json_t *root, const char *base, const char *name,
                          const mp_limits_t *lim, mp_graph_t **out, mp_error_t *err);
int mp_kusumoto_parse(const char *buf, size_t len, const char *name, const mp_limits_t *lim,
                      mp_graph_t **out, mp_error_t *err);

/* The graph as a native memplan.graph/1 document (new reference). Nodes are
 * written in topological order; fields equal to their defaults are omitted.
 * Returns NULL when out of memory (or when a string of the graph is not
 * valid UTF-8, which jansson refuses: readers should not let such through). */
json_t *mp_graph_to_json(const mp_graph_t *g);

/* Read a whole file (at most 1 GiB, MP_ELIMIT beyond) into a malloc'd,
 * NUL-terminated buffer the caller frees. 0, MP_ENOENT (no such file),
 * MP_EACCES (not readable), MP_EIO (cannot open or read otherwise, with the
 * reason), MP_ELIMIT or MP_ENOMEM. */
int mp_read_file(const char *path, char **out, size_t *out_len, mp_error_t *err);

/* Flags for json_loadb on every client document: duplicate keys rejected. */
#define MP_JSON_LOAD_FLAGS (JSON_REJECT_DUPLICATES)

#endif
