/* units.h - byte quantities as people write them ("12GiB", "800MB", "1.5 GiB").
 *
 * Decimal units (kB, MB, GB, TB, PB) are powers of 1000, binary units (KiB,
 * MiB, GiB, TiB, PiB) powers of 1024, matched case-insensitively; a bare
 * number or a "B" suffix is bytes. A fraction is allowed only when the result
 * is a whole number of bytes ("1.5KiB" = 1536, "1.5B" is an error): budgets
 * are never silently rounded. Ambiguous single letters ("12G") are refused.
 */
#ifndef MP_UNITS_H
#define MP_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Parse `s` into *out. 0, or MP_EINVAL (bad syntax, unknown unit, fraction
 * of a byte) or MP_EOVERFLOW (more than 2^64-1 bytes), with a message in err
 * (path left empty for the caller to fill). */
int mp_parse_bytes(const char *s, uint64_t *out, mp_error_t *err);

/* Format a byte count for humans ("1.50 GiB"), into buf of size n. */
const char *mp_format_bytes(uint64_t bytes, char *buf, size_t n);

#endif
