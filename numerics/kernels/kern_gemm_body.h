/* kern_gemm_body.h - the inner loops of kern_gemm.c, included there three
 * times: for the baseline ISA (KG_F(x) = x##_gen, KG_SIMD 0, KG_TARGET
 * empty), with every function compiled for AVX2, F16C and FMA (KG_F(x) =
 * x##_avx2, KG_SIMD 1, KG_TARGET the target attribute), and for AVX-512
 * (x##_avx512, KG_SIMD 2: the micro-kernels on 16 lanes, ukr16 and ukr16r).
 * Only fp16 rounding and the fused multiply-add differ in source between
 * the portable and the SIMD builds (F16C against mpx_round_value per lane,
 * the FMA instruction against fmaf, which agree bit for bit); everything
 * else is the same GCC vector-extension code, so the two builds compute the
 * same bits. Not a header of its own: no include guard on purpose. */

/* ---- the micro-kernel: MR x 16 outputs, kc terms ------------------------------------------
 * a: packed A, [kc][6] (rows beyond MR are zero and ignored); b: packed B,
 * [kc][16]; cr[i]: row i of the C tile (16 floats). first: this is k = 0 of
 * the whole sum (C not read); bias: add bias[i] after the last term (the
 * caller passes it with the last K block only).
 * fp32: blocks of 64 terms summed in registers, one fused multiply-add a
 * term, each block added to C (the running sum), as the header says; the
 * caller's K blocks are multiples of 64 so blocks never straddle them. Rounded: C holds the rounded running
 * sum; every addition is rounded. */
#define KG_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr)(const int MR, const int RM, int64_t kc,
                                                            const float *restrict a,
                                                            const float *restrict b,
                                                            float *const *cr, bool first,
                                                            const float *bias) {
    const v8f z = {0};
#define KG_DECL(i) v8f c##i##0 = z, c##i##1 = z;
    KG_ROWS(KG_DECL)
#undef KG_DECL
    if (RM == KG_FP32) {
        for (int64_t k0 = 0; k0 < kc; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < kc ? k0 + MPX_ACC_FP32_BLOCK : kc;
#define KG_ZERO(i) c##i##0 = z, c##i##1 = z;
            KG_ROWS(KG_ZERO)
#undef KG_ZERO
            /* C's rows, wanted after the block: fetched now. A convolution's
             * rows are its output planes, often a multiple of 4 KiB apart
             * (UNet's 256 x 256 maps: 256 KiB), so a panel's rows share one
             * L1 and one L2 set and were read from L3 after every block;
             * models without such planes neither gain nor lose. */
#define KG_PFC(i)                                                                        \
    if (MR > i) {                                                                        \
        __builtin_prefetch(cr[i], 1, 3);                                                 \
        __builtin_prefetch(cr[i] + 15, 1, 3);                                            \
    }
            KG_ROWS(KG_PFC)
#undef KG_PFC
            const float *ak = a + k0 * KG_MR, *bk = b + k0 * KG_NR;
            /* unrolled: a step is 12 fused multiply-adds, 8 loads and the
             * loop's own 4 operations, which held the 6-row kernel at about
             * 80% of the FMA peak on AMD Zen 3 (39 against 47 G/s, one
             * thread, a kc = 256 panel in L1); the same operations in the
             * same order */
            _Pragma("GCC unroll 4")
            for (int64_t k = k0; k < k1; k++, ak += KG_MR, bk += KG_NR) {
                const v8f b0 = KG_F(ld8)(bk), b1 = KG_F(ld8)(bk + 8);
#define KG_MAC(i)                                                                        \
    if (MR > i) {                                                                        \
        const v8f ai = KG_F(splat)(ak[i]);                                                  \
        c##i##0 = KG_F(fma8)(ai, b0, c##i##0);                                           \
        c##i##1 = KG_F(fma8)(ai, b1, c##i##1);                                           \
    }
                KG_ROWS(KG_MAC)
#undef KG_MAC
            }
            const bool f = first && k0 == 0, last = bias && k1 == kc;
#define KG_PUT(i)                                                                        \
    if (MR > i) {                                                                        \
        float *r = cr[i];                                                                \
        v8f s0 = (f ? z : KG_F(ld8)(r)) + c##i##0, s1 = (f ? z : KG_F(ld8)(r + 8)) + c##i##1;  \
        if (last) {                                                                      \
            const v8f bi = KG_F(splat)(bias[i]);                                            \
            s0 += bi;                                                                    \
            s1 += bi;                                                                    \
        }                                                                                \
        KG_F(st8)(r, s0);                                                                   \
        KG_F(st8)(r + 8, s1);                                                               \
    }
            KG_ROWS(KG_PUT)
#undef KG_PUT
        }
        return;
    }
    if (!first) {
#define KG_GET(i)                                                                        \
    if (MR > i) c##i##0 = KG_F(ld8)(cr[i]), c##i##1 = KG_F(ld8)(cr[i] + 8);
        KG_ROWS(KG_GET)
#undef KG_GET
    }
    const float *ak = a, *bk = b;
    for (int64_t k = 0; k < kc; k++, ak += KG_MR, bk += KG_NR) {
        const v8f b0 = KG_F(ld8)(bk), b1 = KG_F(ld8)(bk + 8);
#define KG_RMAC(i)                                                                       \
    if (MR > i) {                                                                        \
        const v8f ai = KG_F(splat)(ak[i]);                                                  \
        c##i##0 = KG_F(rsum)(RM, c##i##0, ai * b0);                                      \
        c##i##1 = KG_F(rsum)(RM, c##i##1, ai * b1);                                      \
    }
        KG_ROWS(KG_RMAC)
#undef KG_RMAC
    }
#define KG_RPUT(i)                                                                       \
    if (MR > i) {                                                                        \
        if (bias) {                                                                      \
            const v8f bi = KG_F(splat)(bias[i]);                                            \
            c##i##0 = KG_F(rsum)(RM, c##i##0, bi);                                       \
            c##i##1 = KG_F(rsum)(RM, c##i##1, bi);                                       \
        }                                                                                \
        KG_F(st8)(cr[i], c##i##0);                                                          \
        KG_F(st8)(cr[i] + 8, c##i##1);                                                      \
    }
    KG_ROWS(KG_RPUT)
#undef KG_RPUT
}

/* DEF(r) for every row count of a panel (1 .. KG_MR) */
#define KG_PER_MR(DEF) DEF(1) DEF(2) DEF(3) DEF(4) DEF(5) DEF(6)
#if KG_SIMD == 2
/* fp32 on 16 lanes (the AVX-512 build): the tile's row i is one vector c_i,
 * lane l of it column l, summed as ukr sums it (blocks of 64 fused
 * multiply-adds from 0, added to C's running sum, then the bias): the same
 * operations per lane, so the same bits. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr16)(const int MR, int64_t kc,
                                                              const float *restrict a,
                                                              const float *restrict b,
                                                              float *const *cr, bool first,
                                                              const float *bias) {
    const v16f z = {0};
    for (int64_t k0 = 0; k0 < kc; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < kc ? k0 + MPX_ACC_FP32_BLOCK : kc;
#define KG_DECL(i) v16f c##i = z;
        KG_ROWS(KG_DECL)
#undef KG_DECL
        const float *ak = a + k0 * KG_MR, *bk = b + k0 * KG_NR;
        for (int64_t k = k0; k < k1; k++, ak += KG_MR, bk += KG_NR) {
            v16f bv;
            memcpy(&bv, bk, sizeof bv);
#define KG_MAC(i)                                                                        \
    if (MR > i) {                                                                        \
        c##i = (v16f)_mm512_fmadd_ps((__m512)KG_F(splat16)(ak[i]), (__m512)bv, (__m512)c##i); \
    }
            KG_ROWS(KG_MAC)
#undef KG_MAC
        }
        const bool f = first && k0 == 0, last = bias && k1 == kc;
#define KG_PUT(i)                                                                        \
    if (MR > i) {                                                                        \
        v16f r = z;                                                                      \
        if (!f) memcpy(&r, cr[i], sizeof r);                                             \
        r += c##i;                                                                       \
        if (last) r += KG_F(splat16)(bias[i]);                                           \
        memcpy(cr[i], &r, sizeof r);                                                     \
    }
        KG_ROWS(KG_PUT)
#undef KG_PUT
    }
}

/* fp32, MR rows by NP 16-column panels a call (the AVX-512 build): MR NP
 * sums in registers (6 x 4: 24 of the 32), so that enough independent fused
 * multiply-adds are in flight to cover their latency on both FMA ports,
 * where ukr16's 6 left them idle. B's term k of panel p is 16 floats at
 *  - packed B (boff NULL): bq + k * 16 + p * pstride (panels kc * 16 apart);
 *  - B where it lies: bq + boff[k] + p * 16 (a convolution's strip, a fixed
 *    shift per k), so nothing is packed: the terms of consecutive k are
 *    neighbouring taps of the same input rows, and a 64-column group's B
 *    for 128 terms is a few KiB read from L1 by every row panel (packing it
 *    had cost a sixth of ResNet-18's forward).
 * Row i of C's tile is cr[i] .. cr[i] + 16 NP, one run. Each lane's
 * operations are ukr16's (blocks of 64 fused multiply-adds from 0, added to
 * C's running sum, then the bias), so the bits are the same.
 * anext (or NULL): the next call's A, fetched into L1 a line every other
 * term. A panel's K block is 3 KiB of its own, 6 K floats from the next
 * panel's, so each call began with a wait on memory the prefetchers had
 * not seen coming (a ResNet's last stage, 9 MB of weights and 49 columns,
 * runs at about two thirds of the rate without it).
 * ar (or NULL): A's rows where they lie, row i's term k at ar[i][k], in
 * place of the packed panel a (ukrl below), or at ar[i][aoff[k]] where
 * aoff is given (ukro below). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr16d)(const int MR, const int NP, int64_t kc,
                                                               const float *restrict a,
                                                               const float *restrict bq,
                                                               const int64_t *restrict boff, int64_t pstride,
                                                               float *const *cr, bool first,
                                                               const float *bias, const float *anext,
                                                               const __mmask16 tail, const float *const *ar,
                                                               const int64_t *aoff) {
    const v16f z = {0};
    for (int64_t k0 = 0; k0 < kc; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < kc ? k0 + MPX_ACC_FP32_BLOCK : kc;
        v16f c[KG_MR][4];
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) c[i][p] = z;
        const float *ak = ar ? NULL : a + k0 * KG_MR;
        for (int64_t k = k0; k < k1; k++, ak = ar ? NULL : ak + KG_MR) {
            if (anext && !(k & 1)) __builtin_prefetch(anext + k * KG_MR, 0, 3);
            const float *bk = boff ? bq + boff[k] : bq + k * KG_NR;
            const int64_t ps = boff ? KG_NR : pstride;
            v16f bv[4];
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) memcpy(&bv[p], bk + p * ps, sizeof bv[p]);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                const __m512 ai = (__m512)KG_F(splat16)(ar ? ar[i][aoff ? aoff[k] : k] : ak[i]);
#pragma GCC unroll 4
                for (int p = 0; p < NP; p++) c[i][p] = (v16f)_mm512_fmadd_ps(ai, (__m512)bv[p], (__m512)c[i][p]);
            }
        }
        const bool f = first && k0 == 0, last = bias && k1 == kc;
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) {
                /* the last panel's columns past tail are neither read nor
                 * written (masked: no fault past the row's end either) */
                const __mmask16 m = p == NP - 1 ? tail : (__mmask16)0xffff;
                v16f r = z;
                if (!f) r = (v16f)_mm512_maskz_loadu_ps(m, cr[i] + p * KG_NR);
                r += c[i][p];
                if (last) r += KG_F(splat16)(bias[i]);
                _mm512_mask_storeu_ps(cr[i] + p * KG_NR, m, (__m512)r);
            }
    }
}

/* Every (MR, NP) pair of ukr16d as its own copy; pstride: B's panels
 * apart (KG_NR where B lies, kc * KG_NR packed); tail: the columns of the
 * last panel that are C's (mask). */
typedef void (*KG_F(ukrd_fn))(int64_t kc, const float *a, const float *bq, const int64_t *boff, int64_t pstride,
                              float *const *cr, bool first, const float *bias, const float *anext, __mmask16 tail);
#define KG_UKRD_DEF(MR, NP)                                                                                    \
    static KG_TARGET void KG_F(ukrd_##MR##_##NP)(int64_t kc, const float *a, const float *bq, const int64_t *boff,  \
                                               int64_t pstride, float *const *cr, bool first, const float *bias, \
                                               const float *anext, __mmask16 tail) {                             \
        KG_F(ukr16d)(MR, NP, kc, a, bq, boff, pstride, cr, first, bias, anext, tail, NULL, NULL);              \
    }
#define KG_UKRD_MR(MR) KG_UKRD_DEF(MR, 1) KG_UKRD_DEF(MR, 2) KG_UKRD_DEF(MR, 4)
KG_PER_MR(KG_UKRD_MR)
#undef KG_UKRD_MR
#undef KG_UKRD_DEF
#define KG_UKRD_ROW(MR) {KG_F(ukrd_##MR##_1), KG_F(ukrd_##MR##_2), KG_F(ukrd_##MR##_4)}
static const KG_F(ukrd_fn) KG_F(ukrd_table)[KG_MR][3] = {KG_UKRD_ROW(1), KG_UKRD_ROW(2), KG_UKRD_ROW(3),
                                                           KG_UKRD_ROW(4), KG_UKRD_ROW(5), KG_UKRD_ROW(6)};
#undef KG_UKRD_ROW

/* ukr16d with A's rows read where they lie (ar[i] + k: an fp32 product's
 * A whose terms are runs, not kept, not rounded, not checked: kg_run's
 * alies) from packed B: the same fused multiply-adds in the same order, so
 * the same bits, without the pass that packs A first. That pass was a
 * quarter of ViT-B/16's attention products P V (12 heads' 197 x 197
 * probabilities packed a value at a time before any product started). */
typedef void (*KG_F(ukrl_fn))(int64_t kc, const float *const *ar, const float *bq, int64_t pstride, float *const *cr,
                              bool first, const float *bias, __mmask16 tail);
#define KG_UKRL_DEF(MR, NP)                                                                                     \
    static KG_TARGET void KG_F(ukrl_##MR##_##NP)(int64_t kc, const float *const *ar, const float *bq,            \
                                               int64_t pstride, float *const *cr, bool first, const float *bias, \
                                               __mmask16 tail) {                                                 \
        KG_F(ukr16d)(MR, NP, kc, NULL, bq, NULL, pstride, cr, first, bias, NULL, tail, ar, NULL);               \
    }
#define KG_UKRL_MR(MR) KG_UKRL_DEF(MR, 1) KG_UKRL_DEF(MR, 2) KG_UKRL_DEF(MR, 4)
KG_PER_MR(KG_UKRL_MR)
#undef KG_UKRL_MR
#undef KG_UKRL_DEF
#define KG_UKRL_ROW(MR) {KG_F(ukrl_##MR##_1), KG_F(ukrl_##MR##_2), KG_F(ukrl_##MR##_4)}
static const KG_F(ukrl_fn) KG_F(ukrl_table)[KG_MR][3] = {KG_UKRL_ROW(1), KG_UKRL_ROW(2), KG_UKRL_ROW(3),
                                                           KG_UKRL_ROW(4), KG_UKRL_ROW(5), KG_UKRL_ROW(6)};
#undef KG_UKRL_ROW

/* ukr16d with A's row i's term k at ar[i][aoff[k]]: a narrow map's
 * outputs (lanes_item, whose "rows" are 6 outputs) read where they lie in
 * the convolution's shared copy, term k a fixed shift of each output's
 * place, or in a 1x1 convolution's input itself. The same values as the
 * packing of 6-output panels (kg_tpix_fn) put before every call, in the
 * same order, so the same bits, without that pass: it was 4.4% of
 * ResNet-18's forward's CPU time on two threads (perf), and its 14 x 14
 * and 7 x 7 convolutions take 6.45-6.69 ms a forward against 6.86-7.00
 * (Zen 5, two threads, three interleaved profiles). The AVX2 build keeps
 * the packing (its kernel reads A packed). */
typedef void (*KG_F(ukro_fn))(int64_t kc, const float *const *ar, const int64_t *aoff, const float *bq,
                              int64_t pstride, float *const *cr, bool first, __mmask16 tail);
#define KG_UKRO_DEF(MR, NP)                                                                                     \
    static KG_TARGET void KG_F(ukro_##MR##_##NP)(int64_t kc, const float *const *ar, const int64_t *aoff,        \
                                               const float *bq, int64_t pstride, float *const *cr, bool first,   \
                                               __mmask16 tail) {                                                 \
        KG_F(ukr16d)(MR, NP, kc, NULL, bq, NULL, pstride, cr, first, NULL, NULL, tail, ar, aoff);               \
    }
#define KG_UKRO_MR(MR) KG_UKRO_DEF(MR, 1) KG_UKRO_DEF(MR, 2) KG_UKRO_DEF(MR, 4)
KG_PER_MR(KG_UKRO_MR)
#undef KG_UKRO_MR
#undef KG_UKRO_DEF
#define KG_UKRO_ROW(MR) {KG_F(ukro_##MR##_1), KG_F(ukro_##MR##_2), KG_F(ukro_##MR##_4)}
static const KG_F(ukro_fn) KG_F(ukro_table)[KG_MR][3] = {KG_UKRO_ROW(1), KG_UKRO_ROW(2), KG_UKRO_ROW(3),
                                                           KG_UKRO_ROW(4), KG_UKRO_ROW(5), KG_UKRO_ROW(6)};
#undef KG_UKRO_ROW

/* The rounded modes on 16 lanes: ukr's rounded branch (each product an fp32
 * product, every addition rounded to the format, the bias one more rounded
 * addition) with one vector per row; the same operations per lane, so the
 * same bits. It gains a few percent, not the 2x the lane count
 * suggests: each sum is a chain of multiply, add and two conversions per
 * term, so the kernel waits on latency, and one vector a row keeps 6 chains
 * in flight where 8 lanes kept 12. Two 16-column panels a call would keep
 * 12 again. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr16r)(const int MR, const int RM, int64_t kc,
                                                               const float *restrict a,
                                                               const float *restrict b,
                                                               float *const *cr, bool first,
                                                               const float *bias) {
    const v16f z = {0};
#define KG_DECL(i) v16f c##i = z;
    KG_ROWS(KG_DECL)
#undef KG_DECL
    if (!first) {
#define KG_GET(i) if (MR > i) memcpy(&c##i, cr[i], sizeof c##i);
        KG_ROWS(KG_GET)
#undef KG_GET
    }
    const float *ak = a, *bk = b;
    for (int64_t k = 0; k < kc; k++, ak += KG_MR, bk += KG_NR) {
        v16f bv;
        memcpy(&bv, bk, sizeof bv);
#define KG_RMAC(i)                                                                       \
    if (MR > i) {                                                                        \
        c##i = KG_F(rsum16)(RM, c##i, KG_F(splat16)(ak[i]) * bv);                        \
    }
        KG_ROWS(KG_RMAC)
#undef KG_RMAC
    }
#define KG_RPUT(i)                                                                       \
    if (MR > i) {                                                                        \
        if (bias) c##i = KG_F(rsum16)(RM, c##i, KG_F(splat16)(bias[i]));                 \
        memcpy(cr[i], &c##i, sizeof c##i);                                               \
    }
    KG_ROWS(KG_RPUT)
#undef KG_RPUT
}
/* ukr16r on a whole 6-row panel and two 16-column panels of packed B a
 * call: 12 chains of multiply, add and rounding in flight where ukr16r's 6
 * waited on their latency (ResNet-18's fp16-accumulated run spent two
 * thirds of its time there). Each lane's operations and their order are
 * ukr16r's, so the bits are the same. (Four panels: 24 sums and the
 * rounding's temporaries do not fit the 32 registers.) */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr16rp)(const int RM, int64_t kc,
                                                                const float *restrict a,
                                                                const float *restrict b,
                                                                float *const *cr, bool first,
                                                                const float *bias) {
    enum { NP = 2 };
    const v16f z = {0};
    v16f c[KG_MR][NP];
#pragma GCC unroll 6
    for (int i = 0; i < KG_MR; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) {
            c[i][p] = z;
            if (!first) memcpy(&c[i][p], cr[i] + p * KG_NR, sizeof c[i][p]);
        }
    const float *ak = a, *bk = b;
    const int64_t ps = kc * KG_NR;
    for (int64_t k = 0; k < kc; k++, ak += KG_MR, bk += KG_NR) {
        v16f bv[NP];
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) memcpy(&bv[p], bk + p * ps, sizeof bv[p]);
#pragma GCC unroll 6
        for (int i = 0; i < KG_MR; i++) {
            const v16f ai = KG_F(splat16)(ak[i]);
#pragma GCC unroll 2
            for (int p = 0; p < NP; p++) c[i][p] = KG_F(rsum16)(RM, c[i][p], ai * bv[p]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < KG_MR; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) {
            if (bias) c[i][p] = KG_F(rsum16)(RM, c[i][p], KG_F(splat16)(bias[i]));
            memcpy(cr[i] + p * KG_NR, &c[i][p], sizeof c[i][p]);
        }
}
typedef void (*KG_F(ukrp_fn))(int64_t kc, const float *a, const float *b, float *const *cr, bool first,
                              const float *bias);
#define KG_UKRP_DEF(RM)                                                                                  \
    static KG_TARGET void KG_F(ukrp_##RM)(int64_t kc, const float *a, const float *b, float *const *cr, \
                                          bool first, const float *bias) {                              \
        KG_F(ukr16rp)(RM, kc, a, b, cr, first, bias);                                                   \
    }
KG_UKRP_DEF(1)
KG_UKRP_DEF(2)
KG_UKRP_DEF(3)
#undef KG_UKRP_DEF
/* [mode]: the rounded modes' two-panel calls (fp32 takes ukrd_table) */
static const KG_F(ukrp_fn) KG_F(ukrp_table)[4] = {NULL, KG_F(ukrp_1), KG_F(ukrp_2), KG_F(ukrp_3)};

#define KG_UKR_CALL(RM, MR) \
    if (RM == KG_FP32) KG_F(ukr16)(MR, kc, a, b, cr, first, bias); else KG_F(ukr16r)(MR, RM, kc, a, b, cr, first, bias);
#else
#define KG_UKR_CALL(RM, MR) KG_F(ukr)(MR, RM, kc, a, b, cr, first, bias);
#endif
#undef KG_ROWS

/* Every (mode, MR) pair as its own specialised copy, chosen through a
 * constant table once per panel row. */
typedef void (*KG_F(ukr_fn))(int64_t kc, const float *a, const float *b, float *const *cr,
                             bool first, const float *bias);
#define KG_UKR_DEF(RM, MR)                                                               \
    static KG_TARGET void KG_F(ukr_##RM##_##MR)(int64_t kc, const float *a, const float *b,      \
                                      float *const *cr, bool first, const float *bias) { \
        KG_UKR_CALL(RM, MR)                                                              \
    }
/* One copy per row count 1 .. KG_MR (DEF(MR)), and the table of a family's
 * copies (name_1 .. name_6) by row count. */
#define KG_MR_TABLE(name) \
    {KG_F(name##_1), KG_F(name##_2), KG_F(name##_3), KG_F(name##_4), KG_F(name##_5), KG_F(name##_6)}
_Static_assert(KG_MR == 6, "KG_PER_MR and KG_MR_TABLE list 6 row counts");
#define KG_UKR_MODE(RM) KG_UKR_DEF(RM, 1) KG_UKR_DEF(RM, 2) KG_UKR_DEF(RM, 3) \
    KG_UKR_DEF(RM, 4) KG_UKR_DEF(RM, 5) KG_UKR_DEF(RM, 6)
KG_UKR_MODE(0)
KG_UKR_MODE(1)
KG_UKR_MODE(2)
KG_UKR_MODE(3)
#undef KG_UKR_MODE
#undef KG_UKR_DEF
#undef KG_UKR_CALL
_Static_assert(KG_FP32 == 0 && KG_FP16 == 1 && KG_BF16 == 2 && KG_TF32 == 3, "table order");
#define KG_UKR_ROW(RM) {KG_F(ukr_##RM##_1), KG_F(ukr_##RM##_2), KG_F(ukr_##RM##_3), \
                        KG_F(ukr_##RM##_4), KG_F(ukr_##RM##_5), KG_F(ukr_##RM##_6)}
static const KG_F(ukr_fn) KG_F(ukr_table)[4][KG_MR] = {KG_UKR_ROW(0), KG_UKR_ROW(1), KG_UKR_ROW(2),
                                                        KG_UKR_ROW(3)};
#undef KG_UKR_ROW

#if KG_SIMD == 1
/* fp16 sums of fp16 operands (kg_gemm.f16, every product exact) on AVX2:
 * ukr's rounded branch with roz8's round-to-odd, MXCSR's rounding set to
 * towards zero for the call and restored after (per thread; the
 * conversions to fp16 take round-to-nearest-even from their immediate, not
 * from MXCSR). Every float operation of the call sits between the two: it
 * works on C, A and B loaded after the first and feeds the stores before
 * the second, which GCC keeps in order (ldmxcsr is a volatile operation on
 * memory). The same bits as ukr_1_*, whose Fast2Sum steps are nearly all
 * of an fp16-accumulated run's time on a CPU without AVX-512. */
#define KG_UKRZ_DEF(MR)                                                                  \
    static KG_TARGET void KG_F(ukrz_##MR)(int64_t kc, const float *a, const float *b,     \
                                          float *const *cr, bool first, const float *bias) { \
        const unsigned csr = KG_F(csr_towards_zero)();                                   \
        KG_F(ukr)(MR, KG_FP16Z, kc, a, b, cr, first, bias);                              \
        _mm_setcsr(csr);                                                                 \
    }
KG_PER_MR(KG_UKRZ_DEF)
#undef KG_UKRZ_DEF
static const KG_F(ukr_fn) KG_F(ukrz_table)[KG_MR] = KG_MR_TABLE(ukrz);
#endif

#if KG_SIMD == 2 && KG_HAVE_H16
/* ---- fp16 accumulation on AVX512-FP16 ------------------------------------------------------
 * With fp16 operands (A, B and the bias hold fp16 values: the node computes
 * in fp16) each step of an fp16-accumulated sum, the exact running sum +
 * product rounded once to fp16, is one fp16 fused multiply-add (vfmaddph,
 * round-to-nearest-even from MXCSR; the FP16 instructions do not flush
 * subnormals): the same bits as rsum16's round-to-odd sum and conversions
 * (test_formats checks the step against this instruction), four
 * instructions fewer per term and 32 lanes to a register. The sums stay in
 * fp16 registers; A's panel is converted once a call (exact), each row's
 * term broadcast from it as the instruction's memory operand; B's two
 * panels are converted as they are read. C holds fp16 values between K
 * blocks, so reading it back is exact. */
/* MR rows of A's panel (a: [kc][6]) against NP (1 or 2) panels of packed B
 * (ps floats apart; a partial last panel is zero-padded), C's last panel
 * read and written in the columns tail selects only (masked: where C's rows
 * are runs, a 7 x 7 map is 3 panels and a column); the ukr calling
 * convention otherwise. */
static inline KG_H16_TARGET __attribute__((always_inline)) void KG_F(ukrh)(const int MR, const int NP, int64_t kc,
                                                                 const float *restrict a,
                                                                 const float *restrict b, int64_t ps,
                                                                 float *const *cr, bool first,
                                                                 const float *bias, const __mmask16 tail) {
    kg_half ah[KG_KC * KG_MR];
    const int64_t na = kc * KG_MR;
    int64_t n = 0;
    for (; n + 16 <= na; n += 16) _mm256_storeu_ph(ah + n, KG_F(h16_ld)(a + n));
    if (n < na) {
        const __mmask16 m = (__mmask16)((1u << (na - n)) - 1u);
        _mm256_mask_storeu_epi16(ah + n, m, _mm256_castph_si256(_mm512_cvtxps_ph(_mm512_maskz_loadu_ps(m, a + n))));
    }
    if (NP == 2) {
        __m512h c[KG_MR];
#pragma GCC unroll 6
        for (int i = 0; i < KG_MR; i++)
            if (i < MR) c[i] = first ? _mm512_setzero_ph() : KG_F(h16_ld2)(cr[i], cr[i] + KG_NR, tail);
        const float *bk = b;
        const kg_half *ak = ah;
        for (int64_t k = 0; k < kc; k++, bk += KG_NR, ak += KG_MR) {
            const __m512h bv = KG_F(h16_ld2)(bk, bk + ps, 0xffff);
#pragma GCC unroll 6
            for (int i = 0; i < KG_MR; i++)
                if (i < MR) c[i] = _mm512_fmadd_ph(_mm512_set1_ph(ak[i]), bv, c[i]);
        }
#pragma GCC unroll 6
        for (int i = 0; i < KG_MR; i++)
            if (i < MR) {
                if (bias) c[i] = _mm512_add_ph(c[i], _mm512_set1_ph((kg_half)bias[i]));
                KG_F(h16_st2)(cr[i], c[i], tail);
            }
    } else {
        __m256h c[KG_MR];
#pragma GCC unroll 6
        for (int i = 0; i < KG_MR; i++)
            if (i < MR) c[i] = first ? _mm256_setzero_ph() : _mm512_cvtxps_ph(_mm512_maskz_loadu_ps(tail, cr[i]));
        const float *bk = b;
        const kg_half *ak = ah;
        for (int64_t k = 0; k < kc; k++, bk += KG_NR, ak += KG_MR) {
            const __m256h bv = KG_F(h16_ld)(bk);
#pragma GCC unroll 6
            for (int i = 0; i < KG_MR; i++)
                if (i < MR) c[i] = _mm256_fmadd_ph(_mm256_set1_ph(ak[i]), bv, c[i]);
        }
#pragma GCC unroll 6
        for (int i = 0; i < KG_MR; i++)
            if (i < MR) {
                if (bias) c[i] = _mm256_add_ph(c[i], _mm256_set1_ph((kg_half)bias[i]));
                _mm512_mask_storeu_ps(cr[i], tail, _mm512_cvtxph_ps(c[i]));
            }
    }
}
typedef void (*KG_F(ukrh_fn))(int64_t kc, const float *a, const float *b, int64_t ps, float *const *cr, bool first,
                              const float *bias, __mmask16 tail);
#define KG_UKRH_DEF(MR, NP)                                                                                 \
    static KG_H16_TARGET void KG_F(ukrh_##MR##_##NP)(int64_t kc, const float *a, const float *b, int64_t ps, \
                                                    float *const *cr, bool first, const float *bias,         \
                                                    __mmask16 tail) {                                        \
        KG_F(ukrh)(MR, NP, kc, a, b, ps, cr, first, bias, tail);                                           \
    }
#define KG_UKRH_MR(MR) KG_UKRH_DEF(MR, 1) KG_UKRH_DEF(MR, 2)
KG_UKRH_MR(1)
KG_UKRH_MR(2)
KG_UKRH_MR(3)
KG_UKRH_MR(4)
KG_UKRH_MR(5)
KG_UKRH_MR(6)
#undef KG_UKRH_MR
#undef KG_UKRH_DEF
/* [rows - 1][panels - 1] */
#define KG_UKRH_ROW(MR) {KG_F(ukrh_##MR##_1), KG_F(ukrh_##MR##_2)}
static const KG_F(ukrh_fn) KG_F(ukrh_table)[KG_MR][2] = {KG_UKRH_ROW(1), KG_UKRH_ROW(2), KG_UKRH_ROW(3),
                                                         KG_UKRH_ROW(4), KG_UKRH_ROW(5), KG_UKRH_ROW(6)};
#undef KG_UKRH_ROW
/* One whole panel, any rows, in ukr_table's calling convention (the
 * per-panel loops of gemm_item). */
#define KG_UKRH1_DEF(MR)                                                                                  \
    static KG_H16_TARGET void KG_F(ukrh1_##MR)(int64_t kc, const float *a, const float *b, float *const *cr, \
                                              bool first, const float *bias) {                            \
        KG_F(ukrh)(MR, 1, kc, a, b, 0, cr, first, bias, 0xffff);                                         \
    }
KG_PER_MR(KG_UKRH1_DEF)
#undef KG_UKRH1_DEF
static const KG_F(ukr_fn) KG_F(ukrh1_table)[KG_MR] = KG_MR_TABLE(ukrh1);
#endif

/* ---- one work item of a GEMM: group g, columns [q0, q0 + icols) ------------------------ */

/* The item's rows of A (panels i0 .. i1; apk: panel i0's terms from this
 * K block's first, the next panel's ask * 6 floats on) against np panels of B: packed (bq, panels kc * 16 apart;
 * boff NULL) or where it lies (bq + boff[k], the AVX-512 fp32 build only).
 * Row r of A's panel i writes C at cbase + crow[i * 6 + r], or with crow
 * NULL at cbase + ((i - i0) * 6 + r) * ldt (the item's tile); ag (or
 * NULL, the AVX-512 fp32 build only): A's rows where they lie, this K
 * block's first term of row m at ag + m ams (apk unused). A whole 6-row
 * panel takes its np panels in one AVX-512 fp32 call (ukr16d; B where it
 * lies: any row count), the others a panel a call. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(panel_rows)(
    const kg_gemm *j, const KG_F(ukr_fn) *ukrs, int np, int64_t i0, int64_t i1, int64_t kc, const float *apk,
    int64_t ask, const float *bq, const int64_t *boff, float *cbase, const int64_t *crow, int64_t ldt, bool first,
    const float *bs, const float *bnext, int64_t bnext_n, int tail, const kg_bnext *bw, const float *ag) {
    const int64_t M = j->M;
    /* bnext (or NULL): bnext_n floats of B the next call of this item reads,
     * fetched into L2 a share a row panel (kept weights come from memory,
     * and a panel row's calls are too few for the prefetchers to run ahead
     * of: BERT's 64 rows are 11 panels). */
    const int64_t lines = bnext ? (bnext_n + 15) / 16 : 0, share = lines / (i1 - i0) + 1;
#if KG_SIMD != 2
    (void)boff, (void)tail, (void)ag;
#else
    const __mmask16 tmask = (__mmask16)(tail >= KG_NR ? 0xffffu : (1u << tail) - 1u);
#endif
    for (int64_t i = i0; i < i1; i++) {
        const int mr = (int)(M - i * KG_MR < KG_MR ? M - i * KG_MR : KG_MR);
        const float *ap = apk ? apk + (i - i0) * KG_MR * ask : NULL;
        const float *bi = bs ? bs + i * KG_MR : NULL;
        float *cr[KG_MR];
        for (int r = 0; r < mr; r++) cr[r] = cbase + (crow ? crow[i * KG_MR + r] : ((i - i0) * KG_MR + r) * ldt);
        for (int64_t l = (i - i0) * share; l < lines && l < (i - i0 + 1) * share; l++)
            __builtin_prefetch(bnext + l * 16, 0, 2);
        if (bw) /* this panel's share of the next call group's B where it lies */
            for (int64_t k = (i - i0) * bw->kc / (i1 - i0), k1 = (i - i0 + 1) * bw->kc / (i1 - i0); k < k1; k++)
                if (k == 0 || bw->off[k] - bw->off[k - 1] != 1)
                    for (int l = 0; l < 5; l++) __builtin_prefetch(bw->b + bw->off[k] + l * 16, 0, 3);
#if KG_SIMD == 2
        if (ag) { /* A where it lies (ukrl), row r at ag + (6 i + r) ams */
            const float *ar[KG_MR];
            for (int r = 0; r < mr; r++) ar[r] = ag + (i * KG_MR + r) * j->ams;
            KG_F(ukrl_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ar, bq, kc * KG_NR, cr, first, bi, tmask);
            continue;
        }
        if (boff || j->mode == KG_FP32) { /* any rows, np panels a call (ukr16d) */
            KG_F(ukrd_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ap, bq, boff, boff ? KG_NR : kc * KG_NR, cr, first, bi,
                                                            i + 1 < i1 ? ap + KG_MR * ask : NULL, tmask);
            continue;
        }
#if KG_HAVE_H16
        if (ukrs == KG_F(ukrh1_table)) { /* fp16 FMA: two panels a call, any rows, the last one partial */
            for (int p = 0; p < np; p += 2) {
                float *crp[KG_MR];
                for (int r = 0; r < mr; r++) crp[r] = cr[r] + p * KG_NR;
                const int two = p + 1 < np;
                KG_F(ukrh_table)[mr - 1][two](kc, ap, bq + p * kc * KG_NR, kc * KG_NR, crp, first, bi,
                                              p + 1 + two >= np ? tmask : (__mmask16)0xffff);
            }
            continue;
        }
#endif
        if (np > 1 && mr == KG_MR) {
            for (int p = 0; p < np; p += 2) {
                float *crp[KG_MR];
                for (int r = 0; r < KG_MR; r++) crp[r] = cr[r] + p * KG_NR;
                KG_F(ukrp_table)[j->mode](kc, ap, bq + p * kc * KG_NR, crp, first, bi);
            }
            continue;
        }
#endif
        for (int p = 0; p < np; p++) {
            float *crp[KG_MR];
            for (int r = 0; r < mr; r++) crp[r] = cr[r] + p * KG_NR;
            ukrs[mr - 1](kc, ap, bq + p * kc * KG_NR, crp, first, bi);
        }
    }
}

/* Whether the 16-column panel at grid column q, of an item ending at q1,
 * goes straight into C instead of the tile (the AVX2 and portable builds;
 * the AVX-512 one keeps 2-4 panels a call in the tile): its columns are
 * outputs of one grid row, all of them the item's. */
static inline KG_TARGET __attribute__((always_inline)) bool KG_F(panel_in_c)(const kg_gemm *j, int64_t q, int64_t q1) {
    return KG_SIMD < 2 && j->cs == 1 && q + KG_NR <= q1 && q % j->gw + KG_NR <= j->gvalid;
}

/* Where each column of the 16-column panel at grid column q (ncols of them
 * the item's) goes in a row of C: at[l], or -1 for a column that is not an
 * output (dropped, or past the item). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(panel_places)(const kg_gemm *j, int64_t q,
                                                                    int64_t ncols, int64_t *at) {
    for (int64_t l = 0, r = q / j->gw, cl = q % j->gw; l < KG_NR; l++) {
        at[l] = l < ncols && cl < j->gvalid ? r * j->rs + cl * j->cs : -1;
        if (++cl == j->gw) cl = 0, r++;
    }
}

static KG_TARGET void KG_F(gemm_item)(const kg_ctx *x, int tid, long item) {
    const kg_gemm *j = x->j;
    const int64_t M = j->M, N = j->N, K = j->K, mpan = (M + KG_MR - 1) / KG_MR;
    const int64_t per_g = x->nqb * x->nmb, g = item / per_g;
    const int64_t q0 = (x->amajor ? item % per_g % x->nqb : item % per_g / x->nmb) * x->icols;
    const int64_t mb = x->amajor ? item % per_g / x->nqb : item % x->nmb;
    const int64_t i0 = mb * x->mpb, i1 = i0 + x->mpb < mpan ? i0 + x->mpb : mpan;
    const int64_t q1 = q0 + x->icols < N ? q0 + x->icols : N;
    const float *apg = x->alies ? NULL : x->ap + g * mpan * KG_MR * K; /* (alies: A where it lies) */
    float *c = j->c + g * j->gc;
    const float *bias = j->bias ? j->bias + g * j->gbias : NULL;
    const float *src;
    int64_t qshift = 0;
    if (j->conv && x->shared) { /* the whole input, filled before the items */
        src = x->shared + g * j->conv->cig * x->schan;
    } else if (j->conv) { /* the input rows this item reads, as the strip */
        const kg_conv *v = j->conv;
        const int64_t rbase = q0 / v->Wq;
        float *st = x->strip[tid];
        for (int64_t ci = 0; ci < v->cig; ci++)
            KG_F(fill)(v, v->x + (g * v->cig + ci) * v->H * v->W, rbase, x->srows, st + ci * x->schan,
                    x->splane);
        src = st;
        qshift = rbase * v->Wq;
    } else {
        src = j->b + g * j->gb;
    }
    float *bp = x->bp[tid], *tile = x->tile[tid];
    const KG_F(ukr_fn) *ukrs = KG_F(ukr_table)[j->mode];
#if KG_SIMD == 2 && KG_HAVE_H16
    if (x->h16) ukrs = KG_F(ukrh1_table);
#endif
#if KG_SIMD == 1
    if (j->mode == KG_FP16 && j->f16) ukrs = KG_F(ukrz_table);
#endif
    /* Where C's rows are runs (a MatMul's, a 1x1 convolution's) */
    const bool runs = kg_c_runs(j);
    /* An fp32 convolution's B read where it lies in the shared copy (the
     * AVX-512 build, ukr16d), summed into the tile, or where C's rows are
     * runs (a grid that drops no column: a 1x1 convolution at stride 2,
     * ResNet's downsampling) straight into C, where it had been packed
     * per chunk first (one thread, 64 x 56 x 56 to 128 x 28 x 28: 0.13 ->
     * 0.10 ms). */
    const bool lies = KG_SIMD == 2 && j->conv && x->shared && j->mode == KG_FP32;
    /* There a last K block of at most 64 terms joins the one before it
     * (the kernel takes any length in blocks of 64, so the sums are the
     * same): a short block was a call of every row panel and column group
     * for a fraction of the terms, with C's trip through the tile (ResNet's
     * first convolution, 147 terms: 128 + 19; 576: 4 x 128 + 64). */
    const int64_t kmerge = lies ? MPX_ACC_FP32_BLOCK : 0;
    for (int64_t k0 = 0, kc; k0 < K; k0 += kc) {
        /* A cancel between two K blocks (an item is up to 512 columns by
         * every row: a 4096-row product's item is seconds on a loaded
         * machine, a block a sixteenth of it). C then holds part sums,
         * which the executor drops with the node's outputs (exec.c). */
        if (k0 > 0 && mpx_k_cancelled()) return;
        kc = K - k0 <= x->kc + kmerge ? K - k0 : x->kc;
        const bool first = k0 == 0;
        const float *bs = k0 + kc == K ? bias : NULL;
        const int64_t *boff = x->boff + k0;
        /* A's panels i0 .. i1 for this K block: the kept ones (apk, K terms
         * apart), or with ka_fmt those rounded into abuf (kc apart) */
        const float *apk = apg ? apg + i0 * KG_MR * K + k0 * KG_MR : NULL;
        int64_t ask = K;
        if (x->ka_fmt && apk) {
            float *ab = x->abuf[tid];
            for (int64_t i = i0; i < i1; i++)
                mpx_round_array(x->ka_fmt, ab + (i - i0) * KG_MR * kc, apk + (i - i0) * KG_MR * K, (size_t)(KG_MR * kc));
            apk = ab;
            ask = kc;
        }
#if KG_SIMD == 2
        if (lies) {
            /* B where it lies (ukr16d): 64 columns a call, into the tile
             * or C (the grid's last panel masked there: the tile is wide
             * enough for whole panels). */
            for (int64_t q = q0; q < q1;) {
                const int np = kg_group(kg_cdiv(q1 - q, KG_NR));
                const int tail = tile || q1 - q >= np * KG_NR ? KG_NR : (int)(q1 - q - (np - 1) * KG_NR);
                /* The next call group's B: the next columns, or the next K
                 * block's first. It lies in the shared copy, which came
                 * from L3 (half of it filled by the other thread): the
                 * first row panel of each group had waited on every line
                 * of its B, a sixth of a ResNet-18 convolution's time. */
                const bool more = q + np * KG_NR < q1;
                const int64_t kn0 = more ? k0 : k0 + kc;
                const kg_bnext bw = {.b = src + ((more ? q + np * KG_NR : q0) - qshift), .off = x->boff + kn0,
                                     .kc = K - kn0 < x->kc ? K - kn0 : x->kc};
                KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apk, ask, src + (q - qshift), boff,
                                 tile ? tile + (q - q0) : c + q, tile ? NULL : j->crow, x->ldt, first, bs, NULL, 0,
                                 tail, kn0 < K ? &bw : NULL, NULL);
                q += np * KG_NR;
            }
            continue;
        }
#endif
        /* Columns packed per chunk of panels (about 128 KiB: L2), each k's run
         * of the chunk read in one go (long runs suit the prefetchers). */
        int64_t cw = (KG_PACK / kc) / KG_NR * KG_NR;
        if (cw < KG_NR) cw = KG_NR;
        for (int64_t qa = q0; qa < q1; qa += cw) {
            const int64_t qb = qa + cw < q1 ? qa + cw : q1;
            const float *sa = src + (qa - qshift);
            /* The chunk's panels: B's kept packing (x->kb: [K block][panel][kc][16],
             * the same order), or packed here. */
            const float *bch = x->kb ? x->kb + k0 * x->kb_npad + qa * kc : bp;
            if (x->kb_fmt) { /* the kept fp32 chunk, rounded into bp (kg_ctx.kb_fmt) */
                mpx_round_array(x->kb_fmt, bp, bch, (size_t)(kg_cdiv(qb - qa, KG_NR) * KG_NR * kc));
                bch = bp;
            }
            /* floats from one panel of the chunk to the next (KG_BPAD) */
            const int64_t pstr = kc * KG_NR + (x->kb ? 0 : x->bpad);
            for (int64_t k = 0; !x->kb && k < kc; k++) {
                const float *s = sa + boff[k];
                float *d = bp + k * KG_NR;
                int64_t l = 0;
                for (; l + KG_NR <= qb - qa; l += KG_NR, d += pstr) {
                    KG_F(st8)(d, KG_F(ld8)(s + l));
                    KG_F(st8)(d + 8, KG_F(ld8)(s + l + 8));
                }
                if (l < qb - qa)
                    for (int64_t i = 0; i < KG_NR; i++) d[i] = l + i < qb - qa ? s[l + i] : 0.0f;
            }
            if (tile) {
                /* Into the item's tile, every panel one run (x->tile), or
                 * in the AVX2 and portable builds a panel whose columns are
                 * all outputs of one grid row straight into C. */
                for (int64_t q = qa; q < qb;) {
                    /* (several panels a call in the AVX-512 build: ukr16d, ukr16rp) */
                    const int np = KG_SIMD == 2 ? kg_group(kg_cdiv(qb - q, KG_NR)) : 1;
                    if (KG_F(panel_in_c)(j, q, q1))
                        KG_F(panel_rows)(j, ukrs, 1, i0, i1, kc, apk, ask, bch + (q - qa) / KG_NR * pstr, NULL,
                                         c + q / j->gw * j->rs + q % j->gw, j->crow, 0, first, bs, NULL, 0, KG_NR,
                                         NULL, NULL);
                    else
                        KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apk, ask, bch + (q - qa) / KG_NR * pstr, NULL,
                                         tile + (q - q0), NULL, x->ldt, first, bs, NULL, 0, KG_NR, NULL, NULL);
                    q += np * KG_NR;
                }
                continue;
            }
            int64_t qs = qa;
            if (KG_SIMD < 2 && kc <= KG_ROWS_FIRST_KC && runs) {
                /* C's rows are runs and the sums short (a 1x1 convolution
                 * with few input channels): a row panel at a time across the
                 * chunk's whole panels, so that each of its rows is written
                 * as one run. Panel by panel the 6 rows of every row panel
                 * took 64 bytes each, a 1x1 convolution's 96 rows 96 places
                 * far apart, and its stores waited on memory. */
                const int64_t qe = qa + (qb - qa) / KG_NR * KG_NR;
                for (int64_t i = i0; i < i1; i++) {
                    const kg_rows p = kg_rows_of(j, apk, ask, i0, bs, i);
                    float *cr[KG_MR];
                    for (int64_t q = qa; q < qe; q += KG_NR) {
                        for (int r = 0; r < p.mr; r++) cr[r] = c + p.crow[r] + q;
                        ukrs[p.mr - 1](kc, p.ap, bch + (q - qa) / KG_NR * pstr, cr, first, p.bi);
                    }
                }
                qs = qe;
            }
            for (int64_t q = qs; q < qb; q += KG_NR) {
                const int64_t ncols = qb - q < KG_NR ? qb - q : KG_NR;
                const float *bpp = bch + (q - qa) / KG_NR * pstr;
                const int64_t col = q % j->gw, cq = (q / j->gw) * j->rs + col * j->cs;
                const bool direct = ncols == KG_NR && j->cs == 1 &&
                                    (col + KG_NR <= j->gvalid || (j->gw == j->gvalid && j->rs == j->gw));
#if KG_SIMD == 2
                /* Where C's rows are runs: 2 or 4 whole panels a call
                 * (ukr16rp), straight into C; in fp32 1 to 4 panels (ukr16d),
                 * the last one partial (masked: a 7x7 map is 3 panels and a
                 * column). */
                /* (masked partial last panels: fp32 and fp16 FMA) */
                const bool masked = j->mode == KG_FP32 || x->h16;
                if (runs && (masked || q + 2 * KG_NR <= qb)) {
                    const int64_t left = qb - q;
                    const int np = kg_group(masked ? kg_cdiv(left, KG_NR) : left / KG_NR);
                    const int tail = np * KG_NR > left ? (int)(left - (np - 1) * KG_NR) : KG_NR;
                    /* the next group's panels, when B is kept (they follow these) */
                    const int64_t nq = q + np * KG_NR < qb ? qb - (q + np * KG_NR) : 0;
                    KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apk, ask, bpp, NULL, c + cq,
                                     j->crow, 0, first, bs, x->kb && !x->kb_fmt && nq ? bpp + np * KG_NR * kc : NULL,
                                     (nq < 4 * KG_NR ? nq : 4 * KG_NR) * kc, tail, NULL,
                                     x->alies ? j->a + g * j->ga + k0 : NULL);
                    q += (np - 1) * KG_NR;
                    continue;
                }
#endif

                /* Otherwise each column's place in C (-1: dropped), once a panel. */
                int64_t at[KG_NR];
                if (!direct) KG_F(panel_places)(j, q, ncols, at);
                for (int64_t i = i0; i < i1; i++) {
                    const kg_rows p = kg_rows_of(j, apk, ask, i0, bs, i);
                    float *cr[KG_MR];
                    if (direct) {
                        for (int r = 0; r < p.mr; r++) cr[r] = c + p.crow[r] + cq;
                        ukrs[p.mr - 1](kc, p.ap, bpp, cr, first, p.bi);
                        continue;
                    }
                    /* A tile that is not one run of C: through a buffer. */
                    float buf[KG_MR * KG_NR];
                    for (int r = 0; r < p.mr; r++) cr[r] = buf + r * KG_NR;
                    if (!first) /* the running sum so far (first: C is not read) */
                        for (int r = 0; r < p.mr; r++)
                            for (int64_t l = 0; l < KG_NR; l++)
                                buf[r * KG_NR + l] = at[l] >= 0 ? c[p.crow[r] + at[l]] : 0.0f;
                    ukrs[p.mr - 1](kc, p.ap, bpp, cr, first, p.bi);
                    for (int r = 0; r < p.mr; r++)
                        for (int64_t l = 0; l < KG_NR; l++)
                            if (at[l] >= 0) c[p.crow[r] + at[l]] = buf[r * KG_NR + l];
                }
            }
        }
    }
    if (!tile) return;
    if (KG_SIMD < 2) {
        /* The tile's panels' columns that are outputs, into C (the other
         * panels are there already): a grid row's part of a panel at a
         * time. Where every panel went through the tile, the copy-out was a
         * visible share of a 3 x 3 convolution's time. (The run-at-a-time
         * copy below, called per panel, is slower: a memcpy call per run of
         * at most 16 floats.) Each column's place in C is found once a
         * panel, not per row: two divisions an element made a 2x2 stride-2
         * ConvTranspose (every panel strided, through the tile) crawl. */
        for (int64_t q = q0; q < q1; q += KG_NR) {
            if (KG_F(panel_in_c)(j, q, q1)) continue;
            int64_t at[KG_NR];
            KG_F(panel_places)(j, q, (q + KG_NR < q1 ? q + KG_NR : q1) - q, at);
            for (int64_t i = i0; i < i1; i++)
                for (int r = 0; r < KG_MR && i * KG_MR + r < M; r++) {
                    const float *t = tile + ((i - i0) * KG_MR + r) * x->ldt + (q - q0);
                    float *cm = c + j->crow[i * KG_MR + r];
                    for (int64_t l = 0; l < KG_NR; l++)
                        if (at[l] >= 0) cm[at[l]] = t[l];
                }
        }
        return;
    }
    /* The tile's columns that are outputs, into C: a grid row's valid run
     * at a time. */
    for (int64_t i = i0; i < i1; i++)
        for (int r = 0; r < KG_MR && i * KG_MR + r < M; r++) {
            const float *t = tile + ((i - i0) * KG_MR + r) * x->ldt;
            float *cm = c + j->crow[i * KG_MR + r];
            for (int64_t q = q0; q < q1;) {
                const int64_t row = q / j->gw, col = q % j->gw;
                int64_t end = q + (j->gw - col);
                if (end > q1) end = q1;
                const int64_t n = (col < j->gvalid ? (j->gvalid < col + (end - q) ? j->gvalid - col : end - q) : 0);
                if (n > 0) {
                    if (j->cs == 1) {
#if KG_SIMD == 2
                        /* 16 floats a step, the last few under a mask: a memcpy
                         * call per grid row (56 floats on a 56 x 56 map) was a
                         * few percent of a 3x3 convolution's time */
                        float *d = cm + row * j->rs + col;
                        const float *sp = t + (q - q0);
                        int64_t l = 0;
                        for (; l + KG_NR <= n; l += KG_NR) _mm512_storeu_ps(d + l, _mm512_loadu_ps(sp + l));
                        if (l < n) {
                            const __mmask16 m = (__mmask16)((1u << (n - l)) - 1u);
                            _mm512_mask_storeu_ps(d + l, m, _mm512_maskz_loadu_ps(m, sp + l));
                        }
#else
                        memcpy(cm + row * j->rs + col, t + (q - q0), (size_t)n * sizeof *t);
#endif
                    } else
                        for (int64_t l = 0; l < n; l++) cm[row * j->rs + (col + l) * j->cs] = t[q - q0 + l];
                }
                q = end;
            }
        }
}

/* Item `item` of the shared copy's fill: a channel (of all groups'),
 * whole, or with bands (kg_ctx.fnb) band item / cig's rows of channel
 * item % cig. */
/* Channel ch of the convolution's input (group-major: group g's ch is
 * g * cig + ch), every row, into its place in a whole copy. */
static inline KG_TARGET void KG_F(fill_whole)(const kg_ctx *x, float *copy, int64_t ch) {
    const kg_conv *v = x->j->conv;
    KG_F(fill)(v, v->x + ch * v->H * v->W, 0, x->srows, copy + ch * x->schan, x->splane);
}

static KG_TARGET void KG_F(fill_chan)(const kg_ctx *x, int tid, long item) {
    (void)tid;
    const kg_conv *v = x->j->conv;
    if (!x->fnb) {
        KG_F(fill_whole)(x, x->shared, item);
        return;
    }
    const int64_t b = item / v->cig, ch = item % v->cig, r0 = x->frow[b], nr = x->frow[b + 1] - r0;
    if (nr > 0) KG_F(fill)(v, v->x + ch * v->H * v->W, r0, nr, x->shared + ch * x->schan + r0 * v->Wq, x->splane);
}

static KG_TARGET void KG_F(mv16)(int64_t K, const float *a16, const float *b, const int64_t *boff,
                                 const float *bias16, float *out16) {
    KG_F(lanes16)(true, K, a16, b, boff, bias16, out16);
}

/* ---- a narrow map's convolution, output channels in the lanes --------------------------------
 * Item: t_cpi 16-channel panels of C's rows. The micro-kernel (AVX-512:
 * ukr16d, AVX2: ukr) with the roles turned: its 6 "rows" are 6 outputs
 * (AVX-512: read where they lie, ukro; AVX2: x->t_pix's packed panels),
 * its panels 16 output channels (A kept in 16-row
 * panels, read as packed B), so each lane's sum
 * is one output value's, its terms in the same order and blocks as on the
 * grid: the same bits. Summed into the thread's tile ([output][channel]),
 * then written to C transposed with the bias added (the kernel's last
 * addition, done here: its bias is per row). */
#if KG_SIMD >= 1
static KG_TARGET void KG_F(lanes_item)(const kg_ctx *x, int tid, long item) {
    const kg_gemm *j = x->j;
    const int64_t K = j->K, M = j->M, N = x->t_n, npp = x->t_npp, cpi = x->t_cpi;
    const int64_t np16 = (M + KG_NR - 1) / KG_NR, cp0 = item * cpi, cp1 = cp0 + cpi < np16 ? cp0 + cpi : np16;
    const int64_t ldt = cpi * KG_NR;
    float *tile = x->tile[tid];
#if KG_SIMD == 2
    const float *from = x->t_from;
    if (x->t_copy[tid]) { /* the thread's own copy, filled by its first item */
        for (int64_t ci = 0; !x->t_filled[tid] && ci < j->conv->cig; ci++) KG_F(fill_whole)(x, x->t_copy[tid], ci);
        x->t_filled[tid] = 1;
        from = x->t_copy[tid];
    }
#endif
    for (int64_t k0 = 0; k0 < K; k0 += x->t_kc) {
        const int64_t kc = K - k0 < x->t_kc ? K - k0 : x->t_kc;
        const float *pix = x->t_pix ? x->t_pix + k0 * npp * KG_MR : NULL;
        /* The item's panels of this K block: kept (K * 16 floats apart), or
         * with ka_fmt rounded into abuf (kc * 16 apart) */
        const float *wk = x->t_w16 + cp0 * K * KG_NR + k0 * KG_NR;
        int64_t wst = K * KG_NR;
        if (x->ka_fmt) {
            float *ab = x->abuf[tid];
            for (int64_t cp = cp0; cp < cp1; cp++)
                mpx_round_array(x->ka_fmt, ab + (cp - cp0) * kc * KG_NR, wk + (cp - cp0) * K * KG_NR,
                                (size_t)(kc * KG_NR));
            wk = ab;
            wst = kc * KG_NR;
        }
#if KG_SIMD == 2
        /* With ka_fmt the next K block's kept weights (a line a term a
         * panel) are fetched a share a call: the rounding pass above reads
         * them all before any call, and from memory (ResNet-18's last
         * stage: 9 MB a convolution), where the kernel reading them in
         * place overlaps that wait with its sums. */
        const int64_t kn = x->ka_fmt && k0 + kc < K ? (K - (k0 + kc) < x->t_kc ? K - (k0 + kc) : x->t_kc) : 0;
        const float *wn = x->t_w16 + cp0 * K * KG_NR + (k0 + kc) * KG_NR;
        const int64_t nlines = kn * (cp1 - cp0), ncalls = kg_cdiv(cp1 - cp0, 4) * npp;
        const int64_t nshare = nlines / ncalls + 1;
        int64_t ncall = 0;
#endif
        for (int64_t cp = cp0; cp < cp1;) {
#if KG_SIMD == 2
            const int np = kg_group(cp1 - cp);
            const int64_t m_end = (cp + np) * KG_NR < M ? (cp + np) * KG_NR : M;
            const int tail = (int)(m_end - (cp + np - 1) * KG_NR);
            const __mmask16 tmask = (__mmask16)(tail >= KG_NR ? 0xffffu : (1u << tail) - 1u);
#else
            /* AVX2: a 16-channel panel a call (its 12 sums fill the
             * registers); the last panel's rows past M are the kept
             * packing's zeros, summed and not copied out */
            const int np = 1;
#endif
            const float *w = wk + (cp - cp0) * wst;
#if KG_SIMD == 1
            /* The weights of the next panel (or of the next K block's
             * first), a line a term, fetched a share a call: the kept
             * weights come from memory (ResNet-18's last stage: 9 MB a
             * convolution, each line read once), and each panel's first
             * call had waited on all of its block. With it a 512 x 7 x 7
             * 3x3 convolution takes about 0.7 of the time on one thread. */
            const bool same = cp + np < cp1;
            const float *wn = x->t_w16 + (same ? (cp + np) * K * KG_NR + k0 * KG_NR : cp0 * K * KG_NR + (k0 + kc) * KG_NR);
            const int64_t wlines = same ? kc : K - (k0 + kc) < x->t_kc ? K - (k0 + kc) : x->t_kc;
            const int64_t wshare = wlines / npp + 1;
#endif
            for (int64_t pp = 0; pp < npp; pp++) {
#if KG_SIMD == 1
                for (int64_t l = pp * wshare; l < wlines && l < (pp + 1) * wshare; l++)
                    __builtin_prefetch(wn + l * KG_NR, 0, 3);
#endif
                const int mr = (int)(N - pp * KG_MR < KG_MR ? N - pp * KG_MR : KG_MR);
                float *cr[KG_MR];
                for (int r = 0; r < mr; r++) cr[r] = tile + (pp * KG_MR + r) * ldt + (cp - cp0) * KG_NR;
                const float *ap = pix ? pix + pp * kc * KG_MR : NULL;
#if KG_SIMD == 2
                for (int64_t l = ncall * nshare; l < nlines && l < (ncall + 1) * nshare; l++)
                    __builtin_prefetch(wn + l / kn * K * KG_NR + l % kn * KG_NR, 0, 2);
                ncall++;
                if (!pix) {
                    const float *ar[KG_MR];
                    for (int r = 0; r < mr; r++) ar[r] = from + x->t_at[pp * KG_MR + r];
                    KG_F(ukro_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ar, x->boff + k0, w, wst, cr, k0 == 0,
                                                                    tmask);
                } else
                    KG_F(ukrd_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ap, w, NULL, wst, cr, k0 == 0, NULL,
                                                                    pp + 1 < npp ? ap + kc * KG_MR : NULL, tmask);
#else
                KG_F(ukr_table)[KG_FP32][mr - 1](kc, ap, w, cr, k0 == 0, NULL);
#endif
            }
            cp += np;
        }
    }
    for (int64_t m = cp0 * KG_NR; m < cp1 * KG_NR && m < M; m++) {
        float *cm = j->c + j->crow[m];
        const float *t = tile + (m - cp0 * KG_NR);
        if (j->bias)
            for (int64_t q = 0; q < N; q++) cm[q] = t[q * ldt] + j->bias[m];
        else
            for (int64_t q = 0; q < N; q++) cm[q] = t[q * ldt];
    }
}
#endif
