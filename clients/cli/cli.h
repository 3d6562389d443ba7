/* cli.h - shared pieces of the memplan command-line tool: option parsing,
 * graph loading, error reporting and JSON output. Private to clients/cli. */
#ifndef MP_CLI_H
#define MP_CLI_H

#include <jansson.h>
#include <stdint.h>

#include "device.h"
#include "dims.h"
#include "formats.h"
#include "graph.h"
#include "http_client.h"
#include "plan.h"

#define MP_CLI_VERSION "0.1.0"

enum {
  MP_CLI_EXIT_OK = 0,
  MP_CLI_EXIT_INFEASIBLE = 1,
  MP_CLI_EXIT_USAGE = 2, /* bad usage or bad input */
  MP_CLI_EXIT_INTERNAL = 3,
  /* not an exit status: --help was printed; main exits 0 */
  MP_CLI_EXIT_HELP = -1
};

/* Every option any command accepts; each command checks which it allows. */
typedef struct mp_cli_opts_s {
  const char *pos[3];  /* positional arguments */
  int npos;
  mp_format_t format;
  mp_limits_t limits;
  int compact;
  int timeline;
  int summary;
  int has_budget;
  uint64_t budget;
  const char *budget_text;
  const char *solver;
  const char *objective;
  const char *accounting;
  const char *plot;
  unsigned threads; /* --threads (plan, frontier); 0: not given */
  size_t frontier_solves; /* --frontier-solves (frontier) */
  int has_frontier_solves;
  double frontier_ms;     /* --frontier-seconds (frontier), in ms; 0: no limit */
  int has_frontier_ms;
  /* data migration: --swap, --intra-layer-reuse, and the device values as
   * given (parsed by mp_cli_device) */
  int swap;
  int intra_layer_reuse;
  const char *h2d_bandwidth;
  const char *d2h_bandwidth;
  const char *copy_latency;
  const char *copy_engines;
  const char *host_budget;
  const char *time_unit_seconds;
  const char *prefetch; /* jit or a lookahead in backward steps */
  const char *allocator; /* exact or pytorch-cuda */
  const char *budgets;  /* fit: --budgets B1,B2,... as given */
  const char *device;   /* fit: --device NAME[,NAME...] of the device catalogue */
  const char *devices_file; /* fit: --devices FILE, the catalogue (default: the shipped one) */
  int least;            /* fit: --least */
  /* --server URL and --token-file F (plan, fit, frontier); NULL when not
   * given (the environment may still name them: mp_cli_server_open) */
  const char *server;
  const char *token_file;
  int progress; /* --progress (plan, frontier): a bar on stderr when it is a terminal */
  /* --dim NAME=VALUE (repeatable, every command that loads a graph): the
   * binding mp_cli_load_graph applies to a symbolic graph */
  mp_binding_t dims;
  const char *maximize; /* plan: --maximize DIM */
  int64_t max_value;    /* plan: --max-value N, the largest value --maximize tries (0: 2^31) */
} mp_cli_opts_t;

/* The options of the commands that can ask a running daemon instead. */
#define MP_CLI_SERVER_OPTS "--server --token-file"

/* The options every command that plans or simulates under a device takes.
 * simulate accepts --prefetch too, so that one set of device flags serves
 * both `plan` and the replay of its schedule, but it changes nothing there:
 * a given schedule's swap-ins are where its steps put them. */
#define MP_CLI_DEVICE_OPTS                                                                   \
  "--h2d-bandwidth --d2h-bandwidth --copy-latency --copy-engines --host-budget "            \
  "--time-unit-seconds --intra-layer-reuse --prefetch --allocator"

/* Parse argv (argv[0] is the command name). `allowed` is a string of option
 * names separated by spaces ("--budget --solver"); graph options,
 * --compact and -h/--help are always allowed. Returns 0, or prints to stderr
 * and returns MP_CLI_EXIT_USAGE, or prints the command's help to stdout and
 * returns MP_CLI_EXIT_HELP. */
int mp_cli_parse(int argc, char **argv, const char *allowed, int min_pos, int max_pos,
                 mp_cli_opts_t *o);

/* The threads the exact DP's reverse passes may use: --threads, else one
 * per online core, at most MP_CLI_DEFAULT_MAX_THREADS (each thread keeps a
 * walk stack of one frame per lower set, and the passes are bound by
 * memory, so more threads than that gain little). */
#define MP_CLI_DEFAULT_MAX_THREADS 8
unsigned mp_cli_threads(const mp_cli_opts_t *o);

/* The device model from the options (planner/device.h defaults for what is
 * not given). Returns 0, or prints "memplan: --flag: why" and returns
 * MP_CLI_EXIT_USAGE. */
int mp_cli_device(const mp_cli_opts_t *o, mp_device_t *d);

/* --solver (NULL: auto) and --swap into *solver and *swap (the swap solvers
 * imply --swap; --swap needs auto or a swap solver). `frontier` refuses
 * `none` and turns auto with --swap into hybrid. 0 or MP_CLI_EXIT_USAGE
 * after a message. */
int mp_cli_solver(const mp_cli_opts_t *o, int frontier, mp_solver_t *solver, int *swap);

/* Load the graph named by `path` and bind it at --dim's values when any
 * were given (dims.h). Prints the error and returns an exit code on
 * failure, 0 on success; warnings go to stderr. */
int mp_cli_load_graph(const char *path, const mp_cli_opts_t *o, mp_graph_t **out,
                      mp_format_t *used);

/* Print "memplan: <file>: <where>: <message> (<CODE>)" and return the exit
 * code for that error (3 for ENOMEM, 2 for everything else: bad input, a
 * missing or unreadable file). */
int mp_cli_report(const char *file, const mp_error_t *err);

/* Print a JSON value to stdout (indented unless --compact) and a newline,
 * then release it. Returns 0 or MP_CLI_EXIT_INTERNAL. */
int mp_cli_print_json(json_t *v, const mp_cli_opts_t *o);

/* ---- --server: plan, fit and frontier as clients of a daemon (remote.c) ---- */

/* How long a plan request may hold the connection on the daemon (its
 * "wait"), and how long the client waits for any answer beyond that; a fit
 * or a frontier is held until it is computed (the daemon's --plan-timeout,
 * 300 s by default), so those wait up to MP_CLI_SERVER_LONG_S. */
#define MP_CLI_SERVER_WAIT_S 25
#define MP_CLI_SERVER_SLACK_S 60
#define MP_CLI_SERVER_LONG_S 3600

typedef struct mp_cli_server_s {
  const char *url;    /* as given, for messages */
  mp_http_url_t u;
  char *token;        /* malloc'd, NULL without a token file */
} mp_cli_server_t;

/* The daemon to ask: --server URL, else $MEMPLAN_URL (unset or "": none,
 * *on = 0, plan offline), with the bearer token read from --token-file,
 * else $MEMPLAN_TOKEN_FILE. 0 (and *on), or MP_CLI_EXIT_USAGE after a
 * message. Release with mp_cli_server_close. */
int mp_cli_server_open(const mp_cli_opts_t *o, mp_cli_server_t *s, int *on);
void mp_cli_server_close(mp_cli_server_t *s);

/* One exchange: 0 with the HTTP *status and *answer (the JSON body, a new
 * reference; NULL when the body is not JSON), or MP_CLI_EXIT_INTERNAL after
 * printing why the daemon could not be reached. `body` (NULL: none) is
 * borrowed. */
int mp_cli_server_call(const mp_cli_server_t *s, const char *method, const char *path, const json_t *body,
                       double timeout_s, int *status, json_t **answer);

/* mp_cli_server_call POSTing a request about graph g: `body` gains the
 * field "graph" (g as native JSON) unless it has one, and is sent. */
int mp_cli_server_call_graph(const mp_cli_server_t *s, const char *path, json_t *body, const mp_graph_t *g,
                             double timeout_s, int *status, json_t **answer);

/* Print the daemon's refusal or failure, "memplan: server URL answered
 * 400: $.budget: <message> (<code>)", release `answer`, and return the
 * exit code: MP_CLI_EXIT_USAGE for a 4xx, MP_CLI_EXIT_INTERNAL otherwise. */
int mp_cli_server_refused(const mp_cli_server_t *s, int status, json_t *answer);

/* The commands. argv[0] is the command name. */
/* --progress: a one-line bar on stderr, drawn only when stderr is a
 * terminal (otherwise every call is a no-op, so scripts and logs see
 * nothing extra). Redrawn at most ten times a second; mp_cli_progress_end
 * erases it. */
typedef struct mp_cli_progress_s {
  int on;
  double t0_ms, last_ms;
  int drawn;
} mp_cli_progress_t;
void mp_cli_progress_begin(mp_cli_progress_t *p, int asked);
/* Draw `phase` with `fraction` done (< 0: unknown) and `elapsed_ms`
 * (< 0: since begin). */
void mp_cli_progress_draw(mp_cli_progress_t *p, const char *phase, double fraction, double elapsed_ms);
/* The planner's progress callback (mp_plan_options_t.progress); arg is the bar. */
void mp_cli_progress_cb(void *arg, const char *phase, double fraction);
/* The "progress" object of a daemon's answer ({"phase", "fraction", "elapsed_ms"}), if any. */
void mp_cli_progress_json(mp_cli_progress_t *p, const json_t *answer);
void mp_cli_progress_end(mp_cli_progress_t *p);

/* The help of command `cmd` (its synopsis and the options it takes). */
void mp_cli_help(const char *cmd, FILE *f);

int mp_cli_inspect(int argc, char **argv);
int mp_cli_convert(int argc, char **argv);
int mp_cli_simulate(int argc, char **argv);
int mp_cli_plan(int argc, char **argv);
int mp_cli_frontier(int argc, char **argv);
int mp_cli_fit(int argc, char **argv);

#endif
