/* test_cases.c - the data-driven cases: one folder per case under
 * tests/cases/<name>/, run as one Check loop test per folder (sorted by name),
 * so a failure line names the case. A folder is a graph case or, when it
 * holds a schedule, a simulation case.
 *
 * A graph case holds:
 *   input.json or input.txt  the graph (exactly one of the two);
 *   format                   optional, one word (native|kusumoto|nodelink)
 *                            forcing the format; auto-detected otherwise;
 *   expected.json            the native document mp_graph_to_json() must give
 *                            for the loaded graph (compared with json_equal),
 *   or error                 line 1 "<CODE> <location>", CODE as mp_err_name()
 *                            gives it and location the error's JSON path, or
 *                            "L:C" (line:column) when the path is empty;
 *                            line 2 the exact message;
 *   warnings                 optional, with expected.json: the graph's
 *                            warnings, one a line, in order.
 *
 * The input is loaded with mp_graph_load_buffer() and no default name, so an
 * expected document carries a "name" only when the input itself has one.
 * Every loaded graph must also survive a round trip: parsing its native
 * document again gives the same mp_graph_hash().
 *
 * A simulation case holds:
 *   graph.json     the graph (any format; it must load);
 *   schedule       what to simulate, '#' lines being comments: "store_all"
 *                  (mp_schedule_store_all), "strategy S S ..." (the segment
 *                  of each activation in the graph's topological order, for
 *                  mp_schedule_from_strategy), or steps in the letters of
 *                  mp_test_schedule ("C a; R b; F c; B d; O a; I a; W a",
 *                  ';' or a new line between steps) after an optional line
 *                  "auto_free";
 *   or schedule.json  a memplan.schedule/1 document (mp_schedule_load_buffer);
 *   device.json    optional: a device object as the API takes it
 *                  (mp_json_device over mp_device_init's defaults); the
 *                  schedule then runs through mp_simulate_ex under it, else
 *                  through mp_simulate;
 *   report.json    the expected report: an object with any of the fields of
 *                  mp_sim_report_t named as in the struct (recomputed and
 *                  swapped as arrays of node ids, the count fields n_recomputed
 *                  and n_swapped being their lengths); each one given must
 *                  match exactly (integers as integers, other numbers as
 *                  doubles: write a real as text that reads back as the
 *                  same double);
 *   or error       the error of loading schedule.json or of simulating, in
 *                  the form above (the report must then hold no arrays);
 *                  with neither, nothing is simulated;
 *   steps          optional: the schedule as built, in letters (for the
 *                  builders);
 *   liveness       optional: the schedule after mp_schedule_insert_frees,
 *                  in letters. The pass must clear auto_free, a second pass
 *                  must refuse a schedule it gave frees, and with a report
 *                  the freed schedule must simulate to a peak no higher;
 *   min_budget     optional: mp_min_budget of the graph, bytes or an error
 *                  code name; with a report it must not exceed the peak.
 */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats.h"
#include "request_json.h"
#include "schedule.h"
#include "schedule_json.h"
#include "simulator.h"
#include "strategy.h"
#include "suites.h"
#include "test_util.h"

#define CASES_DIR "tests/cases"
#define FAIL_MAX 6000

static char **case_names;
static size_t n_cases;

static void free_case_names(void) {
  size_t i;
  for (i = 0; i < n_cases; i++) free(case_names[i]);
  free(case_names);
  case_names = NULL;
  n_cases = 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect the sub-directories of CASES_DIR, sorted. 0 or -1. */
static int scan_cases(void) {
  DIR *d = opendir(CASES_DIR);
  struct dirent *e;
  size_t cap = 0;
  if (d == NULL) return -1;
  while ((e = readdir(d)) != NULL) {
    char path[1024];
    struct stat st;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof(path), "%s/%s", CASES_DIR, e->d_name);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (n_cases == cap) {
      size_t ncap = cap ? 2 * cap : 64;
      char **nn = realloc(case_names, ncap * sizeof(*nn));
      if (nn == NULL) break;
      case_names = nn;
      cap = ncap;
    }
    if ((case_names[n_cases] = strdup(e->d_name)) == NULL) break;
    n_cases++;
  }
  closedir(d);
  if (n_cases > 1) qsort(case_names, n_cases, sizeof(*case_names), cmp_str);
  return 0;
}

static int exists(const char *dir, const char *file) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  return access(path, F_OK) == 0;
}

static char *read_in(const char *dir, const char *file, size_t *len) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  return mp_test_read_file(path, len);
}

/* Cut trailing whitespace in place. */
static void rtrim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
}

/* Next line of *p (without its newline, '\r' dropped), NULL at the end. The
 * text is modified in place. */
static char *next_line(char **p) {
  char *s = *p, *nl;
  if (s == NULL || *s == '\0') return NULL;
  nl = strchr(s, '\n');
  if (nl) {
    *nl = '\0';
    *p = nl + 1;
  } else {
    *p = s + strlen(s);
  }
  if (*s && s[strlen(s) - 1] == '\r') s[strlen(s) - 1] = '\0';
  return s;
}

/* Compact dump for messages, cut to fit in them. */
static void dump_short(const json_t *j, char *out, size_t n) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  snprintf(out, n, "%s", s ? s : "(dump failed)");
  if (s && strlen(s) >= n && n > 4) strcpy(out + n - 4, "...");
  free(s);
}

/* The two lines of an error file, joined by `sep`. */
static void describe_error(int rc, const mp_error_t *err, const char *sep, char *out, size_t n) {
  if (err->path[0])
    snprintf(out, n, "%s %s%s%s", mp_err_name(rc), err->path, sep, err->message);
  else
    snprintf(out, n, "%s %ld:%ld%s%s", mp_err_name(rc), err->line, err->column, sep,
             err->message);
}

/* Compare the graph's warnings with the lines of dir/warnings. */
static void check_warnings(const char *dir, const mp_graph_t *g, char *fail, size_t n) {
  char *text = read_in(dir, "warnings", NULL), *p = text, *line;
  size_t i = 0;
  if (text == NULL) {
    snprintf(fail, n, "cannot read the warnings file");
    return;
  }
  while ((line = next_line(&p)) != NULL) {
    if (i >= g->n_warnings) {
      snprintf(fail, n, "expected warning %zu \"%s\", but the graph has only %zu", i + 1, line,
               g->n_warnings);
      break;
    }
    if (strcmp(line, g->warnings[i]) != 0) {
      snprintf(fail, n, "warning %zu differs:\n  expected: %s\n  actual:   %s", i + 1, line,
               g->warnings[i]);
      break;
    }
    i++;
  }
  if (!fail[0] && i < g->n_warnings)
    snprintf(fail, n, "unexpected warning %zu: %s", i + 1, g->warnings[i]);
  free(text);
}

static void check_expected(const char *dir, const mp_graph_t *g, char *fail, size_t n) {
  char path[1024], h1[65], h2[65];
  json_error_t jerr;
  json_t *want, *got;
  mp_graph_t *g2 = NULL;
  mp_error_t err;

  snprintf(path, sizeof(path), "%s/expected.json", dir);
  want = json_load_file(path, MP_JSON_LOAD_FLAGS, &jerr);
  if (want == NULL) {
    snprintf(fail, n, "expected.json is not valid JSON: %d:%d: %s", jerr.line, jerr.column,
             jerr.text);
    return;
  }
  got = mp_graph_to_json(g);
  if (got == NULL) {
    snprintf(fail, n, "mp_graph_to_json returned NULL");
  } else if (!json_equal(want, got)) {
    char a[FAIL_MAX / 2 - 64], b[FAIL_MAX / 2 - 64];
    dump_short(want, a, sizeof(a));
    dump_short(got, b, sizeof(b));
    snprintf(fail, n, "output differs from expected.json\n  expected: %s\n  actual:   %s", a, b);
  } else {
    /* Round trip through the native format keeps the content hash. */
    int rc = mp_native_from_json(got, "$", NULL, &g2, &err);
    if (rc != 0) {
      char d[600];
      describe_error(rc, &err, " | ", d, sizeof(d));
      snprintf(fail, n, "its native document does not load back: %s", d);
    } else if (mp_graph_hash(g, h1) != 0 || mp_graph_hash(g2, h2) != 0) {
      snprintf(fail, n, "mp_graph_hash failed");
    } else if (strcmp(h1, h2) != 0) {
      snprintf(fail, n, "round trip through the native format changes the hash");
    }
  }
  mp_graph_free(g2);
  json_decref(got);
  json_decref(want);
  if (!fail[0] && exists(dir, "warnings")) check_warnings(dir, g, fail, n);
}

static void check_error(const char *dir, int rc, const mp_error_t *err, char *fail, size_t n) {
  char *text = read_in(dir, "error", NULL), *p = text, *l1, *l2;
  char want[1200], got[1200];
  if (text == NULL) {
    snprintf(fail, n, "cannot read the error file");
    return;
  }
  l1 = next_line(&p);
  l2 = next_line(&p);
  snprintf(want, sizeof(want), "%s | %s", l1 ? l1 : "", l2 ? l2 : "");
  free(text);
  if (rc == 0) {
    snprintf(fail, n, "no error, but this one was expected: %s", want);
    return;
  }
  describe_error(rc, err, " | ", got, sizeof(got));
  if (strcmp(want, got) != 0)
    snprintf(fail, n, "wrong error\n  expected: %s\n  actual:   %s", want, got);
  else if (err->code != rc)
    snprintf(fail, n, "err.code %d differs from the returned code %d", err->code, rc);
}

/* ---- Simulation cases ----------------------------------------------------- */

static int set_u64(json_t *o, const char *key, uint64_t v) {
  return json_object_set_new(o, key, v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v)
                                                              : json_real((double)v));
}

static json_t *node_ids(const mp_graph_t *g, const uint32_t *v, size_t n) {
  json_t *a = json_array();
  size_t i;
  for (i = 0; a != NULL && i < n; i++)
    json_array_append_new(a, json_string(v[i] < g->n_nodes ? g->nodes[v[i]].id : "?"));
  return a;
}

/* The report as the cases spell it: every field of mp_sim_report_t. */
static json_t *report_fields(const mp_graph_t *g, const mp_sim_report_t *r) {
  json_t *o = json_object(), *tl = json_array();
  size_t i;
  if (json_object_set_new(o, "timeline", tl) != 0) { /* takes tl, even on failure */
    json_decref(o);
    return NULL;
  }
  for (i = 0; i < r->n_steps; i++) json_array_append_new(tl, json_integer((json_int_t)r->timeline[i]));
  set_u64(o, "peak_bytes", r->peak_bytes);
  set_u64(o, "peak_step", r->peak_step);
  set_u64(o, "const_bytes", r->const_bytes);
  json_object_set_new(o, "time_forward", json_real(r->time_forward));
  json_object_set_new(o, "time_backward", json_real(r->time_backward));
  json_object_set_new(o, "time_recompute", json_real(r->time_recompute));
  json_object_set_new(o, "time_total", json_real(r->time_total));
  json_object_set_new(o, "overhead_pct", json_real(r->overhead_pct));
  set_u64(o, "n_steps", r->n_steps);
  set_u64(o, "n_recompute_steps", r->n_recompute_steps);
  json_object_set_new(o, "recomputed", node_ids(g, r->recomputed, r->n_recomputed));
  set_u64(o, "n_frees", r->n_frees);
  json_object_set_new(o, "time_stall", json_real(r->time_stall));
  json_object_set_new(o, "time_copy_d2h", json_real(r->time_copy_d2h));
  json_object_set_new(o, "time_copy_h2d", json_real(r->time_copy_h2d));
  set_u64(o, "n_swap_out", r->n_swap_out);
  set_u64(o, "n_swap_in", r->n_swap_in);
  set_u64(o, "bytes_swapped_out", r->bytes_swapped_out);
  set_u64(o, "bytes_swapped_in", r->bytes_swapped_in);
  set_u64(o, "host_peak_bytes", r->host_peak_bytes);
  set_u64(o, "n_reused", r->n_reused);
  json_object_set_new(o, "swapped", node_ids(g, r->swapped, r->n_swapped));
  return o;
}

/* Does `got` hold everything `want` says (objects: every key of want, the
 * rest ignored; arrays: the same length and elements)? 0, or -1 with the
 * first difference in fail. */
static int match_json(const json_t *want, const json_t *got, const char *where, char *fail,
                      size_t n) {
  char sub[256], a[512], b[512];
  int same;
  if (json_is_object(want) && json_is_object(got)) {
    const char *k;
    json_t *w;
    json_object_foreach((json_t *)want, k, w) {
      snprintf(sub, sizeof(sub), "%s.%s", where, k);
      if (json_object_get(got, k) == NULL) {
        snprintf(fail, n, "%s: the report has no such field", sub);
        return -1;
      }
      if (match_json(w, json_object_get(got, k), sub, fail, n)) return -1;
    }
    return 0;
  }
  if (json_is_array(want) && json_is_array(got) && json_array_size(want) == json_array_size(got)) {
    size_t i;
    for (i = 0; i < json_array_size(want); i++) {
      snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
      if (match_json(json_array_get(want, i), json_array_get(got, i), sub, fail, n)) return -1;
    }
    return 0;
  }
  if (json_is_integer(want) && json_is_integer(got))
    same = json_integer_value(want) == json_integer_value(got);
  else if (json_is_number(want) && json_is_number(got))
    same = json_number_value(want) == json_number_value(got);
  else
    same = json_equal(want, got);
  if (same) return 0;
  dump_short(want, a, sizeof(a));
  dump_short(got, b, sizeof(b));
  snprintf(fail, n, "%s differs\n  expected: %s\n  actual:   %s", where, a, b);
  return -1;
}

static void check_report(const char *dir, const mp_graph_t *g, const mp_sim_report_t *r,
                         char *fail, size_t n) {
  char path[1024];
  json_error_t jerr;
  json_t *want, *got;
  snprintf(path, sizeof(path), "%s/report.json", dir);
  want = json_load_file(path, MP_JSON_LOAD_FLAGS, &jerr);
  if (want == NULL || !json_is_object(want)) {
    snprintf(fail, n, "report.json is not a JSON object: %d:%d: %s", jerr.line, jerr.column,
             jerr.text);
  } else if ((got = report_fields(g, r)) == NULL) {
    snprintf(fail, n, "out of memory");
  } else {
    if (match_json(want, got, "report", fail, n) == 0 && json_object_size(want) == 0)
      snprintf(fail, n, "report.json asserts nothing");
    if (fail[0]) { /* the whole report, to mend the case by */
      char all[FAIL_MAX / 2];
      size_t used = strlen(fail);
      dump_short(got, all, sizeof(all));
      snprintf(fail + used, n - used, "\n  report:   %s", all);
    }
    json_decref(got);
  }
  json_decref(want);
}

/* The text of a file without its '#' lines (malloc'd), or NULL. */
static char *read_text(const char *dir, const char *file) {
  char *text = read_in(dir, file, NULL), *out, *p, *line;
  size_t used = 0;
  if (text == NULL || (out = malloc(strlen(text) + 2)) == NULL) {
    free(text);
    return NULL;
  }
  p = text;
  while ((line = next_line(&p)) != NULL) {
    if (line[strspn(line, " \t")] == '#') continue;
    used += (size_t)sprintf(out + used, "%s\n", line);
  }
  out[used] = '\0';
  free(text);
  return out;
}

/* A schedule in letters from dir/file. 0, or -1 with fail set. */
static int read_steps(const char *dir, const char *file, const mp_graph_t *g, int auto_free,
                      mp_schedule_t **out, char *fail, size_t n) {
  char *text = read_text(dir, file), why[300];
  int rc;
  *out = NULL;
  if (text == NULL) {
    snprintf(fail, n, "cannot read %s", file);
    return -1;
  }
  rc = mp_test_schedule_parse(g, auto_free, text, out, why, sizeof(why));
  if (rc) snprintf(fail, n, "%s: %s", file, why);
  free(text);
  return rc;
}

/* The strategy "S S ..." (one segment per activation, topological order) and
 * its schedule. */
static int strategy_schedule(const mp_graph_t *g, const char *segs, mp_schedule_t **out,
                             char *fail, size_t n) {
  mp_strategy_t *st = mp_strategy_new(g);
  mp_error_t err;
  const char *p = segs;
  size_t v;
  int rc = -1;
  *out = NULL;
  if (st == NULL) {
    snprintf(fail, n, "out of memory");
    return -1;
  }
  st->n_segments = 0;
  for (v = 0; v < g->n_nodes; v++) {
    char *end;
    unsigned long sg;
    if (g->nodes[v].kind != MP_KIND_ACTIVATION) continue;
    sg = strtoul(p, &end, 10);
    if (end == p || sg >= UINT32_MAX) {
      snprintf(fail, n, "schedule: strategy has no segment for '%s'", g->nodes[v].id);
      goto done;
    }
    p = end;
    st->seg[v] = (uint32_t)sg;
    if (sg + 1 > st->n_segments) st->n_segments = (uint32_t)sg + 1;
  }
  if (p[strspn(p, " \t\n")] != '\0') {
    snprintf(fail, n, "schedule: strategy has more segments than activations");
  } else if (mp_strategy_check(g, st, &err) != 0) {
    snprintf(fail, n, "schedule: bad strategy: %s", err.message);
  } else if (mp_schedule_from_strategy(g, st, out) != 0) {
    snprintf(fail, n, "mp_schedule_from_strategy failed");
  } else {
    rc = 0;
  }
done:
  mp_strategy_free(st);
  return rc;
}

/* The schedule file: a builder, or steps after an optional "auto_free". */
static int build_schedule(const char *dir, const mp_graph_t *g, mp_schedule_t **out, char *fail,
                          size_t n) {
  char *text = read_text(dir, "schedule"), *body, why[300];
  int rc = -1;
  *out = NULL;
  if (text == NULL) {
    snprintf(fail, n, "cannot read schedule");
    return -1;
  }
  body = text + strspn(text, " \t\n");
  if (strncmp(body, "store_all", 9) == 0 && body[9 + strspn(body + 9, " \t\n")] == '\0') {
    rc = mp_schedule_store_all(g, out) == 0 ? 0 : -1;
    if (rc) snprintf(fail, n, "mp_schedule_store_all failed");
  } else if (strncmp(body, "strategy ", 9) == 0) {
    rc = strategy_schedule(g, body + 9, out, fail, n);
  } else {
    int af = strncmp(body, "auto_free\n", 10) == 0;
    rc = mp_test_schedule_parse(g, af, af ? body + 10 : body, out, why, sizeof(why));
    if (rc) snprintf(fail, n, "schedule: %s", why);
  }
  free(text);
  return rc;
}

/* Are two schedules the same steps (auto_free aside)? */
static int same_steps(const mp_schedule_t *a, const mp_schedule_t *b) {
  size_t i;
  if (a->n_steps != b->n_steps) return 0;
  for (i = 0; i < a->n_steps; i++)
    if (a->steps[i].op != b->steps[i].op || a->steps[i].node != b->steps[i].node) return 0;
  return 1;
}

static void check_steps(const char *dir, const char *file, const mp_graph_t *g,
                        const mp_schedule_t *s, const char *what, char *fail, size_t n) {
  mp_schedule_t *want;
  if (read_steps(dir, file, g, 0, &want, fail, n) != 0) return;
  if (!same_steps(want, s)) {
    char *w = strdup(mp_test_schedule_text(g, want));
    snprintf(fail, n, "%s differs from %s\n  expected: %s\n  actual:   %s", what, file,
             w ? w : "?", mp_test_schedule_text(g, s));
    free(w);
  }
  mp_schedule_free(want);
}

static int run_sim(const mp_graph_t *g, const mp_schedule_t *s, const mp_device_t *dev,
                   mp_sim_report_t *r, mp_error_t *err) {
  mp_sim_options_t so;
  so.device = dev;
  mp_error_clear(err);
  return dev ? mp_simulate_ex(g, s, &so, r, err) : mp_simulate(g, s, r, err);
}

/* mp_schedule_insert_frees on a copy of s against dir/liveness; `peak` is
 * s's simulated peak, or UINT64_MAX when s was not simulated. */
static void check_liveness(const char *dir, const mp_graph_t *g, const mp_schedule_t *s,
                           const mp_device_t *dev, uint64_t peak, char *fail, size_t n) {
  mp_schedule_t *c = mp_schedule_new();
  mp_sim_report_t r;
  mp_error_t err;
  size_t i;
  int frees = 0;
  for (i = 0; c != NULL && i < s->n_steps; i++)
    if (mp_schedule_push(c, s->steps[i].op, s->steps[i].node) != 0) break;
  if (c == NULL || i < s->n_steps) {
    snprintf(fail, n, "out of memory");
  } else if ((c->auto_free = s->auto_free, mp_schedule_insert_frees(g, c)) != 0) {
    snprintf(fail, n, "mp_schedule_insert_frees refused the schedule");
  } else if (c->auto_free) {
    snprintf(fail, n, "mp_schedule_insert_frees left auto_free set");
  } else {
    check_steps(dir, "liveness", g, c, "the schedule with its frees", fail, n);
    for (i = 0; i < c->n_steps; i++) frees |= c->steps[i].op == MP_STEP_FREE;
  }
  if (!fail[0] && frees && mp_schedule_insert_frees(g, c) != MP_EINVAL)
    snprintf(fail, n, "a second mp_schedule_insert_frees did not refuse the frees");
  if (!fail[0] && peak != UINT64_MAX) {
    int rc = run_sim(g, c, dev, &r, &err);
    if (rc != 0)
      snprintf(fail, n, "the schedule with its frees does not simulate: %s", err.message);
    else if (r.peak_bytes > peak)
      snprintf(fail, n, "the liveness pass raises the peak from %llu to %llu",
               (unsigned long long)peak, (unsigned long long)r.peak_bytes);
    mp_sim_report_free(&r);
  }
  mp_schedule_free(c);
}

/* dir/min_budget against mp_min_budget(g); also not above `peak`. */
static void check_min_budget(const char *dir, const mp_graph_t *g, uint64_t peak, char *fail,
                             size_t n) {
  char *text = read_text(dir, "min_budget"), *end;
  uint64_t mb = 0;
  int rc = mp_min_budget(g, &mb);
  if (text == NULL) {
    snprintf(fail, n, "cannot read min_budget");
    return;
  }
  rtrim(text);
  if (rc != 0) {
    if (strcmp(text, mp_err_name(rc)) != 0)
      snprintf(fail, n, "mp_min_budget failed with %s, min_budget says %s", mp_err_name(rc), text);
  } else if (strtoull(text, &end, 10) != mb || end == text || *end != '\0') {
    snprintf(fail, n, "mp_min_budget is %llu, min_budget says %s", (unsigned long long)mb, text);
  } else if (mb > peak) {
    snprintf(fail, n, "mp_min_budget %llu is above the simulated peak %llu",
             (unsigned long long)mb, (unsigned long long)peak);
  }
  free(text);
}

static mp_graph_t *load_case_graph(const char *dir, char *fail, size_t n) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  size_t len;
  char *buf = read_in(dir, "graph.json", &len), d[800];
  if (buf == NULL) {
    snprintf(fail, n, "cannot read graph.json");
    return NULL;
  }
  if (mp_graph_load_buffer(buf, len, MP_FORMAT_AUTO, NULL, NULL, &g, NULL, &err) != 0) {
    describe_error(err.code, &err, " | ", d, sizeof(d));
    snprintf(fail, n, "graph.json does not load: %s", d);
  }
  free(buf);
  return g;
}

static int load_case_device(const char *dir, mp_device_t *dev, char *fail, size_t n) {
  char path[1024];
  json_error_t jerr;
  mp_error_t err;
  json_t *j;
  int rc;
  snprintf(path, sizeof(path), "%s/device.json", dir);
  if ((j = json_load_file(path, MP_JSON_LOAD_FLAGS, &jerr)) == NULL) {
    snprintf(fail, n, "device.json is not valid JSON: %d:%d: %s", jerr.line, jerr.column, jerr.text);
    return -1;
  }
  mp_device_init(dev);
  if ((rc = mp_json_device(j, "$", dev, &err)) != 0)
    snprintf(fail, n, "device.json: %s: %s", err.path, err.message);
  json_decref(j);
  return rc;
}

static void run_sim_case(const char *dir, char *fail, size_t n) {
  mp_graph_t *g;
  mp_schedule_t *s = NULL;
  mp_device_t dev;
  mp_sim_report_t r;
  mp_error_t err;
  int has_dev = exists(dir, "device.json"), has_report = exists(dir, "report.json");
  int has_error = exists(dir, "error"), rc;
  uint64_t peak = UINT64_MAX;

  memset(&r, 0, sizeof(r));
  if (exists(dir, "schedule") == exists(dir, "schedule.json")) {
    snprintf(fail, n, "needs exactly one of schedule and schedule.json");
    return;
  }
  if (has_report && has_error) {
    snprintf(fail, n, "has both report.json and error");
    return;
  }
  if (!has_report && !has_error && !exists(dir, "steps") && !exists(dir, "liveness") &&
      !exists(dir, "min_budget")) {
    snprintf(fail, n, "asserts nothing (no report.json, error, steps, liveness or min_budget)");
    return;
  }
  if ((g = load_case_graph(dir, fail, n)) == NULL) return;
  if (has_dev && load_case_device(dir, &dev, fail, n) != 0) goto done;
  if (exists(dir, "schedule.json")) {
    size_t len;
    char *buf = read_in(dir, "schedule.json", &len);
    if (buf == NULL) {
      snprintf(fail, n, "cannot read schedule.json");
      goto done;
    }
    mp_error_clear(&err);
    s = (mp_schedule_t *)1; /* must come back NULL on failure */
    rc = mp_schedule_load_buffer(g, buf, len, &s, &err);
    free(buf);
    if (rc != 0) {
      if (!has_error) {
        char d[800];
        describe_error(rc, &err, " | ", d, sizeof(d));
        snprintf(fail, n, "schedule.json does not load: %s", d);
      } else if (s != NULL) {
        snprintf(fail, n, "the schedule is not NULL after a failed load");
      } else {
        check_error(dir, rc, &err, fail, n);
      }
      s = NULL;
      goto done;
    }
  } else if (build_schedule(dir, g, &s, fail, n) != 0) {
    goto done;
  }
  if (exists(dir, "steps")) check_steps(dir, "steps", g, s, "the built schedule", fail, n);
  if (!fail[0] && (has_report || has_error)) {
    rc = run_sim(g, s, has_dev ? &dev : NULL, &r, &err);
    if (has_error) {
      check_error(dir, rc, &err, fail, n);
      if (!fail[0] && (r.timeline || r.recomputed || r.swapped))
        snprintf(fail, n, "a failed simulation left arrays in the report");
    } else if (rc != 0) {
      char d[800];
      describe_error(rc, &err, " | ", d, sizeof(d));
      snprintf(fail, n, "the schedule does not simulate: %s", d);
    } else {
      peak = r.peak_bytes;
      check_report(dir, g, &r, fail, n);
    }
  }
  if (!fail[0] && exists(dir, "liveness"))
    check_liveness(dir, g, s, has_dev ? &dev : NULL, peak, fail, n);
  if (!fail[0] && exists(dir, "min_budget")) check_min_budget(dir, g, peak, fail, n);
done:
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_graph_free(g);
}

/* Run one case; leaves a description of the first failure in `fail` ("" when
 * the case passes). */
static void run_case(const char *name, char *fail, size_t n) {
  char dir[512];
  const char *input;
  mp_format_t fmt = MP_FORMAT_AUTO, used;
  mp_graph_t *g = NULL;
  mp_error_t err;
  char *buf;
  size_t len;
  int has_json, has_txt, has_expected, has_error, rc;

  fail[0] = '\0';
  snprintf(dir, sizeof(dir), "%s/%s", CASES_DIR, name);
  if (exists(dir, "schedule") || exists(dir, "schedule.json")) {
    run_sim_case(dir, fail, n);
    return;
  }
  has_json = exists(dir, "input.json");
  has_txt = exists(dir, "input.txt");
  has_expected = exists(dir, "expected.json");
  has_error = exists(dir, "error");
  if (has_json == has_txt) {
    snprintf(fail, n, "needs exactly one of input.json and input.txt");
    return;
  }
  if (has_expected == has_error) {
    snprintf(fail, n, "needs exactly one of expected.json and error");
    return;
  }
  input = has_json ? "input.json" : "input.txt";
  if (exists(dir, "format")) {
    char *word = read_in(dir, "format", NULL);
    if (word == NULL) {
      snprintf(fail, n, "cannot read the format file");
      return;
    }
    rtrim(word);
    if (mp_format_parse(word, &fmt) != 0) {
      snprintf(fail, n, "unknown format \"%.40s\" in the format file", word);
      free(word);
      return;
    }
    free(word);
  }
  if ((buf = read_in(dir, input, &len)) == NULL) {
    snprintf(fail, n, "cannot read %s", input);
    return;
  }
  mp_error_clear(&err);
  rc = mp_graph_load_buffer(buf, len, fmt, NULL, NULL, &g, &used, &err);
  free(buf);
  if (has_error) {
    check_error(dir, rc, &err, fail, n);
  } else if (rc != 0) {
    char d[800];
    describe_error(rc, &err, " | ", d, sizeof(d));
    snprintf(fail, n, "the graph did not load: %s", d);
  } else {
    check_expected(dir, g, fail, n);
  }
  mp_graph_free(g);
}

START_TEST(test_case) {
  static char fail[FAIL_MAX];
  run_case(case_names[_i], fail, sizeof(fail));
  if (fail[0]) ck_abort_msg("case %s: %s", case_names[_i], fail);
}
END_TEST

START_TEST(test_no_cases) {
  ck_abort_msg("no case folders found under %s (run from the repository root)", CASES_DIR);
}
END_TEST

Suite *suite_cases(void) {
  Suite *s = suite_create("cases");
  TCase *tc = tcase_create("cases");
  if (case_names == NULL) {
    scan_cases();
    atexit(free_case_names);
  }
  if (n_cases > 0)
    tcase_add_loop_test(tc, test_case, 0, (int)n_cases);
  else
    tcase_add_test(tc, test_no_cases);
  suite_add_tcase(s, tc);
  return s;
}
