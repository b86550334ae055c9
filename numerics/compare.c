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
#include "kern_internal.h" /* mpx_exec_start_some */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool is_low(const mpx_format *f) { return f && f->kind != MPX_FMT_FP32; }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

size_t mpx_value_bytes(const mpx_value *v) {
    if (!v || v->n <= 0 || v->borrowed) return 0;
    if (v->f) return (size_t)v->n * sizeof *v->f;
    if (v->i) return (size_t)v->n * sizeof *v->i;
    return 0;
}

void mpx_compare_free(mpx_compare *c) {
    if (!c) return;
    if (c->ref)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->ref[i]);
    if (c->cand)
        for (int i = 0; i < c->g->n_tensors; i++) mpx_value_free(&c->cand[i]);
    free(c->ref);
    free(c->cand);
    free(c->layers);
    free(c);
}

const mpx_layer *mpx_compare_layer(const mpx_compare *c, int tensor) {
    if (!c) return NULL;
    for (int i = 0; i < c->n_layers; i++)
        if (c->layers[i].tensor == tensor) return &c->layers[i];
    return NULL;
}

/* ---- jobs, and a second thread to share them ---------------------------------------
 * A node's reference, candidate and local steps read disjoint inputs (or
 * only read shared ones) and write their own outputs, and so do the metrics
 * of its outputs: each is a job that writes only its own slots, so running
 * them on two threads changes no result. */

typedef enum job_kind { JOB_REF, JOB_CAND, JOB_LOCAL, JOB_METRICS, JOB_METRICS_LOCAL } job_kind;

typedef struct job {
    job_kind kind;
    const mpx_node *n;
    /* a step */
    const mpx_assign *a;
    const mpx_value *vals;
    mpx_value *outs;
    size_t scratch;
    /* metrics */
    const mpx_tensor *t;
    const mpx_value *r, *c;
    const mpx_format *fmt;
    mpx_metrics *m;
    int cand;                 /* whose metrics (the candidate's index) */
    /* results */
    mpx_status st;
    double ms;
    mpx_error err;
} job;

static void run_job(job *j) {
    double t0 = now_ms();
    mpx_error_clear(&j->err);
    if (j->kind == JOB_METRICS || j->kind == JOB_METRICS_LOCAL)
        j->st = mpx_metrics_compute(j->r, j->c, j->fmt, j->m, &j->err);
    else
        j->st = mpx_exec_node(j->n, j->a, j->vals, j->kind == JOB_LOCAL, j->outs, &j->scratch,
                              &j->err);
    j->ms = now_ms() - t0;
}

/* One worker beside the calling thread; both take jobs from one batch. */
typedef struct pool {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    job *jobs;
    int n, next, finished;
    bool quit, running;
} pool;

static void *worker(void *arg) {
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->next >= p->n) pthread_cond_wait(&p->work, &p->mu);
        if (p->quit) break;
        job *j = &p->jobs[p->next++];
        pthread_mutex_unlock(&p->mu);
        run_job(j);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->n) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Without a worker (one thread asked for, or none could start) everything
 * runs here, in order. */
static void pool_start(pool *p) {
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->mu, NULL) != 0) return;
    if (pthread_cond_init(&p->work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        return;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        return;
    }
    if (pthread_create(&p->th, NULL, worker, p) != 0) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        return;
    }
    p->running = true;
}

static void pool_stop(pool *p) {
    if (!p->running) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    p->running = false;
}

static void run_jobs(pool *p, job *jobs, int n) {
    if (!p->running || n < 2) {
        for (int k = 0; k < n; k++) run_job(&jobs[k]);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->jobs = jobs;
    p->n = n;
    p->next = p->finished = 0;
    pthread_cond_signal(&p->work);
    while (p->next < p->n) {
        job *j = &p->jobs[p->next++];
        pthread_mutex_unlock(&p->mu);
        run_job(j);
        pthread_mutex_lock(&p->mu);
        p->finished++;
    }
    while (p->finished < p->n) pthread_cond_wait(&p->done, &p->mu);
    p->n = p->next = 0;
    pthread_mutex_unlock(&p->mu);
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
} stream;

static void note_peak(stream *s, size_t extra) {
    if (s->live + extra > s->peak) s->peak = s->live + extra;
}

static size_t outs_bytes(const mpx_value *outs, int n) {
    size_t b = 0;
    for (int j = 0; outs && j < n; j++) b += mpx_value_bytes(&outs[j]);
    return b;
}

static void cache_put(struct mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c);

/* A value no later step needs: freed, or with a cache moved into it (which
 * takes it only within its budget). */
static void drop(stream *s, int t) {
    s->live -= mpx_value_bytes(&s->ref[t]);
    for (int q = 0; q < s->nc; q++) s->live -= mpx_value_bytes(&s->cand[q][t]);
    if (s->cache) cache_put(s->cache, t, &s->ref[t], &s->cand[0][t]);
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
        memset(&outs[j], 0, sizeof outs[j]);
        outs[j].n = -1;
    }
}

static void free_outs(mpx_value *outs, int n) {
    for (int j = 0; outs && j < n; j++) mpx_value_free(&outs[j]);
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
            L->fmt = a && is_low(a->tensor[t->index]) ? a->tensor[t->index] : NULL;
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
        s->live -= outs_bytes(s->pend_l[q], n->n_outputs);
        free_outs(s->pend_l[q], n->n_outputs);
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
    run_jobs(&s->pool, s->batch, s->n_pend);
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
        if (local)
            S[1 + nc + q] = (job){.kind = JOB_LOCAL, .n = n, .a = s->a[q], .vals = s->ref,
                                  .outs = s->out_l[q]};
    }
    run_jobs(&s->pool, S, np + ns);
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
        for (int k = 0; k < ns; k++) all += S[k].scratch + outs_bytes(S[k].outs, no);
        note_peak(s, all);
    } else {
        /* One after the other: a step's input copies are gone before the next. */
        size_t made = 0;
        for (int k = 0; k < ns; k++) {
            size_t o = outs_bytes(S[k].outs, no);
            note_peak(s, made + S[k].scratch + o);
            made += o;
        }
    }
    store(s, n, s->out_r, s->ref);
    for (int q = 0; q < nc; q++) {
        store(s, n, s->out_c[q], s->cand[q]);
        if (!local) continue;
        s->live += outs_bytes(s->out_l[q], no);
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
    free_outs(v, n);
    free(v);
}

static void stream_free(stream *s) {
    /* The worker first: nothing may run while values go. */
    pool_stop(&s->pool);
    int nt = s->g->n_tensors;
    free_values(s->ref, nt);
    free_values(s->out_r, s->max_out);
    for (int q = 0; q < MAX_CANDS; q++) {
        free_values(s->cand[q], nt);
        free_values(s->out_c[q], s->max_out);
        free_values(s->out_l[q], s->max_out);
        free_values(s->pend_l[q], s->max_out);
    }
    free(s->uses);
    free(s->keep);
    free(s->batch);
    free(s->pend);
}

static void *alloc_n(int n, size_t size) { return calloc(n > 0 ? (size_t)n : 1u, size); }

static mpx_value *alloc_values(int n) {
    mpx_value *v = alloc_n(n, sizeof *v);
    for (int i = 0; v && i < n; i++) v[i].n = -1;
    return v;
}

/* ---- the incremental cache -----------------------------------------------------------
 * A run with a cache moves each value into it where a plain run frees it
 * (and copies the kept ones in at the end), and records the assignment it
 * ran under and its layers. A later run with the same graph and input bytes
 * compares the new assignment with the recorded one: a node whose precision
 * or any of whose input or output tensors' formats differ is dirty, and so
 * is every node reading a tensor a dirty node writes. The reference does
 * not depend on the assignment, so its cached values stand; clean nodes'
 * candidate values and layers stand too (same inputs, same formats, same
 * kernels: the same bits). Only dirty nodes run, on the cached candidate
 * values of their clean inputs, and only their layers' metrics are taken,
 * against the cached reference values. When a value that needs is not in
 * the cache (dropped over budget), the run is a full one, which refills the
 * cache. */

struct mpx_compare_cache {
    size_t budget, bytes;
    bool valid;                /* describes a complete run (below) */
    const mpx_graph *g;
    int n_tensors, n_nodes, n_inputs;
    mpx_value *inputs;         /* [n_inputs]: copies of that run's input values */
    mpx_value *ref, *cand;     /* [n_tensors]: values of tensors nodes compute */
    const mpx_format **tfmt;   /* [n_tensors]: the formats they were made in */
    mpx_node_prec *prec;       /* [n_nodes]: and the nodes' precisions */
    int n_layers;
    mpx_layer *layers;         /* that run's layers */
    /* Tensors a (run) node computes, by their producer's position: only they
     * are cached (constants and inputs come back from mpx_exec_start). The
     * values of order[0..evict) are dropped for good: the earliest go first,
     * and a value older than one dropped is not taken in. */
    int *rank;                 /* [n_tensors]: position in order, -1: not cached */
    int *order;
    int n_order, evict;
};

#define CACHE_DEFAULT_BUDGET ((size_t)512 << 20)

mpx_compare_cache *mpx_compare_cache_new(size_t budget_bytes) {
    mpx_compare_cache *k = calloc(1, sizeof *k);
    if (k) k->budget = budget_bytes ? budget_bytes : CACHE_DEFAULT_BUDGET;
    return k;
}

void mpx_compare_cache_clear(mpx_compare_cache *k) {
    if (!k) return;
    for (int i = 0; k->ref && i < k->n_tensors; i++) mpx_value_free(&k->ref[i]);
    for (int i = 0; k->cand && i < k->n_tensors; i++) mpx_value_free(&k->cand[i]);
    for (int i = 0; k->inputs && i < k->n_inputs; i++) mpx_value_free(&k->inputs[i]);
    free(k->inputs);
    free(k->ref);
    free(k->cand);
    free(k->tfmt);
    free(k->prec);
    free(k->layers);
    free(k->rank);
    free(k->order);
    size_t budget = k->budget;
    memset(k, 0, sizeof *k);
    k->budget = budget;
}

void mpx_compare_cache_free(mpx_compare_cache *k) {
    mpx_compare_cache_clear(k);
    free(k);
}

size_t mpx_compare_cache_bytes(const mpx_compare_cache *k) { return k ? k->bytes : 0; }

static void cache_drop(mpx_compare_cache *k, int t) {
    k->bytes -= mpx_value_bytes(&k->ref[t]) + mpx_value_bytes(&k->cand[t]);
    mpx_value_free(&k->ref[t]);
    mpx_value_free(&k->cand[t]);
}

static void cache_trim(mpx_compare_cache *k) {
    while (k->bytes > k->budget && k->evict < k->n_order) cache_drop(k, k->order[k->evict++]);
}

static void take(mpx_value *dst, mpx_value *src) {
    *dst = *src;
    memset(src, 0, sizeof *src);
    src->n = -1;
}

/* Takes r and c (leaving them absent) when t is cached and not dropped for
 * good; otherwise leaves them to the caller, who frees them. */
static void cache_put(mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c) {
    if (!k->rank || k->rank[t] < 0 || k->rank[t] < k->evict || r->borrowed || c->borrowed ||
        (r->n < 0 && c->n < 0)) /* (the run's last sweep drops absent values too) */
        return;
    cache_drop(k, t);
    k->bytes += mpx_value_bytes(r) + mpx_value_bytes(c);
    take(&k->ref[t], r);
    take(&k->cand[t], c);
    cache_trim(k);
}

/* A recomputed candidate value replaces the cached one (same rule). */
static void cache_put_cand(mpx_compare_cache *k, int t, mpx_value *c) {
    if (k->rank[t] < 0 || k->rank[t] < k->evict || c->borrowed) return;
    k->bytes -= mpx_value_bytes(&k->cand[t]);
    mpx_value_free(&k->cand[t]);
    k->bytes += mpx_value_bytes(c);
    take(&k->cand[t], c);
    cache_trim(k);
}

/* The format a value of t is held in and a node's precision under a, as
 * the executor reads them (fp32 written NULL): what decides its bits. */
static const mpx_format *fmt_of(const mpx_assign *a, int t) {
    return a && is_low(a->tensor[t]) ? a->tensor[t] : NULL;
}

static mpx_node_prec prec_of(const mpx_assign *a, int n) {
    mpx_node_prec p = {0};
    if (!a) return p;
    p = a->node[n];
    if (!is_low(p.compute)) p.compute = NULL;
    if (!is_low(p.output)) p.output = NULL;
    return p;
}

static bool same_prec(const mpx_node_prec *x, const mpx_node_prec *y) {
    return x->compute == y->compute && x->output == y->output && x->acc.fmt == y->acc.fmt &&
           x->acc.block == y->acc.block;
}

static bool same_value(const mpx_value *x, const mpx_value *y) {
    if (x->dtype != y->dtype || x->rank != y->rank || x->n != y->n || !x->f != !y->f ||
        !x->i != !y->i)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d]) return false;
    if (x->n <= 0) return true;
    size_t n = (size_t)x->n;
    return (!x->f || memcmp(x->f, y->f, n * sizeof *x->f) == 0) &&
           (!x->i || memcmp(x->i, y->i, n * sizeof *x->i) == 0);
}

/* The cache describes a run of this graph on these input bytes. */
static bool cache_fits(const mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs) {
    if (!k->valid || k->g != g || k->n_tensors != g->n_tensors || k->n_nodes != g->n_nodes ||
        k->n_inputs != g->n_inputs)
        return false;
    for (int i = 0; i < g->n_inputs; i++)
        if (!same_value(&k->inputs[i], &inputs[i])) return false;
    return true;
}

/* Empty, ready for a full run of g on inputs. */
static mpx_status cache_start(mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs,
                              mpx_error *err) {
    mpx_compare_cache_clear(k);
    int nt = g->n_tensors;
    k->g = g;
    k->ref = alloc_values(nt);
    k->cand = alloc_values(nt);
    k->n_tensors = nt;
    k->n_nodes = g->n_nodes;
    k->inputs = alloc_values(g->n_inputs);
    k->n_inputs = g->n_inputs;
    k->tfmt = alloc_n(nt, sizeof *k->tfmt);
    k->prec = alloc_n(g->n_nodes, sizeof *k->prec);
    k->rank = alloc_n(nt, sizeof *k->rank);
    k->order = alloc_n(nt, sizeof *k->order);
    if (!k->ref || !k->cand || !k->inputs || !k->tfmt || !k->prec || !k->rank || !k->order) {
        mpx_compare_cache_clear(k);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < nt; i++) k->rank[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && k->rank[t->index] < 0) {
                k->rank[t->index] = k->n_order;
                k->order[k->n_order++] = t->index;
            }
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        mpx_status st = mpx_value_copy(&k->inputs[i], &inputs[i], err);
        if (st != MPX_OK) {
            mpx_compare_cache_clear(k);
            return st;
        }
    }
    return MPX_OK;
}

/* After a full run c under a: its assignment, layers and kept values. Out
 * of memory leaves the cache empty (the run itself stands). */
static void cache_finish(mpx_compare_cache *k, const mpx_assign *a, const mpx_compare *c) {
    for (int i = 0; i < k->n_tensors; i++) k->tfmt[i] = fmt_of(a, i);
    for (int i = 0; i < k->n_nodes; i++) k->prec[i] = prec_of(a, i);
    k->layers = alloc_n(c->n_layers, sizeof *k->layers);
    if (!k->layers) {
        mpx_compare_cache_clear(k);
        return;
    }
    if (c->n_layers > 0) memcpy(k->layers, c->layers, (size_t)c->n_layers * sizeof *k->layers);
    k->n_layers = c->n_layers;
    for (int t = 0; t < k->n_tensors; t++) {
        if (k->rank[t] < k->evict || c->ref[t].n < 0 || c->cand[t].n < 0) continue;
        mpx_value r, v;
        if (mpx_value_copy(&r, &c->ref[t], NULL) != MPX_OK) {
            mpx_compare_cache_clear(k);
            return;
        }
        if (mpx_value_copy(&v, &c->cand[t], NULL) != MPX_OK) {
            mpx_value_free(&r);
            mpx_compare_cache_clear(k);
            return;
        }
        cache_put(k, t, &r, &v);
        mpx_value_free(&r);
        mpx_value_free(&v);
    }
    k->valid = true;
}

static bool kept(const mpx_graph *g, const mpx_compare_opts *opts, int t) {
    return (opts->keep && opts->keep[t]) || (g->tensors[t]->flags & MPX_T_OUTPUT);
}

/* A view of a cached value: the cache keeps it (freeing the view frees
 * nothing). */
static void view(mpx_value *dst, const mpx_value *src) {
    *dst = *src;
    if (dst->n >= 0) dst->borrowed = true;
}

/* The run from the cache k (which fits g and the inputs). MPX_OK with *out
 * NULL: a value it needs is not cached, run in full. The cache changes only
 * when the run succeeds. */
static mpx_status run_incremental(mpx_compare_cache *k, const mpx_graph *g, const mpx_assign *a,
                                  const mpx_value *inputs, const mpx_compare_opts *opts,
                                  mpx_compare **out, mpx_error *err) {
    int nt = g->n_tensors, nn = g->n_nodes, max_out = 1;
    *out = NULL;
    for (int i = 0; i < nn; i++)
        if (g->nodes[i]->n_outputs > max_out) max_out = g->nodes[i]->n_outputs;
    bool *dirty = alloc_n(nn, sizeof *dirty), *changed = alloc_n(nt, sizeof *changed),
         *layer = alloc_n(nt, sizeof *layer), *want = alloc_n(nt, sizeof *want);
    mpx_value *ref = alloc_values(nt), *cand = alloc_values(nt), *outs = alloc_values(max_out);
    mpx_compare *c = calloc(1, sizeof *c);
    mpx_status st = MPX_OK;
    if (c) {
        c->g = g;
        c->layers = alloc_n(k->n_layers, sizeof *c->layers);
        c->ref = alloc_values(nt);
        c->cand = alloc_values(nt);
    }
    if (!dirty || !changed || !layer || !want || !ref || !cand || !outs || !c || !c->layers || !c->ref ||
        !c->cand) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    /* What changed: formats first, then nodes in topological order. */
    for (int i = 0; i < k->n_layers; i++) layer[k->layers[i].tensor] = true;
    for (int t = 0; t < nt; t++) changed[t] = fmt_of(a, t) != k->tfmt[t];
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        mpx_node_prec p = prec_of(a, i);
        bool d = !same_prec(&p, &k->prec[i]);
        for (int j = 0; j < n->n_inputs && !d; j++) d = n->inputs[j] && changed[n->inputs[j]->index];
        for (int j = 0; j < n->n_outputs && !d; j++)
            d = n->outputs[j] && changed[n->outputs[j]->index];
        if (!d) continue;
        dirty[i] = true;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) changed[n->outputs[j]->index] = true;
    }
    /* Everything read from the cache must be there: candidate values of
     * dirty nodes' unchanged inputs, reference values of their layers, both
     * values of kept tensors. */
    bool ok = true;
    for (int i = 0; i < nn && ok; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_inputs && ok; j++) {
            const mpx_tensor *t = n->inputs[j];
            ok = !t || k->rank[t->index] < 0 || changed[t->index] || k->cand[t->index].n >= 0;
        }
        for (int j = 0; j < n->n_outputs && ok; j++) {
            const mpx_tensor *t = n->outputs[j];
            ok = !t || !layer[t->index] || k->ref[t->index].n >= 0;
        }
    }
    for (int t = 0; t < nt && ok; t++)
        if (k->rank[t] >= 0 && kept(g, opts, t))
            ok = k->ref[t].n >= 0 && (changed[t] || k->cand[t].n >= 0);
    if (!ok) goto done;

    /* Only the constants and inputs the dirty nodes read, and the kept
     * ones, are made (rounding every weight again cost more than
     * recomputing a late layer). */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; dirty[i] && j < n->n_inputs; j++)
            if (n->inputs[j]) want[n->inputs[j]->index] = true;
    }
    for (int t = 0; t < nt; t++) want[t] = want[t] || kept(g, opts, t);
    double t0 = now_ms();
    st = mpx_exec_start_some(g, NULL, inputs, want, ref, err);
    double t1 = now_ms();
    if (st == MPX_OK) st = mpx_exec_start_some(g, a, inputs, want, cand, err);
    c->ms_ref = t1 - t0;
    c->ms_cand = now_ms() - t1;
    if (st != MPX_OK) goto done;
    size_t live = 0, peak;
    for (int t = 0; t < nt; t++) live += mpx_value_bytes(&ref[t]) + mpx_value_bytes(&cand[t]);
    peak = live;
    for (int t = 0; t < nt; t++)
        if (k->rank[t] >= 0) {
            view(&ref[t], &k->ref[t]);
            view(&cand[t], &k->cand[t]);
        }
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        if (opts->cancel && *opts->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                               n->name, i + 1, nn);
            goto done;
        }
        size_t scratch = 0;
        double t2 = now_ms();
        st = mpx_exec_node(n, a, cand, false, outs, &scratch, err);
        c->ms_cand += now_ms() - t2;
        if (st != MPX_OK) goto done;
        size_t o = outs_bytes(outs, n->n_outputs);
        if (live + scratch + o > peak) peak = live + scratch + o;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) {
                mpx_value_free(&outs[j]);
                continue;
            }
            live -= mpx_value_bytes(&cand[t->index]);
            mpx_value_free(&cand[t->index]);
            take(&cand[t->index], &outs[j]);
            live += mpx_value_bytes(&cand[t->index]);
        }
        c->n_run++;
    }
    /* Layers: the cached ones, the dirty nodes' measured again. */
    for (int i = 0; i < k->n_layers; i++) {
        mpx_layer *L = &c->layers[c->n_layers++];
        *L = k->layers[i];
        L->fmt = fmt_of(a, L->tensor);
        if (!dirty[L->node]) continue;
        const mpx_tensor *t = g->tensors[L->tensor];
        double t2 = now_ms();
        mpx_error e;
        mpx_error_clear(&e);
        st = mpx_metrics_compute(&ref[t->index], &cand[t->index], L->fmt, &L->m, &e);
        c->ms_metrics += now_ms() - t2;
        if (st != MPX_OK) {
            const mpx_node *n = g->nodes[L->node];
            st = mpx_error_set(err, st, "node \"%s\" (%s): output \"%s\": %s", n->name, n->op_type,
                               t->name, e.msg);
            goto done;
        }
    }
    /* Kept values: copies of what the cache holds, inputs and constants as
     * mpx_exec_start made them. */
    for (int t = 0; t < nt; t++) {
        if (!kept(g, opts, t)) continue;
        if (k->rank[t] < 0) {
            take(&c->ref[t], &ref[t]);
            take(&c->cand[t], &cand[t]);
            continue;
        }
        if (ref[t].n >= 0 && (st = mpx_value_copy(&c->ref[t], &ref[t], err)) != MPX_OK) goto done;
        if (cand[t].n >= 0 && (st = mpx_value_copy(&c->cand[t], &cand[t], err)) != MPX_OK)
            goto done;
    }
    /* The cache now describes this run. */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            /* (an absent output replaces the cached value too) */
            mpx_value v;
            take(&v, &cand[t->index]);
            cache_put_cand(k, t->index, &v);
            mpx_value_free(&v);
        }
    }
    for (int t = 0; t < nt; t++) k->tfmt[t] = fmt_of(a, t);
    for (int i = 0; i < nn; i++) k->prec[i] = prec_of(a, i);
    memcpy(k->layers, c->layers, (size_t)k->n_layers * sizeof *k->layers);
    c->peak_bytes = peak;
    c->incremental = true;
    if (opts->progress) opts->progress(opts->progress_ctx, nn, nn);
    *out = c;
    c = NULL;
done:
    for (int t = 0; ref && t < nt; t++) mpx_value_free(&ref[t]);
    for (int t = 0; cand && t < nt; t++) mpx_value_free(&cand[t]);
    for (int j = 0; outs && j < max_out; j++) mpx_value_free(&outs[j]);
    free(ref);
    free(cand);
    free(outs);
    free(dirty);
    free(changed);
    free(layer);
    free(want);
    mpx_compare_free(c);
    return st;
}

/* The streamed full run of nc candidates (k: the cache, for one candidate). */
static mpx_status run_stream(const mpx_graph *g, const mpx_assign *const *a, int nc,
                             const mpx_value *inputs, const mpx_compare_opts *opts,
                             mpx_compare_cache *k, mpx_compare **out, mpx_error *err) {
    int nt = g->n_tensors;
    mpx_status st = MPX_OK;
    stream s = {.g = g, .nc = nc, .opts = opts, .max_out = 1, .cache = k};
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->n_outputs > s.max_out) s.max_out = g->nodes[i]->n_outputs;
    int max_pend = 2 * nc * s.max_out;
    s.ref = alloc_values(nt);
    s.uses = alloc_n(nt, sizeof *s.uses);
    s.keep = alloc_n(nt, sizeof *s.keep);
    s.out_r = alloc_values(s.max_out);
    s.batch = alloc_n(1 + 2 * nc + max_pend, sizeof *s.batch);
    s.pend = alloc_n(max_pend, sizeof *s.pend);
    bool ok = s.ref && s.uses && s.keep && s.out_r && s.batch && s.pend;
    for (int q = 0; q < nc; q++) {
        s.a[q] = a[q];
        s.c[q] = calloc(1, sizeof *s.c[q]);
        if (s.c[q]) {
            s.c[q]->g = g;
            s.c[q]->layers = alloc_n(nt, sizeof *s.c[q]->layers);
        }
        s.cand[q] = alloc_values(nt);
        s.out_c[q] = alloc_values(s.max_out);
        if (opts->local) {
            s.out_l[q] = alloc_values(s.max_out);
            s.pend_l[q] = alloc_values(s.max_out);
        }
        ok = ok && s.c[q] && s.c[q]->layers && s.cand[q] && s.out_c[q] &&
             (!opts->local || (s.out_l[q] && s.pend_l[q]));
    }
    if (!ok) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }
    if (opts->threads != 1) pool_start(&s.pool);
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
    for (int i = 0; i < nt; i++) s.keep[i] = kept(g, opts, i);

    double t0 = now_ms();
    st = mpx_exec_start(g, NULL, inputs, s.ref, err);
    double t1 = now_ms();
    for (int q = 0; q < nc; q++) {
        if (st == MPX_OK) st = mpx_exec_start(g, a[q], inputs, s.cand[q], err);
        s.c[q]->ms_ref = t1 - t0;
        s.c[q]->ms_cand = now_ms() - t1;
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
        s.c[q]->ref = alloc_values(nt);
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
        s.c[q]->cand = s.cand[q];
        s.cand[q] = NULL;
        out[q] = s.c[q];
        s.c[q] = NULL;
    }
    out[0]->ref = s.ref;
    s.ref = NULL;
    stream_free(&s);
    if (k) cache_finish(k, a[0], out[0]);
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
    if (k && cache_fits(k, g, inputs)) {
        mpx_status st = run_incremental(k, g, a[0], inputs, opts, out, err);
        if (st != MPX_OK || *out) return st;
    }
    /* A full run refills the cache; without memory for one, it runs without. */
    if (k && cache_start(k, g, inputs, NULL) != MPX_OK) k = NULL;
    return run_stream(g, a, n, inputs, opts, k, out, err);
}

mpx_status mpx_compare_run(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                           const mpx_compare_opts *opts, mpx_compare **out, mpx_error *err) {
    if (out) *out = NULL;
    if (!g || !out) return mpx_error_set(err, MPX_E_ARG, "no graph or no place for the result");
    const mpx_assign *one[1] = {a};
    return mpx_compare_run_many(g, one, 1, inputs, opts, out, err);
}
