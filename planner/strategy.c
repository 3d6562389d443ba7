/* strategy.c - allocation and validation of segment strategies. */
#include "strategy.h"

#include <stdlib.h>
#include <string.h>

const char *mp_accounting_name(mp_accounting_t a) {
  return a == MP_ACCOUNTING_REFERENCE ? "reference" : "default";
}

int mp_accounting_parse(const char *s, mp_accounting_t *out) {
  if (strcmp(s, "default") == 0 || strcmp(s, "memplan") == 0) {
    *out = MP_ACCOUNTING_DEFAULT;
    return 0;
  }
  if (strcmp(s, "reference") == 0) {
    *out = MP_ACCOUNTING_REFERENCE;
    return 0;
  }
  return MP_EINVAL;
}

mp_strategy_t *mp_strategy_new(const mp_graph_t *g) {
  mp_strategy_t *s = calloc(1, sizeof(*s));
  size_t v;
  if (s == NULL) return NULL;
  s->n_nodes = g->n_nodes;
  s->seg = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  if (s->seg == NULL) {
    free(s);
    return NULL;
  }
  for (v = 0; v < g->n_nodes; v++)
    s->seg[v] = g->nodes[v].kind == MP_KIND_ACTIVATION ? 0 : MP_SEG_NONE;
  s->n_segments = 1;
  return s;
}

void mp_strategy_free(mp_strategy_t *s) {
  if (s == NULL) return;
  free(s->seg);
  free(s);
}

mp_strategy_t *mp_strategy_copy(const mp_strategy_t *s) {
  mp_strategy_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  *c = *s;
  c->seg = malloc((s->n_nodes ? s->n_nodes : 1) * sizeof(uint32_t));
  if (c->seg == NULL) {
    free(c);
    return NULL;
  }
  if (s->n_nodes) memcpy(c->seg, s->seg, s->n_nodes * sizeof(uint32_t));
  return c;
}

int mp_strategy_equal(const mp_strategy_t *a, const mp_strategy_t *b) {
  return a->n_nodes == b->n_nodes && a->n_segments == b->n_segments &&
         (a->n_nodes == 0 || memcmp(a->seg, b->seg, a->n_nodes * sizeof(uint32_t)) == 0);
}

int mp_strategy_check(const mp_graph_t *g, const mp_strategy_t *s, mp_error_t *err) {
  size_t v, k;
  uint8_t *used;
  if (s->n_nodes != g->n_nodes)
    return mp_error_set(err, MP_EINVAL, "", "strategy is for a graph of %zu nodes, not %zu",
                        s->n_nodes, g->n_nodes);
  used = calloc(s->n_segments ? s->n_segments : 1, 1);
  if (used == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  for (v = 0; v < g->n_nodes; v++) {
    int act = g->nodes[v].kind == MP_KIND_ACTIVATION;
    if (!act) {
      if (s->seg[v] != MP_SEG_NONE) goto bad_none;
      continue;
    }
    if (s->seg[v] >= s->n_segments) {
      free(used);
      return mp_error_set(err, MP_EINVAL, "", "node '%s' is in segment %u of %u",
                          g->nodes[v].id, s->seg[v], s->n_segments);
    }
    used[s->seg[v]] = 1;
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
      uint32_t u = g->pred[k];
      if (g->nodes[u].kind == MP_KIND_ACTIVATION && s->seg[u] > s->seg[v]) {
        free(used);
        return mp_error_set(err, MP_EINVAL, "",
                            "node '%s' (segment %u) reads '%s' from a later segment %u",
                            g->nodes[v].id, s->seg[v], g->nodes[u].id, s->seg[u]);
      }
    }
  }
  for (k = 0; k < s->n_segments; k++)
    if (!used[k]) {
      free(used);
      return mp_error_set(err, MP_EINVAL, "", "segment %zu is empty", k);
    }
  free(used);
  return 0;
bad_none:
  free(used);
  return mp_error_set(err, MP_EINVAL, "", "non-activation node '%s' must have no segment",
                      g->nodes[v].id);
}
