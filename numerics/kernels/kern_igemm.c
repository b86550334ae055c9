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

/* The four sums of c0..c3's lanes, in order (three horizontal adds and one
 * of the halves where four single sums take twelve steps). */
__attribute__((target("avx2"))) static inline __m128i hsum4_avx2(__m256i c0, __m256i c1, __m256i c2, __m256i c3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(c0, c1), _mm256_hadd_epi32(c2, c3));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

#define LD16(p) _mm256_loadu_si256((const __m256i *)(p))
#define MADD(acc, x, y) acc = _mm256_add_epi32(_mm256_madd_epi16(x, y), acc)

/* Three rows of A against four of B: twelve sums in registers (named, not
 * an array: GCC kept an array's sums on the stack, a store and a load
 * every term), three rows of A in registers, B's terms read as the
 * products' memory operands. Two things keep GCC's loop free of spills and
 * register copies: the product first in each sum (acc + madd, not madd +
 * acc, which it compiled into a copy of every sum every step), and the
 * horizontal sums out of this function (their temporaries made it spill
 * sums inside the loop). Twelve products a step at about 1.4 a cycle on
 * Zen 3 against 1.0 for a three-by-three tile.
 *
 * With pf, the tile prefetches the next four rows of B (B + 4 Kp,
 * contiguous: the next tile's, or the next panel's first), 128 bytes a step
 * so that they arrive over the tile's run. A constant B larger than the
 * caches (a BERT-style encoder's packed weights, 57 MB) comes from memory
 * at every forward, and short rows of B, a few at a time, left the hardware
 * prefetcher too little to go on: cold B at half the tile's rate. Long rows
 * (Kp past 1024) it follows well, and four of them prefetched into L1 push
 * out the rows of A the tile is using (K = 3072: a fifth slower with the
 * prefetch than without). */
__attribute__((target("avx2"), always_inline)) static inline void tile_3x4_body(const int16_t *A, const int16_t *B,
                                                                                int64_t Kp, __m256i *out, bool pf) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
            c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    const int16_t *A1 = A + Kp, *A2 = A + 2 * Kp, *B1 = B + Kp, *B2 = B + 2 * Kp, *B3 = B + 3 * Kp;
    const char *next = (const char *)(B + 4 * Kp);
    for (int64_t k = 0; k < Kp; k += 16) {
        /* (a prefetch never faults: past B's end it is only wasted) */
        if (pf) _mm_prefetch(next + 8 * k, _MM_HINT_T0), _mm_prefetch(next + 8 * k + 64, _MM_HINT_T0);
        const __m256i a0 = LD16(A + k), a1 = LD16(A1 + k), a2 = LD16(A2 + k);
        MADD(c00, a0, LD16(B + k)), MADD(c10, a1, LD16(B + k)), MADD(c20, a2, LD16(B + k));
        MADD(c01, a0, LD16(B1 + k)), MADD(c11, a1, LD16(B1 + k)), MADD(c21, a2, LD16(B1 + k));
        MADD(c02, a0, LD16(B2 + k)), MADD(c12, a1, LD16(B2 + k)), MADD(c22, a2, LD16(B2 + k));
        MADD(c03, a0, LD16(B3 + k)), MADD(c13, a1, LD16(B3 + k)), MADD(c23, a2, LD16(B3 + k));
    }
    out[0] = c00, out[1] = c01, out[2] = c02, out[3] = c03, out[4] = c10, out[5] = c11, out[6] = c12,
    out[7] = c13, out[8] = c20, out[9] = c21, out[10] = c22, out[11] = c23;
}

__attribute__((target("avx2"), noinline)) static void tile_3x4_pf_avx2(const int16_t *A, const int16_t *B,
                                                                       int64_t Kp, __m256i *out) {
    tile_3x4_body(A, B, Kp, out, true);
}

__attribute__((target("avx2"), noinline)) static void tile_3x4_avx2(const int16_t *A, const int16_t *B, int64_t Kp,
                                                                    __m256i *out) {
    tile_3x4_body(A, B, Kp, out, false);
}

/* One row of A against four of B (the rows left over by the threes). */
__attribute__((target("avx2"), noinline)) static void tile_1x4_avx2(const int16_t *A, const int16_t *B, int64_t Kp,
                                                                    __m256i *out) {
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    const int16_t *B1 = B + Kp, *B2 = B + 2 * Kp, *B3 = B + 3 * Kp;
    for (int64_t k = 0; k < Kp; k += 16) {
        const __m256i a = LD16(A + k);
        MADD(c0, a, LD16(B + k)), MADD(c1, a, LD16(B1 + k)), MADD(c2, a, LD16(B2 + k)), MADD(c3, a, LD16(B3 + k));
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* One row of A against one of B. */
__attribute__((target("avx2"))) static int32_t dot_avx2(const int16_t *A, const int16_t *B, int64_t Kp) {
    __m256i s = _mm256_setzero_si256();
    for (int64_t k = 0; k < Kp; k += 16) MADD(s, LD16(A + k), LD16(B + k));
    return hsum_avx2(s);
}

/* Three rows' and four columns' sums of the tile at s to C. */
__attribute__((target("avx2"))) static inline void store_3x4(const __m256i *s, int32_t *C, int64_t ldc) {
    for (int64_t i = 0; i < 3; i++)
        _mm_storeu_si128((__m128i *)(C + i * ldc), hsum4_avx2(s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]));
}

/* The tiles' order: when the block's rows of A fit L2 with room to spare
 * (a quantised projection's 24 rows), every row of A against four columns
 * of B before the next four, so that each column comes from memory once
 * and stays in L1 while A's rows stream from L2; otherwise (a convolution's
 * filters as A: hundreds of long rows) three rows of A against the whole
 * panel of B, which stays in L2. */
__attribute__((target("avx2"))) static void block_avx2(const int16_t *A, const int16_t *B, int64_t Kp, int64_t mr,
                                                       int64_t nr, int32_t *C, int64_t ldc) {
    const int64_t n4 = nr / 4 * 4, m3 = mr / 3 * 3;
    __m256i s[12];
    void (*const tile)(const int16_t *, const int16_t *, int64_t, __m256i *) =
        Kp <= 1024 ? tile_3x4_pf_avx2 : tile_3x4_avx2;
    if (mr * Kp <= 65536) {
        for (int64_t n = 0; n < n4; n += 4)
            for (int64_t m = 0; m < m3; m += 3) {
                tile(A + m * Kp, B + n * Kp, Kp, s);
                store_3x4(s, C + m * ldc + n, ldc);
            }
    } else {
        for (int64_t m = 0; m < m3; m += 3)
            for (int64_t n = 0; n < n4; n += 4) {
                tile(A + m * Kp, B + n * Kp, Kp, s);
                store_3x4(s, C + m * ldc + n, ldc);
            }
    }
    for (int64_t m = 0; m < m3; m++)
        for (int64_t n = n4; n < nr; n++) C[m * ldc + n] = dot_avx2(A + m * Kp, B + n * Kp, Kp);
    for (int64_t m = m3; m < mr; m++) {
        for (int64_t n = 0; n < n4; n += 4) {
            tile_1x4_avx2(A + m * Kp, B + n * Kp, Kp, s);
            _mm_storeu_si128((__m128i *)(C + m * ldc + n), hsum4_avx2(s[0], s[1], s[2], s[3]));
        }
        for (int64_t n = n4; n < nr; n++) C[m * ldc + n] = dot_avx2(A + m * Kp, B + n * Kp, Kp);
    }
}

bool mpx_k_igemm_avx2(void) {
    return __builtin_cpu_supports("avx2") && !mpx_env_on("MPX_KERN_PORTABLE");
}

void mpx_k_igemm_nt(const int16_t *A, const int16_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                    bool avx2) {
    /* Panels of columns of B (at most 64, and at most 256 KB: half of
     * Zen 3's L2) against every row of A: a tile streams four of the
     * panel's rows from L2 while three rows of A stay in L1. */
    int64_t pw = Kp ? 131072 / Kp / 4 * 4 : 64;
    pw = pw < 4 ? 4 : pw > 64 ? 64 : pw;
    for (int64_t n0 = 0; n0 < N; n0 += pw) {
        /* a panel apart: a cancelled kernel's sums are dropped (mpx_k_cancelled) */
        if (mpx_k_cancelled()) return;
        int64_t nr = N - n0 < pw ? N - n0 : pw;
        if (avx2) block_avx2(A, B + n0 * Kp, Kp, M, nr, C + n0, ldc);
        else block_portable(A, B + n0 * Kp, Kp, M, nr, C + n0, ldc);
    }
}
