/* lowerset_window.c - the window family of lower sets (lowerset_window.h):
 * the sets L with P_a included in L included in P_(a+w), the exact DP's
 * fallback on graphs with too many lower sets.
 *
 * Each set is generated once, from a = the first position L misses: L is
 * P_a plus a subset X of the positions a+1 .. a+w-1 closed under
 * predecessors (a node whose predecessor is a, or a position of the window
 * not in X, cannot be in X). A depth-first walk over the window's positions,
 * excluding then including each, lists the X; V is added as a = n. The
 * width is the largest whose count fits the limit, found by bisection (the
 * family only grows with w). The sets are then sorted as the exact family's
 * are (by size, then mp_lowerset_bits_cmp: lowerset.h) and their cover edges L -> L \ {v}, for the maximal v of
 * L whose removal stays in the family, looked up in a hash table of the
 * bitsets.
 *
 * Why it is fast enough: every count is cut at the limit, so finding the
 * width costs a few times the family's own size times its width; the build
 * is one pass over the sets and their maximal nodes.
 */
#include "lowerset_window.h"

#include <stdlib.h>
#include <string.h>

/* Widths above this are not tried: the family's sets are then the exact
 * ones near every prefix, and the walks over windows that long cost more
 * than they find. */
#define MP__WIN_MAX_WIDTH 256

typedef struct {
  const mp_actdag_t *d;
  size_t width;
  size_t limit;        /* stop counting past this many sets */
  size_t n;            /* sets found so far */
  uint64_t *bits;      /* NULL: count only; else room for `limit` sets */
  uint8_t *stage;      /* per position: 0 exclude next, 1 include next, 2 done */
  uint64_t *cur;       /* the set being built */
} mp__win_t;

static inline int mp__win_has(const uint64_t *b, uint32_t v) { return (int)((b[v >> 6] >> (v & 63)) & 1u); }

/* May position p join P_a plus the current X? */
static int mp__win_allowed(const mp__win_t *w, size_t a, uint32_t p) {
  const mp_actdag_t *d = w->d;
  uint32_t k;
  for (k = d->pred_off[p]; k < d->pred_off[p + 1]; k++) {
    uint32_t u = d->pred[k];
    if (u < a) continue;
    if (u == a || !mp__win_has(w->cur, u)) return 0;
  }
  return 1;
}

/* Record the current set (P_a plus X, or V when a == n). 0, or 1 once past
 * the limit. */
static int mp__win_emit(mp__win_t *w) {
  if (w->n >= w->limit) {
    w->n++;
    return 1;
  }
  if (w->bits) memcpy(w->bits + w->n * w->d->words, w->cur, w->d->words * sizeof(uint64_t));
  w->n++;
  return 0;
}

/* cur = P_a, the first a positions (V when a == n). */
static void mp__win_prefix(mp__win_t *w, size_t a) {
  size_t k;
  memset(w->cur, 0, w->d->words * sizeof(uint64_t));
  for (k = 0; k < a / 64; k++) w->cur[k] = UINT64_MAX;
  if (a % 64) w->cur[a / 64] = (UINT64_C(1) << (a % 64)) - 1;
}

/* Every set whose first missing position is a. 0, or 1 once past the limit. */
static int mp__win_from(mp__win_t *w, size_t a) {
  const mp_actdag_t *d = w->d;
  size_t lo = a + 1, hi = a + w->width < d->n ? a + w->width : d->n, k;
  int rc = 0;
  mp__win_prefix(w, a);
  if (lo >= hi) return mp__win_emit(w);
  k = lo;
  w->stage[k] = 0;
  for (;;) {
    if (k == hi) {
      if ((rc = mp__win_emit(w)) != 0) break;
      k--;
      continue;
    }
    if (w->stage[k] == 0) { /* without k */
      w->stage[k] = 1;
      if (++k < hi) w->stage[k] = 0;
    } else if (w->stage[k] == 1) { /* with k, when its predecessors allow */
      w->stage[k] = 2;
      if (mp__win_allowed(w, a, (uint32_t)k)) {
        w->cur[k >> 6] |= UINT64_C(1) << (k & 63);
        if (++k < hi) w->stage[k] = 0;
      }
    } else {
      w->cur[k >> 6] &= ~(UINT64_C(1) << (k & 63));
      if (k == lo) break;
      k--;
    }
  }
  return rc;
}

/* Every set of the family (V last, then everything by first missing
 * position), counted, and stored when w->bits is set. 0, or 1 once past
 * the limit. */
static int mp__win_all(mp__win_t *w) {
  size_t a;
  w->n = 0;
  for (a = 0; a < w->d->n; a++)
    if (mp__win_from(w, a)) return 1;
  mp__win_prefix(w, w->d->n);
  return mp__win_emit(w);
}

/* ---- The family: sorted by size, with its cover edges ------------------- */

typedef struct {
  const uint64_t *bits; /* the set, in the raw list */
  uint32_t card, words;
} mp__win_key_t;

/* By size, then mp_lowerset_bits_cmp (lowerset.h): the exact family's
 * order. Sets are distinct, so the order is strict. */
static int mp__win_cmp(const void *x, const void *y) {
  const mp__win_key_t *a = x, *b = y;
  if (a->card != b->card) return a->card < b->card ? -1 : 1;
  return mp_lowerset_bits_cmp(a->bits, b->bits, a->words);
}

static uint64_t mp__win_hash(const uint64_t *b, size_t words) {
  uint64_t h = 1469598103934665603ULL;
  size_t k;
  for (k = 0; k < words; k++) {
    h ^= b[k];
    h *= 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return h;
}

/* Index of the set equal to b in the table (tab of mask+1 slots holding
 * set index + 1, 0 empty), or UINT32_MAX. */
static uint32_t mp__win_find(const mp_lowerset_family_t *f, const uint32_t *tab, size_t mask,
                             const uint64_t *b) {
  size_t h = (size_t)mp__win_hash(b, f->words) & mask;
  while (tab[h] != 0) {
    uint32_t i = tab[h] - 1;
    if (memcmp(f->bits + (size_t)i * f->words, b, f->words * sizeof(uint64_t)) == 0) return i;
    h = (h + 1) & mask;
  }
  return UINT32_MAX;
}

/* Sort the n raw sets into f by size and add the cover edges. */
static int mp__win_build(const mp_actdag_t *d, uint64_t *raw, size_t n, mp_lowerset_family_t *f) {
  size_t words = d->words, i, mask = 1, ne = 0, cap_e;
  mp__win_key_t *key = malloc(n * sizeof(*key));
  uint32_t *tab = NULL;
  uint64_t *tmp = malloc(words * sizeof(uint64_t));
  int rc = MP_ENOMEM;
  f->n_sets = n;
  f->words = words;
  f->exact = 1;
  f->bits = malloc(n * words * sizeof(uint64_t));
  f->card = malloc(n * sizeof(uint32_t));
  f->down_off = malloc((n + 1) * sizeof(uint32_t));
  cap_e = 2 * n + 16;
  f->down = malloc(cap_e * sizeof(uint32_t));
  f->down_node = malloc(cap_e * sizeof(uint32_t));
  while (mask < 2 * n) mask *= 2;
  tab = calloc(mask, sizeof(uint32_t));
  mask--;
  if (!key || !tmp || !f->bits || !f->card || !f->down_off || !f->down || !f->down_node || !tab)
    goto out;
  for (i = 0; i < n; i++) {
    const uint64_t *b = raw + i * words;
    size_t k, c = 0;
    for (k = 0; k < words; k++) c += (size_t)__builtin_popcountll(b[k]);
    key[i].card = (uint32_t)c;
    key[i].bits = b;
    key[i].words = (uint32_t)words;
  }
  qsort(key, n, sizeof(*key), mp__win_cmp);
  for (i = 0; i < n; i++) {
    size_t h;
    memcpy(f->bits + i * words, key[i].bits, words * sizeof(uint64_t));
    f->card[i] = key[i].card;
    h = (size_t)mp__win_hash(f->bits + i * words, words) & mask;
    while (tab[h] != 0) h = (h + 1) & mask;
    tab[h] = (uint32_t)(i + 1);
  }
  for (i = 0; i < n; i++) {
    const uint64_t *b = f->bits + i * words;
    size_t k;
    f->down_off[i] = (uint32_t)ne;
    for (k = 0; k < words; k++) {
      uint64_t x = b[k];
      while (x) {
        uint32_t v = (uint32_t)(k * 64 + (size_t)__builtin_ctzll(x)), s, t;
        int maximal = 1;
        x &= x - 1;
        for (s = d->succ_off[v]; s < d->succ_off[v + 1] && maximal; s++)
          maximal = !mp__win_has(b, d->succ[s]);
        if (!maximal) continue;
        memcpy(tmp, b, words * sizeof(uint64_t));
        tmp[v >> 6] &= ~(UINT64_C(1) << (v & 63));
        if ((t = mp__win_find(f, tab, mask, tmp)) == UINT32_MAX) continue;
        if (ne == cap_e) {
          uint32_t *nd = realloc(f->down, 2 * cap_e * sizeof(uint32_t)), *nn;
          if (nd == NULL) goto out;
          f->down = nd;
          if ((nn = realloc(f->down_node, 2 * cap_e * sizeof(uint32_t))) == NULL) goto out;
          f->down_node = nn;
          cap_e *= 2;
        }
        f->down[ne] = t;
        f->down_node[ne] = v; /* ascending: the bits are scanned in order */
        ne++;
      }
    }
    if (ne > UINT32_MAX) {
      rc = MP_ELIMIT;
      goto out;
    }
  }
  f->down_off[n] = (uint32_t)ne;
  rc = 0;
out:
  free(key);
  free(tab);
  free(tmp);
  return rc;
}

int mp_lowerset_window(const mp_actdag_t *d, size_t max_sets, int (*should_stop)(void *),
                       void *stop_arg, mp_lowerset_family_t *out, size_t *width) {
  mp__win_t w;
  size_t lo = 1, hi = d->n < MP__WIN_MAX_WIDTH ? d->n : MP__WIN_MAX_WIDTH, n;
  uint64_t *raw = NULL;
  int rc = MP_ENOMEM;
  memset(out, 0, sizeof(*out));
  memset(&w, 0, sizeof(w));
  if (hi < 1) hi = 1;
  w.d = d;
  w.stage = malloc(d->n + 1);
  w.cur = malloc(d->words * sizeof(uint64_t));
  if (!w.stage || !w.cur) goto out;
  /* the largest width in [lo, hi] whose family fits max_sets (width 1, the
   * prefixes, always does) */
  w.limit = max_sets;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (should_stop && should_stop(stop_arg)) {
      rc = MP_ECANCELED;
      goto out;
    }
    w.width = mid;
    if (mp__win_all(&w) == 0) lo = mid;
    else hi = mid - 1;
  }
  w.width = lo;
  w.limit = SIZE_MAX;
  mp__win_all(&w);
  n = w.n;
  if (n > MP_LOWERSET_MAX_BYTES / 8 / d->words) {
    rc = MP_ELIMIT;
    goto out;
  }
  if ((raw = malloc(n * d->words * sizeof(uint64_t))) == NULL) goto out;
  w.bits = raw;
  w.limit = n;
  mp__win_all(&w);
  rc = mp__win_build(d, raw, n, out);
  out->window = lo;
  if (rc == 0 && width) *width = lo;
out:
  free(raw);
  free(w.stage);
  free(w.cur);
  if (rc != 0) mp_lowerset_family_free(out);
  return rc;
}
