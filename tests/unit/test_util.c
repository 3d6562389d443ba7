/* test_util.c - file, process and graph-loading helpers for the tests. */
#include "test_util.h"

#include "formats.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

char *mp_test_read_file(const char *path, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  if (mp_read_file(path, &buf, &n, NULL) != 0) return NULL;
  if (len) *len = n;
  return buf;
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
