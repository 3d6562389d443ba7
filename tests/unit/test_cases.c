/* test_cases.c - the data-driven cases: one folder per case under
 * tests/cases/<name>/, run as one Check loop test per folder (sorted by name),
 * so a failure line names the case.
 *
 * A folder holds:
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
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats.h"
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
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
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
    snprintf(fail, n, "the graph loaded, but this error was expected: %s", want);
    return;
  }
  describe_error(rc, err, " | ", got, sizeof(got));
  if (strcmp(want, got) != 0)
    snprintf(fail, n, "wrong error\n  expected: %s\n  actual:   %s", want, got);
  else if (err->code != rc)
    snprintf(fail, n, "err.code %d differs from the returned code %d", err->code, rc);
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
