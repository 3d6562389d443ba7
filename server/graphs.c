/* graphs.c - the graph service (see graphs.h): whether the store holds a
 * graph, and the canonical JSON it is stored as. */
#include "graphs.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats.h"
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
