/* kern_simd.h - register transposes shared by kernels that move values
 * between rows and vector lanes (kern_norm.c's Softmax sums, kern_data.h's
 * strided copies). Private to kernels/; x86-64 GCC and Clang only, each
 * function compiled for its instructions alone (callers check the CPU). */
#ifndef MPX_KERN_SIMD_H
#define MPX_KERN_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KS_UNROLL8 _Pragma("GCC unroll 8")
#define KS_UNROLL16 _Pragma("GCC unroll 16")

/* c[k] lane i = r[i] lane k, 8 x 8 floats (AVX): 24 shuffles. */
static inline __attribute__((target("avx2"), always_inline)) void ks_transpose8(const __m256 r[8], __m256 c[8]) {
    __m256 t[8], u[8];
    KS_UNROLL8 for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    KS_UNROLL8 for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    /* u[q] (q < 4): columns q (low half) and q + 4 (high half) of rows
     * 0-3; u[q + 4] the same of rows 4-7 */
    KS_UNROLL8 for (int q = 0; q < 4; q++) {
        c[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        c[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

/* c[k] lane i = r[i] lane k, 16 x 16 floats (AVX-512F): 64 shuffles. */
static inline __attribute__((target("avx512f"), always_inline)) void ks_transpose16(const __m512 r[16], __m512 c[16]) {
    __m512 t[16], u[16];
    KS_UNROLL16 for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* u[4g + q], in each 128-bit lane L: column 4L + q of rows 4g .. 4g + 3 */
    KS_UNROLL16 for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    /* column 4L + q: lane L of u[q], u[4 + q], u[8 + q], u[12 + q] */
    KS_UNROLL16 for (int q = 0; q < 4; q++) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[q], u[q + 4], 0x88), v1 = _mm512_shuffle_f32x4(u[q], u[q + 4], 0xdd);
        const __m512 v2 = _mm512_shuffle_f32x4(u[q + 8], u[q + 12], 0x88), v3 = _mm512_shuffle_f32x4(u[q + 8], u[q + 12], 0xdd);
        c[q] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        c[q + 8] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
        c[q + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        c[q + 12] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
    }
}
#endif

#endif
