/* dims.c - symbolic dimensions (dims.h): evaluating laws, bindings, and
 * binding a graph at new values of its dimensions (mp_graph_bind), which
 * rebuilds the graph with each law's field evaluated there. */
#include "dims.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mp__law_fields[MP_LAW_NFIELDS] = {"bytes", "workspace_bytes", "saved_bytes", "time",
                                                           "bwd_time"};

const char *mp_law_field_name(mp_law_field_t f) {
  return (unsigned)f < MP_LAW_NFIELDS ? mp__law_fields[f] : "?";
}

int mp_law_field_is_size(mp_law_field_t f) { return f <= MP_LAW_SAVED_BYTES; }

int mp_dim_name_valid(const char *s) {
  size_t i;
  if (s == NULL || !(s[0] >= 'a' && s[0] <= 'z')) return 0;
  for (i = 1; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
  return i <= MP_DIM_NAME_MAX;
}

/* ---- Bindings ---------------------------------------------------------- */

void mp_binding_init(mp_binding_t *b, const char *base) {
  memset(b, 0, sizeof(*b));
  snprintf(b->base, sizeof(b->base), "%s", base ? base : "$.dims");
}

/* "<base>.<name>" (or "<base> <name>" for a CLI flag), cut to fit. */
static void mp__binding_path(char *out, size_t n, const char *base, const char *name) {
  snprintf(out, n, "%s%s%.*s", base, base[0] == '$' || base[0] == '?' ? "." : " ", MP_DIM_NAME_MAX + 8, name);
}

int mp_binding_set(mp_binding_t *b, const char *name, int64_t value, mp_error_t *err) {
  char path[MP_ERROR_PATH_MAX];
  size_t i;
  mp__binding_path(path, sizeof(path), b->base, name);
  if (!mp_dim_name_valid(name))
    return mp_error_set(err, MP_EINVAL, path,
                        "a dimension's name is 1 to %d characters of a-z, 0-9 and _, starting with a letter",
                        MP_DIM_NAME_MAX);
  for (i = 0; i < b->n; i++)
    if (strcmp(b->names[i], name) == 0)
      return mp_error_set(err, MP_EINVAL, path, "dimension %s is bound twice", name);
  if (b->n >= MP_DIMS_MAX)
    return mp_error_set(err, MP_EINVAL, b->base, "at most %d dimensions may be bound", MP_DIMS_MAX);
  if (value < 1 || value > MP_DIM_VALUE_MAX)
    return mp_error_set(err, MP_EINVAL, path, "a dimension's value must be a whole number from 1 to %lld, got %lld",
                        (long long)MP_DIM_VALUE_MAX, (long long)value);
  snprintf(b->names[b->n], sizeof(b->names[b->n]), "%s", name);
  b->values[b->n++] = value;
  return 0;
}

int mp_binding_parse_arg(mp_binding_t *b, const char *arg, mp_error_t *err) {
  const char *eq = strchr(arg, '=');
  char name[MP_DIM_NAME_MAX + 2];
  char *end;
  long long v;
  size_t n = eq ? (size_t)(eq - arg) : 0;
  if (eq == NULL || n == 0)
    return mp_error_set(err, MP_EINVAL, b->base, "expected NAME=VALUE (e.g. batch=64), got '%.64s'", arg);
  if (n > MP_DIM_NAME_MAX) n = MP_DIM_NAME_MAX + 1; /* too long: refused by name check */
  memcpy(name, arg, n);
  name[n] = '\0';
  errno = 0;
  v = strtoll(eq + 1, &end, 10);
  if (eq[1] == '\0' || *end != '\0' || errno != 0 || eq[1] == '+' || eq[1] == ' ') {
    char path[MP_ERROR_PATH_MAX];
    mp__binding_path(path, sizeof(path), b->base, name);
    return mp_error_set(err, MP_EINVAL, path, "a dimension's value must be a whole number, got '%.64s'", eq + 1);
  }
  return mp_binding_set(b, name, (int64_t)v, err);
}

/* ---- Laws -------------------------------------------------------------- */

/* "batch=4, seq=32" for messages. */
static void mp__values_text(char *out, size_t n, const mp_graph_dims_t *d, const int64_t *values) {
  size_t i, off = 0;
  out[0] = '\0';
  for (i = 0; i < d->n_dims && off < n; i++)
    off += (size_t)snprintf(out + off, n - off, "%s%s=%lld", i ? ", " : "", d->dims[i].name,
                            (long long)values[i]);
}

int mp_law_eval(const mp_law_t *law, size_t n_dims, const int64_t *values, uint64_t *u, double *t, char *why,
                size_t why_len) {
  uint32_t k;
  size_t i;
  uint8_t e;
  if (law->size) {
    int64_t sum = 0;
    for (k = 0; k < law->n_terms; k++) {
      int64_t term = law->terms[k].ci;
      for (i = 0; i < n_dims; i++)
        for (e = 0; e < law->terms[k].exp[i]; e++)
          if (__builtin_mul_overflow(term, values[i], &term)) goto overflow;
      if (__builtin_add_overflow(sum, term, &sum)) goto overflow;
    }
    if (sum < 0) {
      snprintf(why, why_len, "law gives %lld", (long long)sum);
      return MP_EINVAL;
    }
    *u = (uint64_t)sum;
    return 0;
  overflow:
    snprintf(why, why_len, "law overflows 64 bits");
    return MP_EOVERFLOW;
  } else {
    double sum = 0;
    for (k = 0; k < law->n_terms; k++) {
      double term = law->terms[k].c;
      for (i = 0; i < n_dims; i++)
        for (e = 0; e < law->terms[k].exp[i]; e++) term *= (double)values[i];
      sum += term;
    }
    if (!isfinite(sum) || sum < 0) {
      snprintf(why, why_len, "law gives %g", sum);
      return MP_EINVAL;
    }
    *t = sum == 0 ? 0 : sum; /* no -0 */
    return 0;
  }
}

int mp_law_nondecreasing(const mp_law_t *law, size_t dim) {
  uint32_t k;
  for (k = 0; k < law->n_terms; k++)
    if (law->terms[k].exp[dim] > 0 && (law->size ? law->terms[k].ci < 0 : law->terms[k].c < 0)) return 0;
  return 1;
}

void mp_law_free(mp_law_t *law) {
  if (law == NULL) return;
  free(law->terms);
  free(law);
}

mp_law_t *mp_law_copy(const mp_law_t *law) {
  mp_law_t *c;
  if (law == NULL) return NULL;
  if ((c = malloc(sizeof(*c))) == NULL) return NULL;
  *c = *law;
  c->terms = malloc((law->n_terms ? law->n_terms : 1) * sizeof(*c->terms));
  if (c->terms == NULL) {
    free(c);
    return NULL;
  }
  memcpy(c->terms, law->terms, law->n_terms * sizeof(*c->terms));
  return c;
}

/* ---- The dimensions of a graph ----------------------------------------- */

mp_graph_dims_t *mp_graph_dims_new(void) { return calloc(1, sizeof(mp_graph_dims_t)); }

void mp_graph_dims_free(mp_graph_dims_t *d) {
  size_t i;
  int f;
  if (d == NULL) return;
  for (i = 0; i < d->n_laws; i++)
    for (f = 0; f < MP_LAW_NFIELDS; f++) mp_law_free(d->laws[i].law[f]);
  free(d->laws);
  mp_law_free(d->param_law);
  free(d);
}

mp_graph_dims_t *mp_graph_dims_copy(const mp_graph_dims_t *d) {
  mp_graph_dims_t *c = mp_graph_dims_new();
  size_t i;
  int f;
  if (c == NULL) return NULL;
  c->n_dims = d->n_dims;
  memcpy(c->dims, d->dims, sizeof(c->dims));
  if (d->param_law && (c->param_law = mp_law_copy(d->param_law)) == NULL) goto fail;
  if (d->n_laws) {
    if ((c->laws = calloc(d->n_laws, sizeof(*c->laws))) == NULL) goto fail;
    c->n_laws = d->n_laws;
    for (i = 0; i < d->n_laws; i++) {
      c->laws[i].node = d->laws[i].node;
      c->laws[i].doc_index = d->laws[i].doc_index;
      for (f = 0; f < MP_LAW_NFIELDS; f++)
        if (d->laws[i].law[f] && (c->laws[i].law[f] = mp_law_copy(d->laws[i].law[f])) == NULL) goto fail;
    }
  }
  return c;
fail:
  mp_graph_dims_free(c);
  return NULL;
}

long mp_graph_dims_find(const mp_graph_dims_t *d, const char *name) {
  size_t i;
  for (i = 0; d && i < d->n_dims; i++)
    if (strcmp(d->dims[i].name, name) == 0) return (long)i;
  return -1;
}

const mp_node_laws_t *mp_graph_node_laws(const mp_graph_t *g, uint32_t v) {
  size_t lo = 0, hi;
  if (g->sym == NULL) return NULL;
  hi = g->sym->n_laws;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->sym->laws[mid].node < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->sym->n_laws && g->sym->laws[lo].node == v ? &g->sym->laws[lo] : NULL;
}

void mp_graph_forecast(const mp_graph_t *g, size_t *bounded_nodes, int *extrapolated) {
  const mp_graph_dims_t *d = g->sym;
  size_t i, k, n = 0;
  int f, x = 0;
  if (d != NULL) {
    for (i = 0; i < d->n_laws; i++) {
      int b = 0;
      for (f = 0; f < MP_LAW_NFIELDS; f++) b |= d->laws[i].law[f] && d->laws[i].law[f]->bound;
      n += (size_t)b;
    }
    if (d->param_law && d->param_law->bound) n++;
    for (i = 0; i < d->n_dims; i++) {
      int64_t lo = d->dims[i].exported_at[0], hi = lo;
      for (k = 1; k < d->dims[i].n_exported; k++) {
        if (d->dims[i].exported_at[k] < lo) lo = d->dims[i].exported_at[k];
        if (d->dims[i].exported_at[k] > hi) hi = d->dims[i].exported_at[k];
      }
      if (d->dims[i].n_exported && (d->dims[i].value < lo || d->dims[i].value > hi)) x = 1;
    }
  }
  *bounded_nodes = n;
  *extrapolated = x;
}

int mp_graph_dims_monotone(const mp_graph_t *g, size_t dim, mp_error_t *err) {
  const mp_graph_dims_t *d = g->sym;
  size_t i;
  int f;
  if (d == NULL || dim >= d->n_dims) return 0;
  if (d->param_law && !mp_law_nondecreasing(d->param_law, dim))
    return mp_error_set(err, MP_EINVAL, "$.param_bytes",
                        "the law has a negative coefficient on %s, so a larger %s might need less memory: "
                        "maximizing needs sizes that never shrink as it grows",
                        d->dims[dim].name, d->dims[dim].name);
  for (i = 0; i < d->n_laws; i++)
    for (f = 0; f <= MP_LAW_SAVED_BYTES; f++)
      if (d->laws[i].law[f] && !mp_law_nondecreasing(d->laws[i].law[f], dim)) {
        char path[MP_ERROR_PATH_MAX];
        snprintf(path, sizeof(path), "$.nodes[%u].%s", d->laws[i].doc_index, mp__law_fields[f]);
        return mp_error_set(err, MP_EINVAL, path,
                            "the law has a negative coefficient on %s, so a larger %s might need less memory: "
                            "maximizing needs sizes that never shrink as it grows",
                            d->dims[dim].name, d->dims[dim].name);
      }
  return 0;
}

/* ---- Binding ----------------------------------------------------------- */

/* Evaluate law `f` of node `nl` (or the param law when nl is NULL) at
 * values, with an error naming its document path. */
static int mp__eval_at(const mp_graph_dims_t *d, const mp_law_t *law, const mp_node_laws_t *nl, int f,
                       const int64_t *values, uint64_t *u, double *t, mp_error_t *err) {
  char why[96], at[160], path[MP_ERROR_PATH_MAX];
  int rc = mp_law_eval(law, d->n_dims, values, u, t, why, sizeof(why));
  if (rc == 0) return 0;
  if (nl)
    snprintf(path, sizeof(path), "$.nodes[%u].%s", nl->doc_index, mp__law_fields[f]);
  else
    snprintf(path, sizeof(path), "$.param_bytes");
  mp__values_text(at, sizeof(at), d, values);
  return mp_error_set(err, rc, path, "%s at %s", why, at);
}

int mp_graph_bind(const mp_graph_t *g, const mp_binding_t *b, const mp_limits_t *lim, mp_graph_t **out,
                  mp_error_t *err) {
  const mp_graph_dims_t *d = g->sym;
  int64_t values[MP_DIMS_MAX] = {0};
  const char **ids = NULL;
  mp_graph_t *ng = NULL;
  size_t i, li = 0, max_in = 0;
  int rc;

  *out = NULL;
  for (i = 0; i < b->n; i++) {
    char path[MP_ERROR_PATH_MAX];
    long k = mp_graph_dims_find(d, b->names[i]);
    mp__binding_path(path, sizeof(path), b->base, b->names[i]);
    if (k < 0) {
      char list[200];
      size_t j, off = 0;
      list[0] = '\0';
      for (j = 0; d && j < d->n_dims && off < sizeof(list); j++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", j ? ", " : "", d->dims[j].name);
      if (d == NULL || d->n_dims == 0)
        return mp_error_set(err, MP_EINVAL, path, "the graph has no dimension %s (it has no symbolic dimensions)",
                            b->names[i]);
      return mp_error_set(err, MP_EINVAL, path, "the graph has no dimension %s (its dimensions: %s)", b->names[i],
                          list);
    }
    if (b->values[i] < d->dims[k].min)
      return mp_error_set(err, MP_EINVAL, path, "%s must be at least %lld (its min), got %lld", b->names[i],
                          (long long)d->dims[k].min, (long long)b->values[i]);
  }
  for (i = 0; d && i < d->n_dims; i++) values[i] = d->dims[i].value;
  for (i = 0; i < b->n; i++) values[mp_graph_dims_find(d, b->names[i])] = b->values[i];

  if ((ng = mp_graph_new()) == NULL) goto nomem;
  if (mp_graph_set_name(ng, g->name) != 0 || mp_graph_set_time_unit(ng, g->time_unit) != 0) goto nomem;
  for (i = 0; i < g->n_warnings; i++)
    if (mp_graph_warn(ng, "%s", g->warnings[i]) != 0) goto nomem;
  ng->param_bytes = g->param_bytes;
  if (d && d->param_law &&
      (rc = mp__eval_at(d, d->param_law, NULL, 0, values, &ng->param_bytes, NULL, err)) != 0)
    goto fail;
  for (i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].n_inputs > max_in) max_in = g->nodes[i].n_inputs;
  if ((ids = malloc((max_in ? max_in : 1) * sizeof(*ids))) == NULL) goto nomem;
  for (i = 0; i < g->n_nodes; i++) {
    const mp_node_t *nd = &g->nodes[i];
    const mp_node_laws_t *nl = NULL;
    mp_node_spec_t s;
    uint32_t k;
    mp_node_spec_init(&s);
    s.id = nd->id;
    s.op = nd->op[0] ? nd->op : NULL;
    for (k = 0; k < nd->n_inputs; k++) ids[k] = g->nodes[nd->inputs[k]].id;
    s.inputs = ids;
    s.n_inputs = nd->n_inputs;
    s.bytes = nd->bytes;
    s.time = nd->time;
    s.bwd_time = nd->bwd_time;
    s.has_bwd_time = nd->has_bwd_time;
    s.kind = nd->kind;
    s.recompute = nd->recompute;
    s.stage = nd->stage;
    s.bwd_reads = nd->bwd_reads;
    s.workspace_bytes = nd->workspace_bytes;
    s.saved_bytes = nd->saved_bytes;
    s.grad_inplace = nd->grad_inplace;
    s.where = "$.nodes";
    if (d && li < d->n_laws && d->laws[li].node == i) nl = &d->laws[li++];
    if (nl) {
      uint64_t *sizes[3] = {&s.bytes, &s.workspace_bytes, &s.saved_bytes};
      double *times[2] = {&s.time, &s.bwd_time};
      int f;
      for (f = 0; f < MP_LAW_NFIELDS; f++) {
        if (nl->law[f] == NULL) continue;
        rc = mp__eval_at(d, nl->law[f], nl, f, values, f <= MP_LAW_SAVED_BYTES ? sizes[f] : NULL,
                         f > MP_LAW_SAVED_BYTES ? times[f - MP_LAW_TIME] : NULL, err);
        if (rc != 0) goto fail;
      }
    }
    if ((rc = mp_graph_add_node(ng, &s, lim, err)) != 0) goto fail;
  }
  if ((rc = mp_graph_finalize(ng, lim, err)) != 0) goto fail;
  if (d) {
    if ((ng->sym = mp_graph_dims_copy(d)) == NULL) goto nomem;
    for (i = 0; i < d->n_dims; i++) ng->sym->dims[i].value = values[i];
  }
  free(ids);
  *out = ng;
  return 0;
nomem:
  rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
fail:
  free(ids);
  mp_graph_free(ng);
  return rc;
}
