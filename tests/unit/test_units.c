/* test_units.c - byte quantity parsing: exact values, Kubernetes quantities,
 * exponents, fractions rounded down, refusals, overflow, and budgets in JSON. */
#include <check.h>
#include <jansson.h>

#include "request_json.h"

#include "suites.h"
#include "units.h"

START_TEST(test_parse_ok) {
  uint64_t v;
  ck_assert_int_eq(mp_parse_bytes("1048576", &v, NULL), 0);
  ck_assert_uint_eq(v, 1048576);
  ck_assert_int_eq(mp_parse_bytes("12GiB", &v, NULL), 0);
  ck_assert_uint_eq(v, 12ULL << 30);
  ck_assert_int_eq(mp_parse_bytes("800MB", &v, NULL), 0);
  ck_assert_uint_eq(v, 800000000ULL);
  ck_assert_int_eq(mp_parse_bytes(" 1.5 gib ", &v, NULL), 0);
  ck_assert_uint_eq(v, 1610612736ULL);
  ck_assert_int_eq(mp_parse_bytes("0.001kB", &v, NULL), 0);
  ck_assert_uint_eq(v, 1);
  ck_assert_int_eq(mp_parse_bytes("18446744073709551615", &v, NULL), 0);
  ck_assert_uint_eq(v, UINT64_MAX);
  ck_assert_int_eq(mp_parse_bytes("16EiB", &v, NULL), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("15PiB", &v, NULL), 0);
  ck_assert_uint_eq(v, 15ULL << 50);
  ck_assert_int_eq(mp_parse_bytes("15EiB", &v, NULL), 0);
  ck_assert_uint_eq(v, 15ULL << 60);
}
END_TEST

/* Kubernetes quantities, exponents, fractions rounded down with a unit and
 * refused without one. */
START_TEST(test_parse_schedulers) {
  static const struct {
    const char *text;
    uint64_t bytes;
  } ok[] = {
      {"2Gi", 2ULL << 30},
      {"2G", 2000000000ULL},
      {"2g", 2000000000ULL},
      {"1500M", 1500000000ULL},
      {"512Ki", 524288ULL},
      {"100k", 100000ULL},
      {"1E", 1000000000000000000ULL},
      {"2e9", 2000000000ULL},
      {"2E9", 2000000000ULL},
      {"1.5e9", 1500000000ULL},
      {"2.5KiB", 2560},
      {"1e+3", 1000},
      {"1.2GiB", 1288490188ULL},  /* 1288490188.8 */
      {"1.2Gi", 1288490188ULL},
      {"0.3KiB", 307},            /* 307.2 */
      {"2.5e3", 2500},            /* whole, though written with a point */
      {"3.0B", 3},
      {".5KiB", 512},
      {"0.0000000000000000001GB", 0},
      {"18446744073709551615", UINT64_MAX},
      {"1.8446744073709551615e19", UINT64_MAX},
  };
  uint64_t v;
  mp_error_t err;
  size_t i;
  for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    ck_assert_msg(mp_parse_bytes(ok[i].text, &v, &err) == 0, "%s: %s", ok[i].text, err.message);
    ck_assert_msg(v == ok[i].bytes, "%s: %llu, expected %llu", ok[i].text,
                  (unsigned long long)v, (unsigned long long)ok[i].bytes);
  }
  ck_assert_int_eq(mp_parse_bytes("1500m", &v, &err), MP_EINVAL);
  ck_assert_str_eq(err.message, "'1500m': 'm' is milli in Kubernetes quantities (a thousandth "
                                "of a byte); write M or MB for megabytes");
  ck_assert_int_eq(mp_parse_bytes("1e3KiB", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("1e20", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("1e999999", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("184467440737095516150", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("1.0000000000000000000001", &v, &err), MP_EINVAL);
  /* a fraction of a byte, without a unit, is a mistake: refused */
  ck_assert_int_eq(mp_parse_bytes("0.5", &v, &err), MP_EINVAL);
  ck_assert_str_eq(err.message, "'0.5' is not a whole number of bytes");
  ck_assert_int_eq(mp_parse_bytes("15e-1", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("1.5B", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("1e", &v, &err), 0); /* one exabyte */
  ck_assert_uint_eq(v, 1000000000000000000ULL);
}
END_TEST

START_TEST(test_parse_errors) {
  uint64_t v;
  mp_error_t err;
  ck_assert_int_eq(mp_parse_bytes("", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("GiB", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("-1", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("12Gx", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes(".", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("1.2.3", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("12 GiB x", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("18446744073709551616", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("20000PiB", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("1e9x", &v, &err), MP_EINVAL);
}
END_TEST

/* Budgets in request bodies: JSON integers, reals as Python prints them, and
 * strings. */
START_TEST(test_json_budget) {
  static const struct {
    const char *json;
    int rc;
    uint64_t bytes;
  } cases[] = {
      {"2000000000", 0, 2000000000ULL},
      {"2e9", 0, 2000000000ULL},
      {"2000000000.0", 0, 2000000000ULL},
      {"1.5e9", 0, 1500000000ULL},
      {"1000.75", MP_EINVAL, 0},
      {"0.5", MP_EINVAL, 0},
      {"9007199254740991.0", 0, 9007199254740991ULL},
      {"9007199254740992.0", MP_EINVAL, 0},
      {"-1.0", MP_EINVAL, 0},
      {"-1", MP_EINVAL, 0},
      {"\"2Gi\"", 0, 2ULL << 30},
      {"\"1.2GiB\"", 0, 1288490188ULL},
      {"true", MP_EINVAL, 0},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_error_t jerr;
    json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, &jerr);
    uint64_t b = 0;
    mp_error_t err;
    int rc;
    ck_assert_ptr_nonnull(v);
    rc = mp_json_budget(v, "$.budget", &b, &err);
    ck_assert_msg(rc == cases[i].rc, "%s: rc %d (%s)", cases[i].json, rc, rc ? err.message : "");
    if (rc == 0) ck_assert_msg(b == cases[i].bytes, "%s: %llu", cases[i].json, (unsigned long long)b);
    else ck_assert_str_eq(err.path, "$.budget");
    json_decref(v);
  }
}
END_TEST

Suite *suite_units(void) {
  Suite *s = suite_create("units");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_parse_ok);
  tcase_add_test(tc, test_parse_errors);
  tcase_add_test(tc, test_parse_schedulers);
  tcase_add_test(tc, test_json_budget);
  suite_add_tcase(s, tc);
  return s;
}
