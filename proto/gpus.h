/* gpus.h - the device catalogue: GPU models by name ("a100-40gb"), each
 * with its total memory and the part of it a training job cannot plan
 * with: what the CUDA driver and context take before the first tensor
 * (context_bytes) and a margin for the caching allocator's rounding and
 * fragmentation (reserve_bytes). A job's budget on that GPU is
 * usable_bytes = total_bytes - context_bytes - reserve_bytes.
 *
 * The shipped defaults (mp_gpus_default) carry the source of each figure;
 * docs/devices.md explains them. A catalogue file (`--devices FILE` of the
 * daemon and the CLI) replaces them:
 *
 *   {"devices": [{"name": "a100-40gb", "total_bytes": "40960MiB",
 *                 "context_bytes": "896MiB", "reserve_bytes": "2%",
 *                 "source": "..."}, ...]}
 *
 * Sizes are budgets (integers of bytes or unit strings, units.h);
 * reserve_bytes may also be a percentage of total_bytes ("2%"). Names are
 * 1-63 characters of [a-z0-9._-], unique. Unknown keys are refused.
 *
 * Pure data: no I/O but mp_gpus_load_file. A catalogue owns its entries;
 * release it with mp_gpus_free (safe on a zeroed one). */
#ifndef MP_GPUS_H
#define MP_GPUS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MP_GPU_NAME_MAX 64
#define MP_GPUS_MAX 256 /* entries in one catalogue */

typedef struct mp_gpu_s {
  char name[MP_GPU_NAME_MAX];
  uint64_t total_bytes;    /* the memory the driver reports (nvidia-smi's total) */
  uint64_t context_bytes;  /* driver reservation and CUDA context */
  uint64_t reserve_bytes;  /* the allocator's margin */
  char *source;            /* where the figures come from (owned, may be NULL) */
} mp_gpu_t;

typedef struct mp_gpus_s {
  mp_gpu_t *gpus;
  size_t n;
} mp_gpus_t;

/* The usable bytes of a GPU: total less context and reserve (0 when those
 * take it all). */
uint64_t mp_gpu_usable(const mp_gpu_t *g);

/* The shipped catalogue. 0 or MP_ENOMEM. */
int mp_gpus_default(mp_gpus_t *out);

/* A catalogue from its JSON (the form above); `path` names the document in
 * errors ("$" or the file's name). 0, MP_EINVAL naming the field at fault,
 * MP_ELIMIT past MP_GPUS_MAX entries, or MP_ENOMEM. */
int mp_gpus_from_json(const json_t *v, mp_gpus_t *out, mp_error_t *err);

/* mp_gpus_from_json on a file's contents. */
int mp_gpus_load_file(const char *path, mp_gpus_t *out, mp_error_t *err);

/* The entry named `name`, or NULL. */
const mp_gpu_t *mp_gpus_find(const mp_gpus_t *c, const char *name);

/* One entry as JSON: {"name", "total_bytes", "context_bytes",
 * "reserve_bytes", "usable_bytes", "source"?}. New reference or NULL. */
json_t *mp_gpu_to_json(const mp_gpu_t *g);

/* The whole catalogue: {"devices": [entry, ...]}. New reference or NULL. */
json_t *mp_gpus_to_json(const mp_gpus_t *c);

void mp_gpus_free(mp_gpus_t *c);

#endif
