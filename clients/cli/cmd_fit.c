/* cmd_fit.c - `memplan fit GRAPH --budgets B1,B2,... --device G1,...
 * --least`: for each budget and each GPU of the device catalogue (at its
 * usable bytes, gpus.h), whether the graph fits and at what cost: what
 * `memplan plan` returns at that budget (mp_fit, proto/fit_json.h), as POST
 * /v1/fit answers it; with --least also the plan at the least budget that
 * fits. Exit 1 when a budget or a device does not fit (the answer is still
 * printed). With --server the daemon answers (with its own catalogue). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dims_json.h"
#include "fit_json.h"
#include "fit.h"
#include "gpus.h"
#include "json_util.h"
#include "maximize.h"
#include "plan_json.h"
#include "units.h"

/* --budgets "B1,B2,...": each a byte quantity (docs/units.md). 0, or
 * MP_CLI_EXIT_USAGE after a message; *out is malloc'd. */
static int mp__budgets(const char *text, uint64_t **out, size_t *n) {
  const char *p = text;
  size_t cap = 1;
  *n = 0;
  for (; *p; p++) cap += *p == ',';
  if ((*out = calloc(cap, sizeof(**out))) == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  for (p = text;;) {
    size_t len = strcspn(p, ",");
    char one[128];
    mp_error_t err;
    snprintf(one, sizeof(one), "%.*s", (int)(len < sizeof(one) ? len : sizeof(one) - 1), p);
    if (len == 0 || len >= sizeof(one) || mp_parse_bytes(one, &(*out)[*n], &err) != 0) {
      fprintf(stderr, "memplan: --budgets: '%.*s': %s\n", (int)len, p,
              len == 0 ? "an empty budget" : len >= sizeof(one) ? "too long" : err.message);
      free(*out);
      *out = NULL;
      return MP_CLI_EXIT_USAGE;
    }
    (*n)++;
    if (p[len] == '\0') return 0;
    p += len + 1;
  }
}

/* --device "G1,G2,...": each a name of the catalogue `cat` into *out
 * (malloc'd copies without their source); with `names_only` (the daemon's
 * catalogue answers) a name `cat` lacks is kept by name alone. 0, or
 * MP_CLI_EXIT_USAGE after a message. */
static int mp__devices(const char *text, const mp_gpus_t *cat, int names_only, mp_gpu_t **out, size_t *n) {
  const char *p = text;
  size_t cap = 1;
  *n = 0;
  for (; *p; p++) cap += *p == ',';
  if ((*out = calloc(cap, sizeof(**out))) == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  for (p = text;;) {
    size_t len = strcspn(p, ",");
    char one[MP_GPU_NAME_MAX];
    const mp_gpu_t *g;
    snprintf(one, sizeof(one), "%.*s", (int)(len < sizeof(one) ? len : sizeof(one) - 1), p);
    g = mp_gpus_find(cat, one);
    if (len == 0 || len >= sizeof(one) || (g == NULL && !names_only)) {
      fprintf(stderr, "memplan: --device: '%.*s' is not in the device catalogue (%s, ...; docs/devices.md)\n",
              (int)len, p, cat->n ? cat->gpus[0].name : "it is empty");
      free(*out);
      *out = NULL;
      return MP_CLI_EXIT_USAGE;
    }
    if (g)
      (*out)[*n] = *g;
    else
      snprintf((*out)[*n].name, sizeof((*out)[*n].name), "%s", one);
    (*out)[*n].source = NULL;
    (*n)++;
    if (p[len] == '\0') return 0;
    p += len + 1;
  }
}

/* The fit here: the plans at the canonical budgets (the asked ones and the
 * devices' usable bytes, ascending, each once), then the answer in the
 * asked order (mp_fit_answer), as the daemon renders it. */
static int mp__fit_offline(const mp_graph_t *g, const mp_plan_options_t *po, const char *hash,
                           const uint64_t *budgets, size_t n, const mp_gpu_t *gpus, size_t ng, int least,
                           json_t **answer, mp_error_t *err) {
  uint64_t *canon = malloc((n + ng + 1) * sizeof(*canon));
  size_t nc, i;
  mp_fit_t f, lf;
  json_t *whole = NULL;
  int rc;
  memset(&f, 0, sizeof(f));
  memset(&lf, 0, sizeof(lf));
  *answer = NULL;
  if (canon == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  if (n) memcpy(canon, budgets, n * sizeof(*canon));
  for (i = 0; i < ng; i++) canon[n + i] = mp_gpu_usable(&gpus[i]);
  nc = mp_fit_canonical_budgets(canon, n + ng);
  rc = mp_fit(g, po, canon, nc, &f, err);
  if (rc == 0 && least) rc = mp_fit_least(g, po, &lf, err);
  if (rc == 0 && ((whole = mp_fit_result_to_json(&f, hash)) == NULL || mp_forecast_json_add(whole, g) != 0 ||
                  mp_fit_least_to_json(whole, &lf) != 0 ||
                  (*answer = mp_fit_answer(whole, budgets, n, gpus, ng)) == NULL))
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
  json_decref(whole);
  mp_fit_free(&f);
  mp_fit_free(&lf);
  free(canon);
  return rc;
}

/* fit --device ... --maximize DIM here: the largest value of DIM each
 * device takes at its usable bytes (one mp_maximize per distinct usable
 * size; the other dimensions at --dim), answered as the daemon renders
 * it: a fit's device entries (mp_maximize_entry_to_json). g is the graph
 * as loaded, its dimensions unbound. */
static int mp__maximize_offline(const mp_cli_opts_t *o, const mp_graph_t *g, const mp_plan_options_t *po,
                                const char *hash, const mp_gpu_t *gpus, size_t ng, json_t **answer, mp_error_t *err) {
  uint64_t *canon = malloc((ng + 1) * sizeof(*canon));
  json_t *whole = NULL, *arr = json_array();
  size_t nc, i;
  int rc = 0;
  *answer = NULL;
  if (canon == NULL || arr == NULL) rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
  for (i = 0; rc == 0 && i < ng; i++) canon[i] = mp_gpu_usable(&gpus[i]);
  nc = rc == 0 ? mp_fit_canonical_budgets(canon, ng) : 0;
  for (i = 0; rc == 0 && i < nc; i++) {
    mp_plan_options_t at = *po;
    mp_maximize_t m;
    memset(&m, 0, sizeof(m));
    at.budget = canon[i];
    rc = mp_maximize(g, &o->dims, o->maximize, o->max_value, &at, &o->limits, &m, err);
    if (rc == 0 && json_array_append_new(arr, mp_maximize_entry_to_json(&m, canon[i])) != 0)
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
    mp_maximize_free(&m);
  }
  if (rc == 0 && ((whole = json_pack("{s:s,s:s,s:s,s:O}", "graph_hash", hash, "solver", mp_solver_name(po->solver),
                                     "maximize", o->maximize, "budgets", arr)) == NULL ||
                  (*answer = mp_fit_answer(whole, NULL, 0, gpus, ng)) == NULL))
    rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
  json_decref(whole);
  json_decref(arr);
  free(canon);
  return rc;
}

/* The fit answer from the daemon, without its "cache" word. */
static int mp__fit_online(const mp_cli_opts_t *o, const mp_cli_server_t *s, const mp_plan_options_t *po,
                          const mp_graph_t *g, const uint64_t *budgets, size_t n, const mp_gpu_t *gpus, size_t ng,
                          json_t **answer) {
  json_t *body = json_object(), *arr = NULL;
  size_t i;
  int rc, status;
  *answer = NULL;
  if (body == NULL || mp_json_set(body, "solver", json_string(mp_solver_name(po->solver))) ||
      mp_json_set(body, "swap", json_boolean(po->swap)) ||
      mp_json_set(body, "device", mp_device_to_json(&po->device, NULL)) ||
      (o->least && mp_json_set(body, "least", json_true())))
    goto nomem;
  if (o->maximize) {
    /* the graph goes unbound: the other dimensions travel as "dims" */
    if (mp_json_set(body, "maximize", json_string(o->maximize)) || mp_json_set(body, "dims", arr = json_object()) ||
        (o->max_value && mp_json_set(body, "max_value", json_integer(o->max_value))))
      goto nomem;
    for (i = 0; i < o->dims.n; i++)
      if (json_object_set_new(arr, o->dims.names[i], json_integer(o->dims.values[i])) != 0) goto nomem;
  }
  if (n) {
    if (mp_json_set(body, "budgets", arr = json_array())) goto nomem;
    for (i = 0; i < n; i++)
      if (json_array_append_new(arr, mp_json_u64(budgets[i])) != 0) goto nomem;
  }
  if (ng) {
    if (mp_json_set(body, "devices", arr = json_array())) goto nomem;
    for (i = 0; i < ng; i++)
      if (json_array_append_new(arr, json_string(gpus[i].name)) != 0) goto nomem;
  }
  rc = mp_cli_server_call_graph(s, "/v1/fit", body, g, MP_CLI_SERVER_LONG_S, &status, answer);
  json_decref(body);
  if (rc != 0) return rc;
  if (status != 200 || !json_is_array(json_object_get(*answer, "budgets"))) {
    rc = mp_cli_server_refused(s, status == 200 ? 500 : status, *answer);
    *answer = NULL;
    return rc;
  }
  json_object_del(*answer, "cache");
  return 0;
nomem:
  json_decref(body);
  fprintf(stderr, "memplan: out of memory\n");
  return MP_CLI_EXIT_INTERNAL;
}

int mp_cli_fit(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_plan_options_t po;
  mp_cli_server_t srv;
  mp_graph_t *g = NULL;
  mp_gpus_t cat;
  mp_gpu_t *gpus = NULL;
  mp_error_t err;
  json_t *answer = NULL, *e;
  uint64_t *budgets = NULL;
  size_t n = 0, ng = 0, i;
  char hash[65];
  int rc, online = 0;

  memset(&cat, 0, sizeof(cat));
  memset(&srv, 0, sizeof(srv));
  if ((rc = mp_cli_parse(argc, argv,
                         "--budgets --device --devices --least --maximize --max-value --solver --swap --threads "
                         MP_CLI_SERVER_OPTS " " MP_CLI_DEVICE_OPTS,
                         1, 1, &o)) != 0)
    return rc;
  if (o.maximize && (o.device == NULL || o.budgets || o.least)) {
    fprintf(stderr, "memplan fit: --maximize answers each --device's largest value: give --device, without "
                    "--budgets or --least (memplan plan --maximize takes one budget)\n");
    return MP_CLI_EXIT_USAGE;
  }
  if (o.budgets == NULL && o.device == NULL && !o.least) {
    fprintf(stderr, "memplan fit: --budgets, --device or --least is required (e.g. --budgets 8GiB,12GiB,16GiB "
                    "or --device a100-40gb,h100-80gb)\n");
    return MP_CLI_EXIT_USAGE;
  }
  if (o.budgets && (rc = mp__budgets(o.budgets, &budgets, &n)) != 0) return rc;
  mp_plan_options_init(&po);
  po.threads = mp_cli_threads(&o);
  if ((rc = mp_cli_solver(&o, 1, &po.solver, &po.swap)) != 0 || (rc = mp_cli_device(&o, &po.device)) != 0) goto out;
  if ((rc = mp_cli_server_open(&o, &srv, &online)) != 0) goto out;
  mp_error_clear(&err);
  if (o.device &&
      (rc = o.devices_file ? mp_gpus_load_file(o.devices_file, &cat, &err) : mp_gpus_default(&cat)) != 0) {
    rc = mp_cli_report(o.devices_file ? o.devices_file : "the device catalogue", &err);
    goto out;
  }
  if (o.device && (rc = mp__devices(o.device, &cat, online && o.devices_file == NULL, &gpus, &ng)) != 0) goto out;
  {
    /* a maximize searches the graph as loaded: --dim binds the others */
    mp_cli_opts_t lo = o;
    if (o.maximize) lo.dims.n = 0;
    if ((rc = mp_cli_load_graph(o.pos[0], &lo, &g, NULL)) != 0) goto out;
  }
  if ((rc = mp_graph_hash(g, hash)) != 0) {
    fprintf(stderr, "memplan: out of memory\n");
    rc = MP_CLI_EXIT_INTERNAL;
    goto out;
  }
  if (online) {
    if ((rc = mp__fit_online(&o, &srv, &po, g, budgets, n, gpus, ng, &answer)) != 0) goto out;
  } else if ((rc = o.maximize ? mp__maximize_offline(&o, g, &po, hash, gpus, ng, &answer, &err)
                              : mp__fit_offline(g, &po, hash, budgets, n, gpus, ng, o.least, &answer, &err)) != 0) {
    if (err.code == 0) mp_error_set(&err, rc, "", "out of memory");
    /* the request's field names, as the CLI's flags */
    if (strcmp(err.path, "$.maximize") == 0) snprintf(err.path, sizeof(err.path), "--maximize");
    if (strcmp(err.path, "$.max_value") == 0) snprintf(err.path, sizeof(err.path), "--max-value");
    rc = mp_cli_report(o.pos[0], &err);
    goto out;
  }
  rc = 0;
  json_array_foreach(json_object_get(answer, "budgets"), i, e) {
    if (!json_is_true(json_object_get(e, "fits"))) rc = MP_CLI_EXIT_INFEASIBLE;
  }
  json_array_foreach(json_object_get(answer, "devices"), i, e) {
    if (!json_is_true(json_object_get(e, "fits"))) rc = MP_CLI_EXIT_INFEASIBLE;
  }
  if (mp_cli_print_json(answer, &o) != 0) rc = MP_CLI_EXIT_INTERNAL;
  answer = NULL;
out:
  json_decref(answer);
  mp_graph_free(g);
  if (online) mp_cli_server_close(&srv);
  mp_gpus_free(&cat);
  free(gpus);
  free(budgets);
  return rc;
}
