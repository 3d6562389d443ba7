/* dp_family.c - the context of one lower-set DP (mp__dp_t): the graph's
 * activations, the family of lower sets the passes run over (exact, or
 * approximate when the exact one passes its limits), and the per-set
 * figures of the model that every pass reads.
 *
 * The figures (dp.h has the model): m(L) and t(L), back(L) = m(A(L)) +
 * m(B(L)), g(L) (the nodes of L with a successor outside L), F'(L) (the
 * boundary nodes that are not recompute:false), the sums of what every
 * segment keeps whatever its bounds (recompute:false nodes, saved bytes held
 * from the forward pass) and the saved bytes;
 * for the exact family also the tables its walks read.
 *
 * Why it is fast: the figures are computed once per family, and every pass
 * and every solve of a session reads them; each set's in one scan of its
 * bits, A and B marked with generation stamps instead of cleared arrays. The
 * walk tables copy what a walk needs of a set (its bytes, its cost term, its
 * cover edges) into each cover edge that leads to it (mp__dedge_t), so a
 * walk reads one record per step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_internal.h"

/* Free the family and all that is sized by it (the per-set figures, the
 * passes' state, the threads' walk state); the per-activation figures stay,
 * so that another family can be loaded (the fallback to the approx one). */
void mp__dp_free_family(mp__dp_t *c) {
  if (c->have_fam) mp_lowerset_family_free(&c->fam);
  c->have_fam = 0;
  free(c->m);
  free(c->back);
  free(c->gsrc);
  free(c->mr);
  free(c->sv);
  free(c->t);
  free(c->tr);
  free(c->fb_off);
  free(c->fb);
  free(c->approx_top);
  free(c->arena);
  free(c->front_off);
  free(c->front_len);
  free(c->fmark);
  free(c->vis);
  free(c->rr);
  free(c->wset);
  free(c->dedge);
  free(c->eagg);
  free(c->pm);
  free(c->pmi);
  free(c->rstack);
  free(c->rvis);
  free(c->live);
  free(c->ctgt);
  free(c->hk);
  while (c->n_xwalk > 0) {
    c->n_xwalk--;
    free(c->xwalk[c->n_xwalk].stack);
    free(c->xwalk[c->n_xwalk].fmark);
  }
  free(c->xwalk);
  c->xwalk = NULL;
  c->m = c->back = c->mr = c->gsrc = c->sv = NULL;
  c->t = c->tr = NULL;
  c->fb_off = c->fb = c->approx_top = NULL;
  c->arena = NULL;
  c->n_arena = c->cap_arena = 0;
  c->front_off = NULL;
  c->front_len = NULL;
  c->fmark = NULL;
  c->vis = NULL;
  c->rr = NULL;
  c->wset = NULL;
  c->dedge = NULL;
  c->eagg = NULL;
  c->pm = NULL;
  c->pmi = NULL;
  c->rstack = NULL;
  c->rvis = NULL;
  c->live = NULL;
  c->ctgt = NULL;
  c->hk = NULL;
  c->hq_done = c->ht_done = c->hq_part = 0;
}

/* Free everything c holds (c itself is the caller's; safe after a failed
 * or partial mp__dp_init). */
void mp__dp_free(mp__dp_t *c) {
  mp__dp_free_family(c);
  mp_actdag_free(&c->dag);
  free(c->nm);
  free(c->nt);
  free(c->nofree);
  free(c->nsv);
  free(c->nk);
  free(c->nc);
  free(c->cand);
  free(c->cand2);
  free(c->surv);
  free(c->stair3);
}

/* A context for g under `acc` (zeroed first): the activation DAG and the
 * per-activation figures, no family yet; one thread, no stop, no deadline. */
int mp__dp_init(mp__dp_t *c, const mp_graph_t *g, mp_accounting_t acc) {
  size_t v;
  int rc;
  memset(c, 0, sizeof(*c));
  c->threads = 1;
  c->g = g;
  c->acc = acc;
  c->tol = 1e-9 * (g->fwd_time > 1 ? g->fwd_time : 1);
  if ((rc = mp_actdag_init(&c->dag, g)) != 0) return rc;
  c->nm = malloc((c->dag.n ? c->dag.n : 1) * sizeof(uint64_t));
  c->nt = malloc((c->dag.n ? c->dag.n : 1) * sizeof(double));
  c->nofree = calloc(c->dag.n ? c->dag.n : 1, 1);
  c->nsv = calloc(c->dag.n ? c->dag.n : 1, sizeof(uint64_t));
  c->nk = malloc((c->dag.n ? c->dag.n : 1) * sizeof(uint64_t));
  c->nc = calloc(c->dag.n ? c->dag.n : 1, sizeof(uint64_t));
  if (!c->nm || !c->nt || !c->nofree || !c->nsv || !c->nk || !c->nc) return MP_ENOMEM;
  c->has_saved = acc == MP_ACCOUNTING_DEFAULT && g->saved_bytes > 0;
  for (v = 0; v < c->dag.n; v++) {
    const mp_node_t *nd = &g->nodes[c->dag.node[v]];
    c->nm[v] = nd->bytes;
    c->nt[v] = nd->time;
    /* The reference has no notion of recompute:false, nor of saved bytes. */
    c->nofree[v] = acc == MP_ACCOUNTING_DEFAULT && !nd->recompute;
    if (acc == MP_ACCOUNTING_DEFAULT && nd->workspace_bytes > c->max_ws) c->max_ws = nd->workspace_bytes;
    /* Saved bytes: in the step cost per segment, and in the kept memory of
     * the nodes that hold them from the forward pass on (mp__step_cost). */
    c->nk[v] = nd->bytes;
    if (c->has_saved) {
      c->nsv[v] = nd->saved_bytes;
      c->nk[v] = mp__sadd(nd->bytes, nd->saved_bytes);
      if (!c->nofree[v] && mp__saved_held(g, c->dag.node[v])) c->nc[v] = nd->saved_bytes;
    }
  }
  return 0;
}

/* Edges and bits the per-set scan goes through between two polls of
 * should_stop and the deadline: on a dense graph one set alone can take
 * millions (each of its nodes' successors), so the poll counts work, not
 * sets. */
#define MP__PREPARE_POLL_WORK (1u << 20)

/* Per-set quantities: m, t, back = m(A) + m(B), F' and the recompute:false
 * sums. Uses two stamp arrays over nodes to mark A and B once per set.
 * Polls (mp__poll) as it goes: MP_ECANCELED or MP_ETIMEDOUT stop it. */
int mp__dp_prepare(mp__dp_t *c) {
  const mp_actdag_t *d = &c->dag;
  mp_lowerset_family_t *f = &c->fam;
  size_t ns = f->n_sets, words = f->words, i, w, k, nfb = 0, cap_fb = 1024;
  uint32_t *mark = NULL, *list = NULL;
  uint32_t gen = 0;
  uint64_t work = 0;
  int rc = MP_ENOMEM;

  mp__progress_phase(c->should_stop, c->stop_arg, "prepare", 0);
  if ((rc = mp__poll(c)) != 0) return rc;
  rc = MP_ENOMEM;

  c->m = malloc(ns * sizeof(uint64_t));
  c->back = malloc(ns * sizeof(uint64_t));
  c->gsrc = malloc(ns * sizeof(uint64_t));
  c->mr = malloc(ns * sizeof(uint64_t));
  c->sv = malloc(ns * sizeof(uint64_t));
  c->t = malloc(ns * sizeof(double));
  c->tr = malloc(ns * sizeof(double));
  c->fb_off = malloc((ns + 1) * sizeof(uint32_t));
  c->fb = malloc(cap_fb * sizeof(uint32_t));
  c->front_off = malloc(ns * sizeof(size_t));
  c->front_len = calloc(ns, sizeof(uint32_t));
  c->vis = malloc(ns * sizeof(mp__vis_t));
  c->fmark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  c->rr = malloc(ns * sizeof(mp__rrec_t));
  c->ctgt = malloc(ns * sizeof(uint64_t));
  c->hk = malloc(ns * sizeof(uint64_t));
  c->hq_done = c->ht_done = c->hq_part = 0;
  mark = calloc(d->n ? d->n : 1, sizeof(uint32_t));
  list = malloc((d->n ? d->n : 1) * sizeof(uint32_t));
  if (!c->m || !c->back || !c->gsrc || !c->mr || !c->sv || !c->t || !c->tr || !c->fb_off || !c->fb ||
      !c->front_off || !c->front_len || !c->vis || !c->fmark || !c->rr || !c->ctgt || !c->hk || !mark || !list)
    goto out;
  if (!f->exact) {
    c->approx_top = malloc(ns * sizeof(uint32_t));
    if (!c->approx_top) goto out;
    for (i = 0; i < ns; i++) c->approx_top[i] = UINT32_MAX;
    for (k = 0; k < d->n; k++) c->approx_top[f->by_node[k]] = (uint32_t)k;
  }
  c->fb_off[0] = 0;
  for (i = 0; i < ns; i++) {
    const uint64_t *b = f->bits + i * words;
    uint64_t m = 0, mr = 0, ma = 0, mb = 0, mg = 0, sv = 0;
    double t = 0, tr = 0;
    size_t na = 0, a;
    if (work >= MP__PREPARE_POLL_WORK) {
      work = 0;
      mp__progress_phase(c->should_stop, c->stop_arg, "prepare", (double)i / (double)ns);
      if ((rc = mp__poll(c)) != 0) goto out;
      rc = MP_ENOMEM;
    }
    work += words;
    /* generation marks: 2*gen+1 = in A, 2*gen+2 = in B */
    gen++;
    if (gen > UINT32_MAX / 2 - 2) {
      memset(mark, 0, (d->n ? d->n : 1) * sizeof(uint32_t));
      gen = 1;
    }
    for (w = 0; w < words; w++) {
      uint64_t x = b[w];
      while (x) {
        uint32_t v = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(x));
        int boundary = 0;
        x &= x - 1;
        m += c->nm[v]; /* no overflow: activation_bytes fits */
        t += c->nt[v];
        sv += c->nsv[v]; /* nor here: activation_bytes + saved_bytes fits */
        if (c->nofree[v]) {
          mr += c->nk[v];
          tr += c->nt[v];
        } else {
          mr += c->nc[v];
        }
        work += d->succ_off[v + 1] - d->succ_off[v];
        for (k = d->succ_off[v]; k < d->succ_off[v + 1]; k++) {
          uint32_t s = d->succ[k];
          if ((b[s >> 6] >> (s & 63)) & 1u) continue;
          boundary = 1;
          if (mark[s] != 2 * gen + 1) {
            mark[s] = 2 * gen + 1;
            list[na++] = s;
            ma = mp__sadd(ma, c->nm[s]);
          }
        }
        if (boundary) mg = mp__sadd(mg, c->nm[v]);
        if (boundary && !c->nofree[v]) {
          if (nfb == cap_fb) {
            uint32_t *nf = realloc(c->fb, 2 * cap_fb * sizeof(uint32_t));
            if (nf == NULL) goto out;
            c->fb = nf;
            cap_fb *= 2;
          }
          c->fb[nfb++] = v;
        }
      }
    }
    /* B(L): nodes outside L that feed a node of A(L). A node may be in both
     * A and B; the model counts it in both sums (values and gradients). */
    for (a = 0; a < na; a++) {
      uint32_t s = list[a];
      work += d->pred_off[s + 1] - d->pred_off[s];
      for (k = d->pred_off[s]; k < d->pred_off[s + 1]; k++) {
        uint32_t u = d->pred[k];
        if ((b[u >> 6] >> (u & 63)) & 1u) continue;
        if (mark[u] == 2 * gen + 2) continue;
        /* u may already be marked as A: it is in B as well and counted in
         * both sums; the B mark keeps a second reader from adding it again. */
        mark[u] = 2 * gen + 2;
        mb = mp__sadd(mb, c->nm[u]);
      }
    }
    c->m[i] = m;
    c->t[i] = t;
    c->mr[i] = mr;
    c->sv[i] = sv;
    c->tr[i] = tr;
    c->back[i] = mp__sadd(ma, mb);
    c->gsrc[i] = mg;
    if (nfb > UINT32_MAX) goto out;
    c->fb_off[i + 1] = (uint32_t)nfb;
  }
  for (i = 0; i < ns; i++) c->ctgt[i] = c->acc == MP_ACCOUNTING_DEFAULT ? c->max_ws : c->back[i];
  if (f->exact) {
    size_t ne = f->down_off[ns];
    if ((uint64_t)ne + ns > UINT32_MAX) { /* pmi indexes pm, ne + ns entries */
      rc = MP_ELIMIT;
      goto out;
    }
    c->wset = malloc(ns * sizeof(*c->wset));
    c->dedge = malloc((ne ? ne : 1) * sizeof(*c->dedge));
    c->rstack = malloc(ns * sizeof(*c->rstack));
    c->rvis = calloc(ns, sizeof(*c->rvis));
    c->live = malloc(ns * sizeof(*c->live));
    c->eagg = malloc((ne ? ne : 1) * sizeof(*c->eagg));
    c->pm = malloc((ne + ns) * sizeof(*c->pm));
    c->pmi = malloc((ne ? ne : 1) * sizeof(*c->pmi));
    if (!c->wset || !c->dedge || !c->rstack || !c->rvis || !c->live || !c->eagg || !c->pm || !c->pmi)
      goto out;
    for (i = 0; i < ns; i++) {
      c->wset[i].m = c->m[i];
      c->wset[i].csrc = c->acc == MP_ACCOUNTING_DEFAULT ? c->gsrc[i] : 0;
      c->wset[i].dlo = f->down_off[i];
      c->wset[i].dhi = f->down_off[i + 1];
    }
    for (k = 0; k < ne; k++) {
      uint32_t t = f->down[k];
      c->dedge[k].s = t;
      c->dedge[k].v = f->down_node[k];
      c->dedge[k].m = c->wset[t].m;
      c->dedge[k].csrc = c->wset[t].csrc;
      c->dedge[k].dlo = c->wset[t].dlo;
      c->dedge[k].dhi = c->wset[t].dhi;
      /* the walk enters t by removing v and goes on removing nodes below
       * v only: t's edges before the first one at v or above (they are
       * sorted by node) */
      {
        uint32_t e = f->down_off[t];
        while (e < f->down_off[t + 1] && f->down_node[e] < f->down_node[k]) e++;
        c->pmi[k] = e + t; /* pm_base(t) + (e - down_off[t]) */
      }
    }
  }
  rc = 0;
out:
  free(mark);
  free(list);
  return rc;
}

/* Load c's family: the exact one when o->exact, unless its enumeration
 * passes the lower-set limit or the deadline counted from t0 (then *reason
 * says why, and the fallback family of dp_window.c answers), else the
 * approximate one; then its per-set figures. */
int mp__load_family(mp__dp_t *c, const mp_dp_options_t *o, double t0, char *reason,
                           size_t reason_len, int *exact_used) {
  int rc;
  *exact_used = 0;
  reason[0] = '\0';
  mp__progress_phase(o->should_stop, o->stop_arg, "lower_sets", -1);
  if (o->exact && o->window)
    snprintf(reason, reason_len, "the window family was asked for (solver window)");
  if (o->exact && !o->window) {
    mp_lowerset_limits_t lim;
    size_t seen = 0;
    memset(&lim, 0, sizeof(lim));
    lim.max_sets = o->max_lower_sets ? o->max_lower_sets : MP_DP_DEFAULT_MAX_LOWER_SETS;
    lim.deadline_at_ms = o->deadline_ms > 0 ? t0 + o->deadline_ms : 0;
    lim.should_stop = o->should_stop;
    lim.stop_arg = o->stop_arg;
    rc = mp_lowerset_enumerate(&c->dag, &lim, &c->fam, &seen);
    if (rc == 0) {
      c->have_fam = 1;
      *exact_used = 1;
    } else if (rc == MP_ELIMIT) {
      if (seen > lim.max_sets)
        snprintf(reason, reason_len, "more than %zu lower sets (the limit)", lim.max_sets);
      else
        snprintf(reason, reason_len, "the lower sets exceed the memory cap after %zu", seen);
    } else if (rc == MP_ETIMEDOUT) {
      c->timed_out = 1;
      snprintf(reason, reason_len,
               "the deadline of %.0f ms passed while enumerating lower sets (%zu so far)",
               o->deadline_ms, seen);
    } else {
      return rc;
    }
  }
  if (!c->have_fam) {
    if (o->exact) return mp__fallback_family(c, o); /* dp_window.c */
    c->deadline_at = 0; /* the approx DP runs without a deadline */
    if ((rc = mp_lowerset_approx_polled(&c->dag, c->should_stop, c->stop_arg, &c->fam)) != 0) return rc;
    c->have_fam = 1;
  }
  rc = mp__dp_prepare(c);
  if (rc == MP_ETIMEDOUT && *exact_used) {
    /* the deadline passed while the exact family's figures were made: the
     * fallback answers, as when it passes during the enumeration */
    snprintf(reason, reason_len, "the deadline of %.0f ms passed while preparing %zu lower sets", o->deadline_ms,
             c->fam.n_sets);
    mp__dp_free_family(c);
    *exact_used = 0;
    c->timed_out = 1;
    return mp__fallback_family(c, o);
  }
  return rc;
}
