/* procstat.h - the daemon process's own figures for /metrics, read from
 * /proc/self at scrape time and named as Prometheus's process collectors
 * name them (process_cpu_seconds_total, process_resident_memory_bytes,
 * ...), so that standard dashboards and alerts work unchanged. Linux only:
 * where /proc cannot be read, `ok` stays 0 and the series are left out. */
#ifndef SRV_PROCSTAT_H
#define SRV_PROCSTAT_H

#include <stdint.h>

typedef struct srv_procstat_s {
  int ok;                   /* the figures below were read */
  double cpu_seconds;       /* user + system CPU time */
  uint64_t resident_bytes;  /* resident set size */
  uint64_t virtual_bytes;   /* virtual memory size */
  uint64_t open_fds;        /* file descriptors open (this read's own excluded) */
  uint64_t max_fds;         /* the soft limit on them (RLIMIT_NOFILE) */
  double start_time_s;      /* process start, seconds since the Unix epoch */
} srv_procstat_t;

/* Fill *p from /proc/self/stat, /proc/self/fd, /proc/stat and getrlimit. */
void srv_procstat_read(srv_procstat_t *p);

#endif
