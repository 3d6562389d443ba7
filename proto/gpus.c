/* gpus.c - the device catalogue (gpus.h): the shipped table, a catalogue
 * read from JSON, lookups and rendering. docs/devices.md explains each
 * figure. */
#include "gpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "request_json.h"
#include "units.h"

#define MIB (1024ULL * 1024ULL)

/* What the driver and the CUDA context hold before the first tensor: on an
 * A100-SXM4-40GB nvidia-smi's total is 40960 MiB and CUDA's
 * totalGlobalMem 42,298,834,944 B (40,339.5 MiB), so the driver keeps
 * about 620 MiB; a PyTorch process's context with lazy module loading (the
 * default since CUDA 12.2 and PyTorch 1.13) took 287,047,680 B (274 MiB).
 * 620 + 274 rounded up. */
#define MP__CONTEXT (896ULL * MIB)
/* The caching allocator's margin: 2% of the total (a policy, not a
 * measurement: its 2 MiB / 20 MiB block rounding and fragmentation). */
#define MP__RESERVE_PCT 2

typedef struct {
  const char *name;
  uint64_t total;
  const char *source;
} mp__row_t;

static const mp__row_t mp__rows[] = {
  {"v100-16gb", 16000000000ULL, "total: NVIDIA V100 datasheet, 16 GB HBM2, taken as 16e9 bytes (below the device's own count)"},
  {"v100-32gb", 32000000000ULL, "total: NVIDIA V100 datasheet, 32 GB HBM2, taken as 32e9 bytes (below the device's own count)"},
  {"t4-16gb", 15360ULL * MIB, "total: nvidia-smi 15360MiB (modal-labs/modal-client#2797)"},
  {"a10-24gb", 23028ULL * MIB, "total: nvidia-smi 23028MiB (modal-labs/modal-client#2797); NVML 24146608128 B (mayooot/detect-gpu#3)"},
  {"l4-24gb", 23034ULL * MIB, "total: nvidia-smi 23034MiB (modal-labs/modal-client#2797)"},
  {"rtx3090-24gb", 24576ULL * MIB, "total: nvidia-smi 24576MiB (noonghunna/club-3090#390)"},
  {"rtx4090-24gb", 24000000000ULL, "total: NVIDIA GeForce RTX 4090 specifications, 24 GB GDDR6X, taken as 24e9 bytes"},
  {"rtx5090-32gb", 32607ULL * MIB, "total: nvidia-smi 32607MiB (noonghunna/club-3090#1229)"},
  {"a100-40gb", 40960ULL * MIB, "total: nvidia-smi 40960MiB (modal-labs/modal-client#2797)"},
  {"l40s-48gb", 46068ULL * MIB, "total: nvidia-smi 46068MiB (modal-labs/modal-client#2797)"},
  {"a100-80gb", 81920ULL * MIB, "total: nvidia-smi 81920MiB (modal-labs/modal-client#2797)"},
  {"h100-80gb", 81559ULL * MIB, "total: nvidia-smi 81559MiB (modal-labs/modal-client#2797, NVIDIA/nccl#1264)"},
  {"h200-141gb", 141000000000ULL, "total: NVIDIA H200 datasheet, 141 GB HBM3e, taken as 141e9 bytes (below the device's own count)"},
};

#define MP__CONTEXT_SOURCE                                                                                        \
  "; context 896 MiB: the driver's reservation on an A100-SXM4-40GB (nvidia-smi 40960MiB against CUDA's "     \
  "totalGlobalMem 42298834944 B, bottlerocket-os/bottlerocket#3873) plus a lazily loaded PyTorch context "     \
  "(287047680 B, pytorch/pytorch#86509); reserve: 2% of the total for the caching allocator (a policy)"

uint64_t mp_gpu_usable(const mp_gpu_t *g) {
  uint64_t held = g->context_bytes + g->reserve_bytes;
  if (held < g->context_bytes || held >= g->total_bytes) return 0;
  return g->total_bytes - held;
}

void mp_gpus_free(mp_gpus_t *c) {
  size_t i;
  if (c == NULL) return;
  for (i = 0; i < c->n; i++) free(c->gpus[i].source);
  free(c->gpus);
  c->gpus = NULL;
  c->n = 0;
}

int mp_gpus_default(mp_gpus_t *out) {
  size_t i, n = sizeof(mp__rows) / sizeof(mp__rows[0]);
  memset(out, 0, sizeof(*out));
  if ((out->gpus = calloc(n, sizeof(*out->gpus))) == NULL) return MP_ENOMEM;
  for (i = 0; i < n; i++) {
    mp_gpu_t *g = &out->gpus[i];
    size_t len = strlen(mp__rows[i].source) + sizeof(MP__CONTEXT_SOURCE);
    snprintf(g->name, sizeof(g->name), "%s", mp__rows[i].name);
    g->total_bytes = mp__rows[i].total;
    g->context_bytes = MP__CONTEXT;
    g->reserve_bytes = g->total_bytes / 100 * MP__RESERVE_PCT;
    out->n = i + 1;
    if ((g->source = malloc(len)) == NULL) {
      mp_gpus_free(out);
      return MP_ENOMEM;
    }
    snprintf(g->source, len, "%s%s", mp__rows[i].source, MP__CONTEXT_SOURCE);
  }
  return 0;
}

static int mp__name_ok(const char *s) {
  size_t i;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
          s[i] == '-'))
      return 0;
  return i > 0 && i < MP_GPU_NAME_MAX;
}

/* reserve_bytes: a budget, or "<p>%" of total (p from 0 to 100). */
static int mp__reserve(const json_t *v, const char *path, uint64_t total, uint64_t *out, mp_error_t *err) {
  const char *s = json_string_value(v);
  size_t n = s ? strlen(s) : 0;
  if (n > 1 && s[n - 1] == '%') {
    char *end;
    double p = strtod(s, &end);
    if (end != s + n - 1 || !(p >= 0 && p <= 100))
      return mp_error_set(err, MP_EINVAL, path, "a percentage must be a number from 0 to 100 before '%%'");
    *out = (uint64_t)((double)total * p / 100.0);
    return 0;
  }
  return mp_json_budget(v, path, out, err);
}

int mp_gpus_from_json(const json_t *v, mp_gpus_t *out, mp_error_t *err) {
  static const char *const keys[] = {"name", "total_bytes", "context_bytes", "reserve_bytes", "source", NULL};
  const json_t *arr = json_object_get(v, "devices"), *e;
  const char *k;
  json_t *val;
  size_t i, j;
  int rc;
  memset(out, 0, sizeof(*out));
  if (!json_is_object(v) || !json_is_array(arr))
    return mp_error_set(err, MP_EINVAL, "$.devices", "a catalogue is {\"devices\": [...]}");
  if (json_array_size(arr) > MP_GPUS_MAX)
    return mp_error_set(err, MP_ELIMIT, "$.devices", "at most %d devices", MP_GPUS_MAX);
  if ((out->gpus = calloc(json_array_size(arr) + 1, sizeof(*out->gpus))) == NULL)
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  json_array_foreach(arr, i, e) {
    mp_gpu_t *g = &out->gpus[i];
    char path[64], fpath[96];
    const char *name = json_string_value(json_object_get(e, "name"));
    const json_t *src = json_object_get(e, "source");
    snprintf(path, sizeof(path), "$.devices[%zu]", i);
    out->n = i + 1;
    if (!json_is_object(e)) {
      rc = mp_error_set(err, MP_EINVAL, path, "a device is an object");
      goto fail;
    }
    json_object_foreach((json_t *)e, k, val) {
      for (j = 0; keys[j] && strcmp(keys[j], k) != 0; j++) {
      }
      if (keys[j] == NULL) {
        snprintf(fpath, sizeof(fpath), "%s.%s", path, k);
        rc = mp_error_set(err, MP_EINVAL, fpath, "unknown field");
        goto fail;
      }
    }
    snprintf(fpath, sizeof(fpath), "%s.name", path);
    if (name == NULL || !mp__name_ok(name)) {
      rc = mp_error_set(err, MP_EINVAL, fpath, "a name of 1 to %d characters a-z, 0-9, '.', '_' or '-'",
                        MP_GPU_NAME_MAX - 1);
      goto fail;
    }
    for (j = 0; j < i; j++)
      if (strcmp(out->gpus[j].name, name) == 0) {
        rc = mp_error_set(err, MP_EINVAL, fpath, "'%s' is named twice", name);
        goto fail;
      }
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(fpath, sizeof(fpath), "%s.total_bytes", path);
    if (json_object_get(e, "total_bytes") == NULL) {
      rc = mp_error_set(err, MP_EINVAL, fpath, "missing");
      goto fail;
    }
    if ((rc = mp_json_budget(json_object_get(e, "total_bytes"), fpath, &g->total_bytes, err)) != 0) goto fail;
    snprintf(fpath, sizeof(fpath), "%s.context_bytes", path);
    if (json_object_get(e, "context_bytes") &&
        (rc = mp_json_budget(json_object_get(e, "context_bytes"), fpath, &g->context_bytes, err)) != 0)
      goto fail;
    snprintf(fpath, sizeof(fpath), "%s.reserve_bytes", path);
    if (json_object_get(e, "reserve_bytes") &&
        (rc = mp__reserve(json_object_get(e, "reserve_bytes"), fpath, g->total_bytes, &g->reserve_bytes, err)) != 0)
      goto fail;
    if (mp_gpu_usable(g) == 0) {
      snprintf(fpath, sizeof(fpath), "%s.total_bytes", path);
      rc = mp_error_set(err, MP_EINVAL, fpath, "context_bytes and reserve_bytes leave nothing of the total");
      goto fail;
    }
    if (src && !json_is_string(src)) {
      snprintf(fpath, sizeof(fpath), "%s.source", path);
      rc = mp_error_set(err, MP_EINVAL, fpath, "must be a string");
      goto fail;
    }
    if (src && (g->source = strdup(json_string_value(src))) == NULL) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto fail;
    }
  }
  return 0;
fail:
  mp_gpus_free(out);
  return rc;
}

int mp_gpus_load_file(const char *path, mp_gpus_t *out, mp_error_t *err) {
  json_error_t je;
  json_t *v = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  int rc;
  memset(out, 0, sizeof(*out));
  if (v == NULL) return mp_error_set(err, MP_EINVAL, "$", "%s: line %d: %s", path, je.line, je.text);
  rc = mp_gpus_from_json(v, out, err);
  json_decref(v);
  return rc;
}

const mp_gpu_t *mp_gpus_find(const mp_gpus_t *c, const char *name) {
  size_t i;
  for (i = 0; c && i < c->n; i++)
    if (strcmp(c->gpus[i].name, name) == 0) return &c->gpus[i];
  return NULL;
}

json_t *mp_gpu_to_json(const mp_gpu_t *g) {
  json_t *o = json_object();
  if (o == NULL || mp_json_set(o, "name", json_string(g->name)) ||
      mp_json_set(o, "total_bytes", mp_json_u64(g->total_bytes)) ||
      mp_json_set(o, "context_bytes", mp_json_u64(g->context_bytes)) ||
      mp_json_set(o, "reserve_bytes", mp_json_u64(g->reserve_bytes)) ||
      mp_json_set(o, "usable_bytes", mp_json_u64(mp_gpu_usable(g))) ||
      (g->source && mp_json_set(o, "source", json_string(g->source)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *mp_gpus_to_json(const mp_gpus_t *c) {
  json_t *arr = json_array(), *o = json_object();
  size_t i;
  if (arr == NULL || o == NULL) goto fail;
  for (i = 0; i < c->n; i++)
    if (json_array_append_new(arr, mp_gpu_to_json(&c->gpus[i])) != 0) goto fail;
  if (json_object_set_new(o, "devices", arr) != 0) {
    arr = NULL;
    goto fail;
  }
  return o;
fail:
  json_decref(arr);
  json_decref(o);
  return NULL;
}
