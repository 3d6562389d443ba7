/* plot_svg.h - an SVG chart of frontiers: peak memory (x, GiB) against
 * recomputation overhead (y, %), one step line per solver. */
#ifndef MP_PLOT_SVG_H
#define MP_PLOT_SVG_H

#include <stdio.h>

#include "frontier.h"

/* Write the chart for `n` frontiers to f. `title` is escaped. 0 or -1 on a
 * write error. */
int mp_plot_frontiers_svg(FILE *f, const char *title, const mp_frontier_t *fr, size_t n);

#endif
