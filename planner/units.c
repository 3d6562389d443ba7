/* units.c - exact parsing of byte quantities with SI and IEC suffixes. */
#include "units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char *name;
  uint64_t mult;
} mp__unit_t;

static const mp__unit_t mp__units[] = {
    {"", 1},
    {"b", 1},
    {"kb", 1000ULL},
    {"mb", 1000000ULL},
    {"gb", 1000000000ULL},
    {"tb", 1000000000000ULL},
    {"pb", 1000000000000000ULL},
    {"kib", 1ULL << 10},
    {"mib", 1ULL << 20},
    {"gib", 1ULL << 30},
    {"tib", 1ULL << 40},
    {"pib", 1ULL << 50},
};

int mp_parse_bytes(const char *s, uint64_t *out, mp_error_t *err) {
  const char *p = s;
  uint64_t ip = 0, frac = 0, frac_den = 1, mult = 0, whole, part;
  int ndig = 0, nfrac = 0;
  size_t i;
  char unit[8];
  size_t ulen = 0;

  if (s == NULL) return mp_error_set(err, MP_EINVAL, "", "missing byte quantity");
  while (isspace((unsigned char)*p)) p++;
  for (; isdigit((unsigned char)*p); p++, ndig++) {
    if (__builtin_mul_overflow(ip, 10, &ip) || __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
      return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
  }
  if (*p == '.') {
    p++;
    for (; isdigit((unsigned char)*p); p++, nfrac++) {
      if (nfrac >= 18)
        return mp_error_set(err, MP_EINVAL, "", "'%s' has too many decimal places", s);
      frac = frac * 10 + (uint64_t)(*p - '0');
      frac_den *= 10;
    }
  }
  if (ndig == 0 && nfrac == 0)
    return mp_error_set(err, MP_EINVAL, "", "'%s' is not a byte quantity (expected e.g. 12GiB, 800MB or 1048576)", s);
  while (isspace((unsigned char)*p)) p++;
  while (*p && !isspace((unsigned char)*p)) {
    if (ulen + 1 >= sizeof(unit))
      return mp_error_set(err, MP_EINVAL, "", "'%s' has an unknown unit", s);
    unit[ulen++] = (char)tolower((unsigned char)*p++);
  }
  unit[ulen] = '\0';
  while (isspace((unsigned char)*p)) p++;
  if (*p != '\0') return mp_error_set(err, MP_EINVAL, "", "'%s' has trailing characters", s);
  for (i = 0; i < sizeof(mp__units) / sizeof(mp__units[0]); i++)
    if (strcmp(unit, mp__units[i].name) == 0) mult = mp__units[i].mult;
  if (mult == 0)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%s' has an unknown unit '%s' (use B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB or PiB)",
                        s, unit);
  if (__builtin_mul_overflow(ip, mult, &whole))
    return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
  /* frac/frac_den * mult must be a whole number of bytes. frac < frac_den
   * <= 10^18 and mult <= 2^50, so reduce the fraction first to avoid
   * overflow: divide both by their common factors of 2 and 5. */
  while (frac_den > 1 && frac % 10 == 0) {
    frac /= 10;
    frac_den /= 10;
  }
  {
    uint64_t m = mult, f = frac, d = frac_den;
    while (d % 2 == 0 && m % 2 == 0) d /= 2, m /= 2;
    while (d % 5 == 0 && m % 5 == 0) d /= 5, m /= 5;
    while (d % 2 == 0 && f % 2 == 0) d /= 2, f /= 2;
    while (d % 5 == 0 && f % 5 == 0) d /= 5, f /= 5;
    if (d != 1)
      return mp_error_set(err, MP_EINVAL, "", "'%s' is not a whole number of bytes", s);
    if (__builtin_mul_overflow(f, m, &part))
      return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
  }
  if (__builtin_add_overflow(whole, part, out))
    return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
  return 0;
}

const char *mp_format_bytes(uint64_t bytes, char *buf, size_t n) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, u++;
  if (u == 0)
    snprintf(buf, n, "%llu B", (unsigned long long)bytes);
  else
    snprintf(buf, n, "%.2f %s", v, names[u]);
  return buf;
}
