/* compare_cache.c - values kept between comparisons, so a recolour
 * reruns only what changed (compare_internal.h). */
#include "compare_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
 * against the cached reference values. A candidate value they read that
 * was dropped over budget is made again from what the cache still holds
 * (its producers run too); when a reference value it needs was dropped, the
 * run is a full one, which refills the cache. */

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
    /* [n_tensors]: the candidate value is the reference's (an incremental
     * run's node that rounds nothing on such inputs: no work twice, as a
     * full run's plan_shared); the cache then holds no candidate value of
     * its own, a run reads the reference's. */
    bool *same;
    /* Tensors a (run) node computes, by their producer's position: only they
     * are cached (constants and inputs come back from mpx_exec_start). The
     * values of order[0..evict) are dropped for good: the earliest go first,
     * and a value older than one dropped is not taken in. */
    int *rank;                 /* [n_tensors]: position in order, -1: not cached */
    bool *lean;                /* [n_tensors]: not given to it by full runs (cache_plan_lean) */
    int *order;
    int n_order, evict;
    /* What the last incremental run replaced, when it was asked to be
     * undoable (mpx_compare_cache_undo): the candidate values it displaced
     * (undo_t[0..n_undo) name their tensors), the assignment and layers of
     * the run before it. Held outside the budget, but only until the next
     * run through the cache, which drops them first: the values a run
     * replaces were alive during that run anyway, so the peak is unchanged. */
    bool can_undo;
    int n_undo;
    int *undo_t;               /* [n_tensors] */
    mpx_value *undo_cand;      /* [n_tensors], by tensor */
    const mpx_format **undo_tfmt;
    mpx_node_prec *undo_prec;
    mpx_layer *undo_layers;
    bool *undo_same;
};

static void undo_drop(mpx_compare_cache *k) {
    for (int i = 0; i < k->n_undo; i++) mpx_value_free(&k->undo_cand[k->undo_t[i]]);
    k->n_undo = 0;
    k->can_undo = false;
}

static void undo_free(mpx_compare_cache *k) {
    undo_drop(k);
    free(k->undo_t);
    free(k->undo_cand);
    free(k->undo_tfmt);
    free(k->undo_prec);
    free(k->undo_layers);
    free(k->undo_same);
    k->undo_same = NULL;
    k->undo_t = NULL;
    k->undo_cand = NULL;
    k->undo_tfmt = NULL;
    k->undo_prec = NULL;
    k->undo_layers = NULL;
}

#define CACHE_DEFAULT_BUDGET ((size_t)512 << 20)

mpx_compare_cache *mpx_compare_cache_new(size_t budget_bytes) {
    mpx_compare_cache *k = calloc(1, sizeof *k);
    if (k) k->budget = budget_bytes ? budget_bytes : CACHE_DEFAULT_BUDGET;
    return k;
}

void mpx_compare_cache_clear(mpx_compare_cache *k) {
    if (!k) return;
    undo_free(k);
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
    free(k->lean);
    free(k->order);
    free(k->same);
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
    k->same[t] = false;
    k->bytes -= mpx_value_bytes(&k->ref[t]) + mpx_value_bytes(&k->cand[t]);
    mpx_value_free(&k->ref[t]);
    mpx_value_free(&k->cand[t]);
}

static void cache_trim(mpx_compare_cache *k) {
    while (k->bytes > k->budget && k->evict < k->n_order) cache_drop(k, k->order[k->evict++]);
}

static void take(mpx_value *dst, mpx_value *src) {
    *dst = *src;
    mpx_value_clear(src);
}

/* Takes r and c (leaving them absent) when t is cached and not dropped for
 * good; otherwise leaves them to the caller, who frees them. */
void mpx_cmp_cache_put(mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c) {
    if (!k->rank || k->rank[t] < 0 || k->rank[t] < k->evict || r->borrowed || c->borrowed ||
        (r->n < 0 && c->n < 0)) /* (the run's last sweep drops absent values too) */
        return;
    cache_drop(k, t); /* (same: false; a full run copies shared values, plan_shared) */
    k->bytes += mpx_value_bytes(r) + mpx_value_bytes(c);
    take(&k->ref[t], r);
    take(&k->cand[t], c);
    cache_trim(k);
}

/* A recomputed candidate value replaces the cached one (same rule); the
 * one replaced goes to the undo record when one is being kept. same: the
 * value is the reference's (c absent: the cache holds none of its own). */
static void cache_put_cand(mpx_compare_cache *k, int t, mpx_value *c, bool same) {
    if (k->rank[t] < 0 || k->rank[t] < k->evict || c->borrowed) return;
    k->same[t] = same;
    k->bytes -= mpx_value_bytes(&k->cand[t]);
    if (k->can_undo) {
        k->undo_t[k->n_undo++] = t;
        take(&k->undo_cand[t], &k->cand[t]);
    } else {
        mpx_value_free(&k->cand[t]);
    }
    k->bytes += mpx_value_bytes(c);
    take(&k->cand[t], c);
    cache_trim(k);
}

/* The format a value of t is held in and a node's precision under a, as
 * the executor reads them (fp32 written NULL): what decides its bits. */
const mpx_format *fmt_of(const mpx_assign *a, int t) {
    return a && mpx_cmp_is_low(a->tensor[t]) ? a->tensor[t] : NULL;
}

static mpx_node_prec prec_of(const mpx_assign *a, int n) {
    mpx_node_prec p = {0};
    if (!a) return p;
    p = a->node[n];
    if (!mpx_cmp_is_low(p.compute)) p.compute = NULL;
    if (!mpx_cmp_is_low(p.output)) p.output = NULL;
    return p;
}

static bool same_prec(const mpx_node_prec *x, const mpx_node_prec *y) {
    return x->compute == y->compute && x->output == y->output && x->acc.fmt == y->acc.fmt &&
           x->acc.block == y->acc.block && x->acc.flags == y->acc.flags && x->held == y->held;
}

static bool same_value(const mpx_value *x, const mpx_value *y) {
    if (x->dtype != y->dtype || x->rank != y->rank || x->n != y->n || !x->f != !y->f ||
        !x->i != !y->i || !x->d != !y->d)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d]) return false;
    if (x->n <= 0) return true;
    size_t n = (size_t)x->n;
    return (!x->f || memcmp(x->f, y->f, n * sizeof *x->f) == 0) &&
           (!x->i || memcmp(x->i, y->i, n * sizeof *x->i) == 0) &&
           (!x->d || memcmp(x->d, y->d, n * sizeof *x->d) == 0);
}

/* The cache describes a run of this graph on these input bytes. */
bool mpx_cmp_cache_fits(const mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs) {
    if (!k->valid || k->g != g || k->n_tensors != g->n_tensors || k->n_nodes != g->n_nodes ||
        k->n_inputs != g->n_inputs)
        return false;
    for (int i = 0; i < g->n_inputs; i++)
        if (!same_value(&k->inputs[i], &inputs[i])) return false;
    return true;
}

/* What a full run does not give the cache: the outputs of pointwise nodes
 * (kernels.def: MPX_KERNEL_POINTWISE), Concats and Resizes (lean_op) of
 * LEAN_MIN_BYTES or more, at most
 * LEAN_DEPTH of them in a row. Keeping every value made a session's first
 * `run` write each one into memory of its own that the process had never
 * touched: on PP-OCRv4 det at 1x3x640x640 the kernel's page-fault path was
 * 41% of that run (162k faults, 650 MB of RSS), and pointwise outputs are
 * 557 of the 694 MB a run makes (the Mul, Add, Clip, Div after each Conv).
 * Left out, they are freed after their last reader (compare.c: drop) and
 * the heap hands their blocks to the values made after them. They are the
 * cheapest values to make again: an incremental run that needs one (an
 * input of a recoloured node, a reference to measure against) runs its
 * producers from the values the cache holds, at most LEAN_DEPTH pointwise
 * nodes back, a pass over memory each. Small values cost few pages and are
 * kept. None where a tensor is written twice (its producer would not be its
 * only writer) nor in graphs with bodies (which run in full). Kept tensors
 * and model outputs are given to the cache whatever this says (compare.c
 * drops only the others). */
enum { LEAN_DEPTH = 8, LEAN_MIN_BYTES = 1 << 16 };

/* The bytes of a value of t from its inferred shape (0: unknown, a
 * sequence, or not an activation). */
static size_t est_bytes(const mpx_tensor *t) {
    if (!t || t->nelem <= 0 || (t->flags & (MPX_T_SEQUENCE | MPX_T_CONSTANT | MPX_T_FOLDED))) return 0;
    return (size_t)t->nelem * (mpx_dtype_is_float(t->dtype) && t->dtype != MPX_DT_DOUBLE ? 4u : 8u);
}

/* Ops whose output is a pass over memory to make again: pointwise ones,
 * the joins and resizes of a detector's neck (det at 640x640: 30 MB of
 * Concat and Resize outputs a run), and the ops that only move elements
 * (a transformer's head split and merge: Reshape, Transpose, Slice; on
 * ViT-B/16 98 MB of the 225 MB a side a first run kept, each a copy of a
 * value kept beside it), and DynamicQuantizeLinear's tensor (a pass, held
 * as int64: in a session's first run of the quantised ResNet-18 the 17 of
 * them, both sides, were 32 MB of its 195 MB peak). */
static bool lean_op(mpx_op op) {
    switch (op) {
    case MPX_OP_Concat: case MPX_OP_Resize: case MPX_OP_Reshape: case MPX_OP_Flatten: case MPX_OP_Squeeze:
    case MPX_OP_Unsqueeze: case MPX_OP_Transpose: case MPX_OP_Slice: case MPX_OP_Identity:
    case MPX_OP_DynamicQuantizeLinear:
        return true;
    default:
        return mpx_kernel_pointwise(op);
    }
}

static bool cache_plan_lean(mpx_compare_cache *k, const mpx_graph *g) {
    unsigned char *depth = mpx_cmp_alloc_n(g->n_tensors, 1); /* left-out producers in a row ending at the tensor */
    bool *written = mpx_cmp_alloc_n(g->n_tensors, sizeof *written);
    bool ok = depth && written, plain = !mpx_env_on("MPX_CMP_KEEPALL");
    for (int i = 0; ok && plain && i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        plain = !n->body;
        for (int j = 0; plain && !mpx_exec_skipped(n) && j < n->n_outputs; j++)
            if (n->outputs[j]) {
                plain = !written[n->outputs[j]->index];
                written[n->outputs[j]->index] = true;
            }
    }
    for (int i = 0; ok && plain && i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        /* (DynamicQuantizeLinear: its first output, the tensor; its scale
         * and zero point are one value each) */
        if (mpx_exec_skipped(n) || !lean_op(n->op) || !n->outputs[0] ||
            (n->n_outputs != 1 && n->op != MPX_OP_DynamicQuantizeLinear))
            continue;
        const mpx_tensor *o = n->outputs[0];
        if (est_bytes(o) < LEAN_MIN_BYTES || o->producer != n || (o->flags & MPX_T_OUTPUT)) continue;
        int d = 0;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] && depth[n->inputs[j]->index] > d) d = depth[n->inputs[j]->index];
        if (d >= LEAN_DEPTH) continue;
        depth[o->index] = (unsigned char)(d + 1);
        k->lean[o->index] = true;
    }
    free(depth);
    free(written);
    return ok;
}

bool mpx_cmp_cache_lean(const mpx_compare_cache *k, int t) { return k && k->lean && k->lean[t]; }

/* Empty, ready for a full run of g on inputs. */
mpx_status mpx_cmp_cache_start(mpx_compare_cache *k, const mpx_graph *g, const mpx_value *inputs,
                              mpx_error *err) {
    mpx_compare_cache_clear(k);
    int nt = g->n_tensors;
    k->g = g;
    k->ref = mpx_cmp_alloc_values(nt);
    k->cand = mpx_cmp_alloc_values(nt);
    k->n_tensors = nt;
    k->n_nodes = g->n_nodes;
    k->inputs = mpx_cmp_alloc_values(g->n_inputs);
    k->n_inputs = g->n_inputs;
    k->tfmt = mpx_cmp_alloc_n(nt, sizeof *k->tfmt);
    k->prec = mpx_cmp_alloc_n(g->n_nodes, sizeof *k->prec);
    k->rank = mpx_cmp_alloc_n(nt, sizeof *k->rank);
    k->order = mpx_cmp_alloc_n(nt, sizeof *k->order);
    k->lean = mpx_cmp_alloc_n(nt, sizeof *k->lean);
    k->same = mpx_cmp_alloc_n(nt, sizeof *k->same);
    if (!k->lean || !k->same || !k->ref || !k->cand || !k->inputs || !k->tfmt || !k->prec || !k->rank || !k->order) {
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
    if (!cache_plan_lean(k, g)) {
        mpx_compare_cache_clear(k);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
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
void mpx_cmp_cache_finish(mpx_compare_cache *k, const mpx_assign *a, const mpx_compare *c) {
    for (int i = 0; i < k->n_tensors; i++) k->tfmt[i] = fmt_of(a, i);
    for (int i = 0; i < k->n_nodes; i++) k->prec[i] = prec_of(a, i);
    k->layers = mpx_cmp_alloc_n(c->n_layers, sizeof *k->layers);
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
        mpx_cmp_cache_put(k, t, &r, &v);
        mpx_value_free(&r);
        mpx_value_free(&v);
    }
    k->valid = true;
}

/* Starts an undo record of the run being stored (its predecessor's
 * assignment and layers; the values follow in cache_put_cand). Without
 * memory for it the run is simply not undoable. */
static void undo_begin(mpx_compare_cache *k) {
    if (!k->undo_t) {
        k->undo_t = mpx_cmp_alloc_n(k->n_tensors, sizeof *k->undo_t);
        k->undo_cand = mpx_cmp_alloc_values(k->n_tensors);
        k->undo_tfmt = mpx_cmp_alloc_n(k->n_tensors, sizeof *k->undo_tfmt);
        k->undo_prec = mpx_cmp_alloc_n(k->n_nodes, sizeof *k->undo_prec);
        k->undo_layers = mpx_cmp_alloc_n(k->n_layers, sizeof *k->undo_layers);
        k->undo_same = mpx_cmp_alloc_n(k->n_tensors, sizeof *k->undo_same);
        if (!k->undo_t || !k->undo_cand || !k->undo_tfmt || !k->undo_prec || !k->undo_layers || !k->undo_same) {
            undo_free(k);
            return;
        }
    }
    memcpy(k->undo_tfmt, k->tfmt, (size_t)k->n_tensors * sizeof *k->tfmt);
    memcpy(k->undo_prec, k->prec, (size_t)k->n_nodes * sizeof *k->prec);
    memcpy(k->undo_same, k->same, (size_t)k->n_tensors * sizeof *k->same);
    if (k->n_layers > 0) memcpy(k->undo_layers, k->layers, (size_t)k->n_layers * sizeof *k->layers);
    k->n_undo = 0;
    k->can_undo = true;
}

bool mpx_compare_cache_undo(mpx_compare_cache *k) {
    if (!k || !k->can_undo) return false;
    for (int i = 0; i < k->n_undo; i++) {
        int t = k->undo_t[i];
        if (k->rank[t] < k->evict) { /* dropped for good meanwhile: stays out */
            mpx_value_free(&k->undo_cand[t]);
            continue;
        }
        k->bytes -= mpx_value_bytes(&k->cand[t]);
        mpx_value_free(&k->cand[t]);
        take(&k->cand[t], &k->undo_cand[t]);
        k->bytes += mpx_value_bytes(&k->cand[t]);
    }
    memcpy(k->tfmt, k->undo_tfmt, (size_t)k->n_tensors * sizeof *k->tfmt);
    memcpy(k->prec, k->undo_prec, (size_t)k->n_nodes * sizeof *k->prec);
    memcpy(k->same, k->undo_same, (size_t)k->n_tensors * sizeof *k->same);
    for (int t = 0; t < k->n_tensors; t++) /* (what was dropped since stays out) */
        k->same[t] = k->same[t] && k->rank[t] >= k->evict;
    if (k->n_layers > 0) memcpy(k->layers, k->undo_layers, (size_t)k->n_layers * sizeof *k->layers);
    k->n_undo = 0;
    k->can_undo = false;
    cache_trim(k);
    return true;
}

bool mpx_cmp_measured(const mpx_compare_opts *opts, int t) {
    return !opts->measure || opts->local || opts->measure[t];
}

void mpx_cmp_set_unmeasured(mpx_layer *L) {
    memset(&L->m, 0, sizeof L->m);
    L->m.max_abs = L->m.mean_abs = L->m.rel_l2 = L->m.cos = L->m.sqnr_db = L->m.absmax_ref = NAN;
    L->unmeasured = true;
}

bool mpx_cmp_kept(const mpx_graph *g, const mpx_compare_opts *opts, int t) {
    return (opts->keep && opts->keep[t]) || (g->tensors[t]->flags & MPX_T_OUTPUT);
}

/* A view of a cached value: the cache keeps it (freeing the view frees
 * nothing). */
static void view(mpx_value *dst, const mpx_value *src) {
    *dst = *src;
    if (dst->n >= 0) dst->borrowed = true;
}

/* Frees the remade values (last[t] >= 0) that nodes lo..hi read for the
 * last time, unless kept; their bytes. */
static size_t free_remade(const mpx_graph *g, const mpx_compare_opts *opts, int lo, int hi, int *last,
                          mpx_value *cand) {
    size_t freed = 0;
    for (int q = lo; q <= hi; q++) {
        const mpx_node *n = g->nodes[q];
        for (int j = 0; j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (!t || last[t->index] < 0 || last[t->index] > hi || mpx_cmp_kept(g, opts, t->index)) continue;
            freed += mpx_value_bytes(&cand[t->index]);
            mpx_value_free(&cand[t->index]);
            last[t->index] = -1;
        }
    }
    return freed;
}

/* Tensor t's reference value for the run: the cache's, else, for a value
 * full runs leave out (cache_plan_lean), made again by its producer
 * (rregen) unless dropped over budget since. False: a full run (as for a
 * value left out as unmeasured: making those again is a full run's work
 * holding every value at once). */
static bool ref_at_hand(const mpx_compare_cache *k, const mpx_tensor *t) {
    return k->ref[t->index].n >= 0 || (k->rank[t->index] >= k->evict && k->lean[t->index] && t->producer);
}

static bool need_ref(const mpx_compare_cache *k, const mpx_tensor *t, bool *rregen) {
    if (k->ref[t->index].n >= 0) return true;
    if (!ref_at_hand(k, t)) return false;
    rregen[t->producer->index] = true;
    return true;
}

/* Tensor t's candidate value for the run: a dirty node's (changed), the
 * cache's, else made again by its producer (regen). */
static bool need_cand(const mpx_compare_cache *k, const mpx_tensor *t, const bool *changed, bool *regen) {
    if (changed[t->index] || k->cand[t->index].n >= 0) return true;
    if (!t->producer) return false;
    regen[t->producer->index] = true;
    return true;
}

/* A value a clean node made again (vals: k->ref or k->cand) replaces what
 * the cache holds of t (nothing, or the same bits), when it is not dropped
 * for good and fits the budget as it is; what it does not take stays with
 * the caller. */
static void cache_put_remade(mpx_compare_cache *k, int t, mpx_value *v, mpx_value *vals) {
    if (k->rank[t] < 0 || k->rank[t] < k->evict || v->n < 0 || v->borrowed ||
        k->bytes - mpx_value_bytes(&vals[t]) + mpx_value_bytes(v) > k->budget) /* (never at older values' cost) */
        return;
    k->bytes -= mpx_value_bytes(&vals[t]);
    mpx_value_free(&vals[t]);
    k->bytes += mpx_value_bytes(v);
    take(&vals[t], v);
    cache_trim(k);
}

/* Node n's outputs (outs, just made with scratch bytes beside them) into
 * vals, replacing what vals held of them (a view of a cached value counts
 * no bytes; a value the run made is freed and uncounted); the bytes live
 * after, with *peak raised to the most held at once. */
static size_t take_outs(const mpx_node *n, size_t scratch, mpx_value *outs, mpx_value *vals, size_t live,
                        size_t *peak) {
    size_t o = mpx_cmp_outs_bytes(outs, n->n_outputs);
    if (live + scratch + o > *peak) *peak = live + scratch + o;
    for (int j = 0; j < n->n_outputs; j++) {
        const mpx_tensor *t = n->outputs[j];
        if (!t) {
            mpx_value_free(&outs[j]);
            continue;
        }
        live -= mpx_value_bytes(&vals[t->index]);
        mpx_value_free(&vals[t->index]);
        take(&vals[t->index], &outs[j]);
        live += mpx_value_bytes(&vals[t->index]);
    }
    return live;
}

/* Layer L's figures from the run's values of its tensor, the time they
 * took added to c's; an error names the node and the output. */
static mpx_status measure_layer(const mpx_graph *g, mpx_compare *c, mpx_layer *L, const mpx_value *ref,
                                const mpx_value *cand, mpx_error *err) {
    const mpx_tensor *t = g->tensors[L->tensor];
    L->unmeasured = false;
    double t0 = mpx_cmp_now_ms();
    mpx_error e;
    mpx_error_clear(&e);
    mpx_status st = mpx_metrics_compute(&ref[t->index], &cand[t->index], L->fmt, &L->m, &e);
    c->ms_metrics += mpx_cmp_now_ms() - t0;
    if (st == MPX_OK) return MPX_OK;
    const mpx_node *n = g->nodes[L->node];
    return mpx_error_set(err, st, "node \"%s\" (%s): output \"%s\": %s", n->name, n->op_type, t->name, e.msg);
}

/* The run from the cache k (which fits g and the inputs). MPX_OK with *out
 * NULL: a value it needs is not cached, run in full. A run that fails
 * leaves the cache describing the run before it, less the candidate values
 * a run that cannot be undone had let go of (below). */
mpx_status mpx_cmp_run_incremental(mpx_compare_cache *k, const mpx_graph *g, const mpx_assign *a,
                                  const mpx_value *inputs, const mpx_compare_opts *opts,
                                  mpx_compare **out, mpx_error *err) {
    int nt = g->n_tensors, nn = g->n_nodes, max_out = 1;
    *out = NULL;
    undo_drop(k); /* the run before stands from now on */
    for (int i = 0; i < nn; i++)
        if (g->nodes[i]->n_outputs > max_out) max_out = g->nodes[i]->n_outputs;
    bool *dirty = mpx_cmp_alloc_n(nn, sizeof *dirty), *changed = mpx_cmp_alloc_n(nt, sizeof *changed),
         *layer = mpx_cmp_alloc_n(nt, sizeof *layer), *want = mpx_cmp_alloc_n(nt, sizeof *want),
         *regen = mpx_cmp_alloc_n(nn, sizeof *regen), *rregen = mpx_cmp_alloc_n(nn, sizeof *rregen),
         *hold = mpx_cmp_alloc_n(nt, sizeof *hold), *same = mpx_cmp_alloc_n(nt, sizeof *same),
         *inner = mpx_cmp_alloc_n(nt, sizeof *inner), *whole = mpx_cmp_alloc_n(nt, sizeof *whole),
         *pass = mpx_cmp_alloc_n(nt, sizeof *pass),
         *share = mpx_cmp_alloc_n(nn, sizeof *share);
    int *last = mpx_cmp_alloc_n(nt, sizeof *last); /* a remade value's last reader; -1: not remade */
    int *plast = mpx_cmp_alloc_n(nt, sizeof *plast), *porder = mpx_cmp_alloc_n(nt, sizeof *porder);
    int *lfirst = mpx_cmp_alloc_n(nn, sizeof *lfirst); /* a node's first layer; -1: none */
    mpx_value *ref = mpx_cmp_alloc_values(nt), *cand = mpx_cmp_alloc_values(nt), *outs = mpx_cmp_alloc_values(max_out);
    mpx_compare *c = calloc(1, sizeof *c);
    mpx_status st = MPX_OK;
    const volatile int *scope = NULL;
    bool scoped = false;
    if (c) {
        c->g = g;
        c->layers = mpx_cmp_alloc_n(k->n_layers, sizeof *c->layers);
        c->ref = mpx_cmp_alloc_values(nt);
        c->cand = mpx_cmp_alloc_values(nt);
    }
    if (!dirty || !changed || !layer || !want || !regen || !rregen || !hold || !same || !inner || !whole || !pass || !plast || !porder || !lfirst || !share || !last || !ref || !cand || !outs || !c || !c->layers ||
        !c->ref || !c->cand) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < nt; t++) last[t] = -1;
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
    /* No work twice (as a full run's plan_shared): a dirty node that
     * rounds nothing (mpx_cmp_rounds_nothing) whose every input's candidate
     * value is the reference's is not run; its outputs' candidate values
     * are the reference's (same), which the run reads where they are
     * needed and the cache then holds once. A search's set of every
     * candidate fp32 made det at 640x640 compute the whole model again,
     * 660 MB of values the process had never touched. Inputs and constants
     * held in fp32 start the same (mpx_exec_start_some copies or views
     * them unrounded); a clean node's outputs are as the cache recorded.
     * A node that computes reads such an input as the reference's value
     * where that is at hand (need_ref); else the value is made: by its
     * producer, run after all when it was to share (the same bits), or
     * made again as a clean node's (regen). Not where a tensor has two
     * writers. */
    bool can_share = !mpx_env_on("MPX_CMP_NOSHARE");
    for (int i = 0; i < nn && can_share; i++)
        for (int j = 0; j < g->nodes[i]->n_outputs; j++)
            if (g->nodes[i]->outputs[j] && g->nodes[i]->outputs[j]->producer != g->nodes[i]) can_share = false;
    for (int t = 0; t < nt && can_share; t++) {
        const mpx_tensor *tt = g->tensors[t];
        same[t] = (!tt->producer || mpx_exec_skipped(tt->producer)) && !fmt_of(a, t);
    }
    for (int i = 0; i < nn && can_share; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        bool sh = dirty[i] && mpx_cmp_rounds_nothing(a, n);
        for (int j = 0; sh && j < n->n_inputs; j++) sh = !n->inputs[j] || same[n->inputs[j]->index];
        for (int j = 0; sh && j < n->n_outputs; j++) sh = !n->outputs[j] || k->rank[n->outputs[j]->index] >= 0;
        share[i] = sh;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t) same[t->index] = dirty[i] ? sh : k->same[t->index];
        }
    }
    /* What the run reads from the cache: reference values of dirty nodes'
     * measured layers, both values of a clean layer measured now and not
     * before, both values of kept tensors, and the candidate values of the
     * dirty nodes' unchanged inputs. A value the cache lacks is made again
     * by its producer (same precision, same inputs, so the same bits; its
     * layer stands), and so on back to values the cache holds or the run
     * makes (inputs, constants):
     * - a candidate value ("regen"), also one dropped over budget: without
     *   it such a trial ran in full, the reference included, and as the
     *   earliest values go first, on det at 640x640 every trial of an early
     *   node did (13 of a search's 85 evaluations; the search 9.5 -> 7.1 s);
     * - a reference value ("rregen"), one a full run did not give the cache
     *   (compare.c: plan_lean) or one it left out as unmeasured; one dropped
     *   over budget means a full run, which refills the cache in order,
     *   rather than a partial one holding a whole run's values at once.
     * Remade values are given to the cache at the end (values of clean
     * nodes: the same bits before and after the run, so not part of what
     * an undo takes back), but those dropped over budget, which are freed
     * after their last reader (last[]) unless the end reads them (hold). */
    bool ok = true;
    for (int i = 0; i < nn && ok; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_outputs && ok; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && layer[t->index] && mpx_cmp_measured(opts, t->index)) ok = need_ref(k, t, rregen);
        }
    }
    for (int i = 0; i < k->n_layers && ok; i++) {
        const mpx_layer *L = &k->layers[i];
        if (L->unmeasured && !dirty[L->node] && mpx_cmp_measured(opts, L->tensor)) {
            const mpx_tensor *t = g->tensors[L->tensor];
            ok = need_ref(k, t, rregen) && (same[t->index] || need_cand(k, t, changed, regen));
            hold[L->tensor] = true;
        }
    }
    for (int t = 0; t < nt && ok; t++)
        if (k->rank[t] >= 0 && mpx_cmp_kept(g, opts, t)) {
            ok = need_ref(k, g->tensors[t], rregen) && (same[t] || need_cand(k, g->tensors[t], changed, regen));
            hold[t] = true;
        }
    for (int i = nn - 1; i >= 0 && ok; i--) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; rregen[i] && j < n->n_inputs && ok; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && k->rank[t->index] >= 0) ok = need_ref(k, t, rregen);
        }
        if ((!dirty[i] || share[i]) && !regen[i]) continue;
        for (int j = 0; j < n->n_inputs && ok; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && k->rank[t->index] >= 0 && same[t->index]) { /* the reference's value is read */
                if (need_ref(k, t, rregen)) continue;
                if (changed[t->index]) { /* (its producer comes later in this loop) */
                    share[t->producer->index] = false;
                    continue;
                }
            }
            if (!t || k->rank[t->index] < 0 || changed[t->index] || k->cand[t->index].n >= 0) continue;
            need_cand(k, t, changed, regen);
            if (k->rank[t->index] < k->evict && !hold[t->index] && i > last[t->index]) last[t->index] = i;
        }
    }
    /* A candidate value made again only for other values made again (the
     * Add and BatchNormalization before the Relu that feeds a recoloured
     * ConvTranspose, when full runs left all three out) is passed through:
     * freed after its last reader, not given to the cache, and not written
     * whole where its readers run as one chain (below). Given to the cache,
     * such values took memory the process had never touched: det's first
     * re-run after recolouring its last ConvTranspose made three values of
     * 9.8 MB and grew the process by 18 MB for the one it needed. A later
     * run that needs one makes it again, as now. */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; regen[i] && !dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && k->rank[t->index] >= 0 && !hold[t->index] && !mpx_cmp_kept(g, opts, t->index))
                inner[t->index] = true;
        }
        for (int j = 0; dirty[i] && !share[i] && j < n->n_inputs; j++)
            if (n->inputs[j]) inner[n->inputs[j]->index] = false;
    }
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; regen[i] && !dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (t && inner[t->index] && last[t->index] < i) last[t->index] = i;
        }
        for (int j = 0; ((dirty[i] && !share[i]) || regen[i]) && j < n->n_inputs; j++) {
            const mpx_tensor *t = n->inputs[j];
            if (t && last[t->index] >= 0 && i > last[t->index]) last[t->index] = i;
        }
    }
    /* The remade values held to the end must fit the room the budget
     * leaves (they are given to the cache then): else a full run, which
     * streams. */
    size_t held = 0, room = k->budget > k->bytes ? k->budget - k->bytes : 0;
    for (int i = 0; i < nn && ok; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; (rregen[i] || regen[i]) && j < n->n_outputs && ok; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            size_t b = est_bytes(t);
            int copies = rregen[i] + (regen[i] && !dirty[i] && k->rank[t->index] >= k->evict);
            /* a constant a node passes on (Identity of a weight) has a size
             * but no activation estimate: counted at 8 bytes an element */
            if (b == 0 && t->nelem > 0 && (t->flags & (MPX_T_CONSTANT | MPX_T_FOLDED)))
                b = (size_t)t->nelem * 8u;
            if (copies && b == 0 && t->nelem != 0) ok = false; /* (not known) */
            held += (size_t)copies * b;
            ok = ok && held <= room;
        }
    }
    if (!ok) goto done;
    /* A run nobody may undo lets go of the candidate values it will replace
     * (the dirty nodes' outputs: only dirty nodes read them, and they read
     * the new ones) before it makes any, so the heap hands their blocks to
     * the new values of the same sizes. Made while the old ones were held,
     * the new values took memory the process had never touched, which the
     * host backs as it is first written: a re-run of the quantised BERT-style
     * encoder after recolouring its last layer's Gemm grew the process by
     * 6 MB and took 17-32 ms instead of 3-4 on this virtual machine. Should
     * the run then fail, the cache lacks those values as it lacks ones
     * dropped over budget: a later run that reads one makes it again from
     * its producer under the recorded plan (the same bits). Not where a
     * tensor has two writers (a clean one may have written the value). */
    bool let_go = !opts->undoable;
    for (int i = 0; i < nn && let_go; i++)
        for (int j = 0; j < g->nodes[i]->n_outputs && let_go; j++)
            let_go = !g->nodes[i]->outputs[j] || g->nodes[i]->outputs[j]->producer == g->nodes[i];
    for (int i = 0; i < nn && let_go; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; dirty[i] && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t || k->cand[t->index].n < 0 || k->cand[t->index].borrowed) continue;
            k->bytes -= mpx_value_bytes(&k->cand[t->index]);
            mpx_value_free(&k->cand[t->index]);
        }
    }

    /* Only the constants and inputs the dirty nodes read, and the kept
     * ones, are made (rounding every weight again cost more than
     * recomputing a late layer). */
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; ((dirty[i] && !share[i]) || regen[i] || rregen[i]) && j < n->n_inputs; j++)
            if (n->inputs[j]) want[n->inputs[j]->index] = true;
    }
    bool *keep = mpx_cmp_alloc_n(nt, sizeof *keep);
    if (!keep) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < nt; t++) {
        keep[t] = mpx_cmp_kept(g, opts, t);
        want[t] = want[t] || keep[t];
    }
    double t0 = mpx_cmp_now_ms();
    st = mpx_exec_start_some(g, NULL, inputs, want, NULL, ref, err);
    double t1 = mpx_cmp_now_ms();
    if (st == MPX_OK) st = mpx_exec_start_some(g, a, inputs, want, keep, cand, err);
    free(keep);
    c->ms_ref = t1 - t0;
    c->ms_cand = mpx_cmp_now_ms() - t1;
    if (st != MPX_OK) goto done;
    /* The forms of the weights the recomputed nodes read rounded (a
     * recolour's new formats), before the values they make. */
    bool *runs = mpx_cmp_alloc_n(nn, sizeof *runs);
    for (int i = 0; runs && i < nn; i++) runs[i] = (dirty[i] && !share[i]) || regen[i];
    if (runs) (void)mpx_exec_prepare_forms(g, a, cand, runs);
    free(runs);
    size_t live = 0, peak;
    for (int t = 0; t < nt; t++) live += mpx_value_bytes(&ref[t]) + mpx_value_bytes(&cand[t]);
    peak = live;
    for (int t = 0; t < nt; t++)
        if (k->rank[t] >= 0) {
            view(&ref[t], &k->ref[t]);
            view(&cand[t], &k->cand[t]);
        }
    const bool fuse = mpx_fuse_enabled();
    /* The run's own cancel reaches inside the kernels too (put back at done). */
    scope = mpx_k_cancel_scope(opts->cancel);
    scoped = true;
    /* Layers: the cached ones, the dirty nodes' measured again (as each
     * node is made, below), and those measured now that were left out
     * before (at the end). */
    for (int i = 0; i < nn; i++) lfirst[i] = -1;
    for (int i = 0; i < k->n_layers; i++) {
        mpx_layer *L = &c->layers[c->n_layers++];
        *L = k->layers[i];
        L->fmt = fmt_of(a, L->tensor);
        if (lfirst[L->node] < 0) lfirst[L->node] = i; /* (a node's layers are together, in node order) */
        if (!mpx_cmp_measured(opts, L->tensor) && dirty[L->node]) mpx_cmp_set_unmeasured(L);
    }
    /* A run that cannot be undone passes through the values full runs leave
     * out of the cache (lean) that its recomputed nodes make, candidate and
     * reference: each is freed once its last reader has run and its layer
     * is measured, and none is given to the cache, as a full run keeps none.
     * Kept to the end, the quantised BERT-style encoder's first re-run after
     * recolouring its last layer's Gemm held 14 MB of them at once, more
     * than its heap had free, and took memory the host backs as it is first
     * written (5 to 54 ms where later re-runs take 3 to 4). So the reference
     * values are made as the run reaches them, not all first, and the
     * layers are measured node by node. Searches' trials (undoable) keep
     * them: the next trial of the same layers reads them. */
    int n_pass = 0, next_free = 0, rnext = 0;
    if (let_go) {
        for (int t = 0; t < nt; t++) plast[t] = -1;
        for (int i = 0; i < nn; i++) {
            const mpx_node *n = g->nodes[i];
            const bool makes = rregen[i] || (dirty[i] && !share[i]) || regen[i];
            for (int j = 0; makes && j < n->n_inputs; j++)
                if (n->inputs[j] && plast[n->inputs[j]->index] < i) plast[n->inputs[j]->index] = i;
            for (int j = 0; (rregen[i] || dirty[i]) && j < n->n_outputs; j++) {
                const mpx_tensor *t = n->outputs[j];
                if (!t || !k->lean[t->index] || hold[t->index] || mpx_cmp_kept(g, opts, t->index)) continue;
                if (plast[t->index] < i) plast[t->index] = i;
                pass[t->index] = true;
            }
        }
        /* the passed-through values by their last reader, to free in order */
        for (int i = 0; i < nn; i++) { /* (plast[t] is t's producer or a node reading it) */
            const mpx_node *n = g->nodes[i];
            for (int j = 0; j < n->n_inputs + n->n_outputs; j++) {
                const mpx_tensor *t = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
                bool seen = false;
                for (int x = 0; x < j && !seen; x++)
                    seen = (x < n->n_inputs ? n->inputs[x] : n->outputs[x - n->n_inputs]) == t;
                if (t && !seen && pass[t->index] && plast[t->index] == i) porder[n_pass++] = t->index;
            }
        }
    }
    /* Candidate values that are the reference's (same: a shared node's
     * outputs, a clean one's the cache marked, constants and inputs held in
     * fp32) read the reference's value, for the nodes that compute, the
     * metrics and the kept copies. Where the reference's is absent, a
     * shared node's output is absent too (not the cache's old value: no
     * node reads it, its producer runs after all where one would), and a
     * clean one's stays the value the cache holds, if any (made again when
     * the reference's was not at hand: the same bits). Here for the values
     * at hand, and for those made again as each is made. */
    for (int t = 0; t < nt; t++)
        if (same[t] && (ref[t].n >= 0 || changed[t]) && (cand[t].n < 0 || cand[t].borrowed)) {
            mpx_value_free(&cand[t]);
            if (ref[t].n >= 0) view(&cand[t], &ref[t]);
        }
    for (int i = 0; i <= nn; i++) {
        const mpx_node *n = i < nn ? g->nodes[i] : NULL;
        const bool makes = n && (dirty[i] || regen[i]);
        int span = makes && !share[i] && fuse ? mpx_fuse_span(g, i) : 0, end = makes ? i + (span > 1 ? span : 1) - 1 : i;
        /* (not where a value is passed through: the chain's outputs would
         * all be held at once until its layers are measured) */
        for (int q = i; span >= 2 && q <= end; q++) {
            if (!((dirty[q] && !share[q]) || (regen[q] && !dirty[q])) && !mpx_exec_skipped(g->nodes[q])) span = 0;
            for (int j = 0; span >= 2 && j < g->nodes[q]->n_outputs; j++)
                if (g->nodes[q]->outputs[j] && pass[g->nodes[q]->outputs[j]->index]) span = 0;
        }
        if (span < 2) end = i;
        /* Reference values made again up to here (they read reference
         * values only), node by node as the stream's reference steps run. */
        for (; rnext < nn && (rnext <= end || i == nn); rnext++) {
            const mpx_node *r = g->nodes[rnext];
            if (!rregen[rnext]) continue;
            if (opts->cancel && *opts->cancel) {
                st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                                   r->name, rnext + 1, nn);
                goto done;
            }
            size_t scratch = 0;
            double t2 = mpx_cmp_now_ms();
            st = mpx_exec_node(r, NULL, ref, false, outs, &scratch, err);
            c->ms_ref += mpx_cmp_now_ms() - t2;
            if (st != MPX_OK) goto done;
            live = take_outs(r, scratch, outs, ref, live, &peak);
            if (!dirty[rnext] && !regen[rnext]) c->n_run++;
            for (int j = 0; j < r->n_outputs; j++) {
                const mpx_tensor *o = r->outputs[j];
                if (!o) continue;
                const int t = o->index;
                if (same[t] && (ref[t].n >= 0 || changed[t]) && (cand[t].n < 0 || cand[t].borrowed)) {
                    mpx_value_free(&cand[t]);
                    if (ref[t].n >= 0) view(&cand[t], &ref[t]);
                }
            }
        }
        if (!makes) {
            if (i == nn) end = nn - 1;
            goto measured;
        }
        if (share[i]) { /* (its outputs are the reference's: above) */
            c->n_run++; /* (counted as a full run counts them: mpx_compare's n_shared) */
            c->n_shared++;
            goto measured;
        }
        if (opts->cancel && *opts->cancel) {
            st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)",
                               n->name, i + 1, nn);
            goto done;
        }
        size_t scratch = 0;
        double t2 = mpx_cmp_now_ms();
        /* A chain of dirty elementwise nodes runs by tiles (fuse.c), every
         * output written whole (the cache keeps them all, where none is
         * passed through: above): the same bits, a pass over memory
         * less per node. A search evaluation that recomputes det's candidate
         * spent a third of its time in such nodes one by one; det's search
         * went 11.4 -> 10.7 s (MPX_FUSE=0 against 1). */
        if (span >= 2) {
            size_t before = 0, after = 0;
            for (int q = i; q <= end; q++)
                if (!mpx_exec_skipped(g->nodes[q])) {
                    const int t = g->nodes[q]->outputs[0]->index;
                    before += mpx_value_bytes(&cand[t]);
                    /* written whole: what the run or the cache keeps, and
                     * what a node after the chain reads */
                    whole[t] = !inner[t] || last[t] > end;
                }
            if (mpx_fuse_run(g, a, i, span, cand, whole, NULL, err) == MPX_OK) {
                for (int q = i; q <= end; q++)
                    if (!mpx_exec_skipped(g->nodes[q])) {
                        after += mpx_value_bytes(&cand[g->nodes[q]->outputs[0]->index]);
                        c->n_run++;
                    }
                live = live - before + after;
                if (live > peak) peak = live;
                c->ms_cand += mpx_cmp_now_ms() - t2;
                live -= free_remade(g, opts, i, end, last, cand);
                goto measured;
            }
            if (mpx_k_cancelled()) { /* (the chain's values are dropped, as a node's are) */
                st = mpx_error_set(err, MPX_E_CANCELLED, "run cancelled at node \"%s\" (%d of %d)", n->name, i + 1, nn);
                goto done;
            }
            if (err) mpx_error_clear(err); /* nothing changed: node by node, with its own message */
            end = i;
        }
        st = mpx_exec_node(n, a, cand, false, outs, &scratch, err);
        c->ms_cand += mpx_cmp_now_ms() - t2;
        if (st != MPX_OK) goto done;
        live = take_outs(n, scratch, outs, cand, live, &peak);
        c->n_run++;
        live -= free_remade(g, opts, i, i, last, cand);
    measured:
        /* The dirty nodes' measured layers, then the values passed through
         * that nothing reads any more. */
        for (int q = i; q <= end && q < nn; q++)
            for (int x = lfirst[q]; dirty[q] && x >= 0 && x < c->n_layers && c->layers[x].node == q; x++)
                if (mpx_cmp_measured(opts, c->layers[x].tensor) &&
                    (st = measure_layer(g, c, &c->layers[x], ref, cand, err)) != MPX_OK)
                    goto done;
        for (; next_free < n_pass && plast[porder[next_free]] <= end; next_free++) {
            const int t = porder[next_free];
            live -= mpx_value_bytes(&cand[t]) + mpx_value_bytes(&ref[t]);
            mpx_value_free(&cand[t]);
            mpx_value_free(&ref[t]);
        }
        if (span >= 2) i = end;
    }
    /* Layers measured now that were left out before. */
    for (int i = 0; i < c->n_layers; i++) {
        mpx_layer *L = &c->layers[i];
        if (dirty[L->node] || !L->unmeasured || !mpx_cmp_measured(opts, L->tensor)) continue;
        if ((st = measure_layer(g, c, L, ref, cand, err)) != MPX_OK) goto done;
    }
    /* Kept values: copies of what the cache holds, inputs and constants as
     * mpx_exec_start made them. */
    for (int t = 0; t < nt; t++) {
        if (!mpx_cmp_kept(g, opts, t)) continue;
        if (k->rank[t] < 0) {
            take(&c->ref[t], &ref[t]);
            take(&c->cand[t], &cand[t]);
            continue;
        }
        if (ref[t].n >= 0 && (st = mpx_value_copy(&c->ref[t], &ref[t], err)) != MPX_OK) goto done;
        if (cand[t].n >= 0 && (st = mpx_value_copy(&c->cand[t], &cand[t], err)) != MPX_OK)
            goto done;
    }
    /* The cache now describes this run (and, when asked, remembers what it
     * describes no longer). */
    if (opts->undoable) undo_begin(k);
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        if (!dirty[i]) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            /* (an absent output replaces the cached value too) */
            mpx_value v;
            mpx_value_clear(&v);
            if (!share[i]) take(&v, &cand[t->index]);
            cache_put_cand(k, t->index, &v, share[i]);
            mpx_value_free(&v);
        }
    }
    for (int i = 0; i < nn; i++) {
        const mpx_node *n = g->nodes[i];
        for (int j = 0; (rregen[i] || (regen[i] && !dirty[i])) && j < n->n_outputs; j++) {
            const mpx_tensor *t = n->outputs[j];
            if (!t) continue;
            if (rregen[i]) cache_put_remade(k, t->index, &ref[t->index], k->ref);
            if (regen[i] && !dirty[i]) cache_put_remade(k, t->index, &cand[t->index], k->cand);
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
    if (scoped) mpx_k_cancel_scope(scope);
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
    free(regen);
    free(rregen);
    free(hold);
    free(same);
    free(inner);
    free(whole);
    free(pass);
    free(plast);
    free(porder);
    free(lfirst);
    free(share);
    free(last);
    mpx_compare_free(c);
    return st;
}
