/* util.c - the clocks, hex encoding and random ids shared by the modules of
 * memplan-server (see util.h): request ids and job ids (http.c, jobs.c),
 * deadlines and durations, digests rendered as cache keys. */
#include "util.h"

#include <errno.h>
#include <stdint.h>
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

/* splitmix64: a whole-period 64-bit sequence from any seed. */
static uint64_t srv__splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void srv_request_id(char out[33]) {
  static _Thread_local uint64_t state;
  static _Thread_local int seeded;
  unsigned char raw[16];
  uint64_t a, b;
  int i;
  if (!seeded) {
    if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state))
      state = (uint64_t)srv_mono_ms() ^ (uint64_t)(uintptr_t)&state;
    seeded = 1;
  }
  a = srv__splitmix(&state);
  b = srv__splitmix(&state);
  for (i = 0; i < 8; i++) {
    raw[i] = (unsigned char)(a >> (8 * i));
    raw[8 + i] = (unsigned char)(b >> (8 * i));
  }
  srv_hex(raw, 16, out);
}
