/* log.h - structured logs: one JSON object per line, to stderr or to a file
 * that SIGHUP reopens (for logrotate).
 *
 * Every line has "ts" (RFC 3339, UTC, milliseconds), "level" and "msg";
 * callers add fields as a JSON object. The logger is process-wide and
 * thread-safe (a mutex around each write, so lines never interleave);
 * srv_log_open starts a thread that writes the buffered request lines and
 * srv_log_close stops it. */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <jansson.h>

enum { SRV_LOG_DEBUG = 0, SRV_LOG_INFO = 1, SRV_LOG_WARN = 2, SRV_LOG_ERROR = 3 };

/* Open the log: `path` "" or NULL means stderr. 0 or -errno. */
int srv_log_open(const char *path, const char *level);
/* Reopen the file (after rotation). Safe to call from the loop thread. */
int srv_log_reopen(void);
void srv_log_close(void);

/* Write one line. `fields` (may be NULL) is stolen; its keys are merged
 * into the line. */
void srv_log(int level, const char *msg, json_t *fields);

/* Whether a line of `level` is written at all. */
int srv_log_enabled(int level);

/* The line of one request, {"ts", "level", "msg": "request", and then
 * `fields` (len bytes: JSON members, "k":v,..., no braces)}. Unlike other
 * lines it is held in a buffer, written within 100 ms, when the buffer
 * fills, before the next other line, or at once for a warning: one write
 * per hundred requests rather than one per request. */
void srv_log_request_line(int level, const char *fields, size_t len);

#endif
