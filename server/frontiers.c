/* frontiers.c - the frontier and fit service (see frontiers.h): the graph
 * an inline fit brings is stored, the frontier or the fit is looked up or
 * computed by jobs.c, and the answer is rendered with where it came from. */
#include "frontiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include <openssl/evp.h>

#include "fit_json.h"
#include "graphs.h"
#include "json_util.h"
#include "metrics.h"
#include "results.h"
#include "util.h"

struct srv_frontier_s {
  char key[256];
  char graph_hash[65];
  mp_solver_t solver;
  int fit;            /* a fit's, else the frontier route's */
  int maximize;       /* a fit with "maximize": its answer is the result as it is */
  const char *cache;
  /* a fit: what its answer shows, and where the rendered answer is kept */
  uint64_t *asked;
  size_t n_asked;
  mp_gpu_t *gpus;     /* copies without their source */
  size_t n_gpus;
  char *keep_key;
  srv_fit_request_t request; /* text NULL when none */
};

void srv_frontier_free(void *p) {
  srv_frontier_t *f = p;
  if (f == NULL) return;
  free(f->asked);
  free(f->gpus);
  free(f->keep_key);
  free(f->request.text);
  free(f);
}

/* Bodies up to this size are their own cache key: no hash to compute. */
#define SRV__BODY_KEY_MAX 2048

char *srv_frontiers_body_key(const char *body, size_t len) {
  char *k;
  if (len == 0 || len > SRV__BODY_KEY_MAX || memchr(body, '\0', len) != NULL) return NULL;
  if ((k = malloc(len + 6)) == NULL) return NULL;
  memcpy(k, "fitb|", 5);
  memcpy(k + 5, body, len);
  k[len + 5] = '\0';
  return k;
}

srv_blob_t *srv_frontiers_cached(srv_server_t *s, const char *keep_key) {
  srv_blob_t *b = NULL;
  if (keep_key == NULL || srv_cache_get_blob(s->cache, keep_key, &b) != 0) return NULL;
  srv_metrics_cache(s->metrics, 1);
  return b;
}

/* The answer from the result text (a fit's or a frontier's), with where
 * it came from. A fit's is rendered for what it asked (mp_fit_answer),
 * and kept, rendered as a hit, under its keep_key. */
static int srv__answer(srv_server_t *s, const srv_frontier_t *c, const char *text, size_t len, json_t **answer) {
  json_t *fr, *ans;
  *answer = NULL;
  fr = json_loadb(text, len, 0, NULL);
  if (fr == NULL || !json_is_object(fr)) {
    json_decref(fr);
    return SRV_EBADRESULT;
  }
  if (c->fit) {
    if (!c->maximize) {
      ans = mp_fit_answer(fr, c->asked, c->n_asked, c->gpus, c->n_gpus);
      json_decref(fr);
      if (ans == NULL) return SRV_EBADRESULT;
      fr = ans;
    }
    if (c->keep_key && json_object_set_new(fr, "cache", json_string("hit")) == 0) {
      char *hit = mp_json_dumps(fr, JSON_COMPACT);
      if (hit) srv_cache_put_tagged(s->cache, c->keep_key, c->key, hit, strlen(hit)); /* best effort */
      free(hit);
    }
  }
  if (json_object_set_new(fr, "cache", json_string(c->cache)) != 0) {
    json_decref(fr);
    return SRV_ENOMEM;
  }
  *answer = fr;
  return 0;
}

/* The key of a fit: "fit|" and the SHA-256 of the frontier key of the same
 * graph, solver, swap and device (which holds the planner version), whether
 * the least budget is asked, the canonical budgets (ascending, each once),
 * and for a maximize its dimension and limit. 0 or -1. */
static int srv__fit_key(const char *frontier_key, int flags, const uint64_t *budgets, size_t n, const char *maximize,
                        int64_t max_value, char key[256]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0, i;
  EVP_MD_CTX *x = EVP_MD_CTX_new();
  size_t k;
  int ok = x != NULL && EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(x, frontier_key, strlen(frontier_key) + 1) == 1 &&
           (!(flags & SRV_FIT_LEAST) || EVP_DigestUpdate(x, "least|", 6) == 1) &&
           (!(flags & SRV_FIT_EACH) || EVP_DigestUpdate(x, "each|", 5) == 1);
  for (k = 0; ok && k < n; k++) {
    char b[24];
    int len = snprintf(b, sizeof(b), "%llu,", (unsigned long long)budgets[k]);
    ok = EVP_DigestUpdate(x, b, (size_t)len) == 1;
  }
  if (ok && maximize[0]) {
    /* a maximize is another question about the same budget */
    char b[80];
    int len = snprintf(b, sizeof(b), "maximize:%s:%lld", maximize, (long long)max_value);
    ok = EVP_DigestUpdate(x, b, (size_t)len) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(x, md, &mdlen) == 1 && mdlen == 32;
  EVP_MD_CTX_free(x);
  if (!ok) return -1;
  memcpy(key, "fit|", 4);
  for (i = 0; i < mdlen; i++) {
    key[4 + 2 * i] = hex[md[i] >> 4];
    key[5 + 2 * i] = hex[md[i] & 15];
  }
  key[4 + 2 * mdlen] = '\0';
  return 0;
}

/* The cache key of a failure of the frontier `key`. */
static void srv__fail_key(const char *key, char out[300]) { snprintf(out, 300, "ffail|%s", key); }

/* Did the computation of `key` fail within SRV_FRONTIER_FAIL_S? Fills
 * out->err_code and out->err_msg when it did. The record holds the wall
 * clock of the failure; an old one is ignored (and replaced by the next). */
static int srv__failed_recently(srv_server_t *s, const char *key, srv_frontier_outcome_t *out) {
  char fk[300], *text = NULL;
  size_t len;
  json_t *o;
  int hit = 0;
  srv__fail_key(key, fk);
  if (srv_cache_get(s->cache, fk, &text, &len) != 0) return 0;
  o = json_loadb(text, len, 0, NULL);
  free(text);
  if (o && srv_now_ms() - json_number_value(json_object_get(o, "at_ms")) < SRV_FRONTIER_FAIL_S * 1000.0) {
    snprintf(out->err_code, sizeof(out->err_code), "%s", json_string_value(json_object_get(o, "code")));
    snprintf(out->err_msg, sizeof(out->err_msg), "%s", json_string_value(json_object_get(o, "message")));
    hit = 1;
  }
  json_decref(o);
  return hit;
}

void srv_frontiers_job_finished(srv_server_t *s, srv_job_t *job) {
  srv_job_snapshot_t snap;
  char fk[300], *text;
  json_t *o;
  srv_job_snapshot(job, &snap);
  if (snap.kind != SRV_JOB_FRONTIER || snap.status != SRV_JOB_FAILED) return;
  o = json_pack("{s:s,s:s,s:f}", "code", snap.err_code[0] ? snap.err_code : "frontier_failed", "message",
                snap.err_msg, "at_ms", srv_now_ms());
  text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  srv__fail_key(snap.key, fk);
  if (text) srv_cache_put(s->cache, fk, text, strlen(text)); /* best effort */
  free(text);
}

int srv_frontier_is_fit(const srv_frontier_t *f) { return f->fit; }

const srv_fit_request_t *srv_frontier_request(const srv_frontier_t *f) {
  return f->request.text ? &f->request : NULL;
}

json_t *srv_frontiers_pending(const srv_frontier_t *f, srv_job_t *job) {
  srv_job_snapshot_t snap;
  json_t *o, *pr;
  srv_job_snapshot(job, &snap);
  o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", snap.id, "status", srv_job_status_name(snap.status), "graph_hash",
                f->graph_hash, "solver", mp_solver_name(f->solver), "cache", f->cache ? f->cache : "miss");
  if (o && (pr = srv_job_progress_json(job)) != NULL) json_object_set_new(o, "progress", pr);
  return o;
}

/* A fit's part of c: the asked budgets and GPUs, the keep key, and the
 * canonical budgets (*budgets, malloc'd, *n of them). 0 or SRV_ENOMEM. */
static int srv__fit_setup(srv_frontier_t *c, const srv_frontier_query_t *q, uint64_t **budgets, size_t *n) {
  size_t i, total = q->n_budgets + q->n_gpus;
  c->asked = malloc((q->n_budgets ? q->n_budgets : 1) * sizeof(*c->asked));
  c->gpus = calloc(q->n_gpus ? q->n_gpus : 1, sizeof(*c->gpus));
  *budgets = malloc((total ? total : 1) * sizeof(**budgets));
  c->keep_key = q->keep_key ? strdup(q->keep_key) : NULL;
  if (q->request) {
    memcpy(c->request.id, q->request->id, sizeof(c->request.id));
    c->request.text = strdup(q->request->text);
  }
  if (c->asked == NULL || c->gpus == NULL || *budgets == NULL || (q->keep_key && c->keep_key == NULL) ||
      (q->request && c->request.text == NULL))
    return SRV_ENOMEM;
  if (q->n_budgets) memcpy(c->asked, q->budgets, q->n_budgets * sizeof(*c->asked));
  c->n_asked = q->n_budgets;
  for (i = 0; i < q->n_gpus; i++) {
    c->gpus[i] = q->gpus[i];
    c->gpus[i].source = NULL;
  }
  c->n_gpus = q->n_gpus;
  if (q->n_budgets) memcpy(*budgets, q->budgets, q->n_budgets * sizeof(**budgets));
  for (i = 0; i < q->n_gpus; i++) (*budgets)[q->n_budgets + i] = mp_gpu_usable(&q->gpus[i]);
  *n = mp_fit_canonical_budgets(*budgets, total);
  return 0;
}

int srv_frontiers_get(srv_server_t *s, const srv_frontier_query_t *q, mp_graph_t **graph,
                      srv_frontier_outcome_t *out) {
  srv_frontier_t *c;
  srv_plan_params_t p;
  uint64_t *budgets = NULL; /* a fit's canonical budgets: ours until the job takes them */
  size_t n_budgets = 0;
  char fit_key[256], *text = NULL;
  size_t len = 0;
  int rc, flags;

  memset(out, 0, sizeof(*out));
  /* The worker may need to reload an inline graph; and graph_hash works
   * next time. A graph the store has already is not rendered again. */
  if ((graph && *graph && srv_graphs_keep(s, *graph, q->graph_hash) != 0) ||
      (c = calloc(1, sizeof(*c))) == NULL)
    return SRV_ENOMEM;
  c->fit = q->fit;
  if (c->fit && srv__fit_setup(c, q, &budgets, &n_budgets) != 0) {
    free(budgets);
    srv_frontier_free(c);
    return SRV_ENOMEM;
  }
  memcpy(c->graph_hash, q->graph_hash, 65);
  c->solver = q->solver;
  memset(&p, 0, sizeof(p));
  memcpy(p.graph_hash, q->graph_hash, 65);
  p.solver = q->solver;
  p.swap = q->swap;
  memcpy(p.client, q->client, sizeof(p.client));
  if (q->device)
    p.device = *q->device;
  else
    mp_device_init(&p.device);
  srv_keys_frontier(&p, c->key);
  memcpy(p.maximize, q->maximize, sizeof(p.maximize));
  p.max_value = q->max_value;
  /* a maximize on devices is answered per device, as a fit; on one budget
   * its answer is the maximize's own */
  flags = (q->least ? SRV_FIT_LEAST : 0) | (q->maximize[0] && q->n_gpus > 0 ? SRV_FIT_EACH : 0);
  c->maximize = q->maximize[0] != 0 && !(flags & SRV_FIT_EACH);
  if (c->fit && srv__fit_key(c->key, flags, budgets, n_budgets, q->maximize, q->max_value, fit_key) != 0) {
    free(budgets);
    srv_frontier_free(c);
    return SRV_ENOMEM;
  }
  if (c->fit) memcpy(c->key, fit_key, sizeof(fit_key));
  if (srv__failed_recently(s, c->key, out)) {
    free(budgets);
    srv_frontier_free(c);
    return SRV_FRONTIER_FAILED;
  }
  rc = srv_jobs_submit_frontier(s->jobs, &p, c->key, c->fit ? &budgets : NULL, n_budgets, flags, graph,
                                &out->job, &text, &len);
  free(budgets); /* NULL when the job took them */
  if (rc < 0) {
    srv_frontier_free(c);
    return rc;
  }
  if (rc == SRV_SUBMIT_CACHED) {
    c->cache = out->cache = "hit";
    rc = srv__answer(s, c, text, len, &out->answer);
    free(text);
    srv_frontier_free(c);
    return rc == 0 ? SRV_SUBMIT_CACHED : rc;
  }
  c->cache = out->cache = rc == SRV_SUBMIT_JOINED ? "joined" : "miss";
  out->pending = c;
  return rc;
}

int srv_frontiers_finish(srv_server_t *s, const srv_frontier_t *f, srv_job_t *job, srv_job_snapshot_t *snap,
                         json_t **answer) {
  char *text = NULL;
  size_t len;
  int rc;
  *answer = NULL;
  srv_job_snapshot(job, snap);
  if (snap->status != SRV_JOB_DONE || srv_results_get(s->cache, s->store, f->key, &text, &len, NULL) != 0)
    return SRV_ENOTFOUND;
  rc = srv__answer(s, f, text, len, answer);
  free(text);
  return rc;
}
