/* cmd_plan.c - `memplan plan GRAPH --budget B`: run the planner and print its
 * answer (plan_json.h). Exit 1 when no plan fits. The device flags and
 * --swap set up data migration (planner/device.h). With --server the
 * daemon plans instead (POST /v1/plans, then long polls of the plan) and
 * its result is printed as the offline answer would be.
 *
 * With --maximize DIM (a symbolic graph, docs/forecast.md) it answers the
 * largest value of DIM whose plan fits the budget (maximize_json.h), the
 * other dimensions at --dim's values; with --server the daemon searches
 * (POST /v1/fit with "maximize"). Exit 1 when even DIM's min does not fit. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json_util.h"
#include "maximize.h"
#include "maximize_json.h"
#include "plan.h"
#include "plan_json.h"

/* The result of a final plan view, or an exit code after a message. */
static int mp__final_result(const mp_cli_server_t *s, json_t *view, json_t **result) {
  const char *st = json_string_value(json_object_get(view, "status"));
  const json_t *e = json_object_get(view, "error");
  *result = NULL;
  if (st && strcmp(st, "done") == 0 && json_is_object(json_object_get(view, "result"))) {
    *result = json_incref(json_object_get(view, "result"));
    return 0;
  }
  fprintf(stderr, "memplan: server %s: plan %s %s: %s (%s)\n", s->url,
          json_string_value(json_object_get(view, "id")) ? json_string_value(json_object_get(view, "id")) : "",
          st ? st : "has no status", e ? json_string_value(json_object_get(e, "message")) : "no result",
          e ? json_string_value(json_object_get(e, "code")) : "");
  return MP_CLI_EXIT_INTERNAL;
}

/* Is `st` a status a plan keeps for good? */
static int mp__final(const char *st) {
  return st && (strcmp(st, "done") == 0 || strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0);
}

/* Does the daemon's error answer name the field `path`? */
static int mp__error_at(const json_t *ans, const char *path) {
  const char *p = json_string_value(json_object_get(json_object_get(ans, "error"), "path"));
  return p != NULL && strcmp(p, path) == 0;
}

/* Plan on the daemon: submit with the graph, wait for the plan in long polls, and return its result. */
static int mp__plan_online(const mp_cli_opts_t *o, const mp_cli_server_t *s, const mp_plan_options_t *po,
                           const mp_graph_t *g, mp_cli_progress_t *bar, json_t **result) {
  json_t *body = json_object(), *ans = NULL;
  /* a bar is redrawn from each poll's progress: poll every second */
  int rc, status, wait = bar->on ? 1 : MP_CLI_SERVER_WAIT_S;
  char path[160];
  const char *st, *id;

  *result = NULL;
  if (body == NULL || mp_json_set(body, "budget", mp_json_u64(po->budget)) ||
      mp_json_set(body, "solver", json_string(mp_solver_name(po->solver))) ||
      mp_json_set(body, "objective", json_string(mp_objective_name(po->objective))) ||
      mp_json_set(body, "accounting", json_string(mp_accounting_name(po->accounting))) ||
      mp_json_set(body, "swap", json_boolean(po->swap)) || mp_json_set(body, "timeline", json_boolean(o->timeline)) ||
      mp_json_set(body, "device", mp_device_to_json(&po->device, NULL)) ||
      mp_json_set(body, "wait", json_integer(wait))) {
    json_decref(body);
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  rc = mp_cli_server_call_graph(s, "/v1/plans", body, g, wait + MP_CLI_SERVER_SLACK_S, &status, &ans);
  if (rc == 0 && status == 400 &&
      mp__error_at(ans, "$.wait")) {
    /* the daemon holds requests for less (--max-wait): poll instead */
    json_decref(ans);
    ans = NULL;
    wait = 0;
    json_object_del(body, "wait");
    rc = mp_cli_server_call_graph(s, "/v1/plans", body, g, MP_CLI_SERVER_SLACK_S, &status, &ans);
  }
  json_decref(body);
  while (rc == 0) {
    if (status != 200 && status != 202) return mp_cli_server_refused(s, status, ans);
    st = json_string_value(json_object_get(ans, "status"));
    if (mp__final(st)) break;
    id = json_string_value(json_object_get(ans, "id"));
    if (id == NULL || strlen(id) > 64) return mp_cli_server_refused(s, 500, ans);
    mp_cli_progress_json(bar, ans);
    if (wait > 0) {
      snprintf(path, sizeof(path), "/v1/plans/%s?wait=%d&timeline=%s", id, wait, o->timeline ? "true" : "false");
    } else {
      struct timespec ts = {0, 500 * 1000000L};
      nanosleep(&ts, NULL);
      snprintf(path, sizeof(path), "/v1/plans/%s?timeline=%s", id, o->timeline ? "true" : "false");
    }
    json_decref(ans);
    ans = NULL;
    rc = mp_cli_server_call(s, "GET", path, NULL, wait + MP_CLI_SERVER_SLACK_S, &status, &ans);
  }
  mp_cli_progress_end(bar);
  if (rc != 0) return rc;
  rc = mp__final_result(s, ans, result);
  json_decref(ans);
  return rc;
}

/* The maximize answer from the daemon (POST /v1/fit with "maximize"),
 * without its "cache" word. */
static int mp__maximize_online(const mp_cli_opts_t *o, const mp_cli_server_t *s, const mp_plan_options_t *po,
                               const mp_graph_t *g, json_t **answer) {
  json_t *body = json_object(), *dims = json_object();
  size_t i;
  int rc, status;
  *answer = NULL;
  if (body == NULL || mp_json_set(body, "budgets", json_pack("[o]", mp_json_u64(po->budget))) ||
      mp_json_set(body, "maximize", json_string(o->maximize)) ||
      mp_json_set(body, "solver", json_string(mp_solver_name(po->solver))) ||
      mp_json_set(body, "swap", json_boolean(po->swap)) ||
      mp_json_set(body, "device", mp_device_to_json(&po->device, NULL)) || mp_json_set(body, "dims", dims) ||
      (o->max_value && mp_json_set(body, "max_value", json_integer(o->max_value)))) {
    json_decref(body);
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  for (i = 0; i < o->dims.n; i++) json_object_set_new(dims, o->dims.names[i], json_integer(o->dims.values[i]));
  rc = mp_cli_server_call_graph(s, "/v1/fit", body, g, MP_CLI_SERVER_LONG_S, &status, answer);
  json_decref(body);
  if (rc != 0) return rc;
  if (status != 200 || !json_is_integer(json_object_get(*answer, "value"))) {
    rc = mp_cli_server_refused(s, status == 200 ? 500 : status, *answer);
    *answer = NULL;
    return rc;
  }
  json_object_del(*answer, "cache");
  return 0;
}

/* plan --maximize: the graph as loaded (its dimensions unbound), the
 * search here or on the daemon. */
static int mp__plan_maximize(mp_cli_opts_t *o, const mp_plan_options_t *po, const mp_cli_server_t *srv, int online) {
  mp_cli_opts_t lo = *o;
  mp_graph_t *g = NULL;
  mp_maximize_t m;
  mp_error_t err;
  json_t *ans = NULL;
  int rc;
  lo.dims.n = 0; /* --dim binds the other dimensions during the search */
  if ((rc = mp_cli_load_graph(o->pos[0], &lo, &g, NULL)) != 0) return rc;
  if (online) {
    rc = mp__maximize_online(o, srv, po, g, &ans);
    mp_graph_free(g);
    if (rc != 0) return rc;
  } else {
    mp_error_clear(&err);
    rc = mp_maximize(g, &o->dims, o->maximize, o->max_value, po, &o->limits, &m, &err);
    if (rc != 0) {
      /* the request's field names, as the CLI's flags */
      if (strcmp(err.path, "$.maximize") == 0) snprintf(err.path, sizeof(err.path), "--maximize");
      if (strcmp(err.path, "$.max_value") == 0) snprintf(err.path, sizeof(err.path), "--max-value");
      rc = mp_cli_report(o->pos[0], &err);
      mp_graph_free(g);
      return rc;
    }
    ans = mp_maximize_to_json(&m, po->budget, &po->device, !o->summary, o->timeline);
    mp_maximize_free(&m);
    mp_graph_free(g);
  }
  if (ans && o->summary) json_object_del(json_object_get(ans, "plan"), "schedule");
  rc = ans && json_integer_value(json_object_get(ans, "value")) == 0 ? MP_CLI_EXIT_INFEASIBLE : 0;
  if (mp_cli_print_json(ans, o) != 0) rc = MP_CLI_EXIT_INTERNAL;
  return rc;
}

int mp_cli_plan(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_plan_options_t po;
  mp_plan_result_t r;
  mp_cli_server_t srv;
  mp_cli_progress_t bar;
  mp_graph_t *g = NULL;
  mp_error_t err;
  char hash[65];
  int rc, online;

  if ((rc = mp_cli_parse(argc, argv,
                         "--budget --solver --objective --accounting --summary --timeline --swap --threads --progress "
                         "--maximize --max-value "
                         MP_CLI_SERVER_OPTS " " MP_CLI_DEVICE_OPTS,
                         1, 1, &o)) != 0)
    return rc;
  mp_plan_options_init(&po);
  if (!o.has_budget) {
    fprintf(stderr, "memplan plan: --budget is required (bytes, or e.g. 12GiB)\n");
    return MP_CLI_EXIT_USAGE;
  }
  po.budget = o.budget;
  po.threads = mp_cli_threads(&o);
  mp_cli_progress_begin(&bar, o.progress);
  if (bar.on) {
    po.progress = mp_cli_progress_cb;
    po.progress_arg = &bar;
  }
  if ((rc = mp_cli_solver(&o, 0, &po.solver, &po.swap)) != 0) return rc;
  if (o.objective && mp_objective_parse(o.objective, &po.objective) != 0) {
    fprintf(stderr, "memplan: --objective must be time or memory, not '%s'\n", o.objective);
    return MP_CLI_EXIT_USAGE;
  }
  if (o.accounting && mp_accounting_parse(o.accounting, &po.accounting) != 0) {
    fprintf(stderr, "memplan: --accounting must be default or reference, not '%s'\n", o.accounting);
    return MP_CLI_EXIT_USAGE;
  }
  if ((rc = mp_cli_device(&o, &po.device)) != 0) return rc;
  if ((rc = mp_cli_server_open(&o, &srv, &online)) != 0) return rc;
  if (o.maximize) {
    rc = mp__plan_maximize(&o, &po, &srv, online);
    mp_cli_progress_end(&bar);
    goto out;
  }
  if (o.max_value) {
    fprintf(stderr, "memplan plan: --max-value limits --maximize; give --maximize too\n");
    rc = MP_CLI_EXIT_USAGE;
    goto out;
  }
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) goto out;
  if (online) {
    json_t *res = NULL;
    if ((rc = mp__plan_online(&o, &srv, &po, g, &bar, &res)) != 0) goto out;
    /* the daemon keeps the schedule; --summary leaves it out, as offline */
    if (o.summary) json_object_del(res, "schedule");
    rc = json_is_false(json_object_get(res, "feasible")) ? MP_CLI_EXIT_INFEASIBLE : 0;
    if (mp_cli_print_json(res, &o) != 0) rc = MP_CLI_EXIT_INTERNAL;
    goto out;
  }
  mp_error_clear(&err);
  rc = mp_graph_hash(g, hash);
  if (rc == 0) rc = mp_plan(g, &po, &r, &err);
  mp_cli_progress_end(&bar);
  if (rc != 0) {
    if (err.code == 0) mp_error_set(&err, rc, "", "planning failed");
    mp_cli_report(o.pos[0], &err);
    /* bad options are the user's; anything else (a planner bug, memory,
     * cancellation) is internal */
    rc = rc == MP_EINVAL ? MP_CLI_EXIT_USAGE : MP_CLI_EXIT_INTERNAL;
    goto out;
  }
  rc = mp_cli_print_json(mp_plan_result_to_json_ex(g, &r, hash, &po.device, !o.summary, o.timeline), &o);
  if (rc == 0 && !r.feasible) rc = MP_CLI_EXIT_INFEASIBLE;
  mp_plan_result_free(&r);
out:
  mp_graph_free(g);
  mp_cli_server_close(&srv);
  return rc;
}
