/* graph_json.c - STUB, replaced by the native JSON reader/writer. */
#include "formats.h"
int mp_native_from_json(json_t *root, const char *base, const mp_limits_t *lim, mp_graph_t **out,
                        mp_error_t *err) {
  (void)root; (void)lim; *out = NULL;
  return mp_error_set(err, MP_EINVAL, base, "native format not implemented yet");
}
json_t *mp_graph_to_json(const mp_graph_t *g) { (void)g; return NULL; }
