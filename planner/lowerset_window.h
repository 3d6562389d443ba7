/* lowerset_window.h - the window family of lower sets: the exact DP's
 * fallback on graphs too wide for every lower set (docs/algorithms.md,
 * "The window family").
 *
 * P_a is the prefix of the first a activations in the DAG's topological
 * order (its compact numbering). The window family of width w holds every
 * lower set L with P_a included in L included in P_(a+w) for some a: the
 * lower sets whose ragged edge spans at most w consecutive positions of the
 * order. It holds every prefix (so every plan of Chen's prefix-cut family),
 * and at w = n every lower set.
 *
 * Why it suits the exact DP's machinery: the exact family's walks
 * (dp_forward.c, dp_reverse.c) go from a set L_j down to a subset L_i by
 * removing the nodes of L_j \ L_i in decreasing order, one cover edge at a
 * time. Every set on that path, L_i plus the smallest nodes of L_j \ L_i,
 * is (L_j up to some position s) plus (L_i after s), whose ragged edge lies
 * within L_j's or L_i's: it is in the family too. So the walks, the scans
 * and every bound of the exact DP hold on this family unchanged, with the
 * family's cover edges (down, down_node) restricted to its own sets.
 *
 * Ownership: as lowerset.h; the family is freed with
 * mp_lowerset_family_free. Its `exact` flag is 1 (it has cover edges and
 * its walks reach every subset in the family), `by_node` is NULL.
 */
#ifndef MP_LOWERSET_WINDOW_H
#define MP_LOWERSET_WINDOW_H

#include <stddef.h>

#include "lowerset.h"

/* The window family of the largest width whose sets number at most
 * max_sets (at least width 1: the prefixes and one-node variations, about
 * 2n sets, whatever max_sets says), sorted by size. *width (optional)
 * receives the width. 0, MP_ENOMEM, MP_ELIMIT (bitsets past
 * MP_LOWERSET_MAX_BYTES) or MP_ECANCELED (should_stop, polled between
 * widths and while building). */
int mp_lowerset_window(const mp_actdag_t *d, size_t max_sets, int (*should_stop)(void *),
                       void *stop_arg, mp_lowerset_family_t *out, size_t *width);

#endif
