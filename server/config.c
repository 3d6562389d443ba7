/* config.c - the option table, --help, and flag/env/default precedence.
 *
 * Every option is one row: flag name, environment name, type, default and
 * help text. The same parser handles the three sources so that a value is
 * validated identically wherever it comes from. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"
#include "units.h"

/* SRV__BOOL: a flag without a value means true. SRV__LIST: a comma list;
 * the flag may be repeated (its values add up). */
typedef enum { SRV__STR, SRV__UINT, SRV__SECONDS, SRV__BYTES, SRV__LISTEN, SRV__BOOL, SRV__LIST } srv__opt_type_t;

typedef struct srv__opt_s {
  const char *flag; /* without the leading dashes */
  const char *env;
  srv__opt_type_t type;
  size_t offset;
  size_t size;      /* buffer size for strings */
  const char *def;  /* NULL: computed (workers) or empty */
  unsigned min, max; /* bounds for SRV__UINT */
  const char *help;
} srv__opt_t;

#define SRV__F(field) offsetof(srv_config_t, field), sizeof(((srv_config_t *)0)->field)

static const srv__opt_t srv__opts[] = {
  {"listen", "MEMPLAN_LISTEN", SRV__LISTEN, SRV__F(listen), "127.0.0.1:8080", 0, 0,
   "address to listen on, HOST:PORT (IPv6 as [::1]:PORT); port 0 picks a free one"},
  {"data-dir", "MEMPLAN_DATA_DIR", SRV__STR, SRV__F(data_dir), "./var", 0, 0,
   "directory of the durable store (created if missing)"},
  {"store", "MEMPLAN_STORE", SRV__STR, SRV__F(store), "", 0, 0,
   "the store: sqlite:DIR (default: sqlite: in --data-dir, one process) or a PostgreSQL URI "
   "postgresql://USER@HOST:PORT/DB shared by several replicas"},
  {"store-lease", "MEMPLAN_STORE_LEASE", SRV__SECONDS, SRV__F(store_lease_s), "10", 0, 0,
   "seconds a replica's claim on a running job lasts unless renewed (shared store): a dead "
   "replica's jobs run again elsewhere after it"},
  {"workers", "MEMPLAN_WORKERS", SRV__UINT, SRV__F(workers), NULL, 1, 256,
   "planner worker threads (default: the number of cores)"},
  {"planner-threads", "MEMPLAN_PLANNER_THREADS", SRV__UINT, SRV__F(planner_threads), "1", 1, 64,
   "threads one plan, fit or frontier may use: the exact DP's reverse passes, and a fit's or "
   "frontier's plans in parallel (the workers already share the cores)"},
  {"queue-size", "MEMPLAN_QUEUE_SIZE", SRV__UINT, SRV__F(queue_size), "64", 1, 1000000,
   "plans waiting for a worker before new ones get 503"},
  {"max-queued-per-client", "MEMPLAN_MAX_QUEUED_PER_CLIENT", SRV__UINT, SRV__F(max_queued_per_client), "16", 0,
   1000000,
   "plans one client (its principal, else its address; X-Client-Id from a --trusted-proxy) may have "
   "waiting; more get 429 with Retry-After; workers take the clients' plans in turn, the client "
   "with the fewest running first; a cap at or over --queue-size is taken as --queue-size - 1, so "
   "that others always find room (0: no cap, only --queue-size bounds a client)"},
  {"retain-age", "MEMPLAN_RETAIN_AGE", SRV__SECONDS, SRV__F(retain_age_s), "2592000", 0, 0,
   "seconds a finished plan is kept in the store; then it, and the results and graphs only it "
   "refers to, are deleted (0: kept for ever)"},
  {"retain-bytes", "MEMPLAN_RETAIN_BYTES", SRV__BYTES, SRV__F(retain_bytes), "0", 0, 0,
   "bound on the store's live data (bytes or 10GiB): past it the oldest finished plans go first "
   "(0: no bound; queued and running plans are never deleted)"},
  {"sweep-interval", "MEMPLAN_SWEEP_INTERVAL", SRV__SECONDS, SRV__F(sweep_interval_s), "60", 0, 0,
   "seconds between two retention sweeps of the store"},
  {"plan-timeout", "MEMPLAN_PLAN_TIMEOUT", SRV__SECONDS, SRV__F(plan_timeout_s), "300", 0, 0,
   "seconds a plan may run before it fails"},
  {"cache-max-bytes", "MEMPLAN_CACHE_MAX_BYTES", SRV__BYTES, SRV__F(cache_max_bytes), "256MiB", 0, 0,
   "size of the in-memory result cache (bytes or 256MiB)"},
  {"max-body-bytes", "MEMPLAN_MAX_BODY_BYTES", SRV__BYTES, SRV__F(max_body_bytes), "64MiB", 0, 0,
   "largest request body; larger gets 413"},
  {"max-nodes", "MEMPLAN_MAX_NODES", SRV__UINT, SRV__F(max_nodes), "1000000", 1, 4000000000u,
   "most nodes in a submitted graph"},
  {"max-json-depth", "MEMPLAN_MAX_JSON_DEPTH", SRV__UINT, SRV__F(max_json_depth), "64", 2, 2000,
   "deepest nesting of a request body"},
  {"max-budgets", "MEMPLAN_MAX_BUDGETS", SRV__UINT, SRV__F(max_budgets), "64", 1, 1000000,
   "most budgets in one /v1/fit request (each is one plan)"},
  {"max-wait", "MEMPLAN_MAX_WAIT", SRV__SECONDS, SRV__F(max_wait_s), "300", 0, 0,
   "longest \"wait\" a client may ask for"},
  {"max-connections", "MEMPLAN_MAX_CONNECTIONS", SRV__UINT, SRV__F(max_connections), "1024", 1, 65536,
   "open connections in total"},
  {"max-connections-per-ip", "MEMPLAN_MAX_CONNECTIONS_PER_IP", SRV__UINT,
   SRV__F(max_connections_per_ip), "128", 0, 65536, "open connections per client address (0: no limit)"},
  {"max-header-bytes", "MEMPLAN_MAX_HEADER_BYTES", SRV__UINT, SRV__F(max_header_bytes), "32768", 4096,
   1048576, "per-connection memory for the request line and headers"},
  {"request-timeout", "MEMPLAN_REQUEST_TIMEOUT", SRV__UINT, SRV__F(request_timeout_s), "30", 0, 86400,
   "seconds a connection may stay idle (0: none)"},
  {"max-upload-seconds", "MEMPLAN_MAX_UPLOAD_SECONDS", SRV__UINT, SRV__F(max_upload_s), "120", 1, 86400,
   "seconds a request body may take to arrive, however steadily it trickles"},
  {"header-timeout", "MEMPLAN_HEADER_TIMEOUT", SRV__SECONDS, SRV__F(header_timeout_s), "10", 0, 0,
   "seconds a request line and its headers may take, from the accept (or the previous answer on "
   "a kept-alive connection); 1 s when 3/4 of --max-connections are open (0: no deadline)"},
  {"min-body-rate", "MEMPLAN_MIN_BODY_RATE", SRV__BYTES, SRV__F(min_body_rate), "1KiB", 0, 0,
   "bytes per second a request body must average once --header-timeout has passed; slower ones "
   "are closed (0: no minimum)"},
  {"max-inflight-body-bytes", "MEMPLAN_MAX_INFLIGHT_BODY_BYTES", SRV__BYTES, SRV__F(max_inflight_body_bytes),
   "256MiB", 0, 0,
   "request body bytes held at once over all connections (at least --max-body-bytes); past it a "
   "body gets 503 with Retry-After"},
  {"http-threads", "MEMPLAN_HTTP_THREADS", SRV__UINT, SRV__F(http_threads), "2", 1, 64,
   "HTTP event threads"},
  {"grace", "MEMPLAN_GRACE", SRV__SECONDS, SRV__F(grace_s), "25", 0, 0,
   "seconds running plans get to finish after SIGTERM"},
  {"devices", "MEMPLAN_DEVICES", SRV__STR, SRV__F(devices_file), "", 0, 0,
   "the device catalogue (docs/devices.md) that /v1/fit's \"devices\" names; default: the shipped one"},
  {"token-file", "MEMPLAN_TOKEN_FILE", SRV__STR, SRV__F(token_file), "", 0, 0,
   "the principals: one NAME ROLE TOKEN a line (ROLE read, work, read-all or admin), or one token "
   "alone (the principal \"default\", admin). With it every route but /, /healthz, /livez, /readyz, "
   "/metrics and /v1/status needs Authorization: Bearer TOKEN: reads any role, work (plans, fits, "
   "frontiers, cancels) work or admin; read and work see their own plans only"},
  {"public-reads", "MEMPLAN_PUBLIC_READS", SRV__BOOL, SRV__F(public_reads), "false", 0, 0,
   "with --token-file, reading plans and graphs needs no token (starting work still does)"},
  {"trusted-proxy", "MEMPLAN_TRUSTED_PROXY", SRV__LIST, SRV__F(trusted_proxies), "", 0, 0,
   "a proxy address or CIDR block whose X-Forwarded-For and X-Client-Id are believed; from any "
   "other peer they are ignored; repeat the flag or give a comma list"},
  {"auth-failures-per-minute", "MEMPLAN_AUTH_FAILURES_PER_MINUTE", SRV__UINT, SRV__F(auth_failures_per_minute),
   "20", 0, 1000000,
   "failed authentications a client address may make in a minute; past them it gets 429 with "
   "Retry-After until the minute is over (0: no limit)"},
  {"cors-origin", "MEMPLAN_CORS_ORIGIN", SRV__LIST, SRV__F(cors_origins), "", 0, 0,
   "a browser origin allowed to call the API (https://host:port, * for any); repeat the flag or "
   "give a comma list"},
  {"tls-cert", "MEMPLAN_TLS_CERT", SRV__STR, SRV__F(tls_cert), "", 0, 0, "PEM certificate: serve HTTPS"},
  {"tls-key", "MEMPLAN_TLS_KEY", SRV__STR, SRV__F(tls_key), "", 0, 0, "PEM private key for --tls-cert"},
  {"log-file", "MEMPLAN_LOG_FILE", SRV__STR, SRV__F(log_file), "", 0, 0,
   "append logs to this file, reopened on SIGHUP (default: stderr)"},
  {"log-level", "MEMPLAN_LOG_LEVEL", SRV__STR, SRV__F(log_level), "info", 0, 0,
   "debug, info, warn or error"},
  {"port-file", "MEMPLAN_PORT_FILE", SRV__STR, SRV__F(port_file), "", 0, 0,
   "write the bound port to this file once listening"},
};
#define SRV__NOPTS (sizeof(srv__opts) / sizeof(srv__opts[0]))

static int srv__parse_listen(srv_config_t *c, const char *v) {
  const char *colon;
  char *end;
  unsigned long port;
  size_t hl;
  unsigned char buf[16];

  if (strlen(v) >= sizeof(c->listen)) return -1;
  if (v[0] == '[') {
    const char *rb = strchr(v, ']');
    if (rb == NULL || rb[1] != ':') return -1;
    hl = (size_t)(rb - v - 1);
    if (hl == 0 || hl >= sizeof(c->host)) return -1;
    memcpy(c->host, v + 1, hl);
    c->host[hl] = '\0';
    colon = rb + 1;
    if (inet_pton(AF_INET6, c->host, buf) != 1) return -1;
  } else {
    colon = strrchr(v, ':');
    if (colon == NULL) return -1;
    hl = (size_t)(colon - v);
    if (hl == 0 || hl >= sizeof(c->host)) return -1;
    memcpy(c->host, v, hl);
    c->host[hl] = '\0';
    if (strcmp(c->host, "localhost") == 0) strcpy(c->host, "127.0.0.1");
    if (inet_pton(AF_INET, c->host, buf) != 1) return -1;
  }
  errno = 0;
  port = strtoul(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end != '\0' || port > 65535) return -1;
  c->port = (uint16_t)port;
  strcpy(c->listen, v);
  return 0;
}

/* A comma list of non-empty items without blanks or control characters. */
static int srv__check_list(const char *v) {
  size_t item = 0;
  for (; *v; v++) {
    if (*v == ',') {
      if (item == 0) return -1;
      item = 0;
    } else if ((unsigned char)*v <= ' ' || *v == 0x7f) {
      return -1;
    } else {
      item++;
    }
  }
  return 0;
}

static int srv__set(srv_config_t *c, const srv__opt_t *o, const char *v, const char *src) {
  char *field = (char *)c + o->offset;
  char *end;
  switch (o->type) {
  case SRV__STR:
    if (strlen(v) >= o->size) goto bad;
    strcpy(field, v);
    return 0;
  case SRV__LISTEN:
    if (srv__parse_listen(c, v) != 0) goto bad;
    return 0;
  case SRV__UINT: {
    unsigned long x;
    errno = 0;
    x = strtoul(v, &end, 10);
    if (errno || end == v || *end != '\0' || v[0] == '-' || x < o->min || x > o->max) goto bad;
    *(unsigned *)field = (unsigned)x;
    return 0;
  }
  case SRV__SECONDS: {
    double x;
    errno = 0;
    x = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(x) || x < 0 || x > 1e7) goto bad;
    *(double *)field = x;
    return 0;
  }
  case SRV__BYTES: {
    uint64_t x;
    if (mp_parse_bytes(v, &x, NULL) != 0) goto bad;
    *(uint64_t *)field = x;
    return 0;
  }
  case SRV__BOOL:
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0)
      *(int *)field = 1;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0)
      *(int *)field = 0;
    else
      goto bad;
    return 0;
  case SRV__LIST:
    if (srv__check_list(v) != 0 || strlen(v) >= o->size) goto bad;
    strcpy(field, v);
    return 0;
  }
bad:
  fprintf(stderr, "memplan-server: invalid value '%s' for --%s (from %s)\n", v, o->flag, src);
  return -1;
}

static void srv__usage(FILE *f) {
  size_t i;
  fprintf(f,
          "usage: memplan-server [options]\n"
          "The memplan planning daemon: HTTP/JSON API, work queue, durable store.\n\n"
          "Each option may also be set by the environment variable shown; a flag\n"
          "wins over the environment, which wins over the default.\n\n");
  for (i = 0; i < SRV__NOPTS; i++) {
    const srv__opt_t *o = &srv__opts[i];
    fprintf(f, "  --%-24s %s\n  %-26s   env %s", o->flag, o->help, "", o->env);
    if (o->def && o->def[0]) fprintf(f, ", default %s", o->def);
    fputc('\n', f);
  }
  fprintf(f, "  --%-24s %s\n", "help", "this text");
  fprintf(f, "  --%-24s %s\n", "version", "print the version");
  fprintf(f, "  --%-24s %s\n", "routes", "print the route table as JSON");
}

int srv_config_load(srv_config_t *c, int argc, char **argv) {
  size_t i;
  int a;
  long ncpu;
  char listed[SRV__NOPTS]; /* a list flag already seen on the command line */

  memset(c, 0, sizeof(*c));
  for (i = 0; i < SRV__NOPTS; i++)
    if (srv__opts[i].def && srv__set(c, &srv__opts[i], srv__opts[i].def, "default") != 0)
      return SRV_CONFIG_EXIT_USAGE;
  ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  c->workers = ncpu > 0 ? (unsigned)(ncpu > 256 ? 256 : ncpu) : 1;

  for (i = 0; i < SRV__NOPTS; i++) {
    const char *v = getenv(srv__opts[i].env);
    if (v != NULL && srv__set(c, &srv__opts[i], v, srv__opts[i].env) != 0) return SRV_CONFIG_EXIT_USAGE;
  }

  memset(listed, 0, sizeof(listed));
  for (a = 1; a < argc; a++) {
    const char *arg = argv[a], *val = NULL, *name;
    char flag[64];
    size_t n;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      srv__usage(stdout);
      return SRV_CONFIG_EXIT_OK;
    }
    if (strcmp(arg, "--version") == 0) {
      printf("memplan-server %s\n", SRV_VERSION);
      return SRV_CONFIG_EXIT_OK;
    }
    if (strcmp(arg, "--routes") == 0) {
      srv_routes_print(stdout);
      return SRV_CONFIG_EXIT_OK;
    }
    if (strncmp(arg, "--", 2) != 0) {
      fprintf(stderr, "memplan-server: unexpected argument '%s' (see --help)\n", arg);
      return SRV_CONFIG_EXIT_USAGE;
    }
    name = arg + 2;
    n = strcspn(name, "=");
    if (n >= sizeof(flag)) n = sizeof(flag) - 1;
    memcpy(flag, name, n);
    flag[n] = '\0';
    if (name[n] == '=') val = name + n + 1;
    for (i = 0; i < SRV__NOPTS; i++)
      if (strcmp(srv__opts[i].flag, flag) == 0) break;
    if (i == SRV__NOPTS) {
      fprintf(stderr, "memplan-server: unknown option '--%s' (see --help)\n", flag);
      return SRV_CONFIG_EXIT_USAGE;
    }
    if (val == NULL && srv__opts[i].type == SRV__BOOL) val = "true";
    if (val == NULL) {
      if (a + 1 >= argc) {
        fprintf(stderr, "memplan-server: --%s needs a value\n", flag);
        return SRV_CONFIG_EXIT_USAGE;
      }
      val = argv[++a];
    }
    if (srv__opts[i].type == SRV__LIST && listed[i]) {
      /* a repeated list flag adds to the values given before */
      char joined[2048];
      const char *prev = (const char *)c + srv__opts[i].offset;
      if ((size_t)snprintf(joined, sizeof(joined), "%s,%s", prev, val) >= sizeof(joined)) {
        fprintf(stderr, "memplan-server: too many values for --%s\n", flag);
        return SRV_CONFIG_EXIT_USAGE;
      }
      if (srv__set(c, &srv__opts[i], joined, "the command line") != 0) return SRV_CONFIG_EXIT_USAGE;
      continue;
    }
    listed[i] = 1;
    if (srv__set(c, &srv__opts[i], val, "the command line") != 0) return SRV_CONFIG_EXIT_USAGE;
  }
  if ((c->tls_cert[0] != '\0') != (c->tls_key[0] != '\0')) {
    fprintf(stderr, "memplan-server: --tls-cert and --tls-key go together\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  if (strcmp(c->log_level, "debug") && strcmp(c->log_level, "info") && strcmp(c->log_level, "warn") &&
      strcmp(c->log_level, "error")) {
    fprintf(stderr, "memplan-server: --log-level must be debug, info, warn or error\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  if (c->max_inflight_body_bytes < c->max_body_bytes) {
    fprintf(stderr, "memplan-server: --max-inflight-body-bytes must be at least --max-body-bytes\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  /* One client at its cap leaves room in the queue for the others. */
  if (c->max_queued_per_client >= c->queue_size && c->queue_size > 1) c->max_queued_per_client = c->queue_size - 1;
  if (c->plan_timeout_s <= 0) c->plan_timeout_s = 1e7; /* 0: effectively none */
  if (c->header_timeout_s <= 0) c->header_timeout_s = 1e7;
  if (c->store[0] && strncmp(c->store, "sqlite:", 7) != 0 && strncmp(c->store, "postgresql://", 13) != 0 &&
      strncmp(c->store, "postgres://", 11) != 0) {
    fprintf(stderr, "memplan-server: --store must be sqlite:DIR or a postgresql:// URI\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  if (c->sweep_interval_s < 0.1) {
    fprintf(stderr, "memplan-server: --sweep-interval must be at least 0.1 seconds\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  if (c->store_lease_s < 0.5) {
    fprintf(stderr, "memplan-server: --store-lease must be at least 0.5 seconds\n");
    return SRV_CONFIG_EXIT_USAGE;
  }
  return SRV_CONFIG_RUN;
}

/* A store URI without its password (user:PASSWORD@ and password=...),
 * for the log. */
static json_t *srv__store_redacted(const char *url) {
  char out[SRV_PATH_MAX + 16];
  const char *scheme = strstr(url, "://"), *at, *colon;
  char *pw;
  size_t n = 0;
  out[0] = '\0';
  if (scheme && (at = strchr(scheme + 3, '@')) != NULL &&
      (colon = memchr(scheme + 3, ':', (size_t)(at - scheme - 3))) != NULL)
    n = (size_t)snprintf(out, sizeof(out), "%.*s:***%s", (int)(colon - url), url, at);
  else
    n = (size_t)snprintf(out, sizeof(out), "%s", url);
  if (n < sizeof(out) && (pw = strstr(out, "password=")) != NULL) {
    char *end = strchr(pw, '&');
    char tail[SRV_PATH_MAX + 16];
    snprintf(tail, sizeof(tail), "%s", end ? end : "");
    snprintf(pw + 9, sizeof(out) - (size_t)(pw + 9 - out), "***%s", tail);
  }
  return json_string(out);
}

json_t *srv_config_to_json(const srv_config_t *c) {
  json_t *o = json_object();
  size_t i;
  if (o == NULL) return NULL;
  for (i = 0; i < SRV__NOPTS; i++) {
    const srv__opt_t *op = &srv__opts[i];
    const char *field = (const char *)c + op->offset;
    json_t *v = NULL;
    switch (op->type) {
    case SRV__STR:
    case SRV__LIST:
    case SRV__LISTEN:
      v = op->offset == offsetof(srv_config_t, store) ? srv__store_redacted(field) : json_string(field);
      break;
    case SRV__BOOL: v = json_boolean(*(const int *)field); break;
    case SRV__UINT: v = json_integer(*(const unsigned *)field); break;
    case SRV__SECONDS: v = json_real(*(const double *)field); break;
    case SRV__BYTES: v = json_integer((json_int_t)(*(const uint64_t *)field & INT64_MAX)); break;
    }
    if (v == NULL || json_object_set_new(o, op->flag, v) != 0) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}
