/* test_solver_swap.c - the data-migration solvers (planner/swap.c,
 * hybrid.c, layrub.c): the schedules mp_schedule_from_residency builds, the
 * prefetch policies (just in time against a fixed lookahead), one table of
 * plans on a hand-checked chain (a swap the compute hides, a recompute
 * cheaper than an exposed copy, a recompute:false value swapped with a stall,
 * a host budget too small, hybrid, the prefetch under each solver, Layrub's
 * fixed policy), and the data-migration solvers' promises on the seven
 * shipped graphs (every plan re-simulated). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "graph.h"
#include "plan.h"
#include "simulator.h"
#include "suites.h"
#include "swap.h"
#include "test_util.h"

#define MB 1000000ull

/* ---- The hand-checked chain ------------------------------------------------
 * x (input, 0 bytes) -> a -> b -> c -> d -> e, each backward reading its
 * input (the default), bwd_time = 2 * time:
 *            a     b     c     d     e
 *   bytes   46    10    30    30     1   MB
 *   time     5    10   100    10     1   (ms: the device says 1 ms per unit)
 * Forward 126, backward 252. Keeping everything, the backward of e holds the
 * values a, b, c, d, the seed gradient of e and the gradient of d:
 * 46 + 10 + 30 + 30 + 1 + 30 = 147 MB, the peak. Without a on the device
 * there it is 101; the backward of b then needs a, its gradient and b's:
 * 46 + 46 + 10 = 102 MB, the least any plan reaches. At a budget of 107 MB
 * exactly a must leave (b or c alone free too little). */
static mp_graph_t *chain(int a_recompute, int others_recompute) {
  static const char *const ids[] = {"a", "b", "c", "d", "e"};
  static const uint64_t mb[] = {46, 10, 30, 30, 1};
  static const double tm[] = {5, 10, 100, 10, 1};
  mp_graph_t *g = mp_graph_new();
  mp_node_spec_t s;
  mp_error_t err;
  const char *in;
  int i;
  ck_assert_ptr_nonnull(g);
  mp_node_spec_init(&s);
  s.id = "x";
  s.kind = MP_KIND_INPUT;
  ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  for (i = 0; i < 5; i++) {
    mp_node_spec_init(&s);
    s.id = ids[i];
    in = i == 0 ? "x" : ids[i - 1];
    s.inputs = &in;
    s.n_inputs = 1;
    s.bytes = mb[i] * MB;
    s.time = tm[i];
    s.recompute = i == 0 ? a_recompute : others_recompute;
    s.grad_inplace = 1; /* only matters with intra-layer reuse (Layrub) */
    ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  }
  ck_assert_int_eq(mp_graph_finalize(g, NULL, &err), 0);
  return g;
}

/* 1 ms per time unit, no latency, d2h 1 MB/ms, h2d as given (MB/ms). */
static void chain_device(mp_device_t *d, double h2d_mb_per_ms) {
  mp_device_init(d);
  d->time_unit_s = 1e-3;
  d->latency_s = 0;
  d->d2h_bytes_per_s = 1e9;
  d->h2d_bytes_per_s = h2d_mb_per_ms * 1e9;
}

static uint32_t node(const mp_graph_t *g, const char *id) {
  long v = mp_graph_find(g, id);
  ck_assert_int_ge(v, 0);
  return (uint32_t)v;
}

/* The plan's figures are the simulator's: replaying its schedule under the
 * plan's device gives the same peak, time and host peak. */
static void check_resim(const mp_graph_t *g, const mp_device_t *dev, const mp_plan_result_t *r) {
  mp_sim_options_t so;
  mp_sim_report_t s;
  mp_error_t err;
  ck_assert_ptr_nonnull(r->schedule);
  so.device = dev;
  ck_assert_msg(mp_simulate_ex(g, r->schedule, &so, &s, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(s.peak_bytes, r->sim.peak_bytes);
  ck_assert(fabs(s.time_total - r->sim.time_total) <= 1e-9 * (1 + s.time_total));
  ck_assert_uint_eq(s.host_peak_bytes, r->sim.host_peak_bytes);
  ck_assert_uint_eq(s.n_swapped, r->n_swapped);
  mp_sim_report_free(&s);
}


static void expect_steps(const mp_graph_t *g, const mp_schedule_t *s, const char *const *want,
                         size_t n) {
  size_t i;
  ck_assert_uint_eq(s->n_steps, n);
  for (i = 0; i < n; i++) {
    char got[64];
    snprintf(got, sizeof(got), "%s %s", mp_step_op_name(s->steps[i].op),
             g->nodes[s->steps[i].node].id);
    ck_assert_msg(strcmp(got, want[i]) == 0, "step %zu: got '%s', want '%s'", i, got, want[i]);
  }
}

/* The schedules of decision vectors, step by step (auto_free: no frees). */
START_TEST(test_residency_schedules) {
  mp_graph_t *g = chain(1, 1);
  mp_residency_options_t ro;
  mp_device_t dev;
  mp_schedule_t *s;
  mp_error_t err;
  uint8_t dec[6] = {0};
  uint32_t a = node(g, "a"), b = node(g, "b"), c = node(g, "c");
  static const char *const swap_jit[] = {
      "compute a",  "compute b",  "swap_out a", "compute c",  "compute d", "compute e",
      "backward e", "backward d", "swap_in a",  "backward c", "backward b", "backward a"};
  static const char *const layrub[] = {
      "compute a",  "compute b",   "swap_out a", "wait a",     "compute c",  "swap_out b",
      "wait b",     "compute d",   "swap_out c", "wait c",     "compute e",  "swap_out d",
      "wait d",     "swap_in d",   "swap_in c",  "backward e", "swap_in b",  "backward d",
      "swap_in a",  "backward c",  "backward b", "backward a"};
  /* b's recompute needs a, recomputed first; a then stays for b's backward. */
  static const char *const rec[] = {"compute a",   "compute b",   "compute c",  "compute d",
                                    "compute e",   "backward e",  "backward d", "recompute a",
                                    "recompute b", "backward c",  "backward b", "backward a"};

  chain_device(&dev, 1.0);
  mp_residency_options_init(&ro);
  ro.device = &dev;
  ro.auto_free = 1;
  /* a swapped, just in time: its 46 ms copy fits in c's backward. */
  dec[a] = MP_RES_SWAP;
  ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), 0);
  ck_assert(s->auto_free);
  expect_steps(g, s, swap_jit, sizeof(swap_jit) / sizeof(swap_jit[0]));
  mp_schedule_free(s);
  /* Layrub's policy: everything a backward reads, one backward step ahead,
   * a wait after each offload. */
  memset(dec, MP_RES_SWAP, sizeof(dec));
  ro.lookahead = 1;
  ro.sync_swap_out = 1;
  ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), 0);
  expect_steps(g, s, layrub, sizeof(layrub) / sizeof(layrub[0]));
  mp_schedule_free(s);
  /* a and b recomputed, right before the first backward that needs them. */
  memset(dec, 0, sizeof(dec));
  dec[a] = dec[b] = MP_RES_RECOMPUTE;
  ro.lookahead = 0;
  ro.sync_swap_out = 0;
  ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), 0);
  expect_steps(g, s, rec, sizeof(rec) / sizeof(rec[0]));
  mp_schedule_free(s);
  /* c recomputed needs b: with b recomputed too, the recompute of c is
   * preceded by b's; explicit frees make it a valid schedule. */
  dec[c] = MP_RES_RECOMPUTE;
  ro.auto_free = 0;
  ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), 0);
  ck_assert(!s->auto_free);
  {
    mp_sim_report_t sr;
    ck_assert_msg(mp_simulate(g, s, &sr, &err) == 0, "%s", err.message);
    ck_assert_double_eq(sr.time_recompute, 5 + 10 + 100);
    mp_sim_report_free(&sr);
  }
  mp_schedule_free(s);
  mp_graph_free(g);

  /* recompute:false cannot be RECOMPUTE. */
  g = chain(0, 1);
  memset(dec, 0, sizeof(dec));
  dec[node(g, "a")] = MP_RES_RECOMPUTE;
  ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), MP_EINVAL);
  ck_assert_ptr_null(s);
  mp_graph_free(g);
}
END_TEST

/* ---- Prefetch: just in time against a fixed lookahead ----------------------
 * The chain's backward runs e [126,128], d [128,148], c [148,348], b [348,368],
 * a [368,378]; a (46 MB) is first read again by b's backward (ordinal 3), so a
 * lookahead of k issues its swap-in before the backward of ordinal 3 - k: c for
 * 1, d for 2, e for 3 and beyond. With a on the device from that point:
 *   before c: c's backward holds a 46, b 10, c's gradient 30, b's new one 10
 *             = 96, and b's backward a 46 + 10 + 46 = 102, the peak;
 *   before d: d's backward holds a 46, b 10, c 30, d's gradient 30, c's new
 *             one 30 = 146;
 *   before e: e's backward holds everything, 147, as when nothing moves.
 * Two links (1 ms per unit, d2h 1 MB/ms, a's swap-out ends long before the
 * backward starts):
 *   fast: h2d 1 MB/ms, no latency, a's copy back takes 46. Just in time it
 *         goes before c (c's 200 hide it): peak 102, 378, no stall.
 *   slow: h2d 0.23 MB/ms, 10 ms per copy, a's copy back takes 210. c's 200
 *         do not hide it, d's and c's 220 do: just in time issues it before
 *         d at 128 (peak 146, lands at 338, no stall); one step ahead issues
 *         it before c at 148, it lands at 358 and b's backward (due at 348)
 *         stalls 10: peak 102, 388. */
static void chain_device_slow(mp_device_t *d) {
  chain_device(d, 0.23);
  d->latency_s = 10e-3;
}

/* The first step after step i that runs on the compute queue, as "op id". */
static void next_compute(const mp_graph_t *g, const mp_schedule_t *s, size_t i, char *buf, size_t n) {
  for (i++; i < s->n_steps; i++)
    if (s->steps[i].op == MP_STEP_COMPUTE || s->steps[i].op == MP_STEP_RECOMPUTE ||
        s->steps[i].op == MP_STEP_BACKWARD) {
      snprintf(buf, n, "%s %s", mp_step_op_name(s->steps[i].op), g->nodes[s->steps[i].node].id);
      return;
    }
  snprintf(buf, n, "(none)");
}

/* The step that a's swap-in precedes ("backward c"), or "(no swap-in)". */
static void swap_in_before(const mp_graph_t *g, const mp_schedule_t *s, char *buf, size_t n) {
  size_t i;
  for (i = 0; i < s->n_steps; i++)
    if (s->steps[i].op == MP_STEP_SWAP_IN && s->steps[i].node == node(g, "a")) {
      next_compute(g, s, i, buf, n);
      return;
    }
  snprintf(buf, n, "(no swap-in)");
}

/* The builder: a swapped, each lookahead on each link, step by step and
 * simulated (times within 1e-9 on the slow link, exact on the fast one). */
START_TEST(test_prefetch_schedules) {
  mp_graph_t *g = chain(1, 1);
  mp_residency_options_t ro;
  mp_device_t dev;
  mp_schedule_t *s;
  mp_sim_report_t rep;
  mp_error_t err;
  uint8_t dec[6] = {0};
  size_t k;
  static const char *const before_d[] = {
      "compute a",  "compute b", "swap_out a", "compute c",  "compute d",  "compute e",
      "backward e", "swap_in a", "backward d", "backward c", "backward b", "backward a"};
  static const char *const before_e[] = {
      "compute a", "compute b",  "swap_out a", "compute c",  "compute d",  "compute e",
      "swap_in a", "backward e", "backward d", "backward c", "backward b", "backward a"};
  static const struct {
    int slow;
    uint32_t lookahead;
    const char *before; /* the backward step a's swap-in precedes */
    const char *const *steps; /* the whole schedule, or NULL */
    uint64_t peak_mb;
    double stall, total;
  } rows[] = {{0, 0, "backward c", NULL, 102, 0, 378},
              {0, 1, "backward c", NULL, 102, 0, 378},
              {0, 2, "backward d", before_d, 146, 0, 378},
              {0, 3, "backward e", before_e, 147, 0, 378},
              {0, 1000, "backward e", NULL, 147, 0, 378},
              /* the slow link: just in time reaches back to d; one step
               * ahead is late */
              {1, 0, "backward d", NULL, 146, 0, 378},
              {1, 1, "backward c", NULL, 102, 10, 388}};

  dec[node(g, "a")] = MP_RES_SWAP;
  mp_residency_options_init(&ro);
  ro.device = &dev;
  ro.auto_free = 1;
  chain_device_slow(&dev);
  ck_assert_double_eq_tol(mp_device_copy_time(&dev, g, 46 * MB, 1), 210, 1e-9);
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    char got[64];
    double tol = rows[k].slow ? 1e-9 : 0;
    if (rows[k].slow)
      chain_device_slow(&dev);
    else
      chain_device(&dev, 1.0);
    ro.lookahead = rows[k].lookahead;
    ck_assert_int_eq(mp_schedule_from_residency(g, dec, &ro, &s, &err), 0);
    swap_in_before(g, s, got, sizeof(got));
    ck_assert_msg(strcmp(got, rows[k].before) == 0, "row %zu: swap-in before %s, want %s", k, got,
                  rows[k].before);
    if (rows[k].steps) expect_steps(g, s, rows[k].steps, 12);
    mp_test_simulate(g, s, &dev, &rep);
    ck_assert_msg(rep.peak_bytes == rows[k].peak_mb * MB, "row %zu: peak %llu", k,
                  (unsigned long long)rep.peak_bytes);
    ck_assert_msg(fabs(rep.time_stall - rows[k].stall) <= tol, "row %zu: stall %.17g", k,
                  rep.time_stall);
    ck_assert_msg(fabs(rep.time_total - rows[k].total) <= tol, "row %zu: total %.17g", k,
                  rep.time_total);
    ck_assert_uint_eq(rep.n_swap_in, 1);
    mp_sim_report_free(&rep);
    mp_schedule_free(s);
  }
  mp_graph_free(g);
}
END_TEST

/* ---- Plans on the chain, one row each --------------------------------------
 * A row is a plan (chain flags, solver, link, prefetch, budget, host memory)
 * and what it must give, as words: "feasible" or "infeasible", and key=value
 * with the value exact, or key~value for a time within 1e-9 (the 0.23 MB/ms
 * link's copies are not whole numbers of ms). Keys: source, solver_used,
 * swapped and recomputed (node ids, comma-separated, empty for none),
 * swap_in_before (the node whose backward a's swap-in precedes), peak,
 * host_peak, bytes_out and min_feasible in MB, total, stall, recompute_time,
 * d2h and h2d in ms. Every feasible plan is also re-simulated (check_resim),
 * and an infeasible one has no schedule. */
#define NOLIMIT UINT64_MAX

typedef struct {
  int a_recompute, others_recompute; /* chain()'s flags */
  mp_solver_t solver;
  double h2d;          /* MB/ms */
  double latency_ms;
  uint32_t prefetch;   /* device.prefetch_lookahead */
  uint64_t budget_mb;  /* or NOLIMIT */
  uint64_t host_mb;    /* device.host_bytes in MB, or NOLIMIT */
  const char *expect;
} chain_plan_t;

static const chain_plan_t chain_plans[] = {
    /* 0: keeping everything fits 147 MB. */
    {1, 1, MP_SOLVER_SWAP, 1.0, 0, 0, 147, NOLIMIT,
     "feasible source=keep-all peak=147 total=378 swapped="},
    /* 1: h2d 1 MB/ms: a's copy back (46 ms) hides under c's backward (200
     * ms), so swapping a is free (recomputing it would cost 5). Its swap-out
     * (46 ms after b, ends at 61) is done long before the backward starts
     * (126). Just in time, the swap-in is issued before c's backward, which
     * then holds b, c's gradient, a and b's new gradient: 10 + 30 + 46 + 10
     * = 96. Peak 102 (backward of b), time 126 + 252, no stall. */
    {1, 1, MP_SOLVER_SWAP, 1.0, 0, 0, 107, NOLIMIT,
     "feasible source=swap-greedy swapped=a recomputed= peak=102 total=378 stall=0 "
     "host_peak=46 bytes_out=46 d2h=46 h2d=46"},
    /* 2: h2d 0.2 MB/ms: a's copy back takes 230 ms and at most 220 ms of
     * backward (d's and c's) can hide it, so swapping exposes 10 ms;
     * recomputing a costs its 5 ms. The greedy recomputes a: peak 102 (the
     * recompute right before b's backward), time 126 + 252 + 5 = 383. */
    {1, 1, MP_SOLVER_SWAP, 0.2, 0, 0, 107, NOLIMIT,
     "feasible swapped= recomputed=a peak=102 recompute_time=5 total=383 host_peak=0"},
    /* 3: the same with a marked recompute:false: a is swapped instead. First
     * the swap-in is held back past e's backward (the peak), issued at 128
     * before d's backward, which then peaks at 70 + 46 + 30 = 146; the greedy
     * holds it back once more, past d's backward: issued at 148 before c's,
     * it lands at 378 and b's backward (due at 348) stalls 30 ms. Peak 102,
     * time 408. */
    {0, 1, MP_SOLVER_SWAP, 0.2, 0, 0, 107, NOLIMIT,
     "feasible swapped=a recomputed= peak=102 stall=30 total=408 host_peak=46"},
    /* 4-7: nothing may be recomputed: with no pinned host memory at all
     * nothing can move and the least budget the solver meets is keeping
     * everything, 147 MB; with exactly a's 46 MB the plan above fits. Hybrid:
     * the DP can recompute nothing here either. */
    {0, 0, MP_SOLVER_SWAP, 0.2, 0, 0, 107, 0, "infeasible min_feasible=147"},
    {0, 0, MP_SOLVER_SWAP, 0.2, 0, 0, 107, 45, "infeasible"},
    {0, 0, MP_SOLVER_SWAP, 0.2, 0, 0, 107, 46, "feasible peak=102 host_peak=46 total=408"},
    {0, 0, MP_SOLVER_HYBRID, 0.2, 0, 0, 107, 0, "infeasible min_feasible=147"},
    /* 8-9: hybrid: the recompute-only plan (recompute a, 383) beats the
     * swap-only one (408) when a may be recomputed; both reach 102. On the
     * fast link the free swap (378) beats recomputing (383). */
    {1, 1, MP_SOLVER_HYBRID, 0.2, 0, 0, 107, NOLIMIT,
     "feasible total=383 peak=102 solver_used=hybrid"},
    {1, 1, MP_SOLVER_HYBRID, 1.0, 0, 0, 107, NOLIMIT, "feasible total=378 peak=102 swapped=a"},
    /* 10-13: the solvers under device.prefetch_lookahead (figures from the
     * comment above test_prefetch_schedules). Fast link, 146 MB: 1 MB over
     * keeping everything (147, e's backward). The greedy swaps a (hidden)
     * with its swap-in held past e's backward. Just in time it then comes
     * before c: 102. Two steps ahead it comes before d, which now peaks at
     * 146: fits, and that is the plan. Hybrid starts from the DP's plan
     * (nothing to recompute at 146) and ends with the same swap. At 107 MB
     * d's backward (146) is too much: the greedy holds the swap-in back past
     * it, to before c, as just in time would have: 102, 378. */
    {1, 1, MP_SOLVER_SWAP, 1.0, 0, 0, 146, NOLIMIT,
     "feasible swapped=a peak=102 total=378 swap_in_before=c"},
    {1, 1, MP_SOLVER_SWAP, 1.0, 0, 2, 146, NOLIMIT,
     "feasible swapped=a peak=146 total=378 stall=0 swap_in_before=d"},
    {1, 1, MP_SOLVER_HYBRID, 1.0, 0, 2, 146, NOLIMIT,
     "feasible peak=146 total=378 swap_in_before=d"},
    {1, 1, MP_SOLVER_SWAP, 1.0, 0, 2, 107, NOLIMIT,
     "feasible swapped=a peak=102 total=378 swap_in_before=c"},
    /* 14-16: slow link, 146 MB. Just in time a's copy hides under d's and
     * c's backward (issued before d: peak 146, 378). One step ahead only c's
     * 200 can hide its 210: the estimate sees 10 exposed, more than the 5 of
     * recomputing a, and the greedy recomputes a instead (peak 102, 383;
     * swapping would have stalled 10, 388). Two steps ahead is just in time
     * again. */
    {1, 1, MP_SOLVER_SWAP, 0.23, 10, 0, 146, NOLIMIT,
     "feasible swapped=a peak=146 total~378 stall~0"},
    {1, 1, MP_SOLVER_SWAP, 0.23, 10, 1, 146, NOLIMIT,
     "feasible swapped= recomputed=a peak=102 total=383"},
    {1, 1, MP_SOLVER_SWAP, 0.23, 10, 2, 146, NOLIMIT,
     "feasible swapped=a peak=146 total~378 swap_in_before=d"},
    /* 17-19: Layrub on the chain (h2d 1 MB/ms, intra-layer reuse forced on).
     * Forward: each offload is followed by a wait: a's 46 ms after b (ends
     * 61), b's 10 after c (171), c's 30 after d (211), d's 30 after e (242):
     * 116 ms of stall. Backward, one step ahead: d and c come in before e's
     * backward (242..272, 272..302): e's backward waits 30 for d; b is issued
     * after it (lands 312), d's backward waits until c lands at 302 (28); a
     * is issued at 322 and lands at 368, long before b's backward (522).
     * Total 552 = 126 + 252 + 174. Each gradient is written over its input's
     * value (the backward creating it is that value's last reader), so
     * device memory peaks at 86 MB when a lands before c's backward (a 46, b
     * 10, c's gradient 30); host memory at 116 MB while all four copies sit
     * there. Layrub keeps its one step ahead whatever the device says. */
    {1, 1, MP_SOLVER_LAYRUB, 1.0, 0, 0, NOLIMIT, NOLIMIT,
     "feasible source=layrub swapped=a,b,c,d recomputed= stall=174 total=552 peak=86 "
     "host_peak=116"},
    {1, 1, MP_SOLVER_LAYRUB, 1.0, 0, 0, 50, NOLIMIT, "infeasible min_feasible=86"},
    {1, 1, MP_SOLVER_LAYRUB, 1.0, 0, 3, NOLIMIT, NOLIMIT, "feasible total=552 peak=86"},
};

/* Node ids, comma-separated, into buf. */
static const char *ids_text(const mp_graph_t *g, const uint32_t *v, size_t n, char *buf,
                            size_t len) {
  size_t i, off = 0;
  buf[0] = '\0';
  for (i = 0; i < n && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", g->nodes[v[i]].id);
  return buf;
}

/* One "key=value" or "key~value" of a row against the plan. */
static void check_plan_value(const mp_graph_t *g, const mp_plan_result_t *r, int row,
                             const char *key, char op, const char *want) {
  const mp_sim_report_t *s = &r->sim;
  const uint64_t *bytes = strcmp(key, "peak") == 0           ? &s->peak_bytes
                          : strcmp(key, "host_peak") == 0    ? &s->host_peak_bytes
                          : strcmp(key, "bytes_out") == 0    ? &s->bytes_swapped_out
                          : strcmp(key, "min_feasible") == 0 ? &r->min_feasible_budget
                                                             : NULL;
  const double *ms = strcmp(key, "total") == 0            ? &s->time_total
                     : strcmp(key, "stall") == 0          ? &s->time_stall
                     : strcmp(key, "recompute_time") == 0 ? &s->time_recompute
                     : strcmp(key, "d2h") == 0            ? &s->time_copy_d2h
                     : strcmp(key, "h2d") == 0            ? &s->time_copy_h2d
                                                          : NULL;
  char got[128];
  if (bytes) {
    ck_assert_msg(op == '=' && *bytes == strtoull(want, NULL, 10) * MB,
                  "row %d: %s is %llu bytes, want %s MB", row, key, (unsigned long long)*bytes, want);
    return;
  }
  if (ms) {
    double w = strtod(want, NULL);
    ck_assert_msg(op == '=' ? *ms == w : fabs(*ms - w) <= 1e-9, "row %d: %s is %.17g, want %c%s",
                  row, key, *ms, op, want);
    return;
  }
  ck_assert_msg(op == '=', "row %d: %s~ is for times", row, key);
  if (strcmp(key, "source") == 0) {
    snprintf(got, sizeof(got), "%s", r->source ? r->source : "(none)");
  } else if (strcmp(key, "solver_used") == 0) {
    snprintf(got, sizeof(got), "%s", mp_solver_name(r->solver_used));
  } else if (strcmp(key, "swapped") == 0) {
    ids_text(g, r->swapped, r->n_swapped, got, sizeof(got));
  } else if (strcmp(key, "recomputed") == 0) {
    ids_text(g, r->sim.recomputed, r->sim.n_recomputed, got, sizeof(got));
  } else if (strcmp(key, "swap_in_before") == 0) {
    char step[64];
    swap_in_before(g, r->schedule, step, sizeof(step));
    snprintf(got, sizeof(got), "%s", strncmp(step, "backward ", 9) == 0 ? step + 9 : step);
  } else {
    ck_abort_msg("row %d: unknown key %s", row, key);
  }
  ck_assert_msg(strcmp(got, want) == 0, "row %d: %s is '%s', want '%s'", row, key, got, want);
}

START_TEST(test_chain_plans) {
  const chain_plan_t *c = &chain_plans[_i];
  mp_graph_t *g = chain(c->a_recompute, c->others_recompute);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  char *words = strdup(c->expect), *save = NULL, *w;
  ck_assert_ptr_nonnull(words);
  mp_plan_options_init(&o);
  o.solver = c->solver;
  o.budget = c->budget_mb == NOLIMIT ? UINT64_MAX : c->budget_mb * MB;
  chain_device(&o.device, c->h2d);
  o.device.latency_s = c->latency_ms * 1e-3;
  o.device.prefetch_lookahead = c->prefetch;
  o.device.host_bytes = c->host_mb == NOLIMIT ? UINT64_MAX : c->host_mb * MB;
  ck_assert_msg(mp_plan(g, &o, &r, &err) == 0, "row %d: %s", _i, err.message);
  /* Layrub simulates with intra-layer reuse on, its policy. */
  if (c->solver == MP_SOLVER_LAYRUB) o.device.intra_layer_reuse = 1;
  if (r.feasible)
    check_resim(g, &o.device, &r);
  else
    ck_assert_ptr_null(r.schedule);
  for (w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    size_t k = strcspn(w, "=~");
    if (strcmp(w, "feasible") == 0 || strcmp(w, "infeasible") == 0) {
      ck_assert_msg(r.feasible == (w[0] == 'f'), "row %d: feasible is %d", _i, r.feasible);
    } else {
      char op = w[k];
      ck_assert_msg(op != '\0', "row %d: bad word %s", _i, w);
      w[k] = '\0';
      check_plan_value(g, &r, _i, w, op, w + k + 1);
    }
  }
  free(words);
  mp_plan_result_free(&r);
  mp_graph_free(g);
}
END_TEST

/* A prefetch out of range: the plan is refused naming the field. */
START_TEST(test_prefetch_out_of_range) {
  mp_graph_t *g = chain(1, 1);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_SWAP;
  o.budget = 146 * MB;
  o.device.prefetch_lookahead = MP_DEVICE_MAX_PREFETCH + 1;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.device.prefetch");
  o.device.prefetch_lookahead = MP_DEVICE_MAX_PREFETCH;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
  ck_assert(r.feasible);
  mp_plan_result_free(&r);
  mp_graph_free(g);
}
END_TEST

START_TEST(test_reference_accounting_refused) {
  mp_graph_t *g = chain(1, 1);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_SWAP;
  o.accounting = MP_ACCOUNTING_REFERENCE;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.accounting");
  mp_graph_free(g);
}
END_TEST

static int always_stop(void *arg) {
  (void)arg;
  return 1;
}

START_TEST(test_cancel) {
  mp_graph_t *g = chain(1, 1);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_SWAP;
  o.budget = 107 * MB;
  o.should_stop = always_stop;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), MP_ECANCELED);
  o.solver = MP_SOLVER_LAYRUB;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), MP_ECANCELED);
  mp_graph_free(g);
}
END_TEST

/* ---- The data-migration promises on the shipped graphs -------------------- */

static const char *const shipped[] = {"vgg19", "unet", "resnet50", "resnet152",
                                      "googlenet", "pspnet", "densenet"};

/* Exact on the chains and the small graphs, approx past a few thousand
 * lower sets (GoogLeNet, PSPNet, ResNet-152) to keep the suite fast. */
#define BAR_MAX_LOWER_SETS 3000

static void plan_shipped(const mp_graph_t *g, mp_solver_t solver, uint64_t budget, int reuse,
                         mp_plan_result_t *r) {
  mp_plan_options_t o;
  mp_error_t err;
  mp_plan_options_init(&o);
  o.solver = solver;
  o.budget = budget;
  o.max_lower_sets = BAR_MAX_LOWER_SETS;
  o.device.intra_layer_reuse = reuse;
  ck_assert_msg(mp_plan(g, &o, r, &err) == 0, "%s: %s", mp_solver_name(solver), err.message);
  if (r->feasible) {
    ck_assert_uint_le(r->sim.peak_bytes, budget);
    if (solver == MP_SOLVER_LAYRUB) o.device.intra_layer_reuse = 1;
    if (mp_solver_swaps(solver)) check_resim(g, &o.device, r);
  }
}

/* Below the least budget of recompute-only plans (halfway to the lower
 * bound mp_min_budget; unless they reach the bound), swap or hybrid fits; where recompute-only and
 * swap-only both fit, hybrid is no slower than either. */
START_TEST(test_bars_shipped) {
  mp_graph_t *g = mp_test_load_shipped(shipped[_i]);
  mp_plan_result_t ro, sw, hy, none;
  uint64_t lb, least, below, p0;
  double fr[2] = {0.25, 0.6};
  int k, fits;

  ck_assert_int_eq(mp_min_budget(g, &lb), 0);
  plan_shipped(g, MP_SOLVER_NONE, UINT64_MAX, 0, &none);
  p0 = none.sim.peak_bytes;
  mp_plan_result_free(&none);
  plan_shipped(g, MP_SOLVER_AUTO, lb, 0, &ro);
  if (ro.feasible) {
    /* recompute-only reaches the lower bound itself, which no schedule
     * beats (VGG19, with the refined least plan of cand_refine.c): no gap
     * below it for migration to fill */
    ck_assert_uint_eq(ro.sim.peak_bytes, lb);
    printf("  %-10s lower bound %.3f GB, met by recompute-only (%s)\n", shipped[_i], lb / 1e9,
           ro.source);
    least = lb;
    mp_plan_result_free(&ro);
    goto above;
  }
  least = ro.min_feasible_budget;
  mp_plan_result_free(&ro);
  ck_assert_uint_gt(least, lb);
  below = lb + (least - lb) / 2;
  plan_shipped(g, MP_SOLVER_AUTO, below, 0, &ro);
  ck_assert(!ro.feasible);
  mp_plan_result_free(&ro);
  plan_shipped(g, MP_SOLVER_SWAP, below, 0, &sw);
  plan_shipped(g, MP_SOLVER_HYBRID, below, 0, &hy);
  fits = sw.feasible || hy.feasible;
  printf("  %-10s lower bound %.3f GB, recompute-only from %.3f GB; at %.3f GB swap %s "
         "(%.0f), hybrid %s (%.0f, %s)\n",
         shipped[_i], lb / 1e9, least / 1e9, below / 1e9, sw.feasible ? "fits" : "no",
         sw.sim.time_total, hy.feasible ? "fits" : "no", hy.sim.time_total,
         hy.source ? hy.source : "-");
  ck_assert_msg(fits, "%s: neither swap nor hybrid fits %llu bytes", shipped[_i],
                (unsigned long long)below);
  if (sw.feasible && hy.feasible)
    ck_assert(hy.sim.time_total <= sw.sim.time_total * (1 + 1e-12));
  mp_plan_result_free(&sw);
  mp_plan_result_free(&hy);

above:
  for (k = 0; k < 2; k++) {
    uint64_t b = least + (uint64_t)((double)(p0 - least) * fr[k]);
    plan_shipped(g, MP_SOLVER_AUTO, b, 0, &ro);
    plan_shipped(g, MP_SOLVER_SWAP, b, 0, &sw);
    plan_shipped(g, MP_SOLVER_HYBRID, b, 0, &hy);
    ck_assert(ro.feasible);
    ck_assert(hy.feasible);
    ck_assert(hy.sim.time_total <= ro.sim.time_total * (1 + 1e-12));
    if (sw.feasible) ck_assert(hy.sim.time_total <= sw.sim.time_total * (1 + 1e-12));
    printf("  %-10s at %.3f GB: recompute-only %.0f, swap %.0f%s, hybrid %.0f (%s)\n",
           shipped[_i], b / 1e9, ro.sim.time_total, sw.sim.time_total,
           sw.feasible ? "" : " (none)", hy.sim.time_total, hy.source);
    mp_plan_result_free(&ro);
    mp_plan_result_free(&sw);
    mp_plan_result_free(&hy);
  }
  mp_graph_free(g);
}
END_TEST

/* Layrub against memplan at Layrub's own peak, both with intra-layer reuse:
 * memplan's hybrid plan must take less time. */
START_TEST(test_layrub_vs_hybrid) {
  static const char *const names[] = {"vgg19", "resnet50"};
  mp_graph_t *g = mp_test_load_shipped(names[_i]);
  mp_plan_result_t lr, hy, none;
  plan_shipped(g, MP_SOLVER_NONE, UINT64_MAX, 0, &none);
  plan_shipped(g, MP_SOLVER_LAYRUB, UINT64_MAX, 1, &lr);
  ck_assert(lr.feasible);
  ck_assert_uint_gt(lr.n_swapped, 0);
  ck_assert_uint_lt(lr.sim.peak_bytes, none.sim.peak_bytes);
  plan_shipped(g, MP_SOLVER_HYBRID, lr.sim.peak_bytes, 1, &hy);
  printf("  %-10s layrub: peak %.3f GB (%.1f%% below %.3f), time %.0f (+%.1f%%); "
         "hybrid at that peak: %.3f GB, time %.0f (+%.1f%%, %s)\n",
         names[_i], lr.sim.peak_bytes / 1e9,
         100.0 * (1.0 - (double)lr.sim.peak_bytes / (double)none.sim.peak_bytes),
         none.sim.peak_bytes / 1e9, lr.sim.time_total,
         100.0 * (lr.sim.time_total / none.sim.time_total - 1.0),
         hy.feasible ? hy.sim.peak_bytes / 1e9 : 0.0, hy.sim.time_total,
         100.0 * (hy.sim.time_total / none.sim.time_total - 1.0), hy.source ? hy.source : "-");
  ck_assert(hy.feasible);
  ck_assert(hy.sim.time_total < lr.sim.time_total);
  mp_plan_result_free(&lr);
  mp_plan_result_free(&hy);
  mp_plan_result_free(&none);
  mp_graph_free(g);
}
END_TEST

/* swap's greedy takes a path that depends on the budget: on U-Net it
 * planned 714 at 5,440,408,525 B (a plan peaking at 5,371,050,760 B) but
 * 713 at the smaller 5,337,559,152 B. With its probes below its own plan's
 * peak, the larger budget plans 713 too, and so does hybrid. */
START_TEST(test_swap_probes_below_peak) {
  static const uint64_t budgets[] = {UINT64_C(5337559152), UINT64_C(5440408525)};
  mp_graph_t *g = mp_test_load_shipped("unet");
  size_t i;
  for (i = 0; i < 2; i++) {
    mp_plan_result_t sw, hy;
    plan_shipped(g, MP_SOLVER_SWAP, budgets[i], 0, &sw);
    plan_shipped(g, MP_SOLVER_HYBRID, budgets[i], 0, &hy);
    ck_assert(sw.feasible && hy.feasible);
    ck_assert_double_eq_tol(sw.sim.time_total, 713, 1e-9);
    ck_assert_uint_eq(sw.sim.peak_bytes, UINT64_C(5317802760));
    ck_assert(hy.sim.time_total <= 713 + 1e-9);
    mp_plan_result_free(&sw);
    mp_plan_result_free(&hy);
  }
  mp_graph_free(g);
}
END_TEST

Suite *suite_solver_swap(void) {
  Suite *s = suite_create("solver_swap");
  TCase *tc = tcase_create("chain");
  tcase_add_test(tc, test_residency_schedules);
  tcase_add_test(tc, test_prefetch_schedules);
  tcase_add_loop_test(tc, test_chain_plans, 0, (int)(sizeof(chain_plans) / sizeof(chain_plans[0])));
  tcase_add_test(tc, test_prefetch_out_of_range);
  tcase_add_test(tc, test_reference_accounting_refused);
  tcase_add_test(tc, test_cancel);
  suite_add_tcase(s, tc);
  tc = tcase_create("shipped");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_bars_shipped, 0, (int)(sizeof(shipped) / sizeof(shipped[0])));
  tcase_add_loop_test(tc, test_layrub_vs_hybrid, 0, 2);
  tcase_add_test(tc, test_swap_probes_below_peak);
  suite_add_tcase(s, tc);
  return s;
}
