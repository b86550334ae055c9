/* kern_igemm.c - the integer core of the quantised products (MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv): C[m][n] = sum over k of
 * A[m][k] * B[n][k], both operands 16-bit rows of Kp values (Kp a multiple
 * of 16, the tail zeros), sums modulo 2^32.
 *
 * Why modulo 2^32 and 16 bits: every consumer of these sums keeps them as
 * the int32 a runtime's accumulator holds (kern_qint.c wraps them), and
 * wrapping is a ring homomorphism, so sums taken modulo 2^32 in any order
 * give the very bits the exact int64 sums wrapped at the end give. The
 * operands of 8-bit models, zero points subtracted, lie in [-255, 255] and
 * fit 16 bits, where AVX2's vpmaddwd multiplies 16 pairs and adds them in
 * pairs into eight 32-bit lanes (its one overflow, two products of -32768,
 * wraps to the same residue). No library does exact int8 products with
 * arbitrary zero points per row and column in this layout (oneDNN and
 * MLAS are runtimes, not libraries for this), hence the small core here.
 *
 * The AVX2 build is taken where the CPU has AVX2 unless MPX_KERN_PORTABLE
 * asks for the portable loops (tests hold the two equal bit for bit).
 */
#include "kern_nn.h"

#include <immintrin.h>
#include <stdint.h>

/* Portable: uint32 sums (wrapping is defined for unsigned), each product
 * exact in int32 (|a*b| <= 2^30). */
static void block_portable(const int16_t *A, const int16_t *B, int64_t Kp, int64_t mr, int64_t nr, int32_t *C,
                           int64_t ldc) {
    for (int64_t m = 0; m < mr; m++)
        for (int64_t n = 0; n < nr; n++) {
            const int16_t *a = A + m * Kp, *b = B + n * Kp;
            uint32_t s = 0;
            for (int64_t k = 0; k < Kp; k++) s += (uint32_t)((int32_t)a[k] * (int32_t)b[k]);
            C[m * ldc + n] = (int32_t)s;
        }
}

__attribute__((target("avx2"))) static inline int32_t hsum_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Two rows of A against four of B: eight sums in registers, each operand
 * vector loaded once per 16 terms. */
__attribute__((target("avx2"))) static void tile_2x4_avx2(const int16_t *A, const int16_t *B, int64_t Kp, int32_t *C,
                                                          int64_t ldc) {
    __m256i c[2][4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) c[i][j] = _mm256_setzero_si256();
    for (int64_t k = 0; k < Kp; k += 16) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(A + k));
        __m256i a1 = _mm256_loadu_si256((const __m256i *)(A + Kp + k));
        for (int j = 0; j < 4; j++) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(B + j * Kp + k));
            c[0][j] = _mm256_add_epi32(c[0][j], _mm256_madd_epi16(a0, b));
            c[1][j] = _mm256_add_epi32(c[1][j], _mm256_madd_epi16(a1, b));
        }
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) C[i * ldc + j] = hsum_avx2(c[i][j]);
}

__attribute__((target("avx2"))) static void block_avx2(const int16_t *A, const int16_t *B, int64_t Kp, int64_t mr,
                                                       int64_t nr, int32_t *C, int64_t ldc) {
    int64_t m = 0;
    for (; m + 2 <= mr; m += 2) {
        int64_t n = 0;
        for (; n + 4 <= nr; n += 4) tile_2x4_avx2(A + m * Kp, B + n * Kp, Kp, C + m * ldc + n, ldc);
        for (; n < nr; n++)
            for (int64_t i = 0; i < 2; i++) {
                __m256i s = _mm256_setzero_si256();
                for (int64_t k = 0; k < Kp; k += 16)
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(A + (m + i) * Kp + k)),
                                                              _mm256_loadu_si256((const __m256i *)(B + n * Kp + k))));
                C[(m + i) * ldc + n] = hsum_avx2(s);
            }
    }
    for (; m < mr; m++)
        for (int64_t n = 0; n < nr; n++) {
            __m256i s = _mm256_setzero_si256();
            for (int64_t k = 0; k < Kp; k += 16)
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(A + m * Kp + k)),
                                                          _mm256_loadu_si256((const __m256i *)(B + n * Kp + k))));
            C[m * ldc + n] = hsum_avx2(s);
        }
}

bool mpx_k_igemm_avx2(void) {
    return __builtin_cpu_supports("avx2") && !mpx_env_on("MPX_KERN_PORTABLE");
}

void mpx_k_igemm_nt(const int16_t *A, const int16_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                    bool avx2) {
    /* Panels of 64 columns of B (64 x Kp x 2 bytes: L2-sized for the K of
     * real layers) against every row of A. */
    for (int64_t n0 = 0; n0 < N; n0 += 64) {
        /* a panel apart: a cancelled kernel's sums are dropped (mpx_k_cancelled) */
        if (mpx_k_cancelled()) return;
        int64_t nr = N - n0 < 64 ? N - n0 : 64;
        if (avx2) block_avx2(A, B + n0 * Kp, Kp, M, nr, C + n0, ldc);
        else block_portable(A, B + n0 * Kp, Kp, M, nr, C + n0, ldc);
    }
}
