/* json_util.c - see json_util.h.
 *
 * Shortest reals: jansson has no hook for how a real is printed, so
 * mp_json_dumps lets it serialise the document and then rewrites each real
 * token in place. A token is a real when it is outside strings and holds a
 * '.' or an exponent (jansson prints integers without either). The rewrite
 * never lengthens a token: it keeps %.17g's notation rule and has at most
 * as many digits, so the pass works in the same buffer. */
#include "json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *mp_json_u64(uint64_t x) {
  if (x <= (uint64_t)INT64_MAX) return json_integer((json_int_t)x);
  return json_real((double)x);
}

json_t *mp_json_number(double d) {
  if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0)
    return json_integer((json_int_t)d);
  return json_real(d);
}

int mp_json_set(json_t *obj, const char *key, json_t *value) {
  if (value == NULL) return -1;
  return json_object_set_new(obj, key, value);
}

size_t mp_json_real_text(double d, char out[MP_JSON_REAL_MAX]) {
  char e[MP_JSON_REAL_MAX], digits[24];
  const char *x, *q;
  int p, exp10, nd = 0;
  size_t n = 0;
  /* the fewest significant digits that read back as d (17 always do) */
  for (p = 1; p < 17; p++) {
    snprintf(e, sizeof(e), "%.*e", p - 1, d);
    if (strtod(e, NULL) == d) break;
  }
  if (p == 17) snprintf(e, sizeof(e), "%.16e", d);
  x = strchr(e, 'e');
  exp10 = atoi(x + 1);
  if (exp10 < -4 || exp10 > 16) {
    /* the mantissa as printed, then the exponent without '+' or padding */
    return (size_t)snprintf(out, MP_JSON_REAL_MAX, "%.*se%d", (int)(x - e), e, exp10);
  }
  /* plain: the same digits placed around the point */
  for (q = e; q < x; q++)
    if (*q >= '0' && *q <= '9') digits[nd++] = *q;
  if (e[0] == '-') out[n++] = '-';
  if (exp10 < 0) {
    out[n++] = '0';
    out[n++] = '.';
    for (p = -1; p > exp10; p--) out[n++] = '0';
    memcpy(out + n, digits, (size_t)nd);
    n += (size_t)nd;
  } else {
    for (p = 0; p <= exp10; p++) out[n++] = p < nd ? digits[p] : '0';
    out[n++] = '.';
    if (nd > exp10 + 1) {
      memcpy(out + n, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
      n += (size_t)(nd - exp10 - 1);
    } else {
      out[n++] = '0';
    }
  }
  out[n] = '\0';
  return n;
}

/* Rewrite the reals of a jansson text in place (see the top comment). */
static void mp__shorten_reals(char *s) {
  char *r = s, *w = s;
  while (*r) {
    if (*r == '"') {
      /* copy the string, escapes included */
      *w++ = *r++;
      while (*r && *r != '"') {
        if (*r == '\\' && r[1]) *w++ = *r++;
        *w++ = *r++;
      }
      if (*r) *w++ = *r++;
    } else if (*r == '-' || (*r >= '0' && *r <= '9')) {
      size_t n = strspn(r, "+-0123456789.eE");
      char tok[MP_JSON_REAL_MAX], out[MP_JSON_REAL_MAX];
      size_t m;
      if (n < sizeof(tok) && memchr(r, '.', n) == NULL && memchr(r, 'e', n) == NULL && memchr(r, 'E', n) == NULL) {
        memmove(w, r, n); /* an integer */
      } else if (n < sizeof(tok)) {
        memcpy(tok, r, n);
        tok[n] = '\0';
        m = mp_json_real_text(strtod(tok, NULL), out);
        if (m <= n) {
          memcpy(w, out, m);
          w += m;
          r += n;
          continue;
        }
        memmove(w, r, n); /* cannot happen (see the top comment); keep jansson's */
      } else {
        memmove(w, r, n);
      }
      w += n;
      r += n;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

char *mp_json_dumps(const json_t *v, size_t flags) {
  char *text = json_dumps(v, flags);
  if (text) mp__shorten_reals(text);
  return text;
}
