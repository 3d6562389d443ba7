/* auth.c - the token file's principals, the trusted proxies and the
 * throttle on failed authentication (see auth.h). */
#include "auth.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SRV__WINDOW_MS 60000.0
#define SRV__FILE_MAX (1u << 20)

typedef struct {
  int family;            /* AF_INET or AF_INET6 */
  unsigned char addr[16];
  unsigned bits;         /* prefix length */
} srv__net_t;

typedef struct {
  char addr[48];
  double start_ms;       /* its minute began (monotonic) */
  unsigned failures;
} srv__slot_t;

struct srv_auth_s {
  srv_principal_t *p;
  size_t n;
  int single;
  srv__net_t *nets;
  size_t n_nets;
  unsigned per_minute;
  pthread_mutex_t mu;
  srv__slot_t *slots;    /* SRV_AUTH_SLOTS, allocated with the first failure */
  size_t used;
};

static const char *const srv__role_names[] = {"read", "work", "read-all", "admin"};

const char *srv_role_name(srv_role_t role) {
  return (unsigned)role < 4 ? srv__role_names[role] : "unknown";
}

int srv_role_allows(srv_role_t role, int work) {
  return work ? role == SRV_ROLE_WORK || role == SRV_ROLE_ADMIN : 1;
}

int srv_role_sees_all(srv_role_t role) { return role == SRV_ROLE_READ_ALL || role == SRV_ROLE_ADMIN; }

static int srv__digest(const char *tok, size_t n, unsigned char out[32]) {
  unsigned int len = 0;
  return EVP_Digest(tok, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32 ? 0 : -1;
}

/* ---- the token file ---- */

static int srv__valid_name(const char *s) {
  size_t i;
  for (i = 0; s[i]; i++)
    if (i >= SRV_AUTH_NAME_MAX || !(isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-'))
      return 0;
  return i > 0;
}

static int srv__valid_token(const char *s) {
  size_t i;
  for (i = 0; s[i]; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return 0;
  return i > 0;
}

/* Split `line` at blanks into at most `max` fields; their count (max + 1
 * when there are more). */
static int srv__fields(char *line, char **f, int max) {
  int n = 0;
  char *save = NULL, *t;
  for (t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    if (n == max) return max + 1;
    f[n++] = t;
  }
  return n;
}

static int srv__parse_file(srv_auth_t *a, char *text, char *err, size_t errlen) {
  char *line, *save = NULL, *lines[2] = {NULL, NULL};
  size_t content = 0, cap = 0, lineno = 0, i;
  /* count the lines that say something, and keep the first */
  for (line = text; *line;) {
    char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    {
      size_t k = 0;
      while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
      if (k < len && line[k] != '#') {
        if (content < 2) lines[content] = line + k;
        content++;
      }
    }
    if (nl == NULL) break;
    line = nl + 1;
  }
  if (content == 0) {
    snprintf(err, errlen, "the token file holds no token");
    return -1;
  }
  if (content == 1) {
    /* One token alone: the principal "default", admin. */
    size_t len = strcspn(lines[0], "\r\n");
    char *tok;
    while (len > 0 && (lines[0][len - 1] == ' ' || lines[0][len - 1] == '\t')) len--;
    if (memchr(lines[0], ' ', len) == NULL && memchr(lines[0], '\t', len) == NULL) {
      if ((tok = strndup(lines[0], len)) == NULL || (a->p = calloc(1, sizeof(*a->p))) == NULL) {
        free(tok);
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      if (!srv__valid_token(tok)) {
        free(tok);
        snprintf(err, errlen, "the token holds a control or non-ASCII character");
        return -1;
      }
      strcpy(a->p[0].name, "default");
      a->p[0].role = SRV_ROLE_ADMIN;
      srv__digest(tok, strlen(tok), a->p[0].digest);
      OPENSSL_cleanse(tok, strlen(tok));
      free(tok);
      a->n = 1;
      a->single = 1;
      return 0;
    }
  }
  cap = content;
  if ((a->p = calloc(cap, sizeof(*a->p))) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *f[3];
    int nf, role = -1, r;
    srv_principal_t *p;
    lineno++;
    line[strcspn(line, "\r")] = '\0';
    while (*line == ' ' || *line == '\t') line++;
    if (*line == '\0' || *line == '#') continue;
    nf = srv__fields(line, f, 3);
    if (nf != 3) {
      snprintf(err, errlen, "line %zu: expected NAME ROLE TOKEN", lineno);
      return -1;
    }
    if (!srv__valid_name(f[0])) {
      snprintf(err, errlen, "line %zu: a name is 1 to %d of A-Z a-z 0-9 . _ -", lineno, SRV_AUTH_NAME_MAX);
      return -1;
    }
    for (r = 0; r < 4; r++)
      if (strcmp(f[1], srv__role_names[r]) == 0) role = r;
    if (role < 0) {
      snprintf(err, errlen, "line %zu: the role must be read, work, read-all or admin", lineno);
      return -1;
    }
    if (!srv__valid_token(f[2])) {
      snprintf(err, errlen, "line %zu: the token holds a control or non-ASCII character", lineno);
      return -1;
    }
    p = &a->p[a->n];
    snprintf(p->name, sizeof(p->name), "%s", f[0]);
    p->role = (srv_role_t)role;
    if (srv__digest(f[2], strlen(f[2]), p->digest) != 0) {
      snprintf(err, errlen, "cannot hash a token");
      return -1;
    }
    OPENSSL_cleanse(f[2], strlen(f[2]));
    for (i = 0; i < a->n; i++) {
      if (strcmp(a->p[i].name, p->name) == 0) {
        snprintf(err, errlen, "line %zu: the name %s is given twice", lineno, p->name);
        return -1;
      }
      if (memcmp(a->p[i].digest, p->digest, 32) == 0) {
        snprintf(err, errlen, "line %zu: %s has the token of %s", lineno, p->name, a->p[i].name);
        return -1;
      }
    }
    a->n++;
  }
  return 0;
}

static int srv__read_file(const char *path, char **out, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  char *buf;
  size_t n;
  if (f == NULL) {
    snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
    return -1;
  }
  if ((buf = malloc(SRV__FILE_MAX + 1)) == NULL) {
    fclose(f);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  n = fread(buf, 1, SRV__FILE_MAX + 1, f);
  fclose(f);
  if (n > SRV__FILE_MAX || memchr(buf, '\0', n) != NULL) {
    free(buf);
    snprintf(err, errlen, "the token file %s is over 1 MiB or holds a NUL", path);
    return -1;
  }
  buf[n] = '\0';
  *out = buf;
  return 0;
}

/* ---- trusted proxies ---- */

static int srv__parse_net(const char *item, srv__net_t *n) {
  char buf[80], *slash;
  unsigned long bits;
  if (strlen(item) >= sizeof(buf)) return -1;
  strcpy(buf, item);
  slash = strchr(buf, '/');
  if (slash) *slash = '\0';
  memset(n, 0, sizeof(*n));
  if (inet_pton(AF_INET, buf, n->addr) == 1) {
    n->family = AF_INET;
    n->bits = 32;
  } else if (inet_pton(AF_INET6, buf, n->addr) == 1) {
    n->family = AF_INET6;
    n->bits = 128;
  } else {
    return -1;
  }
  if (slash) {
    char *end;
    errno = 0;
    bits = strtoul(slash + 1, &end, 10);
    if (errno || end == slash + 1 || *end || bits > n->bits) return -1;
    n->bits = (unsigned)bits;
  }
  return 0;
}

static int srv__net_has(const srv__net_t *n, int family, const unsigned char *addr) {
  unsigned full = n->bits / 8, rest = n->bits % 8;
  if (n->family != family) return 0;
  if (memcmp(n->addr, addr, full) != 0) return 0;
  if (rest == 0) return 1;
  return ((n->addr[full] ^ addr[full]) & (0xffu << (8 - rest)) & 0xffu) == 0;
}

static int srv__trusted_raw(const srv_auth_t *a, int family, const unsigned char *addr) {
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  size_t i;
  if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0) { /* ::ffff:a.b.c.d is a.b.c.d */
    family = AF_INET;
    addr += 12;
  }
  for (i = 0; i < a->n_nets; i++)
    if (srv__net_has(&a->nets[i], family, addr)) return 1;
  return 0;
}

int srv_auth_trusted(const srv_auth_t *a, const struct sockaddr *sa) {
  if (a == NULL || a->n_nets == 0 || sa == NULL) return 0;
  if (sa->sa_family == AF_INET)
    return srv__trusted_raw(a, AF_INET, (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr);
  if (sa->sa_family == AF_INET6)
    return srv__trusted_raw(a, AF_INET6, (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr);
  return 0;
}

int srv_auth_trusted_text(const srv_auth_t *a, const char *addr) {
  unsigned char raw[16];
  if (a == NULL || a->n_nets == 0) return 0;
  if (inet_pton(AF_INET, addr, raw) == 1) return srv__trusted_raw(a, AF_INET, raw);
  if (inet_pton(AF_INET6, addr, raw) == 1) return srv__trusted_raw(a, AF_INET6, raw);
  return 0;
}

static int srv__parse_nets(srv_auth_t *a, const char *list, char *err, size_t errlen) {
  size_t cap = 1;
  const char *p;
  for (p = list; *p; p++)
    if (*p == ',') cap++;
  if (list[0] == '\0') return 0;
  if ((a->nets = calloc(cap, sizeof(*a->nets))) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (p = list; *p;) {
    size_t k = strcspn(p, ",");
    char item[80];
    if (k == 0 || k >= sizeof(item)) {
      snprintf(err, errlen, "--trusted-proxy: '%.*s' is not an address or CIDR block", (int)(k > 60 ? 60 : k), p);
      return -1;
    }
    memcpy(item, p, k);
    item[k] = '\0';
    if (srv__parse_net(item, &a->nets[a->n_nets]) != 0) {
      snprintf(err, errlen, "--trusted-proxy: '%s' is not an address or CIDR block", item);
      return -1;
    }
    a->n_nets++;
    p += k;
    if (*p == ',') p++;
  }
  return 0;
}

/* ---- life ---- */

int srv_auth_new(const char *path, const char *trusted, unsigned failures_per_minute, srv_auth_t **out,
                 char *err, size_t errlen) {
  srv_auth_t *a = calloc(1, sizeof(*a));
  *out = NULL;
  if (a == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  pthread_mutex_init(&a->mu, NULL);
  a->per_minute = failures_per_minute;
  if (path && path[0]) {
    char *text = NULL;
    int rc = srv__read_file(path, &text, err, errlen);
    if (rc == 0) rc = srv__parse_file(a, text, err, errlen);
    if (text) {
      OPENSSL_cleanse(text, strlen(text));
      free(text);
    }
    if (rc != 0) {
      srv_auth_free(a);
      return -1;
    }
  }
  if (srv__parse_nets(a, trusted ? trusted : "", err, errlen) != 0) {
    srv_auth_free(a);
    return -1;
  }
  *out = a;
  return 0;
}

void srv_auth_free(srv_auth_t *a) {
  if (a == NULL) return;
  free(a->p);
  free(a->nets);
  free(a->slots);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

int srv_auth_enabled(const srv_auth_t *a) { return a != NULL && a->n > 0; }
int srv_auth_single(const srv_auth_t *a) { return a != NULL && a->single; }
size_t srv_auth_count(const srv_auth_t *a) { return a ? a->n : 0; }

const srv_principal_t *srv_auth_check(const srv_auth_t *a, const char *authorization) {
  unsigned char d[32];
  const srv_principal_t *found = NULL;
  size_t i;
  if (a == NULL || a->n == 0 || authorization == NULL || strncmp(authorization, "Bearer ", 7) != 0) return NULL;
  if (srv__digest(authorization + 7, strlen(authorization + 7), d) != 0) return NULL;
  /* every digest is compared, whatever matched before */
  for (i = 0; i < a->n; i++) {
    int same = CRYPTO_memcmp(d, a->p[i].digest, 32) == 0;
    if (same) found = &a->p[i];
  }
  return found;
}

/* ---- the throttle ---- */

/* The slot of `addr` (a new one, or the stalest replaced, when `make`);
 * NULL when there is none. Callers hold mu. */
static srv__slot_t *srv__slot(srv_auth_t *a, const char *addr, double now_ms, int make) {
  size_t i, stalest = 0;
  for (i = 0; i < a->used; i++)
    if (strcmp(a->slots[i].addr, addr) == 0) return &a->slots[i];
  if (!make) return NULL;
  if (a->slots == NULL && (a->slots = calloc(SRV_AUTH_SLOTS, sizeof(*a->slots))) == NULL) return NULL;
  if (a->used < SRV_AUTH_SLOTS) {
    i = a->used++;
  } else {
    for (i = 1; i < a->used; i++)
      if (a->slots[i].start_ms < a->slots[stalest].start_ms) stalest = i;
    i = stalest;
  }
  snprintf(a->slots[i].addr, sizeof(a->slots[i].addr), "%s", addr);
  a->slots[i].start_ms = now_ms;
  a->slots[i].failures = 0;
  return &a->slots[i];
}

int srv_auth_throttled(srv_auth_t *a, const char *addr, double now_ms, unsigned *retry_s) {
  srv__slot_t *s;
  int over = 0;
  if (a == NULL || a->per_minute == 0) return 0;
  pthread_mutex_lock(&a->mu);
  s = srv__slot(a, addr, now_ms, 0);
  if (s && now_ms - s->start_ms < SRV__WINDOW_MS && s->failures >= a->per_minute) {
    double left = (s->start_ms + SRV__WINDOW_MS - now_ms) / 1000.0;
    *retry_s = left < 1 ? 1 : (unsigned)(left + 0.999);
    over = 1;
  }
  pthread_mutex_unlock(&a->mu);
  return over;
}

void srv_auth_failed(srv_auth_t *a, const char *addr, double now_ms) {
  srv__slot_t *s;
  if (a == NULL || a->per_minute == 0) return;
  pthread_mutex_lock(&a->mu);
  if ((s = srv__slot(a, addr, now_ms, 1)) != NULL) {
    if (now_ms - s->start_ms >= SRV__WINDOW_MS) {
      s->start_ms = now_ms;
      s->failures = 0;
    }
    s->failures++;
  }
  pthread_mutex_unlock(&a->mu);
}
