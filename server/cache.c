/* cache.c - a byte-bounded LRU: a chained hash table for lookup and a
 * doubly linked list in recency order (head = most recent). An entry's cost
 * is its key, its value and a fixed overhead, so a flood of tiny entries is
 * bounded too.
 *
 * Tombstones. A reader that fetched a row from the store just before the
 * retention sweep deleted it would put what it read into the cache after
 * srv_cache_drop_tags ran, and memory would answer with a deleted row until
 * the LRU evicted it. So drop_tags also remembers the hashes of the tags it
 * dropped, and a tagged put whose tag is among them is not kept for
 * SRV__TOMB_MS after the last drop (a reader holds a row for far less). A
 * hash collision only costs a cache miss; so does a row re-created under
 * the same tag within the window (a result key computed again). Past
 * SRV__TOMB_MAX remembered tags no tagged value is kept until the window
 * ends. */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SRV__ENTRY_OVERHEAD 96
#define SRV__TOMB_MS 60000
#define SRV__TOMB_MAX (1u << 20) /* 8 MiB of hashes */

typedef struct srv__entry_s {
  char *key;
  srv_blob_t *value;
  uint64_t hash;
  struct srv__entry_s *hnext;       /* bucket chain */
  struct srv__entry_s *prev, *next; /* recency list */
} srv__entry_t;

struct srv_cache_s {
  pthread_mutex_t mu;
  srv__entry_t **buckets;
  size_t n_buckets;
  srv__entry_t *head, *tail;
  uint64_t entries, bytes, max_bytes;
  /* tombstones: the dropped tags' hashes, sorted, kept until tomb_until
   * (monotonic ms); all_dropped: past SRV__TOMB_MAX, every tag counts */
  uint64_t *tomb;
  size_t n_tomb;
  int all_dropped;
  uint64_t tomb_until, tomb_ms;
};

static uint64_t srv__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int srv__cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t srv__hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static uint64_t srv__cost(const srv__entry_t *e) {
  return (uint64_t)e->value->len + strlen(e->key) + SRV__ENTRY_OVERHEAD;
}

srv_cache_t *srv_cache_new(uint64_t max_bytes) {
  srv_cache_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->n_buckets = 1024;
  c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
  if (c->buckets == NULL) {
    free(c);
    return NULL;
  }
  c->max_bytes = max_bytes;
  c->tomb_ms = SRV__TOMB_MS;
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

void srv_blob_unref(srv_blob_t *b) {
  if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) free(b);
}

static void srv__entry_free(srv__entry_t *e) {
  free(e->key);
  srv_blob_unref(e->value);
  free(e);
}

void srv_cache_free(srv_cache_t *c) {
  srv__entry_t *e, *n;
  if (c == NULL) return;
  for (e = c->head; e; e = n) {
    n = e->next;
    srv__entry_free(e);
  }
  free(c->buckets);
  pthread_mutex_destroy(&c->mu);
  free(c->tomb);
  free(c);
}

static void srv__unlink(srv_cache_t *c, srv__entry_t *e) {
  srv__entry_t **pp = &c->buckets[e->hash % c->n_buckets];
  while (*pp != e) pp = &(*pp)->hnext;
  *pp = e->hnext;
  if (e->prev) e->prev->next = e->next; else c->head = e->next;
  if (e->next) e->next->prev = e->prev; else c->tail = e->prev;
  c->entries--;
  c->bytes -= srv__cost(e);
}

static void srv__push_front(srv_cache_t *c, srv__entry_t *e) {
  e->prev = NULL;
  e->next = c->head;
  if (c->head) c->head->prev = e; else c->tail = e;
  c->head = e;
}

static void srv__grow(srv_cache_t *c) {
  size_t nb = c->n_buckets * 2, i;
  srv__entry_t **b = calloc(nb, sizeof(*b));
  if (b == NULL) return; /* keep the old table: slower, still correct */
  for (i = 0; i < c->n_buckets; i++) {
    srv__entry_t *e = c->buckets[i], *n;
    for (; e; e = n) {
      n = e->hnext;
      e->hnext = b[e->hash % nb];
      b[e->hash % nb] = e;
    }
  }
  free(c->buckets);
  c->buckets = b;
  c->n_buckets = nb;
}

static srv__entry_t *srv__find(srv_cache_t *c, const char *key, uint64_t h) {
  srv__entry_t *e = c->buckets[h % c->n_buckets];
  for (; e; e = e->hnext)
    if (e->hash == h && strcmp(e->key, key) == 0) return e;
  return NULL;
}

/* The entry under key, made the most recent; NULL when absent. Called
 * with the lock held. */
static srv__entry_t *srv__touch(srv_cache_t *c, const char *key) {
  srv__entry_t *e = srv__find(c, key, srv__hash(key));
  if (e != NULL && e != c->head) {
    if (e->prev) e->prev->next = e->next;
    if (e->next) e->next->prev = e->prev; else c->tail = e->prev;
    srv__push_front(c, e);
  }
  return e;
}

int srv_cache_get(srv_cache_t *c, const char *key, char **out, size_t *len) {
  srv__entry_t *e;
  char *copy;
  pthread_mutex_lock(&c->mu);
  if ((e = srv__touch(c, key)) == NULL) {
    pthread_mutex_unlock(&c->mu);
    return SRV_ENOTFOUND;
  }
  copy = malloc(e->value->len + 1);
  if (copy) {
    memcpy(copy, e->value->data, e->value->len + 1);
    *len = e->value->len;
  }
  pthread_mutex_unlock(&c->mu);
  if (copy == NULL) return SRV_ENOMEM;
  *out = copy;
  return 0;
}

int srv_cache_get_blob(srv_cache_t *c, const char *key, srv_blob_t **out) {
  srv__entry_t *e;
  pthread_mutex_lock(&c->mu);
  if ((e = srv__touch(c, key)) == NULL) {
    pthread_mutex_unlock(&c->mu);
    return SRV_ENOTFOUND;
  }
  __atomic_add_fetch(&e->value->refs, 1, __ATOMIC_RELAXED);
  *out = e->value;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

/* Was a value tagged `tag` dropped within the window? (mutex held) */
static int srv__tombstoned(srv_cache_t *c, const char *tag) {
  uint64_t h;
  if (c->tomb_until == 0) return 0;
  if (srv__now_ms() >= c->tomb_until) { /* the window is over: forget */
    free(c->tomb);
    c->tomb = NULL;
    c->n_tomb = 0;
    c->all_dropped = 0;
    c->tomb_until = 0;
    return 0;
  }
  if (c->all_dropped) return 1;
  h = srv__hash(tag);
  return bsearch(&h, c->tomb, c->n_tomb, sizeof(*c->tomb), srv__cmp_u64) != NULL;
}

/* Remember tags[0..n) for the window (mutex held). */
static void srv__tombstone(srv_cache_t *c, const char *const *tags, size_t n) {
  size_t i;
  uint64_t *t;
  c->tomb_until = srv__now_ms() + c->tomb_ms;
  if (c->all_dropped) return;
  if (c->n_tomb + n > SRV__TOMB_MAX ||
      (t = realloc(c->tomb, (c->n_tomb + n) * sizeof(*t))) == NULL) {
    c->all_dropped = 1; /* too many (or no memory): no tagged value for the window */
    return;
  }
  c->tomb = t;
  for (i = 0; i < n; i++) t[c->n_tomb++] = srv__hash(tags[i]);
  qsort(t, c->n_tomb, sizeof(*t), srv__cmp_u64);
}

int srv_cache_put_blob(srv_cache_t *c, const char *key, srv_blob_t *blob) {
  srv__entry_t *e, *old;
  uint64_t cost;
  e = calloc(1, sizeof(*e));
  if (e == NULL || (e->key = strdup(key)) == NULL) {
    free(e);
    return SRV_ENOMEM;
  }
  __atomic_add_fetch(&blob->refs, 1, __ATOMIC_RELAXED);
  e->value = blob;
  e->hash = srv__hash(key);
  /* (a value shared by two keys is counted under each: the bound holds) */
  cost = srv__cost(e);
  pthread_mutex_lock(&c->mu);
  if ((old = srv__find(c, key, e->hash)) != NULL) {
    srv__unlink(c, old);
    srv__entry_free(old);
  }
  if (cost > c->max_bytes || (blob->tag && srv__tombstoned(c, blob->tag))) {
    pthread_mutex_unlock(&c->mu);
    srv__entry_free(e);
    return 0;
  }
  while (c->bytes + cost > c->max_bytes && c->tail) {
    srv__entry_t *victim = c->tail;
    srv__unlink(c, victim);
    srv__entry_free(victim);
  }
  if (c->entries + 1 > c->n_buckets) srv__grow(c);
  e->hnext = c->buckets[e->hash % c->n_buckets];
  c->buckets[e->hash % c->n_buckets] = e;
  srv__push_front(c, e);
  c->entries++;
  c->bytes += cost;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

srv_blob_t *srv_blob_new(const char *value, size_t len, const char *tag) {
  size_t tl = tag ? strlen(tag) + 1 : 0;
  srv_blob_t *b = malloc(sizeof(*b) + len + 1 + tl);
  if (b == NULL) return NULL;
  b->refs = 1;
  b->len = len;
  memcpy(b->data, value, len);
  b->data[len] = '\0';
  b->tag = tag ? memcpy(b->data + len + 1, tag, tl) : NULL;
  return b;
}

int srv_cache_put_tagged(srv_cache_t *c, const char *key, const char *tag, const char *value, size_t len) {
  srv_blob_t *b = srv_blob_new(value, len, tag);
  int rc;
  if (b == NULL) return SRV_ENOMEM;
  rc = srv_cache_put_blob(c, key, b);
  srv_blob_unref(b);
  return rc;
}

int srv_cache_put(srv_cache_t *c, const char *key, const char *value, size_t len) {
  return srv_cache_put_tagged(c, key, NULL, value, len);
}

static int srv__cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t srv_cache_drop_tags(srv_cache_t *c, const char *const *tags, size_t n) {
  const char **sorted;
  srv__entry_t *e, *next;
  size_t dropped = 0;
  if (n == 0) return 0;
  if ((sorted = malloc(n * sizeof(*sorted))) != NULL) {
    memcpy(sorted, tags, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), srv__cmp_str);
  }
  pthread_mutex_lock(&c->mu);
  srv__tombstone(c, tags, n);
  if (sorted == NULL) c->all_dropped = 1;
  for (e = c->head; e; e = next) {
    next = e->next;
    /* without memory for the sorted tags, every tagged entry goes */
    if (e->value->tag && (sorted == NULL || bsearch(&e->value->tag, sorted, n, sizeof(*sorted), srv__cmp_str))) {
      srv__unlink(c, e);
      srv__entry_free(e);
      dropped++;
    }
  }
  pthread_mutex_unlock(&c->mu);
  free(sorted);
  return dropped;
}

void srv_cache_set_tombstone_ms(srv_cache_t *c, uint64_t ms) {
  pthread_mutex_lock(&c->mu);
  c->tomb_ms = ms;
  pthread_mutex_unlock(&c->mu);
}

void srv_cache_stats(srv_cache_t *c, uint64_t *entries, uint64_t *bytes, uint64_t *max_bytes) {
  pthread_mutex_lock(&c->mu);
  *entries = c->entries;
  *bytes = c->bytes;
  *max_bytes = c->max_bytes;
  pthread_mutex_unlock(&c->mu);
}
