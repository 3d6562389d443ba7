/* units.h - byte quantities as people and schedulers write them ("12GiB",
 * "800MB", "1.5 GiB", Kubernetes' "2Gi" and "1500M", "2e9").
 *
 * Decimal units (k/kB, M/MB, G/GB, T/TB, P/PB, E/EB) are powers of 1000,
 * binary units (Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB, Pi/PiB, Ei/EiB) powers of
 * 1024, matched case-insensitively, except that a lone "m" is refused: it is
 * milli in Kubernetes quantities. A bare number or a "B" suffix is bytes; a
 * bare number may carry a decimal exponent ("2e9", "1.5E9"). Fractions are
 * rounded down to a whole byte ("1.2GiB" = 1288490188): a budget is a limit,
 * and the floor is the largest byte count within it; answers echo the
 * rounded value. The grammar is documented in docs/units.md.
 */
#ifndef MP_UNITS_H
#define MP_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Parse `s` into *out. 0, or MP_EINVAL (bad syntax, unknown unit, more than
 * 20 significant digits) or MP_EOVERFLOW (more than 2^64-1 bytes), with a message in err
 * (path left empty for the caller to fill). */
int mp_parse_bytes(const char *s, uint64_t *out, mp_error_t *err);

/* Format a byte count for humans ("1.50 GiB"), into buf of size n. */
const char *mp_format_bytes(uint64_t bytes, char *buf, size_t n);

#endif
