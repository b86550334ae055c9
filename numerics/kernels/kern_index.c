/* kern_index.c - indexing, padding, shape and constant kernels (ONNX
 * semantics, opsets 7 and newer): Gather, GatherElements, Pad, Shape, Size,
 * Constant, ConstantOfShape, Range, TopK, NonZero. The reading rules are those
 * of kern_data.c (attribute when the node has one, else the input). */
#include "kern_data.h"

#include <math.h>
#include <stdlib.h>

/* ---- Gather, GatherElements ---------------------------------------------------- */

/* Index k of an axis of length d, negative counting from the end. */
static mpx_status index_in(const mpx_kctx *c, int64_t k, int64_t d, int64_t *out) {
    if (k < -d || k >= d)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "index %lld is out of range for an axis of length %lld",
                                (long long)k, (long long)d);
    *out = k < 0 ? k + d : k;
    return MPX_OK;
}

/* Every index is checked before anything is written, so that a bad index
 * fails the op whole instead of after part of the output (Gather,
 * GatherElements, ScatterElements). */
static mpx_status indices_in(const mpx_kctx *c, const mpx_value *idx, int64_t d) {
    int64_t k;
    for (int64_t j = 0; j < idx->n; j++) {
        mpx_status st = index_in(c, idx->i[j], d, &k);
        if (st != MPX_OK) return st;
    }
    return MPX_OK;
}

/* GatherElements and ScatterElements walk the indices in row-major order
 * keeping off, the offset in x of the coordinate co with the axis ax left out
 * (the index itself supplies that one): this steps co and off to the next
 * index. */
static void elements_next(int r, int ax, const int64_t *idims, const int64_t *xs, int64_t *co,
                          int64_t *off) {
    for (int q = r - 1; q >= 0; q--) {
        if (q != ax) *off += xs[q];
        if (++co[q] < idims[q]) break;
        if (q != ax) *off -= co[q] * xs[q];
        co[q] = 0;
    }
}

/* Gather and GatherElements take the same arguments: data that is not a
 * scalar, integer indices and an axis of the data. */
static mpx_status gather_args(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out,
                              int *ax) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    if (!in[1]->i) return mpx_kernel_error(c, MPX_E_INVALID, "indices must be an integer tensor");
    if (in[0]->rank == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "cannot gather from a scalar");
    return mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), in[0]->rank, 0, ax);
}

mpx_status mpx_k_gather(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    int ax;
    mpx_status st = gather_args(c, in, n_in, n_out, &ax);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *idx = in[1];
    int r = x->rank;
    int orank = r - 1 + idx->rank;
    if (orank > MPX_MAX_RANK)
        return mpx_kernel_error(c, MPX_E_LIMIT, "output rank %d is beyond mpx's limit of %d", orank,
                                MPX_MAX_RANK);
    int64_t d = x->dims[ax], dims[MPX_MAX_RANK], k;
    if ((st = indices_in(c, idx, d)) != MPX_OK) return st;
    int o = 0;
    for (int i = 0; i < ax; i++) dims[o++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++) dims[o++] = idx->dims[i];
    for (int i = ax + 1; i < r; i++) dims[o++] = x->dims[i];
    if ((st = alloc_like(c, &out[0], x, orank, dims)) != MPX_OK) return st;
    int64_t outer = prod(0, ax, x->dims), inner = prod(ax + 1, r, x->dims);
    size_t es = esz(x), row = (size_t)inner * es;
    char *dst = bytes(&out[0]);
    for (int64_t oo = 0; oo < outer; oo++)
        for (int64_t j = 0; j < idx->n; j++) {
            k = idx->i[j] < 0 ? idx->i[j] + d : idx->i[j];
            memcpy(dst, cbytes(x) + ((size_t)(oo * d + k) * (size_t)inner) * es, row);
            dst += row;
        }
    return MPX_OK;
}

mpx_status mpx_k_gather_elements(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                 mpx_value *out, int n_out) {
    int ax;
    mpx_status st = gather_args(c, in, n_in, n_out, &ax);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *idx = in[1];
    int r = x->rank;
    char b1[96], b2[96];
    if (idx->rank != r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "indices of rank %d for data of rank %d", idx->rank,
                                r);
    for (int i = 0; i < r; i++)
        if (i != ax && idx->dims[i] > x->dims[i])
            return mpx_kernel_error(c, MPX_E_SHAPE, "indices %s exceed data %s on axis %d",
                                    mpx_dims_str(r, idx->dims, b1, sizeof b1),
                                    mpx_dims_str(r, x->dims, b2, sizeof b2), i);
    int64_t d = x->dims[ax], k, xs[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0};
    if ((st = indices_in(c, idx, d)) != MPX_OK) return st;
    row_strides(r, x->dims, xs);
    if ((st = alloc_like(c, &out[0], x, r, idx->dims)) != MPX_OK) return st;
    int64_t off = 0; /* offset of co in x, axis ax excluded */
    for (int64_t j = 0; j < idx->n; j++) {
        k = idx->i[j] < 0 ? idx->i[j] + d : idx->i[j];
        int64_t s = off + k * xs[ax];
        if (out[0].f)
            out[0].f[j] = x->f[s];
        else
            out[0].i[j] = x->i[s];
        elements_next(r, ax, idx->dims, xs, co, &off);
    }
    return MPX_OK;
}

/* ---- GatherND, ScatterND, ScatterElements ------------------------------------------ */

typedef enum { SR_NONE, SR_ADD, SR_MUL, SR_MAX, SR_MIN } sreduce;

/* The reduction attribute (opset 16/18): how an update meets what is there. */
static mpx_status scatter_reduction(const mpx_kctx *c, sreduce *r) {
    const char *s = mpx_node_attr_string(c->node, "reduction", "none");
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *r = (sreduce)i;
            return MPX_OK;
        }
    return mpx_kernel_error(c, MPX_E_INVALID, "reduction \"%s\" is not none, add, mul, max or min", s);
}

/* y[o] (op)= u[j], float or integer as the data is; updates apply in index
 * order, so duplicate indices with reduction none keep the last (ORT's CPU
 * order). */
static void scatter_one(mpx_value *y, int64_t o, const mpx_value *u, int64_t j, sreduce r) {
    if (y->d) { /* float64: the reductions in double (kernels_f64.def) */
        double a = y->d[o], b = u->d[j];
        y->d[o] = r == SR_ADD ? a + b : r == SR_MUL ? a * b : r == SR_MAX ? (b > a ? b : a) : r == SR_MIN ? (b < a ? b : a) : b;
    } else if (y->f) {
        float a = y->f[o], b = u->f[j];
        y->f[o] = r == SR_ADD ? a + b : r == SR_MUL ? a * b : r == SR_MAX ? (b > a ? b : a) : r == SR_MIN ? (b < a ? b : a) : b;
    } else {
        int64_t a = y->i[o], b = u->i[j];
        y->i[o] = r == SR_ADD ? a + b : r == SR_MUL ? a * b : r == SR_MAX ? (b > a ? b : a) : r == SR_MIN ? (b < a ? b : a) : b;
    }
}

static mpx_status copy_data(const mpx_kctx *c, const mpx_value *x, mpx_value *y) {
    mpx_error e = {0};
    mpx_status st = mpx_value_copy(y, x, &e);
    return st ? mpx_kernel_error(c, st, "%s", e.msg) : MPX_OK;
}

/* ScatterElements (Scatter is its name before opset 11): data with updates[j]
 * written where indices[j] points along axis, every other coordinate j's. */
mpx_status mpx_k_scatter_elements(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                  int n_out) {
    mpx_status st = need_as(c, in, n_in, 3, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *idx = in[1], *u = in[2];
    if (!idx->i) return mpx_kernel_error(c, MPX_E_INVALID, "indices must be an integer tensor");
    if ((x->f == NULL) != (u->f == NULL) || (x->d == NULL) != (u->d == NULL))
        return mpx_kernel_error(c, MPX_E_INVALID, "updates and data differ in type");
    int r = x->rank, ax;
    if (r == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "cannot scatter into a scalar");
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), r, 0, &ax)) != MPX_OK) return st;
    char b1[96], b2[96], b3[96];
    if (idx->rank != r || u->rank != r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "indices and updates must have the data's rank %d", r);
    for (int i = 0; i < r; i++)
        if (idx->dims[i] != u->dims[i] || (i != ax && idx->dims[i] > x->dims[i]))
            return mpx_kernel_error(c, MPX_E_SHAPE, "indices %s and updates %s do not fit data %s",
                                    mpx_dims_str(r, idx->dims, b1, sizeof b1), mpx_dims_str(r, u->dims, b2, sizeof b2),
                                    mpx_dims_str(r, x->dims, b3, sizeof b3));
    sreduce red = SR_NONE;
    if ((st = scatter_reduction(c, &red)) != MPX_OK) return st;
    int64_t d = x->dims[ax], k, xs[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0};
    if ((st = indices_in(c, idx, d)) != MPX_OK) return st;
    if ((st = copy_data(c, x, &out[0])) != MPX_OK) return st;
    row_strides(r, x->dims, xs);
    int64_t off = 0; /* offset of co in x, axis ax excluded */
    for (int64_t j = 0; j < idx->n; j++) {
        k = idx->i[j] < 0 ? idx->i[j] + d : idx->i[j];
        scatter_one(&out[0], off + k * xs[ax], u, j, red);
        elements_next(r, ax, idx->dims, xs, co, &off);
    }
    return MPX_OK;
}

/* The offset in x of the index tuple t[0..k) (dims b..b+k of x), checked. */
static mpx_status tuple_offset(const mpx_kctx *c, const mpx_value *x, int b, const int64_t *t, int64_t k,
                               const int64_t *xs, int64_t *off) {
    *off = 0;
    for (int64_t q = 0; q < k; q++) {
        int64_t v = 0;
        mpx_status st = index_in(c, t[q], x->dims[b + q], &v);
        if (st) return st;
        *off += v * xs[b + q];
    }
    return MPX_OK;
}

/* ScatterND: data with updates written at the index tuples of the last axis
 * of indices (each tuple names a slice of data's trailing dims). */
mpx_status mpx_k_scatter_nd(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need_as(c, in, n_in, 3, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *idx = in[1], *u = in[2];
    if (!idx->i) return mpx_kernel_error(c, MPX_E_INVALID, "indices must be an integer tensor");
    if ((x->f == NULL) != (u->f == NULL) || (x->d == NULL) != (u->d == NULL))
        return mpx_kernel_error(c, MPX_E_INVALID, "updates and data differ in type");
    int r = x->rank, q = idx->rank;
    int64_t k = q ? idx->dims[q - 1] : 0;
    if (q < 1 || k < 1 || k > r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "indices' last dim %lld must be from 1 to the data's rank %d",
                                (long long)k, r);
    /* updates: indices.shape[:-1] + data.shape[k:] */
    bool fits = u->rank == q - 1 + r - (int)k;
    for (int i = 0; fits && i < u->rank; i++)
        fits = u->dims[i] == (i < q - 1 ? idx->dims[i] : x->dims[(int)k + i - (q - 1)]);
    if (!fits) return mpx_kernel_error(c, MPX_E_SHAPE, "updates' shape is not indices.shape[:-1] + data.shape[k:]");
    sreduce red = SR_NONE;
    if ((st = scatter_reduction(c, &red)) != MPX_OK) return st;
    int64_t xs[MPX_MAX_RANK], n = idx->n / k, slice = prod((int)k, r, x->dims), off;
    row_strides(r, x->dims, xs);
    for (int64_t j = 0; j < n; j++)
        if ((st = tuple_offset(c, x, 0, idx->i + j * k, k, xs, &off)) != MPX_OK) return st;
    if ((st = copy_data(c, x, &out[0])) != MPX_OK) return st;
    for (int64_t j = 0; j < n; j++) {
        tuple_offset(c, x, 0, idx->i + j * k, k, xs, &off);
        for (int64_t s = 0; s < slice; s++) scatter_one(&out[0], off + s, u, j * slice + s, red);
    }
    return MPX_OK;
}

/* GatherND: the slices of data named by the index tuples of the last axis of
 * indices; the first batch_dims axes of both are batch axes. */
mpx_status mpx_k_gather_nd(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *idx = in[1];
    if (!idx->i) return mpx_kernel_error(c, MPX_E_INVALID, "indices must be an integer tensor");
    int r = x->rank, q = idx->rank;
    int64_t b = mpx_node_attr_int(c->node, "batch_dims", 0), k = q ? idx->dims[q - 1] : 0;
    if (b < 0 || b >= q || b >= r || k < 1 || b + k > r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "batch_dims %lld and an index length %lld do not fit data of rank %d",
                                (long long)b, (long long)k, r);
    for (int i = 0; i < (int)b; i++)
        if (idx->dims[i] != x->dims[i])
            return mpx_kernel_error(c, MPX_E_SHAPE, "batch axis %d: indices %lld, data %lld", i,
                                    (long long)idx->dims[i], (long long)x->dims[i]);
    int orank = q - 1 + r - (int)(b + k);
    if (orank > MPX_MAX_RANK)
        return mpx_kernel_error(c, MPX_E_LIMIT, "output rank %d is beyond mpx's limit of %d", orank, MPX_MAX_RANK);
    int64_t dims[MPX_MAX_RANK], xs[MPX_MAX_RANK];
    int o = 0;
    for (int i = 0; i < q - 1; i++) dims[o++] = idx->dims[i];
    for (int i = (int)(b + k); i < r; i++) dims[o++] = x->dims[i];
    row_strides(r, x->dims, xs);
    int64_t batches = prod(0, (int)b, x->dims), per = batches ? idx->n / k / batches : 0;
    int64_t block = prod((int)b, r, x->dims), slice = prod((int)(b + k), r, x->dims), off;
    for (int64_t j = 0; j < idx->n / k; j++)
        if ((st = tuple_offset(c, x, (int)b, idx->i + j * k, k, xs, &off)) != MPX_OK) return st;
    if ((st = alloc_like(c, &out[0], x, orank, dims)) != MPX_OK) return st;
    size_t es = esz(x);
    char *dst = bytes(&out[0]);
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t j = 0; j < per; j++) {
            tuple_offset(c, x, (int)b, idx->i + (bi * per + j) * k, k, xs, &off);
            memcpy(dst, cbytes(x) + (size_t)(bi * block + off) * es, (size_t)slice * es);
            dst += (size_t)slice * es;
        }
    return MPX_OK;
}

/* ---- Pad ------------------------------------------------------------------------- */

/* Source index along an axis of length d for padded coordinate i (already
 * shifted by the leading pad); -1 for the constant. Reflect and wrap repeat
 * as numpy.pad does, so pads longer than the axis are defined too. */
static int64_t pad_src(int mode, int64_t i, int64_t d) {
    if (i >= 0 && i < d) return i;
    switch (mode) {
    case 1: { /* reflect */
        if (d == 1) return 0;
        int64_t p = 2 * (d - 1), m = i % p;
        if (m < 0) m += p;
        return m < d ? m : p - m;
    }
    case 2: /* edge */
        return i < 0 ? 0 : d - 1;
    case 3: { /* wrap */
        int64_t m = i % d;
        return m < 0 ? m + d : m;
    }
    default:
        return -1;
    }
}

mpx_status mpx_k_pad(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                     int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int r = x->rank;
    const char *ms = mpx_node_attr_string(c->node, "mode", "constant");
    int mode = strcmp(ms, "constant") == 0  ? 0
               : strcmp(ms, "reflect") == 0 ? 1
               : strcmp(ms, "edge") == 0    ? 2
               : strcmp(ms, "wrap") == 0    ? 3
                                            : -1;
    if (mode < 0) return mpx_kernel_error(c, MPX_E_INVALID, "mode \"%s\" is not supported", ms);
    int64_t pads[LIST_MAX], axes_v[LIST_MAX], pb[MPX_MAX_RANK] = {0}, pe[MPX_MAX_RANK] = {0};
    int np, na = 0;
    bool given;
    if ((st = list_arg(c, in, n_in, "pads", 1, pads, LIST_MAX, &np, &given)) != MPX_OK) return st;
    if (!given) return mpx_kernel_error(c, MPX_E_INVALID, "pads are required");
    const mpx_value *cv, *av;
    if ((st = opt_in(c, in, n_in, 2, &cv)) || (st = opt_in(c, in, n_in, 3, &av))) return st;
    if (av && (st = ints_of(c, av, "axes", axes_v, LIST_MAX, &na)) != MPX_OK) return st;
    if (!av) {
        na = r;
        for (int i = 0; i < r; i++) axes_v[i] = i;
    }
    if (np != 2 * na)
        return mpx_kernel_error(c, MPX_E_SHAPE, "pads has %d values, expected %d", np, 2 * na);
    for (int i = 0; i < na; i++) {
        int ax;
        if ((st = mpx_k_axis(c, axes_v[i], r, 0, &ax)) != MPX_OK) return st;
        pb[ax] = pads[i];
        pe[ax] = pads[i + na];
    }
    /* The fill value: attribute "value" before opset 11, input 2 after. */
    float fv = mpx_node_attr_float(c->node, "value", 0.0f);
    int64_t iv = isfinite(fv) && fabsf(fv) < 9.0e18f ? (int64_t)fv : 0;
    if (cv && cv->n > 0) {
        if ((cv->f != NULL) != (x->f != NULL))
            return mpx_kernel_error(c, MPX_E_INVALID,
                                    "constant_value (%s) does not match data (%s)",
                                    mpx_dtype_name(cv->dtype), mpx_dtype_name(x->dtype));
        if (cv->f)
            fv = cv->f[0];
        else
            iv = cv->i[0];
    }
    int64_t dims[MPX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (pb[i] < -MPX_MAX_ELEMS || pb[i] > MPX_MAX_ELEMS || pe[i] < -MPX_MAX_ELEMS ||
            pe[i] > MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_LIMIT, "pads of axis %d are too large", i);
        dims[i] = x->dims[i] + pb[i] + pe[i];
        if (dims[i] < 0)
            return mpx_kernel_error(c, MPX_E_SHAPE, "pads %lld, %lld remove more than axis %d has",
                                    (long long)pb[i], (long long)pe[i], i);
        if (mode && x->dims[i] == 0 && dims[i] > 0)
            return mpx_kernel_error(c, MPX_E_SHAPE, "cannot pad the empty axis %d in %s mode", i,
                                    ms);
    }
    if ((st = alloc_like(c, &out[0], x, r, dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    if (y->n == 0) return MPX_OK;
    if (r == 0) {
        memcpy(bytes(y), cbytes(x), esz(x));
        return MPX_OK;
    }
    /* Per axis, the source index of each output coordinate (-1: the constant). */
    int64_t tot = 0, *map[MPX_MAX_RANK], xs[MPX_MAX_RANK];
    for (int i = 0; i < r; i++) tot += dims[i];
    int64_t *buf = malloc((size_t)tot * sizeof *buf), *at = buf;
    if (!buf) {
        mpx_value_free(y);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < r; i++) {
        map[i] = at;
        for (int64_t o = 0; o < dims[i]; o++) map[i][o] = pad_src(mode, o - pb[i], x->dims[i]);
        at += dims[i];
    }
    row_strides(r, x->dims, xs);
    int64_t co[MPX_MAX_RANK] = {0}, inner = dims[r - 1];
    /* the last axis' output columns that read the input's columns 0, 1, ...
     * in order (the input's place shifted by the leading pad) */
    const int64_t run_lo = pb[r - 1] > 0 ? pb[r - 1] : 0,
                  run_hi = pb[r - 1] + x->dims[r - 1] < inner ? pb[r - 1] + x->dims[r - 1] : inner;
    for (int64_t o = 0; o < y->n; o += inner) {
        int64_t off = 0;
        bool fill = false;
        for (int i = 0; i < r - 1; i++) {
            int64_t m = map[i][co[i]];
            if (m < 0)
                fill = true;
            else
                off += m * xs[i];
        }
        const int64_t *lm = map[r - 1];
        /* the row's values that come from the input row in order: one
         * copy (a 64 x 112 x 112 zero pad took 1.5 ms element by element,
         * ONNX Runtime 0.15); the rest, pads and reflections, one by one */
        const int64_t jlo = fill ? inner : run_lo, jhi = fill ? inner : run_hi;
        for (int64_t j = 0; j < inner; j++) {
            if (j == jlo && jhi > jlo) {
                if (y->f) memcpy(y->f + o + j, x->f + off + lm[j], (size_t)(jhi - jlo) * sizeof *y->f);
                else memcpy(y->i + o + j, x->i + off + lm[j], (size_t)(jhi - jlo) * sizeof *y->i);
                j = jhi - 1;
                continue;
            }
            bool f = fill || lm[j] < 0;
            if (y->f)
                y->f[o + j] = f ? fv : x->f[off + lm[j]];
            else
                y->i[o + j] = f ? iv : x->i[off + lm[j]];
        }
        for (int i = r - 2; i >= 0; i--) {
            if (++co[i] < dims[i]) break;
            co[i] = 0;
        }
    }
    free(buf);
    return MPX_OK;
}

/* ---- Shape, Size, Constant, ConstantOfShape, Range ------------------------------- */

mpx_status mpx_k_shape(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t s, len = mpx_shape_op_range(c->node, x->rank, &s);
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 1, &len)) != MPX_OK) return st;
    for (int64_t i = 0; i < len; i++) out[0].i[i] = x->dims[s + i];
    return MPX_OK;
}

mpx_status mpx_k_size(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 0, NULL)) != MPX_OK) return st;
    out[0].i[0] = in[0]->n;
    return MPX_OK;
}

/* A TENSOR attribute's value into out. */
static mpx_status tensor_value(const mpx_kctx *c, const mpx_tensor *t, const char *what,
                               mpx_value *out) {
    if (!t || t->rank < 0 || t->rank > MPX_MAX_RANK || t->nelem < 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "%s tensor has no shape", what);
    if (!mpx_dtype_is_float(t->dtype) && !mpx_dtype_is_int_like(t->dtype))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "%s of type %s is not supported", what,
                                mpx_dtype_name(t->dtype));
    if (mpx_dtype_is_float(t->dtype) ? !t->f32 : !t->i64)
        return mpx_kernel_error(c, MPX_E_INVALID, "%s tensor has no data", what);
    mpx_status st = mpx_k_alloc(c, out, t->dtype, t->rank, t->dims);
    if (st != MPX_OK) return st;
    if (out->n != t->nelem) {
        mpx_value_free(out);
        return mpx_kernel_error(c, MPX_E_INVALID, "%s tensor has %lld values for shape of %lld",
                                what, (long long)t->nelem, (long long)out->n);
    }
    if (out->n > 0) {
        if (out->f)
            memcpy(out->f, t->f32, (size_t)out->n * sizeof *out->f);
        else
            memcpy(out->i, t->i64, (size_t)out->n * sizeof *out->i);
    }
    return MPX_OK;
}

mpx_status mpx_k_constant(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                          int n_out) {
    mpx_status st = need(c, in, 0, 0, n_out, 1);
    (void)in;
    (void)n_in;
    if (st != MPX_OK) return st;
    const mpx_attr *a = NULL;
    for (int k = 0; c->node && k < c->node->n_attrs; k++)
        if (c->node->attrs[k].name && strncmp(c->node->attrs[k].name, "value", 5) == 0) {
            a = &c->node->attrs[k];
            break;
        }
    if (!a) a = mpx_node_attr(c->node, "sparse_value");
    if (!a) return mpx_kernel_error(c, MPX_E_INVALID, "no value attribute");
    int64_t d;
    if (strcmp(a->name, "value") == 0 && a->type == MPX_ATTR_TENSOR)
        return tensor_value(c, a->t, "value", &out[0]);
    if (strcmp(a->name, "value_float") == 0 && a->type == MPX_ATTR_FLOAT) {
        if ((st = mpx_k_alloc(c, &out[0], MPX_DT_FLOAT, 0, NULL)) == MPX_OK) out[0].f[0] = a->f;
        return st;
    }
    if (strcmp(a->name, "value_int") == 0 && a->type == MPX_ATTR_INT) {
        if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 0, NULL)) == MPX_OK) out[0].i[0] = a->i;
        return st;
    }
    if (strcmp(a->name, "value_floats") == 0 && a->type == MPX_ATTR_FLOATS) {
        d = a->n;
        if ((st = mpx_k_alloc(c, &out[0], MPX_DT_FLOAT, 1, &d)) == MPX_OK && d)
            memcpy(out[0].f, a->floats, (size_t)d * sizeof(float));
        return st;
    }
    if (strcmp(a->name, "value_ints") == 0 && a->type == MPX_ATTR_INTS) {
        d = a->n;
        if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 1, &d)) == MPX_OK && d)
            memcpy(out[0].i, a->ints, (size_t)d * sizeof(int64_t));
        return st;
    }
    return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "attribute %s is not supported", a->name);
}

mpx_status mpx_k_constant_of_shape(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                   mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    int64_t dims[MPX_MAX_RANK];
    int nd;
    if ((st = ints_of(c, in[0], "shape", dims, MPX_MAX_RANK, &nd)) != MPX_OK) return st;
    for (int i = 0; i < nd; i++)
        if (dims[i] < 0)
            return mpx_kernel_error(c, MPX_E_SHAPE, "shape has a negative dim %lld",
                                    (long long)dims[i]);
    const mpx_attr *a = mpx_node_attr(c->node, "value");
    mpx_value v = {.n = -1};
    if (a && a->type == MPX_ATTR_TENSOR) {
        if ((st = tensor_value(c, a->t, "value", &v)) != MPX_OK) return st;
        if (v.n != 1) {
            mpx_value_free(&v);
            return mpx_kernel_error(c, MPX_E_INVALID, "value must hold one element");
        }
    } else if ((st = mpx_k_alloc(c, &v, MPX_DT_FLOAT, 0, NULL)) != MPX_OK) {
        return st; /* default: float 0 */
    }
    if ((st = mpx_k_alloc(c, &out[0], v.dtype, nd, dims)) == MPX_OK) {
        for (int64_t k = 0; k < out[0].n; k++) {
            if (out[0].f)
                out[0].f[k] = v.f[0];
            else
                out[0].i[k] = v.i[0];
        }
    }
    mpx_value_free(&v);
    return st;
}

/* Range: n = max(ceil((limit - start) / delta), 0) and out[i] = start + i*delta
 * (ONNX's definition; float in fp32, integers exact). */
/* EyeLike: ones on diagonal k (column - row == k) of the input's 2-D shape. */
mpx_status mpx_k_eye_like(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need_as(c, in, n_in, 1, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    if (x->rank != 2) return mpx_kernel_error(c, MPX_E_SHAPE, "EyeLike needs a 2-D input, not rank %d", x->rank);
    int64_t dt = mpx_node_attr_int(c->node, "dtype", x->dtype);
    if (dt <= 0 || dt >= MPX_DT_COUNT_)
        return mpx_kernel_error(c, MPX_E_INVALID, "attribute dtype (%lld) is not an element type", (long long)dt);
    if ((st = mpx_k_alloc(c, &out[0], (mpx_dtype)dt, 2, x->dims)) != MPX_OK) return st;
    int64_t k = mpx_node_attr_int(c->node, "k", 0), cols = x->dims[1];
    for (int64_t e = 0; e < out[0].n; e++) {
        bool one = e % cols - e / cols == k;
        if (out[0].f) out[0].f[e] = one ? 1.0f : 0.0f;
        else if (out[0].d) out[0].d[e] = one; /* float64: the float64 table's row is this kernel */
        else out[0].i[e] = one;
    }
    return MPX_OK;
}

/* OneHot: values[1] where the index (negative counts from depth) names the
 * position along axis, values[0] elsewhere; an index outside [-depth, depth)
 * gives a row of values[0], as ORT does. */
mpx_status mpx_k_one_hot(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need_as(c, in, n_in, 3, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *idx = in[0], *dv = in[1], *vals = in[2];
    if (dv->n != 1) return mpx_kernel_error(c, MPX_E_SHAPE, "depth must be one value");
    if (vals->n != 2) return mpx_kernel_error(c, MPX_E_SHAPE, "values must be [off, on] (2 values, not %lld)",
                                              (long long)vals->n);
    double dd = dv->i ? (double)dv->i[0] : dv->d ? dv->d[0] : (double)dv->f[0];
    if (!(dd >= 1 && dd <= (double)MPX_MAX_ELEMS))
        return mpx_kernel_error(c, MPX_E_SHAPE, "depth %g is not from 1 to %lld", dd, (long long)MPX_MAX_ELEMS);
    int64_t depth = (int64_t)dd;
    int r = idx->rank + 1, ax;
    if (r > MPX_MAX_RANK) return mpx_kernel_error(c, MPX_E_LIMIT, "output rank %d is beyond mpx's limit", r);
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", -1), r, 0, &ax)) != MPX_OK) return st;
    int64_t dims[MPX_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++) dims[i] = i == ax ? depth : idx->dims[k++];
    if (idx->n > 0 && depth > MPX_MAX_ELEMS / idx->n) return mpx_kernel_error(c, MPX_E_LIMIT, "the one-hot output is too large");
    if ((st = mpx_k_alloc(c, &out[0], vals->dtype, r, dims)) != MPX_OK) return st;
    int64_t outer = prod(0, ax, dims), inner = prod(ax + 1, r, dims);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t j = o * inner + i, e = (o * depth + d) * inner + i;
                double v = idx->f ? trunc((double)idx->f[j]) : idx->d ? trunc(idx->d[j]) : (double)idx->i[j]; /* ORT casts to int64 */
                if (v < 0) v += (double)depth; /* NaN and values out of range match no position */
                bool on = v == (double)d;
                if (out[0].d) out[0].d[e] = vals->d[on ? 1 : 0];
                else if (out[0].f) out[0].f[e] = vals->f[on ? 1 : 0];
                else out[0].i[e] = vals->i[on ? 1 : 0];
            }
    return MPX_OK;
}

/* Compress: the slices along axis (the flattened input without one) whose
 * condition is true; a condition shorter than the axis selects only as far
 * as it goes. */
mpx_status mpx_k_compress(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *cond = in[1];
    if (!cond->i || cond->rank != 1) return mpx_kernel_error(c, MPX_E_INVALID, "condition must be a 1-D bool tensor");
    const mpx_attr *a = mpx_node_attr(c->node, "axis");
    int ax = -1;
    if (a && (st = mpx_k_axis(c, a->i, x->rank, 0, &ax)) != MPX_OK) return st;
    int64_t len = ax >= 0 ? x->dims[ax] : x->n, kept = 0;
    if (cond->n > len)
        return mpx_kernel_error(c, MPX_E_SHAPE, "condition has %lld values for %lld slices", (long long)cond->n,
                                (long long)len);
    for (int64_t i = 0; i < cond->n; i++) kept += cond->i[i] != 0;
    int64_t dims[MPX_MAX_RANK];
    int rank = ax >= 0 ? x->rank : 1;
    for (int i = 0; i < rank; i++) dims[i] = ax < 0 ? kept : i == ax ? kept : x->dims[i];
    if ((st = alloc_like(c, &out[0], x, rank, dims)) != MPX_OK) return st;
    int64_t outer = ax >= 0 ? prod(0, ax, x->dims) : 1, inner = ax >= 0 ? prod(ax + 1, x->rank, x->dims) : 1;
    size_t es = esz(x), row = (size_t)inner * es;
    char *dst = bytes(&out[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < cond->n; i++)
            if (cond->i[i]) {
                memcpy(dst, cbytes(x) + (size_t)(o * len + i) * row, row);
                dst += row;
            }
    return MPX_OK;
}

/* ReverseSequence: for batch b along batch_axis, the first sequence_lens[b]
 * entries along time_axis in reverse order, the rest as they are. */
mpx_status mpx_k_reverse_sequence(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                  int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *lens = in[1];
    int ta, ba;
    if (x->rank < 2) return mpx_kernel_error(c, MPX_E_SHAPE, "ReverseSequence needs rank 2 or more, not %d", x->rank);
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "time_axis", 0), x->rank, 0, &ta)) ||
        (st = mpx_k_axis(c, mpx_node_attr_int(c->node, "batch_axis", 1), x->rank, 0, &ba)))
        return st;
    if (ta == ba || ta > 1 || ba > 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "time_axis and batch_axis must be 0 and 1 in some order");
    if (!lens->i || lens->rank != 1 || lens->dims[0] != x->dims[ba])
        return mpx_kernel_error(c, MPX_E_SHAPE, "sequence_lens must be %lld integers", (long long)x->dims[ba]);
    for (int64_t b = 0; b < lens->n; b++)
        if (lens->i[b] < 0 || lens->i[b] > x->dims[ta])
            return mpx_kernel_error(c, MPX_E_INVALID, "sequence_lens[%lld] = %lld is not from 0 to %lld", (long long)b,
                                    (long long)lens->i[b], (long long)x->dims[ta]);
    if ((st = alloc_like(c, &out[0], x, x->rank, x->dims)) != MPX_OK) return st;
    int64_t xs[MPX_MAX_RANK], inner = prod(2, x->rank, x->dims);
    row_strides(x->rank, x->dims, xs);
    size_t es = esz(x);
    for (int64_t b = 0; b < x->dims[ba]; b++)
        for (int64_t t = 0; t < x->dims[ta]; t++) {
            int64_t from = t < lens->i[b] ? lens->i[b] - 1 - t : t;
            memcpy(bytes(&out[0]) + (size_t)(b * xs[ba] + t * xs[ta]) * es,
                   cbytes(x) + (size_t)(b * xs[ba] + from * xs[ta]) * es, (size_t)inner * es);
        }
    return MPX_OK;
}

/* The window functions of ONNX (opset 17): w[i] over N = size (periodic,
 * the default) or size - 1 (symmetric); each term computed in double and
 * rounded once, as the ONNX text's formulas written in float64. */
typedef enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN } win_kind;

static mpx_status window(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                         win_kind kind) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    if (in[0]->n != 1 || !in[0]->i) return mpx_kernel_error(c, MPX_E_SHAPE, "size must be one integer");
    int64_t n = in[0]->i[0];
    if (n < 0 || n > MPX_MAX_ELEMS) return mpx_kernel_error(c, MPX_E_LIMIT, "size %lld is out of range", (long long)n);
    int64_t dt = mpx_node_attr_int(c->node, "output_datatype", MPX_DT_FLOAT);
    if (dt <= 0 || dt >= MPX_DT_COUNT_ || !mpx_dtype_is_float((mpx_dtype)dt))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "output_datatype %lld: mpx computes windows as floats",
                                (long long)dt);
    if ((st = mpx_k_alloc(c, &out[0], (mpx_dtype)dt, 1, &n)) != MPX_OK) return st;
    bool periodic = mpx_node_attr_int(c->node, "periodic", 1) != 0;
    double N = periodic ? (double)n : (double)n - 1, pi = 3.14159265358979323846;
    for (int64_t i = 0; i < n; i++) {
        double x = N > 0 ? 2.0 * pi * (double)i / N : 0.0, w;
        switch (kind) {
        case WIN_HANN: w = 0.5 - 0.5 * cos(x); break;
        case WIN_HAMMING: w = 25.0 / 46.0 - (21.0 / 46.0) * cos(x); break;
        default: w = 0.42 - 0.5 * cos(x) + 0.08 * cos(2.0 * x); break;
        }
        if (out[0].d) out[0].d[i] = w; /* float64: the double, unrounded */
        else out[0].f[i] = (float)w;
    }
    return MPX_OK;
}

mpx_status mpx_k_hann_window(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return window(c, in, n_in, out, n_out, WIN_HANN);
}
mpx_status mpx_k_hamming_window(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                int n_out) {
    return window(c, in, n_in, out, n_out, WIN_HAMMING);
}
mpx_status mpx_k_blackman_window(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    return window(c, in, n_in, out, n_out, WIN_BLACKMAN);
}

mpx_status mpx_k_range(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out) {
    mpx_status st = need(c, in, n_in, 3, n_out, 1);
    if (st != MPX_OK) return st;
    for (int k = 0; k < 3; k++) {
        if (in[k]->n != 1)
            return mpx_kernel_error(c, MPX_E_SHAPE, "input %d must be a scalar (has %lld elements)",
                                    k, (long long)in[k]->n);
        if ((in[k]->f != NULL) != (in[0]->f != NULL))
            return mpx_kernel_error(c, MPX_E_INVALID, "start, limit and delta differ in type");
    }
    int64_t n;
    if (in[0]->f) {
        float s = in[0]->f[0], l = in[1]->f[0], d = in[2]->f[0];
        if (!isfinite(s) || !isfinite(l) || !isfinite(d) || d == 0.0f)
            return mpx_kernel_error(c, MPX_E_INVALID, "range %g to %g step %g is not finite",
                                    (double)s, (double)l, (double)d);
        double cnt = ceil(((double)l - (double)s) / (double)d);
        if (cnt > (double)MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_LIMIT, "range has %g elements", cnt);
        n = cnt > 0 ? (int64_t)cnt : 0;
        if ((st = mpx_k_alloc(c, &out[0], in[0]->dtype, 1, &n)) != MPX_OK) return st;
        for (int64_t i = 0; i < n; i++) out[0].f[i] = s + (float)i * d;
        return MPX_OK;
    }
    int64_t s = in[0]->i[0], l = in[1]->i[0], d = in[2]->i[0];
    if (d == 0) return mpx_kernel_error(c, MPX_E_INVALID, "delta is 0");
    n = 0;
    if ((d > 0 && l > s) || (d < 0 && l < s)) {
        /* The span fits in uint64 even when l - s overflows int64. */
        uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
        uint64_t step = d > 0 ? (uint64_t)d : (uint64_t)0 - (uint64_t)d;
        uint64_t cnt = span / step + (span % step != 0);
        if (cnt > (uint64_t)MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_LIMIT, "range has %llu elements",
                                    (unsigned long long)cnt);
        n = (int64_t)cnt;
    }
    if ((st = mpx_k_alloc(c, &out[0], in[0]->dtype, 1, &n)) != MPX_OK) return st;
    for (int64_t i = 0; i < n; i++)
        out[0].i[i] = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
    return MPX_OK;
}

/* ---- TopK, NonZero ---------------------------------------------------------------- */

typedef struct topk_key {
    const float *f;
    const double *d; /* float64 values (the float64 table's row is this kernel) */
    const int64_t *i;
    bool largest;
} topk_key;

/* a comes strictly before b. NaN ranks above every number (as in numpy's
 * sort), so it leads with largest=1 and trails otherwise. (A float compares
 * as the double it widens to exactly.) */
static bool topk_before(const topk_key *k, int64_t a, int64_t b) {
    if (k->f || k->d) {
        double x = k->f ? k->f[a] : k->d[a], y = k->f ? k->f[b] : k->d[b];
        bool xn = isnan(x), yn = isnan(y);
        if (xn || yn) return k->largest ? xn && !yn : yn && !xn;
        return k->largest ? x > y : x < y;
    }
    return k->largest ? k->i[a] > k->i[b] : k->i[a] < k->i[b];
}

/* Stable merge sort of positions: equal values keep the lower index first. */
static void topk_sort(const topk_key *k, int64_t *p, int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = topk_before(k, p[b], p[a]) ? p[b++] : p[a++];
            while (a < mid) tmp[o++] = p[a++];
            while (b < hi) tmp[o++] = p[b++];
        }
        memcpy(p, tmp, (size_t)n * sizeof *p);
    }
}

mpx_status mpx_k_topk(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    mpx_status st = need_as(c, in, n_in, 1, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int r = x->rank, ax;
    if (r == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "input must have rank >= 1");
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", -1), r, 0, &ax)) != MPX_OK)
        return st;
    int64_t k;
    const mpx_attr *ka = mpx_node_attr(c->node, "k");
    if (ka && ka->type == MPX_ATTR_INT) {
        k = ka->i;
    } else {
        if (n_in < 2 || !valid(in[1]))
            return mpx_kernel_error(c, MPX_E_INVALID, "k is required (input 1 from opset 10)");
        if (!in[1]->i || in[1]->n != 1)
            return mpx_kernel_error(c, MPX_E_INVALID, "k must be one integer");
        k = in[1]->i[0];
    }
    int64_t d = x->dims[ax];
    if (k < 0 || k > d)
        return mpx_kernel_error(c, MPX_E_SHAPE, "k = %lld is out of range for an axis of %lld",
                                (long long)k, (long long)d);
    topk_key key = {.largest = mpx_node_attr_int(c->node, "largest", 1) != 0};
    int64_t dims[MPX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[ax] = k;
    if ((st = alloc_like(c, &out[0], x, r, dims)) != MPX_OK) return st;
    if (n_out > 1 && (st = mpx_k_alloc(c, &out[1], MPX_DT_INT64, r, dims)) != MPX_OK) {
        mpx_value_free(&out[0]);
        return st;
    }
    int64_t outer = prod(0, ax, x->dims), inner = prod(ax + 1, r, x->dims);
    size_t cnt = d ? (size_t)d : 1u;
    int64_t *p = malloc(cnt * sizeof *p), *tmp = malloc(cnt * sizeof *tmp);
    float *fv = x->f ? malloc(cnt * sizeof *fv) : NULL;
    double *dv = x->d ? malloc(cnt * sizeof *dv) : NULL;
    int64_t *iv = x->f || x->d ? NULL : malloc(cnt * sizeof *iv);
    if (!p || !tmp || (!fv && !dv && !iv)) {
        free(p);
        free(tmp);
        free(fv);
        free(dv);
        free(iv);
        free_outs(out, n_out > 1 ? 2 : 1);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    key.f = fv;
    key.d = dv;
    key.i = iv;
    /* "sorted" = 0 leaves the order open; sorted output is a valid answer. */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in_ = 0; in_ < inner; in_++) {
            int64_t base = o * d * inner + in_;
            for (int64_t j = 0; j < d; j++) {
                if (fv)
                    fv[j] = x->f[base + j * inner];
                else if (dv)
                    dv[j] = x->d[base + j * inner];
                else
                    iv[j] = x->i[base + j * inner];
                p[j] = j;
            }
            topk_sort(&key, p, tmp, d);
            int64_t ob = o * k * inner + in_;
            for (int64_t j = 0; j < k; j++) {
                if (fv)
                    out[0].f[ob + j * inner] = fv[p[j]];
                else if (dv)
                    out[0].d[ob + j * inner] = dv[p[j]];
                else
                    out[0].i[ob + j * inner] = iv[p[j]];
                if (n_out > 1) out[1].i[ob + j * inner] = p[j];
            }
        }
    free(p);
    free(tmp);
    free(fv);
    free(dv);
    free(iv);
    return MPX_OK;
}

static bool nonzero_at(const mpx_value *x, int64_t j) {
    return x->d ? x->d[j] != 0.0 : x->f ? x->f[j] != 0.0f : x->i[j] != 0;
}

/* NonZero: [rank, nnz] coordinates in row-major order; a scalar counts as 1-D
 * (as numpy.nonzero and ONNX Runtime do). NaN is non-zero. */
mpx_status mpx_k_nonzero(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    mpx_status st = need_as(c, in, n_in, 1, n_out, 1, true);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int r = x->rank ? x->rank : 1;
    int64_t xd[MPX_MAX_RANK], nnz = 0;
    if (x->rank)
        memcpy(xd, x->dims, sizeof xd);
    else
        xd[0] = 1;
    for (int64_t j = 0; j < x->n; j++) nnz += nonzero_at(x, j);
    int64_t dims[2] = {r, nnz};
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 2, dims)) != MPX_OK) return st;
    int64_t co[MPX_MAX_RANK] = {0}, w = 0;
    for (int64_t j = 0; j < x->n; j++) {
        if (nonzero_at(x, j)) {
            for (int q = 0; q < r; q++) out[0].i[q * nnz + w] = co[q];
            w++;
        }
        for (int q = r - 1; q >= 0; q--) {
            if (++co[q] < xd[q]) break;
            co[q] = 0;
        }
    }
    return MPX_OK;
}
