/* test_cli_server.c - `memplan plan|fit|frontier --server URL` against the
 * real daemon: the same answer as offline (field for field, in the same
 * order, the planner's own solve_ms aside) for the same graph and options,
 * the same exit codes, and the daemon's refusals and absence turned into
 * exit 2 (a 4xx, naming the field) and 3 (unreachable). The graph is
 * tests/graphs/cg_vgg19.txt, whose plans and frontiers take milliseconds. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

#define VGG "tests/graphs/cg_vgg19.txt"

/* Run `[env] memplan ARGS` (stderr into *err when err is not NULL, else
 * dropped); its exit status, and stdout parsed into *out (NULL if not JSON)
 * with the planner's solve_ms removed wherever it appears. */
static int cli(const char *env, const char *args, json_t **out, char **err) {
  char cmd[2048], errf[64] = "/dev/null", *text = NULL;
  int rc;
  if (err) snprintf(errf, sizeof(errf), "/tmp/mp-cli-server-err-%d", (int)getpid());
  snprintf(cmd, sizeof(cmd), "%s %s %s 2>%s", env ? env : "", mp_test_cli(), args, errf);
  rc = mp_test_run(cmd, &text);
  if (out) {
    *out = text ? json_loads(text, 0, NULL) : NULL;
    if (*out) json_object_del(*out, "solve_ms");
  }
  free(text);
  if (err) {
    *err = mp_test_read_file(errf, NULL);
    remove(errf);
  }
  return rc;
}

/* The command offline and against daemon d: the same exit code and the
 * same JSON text (keys in the same order). */
static void same_online(const mp_test_daemon_t *d, const char *args, int want_rc) {
  char a[1024];
  json_t *off, *on;
  char *t_off, *t_on;
  ck_assert_int_eq(cli(NULL, args, &off, NULL), want_rc);
  snprintf(a, sizeof(a), "%s --server http://127.0.0.1:%d", args, d->port);
  ck_assert_int_eq(cli(NULL, a, &on, NULL), want_rc);
  ck_assert_msg(off != NULL && on != NULL, "%s: no JSON answer", args);
  t_off = json_dumps(off, JSON_COMPACT);
  t_on = json_dumps(on, JSON_COMPACT);
  ck_assert_msg(strcmp(t_off, t_on) == 0, "%s:\noffline %.400s\nonline  %.400s", args, t_off, t_on);
  free(t_off);
  free(t_on);
  json_decref(off);
  json_decref(on);
}

START_TEST(test_same_as_offline) {
  mp_test_daemon_t d;
  mp_test_daemon_start(&d, NULL, 0);
  same_online(&d, "plan " VGG " --budget 2GiB --summary", 0);
  same_online(&d, "plan " VGG " --budget 2GiB --timeline", 0); /* the schedule and the timeline */
  same_online(&d, "plan " VGG " --budget 1GB --solver approx", 1);
  same_online(&d, "plan " VGG " --budget 3GB --solver memonger --objective memory --summary", 0);
  same_online(&d, "plan " VGG " --budget 3GB --accounting reference --summary", 0);
  same_online(&d, "plan " VGG " --budget 1.85GB --solver hybrid --copy-latency 7us --h2d-bandwidth 6GB/s", 0);
  same_online(&d, "fit " VGG " --budgets 2GiB,2.5GiB,10GB", 0);
  same_online(&d, "fit " VGG " --budgets 1GB,2GB,2.5GiB,10GB", 1);
  same_online(&d, "fit " VGG " --budgets 1.9GB,2.2GB --solver hybrid --copy-engines 1", 0);
  /* across GPUs of the shipped catalogue, and the least budget that fits */
  same_online(&d, "fit " VGG " --device a100-40gb,t4-16gb --least --budgets 1GB,2GiB,1GB", 1);
  same_online(&d, "fit " VGG " --device v100-16gb,h100-80gb --solver approx", 0);
  /* each GPU's largest batch of a symbolic graph */
  same_online(&d, "fit tests/graphs/sym_mlp.json --device t4-16gb,h100-80gb --maximize batch", 0);
  same_online(&d, "frontier " VGG, 0);
  same_online(&d, "frontier " VGG " --solver memonger", 0);
  same_online(&d, "frontier " VGG " --solver swap", 0);
  mp_test_daemon_cleanup(&d);
}
END_TEST

/* plan, fit and frontier --server on graphs the daemon has never seen: each
 * sends its graph with its request, so the daemon answers no request with a
 * 404 (which would trip an alert on the 4xx rate), as its metrics count. */
START_TEST(test_new_graphs_no_404) {
  mp_test_daemon_t d;
  char args[512], cmd[256], *text = NULL;
  mp_test_daemon_start(&d, NULL, 0);
  snprintf(args, sizeof(args), "plan tests/cli/tiny.json --budget 1GiB --server http://127.0.0.1:%d", d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, NULL), 0);
  snprintf(args, sizeof(args), "fit tests/graphs/tiny_resblock.json --budgets 1GiB --server http://127.0.0.1:%d",
           d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, NULL), 0);
  snprintf(args, sizeof(args), "frontier tests/graphs/tiny_layered.json --server http://127.0.0.1:%d", d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, NULL), 0);
  snprintf(cmd, sizeof(cmd), "curl -s http://127.0.0.1:%d/metrics", d.port);
  ck_assert_int_eq(mp_test_run(cmd, &text), 0);
  ck_assert_ptr_nonnull(strstr(text, "method=\"POST\",route=\"/v1/plans\",status=\"200\""));
  ck_assert_ptr_nonnull(strstr(text, "method=\"GET\",route=\"/v1/graphs/{hash}/frontier\",status=\"200\""));
  ck_assert_msg(strstr(text, "status=\"404\"") == NULL, "a 404 was answered:\n%s", text);
  free(text);
  mp_test_daemon_cleanup(&d);
}
END_TEST

/* fit answers each budget with what `memplan plan` returns there (fits,
 * peak, recomputation, overhead, solver, min_budget), below, at and
 * between frontier points, for the DP solvers and memonger. */
START_TEST(test_fit_offline) {
  static const char *const solvers[] = {"auto", "exact", "window", "approx", "memonger"};
  json_t *fr, *fit, *pts, *b;
  char args[512];
  json_int_t p0, p1, bs[4];
  size_t k, i;
  ck_assert_int_eq(cli(NULL, "frontier " VGG, &fr, NULL), 0);
  pts = json_object_get(fr, "points");
  ck_assert_uint_ge(json_array_size(pts), 2);
  p0 = json_integer_value(json_object_get(json_array_get(pts, 0), "budget"));
  p1 = json_integer_value(json_object_get(json_array_get(pts, 1), "budget"));
  bs[0] = p0 - 1, bs[1] = p0, bs[2] = (p0 + p1) / 2, bs[3] = 2000000000;
  for (k = 0; k < sizeof(solvers) / sizeof(solvers[0]); k++) {
    snprintf(args, sizeof(args), "fit " VGG " --budgets %lld,%lld,%lld,%lld --solver %s --compact", (long long)bs[0],
             (long long)bs[1], (long long)bs[2], (long long)bs[3], solvers[k]);
    ck_assert_int_eq(cli(NULL, args, &fit, NULL), 1);
    ck_assert_str_eq(json_string_value(json_object_get(fit, "graph_hash")),
                     json_string_value(json_object_get(fr, "graph_hash")));
    b = json_object_get(fit, "budgets");
    ck_assert_uint_eq(json_array_size(b), 4);
    for (i = 0; i < 4; i++) {
      json_t *e = json_array_get(b, i), *pl, *t;
      snprintf(args, sizeof(args), "plan " VGG " --budget %lld --solver %s --summary --compact", (long long)bs[i],
               solvers[k]);
      ck_assert_int_ge(cli(NULL, args, &pl, NULL), 0);
      ck_assert_int_eq(json_integer_value(json_object_get(e, "budget")), bs[i]);
      ck_assert(json_equal(json_object_get(e, "fits"), json_object_get(pl, "feasible")));
      ck_assert(json_equal(json_object_get(e, "solver_used"), json_object_get(pl, "solver_used")));
      ck_assert(json_equal(json_object_get(e, "exact"), json_object_get(pl, "exact")));
      if (json_is_true(json_object_get(pl, "feasible"))) {
        t = json_object_get(pl, "time");
        ck_assert(json_equal(json_object_get(e, "peak"), json_object_get(pl, "peak_bytes")));
        ck_assert(json_equal(json_object_get(e, "overhead_pct"), json_object_get(pl, "overhead_pct")));
        ck_assert(json_number_value(json_object_get(e, "recompute")) ==
                  json_number_value(json_object_get(t, "recompute")));
      } else {
        ck_assert(json_equal(json_object_get(e, "min_budget"), json_object_get(pl, "min_feasible_budget")));
      }
      json_decref(pl);
    }
    /* the DP solvers plan from the frontier's first point on, and not below */
    if (k < 3) {
      ck_assert(json_is_false(json_object_get(json_array_get(b, 0), "fits")));
      ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(b, 0), "min_budget")), p0);
      ck_assert(json_is_true(json_object_get(json_array_get(b, 1), "fits")));
    }
    json_decref(fit);
  }
  json_decref(fr);
  ck_assert_int_eq(cli(NULL, "fit " VGG, NULL, NULL), 2);                         /* no --budgets */
  ck_assert_int_eq(cli(NULL, "fit " VGG " --budgets 1GB,,2GB", NULL, NULL), 2);   /* an empty one */
  ck_assert_int_eq(cli(NULL, "fit " VGG " --budgets 1GB --solver none", NULL, NULL), 2);
}
END_TEST

/* Refusals: a 4xx is exit 2 with the daemon's message and field; no
 * daemon is exit 3; the token comes from --token-file or the environment;
 * a daemon that holds requests for less than the client asks (--max-wait)
 * is polled instead. */
START_TEST(test_refusals) {
  mp_test_daemon_t d;
  char flags[512], tok[256], bad[256], env[600], args[512], *err = NULL;
  json_t *o;
  mp_test_daemon_mkdir(&d);
  snprintf(tok, sizeof(tok), "%s/token", d.dir);
  snprintf(bad, sizeof(bad), "%s/bad", d.dir);
  mp_test_write_file(tok, "s3cret-token\n");
  mp_test_write_file(bad, "wrong\n");
  snprintf(flags, sizeof(flags), "--token-file %s --max-budgets 2 --max-wait 2", tok);
  mp_test_daemon_start_in(&d, flags, 0);

  snprintf(args, sizeof(args), "plan " VGG " --budget 2GiB --summary --server http://127.0.0.1:%d", d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "answered 401"));
  ck_assert_ptr_nonnull(strstr(err, "(unauthorized)"));
  free(err);
  snprintf(env, sizeof(env), "MEMPLAN_TOKEN_FILE=%s", bad);
  ck_assert_int_eq(cli(env, args, NULL, NULL), 2);
  snprintf(env, sizeof(env), "MEMPLAN_TOKEN_FILE=%s", tok);
  ck_assert_int_eq(cli(env, args, &o, NULL), 0);
  ck_assert(json_is_true(json_object_get(o, "feasible")));
  json_decref(o);

  /* a frontier of a graph the daemon lacks: sending it (a fit) needs the token */
  snprintf(args, sizeof(args), "frontier tests/graphs/cg_unet.txt --server http://127.0.0.1:%d", d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "answered 401"));
  free(err);
  snprintf(env, sizeof(env), "MEMPLAN_TOKEN_FILE=%s", tok);
  ck_assert_int_eq(cli(env, args, &o, NULL), 0);
  ck_assert(json_is_array(json_object_get(o, "points")));
  json_decref(o);

  /* the field at fault, as the daemon names it */
  snprintf(args, sizeof(args), "fit " VGG " --budgets 1GB,2GB,3GB --token-file %s --server http://127.0.0.1:%d/", tok,
           d.port);
  ck_assert_int_eq(cli(NULL, args, NULL, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "answered 413: $.budgets: "));
  free(err);
  /* MEMPLAN_URL names the daemon; --server "" plans here */
  snprintf(env, sizeof(env), "MEMPLAN_URL=http://127.0.0.1:%d MEMPLAN_TOKEN_FILE=%s", d.port, tok);
  ck_assert_int_eq(cli(env, "fit " VGG " --budgets 2GiB", &o, NULL), 0);
  json_decref(o);
  snprintf(env, sizeof(env), "MEMPLAN_URL=http://127.0.0.1:1");
  ck_assert_int_eq(cli(env, "fit " VGG " --budgets 2GiB --server=", NULL, NULL), 0);
  ck_assert_int_eq(cli(env, "fit " VGG " --budgets 2GiB", NULL, &err), 3);
  ck_assert_ptr_nonnull(strstr(err, "cannot connect to 127.0.0.1:1"));
  free(err);
  mp_test_daemon_cleanup(&d);

  ck_assert_int_eq(cli(NULL, "plan " VGG " --budget 2GiB --server https://127.0.0.1:1", NULL, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "https is not supported"));
  free(err);
  ck_assert_int_eq(cli(NULL, "frontier " VGG " --server http://127.0.0.1:1 --copy-engines 1", NULL, NULL), 2);
  ck_assert_int_eq(cli(NULL, "plan " VGG " --budget 2GiB --server http://127.0.0.1:99999", NULL, NULL), 2);
  ck_assert_int_eq(cli(NULL, "plan " VGG " --budget 2GiB --server http://127.0.0.1:1 --token-file /nonexistent", NULL,
                       NULL),
                   2);
  {
    /* the daemon's file of principals is not a client's token */
    char principals[128], pargs[300];
    snprintf(principals, sizeof(principals), "/tmp/mp-cli-principals-%d", (int)getpid());
    mp_test_write_file(principals, "alice work alice-token-0123456789\n");
    snprintf(pargs, sizeof(pargs), "plan " VGG " --budget 2GiB --server http://127.0.0.1:1 --token-file %s", principals);
    ck_assert_int_eq(cli(NULL, pargs, NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "token alone"));
    free(err);
    remove(principals);
  }
}
END_TEST

Suite *suite_cli_server(void) {
  Suite *s = suite_create("cli_server");
  TCase *tc = tcase_create("online");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_same_as_offline);
  tcase_add_test(tc, test_new_graphs_no_404);
  tcase_add_test(tc, test_fit_offline);
  tcase_add_test(tc, test_refusals);
  suite_add_tcase(s, tc);
  return s;
}
