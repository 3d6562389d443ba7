/* log.c - the JSON line logger (see log.h): lines go out as they are
 * written, except request lines, which collect in a buffer that a flusher
 * thread writes every SRV__FLUSH_MS (or sooner: when it is full, and before
 * any other line, so that the file keeps their order). */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "json_util.h"

#define SRV__BUF_MAX (64u * 1024u) /* request lines held at most */
#define SRV__FLUSH_MS 100          /* how long a request line waits at most */

static pthread_mutex_t srv__log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv__log_cv = PTHREAD_COND_INITIALIZER;
static FILE *srv__log_fp;       /* NULL: stderr */
static char srv__log_path[1024];
static int srv__log_level = SRV_LOG_INFO;
static char srv__buf[SRV__BUF_MAX];
static size_t srv__buf_len;
static pthread_t srv__flusher;
static int srv__flusher_on, srv__flusher_stop;

static const char *const srv__level_names[] = {"debug", "info", "warn", "error"};

/* Write the held request lines; under the mutex. */
static void srv__flush_locked(void) {
  FILE *fp = srv__log_fp ? srv__log_fp : stderr;
  if (srv__buf_len == 0) return;
  fwrite(srv__buf, 1, srv__buf_len, fp);
  fflush(fp);
  srv__buf_len = 0;
}

static void *srv__flusher_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&srv__log_mu);
  while (!srv__flusher_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += SRV__FLUSH_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&srv__log_cv, &srv__log_mu, &ts);
    srv__flush_locked();
  }
  pthread_mutex_unlock(&srv__log_mu);
  return NULL;
}

int srv_log_open(const char *path, const char *level) {
  int i;
  for (i = 0; i < 4; i++)
    if (level && strcmp(level, srv__level_names[i]) == 0) srv__log_level = i;
  if (path != NULL && path[0] != '\0') {
    if (strlen(path) >= sizeof(srv__log_path)) return -ENAMETOOLONG;
    strcpy(srv__log_path, path);
    srv__log_fp = fopen(path, "a");
    if (srv__log_fp == NULL) return -errno;
  }
  srv__flusher_stop = 0;
  /* Without the thread request lines are written as they come. */
  srv__flusher_on = pthread_create(&srv__flusher, NULL, srv__flusher_main, NULL) == 0;
  return 0;
}

int srv_log_reopen(void) {
  FILE *fp;
  if (srv__log_path[0] == '\0') return 0;
  /* Open the new file before closing the old one, so a failure keeps the
   * old (possibly renamed) file rather than losing every later line. */
  fp = fopen(srv__log_path, "a");
  if (fp == NULL) return -errno;
  pthread_mutex_lock(&srv__log_mu);
  srv__flush_locked(); /* what was written before the rotation goes to the old file */
  if (srv__log_fp) fclose(srv__log_fp);
  srv__log_fp = fp;
  pthread_mutex_unlock(&srv__log_mu);
  return 0;
}

void srv_log_close(void) {
  pthread_mutex_lock(&srv__log_mu);
  srv__flusher_stop = 1;
  pthread_cond_signal(&srv__log_cv);
  pthread_mutex_unlock(&srv__log_mu);
  if (srv__flusher_on) pthread_join(srv__flusher, NULL);
  srv__flusher_on = 0;
  pthread_mutex_lock(&srv__log_mu);
  srv__flush_locked();
  if (srv__log_fp) fclose(srv__log_fp);
  srv__log_fp = NULL;
  pthread_mutex_unlock(&srv__log_mu);
}

int srv_log_enabled(int level) { return level >= srv__log_level; }

/* The wall clock as a line's "ts": RFC 3339, UTC, milliseconds. */
static void srv__ts(char out[32]) {
  /* The date and time to the second are rendered once a second per
   * thread; the milliseconds by hand. */
  static _Thread_local time_t sec = -1;
  static _Thread_local char head[32];
  struct timespec ts;
  long ms;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != sec) {
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(head, sizeof(head), "%04d-%02d-%02dT%02d:%02d:%02d.", (tm.tm_year + 1900) % 10000,
             (tm.tm_mon + 1) % 100, tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100);
    sec = ts.tv_sec;
  }
  ms = (ts.tv_nsec / 1000000) % 1000;
  memcpy(out, head, 20);
  out[20] = (char)('0' + ms / 100);
  out[21] = (char)('0' + ms / 10 % 10);
  out[22] = (char)('0' + ms % 10);
  out[23] = 'Z';
  out[24] = '\0';
}

void srv_log(int level, const char *msg, json_t *fields) {
  char ts[32];
  json_t *line;
  char *text;

  if (level < srv__log_level) {
    json_decref(fields);
    return;
  }
  srv__ts(ts);
  line = json_object();
  if (line == NULL) {
    json_decref(fields);
    return;
  }
  json_object_set_new(line, "ts", json_string(ts));
  json_object_set_new(line, "level", json_string(srv__level_names[level & 3]));
  json_object_set_new(line, "msg", json_string(msg));
  if (fields) {
    json_object_update(line, fields);
    json_decref(fields);
  }
  text = mp_json_dumps(line, JSON_COMPACT);
  json_decref(line);
  if (text == NULL) return;
  pthread_mutex_lock(&srv__log_mu);
  srv__flush_locked(); /* the request lines before it first */
  fprintf(srv__log_fp ? srv__log_fp : stderr, "%s\n", text);
  fflush(srv__log_fp ? srv__log_fp : stderr);
  pthread_mutex_unlock(&srv__log_mu);
  free(text);
}

void srv_log_request_line(int level, const char *fields, size_t len) {
  char ts[32], head[96];
  const char *name = srv__level_names[level & 3];
  size_t hn, need, k = strlen(name);
  if (level < srv__log_level) return;
  srv__ts(ts);
  /* {"ts":"<ts>","level":"<name>","msg":"request" */
  memcpy(head, "{\"ts\":\"", 7);
  memcpy(head + 7, ts, 24);
  memcpy(head + 31, "\",\"level\":\"", 11);
  memcpy(head + 42, name, k);
  memcpy(head + 42 + k, "\",\"msg\":\"request\"", 17);
  hn = 42 + k + 17;
  need = hn + 1 + len + 2; /* head "," fields "}\n" */
  pthread_mutex_lock(&srv__log_mu);
  if (srv__buf_len + need > sizeof(srv__buf)) srv__flush_locked();
  if (need <= sizeof(srv__buf)) {
    char *p = srv__buf + srv__buf_len;
    memcpy(p, head, hn);
    p[hn] = ',';
    memcpy(p + hn + 1, fields, len);
    memcpy(p + hn + 1 + len, "}\n", 2);
    srv__buf_len += need;
  }
  /* a warning, or no flusher: out now */
  if (level >= SRV_LOG_WARN || !srv__flusher_on) srv__flush_locked();
  pthread_mutex_unlock(&srv__log_mu);
}
