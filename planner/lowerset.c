/* lowerset.c - the activation sub-DAG and the enumeration of its lower sets
 * (exact family) and of the "node with its ancestors" sets (approx family).
 *
 * Why by size: a step of the DP goes from a lower set to a strict superset,
 * and a strict superset is strictly larger. Listing the sets by size therefore
 * guarantees that a state is complete before any of its supersets reads it.
 * (The public reference solver numbers its sets in depth-first discovery
 * order and only steps from lower to higher numbers, so it misses supersets
 * discovered before their subsets; docs/algorithms.md, "Where memplan departs from
 * the reference solver".)
 */
#include "lowerset.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double mp_lowerset_clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- The activation DAG ------------------------------------------------ */

void mp_actdag_free(mp_actdag_t *d) {
  if (d == NULL) return;
  free(d->node);
  free(d->pred_off);
  free(d->pred);
  free(d->succ_off);
  free(d->succ);
  memset(d, 0, sizeof(*d));
}

int mp_actdag_init(mp_actdag_t *d, const mp_graph_t *g) {
  size_t n = 0, v, k, ne = 0;
  uint32_t *compact = NULL;
  memset(d, 0, sizeof(*d));
  compact = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  if (compact == NULL) return MP_ENOMEM;
  for (v = 0; v < g->n_nodes; v++)
    compact[v] = g->nodes[v].kind == MP_KIND_ACTIVATION ? (uint32_t)n++ : UINT32_MAX;
  d->n = n;
  d->words = n / 64 + 1;
  d->node = malloc((n ? n : 1) * sizeof(uint32_t));
  d->pred_off = calloc(n + 1, sizeof(uint32_t));
  d->succ_off = calloc(n + 1, sizeof(uint32_t));
  if (!d->node || !d->pred_off || !d->succ_off) goto nomem;
  for (v = 0; v < g->n_nodes; v++) {
    if (compact[v] == UINT32_MAX) continue;
    d->node[compact[v]] = (uint32_t)v;
    for (k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
      if (compact[g->pred[k]] != UINT32_MAX) ne++;
  }
  d->pred = malloc((ne ? ne : 1) * sizeof(uint32_t));
  d->succ = malloc((ne ? ne : 1) * sizeof(uint32_t));
  if (!d->pred || !d->succ) goto nomem;
  ne = 0;
  /* Graph predecessor lists are ascending and compact numbering preserves
   * order, so the compact lists are ascending too. */
  for (v = 0; v < n; v++) {
    uint32_t gv = d->node[v];
    for (k = g->pred_off[gv]; k < g->pred_off[gv + 1]; k++) {
      uint32_t cu = compact[g->pred[k]];
      if (cu != UINT32_MAX) {
        d->pred[ne++] = cu;
        d->succ_off[cu + 1]++;
      }
    }
    d->pred_off[v + 1] = (uint32_t)ne;
  }
  for (v = 0; v < n; v++) d->succ_off[v + 1] += d->succ_off[v];
  {
    uint32_t *fill = calloc(n + 1, sizeof(uint32_t));
    if (fill == NULL) goto nomem;
    for (v = 0; v < n; v++)
      for (k = d->pred_off[v]; k < d->pred_off[v + 1]; k++) {
        uint32_t u = d->pred[k];
        d->succ[d->succ_off[u] + fill[u]++] = (uint32_t)v;
      }
    free(fill);
  }
  free(compact);
  return 0;
nomem:
  free(compact);
  mp_actdag_free(d);
  return MP_ENOMEM;
}

/* ---- Families ------------------------------------------------------------ */

void mp_lowerset_family_free(mp_lowerset_family_t *f) {
  if (f == NULL) return;
  free(f->bits);
  free(f->card);
  free(f->down_off);
  free(f->down);
  free(f->down_node);
  free(f->by_node);
  memset(f, 0, sizeof(*f));
}

static uint64_t mp__hash_bits(const uint64_t *b, size_t words) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  size_t i;
  for (i = 0; i < words; i++) {
    h ^= b[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  return h;
}

/* Growable storage for the sets during enumeration. */
typedef struct {
  uint64_t *bits;
  uint32_t *card;
  size_t n, cap, words;
  uint32_t *table;   /* open addressing, UINT32_MAX = empty */
  size_t tcap;       /* power of two */
  uint32_t *edge_from, *edge_to, *edge_node; /* cover edges from -> to = from + {node} */
  size_t ne, ecap;
} mp__enum_t;

static void mp__enum_free(mp__enum_t *e) {
  free(e->bits);
  free(e->card);
  free(e->table);
  free(e->edge_from);
  free(e->edge_to);
  free(e->edge_node);
}

static int mp__table_rehash(mp__enum_t *e, size_t ncap) {
  uint32_t *t = malloc(ncap * sizeof(uint32_t));
  size_t i;
  if (t == NULL) return MP_ENOMEM;
  for (i = 0; i < ncap; i++) t[i] = UINT32_MAX;
  for (i = 0; i < e->n; i++) {
    size_t h = (size_t)mp__hash_bits(e->bits + i * e->words, e->words) & (ncap - 1);
    while (t[h] != UINT32_MAX) h = (h + 1) & (ncap - 1);
    t[h] = (uint32_t)i;
  }
  free(e->table);
  e->table = t;
  e->tcap = ncap;
  return 0;
}

/* Index of the set equal to `b`, adding it when new. *added tells which. */
static int mp__enum_intern(mp__enum_t *e, const uint64_t *b, uint32_t card, uint32_t *idx,
                           int *added) {
  size_t h = (size_t)mp__hash_bits(b, e->words) & (e->tcap - 1);
  while (e->table[h] != UINT32_MAX) {
    uint32_t j = e->table[h];
    if (e->card[j] == card && memcmp(e->bits + (size_t)j * e->words, b, e->words * 8) == 0) {
      *idx = j;
      *added = 0;
      return 0;
    }
    h = (h + 1) & (e->tcap - 1);
  }
  if (e->n == e->cap) {
    size_t ncap = e->cap ? e->cap * 2 : 256;
    uint64_t *nb;
    uint32_t *nc;
    if (ncap > UINT32_MAX - 1) return MP_ELIMIT;
    if (ncap > MP_LOWERSET_MAX_BYTES / 8 / e->words) {
      ncap = MP_LOWERSET_MAX_BYTES / 8 / e->words;
      if (ncap <= e->n) return MP_ELIMIT;
    }
    nb = realloc(e->bits, ncap * e->words * 8);
    if (nb == NULL) return MP_ENOMEM;
    e->bits = nb;
    nc = realloc(e->card, ncap * sizeof(uint32_t));
    if (nc == NULL) return MP_ENOMEM;
    e->card = nc;
    e->cap = ncap;
  }
  memcpy(e->bits + e->n * e->words, b, e->words * 8);
  e->card[e->n] = card;
  e->table[h] = (uint32_t)e->n;
  *idx = (uint32_t)e->n;
  *added = 1;
  e->n++;
  if (e->n * 2 > e->tcap) return mp__table_rehash(e, e->tcap * 2);
  return 0;
}

static int mp__enum_edge(mp__enum_t *e, uint32_t from, uint32_t to, uint32_t node) {
  if (e->ne == e->ecap) {
    size_t ncap = e->ecap ? e->ecap * 2 : 1024;
    uint32_t *a = realloc(e->edge_from, ncap * sizeof(uint32_t));
    if (a == NULL) return MP_ENOMEM;
    e->edge_from = a;
    a = realloc(e->edge_to, ncap * sizeof(uint32_t));
    if (a == NULL) return MP_ENOMEM;
    e->edge_to = a;
    a = realloc(e->edge_node, ncap * sizeof(uint32_t));
    if (a == NULL) return MP_ENOMEM;
    e->edge_node = a;
    e->ecap = ncap;
  }
  e->edge_from[e->ne] = from;
  e->edge_to[e->ne] = to;
  e->edge_node[e->ne] = node;
  e->ne++;
  return 0;
}

/* Put the sets of each size in the order of mp_lowerset_bits_cmp
 * (lowerset.h): the breadth-first order they were found in depends on the
 * DAG's shape, this one on the sets alone. The bitsets move in place, one
 * permutation cycle at a time, since they may take most of the memory cap;
 * the cover edges follow. */
typedef struct {
  const uint64_t *bits;
  uint32_t words, idx; /* words: the DAG's, fewer than 2^32 (the memory cap) */
} mp__enum_key_t;

static int mp__enum_key_cmp(const void *x, const void *y) {
  const mp__enum_key_t *a = x, *b = y;
  return mp_lowerset_bits_cmp(a->bits, b->bits, a->words);
}

static int mp__enum_canonical(mp__enum_t *e) {
  size_t n = e->n, w = e->words, i, lo, k;
  mp__enum_key_t *key = malloc((n ? n : 1) * sizeof(*key));
  uint32_t *to = malloc((n ? n : 1) * sizeof(uint32_t));
  uint64_t *carry = malloc(w * 8), *swap = malloc(w * 8);
  int rc = MP_ENOMEM;
  if (key == NULL || to == NULL || carry == NULL || swap == NULL) goto out;
  for (i = 0; i < n; i++) {
    key[i].bits = e->bits + i * w;
    key[i].words = (uint32_t)w;
    key[i].idx = (uint32_t)i;
  }
  /* the sets are grouped by size already: sort each group */
  for (lo = 0; lo < n; lo = i) {
    for (i = lo + 1; i < n && e->card[i] == e->card[lo]; i++) {
    }
    qsort(key + lo, i - lo, sizeof(*key), mp__enum_key_cmp);
  }
  for (i = 0; i < n; i++) to[key[i].idx] = (uint32_t)i; /* old index -> new */
  for (k = 0; k < e->ne; k++) {
    e->edge_from[k] = to[e->edge_from[k]];
    e->edge_to[k] = to[e->edge_to[k]];
  }
  /* cycles: the set at old index j goes to to[j]; a placed set is marked by
   * to[j] = j (the cards need no move: a size group keeps its place) */
  for (i = 0; i < n; i++) {
    size_t j = i;
    if (to[i] == i) continue;
    memcpy(carry, e->bits + i * w, w * 8);
    do {
      size_t t = to[j];
      memcpy(swap, e->bits + t * w, w * 8);
      memcpy(e->bits + t * w, carry, w * 8);
      memcpy(carry, swap, w * 8);
      to[j] = (uint32_t)j;
      j = t;
    } while (j != i);
  }
  rc = 0;
out:
  free(key);
  free(to);
  free(carry);
  free(swap);
  return rc;
}

static int mp__check_stop(const mp_lowerset_limits_t *lim) {
  if (lim == NULL) return 0;
  if (lim->should_stop && lim->should_stop(lim->stop_arg)) return MP_ECANCELED;
  if (lim->deadline_at_ms > 0 && mp_lowerset_clock_ms() > lim->deadline_at_ms)
    return MP_ETIMEDOUT;
  return 0;
}

int mp_lowerset_enumerate(const mp_actdag_t *d, const mp_lowerset_limits_t *lim,
                          mp_lowerset_family_t *out, size_t *seen) {
  mp__enum_t e;
  uint64_t *scratch = NULL;
  size_t i, v, k, words = d->words;
  size_t max_sets = lim && lim->max_sets ? lim->max_sets : (size_t)UINT32_MAX - 2;
  int rc = 0, added;
  uint32_t idx;

  memset(&e, 0, sizeof(e));
  memset(out, 0, sizeof(*out));
  e.words = words;
  scratch = calloc(words, 8);
  if (scratch == NULL || mp__table_rehash(&e, 1024) != 0) {
    rc = MP_ENOMEM;
    goto done;
  }
  /* The empty set is set 0. */
  if ((rc = mp__enum_intern(&e, scratch, 0, &idx, &added)) != 0) goto done;

  /* Breadth first: set i (size s) is extended by each addable node; the new
   * sets have size s+1 and are appended after every set of size s, so the
   * list stays sorted by size. */
  for (i = 0; i < e.n; i++) {
    if ((i & 255) == 0 && (rc = mp__check_stop(lim)) != 0) goto done;
    for (v = 0; v < d->n; v++) {
      const uint64_t *b = e.bits + i * words;
      int ok = 1;
      if ((b[v >> 6] >> (v & 63)) & 1u) continue;
      for (k = d->pred_off[v]; k < d->pred_off[v + 1]; k++) {
        uint32_t u = d->pred[k];
        if (!((b[u >> 6] >> (u & 63)) & 1u)) {
          ok = 0;
          break;
        }
      }
      if (!ok) continue;
      memcpy(scratch, b, words * 8);
      scratch[v >> 6] |= (uint64_t)1 << (v & 63);
      /* note: intern may move e.bits; b is not used after this call */
      if ((rc = mp__enum_intern(&e, scratch, e.card[i] + 1, &idx, &added)) != 0) goto done;
      if (added && e.n > max_sets) {
        rc = MP_ELIMIT;
        goto done;
      }
      if ((rc = mp__enum_edge(&e, (uint32_t)i, idx, (uint32_t)v)) != 0) goto done;
    }
  }

  if ((rc = mp__enum_canonical(&e)) != 0) goto done;

  /* Down edges in compressed form, grouped by the larger set. */
  out->down_off = calloc(e.n + 1, sizeof(uint32_t));
  out->down = malloc((e.ne ? e.ne : 1) * sizeof(uint32_t));
  out->down_node = malloc((e.ne ? e.ne : 1) * sizeof(uint32_t));
  if (!out->down_off || !out->down || !out->down_node) {
    rc = MP_ENOMEM;
    goto done;
  }
  for (k = 0; k < e.ne; k++) out->down_off[e.edge_to[k] + 1]++;
  for (i = 0; i < e.n; i++) out->down_off[i + 1] += out->down_off[i];
  {
    uint32_t *fill = calloc(e.n + 1, sizeof(uint32_t));
    if (fill == NULL) {
      rc = MP_ENOMEM;
      goto done;
    }
    for (k = 0; k < e.ne; k++) {
      uint32_t to = e.edge_to[k];
      out->down_node[out->down_off[to] + fill[to]] = e.edge_node[k];
      out->down[out->down_off[to] + fill[to]++] = e.edge_from[k];
    }
    free(fill);
  }
  /* Each set's cover edges by removed node, ascending (lowerset.h): an
   * insertion sort, the lists being as short as the DAG is wide. */
  for (i = 0; i < e.n; i++) {
    size_t lo = out->down_off[i], hi = out->down_off[i + 1], x;
    for (x = lo + 1; x < hi; x++) {
      uint32_t nv = out->down_node[x], ns = out->down[x];
      size_t y = x;
      while (y > lo && out->down_node[y - 1] > nv) {
        out->down_node[y] = out->down_node[y - 1];
        out->down[y] = out->down[y - 1];
        y--;
      }
      out->down_node[y] = nv;
      out->down[y] = ns;
    }
  }
  out->n_sets = e.n;
  out->words = words;
  out->bits = e.bits;
  out->card = e.card;
  out->exact = 1;
  e.bits = NULL;
  e.card = NULL;

done:
  if (seen) *seen = e.n;
  if (rc != 0) mp_lowerset_family_free(out);
  mp__enum_free(&e);
  free(scratch);
  return rc;
}

/* ---- The approximate family ---------------------------------------------- */

typedef struct {
  uint32_t card, node; /* node == UINT32_MAX for {} or the added V */
  uint32_t src;        /* row in the unsorted closure table */
} mp__approx_key_t;

/* Strict total order: by size, then by the set's top node, with {} first and
 * an added V last. (The reference sorts with a non-strict comparison and
 * loses steps on ties; here no two keys compare equal.) */
static int mp__approx_cmp(const void *pa, const void *pb) {
  const mp__approx_key_t *a = pa, *b = pb;
  if (a->card != b->card) return a->card < b->card ? -1 : 1;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  return 0;
}

int mp_lowerset_approx(const mp_actdag_t *d, mp_lowerset_family_t *out) {
  return mp_lowerset_approx_polled(d, NULL, NULL, out);
}

/* Closure words ORed between two polls of should_stop. */
#define MP__APPROX_POLL_WORK (1u << 22)

int mp_lowerset_approx_polled(const mp_actdag_t *d, int (*should_stop)(void *), void *stop_arg,
                              mp_lowerset_family_t *out) {
  size_t n = d->n, words = d->words, v, k, rows, w;
  uint64_t *clo = NULL, work = 0;
  mp__approx_key_t *keys = NULL;
  int have_v = 0;
  memset(out, 0, sizeof(*out));
  rows = n + 2; /* {}, one per node, V */
  if (rows > MP_LOWERSET_MAX_BYTES / 8 / words) return MP_ELIMIT;
  clo = calloc(rows * words, 8);
  keys = malloc(rows * sizeof(*keys));
  if (!clo || !keys) goto nomem;
  /* Row 0 is {}, row v+1 is closure(v), row n+1 is V. */
  keys[0].card = 0;
  keys[0].node = UINT32_MAX;
  keys[0].src = 0;
  for (v = 0; v < n; v++) {
    uint64_t *b = clo + (v + 1) * words;
    uint32_t c = 0;
    work += (uint64_t)(d->pred_off[v + 1] - d->pred_off[v] + 1) * words;
    if (work >= MP__APPROX_POLL_WORK) {
      work = 0;
      if (should_stop && should_stop(stop_arg)) {
        free(clo);
        free(keys);
        return MP_ECANCELED;
      }
    }
    for (k = d->pred_off[v]; k < d->pred_off[v + 1]; k++) {
      const uint64_t *pb = clo + ((size_t)d->pred[k] + 1) * words;
      for (w = 0; w < words; w++) b[w] |= pb[w];
    }
    b[v >> 6] |= (uint64_t)1 << (v & 63);
    for (w = 0; w < words; w++) c += (uint32_t)__builtin_popcountll(b[w]);
    keys[v + 1].card = c;
    keys[v + 1].node = (uint32_t)v;
    keys[v + 1].src = (uint32_t)(v + 1);
    if (c == n) have_v = 1;
  }
  rows = n + 1;
  if (!have_v) {
    uint64_t *b = clo + (n + 1) * words;
    for (v = 0; v < n; v++) b[v >> 6] |= (uint64_t)1 << (v & 63);
    keys[rows].card = (uint32_t)n;
    keys[rows].node = UINT32_MAX - 1; /* after every real node of size n (none) */
    keys[rows].src = (uint32_t)(n + 1);
    rows++;
  }
  qsort(keys, rows, sizeof(*keys), mp__approx_cmp);
  out->bits = malloc(rows * words * 8);
  out->card = malloc(rows * sizeof(uint32_t));
  out->by_node = malloc((n ? n : 1) * sizeof(uint32_t));
  if (!out->bits || !out->card || !out->by_node) goto nomem;
  for (k = 0; k < rows; k++) {
    memcpy(out->bits + k * words, clo + (size_t)keys[k].src * words, words * 8);
    out->card[k] = keys[k].card;
    if (keys[k].node < n) out->by_node[keys[k].node] = (uint32_t)k;
  }
  out->n_sets = rows;
  out->words = words;
  out->exact = 0;
  free(clo);
  free(keys);
  return 0;
nomem:
  free(clo);
  free(keys);
  mp_lowerset_family_free(out);
  return MP_ENOMEM;
}

int mp_lowerset_count(const mp_graph_t *g, size_t limit, size_t *count) {
  mp_actdag_t d;
  mp_lowerset_family_t f;
  mp_lowerset_limits_t lim;
  size_t seen = 0;
  int rc;
  *count = 0;
  if ((rc = mp_actdag_init(&d, g)) != 0) return rc;
  memset(&lim, 0, sizeof(lim));
  lim.max_sets = limit;
  rc = mp_lowerset_enumerate(&d, &lim, &f, &seen);
  *count = seen;
  if (rc == 0) mp_lowerset_family_free(&f);
  mp_actdag_free(&d);
  return rc;
}
