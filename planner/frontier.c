/* frontier.c - mp_frontier(), the memory/time frontier of a graph for one
 * solver: it looks the solver up in the solver table (solver.h), lets the
 * solver's entry propose candidate points (frontier_recompute.c for
 * memonger, sqrt and none; frontier_sampled.c for every solver that
 * searches toward the budget) and keeps their Pareto staircase: sorted by
 * budget, each point strictly below the extra time of the one before. Also
 * freeing a frontier and looking a budget up in it.
 */
#include "frontier.h"

#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"
#include "progress.h"
#include "solver.h"

void mp_frontier_free(mp_frontier_t *f) {
  if (f == NULL) return;
  free(f->points);
  memset(f, 0, sizeof(*f));
}

long mp_frontier_lookup(const mp_frontier_t *f, uint64_t budget) {
  size_t lo = 0, hi = f->n_points;
  /* the last point whose budget is <= budget */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->points[mid].budget <= budget) lo = mid + 1;
    else hi = mid;
  }
  return (long)lo - 1;
}

static int mp__cmp_point(const void *a, const void *b) {
  const mp_frontier_point_t *x = a, *y = b;
  if (x->budget != y->budget) return x->budget < y->budget ? -1 : 1;
  return x->extra_time < y->extra_time ? -1 : x->extra_time > y->extra_time;
}

/* Sort the candidate points by budget and keep those that strictly lower
 * the extra time: the staircase. */
static void mp__frontier_pareto(mp_frontier_t *f) {
  size_t i, w = 0;
  if (f->n_points == 0) return;
  qsort(f->points, f->n_points, sizeof(*f->points), mp__cmp_point);
  for (i = 0; i < f->n_points; i++)
    if (w == 0 || f->points[i].extra_time < f->points[w - 1].extra_time) f->points[w++] = f->points[i];
  f->n_points = w;
}

int mp_frontier(const mp_graph_t *g, const mp_plan_options_t *asked, mp_frontier_t *out,
                mp_error_t *err) {
  double t0 = mp__now_ms();
  const mp__solver_t *e;
  mp__progress_t tracker;
  mp_plan_options_t tracked;
  const mp_plan_options_t *o = mp__progress_wrap(asked, &tracker, &tracked);
  int rc;

  memset(out, 0, sizeof(*out));
  if (!g->finalized) return mp_error_set(err, MP_EINVAL, "", "graph is not finalized");
  if ((e = mp__solver_get(o->solver)) == NULL)
    return mp_error_set(err, MP_EINVAL, "$.solver", "unknown solver");
  /* The staircase is found at the DP's model budgets, which do not round;
   * under pytorch-cuda its points would not be plan's answers there. */
  if (o->device.allocator != MP_ALLOCATOR_EXACT)
    return mp_error_set(err, MP_EINVAL, "$.device.allocator",
                        "a frontier is computed with the exact allocator only; under pytorch-cuda ask a fit at "
                        "the budgets you need (each is plan's answer there)");
  if ((rc = e->frontier(e, g, o, t0, out, err)) != 0) {
    mp_frontier_free(out);
    return rc;
  }
  mp__frontier_pareto(out);
  out->solve_ms = mp__now_ms() - t0;
  return 0;
}
