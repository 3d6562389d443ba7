/* maximize.c - mp_maximize (maximize.h): the largest value of a dimension
 * whose plan fits, searched over bound graphs.
 *
 * Each probe binds the graph at one value and learns whether it fits. For
 * the DP solvers (the default accounting, the time objective, no data
 * migration) the set of budgets with a plan is an interval from the plan's
 * least feasible budget on (cand_recompute.c), so a probe needs only that
 * least budget: mp_plan at budget 0, which never runs the search toward a
 * generous budget, by far the dearest part of a plan on wide lattices. Those
 * least budgets also steer the search: they grow almost linearly in a batch
 * dimension, so the next value tried is where the line through the last two
 * probes crosses the budget (kept strictly inside the bracket, and halving
 * it whenever a guess did not), and the answer is usually bracketed by a
 * guess and its successor within a few probes. Only the answer is then
 * planned at the budget. Should that plan not fit (the interval property
 * broken), the search goes on below it with whole plans. Every other solver
 * is probed with whole plans at the budget, doubling then bisecting.
 */
#include "maximize.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "solver.h"

void mp_maximize_free(mp_maximize_t *m) {
  if (m == NULL) return;
  mp_graph_free(m->graph);
  mp_plan_result_free(&m->plan);
  memset(m, 0, sizeof(*m));
}

static double mp__ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One probe: g at dim = v. */
typedef struct {
  int64_t v;
  int fits;
  int overflows;      /* the binding's sizes pass 64 bits: fits nothing */
  uint64_t least;     /* the least feasible budget at v (0: unknown) */
  mp_graph_t *g;
  mp_plan_result_t r; /* the plan at the budget (whole probes and the answer) */
} mp__probe_t;

static void mp__probe_free(mp__probe_t *p) {
  mp_graph_free(p->g);
  mp_plan_result_free(&p->r);
  memset(p, 0, sizeof(*p));
}

/* The search's fixed inputs. */
typedef struct {
  const mp_graph_t *g;
  const mp_binding_t *others;
  const char *dim;
  const mp_plan_options_t *o;
  const mp_limits_t *lim;
  int by_least;       /* probes ask for the least feasible budget only */
  size_t *n_plans;
} mp__search_t;

/* Whether a feasible plan at o->budget exists exactly when the budget is at
 * least the plan's least feasible budget: the DP solvers' portfolio. */
static int mp__interval_solver(const mp_plan_options_t *o) {
  const mp__solver_t *e = mp__solver_get(o->solver);
  return e != NULL && (e->caps & MP__CAP_REFERENCE) && !(e->caps & MP__CAP_SWAPS) && !o->swap &&
         o->accounting == MP_ACCOUNTING_DEFAULT && o->objective == MP_OBJECTIVE_TIME;
}

/* Bind g at v into p->g (p->overflows when its sizes pass 64 bits). */
static int mp__bind(const mp__search_t *s, int64_t v, mp__probe_t *p, mp_error_t *err) {
  mp_binding_t bv = *s->others;
  mp_error_t e2;
  int rc;
  memset(p, 0, sizeof(*p));
  p->v = v;
  mp_error_clear(&e2);
  if ((rc = mp_binding_set(&bv, s->dim, v, err)) != 0) return rc;
  rc = mp_graph_bind(s->g, &bv, s->lim, &p->g, &e2);
  if (rc == MP_EOVERFLOW) {
    /* a size or a total past 2^64 bytes fits no budget */
    p->overflows = 1;
    return 0;
  }
  if (rc != 0 && err) *err = e2;
  return rc;
}

/* The plan of p->g at the budget into p->r; p->fits. */
static int mp__plan_at_budget(const mp__search_t *s, mp__probe_t *p, mp_error_t *err) {
  int rc;
  (*s->n_plans)++;
  if ((rc = mp_plan(p->g, s->o, &p->r, err)) != 0) return rc;
  p->fits = p->r.feasible && p->r.schedule != NULL;
  if (!p->fits) p->least = p->r.min_feasible_budget;
  return 0;
}

static int mp__probe(const mp__search_t *s, int64_t v, mp__probe_t *p, mp_error_t *err) {
  mp_plan_options_t lo;
  mp_plan_result_t r;
  int rc;
  if ((rc = mp__bind(s, v, p, err)) != 0 || p->overflows) {
    if (rc != 0) mp__probe_free(p);
    return rc;
  }
  if (!s->by_least) {
    if ((rc = mp__plan_at_budget(s, p, err)) != 0) mp__probe_free(p);
    return rc;
  }
  lo = *s->o;
  lo.budget = 0;
  (*s->n_plans)++;
  if ((rc = mp_plan(p->g, &lo, &r, err)) != 0) {
    mp__probe_free(p);
    return rc;
  }
  if (r.feasible) {
    p->least = 0; /* nothing to hold: every budget fits */
    p->fits = 1;
  } else if (r.min_feasible_budget == 0) {
    /* unknown (a deadline ended the search): plan at the budget instead */
    mp_plan_result_free(&r);
    if ((rc = mp__plan_at_budget(s, p, err)) != 0) mp__probe_free(p);
    return rc;
  } else {
    p->least = r.min_feasible_budget;
    p->fits = p->least <= s->o->budget;
  }
  mp_plan_result_free(&r);
  if (!p->fits) {
    /* the answer's probes keep only the figures */
    mp_graph_free(p->g);
    p->g = NULL;
  }
  return 0;
}

/* The largest value whose least feasible budget the line through a and b
 * (a.v < b.v, both least budgets known) puts within the budget; -1 when the
 * line does not rise. */
static int64_t mp__cross(const mp__probe_t *a, const mp__probe_t *b, uint64_t budget) {
  long double slope, x;
  if (a->least == 0 || b->least == 0 || b->least <= a->least) return -1;
  slope = ((long double)b->least - (long double)a->least) / (long double)(b->v - a->v);
  x = (long double)a->v + ((long double)budget - (long double)a->least) / slope;
  if (x < 0) return 0;
  if (x > (long double)MP_DIM_VALUE_MAX) return MP_DIM_VALUE_MAX;
  return (int64_t)x;
}

int mp_maximize(const mp_graph_t *g, const mp_binding_t *others, const char *dim, int64_t limit,
                const mp_plan_options_t *o, const mp_limits_t *lim, mp_maximize_t *out, mp_error_t *err) {
  mp__probe_t lo, hi, prev, mid, bad;
  mp__search_t s;
  double t0 = mp__ms();
  int64_t min;
  long di;
  size_t i;
  int rc, halve = 0, guessed = 0;

  memset(out, 0, sizeof(*out));
  memset(&lo, 0, sizeof(lo));
  memset(&hi, 0, sizeof(hi));
  memset(&prev, 0, sizeof(prev));
  memset(&bad, 0, sizeof(bad));
  di = mp_graph_dims_find(g->sym, dim);
  if (di < 0)
    return mp_error_set(err, MP_EINVAL, "$.maximize", "the graph has no dimension %.40s to maximize%s", dim,
                        g->sym && g->sym->n_dims ? "" : " (it has no symbolic dimensions)");
  for (i = 0; i < others->n; i++)
    if (strcmp(others->names[i], dim) == 0) {
      char path[MP_ERROR_PATH_MAX];
      snprintf(path, sizeof(path), "%s%s%s", others->base, others->base[0] == '$' ? "." : " ", dim);
      return mp_error_set(err, MP_EINVAL, path, "%s is maximized, so it cannot be bound too", dim);
    }
  if ((rc = mp_graph_dims_monotone(g, (size_t)di, err)) != 0) return rc;
  if (limit <= 0 || limit > MP_DIM_VALUE_MAX) limit = MP_DIM_VALUE_MAX;
  snprintf(out->dim, sizeof(out->dim), "%s", dim);
  out->limit = limit;
  min = g->sym->dims[di].min;
  if (limit < min)
    return mp_error_set(err, MP_EINVAL, "$.max_value", "the limit %lld is below %s's min %lld", (long long)limit,
                        dim, (long long)min);
  s.g = g;
  s.others = others;
  s.dim = dim;
  s.o = o;
  s.lim = lim;
  s.by_least = mp__interval_solver(o);
  s.n_plans = &out->n_plans;

again:
  halve = guessed = 0;
  /* The min first: when it does not fit, nothing does. */
  if ((rc = mp__probe(&s, min, &lo, err)) != 0) goto done;
  if (!lo.fits) {
    hi = lo;
    memset(&lo, 0, sizeof(lo));
  } else {
    /* Grow until a value does not fit or the limit fits: double, or go to
     * just past where the last two least budgets' line crosses the budget. */
    for (;;) {
      int64_t v = lo.v > limit / 2 ? limit : 2 * lo.v, x;
      if (!guessed && prev.v != 0 && (x = mp__cross(&prev, &lo, o->budget)) > lo.v) {
        /* one past the crossing, at most the limit; a guess that fits is
         * followed by a doubling, so the growth stays geometric */
        v = x < limit ? x + 1 : limit;
        guessed = 1;
      } else {
        guessed = 0;
      }
      if (v == lo.v) break; /* lo is the limit */
      if ((rc = mp__probe(&s, v, &hi, err)) != 0) goto done;
      if (!hi.fits) break;
      mp__probe_free(&prev);
      prev = lo;
      lo = hi;
      memset(&hi, 0, sizeof(hi));
    }
    /* Lo fits, hi (when set) does not: narrow by the crossing of their
     * least budgets' line, kept inside, or by halving after a guess that
     * left the bracket more than half its width. */
    while (hi.v != 0 && hi.v - lo.v > 1) {
      int64_t v = lo.v + (hi.v - lo.v) / 2, x, w = hi.v - lo.v;
      if (!halve && (x = mp__cross(&lo, &hi, o->budget)) >= 0) {
        v = x;
        if (v <= lo.v) v = lo.v + 1;
        if (v >= hi.v) v = hi.v - 1;
      }
      if ((rc = mp__probe(&s, v, &mid, err)) != 0) goto done;
      if (mid.fits) {
        mp__probe_free(&lo);
        lo = mid;
      } else {
        mp__probe_free(&hi);
        hi = mid;
      }
      halve = !halve && 2 * (hi.v - lo.v) > w;
    }
  }
  if (lo.v != 0 && s.by_least) {
    /* Plan the answer at the budget. */
    if ((rc = mp__plan_at_budget(&s, &lo, err)) != 0) goto done;
    if (!lo.fits) {
      /* The least budget said it fits and the plan says not: this value is
       * the next one that does not fit, and the search runs again below
       * it with whole plans. */
      mp__probe_free(&hi);
      mp__probe_free(&prev);
      bad = lo;
      memset(&lo, 0, sizeof(lo));
      s.by_least = 0;
      if (bad.v > min) {
        limit = bad.v - 1;
        goto again;
      }
    }
  }
  if (hi.v == 0 && bad.v != 0) {
    hi = bad;
    memset(&bad, 0, sizeof(bad));
  }
  out->value = lo.v;
  out->graph = lo.g;
  out->plan = lo.r;
  memset(&lo, 0, sizeof(lo));
  if (hi.v != 0) {
    out->next_value = hi.v;
    out->next_overflows = hi.overflows;
    out->next_min_feasible_budget = hi.overflows ? 0 : hi.least;
  }
  rc = 0;
done:
  mp__probe_free(&lo);
  mp__probe_free(&hi);
  mp__probe_free(&prev);
  mp__probe_free(&bad);
  out->solve_ms = mp__ms() - t0;
  if (rc != 0) mp_maximize_free(out);
  return rc;
}
