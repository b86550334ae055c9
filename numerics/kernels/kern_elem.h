/* kern_elem.h - what the elementwise, broadcasting and reduction kernels
 * (kern_elem.c, kern_binary.c, kern_reduce.c) share: input checks, integer
 * wrapping, the opset a node is read with. Private to those three files. */
#ifndef MPX_KERN_ELEM_H
#define MPX_KERN_ELEM_H

#include "kern_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Kinds of values, as bits so a kernel can accept several. */
enum { KE_FLOAT = 1u, KE_INT = 2u, KE_BOOL = 4u, KE_NUM = 3u, KE_ANY = 7u };

static inline unsigned ke_kind(const mpx_value *v) {
    if (mpx_dtype_is_float(v->dtype)) return KE_FLOAT;
    if (v->dtype == MPX_DT_BOOL) return KE_BOOL;
    if (mpx_dtype_is_int_like(v->dtype)) return KE_INT;
    return 0;
}

static inline const char *ke_kinds_name(unsigned kinds) {
    switch (kinds) {
    case KE_FLOAT: return "a float type";
    case KE_INT: return "an integer type";
    case KE_BOOL: return "bool";
    case KE_NUM: return "a float or integer type";
    case KE_FLOAT | KE_BOOL: return "a float type or bool";
    case KE_INT | KE_BOOL: return "an integer type or bool";
    default: return "a numeric type or bool";
    }
}

/* Input k when the node has it (NULL when omitted or not computed). */
static inline const mpx_value *ke_opt(const mpx_value *const *in, int n_in, int k) {
    if (!in || k >= n_in || !in[k] || in[k]->n < 0) return NULL;
    return in[k];
}

/* Input k, present (unless optional), of one of the kinds, with its buffer.
 * *out is NULL for an omitted optional input. */
static inline mpx_status ke_input(const mpx_kctx *c, const mpx_value *const *in, int n_in, int k,
                                  unsigned kinds, bool optional, const mpx_value **out) {
    const mpx_value *v = ke_opt(in, n_in, k);
    *out = v;
    if (!v) {
        if (optional) return MPX_OK;
        return mpx_kernel_error(c, MPX_E_INVALID, "input %d is missing (the op needs it)", k);
    }
    unsigned kind = ke_kind(v);
    if (!(kind & kinds))
        return mpx_kernel_error(c, MPX_E_INVALID, "input %d is %s; the op takes %s", k,
                                mpx_dtype_name(v->dtype), ke_kinds_name(kinds));
    if (v->rank < 0 || v->rank > MPX_MAX_RANK || (kind == KE_FLOAT ? !v->f : !v->i))
        return mpx_kernel_error(c, MPX_E_INVALID, "input %d (%s) has no data", k,
                                mpx_dtype_name(v->dtype));
    return MPX_OK;
}

static inline mpx_status ke_need_out(const mpx_kctx *c, int n_out) {
    if (n_out < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the op has no output slot");
    return MPX_OK;
}

/* The node's opset; a node built without one reads as the newest. */
static inline int ke_opset(const mpx_kctx *c) {
    return c->node && c->node->opset > 0 ? c->node->opset : 1000;
}

/* Wrapping int64 arithmetic (two's complement through uint64: no UB). */
static inline int64_t ke_s64(uint64_t v) {
    if (v <= (uint64_t)INT64_MAX) return (int64_t)v;
    return -(int64_t)(~v) - 1;
}
static inline int64_t ke_add(int64_t a, int64_t b) { return ke_s64((uint64_t)a + (uint64_t)b); }
static inline int64_t ke_sub(int64_t a, int64_t b) { return ke_s64((uint64_t)a - (uint64_t)b); }
static inline int64_t ke_mul(int64_t a, int64_t b) { return ke_s64((uint64_t)a * (uint64_t)b); }

/* Narrow an int64 to its dtype's width, as arithmetic in that type wraps
 * (uint64 stays as its bit pattern in int64). */
static inline int64_t ke_wrap(int64_t v, mpx_dtype t) {
    switch (t) {
    case MPX_DT_BOOL: return v != 0;
    case MPX_DT_UINT8: return (int64_t)(uint8_t)v;
    case MPX_DT_INT8: return (int64_t)(int8_t)(uint8_t)v;
    case MPX_DT_UINT16: return (int64_t)(uint16_t)v;
    case MPX_DT_INT16: return (int64_t)(int16_t)(uint16_t)v;
    case MPX_DT_UINT32: return (int64_t)(uint32_t)v;
    case MPX_DT_INT32: return (int64_t)(int32_t)(uint32_t)v;
    default: return v;
    }
}

static inline void ke_wrap_all(mpx_value *v) {
    if (!v->i || v->dtype == MPX_DT_INT64 || v->dtype == MPX_DT_UINT64) return;
    for (int64_t k = 0; k < v->n; k++) v->i[k] = ke_wrap(v->i[k], v->dtype);
}

/* The elementwise math below is inlined into every caller, so that each
 * copy of a target-cloned loop (kern_internal.h) computes it with its own
 * instructions: without the attribute GCC's -O2 (the RelWithDebInfo build)
 * kept ke_erf and ke_exp_neg out of line, compiled for the baseline, and
 * the vector copies called them, and libm's fmaf, per element
 * (test_clones). */
#define KE_MATH static inline __attribute__((always_inline))

/* e^x for x <= 0 (or NaN): the float nearest e^x computed in double. x =
 * k ln2 + r with |r| <= ln2/2 (k from the round-to-integer shift, ln2 in
 * two parts), e^r by its Taylor polynomial of degree 12 (truncation below
 * 1e-16 relative), times 2^k built from k's bits. Every step is a fused
 * multiply-add (C99's fma: the FMA instruction where the build has it, a
 * correctly rounded library call elsewhere; the same bits either way), half
 * the operations of a multiply and an add. Softmax's exponentials: equal to
 * (float)exp((double)x) for every float from -0 down to -inf (checked over
 * all 2^31 of them against glibc 2.36's exp: 0 differ; with degree 11, 1
 * does; glibc's expf differs from it in 97,052); below -110 the result
 * rounds to 0. Vectorises where a call to expf per element cannot. */
/* ke_exp_neg's constants, which its vector form (kern_elem.c, exp_neg8xn)
 * takes from here: the round-to-integer shift, log2(e), ln2 in two parts,
 * and the Taylor coefficients 1/12! (the first p) then 1/11! .. 1/0!. (The
 * AVX-512 form, exp_neg16f, reaches the same floats in float arithmetic
 * with a rounding test, and exp_neg16d for the lanes it leaves, through
 * tables of 2^(j/32) and 2^(j/16) and shorter polynomials; the AVX2 form,
 * exp_neg8f, likewise with 2^(j/16), exp_neg8xn taking its lanes left:
 * see there.) */
#define KE_EXP_NEG_SHIFT 0x1.8p52
#define KE_EXP_NEG_LOG2E 0x1.71547652b82fep0
#define KE_EXP_NEG_LN2_HI 0x1.62e42fefa39efp-1
#define KE_EXP_NEG_LN2_LO 0x1.abc9e3b39803fp-56
#define KE_EXP_NEG_C12 (1.0 / 479001600.0)
#define KE_EXP_NEG_TAYLOR(X)                                                                                     \
    X(1.0 / 39916800.0) X(1.0 / 3628800.0) X(1.0 / 362880.0) X(1.0 / 40320.0) X(1.0 / 5040.0) X(1.0 / 720.0) \
    X(1.0 / 120.0) X(1.0 / 24.0) X(1.0 / 6.0) X(0.5) X(1.0) X(1.0)

KE_MATH float ke_exp_neg(float xf) {
    const double x = xf < -110.0f ? -110.0 : (double)xf, shift = KE_EXP_NEG_SHIFT;
    const double t = fma(x, KE_EXP_NEG_LOG2E, shift), kd = t - shift;
    double r = fma(-kd, KE_EXP_NEG_LN2_HI, x);
    r = fma(-kd, KE_EXP_NEG_LN2_LO, r);
    double p = KE_EXP_NEG_C12;
#define KE_STEP(c) p = fma(r, p, c);
    KE_EXP_NEG_TAYLOR(KE_STEP)
#undef KE_STEP
    uint64_t tb, sb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&sb, &shift, sizeof sb);
    const uint64_t scale_bits = (tb - sb + 1023u) << 52; /* 2^k, k = t's low bits */
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return (float)(p * scale);
}

/* The vector forms a CPU runs (Softmax's exponentials and sums, Erf):
 * AVX-512F, AVX2 with FMA, or neither (GCC's clones of the plain loops).
 * All give the same bits. ke_vec_now: the best this CPU has, less AVX-512 under
 * MPX_KERN_AVX2=1 and both under MPX_KERN_PORTABLE=1 (as for the GEMM
 * core: the tests run each form); read once a node, not a row. */
typedef enum { KE_VEC_NONE, KE_VEC_AVX2, KE_VEC_AVX512 } ke_vec;
ke_vec ke_vec_now(void);

/* y[k] = ke_exp_neg(x[k] - m) over an array (x[k] <= m), vectorised in
 * form vec where vec names one this CPU has (kern_elem.c). */
void ke_exp_neg_map(const float *x, float m, float *y, int64_t n, ke_vec vec);

/* y[k] = ke_sigmoid(x[k]) over an array, in form vec where vec names one
 * this CPU has (kern_elem.c; mpx_k_sigmoid_map takes the AVX2 form, or
 * none, without reading the environment: the recurrent ops call it a row
 * at a time). */
void ke_sigmoid_map(const float *x, float *y, int64_t n, ke_vec vec);

/* y[k] = ke_erf(x[k]) over an array, in form vec where vec names one this
 * CPU has (kern_elem.c: a 16-lane form for AVX-512F, an 8-lane one for
 * AVX2 with FMA, GCC's clones otherwise). */
void ke_erf_map(const float *x, float *y, int64_t n, ke_vec vec);

/* Softmax of one contiguous row x[0..D) into y as PyTorch 1.13's AVX2
 * kernel computes it (the accum option sleef-lanes: kern_sleef.c says
 * how), unrounded. Only on a CPU with AVX2 and FMA (the caller checks). */
void ke_softmax_sleef_row(const float *x, float *y, int64_t D);

/* e^x for x <= 0 (or NaN) in float arithmetic alone, for Sigmoid: within
 * 0.94 ulp of e^x over every float (MPX_EXHAUSTIVE=1 test_kern_elem).
 * x = n ln2 + r, |r| <= ln2/2 (n from the round-to-integer shift; ln2 in
 * two parts, the first with 16 bits so n ln2_hi is exact), e^r by its
 * Taylor polynomial of degree 7 (truncation 5e-9 relative), times 2^n as
 * 2^n1 2^n2 (n1 = max(n, -100): p 2^n1 is exact and normal, so a subnormal
 * result is rounded once, by the second product). Fused multiply-adds (C99
 * fmaf: the instruction where the build has it, a correctly rounded call
 * elsewhere), so every build computes the same bits. Why not ke_exp_neg:
 * its double arithmetic runs 8 lanes where this runs 16, with a polynomial
 * of degree 12: EfficientNet-B0's Sigmoids were a fifth of its forward.
 * Sigmoid's two float roundings after it cost more than the exponential's
 * own error: the correctly rounded e^x gave Sigmoid the same worst case
 * (2.3 ulp) and as many results over 1 ulp (0.20% of floats). Below -104
 * the result rounds to 0. */
KE_MATH float ke_expf_neg(float xf) {
    const float x = xf < -104.0f ? -104.0f : xf, shift = 0x1.8p23f;
    const float t = fmaf(x, 0x1.715476p0f, shift), n = t - shift;
    float r = fmaf(-n, 0x1.62e400p-1f, x);
    r = fmaf(-n, 0x1.7f7d1cp-20f, r);
    float p = 1.0f / 5040.0f;
    p = fmaf(r, p, 1.0f / 720.0f);
    p = fmaf(r, p, 1.0f / 120.0f);
    p = fmaf(r, p, 1.0f / 24.0f);
    p = fmaf(r, p, 1.0f / 6.0f);
    p = fmaf(r, p, 0.5f);
    p = fmaf(r, p, 1.0f);
    p = fmaf(r, p, 1.0f);
    /* 2^n1 and 2^n2 from the shifted values' bits, unsigned arithmetic
     * only (a NaN's garbage exponent is no undefined behaviour; the product
     * is NaN anyway) */
    const float n1 = n < -100.0f ? -100.0f : n, t1 = n1 + shift, t2 = (n - n1) + shift;
    uint32_t b1, b2, sb;
    memcpy(&b1, &t1, sizeof b1);
    memcpy(&b2, &t2, sizeof b2);
    memcpy(&sb, &shift, sizeof sb);
    b1 = (b1 - sb + 127u) << 23;
    b2 = (b2 - sb + 127u) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return p * s1 * s2;
}

/* 1/(1 + exp(-x)) for x >= 0, exp(x)/(1 + exp(x)) below, so exp never
 * overflows; written without a branch on the sign, which mispredicts on
 * activations. Within 2.4 ulp of the exact sigmoid over every float
 * (test_kern_elem). (Sigmoid here, QuickGelu and the recurrent ops' gates.) */
KE_MATH float ke_sigmoid(float x) {
    float e = ke_expf_neg(-fabsf(x)), d = 1.0f + e;
    float num = x >= 0.0f ? 1.0f : e;
    return num / d;
}

/* tanh(x) in float arithmetic alone: within 1.03 ulp of the exact tanh
 * over every float (MPX_EXHAUSTIVE=tanh test_kern_elem; glibc's tanhf,
 * through expm1f, is within 1 ulp but a call per element: the recurrent
 * ops' gates spent a quarter of an LSTM's time in it), the same bits on
 * every build and C library, and 8 or 16 lanes at a time (mpx_k_tanh_map).
 * Odd: |x| < 1, a + a^3 P(a^2) with P of degree 6 (ke_tanh_p, highest
 * first: least squares on Chebyshev nodes, rounded to float; 0.99 ulp,
 * where the fit of degree 7 gives 1.08 and of 8, 1.04: past degree 6 the
 * coefficients' own roundings decide), the last step one fused
 * multiply-add onto a so that a^3 P's rounding is under a quarter of the
 * result's; from 1, 1 - 2 e/(1 + e) with e = e^(-2a) (ke_expf_neg; 2a is
 * exact): 2e/(1 + e) <= 0.24 there, so its roundings weigh a quarter of an
 * ulp of the result (1.03 ulp, at 1; (1 - e)/(1 + e) gives 1.5, and the
 * polynomial up to 1.2 gives 1.3 from its last rounding). Below -9.01 and
 * above 9.01 the result rounds to -1 and 1; NaN gives NaN. Both sides are
 * computed and one is taken, so it vectorises. The gates of LSTM, GRU and
 * RNN, Tanh, Mish, the tanh form of GELU and attention's soft cap. */
static const float ke_tanh_p[7] = {-3.572540882e-04f, 2.297203988e-03f,  -7.940453477e-03f, 2.148287743e-02f,
                                    -5.387852341e-02f, 1.333232522e-01f, -3.333329558e-01f};
KE_MATH float ke_tanh(float x) {
    const float a = fabsf(x), s = a * a;
    float p = ke_tanh_p[0];
    for (int k = 1; k < 7; k++) p = fmaf(s, p, ke_tanh_p[k]);
    const float small = fmaf(a, s * p, a);
    const float e = ke_expf_neg(-2.0f * a), large = fmaf(-2.0f, e / (1.0f + e), 1.0f);
    return copysignf(a < 1.0f ? small : large, x);
}

/* erf(x) in float arithmetic alone: within 1.2 ulp of erf over every
 * float (test_kern_elem; glibc's erff 0.97), the same bits on every build
 * and C library, and 16 lanes where erff is a call per element (ViT's and
 * BERT's GELU: 5% of ViT-B/16's forward; erff 9.1 ns an element, this 0.8).
 * Below 0.9: x (c0 + x^2 Q(x^2)), c0 = 2/sqrt(pi) in two parts so that the
 * last step is one fused multiply-add onto x c0_hi's exact product (Q of
 * degree 6); above: 1 - e^(-x^2) R(x), e^(-x^2) with x^2's rounding error
 * lo folded in as e (1 - lo), R(x) = erfc(x) e^(x^2) over [0.9, 3.95] of
 * degree 12 in u = (x - 2.425) / 1.475; from 3.95, 1 (erfc(3.95) = 2.5e-8,
 * under half an ulp below 1). Both polynomials least-squares fits on
 * Chebyshev nodes (numpy; 4e-11 and 1e-9 relative) rounded to float. Odd;
 * NaN gives NaN. Both sides are computed and one is taken, so it
 * vectorises. */
/* Q and R highest first (ke_erf_map's 16-lane form reads them too). The
 * loops over them unrolled before GCC vectorises a loop calling ke_erf
 * (kept as loops, its clones stay scalar). */
#define KE_MATH_UNROLL _Pragma("GCC unroll 16")
static const float ke_erf_q[7] = {-1.051221989e-05f, 1.151492397e-04f, -8.512854110e-04f, 5.222677719e-03f,
                                  -2.686591260e-02f, 1.128378958e-01f,  -3.761263788e-01f};
static const float ke_erf_r[13] = {1.961779162e-05f,  -5.644718476e-05f, 8.516001981e-05f,  -2.003342961e-04f,
                                   5.601517041e-04f,  -1.347477781e-03f, 3.077242523e-03f,  -6.889557932e-03f,
                                   1.493177004e-02f,  -3.115655482e-02f, 6.238448992e-02f,  -1.192966923e-01f,
                                   2.165261507e-01f};
KE_MATH float ke_erf(float x) {
    const float a = fabsf(x), s = a * a;
    float q = ke_erf_q[0];
    KE_MATH_UNROLL for (int k = 1; k < 7; k++) q = fmaf(s, q, ke_erf_q[k]);
    const float small = fmaf(a, 0x1.20dd76p0f, a * fmaf(s, q, -0x1.f7ac92p-25f));
    const float lo = fmaf(a, a, -s), e0 = ke_expf_neg(-s), e = fmaf(-e0, lo, e0);
    const float u = fmaf(a, 6.557376981e-01f, -1.590163946e+00f);
    float r = ke_erf_r[0];
    KE_MATH_UNROLL for (int k = 1; k < 13; k++) r = fmaf(u, r, ke_erf_r[k]);
    const float large = fmaf(-e, r, 1.0f);
    return copysignf(a < 0.9f ? small : a >= 3.95f ? 1.0f : large, x);
}

/* GELU, 0.5 x (1 + erf(x / sqrt(2))), and its tanh form, 0.5 x (1 +
 * tanh(sqrt(2/pi) (x + 0.044715 x^3))): Gelu (kern_elem.c) and the contrib
 * BiasGelu and FastGelu (kern_contrib.c) compute the same. */
KE_MATH float ke_gelu(float x) { return 0.5f * x * (ke_erf(x * 0.70710678118654752440f) + 1.0f); }
KE_MATH float ke_gelu_tanh(float x) {
    return 0.5f * x * (ke_tanh(0.79788456080286535588f * (x + 0.044715f * x * x * x)) + 1.0f);
}

/* log(1 + exp(x)) without overflow for large x. */
static inline float ke_softplus(float x) {
    if (x > 0.0f) return x + log1pf(expf(-x));
    return log1pf(expf(x));
}

/* The float64 forms (kern_f64.c's Sigmoid, Softplus and Mish; kern_rnn.c's
 * float64 activations): libm in double, exp of a non-positive argument. */
static inline double ke_sigmoid_d(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
static inline double ke_softplus_d(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* Free an output a kernel filled before it found a bad value, so a failed
 * kernel leaves its slot absent. */
static inline mpx_status ke_fail(mpx_value *out, mpx_status st) {
    mpx_value_free(out);
    return st;
}

#endif
