/* log.c - the JSON line logger (see log.h). */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "json_util.h"

static pthread_mutex_t srv__log_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *srv__log_fp;       /* NULL: stderr */
static char srv__log_path[1024];
static int srv__log_level = SRV_LOG_INFO;

static const char *const srv__level_names[] = {"debug", "info", "warn", "error"};

int srv_log_open(const char *path, const char *level) {
  int i;
  for (i = 0; i < 4; i++)
    if (level && strcmp(level, srv__level_names[i]) == 0) srv__log_level = i;
  if (path == NULL || path[0] == '\0') return 0;
  if (strlen(path) >= sizeof(srv__log_path)) return -ENAMETOOLONG;
  strcpy(srv__log_path, path);
  srv__log_fp = fopen(path, "a");
  if (srv__log_fp == NULL) return -errno;
  setvbuf(srv__log_fp, NULL, _IOLBF, 0);
  return 0;
}

int srv_log_reopen(void) {
  FILE *fp;
  int rc = 0;
  if (srv__log_path[0] == '\0') return 0;
  /* Open the new file before closing the old one, so a failure keeps the
   * old (possibly renamed) file rather than losing every later line. */
  fp = fopen(srv__log_path, "a");
  if (fp == NULL) return -errno;
  setvbuf(fp, NULL, _IOLBF, 0);
  pthread_mutex_lock(&srv__log_mu);
  if (srv__log_fp) fclose(srv__log_fp);
  srv__log_fp = fp;
  pthread_mutex_unlock(&srv__log_mu);
  return rc;
}

void srv_log_close(void) {
  pthread_mutex_lock(&srv__log_mu);
  if (srv__log_fp) fclose(srv__log_fp);
  srv__log_fp = NULL;
  pthread_mutex_unlock(&srv__log_mu);
}

void srv_log(int level, const char *msg, json_t *fields) {
  struct timespec ts;
  struct tm tm;
  char tbuf[96];
  json_t *line;
  char *text;

  if (level < srv__log_level) {
    json_decref(fields);
    return;
  }
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  snprintf(tbuf, sizeof(tbuf), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
  line = json_object();
  if (line == NULL) {
    json_decref(fields);
    return;
  }
  json_object_set_new(line, "ts", json_string(tbuf));
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
  fprintf(srv__log_fp ? srv__log_fp : stderr, "%s\n", text);
  if (srv__log_fp == NULL) fflush(stderr);
  pthread_mutex_unlock(&srv__log_mu);
  free(text);
}
