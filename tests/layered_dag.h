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

#include <math.h>
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

/* g finalized when ok, else freed; NULL when either fails. */
static inline mp_graph_t *mp_tl_finish(mp_graph_t *g, int ok) {
  if (g != NULL && ok && mp_graph_finalize(g, NULL, NULL) == 0) return g;
  mp_graph_free(g);
  return NULL;
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
  int ok = 0;
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
  ok = 1;
fail:
  free(ids);
  free(layer_lo);
  return mp_tl_finish(g, ok);
}

/* A uniform double in [0, 1). */
static inline double mp_tl_unit(uint64_t *s) { return (double)(mp_tl_next(s) >> 11) * 0x1.0p-53; }

/* n nodes shaped like Moccasin's random layered graphs (its data folder's
 * random_layered_n<n>_w<w>_nlv<nlv>_ed<ed>_scd<scd> files, made after
 * Gagrani et al.'s Appendix A; this is written from what those files show):
 * a source (an input, as memplan reads theirs), then layers whose widths
 * vary around n^w by up to +-nlv of it; each pair of nodes of neighbouring
 * layers linked with probability ed, every node keeping at least one input
 * in the layer before and one reader in the layer after; three tries per
 * node, each with probability scd, of a skip edge from a node 2 to about 20
 * layers back; and a sink reading every node nothing else reads. Output
 * sizes log-normal around 1,500 bytes (multiples of 10, 10 to about
 * 10,000), times 0..999. Moccasin's files use w 0.27-0.43, nlv 0.75, ed 0.2
 * and scd 0.14. */
static inline mp_graph_t *mp_tl_moccasin_dag(size_t n, uint64_t seed, double w, double nlv,
                                             double ed, double scd) {
  mp_graph_t *g = mp_graph_new();
  char (*ids)[24] = calloc(n, sizeof(*ids));
  size_t *layer_lo = calloc(n + 2, sizeof(size_t));
  unsigned char *adj = calloc(n * n, 1); /* adj[u * n + v]: u -> v */
  const char **in = calloc(n, sizeof(*in));
  size_t nl = 0, v, u, k;
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 0x853c49e6748fea9bULL;
  double mean;
  int ok = 0;
  if (g == NULL || ids == NULL || layer_lo == NULL || adj == NULL || in == NULL || n < 3)
    goto fail;
  mean = pow((double)n, w);
  layer_lo[nl++] = 0; /* the source */
  v = 1;
  while (v < n - 1) {
    double f = mean * (1.0 + nlv * (2.0 * mp_tl_unit(&s) - 1.0));
    size_t wd = f < 1.5 ? 1 : (size_t)(f + 0.5);
    if (wd > n - 1 - v) wd = n - 1 - v;
    layer_lo[nl++] = v;
    v += wd;
  }
  layer_lo[nl] = n - 1; /* the sink's layer */
  layer_lo[nl + 1] = n;
  for (k = 1; k < nl; k++) {
    size_t plo = layer_lo[k - 1], phi = layer_lo[k], lo = layer_lo[k], hi = layer_lo[k + 1];
    for (v = lo; v < hi; v++) {
      int any = 0;
      for (u = plo; u < phi; u++)
        if (mp_tl_unit(&s) < ed) adj[u * n + v] = 1, any = 1;
      if (!any) adj[(plo + (size_t)(mp_tl_next(&s) % (phi - plo))) * n + v] = 1;
    }
    for (u = plo; u < phi; u++) {
      int any = 0;
      for (v = lo; v < hi; v++) any |= adj[u * n + v];
      if (!any) adj[u * n + lo + (size_t)(mp_tl_next(&s) % (hi - lo))] = 1;
    }
    for (v = lo; v < hi && k >= 2; v++) {
      int t;
      for (t = 0; t < 3; t++) {
        size_t span = 2;
        if (mp_tl_unit(&s) >= scd) continue;
        while (span < k && span < 20 && mp_tl_unit(&s) < 0.75) span++;
        {
          size_t l2 = k - span, a = layer_lo[l2], b = layer_lo[l2 + 1];
          adj[(a + (size_t)(mp_tl_next(&s) % (b - a))) * n + v] = 1;
        }
      }
    }
  }
  for (u = 0; u < n - 1; u++) { /* the sink reads every node nothing reads */
    int any = 0;
    for (v = u + 1; v < n - 1 && !any; v++) any = adj[u * n + v];
    if (!any) adj[u * n + n - 1] = 1;
  }
  for (v = 0; v < n; v++) snprintf(ids[v], sizeof(ids[v]), "m%zu", v);
  for (v = 0; v < n; v++) {
    mp_node_spec_t sp;
    size_t ni = 0;
    double u1 = mp_tl_unit(&s), u2 = mp_tl_unit(&s), z, sz;
    mp_node_spec_init(&sp);
    sp.id = ids[v];
    for (u = 0; u < v; u++)
      if (adj[u * n + v]) in[ni++] = ids[u];
    sp.inputs = in;
    sp.n_inputs = ni;
    if (v == 0) sp.kind = MP_KIND_INPUT;
    /* log-normal through Box-Muller: 10 * exp(5.0 + 0.6 z) bytes */
    z = sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
    sz = exp(5.0 + 0.6 * z);
    sp.bytes = 10 * (uint64_t)(sz < 1 ? 1 : sz);
    sp.time = v == 0 ? 0 : (double)(mp_tl_next(&s) % 1000);
    if (mp_graph_add_node(g, &sp, NULL, NULL) != 0) goto fail;
  }
  ok = 1;
fail:
  free(ids);
  free(layer_lo);
  free(adj);
  free(in);
  return mp_tl_finish(g, ok);
}

#endif
