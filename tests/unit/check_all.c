/* check_all.c - the one test runner: every suite in suites.h, one summary. */
#include <stdio.h>
#include <stdlib.h>

#include "suites.h"

int main(void) {
  SRunner *sr = NULL;
  int failed;
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
