/* kern_unique.c - Unique: the distinct values of X (no axis: X flattened) or
 * its distinct slices along axis, with where each first occurs (indices),
 * where each element or slice of X went (inverse_indices) and how often each
 * occurs (counts). sorted 1 (the default) orders them ascending (slices
 * compared element by element in row-major order), sorted 0 by first
 * occurrence. Values are compared as numbers; -0 equals 0, and NaNs (never
 * equal to anything) are each their own value, placed last when sorted.
 * Nothing is rounded: every output is a copy or an index. */
#include "kern_data.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    const mpx_value *x;
    int64_t outer, len, inner; /* X as [outer, len, inner]: slice k is x[:, k, :] */
} ctx;

/* qsort has no context argument: the comparison reads the one being sorted
 * (a kernel runs on one thread at a time per node; this is per call). */
static _Thread_local const ctx *cur;

/* -1, 0, 1 ordering of two elements; NaN after everything, unequal to all. */
static int cmp_el(const mpx_value *x, int64_t a, int64_t b) {
    if (x->d) { /* float64 (kernels_f64.def): compared as doubles */
        double u = x->d[a], v = x->d[b];
        if (isnan(u) || isnan(v)) return isnan(u) && isnan(v) ? (a < b ? -1 : a > b) : isnan(u) ? 1 : -1;
        return u < v ? -1 : u > v;
    }
    if (x->f) {
        float u = x->f[a], v = x->f[b];
        if (isnan(u) || isnan(v)) return isnan(u) && isnan(v) ? (a < b ? -1 : a > b) : isnan(u) ? 1 : -1;
        return u < v ? -1 : u > v;
    }
    return x->i[a] < x->i[b] ? -1 : x->i[a] > x->i[b];
}

static int cmp_slice(const ctx *k, int64_t a, int64_t b) {
    for (int64_t o = 0; o < k->outer; o++)
        for (int64_t i = 0; i < k->inner; i++) {
            int64_t base = o * k->len * k->inner + i;
            int r = cmp_el(k->x, base + a * k->inner, base + b * k->inner);
            if (r) return r;
        }
    return 0;
}

/* Stable: equal slices keep their order, so a group's first is its first
 * occurrence. */
static int by_slice(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    int r = cmp_slice(cur, a, b);
    return r ? r : (a < b ? -1 : a > b);
}

typedef struct group {
    int64_t first, count, pos; /* first occurrence, occurrences, place in Y */
} group;

static int by_first(const void *pa, const void *pb) {
    const group *a = pa, *b = pb;
    return a->first < b->first ? -1 : a->first > b->first;
}

mpx_status mpx_k_unique(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need_as(c, in, n_in, 1, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    if (!x->f && !x->i && !x->d) return mpx_kernel_error(c, MPX_E_INVALID, "X has no numeric values");
    const mpx_attr *ax = mpx_node_attr(c->node, "axis");
    int64_t sorted = mpx_node_attr_int(c->node, "sorted", 1);
    ctx k = {.x = x, .outer = 1, .len = x->n, .inner = 1};
    int axis = -1;
    if (ax) {
        int64_t a = ax->i < 0 ? ax->i + x->rank : ax->i;
        if (x->rank < 1 || a < 0 || a >= x->rank)
            return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is out of range for rank %d", (long long)ax->i,
                                    x->rank);
        axis = (int)a;
        k.len = x->dims[axis];
        for (int i = 0; i < axis; i++) k.outer *= x->dims[i];
        for (int i = axis + 1; i < x->rank; i++) k.inner *= x->dims[i];
    }
    int64_t L = k.len, *order = NULL, *inv = NULL;
    group *gr = NULL;
    if ((st = kn_scratch(c, (size_t)L, sizeof *order, (void **)&order)) ||
        (st = kn_scratch(c, (size_t)L, sizeof *inv, (void **)&inv)) ||
        (st = kn_scratch(c, (size_t)L, sizeof *gr, (void **)&gr))) {
        free(order), free(inv);
        return st;
    }
    for (int64_t j = 0; j < L; j++) order[j] = j;
    cur = &k;
    qsort(order, (size_t)L, sizeof *order, by_slice);
    cur = NULL;
    int64_t U = 0;
    for (int64_t j = 0; j < L; j++) {
        if (j == 0 || cmp_slice(&k, order[j - 1], order[j]) != 0) gr[U++] = (group){.first = order[j], .count = 0};
        gr[U - 1].count++;
        inv[order[j]] = U - 1; /* the group, renumbered below when unsorted */
    }
    if (!sorted) {
        int64_t *renum = order; /* no longer needed as the sort order */
        for (int64_t g = 0; g < U; g++) gr[g].pos = g;
        qsort(gr, (size_t)U, sizeof *gr, by_first);
        for (int64_t g = 0; g < U; g++) renum[gr[g].pos] = g;
        for (int64_t j = 0; j < L; j++) inv[j] = renum[inv[j]];
    }
    /* Y: the groups' first slices, in group order */
    int64_t yd[MPX_MAX_RANK];
    int yr = ax ? x->rank : 1;
    if (ax) {
        memcpy(yd, x->dims, sizeof yd);
        yd[axis] = U;
    } else {
        yd[0] = U;
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, yr, yd)) == MPX_OK) {
        size_t es = esz(x);
        const char *xb = cbytes(x);
        char *yb = bytes(&out[0]);
        for (int64_t o = 0; o < k.outer; o++)
            for (int64_t g = 0; g < U; g++) {
                const char *src = xb + (size_t)((o * L + gr[g].first) * k.inner) * es;
                char *dst = yb + (size_t)((o * U + g) * k.inner) * es;
                memcpy(dst, src, (size_t)k.inner * es);
            }
    }
    int64_t one[1] = {U}, all[1] = {L};
    for (int q = 1; q < n_out && q < 4 && st == MPX_OK; q++) {
        if (!kn_wants_out(c, n_out, q)) continue;
        if ((st = mpx_k_alloc(c, &out[q], MPX_DT_INT64, 1, q == 2 ? all : one))) break;
        for (int64_t j = 0; j < (q == 2 ? L : U); j++)
            out[q].i[j] = q == 1 ? gr[j].first : q == 2 ? inv[j] : gr[j].count;
    }
    if (st != MPX_OK)
        for (int q = 0; q < n_out && q < 4; q++) mpx_value_free(&out[q]);
    free(order), free(inv), free(gr);
    return st;
}
