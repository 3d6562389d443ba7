/* remote.c - what `plan`, `fit` and `frontier` share when they ask a
 * running memplan-server (--server URL) instead of planning in-process:
 * finding the daemon and its token, one JSON exchange, sending a graph
 * only when the daemon does not hold it yet, and turning its refusals
 * into the exit codes of the offline commands (2 for a 4xx, naming the
 * field the daemon names; 3 when it fails or cannot be reached). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json_util.h"

int mp_cli_server_open(const mp_cli_opts_t *o, mp_cli_server_t *s, int *on) {
  const char *url = o->server ? o->server : getenv("MEMPLAN_URL");
  const char *tf = o->token_file ? o->token_file : getenv("MEMPLAN_TOKEN_FILE");
  char why[200];
  memset(s, 0, sizeof(*s));
  *on = url != NULL && url[0] != '\0';
  if (!*on) return 0;
  s->url = url;
  if (mp_http_parse_url(url, &s->u, why, sizeof(why)) != 0) {
    fprintf(stderr, "memplan: --server %s: %s\n", url, why);
    return MP_CLI_EXIT_USAGE;
  }
  if (tf != NULL && tf[0] != '\0') {
    mp_error_t err;
    size_t len;
    if (mp_read_file(tf, &s->token, &len, &err) != 0) {
      fprintf(stderr, "memplan: --token-file %s: %s (%s)\n", tf, err.message, mp_err_name(err.code));
      return MP_CLI_EXIT_USAGE;
    }
    while (len > 0 && (s->token[len - 1] == '\n' || s->token[len - 1] == '\r' || s->token[len - 1] == ' '))
      s->token[--len] = '\0';
    /* One token alone: the daemon's own file of "NAME ROLE TOKEN" lines is
     * not a client's token. */
    if (len == 0 || strpbrk(s->token, "\r\n\t ") != NULL) {
      fprintf(stderr,
              "memplan: --token-file %s: the file must hold your principal's token alone, on one line "
              "(not the daemon's NAME ROLE TOKEN lines)\n",
              tf);
      mp_cli_server_close(s);
      return MP_CLI_EXIT_USAGE;
    }
  }
  return 0;
}

void mp_cli_server_close(mp_cli_server_t *s) {
  free(s->token);
  s->token = NULL;
}

int mp_cli_server_call(const mp_cli_server_t *s, const char *method, const char *path, const json_t *body,
                       double timeout_s, int *status, json_t **answer) {
  mp_http_response_t resp;
  char why[300], *text = NULL;
  int rc;
  *answer = NULL;
  if (body && (text = mp_json_dumps(body, JSON_COMPACT)) == NULL) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  rc = mp_http_request(&s->u, method, path, s->token, text, text ? strlen(text) : 0, timeout_s, &resp, why,
                       sizeof(why));
  free(text);
  if (rc != 0) {
    fprintf(stderr, "memplan: server %s: %s\n", s->url, why);
    return MP_CLI_EXIT_INTERNAL;
  }
  *status = resp.status;
  *answer = json_loadb(resp.body, resp.len, 0, NULL);
  mp_http_response_free(&resp);
  return 0;
}

/* The error code of a daemon's error body, or "". */
static const char *mp__error_code(const json_t *answer) {
  const char *c = json_string_value(json_object_get(json_object_get(answer, "error"), "code"));
  return c ? c : "";
}

int mp_cli_server_call_graph(const mp_cli_server_t *s, const char *path, json_t *body, const mp_graph_t *g,
                             double timeout_s, int *status, json_t **answer) {
  /* The graph itself, not its hash: asking by hash first would log a 404
   * for every graph the daemon has not seen. */
  if (json_object_get(body, "graph") == NULL && mp_json_set(body, "graph", mp_graph_to_json(g)) != 0) {
    fprintf(stderr, "memplan: out of memory\n");
    return MP_CLI_EXIT_INTERNAL;
  }
  return mp_cli_server_call(s, "POST", path, body, timeout_s, status, answer);
}

int mp_cli_server_refused(const mp_cli_server_t *s, int status, json_t *answer) {
  const json_t *e = json_object_get(answer, "error");
  const char *msg = json_string_value(json_object_get(e, "message"));
  const char *path = json_string_value(json_object_get(e, "path"));
  if (msg == NULL)
    fprintf(stderr, "memplan: server %s answered %d%s\n", s->url, status,
            answer ? "" : " (not a JSON answer: is it a memplan-server?)");
  else
    fprintf(stderr, "memplan: server %s answered %d: %s%s%s (%s)\n", s->url, status, path ? path : "",
            path && path[0] ? ": " : "", msg, mp__error_code(answer));
  json_decref(answer);
  return status >= 400 && status < 500 ? MP_CLI_EXIT_USAGE : MP_CLI_EXIT_INTERNAL;
}
