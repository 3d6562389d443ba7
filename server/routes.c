/* routes.c - the API: the route table and one handler per route.
 *
 * Handlers run on libmicrohttpd's threads. Each parses and validates the
 * request (a graph named by hash must be one the store holds), makes one
 * call to a service (plans.c, frontiers.c, graphs.c, status.c), and
 * answers with what it returns, or parks the connection (srv_suspend) with
 * a function that answers when the job it waits for is over. Handlers
 * choose the status codes, headers and error bodies; the services never
 * see HTTP. Every 4xx carries {"error": {"code", "message", "path"}}, the
 * path naming the field at fault in the request ("$.graph.nodes[3].bytes",
 * "$.budget") or the query parameter ("?limit"). */
#include "routes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dims_json.h"
#include "formats.h"
#include "frontiers.h"
#include "graphs.h"
#include "plans.h"
#include "request_json.h"
#include "results.h"
#include "status.h"
#include "store.h"
#include "util.h"

#include <openssl/evp.h>

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
  mp_limits_t lim;
  mp_error_t err;
  if (r->body_len == 0) {
    *ret = srv_respond_error(r, 400, "empty_body", "$", "the request needs a JSON body");
    return NULL;
  }
  if (srv__json_depth(r->body, r->body_len, r->srv->cfg.max_json_depth) > r->srv->cfg.max_json_depth) {
    *ret = srv_respond_error(r, 400, "too_deep", "$", "the JSON nests deeper than %u levels (--max-json-depth)",
                             r->srv->cfg.max_json_depth);
    return NULL;
  }
  /* Count a graph's nodes and edges before parsing it: a graph over the
   * limits is refused in time proportional to the limit, not the body. */
  mp_limits_default(&lim);
  lim.max_nodes = r->srv->cfg.max_nodes;
  mp_error_clear(&err);
  if (mp_graph_prescan_json(r->body, r->body_len, "graph", &lim, &err) != 0) {
    *ret = srv_respond_error(r, 413, "graph_too_large", err.path, "%s", err.message);
    return NULL;
  }
  root = json_loadb(r->body, r->body_len, MP_JSON_LOAD_FLAGS, &je);
  if (root == NULL) {
    *ret = srv_respond_error(r, 400, "invalid_json", "$", "line %d, column %d: %s", je.line, je.column, je.text);
    return NULL;
  }
  return root;
}

/* The limits a request's graph is read (and bound) under. */
static void srv__graph_limits(srv_req_t *r, mp_limits_t *lim) {
  mp_limits_default(lim);
  lim->max_nodes = r->srv->cfg.max_nodes;
}

/* Load the request's graph; 0, or an answered error (returns -1). On
 * success *g is the graph and `hash` its hash. */

static int srv__load_graph(srv_req_t *r, json_t *value, const char *name, mp_graph_t **g, char hash[65],
                           enum MHD_Result *ret) {
  mp_limits_t lim;
  mp_error_t err;
  int rc;

  *g = NULL;
  srv__graph_limits(r, &lim);
  mp_error_clear(&err);
  rc = mp_graph_load_json(value, "$.graph", MP_FORMAT_AUTO, name, &lim, g, NULL, &err);
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

/* Bind *g (or, when NULL, the stored graph `hash`) at `dims` (dims.h):
 * on success *g is the bound graph, a new inline graph for the caller to
 * store, and `hash` its hash. 0, or an answered error (-1): a binding the
 * graph refuses is a 400 naming the field (a law's error names it in the
 * inline graph, "$.graph.nodes[4].bytes", or in the stored one). */
static int srv__bind_graph(srv_req_t *r, const mp_binding_t *dims, int inline_graph, mp_graph_t **g, char hash[65],
                           enum MHD_Result *ret) {
  mp_graph_t *src = *g, *bound = NULL;
  mp_limits_t lim;
  mp_error_t err;
  int rc;
  srv__graph_limits(r, &lim);
  mp_error_clear(&err);
  if (src == NULL && (rc = srv_graphs_load(r->srv, hash, &lim, &src, &err)) != 0) {
    *ret = rc == SRV_ENOMEM ? srv_respond_error(r, 500, "internal", "", "out of memory")
                            : srv_respond_error(r, 500, "store_failed", "", "the stored graph could not be read");
    return -1;
  }
  rc = mp_graph_bind(src, dims, &lim, &bound, &err);
  if (src != *g) mp_graph_free(src);
  if (rc != 0) {
    char path[MP_ERROR_PATH_MAX + 8];
    if (inline_graph && strncmp(err.path, "$.nodes", 7) == 0)
      snprintf(path, sizeof(path), "$.graph%.*s", MP_ERROR_PATH_MAX - 2, err.path + 1);
    else if (inline_graph && strcmp(err.path, "$.param_bytes") == 0)
      snprintf(path, sizeof(path), "$.graph.param_bytes");
    else
      snprintf(path, sizeof(path), "%s", err.path);
    if (rc == MP_ENOMEM)
      *ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    else
      *ret = srv_respond_error(r, 400, "invalid_request", path, "%s", err.message);
    return -1;
  }
  if (mp_graph_hash(bound, hash) != 0) {
    mp_graph_free(bound);
    *ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    return -1;
  }
  mp_graph_free(*g);
  *g = bound;
  memcpy(r->graph_hash, hash, 65);
  return 0;
}

/* The graph of a request body: sent inline (`value`, loaded into *g and
 * called `name` when it carries no name) or named by `given_hash` (*g
 * NULL), which must be a graph the store holds; then bound at `dims` when
 * it binds anything (srv__bind_graph: *g is then the bound graph). 0 with
 * `hash` its hash, or an answered error (-1). */
static int srv__request_graph(srv_req_t *r, json_t *value, const char *name, const char *given_hash,
                              const mp_binding_t *dims, mp_graph_t **g, char hash[65], enum MHD_Result *ret) {
  if (value) {
    if (srv__load_graph(r, value, name, g, hash, ret) != 0) return -1;
  } else {
    *g = NULL;
    memcpy(hash, given_hash, 65);
    memcpy(r->graph_hash, given_hash, 65);
    if (!srv_graphs_known(r->srv, hash)) {
      *ret = srv_respond_error(r, 404, "unknown_graph", "$.graph_hash",
                               "no graph with this hash was submitted before; send the graph itself");
      return -1;
    }
  }
  if (dims == NULL || dims->n == 0) return 0;
  if (srv__bind_graph(r, dims, value != NULL, g, hash, ret) != 0) {
    mp_graph_free(*g);
    *g = NULL;
    return -1;
  }
  return 0;
}

/* 507 while the store cannot grow (a full disk, or the test cap of
 * MEMPLAN_TEST_STORE_MAX_PAGES_FILE), naming the store's reason. */
static enum MHD_Result srv__store_full(srv_req_t *r) {
  char why[256] = "";
  srv_store_health(r->srv->store, why, sizeof(why));
  return srv_respond_error(r, 507, "store_full", "",
                           "the store has no room for new work (%s); it takes work again once space is freed",
                           why[0] ? why : "database or disk is full");
}

/* 503 with Retry-After while the store cannot be read or written (a
 * database out of reach, a failing disk): the request may succeed once it
 * is back, so clients and load balancers that retry 503s lose no work. The
 * store's own reason is in the message, as /readyz gives it. */
static enum MHD_Result srv__store_unavailable(srv_req_t *r, const char *what) {
  char why[256] = "", msg[400];
  srv_store_health(r->srv->store, why, sizeof(why));
  snprintf(msg, sizeof(msg), "%s (%s); retry later", what, why[0] ? why : "the durable store failed");
  return srv_respond_error_hdr(r, 503, "store_unavailable", "", "Retry-After", "5", msg);
}

/* The answer to a service's refusal or failure (a negative SRV_E*);
 * `unreadable` says what did not read back for SRV_EBADRESULT. */
static enum MHD_Result srv__failed(srv_req_t *r, int rc, const char *unreadable) {
  if (rc == SRV_EFULL)
    return srv_respond_error_hdr(r, 503, "queue_full", "", "Retry-After", "5",
                                 "the work queue is full (--queue-size); retry later");
  if (rc == SRV_EDRAINING)
    return srv_respond_error_hdr(r, 503, "draining", "", "Retry-After", "10",
                                 "the server is shutting down and takes no new work");
  if (rc == SRV_ECLIENTFULL)
    return srv_respond_error_hdr(r, 429, "client_queue_full", "", "Retry-After", "5",
                                 "this client already has its share of queued work (--max-queued-per-client); "
                                 "retry when one has started");
  if (rc == SRV_ENOSPACE) return srv__store_full(r);
  if (rc == SRV_ENOMEM) return srv_respond_error(r, 500, "internal", "", "out of memory");
  if (rc == SRV_EBADRESULT && unreadable) return srv_respond_error(r, 500, "internal", "", "%s", unreadable);
  if (rc == SRV_ESTORE) return srv__store_unavailable(r, "the durable store cannot be reached");
  return srv_respond_error(r, 500, "internal", "", "unexpected failure %d; see the server log", rc);
}

/* ---- plans ---- */

/* Whose plans the request may see (plans.h). */
static srv_viewer_t srv__viewer(const srv_req_t *r) {
  srv_viewer_t who;
  who.owner = srv_req_owner(r);
  who.all = r->sees_all;
  return who;
}

/* Answer with the plan's current view: 200 when final, else `pending`. */
static enum MHD_Result srv__answer_plan(srv_req_t *r, const char *id, int with_timeline, unsigned pending) {
  srv_plan_view_t v;
  srv_viewer_t who = srv__viewer(r);
  int rc = srv_plans_view(r->srv, id, &who, with_timeline, &v, r->graph_hash);
  if (rc == SRV_ENOMEM || rc == SRV_ESTORE) return srv__failed(r, rc, NULL);
  if (rc != 0) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %s", id);
  if (v.blob) return srv_respond_blob(r, 200, v.blob);
  if (v.pending) return srv_respond_json(r, pending, v.pending);
  return srv_respond_text_owned(r, 200, v.text, v.len);
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

/* Park the request until plan `id` (its job, borrowed) finishes or wait_s
 * pass, then answer with its view (`pending` when still not final). */
static enum MHD_Result srv__wait_plan(srv_req_t *r, srv_job_t *job, const char *id, int timeline, unsigned pending,
                                      double wait_s) {
  srv__plan_ctx_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  memcpy(c->id, id, sizeof(c->id));
  c->timeline = timeline;
  c->pending = pending;
  r->ctx = c;
  r->ctx_free = free;
  return srv_suspend(r, job, wait_s, srv__plan_resumed);
}

/* Parse a plan request into *req and the service's parameters; 0, or an
 * answered error (-1). *g receives a graph sent inline. */
static int srv__plan_parse(srv_req_t *r, json_t *root, mp_plan_request_t *req, srv_plan_params_t *p, mp_graph_t **g,
                           enum MHD_Result *ret) {
  mp_error_t err;
  mp_error_clear(&err);
  if (mp_plan_request_parse(root, r->srv->cfg.max_wait_s, req, &err) != 0) {
    *ret = srv_respond_error(r, 400, "invalid_request", err.path, "%s", err.message);
    return -1;
  }
  memset(p, 0, sizeof(*p));
  if (srv__request_graph(r, req->graph, req->graph_name, req->graph_hash, &req->dims, g, p->graph_hash, ret) != 0)
    return -1;
  p->budget = req->budget;
  p->solver = req->solver;
  p->objective = req->objective;
  p->accounting = req->accounting;
  p->timeline = req->timeline;
  p->swap = req->swap;
  p->device = req->device;
  snprintf(p->request_id, sizeof(p->request_id), "%s", r->request_id);
  srv_req_client(r, p->client);
  snprintf(p->owner, sizeof(p->owner), "%s", srv_req_owner(r));
  return 0;
}

/* The answer to a plan that is queued or running (`rc` says whether it was
 * joined): with "wait", its view when it finishes or the time is up;
 * otherwise 202 with where to find it. */
static enum MHD_Result srv__plan_accepted(srv_req_t *r, srv_job_t *job, const char *id, int rc,
                                          const mp_plan_request_t *req) {
  srv_job_snapshot_t snap;
  char loc[64], *text;
  const char *st;
  json_t *o;
  enum MHD_Result ret;
  srv_job_snapshot(job, &snap);
  if (req->wait_s > 0 && !srv_job_is_final(job))
    return srv__wait_plan(r, job, id, req->timeline, 202, req->wait_s);
  if (req->wait_s > 0) return srv__answer_plan(r, id, req->timeline, 202);
  /* A new job is reported as accepted ("queued") even if a worker already
   * picked it up; a joined one with its current status. The id is this
   * submission's own (a joined job's is another's). */
  st = rc == SRV_SUBMIT_QUEUED ? "queued" : srv_job_status_name(snap.status);
  o = json_pack("{s:s,s:s,s:s,s:b}", "id", id, "status", st, "graph_hash", snap.graph_hash, "deduplicated",
                rc == SRV_SUBMIT_JOINED);
  text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  snprintf(loc, sizeof(loc), "/v1/plans/%s", id);
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  ret = srv_respond_bytes(r, 202, SRV__JSON, text, strlen(text), "Location", loc);
  free(text);
  return ret;
}

static enum MHD_Result srv__plans_post(srv_req_t *r) {
  enum MHD_Result ret = MHD_NO;
  mp_plan_request_t req;
  srv_plan_params_t p;
  srv_plan_submit_t sub;
  json_t *root;
  mp_graph_t *g = NULL;
  int rc;

  /* The body cache answers a repeated body before it is parsed. */
  rc = srv_plans_lookup_body(r->srv, r->body, r->body_len, srv_req_owner(r), r->request_id, &sub, r->graph_hash);
  r->cache = sub.cache;
  if (rc < 0) return srv__failed(r, rc, NULL);
  if (rc == SRV_SUBMIT_CACHED) return srv_respond_blob_id(r, 200, sub.blob, sub.skip, sub.id);
  if ((root = srv__body_json(r, &ret)) == NULL) return ret;
  if (srv__plan_parse(r, root, &req, &p, &g, &ret) == 0) {
    rc = srv_plans_submit(r->srv, &p, &g, &sub);
    r->cache = sub.cache;
    if (rc < 0)
      ret = srv__failed(r, rc, "the cached result is unreadable");
    else if (rc == SRV_SUBMIT_CACHED)
      ret = srv_respond_blob_id(r, 200, sub.blob, sub.skip, sub.id);
    else
      ret = srv__plan_accepted(r, sub.job, sub.id, rc, &req);
    srv_job_unref(sub.job);
  }
  mp_graph_free(g);
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
  int timeline = srv__parse_bool_arg(r, "timeline", 0);
  srv_job_t *job;
  srv_viewer_t who = srv__viewer(r);
  if (!srv__is_id(id)) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %.64s", id);
  if (srv__parse_wait(r, &wait, &ret) != 0) return ret;
  if (wait > 0 && (job = srv_plans_unfinished(r->srv, id, &who)) != NULL) {
    ret = srv__wait_plan(r, job, id, timeline, 200, wait);
    srv_job_unref(job);
    return ret;
  }
  return srv__answer_plan(r, id, timeline, 200);
}

static enum MHD_Result srv__plan_delete(srv_req_t *r) {
  const char *id = r->params[0];
  int rc, running;
  srv_viewer_t who = srv__viewer(r);
  if (!srv__is_id(id)) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %.64s", id);
  rc = srv_plans_cancel(r->srv, id, &who, &running);
  if (rc == SRV_ENOTFOUND) return srv_respond_error(r, 404, "not_found", "$.id", "no plan with id %s", id);
  if (rc == SRV_ECONFLICT)
    return srv_respond_error(r, 409, "already_finished", "$.id", "the plan %s already finished", id);
  if (rc != 0) return srv__failed(r, rc, NULL);
  if (running)
    return srv_respond_json(r, 202, json_pack("{s:s,s:s,s:b}", "id", id, "status", "running",
                                              "cancel_requested", 1));
  return srv__answer_plan(r, id, 0, 200);
}

static enum MHD_Result srv__plans_list(srv_req_t *r) {
  const char *status = srv_req_arg(r, "status"), *lim = srv_req_arg(r, "limit"), *after = srv_req_arg(r, "after");
  unsigned long limit = 50;
  json_t *o;
  int rc;

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
  if (after && after[0] == '\0') after = NULL;
  if (after && !srv__is_id(after)) rc = SRV_ENOTFOUND;
  else {
    srv_viewer_t who = srv__viewer(r);
    rc = srv_plans_list(r->srv, &who, status, (unsigned)limit, after, &o);
  }
  if (rc == SRV_ENOTFOUND)
    return srv_respond_error(r, 400, "invalid_query", "?after", "after must be the id of a plan");
  if (rc == SRV_ENOMEM) return srv_respond_error(r, 500, "internal", "", "out of memory");
  if (rc != 0) return srv__store_unavailable(r, "the store could not list plans");
  return srv_respond_json(r, 200, o);
}

/* ---- frontiers and fit ---- */

/* The answer to a frontier service's failure. */
static enum MHD_Result srv__frontier_failed(srv_req_t *r, int rc) {
  return srv__failed(r, rc, "the frontier is unreadable");
}

/* A frontier computation that failed: 504 past its deadline, else 422. */
static enum MHD_Result srv__frontier_error(srv_req_t *r, const char *code, const char *msg) {
  if (strcmp(code, "deadline_exceeded") == 0) return srv_respond_error(r, 504, code, "", "%s", msg);
  return srv_respond_error(r, 422, code[0] ? code : "frontier_failed", "", "%s", msg);
}

/* The frontier route's 202: the computation's view, and where to poll. */
static enum MHD_Result srv__frontier_accepted(srv_req_t *r, srv_job_t *job) {
  json_t *o = srv_frontiers_pending(r->ctx, job);
  char loc[300], *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  enum MHD_Result ret;
  snprintf(loc, sizeof(loc), "/v1/graphs/%s/frontier?solver=%s", r->graph_hash,
           json_string_value(json_object_get(o, "solver")));
  json_decref(o);
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  ret = srv_respond_bytes(r, 202, SRV__JSON, text, strlen(text), "Location", loc);
  free(text);
  return ret;
}

/* A fit still computed when its wait ends: 202 with its view under the
 * fit's id and Location /v1/fit/{id}, where it is polled (or waited for
 * with ?wait=) as a plan is. The request is recorded (durably, as a
 * result) under "fitreq|<id>" so that the poll can rebuild it. */
static enum MHD_Result srv__fit_accepted(srv_req_t *r, srv_job_t *job) {
  const srv_fit_request_t *fr = srv_frontier_request(r->ctx);
  json_t *o = srv_frontiers_pending(r->ctx, job);
  char loc[64], key[48], *text;
  enum MHD_Result ret;
  if (fr == NULL || o == NULL) {
    json_decref(o);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  snprintf(key, sizeof(key), "fitreq|%s", fr->id);
  if (srv_results_put(r->srv->cache, r->srv->store, key, "", fr->text, strlen(fr->text)) != 0) {
    json_decref(o);
    return srv__failed(r, SRV_ESTORE, NULL);
  }
  json_object_set_new(o, "id", json_string(fr->id));
  text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  snprintf(loc, sizeof(loc), "/v1/fit/%s", fr->id);
  ret = srv_respond_bytes(r, 202, SRV__JSON, text, strlen(text), "Location", loc);
  free(text);
  return ret;
}

/* The answer once the computation `job` of r->ctx is over, or when the
 * wait for it ends: the frontier or fit, its failure, or while it still
 * runs the route's 202 (503 while the server shuts down). */
static enum MHD_Result srv__frontier_answer(srv_req_t *r, srv_job_t *job) {
  srv_job_snapshot_t snap;
  json_t *answer;
  int rc = srv_frontiers_finish(r->srv, r->ctx, job, &snap, &answer);
  if (rc == 0) return srv_respond_json(r, 200, answer);
  if (rc != SRV_ENOTFOUND) return srv__frontier_failed(r, rc);
  if (snap.status == SRV_JOB_FAILED) return srv__frontier_error(r, snap.err_code, snap.err_msg);
  if (snap.status <= SRV_JOB_RUNNING && !srv_frontier_is_fit(r->ctx)) return srv__frontier_accepted(r, job);
  if (snap.status <= SRV_JOB_RUNNING && !atomic_load(&r->srv->draining)) return srv__fit_accepted(r, job);
  return srv_respond_error_hdr(r, 503, "not_ready", "", "Retry-After", "5",
                               "the frontier is not ready yet (the server is shutting down)");
}

static enum MHD_Result srv__frontier_resumed(srv_req_t *r) { return srv__frontier_answer(r, r->job); }

/* Shared by /v1/fit and the frontier route: answer q at once, or park the
 * request until its frontier is computed or wait_s pass (0: answer now,
 * 202 while it is computed). *g: see srv_frontiers_get. */
static enum MHD_Result srv__frontier_run(srv_req_t *r, const srv_frontier_query_t *q, mp_graph_t **g,
                                         double wait_s) {
  srv_frontier_outcome_t o;
  enum MHD_Result ret;
  int rc = srv_frontiers_get(r->srv, q, g, &o);
  r->cache = o.cache;
  if (rc == SRV_FRONTIER_FAILED) return srv__frontier_error(r, o.err_code, o.err_msg);
  if (rc < 0) return srv__frontier_failed(r, rc);
  if (rc == SRV_SUBMIT_CACHED) return srv_respond_json(r, 200, o.answer);
  r->ctx = o.pending;
  r->ctx_free = srv_frontier_free;
  if (wait_s > 0 && !srv_job_is_final(o.job))
    ret = srv_suspend(r, o.job, wait_s, srv__frontier_resumed);
  else
    ret = srv__frontier_answer(r, o.job);
  srv_job_unref(o.job);
  return ret;
}

/* The id of the fit request `text` (as kept for its poll) asked by
 * `owner`: the first 16 bytes of the SHA-256 of the owner, a NUL and the
 * text, in hex. Each principal's fit has its own id, so that one cannot
 * read another's by asking the same. 0, or -1. */
static int srv__fit_id(const char *owner, const char *text, size_t len, char id[33]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(c, owner, strlen(owner) + 1) == 1 &&
           EVP_DigestUpdate(c, text, len) == 1 && EVP_DigestFinal_ex(c, md, &mdlen) == 1 && mdlen >= 16;
  EVP_MD_CTX_free(c);
  if (!ok) return -1;
  srv_hex(md, 16, id);
  return 0;
}

/* The fit request as kept for its poll: the body with the graph named by
 * its hash and without "wait" (sorted keys, compact), and its id: `id`
 * (a poll's) or srv__fit_id's for `owner`. 0, or -1 out of memory. */
static int srv__fit_record(json_t *root, const char *hash, const char *owner, const char *id,
                           srv_fit_request_t *fr) {
  json_t *o = json_object(), *v;
  const char *k;
  if (o == NULL) return -1;
  json_object_foreach(root, k, v) {
    if (strcmp(k, "graph") != 0 && strcmp(k, "graph_name") != 0 && strcmp(k, "wait") != 0 &&
        json_object_set(o, k, v) != 0) {
      json_decref(o);
      return -1;
    }
  }
  if (json_object_set_new(o, "graph_hash", json_string(hash)) != 0 ||
      (fr->text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
    json_decref(o);
    return -1;
  }
  json_decref(o);
  if (id) {
    snprintf(fr->id, sizeof(fr->id), "%.32s", id);
    return 0;
  }
  return srv__fit_id(owner, fr->text, strlen(fr->text), fr->id);
}

/* A maximize's dimension against the graph (*g, or the stored `hash`,
 * then loaded into *g for the computation): it must be one of its
 * dimensions, with sizes that never shrink as it grows (dims.h). 0, or an
 * answered 400 (-1). */
static int srv__maximize_check(srv_req_t *r, const char *dim, int inline_graph, mp_graph_t **g, const char *hash,
                               enum MHD_Result *ret) {
  mp_binding_t at_min;
  mp_graph_t *b = NULL;
  mp_error_t err;
  long di;
  int rc;
  mp_error_clear(&err);
  if (*g == NULL && (rc = srv_graphs_load(r->srv, hash, NULL, g, &err)) != 0) {
    *ret = rc == SRV_ENOMEM ? srv_respond_error(r, 500, "internal", "", "out of memory")
                            : srv_respond_error(r, 500, "store_failed", "", "the stored graph could not be read");
    return -1;
  }
  if ((di = mp_graph_dims_find((*g)->sym, dim)) < 0) {
    *ret = srv_respond_error(r, 400, "invalid_request", "$.maximize", "the graph has no dimension %s to maximize%s",
                             dim, (*g)->sym && (*g)->sym->n_dims ? "" : " (it has no symbolic dimensions)");
    return -1;
  }
  if (mp_graph_dims_monotone(*g, (size_t)di, &err) != 0) {
    *ret = srv_respond_error(r, 400, "invalid_request", "$.maximize", "%s: %s", err.path, err.message);
    return -1;
  }
  /* Where the search starts: a law must hold at the dimension's min (sizes
   * only grow from there). */
  mp_binding_init(&at_min, "$.maximize");
  if (mp_binding_set(&at_min, dim, (*g)->sym->dims[di].min, &err) != 0 ||
      (rc = mp_graph_bind(*g, &at_min, NULL, &b, &err)) == MP_EINVAL) {
    char path[MP_ERROR_PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s%.*s", inline_graph && err.path[0] == '$' ? "$.graph" : "",
             MP_ERROR_PATH_MAX - 2, inline_graph && err.path[0] == '$' ? err.path + 1 : err.path);
    *ret = srv_respond_error(r, 400, "invalid_request", path, "%s", err.message);
    return -1;
  }
  mp_graph_free(b);
  return 0;
}

/* POST /v1/fit, and GET /v1/fit/{id} on the request kept for it: parse
 * `root`, resolve "devices" in the catalogue, and answer (srv__frontier_run)
 * within wait_s, or with the 202 of an async fit. `keep_key` (may be NULL):
 * where the rendered answer is kept for the same request again; `id`: the
 * polled fit's (NULL: a new request's, its asker's). */
static enum MHD_Result srv__fit_answer(srv_req_t *r, json_t *root, double wait_s, const char *keep_key,
                                       const char *id) {
  enum MHD_Result ret = MHD_NO;
  mp_fit_request_t req;
  srv_frontier_query_t q;
  srv_fit_request_t fr;
  mp_gpu_t *gpus = NULL;
  mp_error_t err;
  mp_graph_t *g = NULL;
  size_t i;

  mp_error_clear(&err);
  memset(&fr, 0, sizeof(fr));
  if (mp_fit_request_parse(root, r->srv->cfg.max_budgets, &req, &err) != 0)
    return srv_respond_error(r, err.code == MP_ELIMIT ? 413 : 400, "invalid_request", err.path, "%s", err.message);
  if (req.wait_given && req.wait_s > r->srv->cfg.max_wait_s) {
    mp_fit_request_free(&req);
    return srv_respond_error(r, 400, "invalid_request", "$.wait", "wait must be between 0 and %g seconds",
                             r->srv->cfg.max_wait_s);
  }
  if (req.wait_given) wait_s = req.wait_s;
  if (req.n_devices && (gpus = calloc(req.n_devices, sizeof(*gpus))) == NULL) {
    mp_fit_request_free(&req);
    return srv_respond_error(r, 500, "internal", "", "out of memory");
  }
  for (i = 0; i < req.n_devices; i++) {
    const mp_gpu_t *gp = mp_gpus_find(&r->srv->gpus, req.devices[i]);
    if (gp == NULL) {
      char path[48];
      snprintf(path, sizeof(path), "$.devices[%zu]", i);
      ret = srv_respond_error(r, 400, "unknown_device", path,
                              "no device '%.64s' in the catalogue (GET /v1/devices lists them)", req.devices[i]);
      goto out;
    }
    gpus[i] = *gp;
  }
  memset(&q, 0, sizeof(q));
  if (srv__request_graph(r, req.graph, req.graph_name, req.graph_hash, &req.dims, &g, q.graph_hash, &ret) != 0 ||
      (req.maximize[0] && srv__maximize_check(r, req.maximize, req.graph != NULL, &g, q.graph_hash, &ret) != 0))
    goto out;
  if (srv__fit_record(root, q.graph_hash, srv_req_owner(r), id, &fr) != 0) {
    ret = srv_respond_error(r, 500, "internal", "", "out of memory");
    goto out;
  }
  q.solver = req.solver;
  q.swap = req.swap;
  q.device = &req.device;
  q.fit = 1;
  q.budgets = req.budgets;
  q.n_budgets = req.n_budgets;
  q.gpus = gpus;
  q.n_gpus = req.n_devices;
  q.least = req.least;
  memcpy(q.maximize, req.maximize, sizeof(q.maximize));
  q.max_value = req.max_value;
  q.keep_key = keep_key;
  q.request = &fr;
  srv_req_client(r, q.client);
  ret = srv__frontier_run(r, &q, &g, wait_s);
out:
  free(fr.text);
  free(gpus);
  mp_graph_free(g);
  mp_fit_request_free(&req);
  return ret;
}

static enum MHD_Result srv__fit(srv_req_t *r) {
  enum MHD_Result ret = MHD_NO;
  srv_blob_t *blob;
  json_t *root;
  char *keep = srv_frontiers_body_key(r->body, r->body_len);

  /* The same small body again: its rendered answer, before any parsing. */
  if ((blob = srv_frontiers_cached(r->srv, keep)) != NULL) {
    free(keep);
    r->cache = "hit";
    return srv_respond_blob(r, 200, blob);
  }
  if ((root = srv__body_json(r, &ret)) != NULL) {
    /* Unless the request says how long to wait: the worker stops the
     * computation at --plan-timeout; wait a little longer so the client
     * hears the reason rather than a timeout. */
    ret = srv__fit_answer(r, root, r->srv->cfg.plan_timeout_s + 5, keep, NULL);
    json_decref(root);
  }
  free(keep);
  return ret;
}

/* GET /v1/fit/{id}?wait=: an async fit's answer (200) once it is
 * computed, else its view (202); with ?wait= a long poll. A principal that
 * does not read all reads only its own fits (srv__fit_id): another's is
 * unknown (404). */
static enum MHD_Result srv__fit_get(srv_req_t *r) {
  const char *id = r->params[0];
  enum MHD_Result ret;
  srv_blob_t *blob;
  char key[48], mine[33], *text = NULL;
  size_t len;
  double wait;
  json_t *root;
  int rc = 0;
  if (!srv__is_id(id)) return srv_respond_error(r, 404, "not_found", "$.id", "no fit with id %.64s", id);
  if (srv__parse_wait(r, &wait, &ret) != 0) return ret;
  snprintf(key, sizeof(key), "fitreq|%.32s", id);
  if (!r->sees_all) {
    rc = srv_results_get(r->srv->cache, r->srv->store, key, &text, &len, NULL);
    if (rc == 0 && (srv__fit_id(srv_req_owner(r), text, len, mine) != 0 || strcmp(mine, id) != 0))
      rc = SRV_ENOTFOUND;
    if (rc == SRV_ENOTFOUND) {
      free(text);
      return srv_respond_error(r, 404, "not_found", "$.id", "no fit with id %s", id);
    }
    if (rc != 0) return srv__failed(r, rc, NULL);
  }
  snprintf(key, sizeof(key), "fitans|%.32s", id);
  if ((blob = srv_frontiers_cached(r->srv, key)) != NULL) {
    free(text);
    r->cache = "hit";
    return srv_respond_blob(r, 200, blob);
  }
  snprintf(key, sizeof(key), "fitreq|%.32s", id);
  if (text == NULL) rc = srv_results_get(r->srv->cache, r->srv->store, key, &text, &len, NULL);
  if (rc == SRV_ENOTFOUND) return srv_respond_error(r, 404, "not_found", "$.id", "no fit with id %s", id);
  if (rc != 0) return srv__failed(r, rc, NULL);
  root = json_loadb(text, len, 0, NULL);
  free(text);
  if (root == NULL) return srv_respond_error(r, 500, "internal", "", "the fit request kept is unreadable");
  /* the request kept names its graph by hash: it must still be stored */
  snprintf(key, sizeof(key), "fitans|%.32s", id);
  json_object_set_new(root, "wait", json_real(wait));
  ret = srv__fit_answer(r, root, wait, key, id);
  json_decref(root);
  return ret;
}

static int srv__hash_param(srv_req_t *r, enum MHD_Result *ret) {
  if (!mp_is_graph_hash(r->params[0]) || !srv_graphs_known(r->srv, r->params[0])) {
    *ret = srv_respond_error(r, 404, "not_found", "$.hash", "no graph with hash %.64s", r->params[0]);
    return -1;
  }
  memcpy(r->graph_hash, r->params[0], 65);
  return 0;
}

/* ?dims=batch:64,seq:512 into b (base "?dims"). 0, or an answered 400. */
static int srv__query_dims(srv_req_t *r, mp_binding_t *b, enum MHD_Result *ret) {
  const char *d = srv_req_arg(r, "dims"), *p;
  mp_error_t err;
  mp_binding_init(b, "?dims");
  mp_error_clear(&err);
  for (p = d; p && *p;) {
    size_t len = strcspn(p, ",");
    char one[80], *colon;
    if (len == 0 || len >= sizeof(one)) {
      *ret = srv_respond_error(r, 400, "invalid_query", "?dims", "dims is NAME:VALUE pairs separated by commas "
                               "(batch:64,seq:512)");
      return -1;
    }
    memcpy(one, p, len);
    one[len] = '\0';
    if ((colon = strchr(one, ':')) != NULL) *colon = '=';
    if (colon == NULL || mp_binding_parse_arg(b, one, &err) != 0) {
      *ret = srv_respond_error(r, 400, "invalid_query", err.path[0] && colon ? err.path : "?dims", "%s",
                               colon ? err.message : "dims is NAME:VALUE pairs separated by commas (batch:64)");
      return -1;
    }
    p += len + (p[len] == ',');
  }
  return 0;
}

/* GET /v1/graphs/{hash}/frontier?solver=&wait=: the frontier when it is
 * kept (200), else its computation, a job like a plan's: 202 with its
 * view and Location (this route again) to poll, or with ?wait= a long
 * poll that answers 200 (or the failure) as soon as it is over. */
static enum MHD_Result srv__graph_frontier(srv_req_t *r) {
  enum MHD_Result ret;
  const char *sv = srv_req_arg(r, "solver");
  srv_frontier_query_t q;
  mp_binding_t dims;
  mp_graph_t *g = NULL;
  double wait;
  if (srv__hash_param(r, &ret) != 0) return ret;
  if (srv__parse_wait(r, &wait, &ret) != 0) return ret;
  memset(&q, 0, sizeof(q));
  q.solver = MP_SOLVER_AUTO;
  if (sv && (mp_solver_parse(sv, &q.solver) != 0 || q.solver == MP_SOLVER_NONE))
    return srv_respond_error(r, 400, "invalid_query", "?solver",
                             "solver must be auto, exact, window, closures (or approx), "
                             "chain, memonger, sqrt, swap, hybrid or layrub");
  memcpy(q.graph_hash, r->params[0], 65);
  /* the swap solvers under the default device; POST /v1/fit takes a device */
  q.swap = mp_solver_swaps(q.solver);
  srv_req_client(r, q.client);
  if (srv__query_dims(r, &dims, &ret) != 0) return ret;
  if (dims.n > 0) {
    /* the frontier of the bound graph, kept under its own hash */
    if (srv__bind_graph(r, &dims, 0, &g, q.graph_hash, &ret) != 0) return ret;
    ret = srv__frontier_run(r, &q, &g, wait);
    mp_graph_free(g);
    return ret;
  }
  return srv__frontier_run(r, &q, NULL, wait);
}

/* GET /v1/graphs/{hash}: the statistics of `memplan inspect`. */
static enum MHD_Result srv__graph_get(srv_req_t *r) {
  enum MHD_Result ret;
  mp_error_t err;
  json_t *o;
  int rc;
  if (srv__hash_param(r, &ret) != 0) return ret;
  rc = srv_graphs_stats(r->srv, r->params[0], &o, &err);
  if (rc == SRV_ESTORE) return srv__store_unavailable(r, "the stored graph could not be read");
  if (rc == SRV_EINVAL)
    return srv_respond_error(r, 500, "internal", "", "the graph could not be measured: %s", err.message);
  if (rc != 0) return srv_respond_error(r, 500, "internal", "", "out of memory");
  return srv_respond_json(r, 200, o);
}

/* GET /v1/devices: the device catalogue /v1/fit's "devices" names. */
static enum MHD_Result srv__devices(srv_req_t *r) {
  return srv_respond_json(r, 200, mp_gpus_to_json(&r->srv->gpus));
}

/* ---- health, metrics, status, dashboard ---- */

static enum MHD_Result srv__healthz(srv_req_t *r) {
  return srv_respond_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result srv__readyz(srv_req_t *r) {
  const char *st = srv_status_readiness(r->srv);
  return srv_respond_json(r, strcmp(st, "ready") == 0 ? 200 : 503, srv_status_readiness_json(r->srv, st));
}

static enum MHD_Result srv__metrics(srv_req_t *r) {
  size_t len;
  char *text = srv_status_metrics(r->srv, &len);
  enum MHD_Result ret;
  if (text == NULL) return srv_respond_error(r, 500, "internal", "", "out of memory");
  ret = srv_respond_bytes(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL, NULL);
  free(text);
  return ret;
}

static enum MHD_Result srv__status(srv_req_t *r) { return srv_respond_json(r, 200, srv_status_json(r->srv)); }

static enum MHD_Result srv__dashboard(srv_req_t *r) {
  return srv_respond_bytes(r, 200, "text/html; charset=utf-8", srv_dashboard_html,
                           (size_t)(srv_dashboard_html_end - srv_dashboard_html), NULL, NULL);
}

/* ---- the table ---- */

static const srv_route_t srv__routes[] = {
  {"GET", "/", srv__dashboard, SRV_ROUTE_OPEN},
  {"GET", "/healthz", srv__healthz, SRV_ROUTE_OPEN},
  {"GET", "/livez", srv__healthz, SRV_ROUTE_OPEN},
  {"GET", "/readyz", srv__readyz, SRV_ROUTE_OPEN},
  {"GET", "/metrics", srv__metrics, SRV_ROUTE_OPEN},
  {"GET", "/v1/status", srv__status, SRV_ROUTE_OPEN},
  {"POST", "/v1/plans", srv__plans_post, SRV_ROUTE_WORK},
  {"GET", "/v1/plans", srv__plans_list, SRV_ROUTE_READ},
  {"GET", "/v1/plans/{id}", srv__plan_get, SRV_ROUTE_READ},
  {"DELETE", "/v1/plans/{id}", srv__plan_delete, SRV_ROUTE_WORK},
  {"POST", "/v1/fit", srv__fit, SRV_ROUTE_WORK},
  {"GET", "/v1/fit/{id}", srv__fit_get, SRV_ROUTE_WORK},
  {"GET", "/v1/devices", srv__devices, SRV_ROUTE_OPEN},
  {"GET", "/v1/graphs/{hash}", srv__graph_get, SRV_ROUTE_READ},
  /* a frontier not computed yet is queued: work, even though it is a GET */
  {"GET", "/v1/graphs/{hash}/frontier", srv__graph_frontier, SRV_ROUTE_WORK},
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

/* Append ", name" (or "name" first) to the Allow list, if it fits. */
static void srv__allow_add(char *allow, size_t allow_len, const char *name) {
  size_t n = strlen(allow);
  if (n + strlen(name) + 3 > allow_len) return;
  snprintf(allow + n, allow_len - n, "%s%s", n ? ", " : "", name);
}

const srv_route_t *srv_route_match(const char *method, const char *url, srv_req_t *r, char *allow,
                                   size_t allow_len, int *status) {
  size_t i;
  int path_known = 0, has_get = 0;
  char params[2][160];
  /* HEAD is GET without the body, which libmicrohttpd drops. */
  const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
  allow[0] = '\0';
  for (i = 0; i < SRV__NROUTES; i++) {
    if (!srv__path_match(srv__routes[i].pattern, url, params)) continue;
    if (strcmp(srv__routes[i].method, want) == 0) {
      memcpy(r->params, params, sizeof(params));
      *status = 200;
      return &srv__routes[i];
    }
    srv__allow_add(allow, allow_len, srv__routes[i].method);
    if (strcmp(srv__routes[i].method, "GET") == 0) has_get = 1;
    path_known = 1;
  }
  if (has_get) srv__allow_add(allow, allow_len, "HEAD");
  if (path_known) srv__allow_add(allow, allow_len, "OPTIONS");
  *status = path_known ? 405 : 404;
  return NULL;
}

void srv_routes_print(FILE *f) {
  static const char *const access[] = {"open", "read", "work"};
  json_t *arr = json_array();
  char *text;
  size_t i;
  for (i = 0; i < SRV__NROUTES; i++)
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "method", srv__routes[i].method, "path",
                                         srv__routes[i].pattern, "access", access[srv__routes[i].access]));
  text = json_dumps(arr, JSON_INDENT(1));
  json_decref(arr);
  if (text) fprintf(f, "%s\n", text);
  free(text);
}
