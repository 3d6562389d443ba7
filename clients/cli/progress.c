/* progress.c - `memplan plan|frontier --progress`: a progress bar on
 * stderr, from the planner's progress callback offline or from the
 * daemon's "progress" object with --server. Only a terminal gets it: when
 * stderr is a file or a pipe nothing is written, so logs and scripts see
 * the same output with or without the flag. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MP__BAR 24

static double mp__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void mp_cli_progress_begin(mp_cli_progress_t *p, int asked) {
  memset(p, 0, sizeof(*p));
  p->on = asked && isatty(STDERR_FILENO);
  p->t0_ms = mp__mono_ms();
  p->last_ms = -1e9;
}

void mp_cli_progress_draw(mp_cli_progress_t *p, const char *phase, double fraction, double elapsed_ms) {
  char bar[MP__BAR + 1], pct[8], name[24];
  double now;
  int i, fill;
  if (!p->on) return;
  now = mp__mono_ms();
  if (now - p->last_ms < 100) return;
  p->last_ms = now;
  if (elapsed_ms < 0) elapsed_ms = now - p->t0_ms;
  if (fraction > 1) fraction = 1;
  fill = fraction >= 0 ? (int)(fraction * MP__BAR + 0.5) : 0;
  for (i = 0; i < MP__BAR; i++) {
    /* an unknown fraction: a marker that moves with the clock */
    if (fraction < 0) bar[i] = (i == (int)(now / 125) % MP__BAR) ? '#' : '-';
    else bar[i] = i < fill ? '#' : '-';
  }
  bar[MP__BAR] = '\0';
  if (fraction >= 0) snprintf(pct, sizeof(pct), "%3.0f%%", fraction * 100);
  else snprintf(pct, sizeof(pct), "   ?");
  /* the planner's phase names, as words: reverse_pass -> reverse pass */
  snprintf(name, sizeof(name), "%s", phase ? phase : "");
  for (i = 0; name[i]; i++)
    if (name[i] == '_') name[i] = ' ';
  fprintf(stderr, "\r\033[K[%s] %s %-12s %.1f s", bar, pct, name, elapsed_ms / 1000.0);
  fflush(stderr);
  p->drawn = 1;
}

void mp_cli_progress_cb(void *arg, const char *phase, double fraction) {
  mp_cli_progress_draw(arg, phase, fraction, -1);
}

void mp_cli_progress_json(mp_cli_progress_t *p, const json_t *answer) {
  const json_t *pr = json_object_get(answer, "progress"), *f, *e;
  if (!p->on) return;
  f = json_object_get(pr, "fraction");
  e = json_object_get(pr, "elapsed_ms");
  mp_cli_progress_draw(p, pr ? json_string_value(json_object_get(pr, "phase")) : "queued",
                       json_is_number(f) ? json_number_value(f) : -1, json_is_number(e) ? json_number_value(e) : -1);
}

void mp_cli_progress_end(mp_cli_progress_t *p) {
  if (p->on && p->drawn) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  p->drawn = 0;
}
