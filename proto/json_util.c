/* json_util.c - see json_util.h. */
#include "json_util.h"

#include <math.h>

json_t *mp_json_u64(uint64_t x) {
  if (x <= (uint64_t)INT64_MAX) return json_integer((json_int_t)x);
  return json_real((double)x);
}

json_t *mp_json_number(double d) {
  if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0)
    return json_integer((json_int_t)d);
  return json_real(d);
}

int mp_json_set(json_t *obj, const char *key, json_t *value) {
  if (value == NULL) return -1;
  return json_object_set_new(obj, key, value);
}
