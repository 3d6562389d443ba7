/* util.h - the small helpers every module of memplan-server may use: the
 * two clocks, hex encoding, and random hex ids. No state; thread-safe. */
#ifndef SRV_UTIL_H
#define SRV_UTIL_H

#include <stddef.h>

/* Wall-clock milliseconds since the epoch, and a monotonic clock. */
double srv_now_ms(void);
double srv_mono_ms(void);

/* Write the n bytes of raw as 2*n lowercase hex digits plus a NUL. */
void srv_hex(const unsigned char *raw, size_t n, char *out);
/* Fill buf with 2*nbytes lowercase hex digits of randomness (plus NUL). */
void srv_random_hex(char *buf, size_t nbytes);
/* 32 hex digits (and a NUL) that name one request: unique within the
 * process and unlikely to repeat across processes (a per-thread
 * generator seeded from getrandom once), but not unpredictable: for
 * request ids, where a syscall per request would cost more than the
 * answer. */
void srv_request_id(char out[33]);

#endif
