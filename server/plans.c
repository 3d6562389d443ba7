/* plans.c - the plan service (see plans.h for the order a submission is
 * answered in): the body and answer caches in front of jobs.c, the plan
 * views and their cache, cancellation and the listing.
 *
 * Only final answers are kept in the LRU cache, and those never change:
 * "body|<SHA-256 of the request's bytes>" and "resp|<timeline>|<plan key>"
 * share one rendered answer, "view|<id>|<timeline>" holds a finished plan's
 * view. A cached answer is sent from the cache's own bytes (srv_blob_t).
 * Each is tagged with the stored row it shows (the plan key, the job id,
 * the graph hash: cache.h), so that retention's sweep drops it with the
 * row. */
#include "plans.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "graphs.h"
#include "json_util.h"
#include "metrics.h"
#include "results.h"
#include "store.h"
#include "util.h"

/* The result text (JSON) as an object; drops the timeline unless wanted. */
static json_t *srv__result_json(const char *text, size_t len, int timeline) {
  json_t *res = json_loadb(text, len, 0, NULL);
  if (res && !timeline) json_object_del(res, "timeline");
  return res;
}

/* The graph hash of a rendered answer, for the request log. */
static void srv__hash_from_text(const char *text, char graph_hash[65]) {
  const char *h = strstr(text, "\"graph_hash\":\"");
  size_t n = 0;
  if (h == NULL) return;
  h += 14;
  while (n + 1 < 65 && h[n] && h[n] != '"') n++;
  memcpy(graph_hash, h, n);
  graph_hash[n] = '\0';
}

/* ---- submissions ---- */

/* Cache key of a request body's exact bytes: "body|" + SHA-256 in hex. A
 * training job that POSTs the same body again (every restart does) finds
 * its finished answer here without the JSON parse, graph import and hash
 * that dominate a repeated submission (a 93 KB ResNet-50 body: ~6 ms of
 * parsing against ~0.2 ms of hashing). 0, or -1 when hashing failed. */
static int srv__body_key(const char *body, size_t len, char key[80]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(body, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) return -1;
  memcpy(key, "body|", 5);
  srv_hex(md, mdlen, key + 5);
  return 0;
}

/* A cached answer is kept as the id of the done job it shows (the handles
 * of later submissions go on that job) and then the answer's JSON, without
 * an id: "<job id>{\"status\":\"done\",...}". */
#define SRV__JOB_ID_LEN 32

/* A cached answer `blob` for submission `sub` of `owner`: a handle of its
 * own on the job the answer shows, sent with the answer. SRV_SUBMIT_CACHED
 * with sub->blob and sub->id; 0 when that job is no longer stored done
 * (the blob is dropped: the caller takes the slow way, which finds or
 * makes a job again); SRV_ESTORE, SRV_ENOSPACE. */
static int srv__cached_handle(srv_server_t *s, srv_blob_t *blob, const char *owner, const char *request_id,
                              srv_plan_submit_t *sub) {
  srv_job_row_t h;
  char job_id[33];
  int rc;
  if (blob->len <= SRV__JOB_ID_LEN || blob->data[SRV__JOB_ID_LEN] != '{') {
    srv_blob_unref(blob);
    return 0;
  }
  memcpy(job_id, blob->data, SRV__JOB_ID_LEN);
  job_id[SRV__JOB_ID_LEN] = '\0';
  memset(&h, 0, sizeof(h));
  srv_random_hex(h.id, 16);
  snprintf(h.owner, sizeof(h.owner), "%s", owner);
  snprintf(h.request_id, sizeof(h.request_id), "%s", request_id);
  h.created_ms = srv_now_ms();
  rc = srv_store_add_done_handle(s->store, &h, job_id);
  if (rc != 0) {
    srv_blob_unref(blob);
    return rc == SRV_ENOTFOUND ? 0 : rc == SRV_ENOSPACE ? rc : SRV_ESTORE;
  }
  sub->blob = blob;
  sub->skip = SRV__JOB_ID_LEN;
  memcpy(sub->id, h.id, sizeof(sub->id));
  return SRV_SUBMIT_CACHED;
}

int srv_plans_lookup_body(srv_server_t *s, const char *body, size_t len, const char *owner, const char *request_id,
                          srv_plan_submit_t *sub, char graph_hash[65]) {
  srv_blob_t *blob;
  int rc;
  memset(sub, 0, sizeof(*sub));
  if (atomic_load(&s->draining)) return SRV_EDRAINING;
  sub->have_body_key = len > 0 && srv__body_key(body, len, sub->body_key) == 0;
  if (sub->have_body_key && srv_cache_get_blob(s->cache, sub->body_key, &blob) == 0) {
    sub->cache = "hit";
    if ((rc = srv__cached_handle(s, blob, owner, request_id, sub)) == 0) {
      sub->cache = NULL;
      return 0;
    }
    if (rc < 0) return rc;
    srv_metrics_cache(s->metrics, 1);
    srv__hash_from_text(sub->blob->data, graph_hash);
    return SRV_SUBMIT_CACHED;
  }
  return 0;
}

/* Render the answer to a plan whose result jobs.c had, shown by job
 * `job_id`, and keep it under resp_key and the body key, one value under
 * both, tagged with the plan key. */
static int srv__answer_result(srv_server_t *s, const srv_plan_params_t *p, const char *result, size_t result_len,
                              const char *job_id, const char *plan_key, const char *resp_key,
                              srv_plan_submit_t *sub) {
  json_t *res = srv__result_json(result, result_len, p->timeline);
  json_t *o = json_object();
  srv_blob_t *blob;
  char *text, *kept;
  size_t len;
  if (res == NULL || o == NULL) {
    json_decref(res);
    json_decref(o);
    return SRV_EBADRESULT;
  }
  json_object_set_new(o, "status", json_string("done"));
  json_object_set_new(o, "graph_hash", json_string(p->graph_hash));
  json_object_set_new(o, "cache", json_string("hit"));
  json_object_set_new(o, "result", res);
  text = mp_json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (text == NULL) return SRV_ENOMEM;
  len = strlen(text);
  kept = malloc(SRV__JOB_ID_LEN + len + 1);
  if (kept) {
    memcpy(kept, job_id, SRV__JOB_ID_LEN);
    memcpy(kept + SRV__JOB_ID_LEN, text, len + 1);
  }
  free(text);
  blob = kept ? srv_blob_new(kept, SRV__JOB_ID_LEN + len, plan_key) : NULL;
  free(kept);
  if (blob == NULL) return SRV_ENOMEM;
  srv_cache_put_blob(s->cache, resp_key, blob); /* best effort */
  if (sub->have_body_key) srv_cache_put_blob(s->cache, sub->body_key, blob); /* one value under both keys */
  sub->blob = blob;
  sub->skip = SRV__JOB_ID_LEN;
  return SRV_SUBMIT_CACHED;
}

int srv_plans_submit(srv_server_t *s, const srv_plan_params_t *p, mp_graph_t **graph, srv_plan_submit_t *sub) {
  char plan_key[256], resp_key[300], result_job[33], job_id[33];
  char *canon = NULL, *result = NULL;
  size_t canon_len = 0, result_len = 0, n_nodes = *graph ? (*graph)->n_nodes : 0;
  srv_blob_t *blob;
  int rc;

  /* A repeated submission is answered from the rendered response kept in
   * the LRU cache: no result parsing, no serialisation; one insert, its
   * handle. */
  srv_keys_plan(p, plan_key);
  snprintf(resp_key, sizeof(resp_key), "resp|%d|%s", p->timeline ? 1 : 0, plan_key);
  if (srv_cache_get_blob(s->cache, resp_key, &blob) == 0) {
    sub->cache = "hit";
    rc = srv__cached_handle(s, blob, p->owner, p->request_id, sub);
    if (rc < 0) return rc;
    if (rc == SRV_SUBMIT_CACHED) {
      srv_metrics_cache(s->metrics, 1);
      if (sub->have_body_key) srv_cache_put_blob(s->cache, sub->body_key, sub->blob); /* best effort, shared */
      return SRV_SUBMIT_CACHED;
    }
    sub->cache = NULL;
  }
  /* A graph the store holds is not rendered again for a new job row (the
   * insert would be ignored; the job row keeps it from retention), and a
   * result computed before (srv_jobs_submit_plan answers
   * SRV_SUBMIT_CACHED) needs no graph but for a done job made for it. */
  if (*graph && srv_graphs_render_new(s, *graph, p->graph_hash, &canon, &canon_len) != 0) return SRV_ENOMEM;
  rc = srv_jobs_submit_plan(s->jobs, p, plan_key, graph, canon, canon_len, &sub->job, &result, &result_len,
                            result_job, sub->id);
  if (rc == SRV_SUBMIT_CACHED) {
    sub->cache = "hit";
    rc = srv_jobs_cached_handle(s->jobs, p, plan_key, result_job, canon, canon_len, n_nodes, sub->id, job_id);
    if (rc == 0) rc = srv__answer_result(s, p, result, result_len, job_id, plan_key, resp_key, sub);
  } else if (rc > 0) {
    sub->cache = rc == SRV_SUBMIT_JOINED ? "joined" : "miss";
  }
  free(canon);
  free(result);
  return rc;
}

/* ---- views ---- */

/* The name a view shows for graph `hash`: its own (the graph's "name",
 * or the request's graph_name when it came without one), else the first
 * 12 hex digits of its hash. Names never change (a graph is stored once),
 * so each is kept in the cache as "gname|<hash>" after one read of the
 * stored graph. */
static json_t *srv__graph_name(srv_server_t *s, const char *hash) {
  char key[80], *text = NULL;
  size_t len;
  json_t *name;
  snprintf(key, sizeof(key), "gname|%s", hash);
  if (srv_cache_get(s->cache, key, &text, &len) != 0) {
    json_t *g = NULL;
    const char *n = NULL;
    if (srv_store_get_graph(s->store, hash, &text, &len) == 0) {
      g = json_loadb(text, len, 0, NULL);
      n = json_string_value(json_object_get(g, "name"));
    }
    free(text);
    text = strdup(n ? n : "");
    json_decref(g);
    if (text == NULL) return NULL;
    len = strlen(text);
    if (g) srv_cache_put_tagged(s->cache, key, hash, text, len); /* best effort; not when the store failed */
  }
  name = len > 0 ? json_stringn(text, len) : json_sprintf("%.12s", hash);
  free(text);
  return name;
}

/* The headline figures of a finished plan's result, for listings:
 * {"feasible", "peak_bytes", "overhead_pct", "solver_used",
 * "min_feasible_budget"} (null where the result has none: an infeasible
 * plan has no peak or overhead, a feasible one no least budget; a new
 * reference), or NULL when the plan has no readable result. A finished
 * plan never changes, so they are kept in the cache as "psum|<id>". */
static json_t *srv__result_summary(srv_server_t *s, const char *id) {
  char key[80], *text = NULL;
  size_t len;
  json_t *sum = NULL;
  snprintf(key, sizeof(key), "psum|%s", id);
  if (srv_cache_get(s->cache, key, &text, &len) == 0) {
    sum = json_loadb(text, len, 0, NULL);
    free(text);
    return sum;
  }
  {
    srv_job_row_t row;
    json_t *res = NULL;
    if (srv_store_get_plan(s->store, id, &row) != 0) return NULL;
    if (strcmp(row.status, "done") == 0 && srv_results_get(s->cache, s->store, row.result_key, &text, &len, NULL) == 0)
      res = json_loadb(text, len, 0, NULL);
    free(text);
    srv_job_row_clear(&row);
    if (res == NULL) return NULL;
    sum = json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?}", "feasible", json_object_get(res, "feasible"), "peak_bytes",
                    json_object_get(res, "peak_bytes"), "overhead_pct", json_object_get(res, "overhead_pct"),
                    "solver_used", json_object_get(res, "solver_used"), "min_feasible_budget",
                    json_object_get(res, "min_feasible_budget"));
    json_decref(res);
  }
  if (sum && (text = mp_json_dumps(sum, JSON_COMPACT)) != NULL) {
    srv_cache_put_tagged(s->cache, key, id, text, strlen(text)); /* best effort */
    free(text);
  }
  return sum;
}

/* A listing's entry: the row plus what a scheduler and the dashboard show
 * without fetching each plan: graph_name, and feasible, peak_bytes,
 * overhead_pct, solver_used and min_feasible_budget (null until the plan
 * is done, and where its result has none). 0 or SRV_ENOMEM. */
static int srv__list_entry(srv_server_t *s, json_t *row) {
  const char *id = json_string_value(json_object_get(row, "id"));
  const char *st = json_string_value(json_object_get(row, "status"));
  const char *hash = json_string_value(json_object_get(row, "graph_hash"));
  static const char *const figures[] = {"feasible", "peak_bytes", "overhead_pct", "solver_used",
                                        "min_feasible_budget"};
  json_t *sum = NULL, *name;
  size_t i;
  if (id == NULL || st == NULL || hash == NULL) return 0;
  if ((name = srv__graph_name(s, hash)) == NULL || json_object_set_new(row, "graph_name", name) != 0)
    return SRV_ENOMEM;
  if (strcmp(st, "done") == 0) sum = srv__result_summary(s, id);
  for (i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
    json_t *v = json_object_get(sum, figures[i]);
    if (json_object_set_new(row, figures[i], v ? json_incref(v) : json_null()) != 0) {
      json_decref(sum);
      return SRV_ENOMEM;
    }
  }
  json_decref(sum);
  return 0;
}

/* A job row names its run time (start to finish, on the worker) twice,
 * run_ms and solve_ms. The API keeps solve_ms for one thing, the planner's
 * own time in the result (result.solve_ms, as `memplan plan` prints it),
 * so the row's alias is dropped from views and listings. */
static void srv__drop_run_alias(json_t *row) { json_object_del(row, "solve_ms"); }

/* Add the result kept under `key` to a done plan's view (left out when it
 * cannot be read). */
static void srv__attach_result(srv_server_t *s, json_t *view, const char *key, int with_timeline) {
  char *text = NULL;
  size_t len;
  if (srv_results_get(s->cache, s->store, key, &text, &len, NULL) == 0) {
    json_t *res = srv__result_json(text, len, with_timeline);
    if (res) json_object_set_new(view, "result", res);
    free(text);
  }
}

/* Show the in-memory view of a job as handle `row` sees it: its own id,
 * owner, submission time and request id. 0 or -1 (out of memory). */
static int srv__as_handle(json_t *view, const srv_job_row_t *row) {
  if (mp_json_set(view, "id", json_string(row->id)) || mp_json_set(view, "owner", json_string(row->owner)) ||
      mp_json_set(view, "created_ms", mp_json_number(row->created_ms)) ||
      mp_json_set(view, "created_at", srv_rfc3339(row->created_ms)))
    return -1;
  if (srv_row_replica_json(row, view) != 0) return -1;
  if (row->request_id[0]) return mp_json_set(view, "request_id", json_string(row->request_id));
  json_object_del(view, "request_id");
  return 0;
}

/* The job of a plan whose row says queued or running (`job_id`) when its
 * state here is the truth: active here and not final, or final but not
 * recorded yet (the store refused the write, see jobs.c; the row still
 * says running). *final says whether it ended. A new reference, or NULL
 * when the row is authoritative. */
static srv_job_t *srv__live_job(srv_server_t *s, const char *job_id, int *final) {
  srv_job_t *job = srv_jobs_find(s->jobs, job_id);
  *final = 0;
  if (job == NULL) return NULL;
  *final = srv_job_is_final(job);
  if (!*final || srv_job_unrecorded(job)) return job;
  srv_job_unref(job); /* finished: the store row is authoritative */
  return NULL;
}

/* A listing's entry of a plan whose row says queued or running takes the
 * status, timings, error and progress of its job here when that state is
 * the truth (srv__live_job), as the plan's own view does: a plan that was
 * running when the daemon stopped, say, is queued until a worker takes it
 * again. 0 or SRV_ENOMEM. */
static int srv__list_live(srv_server_t *s, json_t *row) {
  static const char *const live[] = {"status",      "started_at", "started_ms", "finished_at",
                                     "finished_ms", "run_ms",     "error",      "progress"};
  const char *st = json_string_value(json_object_get(row, "status"));
  const char *job_id = json_string_value(json_object_get(row, "_job"));
  srv_job_t *job;
  json_t *mem;
  size_t i;
  int fin;
  if (st == NULL || job_id == NULL || (strcmp(st, "queued") != 0 && strcmp(st, "running") != 0)) return 0;
  if ((job = srv__live_job(s, job_id, &fin)) == NULL) return 0;
  mem = srv_job_to_json(job);
  srv_job_unref(job);
  if (mem == NULL) return SRV_ENOMEM;
  for (i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
    json_t *v = json_object_get(mem, live[i]);
    if (v == NULL)
      json_object_del(row, live[i]);
    else if (json_object_set(row, live[i], v) != 0) {
      json_decref(mem);
      return SRV_ENOMEM;
    }
  }
  json_decref(mem);
  return 0;
}

/* The API view of plan `row` (read through its handle): parameters,
 * status, timings, error and (when done) the result. *final says whether
 * it reached a final status. NULL when out of memory. */
static json_t *srv__plan_view(srv_server_t *s, const srv_job_row_t *row, int with_timeline, int *final,
                              int *keep) {
  int fin;
  srv_job_t *job = row->handle_cancelled ? NULL : srv__live_job(s, row->job_id, &fin);
  json_t *view;
  *final = 0;
  *keep = 1;
  if (job) {
    srv_job_snapshot_t snap;
    view = srv_job_to_json(job);
    srv_job_snapshot(job, &snap);
    if (view && snap.status == SRV_JOB_DONE) srv__attach_result(s, view, snap.key, with_timeline);
    srv_job_unref(job);
    *final = fin;
    *keep = 0; /* the row will say more (or differ in its timings) */
    if (view && srv__as_handle(view, row) != 0) {
      json_decref(view);
      view = NULL;
    }
    if (view) srv__drop_run_alias(view);
    return view;
  }
  view = srv_job_row_to_json(row);
  if (view == NULL || mp_json_set(view, "owner", json_string(row->owner))) {
    json_decref(view);
    return NULL;
  }
  srv__drop_run_alias(view);
  /* a handle that joined a running job was queued for no time */
  if (row->started_ms > 0)
    json_object_set_new(view, "queue_ms",
                        mp_json_number(row->started_ms > row->created_ms ? row->started_ms - row->created_ms : 0));
  *final = strcmp(row->status, "done") == 0 || strcmp(row->status, "failed") == 0 ||
           strcmp(row->status, "cancelled") == 0;
  if (strcmp(row->status, "done") == 0) srv__attach_result(s, view, row->result_key, with_timeline);
  return view;
}

/* Plan `id` read through its handle, when `who` may see it: 0 with *row,
 * SRV_ENOTFOUND (also when it is another's), SRV_ESTORE, SRV_ENOMEM. */
static int srv__plan_row(srv_server_t *s, const char *id, const srv_viewer_t *who, srv_job_row_t *row) {
  int rc = srv_store_get_plan(s->store, id, row);
  if (rc != 0) return rc;
  if (!who->all && strcmp(row->owner, who->owner) != 0) {
    srv_job_row_clear(row);
    return SRV_ENOTFOUND;
  }
  return 0;
}

/* Whether `who` may see plan `id`, from the cache's "own|<id>" (a plan's
 * owner never changes) or the store: 0, SRV_ENOTFOUND (not there, or not
 * `who`'s) or SRV_ESTORE. */
static int srv__may_see(srv_server_t *s, const char *id, const srv_viewer_t *who) {
  char key[80], *text = NULL;
  size_t len;
  int same;
  srv_job_row_t row;
  if (who->all) return 0;
  snprintf(key, sizeof(key), "own|%s", id);
  if (srv_cache_get(s->cache, key, &text, &len) == 0) {
    same = len == strlen(who->owner) && memcmp(text, who->owner, len) == 0;
    free(text);
    return same ? 0 : SRV_ENOTFOUND;
  }
  if ((same = srv_store_get_plan(s->store, id, &row)) != 0) return same == SRV_ENOTFOUND ? same : SRV_ESTORE;
  srv_cache_put_tagged(s->cache, key, id, row.owner, strlen(row.owner)); /* best effort */
  same = strcmp(row.owner, who->owner) == 0;
  srv_job_row_clear(&row);
  return same ? 0 : SRV_ENOTFOUND;
}

/* A finished plan never changes, so its rendered view is kept in the LRU
 * cache: a repeated GET (dashboards, pollers) is a lookup, with no store
 * read, no JSON parse and no serialisation (a principal that sees only its
 * own plans first has the owner checked, from the cache too). */
int srv_plans_view(srv_server_t *s, const char *id, const srv_viewer_t *who, int timeline, srv_plan_view_t *v,
                   char graph_hash[65]) {
  int final, keep, rc;
  char key[160];
  json_t *view;
  const char *h;
  srv_job_row_t row;
  memset(v, 0, sizeof(*v));
  if ((rc = srv__may_see(s, id, who)) != 0) return rc;
  snprintf(key, sizeof(key), "view|%s|%d", id, timeline);
  if (srv_cache_get_blob(s->cache, key, &v->blob) == 0) {
    srv__hash_from_text(v->blob->data, graph_hash);
    return 0;
  }
  if ((rc = srv__plan_row(s, id, who, &row)) != 0) return rc;
  view = srv__plan_view(s, &row, timeline, &final, &keep);
  srv_job_row_clear(&row);
  if (view == NULL) return SRV_ENOMEM;
  h = json_string_value(json_object_get(view, "graph_hash"));
  if (h) {
    snprintf(graph_hash, 65, "%s", h);
    json_object_set_new(view, "graph_name", srv__graph_name(s, h)); /* NULL (out of memory): left out */
  }
  if (!final) {
    v->pending = view;
    return 0;
  }
  v->text = mp_json_dumps(view, JSON_COMPACT);
  json_decref(view);
  if (v->text == NULL) return SRV_ENOMEM;
  v->len = strlen(v->text);
  if (keep) srv_cache_put_tagged(s->cache, key, id, v->text, v->len); /* best effort */
  return 0;
}

srv_job_t *srv_plans_unfinished(srv_server_t *s, const char *id, const srv_viewer_t *who) {
  srv_job_row_t row;
  srv_job_t *job;
  if (srv__plan_row(s, id, who, &row) != 0) return NULL;
  job = row.handle_cancelled ? NULL : srv_jobs_find(s->jobs, row.job_id);
  srv_job_row_clear(&row);
  if (job && srv_job_is_final(job)) {
    srv_job_unref(job);
    return NULL;
  }
  return job;
}

int srv_plans_cancel(srv_server_t *s, const char *id, const srv_viewer_t *who, int *was_running) {
  srv_job_row_t row;
  srv_job_t *job;
  int rc, remaining = 0;
  *was_running = 0;
  if ((rc = srv__plan_row(s, id, who, &row)) != 0) return rc == SRV_ESTORE ? rc : SRV_ENOTFOUND;
  rc = srv_store_cancel_handle(s->store, id, srv_now_ms(), &remaining);
  if (rc != 0 || remaining > 0) {
    /* Another handle still needs the job: this one alone is cancelled. */
    srv_job_row_clear(&row);
    return rc;
  }
  if ((job = srv_jobs_find(s->jobs, row.job_id)) != NULL) {
    srv_job_snapshot_t snap;
    srv_job_snapshot(job, &snap);
    *was_running = snap.status == SRV_JOB_RUNNING;
    srv_job_unref(job);
  }
  rc = srv_jobs_cancel(s->jobs, row.job_id);
  srv_job_row_clear(&row);
  /* It ended meanwhile: the handle is cancelled all the same. */
  return rc == SRV_ECONFLICT || rc == SRV_ENOTFOUND ? 0 : rc;
}

int srv_plans_list(srv_server_t *s, const srv_viewer_t *who, const char *status, unsigned limit, const char *after,
                   json_t **out) {
  long long before = 0, last = 0;
  json_t *arr, *o;
  *out = NULL;
  if (after) {
    srv_job_row_t row;
    if (srv__plan_row(s, after, who, &row) != 0) return SRV_ENOTFOUND;
    before = row.seq;
    srv_job_row_clear(&row);
  }
  arr = json_array();
  if (arr == NULL || srv_store_list_jobs(s->store, who->all ? NULL : who->owner, status, limit, before, arr, &last) != 0) {
    json_decref(arr);
    return SRV_ESTORE;
  }
  o = json_object();
  if (o == NULL) {
    json_decref(arr);
    return SRV_ENOMEM;
  }
  /* A full page has a next one, from its last row (even when the filter
   * below drops that row). */
  if (json_array_size(arr) == limit)
    json_object_set(o, "next", json_object_get(json_array_get(arr, json_array_size(arr) - 1), "id"));
  else
    json_object_set_new(o, "next", json_null());
  {
    size_t i = 0;
    while (i < json_array_size(arr)) {
      json_t *row = json_array_get(arr, i);
      const char *now;
      srv__drop_run_alias(row);
      if (srv__list_live(s, row) != 0 || srv__list_entry(s, row) != 0) {
        json_decref(arr);
        json_decref(o);
        return SRV_ENOMEM;
      }
      json_object_del(row, "_job"); /* the job's id is not the API's */
      /* the store gave the rows of that status and every queued or running
       * one: the entry's live status decides */
      now = json_string_value(json_object_get(row, "status"));
      if (status && (now == NULL || strcmp(now, status) != 0))
        json_array_remove(arr, i);
      else
        i++;
    }
  }
  json_object_set_new(o, "plans", arr);
  *out = o;
  return 0;
}
