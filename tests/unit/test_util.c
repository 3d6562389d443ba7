/* test_util.c - file, clock, process and graph-loading helpers for the tests. */
#include "test_util.h"

#include "formats.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

char *mp_test_read_file(const char *path, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  if (mp_read_file(path, &buf, &n, NULL) != 0) return NULL;
  if (len) *len = n;
  return buf;
}

void mp_test_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  size_t n = strlen(text);
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_msg(fwrite(text, 1, n, f) == n, "cannot write %s", path);
  ck_assert_msg(fclose(f) == 0, "cannot write %s", path);
}

double mp_test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void mp_test_nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

const char *mp_test_cli(void) {
  const char *p = getenv("MEMPLAN_CLI");
  return p && *p ? p : "build/memplan";
}

int mp_test_run(const char *cmd, char **out) {
  FILE *p = popen(cmd, "r");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  int st;
  if (p == NULL) return -1;
  for (;;) {
    size_t r;
    if (cap - n < 4096) {
      char *nb = realloc(buf, cap + 65536 + 1);
      if (nb == NULL) break;
      buf = nb;
      cap += 65536;
    }
    r = fread(buf + n, 1, cap - n, p);
    n += r;
    if (r == 0) break;
  }
  st = pclose(p);
  if (buf) buf[n] = '\0';
  if (out)
    *out = buf;
  else
    free(buf);
  if (st == -1 || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

mp_graph_t *mp_test_load_shipped(const char *name) {
  char path[128];
  mp_graph_t *g = NULL;
  mp_error_t err;
  int rc;
  snprintf(path, sizeof(path), "tests/graphs/cg_%s.txt", name);
  rc = mp_graph_load_file(path, MP_FORMAT_AUTO, NULL, &g, NULL, &err);
  ck_assert_msg(rc == 0, "loading %s: %s", path, err.message);
  return g;
}

/* The step letters, in mp_step_op_t order. */
static const char mp__test_ops[MP_STEP_OP_COUNT + 1] = "CRFBOIW";

int mp_test_schedule_parse(const mp_graph_t *g, int auto_free, const char *text,
                           mp_schedule_t **out, char *why, size_t n) {
  mp_schedule_t *s = mp_schedule_new();
  char *copy = strdup(text), *save = NULL, *tok;
  int rc = 0;
  *out = NULL;
  if (s == NULL || copy == NULL) {
    snprintf(why, n, "out of memory");
    rc = -1;
  } else {
    s->auto_free = auto_free;
  }
  for (tok = rc ? NULL : strtok_r(copy, ";\n", &save); tok; tok = strtok_r(NULL, ";\n", &save)) {
    char opc, name[64], extra;
    const char *p;
    long v;
    int got = sscanf(tok, " %c %63s %c", &opc, name, &extra);
    if (got <= 0) continue; /* blank */
    p = got == 2 && opc != '\0' ? strchr(mp__test_ops, opc) : NULL;
    v = p ? mp_graph_find(g, name) : -1;
    if (got != 2 || p == NULL) {
      snprintf(why, n, "step \"%.80s\" is not <letter of %s> <node>", tok, mp__test_ops);
      rc = -1;
    } else if (v < 0) {
      snprintf(why, n, "step \"%.80s\": unknown node %s", tok, name);
      rc = -1;
    } else if (mp_schedule_push(s, (mp_step_op_t)(p - mp__test_ops), (uint32_t)v) != 0) {
      snprintf(why, n, "out of memory");
      rc = -1;
    }
    if (rc) break;
  }
  free(copy);
  if (rc) {
    mp_schedule_free(s);
    return -1;
  }
  *out = s;
  return 0;
}

mp_schedule_t *mp_test_schedule(const mp_graph_t *g, int auto_free, const char *text) {
  mp_schedule_t *s;
  char why[256];
  ck_assert_msg(mp_test_schedule_parse(g, auto_free, text, &s, why, sizeof(why)) == 0, "%s", why);
  return s;
}

const char *mp_test_schedule_text(const mp_graph_t *g, const mp_schedule_t *s) {
  static char buf[4096];
  size_t i, off = 0;
  buf[0] = 0;
  for (i = 0; i < s->n_steps && off < sizeof(buf) - 80; i++)
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%c %s", i ? "; " : "",
                            mp__test_ops[s->steps[i].op], g->nodes[s->steps[i].node].id);
  return buf;
}

void mp_test_assert_no_sanitizer_report(const char *stderr_path) {
  size_t len;
  char *text = mp_test_read_file(stderr_path, &len);
  if (text) {
    int bad = strstr(text, "Sanitizer") != NULL || strstr(text, "runtime error") != NULL;
    ck_assert_msg(!bad, "memplan-server reported:\n%s", text);
    free(text);
  }
}

void mp_test_simulate(const mp_graph_t *g, const mp_schedule_t *s, const mp_device_t *dev,
                      mp_sim_report_t *rep) {
  mp_sim_options_t so;
  mp_error_t err;
  so.device = dev;
  ck_assert_msg(mp_simulate_ex(g, s, &so, rep, &err) == 0, "%s: %s", err.path, err.message);
}
