/* graphs.c - the graph service (see graphs.h): whether the store holds a
 * graph, the canonical JSON it is stored as, and a stored graph's figures
 * for GET /v1/graphs/{hash}. */
#include "graphs.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats.h"
#include "graph_stats_json.h"
#include "json_util.h"
#include "store.h"

int srv_graphs_known(srv_server_t *s, const char *hash) { return srv_store_has_graph(s->store, hash); }

int srv_graphs_render_new(srv_server_t *s, const mp_graph_t *g, const char *hash, char **json, size_t *len) {
  json_t *native;
  *json = NULL;
  *len = 0;
  if (srv_store_has_graph(s->store, hash)) return 0;
  native = mp_graph_to_json(g);
  *json = native ? json_dumps(native, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(native);
  if (*json == NULL) return SRV_ENOMEM;
  *len = strlen(*json);
  return 0;
}

int srv_graphs_keep(srv_server_t *s, const mp_graph_t *g, const char *hash) {
  char *json;
  size_t len;
  if (srv_graphs_render_new(s, g, hash, &json, &len) != 0) return SRV_ENOMEM;
  if (json) srv_store_put_graph(s->store, hash, json, len, g->n_nodes);
  free(json);
  return 0;
}

int srv_graphs_load(srv_server_t *s, const char *hash, const mp_limits_t *lim, mp_graph_t **g, mp_error_t *err) {
  char *text = NULL;
  size_t len;
  int rc;
  *g = NULL;
  if (srv_store_get_graph(s->store, hash, &text, &len) != 0) return SRV_ESTORE;
  rc = mp_graph_load_buffer(text, len, MP_FORMAT_NATIVE, NULL, lim, g, NULL, err);
  free(text);
  if (rc == MP_ENOMEM) return SRV_ENOMEM;
  return rc != 0 ? SRV_ESTORE : 0;
}

int srv_graphs_stats(srv_server_t *s, const char *hash, json_t **out, mp_error_t *err) {
  mp_graph_t *g = NULL;
  int rc;
  *out = NULL;
  if (srv_graphs_load(s, hash, NULL, &g, err) != 0) return SRV_ESTORE;
  rc = mp_graph_stats_json(g, out, err);
  mp_graph_free(g);
  if (rc != 0) return SRV_EINVAL;
  if (mp_json_set(*out, "graph_hash", json_string(hash)) != 0) {
    json_decref(*out);
    *out = NULL;
    return SRV_ENOMEM;
  }
  return 0;
}
