/* cmd_inspect.c - `memplan inspect` (graph statistics) and `memplan convert`
 * (the graph as native JSON). */
#include <stdio.h>

#include "cli.h"
#include "graph_stats_json.h"
#include "json_util.h"

int mp_cli_inspect(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_graph_t *g = NULL;
  mp_format_t used = MP_FORMAT_AUTO;
  mp_error_t err;
  char hash[65];
  json_t *out = NULL, *warn;
  size_t k;
  int rc;

  if ((rc = mp_cli_parse(argc, argv, "", 1, 1, &o)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, &used)) != 0) return rc;
  if ((rc = mp_graph_stats_json(g, &out, &err)) != 0 || (rc = mp_graph_hash(g, hash)) != 0) {
    fprintf(stderr, "memplan: %s: cannot measure the graph (%s)\n", o.pos[0], mp_err_name(rc));
    rc = rc == MP_ENOMEM ? MP_CLI_EXIT_INTERNAL : MP_CLI_EXIT_USAGE;
    goto out;
  }
  warn = json_array();
  if (warn == NULL || mp_json_set(out, "warnings", warn)) goto nomem;
  for (k = 0; k < g->n_warnings; k++)
    if (json_array_append_new(warn, json_string(g->warnings[k]))) goto nomem;
  if (mp_json_set(out, "format", json_string(mp_format_name(used))) ||
      mp_json_set(out, "graph_hash", json_string(hash)))
    goto nomem;
  rc = mp_cli_print_json(out, &o);
  out = NULL;
  goto out;
nomem:
  fprintf(stderr, "memplan: out of memory\n");
  rc = MP_CLI_EXIT_INTERNAL;
out:
  json_decref(out);
  mp_graph_free(g);
  return rc;
}

int mp_cli_convert(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_graph_t *g = NULL;
  int rc;
  if ((rc = mp_cli_parse(argc, argv, "", 1, 1, &o)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) return rc;
  rc = mp_cli_print_json(mp_graph_to_json(g), &o);
  mp_graph_free(g);
  return rc;
}
