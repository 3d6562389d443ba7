/* request_json.c - validation of the daemon's request bodies and of the
 * device model's values (see request_json.h). Every rejection names the
 * field by its JSON path. */
#include "request_json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims_json.h"
#include "strategy.h"
#include "units.h"

int mp_is_graph_hash(const char *s) {
  size_t i;
  if (s == NULL) return 0;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return i == 64;
}

int mp_json_budget(const json_t *v, const char *path, uint64_t *out, mp_error_t *err) {
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0) return mp_error_set(err, MP_EINVAL, path, "a budget cannot be negative");
    *out = (uint64_t)x;
    return 0;
  }
  if (json_is_real(v)) {
    /* 2e9, as Python and JavaScript print large numbers. A double holds every
     * integer up to 2^53 exactly; above that the number read may not be the
     * one written, so such budgets must be integers or strings. A fraction
     * of a byte is refused, as in strings without a unit. */
    double x = json_real_value(v);
    if (!(x >= 0)) return mp_error_set(err, MP_EINVAL, path, "a budget cannot be negative");
    if (x != floor(x))
      return mp_error_set(err, MP_EINVAL, path,
                          "a budget is a whole number of bytes: %.17g has a fraction (round it, or write it "
                          "with a unit such as \"1.5GiB\")", x);
    if (x >= 9007199254740992.0)
      return mp_error_set(err, MP_EINVAL, path,
                          "a budget of 2^53 bytes or more must be written as an integer or a "
                          "string such as \"12PiB\" (a JSON real is not exact there)");
    *out = (uint64_t)x;
    return 0;
  }
  if (json_is_string(v)) {
    mp_error_t e;
    int rc = mp_parse_bytes(json_string_value(v), out, &e);
    if (rc != 0) return mp_error_set(err, MP_EINVAL, path, "%s", e.message);
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path,
                      "a budget is a number of bytes or a string such as \"12GiB\" or \"2Gi\"");
}

/* ---- device values as text ---- */

/* The whole of `s` as a plain number (strtod syntax, no trailing text). */
static int mp__plain_number(const char *s, double *out) {
  char *end;
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) return -1;
  errno = 0;
  *out = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE) return -1;
  return 0;
}

int mp_parse_rate(const char *s, double *out, mp_error_t *err) {
  char buf[128];
  size_t n = s ? strlen(s) : 0;
  double d;
  if (n == 0 || n >= sizeof(buf))
    return mp_error_set(err, MP_EINVAL, "", "a bandwidth is a number of bytes per second or a string such as \"12GB/s\"");
  memcpy(buf, s, n + 1);
  /* "12GB/s" is "12GB" per second */
  if (n >= 2 && buf[n - 2] == '/' && (buf[n - 1] == 's' || buf[n - 1] == 'S')) buf[n - 2] = '\0';
  if (mp__plain_number(buf, &d) != 0) {
    uint64_t b;
    mp_error_t e;
    if (mp_parse_bytes(buf, &b, &e) != 0)
      return mp_error_set(err, MP_EINVAL, "",
                          "'%.100s' is not a bandwidth (bytes per second, e.g. 12e9, 12GB/s or 11GiB/s)", s);
    d = (double)b;
  }
  if (!isfinite(d) || d <= 0)
    return mp_error_set(err, MP_EINVAL, "", "a bandwidth must be a positive number of bytes per second");
  *out = d;
  return 0;
}

int mp_parse_seconds(const char *s, double *out, mp_error_t *err) {
  static const struct {
    const char *unit;
    double scale;
  } units[] = {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  char *end;
  double d;
  size_t i;
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
    return mp_error_set(err, MP_EINVAL, "", "a duration is a number of seconds or a string such as \"10us\"");
  errno = 0;
  d = strtod(s, &end);
  if (end == s || errno == ERANGE)
    return mp_error_set(err, MP_EINVAL, "", "'%.100s' is not a duration (seconds, or a number with s, ms, us or ns)", s);
  for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
    if (strcmp(end, units[i].unit) == 0) break;
  if (i == sizeof(units) / sizeof(units[0]))
    return mp_error_set(err, MP_EINVAL, "", "'%.100s' is not a duration (seconds, or a number with s, ms, us or ns)", s);
  d *= units[i].scale;
  if (!isfinite(d) || d < 0)
    return mp_error_set(err, MP_EINVAL, "", "a duration must be a non-negative number of seconds");
  *out = d;
  return 0;
}

/* ---- the device object ---- */

/* A bandwidth field: a JSON number (checked by mp_device_check) or text. */
static int mp__json_rate(const json_t *v, const char *path, double *out, mp_error_t *err) {
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return 0;
  }
  if (json_is_string(v)) {
    mp_error_t e;
    if (mp_parse_rate(json_string_value(v), out, &e) != 0)
      return mp_error_set(err, MP_EINVAL, path, "%s", e.message);
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path,
                      "must be a positive number of bytes per second or a string such as \"12GB/s\"");
}

/* A duration field: a JSON number of seconds (checked by mp_device_check) or text. */
static int mp__json_seconds(const json_t *v, const char *path, double *out, mp_error_t *err) {
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return 0;
  }
  if (json_is_string(v)) {
    mp_error_t e;
    if (mp_parse_seconds(json_string_value(v), out, &e) != 0)
      return mp_error_set(err, MP_EINVAL, path, "%s", e.message);
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path, "must be a number of seconds or a string such as \"10us\"");
}

/* The prefetch field: "jit" or a whole number of backward steps (0 is jit
 * too). The range is mp_device_check's; a value past it is refused here
 * already, before it could wrap in a uint32_t. */
static int mp__json_prefetch(const json_t *v, const char *path, uint32_t *out, mp_error_t *err) {
  if (json_is_string(v) && strcmp(json_string_value(v), "jit") == 0) {
    *out = 0;
    return 0;
  }
  if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= MP_DEVICE_MAX_PREFETCH) {
    *out = (uint32_t)json_integer_value(v);
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path,
                      "must be \"jit\" (just in time) or a number of backward steps from 1 to %d",
                      MP_DEVICE_MAX_PREFETCH);
}

int mp_parse_prefetch(const char *s, uint32_t *out, mp_error_t *err) {
  unsigned long v = 0;
  size_t i;
  if (s != NULL && strcmp(s, "jit") == 0) {
    *out = 0;
    return 0;
  }
  /* digits only: no sign, no space, no exponent */
  for (i = 0; s != NULL && s[i] >= '0' && s[i] <= '9' && v <= MP_DEVICE_MAX_PREFETCH; i++)
    v = v * 10 + (unsigned long)(s[i] - '0');
  if (s == NULL || i == 0 || s[i] != '\0' || v > MP_DEVICE_MAX_PREFETCH)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%.100s' is not a prefetch: jit (just in time) or a number of backward steps "
                        "from 1 to %d",
                        s ? s : "", MP_DEVICE_MAX_PREFETCH);
  *out = (uint32_t)v;
  return 0;
}

int mp_json_device(const json_t *v, const char *path, mp_device_t *d, mp_error_t *err) {
  static const char *const keys[] = {"h2d_bandwidth", "d2h_bandwidth", "latency", "copy_engines",
                                     "host_budget", "time_unit_seconds", "intra_layer_reuse", "prefetch",
                                     "allocator", NULL};
  char fp[MP_ERROR_PATH_MAX];
  const char *k;
  json_t *f;
  int rc;
  if (!json_is_object(v))
    return mp_error_set(err, MP_EINVAL, path,
                        "must be an object with h2d_bandwidth, d2h_bandwidth, latency, copy_engines, "
                        "host_budget, time_unit_seconds, intra_layer_reuse, prefetch and allocator (all optional)");
  json_object_foreach((json_t *)v, k, f) {
    size_t i;
    int found = 0;
    for (i = 0; keys[i]; i++)
      if (strcmp(keys[i], k) == 0) found = 1;
    snprintf(fp, sizeof(fp), "%.40s.%.200s", path, k);
    if (!found)
      return mp_error_set(err, MP_EINVAL, fp,
                          "unknown field (the device has h2d_bandwidth, d2h_bandwidth, latency, "
                          "copy_engines, host_budget, time_unit_seconds, intra_layer_reuse, prefetch and allocator)");
    if (strcmp(k, "h2d_bandwidth") == 0) {
      rc = mp__json_rate(f, fp, &d->h2d_bytes_per_s, err);
    } else if (strcmp(k, "d2h_bandwidth") == 0) {
      rc = mp__json_rate(f, fp, &d->d2h_bytes_per_s, err);
    } else if (strcmp(k, "latency") == 0) {
      rc = mp__json_seconds(f, fp, &d->latency_s, err);
    } else if (strcmp(k, "time_unit_seconds") == 0) {
      rc = mp__json_seconds(f, fp, &d->time_unit_s, err);
    } else if (strcmp(k, "copy_engines") == 0) {
      json_int_t e = json_is_integer(f) ? json_integer_value(f) : 0;
      if (e != 1 && e != 2)
        return mp_error_set(err, MP_EINVAL, fp, "must be 1 (one queue for both directions) or 2 (one each)");
      d->copy_engines = (int)e;
      rc = 0;
    } else if (strcmp(k, "host_budget") == 0) {
      if (json_is_null(f)) {
        d->host_bytes = UINT64_MAX;
        rc = 0;
      } else {
        rc = mp_json_budget(f, fp, &d->host_bytes, err);
      }
    } else if (strcmp(k, "prefetch") == 0) {
      rc = mp__json_prefetch(f, fp, &d->prefetch_lookahead, err);
    } else if (strcmp(k, "allocator") == 0) {
      if (!json_is_string(f) || mp_allocator_parse(json_string_value(f), &d->allocator) != 0)
        return mp_error_set(err, MP_EINVAL, fp,
                            "must be \"exact\" (tensors take their bytes) or \"pytorch-cuda\" (rounded up to "
                            "512-byte blocks as PyTorch's CUDA caching allocator does)");
      rc = 0;
    } else {
      if (!json_is_boolean(f)) return mp_error_set(err, MP_EINVAL, fp, "must be true or false");
      d->intra_layer_reuse = json_is_true(f);
      rc = 0;
    }
    if (rc != 0) return rc;
  }
  {
    /* mp_device_check names "$.device.<field>"; keep that field under `path` */
    mp_error_t e;
    mp_error_clear(&e);
    if ((rc = mp_device_check(d, &e)) != 0) {
      const char *dot = strrchr(e.path, '.');
      snprintf(fp, sizeof(fp), "%.40s%.200s", path, dot ? dot : "");
      return mp_error_set(err, rc, fp, "%s", e.message);
    }
  }
  return 0;
}

int mp_swap_check(mp_solver_t solver, int swap_given, int *swap, mp_error_t *err) {
  if (mp_solver_swaps(solver)) {
    if (swap_given && !*swap)
      return mp_error_set(err, MP_EINVAL, "$.swap",
                          "the %s solver always moves activations to host memory; leave swap out or set it "
                          "to true",
                          mp_solver_name(solver));
    *swap = 1;
    return 0;
  }
  if (*swap && solver != MP_SOLVER_AUTO)
    return mp_error_set(err, MP_EINVAL, "$.swap",
                        "swap needs the solver auto, swap, hybrid or layrub; %s only recomputes",
                        mp_solver_name(solver));
  return 0;
}

/* ---- request bodies ---- */

/* The graph source: exactly one of "graph" and "graph_hash"; and
 * "graph_name", a name for an inline graph that carries none (Kusumoto
 * text has no place for one: clients send the file's name). */
static int mp__graph_source(json_t *root, json_t **graph, char hash[65], const char **name, mp_error_t *err) {
  json_t *g = json_object_get(root, "graph");
  json_t *h = json_object_get(root, "graph_hash");
  json_t *n = json_object_get(root, "graph_name");
  *graph = NULL;
  *name = NULL;
  hash[0] = '\0';
  if (n != NULL) {
    if (!json_is_string(n) || json_string_length(n) == 0 || json_string_length(n) > MP_GRAPH_NAME_MAX)
      return mp_error_set(err, MP_EINVAL, "$.graph_name", "must be a string of 1 to %d bytes", MP_GRAPH_NAME_MAX);
    if (g == NULL) return mp_error_set(err, MP_EINVAL, "$.graph_name", "names a graph sent inline (graph)");
    *name = json_string_value(n);
  }
  if (g != NULL && h != NULL)
    return mp_error_set(err, MP_EINVAL, "$.graph_hash", "give either graph or graph_hash, not both");
  if (g == NULL && h == NULL)
    return mp_error_set(err, MP_EINVAL, "$.graph", "missing: the graph to plan (or graph_hash)");
  if (h != NULL) {
    if (!json_is_string(h) || !mp_is_graph_hash(json_string_value(h)))
      return mp_error_set(err, MP_EINVAL, "$.graph_hash",
                          "must be a graph hash: 64 lowercase hexadecimal digits");
    memcpy(hash, json_string_value(h), 65);
    return 0;
  }
  if (!json_is_object(g) && !json_is_string(g))
    return mp_error_set(err, MP_EINVAL, "$.graph",
                        "must be a graph object (native or node-link) or Kusumoto text as a string");
  *graph = g;
  return 0;
}

static int mp__enum(json_t *root, const char *key, int (*parse)(const char *, void *), void *out,
                    const char *allowed, mp_error_t *err) {
  char path[64];
  json_t *v = json_object_get(root, key);
  if (v == NULL) return 0;
  snprintf(path, sizeof(path), "$.%s", key);
  if (!json_is_string(v) || parse(json_string_value(v), out) != 0)
    return mp_error_set(err, MP_EINVAL, path, "must be one of %s", allowed);
  return 0;
}

static int mp__parse_solver(const char *s, void *out) { return mp_solver_parse(s, out); }
static int mp__parse_objective(const char *s, void *out) { return mp_objective_parse(s, out); }
static int mp__parse_accounting(const char *s, void *out) { return mp_accounting_parse(s, out); }

static int mp__known_keys(json_t *root, const char *const *keys, mp_error_t *err) {
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    size_t i;
    int found = 0;
    for (i = 0; keys[i]; i++)
      if (strcmp(keys[i], k) == 0) found = 1;
    if (!found) {
      char path[MP_ERROR_PATH_MAX];
      snprintf(path, sizeof(path), "$.%.200s", k);
      return mp_error_set(err, MP_EINVAL, path, "unknown field");
    }
  }
  return 0;
}

/* "swap" and "device", shared by both requests (after "solver"). */
static int mp__migration(json_t *root, mp_solver_t solver, int *swap, mp_device_t *device,
                         mp_error_t *err) {
  json_t *v = json_object_get(root, "swap");
  int rc;
  *swap = 0;
  mp_device_init(device);
  if (v != NULL) {
    if (!json_is_boolean(v)) return mp_error_set(err, MP_EINVAL, "$.swap", "must be true or false");
    *swap = json_is_true(v);
  }
  if ((rc = mp_swap_check(solver, v != NULL, swap, err)) != 0) return rc;
  v = json_object_get(root, "device");
  if (v != NULL && (rc = mp_json_device(v, "$.device", device, err)) != 0) return rc;
  return 0;
}

/* "dims": the binding, base "$.dims". */
static int mp__dims(json_t *root, mp_binding_t *b, mp_error_t *err) {
  json_t *v = json_object_get(root, "dims");
  mp_binding_init(b, "$.dims");
  return v ? mp_binding_from_json(v, b, err) : 0;
}

#define MP__SOLVERS \
  "\"auto\", \"exact\", \"window\", \"closures\" (or \"approx\"), \"chain\", \"memonger\", " \
  "\"sqrt\", \"none\", \"swap\", \"hybrid\", \"layrub\""

int mp_plan_request_parse(json_t *root, double max_wait_s, mp_plan_request_t *out,
                          mp_error_t *err) {
  static const char *const keys[] = {"graph",    "graph_hash", "budget", "solver", "objective", "accounting",
                                     "wait",     "timeline",   "swap",   "device", "graph_name", "dims", NULL};
  json_t *v;
  int rc;

  memset(out, 0, sizeof(*out));
  out->solver = MP_SOLVER_AUTO;
  out->objective = MP_OBJECTIVE_TIME;
  out->accounting = MP_ACCOUNTING_DEFAULT;
  mp_device_init(&out->device);
  if (!json_is_object(root)) return mp_error_set(err, MP_EINVAL, "$", "the request must be a JSON object");
  if ((rc = mp__known_keys(root, keys, err)) != 0) return rc;
  if ((rc = mp__graph_source(root, &out->graph, out->graph_hash, &out->graph_name, err)) != 0) return rc;
  v = json_object_get(root, "budget");
  if (v == NULL) return mp_error_set(err, MP_EINVAL, "$.budget", "missing: the memory budget");
  if ((rc = mp_json_budget(v, "$.budget", &out->budget, err)) != 0) return rc;
  if ((rc = mp__enum(root, "solver", mp__parse_solver, &out->solver, MP__SOLVERS, err)) != 0 ||
      (rc = mp__enum(root, "objective", mp__parse_objective, &out->objective,
                     "\"time\", \"memory\"", err)) != 0 ||
      (rc = mp__enum(root, "accounting", mp__parse_accounting, &out->accounting,
                     "\"default\", \"reference\"", err)) != 0)
    return rc;
  if ((rc = mp__migration(root, out->solver, &out->swap, &out->device, err)) != 0) return rc;
  if ((rc = mp__dims(root, &out->dims, err)) != 0) return rc;
  v = json_object_get(root, "wait");
  if (v != NULL) {
    double w;
    if (!json_is_number(v)) return mp_error_set(err, MP_EINVAL, "$.wait", "must be a number of seconds");
    w = json_number_value(v);
    if (!isfinite(w) || w < 0 || w > max_wait_s)
      return mp_error_set(err, MP_EINVAL, "$.wait", "must be between 0 and %g seconds", max_wait_s);
    out->wait_s = w;
  }
  v = json_object_get(root, "timeline");
  if (v != NULL) {
    if (!json_is_boolean(v)) return mp_error_set(err, MP_EINVAL, "$.timeline", "must be true or false");
    out->timeline = json_is_true(v);
  }
  return 0;
}

/* "dims", then "maximize" and "max_value" of a fit (after "budgets",
 * "devices" and "least"). */
static int mp__fit_dims(json_t *root, mp_fit_request_t *out, mp_error_t *err) {
  json_t *v = json_object_get(root, "maximize"), *m = json_object_get(root, "max_value");
  size_t i;
  int rc;
  if ((rc = mp__dims(root, &out->dims, err)) != 0) return rc;
  if (v == NULL) {
    if (m != NULL) return mp_error_set(err, MP_EINVAL, "$.max_value", "limits a maximize; give \"maximize\" too");
    return 0;
  }
  if (!json_is_string(v) || !mp_dim_name_valid(json_string_value(v)))
    return mp_error_set(err, MP_EINVAL, "$.maximize", "must name a dimension of the graph (such as \"batch\")");
  snprintf(out->maximize, sizeof(out->maximize), "%s", json_string_value(v));
  if (out->least) return mp_error_set(err, MP_EINVAL, "$.least", "a maximize answers no least budget");
  if (out->n_devices > 0 && out->n_budgets > 0)
    return mp_error_set(err, MP_EINVAL, "$.budgets",
                        "a maximize takes one budget or \"devices\" (each answered at its usable bytes), not both");
  if (out->n_devices == 0 && out->n_budgets != 1)
    return mp_error_set(err, MP_EINVAL, "$.budgets", "a maximize takes exactly one budget, got %zu", out->n_budgets);
  for (i = 0; i < out->dims.n; i++)
    if (strcmp(out->dims.names[i], out->maximize) == 0) {
      char path[MP_ERROR_PATH_MAX];
      snprintf(path, sizeof(path), "$.dims.%s", out->maximize);
      return mp_error_set(err, MP_EINVAL, path, "%s is maximized, so it cannot be bound too", out->maximize);
    }
  if (m != NULL) {
    if (!json_is_integer(m) || json_integer_value(m) < 1 || json_integer_value(m) > MP_DIM_VALUE_MAX)
      return mp_error_set(err, MP_EINVAL, "$.max_value", "must be a whole number from 1 to %lld",
                          (long long)MP_DIM_VALUE_MAX);
    out->max_value = json_integer_value(m);
  }
  return 0;
}

static int mp__fit_request_parse(json_t *root, size_t max_budgets, mp_fit_request_t *out, mp_error_t *err) {
  static const char *const keys[] = {"graph",      "graph_hash", "budgets", "solver", "swap",     "device",
                                     "graph_name", "devices",    "least",   "wait",   "dims",     "maximize",
                                     "max_value",  NULL};
  json_t *v, *b;
  size_t i;
  int rc;

  memset(out, 0, sizeof(*out));
  out->solver = MP_SOLVER_AUTO;
  mp_device_init(&out->device);
  if (!json_is_object(root)) return mp_error_set(err, MP_EINVAL, "$", "the request must be a JSON object");
  if ((rc = mp__known_keys(root, keys, err)) != 0) return rc;
  if ((rc = mp__graph_source(root, &out->graph, out->graph_hash, &out->graph_name, err)) != 0) return rc;
  if ((rc = mp__enum(root, "solver", mp__parse_solver, &out->solver, MP__SOLVERS, err)) != 0)
    return rc;
  if (out->solver == MP_SOLVER_NONE)
    return mp_error_set(err, MP_EINVAL, "$.solver", "a frontier needs a recomputing solver");
  if ((rc = mp__migration(root, out->solver, &out->swap, &out->device, err)) != 0) return rc;
  /* auto with migration plans as hybrid (plan.h); its frontier is hybrid's */
  if (out->swap && out->solver == MP_SOLVER_AUTO) out->solver = MP_SOLVER_HYBRID;
  v = json_object_get(root, "wait");
  if (v != NULL) {
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
      return mp_error_set(err, MP_EINVAL, "$.wait", "must be a number of seconds, 0 or more");
    out->wait_s = json_number_value(v);
    out->wait_given = 1;
  }
  v = json_object_get(root, "least");
  if (v != NULL) {
    if (!json_is_boolean(v)) return mp_error_set(err, MP_EINVAL, "$.least", "must be true or false");
    out->least = json_is_true(v);
  }
  v = json_object_get(root, "devices");
  if (v != NULL) {
    if (!json_is_array(v) || json_array_size(v) == 0)
      return mp_error_set(err, MP_EINVAL, "$.devices", "must be a non-empty array of device names");
    if (json_array_size(v) > max_budgets)
      return mp_error_set(err, MP_ELIMIT, "$.devices", "at most %zu devices per request", max_budgets);
    if ((out->devices = calloc(json_array_size(v), sizeof(*out->devices))) == NULL)
      return mp_error_set(err, MP_ENOMEM, "", "out of memory");
    json_array_foreach(v, i, b) {
      char path[48];
      snprintf(path, sizeof(path), "$.devices[%zu]", i);
      if (!json_is_string(b) || json_string_length(b) == 0 || json_string_length(b) > 63)
        return mp_error_set(err, MP_EINVAL, path, "must be a device name of the catalogue (GET /v1/devices)");
      out->devices[i] = json_string_value(b);
      out->n_devices = i + 1;
    }
  }
  v = json_object_get(root, "budgets");
  if (v == NULL && (out->n_devices > 0 || out->least)) return mp__fit_dims(root, out, err);
  if (v == NULL) return mp_error_set(err, MP_EINVAL, "$.budgets", "missing: a list of budgets (or \"devices\")");
  if (!json_is_array(v) || json_array_size(v) == 0)
    return mp_error_set(err, MP_EINVAL, "$.budgets", "must be a non-empty array of budgets");
  if (json_array_size(v) > max_budgets)
    return mp_error_set(err, MP_ELIMIT, "$.budgets", "at most %zu budgets per request", max_budgets);
  out->budgets = malloc(json_array_size(v) * sizeof(*out->budgets));
  if (out->budgets == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  json_array_foreach(v, i, b) {
    char path[48];
    snprintf(path, sizeof(path), "$.budgets[%zu]", i);
    if ((rc = mp_json_budget(b, path, &out->budgets[i], err)) != 0) return rc;
    out->n_budgets = i + 1;
  }
  return mp__fit_dims(root, out, err);
}

int mp_fit_request_parse(json_t *root, size_t max_budgets, mp_fit_request_t *out, mp_error_t *err) {
  int rc = mp__fit_request_parse(root, max_budgets, out, err);
  if (rc != 0) mp_fit_request_free(out);
  return rc;
}

void mp_fit_request_free(mp_fit_request_t *r) {
  if (r == NULL) return;
  free(r->budgets);
  r->budgets = NULL;
  r->n_budgets = 0;
  free(r->devices);
  r->devices = NULL;
  r->n_devices = 0;
}
