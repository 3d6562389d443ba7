/* strmap.h - a small open-addressing map from borrowed C strings to indices.
 *
 * Used to resolve node ids. Keys are not copied: the caller keeps them alive
 * as long as the map. Private to the planner library (mp__ prefix).
 */
#ifndef MP_STRMAP_H
#define MP_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp__strmap_s {
  const char **keys;
  uint32_t *vals;
  size_t cap;   /* power of two, 0 when empty */
  size_t len;
} mp__strmap_t;

void mp__strmap_init(mp__strmap_t *m);
void mp__strmap_free(mp__strmap_t *m);
/* Insert key -> val. Returns 0, 1 if the key was already present (existing
 * value left in *old when old != NULL, nothing changed), or MP_ENOMEM. */
int mp__strmap_put(mp__strmap_t *m, const char *key, uint32_t val, uint32_t *old);
/* 0 and *val set if found, -1 otherwise. */
int mp__strmap_get(const mp__strmap_t *m, const char *key, uint32_t *val);

#endif
