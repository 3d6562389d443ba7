/* json_util.h - small jansson helpers shared by the proto/ writers: 64-bit
 * byte counts, numbers that print as integers when they are integral, and
 * checked object insertion. */
#ifndef MP_JSON_UTIL_H
#define MP_JSON_UTIL_H

#include <jansson.h>
#include <stdint.h>

/* A byte count: an integer up to 2^63-1 (jansson's integers are signed
 * 64-bit); beyond that a real. New reference or NULL. */
json_t *mp_json_u64(uint64_t x);

/* A time or other measure: an integer when `d` is integral and below 2^53 in
 * magnitude (so 190 prints as 190, not 190.0), else a real. */
json_t *mp_json_number(double d);

/* json_object_set_new that also fails (returns -1) on a NULL value, so
 * allocation failures chain: `if (mp_json_set(o, "k", v) != 0) goto fail;`. */
int mp_json_set(json_t *obj, const char *key, json_t *value);

#endif
