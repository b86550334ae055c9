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
 *
 * A second core takes 8-bit operands as they are, unsigned bytes times
 * signed bytes (kern_qint.c maps the other pairs of 8-bit types onto that
 * and corrects for the zero points), on the CPUs with VNNI (below).
 */
#include "kern_nn.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

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

__attribute__((target("avx2"), noinline)) static void tile_3x4_pf_avx2(const void *A, const void *B, int64_t Kp,
                                                                       __m256i *out) {
    tile_3x4_body(A, B, Kp, out, true);
}

__attribute__((target("avx2"), noinline)) static void tile_3x4_avx2(const void *A, const void *B, int64_t Kp,
                                                                    __m256i *out) {
    tile_3x4_body(A, B, Kp, out, false);
}

/* One row of A against four of B (the rows left over by the threes). */
__attribute__((target("avx2"), noinline)) static void tile_1x4_avx2(const void *Av, const void *Bv, int64_t Kp,
                                                                    __m256i *out) {
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
    const int16_t *A = Av, *B = Bv, *B1 = B + Kp, *B2 = B + 2 * Kp, *B3 = B + 3 * Kp;
    for (int64_t k = 0; k < Kp; k += 16) {
        const __m256i a = LD16(A + k);
        MADD(c0, a, LD16(B + k)), MADD(c1, a, LD16(B1 + k)), MADD(c2, a, LD16(B2 + k)), MADD(c3, a, LD16(B3 + k));
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* One row of A against one of B. */
__attribute__((target("avx2"))) static int32_t dot_avx2(const void *Av, const void *Bv, int64_t Kp) {
    const int16_t *A = Av, *B = Bv;
    __m256i s = _mm256_setzero_si256();
    for (int64_t k = 0; k < Kp; k += 16) MADD(s, LD16(A + k), LD16(B + k));
    return hsum_avx2(s);
}

/* Three rows' and four columns' sums of the tile at s to C. */
__attribute__((target("avx2"))) static inline void store_3x4(const __m256i *s, int32_t *C, int64_t ldc) {
    for (int64_t i = 0; i < 3; i++)
        _mm_storeu_si128((__m128i *)(C + i * ldc), hsum4_avx2(s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]));
}

/* A core's tiles (above for 16-bit terms, below for 8-bit ones), each
 * storing its rows' sums of four columns to C; esz: bytes per term. */
typedef void (*tile_fn)(const void *A, const void *B, int64_t Kp, int32_t *C, int64_t ldc);
typedef struct simd_core {
    tile_fn t3x4_pf, t3x4, t1x4;
    int32_t (*dot)(const void *A, const void *B, int64_t Kp);
    int64_t esz, pf_max; /* bytes per term; the longest rows (bytes) t3x4_pf takes */
} simd_core;

/* The 16-bit tiles with their sums stored (their loops' functions leave
 * them in registers: see tile_3x4_body). */
__attribute__((target("avx2"))) static void st3x4_pf_16(const void *A, const void *B, int64_t Kp, int32_t *C,
                                                        int64_t ldc) {
    __m256i s[12];
    tile_3x4_pf_avx2(A, B, Kp, s);
    store_3x4(s, C, ldc);
}

__attribute__((target("avx2"))) static void st3x4_16(const void *A, const void *B, int64_t Kp, int32_t *C,
                                                     int64_t ldc) {
    __m256i s[12];
    tile_3x4_avx2(A, B, Kp, s);
    store_3x4(s, C, ldc);
}

__attribute__((target("avx2"))) static void st1x4_16(const void *A, const void *B, int64_t Kp, int32_t *C,
                                                     int64_t ldc) {
    (void)ldc;
    __m256i s[4];
    tile_1x4_avx2(A, B, Kp, s);
    _mm_storeu_si128((__m128i *)C, hsum4_avx2(s[0], s[1], s[2], s[3]));
}

static const simd_core core16 = {st3x4_pf_16, st3x4_16, st1x4_16, dot_avx2, 2, 2048};

/* The tiles' order: when the block's rows of A fit L2 with room to spare
 * (a quantised projection's 24 rows), every row of A against four columns
 * of B before the next four, so that each column comes from memory once
 * and stays in L1 while A's rows stream from L2; otherwise (a convolution's
 * filters as A: hundreds of long rows) three rows of A against the whole
 * panel of B, which stays in L2. The prefetching tile for rows of up to
 * 2 KB (see tile_3x4_body). */
static void block_simd(const simd_core *cr, const char *A, const char *B, int64_t Kp,
                                                       int64_t mr, int64_t nr, int32_t *C, int64_t ldc) {
    const int64_t n4 = nr / 4 * 4, m3 = mr / 3 * 3, row = Kp * cr->esz;
    const tile_fn tile = row <= cr->pf_max ? cr->t3x4_pf : cr->t3x4;
    if (mr * row <= 131072) {
        for (int64_t n = 0; n < n4; n += 4)
            for (int64_t m = 0; m < m3; m += 3) tile(A + m * row, B + n * row, Kp, C + m * ldc + n, ldc);
    } else {
        for (int64_t m = 0; m < m3; m += 3)
            for (int64_t n = 0; n < n4; n += 4) tile(A + m * row, B + n * row, Kp, C + m * ldc + n, ldc);
    }
    for (int64_t m = 0; m < m3; m++)
        for (int64_t n = n4; n < nr; n++) C[m * ldc + n] = cr->dot(A + m * row, B + n * row, Kp);
    for (int64_t m = m3; m < mr; m++) {
        for (int64_t n = 0; n < n4; n += 4) cr->t1x4(A + m * row, B + n * row, Kp, C + m * ldc + n, ldc);
        for (int64_t n = n4; n < nr; n++) C[m * ldc + n] = cr->dot(A + m * row, B + n * row, Kp);
    }
}

bool mpx_k_igemm_avx2(void) {
    return __builtin_cpu_supports("avx2") && !mpx_env_on("MPX_KERN_PORTABLE");
}

/* Panels of columns of B (at most 64, and at most 256 KB: half of Zen 3's
 * L2) against every row of A: a tile streams four of the panel's rows from
 * L2 while three rows of A stay in L1. A panel apart, a cancelled kernel's
 * sums are dropped (mpx_k_cancelled). cr NULL: the portable loops. */
static void igemm_panels(const simd_core *cr, const void *A, const void *B, int64_t M, int64_t N, int64_t Kp,
                         int64_t esz, int32_t *C, int64_t ldc) {
    const int64_t row = Kp * esz;
    int64_t pw = row ? 262144 / row / 4 * 4 : 64;
    pw = pw < 4 ? 4 : pw > 64 ? 64 : pw;
    for (int64_t n0 = 0; n0 < N; n0 += pw) {
        if (mpx_k_cancelled()) return;
        int64_t nr = N - n0 < pw ? N - n0 : pw;
        const char *Bp = (const char *)B + n0 * row;
        if (cr) block_simd(cr, A, Bp, Kp, M, nr, C + n0, ldc);
        else block_portable(A, (const int16_t *)(const void *)Bp, Kp, M, nr, C + n0, ldc);
    }
}

void mpx_k_igemm_nt(const int16_t *A, const int16_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                    bool avx2) {
    igemm_panels(avx2 ? &core16 : NULL, A, B, M, N, Kp, 2, C, ldc);
}

/* ---- the 8-bit core: unsigned bytes times signed bytes ------------------------------
 * vpdpbusd multiplies four unsigned bytes of A by four signed bytes of B
 * and adds the four products (each within [-32640, 32385], their sum
 * within 2^17) to a 32-bit lane, wrapping: the same residues modulo 2^32
 * as the 16-bit core's, four times the terms an instruction, half the
 * bytes of B to stream. AVX-VNNI's VEX form on 32-byte vectors takes the
 * tiles below (a row of A against a row of B, each sum reduced to eight
 * lanes for block_simd; written as a macro of the vector width); AVX512-VNNI
 * takes the column panels further down. */
/* The prefetching tile for 8-bit rows up to 4 KB (K = 3072, a BERT-style
 * encoder's second feed-forward product: a few percent faster on Zen 5
 * with it than without). */
#define PFMAX 4096
#define IG8_TILES(W, TGT, VT, LD, DP, ZERO, TO256, PF, RED4, KEEP)                                                                   \
    TGT static inline __m256i to256_##W(VT v) { return TO256; }                                                  \
    TGT __attribute__((always_inline)) static inline void tile8_3x4_body_##W(const uint8_t *A, const int8_t *B,    \
                                                                             int64_t Kp, VT *out, bool pf) {     \
        /* (each sum its own zero and each column its own register: GCC copied every sum every step otherwise) */ \
        VT c00 = ZERO, c01 = ZERO, c02 = ZERO, c03 = ZERO, c10 = ZERO, c11 = ZERO, c12 = ZERO, c13 = ZERO,          \
           c20 = ZERO, c21 = ZERO, c22 = ZERO, c23 = ZERO;                                                         \
        const uint8_t *A1 = A + Kp, *A2 = A + 2 * Kp;                                                               \
        const int8_t *B1 = B + Kp, *B2 = B + 2 * Kp, *B3 = B + 3 * Kp;                                              \
        const char *next = (const char *)(B + 4 * Kp);                                                              \
        for (int64_t k = 0; k < Kp; k += (int64_t)sizeof(VT)) {                                                     \
            if (pf) PF(next + 4 * k);                                                                               \
            const VT a0 = LD(A + k), a1 = LD(A1 + k), a2 = LD(A2 + k);                                             \
            VT b0 = LD(B + k), b1 = LD(B1 + k), b2 = LD(B2 + k), b3 = LD(B3 + k);                                  \
            KEEP(b0); KEEP(b1); KEEP(b2); KEEP(b3);                                                                 \
            c00 = DP(c00, a0, b0), c10 = DP(c10, a1, b0), c20 = DP(c20, a2, b0);                                    \
            c01 = DP(c01, a0, b1), c11 = DP(c11, a1, b1), c21 = DP(c21, a2, b1);                                    \
            c02 = DP(c02, a0, b2), c12 = DP(c12, a1, b2), c22 = DP(c22, a2, b2);                                    \
            c03 = DP(c03, a0, b3), c13 = DP(c13, a1, b3), c23 = DP(c23, a2, b3);                                    \
        }                                                                                                           \
        out[0] = c00, out[1] = c01, out[2] = c02, out[3] = c03, out[4] = c10, out[5] = c11, out[6] = c12;           \
        out[7] = c13, out[8] = c20, out[9] = c21, out[10] = c22, out[11] = c23;                                     \
    }                                                                                                               \
    /* (the sums reduced to eight lanes out of the loop's function: reduced in it, GCC copied every sum every     \
     * step) */                                                                                                     \
    TGT __attribute__((noinline)) static void tile8_3x4_pf_v##W(const void *A, const void *B, int64_t Kp, VT *out) { \
        tile8_3x4_body_##W(A, B, Kp, out, true);                                                                    \
    }                                                                                                               \
    TGT __attribute__((noinline)) static void tile8_3x4_v##W(const void *A, const void *B, int64_t Kp, VT *out) {   \
        tile8_3x4_body_##W(A, B, Kp, out, false);                                                                   \
    }                                                                                                               \
    TGT static void tile8_3x4_pf_##W(const void *A, const void *B, int64_t Kp, int32_t *C, int64_t ldc) {          \
        VT v[12];                                                                                                   \
        tile8_3x4_pf_v##W(A, B, Kp, v);                                                                             \
        for (int i = 0; i < 3; i++)                                                                                 \
            _mm_storeu_si128((__m128i *)(C + i * ldc), RED4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]));   \
    }                                                                                                               \
    TGT static void tile8_3x4_##W(const void *A, const void *B, int64_t Kp, int32_t *C, int64_t ldc) {             \
        VT v[12];                                                                                                   \
        tile8_3x4_v##W(A, B, Kp, v);                                                                                \
        for (int i = 0; i < 3; i++)                                                                                 \
            _mm_storeu_si128((__m128i *)(C + i * ldc), RED4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]));   \
    }                                                                                                               \
    TGT __attribute__((noinline)) static void tile8_1x4_v##W(const void *Av, const void *Bv, int64_t Kp, VT *out) { \
        const uint8_t *A = Av;                                                                                      \
        const int8_t *B = Bv, *B1 = B + Kp, *B2 = B + 2 * Kp, *B3 = B + 3 * Kp;                                     \
        VT c0 = ZERO, c1 = ZERO, c2 = ZERO, c3 = ZERO;                                                              \
        for (int64_t k = 0; k < Kp; k += (int64_t)sizeof(VT)) {                                                     \
            const VT a = LD(A + k);                                                                                 \
            c0 = DP(c0, a, LD(B + k)), c1 = DP(c1, a, LD(B1 + k)), c2 = DP(c2, a, LD(B2 + k));                      \
            c3 = DP(c3, a, LD(B3 + k));                                                                             \
        }                                                                                                           \
        out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;                                                         \
    }                                                                                                               \
    TGT static void tile8_1x4_##W(const void *A, const void *B, int64_t Kp, int32_t *C, int64_t ldc) {             \
        (void)ldc;                                                                                                  \
        VT v[4];                                                                                                    \
        tile8_1x4_v##W(A, B, Kp, v);                                                                                \
        _mm_storeu_si128((__m128i *)C, RED4(v[0], v[1], v[2], v[3]));                                               \
    }                                                                                                               \
    TGT static int32_t dot8_##W(const void *Av, const void *Bv, int64_t Kp) {                                       \
        const uint8_t *A = Av;                                                                                      \
        const int8_t *B = Bv;                                                                                       \
        VT c = ZERO;                                                                                                \
        for (int64_t k = 0; k < Kp; k += (int64_t)sizeof(VT)) c = DP(c, LD(A + k), LD(B + k));                     \
        return hsum_avx2(to256_##W(c));                                                                             \
    }                                                                                                               \
    static const simd_core core8_##W = {tile8_3x4_pf_##W, tile8_3x4_##W, tile8_1x4_##W, dot8_##W, 1, PFMAX};

/* (the next four rows of B prefetched as the 16-bit tile does: a step's
 * share, four times the vector's bytes, from p) */
#define PF256(p) _mm_prefetch((p), _MM_HINT_T0), _mm_prefetch((p) + 64, _MM_HINT_T0)
#define NO_REG(v) (void)(v)
IG8_TILES(256, __attribute__((target("avx2,avxvnni"))), __m256i, LD16, _mm256_dpbusd_avx_epi32,
          _mm256_setzero_si256(), v, PF256, hsum4_avx2, NO_REG)

/* The 8-bit core's build for this CPU: 2 (AVX512-VNNI), 1 (AVX-VNNI) or 0
 * (none: the 16-bit core). MPX_KERN_NOVNNI (and MPX_KERN_PORTABLE) decline
 * both, MPX_KERN_AVX2 the 64-byte one (test_qint runs each against the
 * direct loops). */
int mpx_k_igemm8_path(void) {
    if (mpx_env_on("MPX_KERN_PORTABLE") || mpx_env_on("MPX_KERN_NOVNNI") || !__builtin_cpu_supports("avx2")) return 0;
    if (!mpx_env_on("MPX_KERN_AVX2") && __builtin_cpu_supports("avx512f") && mpx_cpu_has_avx512vnni()) return 2;
    return mpx_cpu_has_avxvnni() ? 1 : 0;
}

/* ---- AVX512-VNNI: B's columns in the lanes ----------------------------------------------
 * The tiles above take a row of A against a row of B (B^T's rows: the
 * matrix's columns), so each of their sums ends as sixteen lanes to add up:
 * for a quantised encoder's 768 terms, twelve products a sum against about
 * three shuffles and adds and the sums' trip through memory, a fifth of the
 * tile's time (perf, Zen 5). Here B comes in panels of 16 columns, four
 * terms of a column in each 32-bit lane ([N/16][Kp/4][16][4]:
 * mpx_k_igemm8_panels), so a vector of B is four terms of 16 columns and
 * four bytes of a row of A, broadcast, multiply it: each lane sums its own
 * column and a tile's sums are stored as they are, one row of C a vector.
 * A tile is 6 rows of A by 4 panels (64 columns): 24 sums, four vectors of B
 * loaded and six of A broadcast a step of four terms (the float core's
 * shape, kern_gemm_body.h). Sums modulo 2^32 as everywhere in this file. */
#define LT_TGT __attribute__((target("avx2,avx512f,avx512vnni")))
enum { LT_MR = 6, LT_NV = 4 };
/* (the tile's loops over rows and panels unrolled, so that its sums are
 * registers: left as loops, GCC and Clang kept them in memory) */
#if defined(__clang__)
#define LT_UNROLL _Pragma("clang loop unroll(full)")
#else
#define LT_UNROLL _Pragma("GCC unroll 8")
#endif

void mpx_k_igemm8_panels(const int8_t *rows, int64_t N, int64_t Kp, int8_t *dst) {
    const int64_t np = (N + 15) / 16;
    for (int64_t p = 0; p < np; p++)
        for (int64_t l = 0; l < 16; l++) {
            const int64_t n = p * 16 + l;
            int8_t *d = dst + p * 16 * Kp + l * 4;
            for (int64_t k = 0; k < Kp; k += 4, d += 64)
                if (n < N) memcpy(d, rows + n * Kp + k, 4);
                else memset(d, 0, 4);
        }
}

/* mr rows of A (rows of Kp bytes) against nv panels of B (pst bytes apart)
 * into C; the last panel's columns under mask. Constant mr and nv (the
 * calls below) unroll it into named registers. */
LT_TGT __attribute__((always_inline)) static inline void lt_body(const uint8_t *A, const int8_t *B, int64_t Kp,
                                                                 int64_t pst, int32_t *C, int64_t ldc, int mr,
                                                                 int nv, __mmask16 last) {
    __m512i acc[LT_MR][LT_NV];
    LT_UNROLL for (int m = 0; m < mr; m++)
        LT_UNROLL for (int v = 0; v < nv; v++) acc[m][v] = _mm512_setzero_si512();
    for (int64_t k = 0; k < Kp; k += 4) {
        __m512i b[LT_NV];
        LT_UNROLL for (int v = 0; v < nv; v++) b[v] = _mm512_loadu_si512((const void *)(B + v * pst + k * 16));
        LT_UNROLL for (int m = 0; m < mr; m++) {
            int32_t a4;
            memcpy(&a4, A + m * Kp + k, 4);
            const __m512i a = _mm512_set1_epi32(a4);
            LT_UNROLL for (int v = 0; v < nv; v++) acc[m][v] = _mm512_dpbusd_epi32(acc[m][v], a, b[v]);
        }
    }
    LT_UNROLL for (int m = 0; m < mr; m++)
        LT_UNROLL for (int v = 0; v < nv; v++)
            if (v == nv - 1) _mm512_mask_storeu_epi32(C + m * ldc + 16 * v, last, acc[m][v]);
            else _mm512_storeu_si512((void *)(C + m * ldc + 16 * v), acc[m][v]);
}

typedef void (*lt_fn)(const uint8_t *A, const int8_t *B, int64_t Kp, int64_t pst, int32_t *C, int64_t ldc,
                      __mmask16 last);
#define LT_FN(mr, nv)                                                                                        \
    LT_TGT __attribute__((noinline)) static void lt_##mr##_##nv(const uint8_t *A, const int8_t *B, int64_t Kp, \
                                                                int64_t pst, int32_t *C, int64_t ldc,      \
                                                                __mmask16 last) {                         \
        lt_body(A, B, Kp, pst, C, ldc, mr, nv, last);                                                       \
    }
#define LT_ROW(mr) LT_FN(mr, 1) LT_FN(mr, 2) LT_FN(mr, 3) LT_FN(mr, 4)
LT_ROW(1) LT_ROW(2) LT_ROW(3) LT_ROW(4) LT_ROW(5) LT_ROW(6)
static const lt_fn lt_tiles[LT_MR][LT_NV] = {
    {lt_1_1, lt_1_2, lt_1_3, lt_1_4}, {lt_2_1, lt_2_2, lt_2_3, lt_2_4}, {lt_3_1, lt_3_2, lt_3_3, lt_3_4},
    {lt_4_1, lt_4_2, lt_4_3, lt_4_4}, {lt_5_1, lt_5_2, lt_5_3, lt_5_4}, {lt_6_1, lt_6_2, lt_6_3, lt_6_4}};

/* Every row of A against 64 columns before the next 64: the four panels
 * (64 x Kp bytes) stay in L2 while the rows stream past them. */
static void lt_gemm(const uint8_t *A, const int8_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc) {
    const int64_t pst = 16 * Kp;
    for (int64_t n0 = 0; n0 < N; n0 += 16 * LT_NV) {
        if (mpx_k_cancelled()) return;
        const int64_t cols = N - n0 < 16 * LT_NV ? N - n0 : 16 * LT_NV, nv = (cols + 15) / 16;
        const __mmask16 last = (__mmask16)(cols % 16 ? (1u << (cols % 16)) - 1 : 0xffffu);
        for (int64_t m0 = 0; m0 < M; m0 += LT_MR) {
            const int64_t mr = M - m0 < LT_MR ? M - m0 : LT_MR;
            lt_tiles[mr - 1][nv - 1](A + m0 * Kp, B + n0 * Kp, Kp, pst, C + m0 * ldc + n0, ldc, last);
        }
    }
}

void mpx_k_igemm8_nt(const uint8_t *A, const int8_t *B, int64_t M, int64_t N, int64_t Kp, int32_t *C, int64_t ldc,
                     int path) {
    if (path == 2) lt_gemm(A, B, M, N, Kp, C, ldc);
    else igemm_panels(&core8_256, A, B, M, N, Kp, 1, C, ldc);
}
