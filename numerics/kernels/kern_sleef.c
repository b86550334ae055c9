/* kern_sleef.c - Softmax rows as PyTorch 1.13's AVX2 kernel computes them:
 * the accum option sleef-lanes (MPX_ACC_SLEEF_LANES; kern_norm.c calls it).
 *
 * torch's CPU softmax over the last axis of a bf16 tensor converts the row
 * to fp32 and finds its largest value m; over the first D - D % 8 values,
 * in steps of 8, it takes e = exp(x - m) (x - m in fp32) with Sleef's
 * Sleef_expf8_u10, the library's dispatcher, and adds e lane-wise (element
 * k into lane k mod 8, each lane from +0 in order of k); the 8 lanes are
 * reduced by AVX2's halving tree, lane l plus lane l ^ 4, then l ^ 2, then
 * l ^ 1: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). The last D % 8
 * values take the C library's expf, each added to that sum in order. Every
 * e is then multiplied by the fp32 reciprocal r = 1 / sum, and the product
 * rounded to bf16 (here the executor rounds it to the node's output
 * format). On torch 1.13.1 (Debian) on an AMD Zen 3 CPU this is torch's
 * softmax bit for bit on 9.6 million values of rows of 1 to 1000;
 * dividing by the sum, the lanes added in order or the tail's exp by Sleef
 * each differ in some (docs/fidelity.md).
 *
 * Why Sleef itself: its expf8_u10 is within 1 ulp, not correctly rounded:
 * it differs from the float nearest e^x in about 9% of arguments in
 * [-20, 0] (glibc's expf in 0.06%), and no other form of exp gives its
 * bits. The dispatcher is
 * the function torch calls, so the same library on the same CPU gives the
 * same values. The file is compiled with -mavx2 -mfma (CMakeLists.txt):
 * Sleef's header declares its 256-bit functions only where __AVX__ is
 * defined. kern_norm.c calls it only where the CPU has AVX2 and FMA. */
#include "kern_elem.h"

#include <immintrin.h>
#include <math.h>
#include <sleef.h>

void ke_softmax_sleef_row(const float *x, float *y, int64_t D) {
    /* The largest value, as any order finds it (NaN: the row is NaN either
     * way, through exp(NaN); the sign of a largest zero changes no x - m). */
    float m = x[0];
    for (int64_t k = 1; k < D; k++) m = x[k] > m ? x[k] : m;
    const __m256 vm = _mm256_set1_ps(m);
    const int64_t D8 = D - D % 8;
    __m256 lanes = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k < D8; k += 8) {
        const __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(x + k), vm));
        lanes = _mm256_add_ps(lanes, e);
        _mm256_storeu_ps(y + k, e);
    }
    __m256 t = _mm256_add_ps(lanes, _mm256_permute2f128_ps(lanes, lanes, 1));
    t = _mm256_add_ps(t, _mm256_shuffle_ps(t, t, 0x4E));
    t = _mm256_add_ps(t, _mm256_shuffle_ps(t, t, 0xB1));
    float sum = _mm256_cvtss_f32(t);
    for (; k < D; k++) {
        y[k] = expf(x[k] - m);
        sum += y[k];
    }
    const float r = 1.0f / sum;
    for (k = 0; k < D; k++) y[k] *= r;
}
