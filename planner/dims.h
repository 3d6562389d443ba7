/* dims.h - graphs with symbolic dimensions: the laws of memplan.graph/2 and
 * binding such a graph at values of its dimensions.
 *
 * A symbolic graph declares up to MP_DIMS_MAX named dimensions (the batch,
 * a sequence length) and may give any node's bytes, workspace_bytes,
 * saved_bytes, time and bwd_time, and the graph's param_bytes, as a law: a
 * polynomial in the dimensions, sum over terms of c * prod(dim^e) with each
 * exponent 1..MP_LAW_EXP_MAX and a term's total degree at most
 * MP_LAW_DEGREE_MAX. Size laws have integer coefficients and must give an
 * integer in [0, 2^63) where evaluated; time laws have real coefficients
 * and must give a finite value >= 0. A law may be marked "bound": it is a
 * conservative upper bound, not an exact fit (the export could not fit the
 * node's measurements).
 *
 * Such a graph is always also a concrete one: every figure of its nodes is
 * the law's value at the dimensions' current values (mp_dim_t.value, which
 * the native format writes as each dimension's "default"). Every solver and
 * the simulator use those figures and never look at the laws.
 * mp_graph_bind() makes a new graph at other values, the same graph with
 * its figures evaluated there; it hashes differently (the values are part
 * of mp_graph_hash), so a plan cached for one binding never answers another.
 *
 * Ownership: a graph owns its mp_graph_dims_t (graph.h's `sym`, NULL for a
 * graph without dimensions); mp_graph_free releases it.
 */
#ifndef MP_DIMS_H
#define MP_DIMS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "graph.h"

#define MP_DIMS_MAX 4            /* dimensions per graph */
#define MP_DIM_NAME_MAX 32       /* bytes of a dimension's name, [a-z][a-z0-9_]* */
#define MP_DIM_VALUE_MAX 2147483648LL /* 2^31: the largest value a dimension takes */
#define MP_DIM_EXPORTED_MAX 32   /* values listed in a dimension's exported_at */
#define MP_LAW_TERMS_MAX 16      /* terms of one law */
#define MP_LAW_EXP_MAX 2         /* exponent of one dimension in a term */
#define MP_LAW_DEGREE_MAX 3      /* total degree of a term */
#define MP_GRAPH_WARNINGS_MAX 100000 /* warnings a graph/2 document may carry */
#define MP_GRAPH_WARNING_LEN_MAX 2000 /* bytes of one such warning */

/* The fields of a node that may follow a law, in the order of the format. */
typedef enum {
  MP_LAW_BYTES = 0,
  MP_LAW_WORKSPACE_BYTES = 1,
  MP_LAW_SAVED_BYTES = 2,
  MP_LAW_TIME = 3,
  MP_LAW_BWD_TIME = 4,
  MP_LAW_NFIELDS = 5
} mp_law_field_t;

/* "bytes", "workspace_bytes", ... as in the format. */
const char *mp_law_field_name(mp_law_field_t f);
/* Whether the field is a size (integer coefficients) rather than a time. */
int mp_law_field_is_size(mp_law_field_t f);

typedef struct mp_law_term_s {
  int64_t ci;                    /* size laws: the coefficient */
  double c;                      /* time laws: the coefficient */
  uint8_t exp[MP_DIMS_MAX];      /* exponent of each of the graph's dimensions */
} mp_law_term_t;

typedef struct mp_law_s {
  int size;                      /* 1: integer coefficients and values */
  int bound;                     /* a conservative bound, not an exact fit */
  uint32_t n_terms;              /* 1 .. MP_LAW_TERMS_MAX */
  mp_law_term_t *terms;
} mp_law_t;

typedef struct mp_dim_s {
  char name[MP_DIM_NAME_MAX + 1];
  int64_t value;                 /* the value the graph's figures are at */
  int64_t min;                   /* least value a binding may give, >= 1 */
  int64_t exported_at[MP_DIM_EXPORTED_MAX]; /* where the export measured */
  size_t n_exported;             /* 1 .. MP_DIM_EXPORTED_MAX */
} mp_dim_t;

/* The laws of one node; NULL where the field is a plain number. */
typedef struct mp_node_laws_s {
  uint32_t node;                 /* index in the graph (topological order) */
  uint32_t doc_index;            /* its position in the document, for errors */
  mp_law_t *law[MP_LAW_NFIELDS];
} mp_node_laws_t;

typedef struct mp_graph_dims_s {
  size_t n_dims;                 /* 0 .. MP_DIMS_MAX */
  mp_dim_t dims[MP_DIMS_MAX];
  mp_law_t *param_law;           /* NULL: param_bytes is a plain number */
  size_t n_laws;
  mp_node_laws_t *laws;          /* ascending node */
} mp_graph_dims_t;

/* A binding: values for some of a graph's dimensions (the others keep the
 * values the graph is at). `base` names where the values came from in
 * errors: "$.dims" for a request, "--dim" for the CLI. */
typedef struct mp_binding_s {
  size_t n;
  char names[MP_DIMS_MAX][MP_DIM_NAME_MAX + 1];
  int64_t values[MP_DIMS_MAX];
  char base[32];
} mp_binding_t;

void mp_binding_init(mp_binding_t *b, const char *base);
/* Add name=value: the name must be a valid dimension name not given yet,
 * the value in [1, MP_DIM_VALUE_MAX], at most MP_DIMS_MAX names. 0, or
 * MP_EINVAL naming "<base>.<name>" (or <base> for the count). */
int mp_binding_set(mp_binding_t *b, const char *name, int64_t value, mp_error_t *err);
/* Parse "name=value" (the CLI's --dim) into b. */
int mp_binding_parse_arg(mp_binding_t *b, const char *arg, mp_error_t *err);

/* Is `s` a valid dimension name? */
int mp_dim_name_valid(const char *s);

/* Evaluate a law at values[0..n_dims) (one per dimension of the graph).
 * Size laws: 0 with *u, or MP_EOVERFLOW / MP_EINVAL (negative) with a
 * message in `why`. Time laws: 0 with *t, or MP_EINVAL (negative or not
 * finite). */
int mp_law_eval(const mp_law_t *law, size_t n_dims, const int64_t *values, uint64_t *u, double *t,
                char *why, size_t why_len);

/* Whether every term of `law` that involves dimension `dim` has a
 * non-negative coefficient: then the law never decreases as that
 * dimension grows (all values are >= 1). */
int mp_law_nondecreasing(const mp_law_t *law, size_t dim);

void mp_law_free(mp_law_t *law);
mp_law_t *mp_law_copy(const mp_law_t *law);

mp_graph_dims_t *mp_graph_dims_new(void);
void mp_graph_dims_free(mp_graph_dims_t *d);
mp_graph_dims_t *mp_graph_dims_copy(const mp_graph_dims_t *d);

/* Index of dimension `name` in d, or -1. */
long mp_graph_dims_find(const mp_graph_dims_t *d, const char *name);

/* The laws of node v, or NULL when none of its fields has one. */
const mp_node_laws_t *mp_graph_node_laws(const mp_graph_t *g, uint32_t v);

/* g at the binding: a new finalized graph with the same nodes, in the same
 * order, and each law's field evaluated at the new values (dimensions the
 * binding does not name keep g's). Errors: a name g lacks, or a value below
 * its dimension's min (MP_EINVAL at "<base>.<name>"); a law that goes
 * negative or past 64 bits (at "$.nodes[i].<field>", the node's place in
 * the document it was read from, with the binding in the message); a total
 * that overflows (finalize). A graph without dimensions accepts only an
 * empty binding. */
int mp_graph_bind(const mp_graph_t *g, const mp_binding_t *b, const mp_limits_t *lim, mp_graph_t **out,
                  mp_error_t *err);

/* The forecast facts of a symbolic graph: the nodes with a bound law (the
 * graph's param_bytes law counts as one when bound), and whether some
 * dimension's value lies outside the range it was exported at. */
void mp_graph_forecast(const mp_graph_t *g, size_t *bounded_nodes, int *extrapolated);

/* For maximizing dimension `dim` (its index): 0 when every size law of g is
 * non-decreasing in it (feasibility at a fixed budget is then monotone:
 * every plan's peak only grows with the dimension), else MP_EINVAL naming
 * the first law that is not. */
int mp_graph_dims_monotone(const mp_graph_t *g, size_t dim, mp_error_t *err);

#endif
