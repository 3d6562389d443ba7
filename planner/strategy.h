/* strategy.h - a recomputation strategy as the lower-set solvers produce it.
 *
 * A strategy is a chain of lower sets {} = L0 < L1 < ... < Lk = V over the
 * activation nodes (docs/model.md). It is stored as the segment
 * index of every node: seg[v] = i means v is in Vi = Li \ L(i-1). A valid
 * strategy has seg[u] <= seg[v] for every edge u -> v between activations.
 * Non-activation nodes (inputs, params) carry MP_SEG_NONE.
 *
 * Ownership: the strategy owns `seg`; free with mp_strategy_free().
 */
#ifndef MP_STRATEGY_H
#define MP_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define MP_SEG_NONE UINT32_MAX

/* How plans are charged (docs/model.md, "The DP's memory model"). */
typedef enum {
  /* memplan's own: budgets are total device memory (constant memory
   * included), only what is really recomputed is charged, bwd_reads known. */
  MP_ACCOUNTING_DEFAULT = 0,
  /* the reference solver's: budgets on activations only, the whole last
   * segment charged as recomputation, bwd_reads ignored. */
  MP_ACCOUNTING_REFERENCE = 1
} mp_accounting_t;

const char *mp_accounting_name(mp_accounting_t a);
int mp_accounting_parse(const char *s, mp_accounting_t *out); /* 0 or MP_EINVAL */

typedef struct mp_strategy_s {
  size_t n_nodes;     /* == graph->n_nodes */
  uint32_t n_segments;
  uint32_t *seg;      /* per node, topological index order */
} mp_strategy_t;

/* Allocate a strategy for g with every activation in segment 0 (one segment:
 * keep everything). Returns NULL when out of memory. */
mp_strategy_t *mp_strategy_new(const mp_graph_t *g);
void mp_strategy_free(mp_strategy_t *s);
/* A copy of s (the caller owns it), or NULL when out of memory. */
mp_strategy_t *mp_strategy_copy(const mp_strategy_t *s);
/* 1 when a and b put every node in the same segment, else 0. */
int mp_strategy_equal(const mp_strategy_t *a, const mp_strategy_t *b);

/* Check seg[] against the graph: monotone along edges, segments 0..k-1 all
 * non-empty, MP_SEG_NONE exactly on non-activations. 0 or MP_EINVAL. */
int mp_strategy_check(const mp_graph_t *g, const mp_strategy_t *s, mp_error_t *err);

#endif
