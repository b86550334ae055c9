/* kern_quant.c - QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear,
 * the boundary of a QDQ model's integer arithmetic.
 *
 * Per tensor (a one-value scale) or per axis (a 1-D scale along `axis`,
 * default 1), zero point optional (0, and uint8 output for QuantizeLinear):
 *   DequantizeLinear  y = (x - zero_point) * scale            (fp32)
 *   QuantizeLinear    y = saturate(round(x / scale) + zero_point)
 * with round half to even and saturation to the output's integer range, in
 * the order ONNX and ONNX Runtime compute them. */
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* The scale and zero point for element e (along axis ax, when per axis). */
typedef struct qparams {
    const mpx_value *scale, *zp;
    int64_t inner, dim; /* per axis: elements after the axis, the axis length; per tensor: dim 0 */
} qparams;

static mpx_status qparams_of(const mpx_kctx *c, const mpx_value *x, const mpx_value *scale, const mpx_value *zp,
                             qparams *q) {
    memset(q, 0, sizeof *q);
    q->scale = scale;
    q->zp = zp;
    if (!scale->f) return mpx_kernel_error(c, MPX_E_INVALID, "the scale must be a float tensor");
    if (zp && zp->n != scale->n)
        return mpx_kernel_error(c, MPX_E_SHAPE, "zero point has %lld values and scale %lld", (long long)zp->n,
                                (long long)scale->n);
    if (scale->n == 1 && scale->rank <= 1) return MPX_OK;
    int ax;
    mpx_status st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 1), x->rank, 0, &ax);
    if (st) return st;
    if (scale->rank != 1 || scale->dims[0] != x->dims[ax])
        return mpx_kernel_error(c, MPX_E_SHAPE, "a per-axis scale needs %lld values (axis %d), not %lld",
                                (long long)x->dims[ax], ax, (long long)scale->n);
    q->dim = x->dims[ax];
    q->inner = 1;
    for (int i = ax + 1; i < x->rank; i++) q->inner *= x->dims[i];
    return MPX_OK;
}

static int64_t qindex(const qparams *q, int64_t e) { return q->dim ? (e / q->inner) % q->dim : 0; }

static double qzero(const qparams *q, int64_t k) {
    if (!q->zp) return 0.0;
    return q->zp->i ? (double)q->zp->i[k] : (double)q->zp->f[k];
}

mpx_status mpx_k_dequantize_linear(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                   int n_out) {
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    const mpx_value *x = kn_opt(in, n_in, 0), *scale = kn_opt(in, n_in, 1), *zp = kn_opt(in, n_in, 2);
    if (!x || !scale) return mpx_kernel_error(c, MPX_E_INVALID, "x and x_scale are required");
    if (!x->i) return mpx_kernel_error(c, MPX_E_INVALID, "x must be an integer tensor");
    qparams q;
    if ((st = qparams_of(c, x, scale, zp, &q))) return st;
    if ((st = mpx_k_alloc(c, &out[0], scale->dtype, x->rank, x->dims))) return st;
    for (int64_t e = 0; e < x->n; e++) {
        int64_t k = qindex(&q, e);
        out[0].f[e] = (float)((double)x->i[e] - qzero(&q, k)) * scale->f[k];
    }
    return MPX_OK;
}

mpx_status mpx_k_quantize_linear(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "x", &x);
    if (st) return st;
    const mpx_value *scale = kn_opt(in, n_in, 1), *zp = kn_opt(in, n_in, 2);
    if (!scale) return mpx_kernel_error(c, MPX_E_INVALID, "y_scale is required");
    qparams q;
    if ((st = qparams_of(c, x, scale, zp, &q))) return st;
    mpx_dtype dt = zp ? zp->dtype : MPX_DT_UINT8;
    double lo, hi;
    switch (dt) {
    case MPX_DT_UINT8: lo = 0, hi = 255; break;
    case MPX_DT_INT8: lo = -128, hi = 127; break;
    case MPX_DT_UINT16: lo = 0, hi = 65535; break;
    case MPX_DT_INT16: lo = -32768, hi = 32767; break;
    default:
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "QuantizeLinear to %s: mpx quantizes to 8- and 16-bit integers",
                                mpx_dtype_name(dt));
    }
    if ((st = mpx_k_alloc(c, &out[0], dt, x->rank, x->dims))) return st;
    for (int64_t e = 0; e < x->n; e++) {
        int64_t k = qindex(&q, e);
        /* x / scale in fp32 (ORT's order), rounded half to even, then + zp */
        double v = nearbyint((double)(x->f[e] / scale->f[k])) + qzero(&q, k);
        if (v != v) v = qzero(&q, k); /* NaN: the zero point (mpx's choice; ONNX leaves it open) */
        out[0].i[e] = (int64_t)(v < lo ? lo : v > hi ? hi : v);
    }
    return MPX_OK;
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------------ */

/* Pieces of x a thread takes at a time, for the range and for the codes;
 * the second thread only from DQ_PAR_MIN elements: eight lanes take a
 * ResNet activation (200,000 values) in about 0.1 ms, where two hand-offs
 * to a thread cost more than they save on a busy machine. */
enum { DQ_PIECE = 1 << 15, DQ_PAR_MIN = 1 << 20 };

/* The least and the greatest of x[0..n) and 0. In 8 lanes, then across
 * them: the least and the greatest value do not depend on the order they
 * are met in (a NaN compares false and moves neither; -0 never replaces
 * the start's +0), so pieces on threads and vector lanes give the same
 * pair; lanes let the compiler use minps and maxps (one running minimum
 * is a chain it keeps scalar). */
static void dq_range(const float *xf, int64_t n, float *mn_out, float *mx_out) {
    enum { DQ_LANES = 8 };
    float mnl[DQ_LANES] = {0}, mxl[DQ_LANES] = {0};
    int64_t e0 = 0;
    for (; e0 + DQ_LANES <= n; e0 += DQ_LANES)
        for (int l = 0; l < DQ_LANES; l++) {
            mnl[l] = xf[e0 + l] < mnl[l] ? xf[e0 + l] : mnl[l];
            mxl[l] = xf[e0 + l] > mxl[l] ? xf[e0 + l] : mxl[l];
        }
    for (; e0 < n; e0++) {
        mnl[0] = xf[e0] < mnl[0] ? xf[e0] : mnl[0];
        mxl[0] = xf[e0] > mxl[0] ? xf[e0] : mxl[0];
    }
    float mn = 0.0f, mx = 0.0f;
    for (int l = 0; l < DQ_LANES; l++) {
        mn = mnl[l] < mn ? mnl[l] : mn;
        mx = mxl[l] > mx ? mxl[l] : mx;
    }
    *mn_out = mn, *mx_out = mx;
}

/* y = saturate(nearbyint(x / scale) + zp), NaN to zp, without a call a
 * value: the float quotient q is clamped to [-256, 512] first (beyond,
 * the sum saturates the same way: zp is in [0, 255]) and rounded to an
 * integer, half to even, by adding and taking away 1.5 * 2^23 (where
 * the spacing of floats is 1; exact for |q| <= 2^22), which is
 * nearbyint's rounding of (double)q in the default rounding mode. */
static void dq_codes(const float *xf, int64_t n, float scale, float fzp, int64_t *y) {
    const float big = 12582912.0f;
    enum { DQ_BLOCK = 256 }; /* the codes as floats a block at a time (vector lanes), then as integers */
    float v[DQ_BLOCK];
    for (int64_t b0 = 0; b0 < n; b0 += DQ_BLOCK) {
        const int m = n - b0 < DQ_BLOCK ? (int)(n - b0) : DQ_BLOCK;
        const float *xb = xf + b0;
        for (int e = 0; e < m; e++) {
            float q = xb[e] / scale;
            const bool nan = q != q;
            q = q < -256.0f ? -256.0f : q;
            q = q > 512.0f ? 512.0f : q;
            float t = nan ? fzp : ((q + big) - big) + fzp;
            t = t < 0.0f ? 0.0f : t;
            v[e] = t > 255.0f ? 255.0f : t;
        }
        for (int e = 0; e < m; e++) y[b0 + e] = (int32_t)v[e]; /* an integer in [0, 255] */
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* dq_range and dq_codes eight lanes wide (GCC keeps dq_range's lanes on
 * the stack and the codes' loops four wide, which put DynamicQuantizeLinear
 * at 4x ONNX Runtime's time on ResNet-18). minps(x, m) is x < m ? x : m and
 * maxps(x, m) x > m ? x : m lane by lane, as above; the codes' clamps
 * agree with the scalar selects on every value but NaN (replaced by zp
 * after) and -0 (0 either way once an integer). */
__attribute__((target("avx2"))) static void dq_range_avx2(const float *xf, int64_t n, float *mn_out, float *mx_out) {
    __m256 mn = _mm256_setzero_ps(), mx = mn, mn2 = mn, mx2 = mn;
    int64_t e = 0;
    for (; e + 16 <= n; e += 16) {
        const __m256 a = _mm256_loadu_ps(xf + e), b = _mm256_loadu_ps(xf + e + 8);
        mn = _mm256_min_ps(a, mn), mx = _mm256_max_ps(a, mx);
        mn2 = _mm256_min_ps(b, mn2), mx2 = _mm256_max_ps(b, mx2);
    }
    float l1[8], l2[8], l3[8], l4[8];
    _mm256_storeu_ps(l1, mn), _mm256_storeu_ps(l2, mx), _mm256_storeu_ps(l3, mn2), _mm256_storeu_ps(l4, mx2);
    float rmn, rmx;
    dq_range(xf + e, n - e, &rmn, &rmx);
    for (int l = 0; l < 8; l++) {
        rmn = l1[l] < rmn ? l1[l] : rmn, rmn = l3[l] < rmn ? l3[l] : rmn;
        rmx = l2[l] > rmx ? l2[l] : rmx, rmx = l4[l] > rmx ? l4[l] : rmx;
    }
    *mn_out = rmn, *mx_out = rmx;
}

__attribute__((target("avx2"))) static void dq_codes_avx2(const float *xf, int64_t n, float scale, float fzp,
                                                          int64_t *y) {
    const __m256 vs = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-256.0f), hi = _mm256_set1_ps(512.0f),
                 big = _mm256_set1_ps(12582912.0f), zp = _mm256_set1_ps(fzp), zero = _mm256_setzero_ps(),
                 top = _mm256_set1_ps(255.0f);
    int64_t e = 0;
    for (; e + 8 <= n; e += 8) {
        __m256 q = _mm256_div_ps(_mm256_loadu_ps(xf + e), vs);
        const __m256 nan = _mm256_cmp_ps(q, q, _CMP_UNORD_Q);
        q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
        __m256 t = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(q, big), big), zp);
        t = _mm256_blendv_ps(t, zp, nan);
        t = _mm256_min_ps(_mm256_max_ps(t, zero), top);
        const __m256i c = _mm256_cvttps_epi32(t);
        _mm256_storeu_si256((__m256i *)(y + e), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(c)));
        _mm256_storeu_si256((__m256i *)(y + e + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(c, 1)));
    }
    dq_codes(xf + e, n - e, scale, fzp, y + e);
}
#endif

typedef struct dq_job {
    const float *x;
    int64_t n;
    float *mn, *mx; /* per piece (the range pass) */
    float scale, fzp;
    int64_t *y;
    bool avx2;
} dq_job;

static void dq_range_item(void *ctx, int tid, long item) {
    (void)tid;
    dq_job *j = ctx;
    const int64_t e0 = (int64_t)item * DQ_PIECE, m = j->n - e0 < DQ_PIECE ? j->n - e0 : DQ_PIECE;
#if defined(__x86_64__) || defined(__i386__)
    if (j->avx2) {
        dq_range_avx2(j->x + e0, m, &j->mn[item], &j->mx[item]);
        return;
    }
#endif
    dq_range(j->x + e0, m, &j->mn[item], &j->mx[item]);
}

static void dq_codes_item(void *ctx, int tid, long item) {
    (void)tid;
    dq_job *j = ctx;
    const int64_t e0 = (int64_t)item * DQ_PIECE, m = j->n - e0 < DQ_PIECE ? j->n - e0 : DQ_PIECE;
#if defined(__x86_64__) || defined(__i386__)
    if (j->avx2) {
        dq_codes_avx2(j->x + e0, m, j->scale, j->fzp, j->y + e0);
        return;
    }
#endif
    dq_codes(j->x + e0, m, j->scale, j->fzp, j->y + e0);
}

/* DynamicQuantizeLinear: uint8 quantization whose range [min(x, 0), max(x,
 * 0)] is taken from x itself: y_scale = (max - min) / 255, y_zero_point =
 * saturate(round(-min / y_scale)), y = saturate(round(x / y_scale) + zp).
 * Both passes in pieces on the kernel threads. */
mpx_status mpx_k_dynamic_quantize_linear(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                         int n_out) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 3);
    if (!st) st = kn_float_in(c, in, n_in, 0, "x", &x);
    if (st) return st;
    const long pieces = (long)((x->n + DQ_PIECE - 1) / DQ_PIECE);
    float *lim = malloc((size_t)(2 * pieces + 2) * sizeof *lim);
    if (!lim) return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
#if defined(__x86_64__) || defined(__i386__)
    const bool avx2 = __builtin_cpu_supports("avx2") && !mpx_env_on("MPX_KERN_PORTABLE");
#else
    const bool avx2 = false;
#endif
    dq_job j = {.x = x->f, .n = x->n, .mn = lim, .mx = lim + pieces + 1, .avx2 = avx2};
    const int nt = x->n >= DQ_PAR_MIN ? kg_threads() : 1;
    mpx_k_parallel(pieces, nt, dq_range_item, &j);
    float mn = 0.0f, mx = 0.0f;
    for (long k = 0; k < pieces; k++) {
        mn = j.mn[k] < mn ? j.mn[k] : mn;
        mx = j.mx[k] > mx ? j.mx[k] : mx;
    }
    free(lim);
    float scale = (mx - mn) / 255.0f;
    double zp = scale > 0 ? nearbyint((double)(0.0f - mn / scale)) : 0.0;
    zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
    if ((st = mpx_k_alloc_raw(c, &out[0], MPX_DT_UINT8, x->rank, x->dims)) ||
        (st = mpx_k_alloc(c, &out[1], MPX_DT_FLOAT, 0, NULL)) || (st = mpx_k_alloc(c, &out[2], MPX_DT_UINT8, 0, NULL))) {
        for (int k = 0; k < 3; k++) mpx_value_free(&out[k]); /* a failed kernel leaves its outputs absent */
        return st;
    }
    out[1].f[0] = scale;
    out[2].i[0] = (int64_t)zp;
    int64_t *y = out[0].i;
    const int64_t n = x->n; /* (a local: the stores to y could be to x->n, for all the compiler knows) */
    if (!(scale > 0)) {
        for (int64_t e = 0; e < n; e++) y[e] = (int64_t)zp;
        return MPX_OK;
    }
    j.scale = scale, j.fzp = (float)zp, j.y = y;
    mpx_k_parallel(pieces, nt, dq_codes_item, &j);
    return MPX_OK;
}
