/* cache.h - the in-memory LRU in front of the durable store, bounded in
 * bytes. Keys are strings (result and frontier keys), values are byte
 * strings (serialised JSON). Thread-safe: one mutex.
 *
 * Ownership: put copies key and value. A value is an immutable,
 * reference-counted srv_blob_t: srv_cache_get_blob hands out a reference
 * the caller drops with srv_blob_unref (the hot path: a cached answer is
 * sent from the entry's own bytes, without a copy), srv_cache_get a
 * malloc'd copy the caller frees. Either way an entry evicted right after
 * a get is never a dangling pointer.
 *
 * Tags: a value may carry a tag, the key of the stored row it was made
 * from (a job id, a result key, a graph hash), which stays with the value
 * under every key that shares it. When retention deletes the row,
 * srv_cache_drop_tags drops every entry made from it, so that memory
 * never answers with what the store no longer has; for a minute after, a
 * put of a value with a dropped tag is not kept (a reader that read the
 * row just before it was deleted would otherwise put it back). */
#ifndef SRV_CACHE_H
#define SRV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"

typedef struct srv_blob_s {
  unsigned refs;    /* atomic */
  size_t len;
  const char *tag;  /* NULL, or a string in the same allocation */
  char data[];      /* len bytes and a NUL (then the tag) */
} srv_blob_t;

void srv_blob_unref(srv_blob_t *b);
/* A new value (one reference, the caller's): a copy of value[0..len) and
 * of tag (NULL: none). NULL when out of memory. */
srv_blob_t *srv_blob_new(const char *value, size_t len, const char *tag);

srv_cache_t *srv_cache_new(uint64_t max_bytes);
void srv_cache_free(srv_cache_t *c);

/* 0 with *out (NUL-terminated copy) and *len, or SRV_ENOTFOUND, SRV_ENOMEM. */
int srv_cache_get(srv_cache_t *c, const char *key, char **out, size_t *len);
/* 0 with *out a new reference to the value, or SRV_ENOTFOUND. */
int srv_cache_get_blob(srv_cache_t *c, const char *key, srv_blob_t **out);
/* Insert or replace with a value already held (one more reference, no
 * copy: two keys can share one value). 0 or SRV_ENOMEM. */
int srv_cache_put_blob(srv_cache_t *c, const char *key, srv_blob_t *blob);
/* Insert or replace; values larger than the whole cache are not kept.
 * 0 or SRV_ENOMEM. */
int srv_cache_put(srv_cache_t *c, const char *key, const char *value, size_t len);
/* srv_cache_put with the value tagged `tag` (NULL: none). */
int srv_cache_put_tagged(srv_cache_t *c, const char *key, const char *tag, const char *value, size_t len);
/* Drop every entry whose value is tagged with one of tags[0..n): a walk
 * over the whole cache; and keep no value with one of those tags for the
 * next minute (cache.c, tombstones). Returns how many went. */
size_t srv_cache_drop_tags(srv_cache_t *c, const char *const *tags, size_t n);
/* How long dropped tags are remembered (default one minute; for tests). */
void srv_cache_set_tombstone_ms(srv_cache_t *c, uint64_t ms);
void srv_cache_stats(srv_cache_t *c, uint64_t *entries, uint64_t *bytes, uint64_t *max_bytes);

#endif
