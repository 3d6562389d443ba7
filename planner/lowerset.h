/* lowerset.h - the activation sub-DAG and families of its lower sets.
 *
 * Owns: the compact activation DAG the lower-set solvers work on, the
 * enumeration of all lower sets (the exact DP's states) and the n+1 "node
 * with all its ancestors" sets (the approximate DP's states), as bitsets.
 *
 * A lower set is a set of activation nodes closed under predecessors
 * (docs/model.md). Input and param nodes are not part of it: they
 * are sources, and only edges between two activations count.
 *
 * Every family is sorted by size, so every set comes after all of its proper
 * subsets: a DP that processes the sets in index order has finished a state
 * before any superset reads it. Index 0 is always the empty set and the last
 * index is always V (all activations).
 *
 * Ownership: the caller owns the structs; init / enumerate / approx fill them
 * with malloc'd arrays that the matching *_free releases (safe on a zeroed or
 * partially filled struct). No global state.
 */
#ifndef MP_LOWERSET_H
#define MP_LOWERSET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"

/* The activations of a graph renumbered 0..n-1 in the graph's topological
 * order, with their activation-only adjacency in compressed form. */
typedef struct mp_actdag_s {
  size_t n;                  /* number of activations */
  size_t words;              /* uint64 words in a bitset over them (>= 1) */
  uint32_t *node;            /* compact index -> graph node index */
  uint32_t *pred_off, *pred; /* activation predecessors, ascending */
  uint32_t *succ_off, *succ; /* activation successors, ascending */
} mp_actdag_t;

/* 0, MP_ENOMEM, or MP_ELIMIT when a bitset would not fit in memory. */
int mp_actdag_init(mp_actdag_t *d, const mp_graph_t *g);
void mp_actdag_free(mp_actdag_t *d);

/* A family of lower sets, sorted by size. Exact and window families break
 * ties in the order of mp_lowerset_bits_cmp, so any two sets lie in the
 * same order in both: the exact DP breaks its ties by set index, and so
 * the window family, which holds a subset of the sets, leads it to the
 * exact family's plan whenever it holds that plan's sets
 * (docs/algorithms.md, "The window family"). Approx families break ties
 * by the set's top node. */
typedef struct mp_lowerset_family_s {
  size_t n_sets;
  size_t words;        /* copy of the DAG's words */
  uint64_t *bits;      /* set i is bits[i*words .. (i+1)*words) */
  uint32_t *card;      /* |L_i| */
  int exact;           /* 1: every lower set (enumerate), or a window family
                        * (lowerset_window.h), which the exact DP's walks
                        * treat alike; 0: approx family */
  size_t window;       /* a window family: its width; 0 otherwise */
  /* exact families: the cover relation (Hasse diagram) downwards: the sets
   * L_i \ {v} for every maximal v of L_i are down[down_off[i] .. down_off[i+1]),
   * and down_node[e] is the v that edge e removes (so a walk down the
   * diagram knows which node each step adds to the segment above it).
   * Each set's edges are sorted by down_node ascending, so that a walk
   * removing nodes in decreasing order (every subset reached once, dp.c)
   * scans a prefix. */
  uint32_t *down_off, *down, *down_node;
  /* approx families: by_node[v] is the index of the set "v and its
   * ancestors"; every set but 0 and possibly the last (V, added when the
   * DAG has several sinks) is one of those. */
  uint32_t *by_node;
} mp_lowerset_family_t;

/* The order of two bitsets of `words` words read as binary numbers, the
 * highest node the most significant bit: -1, 0 or 1. */
static inline int mp_lowerset_bits_cmp(const uint64_t *a, const uint64_t *b, size_t words) {
  while (words-- > 0)
    if (a[words] != b[words]) return a[words] < b[words] ? -1 : 1;
  return 0;
}

static inline int mp_lowerset_has(const mp_lowerset_family_t *f, size_t set, uint32_t v) {
  return (int)((f->bits[set * f->words + (v >> 6)] >> (v & 63)) & 1u);
}

/* Limits on an exact enumeration. Zero fields mean "none". */
typedef struct mp_lowerset_limits_s {
  size_t max_sets;            /* stop with MP_ELIMIT once more sets than this exist */
  double deadline_at_ms;      /* absolute, on mp_lowerset_clock_ms()'s clock */
  int (*should_stop)(void *arg);
  void *stop_arg;
} mp_lowerset_limits_t;

/* Milliseconds on a monotonic clock (for deadlines). */
double mp_lowerset_clock_ms(void);

/* Enumerate every lower set of the DAG, by levels of size: the sets of size
 * s+1 are the sets of size s extended by one node whose activation
 * predecessors are all inside, deduplicated with a hash set of bitsets.
 * Returns 0 with the family filled, or MP_ELIMIT (more than max_sets, or the
 * bitsets would exceed the memory cap of MP_LOWERSET_MAX_BYTES), MP_ETIMEDOUT,
 * MP_ECANCELED, MP_ENOMEM; on error the family is freed. *seen (optional)
 * receives the number of sets found, complete or not. */
int mp_lowerset_enumerate(const mp_actdag_t *d, const mp_lowerset_limits_t *lim,
                          mp_lowerset_family_t *out, size_t *seen);

/* The approximate family: {}, "v and its ancestors" for every v (distinct for
 * distinct v, since v is the unique maximal element of its set), and V when
 * it is not one of them, sorted by size. 0, MP_ENOMEM or MP_ELIMIT. */
int mp_lowerset_approx(const mp_actdag_t *d, mp_lowerset_family_t *out);
/* The same, polling should_stop (may be NULL) as the closures are made:
 * MP_ECANCELED when it says stop. */
int mp_lowerset_approx_polled(const mp_actdag_t *d, int (*should_stop)(void *), void *stop_arg,
                              mp_lowerset_family_t *out);

void mp_lowerset_family_free(mp_lowerset_family_t *f);

/* Cap on the bitset storage of one family (bytes). */
#define MP_LOWERSET_MAX_BYTES ((size_t)1 << 30)

/* Count the lower sets of g's activation DAG, stopping after `limit` (0: no
 * limit). Returns 0 and the exact count, or MP_ELIMIT with *count = the
 * number seen when it stopped (more than limit), or MP_ENOMEM. */
int mp_lowerset_count(const mp_graph_t *g, size_t limit, size_t *count);

#endif
