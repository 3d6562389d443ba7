/* frontiers.c - the frontier service (see frontiers.h): the graph an
 * inline fit brings is stored, the frontier is looked up or computed by
 * jobs.c, and the answer is rendered: the whole frontier for the frontier
 * route, the point that applies at each budget for /v1/fit. */
#include "frontiers.h"

#include <stdlib.h>
#include <string.h>

#include "frontier.h"
#include "graphs.h"
#include "json_util.h"
#include "results.h"

struct srv_frontier_s {
  char key[256];
  char graph_hash[65];
  uint64_t *budgets;  /* NULL for the frontier route */
  size_t n_budgets;
  const char *cache;
};

void srv_frontier_free(void *p) {
  srv_frontier_t *f = p;
  if (f == NULL) return;
  free(f->budgets);
  free(f);
}

/* A fit from the frontier text: for each budget, the point that applies
 * (mp_frontier_lookup over the kept curve). */
static int srv__fit_json(const srv_frontier_t *c, const char *text, size_t len, json_t **answer) {
  json_t *fr = json_loadb(text, len, 0, NULL), *pts, *out, *arr, *pt;
  mp_frontier_t f;
  size_t i;
  if (fr == NULL || !json_is_array(pts = json_object_get(fr, "points"))) {
    json_decref(fr);
    return SRV_EBADRESULT;
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
    return SRV_ENOMEM;
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
  *answer = out;
  return 0;
}

/* The answer from the frontier text: a fit, or the frontier itself. */
static int srv__answer(const srv_frontier_t *c, const char *text, size_t len, json_t **answer) {
  json_t *fr;
  *answer = NULL;
  if (c->budgets) return srv__fit_json(c, text, len, answer);
  fr = json_loadb(text, len, 0, NULL);
  if (fr == NULL) return SRV_EBADRESULT;
  json_object_set_new(fr, "cache", json_string(c->cache));
  *answer = fr;
  return 0;
}

int srv_frontiers_get(srv_server_t *s, const srv_frontier_query_t *q, mp_graph_t **graph,
                      srv_frontier_outcome_t *out) {
  srv_frontier_t *c;
  srv_plan_params_t p;
  char *text = NULL;
  size_t len = 0;
  int rc;

  memset(out, 0, sizeof(*out));
  /* The worker may need to reload an inline graph; and graph_hash works
   * next time. A graph the store has already is not rendered again. */
  if ((graph && *graph && srv_graphs_keep(s, *graph, q->graph_hash) != 0) ||
      (c = calloc(1, sizeof(*c))) == NULL) {
    free(q->budgets);
    return SRV_ENOMEM;
  }
  memcpy(c->graph_hash, q->graph_hash, 65);
  c->budgets = q->budgets;
  c->n_budgets = q->n_budgets;
  memset(&p, 0, sizeof(p));
  memcpy(p.graph_hash, q->graph_hash, 65);
  p.solver = q->solver;
  p.swap = q->swap;
  if (q->device)
    p.device = *q->device;
  else
    mp_device_init(&p.device);
  srv_keys_frontier(&p, c->key);
  rc = srv_jobs_submit_frontier(s->jobs, &p, c->key, graph, &out->job, &text, &len);
  if (rc < 0) {
    srv_frontier_free(c);
    return rc;
  }
  if (rc == SRV_SUBMIT_CACHED) {
    c->cache = out->cache = "hit";
    rc = srv__answer(c, text, len, &out->answer);
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
  rc = srv__answer(f, text, len, answer);
  free(text);
  return rc;
}
