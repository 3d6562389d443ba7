/* request_json.c - validation of the daemon's request bodies (see
 * request_json.h). Every rejection names the field by its JSON path. */
#include "request_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  if (json_is_string(v)) {
    mp_error_t e;
    int rc = mp_parse_bytes(json_string_value(v), out, &e);
    if (rc != 0) return mp_error_set(err, MP_EINVAL, path, "%s", e.message);
    return 0;
  }
  return mp_error_set(err, MP_EINVAL, path,
                      "a budget is an integer number of bytes or a string such as \"12GiB\"");
}

/* The graph source: exactly one of "graph" and "graph_hash". */
static int mp__graph_source(json_t *root, json_t **graph, char hash[65], mp_error_t *err) {
  json_t *g = json_object_get(root, "graph");
  json_t *h = json_object_get(root, "graph_hash");
  *graph = NULL;
  hash[0] = '\0';
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

#define MP__SOLVERS "\"auto\", \"exact\", \"approx\", \"memonger\", \"sqrt\", \"none\""

int mp_plan_request_parse(json_t *root, double max_wait_s, mp_plan_request_t *out,
                          mp_error_t *err) {
  static const char *const keys[] = {"graph", "graph_hash", "budget", "solver", "objective",
                                     "accounting", "wait", "timeline", NULL};
  json_t *v;
  int rc;

  memset(out, 0, sizeof(*out));
  out->solver = MP_SOLVER_AUTO;
  out->objective = MP_OBJECTIVE_TIME;
  out->accounting = MP_ACCOUNTING_DEFAULT;
  if (!json_is_object(root)) return mp_error_set(err, MP_EINVAL, "$", "the request must be a JSON object");
  if ((rc = mp__known_keys(root, keys, err)) != 0) return rc;
  if ((rc = mp__graph_source(root, &out->graph, out->graph_hash, err)) != 0) return rc;
  v = json_object_get(root, "budget");
  if (v == NULL) return mp_error_set(err, MP_EINVAL, "$.budget", "missing: the memory budget");
  if ((rc = mp_json_budget(v, "$.budget", &out->budget, err)) != 0) return rc;
  if ((rc = mp__enum(root, "solver", mp__parse_solver, &out->solver, MP__SOLVERS, err)) != 0 ||
      (rc = mp__enum(root, "objective", mp__parse_objective, &out->objective,
                     "\"time\", \"memory\"", err)) != 0 ||
      (rc = mp__enum(root, "accounting", mp__parse_accounting, &out->accounting,
                     "\"default\", \"reference\"", err)) != 0)
    return rc;
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

int mp_fit_request_parse(json_t *root, size_t max_budgets, mp_fit_request_t *out,
                         mp_error_t *err) {
  static const char *const keys[] = {"graph", "graph_hash", "budgets", "solver", NULL};
  json_t *v, *b;
  size_t i;
  int rc;

  memset(out, 0, sizeof(*out));
  out->solver = MP_SOLVER_AUTO;
  if (!json_is_object(root)) return mp_error_set(err, MP_EINVAL, "$", "the request must be a JSON object");
  if ((rc = mp__known_keys(root, keys, err)) != 0) return rc;
  if ((rc = mp__graph_source(root, &out->graph, out->graph_hash, err)) != 0) return rc;
  if ((rc = mp__enum(root, "solver", mp__parse_solver, &out->solver, MP__SOLVERS, err)) != 0)
    return rc;
  if (out->solver == MP_SOLVER_NONE)
    return mp_error_set(err, MP_EINVAL, "$.solver", "a frontier needs a recomputing solver");
  v = json_object_get(root, "budgets");
  if (v == NULL) return mp_error_set(err, MP_EINVAL, "$.budgets", "missing: a list of budgets");
  if (!json_is_array(v) || json_array_size(v) == 0)
    return mp_error_set(err, MP_EINVAL, "$.budgets", "must be a non-empty array of budgets");
  if (json_array_size(v) > max_budgets)
    return mp_error_set(err, MP_ELIMIT, "$.budgets", "at most %zu budgets per request", max_budgets);
  out->budgets = malloc(json_array_size(v) * sizeof(*out->budgets));
  if (out->budgets == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  json_array_foreach(v, i, b) {
    char path[48];
    snprintf(path, sizeof(path), "$.budgets[%zu]", i);
    if ((rc = mp_json_budget(b, path, &out->budgets[i], err)) != 0) {
      mp_fit_request_free(out);
      return rc;
    }
    out->n_budgets = i + 1;
  }
  return 0;
}

void mp_fit_request_free(mp_fit_request_t *r) {
  if (r == NULL) return;
  free(r->budgets);
  r->budgets = NULL;
  r->n_budgets = 0;
}
