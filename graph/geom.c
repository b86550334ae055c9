/* geom.c - the geometry of ops that shape inference and the kernels both
 * need, computed here once: sliding windows (Conv, ConvTranspose, the pools,
 * MaxUnpool) and Einsum's labels. Shape inference calls these with dims that
 * may be unknown (-1) and the kernels with their values' dims, so a shape and
 * the values a kernel makes agree by construction. Messages carry no node
 * name: the caller's error function adds it (mpx_node_error in graph/,
 * mpx_kernel_error in the kernels). */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- sliding windows --------------------------------------------------------- */

/* An INTS attribute of exactly n values in [lo, MPX_WINDOW_ATTR_MAX], or dflt
 * for each when absent. */
static mpx_status ints_attr(const mpx_node *n, const char *name, int count, int64_t lo, int64_t dflt, int64_t *out,
                            mpx_error *err) {
    const mpx_attr *a = mpx_node_attr(n, name);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (!a) return MPX_OK;
    if (a->type != MPX_ATTR_INTS)
        return mpx_error_set(err, MPX_E_INVALID, "attribute %s must be a list of integers", name);
    if (a->n != count)
        return mpx_error_set(err, MPX_E_INVALID, "attribute %s has %d values; %d expected", name, a->n, count);
    for (int i = 0; i < count; i++) {
        if (a->ints[i] < lo || a->ints[i] > MPX_WINDOW_ATTR_MAX)
            return mpx_error_set(err, a->ints[i] > MPX_WINDOW_ATTR_MAX ? MPX_E_LIMIT : MPX_E_INVALID,
                                 "attribute %s[%d] = %lld is %s", name, i, (long long)a->ints[i],
                                 a->ints[i] > MPX_WINDOW_ATTR_MAX ? "beyond mpx's limit of 2^30" : "out of range");
        out[i] = a->ints[i];
    }
    return MPX_OK;
}

mpx_status mpx_window_read(const mpx_node *n, int rank, const int64_t *in, const int64_t *kernel, mpx_window *w,
                           mpx_error *err) {
    mpx_status st;
    memset(w, 0, sizeof *w);
    if (rank < 3 || rank > MPX_MAX_RANK)
        return mpx_error_set(err, MPX_E_SHAPE, "the input has rank %d; N x C x D1 x ... (rank 3 or more) expected",
                             rank);
    int nsp = w->nsp = rank - 2;
    for (int i = 0; i < nsp; i++) w->in[i] = in[i];
    const mpx_attr *ka = mpx_node_attr(n, "kernel_shape");
    if (ka || !kernel) {
        if (!ka) return mpx_error_set(err, MPX_E_INVALID, "attribute kernel_shape is required");
        if ((st = ints_attr(n, "kernel_shape", nsp, 1, 1, w->k, err))) return st;
        for (int i = 0; kernel && i < nsp; i++)
            if (kernel[i] >= 0 && kernel[i] != w->k[i])
                return mpx_error_set(err, MPX_E_SHAPE,
                                     "kernel_shape[%d] = %lld does not match the weights' kernel length %lld", i,
                                     (long long)w->k[i], (long long)kernel[i]);
    } else {
        for (int i = 0; i < nsp; i++) {
            if (kernel[i] == 0 || kernel[i] < -1)
                return mpx_error_set(err, MPX_E_SHAPE, "the weights' kernel length %d is %lld", i, (long long)kernel[i]);
            w->k[i] = kernel[i];
        }
    }
    if ((st = ints_attr(n, "strides", nsp, 1, 1, w->s, err))) return st;
    if ((st = ints_attr(n, "dilations", nsp, 1, 1, w->d, err))) return st;
    int64_t pads[2 * MPX_WINDOW_MAX_SP];
    if ((st = ints_attr(n, "pads", 2 * nsp, 0, 0, pads, err))) return st;
    for (int i = 0; i < nsp; i++) {
        w->pb[i] = pads[i];
        w->pe[i] = pads[nsp + i];
    }
    const char *ap = mpx_node_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0') w->auto_pad = MPX_AUTOPAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0) w->auto_pad = MPX_AUTOPAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0) w->auto_pad = MPX_AUTOPAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0) w->auto_pad = MPX_AUTOPAD_VALID;
    else
        return mpx_error_set(err, MPX_E_INVALID, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    return MPX_OK;
}

static bool same_pad(const mpx_window *w) {
    return w->auto_pad == MPX_AUTOPAD_SAME_UPPER || w->auto_pad == MPX_AUTOPAD_SAME_LOWER;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

mpx_status mpx_window_out(mpx_window *w, bool ceil_mode, mpx_error *err) {
    /* mpx_window_read bounded the attributes by 2^30 and dims are below 2^31,
     * so none of this overflows. */
    for (int i = 0; i < w->nsp; i++) {
        int64_t in = w->in[i], s = w->s[i];
        if (in < 0 || w->k[i] < 0) {
            w->out[i] = -1;
            continue;
        }
        int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
        if (same_pad(w)) {
            /* out = ceil(in / stride), the odd unit of padding at the end
             * (UPPER) or the beginning (LOWER); the total clamped at 0
             * (TensorFlow's SAME, which ONNX's text follows). */
            int64_t o = ceil_div(in, s);
            int64_t total = (o - 1) * s + ek - in;
            if (total < 0) total = 0;
            w->pb[i] = w->auto_pad == MPX_AUTOPAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
            w->out[i] = o;
            continue;
        }
        if (w->auto_pad == MPX_AUTOPAD_VALID) w->pb[i] = w->pe[i] = 0;
        int64_t num = in + w->pb[i] + w->pe[i] - ek;
        if (num < 0)
            return mpx_error_set(err, MPX_E_SHAPE,
                                 "spatial dim %d: input length %lld (pads %lld+%lld) is smaller than the kernel "
                                 "extent %lld", i, (long long)in, (long long)w->pb[i], (long long)w->pe[i],
                                 (long long)ek);
        int64_t o = num / s + 1;
        if (ceil_mode) {
            o = ceil_div(num, s) + 1;
            /* The last window must start inside the input or the leading
             * padding (ONNX Runtime, PyTorch). */
            if ((o - 1) * s >= in + w->pb[i]) o--;
        }
        w->out[i] = o;
    }
    return MPX_OK;
}

mpx_status mpx_window_transpose_out(const mpx_node *n, mpx_window *w, mpx_error *err) {
    int nsp = w->nsp;
    int64_t opad[MPX_WINDOW_MAX_SP];
    mpx_status st = ints_attr(n, "output_padding", nsp, 0, 0, opad, err);
    if (st) return st;
    const mpx_attr *osa = mpx_node_attr(n, "output_shape");
    const int64_t *os = NULL;
    if (osa) {
        if (osa->type != MPX_ATTR_INTS || (osa->n != nsp && osa->n != nsp + 2))
            return mpx_error_set(err, MPX_E_INVALID, "output_shape must list %d spatial lengths (or %d dims)", nsp,
                                 nsp + 2);
        os = osa->ints + (osa->n - nsp);
        for (int i = 0; i < nsp; i++)
            if (os[i] < 0 || os[i] > MPX_WINDOW_ATTR_MAX)
                return mpx_error_set(err, MPX_E_INVALID, "output_shape value %lld is negative or beyond mpx's limit",
                                     (long long)os[i]);
    }
    for (int i = 0; i < nsp; i++) {
        /* The output length, and pads as the operator text says: from
         * output_shape or SAME_* split with the odd unit at the end for
         * SAME_UPPER and at the beginning otherwise (a negative total extends
         * the output with values no input reaches). Each term is below 2^61. */
        if (w->in[i] < 0 || w->k[i] < 0) {
            w->out[i] = os ? os[i] : -1;
            continue;
        }
        int64_t full = w->s[i] * (w->in[i] - 1) + opad[i] + (w->k[i] - 1) * w->d[i] + 1;
        int64_t o;
        if (os || same_pad(w)) {
            o = os ? os[i] : w->in[i] * w->s[i];
            int64_t total = full - o, half = floor_div(total, 2);
            w->pb[i] = w->auto_pad == MPX_AUTOPAD_SAME_UPPER ? half : total - half;
            w->pe[i] = total - w->pb[i];
        } else {
            if (w->auto_pad == MPX_AUTOPAD_VALID) w->pb[i] = w->pe[i] = 0;
            o = full - w->pb[i] - w->pe[i];
            if (o < 1)
                return mpx_error_set(err, MPX_E_SHAPE, "spatial dim %d would have length %lld", i, (long long)o);
        }
        w->out[i] = o;
    }
    return MPX_OK;
}

int64_t mpx_window_unpool_len(const mpx_window *w, int i) {
    if (w->in[i] < 0) return -1;
    return (w->in[i] - 1) * w->s[i] + w->k[i] - w->pb[i] - w->pe[i];
}
