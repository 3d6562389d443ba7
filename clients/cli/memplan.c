/* memplan.c - the offline command-line front end of the planner library.
 *
 *   memplan inspect  GRAPH                 graph statistics as one JSON object
 *   memplan convert  GRAPH                 the graph as native memplan.graph/1 JSON
 *   memplan simulate GRAPH SCHEDULE        the simulator's report, or the first bad step
 *   memplan plan     GRAPH --budget B ...  a schedule that fits the budget
 *                    (recomputing, or with --swap / the swap solvers also moving
 *                    activations to host memory under the device flags)
 *   memplan frontier GRAPH [--plot F.svg]  every budget's answer, as a curve
 *   memplan fit      GRAPH --budgets B,... which budgets fit: plan's answer at each
 *
 * plan, fit and frontier can also ask a running memplan-server (--server
 * URL or $MEMPLAN_URL) and print the same answer (remote.c).
 *
 * Output is JSON on stdout. Errors go to stderr as one line naming the file
 * and the JSON path or line of the problem. Exit codes: 0 success, 1 the plan
 * is infeasible (the JSON answer is still printed), 2 bad input or usage,
 * 3 an internal failure (out of memory, I/O).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MP__STR(x) #x
#define MP__XSTR(x) MP__STR(x)

/* The help text, in blocks: `memplan --help` prints them all, `memplan CMD
 * --help` the command's synopsis and the blocks of the options it takes. */
static const char mp__help_commands[] =
    "commands:\n"
    "  inspect  GRAPH                     graph statistics (nodes, edges, bytes, peak, hash)\n"
    "  convert  GRAPH                     the graph as native memplan.graph/1 JSON (/2 when\n"
    "                                     it has symbolic dimensions)\n"
    "  simulate GRAPH SCHEDULE            simulate a schedule: peak, times, validity\n"
    "  plan     GRAPH --budget B          plan recomputation under a memory budget\n"
    "  frontier GRAPH                     the memory/time frontier (every budget's answer)\n"
    "  fit      GRAPH --budgets B1,B2,... for each budget (or --device GPU): does it fit,\n"
    "                                     at what overhead (what plan returns there; exit 1\n"
    "                                     if one does not)\n"
    "  version                            print the version\n"
    "\n"
    "memplan COMMAND --help prints the options of one command.\n";

static const char mp__help_graph[] =
    "graph options (every command):\n"
    "  --format F        native | kusumoto | nodelink | auto (default: detect)\n"
    "  --max-nodes N     refuse graphs with more nodes (default 1000000)\n"
    "  --max-edges N     refuse graphs with more input references (default 10000000)\n"
    "  --max-id-len N    refuse longer ids (default 256 bytes)\n"
    "  --dim NAME=V      bind a symbolic graph's dimension (memplan.graph/2), e.g.\n"
    "                    --dim batch=64; repeatable; unbound ones take their default\n"
    "                    (docs/forecast.md)\n"
    "  --compact         one-line JSON output\n"
    "  -h, --help        print this help and exit\n";

static const char mp__help_simulate[] =
    "simulate options:\n"
    "  --timeline        include live bytes after every step\n"
    "  and the device options below (they time swap_in / swap_out / wait steps)\n";

static const char mp__help_plan[] =
    "plan options:\n"
    "  --budget B        total device memory: bytes or 12GiB, 800MB, ... (required)\n"
    "  --solver S        auto | exact | window | closures (approx) | chain\n"
    "                    | memonger | sqrt | none | swap | hybrid | layrub (default\n"
    "                    auto; window: the fast DP for wide graphs, within 10% of\n"
    "                    exact where measured; docs/algorithms.md says which when)\n"
    "  --objective O     time | memory (default time)\n"
    "  --accounting A    default | reference (default default)\n"
    "  --swap            let auto move activations to host memory (plans as hybrid)\n"
    "  --summary         print the answer without the schedule\n"
    "  --timeline        include the memory timeline\n"
    "  --threads N       threads for the exact DP's reverse passes, 1..64 (default:\n"
    "                    one per core, at most 8; the answer is the same with any number)\n"
    "  --progress        a progress bar on stderr (phase, share done, time) while it\n"
    "                    plans, when stderr is a terminal; nothing otherwise\n"
    "  --maximize DIM    the largest value of a symbolic dimension whose plan fits\n"
    "                    the budget, its plan and the next value's least feasible\n"
    "                    budget (other dimensions at --dim's values; exit 1 when even\n"
    "                    its min does not fit)\n"
    "  --max-value N     the largest value --maximize tries (default 2^31)\n";

static const char mp__help_frontier[] =
    "frontier options:\n"
    "  --solver S        as for plan, none aside (default auto)\n"
    "  --swap            with auto: the hybrid frontier\n"
    "  --plot FILE.svg   also draw the closures and memonger frontiers as an SVG chart\n"
    "  --frontier-solves N  the most solves the search for every breakpoint between\n"
    "                    the samples may add (default 4096; 0: the samples alone);\n"
    "                    it also stops after --frontier-seconds, and the answer's\n"
    "                    exact says whether it found them all\n"
    "  --frontier-seconds S  the time that search may take (default 60; 0: no\n"
    "                    limit, so that the answer depends on the graph alone)\n"
    "  --threads N       threads for the frontier's plans (planned in parallel) and\n"
    "                    the exact DP's reverse passes, as for plan\n"
    "  --progress        as for plan\n";

static const char mp__help_fit[] =
    "fit options:\n"
    "  --budgets B,...   the budgets to check, as for --budget\n"
    "  --device G,...    GPUs of the device catalogue (a100-40gb, h100-80gb, ...): each\n"
    "                    answered at its usable bytes (docs/devices.md)\n"
    "  --devices FILE    the catalogue (default: the shipped one; with --server the\n"
    "                    daemon's own is used)\n"
    "  --least           also the plan at the least budget that fits\n"
    "  --maximize DIM    with --device (no --budgets): each device's largest value of\n"
    "                    a symbolic graph's DIM (--max-value N, --dim for the others)\n"
    "                    (--budgets, --device or --least: at least one)\n"
    "  --solver S        as for plan\n"
    "  --swap, --threads N and the device options, as for frontier\n";

static const char mp__help_server[] =
    "daemon options (plan, fit, frontier: ask a running memplan-server instead):\n"
    "  --server URL      http://host:port of the daemon (default $MEMPLAN_URL; unset\n"
    "                    or empty: plan here). Plain http only, no https: use the\n"
    "                    daemon on loopback, or reach it through a tunnel. The graph is\n"
    "                    read and checked here and sent with the request; the\n"
    "                    answer is the one printed offline (solve_ms aside).\n"
    "                    frontier --server takes no device options (the daemon's\n"
    "                    frontier route plans under the default device); --threads\n"
    "                    is for offline runs (the daemon has --planner-threads)\n"
    "  --token-file F    a file holding your principal's bearer token alone, for a\n"
    "                    daemon run with --token-file\n"
    "                    (default $MEMPLAN_TOKEN_FILE)\n";

static const char mp__help_device[] =
    "device options (plan, fit, frontier, simulate; data migration, swap/hybrid/layrub):\n"
    "  --h2d-bandwidth R      host-to-device bytes/s: 12e9, 12GB, 12GB/s (default 12GB/s)\n"
    "  --d2h-bandwidth R      device-to-host bytes/s (default 12GB/s)\n"
    "  --copy-latency T       fixed cost per copy: seconds or 10us, 0.01ms (default 10us)\n"
    "  --copy-engines N       1 (one copy queue) or 2 (one per direction; default 2)\n"
    "  --host-budget B        pinned host memory: bytes, 64GiB, or unlimited (default)\n"
    "  --time-unit-seconds T  seconds per graph time unit (default: the graph's unit,\n"
    "                         0.25ms for unitless graphs such as the Kusumoto ones)\n"
    "  --intra-layer-reuse    write a gradient over its dead activation where allowed\n"
    "  --allocator A          exact (default: a tensor takes its bytes) or pytorch-cuda\n"
    "                         (every allocation rounded up to 512-byte blocks, as\n"
    "                         PyTorch's CUDA caching allocator hands them out)\n"
    "  --prefetch P           when swap and hybrid issue swap-ins: jit (default; the\n"
    "                         latest point whose compute hides the copy) or N, N backward\n"
    "                         steps before the first reader (1.." MP__XSTR(MP_DEVICE_MAX_PREFETCH) "; layrub uses 1;\n"
    "                         simulate accepts it and keeps the schedule's own swap-ins)\n";

static const char mp__help_exit[] =
    "exit status: 0 ok, 1 infeasible plan (or a budget that does not fit), 2 bad input\n"
    "or usage (a 4xx from the daemon too), 3 internal error (the daemon failed or could\n"
    "not be reached)\n";

/* One command's help: its synopsis and its option blocks, in order. */
typedef struct mp__cmd_help_s {
  const char *name;
  const char *synopsis;
  const char *blocks[5];
} mp__cmd_help_t;

static const mp__cmd_help_t mp__cmd_help[] = {
    {"inspect", "memplan inspect GRAPH [options]\n  graph statistics as one JSON object", {NULL}},
    {"convert", "memplan convert GRAPH [options]\n  the graph as native memplan.graph/1 (or /2) JSON", {NULL}},
    {"simulate", "memplan simulate GRAPH SCHEDULE [options]\n  the simulator's report, or the first bad step",
     {mp__help_simulate, mp__help_device}},
    {"plan", "memplan plan GRAPH --budget B [options]\n  a schedule that fits the budget",
     {mp__help_plan, mp__help_server, mp__help_device}},
    {"frontier", "memplan frontier GRAPH [options]\n  every budget's answer, as a memory/time staircase",
     {mp__help_frontier, mp__help_server, mp__help_device}},
    {"fit", "memplan fit GRAPH --budgets B1,B2,... [options]\n  which budgets fit: plan's answer at each",
     {mp__help_fit, mp__help_server, mp__help_device}},
};

void mp_cli_help(const char *cmd, FILE *f) {
  size_t i, j;
  for (i = 0; i < sizeof(mp__cmd_help) / sizeof(mp__cmd_help[0]); i++) {
    if (strcmp(cmd, mp__cmd_help[i].name) != 0) continue;
    fprintf(f, "usage: %s\n\n", mp__cmd_help[i].synopsis);
    for (j = 0; j < 5 && mp__cmd_help[i].blocks[j]; j++) fprintf(f, "%s\n", mp__cmd_help[i].blocks[j]);
    fprintf(f, "%s\n%s", mp__help_graph, mp__help_exit);
    return;
  }
}

static void usage(FILE *f) {
  const char *blocks[] = {mp__help_commands, mp__help_graph,  mp__help_simulate, mp__help_plan,
                          mp__help_frontier, mp__help_fit,    mp__help_server,   mp__help_device};
  size_t i;
  fputs("usage: memplan <command> [options]\n\n", f);
  for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) fprintf(f, "%s\n", blocks[i]);
  fputs(mp__help_exit, f);
}

/* A command's exit status: help asked with --help is a success. */
static int mp__status(int rc) { return rc == MP_CLI_EXIT_HELP ? MP_CLI_EXIT_OK : rc; }

int main(int argc, char **argv) {
  const char *cmd;
  if (argc < 2) {
    usage(stderr);
    return MP_CLI_EXIT_USAGE;
  }
  cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("memplan %s\n", MP_CLI_VERSION);
    return 0;
  }
  json_object_seed(1); /* deterministic key order in hash tables; output order is sorted */
  if (strcmp(cmd, "inspect") == 0) return mp__status(mp_cli_inspect(argc - 1, argv + 1));
  if (strcmp(cmd, "convert") == 0) return mp__status(mp_cli_convert(argc - 1, argv + 1));
  if (strcmp(cmd, "simulate") == 0) return mp__status(mp_cli_simulate(argc - 1, argv + 1));
  if (strcmp(cmd, "plan") == 0) return mp__status(mp_cli_plan(argc - 1, argv + 1));
  if (strcmp(cmd, "frontier") == 0) return mp__status(mp_cli_frontier(argc - 1, argv + 1));
  if (strcmp(cmd, "fit") == 0) return mp__status(mp_cli_fit(argc - 1, argv + 1));
  fprintf(stderr, "memplan: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return MP_CLI_EXIT_USAGE;
}
