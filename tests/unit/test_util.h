/* test_util.h - small helpers shared by the test files. */
#ifndef MP_TEST_UTIL_H
#define MP_TEST_UTIL_H

#include <stddef.h>

#include "graph.h"
#include "schedule.h"
#include "simulator.h"

/* Read a whole file (relative to the repository root, where `make test`
 * runs). Returns a malloc'd NUL-terminated buffer, length in *len (when len
 * is not NULL), or NULL. */
char *mp_test_read_file(const char *path, size_t *len);

/* Write `text` to `path`, failing the running test if it cannot. */
void mp_test_write_file(const char *path, const char *text);

/* Milliseconds on the monotonic clock (for timeouts and durations). */
double mp_test_now_ms(void);

/* Sleep `ms` milliseconds. */
void mp_test_nap_ms(int ms);

/* Path of the CLI binary under test: $MEMPLAN_CLI or build/memplan. */
const char *mp_test_cli(void);

/* Run a shell command, capture stdout (malloc'd, NUL-terminated) and return
 * the exit status (-1 if it could not run or was killed by a signal). */
int mp_test_run(const char *cmd, char **out);

/* Load tests/graphs/cg_<name>.txt (a shipped Kusumoto graph, e.g. "vgg19"),
 * failing the running test if it does not load. The caller frees it. */
mp_graph_t *mp_test_load_shipped(const char *name);

/* Fail the running test when a daemon's stderr file (which may be missing)
 * holds a sanitizer report. */
void mp_test_assert_no_sanitizer_report(const char *stderr_path);

/* Simulate s under dev (NULL: the default device) into *rep, failing the
 * running test, with the simulator's path and message, if it does not
 * simulate. The caller frees *rep. */
void mp_test_simulate(const mp_graph_t *g, const mp_schedule_t *s, const mp_device_t *dev,
                      mp_sim_report_t *rep);

/* Hand-written schedules: "C a; R b; F c; B d; O a; I a; W a", one letter
 * per step op in enum order (compute, recompute, free, backward, swap_out,
 * swap_in, wait) and a node id, failing the running test on an unknown
 * letter or node. auto_free as given; the caller frees the schedule. */
mp_schedule_t *mp_test_schedule(const mp_graph_t *g, int auto_free, const char *text);
/* The same without failing the test: steps may also be separated by
 * newlines, blank ones are skipped. 0 and a new schedule in *out, or -1 with
 * the reason in why[n] (and *out NULL). */
int mp_test_schedule_parse(const mp_graph_t *g, int auto_free, const char *text,
                           mp_schedule_t **out, char *why, size_t n);
/* A schedule back in that text (a static buffer, overwritten by the next call). */
const char *mp_test_schedule_text(const mp_graph_t *g, const mp_schedule_t *s);

#endif
