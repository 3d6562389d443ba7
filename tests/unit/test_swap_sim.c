/* test_swap_sim.c - the discrete-event part of the simulator: swap_out,
 * swap_in and wait steps on one or two copy queues, stalls, the
 * release-at-boundary rule, pinned host memory, the liveness pass over swap
 * steps, intra-layer reuse (grad_inplace), the errors of the new steps, and
 * the grad_inplace node field (JSON, hash, Kusumoto import). Every figure is
 * worked out by hand in the comments.
 *
 * The device used throughout: 100 bytes per second each way, no latency, one
 * graph time unit = 1 second, so a copy of 100 bytes lasts exactly 1 unit.
 *
 * Notation: "C x" compute, "R x" recompute, "F x" free, "B x" backward,
 * "O x" swap_out, "I x" swap_in, "W x" wait; gX is X's gradient; [s,e] a time
 * interval; live figures are device bytes (no constant memory here unless
 * said); "->" a transient moment, "=>" the value after the step.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "formats.h"
#include "graph.h"
#include "schedule.h"
#include "simulator.h"
#include "suites.h"
#include "test_util.h"

typedef struct {
  const char *id;
  const char *inputs[3];
  uint64_t bytes;
  double time;
  double bwd; /* 0: the default (2 x time) */
  mp_bwd_reads_t reads;
  int inplace;
  mp_kind_t kind;
} sn_t;

static mp_graph_t *build(const sn_t *ns, size_t n) {
  mp_graph_t *g = mp_graph_new();
  mp_error_t err;
  size_t i;
  ck_assert_ptr_nonnull(g);
  for (i = 0; i < n; i++) {
    mp_node_spec_t s;
    size_t k = 0;
    mp_node_spec_init(&s);
    s.id = ns[i].id;
    while (k < 3 && ns[i].inputs[k]) k++;
    s.inputs = ns[i].inputs;
    s.n_inputs = k;
    s.bytes = ns[i].bytes;
    s.time = ns[i].time;
    if (ns[i].bwd > 0) {
      s.bwd_time = ns[i].bwd;
      s.has_bwd_time = 1;
    }
    s.bwd_reads = ns[i].reads;
    s.grad_inplace = ns[i].inplace;
    s.kind = ns[i].kind;
    s.where = "$.nodes[?]";
    ck_assert_int_eq(mp_graph_add_node(g, &s, NULL, &err), 0);
  }
  ck_assert_msg(mp_graph_finalize(g, NULL, &err) == 0, "%s", err.message);
  return g;
}


/* 100 bytes per time unit each way, no latency. */
static mp_device_t dev(int engines, int reuse) {
  mp_device_t d;
  mp_device_init(&d);
  d.h2d_bytes_per_s = 100;
  d.d2h_bytes_per_s = 100;
  d.latency_s = 0;
  d.time_unit_s = 1;
  d.copy_engines = engines;
  d.intra_layer_reuse = reuse;
  return d;
}

static void check_timeline(const mp_sim_report_t *r, const uint64_t *want, size_t n) {
  size_t i;
  ck_assert_uint_eq(r->n_steps, n);
  for (i = 0; i < n; i++)
    ck_assert_msg(r->timeline[i] == want[i], "timeline[%zu] = %llu, want %llu", i,
                  (unsigned long long)r->timeline[i], (unsigned long long)want[i]);
}

/* Expect an invalid schedule: code, path and a message fragment. */
static void expect_err(const mp_graph_t *g, mp_schedule_t *s, const char *path, const char *msg) {
  mp_device_t d = dev(2, 0);
  mp_sim_options_t o = {&d};
  mp_sim_report_t r;
  mp_error_t err;
  ck_assert_int_eq(mp_simulate_ex(g, s, &o, &r, &err), MP_ESCHEDULE);
  ck_assert_str_eq(err.path, path);
  ck_assert_msg(strstr(err.message, msg) != NULL, "message '%s' lacks '%s'", err.message, msg);
  ck_assert_ptr_null(r.timeline);
  ck_assert_ptr_null(r.swapped);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
}

/* a(100) -> b(100) -> c(100), times 1, backward 2, backward reads inputs. */
static const sn_t chain3[] = {
    {"a", {0}, 100, 1}, {"b", {"a"}, 100, 1}, {"c", {"b"}, 100, 1}};

/* Swap a out after b's compute, back in before b's backward, issued one step
 * too late:
 *  0 C a [0,1] => 100          1 C b [1,2] => 200
 *  2 O a copy [2,3], host 100, a's 100 device bytes held until 3 => 200
 *  3 C c [2,3]: a still counted -> 300 (peak) => 300
 *  4 F c at 3: a's copy ended (3 <= 3), released => 200; c => 100
 *  5 B c [3,5]: gc, gb -> 300 => 200      6 F b => 100
 *  7 I a at 5: a allocated => 200, copy [5,6]
 *  8 B b waits for a: start 6, stall 1; host copy released; ga -> 300 => 200
 *  9 F a => 100      10 B a [8,10] => 0
 * Compute 3 + 6 = 9, total 10. Without the swap B c holds a, b, gc, gb: 400. */
START_TEST(test_swap_chain_late) {
  mp_graph_t *g = build(chain3, 3);
  mp_device_t d = dev(2, 0);
  mp_schedule_t *s = mp_test_schedule(g, 0, "C a; C b; O a; C c; F c; B c; F b; I a; B b; F a; B a");
  mp_schedule_t *plain = mp_test_schedule(g, 0, "C a; C b; C c; F c; B c; F b; B b; F a; B a");
  mp_sim_report_t r;
  const uint64_t tl[] = {100, 200, 200, 300, 100, 200, 100, 200, 200, 100, 0};
  mp_test_simulate(g, s, &d, &r);
  ck_assert_uint_eq(r.peak_bytes, 300);
  ck_assert_uint_eq(r.peak_step, 3);
  check_timeline(&r, tl, 11);
  ck_assert_uint_eq(r.host_peak_bytes, 100);
  ck_assert_double_eq(r.time_forward, 3);
  ck_assert_double_eq(r.time_backward, 6);
  ck_assert_double_eq(r.time_recompute, 0);
  ck_assert_double_eq(r.time_stall, 1);
  ck_assert_double_eq(r.time_total, 10);
  ck_assert_double_eq_tol(r.overhead_pct, 100.0 / 9, 1e-9);
  ck_assert_double_eq(r.time_copy_d2h, 1);
  ck_assert_double_eq(r.time_copy_h2d, 1);
  ck_assert_uint_eq(r.n_swap_out, 1);
  ck_assert_uint_eq(r.n_swap_in, 1);
  ck_assert_uint_eq(r.bytes_swapped_out, 100);
  ck_assert_uint_eq(r.bytes_swapped_in, 100);
  ck_assert_uint_eq(r.n_swapped, 1);
  ck_assert_uint_eq(r.swapped[0], (uint32_t)mp_graph_find(g, "a"));
  ck_assert_uint_eq(r.n_frees, 3);
  ck_assert_uint_eq(r.n_reused, 0);
  mp_sim_report_free(&r);
  mp_test_simulate(g, plain, &d, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.host_peak_bytes, 0);
  ck_assert_double_eq(r.time_total, 9);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_schedule_free(plain);
  mp_graph_free(g);
}
END_TEST

/* a -> b -> c -> d, 100 bytes each, times 1, backward 2, with auto_free.
 * Just in time: "C a; C b; O a; C c; C d; B d; I a; B c; B b; B a".
 * The liveness pass: O a ends a's first value (no free); d dies after its
 * compute (4), c after B d (5), b after B c (7), the swapped-in a after B b
 * (8).
 *  0 C a [0,1] => 100   1 C b [1,2] => 200   2 O a [2,3] => 200
 *  3 C c [2,3] -> 300 => 300
 *  4 C d at 3: a released => 200; -> 300, d freed => 200
 *  5 B d [4,6]: gd, gc -> 400 (peak); gd, c freed => 200 (b, gc)
 *  6 I a at 6 => 300, copy [6,7]
 *  7 B c [6,8]: gb -> 400; gc, b freed => 200 (a, gb)
 *  8 B b at 8 (a ready at 7: no stall): ga -> 300; gb, a freed => 100
 *  9 B a [10,12] => 0.  Total 12 = 4 + 8, no stall.
 * Too late: the swap_in right before B b (after B c, at 8): copy [8,9], B b
 * stalls 1, total 13; b now dies after B c: timeline
 * 100 200 200 300 200 200 100 200 100 0. Store-all peaks at 500 (B d with
 * a, b, c, gd, gc). */
static const sn_t chain4[] = {
    {"a", {0}, 100, 1}, {"b", {"a"}, 100, 1}, {"c", {"b"}, 100, 1}, {"d", {"c"}, 100, 1}};

START_TEST(test_swap_just_in_time_vs_late) {
  mp_graph_t *g = build(chain4, 4);
  mp_device_t d = dev(2, 0);
  mp_schedule_t *jit = mp_test_schedule(g, 1, "C a; C b; O a; C c; C d; B d; I a; B c; B b; B a");
  mp_schedule_t *late = mp_test_schedule(g, 1, "C a; C b; O a; C c; C d; B d; B c; I a; B b; B a");
  mp_schedule_t *all;
  mp_sim_report_t r;
  const uint64_t tl_jit[] = {100, 200, 200, 300, 200, 200, 300, 200, 100, 0};
  const uint64_t tl_late[] = {100, 200, 200, 300, 200, 200, 100, 200, 100, 0};
  mp_test_simulate(g, jit, &d, &r);
  check_timeline(&r, tl_jit, 10);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.peak_step, 5);
  ck_assert_double_eq(r.time_stall, 0);
  ck_assert_double_eq(r.time_total, 12);
  ck_assert_double_eq(r.overhead_pct, 0);
  ck_assert_uint_eq(r.host_peak_bytes, 100);
  ck_assert_uint_eq(r.n_frees, 4);
  mp_sim_report_free(&r);
  mp_test_simulate(g, late, &d, &r);
  check_timeline(&r, tl_late, 10);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_double_eq(r.time_stall, 1);
  ck_assert_double_eq(r.time_total, 13);
  ck_assert_double_eq_tol(r.overhead_pct, 100.0 / 12, 1e-9);
  mp_sim_report_free(&r);
  ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
  mp_test_simulate(g, all, &d, &r);
  ck_assert_uint_eq(r.peak_bytes, 500);
  mp_sim_report_free(&r);
  mp_schedule_free(jit);
  mp_schedule_free(late);
  mp_schedule_free(all);
  mp_graph_free(g);
}
END_TEST

/* The liveness pass over swap steps, as a schedule: no free for the value a
 * swap_out takes, a free after the last reader of a swapped-in value, and
 * right after a swap_in that nothing reads. */
START_TEST(test_liveness_with_swaps) {
  mp_graph_t *g = build(chain4, 4);
  mp_schedule_t *s = mp_test_schedule(g, 0, "C a; C b; O a; C c; C d; B d; W a; I a; B c; B b; B a");
  mp_schedule_t *t =
      mp_test_schedule(g, 0, "C a; O a; I a; C b; C c; O b; I b; C d; O d; I d; B d; B c; B b; B a");
  ck_assert_int_eq(mp_schedule_insert_frees(g, s), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, s),
                   "C a; C b; O a; C c; C d; F d; B d; F c; W a; I a; B c; F b; B b; F a; B a");
  ck_assert_int_eq(s->auto_free, 0);
  /* d is swapped back in at step 9 but read by nothing later (B d reads its
   * input c): freed right after the swap_in. b's second value dies after
   * B c, a's after B b. */
  ck_assert_int_eq(mp_schedule_insert_frees(g, t), 0);
  ck_assert_str_eq(mp_test_schedule_text(g, t),
                   "C a; O a; I a; C b; C c; O b; I b; C d; O d; I d; F d; B d; F c; B c; F b; "
                   "B b; F a; B a");
  mp_schedule_free(s);
  mp_schedule_free(t);
  mp_graph_free(g);
}
END_TEST

/* One vs two copy engines. Chain a -> b -> c (100 bytes, times 1, backward
 * 2); c's backward reads nothing, b's reads a and b.
 * "C a; C b; C c; F c; O a; O b; I a; B c; I b; B b; F b; F a; B a":
 *  0 C a [0,1] 100   1 C b [1,2] 200   2 C c [2,3] -> 300   3 F c => 200
 *  4 O a at 3: D2H [3,4]          5 O b at 3: D2H [4,5] (behind O a)
 *  6 I a at 3: two engines: H2D queue idle, waits for O a's end: [4,5];
 *              one engine: behind O b: [5,6]. a allocated => 300
 *  7 B c [3,5]: gc, gb -> 500 (peak) => 400
 *  8 I b at 5: O a and O b ended (4, 5 <= 5): => 200, b allocated => 300;
 *              two engines [5,6]; one engine: behind I a, [6,7]
 *  9 B b: a, b ready at 6 (two) / 7 (one): stall 1 / 2; ga -> 400 => 300
 * 10 F b => 200   11 F a => 100   12 B a => 0
 * Compute 9; total 10 / 11. Host: a and b out at once: 200. */
START_TEST(test_one_vs_two_engines) {
  const sn_t ns[] = {{"a", {0}, 100, 1},
                     {"b", {"a"}, 100, 1, 0, MP_BWD_READS_BOTH},
                     {"c", {"b"}, 100, 1, 0, MP_BWD_READS_NONE}};
  mp_graph_t *g = build(ns, 3);
  mp_schedule_t *s = mp_test_schedule(g, 0, "C a; C b; C c; F c; O a; O b; I a; B c; I b; B b; F b; F a; B a");
  const uint64_t tl[] = {100, 200, 300, 200, 200, 200, 300, 400, 300, 300, 200, 100, 0};
  int engines;
  for (engines = 1; engines <= 2; engines++) {
    mp_device_t d = dev(engines, 0);
    mp_sim_report_t r;
    mp_test_simulate(g, s, &d, &r);
    check_timeline(&r, tl, 13);
    ck_assert_uint_eq(r.peak_bytes, 500);
    ck_assert_uint_eq(r.peak_step, 7);
    ck_assert_uint_eq(r.host_peak_bytes, 200);
    ck_assert_double_eq(r.time_stall, engines == 2 ? 1 : 2);
    ck_assert_double_eq(r.time_total, engines == 2 ? 10 : 11);
    ck_assert_double_eq(r.time_copy_d2h, 2);
    ck_assert_double_eq(r.time_copy_h2d, 2);
    ck_assert_uint_eq(r.n_swapped, 2);
    ck_assert_uint_eq(r.bytes_swapped_out, 200);
    mp_sim_report_free(&r);
  }
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* Wait steps (explicit frees), chain3:
 *  0 C a [0,1] 100   1 C b [1,2] 200   2 O a [2,3] => 200
 *  3 W a: waits until 3 (stall 1); a's bytes released => 100
 *  4 C c [3,4] -> 200 => 200   5 F c => 100
 *  6 B c [4,6]: gc, gb -> 300 (peak) => 200   7 F b => 100
 *  8 I a at 6 => 200, copy [6,7]   9 W a: until 7 (stall 2 in all)
 * 10 B b [7,9]: ga -> 300 => 200   11 F a => 100   12 B a [9,11] => 0
 * A wait for a node without copies does nothing (W c, W b). */
START_TEST(test_wait_steps) {
  mp_graph_t *g = build(chain3, 3);
  mp_device_t d = dev(2, 0);
  mp_schedule_t *s =
      mp_test_schedule(g, 0, "C a; C b; O a; W a; C c; F c; B c; F b; I a; W a; B b; F a; B a");
  mp_schedule_t *nop = mp_test_schedule(g, 1, "W c; C a; C b; W b; C c; B c; B b; B a");
  mp_sim_report_t r;
  const uint64_t tl[] = {100, 200, 200, 100, 200, 100, 200, 100, 200, 200, 200, 100, 0};
  mp_test_simulate(g, s, &d, &r);
  check_timeline(&r, tl, 13);
  ck_assert_uint_eq(r.peak_bytes, 300);
  ck_assert_uint_eq(r.peak_step, 6);
  ck_assert_double_eq(r.time_stall, 2);
  ck_assert_double_eq(r.time_total, 11);
  ck_assert_uint_eq(r.host_peak_bytes, 100);
  mp_sim_report_free(&r);
  mp_test_simulate(g, nop, &d, &r);
  ck_assert_double_eq(r.time_stall, 0);
  ck_assert_double_eq(r.time_total, 9);
  ck_assert_uint_eq(r.peak_bytes, 400);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_schedule_free(nop);
  mp_graph_free(g);
}
END_TEST

/* The release-at-boundary rule. a(300) -> b(100) -> c(100, time 4); the
 * backward steps read nothing. a's swap-out lasts 3 units.
 *  0 C a [0,1] 300   1 C b [1,2] 400   2 O a: copy [2,5] => 400
 *  3 C c [2,6]: the copy ends at 5, during the step: still counted,
 *    -> 500 (peak) => 500
 *  4 F b at 6: the release (5 <= 6) is applied first => 200, b => 100
 *  5 B c [6,14]: gc, gb -> 300 => 200    6 F c => 100
 *  7 B b [14,16]: ga -> 400 => 300       8 B a [16,18] => 0
 * a is never swapped back in: its host copy is held to the end (300). */
START_TEST(test_release_at_boundary) {
  const sn_t ns[] = {{"a", {0}, 300, 1},
                     {"b", {"a"}, 100, 1, 0, MP_BWD_READS_NONE},
                     {"c", {"b"}, 100, 4, 0, MP_BWD_READS_NONE}};
  mp_graph_t *g = build(ns, 3);
  mp_device_t d = dev(2, 0);
  mp_schedule_t *s = mp_test_schedule(g, 0, "C a; C b; O a; C c; F b; B c; F c; B b; B a");
  mp_sim_report_t r;
  const uint64_t tl[] = {300, 400, 400, 500, 100, 200, 100, 300, 0};
  mp_test_simulate(g, s, &d, &r);
  check_timeline(&r, tl, 9);
  ck_assert_uint_eq(r.peak_bytes, 500);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.host_peak_bytes, 300);
  ck_assert_double_eq(r.time_copy_d2h, 3);
  ck_assert_double_eq(r.time_total, 18);
  ck_assert_double_eq(r.time_stall, 0);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* A swap_in that nothing reads (auto_free frees it right after) keeps its
 * device bytes until its copy has landed. Single node a(100), time 1,
 * backward 2: "C a; O a; I a; B a".
 *  0 C a [0,1] 100   1 O a: copy [1,2] => 100 (held)
 *  2 I a at 1 => 200, copy [2,3] (after the swap-out); the automatic free
 *    comes before it lands: released at 3 => 200
 *  3 B a [1,3]: seed ga -> 300 (peak) => 200 (the releases come at the end)
 * And a copy still running at the end sets the makespan: a(900) alone,
 * bwd_time 3, "C a; O a; B a": B a ends at 4, the copy [1,10]: total 10,
 * overhead (10 - 4) / 4 = 150 %. */
START_TEST(test_deferred_free_and_tail) {
  const sn_t one[] = {{"a", {0}, 100, 1}};
  const sn_t big[] = {{"a", {0}, 900, 1, 3}};
  mp_graph_t *g = build(one, 1), *h = build(big, 1);
  mp_device_t d = dev(2, 0);
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; O a; I a; B a");
  mp_schedule_t *t = mp_test_schedule(h, 0, "C a; O a; B a");
  mp_sim_report_t r;
  const uint64_t tl[] = {100, 100, 200, 200};
  const uint64_t tl2[] = {900, 900, 900};
  mp_test_simulate(g, s, &d, &r);
  check_timeline(&r, tl, 4);
  ck_assert_uint_eq(r.peak_bytes, 300);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.n_frees, 1);
  ck_assert_double_eq(r.time_total, 3);
  mp_sim_report_free(&r);
  mp_test_simulate(h, t, &d, &r);
  check_timeline(&r, tl2, 3);
  ck_assert_uint_eq(r.peak_bytes, 1800);
  ck_assert_double_eq(r.time_total, 10);
  ck_assert_double_eq(r.time_stall, 0);
  ck_assert_double_eq(r.overhead_pct, 150);
  ck_assert_uint_eq(r.host_peak_bytes, 900);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_schedule_free(t);
  mp_graph_free(g);
  mp_graph_free(h);
}
END_TEST

START_TEST(test_swap_errors) {
  const sn_t ns[] = {{"x", {0}, 8, 0, 0, 0, 0, MP_KIND_INPUT},
                     {"w", {0}, 8, 0, 0, 0, 0, MP_KIND_PARAM},
                     {"a", {"x", "w"}, 100, 1},
                     {"b", {"a"}, 100, 1, 0, MP_BWD_READS_OUTPUT},
                     {"c", {"b"}, 100, 1}};
  mp_graph_t *g = build(ns, 5);
  expect_err(g, mp_test_schedule(g, 0, "C a; O a; C b"), "$.steps[2]",
             "step 2 (compute 'b'): the value of input 'a' was swapped out (it must be swapped "
             "in first)");
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; O b; F c; B c"), "$.steps[5]",
             "the value of input 'b' was swapped out");
  expect_err(g, mp_test_schedule(g, 0, "C a; C b; C c; F c; B c; O b; B b"), "$.steps[6]",
             "its own output was swapped out");
  expect_err(g, mp_test_schedule(g, 0, "C a; O a; F a"), "$.steps[2]",
             "step 2 (free 'a'): the value of 'a' was swapped out");
  expect_err(g, mp_test_schedule(g, 0, "C a; F a; I a"), "$.steps[2]",
             "step 2 (swap_in 'a'): 'a' has no host copy");
  expect_err(g, mp_test_schedule(g, 0, "I a"), "$.steps[0]", "'a' has no host copy");
  expect_err(g, mp_test_schedule(g, 0, "C a; I a"), "$.steps[1]", "the value of 'a' is already in memory");
  expect_err(g, mp_test_schedule(g, 0, "C a; O a; O a"), "$.steps[2]",
             "step 2 (swap_out 'a'): the value of 'a' is already swapped out");
  expect_err(g, mp_test_schedule(g, 0, "C a; O a; R a; O a"), "$.steps[3]",
             "'a' already has a host copy (one host copy per node at a time)");
  expect_err(g, mp_test_schedule(g, 0, "C a; F a; O a"), "$.steps[2]", "the value of 'a' is not in memory");
  expect_err(g, mp_test_schedule(g, 0, "O x"), "$.steps[0]", "step 0 (swap_out 'x'): 'x' is an input node");
  expect_err(g, mp_test_schedule(g, 0, "C a; I w"), "$.steps[1]", "'w' is a param node");
  expect_err(g, mp_test_schedule(g, 0, "W x"), "$.steps[0]", "'x' is an input node");
  /* auto_free: the liveness pass leaves the swapped-out value alone, so the
   * read is what fails, not an inserted free. */
  expect_err(g, mp_test_schedule(g, 1, "C a; O a; C b; C c; B c; B b; B a"), "$.steps[2]",
             "the value of input 'a' was swapped out");
  /* Swapped out and never back: every other rule still holds. */
  expect_err(g, mp_test_schedule(g, 1, "C a; O a"), "$.steps", "never backpropagated");
  mp_graph_free(g);
}
END_TEST

/* Intra-layer reuse, store-all with auto_free on chain3 (every node
 * grad_inplace). The liveness pass frees c after its compute, b after B c,
 * a after B b.
 * Off: C c -> 300; B c: a, b, gc, gb -> 400 (peak); B b: a, gb, ga -> 300.
 * On: B c is b's last reader, so gb takes b's buffer: -> 300 (a, b=gb, gc),
 * and the free of b releases nothing; B b likewise puts ga over a: -> 200.
 * Peak 300 (C c), 2 reuses; the timeline after each step is the same,
 * 100 200 200 200 100 0. */
START_TEST(test_reuse_store_all) {
  const sn_t ns[] = {{"a", {0}, 100, 1, 0, 0, 1}, {"b", {"a"}, 100, 1, 0, 0, 1},
                     {"c", {"b"}, 100, 1, 0, 0, 1}};
  mp_graph_t *g = build(ns, 3), *plain = build(chain3, 3);
  mp_device_t off = dev(2, 0), on = dev(2, 1);
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a"), *sp;
  mp_schedule_t *ex = mp_test_schedule(g, 0, "C a; C b; C c; F c; B c; F b; B b; F a; B a");
  mp_schedule_t *late = mp_test_schedule(g, 0, "C a; C b; C c; F c; B c; B b; F b; F a; B a");
  mp_sim_report_t r;
  const uint64_t tl[] = {100, 200, 200, 200, 100, 0};
  ck_assert_int_eq(mp_schedule_store_all(plain, &sp), 0);
  mp_test_simulate(g, s, &off, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.n_reused, 0);
  check_timeline(&r, tl, 6);
  mp_sim_report_free(&r);
  mp_test_simulate(g, s, &on, &r);
  ck_assert_uint_eq(r.peak_bytes, 300);
  ck_assert_uint_eq(r.peak_step, 2);
  ck_assert_uint_eq(r.n_reused, 2);
  check_timeline(&r, tl, 6);
  ck_assert_uint_eq(r.n_frees, 3);
  ck_assert_double_eq(r.time_total, 9); /* reuse changes memory only */
  mp_sim_report_free(&r);
  /* The same with explicit frees. */
  mp_test_simulate(g, ex, &on, &r);
  ck_assert_uint_eq(r.peak_bytes, 300);
  ck_assert_uint_eq(r.n_reused, 2);
  mp_sim_report_free(&r);
  /* Free of b not right after B c: no reuse there (B c -> 400); B b is
   * followed by F b, F a, so ga still goes over a. */
  mp_test_simulate(g, late, &on, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.peak_step, 4);
  ck_assert_uint_eq(r.n_reused, 1);
  mp_sim_report_free(&r);
  /* Nodes without grad_inplace: reuse on changes nothing. */
  mp_test_simulate(plain, sp, &on, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.n_reused, 0);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_schedule_free(sp);
  mp_schedule_free(ex);
  mp_schedule_free(late);
  mp_graph_free(g);
  mp_graph_free(plain);
}
END_TEST

/* Reuse when the value is read later: b's backward reads a and b. At B c, b
 * is still needed by B b: gb is allocated, -> 400 (a, b, gc, gb). At B b, a
 * dies: ga goes over a (-> 300 instead of 400). Peak 400 either way. */
START_TEST(test_reuse_value_read_later) {
  const sn_t ns[] = {{"a", {0}, 100, 1, 0, 0, 1},
                     {"b", {"a"}, 100, 1, 0, MP_BWD_READS_BOTH, 1},
                     {"c", {"b"}, 100, 1, 0, 0, 1}};
  mp_graph_t *g = build(ns, 3);
  mp_device_t off = dev(2, 0), on = dev(2, 1);
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a");
  mp_sim_report_t r;
  mp_test_simulate(g, s, &off, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.n_reused, 0);
  mp_sim_report_free(&r);
  mp_test_simulate(g, s, &on, &r);
  ck_assert_uint_eq(r.peak_bytes, 400);
  ck_assert_uint_eq(r.peak_step, 3);
  ck_assert_uint_eq(r.n_reused, 1);
  ck_assert_uint_eq(r.timeline[4], 100);
  mp_sim_report_free(&r);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

static void same_report(const mp_sim_report_t *a, const mp_sim_report_t *b) {
  ck_assert_uint_eq(a->peak_bytes, b->peak_bytes);
  ck_assert_uint_eq(a->peak_step, b->peak_step);
  ck_assert_uint_eq(a->n_steps, b->n_steps);
  ck_assert_int_eq(memcmp(a->timeline, b->timeline, a->n_steps * sizeof(uint64_t)), 0);
  /* Bit-identical times, not just close ones. */
  ck_assert_int_eq(memcmp(&a->time_total, &b->time_total, sizeof(double)), 0);
  ck_assert_int_eq(memcmp(&a->overhead_pct, &b->overhead_pct, sizeof(double)), 0);
  ck_assert_int_eq(memcmp(&a->time_forward, &b->time_forward, sizeof(double)), 0);
  ck_assert_int_eq(memcmp(&a->time_recompute, &b->time_recompute, sizeof(double)), 0);
  ck_assert_uint_eq(a->n_recomputed, b->n_recomputed);
  ck_assert_uint_eq(a->n_frees, b->n_frees);
  ck_assert_double_eq(a->time_stall, 0);
  ck_assert_double_eq(b->time_stall, 0);
  ck_assert_uint_eq(b->host_peak_bytes, 0);
  ck_assert_uint_eq(b->n_swapped, 0);
}

/* Without swap or wait steps mp_simulate and mp_simulate_ex (default device,
 * or any device without reuse) give the same report, and the total is the
 * plain sum forward + backward + recompute. On ResNet-50 (Kusumoto import:
 * every activation grad_inplace) with reuse on, only memory may change: the
 * peak can only go down and the times stay. */
START_TEST(test_no_swap_identical) {
  mp_graph_t *g;
  mp_schedule_t *s;
  mp_sim_report_t a, b;
  mp_error_t err;
  mp_device_t d1 = dev(1, 0), d2 = dev(2, 1);
  mp_sim_options_t o1 = {&d1}, o2 = {&d2}, o0 = {NULL};
  g = mp_test_load_shipped("resnet50");
  ck_assert_int_eq(mp_schedule_store_all(g, &s), 0);
  ck_assert_int_eq(mp_simulate(g, s, &a, &err), 0);
  ck_assert_int_eq(mp_simulate_ex(g, s, NULL, &b, &err), 0);
  same_report(&a, &b);
  ck_assert(a.time_total == a.time_forward + a.time_backward + a.time_recompute);
  mp_sim_report_free(&b);
  ck_assert_int_eq(mp_simulate_ex(g, s, &o0, &b, &err), 0);
  same_report(&a, &b);
  mp_sim_report_free(&b);
  ck_assert_int_eq(mp_simulate_ex(g, s, &o1, &b, &err), 0);
  same_report(&a, &b);
  mp_sim_report_free(&b);
  ck_assert_int_eq(mp_simulate_ex(g, s, &o2, &b, &err), 0);
  ck_assert_uint_le(b.peak_bytes, a.peak_bytes);
  ck_assert_uint_gt(b.n_reused, 0);
  ck_assert_int_eq(memcmp(&a.time_total, &b.time_total, sizeof(double)), 0);
  mp_sim_report_free(&b);
  mp_sim_report_free(&a);
  /* A bad device is refused before anything runs. */
  d1.copy_engines = 3;
  ck_assert_int_eq(mp_simulate_ex(g, s, &o1, &a, &err), MP_EINVAL);
  ck_assert_str_eq(err.path, "$.device.copy_engines");
  mp_sim_report_free(&a);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* Layrub-style offloading of a whole real graph, as a check that the
 * liveness pass and the simulator agree on big schedules: every activation
 * with a forward successor is swapped out right after its last forward
 * reader and swapped in right before the first backward step that reads it
 * (never, if none does); frees by the liveness pass. Every swap-out comes
 * before every swap-in, so the host peak is exactly the bytes swapped out.
 * With a practically infinite bandwidth nothing stalls and the total is the
 * compute time; the peak is far below keeping everything. */
static mp_schedule_t *offload_all(const mp_graph_t *g, size_t *n_out, uint64_t *bytes_out) {
  mp_schedule_t *s = mp_schedule_new();
  size_t n = g->n_nodes, v, k;
  uint32_t *last_fwd = malloc(n * sizeof(uint32_t));
  uint8_t *out = calloc(n, 1);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(last_fwd);
  ck_assert_ptr_nonnull(out);
  s->auto_free = 1;
  *n_out = 0;
  *bytes_out = 0;
  for (v = 0; v < n; v++) {
    last_fwd[v] = UINT32_MAX;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
      if (g->nodes[g->succ[k]].kind == MP_KIND_ACTIVATION) last_fwd[v] = g->succ[k];
  }
  for (v = 0; v < n; v++) {
    if (g->nodes[v].kind != MP_KIND_ACTIVATION) continue;
    ck_assert_int_eq(mp_schedule_push(s, MP_STEP_COMPUTE, (uint32_t)v), 0);
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
      uint32_t u = g->pred[k];
      if (g->nodes[u].kind == MP_KIND_ACTIVATION && last_fwd[u] == v) {
        ck_assert_int_eq(mp_schedule_push(s, MP_STEP_SWAP_OUT, u), 0);
        out[u] = 1;
        (*n_out)++;
        *bytes_out += g->nodes[u].bytes;
      }
    }
  }
  for (v = n; v-- > 0;) {
    mp_bwd_reads_t r = g->nodes[v].bwd_reads;
    if (g->nodes[v].kind != MP_KIND_ACTIVATION) continue;
    if (r == MP_BWD_READS_INPUTS || r == MP_BWD_READS_BOTH)
      for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
        if (out[g->pred[k]]) {
          ck_assert_int_eq(mp_schedule_push(s, MP_STEP_SWAP_IN, g->pred[k]), 0);
          out[g->pred[k]] = 0;
        }
    if ((r == MP_BWD_READS_OUTPUT || r == MP_BWD_READS_BOTH) && out[v]) {
      ck_assert_int_eq(mp_schedule_push(s, MP_STEP_SWAP_IN, (uint32_t)v), 0);
      out[v] = 0;
    }
    ck_assert_int_eq(mp_schedule_push(s, MP_STEP_BACKWARD, (uint32_t)v), 0);
  }
  free(last_fwd);
  free(out);
  return s;
}

START_TEST(test_offload_whole_graph) {
  mp_graph_t *g;
  mp_schedule_t *s, *all;
  mp_sim_report_t r, ra;
  mp_error_t err;
  mp_device_t fast = dev(2, 0), slow;
  mp_sim_options_t of = {&fast}, os = {&slow};
  size_t n_out;
  uint64_t bytes_out;
  g = mp_test_load_shipped("resnet50");
  s = offload_all(g, &n_out, &bytes_out);
  ck_assert_int_eq(mp_schedule_store_all(g, &all), 0);
  ck_assert_int_eq(mp_simulate(g, all, &ra, &err), 0);
  fast.h2d_bytes_per_s = fast.d2h_bytes_per_s = 1e30;
  ck_assert_msg(mp_simulate_ex(g, s, &of, &r, &err) == 0, "%s: %s", err.path, err.message);
  ck_assert_uint_eq(r.n_swap_out, n_out);
  ck_assert_uint_eq(r.n_swapped, n_out);
  ck_assert_uint_eq(r.bytes_swapped_out, bytes_out);
  ck_assert_uint_eq(r.host_peak_bytes, bytes_out);
  ck_assert_uint_le(r.bytes_swapped_in, bytes_out);
  ck_assert_uint_gt(r.n_swap_in, 0);
  ck_assert_double_eq_tol(r.time_stall, 0, 1e-9);
  ck_assert_double_eq_tol(r.time_total, r.time_forward + r.time_backward, 1e-9);
  ck_assert_double_eq(r.time_forward, ra.time_forward);
  ck_assert_double_eq(r.time_backward, ra.time_backward);
  ck_assert_uint_lt(r.peak_bytes, ra.peak_bytes);
  mp_sim_report_free(&r);
  /* One slow engine (the default 12 GB/s with a 1 ms time unit, so copies
   * take time): same memory traffic, the compute queue now stalls, and the
   * makespan covers compute, stall and any copy still running. */
  mp_device_init(&slow);
  slow.copy_engines = 1;
  slow.time_unit_s = 1e-3;
  ck_assert_msg(mp_simulate_ex(g, s, &os, &r, &err) == 0, "%s: %s", err.path, err.message);
  ck_assert_uint_eq(r.host_peak_bytes, bytes_out);
  ck_assert_double_gt(r.time_stall, 0);
  ck_assert_double_gt(r.time_copy_d2h, 0);
  ck_assert_double_ge(r.time_total, r.time_forward + r.time_backward + r.time_stall - 1e-6);
  ck_assert_double_gt(r.overhead_pct, 0);
  mp_sim_report_free(&r);
  mp_sim_report_free(&ra);
  mp_schedule_free(s);
  mp_schedule_free(all);
  mp_graph_free(g);
}
END_TEST

#define DOC_HEAD "{\"format\":\"memplan.graph/1\",\"time_unit\":\"ms\",\"nodes\":["
#define DOC_X "{\"id\":\"x\",\"kind\":\"input\",\"bytes\":8},"
#define DOC_A "{\"id\":\"a\",\"inputs\":[\"x\"],\"bytes\":100,\"time\":1"
#define DOC_B                                                                                  \
  "{\"id\":\"b\",\"inputs\":[\"a\"],\"bytes\":200,\"time\":2,\"bwd_reads\":\"output\","         \
  "\"recompute\":false}]}"

static mp_graph_t *load(const char *doc) {
  mp_graph_t *g;
  mp_error_t err;
  ck_assert_msg(mp_graph_load_buffer(doc, strlen(doc), MP_FORMAT_AUTO, NULL, NULL, &g, NULL,
                                     &err) == 0,
                "%s: %s", err.path, err.message);
  return g;
}

/* grad_inplace in the native format: read, written only when true, round
 * trip, and the hash: a graph without it hashes as before the field existed
 * (the constant was computed with the encoding of that time), explicit false
 * is the same graph, and setting it changes the hash. */
START_TEST(test_grad_inplace_json_and_hash) {
  mp_graph_t *g0 = load(DOC_HEAD DOC_X DOC_A "}," DOC_B);
  mp_graph_t *gf = load(DOC_HEAD DOC_X DOC_A ",\"grad_inplace\":false}," DOC_B);
  mp_graph_t *gt = load(DOC_HEAD DOC_X DOC_A ",\"grad_inplace\":true}," DOC_B);
  mp_graph_t *back;
  mp_error_t err;
  json_t *j, *nodes;
  char *text;
  char h0[65], hf[65], ht[65], hb[65];
  long a = mp_graph_find(gt, "a"), b = mp_graph_find(gt, "b");
  ck_assert_int_eq(gt->nodes[a].grad_inplace, 1);
  ck_assert_int_eq(gt->nodes[b].grad_inplace, 0);
  ck_assert_int_eq(g0->nodes[a].grad_inplace, 0);
  ck_assert_int_eq(mp_graph_hash(g0, h0), 0);
  ck_assert_int_eq(mp_graph_hash(gf, hf), 0);
  ck_assert_int_eq(mp_graph_hash(gt, ht), 0);
  ck_assert_str_eq(h0, "772c79be101d81ca30fc2929172bf57b9c6de8ef6374961bb9d679f3e652bf06");
  ck_assert_str_eq(hf, h0);
  ck_assert_str_ne(ht, h0);
  /* Writer: true on a only, nowhere on the graph without it. */
  j = mp_graph_to_json(gt);
  ck_assert_ptr_nonnull(j);
  nodes = json_object_get(j, "nodes");
  ck_assert(json_is_true(json_object_get(json_array_get(nodes, (size_t)a), "grad_inplace")));
  ck_assert_ptr_null(json_object_get(json_array_get(nodes, (size_t)b), "grad_inplace"));
  text = json_dumps(j, JSON_COMPACT);
  ck_assert_ptr_nonnull(text);
  back = load(text);
  ck_assert_int_eq(mp_graph_hash(back, hb), 0);
  ck_assert_str_eq(hb, ht);
  free(text);
  json_decref(j);
  mp_graph_free(back);
  j = mp_graph_to_json(gf);
  text = json_dumps(j, JSON_COMPACT);
  ck_assert_ptr_null(strstr(text, "grad_inplace"));
  free(text);
  json_decref(j);
  /* Type errors name the field. */
  {
    const char *bad = DOC_HEAD DOC_X DOC_A ",\"grad_inplace\":1}," DOC_B;
    mp_graph_t *gb = NULL;
    ck_assert_int_eq(
        mp_graph_load_buffer(bad, strlen(bad), MP_FORMAT_AUTO, NULL, NULL, &gb, NULL, &err),
        MP_EINVAL);
    ck_assert_str_eq(err.path, "$.nodes[1].grad_inplace");
    ck_assert_str_eq(err.message, "grad_inplace must be a boolean, got an integer");
  }
  mp_graph_free(g0);
  mp_graph_free(gf);
  mp_graph_free(gt);
}
END_TEST

/* Kusumoto import flags every activation, and no input or param. */
START_TEST(test_kusumoto_sets_grad_inplace) {
  mp_graph_t *g = mp_test_load_shipped("vgg19");
  size_t v, n_act = 0;
  for (v = 0; v < g->n_nodes; v++) {
    ck_assert_int_eq(g->nodes[v].grad_inplace, g->nodes[v].kind == MP_KIND_ACTIVATION);
    n_act += g->nodes[v].kind == MP_KIND_ACTIVATION;
  }
  ck_assert_uint_eq(n_act, g->n_activations);
  ck_assert_uint_gt(g->n_nodes, n_act); /* there are inputs/params too */
  mp_graph_free(g);
}
END_TEST

Suite *suite_swap_sim(void) {
  Suite *s = suite_create("swap_sim");
  TCase *tc = tcase_create("events");
  tcase_add_test(tc, test_swap_chain_late);
  tcase_add_test(tc, test_swap_just_in_time_vs_late);
  tcase_add_test(tc, test_liveness_with_swaps);
  tcase_add_test(tc, test_one_vs_two_engines);
  tcase_add_test(tc, test_wait_steps);
  tcase_add_test(tc, test_release_at_boundary);
  tcase_add_test(tc, test_deferred_free_and_tail);
  tcase_add_test(tc, test_swap_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("reuse");
  tcase_add_test(tc, test_reuse_store_all);
  tcase_add_test(tc, test_reuse_value_read_later);
  suite_add_tcase(s, tc);
  tc = tcase_create("model");
  tcase_add_test(tc, test_no_swap_identical);
  tcase_add_test(tc, test_offload_whole_graph);
  tcase_add_test(tc, test_grad_inplace_json_and_hash);
  tcase_add_test(tc, test_kusumoto_sets_grad_inplace);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  return s;
}
