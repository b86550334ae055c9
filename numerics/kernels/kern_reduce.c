/* kern_reduce.c - reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 * ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
 * ReduceLogSumExp), ArgMax/ArgMin and CumSum.
 *
 * Summation order (DESIGN section 3): each output sums its terms in
 * increasing flat index of the input, i.e. in row-major order of the reduced
 * coordinates; CumSum sums along its axis in the direction it runs (reverse
 * from the last element). Float sums go through mpx_acc with the node's
 * accumulation format, so fp16 accumulation rounds the running sum after
 * every addition; with fp32 accumulation a plain fp32 loop adds in the same
 * order. The reductions walk the input once in flat order and add each
 * element to its output, which gives every output its terms in that order
 * and lets the compiler vectorise rows of independent outputs. */
#include "kern_elem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum rop { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L2, R_SUMSQ, R_L1, R_LOGSUM, R_LOGSUMEXP } rop;

/* ---- axes --------------------------------------------------------------------------- */

/* The axes to reduce: the "axes" attribute where the node has one (ReduceSum
 * before opset 13, the others before 18), else input 1 (optional, int, at
 * most rank 1). No axes reduces everything, or nothing with
 * noop_with_empty_axes=1. */
mpx_status mpx_k_reduce_axes(const mpx_kctx *c, const mpx_value *x, const mpx_value *const *in, int n_in,
                             bool *mask, bool *noop) {
    const int64_t *ax = NULL;
    int64_t na = 0;
    *noop = false;
    const mpx_attr *aa = mpx_node_attr(c->node, "axes");
    if (aa) {
        if (aa->type != MPX_ATTR_INTS)
            return mpx_kernel_error(c, MPX_E_INVALID,
                                    "the attribute \"axes\" is not a list of ints");
        ax = aa->ints;
        na = aa->n;
    } else {
        const mpx_value *a;
        mpx_status st = ke_input(c, in, n_in, 1, KE_INT, true, &a);
        if (st != MPX_OK) return st;
        if (a && a->rank > 1)
            return mpx_kernel_error(c, MPX_E_SHAPE, "axes must be a 1-D tensor (it has rank %d)",
                                    a->rank);
        if (a) {
            ax = a->i;
            na = a->n;
        }
    }
    for (int i = 0; i < x->rank; i++) mask[i] = na == 0;
    if (na == 0) {
        *noop = mpx_node_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
        return MPX_OK;
    }
    if (na > x->rank)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%lld axes for an input of rank %d", (long long)na,
                                x->rank);
    for (int64_t i = 0; i < na; i++) {
        int a;
        mpx_status st = mpx_k_axis(c, ax[i], x->rank, 0, &a);
        if (st != MPX_OK) return st;
        if (mask[a])
            return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is listed twice",
                                    (long long)ax[i]);
        mask[a] = true;
    }
    return MPX_OK;
}

/* ---- the walk -------------------------------------------------------------------------- */

/* The input's dims, adjacent ones merged where the output steps through them
 * alike, with the output's element stride in each (0 on reduced dims). */
typedef struct rwalk {
    int rank;
    int64_t dims[MPX_MAX_RANK];
    int64_t ost[MPX_MAX_RANK];
} rwalk;

static void rwalk_init(rwalk *w, const mpx_value *x, const bool *mask) {
    int64_t ost[MPX_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        ost[i] = mask[i] ? 0 : s;
        if (!mask[i]) s *= x->dims[i];
    }
    w->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] == 1) continue;
        int j = w->rank - 1;
        if (j >= 0 && w->ost[j] == ost[i] * x->dims[i]) {
            w->dims[j] *= x->dims[i];
            w->ost[j] = ost[i];
            continue;
        }
        w->dims[w->rank] = x->dims[i];
        w->ost[w->rank++] = ost[i];
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->dims[0] = 1;
        w->ost[0] = 0;
    }
}

typedef struct rctx {
    rop op;
    const float *fx;
    const int64_t *ix;
    float *fy;
    int64_t *iy;
    mpx_acc *acc; /* per output, when the accumulation format rounds */
    const float *shift; /* LogSumExp: per output, the row's max (terms exp(x - max)) */
} rctx;

/* Terms: x for sums, x*x for L2 and SumSquare, |x| for L1, exp(x - max)
 * for LogSumExp (the max taken out so exp never overflows; ORT's order). */
static float fterm(const rctx *c, float v, int64_t out) {
    switch (c->op) {
    case R_L2: case R_SUMSQ: return v * v;
    case R_L1: return fabsf(v);
    case R_LOGSUMEXP: return expf(v - c->shift[out]);
    default: return v;
    }
}

/* One row of n input elements from x[xo]; the output index steps by os (0:
 * all into y[yo], 1: element i into y[yo + i]). */
static void reduce_row(const rctx *c, int64_t n, int64_t xo, int64_t yo, int64_t os) {
    rop op = c->op;
    if (c->fx && c->acc) {
        for (int64_t i = 0; i < n; i++) mpx_acc_add(&c->acc[yo + i * os], fterm(c, c->fx[xo + i], yo + i * os));
    } else if (c->fx) {
        const float *x = c->fx + xo;
        float *y = c->fy + yo;
        switch (op) {
        case R_SUM: case R_MEAN:
            if (os) for (int64_t i = 0; i < n; i++) y[i] += x[i];
            else for (int64_t i = 0; i < n; i++) y[0] += x[i];
            break;
        case R_L2: case R_SUMSQ:
            if (os) for (int64_t i = 0; i < n; i++) y[i] += x[i] * x[i];
            else for (int64_t i = 0; i < n; i++) y[0] += x[i] * x[i];
            break;
        case R_L1: case R_LOGSUMEXP:
            for (int64_t i = 0; i < n; i++) y[i * os] += fterm(c, x[i], yo + i * os);
            break;
        case R_LOGSUM:
            if (os) for (int64_t i = 0; i < n; i++) y[i] += x[i];
            else for (int64_t i = 0; i < n; i++) y[0] += x[i];
            break;
        case R_PROD:
            for (int64_t i = 0; i < n; i++) y[i * os] *= x[i];
            break;
        case R_MAX: /* NaN wins wherever it is (numpy; ORT's result depends on position) */
            for (int64_t i = 0; i < n; i++) {
                float *o = &y[i * os];
                if (x[i] > *o || (x[i] != x[i] && *o == *o)) *o = x[i];
            }
            break;
        case R_MIN:
            for (int64_t i = 0; i < n; i++) {
                float *o = &y[i * os];
                if (x[i] < *o || (x[i] != x[i] && *o == *o)) *o = x[i];
            }
            break;
        }
    } else {
        const int64_t *x = c->ix + xo;
        int64_t *y = c->iy + yo;
        for (int64_t i = 0; i < n; i++) {
            int64_t *o = &y[i * os], v = x[i];
            switch (op) {
            case R_SUM: case R_MEAN: *o = ke_add(*o, v); break;
            case R_L2: case R_SUMSQ: *o = ke_add(*o, ke_mul(v, v)); break;
            case R_L1: *o = ke_add(*o, v < 0 ? ke_sub(0, v) : v); break;
            case R_LOGSUM: case R_LOGSUMEXP: break; /* float only (reduce refuses integers) */
            case R_PROD: *o = ke_mul(*o, v); break;
            case R_MAX: if (v > *o) *o = v; break;
            case R_MIN: if (v < *o) *o = v; break;
            }
        }
    }
}

static void rwalk_run(const rwalk *w, const rctx *c) {
    int r = w->rank;
    int64_t inner = w->dims[r - 1], os = w->ost[r - 1], rows = 1, yo = 0;
    int64_t co[MPX_MAX_RANK] = {0};
    for (int i = 0; i < r - 1; i++) rows *= w->dims[i];
    if (inner == 0) return;
    for (int64_t row = 0; row < rows; row++) {
        reduce_row(c, inner, row * inner, yo, os);
        for (int i = r - 2; i >= 0; i--) {
            yo += w->ost[i];
            if (++co[i] < w->dims[i]) break;
            yo -= w->ost[i] * w->dims[i];
            co[i] = 0;
        }
    }
}

/* The smallest and largest values of an integer dtype (ReduceMax/Min of an
 * empty set give the smallest and the largest, as ONNX says). */
static void int_range(mpx_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case MPX_DT_BOOL: *lo = 0, *hi = 1; break;
    case MPX_DT_UINT8: *lo = 0, *hi = UINT8_MAX; break;
    case MPX_DT_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case MPX_DT_UINT16: *lo = 0, *hi = UINT16_MAX; break;
    case MPX_DT_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case MPX_DT_UINT32: *lo = 0, *hi = UINT32_MAX; break;
    case MPX_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
    }
}

static mpx_status reduce(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out, rop op) {
    const mpx_value *x;
    unsigned kinds = op == R_MAX || op == R_MIN ? KE_ANY : op == R_LOGSUM || op == R_LOGSUMEXP ? KE_FLOAT : KE_NUM;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, kinds, false, &x);
    if (st != MPX_OK) return st;
    bool mask[MPX_MAX_RANK], noop;
    if ((st = mpx_k_reduce_axes(c, x, in, n_in, mask, &noop)) != MPX_OK) return st;
    if (noop) {
        mpx_error e = {0};
        if ((st = mpx_value_copy(&out[0], x, &e)) != MPX_OK)
            return mpx_kernel_error(c, st, "%s", e.msg);
        return MPX_OK;
    }
    bool keep = mpx_node_attr_int(c->node, "keepdims", 1) != 0;
    int rank = 0;
    int64_t dims[MPX_MAX_RANK], count = 1; /* count: terms per output */
    for (int i = 0; i < x->rank; i++) {
        if (mask[i]) count *= x->dims[i];
        if (!mask[i] || keep) dims[rank++] = mask[i] ? 1 : x->dims[i];
    }
    if (!x->f && op == R_MEAN && count == 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "the mean of an empty set of integers");
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, rank, dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    rctx rc = {op, x->f, x->i, y->f, y->i, NULL, NULL};
    float *shift = NULL;
    if (op == R_LOGSUMEXP && x->n > 0) {
        /* First each row's max (a row of -inf or NaN keeps its own: exp of
         * x - max is then NaN or 0 as the plain formula gives). */
        shift = malloc((size_t)(y->n ? y->n : 1) * sizeof *shift);
        if (!shift) return ke_fail(y, mpx_kernel_error(c, MPX_E_NOMEM, "out of memory"));
        for (int64_t i = 0; i < y->n; i++) shift[i] = -INFINITY;
        rctx mc = {R_MAX, x->f, NULL, shift, NULL, NULL, NULL};
        rwalk w;
        rwalk_init(&w, x, mask);
        rwalk_run(&w, &mc);
        for (int64_t i = 0; i < y->n; i++)
            if (!isfinite(shift[i])) shift[i] = 0.0f;
        rc.shift = shift;
    }
    if (x->f) {
        float init = op == R_PROD ? 1.0f : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0f;
        for (int64_t i = 0; i < y->n; i++) y->f[i] = init;
        bool sum = op != R_PROD && op != R_MAX && op != R_MIN;
        if (sum && !mpx_acc_is_fp32(&c->acc)) {
            rc.acc = malloc((size_t)(y->n ? y->n : 1) * sizeof *rc.acc);
            if (!rc.acc) return ke_fail(y, mpx_kernel_error(c, MPX_E_NOMEM, "out of memory"));
            for (int64_t i = 0; i < y->n; i++) mpx_acc_init(&rc.acc[i], &c->acc, 0.0f);
        }
    } else {
        int64_t lo, hi;
        int_range(x->dtype, &lo, &hi);
        int64_t init = op == R_PROD ? 1 : op == R_MAX ? lo : op == R_MIN ? hi : 0;
        for (int64_t i = 0; i < y->n; i++) y->i[i] = init;
    }
    if (x->n > 0) {
        rwalk w;
        rwalk_init(&w, x, mask);
        rwalk_run(&w, &rc);
    }
    if (rc.acc) {
        for (int64_t i = 0; i < y->n; i++) y->f[i] = mpx_acc_result(&rc.acc[i]);
        free(rc.acc);
    }
    for (int64_t i = 0; i < y->n; i++) {
        if (y->f && op == R_MEAN) y->f[i] /= (float)count;
        else if (y->f && op == R_LOGSUM) y->f[i] = logf(y->f[i]);
        else if (y->f && op == R_LOGSUMEXP) y->f[i] = logf(y->f[i]) + (shift ? shift[i] : 0.0f);
        else if (y->f && op == R_L2) y->f[i] = sqrtf(y->f[i]);
        else if (y->i && op == R_MEAN) y->i[i] /= count;
        else if (y->i && op == R_L2) /* a wrapped (negative) sum of squares has no root */
            y->i[i] = y->i[i] >= 0 ? (int64_t)sqrt((double)y->i[i]) : INT64_MIN;
    }
    free(shift);
    ke_wrap_all(y);
    return MPX_OK;
}

#define REDUCE_KERNEL(fn, op)                                                                \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,  \
                  int n_out) {                                                               \
        return reduce(c, in, n_in, out, n_out, op);                                          \
    }

REDUCE_KERNEL(mpx_k_reduce_sum, R_SUM)
REDUCE_KERNEL(mpx_k_reduce_mean, R_MEAN)
REDUCE_KERNEL(mpx_k_reduce_max, R_MAX)
REDUCE_KERNEL(mpx_k_reduce_min, R_MIN)
REDUCE_KERNEL(mpx_k_reduce_prod, R_PROD)
REDUCE_KERNEL(mpx_k_reduce_l2, R_L2)
REDUCE_KERNEL(mpx_k_reduce_sum_square, R_SUMSQ)
REDUCE_KERNEL(mpx_k_reduce_l1, R_L1)
REDUCE_KERNEL(mpx_k_reduce_log_sum, R_LOGSUM)
REDUCE_KERNEL(mpx_k_reduce_log_sum_exp, R_LOGSUMEXP)

/* ---- ArgMax, ArgMin ------------------------------------------------------------------- */

/* Whether v replaces the current best. NaN counts as the extreme (numpy's
 * argmax/argmin: the first NaN, or the last with select_last_index). */
static bool arg_better(float v, float best, bool max, bool last) {
    if (best != best) return last && v != v;
    if (v != v) return true;
    if (v == best) return last;
    return max ? v > best : v < best;
}

static mpx_status arg_reduce(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                             mpx_value *out, int n_out, bool max) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, KE_ANY, false, &x);
    if (st != MPX_OK) return st;
    int ax;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), x->rank ? x->rank : 1, 0, &ax)))
        return st;
    bool keep = mpx_node_attr_int(c->node, "keepdims", 1) != 0;
    bool last = mpx_node_attr_int(c->node, "select_last_index", 0) != 0;
    int64_t len = x->rank ? x->dims[ax] : 1, outer = 1, inner = 1;
    if (len == 0 && x->n == 0) {
        /* an empty axis has no index to return */
        bool other_empty = false;
        for (int i = 0; i < x->rank; i++) other_empty |= i != ax && x->dims[i] == 0;
        if (!other_empty)
            return mpx_kernel_error(c, MPX_E_SHAPE, "axis %d has size 0: no index to return", ax);
    }
    int rank = 0;
    int64_t dims[MPX_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (i < ax) outer *= x->dims[i];
        if (i > ax) inner *= x->dims[i];
        if (i != ax || keep) dims[rank++] = i == ax ? 1 : x->dims[i];
    }
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, rank, dims)) != MPX_OK) return st;
    int64_t *y = out[0].i;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j, best = 0;
            if (x->f) {
                float bv = x->f[base];
                for (int64_t k = 1; k < len; k++) {
                    float v = x->f[base + k * inner];
                    if (arg_better(v, bv, max, last)) bv = v, best = k;
                }
            } else {
                int64_t bv = x->i[base];
                for (int64_t k = 1; k < len; k++) {
                    int64_t v = x->i[base + k * inner];
                    if (max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv)))
                        bv = v, best = k;
                }
            }
            y[o * inner + j] = best;
        }
    }
    return MPX_OK;
}

mpx_status mpx_k_argmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    return arg_reduce(c, in, n_in, out, n_out, true);
}

mpx_status mpx_k_argmin(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    return arg_reduce(c, in, n_in, out, n_out, false);
}

/* ---- CumSum ----------------------------------------------------------------------------- */

/* The running sum so far, a partial block included, without disturbing it. */
static float acc_peek(const mpx_acc *a) {
    mpx_acc t = *a;
    return mpx_acc_result(&t);
}

/* CumSum (opset 11): inputs x and axis (a one-element int tensor); exclusive
 * leaves each element out of its own sum, reverse sums from the end. */
/* CumSum's axis and attributes, with x's rows along it; out[0] allocated
 * in x's dtype. x: input 0, read as the caller's kernel takes it. */
typedef struct cs_args {
    bool excl, rev;
    int64_t len, outer, inner;
} cs_args;

static mpx_status cumsum_setup(const mpx_kctx *c, const mpx_value *x, const mpx_value *const *in, int n_in,
                               mpx_value *out, cs_args *a) {
    const mpx_value *axv;
    mpx_status st = ke_input(c, in, n_in, 1, KE_INT, false, &axv);
    if (st != MPX_OK) return st;
    if (axv->n != 1 || axv->rank > 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "axis must hold one value (it has %lld, rank %d)",
                                (long long)axv->n, axv->rank);
    if (x->rank == 0)
        return mpx_kernel_error(c, MPX_E_SHAPE, "the input must have rank 1 or more");
    int ax;
    if ((st = mpx_k_axis(c, axv->i[0], x->rank, 0, &ax)) != MPX_OK) return st;
    a->excl = mpx_node_attr_int(c->node, "exclusive", 0) != 0;
    a->rev = mpx_node_attr_int(c->node, "reverse", 0) != 0;
    a->len = x->dims[ax], a->outer = 1, a->inner = 1;
    for (int i = 0; i < ax; i++) a->outer *= x->dims[i];
    for (int i = ax + 1; i < x->rank; i++) a->inner *= x->dims[i];
    return mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims);
}

/* CumSum of float64 values (the float64 table's row): running sums in
 * double, in the order of the fp32 kernel's. */
mpx_status mpx_k_cumsum_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x = n_in > 0 ? in[0] : NULL;
    cs_args a;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK && (!x || x->n < 0 || (x->n > 0 && !x->d)))
        st = mpx_kernel_error(c, MPX_E_INVALID, "input 0 is missing or not float64");
    if (st == MPX_OK) st = cumsum_setup(c, x, in, n_in, out, &a);
    if (st != MPX_OK) return st;
    for (int64_t o = 0; o < a.outer; o++)
        for (int64_t j = 0; j < a.inner; j++) {
            double s = 0;
            for (int64_t t = 0; t < a.len; t++) {
                const int64_t k = (o * a.len + (a.rev ? a.len - 1 - t : t)) * a.inner + j;
                const double v = x->d[k];
                if (!a.excl) s += v;
                out[0].d[k] = s;
                if (a.excl) s += v;
            }
        }
    return MPX_OK;
}

mpx_status mpx_k_cumsum(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    const mpx_value *x;
    cs_args a;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, KE_NUM, false, &x);
    if (st == MPX_OK) st = cumsum_setup(c, x, in, n_in, out, &a);
    if (st != MPX_OK) return st;
    const bool excl = a.excl, rev = a.rev;
    const int64_t len = a.len, outer = a.outer, inner = a.inner;
    mpx_value *y = &out[0];
    if (x->n == 0) return MPX_OK;
    bool rounding = x->f && !mpx_acc_is_fp32(&c->acc);
    /* one running sum per position across the axis: rows of `inner` */
    size_t esz = rounding ? sizeof(mpx_acc) : x->f ? sizeof(float) : sizeof(int64_t);
    void *run = malloc((size_t)inner * esz);
    if (!run) return ke_fail(y, mpx_kernel_error(c, MPX_E_NOMEM, "out of memory"));
    mpx_acc *ra = run;
    float *rf = run;
    int64_t *ri = run;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < inner; j++) {
            if (rounding) mpx_acc_init(&ra[j], &c->acc, 0.0f);
            else if (x->f) rf[j] = 0.0f;
            else ri[j] = 0;
        }
        for (int64_t t = 0; t < len; t++) {
            int64_t base = (o * len + (rev ? len - 1 - t : t)) * inner;
            for (int64_t j = 0; j < inner; j++) {
                int64_t k = base + j;
                if (rounding) {
                    if (excl) y->f[k] = acc_peek(&ra[j]);
                    mpx_acc_add(&ra[j], x->f[k]);
                    if (!excl) y->f[k] = acc_peek(&ra[j]);
                } else if (x->f) {
                    if (excl) y->f[k] = rf[j];
                    rf[j] += x->f[k];
                    if (!excl) y->f[k] = rf[j];
                } else {
                    if (excl) y->i[k] = ri[j];
                    ri[j] = ke_add(ri[j], x->i[k]);
                    if (!excl) y->i[k] = ri[j];
                }
            }
        }
    }
    free(run);
    ke_wrap_all(y);
    return MPX_OK;
}
