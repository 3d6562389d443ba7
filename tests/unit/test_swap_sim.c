/* test_swap_sim.c - what the swap simulator's data cases cannot say. The
 * hand-timed event cases (swap_out, swap_in and wait steps on one or two
 * copy queues, stalls, the release-at-boundary rule, pinned host memory, the
 * liveness pass over swap steps, intra-layer reuse and the errors of the new
 * steps) are data: tests/cases/swap_*, run by test_cases.c. Here: the model
 * on a real graph (no swap steps give mp_simulate's report bit for bit; a
 * whole-graph offload against store-all on a fast and a slow link), and the
 * grad_inplace node field (JSON, hash, Kusumoto import).
 */
#include <check.h>
#include <jansson.h>
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
  TCase *tc = tcase_create("model");
  tcase_add_test(tc, test_no_swap_identical);
  tcase_add_test(tc, test_offload_whole_graph);
  tcase_add_test(tc, test_grad_inplace_json_and_hash);
  tcase_add_test(tc, test_kusumoto_sets_grad_inplace);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  return s;
}
