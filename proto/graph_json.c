/* graph_json.c - memplan's native graph format, memplan.graph/1 and the
 * symbolic memplan.graph/2 (its dims and laws: dims_json.c): the strict
 * reader (mp_native_from_json) and the writer (mp_graph_to_json).
 *
 * The reader is deliberately unforgiving: every key must be known, every value
 * must have the documented JSON type, and sizes must be JSON integers. A typo
 * such as "byts" or a size written as 1e9 would otherwise pass silently and
 * produce a plan for a different graph than the user meant. Errors name the
 * JSON path of the offending value, prefixed by the caller's `base` so that a
 * graph embedded in a request ("$.graph") reports paths into that request.
 * Graph-wide rules (duplicates, unknown inputs, cycles, overflow) are left to
 * the builder in planner/graph.c.
 *
 * The writer emits the canonical document the reader accepts: nodes in
 * topological order and only the fields that differ from their defaults, so
 * that parse(to_json(g)) hashes like g.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims_json.h"
#include "formats.h"
#include "json_read.h"
#include "json_util.h"

#define MP__NATIVE_FORMAT "memplan.graph/1"
#define MP__NATIVE_FORMAT_2 "memplan.graph/2"

/* ---- Small helpers shared by the reader -------------------------------- */

/* "an integer", "a string", ...: for "expected X, got Y" messages. */
const char *mp__jtype(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "an unknown JSON value";
}

/* out = a followed by b, cut to fit in n bytes (paths are for humans, a cut
 * one is still useful). */
void mp__join(char *out, size_t n, const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > n - 1) la = n - 1;
  memmove(out, a, la);
  if (lb > n - 1 - la) lb = n - 1 - la;
  memcpy(out + la, b, lb);
  out[la + lb] = '\0';
}

/* Copy `key` to `out` with quotes, backslashes and control characters
 * escaped as in JSON, cut short (never overflowing) when it does not fit. */
void mp__escape_key(char *out, size_t n, const char *key) {
  const unsigned char *k = (const unsigned char *)key;
  size_t off = 0, i;
  for (i = 0; k[i] && off + 7 < n; i++) {
    if (k[i] == '"' || k[i] == '\\') {
      out[off++] = '\\';
      out[off++] = (char)k[i];
    } else if (k[i] < 0x20) {
      off += (size_t)snprintf(out + off, n - off, "\\u%04x", k[i]);
    } else {
      out[off++] = (char)k[i];
    }
  }
  out[off] = '\0';
}

/* Append `key` to the JSON path `parent`: ".key" when the key is a plain
 * identifier, otherwise ["key"] escaped, so that any key a client sends
 * gives a readable path. Truncation at `n` bytes is acceptable (paths are
 * for humans). */
void mp__key_path(char *out, size_t n, const char *parent, const char *key) {
  const unsigned char *k = (const unsigned char *)key;
  char esc[MP_ERROR_PATH_MAX];
  int plain = (k[0] == '_' || (k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z'));
  size_t i;
  for (i = 1; plain && k[i]; i++)
    plain = (k[i] == '_' || (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
             (k[i] >= '0' && k[i] <= '9'));
  if (plain) {
    esc[0] = '.';
    mp__join(esc + 1, sizeof(esc) - 1, key, "");
  } else {
    esc[0] = '[';
    esc[1] = '"';
    mp__escape_key(esc + 2, sizeof(esc) - 4, key);
    mp__join(esc, sizeof(esc), esc, "\"]");
  }
  mp__join(out, n, parent, esc);
}

/* Reject every key of `obj` that is not in the NULL-terminated `known`. The
 * message lists the known fields, which is what someone with a typo needs. */
int mp__check_keys(json_t *obj, const char *parent, const char *const *known,
                          const char *known_list, mp_error_t *err) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    size_t i;
    int found = 0;
    for (i = 0; known[i] && !found; i++) found = strcmp(key, known[i]) == 0;
    if (!found) {
      char path[MP_ERROR_PATH_MAX], esc[72];
      mp__key_path(path, sizeof(path), parent, key);
      mp__escape_key(esc, sizeof(esc), key);
      return mp_error_set(err, MP_EINVAL, path, "unknown field \"%s\" (known fields: %s)", esc,
                          known_list);
    }
  }
  return 0;
}

int mp__get_string(json_t *v, const char *path, const char *field, const char **out,
                          mp_error_t *err) {
  if (!json_is_string(v))
    return mp_error_set(err, MP_EINVAL, path, "%s must be a string, got %s", field, mp__jtype(v));
  /* jansson can hold strings with embedded NULs (built by hand or parsed
   * with JSON_ALLOW_NUL); as C strings they would silently be cut short. */
  if (strlen(json_string_value(v)) != json_string_length(v))
    return mp_error_set(err, MP_EINVAL, path, "%s must not contain NUL characters", field);
  *out = json_string_value(v);
  return 0;
}

/* Sizes: JSON integers only, non-negative. Anything above INT64_MAX never
 * gets here: jansson refuses it while parsing ("too big integer"). */
int mp__get_u64(json_t *v, const char *path, const char *field, uint64_t *out,
                       mp_error_t *err) {
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0)
      return mp_error_set(err, MP_EINVAL, path,
                          "%s must be a non-negative integer, got %" JSON_INTEGER_FORMAT, field,
                          x);
    *out = (uint64_t)x;
    return 0;
  }
  if (json_is_real(v))
    return mp_error_set(err, MP_EINVAL, path,
                        "%s must be an integer, got the real number %.15g (write it without a "
                        "decimal point or exponent)",
                        field, json_real_value(v));
  return mp_error_set(err, MP_EINVAL, path, "%s must be a non-negative integer, got %s", field,
                      mp__jtype(v));
}

/* Times: any JSON number; the builder checks finite and non-negative. */
int mp__get_number(json_t *v, const char *path, const char *field, double *out,
                          mp_error_t *err) {
  if (!json_is_number(v))
    return mp_error_set(err, MP_EINVAL, path, "%s must be a number, got %s", field, mp__jtype(v));
  *out = json_number_value(v);
  return 0;
}

/* ---- Reader ------------------------------------------------------------ */

static const char *const mp__graph_keys[] = {"format", "name", "time_unit", "param_bytes",
                                             "nodes", NULL};
static const char *const mp__graph2_keys[] = {"format", "name", "time_unit", "param_bytes", "nodes",
                                              "dims", "warnings", NULL};
static const char *const mp__node_keys[] = {"id",       "op",        "inputs",    "bytes",
                                            "time",     "bwd_time",  "kind",      "recompute",
                                            "stage",    "bwd_reads", "workspace_bytes",
                                            "saved_bytes", "grad_inplace", NULL};
#define MP__GRAPH_KEY_LIST "format, name, time_unit, param_bytes, nodes"
#define MP__GRAPH2_KEY_LIST "format, name, time_unit, param_bytes, nodes, dims, warnings"

/* The laws a graph/2 document gives, collected while its nodes are added
 * and attached to the graph once it is finalized (node indices are known
 * only then). */
typedef struct {
  mp_graph_dims_t *d;   /* NULL: memplan.graph/1 */
  mp_node_laws_t *laws; /* node unset until finalize; doc_index set */
  const char **ids;     /* each one's node id (borrowed from the document) */
  size_t n, cap;
} mp__sym_read_t;

static void mp__node_laws_clear(mp_node_laws_t *nl) {
  int f;
  for (f = 0; f < MP_LAW_NFIELDS; f++) {
    mp_law_free(nl->law[f]);
    nl->law[f] = NULL;
  }
}

static void mp__sym_read_free(mp__sym_read_t *sr) {
  size_t i;
  for (i = 0; i < sr->n; i++) mp__node_laws_clear(&sr->laws[i]);
  free(sr->laws);
  free(sr->ids);
  mp_graph_dims_free(sr->d);
}

/* A size or time field: a plain value, or in a graph/2 a law (kept in
 * cur->law[f]) and its value at the dimensions' defaults. */
static int mp__field(json_t *v, const char *path, mp_law_field_t f, const mp__sym_read_t *sr,
                     mp_node_laws_t *cur, uint64_t *u, double *t, mp_error_t *err) {
  const char *name = mp_law_field_name(f);
  int size = mp_law_field_is_size(f), rc;
  if (json_is_object(v)) {
    if (sr->d == NULL)
      return mp_error_set(err, MP_EINVAL, path,
                          "%s is an object: a law needs \"format\": \"" MP__NATIVE_FORMAT_2 "\" and \"dims\"",
                          name);
    if ((rc = mp__law_read(v, path, size, sr->d, &cur->law[f], err)) != 0) return rc;
    return mp__law_value(cur->law[f], path, sr->d, u, t, err);
  }
  return size ? mp__get_u64(v, path, name, u, err) : mp__get_number(v, path, name, t, err);
}
#define MP__NODE_KEY_LIST                                                                     \
  "id, op, inputs, bytes, time, bwd_time, kind, recompute, stage, bwd_reads, workspace_bytes, " \
  "saved_bytes, grad_inplace"

/* Parse one node object and hand it to the builder. `where` is its path. */
static int mp__parse_node(mp_graph_t *g, json_t *node, const char *where, const mp_limits_t *lim,
                          const mp__sym_read_t *sr, mp_node_laws_t *cur, mp_error_t *err) {
  mp_node_spec_t s;
  char path[MP_ERROR_PATH_MAX];
  char stage_buf[32];
  const char **inputs = NULL;
  json_t *v;
  int rc;

  if (!json_is_object(node))
    return mp_error_set(err, MP_EINVAL, where, "node must be an object, got %s", mp__jtype(node));
  if ((rc = mp__check_keys(node, where, mp__node_keys, MP__NODE_KEY_LIST, err)) != 0) return rc;

  mp_node_spec_init(&s);
  s.where = where;

  mp__join(path, sizeof(path), where, ".id");
  if ((v = json_object_get(node, "id")) == NULL)
    return mp_error_set(err, MP_EINVAL, path, "missing required field \"id\"");
  if ((rc = mp__get_string(v, path, "id", &s.id, err)) != 0) return rc;
  /* An empty id is rejected by mp_graph_add_node with the same path. */

  if ((v = json_object_get(node, "op")) != NULL) {
    mp__join(path, sizeof(path), where, ".op");
    if ((rc = mp__get_string(v, path, "op", &s.op, err)) != 0) return rc;
  }

  mp__join(path, sizeof(path), where, ".bytes");
  if ((v = json_object_get(node, "bytes")) == NULL)
    return mp_error_set(err, MP_EINVAL, path, "missing required field \"bytes\"");
  if ((rc = mp__field(v, path, MP_LAW_BYTES, sr, cur, &s.bytes, NULL, err)) != 0) return rc;

  if ((v = json_object_get(node, "time")) != NULL) {
    mp__join(path, sizeof(path), where, ".time");
    if ((rc = mp__field(v, path, MP_LAW_TIME, sr, cur, NULL, &s.time, err)) != 0) return rc;
  }
  if ((v = json_object_get(node, "bwd_time")) != NULL) {
    mp__join(path, sizeof(path), where, ".bwd_time");
    if ((rc = mp__field(v, path, MP_LAW_BWD_TIME, sr, cur, NULL, &s.bwd_time, err)) != 0) return rc;
    s.has_bwd_time = 1;
  }
  if ((v = json_object_get(node, "kind")) != NULL) {
    const char *k;
    mp__join(path, sizeof(path), where, ".kind");
    if ((rc = mp__get_string(v, path, "kind", &k, err)) != 0) return rc;
    if (mp_kind_parse(k, &s.kind) != 0)
      return mp_error_set(err, MP_EINVAL, path,
                          "kind must be one of \"activation\", \"input\", \"param\", got \"%.64s\"",
                          k);
  }
  if ((v = json_object_get(node, "recompute")) != NULL) {
    mp__join(path, sizeof(path), where, ".recompute");
    if (!json_is_boolean(v))
      return mp_error_set(err, MP_EINVAL, path, "recompute must be a boolean, got %s",
                          mp__jtype(v));
    s.recompute = json_is_true(v);
  }
  if ((v = json_object_get(node, "grad_inplace")) != NULL) {
    mp__join(path, sizeof(path), where, ".grad_inplace");
    if (!json_is_boolean(v))
      return mp_error_set(err, MP_EINVAL, path, "grad_inplace must be a boolean, got %s",
                          mp__jtype(v));
    s.grad_inplace = json_is_true(v);
  }
  if ((v = json_object_get(node, "stage")) != NULL) {
    mp__join(path, sizeof(path), where, ".stage");
    if (json_is_integer(v)) {
      /* memonger's mirror_stage is often numeric; keep it as its decimal text
       * so that 3 and "3" name the same stage. */
      snprintf(stage_buf, sizeof(stage_buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
      s.stage = stage_buf;
    } else if (json_is_string(v)) {
      if ((rc = mp__get_string(v, path, "stage", &s.stage, err)) != 0) return rc;
    } else {
      return mp_error_set(err, MP_EINVAL, path, "stage must be a string or an integer, got %s",
                          mp__jtype(v));
    }
  }
  if ((v = json_object_get(node, "bwd_reads")) != NULL) {
    const char *r;
    mp__join(path, sizeof(path), where, ".bwd_reads");
    if ((rc = mp__get_string(v, path, "bwd_reads", &r, err)) != 0) return rc;
    if (mp_bwd_reads_parse(r, &s.bwd_reads) != 0)
      return mp_error_set(err, MP_EINVAL, path,
                          "bwd_reads must be one of \"inputs\", \"output\", \"both\", \"none\", "
                          "got \"%.64s\"",
                          r);
  }
  if ((v = json_object_get(node, "workspace_bytes")) != NULL) {
    mp__join(path, sizeof(path), where, ".workspace_bytes");
    if ((rc = mp__field(v, path, MP_LAW_WORKSPACE_BYTES, sr, cur, &s.workspace_bytes, NULL, err)) != 0)
      return rc;
  }
  if ((v = json_object_get(node, "saved_bytes")) != NULL) {
    mp__join(path, sizeof(path), where, ".saved_bytes");
    if ((rc = mp__field(v, path, MP_LAW_SAVED_BYTES, sr, cur, &s.saved_bytes, NULL, err)) != 0) return rc;
  }

  if ((v = json_object_get(node, "inputs")) != NULL) {
    size_t k, n;
    mp__join(path, sizeof(path), where, ".inputs");
    if (!json_is_array(v))
      return mp_error_set(err, MP_EINVAL, path, "inputs must be an array of node ids, got %s",
                          mp__jtype(v));
    n = json_array_size(v);
    /* The builder enforces max_edges too, but only after we would have
     * allocated the pointer array; refuse absurd lists first. */
    if (n > lim->max_edges)
      return mp_error_set(err, MP_ELIMIT, path,
                          "node has %zu inputs, more than the limit of %zu input references", n,
                          lim->max_edges);
    if (n > 0) {
      inputs = malloc(n * sizeof(*inputs));
      if (inputs == NULL) return mp_error_set(err, MP_ENOMEM, where, "out of memory");
    }
    for (k = 0; k < n; k++) {
      char ipath[MP_ERROR_PATH_MAX], sfx[40];
      snprintf(sfx, sizeof(sfx), ".inputs[%zu]", k);
      mp__join(ipath, sizeof(ipath), where, sfx);
      if ((rc = mp__get_string(json_array_get(v, k), ipath, "input id", &inputs[k], err)) != 0) {
        free(inputs);
        return rc;
      }
    }
    s.inputs = inputs;
    s.n_inputs = n;
  }

  rc = mp_graph_add_node(g, &s, lim, err);
  free(inputs);
  return rc;
}

/* The warnings of a graph/2 document: strings, kept as the graph's. */
static int mp__parse_warnings(mp_graph_t *g, json_t *v, const char *path, mp_error_t *err) {
  size_t i;
  if (!json_is_array(v) || json_array_size(v) > MP_GRAPH_WARNINGS_MAX)
    return mp_error_set(err, json_is_array(v) ? MP_ELIMIT : MP_EINVAL, path,
                        "warnings must be an array of at most %d strings", MP_GRAPH_WARNINGS_MAX);
  for (i = 0; i < json_array_size(v); i++) {
    char p[MP_ERROR_PATH_MAX], sfx[32];
    const char *w;
    int rc;
    snprintf(sfx, sizeof(sfx), "[%zu]", i);
    mp__join(p, sizeof(p), path, sfx);
    if ((rc = mp__get_string(json_array_get(v, i), p, "a warning", &w, err)) != 0) return rc;
    if (strlen(w) > MP_GRAPH_WARNING_LEN_MAX)
      return mp_error_set(err, MP_ELIMIT, p, "a warning is at most %d bytes, got %zu", MP_GRAPH_WARNING_LEN_MAX,
                          strlen(w));
    if (mp_graph_warn(g, "%s", w) != 0) return mp_error_set(err, MP_ENOMEM, p, "out of memory");
  }
  return 0;
}

/* Keep the laws of the node just added (cur), under its id. */
static int mp__sym_push(mp__sym_read_t *sr, mp_node_laws_t *cur, const char *id, size_t doc_index) {
  int f, any = 0;
  for (f = 0; f < MP_LAW_NFIELDS; f++) any |= cur->law[f] != NULL;
  if (!any) return 0;
  if (sr->n == sr->cap) {
    size_t cap = sr->cap ? 2 * sr->cap : 16;
    mp_node_laws_t *nl = realloc(sr->laws, cap * sizeof(*nl));
    const char **ni;
    if (nl == NULL) return MP_ENOMEM;
    sr->laws = nl;
    if ((ni = realloc(sr->ids, cap * sizeof(*ni))) == NULL) return MP_ENOMEM;
    sr->ids = ni;
    sr->cap = cap;
  }
  sr->laws[sr->n] = *cur;
  sr->laws[sr->n].doc_index = (uint32_t)doc_index;
  sr->ids[sr->n++] = id;
  memset(cur, 0, sizeof(*cur));
  return 0;
}

static int mp__cmp_laws(const void *a, const void *b) {
  uint32_t x = ((const mp_node_laws_t *)a)->node, y = ((const mp_node_laws_t *)b)->node;
  return (x > y) - (x < y);
}

/* After finalize: resolve each law's node and hand the dimensions to g. */
static void mp__sym_attach(mp_graph_t *g, mp__sym_read_t *sr) {
  size_t i;
  for (i = 0; i < sr->n; i++) sr->laws[i].node = (uint32_t)mp_graph_find(g, sr->ids[i]);
  qsort(sr->laws, sr->n, sizeof(*sr->laws), mp__cmp_laws);
  sr->d->laws = sr->laws;
  sr->d->n_laws = sr->n;
  g->sym = sr->d;
  free(sr->ids);
  memset(sr, 0, sizeof(*sr));
}

static int mp__parse_graph(mp_graph_t *g, json_t *root, const char *base, const mp_limits_t *lim,
                           mp__sym_read_t *sr, mp_error_t *err) {
  char path[MP_ERROR_PATH_MAX];
  char where[MP_ERROR_PATH_MAX];
  const char *str;
  json_t *v, *nodes;
  size_t i, n;
  int rc;

  if (!json_is_object(root))
    return mp_error_set(err, MP_EINVAL, base, "graph must be a JSON object, got %s",
                        mp__jtype(root));

  /* The format first: a document of another kind gets told so, instead of
   * a complaint about its first unknown field. */
  mp__join(path, sizeof(path), base, ".format");
  if ((v = json_object_get(root, "format")) == NULL)
    return mp_error_set(err, MP_EINVAL, path,
                        "missing required field \"format\" (a native graph declares "
                        "\"format\": \"" MP__NATIVE_FORMAT "\")");
  if ((rc = mp__get_string(v, path, "format", &str, err)) != 0) return rc;
  if (strcmp(str, MP__NATIVE_FORMAT) != 0 && strcmp(str, MP__NATIVE_FORMAT_2) != 0)
    return mp_error_set(err, MP_EINVAL, path,
                        "format must be \"" MP__NATIVE_FORMAT "\" or \"" MP__NATIVE_FORMAT_2 "\", got \"%.64s\"",
                        str);

  if (strcmp(str, MP__NATIVE_FORMAT_2) == 0) {
    if ((rc = mp__check_keys(root, base, mp__graph2_keys, MP__GRAPH2_KEY_LIST, err)) != 0) return rc;
    if ((sr->d = mp_graph_dims_new()) == NULL) return mp_error_set(err, MP_ENOMEM, base, "out of memory");
    if ((v = json_object_get(root, "dims")) != NULL) {
      mp__join(path, sizeof(path), base, ".dims");
      if ((rc = mp__dims_read(v, path, sr->d, err)) != 0) return rc;
    }
    if ((v = json_object_get(root, "warnings")) != NULL) {
      mp__join(path, sizeof(path), base, ".warnings");
      if ((rc = mp__parse_warnings(g, v, path, err)) != 0) return rc;
    }
  } else if ((rc = mp__check_keys(root, base, mp__graph_keys, MP__GRAPH_KEY_LIST, err)) != 0) {
    return rc;
  }

  if ((v = json_object_get(root, "name")) != NULL) {
    mp__join(path, sizeof(path), base, ".name");
    if ((rc = mp__get_string(v, path, "name", &str, err)) != 0) return rc;
    if (strlen(str) > lim->max_name_len)
      return mp_error_set(err, MP_ELIMIT, path, "name is %zu bytes long, the limit is %zu",
                          strlen(str), lim->max_name_len);
    if (mp_graph_set_name(g, str) != 0) return mp_error_set(err, MP_ENOMEM, path, "out of memory");
  }
  if ((v = json_object_get(root, "time_unit")) != NULL) {
    mp__join(path, sizeof(path), base, ".time_unit");
    if ((rc = mp__get_string(v, path, "time_unit", &str, err)) != 0) return rc;
    if (strlen(str) > lim->max_name_len)
      return mp_error_set(err, MP_ELIMIT, path, "time_unit is %zu bytes long, the limit is %zu",
                          strlen(str), lim->max_name_len);
    if (mp_graph_set_time_unit(g, str) != 0)
      return mp_error_set(err, MP_ENOMEM, path, "out of memory");
  }
  if ((v = json_object_get(root, "param_bytes")) != NULL) {
    mp__join(path, sizeof(path), base, ".param_bytes");
    if (sr->d && json_is_object(v)) {
      if ((rc = mp__law_read(v, path, 1, sr->d, &sr->d->param_law, err)) != 0) return rc;
      if ((rc = mp__law_value(sr->d->param_law, path, sr->d, &g->param_bytes, NULL, err)) != 0) return rc;
    } else if ((rc = mp__get_u64(v, path, "param_bytes", &g->param_bytes, err)) != 0) {
      return rc;
    }
  }

  mp__join(path, sizeof(path), base, ".nodes");
  if ((nodes = json_object_get(root, "nodes")) == NULL)
    return mp_error_set(err, MP_EINVAL, path, "missing required field \"nodes\"");
  if (!json_is_array(nodes))
    return mp_error_set(err, MP_EINVAL, path, "nodes must be an array of node objects, got %s",
                        mp__jtype(nodes));
  n = json_array_size(nodes);
  if (n == 0) return mp_error_set(err, MP_EEMPTY, path, "graph has no nodes");
  if (n > lim->max_nodes)
    return mp_error_set(err, MP_ELIMIT, path, "graph has %zu nodes, the limit is %zu", n,
                        lim->max_nodes);
  for (i = 0; i < n; i++) {
    char sfx[40];
    snprintf(sfx, sizeof(sfx), ".nodes[%zu]", i);
    mp__join(where, sizeof(where), base, sfx);
    mp_node_laws_t cur;
    memset(&cur, 0, sizeof(cur));
    rc = mp__parse_node(g, json_array_get(nodes, i), where, lim, sr, &cur, err);
    if (rc == 0 && mp__sym_push(sr, &cur, json_string_value(json_object_get(json_array_get(nodes, i), "id")), i) != 0)
      rc = mp_error_set(err, MP_ENOMEM, where, "out of memory");
    mp__node_laws_clear(&cur);
    if (rc != 0) return rc;
  }

  rc = mp_graph_finalize(g, lim, err);
  /* A graph/2 with no dimension, law or warning is a graph/1 (it hashes
   * and writes as one). */
  if (rc == 0 && sr->d && (sr->d->n_dims || sr->n || sr->d->param_law || g->n_warnings)) mp__sym_attach(g, sr);
  /* Finalize names whole-graph problems (no activation, total overflow) at
   * the fixed path "$.nodes"; re-root it under `base` for embedded graphs. */
  if (rc != 0 && err != NULL && strcmp(base, "$") != 0 && strcmp(err->path, "$.nodes") == 0)
    mp__join(err->path, sizeof(err->path), path, "");
  return rc;
}

int mp_native_from_json(json_t *root, const char *base, const mp_limits_t *lim,
                        mp_graph_t **out, mp_error_t *err) {
  mp_limits_t deflim;
  mp__sym_read_t sr;
  mp_graph_t *g;
  int rc;

  *out = NULL;
  if (base == NULL) base = "$";
  if (lim == NULL) {
    mp_limits_default(&deflim);
    lim = &deflim;
  }
  if (root == NULL) return mp_error_set(err, MP_EINVAL, base, "no graph given");
  if ((g = mp_graph_new()) == NULL) return mp_error_set(err, MP_ENOMEM, base, "out of memory");
  memset(&sr, 0, sizeof(sr));
  rc = mp__parse_graph(g, root, base, lim, &sr, err);
  mp__sym_read_free(&sr);
  if (rc != 0) {
    mp_graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

/* ---- Writer ------------------------------------------------------------ */

static json_t *mp__node_json(const mp_graph_t *g, const mp_node_t *nd) {
  const mp_node_laws_t *nl = mp_graph_node_laws(g, (uint32_t)(nd - g->nodes));
  json_t *o = json_object();
  int bad = 0;
  if (o == NULL) return NULL;
  bad |= mp_json_set(o, "id", json_string(nd->id));
  if (nd->op[0]) bad |= mp_json_set(o, "op", json_string(nd->op));
  if (nd->kind != MP_KIND_ACTIVATION) bad |= mp_json_set(o, "kind", json_string(mp_kind_name(nd->kind)));
  if (nd->n_inputs > 0) {
    json_t *a = json_array();
    uint32_t k;
    if (a == NULL) bad = 1;
    for (k = 0; a && k < nd->n_inputs; k++)
      bad |= json_array_append_new(a, json_string(g->nodes[nd->inputs[k]].id));
    bad |= mp_json_set(o, "inputs", a);
  }
#define MP__LAW(f) (nl && nl->law[f] ? mp__law_write(nl->law[f], g->sym) : NULL)
  bad |= mp_json_set(o, "bytes", nl && nl->law[MP_LAW_BYTES] ? MP__LAW(MP_LAW_BYTES) : mp_json_u64(nd->bytes));
  if (nl && nl->law[MP_LAW_TIME])
    bad |= mp_json_set(o, "time", MP__LAW(MP_LAW_TIME));
  else if (nd->time != 0)
    bad |= mp_json_set(o, "time", mp_json_number(nd->time));
  if (nl && nl->law[MP_LAW_BWD_TIME])
    bad |= mp_json_set(o, "bwd_time", MP__LAW(MP_LAW_BWD_TIME));
  else if (nd->has_bwd_time)
    bad |= mp_json_set(o, "bwd_time", mp_json_number(nd->bwd_time));
  if (!nd->recompute) bad |= mp_json_set(o, "recompute", json_false());
  if (nd->stage) bad |= mp_json_set(o, "stage", json_string(nd->stage));
  if (nd->bwd_reads != MP_BWD_READS_INPUTS)
    bad |= mp_json_set(o, "bwd_reads", json_string(mp_bwd_reads_name(nd->bwd_reads)));
  if (nl && nl->law[MP_LAW_WORKSPACE_BYTES])
    bad |= mp_json_set(o, "workspace_bytes", MP__LAW(MP_LAW_WORKSPACE_BYTES));
  else if (nd->workspace_bytes != 0)
    bad |= mp_json_set(o, "workspace_bytes", mp_json_u64(nd->workspace_bytes));
  if (nl && nl->law[MP_LAW_SAVED_BYTES])
    bad |= mp_json_set(o, "saved_bytes", MP__LAW(MP_LAW_SAVED_BYTES));
  else if (nd->saved_bytes != 0)
    bad |= mp_json_set(o, "saved_bytes", mp_json_u64(nd->saved_bytes));
#undef MP__LAW
  if (nd->grad_inplace) bad |= mp_json_set(o, "grad_inplace", json_true());
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *mp_graph_to_json(const mp_graph_t *g) {
  json_t *root, *nodes;
  size_t v;
  int bad = 0;

  if (g == NULL) return NULL;
  root = json_object();
  nodes = json_array();
  if (root == NULL || nodes == NULL) {
    json_decref(root);
    json_decref(nodes);
    return NULL;
  }
  bad |= mp_json_set(root, "format", json_string(g->sym ? MP__NATIVE_FORMAT_2 : MP__NATIVE_FORMAT));
  if (g->name && g->name[0]) bad |= mp_json_set(root, "name", json_string(g->name));
  if (g->time_unit && g->time_unit[0]) bad |= mp_json_set(root, "time_unit", json_string(g->time_unit));
  if (g->sym && g->sym->param_law)
    bad |= mp_json_set(root, "param_bytes", mp__law_write(g->sym->param_law, g->sym));
  else if (g->param_bytes != 0)
    bad |= mp_json_set(root, "param_bytes", mp_json_u64(g->param_bytes));
  if (g->sym) {
    json_t *w = json_array();
    size_t i;
    bad |= mp_json_set(root, "dims", mp__dims_write(g->sym));
    for (i = 0; w && i < g->n_warnings; i++) bad |= json_array_append_new(w, json_string(g->warnings[i]));
    if (g->n_warnings)
      bad |= mp_json_set(root, "warnings", w);
    else
      json_decref(w);
  }
  for (v = 0; !bad && v < g->n_nodes; v++) {
    json_t *nj = mp__node_json(g, &g->nodes[v]);
    if (nj == NULL || json_array_append_new(nodes, nj) != 0) bad = 1;
  }
  bad |= mp_json_set(root, "nodes", nodes);
  if (bad) {
    json_decref(root);
    return NULL;
  }
  return root;
}
