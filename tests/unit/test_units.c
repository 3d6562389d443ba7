/* test_units.c - byte quantity parsing: exact values, refusals, overflow. */
#include <check.h>

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
  ck_assert_int_eq(mp_parse_bytes("16EiB", &v, NULL), MP_EINVAL); /* no EiB unit */
  ck_assert_int_eq(mp_parse_bytes("15PiB", &v, NULL), 0);
  ck_assert_uint_eq(v, 15ULL << 50);
}
END_TEST

START_TEST(test_parse_errors) {
  uint64_t v;
  mp_error_t err;
  ck_assert_int_eq(mp_parse_bytes("", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("GiB", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("-1", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("12G", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("1.5B", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("0.3KiB", &v, &err), MP_EINVAL); /* 307.2 bytes */
  ck_assert_int_eq(mp_parse_bytes("12 GiB x", &v, &err), MP_EINVAL);
  ck_assert_int_eq(mp_parse_bytes("18446744073709551616", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("20000PiB", &v, &err), MP_EOVERFLOW);
  ck_assert_int_eq(mp_parse_bytes("1e9", &v, &err), MP_EINVAL);
}
END_TEST

Suite *suite_units(void) {
  Suite *s = suite_create("units");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_parse_ok);
  tcase_add_test(tc, test_parse_errors);
  suite_add_tcase(s, tc);
  return s;
}
