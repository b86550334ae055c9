/* kern_data.h - what the shape, data-movement and constant kernels
 * (kern_data.c, kern_index.c) share: input checks, index-list arguments that
 * moved between attributes and inputs, and the strided copy. Private to those
 * two files. */
#ifndef MPX_KERN_DATA_H
#define MPX_KERN_DATA_H

#include "kern_internal.h"
#include "kern_simd.h"

#include <stdio.h>
#include <string.h>

enum { LIST_MAX = 2 * MPX_MAX_RANK }; /* longest short int list (Pad's pads) */

/* ---- shared helpers -------------------------------------------------------- */

/* Nodes built without an opset (JSON without one, tests) follow the newest rules. */
static inline int opset_of(const mpx_kctx *c) {
    return c->node && c->node->opset > 0 ? c->node->opset : 1000;
}

/* Present, its storage agrees with its dtype (so element sizes are right),
 * and its shape is sane: dims >= 0, the product of the non-zero dims within
 * MPX_MAX_ELEMS (so no product of dims overflows, even of an empty tensor)
 * and n the product of all dims. */
static inline bool valid_as(const mpx_value *v, bool doubles_ok) {
    if (!v || v->n < 0 || v->rank < 0 || v->rank > MPX_MAX_RANK) return false;
    if (doubles_ok && v->dtype == MPX_DT_DOUBLE ? !v->d : mpx_dtype_is_float(v->dtype) ? !v->f : !v->i) return false;
    int64_t nz = 1;
    bool zero = false;
    for (int i = 0; i < v->rank; i++) {
        int64_t d = v->dims[i];
        if (d < 0 || d > MPX_MAX_ELEMS) return false;
        if (d == 0) zero = true;
        else if ((nz *= d) > MPX_MAX_ELEMS) return false;
    }
    return v->n == (zero ? 0 : nz);
}


/* valid_as without float64 values: the kernels that move elements by their
 * size (esz, bytes) take float64 ones as int64 bit patterns (kern_f64.c's
 * f64_move); the kernels that read doubles themselves (TopK, EyeLike, the
 * scatters, OneHot, NonZero, Unique, the sequence ops) check with need_as. */
static inline bool valid(const mpx_value *v) { return valid_as(v, false); }

/* Inputs 0..k-1 present and valid (float64 ones too where doubles_ok), and
 * at least n_out_min outputs. */
static inline mpx_status need_as(const mpx_kctx *c, const mpx_value *const *in, int n_in, int k, int n_out,
                                 int n_out_min, bool doubles_ok) {
    for (int i = 0; i < k; i++)
        if (i >= n_in || !valid_as(in[i], doubles_ok))
            return mpx_kernel_error(c, MPX_E_INVALID, "input %d is missing or malformed", i);
    if (n_out < n_out_min)
        return mpx_kernel_error(c, MPX_E_INVALID, "needs %d output(s), has %d", n_out_min, n_out);
    return MPX_OK;
}

static inline mpx_status need(const mpx_kctx *c, const mpx_value *const *in, int n_in, int k, int n_out,
                              int n_out_min) {
    return need_as(c, in, n_in, k, n_out, n_out_min, false);
}

/* Optional input k: NULL when omitted; an error when present but unusable. */
static inline mpx_status opt_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int k,
                                const mpx_value **v) {
    *v = NULL;
    if (k < 0 || k >= n_in || !in[k]) return MPX_OK;
    if (!valid(in[k])) return mpx_kernel_error(c, MPX_E_INVALID, "input %d has no value or a malformed shape", k);
    *v = in[k];
    return MPX_OK;
}

/* A value's element size and bytes: fp32, int64, or float64 (the kernels
 * that move float64 values themselves: sequences, Unique; f64_move hands
 * the others int64 bits). */
static inline size_t esz(const mpx_value *v) {
    return v->d ? sizeof(double) : v->f ? sizeof(float) : sizeof(int64_t);
}
static inline const char *cbytes(const mpx_value *v) {
    return v->d ? (const char *)v->d : v->f ? (const char *)v->f : (const char *)v->i;
}
static inline char *bytes(mpx_value *v) { return v->d ? (char *)v->d : v->f ? (char *)v->f : (char *)v->i; }

/* Allocate out with src's dtype; the element kinds then agree by construction. */
static inline mpx_status alloc_like(const mpx_kctx *c, mpx_value *out, const mpx_value *src,
                                    int rank, const int64_t *dims) {
    return mpx_k_alloc(c, out, src->dtype, rank, dims);
}

/* alloc_like for an output the caller writes whole from src (copy_view, a
 * split's memcpy): not cleared first, and never the executor's offered
 * buffer (mpx_kctx.dest), which may be src itself. */
static inline mpx_status alloc_whole(const mpx_kctx *c, mpx_value *out, const mpx_value *src, int rank,
                                     const int64_t *dims) {
    mpx_kctx own = *c;
    own.dest = NULL;
    return mpx_k_alloc_raw(&own, out, src->dtype, rank, dims);
}

static inline void row_strides(int r, const int64_t *dims, int64_t *s) {
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        s[i] = acc;
        acc *= dims[i];
    }
}

static inline int64_t prod(int from, int to, const int64_t *dims) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= dims[i];
    return p;
}

/* x's elements under a new shape (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity). The output is not cleared first (the copy writes every
 * element), and it may be the buffer the executor offers (mpx_kctx.dest):
 * a float input that dies at this node, whose buffer then simply changes
 * hands, nothing copied (run/exec.c). */
static inline mpx_status copy_whole(const mpx_kctx *c, mpx_value *out, const mpx_value *x, int rank,
                                    const int64_t *dims) {
    mpx_status st = mpx_k_alloc_raw(c, out, x->dtype, rank, dims);
    if (st != MPX_OK) return st;
    if (out->n != x->n) {
        mpx_value_free(out);
        return mpx_kernel_error(c, MPX_E_SHAPE, "element counts differ (%lld, %lld)",
                                (long long)out->n, (long long)x->n);
    }
    if (x->n > 0 && bytes(out) != cbytes(x)) memcpy(bytes(out), cbytes(x), (size_t)x->n * esz(x));
    return MPX_OK;
}

/* A short integer list from an index-typed input (shape, axes, pads, ...). */
static inline mpx_status ints_of(const mpx_kctx *c, const mpx_value *v, const char *what,
                                 int64_t *buf, int max, int *n) {
    *n = 0;
    if (!v->i)
        return mpx_kernel_error(c, MPX_E_INVALID, "%s must be an integer tensor, not %s", what,
                                mpx_dtype_name(v->dtype));
    if (v->rank > 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%s must be 1-D (has rank %d)", what, v->rank);
    if (v->n > max)
        return mpx_kernel_error(c, MPX_E_LIMIT, "%s has %lld values; at most %d are accepted", what,
                                (long long)v->n, max);
    *n = (int)v->n;
    for (int i = 0; i < *n; i++) buf[i] = v->i[i];
    return MPX_OK;
}

/* An int list that is attribute attr in older opsets and input idx in newer
 * ones; *given false when neither is there. */
static inline mpx_status list_arg(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                  const char *attr, int idx, int64_t *buf, int max, int *n,
                                  bool *given) {
    const mpx_attr *a = mpx_node_attr(c->node, attr);
    *n = 0;
    *given = false;
    if (a && a->type == MPX_ATTR_INTS) {
        if (a->n > max)
            return mpx_kernel_error(c, MPX_E_LIMIT, "attribute %s has %d values; at most %d", attr,
                                    a->n, max);
        for (int i = 0; i < a->n; i++) buf[i] = a->ints[i];
        *n = a->n;
        *given = true;
        return MPX_OK;
    }
    if (idx < 0) return MPX_OK;
    const mpx_value *v;
    mpx_status st = opt_in(c, in, n_in, idx, &v);
    if (st != MPX_OK || !v) return st;
    *given = true;
    return ints_of(c, v, attr, buf, max, n);
}

/* ---- strided copies ----------------------------------------------------------- */

/* out (written in order) = src[base + sum coord[k] * str[k]] over dims: one
 * loop for Transpose, Slice, Expand, Tile and the depth/space shuffles. The
 * callers build views that stay inside src. */
typedef struct view {
    int rank;
    int64_t dims[2 * MPX_MAX_RANK];
    int64_t str[2 * MPX_MAX_RANK];
    int64_t base;
} view;

/* Rows [r0, r1) of the copy (a row: the view's last dim). Where a row
 * reads src strided but consecutive rows read consecutive elements (a
 * transpose that moves the source's last dim, as attention's K^T), up to
 * CV_TILE rows are copied together, each source line read once for all of
 * them instead of one element of it a row. */
enum { CV_TILE = 16 };
#if defined(__x86_64__) && defined(__GNUC__)
/* A tile of 16 rows on AVX-512F, 16 of their columns at a time: the 16
 * source lines (s + j is, 16 values each: one per row) loaded, transposed
 * in registers (ks_transpose16) and stored as 16 runs, one in each row
 * (d + b inner); the columns done, for the caller's scalar loop to go on
 * from. Why: the scalar tile is a load and a store a value (BERT-style
 * attention's K^T, perm [1,2,0] of 64x12x64: 40 us a node on Zen 5, a
 * third of the Transpose+Div+MatMul group). */
static inline __attribute__((target("avx512f"))) int64_t cv_tile16_avx512(const float *s, int64_t is, float *d,
                                                                          int64_t inner) {
    int64_t j = 0;
    for (; j + 16 <= inner; j += 16) {
        __m512 r[16], c[16];
        KS_UNROLL16 for (int q = 0; q < 16; q++) r[q] = _mm512_loadu_ps(s + (j + q) * is);
        ks_transpose16(r, c);
        KS_UNROLL16 for (int b = 0; b < 16; b++) _mm512_storeu_ps(d + b * inner + j, c[b]);
    }
    return j;
}
#endif

static inline void copy_view_rows(mpx_value *out, const mpx_value *src, const view *v, int64_t r0, int64_t r1) {
    int r = v->rank;
    int64_t co[2 * MPX_MAX_RANK] = {0};
    int64_t inner = r ? v->dims[r - 1] : 1, is = r ? v->str[r - 1] : 0;
    int64_t off = v->base;
    const size_t es = esz(out);
    const bool tile = out->f && is != 1 && r >= 2 && v->str[r - 2] == 1;
#if defined(__x86_64__) && defined(__GNUC__)
    const bool tile16 = tile && __builtin_cpu_supports("avx512f");
#endif
    for (int64_t k = r - 2, q = r0; k >= 0; k--) { /* row r0's place */
        co[k] = q % v->dims[k];
        q /= v->dims[k];
        off += co[k] * v->str[k];
    }
    for (int64_t o = r0 * inner, row = r0; row < r1;) {
        /* rows along dim r-2 that read src[off + b + j * is] */
        int64_t nb = tile ? v->dims[r - 2] - co[r - 2] : 1;
        if (nb > CV_TILE) nb = CV_TILE;
        if (nb > r1 - row) nb = r1 - row;
        if (nb > 1) {
            int64_t j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
            if (tile16 && nb == CV_TILE) j = cv_tile16_avx512(src->f + off, is, out->f + o, inner);
#endif
            for (; j < inner; j++) {
                const float *s = src->f + off + j * is;
                float *d = out->f + o + j;
                for (int64_t b = 0; b < nb; b++) d[b * inner] = s[b];
            }
        } else if (is == 1) { /* a contiguous row as bytes, whatever the element type */
            memcpy(bytes(out) + (size_t)o * es, cbytes(src) + (size_t)off * es, (size_t)inner * es);
        } else if (out->f) {
            for (int64_t j = 0; j < inner; j++) out->f[o + j] = src->f[off + j * is];
        } else {
            for (int64_t j = 0; j < inner; j++) out->i[o + j] = src->i[off + j * is];
        }
        for (int64_t b = 0; b < nb; b++)
            for (int k = r - 2; k >= 0; k--) {
                off += v->str[k];
                if (++co[k] < v->dims[k]) break;
                off -= co[k] * v->str[k];
                co[k] = 0;
            }
        o += nb * inner;
        row += nb;
    }
}

typedef struct copy_job {
    mpx_value *out;
    const mpx_value *src;
    const view *v;
    int64_t rows, per;
} copy_job;

static inline void copy_view_item(void *ctx, int tid, long item) {
    (void)tid;
    const copy_job *j = ctx;
    const int64_t r0 = (int64_t)item * j->per, r1 = r0 + j->per < j->rows ? r0 + j->per : j->rows;
    copy_view_rows(j->out, j->src, j->v, r0, r1);
}

/* Large copies in pieces of rows on the kernel threads (2^16 elements or
 * more: ViT-B/16's attention transposes and slices had run on one thread;
 * a copy is the same whichever thread writes which rows). */
static inline void copy_view(mpx_value *out, const mpx_value *src, const view *v) {
    if (out->n <= 0) return;
    const int64_t inner = v->rank ? v->dims[v->rank - 1] : 1;
    if (inner <= 0) return;
    const int64_t rows = out->n / inner;
    if (out->n < (1 << 16) || rows < 2) {
        copy_view_rows(out, src, v, 0, rows);
        return;
    }
    /* pieces of about 2^14 elements, whole rows */
    int64_t per = (1 << 14) / inner;
    if (per < 1) per = 1;
    copy_job j = {out, src, v, rows, per};
    mpx_k_parallel((long)((rows + per - 1) / per), kg_threads(), copy_view_item, &j);
}

static inline void free_outs(mpx_value *out, int n) {
    for (int j = 0; j < n; j++) mpx_value_free(&out[j]);
}

#endif
