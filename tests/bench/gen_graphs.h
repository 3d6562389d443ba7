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

/* The shapes of mp_gen_chain_random's sizes and times. */
typedef enum {
  MP_GEN_CHAIN_UNIFORM = 0, /* sizes 1..64 MiB and times 1..100, independent */
  MP_GEN_CHAIN_HEAVY = 1,   /* sizes 2^(0..26) bytes (a few huge, most small),
                             * times 1..100 */
  MP_GEN_CHAIN_STAGES = 2,  /* sizes shrinking by stages (64 MiB down to 1 MiB
                             * over the chain, +-50%), times growing with the
                             * stage: a CNN's profile, noisy */
  MP_GEN_CHAIN_COUPLED = 3, /* time proportional to size (+-10%), like
                             * memory-bound layers */
  MP_GEN_CHAIN_SHAPES = 4
} mp_gen_chain_shape_t;

/* n activations a0 -> a1 -> ... with sizes and times drawn from `seed` in
 * the given shape; backward reads inputs or the output at random. */
mp_graph_t *mp_gen_chain_random(size_t n, uint64_t seed, mp_gen_chain_shape_t shape);
const char *mp_gen_chain_shape_name(mp_gen_chain_shape_t shape);

/* n activations: an embedding, then blocks of 14 (layer norm, q, k, v,
 * scores, softmax, attention, projection, residual add; layer norm, fc1,
 * gelu, fc2, residual add) while they fit, then a chain of head nodes up to
 * n. Sizes are those of a sequence of 512 tokens of width 1024 with 16
 * heads (fp16) and times in proportion to the flops, with a little noise
 * drawn from `seed` on every time. */
mp_graph_t *mp_gen_transformer(size_t n, uint64_t seed);

#endif
