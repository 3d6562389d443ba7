/* memonger.h - Chen et al.'s checkpointing heuristics (arXiv 1604.06174) as
 * strategy generators: the greedy segmentation with a size threshold that
 * mxnet-memonger searches over, and plain sqrt(n) checkpointing.
 *
 * Both cut the topological order into prefixes. A prefix of a topological
 * order is always a lower set, so every cut list gives a valid strategy
 * (strategy.h); the choice of *where* to cut decides its quality. Cuts are
 * made only at candidate nodes:
 *   - when any node has a `stage` hint: the last node of each stage (nodes
 *     that share a stage id are cut together, never split);
 *   - otherwise: the articulation points of the activation graph, i.e. the
 *     nodes that no edge jumps over in topological order, so that every path
 *     from the earlier nodes to the later ones runs through them and the
 *     checkpoint is that single tensor.
 * The search over thresholds and the choice among plans live with the
 * candidates (cand_recompute.c), which simulate every strategy.
 */
#ifndef MP_MEMONGER_H
#define MP_MEMONGER_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "strategy.h"

/* Candidate cut nodes in topological order (never the last activation).
 * *out is malloc'd (caller frees), *n may be 0. 0 or MP_ENOMEM. */
int mp_cut_candidates(const mp_graph_t *g, uint32_t **out, size_t *n);

/* Greedy segmentation with threshold `threshold` (bytes): walk activations
 * in topological order accumulating the current segment's bytes; at a
 * candidate, if the accumulated size exceeds the threshold, cut after it.
 * Returns the strategy (caller frees), the checkpoint bytes x (sum over cut
 * nodes) and the largest segment size y, as memonger's search needs them,
 * and the smallest non-empty segment size. 0 or MP_ENOMEM. */
int mp_memonger_greedy(const mp_graph_t *g, const uint32_t *cand, size_t ncand,
                       double threshold, mp_strategy_t **out, uint64_t *x, uint64_t *y,
                       uint64_t *smallest);

/* sqrt(n) checkpointing: cut at every ceil(sqrt(ncand))-th candidate. */
int mp_sqrt_strategy(const mp_graph_t *g, const uint32_t *cand, size_t ncand,
                     mp_strategy_t **out);

#endif
