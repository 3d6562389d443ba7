/* nodelink.c - STUB, replaced by the node-link reader. */
#include "formats.h"
int mp_nodelink_from_json(json_t *root, const char *base, const char *name, const mp_limits_t *lim,
                          mp_graph_t **out, mp_error_t *err) {
  (void)root; (void)name; (void)lim; *out = NULL;
  return mp_error_set(err, MP_EINVAL, base, "nodelink format not implemented yet");
}
