/* units.c - byte quantities as people and schedulers write them: SI and IEC
 * suffixes, Kubernetes quantities and decimal exponents, exact to the byte. */
#include "units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char *name; /* lower case; matched case-insensitively */
  uint64_t mult;
} mp__unit_t;

#define MP__K 1000ULL
#define MP__KI 1024ULL

static const mp__unit_t mp__units[] = {
    {"", 1},
    {"b", 1},
    {"k", MP__K},          {"kb", MP__K},
    {"m", MP__K * MP__K}, /* "M"; a lone lower-case "m" (milli) is refused first */
    {"mb", MP__K * MP__K},
    {"g", MP__K * MP__K * MP__K},  {"gb", MP__K * MP__K * MP__K},
    {"t", MP__K * MP__K * MP__K * MP__K}, {"tb", MP__K * MP__K * MP__K * MP__K},
    {"p", MP__K * MP__K * MP__K * MP__K * MP__K},
    {"pb", MP__K * MP__K * MP__K * MP__K * MP__K},
    {"e", MP__K * MP__K * MP__K * MP__K * MP__K * MP__K},
    {"eb", MP__K * MP__K * MP__K * MP__K * MP__K * MP__K},
    {"ki", MP__KI},        {"kib", MP__KI},
    {"mi", MP__KI << 10},  {"mib", MP__KI << 10},
    {"gi", MP__KI << 20},  {"gib", MP__KI << 20},
    {"ti", MP__KI << 30},  {"tib", MP__KI << 30},
    {"pi", MP__KI << 40},  {"pib", MP__KI << 40},
    {"ei", MP__KI << 50},  {"eib", MP__KI << 50},
};

/* Up to 20 significant digits: every uint64 fits, and digits times the
 * largest unit (2^60) stays below 2^128. */
#define MP__MAX_SIG 20

/* The grammar (docs/units.md):
 *   quantity := number [ ("e"|"E") ["+"|"-"] digits ] [ unit ]
 *   number   := digits [ "." digits ] | "." digits
 * with blanks allowed around the unit. The value is number * 10^exponent *
 * unit, rounded down to a whole byte: a budget is a limit, and its floor is
 * the largest byte count within it. The rounded value is what every answer
 * echoes as its budget. An exponent and a unit cannot be combined ("1e3KiB"
 * reads as nothing anyone writes). */
int mp_parse_bytes(const char *s, uint64_t *out, mp_error_t *err) {
  const char *p = s;
  unsigned __int128 d = 0, v;
  long e10 = 0, ex = 0;
  uint64_t mult = 0;
  int nsig = 0, ndig = 0, has_exp = 0, mseen = 0;
  size_t i, ulen = 0;
  char unit[8];

  if (s == NULL) return mp_error_set(err, MP_EINVAL, "", "missing byte quantity");
  while (isspace((unsigned char)*p)) p++;
  /* Mantissa: all digits into d, the position of the point into e10. */
  for (; isdigit((unsigned char)*p) || (*p == '.' && !mseen); p++) {
    if (*p == '.') {
      mseen = 1;
      continue;
    }
    ndig++;
    if (d == 0 && *p == '0') {
      if (mseen) e10--;
      continue;
    }
    if (nsig == MP__MAX_SIG) {
      /* More significant digits than any byte count needs: those after the
       * point cannot change the floor by more than the limit allows, but we
       * refuse rather than guess. */
      if (!mseen) return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
      return mp_error_set(err, MP_EINVAL, "", "'%s' has too many digits", s);
    }
    d = d * 10 + (unsigned)(*p - '0');
    nsig++;
    if (mseen) e10--;
  }
  if (ndig == 0)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%s' is not a byte quantity (expected e.g. 12GiB, 2Gi, 1500M, 2e9 or 1048576)", s);
  /* A decimal exponent: 'e' or 'E' followed by an optional sign and digits
   * ("2E" alone is exabytes, the Kubernetes suffix). */
  if ((*p == 'e' || *p == 'E') &&
      (isdigit((unsigned char)p[1]) ||
       ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
    int neg = 0;
    p++;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    for (; isdigit((unsigned char)*p); p++)
      if (ex < 1000) ex = ex * 10 + (*p - '0');
    e10 += neg ? -ex : ex;
    has_exp = 1;
  }
  while (isspace((unsigned char)*p)) p++;
  while (*p && !isspace((unsigned char)*p)) {
    if (ulen + 1 >= sizeof(unit)) return mp_error_set(err, MP_EINVAL, "", "'%s' has an unknown unit", s);
    unit[ulen++] = *p++;
  }
  unit[ulen] = '\0';
  while (isspace((unsigned char)*p)) p++;
  if (*p != '\0') return mp_error_set(err, MP_EINVAL, "", "'%s' has trailing characters", s);
  if (strcmp(unit, "m") == 0)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%s': 'm' is milli in Kubernetes quantities (a thousandth of a byte); "
                        "write M or MB for megabytes", s);
  for (i = 0; i < sizeof(mp__units) / sizeof(mp__units[0]); i++)
    if (strcasecmp(unit, mp__units[i].name) == 0) mult = mp__units[i].mult;
  if (mult == 0)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%s' has an unknown unit '%s' (use B, k/kB, M/MB, G/GB, T/TB, P/PB, "
                        "E/EB, Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB, Pi/PiB or Ei/EiB)",
                        s, unit);
  if (has_exp && ulen > 0)
    return mp_error_set(err, MP_EINVAL, "",
                        "'%s' has both an exponent and a unit (write 2e9 or 2GB)", s);
  /* value = floor(d * mult * 10^e10), d < 10^20 and mult <= 2^60. A count
   * of bytes written without a unit ("0.5", "2.5e0", "3.5B") must be whole:
   * there the fraction is a typo or a misunderstanding, not a rounding. */
  v = d * mult;
  if (mult == 1 && e10 < 0) {
    unsigned __int128 q = v;
    long k;
    for (k = e10; k < 0 && q > 0; k++) {
      if (q % 10 != 0)
        return mp_error_set(err, MP_EINVAL, "", "'%s' is not a whole number of bytes", s);
      q /= 10;
    }
  }
  if (v == 0) {
    *out = 0;
    return 0;
  }
  for (; e10 > 0; e10--) {
    if (v > (unsigned __int128)UINT64_MAX) break;
    v *= 10;
  }
  for (; e10 < 0 && v > 0; e10++) v /= 10;
  if (v > (unsigned __int128)UINT64_MAX)
    return mp_error_set(err, MP_EOVERFLOW, "", "'%s' is more than 2^64-1 bytes", s);
  *out = (uint64_t)v;
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
