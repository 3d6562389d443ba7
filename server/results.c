/* results.c - finished results in the cache and the store (see
 * results.h). The store is the record; memory is refilled from it on a
 * miss, so a restarted daemon answers from the store at once and from
 * memory afterwards. */
#include "results.h"

#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "store.h"

/* Keep a result in memory as "job_id\nresult" (best effort), the form
 * srv_results_get reads back. */
static void srv__cache_result(srv_cache_t *cache, const char *key, const char *job_id, const char *text,
                              size_t len) {
  size_t il = strlen(job_id);
  char *buf = malloc(il + 1 + len);
  if (buf == NULL) return;
  memcpy(buf, job_id, il);
  buf[il] = '\n';
  memcpy(buf + il + 1, text, len);
  srv_cache_put_tagged(cache, key, key, buf, il + 1 + len); /* retention drops it with the row */
  free(buf);
}

int srv_results_get(srv_cache_t *cache, srv_store_t *store, const char *key, char **out, size_t *len,
                    char job_id[33]) {
  int rc;
  if (job_id) job_id[0] = '\0';
  /* The cache keeps the computing job's id as a prefix line "id\n". */
  if (srv_cache_get(cache, key, out, len) == 0) {
    char *nl = memchr(*out, '\n', *len);
    if (nl) {
      size_t idl = (size_t)(nl - *out);
      if (job_id && idl < 33) {
        memcpy(job_id, *out, idl);
        job_id[idl] = '\0';
      }
      memmove(*out, nl + 1, *len - idl - 1);
      *len -= idl + 1;
      (*out)[*len] = '\0';
    }
    return 0;
  }
  {
    char jid[33];
    rc = srv_store_get_result(store, key, out, len, jid);
    if (rc != 0) return rc;
    if (job_id) memcpy(job_id, jid, 33);
    srv__cache_result(cache, key, jid, *out, *len); /* refill memory */
  }
  return 0;
}

int srv_results_put(srv_cache_t *cache, srv_store_t *store, const char *key, const char *job_id, const char *text,
                    size_t len) {
  int rc = srv_store_put_result(store, key, text, len, job_id);
  /* A shared store that already held this key kept the first result (the
   * same plan, other timings); memory is then refilled from it on use, so
   * that every replica answers with the same text. For the same reason a
   * result the shared store did not take is not kept here either. */
  if (rc == 1) return 0;
  if (rc != 0 && srv_store_shared(store)) return rc;
  srv__cache_result(cache, key, job_id, text, len);
  return rc;
}
