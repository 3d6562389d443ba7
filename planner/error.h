/* error.h - memplan's error codes and the error record every fallible call fills.
 *
 * Convention (libuv-style): a function returns 0 on success or a negative MP_E*
 * code. Calls that parse or validate user input also take an optional
 * `mp_error_t *` (NULL allowed) that receives a human message and the location
 * of the offending item: a JSON path such as "$.nodes[3].bytes", or a line
 * number for text formats. The record is plain data; it owns no memory.
 */
#ifndef MP_ERROR_H
#define MP_ERROR_H

#include <stddef.h>

enum {
  MP_OK = 0,
  MP_EINVAL = -1,    /* a value is wrong: bad type, out of range, unknown name */
  MP_ENOMEM = -2,    /* allocation failed */
  MP_EPARSE = -3,    /* input is not well-formed (JSON syntax, text layout) */
  MP_ELIMIT = -4,    /* input exceeds a configured limit (nodes, edges, id length) */
  MP_ECYCLE = -5,    /* the graph has a cycle */
  MP_EDUP = -6,      /* duplicate id */
  MP_EUNKNOWN = -7,  /* a reference to an id that does not exist */
  MP_EEMPTY = -8,    /* nothing to plan */
  MP_EOVERFLOW = -9, /* a 64-bit size or time sum would overflow */
  MP_ESCHEDULE = -10,/* a schedule step is invalid for the graph */
  MP_EINFEASIBLE = -11, /* no plan fits the budget */
  MP_EIO = -12,      /* a file could not be read or written */
  MP_ECANCELED = -13,/* the caller asked the work to stop */
  MP_ETIMEDOUT = -14,/* a deadline passed */
  MP_ENOENT = -15,   /* a file named by the caller does not exist */
  MP_EACCES = -16    /* a file named by the caller may not be read (permissions) */
};

#define MP_ERROR_MSG_MAX 512
#define MP_ERROR_PATH_MAX 256

typedef struct mp_error_s {
  int code;                       /* the MP_E* code, 0 when no error */
  long line;                      /* 1-based line for text input, 0 if n/a */
  long column;                    /* 1-based column, 0 if n/a */
  char path[MP_ERROR_PATH_MAX];   /* JSON path ("$.nodes[2].id") or "" */
  char message[MP_ERROR_MSG_MAX]; /* one sentence, no trailing newline */
} mp_error_t;

/* Short stable name of a code ("EINVAL", "ECYCLE", ...), never NULL. */
const char *mp_err_name(int code);

/* Fill `err` (if not NULL) and return `code`, so callers can write
 * `return mp_error_set(err, MP_EINVAL, "$.budget", "must be positive");`. */
int mp_error_set(mp_error_t *err, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Like mp_error_set with a line (and column, 0 if unknown) instead of a path. */
int mp_error_set_line(mp_error_t *err, int code, long line, long column, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Reset to "no error". */
void mp_error_clear(mp_error_t *err);

#endif
