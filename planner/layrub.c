/* layrub.c - Layrub's fixed data-migration policy (Jin et al., TACO 2018;
 * docs/algorithms.md, "layrub"), to reproduce it and compare memplan's plans
 * against it. It has no planner and no budget:
 *  - inter-layer: every eligible activation (every value some backward step
 *    reads) is offloaded to pinned host memory right after its last forward
 *    reader, with a sync (a `wait`) after each layer's offloads, and
 *    prefetched one layer ahead: its swap-in is issued at the start of the
 *    backward step before the one that first reads it; nothing is
 *    recomputed. That one-step prefetch is Layrub's own policy: the
 *    device's prefetch_lookahead (device.h), which places the swap and
 *    hybrid solvers' swap-ins, does not change it (the answer still echoes
 *    the device as asked);
 *  - intra-layer: a gradient is written over its dead activation where the
 *    graph allows it (the simulator's intra-layer reuse, forced on).
 * The plan is feasible iff its simulated peak fits the budget and its host
 * peak the host budget. mp__plan_layrub is the layrub entry of the solver
 * table (solver.h); ownership as in plan.h. mp__layrub_mig (swap.h) builds
 * the policy's plan under any device: hybrid offers it as a candidate, so
 * that hybrid is never worse than Layrub under the same device.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"
#include "swap.h"

static void mp__layrub_mark(void *arg, uint32_t u) { ((uint8_t *)arg)[u] = MP_RES_SWAP; }

int mp__layrub_mig(const mp_graph_t *g, const mp_plan_options_t *o, const mp_device_t *dev,
                   mp__mig_t *m, mp_error_t *err) {
  mp_residency_options_t ro;
  size_t v;
  int rc;

  memset(m, 0, sizeof(*m));
  m->dec = calloc(g->n_nodes ? g->n_nodes : 1, 1);
  if (m->dec == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  for (v = 0; v < g->n_nodes; v++)
    if (g->nodes[v].kind == MP_KIND_ACTIVATION)
      mp__bwd_reads_each(g, (uint32_t)v, mp__layrub_mark, m->dec);
  mp_residency_options_init(&ro);
  ro.device = dev;
  ro.lookahead = 1; /* Layrub's, whatever dev->prefetch_lookahead says */
  ro.sync_swap_out = 1;
  if ((rc = mp_schedule_from_residency(g, m->dec, &ro, &m->schedule, err)) != 0) goto fail;
  if ((rc = mp__simulate_planned(g, dev, m->schedule, "layrub", &m->sim, err)) != 0) goto fail;
  m->n_decisions = m->sim.n_swapped;
  m->feasible = m->sim.peak_bytes <= o->budget && m->sim.host_peak_bytes <= dev->host_bytes;
  /* Its only plan: the least budget it meets is its peak, unless the host
   * budget rules it out at any device budget. */
  m->least_peak = m->sim.host_peak_bytes <= dev->host_bytes ? m->sim.peak_bytes : UINT64_MAX;
  return 0;
fail:
  mp__mig_free(m);
  return rc;
}

int mp__plan_layrub(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                    double t0, mp_plan_result_t *r, mp_error_t *err) {
  mp_device_t dev = o->device;
  mp__mig_t m;
  int rc;

  r->solver_used = self->id;
  mp__progress_phase(o->should_stop, o->stop_arg, "swap", -1);
  if ((rc = mp__plan_stop(o, t0, err)) != 0) return rc;
  dev.intra_layer_reuse = 1;
  if ((rc = mp__layrub_mig(g, o, &dev, &m, err)) != 0) return rc;
  if (m.feasible) r->source = "layrub";
  if ((rc = mp__mig_adopt(g, &m, r)) != 0) rc = mp_error_set(err, rc, "", "out of memory");
  mp__mig_free(&m);
  return rc;
}
