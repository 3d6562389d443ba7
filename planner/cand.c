/* cand.c - candidate plans, the currency every solver pays in: a strategy
 * (or keeping everything) built into a schedule and replayed by the
 * simulator (mp__cand_make), the order that picks the best of several
 * (mp__cand_better, mp__cand_pick), and moving the chosen one into a plan
 * result (mp__cand_adopt; mp_plan_result_free releases results). Also the
 * clock and the cancel/deadline check every search polls (mp__now_ms,
 * mp__plan_stop), and mp__simulate_planned, which turns a schedule the
 * simulator rejects into a reported planner bug. Declared in
 * plan_internal.h.
 */
#include "plan_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- The clock and the stop check --------------------------------------- */

double mp__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int mp__plan_stop(const mp_plan_options_t *o, double t0, mp_error_t *err) {
  if (o->should_stop && o->should_stop(o->stop_arg))
    return mp_error_set(err, MP_ECANCELED, "", "planning was cancelled");
  if (o->deadline_ms > 0 && mp__now_ms() - t0 > o->deadline_ms)
    return mp_error_set(err, MP_ETIMEDOUT, "", "planning passed its deadline of %.0f ms",
                        o->deadline_ms);
  return 0;
}

/* ---- Candidates ----------------------------------------------------------- */

void mp__cand_free(mp__cand_t *c) {
  mp_strategy_free(c->strategy);
  mp_schedule_free(c->schedule);
  mp_sim_report_free(&c->sim);
  memset(c, 0, sizeof(*c));
}

int mp__simulate_planned(const mp_graph_t *g, const mp_device_t *dev, const mp_schedule_t *s,
                         const char *what, mp_sim_report_t *out, mp_error_t *err) {
  mp_sim_options_t so;
  mp_error_t serr;
  int rc;
  so.device = dev;
  rc = mp_simulate_ex(g, s, &so, out, &serr);
  if (rc == MP_ESCHEDULE)
    return mp_error_set(err, MP_ESCHEDULE, "", "planner bug: the %s schedule does not simulate: %s",
                        what, serr.message);
  if (rc != 0) return mp_error_set(err, rc, "", "%s", serr.message);
  return 0;
}

int mp__cand_make(const mp_graph_t *g, const mp_plan_options_t *o, mp_strategy_t *st,
                  mp__cand_t *c, mp_error_t *err) {
  int rc;
  memset(c, 0, sizeof(*c));
  c->strategy = st;
  rc = st ? mp_schedule_from_strategy(g, st, &c->schedule) : mp_schedule_store_all(g, &c->schedule);
  if (rc != 0) {
    mp__cand_free(c);
    return mp_error_set(err, rc, "", "cannot build the schedule (%s)", mp_err_name(rc));
  }
  if ((rc = mp__simulate_planned(g, &o->device, c->schedule, "planned", &c->sim, err)) != 0)
    mp__cand_free(c);
  return rc;
}

int mp__cand_fits(const mp_plan_options_t *o, const mp_sim_report_t *s) {
  return s->peak_bytes <= o->budget;
}

int mp__cand_better(const mp_plan_options_t *o, const mp__cand_t *a, const mp__cand_t *best) {
  int fa = mp__cand_fits(o, &a->sim), fb;
  if (best->schedule == NULL) return 1;
  fb = mp__cand_fits(o, &best->sim);
  if (fa != fb) return fa;
  if (!fa || o->objective == MP_OBJECTIVE_MEMORY) {
    if (a->sim.peak_bytes != best->sim.peak_bytes) return a->sim.peak_bytes < best->sim.peak_bytes;
    return a->sim.time_recompute < best->sim.time_recompute;
  }
  if (a->sim.time_recompute != best->sim.time_recompute)
    return a->sim.time_recompute < best->sim.time_recompute;
  return a->sim.peak_bytes < best->sim.peak_bytes;
}

void mp__cand_pick_init(mp__cand_pick_t *p, const mp_plan_options_t *o) {
  memset(p, 0, sizeof(*p));
  p->o = o;
  p->least_peak = UINT64_MAX;
}

void mp__cand_pick(void *arg, mp__cand_t *c) {
  mp__cand_pick_t *p = arg;
  mp__cand_t home;
  if (p->home != NULL) {
    int rc;
    if (p->home_rc != 0) return;
    rc = mp__cand_home(p, c, &home, &p->home_err);
    mp__cand_free(c);
    if (rc != 0) {
      p->home_rc = rc;
      return;
    }
    c = &home;
  }
  if (c->sim.peak_bytes < p->least_peak) p->least_peak = c->sim.peak_bytes;
  if (mp__cand_better(p->o, c, &p->best)) {
    mp__cand_free(&p->best);
    p->best = *c;
    memset(c, 0, sizeof(*c));
  }
  if (c == &home) mp__cand_free(&home);
}

/* ---- Plan results --------------------------------------------------------- */

/* Checkpoints of a strategy: activations with an activation successor in a
 * later segment, and recompute:false nodes outside the last segment. */
static int mp__checkpoints(const mp_graph_t *g, const mp_strategy_t *st, mp_plan_result_t *r) {
  size_t v, k, n = 0;
  r->n_segments = st ? st->n_segments : 1;
  if (st == NULL) return 0;
  r->checkpoints = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(uint32_t));
  if (r->checkpoints == NULL) return MP_ENOMEM;
  for (v = 0; v < g->n_nodes; v++) {
    int keep = 0;
    if (st->seg[v] == MP_SEG_NONE || st->seg[v] + 1 == st->n_segments) continue;
    if (!g->nodes[v].recompute) keep = 1;
    for (k = g->succ_off[v]; k < g->succ_off[v + 1] && !keep; k++)
      if (st->seg[g->succ[k]] != MP_SEG_NONE && st->seg[g->succ[k]] > st->seg[v]) keep = 1;
    if (keep) r->checkpoints[n++] = (uint32_t)v;
  }
  r->n_checkpoints = n;
  return 0;
}

int mp__cand_adopt(const mp_graph_t *g, mp__cand_t *c, mp_plan_result_t *r) {
  int rc = mp__checkpoints(g, c->strategy, r);
  if (rc != 0) {
    mp__cand_free(c);
    return rc;
  }
  r->schedule = c->schedule;
  r->sim = c->sim;
  c->schedule = NULL;
  memset(&c->sim, 0, sizeof(c->sim));
  mp__cand_free(c);
  return 0;
}

void mp_plan_result_free(mp_plan_result_t *r) {
  if (r == NULL) return;
  free(r->checkpoints);
  free(r->swapped);
  mp_schedule_free(r->schedule);
  mp_sim_report_free(&r->sim);
  memset(r, 0, sizeof(*r));
}
