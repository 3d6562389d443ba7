/* graph_io.c - format names, format detection and the load entry points
 * (buffer, file, already-parsed JSON) that dispatch to the three readers:
 * native (graph_json.c), Kusumoto text (kusumoto.c), node-link (nodelink.c).
 *
 * Detection looks at content only, never at file extensions: a JSON object
 * with a "links" key is node-link, any other JSON object is native, and text
 * whose first line starts with two non-negative integers is Kusumoto. JSON
 * input is parsed once here (rejecting duplicate keys) and the parsed value is
 * handed to the reader, so syntax errors are reported uniformly as MP_EPARSE
 * with jansson's line, column and text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats.h"

/* No graph input may exceed this, whatever the limits say: beyond it the
 * parsed form would not fit comfortably in memory next to the planner. */
#define MP__MAX_INPUT_BYTES ((size_t)1 << 30)

const char *mp_format_name(mp_format_t f) {
  switch (f) {
  case MP_FORMAT_AUTO: return "auto";
  case MP_FORMAT_NATIVE: return "native";
  case MP_FORMAT_KUSUMOTO: return "kusumoto";
  case MP_FORMAT_NODELINK: return "nodelink";
  }
  return "?";
}

int mp_format_parse(const char *s, mp_format_t *out) {
  static const mp_format_t all[] = {MP_FORMAT_AUTO, MP_FORMAT_NATIVE, MP_FORMAT_KUSUMOTO,
                                    MP_FORMAT_NODELINK};
  size_t i;
  if (s == NULL) return MP_EINVAL;
  for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (strcmp(s, mp_format_name(all[i])) == 0) {
      *out = all[i];
      return 0;
    }
  return MP_EINVAL;
}

static int mp__is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Offset of the first byte that is neither whitespace nor a UTF-8 byte-order
 * mark; `len` when there is none. */
static size_t mp__skip_ws(const char *buf, size_t len) {
  size_t i = 0;
  if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
      (unsigned char)buf[2] == 0xBF)
    i = 3;
  while (i < len && mp__is_space(buf[i])) i++;
  return i;
}

/* Does the line starting at buf[i] begin with two non-negative integers
 * separated by blanks (the Kusumoto header "N M")? */
static int mp__starts_with_two_ints(const char *buf, size_t len, size_t i) {
  int k;
  for (k = 0; k < 2; k++) {
    size_t start;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t')) i++;
    start = i;
    while (i < len && buf[i] >= '0' && buf[i] <= '9') i++;
    if (i == start) return 0;
    /* Each number must end at a blank or the end of the line. */
    if (i < len && !mp__is_space(buf[i])) return 0;
  }
  return 1;
}

mp_format_t mp_format_detect(const char *buf, size_t len) {
  size_t i;
  if (buf == NULL) return MP_FORMAT_AUTO;
  i = mp__skip_ws(buf, len);
  if (i == len) return MP_FORMAT_AUTO;
  if (buf[i] == '{') {
    /* Telling node-link from native needs the keys, so parse. A document that
     * does not parse is called native: its syntax error is what the caller
     * will get either way. */
    json_error_t jerr;
    json_t *v = json_loadb(buf, len, MP_JSON_LOAD_FLAGS, &jerr);
    mp_format_t f = MP_FORMAT_NATIVE;
    if (json_is_object(v) && json_object_get(v, "links") != NULL) f = MP_FORMAT_NODELINK;
    json_decref(v);
    return f;
  }
  if (mp__starts_with_two_ints(buf, len, i)) return MP_FORMAT_KUSUMOTO;
  return MP_FORMAT_AUTO;
}

/* Line and column (1-based, in bytes) of buf[off], for errors about the
 * start of the input. */
static void mp__line_col(const char *buf, size_t off, long *line, long *col) {
  size_t i;
  *line = 1;
  *col = 1;
  for (i = 0; i < off; i++) {
    if (buf[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

/* Parse JSON bytes; on failure fill `err` with MP_EPARSE and jansson's
 * position and text. */
static int mp__parse_json(const char *buf, size_t len, json_t **out, mp_error_t *err) {
  json_error_t jerr;
  json_t *v = json_loadb(buf, len, MP_JSON_LOAD_FLAGS, &jerr);
  if (v != NULL) {
    *out = v;
    return 0;
  }
  *out = NULL;
  if (json_error_code(&jerr) == json_error_numeric_overflow) {
    /* jansson holds integers as 64-bit signed; say so, since "too big
     * integer" alone does not tell the user what the bound is. */
    if (strstr(jerr.text, "integer") != NULL)
      return mp_error_set_line(err, MP_EPARSE, jerr.line, jerr.column,
                               "invalid JSON: %s (integers must be at most "
                               "9223372036854775807)",
                               jerr.text);
    return mp_error_set_line(err, MP_EPARSE, jerr.line, jerr.column,
                             "invalid JSON: %s (numbers must fit a 64-bit float)", jerr.text);
  }
  if (json_error_code(&jerr) == json_error_out_of_memory)
    return mp_error_set(err, MP_ENOMEM, "", "out of memory while parsing JSON");
  return mp_error_set_line(err, MP_EPARSE, jerr.line, jerr.column, "invalid JSON: %s", jerr.text);
}

/* Use `name` as the graph's name when the input carried none. */
static int mp__default_name(mp_graph_t *g, const char *name, mp_error_t *err) {
  if (name == NULL || name[0] == '\0' || (g->name && g->name[0] != '\0')) return 0;
  if (mp_graph_set_name(g, name) != 0) return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  return 0;
}

static int mp__finish(mp_graph_t **out, const char *name, mp_error_t *err) {
  int rc = mp__default_name(*out, name, err);
  if (rc != 0) {
    mp_graph_free(*out);
    *out = NULL;
  }
  return rc;
}

int mp_graph_load_json(json_t *value, const char *base, mp_format_t fmt, const char *name,
                       const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                       mp_error_t *err) {
  int rc;

  *out = NULL;
  if (base == NULL) base = "$";
  if (used) *used = MP_FORMAT_AUTO;
  if (value == NULL) return mp_error_set(err, MP_EINVAL, base, "no graph given");
  if (fmt == MP_FORMAT_AUTO) {
    if (json_is_object(value))
      fmt = json_object_get(value, "links") != NULL ? MP_FORMAT_NODELINK : MP_FORMAT_NATIVE;
    else if (json_is_string(value))
      fmt = MP_FORMAT_KUSUMOTO;
    else
      return mp_error_set(err, MP_EINVAL, base,
                          "cannot detect the graph format: expected a JSON object (native or "
                          "node-link) or a string holding Kusumoto text");
  }
  /* Reported even when the reader then fails, so callers can say which
   * format's rules the input broke. */
  if (used) *used = fmt;

  switch (fmt) {
  case MP_FORMAT_NATIVE:
    rc = mp_native_from_json(value, base, lim, out, err);
    break;
  case MP_FORMAT_NODELINK:
    rc = mp_nodelink_from_json(value, base, name ? name : "", lim, out, err);
    break;
  case MP_FORMAT_KUSUMOTO:
    if (!json_is_string(value))
      return mp_error_set(err, MP_EINVAL, base,
                          "a Kusumoto graph inside JSON must be a string holding its text");
    if (json_string_length(value) > MP__MAX_INPUT_BYTES)
      return mp_error_set(err, MP_ELIMIT, base,
                          "graph text is %zu bytes, the limit is %zu bytes (1 GiB)",
                          json_string_length(value), MP__MAX_INPUT_BYTES);
    rc = mp_kusumoto_parse(json_string_value(value), json_string_length(value),
                           name ? name : "", lim, out, err);
    break;
  default:
    return mp_error_set(err, MP_EINVAL, base, "unknown graph format %d", (int)fmt);
  }
  if (rc != 0) {
    /* Readers should leave *out NULL on error; make sure of it. */
    mp_graph_free(*out);
    *out = NULL;
    return rc;
  }
  return mp__finish(out, name, err);
}

int mp_graph_load_buffer(const char *buf, size_t len, mp_format_t fmt, const char *name,
                         const mp_limits_t *lim, mp_graph_t **out, mp_format_t *used,
                         mp_error_t *err) {
  size_t i;
  json_t *v;
  int rc;

  *out = NULL;
  if (used) *used = MP_FORMAT_AUTO;
  if (buf == NULL && len > 0) return mp_error_set(err, MP_EINVAL, "", "no input given");
  if (len > MP__MAX_INPUT_BYTES)
    return mp_error_set(err, MP_ELIMIT, "", "input is %zu bytes, the limit is %zu bytes (1 GiB)",
                        len, MP__MAX_INPUT_BYTES);
  i = buf ? mp__skip_ws(buf, len) : 0;
  if (fmt == MP_FORMAT_AUTO) {
    if (i == len) return mp_error_set_line(err, MP_EPARSE, 1, 1, "input is empty: no graph");
    if (buf[i] == '{' || buf[i] == '[') {
      /* JSON: node-link or native is decided from the parsed value below. */
    } else if (mp__starts_with_two_ints(buf, len, i)) {
      fmt = MP_FORMAT_KUSUMOTO;
    } else {
      long line, col;
      mp__line_col(buf, i, &line, &col);
      return mp_error_set_line(err, MP_EPARSE, line, col,
                               "cannot detect the graph format: expected a JSON object (native "
                               "or node-link) or Kusumoto text starting with two integers");
    }
  }
  if (fmt == MP_FORMAT_KUSUMOTO) {
    if (used) *used = fmt;
    rc = mp_kusumoto_parse(buf ? buf : "", len, name ? name : "", lim, out, err);
    if (rc != 0) {
      mp_graph_free(*out);
      *out = NULL;
      return rc;
    }
    return mp__finish(out, name, err);
  }
  if (fmt != MP_FORMAT_AUTO && fmt != MP_FORMAT_NATIVE && fmt != MP_FORMAT_NODELINK)
    return mp_error_set(err, MP_EINVAL, "", "unknown graph format %d", (int)fmt);
  if (i == len) return mp_error_set_line(err, MP_EPARSE, 1, 1, "input is empty: no graph");
  if ((rc = mp__parse_json(buf, len, &v, err)) != 0) return rc;
  rc = mp_graph_load_json(v, "$", fmt, name, lim, out, used, err);
  json_decref(v);
  return rc;
}

/* Graph name from a file path: base name, without its extension and without
 * the "cg_" prefix the Kusumoto graphs carry ("graphs/cg_vgg19.txt" ->
 * "vgg19"). Writes "" when nothing is left. */
static void mp__name_from_path(const char *path, char *out, size_t n) {
  const char *b = strrchr(path, '/');
  const char *dot;
  size_t len;
  b = b ? b + 1 : path;
  if (strncmp(b, "cg_", 3) == 0 && b[3] != '\0' && b[3] != '.') b += 3;
  dot = strrchr(b, '.');
  len = dot && dot != b ? (size_t)(dot - b) : strlen(b);
  if (len >= n) len = n - 1;
  memcpy(out, b, len);
  out[len] = '\0';
}

/* The size is checked up front for regular files and again while reading,
 * which also covers pipes and files that grow. */
int mp_read_file(const char *path, char **out, size_t *out_len, mp_error_t *err) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  char *buf = NULL;
  size_t cap = 0, n = 0;

  *out = NULL;
  *out_len = 0;
  if (f == NULL) {
    /* the two a user fixes, with their own codes; the rest are I/O */
    if (errno == ENOENT || errno == ENOTDIR) return mp_error_set(err, MP_ENOENT, "", "no such file");
    if (errno == EACCES || errno == EPERM)
      return mp_error_set(err, MP_EACCES, "", "permission denied: the file may not be read");
    return mp_error_set(err, MP_EIO, "", "cannot open %.300s: %s", path, strerror(errno));
  }
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
    if ((unsigned long long)st.st_size > MP__MAX_INPUT_BYTES) {
      fclose(f);
      return mp_error_set(err, MP_ELIMIT, "", "%.300s is %lld bytes, the limit is %zu (1 GiB)",
                          path, (long long)st.st_size, MP__MAX_INPUT_BYTES);
    }
    cap = (size_t)st.st_size + 1;
  }
  if (cap < 4096) cap = 4096;
  buf = malloc(cap);
  if (buf == NULL) {
    fclose(f);
    return mp_error_set(err, MP_ENOMEM, "", "out of memory");
  }
  for (;;) {
    size_t r;
    if (n + 1 >= cap) {
      /* Full: grow only if the file really has more (a regular file usually
       * fills the buffer sized from fstat exactly). */
      size_t ncap = cap * 2;
      char *nb;
      int c = fgetc(f);
      if (c == EOF) break;
      if (ncap > MP__MAX_INPUT_BYTES + 2) ncap = MP__MAX_INPUT_BYTES + 2;
      if (n + 1 >= MP__MAX_INPUT_BYTES + 1) {
        free(buf);
        fclose(f);
        return mp_error_set(err, MP_ELIMIT, "", "%.300s is larger than the limit of %zu bytes",
                            path, MP__MAX_INPUT_BYTES);
      }
      if ((nb = realloc(buf, ncap)) == NULL) {
        free(buf);
        fclose(f);
        return mp_error_set(err, MP_ENOMEM, "", "out of memory");
      }
      buf = nb;
      cap = ncap;
      buf[n++] = (char)c;
    }
    r = fread(buf + n, 1, cap - 1 - n, f);
    n += r;
    if (r == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(buf);
    fclose(f);
    return mp_error_set(err, MP_EIO, "", "cannot read %.300s: %s", path, strerror(e));
  }
  fclose(f);
  if (n > MP__MAX_INPUT_BYTES) {
    free(buf);
    return mp_error_set(err, MP_ELIMIT, "", "%.300s is larger than the limit of %zu bytes", path,
                        MP__MAX_INPUT_BYTES);
  }
  buf[n] = '\0';
  *out = buf;
  *out_len = n;
  return 0;
}

int mp_graph_load_file(const char *path, mp_format_t fmt, const mp_limits_t *lim,
                       mp_graph_t **out, mp_format_t *used, mp_error_t *err) {
  char name[256];
  char *buf;
  size_t len;
  int rc;

  *out = NULL;
  if (used) *used = MP_FORMAT_AUTO;
  if (path == NULL) return mp_error_set(err, MP_EINVAL, "", "no file given");
  if ((rc = mp_read_file(path, &buf, &len, err)) != 0) return rc;
  mp__name_from_path(path, name, sizeof(name));
  rc = mp_graph_load_buffer(buf, len, fmt, name[0] ? name : NULL, lim, out, used, err);
  free(buf);
  return rc;
}
