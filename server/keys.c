/* keys.c - the text of plan and frontier keys (see keys.h), and reading a
 * plan key's migration options back. Every number a key holds is written
 * exactly, so that two devices that differ in any field never share a key,
 * and the text reads back into the same device. */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* The shortest "%g" text that reads back as exactly `d` (at most 23
 * characters for the finite non-negative values a device holds). */
static void srv__exact_g(char *buf, size_t n, double d) {
  int prec;
  for (prec = 1; prec < 17; prec++) {
    snprintf(buf, n, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) return;
  }
  snprintf(buf, n, "%.17g", d);
}

/* The migration part of a key: "m<swap>|h2d|d2h|latency|engines|host|unit|
 * reuse", every field exact (reuse is 1 for intra-layer reuse plus 2 for the
 * pytorch-cuda allocator, so keys from before the allocator keep their
 * plans), then "|<k>" when swap-ins are issued k
 * backward steps ahead (prefetch_lookahead k > 0; none for just in time, so
 * keys written before the prefetch existed are still the keys of the same
 * plans, and read back as just in time). At most 2+4*24+2+21+2 = 123
 * characters, plus 5 for a prefetch of at most MP_DEVICE_MAX_PREFETCH (four
 * digits): 128, so a plan key (117 before it, 10 after) stays within 255.
 * (That is why the lookahead is capped at four digits: a %g field takes up
 * to 23 characters, as in 1.2345678901234567e-300, and the host budget 20.)
 * Read back by srv_keys_device for jobs recovered from the store, whose rows
 * hold the key but no device columns. */
_Static_assert(MP_DEVICE_MAX_PREFETCH <= 9999, "a plan key has room for a four-digit prefetch only");

static void srv__device_key(char *buf, size_t n, int swap, const mp_device_t *d) {
  char h2d[32], d2h[32], lat[32], unit[32], host[32], pf[16] = "";
  srv__exact_g(h2d, sizeof(h2d), d->h2d_bytes_per_s);
  srv__exact_g(d2h, sizeof(d2h), d->d2h_bytes_per_s);
  srv__exact_g(lat, sizeof(lat), d->latency_s);
  srv__exact_g(unit, sizeof(unit), d->time_unit_s);
  if (d->host_bytes == UINT64_MAX)
    snprintf(host, sizeof(host), "inf");
  else
    snprintf(host, sizeof(host), "%llu", (unsigned long long)d->host_bytes);
  if (d->prefetch_lookahead != 0) snprintf(pf, sizeof(pf), "|%u", (unsigned)d->prefetch_lookahead);
  if (snprintf(buf, n, "m%d|%s|%s|%s|%d|%s|%s|%d%s", swap ? 1 : 0, h2d, d2h, lat, d->copy_engines, host, unit,
               (d->intra_layer_reuse ? 1 : 0) | (d->allocator == MP_ALLOCATOR_PYTORCH_CUDA ? 2 : 0), pf) >= (int)n)
    buf[0] = '\0'; /* cannot happen with n >= 129 (see above) */
}

/* The migration options of a plan key written by srv_keys_plan: 0, or
 * -1 when they do not read back. A key from before migration (no device
 * part) gives the defaults; one from before the prefetch (no token after
 * reuse) gives just in time. */
int srv_keys_device(const char *key, int *swap, mp_device_t *d) {
  char buf[256], *tok[20], *save = NULL, *t, *end;
  int n = 0;
  mp_device_init(d);
  *swap = 0;
  snprintf(buf, sizeof(buf), "%s", key);
  for (t = strtok_r(buf, "|", &save); t && n < 20; t = strtok_r(NULL, "|", &save)) tok[n++] = t;
  if (n == 7) return 0; /* plan|hash|budget|solver|objective|accounting|version */
  if ((n != 15 && n != 16) || tok[6][0] != 'm' || (tok[6][1] != '0' && tok[6][1] != '1') || tok[6][2] != '\0')
    return -1;
  *swap = tok[6][1] == '1';
  d->h2d_bytes_per_s = strtod(tok[7], &end);
  if (*end) return -1;
  d->d2h_bytes_per_s = strtod(tok[8], &end);
  if (*end) return -1;
  d->latency_s = strtod(tok[9], &end);
  if (*end) return -1;
  if (strcmp(tok[10], "1") != 0 && strcmp(tok[10], "2") != 0) return -1;
  d->copy_engines = tok[10][0] - '0';
  if (strcmp(tok[11], "inf") == 0) {
    d->host_bytes = UINT64_MAX;
  } else {
    d->host_bytes = strtoull(tok[11], &end, 10);
    if (*end || tok[11][0] == '-') return -1;
  }
  d->time_unit_s = strtod(tok[12], &end);
  if (*end) return -1;
  if (tok[13][0] < '0' || tok[13][0] > '3' || tok[13][1] != '\0') return -1;
  d->intra_layer_reuse = (tok[13][0] - '0') & 1;
  d->allocator = ((tok[13][0] - '0') & 2) ? MP_ALLOCATOR_PYTORCH_CUDA : MP_ALLOCATOR_EXACT;
  if (n == 16) {
    /* the writer's form only: 1 to 4 digits, no sign, no leading zero */
    size_t len = strlen(tok[14]), i;
    if (len == 0 || len > 4 || tok[14][0] == '0') return -1;
    for (i = 0; i < len; i++)
      if (tok[14][i] < '0' || tok[14][i] > '9') return -1;
    d->prefetch_lookahead = (uint32_t)strtoul(tok[14], NULL, 10);
  }
  return mp_device_check(d, NULL) == 0 ? 0 : -1;
}

void srv_keys_plan(const srv_plan_params_t *p, char key[256]) {
  char dev[160];
  srv__device_key(dev, sizeof(dev), p->swap, &p->device);
  /* at most 117 + 128 + 10 characters (see srv__device_key) */
  if (snprintf(key, 256, "plan|%s|%llu|%s|%s|%s|%s|%s", p->graph_hash, (unsigned long long)p->budget,
               mp_solver_name(p->solver), mp_objective_name(p->objective), mp_accounting_name(p->accounting), dev,
               SRV_PLANNER_VERSION) >= 256)
    key[0] = '\0';
}

void srv_keys_frontier(const srv_plan_params_t *p, char key[256]) {
  char dev[160];
  srv__device_key(dev, sizeof(dev), p->swap, &p->device);
  if (snprintf(key, 256, "frontier|%s|%s|%s|%s", p->graph_hash, mp_solver_name(p->solver), dev,
               SRV_PLANNER_VERSION) >= 256)
    key[0] = '\0';
}
