/* auth.h - who is asking: the principals of the token file, their roles,
 * the trusted proxies whose forwarding headers are believed, and the
 * throttle on failed authentication.
 *
 * The token file (--token-file) holds either
 *
 *   one token alone on its line: every holder is the principal "default"
 *   with the admin role (anything, every plan), or
 *
 *   one principal a line, "NAME ROLE TOKEN" (blank-separated; blank lines
 *   and lines starting with # are skipped), ROLE one of
 *     read      reads its own plans and the graphs it names
 *     work      read, plus submit plans, fits and frontiers, cancel its own
 *     read-all  reads every plan (the dashboard's)
 *     admin     everything, every plan.
 *
 * Tokens are kept as SHA-256 digests and a presented one is compared with
 * every principal's digest, always all of them and in constant time, so
 * that neither which principal nor how much of a token matched shows in the
 * response time.
 *
 * A peer whose address is a trusted proxy (--trusted-proxy, addresses or
 * CIDR blocks) may name the client behind it: X-Forwarded-For's rightmost
 * address that is not itself a trusted proxy is the client's address, and
 * X-Client-Id names the client for the queue's fairness. From any other
 * peer both headers are ignored.
 *
 * The throttle counts failed authentications per client address in a
 * fixed window of a minute; past --auth-failures-per-minute the address
 * gets 429 with Retry-After (until its minute is over) on every route that
 * needs a token, without its token being looked at. The table is bounded
 * (SRV_AUTH_SLOTS addresses; the stalest is replaced). Thread-safe. */
#ifndef SRV_AUTH_H
#define SRV_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef enum { SRV_ROLE_READ = 0, SRV_ROLE_WORK = 1, SRV_ROLE_READ_ALL = 2, SRV_ROLE_ADMIN = 3 } srv_role_t;

#define SRV_AUTH_NAME_MAX 64 /* a principal's name: 1 to 64 of [A-Za-z0-9._-] */
#define SRV_AUTH_SLOTS 4096  /* addresses the throttle remembers */

typedef struct srv_principal_s {
  char name[SRV_AUTH_NAME_MAX + 1];
  srv_role_t role;
  unsigned char digest[32]; /* SHA-256 of the token */
} srv_principal_t;

typedef struct srv_auth_s srv_auth_t;

/* Read the token file `path` ("" : no token, every route open), parse the
 * trusted proxies (comma list, may be "") and set the throttle (failures a
 * minute, 0: none). 0, or -1 with the reason (and the file's line) in err. */
int srv_auth_new(const char *path, const char *trusted, unsigned failures_per_minute, srv_auth_t **out,
                 char *err, size_t errlen);
void srv_auth_free(srv_auth_t *a);

/* Whether a token file is configured; whether it is the one-token form. */
int srv_auth_enabled(const srv_auth_t *a);
int srv_auth_single(const srv_auth_t *a);
size_t srv_auth_count(const srv_auth_t *a);

/* The principal whose token `authorization` ("Bearer TOKEN", may be NULL)
 * presents, or NULL. */
const srv_principal_t *srv_auth_check(const srv_auth_t *a, const char *authorization);

/* Whether `sa` is a trusted proxy. */
int srv_auth_trusted(const srv_auth_t *a, const struct sockaddr *sa);
/* Whether the numeric address text `addr` is a trusted proxy. */
int srv_auth_trusted_text(const srv_auth_t *a, const char *addr);

/* The throttle. srv_auth_throttled: 1 when `addr` is past its failures this
 * minute (*retry_s: whole seconds until its minute is over, at least 1).
 * srv_auth_failed: count one failure of `addr`. now_ms: a monotonic clock. */
int srv_auth_throttled(srv_auth_t *a, const char *addr, double now_ms, unsigned *retry_s);
void srv_auth_failed(srv_auth_t *a, const char *addr, double now_ms);

/* May `role` call a route that reads (work = 0) or starts work (1)? May it
 * read or cancel plans it does not own? */
int srv_role_allows(srv_role_t role, int work);
int srv_role_sees_all(srv_role_t role);
const char *srv_role_name(srv_role_t role);

#endif
