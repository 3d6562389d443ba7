/* dp.c - the exact and approximate lower-set DPs (docs/algorithms.md,
 * docs/model.md), both objectives, both accountings: the API of dp.h. This file owns
 * what callers see: options, results and the plans read off the passes,
 * sessions (several budgets on one graph), the fallback from the exact
 * family to the approximate one, and the frontier. The passes are in files
 * of their own, which share the context of dp_internal.h:
 *  - dp_family.c: the context, its family of lower sets (lowerset.h) and
 *    the per-set figures of the model;
 *  - dp_reverse.c: what remains from each set to V, in reverse passes;
 *  - dp_forward.c: the forward passes and the search at one budget;
 *  - dp_staircase.c: the time objective's whole staircase in one pass.
 *
 * A solve at one budget (mp__solve_bounded) is, in order:
 *  - a reverse pass (mp__reverse_q, dp_reverse.c): for every set, hq, the
 *    least peak of what remains (exact: feasibility, the least feasible
 *    budget, and a cut that drops every pair that cannot finish), and lower
 *    bounds on the charged time still to come (ht, and Lagrangian bounds
 *    that weigh the kept memory);
 *  - forward passes (mp__run, dp_forward.c), Pareto on (max a, min k) with
 *    steps limited by the budget, cut at a charged time R that grows until
 *    V is reached (the answer is then the uncut DP's). At V the time
 *    objective takes the largest a (then least k), the memory objective the
 *    least k (then largest a; its passes are cut by kept memory instead).
 *    The exact family's walks skip whole parts of the subsets where no pair
 *    could pass a cut (mp__agg_cut; at tight budgets most sets hold none).
 *
 * Why it is fast, beyond the passes' own reasons: the reverse pass holds
 * for every budget up to its cap, so a session does it once; an exact solve
 * is bounded by the approx family's answer at the same budget (a few
 * percent of its cost), and a time-objective solve by the session's answers
 * at smaller and larger budgets (mp__hint_t), so a staircase of solves
 * costs little more than its hardest one.
 *
 * The staircase (mp__staircase, dp_staircase.c): hq in two dimensions, the
 * Pareto set of (charged time, peak) of what remains, in one reverse pass;
 * at {} it is the time objective's answer at every budget.
 *
 * Reverse passes (mp__reverse_q, mp__staircase) may run on several threads
 * (mp__par_pass, dp_reverse.c, on the thread pool of threadpool.h), size by
 * size; the forward passes stay on the caller's thread.
 *
 * The frontier pass (mp_dp_frontier): no budget, Pareto on (max a, min k,
 * min p). Dominance in all three is sound: a continuation's steps cost k +
 * (something independent of the pair), so a pair with more a, less k and a
 * lower peak so far does at least as well on every continuation under every
 * budget. Hence the set at V, filtered by p <= budget, holds the bounded
 * pass's answer for every budget, and sorting it by p gives the staircase
 * (least budget, best answer, ties included) in one pass; slow on large
 * graphs (no budget cuts it), where the staircase above is the fast way.
 *
 * Accounting details are in dp.h. Internally `a` is always "forward time not
 * charged": in the default accounting the last step into V adds the time of
 * the whole last segment, so recompute = fwd_time - a in both accountings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* The threads an options struct asks for (mp__check_options bounds it). */
static size_t mp__opt_threads(const mp_dp_options_t *o) { return o->threads > 1 ? o->threads : 1; }

/* ---- Solves and fallback ---------------------------------------------------- */

/* One solve on the loaded family: the bounded pass (frontier = 0) or the
 * frontier pass (frontier = 1). The hint only applies to the exact family. */
static int mp__exec(mp__dp_t *c, int frontier, mp_objective_t obj, uint64_t budget,
                    const mp__hint_t *hint) {
  if (!frontier) return mp__solve_bounded(c, obj, budget, hint);
  return mp__solve_frontier(c);
}

/* mp__exec; when the exact DP passes its deadline, switch to the fallback
 * family (dp_window.c; it runs without a deadline, only the cancel
 * callback). */
static int mp__exec_with_fallback(mp__dp_t *c, const mp_dp_options_t *o, int frontier,
                                  uint64_t budget, const mp__hint_t *hint, char *reason,
                                  size_t reason_len, int *exact_used) {
  int rc = mp__exec(c, frontier, o->objective, budget, hint);
  if (rc == MP_ETIMEDOUT && mp__complete(c)) {
    mp__dp_free_family(c);
    c->timed_out = 1;
    snprintf(reason, reason_len, "the deadline of %.0f ms passed during the exact DP",
             o->deadline_ms);
    *exact_used = 0;
    if ((rc = mp__fallback_family(c, o)) != 0) return rc; /* dp_window.c */
    {
      /* The hint's plan (the approx family's answer) caps nothing for the
       * fallback DP, which may need more. */
      mp__hint_t h = *hint;
      h.known = 0;
      h.feasible = 0;
      h.opt_known = 0; /* (the exact family's optimum) */
      rc = mp__exec(c, frontier, o->objective, budget, &h);
    }
  }
  return rc;
}

/* The approx family's answer at the same budget and objective (its least
 * feasible budget when it has no plan), as bounds for the exact DP, from the
 * approx context `a` (family loaded). It costs a few percent of an exact
 * solve. `bact` is the activation budget, `below_const` says the budget does
 * not even cover the constant memory. */
static int mp__approx_hint(mp__dp_t *a, mp_objective_t obj, uint64_t bact, int below_const,
                           mp__hint_t *h) {
  mp__hint_t none;
  size_t last = a->fam.n_sets - 1;
  int rc;
  mp__hint_init(&none);
  if (!below_const) {
    if ((rc = mp__solve_bounded(a, obj, bact, &none)) != 0) return rc;
    if (a->front_len[last] > 0) {
      const mp__pair_t *P = a->arena + a->front_off[last];
      size_t pick = obj == MP_OBJECTIVE_TIME ? a->front_len[last] - 1 : 0;
      h->known = 1;
      h->feasible = 1;
      h->charged = a->t[last] - P[pick].a;
      h->kept = P[pick].k;
      return 0;
    }
  }
  if ((rc = mp__solve_minpeak(a, &none, &h->min_peak)) != 0) return rc;
  h->known = 1;
  h->feasible = 0;
  return 0;
}

static int mp__check_options(const mp_dp_options_t *o, mp_error_t *err) {
  if ((unsigned)o->objective > MP_OBJECTIVE_MEMORY)
    return mp_error_set(err, MP_EINVAL, "$.objective", "unknown objective");
  if ((unsigned)o->accounting > MP_ACCOUNTING_REFERENCE)
    return mp_error_set(err, MP_EINVAL, "$.accounting", "unknown accounting");
  if (o->threads > MP_DP_MAX_THREADS)
    return mp_error_set(err, MP_EINVAL, "$.threads", "more threads than %d", MP_DP_MAX_THREADS);
  return 0;
}

static int mp__fail(int rc, mp_error_t *err) {
  switch (rc) {
  case MP_ENOMEM: return mp_error_set(err, rc, "", "out of memory");
  case MP_ECANCELED: return mp_error_set(err, rc, "", "the DP was canceled");
  case MP_ETIMEDOUT: return mp_error_set(err, rc, "", "the DP passed its deadline");
  case MP_ELIMIT:
    return mp_error_set(err, rc, "", "the graph is too large for the lower-set DP");
  default: return mp_error_set(err, rc, "", "lower-set DP failed");
  }
}

void mp_dp_options_init(mp_dp_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->exact = 1;
  o->objective = MP_OBJECTIVE_TIME;
  o->accounting = MP_ACCOUNTING_DEFAULT;
  o->budget = UINT64_MAX;
  o->max_lower_sets = MP_DP_DEFAULT_MAX_LOWER_SETS;
}

void mp_dp_result_free(mp_dp_result_t *res) {
  if (res == NULL) return;
  mp_strategy_free(res->strategy);
  memset(res, 0, sizeof(*res));
}

/* Segment index per node from the back-pointers of pair `at` (a pair of V). */
static int mp__strategy(const mp__dp_t *c, size_t at, mp_strategy_t **out) {
  const mp_lowerset_family_t *f = &c->fam;
  mp_strategy_t *s = mp_strategy_new(c->g);
  uint32_t *chain = NULL;
  size_t len = 0, cur = f->n_sets - 1, pi = at, seg, w;
  if (s == NULL) return MP_ENOMEM;
  chain = malloc((c->dag.n + 2) * sizeof(uint32_t));
  if (chain == NULL) {
    mp_strategy_free(s);
    return MP_ENOMEM;
  }
  /* chain[0] = V, ..., chain[len-1] = {} */
  for (;;) {
    chain[len++] = (uint32_t)cur;
    if (c->arena[pi].from_set == UINT32_MAX) break;
    cur = c->arena[pi].from_set;
    pi = c->arena[pi].from_pair;
  }
  s->n_segments = (uint32_t)(len - 1);
  for (seg = 0; seg + 1 < len; seg++) {
    const uint64_t *lo = f->bits + (size_t)chain[len - 1 - seg] * f->words;
    const uint64_t *hi = f->bits + (size_t)chain[len - 2 - seg] * f->words;
    for (w = 0; w < f->words; w++) {
      uint64_t x = hi[w] & ~lo[w];
      while (x) {
        uint32_t v = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
        x &= x - 1;
        s->seg[c->dag.node[v]] = (uint32_t)seg;
      }
    }
  }
  free(chain);
  *out = s;
  return 0;
}

/* The index of the last of points[0 .. n) (strictly increasing budget) at
 * or below `budget`, -1 when none is. */
static long mp__point_at(const mp_dp_point_t *points, size_t n, uint64_t budget) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* first point with budget > given */
    size_t mid = (lo + hi) / 2;
    if (points[mid].budget <= budget) lo = mid + 1;
    else hi = mid;
  }
  return (long)lo - 1;
}

/* ---- Sessions: one graph, several budgets ----------------------------------- */

struct mp_dp_session_s {
  const mp_graph_t *g;
  mp_dp_options_t o;
  mp__dp_t c;           /* the asked family (the approx one after a fallback) */
  mp__dp_t a;           /* exact sessions: the approx family, for the hints */
  int have_a;
  int exact_used;
  char reason[160];
  /* the family's staircase (borrowed; mp__dp_session_use_optima): where
   * the time objective's searches start */
  const mp_dp_point_t *opt;
  size_t n_opt, opt_sets; /* opt_sets: the lower sets of its family */
};

static void mp__session_close(mp_dp_session_t *s) {
  mp__dp_free(&s->c);
  if (s->have_a) mp__dp_free(&s->a);
}

/* Open: the context and the family (exact, or approx when the enumeration
 * passes a limit or the deadline counted from t0). `all`: compute the
 * reverse pass for every budget at once (more than one solve to come). */
static int mp__session_open(mp_dp_session_t *s, const mp_graph_t *g, const mp_dp_options_t *o,
                            double t0, int all) {
  int rc;
  memset(s, 0, sizeof(*s));
  s->g = g;
  s->o = *o;
  if ((rc = mp__dp_init(&s->c, g, o->accounting)) != 0) return rc;
  s->c.should_stop = o->should_stop;
  s->c.stop_arg = o->stop_arg;
  s->c.qcap_all = all;
  s->c.tuning = o->tuning;
  s->c.threads = mp__opt_threads(o);
  s->c.deadline_at = o->exact && o->deadline_ms > 0 ? t0 + o->deadline_ms : 0;
  return mp__load_family(&s->c, o, t0, s->reason, sizeof(s->reason), &s->exact_used);
}

/* One solve at `budget` (in the options' terms), the deadline (deadline_ms,
 * 0: none) counted from t0. Fills *res (zeroed first); on error *res is
 * left zeroed. */
static int mp__session_solve(mp_dp_session_t *s, uint64_t budget, double t0, double deadline_ms,
                             mp_dp_result_t *res) {
  const mp_graph_t *g = s->g;
  const mp_dp_options_t *o = &s->o;
  mp__dp_t *c = &s->c;
  mp__hint_t hint;
  uint64_t bact = 0;
  int rc, below_const = 0;
  size_t last, len, pick;

  memset(res, 0, sizeof(*res));
  mp__hint_init(&hint);
  c->deadline_at = mp__complete(c) && deadline_ms > 0 ? t0 + deadline_ms : 0;
  if (o->accounting == MP_ACCOUNTING_REFERENCE) {
    bact = budget;
  } else if (budget < g->const_bytes) {
    below_const = 1;
  } else {
    bact = budget - g->const_bytes;
  }
  /* the family's staircase, when known, gives the optimum at this budget:
   * the last point at or below it (the search then needs no hint from the
   * approx family, whose plan would only cap a cut that starts there) */
  if (!below_const && s->n_opt > 0 && s->opt_sets == c->fam.n_sets &&
      o->objective == MP_OBJECTIVE_TIME && budget >= s->opt[0].budget) {
    hint.opt_known = 1;
    hint.opt_charged = s->opt[mp__point_at(s->opt, s->n_opt, budget)].recompute_time;
  }
  if (mp__complete(c) && !hint.opt_known) {
    if (!s->have_a) {
      mp__dp_t *a = &s->a;
      s->have_a = 1; /* mp__dp_init zeroes it first: freeing is safe */
      if ((rc = mp__dp_init(a, g, o->accounting)) != 0) goto fail;
      a->should_stop = o->should_stop;
      a->stop_arg = o->stop_arg;
      a->qcap_all = c->qcap_all;
      a->tuning = c->tuning;
      if ((rc = mp_lowerset_approx_polled(&a->dag, a->should_stop, a->stop_arg, &a->fam)) != 0) goto fail;
      a->have_fam = 1;
      if ((rc = mp__dp_prepare(a)) != 0) goto fail;
    }
    if ((rc = mp__approx_hint(&s->a, o->objective, bact, below_const, &hint)) != 0) goto fail;
  }
  if (!below_const) {
    rc = mp__exec_with_fallback(c, o, 0, bact, &hint, s->reason, sizeof(s->reason),
                                &s->exact_used);
    if (rc != 0) goto fail;
  }
  last = c->fam.n_sets - 1;
  res->exact_used = s->exact_used;
  memcpy(res->fallback_reason, s->reason, sizeof(res->fallback_reason));
  res->n_lower_sets = c->fam.n_sets;
  res->window_width = c->fam.window;
  if (!below_const && c->front_len[last] > 0) {
    const mp__pair_t *P = c->arena + c->front_off[last];
    len = c->front_len[last];
    /* sorted by k ascending with a strictly increasing */
    pick = o->objective == MP_OBJECTIVE_TIME ? len - 1 : 0;
    res->feasible = 1;
    res->retained_time = P[pick].a;
    res->recompute_time = g->fwd_time - P[pick].a;
    if (res->recompute_time < 0) res->recompute_time = 0; /* rounding */
    res->kept_bytes = P[pick].k;
    res->model_peak =
        o->accounting == MP_ACCOUNTING_DEFAULT ? mp__sadd(P[pick].p, g->const_bytes) : P[pick].p;
    if ((rc = mp__strategy(c, c->front_off[last] + pick, &res->strategy)) != 0) goto fail;
  } else {
    /* Infeasible: the least budget at which this family has a plan. */
    uint64_t p = 0;
    if (!mp__complete(c)) mp__hint_init(&hint); /* after a fallback */
    rc = mp__solve_minpeak(c, &hint, &p);
    if (rc == MP_ETIMEDOUT) {
      /* the answer (no plan) stands; only the least budget is unknown,
       * which the clock decided (mp__dp_session_timed_out) */
      size_t n = strlen(res->fallback_reason);
      c->timed_out = 1;
      snprintf(res->fallback_reason + n, sizeof(res->fallback_reason) - n, "%s%s",
               n ? "; " : "", "deadline passed before the least feasible budget was found");
    } else if (rc != 0) {
      goto fail;
    } else {
      res->min_feasible_budget =
          o->accounting == MP_ACCOUNTING_DEFAULT ? mp__sadd(p, g->const_bytes) : p;
    }
  }
  return 0;
fail:
  mp_dp_result_free(res);
  return rc;
}

int mp_dp_solve(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_result_t *res,
                mp_error_t *err) {
  mp_dp_session_t s;
  mp_dp_options_t def;
  double t0 = mp_lowerset_clock_ms();
  int rc;

  memset(res, 0, sizeof(*res));
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  rc = mp__session_open(&s, g, opts, t0, 0);
  if (rc == 0) rc = mp__session_solve(&s, opts->budget, t0, opts->deadline_ms, res);
  mp__session_close(&s);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp_dp_session_new(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_session_t **out,
                      mp_error_t *err) {
  mp_dp_session_t *s;
  mp_dp_options_t def;
  int rc;
  *out = NULL;
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  if ((s = malloc(sizeof(*s))) == NULL) return mp__fail(MP_ENOMEM, err);
  if ((rc = mp__session_open(s, g, opts, mp_lowerset_clock_ms(), 1)) != 0) {
    mp__session_close(s);
    free(s);
    return mp__fail(rc, err);
  }
  *out = s;
  return 0;
}

int mp_dp_session_solve(mp_dp_session_t *s, uint64_t budget, mp_dp_result_t *res,
                        mp_error_t *err) {
  return mp__dp_session_solve_until(s, budget, s->o.deadline_ms, res, err);
}

int mp__dp_session_solve_until(mp_dp_session_t *s, uint64_t budget, double deadline_ms,
                               mp_dp_result_t *res, mp_error_t *err) {
  int rc = mp__session_solve(s, budget, mp_lowerset_clock_ms(), deadline_ms, res);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp__dp_session_timed_out(const mp_dp_session_t *s) { return s->c.timed_out; }

/* The session's staircase (mp__staircase_points' arguments) under a
 * deadline of deadline_ms from now (0: none). */
static int mp__session_staircase(mp_dp_session_t *s, uint64_t max_budget, size_t max_work,
                                 size_t min_work, double deadline_ms, mp_dp_point_t **points,
                                 size_t *n_points, mp_error_t *err) {
  uint64_t cst = s->o.accounting == MP_ACCOUNTING_DEFAULT ? s->g->const_bytes : 0;
  int rc;
  s->c.deadline_at =
      mp__complete(&s->c) && deadline_ms > 0 ? mp_lowerset_clock_ms() + deadline_ms : 0;
  rc = mp__staircase_points(&s->c, cst, max_budget, max_work, min_work, points, n_points);
  return rc == 0 ? 0 : mp__fail(rc, err);
}

int mp_dp_session_staircase(mp_dp_session_t *s, uint64_t max_budget, size_t max_work,
                            mp_dp_point_t **points, size_t *n_points, mp_error_t *err) {
  return mp__session_staircase(s, max_budget, max_work, 0, s->o.deadline_ms, points, n_points,
                               err);
}

int mp__dp_session_optima(mp_dp_session_t *s, double deadline_ms, mp_dp_point_t **points,
                          size_t *n_points, mp_error_t *err) {
  /* The default limit (12 times the reverse walk's steps, at least 64
   * million) weighs one staircase against one solve; here it replaces the
   * failed passes of many solves, which cost far more, so it may look at
   * 256 million candidates at least before it gives up. */
  return mp__session_staircase(s, UINT64_MAX, 0, (size_t)256 << 20, deadline_ms, points,
                               n_points, err);
}

void mp__dp_session_use_optima(mp_dp_session_t *s, const mp_dp_point_t *points, size_t n_points,
                               size_t n_sets) {
  s->opt = points;
  s->n_opt = points ? n_points : 0;
  s->opt_sets = n_sets;
}

size_t mp__dp_session_sets(const mp_dp_session_t *s) { return s->c.fam.n_sets; }

size_t mp__dp_session_passes(const mp_dp_session_t *s) { return s->c.passes; }

int mp_dp_session_exact_used(const mp_dp_session_t *s, const char **reason) {
  if (reason) *reason = s->reason;
  return s->exact_used;
}

void mp_dp_session_free(mp_dp_session_t *s) {
  if (s == NULL) return;
  mp__session_close(s);
  free(s);
}

/* ---- The frontier ------------------------------------------------------------ */

void mp_dp_frontier_free(mp_dp_frontier_t *f) {
  if (f == NULL) return;
  free(f->points);
  memset(f, 0, sizeof(*f));
}

/* Lexicographic order of the objective: u strictly better than v. */
static int mp__better(mp_objective_t o, const mp__pair_t *u, const mp__pair_t *v) {
  if (o == MP_OBJECTIVE_TIME) {
    if (u->a != v->a) return u->a > v->a;
    return u->k < v->k;
  }
  if (u->k != v->k) return u->k < v->k;
  return u->a > v->a;
}

int mp_dp_frontier(const mp_graph_t *g, const mp_dp_options_t *opts, mp_dp_frontier_t *out,
                   mp_error_t *err) {
  mp__dp_t c;
  mp_dp_options_t def;
  mp__hint_t hint;
  int rc, exact_used = 0;
  double t0 = mp_lowerset_clock_ms();
  size_t last, len, i, np = 0;
  mp__pair_t *P;
  const mp__pair_t *best = NULL;

  memset(out, 0, sizeof(*out));
  if (opts == NULL) {
    mp_dp_options_init(&def);
    opts = &def;
  }
  if ((rc = mp__check_options(opts, err)) != 0) return rc;
  if ((rc = mp__dp_init(&c, g, opts->accounting)) != 0) goto fail;
  c.should_stop = opts->should_stop;
  c.stop_arg = opts->stop_arg;
  c.deadline_at = opts->exact && opts->deadline_ms > 0 ? t0 + opts->deadline_ms : 0;
  c.threads = mp__opt_threads(opts);
  if ((rc = mp__load_family(&c, opts, t0, out->fallback_reason, sizeof(out->fallback_reason),
                            &exact_used)) != 0)
    goto fail;
  mp__hint_init(&hint);
  rc = mp__exec_with_fallback(&c, opts, 1, UINT64_MAX, &hint, out->fallback_reason,
                              sizeof(out->fallback_reason), &exact_used);
  if (rc != 0) goto fail;
  out->exact_used = exact_used;
  out->n_lower_sets = c.fam.n_sets;
  last = c.fam.n_sets - 1;
  len = c.front_len[last];
  P = c.arena + c.front_off[last];
  /* Sort V's pairs by peak ascending, best first among equal peaks (a merge
   * sort, since the order depends on the objective and qsort takes no
   * context), then sweep: a pair becomes a point when it beats every pair of
   * lower or equal peak. */
  {
    mp__pair_t *tmp = malloc((len ? len : 1) * sizeof(*tmp));
    size_t width;
    if (tmp == NULL) {
      rc = MP_ENOMEM;
      goto fail;
    }
    for (width = 1; width < len; width *= 2) {
      size_t lo;
      for (lo = 0; lo < len; lo += 2 * width) {
        size_t mid = lo + width < len ? lo + width : len;
        size_t hi = lo + 2 * width < len ? lo + 2 * width : len;
        size_t x = lo, y = mid, o = lo;
        while (x < mid && y < hi) {
          const mp__pair_t *u = &P[x], *v = &P[y];
          int take_u = u->p < v->p || (u->p == v->p && !mp__better(opts->objective, v, u));
          tmp[o++] = take_u ? P[x++] : P[y++];
        }
        while (x < mid) tmp[o++] = P[x++];
        while (y < hi) tmp[o++] = P[y++];
      }
      memcpy(P, tmp, len * sizeof(*P));
    }
    free(tmp);
  }
  out->points = malloc((len ? len : 1) * sizeof(*out->points));
  if (out->points == NULL) {
    rc = MP_ENOMEM;
    goto fail;
  }
  for (i = 0; i < len; i++) {
    if (best != NULL && !mp__better(opts->objective, &P[i], best)) continue;
    best = &P[i];
    out->points[np].budget = opts->accounting == MP_ACCOUNTING_DEFAULT
                                 ? mp__sadd(P[i].p, g->const_bytes)
                                 : P[i].p;
    out->points[np].recompute_time = g->fwd_time - P[i].a;
    if (out->points[np].recompute_time < 0) out->points[np].recompute_time = 0;
    out->points[np].kept_bytes = P[i].k;
    /* equal budgets cannot repeat: the first pair at a peak is the best */
    np++;
  }
  out->n_points = np;
  mp__dp_free(&c);
  return 0;
fail:
  mp__dp_free(&c);
  mp_dp_frontier_free(out);
  return mp__fail(rc, err);
}

long mp_dp_frontier_lookup(const mp_dp_frontier_t *f, uint64_t budget) {
  return mp__point_at(f->points, f->n_points, budget);
}
