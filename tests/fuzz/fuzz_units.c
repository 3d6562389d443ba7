/* fuzz_units.c - libFuzzer harness for the quantity parsers: byte counts
 * (planner/units.c mp_parse_bytes), bandwidths and durations
 * (proto/request_json.c mp_parse_rate, mp_parse_seconds) and the prefetch
 * distance (mp_parse_prefetch). The input, cut at its first NUL, is given
 * to each. What parses must be in range, and a byte count must read back
 * the same from its decimal form; what does not must say why. Built by
 * `make fuzz`, replayed by `make test` (tests/fuzz/replay_main.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "request_json.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  mp_error_t err;
  uint64_t bytes, again;
  double x;
  uint32_t pf;
  char dec[32];
  if (s == NULL) return 0;
  memcpy(s, data, size);
  s[size] = '\0';

  mp_error_clear(&err);
  if (mp_parse_bytes(s, &bytes, &err) == 0) {
    snprintf(dec, sizeof(dec), "%llu", (unsigned long long)bytes);
    if (mp_parse_bytes(dec, &again, &err) != 0 || again != bytes) abort();
  } else if (err.message[0] == '\0') {
    abort();
  }
  mp_error_clear(&err);
  if (mp_parse_rate(s, &x, &err) == 0) {
    if (!(isfinite(x) && x > 0)) abort();
  } else if (err.message[0] == '\0') {
    abort();
  }
  mp_error_clear(&err);
  if (mp_parse_seconds(s, &x, &err) == 0) {
    if (!(isfinite(x) && x >= 0)) abort();
  } else if (err.message[0] == '\0') {
    abort();
  }
  mp_error_clear(&err);
  if (mp_parse_prefetch(s, &pf, &err) == 0) {
    if (pf > MP_DEVICE_MAX_PREFETCH) abort();
  } else if (err.message[0] == '\0') {
    abort();
  }
  free(s);
  return 0;
}
