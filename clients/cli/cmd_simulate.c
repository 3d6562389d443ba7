/* cmd_simulate.c - `memplan simulate GRAPH SCHEDULE`: replay a schedule and
 * print the simulator's report, or the first invalid step. Swap and wait
 * steps are timed under the device flags (planner/device.h), so a plan's
 * schedule replays with the figures `memplan plan` printed. --prefetch is
 * accepted (and checked) with the other device flags so that the same flags
 * serve both commands, but it moves nothing: the schedule's swap_in steps
 * are where the file puts them. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "dims_json.h"
#include "schedule_json.h"
#include "simulator.h"

int mp_cli_simulate(int argc, char **argv) {
  mp_cli_opts_t o;
  mp_graph_t *g = NULL;
  mp_schedule_t *s = NULL;
  mp_sim_report_t rep = {0};
  mp_sim_options_t so;
  mp_device_t dev;
  mp_error_t err;
  char *buf;
  size_t len = 0;
  int rc;

  if ((rc = mp_cli_parse(argc, argv, "--timeline " MP_CLI_DEVICE_OPTS, 2, 2, &o)) != 0) return rc;
  if ((rc = mp_cli_device(&o, &dev)) != 0) return rc;
  if ((rc = mp_cli_load_graph(o.pos[0], &o, &g, NULL)) != 0) return rc;
  mp_error_clear(&err);
  if ((rc = mp_read_file(o.pos[1], &buf, &len, &err)) != 0) {
    mp_graph_free(g);
    return mp_cli_report(o.pos[1], &err);
  }
  rc = mp_schedule_load_buffer(g, buf, len, &s, &err);
  free(buf);
  so.device = &dev;
  if (rc == 0) rc = mp_simulate_ex(g, s, &so, &rep, &err);
  if (rc != 0) {
    rc = mp_cli_report(o.pos[1], &err);
  } else {
    json_t *out = mp_sim_report_to_json(g, &rep, o.timeline);
    if (out && mp_forecast_json_add(out, g) != 0) {
      json_decref(out);
      out = NULL;
    }
    rc = mp_cli_print_json(out, &o);
  }
  mp_sim_report_free(&rep);
  mp_schedule_free(s);
  mp_graph_free(g);
  return rc;
}
