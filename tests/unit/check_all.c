/* check_all.c - the one test runner: every suite in suites.h, one summary.
 *
 * Check's per-test timeouts are there to catch a hang, never to judge
 * speed: a loaded machine (a shared CI runner, a laptop building something
 * else) runs a test several times slower than a quiet one. So every timeout
 * is scaled by CK_TIMEOUT_MULTIPLIER, which defaults here to
 * MP_TEST_TIMEOUT_MULTIPLIER when the environment does not set it (make asan
 * sets a larger one for the sanitizers' slowdown). */
#include <stdio.h>
#include <stdlib.h>

#include "suites.h"

/* Tens of times the quiet machine's time: a test that hits it is hung. */
#define MP_TEST_TIMEOUT_MULTIPLIER "10"

int main(void) {
  SRunner *sr = NULL;
  int failed;
  /* before any suite exists: Check reads it when each test case is made */
  setenv("CK_TIMEOUT_MULTIPLIER", MP_TEST_TIMEOUT_MULTIPLIER, 0);
#define MP_ADD_SUITE(name)                         \
  if (suite_##name) {                              \
    if (sr == NULL)                                \
      sr = srunner_create(suite_##name());         \
    else                                           \
      srunner_add_suite(sr, suite_##name());       \
  }
  MP_SUITES(MP_ADD_SUITE)
#undef MP_ADD_SUITE
  if (sr == NULL) {
    fprintf(stderr, "check_all: no suites linked\n");
    return 1;
  }
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
