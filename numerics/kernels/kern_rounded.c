/* kern_rounded.c - weights rounded to a low format, kept on their tensor
 * (kern_internal.h: mpx_k_kept_rounded, mpx_k_rounded_values,
 * mpx_k_value_owner), as entries of the list kern_kept.c keeps. */
#include "kern_kept.h"

#include <stdlib.h>

/* ---- rounded weights kept on their tensor ---------------------------------------------------
 * A candidate run rounds each weight it reads in a low compute format: a
 * copy rounded per node call (run/exec.c) and packed by the GEMM core
 * every call would cost a visible share of a report. The graph's own values
 * rounded to a format are kept on the tensor instead (an entry of the same
 * list, so they go with the tensor and are dropped when its values move),
 * and the packing of that copy is kept like the weights' own. Bounded:
 * rounded copies total at most KG_ROUNDED_MAX_MB in the process (their
 * packings as much again); past it, copies are made per call. */
enum { KG_ROUNDED_MAX_MB = 1024 };

size_t mpx_numerics_kept_rounded_bytes(void) {
    const long long b = atomic_load(&kg_rounded_bytes);
    return b > 0 ? (size_t)b : 0;
}

const float *mpx_k_kept_rounded(mpx_tensor *t, const mpx_format *f) {
    if (!t || !f || !t->f32 || t->nelem <= 0) return NULL;
    const kg_key key = {.k = {.kind = KG_KEPT_ROUNDED, .a = t->f32, .M = t->nelem, .fmt = f}, .owner = t};
    const kg_kept *k = kg_kept_find(&key);
    if (k) return k->ap;
    const long long bytes = (long long)t->nelem * (long long)sizeof(float);
    /* MPX_KERN_NOKEPT=1: no budget at all (the tests' way to take every
     * route that copies per call instead) */
    const long long budget = mpx_env_on("MPX_KERN_NOKEPT") ? 0 : (long long)KG_ROUNDED_MAX_MB << 20;
    if (atomic_fetch_add(&kg_rounded_bytes, bytes) + bytes > budget) {
        atomic_fetch_sub(&kg_rounded_bytes, bytes);
        return NULL;
    }
    float *r = kg_alloc((size_t)t->nelem);
    if (!r) {
        atomic_fetch_sub(&kg_rounded_bytes, bytes);
        return NULL;
    }
    mpx_round_array(f, r, t->f32, (size_t)t->nelem);
    if (kg_kept_add(&key, r, true)) return r;
    /* another thread kept one meanwhile (or the tensor's derived slot is
     * not the list's) */
    free(r);
    atomic_fetch_sub(&kg_rounded_bytes, bytes);
    k = kg_kept_find(&key);
    return k ? k->ap : NULL;
}

const float *mpx_k_rounded_values(mpx_tensor *t, const mpx_format *f, float **owned) {
    *owned = NULL;
    const float *kept = mpx_k_kept_rounded(t, f);
    if (kept || !t || !t->f32 || t->nelem <= 0) return kept;
    if (!(*owned = kg_alloc((size_t)t->nelem))) return NULL;
    mpx_round_array(f, *owned, t->f32, (size_t)t->nelem);
    return *owned;
}

mpx_tensor *mpx_k_value_owner(const mpx_kctx *c, int k, const void *data) {
    mpx_tensor *t = c && c->node && k < c->node->n_inputs ? c->node->inputs[k] : NULL;
    /* (a bounded walk: Identity chains are short, and a malformed graph's
     * cycle must not hang it) */
    for (int depth = 0; t && data && depth < 16; depth++) {
        const bool own = kg_kept_holds(t, data);
        if (own) return t;
        const mpx_node *p = t->producer;
        if (!p || p->op != MPX_OP_Identity || p->n_inputs < 1) break;
        t = p->inputs[0];
    }
    return NULL;
}

