/* cmd_fit.c - `memplan fit GRAPH --budgets B1,B2,...`: for each budget,
 * whether the graph fits and at what cost: what `memplan plan` returns at
 * that budget (mp_fit, proto/fit_json.h), as POST /v1/fit answers it. Exit
 * 1 when a budget does not fit (the answer is still printed). With
 * --server the daemon answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dims_json.h"
#include "fit_json.h"
#include "fit.h"
#include "json_util.h"
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

/* The fit answer from the daemon, without its "cache" word. */
static int mp__fit_online(const mp_cli_server_t *s, const mp_plan_options_t *po, const mp_graph_t *g,
                          const uint64_t *budgets, size_t n, json_t **answer) {
  json_t *body = json_object(), *arr = json_array();
  size_t i;
  int rc, status;
  *answer = NULL;
  if (body == NULL || mp_json_set(body, "budgets", arr) ||
      mp_json_set(body, "solver", json_string(mp_solver_name(po->solver))) ||
      mp_json_set(body, "swap", json_boolean(po->swap)) ||
      mp_json_set(body, "device", mp_device_to_json(&po->device, NULL)))
    goto nomem;
  for (i = 0; i < n; i++)
    if (json_array_append_new(arr, mp_json_u64(budgets[i])) != 0) goto nomem;
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
  mp_fit_t f;
  mp_cli_server_t srv;
  mp_graph_t *g = NULL;
  mp_error_t err;
  json_t *answer = NULL, *e;
  uint64_t *budgets = NULL;
  size_t n = 0, i;
  char hash[65];
  int rc, online;

  memset(&f, 0, sizeof(f));
  if ((rc = mp_cli_parse(argc, argv, "--budgets --solver --swap --threads " MP_CLI_SERVER_OPTS " " MP_CLI_DEVICE_OPTS,
                         1, 1, &o)) != 0)
    return rc;
  if (o.budgets == NULL) {
    fprintf(stderr, "memplan fit: --budgets is required (e.g. --budgets 8GiB,12GiB,16GiB)\n");
    return MP_CLI_EXIT_USAGE;
  }
  if ((rc = mp__budgets(o.budgets, &budgets, &n)) != 0) return rc;
  mp_plan_options_init(&po);
  po.threads = mp_cli_threads(&o);
  if ((rc = mp_cli_solver(&o, 1, &po.solver, &po.swap)) != 0 || (rc = mp_cli_device(&o, &po.device)) != 0) {
    free(budgets);
    return rc;
  }
  if ((rc = mp_cli_server_open(&o, &srv, &online)) != 0) {
    free(budgets);
    return rc;
  }
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) goto out;
  mp_error_clear(&err);
  if ((rc = mp_graph_hash(g, hash)) != 0) {
    fprintf(stderr, "memplan: out of memory\n");
    rc = MP_CLI_EXIT_INTERNAL;
    goto out;
  }
  if (online) {
    if ((rc = mp__fit_online(&srv, &po, g, budgets, n, &answer)) != 0) goto out;
  } else {
    if ((rc = mp_fit(g, &po, budgets, n, &f, &err)) != 0) {
      if (err.code == 0) mp_error_set(&err, rc, "", "out of memory");
      rc = mp_cli_report(o.pos[0], &err);
      goto out;
    }
    if ((answer = mp_fit_result_to_json(&f, hash)) == NULL || mp_forecast_json_add(answer, g) != 0) {
      fprintf(stderr, "memplan: out of memory\n");
      rc = MP_CLI_EXIT_INTERNAL;
      goto out;
    }
  }
  rc = 0;
  json_array_foreach(json_object_get(answer, "budgets"), i, e) {
    if (!json_is_true(json_object_get(e, "fits"))) rc = MP_CLI_EXIT_INFEASIBLE;
  }
  if (mp_cli_print_json(answer, &o) != 0) rc = MP_CLI_EXIT_INTERNAL;
  answer = NULL;
out:
  json_decref(answer);
  mp_fit_free(&f);
  mp_graph_free(g);
  mp_cli_server_close(&srv);
  free(budgets);
  return rc;
}
