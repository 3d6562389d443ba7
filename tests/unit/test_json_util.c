/* test_json_util.c - the shortest exact form of reals (mp_json_real_text)
 * and the serialiser that applies it (mp_json_dumps). */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "suites.h"

static const char *real_text(double d) {
  static char out[MP_JSON_REAL_MAX];
  mp_json_real_text(d, out);
  return out;
}

START_TEST(test_known_forms) {
  ck_assert_str_eq(real_text(1e-5), "1e-5");
  ck_assert_str_eq(real_text(0.1), "0.1");
  ck_assert_str_eq(real_text(0.00025), "0.00025");
  ck_assert_str_eq(real_text(0.0001), "0.0001");
  ck_assert_str_eq(real_text(1.5e-7), "1.5e-7");
  ck_assert_str_eq(real_text(3.0), "3.0");
  ck_assert_str_eq(real_text(0.0), "0.0");
  ck_assert_str_eq(real_text(-0.0), "-0.0");
  ck_assert_str_eq(real_text(100.0), "100.0");
  ck_assert_str_eq(real_text(-2.5), "-2.5");
  ck_assert_str_eq(real_text(1e16), "10000000000000000.0");
  ck_assert_str_eq(real_text(31722300588172752.0), "31722300588172750.0");
  ck_assert_str_eq(real_text(1e17), "1e17");
  ck_assert_str_eq(real_text(1.2345e300), "1.2345e300");
  ck_assert_str_eq(real_text(5e-324), "5e-324");
  ck_assert_str_eq(real_text(DBL_MAX), "1.7976931348623157e308");
  ck_assert_str_eq(real_text(100.0 / 19.0), "5.2631578947368425");
  ck_assert_str_eq(real_text(0.1 + 0.2), "0.30000000000000004");
}
END_TEST

/* Any double: reads back exactly, one digit fewer would not, and the text
 * is never longer than jansson's %.17g form of it. */
START_TEST(test_random_round_trip) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  int i;
  for (i = 0; i < 20000; i++) {
    char out[MP_JSON_REAL_MAX], fewer[MP_JSON_REAL_MAX];
    double d;
    json_t *j;
    char *jt;
    size_t n, digits = 0, k;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    /* half random bit patterns, half "measured" values such as a/b */
    if (i % 2) {
      memcpy(&d, &x, sizeof(d));
      if (!isfinite(d)) continue;
    } else {
      d = (double)(x % 1000003) / (double)((x >> 32) % 9973 + 1);
    }
    n = mp_json_real_text(d, out);
    ck_assert_uint_eq(n, strlen(out));
    ck_assert_msg(strtod(out, NULL) == d, "%s does not read back as %.17g", out, d);
    ck_assert_msg(strpbrk(out, ".e") != NULL, "%s does not read as a real", out);
    /* significant digits: the mantissa's digits without leading or
     * trailing zeros */
    {
      char m[MP_JSON_REAL_MAX];
      size_t a = 0, b;
      for (k = 0; out[k] && out[k] != 'e'; k++)
        if (out[k] >= '0' && out[k] <= '9') m[a++] = out[k];
      b = a;
      a = 0;
      while (a < b && m[a] == '0') a++;
      while (b > a && m[b - 1] == '0') b--;
      digits = b - a;
    }
    if (digits > 1 && d != 0) {
      snprintf(fewer, sizeof(fewer), "%.*e", (int)digits - 2, d);
      ck_assert_msg(strtod(fewer, NULL) != d, "%s: %s has fewer digits", out, fewer);
    }
    j = json_real(d);
    jt = json_dumps(j, JSON_ENCODE_ANY);
    ck_assert_msg(strlen(out) <= strlen(jt), "%s is longer than jansson's %s", out, jt);
    free(jt);
    json_decref(j);
  }
}
END_TEST

START_TEST(test_dumps) {
  json_t *o = json_pack("{s:f,s:i,s:s,s:[f,f,I],s:{s:f}}", "latency", 1e-5, "n", 42, "text",
                        "1.0000000000000001e-05 \"0.10000000000000001\" \\", "a", 0.1, -2.5, (json_int_t)-7, "o",
                        "x", 190.0);
  char *t = mp_json_dumps(o, JSON_COMPACT);
  ck_assert_str_eq(t, "{\"latency\":1e-5,\"n\":42,\"text\":\"1.0000000000000001e-05 \\\"0.10000000000000001\\\" "
                      "\\\\\",\"a\":[0.1,-2.5,-7],\"o\":{\"x\":190.0}}");
  free(t);
  t = mp_json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
  ck_assert_ptr_nonnull(strstr(t, "\"latency\": 1e-5"));
  ck_assert_ptr_nonnull(strstr(t, "    0.1,\n"));
  free(t);
  json_decref(o);
}
END_TEST

Suite *suite_json_util(void) {
  Suite *s = suite_create("json_util");
  TCase *tc = tcase_create("reals");
  tcase_add_test(tc, test_known_forms);
  tcase_add_test(tc, test_random_round_trip);
  tcase_add_test(tc, test_dumps);
  suite_add_tcase(s, tc);
  return s;
}
