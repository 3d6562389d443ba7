/* graph_prescan.c - the counting pre-scan of a graph in JSON text: node and
 * edge counts checked against the limits before anything is parsed.
 *
 * A JSON parser builds the whole document before a reader can count its
 * nodes, so a graph far over the node limit costs its full parse (a million
 * nodes: seconds and a gigabyte) before it is refused. This scan reads the
 * text once, keeps no more than a stack of container roles, and stops at the
 * first count past its limit, so refusing costs time in proportion to the
 * limit. It recognises the keys every graph format uses for its counts:
 *   nodes         the node array (native and node-link)
 *   inputs        a native node's input list (edges: their total)
 *   links, edges  node-link's edge arrays
 * and, for a Kusumoto graph sent as a JSON string, the node count its
 * header declares. It is an early refusal, not a validator: whatever it
 * lets through is parsed and checked by the readers as before, which
 * enforce the same limits (a key spelled with escapes is only caught there). */
#include "formats.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { MP__PS_NONE, MP__PS_GRAPH, MP__PS_NODES, MP__PS_NODE, MP__PS_INPUTS, MP__PS_EDGES };

/* Containers deeper than this are tracked by depth alone: no graph role
 * lies that deep. */
#define MP__PS_STACK 16

typedef struct {
  char is_obj;
  char role;
  char want_key; /* in an object: the next string is a key */
} mp__ps_frame_t;

/* The index of the quote that closes the string whose text starts at
 * `start` (len when it does not close): memchr to each quote, then the
 * backslashes before it say whether it is escaped. */
static size_t mp__ps_string_end(const char *buf, size_t len, size_t start) {
  size_t i = start;
  for (;;) {
    const char *q = i < len ? memchr(buf + i, '"', len - i) : NULL;
    size_t k, at;
    if (q == NULL) return len;
    at = (size_t)(q - buf);
    for (k = 0; at - k > start && buf[at - k - 1] == '\\'; k++) {
    }
    if (k % 2 == 0) return at;
    i = at + 1;
  }
}

static int mp__ps_key_is(const char *k, size_t n, const char *want) {
  return n == strlen(want) && memcmp(k, want, n) == 0;
}

/* The role of a container opened as the value of key (k, n) inside `parent`
 * (or as an element of an array `parent` when k is NULL). */
static char mp__ps_role(const mp__ps_frame_t *parent, const char *k, size_t n, const char *graph_key, int is_obj) {
  if (parent == NULL) return (graph_key == NULL && is_obj) ? MP__PS_GRAPH : MP__PS_NONE;
  switch (parent->role) {
  case MP__PS_NONE:
    return 0;
  case MP__PS_GRAPH:
    if (k == NULL || is_obj) return MP__PS_NONE;
    if (mp__ps_key_is(k, n, "nodes")) return MP__PS_NODES;
    if (mp__ps_key_is(k, n, "links") || mp__ps_key_is(k, n, "edges")) return MP__PS_EDGES;
    return MP__PS_NONE;
  case MP__PS_NODES:
    return is_obj ? MP__PS_NODE : MP__PS_NONE;
  case MP__PS_NODE:
    return (!is_obj && k && mp__ps_key_is(k, n, "inputs")) ? MP__PS_INPUTS : MP__PS_NONE;
  default:
    return MP__PS_NONE;
  }
}

/* A Kusumoto text's header, "N M", at the start of the string's raw JSON
 * text: refuse N past the node limit. */
static int mp__ps_kusumoto(const char *s, const char *end, const char *path, const mp_limits_t *lim,
                           mp_error_t *err) {
  uint64_t v = 0;
  int digits = 0;
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  while (s < end && *s >= '0' && *s <= '9') {
    if (v > (UINT64_MAX - 9) / 10) break;
    v = v * 10 + (uint64_t)(*s - '0');
    digits++;
    s++;
  }
  if (digits > 0 && v > lim->max_nodes)
    return mp_error_set(err, MP_ELIMIT, path, "header declares %llu variables, more than the limit of %zu nodes",
                        (unsigned long long)v, lim->max_nodes);
  return 0;
}

int mp_graph_prescan_json(const char *buf, size_t len, const char *graph_key, const mp_limits_t *lim,
                          mp_error_t *err) {
  mp__ps_frame_t st[MP__PS_STACK];
  size_t depth = 0, i = 0;
  size_t nodes = 0, edges = 0;
  const char *key = NULL; /* the last key read in the innermost object */
  size_t key_len = 0;
  char gpath[96], npath[112], epath[112];

  if (graph_key) {
    snprintf(gpath, sizeof(gpath), "$.%.80s", graph_key);
  } else {
    snprintf(gpath, sizeof(gpath), "$");
  }
  snprintf(npath, sizeof(npath), "%s.nodes", gpath);
  snprintf(epath, sizeof(epath), "%s", gpath);

  while (i < len) {
    char c = buf[i];
    mp__ps_frame_t *top = (depth > 0 && depth <= MP__PS_STACK) ? &st[depth - 1] : NULL;
    int value_start = 0;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':') {
      i++;
      continue;
    }
    if (c == ',') {
      if (top && top->is_obj) top->want_key = 1;
      i++;
      continue;
    }
    if (c == '}' || c == ']') {
      if (depth > 0) depth--;
      key = NULL;
      i++;
      continue;
    }
    if (c == '"') {
      size_t start = ++i;
      i = mp__ps_string_end(buf, len, start);
      if (top && top->is_obj && top->want_key) {
        key = buf + start;
        key_len = i - start;
        top->want_key = 0;
        i++;
        continue;
      }
      value_start = 1;
      /* A string that is the graph itself: Kusumoto text. */
      if (depth == 1 && top && top->role == MP__PS_NONE && graph_key && key &&
          mp__ps_key_is(key, key_len, graph_key)) {
        int rc = mp__ps_kusumoto(buf + start, buf + i, gpath, lim, err);
        if (rc != 0) return rc;
      }
      i++;
    } else if (c == '{' || c == '[') {
      int is_obj = c == '{';
      char role;
      value_start = 1;
      if (depth == 0)
        role = mp__ps_role(NULL, NULL, 0, graph_key, is_obj);
      else if (top == NULL)
        role = MP__PS_NONE;
      else if (depth == 1 && top->role == MP__PS_NONE && graph_key && top->is_obj && key &&
               mp__ps_key_is(key, key_len, graph_key) && is_obj)
        role = MP__PS_GRAPH;
      else
        role = mp__ps_role(top, top->is_obj ? key : NULL, key_len, graph_key, is_obj);
      /* count this container as an element of its parent first */
      if (top && top->role == MP__PS_NODES && ++nodes > lim->max_nodes)
        return mp_error_set(err, MP_ELIMIT, npath, "graph has more than %zu nodes, the limit", lim->max_nodes);
      if (top && (top->role == MP__PS_EDGES || top->role == MP__PS_INPUTS) && ++edges > lim->max_edges)
        return mp_error_set(err, MP_ELIMIT, epath, "graph has more than %zu edges (input references), the limit",
                            lim->max_edges);
      if (depth < MP__PS_STACK) {
        st[depth].is_obj = (char)is_obj;
        st[depth].role = role;
        st[depth].want_key = (char)is_obj;
      }
      depth++;
      key = NULL;
      i++;
      continue;
    } else {
      /* a number or literal: up to the next delimiter */
      value_start = 1;
      while (i < len && buf[i] != ',' && buf[i] != '}' && buf[i] != ']' && buf[i] != ' ' && buf[i] != '\n' &&
             buf[i] != '\t' && buf[i] != '\r')
        i++;
    }
    if (value_start && top && top->role == MP__PS_NODES && ++nodes > lim->max_nodes)
      return mp_error_set(err, MP_ELIMIT, npath, "graph has more than %zu nodes, the limit", lim->max_nodes);
    if (value_start && top && (top->role == MP__PS_EDGES || top->role == MP__PS_INPUTS) &&
        ++edges > lim->max_edges)
      return mp_error_set(err, MP_ELIMIT, epath, "graph has more than %zu edges (input references), the limit",
                          lim->max_edges);
  }
  return 0;
}
