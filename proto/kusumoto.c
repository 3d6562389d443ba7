/* kusumoto.c - reader for the plain-text graph format of Kusumoto et al.'s
 * reference solver (docs/model.md, "Kusumoto graphs"), producing a planning graph.
 *
 * Layout: a header `N M`; N variable lines `id bytes name`; M function records
 * (the first M/2 forward, the other M/2 their backward mirrors), each made of a
 * `forward`/`backward` line, a `k p` line, k lines `varid role`, p lines with
 * one output variable id, a line with the function type name and a line of
 * JSON attributes.
 *
 * Mapping: every variable becomes one node whose id is the variable id in
 * decimal. A variable some forward function produces is an activation (op =
 * the function type, inputs = the function's input variables in order); any
 * other variable is a source: `param` when its name is a path starting with
 * '/', `input` otherwise. Backward records are read and validated but add
 * nothing. The whole buffer is parsed with explicit lengths: it need not be
 * NUL-terminated and nothing past `len` is ever read.
 *
 * Errors carry the 1-based line (and the column of the offending token when
 * there is one) instead of a JSON path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

#define MP__NONE UINT32_MAX

/* ---- Lines and tokens ---------------------------------------------------- */

typedef struct {
  const char *buf;
  size_t len;
  size_t pos;  /* offset of the next unread line */
  long line;   /* 1-based number of the line returned last */
  size_t total; /* lines in the whole buffer, counted once */
} mp__lines_t;

/* Next line without its terminator ("\n" or "\r\n"); 0 at end of input. */
static int mp__next_line(mp__lines_t *r, const char **s, size_t *n) {
  const char *p, *nl;
  size_t l;
  if (r->pos >= r->len) return 0;
  p = r->buf + r->pos;
  nl = memchr(p, '\n', r->len - r->pos);
  l = nl ? (size_t)(nl - p) : r->len - r->pos;
  r->pos += l + (nl ? 1 : 0);
  if (l > 0 && p[l - 1] == '\r') l--;
  r->line++;
  *s = p;
  *n = l;
  return 1;
}

/* Lines from offset `pos` to the end (a last line without newline counts). */
static size_t mp__count_lines(const char *buf, size_t len, size_t pos) {
  size_t n = 0;
  while (pos < len) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    n++;
    if (nl == NULL) break;
    pos = (size_t)(nl - buf) + 1;
  }
  return n;
}

static int mp__is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

typedef struct {
  const char *s;
  size_t n;
  long col; /* 1-based */
} mp__tok_t;

/* Split a line on blanks; stores up to `max` tokens, returns how many there are. */
static size_t mp__tokens(const char *s, size_t n, mp__tok_t *t, size_t max) {
  size_t i = 0, count = 0;
  while (i < n) {
    size_t start;
    while (i < n && mp__is_space(s[i])) i++;
    if (i >= n) break;
    start = i;
    while (i < n && !mp__is_space(s[i])) i++;
    if (count < max) {
      t[count].s = s + start;
      t[count].n = i - start;
      t[count].col = (long)start + 1;
    }
    count++;
  }
  return count;
}

static int mp__is_blank(const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (!mp__is_space(s[i])) return 0;
  return 1;
}

/* Decimal digits only: no sign, no blanks, no trailing junk; refuses values
 * above UINT64_MAX. 0 ok, 1 not a number, 2 negative, 3 too large. */
static int mp__parse_u64(const mp__tok_t *t, uint64_t *out) {
  size_t i;
  uint64_t v = 0;
  if (t->n == 0) return 1;
  if (t->s[0] == '-') {
    for (i = 1; i < t->n; i++)
      if (t->s[i] < '0' || t->s[i] > '9') return 1;
    return t->n > 1 ? 2 : 1;
  }
  for (i = 0; i < t->n; i++) {
    unsigned d;
    if (t->s[i] < '0' || t->s[i] > '9') return 1;
    d = (unsigned)(t->s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return 3;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

/* ---- Parser state -------------------------------------------------------- */

typedef struct {
  long line;          /* line of the record header */
  const char *type;   /* function type name, borrowed from the buffer */
  size_t type_len;
  size_t in_off, k;   /* inputs: ins[in_off .. in_off + k) */
  mp_bwd_reads_t bwd_reads;
  int recompute;
  double time;
} mp__func_t;

typedef struct {
  mp__lines_t r;
  const mp_limits_t *lim;
  mp_error_t *err;
  uint64_t n_vars, n_funcs;
  /* per variable, indexed by id */
  uint64_t *vbytes;
  long *vline;        /* line of the variable's definition, 0 = not seen yet */
  int *vparam;        /* name starts with '/' */
  uint32_t *producer; /* index into funcs, or MP__NONE */
  long *out_line;     /* line naming it as a forward output */
  uint32_t *order;    /* ids in the order of their lines */
  /* forward functions */
  mp__func_t *funcs;
  size_t n_fw, cap_fw;
  uint32_t *ins;
  size_t n_ins, cap_ins;
  size_t max_k;
} mp__ku_t;

static void mp__ku_free(mp__ku_t *p) {
  free(p->vbytes);
  free(p->vline);
  free(p->vparam);
  free(p->producer);
  free(p->out_line);
  free(p->order);
  free(p->funcs);
  free(p->ins);
}

static int mp__nomem(mp__ku_t *p) {
  return mp_error_set_line(p->err, MP_ENOMEM, p->r.line, 0, "out of memory");
}

/* Report a number that failed to parse. `what` names the field. */
static int mp__bad_number(mp__ku_t *p, const mp__tok_t *t, int why, const char *what) {
  int n = t->n > 40 ? 40 : (int)t->n;
  if (why == 2)
    return mp_error_set_line(p->err, MP_EINVAL, p->r.line, t->col,
                             "%s must be non-negative, got '%.*s'", what, n, t->s);
  if (why == 3)
    return mp_error_set_line(p->err, MP_EINVAL, p->r.line, t->col,
                             "%s '%.*s%s' is larger than the largest 64-bit unsigned integer",
                             what, n, t->s, t->n > 40 ? "..." : "");
  return mp_error_set_line(p->err, MP_EPARSE, p->r.line, t->col,
                           "%s must be a non-negative integer, got '%.*s%s'", what, n, t->s,
                           t->n > 40 ? "..." : "");
}

/* Read the next line, failing with "expected <what>, got end of file". */
static int mp__need_line(mp__ku_t *p, const char **s, size_t *n, const char *what) {
  if (!mp__next_line(&p->r, s, n))
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line + 1, 0, "expected %s, got end of file",
                             what);
  if (memchr(*s, '\0', *n) != NULL)
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, 0, "line contains a NUL byte");
  return 0;
}

/* A line holding exactly `want` non-negative integers. */
static int mp__int_line(mp__ku_t *p, const char *s, size_t n, size_t want, uint64_t *vals,
                        const char *const *names, const char *layout) {
  mp__tok_t t[3];
  size_t cnt = mp__tokens(s, n, t, 3), i;
  int why;
  if (cnt != want) {
    long col = cnt > want ? t[want].col : 0;
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, col,
                             "expected '%s' (%zu integer%s), got %zu field%s", layout, want,
                             want == 1 ? "" : "s", cnt, cnt == 1 ? "" : "s");
  }
  for (i = 0; i < want; i++)
    if ((why = mp__parse_u64(&t[i], &vals[i])) != 0) return mp__bad_number(p, &t[i], why, names[i]);
  return 0;
}

static int mp__parse_header(mp__ku_t *p) {
  static const char *const names[] = {"variable count N", "function count M"};
  const char *s;
  size_t n, rest;
  uint64_t v[2];
  mp__tok_t t[2];
  int rc;
  if ((rc = mp__need_line(p, &s, &n, "the header line 'N M'")) != 0) return rc;
  if ((rc = mp__int_line(p, s, n, 2, v, names, "N M")) != 0) return rc;
  mp__tokens(s, n, t, 2);
  p->n_vars = v[0];
  p->n_funcs = v[1];
  /* Check the counts against what the buffer can hold before allocating. */
  rest = p->r.total - (size_t)p->r.line; /* lines not read yet */
  if (p->n_vars > rest)
    return mp_error_set_line(p->err, MP_EPARSE, 1, t[0].col,
                             "header declares %llu variables but only %zu lines follow",
                             (unsigned long long)p->n_vars, rest);
  if (p->n_funcs > rest)
    return mp_error_set_line(p->err, MP_EPARSE, 1, t[1].col,
                             "header declares %llu function records but only %zu lines follow",
                             (unsigned long long)p->n_funcs, rest);
  if (p->n_vars > p->lim->max_nodes || p->n_vars >= UINT32_MAX)
    return mp_error_set_line(p->err, MP_ELIMIT, 1, t[0].col,
                             "header declares %llu variables, more than the limit of %zu nodes",
                             (unsigned long long)p->n_vars, p->lim->max_nodes);
  if (p->n_funcs % 2 != 0)
    return mp_error_set_line(p->err, MP_EPARSE, 1, t[1].col,
                             "function count M = %llu is odd: expected M/2 forward records "
                             "followed by as many backward records",
                             (unsigned long long)p->n_funcs);
  return 0;
}

static int mp__parse_vars(mp__ku_t *p) {
  uint64_t i, nv = p->n_vars;
  size_t sz = nv ? (size_t)nv : 1;
  p->vbytes = calloc(sz, sizeof(*p->vbytes));
  p->vline = calloc(sz, sizeof(*p->vline));
  p->vparam = calloc(sz, sizeof(*p->vparam));
  p->producer = malloc(sz * sizeof(*p->producer));
  p->out_line = calloc(sz, sizeof(*p->out_line));
  p->order = malloc(sz * sizeof(*p->order));
  if (!p->vbytes || !p->vline || !p->vparam || !p->producer || !p->out_line || !p->order)
    return mp__nomem(p);
  for (i = 0; i < nv; i++) p->producer[i] = MP__NONE;

  for (i = 0; i < nv; i++) {
    const char *s;
    size_t n, cnt;
    mp__tok_t t[3];
    uint64_t id, bytes;
    char what[64];
    int rc, why;
    snprintf(what, sizeof(what), "variable %llu of %llu", (unsigned long long)i + 1,
             (unsigned long long)nv);
    if ((rc = mp__need_line(p, &s, &n, what)) != 0) return rc;
    cnt = mp__tokens(s, n, t, 3);
    if (cnt < 3)
      return mp_error_set_line(p->err, MP_EPARSE, p->r.line, 0,
                               "%s: expected 'id bytes name', got %zu field%s", what, cnt,
                               cnt == 1 ? "" : "s");
    if ((why = mp__parse_u64(&t[0], &id)) != 0) return mp__bad_number(p, &t[0], why, "variable id");
    if ((why = mp__parse_u64(&t[1], &bytes)) != 0)
      return mp__bad_number(p, &t[1], why, "variable size");
    if (id >= nv)
      return mp_error_set_line(p->err, MP_EINVAL, p->r.line, t[0].col,
                               "variable id %llu is out of range: the header declares %llu "
                               "variables (ids 0..%llu)",
                               (unsigned long long)id, (unsigned long long)nv,
                               (unsigned long long)nv - 1);
    if (p->vline[id] != 0)
      return mp_error_set_line(p->err, MP_EDUP, p->r.line, t[0].col,
                               "variable %llu is defined twice (first at line %ld)",
                               (unsigned long long)id, p->vline[id]);
    p->vline[id] = p->r.line;
    p->vbytes[id] = bytes;
    /* The name is the rest of the line; parameters are paths such as
     * "/predictor/conv1/W", data inputs are numbers or "_". */
    p->vparam[id] = t[2].s[0] == '/';
    p->order[i] = (uint32_t)id;
  }
  return 0;
}

/* Whether an attribute such as "_output_indexes_to_retain" lists anything. */
static int mp__retains(json_t *attrs, const char *key) {
  json_t *v = json_object_get(attrs, key);
  return json_is_array(v) && json_array_size(v) > 0;
}

static int mp__push_in(mp__ku_t *p, uint32_t v) {
  if (p->n_ins == p->cap_ins) {
    size_t nc = p->cap_ins ? 2 * p->cap_ins : 256;
    uint32_t *ni = realloc(p->ins, nc * sizeof(*ni));
    if (ni == NULL) return mp__nomem(p);
    p->ins = ni;
    p->cap_ins = nc;
  }
  p->ins[p->n_ins++] = v;
  return 0;
}

static int mp__parse_record(mp__ku_t *p, uint64_t r) {
  static const char *const kp_names[] = {"input count k", "output count p"};
  const uint64_t half = p->n_funcs / 2, nv = p->n_vars;
  const int forward = r < half;
  const char *s;
  size_t n, cnt, rest;
  mp__tok_t t[3];
  uint64_t kp[2], j;
  long hdr_line;
  char what[96];
  mp__func_t f;
  json_t *attrs;
  json_error_t jerr;
  int rc, why;

  snprintf(what, sizeof(what), "function record %llu of %llu", (unsigned long long)r + 1,
           (unsigned long long)p->n_funcs);
  if ((rc = mp__need_line(p, &s, &n, what)) != 0) return rc;
  hdr_line = p->r.line;
  cnt = mp__tokens(s, n, t, 2);
  if (cnt != 1 || ((t[0].n != 7 || memcmp(t[0].s, "forward", 7) != 0) &&
                   (t[0].n != 8 || memcmp(t[0].s, "backward", 8) != 0))) {
    int l = cnt ? (t[0].n > 40 ? 40 : (int)t[0].n) : 0;
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, cnt ? t[0].col : 0,
                             "%s: expected 'forward' or 'backward', got '%.*s'", what, l,
                             cnt ? t[0].s : "");
  }
  if (forward != (t[0].n == 7))
    return mp_error_set_line(
        p->err, MP_EPARSE, p->r.line, t[0].col,
        "%s is '%s' but the first M/2 = %llu records must be forward and the rest backward: "
        "the forward and backward counts differ",
        what, forward ? "backward" : "forward", (unsigned long long)half);

  if ((rc = mp__need_line(p, &s, &n, "the line 'k p'")) != 0) return rc;
  if ((rc = mp__int_line(p, s, n, 2, kp, kp_names, "k p")) != 0) return rc;
  /* k + p lines plus the type and attribute lines must still be there;
   * this also keeps absurd counts from driving any allocation. */
  rest = p->r.total - (size_t)p->r.line; /* lines not read yet */
  if (kp[0] > rest || kp[1] > rest || kp[0] + kp[1] + 2 > rest)
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, 0,
                             "%s declares %llu inputs and %llu outputs but only %zu lines remain",
                             what, (unsigned long long)kp[0], (unsigned long long)kp[1], rest);
  if (forward && p->n_ins + kp[0] > p->lim->max_edges)
    return mp_error_set_line(p->err, MP_ELIMIT, p->r.line, 0,
                             "more than %zu input references in total (the configured limit)",
                             p->lim->max_edges);
  if (forward && kp[1] == 0)
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, 0,
                             "%s: a forward function must have at least one output", what);

  memset(&f, 0, sizeof(f));
  f.line = hdr_line;
  f.in_off = p->n_ins;
  f.k = (size_t)kp[0];
  for (j = 0; j < kp[0]; j++) {
    uint64_t v;
    if ((rc = mp__need_line(p, &s, &n, "an input line 'varid role'")) != 0) return rc;
    cnt = mp__tokens(s, n, t, 3);
    if (cnt != 2)
      return mp_error_set_line(p->err, MP_EPARSE, p->r.line, cnt > 2 ? t[2].col : 0,
                               "%s: input %llu of %llu: expected 'varid role', got %zu field%s",
                               what, (unsigned long long)j + 1, (unsigned long long)kp[0], cnt,
                               cnt == 1 ? "" : "s");
    if ((why = mp__parse_u64(&t[0], &v)) != 0) return mp__bad_number(p, &t[0], why, "input variable id");
    if (v >= nv)
      return mp_error_set_line(p->err, MP_EUNKNOWN, p->r.line, t[0].col,
                               "%s: unknown input variable %llu (ids are 0..%llu)", what,
                               (unsigned long long)v, (unsigned long long)nv - 1);
    if (forward && (rc = mp__push_in(p, (uint32_t)v)) != 0) return rc;
  }
  for (j = 0; j < kp[1]; j++) {
    uint64_t v;
    const char *const oname[] = {"output variable id"};
    if ((rc = mp__need_line(p, &s, &n, "an output variable id")) != 0) return rc;
    if ((rc = mp__int_line(p, s, n, 1, &v, oname, "varid")) != 0) return rc;
    mp__tokens(s, n, t, 1);
    if (v >= nv)
      return mp_error_set_line(p->err, MP_EUNKNOWN, p->r.line, t[0].col,
                               "%s: unknown output variable %llu (ids are 0..%llu)", what,
                               (unsigned long long)v, (unsigned long long)nv - 1);
    if (forward) {
      if (p->producer[v] == (uint32_t)p->n_fw)
        return mp_error_set_line(p->err, MP_EDUP, p->r.line, t[0].col,
                                 "%s lists output variable %llu twice", what,
                                 (unsigned long long)v);
      if (p->producer[v] != MP__NONE)
        return mp_error_set_line(p->err, MP_EDUP, p->r.line, t[0].col,
                                 "variable %llu is produced by two forward functions (lines %ld "
                                 "and %ld)",
                                 (unsigned long long)v, p->funcs[p->producer[v]].line, hdr_line);
      p->producer[v] = (uint32_t)p->n_fw; /* the slot this record takes below */
      p->out_line[v] = p->r.line;
    }
  }

  if ((rc = mp__need_line(p, &s, &n, "the function type name")) != 0) return rc;
  cnt = mp__tokens(s, n, t, 2);
  if (cnt != 1)
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, cnt > 1 ? t[1].col : 0,
                             "%s: expected one function type name, got %zu fields", what, cnt);
  f.type = t[0].s;
  f.type_len = t[0].n;

  if ((rc = mp__need_line(p, &s, &n, "the JSON attribute line")) != 0) return rc;
  attrs = json_loadb(s, n, MP_JSON_LOAD_FLAGS, &jerr);
  if (attrs == NULL)
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, jerr.column > 0 ? jerr.column : 0,
                             "%s: attributes are not valid JSON: %s", what, jerr.text);
  if (!json_is_object(attrs)) {
    json_decref(attrs);
    return mp_error_set_line(p->err, MP_EPARSE, p->r.line, 1,
                             "%s: attributes must be a JSON object", what);
  }
  if (forward) {
    /* What backward reads, from what Chainer retains for it: the output
     * alone for ReLU, both for max pooling, the inputs otherwise. */
    int out_r = mp__retains(attrs, "_output_indexes_to_retain");
    int in_r = mp__retains(attrs, "_input_indexes_to_retain");
    f.bwd_reads = out_r ? (in_r ? MP_BWD_READS_BOTH : MP_BWD_READS_OUTPUT) : MP_BWD_READS_INPUTS;
    /* The reference's time convention (docs/model.md). */
    f.time = (f.type_len >= 4 && memcmp(f.type, "Conv", 4) == 0) ? 10.0 : 1.0;
    /* Re-running a random op (dropout) gives a different result. */
    f.recompute = !(f.type_len >= 7 && memcmp(f.type, "Dropout", 7) == 0);
    if (f.k > p->max_k) p->max_k = f.k;
    if (p->n_fw == p->cap_fw) {
      size_t nc = p->cap_fw ? 2 * p->cap_fw : 64;
      mp__func_t *nf = realloc(p->funcs, nc * sizeof(*nf));
      if (nf == NULL) {
        json_decref(attrs);
        return mp__nomem(p);
      }
      p->funcs = nf;
      p->cap_fw = nc;
    }
    p->funcs[p->n_fw++] = f;
  }
  json_decref(attrs);
  return 0;
}

/* Turn an error from the graph builder, whose locations are "line N" (the
 * `where` we gave) or whole-graph JSON paths, into a line-based one. */
static void mp__to_line_error(mp_error_t *err) {
  if (err == NULL || err->path[0] == '\0') return;
  if (strncmp(err->path, "line ", 5) == 0)
    err->line = strtol(err->path + 5, NULL, 10);
  else
    err->line = 1; /* a property of the whole graph: point at the header */
  err->column = 0;
  err->path[0] = '\0';
}

static char *mp__strndup(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int mp__build(mp__ku_t *p, mp_graph_t *g) {
  char (*in_ids)[24] = NULL;
  const char **in_ptrs = NULL;
  size_t i, kmax = p->max_k ? p->max_k : 1;
  int rc = 0;

  in_ids = malloc(kmax * sizeof(*in_ids));
  in_ptrs = malloc(kmax * sizeof(*in_ptrs));
  if (!in_ids || !in_ptrs) {
    rc = mp__nomem(p);
    goto out;
  }
  for (i = 0; i < p->n_vars && rc == 0; i++) {
    uint32_t v = p->order[i];
    mp_node_spec_t spec;
    char id[24], where[32];
    char *op = NULL;
    mp_node_spec_init(&spec);
    snprintf(id, sizeof(id), "%lu", (unsigned long)v);
    spec.id = id;
    spec.bytes = p->vbytes[v];
    spec.where = where;
    if (p->producer[v] != MP__NONE) {
      const mp__func_t *f = &p->funcs[p->producer[v]];
      size_t k;
      for (k = 0; k < f->k; k++) {
        snprintf(in_ids[k], sizeof(in_ids[k]), "%lu", (unsigned long)p->ins[f->in_off + k]);
        in_ptrs[k] = in_ids[k];
      }
      if ((op = mp__strndup(f->type, f->type_len)) == NULL) {
        rc = mp__nomem(p);
        break;
      }
      snprintf(where, sizeof(where), "line %ld", p->out_line[v]);
      spec.op = op;
      spec.inputs = in_ptrs;
      spec.n_inputs = f->k;
      spec.time = f->time;
      spec.bwd_reads = f->bwd_reads;
      spec.recompute = f->recompute;
      /* The format has no such flag. Chainer's backward kernels may write a
       * gradient into a dead input buffer, and the simulator only lets a
       * gradient take its activation's memory when that value is dead (no
       * later step reads it), so allowing it on every activation is safe; it
       * only matters when a device model turns intra-layer reuse on. */
      spec.grad_inplace = 1;
    } else {
      snprintf(where, sizeof(where), "line %ld", p->vline[v]);
      spec.kind = p->vparam[v] ? MP_KIND_PARAM : MP_KIND_INPUT;
    }
    rc = mp_graph_add_node(g, &spec, p->lim, p->err);
    free(op);
  }
out:
  free(in_ids);
  free(in_ptrs);
  return rc;
}

int mp_kusumoto_parse(const char *buf, size_t len, const char *name, const mp_limits_t *lim,
                      mp_graph_t **out, mp_error_t *err) {
  mp__ku_t p;
  mp_limits_t deflim;
  mp_graph_t *g = NULL;
  uint64_t r;
  const char *s;
  size_t n;
  int rc;

  *out = NULL;
  if (lim == NULL) {
    mp_limits_default(&deflim);
    lim = &deflim;
  }
  memset(&p, 0, sizeof(p));
  p.r.buf = buf ? buf : "";
  p.r.len = buf ? len : 0;
  p.r.total = mp__count_lines(p.r.buf, p.r.len, 0);
  p.lim = lim;
  p.err = err;

  if ((rc = mp__parse_header(&p)) != 0) goto fail;
  if ((rc = mp__parse_vars(&p)) != 0) goto fail;
  for (r = 0; r < p.n_funcs; r++)
    if ((rc = mp__parse_record(&p, r)) != 0) goto fail;
  while (mp__next_line(&p.r, &s, &n))
    if (!mp__is_blank(s, n)) {
      rc = mp_error_set_line(err, MP_EPARSE, p.r.line, 0,
                             "unexpected content after the last of the %llu function records",
                             (unsigned long long)p.n_funcs);
      goto fail;
    }
  if (p.n_fw == 0) {
    rc = mp_error_set_line(err, MP_EEMPTY, 1, 0,
                           "no forward function records: the graph has nothing to plan");
    goto fail;
  }
  if (name && strlen(name) > lim->max_name_len) {
    rc = mp_error_set_line(err, MP_ELIMIT, 0, 0, "graph name is longer than the limit of %zu bytes",
                           lim->max_name_len);
    goto fail;
  }

  if ((g = mp_graph_new()) == NULL) {
    rc = mp__nomem(&p);
    goto fail;
  }
  /* Times follow the reference solver's convention (10 for convolutions, 1
   * otherwise), not a physical unit: the unit is named "ref". */
  if (mp_graph_set_name(g, name ? name : "") != 0 || mp_graph_set_time_unit(g, "ref") != 0) {
    rc = mp__nomem(&p);
    goto fail;
  }
  if ((rc = mp__build(&p, g)) != 0 || (rc = mp_graph_finalize(g, lim, err)) != 0) {
    mp__to_line_error(err);
    goto fail;
  }
  mp__ku_free(&p);
  *out = g;
  return 0;

fail:
  mp_graph_free(g);
  mp__ku_free(&p);
  return rc;
}
