/* cli_common.c - option parsing, graph loading and error output shared by
 * the memplan commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dp.h"
#include "json_util.h"
#include "request_json.h"
#include "units.h"

static int mp__allowed(const char *allowed, const char *name) {
  size_t n = strlen(name);
  const char *p = allowed;
  while (p && (p = strstr(p, name)) != NULL) {
    if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    p += n;
  }
  return 0;
}

static int mp__parse_size(const char *opt, const char *val, size_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  if (val == NULL || *val == '\0' || *val == '-') goto bad;
  v = strtoull(val, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0) goto bad;
  *out = (size_t)v;
  return 0;
bad:
  fprintf(stderr, "memplan: %s takes a positive whole number, not '%s'\n", opt, val ? val : "");
  return MP_CLI_EXIT_USAGE;
}

unsigned mp_cli_threads(const mp_cli_opts_t *o) {
  long n;
  if (o->threads > 0) return o->threads;
  n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > MP_CLI_DEFAULT_MAX_THREADS ? MP_CLI_DEFAULT_MAX_THREADS : (unsigned)n;
}

int mp_cli_parse(int argc, char **argv, const char *allowed, int min_pos, int max_pos,
                 mp_cli_opts_t *o) {
  int i;
  memset(o, 0, sizeof(*o));
  mp_limits_default(&o->limits);
  mp_binding_init(&o->dims, "--dim");
  o->format = MP_FORMAT_AUTO;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
    char name[32];
    const char *eq;
    if (a[0] != '-' || a[1] == '\0') {
      if (o->npos >= max_pos) {
        fprintf(stderr, "memplan %s: unexpected argument '%s'\n", argv[0], a);
        return MP_CLI_EXIT_USAGE;
      }
      o->pos[o->npos++] = a;
      continue;
    }
    /* --name=value or --name value */
    eq = strchr(a, '=');
    if (eq && (size_t)(eq - a) < sizeof(name)) {
      memcpy(name, a, (size_t)(eq - a));
      name[eq - a] = '\0';
      val = eq + 1;
    } else {
      snprintf(name, sizeof(name), "%s", a);
    }
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
      mp_cli_help(argv[0], stdout);
      return MP_CLI_EXIT_HELP;
    }
    if (strcmp(name, "--compact") == 0) {
      o->compact = 1;
      continue;
    }
    if (strcmp(name, "--timeline") == 0 && mp__allowed(allowed, name)) {
      o->timeline = 1;
      continue;
    }
    if (strcmp(name, "--summary") == 0 && mp__allowed(allowed, name)) {
      o->summary = 1;
      continue;
    }
    if (strcmp(name, "--progress") == 0 && mp__allowed(allowed, name)) {
      o->progress = 1;
      continue;
    }
    if (strcmp(name, "--least") == 0 && mp__allowed(allowed, name)) {
      o->least = 1;
      continue;
    }
    if (strcmp(name, "--swap") == 0 && mp__allowed(allowed, name)) {
      o->swap = 1;
      continue;
    }
    if (strcmp(name, "--intra-layer-reuse") == 0 && mp__allowed(allowed, name)) {
      o->intra_layer_reuse = 1;
      continue;
    }
    if (strcmp(name, "--format") != 0 && strcmp(name, "--max-nodes") != 0 && strcmp(name, "--dim") != 0 &&
        strcmp(name, "--max-edges") != 0 && strcmp(name, "--max-id-len") != 0 &&
        !mp__allowed(allowed, name)) {
      fprintf(stderr, "memplan %s: unknown option '%s' (see memplan --help)\n", argv[0], a);
      return MP_CLI_EXIT_USAGE;
    }
    if (val == NULL) {
      if (i + 1 >= argc) {
        fprintf(stderr, "memplan %s: option %s needs a value\n", argv[0], name);
        return MP_CLI_EXIT_USAGE;
      }
      val = argv[++i];
    }
    if (strcmp(name, "--format") == 0) {
      if (mp_format_parse(val, &o->format) != 0) {
        fprintf(stderr, "memplan: --format must be native, kusumoto, nodelink or auto, not '%s'\n", val);
        return MP_CLI_EXIT_USAGE;
      }
    } else if (strcmp(name, "--max-nodes") == 0) {
      if (mp__parse_size(name, val, &o->limits.max_nodes)) return MP_CLI_EXIT_USAGE;
    } else if (strcmp(name, "--max-edges") == 0) {
      if (mp__parse_size(name, val, &o->limits.max_edges)) return MP_CLI_EXIT_USAGE;
    } else if (strcmp(name, "--dim") == 0) {
      mp_error_t err;
      if (mp_binding_parse_arg(&o->dims, val, &err) != 0) {
        fprintf(stderr, "memplan: %s: %s\n", err.path, err.message);
        return MP_CLI_EXIT_USAGE;
      }
    } else if (strcmp(name, "--maximize") == 0) {
      o->maximize = val;
    } else if (strcmp(name, "--max-value") == 0) {
      size_t n;
      if (mp__parse_size(name, val, &n)) return MP_CLI_EXIT_USAGE;
      if (n > (size_t)MP_DIM_VALUE_MAX) {
        fprintf(stderr, "memplan: --max-value takes 1 to %lld, not '%s'\n", (long long)MP_DIM_VALUE_MAX, val);
        return MP_CLI_EXIT_USAGE;
      }
      o->max_value = (int64_t)n;
    } else if (strcmp(name, "--max-id-len") == 0) {
      if (mp__parse_size(name, val, &o->limits.max_id_len)) return MP_CLI_EXIT_USAGE;
    } else if (strcmp(name, "--budget") == 0) {
      mp_error_t err;
      if (mp_parse_bytes(val, &o->budget, &err) != 0) {
        fprintf(stderr, "memplan: --budget: %s\n", err.message);
        return MP_CLI_EXIT_USAGE;
      }
      o->has_budget = 1;
      o->budget_text = val;
    } else if (strcmp(name, "--solver") == 0) {
      o->solver = val;
    } else if (strcmp(name, "--objective") == 0) {
      o->objective = val;
    } else if (strcmp(name, "--accounting") == 0) {
      o->accounting = val;
    } else if (strcmp(name, "--plot") == 0) {
      o->plot = val;
    } else if (strcmp(name, "--threads") == 0) {
      size_t n;
      if (mp__parse_size(name, val, &n)) return MP_CLI_EXIT_USAGE;
      if (n > MP_DP_MAX_THREADS) {
        fprintf(stderr, "memplan: --threads takes 1 to %d, not '%s'\n", MP_DP_MAX_THREADS, val);
        return MP_CLI_EXIT_USAGE;
      }
      o->threads = (unsigned)n;
    } else if (strcmp(name, "--frontier-solves") == 0) {
      /* 0 is allowed: the samples alone */
      if (strcmp(val, "0") == 0) o->frontier_solves = 0;
      else if (mp__parse_size(name, val, &o->frontier_solves)) return MP_CLI_EXIT_USAGE;
      o->has_frontier_solves = 1;
    } else if (strcmp(name, "--frontier-seconds") == 0) {
      mp_error_t e;
      double sec;
      /* 0: no limit, so that the answer depends on the graph alone */
      if (mp_parse_seconds(val, &sec, &e) != 0 || !(sec >= 0)) {
        fprintf(stderr, "memplan: --frontier-seconds takes a duration such as 60 or 2m (0: none), not '%s'\n",
                val);
        return MP_CLI_EXIT_USAGE;
      }
      o->frontier_ms = sec * 1000.0;
      o->has_frontier_ms = 1;
    } else if (strcmp(name, "--h2d-bandwidth") == 0) {
      o->h2d_bandwidth = val;
    } else if (strcmp(name, "--d2h-bandwidth") == 0) {
      o->d2h_bandwidth = val;
    } else if (strcmp(name, "--copy-latency") == 0) {
      o->copy_latency = val;
    } else if (strcmp(name, "--copy-engines") == 0) {
      o->copy_engines = val;
    } else if (strcmp(name, "--host-budget") == 0) {
      o->host_budget = val;
    } else if (strcmp(name, "--time-unit-seconds") == 0) {
      o->time_unit_seconds = val;
    } else if (strcmp(name, "--prefetch") == 0) {
      o->prefetch = val;
    } else if (strcmp(name, "--allocator") == 0) {
      o->allocator = val;
    } else if (strcmp(name, "--budgets") == 0) {
      o->budgets = val;
    } else if (strcmp(name, "--device") == 0) {
      o->device = val;
    } else if (strcmp(name, "--devices") == 0) {
      o->devices_file = val;
    } else if (strcmp(name, "--server") == 0) {
      o->server = val;
    } else if (strcmp(name, "--token-file") == 0) {
      o->token_file = val;
    }
  }
  if (o->npos < min_pos) {
    fprintf(stderr, "memplan %s: missing argument (see memplan --help)\n", argv[0]);
    return MP_CLI_EXIT_USAGE;
  }
  return 0;
}

static int mp__flag_error(const char *flag, const mp_error_t *e) {
  fprintf(stderr, "memplan: %s: %s\n", flag, e->message);
  return MP_CLI_EXIT_USAGE;
}

int mp_cli_device(const mp_cli_opts_t *o, mp_device_t *d) {
  mp_error_t e;
  mp_error_clear(&e);
  mp_device_init(d);
  if (o->h2d_bandwidth && mp_parse_rate(o->h2d_bandwidth, &d->h2d_bytes_per_s, &e) != 0)
    return mp__flag_error("--h2d-bandwidth", &e);
  if (o->d2h_bandwidth && mp_parse_rate(o->d2h_bandwidth, &d->d2h_bytes_per_s, &e) != 0)
    return mp__flag_error("--d2h-bandwidth", &e);
  if (o->copy_latency && mp_parse_seconds(o->copy_latency, &d->latency_s, &e) != 0)
    return mp__flag_error("--copy-latency", &e);
  if (o->time_unit_seconds && mp_parse_seconds(o->time_unit_seconds, &d->time_unit_s, &e) != 0)
    return mp__flag_error("--time-unit-seconds", &e);
  if (o->copy_engines) {
    if (strcmp(o->copy_engines, "1") != 0 && strcmp(o->copy_engines, "2") != 0) {
      fprintf(stderr, "memplan: --copy-engines must be 1 (one queue for both directions) or 2 (one each), not '%s'\n",
              o->copy_engines);
      return MP_CLI_EXIT_USAGE;
    }
    d->copy_engines = o->copy_engines[0] - '0';
  }
  if (o->host_budget) {
    if (strcmp(o->host_budget, "unlimited") == 0)
      d->host_bytes = UINT64_MAX;
    else if (mp_parse_bytes(o->host_budget, &d->host_bytes, &e) != 0)
      return mp__flag_error("--host-budget", &e);
  }
  if (o->prefetch && mp_parse_prefetch(o->prefetch, &d->prefetch_lookahead, &e) != 0)
    return mp__flag_error("--prefetch", &e);
  d->intra_layer_reuse = o->intra_layer_reuse;
  if (o->allocator && mp_allocator_parse(o->allocator, &d->allocator) != 0) {
    fprintf(stderr, "memplan: --allocator must be exact or pytorch-cuda, not '%s'\n", o->allocator);
    return MP_CLI_EXIT_USAGE;
  }
  if (mp_device_check(d, &e) != 0) {
    fprintf(stderr, "memplan: %s: %s\n", e.path, e.message);
    return MP_CLI_EXIT_USAGE;
  }
  return 0;
}

int mp_cli_solver(const mp_cli_opts_t *o, int frontier, mp_solver_t *solver, int *swap) {
  mp_error_t e;
  *solver = MP_SOLVER_AUTO;
  *swap = o->swap;
  if (o->solver && (mp_solver_parse(o->solver, solver) != 0 || (frontier && *solver == MP_SOLVER_NONE))) {
    fprintf(stderr,
            "memplan: --solver must be auto, exact, window, closures (or approx), chain, "
            "memonger, sqrt,%s swap, hybrid or layrub, not '%s'\n",
            frontier ? "" : " none,", o->solver);
    return MP_CLI_EXIT_USAGE;
  }
  if (mp_swap_check(*solver, o->swap, swap, &e) != 0) return mp__flag_error("--swap", &e);
  if (frontier && *swap && *solver == MP_SOLVER_AUTO) *solver = MP_SOLVER_HYBRID;
  return 0;
}

int mp_cli_report(const char *file, const mp_error_t *err) {
  char where[MP_ERROR_PATH_MAX + 32];
  if (err->path[0])
    snprintf(where, sizeof(where), "%s: ", err->path);
  else if (err->line > 0 && err->column > 0)
    snprintf(where, sizeof(where), "line %ld, column %ld: ", err->line, err->column);
  else if (err->line > 0)
    snprintf(where, sizeof(where), "line %ld: ", err->line);
  else
    where[0] = '\0';
  fprintf(stderr, "memplan: %s: %s%s (%s)\n", file, where, err->message, mp_err_name(err->code));
  return err->code == MP_ENOMEM ? MP_CLI_EXIT_INTERNAL : MP_CLI_EXIT_USAGE;
}

int mp_cli_load_graph(const char *path, const mp_cli_opts_t *o, mp_graph_t **out,
                      mp_format_t *used) {
  mp_error_t err;
  size_t i;
  int rc;
  mp_error_clear(&err);
  rc = mp_graph_load_file(path, o->format, &o->limits, out, used, &err);
  if (rc != 0) return mp_cli_report(path, &err);
  if (o->dims.n > 0) {
    mp_graph_t *bound = NULL;
    rc = mp_graph_bind(*out, &o->dims, &o->limits, &bound, &err);
    mp_graph_free(*out);
    *out = bound;
    if (rc != 0) return mp_cli_report(path, &err);
  }
  for (i = 0; i < (*out)->n_warnings; i++)
    fprintf(stderr, "memplan: %s: warning: %s\n", path, (*out)->warnings[i]);
  return 0;
}

int mp_cli_print_json(json_t *v, const mp_cli_opts_t *o) {
  char *text;
  int rc;
  if (v == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  text = mp_json_dumps(v, o->compact ? JSON_COMPACT : JSON_INDENT(2));
  json_decref(v);
  if (text == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  rc = fputs(text, stdout) == EOF;
  free(text);
  if (rc != 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
    fprintf(stderr, "memplan: cannot write the output\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  return 0;
}
