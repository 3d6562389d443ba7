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
