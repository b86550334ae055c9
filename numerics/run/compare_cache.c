/* compare_cache.c - values kept between comparisons, so a recolour
 * reruns only what changed: what the cache holds, its budget, what full
 * runs give it, undo (compare_cache_internal.h; the run from it:
 * compare_incremental.c). */
#include "compare_cache_internal.h"

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


void mpx_cmp_undo_drop(mpx_compare_cache *k) {
    for (int i = 0; i < k->n_undo; i++) mpx_value_free(&k->undo_cand[k->undo_t[i]]);
    k->n_undo = 0;
    k->can_undo = false;
}

static void undo_free(mpx_compare_cache *k) {
    mpx_cmp_undo_drop(k);
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


/* Takes r and c (leaving them absent) when t is cached and not dropped for
 * good; otherwise leaves them to the caller, who frees them. */
void mpx_cmp_cache_put(mpx_compare_cache *k, int t, mpx_value *r, mpx_value *c) {
    if (!k->rank || k->rank[t] < 0 || k->rank[t] < k->evict || r->borrowed || c->borrowed ||
        (r->n < 0 && c->n < 0)) /* (the run's last sweep drops absent values too) */
        return;
    cache_drop(k, t); /* (same: false; a full run copies shared values, plan_shared) */
    k->bytes += mpx_value_bytes(r) + mpx_value_bytes(c);
    mpx_cmp_take(&k->ref[t], r);
    mpx_cmp_take(&k->cand[t], c);
    cache_trim(k);
}

/* A recomputed candidate value replaces the cached one (same rule); the
 * one replaced goes to the undo record when one is being kept. same: the
 * value is the reference's (c absent: the cache holds none of its own). */
void mpx_cmp_cache_put_cand(mpx_compare_cache *k, int t, mpx_value *c, bool same) {
    if (k->rank[t] < 0 || k->rank[t] < k->evict || c->borrowed) return;
    k->same[t] = same;
    k->bytes -= mpx_value_bytes(&k->cand[t]);
    if (k->can_undo) {
        k->undo_t[k->n_undo++] = t;
        mpx_cmp_take(&k->undo_cand[t], &k->cand[t]);
    } else {
        mpx_value_free(&k->cand[t]);
    }
    k->bytes += mpx_value_bytes(c);
    mpx_cmp_take(&k->cand[t], c);
    cache_trim(k);
}

/* The format a value of t is held in and a node's precision under a, as
 * the executor reads them (fp32 written NULL): what decides its bits. */
const mpx_format *mpx_cmp_fmt_of(const mpx_assign *a, int t) {
    return a && mpx_cmp_is_low(a->tensor[t]) ? a->tensor[t] : NULL;
}

mpx_node_prec mpx_cmp_prec_of(const mpx_assign *a, int n) {
    mpx_node_prec p = {0};
    if (!a) return p;
    p = a->node[n];
    if (!mpx_cmp_is_low(p.compute)) p.compute = NULL;
    if (!mpx_cmp_is_low(p.output)) p.output = NULL;
    return p;
}

bool mpx_cmp_same_prec(const mpx_node_prec *x, const mpx_node_prec *y) {
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
size_t mpx_cmp_est_bytes(const mpx_tensor *t) {
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
        if (mpx_cmp_est_bytes(o) < LEAN_MIN_BYTES || o->producer != n || (o->flags & MPX_T_OUTPUT)) continue;
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
    for (int i = 0; i < k->n_tensors; i++) k->tfmt[i] = mpx_cmp_fmt_of(a, i);
    for (int i = 0; i < k->n_nodes; i++) k->prec[i] = mpx_cmp_prec_of(a, i);
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
void mpx_cmp_undo_begin(mpx_compare_cache *k) {
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
        mpx_cmp_take(&k->cand[t], &k->undo_cand[t]);
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

/* A value a clean node made again (vals: k->ref or k->cand) replaces what
 * the cache holds of t (nothing, or the same bits), when it is not dropped
 * for good and fits the budget as it is; what it does not take stays with
 * the caller. */
void mpx_cmp_cache_put_remade(mpx_compare_cache *k, int t, mpx_value *v, mpx_value *vals) {
    if (k->rank[t] < 0 || k->rank[t] < k->evict || v->n < 0 || v->borrowed ||
        k->bytes - mpx_value_bytes(&vals[t]) + mpx_value_bytes(v) > k->budget) /* (never at older values' cost) */
        return;
    k->bytes -= mpx_value_bytes(&vals[t]);
    mpx_value_free(&vals[t]);
    k->bytes += mpx_value_bytes(v);
    mpx_cmp_take(&vals[t], v);
    cache_trim(k);
}
