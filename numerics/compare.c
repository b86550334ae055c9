/* compare.c - per-layer comparison of a candidate run against the fp32
 * reference, streamed node by node.
 *
 * Both runs advance together through the nodes in topological order, built
 * from the executor's own steps (mpx_exec_*), so every value is bit for bit
 * what mpx_run_graph computes. A layer's metrics are taken as soon as both
 * of its values exist (with a worker thread, beside the next node's steps),
 * and a value is freed once the last node reading it has run and its
 * metrics are taken, unless it is kept: a per-layer report then holds about
 * two live activation sets (what the widest cut of the graph needs in each
 * run), not two copies of every activation of the model. The local step
 * reads the reference values, which are alive at that point for the same
 * reason.
 *
 * Measured on PP-OCRv4 det at 1x3x640x640, fp16 (tests/mpx_run_model
 * --compare): 79.5 MB of values at the peak instead of 1331 MB for two
 * whole runs; the worker cut the wall time by about a third (2.9 s to
 * 1.9 s; with local 4.9 s to 3.3 s) on two cores. */
#include "compare_internal.h"

#include <stdlib.h>
#include <string.h>

void mpx_compare_free(mpx_compare *c) {
    if (!c) return;
    if (c->ref)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->ref[i]);
    if (c->cand)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->cand[i]);
    free(c->ref);
    free(c->cand);
    free(c->layers);
    free(c->body);
    mpx_samples_free(c->samples);
    free(c);
}

const mpx_layer *mpx_compare_layer(const mpx_compare *c, int tensor) {
    if (!c) return NULL;
    for (int i = 0; i < c->n_layers; i++)
        if (c->layers[i].tensor == tensor) return &c->layers[i];
    return NULL;
}

/* ---- the stream --------------------------------------------------------------------- */

/* Everything a streaming comparison holds while it runs: the reference and
 * nc candidates (several formats against one reference, as `compare fp16
 * bf16` asks: the reference runs once). With a worker, a node's metrics are
 * not taken at once but in the next node's batch, beside that node's steps
 * (a node's steps depend on each other's results only through values
 * already stored), so the two threads always have several jobs to share;
 * what the metrics read stays alive until they ran. */
enum { MAX_CANDS = MPX_COMPARE_MAX_CANDS };

typedef struct stream {
    const mpx_graph *g;
    int nc;                          /* candidates */
    const mpx_assign *a[MAX_CANDS];
    const mpx_compare_opts *opts;
    mpx_compare *c[MAX_CANDS];       /* one result per candidate */
    mpx_value *ref;                  /* [n_tensors]: live values of the reference */
    mpx_value *cand[MAX_CANDS];      /* [n_tensors]: and of each candidate */
    int *uses;                       /* [n_tensors]: nodes still to read the tensor */
    bool *keep;                      /* [n_tensors]: kept after the run */
    int max_out;
    mpx_value *out_r;                /* [max_out]: one node's outputs */
    mpx_value *out_c[MAX_CANDS];
    mpx_value *out_l[MAX_CANDS], *pend_l[MAX_CANDS]; /* local outputs being made / compared */
    job *batch;                      /* [1 + 2 nc + max_pend] */
    job *pend;                       /* [max_pend = 2 nc max_out]: metrics not run yet */
    int n_pend;
    const mpx_node *pend_node;       /* whose metrics they are (NULL: none) */
    pool pool;
    size_t live, peak;               /* bytes of non-borrowed values, local ones too */
    struct mpx_compare_cache *cache; /* NULL: dropped values are freed (one candidate only) */
    /* Figures inside bodies (opts->measure NULL): each candidate's sink, and
     * the probe its step of a node with a body reads. */
    bool bodies;
    mpx_body_sink sink[MAX_CANDS];
    mpx_body_probe probe[MAX_CANDS];
} stream;

/* Whether a run takes the figures inside bodies: full runs that measure
 * every layer (the run cache keeps none; search's runs measure a few). */
static bool takes_bodies(const mpx_compare_opts *opts) { return !opts->measure; }

static void note_peak(stream *s, size_t extra) {
    if (s->live + extra > s->peak) s->peak = s->live + extra;
}

size_t mpx_cmp_outs_bytes(const mpx_value *outs, int n) {
    size_t b = 0;
    for (int j = 0; outs && j < n; j++) b += mpx_value_bytes(&outs[j]);
    return b;
}

/* A value no later step needs: freed, or with a cache moved into it (which
 * takes it only within its budget). */
static void drop(stream *s, int t) {
    s->live -= mpx_value_bytes(&s->ref[t]);
    for (int q = 0; q < s->nc; q++) s->live -= mpx_value_bytes(&s->cand[q][t]);
    /* A layer the run does not measure needs no reference value in later
     * incremental runs of the same kind (only the candidate values feed
     * recomputed nodes): the cache keeps the candidate's alone, half the
     * bytes, so search's evaluations of det fit the default budget. A
     * later run that measures it finds no reference and runs in full. */
    if (s->cache && !mpx_cmp_measured(s->opts, t)) mpx_value_free(&s->ref[t]);
    if (s->cache) mpx_cmp_cache_put(s->cache, t, &s->ref[t], &s->cand[0][t]);
    mpx_value_free(&s->ref[t]);
    for (int q = 0; q < s->nc; q++) mpx_value_free(&s->cand[q][t]);
}

/* Move a node's outputs into a run's values; a node may recompute a tensor
 * that had a value before (as mpx_run_graph, it replaces it). */
static void store(stream *s, const mpx_node *n, mpx_value *outs, mpx_value *vals) {
    for (int j = 0; j < n->n_outputs; j++) {
        const mpx_tensor *t = n->outputs[j];
        if (!t || outs[j].n < 0) continue;
        s->live -= mpx_value_bytes(&vals[t->index]);
        mpx_value_free(&vals[t->index]);
        vals[t->index] = outs[j];
        s->live += mpx_value_bytes(&outs[j]);
        mpx_value_clear(&outs[j]);
    }
}

/* Queue the metrics of node n's float outputs, for every candidate; their
 * layers are listed now (node order, then output order) and filled when the
 * jobs run. */
static void queue_metrics(stream *s, const mpx_node *n) {
    s->n_pend = 0;
    s->pend_node = n;
    for (int q = 0; q < s->nc; q++) {
        mpx_compare *c = s->c[q];
        const mpx_assign *a = s->a[q];
        for (int k = 0; k < n->n_outputs; k++) {
            const mpx_tensor *t = n->outputs[k];
            if (!t || (t->flags & MPX_T_CONSTANT)) continue;
            const mpx_value *r = &s->ref[t->index], *v = &s->cand[q][t->index];
            if (r->n < 0 || v->n < 0 || !r->f || !v->f) continue;
            mpx_layer *L = &c->layers[c->n_layers++];
            memset(L, 0, sizeof *L);
            L->tensor = t->index;
            L->node = n->index;
            L->fmt = a && mpx_cmp_is_low(a->tensor[t->index]) ? a->tensor[t->index] : NULL;
            if (!mpx_cmp_measured(s->opts, t->index)) {
                mpx_cmp_set_unmeasured(L);
                continue;
            }
            s->pend[s->n_pend++] = (job){.kind = JOB_METRICS, .n = n, .t = t, .r = r, .c = v,
                                         .fmt = L->fmt, .m = &L->m, .cand = q};
            if (s->pend_l[q] && s->pend_l[q][k].n >= 0) {
                L->has_local = true;
                s->pend[s->n_pend++] =
                    (job){.kind = JOB_METRICS_LOCAL, .n = n, .t = t, .r = r,
                          .c = &s->pend_l[q][k], .fmt = L->fmt, .m = &L->local, .cand = q};
            }
        }
    }
}

/* After the pending metrics ran (results in done[0..n_pend)): their errors,
 * then free what only they still needed: the local outputs, and the node's
 * outputs that nothing reads. */
static mpx_status finish_metrics(stream *s, const job *done, mpx_error *err) {
    const mpx_node *n = s->pend_node;
    if (!n) return MPX_OK;
    mpx_status st = MPX_OK;
    for (int k = 0; k < s->n_pend; k++) {
        s->c[done[k].cand]->ms_metrics += done[k].ms;
        if (st == MPX_OK && done[k].st != MPX_OK)
            st = mpx_error_set(err, done[k].st, "node \"%s\" (%s): output \"%s\": %s", n->name,
                               n->op_type, done[k].t->name, done[k].err.msg);
    }
    for (int q = 0; q < s->nc; q++) {
        s->live -= mpx_cmp_outs_bytes(s->pend_l[q], n->n_outputs);
        mpx_k_free_values(s->pend_l[q], n->n_outputs);
    }
    s->n_pend = 0;
    s->pend_node = NULL;
    if (st != MPX_OK) return st;
    for (int j = 0; j < n->n_outputs; j++) {
        const mpx_tensor *t = n->outputs[j];
        if (t && s->uses[t->index] == 0 && !s->keep[t->index]) drop(s, t->index);
    }
    return MPX_OK;
}

/* Runs the pending metrics alone (the last node's, or every node's when
 * there is no worker). */
static mpx_status flush_metrics(stream *s, mpx_error *err) {
    if (!s->pend_node) return MPX_OK;
    memcpy(s->batch, s->pend, (size_t)s->n_pend * sizeof *s->batch);
    mpx_cmp_run_jobs(&s->pool, s->batch, s->n_pend);
    return finish_metrics(s, s->batch, err);
}

/* Node n: its steps (the reference, each candidate, each candidate's local
 * step; beside the previous node's metrics when there is a worker), stored;
 * then its inputs that no later node reads are freed and its metrics
 * queued. */
static mpx_status step(stream *s, const mpx_node *n, mpx_error *err) {
    int no = n->n_outputs, np = s->n_pend, nc = s->nc;
    bool local = s->opts->local;
    int ns = 1 + nc + (local ? nc : 0);
    /* The node's steps first, then the earlier metrics: the two threads
     * take jobs in order, and the steps are the long ones (so the batch
     * ends on short jobs, with less waiting at its end). */
    job *S = s->batch, *J = s->batch + ns;
    memcpy(J, s->pend, (size_t)np * sizeof *J);
    S[0] = (job){.kind = JOB_REF, .n = n, .a = NULL, .vals = s->ref, .outs = s->out_r};
    for (int q = 0; q < nc; q++) {
        S[1 + q] = (job){.kind = JOB_CAND, .n = n, .a = s->a[q], .vals = s->cand[q],
                         .outs = s->out_c[q]};
        if (s->bodies && n->body) {
            s->probe[q] = (mpx_body_probe){.ref_vals = s->ref, .sink = &s->sink[q], .top = n, .local = local};
            S[1 + q].probe = &s->probe[q];
        }
        if (local)
            S[1 + nc + q] = (job){.kind = JOB_LOCAL, .n = n, .a = s->a[q], .vals = s->ref,
                                  .outs = s->out_l[q]};
    }
    mpx_cmp_run_jobs(&s->pool, S, np + ns);
    for (int q = 0; q < nc; q++) {
        s->c[q]->ms_ref += S[0].ms;
        s->c[q]->ms_cand += S[1 + q].ms;
        if (local) s->c[q]->ms_local += S[1 + nc + q].ms;
    }
    /* The earlier node's errors first. */
    mpx_status st = finish_metrics(s, J, err);
    for (int k = 0; k < ns && st == MPX_OK; k++)
        if (S[k].st != MPX_OK) {
            if (err) *err = S[k].err;
            st = S[k].st;
        }
    if (st != MPX_OK) return st;
    if (s->pool.running) {
        /* The jobs may all have been alive at once. */
        size_t all = 0;
        for (int k = 0; k < ns; k++) all += S[k].scratch + mpx_cmp_outs_bytes(S[k].outs, no);
        note_peak(s, all);
    } else {
        /* One after the other: a step's input copies are gone before the next. */
        size_t made = 0;
        for (int k = 0; k < ns; k++) {
            size_t o = mpx_cmp_outs_bytes(S[k].outs, no);
            note_peak(s, made + S[k].scratch + o);
            made += o;
        }
    }
    store(s, n, s->out_r, s->ref);
    for (int q = 0; q < nc; q++) {
        store(s, n, s->out_c[q], s->cand[q]);
        if (!local) continue;
        s->live += mpx_cmp_outs_bytes(s->out_l[q], no);
        /* Local outputs wait for their metrics in the other buffer. */
        mpx_value *l = s->out_l[q];
        s->out_l[q] = s->pend_l[q];
        s->pend_l[q] = l;
    }
    /* Inputs this node was the last reader of (every metrics job reading
     * them has run: they were queued by earlier nodes). */
    for (int j = 0; j < n->n_inputs; j++) {
        const mpx_tensor *t = n->inputs[j];
        bool first = t != NULL;
        for (int q = 0; first && q < j; q++) first = n->inputs[q] != t;
        if (first && --s->uses[t->index] == 0 && !s->keep[t->index]) drop(s, t->index);
    }
    queue_metrics(s, n);
    return s->pool.running ? MPX_OK : flush_metrics(s, err);
}

static void free_values(mpx_value *v, int n) {
    mpx_k_free_values(v, n);
    free(v);
}

void stream_free(stream *s) {
    /* The worker first: nothing may run while values go. */
    mpx_cmp_pool_stop(&s->pool);
    int nt = s->g->n_tensors;
    free_values(s->ref, nt);
    free_values(s->out_r, s->max_out);
    for (int q = 0; q < MAX_CANDS; q++) {
        free_values(s->cand[q], nt);
        free_values(s->out_c[q], s->max_out);
        free_values(s->out_l[q], s->max_out);
        free_values(s->pend_l[q], s->max_out);
    }
    for (int q = 0; q < MAX_CANDS; q++) mpx_body_sink_free(&s->sink[q]);
    free(s->uses);
    free(s->keep);
    free(s->batch);
    free(s->pend);
}

void *mpx_cmp_alloc_n(int n, size_t size) { return calloc(n > 0 ? (size_t)n : 1u, size); }

mpx_value *mpx_cmp_alloc_values(int n) {
    mpx_value *v = mpx_cmp_alloc_n(n, sizeof *v);
    for (int i = 0; v && i < n; i++) v[i].n = -1;
    return v;
}

/* The streamed full run of nc candidates (k: the cache, for one candidate). */
static mpx_status run_stream(const mpx_graph *g, const mpx_assign *const *a, int nc,
                             const mpx_value *inputs, const mpx_compare_opts *opts,
                             mpx_compare_cache *k, mpx_compare **out, mpx_error *err) {
    int nt = g->n_tensors;
    mpx_status st = MPX_OK;
    stream s = {.g = g, .nc = nc, .opts = opts, .max_out = 1, .cache = k, .bodies = takes_bodies(opts)};
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->n_outputs > s.max_out) s.max_out = g->nodes[i]->n_outputs;
    int max_pend = 2 * nc * s.max_out;
    s.ref = mpx_cmp_alloc_values(nt);
    s.uses = mpx_cmp_alloc_n(nt, sizeof *s.uses);
    s.keep = mpx_cmp_alloc_n(nt, sizeof *s.keep);
    s.out_r = mpx_cmp_alloc_values(s.max_out);
    s.batch = mpx_cmp_alloc_n(1 + 2 * nc + max_pend, sizeof *s.batch);
    s.pend = mpx_cmp_alloc_n(max_pend, sizeof *s.pend);
    bool ok = s.ref && s.uses && s.keep && s.out_r && s.batch && s.pend;
    for (int q = 0; q < nc; q++) {
        s.a[q] = a[q];
        s.c[q] = calloc(1, sizeof *s.c[q]);
        if (s.c[q]) {
            s.c[q]->g = g;
            s.c[q]->layers = mpx_cmp_alloc_n(nt, sizeof *s.c[q]->layers);
        }
        s.cand[q] = mpx_cmp_alloc_values(nt);
        s.out_c[q] = mpx_cmp_alloc_values(s.max_out);
        if (opts->local) {
            s.out_l[q] = mpx_cmp_alloc_values(s.max_out);
            s.pend_l[q] = mpx_cmp_alloc_values(s.max_out);
        }
        ok = ok && s.c[q] && s.c[q]->layers && s.cand[q] && s.out_c[q] &&
             (!opts->local || (s.out_l[q] && s.pend_l[q]));
    }
    if (!ok) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }
    if (opts->threads != 1) mpx_cmp_pool_start(&s.pool);
    /* Readers per tensor, counted once per node however often it reads it. */
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            bool first = t != NULL;
            for (int q = 0; first && q < j; q++) first = n->inputs[q] != t;
            if (first) s.uses[t->index]++;
        }
    }
    for (int i = 0; i < nt; i++) s.keep[i] = mpx_cmp_kept(g, opts, i);

    double t0 = mpx_cmp_now_ms();
    st = mpx_exec_start(g, NULL, inputs, s.ref, err);
    double t1 = mpx_cmp_now_ms();
    for (int q = 0; q < nc; q++) {
        if (st == MPX_OK) st = mpx_exec_start(g, a[q], inputs, s.cand[q], err);
        s.c[q]->ms_ref = t1 - t0;
        s.c[q]->ms_cand = mpx_cmp_now_ms() - t1;
    }
    if (st != MPX_OK) goto fail;
    for (int i = 0; i < nt; i++) {
        s.live += mpx_value_bytes(&s.ref[i]);
        for (int q = 0; q < nc; q++) s.live += mpx_value_bytes(&s.cand[q][i]);
    }
    note_peak(&s, 0);
    /* Model inputs and constants no node reads (when not kept) go at once. */
    for (int i = 0; i < nt; i++)
        if (s.uses[i] == 0 && !s.keep[i]) drop(&s, i);

    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (opts->cancel && *opts->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                               n->name, i + 1, g->n_nodes);
            goto fail;
        }
        if (!mpx_exec_skipped(n)) {
            if ((st = step(&s, n, err)) != MPX_OK) goto fail;
            for (int q = 0; q < nc; q++) s.c[q]->n_run++;
        }
        if (opts->progress) opts->progress(opts->progress_ctx, i + 1, g->n_nodes);
    }
    if ((st = flush_metrics(&s, err)) != MPX_OK) goto fail;
    /* What is left is kept (anything else was dropped after its last reader;
     * the sweep only guards that rule): hand the arrays over, the
     * reference's kept values to the first result and copies to the others. */
    for (int i = 0; i < nt; i++)
        if (!s.keep[i]) drop(&s, i);
    for (int q = 1; q < nc; q++) {
        s.c[q]->ref = mpx_cmp_alloc_values(nt);
        if (!s.c[q]->ref) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            goto fail;
        }
        for (int i = 0; i < nt; i++)
            if (s.ref[i].n >= 0 && (st = mpx_value_copy(&s.c[q]->ref[i], &s.ref[i], err)) != MPX_OK)
                goto fail;
    }
    for (int q = 0; q < nc; q++) {
        s.c[q]->peak_bytes = s.peak;
        s.c[q]->body = mpx_body_finish(&s.sink[q], &s.c[q]->n_body);
        s.c[q]->cand = s.cand[q];
        s.cand[q] = NULL;
        out[q] = s.c[q];
        s.c[q] = NULL;
    }
    out[0]->ref = s.ref;
    s.ref = NULL;
    stream_free(&s);
    if (k) mpx_cmp_cache_finish(k, a[0], out[0]);
    return MPX_OK;
fail:
    stream_free(&s);
    for (int q = 0; q < nc; q++) mpx_compare_free(s.c[q]);
    if (k) mpx_compare_cache_clear(k);
    return st;
}

mpx_status mpx_compare_run_many(const mpx_graph *g, const mpx_assign *const *a, int n,
                                const mpx_value *inputs, const mpx_compare_opts *opts,
                                mpx_compare **out, mpx_error *err) {
    for (int q = 0; out && q < n && q < MAX_CANDS; q++) out[q] = NULL;
    if (!g || !out || !a) return mpx_error_set(err, MPX_E_ARG, "no graph or no place for the result");
    if (n < 1 || n > MAX_CANDS)
        return mpx_error_set(err, MPX_E_ARG, "%d candidates: from 1 to %d at once", n, MAX_CANDS);
    mpx_compare_opts none = {0};
    if (!opts) opts = &none;
    for (int q = 0; q < n; q++) {
        mpx_status st = mpx_exec_check(g, a[q], inputs, err);
        if (st != MPX_OK) return st;
    }
    /* Local runs neither use nor change the cache; it holds one candidate. */
    mpx_compare_cache *k = opts->local || n > 1 ? NULL : opts->cache;
    /* A run taking the figures inside bodies is a full one. */
    bool bodies = false;
    for (int i = 0; takes_bodies(opts) && i < g->n_nodes && !bodies; i++) bodies = g->nodes[i]->body != NULL;
    if (k && !bodies && mpx_cmp_cache_fits(k, g, inputs)) {
        mpx_status st = mpx_cmp_run_incremental(k, g, a[0], inputs, opts, out, err);
        if (st != MPX_OK || *out) return st;
    }
    /* A full run refills the cache; without memory for one, it runs without. */
    if (k && mpx_cmp_cache_start(k, g, inputs, NULL) != MPX_OK) k = NULL;
    return run_stream(g, a, n, inputs, opts, k, out, err);
}

mpx_status mpx_compare_run(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                           const mpx_compare_opts *opts, mpx_compare **out, mpx_error *err) {
    if (out) *out = NULL;
    if (!g || !out) return mpx_error_set(err, MPX_E_ARG, "no graph or no place for the result");
    const mpx_assign *one[1] = {a};
    return mpx_compare_run_many(g, one, 1, inputs, opts, out, err);
}
