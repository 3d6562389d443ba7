/* test_cli.c - the memplan command as a user runs it: real processes, real
 * files, JSON on stdout checked field by field, exit codes, and one-line
 * errors on stderr. */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "test_util.h"

/* Run `memplan ARGS` (stderr to /dev/null unless captured by the caller's
 * redirection inside args); parse stdout as JSON when `out` is given. */
static int run(const char *args, json_t **out) {
  char cmd[2048];
  char *text = NULL;
  int rc;
  /* usage errors are expected here; keep their messages out of the log */
  snprintf(cmd, sizeof(cmd), "%s %s%s", mp_test_cli(), args, strstr(args, "2>") ? "" : " 2>/dev/null");
  rc = mp_test_run(cmd, &text);
  if (out) {
    json_error_t e;
    *out = text ? json_loads(text, 0, &e) : NULL;
  }
  free(text);
  return rc;
}

/* mp_test_run of a printf-formatted command line. */
static int runf(char **out, const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  return mp_test_run(cmd, out);
}

static json_int_t jint(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  ck_assert_msg(json_is_integer(v), "key %s is not an integer", key);
  return json_integer_value(v);
}

static double jnum(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  ck_assert_msg(json_is_number(v), "key %s is not a number", key);
  return json_number_value(v);
}

START_TEST(test_inspect_tiny) {
  json_t *o;
  ck_assert_int_eq(run("inspect tests/cli/tiny.json", &o), 0);
  ck_assert_ptr_nonnull(o);
  ck_assert_int_eq(jint(o, "nodes"), 3);
  ck_assert_int_eq(jint(o, "edges"), 2);
  ck_assert_int_eq(jint(o, "activation_bytes"), 60);
  ck_assert_int_eq(jint(o, "param_bytes"), 1000);
  /* Store-all on a chain a(10) -> b(20) -> c(30): the peak is in the
   * backward of c: values a, b (c's value was freed after forward, as
   * nothing reads it), seed grad c (30) and new grad b (20):
   * 1000 + 10 + 20 + 30 + 20 = 1080. */
  ck_assert_int_eq(jint(o, "peak_no_recompute"), 1080);
  /* min_budget: backward of c needs grad c 30 + grad b 20 + value b 20 = 70 */
  ck_assert_int_eq(jint(o, "min_budget"), 1070);
  ck_assert_str_eq(json_string_value(json_object_get(o, "format")), "native");
  ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "tiny-chain");
  ck_assert_uint_eq(strlen(json_string_value(json_object_get(o, "graph_hash"))), 64);
  json_decref(o);
}
END_TEST

/* Shipped graphs through the CLI. The no-recomputation peaks are the
 * simulator's; docs/reference-figures.md quotes the activation part of two of
 * them (VGG19 2.13 GB, ResNet50 3.47 GB), which these reproduce. */
START_TEST(test_inspect_shipped) {
  json_t *o;
  ck_assert_int_eq(run("inspect tests/graphs/cg_vgg19.txt", &o), 0);
  ck_assert_int_eq(jint(o, "nodes"), 46);
  ck_assert_int_eq(jnum(o, "forward_time"), 190);
  ck_assert_str_eq(json_string_value(json_object_get(o, "format")), "kusumoto");
  ck_assert_int_eq(jint(o, "peak_no_recompute") - jint(o, "param_bytes"), 2132279296);
  json_decref(o);
  ck_assert_int_eq(run("inspect tests/graphs/cg_resnet50.txt", &o), 0);
  ck_assert_int_eq(jint(o, "nodes"), 176);
  ck_assert_int_eq(jnum(o, "forward_time"), 653);
  ck_assert_int_eq(jint(o, "peak_no_recompute") - jint(o, "param_bytes"), 3468165120);
  json_decref(o);
  ck_assert_int_eq(run("inspect --format nodelink tests/graphs/tiny_resblock.json", &o), 0);
  ck_assert_int_eq(jint(o, "nodes"), 9);
  json_decref(o);
}
END_TEST

START_TEST(test_simulate) {
  json_t *o, *t, *tl;
  /* Hand-computed in tests/cli/tiny_recompute.schedule.json's order:
   * 1010 1030 1020 1050 1020 [c bwd: +30 seed +20 grad b = 1070 peak] 1040
   * 1020 1030 [b bwd: +10 grad a] 1020 1010 1000. */
  static const json_int_t expect[] = {1010, 1030, 1020, 1050, 1020, 1040,
                                      1020, 1030, 1020, 1010, 1000};
  size_t i;
  ck_assert_int_eq(run("simulate tests/cli/tiny.json tests/cli/tiny_recompute.schedule.json --timeline", &o), 0);
  ck_assert_int_eq(jint(o, "peak_bytes"), 1070);
  ck_assert_int_eq(jint(o, "peak_step"), 5);
  t = json_object_get(o, "time");
  ck_assert_double_eq(jnum(t, "forward"), 6);
  ck_assert_double_eq(jnum(t, "backward"), 12);
  ck_assert_double_eq(jnum(t, "recompute"), 1);
  ck_assert_double_eq(jnum(t, "total"), 19);
  tl = json_object_get(o, "timeline");
  ck_assert_uint_eq(json_array_size(tl), 11);
  for (i = 0; i < 11; i++) ck_assert_int_eq(json_integer_value(json_array_get(tl, i)), expect[i]);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "recomputed"), 0)), "a");
  json_decref(o);
}
END_TEST

/* `plan`'s own answer is a schedule `simulate` reads (the README's example),
 * and so is the daemon's GET answer, whose plan sits under "result": the
 * re-simulated peak and times are the plan's. */
START_TEST(test_simulate_plan_answer) {
  json_t *p, *o, *wrapped;
  char path[] = "/tmp/memplan-plan-XXXXXX", path2[] = "/tmp/memplan-get-XXXXXX", cmd[512];
  char *text = NULL;
  int fd;
  snprintf(cmd, sizeof(cmd), "%s plan tests/graphs/cg_resnet50.txt --budget 2GiB --solver hybrid",
           mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, &text), 0);
  ck_assert_int_ge(fd = mkstemp(path), 0);
  close(fd);
  mp_test_write_file(path, text);
  p = json_loads(text, 0, NULL);
  ck_assert_ptr_nonnull(p);
  free(text);
  snprintf(cmd, sizeof(cmd), "simulate tests/graphs/cg_resnet50.txt %s", path);
  ck_assert_int_eq(run(cmd, &o), 0);
  ck_assert_int_eq(jint(o, "peak_bytes"), jint(p, "peak_bytes"));
  ck_assert_int_eq(jint(o, "host_peak_bytes"), jint(p, "host_peak_bytes"));
  ck_assert_double_eq(jnum(json_object_get(o, "time"), "total"),
                      jnum(json_object_get(p, "time"), "total"));
  json_decref(o);
  wrapped = json_pack("{s:s, s:O}", "status", "done", "result", p);
  ck_assert_int_ge(fd = mkstemp(path2), 0);
  close(fd);
  text = json_dumps(wrapped, 0);
  mp_test_write_file(path2, text);
  free(text);
  snprintf(cmd, sizeof(cmd), "simulate tests/graphs/cg_resnet50.txt %s", path2);
  ck_assert_int_eq(run(cmd, &o), 0);
  ck_assert_int_eq(jint(o, "peak_bytes"), jint(p, "peak_bytes"));
  json_decref(o);
  json_decref(wrapped);
  json_decref(p);
  unlink(path);
  unlink(path2);
}
END_TEST

START_TEST(test_plan_none) {
  json_t *o, *t;
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1080 --solver none", &o), 0);
  ck_assert(json_is_true(json_object_get(o, "feasible")));
  ck_assert_int_eq(jint(o, "peak_bytes"), 1080);
  ck_assert_int_eq(jint(o, "budget"), 1080);
  t = json_object_get(o, "time");
  ck_assert_double_eq(jnum(t, "recompute"), 0);
  ck_assert_uint_eq(json_array_size(json_object_get(o, "schedule")), 3 + 3 + 3); /* 3 compute, 3 backward, 3 free */
  json_decref(o);
  /* one byte short: infeasible, exit 1, and the budget that would fit */
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1079 --solver none --summary", &o), 1);
  ck_assert(json_is_false(json_object_get(o, "feasible")));
  ck_assert_int_eq(jint(o, "min_feasible_budget"), 1080);
  ck_assert_ptr_null(json_object_get(o, "schedule"));
  json_decref(o);
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1KiB --solver none --summary", &o), 1);
  ck_assert_int_eq(jint(o, "budget"), 1024);
  json_decref(o);
}
END_TEST

START_TEST(test_errors_and_usage) {
  char *err = NULL;
  char cmd[1024];
  ck_assert_int_eq(run("", NULL), 2);
  ck_assert_int_eq(run("frobnicate", NULL), 2);
  ck_assert_int_eq(run("--help", NULL), 0);
  ck_assert_int_eq(run("inspect", NULL), 2);
  ck_assert_int_eq(run("inspect a b", NULL), 2);
  ck_assert_int_eq(run("inspect --bogus tests/cli/tiny.json", NULL), 2);
  ck_assert_int_eq(run("inspect --format xml tests/cli/tiny.json", NULL), 2);
  ck_assert_int_eq(run("inspect /nonexistent/graph.json", NULL), 2);
  ck_assert_int_eq(run("plan tests/cli/tiny.json", NULL), 2);            /* no budget */
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 12Q", NULL), 2); /* unknown unit */
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1500m", NULL), 2); /* Kubernetes milli */
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1GiB --solver magic", NULL), 2);
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1GiB --objective speed", NULL), 2);
  ck_assert_int_eq(run("inspect --max-nodes 2 tests/cli/tiny.json", NULL), 2);
  ck_assert_int_eq(run("frontier tests/cli/tiny.json --threads 0", NULL), 2);
  ck_assert_int_eq(run("frontier tests/cli/tiny.json --threads 65", NULL), 2);
  ck_assert_int_eq(run("plan tests/cli/tiny.json --budget 1GiB --threads two", NULL), 2);
  ck_assert_int_eq(run("inspect tests/cli/tiny.json --threads 2", NULL), 2); /* not an inspect option */
  /* the error line names the file, the path and the code */
  snprintf(cmd, sizeof(cmd), "%s simulate tests/cli/tiny.json tests/cli/tiny_bad.schedule.json 2>&1 >/dev/null",
           mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, &err), 2);
  ck_assert_str_eq(err, "memplan: tests/cli/tiny_bad.schedule.json: $.steps[2]: step 2 (compute 'b'): "
                        "input 'a' is not in memory (ESCHEDULE)\n");
  free(err);
  snprintf(cmd, sizeof(cmd), "%s inspect tests/cases/json_cycle/input.json 2>&1 >/dev/null", mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "cycle"));
  ck_assert_ptr_nonnull(strstr(err, "(ECYCLE)"));
  free(err);
  /* a missing graph is named as such, not as an I/O failure */
  snprintf(cmd, sizeof(cmd), "%s plan tests/graphs/no_such_graph.txt --budget 1GiB 2>&1 >/dev/null", mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, &err), 2);
  ck_assert_str_eq(err, "memplan: tests/graphs/no_such_graph.txt: no such file (ENOENT)\n");
  free(err);
  /* an unreadable one (root reads anything: then there is nothing to see) */
  if (geteuid() != 0) {
    mp_test_write_file("build-cli-unreadable.txt", "1 1\n");
    ck_assert_int_eq(chmod("build-cli-unreadable.txt", 0), 0);
    snprintf(cmd, sizeof(cmd), "%s inspect build-cli-unreadable.txt 2>&1 >/dev/null", mp_test_cli());
    ck_assert_int_eq(mp_test_run(cmd, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "(EACCES)"));
    free(err);
    remove("build-cli-unreadable.txt");
  }
}
END_TEST

/* `memplan --help` and every command's --help (or -h) print help on stdout
 * and exit 0, wherever the flag stands and whatever else is missing; the
 * solver lists name every solver, chain included. */
START_TEST(test_help) {
  static const char *const cmds[] = {"inspect", "convert", "simulate", "plan", "frontier", "fit"};
  char want[64], *out = NULL;
  size_t i;
  ck_assert_int_eq(runf(&out, "%s --help 2>&1", mp_test_cli()), 0);
  ck_assert_ptr_nonnull(strstr(out, "usage: memplan <command>"));
  ck_assert_ptr_nonnull(strstr(out, "| chain\n"));
  ck_assert_ptr_nonnull(strstr(out, "| memonger | sqrt | none | swap | hybrid | layrub"));
  for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
    snprintf(want, sizeof(want), "usage: memplan %s ", cmds[i]);
    free(out);
    out = NULL;
    /* stderr kept with stdout: nothing but the help may appear */
    ck_assert_int_eq(runf(&out, "%s %s --help 2>&1", mp_test_cli(), cmds[i]), 0);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s --help: %.80s", cmds[i], out);
    ck_assert_ptr_nonnull(strstr(out, "--format F"));
    ck_assert_ptr_nonnull(strstr(out, "exit status:"));
    free(out);
    out = NULL;
    ck_assert_int_eq(runf(&out, "%s %s tests/cli/tiny.json -h 2>&1", mp_test_cli(), cmds[i]), 0);
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s -h: %.80s", cmds[i], out);
  }
  free(out);
  out = NULL;
  ck_assert_int_eq(runf(&out, "%s plan --help", mp_test_cli()), 0);
  ck_assert_ptr_nonnull(strstr(out, "--budget B"));
  ck_assert_ptr_nonnull(strstr(out, "| chain\n"));
  ck_assert_ptr_nonnull(strstr(out, "--server URL"));
  ck_assert_ptr_nonnull(strstr(out, "--h2d-bandwidth"));
  free(out);
  out = NULL;
  ck_assert_int_eq(runf(&out, "%s fit --help", mp_test_cli()), 0);
  ck_assert_ptr_nonnull(strstr(out, "--budgets B,..."));
  free(out);
  out = NULL;
  ck_assert_int_eq(runf(&out, "%s inspect --help", mp_test_cli()), 0);
  ck_assert_ptr_null(strstr(out, "--budget")); /* only the options inspect takes */
  free(out);
}
END_TEST

START_TEST(test_convert_roundtrip) {
  char cmd[1024];
  json_t *a, *b;
  snprintf(cmd, sizeof(cmd), "%s convert --compact tests/graphs/cg_unet.txt > build-cli-convert.json", mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, NULL), 0);
  ck_assert_int_eq(run("inspect tests/graphs/cg_unet.txt", &a), 0);
  ck_assert_int_eq(run("inspect build-cli-convert.json", &b), 0);
  ck_assert_str_eq(json_string_value(json_object_get(a, "graph_hash")),
                   json_string_value(json_object_get(b, "graph_hash")));
  ck_assert_int_eq(jint(a, "peak_no_recompute"), jint(b, "peak_no_recompute"));
  json_decref(a);
  json_decref(b);
  remove("build-cli-convert.json");
}
END_TEST

START_TEST(test_frontier_and_plot) {
  json_t *o, *pts;
  size_t i;
  char *svg;
  ck_assert_int_eq(run("frontier tests/graphs/cg_vgg19.txt --plot build-cli-frontier.svg", &o), 0);
  pts = json_object_get(o, "points");
  ck_assert_uint_ge(json_array_size(pts), 2);
  for (i = 1; i < json_array_size(pts); i++) {
    json_t *a = json_array_get(pts, i - 1), *b = json_array_get(pts, i);
    ck_assert_int_lt(jint(a, "budget"), jint(b, "budget"));
    ck_assert(jnum(a, "recompute") > jnum(b, "recompute"));
  }
  /* the last point is plain backpropagation at its simulated peak */
  ck_assert_int_eq(jint(json_array_get(pts, i - 1), "budget"), 2726215968LL);
  ck_assert_double_eq(jnum(json_array_get(pts, i - 1), "recompute"), 0);
  ck_assert_int_eq(jint(o, "peak_no_recompute"), 2726215968LL);
  ck_assert_str_eq(json_string_value(json_object_get(o, "solver_used")), "exact");
  json_decref(o);
  svg = mp_test_read_file("build-cli-frontier.svg", NULL);
  ck_assert_ptr_nonnull(svg);
  ck_assert_ptr_nonnull(strstr(svg, "<svg"));
  /* one line per solver: exact (auto), approx, memonger */
  ck_assert_ptr_nonnull(strstr(strstr(strstr(svg, "<polyline") + 1, "<polyline") + 1, "<polyline"));
  ck_assert_ptr_nonnull(strstr(svg, "memonger"));
  free(svg);
  remove("build-cli-frontier.svg");
  ck_assert_int_eq(run("frontier tests/graphs/cg_vgg19.txt --solver none", NULL), 2);
}
END_TEST

/* --threads changes how fast, never what: the same frontier and plan on
 * one thread and on three (PSPNet: a family large enough to use them). */
START_TEST(test_threads_same_answer) {
  static const char *const args[] = {
      "frontier tests/graphs/cg_pspnet.txt --solver exact --compact --frontier-solves 12 --frontier-seconds 0 "
      "--threads %d",
      "plan tests/graphs/cg_pspnet.txt --solver exact --budget 3GiB --summary --compact "
      "--threads %d"};
  size_t k;
  for (k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
    json_t *o[2];
    char *text[2];
    int t;
    for (t = 0; t < 2; t++) {
      char a[512];
      snprintf(a, sizeof(a), args[k], t == 0 ? 1 : 3);
      ck_assert_int_eq(run(a, &o[t]), 0);
      ck_assert_ptr_nonnull(o[t]);
      json_object_del(o[t], "solve_ms");
      text[t] = json_dumps(o[t], JSON_SORT_KEYS | JSON_COMPACT);
    }
    ck_assert_ptr_nonnull(strstr(text[0], k == 0 ? "\"points\"" : "\"feasible\":true"));
    ck_assert_str_eq(text[0], text[1]);
    for (t = 0; t < 2; t++) {
      free(text[t]);
      json_decref(o[t]);
    }
  }
}
END_TEST

/* --progress draws on stderr only when it is a terminal: through a pipe
 * the output is exactly the same as without it, and in a pseudo-terminal
 * (script(1)) the bar shows the planner's phases and is erased at the end. */
START_TEST(test_progress_bar) {
  static const char *const args = "plan tests/graphs/cg_resnet50.txt --solver exact --budget 2GiB --summary --compact";
  char cmd[1024], *text = NULL, *err;
  json_t *o[2];
  char *dump[2];
  int t;
  char errf[] = "/tmp/memplan_progress_XXXXXX";
  int fd = mkstemp(errf);
  ck_assert_int_ge(fd, 0);
  close(fd);
  for (t = 0; t < 2; t++) {
    snprintf(cmd, sizeof(cmd), "%s%s 2>%s", args, t ? " --progress" : "", errf);
    ck_assert_int_eq(run(cmd, &o[t]), 0);
    ck_assert_ptr_nonnull(o[t]);
    json_object_del(o[t], "solve_ms");
    dump[t] = json_dumps(o[t], JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o[t]);
    err = mp_test_read_file(errf, NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(err, ""); /* nothing on stderr, bar or not */
    free(err);
  }
  ck_assert_str_eq(dump[0], dump[1]);
  free(dump[0]);
  free(dump[1]);
  unlink(errf);
  if (access("/usr/bin/script", X_OK) != 0) return; /* util-linux; the pipe case is the one that matters */
  snprintf(cmd, sizeof(cmd), "script -qec '%s %s --progress >/dev/null' /dev/null", mp_test_cli(), args);
  ck_assert_int_eq(mp_test_run(cmd, &text), 0);
  ck_assert_ptr_nonnull(text);
  ck_assert_msg(strstr(text, "\r\033[K[") != NULL, "no bar drawn: %s", text);
  ck_assert_ptr_nonnull(strstr(text, "start"));
  ck_assert_ptr_nonnull(strstr(text, " s"));
  /* erased at the end: the last thing written clears the line */
  ck_assert(strlen(text) >= 4 && strcmp(text + strlen(text) - 4, "\r\033[K") == 0);
  free(text);
  /* the frontier too */
  snprintf(cmd, sizeof(cmd), "script -qec '%s frontier tests/graphs/cg_vgg19.txt --solver approx --progress >/dev/null' /dev/null",
           mp_test_cli());
  ck_assert_int_eq(mp_test_run(cmd, &text), 0);
  ck_assert_ptr_nonnull(strstr(text, "\r\033[K["));
  free(text);
}
END_TEST

Suite *suite_cli(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("commands");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_inspect_tiny);
  tcase_add_test(tc, test_inspect_shipped);
  tcase_add_test(tc, test_simulate);
  tcase_add_test(tc, test_simulate_plan_answer);
  tcase_add_test(tc, test_plan_none);
  tcase_add_test(tc, test_errors_and_usage);
  tcase_add_test(tc, test_help);
  tcase_add_test(tc, test_convert_roundtrip);
  tcase_add_test(tc, test_frontier_and_plot);
  tcase_add_test(tc, test_threads_same_answer);
  tcase_add_test(tc, test_progress_bar);
  suite_add_tcase(s, tc);
  return s;
}
