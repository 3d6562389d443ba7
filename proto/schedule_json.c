/* schedule_json.c - reading and writing memplan.schedule/1 documents and
 * writing simulation reports as JSON (jansson). The format and the memory
 * model are described in proto/schedule.md; validity of the steps themselves
 * is the simulator's business, this file only checks shape and names.
 */
#include "schedule_json.h"

#include "json_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int mp__path_err(mp_error_t *err, int code, const char *base, const char *sfx,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* mp_error_set with the path base + sfx ("$" + ".steps[3].node"). */
static int mp__path_err(mp_error_t *err, int code, const char *base, const char *sfx,
                        const char *fmt, ...) {
  char path[MP_ERROR_PATH_MAX], msg[MP_ERROR_MSG_MAX];
  va_list ap;
  snprintf(path, sizeof(path), "%s%s", base, sfx);
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return mp_error_set(err, code, path, "%s", msg);
}

int mp_schedule_from_json(const mp_graph_t *g, json_t *root, const char *base,
                          mp_schedule_t **out, mp_error_t *err) {
  json_t *fmt, *steps, *af;
  const char *key_path = ".steps";
  mp_schedule_t *s;
  size_t i, n;
  int auto_free = 0;

  *out = NULL;
  if (base == NULL) base = "$";
  if (g == NULL || !g->finalized)
    return mp_error_set(err, MP_EINVAL, base, "a schedule needs a finalized graph");
  if (!json_is_object(root))
    return mp_error_set(err, MP_EINVAL, base, "a schedule must be a JSON object");
  fmt = json_object_get(root, "format");
  if (fmt != NULL) {
    if (!json_is_string(fmt))
      return mp__path_err(err, MP_EINVAL, base, ".format", "%s", "format must be a string");
    if (strcmp(json_string_value(fmt), MP_SCHEDULE_FORMAT) != 0)
      return mp__path_err(err, MP_EINVAL, base, ".format",
                          "unknown schedule format '%.200s' (expected memplan.schedule/1)",
                          json_string_value(fmt));
  }
  af = json_object_get(root, "auto_free");
  if (af != NULL) {
    if (!json_is_boolean(af))
      return mp__path_err(err, MP_EINVAL, base, ".auto_free", "%s",
                          "auto_free must be true or false");
    auto_free = json_is_true(af);
  }
  steps = json_object_get(root, "steps");
  if (steps == NULL) {
    /* A plan answer is a schedule too: `memplan plan` and POST /v1/plans give
     * its steps, explicit frees included, as "schedule"; GET /v1/plans/{id}
     * nests that answer under "result". */
    json_t *res = json_object_get(root, "result");
    if ((steps = json_object_get(root, "schedule")) != NULL) {
      key_path = ".schedule";
    } else if (json_is_object(res) && (steps = json_object_get(res, "schedule")) != NULL) {
      key_path = ".result.schedule";
    } else {
      return mp_error_set(err, MP_EINVAL, base,
                          "missing field 'steps' (a schedule document, or a plan answer with "
                          "its 'schedule')");
    }
  }
  if (!json_is_array(steps))
    return mp__path_err(err, MP_EINVAL, base, key_path, "%s must be an array", key_path + 1);

  s = mp_schedule_new();
  if (s == NULL) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  s->auto_free = auto_free;
  n = json_array_size(steps);
  for (i = 0; i < n; i++) {
    json_t *st = json_array_get(steps, i), *jop, *jnode;
    char sfx[64];
    const char *key;
    json_t *val;
    mp_step_op_t op;
    long v;
    int rc;

    snprintf(sfx, sizeof(sfx), "%s[%zu]", key_path, i);
    if (!json_is_object(st)) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s",
                        "a step must be an object {\"op\": ..., \"node\": ...}");
      goto fail;
    }
    json_object_foreach(st, key, val) {
      if (strcmp(key, "op") != 0 && strcmp(key, "node") != 0) {
        rc = mp__path_err(err, MP_EINVAL, base, sfx,
                          "unknown field '%.200s' in a step (expected op and node)", key);
        goto fail;
      }
    }
    jop = json_object_get(st, "op");
    jnode = json_object_get(st, "node");
    if (jop == NULL) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s", "missing field 'op'");
      goto fail;
    }
    if (jnode == NULL) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s", "missing field 'node'");
      goto fail;
    }
    snprintf(sfx, sizeof(sfx), "%s[%zu].op", key_path, i);
    if (!json_is_string(jop)) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s",
                        "op must be a string: compute, recompute, free, backward, swap_out, "
                        "swap_in or wait");
      goto fail;
    }
    if (mp_step_op_parse(json_string_value(jop), &op) != 0) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx,
                        "unknown op '%.200s' (expected compute, recompute, free, backward, "
                        "swap_out, swap_in or wait)",
                        json_string_value(jop));
      goto fail;
    }
    if (auto_free && op == MP_STEP_FREE) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s",
                        "explicit free in an auto_free schedule (the simulator inserts frees)");
      goto fail;
    }
    snprintf(sfx, sizeof(sfx), "%s[%zu].node", key_path, i);
    if (!json_is_string(jnode)) {
      rc = mp__path_err(err, MP_EINVAL, base, sfx, "%s", "node must be a string (a node id)");
      goto fail;
    }
    v = mp_graph_find(g, json_string_value(jnode));
    if (v < 0) {
      rc = mp__path_err(err, MP_EUNKNOWN, base, sfx, "unknown node '%.200s'",
                        json_string_value(jnode));
      goto fail;
    }
    if (mp_schedule_push(s, op, (uint32_t)v) != 0) {
      rc = mp_error_set(err, MP_ENOMEM, "", "out of memory");
      goto fail;
    }
    continue;
  fail:
    mp_schedule_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int mp_schedule_load_buffer(const mp_graph_t *g, const char *buf, size_t len,
                            mp_schedule_t **out, mp_error_t *err) {
  json_error_t jerr;
  json_t *root;
  int rc;
  *out = NULL;
  if (buf == NULL) return mp_error_set(err, MP_EINVAL, "", "no input");
  root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL) {
    if (json_error_code(&jerr) == json_error_out_of_memory)
      return mp_error_set(err, MP_ENOMEM, "", "out of memory");
    return mp_error_set_line(err, MP_EPARSE, jerr.line, jerr.column, "invalid JSON: %s",
                             jerr.text);
  }
  rc = mp_schedule_from_json(g, root, "$", out, err);
  json_decref(root);
  return rc;
}

json_t *mp_schedule_to_json(const mp_graph_t *g, const mp_schedule_t *s) {
  json_t *root = json_object(), *steps = json_array();
  size_t i;
  if (root == NULL || steps == NULL || g == NULL || s == NULL) goto fail;
  if (json_object_set_new(root, "format", json_string(MP_SCHEDULE_FORMAT)) != 0) goto fail;
  if (s->auto_free && json_object_set_new(root, "auto_free", json_true()) != 0) goto fail;
  for (i = 0; i < s->n_steps; i++) {
    const mp_step_t *st = &s->steps[i];
    json_t *o;
    if (st->node >= g->n_nodes || st->op >= MP_STEP_OP_COUNT) goto fail;
    o = json_pack("{s:s, s:s}", "op", mp_step_op_name(st->op), "node", g->nodes[st->node].id);
    if (o == NULL || json_array_append_new(steps, o) != 0) goto fail;
  }
  if (json_object_set(root, "steps", steps) != 0) goto fail;
  json_decref(steps);
  return root;
fail:
  json_decref(root);
  json_decref(steps);
  return NULL;
}

json_t *mp_sim_report_to_json(const mp_graph_t *g, const mp_sim_report_t *r, int with_timeline) {
  json_t *root = json_object(), *time, *rec, *tl;
  size_t i;
  if (root == NULL || g == NULL || r == NULL) goto fail;
  if (mp_json_set(root, "valid", json_true()) || mp_json_set(root, "peak_bytes", mp_json_u64(r->peak_bytes)) ||
      mp_json_set(root, "peak_step", json_integer((json_int_t)r->peak_step)) ||
      mp_json_set(root, "const_bytes", mp_json_u64(r->const_bytes)) ||
      (r->reserved_peak_bytes && mp_json_set(root, "reserved_peak_bytes", mp_json_u64(r->reserved_peak_bytes))))
    goto fail;
  time = json_object();
  if (mp_json_set(root, "time", time)) goto fail;
  if (mp_json_set(time, "forward", mp_json_number(r->time_forward)) ||
      mp_json_set(time, "backward", mp_json_number(r->time_backward)) ||
      mp_json_set(time, "recompute", mp_json_number(r->time_recompute)) ||
      mp_json_set(time, "stall", mp_json_number(r->time_stall)) ||
      mp_json_set(time, "total", mp_json_number(r->time_total)) ||
      mp_json_set(root, "overhead_pct", json_real(r->overhead_pct)))
    goto fail;
  rec = json_array();
  if (mp_json_set(root, "recomputed", rec)) goto fail;
  for (i = 0; i < r->n_recomputed; i++) {
    if (r->recomputed[i] >= g->n_nodes) goto fail;
    if (json_array_append_new(rec, json_string(g->nodes[r->recomputed[i]].id)) != 0) goto fail;
  }
  if (mp_json_set(root, "steps", json_integer((json_int_t)r->n_steps))) goto fail;
  /* Data migration: only for schedules that move or reuse memory, so the
   * report of a plain schedule keeps its shape. */
  if (r->n_swap_out > 0 || r->n_swap_in > 0 || r->n_swapped > 0 || r->n_reused > 0) {
    json_t *sw = json_array(), *tr = json_object();
    if (mp_json_set(root, "swapped", sw) || mp_json_set(root, "transfers", tr) ||
        mp_json_set(root, "host_peak_bytes", mp_json_u64(r->host_peak_bytes)) ||
        mp_json_set(root, "reused", mp_json_u64(r->n_reused)) ||
        mp_json_set(tr, "swap_out", mp_json_u64(r->n_swap_out)) ||
        mp_json_set(tr, "swap_in", mp_json_u64(r->n_swap_in)) ||
        mp_json_set(tr, "bytes_out", mp_json_u64(r->bytes_swapped_out)) ||
        mp_json_set(tr, "bytes_in", mp_json_u64(r->bytes_swapped_in)) ||
        mp_json_set(tr, "d2h_time", mp_json_number(r->time_copy_d2h)) ||
        mp_json_set(tr, "h2d_time", mp_json_number(r->time_copy_h2d)))
      goto fail;
    for (i = 0; i < r->n_swapped; i++) {
      if (r->swapped[i] >= g->n_nodes) goto fail;
      if (json_array_append_new(sw, json_string(g->nodes[r->swapped[i]].id)) != 0) goto fail;
    }
  }
  if (with_timeline) {
    tl = json_array();
    if (mp_json_set(root, "timeline", tl)) goto fail;
    for (i = 0; i < r->n_steps; i++)
      if (json_array_append_new(tl, mp_json_u64(r->timeline[i])) != 0) goto fail;
  }
  return root;
fail:
  json_decref(root);
  return NULL;
}
