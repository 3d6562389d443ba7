/* cmd_frontier.c - `memplan frontier GRAPH [--solver S] [--plot FILE.svg]`:
 * the memory/time frontier as JSON points, and optionally an SVG chart of
 * the asked solver's, approx's and memonger's frontiers side by side. The
 * swap solvers (or --swap, which makes auto hybrid) plan under the device
 * flags; their points cost extra time (recomputation plus stalls). With
 * --server the daemon's frontiers (GET /v1/graphs/{hash}/frontier, a job
 * answered 202 while it runs, long-polled with ?wait=) are printed and
 * drawn instead. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dims_json.h"
#include "fit_json.h"
#include "frontier.h"
#include "frontier_json.h"
#include "plot_svg.h"

/* Store graph g on the daemon: the frontier route takes only a hash, so the
 * graph goes first with a fit that costs next to nothing (sqrt's fixed
 * proposals, at one budget). Asking the route first would log a 404 for every graph
 * the daemon has not seen. */
static int mp__frontier_upload(const mp_cli_server_t *s, const mp_graph_t *g) {
  json_t *ans = NULL, *body = json_pack("{s:[i],s:s}", "budgets", 0, "solver", "sqrt");
  int rc, status;
  if (body == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  rc = mp_cli_server_call_graph(s, "/v1/fit", body, g, MP_CLI_SERVER_LONG_S, &status, &ans);
  json_decref(body);
  if (rc != 0) return rc;
  if (status != 200) return mp_cli_server_refused(s, status, ans);
  json_decref(ans);
  return 0;
}

/* The daemon's frontier of `solver` as JSON (without its "cache" word):
 * the graph is stored first, then the route is long-polled while the
 * frontier is computed (202), every second with a progress bar. */
static int mp__frontier_online(const mp_cli_server_t *s, mp_solver_t solver, const mp_graph_t *g, const char *hash,
                               mp_cli_progress_t *bar, json_t **out) {
  char path[200];
  json_t *ans = NULL;
  int rc, status, wait = bar->on ? 1 : MP_CLI_SERVER_WAIT_S;
  *out = NULL;
  if ((rc = mp__frontier_upload(s, g)) != 0) return rc;
  for (;;) {
    if (wait > 0)
      snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?solver=%s&wait=%d", hash, mp_solver_name(solver), wait);
    else
      snprintf(path, sizeof(path), "/v1/graphs/%s/frontier?solver=%s", hash, mp_solver_name(solver));
    if ((rc = mp_cli_server_call(s, "GET", path, NULL, wait + MP_CLI_SERVER_SLACK_S, &status, &ans)) != 0) break;
    if (status == 200 && json_is_array(json_object_get(ans, "points"))) break;
    if (status == 202) {
      struct timespec ts = {0, 500 * 1000000L};
      mp_cli_progress_json(bar, ans);
      json_decref(ans);
      if (wait == 0) nanosleep(&ts, NULL);
      continue;
    }
    if (status == 400 && wait > 0) {
      /* the daemon holds requests for less (--max-wait): poll instead */
      json_decref(ans);
      wait = 0;
      continue;
    }
    mp_cli_progress_end(bar);
    return mp_cli_server_refused(s, status == 200 ? 500 : status, ans);
  }
  mp_cli_progress_end(bar);
  if (rc != 0) return rc;
  json_object_del(ans, "cache");
  *out = ans;
  return 0;
}

/* The frontier under po, as JSON and as points: computed here, or the
 * daemon's when s is not NULL. 0 or an exit code after a message. */
static int mp__frontier(const char *file, const mp_cli_server_t *s, const mp_graph_t *g, const char *hash,
                        const mp_plan_options_t *po, mp_cli_progress_t *bar, json_t **js, mp_frontier_t *f) {
  mp_error_t err;
  int rc;
  *js = NULL;
  if (s) {
    if ((rc = mp__frontier_online(s, po->solver, g, hash, bar, js)) != 0) return rc;
    rc = mp_frontier_from_json(*js, f);
  } else {
    mp_plan_options_t p2 = *po;
    if (bar->on) {
      p2.progress = mp_cli_progress_cb;
      p2.progress_arg = bar;
    }
    mp_error_clear(&err);
    rc = mp_frontier(g, &p2, f, &err);
    mp_cli_progress_end(bar);
    if (rc != 0) {
      if (err.code == 0) mp_error_set(&err, rc, "", "out of memory");
      return mp_cli_report(file, &err);
    }
    rc = (*js = mp_frontier_to_json(f, hash)) && mp_forecast_json_add(*js, g) == 0 ? 0 : MP_ENOMEM;
  }
  if (rc != 0) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  return 0;
}

int mp_cli_frontier(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_plan_options_t po;
  mp_frontier_t fr[3];
  mp_cli_server_t srv;
  mp_cli_progress_t bar;
  mp_graph_t *g = NULL;
  json_t *out = NULL;
  char hash[65];
  size_t nf = 0, i;
  int rc, online;

  memset(fr, 0, sizeof(fr));
  if ((rc = mp_cli_parse(argc, argv, "--solver --plot --swap --threads --frontier-solves --frontier-seconds --progress " MP_CLI_SERVER_OPTS " " MP_CLI_DEVICE_OPTS, 1,
                         1, &o)) != 0)
    return rc;
  mp_plan_options_init(&po);
  po.threads = mp_cli_threads(&o);
  po.frontier_solves = o.has_frontier_solves ? o.frontier_solves : MP_FRONTIER_SOLVES;
  po.frontier_ms = o.has_frontier_ms ? o.frontier_ms : MP_FRONTIER_MS;
  mp_cli_progress_begin(&bar, o.progress);
  if ((rc = mp_cli_solver(&o, 1, &po.solver, &po.swap)) != 0) return rc;
  if ((rc = mp_cli_device(&o, &po.device)) != 0) return rc;
  if ((rc = mp_cli_server_open(&o, &srv, &online)) != 0) return rc;
  if (online && (o.h2d_bandwidth || o.d2h_bandwidth || o.copy_latency || o.copy_engines || o.host_budget ||
                 o.time_unit_seconds || o.intra_layer_reuse || o.prefetch || o.allocator)) {
    fprintf(stderr, "memplan frontier: the daemon's frontiers are planned under its default device; drop the "
                    "device options, or plan offline (fit --server takes them)\n");
    rc = MP_CLI_EXIT_USAGE;
    goto out;
  }
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) goto out;
  if (mp_graph_hash(g, hash) != 0) {
    fprintf(stderr, "memplan: out of memory\n");
    rc = MP_CLI_EXIT_INTERNAL;
    goto out;
  }
  if ((rc = mp__frontier(o.pos[0], online ? &srv : NULL, g, hash, &po, &bar, &out, &fr[nf++])) != 0) goto out;
  if (o.plot) {
    /* The chart compares families: the asked solver, then approx and
     * memonger unless one of them was the asked one. */
    static const mp_solver_t others[] = {MP_SOLVER_APPROX, MP_SOLVER_MEMONGER};
    FILE *f;
    char title[300];
    for (i = 0; i < 2; i++) {
      mp_plan_options_t p2 = po;
      json_t *js;
      if (others[i] == po.solver) continue;
      p2.solver = others[i];
      rc = mp__frontier(o.pos[0], online ? &srv : NULL, g, hash, &p2, &bar, &js, &fr[nf]);
      json_decref(js);
      if (rc != 0) goto out;
      nf++;
    }
    if ((f = fopen(o.plot, "w")) == NULL) {
      fprintf(stderr, "memplan: cannot write %s\n", o.plot);
      rc = MP_CLI_EXIT_USAGE;
      goto out;
    }
    snprintf(title, sizeof(title), "%s: %s against peak memory", g->name[0] ? g->name : o.pos[0],
             fr[0].migrate ? "time overhead (recomputation and stalls)" : "recomputation overhead");
    rc = mp_plot_frontiers_svg(f, title, fr, nf);
    if (fclose(f) != 0 || rc != 0) {
      fprintf(stderr, "memplan: cannot write %s\n", o.plot);
      rc = MP_CLI_EXIT_INTERNAL;
      goto out;
    }
  }
  rc = mp_cli_print_json(out, &o);
  out = NULL;
out:
  json_decref(out);
  for (i = 0; i < 3; i++) mp_frontier_free(&fr[i]);
  mp_graph_free(g);
  mp_cli_server_close(&srv);
  return rc;
}
