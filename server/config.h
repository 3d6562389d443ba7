/* config.h - memplan-server's configuration: every flag, its environment
 * twin and its default, in one table (config.c).
 *
 * Precedence is flag > environment > default. srv_config_load() fills a
 * caller-owned struct; strings live inside it (fixed buffers), so there is
 * nothing to free. */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_PATH_MAX 1024

typedef struct srv_config_s {
  char listen[256];         /* HOST:PORT as given */
  char host[200];           /* numeric IPv4 or IPv6 address */
  uint16_t port;            /* 0 asks the kernel for a free port */
  char data_dir[SRV_PATH_MAX];
  char store[SRV_PATH_MAX];   /* "" or sqlite:DIR (embedded), or a libpq URI (shared) */
  double store_lease_s;       /* a shared store's claim on a running job */
  unsigned workers;
  unsigned planner_threads;
  unsigned queue_size;
  unsigned max_queued_per_client; /* 0: only queue_size bounds a client */
  double retain_age_s;        /* finished plans older than this are deleted (0: kept) */
  uint64_t retain_bytes;      /* the store's live data is kept under this (0: no bound) */
  double sweep_interval_s;    /* how often retention runs */
  double plan_timeout_s;
  uint64_t cache_max_bytes;
  uint64_t max_body_bytes;
  unsigned max_nodes;
  unsigned max_json_depth;
  unsigned max_budgets;
  double max_wait_s;
  unsigned max_connections;
  unsigned max_connections_per_ip;
  unsigned max_header_bytes;
  unsigned request_timeout_s;
  unsigned max_upload_s;      /* total time to receive a body */
  double header_timeout_s;    /* the whole request head; a body's grace */
  uint64_t min_body_rate;     /* bytes per second a body must average */
  uint64_t max_inflight_body_bytes; /* all bodies being received at once */
  int public_reads;           /* with a token: reads of plans stay open */
  char cors_origins[1024];    /* comma-separated origins, "*" any, "" none */
  unsigned http_threads;
  double grace_s;
  char devices_file[SRV_PATH_MAX]; /* the device catalogue, "" for the shipped one */
  char token_file[SRV_PATH_MAX];
  char trusted_proxies[1024]; /* comma list of addresses or CIDR blocks */
  unsigned auth_failures_per_minute; /* per client address; 0: no throttle */
  char tls_cert[SRV_PATH_MAX];
  char tls_key[SRV_PATH_MAX];
  char log_file[SRV_PATH_MAX];
  char log_level[16];
  char port_file[SRV_PATH_MAX]; /* where to write the bound port (tests) */
} srv_config_t;

/* What srv_config_load() asks of the caller beyond a filled config. */
enum {
  SRV_CONFIG_RUN = 0,    /* start the daemon */
  SRV_CONFIG_EXIT_OK,    /* --help, --version or --routes was printed */
  SRV_CONFIG_EXIT_USAGE  /* a bad flag or value; the reason went to stderr */
};

/* Parse defaults, then the MEMPLAN_* environment, then argv. */
int srv_config_load(srv_config_t *c, int argc, char **argv);

/* The effective configuration as a JSON object (new reference; the token is
 * never included, only whether one is set). */
json_t *srv_config_to_json(const srv_config_t *c);

#endif
