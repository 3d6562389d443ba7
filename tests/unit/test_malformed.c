/* test_malformed.c - the malformed-input sweep: truncated files, garbage
 * bytes, flipped bytes, huge numbers and deep nesting fed to every loader.
 * Each input must give a clean error (or, for harmless mutations, a valid
 * graph), never a crash, a hang or a leak; the suite runs under ASan in
 * `make asan`. Inputs are generated from a fixed seed so failures repeat. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "suites.h"
#include "test_util.h"

static uint64_t rng_state;

static uint64_t rng(void) {
  /* xorshift64*: a fixed, portable sequence for reproducible inputs */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

/* Load under every format choice; return how many loads succeeded. */
static int load_all_formats(const char *buf, size_t len) {
  static const mp_format_t fmts[] = {MP_FORMAT_AUTO, MP_FORMAT_NATIVE, MP_FORMAT_KUSUMOTO,
                                     MP_FORMAT_NODELINK};
  int ok = 0;
  size_t i;
  for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
    mp_graph_t *g = NULL;
    mp_error_t err;
    int rc = mp_graph_load_buffer(buf, len, fmts[i], "fuzz", NULL, &g, NULL, &err);
    if (rc == 0) {
      ck_assert_ptr_nonnull(g);
      ck_assert(g->finalized);
      ok++;
      mp_graph_free(g);
    } else {
      ck_assert_int_lt(rc, 0);
      ck_assert_ptr_null(g);
      ck_assert_int_eq(err.code, rc);
      ck_assert(err.message[0] != '\0');
    }
  }
  return ok;
}

static const char *const seeds[] = {
    "tests/graphs/cg_vgg19.txt",
    "tests/graphs/tiny_resblock.json",
    "tests/graphs/tiny_layered.json",
};

START_TEST(test_truncations) {
  size_t len, cut;
  char *buf = mp_test_read_file(seeds[_i], &len);
  ck_assert_ptr_nonnull(buf);
  /* Every prefix either loads as a valid graph or fails with a clean error
   * record (checked in load_all_formats); ASan watches the exact-size copy. */
  for (cut = 0; cut < len; cut += (len < 4000 ? 1 : 1 + len / 3000)) {
    char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees over-reads */
    memcpy(copy, buf, cut);
    load_all_formats(copy, cut);
    free(copy);
  }
  free(buf);
}
END_TEST

START_TEST(test_mutations) {
  size_t len, round;
  char *buf = mp_test_read_file(seeds[_i], &len);
  ck_assert_ptr_nonnull(buf);
  rng_state = 0x9e3779b97f4a7c15ULL + (uint64_t)_i;
  for (round = 0; round < 300; round++) {
    char *copy = malloc(len);
    int k, nmut = 1 + (int)(rng() % 8);
    memcpy(copy, buf, len);
    for (k = 0; k < nmut; k++) {
      size_t at = (size_t)(rng() % len);
      static const char interesting[] = "0123456789-.e{}[]\",: \n\x00\xff";
      copy[at] = (rng() & 1) ? (char)(rng() & 0xff) : interesting[rng() % (sizeof(interesting) - 1)];
    }
    load_all_formats(copy, len);
    free(copy);
  }
  free(buf);
}
END_TEST

START_TEST(test_garbage) {
  size_t round;
  rng_state = 12345;
  for (round = 0; round < 500; round++) {
    size_t len = (size_t)(rng() % 300), j;
    char *b = malloc(len ? len : 1);
    for (j = 0; j < len; j++) b[j] = (char)(rng() & 0xff);
    ck_assert_int_eq(load_all_formats(b, len), 0);
    free(b);
  }
}
END_TEST

static void check_fails(const char *doc) {
  ck_assert_int_eq(load_all_formats(doc, strlen(doc)), 0);
}

START_TEST(test_huge_numbers) {
  check_fails("{\"format\":\"memplan.graph/1\",\"nodes\":[{\"id\":\"a\",\"bytes\":99999999999999999999999}]}");
  check_fails("{\"format\":\"memplan.graph/1\",\"nodes\":[{\"id\":\"a\",\"bytes\":1,\"time\":1e999}]}");
  check_fails("{\"format\":\"memplan.graph/1\",\"nodes\":[{\"id\":\"a\",\"bytes\":-9223372036854775808}]}");
  check_fails("{\"format\":\"memplan.graph/1\",\"param_bytes\":18446744073709551616,\"nodes\":[{\"id\":\"a\",\"bytes\":1}]}");
  check_fails("99999999999999999999999 1\n");
  check_fails("1 18446744073709551616\n");
  check_fails("4294967296 4294967296\n");
  check_fails("2 0\n0 18446744073709551616 _\n1 1 _\n");
  check_fails("{\"directed\":true,\"nodes\":[{\"id\":0,\"cost_cpu\":1,\"cost_ram\":1e30}],\"links\":[]}");
  check_fails("{\"directed\":true,\"nodes\":[{\"id\":0,\"cost_cpu\":1e400,\"cost_ram\":1}],\"links\":[]}");
}
END_TEST

START_TEST(test_deep_nesting) {
  /* jansson stops at depth 2048; deeper and shallower nests must both fail
   * cleanly wherever they appear. */
  static const size_t depths[] = {10, 2047, 2049, 100000};
  size_t d, i;
  for (d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
    size_t n = depths[d];
    const char *pre = "{\"format\":\"memplan.graph/1\",\"nodes\":";
    size_t plen = strlen(pre);
    char *b = malloc(plen + 2 * n + 2);
    memcpy(b, pre, plen);
    for (i = 0; i < n; i++) b[plen + i] = '[';
    for (i = 0; i < n; i++) b[plen + n + i] = ']';
    b[plen + 2 * n] = '}';
    ck_assert_int_eq(load_all_formats(b, plen + 2 * n + 1), 0);
    free(b);
  }
}
END_TEST

Suite *suite_malformed(void) {
  Suite *s = suite_create("malformed");
  TCase *tc = tcase_create("sweep");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_truncations, 0, 3);
  tcase_add_loop_test(tc, test_mutations, 0, 3);
  tcase_add_test(tc, test_garbage);
  tcase_add_test(tc, test_huge_numbers);
  tcase_add_test(tc, test_deep_nesting);
  suite_add_tcase(s, tc);
  return s;
}
