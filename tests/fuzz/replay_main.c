/* replay_main.c - runs fuzz inputs through a harness without libFuzzer, for
 * `make test`: each argument is a file, or a directory whose files (not
 * subdirectories; names starting with '.' skipped) are run in name order.
 * A harness that crashes or aborts fails the run; otherwise one line says
 * how many inputs went through. Linked with one tests/fuzz/fuzz_*.c. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  if (f == NULL) return -1;
  for (;;) {
    size_t r;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);
      if (nb == NULL) break;
      buf = nb;
      cap = cap ? cap * 2 : 65536;
    }
    r = fread(buf + n, 1, cap - n, f);
    if (r == 0) break;
    n += r;
  }
  fclose(f);
  /* an exact-size copy, so that reading past the input is caught */
  {
    uint8_t *exact = malloc(n ? n : 1);
    if (exact == NULL) {
      free(buf);
      return -1;
    }
    if (n) memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
  }
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  int i, count = 0;
  for (i = 1; i < argc; i++) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, k;
    if (stat(argv[i], &st) != 0) continue; /* a harness may have no regressions yet */
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) != 0) return 2;
      count++;
      continue;
    }
    if ((d = opendir(argv[i])) == NULL) return 2;
    while ((e = readdir(d)) != NULL) {
      char **nn;
      if (e->d_name[0] == '.') continue;
      nn = realloc(names, (n + 1) * sizeof(*names));
      if (nn == NULL) return 2;
      names = nn;
      names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
      if (names[n] == NULL) return 2;
      sprintf(names[n], "%s/%s", argv[i], e->d_name);
      n++;
    }
    closedir(d);
    qsort(names, n, sizeof(*names), by_name);
    for (k = 0; k < n; k++) {
      if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
        if (run_file(names[k]) != 0) return 2;
        count++;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("%s: %d inputs replayed\n", argv[0], count);
  return 0;
}
