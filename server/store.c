/* store.c - the store's front: srv_store_open picks the backend --store
 * names, and every srv_store_* call dispatches through the backend's table
 * of operations (see store.h). Also the job row's API form, which does not
 * depend on the backend. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_util.h"

int srv_store_open(const char *url, const char *data_dir, unsigned pool, srv_store_t **out, char *errbuf,
                   size_t errlen) {
  *out = NULL;
  if (url == NULL || url[0] == '\0' || strcmp(url, "sqlite:") == 0)
    return srv_store_sqlite_open(data_dir, out, errbuf, errlen);
  if (strncmp(url, "sqlite:", 7) == 0) return srv_store_sqlite_open(url + 7, out, errbuf, errlen);
  if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0)
    return srv_store_pg_open(url, pool, out, errbuf, errlen);
  snprintf(errbuf, errlen, "unknown store '%.60s': expected sqlite:DIR or postgresql://...", url);
  return SRV_ESTORE;
}

void srv_store_close(srv_store_t *st) {
  if (st) st->ops->close(st);
}

const char *srv_store_kind(srv_store_t *st) { return st->ops->name; }

int srv_store_shared(srv_store_t *st) { return st->ops->claim_job != NULL; }

int srv_store_health(srv_store_t *st, char *reason, size_t len) { return st->ops->health(st, reason, len); }

int srv_store_accept_job(srv_store_t *st, srv_job_row_t *row, const char *graph_json, size_t graph_len,
                         size_t n_nodes, unsigned max_queued, unsigned max_per_client, char joined_id[33]) {
  return st->ops->accept_job(st, row, graph_json, graph_len, n_nodes, max_queued, max_per_client, joined_id);
}

int srv_store_update_job(srv_store_t *st, const char *id, const char *status, double started_ms,
                         double finished_ms, const char *error_json) {
  return st->ops->update_job(st, id, status, started_ms, finished_ms, error_json);
}

int srv_store_get_job(srv_store_t *st, const char *id, srv_job_row_t *row) { return st->ops->get_job(st, id, row); }

int srv_store_pending_jobs(srv_store_t *st, srv_job_row_t **rows, size_t *n) {
  return st->ops->pending_jobs(st, rows, n);
}

int srv_store_list_jobs(srv_store_t *st, const char *owner, const char *status, unsigned limit,
                        long long before_seq, json_t *arr, long long *last_seq) {
  return st->ops->list_jobs(st, owner, status, limit, before_seq, arr, last_seq);
}

int srv_store_get_plan(srv_store_t *st, const char *id, srv_job_row_t *row) {
  return st->ops->get_plan(st, id, row);
}

int srv_store_add_handle(srv_store_t *st, const srv_job_row_t *handle, const char *job_id) {
  return st->ops->add_handle(st, handle, job_id);
}

int srv_store_add_done_handle(srv_store_t *st, const srv_job_row_t *handle, const char *job_id) {
  return st->ops->add_done_handle(st, handle, job_id);
}

int srv_store_cancel_handle(srv_store_t *st, const char *id, double now_ms, int *remaining) {
  return st->ops->cancel_handle(st, id, now_ms, remaining);
}

int srv_store_count_status(srv_store_t *st, uint64_t counts[5]) { return st->ops->count_status(st, counts); }

int srv_store_put_graph(srv_store_t *st, const char *hash, const char *json, size_t len, size_t n_nodes) {
  return st->ops->put_graph(st, hash, json, len, n_nodes);
}

int srv_store_get_graph(srv_store_t *st, const char *hash, char **json, size_t *len) {
  return st->ops->get_graph(st, hash, json, len);
}

int srv_store_has_graph(srv_store_t *st, const char *hash) { return st->ops->has_graph(st, hash); }

int srv_store_put_result(srv_store_t *st, const char *key, const char *json, size_t len, const char *job_id) {
  return st->ops->put_result(st, key, json, len, job_id);
}

int srv_store_get_result(srv_store_t *st, const char *key, char **json, size_t *len, char *job_id) {
  return st->ops->get_result(st, key, json, len, job_id);
}

int srv_store_probe(srv_store_t *st) {
  return st->ops->probe ? st->ops->probe(st) : srv_store_health(st, NULL, 0);
}

/* ---- shared stores: SRV_EINVAL from a backend without them ---- */

int srv_store_claim_job(srv_store_t *st, const char *owner, double lease_s, double now_ms, srv_job_row_t *row) {
  return st->ops->claim_job ? st->ops->claim_job(st, owner, lease_s, now_ms, row) : SRV_EINVAL;
}

int srv_store_renew_leases(srv_store_t *st, const char *owner, double lease_s, const char (*ids)[33], size_t n,
                           int *outcome) {
  return st->ops->renew_leases ? st->ops->renew_leases(st, owner, lease_s, ids, n, outcome) : SRV_EINVAL;
}

int srv_store_finish_job(srv_store_t *st, const char *id, const char *owner, const char *status,
                         double finished_ms, const char *error_json) {
  return st->ops->finish_job ? st->ops->finish_job(st, id, owner, status, finished_ms, error_json) : SRV_EINVAL;
}

int srv_store_cancel_job(srv_store_t *st, const char *id, double finished_ms) {
  return st->ops->cancel_job ? st->ops->cancel_job(st, id, finished_ms) : SRV_EINVAL;
}

int srv_store_listen_open(srv_store_t *st, int *fd, char *err, size_t errlen) {
  if (st->ops->listen_open == NULL) {
    snprintf(err, errlen, "the %s store has no notifications", st->ops->name);
    return SRV_EINVAL;
  }
  return st->ops->listen_open(st, fd, err, errlen);
}

int srv_store_listen_read(srv_store_t *st, srv_store_event_fn fn, void *arg) {
  return st->ops->listen_read ? st->ops->listen_read(st, fn, arg) : SRV_EINVAL;
}

void srv_store_listen_close(srv_store_t *st) {
  if (st->ops->listen_close) st->ops->listen_close(st);
}

/* ---- job rows ---- */

void srv_job_row_clear(srv_job_row_t *row) {
  if (row == NULL) return;
  free(row->error);
  row->error = NULL;
}

/* Milliseconds since the epoch as RFC 3339 UTC with milliseconds. */
json_t *srv_rfc3339(double ms) {
  char buf[96];
  time_t secs = (time_t)(ms / 1000.0);
  struct tm tm;
  if (gmtime_r(&secs, &tm) == NULL) return json_null();
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - (double)secs * 1000.0));
  return json_string(buf);
}

json_t *srv_job_row_to_json(const srv_job_row_t *r) {
  json_t *o = json_object();
  if (o == NULL) return NULL;
  /* Dashboards read the RFC 3339 times and solve_ms; the *_ms epoch
   * figures are kept for programs. */
  if (mp_json_set(o, "created_at", srv_rfc3339(r->created_ms)) ||
      (r->started_ms > 0 && mp_json_set(o, "started_at", srv_rfc3339(r->started_ms))) ||
      (r->finished_ms > 0 && mp_json_set(o, "finished_at", srv_rfc3339(r->finished_ms))) ||
      (r->started_ms > 0 && r->finished_ms > 0 &&
       mp_json_set(o, "solve_ms", mp_json_number(r->finished_ms - r->started_ms)))) {
    json_decref(o);
    return NULL;
  }
  if (mp_json_set(o, "id", json_string(r->id)) || mp_json_set(o, "status", json_string(r->status)) ||
      mp_json_set(o, "graph_hash", json_string(r->graph_hash)) ||
      mp_json_set(o, "budget", mp_json_u64(r->budget)) || mp_json_set(o, "solver", json_string(r->solver)) ||
      mp_json_set(o, "objective", json_string(r->objective)) ||
      mp_json_set(o, "accounting", json_string(r->accounting)) ||
      mp_json_set(o, "created_ms", mp_json_number(r->created_ms)) ||
      (r->started_ms > 0 && mp_json_set(o, "started_ms", mp_json_number(r->started_ms))) ||
      (r->finished_ms > 0 && mp_json_set(o, "finished_ms", mp_json_number(r->finished_ms))) ||
      (r->started_ms > 0 && r->finished_ms > 0 &&
       mp_json_set(o, "run_ms", mp_json_number(r->finished_ms - r->started_ms))) ||
      (r->request_id[0] && mp_json_set(o, "request_id", json_string(r->request_id)))) {
    json_decref(o);
    return NULL;
  }
  if (srv_row_replica_json(r, o) != 0) {
    json_decref(o);
    return NULL;
  }
  if (r->error) {
    json_t *e = json_loads(r->error, 0, NULL);
    if (e && json_object_set_new(o, "error", e) != 0) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}


int srv_row_replica_json(const srv_job_row_t *row, json_t *view) {
  json_t *rep;
  if (strcmp(row->status, "running") != 0 || row->replica[0] == '\0') return 0;
  rep = json_pack("{s:s}", "id", row->replica);
  if (rep == NULL) return -1;
  if (row->lease_until_ms > 0 && (mp_json_set(rep, "lease_until", srv_rfc3339(row->lease_until_ms)) ||
                                  mp_json_set(rep, "lease_until_ms", mp_json_number(row->lease_until_ms)))) {
    json_decref(rep);
    return -1;
  }
  return json_object_set_new(view, "replica", rep) == 0 ? 0 : -1;
}

json_t *srv_plan_row_to_json(const srv_job_row_t *row) {
  json_t *o = srv_job_row_to_json(row);
  if (o && (json_object_set_new(o, "owner", json_string(row->owner)) != 0 ||
            json_object_set_new(o, "_job", json_string(row->job_id)) != 0)) {
    json_decref(o);
    return NULL;
  }
  return o;
}
