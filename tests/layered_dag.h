/* layered_dag.h - a deterministic random layered DAG, shaped like the
 * random layered graphs of the Checkmate and Moccasin benchmarks: layers
 * of a few nodes each (2 to 5 here), every node reading one or two nodes
 * of the layer before it, and skip edges from earlier layers. Shared by the
 * benchmark (tests/bench/bench_wide.c) and the Check suite
 * (tests/unit/test_wide.c), so that both measure the same graphs.
 *
 * Header only (static functions): the bench and the tests link different
 * objects. The graph is built through mp_graph_add_node like any parser's;
 * the caller frees it with mp_graph_free. Returns NULL when the library
 * refuses it (out of memory).
 */
#ifndef MP_TESTS_LAYERED_DAG_H
#define MP_TESTS_LAYERED_DAG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph.h"

/* xorshift64: the same sequence on every platform for a given seed. */
static inline uint64_t mp_tl_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* n activations in layers of 2 to 5 nodes. Node i of layer l > 0 reads two
 * or three nodes of layer l-1 (all of them when it is smaller), the first
 * being its "own" (i modulo the layer's size, so that every node of layer
 * l-1 is read when layer l is no smaller); with probability skip_pct/100 a
 * skip edge from a node of layers l-2 .. l-6. Sizes 1-10 MB, forward times 1-10
 * units. Every node of the last layer feeds one sink, so that the graph has
 * one output like a loss. */
static inline mp_graph_t *mp_tl_layered_dag(size_t n, uint64_t seed, unsigned skip_pct) {
  mp_graph_t *g = mp_graph_new();
  char (*ids)[24] = calloc(n + 1, sizeof(*ids));
  size_t *layer_lo = calloc(n + 2, sizeof(size_t)); /* first node of each layer */
  size_t nl = 0, v = 0, k;
  uint64_t s = seed * 2654435761u + 88172645463325252ULL;
  const char *in[8];
  if (g == NULL || ids == NULL || layer_lo == NULL) goto fail;
  /* the layers: sizes 2..5, the last one shortened to fit n - 1 (the sink) */
  while (v < n - 1) {
    size_t sz = 2 + (size_t)(mp_tl_next(&s) % 4);
    if (sz > n - 1 - v) sz = n - 1 - v;
    layer_lo[nl++] = v;
    v += sz;
  }
  layer_lo[nl] = n - 1;
  for (v = 0; v < n; v++) snprintf(ids[v], sizeof(ids[v]), "n%zu", v);
  for (k = 0; k <= nl; k++) {
    size_t lo = layer_lo[k], hi = k < nl ? layer_lo[k + 1] : n;
    for (v = lo; v < hi; v++) {
      mp_node_spec_t sp;
      size_t ni = 0, j;
      mp_node_spec_init(&sp);
      sp.id = ids[v];
      if (k == nl) {
        /* the sink reads the whole last layer */
        for (j = layer_lo[nl - 1]; j < layer_lo[nl] && ni < 8; j++) in[ni++] = ids[j];
      } else if (k > 0) {
        size_t plo = layer_lo[k - 1], psz = lo - plo, want = 2 + (size_t)(mp_tl_next(&s) % 2);
        size_t first = plo + (v - lo) % psz, tries;
        in[ni++] = ids[first];
        if (want > psz) want = psz;
        for (tries = 0; ni < want && tries < 16; tries++) {
          size_t u = plo + (size_t)(mp_tl_next(&s) % psz), x, dup = 0;
          for (x = 0; x < ni; x++) dup |= in[x] == ids[u];
          if (!dup) in[ni++] = ids[u];
        }
        if (k >= 2 && mp_tl_next(&s) % 100 < skip_pct) {
          size_t back = 2 + (size_t)(mp_tl_next(&s) % 5), l2 = k >= back ? k - back : 0;
          size_t l2sz = layer_lo[l2 + 1] - layer_lo[l2];
          in[ni++] = ids[layer_lo[l2] + (size_t)(mp_tl_next(&s) % l2sz)];
        }
      }
      sp.inputs = in;
      sp.n_inputs = ni;
      sp.bytes = 1000000 + mp_tl_next(&s) % 9000000;
      sp.time = 1 + (double)(mp_tl_next(&s) % 10);
      if (mp_graph_add_node(g, &sp, NULL, NULL) != 0) goto fail;
    }
  }
  free(ids);
  free(layer_lo);
  if (mp_graph_finalize(g, NULL, NULL) != 0) {
    mp_graph_free(g);
    return NULL;
  }
  return g;
fail:
  free(ids);
  free(layer_lo);
  mp_graph_free(g);
  return NULL;
}

#endif
