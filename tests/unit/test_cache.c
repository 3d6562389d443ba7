/* test_cache.c - the daemon's in-memory cache (server/cache.c), linked in
 * directly: tagged values dropped with their row, and the tombstones that
 * keep a reader from putting a deleted row back. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../server/cache.h"
#include "suites.h"

static int has(srv_cache_t *c, const char *key) {
  char *v = NULL;
  size_t len;
  int rc = srv_cache_get(c, key, &v, &len);
  free(v);
  return rc == 0;
}

/* Dropping a tag drops every value made from that row, under every key,
 * and no other; a put of a value with that tag right after (a reader that
 * read the row before the sweep deleted it) is not kept until the window
 * ends, while other tags and untagged values are. No verdict waits on the
 * clock: the window is an hour while the late reader is refused, and the
 * end of a window is seen with one of 0 ms, over as soon as it starts. */
START_TEST(test_drop_tags_and_tombstones) {
  srv_cache_t *c = srv_cache_new(1 << 20);
  const char *gone[] = {"job-1"};
  ck_assert_ptr_nonnull(c);
  srv_cache_set_tombstone_ms(c, 3600 * 1000);
  ck_assert_int_eq(srv_cache_put_tagged(c, "view|job-1|0", "job-1", "v1", 2), 0);
  ck_assert_int_eq(srv_cache_put_tagged(c, "psum|job-1", "job-1", "s1", 2), 0);
  ck_assert_int_eq(srv_cache_put_tagged(c, "view|job-2|0", "job-2", "v2", 2), 0);
  ck_assert_int_eq(srv_cache_put(c, "plain", "p", 1), 0);
  ck_assert_uint_eq(srv_cache_drop_tags(c, gone, 1), 2);
  ck_assert(!has(c, "view|job-1|0") && !has(c, "psum|job-1"));
  ck_assert(has(c, "view|job-2|0") && has(c, "plain"));
  /* the late reader */
  ck_assert_int_eq(srv_cache_put_tagged(c, "view|job-1|0", "job-1", "v1", 2), 0);
  ck_assert(!has(c, "view|job-1|0"));
  ck_assert_int_eq(srv_cache_put_tagged(c, "view|job-3|0", "job-3", "v3", 2), 0);
  ck_assert(has(c, "view|job-3|0"));
  /* after the window the tag is an ordinary one again: a drop with a window
   * of 0 ms ends every window at once, and forgets job-1 with it */
  srv_cache_set_tombstone_ms(c, 0);
  {
    const char *other[] = {"job-9"};
    ck_assert_uint_eq(srv_cache_drop_tags(c, other, 1), 0);
  }
  ck_assert_int_eq(srv_cache_put_tagged(c, "view|job-1|0", "job-1", "v1", 2), 0);
  ck_assert(has(c, "view|job-1|0"));
  srv_cache_free(c);
}
END_TEST

Suite *suite_cache(void) {
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("tags");
  tcase_add_test(tc, test_drop_tags_and_tombstones);
  suite_add_tcase(s, tc);
  return s;
}
