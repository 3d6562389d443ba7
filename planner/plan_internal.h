/* plan_internal.h - the candidates every solver shares (cand.c,
 * cand_recompute.c): simulated candidate plans, how the best of them is
 * picked and becomes a plan result, the generators of recompute-only
 * candidates, and the clock and stop check the searches poll. The solvers
 * (solver.h) know each other only through these and the simulator. Private
 * to the planner library (mp__ prefix).
 */
#ifndef MP_PLAN_INTERNAL_H
#define MP_PLAN_INTERNAL_H

#include <stdint.h>

#include "plan.h"
#include "progress.h"

/* ---- The clock and the stop check (cand.c) ----------------------------- */

double mp__now_ms(void);

/* MP_ECANCELED when o->should_stop says so, MP_ETIMEDOUT once
 * o->deadline_ms has passed since t0 (mp__now_ms), else 0. */
int mp__plan_stop(const mp_plan_options_t *o, double t0, mp_error_t *err);

/* ---- Candidates (cand.c) ----------------------------------------------- */

/* A strategy with its schedule and the simulator's report of it. */
typedef struct mp__cand_s {
  mp_strategy_t *strategy; /* NULL for store-all */
  mp_schedule_t *schedule;
  mp_sim_report_t sim;
} mp__cand_t;

/* Build and simulate the schedule of `st` (store-all when st is NULL) under
 * o->device; takes ownership of st. A simulation failure is a planner bug:
 * MP_ESCHEDULE. */
int mp__cand_make(const mp_graph_t *g, const mp_plan_options_t *o, mp_strategy_t *st,
                  mp__cand_t *c, mp_error_t *err);
void mp__cand_free(mp__cand_t *c);

/* Simulate a schedule a solver planned, under `dev`. A schedule the
 * simulator rejects is a planner bug: MP_ESCHEDULE with "planner bug: the
 * <what> schedule does not simulate: ..." in *err; other failures keep the
 * simulator's code and message. *out as mp_simulate_ex leaves it. */
int mp__simulate_planned(const mp_graph_t *g, const mp_device_t *dev, const mp_schedule_t *s,
                         const char *what, mp_sim_report_t *out, mp_error_t *err);

/* The simulated peak fits o->budget. */
int mp__cand_fits(const mp_plan_options_t *o, const mp_sim_report_t *s);

/* Is candidate a a better answer than best (which may be empty: no
 * schedule)? Among fitting plans: least recompute (time objective) or least
 * peak (memory objective); a fitting plan beats any that does not fit;
 * among non-fitting, least peak. */
int mp__cand_better(const mp_plan_options_t *o, const mp__cand_t *a, const mp__cand_t *best);

/* Move c's schedule and report into r, with the checkpoints and segment
 * count of its strategy (activations with an activation successor in a
 * later segment, and recompute:false nodes outside the last segment). c is
 * freed either way. 0 or MP_ENOMEM (err untouched). */
int mp__cand_adopt(const mp_graph_t *g, mp__cand_t *c, mp_plan_result_t *r);

/* The best of a series of candidates, and the least peak among them. */
typedef struct {
  const mp_plan_options_t *o;
  mp__cand_t best;         /* empty until the first candidate */
  uint64_t least_peak;     /* UINT64_MAX until the first candidate */
  /* When home is set, candidates are plans of a renumbered copy of home
   * (cand_orders.c): mp__cand_pick translates each into home's indices
   * (home_map[v]: home's node v in the copy; home_inv the other way) and
   * simulates it on home before weighing it; a failure is kept in home_rc
   * and home_err. */
  const mp_graph_t *home;
  const uint32_t *home_map, *home_inv;
  int home_rc;
  mp_error_t home_err;
} mp__cand_pick_t;

void mp__cand_pick_init(mp__cand_pick_t *p, const mp_plan_options_t *o);

/* A visitor (mp__cand_visit_cb, arg a mp__cand_pick_t): keep the better of
 * c and the best so far. */
void mp__cand_pick(void *arg, mp__cand_t *c);

/* ---- Recompute-only candidates (cand_recompute.c) ---------------------- */

/* Called for each simulated candidate; it may take the candidate's contents
 * (leaving *c zeroed), otherwise the caller frees them after the call. */
typedef void (*mp__cand_visit_cb)(void *arg, mp__cand_t *c);

/* Chen's proposals (sqrt_cuts 0: memonger's threshold search, eleven
 * proposals, one of them no cut at all; 1: sqrt(n) checkpointing, one),
 * each simulated and visited. Honours o->should_stop and o->deadline_ms
 * measured from t0. */
int mp__cand_chen(const mp_graph_t *g, const mp_plan_options_t *o, double t0, int sqrt_cuts,
                  mp__cand_visit_cb visit, void *arg, mp_error_t *err);

/* The lower-set families a recompute-only portfolio is built around: the
 * approximate DP's, the exact DP's (falling back to the window family) and
 * the prefix DP's (dp_chain.h). 0 and 1 keep the old `exact` flag's sense. */
typedef enum { MP__FAMILY_APPROX = 0, MP__FAMILY_EXACT = 1, MP__FAMILY_CHAIN = 2 } mp__family_t;

/* ---- Reuse of DP sessions and answers across solves and plans (reuse.c) --
 *
 * The DP solves of a plan at several model budgets (the budget, the DP's
 * least budget, the slack walk) share one DP session per family (dp.h), and
 * so may the plans of one caller on one graph (mp_fit, a sampled frontier):
 * a session holds what every budget shares (the lower sets, their figures,
 * the reverse pass). Session solves are pure (dp.h), so no answer depends
 * on what was asked before, and the record keeps each answer (a book) to
 * give it again when the same model budget is asked. mp__cand_portfolio
 * uses o->reuse when it is set for g, else makes a record of its own for
 * the plan.
 *
 * A record is used by one thread at a time. Records made with
 * mp__reuse_new_sharing have sessions of their own and share the book,
 * which is locked, so they may plan on parallel threads (plan_many.c). */
typedef struct mp__reuse_s mp__reuse_t;

/* A reuse record for plans on g (g borrowed until mp__reuse_free); NULL
 * when out of memory. */
mp__reuse_t *mp__reuse_new(const mp_graph_t *g);
/* A record for other's graph with sessions of its own, sharing other's book
 * of answers (the book lives until the last record sharing it is freed);
 * NULL when out of memory. */
mp__reuse_t *mp__reuse_new_sharing(mp__reuse_t *other);
void mp__reuse_free(mp__reuse_t *u);
/* Make u's book (and every record sharing it) share each DP family's
 * staircase between its sessions, so that their solves start at the
 * optimum (reuse.c): for callers that plan many budgets, since computing it
 * costs about one solve at the graph's hardest budget. Answers do not
 * change. NULL is fine. Call before the plans start. */
void mp__reuse_use_staircases(mp__reuse_t *u);
/* A fit of at least this many distinct budgets uses the staircases. */
#define MP__FIT_STAIRS 4
/* The graph the record was made for. */
const mp_graph_t *mp__reuse_graph(const mp__reuse_t *u);

/* The local searches' answers (cand_refine.c), kept in u's book: a search
 * depends on its start, its goal and the device alone, and a frontier's or
 * a fit's plans search from the same few starts (ResNet-50's frontier:
 * 2,435 of its 2,849 simulations were the least plans' searches' moves).
 * mp__reuse_refined_find: 1 when the book has the search from `start` with
 * `far` moves toward `cap`'s goal (0: the peak, mp__cand_refine_least;
 * else the recomputation within cap, mp__cand_lower) on g under dev, with
 * *found a copy of the plan it found (the caller owns it; NULL when no move
 * helped); 0 when it has not (the caller searches, and the book counts a
 * search); MP_ENOMEM. u NULL or made for another graph: 0.
 * mp__reuse_refined_keep keeps a search's answer (copies of start and
 * found, which may be NULL) unless the book is full or has it already.
 * mp__reuse_refined_count: the searches counted. */
int mp__reuse_refined_find(mp__reuse_t *u, const mp_graph_t *g, const mp_device_t *dev,
                           const mp_strategy_t *start, int far, uint64_t cap, mp_strategy_t **found);
void mp__reuse_refined_keep(mp__reuse_t *u, const mp_graph_t *g, const mp_device_t *dev,
                            const mp_strategy_t *start, int far, uint64_t cap,
                            const mp_strategy_t *found);
size_t mp__reuse_refined_count(const mp__reuse_t *u);

/* The session the reuse record keeps for d's family (made now from d when
 * none is), or NULL with *rc set: 0 when a session made under other options
 * is kept (the caller solves afresh), else the error of making it. */
mp_dp_session_t *mp__reuse_session(mp__reuse_t *u, const mp_dp_options_t *d, int *rc, mp_error_t *err);

/* The family's DP (exact = 1: the exact family with its fallback; 0:
 * approx) at o->budget, from the book's answer at that budget or else the
 * session the reuse record keeps for the family, made on first use from
 * `d` (mp__dp_options_from's, with o's objective and accounting), the solve
 * under d's deadline. A session made under other options (deadlines aside)
 * is not used: a fresh mp_dp_solve answers. An answer the deadline changed
 * (the exact DP fell back when it passed) is not kept, and its session is
 * dropped (reuse.c). */
int mp__reuse_solve(const mp_plan_options_t *o, const mp_dp_options_t *d, mp_dp_result_t *dr,
                    mp_error_t *err);

/* The options for many plans on g (a fit's, a sampled frontier's): in
 * c->o, the caller's with, when o->threads > 1, a should_stop safe to call
 * from several threads (progress.h, mp__serial_poll), and a reuse record
 * the plans share (reuse.c). The record is made after the wrap, so its
 * sessions poll the wrapped should_stop and every plan, on whatever
 * thread, can use them. Release with mp__many_close. 0 or
 * MP_ENOMEM. */
typedef struct {
  mp_plan_options_t o;
  mp__serial_t serial;
  int serial_on;
} mp__many_ctx_t;
int mp__many_open(const mp_graph_t *g, const mp_plan_options_t *o, mp__many_ctx_t *c, mp_error_t *err);
void mp__many_close(mp__many_ctx_t *c);

/* Plans at budgets[0..n-1] on g, each mp_plan(g, o at that budget), into
 * results[] (the caller frees each with mp_plan_result_free). With
 * o->threads > 1 and o->should_stop an mp__serial_poll (mp__many_open's
 * options), on up to o->threads threads, the first with o->reuse and the
 * others with records sharing its book (or none when o->reuse is NULL);
 * else on this thread alone, in order. Under a deadline
 * each plan gets what is left of o->deadline_ms counted from t0, or all of
 * it when t0 < 0. 0, or the first failure's error (every result freed). */
int mp__plan_many(const mp_graph_t *g, const mp_plan_options_t *o, double t0, const uint64_t *budgets,
                  size_t n, mp_plan_result_t *results, mp_error_t *err);

/* The least rung of the slack walk's ladder (cand_recompute.c) at or above
 * x: a DP solve at a rung is one every plan's walk may ask, so a caller with
 * a budget to choose (a sampled frontier) picks a rung and shares the solve. */
uint64_t mp__rung_ceil(uint64_t x);

/* The DP options a plan request implies: the family's exactness and the
 * request's limits (lower sets, window, deadline, cancellation, threads);
 * objective, accounting and budget are left at their defaults. */
void mp__dp_options_from(const mp_plan_options_t *o, int exact, mp_dp_options_t *d);

/* The family's plan (exact: the exact DP, falling back to the window
 * family; approx; or the prefix DP) at its least model budget `least` (0: found with a solve at budget 0),
 * simulated under o->device: a candidate whose simulated peak is at most
 * that budget, often well below (the model is conservative). c->schedule
 * is NULL when the DP finds no plan or its least budget is unknown (the
 * exact search passed the deadline). *figs holds the DP's figures (no
 * strategy); the caller frees *c and *figs. Default accounting only. */
int mp__cand_dp_least(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__family_t family,
                      uint64_t least, mp__cand_t *c, mp_dp_result_t *figs, mp_error_t *err);

/* Where the local search starts: a lower-set strategy (borrowed) and its
 * simulated peak and recomputation. */
typedef struct {
  const mp_strategy_t *strategy;
  uint64_t peak;
  double recompute;
} mp__refine_start_t;
/* The local search of cand_refine.c: from `start`, single-node moves
 * into the segment before or after the node's own (far: or two segments
 * away, and closure moves, a node with its ancestors in its segment to the
 * segment before or its descendants there to the one after) that lower
 * the simulated peak (ties: less recomputation), never
 * below start's recomputation, within a fixed number of moves. *out
 * receives the best plan found, or stays empty when no move helped.
 * Depends on start, far and o alone, never on o->budget, and polls
 * o->should_stop only (not the deadline). 0, MP_ECANCELED, MP_ENOMEM or
 * MP_ESCHEDULE. */
int mp__cand_refine_least(const mp_graph_t *g, const mp_plan_options_t *o,
                          const mp__refine_start_t *start, int far, mp__cand_t *out,
                          mp_error_t *err);
/* The other local search of cand_refine.c: from `start` (whose peak is
 * within cap), the same moves as the far search, kept when the simulated
 * peak stays within `cap` (> 0) and the recomputation falls (ties: the
 * peak falls), within a fixed number of moves. *out as for
 * mp__cand_refine_least; it depends on start, cap and o alone. `memo`
 * (NULL: none) remembers the outcomes of the moves from one strategy
 * between searches (the climb's, which often start where the last one
 * ended): the same answers, fewer simulations. Same returns. */
typedef struct mp__moves_memo_s mp__moves_memo_t;
mp__moves_memo_t *mp__moves_memo_new(const mp_graph_t *g); /* NULL: out of memory */
void mp__moves_memo_free(mp__moves_memo_t *m);
int mp__cand_lower(const mp_graph_t *g, const mp_plan_options_t *o, const mp__refine_start_t *start,
                   uint64_t cap, mp__moves_memo_t *memo, mp__cand_t *out, mp_error_t *err);

/* The next rung of the slack walk's ladder (cand_recompute.c): x + x/32,
 * at least x + 1, saturating at UINT64_MAX. */
uint64_t mp__rung_next(uint64_t x);

/* The climb (cand_climb.c), offered when the exact solver's DP fell back to
 * the window family: from rung 0, the first rung of the slack walk's
 * ladder at or above `top`, plain backpropagation's simulated peak under
 * o->device, less its 2^-MP__CLIMB_TOP_SHIFT, a chain of plans, one per rung, each the
 * recomputation search (mp__cand_lower) within its rung from the better of
 * the last one and, on every MP__CLIMB_DP_EVERY-th rung, the window DP's
 * plan there (the chain starts at the first such rung where the DP plans). At
 * o->budget the chain's plan at the last rung within it is offered to p
 * (source "window-dp-climbed" in r when it wins). The chain depends on
 * g and o alone but for the rung it stops at, and recomputes no
 * more at each rung, so a larger budget never gets a costlier plan. 0 or
 * an error (MP_ECANCELED, MP_ENOMEM, MP_ESCHEDULE, or the DP's). */
#define MP__CLIMB_DP_EVERY 4
#define MP__CLIMB_TOP_SHIFT 2
int mp__offer_climb(const mp_graph_t *g, const mp_plan_options_t *o, double t0, uint64_t top,
                    mp__cand_pick_t *p, mp_plan_result_t *r, mp_error_t *err);

/* The best recompute-only plan at o->budget: the family's DP plan and, with
 * the default accounting, for exact the approximate DP's too, Chen's proposals and keeping everything, all
 * simulated; and for each DP family that finds no plan at o->budget, its
 * plan at its least budget (mp__cand_dp_least). So, with the default
 * accounting, the budgets with a plan are exactly those from
 * min_feasible_budget on, and the plan there peaks exactly at it. Fills *r like mp_plan (solver_used, exact, exact_reason,
 * n_lower_sets, source, the model figures, feasible or min_feasible_budget,
 * and the adopted candidate), leaving the fields mp_plan sets before the
 * solver runs as they are. On failure *r may hold partial results the
 * caller frees (mp_plan_result_free). */
int mp__cand_portfolio(const mp_graph_t *g, const mp_plan_options_t *o, double t0, mp__family_t family,
                       mp_plan_result_t *r, mp_error_t *err);

/* The family's DP plan at o->budget, its slack walk, and where it finds
 * none its plan at its least model budget and that plan searched lower,
 * offered to p; *first (optional) receives the figures of the solve at
 * o->budget (cand_recompute.c). */
int mp__offer_dp_family(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                        mp__family_t family, mp__cand_pick_t *p, mp_plan_result_t *r,
                        mp_dp_result_t *first, mp_error_t *err);

/* ---- The window family in other orders (cand_orders.c) ------------------ */

/* After a fallback to a partial window family: the window DP's candidates
 * (mp__offer_dp_family) on g renumbered in other topological orders, each
 * translated back to g and offered to p ("window-dp-reordered" in r when
 * one wins): the greedy least-live-memory order, the order of the
 * fallback's plan at its least model budget, then up to
 * MP__ORD_RECENTRE_MAX times the order of the best plan so far (while that
 * improves it). Then, when the best plan fits and recomputes, the
 * recomputation search (mp__cand_lower) from it within o->budget
 * ("window-dp-searched"). The last two depend on o->budget, so unlike the
 * exact DP's plans a larger budget can, rarely, get a costlier plan.
 * 0 or an error. */
int mp__offer_orders(const mp_graph_t *g, const mp_plan_options_t *o, double t0,
                     mp__cand_pick_t *p, mp_plan_result_t *r, mp_error_t *err);
/* c (a plan of p->home's renumbered copy) as a plan of p->home, built and
 * simulated there into *out. c is left as it is. */
int mp__cand_home(const mp__cand_pick_t *p, mp__cand_t *c, mp__cand_t *out, mp_error_t *err);

#endif
