/* strmap.c - open addressing with linear probing and FNV-1a hashing. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static uint64_t mp__strhash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h ^ (h >> 29);
}

void mp__strmap_init(mp__strmap_t *m) { memset(m, 0, sizeof(*m)); }

void mp__strmap_free(mp__strmap_t *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof(*m));
}

static int mp__strmap_grow(mp__strmap_t *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64, i;
  const char **nk = calloc(ncap, sizeof(*nk));
  uint32_t *nv = malloc(ncap * sizeof(*nv));
  if (nk == NULL || nv == NULL) {
    free(nk);
    free(nv);
    return MP_ENOMEM;
  }
  for (i = 0; i < m->cap; i++) {
    size_t j;
    if (m->keys[i] == NULL) continue;
    j = mp__strhash(m->keys[i]) & (ncap - 1);
    while (nk[j] != NULL) j = (j + 1) & (ncap - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  return 0;
}

int mp__strmap_put(mp__strmap_t *m, const char *key, uint32_t val, uint32_t *old) {
  size_t j;
  if ((m->len + 1) * 2 > m->cap) {
    int rc = mp__strmap_grow(m);
    if (rc != 0) return rc;
  }
  j = mp__strhash(key) & (m->cap - 1);
  while (m->keys[j] != NULL) {
    if (strcmp(m->keys[j], key) == 0) {
      if (old) *old = m->vals[j];
      return 1;
    }
    j = (j + 1) & (m->cap - 1);
  }
  m->keys[j] = key;
  m->vals[j] = val;
  m->len++;
  return 0;
}

int mp__strmap_get(const mp__strmap_t *m, const char *key, uint32_t *val) {
  size_t j;
  if (m->cap == 0) return -1;
  j = mp__strhash(key) & (m->cap - 1);
  while (m->keys[j] != NULL) {
    if (strcmp(m->keys[j], key) == 0) {
      *val = m->vals[j];
      return 0;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return -1;
}
