/* solver.h - the solver table (solvers.c): one entry per mp_solver_t with
 * its name, its capabilities, the function that plans with it and the one
 * that draws its frontier. mp_plan() and mp_frontier() look the asked
 * solver up here and call its entry; no other code dispatches on the
 * solver, and the solvers do not call each other (they share the candidates
 * of plan_internal.h and the schedules of swap.h instead). Private to the
 * planner library (mp__ prefix).
 *
 * Ownership: the table is static and read-only; its entries live as long
 * as the program. A plan function fills *r like mp_plan() (which has zeroed
 * it and set solver, objective, accounting and budget), a frontier function
 * fills the candidate points of *out like mp_frontier() (which has zeroed
 * it, frees it when the function fails, and makes the staircase of what it
 * leaves). Both take t0, the mp__now_ms() at which the request started, for
 * the deadline.
 */
#ifndef MP_SOLVER_H
#define MP_SOLVER_H

#include "error.h"
#include "graph.h"
#include "plan.h"

/* Capabilities (mp__solver_t.caps). */
#define MP__CAP_REFERENCE 1u /* accepts the reference accounting (the DP solvers;
                              * every other solver asks for the default) */
#define MP__CAP_EXACT 2u     /* its DP is the exact one, which falls back to
                              * approx past its limits (exact, auto) */
#define MP__CAP_BUDGET 4u    /* searches toward the budget; the others (none,
                              * memonger, sqrt, layrub) propose the same plans
                              * whatever it is, and it only judges them */
#define MP__CAP_WINDOW 16u   /* the exact DP's machinery on the window family
                              * from the start (window) */
#define MP__CAP_SWAPS 8u     /* data migration: swaps activations to host memory
                              * under o->device (mp_solver_swaps) */

struct mp_frontier_s;
typedef struct mp__solver_s mp__solver_t;

typedef int (*mp__plan_fn)(const mp__solver_t *self, const mp_graph_t *g,
                           const mp_plan_options_t *o, double t0, mp_plan_result_t *r,
                           mp_error_t *err);
typedef int (*mp__frontier_fn)(const mp__solver_t *self, const mp_graph_t *g,
                               const mp_plan_options_t *o, double t0,
                               struct mp_frontier_s *out, mp_error_t *err);

struct mp__solver_s {
  mp_solver_t id;
  const char *name;      /* as mp_solver_name() and mp_solver_parse() spell it */
  unsigned caps;         /* MP__CAP_* */
  int swap_as;           /* with o->swap set, mp_plan() plans with this solver
                          * instead (auto: hybrid); -1: o->swap changes nothing */
  mp__plan_fn plan;
  mp__frontier_fn frontier;
};

/* The entry of s, or NULL when s is no solver. */
const mp__solver_t *mp__solver_get(mp_solver_t s);

/* The entries, each defined with its solver. */
int mp__plan_none(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_chen(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_dp(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_chain(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                   double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_auto(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_swap(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                  double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_hybrid(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                    double t0, mp_plan_result_t *r, mp_error_t *err);
int mp__plan_layrub(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                    double t0, mp_plan_result_t *r, mp_error_t *err);

int mp__frontier_none(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                      double t0, struct mp_frontier_s *out, mp_error_t *err);
int mp__frontier_chen(const mp__solver_t *self, const mp_graph_t *g, const mp_plan_options_t *o,
                      double t0, struct mp_frontier_s *out, mp_error_t *err);
int mp__frontier_sampled(const mp__solver_t *self, const mp_graph_t *g,
                         const mp_plan_options_t *o, double t0, struct mp_frontier_s *out,
                         mp_error_t *err);

#endif
