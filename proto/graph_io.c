/* graph_io.c - STUB, replaced by format detection and the load entry points. */
#include "formats.h"
const char *mp_format_name(mp_format_t f) { (void)f; return "auto"; }
int mp_format_parse(const char *s, mp_format_t *out) { (void)s; *out = MP_FORMAT_AUTO; return 0; }
mp_format_t mp_format_detect(const char *buf, size_t len) { (void)buf; (void)len; return MP_FORMAT_AUTO; }
int mp_graph_load_buffer(const char *buf, size_t len, mp_format_t fmt, const char *name,
                         const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                         mp_error_t *err) {
  (void)buf; (void)len; (void)fmt; (void)name; (void)lim; (void)used; *out = NULL;
  return mp_error_set(err, MP_EINVAL, "", "not implemented yet");
}
int mp_graph_load_file(const char *path, mp_format_t fmt, const mp_limits_t *lim,
                       mp_graph_t **out, mp_format_t *used, mp_error_t *err) {
  (void)path; (void)fmt; (void)lim; (void)used; *out = NULL;
  return mp_error_set(err, MP_EINVAL, "", "not implemented yet");
}
int mp_graph_load_json(json_t *value, const char *base, mp_format_t fmt, const char *name,
                       const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                       mp_error_t *err) {
  (void)value; (void)fmt; (void)name; (void)lim; (void)used; *out = NULL;
  return mp_error_set(err, MP_EINVAL, base, "not implemented yet");
}
