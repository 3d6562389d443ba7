/* store.h - the durable store: one SQLite database (WAL, synchronous=FULL)
 * under --data-dir holding
 *
 *   graphs   canonical native JSON of every submitted graph, by hash
 *   jobs     every accepted plan: parameters, status, timings, error
 *   results  plan results and frontiers (serialised JSON) by cache key
 *
 * A job row is committed before the client hears 202, and FULL sync makes
 * that commit survive a crash or power loss: that is what lets a restart
 * find every accepted job. Results are recomputable, but sharing the one
 * connection keeps them on the same durable path at no extra cost.
 *
 * One connection behind a mutex serves every thread (SQLite serialises
 * writers anyway); each call is short. Strings returned to the caller are
 * malloc'd copies the caller frees. */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

typedef struct srv_job_row_s {
  long long seq;            /* insertion order: newest has the largest */
  char id[33];
  char status[16];          /* queued, running, done, failed, cancelled */
  char graph_hash[65];
  char result_key[256];
  uint64_t budget;
  char solver[16], objective[16], accounting[16];
  int timeline;
  double created_ms, started_ms, finished_ms; /* 0 when not yet */
  char *error;              /* JSON text {"code","message"} or NULL; owned */
  char request_id[80];
} srv_job_row_t;

void srv_job_row_clear(srv_job_row_t *row);

/* Open (creating) DIR/memplan.db. On failure *errmsg (static or in buf)
 * says why. 0 or SRV_ESTORE. */
int srv_store_open(const char *dir, srv_store_t **out, char *errbuf, size_t errlen);
void srv_store_close(srv_store_t *st);

/* Record an accepted job and, when graph_json is not NULL, its graph, in
 * one transaction. Fills row->seq. 0 or SRV_ESTORE. */
int srv_store_accept_job(srv_store_t *st, srv_job_row_t *row, const char *graph_json, size_t graph_len,
                         size_t n_nodes);
/* Set status and timings (0 leaves a timing unchanged) and error (NULL
 * clears it). 0, SRV_ENOTFOUND or SRV_ESTORE. */
int srv_store_update_job(srv_store_t *st, const char *id, const char *status, double started_ms,
                         double finished_ms, const char *error_json);
int srv_store_get_job(srv_store_t *st, const char *id, srv_job_row_t *row);
/* Jobs that were queued or running, oldest first (*rows malloc'd; clear
 * each row and free the array). */
int srv_store_pending_jobs(srv_store_t *st, srv_job_row_t **rows, size_t *n);
/* A page of jobs, newest first, with seq < before_seq (0: from the newest),
 * filtered by status when not NULL. Appends row summaries to `arr`. */
int srv_store_list_jobs(srv_store_t *st, const char *status, unsigned limit, long long before_seq,
                        json_t *arr, long long *last_seq);
/* Counts by status: queued, running, done, failed, cancelled. */
int srv_store_count_status(srv_store_t *st, uint64_t counts[5]);

int srv_store_put_graph(srv_store_t *st, const char *hash, const char *json, size_t len, size_t n_nodes);
int srv_store_get_graph(srv_store_t *st, const char *hash, char **json, size_t *len);
/* Whether the store holds the graph, without reading its JSON: 1 or 0
 * (0 too when the store fails). */
int srv_store_has_graph(srv_store_t *st, const char *hash);

int srv_store_put_result(srv_store_t *st, const char *key, const char *json, size_t len, const char *job_id);
/* job_id (33 bytes, may be NULL) receives the job that computed it, or "". */
int srv_store_get_result(srv_store_t *st, const char *key, char **json, size_t *len, char *job_id);

/* A job row as the API shows it (without the result). New reference. */
json_t *srv_job_row_to_json(const srv_job_row_t *row);

#endif
