/* compare_cache_internal.h - the incremental cache's state, shared by
 * compare_cache.c (what it holds, its budget, what full runs give it, undo)
 * and compare_incremental.c (the run from it). numerics/run only.
 *
 * Ownership: the caller owns the cache (mpx_compare_cache_new); the cache
 * owns every value in ref, cand, inputs and undo_cand, and a run borrows
 * views of them for its duration. */
#ifndef MPX_COMPARE_CACHE_INTERNAL_H
#define MPX_COMPARE_CACHE_INTERNAL_H

#include "compare_internal.h"

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

/* Move src's value into dst (src left absent). */
static inline void mpx_cmp_take(mpx_value *dst, mpx_value *src) {
    *dst = *src;
    mpx_value_clear(src);
}

/* The format a value of t is held in and a node's precision under a, as
 * the executor reads them (fp32 written NULL): what decides its bits. */
const mpx_format *mpx_cmp_fmt_of(const mpx_assign *a, int t);
mpx_node_prec mpx_cmp_prec_of(const mpx_assign *a, int n);
bool mpx_cmp_same_prec(const mpx_node_prec *x, const mpx_node_prec *y);
/* The bytes of a value of t from its inferred shape (0: unknown, a
 * sequence, or not an activation). */
size_t mpx_cmp_est_bytes(const mpx_tensor *t);
/* Drop the undo record (the run before stands); start one for the run
 * being stored (its predecessor's assignment and layers). */
void mpx_cmp_undo_drop(mpx_compare_cache *k);
void mpx_cmp_undo_begin(mpx_compare_cache *k);
/* A recomputed candidate value replaces the cached one (the one replaced
 * goes to the undo record when one is kept); same: the value is the
 * reference's (c absent). */
void mpx_cmp_cache_put_cand(mpx_compare_cache *k, int t, mpx_value *c, bool same);
/* A value a clean node made again (vals: k->ref or k->cand) replaces what
 * the cache holds of t, when it fits the budget as it is. */
void mpx_cmp_cache_put_remade(mpx_compare_cache *k, int t, mpx_value *v, mpx_value *vals);

#endif
