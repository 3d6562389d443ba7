/* json_util.h - small jansson helpers shared by the proto/ writers: 64-bit
 * byte counts, numbers that print as integers when they are integral,
 * checked object insertion, and the one serialiser every document memplan
 * writes goes through (reals in their shortest exact form). */
#ifndef MP_JSON_UTIL_H
#define MP_JSON_UTIL_H

#include <jansson.h>
#include <stddef.h>
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

/* The longest text mp_json_real_text writes, its NUL included. */
#define MP_JSON_REAL_MAX 32

/* The shortest decimal that reads back as exactly `d` (finite): the fewest
 * significant digits that round-trip, in plain notation when the decimal
 * exponent is in [-4, 16] (as %.17g decides), else as 1.5e-7 or 2e20 (no
 * '+', no leading zeros in the exponent), and always with a '.' or an
 * exponent so that it reads back as a real: 1e-5, 0.25, 3.0,
 * 5.2631578947368425. Returns the length. */
size_t mp_json_real_text(double d, char out[MP_JSON_REAL_MAX]);

/* json_dumps (same flags) with every real rewritten by mp_json_real_text:
 * jansson prints reals with 17 significant digits (1.0000000000000001e-05),
 * which reads back exactly but is not what a person or a diff wants.
 * malloc'd, the caller frees it; NULL when out of memory. */
char *mp_json_dumps(const json_t *v, size_t flags);

#endif
