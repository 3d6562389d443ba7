/* cmd_frontier.c - `memplan frontier GRAPH [--solver S] [--plot FILE.svg]`:
 * the memory/time frontier as JSON points, and optionally an SVG chart of
 * the asked solver's, approx's and memonger's frontiers side by side. The
 * swap solvers (or --swap, which makes auto hybrid) plan under the device
 * flags; their points cost extra time (recomputation plus stalls). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "frontier.h"
#include "frontier_json.h"
#include "plot_svg.h"

int mp_cli_frontier(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_plan_options_t po;
  mp_frontier_t fr[3];
  mp_graph_t *g = NULL;
  mp_error_t err;
  char hash[65];
  size_t nf = 0, i;
  int rc;

  memset(fr, 0, sizeof(fr));
  if ((rc = mp_cli_parse(argc, argv, "--solver --plot --swap --threads " MP_CLI_DEVICE_OPTS, 1, 1, &o)) != 0) return rc;
  mp_plan_options_init(&po);
  po.threads = mp_cli_threads(&o);
  if ((rc = mp_cli_solver(&o, 1, &po.solver, &po.swap)) != 0) return rc;
  if ((rc = mp_cli_device(&o, &po.device)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) return rc;
  mp_error_clear(&err);
  if ((rc = mp_graph_hash(g, hash)) != 0 || (rc = mp_frontier(g, &po, &fr[nf++], &err)) != 0) {
    if (err.code == 0) mp_error_set(&err, rc, "", "out of memory");
    rc = mp_cli_report(o.pos[0], &err);
    goto out;
  }
  if (o.plot) {
    /* The chart compares families: the asked solver, then approx and
     * memonger unless one of them was the asked one. */
    static const mp_solver_t others[] = {MP_SOLVER_APPROX, MP_SOLVER_MEMONGER};
    FILE *f;
    char title[300];
    for (i = 0; i < 2; i++) {
      mp_plan_options_t p2 = po;
      if (others[i] == po.solver) continue;
      p2.solver = others[i];
      if ((rc = mp_frontier(g, &p2, &fr[nf], &err)) != 0) {
        rc = mp_cli_report(o.pos[0], &err);
        goto out;
      }
      nf++;
    }
    if ((f = fopen(o.plot, "w")) == NULL) {
      fprintf(stderr, "memplan: cannot write %s\n", o.plot);
      rc = MP_CLI_EXIT_USAGE;
      goto out;
    }
    snprintf(title, sizeof(title), "%s: %s against peak memory", g->name[0] ? g->name : o.pos[0],
             fr[0].migrate ? "time overhead (recomputation and stalls)" : "recomputation overhead");
    rc = mp_plot_frontiers_svg(f, title, fr, nf);
    if (fclose(f) != 0 || rc != 0) {
      fprintf(stderr, "memplan: cannot write %s\n", o.plot);
      rc = MP_CLI_EXIT_INTERNAL;
      goto out;
    }
  }
  rc = mp_cli_print_json(mp_frontier_to_json(&fr[0], hash), &o);
out:
  for (i = 0; i < 3; i++) mp_frontier_free(&fr[i]);
  mp_graph_free(g);
  return rc;
}
