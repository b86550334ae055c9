/* kern_f64.c - the float64 kernels: what runs a node that reads or writes
 * a float64 tensor (mpx_node_is_f64), computed in double as ONNX Runtime's
 * double kernels do. The fp32 kernels hold float values as fp32 and would
 * round every double; a node whose op has no row here is refused before a
 * run starts (mpx_kernel_for_node NULL, the executor's message names the
 * node and op) rather than computed in fp32, since a precision tool that
 * narrows float64 silently misreports what it exists to report.
 *
 * Three kinds of row:
 *  - data movement (Reshape, Transpose, Gather, Concat, Slice, Pad, Where,
 *    ...): the op's own kernel moves the elements as int64 bit patterns
 *    (copied in and out with memcpy: the bits are the doubles' bits, so
 *    the values move exactly and the op's meaning is written once);
 *  - ops that read only shapes (Shape, Size) or make float64 values
 *    themselves (the random generators; Bernoulli and Multinomial read
 *    float64 ones): the op's own kernel;
 *  - arithmetic: written here in double (Cast, the element-wise ops with
 *    broadcasting, MatMul, Gemm, the reductions, Softmax, LogSoftmax,
 *    Hardmax, Range, ConstantOfShape), or beside the op's fp32 kernel where
 *    the two share their checks and index walk (Conv, ConvTranspose, the
 *    pools, the normalisations, CumSum, Det, the losses, Attention, Resize,
 *    Upsample, LSTM, GRU, RNN: kern_internal.h's MPX_F64_SHARED list). Sums
 *    run in index order in double; the accumulation rules (mpx_accum) do
 *    not apply to float64 nodes, whose reference sums in double.
 * The broadcasting ops and MatMul's batches walk kern_binary.c's row walk
 * (mpx_k_bwalk), the fp32 ops' own. */
#include "kern_elem.h"
#include "kern_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------- */

static const mpx_value *opt_in(const mpx_value *const *in, int n_in, int k) {
    return k < n_in && in[k] && in[k]->n >= 0 ? in[k] : NULL;
}

/* Input k as float64 values (*out NULL when optional and absent). */
static mpx_status d_input(const mpx_kctx *c, const mpx_value *const *in, int n_in, int k, bool optional,
                          const mpx_value **out) {
    const mpx_value *v = opt_in(in, n_in, k);
    *out = v;
    if (!v) return optional ? MPX_OK : mpx_kernel_error(c, MPX_E_INVALID, "input %d is missing (the op needs it)", k);
    if (v->rank < 0 || v->rank > MPX_MAX_RANK || (v->n > 0 && !v->d))
        return mpx_kernel_error(c, MPX_E_INVALID, "input %d is %s; the float64 kernel takes float64", k,
                                mpx_dtype_name(v->dtype));
    return MPX_OK;
}

/* Output j's tensor is float64 in the graph. */
static bool out_is_f64(const mpx_node *n, int j) {
    return j < n->n_outputs && n->outputs[j] && n->outputs[j]->dtype == MPX_DT_DOUBLE;
}

/* ---- data movement: the op's own kernel on the doubles' bits ------------------- */

static void free_bits(mpx_value *bits, int n) {
    for (int k = 0; k < n; k++) mpx_value_free(&bits[k]);
    free(bits);
}

static mpx_status f64_move(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_kernel_fn fn = mpx_kernel_for(c->node->op);
    if (!fn) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "no kernel");
    mpx_value *bits = calloc((size_t)n_in + 1, sizeof *bits);
    const mpx_value **ins = calloc((size_t)n_in + 1, sizeof *ins);
    if (!bits || !ins) {
        free(bits), free(ins);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    mpx_status st = MPX_OK;
    for (int k = 0; k < n_in; k++) {
        bits[k].n = -1;
        ins[k] = in[k];
        if (!in[k] || !in[k]->d || in[k]->n < 0) continue;
        if ((st = mpx_k_alloc_raw(c, &bits[k], MPX_DT_INT64, in[k]->rank, in[k]->dims)) != MPX_OK) break;
        if (in[k]->n > 0) memcpy(bits[k].i, in[k]->d, (size_t)in[k]->n * sizeof *in[k]->d);
        ins[k] = &bits[k];
    }
    if (st == MPX_OK) st = fn(c, ins, n_in, out, n_out);
    for (int j = 0; st == MPX_OK && j < n_out; j++) {
        mpx_value *y = &out[j];
        if (y->n < 0 || y->is_seq || !y->i || !out_is_f64(c->node, j)) continue;
        mpx_value w;
        if ((st = mpx_k_alloc_raw(c, &w, MPX_DT_DOUBLE, y->rank, y->dims)) != MPX_OK) break;
        if (y->n > 0) memcpy(w.d, y->i, (size_t)y->n * sizeof *w.d);
        mpx_value_free(y); /* (a view of bits[k] is not freed through it) */
        *y = w;
    }
    if (st != MPX_OK) mpx_k_free_values(out, n_out);
    free_bits(bits, n_in);
    free(ins);
    return st;
}

/* Ops whose own kernel reads only shapes, or takes and writes float64
 * values itself (the random generators, TopK, EyeLike). */
static mpx_status f64_own(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    return mpx_kernel_for(c->node->op)(c, in, n_in, out, n_out);
}

/* ---- Cast ---------------------------------------------------------------------- */

/* A double to an integer type as C's conversion on x86-64 does it (what
 * ONNX Runtime's static_cast compiles to): truncation toward zero; a NaN or
 * a value outside int64 (int32 for the narrower types, which then wrap) is
 * the "integer indefinite", the most negative value. */
static int64_t d_to_int(double x, mpx_dtype to) {
    switch (to) {
    case MPX_DT_BOOL: return x != 0.0; /* NaN is true, as static_cast<bool> */
    case MPX_DT_INT64: return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
    case MPX_DT_UINT64:
        if (x >= 0x1p63 && x < 0x1p64) return ke_s64((uint64_t)x);
        return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
    case MPX_DT_UINT32: return ke_wrap(x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN, to);
    default: return ke_wrap(x > -0x1p31 - 1.0 && x < 0x1p31 ? (int64_t)x : INT32_MIN, to);
    }
}

static mpx_status f64_cast(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x = opt_in(in, n_in, 0);
    if (n_out < 1 || !x || x->is_seq) return mpx_kernel_error(c, MPX_E_INVALID, "input 0 is missing");
    const mpx_dtype to = mpx_node_cast_to(c->node);
    const int64_t n = x->n;
    mpx_status st;
    if (to == MPX_DT_DOUBLE) {
        if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims)) != MPX_OK) return st;
        double *y = out[0].d;
        if (x->d) memcpy(y, x->d, (size_t)n * sizeof *y);
        else if (x->f) for (int64_t k = 0; k < n; k++) y[k] = (double)x->f[k];
        else if (x->dtype == MPX_DT_UINT64) for (int64_t k = 0; k < n; k++) y[k] = (double)(uint64_t)x->i[k];
        else if (x->i) for (int64_t k = 0; k < n; k++) y[k] = (double)x->i[k];
        else return ke_fail(&out[0], mpx_kernel_error(c, MPX_E_INVALID, "input 0 has no data"));
        return MPX_OK;
    }
    if (!x->d) return mpx_kernel_error(c, MPX_E_INVALID, "input 0 is %s, not float64", mpx_dtype_name(x->dtype));
    if (mpx_dtype_is_int_like(to)) {
        if ((st = mpx_k_alloc_raw(c, &out[0], to, x->rank, x->dims)) != MPX_OK) return st;
        for (int64_t k = 0; k < n; k++) out[0].i[k] = d_to_int(x->d[k], to);
        return MPX_OK;
    }
    /* A narrower float: through fp32, as ONNX Runtime converts a double
     * (static_cast<float>, then the fp32 kernel's rounding to the target). */
    mpx_value f;
    if ((st = mpx_k_alloc_raw(c, &f, MPX_DT_FLOAT, x->rank, x->dims)) != MPX_OK) return st;
    for (int64_t k = 0; k < n; k++) f.f[k] = (float)x->d[k];
    const mpx_value *ins[2] = {&f, n_in > 1 ? in[1] : NULL};
    st = mpx_k_cast(c, ins, n_in > 1 ? 2 : 1, out, n_out);
    mpx_value_free(&f);
    return st;
}

/* ---- element-wise: unary ------------------------------------------------------- */

typedef struct uparams {
    double alpha, beta, gamma, lo, hi;
} uparams;

static double unary_d(mpx_op op, double x, const uparams *p) {
    switch (op) {
    case MPX_OP_Relu: return x > 0 ? x : x == 0 || x < 0 ? 0.0 : x; /* NaN stays */
    case MPX_OP_Neg: return -x;
    case MPX_OP_Abs: return fabs(x);
    case MPX_OP_Sqrt: return sqrt(x);
    case MPX_OP_Exp: return exp(x);
    case MPX_OP_Log: return log(x);
    case MPX_OP_Sin: return sin(x);
    case MPX_OP_Cos: return cos(x);
    case MPX_OP_Tan: return tan(x);
    case MPX_OP_Asin: return asin(x);
    case MPX_OP_Acos: return acos(x);
    case MPX_OP_Atan: return atan(x);
    case MPX_OP_Sinh: return sinh(x);
    case MPX_OP_Cosh: return cosh(x);
    case MPX_OP_Asinh: return asinh(x);
    case MPX_OP_Acosh: return acosh(x);
    case MPX_OP_Atanh: return atanh(x);
    case MPX_OP_Tanh: return tanh(x);
    case MPX_OP_Sigmoid: return ke_sigmoid_d(x);
    case MPX_OP_Erf: return erf(x);
    case MPX_OP_Floor: return floor(x);
    case MPX_OP_Ceil: return ceil(x);
    case MPX_OP_Round: return nearbyint(x); /* ties to even in the default mode */
    case MPX_OP_Reciprocal: return 1.0 / x;
    case MPX_OP_Sign: return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x;
    case MPX_OP_Softplus: return ke_softplus_d(x);
    case MPX_OP_Softsign: return x / (1.0 + fabs(x));
    case MPX_OP_LeakyRelu: return x >= 0 ? x : p->alpha * x;
    case MPX_OP_Elu: return x >= 0 ? x : p->alpha * (exp(x) - 1.0);
    case MPX_OP_Selu: return x > 0 ? p->gamma * x : p->gamma * (p->alpha * exp(x) - p->alpha);
    case MPX_OP_HardSigmoid: return fmax(0.0, fmin(1.0, p->alpha * x + p->beta));
    case MPX_OP_Clip: return isnan(x) ? x : fmin(p->hi, fmax(p->lo, x));
    /* x > alpha ? x : 0 maps NaN to 0, as the fp32 kernel and ORT do */
    case MPX_OP_ThresholdedRelu: return x > p->alpha ? x : 0.0;
    /* ONNX's function bodies, which is what a runtime without a double
     * kernel computes (ONNX Runtime does for Gelu's tanh form): their
     * constants are float Constants cast to double, so HardSwish's
     * HardSigmoid alpha is 1/6 as a float, Gelu's tanh form takes 0.044715f
     * and sqrt((double)0.63661977236f); the erf form divides by sqrt(2.0).
     * x^3 of 1e150 overflows to inf where tanh is 1 anyway. */
    case MPX_OP_HardSwish: return x * fmax(0.0, fmin(1.0, (double)(1.0f / 6.0f) * x + 0.5));
    case MPX_OP_Mish: return x * tanh(ke_softplus_d(x));
    case MPX_OP_Gelu:
        return p->gamma != 0
                   ? 0.5 * x * (1.0 + tanh(sqrt((double)0.63661977236f) * (x + (double)0.044715f * (x * x * x))))
                   : 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    /* lambd alpha, bias beta; NaN (neither side) gives 0, as the fp32 kernel */
    case MPX_OP_Shrink: return x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0.0;
    default: return NAN;
    }
}

static mpx_status f64_unary(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &x);
    if (st != MPX_OK) return st;
    const mpx_node *nd = c->node;
    uparams p = {0, 0, 0, -INFINITY, INFINITY};
    switch (nd->op) {
    case MPX_OP_LeakyRelu: p.alpha = mpx_node_attr_float(nd, "alpha", 0.01f); break;
    case MPX_OP_Elu: p.alpha = mpx_node_attr_float(nd, "alpha", 1.0f); break;
    case MPX_OP_Selu:
        p.alpha = mpx_node_attr_float(nd, "alpha", 1.67326319217681884765625f);
        p.gamma = mpx_node_attr_float(nd, "gamma", 1.05070102214813232421875f);
        break;
    case MPX_OP_HardSigmoid:
        p.alpha = mpx_node_attr_float(nd, "alpha", 0.2f);
        p.beta = mpx_node_attr_float(nd, "beta", 0.5f);
        break;
    case MPX_OP_ThresholdedRelu: p.alpha = mpx_node_attr_float(nd, "alpha", 1.0f); break;
    case MPX_OP_Shrink:
        p.alpha = mpx_node_attr_float(nd, "lambd", 0.5f);
        p.beta = mpx_node_attr_float(nd, "bias", 0.0f);
        break;
    case MPX_OP_Gelu: {
        const char *ap = mpx_node_attr_string(nd, "approximate", "none");
        if (strcmp(ap, "tanh") == 0) p.gamma = 1;
        else if (strcmp(ap, "none") != 0)
            return mpx_kernel_error(c, MPX_E_INVALID, "approximate=\"%s\" is not one of \"none\", \"tanh\"", ap);
        break;
    }
    case MPX_OP_Clip:
        if (ke_opset(c) < 11) {
            p.lo = mpx_node_attr_float(nd, "min", -FLT_MAX);
            p.hi = mpx_node_attr_float(nd, "max", FLT_MAX);
        } else {
            for (int k = 1; k <= 2; k++) {
                const mpx_value *b;
                if ((st = d_input(c, in, n_in, k, true, &b)) != MPX_OK) return st;
                if (b && b->n != 1)
                    return mpx_kernel_error(c, MPX_E_SHAPE, "input %d (the %s) must hold one value", k,
                                            k == 1 ? "min" : "max");
                if (b) *(k == 1 ? &p.lo : &p.hi) = b->d[0];
            }
        }
        break;
    default: break;
    }
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims)) != MPX_OK) return st;
    for (int64_t k = 0; k < x->n; k++) out[0].d[k] = unary_d(nd->op, x->d[k], &p);
    return MPX_OK;
}

/* IsNaN, IsInf: bool outputs. */
static mpx_status f64_isclass(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                              int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &x);
    if (st == MPX_OK) st = mpx_k_alloc_raw(c, &out[0], MPX_DT_BOOL, x->rank, x->dims);
    if (st != MPX_OK) return st;
    const bool pos = mpx_node_attr_int(c->node, "detect_positive", 1) != 0,
               neg = mpx_node_attr_int(c->node, "detect_negative", 1) != 0;
    for (int64_t k = 0; k < x->n; k++) {
        double v = x->d[k];
        out[0].i[k] = c->node->op == MPX_OP_IsNaN ? isnan(v) != 0 : isinf(v) && (v > 0 ? pos : neg);
    }
    return MPX_OK;
}

/* ---- element-wise: binary and variadic, with broadcasting ---------------------- */

static double binary_d(mpx_op op, double a, double b) {
    switch (op) {
    case MPX_OP_Add: case MPX_OP_Sum: case MPX_OP_Mean: return a + b;
    case MPX_OP_Sub: return a - b;
    case MPX_OP_Mul: return a * b;
    case MPX_OP_Div: return a / b;
    case MPX_OP_Pow: return pow(a, b);
    case MPX_OP_Mod: return fmod(a, b);
    /* NaN wins, as ONNX Runtime's Max and Min of doubles */
    case MPX_OP_Max: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case MPX_OP_Min: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case MPX_OP_PRelu: return a < 0 ? b * a : a;
    default: return NAN;
    }
}

static int64_t compare_d(mpx_op op, double a, double b) {
    switch (op) {
    case MPX_OP_Equal: return a == b;
    case MPX_OP_Less: return a < b;
    case MPX_OP_Greater: return a > b;
    case MPX_OP_LessOrEqual: return a <= b;
    case MPX_OP_GreaterOrEqual: return a >= b;
    default: return 0;
    }
}

/* A row of y = a op b for kern_internal.h's broadcast walk (mpx_k_bwalk). */
typedef struct brow {
    mpx_op op;
    bool cmp;
    const double *a, *b;
    double *y;
    int64_t *yb; /* comparisons: bool results */
} brow;

static void bcast2_row(void *ctx, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    const brow *r = ctx;
    const double *a = r->a + off[0], *b = r->b + off[1];
    for (int64_t i = 0; i < n; i++) {
        const double x0 = a[i * step[0]], x1 = b[i * step[1]];
        if (r->cmp) r->yb[yo + i] = compare_d(r->op, x0, x1);
        else r->y[yo + i] = binary_d(r->op, x0, x1);
    }
}

/* y = a op b over the broadcast shape (y allocated here). */
static mpx_status bcast2(const mpx_kctx *c, const mpx_value *a, const mpx_value *b, bool cmp, mpx_value *y) {
    const mpx_value *v[2] = {a, b};
    int rank;
    int64_t dims[MPX_MAX_RANK];
    mpx_status st = mpx_k_bcast_shape(c, 2, v, &rank, dims);
    if (st == MPX_OK) st = mpx_k_alloc_raw(c, y, cmp ? MPX_DT_BOOL : MPX_DT_DOUBLE, rank, dims);
    if (st != MPX_OK || y->n == 0) return st;
    mpx_k_bwalk w;
    mpx_k_bwalk_init(&w, rank, dims, 2, v);
    brow r = {c->node->op, cmp, a->d, b->d, cmp ? NULL : y->d, cmp ? y->i : NULL};
    mpx_k_bwalk_run(&w, &r, bcast2_row);
    return MPX_OK;
}

static mpx_status f64_binary(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_op op = c->node->op;
    const bool variadic = op == MPX_OP_Sum || op == MPX_OP_Mean || op == MPX_OP_Max || op == MPX_OP_Min;
    const bool cmp = op == MPX_OP_Equal || op == MPX_OP_Less || op == MPX_OP_Greater || op == MPX_OP_LessOrEqual ||
                     op == MPX_OP_GreaterOrEqual;
    mpx_status st = ke_need_out(c, n_out);
    if (st != MPX_OK) return st;
    if (op == MPX_OP_Mod && mpx_node_attr_int(c->node, "fmod", 0) == 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "Mod of float64 values needs fmod=1");
    int n = variadic ? n_in : 2;
    if (n < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the op has no inputs");
    const mpx_value *x0;
    if ((st = d_input(c, in, n_in, 0, false, &x0)) != MPX_OK) return st;
    if (n == 1) { /* Sum, Mean, Max, Min of one input: that input */
        mpx_error e = {0};
        if ((st = mpx_value_copy(&out[0], x0, &e)) != MPX_OK) return mpx_kernel_error(c, st, "%s", e.msg);
        return MPX_OK;
    }
    /* Left to right, one input at a time (as ONNX Runtime's variadic ops);
     * Mean divides the sum by the count. */
    mpx_value acc = {.n = -1};
    const mpx_value *left = x0;
    for (int k = 1; k < n && st == MPX_OK; k++) {
        const mpx_value *xk;
        if ((st = d_input(c, in, n_in, k, false, &xk)) != MPX_OK) break;
        mpx_value y;
        if ((st = bcast2(c, left, xk, cmp, &y)) != MPX_OK) break;
        mpx_value_free(&acc);
        acc = y;
        left = &acc;
    }
    if (st != MPX_OK) {
        mpx_value_free(&acc);
        return st;
    }
    if (op == MPX_OP_Mean)
        for (int64_t k = 0; k < acc.n; k++) acc.d[k] /= (double)n;
    out[0] = acc;
    return MPX_OK;
}

/* ---- MatMul and Gemm ------------------------------------------------------------ */

/* A row of MatMul's broadcast batches: n products of M x K by K x N, batch
 * i reading A's batch off[0] + i * step[0] and B's off[1] + i * step[1]. */
typedef struct mm_rows {
    const double *a, *b;
    double *y;
    int64_t M, K, N;
} mm_rows;

static void mm_row(void *ctx, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    const mm_rows *r = ctx;
    const int64_t M = r->M, K = r->K, N = r->N;
    for (int64_t q = 0; q < n; q++) {
        const double *A = r->a + (off[0] + q * step[0]) * M * K, *B = r->b + (off[1] + q * step[1]) * K * N;
        double *Y = r->y + (yo + q) * M * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
                Y[i * N + j] = s;
            }
    }
}

static mpx_status f64_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *a, *b;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &a);
    if (st == MPX_OK) st = d_input(c, in, n_in, 1, false, &b);
    if (st != MPX_OK) return st;
    if (a->rank < 1 || b->rank < 1) return mpx_kernel_error(c, MPX_E_SHAPE, "MatMul of a scalar");
    /* numpy's rules: a vector is a row (a) or a column (b), dropped after */
    const int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    const int64_t Kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (K != Kb)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ (%lld and %lld)", (long long)K, (long long)Kb);
    mpx_value ab = {.rank = a->rank > 2 ? a->rank - 2 : 0}, bb = {.rank = b->rank > 2 ? b->rank - 2 : 0};
    for (int i = 0; i < ab.rank; i++) ab.dims[i] = a->dims[i];
    for (int i = 0; i < bb.rank; i++) bb.dims[i] = b->dims[i];
    const mpx_value *bv[2] = {&ab, &bb};
    int br;
    int64_t bd[MPX_MAX_RANK];
    if ((st = mpx_k_bcast_shape(c, 2, bv, &br, bd)) != MPX_OK) return st;
    int64_t od[MPX_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < br; i++) od[orank++] = bd[i];
    if (a->rank > 1) od[orank++] = M;
    if (b->rank > 1) od[orank++] = N;
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, orank, od)) != MPX_OK) return st;
    if (out[0].n == 0) return MPX_OK;
    mpx_k_bwalk w;
    mpx_k_bwalk_init(&w, br, bd, 2, bv);
    mm_rows r = {a->d, b->d, out[0].d, M, K, N};
    mpx_k_bwalk_run(&w, &r, mm_row);
    return MPX_OK;
}

static mpx_status f64_gemm(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *a, *b, *cc;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &a);
    if (st == MPX_OK) st = d_input(c, in, n_in, 1, false, &b);
    if (st == MPX_OK) st = d_input(c, in, n_in, 2, true, &cc);
    if (st != MPX_OK) return st;
    if (a->rank != 2 || b->rank != 2) return mpx_kernel_error(c, MPX_E_SHAPE, "Gemm takes 2-D A and B");
    const bool ta = mpx_node_attr_int(c->node, "transA", 0) != 0, tb = mpx_node_attr_int(c->node, "transB", 0) != 0;
    const double alpha = mpx_node_attr_float(c->node, "alpha", 1.0f), beta = mpx_node_attr_float(c->node, "beta", 1.0f);
    const int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    const int64_t Kb = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != Kb)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ (%lld and %lld)", (long long)K, (long long)Kb);
    const int64_t od[2] = {M, N};
    int64_t cs[MPX_MAX_RANK] = {0, 0};
    if (cc) {
        const mpx_value ov = {.rank = 2, .dims = {M, N}, .n = M * N};
        const mpx_value *v[2] = {&ov, cc};
        int r;
        int64_t d[MPX_MAX_RANK];
        if ((st = mpx_k_bcast_shape(c, 2, v, &r, d)) != MPX_OK) return st;
        if (r != 2 || d[0] != M || d[1] != N)
            return mpx_kernel_error(c, MPX_E_SHAPE, "C does not broadcast to %lldx%lld", (long long)M, (long long)N);
        mpx_k_bcast_strides(cc, 2, od, cs);
    }
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, 2, od)) != MPX_OK) return st;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += a->d[ta ? k * M + i : i * K + k] * b->d[tb ? j * K + k : k * N + j];
            double y = alpha * s;
            if (cc && beta != 0) y += beta * cc->d[i * cs[0] + j * cs[1]];
            out[0].d[i * N + j] = y;
        }
    return MPX_OK;
}

/* ---- reductions ------------------------------------------------------------------ */

static mpx_status f64_reduce(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &x);
    if (st != MPX_OK) return st;
    bool mask[MPX_MAX_RANK], noop;
    if ((st = mpx_k_reduce_axes(c, x, in, n_in, mask, &noop)) != MPX_OK) return st;
    if (noop) {
        mpx_error e = {0};
        if ((st = mpx_value_copy(&out[0], x, &e)) != MPX_OK) return mpx_kernel_error(c, st, "%s", e.msg);
        return MPX_OK;
    }
    const bool keep = mpx_node_attr_int(c->node, "keepdims", 1) != 0;
    int rank = 0;
    int64_t dims[MPX_MAX_RANK], count = 1;
    for (int i = 0; i < x->rank; i++) {
        if (mask[i]) count *= x->dims[i];
        if (!mask[i] || keep) dims[rank++] = mask[i] ? 1 : x->dims[i];
    }
    const mpx_op op = c->node->op;
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, rank, dims)) != MPX_OK) return st;
    double *y = out[0].d;
    const double start = op == MPX_OP_ReduceMax ? -INFINITY : op == MPX_OP_ReduceMin ? INFINITY
                         : op == MPX_OP_ReduceProd ? 1.0 : 0.0;
    for (int64_t k = 0; k < out[0].n; k++) y[k] = start;
    /* Output element of each input element: strides of the kept dims. */
    int64_t ost[MPX_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        ost[i] = mask[i] ? 0 : s;
        if (!mask[i]) s *= x->dims[i];
    }
    double *shift = NULL;
    if (op == MPX_OP_ReduceLogSumExp) { /* each row's max first, as ONNX Runtime's */
        shift = malloc((size_t)(out[0].n ? out[0].n : 1) * sizeof *shift);
        if (!shift) return ke_fail(&out[0], mpx_kernel_error(c, MPX_E_NOMEM, "out of memory"));
        for (int64_t k = 0; k < out[0].n; k++) shift[k] = -INFINITY;
    }
    for (int pass = shift ? 0 : 1; pass < 2; pass++) {
        int64_t idx[MPX_MAX_RANK] = {0}, o = 0;
        for (int64_t k = 0; k < x->n; k++) {
            const double v = x->d[k];
            if (pass == 0) {
                if (v > shift[o]) shift[o] = v;
            } else {
                switch (op) {
                case MPX_OP_ReduceMax: y[o] = isnan(v) || v > y[o] ? v : y[o]; break;
                case MPX_OP_ReduceMin: y[o] = isnan(v) || v < y[o] ? v : y[o]; break;
                case MPX_OP_ReduceProd: y[o] *= v; break;
                case MPX_OP_ReduceL2: case MPX_OP_ReduceSumSquare: y[o] += v * v; break;
                case MPX_OP_ReduceL1: y[o] += fabs(v); break;
                case MPX_OP_ReduceLogSumExp: y[o] += exp(v - (isfinite(shift[o]) ? shift[o] : 0.0)); break;
                default: y[o] += v; break; /* Sum, Mean, LogSum */
                }
            }
            for (int i = x->rank - 1; i >= 0; i--) {
                o += ost[i];
                if (++idx[i] < x->dims[i]) break;
                o -= ost[i] * x->dims[i];
                idx[i] = 0;
            }
        }
    }
    for (int64_t k = 0; k < out[0].n; k++) {
        switch (op) {
        case MPX_OP_ReduceMean: y[k] /= (double)count; break;
        case MPX_OP_ReduceL2: y[k] = sqrt(y[k]); break;
        case MPX_OP_ReduceLogSum: y[k] = log(y[k]); break;
        case MPX_OP_ReduceLogSumExp: y[k] = log(y[k]) + (isfinite(shift[k]) ? shift[k] : 0.0); break;
        default: break;
        }
    }
    free(shift);
    return MPX_OK;
}

/* ArgMax, ArgMin: the first extreme along axis (the last with
 * select_last_index); int64 indices. */
static mpx_status f64_argmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &x);
    if (st != MPX_OK) return st;
    int ax;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), x->rank, 0, &ax)) != MPX_OK) return st;
    if (x->dims[ax] == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "the axis has no elements");
    const bool keep = mpx_node_attr_int(c->node, "keepdims", 1) != 0,
               last = mpx_node_attr_int(c->node, "select_last_index", 0) != 0, mx = c->node->op == MPX_OP_ArgMax;
    int64_t dims[MPX_MAX_RANK], outer = 1, inner = 1, len = x->dims[ax];
    int rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i < ax) outer *= x->dims[i];
        if (i > ax) inner *= x->dims[i];
        if (i != ax || keep) dims[rank++] = i == ax ? 1 : x->dims[i];
    }
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_INT64, rank, dims)) != MPX_OK) return st;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            const double *r = x->d + o * len * inner + q;
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++) {
                const double v = r[k * inner], b = r[best * inner];
                if (mx ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
            }
            out[0].i[o * inner + q] = best;
        }
    return MPX_OK;
}

/* ---- Softmax, LogSoftmax, Hardmax ------------------------------------------------ */

static mpx_status f64_softmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = d_input(c, in, n_in, 0, false, &x);
    if (st != MPX_OK) return st;
    const bool old = ke_opset(c) < 13; /* before 13: the dims from axis on are one row */
    int ax;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", old ? 1 : -1), x->rank ? x->rank : 1, 0, &ax)))
        return st;
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < x->rank; i++) {
        if (i < ax) outer *= x->dims[i];
        else if (i == ax || old) len *= x->dims[i];
        else inner *= x->dims[i];
    }
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims)) != MPX_OK) return st;
    double *y = out[0].d;
    if (c->node->op != MPX_OP_Hardmax) {
        mpx_k_softmax_rows_f64(x->d, y, outer, len, inner, c->node->op == MPX_OP_LogSoftmax);
        return MPX_OK;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            const double *r = x->d + o * len * inner + q;
            double *w = y + o * len * inner + q;
            /* 1 at the first largest; a NaN is never larger (the fp32 kernel's rule) */
            int64_t at = 0;
            for (int64_t k = 1; k < len; k++)
                if (r[k * inner] > r[at * inner]) at = k;
            for (int64_t k = 0; k < len; k++) w[k * inner] = k == at ? 1.0 : 0.0;
        }
    return MPX_OK;
}

void mpx_k_softmax_rows_f64(const double *x, double *y, int64_t outer, int64_t len, int64_t inner, bool lg) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            const double *r = x + o * len * inner + q;
            double *w = y + o * len * inner + q;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++)
                if (r[k * inner] > mx) mx = r[k * inner];
            for (int64_t k = 0; k < len; k++) {
                double e = exp(r[k * inner] - mx);
                if (!lg) w[k * inner] = e;
                sum += e;
            }
            const double ls = log(sum);
            for (int64_t k = 0; k < len; k++) w[k * inner] = lg ? r[k * inner] - mx - ls : w[k * inner] / sum;
        }
}

/* ---- Range, ConstantOfShape ------------------------------------------------------ */

static mpx_status f64_range(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *v[3];
    mpx_status st = ke_need_out(c, n_out);
    for (int k = 0; k < 3 && st == MPX_OK; k++) {
        st = d_input(c, in, n_in, k, false, &v[k]);
        if (st == MPX_OK && v[k]->n != 1) st = mpx_kernel_error(c, MPX_E_SHAPE, "input %d must hold one value", k);
    }
    if (st != MPX_OK) return st;
    const double s = v[0]->d[0], l = v[1]->d[0], d = v[2]->d[0];
    if (d == 0) return mpx_kernel_error(c, MPX_E_INVALID, "delta is 0");
    double cnt = ceil((l - s) / d);
    if (!(cnt < (double)MPX_MAX_ELEMS)) return mpx_kernel_error(c, MPX_E_LIMIT, "range too long");
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, 1, &n)) != MPX_OK) return st;
    for (int64_t i = 0; i < n; i++) out[0].d[i] = s + (double)i * d;
    return MPX_OK;
}

static mpx_status f64_constant_of_shape(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                        int n_out) {
    const mpx_value *sh = opt_in(in, n_in, 0);
    if (n_out < 1 || !sh || !sh->i || sh->rank != 1 || sh->n > MPX_MAX_RANK)
        return mpx_kernel_error(c, MPX_E_INVALID, "input 0 must be a 1-D int64 shape");
    const mpx_attr *a = mpx_node_attr(c->node, "value");
    const double v = a && a->type == MPX_ATTR_TENSOR && a->t && a->t->f64 && a->t->nelem == 1 ? a->t->f64[0] : 0.0;
    for (int64_t k = 0; k < sh->n; k++)
        if (sh->i[k] < 0) return mpx_kernel_error(c, MPX_E_SHAPE, "shape[%lld] is negative", (long long)k);
    mpx_status st = mpx_k_alloc_raw(c, &out[0], MPX_DT_DOUBLE, (int)sh->n, sh->i);
    if (st != MPX_OK) return st;
    for (int64_t k = 0; k < out[0].n; k++) out[0].d[k] = v;
    return MPX_OK;
}

/* ---- the table ------------------------------------------------------------------- */

static const mpx_kernel_fn f64_table[MPX_OP_COUNT] = {
#define MPX_F64_KERNEL(op, fn) [MPX_OP_##op] = fn,
#include "kernels_f64.def"
#undef MPX_F64_KERNEL
};

mpx_kernel_fn mpx_kernel_f64_for(mpx_op op) {
    if ((int)op <= 0 || op >= MPX_OP_COUNT) return NULL;
    return f64_table[op];
}

bool mpx_node_is_f64(const mpx_node *n) {
    for (int k = 0; n && k < n->n_inputs; k++)
        if (n->inputs[k] && n->inputs[k]->dtype == MPX_DT_DOUBLE) return true;
    for (int j = 0; n && j < n->n_outputs; j++)
        if (n->outputs[j] && n->outputs[j]->dtype == MPX_DT_DOUBLE) return true;
    return false;
}

mpx_kernel_fn mpx_kernel_for_node(const mpx_node *n) {
    if (!n) return NULL;
    return mpx_node_is_f64(n) ? mpx_kernel_f64_for(n->op) : mpx_kernel_for(n->op);
}
