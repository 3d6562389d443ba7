/* floor_server.c - the floor of `make bench`'s HTTP figures: a minimal
 * libmicrohttpd server that answers every request (any method, any path,
 * the body read and dropped) with the same bytes, a JSON body of a given
 * size, threaded as memplan-server is (an internal poll() thread pool of
 * --http-threads' default, two). Whatever the daemon does past that
 * (routing, caches, logs, metrics) is what a comparison with it measures.
 *
 * Usage: floor_server BYTES PORT_FILE
 * Listens on 127.0.0.1, an ephemeral port written to PORT_FILE; runs until
 * SIGTERM or SIGINT. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct MHD_Response *floor__resp;
static volatile sig_atomic_t floor__stop;

static void floor__on_signal(int sig) {
  (void)sig;
  floor__stop = 1;
}

static enum MHD_Result floor__handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                      const char *version, const char *upload_data, size_t *upload_data_size,
                                      void **state) {
  static int seen;
  (void)cls;
  (void)url;
  (void)method;
  (void)version;
  (void)upload_data;
  if (*state == NULL) { /* the head: come back for the body */
    *state = &seen;
    return MHD_YES;
  }
  if (*upload_data_size > 0) { /* a piece of the body: dropped */
    *upload_data_size = 0;
    return MHD_YES;
  }
  return MHD_queue_response(conn, 200, floor__resp);
}

int main(int argc, char **argv) {
  struct MHD_Daemon *d;
  const union MHD_DaemonInfo *info;
  struct sockaddr_in addr;
  char *body;
  long n;
  FILE *f;
  if (argc != 3 || (n = atol(argv[1])) < 2 || n > (1L << 26)) {
    fprintf(stderr, "usage: floor_server BYTES PORT_FILE\n");
    return 2;
  }
  if ((body = malloc((size_t)n)) == NULL) return 1;
  /* ["xxx...x"]: valid JSON of exactly n bytes */
  memset(body, 'x', (size_t)n);
  body[0] = '[';
  body[n - 1] = ']';
  if (n >= 4) {
    body[1] = '"';
    body[n - 2] = '"';
  }
  floor__resp = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(floor__resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, floor__handler, NULL,
                       MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2,
                       MHD_OPTION_CONNECTION_LIMIT, (unsigned)2048, MHD_OPTION_END);
  if (d == NULL) {
    fprintf(stderr, "floor_server: cannot listen\n");
    return 1;
  }
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  if ((f = fopen(argv[2], "w")) == NULL) return 1;
  fprintf(f, "%u\n", (unsigned)info->port);
  fclose(f);
  signal(SIGTERM, floor__on_signal);
  signal(SIGINT, floor__on_signal);
  while (!floor__stop) pause();
  MHD_stop_daemon(d);
  MHD_destroy_response(floor__resp);
  free(body);
  return 0;
}
