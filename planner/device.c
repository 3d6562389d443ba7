/* device.c - defaults, range checks and copy durations of the device model
 * (device.h). */
#include "device.h"

#include <math.h>
#include <string.h>

void mp_device_init(mp_device_t *d) {
  memset(d, 0, sizeof(*d));
  d->h2d_bytes_per_s = MP_DEVICE_DEFAULT_BANDWIDTH;
  d->d2h_bytes_per_s = MP_DEVICE_DEFAULT_BANDWIDTH;
  d->latency_s = MP_DEVICE_DEFAULT_LATENCY_S;
  d->copy_engines = MP_DEVICE_DEFAULT_ENGINES;
  d->host_bytes = UINT64_MAX;
  d->time_unit_s = 0;
  d->intra_layer_reuse = 0;
  d->prefetch_lookahead = 0; /* just in time */
  d->allocator = MP_ALLOCATOR_EXACT;
}

const char *mp_allocator_name(mp_allocator_t a) {
  return a == MP_ALLOCATOR_PYTORCH_CUDA ? "pytorch-cuda" : "exact";
}

int mp_allocator_parse(const char *s, mp_allocator_t *out) {
  if (strcmp(s, "exact") == 0)
    *out = MP_ALLOCATOR_EXACT;
  else if (strcmp(s, "pytorch-cuda") == 0)
    *out = MP_ALLOCATOR_PYTORCH_CUDA;
  else
    return MP_EINVAL;
  return 0;
}

uint64_t mp_device_alloc_size(const mp_device_t *d, uint64_t bytes) {
  if (d == NULL || d->allocator != MP_ALLOCATOR_PYTORCH_CUDA || bytes == 0) return bytes;
  if (bytes > UINT64_MAX - (MP_CUDA_BLOCK_BYTES - 1)) return UINT64_MAX;
  return (bytes + MP_CUDA_BLOCK_BYTES - 1) / MP_CUDA_BLOCK_BYTES * MP_CUDA_BLOCK_BYTES;
}

int mp_device_const_bytes(const mp_device_t *d, const mp_graph_t *g, uint64_t *out) {
  uint64_t c;
  size_t v;
  if (d == NULL || d->allocator == MP_ALLOCATOR_EXACT) {
    *out = g->const_bytes;
    return 0;
  }
  c = mp_device_alloc_size(d, g->param_bytes);
  for (v = 0; v < g->n_nodes; v++)
    if (g->nodes[v].kind != MP_KIND_ACTIVATION &&
        __builtin_add_overflow(c, mp_device_alloc_size(d, g->nodes[v].bytes), &c))
      return MP_EOVERFLOW;
  *out = c;
  return 0;
}

int mp_device_same(const mp_device_t *a, const mp_device_t *b) {
  return a->h2d_bytes_per_s == b->h2d_bytes_per_s && a->d2h_bytes_per_s == b->d2h_bytes_per_s &&
         a->latency_s == b->latency_s && a->copy_engines == b->copy_engines &&
         a->host_bytes == b->host_bytes && a->time_unit_s == b->time_unit_s &&
         a->intra_layer_reuse == b->intra_layer_reuse &&
         a->prefetch_lookahead == b->prefetch_lookahead && a->allocator == b->allocator;
}

int mp_device_check(const mp_device_t *d, mp_error_t *err) {
  if (!isfinite(d->h2d_bytes_per_s) || d->h2d_bytes_per_s <= 0)
    return mp_error_set(err, MP_EINVAL, "$.device.h2d_bandwidth",
                        "must be a positive number of bytes per second");
  if (!isfinite(d->d2h_bytes_per_s) || d->d2h_bytes_per_s <= 0)
    return mp_error_set(err, MP_EINVAL, "$.device.d2h_bandwidth",
                        "must be a positive number of bytes per second");
  if (!isfinite(d->latency_s) || d->latency_s < 0)
    return mp_error_set(err, MP_EINVAL, "$.device.latency",
                        "must be a non-negative number of seconds");
  if (d->copy_engines != 1 && d->copy_engines != 2)
    return mp_error_set(err, MP_EINVAL, "$.device.copy_engines",
                        "must be 1 (one queue for both directions) or 2 (one each)");
  if (!isfinite(d->time_unit_s) || d->time_unit_s < 0)
    return mp_error_set(err, MP_EINVAL, "$.device.time_unit_seconds",
                        "must be a non-negative number of seconds (0: from the graph)");
  if (d->prefetch_lookahead > MP_DEVICE_MAX_PREFETCH)
    return mp_error_set(err, MP_EINVAL, "$.device.prefetch",
                        "must be \"jit\" (just in time) or a number of backward steps from 1 to %d",
                        MP_DEVICE_MAX_PREFETCH);
  if (d->allocator != MP_ALLOCATOR_EXACT && d->allocator != MP_ALLOCATOR_PYTORCH_CUDA)
    return mp_error_set(err, MP_EINVAL, "$.device.allocator", "must be \"exact\" or \"pytorch-cuda\"");
  return 0;
}

double mp_device_unit_s(const mp_device_t *d, const mp_graph_t *g) {
  const char *u = g->time_unit ? g->time_unit : "";
  if (d->time_unit_s > 0) return d->time_unit_s;
  if (strcmp(u, "s") == 0) return 1.0;
  if (strcmp(u, "ms") == 0) return 1e-3;
  if (strcmp(u, "us") == 0) return 1e-6;
  if (strcmp(u, "ns") == 0) return 1e-9;
  return MP_DEVICE_DEFAULT_UNIT_S;
}

double mp_device_copy_time(const mp_device_t *d, const mp_graph_t *g, uint64_t bytes, int h2d) {
  double bw = h2d ? d->h2d_bytes_per_s : d->d2h_bytes_per_s;
  return (d->latency_s + (double)bytes / bw) / mp_device_unit_s(d, g);
}
