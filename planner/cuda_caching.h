/* cuda_caching.h - a model of PyTorch's CUDA caching allocator, for what
 * it reserves from the driver (torch.cuda.max_memory_reserved): the
 * simulator drives it under the device's pytorch-cuda allocator
 * (device.h) and reports its reserved peak.
 *
 * As PyTorch documents and implements it (c10/cuda/CUDACachingAllocator),
 * for one stream and without its tuning options:
 *   - a request is rounded up to 512-byte blocks (mp_device_alloc_size);
 *   - requests up to 1 MiB use the small pool, larger ones the large pool;
 *   - a request takes the smallest free cached block of its pool that
 *     holds it (ties: the older segment, the lower offset); a block of the
 *     small pool is split when 512 bytes or more would be left over, one of
 *     the large pool when more than 1 MiB would be;
 *   - with no such block a new segment is reserved: 2 MiB for the small
 *     pool, 20 MiB for requests under 10 MiB, otherwise the request rounded
 *     up to 2 MiB;
 *   - a freed block merges with free neighbours of its segment; segments
 *     are never returned (the cache), so the reserved bytes only grow.
 * The allocated bytes count every block handed out at its size, an unsplit
 * block whole, as torch.cuda.memory_allocated does.
 *
 * Ownership: the caller owns the struct (init / free); no global state.
 */
#ifndef MP_CUDA_CACHING_H
#define MP_CUDA_CACHING_H

#include <stddef.h>
#include <stdint.h>

#define MP_CUDA_SMALL_SIZE 1048576ull     /* largest small-pool request */
#define MP_CUDA_SMALL_SEGMENT 2097152ull  /* a small-pool segment */
#define MP_CUDA_LARGE_SEGMENT 20971520ull /* a segment for requests under 10 MiB */
#define MP_CUDA_MIN_LARGE_ALLOC 10485760ull
#define MP_CUDA_ROUND_LARGE 2097152ull    /* larger segments round up to this */

typedef struct mp_cuda_block_s {
  uint64_t size, offset;
  uint32_t seg;
  int64_t prev, next;  /* neighbours in the segment, -1 at its ends */
  uint8_t free, small, used; /* used: the slot holds a block */
} mp_cuda_block_t;

typedef struct mp_cuda_caching_s {
  mp_cuda_block_t *blocks;
  size_t n_blocks, cap_blocks;
  int64_t *spare;            /* slots of merged-away blocks, for reuse */
  size_t n_spare, cap_spare;
  int64_t *free_set[2];      /* free blocks of each pool ([1] small), sorted by
                              * (size, segment, offset) */
  size_t n_free[2], cap_free[2];
  uint32_t n_segments;
  uint64_t allocated, reserved, peak_allocated, peak_reserved;
} mp_cuda_caching_t;

void mp_cuda_caching_init(mp_cuda_caching_t *c);
void mp_cuda_caching_free(mp_cuda_caching_t *c);

/* The segment PyTorch reserves for a request of `rounded` bytes. */
uint64_t mp_cuda_segment_size(uint64_t rounded);

/* Hand out a block for `bytes`: 0 with *block (-1 for 0 bytes: nothing is
 * allocated), MP_ENOMEM, or MP_EOVERFLOW (reserved bytes past 64 bits). */
int mp_cuda_caching_malloc(mp_cuda_caching_t *c, uint64_t bytes, int64_t *block);
/* Return a block (-1: nothing). */
void mp_cuda_caching_release(mp_cuda_caching_t *c, int64_t block);

#endif
