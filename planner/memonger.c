/* memonger.c - cut candidates, Chen's greedy segmentation and sqrt(n) cuts. */
#include "memonger.h"

#include "strmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Position of every activation in the activation-only topological order,
 * UINT32_MAX for other nodes. Returns the number of activations. */
static size_t mp__act_positions(const mp_graph_t *g, uint32_t *pos) {
  size_t v, n = 0;
  for (v = 0; v < g->n_nodes; v++)
    pos[v] = g->nodes[v].kind == MP_KIND_ACTIVATION ? (uint32_t)n++ : UINT32_MAX;
  return n;
}

int mp_cut_candidates(const mp_graph_t *g, uint32_t **out, size_t *n) {
  size_t nv = g->n_nodes, v, k, na, cnt = 0;
  uint32_t *pos = malloc((nv ? nv : 1) * sizeof(uint32_t));
  uint32_t *res = malloc((nv ? nv : 1) * sizeof(uint32_t));
  int have_stage = 0;
  *out = NULL;
  *n = 0;
  if (!pos || !res) goto nomem;
  na = mp__act_positions(g, pos);
  for (v = 0; v < nv; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION && g->nodes[v].stage) have_stage = 1;

  if (have_stage) {
    /* The last activation of each stage id is a candidate: walking backwards,
     * the first time a stage id is seen is its last node in topological
     * order. Collected backwards, then reversed. */
    mp__strmap_t seen;
    mp__strmap_init(&seen);
    for (v = nv; v-- > 0;) {
      const mp_node_t *nd = &g->nodes[v];
      int rc;
      if (nd->kind != MP_KIND_ACTIVATION || nd->stage == NULL) continue;
      rc = mp__strmap_put(&seen, nd->stage, (uint32_t)v, NULL);
      if (rc < 0) {
        mp__strmap_free(&seen);
        goto nomem;
      }
      if (rc == 0 && pos[v] + 1 != na) res[cnt++] = (uint32_t)v;
    }
    mp__strmap_free(&seen);
    for (k = 0; k < cnt / 2; k++) {
      uint32_t t = res[k];
      res[k] = res[cnt - 1 - k];
      res[cnt - 1 - k] = t;
    }
  } else {
    /* A node at activation position p is an articulation point when no edge
     * (a, b) between activations has pos a < p < pos b. Mark every open
     * interval with a difference array, then scan. */
    int32_t *cover = calloc(na + 1, sizeof(int32_t));
    int32_t run = 0;
    uint32_t *who = malloc((na ? na : 1) * sizeof(uint32_t));
    if (!cover || !who) {
      free(cover);
      free(who);
      goto nomem;
    }
    for (v = 0; v < nv; v++) {
      if (pos[v] == UINT32_MAX) continue;
      who[pos[v]] = (uint32_t)v;
      for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        uint32_t u = g->pred[k];
        if (pos[u] == UINT32_MAX || pos[u] + 1 >= pos[v]) continue;
        cover[pos[u] + 1]++;
        cover[pos[v]]--;
      }
    }
    for (k = 0; k + 1 < na; k++) {
      run += cover[k];
      if (run == 0) res[cnt++] = who[k];
    }
    free(cover);
    free(who);
  }
  free(pos);
  *out = res;
  *n = cnt;
  return 0;
nomem:
  free(pos);
  free(res);
  return MP_ENOMEM;
}

/* Turn a sorted list of cut nodes into a prefix strategy. */
static int mp__strategy_from_cuts(const mp_graph_t *g, const uint8_t *is_cut,
                                  mp_strategy_t **out) {
  mp_strategy_t *s = mp_strategy_new(g);
  uint32_t seg = 0;
  size_t v, last = 0;
  if (s == NULL) return MP_ENOMEM;
  for (v = 0; v < g->n_nodes; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION) last = v;
  for (v = 0; v < g->n_nodes; v++) {
    if (g->nodes[v].kind != MP_KIND_ACTIVATION) continue;
    s->seg[v] = seg;
    if (is_cut[v] && v != last) seg++;
  }
  s->n_segments = seg + 1;
  *out = s;
  return 0;
}

int mp_memonger_greedy(const mp_graph_t *g, const uint32_t *cand, size_t ncand,
                       double threshold, mp_strategy_t **out, uint64_t *x, uint64_t *y,
                       uint64_t *smallest) {
  uint8_t *is_cand = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  uint8_t *is_cut = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  uint64_t acc = 0, xs = 0, ys = 0, small = UINT64_MAX;
  size_t v;
  int rc;
  if (!is_cand || !is_cut) {
    free(is_cand);
    free(is_cut);
    return MP_ENOMEM;
  }
  for (v = 0; v < ncand; v++) is_cand[cand[v]] = 1;
  for (v = 0; v < g->n_nodes; v++) {
    const mp_node_t *nd = &g->nodes[v];
    if (nd->kind != MP_KIND_ACTIVATION) continue;
    acc = acc + nd->bytes < acc ? UINT64_MAX : acc + nd->bytes;
    if (is_cand[v] && (double)acc > threshold) {
      is_cut[v] = 1;
      xs += nd->bytes;
      if (acc > ys) ys = acc;
      if (acc < small) small = acc;
      acc = 0;
    }
  }
  if (acc > 0) {
    if (acc > ys) ys = acc;
    if (acc < small) small = acc;
  }
  rc = mp__strategy_from_cuts(g, is_cut, out);
  free(is_cand);
  free(is_cut);
  if (rc == 0) {
    *x = xs;
    *y = ys;
    *smallest = small == UINT64_MAX ? 0 : small;
  }
  return rc;
}

int mp_sqrt_strategy(const mp_graph_t *g, const uint32_t *cand, size_t ncand,
                     mp_strategy_t **out) {
  uint8_t *is_cut = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  size_t stride = (size_t)ceil(sqrt((double)ncand)), i;
  int rc;
  if (is_cut == NULL) return MP_ENOMEM;
  if (stride == 0) stride = 1;
  for (i = stride - 1; i < ncand; i += stride) is_cut[cand[i]] = 1;
  rc = mp__strategy_from_cuts(g, is_cut, out);
  free(is_cut);
  return rc;
}
