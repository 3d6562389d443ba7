/* error.c - error codes to names and the helpers that fill mp_error_t. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *mp_err_name(int code) {
  switch (code) {
  case MP_OK: return "OK";
  case MP_EINVAL: return "EINVAL";
  case MP_ENOMEM: return "ENOMEM";
  case MP_EPARSE: return "EPARSE";
  case MP_ELIMIT: return "ELIMIT";
  case MP_ECYCLE: return "ECYCLE";
  case MP_EDUP: return "EDUP";
  case MP_EUNKNOWN: return "EUNKNOWN";
  case MP_EEMPTY: return "EEMPTY";
  case MP_EOVERFLOW: return "EOVERFLOW";
  case MP_ESCHEDULE: return "ESCHEDULE";
  case MP_EINFEASIBLE: return "EINFEASIBLE";
  case MP_EIO: return "EIO";
  case MP_ECANCELED: return "ECANCELED";
  case MP_ETIMEDOUT: return "ETIMEDOUT";
  case MP_ENOENT: return "ENOENT";
  case MP_EACCES: return "EACCES";
  default: return "EUNKNOWNCODE";
  }
}

void mp_error_clear(mp_error_t *err) {
  if (err == NULL) return;
  memset(err, 0, sizeof(*err));
}

static void mp__error_vfill(mp_error_t *err, int code, const char *fmt, va_list ap) {
  err->code = code;
  vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

int mp_error_set(mp_error_t *err, int code, const char *path, const char *fmt, ...) {
  va_list ap;
  if (err == NULL) return code;
  mp_error_clear(err);
  snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
  va_start(ap, fmt);
  mp__error_vfill(err, code, fmt, ap);
  va_end(ap);
  return code;
}

int mp_error_set_line(mp_error_t *err, int code, long line, long column, const char *fmt, ...) {
  va_list ap;
  if (err == NULL) return code;
  mp_error_clear(err);
  err->line = line;
  err->column = column;
  va_start(ap, fmt);
  mp__error_vfill(err, code, fmt, ap);
  va_end(ap);
  return code;
}
