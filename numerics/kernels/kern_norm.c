/* kern_norm.c - BatchNormalization, LayerNormalization, InstanceNormalization,
 * LRN, Softmax, LogSoftmax.
 *
 * Sums go through mpx_acc in increasing flat index order over the reduced
 * elements (BatchNormalization's training statistics: batch, then spatial
 * position). Means and variances are two-pass, as the operators' defining
 * formulas (mean = sum / n; var = sum((x - mean)^2) / n, population
 * variance), with fp32 divisions. Everything else is elementwise fp32 in the
 * order of the ONNX formulas:
 *   BatchNormalization  y = fma(x, a, b), a = (1 / sqrt(var + eps)) * scale,
 *                       b = B - mean * a (the per-channel factors first, as
 *                       ONNX Runtime's and PyTorch's CPU kernels compute it:
 *                       the formula's other fp32 orders differ by an ulp,
 *                       which moves a low output across a rounding tie)
 *   LayerNormalization  y = (x - mean) * (1 / sqrt(var + eps)) * Scale + B
 *   InstanceNorm        y = scale * (x - mean) / sqrt(var + eps) + B
 *   Softmax             y = exp(x - max) / sum(exp(x - max))
 *   LogSoftmax          y = (x - max) - log(sum(exp(x - max)))
 *   LRN                 y = x / (bias + alpha / size * sum(x^2))^beta */
#include "kern_elem.h"
#include "kern_nn.h"
#include "kern_simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- BatchNormalization ----------------------------------------------------------- */

/* One channel's row of an inference BatchNormalization, x * a + b as one
 * fused multiply-add (PyTorch's CPU vector loop contracts it: on ResNet-18's
 * and the UNet's BatchNormalizations in bf16 its outputs are these bit for
 * bit, and differ in 1 value in 10^5 from the two roundings), compiled as
 * clones (kern_internal.h; fmaf is the FMA instruction in the vector copies
 * and rounds the same in libm's). */
MPX_K_CLONES_FMA
static void bn_row(const float *x, float *y, int64_t n, float a, float b) {
    for (int64_t k = 0; k < n; k++) y[k] = fmaf(x[k], a, b);
}

/* The factors of x in y = x * a + b, as ONNX Runtime's and PyTorch's CPU
 * kernels fold them (batch_norm.h: inv_std, new_scale, new_bias;
 * batch_norm_cpu_collect_linear_and_constant_terms). */
static void bn_factors(float mean, float var, float eps, float scale, float bias, float *a, float *b) {
    float inv = 1.0f / sqrtf(var + eps);
    *a = inv * scale;
    *b = bias - mean * *a;
}

/* Rows (batch item, channel) of a spatial BatchNormalization, `per` an
 * item: two threads from BN_PAR_MIN elements, where a node not fused into
 * a chain (fuse.c: maps under 2^16 elements) had run on one (a tenth of
 * MobileNetV3-Small's forward on an AVX2 CPU). */
enum { BN_PAR_MIN = 1 << 15, BN_PIECE = 1 << 13 };

typedef struct bn_job {
    const float *x, *mean, *var, *scale, *bias;
    float *y;
    float eps;
    int64_t C, S, rows, per;
} bn_job;

void mpx_k_bn_row(const float *x, float *y, int64_t n, float mean, float var, float eps, float scale, float bias) {
    float a, b;
    bn_factors(mean, var, eps, scale, bias, &a, &b);
    bn_row(x, y, n, a, b);
}

static void bn_rows(void *ctx, int tid, long item) {
    (void)tid;
    const bn_job *b = ctx;
    for (int64_t r = item * b->per; r < (item + 1) * b->per && r < b->rows; r++) {
        const int64_t ch = r % b->C;
        mpx_k_bn_row(b->x + r * b->S, b->y + r * b->S, b->S, b->mean[ch], b->var[ch], b->eps, b->scale[ch],
                     b->bias[ch]);
    }
}

/* Inference uses the given mean and variance. Training (opset 14+
 * training_mode = 1; before 14, a node that lists the extra outputs) uses the
 * batch statistics and writes running_mean = mean * momentum + batch_mean *
 * (1 - momentum) (likewise the variance); before opset 14 also the batch mean
 * and variance as saved_mean and saved_var. Opsets 7-8 with spatial = 0 take
 * per-activation parameters of shape C x D1 x ... x Dn. */
/* BatchNormalization's inputs (X, scale, B, mean, var), attributes and
 * shape checks, for the fp32 and the float64 kernel. */
typedef struct bn_args {
    const mpx_value *v[5];
    int opset;
    float eps, momentum;
    bool spatial, training;
    int64_t N, C, S;
} bn_args;

static mpx_status bn_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64, bn_args *a) {
    static const char *names[5] = {"X", "scale", "B", "mean", "var"};
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    for (int i = 0; i < 5 && !st; i++) st = kn_values_in(c, in, n_in, i, names[i], f64, &a->v[i]);
    if (st) return st;
    const mpx_value *x = a->v[0];
    if (x->rank < 2)
        return mpx_kernel_error(c, MPX_E_SHAPE, "input X has shape %s; N x C x ... expected",
                                kn_shape(x, s1));
    a->opset = kn_opset(c);
    a->eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    a->momentum = mpx_node_attr_float(c->node, "momentum", 0.9f);
    a->spatial = a->opset >= 9 || mpx_node_attr_int(c->node, "spatial", 1) != 0;
    a->training = false;
    if (a->opset >= 14) {
        a->training = mpx_node_attr_int(c->node, "training_mode", 0) != 0;
    } else {
        for (int i = 1; i < n_out; i++) a->training = a->training || kn_wants_out(c, n_out, i);
    }
    a->N = x->dims[0], a->C = x->dims[1], a->S = 1;
    for (int i = 2; i < x->rank; i++) a->S *= x->dims[i];
    int64_t per = a->spatial ? a->C : a->C * a->S; /* parameters per batch item */
    for (int i = 1; i < 5; i++)
        if (a->v[i]->n != per || (a->spatial && a->v[i]->rank != 1))
            return mpx_kernel_error(c, MPX_E_SHAPE, "input %s of shape %s does not match X of shape %s%s",
                                    names[i], kn_shape(a->v[i], s1), kn_shape(x, s2),
                                    a->spatial ? " (one value per channel expected)" : "");
    if (a->training && !a->spatial)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "training mode with spatial = 0 is not supported");
    return MPX_OK;
}

mpx_status mpx_k_batch_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                     mpx_value *out, int n_out) {
    bn_args ba;
    mpx_status st = bn_setup(c, in, n_in, n_out, false, &ba);
    if (st) return st;
    const mpx_value *const *v = ba.v, *x = v[0];
    const int opset = ba.opset;
    const float eps = ba.eps, momentum = ba.momentum;
    const bool spatial = ba.spatial, training = ba.training;
    const int64_t N = ba.N, C = ba.C, S = ba.S;
    bool made[5] = {false};
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    made[0] = true;
    float *mean = v[3]->f, *var = v[4]->f, *bm = NULL, *bv = NULL;
    if (training) {
        if ((st = kn_scratch(c, (size_t)(2 * C), sizeof *bm, (void **)&bm))) goto fail;
        bv = bm + C;
        float cnt = (float)(N * S);
        for (int64_t ch = 0; ch < C; ch++) {
            mpx_acc a;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t n = 0; n < N; n++)
                for (int64_t k = 0; k < S; k++) mpx_acc_add(&a, x->f[(n * C + ch) * S + k]);
            float m = mpx_acc_result(&a) / cnt;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t n = 0; n < N; n++)
                for (int64_t k = 0; k < S; k++) {
                    float d = x->f[(n * C + ch) * S + k] - m;
                    mpx_acc_add(&a, d * d);
                }
            bm[ch] = m;
            bv[ch] = mpx_acc_result(&a) / cnt;
        }
        mean = bm;
        var = bv;
    }
    if (spatial) { /* one channel's factors for the whole row */
        bn_job b = {.x = x->f, .y = out[0].f, .mean = mean, .var = var, .scale = v[1]->f, .bias = v[2]->f,
                    .eps = eps, .C = C, .S = S};
        b.rows = N * C, b.per = S >= BN_PIECE ? 1 : BN_PIECE / (S > 0 ? S : 1);
        mpx_k_parallel((long)((b.rows + b.per - 1) / b.per), b.rows * S >= BN_PAR_MIN ? kg_threads() : 1, bn_rows,
                       &b);
    } else {
        for (int64_t n = 0; n < N; n++)
            for (int64_t ch = 0; ch < C; ch++) {
                const float *xr = x->f + (n * C + ch) * S;
                float *yr = out[0].f + (n * C + ch) * S;
                for (int64_t k = 0; k < S; k++) {
                    int64_t p = ch * S + k;
                    float a, b;
                    bn_factors(mean[p], var[p], eps, v[1]->f[p], v[2]->f[p], &a, &b);
                    yr[k] = fmaf(xr[k], a, b);
                }
            }
    }
    if (training) {
        int64_t d1[1] = {C};
        for (int i = 1; i < 5 && i < n_out; i++) {
            if (!kn_wants_out(c, n_out, i) || (opset >= 14 && i > 2)) continue;
            if ((st = mpx_k_alloc(c, &out[i], v[3]->dtype, 1, d1))) goto fail;
            made[i] = true;
            for (int64_t ch = 0; ch < C; ch++) {
                float r = i == 1 ? v[3]->f[ch] * momentum + bm[ch] * (1.0f - momentum)
                        : i == 2 ? v[4]->f[ch] * momentum + bv[ch] * (1.0f - momentum)
                        : i == 3 ? bm[ch] : bv[ch];
                out[i].f[ch] = r;
            }
        }
    }
    free(bm);
    return MPX_OK;
fail:
    free(bm);
    for (int i = 0; i < 5; i++)
        if (made[i]) mpx_value_free(&out[i]);
    return st;
}

/* ---- fp32 sums of rows, the rows in the vector lanes --------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
/* The fp32 sums of nr contiguous rows of D (mpx_acc's fp32 sum term by term:
 * blocks of MPX_ACC_FP32_BLOCK from 0 added to the running sum, a partial
 * last block too), 8 rows at a time with the transposed copy in registers:
 * 8 rows of 8 values loaded (the block's last few under a mask where D is
 * not a multiple of 8), transposed (lane i of column vector k: row i's k-th
 * value), the columns added to the block's lanes in k order, each block
 * added to the running sums. With mean (one value a row), the terms are
 * (x - mean)^2, the difference and the square each rounded (the variance's
 * sum). The same additions in the same order, lane by lane, so the same
 * bits as the row alone. Why: a row's sum is a chain of dependent
 * additions, and GCC leaves a strided loop over rows scalar; the
 * element-by-element copy into a transposed buffer was a quarter of
 * Softmax's time on ViT-B/16's rows of 197, this a fifth of that. Lanes
 * past nr read row 0 of their group, their sums unused. */
static inline __attribute__((target("avx2"), always_inline)) void rows_sums8(const float *y, int64_t D, int nr,
                                                                           const float *mean, float *sum) {
    for (int g = 0; g < nr; g += 8) {
        const float *p[8];
        float ml[8] = {0};
        for (int i = 0; i < 8; i++) p[i] = y + (int64_t)(g + i < nr ? g + i : g) * D;
        for (int i = 0; mean && i < 8 && g + i < nr; i++) ml[i] = mean[g + i];
        const __m256 mv = _mm256_loadu_ps(ml);
        __m256 s = _mm256_setzero_ps();
        for (int64_t k0 = 0; k0 < D; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t kn = D - k0 < MPX_ACC_FP32_BLOCK ? D - k0 : MPX_ACC_FP32_BLOCK;
            __m256 b = _mm256_setzero_ps(), r[8], c[8];
            int64_t k = 0;
            int left = 8;
            for (; k < kn; k += 8) {
                if (k + 8 <= kn) {
                    KS_UNROLL8 for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(p[i] + k0 + k);
                } else {
                    left = (int)(kn - k);
                    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                    KS_UNROLL8 for (int i = 0; i < 8; i++) r[i] = _mm256_maskload_ps(p[i] + k0 + k, mask);
                }
                ks_transpose8(r, c);
                if (mean)
                    KS_UNROLL8 for (int q = 0; q < 8; q++) {
                        const __m256 d = _mm256_sub_ps(c[q], mv);
                        c[q] = _mm256_mul_ps(d, d);
                    }
                if (left == 8)
                    KS_UNROLL8 for (int q = 0; q < 8; q++) b = _mm256_add_ps(b, c[q]);
                else
                    for (int q = 0; q < left; q++) b = _mm256_add_ps(b, c[q]);
            }
            s = _mm256_add_ps(s, b);
        }
        float sl[8];
        _mm256_storeu_ps(sl, s);
        for (int i = 0; i < 8 && g + i < nr; i++) sum[g + i] = sl[i];
    }
}

/* The same sums on AVX-512F, 16 rows at a time with 16 x 16 transposes:
 * lane i of column vector q is row i's value k + q, the columns added in
 * q order, so each lane's additions are rows_sums8's (and the
 * definition's), in the same order. A third fewer shuffles a value than
 * the 8 x 8 transposes (64 for 256 values, 24 for 64). */
static inline __attribute__((target("avx512f"), always_inline)) void rows_sums16(const float *y, int64_t D, int nr,
                                                                               const float *mean, float *sum) {
    for (int g = 0; g < nr; g += 16) {
        const float *p[16];
        float ml[16] = {0};
        for (int i = 0; i < 16; i++) p[i] = y + (int64_t)(g + i < nr ? g + i : g) * D;
        for (int i = 0; mean && i < 16 && g + i < nr; i++) ml[i] = mean[g + i];
        const __m512 mv = _mm512_loadu_ps(ml);
        __m512 s = _mm512_setzero_ps();
        for (int64_t k0 = 0; k0 < D; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t kn = D - k0 < MPX_ACC_FP32_BLOCK ? D - k0 : MPX_ACC_FP32_BLOCK;
            __m512 b = _mm512_setzero_ps(), r[16], c[16];
            int64_t k = 0;
            int left = 16;
            for (; k < kn; k += 16) {
                if (k + 16 <= kn) {
                    KS_UNROLL16 for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(p[i] + k0 + k);
                } else {
                    left = (int)(kn - k);
                    const __mmask16 mask = (__mmask16)((1u << left) - 1u);
                    KS_UNROLL16 for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(mask, p[i] + k0 + k);
                }
                ks_transpose16(r, c);
                if (mean)
                    KS_UNROLL16 for (int q = 0; q < 16; q++) {
                        const __m512 d = _mm512_sub_ps(c[q], mv);
                        c[q] = _mm512_mul_ps(d, d);
                    }
                if (left == 16)
                    KS_UNROLL16 for (int q = 0; q < 16; q++) b = _mm512_add_ps(b, c[q]);
                else
                    for (int q = 0; q < left; q++) b = _mm512_add_ps(b, c[q]);
            }
            s = _mm512_add_ps(s, b);
        }
        float sl[16];
        _mm512_storeu_ps(sl, s);
        for (int i = 0; i < 16 && g + i < nr; i++) sum[g + i] = sl[i];
    }
}

/* The plain sums (Softmax's) and the variance's, each compiled once. */
__attribute__((target("avx2"))) static void sm_sums_avx2(const float *y, int64_t D, int nr, float *sum) {
    rows_sums8(y, D, nr, NULL, sum);
}
__attribute__((target("avx512f"))) static void sm_sums_avx512(const float *y, int64_t D, int nr, float *sum) {
    rows_sums16(y, D, nr, NULL, sum);
}
__attribute__((target("avx2"))) static void sq_sums_avx2(const float *y, int64_t D, int nr, const float *mean, float *sum) {
    rows_sums8(y, D, nr, mean, sum);
}
__attribute__((target("avx512f"))) static void sq_sums_avx512(const float *y, int64_t D, int nr, const float *mean,
                                                              float *sum) {
    rows_sums16(y, D, nr, mean, sum);
}
#endif

/* ---- LayerNormalization ------------------------------------------------------------ */

/* Element strides of p (unidirectionally broadcast to x's shape), or an
 * error naming the input. */
static mpx_status bcast_to(const mpx_kctx *c, const mpx_value *p, const mpx_value *x,
                           const char *what, int64_t *strides) {
    char s1[160], s2[160];
    bool ok = p->rank <= x->rank;
    for (int i = 0; ok && i < p->rank; i++) {
        int64_t d = p->dims[i], xd = x->dims[x->rank - p->rank + i];
        ok = d == 1 || d == xd;
    }
    if (!ok)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%s of shape %s does not broadcast to X of shape %s",
                                what, kn_shape(p, s1), kn_shape(x, s2));
    mpx_k_bcast_strides(p, x->rank, x->dims, strides);
    return MPX_OK;
}

/* Whether an operand broadcast to X with strides st is one value per
 * position of the normalised dims (ax ..), the same for every row: its
 * element k of a row at k. */
static bool ln_plain(const mpx_value *x, int ax, const int64_t *st) {
    int64_t want = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        if (i >= ax) {
            if (x->dims[i] != 1 && st[i] != want) return false;
            want *= x->dims[i];
        } else if (st[i] != 0 && x->dims[i] != 1) {
            return false;
        }
    }
    return true;
}

/* LayerNormalization with fp32 sums and plain Scale and B, LN_ROWS rows an
 * item: each row's two sums the mpx_acc fp32 sums term by term (blocks of
 * MPX_ACC_FP32_BLOCK summed from 0, added to the running sum, a partial
 * last block added as one), so the same bits as the general loop; the
 * scale's place is k, not an odometer over X's dims. A row's sum is one
 * chain of dependent additions, 4 cycles each, so the rows' chains run
 * side by side as vector lanes: on AVX-512 and AVX2 with the rows
 * transposed in registers (rows_sums16, rows_sums8); ViT-B/16's 197 x 768
 * LayerNormalizations took 2.0x ONNX Runtime's time with the element by
 * element transposed copy below, which the portable build keeps (rows of up
 * to LN_T values copied transposed, xt[k][i]: eight rows' k-th values side
 * by side; GCC leaves the strided loop over rows scalar, the path of longer
 * rows there). */
enum { LN_ROWS = 16, LN_T = 1024, LN_LANES = 8 };

/* The eight lanes' sums of xt[k][i] (sq: of (xt[k][i] - mean[i])^2, the
 * difference and the square each rounded, as the scalar loop does). */
static inline __attribute__((always_inline)) void ln_sums_t(const float *xt, int64_t D, bool sq, const float *mean, float *sum) {
    float blk[LN_LANES] = {0};
    int nblk = 0;
    for (int i = 0; i < LN_LANES; i++) sum[i] = 0.0f;
    for (int64_t k = 0; k < D; k++) {
        const float *v = xt + k * LN_LANES;
        if (sq)
            for (int i = 0; i < LN_LANES; i++) {
                const float d = v[i] - mean[i];
                blk[i] += d * d;
            }
        else
            for (int i = 0; i < LN_LANES; i++) blk[i] += v[i];
        if (++nblk == MPX_ACC_FP32_BLOCK) {
            for (int i = 0; i < LN_LANES; i++) sum[i] += blk[i], blk[i] = 0.0f;
            nblk = 0;
        }
    }
    if (nblk > 0)
        for (int i = 0; i < LN_LANES; i++) sum[i] += blk[i];
}

/* mean[i] and inv[i] = 1 / sqrt(var + eps) of nr <= LN_LANES rows, without
 * vector instructions of the CPU's own. */
static void ln_stats_portable(const float *xr, int nr, int64_t D, float eps, float *mean, float *inv) {
    float xt[LN_T * LN_LANES];
    float m[LN_LANES] = {0};
    if (D <= LN_T) {
        /* rows past the last are zeros: their lanes' figures unused */
        for (int i = 0; i < LN_LANES; i++)
            for (int64_t k = 0; k < D; k++) xt[k * LN_LANES + i] = i < nr ? xr[i * D + k] : 0.0f;
        float sum[LN_LANES];
        ln_sums_t(xt, D, false, m, sum);
        for (int i = 0; i < LN_LANES; i++) m[i] = sum[i] / (float)D;
        ln_sums_t(xt, D, true, m, sum);
        for (int i = 0; i < nr; i++) mean[i] = m[i], inv[i] = 1.0f / sqrtf(sum[i] / (float)D + eps);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        float sum[LN_LANES] = {0}, blk[LN_LANES] = {0};
        int nblk = 0;
        for (int64_t k = 0; k < D; k++) {
            for (int i = 0; i < nr; i++) {
                const float v = xr[i * D + k];
                if (pass == 0) {
                    blk[i] += v;
                } else {
                    const float d = v - m[i];
                    blk[i] += d * d;
                }
            }
            if (++nblk == MPX_ACC_FP32_BLOCK) {
                for (int i = 0; i < nr; i++) sum[i] += blk[i], blk[i] = 0.0f;
                nblk = 0;
            }
        }
        for (int i = 0; i < nr; i++) {
            if (nblk > 0) sum[i] += blk[i];
            if (pass == 0) m[i] = mean[i] = sum[i] / (float)D;
            else inv[i] = 1.0f / sqrtf(sum[i] / (float)D + eps);
        }
    }
}

/* y = (x - mean) * inv * scale (+ b) over nr rows, in the formula's order. */
MPX_K_CLONES("avx512f", "avx2", "default")
static void ln_apply(const float *x, int nr, int64_t D, const float *mean, const float *inv, const float *sc,
                     const float *b, float *y) {
    for (int i = 0; i < nr; i++) {
        const float *xi = x + i * D;
        float *yi = y + i * D;
        const float mi = mean[i], ii = inv[i];
        if (b)
            for (int64_t k = 0; k < D; k++) yi[k] = (xi[k] - mi) * ii * sc[k] + b[k];
        else
            for (int64_t k = 0; k < D; k++) yi[k] = (xi[k] - mi) * ii * sc[k];
    }
}

/* LN_ROWS rows an item on the kernel threads where there are 2^16 values
 * or more (each row's figures are its own: the same bits on any thread
 * count and any vector form). ViT-B/16's 197 x 768 LayerNormalizations had
 * run on one thread. */
typedef struct ln_job {
    const float *x, *sc, *b;
    int64_t rows, D;
    float eps;
    ke_vec vec;
    float *y, *mean_out, *inv_out;
} ln_job;

static void ln_item(void *ctx, int tid, long item) {
    (void)tid;
    const ln_job *j = ctx;
    const int64_t D = j->D, r0 = (int64_t)item * LN_ROWS;
    const int nr = (int)(j->rows - r0 < LN_ROWS ? j->rows - r0 : LN_ROWS);
    const float *x = j->x + r0 * D;
    float mean[LN_ROWS] = {0}, inv[LN_ROWS] = {0}, sum[LN_ROWS] = {0};
#if defined(__x86_64__) && defined(__GNUC__)
    if (j->vec != KE_VEC_NONE) {
        if (j->vec == KE_VEC_AVX512) sm_sums_avx512(x, D, nr, sum);
        else sm_sums_avx2(x, D, nr, sum);
        for (int i = 0; i < nr; i++) mean[i] = sum[i] / (float)D;
        if (j->vec == KE_VEC_AVX512) sq_sums_avx512(x, D, nr, mean, sum);
        else sq_sums_avx2(x, D, nr, mean, sum);
        for (int i = 0; i < nr; i++) inv[i] = 1.0f / sqrtf(sum[i] / (float)D + j->eps);
    } else
#endif
    {
        (void)sum;
        for (int g = 0; g < nr; g += LN_LANES)
            ln_stats_portable(x + g * D, nr - g < LN_LANES ? nr - g : LN_LANES, D, j->eps, mean + g, inv + g);
    }
    ln_apply(x, nr, D, mean, inv, j->sc, j->b, j->y + r0 * D);
    for (int i = 0; i < nr; i++) {
        if (j->mean_out) j->mean_out[r0 + i] = mean[i];
        if (j->inv_out) j->inv_out[r0 + i] = inv[i];
    }
}

/* The accum rule's welford (MPX_ACC_WELFORD): a row's statistics as
 * PyTorch 1.13's CPU layer_norm computes them in bf16, every step rounded
 * to f (R): RowwiseMoments runs Welford's update on vectors of WF_LANES
 * bf16 lanes (AVX2's Vectorized<BFloat16>) over chunks of WF_CHUNK vectors
 * (delta = x - m1; m1 += delta * (1/(j+1)); m2 += delta * (x - m1)), merges
 * each chunk into a cascade of partial moments (AddMomentsVec, the
 * pairwise order of a binary counter), then the tail values one by one and
 * the lanes into one (AddMoments); mean = m1, var = m2 / N; then
 * rstd = 1 / sqrt(var + eps) and bias = -rstd * mean, each operation
 * rounded, and y = (x * rstd + bias) * Scale + B in fp32, rounded once by
 * the executor. Checked bit for bit against torch.ops.aten.native_layer_norm
 * (mean, rstd and y) on 64 rows of 768 (docs/fidelity.md). */
enum { WF_LANES = 16, WF_CHUNK = 16, WF_DEPTH = 64 };

typedef struct wf_moments {
    int64_t m0;
    float m1[WF_LANES], m2[WF_LANES];
} wf_moments;

#define R(v) mpx_round_scalar(f, (v))

static void wf_merge_vec(const mpx_format *f, int64_t m0a, const float *m1a, const float *m2a, wf_moments *s) {
    const int64_t n = s->m0 + m0a;
    const float c = n == 0 ? 0.0f : R(R((float)m0a) / R((float)n)), m0 = R((float)s->m0);
    for (int l = 0; l < WF_LANES; l++) {
        const float d = R(m1a[l] - s->m1[l]);
        s->m1[l] = R(s->m1[l] + R(c * d));
        s->m2[l] = R(s->m2[l] + R(m2a[l] + R(R(R(d * d) * c) * m0)));
    }
    s->m0 = n;
}

static void wf_row(const mpx_format *f, const float *x, int64_t N, float eps, float *mean_out, float *rstd_out) {
    const int64_t n = N / WF_LANES, m = (n + WF_CHUNK - 1) / WF_CHUNK;
    int depth = 0;
    while (depth < WF_DEPTH - 1 && ((int64_t)1 << depth) < m) depth++;
    wf_moments stk[WF_DEPTH];
    memset(stk, 0, sizeof stk);
    float cv[WF_CHUNK];
    for (int j = 0; j < WF_CHUNK; j++) cv[j] = R(1.0f / R((float)(j + 1)));
    for (int64_t i = 0; i < m; i++) {
        const float *xp = x + i * WF_CHUNK * WF_LANES;
        const int64_t m0 = n - i * WF_CHUNK < WF_CHUNK ? n - i * WF_CHUNK : WF_CHUNK;
        float m1[WF_LANES] = {0}, m2[WF_LANES] = {0};
        for (int64_t j = 0; j < m0; j++)
            for (int l = 0; l < WF_LANES; l++) {
                const float v = xp[j * WF_LANES + l], d = R(v - m1[l]);
                m1[l] = R(m1[l] + R(d * cv[j]));
                m2[l] = R(m2[l] + R(d * R(v - m1[l])));
            }
        wf_merge_vec(f, m0, m1, m2, &stk[0]);
        int64_t mask = i + 1;
        for (int j = 1; j < depth && (mask & 1) == 0; j++) {
            wf_merge_vec(f, stk[j - 1].m0, stk[j - 1].m1, stk[j - 1].m2, &stk[j]);
            memset(&stk[j - 1], 0, sizeof stk[j - 1]);
            mask >>= 1;
        }
    }
    for (int j = 1; j < depth; j++) wf_merge_vec(f, stk[j].m0, stk[j].m1, stk[j].m2, &stk[0]);
    int64_t M0 = 0;
    float M1 = 0.0f, M2 = 0.0f;
    for (int64_t i = n * WF_LANES; i < N; i++) {
        const float d = R(x[i] - M1);
        M0++;
        M1 = R(M1 + R(d / R((float)M0)));
        M2 = R(M2 + R(d * R(x[i] - M1)));
    }
    for (int l = 0; l < WF_LANES; l++) {
        const int64_t t = M0 + n;
        const float c = t == 0 ? 0.0f : R(R((float)n) / R((float)t));
        const float d = R(stk[0].m1[l] - M1);
        M1 = R(M1 + R(c * d));
        M2 = R(M2 + R(stk[0].m2[l] + R(R(R(d * d) * c) * R((float)M0))));
        M0 = t;
    }
    const float var = R(M2 / R((float)N));
    *mean_out = M1;
    *rstd_out = R(1.0f / R(sqrtf(R(var + R(eps)))));
}
#undef R

/* LayerNormalization's inputs, attributes and outputs (allocated here:
 * Mean and InvStdDev in stash_type where the node lists them), for the fp32
 * and the float64 kernel. */
typedef struct ln_args {
    const mpx_value *x, *sc, *b;
    int ax;
    float eps;
    int64_t ss[MPX_MAX_RANK], bs[MPX_MAX_RANK], D, rows;
    bool want[3];
} ln_args;

static mpx_status ln_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64, mpx_value *out,
                           ln_args *a) {
    memset(a, 0, sizeof *a);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &a->x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "Scale", f64, &a->sc);
    if (!st) st = kn_values_opt(c, in, n_in, 2, "B", f64, &a->b);
    if (st) return st;
    const mpx_value *x = a->x;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", -1), x->rank, 0, &a->ax))) return st;
    a->eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    if ((st = bcast_to(c, a->sc, x, "Scale", a->ss))) return st;
    if (a->b && (st = bcast_to(c, a->b, x, "B", a->bs))) return st;
    int64_t md[MPX_MAX_RANK];
    a->D = 1;
    for (int i = 0; i < x->rank; i++) {
        md[i] = i < a->ax ? x->dims[i] : 1;
        if (i >= a->ax) a->D *= x->dims[i];
    }
    a->rows = a->D ? x->n / a->D : 0;
    mpx_dtype sdt = (mpx_dtype)mpx_node_attr_int(c->node, "stash_type", MPX_DT_FLOAT);
    if (!mpx_dtype_is_float(sdt)) sdt = MPX_DT_FLOAT;
    if (f64 && sdt != MPX_DT_DOUBLE) sdt = MPX_DT_FLOAT; /* (held as fp32 values) */
    a->want[0] = true, a->want[1] = kn_wants_out(c, n_out, 1), a->want[2] = kn_wants_out(c, n_out, 2);
    /* Y not cleared (every element is written, each row's values read
     * before its places are written: Y may be a dying X the executor
     * offers, kernels.def's MPX_KERNEL_TAKES_INPUT0); the statistics of
     * an X with no values (D = 0) are never written, so cleared */
    for (int i = 0; i < 3; i++)
        if (a->want[i] && (st = (i == 0 && !f64 ? mpx_k_alloc_raw : mpx_k_alloc)(c, &out[i], i ? sdt : x->dtype, x->rank,
                                                                              i ? md : x->dims))) {
            for (int k = 0; k < i; k++)
                if (a->want[k]) mpx_value_free(&out[k]);
            return st;
        }
    return MPX_OK;
}

/* Over the dims [axis, rank) of each outer index; Mean and InvStdDev (when the
 * node lists them) have shape X.shape[:axis] + [1] * (rank - axis). */
mpx_status mpx_k_layer_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                     mpx_value *out, int n_out) {
    ln_args la;
    mpx_status st = ln_setup(c, in, n_in, n_out, false, out, &la);
    if (st) return st;
    const mpx_value *x = la.x, *sc = la.sc, *b = la.b;
    const int ax = la.ax;
    const float eps = la.eps;
    const int64_t *ss = la.ss, *bs = la.bs, D = la.D, rows = la.rows;
    const bool *want = la.want;
    if (mpx_acc_is_fp32(&c->acc) && ln_plain(x, ax, ss) && (!b || ln_plain(x, ax, bs))) {
        ln_job j = {.x = x->f, .sc = sc->f, .b = b ? b->f : NULL, .rows = rows, .D = D, .eps = eps,
                    .vec = ke_vec_now(), .y = out[0].f, .mean_out = want[1] ? out[1].f : NULL, .inv_out = want[2] ? out[2].f : NULL};
        mpx_k_parallel((long)((rows + LN_ROWS - 1) / LN_ROWS), x->n >= (1 << 16) ? kg_threads() : 1, ln_item, &j);
        return MPX_OK;
    }
    const mpx_format *wf = c->acc.fmt;
    if ((c->acc.flags & MPX_ACC_WELFORD) && !mpx_acc_is_fp32(&c->acc) && wf && ln_plain(x, ax, ss) &&
        (!b || ln_plain(x, ax, bs))) {
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x->f + r * D;
            float *yr = out[0].f + r * D;
            float mean, rstd;
            wf_row(wf, xr, D, eps, &mean, &rstd);
            const float bias = -mpx_round_scalar(wf, rstd * mean);
            for (int64_t k = 0; k < D; k++) {
                const float t = xr[k] * rstd + bias, u = t * sc->f[k];
                yr[k] = b ? u + b->f[k] : u;
            }
            if (want[1]) out[1].f[r] = mean;
            if (want[2]) out[2].f[r] = rstd;
        }
        return MPX_OK;
    }
    int64_t idx[MPX_MAX_RANK] = {0};
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x->f + r * D;
        mpx_acc a;
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t k = 0; k < D; k++) mpx_acc_add(&a, xr[k]);
        float mean = mpx_acc_result(&a) / (float)D;
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t k = 0; k < D; k++) {
            float d = xr[k] - mean;
            mpx_acc_add(&a, d * d);
        }
        float inv = 1.0f / sqrtf(mpx_acc_result(&a) / (float)D + eps);
        if (want[1]) out[1].f[r] = mean;
        if (want[2]) out[2].f[r] = inv;
        for (int64_t k = 0; k < D; k++) {
            int64_t so = 0, bo = 0;
            for (int i = 0; i < x->rank; i++) {
                so += idx[i] * ss[i];
                bo += idx[i] * bs[i];
            }
            float y = (xr[k] - mean) * inv * sc->f[so];
            out[0].f[r * D + k] = b ? y + b->f[bo] : y;
            for (int i = x->rank - 1; i >= 0; i--) { /* odometer over X */
                if (++idx[i] < x->dims[i]) break;
                idx[i] = 0;
            }
        }
    }
    return MPX_OK;
}

/* ---- InstanceNormalization ----------------------------------------------------------- */

/* InstanceNormalization's inputs and shape checks; *S: the plane's size. */
static mpx_status in_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                           const mpx_value **xp, const mpx_value **scp, const mpx_value **bp, int64_t *Sp) {
    const mpx_value *x, *sc, *b;
    char s1[160], s2[160], s3[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "scale", f64, &sc);
    if (!st) st = kn_values_in(c, in, n_in, 2, "B", f64, &b);
    if (st) return st;
    if (x->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X has shape %s; N x C x D1 x ... (rank 3 or more) expected",
                                kn_shape(x, s1));
    int64_t N = x->dims[0], C = x->dims[1];
    if (sc->rank != 1 || sc->dims[0] != C || b->rank != 1 || b->dims[0] != C)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "scale %s and B %s must hold one value per channel of X %s",
                                kn_shape(sc, s1), kn_shape(b, s2), kn_shape(x, s3));
    *xp = x, *scp = sc, *bp = b, *Sp = C && N ? x->n / (N * C) : 0;
    return MPX_OK;
}

/* One plane's sum of its S terms (sq: of (x - mean)^2, the difference and
 * the square each rounded) as the mpx_acc fp32 sum adds them: blocks of
 * MPX_ACC_FP32_BLOCK summed from +0, each added in order to the running sum
 * from +0, a partial last block too. IN_LANES blocks at a time are summed
 * side by side, each lane its block's additions in order, so the same bits.
 * Why: one chain of dependent additions through mpx_acc_add was about 7 ns
 * an element; a GroupNorm exported as InstanceNormalization over 32 planes
 * of 16384 took 3.8 ms where ONNX Runtime takes 0.4 (AMD EPYC Zen 3). */
enum { IN_LANES = 8, IN_PAR_MIN = 1 << 15 };

MPX_K_CLONES("avx512f", "avx2", "default")
static float in_plane_sum(const float *x, int64_t S, bool sq, float mean) {
    enum { B = MPX_ACC_FP32_BLOCK };
    const int64_t nfull = S / B;
    float s = 0.0f;
    int64_t b = 0;
    for (; b + IN_LANES <= nfull; b += IN_LANES) {
        float blk[IN_LANES] = {0};
        const float *xb = x + b * B;
        for (int64_t k = 0; k < B; k++)
            for (int i = 0; i < IN_LANES; i++) {
                const float v = xb[i * B + k];
                if (sq) {
                    const float d = v - mean;
                    blk[i] += d * d;
                } else {
                    blk[i] += v;
                }
            }
        for (int i = 0; i < IN_LANES; i++) s += blk[i];
    }
    for (; b * B < S; b++) { /* the blocks left, the last perhaps partial */
        const int64_t n = S - b * B < B ? S - b * B : B;
        float blk = 0.0f;
        for (int64_t k = 0; k < n; k++) {
            const float v = x[b * B + k];
            if (sq) {
                const float d = v - mean;
                blk += d * d;
            } else {
                blk += v;
            }
        }
        s += blk;
    }
    return s;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* in_plane_sum on AVX-512 or AVX2: the blocks as rows of rows_sums16/8
 * (sq_sums_*: each block's sum from +0 in its lane, plain with mean NULL),
 * each block's sum then added in order to the running sum; a block sum is
 * 0 + b there, which is b for every b but -0, and adding +0 rather than -0
 * to a running sum that starts at +0 and is never -0 changes nothing (as
 * sm_long_sum). */
typedef void (*in_sums_fn)(const float *, int64_t, int, const float *, float *);
static float in_plane_sum_vec(const float *x, int64_t S, bool sq, float mean, in_sums_fn sums) {
    enum { B = MPX_ACC_FP32_BLOCK, L = 16 };
    float m[L], bs[L], s = 0.0f;
    for (int i = 0; i < L; i++) m[i] = mean;
    const int64_t nfull = S / B;
    for (int64_t g = 0; g < nfull; g += L) {
        const int n = (int)(nfull - g < L ? nfull - g : L);
        sums(x + g * B, B, n, sq ? m : NULL, bs);
        for (int i = 0; i < n; i++) s += bs[i];
    }
    if (nfull * B < S) {
        sums(x + nfull * B, S - nfull * B, 1, sq ? m : NULL, bs);
        s += bs[0];
    }
    return s;
}
#endif

typedef struct in_job {
    ke_vec vec;
    const mpx_kctx *c;
    const float *x, *sc, *b;
    float *y;
    int64_t C, S;
    float eps;
} in_job;

/* Plane p (batch item, channel): its mean and variance through mpx_acc in
 * index order (in_plane_sum where the accumulation is fp32), then y. */
static void in_plane(void *ctx, int tid, long p) {
    (void)tid;
    const in_job *j = ctx;
    const int64_t S = j->S, ch = p % j->C;
    const float *xp = j->x + p * S;
    float *yp = j->y + p * S;
    float mean, var;
    if (mpx_acc_is_fp32(&j->c->acc)) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (j->vec == KE_VEC_AVX512 || j->vec == KE_VEC_AVX2) {
            const in_sums_fn f = j->vec == KE_VEC_AVX512 ? sq_sums_avx512 : sq_sums_avx2;
            mean = in_plane_sum_vec(xp, S, false, 0.0f, f) / (float)S;
            var = in_plane_sum_vec(xp, S, true, mean, f);
        } else
#endif
        {
            mean = in_plane_sum(xp, S, false, 0.0f) / (float)S;
            var = in_plane_sum(xp, S, true, mean);
        }
    } else {
        mpx_acc a;
        mpx_acc_init(&a, &j->c->acc, 0.0f);
        for (int64_t k = 0; k < S; k++) mpx_acc_add(&a, xp[k]);
        mean = mpx_acc_result(&a) / (float)S;
        mpx_acc_init(&a, &j->c->acc, 0.0f);
        for (int64_t k = 0; k < S; k++) {
            float d = xp[k] - mean;
            mpx_acc_add(&a, d * d);
        }
        var = mpx_acc_result(&a);
    }
    const float den = sqrtf(var / (float)S + j->eps), sc = j->sc[ch], b = j->b[ch];
    for (int64_t k = 0; k < S; k++) yp[k] = sc * (xp[k] - mean) / den + b;
}

mpx_status mpx_k_instance_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                        mpx_value *out, int n_out) {
    const mpx_value *x, *sc, *b;
    int64_t S;
    mpx_status st = in_setup(c, in, n_in, n_out, false, &x, &sc, &b, &S);
    if (st) return st;
    const int64_t N = x->dims[0], C = x->dims[1];
    float eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    if (S == 0) return MPX_OK;
    in_job j = {.vec = ke_vec_now(), .c = c, .x = x->f, .sc = sc->f, .b = b->f, .y = out[0].f, .C = C, .S = S, .eps = eps};
    mpx_k_parallel((long)(N * C), x->n >= IN_PAR_MIN ? kg_threads() : 1, in_plane, &j);
    return MPX_OK;
}

/* ---- MeanVarianceNormalization ------------------------------------------------------- */

/* (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes` (default 0, 2, 3):
 * ONNX's function body and ORT's kernel alike, variance from the mean of
 * squares and epsilon added to the deviation, not the variance. A float64
 * one (f64) sums in index order in double; its epsilon is the function
 * body's float constant 1e-9f cast to double, as its CastLike does. */
static mpx_status mvn_run(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                          bool f64) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (st) return st;
    static const int64_t dflt[] = {0, 2, 3};
    const int64_t *ax = dflt;
    int n_ax = mpx_node_attr_ints(c->node, "axes", &ax);
    if (!mpx_node_attr(c->node, "axes")) {
        ax = dflt;
        n_ax = 3;
    }
    bool red[MPX_MAX_RANK] = {false};
    for (int i = 0; i < n_ax; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + x->rank : ax[i];
        if (a < 0 || a >= x->rank)
            return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is out of range for input X of rank %d",
                                    (long long)ax[i], x->rank);
        red[a] = true;
    }
    if ((st = mpx_k_alloc(c, &out[0], f64 ? MPX_DT_DOUBLE : x->dtype, x->rank, x->dims))) return st;
    /* kept: the index space of the axes not reduced; S values per group */
    int64_t groups = 1, S = 1;
    for (int i = 0; i < x->rank; i++) {
        if (red[i]) S *= x->dims[i];
        else groups *= x->dims[i];
    }
    if (!x->n) return MPX_OK;
    int64_t stride[MPX_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= x->dims[i];
    }
    int64_t *offs = malloc((size_t)S * sizeof *offs);
    if (!offs) {
        mpx_value_free(&out[0]); /* a failed kernel leaves its slot absent */
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    /* the element offsets of one group (reduced axes), in row-major order */
    int64_t idx[MPX_MAX_RANK] = {0};
    for (int64_t k = 0; k < S; k++) {
        int64_t o = 0;
        for (int i = 0; i < x->rank; i++) o += red[i] ? idx[i] * stride[i] : 0;
        offs[k] = o;
        for (int i = x->rank - 1; i >= 0; i--) {
            if (!red[i]) continue;
            if (++idx[i] < x->dims[i]) break;
            idx[i] = 0;
        }
    }
    int64_t gidx[MPX_MAX_RANK] = {0};
    for (int64_t gp = 0; gp < groups; gp++) {
        int64_t base = 0;
        for (int i = 0; i < x->rank; i++) base += red[i] ? 0 : gidx[i] * stride[i];
        if (f64) {
            double sd = 0, qd = 0;
            for (int64_t k = 0; k < S; k++) {
                const double v = x->d[base + offs[k]];
                sd += v;
                qd += v * v;
            }
            const double mean = sd / (double)S, var = qd / (double)S - mean * mean;
            const double den = sqrt(var > 0 ? var : 0) + (double)1e-9f;
            for (int64_t k = 0; k < S; k++) out[0].d[base + offs[k]] = (x->d[base + offs[k]] - mean) / den;
        } else {
            mpx_acc a, q;
            mpx_acc_init(&a, &c->acc, 0.0f);
            mpx_acc_init(&q, &c->acc, 0.0f);
            for (int64_t k = 0; k < S; k++) {
                float v = x->f[base + offs[k]];
                mpx_acc_add(&a, v);
                mpx_acc_add(&q, v * v);
            }
            float mean = mpx_acc_result(&a) / (float)S, msq = mpx_acc_result(&q) / (float)S;
            float var = msq - mean * mean;
            float den = sqrtf(var > 0 ? var : 0) + 1e-9f;
            for (int64_t k = 0; k < S; k++) out[0].f[base + offs[k]] = (x->f[base + offs[k]] - mean) / den;
        }
        for (int i = x->rank - 1; i >= 0; i--) {
            if (red[i]) continue;
            if (++gidx[i] < x->dims[i]) break;
            gidx[i] = 0;
        }
    }
    free(offs);
    return MPX_OK;
}

mpx_status mpx_k_mean_variance_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                             mpx_value *out, int n_out) {
    return mvn_run(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_mean_variance_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                                 mpx_value *out, int n_out) {
    return mvn_run(c, in, n_in, out, n_out, true);
}

/* ---- LpNormalization, RMSNormalization, GroupNormalization ----------------------------- */

/* x's elements as rows of `len` values along axis: n_rows rows, the
 * elements of a row `stride` apart (the axis's stride). */
static void axis_rows(const mpx_value *x, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    *outer = 1, *inner = 1, *len = x->rank ? x->dims[axis] : 1;
    for (int i = 0; i < axis; i++) *outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++) *inner *= x->dims[i];
}

/* LpNormalization's input, p and rows along axis. */
static mpx_status lp_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                           const mpx_value **xp, int64_t *pp, int64_t *outer, int64_t *len, int64_t *inner) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", f64, &x);
    if (st) return st;
    int64_t p = mpx_node_attr_int(c->node, "p", 2), ax = mpx_node_attr_int(c->node, "axis", -1);
    if (p != 1 && p != 2) return mpx_kernel_error(c, MPX_E_INVALID, "p %lld is not 1 or 2", (long long)p);
    int r = x->rank ? x->rank : 1;
    if (ax < -r || ax >= r) return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    if (ax < 0) ax += r;
    axis_rows(x, (int)ax, outer, len, inner);
    *xp = x, *pp = p;
    return MPX_OK;
}

/* x / ||x||_p along axis, p 1 or 2 (ORT's LpNorm: a zero norm gives 0). */
mpx_status mpx_k_lp_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                  int n_out) {
    const mpx_value *x;
    int64_t p, outer, len, inner;
    mpx_status st = lp_setup(c, in, n_in, n_out, false, &x, &p, &outer, &len, &inner);
    if (st || (st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xr = x->f + o * len * inner + i;
            float *yr = out[0].f + o * len * inner + i;
            mpx_acc a;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t k = 0; k < len; k++) mpx_acc_add(&a, p == 1 ? fabsf(xr[k * inner]) : xr[k * inner] * xr[k * inner]);
            float norm = p == 1 ? mpx_acc_result(&a) : sqrtf(mpx_acc_result(&a));
            for (int64_t k = 0; k < len; k++) yr[k * inner] = norm != 0.0f ? xr[k * inner] / norm : 0.0f;
        }
    return MPX_OK;
}

/* X / sqrt(mean(X^2 over axis..end) + epsilon) * scale (opset 23; scale
 * broadcasts to X's trailing dims). A float64 one (f64) sums the squares in
 * index order in double whatever stash_type says, as LayerNormalization's
 * float64 kernel and ONNX Runtime's double kernels do; epsilon is the
 * attribute's float value. */
static mpx_status rms_run(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                          bool f64) {
    const mpx_value *x, *sc;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "scale", f64, &sc);
    if (st) return st;
    int64_t ax = mpx_node_attr_int(c->node, "axis", -1);
    float eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    if (x->rank < 1 || ax < -x->rank || ax >= x->rank)
        return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is out of range for X %s", (long long)ax, kn_shape(x, s1));
    if (ax < 0) ax += x->rank;
    int64_t rows = 1, len = 1;
    for (int i = 0; i < x->rank; i++) {
        if (i < ax) rows *= x->dims[i];
        else len *= x->dims[i];
    }
    /* scale: the normalised dims' shape, or a suffix of it (broadcast) */
    int64_t sn = sc->n;
    if (sn < 1 || len % sn != 0 || sc->rank > x->rank - ax)
        return mpx_kernel_error(c, MPX_E_SHAPE, "scale %s does not broadcast to X %s from axis %lld", kn_shape(sc, s1),
                                kn_shape(x, s2), (long long)ax);
    const mpx_dtype dt = f64 ? MPX_DT_DOUBLE : x->dtype;
    if ((st = mpx_k_alloc(c, &out[0], dt, x->rank, x->dims))) return st;
    /* ORT's SimplifiedLayerNormalization may also output 1/rms per row. */
    float *inv_out = NULL;
    double *inv_out_d = NULL;
    if (kn_wants_out(c, n_out, 1)) {
        int64_t d[MPX_MAX_RANK];
        for (int i = 0; i < x->rank; i++) d[i] = i < ax ? x->dims[i] : 1;
        if ((st = mpx_k_alloc(c, &out[1], dt, x->rank, d))) {
            mpx_value_free(&out[0]);
            return st;
        }
        inv_out = out[1].f, inv_out_d = out[1].d;
    }
    for (int64_t rw = 0; f64 && rw < rows; rw++) {
        const double *xr = x->d + rw * len;
        double *yr = out[0].d + rw * len, q = 0;
        for (int64_t k = 0; k < len; k++) q += xr[k] * xr[k];
        const double inv = 1.0 / sqrt(q / (double)len + (double)eps);
        for (int64_t k = 0; k < len; k++) yr[k] = xr[k] * inv * sc->d[k % sn];
        if (inv_out_d) inv_out_d[rw] = inv;
    }
    for (int64_t rw = 0; !f64 && rw < rows; rw++) {
        const float *xr = x->f + rw * len;
        float *yr = out[0].f + rw * len;
        mpx_acc a;
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t k = 0; k < len; k++) mpx_acc_add(&a, xr[k] * xr[k]);
        float inv = 1.0f / sqrtf(mpx_acc_result(&a) / (float)len + eps);
        for (int64_t k = 0; k < len; k++) yr[k] = xr[k] * inv * sc->f[k % sn];
        if (inv_out) inv_out[rw] = inv;
    }
    return MPX_OK;
}

mpx_status mpx_k_rms_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                   int n_out) {
    return rms_run(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_rms_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                       int n_out) {
    return rms_run(c, in, n_in, out, n_out, true);
}

/* GroupNormalization's inputs and checks: G groups, planes of S values,
 * scale and bias per channel (opset 21) or per group. */
typedef struct gn_args {
    const mpx_value *x, *sc, *b;
    int64_t G, S;
    bool per_channel;
} gn_args;

static mpx_status gn_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64, gn_args *a) {
    const mpx_value *x, *sc, *b;
    bool *per_channel = &a->per_channel;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "scale", f64, &sc);
    if (!st) st = kn_values_in(c, in, n_in, 2, "bias", f64, &b);
    if (st) return st;
    if (x->rank < 2) return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; N x C x ... expected", kn_shape(x, s1));
    int64_t G = mpx_node_attr_int(c->node, "num_groups", -1), N = x->dims[0], C = x->dims[1];
    if (G < 1 || C % G != 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "num_groups %lld does not divide the %lld channels", (long long)G,
                                (long long)C);
    *per_channel = kn_opset(c) >= 21;
    int64_t want = *per_channel ? C : G;
    if (sc->n != want || b->n != want)
        return mpx_kernel_error(c, MPX_E_SHAPE, "scale %s and bias %s must hold %lld values (one per %s)", kn_shape(sc, s1),
                                kn_shape(b, s2), (long long)want, *per_channel ? "channel" : "group");
    a->x = x, a->sc = sc, a->b = b, a->G = G, a->S = C && N ? x->n / (N * C) : 0;
    return MPX_OK;
}

/* (X - mean) / sqrt(var + epsilon) * scale + bias over groups of channels;
 * scale and bias per group before opset 21, per channel from 21. */
mpx_status mpx_k_group_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                     int n_out) {
    gn_args ga;
    mpx_status st = gn_setup(c, in, n_in, n_out, false, &ga);
    if (st) return st;
    const mpx_value *x = ga.x, *sc = ga.sc, *b = ga.b;
    const int64_t G = ga.G, S = ga.S;
    const bool per_channel = ga.per_channel;
    const int64_t N = x->dims[0], C = x->dims[1], per = C / G * S;
    float eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            const float *xg = x->f + (n * C + g * (C / G)) * S;
            float *yg = out[0].f + (n * C + g * (C / G)) * S;
            mpx_acc a;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t k = 0; k < per; k++) mpx_acc_add(&a, xg[k]);
            float mean = mpx_acc_result(&a) / (float)per;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t k = 0; k < per; k++) mpx_acc_add(&a, (xg[k] - mean) * (xg[k] - mean));
            float den = sqrtf(mpx_acc_result(&a) / (float)per + eps);
            for (int64_t k = 0; k < per; k++) {
                int64_t ch = g * (C / G) + k / S, q = per_channel ? ch : g;
                yg[k] = (xg[k] - mean) / den * sc->f[q] + b->f[q];
            }
        }
    return MPX_OK;
}


/* ---- float64 (kern_f64.c's table) ---------------------------------------------------- */

/* The normalisations of float64 values, in double, with the fp32 kernels'
 * checks and formulas (two-pass means and variances summed in index order);
 * eps is the attribute's float value, as ONNX Runtime's double kernels read
 * it. BatchNormalization: inference only. */
mpx_status mpx_k_batch_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                         int n_out) {
    bn_args a;
    mpx_status st = bn_setup(c, in, n_in, n_out, true, &a);
    if (st) return st;
    const mpx_value *x = a.v[0];
    /* training (spatial only: bn_setup refuses the rest): the batch's mean
     * and population variance per channel over N and the spatial dims, in
     * double in index order, as the fp32 kernel sums them */
    const double *mean = a.v[3]->d, *var = a.v[4]->d;
    double *bm = NULL, *bv = NULL;
    if (a.training) {
        if ((st = kn_scratch(c, (size_t)(2 * a.C), sizeof *bm, (void **)&bm))) return st;
        bv = bm + a.C;
        const double cnt = (double)(a.N * a.S);
        for (int64_t ch = 0; ch < a.C; ch++) {
            double s = 0, q = 0;
            for (int64_t n = 0; n < a.N; n++)
                for (int64_t k = 0; k < a.S; k++) s += x->d[(n * a.C + ch) * a.S + k];
            const double m = s / cnt;
            for (int64_t n = 0; n < a.N; n++)
                for (int64_t k = 0; k < a.S; k++) {
                    const double d = x->d[(n * a.C + ch) * a.S + k] - m;
                    q += d * d;
                }
            bm[ch] = m, bv[ch] = q / cnt;
        }
        mean = bm, var = bv;
    }
    bool made[5] = {false};
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims))) goto fail;
    made[0] = true;
    for (int64_t n = 0; n < a.N; n++)
        for (int64_t ch = 0; ch < a.C; ch++)
            for (int64_t k = 0; k < a.S; k++) {
                const int64_t p = a.spatial ? ch : ch * a.S + k, xi = (n * a.C + ch) * a.S + k;
                const double f = 1.0 / sqrt(var[p] + (double)a.eps) * a.v[1]->d[p];
                out[0].d[xi] = x->d[xi] * f + (a.v[2]->d[p] - mean[p] * f);
            }
    if (a.training) { /* the same outputs as the fp32 kernel's, in double */
        const double mo = (double)a.momentum;
        int64_t d1[1] = {a.C};
        for (int i = 1; i < 5 && i < n_out; i++) {
            if (!kn_wants_out(c, n_out, i) || (a.opset >= 14 && i > 2)) continue;
            if ((st = mpx_k_alloc(c, &out[i], MPX_DT_DOUBLE, 1, d1))) goto fail;
            made[i] = true;
            for (int64_t ch = 0; ch < a.C; ch++)
                out[i].d[ch] = i == 1 ? a.v[3]->d[ch] * mo + bm[ch] * (1.0 - mo)
                             : i == 2 ? a.v[4]->d[ch] * mo + bv[ch] * (1.0 - mo)
                             : i == 3 ? bm[ch] : bv[ch];
        }
    }
    free(bm);
    return MPX_OK;
fail:
    free(bm);
    for (int i = 0; i < 5; i++)
        if (made[i]) mpx_value_free(&out[i]);
    return st;
}

/* Mean and the population variance of n values `step` apart. */
static void moments_d(const double *x, int64_t n, int64_t step, double *mean, double *var) {
    double s = 0, q = 0;
    for (int64_t k = 0; k < n; k++) s += x[k * step];
    *mean = s / (double)n;
    for (int64_t k = 0; k < n; k++) q += (x[k * step] - *mean) * (x[k * step] - *mean);
    *var = q / (double)n;
}

mpx_status mpx_k_layer_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                         int n_out) {
    ln_args a;
    mpx_status st = ln_setup(c, in, n_in, n_out, true, out, &a);
    if (st) return st;
    const mpx_value *x = a.x;
    int64_t idx[MPX_MAX_RANK] = {0};
    for (int64_t r = 0; r < a.rows; r++) {
        const double *xr = x->d + r * a.D;
        double mean, var;
        moments_d(xr, a.D, 1, &mean, &var);
        const double inv = 1.0 / sqrt(var + (double)a.eps);
        for (int i = 1; i < 3; i++)
            if (a.want[i]) {
                const double s = i == 1 ? mean : inv;
                if (out[i].d) out[i].d[r] = s;
                else out[i].f[r] = (float)s;
            }
        for (int64_t k = 0; k < a.D; k++) {
            int64_t so = 0, bo = 0;
            for (int i = 0; i < x->rank; i++) so += idx[i] * a.ss[i], bo += idx[i] * a.bs[i];
            const double y = (xr[k] - mean) * inv * a.sc->d[so];
            out[0].d[r * a.D + k] = a.b ? y + a.b->d[bo] : y;
            for (int i = x->rank - 1; i >= 0; i--) { /* odometer over X */
                if (++idx[i] < x->dims[i]) break;
                idx[i] = 0;
            }
        }
    }
    return MPX_OK;
}

mpx_status mpx_k_instance_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                            int n_out) {
    const mpx_value *x, *sc, *b;
    int64_t S;
    mpx_status st = in_setup(c, in, n_in, n_out, true, &x, &sc, &b, &S);
    if (st || (st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims))) return st;
    const double eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    const int64_t C = x->dims[1];
    for (int64_t p = 0; p < x->dims[0] * C; p++) {
        const double *xp = x->d + p * S;
        double mean, var;
        moments_d(xp, S, 1, &mean, &var);
        const double den = sqrt(var + eps);
        for (int64_t k = 0; k < S; k++) out[0].d[p * S + k] = sc->d[p % C] * (xp[k] - mean) / den + b->d[p % C];
    }
    return MPX_OK;
}

mpx_status mpx_k_lp_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                      int n_out) {
    const mpx_value *x;
    int64_t p, outer, len, inner;
    mpx_status st = lp_setup(c, in, n_in, n_out, true, &x, &p, &outer, &len, &inner);
    if (st || (st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims))) return st;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *xr = x->d + o * len * inner + i;
            double *yr = out[0].d + o * len * inner + i, s = 0;
            for (int64_t k = 0; k < len; k++) s += p == 1 ? fabs(xr[k * inner]) : xr[k * inner] * xr[k * inner];
            const double norm = p == 1 ? s : sqrt(s);
            for (int64_t k = 0; k < len; k++) yr[k * inner] = norm != 0.0 ? xr[k * inner] / norm : 0.0;
        }
    return MPX_OK;
}

mpx_status mpx_k_group_normalization_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                         int n_out) {
    gn_args a;
    mpx_status st = gn_setup(c, in, n_in, n_out, true, &a);
    if (st || (st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, a.x->rank, a.x->dims))) return st;
    const mpx_value *x = a.x;
    const double eps = mpx_node_attr_float(c->node, "epsilon", 1e-5f);
    const int64_t N = x->dims[0], C = x->dims[1], cg = C / a.G, S = a.S, per = cg * S;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < a.G; g++) {
            const double *xg = x->d + (n * C + g * cg) * S;
            double mean, var;
            moments_d(xg, per, 1, &mean, &var);
            const double den = sqrt(var + eps);
            for (int64_t k = 0; k < per; k++) {
                const int64_t q = a.per_channel ? g * cg + k / S : g;
                out[0].d[(n * C + g * cg) * S + k] = (xg[k] - mean) / den * a.sc->d[q] + a.b->d[q];
            }
        }
    return MPX_OK;
}

/* ---- LRN ----------------------------------------------------------------------------- */

/* LRN's checks and window, shared by the fp32 and float64 kernels: channels
 * c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2), clipped. */
typedef struct lrn_args {
    const mpx_value *x;
    float alpha, beta, bias;
    int64_t size, N, C, S, before, after;
} lrn_args;

static mpx_status lrn_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                            lrn_args *a) {
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &a->x);
    if (st) return st;
    const mpx_value *x = a->x;
    if (x->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X has shape %s; N x C x D1 x ... (rank 3 or more) expected",
                                kn_shape(x, s1));
    a->size = mpx_node_attr_int(c->node, "size", 0);
    if (a->size < 1 || a->size > KN_ATTR_MAX)
        return mpx_kernel_error(c, MPX_E_INVALID, "attribute size (a positive count) is %s",
                                mpx_node_attr(c->node, "size") ? "out of range" : "missing");
    a->alpha = mpx_node_attr_float(c->node, "alpha", 1e-4f);
    a->beta = mpx_node_attr_float(c->node, "beta", 0.75f);
    a->bias = mpx_node_attr_float(c->node, "bias", 1.0f);
    a->N = x->dims[0], a->C = x->dims[1], a->S = a->N && a->C ? x->n / (a->N * a->C) : 0;
    a->before = (a->size - 1) / 2, a->after = a->size - 1 - a->before;
    return MPX_OK;
}

static int64_t lrn_lo(const lrn_args *a, int64_t ch) { return ch - a->before < 0 ? 0 : ch - a->before; }
static int64_t lrn_hi(const lrn_args *a, int64_t ch) { return ch + a->after > a->C - 1 ? a->C - 1 : ch + a->after; }

mpx_status mpx_k_lrn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                     int n_out) {
    lrn_args la;
    mpx_status st = lrn_setup(c, in, n_in, n_out, false, &la);
    if (st) return st;
    const mpx_value *x = la.x;
    const float a_n = la.alpha / (float)la.size;
    const int64_t N = la.N, C = la.C, S = la.S;
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            const int64_t lo = lrn_lo(&la, ch), hi = lrn_hi(&la, ch);
            for (int64_t k = 0; k < S; k++) {
                mpx_acc a;
                mpx_acc_init(&a, &c->acc, 0.0f);
                for (int64_t i = lo; i <= hi; i++) {
                    float v = x->f[(n * C + i) * S + k];
                    mpx_acc_add(&a, v * v);
                }
                int64_t xi = (n * C + ch) * S + k;
                out[0].f[xi] = x->f[xi] / powf(la.bias + a_n * mpx_acc_result(&a), la.beta);
            }
        }
    return MPX_OK;
}

/* float64: the same window, the squares summed in channel order in double;
 * alpha, beta and bias are the attributes' float values. */
mpx_status mpx_k_lrn_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    lrn_args la;
    mpx_status st = lrn_setup(c, in, n_in, n_out, true, &la);
    if (st) return st;
    const mpx_value *x = la.x;
    const double a_n = (double)la.alpha / (double)la.size;
    const int64_t N = la.N, C = la.C, S = la.S;
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, x->dims))) return st;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            const int64_t lo = lrn_lo(&la, ch), hi = lrn_hi(&la, ch);
            for (int64_t k = 0; k < S; k++) {
                double q = 0;
                for (int64_t i = lo; i <= hi; i++) q += x->d[(n * C + i) * S + k] * x->d[(n * C + i) * S + k];
                const int64_t xi = (n * C + ch) * S + k;
                out[0].d[xi] = x->d[xi] / pow((double)la.bias + a_n * q, (double)la.beta);
            }
        }
    return MPX_OK;
}

/* ---- Softmax, LogSoftmax, Hardmax ----------------------------------------------------- */

typedef enum { SM_SOFT, SM_LOG, SM_HARD } sm_form;

typedef struct sm_job {
    const mpx_kctx *c;
    const float *x;
    float *y;
    int64_t D, inner;
    sm_form form;
    ke_vec vec;   /* the exponentials' and sm_rows' sums' vector form */
    int64_t rows; /* slices (sm_rows) */
    int per;      /* slices an item (sm_rows) */
} sm_job;

/* One slice (row r = o * inner + i): its largest value m, e_k = exp(x_k - m)
 * (ke_exp_neg: the float nearest, the same on every build; a contiguous
 * slice goes through kern_elem.c's vector loop), their sum in order in the
 * node's accumulation, then y_k = e_k / sum (LogSoftmax: x_k - m - log sum). */
static void sm_row(void *ctx, int tid, long r) {
    (void)tid;
    const sm_job *j = ctx;
    const int64_t D = j->D, inner = j->inner, o = r / inner, i = r % inner;
    const float *xp = j->x + o * D * inner + i;
    float *yp = j->y + o * D * inner + i;
    float m = xp[0];
    int64_t at = 0;
    for (int64_t k = 1; k < D; k++)
        if (xp[k * inner] > m) m = xp[k * inner], at = k;
    if (j->form == SM_HARD) {
        for (int64_t k = 0; k < D; k++) yp[k * inner] = k == at ? 1.0f : 0.0f;
        return;
    }
    if (inner == 1) ke_exp_neg_map(xp, m, yp, D, j->vec);
    else
        for (int64_t k = 0; k < D; k++) yp[k * inner] = ke_exp_neg(xp[k * inner] - m);
    mpx_acc a;
    mpx_acc_init(&a, &j->c->acc, 0.0f);
    for (int64_t k = 0; k < D; k++) mpx_acc_add(&a, yp[k * inner]);
    float s = mpx_acc_result(&a);
    if (j->form == SM_LOG) {
        float ls = logf(s);
        for (int64_t k = 0; k < D; k++) yp[k * inner] = (xp[k * inner] - m) - ls;
    } else {
        for (int64_t k = 0; k < D; k++) yp[k * inner] /= s;
    }
}

/* max over x[0..D) as `m = x[0]; for k: if (x[k] > m) m = x[k]` gives it,
 * 16 lanes side by side (that loop is one compare and branch an element:
 * half of rec's 6625-class Softmax). Each lane starts at x[0] and takes
 * only strictly greater values, so a NaN is never taken and a NaN x[0]
 * stays, as in the loop; the lanes see every block of 16 from x[0] and the
 * last 16 values (again, where D is not a multiple of 16: taking a value
 * twice changes no largest), then halve to one. Their largest is the
 * loop's value, except that a largest of zero may have the other sign
 * (which zero the loop meets first): then the loop decides. Why the last
 * block and the halving: a scalar tail and a lane-by-lane sweep are some
 * 30 dependent compares a row, half of row_max's time on rows of 64 (the
 * BERT-style encoder's attention). */
static inline __attribute__((always_inline)) float row_max_seq(const float *x, int64_t D) {
    float r = x[0];
    for (int64_t k = 1; k < D; k++) r = x[k] > r ? x[k] : r;
    return r;
}

MPX_K_CLONES("avx512f", "avx2", "default")
static float row_max(const float *x, int64_t D) {
    enum { L = 16 };
    float r = x[0];
    if (D >= L) {
        float m[L];
        for (int l = 0; l < L; l++) m[l] = x[0];
        int64_t k = 0;
        for (; k + L <= D; k += L)
            for (int l = 0; l < L; l++) m[l] = x[k + l] > m[l] ? x[k + l] : m[l];
        if (k < D)
            for (int l = 0; l < L; l++) m[l] = x[D - L + l] > m[l] ? x[D - L + l] : m[l];
        for (int h = L / 2; h >= 1; h /= 2)
            for (int l = 0; l < h; l++) m[l] = m[l + h] > m[l] ? m[l + h] : m[l];
        r = m[0];
    } else {
        r = row_max_seq(x, D);
    }
    return r == 0.0f ? row_max_seq(x, D) : r;
}

/* Contiguous slices with fp32 sums, SM_ROWS an item: each slice's steps
 * are sm_row's, and the sums run side by side, each the mpx_acc fp32 sum
 * term by term (blocks of MPX_ACC_FP32_BLOCK from 0 added to the running
 * sum, a partial last block too), so the same bits. Why: one slice's sum
 * is a chain of dependent additions, 4 cycles each (ViT-B/16's attention:
 * 28,000 slices of 197 a forward). Each block of the slices' exponentials
 * is copied transposed first (et[k][i]: the slices' k-th values side by
 * side), so that the chains are vector lanes, each lane its slice's
 * additions in order, four vectors of independent chains at a time (GCC
 * leaves the strided loop over eight slices scalar). Slices longer than
 * SM_LONG go one an item with their blocks as the lanes (sm_long_sum) on
 * the AVX-512 and AVX2 builds, 8 an item in that strided loop on the
 * portable one (for rec's 40 slices of 6625 the copies cost more than they
 * saved; 32 such slices would also outgrow the L2 cache and leave two
 * items for two threads). y
 * may be x (the executor's dying input, softmax()): each value is read
 * before its place is written. */
enum { SM_ROWS = 32, SM_LONG = 1024 };
/* Values of a Softmax from which its slices go to the kernel threads. A
 * value costs some 1-2 ns on one thread (the exponential, the maximum, the
 * sum and the division), twenty times an Add's, so the elementwise ops'
 * threshold (1 << 16, kern_binary.c) kept BERT-style's Softmax nodes (12
 * heads x 64 x 64 = 49,152 values) on one thread: 2.6x ONNX Runtime's time
 * on two (AMD Zen 3). From 8,192 values (about 10 us of work) the second
 * thread's hand-off costs less than the half it takes. */
enum { SM_PAR_MIN = 1 << 13 };

#if defined(__x86_64__) && defined(__GNUC__)
/* The fp32 sum of one slice longer than SM_LONG with its blocks of
 * MPX_ACC_FP32_BLOCK as the lanes of sums (AVX-512 or AVX2: sm_sums_avx512
 * or _avx2 on the block's values as if each were a slice of its own): the
 * blocks' sums do not depend on one another, only the running sum does,
 * which takes them in order here; the last, partial block as a slice of
 * its own. Each block sum from +0 is the definition's (each lane's additions
 * in order), and 0 + b is b for every block sum b (never -0: sums from +0
 * of exponentials, which are not -0), so the running sum's additions are
 * the definition's. Why: the strided loop over 8 slices was the most of
 * rec's 40 slices of 6625 classes (and held 8 slices, 212 KB, in the L2
 * cache between the passes; now one slice an item). */
static float sm_long_sum(const float *y, int64_t D, void (*sums)(const float *, int64_t, int, float *)) {
    enum { B = MPX_ACC_FP32_BLOCK, L = 16 };
    const int64_t nfull = D / B;
    float s = 0.0f, bs[L];
    for (int64_t g = 0; g < nfull; g += L) {
        const int n = (int)(nfull - g < L ? nfull - g : L);
        sums(y + g * B, B, n, bs);
        for (int i = 0; i < n; i++) s += bs[i];
    }
    if (nfull * B < D) {
        sums(y + nfull * B, D - nfull * B, 1, bs);
        s += bs[0];
    }
    return s;
}

/* row_max's lanes and steps on AVX-512F, in one register (max_ps(a, b)
 * is `a > b ? a : b`, lane by lane, as row_max's comparisons), the halving
 * by shuffles: GCC's clone of row_max went through memory for it, a third
 * of Softmax's exponentials' time on rows of 64. */
__attribute__((target("avx512f"))) static float row_max_avx512(const float *x, int64_t D) {
    if (D < 16) return row_max(x, D);
    __m512 m = _mm512_set1_ps(x[0]);
    int64_t k = 0;
    for (; k + 16 <= D; k += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + k), m);
    if (k < D) m = _mm512_max_ps(_mm512_loadu_ps(x + D - 16), m);
    m = _mm512_max_ps(_mm512_shuffle_f32x4(m, m, 0xee), m); /* lanes 0-7 and 8-15 */
    m = _mm512_max_ps(_mm512_shuffle_f32x4(m, m, 0x01), m); /* 0-3 and 4-7 */
    m = _mm512_max_ps(_mm512_permute_ps(m, 0xee), m);       /* 0-1 and 2-3 */
    m = _mm512_max_ps(_mm512_permute_ps(m, 0x01), m);       /* 0 and 1 */
    const float r = _mm512_cvtss_f32(m);
    return r == 0.0f ? row_max_seq(x, D) : r;
}

/* The same on AVX2, two registers of 8 lanes (two chains of maxima), the
 * last 8 values again where D is not a multiple of 8: each lane starts at
 * x[0] and takes only strictly greater values, so its largest is row_max's
 * (a NaN x[0] in every lane and kept; otherwise the largest non-NaN value,
 * whatever the lanes' split), and a largest of zero goes to row_max_seq
 * as there. Why: GCC's AVX2 clone of row_max went through memory for its
 * 16 lanes and their halving. */
__attribute__((target("avx2"))) static float row_max_avx2(const float *x, int64_t D) {
    if (D < 8) return row_max_seq(x, D);
    __m256 m0 = _mm256_set1_ps(x[0]), m1 = m0;
    int64_t k = 0;
    for (; k + 16 <= D; k += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + k), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + k + 8), m1);
    }
    if (k + 8 <= D) m0 = _mm256_max_ps(_mm256_loadu_ps(x + k), m0), k += 8;
    if (k < D) m1 = _mm256_max_ps(_mm256_loadu_ps(x + D - 8), m1);
    m0 = _mm256_max_ps(m1, m0);
    __m128 h = _mm_max_ps(_mm256_extractf128_ps(m0, 1), _mm256_castps256_ps128(m0)); /* lanes 0-3 and 4-7 */
    h = _mm_max_ps(_mm_permute_ps(h, 0xee), h);                                        /* 0-1 and 2-3 */
    h = _mm_max_ps(_mm_permute_ps(h, 0x01), h);                                        /* 0 and 1 */
    const float r = _mm_cvtss_f32(h);
    return r == 0.0f ? row_max_seq(x, D) : r;
}
#endif

MPX_K_CLONES("avx512f", "avx2", "default")
static void sm_rows(void *ctx, int tid, long item) {
    (void)tid;
    const sm_job *j = ctx;
    const int64_t D = j->D, r0 = (int64_t)item * j->per;
    const int nr = (int)(j->rows - r0 < j->per ? j->rows - r0 : j->per);
    const float *x = j->x + r0 * D;
    float *y = j->y + r0 * D, m[SM_ROWS], sum[SM_ROWS] = {0};
    /* the largest values of 8 slices, then their exponentials: a slice's
     * largest is a chain of dependent steps (13 maxima and the halving on
     * rows of 197) that all its exponentials wait for; 8 such chains side
     * by side overlap. ViT-B/16's Softmax took 14% less time so (one
     * thread, Zen 5); 8 slices of up to SM_LONG values stay in the L1
     * cache for the second pass. */
    for (int g = 0; g < nr; g += 8) {
        const int ge = nr - g < 8 ? nr : g + 8;
        for (int i = g; i < ge; i++) {
#if defined(__x86_64__) && defined(__GNUC__)
            m[i] = j->vec == KE_VEC_AVX512 ? row_max_avx512(x + i * D, D)
                   : j->vec == KE_VEC_AVX2 ? row_max_avx2(x + i * D, D)
                                           : row_max(x + i * D, D);
#else
            m[i] = row_max(x + i * D, D);
#endif
        }
        for (int i = g; i < ge; i++) ke_exp_neg_map(x + i * D, m[i], y + i * D, D, j->vec);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (D > SM_LONG && j->vec != KE_VEC_NONE)
        for (int i = 0; i < nr; i++) sum[i] = sm_long_sum(y + i * D, D, j->vec == KE_VEC_AVX512 ? sm_sums_avx512 : sm_sums_avx2);
    else if (D <= SM_LONG && j->vec == KE_VEC_AVX512) sm_sums_avx512(y, D, nr, sum);
    else if (D <= SM_LONG && j->vec == KE_VEC_AVX2) sm_sums_avx2(y, D, nr, sum);
    else
#endif
    if (D <= SM_LONG) {
        float et[MPX_ACC_FP32_BLOCK * SM_ROWS];
        for (int64_t k = 0; k < MPX_ACC_FP32_BLOCK; k++) /* lanes past the last slice: zeros, their sums unused */
            for (int i = nr; i < SM_ROWS; i++) et[k * SM_ROWS + i] = 0.0f;
        for (int64_t k0 = 0; k0 < D; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t kn = D - k0 < MPX_ACC_FP32_BLOCK ? D - k0 : MPX_ACC_FP32_BLOCK;
            for (int i = 0; i < nr; i++)
                for (int64_t k = 0; k < kn; k++) et[k * SM_ROWS + i] = y[i * D + k0 + k];
            float blk[SM_ROWS] = {0};
            for (int64_t k = 0; k < kn; k++)
                for (int i = 0; i < SM_ROWS; i++) blk[i] += et[k * SM_ROWS + i];
            for (int i = 0; i < SM_ROWS; i++) sum[i] += blk[i];
        }
    } else {
        float blk[SM_ROWS] = {0};
        int nblk = 0;
        for (int64_t k = 0; k < D; k++) {
            for (int i = 0; i < nr; i++) blk[i] += y[i * D + k];
            if (++nblk == MPX_ACC_FP32_BLOCK) {
                for (int i = 0; i < nr; i++) sum[i] += blk[i], blk[i] = 0.0f;
                nblk = 0;
            }
        }
        for (int i = 0; nblk > 0 && i < nr; i++) sum[i] += blk[i];
    }
    for (int i = 0; i < nr; i++) {
        const float *xp = x + i * D;
        float *yp = y + i * D;
        const float si = sum[i];
        if (j->form == SM_LOG) {
            const float ls = logf(si);
            for (int64_t k = 0; k < D; k++) yp[k] = (xp[k] - m[i]) - ls;
        } else {
            for (int64_t k = 0; k < D; k++) yp[k] /= si;
        }
    }
}

/* The accum option sleef-lanes (MPX_ACC_SLEEF_LANES): one contiguous row
 * as PyTorch 1.13's AVX2 softmax computes it (kern_sleef.c). */
static void sm_sleef_row(void *ctx, int tid, long r) {
    (void)tid;
    const sm_job *j = ctx;
    ke_softmax_sleef_row(j->x + (int64_t)r * j->D, j->y + (int64_t)r * j->D, j->D);
}

/* Whether this build and CPU run kern_sleef.c: an x86-64 build (the file
 * is compiled there alone) on a CPU with AVX2 and FMA. MPX_KERN_PORTABLE=1
 * stands for a CPU without them, as for the other kernels (the refusal's
 * test). */
static bool sleef_lanes_runs(void) {
#if defined(MPX_HAVE_SLEEF_AVX2) && defined(__x86_64__) && defined(__GNUC__)
    return !mpx_env_on("MPX_KERN_PORTABLE") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/* Before opset 13 the input is coerced to 2-D at axis (default 1) and each
 * row of prod(dims[axis:]) values is one softmax; from 13 the softmax runs
 * along the single axis (default -1). NaNs propagate to the whole slice.
 * Hardmax: 1 at the first largest value of the slice, 0 elsewhere (the
 * same slices; a NaN is never larger, as in ORT). */
static mpx_status softmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                          int n_out, sm_form form) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "input", &x);
    if (st) return st;
    bool old = kn_opset(c) < 13;
    int ax;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", old ? 1 : -1), x->rank, 0, &ax)))
        return st;
    int64_t outer = 1, D = 1, inner = 1;
    for (int i = 0; i < x->rank; i++) {
        if (i < ax) outer *= x->dims[i];
        else if (i == ax || old) D *= x->dims[i];
        else inner *= x->dims[i];
    }
    /* Over another axis torch runs its strided kernel, whose steps depend
     * on how its threads split the positions: the option is for the last
     * axis alone, and elsewhere mpx's softmax runs (help accum says so).
     * Without AVX2 torch does not run the kernel it mirrors. */
    const bool sleef = form == SM_SOFT && inner == 1 && (c->acc.flags & MPX_ACC_SLEEF_LANES);
    if (sleef && !sleef_lanes_runs())
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED,
                                "accum sleef-lanes needs an x86-64 CPU with AVX2 and FMA (PyTorch's AVX2 "
                                "softmax and Sleef's expf8_u10, which it mirrors); this CPU or build lacks "
                                "them: a rule `accum Softmax fp32` after it drops the option");
    /* Every value is written, so not cleared first; Softmax but for the
     * sleef-lanes rows may write over its input (the executor offers a
     * dying one, run/exec.c): each slice's values are read before their
     * places are written (LogSoftmax reads x again after: never offered) */
    mpx_kctx own = *c;
    own.dest = NULL;
    if ((st = mpx_k_alloc_raw(form == SM_SOFT && !sleef ? c : &own, &out[0], x->dtype, x->rank, x->dims))) return st;
    if (D == 0) return MPX_OK;
    const long rows = (long)(outer * inner);
    const ke_vec vec = ke_vec_now();
    sm_job j = {c, x->f, out[0].f, D, inner, form, vec, rows, D <= SM_LONG ? SM_ROWS : vec != KE_VEC_NONE ? 1 : 8};
    /* rows are independent: on the kernel threads from SM_PAR_MIN values */
    const int nt = (double)rows * (double)D >= SM_PAR_MIN ? kg_threads() : 1;
    if (sleef)
        mpx_k_parallel(rows, nt, sm_sleef_row, &j);
    else if (inner == 1 && form != SM_HARD && mpx_acc_is_fp32(&c->acc))
        mpx_k_parallel((rows + j.per - 1) / j.per, nt, sm_rows, &j);
    else
        mpx_k_parallel(rows, nt, sm_row, &j);
    return MPX_OK;
}

mpx_status mpx_k_softmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    return softmax(c, in, n_in, out, n_out, SM_SOFT);
}

mpx_status mpx_k_log_softmax(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                             mpx_value *out, int n_out) {
    return softmax(c, in, n_in, out, n_out, SM_LOG);
}

mpx_status mpx_k_hardmax(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return softmax(c, in, n_in, out, n_out, SM_HARD);
}
