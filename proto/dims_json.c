/* dims_json.c - symbolic dimensions on the wire (dims_json.h): the "dims"
 * declaration and the laws of memplan.graph/2, a request's binding, and the
 * answer fields of a plan on a symbolic graph. */
#include "dims_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "json_util.h"

static const char *const mp__dim_keys[] = {"exported_at", "default", "min", NULL};
static const char *const mp__law_keys[] = {"terms", "bound", NULL};

/* A whole number in [lo, MP_DIM_VALUE_MAX] at `path`. */
static int mp__dim_int(json_t *v, const char *path, const char *field, int64_t lo, int64_t *out,
                       mp_error_t *err) {
  json_int_t x;
  if (!json_is_integer(v))
    return mp_error_set(err, MP_EINVAL, path, "%s must be a whole number, got %s", field, mp__jtype(v));
  x = json_integer_value(v);
  if (x < lo || x > MP_DIM_VALUE_MAX)
    return mp_error_set(err, MP_EINVAL, path, "%s must be from %lld to %lld, got %lld", field, (long long)lo,
                        (long long)MP_DIM_VALUE_MAX, (long long)x);
  *out = (int64_t)x;
  return 0;
}

static int mp__cmp_dim(const void *a, const void *b) {
  return strcmp(((const mp_dim_t *)a)->name, ((const mp_dim_t *)b)->name);
}

int mp__dims_read(json_t *v, const char *path, mp_graph_dims_t *d, mp_error_t *err) {
  const char *name;
  json_t *dv;
  if (!json_is_object(v))
    return mp_error_set(err, MP_EINVAL, path, "dims must be an object of dimensions, got %s", mp__jtype(v));
  if (json_object_size(v) > MP_DIMS_MAX)
    return mp_error_set(err, MP_ELIMIT, path, "a graph has at most %d dimensions, got %zu", MP_DIMS_MAX,
                        json_object_size(v));
  d->n_dims = 0;
  json_object_foreach(v, name, dv) {
    char p[MP_ERROR_PATH_MAX], q[MP_ERROR_PATH_MAX];
    mp_dim_t *dim = &d->dims[d->n_dims];
    json_t *x;
    size_t k;
    int rc;
    mp__key_path(p, sizeof(p), path, name);
    if (!mp_dim_name_valid(name))
      return mp_error_set(err, MP_EINVAL, p,
                          "a dimension's name is 1 to %d characters of a-z, 0-9 and _, starting with a letter",
                          MP_DIM_NAME_MAX);
    if (!json_is_object(dv))
      return mp_error_set(err, MP_EINVAL, p, "a dimension must be an object {\"exported_at\", \"default\", "
                          "\"min\"}, got %s", mp__jtype(dv));
    if ((rc = mp__check_keys(dv, p, mp__dim_keys, "exported_at, default, min", err)) != 0) return rc;
    snprintf(dim->name, sizeof(dim->name), "%s", name);
    dim->min = 1;
    if ((x = json_object_get(dv, "min")) != NULL) {
      mp__join(q, sizeof(q), p, ".min");
      if ((rc = mp__dim_int(x, q, "min", 1, &dim->min, err)) != 0) return rc;
    }
    mp__join(q, sizeof(q), p, ".default");
    if ((x = json_object_get(dv, "default")) == NULL)
      return mp_error_set(err, MP_EINVAL, q, "missing required field \"default\" (the value used when a request "
                          "binds none)");
    if ((rc = mp__dim_int(x, q, "default", dim->min, &dim->value, err)) != 0) return rc;
    mp__join(q, sizeof(q), p, ".exported_at");
    if ((x = json_object_get(dv, "exported_at")) == NULL)
      return mp_error_set(err, MP_EINVAL, q, "missing required field \"exported_at\" (the values the export "
                          "measured at)");
    if (!json_is_array(x) || json_array_size(x) == 0 || json_array_size(x) > MP_DIM_EXPORTED_MAX)
      return mp_error_set(err, MP_EINVAL, q, "exported_at must be an array of 1 to %d whole numbers",
                          MP_DIM_EXPORTED_MAX);
    dim->n_exported = json_array_size(x);
    for (k = 0; k < dim->n_exported; k++) {
      char r[MP_ERROR_PATH_MAX], sfx[24];
      snprintf(sfx, sizeof(sfx), "[%zu]", k);
      mp__join(r, sizeof(r), q, sfx);
      if ((rc = mp__dim_int(json_array_get(x, k), r, "exported_at", 1, &dim->exported_at[k], err)) != 0)
        return rc;
    }
    d->n_dims++;
  }
  /* Name order: the same graph whatever order its keys came in. */
  qsort(d->dims, d->n_dims, sizeof(d->dims[0]), mp__cmp_dim);
  return 0;
}

int mp__law_read(json_t *v, const char *path, int size, const mp_graph_dims_t *d, mp_law_t **out,
                 mp_error_t *err) {
  char p[MP_ERROR_PATH_MAX];
  mp_law_t *law;
  json_t *terms, *x;
  size_t k;
  int rc;

  *out = NULL;
  if ((rc = mp__check_keys(v, path, mp__law_keys, "terms, bound", err)) != 0) return rc;
  mp__join(p, sizeof(p), path, ".terms");
  if ((terms = json_object_get(v, "terms")) == NULL)
    return mp_error_set(err, MP_EINVAL, p, "missing required field \"terms\" (a law is {\"terms\": [{\"c\": ..., "
                        "\"batch\": 1}, ...]})");
  if (!json_is_array(terms) || json_array_size(terms) == 0 || json_array_size(terms) > MP_LAW_TERMS_MAX)
    return mp_error_set(err, MP_EINVAL, p, "terms must be an array of 1 to %d term objects", MP_LAW_TERMS_MAX);
  if ((law = calloc(1, sizeof(*law))) == NULL ||
      (law->terms = calloc(json_array_size(terms), sizeof(*law->terms))) == NULL) {
    free(law);
    return mp_error_set(err, MP_ENOMEM, path, "out of memory");
  }
  law->size = size;
  law->n_terms = (uint32_t)json_array_size(terms);
  if ((x = json_object_get(v, "bound")) != NULL) {
    mp__join(p, sizeof(p), path, ".bound");
    if (!json_is_boolean(x)) {
      rc = mp_error_set(err, MP_EINVAL, p, "bound must be a boolean, got %s", mp__jtype(x));
      goto fail;
    }
    law->bound = json_is_true(x);
  }
  for (k = 0; k < law->n_terms; k++) {
    json_t *t = json_array_get(terms, k), *e;
    mp_law_term_t *term = &law->terms[k];
    char tp[MP_ERROR_PATH_MAX], sfx[32];
    const char *key;
    unsigned degree = 0;
    snprintf(sfx, sizeof(sfx), ".terms[%zu]", k);
    mp__join(tp, sizeof(tp), path, sfx);
    if (!json_is_object(t)) {
      rc = mp_error_set(err, MP_EINVAL, tp, "a term must be an object, got %s", mp__jtype(t));
      goto fail;
    }
    mp__join(p, sizeof(p), tp, ".c");
    if ((x = json_object_get(t, "c")) == NULL) {
      rc = mp_error_set(err, MP_EINVAL, p, "missing required field \"c\" (the term's coefficient)");
      goto fail;
    }
    if (size) {
      if (!json_is_integer(x)) {
        rc = mp_error_set(err, MP_EINVAL, p, "a size law's coefficient must be an integer, got %s", mp__jtype(x));
        goto fail;
      }
      term->ci = json_integer_value(x);
      term->c = (double)term->ci;
    } else {
      if (!json_is_number(x) || !isfinite(json_number_value(x))) {
        rc = mp_error_set(err, MP_EINVAL, p, "a time law's coefficient must be a number, got %s", mp__jtype(x));
        goto fail;
      }
      term->c = json_number_value(x);
    }
    json_object_foreach(t, key, e) {
      long di;
      if (strcmp(key, "c") == 0) continue;
      mp__key_path(p, sizeof(p), tp, key);
      if ((di = mp_graph_dims_find(d, key)) < 0) {
        rc = mp_error_set(err, MP_EINVAL, p, "unknown dimension \"%.40s\": a term's keys are \"c\" and the "
                          "dimensions the graph declares in \"dims\"", key);
        goto fail;
      }
      if (!json_is_integer(e) || json_integer_value(e) < 1 || json_integer_value(e) > MP_LAW_EXP_MAX) {
        rc = mp_error_set(err, MP_EINVAL, p, "an exponent must be a whole number from 1 to %d", MP_LAW_EXP_MAX);
        goto fail;
      }
      term->exp[di] = (uint8_t)json_integer_value(e);
      degree += term->exp[di];
    }
    if (degree > MP_LAW_DEGREE_MAX) {
      rc = mp_error_set(err, MP_EINVAL, tp, "a term's total degree is at most %d, got %u", MP_LAW_DEGREE_MAX,
                        degree);
      goto fail;
    }
  }
  *out = law;
  return 0;
fail:
  mp_law_free(law);
  return rc;
}

int mp__law_value(const mp_law_t *law, const char *path, const mp_graph_dims_t *d, uint64_t *u, double *t,
                  mp_error_t *err) {
  int64_t values[MP_DIMS_MAX] = {0};
  char why[96], at[160];
  size_t i, off = 0;
  int rc;
  for (i = 0; i < d->n_dims; i++) values[i] = d->dims[i].value;
  if ((rc = mp_law_eval(law, d->n_dims, values, u, t, why, sizeof(why))) == 0) return 0;
  at[0] = '\0';
  for (i = 0; i < d->n_dims && off < sizeof(at); i++)
    off += (size_t)snprintf(at + off, sizeof(at) - off, "%s%s=%lld", i ? ", " : "", d->dims[i].name,
                            (long long)values[i]);
  return mp_error_set(err, rc, path, "%s at %s", why, d->n_dims ? at : "no dimension");
}

json_t *mp__dims_write(const mp_graph_dims_t *d) {
  json_t *o = json_object();
  size_t i, k;
  int bad = o == NULL;
  for (i = 0; !bad && i < d->n_dims; i++) {
    json_t *dj = json_object(), *ea;
    if (mp_json_set(o, d->dims[i].name, dj) != 0 || mp_json_set(dj, "exported_at", ea = json_array()) != 0) {
      bad = 1;
      break;
    }
    for (k = 0; !bad && k < d->dims[i].n_exported; k++)
      bad |= json_array_append_new(ea, json_integer(d->dims[i].exported_at[k]));
    bad |= mp_json_set(dj, "default", json_integer(d->dims[i].value)) ||
           mp_json_set(dj, "min", json_integer(d->dims[i].min));
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *mp__law_write(const mp_law_t *law, const mp_graph_dims_t *d) {
  json_t *o = json_object(), *terms = json_array();
  uint32_t k;
  size_t i;
  int bad = mp_json_set(o, "terms", terms);
  for (k = 0; !bad && k < law->n_terms; k++) {
    json_t *t = json_object();
    bad |= json_array_append_new(terms, t) != 0 || t == NULL;
    bad |= bad || mp_json_set(t, "c", law->size ? json_integer(law->terms[k].ci) : mp_json_number(law->terms[k].c));
    for (i = 0; !bad && i < d->n_dims; i++)
      if (law->terms[k].exp[i]) bad |= mp_json_set(t, d->dims[i].name, json_integer(law->terms[k].exp[i]));
  }
  if (!bad && law->bound) bad |= mp_json_set(o, "bound", json_true());
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ---- Requests and answers ---------------------------------------------- */

int mp_binding_from_json(const json_t *v, mp_binding_t *b, mp_error_t *err) {
  const char *name;
  json_t *x;
  if (!json_is_object(v))
    return mp_error_set(err, MP_EINVAL, b->base, "dims must be an object such as {\"batch\": 64}, got %s",
                        mp__jtype(v));
  if (json_object_size(v) > MP_DIMS_MAX)
    return mp_error_set(err, MP_EINVAL, b->base, "at most %d dimensions may be bound, got %zu", MP_DIMS_MAX,
                        json_object_size(v));
  json_object_foreach((json_t *)v, name, x) {
    if (!json_is_integer(x)) {
      char p[MP_ERROR_PATH_MAX];
      mp__key_path(p, sizeof(p), b->base, name);
      return mp_error_set(err, MP_EINVAL, p, "a dimension's value must be a whole number, got %s", mp__jtype(x));
    }
    if (mp_binding_set(b, name, (int64_t)json_integer_value(x), err) != 0) {
      /* an odd name gets a path jansson's escaping keeps readable */
      if (!mp_dim_name_valid(name)) mp__key_path(err->path, sizeof(err->path), b->base, name);
      return err->code;
    }
  }
  return 0;
}

json_t *mp_binding_to_json(const mp_graph_t *g) {
  json_t *o = json_object();
  size_t i;
  for (i = 0; o && g->sym && i < g->sym->n_dims; i++)
    if (mp_json_set(o, g->sym->dims[i].name, json_integer(g->sym->dims[i].value)) != 0) {
      json_decref(o);
      return NULL;
    }
  return o;
}

json_t *mp_forecast_to_json(const mp_graph_t *g) {
  size_t bounded;
  int extrapolated;
  mp_graph_forecast(g, &bounded, &extrapolated);
  return json_pack("{s:I,s:b}", "bounded_nodes", (json_int_t)bounded, "extrapolated", extrapolated);
}

int mp_forecast_json_add(json_t *answer, const mp_graph_t *g) {
  size_t i;
  json_t *w;
  if (g == NULL || g->sym == NULL) return 0;
  if (mp_json_set(answer, "dims", mp_binding_to_json(g)) || mp_json_set(answer, "forecast", mp_forecast_to_json(g)))
    return -1;
  if (g->n_warnings == 0) return 0;
  if (mp_json_set(answer, "warnings", w = json_array())) return -1;
  for (i = 0; i < g->n_warnings; i++)
    if (json_array_append_new(w, json_string(g->warnings[i])) != 0) return -1;
  return 0;
}
