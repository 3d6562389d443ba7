/* results.h - finished results by key (keys.h): plan results and
 * frontiers as serialised JSON, with the id of the job that computed them.
 * The store keeps them durably; the LRU cache keeps the ones in use in
 * memory in front of it (as "job_id\nresult"). Both are borrowed. */
#ifndef SRV_RESULTS_H
#define SRV_RESULTS_H

#include <stddef.h>

#include "server.h"

/* A result by key: memory, then the store (which refills memory). 0 with
 * *out a malloc'd NUL-terminated copy and *len, job_id (may be NULL)
 * receiving the computing job's id ("" when unknown); or SRV_ENOTFOUND,
 * SRV_ESTORE, SRV_ENOMEM. */
int srv_results_get(srv_cache_t *cache, srv_store_t *store, const char *key, char **out, size_t *len,
                    char job_id[33]);

/* Keep a result computed by `job_id`: written to the store, and to memory
 * (best effort). A shared store keeps the first result written under a
 * key; memory then stays empty until srv_results_get reads that one. 0, or
 * the store's error. */
int srv_results_put(srv_cache_t *cache, srv_store_t *store, const char *key, const char *job_id, const char *text,
                    size_t len);

#endif
