/* kernels.c - the kernel table and what all kernels share (broadcasting,
 * axes, allocation, error messages naming the node). */
#include "kern_internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ops the registry knows: a new op in graph/ops.def must be looked at here
 * (given a kernel in kernels.def, or knowingly left without one). */
static_assert(MPX_OP_COUNT == 202, "graph/ops.def changed: update numerics/kernels.def");

static const mpx_kernel_fn kernel_table[MPX_OP_COUNT] = {
    [MPX_OP_UNKNOWN] = NULL,
#define MPX_KERNEL(op, fn) [MPX_OP_##op] = fn,
#include "kernels.def"
#undef MPX_KERNEL
};

mpx_kernel_fn mpx_kernel_for(mpx_op op) {
    if ((int)op <= 0 || op >= MPX_OP_COUNT) return NULL;
    return kernel_table[op];
}

/* Bit k: input k may be handed unrounded with its format (kernels.def). */
static const unsigned reads_rounded[MPX_OP_COUNT] = {
#define MPX_KERNEL(op, fn)
#define MPX_KERNEL_READS_ROUNDED(op, k) [MPX_OP_##op] = 1u << (k),
#include "kernels.def"
#undef MPX_KERNEL_READS_ROUNDED
#undef MPX_KERNEL
};

bool mpx_kernel_reads_rounded(mpx_op op, int input) {
    return (int)op > 0 && op < MPX_OP_COUNT && input >= 0 && input < 32 && (reads_rounded[op] >> input & 1u);
}

static const bool pointwise[MPX_OP_COUNT] = {
#define MPX_KERNEL(op, fn)
#define MPX_KERNEL_POINTWISE(op) [MPX_OP_##op] = true,
#include "kernels.def"
#undef MPX_KERNEL_POINTWISE
#undef MPX_KERNEL
};

static const bool takes_input0[MPX_OP_COUNT] = {
#define MPX_KERNEL(op, fn)
#define MPX_KERNEL_TAKES_INPUT0(op) [MPX_OP_##op] = true,
#include "kernels.def"
#undef MPX_KERNEL_TAKES_INPUT0
#undef MPX_KERNEL
};

bool mpx_env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

bool mpx_kernel_pointwise(mpx_op op) { return (int)op > 0 && op < MPX_OP_COUNT && pointwise[op]; }

bool mpx_kernel_takes_input0(mpx_op op) { return (int)op > 0 && op < MPX_OP_COUNT && takes_input0[op]; }

const mpx_format *mpx_k_in_round(const mpx_kctx *c, int k) {
    return c && c->in_round && c->node && k >= 0 && k < c->node->n_inputs ? c->in_round[k] : NULL;
}

mpx_status mpx_k_in_rounded(const mpx_kctx **c, mpx_kctx *local, int k, const mpx_value **v, mpx_value *local_v,
                            float **owned) {
    *owned = NULL;
    const mpx_format *f = mpx_k_in_round(*c, k);
    if (!f) return MPX_OK;
    const mpx_value *src = *v;
    *local = **c;
    local->in_round = NULL;
    *local_v = *src;
    local_v->borrowed = true;
    mpx_tensor *t = (*c)->node->inputs[k];
    if (src->f && src->n > 0) { /* (in_round is set for the constant's own values only) */
        const float *r = t && t->f32 == src->f ? mpx_k_rounded_values(t, f, owned) : NULL;
        if (!r) return mpx_kernel_error(*c, MPX_E_NOMEM, "out of memory for input %d rounded", k);
        local_v->f = (float *)r;
    }
    *c = local;
    *v = local_v;
    return MPX_OK;
}

mpx_status mpx_kernel_error(const mpx_kctx *c, mpx_status st, const char *fmt, ...) {
    static const mpx_node unnamed = {.name = "?", .op_type = "?"};
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(c->err, st, NULL, c->node ? c->node : &unnamed, fmt, ap);
    va_end(ap);
    return st;
}

mpx_status mpx_k_alloc(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                       const int64_t *dims) {
    mpx_error e = {0};
    mpx_status st = mpx_value_alloc(out, dt, rank, dims, &e);
    if (st != MPX_OK) return mpx_kernel_error(c, st, "%s", e.msg);
    return MPX_OK;
}

mpx_status mpx_k_alloc_raw(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank,
                           const int64_t *dims) {
    if (c && c->dest && c->dest_taken && !*c->dest_taken && mpx_dtype_is_float(dt) && dt != MPX_DT_DOUBLE && rank >= 0 &&
        rank <= MPX_MAX_RANK) {
        int64_t n = -1;
        if (mpx_dims_product(rank, dims, &n, NULL) == MPX_OK && n == c->dest_n) {
            memset(out, 0, sizeof *out);
            out->dtype = dt;
            out->rank = rank;
            for (int i = 0; i < rank; i++) out->dims[i] = dims[i];
            out->n = n;
            out->f = c->dest;
            out->borrowed = true;
            *c->dest_taken = true;
            return MPX_OK;
        }
    }
    mpx_error e = {0};
    mpx_status st = mpx_value_alloc_raw(out, dt, rank, dims, &e);
    if (st != MPX_OK) return mpx_kernel_error(c, st, "%s", e.msg);
    return MPX_OK;
}

mpx_status mpx_k_axis(const mpx_kctx *c, int64_t axis, int rank, int extra, int *out) {
    int64_t hi = rank + extra;
    if (axis < -hi || axis >= hi)
        return mpx_kernel_error(c, MPX_E_SHAPE, "axis %lld is out of range for rank %d",
                                (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + hi : axis);
    return MPX_OK;
}

mpx_status mpx_k_bcast_shape(const mpx_kctx *c, int n, const mpx_value *const *v, int *rank,
                             int64_t *dims) {
    int r = 0;
    for (int k = 0; k < n; k++)
        if (v[k] && v[k]->rank > r) r = v[k]->rank;
    for (int i = 0; i < r; i++) dims[i] = 1;
    for (int k = 0; k < n; k++) {
        if (!v[k]) continue;
        int off = r - v[k]->rank;
        for (int i = 0; i < v[k]->rank; i++) {
            int64_t d = v[k]->dims[i], *o = &dims[off + i], bd = mpx_bcast_dim(*o, d);
            if (bd == MPX_BCAST_NO)
                return mpx_kernel_error(c, MPX_E_SHAPE,
                                        "input %d (dim %d = %lld) does not broadcast with %lld", k,
                                        i, (long long)d, (long long)*o);
            *o = bd;
        }
    }
    *rank = r;
    return MPX_OK;
}

void mpx_k_bcast_strides(const mpx_value *v, int rank, const int64_t *dims, int64_t *strides) {
    int off = rank - v->rank;
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int j = i - off;
        if (j < 0 || v->dims[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = s;
        }
        if (j >= 0) s *= v->dims[j];
    }
    (void)dims;
}
