/* gen_graphs.h - deterministic generators of large graphs for `make bench`
 * and the tests: a chain of N activations and a transformer-shaped graph of
 * N activations (per block an attention branch and an MLP branch, each
 * closed by a residual add). The same (n, seed) always gives the same graph.
 *
 * Ownership: each returns a finalized graph the caller frees with
 * mp_graph_free(), or NULL when out of memory or n is 0.
 */
#ifndef MP_GEN_GRAPHS_H
#define MP_GEN_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* n activations a0 -> a1 -> ..., shaped like a plain convolutional network:
 * layers of three (convolution, time 10; batch norm, time 1; ReLU, time 1,
 * reading its output in backward) in four stages of n/4 nodes whose outputs
 * are 8, 4, 2 and 1 MiB. `seed` shifts the layer pattern. */
mp_graph_t *mp_gen_chain(size_t n, uint64_t seed);

/* n activations: an embedding, then blocks of 14 (layer norm, q, k, v,
 * scores, softmax, attention, projection, residual add; layer norm, fc1,
 * gelu, fc2, residual add) while they fit, then a chain of head nodes up to
 * n. Sizes are those of a sequence of 512 tokens of width 1024 with 16
 * heads (fp16) and times in proportion to the flops, with a little noise
 * drawn from `seed` on every time. */
mp_graph_t *mp_gen_transformer(size_t n, uint64_t seed);

#endif
