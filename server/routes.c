/* routes.c - the API: the route table and one handler per route.
 *
 * Handlers run on libmicrohttpd's threads. They parse and validate, talk to
 * jobs.c and the store, and either answer at once or park the connection
 * (srv_suspend) with a function that answers when it resumes. Every 4xx
 * carries {"error": {"code", "message", "path"}}, the path naming the field
 * at fault in the request ("$.graph.nodes[3].bytes", "$.budget") or the
 * query parameter ("?limit"). */
#include "routes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cache.h"
#include "formats.h"
#include "frontier.h"
#include "graph_stats_json.h"
#include "json_util.h"
#include "metrics.h"
#include "request_json.h"
#include "store.h"
#include "util.h"

/* The dashboard page, embedded by server/dashboard_asset.S. */
extern const char srv_dashboard_html[];
extern const char srv_dashboard_html_end[];

#define SRV__JSON "application/json"

/* ---- helpers ---- */

static int srv__is_id(const char *s) {
  size_t i;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return i == 32;
}

/* Deepest nesting of arrays and objects, outside strings; stops counting
 * past `limit`. jansson's own limit (2048) is fixed at compile time, so the
 * configurable one is checked here, before parsing. */
static unsigned srv__json_depth(const char *p, size_t n, unsigned limit) {
  unsigned depth = 0, max = 0;
  int in_str = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    char c = p[i];
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = 0;
    } else if (c == '"') {
      in_str = 1;
    } else if (c == '[' || c == '{') {
      if (++depth > max) max = depth;
      if (max > limit) return max;
    } else if (c == ']' || c == '}') {
      if (depth) depth--;
    }
  }
  return max;
}

/* Parse the body as a JSON document; NULL after answering an error. */
static json_t *srv__body_json(srv_req_t *r, enum MHD_Result *ret) {
  json_error_t je;
  json_t *root;
  if (r->body_len == 0) {
    *ret = srv_respond_error(r, 400, "empty_body", "$", "the request needs a JSON body");
    return NULL;
  }
  if (srv__json_depth(r->body, r->body_len, r->srv->cfg.max_json_depth) > r->srv->cfg.max_json_depth) {
    *ret = srv_respond_error(r, 400, "too_deep", "$", "the JSON nests deeper than %u levels (--max-json-depth)",
                             r->srv->cfg.max_json_depth);
    return NULL;
  }
  root = json_loadb(r->body, r->body_len, MP_JSON_LOAD_FLAGS, &je);
  if (root == NULL) {
    *ret = srv_respond_error(r, 400, "invalid_json", "$", "line %d, column %d: %s", je.line, je.column, je.text);
    return NULL;
  }
  return root;
}

/* The graph's canonical native JSON (malloc'd), what the store keeps; 0 or
 * an answered error (-1). */
static int srv__canon(srv_req_t *r, const mp_graph_t *g, char **canon, size_t *canon_len,
                      enum MHD_Result *ret) {
  json_t *native = mp_graph_to_json(g);
  *canon = native ? json_dumps(native, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(native);
  if (*canon == NULL) {
    *ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    return -1;
  }
  *canon_len = strlen(*canon);
  return 0;
}

/* Load the request's graph; 0, or an answered error (returns -1). On
 * success *g is the graph and `hash` its hash; its canonical JSON is
 * rendered (srv__canon) only when the store needs it. */
static int srv__load_graph(srv_req_t *r, json_t *value, mp_graph_t **g, char hash[65], enum MHD_Result *ret) {
  mp_limits_t lim;
  mp_error_t err;
  int rc;

  *g = NULL;
  mp_limits_default(&lim);
  lim.max_nodes = r->srv->cfg.max_nodes;
  mp_error_clear(&err);
  rc = mp_graph_load_json(value, "$.graph", MP_FORMAT_AUTO, NULL, &lim, g, NULL, &err);
  if (rc != 0) {
    char msg[700];
    const char *path = err.path[0] ? err.path : "$.graph";
    if (err.line > 0)
      snprintf(msg, sizeof(msg), "line %ld: %s", err.line, err.message);
    else
      snprintf(msg, sizeof(msg), "%s", err.message);
    if (rc == MP_ENOMEM)
      *ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    else if (rc == MP_ELIMIT)
      *ret = srv_respond_error(r, 413, "graph_too_large", path, "%s", msg);
    else
      *ret = srv_respond_error(r, 400, "invalid_graph", path, "%s", msg);
    return -1;
  }
  if (mp_graph_hash(*g, hash) != 0) {
    mp_graph_free(*g);
    *g = NULL;
    *ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    return -1;
  }
  memcpy(r->graph_hash, hash, 65);
  return 0;
}

static enum MHD_Result srv__busy(srv_req_t *r, int rc) {
  if (rc == SRV_EFULL)
    return srv_respond_error_hdr(r, 503, "queue_full", "", "Retry-After", "5",
                                 "the work queue is full (--queue-size); retry later");
  if (rc == SRV_EDRAINING)
    return srv_respond_error_hdr(r, 503, "draining", "", "Retry-After", "10",
                                 "the server is shutting down and takes no new work");
  if (rc == SRV_ENOMEM) return srv_respond_error(r, 500, "internal", "", "out of memory");
  return srv_respond_error(r, 500, "store_failed", "", "the durable store failed; see the server log");
}

/* The result text (JSON) as an object; drops the timeline unless wanted. */
static json_t *srv__result_json(const char *text, size_t len, int timeline) {
  json_t *res = json_loadb(text, len, 0, NULL);
  if (res && !timeline) json_object_del(res, "timeline");
  return res;
}

/* ---- plans ---- */

/* The API view of a plan: parameters, status, timings, error and (when
 * done) the result. *final says whether it reached a final status. NULL
 * when unknown (404) or out of memory (*oom). */
static json_t *srv__plan_view(srv_server_t *s, const char *id, int with_timeline, int *final, int *oom) {
  srv_job_t *job = srv_jobs_find(s->jobs, id);
  srv_job_row_t row;
  json_t *view;
  *final = 0;
  *oom = 0;
  if (job) {
    int fin = srv_job_is_final(job);
    if (!fin) {
      view = srv_job_to_json(job);
      srv_job_unref(job);
      if (view == NULL) *oom = 1;
      return view;
    }
    srv_job_unref(job); /* finished: the store row is authoritative */
  }
  if (srv_store_get_job(s->store, id, &row) != 0) return NULL;
  view = srv_job_row_to_json(&row);
  if (view == NULL) {
    srv_job_row_clear(&row);
    *oom = 1;
    return NULL;
  }
  if (row.started_ms > 0)
    json_object_set_new(view, "queue_ms", mp_json_number(row.started_ms - row.created_ms));
  *final = strcmp(row.status, "done") == 0 || strcmp(row.status, "failed") == 0 ||
           strcmp(row.status, "cancelled") == 0;
  if (strcmp(row.status, "done") == 0) {
    char *text = NULL;
    size_t len;
    if (srv_jobs_result(s->jobs, row.result_key, &text, &len, NULL) == 0) {
      json_t *res = srv__result_json(text, len, with_timeline);
      if (res) json_object_set_new(view, "result", res);
      free(text);
    }
  }
  srv_job_row_clear(&row);
  return view;
}

/* The graph hash of a rendered view, for the request log. */
static void srv__hash_from_text(srv_req_t *r, const char *text) {
  const char *h = strstr(text, "\"graph_hash\":\"");
  size_t n = 0;
  if (h == NULL) return;
  h += 14;
  while (n + 1 < sizeof(r->graph_hash) && h[n] && h[n] != '"') n++;
  memcpy(r->graph_hash, h, n);
  r->graph_hash[n] = '\0';
}

/* Answer with the plan's current view: 200 when final, else `pending`.
 * A finished plan never changes, so its rendered view is kept in the LRU
 * cache: a repeated GET (dashboards, pollers) is a lookup, and the answer
 * is sent from the cached bytes themselves (a reference, no copy), with no
 * store read, no JSON parse and no serialisation. */
static enum MHD_Result srv__answer_plan(srv_req_t *r, const char *id, int with_timeline, unsigned pending) {
  int final, oom;
  char key[160], *text = NULL;
  size_t len = 0;
  json_t *view;
  srv_blob_t *blob;
  snprintf(key, sizeof(key), "view|%s|%d", id, with_timeline);
  if (srv_cache_get_blob(r->srv->cache, key, &blob) == 0) {
    srv__hash_from_text(r, blob->data);
    return srv_respond_blob(r, 200, blob);
  }
  view = srv__plan_view(r->srv, id, with_timeline, &final, &oom);
  if (view == NULL) {
    if (oom) return srv_respond_error(r, 500, "internal", "", "out of memory");
    return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %s", id);
  }
  {
    const char *h = json_string_value(json_object_get(view, "graph_hash"));
    if (h) snprintf(r->graph_hash, sizeof(r->graph_hash), "%s", h);
  }
  if (!final) return srv_respond_json(r, pending, view);
  text = json_dumps(view, JSON_COMPACT);
  json_decref(view);
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  len = strlen(text);
  srv_cache_put(r->srv->cache, key, text, len); /* best effort */
  return srv_respond_text_owned(r, 200, text, len);
}

/* Cache key of a request body's exact bytes: "body|" + SHA-256 in hex. A
 * training job that POSTs the same body again (every restart does) finds
 * its finished answer here without the JSON parse, graph import and hash
 * that dominate a repeated submission (a 93 KB ResNet-50 body: ~6 ms of
 * parsing against ~0.2 ms of hashing). Only final answers are stored
 * under it, and those never change. 0, or -1 when hashing failed. */
static int srv__body_key(const srv_req_t *r, char key[80]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(r->body, r->body_len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) return -1;
  memcpy(key, "body|", 5);
  srv_hex(md, mdlen, key + 5);
  return 0;
}

typedef struct {
  char id[33];
  int timeline;
  unsigned pending;
} srv__plan_ctx_t;

static enum MHD_Result srv__plan_resumed(srv_req_t *r) {
  srv__plan_ctx_t *c = r->ctx;
  return srv__answer_plan(r, c->id, c->timeline, c->pending);
}

static enum MHD_Result srv__plans_post(srv_req_t *r) {
  srv_server_t *s = r->srv;
  enum MHD_Result ret = MHD_NO;
  mp_plan_request_t req;
  srv_plan_params_t p;
  mp_error_t err;
  json_t *root;
  mp_graph_t *g = NULL;
  char *canon = NULL, *result = NULL;
  size_t canon_len = 0, result_len = 0;
  char result_job[33], plan_key[256], resp_key[300], body_key[80];
  srv_job_t *job = NULL;
  srv_blob_t *blob;
  int rc, have_body_key;

  if (atomic_load(&s->draining)) return srv__busy(r, SRV_EDRAINING);
  have_body_key = r->body_len > 0 && srv__body_key(r, body_key) == 0;
  if (have_body_key && srv_cache_get_blob(s->cache, body_key, &blob) == 0) {
    r->cache = "hit";
    srv_metrics_cache(s->metrics, 1);
    srv__hash_from_text(r, blob->data);
    return srv_respond_blob(r, 200, blob);
  }
  if ((root = srv__body_json(r, &ret)) == NULL) return ret;
  mp_error_clear(&err);
  if (mp_plan_request_parse(root, s->cfg.max_wait_s, &req, &err) != 0) {
    ret = srv_respond_error(r, 400, "invalid_request", err.path, "%s", err.message);
    goto out;
  }
  memset(&p, 0, sizeof(p));
  if (req.graph) {
    if (srv__load_graph(r, req.graph, &g, p.graph_hash, &ret) != 0) goto out;
  } else {
    memcpy(p.graph_hash, req.graph_hash, 65);
    memcpy(r->graph_hash, req.graph_hash, 65);
    if (!srv_store_has_graph(s->store, p.graph_hash)) {
      ret = srv_respond_error(r, 404, "unknown_graph", "$.graph_hash",
                              "no graph with this hash was submitted before; send the graph itself");
      goto out;
    }
  }
  p.budget = req.budget;
  p.solver = req.solver;
  p.objective = req.objective;
  p.accounting = req.accounting;
  p.timeline = req.timeline;
  p.swap = req.swap;
  p.device = req.device;
  snprintf(p.request_id, sizeof(p.request_id), "%s", r->request_id);

  /* A repeated submission is answered from the rendered response kept in
   * the LRU cache: no store, no result parsing, no serialisation. */
  srv_jobs_plan_key(&p, plan_key);
  snprintf(resp_key, sizeof(resp_key), "resp|%d|%s", req.timeline ? 1 : 0, plan_key);
  if (srv_cache_get_blob(s->cache, resp_key, &blob) == 0) {
    r->cache = "hit";
    srv_metrics_cache(s->metrics, 1);
    if (have_body_key) srv_cache_put_blob(s->cache, body_key, blob); /* best effort, shared */
    ret = srv_respond_blob(r, 200, blob);
    goto out;
  }
  /* Graphs are never removed from the store: one it holds is not rendered
   * again for a new job row (the insert would be ignored), and a result
   * computed before (srv_jobs_submit_plan answers SRV_SUBMIT_CACHED) was
   * computed from a graph the store holds. */
  if (g && !srv_store_has_graph(s->store, p.graph_hash) && srv__canon(r, g, &canon, &canon_len, &ret) != 0)
    goto out;
  rc = srv_jobs_submit_plan(s->jobs, &p, plan_key, &g, canon, canon_len, &job, &result, &result_len,
                            result_job);
  if (rc < 0) {
    ret = srv__busy(r, rc);
    goto out;
  }
  if (rc == SRV_SUBMIT_CACHED) {
    json_t *res = srv__result_json(result, result_len, req.timeline);
    json_t *o = json_object();
    r->cache = "hit";
    if (res == NULL || o == NULL) {
      json_decref(res);
      json_decref(o);
      ret = srv_respond_error(r, 500, "internal", "", "the cached result is unreadable");
      goto out;
    }
    if (result_job[0]) json_object_set_new(o, "id", json_string(result_job));
    json_object_set_new(o, "status", json_string("done"));
    json_object_set_new(o, "graph_hash", json_string(p.graph_hash));
    json_object_set_new(o, "cache", json_string("hit"));
    json_object_set_new(o, "result", res);
    {
      char *text = json_dumps(o, JSON_COMPACT);
      json_decref(o);
      if (text == NULL) {
        ret = srv_respond_error(r, 500, "internal", "", "out of memory");
        goto out;
      }
      srv_cache_put(s->cache, resp_key, text, strlen(text)); /* best effort */
      if (have_body_key && srv_cache_get_blob(s->cache, resp_key, &blob) == 0) {
        srv_cache_put_blob(s->cache, body_key, blob); /* one value under both keys */
        srv_blob_unref(blob);
      }
      ret = srv_respond_text_owned(r, 200, text, strlen(text));
    }
    goto out;
  }
  r->cache = rc == SRV_SUBMIT_JOINED ? "joined" : "miss";
  {
    srv_job_snapshot_t snap;
    srv_job_snapshot(job, &snap);
    if (req.wait_s > 0 && !srv_job_is_final(job)) {
      srv__plan_ctx_t *c = calloc(1, sizeof(*c));
      if (c == NULL) {
        ret = srv_respond_error(r, 500, "internal", "", "out of memory");
        goto out;
      }
      memcpy(c->id, snap.id, sizeof(c->id));
      c->timeline = req.timeline;
      c->pending = 202;
      r->ctx = c;
      r->ctx_free = free;
      ret = srv_suspend(r, job, req.wait_s, srv__plan_resumed);
      goto out;
    }
    if (req.wait_s > 0) {
      ret = srv__answer_plan(r, snap.id, req.timeline, 202);
      goto out;
    }
    {
      char loc[64];
      /* A new job is reported as accepted ("queued") even if a worker
       * already picked it up; a joined one with its current status. */
      const char *st = rc == SRV_SUBMIT_QUEUED ? "queued" : srv_job_status_name(snap.status);
      json_t *o = json_pack("{s:s,s:s,s:s,s:b}", "id", snap.id, "status", st,
                            "graph_hash", snap.graph_hash, "deduplicated", rc == SRV_SUBMIT_JOINED);
      char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
      json_decref(o);
      snprintf(loc, sizeof(loc), "/v1/plans/%s", snap.id);
      if (text == NULL) {
        ret = srv_respond_error(r, 500, "internal", "", "out of memory");
        goto out;
      }
      ret = srv_respond_bytes(r, 202, SRV__JSON, text, strlen(text), "Location", loc);
      free(text);
    }
  }
out:
  srv_job_unref(job);
  mp_graph_free(g);
  free(canon);
  free(result);
  json_decref(root);
  return ret;
}

static int srv__parse_wait(srv_req_t *r, double *wait, enum MHD_Result *ret) {
  const char *w = srv_req_arg(r, "wait");
  char *end;
  *wait = 0;
  if (w == NULL) return 0;
  *wait = strtod(w, &end);
  if (end == w || *end != '\0' || !isfinite(*wait) || *wait < 0 || *wait > r->srv->cfg.max_wait_s) {
    *ret = srv_respond_error(r, 400, "invalid_query", "?wait", "wait must be between 0 and %g seconds",
                             r->srv->cfg.max_wait_s);
    return -1;
  }
  return 0;
}

static int srv__parse_bool_arg(srv_req_t *r, const char *key, int def) {
  const char *v = srv_req_arg(r, key);
  if (v == NULL) return def;
  return strcmp(v, "false") != 0 && strcmp(v, "0") != 0;
}

static enum MHD_Result srv__plan_get(srv_req_t *r) {
  const char *id = r->params[0];
  enum MHD_Result ret;
  double wait;
  int timeline = srv__parse_bool_arg(r, "timeline", 1);
  if (!srv__is_id(id)) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %.64s", id);
  if (srv__parse_wait(r, &wait, &ret) != 0) return ret;
  if (wait > 0) {
    srv_job_t *job = srv_jobs_find(r->srv->jobs, id);
    if (job && !srv_job_is_final(job)) {
      srv__plan_ctx_t *c = calloc(1, sizeof(*c));
      if (c == NULL) {
        srv_job_unref(job);
        return srv_respond_error(r, 500, "internal", "", "out of memory");
      }
      memcpy(c->id, id, 33);
      c->timeline = timeline;
      c->pending = 200;
      r->ctx = c;
      r->ctx_free = free;
      ret = srv_suspend(r, job, wait, srv__plan_resumed);
      srv_job_unref(job);
      return ret;
    }
    srv_job_unref(job);
  }
  return srv__answer_plan(r, id, timeline, 200);
}

static enum MHD_Result srv__plan_delete(srv_req_t *r) {
  const char *id = r->params[0];
  srv_job_t *job;
  int rc, running = 0;
  if (!srv__is_id(id)) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %.64s", id);
  job = srv_jobs_find(r->srv->jobs, id);
  if (job) {
    srv_job_snapshot_t snap;
    srv_job_snapshot(job, &snap);
    running = snap.status == SRV_JOB_RUNNING;
    srv_job_unref(job);
  }
  rc = srv_jobs_cancel(r->srv->jobs, id);
  if (rc == SRV_ENOTFOUND) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %s", id);
  if (rc == SRV_ECONFLICT)
    return srv_respond_error(r, 409, "already_finished", "$.id", "the plan %s already finished", id);
  if (rc != 0) return srv__busy(r, rc);
  if (running)
    return srv_respond_json(r, 202, json_pack("{s:s,s:s,s:b}", "id", id, "status", "running",
                                              "cancel_requested", 1));
  return srv__answer_plan(r, id, 0, 200);
}

static enum MHD_Result srv__plans_list(srv_req_t *r) {
  const char *status = srv_req_arg(r, "status"), *lim = srv_req_arg(r, "limit"), *after = srv_req_arg(r, "after");
  unsigned long limit = 50;
  long long before = 0, last = 0;
  json_t *arr, *o;

  if (status && status[0] == '\0') status = NULL;
  if (status && srv_job_status_parse(status) < 0)
    return srv_respond_error(r, 400, "invalid_query", "?status",
                             "status must be queued, running, done, failed or cancelled");
  if (lim) {
    char *end;
    limit = strtoul(lim, &end, 10);
    if (end == lim || *end != '\0' || lim[0] == '-' || limit < 1 || limit > 500)
      return srv_respond_error(r, 400, "invalid_query", "?limit", "limit must be between 1 and 500");
  }
  if (after && after[0]) {
    srv_job_row_t row;
    if (!srv__is_id(after) || srv_store_get_job(r->srv->store, after, &row) != 0)
      return srv_respond_error(r, 400, "invalid_query", "?after", "after must be the id of a plan");
    before = row.seq;
    srv_job_row_clear(&row);
  }
  arr = json_array();
  if (arr == NULL || srv_store_list_jobs(r->srv->store, status, (unsigned)limit, before, arr, &last) != 0) {
    json_decref(arr);
    return srv_respond_error(r, 500, "store_failed", "", "the store could not list plans");
  }
  o = json_object();
  if (o == NULL) {
    json_decref(arr);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  json_object_set_new(o, "plans", arr);
  if (json_array_size(arr) == limit) {
    json_t *lastv = json_array_get(arr, json_array_size(arr) - 1);
    json_object_set(o, "next", json_object_get(lastv, "id"));
  } else {
    json_object_set_new(o, "next", json_null());
  }
  return srv_respond_json(r, 200, o);
}

/* ---- frontiers and fit ---- */

typedef struct {
  char key[256];
  char graph_hash[65];
  uint64_t *budgets;  /* NULL for the frontier route */
  size_t n_budgets;
  const char *cache;
} srv__frontier_ctx_t;

static void srv__frontier_ctx_free(void *p) {
  srv__frontier_ctx_t *c = p;
  if (c == NULL) return;
  free(c->budgets);
  free(c);
}

/* Answer a fit from the frontier text: for each budget, the point that
 * applies (mp_frontier_lookup over the cached curve). */
static enum MHD_Result srv__fit_answer(srv_req_t *r, srv__frontier_ctx_t *c, const char *text, size_t len) {
  json_t *fr = json_loadb(text, len, 0, NULL), *pts, *out, *arr, *pt;
  mp_frontier_t f;
  size_t i;
  if (fr == NULL || !json_is_array(pts = json_object_get(fr, "points"))) {
    json_decref(fr);
    return srv_respond_error(r, 500, "internal", "", "the frontier is unreadable");
  }
  memset(&f, 0, sizeof(f));
  f.n_points = json_array_size(pts);
  f.points = calloc(f.n_points ? f.n_points : 1, sizeof(*f.points));
  out = json_object();
  arr = json_array();
  if (f.points == NULL || out == NULL || arr == NULL) {
    free(f.points);
    json_decref(out);
    json_decref(arr);
    json_decref(fr);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  /* A migration frontier (it carries its device) costs extra time, not
   * only recomputation. */
  f.migrate = json_is_object(json_object_get(fr, "device"));
  json_array_foreach(pts, i, pt) {
    json_t *b = json_object_get(pt, "budget");
    f.points[i].budget = json_is_integer(b) ? (uint64_t)json_integer_value(b) : (uint64_t)json_number_value(b);
    f.points[i].recompute = json_number_value(json_object_get(pt, "recompute"));
    f.points[i].overhead_pct = json_number_value(json_object_get(pt, "overhead_pct"));
    f.points[i].extra_time = json_number_value(json_object_get(pt, "extra_time"));
    f.points[i].stall = json_number_value(json_object_get(pt, "stall"));
    b = json_object_get(pt, "host_peak_bytes");
    f.points[i].host_peak_bytes = json_is_integer(b) ? (uint64_t)json_integer_value(b) : (uint64_t)json_number_value(b);
  }
  for (i = 0; i < c->n_budgets; i++) {
    long k = mp_frontier_lookup(&f, c->budgets[i]);
    json_t *e = json_object();
    if (e == NULL) break;
    mp_json_set(e, "budget", mp_json_u64(c->budgets[i]));
    mp_json_set(e, "fits", json_boolean(k >= 0));
    if (k >= 0) {
      mp_json_set(e, "overhead_pct", mp_json_number(f.points[k].overhead_pct));
      mp_json_set(e, "recompute", mp_json_number(f.points[k].recompute));
      /* The point's budget is the memory the plan needs at most: an upper
       * bound on its simulated peak. */
      mp_json_set(e, "peak", mp_json_u64(f.points[k].budget));
      if (f.migrate) {
        mp_json_set(e, "extra_time", mp_json_number(f.points[k].extra_time));
        mp_json_set(e, "stall", mp_json_number(f.points[k].stall));
        mp_json_set(e, "host_peak_bytes", mp_json_u64(f.points[k].host_peak_bytes));
      }
    } else if (f.n_points > 0) {
      mp_json_set(e, "min_budget", mp_json_u64(f.points[0].budget));
    }
    json_array_append_new(arr, e);
  }
  free(f.points);
  json_object_set_new(out, "graph_hash", json_string(c->graph_hash));
  json_object_set(out, "solver", json_object_get(fr, "solver"));
  json_object_set(out, "solver_used", json_object_get(fr, "solver_used"));
  json_object_set(out, "exact", json_object_get(fr, "exact"));
  json_object_set(out, "peak_no_recompute", json_object_get(fr, "peak_no_recompute"));
  if (f.migrate) json_object_set(out, "device", json_object_get(fr, "device"));
  json_object_set_new(out, "cache", json_string(c->cache));
  json_object_set_new(out, "budgets", arr);
  json_decref(fr);
  return srv_respond_json(r, 200, out);
}

static enum MHD_Result srv__frontier_answer(srv_req_t *r, srv__frontier_ctx_t *c, char *text, size_t len) {
  enum MHD_Result ret;
  if (c->budgets) {
    ret = srv__fit_answer(r, c, text, len);
    free(text);
    return ret;
  }
  {
    json_t *fr = json_loadb(text, len, 0, NULL);
    free(text);
    if (fr == NULL) return srv_respond_error(r, 500, "internal", "", "the frontier is unreadable");
    json_object_set_new(fr, "cache", json_string(c->cache));
    return srv_respond_json(r, 200, fr);
  }
}

static enum MHD_Result srv__frontier_resumed(srv_req_t *r) {
  srv__frontier_ctx_t *c = r->ctx;
  srv_job_snapshot_t snap;
  char *text = NULL;
  size_t len;
  srv_job_snapshot(r->job, &snap);
  if (snap.status == SRV_JOB_DONE && srv_jobs_result(r->srv->jobs, c->key, &text, &len, NULL) == 0)
    return srv__frontier_answer(r, c, text, len);
  if (snap.status == SRV_JOB_FAILED) {
    if (strcmp(snap.err_code, "deadline_exceeded") == 0)
      return srv_respond_error(r, 504, snap.err_code, "", "%s", snap.err_msg);
    return srv_respond_error(r, 422, snap.err_code[0] ? snap.err_code : "frontier_failed", "", "%s", snap.err_msg);
  }
  return srv_respond_error_hdr(r, 503, "not_ready", "", "Retry-After", "5",
                               "the frontier is not ready yet (the server may be shutting down)");
}

/* Shared by /v1/fit and the frontier route: answer from the cache or park
 * the request on the frontier computation of (c->graph_hash, solver, swap,
 * device). Takes *g. */
static enum MHD_Result srv__frontier_run(srv_req_t *r, srv__frontier_ctx_t *c, mp_solver_t solver, int swap,
                                         const mp_device_t *device, mp_graph_t **g) {
  char *text = NULL;
  size_t len = 0;
  srv_job_t *job = NULL;
  srv_plan_params_t p;
  enum MHD_Result ret;
  int rc;

  memset(&p, 0, sizeof(p));
  memcpy(p.graph_hash, c->graph_hash, 65);
  p.solver = solver;
  p.swap = swap;
  if (device)
    p.device = *device;
  else
    mp_device_init(&p.device);
  srv_jobs_frontier_key(&p, c->key);
  memcpy(r->graph_hash, c->graph_hash, 65);
  rc = srv_jobs_submit_frontier(r->srv->jobs, &p, c->key, g, &job, &text, &len);
  if (rc < 0) {
    srv__frontier_ctx_free(c);
    return srv__busy(r, rc);
  }
  r->ctx = c;
  r->ctx_free = srv__frontier_ctx_free;
  if (rc == SRV_SUBMIT_CACHED) {
    c->cache = r->cache = "hit";
    return srv__frontier_answer(r, c, text, len);
  }
  c->cache = r->cache = rc == SRV_SUBMIT_JOINED ? "joined" : "miss";
  /* The worker stops the computation at --plan-timeout; wait a little
   * longer so the client hears the reason rather than a timeout. */
  ret = srv_suspend(r, job, r->srv->cfg.plan_timeout_s + 5, srv__frontier_resumed);
  srv_job_unref(job);
  return ret;
}

static enum MHD_Result srv__fit(srv_req_t *r) {
  srv_server_t *s = r->srv;
  enum MHD_Result ret = MHD_NO;
  mp_fit_request_t req;
  mp_error_t err;
  json_t *root;
  mp_graph_t *g = NULL;
  srv__frontier_ctx_t *c;
  char hash[65];

  if ((root = srv__body_json(r, &ret)) == NULL) return ret;
  mp_error_clear(&err);
  if (mp_fit_request_parse(root, s->cfg.max_budgets, &req, &err) != 0) {
    ret = srv_respond_error(r, err.code == MP_ELIMIT ? 413 : 400, "invalid_request", err.path, "%s", err.message);
    json_decref(root);
    return ret;
  }
  if (req.graph) {
    char *canon = NULL;
    size_t canon_len = 0;
    if (srv__load_graph(r, req.graph, &g, hash, &ret) != 0) {
      mp_fit_request_free(&req);
      json_decref(root);
      return ret;
    }
    /* The worker may need to reload it; and graph_hash works next time.
     * A graph the store has already is not rendered again. */
    if (!srv_store_has_graph(s->store, hash)) {
      if (srv__canon(r, g, &canon, &canon_len, &ret) != 0) {
        mp_graph_free(g);
        mp_fit_request_free(&req);
        json_decref(root);
        return ret;
      }
      srv_store_put_graph(s->store, hash, canon, canon_len, g->n_nodes);
      free(canon);
    }
  } else {
    memcpy(hash, req.graph_hash, 65);
    memcpy(r->graph_hash, hash, 65);
    if (!srv_store_has_graph(s->store, hash)) {
      mp_fit_request_free(&req);
      json_decref(root);
      return srv_respond_error(r, 404, "unknown_graph", "$.graph_hash",
                               "no graph with this hash was submitted before; send the graph itself");
    }
  }
  json_decref(root);
  c = calloc(1, sizeof(*c));
  if (c == NULL) {
    mp_graph_free(g);
    mp_fit_request_free(&req);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  memcpy(c->graph_hash, hash, 65);
  c->budgets = req.budgets; /* taken over */
  c->n_budgets = req.n_budgets;
  ret = srv__frontier_run(r, c, req.solver, req.swap, &req.device, &g);
  mp_graph_free(g);
  return ret;
}

static int srv__hash_param(srv_req_t *r, enum MHD_Result *ret) {
  if (!mp_is_graph_hash(r->params[0]) || !srv_store_has_graph(r->srv->store, r->params[0])) {
    *ret = srv_respond_error(r, 404, "not_found", "$.hash", "no graph with hash %.64s", r->params[0]);
    return -1;
  }
  memcpy(r->graph_hash, r->params[0], 65);
  return 0;
}

static enum MHD_Result srv__graph_frontier(srv_req_t *r) {
  enum MHD_Result ret;
  const char *sv = srv_req_arg(r, "solver");
  mp_solver_t solver = MP_SOLVER_AUTO;
  srv__frontier_ctx_t *c;
  if (srv__hash_param(r, &ret) != 0) return ret;
  if (sv && (mp_solver_parse(sv, &solver) != 0 || solver == MP_SOLVER_NONE))
    return srv_respond_error(r, 400, "invalid_query", "?solver",
                             "solver must be auto, exact, approx, memonger, sqrt, swap, hybrid or layrub");
  c = calloc(1, sizeof(*c));
  if (c == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  memcpy(c->graph_hash, r->params[0], 65);
  /* the swap solvers under the default device; POST /v1/fit takes a device */
  return srv__frontier_run(r, c, solver, mp_solver_swaps(solver), NULL, NULL);
}

/* GET /v1/graphs/{hash}: the statistics of `memplan inspect`. */
static enum MHD_Result srv__graph_get(srv_req_t *r) {
  enum MHD_Result ret;
  char *text = NULL;
  size_t len;
  mp_graph_t *g = NULL;
  mp_error_t err;
  json_t *o = NULL;
  int rc;
  if (srv__hash_param(r, &ret) != 0) return ret;
  if (srv_store_get_graph(r->srv->store, r->params[0], &text, &len) != 0 ||
      mp_graph_load_buffer(text, len, MP_FORMAT_NATIVE, NULL, NULL, &g, NULL, &err) != 0) {
    free(text);
    return srv_respond_error(r, 500, "store_failed", "", "the stored graph could not be read");
  }
  free(text);
  rc = mp_graph_stats_json(g, &o, &err);
  mp_graph_free(g);
  if (rc != 0) return srv_respond_error(r, 500, "internal", "", "the graph could not be measured: %s", err.message);
  if (mp_json_set(o, "graph_hash", json_string(r->params[0])) != 0) {
    json_decref(o);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  return srv_respond_json(r, 200, o);
}

/* ---- health, metrics, status, dashboard ---- */

static enum MHD_Result srv__healthz(srv_req_t *r) {
  return srv_respond_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result srv__readyz(srv_req_t *r) {
  uint64_t q, cap, run, w;
  srv_jobs_stats(r->srv->jobs, &q, &cap, &run, &w);
  if (atomic_load(&r->srv->draining))
    return srv_respond_json(r, 503, json_pack("{s:s}", "status", "draining"));
  if (q >= cap) return srv_respond_json(r, 503, json_pack("{s:s}", "status", "queue_full"));
  return srv_respond_json(r, 200, json_pack("{s:s}", "status", "ready"));
}

static void srv__gauges(srv_server_t *s, srv_gauges_t *g) {
  memset(g, 0, sizeof(*g));
  srv_jobs_stats(s->jobs, &g->queue_depth, &g->queue_capacity, &g->running, &g->workers);
  srv_cache_stats(s->cache, &g->cache_entries, &g->cache_bytes, &g->cache_max_bytes);
  g->draining = atomic_load(&s->draining);
  g->uptime_s = (srv_now_ms() - s->start_ms) / 1000.0;
}

static enum MHD_Result srv__metrics(srv_req_t *r) {
  srv_gauges_t g;
  size_t len;
  char *text;
  enum MHD_Result ret;
  srv__gauges(r->srv, &g);
  text = srv_metrics_render(r->srv->metrics, &g, &len);
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  ret = srv_respond_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL, NULL);
  free(text);
  return ret;
}

static enum MHD_Result srv__status(srv_req_t *r) {
  srv_server_t *s = r->srv;
  srv_gauges_t g;
  uint64_t hits, misses, counts[5];
  srv__gauges(s, &g);
  srv_metrics_cache_counts(s->metrics, &hits, &misses);
  srv_store_count_status(s->store, counts);
  return srv_respond_json(
      r, 200,
      json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:b,s:{s:I,s:I,s:I,s:I,s:I},s:{s:I,s:I,s:I,s:I,s:I}}", "version",
                SRV_VERSION, "uptime_s", g.uptime_s, "workers", (json_int_t)g.workers, "running",
                (json_int_t)g.running, "queue_depth", (json_int_t)g.queue_depth, "queue_capacity",
                (json_int_t)g.queue_capacity, "draining", g.draining, "cache", "entries",
                (json_int_t)g.cache_entries, "bytes", (json_int_t)g.cache_bytes, "max_bytes",
                (json_int_t)(g.cache_max_bytes & INT64_MAX), "hits", (json_int_t)hits, "misses",
                (json_int_t)misses, "plans", "queued", (json_int_t)counts[0], "running", (json_int_t)counts[1],
                "done", (json_int_t)counts[2], "failed", (json_int_t)counts[3], "cancelled",
                (json_int_t)counts[4]));
}

static enum MHD_Result srv__dashboard(srv_req_t *r) {
  return srv_respond_bytes(r, 200, "text/html; charset=utf-8", srv_dashboard_html,
                           (size_t)(srv_dashboard_html_end - srv_dashboard_html), NULL, NULL);
}

/* ---- the table ---- */

static const srv_route_t srv__routes[] = {
  {"GET", "/", srv__dashboard, 0},
  {"GET", "/healthz", srv__healthz, 0},
  {"GET", "/livez", srv__healthz, 0},
  {"GET", "/readyz", srv__readyz, 0},
  {"GET", "/metrics", srv__metrics, 0},
  {"GET", "/v1/status", srv__status, 0},
  {"POST", "/v1/plans", srv__plans_post, 1},
  {"GET", "/v1/plans", srv__plans_list, 0},
  {"GET", "/v1/plans/{id}", srv__plan_get, 0},
  {"DELETE", "/v1/plans/{id}", srv__plan_delete, 1},
  {"POST", "/v1/fit", srv__fit, 1},
  {"GET", "/v1/graphs/{hash}", srv__graph_get, 0},
  {"GET", "/v1/graphs/{hash}/frontier", srv__graph_frontier, 0},
};
#define SRV__NROUTES (sizeof(srv__routes) / sizeof(srv__routes[0]))

/* Does `url` match `pattern`? Fills params (up to 2) when it does. */
static int srv__path_match(const char *pattern, const char *url, char params[2][160]) {
  const char *p = pattern, *u = url;
  int np = 0;
  while (*p && *u) {
    if (*p == '{') {
      size_t n = strcspn(u, "/");
      if (n == 0 || n >= 160 || np >= 2) return 0;
      memcpy(params[np], u, n);
      params[np][n] = '\0';
      np++;
      u += n;
      p = strchr(p, '}');
      if (p == NULL) return 0;
      p++;
    } else {
      if (*p != *u) return 0;
      p++;
      u++;
    }
  }
  return *p == '\0' && *u == '\0';
}

const srv_route_t *srv_route_match(const char *method, const char *url, srv_req_t *r, char *allow,
                                   size_t allow_len, int *status) {
  size_t i;
  int path_known = 0;
  char params[2][160];
  allow[0] = '\0';
  for (i = 0; i < SRV__NROUTES; i++) {
    if (!srv__path_match(srv__routes[i].pattern, url, params)) continue;
    if (strcmp(srv__routes[i].method, method) == 0) {
      memcpy(r->params, params, sizeof(params));
      *status = 200;
      return &srv__routes[i];
    }
    if (strlen(allow) + strlen(srv__routes[i].method) + 3 < allow_len) {
      if (path_known) strcat(allow, ", ");
      strcat(allow, srv__routes[i].method);
    }
    path_known = 1;
  }
  *status = path_known ? 405 : 404;
  return NULL;
}

void srv_routes_print(FILE *f) {
  json_t *arr = json_array();
  char *text;
  size_t i;
  for (i = 0; i < SRV__NROUTES; i++)
    json_array_append_new(arr, json_pack("{s:s,s:s,s:b}", "method", srv__routes[i].method, "path",
                                         srv__routes[i].pattern, "write", srv__routes[i].write));
  text = json_dumps(arr, JSON_INDENT(1));
  json_decref(arr);
  if (text) fprintf(f, "%s\n", text);
  free(text);
}
