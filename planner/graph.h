/* graph.h - the planning graph: nodes, edges, validation, topological order.
 *
 * A graph is built in two phases. Parsers (proto/) create an empty graph with
 * mp_graph_new(), add nodes one by one with mp_graph_add_node() (inputs are
 * given by id and may name nodes added later), then call mp_graph_finalize(),
 * which resolves the ids, checks every rule (duplicates, unknown inputs,
 * cycles, sizes, limits) and reorders the nodes topologically. After a
 * successful finalize the graph is read-only and every index below refers to
 * that topological order: a node's inputs always have smaller indices.
 *
 * Kinds: `activation` nodes are what the planner schedules. `input` (data) and
 * `param` (weights) nodes must be sources; they are resident for the whole
 * step and count as constant memory together with the graph's param_bytes.
 *
 * Ownership: the graph owns every string and array it holds; the specs passed
 * to mp_graph_add_node() are borrowed and copied. Free with mp_graph_free().
 */
#ifndef MP_GRAPH_H
#define MP_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
  MP_KIND_ACTIVATION = 0,
  MP_KIND_INPUT = 1,
  MP_KIND_PARAM = 2
} mp_kind_t;

/* What a node's backward step reads besides its output gradient. */
typedef enum {
  MP_BWD_READS_INPUTS = 0, /* the values of its activation inputs (default) */
  MP_BWD_READS_OUTPUT = 1, /* its own forward output (ReLU, max pooling) */
  MP_BWD_READS_BOTH = 2,   /* both */
  MP_BWD_READS_NONE = 3    /* neither (add, reshape-like ops) */
} mp_bwd_reads_t;

/* Limits on what a client may send. Every count and length a client controls
 * has one; mp_limits_default() gives the defaults documented in proto/README. */
typedef struct mp_limits_s {
  size_t max_nodes;     /* default 1,000,000 (hard ceiling UINT32_MAX - 1) */
  size_t max_edges;     /* default 10,000,000 input references in total */
  size_t max_id_len;    /* default 256 bytes, for ids, ops and stage names */
  size_t max_name_len;  /* default 1024 bytes, for graph name and time unit */
} mp_limits_t;

void mp_limits_default(mp_limits_t *lim);

/* A node as a parser describes it. All pointers are borrowed for the call. */
typedef struct mp_node_spec_s {
  const char *id;                /* required, unique, 1..max_id_len bytes */
  const char *op;                /* operation name, may be NULL */
  const char *const *inputs;     /* ids of input nodes, in operand order */
  size_t n_inputs;
  uint64_t bytes;                /* size of the output tensor */
  double time;                   /* forward cost in the graph's time unit, >= 0 */
  double bwd_time;               /* backward cost, used when has_bwd_time */
  int has_bwd_time;
  mp_kind_t kind;
  int recompute;                 /* 0: never re-run (dropout, RNG, side effects) */
  const char *stage;             /* memonger's mirror_stage hint, may be NULL */
  mp_bwd_reads_t bwd_reads;
  uint64_t workspace_bytes;      /* scratch memory while the op runs (optional) */
  uint64_t saved_bytes;          /* what the op saves for its backward beyond its
                                  * inputs' and its own output's values (dropout
                                  * masks, max-pool indices); default 0 */
  int grad_inplace;              /* 1: this node's gradient may be written over
                                  * its value once the value is dead (device.h,
                                  * intra-layer reuse); default 0 */
  const char *where;             /* location for errors: "$.nodes[4]" or "line 12" */
} mp_node_spec_t;

/* Initialise a spec with the defaults: activation, recompute, reads inputs. */
void mp_node_spec_init(mp_node_spec_t *spec);

typedef struct mp_node_s {
  char *id;
  char *op;                      /* "" when none was given */
  char *stage;                   /* NULL when none was given */
  uint64_t bytes;
  uint64_t workspace_bytes;
  uint64_t saved_bytes;          /* see mp_node_spec_t; simulator.c says when it is held */
  double time;
  double bwd_time;               /* explicit, or MP_DEFAULT_BWD_FACTOR * time */
  int has_bwd_time;              /* whether bwd_time was given */
  mp_kind_t kind;
  int recompute;
  mp_bwd_reads_t bwd_reads;
  int grad_inplace;              /* see mp_node_spec_t */
  uint32_t *inputs;              /* node indices in operand order (may repeat) */
  uint32_t n_inputs;
} mp_node_t;

/* Backward cost of a node that gives none: twice its forward cost, the usual
 * rule of thumb for convolutions and matrix products. */
#define MP_DEFAULT_BWD_FACTOR 2.0

typedef struct mp_graph_s {
  char *name;                    /* "" when unnamed */
  char *time_unit;               /* "" when unspecified */
  uint64_t param_bytes;          /* constant memory declared at graph level */

  size_t n_nodes;
  mp_node_t *nodes;              /* topological order after finalize */

  /* Deduplicated adjacency in compressed form, valid after finalize:
   * predecessors of v are pred[pred_off[v] .. pred_off[v+1]), ascending. */
  uint32_t *pred_off, *pred;
  uint32_t *succ_off, *succ;
  size_t n_edges;                /* distinct (u, v) pairs */

  size_t n_activations;          /* nodes of kind activation */
  uint64_t activation_bytes;     /* sum of bytes over activations */
  uint64_t saved_bytes;          /* sum of saved_bytes over activations */
  uint64_t const_bytes;          /* param_bytes + bytes of input/param nodes */
  double fwd_time;               /* sum of time over activations */
  double bwd_time;               /* sum of bwd_time over activations */

  char **warnings;               /* non-fatal remarks from import, owned */
  size_t n_warnings;

  /* The dimensions and laws of a symbolic graph (memplan.graph/2, dims.h);
   * NULL for any other. The figures above are the laws' values at the
   * dimensions' current values. Owned. */
  struct mp_graph_dims_s *sym;

  int finalized;
  struct mp__graph_build_s *build; /* private build state, NULL after finalize */
  struct mp__strmap_s *id_index;   /* private id -> index map, after finalize */
} mp_graph_t;

/* Create an empty graph. Returns NULL when out of memory. */
mp_graph_t *mp_graph_new(void);
void mp_graph_free(mp_graph_t *g);

/* Graph-level attributes; strings are copied. 0 or MP_ENOMEM. */
int mp_graph_set_name(mp_graph_t *g, const char *name);
int mp_graph_set_time_unit(mp_graph_t *g, const char *unit);

/* Record a warning (printf-style), e.g. "dropped 12 backward nodes"; cut
 * at 2,047 bytes. */
int mp_graph_warn(mp_graph_t *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Add a node. Checks what can be checked locally (id present and within
 * limits, time finite and non-negative, source-only kinds) and the node-count
 * limit; the rest is checked by mp_graph_finalize(). */
int mp_graph_add_node(mp_graph_t *g, const mp_node_spec_t *spec, const mp_limits_t *lim,
                      mp_error_t *err);

/* Resolve input ids, check duplicates, unknown inputs, cycles (the error names
 * one cycle), size overflow and emptiness (no activation), then reorder nodes
 * topologically (stable: among ready nodes, the one added first goes first).
 * On error the graph is left unusable and must be freed. */
int mp_graph_finalize(mp_graph_t *g, const mp_limits_t *lim, mp_error_t *err);

/* Index of the node with this id, or -1. Works after finalize; O(1). */
long mp_graph_find(const mp_graph_t *g, const char *id);

/* Number of predecessors / successors of v (deduplicated). */
static inline uint32_t mp_graph_npred(const mp_graph_t *g, uint32_t v) {
  return g->pred_off[v + 1] - g->pred_off[v];
}
static inline uint32_t mp_graph_nsucc(const mp_graph_t *g, uint32_t v) {
  return g->succ_off[v + 1] - g->succ_off[v];
}

/* SHA-256 over the canonical encoding of the graph (see graph_hash.c for the
 * encoding; the graph's name is not part of it), as 64 lowercase hex digits
 * plus NUL. 0 or MP_ENOMEM. */
int mp_graph_hash(const mp_graph_t *g, char out_hex[65]);

/* Names of enum values as used in the JSON format. */
const char *mp_kind_name(mp_kind_t k);
const char *mp_bwd_reads_name(mp_bwd_reads_t r);
/* Parse those names; 0 on success, MP_EINVAL if unknown. */
int mp_kind_parse(const char *s, mp_kind_t *out);
int mp_bwd_reads_parse(const char *s, mp_bwd_reads_t *out);

#endif
