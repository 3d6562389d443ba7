/* frontier_sampled.c - the memory/time frontier of the solvers that search
 * toward the budget, sampled from their plans: the DP solvers (auto, exact,
 * approx), the prefix DP (chain) and the data-migration solvers (swap,
 * hybrid, layrub). mp__frontier_sampled is their entry in the solver table
 * (solver.h), which mp_frontier() calls (frontier.h).
 *
 * Each budget is its own solve (a greedy search for the migration solvers,
 * a DP portfolio for the others: cand_recompute.c), so the staircase is
 * sampled from single-budget solves with mp_plan(), the same call a plan
 * request makes:
 *
 *   hi  the peak of plain backpropagation under the device (no plan needs
 *       more: keeping everything fits there with no extra time);
 *   lo  the least budget the solver reaches: mp_min_budget() when it plans
 *       there, else the solver's own min_feasible_budget when that plans
 *       (the DP portfolios' always does: cand_recompute.c), else a
 *       bisection between the two ends (MP__BISECT steps);
 *   then MP__SAMPLES budgets spread evenly from lo to hi, each raised to
 *       the next rung of the slack walk's ladder (mp__rung_ceil, at most
 *       1/32 up): a plan's first DP solve is at its budget, and at a rung
 *       that solve is one the lower samples' walks ask too (reuse.c keeps
 *       it), which saves about a quarter of a wide graph's solves.
 *
 * Every feasible solve is a candidate point (its budget, its extra time
 * total - forward - backward); mp_frontier() Pareto-filters the candidates
 * on (budget, extra time). A point keeps the budget it was solved at, not its
 * plan's peak: the solvers are deterministic, so mp_plan() at exactly that
 * budget returns that plan, and the point is a promise the planner keeps.
 * (A DP plan often peaks well below the budget it was solved at, and the
 * plan at that lower peak may cost more: placing the point at the peak
 * would promise what plan does not return.) Between two samples the
 * staircase holds the smaller budget's cost, an upper bound when plans never
 * cost more at a larger budget (the recompute solvers: cand_recompute.c,
 * the slack walk); for those solvers a search (mp__refine) then closes the
 * gaps between neighbouring points of different cost, probing where the
 * plan above a gap starts to answer and bisecting where that says nothing,
 * within o->frontier_solves and o->frontier_ms, and the frontier says whether it
 * found every breakpoint (exact), got within 1% everywhere, or neither.
 * The plans share DP sessions and answers (reuse.c), which changes no
 * answer, and with o->threads > 1 the samples after the least budget are
 * planned on parallel threads (plan_many.c), with the same answers.
 * layrub ignores the budget, so its frontier is the single point of its
 * fixed policy at its simulated peak.
 */
#include "frontier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "solver.h"

/* 16 budgets from lo to hi, and at most 8 bisection steps: about 18 solves
 * when the solver's hint is right, 26 at most. A hybrid solve runs the DP,
 * so on GoogLeNet (exact DP of tens of seconds) this is what the frontier
 * costs; fewer samples would miss the staircase's steps on the deep nets. */
#define MP__SAMPLES 16
#define MP__BISECT 8

/* Where a point's plan may start to be the answer (mp__refine's guess). */
typedef struct {
  uint64_t budget; /* the point's */
  uint64_t from;   /* its guess */
} mp__from_t;

typedef struct {
  const mp__solver_t *self;
  const mp_graph_t *g;
  const mp_plan_options_t *o;
  double t0;
  mp_frontier_t *f;
  size_t cap;
  mp__from_t *from; /* one per point, in the order added (sorted by mp__refine) */
  size_t n_from, cap_from;
  /* mp__refine found a plan that costs more than one at a smaller budget:
   * extra time hi_cost at budget hi against lo_cost at lo < hi */
  int rises;
  uint64_t rise_lo, rise_hi;
  double rise_lo_cost, rise_hi_cost;
} mp__fs_t;

/* The options of every solve: the asked solver at `budget`, as a plan
 * request makes it (sharing the frontier's DP sessions: s->o->reuse). */
static void mp__options(const mp__fs_t *s, uint64_t budget, mp_plan_options_t *po) {
  *po = *s->o;
  po->solver = s->self->id;
  po->budget = budget;
  po->objective = MP_OBJECTIVE_TIME;
  po->accounting = MP_ACCOUNTING_DEFAULT;
  po->swap = (s->self->caps & MP__CAP_SWAPS) != 0;
}

/* Solve at `budget` with the asked solver. The frontier's deadline is
 * shared by all solves: each gets what is left of it. */
static int mp__solve(mp__fs_t *s, uint64_t budget, mp_plan_result_t *r, mp_error_t *err) {
  mp_plan_options_t po;
  int rc;
  mp__options(s, budget, &po);
  if ((rc = mp__plan_stop(s->o, s->t0, err)) != 0) return rc;
  if (s->o->deadline_ms > 0) po.deadline_ms = s->o->deadline_ms - (mp__now_ms() - s->t0);
  return mp_plan(s->g, &po, r, err);
}

/* The least budget from which the plan r at `budget` may be the answer,
 * the search's guess for the breakpoint below it (mp__refine): its
 * simulated peak, below which it does not fit, or, for the plan of the DP
 * solved at the budget, the model peak of that DP's answer, which is the
 * DP's answer from there up to the budget (reuse.c, mp__answer_holds). */
static int mp__add_from(mp__fs_t *s, uint64_t budget, const mp_plan_result_t *r, mp_error_t *err) {
  uint64_t from = r->sim.peak_bytes;
  if (r->has_model && r->source != NULL && r->model_peak > from && r->model_peak <= budget &&
      strcmp(r->source + strlen(r->source) - 3, "-dp") == 0)
    from = r->model_peak;
  if (s->n_from == s->cap_from) {
    size_t nc = s->cap_from ? 2 * s->cap_from : 32;
    mp__from_t *nf = realloc(s->from, nc * sizeof(*nf));
    if (nf == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
    s->from = nf;
    s->cap_from = nc;
  }
  s->from[s->n_from].budget = budget;
  s->from[s->n_from++].from = from;
  return 0;
}

/* A feasible plan as a candidate point at `budget`. */
static int mp__add(mp__fs_t *s, uint64_t budget, const mp_plan_result_t *r, mp_error_t *err) {
  mp_frontier_point_t *p;
  const mp_sim_report_t *m = &r->sim;
  double base = m->time_forward + m->time_backward, extra = m->time_total - base;
  if (!r->feasible || r->schedule == NULL) return 0;
  if (s->f->n_points == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 32;
    mp_frontier_point_t *np = realloc(s->f->points, nc * sizeof(*np));
    if (np == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
    s->f->points = np;
    s->cap = nc;
  }
  if (extra < 0) extra = 0; /* rounding of the event times */
  p = &s->f->points[s->f->n_points++];
  memset(p, 0, sizeof(*p));
  p->budget = budget;
  p->recompute = m->time_recompute;
  p->extra_time = extra;
  p->overhead_pct = base > 0 ? extra / base * 100.0 : 0;
  p->stall = m->time_stall;
  p->peak_bytes = m->peak_bytes;
  p->host_peak_bytes = m->host_peak_bytes;
  p->n_swapped = m->n_swapped;
  p->n_recomputed = m->n_recomputed;
  if (s->f->solver_used == s->f->solver) s->f->solver_used = r->solver_used;
  return mp__add_from(s, budget, r, err);
}

/* Solve at `budget` and keep the plan as a candidate; *feasible says
 * whether it planned, *min_feasible is the solver's hint (0: none). */
static int mp__probe(mp__fs_t *s, uint64_t budget, int *feasible, uint64_t *min_feasible,
                     mp_error_t *err) {
  mp_plan_result_t r;
  int rc = mp__solve(s, budget, &r, err);
  if (rc != 0) return rc;
  *feasible = r.feasible && r.schedule != NULL;
  if (min_feasible) *min_feasible = r.feasible ? 0 : r.min_feasible_budget;
  rc = mp__add(s, budget, &r, err);
  mp_plan_result_free(&r);
  return rc;
}

static int mp__refine(mp__fs_t *s, int *complete, int *within, mp_error_t *err);

static int mp__sampled(mp__fs_t *ps, const mp__solver_t *self, const mp_graph_t *g,
                       const mp_plan_options_t *o, double t0, mp_frontier_t *out, mp_error_t *err) {
  mp_plan_result_t r;
  uint64_t lo, hi, mb, hint = 0;
  int rc, ok = 0, k, hi_probed = 0;

  memset(ps, 0, sizeof(*ps));
  ps->self = self;
  ps->g = g;
  ps->o = o;
  ps->t0 = t0;
  ps->f = out;
  if ((rc = mp_device_check(&o->device, err)) != 0) return rc;
  out->solver = o->solver;
  out->solver_used = o->solver;
  if (self->caps & MP__CAP_SWAPS) {
    out->migrate = 1;
    out->device = o->device;
    out->time_unit_s = mp_device_unit_s(&o->device, g);
  } else {
    snprintf(out->exact_reason, sizeof(out->exact_reason),
             "%s's frontier is sampled: %d budgets, each point the plan at its budget, "
             "an upper bound between them", self->name, MP__SAMPLES);
  }

  /* plain backpropagation under the device: the top of the staircase */
  {
    mp__cand_t all;
    if ((rc = mp__cand_make(g, o, NULL, &all, err)) != 0) return rc;
    hi = all.sim.peak_bytes;
    mp__cand_free(&all);
  }
  out->peak_no_recompute = hi;

  if (!(self->caps & MP__CAP_BUDGET)) {
    /* a fixed policy (layrub): one plan whatever the budget, placed at its
     * peak */
    if ((rc = mp__solve(ps, UINT64_MAX, &r, err)) != 0) return rc;
    rc = mp__add(ps, r.sim.peak_bytes, &r, err);
    mp_plan_result_free(&r);
    return rc;
  }

  if ((rc = mp_min_budget(g, &mb)) != 0) {
    mp_error_set(err, rc, "", "the graph's least budget overflows");
    return rc;
  }
  if (mb > hi) mb = hi;
  lo = hi;
  if ((rc = mp__probe(ps, mb, &ok, &hint, err)) != 0) return rc;
  if (ok) {
    lo = mb;
  } else {
    uint64_t a = mb, b = hi; /* a: infeasible; b: feasible (to be checked) */
    int i;
    if (hint > mb && hint < hi) {
      if ((rc = mp__probe(ps, hint, &ok, NULL, err)) != 0) return rc;
      if (ok) b = hint; else a = hint;
    }
    if (b == hi) {
      if ((rc = mp__probe(ps, hi, &ok, NULL, err)) != 0) return rc;
      hi_probed = 1;
      if (!ok) return 0; /* nothing plans, not even at the top (host budget) */
    }
    if (!(b == hint && ok)) {
      /* bisect for the least budget that plans */
      uint64_t tol = (hi - mb) / 256 + 1;
      for (i = 0; i < MP__BISECT && b - a > tol; i++) {
        uint64_t m = a + (b - a) / 2;
        if ((rc = mp__probe(ps, m, &ok, NULL, err)) != 0) return rc;
        if (ok) b = m; else a = m;
      }
    }
    lo = b;
  }
  /* the samples from lo (solved already) to hi, independent plans: on
   * o->threads threads (plan_many.c) */
  {
    uint64_t buds[MP__SAMPLES];
    mp_plan_result_t res[MP__SAMPLES];
    mp_plan_options_t po;
    size_t n = 0, i;
    for (k = 1; k < MP__SAMPLES; k++) {
      uint64_t bud = mp__rung_ceil(lo + (uint64_t)((double)(hi - lo) * k / (MP__SAMPLES - 1)));
      if (k == MP__SAMPLES - 1 || bud > hi) bud = hi;
      if (bud == lo || (bud == hi && hi_probed) || (n > 0 && buds[n - 1] == bud))
        continue; /* solved already */
      buds[n++] = bud;
    }
    mp__options(ps, 0, &po);
    if ((rc = mp__plan_many(g, &po, t0, buds, n, res, err)) != 0) return rc;
    for (i = 0; i < n; i++) {
      if (rc == 0) rc = mp__add(ps, buds[i], &res[i], err);
      mp_plan_result_free(&res[i]);
    }
  }
  if (rc == 0 && !(self->caps & MP__CAP_SWAPS) && o->frontier_solves > 0) {
    int complete, within;
    if ((rc = mp__refine(ps, &complete, &within, err)) != 0) return rc;
    out->exact = complete;
    if (complete)
      out->exact_reason[0] = '\0';
    else if (ps->rises)
      snprintf(out->exact_reason, sizeof(out->exact_reason),
               "%s's plans cost more at a larger budget (%.6g at %llu B against %.6g at %llu B): "
               "not every budget's plan is on the staircase",
               self->name, ps->rise_hi_cost, (unsigned long long)ps->rise_hi, ps->rise_lo_cost,
               (unsigned long long)ps->rise_lo);
    else if (within)
      snprintf(out->exact_reason, sizeof(out->exact_reason),
               "%s's frontier misses breakpoints its search had no time for: at any budget "
               "the plan's overhead is within 1%% of the staircase's",
               self->name);
    else
      snprintf(out->exact_reason, sizeof(out->exact_reason),
               "%s's frontier misses breakpoints its search had no time for: an upper bound "
               "between its points",
               self->name);
  }
  return rc;
}

static int mp__cmp_budget(const void *a, const void *b) {
  const mp_frontier_point_t *x = a, *y = b;
  return x->budget < y->budget ? -1 : x->budget > y->budget;
}

static int mp__cmp_from(const void *a, const void *b) {
  const mp__from_t *x = a, *y = b;
  return x->budget < y->budget ? -1 : x->budget > y->budget;
}

/* The guess kept for the point at `budget` (s->from sorted), or 0. */
static uint64_t mp__from_at(const mp__fs_t *s, uint64_t budget) {
  size_t lo = 0, hi = s->n_from;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->from[mid].budget < budget) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n_from && s->from[lo].budget == budget ? s->from[lo].from : 0;
}

/* Between two solved budgets a < b whose plans cost c_a > c_b, a budget in
 * between may cost anything from c_b to c_a (plans never cost more at a
 * larger budget: cand_recompute.c). Rounds of probes close these gaps: each
 * round solves one or two budgets in every open gap (in parallel,
 * plan_many.c) until the two ends are one byte apart, so the breakpoint is b
 * itself. Which budgets: b's plan usually answers from where it starts to
 * fit, its simulated peak, or, when the DP solved at b answered, from that
 * answer's model peak (mp__add_from): at that guess g the round solves g
 * and g - 1, which close the gap when the guess is right (g costs c_b, g -
 * 1 costs c_a) and split it otherwise. A guess at or below a says nothing
 * new (the gap's a end is already above it), and the round solves the
 * midpoint instead, so every round narrows every gap it probes. The search
 * is exact whatever the guesses: a gap is closed only by two solved
 * budgets one byte apart. The gaps whose ends differ by more than 1% go
 * first, each with the midpoint below its guess as well, so that a frontier
 * cut short by o->frontier_solves is within 1% of every plan when that much
 * could be done (on ResNet-152 after 920 of its 2,020 plans, where the
 * guesses alone took 1,875 of 1,947); so is a search stopped by
 * o->frontier_ms, which it checks before each round. Sets *complete (every
 * gap closed) and *within (none above 1%). All of this rests on plans never
 * costing more at a larger budget: where two of the plans solved say
 * otherwise, the search sets s->rises and is not complete (a staircase can
 * not hold both, and between two solved budgets of equal cost another may
 * cost less). */
static int mp__refine(mp__fs_t *s, int *complete, int *within, mp_error_t *err) {
  uint64_t *buds = NULL;
  mp_plan_result_t *res = NULL;
  size_t used = 0, cap = 0;
  int rc = 0;
  *complete = *within = 0;
  for (;;) {
    mp_frontier_t *f = s->f;
    size_t i, n = 0, n_wide = 0, n_open = 0;
    mp_plan_options_t po;
    qsort(f->points, f->n_points, sizeof(*f->points), mp__cmp_budget);
    qsort(s->from, s->n_from, sizeof(*s->from), mp__cmp_from);
    for (i = 0; i + 1 < f->n_points; i++) {
      const mp_frontier_point_t *a = &f->points[i], *b = &f->points[i + 1];
      if (!(a->extra_time > b->extra_time) || b->budget - a->budget <= 1) continue;
      n_open++;
      if (!(b->extra_time > 0 && a->extra_time <= 1.01 * b->extra_time)) n_wide++;
    }
    {
      /* the first point that costs more than one at a smaller budget */
      size_t lo = 0;
      for (i = 1; i < f->n_points && !s->rises; i++) {
        if (f->points[i].extra_time > f->points[lo].extra_time) {
          s->rises = 1;
          s->rise_lo = f->points[lo].budget;
          s->rise_lo_cost = f->points[lo].extra_time;
          s->rise_hi = f->points[i].budget;
          s->rise_hi_cost = f->points[i].extra_time;
        } else if (f->points[i].extra_time < f->points[lo].extra_time) {
          lo = i;
        }
      }
    }
    *complete = n_open == 0 && !s->rises;
    *within = n_wide == 0 && !s->rises;
    if (n_open == 0 || used >= s->o->frontier_solves) break;
    if (s->o->frontier_ms > 0 && mp__now_ms() - s->t0 >= s->o->frontier_ms) break;
    if (cap < 3 * n_open) {
      uint64_t *nb = realloc(buds, 3 * n_open * sizeof(*buds));
      mp_plan_result_t *nr;
      if (nb != NULL) buds = nb;
      nr = nb ? realloc(res, 3 * n_open * sizeof(*res)) : NULL;
      if (nr != NULL) res = nr;
      if (nb == NULL || nr == NULL) {
        rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
        break;
      }
      cap = 3 * n_open;
    }
    for (i = 0; i + 1 < f->n_points && used + n < s->o->frontier_solves; i++) {
      const mp_frontier_point_t *a = &f->points[i], *b = &f->points[i + 1];
      int wide = !(b->extra_time > 0 && a->extra_time <= 1.01 * b->extra_time);
      uint64_t g;
      if (!(a->extra_time > b->extra_time) || b->budget - a->budget <= 1) continue;
      if (n_wide > 0 && !wide) continue; /* the gaps above 1% first */
      g = mp__from_at(s, b->budget);
      if (g <= a->budget || g > b->budget) {
        buds[n++] = a->budget + (b->budget - a->budget) / 2;
        continue;
      }
      if (g < b->budget) buds[n++] = g;
      if (g - 1 > a->budget && used + n < s->o->frontier_solves) buds[n++] = g - 1;
      /* a gap above 1%: its midpoint below the guess too, which splits the
       * cost between its ends where the guesses walk down one breakpoint
       * a round (a search cut short then gets within 1% sooner) */
      if (wide && g - 1 > a->budget + 1 && used + n < s->o->frontier_solves)
        buds[n++] = a->budget + (g - 1 - a->budget) / 2;
    }
    used += n;
    mp__options(s, 0, &po);
    if ((rc = mp__plan_stop(s->o, s->t0, err)) != 0) break;
    if ((rc = mp__plan_many(s->g, &po, s->t0, buds, n, res, err)) != 0) break;
    for (i = 0; i < n; i++) {
      if (rc == 0) rc = mp__add(s, buds[i], &res[i], err);
      mp_plan_result_free(&res[i]);
    }
    if (rc != 0) break;
  }
  free(buds);
  free(res);
  return rc;
}

int mp__frontier_sampled(const mp__solver_t *self, const mp_graph_t *g,
                         const mp_plan_options_t *o, double t0, mp_frontier_t *out,
                         mp_error_t *err) {
  /* the plans share DP sessions and answers (reuse.c: no answer changes),
   * on o->threads threads (plan_many.c) */
  mp__many_ctx_t many;
  int rc;
  if ((rc = mp__many_open(g, o, &many, err)) != 0) return rc;
  mp__reuse_use_staircases(many.o.reuse); /* (reuse.c) */
  mp__fs_t fs;
  rc = mp__sampled(&fs, self, g, &many.o, t0, out, err);
  free(fs.from);
  mp__many_close(&many);
  return rc;
}
