/* gen_graphs.c - the deterministic chain and transformer-shaped graphs of
 * gen_graphs.h. Randomness is one xorshift64 stream per graph, so a graph
 * depends on (n, seed) alone. */
#include "gen_graphs.h"

#include <stdio.h>

static uint64_t gen_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Add one activation named `id` reading `in` (n_in of them); 0 or -1. */
static int gen_add(mp_graph_t *g, const char *id, const char *const *in, size_t n_in,
                   uint64_t bytes, double time, mp_bwd_reads_t reads) {
  mp_node_spec_t sp;
  mp_limits_t lim;
  mp_limits_default(&lim);
  mp_node_spec_init(&sp);
  sp.id = id;
  sp.inputs = in;
  sp.n_inputs = n_in;
  sp.bytes = bytes;
  sp.time = time;
  sp.bwd_reads = reads;
  return mp_graph_add_node(g, &sp, &lim, NULL) == 0 ? 0 : -1;
}

static mp_graph_t *gen_finish(mp_graph_t *g, int ok) {
  mp_limits_t lim;
  mp_limits_default(&lim);
  if (g != NULL && ok && mp_graph_finalize(g, &lim, NULL) == 0) return g;
  mp_graph_free(g);
  return NULL;
}

mp_graph_t *mp_gen_chain(size_t n, uint64_t seed) {
  mp_graph_t *g = n ? mp_graph_new() : NULL;
  char id[32], prev[32];
  size_t i;
  int ok = g != NULL;
  for (i = 0; ok && i < n; i++) {
    const char *in[1] = {prev};
    size_t stage = 4 * i / n, layer = (i + seed) % 3;
    snprintf(id, sizeof(id), "a%zu", i);
    ok = gen_add(g, id, in, i ? 1 : 0, (uint64_t)(8u >> stage) << 20, layer == 0 ? 10 : 1,
                 layer == 2 ? MP_BWD_READS_OUTPUT : MP_BWD_READS_INPUTS) == 0;
    snprintf(prev, sizeof(prev), "%s", id);
  }
  return gen_finish(g, ok);
}

const char *mp_gen_chain_shape_name(mp_gen_chain_shape_t shape) {
  static const char *const names[MP_GEN_CHAIN_SHAPES] = {"uniform", "heavy", "stages", "coupled"};
  return (unsigned)shape < MP_GEN_CHAIN_SHAPES ? names[shape] : "?";
}

mp_graph_t *mp_gen_chain_random(size_t n, uint64_t seed, mp_gen_chain_shape_t shape) {
  mp_graph_t *g = n ? mp_graph_new() : NULL;
  char id[32], prev[32];
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
  size_t i;
  int ok = g != NULL;
  for (i = 0; ok && i < n; i++) {
    const char *in[1] = {prev};
    uint64_t r = gen_next(&s), bytes;
    double time, stage = (double)i / (double)n; /* 0 .. 1 along the chain */
    switch (shape) {
      case MP_GEN_CHAIN_HEAVY:
        bytes = (uint64_t)1 << (r % 27);
        time = (double)(1 + (r >> 8) % 100);
        break;
      case MP_GEN_CHAIN_STAGES:
        bytes = (uint64_t)((double)(64u << 20) / (1.0 + 63.0 * stage) *
                           (0.5 + (double)((r >> 8) % 1000) / 1000.0)) + 1;
        time = (1.0 + 15.0 * stage) * (double)(1 + (r >> 24) % 10);
        break;
      case MP_GEN_CHAIN_COUPLED:
        bytes = ((uint64_t)1 << 20) + (r % 63) * ((uint64_t)1 << 20);
        time = (double)(bytes >> 20) * (0.9 + (double)((r >> 32) % 200) / 1000.0);
        break;
      default:
        bytes = (1 + r % 64) << 20;
        time = (double)(1 + (r >> 8) % 100);
        break;
    }
    snprintf(id, sizeof(id), "a%zu", i);
    ok = gen_add(g, id, in, i ? 1 : 0, bytes, time,
                 (r >> 48) % 3 == 0 ? MP_BWD_READS_OUTPUT : MP_BWD_READS_INPUTS) == 0;
    snprintf(prev, sizeof(prev), "%s", id);
  }
  return gen_finish(g, ok);
}

/* One node of a transformer block: its name, its inputs (indices into the
 * block's own nodes, -1 for the block's input), its size in units of the
 * hidden state (1 MiB) and its time. */
typedef struct {
  const char *name;
  int in[2];
  int n_in;
  uint64_t units;
  double time;
  mp_bwd_reads_t reads;
} gen_op_t;

#define GEN_BLOCK 14

static const gen_op_t gen_block[GEN_BLOCK] = {
    {"ln1", {-1, 0}, 1, 1, 1, MP_BWD_READS_INPUTS},
    {"q", {0, 0}, 1, 1, 4, MP_BWD_READS_INPUTS},
    {"k", {0, 0}, 1, 1, 4, MP_BWD_READS_INPUTS},
    {"v", {0, 0}, 1, 1, 4, MP_BWD_READS_INPUTS},
    {"scores", {1, 2}, 2, 8, 2, MP_BWD_READS_INPUTS},
    {"softmax", {4, 0}, 1, 8, 1, MP_BWD_READS_OUTPUT},
    {"attn", {5, 3}, 2, 1, 2, MP_BWD_READS_INPUTS},
    {"proj", {6, 0}, 1, 1, 4, MP_BWD_READS_INPUTS},
    {"add1", {-1, 7}, 2, 1, 1, MP_BWD_READS_NONE},
    {"ln2", {8, 0}, 1, 1, 1, MP_BWD_READS_INPUTS},
    {"fc1", {9, 0}, 1, 4, 16, MP_BWD_READS_INPUTS},
    {"gelu", {10, 0}, 1, 4, 1, MP_BWD_READS_INPUTS},
    {"fc2", {11, 0}, 1, 1, 16, MP_BWD_READS_INPUTS},
    {"add2", {8, 12}, 2, 1, 1, MP_BWD_READS_NONE},
};

mp_graph_t *mp_gen_transformer(size_t n, uint64_t seed) {
  mp_graph_t *g = n ? mp_graph_new() : NULL;
  uint64_t s = seed ? seed : 1;
  char ids[GEN_BLOCK][40], x[40], id[40];
  size_t blocks = n > 0 ? (n - 1) / GEN_BLOCK : 0, b, i;
  int ok = g != NULL, k;
  const uint64_t unit = 1u << 20;
  if (ok) ok = gen_add(g, "embed", NULL, 0, unit, 1, MP_BWD_READS_NONE) == 0;
  snprintf(x, sizeof(x), "embed");
  for (b = 0; ok && b < blocks; b++) {
    for (i = 0; ok && i < GEN_BLOCK; i++) {
      const gen_op_t *op = &gen_block[i];
      const char *in[2];
      for (k = 0; k < op->n_in; k++) in[k] = op->in[k] < 0 ? x : ids[op->in[k]];
      snprintf(ids[i], sizeof(ids[i]), "b%zu.%s", b, op->name);
      ok = gen_add(g, ids[i], in, (size_t)op->n_in, op->units * unit,
                   op->time + (double)(gen_next(&s) % 2), op->reads) == 0;
    }
    snprintf(x, sizeof(x), "%s", ids[GEN_BLOCK - 1]);
  }
  for (i = 1 + blocks * GEN_BLOCK; ok && i < n; i++) {
    const char *in[1] = {x};
    snprintf(id, sizeof(id), "head%zu", i);
    ok = gen_add(g, id, in, 1, unit, 1 + (double)(gen_next(&s) % 4), MP_BWD_READS_INPUTS) == 0;
    snprintf(x, sizeof(x), "%s", id);
  }
  return gen_finish(g, ok);
}
