/* kusumoto.c - STUB, replaced by the Kusumoto text reader. */
#include "formats.h"
int mp_kusumoto_parse(const char *buf, size_t len, const char *name, const mp_limits_t *lim,
                      mp_graph_t **out, mp_error_t *err) {
  (void)buf; (void)len; (void)name; (void)lim; *out = NULL;
  return mp_error_set_line(err, MP_EINVAL, 1, 0, "kusumoto format not implemented yet");
}
