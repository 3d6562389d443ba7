/* fuzz_graph.c - libFuzzer harness for the graph readers and the planner.
 *
 * Each input is loaded in every format; a graph that loads is hashed,
 * written back as native JSON and re-read (the hash must not change), and,
 * when small, planned with the approximate DP and simulated. Built and run by
 * `make fuzz` (clang's -fsanitize=fuzzer,address,undefined); `make test`
 * replays tests/fuzz/regressions/graph and the seeds through it without
 * libFuzzer (tests/fuzz/replay_main.c), and its malformed-input sweep
 * (tests/unit/test_malformed.c) covers the same entry points. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mp_format_t fmts[] = {MP_FORMAT_AUTO, MP_FORMAT_NATIVE, MP_FORMAT_KUSUMOTO,
                                     MP_FORMAT_NODELINK};
  mp_limits_t lim;
  size_t i;
  mp_limits_default(&lim);
  lim.max_nodes = 4096;
  for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
    mp_graph_t *g = NULL, *g2 = NULL;
    mp_error_t err;
    char h1[65], h2[65];
    json_t *doc;
    char *text;
    if (mp_graph_load_buffer((const char *)data, size, fmts[i], "fuzz", &lim, &g, NULL, &err) != 0)
      continue;
    if (mp_graph_hash(g, h1) != 0) abort();
    doc = mp_graph_to_json(g);
    text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text) {
      if (mp_graph_load_buffer(text, strlen(text), MP_FORMAT_NATIVE, NULL, &lim, &g2, NULL, &err) != 0)
        abort(); /* what we write we must read */
      if (mp_graph_hash(g2, h2) != 0 || strcmp(h1, h2) != 0) abort();
      mp_graph_free(g2);
    }
    free(text);
    json_decref(doc);
    if (g->n_nodes <= 64) {
      mp_plan_options_t o;
      mp_plan_result_t r;
      mp_plan_options_init(&o);
      o.solver = MP_SOLVER_APPROX;
      o.budget = g->const_bytes + g->activation_bytes;
      if (mp_plan(g, &o, &r, &err) == 0) {
        if (r.feasible && r.sim.peak_bytes > o.budget) abort();
        mp_plan_result_free(&r);
      } else if (err.code == MP_ESCHEDULE) {
        abort(); /* a planned schedule that does not simulate is a bug */
      }
    }
    mp_graph_free(g);
  }
  return 0;
}
