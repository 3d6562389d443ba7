/* front.h - the listening socket's front: each connection's first request
 * line is checked before libmicrohttpd takes the connection, and a line that
 * is not one is answered 400 (front.c says why). */
#ifndef SRV_FRONT_H
#define SRV_FRONT_H

#include <stddef.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "conns.h"

typedef struct srv_front_s srv_front_t;

/* Accept on `listen_fd` (listening, non-blocking; still the caller's) on a
 * thread of its own, holding at most `max_held` connections while their
 * first line comes in, watched by `conns`; pass the sound ones to `mhd`
 * (started with MHD_USE_NO_LISTEN_SOCKET). 0, or -1 when out of memory or
 * threads. */
int srv_front_start(int listen_fd, struct MHD_Daemon *mhd, srv_conns_t *conns, size_t max_held, srv_front_t **out);
/* Stop accepting, close the connections still held, free (NULL ignored). */
void srv_front_stop(srv_front_t *f);

#endif
