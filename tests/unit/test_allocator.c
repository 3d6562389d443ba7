/* test_allocator.c - the device's allocator option (planner/device.h):
 * PyTorch's CUDA caching allocator's rounding of every allocation to
 * 512-byte blocks, on synthetic schedules whose peaks are worked out by
 * hand, through the planner (feasibility follows the rounded peak), and
 * through the daemon (the option is part of the answer and of the key). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_caching.h"
#include "formats.h"
#include "frontier.h"
#include "plan.h"
#include "suites.h"
#include "test_daemon.h"
#include "test_util.h"

static mp_graph_t *load(const char *text) {
  mp_graph_t *g = NULL;
  mp_error_t err;
  mp_error_clear(&err);
  ck_assert_msg(mp_graph_load_buffer(text, strlen(text), MP_FORMAT_NATIVE, NULL, NULL, &g, NULL, &err) == 0, "%s",
                err.message);
  return g;
}

static void cuda(mp_device_t *d) {
  mp_device_init(d);
  d->allocator = MP_ALLOCATOR_PYTORCH_CUDA;
}

/* x (input, 100 B) -> a (1000) -> b (1) -> c (600,000, workspace 10). */
#define CHAIN                                                                                              \
  "{\"format\": \"memplan.graph/1\", \"param_bytes\": 1000000, \"nodes\": ["                               \
  "{\"id\": \"x\", \"kind\": \"input\", \"bytes\": 100},"                                                  \
  "{\"id\": \"a\", \"inputs\": [\"x\"], \"bytes\": 1000, \"time\": 1},"                                    \
  "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 1, \"time\": 1},"                                       \
  "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 600000, \"time\": 1, \"workspace_bytes\": 10}]}"

START_TEST(test_alloc_size) {
  mp_device_t d;
  mp_device_init(&d);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 1), 1); /* exact: as is */
  cuda(&d);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 0), 0);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 1), 512);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 511), 512);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 512), 512);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 513), 1024);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 600000), 600064);
  ck_assert_uint_eq(mp_device_alloc_size(&d, 1ull << 40), 1ull << 40);
  ck_assert_uint_eq(mp_device_alloc_size(&d, UINT64_MAX - 10), UINT64_MAX);
  d.allocator = (mp_allocator_t)7;
  ck_assert_int_eq(mp_device_check(&d, NULL), MP_EINVAL);
}
END_TEST

/* Plain backpropagation on the chain: the peak is in c's backward (the
 * seed gradient of c, the new gradient of b, c's workspace, with x, a, b
 * alive). Exact: 1,000,000 + 100 + 1000 + 1 + 600,000 + 1 + 10 = 1,601,112.
 * Rounded: param_bytes 1,000,448 (1954 blocks), x 512, a 1024, b 512, the
 * seed 600,064 (1172 blocks), grad b 512, workspace 512 = 1,603,584. */
START_TEST(test_keep_all_peak) {
  mp_graph_t *g = load(CHAIN);
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a");
  mp_sim_report_t rep;
  mp_device_t d;
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 1601112);
  ck_assert_uint_eq(rep.const_bytes, 1000100);
  mp_sim_report_free(&rep);
  cuda(&d);
  mp_test_simulate(g, s, &d, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 1603584);
  ck_assert_uint_eq(rep.const_bytes, 1000448 + 512);
  /* the last step frees everything but the constant memory */
  ck_assert_uint_eq(rep.timeline[rep.n_steps - 1], 1000448 + 512);
  /* every block is small (up to 1 MiB) and they never hold more than 2 MiB
   * at once: one 2 MiB segment (c's freed value leaves room for its seed) */
  ck_assert_uint_eq(rep.reserved_peak_bytes, 2097152);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* Recomputation, saved bytes and a swap: each allocation is rounded on
 * its own (two 1-byte saved masks take two blocks), the host copy keeps
 * its exact size. */
START_TEST(test_recompute_saved_swap) {
  const char *doc = "{\"format\": \"memplan.graph/1\", \"nodes\": ["
                    "{\"id\": \"a\", \"bytes\": 700, \"time\": 1},"
                    "{\"id\": \"d\", \"inputs\": [\"a\"], \"bytes\": 300, \"saved_bytes\": 1, \"time\": 1},"
                    "{\"id\": \"e\", \"inputs\": [\"d\"], \"bytes\": 300, \"saved_bytes\": 1, \"time\": 1}]}";
  mp_graph_t *g = load(doc);
  mp_schedule_t *s;
  mp_sim_report_t rep;
  mp_device_t d;
  cuda(&d);
  /* keep all: after the forward pass a 1024 + d 512 + its mask 512 + e's
   * mask 512 (e's value, which nothing reads, is freed); e's backward adds
   * its seed (512) and d's gradient (512): 3584, the peak. Exact, d's
   * backward is higher: a 700 + d's mask 1 + grad d 300 + grad a 700 =
   * 1701 (rounded 3072), above e's backward's 1602 (rounded 3584): the
   * rounding moves the peak. */
  s = mp_test_schedule(g, 1, "C a; C d; C e; B e; B d; B a");
  mp_test_simulate(g, s, &d, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 3584);
  mp_sim_report_free(&rep);
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 1701);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  /* a swapped out and back before d's backward: the device holds its 1024
   * bytes until the copy ends, the host its 700 */
  s = mp_test_schedule(g, 0, "C a; C d; O a; W a; C e; B e; F e; I a; W a; B d; F d; B a; F a");
  mp_test_simulate(g, s, &d, &rep);
  ck_assert_uint_eq(rep.host_peak_bytes, 700);
  ck_assert_uint_eq(rep.bytes_swapped_out, 700);
  /* e's backward without a: d 512 + mask 512 + e 512 + mask 512 + seed
   * 512 + grad d 512 = 3072; d's backward with a back (e freed, e's mask
   * and seed released): a 1024 + d 512 + mask 512 + grad d 512 + grad a
   * 1024 = 3584 */
  ck_assert_uint_eq(rep.peak_bytes, 3584);
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* The planner under the option: a budget between the exact and the
 * rounded peak of plain backpropagation fits exactly but not rounded; a
 * plan that recomputes a (1024 rounded bytes fewer in c's backward, whose
 * least is 1,602,560 rounded) fits it; every plan found fits its rounded
 * simulated peak, and the least feasible budget it names is met. */
START_TEST(test_plans_follow_rounding) {
  mp_graph_t *g = load(CHAIN);
  mp_plan_options_t o;
  mp_plan_result_t r;
  mp_error_t err;
  uint64_t b;
  mp_plan_options_init(&o);
  o.solver = MP_SOLVER_NONE;
  o.budget = 1603000;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
  ck_assert(r.feasible);
  mp_plan_result_free(&r);
  cuda(&o.device);
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
  ck_assert(!r.feasible);
  ck_assert_uint_eq(r.min_feasible_budget, 1603584);
  mp_plan_result_free(&r);
  {
    /* a frontier is found at the DP's unrounded model budgets: refused */
    mp_frontier_t f;
    ck_assert_int_eq(mp_frontier(g, &o, &f, &err), MP_EINVAL);
    ck_assert_str_eq(err.path, "$.device.allocator");
  }
  /* auto: recomputing a plans under the rounded peak */
  o.solver = MP_SOLVER_AUTO;
  ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
  ck_assert(r.feasible);
  ck_assert_uint_le(r.sim.peak_bytes, o.budget);
  ck_assert_uint_eq(r.sim.peak_bytes % 512, 0);
  mp_plan_result_free(&r);
  /* far below: infeasible, and its least feasible budget is met */
  for (b = 1001000; b < 1603584; b += 50000) {
    o.budget = b;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
    if (!r.feasible && r.min_feasible_budget) {
      uint64_t m = r.min_feasible_budget;
      ck_assert_uint_gt(m, b);
      mp_plan_result_free(&r);
      o.budget = m;
      ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
      ck_assert_msg(r.feasible, "the least feasible budget %llu is not met", (unsigned long long)m);
    }
    mp_plan_result_free(&r);
  }
  mp_graph_free(g);
}
END_TEST

/* Through the daemon: "allocator" in the device, echoed in the answer, and
 * a key of its own (the exact plan of the same request is not a hit). */
START_TEST(test_daemon_allocator) {
  mp_test_daemon_t s;
  json_t *o, *req;
  char *body;
  mp_test_daemon_start(&s, NULL, 0);
  req = json_pack("{s:o,s:i,s:s,s:i}", "graph", json_loads(CHAIN, 0, NULL), "budget", 1602000, "solver", "none",
                  "wait", 30);
  body = json_dumps(req, JSON_COMPACT);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, NULL, &o, NULL), 200);
  free(body);
  ck_assert(json_is_true(json_object_get(json_object_get(o, "result"), "feasible")));
  json_decref(o);
  json_object_set_new(req, "device", json_pack("{s:s}", "allocator", "pytorch-cuda"));
  body = json_dumps(req, JSON_COMPACT);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, NULL, &o, NULL), 200);
  free(body);
  ck_assert_ptr_null(json_object_get(o, "cache"));
  ck_assert(json_is_false(json_object_get(json_object_get(o, "result"), "feasible")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "result"), "min_feasible_budget")), 1603584);
  ck_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(json_object_get(o, "result"), "device"), "allocator")),
                   "pytorch-cuda");
  json_decref(o);
  json_object_set_new(req, "device", json_pack("{s:s}", "allocator", "tcmalloc"));
  body = json_dumps(req, JSON_COMPACT);
  ck_assert_int_eq(mp_test_daemon_http(&s, "POST", "/v1/plans", body, NULL, &o, NULL), 400);
  free(body);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "path")), "$.device.allocator");
  json_decref(o);
  json_decref(req);
  mp_test_daemon_cleanup(&s);
}
END_TEST

#define MIB (1024ull * 1024)

/* The reserve through the simulator: a (3 MiB) -> b (12 MiB) -> c (3 MiB),
 * kept. a takes a 20 MiB segment, b (12 MiB) is cut from its remaining 17,
 * c from the 5 left; c's value, read by no one, is freed and merges back
 * (5 MiB free); c's backward takes its seed (3 MiB) from it and b's
 * gradient (12 MiB) needs a new 12 MiB segment: 32 MiB reserved while the
 * allocated peak is a + b + seed c + grad b = 30 MiB. */
START_TEST(test_reserved_through_simulator) {
  mp_graph_t *g = load("{\"format\": \"memplan.graph/1\", \"nodes\": ["
                       "{\"id\": \"a\", \"bytes\": 3145728, \"time\": 1},"
                       "{\"id\": \"b\", \"inputs\": [\"a\"], \"bytes\": 12582911, \"time\": 1},"
                       "{\"id\": \"c\", \"inputs\": [\"b\"], \"bytes\": 3145728, \"time\": 1}]}");
  mp_schedule_t *s = mp_test_schedule(g, 1, "C a; C b; C c; B c; B b; B a");
  mp_sim_report_t rep;
  mp_device_t d;
  cuda(&d);
  mp_test_simulate(g, s, &d, &rep);
  ck_assert_uint_eq(rep.peak_bytes, 30 * MIB);
  ck_assert_uint_eq(rep.reserved_peak_bytes, 32 * MIB);
  mp_sim_report_free(&rep);
  mp_test_simulate(g, s, NULL, &rep);
  ck_assert_uint_eq(rep.reserved_peak_bytes, 0); /* exact: no model */
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
}
END_TEST

/* Plans of shipped graphs under the model, recomputing, swapping and
 * reusing buffers (intra-layer reuse): every simulation ends with every
 * block back (the simulator checks it, a planner bug otherwise), the
 * reserve is whole segments and never below the allocated peak. */
START_TEST(test_reserved_on_plans) {
  static const char *const names[] = {"vgg19", "resnet50"};
  static const mp_solver_t solvers[] = {MP_SOLVER_AUTO, MP_SOLVER_HYBRID, MP_SOLVER_NONE};
  static const double fractions[] = {0.5, 0.7, 1.0};
  size_t gi, si, fi;
  for (gi = 0; gi < 2; gi++) {
    mp_graph_t *g = mp_test_load_shipped(names[gi]);
    mp_plan_options_t o;
    mp_plan_result_t r;
    mp_error_t err;
    uint64_t top;
    mp_plan_options_init(&o);
    cuda(&o.device);
    o.device.intra_layer_reuse = 1;
    o.solver = MP_SOLVER_NONE;
    ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
    top = r.sim.peak_bytes;
    ck_assert_uint_ge(r.sim.reserved_peak_bytes, r.sim.peak_bytes);
    mp_plan_result_free(&r);
    for (si = 0; si < 3; si++)
      for (fi = 0; fi < 3; fi++) {
        o.solver = solvers[si];
        o.swap = mp_solver_swaps(o.solver);
        o.budget = (uint64_t)(fractions[fi] * (double)top);
        mp_error_clear(&err);
        ck_assert_msg(mp_plan(g, &o, &r, &err) == 0, "%s %s: %s", names[gi], mp_solver_name(o.solver), err.message);
        if (r.feasible && r.schedule) {
          ck_assert_uint_le(r.sim.peak_bytes, o.budget);
          ck_assert_uint_ge(r.sim.reserved_peak_bytes, r.sim.peak_bytes);
          ck_assert_uint_eq(r.sim.reserved_peak_bytes % (2 * MIB), 0);
        }
        mp_plan_result_free(&r);
      }
    mp_graph_free(g);
  }
}
END_TEST

/* The caching allocator's model on hand-made sequences: the small pool's
 * 2 MiB segments shared by small requests, 20 MiB segments for requests
 * under 10 MiB, larger ones rounded up to 2 MiB, best fit, splitting,
 * merging, and a large block handed out whole when at most 1 MiB would be
 * left (allocated counts it whole). */
START_TEST(test_caching_sequences) {
  mp_cuda_caching_t c;
  int64_t a, b, x, y, z, w;
  ck_assert_uint_eq(mp_cuda_segment_size(512), 2 * MIB);
  ck_assert_uint_eq(mp_cuda_segment_size(MIB), 2 * MIB);
  ck_assert_uint_eq(mp_cuda_segment_size(MIB + 512), 20 * MIB);
  ck_assert_uint_eq(mp_cuda_segment_size(10 * MIB - 512), 20 * MIB);
  ck_assert_uint_eq(mp_cuda_segment_size(10 * MIB), 10 * MIB);
  ck_assert_uint_eq(mp_cuda_segment_size(11 * MIB + 512), 12 * MIB);
  mp_cuda_caching_init(&c);
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 0, &a), 0);
  ck_assert_int_eq(a, -1);
  ck_assert_uint_eq(c.reserved, 0);
  /* two small requests share one 2 MiB segment */
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 1, &a), 0);
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 1000, &b), 0);
  ck_assert_uint_eq(c.reserved, 2 * MIB);
  ck_assert_uint_eq(c.allocated, 512 + 1024);
  /* 1.5 MiB: a 20 MiB segment, split; 12 MiB: cut from the rest of it
   * (the smallest free block that holds it; 6.5 MiB left) */
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 3 * MIB / 2, &x), 0);
  ck_assert_uint_eq(c.reserved, 22 * MIB);
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 12 * MIB - 100, &y), 0);
  ck_assert_uint_eq(c.blocks[y].size, 12 * MIB);
  ck_assert_uint_eq(c.reserved, 22 * MIB);
  ck_assert_uint_eq(c.allocated, 1536 + 3 * MIB / 2 + 12 * MIB);
  /* x freed (its neighbour y is in use: no merge); 2 MiB is cut from the
   * 6.5 MiB block, the best fit, not from x's 1.5 */
  mp_cuda_caching_release(&c, x);
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 2 * MIB, &x), 0);
  ck_assert_uint_eq(c.blocks[x].offset, 27 * MIB / 2);
  ck_assert_uint_eq(c.reserved, 22 * MIB);
  /* 18 MiB: no free block holds it; a segment of 18 MiB (at least 10 MiB:
   * rounded up to 2 MiB) */
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 18 * MIB, &z), 0);
  ck_assert_uint_eq(c.reserved, 40 * MIB);
  /* the 2 MiB block freed merges with the 4.5 MiB after it; 6 MiB asked:
   * 0.5 MiB would be left, not more than 1 MiB, so the 6.5 MiB block goes
   * whole and counts whole */
  mp_cuda_caching_release(&c, x);
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 6 * MIB, &w), 0);
  ck_assert_uint_eq(c.blocks[w].size, 13 * MIB / 2);
  ck_assert_uint_eq(c.allocated, 1536 + 12 * MIB + 18 * MIB + 13 * MIB / 2);
  ck_assert_uint_eq(c.reserved, 40 * MIB);
  /* everything back: the segments stay reserved, whole again */
  mp_cuda_caching_release(&c, a);
  mp_cuda_caching_release(&c, b);
  mp_cuda_caching_release(&c, w);
  mp_cuda_caching_release(&c, y);
  mp_cuda_caching_release(&c, z);
  ck_assert_uint_eq(c.allocated, 0);
  ck_assert_uint_eq(c.reserved, 40 * MIB);
  ck_assert_uint_eq(c.peak_reserved, 40 * MIB);
  ck_assert_uint_eq(c.peak_allocated, 1536 + 12 * MIB + 18 * MIB + 13 * MIB / 2);
  ck_assert_uint_eq(c.n_free[0], 2);
  ck_assert_uint_eq(c.n_free[1], 1);
  ck_assert_uint_eq(c.blocks[c.free_set[0][0]].size, 18 * MIB);
  ck_assert_uint_eq(c.blocks[c.free_set[0][1]].size, 20 * MIB);
  ck_assert_uint_eq(c.blocks[c.free_set[1][0]].size, 2 * MIB);
  /* best fit: 18 MiB takes the 18 MiB segment, not the 20 MiB one */
  ck_assert_int_eq(mp_cuda_caching_malloc(&c, 18 * MIB, &y), 0);
  ck_assert_uint_eq(c.blocks[y].seg, 2);
  ck_assert_uint_eq(c.reserved, 40 * MIB);
  mp_cuda_caching_free(&c);
}
END_TEST

/* A long chain of small tensors (1 to 5,000 bytes: rounding adds up to half
 * a block to each), planned by auto (the prefix DP on chains), whose model
 * does not round: its plans are judged by the rounded simulation alone,
 * never reported as a planner bug, and the least feasible budget given is
 * met. */
START_TEST(test_chain_small_tensors) {
  mp_graph_t *g = mp_graph_new();
  mp_limits_t lim;
  mp_error_t err;
  mp_plan_options_t o;
  mp_plan_result_t r;
  uint64_t rng = 88172645463325252ull, b;
  char id[16], prev[16];
  const char *in[1];
  size_t i;
  mp_limits_default(&lim);
  for (i = 0; i < 3000; i++) {
    mp_node_spec_t s;
    mp_node_spec_init(&s);
    snprintf(id, sizeof(id), "n%zu", i);
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    s.id = id;
    s.bytes = 1 + rng % 5000;
    s.time = 1;
    in[0] = prev;
    s.inputs = in;
    s.n_inputs = i > 0;
    ck_assert_int_eq(mp_graph_add_node(g, &s, &lim, &err), 0);
    memcpy(prev, id, sizeof(prev));
  }
  ck_assert_int_eq(mp_graph_finalize(g, &lim, &err), 0);
  mp_plan_options_init(&o);
  cuda(&o.device);
  for (b = 300000; b <= 1200000; b += 300000) {
    o.budget = b;
    ck_assert_msg(mp_plan(g, &o, &r, &err) == 0, "%llu: %s", (unsigned long long)b, err.message);
    if (r.feasible) {
      ck_assert_uint_le(r.sim.peak_bytes, b);
    } else if (r.min_feasible_budget) {
      uint64_t m = r.min_feasible_budget;
      mp_plan_result_free(&r);
      o.budget = m;
      ck_assert_int_eq(mp_plan(g, &o, &r, &err), 0);
      ck_assert_msg(r.feasible, "the least feasible budget %llu is not met", (unsigned long long)m);
    }
    mp_plan_result_free(&r);
  }
  mp_graph_free(g);
}
END_TEST

Suite *suite_allocator(void) {
  Suite *s = suite_create("allocator");
  TCase *tc = tcase_create("rounding");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_alloc_size);
  tcase_add_test(tc, test_caching_sequences);
  tcase_add_test(tc, test_reserved_through_simulator);
  tcase_add_test(tc, test_reserved_on_plans);
  tcase_add_test(tc, test_chain_small_tensors);
  tcase_add_test(tc, test_keep_all_peak);
  tcase_add_test(tc, test_recompute_saved_swap);
  tcase_add_test(tc, test_plans_follow_rounding);
  tcase_add_test(tc, test_daemon_allocator);
  suite_add_tcase(s, tc);
  return s;
}
