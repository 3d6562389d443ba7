/* graph_hash.c - the canonical content hash of a graph (the cache key).
 *
 * Two graphs that plan the same must hash the same whatever format, key order
 * or node order they came in, so the hash is taken over a canonical encoding
 * rather than over the bytes received:
 *
 *   "memplan.graph.canon/1\n", time_unit, param_bytes, node count, then every
 *   node sorted by id (bytewise): id, op, kind, bytes, workspace_bytes, time,
 *   bwd_time (the resolved value, so an explicit default hashes like an
 *   omitted one), flags, bwd_reads, stage (presence byte + string), and
 *   the ids of its inputs in operand order.
 *
 * flags is recompute (0 or 1) plus 2 when grad_inplace is set, plus 4 when
 * saved_bytes is non-zero, in which case saved_bytes follows the flags as a
 * 64-bit integer. The field was
 * recompute alone before grad_inplace existed; folding the new flag into the
 * same word as a bit that is 0 when unset keeps the hash of every graph that
 * does not set it unchanged (cached plans and stored graphs keep their keys),
 * while a graph that sets it hashes differently and unambiguously. The same
 * reasoning covers saved_bytes: absent (0), it adds nothing to the stream.
 *
 * Strings are a 64-bit little-endian length then the bytes; integers are
 * 64-bit little-endian; times are IEEE-754 bit patterns with -0 folded to 0.
 * The graph's name is deliberately left out: renaming a graph does not change
 * its plans. SHA-256 comes from OpenSSL's libcrypto.
 *
 * A symbolic graph (memplan.graph/2, dims.h) appends, after the nodes,
 * "dims/2\n", the dimension count, each dimension's name, value, min and
 * exported_at (count, values), the param_bytes law, then for every node in
 * the same id order its laws (a presence byte per field, then the law:
 * bound, term count, each term's coefficient and exponents), then the
 * warnings (count, strings). A graph without dimensions appends nothing, so
 * its hash is as it always was; a binding changes the values, hence the
 * hash.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dims.h"
#include "graph.h"

static int mp__put_u64(EVP_MD_CTX *c, uint64_t x) {
  unsigned char b[8];
  int i;
  for (i = 0; i < 8; i++) b[i] = (unsigned char)(x >> (8 * i));
  return EVP_DigestUpdate(c, b, 8);
}

static int mp__put_str(EVP_MD_CTX *c, const char *s) {
  size_t n = strlen(s);
  return mp__put_u64(c, n) && EVP_DigestUpdate(c, s, n);
}

static int mp__put_f64(EVP_MD_CTX *c, double d) {
  uint64_t bits;
  if (d == 0) d = 0; /* folds -0 */
  memcpy(&bits, &d, sizeof(bits));
  return mp__put_u64(c, bits);
}


static int mp__put_law(EVP_MD_CTX *c, const mp_law_t *law) {
  uint32_t k;
  int ok, e;
  if (law == NULL) return mp__put_u64(c, 0);
  ok = mp__put_u64(c, 1) && mp__put_u64(c, (uint64_t)law->bound) && mp__put_u64(c, law->n_terms);
  for (k = 0; ok && k < law->n_terms; k++) {
    ok = law->size ? mp__put_u64(c, (uint64_t)law->terms[k].ci) : mp__put_f64(c, law->terms[k].c);
    for (e = 0; ok && e < MP_DIMS_MAX; e++) ok = mp__put_u64(c, law->terms[k].exp[e]);
  }
  return ok;
}

/* The symbolic section (see the top of this file); `ord` is the id order. */
static int mp__put_dims(EVP_MD_CTX *c, const mp_graph_t *g, const mp_node_t **ord) {
  const mp_graph_dims_t *d = g->sym;
  size_t i, k;
  int ok = EVP_DigestUpdate(c, "dims/2\n", 7) && mp__put_u64(c, d->n_dims);
  for (i = 0; ok && i < d->n_dims; i++) {
    ok = mp__put_str(c, d->dims[i].name) && mp__put_u64(c, (uint64_t)d->dims[i].value) &&
         mp__put_u64(c, (uint64_t)d->dims[i].min) && mp__put_u64(c, d->dims[i].n_exported);
    for (k = 0; ok && k < d->dims[i].n_exported; k++) ok = mp__put_u64(c, (uint64_t)d->dims[i].exported_at[k]);
  }
  ok = ok && mp__put_law(c, d->param_law);
  for (i = 0; ok && i < g->n_nodes; i++) {
    const mp_node_laws_t *nl = mp_graph_node_laws(g, (uint32_t)(ord[i] - g->nodes));
    int f;
    for (f = 0; ok && f < MP_LAW_NFIELDS; f++) ok = mp__put_law(c, nl ? nl->law[f] : NULL);
  }
  ok = ok && mp__put_u64(c, g->n_warnings);
  for (i = 0; ok && i < g->n_warnings; i++) ok = mp__put_str(c, g->warnings[i]);
  return ok;
}

/* Nodes are sorted through pointers, so the comparator needs no context. */
static int mp__cmp_node_id(const void *a, const void *b) {
  return strcmp((*(const mp_node_t *const *)a)->id, (*(const mp_node_t *const *)b)->id);
}

int mp_graph_hash(const mp_graph_t *g, char out_hex[65]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0, i;
  const mp_node_t **ord;
  EVP_MD_CTX *c;
  size_t v;
  int ok;

  ord = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*ord));
  c = EVP_MD_CTX_new();
  if (ord == NULL || c == NULL) {
    free(ord);
    EVP_MD_CTX_free(c);
    return MP_ENOMEM;
  }
  for (v = 0; v < g->n_nodes; v++) ord[v] = &g->nodes[v];
  qsort(ord, g->n_nodes, sizeof(*ord), mp__cmp_node_id);
  ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL);
  ok = ok && EVP_DigestUpdate(c, "memplan.graph.canon/1\n", 22);
  ok = ok && mp__put_str(c, g->time_unit) && mp__put_u64(c, g->param_bytes) &&
       mp__put_u64(c, g->n_nodes);
  for (v = 0; ok && v < g->n_nodes; v++) {
    const mp_node_t *nd = ord[v];
    uint32_t k;
    ok = mp__put_str(c, nd->id) && mp__put_str(c, nd->op) && mp__put_u64(c, nd->kind) &&
         mp__put_u64(c, nd->bytes) && mp__put_u64(c, nd->workspace_bytes) &&
         mp__put_f64(c, nd->time) && mp__put_f64(c, nd->bwd_time) &&
         mp__put_u64(c, (uint64_t)(nd->recompute ? 1 : 0) | (nd->grad_inplace ? 2u : 0u) |
                            (nd->saved_bytes ? 4u : 0u)) &&
         (nd->saved_bytes == 0 || mp__put_u64(c, nd->saved_bytes)) &&
         mp__put_u64(c, nd->bwd_reads) &&
         mp__put_u64(c, nd->stage != NULL) && mp__put_str(c, nd->stage ? nd->stage : "") &&
         mp__put_u64(c, nd->n_inputs);
    for (k = 0; ok && k < nd->n_inputs; k++) ok = mp__put_str(c, g->nodes[nd->inputs[k]].id);
  }
  if (g->sym) ok = ok && mp__put_dims(c, g, ord);
  ok = ok && EVP_DigestFinal_ex(c, md, &mdlen);
  EVP_MD_CTX_free(c);
  free(ord);
  if (!ok) return MP_ENOMEM;
  for (i = 0; i < mdlen && i < 32; i++) {
    out_hex[2 * i] = hex[md[i] >> 4];
    out_hex[2 * i + 1] = hex[md[i] & 15];
  }
  out_hex[64] = '\0';
  return 0;
}
