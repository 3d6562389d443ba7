/* maximize.c - mp_maximize (maximize.h): the largest value of a dimension
 * whose plan fits, by doubling then bisection over bound graphs. */
#include "maximize.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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

/* One probe: g at dim = v planned at the budget. */
typedef struct {
  int64_t v;
  int fits;
  int overflows;      /* the binding's sizes pass 64 bits: fits nothing */
  mp_graph_t *g;
  mp_plan_result_t r;
} mp__probe_t;

static void mp__probe_free(mp__probe_t *p) {
  mp_graph_free(p->g);
  mp_plan_result_free(&p->r);
  memset(p, 0, sizeof(*p));
}

static int mp__probe(const mp_graph_t *g, const mp_binding_t *b, const char *dim, int64_t v,
                     const mp_plan_options_t *o, const mp_limits_t *lim, mp__probe_t *p, size_t *n_plans,
                     mp_error_t *err) {
  mp_binding_t bv = *b;
  mp_error_t e2;
  int rc;
  memset(p, 0, sizeof(*p));
  p->v = v;
  mp_error_clear(&e2);
  if ((rc = mp_binding_set(&bv, dim, v, err)) != 0) return rc;
  rc = mp_graph_bind(g, &bv, lim, &p->g, &e2);
  if (rc == MP_EOVERFLOW) {
    /* a size or a total past 2^64 bytes fits no budget */
    p->overflows = 1;
    return 0;
  }
  if (rc != 0) {
    if (err) *err = e2;
    return rc;
  }
  (*n_plans)++;
  if ((rc = mp_plan(p->g, o, &p->r, err)) != 0) {
    mp__probe_free(p);
    return rc;
  }
  p->fits = p->r.feasible && p->r.schedule != NULL;
  return 0;
}

int mp_maximize(const mp_graph_t *g, const mp_binding_t *others, const char *dim, int64_t limit,
                const mp_plan_options_t *o, const mp_limits_t *lim, mp_maximize_t *out, mp_error_t *err) {
  mp__probe_t lo, hi, mid;
  double t0 = mp__ms();
  long di;
  size_t i;
  int rc;

  memset(out, 0, sizeof(*out));
  memset(&lo, 0, sizeof(lo));
  memset(&hi, 0, sizeof(hi));
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
  if (limit < g->sym->dims[di].min)
    return mp_error_set(err, MP_EINVAL, "$.max_value", "the limit %lld is below %s's min %lld", (long long)limit,
                        dim, (long long)g->sym->dims[di].min);

  /* The min first: when it does not fit, nothing does. */
  if ((rc = mp__probe(g, others, dim, g->sym->dims[di].min, o, lim, &lo, &out->n_plans, err)) != 0) goto done;
  if (!lo.fits) {
    hi = lo;
    memset(&lo, 0, sizeof(lo));
  } else {
    /* Doubling until a value does not fit or the limit fits. */
    for (;;) {
      int64_t v = lo.v > limit / 2 ? limit : 2 * lo.v;
      if (v == lo.v) break; /* lo is the limit */
      if ((rc = mp__probe(g, others, dim, v, o, lim, &hi, &out->n_plans, err)) != 0) goto done;
      if (!hi.fits) break;
      mp__probe_free(&lo);
      lo = hi;
      memset(&hi, 0, sizeof(hi));
    }
    /* Bisection: lo fits, hi (when set) does not. */
    while (hi.v != 0 && hi.v - lo.v > 1) {
      int64_t v = lo.v + (hi.v - lo.v) / 2;
      if ((rc = mp__probe(g, others, dim, v, o, lim, &mid, &out->n_plans, err)) != 0) goto done;
      if (mid.fits) {
        mp__probe_free(&lo);
        lo = mid;
      } else {
        mp__probe_free(&hi);
        hi = mid;
      }
    }
  }
  out->value = lo.v;
  out->graph = lo.g;
  out->plan = lo.r;
  memset(&lo, 0, sizeof(lo));
  if (hi.v != 0) {
    out->next_value = hi.v;
    out->next_overflows = hi.overflows;
    out->next_min_feasible_budget = hi.overflows ? 0 : hi.r.min_feasible_budget;
  }
  rc = 0;
done:
  mp__probe_free(&lo);
  mp__probe_free(&hi);
  out->solve_ms = mp__ms() - t0;
  if (rc != 0) mp_maximize_free(out);
  return rc;
}
