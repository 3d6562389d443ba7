/* json_read.h - the strict readers' shared helpers (graph_json.c), private
 * to proto/: type names for messages, JSON paths, known-key checks, and
 * typed getters that name the path of a wrong value. */
#ifndef MP_JSON_READ_H
#define MP_JSON_READ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* "an integer", "a string", ...: for "expected X, got Y" messages. */
const char *mp__jtype(const json_t *v);
/* out = a followed by b, cut to fit in n bytes. */
void mp__join(char *out, size_t n, const char *a, const char *b);
/* `key` with JSON escapes, cut short to fit. */
void mp__escape_key(char *out, size_t n, const char *key);
/* parent + ".key" (or ["key"] when it is not a plain identifier). */
void mp__key_path(char *out, size_t n, const char *parent, const char *key);
/* MP_EINVAL naming the first key of obj not in the NULL-terminated `known`. */
int mp__check_keys(json_t *obj, const char *parent, const char *const *known, const char *known_list,
                   mp_error_t *err);
int mp__get_string(json_t *v, const char *path, const char *field, const char **out, mp_error_t *err);
/* A JSON integer >= 0. */
int mp__get_u64(json_t *v, const char *path, const char *field, uint64_t *out, mp_error_t *err);
/* Any JSON number. */
int mp__get_number(json_t *v, const char *path, const char *field, double *out, mp_error_t *err);

#endif
