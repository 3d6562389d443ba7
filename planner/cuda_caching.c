/* cuda_caching.c - the model of PyTorch's CUDA caching allocator
 * (cuda_caching.h): segments, best-fit cached blocks, splitting, merging. */
#include "cuda_caching.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "error.h"

void mp_cuda_caching_init(mp_cuda_caching_t *c) { memset(c, 0, sizeof(*c)); }

void mp_cuda_caching_free(mp_cuda_caching_t *c) {
  if (c == NULL) return;
  free(c->blocks);
  free(c->spare);
  free(c->free_set[0]);
  free(c->free_set[1]);
  memset(c, 0, sizeof(*c));
}

uint64_t mp_cuda_segment_size(uint64_t rounded) {
  if (rounded <= MP_CUDA_SMALL_SIZE) return MP_CUDA_SMALL_SEGMENT;
  if (rounded < MP_CUDA_MIN_LARGE_ALLOC) return MP_CUDA_LARGE_SEGMENT;
  if (rounded > UINT64_MAX - (MP_CUDA_ROUND_LARGE - 1)) return UINT64_MAX;
  return (rounded + MP_CUDA_ROUND_LARGE - 1) / MP_CUDA_ROUND_LARGE * MP_CUDA_ROUND_LARGE;
}

/* Order of the free sets: size, then segment, then offset. */
static int mp__less(const mp_cuda_block_t *a, const mp_cuda_block_t *b) {
  if (a->size != b->size) return a->size < b->size;
  if (a->seg != b->seg) return a->seg < b->seg;
  return a->offset < b->offset;
}

/* First position in pool p's set whose block is not less than `key`. */
static size_t mp__lower(const mp_cuda_caching_t *c, int p, const mp_cuda_block_t *key) {
  size_t lo = 0, hi = c->n_free[p];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (mp__less(&c->blocks[c->free_set[p][mid]], key))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int mp__set_insert(mp_cuda_caching_t *c, int64_t b) {
  int p = c->blocks[b].small;
  size_t at;
  if (c->n_free[p] == c->cap_free[p]) {
    size_t cap = c->cap_free[p] ? 2 * c->cap_free[p] : 16;
    int64_t *s = realloc(c->free_set[p], cap * sizeof(*s));
    if (s == NULL) return MP_ENOMEM;
    c->free_set[p] = s;
    c->cap_free[p] = cap;
  }
  at = mp__lower(c, p, &c->blocks[b]);
  memmove(c->free_set[p] + at + 1, c->free_set[p] + at, (c->n_free[p] - at) * sizeof(int64_t));
  c->free_set[p][at] = b;
  c->n_free[p]++;
  return 0;
}

static void mp__set_erase(mp_cuda_caching_t *c, int64_t b) {
  int p = c->blocks[b].small;
  size_t at = mp__lower(c, p, &c->blocks[b]);
  if (at < c->n_free[p] && c->free_set[p][at] == b) {
    memmove(c->free_set[p] + at, c->free_set[p] + at + 1, (c->n_free[p] - at - 1) * sizeof(int64_t));
    c->n_free[p]--;
  }
}

/* A new block slot: a spare one, or one more. -1 when out of memory. */
static int64_t mp__slot(mp_cuda_caching_t *c) {
  if (c->n_spare > 0) return c->spare[--c->n_spare];
  if (c->n_blocks == c->cap_blocks) {
    size_t cap = c->cap_blocks ? 2 * c->cap_blocks : 64;
    mp_cuda_block_t *nb = realloc(c->blocks, cap * sizeof(*nb));
    if (nb == NULL) return -1;
    c->blocks = nb;
    c->cap_blocks = cap;
  }
  memset(&c->blocks[c->n_blocks], 0, sizeof(c->blocks[0]));
  return (int64_t)c->n_blocks++;
}

static int mp__retire(mp_cuda_caching_t *c, int64_t b) {
  if (c->n_spare == c->cap_spare) {
    size_t cap = c->cap_spare ? 2 * c->cap_spare : 16;
    int64_t *s = realloc(c->spare, cap * sizeof(*s));
    if (s == NULL) return MP_ENOMEM;
    c->spare = s;
    c->cap_spare = cap;
  }
  c->blocks[b].used = 0;
  c->spare[c->n_spare++] = b;
  return 0;
}

int mp_cuda_caching_malloc(mp_cuda_caching_t *c, uint64_t bytes, int64_t *block) {
  mp_device_t d;
  mp_cuda_block_t key;
  uint64_t rsize, remaining;
  int64_t b;
  int p, split;
  size_t at;

  *block = -1;
  if (bytes == 0) return 0;
  mp_device_init(&d);
  d.allocator = MP_ALLOCATOR_PYTORCH_CUDA;
  rsize = mp_device_alloc_size(&d, bytes);
  p = rsize <= MP_CUDA_SMALL_SIZE;
  memset(&key, 0, sizeof(key));
  key.size = rsize;
  at = mp__lower(c, p, &key);
  if (at < c->n_free[p]) {
    b = c->free_set[p][at];
    mp__set_erase(c, b);
  } else {
    uint64_t seg = p ? MP_CUDA_SMALL_SEGMENT : mp_cuda_segment_size(rsize);
    if (seg > UINT64_MAX - c->reserved) return MP_EOVERFLOW;
    if ((b = mp__slot(c)) < 0) return MP_ENOMEM;
    c->blocks[b].size = seg;
    c->blocks[b].offset = 0;
    c->blocks[b].seg = c->n_segments++;
    c->blocks[b].prev = c->blocks[b].next = -1;
    c->blocks[b].small = (uint8_t)p;
    c->blocks[b].used = 1;
    c->reserved += seg;
    if (c->reserved > c->peak_reserved) c->peak_reserved = c->reserved;
  }
  remaining = c->blocks[b].size - rsize;
  split = p ? remaining >= MP_CUDA_BLOCK_BYTES : remaining > MP_CUDA_SMALL_SIZE;
  if (split) {
    int64_t r = mp__slot(c);
    if (r < 0) return MP_ENOMEM;
    c->blocks[r] = c->blocks[b];
    c->blocks[r].offset = c->blocks[b].offset + rsize;
    c->blocks[r].size = remaining;
    c->blocks[r].prev = b;
    c->blocks[r].free = 1;
    if (c->blocks[b].next >= 0) c->blocks[c->blocks[b].next].prev = r;
    c->blocks[b].next = r;
    c->blocks[b].size = rsize;
    if (mp__set_insert(c, r) != 0) return MP_ENOMEM;
  }
  c->blocks[b].free = 0;
  c->allocated += c->blocks[b].size;
  if (c->allocated > c->peak_allocated) c->peak_allocated = c->allocated;
  *block = b;
  return 0;
}

/* Merge free block `n` (the next neighbour of b) into b. */
static void mp__absorb(mp_cuda_caching_t *c, int64_t b, int64_t n) {
  mp__set_erase(c, n);
  c->blocks[b].size += c->blocks[n].size;
  c->blocks[b].next = c->blocks[n].next;
  if (c->blocks[n].next >= 0) c->blocks[c->blocks[n].next].prev = b;
  mp__retire(c, n); /* a failed push only loses the slot for reuse */
}

void mp_cuda_caching_release(mp_cuda_caching_t *c, int64_t block) {
  int64_t b = block, pv, nx;
  if (b < 0 || (size_t)b >= c->n_blocks || !c->blocks[b].used || c->blocks[b].free) return;
  c->allocated -= c->blocks[b].size;
  c->blocks[b].free = 1;
  nx = c->blocks[b].next;
  if (nx >= 0 && c->blocks[nx].free) mp__absorb(c, b, nx);
  pv = c->blocks[b].prev;
  if (pv >= 0 && c->blocks[pv].free) {
    mp__set_erase(c, pv);
    mp__absorb(c, pv, b);
    b = pv;
  }
  mp__set_insert(c, b); /* out of memory: the block is lost to the cache, a bigger reserve */
}
