/* cand_orders.c - the window family in other topological orders
 * (mp__offer_orders, plan_internal.h): after the exact DP fell back to a
 * window family that holds part of the lattice, the same DP and its slack
 * walk and least plans run again on copies of the graph renumbered in other
 * topological orders, and their plans are weighed on the graph itself.
 *
 * Why: the window family is the lower sets whose ragged edge spans at most
 * w consecutive positions of one topological order, so which sets it holds
 * depends on that order. The graph's own order (its file's) rarely has its
 * narrow cuts as prefixes; on wide graphs w is small (a few positions on
 * 500 nodes), and the family is then little more than the prefixes of that
 * order. Two more orders:
 *   - the greedy order: among the ready nodes, the one that leaves the least
 *     activation memory live across the prefix (its bytes when something
 *     reads it, less the bytes of the inputs it is the last reader of). Its
 *     prefixes are narrow cuts, which low budgets need;
 *   - the order of the fallback's own plan at its least model budget:
 *     segment by segment, the greedy order within each, so that every
 *     boundary of that plan is a prefix and the window holds the sets near
 *     them.
 * Both are fixed by the graph alone (the least plan does not depend on the
 * budget), so every budget is offered plans of the same families and a
 * larger budget still never costs more.
 *
 * For the window solver asked by name, two more steps for the budget asked
 * (docs/algorithms.md, "The window solver by name"): re-centring, the
 * order of the best plan so far (segment by segment, so that its
 * boundaries are prefixes and the window holds the lower sets near them),
 * at most MP__ORD_RECENTRE_MAX times while it improves; then the
 * recomputation search (mp__cand_lower, cand_refine.c) from the best plan
 * within the budget, which reaches plans no window of these orders holds.
 * Both depend on the budget, so a larger budget can get a costlier plan;
 * the exact solver's fallback, whose plans must not, leaves them out.
 *
 * The copies' candidates are plans of the copy; the pick translates each,
 * its segments and its schedule step for step, into the graph's own
 * indices and simulates it there (mp__cand_pick, cand.c), so every figure
 * is the graph's own. The schedule is the copy's, not one rebuilt from the
 * segments: a plan's peak depends on the order of its steps inside each
 * segment, and the copy's plans were searched (cand_refine.c) in its order.
 */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- The greedy order -------------------------------------------------- */

typedef struct {
  int64_t delta;
  uint32_t v, ver;
} mp__ord_item_t;

static int mp__ord_less(const mp__ord_item_t *a, const mp__ord_item_t *b) {
  return a->delta != b->delta ? a->delta < b->delta : a->v < b->v;
}

static void mp__ord_push(mp__ord_item_t *h, size_t *n, mp__ord_item_t x) {
  size_t i = (*n)++;
  while (i > 0 && mp__ord_less(&x, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = x;
}

static mp__ord_item_t mp__ord_pop(mp__ord_item_t *h, size_t *n) {
  mp__ord_item_t top = h[0], x = h[--(*n)];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && mp__ord_less(&h[c + 1], &h[c])) c++;
    if (!mp__ord_less(&h[c], &x)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n > 0) h[i] = x;
  return top;
}

static uint64_t mp__ord_bytes(const mp_graph_t *g, uint32_t v) {
  return g->nodes[v].kind == MP_KIND_ACTIVATION ? g->nodes[v].bytes : 0;
}

/* What taking ready node v adds to the memory live across the prefix. */
static int64_t mp__ord_delta(const mp_graph_t *g, const uint32_t *rem, uint32_t v) {
  int64_t d = g->succ_off[v + 1] > g->succ_off[v] ? (int64_t)mp__ord_bytes(g, v) : 0;
  uint32_t k;
  for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
    if (rem[g->pred[k]] == 1) d -= (int64_t)mp__ord_bytes(g, g->pred[k]);
  return d;
}

/* rank[v]: v's position in the greedy order. A lazy heap: a node's entry
 * is pushed again (with a new version) when its delta changes. */
static int mp__greedy_rank(const mp_graph_t *g, uint32_t *rank) {
  size_t n = g->n_nodes, hn = 0, k = 0, cap = n + g->n_edges + 1;
  uint32_t *left = malloc((n ? n : 1) * sizeof(uint32_t)), *rem = malloc((n ? n : 1) * sizeof(uint32_t));
  uint32_t *ver = calloc(n ? n : 1, sizeof(uint32_t));
  mp__ord_item_t *h = malloc(cap * sizeof(mp__ord_item_t));
  uint32_t v, e, e2;
  if (left == NULL || rem == NULL || ver == NULL || h == NULL) goto nomem;
  for (v = 0; v < n; v++) {
    left[v] = g->pred_off[v + 1] - g->pred_off[v];
    rem[v] = g->succ_off[v + 1] - g->succ_off[v];
  }
  for (v = 0; v < n; v++)
    if (left[v] == 0) mp__ord_push(h, &hn, (mp__ord_item_t){mp__ord_delta(g, rem, v), v, 0});
  while (hn > 0) {
    mp__ord_item_t x = mp__ord_pop(h, &hn);
    if (x.ver != ver[x.v]) continue; /* stale */
    v = x.v;
    ver[v] = UINT32_MAX; /* taken */
    rank[v] = (uint32_t)k++;
    for (e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
      uint32_t u = g->pred[e];
      if (--rem[u] != 1) continue;
      /* u's last reader not taken yet now frees u: its delta falls */
      for (e2 = g->succ_off[u]; e2 < g->succ_off[u + 1]; e2++) {
        uint32_t w = g->succ[e2];
        if (ver[w] == UINT32_MAX || left[w] != 0) continue;
        if (hn >= cap) goto nomem; /* never: one push per edge at most */
        mp__ord_push(h, &hn, (mp__ord_item_t){mp__ord_delta(g, rem, w), w, ++ver[w]});
      }
    }
    for (e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
      uint32_t w = g->succ[e];
      if (--left[w] == 0) {
        if (hn >= cap) goto nomem;
        mp__ord_push(h, &hn, (mp__ord_item_t){mp__ord_delta(g, rem, w), w, ++ver[w]});
      }
    }
  }
  free(left), free(rem), free(ver), free(h);
  return k == n ? 0 : MP_EINVAL;
nomem:
  free(left), free(rem), free(ver), free(h);
  return MP_ENOMEM;
}

/* ---- The renumbered copy ----------------------------------------------- */

typedef struct {
  const uint32_t *seg;  /* NULL: the greedy order alone */
  const uint32_t *rank;
} mp__ord_key_t;

typedef struct {
  uint64_t key; /* segment, then greedy rank */
  uint32_t v;
} mp__ord_pos_t;

static int mp__ord_cmp(const void *a, const void *b) {
  const mp__ord_pos_t *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* g's nodes added in the order of `key` (by segment, then greedy rank: a
 * topological order, since segments never decrease along an edge and the
 * greedy order is topological), into *out; map[v] is v's index there. */
static int mp__ord_copy(const mp_graph_t *g, const mp__ord_key_t *key, mp_graph_t **out,
                        uint32_t *map) {
  size_t n = g->n_nodes, k, i, most = 1;
  mp__ord_pos_t *ord = malloc((n ? n : 1) * sizeof(*ord));
  const char **in = NULL;
  mp_graph_t *h = mp_graph_new();
  int rc = MP_ENOMEM;
  *out = NULL;
  for (k = 0; k < n; k++)
    if (g->nodes[k].n_inputs > most) most = g->nodes[k].n_inputs;
  in = malloc(most * sizeof(*in));
  if (ord == NULL || in == NULL || h == NULL) goto fail;
  for (k = 0; k < n; k++) {
    uint64_t sg = key->seg == NULL || key->seg[k] == MP_SEG_NONE ? 0 : key->seg[k];
    ord[k].key = sg << 32 | key->rank[k];
    ord[k].v = (uint32_t)k;
  }
  qsort(ord, n, sizeof(*ord), mp__ord_cmp);
  h->param_bytes = g->param_bytes;
  if (mp_graph_set_name(h, g->name) != 0 || mp_graph_set_time_unit(h, g->time_unit) != 0) goto fail;
  for (k = 0; k < n; k++) {
    const mp_node_t *x = &g->nodes[ord[k].v];
    mp_node_spec_t sp;
    mp_node_spec_init(&sp);
    for (i = 0; i < x->n_inputs; i++) in[i] = g->nodes[x->inputs[i]].id;
    sp.id = x->id;
    sp.op = x->op;
    sp.inputs = in;
    sp.n_inputs = x->n_inputs;
    sp.bytes = x->bytes;
    sp.time = x->time;
    sp.bwd_time = x->bwd_time;
    sp.has_bwd_time = 1; /* the graph's own, given or derived */
    sp.kind = x->kind;
    sp.recompute = x->recompute;
    sp.stage = x->stage;
    sp.bwd_reads = x->bwd_reads;
    sp.workspace_bytes = x->workspace_bytes;
    sp.saved_bytes = x->saved_bytes;
    sp.grad_inplace = x->grad_inplace;
    if ((rc = mp_graph_add_node(h, &sp, NULL, NULL)) != 0) goto fail;
  }
  if ((rc = mp_graph_finalize(h, NULL, NULL)) != 0) goto fail;
  for (k = 0; k < n; k++) {
    long j = mp_graph_find(h, g->nodes[k].id);
    if (j < 0) {
      rc = MP_EINVAL;
      goto fail;
    }
    map[k] = (uint32_t)j;
  }
  free(ord);
  free(in);
  *out = h;
  return 0;
fail:
  free(ord);
  free(in);
  mp_graph_free(h);
  return rc;
}

int mp__cand_home(const mp__cand_pick_t *p, mp__cand_t *c, mp__cand_t *out, mp_error_t *err) {
  const mp_graph_t *g = p->home;
  size_t v, k;
  int rc;
  memset(out, 0, sizeof(*out));
  if (c->schedule == NULL) return 0;
  if (c->strategy != NULL) {
    if ((out->strategy = mp_strategy_new(g)) == NULL) goto nomem;
    out->strategy->n_segments = c->strategy->n_segments;
    for (v = 0; v < g->n_nodes; v++) out->strategy->seg[v] = c->strategy->seg[p->home_map[v]];
  }
  /* the copy's own schedule, step for step: its peak depends on the order
   * of the steps, which the copy's plans were searched for */
  if ((out->schedule = mp_schedule_new()) == NULL) goto nomem;
  out->schedule->auto_free = c->schedule->auto_free;
  for (k = 0; k < c->schedule->n_steps; k++)
    if (mp_schedule_push(out->schedule, (mp_step_op_t)c->schedule->steps[k].op,
                         p->home_inv[c->schedule->steps[k].node]) != 0)
      goto nomem;
  if ((rc = mp__simulate_planned(g, &p->o->device, out->schedule, "renumbered", &out->sim, err)) != 0)
    mp__cand_free(out);
  return rc;
nomem:
  mp__cand_free(out);
  return mp_error_set(err, MP_ENOMEM, "", "out of memory");
}

/* ---- The offers -------------------------------------------------------- */

/* The window DP's candidates on g renumbered by `key`, weighed in p. */
static int mp__offer_order(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                           const mp__ord_key_t *key, mp__cand_pick_t *p, mp_error_t *err) {
  uint32_t *map = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  uint32_t *inv = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  mp_graph_t *h = NULL;
  size_t v;
  mp_plan_options_t ho = *o;
  mp_plan_result_t hr;
  int rc;
  if (map == NULL || inv == NULL) {
    free(map);
    free(inv);
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  }
  if ((rc = mp__ord_copy(g, key, &h, map)) != 0) {
    free(map);
    free(inv);
    return mp_error_set(err, rc, "", "cannot renumber the graph (%s)", mp_err_name(rc));
  }
  for (v = 0; v < g->n_nodes; v++) inv[map[v]] = (uint32_t)v;
  ho.solver = MP_SOLVER_WINDOW;
  ho.reuse = mp__reuse_new(h);
  memset(&hr, 0, sizeof(hr));
  p->home = g;
  p->home_map = map;
  p->home_inv = inv;
  p->home_rc = 0;
  rc = mp__offer_dp_family(h, &ho, t0, MP__FAMILY_EXACT, p, &hr, NULL, err);
  if (rc == 0 && p->home_rc != 0) rc = mp_error_set(err, p->home_rc, "", "%s", p->home_err.message);
  p->home = NULL;
  p->home_map = NULL;
  p->home_inv = NULL;
  mp__reuse_free(ho.reuse);
  mp_graph_free(h);
  free(map);
  free(inv);
  return rc;
}

/* Re-centrings at most (window by name): each a window DP with its slack
 * walk and least plans in one more order. */
#define MP__ORD_RECENTRE_MAX 4

int mp__offer_orders(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                     mp__cand_pick_t *p, mp_plan_result_t *r, mp_error_t *err) {
  uint32_t *rank = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  mp_schedule_t *before = p->best.schedule;
  mp__ord_key_t key;
  size_t i;
  int rc;
  if (rank == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  if ((rc = mp__greedy_rank(g, rank)) != 0) {
    free(rank);
    return mp_error_set(err, rc, "", "cannot order the graph (%s)", mp_err_name(rc));
  }
  /* the greedy order */
  key.rank = rank;
  key.seg = NULL;
  if ((rc = mp__offer_order(g, o, t0, &key, p, err)) != 0) goto out;
  /* the order of the fallback's plan at its least model budget */
  {
    mp__cand_t a;
    mp_dp_result_t figs;
    if ((rc = mp__cand_dp_least(g, o, t0, MP__FAMILY_EXACT, 0, &a, &figs, err)) != 0) goto out;
    mp_dp_result_free(&figs);
    if (a.strategy != NULL) {
      key.seg = a.strategy->seg;
      rc = mp__offer_order(g, o, t0, &key, p, err);
    }
    mp__cand_free(&a);
    if (rc != 0) goto out;
  }
  /* Re-centring: the order of the best plan so far (the one that fits with
   * the least recomputation, else the one with the least peak), whose
   * segment boundaries are then prefixes, so that the window holds every
   * lower set near them; again while that improves the best plan. */
  if (o->solver != MP_SOLVER_WINDOW) goto done;
  for (i = 0; i < MP__ORD_RECENTRE_MAX && p->best.strategy != NULL; i++) {
    mp_schedule_t *was = p->best.schedule;
    mp_strategy_t *st = mp_strategy_copy(p->best.strategy);
    if (st == NULL) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto out;
    }
    key.seg = st->seg;
    rc = mp__offer_order(g, o, t0, &key, p, err);
    mp_strategy_free(st);
    if (rc != 0) goto out;
    if (p->best.schedule == was) break;
  }
  /* The recomputation search (mp__cand_lower) within the budget from the
   * best plan: moves of single nodes and their closures between segments,
   * which reach plans whose lower sets no window of these orders holds. */
  if (p->best.strategy != NULL && mp__cand_fits(o, &p->best.sim) && p->best.sim.time_recompute > 0) {
    mp__refine_start_t rs;
    mp__cand_t low;
    rs.strategy = p->best.strategy;
    rs.peak = p->best.sim.peak_bytes;
    rs.recompute = p->best.sim.time_recompute;
    if (p->best.schedule != before) {
      r->source = "window-dp-reordered";
      r->has_model = 0;
    }
    before = p->best.schedule;
    if ((rc = mp__cand_lower(g, o, &rs, o->budget, NULL, &low, err)) != 0) goto out;
    if (low.schedule != NULL) mp__cand_pick(p, &low);
    mp__cand_free(&low);
    if (p->best.schedule != before) {
      r->source = "window-dp-searched";
      r->has_model = 0;
    }
    goto out;
  }
done:
  if (p->best.schedule != before) {
    r->source = "window-dp-reordered";
    r->has_model = 0;
  }
out:
  free(rank);
  return rc;
}
