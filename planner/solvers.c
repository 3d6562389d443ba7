/* solvers.c - the solver table (solver.h) and what plan.h says about a
 * solver by its id: its name, parsing a name, whether it migrates data.
 *
 * The table is indexed by mp_solver_t. Adding a solver is adding an enum
 * value in plan.h, an entry here, and its plan and frontier functions in
 * its own file.
 */
#include "solver.h"

#include <string.h>

#define MP__DP_CAPS (MP__CAP_REFERENCE | MP__CAP_BUDGET)

static const mp__solver_t mp__solvers[] = {
    [MP_SOLVER_AUTO] = {MP_SOLVER_AUTO, "auto", MP__DP_CAPS | MP__CAP_EXACT, MP_SOLVER_HYBRID,
                        mp__plan_auto, mp__frontier_sampled},
    [MP_SOLVER_EXACT] = {MP_SOLVER_EXACT, "exact", MP__DP_CAPS | MP__CAP_EXACT, -1, mp__plan_dp,
                         mp__frontier_sampled},
    [MP_SOLVER_APPROX] = {MP_SOLVER_APPROX, "closures", MP__DP_CAPS, -1, mp__plan_dp,
                          mp__frontier_sampled},
    [MP_SOLVER_MEMONGER] = {MP_SOLVER_MEMONGER, "memonger", 0, -1, mp__plan_chen,
                            mp__frontier_chen},
    [MP_SOLVER_SQRT] = {MP_SOLVER_SQRT, "sqrt", 0, -1, mp__plan_chen, mp__frontier_chen},
    [MP_SOLVER_NONE] = {MP_SOLVER_NONE, "none", 0, -1, mp__plan_none, mp__frontier_none},
    [MP_SOLVER_SWAP] = {MP_SOLVER_SWAP, "swap", MP__CAP_SWAPS | MP__CAP_BUDGET, -1, mp__plan_swap,
                        mp__frontier_sampled},
    [MP_SOLVER_HYBRID] = {MP_SOLVER_HYBRID, "hybrid", MP__CAP_SWAPS | MP__CAP_BUDGET, -1,
                          mp__plan_hybrid, mp__frontier_sampled},
    [MP_SOLVER_LAYRUB] = {MP_SOLVER_LAYRUB, "layrub", MP__CAP_SWAPS, -1, mp__plan_layrub,
                          mp__frontier_sampled},
    [MP_SOLVER_CHAIN] = {MP_SOLVER_CHAIN, "chain", MP__DP_CAPS | MP__CAP_EXACT, -1, mp__plan_chain,
                         mp__frontier_sampled},
    [MP_SOLVER_WINDOW] = {MP_SOLVER_WINDOW, "window", MP__DP_CAPS | MP__CAP_WINDOW, -1,
                          mp__plan_dp, mp__frontier_sampled},
};

#define MP__N_SOLVERS (sizeof(mp__solvers) / sizeof(mp__solvers[0]))

const mp__solver_t *mp__solver_get(mp_solver_t s) {
  return (unsigned)s < MP__N_SOLVERS ? &mp__solvers[s] : NULL;
}

const char *mp_solver_name(mp_solver_t s) {
  const mp__solver_t *e = mp__solver_get(s);
  return e ? e->name : "?";
}

int mp_solver_swaps(mp_solver_t s) {
  const mp__solver_t *e = mp__solver_get(s);
  return e != NULL && (e->caps & MP__CAP_SWAPS) != 0;
}

int mp_solver_parse(const char *s, mp_solver_t *out) {
  size_t i;
  if (strcmp(s, "approx") == 0) { /* another name for closures */
    *out = MP_SOLVER_APPROX;
    return 0;
  }
  for (i = 0; i < MP__N_SOLVERS; i++)
    if (strcmp(s, mp__solvers[i].name) == 0) {
      *out = mp__solvers[i].id;
      return 0;
    }
  return MP_EINVAL;
}
