/* dp_window.c - the family the exact DP falls back to when it cannot use
 * every lower set (their number passes the limit, their bitsets the memory
 * cap, or the deadline passes): the window family (lowerset_window.h), the
 * lower sets whose ragged edge spans at most w consecutive positions of the
 * topological order, with the largest w whose sets fit a size chosen by
 * the graph's length (mp__window_sets), or every lower set when they are few
 * (MP__WINDOW_WHOLE_SETS). The exact DP's walks and bounds run on it unchanged. When even
 * that family cannot be built, the approximate family answers.
 *
 * Why the window family (docs/algorithms.md, "The fallback: the window
 * family"): the approximate family's n+1 sets, one per node with its
 * ancestors, miss the sets a branchy graph needs (a block half done on
 * each branch): on GoogLeNet and on random layered DAGs its plans
 * recompute several times what the exact DP's do. The window family holds
 * every prefix and every lower set near one, and the exact DP's machinery
 * (the cover walks, their pruning, the staircase) works on it as it is.
 */
#include <string.h>

#include "dp_internal.h"
#include "lowerset_window.h"

/* The window family's size: the DP's work grows with the square of its sets
 * (a set's walk reaches most of the sets below it) and with the graph's
 * length, so the family gets fewer sets on longer graphs: MP__WINDOW_WORK /
 * n, within [MP__WINDOW_MIN_SETS, MP__WINDOW_MAX_SETS]. On GoogLeNet (134
 * activations, 27,358 lower sets) that is about 3,000 sets, whose plans
 * match the exact DP's at every budget of the bench's wide table; on random
 * layered DAGs of 250 and 400 nodes a solve takes two to four seconds. */
size_t mp__window_sets(size_t n_activations) {
  size_t n = MP__WINDOW_WORK / (n_activations ? n_activations : 1);
  return n < MP__WINDOW_MIN_SETS ? MP__WINDOW_MIN_SETS : n > MP__WINDOW_MAX_SETS ? MP__WINDOW_MAX_SETS : n;
}

int mp__fallback_family(mp__dp_t *c, const mp_dp_options_t *o) {
  size_t width = 0;
  int rc;
  c->deadline_at = 0; /* the fallback runs without a deadline */
  if (o->window_sets == 0) {
    /* A small lattice is taken whole (the window of full width): its DP is
     * cheap, and a window of a few thousand sets can miss what the exact
     * DP finds there (Moccasin's 100-node layered DAG, 13,567 lower sets:
     * its least budget 5.5% higher, up to 1.32 times the recomputation,
     * with 4,040 sets). */
    rc = mp_lowerset_window(&c->dag, MP__WINDOW_WHOLE_SETS, o->should_stop, o->stop_arg, &c->fam,
                            &width);
    if (rc == 0 && width >= c->dag.n) {
      c->have_fam = 1;
      return mp__dp_prepare(c);
    }
    if (rc == 0) mp_lowerset_family_free(&c->fam);
    if (rc != 0 && rc != MP_ELIMIT) return rc;
  }
  rc = mp_lowerset_window(&c->dag, o->window_sets ? o->window_sets : mp__window_sets(c->dag.n),
                          o->should_stop, o->stop_arg, &c->fam, NULL);
  if (rc == MP_ELIMIT) rc = mp_lowerset_approx_polled(&c->dag, o->should_stop, o->stop_arg, &c->fam);
  if (rc != 0) return rc;
  c->have_fam = 1;
  return mp__dp_prepare(c);
}
