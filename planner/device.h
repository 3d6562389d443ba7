/* device.h - the device model used when plans move activations to host
 * memory (data migration, Layrub / vDNN / Capuchin style): copy bandwidths,
 * per-copy latency, how many copy engines run beside the compute queue, the
 * pinned host memory budget, how long one graph time unit lasts, whether
 * a gradient may be written over its dead activation (Layrub's intra-layer
 * reuse), and when the planners issue swap-ins (the prefetch policy).
 *
 * Prefetch (prefetch_lookahead): where the `swap` and `hybrid` solvers place
 * each swap-in of their schedules (swap.h, mp_residency_options_t.lookahead).
 * 0, the default, is just in time: the latest point whose compute still
 * hides the copy, so the value occupies the device as briefly as the copy
 * allows. k > 0 issues each swap-in at the start of the backward step k
 * places before the one that first reads the value (vDNN and Layrub's "one
 * layer ahead" is k = 1): a fixed policy that is easy to reproduce on a real
 * runtime, at the price of a stall when those k steps are too short for the
 * copy and of device memory held earlier when they are longer. The solvers
 * may still hold a swap-in back past a peak (swap.h, swap_in_after), never
 * issue it earlier. Layrub keeps its own policy (k = 1) whatever this says;
 * the simulator times any given schedule as written and ignores it. At most
 * MP_DEVICE_MAX_PREFETCH: a lookahead at least the graph's number of
 * activations already issues every swap-in when the backward pass starts,
 * and the daemon's cache keys have room for four digits (server/jobs.c).
 *
 * Allocator (allocator): how the device's allocator sizes each tensor.
 * MP_ALLOCATOR_EXACT, the default, charges a tensor its bytes.
 * MP_ALLOCATOR_PYTORCH_CUDA charges what PyTorch's CUDA caching allocator
 * hands out for it: a request of 1 to 511 bytes takes 512, a larger one
 * its size rounded up to a multiple of 512 (mp_device_alloc_size); an
 * empty tensor takes nothing. The simulator then charges every allocation
 * it models (values, gradients, saved bytes, workspaces, each input and
 * parameter node, and param_bytes as one block) so rounded, which is what
 * torch.cuda.max_memory_allocated counts. The segments the allocator
 * reserves from the driver (2 MiB for requests up to 1 MiB, 20 MiB for
 * those under 10 MiB, larger ones rounded up to 2 MiB: cuda_caching.h) are
 * not part of the peak.
 *
 * Every field has a documented default (mp_device_init). Times inside the
 * planner stay in the graph's own time unit: a copy of b bytes lasts
 *     (latency_s + b / bandwidth) / seconds_per_unit
 * graph time units (mp_device_copy_time), where seconds_per_unit comes from
 * the device (time_unit_s) or, when that is 0, from the graph's time_unit
 * ("s", "ms", "us", "ns"); any other unit (the Kusumoto graphs' "ref", or
 * none) uses MP_DEVICE_DEFAULT_UNIT_S.
 *
 * Plain data: no ownership, no allocation.
 */
#ifndef MP_DEVICE_H
#define MP_DEVICE_H

#include <stdint.h>

#include "error.h"
#include "graph.h"

/* Defaults: a PCIe 3.0 x16 link with pinned host memory (about 12 GB/s each
 * way, 10 us per copy), two copy engines (one per direction, as on every
 * datacenter GPU), unlimited pinned host memory, intra-layer reuse off. */
#define MP_DEVICE_DEFAULT_BANDWIDTH 12e9  /* bytes per second, each direction */
#define MP_DEVICE_DEFAULT_LATENCY_S 10e-6 /* seconds per copy */
#define MP_DEVICE_DEFAULT_ENGINES 2
/* The largest prefetch lookahead, in backward steps (see the top). */
#define MP_DEVICE_MAX_PREFETCH 9999
/* Seconds per time unit for graphs whose time_unit is not a unit of time.
 * The Kusumoto graphs charge 10 units per convolution and 1 per other op; at
 * 0.25 ms per unit a VGG19 forward pass (190 units) takes 47.5 ms, about what
 * a V100 needs for the batch those graphs were recorded with. */
#define MP_DEVICE_DEFAULT_UNIT_S 2.5e-4

/* How the device's allocator sizes a tensor (see the top). */
typedef enum {
  MP_ALLOCATOR_EXACT = 0,
  MP_ALLOCATOR_PYTORCH_CUDA = 1
} mp_allocator_t;

/* PyTorch's CUDA caching allocator's block granularity. */
#define MP_CUDA_BLOCK_BYTES 512

typedef struct mp_device_s {
  double h2d_bytes_per_s;  /* host-to-device bandwidth, > 0 */
  double d2h_bytes_per_s;  /* device-to-host bandwidth, > 0 */
  double latency_s;        /* fixed cost of each copy, >= 0 */
  int copy_engines;        /* 1: one queue for both directions; 2: one each */
  uint64_t host_bytes;     /* pinned host memory budget; UINT64_MAX: no limit */
  double time_unit_s;      /* seconds per graph time unit; 0: from the graph */
  int intra_layer_reuse;   /* 1: a node flagged grad_inplace may have its
                            * gradient written over its value when the step
                            * that creates the gradient is the value's last
                            * reader (simulator.c says exactly when) */
  uint32_t prefetch_lookahead; /* 0: swap-ins just in time (the default);
                                * k: k backward steps before the first reader
                                * (see the top); <= MP_DEVICE_MAX_PREFETCH */
  mp_allocator_t allocator;    /* how tensors are sized (see the top); default exact */
} mp_device_t;

/* "exact", "pytorch-cuda"; parse: 0 or MP_EINVAL. */
const char *mp_allocator_name(mp_allocator_t a);
int mp_allocator_parse(const char *s, mp_allocator_t *out);

/* The bytes d's allocator charges for a tensor of `bytes` (see the top):
 * `bytes` itself under MP_ALLOCATOR_EXACT. Saturates at UINT64_MAX. */
uint64_t mp_device_alloc_size(const mp_device_t *d, uint64_t bytes);

/* g's constant memory under d's allocator: g->const_bytes, or with
 * rounding param_bytes (one block) and each input and parameter node
 * rounded on its own. 0, or MP_EOVERFLOW when that passes 64 bits. */
int mp_device_const_bytes(const mp_device_t *d, const mp_graph_t *g, uint64_t *out);

/* The defaults above. */
void mp_device_init(mp_device_t *d);

/* 1 when a and b hold the same values in every field, else 0. */
int mp_device_same(const mp_device_t *a, const mp_device_t *b);

/* Check ranges; 0 or MP_EINVAL with err->path "$.device.<field>" naming the
 * field and why (bandwidth not positive or not finite, negative latency,
 * engines not 1 or 2, negative or non-finite time unit, a prefetch lookahead
 * above MP_DEVICE_MAX_PREFETCH: "$.device.prefetch", an unknown allocator:
 * "$.device.allocator"). */
int mp_device_check(const mp_device_t *d, mp_error_t *err);

/* Seconds per graph time unit for g under d (see the top of this file). */
double mp_device_unit_s(const mp_device_t *d, const mp_graph_t *g);

/* Duration of one copy of `bytes`, in graph time units; h2d selects the
 * direction (1: host to device, a swap-in; 0: device to host, a swap-out). */
double mp_device_copy_time(const mp_device_t *d, const mp_graph_t *g, uint64_t bytes, int h2d);

#endif
