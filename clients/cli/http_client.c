/* http_client.c - see http_client.h. One exchange: resolve the host
 * (getaddrinfo), connect to each of its addresses in turn, write the
 * request, read until the answer is complete (its Content-Length, or the
 * daemon closing the connection), then split the status line, the headers
 * and the body (chunked transfer coding decoded). Every wait is a poll()
 * against one deadline, so a daemon that stops answering costs timeout_s
 * at most. */
#include "http_client.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The largest answer read (a plan of a huge graph with its schedule and
 * timeline is tens of MB). */
#define MP__MAX_ANSWER ((size_t)1 << 30)

static double mp__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait until fd is ready for `ev`: 1, 0 at the deadline, -1 on error. */
static int mp__wait(int fd, short ev, double deadline) {
  for (;;) {
    double left = deadline - mp__now();
    struct pollfd p = {fd, ev, 0};
    int r;
    if (left <= 0) return 0;
    r = poll(&p, 1, (int)(left * 1000.0) + 1);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

int mp_http_parse_url(const char *url, mp_http_url_t *u, char *why, size_t n) {
  const char *p = url, *host_end;
  size_t len;
  memset(u, 0, sizeof(*u));
  if (strncasecmp(p, "https://", 8) == 0) {
    snprintf(why, n, "https is not supported: memplan's client speaks plain http (reach an https daemon "
                     "through a local tunnel or proxy)");
    return -1;
  }
  if (strncasecmp(p, "http://", 7) == 0)
    p += 7;
  else if (strstr(p, "://") != NULL) {
    snprintf(why, n, "only http:// URLs are supported");
    return -1;
  }
  if (*p == '[') {
    host_end = strchr(p, ']');
    if (host_end == NULL) goto bad_host;
    host_end++;
  } else {
    host_end = p + strcspn(p, ":/?#@");
  }
  len = (size_t)(host_end - p);
  if (len == 0 || len >= sizeof(u->host) || *host_end == '@') goto bad_host;
  memcpy(u->host, p, len);
  p = host_end;
  if (*p == ':') {
    long port;
    p++;
    len = strspn(p, "0123456789");
    port = len > 0 && len <= 5 ? atol(p) : 0;
    if (port < 1 || port > 65535 || (p[len] != '\0' && p[len] != '/')) {
      snprintf(why, n, "the port must be a number from 1 to 65535");
      return -1;
    }
    snprintf(u->port, sizeof(u->port), "%ld", port);
    p += len;
  } else {
    snprintf(u->port, sizeof(u->port), "80");
  }
  if (*p != '\0' && *p != '/') goto bad_host;
  len = strlen(p);
  while (len > 0 && p[len - 1] == '/') len--;
  if (len >= sizeof(u->prefix) || memchr(p, '?', len) || memchr(p, '#', len)) {
    snprintf(why, n, "the URL's path must be a plain prefix (no query)");
    return -1;
  }
  memcpy(u->prefix, p, len);
  return 0;
bad_host:
  snprintf(why, n, "expected http://host[:port][/prefix]");
  return -1;
}

/* Connect to one of the host's addresses before the deadline; the socket
 * (non-blocking) or -1 with the reason. */
static int mp__connect(const mp_http_url_t *u, double deadline, char *why, size_t n) {
  struct addrinfo hints, *res = NULL, *ai;
  char name[256];
  int fd = -1, rc, last = 0;
  size_t hl = strlen(u->host);
  if (u->host[0] == '[') {
    memcpy(name, u->host + 1, hl - 2);
    name[hl - 2] = '\0';
  } else {
    memcpy(name, u->host, hl + 1);
  }
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if ((rc = getaddrinfo(name, u->port, &hints, &res)) != 0) {
    snprintf(why, n, "cannot resolve %s: %s", name, gai_strerror(rc));
    return -1;
  }
  for (ai = res; ai; ai = ai->ai_next) {
    int err = 0;
    socklen_t el = sizeof(err);
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS) {
      rc = mp__wait(fd, POLLOUT, deadline);
      if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) break;
      last = rc == 0 ? ETIMEDOUT : err ? err : errno;
    } else {
      last = errno;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) snprintf(why, n, "cannot connect to %s:%s: %s", u->host, u->port, strerror(last));
  return fd;
}

/* Write all of buf; 0, or -1 with errno (ETIMEDOUT at the deadline). */
static int mp__send_all(int fd, const char *buf, size_t len, double deadline) {
  while (len > 0) {
    ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
    if (w > 0) {
      buf += w;
      len -= (size_t)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      int r = mp__wait(fd, POLLOUT, deadline);
      if (r <= 0) {
        if (r == 0) errno = ETIMEDOUT;
        return -1;
      }
    } else {
      return -1;
    }
  }
  return 0;
}

/* The end of the headers in buf[0..n) (the index past "\r\n\r\n"), or 0. */
static size_t mp__header_end(const char *buf, size_t n) {
  size_t i;
  for (i = 3; i < n; i++)
    if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') return i + 1;
  return 0;
}

/* The value of header `name` in the header block, or NULL; *len its length. */
static const char *mp__header(const char *h, size_t hn, const char *name, size_t *len) {
  size_t nl = strlen(name), i = 0;
  while (i < hn) {
    const char *line = h + i, *eol = memchr(line, '\n', hn - i);
    size_t ll = eol ? (size_t)(eol - line) : hn - i;
    if (ll > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
      const char *v = line + nl + 1;
      while (v < line + ll && (*v == ' ' || *v == '\t')) v++;
      *len = (size_t)(line + ll - v);
      while (*len > 0 && (v[*len - 1] == '\r' || v[*len - 1] == ' ')) (*len)--;
      return v;
    }
    i += ll + 1;
  }
  return NULL;
}

/* Decode a chunked body in place; its length, or (size_t)-1 when it is
 * cut short or malformed. */
static size_t mp__dechunk(char *p, size_t n) {
  size_t r = 0, w = 0;
  for (;;) {
    char *end;
    unsigned long sz;
    const char *nl = memchr(p + r, '\n', n - r);
    if (nl == NULL) return (size_t)-1;
    sz = strtoul(p + r, &end, 16);
    if (end == p + r) return (size_t)-1;
    r = (size_t)(nl - p) + 1;
    if (sz == 0) return w;
    if (n - r < sz + 2) return (size_t)-1;
    memmove(p + w, p + r, sz);
    w += sz;
    r += sz + 2;
  }
}

/* Is the answer in buf[0..n) complete by its Content-Length? (Without
 * one, the daemon's closing the connection ends it.) */
static int mp__complete(const char *buf, size_t n) {
  size_t he = mp__header_end(buf, n), vl;
  const char *v;
  if (he == 0 || (v = mp__header(buf, he, "Content-Length", &vl)) == NULL) return 0;
  return n - he >= strtoull(v, NULL, 10);
}

/* Split the raw answer into *resp; 0 or -1 with a reason. Takes buf. */
static int mp__parse(char *buf, size_t n, mp_http_response_t *resp, char *why, size_t wn) {
  size_t he = mp__header_end(buf, n), vl, blen;
  const char *v;
  int major, minor, status;
  if (he == 0 || sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 || status > 999) {
    snprintf(why, wn, n == 0 ? "the daemon closed the connection without an answer" : "the answer is not HTTP");
    free(buf);
    return -1;
  }
  blen = n - he;
  if ((v = mp__header(buf, he, "Transfer-Encoding", &vl)) != NULL && vl >= 7 &&
      strncasecmp(v + vl - 7, "chunked", 7) == 0) {
    blen = mp__dechunk(buf + he, n - he);
    if (blen == (size_t)-1) {
      snprintf(why, wn, "the answer was cut short");
      free(buf);
      return -1;
    }
  } else if ((v = mp__header(buf, he, "Content-Length", &vl)) != NULL) {
    unsigned long long cl = strtoull(v, NULL, 10);
    if (cl > blen) {
      snprintf(why, wn, "the answer was cut short");
      free(buf);
      return -1;
    }
    blen = (size_t)cl;
  }
  resp->status = status;
  resp->retry_after = (v = mp__header(buf, he, "Retry-After", &vl)) != NULL ? atoi(v) : 0;
  memmove(buf, buf + he, blen);
  buf[blen] = '\0';
  resp->body = buf;
  resp->len = blen;
  return 0;
}

int mp_http_request(const mp_http_url_t *u, const char *method, const char *path, const char *token,
                    const char *body, size_t body_len, double timeout_s, mp_http_response_t *resp, char *why,
                    size_t n) {
  double deadline = mp__now() + timeout_s;
  char *head = NULL, *buf = NULL;
  size_t cap = 0, len = 0, hcap;
  int fd, sent;

  memset(resp, 0, sizeof(resp[0]));
  if ((fd = mp__connect(u, deadline, why, n)) < 0) return -1;
  hcap = 512 + strlen(u->prefix) + strlen(path) + strlen(u->host) + (token ? strlen(token) : 0);
  if ((head = malloc(hcap)) == NULL) goto nomem;
  snprintf(head, hcap,
           "%s %s%s HTTP/1.1\r\nHost: %s%s%s\r\nUser-Agent: memplan/" MP_CLI_VERSION
           "\r\nAccept: application/json\r\nConnection: close\r\n%s%s%s",
           method, u->prefix, path, u->host, strcmp(u->port, "80") ? ":" : "", strcmp(u->port, "80") ? u->port : "",
           token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
  if (body) {
    size_t hl = strlen(head);
    snprintf(head + hl, hcap - hl, "Content-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
  }
  strncat(head, "\r\n", hcap - strlen(head) - 1);
  /* A daemon may answer (413, 401) and close before it has read a large
   * body: a failed write is then followed by reading that answer. */
  sent = mp__send_all(fd, head, strlen(head), deadline) == 0 && (!body || mp__send_all(fd, body, body_len, deadline) == 0);
  if (!sent && errno == ETIMEDOUT) {
    snprintf(why, n, "%s:%s did not take the request within %g s", u->host, u->port, timeout_s);
    goto fail;
  }
  for (;;) {
    ssize_t r;
    if (cap - len < 65536 && cap < MP__MAX_ANSWER + 1) {
      size_t ncap = cap ? cap * 2 : 65536 * 2;
      char *nb;
      if (ncap > MP__MAX_ANSWER + 1) ncap = MP__MAX_ANSWER + 1;
      if ((nb = realloc(buf, ncap)) == NULL) goto nomem;
      buf = nb;
      cap = ncap;
    }
    if (cap - len < 2) {
      snprintf(why, n, "the answer is larger than %zu bytes", MP__MAX_ANSWER);
      goto fail;
    }
    r = recv(fd, buf + len, cap - len - 1, 0);
    if (r > 0) {
      len += (size_t)r;
      if (mp__complete(buf, len)) break;
    } else if (r == 0) {
      break;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      int w = mp__wait(fd, POLLIN, deadline);
      if (w == 0) {
        snprintf(why, n, "no answer from %s:%s within %g s", u->host, u->port, timeout_s);
        goto fail;
      }
      if (w < 0) goto sockerr;
    } else {
      goto sockerr;
    }
  }
  close(fd);
  free(head);
  return mp__parse(buf, len, resp, why, n);
sockerr:
  snprintf(why, n, "reading the answer from %s:%s: %s", u->host, u->port, strerror(errno));
  goto fail;
nomem:
  snprintf(why, n, "out of memory");
fail:
  close(fd);
  free(head);
  free(buf);
  return -1;
}

void mp_http_response_free(mp_http_response_t *resp) {
  free(resp->body);
  memset(resp, 0, sizeof(*resp));
}
