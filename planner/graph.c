/* graph.c - building, validating and ordering the planning graph.
 *
 * Nodes arrive through mp_graph_add_node() in whatever order the input format
 * lists them, with inputs named by id. mp_graph_finalize() resolves the names
 * with a string map, rejects anything a planner could not trust (unknown or
 * cyclic references, sums that overflow 64 bits, an empty graph) and then
 * renumbers the nodes in a stable topological order, so that every later
 * stage (simulator, solvers) can walk indices 0..n-1 as a valid forward pass.
 */
#include "graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims.h"
#include "strmap.h"

/* Build-time state that disappears after finalize. */
typedef struct mp__graph_build_s {
  mp__strmap_t ids;        /* id -> index in insertion order */
  char ***input_names;     /* per node, copies of the input ids */
  char **where;            /* per node, copy of spec->where */
  size_t cap;              /* capacity of nodes / input_names / where */
  size_t n_refs;           /* total input references so far */
} mp__graph_build_t;

void mp_limits_default(mp_limits_t *lim) {
  lim->max_nodes = 1000000;
  lim->max_edges = 10000000;
  lim->max_id_len = 256;
  lim->max_name_len = 1024;
}

void mp_node_spec_init(mp_node_spec_t *spec) {
  memset(spec, 0, sizeof(*spec));
  spec->kind = MP_KIND_ACTIVATION;
  spec->recompute = 1;
  spec->bwd_reads = MP_BWD_READS_INPUTS;
}

static const char *const mp__kind_names[] = {"activation", "input", "param"};
static const char *const mp__bwd_reads_names[] = {"inputs", "output", "both", "none"};

const char *mp_kind_name(mp_kind_t k) {
  return (unsigned)k < 3 ? mp__kind_names[k] : "?";
}

const char *mp_bwd_reads_name(mp_bwd_reads_t r) {
  return (unsigned)r < 4 ? mp__bwd_reads_names[r] : "?";
}

int mp_kind_parse(const char *s, mp_kind_t *out) {
  int i;
  for (i = 0; i < 3; i++)
    if (strcmp(s, mp__kind_names[i]) == 0) {
      *out = (mp_kind_t)i;
      return 0;
    }
  return MP_EINVAL;
}

int mp_bwd_reads_parse(const char *s, mp_bwd_reads_t *out) {
  int i;
  for (i = 0; i < 4; i++)
    if (strcmp(s, mp__bwd_reads_names[i]) == 0) {
      *out = (mp_bwd_reads_t)i;
      return 0;
    }
  return MP_EINVAL;
}

static char *mp__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

mp_graph_t *mp_graph_new(void) {
  mp_graph_t *g = calloc(1, sizeof(*g));
  if (g == NULL) return NULL;
  g->build = calloc(1, sizeof(*g->build));
  g->name = mp__strdup("");
  g->time_unit = mp__strdup("");
  if (g->build == NULL || g->name == NULL || g->time_unit == NULL) {
    mp_graph_free(g);
    return NULL;
  }
  mp__strmap_init(&g->build->ids);
  return g;
}

static void mp__build_free(mp_graph_t *g) {
  mp__graph_build_t *b = g->build;
  size_t i, k;
  if (b == NULL) return;
  for (i = 0; i < g->n_nodes; i++) {
    if (b->input_names && b->input_names[i]) {
      for (k = 0; k < g->nodes[i].n_inputs; k++) free(b->input_names[i][k]);
      free(b->input_names[i]);
    }
    if (b->where) free(b->where[i]);
  }
  free(b->input_names);
  free(b->where);
  mp__strmap_free(&b->ids);
  free(b);
  g->build = NULL;
}

void mp_graph_free(mp_graph_t *g) {
  size_t i;
  if (g == NULL) return;
  mp__build_free(g);
  for (i = 0; i < g->n_nodes; i++) {
    free(g->nodes[i].id);
    free(g->nodes[i].op);
    free(g->nodes[i].stage);
    free(g->nodes[i].inputs);
  }
  free(g->nodes);
  if (g->id_index) {
    mp__strmap_free(g->id_index);
    free(g->id_index);
  }
  free(g->pred_off);
  free(g->pred);
  free(g->succ_off);
  free(g->succ);
  for (i = 0; i < g->n_warnings; i++) free(g->warnings[i]);
  free(g->warnings);
  mp_graph_dims_free(g->sym);
  free(g->name);
  free(g->time_unit);
  free(g);
}

static int mp__replace_str(char **dst, const char *src) {
  char *d = mp__strdup(src ? src : "");
  if (d == NULL) return MP_ENOMEM;
  free(*dst);
  *dst = d;
  return 0;
}

int mp_graph_set_name(mp_graph_t *g, const char *name) { return mp__replace_str(&g->name, name); }

int mp_graph_set_time_unit(mp_graph_t *g, const char *unit) {
  return mp__replace_str(&g->time_unit, unit);
}

int mp_graph_warn(mp_graph_t *g, const char *fmt, ...) {
  char buf[2048];
  char **nw;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  nw = realloc(g->warnings, (g->n_warnings + 1) * sizeof(*nw));
  if (nw == NULL) return MP_ENOMEM;
  g->warnings = nw;
  if ((g->warnings[g->n_warnings] = mp__strdup(buf)) == NULL) return MP_ENOMEM;
  g->n_warnings++;
  return 0;
}

/* Path of a node's sub-field for error messages. JSON locations ("$...")
 * get the suffix appended; other locations ("line 12") are used as they are. */
static void mp__subpath(char *out, size_t n, const char *where, const char *suffix) {
  if (where == NULL) where = "";
  if (where[0] == '$')
    snprintf(out, n, "%s%s", where, suffix);
  else
    snprintf(out, n, "%s", where);
}

static int mp__check_time(double t, const char *where, const char *field, mp_error_t *err) {
  char path[MP_ERROR_PATH_MAX];
  char suffix[32];
  if (isfinite(t) && t >= 0) return 0;
  snprintf(suffix, sizeof(suffix), ".%s", field);
  mp__subpath(path, sizeof(path), where, suffix);
  return mp_error_set(err, MP_EINVAL, path, "%s must be a finite non-negative number", field);
}

static int mp__grow(mp_graph_t *g) {
  mp__graph_build_t *b = g->build;
  size_t ncap = b->cap ? b->cap * 2 : 64;
  mp_node_t *nn;
  char ***ni;
  char **nw;
  nn = realloc(g->nodes, ncap * sizeof(*nn));
  if (nn == NULL) return MP_ENOMEM;
  g->nodes = nn;
  ni = realloc(b->input_names, ncap * sizeof(*ni));
  if (ni == NULL) return MP_ENOMEM;
  b->input_names = ni;
  nw = realloc(b->where, ncap * sizeof(*nw));
  if (nw == NULL) return MP_ENOMEM;
  b->where = nw;
  b->cap = ncap;
  return 0;
}

int mp_graph_add_node(mp_graph_t *g, const mp_node_spec_t *spec, const mp_limits_t *lim,
                      mp_error_t *err) {
  mp__graph_build_t *b = g->build;
  mp_limits_t deflim;
  char path[MP_ERROR_PATH_MAX];
  mp_node_t *n;
  size_t k, idlen;
  uint32_t prev;
  int rc;

  if (b == NULL) return mp_error_set(err, MP_EINVAL, "", "graph is already finalized");
  if (lim == NULL) {
    mp_limits_default(&deflim);
    lim = &deflim;
  }
  if (spec->id == NULL || spec->id[0] == '\0') {
    mp__subpath(path, sizeof(path), spec->where, ".id");
    return mp_error_set(err, MP_EINVAL, path, "node id must be a non-empty string");
  }
  idlen = strlen(spec->id);
  if (idlen > lim->max_id_len) {
    mp__subpath(path, sizeof(path), spec->where, ".id");
    return mp_error_set(err, MP_ELIMIT, path, "node id is %zu bytes long, the limit is %zu",
                        idlen, lim->max_id_len);
  }
  if (spec->op && strlen(spec->op) > lim->max_id_len) {
    mp__subpath(path, sizeof(path), spec->where, ".op");
    return mp_error_set(err, MP_ELIMIT, path, "op name is longer than the limit of %zu bytes",
                        lim->max_id_len);
  }
  if (spec->stage && strlen(spec->stage) > lim->max_id_len) {
    mp__subpath(path, sizeof(path), spec->where, ".stage");
    return mp_error_set(err, MP_ELIMIT, path, "stage is longer than the limit of %zu bytes",
                        lim->max_id_len);
  }
  if (g->n_nodes >= lim->max_nodes || g->n_nodes >= (size_t)UINT32_MAX - 1) {
    return mp_error_set(err, MP_ELIMIT, spec->where ? spec->where : "",
                        "graph has more than %zu nodes (the configured limit)", lim->max_nodes);
  }
  if (spec->n_inputs > lim->max_edges || b->n_refs + spec->n_inputs > lim->max_edges) {
    mp__subpath(path, sizeof(path), spec->where, ".inputs");
    return mp_error_set(err, MP_ELIMIT, path,
                        "graph has more than %zu input references (the configured limit)",
                        lim->max_edges);
  }
  if ((unsigned)spec->kind > MP_KIND_PARAM) {
    mp__subpath(path, sizeof(path), spec->where, ".kind");
    return mp_error_set(err, MP_EINVAL, path, "unknown kind");
  }
  if ((unsigned)spec->bwd_reads > MP_BWD_READS_NONE) {
    mp__subpath(path, sizeof(path), spec->where, ".bwd_reads");
    return mp_error_set(err, MP_EINVAL, path, "unknown bwd_reads");
  }
  if (spec->kind != MP_KIND_ACTIVATION && spec->n_inputs > 0) {
    mp__subpath(path, sizeof(path), spec->where, ".inputs");
    return mp_error_set(err, MP_EINVAL, path,
                        "node '%s' of kind %s must not have inputs (inputs and params are sources)",
                        spec->id, mp_kind_name(spec->kind));
  }
  if (spec->kind != MP_KIND_ACTIVATION && spec->saved_bytes > 0) {
    mp__subpath(path, sizeof(path), spec->where, ".saved_bytes");
    return mp_error_set(err, MP_EINVAL, path,
                        "node '%s' of kind %s must not have saved_bytes (inputs and params have "
                        "no backward)",
                        spec->id, mp_kind_name(spec->kind));
  }
  if ((rc = mp__check_time(spec->time, spec->where, "time", err)) != 0) return rc;
  if (spec->has_bwd_time && (rc = mp__check_time(spec->bwd_time, spec->where, "bwd_time", err)) != 0)
    return rc;

  if (g->n_nodes == b->cap && mp__grow(g) != 0) goto nomem;
  n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof(*n));
  b->input_names[g->n_nodes] = NULL;
  b->where[g->n_nodes] = NULL;
  n->id = mp__strdup(spec->id);
  n->op = mp__strdup(spec->op ? spec->op : "");
  n->stage = spec->stage ? mp__strdup(spec->stage) : NULL;
  b->where[g->n_nodes] = mp__strdup(spec->where ? spec->where : "");
  if (spec->n_inputs) {
    b->input_names[g->n_nodes] = calloc(spec->n_inputs, sizeof(char *));
    n->inputs = calloc(spec->n_inputs, sizeof(uint32_t));
  }
  /* Count the node now so mp_graph_free releases whatever was allocated. */
  g->n_nodes++;
  if (n->id == NULL || n->op == NULL || (spec->stage && n->stage == NULL) ||
      b->where[g->n_nodes - 1] == NULL ||
      (spec->n_inputs && (b->input_names[g->n_nodes - 1] == NULL || n->inputs == NULL)))
    goto nomem;
  for (k = 0; k < spec->n_inputs; k++) {
    if (spec->inputs[k] == NULL) {
      char sfx[48];
      snprintf(sfx, sizeof(sfx), ".inputs[%zu]", k);
      mp__subpath(path, sizeof(path), spec->where, sfx);
      return mp_error_set(err, MP_EINVAL, path, "input id must be a string");
    }
    if ((b->input_names[g->n_nodes - 1][k] = mp__strdup(spec->inputs[k])) == NULL) goto nomem;
    n->n_inputs++;
  }
  b->n_refs += spec->n_inputs;
  n->bytes = spec->bytes;
  n->workspace_bytes = spec->workspace_bytes;
  n->saved_bytes = spec->saved_bytes;
  n->time = spec->time;
  n->has_bwd_time = spec->has_bwd_time;
  n->bwd_time = spec->has_bwd_time ? spec->bwd_time : MP_DEFAULT_BWD_FACTOR * spec->time;
  n->kind = spec->kind;
  n->recompute = spec->recompute ? 1 : 0;
  n->bwd_reads = spec->bwd_reads;
  n->grad_inplace = spec->grad_inplace ? 1 : 0;

  rc = mp__strmap_put(&b->ids, n->id, (uint32_t)(g->n_nodes - 1), &prev);
  if (rc == MP_ENOMEM) goto nomem;
  if (rc == 1) {
    mp__subpath(path, sizeof(path), spec->where, ".id");
    return mp_error_set(err, MP_EDUP, path, "duplicate node id '%s' (first defined at %s)",
                        spec->id, b->where[prev][0] ? b->where[prev] : "an earlier node");
  }
  return 0;

nomem:
  return mp_error_set(err, MP_ENOMEM, spec->where ? spec->where : "", "out of memory");
}

/* ---- Topological order ------------------------------------------------- */

/* Binary min-heap of node indices, so that among ready nodes the earliest
 * added goes first and the order is deterministic for a given input. */
typedef struct {
  uint32_t *a;
  size_t n;
} mp__heap_t;

static void mp__heap_push(mp__heap_t *h, uint32_t v) {
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->a[p] <= v) break;
    h->a[i] = h->a[p];
    i = p;
  }
  h->a[i] = v;
}

static uint32_t mp__heap_pop(mp__heap_t *h) {
  uint32_t top = h->a[0], last = h->a[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    uint32_t mv = last;
    if (l < h->n && h->a[l] < mv) m = l, mv = h->a[l];
    if (r < h->n && h->a[r] < mv) m = r;
    if (m == i) break;
    h->a[i] = h->a[m];
    i = m;
  }
  if (h->n > 0) h->a[i] = last;
  return top;
}

static int mp__cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Build deduplicated CSR adjacency (sorted) from the nodes' input lists. */
static int mp__build_csr(mp_graph_t *g) {
  size_t n = g->n_nodes, v, k, total = 0, e = 0;
  uint32_t *cnt;
  for (v = 0; v < n; v++) total += g->nodes[v].n_inputs;
  g->pred_off = calloc(n + 1, sizeof(uint32_t));
  g->succ_off = calloc(n + 1, sizeof(uint32_t));
  g->pred = malloc((total ? total : 1) * sizeof(uint32_t));
  if (!g->pred_off || !g->succ_off || !g->pred) return MP_ENOMEM;
  for (v = 0; v < n; v++) {
    size_t start = e, j, w;
    for (k = 0; k < g->nodes[v].n_inputs; k++) g->pred[e++] = g->nodes[v].inputs[k];
    qsort(g->pred + start, e - start, sizeof(uint32_t), mp__cmp_u32);
    for (j = start, w = start; j < e; j++)
      if (w == start || g->pred[w - 1] != g->pred[j]) g->pred[w++] = g->pred[j];
    e = w;
    g->pred_off[v + 1] = (uint32_t)e;
  }
  g->n_edges = e;
  g->succ = malloc((e ? e : 1) * sizeof(uint32_t));
  cnt = calloc(n + 1, sizeof(uint32_t));
  if (!g->succ || !cnt) {
    free(cnt);
    return MP_ENOMEM;
  }
  for (k = 0; k < e; k++) g->succ_off[g->pred[k] + 1]++;
  for (v = 0; v < n; v++) g->succ_off[v + 1] += g->succ_off[v];
  /* Visiting v in ascending order keeps each successor list sorted. */
  for (v = 0; v < n; v++)
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
      uint32_t u = g->pred[k];
      g->succ[g->succ_off[u] + cnt[u]++] = (uint32_t)v;
    }
  free(cnt);
  return 0;
}

/* Find and describe one cycle among the nodes Kahn's algorithm left over
 * (indeg > 0). Every such node has a predecessor that is also left over, so
 * walking predecessors from any of them must revisit a node: that is a cycle. */
static int mp__report_cycle(mp_graph_t *g, const uint32_t *indeg, mp_error_t *err) {
  size_t n = g->n_nodes, v, len = 0, i;
  uint32_t *seen_at = malloc(n * sizeof(uint32_t));
  uint32_t *walk = malloc(n * sizeof(uint32_t));
  uint32_t cur = 0, start;
  char msg[MP_ERROR_MSG_MAX];
  size_t off = 0;
  if (!seen_at || !walk) {
    free(seen_at);
    free(walk);
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  }
  for (v = 0; v < n; v++) seen_at[v] = UINT32_MAX;
  for (v = 0; v < n; v++)
    if (indeg[v] > 0) {
      cur = (uint32_t)v;
      break;
    }
  while (seen_at[cur] == UINT32_MAX) {
    mp_node_t *nd = &g->nodes[cur];
    uint32_t next = UINT32_MAX;
    seen_at[cur] = (uint32_t)len;
    walk[len++] = cur;
    for (i = 0; i < nd->n_inputs; i++)
      if (indeg[nd->inputs[i]] > 0) {
        next = nd->inputs[i];
        break;
      }
    cur = next; /* always found: see above */
  }
  start = seen_at[cur];
  /* walk[start..len) follows predecessor links; print it as data flows. */
  for (i = len; i > start && off < sizeof(msg) - 80; i--)
    off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s", i == len ? "" : " -> ",
                            g->nodes[walk[i - 1]].id);
  if (i > start)
    off += (size_t)snprintf(msg + off, sizeof(msg) - off, " -> ...");
  snprintf(msg + off, sizeof(msg) - off, " -> %s", g->nodes[walk[len - 1]].id);
  {
    char path[MP_ERROR_PATH_MAX];
    mp__subpath(path, sizeof(path), g->build->where[walk[len - 1]], ".inputs");
    mp_error_set(err, MP_ECYCLE, path, "graph has a cycle: %.400s", msg);
  }
  free(seen_at);
  free(walk);
  return MP_ECYCLE;
}

int mp_graph_finalize(mp_graph_t *g, const mp_limits_t *lim, mp_error_t *err) {
  mp__graph_build_t *b = g->build;
  size_t n = g->n_nodes, v, k, done = 0;
  uint32_t *indeg = NULL, *order = NULL, *newidx = NULL, *succ_tmp_off = NULL, *succ_tmp = NULL;
  mp_node_t *sorted = NULL;
  mp__heap_t heap = {NULL, 0};
  int rc = MP_ENOMEM;
  (void)lim;

  if (b == NULL) return mp_error_set(err, MP_EINVAL, "", "graph is already finalized");
  if (n == 0) return mp_error_set(err, MP_EEMPTY, "$.nodes", "graph has no nodes");

  /* Resolve input names. */
  for (v = 0; v < n; v++) {
    mp_node_t *nd = &g->nodes[v];
    for (k = 0; k < nd->n_inputs; k++) {
      uint32_t u;
      if (mp__strmap_get(&b->ids, b->input_names[v][k], &u) != 0) {
        char path[MP_ERROR_PATH_MAX], sfx[48];
        snprintf(sfx, sizeof(sfx), ".inputs[%zu]", k);
        mp__subpath(path, sizeof(path), b->where[v], sfx);
        return mp_error_set(err, MP_EUNKNOWN, path, "node '%s' has unknown input '%s'", nd->id,
                            b->input_names[v][k]);
      }
      nd->inputs[k] = u;
    }
  }

  /* Sums in 64 bits, refusing overflow rather than wrapping. */
  g->n_activations = 0;
  g->activation_bytes = 0;
  g->saved_bytes = 0;
  g->const_bytes = g->param_bytes;
  g->fwd_time = 0;
  g->bwd_time = 0;
  for (v = 0; v < n; v++) {
    mp_node_t *nd = &g->nodes[v];
    uint64_t *acc = nd->kind == MP_KIND_ACTIVATION ? &g->activation_bytes : &g->const_bytes;
    if (__builtin_add_overflow(*acc, nd->bytes, acc)) {
      char path[MP_ERROR_PATH_MAX];
      mp__subpath(path, sizeof(path), b->where[v], ".bytes");
      return mp_error_set(err, MP_EOVERFLOW, path,
                          "total bytes overflow 64 bits at node '%s'", nd->id);
    }
    if (nd->kind == MP_KIND_ACTIVATION &&
        __builtin_add_overflow(g->saved_bytes, nd->saved_bytes, &g->saved_bytes)) {
      char path[MP_ERROR_PATH_MAX];
      mp__subpath(path, sizeof(path), b->where[v], ".saved_bytes");
      return mp_error_set(err, MP_EOVERFLOW, path,
                          "total saved bytes overflow 64 bits at node '%s'", nd->id);
    }
    if (nd->kind == MP_KIND_ACTIVATION) {
      g->n_activations++;
      g->fwd_time += nd->time;
      g->bwd_time += nd->bwd_time;
    }
  }
  {
    uint64_t all;
    if (__builtin_add_overflow(g->activation_bytes, g->const_bytes, &all) ||
        __builtin_add_overflow(all, g->activation_bytes, &all) ||
        __builtin_add_overflow(all, g->saved_bytes, &all))
      return mp_error_set(err, MP_EOVERFLOW, "$.nodes",
                          "activations plus their gradients, saved bytes and constant memory "
                          "overflow 64 bits");
  }
  if (!isfinite(g->fwd_time) || !isfinite(g->bwd_time))
    return mp_error_set(err, MP_EOVERFLOW, "$.nodes", "total time is not a finite number");
  if (g->n_activations == 0)
    return mp_error_set(err, MP_EEMPTY, "$.nodes",
                        "graph has no activation nodes: nothing to plan");

  /* Kahn's algorithm over the raw input lists (duplicates count twice on
   * both sides, so they cancel). */
  indeg = calloc(n, sizeof(uint32_t));
  order = malloc(n * sizeof(uint32_t));
  heap.a = malloc(n * sizeof(uint32_t));
  succ_tmp_off = calloc(n + 1, sizeof(uint32_t));
  if (!indeg || !order || !heap.a || !succ_tmp_off) goto out;
  for (v = 0; v < n; v++) {
    indeg[v] = g->nodes[v].n_inputs;
    for (k = 0; k < g->nodes[v].n_inputs; k++) succ_tmp_off[g->nodes[v].inputs[k] + 1]++;
  }
  for (v = 0; v < n; v++) succ_tmp_off[v + 1] += succ_tmp_off[v];
  succ_tmp = malloc((succ_tmp_off[n] ? succ_tmp_off[n] : 1) * sizeof(uint32_t));
  if (!succ_tmp) goto out;
  {
    uint32_t *fill = calloc(n, sizeof(uint32_t));
    if (!fill) goto out;
    for (v = 0; v < n; v++)
      for (k = 0; k < g->nodes[v].n_inputs; k++) {
        uint32_t u = g->nodes[v].inputs[k];
        succ_tmp[succ_tmp_off[u] + fill[u]++] = (uint32_t)v;
      }
    free(fill);
  }
  for (v = 0; v < n; v++)
    if (indeg[v] == 0) mp__heap_push(&heap, (uint32_t)v);
  while (heap.n > 0) {
    uint32_t u = mp__heap_pop(&heap);
    order[done++] = u;
    for (k = succ_tmp_off[u]; k < succ_tmp_off[u + 1]; k++)
      if (--indeg[succ_tmp[k]] == 0) mp__heap_push(&heap, succ_tmp[k]);
  }
  if (done < n) {
    rc = mp__report_cycle(g, indeg, err);
    goto out_keep_err;
  }

  /* Renumber into topological order. */
  newidx = malloc(n * sizeof(uint32_t));
  sorted = malloc(n * sizeof(mp_node_t));
  if (!newidx || !sorted) goto out;
  for (v = 0; v < n; v++) newidx[order[v]] = (uint32_t)v;
  for (v = 0; v < n; v++) {
    sorted[v] = g->nodes[order[v]];
    for (k = 0; k < sorted[v].n_inputs; k++) sorted[v].inputs[k] = newidx[sorted[v].inputs[k]];
  }
  free(g->nodes);
  g->nodes = sorted;
  sorted = NULL;
  /* Build state is indexed in insertion order; drop it before the CSR. */
  {
    size_t i;
    for (v = 0; v < n; v++) {
      for (i = 0; i < g->nodes[newidx[v]].n_inputs; i++) free(b->input_names[v][i]);
      free(b->input_names[v]);
      free(b->where[v]);
    }
    free(b->input_names);
    free(b->where);
    b->input_names = NULL;
    b->where = NULL;
    mp__strmap_free(&b->ids);
    free(b);
    g->build = NULL;
  }
  if (mp__build_csr(g) != 0) goto out;
  g->id_index = malloc(sizeof(*g->id_index));
  if (g->id_index == NULL) goto out;
  mp__strmap_init(g->id_index);
  for (v = 0; v < n; v++)
    if (mp__strmap_put(g->id_index, g->nodes[v].id, (uint32_t)v, NULL) < 0) goto out;
  g->finalized = 1;
  rc = 0;

out:
  if (rc == MP_ENOMEM) mp_error_set(err, MP_ENOMEM, "", "out of memory");
out_keep_err:
  free(indeg);
  free(order);
  free(heap.a);
  free(succ_tmp_off);
  free(succ_tmp);
  free(newidx);
  free(sorted);
  return rc;
}

long mp_graph_find(const mp_graph_t *g, const char *id) {
  uint32_t v;
  if (g->id_index == NULL || mp__strmap_get(g->id_index, id, &v) != 0) return -1;
  return (long)v;
}
