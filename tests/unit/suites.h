/* suites.h - every Check suite of the single test runner (check_all.c).
 *
 * Each suite lives in its own test_*.c file. The declarations are weak so a
 * suite that is not linked in yet is skipped instead of breaking the build;
 * the runner prints which suites ran. */
#ifndef MP_TEST_SUITES_H
#define MP_TEST_SUITES_H

#include <check.h>

#define MP_SUITES(X)  \
  X(graph)            \
  X(units)            \
  X(json_util)        \
  X(format_json)      \
  X(format_kusumoto)  \
  X(format_nodelink)  \
  X(prescan)          \
  X(stop)             \
  X(cases)            \
  X(simulator)        \
  X(saved_bytes)      \
  X(shipped)          \
  X(cli)              \
  X(cli_server)       \
  X(malformed)        \
  X(plan)             \
  X(solver_dp)        \
  X(solver_chain)     \
  X(solver_memonger)  \
  X(frontier)         \
  X(server)           \
  X(server_fit)       \
  X(cache)            \
  X(http_edges)       \
  X(metrics)          \
  X(swap_sim)         \
  X(solver_swap)      \
  X(migrate_io)       \
  X(consistency)      \
  X(wide)             \
  X(forecast)         \
  X(forecast_server)   \
  X(allocator)

#define MP_DECLARE_SUITE(name) __attribute__((weak)) Suite *suite_##name(void);
MP_SUITES(MP_DECLARE_SUITE)
#undef MP_DECLARE_SUITE

#endif
