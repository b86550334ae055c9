/* compare.c - per-layer comparison of a candidate run against the fp32
 * reference, streamed node by node.
 *
 * Both runs advance together through the nodes in topological order, built
 * from the executor's own steps (mpx_exec_*), so every value is bit for bit
 * what mpx_run_graph computes. A layer's metrics are taken as soon as both
 * of its values exist, and a value is freed once the last job reading it
 * has run (later nodes' steps, its own node's metrics), unless it is kept:
 * a per-layer report then holds about a live activation set per run (what
 * the widest cut of the graph needs), not a copy of every activation of
 * the model per run. The local step reads the reference values, which are
 * alive at that point for the same reason.
 *
 * Measured on PP-OCRv4 det at 1x3x640x640, fp16 (tests/mpx_run_model
 * --compare): 79.5 MB of values at the peak instead of 1331 MB for two
 * whole runs. The jobs of each node (steps, metrics) run on two threads as
 * their inputs become ready (compare_jobs.c), a few nodes ahead where a
 * thread would otherwise wait: see WINDOW. */
#include "compare_internal.h"

#include <math.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void mpx_compare_free(mpx_compare *c) {
    if (!c) return;
    if (c->ref)
        for (int i = 0; i < c->n_values; i++) mpx_value_free(&c->ref[i]);
    if (c->cand)
        for (int i = 0; i < c->n_values; i++) mpx_value_free(&c->cand[i]);
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

/* a is worse than b: the larger rel_l2, NaN worse than any number */
static bool rel_l2_worse(double a, double b) { return isnan(a) ? !isnan(b) : a > b; }

const mpx_layer *mpx_compare_worst_layer(const mpx_compare *c, mpx_worst_of which) {
    const mpx_layer *w = NULL;
    for (int i = 0; c && i < c->n_layers; i++) {
        const mpx_layer *L = &c->layers[i];
        if (L->unmeasured) continue;
        if (which == MPX_WORST_OWN) {
            if (L->has_local && (!w || rel_l2_worse(L->local.rel_l2, w->local.rel_l2))) w = L;
            continue;
        }
        if (which == MPX_WORST_OUTPUT && !(c->g && (c->g->tensors[L->tensor]->flags & MPX_T_OUTPUT))) continue;
        if (!w || rel_l2_worse(L->m.rel_l2, w->m.rel_l2)) w = L;
    }
    return w;
}

mpx_run_totals mpx_compare_totals(const mpx_compare *c) {
    mpx_run_totals t = {0};
    for (int i = 0; i < c->n_layers; i++) {
        const mpx_layer *L = &c->layers[i];
        t.overflow += L->m.overflow;
        t.underflow += L->m.underflow;
        t.subnormal += L->m.subnormal;
        if (L->m.overflow) {
            t.layers_overflow++;
            if (!t.first_overflow) t.first_overflow = L;
        }
        if (L->m.underflow) t.layers_underflow++;
    }
    t.worst_out = mpx_compare_worst_layer(c, MPX_WORST_OUTPUT);
    t.out_rel_l2 = t.worst_out ? t.worst_out->m.rel_l2 : NAN;
    return t;
}

/* ---- the stream --------------------------------------------------------------------- */

/* Everything a streaming comparison holds while it runs: the reference and
 * nc candidates (several formats against one reference, as `compare fp16
 * bf16` asks: the reference runs once), and the jobs of the nodes in its
 * window.
 *
 * A node's jobs: the reference step R, each candidate's step C[q], each
 * candidate's local step L[q] (local runs), and the metrics M. R waits for
 * the reference steps of the nodes that make its inputs, C[q] for those
 * nodes' C[q], L[q] for their R (it reads reference values), M for the
 * node's own steps. A thread takes the first ready job: metrics first (its
 * values were just made, and it frees them), then steps, earliest node
 * first. Only the nodes of a window (the first unfinished one and the next
 * WINDOW - 1 in graph order) may run: what they make and read bounds the
 * values alive beyond the per-node stream's. A value is freed when the last
 * job reading it (steps of later nodes, its node's metrics) is done. */
enum { MAX_CANDS = MPX_COMPARE_MAX_CANDS };

/* Nodes whose jobs may run at once. On the benchmark's reports
 * (`mpx_bench <model> <shape> report`, 2 cores) a window of 4 is clearly
 * faster than running each node's steps and the previous node's metrics
 * as a batch with a barrier: a thread takes the next ready job instead of
 * waiting for the slower step. A window of 1 or 2 leaves threads waiting,
 * 8 gains nothing over 4. Lookahead alone would grow the peak of live
 * values; pick's peak rule (room kept for the first unfinished node's own
 * outputs) keeps it at what one node at a time holds. */
enum { WINDOW = 4 };

/* stream.shared's bits */
enum { SHARE_CAND = 1, SHARE_LOCAL = 2 };

/* One node of the window: its jobs (R, C[0..nc), L[0..nc) when local, M)
 * and the layers its metrics made, listed in the results (in node order)
 * when every job of it is done. */
typedef struct slot {
    int pos;                    /* the position it holds, -1: none */
    int left;                   /* jobs not done */
    job j[2 + 2 * MAX_CANDS];
    mpx_layer *lay[MAX_CANDS];  /* [max_out] each */
    int n_lay[MAX_CANDS];
} slot;

typedef struct stream {
    const mpx_graph *g;
    int nc;                          /* candidates */
    const mpx_assign *a[MAX_CANDS];
    const mpx_compare_opts *opts;
    mpx_compare *c[MAX_CANDS];       /* one result per candidate */
    mpx_value *ref;                  /* [n_tensors]: live values of the reference */
    mpx_value *cand[MAX_CANDS];      /* [n_tensors]: and of each candidate */
    int *uses;                       /* [n_tensors]: jobs still to read the tensor */
    int *ruses;                      /* [(1 + nc) x n_tensors]: those of each run (0 the reference, 1 + q candidate q) */
    bool rewrites;                   /* a tensor is written by two nodes */
    bool inplace;                    /* steps may write over an input no later job reads (plan_inplace) */
    bool *map_head;                  /* [n_tensors]: made in a mapping, a Concat growing it later (plan_joins) */
    bool bodies_present;             /* a node of the graph has a body */
    bool *keep;                      /* [n_tensors]: kept after the run */
    int max_out;
    size_t live, peak;               /* bytes of non-borrowed values, local ones too */
    struct mpx_compare_cache *cache; /* NULL: dropped values are freed (one candidate only) */
    /* Figures inside bodies (opts->measure NULL): each candidate's sink, and
     * the probe its step of a node with a body reads (one such node runs
     * at a time: pick). */
    bool bodies;
    mpx_body_sink sink[MAX_CANDS];
    mpx_body_probe probe[MAX_CANDS];
    /* The schedule: positions are the nodes that run, in graph order. */
    int n_pos, *order;               /* [n_pos]: node index of each position */
    int *dep0, *deps;                /* positions making position p's inputs: deps[dep0[p] .. dep0[p+1]) */
    unsigned char *rdone, *cdone[MAX_CANDS]; /* [n_pos]: R, C[q] done */
    unsigned char *shared[MAX_CANDS]; /* [n_pos]: SHARE_CAND: C[q], SHARE_LOCAL: L[q] copies R's outputs (plan_shared) */
    int nj;                          /* jobs a node: R, C[q], L[q], M */
    int window, head;                /* positions [head, head + window) may run */
    slot *slots;                     /* [window]: position p in slots[p % window] */
    int running;                     /* jobs running */
    size_t *est;                     /* [n_pos]: a step's output bytes from the inferred shapes (SIZE_MAX: unknown) */
    size_t ahead;                    /* estimated output bytes of running steps beyond head */
    long n_done;                     /* jobs done */
    size_t fin_scratch[2];           /* each thread's last step's input copies, */
    long fin_at[2];                  /* and when it finished (n_done) */
    int told;                        /* nodes the progress callback was told of (the caller's thread) */
    sched sched;
    bool stop;                       /* an error or a cancel: nothing more starts */
    int err_pos;                     /* its position (-1: a cancel) */
    mpx_status st;
    mpx_error err;
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

/* A value no later job needs: freed, or with a cache moved into it (which
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
    if (s->cache && mpx_cmp_cache_lean(s->cache, t)) {
        mpx_value_free(&s->ref[t]);
        mpx_value_free(&s->cand[0][t]);
    }
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

static const mpx_node *node_at(const stream *s, int pos) { return s->g->nodes[s->order[pos]]; }
/* A slot's jobs: R, C[0..nc), L[0..nc) when local, then M. */
static int job_m(const stream *s) { return s->nj - 1; }
static job *job_local(const stream *s, slot *sl, int q) { return &sl->j[1 + s->nc + q]; }

/* ---- the jobs ------------------------------------------------------------------------ */

/* The metrics of node n's float outputs: every candidate's against the
 * reference in one pass (mpx_metrics_compute_many reads the reference
 * once), and each local output's. Their layers go to the slot, in output
 * order, for the results. */
static mpx_status run_metrics(stream *s, slot *sl, const mpx_node *n, mpx_error *err) {
    for (int q = 0; q < s->nc; q++) sl->n_lay[q] = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        const mpx_tensor *t = n->outputs[k];
        if (!t || (t->flags & MPX_T_CONSTANT)) continue;
        const mpx_value *r = &s->ref[t->index];
        if (r->n < 0 || (!r->f && !r->d)) continue;
        const mpx_value *cs[MAX_CANDS];
        const mpx_format *fs[MAX_CANDS];
        mpx_layer *ls[MAX_CANDS];
        int m = 0;
        for (int q = 0; q < s->nc; q++) {
            const mpx_value *v = &s->cand[q][t->index];
            if (v->n < 0 || (!v->f && !v->d)) continue;
            const mpx_assign *a = s->a[q];
            mpx_layer *L = &sl->lay[q][sl->n_lay[q]++];
            memset(L, 0, sizeof *L);
            L->tensor = t->index;
            L->node = n->index;
            L->fmt = a && mpx_cmp_is_low(a->tensor[t->index]) ? a->tensor[t->index] : NULL;
            if (!mpx_cmp_measured(s->opts, t->index)) {
                mpx_cmp_set_unmeasured(L);
                continue;
            }
            cs[m] = v;
            fs[m] = L->fmt;
            ls[m++] = L;
        }
        if (m == 0) continue;
        mpx_metrics ms[MAX_CANDS];
        mpx_error e = {0};
        mpx_status st = mpx_metrics_compute_many(r, cs, fs, m, ms, &e);
        for (int i = 0; i < m; i++) ls[i]->m = ms[i];
        for (int q = 0; q < s->nc && st == MPX_OK; q++) {
            const mpx_value *loc = s->opts->local ? &job_local(s, sl, q)->outs[k] : NULL;
            if (!loc || loc->n < 0 || sl->n_lay[q] == 0) continue;
            mpx_layer *L = &sl->lay[q][sl->n_lay[q] - 1];
            if (L->tensor != t->index || L->unmeasured) continue;
            L->has_local = true;
            st = mpx_metrics_compute(r, loc, L->fmt, &L->local, &e);
        }
        if (st != MPX_OK)
            return mpx_error_set(err, st, "node \"%s\" (%s): output \"%s\": %s", n->name, n->op_type,
                                 t->name, e.msg);
    }
    return MPX_OK;
}

/* ---- writing over a dead input ---------------------------------------------------------
 * A step may write its output where an input's value lies when no other
 * job of its run will read that input (its producer's metrics have run,
 * and so have its other readers in that run):
 * - a pointwise node (kernels.def: MPX_KERNEL_POINTWISE) over an input of
 *   the output's size. A CNN's widest cut is a full-resolution activation
 *   chain's input and output (hard-swish: x, Clip's result and Mul's):
 *   two of them there instead of three, in the reference and every
 *   candidate.
 * - a Concat whose input 0 is its output's first part (every dim before
 *   the axis 1: a UNet's skip connection and its upsampled decoder map)
 *   grows that input's buffer into the output, where the buffer is a
 *   mapping of its own: mremap moves page tables, not bytes, so the cut
 *   holds the output and input 1, not both inputs beside the output. Such
 *   an input is made in a mapping when its producer runs (map_out).
 * The kernels are the same and compute the same bits; only where they go
 * changes. Decided when the job is taken (under the lock: the counts are
 * final for it then), the buffer adopted when it is done. With a cache,
 * only over values it does not take (compare_cache.c: cache_plan_lean),
 * and no join grows; not in graphs with bodies (kern_loop.c reads the
 * reference's values on its own). */

/* A value a Concat may grow into its output is made in a mapping of its
 * own only from this size on (smaller ones: the mapping's page rounding
 * and system calls for little gain). */
enum { MAP_MIN_BYTES = 1 << 18 };

/* Whether a value of this shape is the first part of Concat n's output:
 * every dim before the axis is 1. */
static bool concat_prefix(const mpx_node *n, int rank, const int64_t *dims) {
    if (n->op != MPX_OP_Concat || !mpx_node_attr(n, "axis") || rank < 1) return false;
    int64_t ax = mpx_node_attr_int(n, "axis", 0);
    if (ax < 0) ax += rank;
    if (ax < 0 || ax >= rank) return false;
    for (int64_t i = 0; i < ax; i++)
        if (dims[i] != 1) return false;
    return true;
}

static size_t static_bytes(const mpx_tensor *t) {
    if (!t || t->nelem <= 0 || (t->flags & (MPX_T_SEQUENCE | MPX_T_CONSTANT | MPX_T_FOLDED))) return 0;
    return (size_t)t->nelem * (mpx_dtype_is_float(t->dtype) && t->dtype != MPX_DT_DOUBLE ? 4u : 8u);
}

/* Which Concats grow their input 0: s->map_head marks those inputs (of
 * MAP_MIN_BYTES or more) for their producers to make in a mapping. A mapping
 * costs: its pages are fresh every run (faults, and munmap's TLB
 * shootdowns on two threads) and sit beside the heap's retained blocks
 * rather than reusing them: on PP-OCRv4 det, whose joins are far from its
 * widest cut, mapping every join head cost 25-30 MB of RSS and a few
 * percent of the report's time for no lower peak. So a join grows only
 * where it lowers the peak: the live bytes of one run, counted from the
 * inferred shapes on the stream's order (a value freed after its last
 * reader, a pointwise output over a dead input of its size, every join
 * grown), peak at M; a Concat whose cut without growing would come
 * within a fifth of M or pass it grows. Within a fifth, since the
 * stream's steps run a node or two ahead of a cut on two threads: UNet
 * 1x3x256x256's joins are at 0.83, 1.00 and 1.33 of M, and leaving the
 * first to copy made its measured peak 80 MB instead of 72 (values 4 /
 * bound 1.01 instead of 0.91); det's one join, at 0.75, grown, left its
 * peak at 75 MB and cost it 15-30 MB of RSS. Counted once a comparison;
 * a guess of the schedule, not the measure (peak_bytes is). */
static bool plan_joins(stream *s) {
    const mpx_graph *g = s->g;
    if (s->cache) { /* no join grows: the cache keeps its mapped heads whole */
        s->map_head = mpx_cmp_alloc_n(g->n_tensors, sizeof *s->map_head);
        return s->map_head != NULL;
    }
    int nt = g->n_tensors;
    int *last = mpx_cmp_alloc_n(nt, sizeof *last);
    size_t *cut = mpx_cmp_alloc_n(s->n_pos, sizeof *cut), *save = mpx_cmp_alloc_n(s->n_pos, sizeof *save);
    s->map_head = mpx_cmp_alloc_n(nt, sizeof *s->map_head);
    bool ok = last && cut && save && s->map_head;
    for (int t = 0; ok && t < nt; t++) last[t] = -1;
    for (int p = 0; ok && p < s->n_pos; p++) {
        const mpx_node *n = node_at(s, p);
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j]) last[n->inputs[j]->index] = p;
    }
    size_t live = 0, most = 0;
    for (int t = 0; ok && t < nt; t++)
        if (g->tensors[t]->flags & MPX_T_INPUT) live += static_bytes(g->tensors[t]);
    for (int p = 0; ok && p < s->n_pos; p++) {
        const mpx_node *n = node_at(s, p);
        size_t out = 0, over = 0;
        for (int k = 0; k < n->n_outputs; k++) out += static_bytes(n->outputs[k]);
        const mpx_tensor *o = n->n_outputs == 1 ? n->outputs[0] : NULL;
        for (int j = 0; o && j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            bool dead = t && last[t->index] == p && !s->keep[t->index] && static_bytes(t) > 0;
            if (dead && mpx_kernel_pointwise(n->op) && static_bytes(t) == static_bytes(o)) over = static_bytes(o);
            if (dead && j == 0 && n->op == MPX_OP_Concat && n->n_inputs >= 2 && concat_prefix(n, t->rank, t->dims))
                save[p] = static_bytes(t);
        }
        cut[p] = live + out - over - save[p];
        if (cut[p] > most) most = cut[p];
        live += out;
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && mpx_node_first_read(n, j) && last[t->index] == p && !s->keep[t->index]) live -= static_bytes(t);
        }
    }
    for (int p = 0; ok && p < s->n_pos; p++)
        if (save[p] >= MAP_MIN_BYTES && (cut[p] + save[p]) * 5 >= most * 4) {
            const mpx_tensor *t = node_at(s, p)->inputs[0];
            s->map_head[t->index] = mpx_dtype_is_float(t->dtype) && t->dtype != MPX_DT_DOUBLE; /* (the mapping holds fp32) */
        }
    free(last);
    free(cut);
    free(save);
    return ok;
}

/* Job j's run among the use counts: 0 the reference's (its local steps
 * read the reference's values), 1 + q candidate q's. */
static int run_of(const job *j) { return j->kind == JOB_CAND ? 1 + j->q : 0; }

/* The values of job j's run. */
static mpx_value *run_values(stream *s, const job *j) {
    return j->kind == JOB_REF ? s->ref : j->kind == JOB_CAND ? s->cand[j->q] : NULL;
}

static int *run_uses(const stream *s, int run) { return s->ruses + (size_t)run * (size_t)s->g->n_tensors; }

/* Whether job j's run may write over input t's value: the job is its
 * last reader in that run, and the run owns the buffer. Kept values (keep
 * holds the graph's outputs too: mpx_cmp_kept) stay; a constant's value is
 * a view (borrowed) or the run's own rounded copy, which nothing after its
 * last reader needs either. */
static bool dead_after(const stream *s, const job *j, const mpx_tensor *t, const mpx_value *v) {
    return t && run_uses(s, run_of(j))[t->index] == 1 && !s->keep[t->index] && mpx_value_own_floats(v) &&
           (!s->cache || mpx_cmp_cache_lean(s->cache, t->index));
}

static void plan_inplace(stream *s, job *j) {
    j->inplace = -1;
    j->grow = j->map_out = false;
    mpx_value *vals = run_values(s, j);
    const mpx_node *n = node_at(s, j->pos);
    if (!s->inplace || !vals || n->n_outputs < 1 || !n->outputs[0]) return;
    if (j->kind == JOB_CAND && (s->shared[j->q][j->pos] & SHARE_CAND)) return; /* a copy: no kernel writes */
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k]) return;
    const mpx_tensor *o = n->outputs[0];
    /* A Concat whose input 0 is its output's first part and was made in a
     * mapping: the mapping grows (mremap moves no bytes) and the other
     * inputs are copied after it; out of place the widest cut of a UNet's
     * decoder is both inputs and the output. */
    if (n->op == MPX_OP_Concat && n->n_inputs >= 2) {
        const mpx_value *v = n->inputs[0] ? &vals[n->inputs[0]->index] : NULL;
        if (v && v->mapped && dead_after(s, j, n->inputs[0], v) && o->nelem > v->n &&
            concat_prefix(n, v->rank, v->dims)) {
            j->inplace = 0;
            j->grow = true;
            return;
        }
    }
    if (mpx_kernel_pointwise(n->op))
        for (int k = 0; k < n->n_inputs; k++) {
            const mpx_tensor *t = n->inputs[k];
            if (!t || !mpx_node_first_read(n, k)) continue;
            const mpx_value *v = &vals[t->index];
            if (!dead_after(s, j, t, v) || v->n != o->nelem) continue;
            j->inplace = k;
            break;
        }
    /* An output a Concat may grow, made in a mapping (or written over an
     * input that was). */
    if (s->map_head[o->index] && !(j->inplace >= 0 && vals[n->inputs[j->inplace]->index].mapped)) {
        j->inplace = -1;
        j->map_out = true;
    }
}

/* The buffer job j offers its kernel for output 0 (NULL: none, *dn its
 * floats): the input it writes over (a Concat's grown first), or a fresh
 * mapping in *mv. Runs outside the lock: no other job reads the run's
 * value of that input any more. */
static float *step_dest(stream *s, job *j, mpx_value *mv, int64_t *dn) {
    const mpx_node *n = node_at(s, j->pos);
    const mpx_tensor *o = n->outputs[0];
    *dn = 0;
    if (j->inplace >= 0) {
        mpx_value *v = &run_values(s, j)[n->inputs[j->inplace]->index];
        mpx_error e = {0};
        if (j->grow && mpx_value_grow(v, o->nelem, &e) != MPX_OK) { /* then out of place */
            j->inplace = -1;
            return NULL;
        }
        *dn = j->grow ? o->nelem : v->n;
        return v->f;
    }
    if (j->map_out && mpx_value_alloc_mapped(mv, 1, &o->nelem, NULL) == MPX_OK) {
        *dn = mv->n;
        return mv->f;
    }
    return NULL;
}

/* After the step: a mapping its kernel took is the output's, else freed. */
static void step_mapped(job *j, mpx_value *mv) {
    if (mv->n >= 0 && j->st == MPX_OK && j->outs[0].borrowed && j->outs[0].f == mv->f) {
        j->outs[0].borrowed = false;
        j->outs[0].mapped = mv->mapped;
        mpx_value_clear(mv);
    }
    mpx_value_free(mv);
}

/* A step done: where the kernel took the input's buffer for its output,
 * the output owns it and the input's value is gone (it had no reader left). */
static void adopt_inplace(stream *s, job *j) {
    if (j->inplace < 0) return;
    mpx_value *v = &run_values(s, j)[node_at(s, j->pos)->inputs[j->inplace]->index];
    if (!j->outs[0].borrowed || j->outs[0].f != v->f) return;
    s->live -= mpx_value_bytes(v);
    j->outs[0].borrowed = false;
    j->outs[0].mapped = v->mapped;
    mpx_value_clear(v);
}

/* A shared candidate or local step (plan_shared): its outputs are copies
 * of the reference's, which its node's metrics job keeps alive (their uses
 * hold them) and no step writes over before that job is done. */
static mpx_status copy_ref(const stream *s, const mpx_node *n, mpx_value *outs, mpx_error *err) {
    for (int k = 0; k < n->n_outputs; k++) {
        const mpx_tensor *t = n->outputs[k];
        if (!t || s->ref[t->index].n < 0) continue;
        mpx_error e = {0};
        const mpx_status st = mpx_value_copy(&outs[k], &s->ref[t->index], &e);
        if (st != MPX_OK) {
            mpx_k_free_values(outs, n->n_outputs);
            return mpx_error_set(err, st, "node \"%s\" (%s): %s", n->name, n->op_type, e.msg);
        }
    }
    return MPX_OK;
}

static void run(void *ctx, job *j) {
    stream *s = ctx;
    slot *sl = &s->slots[j->pos % s->window];
    const mpx_node *n = node_at(s, j->pos);
    mpx_error_clear(&j->err);
    j->scratch = 0;
    mpx_value mv;
    mpx_value_clear(&mv);
    int64_t dn = 0;
    float *dest = j->kind == JOB_REF || j->kind == JOB_CAND ? step_dest(s, j, &mv, &dn) : NULL;
    /* The run's own cancel reaches inside the step's kernels too. */
    const volatile int *scope = mpx_k_cancel_scope(s->opts->cancel);
    switch (j->kind) {
    case JOB_REF:
        j->st = mpx_exec_node_into(n, NULL, s->ref, false, NULL, dest, dn, j->outs, &j->scratch, &j->err);
        break;
    case JOB_CAND: {
        if (s->shared[j->q][j->pos] & SHARE_CAND) {
            j->st = copy_ref(s, n, j->outs, &j->err);
            break;
        }
        const mpx_body_probe *probe = NULL;
        if (s->bodies && n->body) {
            s->probe[j->q] = (mpx_body_probe){.ref_vals = s->ref, .sink = &s->sink[j->q], .top = n,
                                              .local = s->opts->local};
            probe = &s->probe[j->q];
        }
        j->st = mpx_exec_node_into(n, s->a[j->q], s->cand[j->q], false, probe, dest, dn, j->outs, &j->scratch,
                                   &j->err);
        break;
    }
    case JOB_LOCAL:
        if (s->shared[j->q][j->pos] & SHARE_LOCAL) {
            j->st = copy_ref(s, n, j->outs, &j->err);
            break;
        }
        j->st = mpx_exec_node_probe(n, s->a[j->q], s->ref, true, NULL, j->outs, &j->scratch, &j->err);
        break;
    case JOB_METRICS:
        j->st = run_metrics(s, sl, n, &j->err);
        break;
    }
    mpx_k_cancel_scope(scope);
    step_mapped(j, &mv);
}

/* The slot of position p, set up when p first enters the window (its
 * previous holder, p - window, is finished by then). */
static slot *slot_of(stream *s, int p) {
    slot *sl = &s->slots[p % s->window];
    if (sl->pos == p) return sl;
    sl->pos = p;
    sl->left = s->nj;
    for (int k = 0; k < s->nj; k++) {
        job *j = &sl->j[k];
        j->state = JOB_WAITING;
        j->pos = p;
        j->st = MPX_OK;
        j->ms = 0;
        j->est = 0;
    }
    return sl;
}

static bool deps_done(const stream *s, int p, const unsigned char *done) {
    for (int d = s->dep0[p]; d < s->dep0[p + 1]; d++)
        if (!done[s->deps[d]]) return false;
    return true;
}

static bool ready(const stream *s, const slot *sl, const job *j) {
    switch (j->kind) {
    case JOB_REF: return deps_done(s, j->pos, s->rdone);
    case JOB_LOCAL:
        return deps_done(s, j->pos, s->rdone) && (!(s->shared[j->q][j->pos] & SHARE_LOCAL) || s->rdone[j->pos]);
    case JOB_CAND:
        return deps_done(s, j->pos, s->cdone[j->q]) && (!(s->shared[j->q][j->pos] & SHARE_CAND) || s->rdone[j->pos]);
    case JOB_METRICS:
        for (int k = 0; k < job_m(s); k++)
            if (sl->j[k].state != JOB_DONE) return false;
        return true;
    }
    return false;
}

static void fail(stream *s, int pos, mpx_status st, const mpx_error *e) {
    /* the first node's error when several failed */
    if (s->stop && s->err_pos >= 0 && s->err_pos <= pos) return;
    if (s->stop && s->err_pos < 0) return; /* cancelled: that is what the run says */
    s->stop = true;
    s->err_pos = pos;
    s->st = st;
    s->err = *e;
}

static void cancel_at(stream *s, int node) {
    if (s->stop) return;
    s->stop = true;
    s->err_pos = -1;
    s->st = mpx_error_set(&s->err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                          s->g->nodes[node]->name, node + 1, s->g->n_nodes);
}

static job *take(stream *s, job *j) {
    plan_inplace(s, j);
    j->state = JOB_RUNNING;
    j->started = s->n_done;
    s->running++;
    return j;
}

static job *pick(void *ctx) {
    stream *s = ctx;
    if (s->stop) return NULL;
    if (s->opts->cancel && *s->opts->cancel) {
        cancel_at(s, s->order[s->head]);
        return NULL;
    }
    int end = s->head + s->window < s->n_pos ? s->head + s->window : s->n_pos;
    /* A node with a body runs alone: its candidate steps fill the
     * candidates' sinks in run order through one probe each. */
    for (int p = s->head; p < end; p++)
        if (node_at(s, p)->body) {
            end = p == s->head ? p + 1 : p;
            break;
        }
    for (int p = s->head; p < end; p++) {
        slot *sl = slot_of(s, p);
        job *m = &sl->j[job_m(s)];
        if (m->state == JOB_WAITING && ready(s, sl, m)) return take(s, m);
    }
    /* What the first unfinished node's steps still to finish will add. */
    size_t reserve = 0;
    const slot *hs = slot_of(s, s->head);
    for (int k = 0; k < job_m(s) && s->est[s->head] != SIZE_MAX; k++)
        if (hs->j[k].state != JOB_DONE) reserve += s->est[s->head];
    for (int p = s->head; p < end; p++) {
        slot *sl = slot_of(s, p);
        /* Beyond head, a step may start only while the values alive, what
         * running steps beyond head will make and what the head's steps
         * will add stay under the peak the run has already reached: it
         * fills a thread that would wait, without making the widest cut of
         * the graph any wider. */
        bool ahead = p > s->head;
        if (ahead && (s->est[p] == SIZE_MAX || s->live + s->ahead + reserve + s->est[p] > s->peak)) break;
        for (int k = 0; k < job_m(s); k++) {
            job *j = &sl->j[k];
            if (j->state == JOB_WAITING && ready(s, sl, j)) {
                j->est = ahead ? s->est[p] : 0;
                s->ahead += j->est;
                return take(s, j);
            }
        }
    }
    if (s->running == 0) { /* nothing runs and nothing can: a bug in the dependencies */
        mpx_error e;
        mpx_error_set(&e, MPX_E_INVALID, "node \"%s\": none of its steps can run (a bug)",
                      node_at(s, s->head)->name);
        fail(s, s->head, MPX_E_INVALID, &e);
    }
    return NULL;
}

static bool over(void *ctx) {
    const stream *s = ctx;
    return s->head == s->n_pos || (s->stop && s->running == 0);
}

/* A job no later job reads from: tensor t's value dropped when it was the last. */
static void release(stream *s, int t) {
    if (--s->uses[t] == 0 && !s->keep[t]) drop(s, t);
}

/* Every job of position head done: its layers listed, the window moves on. */
static void retire(stream *s) {
    while (s->head < s->n_pos) {
        slot *sl = &s->slots[s->head % s->window];
        if (sl->pos != s->head || sl->left > 0) return;
        for (int q = 0; q < s->nc; q++) {
            mpx_compare *c = s->c[q];
            memcpy(&c->layers[c->n_layers], sl->lay[q], (size_t)sl->n_lay[q] * sizeof *sl->lay[q]);
            c->n_layers += sl->n_lay[q];
            c->n_run++;
        }
        sl->pos = -1;
        s->head++;
    }
}

static void done(void *ctx, job *j) {
    stream *s = ctx;
    slot *sl = &s->slots[j->pos % s->window];
    const mpx_node *n = node_at(s, j->pos);
    int no = n->n_outputs;
    s->running--;
    s->n_done++;
    s->ahead -= j->est;
    j->state = JOB_DONE;
    sl->left--;
    for (int q = 0; q < s->nc; q++) {
        mpx_compare *c = s->c[q];
        if (j->kind == JOB_REF) c->ms_ref += j->ms;
        if (j->kind == JOB_CAND && j->q == q) c->ms_cand += j->ms;
        if (j->kind == JOB_LOCAL && j->q == q) c->ms_local += j->ms;
        if (j->kind == JOB_METRICS) c->ms_metrics += j->ms / s->nc; /* one pass for all */
    }
    if (j->st != MPX_OK) {
        if (j->kind != JOB_METRICS) mpx_k_free_values(j->outs, no);
        fail(s, j->pos, j->st, &j->err);
        return;
    }
    if (j->kind != JOB_METRICS) {
        /* A step's input copies and outputs were alive beside the live
         * values, and beside the input copies of a step the other thread
         * finished while it ran (an output written over an input was that
         * input's bytes). */
        adopt_inplace(s, j);
        int other = 1 - j->thread;
        size_t extra = j->scratch + mpx_cmp_outs_bytes(j->outs, no);
        if (s->fin_at[other] > j->started) extra += s->fin_scratch[other];
        note_peak(s, extra);
        s->fin_scratch[j->thread] = j->scratch;
        s->fin_at[j->thread] = s->n_done;
        int *ru = run_uses(s, run_of(j));
        for (int k = 0; k < n->n_inputs; k++)
            if (mpx_node_first_read(n, k)) {
                ru[n->inputs[k]->index]--;
                release(s, n->inputs[k]->index);
            }
    }
    switch (j->kind) {
    case JOB_REF:
        store(s, n, j->outs, s->ref);
        s->rdone[j->pos] = 1;
        break;
    case JOB_CAND:
        if (s->shared[j->q][j->pos] & SHARE_CAND) s->c[j->q]->n_shared++;
        store(s, n, j->outs, s->cand[j->q]);
        s->cdone[j->q][j->pos] = 1;
        break;
    case JOB_LOCAL: /* kept in the job until the metrics read it */
        s->live += mpx_cmp_outs_bytes(j->outs, no);
        break;
    case JOB_METRICS:
        for (int q = 0; s->opts->local && q < s->nc; q++) {
            mpx_value *lo = job_local(s, sl, q)->outs;
            s->live -= mpx_cmp_outs_bytes(lo, no);
            mpx_k_free_values(lo, no);
        }
        for (int k = 0; k < no; k++)
            if (n->outputs[k]) {
                for (int r = 0; r <= s->nc; r++) run_uses(s, r)[n->outputs[k]->index]--;
                release(s, n->outputs[k]->index);
            }
        break;
    }
    retire(s);
}

/* The progress callback told of nodes [told, upto); a cancel asked for
 * then (its flag set by the callback, or by a Ctrl-C handler meanwhile)
 * stops the run at the next node, whether or not its jobs ran already:
 * the run ends where the caller was told it did. */
static void report(stream *s, int upto, bool locked_run) {
    const mpx_compare_opts *o = s->opts;
    while (s->told < upto) {
        int i = s->told++;
        if (o->progress) o->progress(o->progress_ctx, i + 1, s->g->n_nodes);
        if (o->cancel && *o->cancel && i + 1 < s->g->n_nodes) {
            if (locked_run) pthread_mutex_lock(&s->sched.mu);
            cancel_at(s, i + 1);
            if (locked_run) {
                mpx_cmp_sched_wake(&s->sched);
                pthread_mutex_unlock(&s->sched.mu);
            }
            return;
        }
    }
}

/* The calling thread's turn between jobs: the callback told of every node
 * before the first unfinished one. */
static void tick(void *ctx) {
    stream *s = ctx;
    if (!s->opts->progress && !s->opts->cancel) return;
    pthread_mutex_lock(&s->sched.mu);
    int upto = s->stop ? s->told : s->head < s->n_pos ? s->order[s->head] : s->g->n_nodes;
    pthread_mutex_unlock(&s->sched.mu);
    report(s, upto, true);
}

/* ---- setting up and running ----------------------------------------------------------- */

static void free_values(mpx_value *v, int n) {
    mpx_k_free_values(v, n);
    free(v);
}

static void stream_free(stream *s) {
    int nt = s->g->n_tensors;
    free_values(s->ref, nt);
    for (int q = 0; q < MAX_CANDS; q++) free_values(s->cand[q], nt);
    for (int w = 0; s->slots && w < s->window; w++) {
        slot *sl = &s->slots[w];
        for (int k = 0; k < s->nj; k++) free_values(sl->j[k].outs, s->max_out);
        for (int q = 0; q < MAX_CANDS; q++) free(sl->lay[q]);
    }
    free(s->slots);
    for (int q = 0; q < MAX_CANDS; q++) {
        mpx_body_sink_free(&s->sink[q]);
        free(s->cdone[q]);
        free(s->shared[q]);
    }
    free(s->uses);
    free(s->ruses);
    free(s->map_head);
    free(s->keep);
    free(s->order);
    free(s->dep0);
    free(s->deps);
    free(s->rdone);
    free(s->est);
}

void *mpx_cmp_alloc_n(int n, size_t size) { return calloc(n > 0 ? (size_t)n : 1u, size); }

mpx_value *mpx_cmp_alloc_values(int n) {
    mpx_value *v = mpx_cmp_alloc_n(n, sizeof *v);
    for (int i = 0; v && i < n; i++) v[i].n = -1;
    return v;
}

static void add_dep(stream *s, const int *maker, int *seen, int p, const mpx_tensor *t, int *d) {
    if (!t || maker[t->index] < 0 || seen[maker[t->index]] == p + 1) return;
    seen[maker[t->index]] = p + 1;
    s->deps[(*d)++] = maker[t->index];
}

/* The positions, each one's producers (of its inputs, and of the
 * conditions of the If branches it sits in), and the jobs reading each
 * tensor. A tensor that two nodes write (a node recomputing a value) would
 * let a later writer overwrite a value an earlier reader still reads: such
 * a graph runs one node at a time. */
static bool plan_schedule(stream *s) {
    const mpx_graph *g = s->g;
    int nn = g->n_nodes, nt = g->n_tensors;
    int *maker = mpx_cmp_alloc_n(nt, sizeof *maker), *seen = mpx_cmp_alloc_n(nn, sizeof *seen);
    s->order = mpx_cmp_alloc_n(nn, sizeof *s->order);
    s->dep0 = mpx_cmp_alloc_n(nn + 1, sizeof *s->dep0);
    bool ok = maker && seen && s->order && s->dep0;
    int n_dep = 0;
    bool rewrites = false;
    for (int t = 0; ok && t < nt; t++) maker[t] = -1;
    for (int i = 0; ok && i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        for (int j = 0; j < n->n_inputs; j++) n_dep += n->inputs[j] != NULL;
        for (const mpx_node *u = n; u->guard; u = u->guard) n_dep++;
    }
    s->deps = mpx_cmp_alloc_n(n_dep, sizeof *s->deps);
    ok = ok && s->deps;
    for (int i = 0; ok && i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        int p = s->n_pos++, d = s->dep0[p];
        s->order[p] = i;
        /* producers, each once (seen[] holds p + 1 for those listed) */
        for (int j = 0; j < n->n_inputs; j++) add_dep(s, maker, seen, p, n->inputs[j], &d);
        for (const mpx_node *u = n; u->guard; u = u->guard) add_dep(s, maker, seen, p, u->guard->inputs[0], &d);
        s->dep0[p + 1] = d;
        for (int k = 0; k < n->n_outputs; k++) {
            const mpx_tensor *t = n->outputs[k];
            if (!t) continue;
            if (maker[t->index] >= 0) rewrites = true;
            maker[t->index] = p;
        }
        /* readers: R, each C[q], each L[q] of every input; M of every output */
        for (int j = 0; j < n->n_inputs; j++)
            if (mpx_node_first_read(n, j)) {
                int t = n->inputs[j]->index;
                s->uses[t] += 1 + s->nc + (s->opts->local ? s->nc : 0);
                run_uses(s, 0)[t] += 1 + (s->opts->local ? s->nc : 0);
                for (int q = 0; q < s->nc; q++) run_uses(s, 1 + q)[t]++;
            }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k]) {
                s->uses[n->outputs[k]->index]++;
                for (int r = 0; r <= s->nc; r++) run_uses(s, r)[n->outputs[k]->index]++;
            }
    }
    s->est = ok ? mpx_cmp_alloc_n(s->n_pos, sizeof *s->est) : NULL;
    ok = ok && s->est;
    for (int p = 0; ok && p < s->n_pos; p++) {
        const mpx_node *n = g->nodes[s->order[p]];
        size_t b = 0;
        for (int k = 0; k < n->n_outputs && b != SIZE_MAX; k++) {
            const mpx_tensor *t = n->outputs[k];
            if (!t) continue;
            b = t->nelem < 0 || (t->flags & MPX_T_SEQUENCE) ? SIZE_MAX
                : b + (size_t)t->nelem * (mpx_dtype_is_float(t->dtype) && t->dtype != MPX_DT_DOUBLE ? 4u : 8u);
        }
        s->est[p] = b;
    }
    free(maker);
    free(seen);
    s->rewrites = rewrites;
    s->window = rewrites ? 1 : WINDOW;
    /* Not where a value is written twice (nor with bodies: see
     * plan_inplace). */
    s->inplace = !rewrites && !s->bodies_present && !mpx_env_on("MPX_CMP_NOINPLACE");
    if (s->window > s->n_pos) s->window = s->n_pos > 0 ? s->n_pos : 1;
    return ok;
}

/* Whether candidate q's start value of tensor t (a model input or a
 * constant) is the reference's and is read as it is (no tensor format). */
static bool start_same(const stream *s, int q, int t) {
    const mpx_value *r = &s->ref[t], *c = &s->cand[q][t];
    if (s->a[q] && mpx_cmp_is_low(s->a[q]->tensor[t])) return false;
    if (r->n < 0 || c->n != r->n || c->dtype != r->dtype || c->is_seq || r->is_seq || c->rank != r->rank) return false;
    if (r->n == 0) return true;
    if (!r->f != !c->f || !r->i != !c->i || !r->d != !c->d) return false;
    if (r->d) return r->d == c->d || memcmp(r->d, c->d, (size_t)r->n * sizeof *r->d) == 0;
    if (r->f) return r->f == c->f || memcmp(r->f, c->f, (size_t)r->n * sizeof *r->f) == 0;
    return r->i == c->i || memcmp(r->i, c->i, (size_t)r->n * sizeof *r->i) == 0;
}

bool mpx_cmp_rounds_nothing(const mpx_assign *a, const mpx_node *n) {
    if (n->body || !mpx_exec_node_plain(a, n)) return false;
    if (!a) return true;
    const mpx_node_prec *p = &a->node[n->index];
    return !mpx_cmp_is_low(p->acc.fmt) && p->acc.block <= 0 && !p->acc.flags;
}

/* No work twice: a node whose candidate step would compute what its
 * reference step computes - it rounds nothing (fp32 compute and
 * accumulation, no output or tensor format: mpx_exec_node_plain) and every
 * input's candidate value is the reference's - takes copies of the
 * reference's outputs instead (the same kernel on the same bits gives the
 * same bits), and its outputs count as the reference's for the nodes after
 * it. A plan that rounds nothing (a dynamically quantised model's default
 * plan, `colour * red`) then computes the model once. Not for nodes with a
 * body (their candidate step takes the figures inside) nor where a tensor
 * is written twice. A local step (which reads the reference's values,
 * converted to the node's compute format alone) of a node that rounds
 * nothing is the reference's step whatever its inputs' formats: it copies
 * too. Decided once the start values exist (run_stream). */
static bool plan_shared(stream *s) {
    const mpx_graph *g = s->g;
    bool *same = mpx_cmp_alloc_n(g->n_tensors, sizeof *same);
    bool ok = same != NULL;
    for (int q = 0; ok && q < s->nc; q++) {
        ok = (s->shared[q] = mpx_cmp_alloc_n(s->n_pos, 1)) != NULL;
        if (!ok || s->rewrites || mpx_env_on("MPX_CMP_NOSHARE")) continue;
        const mpx_assign *a = s->a[q];
        for (int t = 0; t < g->n_tensors; t++) same[t] = start_same(s, q, t);
        for (int p = 0; p < s->n_pos; p++) {
            const mpx_node *n = node_at(s, p);
            const bool plain = mpx_cmp_rounds_nothing(a, n);
            bool sh = plain;
            for (int k = 0; sh && k < n->n_inputs; k++) sh = !n->inputs[k] || same[n->inputs[k]->index];
            s->shared[q][p] = (unsigned char)((sh ? SHARE_CAND : 0) | (plain ? SHARE_LOCAL : 0));
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k]) same[n->outputs[k]->index] = sh;
        }
    }
    free(same);
    return ok;
}

/* Whether a comparison's jobs run on two job threads (opts->threads 0:
 * by the model's size). A second job thread pays where a model's work is
 * large enough to overlap one node's jobs with another's; below
 * CMP_TWO_MACS multiply-adds a forward its hand-offs cost more than the
 * overlap gains, and the jobs run on the calling thread, each node's
 * kernels still on the kernels' pool (mpx_k_busy: one job thread busy).
 * Zen 5, two vCPUs, a report (interleaved processes' medians, two job
 * threads -> one): the GRU 0.45 -> 0.29 ms, the LSTM 1.30 -> 0.76, the
 * direction classifier 7.44 -> 5.49, rec (0.70 G multiply-adds) 72.3 ->
 * 63.7, BERT-style (1.84 G) 66.0 -> 62.9, EfficientNet-B0 (0.39 G) 47.2 ->
 * 46.5, ResNet-18 (1.82 G) 46.4 -> 46.4, MobileNetV3-Small 9.8 -> 9.9, det
 * (2.30 G) 246 -> 243; UNet (9.2 G) 279 -> 322 and ViT-B/16 (17.6 G) 526 ->
 * 540 the other way. A REPL run's first (7): the GRU 1.14 -> 0.89 ms, the
 * LSTM 1.40 -> 1.10, the direction classifier 8.9 -> 5.6. */
#define CMP_TWO_MACS 4e9

static bool two_job_threads(const mpx_graph *g, const mpx_compare_opts *opts) {
    if (opts->threads == 1) return false;
    if (opts->threads >= 2) return true;
    const int64_t macs = mpx_graph_macs(g);
    return macs < 0 || (double)macs >= CMP_TWO_MACS;
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
    s.nj = 2 + nc + (opts->local ? nc : 0);
    s.ref = mpx_cmp_alloc_values(nt);
    s.uses = mpx_cmp_alloc_n(nt, sizeof *s.uses);
    s.ruses = mpx_cmp_alloc_n((1 + nc) * nt, sizeof *s.ruses);
    s.keep = mpx_cmp_alloc_n(nt, sizeof *s.keep);
    s.rdone = mpx_cmp_alloc_n(g->n_nodes, 1);
    for (int i = 0; i < g->n_nodes; i++) s.bodies_present = s.bodies_present || g->nodes[i]->body;
    bool ok = s.ref && s.uses && s.ruses && s.keep && s.rdone && plan_schedule(&s);
    for (int q = 0; q < nc; q++) {
        s.a[q] = a[q];
        s.c[q] = calloc(1, sizeof *s.c[q]);
        if (s.c[q]) {
            s.c[q]->g = g;
            s.c[q]->layers = mpx_cmp_alloc_n(nt, sizeof *s.c[q]->layers);
        }
        s.cand[q] = mpx_cmp_alloc_values(nt);
        s.cdone[q] = mpx_cmp_alloc_n(g->n_nodes, 1);
        ok = ok && s.c[q] && s.c[q]->layers && s.cand[q] && s.cdone[q];
    }
    s.slots = ok ? mpx_cmp_alloc_n(s.window, sizeof *s.slots) : NULL;
    for (int w = 0; s.slots && w < s.window; w++) {
        slot *sl = &s.slots[w];
        sl->pos = -1;
        for (int j = 0; j < s.nj; j++) {
            job *J = &sl->j[j];
            J->kind = j == 0 ? JOB_REF : j <= nc ? JOB_CAND : j < s.nj - 1 ? JOB_LOCAL : JOB_METRICS;
            J->q = J->kind == JOB_CAND ? j - 1 : J->kind == JOB_LOCAL ? j - 1 - nc : 0;
            J->outs = mpx_cmp_alloc_values(s.max_out);
            ok = ok && J->outs;
        }
        for (int q = 0; q < nc; q++) ok = ok && (sl->lay[q] = mpx_cmp_alloc_n(s.max_out, sizeof *sl->lay[q]));
    }
    if (!ok || !s.slots) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nt; i++) s.keep[i] = mpx_cmp_kept(g, opts, i);
    if (s.inplace && !plan_joins(&s)) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }

    double t0 = mpx_cmp_now_ms();
    st = mpx_exec_start(g, NULL, inputs, s.ref, err);
    double t1 = mpx_cmp_now_ms();
    for (int q = 0; q < nc; q++) {
        if (st == MPX_OK) st = mpx_exec_start_some(g, a[q], inputs, NULL, s.keep, s.cand[q], err);
        s.c[q]->ms_ref = t1 - t0;
        s.c[q]->ms_cand = mpx_cmp_now_ms() - t1;
    }
    if (st != MPX_OK) goto fail;
    /* The weights' forms the runs will keep, made now, below their values
     * (the reference's too: a convolution's packing is made at its first
     * run, not at load) */
    (void)mpx_exec_prepare_forms(g, NULL, s.ref, NULL);
    for (int q = 0; q < nc; q++) (void)mpx_exec_prepare_forms(g, a[q], s.cand[q], NULL);
    if (!plan_shared(&s)) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nt; i++) {
        s.live += mpx_value_bytes(&s.ref[i]);
        for (int q = 0; q < nc; q++) s.live += mpx_value_bytes(&s.cand[q][i]);
    }
    note_peak(&s, 0);
    /* Model inputs and constants no node reads (when not kept) go at once. */
    for (int i = 0; i < nt; i++)
        if (s.uses[i] == 0 && !s.keep[i]) drop(&s, i);

    s.sched = (sched){.ctx = &s, .pick = pick, .over = over, .run = run, .done = done, .tick = tick};
    if (!mpx_cmp_sched_run(&s.sched, two_job_threads(g, opts))) {
        st = mpx_error_set(err, MPX_E_NOMEM, "cannot make the comparison's lock");
        goto fail;
    }
    /* The nodes after the last that ran (skipped ones) told of too. */
    if (!s.stop) report(&s, g->n_nodes, false);
    if (s.stop) {
        st = s.st;
        if (err) *err = s.err;
        goto fail;
    }
    /* What is left is kept (anything else was dropped after its last reader;
     * the sweep only guards that rule): hand the arrays over, the
     * reference's kept values to the first result and copies to the others. */
    for (int i = 0; i < nt; i++)
        if (!s.keep[i]) drop(&s, i);
    for (int q = 1; q < nc; q++) {
        s.c[q]->ref = mpx_cmp_alloc_values(nt);
        s.c[q]->n_values = nt;
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
        s.c[q]->n_values = nt;
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
