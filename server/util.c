/* util.c - the clocks, hex encoding and random ids shared by the modules of
 * memplan-server (see util.h): request ids and job ids (http.c, jobs.c),
 * deadlines and durations, digests rendered as cache keys. */
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

double srv_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

double srv_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void srv_hex(const unsigned char *raw, size_t n, char *out) {
  static const char hex[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[2 * n] = '\0';
}

void srv_random_hex(char *buf, size_t nbytes) {
  unsigned char raw[64];
  size_t got = 0;
  if (nbytes > sizeof(raw)) nbytes = sizeof(raw);
  while (got < nbytes) {
    ssize_t n = getrandom(raw + got, nbytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      /* No entropy source: still unique enough for ids within a process. */
      for (; got < nbytes; got++) raw[got] = (unsigned char)(rand() ^ (int)srv_mono_ms());
      break;
    }
    got += (size_t)n;
  }
  srv_hex(raw, nbytes, buf);
}
