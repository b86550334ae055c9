/* kern_elem.c - unary elementwise kernels, Clip and Cast (the broadcasting
 * ones are in kern_binary.c, reductions in kern_reduce.c).
 *
 * Float kernels compute in fp32 with libm's float functions, except
 * Sigmoid's exponential, Tanh and Erf (kern_elem.h: ke_expf_neg, ke_tanh,
 * ke_erf, float arithmetic with fused multiply-adds, the same bits on
 * every build and C library, vectorised; Tanh within 1.03 ulp, libm's
 * tanhf within 1, and ONNX Runtime's own Tanh is an approximation). Where ONNX leaves
 * the formula open, or a formula can be evaluated in several ways, they follow
 * ONNX Runtime's CPU kernels (Elu with exp(x) - 1, Celu and Selu as written
 * in the operator definitions), so fp32 results agree with ORT to a few ulp;
 * Sigmoid and Softplus are evaluated in the forms that do not overflow (ORT's
 * MLAS logistic approximation clamps |x| to 18 and loses relative accuracy
 * far out in the tails, where these stay within a few ulp). NaN inputs give
 * NaN outputs (Relu, Sign, Clip, HardSigmoid, Celu included, as ORT's Relu,
 * Sign and Clip do), except ThresholdedRelu, whose "x > alpha ? x : 0" maps
 * NaN to 0 in ORT and here. */
#include "kern_elem.h"

#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- unary float functions ------------------------------------------------------- */

/* Sigmoid over an array, compiled for AVX-512, AVX2 with FMA and the
 * baseline (GCC's target clones, picked when the program loads): ke_sigmoid
 * is float arithmetic and fused multiply-adds, so each clone computes the
 * same bits, 8 or 16 elements at a time (the baseline calls fmaf: no x86-64
 * baseline instruction does it). */
MPX_K_CLONES_FMA
static void sigmoid_clones(const float *x, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) y[k] = ke_sigmoid(x[k]);
}

/* Tanh over an array, the same way (ke_tanh). */
MPX_K_CLONES_FMA
static void tanh_clones(const float *x, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) y[k] = ke_tanh(x[k]);
}

/* Erf over an array, the same way (ke_erf). */
MPX_K_CLONES_FMA
static void erf_clones(const float *x, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) y[k] = ke_erf(x[k]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define KE_UNROLL _Pragma("GCC unroll 8")

/* e^r's Taylor coefficients after 1/7! (where the sum starts), as
 * ke_expf_neg takes them: one list for the vector forms of Sigmoid and Tanh
 * below, whose bits must agree with it. */
static const float expf_taylor[7] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};

/* Two vectors of lanes with |x| <= 80, step by step across the two: one
 * vector's steps are a chain of about 60 cycles of latency, and the
 * out-of-order window overlaps too little of the next vector's chain (with
 * the division or without); two interleaved chains hide more of it, four
 * spill registers and gain nothing. */
static inline __attribute__((target("avx2,fma"), always_inline)) void sigmoid8x2(const float *x, float *y) {
    enum { V = 2 };
    const __m256 one = _mm256_set1_ps(1.0f), shift = _mm256_set1_ps(0x1.8p23f);
    __m256 v[V], xn[V], t[V], nf[V], r[V], p[V];
    KE_UNROLL for (int i = 0; i < V; i++) v[i] = _mm256_loadu_ps(x + 8 * i);
    KE_UNROLL for (int i = 0; i < V; i++) xn[i] = _mm256_or_ps(v[i], _mm256_set1_ps(-0.0f)); /* -|x| */
    KE_UNROLL for (int i = 0; i < V; i++) t[i] = _mm256_fmadd_ps(xn[i], _mm256_set1_ps(0x1.715476p0f), shift);
    KE_UNROLL for (int i = 0; i < V; i++) nf[i] = _mm256_sub_ps(t[i], shift);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm256_fnmadd_ps(nf[i], _mm256_set1_ps(0x1.62e400p-1f), xn[i]);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm256_fnmadd_ps(nf[i], _mm256_set1_ps(0x1.7f7d1cp-20f), r[i]);
    KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm256_set1_ps(1.0f / 5040.0f);
    KE_UNROLL for (int s = 0; s < 7; s++)
        KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm256_fmadd_ps(r[i], p[i], _mm256_set1_ps(expf_taylor[s]));
    KE_UNROLL for (int i = 0; i < V; i++) {
        /* 2^n: t's bits less shift's, plus the exponent bias, shifted */
        const __m256i bits = _mm256_add_epi32(_mm256_castps_si256(t[i]), _mm256_set1_epi32(127 - 0x4b400000));
        const __m256 e = _mm256_mul_ps(p[i], _mm256_castsi256_ps(_mm256_slli_epi32(bits, 23)));
        const __m256 num = _mm256_blendv_ps(e, one, _mm256_cmp_ps(v[i], _mm256_setzero_ps(), _CMP_GE_OQ));
        _mm256_storeu_ps(y + 8 * i, _mm256_div_ps(num, _mm256_add_ps(one, e)));
    }
}

/* Whether every lane of v has |x| <= 80 (false for NaN). */
static inline __attribute__((target("avx2,fma"), always_inline)) bool sigmoid8_ok(__m256 v) {
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(80.0f), _CMP_LE_OQ)) == 0xff;
}

/* ke_sigmoid 16 lanes at a time where every lane has |x| <= 80 (no NaN),
 * the other blocks and the tail element by element: the same operations
 * in the same order, so the same bits (test_kern_elem compares every
 * float swept with ke_sigmoid). Why: the general form pays for the tails
 * in every lane (the clamp at -104, e^x as p 2^n1 2^n2 so that a
 * subnormal result is rounded once, the selects GCC makes blends of):
 * about 55 instructions a vector, where this form takes well under half,
 * and Sigmoid is a large share of EfficientNet-style forwards. With |x| <= 80, n = round(-|x| log2 e) >= -116 and p 2^n is
 * normal, so p 2^n1 2^n2 (two exact scalings) is the one exact product
 * p 2^n, and 2^n is t's bits shifted (t = n + 1.5 2^23 exactly); the
 * clamp does nothing. */
__attribute__((target("avx2,fma"))) static void sigmoid_avx2(const float *x, float *y, int64_t n) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        if (sigmoid8_ok(_mm256_loadu_ps(x + k)) && sigmoid8_ok(_mm256_loadu_ps(x + k + 8))) {
            sigmoid8x2(x + k, y + k);
            continue;
        }
        for (int l = 0; l < 16; l++) y[k + l] = ke_sigmoid(x[k + l]);
    }
    for (; k < n; k++) y[k] = ke_sigmoid(x[k]);
}

/* sigmoid8x2 on V (<= 4) 16-lane vectors (AVX-512F), lanes outside `last` of the
 * last vector loaded as 0 and not stored: the same operations in the same
 * order lane by lane (the select as a mask blend, |x|'s sign as an integer
 * or), so the same bits. Why: EfficientNet-B0's forward spent 18% of its
 * time in sigmoid_avx2 (SiLU after every convolution); with 16 lanes an
 * instruction the polynomial's fused multiply-adds, the selects and the
 * checks are half as many. */
static inline __attribute__((target("avx512f"), always_inline)) void sigmoid16xn(const float *x, float *y, const int V,
                                                                                 __mmask16 last) {
    const __m512 one = _mm512_set1_ps(1.0f), shift = _mm512_set1_ps(0x1.8p23f);
    __m512 v[4], xn[4], t[4], nf[4], r[4], p[4];
    KE_UNROLL for (int i = 0; i < V; i++) v[i] = i == V - 1 ? _mm512_maskz_loadu_ps(last, x + 16 * i) : _mm512_loadu_ps(x + 16 * i);
    KE_UNROLL for (int i = 0; i < V; i++) /* -|x| */
        xn[i] = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v[i]), _mm512_set1_epi32(INT32_MIN)));
    KE_UNROLL for (int i = 0; i < V; i++) t[i] = _mm512_fmadd_ps(xn[i], _mm512_set1_ps(0x1.715476p0f), shift);
    KE_UNROLL for (int i = 0; i < V; i++) nf[i] = _mm512_sub_ps(t[i], shift);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm512_fnmadd_ps(nf[i], _mm512_set1_ps(0x1.62e400p-1f), xn[i]);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm512_fnmadd_ps(nf[i], _mm512_set1_ps(0x1.7f7d1cp-20f), r[i]);
    KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm512_set1_ps(1.0f / 5040.0f);
    KE_UNROLL for (int s = 0; s < 7; s++)
        KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm512_fmadd_ps(r[i], p[i], _mm512_set1_ps(expf_taylor[s]));
    KE_UNROLL for (int i = 0; i < V; i++) {
        const __m512i bits = _mm512_add_epi32(_mm512_castps_si512(t[i]), _mm512_set1_epi32(127 - 0x4b400000));
        const __m512 e = _mm512_mul_ps(p[i], _mm512_castsi512_ps(_mm512_slli_epi32(bits, 23)));
        const __m512 num = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v[i], _mm512_setzero_ps(), _CMP_GE_OQ), e, one);
        const __m512 q = _mm512_div_ps(num, _mm512_add_ps(one, e));
        if (i == V - 1) _mm512_mask_storeu_ps(y + 16 * i, last, q);
        else _mm512_storeu_ps(y + 16 * i, q);
    }
}

/* Whether every lane of x[0..16) in m has |x| <= 80 (false for NaN). */
static inline __attribute__((target("avx512f"), always_inline)) bool sigmoid16_ok(const float *x, __mmask16 m) {
    const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(m, x)); /* (lanes outside m: 0) */
    return _mm512_mask_cmp_ps_mask(m, a, _mm512_set1_ps(80.0f), _CMP_LE_OQ) == m;
}

/* ke_sigmoid 64 lanes at a time where every lane has |x| <= 80 (four
 * chains side by side: a little faster than two on Zen 5), then 16, then
 * the last few under a mask; a block with a lane outside, element by
 * element (sigmoid_avx2 says why that is the same bits). */
__attribute__((target("avx512f"))) static void sigmoid_avx512(const float *x, float *y, int64_t n) {
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) {
        if (sigmoid16_ok(x + k, 0xffff) && sigmoid16_ok(x + k + 16, 0xffff) && sigmoid16_ok(x + k + 32, 0xffff) &&
            sigmoid16_ok(x + k + 48, 0xffff)) {
            sigmoid16xn(x + k, y + k, 4, 0xffff);
            continue;
        }
        for (int l = 0; l < 64; l++) y[k + l] = ke_sigmoid(x[k + l]);
    }
    for (; k < n; k += 16) {
        const int64_t m = n - k < 16 ? n - k : 16;
        const __mmask16 mask = (__mmask16)(m == 16 ? 0xffffu : (1u << m) - 1u);
        if (sigmoid16_ok(x + k, mask)) {
            sigmoid16xn(x + k, y + k, 1, mask);
            continue;
        }
        for (int64_t l = 0; l < m; l++) y[k + l] = ke_sigmoid(x[k + l]);
    }
}

/* Whether every lane of v has |x| <= lim (false for NaN). */
static inline __attribute__((target("avx2,fma"), always_inline)) bool abs8_le(__m256 v, float lim) {
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(lim), _CMP_LE_OQ)) == 0xff;
}

/* ke_tanh on two vectors of lanes with |x| <= 40, step by step across the
 * two as sigmoid8x2 (the same latency chain, with the polynomial beside
 * it): with 2|x| <= 80, e^(-2|x|) is sigmoid8x2's p 2^n, exact where
 * ke_expf_neg's two scalings are, and its clamp does nothing. */
static inline __attribute__((target("avx2,fma"), always_inline)) void tanh8x2(const float *x, float *y) {
    enum { V = 2 };
    const __m256 one = _mm256_set1_ps(1.0f), shift = _mm256_set1_ps(0x1.8p23f), sign = _mm256_set1_ps(-0.0f);
    __m256 v[V], a[V], s[V], q[V], xn[V], t[V], nf[V], r[V], p[V];
    KE_UNROLL for (int i = 0; i < V; i++) v[i] = _mm256_loadu_ps(x + 8 * i);
    KE_UNROLL for (int i = 0; i < V; i++) a[i] = _mm256_andnot_ps(sign, v[i]);
    KE_UNROLL for (int i = 0; i < V; i++) xn[i] = _mm256_mul_ps(a[i], _mm256_set1_ps(-2.0f));
    KE_UNROLL for (int i = 0; i < V; i++) t[i] = _mm256_fmadd_ps(xn[i], _mm256_set1_ps(0x1.715476p0f), shift);
    KE_UNROLL for (int i = 0; i < V; i++) s[i] = _mm256_mul_ps(a[i], a[i]);
    KE_UNROLL for (int i = 0; i < V; i++) nf[i] = _mm256_sub_ps(t[i], shift);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm256_fnmadd_ps(nf[i], _mm256_set1_ps(0x1.62e400p-1f), xn[i]);
    KE_UNROLL for (int i = 0; i < V; i++) r[i] = _mm256_fnmadd_ps(nf[i], _mm256_set1_ps(0x1.7f7d1cp-20f), r[i]);
    KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm256_set1_ps(1.0f / 5040.0f);
    KE_UNROLL for (int i = 0; i < V; i++) q[i] = _mm256_set1_ps(ke_tanh_p[0]);
    KE_UNROLL for (int k = 0; k < 7; k++) {
        KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm256_fmadd_ps(r[i], p[i], _mm256_set1_ps(expf_taylor[k]));
        if (k < 6)
            KE_UNROLL for (int i = 0; i < V; i++) q[i] = _mm256_fmadd_ps(s[i], q[i], _mm256_set1_ps(ke_tanh_p[k + 1]));
    }
    KE_UNROLL for (int i = 0; i < V; i++) {
        const __m256i bits = _mm256_add_epi32(_mm256_castps_si256(t[i]), _mm256_set1_epi32(127 - 0x4b400000));
        const __m256 e = _mm256_mul_ps(p[i], _mm256_castsi256_ps(_mm256_slli_epi32(bits, 23)));
        const __m256 large = _mm256_fnmadd_ps(_mm256_set1_ps(2.0f), _mm256_div_ps(e, _mm256_add_ps(one, e)), one);
        const __m256 small = _mm256_fmadd_ps(a[i], _mm256_mul_ps(s[i], q[i]), a[i]);
        const __m256 m = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a[i], one, _CMP_LT_OQ));
        _mm256_storeu_ps(y + 8 * i, _mm256_or_ps(m, _mm256_and_ps(sign, v[i])));
    }
}

/* ke_tanh 16 lanes at a time where every lane has |x| <= 40 (no NaN), the
 * other blocks and the tail element by element: the same operations in
 * the same order, so the same bits (test_kern_elem compares every float
 * swept with ke_tanh), for the reasons sigmoid_avx2 gives. */
__attribute__((target("avx2,fma"))) static void tanh_avx2(const float *x, float *y, int64_t n) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        if (abs8_le(_mm256_loadu_ps(x + k), 40.0f) && abs8_le(_mm256_loadu_ps(x + k + 8), 40.0f)) {
            tanh8x2(x + k, y + k);
            continue;
        }
        for (int l = 0; l < 16; l++) y[k + l] = ke_tanh(x[k + l]);
    }
    for (; k < n; k++) y[k] = ke_tanh(x[k]);
}

/* ke_erf on V (<= 4) 16-lane vectors (AVX-512F), step by step across
 * them, lanes outside `last` of the last vector loaded as 0 and not
 * stored: ke_erf's operations in its order lane by lane (its selects as
 * mask blends, copysignf as a bit select), so the same bits. e^(-x^2) as
 * sigmoid16xn's p 2^n: where the large side is taken (0.9 <= |x| < 3.95,
 * or NaN), x^2 < 15.6, so ke_expf_neg's clamp and second scaling (2^0)
 * do nothing; elsewhere the side is computed from whatever x^2 is and
 * dropped. Why: GCC's clone of the plain loop keeps ke_expf_neg's general
 * form (the clamp, two scalings) and its selects, about 50 instructions a
 * vector; ViT-B/16's and BERT's GELU chains (Div, Erf, Add, Mul, Mul) spent
 * half their time in Erf. This form: 0.40 ns a value against 0.69 on one
 * thread (AMD Zen 5; four vectors side by side, as sigmoid_avx512: one
 * alone is a chain of some 20 dependent steps and took 0.88). */
static inline __attribute__((target("avx512f"), always_inline)) void erf16xn(const float *x, float *y, const int V,
                                                                             __mmask16 last) {
    const __m512 shift = _mm512_set1_ps(0x1.8p23f);
    const __m512i sign = _mm512_set1_epi32(INT32_MIN);
    __m512 v[4], a[4], s[4], q[4], t[4], r[4], p[4], u[4], w[4];
    KE_UNROLL for (int i = 0; i < V; i++) v[i] = i == V - 1 ? _mm512_maskz_loadu_ps(last, x + 16 * i) : _mm512_loadu_ps(x + 16 * i);
    KE_UNROLL for (int i = 0; i < V; i++) a[i] = _mm512_abs_ps(v[i]);
    KE_UNROLL for (int i = 0; i < V; i++) s[i] = _mm512_mul_ps(a[i], a[i]);
    KE_UNROLL for (int i = 0; i < V; i++) { /* e^(-s): t, n = t - shift, r = -s - n ln2 in two parts */
        const __m512 xn = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(s[i]), sign));
        t[i] = _mm512_fmadd_ps(xn, _mm512_set1_ps(0x1.715476p0f), shift);
        const __m512 nf = _mm512_sub_ps(t[i], shift);
        r[i] = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0x1.62e400p-1f), xn);
        r[i] = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0x1.7f7d1cp-20f), r[i]);
        p[i] = _mm512_set1_ps(1.0f / 5040.0f);
        q[i] = _mm512_set1_ps(ke_erf_q[0]);
        u[i] = _mm512_fmadd_ps(a[i], _mm512_set1_ps(6.557376981e-01f), _mm512_set1_ps(-1.590163946e+00f));
        w[i] = _mm512_set1_ps(ke_erf_r[0]);
    }
    KE_UNROLL for (int k = 0; k < 12; k++) { /* the three polynomials side by side */
        KE_UNROLL for (int i = 0; i < V; i++) w[i] = _mm512_fmadd_ps(u[i], w[i], _mm512_set1_ps(ke_erf_r[k + 1]));
        if (k < 7)
            KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm512_fmadd_ps(r[i], p[i], _mm512_set1_ps(expf_taylor[k]));
        if (k < 6)
            KE_UNROLL for (int i = 0; i < V; i++) q[i] = _mm512_fmadd_ps(s[i], q[i], _mm512_set1_ps(ke_erf_q[k + 1]));
    }
    KE_UNROLL for (int i = 0; i < V; i++) {
        const __m512 small = _mm512_fmadd_ps(a[i], _mm512_set1_ps(0x1.20dd76p0f),
                                             _mm512_mul_ps(a[i], _mm512_fmadd_ps(s[i], q[i], _mm512_set1_ps(-0x1.f7ac92p-25f))));
        const __m512i bits = _mm512_add_epi32(_mm512_castps_si512(t[i]), _mm512_set1_epi32(127 - 0x4b400000));
        const __m512 e0 = _mm512_mul_ps(p[i], _mm512_castsi512_ps(_mm512_slli_epi32(bits, 23)));
        const __m512 lo = _mm512_fmsub_ps(a[i], a[i], s[i]), e = _mm512_fnmadd_ps(e0, lo, e0);
        const __m512 large = _mm512_fnmadd_ps(e, w[i], _mm512_set1_ps(1.0f));
        __m512 m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a[i], _mm512_set1_ps(3.95f), _CMP_GE_OQ), large,
                                        _mm512_set1_ps(1.0f));
        m = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a[i], _mm512_set1_ps(0.9f), _CMP_LT_OQ), m, small);
        /* copysignf: m's magnitude bits, x's sign bit */
        const __m512 res = _mm512_castsi512_ps(
            _mm512_ternarylogic_epi32(sign, _mm512_castps_si512(v[i]), _mm512_castps_si512(m), 0xca));
        if (i == V - 1) _mm512_mask_storeu_ps(y + 16 * i, last, res);
        else _mm512_storeu_ps(y + 16 * i, res);
    }
}

/* ke_erf over an array: 64 lanes at a time, then 32, then the last few
 * (at most 31) under masks. */
__attribute__((target("avx512f"))) static void erf_avx512(const float *x, float *y, int64_t n) {
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) erf16xn(x + k, y + k, 4, 0xffff);
    for (; k + 32 <= n; k += 32) erf16xn(x + k, y + k, 2, 0xffff);
    if (k + 16 < n) erf16xn(x + k, y + k, 2, (__mmask16)((1u << (n - k - 16)) - 1u));
    else if (k < n) erf16xn(x + k, y + k, 1, (__mmask16)(n - k == 16 ? 0xffffu : (1u << (n - k)) - 1u));
}

/* erf16xn's steps on V (<= 4) vectors of 8 lanes (AVX2 with FMA), the last
 * vector's lanes outside `last` loaded as 0 and not stored; the masks'
 * blends as blendv on ordered compares (a NaN takes the large side, as
 * ke_erf's selects give it) and copysignf as and/andnot: the same
 * operations lane by lane, so the same bits. Why: GCC's AVX2 clone of the
 * plain loop keeps ke_expf_neg's general form and the selects; the GELU
 * chains of ViT-B/16 and the BERT-style encoders were 1.7-1.8x ONNX
 * Runtime's Gelu on AMD Zen 3. */
static inline __attribute__((target("avx2,fma"), always_inline)) void erf8xn(const float *x, float *y, const int V,
                                                                            __m256i last) {
    const __m256 shift = _mm256_set1_ps(0x1.8p23f), sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], a[4], s[4], q[4], t[4], r[4], p[4], u[4], w[4];
    KE_UNROLL for (int i = 0; i < V; i++) v[i] = i == V - 1 ? _mm256_maskload_ps(x + 8 * i, last) : _mm256_loadu_ps(x + 8 * i);
    KE_UNROLL for (int i = 0; i < V; i++) a[i] = _mm256_andnot_ps(sign, v[i]);
    KE_UNROLL for (int i = 0; i < V; i++) s[i] = _mm256_mul_ps(a[i], a[i]);
    KE_UNROLL for (int i = 0; i < V; i++) { /* e^(-s): t, n = t - shift, r = -s - n ln2 in two parts */
        const __m256 xn = _mm256_xor_ps(s[i], sign);
        t[i] = _mm256_fmadd_ps(xn, _mm256_set1_ps(0x1.715476p0f), shift);
        const __m256 nf = _mm256_sub_ps(t[i], shift);
        r[i] = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0x1.62e400p-1f), xn);
        r[i] = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0x1.7f7d1cp-20f), r[i]);
        p[i] = _mm256_set1_ps(1.0f / 5040.0f);
        q[i] = _mm256_set1_ps(ke_erf_q[0]);
        u[i] = _mm256_fmadd_ps(a[i], _mm256_set1_ps(6.557376981e-01f), _mm256_set1_ps(-1.590163946e+00f));
        w[i] = _mm256_set1_ps(ke_erf_r[0]);
    }
    KE_UNROLL for (int k = 0; k < 12; k++) { /* the three polynomials side by side */
        KE_UNROLL for (int i = 0; i < V; i++) w[i] = _mm256_fmadd_ps(u[i], w[i], _mm256_set1_ps(ke_erf_r[k + 1]));
        if (k < 7)
            KE_UNROLL for (int i = 0; i < V; i++) p[i] = _mm256_fmadd_ps(r[i], p[i], _mm256_set1_ps(expf_taylor[k]));
        if (k < 6)
            KE_UNROLL for (int i = 0; i < V; i++) q[i] = _mm256_fmadd_ps(s[i], q[i], _mm256_set1_ps(ke_erf_q[k + 1]));
    }
    KE_UNROLL for (int i = 0; i < V; i++) {
        const __m256 small = _mm256_fmadd_ps(a[i], _mm256_set1_ps(0x1.20dd76p0f),
                                             _mm256_mul_ps(a[i], _mm256_fmadd_ps(s[i], q[i], _mm256_set1_ps(-0x1.f7ac92p-25f))));
        const __m256i bits = _mm256_add_epi32(_mm256_castps_si256(t[i]), _mm256_set1_epi32(127 - 0x4b400000));
        const __m256 e0 = _mm256_mul_ps(p[i], _mm256_castsi256_ps(_mm256_slli_epi32(bits, 23)));
        const __m256 lo = _mm256_fmsub_ps(a[i], a[i], s[i]), e = _mm256_fnmadd_ps(e0, lo, e0);
        const __m256 large = _mm256_fnmadd_ps(e, w[i], _mm256_set1_ps(1.0f));
        __m256 m = _mm256_blendv_ps(large, _mm256_set1_ps(1.0f), _mm256_cmp_ps(a[i], _mm256_set1_ps(3.95f), _CMP_GE_OQ));
        m = _mm256_blendv_ps(m, small, _mm256_cmp_ps(a[i], _mm256_set1_ps(0.9f), _CMP_LT_OQ));
        /* copysignf: m's magnitude bits, x's sign bit */
        const __m256 res = _mm256_or_ps(_mm256_and_ps(sign, v[i]), _mm256_andnot_ps(sign, m));
        if (i == V - 1) _mm256_maskstore_ps(y + 8 * i, last, res);
        else _mm256_storeu_ps(y + 8 * i, res);
    }
}

/* The AVX2 maps' mask of their last vector, after the whole blocks of 32:
 * of the `left` values (at most 31) in 1 to 4 vectors, the last vector's
 * lanes below left % 8, or all 8 where left is a multiple of 8. */
static inline __attribute__((target("avx2"), always_inline)) __m256i ke_last8(int64_t left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left % 8 ? left % 8 : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ke_erf over an array on AVX2: 32 lanes at a time, then the rest (at
 * most 31) in one call of 1 to 4 vectors, the last under a mask. */
__attribute__((target("avx2,fma"))) static void erf_avx2(const float *x, float *y, int64_t n) {
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) erf8xn(x + k, y + k, 4, all);
    const int64_t left = n - k;
    const __m256i last = ke_last8(left);
    switch ((left + 7) / 8) {
    case 1: erf8xn(x + k, y + k, 1, last); break;
    case 2: erf8xn(x + k, y + k, 2, last); break;
    case 3: erf8xn(x + k, y + k, 3, last); break;
    case 4: erf8xn(x + k, y + k, 4, last); break;
    default: break; /* nothing left */
    }
}
#endif

void mpx_k_tanh_map(const float *x, float *y, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        tanh_avx2(x, y, n);
        return;
    }
#endif
    tanh_clones(x, y, n);
}

void mpx_k_sigmoid_map(const float *x, float *y, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        sigmoid_avx2(x, y, n);
        return;
    }
#endif
    sigmoid_clones(x, y, n);
}

int mpx_k_vec_now(void) { return (int)ke_vec_now(); }

void mpx_k_sigmoid_map_vec(const float *x, float *y, int64_t n, int vec) { ke_sigmoid_map(x, y, n, (ke_vec)vec); }
void mpx_k_erf_map_vec(const float *x, float *y, int64_t n, int vec) { ke_erf_map(x, y, n, (ke_vec)vec); }

void ke_sigmoid_map(const float *x, float *y, int64_t n, ke_vec vec) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (vec == KE_VEC_AVX512) {
        sigmoid_avx512(x, y, n);
        return;
    }
    if (vec == KE_VEC_AVX2) {
        sigmoid_avx2(x, y, n);
        return;
    }
#else
    (void)vec;
#endif
    sigmoid_clones(x, y, n);
}

void ke_erf_map(const float *x, float *y, int64_t n, ke_vec vec) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (vec == KE_VEC_AVX512) {
        erf_avx512(x, y, n);
        return;
    }
    if (vec == KE_VEC_AVX2) {
        erf_avx2(x, y, n);
        return;
    }
#else
    (void)vec;
#endif
    erf_clones(x, y, n);
}

/* y[k] = e^(x[k] - m), Softmax's exponentials (kern_norm.c), the same way. */
MPX_K_CLONES_FMA
static void exp_neg_clones(const float *x, float m, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) y[k] = ke_exp_neg(x[k] - m);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* ke_exp_neg of x[i] - m over nv vectors of 8 lanes (nv <= 4), each half
 * vector 4 lanes of double, step by step across the 2 nv chains: the
 * operations of ke_exp_neg in its order (the clamp as a max, which keeps a
 * NaN; each fma one FMA instruction), so the same bits (a NaN's too, as
 * the AVX2 clone of the loop gives it). exp_neg8f below takes it, one
 * vector out of line, for the lanes its rounding test leaves. As the whole
 * AVX2 form, four vectors side by side (one chain is about 16 dependent
 * fused multiply-adds; eight chains took a quarter less time than GCC's
 * vectorised loop, which runs two), it took 1.02 ns a value on rows of
 * 197 where exp_neg8f takes 0.88 (AMD EPYC Zen 3). */
#define KE_UNROLL16 _Pragma("GCC unroll 16")
static inline __attribute__((target("avx2,fma"), always_inline)) void exp_neg8xn(const float *x, __m256 m, float *y,
                                                                                  const int nv) {
    enum { C = 8 };
#define KE_ITEM(v) v,
    static const double c[] = {KE_EXP_NEG_TAYLOR(KE_ITEM)};
#undef KE_ITEM
    const __m256d shift = _mm256_set1_pd(KE_EXP_NEG_SHIFT);
    __m256d d[C], t[C], r[C], p[C];
    KE_UNROLL16 for (int i = 0; i < nv; i++) {
        const __m256 v = _mm256_max_ps(_mm256_set1_ps(-110.0f), _mm256_sub_ps(_mm256_loadu_ps(x + 8 * i), m));
        d[2 * i] = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        d[2 * i + 1] = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    }
    KE_UNROLL16 for (int i = 0; i < 2 * nv; i++) t[i] = _mm256_fmadd_pd(d[i], _mm256_set1_pd(KE_EXP_NEG_LOG2E), shift);
    KE_UNROLL16 for (int i = 0; i < 2 * nv; i++) {
        const __m256d kd = _mm256_sub_pd(t[i], shift);
        r[i] = _mm256_fnmadd_pd(kd, _mm256_set1_pd(KE_EXP_NEG_LN2_HI), d[i]);
        r[i] = _mm256_fnmadd_pd(kd, _mm256_set1_pd(KE_EXP_NEG_LN2_LO), r[i]);
    }
    KE_UNROLL16 for (int i = 0; i < 2 * nv; i++) p[i] = _mm256_set1_pd(KE_EXP_NEG_C12);
    KE_UNROLL16 for (int s = 0; s < (int)(sizeof c / sizeof *c); s++)
        KE_UNROLL16 for (int i = 0; i < 2 * nv; i++) p[i] = _mm256_fmadd_pd(r[i], p[i], _mm256_set1_pd(c[s]));
    KE_UNROLL16 for (int i = 0; i < 2 * nv; i++) {
        /* 2^k: t's bits less shift's, plus the exponent bias, shifted */
        const __m256i k = _mm256_sub_epi64(_mm256_castpd_si256(t[i]), _mm256_castpd_si256(shift));
        const __m256i sb = _mm256_slli_epi64(_mm256_add_epi64(k, _mm256_set1_epi64x(1023)), 52);
        p[i] = _mm256_mul_pd(p[i], _mm256_castsi256_pd(sb));
    }
    KE_UNROLL16 for (int i = 0; i < nv; i++)
        _mm256_storeu_ps(y + 8 * i, _mm256_set_m128(_mm256_cvtpd_ps(p[2 * i + 1]), _mm256_cvtpd_ps(p[2 * i])));
}

/* ke_exp_neg's value on 16 lanes (AVX-512F) in double by another route to
 * the same float: x = k ln2/16 + r with |r| <= ln2/32 (k from the
 * round-to-integer shift, ln2/16 as ke_exp_neg's two parts scaled), e^x =
 * 2^(k/16) e^r with 2^(j/16) (j = k mod 16) read from a table of 16
 * doubles in two registers by one permute, times 2^(k >> 4) added to its
 * exponent bits, and e^r by its Taylor polynomial of degree 6 (truncation
 * 4.4e-16 relative). Equal to ke_exp_neg for every non-positive float:
 * checked over all 2^31 of them (with degree 5, 30 differ, the first at
 * -0x1.e1dbe2p-8), which is what makes it the same bits, not the error
 * bound alone. Two chains of 8 doubles: the float form's fallback
 * (exp_neg16f below), for its lanes that the float arithmetic cannot decide.
 * The clamp at -110 is a max, which keeps a NaN (a NaN's table index is
 * garbage, its result NaN). exp_tab16: 2^(j/16) rounded to double (the
 * nearest), less j << 48 in its bits, so that adding t's bits << 48 (k <<
 * 48: j << 48 plus 2^(k >> 4)'s exponent) gives it scaled; k >= -2540, so
 * the scaled value stays a normal double. */
static const double exp_tab16[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

__attribute__((target("avx512f"))) static __m512 exp_neg16d(__m512 x) {
    const __m512i j48 = _mm512_slli_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), 48);
    const __m512i tab0 = _mm512_sub_epi64(_mm512_loadu_si512(exp_tab16), j48);
    const __m512i tab1 = _mm512_sub_epi64(_mm512_loadu_si512(exp_tab16 + 8),
                                          _mm512_add_epi64(j48, _mm512_set1_epi64((int64_t)8 << 48)));
    const __m512d shift = _mm512_set1_pd(KE_EXP_NEG_SHIFT);
    static const double c[] = {1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0};
    const __m512 v = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);
    __m512d d[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                    _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))};
    for (int i = 0; i < 2; i++) {
        const __m512d t = _mm512_fmadd_pd(d[i], _mm512_set1_pd(KE_EXP_NEG_LOG2E * 16.0), shift), kd = _mm512_sub_pd(t, shift);
        __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(KE_EXP_NEG_LN2_HI / 16.0), d[i]);
        r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(KE_EXP_NEG_LN2_LO / 16.0), r);
        __m512d p = _mm512_set1_pd(1.0 / 720.0);
        for (int s = 0; s < (int)(sizeof c / sizeof *c); s++) p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(c[s]));
        const __m512i ti = _mm512_castpd_si512(t);
        d[i] = _mm512_mul_pd(p, _mm512_castsi512_pd(_mm512_add_epi64(_mm512_permutex2var_epi64(tab0, ti, tab1),
                                                                     _mm512_slli_epi64(ti, 48))));
    }
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(d[0]))),
                                               _mm256_castps_pd(_mm512_cvtpd_ps(d[1])), 1));
}

/* ke_exp_neg's value in float lanes, 16 a vector where the double form
 * has 8, with a rounding test: x = k ln2/32 + r (k from the
 * round-to-integer shift; ln2/32 in two floats: rh = x - k c_hi is exact,
 * its product inside the fma, rl = -k c_lo), e^x = 2^(k >> 5) T_j e^r (j
 * = k mod 32) with T_j = 2^(j/32) as a float and the float nearest its
 * remainder (exp_tab32_hi, _lo: two permutes), e^r = 1 + rh + u, u = rl +
 * r^2 (1/2 + r/6 + r^2/24) (r = rh + rl). T_j e^r is held as s + lo: s =
 * T_j + T_j rh rounded, lo = T_j u + (its error (within 2^-48: T_j - s is
 * exact and the fma adds T_j rh to it) + T_lo (1 + rh)). Its error, before
 * the scaling, is mostly rounding in terms of order r^2: over every float
 * x in [-87, 0] it is below E = 2^-39 + 2^-21.5 r^2 (at most 0.85 E; the
 * largest 2^-35.13), so the float nearest e^x is the one that s + (lo + E)
 * and s + (lo - E) both round to where they agree (rounding is monotonic,
 * and lo +- E rounds within 2^-38 of it): that float, scaled by 2^(k >> 5)
 * in its exponent bits, is the result. The other lanes (0.004% of those
 * in [-87, 0]; 2 E / ulp), and those below -87 (subnormal results, zero,
 * -inf) or NaN, go to exp_neg16d, whose results are ke_exp_neg's; below
 * -104 the result is +0 (e^x < 2^-150) without it. The bound is measured,
 * not derived: what makes these the same bits is the check over all 2^31
 * non-positive floats (the long test test_kern_elem_exp_neg_all: 0 differ;
 * with 2^-23 r^2 in E, some do: they are among the sampled test's hard
 * inputs). Why: 31 operations a vector of 16 against 37 for two vectors
 * of 8 doubles, 20 of those fused multiply-adds and multiplies, the pipes'
 * bottleneck: 0.25 ns a value against 0.34 on one thread (AMD Zen 5, rows
 * of 197). */
static const float exp_tab32_hi[32] = {
    0x1.000000p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f,
    0x1.29e9e0p+0f, 0x1.306fe0p+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f, 0x1.4bfdaep+0f, 0x1.5342b6p+0f,
    0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f,
    0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f, 0x1.ae89fap+0f, 0x1.b7f770p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f};
static const float exp_tab32_lo[32] = {
    0.0f,           -0x1.9d4f52p-25f, 0x1.9f3122p-25f,  -0x1.fdb496p-25f, -0x1.c15742p-27f, -0x1.d2e8cap-25f,
    0x1.ceac48p-25f, -0x1.5c0424p-25f, 0x1.4636e2p-25f,  -0x1.18aac6p-25f, 0x1.824684p-25f,  0x1.8624b4p-30f,
    -0x1.593abcp-25f, -0x1.2c5610p-25f, -0x1.5bd5ecp-27f, -0x1.f8b550p-25f, 0x1.9fcef4p-26f,  0x1.1d8beep-25f,
    -0x1.829fd0p-25f, -0x1.accc7cp-26f, 0x1.15506ep-27f,  -0x1.e64744p-25f, 0x1.51f848p-27f,  -0x1.b83b54p-25f,
    -0x1.a94b14p-26f, -0x1.a09438p-25f, -0x1.3d56b2p-27f, -0x1.8837ccp-27f, -0x1.822dbcp-27f, -0x1.908c94p-25f,
    0x1.52486cp-27f,  -0x1.246eb0p-26f};

/* x's lanes in `hard` from exp_neg16d, those below -104 as +0 (its value
 * there, without it when no other lane needs it); e's other lanes kept.
 * Out of line: a vector in some 200 of rows of values in [-87, 0]. */
__attribute__((target("avx512f"), noinline, cold)) static __m512 exp_neg16_hard(__m512 x, __m512 e, __mmask16 hard) {
    const __mmask16 zero = _mm512_mask_cmp_ps_mask(hard, x, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
    e = _mm512_mask_mov_ps(e, zero, _mm512_setzero_ps());
    hard &= (__mmask16)~zero;
    return hard ? _mm512_mask_mov_ps(e, hard, exp_neg16d(x)) : e;
}

/* nv vectors of x - m (nv <= 4) side by side, the last under `last`
 * (lanes outside it computed from m, e^0, never hard, and dropped); every vector is read
 * before any is written (x may be y). tab: exp_tab32_hi and _lo, two
 * registers each. */
static inline __attribute__((target("avx512f"), always_inline)) void exp_neg16f(const float *x, __m512 m, float *y,
                                                                                const int nv, __mmask16 last,
                                                                                const __m512 tab[4]) {
    enum { C = 4 };
    const __m512 shift = _mm512_set1_ps(0x1.8p23f);
    __m512 v[C], e[C];
    __mmask16 hard[C];
    KE_UNROLL16 for (int i = 0; i < nv; i++) {
        v[i] = _mm512_sub_ps(i == nv - 1 ? _mm512_mask_loadu_ps(m, last, x + 16 * i) : _mm512_loadu_ps(x + 16 * i), m);
        const __m512 t = _mm512_fmadd_ps(v[i], _mm512_set1_ps(0x1.715476p+5f /* 32/ln2 */), shift);
        const __m512 kd = _mm512_sub_ps(t, shift);
        const __m512 rh = _mm512_fnmadd_ps(kd, _mm512_set1_ps(0x1.62e430p-6f /* c_hi */), v[i]);
        const __m512 rl = _mm512_mul_ps(kd, _mm512_set1_ps(0x1.05c610p-34f /* -c_lo */));
        const __m512 r = _mm512_add_ps(rh, rl);
        __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 24.0f), _mm512_set1_ps(1.0f / 6.0f));
        q = _mm512_fmadd_ps(r, q, _mm512_set1_ps(0.5f));
        const __m512 r2 = _mm512_mul_ps(r, r), u = _mm512_fmadd_ps(r2, q, rl);
        const __m512i ti = _mm512_castps_si512(t);
        const __m512 th = _mm512_permutex2var_ps(tab[0], ti, tab[1]), tl = _mm512_permutex2var_ps(tab[2], ti, tab[3]);
        const __m512 s = _mm512_fmadd_ps(th, rh, th);
        const __m512 lo = _mm512_fmadd_ps(th, u, _mm512_add_ps(_mm512_fmadd_ps(th, rh, _mm512_sub_ps(th, s)),
                                                               _mm512_fmadd_ps(tl, rh, tl)));
        const __m512 eb = _mm512_fmadd_ps(r2, _mm512_set1_ps(0x1.6a09e6p-22f /* 2^-21.5 */), _mm512_set1_ps(0x1p-39f));
        const __m512 up = _mm512_add_ps(s, _mm512_add_ps(lo, eb)), down = _mm512_add_ps(s, _mm512_sub_ps(lo, eb));
        hard[i] = _mm512_cmp_ps_mask(up, down, _CMP_NEQ_UQ) | _mm512_cmp_ps_mask(v[i], _mm512_set1_ps(-87.0f), _CMP_NGE_UQ);
        /* 2^(k >> 5): t's bits less j, shifted into the exponent */
        const __m512i sc = _mm512_slli_epi32(_mm512_andnot_si512(_mm512_set1_epi32(31), ti), 18);
        e[i] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(up), sc));
    }
    KE_UNROLL16 for (int i = 0; i < nv; i++) {
        if (__builtin_expect(hard[i] != 0, 0)) e[i] = exp_neg16_hard(v[i], e[i], hard[i]);
        if (i == nv - 1) _mm512_mask_storeu_ps(y + 16 * i, last, e[i]);
        else _mm512_storeu_ps(y + 16 * i, e[i]);
    }
}

/* 64 elements at a time, then the rest (up to 63) in one call of 1 to 4
 * vectors side by side, the last under a mask: one vector a call is one
 * chain of some 20 dependent steps, and a softmax over 40 values (rec's
 * attention, 8 x 40 x 40) took three such calls in turn a row, 1.5 ns a
 * value against 0.6 on rows of 197. x may be y. */
__attribute__((target("avx512f"))) static void exp_neg_avx512(const float *x, float m, float *y, int64_t n) {
    const __m512 mv = _mm512_set1_ps(m);
    const __m512 tab[4] = {_mm512_loadu_ps(exp_tab32_hi), _mm512_loadu_ps(exp_tab32_hi + 16),
                           _mm512_loadu_ps(exp_tab32_lo), _mm512_loadu_ps(exp_tab32_lo + 16)};
    int64_t k = 0;
    for (; k + 64 <= n; k += 64) exp_neg16f(x + k, mv, y + k, 4, 0xffff, tab);
    const int64_t left = n - k;
    const __mmask16 last = (__mmask16)(left % 16 ? (1u << (left % 16)) - 1u : 0xffffu);
    switch ((left + 15) / 16) {
    case 1: exp_neg16f(x + k, mv, y + k, 1, last, tab); break;
    case 2: exp_neg16f(x + k, mv, y + k, 2, last, tab); break;
    case 3: exp_neg16f(x + k, mv, y + k, 3, last, tab); break;
    case 4: exp_neg16f(x + k, mv, y + k, 4, last, tab); break;
    default: break; /* nothing left */
    }
}

/* exp_neg16f's method on AVX2 (8 float lanes a __m256, where the double
 * form has 4): AVX2 has no 32-entry permute (permutevar8x32 reads 8
 * entries), so the table is 2^(j/16), j = k mod 16, the even entries of
 * exp_tab32_hi and _lo, picked by two permutes and a blend on j's bit 3
 * (hi and lo: four permutes, two blends); x = k ln2/16 + r with |r| <=
 * ln2/32 (exp_neg16f's constants scaled by 2: the same bits), and e^r = 1
 * + rh + u with one term more, u = rl + r^2 (1/2 + r/6 + r^2/24 +
 * r^3/120): truncation 2^-42.7 at |r| = ln2/32, where with degree 4 it
 * would be 2^-34.5, a quarter of the bound there. The rounding test as in
 * exp_neg16f, with its bound E = 2^-39 + 2^-21.5 r^2, measured for this
 * form over every float x in [-87, 0]: the error of s + lo is at most 0.84
 * E (at -0x1.90204ap+3), 2^-21.8 r^2 at worst for |r| > 2^-9. The lanes
 * left (0.012% of the floats in [-87, 0]; on Softmax-like rows, logits
 * spread over +-14, 0.6% of the vectors hold one), those below -87 and NaN
 * go to exp_neg8xn's double form (exp_neg8_hard), whose results are
 * ke_exp_neg's; below -104, +0. What makes these the same bits is the long
 * test over all 2^31 non-positive floats (test_kern_elem_exp_neg_all: 0
 * differ; with 2^-22.5 r^2 in E 14 do, and the sampled test's hard inputs
 * hold them; with 2^-22, none). Why: ke_exp_neg_map on one thread, AMD
 * EPYC Zen 3, 0.88 ns a value against 1.02 for exp_neg8xn on rows of 197,
 * 0.89 against 0.96 on rows of 64 (medians of 10 interleaved processes).
 * Not the halving its operations promise (some 37 a vector of 8, about 10
 * cycles on Zen 3's four FP pipes; it takes some 17): the permutes issue
 * on one pipe, GCC spills with 16 ymm registers, and a vector's chain is
 * some 45 dependent cycles. Measured and no faster: 2^(j/8) by one permute
 * each with degree 6 (its wider r makes 3% of vectors hard), 2^(j/32) by
 * four permutes and three blends each (1.13 ns on rows of 197), AVX2's
 * gather (1.3 to 1.9), the vectors' steps interleaved 2 or 4 at a time,
 * and e^r by Estrin's scheme. */
#define EXP8_EA 0x1p-39f
#define EXP8_EB 0x1.6a09e6p-22f

/* x's lanes in `hard` (a compare's all-ones lanes) from exp_neg8xn, those
 * below -104 as +0 (without it when no other lane needs it); e's other
 * lanes kept. Out of line, as exp_neg16_hard. */
__attribute__((target("avx2,fma"), noinline, cold)) static __m256 exp_neg8_hard(__m256 x, __m256 e, __m256 hard) {
    const __m256 zero = _mm256_and_ps(hard, _mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OQ));
    e = _mm256_andnot_ps(zero, e);
    hard = _mm256_andnot_ps(zero, hard);
    if (!_mm256_movemask_ps(hard)) return e;
    float t[8];
    _mm256_storeu_ps(t, x);
    exp_neg8xn(t, _mm256_setzero_ps(), t, 1); /* ke_exp_neg(t - 0): t - 0 is t, -0 and NaN included */
    return _mm256_blendv_ps(e, _mm256_loadu_ps(t), hard);
}

/* nv vectors of x - m (nv <= 4) side by side; with `tail`, the last loaded
 * and stored under `last` (its other lanes m, computed as e^0, never hard,
 * and dropped); every vector is read before any is written (x may be y).
 * tab: 2^(j/16) for j < 8 and j >= 8, hi then lo. */
static inline __attribute__((target("avx2,fma"), always_inline)) void exp_neg8f(const float *x, __m256 m, float *y,
                                                                               const int nv, const bool tail,
                                                                               __m256i last, const __m256 tab[4]) {
    enum { C = 4 };
    const __m256 shift = _mm256_set1_ps(0x1.8p23f);
    __m256 v[C], e[C], hard[C];
    KE_UNROLL16 for (int i = 0; i < nv; i++) {
        const __m256 xi = tail && i == nv - 1
                              ? _mm256_blendv_ps(m, _mm256_maskload_ps(x + 8 * i, last), _mm256_castsi256_ps(last))
                              : _mm256_loadu_ps(x + 8 * i);
        v[i] = _mm256_sub_ps(xi, m);
        const __m256 t = _mm256_fmadd_ps(v[i], _mm256_set1_ps(0x1.715476p+4f /* 16/ln2 */), shift);
        const __m256 kd = _mm256_sub_ps(t, shift);
        const __m256 rh = _mm256_fnmadd_ps(kd, _mm256_set1_ps(0x1.62e430p-5f /* c_hi */), v[i]);
        const __m256 rl = _mm256_mul_ps(kd, _mm256_set1_ps(0x1.05c610p-33f /* -c_lo */));
        const __m256 r = _mm256_add_ps(rh, rl);
        __m256 q = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 120.0f), _mm256_set1_ps(1.0f / 24.0f));
        q = _mm256_fmadd_ps(r, q, _mm256_set1_ps(1.0f / 6.0f));
        q = _mm256_fmadd_ps(r, q, _mm256_set1_ps(0.5f));
        const __m256 r2 = _mm256_mul_ps(r, r), u = _mm256_fmadd_ps(r2, q, rl);
        const __m256i ti = _mm256_castps_si256(t);
        const __m256 b3 = _mm256_castsi256_ps(_mm256_slli_epi32(ti, 28)); /* j's bit 3 as the sign */
        const __m256 th = _mm256_blendv_ps(_mm256_permutevar8x32_ps(tab[0], ti), _mm256_permutevar8x32_ps(tab[1], ti), b3);
        const __m256 tl = _mm256_blendv_ps(_mm256_permutevar8x32_ps(tab[2], ti), _mm256_permutevar8x32_ps(tab[3], ti), b3);
        const __m256 s = _mm256_fmadd_ps(th, rh, th);
        const __m256 lo = _mm256_fmadd_ps(th, u, _mm256_add_ps(_mm256_fmadd_ps(th, rh, _mm256_sub_ps(th, s)),
                                                               _mm256_fmadd_ps(tl, rh, tl)));
        const __m256 eb = _mm256_fmadd_ps(r2, _mm256_set1_ps(EXP8_EB), _mm256_set1_ps(EXP8_EA));
        const __m256 up = _mm256_add_ps(s, _mm256_add_ps(lo, eb)), down = _mm256_add_ps(s, _mm256_sub_ps(lo, eb));
        hard[i] = _mm256_or_ps(_mm256_cmp_ps(up, down, _CMP_NEQ_UQ), _mm256_cmp_ps(v[i], _mm256_set1_ps(-87.0f), _CMP_NGE_UQ));
        /* 2^(k >> 4): t's bits less j, shifted into the exponent */
        const __m256i sc = _mm256_slli_epi32(_mm256_andnot_si256(_mm256_set1_epi32(15), ti), 19);
        e[i] = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(up), sc));
    }
    KE_UNROLL16 for (int i = 0; i < nv; i++) {
        if (__builtin_expect(_mm256_movemask_ps(hard[i]) != 0, 0)) e[i] = exp_neg8_hard(v[i], e[i], hard[i]);
        if (tail && i == nv - 1) _mm256_maskstore_ps(y + 8 * i, last, e[i]);
        else _mm256_storeu_ps(y + 8 * i, e[i]);
    }
}

/* 32 elements at a time, then the rest (up to 31) in one call of 1 to 4
 * vectors side by side, the last under a mask (exp_neg_avx512 says why
 * not one vector a call). x may be y. */
__attribute__((target("avx2,fma"))) static void exp_neg_avx2(const float *x, float m, float *y, int64_t n) {
    const __m256 mv = _mm256_set1_ps(m);
#define KE_EVEN(t, o) _mm256_setr_ps(t[o], t[o + 2], t[o + 4], t[o + 6], t[o + 8], t[o + 10], t[o + 12], t[o + 14])
    const __m256 tab[4] = {KE_EVEN(exp_tab32_hi, 0), KE_EVEN(exp_tab32_hi, 16), KE_EVEN(exp_tab32_lo, 0),
                           KE_EVEN(exp_tab32_lo, 16)};
#undef KE_EVEN
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) exp_neg8f(x + k, mv, y + k, 4, false, all, tab);
    const int64_t left = n - k;
    const __m256i last = ke_last8(left);
    switch ((left + 7) / 8) {
    case 1: exp_neg8f(x + k, mv, y + k, 1, true, last, tab); break;
    case 2: exp_neg8f(x + k, mv, y + k, 2, true, last, tab); break;
    case 3: exp_neg8f(x + k, mv, y + k, 3, true, last, tab); break;
    case 4: exp_neg8f(x + k, mv, y + k, 4, true, last, tab); break;
    default: break; /* nothing left */
    }
}
#endif

ke_vec ke_vec_now(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (mpx_env_on("MPX_KERN_PORTABLE") || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return KE_VEC_NONE;
    return __builtin_cpu_supports("avx512f") && !mpx_env_on("MPX_KERN_AVX2") ? KE_VEC_AVX512 : KE_VEC_AVX2;
#else
    return KE_VEC_NONE;
#endif
}

void ke_exp_neg_map(const float *x, float m, float *y, int64_t n, ke_vec vec) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (vec == KE_VEC_AVX512) {
        exp_neg_avx512(x, m, y, n);
        return;
    }
    if (vec == KE_VEC_AVX2) {
        exp_neg_avx2(x, m, y, n);
        return;
    }
#else
    (void)vec;
#endif
    exp_neg_clones(x, m, y, n);
}
static float softplus(float x) { return ke_softplus(x); }

typedef enum uop {
    U_RELU, U_LEAKY_RELU, U_ELU, U_SELU, U_CELU, U_THRESHOLDED_RELU, U_SIGMOID,
    U_HARD_SIGMOID, U_HARD_SWISH, U_SOFTPLUS, U_SOFTSIGN, U_MISH, U_TANH, U_ERF, U_GELU,
    U_GELU_TANH, U_EXP, U_LOG, U_SQRT, U_RECIPROCAL, U_NEG, U_ABS, U_SIGN, U_FLOOR, U_CEIL,
    U_ROUND, U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH,
    U_SHRINK, U_NOT, U_ISNAN, U_ISINF, U_BITWISE_NOT
} uop;

typedef struct uparam {
    float alpha, beta, gamma;
    bool pos, neg; /* IsInf: detect_positive, detect_negative */
} uparam;

#define MAP(expr)                                                                        \
    for (int64_t k = 0; k < n; k++) {                                                    \
        const float v = x[k];                                                            \
        y[k] = (expr);                                                                   \
    }                                                                                    \
    break

/* t = x / 6 + 1/2 (a product and a sum, two roundings: the fused form
 * would round once), clamped by two selects, then x t. */
MPX_K_CLONES_FMA
void mpx_k_hard_swish_row(const float *x, float *y, int64_t n) {
    const float a = 1.0f / 6.0f, b = 0.5f;
    for (int64_t k = 0; k < n; k++) {
        const float t = a * x[k] + b;
        y[k] = x[k] * (t > 1.0f ? 1.0f : t < 0.0f ? 0.0f : t);
    }
}

/* Compiled as clones too (the same IEEE operations and library calls in
 * each): the baseline's 4-lane loops made MobileNetV3's hard-swish and
 * hard-sigmoid a sixth of its forward. */
MPX_K_CLONES_FMA
static void map_float(uop op, const uparam *p, const float *x, float *y, int64_t n) {
    const float a = p->alpha, b = p->beta, g = p->gamma;
    switch (op) {
    case U_RELU: MAP(v < 0.0f ? 0.0f : v);
    case U_LEAKY_RELU: MAP(v >= 0.0f ? v : a * v);
    case U_ELU: MAP(v >= 0.0f ? v : a * (expf(v) - 1.0f));
    case U_SELU: MAP(v > 0.0f ? g * v : g * (a * expf(v) - a));
    case U_CELU: MAP(v != v ? v : fmaxf(0.0f, v) + fminf(0.0f, a * (expf(v / a) - 1.0f)));
    case U_THRESHOLDED_RELU: MAP(v > a ? v : 0.0f);
    case U_SIGMOID: mpx_k_sigmoid_map(x, y, n); break;
    case U_HARD_SIGMOID: {
        for (int64_t k = 0; k < n; k++) {
            float t = a * x[k] + b;
            y[k] = t > 1.0f ? 1.0f : t < 0.0f ? 0.0f : t;
        }
        break;
    }
    case U_HARD_SWISH: mpx_k_hard_swish_row(x, y, n); break;
    case U_SOFTPLUS: MAP(softplus(v));
    case U_SOFTSIGN: MAP(v / (1.0f + fabsf(v)));
    case U_MISH: MAP(v * ke_tanh(softplus(v)));
    case U_TANH: mpx_k_tanh_map(x, y, n); break;
    case U_ERF: erf_clones(x, y, n); break;
    case U_GELU: MAP(ke_gelu(v));
    case U_GELU_TANH: MAP(ke_gelu_tanh(v));
    case U_EXP: MAP(expf(v));
    case U_LOG: MAP(logf(v));
    case U_SQRT: MAP(sqrtf(v));
    case U_RECIPROCAL: MAP(1.0f / v);
    case U_NEG: MAP(-v);
    case U_ABS: MAP(fabsf(v));
    case U_SIGN: MAP(v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v == 0.0f ? 0.0f : v);
    case U_FLOOR: MAP(floorf(v));
    case U_CEIL: MAP(ceilf(v));
    case U_ROUND: MAP(nearbyintf(v)); /* default rounding mode: half to even */
    case U_SIN: MAP(sinf(v));
    case U_COS: MAP(cosf(v));
    case U_TAN: MAP(tanf(v));
    case U_ASIN: MAP(asinf(v));
    case U_ACOS: MAP(acosf(v));
    case U_ATAN: MAP(atanf(v));
    case U_SINH: MAP(sinhf(v));
    case U_COSH: MAP(coshf(v));
    case U_ASINH: MAP(asinhf(v));
    case U_ACOSH: MAP(acoshf(v));
    case U_ATANH: MAP(atanhf(v));
    /* Shrink: lambd a, bias b; NaN (neither side) gives 0, as ORT does */
    case U_SHRINK: MAP(v < -a ? v + b : v > a ? v - b : 0.0f);
    case U_NOT: case U_ISNAN: case U_ISINF: case U_BITWISE_NOT: break; /* not float -> float */
    }
}
#undef MAP

/* Integer variants (Relu from opset 14, Neg, Abs, Sign); results wrap to the
 * dtype's width as arithmetic in that type does (Neg of INT8 -128 is -128). */
static void map_int(uop op, const int64_t *x, int64_t *y, int64_t n, mpx_dtype dt) {
    for (int64_t k = 0; k < n; k++) {
        int64_t v = x[k], r;
        switch (op) {
        case U_RELU: r = v < 0 ? 0 : v; break;
        case U_NEG: r = ke_sub(0, v); break;
        case U_ABS: r = v < 0 ? ke_sub(0, v) : v; break;
        case U_SIGN: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
        case U_NOT: r = v == 0; break;
        case U_BITWISE_NOT: r = ~v; break; /* wrapped below: ~0 in uint8 is 255 */
        default: r = v; break;
        }
        y[k] = ke_wrap(r, dt);
    }
}

/* What each op accepts: float only unless listed. */
static unsigned uop_kinds(uop op) {
    switch (op) {
    case U_RELU: case U_NEG: case U_ABS: case U_SIGN: return KE_NUM;
    case U_NOT: return KE_BOOL;
    case U_BITWISE_NOT: return KE_INT;
    default: return KE_FLOAT;
    }
}

/* Float maps from 2^16 elements run on two threads in pieces (a map is
 * per element, so the bits do not depend on who computes which piece).
 * (2^18 until the pool stopped waiting for sleeping workers: see
 * kern_gemm.c's kg_pool.) */
enum { UPAR_MIN = 1 << 16, UPAR_PIECE = 1 << 15 };

typedef struct upar {
    uop op;
    const uparam *p;
    const float *x;
    float *y;
    float lo, hi; /* U_CLIP_RANGE */
    int64_t n;
    const mpx_format *round; /* the output rounded to it piece by piece (NULL: not) */
    const mpx_format *steps; /* U_SIGMOID's inner steps rounded to it (MPX_ACC_STEPS; NULL: not) */
    ke_vec vec;              /* U_SIGMOID's and U_ERF's vector form (ke_vec_now, read once a node) */
} upar;

#define U_CLIP_RANGE ((uop)-1)

static void upar_span(const upar *u, int64_t i0, int64_t n) {
    if (u->op == U_CLIP_RANGE) {
        for (int64_t k = i0; k < i0 + n; k++) {
            float v = u->x[k] < u->lo ? u->lo : u->x[k];
            u->y[k] = v > u->hi ? u->hi : v;
        }
        return;
    }
    if (u->steps) { /* sigmoid_steps */
        for (int64_t k = i0; k < i0 + n; k++) {
            const float e = mpx_round_value(u->steps, expf(-u->x[k]));
            u->y[k] = 1.0f / mpx_round_value(u->steps, 1.0f + e);
        }
        return;
    }
    if (u->op == U_SIGMOID) {
        ke_sigmoid_map(u->x + i0, u->y + i0, n, u->vec);
        return;
    }
    if (u->op == U_ERF) {
        ke_erf_map(u->x + i0, u->y + i0, n, u->vec);
        return;
    }
    map_float(u->op, u->p, u->x + i0, u->y + i0, n);
}

/* A piece of the map; a candidate's output rounded piece by piece as it is
 * made (mpx_k_out_round). */
static void upar_item(void *vc, int tid, long item) {
    (void)tid;
    const upar *u = vc;
    int64_t piece = u->n < UPAR_MIN ? u->n : UPAR_PIECE; /* small maps: one piece */
    int64_t i0 = (int64_t)item * piece, n = u->n - i0 < piece ? u->n - i0 : piece;
    if (!u->round) {
        upar_span(u, i0, n);
        return;
    }
    for (int64_t i = i0; i < i0 + n; i += MPX_K_ROUND_PIECE) {
        const int64_t m = i0 + n - i < MPX_K_ROUND_PIECE ? i0 + n - i : MPX_K_ROUND_PIECE;
        upar_span(u, i, m);
        mpx_round_array(u->round, u->y + i, u->y + i, (size_t)m);
    }
}

static void map_float_par(upar *u) {
    int nt = kg_threads();
    long pieces = u->n < UPAR_MIN ? 1 : (long)((u->n + UPAR_PIECE - 1) / UPAR_PIECE);
    if (pieces == 1 || nt < 2) {
        for (long i = 0; i < pieces; i++) upar_item(u, 0, i);
        return;
    }
    mpx_k_parallel(pieces, nt, upar_item, u);
}

/* The accum rule's steps (MPX_ACC_STEPS), Sigmoid with a rounded format:
 * 1/(1 + e^-x) as PyTorch 1.13's CPU bf16 silu computes its denominator on
 * bf16 vectors, e^-x (glibc's expf; torch's Sleef expf is within 1 ulp of
 * it, so the two round alike but where e^-x is within an ulp of fmt's
 * rounding boundary) and the sum each rounded to fmt; 1/d left in fp32.
 * Under `fuse silu` the Mul then computes x * (1/d) in fp32 and rounds
 * once, which is x / d rounded: x and d have 8 significant bits, so x / d
 * is never within 2^-17 of a bf16 rounding boundary unless on it, and a
 * bf16 halfway point is never such a quotient (its 9 significant bits
 * would have to divide x's 8), so fp32's error in 1/d cannot move it. */
static const mpx_format *sigmoid_steps(const mpx_kctx *c, uop op) {
    return op == U_SIGMOID && (c->acc.flags & MPX_ACC_STEPS) && !mpx_acc_is_fp32(&c->acc) ? c->acc.fmt : NULL;
}

static mpx_status unary(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out, uop op) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, uop_kinds(op), false, &x);
    if (st != MPX_OK) return st;
    const mpx_node *nd = c->node;
    uparam p = {0.0f, 0.0f, 0.0f, true, true};
    switch (op) {
    case U_LEAKY_RELU: p.alpha = mpx_node_attr_float(nd, "alpha", 0.01f); break;
    case U_ELU: case U_CELU: case U_THRESHOLDED_RELU:
        p.alpha = mpx_node_attr_float(nd, "alpha", 1.0f);
        if (op == U_CELU && p.alpha == 0.0f)
            return mpx_kernel_error(c, MPX_E_INVALID, "Celu's alpha must not be 0");
        break;
    case U_SELU:
        p.alpha = mpx_node_attr_float(nd, "alpha", 1.67326319217681884765625f);
        p.gamma = mpx_node_attr_float(nd, "gamma", 1.05070102214813232421875f);
        break;
    case U_HARD_SIGMOID:
        p.alpha = mpx_node_attr_float(nd, "alpha", 0.2f);
        p.beta = mpx_node_attr_float(nd, "beta", 0.5f);
        break;
    case U_GELU: {
        const char *ap = mpx_node_attr_string(nd, "approximate", "none");
        if (strcmp(ap, "tanh") == 0) op = U_GELU_TANH;
        else if (strcmp(ap, "none") != 0)
            return mpx_kernel_error(c, MPX_E_INVALID,
                                    "approximate=\"%s\" is not one of \"none\", \"tanh\"", ap);
        break;
    }
    case U_SHRINK:
        p.alpha = mpx_node_attr_float(nd, "lambd", 0.5f);
        p.beta = mpx_node_attr_float(nd, "bias", 0.0f);
        break;
    case U_ISINF:
        p.pos = mpx_node_attr_int(nd, "detect_positive", 1) != 0;
        p.neg = mpx_node_attr_int(nd, "detect_negative", 1) != 0;
        break;
    default: break;
    }
    bool to_bool = op == U_ISNAN || op == U_ISINF;
    st = mpx_k_alloc_raw(c, &out[0], to_bool ? MPX_DT_BOOL : x->dtype, x->rank, x->dims);
    if (st != MPX_OK) return st;
    mpx_value *y = &out[0];
    if (op == U_ISNAN) {
        for (int64_t k = 0; k < x->n; k++) y->i[k] = isnan(x->f[k]) ? 1 : 0;
    } else if (op == U_ISINF) {
        for (int64_t k = 0; k < x->n; k++) {
            float v = x->f[k];
            y->i[k] = isinf(v) && (v > 0 ? p.pos : p.neg);
        }
    } else if (x->f) {
        upar u = {op, &p, x->f, y->f, 0.0f, 0.0f, x->n, mpx_k_out_round(c), sigmoid_steps(c, op),
                  op == U_SIGMOID || op == U_ERF ? ke_vec_now() : KE_VEC_NONE};
        map_float_par(&u);
        if (u.round) *c->out_rounded = true;
    } else {
        map_int(op, x->i, y->i, x->n, x->dtype);
    }
    return MPX_OK;
}

#define UNARY_KERNEL(fn, op)                                                                 \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,  \
                  int n_out) {                                                               \
        return unary(c, in, n_in, out, n_out, op);                                           \
    }

UNARY_KERNEL(mpx_k_relu, U_RELU)
UNARY_KERNEL(mpx_k_leaky_relu, U_LEAKY_RELU)
UNARY_KERNEL(mpx_k_elu, U_ELU)
UNARY_KERNEL(mpx_k_selu, U_SELU)
UNARY_KERNEL(mpx_k_celu, U_CELU)
UNARY_KERNEL(mpx_k_thresholded_relu, U_THRESHOLDED_RELU)
UNARY_KERNEL(mpx_k_sigmoid, U_SIGMOID)
UNARY_KERNEL(mpx_k_hard_sigmoid, U_HARD_SIGMOID)
UNARY_KERNEL(mpx_k_hard_swish, U_HARD_SWISH)
UNARY_KERNEL(mpx_k_softplus, U_SOFTPLUS)
UNARY_KERNEL(mpx_k_softsign, U_SOFTSIGN)
UNARY_KERNEL(mpx_k_mish, U_MISH)
UNARY_KERNEL(mpx_k_tanh, U_TANH)
UNARY_KERNEL(mpx_k_erf, U_ERF)
UNARY_KERNEL(mpx_k_gelu, U_GELU)
UNARY_KERNEL(mpx_k_exp, U_EXP)
UNARY_KERNEL(mpx_k_log, U_LOG)
UNARY_KERNEL(mpx_k_sqrt, U_SQRT)
UNARY_KERNEL(mpx_k_reciprocal, U_RECIPROCAL)
UNARY_KERNEL(mpx_k_neg, U_NEG)
UNARY_KERNEL(mpx_k_abs, U_ABS)
UNARY_KERNEL(mpx_k_sign, U_SIGN)
UNARY_KERNEL(mpx_k_floor, U_FLOOR)
UNARY_KERNEL(mpx_k_ceil, U_CEIL)
UNARY_KERNEL(mpx_k_round, U_ROUND)
UNARY_KERNEL(mpx_k_sin, U_SIN)
UNARY_KERNEL(mpx_k_cos, U_COS)
UNARY_KERNEL(mpx_k_tan, U_TAN)
UNARY_KERNEL(mpx_k_asin, U_ASIN)
UNARY_KERNEL(mpx_k_acos, U_ACOS)
UNARY_KERNEL(mpx_k_atan, U_ATAN)
UNARY_KERNEL(mpx_k_sinh, U_SINH)
UNARY_KERNEL(mpx_k_cosh, U_COSH)
UNARY_KERNEL(mpx_k_asinh, U_ASINH)
UNARY_KERNEL(mpx_k_acosh, U_ACOSH)
UNARY_KERNEL(mpx_k_atanh, U_ATANH)
UNARY_KERNEL(mpx_k_shrink, U_SHRINK)
UNARY_KERNEL(mpx_k_not, U_NOT)
UNARY_KERNEL(mpx_k_bitwise_not, U_BITWISE_NOT)
UNARY_KERNEL(mpx_k_isnan, U_ISNAN)
UNARY_KERNEL(mpx_k_isinf, U_ISINF)

/* ---- Clip -------------------------------------------------------------------------- */

/* y = min(max(x, lo), hi), in that order as ORT does, so lo > hi gives hi
 * everywhere (what the ONNX text prescribes); NaN stays NaN. Bounds: the
 * min/max attributes before opset 11, optional one-element inputs from 11. */
void mpx_k_clip_bounds(const mpx_node *n, const mpx_value *lo, const mpx_value *hi, float *l, float *h) {
    const bool attrs = n && n->opset > 0 && n->opset < 11;
    *l = attrs ? mpx_node_attr_float(n, "min", -FLT_MAX) : lo ? lo->f[0] : -INFINITY;
    *h = attrs ? mpx_node_attr_float(n, "max", FLT_MAX) : hi ? hi->f[0] : INFINITY;
}

mpx_status mpx_k_clip(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    bool attrs = ke_opset(c) < 11;
    const mpx_value *x, *lo = NULL, *hi = NULL;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, attrs ? KE_FLOAT : KE_NUM, false, &x);
    if (st != MPX_OK) return st;
    if (!attrs) {
        unsigned kind = ke_kind(x);
        if ((st = ke_input(c, in, n_in, 1, kind, true, &lo)) != MPX_OK) return st;
        if ((st = ke_input(c, in, n_in, 2, kind, true, &hi)) != MPX_OK) return st;
        if ((lo && lo->n != 1) || (hi && hi->n != 1))
            return mpx_kernel_error(c, MPX_E_SHAPE,
                                    "min and max must hold one value each (min has %lld, max %lld)",
                                    (long long)(lo ? lo->n : 1), (long long)(hi ? hi->n : 1));
    }
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, x->dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    if (x->f) {
        float l, h;
        mpx_k_clip_bounds(c->node, lo, hi, &l, &h);
        upar u = {U_CLIP_RANGE, NULL, x->f, y->f, l, h, x->n, mpx_k_out_round(c), NULL, KE_VEC_NONE};
        map_float_par(&u);
        if (u.round) *c->out_rounded = true;
    } else {
        int64_t l = lo ? lo->i[0] : INT64_MIN, h = hi ? hi->i[0] : INT64_MAX;
        for (int64_t k = 0; k < x->n; k++) {
            int64_t v = x->i[k] < l ? l : x->i[k];
            y->i[k] = v > h ? h : v;
        }
    }
    return MPX_OK;
}

/* ---- Cast ---------------------------------------------------------------------------- */

/* Float to integer as x86-64 builds of ONNX Runtime convert (a C++
 * static_cast, i.e. cvttss2si): truncate toward zero; NaN, infinities and
 * values outside the conversion's range give the most negative integer of
 * the conversion's width ("integer indefinite"). The conversion is 64-bit for
 * int64, uint64 and uint32 and 32-bit for the narrower types, whose result is
 * then wrapped to the target width (300.7 -> uint8 44, NaN -> int8 0). ONNX
 * leaves out-of-range casts undefined; this pins one behaviour. */
static int64_t f_to_i64(float x) {
    if (x >= -0x1p63f && x < 0x1p63f) return (int64_t)x;
    return INT64_MIN;
}

static int64_t f_to_i32(float x) {
    if (x >= -0x1p31f && x < 0x1p31f) return (int64_t)(int32_t)x;
    return INT32_MIN;
}

static int64_t f_to_int(float x, mpx_dtype to) {
    switch (to) {
    case MPX_DT_BOOL: return x != 0.0f; /* NaN is true, as static_cast<bool> */
    case MPX_DT_INT64: return f_to_i64(x);
    case MPX_DT_UINT64: /* [2^63, 2^64) as unsigned; the rest as int64's bits */
        return x >= 0x1p63f && x < 0x1p64f ? ke_s64((uint64_t)x) : f_to_i64(x);
    case MPX_DT_UINT32: return ke_wrap(f_to_i64(x), to);
    default: return ke_wrap(f_to_i32(x), to);
    }
}

/* The format a float target's values are rounded to (NULL: fp32 as it is;
 * double holds every fp32 value). */
static mpx_status cast_format(const mpx_kctx *c, mpx_dtype to, bool saturate,
                              const mpx_format **f) {
    *f = mpx_format_of_dtype(to, saturate);
    if (!*f)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED,
                                "casting to %s is not supported (mpx has no format for it)",
                                mpx_dtype_name(to));
    if ((*f)->kind == MPX_FMT_FP32) *f = NULL;
    return MPX_OK;
}

/* Cast: float targets hold fp32 values rounded (nearest even) to the target's
 * format; fp8 follows the saturate attribute (opset 19, default 1) as ONNX's
 * table says: e4m3fn overflow and +-inf give +-448 when saturating, NaN
 * otherwise; e5m2 gives +-57344 when saturating, +-inf otherwise. Integers
 * reach a float target through fp32 (as ORT: int64 -> bf16 rounds twice).
 * Integer targets wrap integers to their width; floats convert as f_to_int
 * says; bool is value != 0. */
/* Whether every value of an integer type fits int32. */
static bool int32_values(mpx_dtype t) {
    return t == MPX_DT_INT32 || t == MPX_DT_INT16 || t == MPX_DT_UINT16 || t == MPX_DT_INT8 || t == MPX_DT_UINT8 ||
           t == MPX_DT_BOOL;
}

/* Integers held as int64 but each within int32, to float: through int32
 * (the same value, so the same rounding to float), which the vector units
 * convert eight at a time where int64 has no conversion before AVX-512
 * (a quantised model's Cast of every ConvInteger's sums). */
MPX_K_CLONES("avx512f", "avx2", "default")
static void cast_i32_f(const int64_t *x, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) y[k] = (float)(int32_t)x[k];
}

mpx_status mpx_k_cast(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    const mpx_value *x;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, KE_ANY, false, &x);
    if (st != MPX_OK) return st;
    mpx_dtype to = mpx_node_cast_to(c->node);
    if (c->node->op == MPX_OP_CastLike) {
        if (to == MPX_DT_UNDEFINED)
            return mpx_kernel_error(c, MPX_E_INVALID, "the type of input 2 (target_type) is unknown");
    } else {
        const mpx_attr *ta = mpx_node_attr(c->node, "to");
        if (!ta || ta->type != MPX_ATTR_INT)
            return mpx_kernel_error(c, MPX_E_INVALID,
                                    "the attribute \"to\" (an integer data type) is %s",
                                    ta ? "not an integer" : "missing");
        if (ta->i <= MPX_DT_UNDEFINED || ta->i >= MPX_DT_COUNT_)
            return mpx_kernel_error(c, MPX_E_INVALID, "to=%lld is not an ONNX data type",
                                    (long long)ta->i);
    }
    bool saturate = mpx_node_attr_int(c->node, "saturate", 1) != 0;
    const mpx_format *fmt = NULL;
    if (mpx_dtype_is_float(to)) {
        if ((st = cast_format(c, to, saturate, &fmt)) != MPX_OK) return st;
    } else if (!mpx_dtype_is_int_like(to)) {
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "casting to %s is not supported",
                                mpx_dtype_name(to));
    }
    if ((st = mpx_k_alloc(c, &out[0], to, x->rank, x->dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    int64_t n = x->n;
    if (y->f) {
        if (x->f) {
            if (n) memcpy(y->f, x->f, (size_t)n * sizeof *y->f);
        } else if (x->dtype == MPX_DT_UINT64) {
            for (int64_t k = 0; k < n; k++) y->f[k] = (float)(uint64_t)x->i[k];
        } else if (int32_values(x->dtype)) {
            cast_i32_f(x->i, y->f, n);
        } else {
            for (int64_t k = 0; k < n; k++) y->f[k] = (float)x->i[k];
        }
        if (fmt) mpx_round_array(fmt, y->f, y->f, (size_t)n);
        if (to == MPX_DT_FLOAT8E5M2 && saturate)
            for (int64_t k = 0; k < n; k++)
                if (isinf(y->f[k])) y->f[k] = copysignf(mpx_format_fp8e5m2.max_finite, y->f[k]);
    } else if (x->f) {
        for (int64_t k = 0; k < n; k++) y->i[k] = f_to_int(x->f[k], to);
    } else {
        for (int64_t k = 0; k < n; k++) y->i[k] = ke_wrap(x->i[k], to);
    }
    return MPX_OK;
}
