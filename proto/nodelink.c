/* nodelink.c - reader for networkx node-link JSON (the shape of the Checkmate
 * and Moccasin benchmark graphs), producing a planning graph.
 *
 *   {"directed": true, "multigraph": false, "graph": {"name": ...},
 *    "nodes": [{"id": 0, "name": "conv1", "cost_cpu": 410, "cost_ram": 25690112,
 *               "backward": false}, ...],
 *    "links": [{"source": 0, "target": 1}, ...]}
 *
 * Per node: `cost_cpu` or `duration` is the forward time, `cost_ram` or
 * `out_cost` the output size in bytes, `param_cost` bytes of weights added to
 * the graph's param_bytes.
 *
 * networkx lets the writer rename the keys (node_link_data's `name`,
 * `source` and `target` arguments), and Moccasin's random layered graphs
 * use that: nodes are named by `name` instead of `id`, and links keyed by
 * the integers 0 and 1 (written as the JSON keys "0" and "1") instead of
 * `source` and `target`. So a node without `id` is named by its `name`,
 * and a link without `source` / `target` is read from "0" / "1".
 *
 * Their graph attributes also carry seven `*_tag` fields naming the
 * attributes that hold each figure. Moccasin's own loader reads two of
 * them (it renames the output cost to its memory and the duration to its
 * time); this reader takes each for what it names:
 *   node_output_cost_tag   bytes of the node's output  -> bytes
 *   node_duration_tag      the node's compute time     -> time
 *   node_param_cost_tag    bytes of the node's weights -> param_bytes
 *   node_output_block_tag, node_input_cost_tag (node attributes) and
 *   edge_cost_tag, edge_output_blocks_tag (link attributes): figures
 *   memplan's model has no place for; Moccasin ignores them too. Their
 *   files carry none of these attributes; a graph that does gets a warning
 *   naming the tag and how many nodes or links carry it.
 * Any other string field ending in `_tag` names the time or the bytes,
 * decided by the attribute it names when that is one of cost_cpu /
 * duration / cost_ram / out_cost, else by its key (a key mentioning mem,
 * ram, size, byte or out: bytes; dur, time, cpu, comp, cost or flop: time).
 * A tagged attribute replaces the default keys; two tags naming different
 * attributes for one figure are an error. Nodes marked `"backward": true` (a joint
 * forward+backward graph) are dropped with every link touching them, and a
 * warning says so. Forward nodes without incoming links become `input`
 * sources (constant memory). Node ids in memplan are the nodes' names when
 * every kept node has one and they are unique, else the `id` values as text.
 * Keys this reader does not use are ignored (networkx adds attributes freely);
 * the ones it reads must have the right type. Every error names a JSON path
 * under `base`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "strmap.h"

typedef struct {
  char *id;          /* the node-link `id` as text (owned) */
  const char *name;  /* borrowed from the JSON, NULL when absent */
  int backward;
  double time;
  uint64_t bytes;
  uint64_t param;
  size_t in_off, n_in; /* kept inputs: srcs[in_off .. in_off + n_in) */
} mp__nl_node_t;

typedef struct {
  uint32_t src, dst;
  size_t idx;          /* position in the links array */
} mp__nl_link_t;

/* "<base>.<array>[i]" or "<base>.<array>[i].<field>" (field may be NULL). */
static void mp__path(char *out, size_t n, const char *base, const char *array, size_t i,
                     const char *field) {
  snprintf(out, n, "%s.%s[%zu]%s%s", base, array, i, field ? "." : "", field ? field : "");
}

/* A non-negative 64-bit integer; a real with an integral value (2.0) is
 * accepted since some writers emit every number as a float. */
static int mp__get_u64(json_t *v, const char *path, uint64_t *out, mp_error_t *err) {
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0) return mp_error_set(err, MP_EINVAL, path, "must be a non-negative integer");
    *out = (uint64_t)x;
    return 0;
  }
  if (json_is_real(v)) {
    double d = json_real_value(v);
    if (!isfinite(d) || d < 0 || d != floor(d))
      return mp_error_set(err, MP_EINVAL, path, "must be a non-negative integer, got %g", d);
    /* 2^64 is the first double that does not fit. */
    if (d >= 18446744073709551616.0)
      return mp_error_set(err, MP_EINVAL, path, "is larger than a 64-bit unsigned integer");
    *out = (uint64_t)d;
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path, "must be a non-negative integer");
}

static int mp__get_time(json_t *v, const char *path, double *out, mp_error_t *err) {
  double d;
  if (!json_is_number(v)) return mp_error_set(err, MP_EINVAL, path, "must be a number");
  d = json_number_value(v);
  if (!isfinite(d) || d < 0)
    return mp_error_set(err, MP_EINVAL, path, "must be a finite non-negative number");
  *out = d;
  return 0;
}

/* An id as networkx writes it: an integer or a string. Returns a malloc'd
 * text form in *out (NULL and an error otherwise). */
static int mp__id_text(json_t *v, const char *path, char **out, mp_error_t *err) {
  *out = NULL;
  if (json_is_integer(v)) {
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    *out = strdup(tmp);
  } else if (json_is_string(v)) {
    if (strlen(json_string_value(v)) != json_string_length(v))
      return mp_error_set(err, MP_EINVAL, path, "must not contain a NUL character");
    *out = strdup(json_string_value(v));
  } else {
    return mp_error_set(err, MP_EINVAL, path, "must be an integer or a string");
  }
  if (*out == NULL) return mp_error_set(err, MP_ENOMEM, path, "out of memory");
  return 0;
}

/* An optional member: NULL when absent or null. */
static json_t *mp__opt(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_null(v) ? NULL : v;
}

/* One of two alternative keys (cost_cpu / duration); both at once is ambiguous. */
static int mp__alt(json_t *obj, const char *a, const char *b, const char *node_path,
                   json_t **v, const char **key, mp_error_t *err) {
  json_t *va = mp__opt(obj, a), *vb = mp__opt(obj, b);
  char path[MP_ERROR_PATH_MAX];
  if (va && vb) {
    snprintf(path, sizeof(path), "%s.%s", node_path, b);
    return mp_error_set(err, MP_EINVAL, path, "give either %s or %s, not both", a, b);
  }
  *v = va ? va : vb;
  *key = va ? a : b;
  return 0;
}

static int mp__cmp_link(const void *x, const void *y) {
  const mp__nl_link_t *a = x, *b = y;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* A tag naming an attribute memplan's model has no figure for: the
 * attribute and how many nodes or links carry it. */
typedef struct {
  const char *tag;          /* the graph field's key */
  const char *attr;         /* the attribute it names */
  int on_links;             /* a link attribute, else a node one */
  size_t carried;
} mp__nl_unused_t;

#define MP__NL_UNUSED_MAX 4

typedef struct {
  const char *base;
  const char *lkey;         /* "links" (or "edges") */
  const char *time_key;     /* from a graph `*_tag` field; NULL: cost_cpu / duration */
  const char *bytes_key;    /* ... NULL: cost_ram / out_cost */
  const char *param_key;    /* ... NULL: param_cost */
  mp__nl_unused_t unused[MP__NL_UNUSED_MAX];
  size_t n_unused;
  const mp_limits_t *lim;
  mp_error_t *err;
  mp__nl_node_t *nodes;
  size_t n_nodes;
  mp__strmap_t ids;         /* node-link id text -> index */
  mp__nl_link_t *links;     /* every link, resolved */
  size_t n_links;
  uint32_t *srcs;           /* kept inputs of the kept nodes, grouped by target */
  const char **in_ptrs;     /* scratch for one node's input ids */
} mp__nl_t;

static void mp__nl_free(mp__nl_t *p) {
  size_t i;
  for (i = 0; i < p->n_nodes; i++) free(p->nodes[i].id);
  free(p->nodes);
  mp__strmap_free(&p->ids);
  free(p->links);
  free(p->srcs);
  free(p->in_ptrs);
}

/* Count the unused tags' attributes that node or link `o` carries. */
static void mp__count_unused(mp__nl_t *p, json_t *o, int on_links) {
  size_t k;
  for (k = 0; k < p->n_unused; k++)
    if (p->unused[k].on_links == on_links && mp__opt(o, p->unused[k].attr) != NULL)
      p->unused[k].carried++;
}

static int mp__read_nodes(mp__nl_t *p, json_t *arr) {
  const char *base = p->base;
  size_t i;
  char path[MP_ERROR_PATH_MAX];
  int rc;

  p->nodes = calloc(json_array_size(arr) ? json_array_size(arr) : 1, sizeof(*p->nodes));
  if (p->nodes == NULL) return mp_error_set(p->err, MP_ENOMEM, base, "out of memory");
  for (i = 0; i < json_array_size(arr); i++) {
    json_t *o = json_array_get(arr, i), *v;
    mp__nl_node_t *nd = &p->nodes[i];
    char npath[MP_ERROR_PATH_MAX];
    const char *key;
    uint32_t prev;

    mp__path(npath, sizeof(npath), base, "nodes", i, NULL);
    if (!json_is_object(o)) return mp_error_set(p->err, MP_EINVAL, npath, "node must be an object");
    /* networkx's node key is `id` unless the writer renamed it; Moccasin's
     * is `name` */
    key = json_object_get(o, "id") == NULL && json_object_get(o, "name") != NULL ? "name" : "id";
    mp__path(path, sizeof(path), base, "nodes", i, key);
    if ((v = json_object_get(o, key)) == NULL)
      return mp_error_set(p->err, MP_EINVAL, path, "node has no id (nor a name)");
    if ((rc = mp__id_text(v, path, &nd->id, p->err)) != 0) return rc;
    p->n_nodes = i + 1; /* nd->id is owned from here on */
    if (strlen(nd->id) > p->lim->max_id_len)
      return mp_error_set(p->err, MP_ELIMIT, path, "node id is longer than the limit of %zu bytes",
                          p->lim->max_id_len);
    rc = mp__strmap_put(&p->ids, nd->id, (uint32_t)i, &prev);
    if (rc == MP_ENOMEM) return mp_error_set(p->err, MP_ENOMEM, path, "out of memory");
    if (rc == 1)
      return mp_error_set(p->err, MP_EDUP, path, "duplicate node id '%s' (first at %s.nodes[%lu])",
                          nd->id, base, (unsigned long)prev);

    if ((v = mp__opt(o, "name")) != NULL && strcmp(key, "id") == 0) {
      mp__path(path, sizeof(path), base, "nodes", i, "name");
      if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return mp_error_set(p->err, MP_EINVAL, path, "must be a string");
      nd->name = json_string_value(v);
    }
    if ((v = mp__opt(o, "backward")) != NULL) {
      mp__path(path, sizeof(path), base, "nodes", i, "backward");
      if (!json_is_boolean(v)) return mp_error_set(p->err, MP_EINVAL, path, "must be a boolean");
      nd->backward = json_is_true(v);
    }
    if (p->time_key != NULL) {
      v = mp__opt(o, key = p->time_key);
    } else if ((rc = mp__alt(o, "cost_cpu", "duration", npath, &v, &key, p->err)) != 0) {
      return rc;
    }
    if (v) {
      mp__path(path, sizeof(path), base, "nodes", i, key);
      if ((rc = mp__get_time(v, path, &nd->time, p->err)) != 0) return rc;
    }
    if (p->bytes_key != NULL) {
      v = mp__opt(o, key = p->bytes_key);
    } else if ((rc = mp__alt(o, "cost_ram", "out_cost", npath, &v, &key, p->err)) != 0) {
      return rc;
    }
    if (v) {
      mp__path(path, sizeof(path), base, "nodes", i, key);
      if ((rc = mp__get_u64(v, path, &nd->bytes, p->err)) != 0) return rc;
    }
    key = p->param_key != NULL ? p->param_key : "param_cost";
    if ((v = mp__opt(o, key)) != NULL) {
      mp__path(path, sizeof(path), base, "nodes", i, key);
      if ((rc = mp__get_u64(v, path, &nd->param, p->err)) != 0) return rc;
    }
    mp__count_unused(p, o, 0);
  }
  return 0;
}

/* Resolve one end of a link to a node index: `key` ("source" or "target"),
 * else `alt` ("0" or "1": networkx's source=0, target=1). */
static int mp__link_end(mp__nl_t *p, json_t *o, size_t i, const char *key, const char *alt,
                        uint32_t *out) {
  char path[MP_ERROR_PATH_MAX];
  char *text;
  json_t *v = json_object_get(o, key);
  int rc;
  if (v == NULL && json_object_get(o, alt) != NULL) v = json_object_get(o, key = alt);
  mp__path(path, sizeof(path), p->base, p->lkey, i, key);
  if (v == NULL) return mp_error_set(p->err, MP_EINVAL, path, "link has no %s", key);
  if ((rc = mp__id_text(v, path, &text, p->err)) != 0) return rc;
  if (mp__strmap_get(&p->ids, text, out) != 0) {
    rc = mp_error_set(p->err, MP_EUNKNOWN, path, "link %s '%.200s' is not a node id", key, text);
    free(text);
    return rc;
  }
  free(text);
  return 0;
}

static int mp__read_links(mp__nl_t *p, json_t *arr, const char *lkey, int multigraph) {
  char path[MP_ERROR_PATH_MAX];
  size_t i, n = json_array_size(arr);
  int rc;

  p->links = malloc((n ? n : 1) * sizeof(*p->links));
  if (p->links == NULL) return mp_error_set(p->err, MP_ENOMEM, p->base, "out of memory");
  for (i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    mp__nl_link_t *l = &p->links[i];
    char lpath[MP_ERROR_PATH_MAX];
    mp__path(lpath, sizeof(lpath), p->base, lkey, i, NULL);
    if (!json_is_object(o)) return mp_error_set(p->err, MP_EINVAL, lpath, "link must be an object");
    if ((rc = mp__link_end(p, o, i, "source", "0", &l->src)) != 0) return rc;
    if ((rc = mp__link_end(p, o, i, "target", "1", &l->dst)) != 0) return rc;
    l->idx = i;
    mp__count_unused(p, o, 1);
    if (l->src == l->dst)
      return mp_error_set(p->err, MP_ECYCLE, lpath, "graph has a cycle: link from node '%s' to itself",
                          p->nodes[l->src].id);
  }
  p->n_links = n;
  /* Group by target (and source, then position, so inputs keep link order
   * among equal pairs); adjacent equal pairs are duplicates. */
  qsort(p->links, n, sizeof(*p->links), mp__cmp_link);
  for (i = 1; i < n && !multigraph; i++)
    if (p->links[i].src == p->links[i - 1].src && p->links[i].dst == p->links[i - 1].dst) {
      mp__path(path, sizeof(path), p->base, lkey, p->links[i].idx, NULL);
      return mp_error_set(p->err, MP_EDUP, path,
                          "duplicate link '%s' -> '%s' (also %s[%zu]) in a graph that is not a "
                          "multigraph",
                          p->nodes[p->links[i].src].id, p->nodes[p->links[i].dst].id, lkey,
                          p->links[i - 1].idx);
    }
  return 0;
}

static int mp__cmp_idx(const void *x, const void *y) {
  const mp__nl_link_t *a = x, *b = y;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Group the kept links' sources per target, in link order. */
static int mp__collect_inputs(mp__nl_t *p) {
  size_t i, kept = 0, *fill;
  /* Back to document order so each node's inputs follow the links' order. */
  qsort(p->links, p->n_links, sizeof(*p->links), mp__cmp_idx);
  for (i = 0; i < p->n_links; i++) {
    const mp__nl_link_t *l = &p->links[i];
    if (!p->nodes[l->src].backward && !p->nodes[l->dst].backward) p->nodes[l->dst].n_in++;
  }
  for (i = 0; i < p->n_nodes; i++) {
    p->nodes[i].in_off = kept;
    kept += p->nodes[i].n_in;
  }
  p->srcs = malloc((kept ? kept : 1) * sizeof(*p->srcs));
  fill = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*fill));
  if (p->srcs == NULL || fill == NULL) {
    free(fill);
    return mp_error_set(p->err, MP_ENOMEM, p->base, "out of memory");
  }
  for (i = 0; i < p->n_links; i++) {
    const mp__nl_link_t *l = &p->links[i];
    if (!p->nodes[l->src].backward && !p->nodes[l->dst].backward)
      p->srcs[p->nodes[l->dst].in_off + fill[l->dst]++] = l->src;
  }
  free(fill);
  return 0;
}

/* Names become ids only if every kept node has one and no two are equal. */
static int mp__names_usable(mp__nl_t *p, int *usable) {
  mp__strmap_t seen;
  size_t i;
  int rc = 0;
  *usable = 1;
  for (i = 0; i < p->n_nodes; i++)
    if (!p->nodes[i].backward && (p->nodes[i].name == NULL || p->nodes[i].name[0] == '\0')) {
      *usable = 0;
      return 0;
    }
  mp__strmap_init(&seen);
  for (i = 0; i < p->n_nodes && *usable; i++) {
    if (p->nodes[i].backward) continue;
    rc = mp__strmap_put(&seen, p->nodes[i].name, (uint32_t)i, NULL);
    if (rc == MP_ENOMEM) break;
    if (rc == 1) *usable = 0;
    rc = 0;
  }
  mp__strmap_free(&seen);
  if (rc == MP_ENOMEM) return mp_error_set(p->err, MP_ENOMEM, p->base, "out of memory");
  return 0;
}

/* Paths from the graph builder for whole-graph problems are "$.nodes";
 * put them under `base`. Cycle reports name "<node>.inputs", a field
 * node-link has not got: point at the node instead. */
static void mp__fix_path(mp_error_t *err, const char *base) {
  size_t n;
  if (err == NULL) return;
  if (strcmp(err->path, "$.nodes") == 0 && strcmp(base, "$") != 0) {
    char tmp[MP_ERROR_PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.nodes", base);
    memcpy(err->path, tmp, sizeof(tmp));
  }
  n = strlen(err->path);
  if (n > 7 && strcmp(err->path + n - 7, ".inputs") == 0) err->path[n - 7] = '\0';
}

static int mp__build(mp__nl_t *p, mp_graph_t *g, int use_names) {
  size_t i, k, max_in = 1;
  int rc;
  for (i = 0; i < p->n_nodes; i++)
    if (p->nodes[i].n_in > max_in) max_in = p->nodes[i].n_in;
  p->in_ptrs = malloc(max_in * sizeof(*p->in_ptrs));
  if (p->in_ptrs == NULL) return mp_error_set(p->err, MP_ENOMEM, p->base, "out of memory");
  for (i = 0; i < p->n_nodes; i++) {
    const mp__nl_node_t *nd = &p->nodes[i];
    mp_node_spec_t spec;
    char where[MP_ERROR_PATH_MAX];
    if (nd->backward) continue;
    mp_node_spec_init(&spec);
    mp__path(where, sizeof(where), p->base, "nodes", i, NULL);
    spec.where = where;
    spec.id = use_names ? nd->name : nd->id;
    spec.op = nd->name;
    spec.bytes = nd->bytes;
    spec.time = nd->time;
    for (k = 0; k < nd->n_in; k++) {
      const mp__nl_node_t *src = &p->nodes[p->srcs[nd->in_off + k]];
      p->in_ptrs[k] = use_names ? src->name : src->id;
    }
    spec.inputs = p->in_ptrs;
    spec.n_inputs = nd->n_in;
    /* Every source is a data input: node-link graphs say nothing more. */
    if (nd->n_in == 0) spec.kind = MP_KIND_INPUT;
    if ((rc = mp_graph_add_node(g, &spec, p->lim, p->err)) != 0) return rc;
    if (__builtin_add_overflow(g->param_bytes, nd->param, &g->param_bytes)) {
      char path[MP_ERROR_PATH_MAX];
      mp__path(path, sizeof(path), p->base, "nodes", i, "param_cost");
      return mp_error_set(p->err, MP_EOVERFLOW, path, "total param_cost overflows 64 bits");
    }
  }
  return 0;
}

/* Whether `s` contains one of the words (lowercase ASCII). */
static int mp__mentions(const char *s, const char *const *words) {
  size_t k;
  for (k = 0; words[k] != NULL; k++) {
    const char *x;
    for (x = s; *x; x++) {
      size_t j;
      for (j = 0; words[k][j] && x[j] && (x[j] | 0x20) == words[k][j]; j++) {
      }
      if (words[k][j] == '\0') return 1;
    }
  }
  return 0;
}

/* The tag keys of Moccasin's random layered graphs, each with the figure
 * the attribute it names holds (MP__ROLE_*). */
enum { MP__ROLE_BYTES, MP__ROLE_TIME, MP__ROLE_PARAM, MP__ROLE_NODE_UNUSED, MP__ROLE_LINK_UNUSED };

static const struct {
  const char *key;
  int role;
} mp__known_tags[] = {
    {"node_output_cost_tag", MP__ROLE_BYTES},
    {"node_duration_tag", MP__ROLE_TIME},
    {"node_param_cost_tag", MP__ROLE_PARAM},
    {"node_output_block_tag", MP__ROLE_NODE_UNUSED},
    {"node_input_cost_tag", MP__ROLE_NODE_UNUSED},
    {"edge_cost_tag", MP__ROLE_LINK_UNUSED},
    {"edge_output_blocks_tag", MP__ROLE_LINK_UNUSED},
};

/* The role of a tag key this reader does not know, from the attribute it
 * names or else from the key's words; -1: none. */
static int mp__guess_role(const char *k, const char *val) {
  static const char *const bytes_words[] = {"mem", "ram", "size", "byte", "out", NULL};
  static const char *const time_words[] = {"dur", "time", "cpu", "comp", "cost", "flop", NULL};
  if (strcmp(val, "cost_ram") == 0 || strcmp(val, "out_cost") == 0) return MP__ROLE_BYTES;
  if (strcmp(val, "cost_cpu") == 0 || strcmp(val, "duration") == 0) return MP__ROLE_TIME;
  if (mp__mentions(k, bytes_words)) return MP__ROLE_BYTES;
  if (mp__mentions(k, time_words)) return MP__ROLE_TIME;
  return -1;
}

/* The graph attributes' `*_tag` fields: which attributes hold the time, the
 * bytes and the weights (p->time_key, bytes_key, param_key), and which name
 * figures memplan does not model (p->unused); all borrowed from the JSON. */
static int mp__read_tags(mp__nl_t *p, json_t *gattr) {
  static const char *const what[] = {"bytes", "time", "weights"};
  const char *k;
  json_t *v;
  json_object_foreach(gattr, k, v) {
    size_t n = strlen(k), t;
    const char *val, **slot;
    char path[MP_ERROR_PATH_MAX];
    int role = -2;
    if (n < 4 || strcmp(k + n - 4, "_tag") != 0 || !json_is_string(v)) continue;
    val = json_string_value(v);
    for (t = 0; t < sizeof(mp__known_tags) / sizeof(mp__known_tags[0]); t++)
      if (strcmp(k, mp__known_tags[t].key) == 0) role = mp__known_tags[t].role;
    if (role == -2) role = mp__guess_role(k, val);
    if (role < 0) continue; /* a tag this reader has no use for */
    if (role == MP__ROLE_NODE_UNUSED || role == MP__ROLE_LINK_UNUSED) {
      mp__nl_unused_t *u = &p->unused[p->n_unused++]; /* four known keys: fits */
      u->tag = k;
      u->attr = val;
      u->on_links = role == MP__ROLE_LINK_UNUSED;
      continue;
    }
    slot = role == MP__ROLE_BYTES ? &p->bytes_key
           : role == MP__ROLE_TIME ? &p->time_key
                                   : &p->param_key;
    snprintf(path, sizeof(path), "%s.graph.%s", p->base, k);
    if (*slot != NULL && strcmp(*slot, val) != 0)
      return mp_error_set(p->err, MP_EINVAL, path,
                          "names '%s' for the %s, another tag already named '%s'", val, what[role],
                          *slot);
    *slot = val;
  }
  return 0;
}

/* One warning per unused tag whose attribute some node or link carries. */
static int mp__warn_unused(const mp__nl_t *p, mp_graph_t *g) {
  size_t k;
  for (k = 0; k < p->n_unused; k++) {
    const mp__nl_unused_t *u = &p->unused[k];
    if (u->carried == 0) continue;
    if (mp_graph_warn(g,
                      "graph.%s: %zu %s%s '%s', a figure memplan's model has no place "
                      "for (Moccasin ignores it too): ignored",
                      u->tag, u->carried, u->on_links ? "link" : "node",
                      u->carried == 1 ? " carries" : "s carry", u->attr) != 0)
      return -1;
  }
  return 0;
}

int mp_nodelink_from_json(json_t *root, const char *base, const char *name, const mp_limits_t *lim,
                          mp_graph_t **out, mp_error_t *err) {
  mp__nl_t p;
  mp_limits_t deflim;
  mp_graph_t *g = NULL;
  json_t *v, *nodes, *links, *gattr;
  const char *lkey = "links", *gname = name ? name : "";
  char path[MP_ERROR_PATH_MAX];
  size_t i, n_bwd = 0;
  int rc, multigraph = 0, use_names;

  *out = NULL;
  if (base == NULL) base = "$";
  if (lim == NULL) {
    mp_limits_default(&deflim);
    lim = &deflim;
  }
  memset(&p, 0, sizeof(p));
  p.base = base;
  p.lim = lim;
  p.err = err;
  mp__strmap_init(&p.ids);

  if (!json_is_object(root))
    return mp_error_set(err, MP_EINVAL, base, "node-link graph must be a JSON object");
  /* networkx always writes "directed"; a missing one is taken as directed
   * since links carry source and target anyway. */
  if ((v = json_object_get(root, "directed")) != NULL) {
    snprintf(path, sizeof(path), "%s.directed", base);
    if (!json_is_boolean(v)) return mp_error_set(err, MP_EINVAL, path, "must be a boolean");
    if (json_is_false(v))
      return mp_error_set(err, MP_EINVAL, path,
                          "graph is undirected: a computation graph must be directed");
  }
  if ((v = json_object_get(root, "multigraph")) != NULL) {
    snprintf(path, sizeof(path), "%s.multigraph", base);
    if (!json_is_boolean(v)) return mp_error_set(err, MP_EINVAL, path, "must be a boolean");
    multigraph = json_is_true(v);
  }
  if ((gattr = mp__opt(root, "graph")) != NULL) {
    snprintf(path, sizeof(path), "%s.graph", base);
    if (!json_is_object(gattr)) return mp_error_set(err, MP_EINVAL, path, "must be an object");
    if ((v = mp__opt(gattr, "name")) != NULL) {
      snprintf(path, sizeof(path), "%s.graph.name", base);
      if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return mp_error_set(err, MP_EINVAL, path, "must be a string");
      gname = json_string_value(v);
      if (strlen(gname) > lim->max_name_len)
        return mp_error_set(err, MP_ELIMIT, path, "graph name is longer than the limit of %zu bytes",
                            lim->max_name_len);
    }
    if ((rc = mp__read_tags(&p, gattr)) != 0) return rc;
  }
  snprintf(path, sizeof(path), "%s.nodes", base);
  if ((nodes = json_object_get(root, "nodes")) == NULL)
    return mp_error_set(err, MP_EINVAL, path, "node-link graph has no nodes array");
  if (!json_is_array(nodes)) return mp_error_set(err, MP_EINVAL, path, "must be an array");
  if (json_array_size(nodes) > lim->max_nodes || json_array_size(nodes) >= UINT32_MAX)
    return mp_error_set(err, MP_ELIMIT, path, "graph has %zu nodes, more than the limit of %zu",
                        json_array_size(nodes), lim->max_nodes);
  /* networkx 3.4 can write "edges" instead of "links". */
  if ((links = json_object_get(root, "links")) == NULL &&
      (links = json_object_get(root, "edges")) != NULL)
    lkey = "edges";
  snprintf(path, sizeof(path), "%s.%s", base, lkey);
  if (links == NULL) return mp_error_set(err, MP_EINVAL, path, "node-link graph has no links array");
  if (!json_is_array(links)) return mp_error_set(err, MP_EINVAL, path, "must be an array");
  if (json_array_size(links) > lim->max_edges)
    return mp_error_set(err, MP_ELIMIT, path, "graph has %zu links, more than the limit of %zu",
                        json_array_size(links), lim->max_edges);

  if ((rc = mp__read_nodes(&p, nodes)) != 0) goto fail;
  p.lkey = lkey;
  if ((rc = mp__read_links(&p, links, lkey, multigraph)) != 0) goto fail;
  if ((rc = mp__collect_inputs(&p)) != 0) goto fail;
  for (i = 0; i < p.n_nodes; i++) n_bwd += p.nodes[i].backward != 0;
  if (p.n_nodes > 0 && n_bwd == p.n_nodes) {
    snprintf(path, sizeof(path), "%s.nodes", base);
    rc = mp_error_set(err, MP_EEMPTY, path, "every node is a backward node: no forward graph");
    goto fail;
  }
  if ((rc = mp__names_usable(&p, &use_names)) != 0) goto fail;

  if ((g = mp_graph_new()) == NULL || mp_graph_set_name(g, gname) != 0) {
    rc = mp_error_set(err, MP_ENOMEM, base, "out of memory");
    goto fail;
  }
  if ((rc = mp__build(&p, g, use_names)) != 0) goto fail;
  if (n_bwd > 0 &&
      mp_graph_warn(g,
                    "joint forward+backward graph: imported the forward part (%zu forward "
                    "nodes), dropped %zu backward nodes",
                    p.n_nodes - n_bwd, n_bwd) != 0) {
    rc = mp_error_set(err, MP_ENOMEM, base, "out of memory");
    goto fail;
  }
  if (mp__warn_unused(&p, g) != 0) {
    rc = mp_error_set(err, MP_ENOMEM, base, "out of memory");
    goto fail;
  }
  if ((rc = mp_graph_finalize(g, lim, err)) != 0) {
    mp__fix_path(err, base);
    goto fail;
  }
  mp__nl_free(&p);
  *out = g;
  return 0;

fail:
  mp_graph_free(g);
  mp__nl_free(&p);
  return rc;
}
