/* procstat.c - the process's figures from /proc (see procstat.h).
 *
 * /proc/self/stat is "pid (comm) state ppid ...": comm may hold spaces and
 * parentheses, so the fields are counted from the last ')'. Fields 14 and
 * 15 (utime, stime) and 22 (starttime) are in clock ticks, 23 (vsize) in
 * bytes and 24 (rss) in pages; the start is ticks after boot, and boot is
 * the "btime" line of /proc/stat. A scrape reads three small files and
 * lists /proc/self/fd: well under a millisecond. */
#include "procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The whole of a small /proc file into buf (NUL-terminated); its length,
 * or 0 when it cannot be read. */
static size_t srv__slurp(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  size_t len;
  if (f == NULL) return 0;
  len = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[len] = '\0';
  return len;
}

/* Boot time, seconds since the epoch: the "btime" line of /proc/stat
 * (after the per-CPU and interrupt lines, which can be long). 0 if absent. */
static unsigned long long srv__btime(void) {
  FILE *f = fopen("/proc/stat", "r");
  char *line = NULL;
  size_t cap = 0;
  unsigned long long bt = 0;
  if (f == NULL) return 0;
  while (getline(&line, &cap, f) > 0)
    if (strncmp(line, "btime ", 6) == 0) {
      bt = strtoull(line + 6, NULL, 10);
      break;
    }
  free(line);
  fclose(f);
  return bt;
}

void srv_procstat_read(srv_procstat_t *p) {
  char buf[4096], *s;
  unsigned long long utime, stime, start, vsize, btime;
  long long rss;
  long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  struct rlimit rl;
  DIR *d;
  struct dirent *e;

  memset(p, 0, sizeof(*p));
  if (tick <= 0 || page <= 0 || srv__slurp("/proc/self/stat", buf, sizeof(buf)) == 0 ||
      (s = strrchr(buf, ')')) == NULL)
    return;
  /* after ") ": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt
   * majflt cmajflt utime(14) stime(15) cutime cstime priority nice
   * num_threads itrealvalue starttime(22) vsize(23) rss(24) */
  if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
             &utime, &stime, &start, &vsize, &rss) != 5)
    return;
  if ((btime = srv__btime()) == 0) return;
  if ((d = opendir("/proc/self/fd")) == NULL) return;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') p->open_fds++;
  closedir(d);
  if (p->open_fds > 0) p->open_fds--; /* the directory being read */
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) p->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
  p->cpu_seconds = (double)(utime + stime) / (double)tick;
  p->start_time_s = (double)btime + (double)start / (double)tick;
  p->virtual_bytes = vsize;
  p->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
  p->ok = 1;
}
