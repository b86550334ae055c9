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

/* ---- vector helpers ---------------------------------------------------------------- */

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(ld8)(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline KG_TARGET __attribute__((always_inline)) void KG_F(st8)(float *p, v8f v) {
    memcpy(p, &v, sizeof v);
}

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(splat)(float x) {
    return (v8f){x, x, x, x, x, x, x, x};
}

/* c + a * b rounded once (fused multiply-add), each lane: the fp32 sums'
 * step (kern_gemm.h). The SIMD builds use the FMA instruction; the portable
 * one C99's fmaf, which is the same operation (the exact a * b + c, rounded
 * once), so every build gives the same bits. */
static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(fma8)(v8f a, v8f b, v8f c) {
#if KG_SIMD
    return (v8f)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    v8f r;
    for (int l = 0; l < 8; l++) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* format.c's rne_exp8 on a vector of lanes: RNE to a format with fp32's
 * exponent and 23 - shift mantissa bits (bf16: 16, tf32: 13); NaNs quieted,
 * payload's top bits kept. Bit for bit mpx_round_value for bf16 and tf32.
 * One body for 8 and 16 lanes (VF, VU, VI: the float, unsigned and signed
 * vector types). */
#ifndef KG_RNE_BODY
#define KG_RNE_BODY(VF, VU, VI)                                                          \
    const uint32_t low = (1u << shift) - 1u;                                             \
    VU u;                                                                                \
    memcpy(&u, &x, sizeof u);                                                            \
    const VU r = (u + (low >> 1) + ((u >> shift) & 1u)) & ~low;                          \
    const VU nan = (u & ~low) | 0x00400000u;                                             \
    const VU m = (VU)((VI)(u & 0x7fffffffu) > 0x7f800000);                               \
    const VU o = (r & ~m) | (nan & m);                                                   \
    VF y;                                                                                \
    memcpy(&y, &o, sizeof y);                                                            \
    return y;
#endif

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(rne8)(v8f x, const unsigned shift) {
    KG_RNE_BODY(v8f, v8u, v8i)
}

/* Grid rows r0 .. r0 + nr - 1 of one input channel xc into the strip: the
 * plane of stride phase (ph, pw) at dst + (ph * sw + pw) * plane holds, in
 * row i and column jj, the padded input at row (r0 + i) sh + ph - pt and
 * column jj sw + pw - pl, zero outside the input. */
static inline KG_TARGET void KG_F(fill_cols)(const kg_conv *v, int64_t pw, int64_t *jlo, int64_t *jhi) {
    int64_t lo = kg_cdiv(v->pl - pw, v->sw), hi = kg_cdiv(v->W + v->pl - pw, v->sw);
    if (lo < 0) lo = 0;
    if (lo > v->Wq) lo = v->Wq;
    if (hi > v->Wq) hi = v->Wq;
    if (hi < lo) hi = lo;
    *jlo = lo, *jhi = hi;
}

static KG_TARGET void KG_F(fill)(const kg_conv *v, const float *xc, int64_t r0, int64_t nr,
                                 float *dst, int64_t plane) {
    /* Column jj of phase pw reads input column jj sw + pw - pl, inside the
     * row for jlo <= jj < jhi (found once for the first 8 phases). */
    int64_t jlo[8], jhi[8];
    for (int64_t pw = 0; pw < v->sw && pw < 8; pw++) KG_F(fill_cols)(v, pw, &jlo[pw], &jhi[pw]);
    /* Input row by input row, in order (grid row, then row phase), each
     * row's column phases while it is in L1. */
    for (int64_t i = 0; i < nr; i++)
        for (int64_t ph = 0; ph < v->sh; ph++) {
            const int64_t ir = (r0 + i) * v->sh + ph - v->pt;
            for (int64_t pw = 0; pw < v->sw; pw++) {
                float *row = dst + (ph * v->sw + pw) * plane + i * v->Wq;
                if (ir < 0 || ir >= v->H) {
                    memset(row, 0, (size_t)v->Wq * sizeof *row);
                    continue;
                }
                const float *in = xc + ir * v->W;
                const int64_t o = pw - v->pl;
                int64_t lo, hi;
                if (pw < 8) lo = jlo[pw], hi = jhi[pw];
                else KG_F(fill_cols)(v, pw, &lo, &hi);
                /* The pads at both ends (a column or two, as a rule) as one
                 * vector of zeros each, before the values: a memset call
                 * each (GCC makes one of a loop too) was a third of a
                 * stride-2 fill's time (a 96 x 112 x 112 depthwise input:
                 * 0.38 -> 0.28 ms in a copy of this loop, AMD EPYC of
                 * 2026-11). */
                if (v->Wq >= 8 && lo <= 8 && v->Wq - hi <= 8) {
                    const v8f z = {0};
                    KG_F(st8)(row, z);
                    KG_F(st8)(row + v->Wq - 8, z);
                } else {
                    memset(row, 0, (size_t)lo * sizeof *row);
                    memset(row + hi, 0, (size_t)(v->Wq - hi) * sizeof *row);
                }
                if (v->sw == 1) {
                    memcpy(row + lo, in + lo + o, (size_t)(hi - lo) * sizeof *row);
                } else {
                    int64_t jj = lo;
                    if (v->sw == 2) /* 8 at a time: the even lanes of 16 (lane 15,
                                     * column 2 jj + 15 + o, is inside the row while
                                     * jj + 8 < hi) */
                        for (; jj + 8 < hi; jj += 8) {
                            const float *p = in + 2 * jj + o;
                            KG_F(st8)(row + jj, KG_EVENS(KG_F(ld8)(p), KG_F(ld8)(p + 8)));
                        }
                    for (; jj < hi; jj++) row[jj] = in[jj * v->sw + o];
                }
            }
        }
}

/* ---- rounding a vector of running sums --------------------------------------------- */

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(rnd)(const int RM, v8f x) {
    if (RM == KG_FP16) {
#if KG_SIMD
        /* vcvtps2ph with immediate 0 is RNE whatever MXCSR says; as
         * mpx_round_value's F16C path (format.c). */
        return (v8f)_mm256_cvtph_ps(_mm256_cvtps_ph((__m256)x, 0));
#else
        float t[8];
        memcpy(t, &x, sizeof t);
        for (int i = 0; i < 8; i++) t[i] = mpx_round_value(&mpx_format_fp16, t[i]);
        memcpy(&x, t, sizeof t);
        return x;
#endif
    }
    if (RM == KG_BF16) return KG_F(rne8)(x, 16);
    if (RM == KG_TF32) return KG_F(rne8)(x, 13);
    return x;
}

/* c + p made round-to-odd in fp32 on each lane, the vector form of
 * kern_internal.h's mpx_ro_sum (why, and the proof, at format.c's
 * mpx_round_sum): Fast2Sum's exact error of the fp32 sum, larger magnitude
 * first; an inexact sum with an even last bit moves one step towards the
 * exact value; non-finite sums as they are. (The AVX-512 build's 16 lanes
 * use the rounding-mode instructions instead: ro16.) */
static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(ro8)(v8f c, v8f p) {
    const v8f r = c + p;
    v8u uc, up, ur;
    memcpy(&uc, &c, sizeof uc);
    memcpy(&up, &p, sizeof up);
    memcpy(&ur, &r, sizeof ur);
    const v8u cbig = (v8u)((uc & 0x7fffffffu) >= (up & 0x7fffffffu));
    const v8u ua = (uc & cbig) | (up & ~cbig), ub = (up & cbig) | (uc & ~cbig);
    v8f fa, fb;
    memcpy(&fa, &ua, sizeof fa);
    memcpy(&fb, &ub, sizeof fb);
    const v8f e = fb - (r - fa);
    v8u ue;
    memcpy(&ue, &e, sizeof ue);
    const v8u move = (v8u)((v8i)(ur & 0x7fffffffu) < 0x7f800000) & (v8u)((ue & 0x7fffffffu) != 0u) &
                     (v8u)((ur & 1u) == 0u);
    const v8u step = 1u - (((ue ^ ur) >> 31) << 1);
    const v8u o = ur + (step & move);
    v8f y;
    memcpy(&y, &o, sizeof y);
    return y;
}

#if KG_SIMD == 1
/* ro8 for a caller that has set MXCSR to round towards zero (ukrz): the
 * sum t = c + p truncated, its last bit set where it is inexact, as ro16
 * does with AVX-512's per-instruction modes; five instructions where ro8
 * takes about thirty. Inexact exactly when d = t - c (truncated too)
 * differs from p: if t is exact, d = p. If not and |c| >= |p|, t - c is
 * exact (Fast2Sum's first lemma holds for any faithful rounding in radix
 * 2), so d != p; if |p| > |c|, t has p's sign and lies between 0 and the
 * exact sum, so |t - c| < |p| and its truncation d is smaller than |p|
 * too. A finite sum that overflows gives the largest float (its last bit
 * is already set), where round-to-odd goes too. The comparison is ordered
 * (false where d is NaN), which leaves every non-finite sum as it is:
 * c + p infinite with c finite has d = p; with c infinite, d is NaN; a
 * NaN sum has a NaN d. Operands must be the fp32 values the step sees in
 * round-to-nearest: this mode rounds products too, so callers bring
 * products that are exact (fp16 times fp16). */
/* Sets MXCSR's rounding to towards zero (RC = 11) for roz8's callers;
 * returns the value to restore with _mm_setcsr. */
static inline KG_TARGET __attribute__((always_inline)) unsigned KG_F(csr_towards_zero)(void) {
    const unsigned csr = _mm_getcsr();
    _mm_setcsr((csr & ~0x6000u) | 0x6000u);
    return csr;
}

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(roz8)(v8f c, v8f p) {
    const v8f t = c + p, d = t - c;
    const v8u inexact = (v8u)_mm256_cmp_ps((__m256)d, (__m256)p, _CMP_NEQ_OQ);
    v8u u;
    memcpy(&u, &t, sizeof u);
    const v8u o = u | (inexact >> 31);
    v8f y;
    memcpy(&y, &o, sizeof y);
    return y;
}
#endif

/* One step of a rounded accumulation: the exact c + p rounded once to the
 * mode's format (kern_gemm.h). KG_FP16Z: fp16 with MXCSR set to round
 * towards zero by the caller (roz8). */
static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(rsum)(const int RM, v8f c, v8f p) {
#if KG_SIMD == 1
    if (RM == KG_FP16Z) return KG_F(rnd)(KG_FP16, KG_F(roz8)(c, p));
#endif
    return KG_F(rnd)(RM, KG_F(ro8)(c, p));
}

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
             * L1 and one L2 set and were read from L3 after every block.
             * Conv time in min-per-node profiles (mpx_bench profile, 4-6
             * alternating runs each, AMD EPYC of 2026-11): det 55.5 -> 49.8
             * ms, UNet 175.5 -> 170.9, ResNet-18 (no such planes) 32.5 ->
             * 32.8. */
#define KG_PFC(i)                                                                        \
    if (MR > i) {                                                                        \
        __builtin_prefetch(cr[i], 1, 3);                                                 \
        __builtin_prefetch(cr[i] + 15, 1, 3);                                            \
    }
            KG_ROWS(KG_PFC)
#undef KG_PFC
            const float *ak = a + k0 * KG_MR, *bk = b + k0 * KG_NR;
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

#if KG_SIMD == 2
static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(splat16)(float x) {
    return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

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
 * where ukr16's 6 left them idle (ResNet-18's 3x3 convolutions ran at 30
 * GMAC/s on two cores). B's term k of panel p is 16 floats at
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
 * not seen coming: ResNet-18's last stage (9 MB of weights, 49 columns)
 * ran at 65 GMAC/s, 100 with it (its forward 26 -> 22 ms). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(ukr16d)(const int MR, const int NP, int64_t kc,
                                                               const float *restrict a,
                                                               const float *restrict bq,
                                                               const int64_t *restrict boff, int64_t pstride,
                                                               float *const *cr, bool first,
                                                               const float *bias, const float *anext,
                                                               const __mmask16 tail) {
    const v16f z = {0};
    for (int64_t k0 = 0; k0 < kc; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < kc ? k0 + MPX_ACC_FP32_BLOCK : kc;
        v16f c[KG_MR][4];
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) c[i][p] = z;
        const float *ak = a + k0 * KG_MR;
        for (int64_t k = k0; k < k1; k++, ak += KG_MR) {
            if (anext && !(k & 1)) __builtin_prefetch(anext + k * KG_MR, 0, 3);
            const float *bk = boff ? bq + boff[k] : bq + k * KG_NR;
            const int64_t ps = boff ? KG_NR : pstride;
            v16f bv[4];
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) memcpy(&bv[p], bk + p * ps, sizeof bv[p]);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                const __m512 ai = (__m512)KG_F(splat16)(ak[i]);
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
        KG_F(ukr16d)(MR, NP, kc, a, bq, boff, pstride, cr, first, bias, anext, tail);                          \
    }
#define KG_UKRD_MR(MR) KG_UKRD_DEF(MR, 1) KG_UKRD_DEF(MR, 2) KG_UKRD_DEF(MR, 4)
KG_UKRD_MR(1)
KG_UKRD_MR(2)
KG_UKRD_MR(3)
KG_UKRD_MR(4)
KG_UKRD_MR(5)
KG_UKRD_MR(6)
#undef KG_UKRD_MR
#undef KG_UKRD_DEF
#define KG_UKRD_ROW(MR) {KG_F(ukrd_##MR##_1), KG_F(ukrd_##MR##_2), KG_F(ukrd_##MR##_4)}
static const KG_F(ukrd_fn) KG_F(ukrd_table)[KG_MR][3] = {KG_UKRD_ROW(1), KG_UKRD_ROW(2), KG_UKRD_ROW(3),
                                                           KG_UKRD_ROW(4), KG_UKRD_ROW(5), KG_UKRD_ROW(6)};
#undef KG_UKRD_ROW

/* rne8 on 16 lanes. */
static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(rne16)(v16f x, const unsigned shift) {
    KG_RNE_BODY(v16f, v16u, v16i)
}

/* rnd on 16 lanes: vcvtps2ph with immediate 0 (RNE whatever MXCSR says) and
 * back, or rne16: per lane what rnd does. (The zero-masked form with every
 * lane selected: the unmasked one's macro in GCC's header passes -1 as the
 * mask, which -Wsign-conversion flags in unoptimised builds.) */
static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(rnd16)(const int RM, v16f x) {
    if (RM == KG_FP16) return (v16f)_mm512_cvtph_ps(_mm512_maskz_cvtps_ph((__mmask16)0xffff, (__m512)x, 0));
    if (RM == KG_BF16) return KG_F(rne16)(x, 16);
    if (RM == KG_TF32) return KG_F(rne16)(x, 13);
    return x;
}

/* ro8 on 16 lanes: round_odd.h's mpx_ro16 (AVX-512's rounding modes), the
 * same value as ro8's Fast2Sum on every input (for fp16, bf16 and tf32: an
 * fp32 overflow is the largest float there, infinity in ro8, and both
 * round to the format's infinity), four instructions where ro8 takes about
 * fifteen. */
static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(ro16)(v16f c, v16f p) {
    return (v16f)mpx_ro16((__m512)c, (__m512)p);
}

static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(rsum16)(const int RM, v16f c, v16f p) {
    return KG_F(rnd16)(RM, KG_F(ro16)(c, p));
}

/* The rounded modes on 16 lanes: ukr's rounded branch (each product an fp32
 * product, every addition rounded to the format, the bias one more rounded
 * addition) with one vector per row; the same operations per lane, so the
 * same bits. Measured: acc16 runs 3-4% faster (ViT-B/16 1029 -> 993 ms,
 * ResNet-18 115 -> 111, det 165 -> 162), not the 2x the lane count
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
#define KG_PER_MR(DEF) DEF(1) DEF(2) DEF(3) DEF(4) DEF(5) DEF(6)
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
 * memory). The same bits as ukr_1_*: on a Zen 3 (no AVX-512) ResNet-18's
 * fp16-accumulated run spent 90% of its time in ukr_1_6. */
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
static inline KG_H16_TARGET __attribute__((always_inline)) __m256h KG_F(h16_ld)(const float *p) {
    return _mm512_cvtxps_ph(_mm512_loadu_ps(p));
}

/* 16 floats at p0 and the first of 16 at p1 (m1: which; the rest read as
 * 0) as 32 fp16 lanes. */
static inline KG_H16_TARGET __attribute__((always_inline)) __m512h KG_F(h16_ld2)(const float *p0, const float *p1,
                                                                       __mmask16 m1) {
    /* (integer casts: GCC 12 takes _mm512_castph256_ph512 through memory,
     * a store-forwarding stall a term) */
    const __m256h hi = _mm512_cvtxps_ph(_mm512_maskz_loadu_ps(m1, p1));
    return _mm512_castsi512_ph(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castph_si256(KG_F(h16_ld)(p0))),
                                                  _mm256_castph_si256(hi), 1));
}

/* 32 fp16 lanes as floats at p, the last 16 only where m1 says. */
static inline KG_H16_TARGET __attribute__((always_inline)) void KG_F(h16_st2)(float *p, __m512h v, __mmask16 m1) {
    _mm512_storeu_ps(p, _mm512_cvtxph_ps(_mm512_castph512_ph256(v)));
    _mm512_mask_storeu_ps(p + KG_NR, m1,
                          _mm512_cvtxph_ps(_mm256_castpd_ph(_mm512_extractf64x4_pd(_mm512_castph_pd(v), 1))));
}

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

/* The item's rows of A (panels i0 .. i1; apk: their terms from this K
 * block's first) against np panels of B: packed (bq, panels kc * 16 apart;
 * boff NULL) or where it lies (bq + boff[k], the AVX-512 fp32 build only).
 * Row r of A's panel i writes C at cbase + crow[i * 6 + r], or with crow
 * NULL at cbase + ((i - i0) * 6 + r) * ldt (the item's tile). A whole 6-row
 * panel takes its np panels in one AVX-512 fp32 call (ukr16d; B where it
 * lies: any row count), the others a panel a call. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(panel_rows)(
    const kg_gemm *j, const KG_F(ukr_fn) *ukrs, int np, int64_t i0, int64_t i1, int64_t kc, const float *apk,
    const float *bq, const int64_t *boff, float *cbase, const int64_t *crow, int64_t ldt, bool first,
    const float *bs, const float *bnext, int64_t bnext_n, int tail, const kg_bnext *bw) {
    const int64_t M = j->M, K = j->K;
    /* bnext (or NULL): bnext_n floats of B the next call of this item reads,
     * fetched into L2 a share a row panel (kept weights come from memory,
     * and a panel row's calls are too few for the prefetchers to run ahead
     * of: BERT's 64 rows are 11 panels). */
    const int64_t lines = bnext ? (bnext_n + 15) / 16 : 0, share = lines / (i1 - i0) + 1;
#if KG_SIMD != 2
    (void)boff, (void)tail;
#else
    const __mmask16 tmask = (__mmask16)(tail >= KG_NR ? 0xffffu : (1u << tail) - 1u);
#endif
    for (int64_t i = i0; i < i1; i++) {
        const int mr = (int)(M - i * KG_MR < KG_MR ? M - i * KG_MR : KG_MR);
        const float *ap = apk + i * KG_MR * K;
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
        if (boff || j->mode == KG_FP32) { /* any rows, np panels a call (ukr16d) */
            KG_F(ukrd_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ap, bq, boff, boff ? KG_NR : kc * KG_NR, cr, first, bi,
                                                            i + 1 < i1 ? ap + KG_MR * K : NULL, tmask);
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
    const int64_t per_g = x->nqb * x->nmb, g = item / per_g, q0 = (item % per_g / x->nmb) * x->icols;
    const int64_t mb = item % x->nmb, i0 = mb * x->mpb, i1 = i0 + x->mpb < mpan ? i0 + x->mpb : mpan;
    const int64_t q1 = q0 + x->icols < N ? q0 + x->icols : N;
    const float *apg = x->ap + g * mpan * KG_MR * K;
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
    for (int64_t k0 = 0; k0 < K; k0 += x->kc) {
        const int64_t kc = K - k0 < x->kc ? K - k0 : x->kc;
        const bool first = k0 == 0;
        const float *bs = k0 + kc == K ? bias : NULL;
        const int64_t *boff = x->boff + k0;
#if KG_SIMD == 2
        if (tile && j->conv && x->shared && j->mode == KG_FP32) {
            /* B where it lies (ukr16d): 64 columns a call, into the tile. */
            for (int64_t q = q0; q < q1;) {
                const int np = kg_group(kg_cdiv(q1 - q, KG_NR));
                /* The next call group's B: the next columns, or the next K
                 * block's first. It lies in the shared copy, which came
                 * from L3 (half of it filled by the other thread): the
                 * first row panel of each group had waited on every line
                 * of its B, a sixth of a ResNet-18 convolution's time. */
                const bool more = q + np * KG_NR < q1;
                const int64_t kn0 = more ? k0 : k0 + kc;
                const kg_bnext bw = {.b = src + ((more ? q + np * KG_NR : q0) - qshift), .off = x->boff + kn0,
                                     .kc = K - kn0 < KG_KC ? K - kn0 : KG_KC};
                KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apg + k0 * KG_MR, src + (q - qshift), boff,
                                 tile + (q - q0), NULL, x->ldt, first, bs, NULL, 0, KG_NR, kn0 < K ? &bw : NULL);
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
                        KG_F(panel_rows)(j, ukrs, 1, i0, i1, kc, apg + k0 * KG_MR, bch + (q - qa) / KG_NR * pstr, NULL,
                                         c + q / j->gw * j->rs + q % j->gw, j->crow, 0, first, bs, NULL, 0, KG_NR,
                                         NULL);
                    else
                        KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apg + k0 * KG_MR, bch + (q - qa) / KG_NR * pstr, NULL,
                                         tile + (q - q0), NULL, x->ldt, first, bs, NULL, 0, KG_NR, NULL);
                    q += np * KG_NR;
                }
                continue;
            }
            int64_t qs = qa;
            /* Where C's rows are runs (a MatMul's, a 1x1 convolution's) */
            const bool runs = j->cs == 1 && j->gw == j->gvalid && (j->N <= j->gw || j->rs == j->gw);
            if (KG_SIMD < 2 && kc <= KG_ROWS_FIRST_KC && runs) {
                /* C's rows are runs and the sums short (a 1x1 convolution
                 * with few input channels): a row panel at a time across the
                 * chunk's whole panels, so that each of its rows is written
                 * as one run. Panel by panel the 6 rows of every row panel
                 * took 64 bytes each, a 1x1 convolution's 96 rows 96 places
                 * far apart, and its stores waited on memory. */
                const int64_t qe = qa + (qb - qa) / KG_NR * KG_NR;
                for (int64_t i = i0; i < i1; i++) {
                    const kg_rows p = kg_rows_of(j, apg, k0, bs, i);
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
                    KG_F(panel_rows)(j, ukrs, np, i0, i1, kc, apg + k0 * KG_MR, bpp, NULL, c + cq, j->crow, 0, first,
                                     bs, x->kb && nq ? bpp + np * KG_NR * kc : NULL,
                                     (nq < 4 * KG_NR ? nq : 4 * KG_NR) * kc, tail, NULL);
                    q += (np - 1) * KG_NR;
                    continue;
                }
#endif

                /* Otherwise each column's place in C (-1: dropped), once a panel. */
                int64_t at[KG_NR];
                if (!direct) KG_F(panel_places)(j, q, ncols, at);
                for (int64_t i = i0; i < i1; i++) {
                    const kg_rows p = kg_rows_of(j, apg, k0, bs, i);
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
         * time. Where every panel went through the tile, the copy-out was
         * 8% of a 64 x 56 x 56 3 x 3 convolution on the AMD EPYC of
         * 2026-11, and 7% of det's forward. (The run-at-a-time copy below,
         * called per panel, made ResNet-18's forward about 5% slower there:
         * a memcpy call per run of at most 16 floats.) Each column's place
         * in C is found once a panel, not per row: two divisions an element
         * had made a 2x2 stride-2 ConvTranspose (every panel strided, through
         * the tile) run at 10 GMAC/s, 5% of det's forward. */
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
                    if (j->cs == 1) memcpy(cm + row * j->rs + col, t + (q - q0), (size_t)n * sizeof *t);
                    else
                        for (int64_t l = 0; l < n; l++) cm[row * j->rs + (col + l) * j->cs] = t[q - q0 + l];
                }
                q = end;
            }
        }
}

/* Channel ch (of all groups') of a convolution's input, whole, into the
 * shared strip. */
static KG_TARGET void KG_F(fill_chan)(const kg_ctx *x, int tid, long ch) {
    (void)tid;
    const kg_conv *v = x->j->conv;
    KG_F(fill)(v, v->x + ch * v->H * v->W, 0, x->srows, x->shared + ch * x->schan, x->splane);
}

/* ---- 16 lanes of independent sums (kern_gemm.c's narrow depthwise and
 * kept matrix-vector paths) ------------------------------------------------------
 * out[l] = the sum over k of w16[k][l] * p[off[k] + l] (taps16_row) or of
 * a16[k][l] * b[boff[k]] (mv16), each in blocks of MPX_ACC_FP32_BLOCK
 * fused multiply-adds from 0 added to the sum from 0, then bias[l] (NULL:
 * none): the same operations per lane in every build. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(lanes16)(const bool bcast, int64_t K,
                                                                 const float *x16, const float *y,
                                                                 const int64_t *off, const float *bias16,
                                                                 float *out16) {
    const v8f z = {0};
    v8f s0 = z, s1 = z;
    for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
        v8f a0 = z, a1 = z;
        for (int64_t k = k0; k < k1; k++) {
            const float *xk = x16 + k * 16, *yk = y + off[k];
            const v8f y0 = bcast ? KG_F(splat)(*yk) : KG_F(ld8)(yk), y1 = bcast ? y0 : KG_F(ld8)(yk + 8);
            a0 = KG_F(fma8)(KG_F(ld8)(xk), y0, a0);
            a1 = KG_F(fma8)(KG_F(ld8)(xk + 8), y1, a1);
        }
        s0 += a0, s1 += a1;
    }
    if (bias16) s0 += KG_F(ld8)(bias16), s1 += KG_F(ld8)(bias16 + 8);
    KG_F(st8)(out16, s0), KG_F(st8)(out16 + 8, s1);
}

/* lanes16's taps (w16 against p) for n outputs `step` floats apart in p
 * and 16 apart in out16: each lane's operations are lanes16's (blocks of 64 fused multiply-adds
 * from 0, added to the sum from 0, then the bias). Why: one output's sum
 * is a chain of K dependent fused multiply-adds, 4 cycles each, so a call
 * per output ran at a fraction of the FMA ports' rate (MobileNetV3's and
 * EfficientNet's narrow depthwise convolutions); RW outputs side by side
 * are RW independent chains. */
static KG_TARGET void KG_F(taps16_row)(int64_t K, const float *w16, const float *p, const int64_t *off,
                                       int64_t step, int64_t n, const float *bias16, float *out16) {
    enum { RW = KG_SIMD == 2 ? 6 : 3 };
    const v8f z = {0};
    int64_t o = 0;
    for (; o + RW <= n; o += RW) {
        v8f s[RW][2];
        for (int r = 0; r < RW; r++) s[r][0] = z, s[r][1] = z;
        for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
            v8f a[RW][2];
            for (int r = 0; r < RW; r++) a[r][0] = z, a[r][1] = z;
            for (int64_t k = k0; k < k1; k++) {
                const v8f w0 = KG_F(ld8)(w16 + k * 16), w1 = KG_F(ld8)(w16 + k * 16 + 8);
                const float *pk = p + off[k] + o * step;
                for (int r = 0; r < RW; r++) {
                    a[r][0] = KG_F(fma8)(w0, KG_F(ld8)(pk + r * step), a[r][0]);
                    a[r][1] = KG_F(fma8)(w1, KG_F(ld8)(pk + r * step + 8), a[r][1]);
                }
            }
            for (int r = 0; r < RW; r++) s[r][0] += a[r][0], s[r][1] += a[r][1];
        }
        for (int r = 0; r < RW; r++) {
            if (bias16) s[r][0] += KG_F(ld8)(bias16), s[r][1] += KG_F(ld8)(bias16 + 8);
            KG_F(st8)(out16 + (o + r) * 16, s[r][0]);
            KG_F(st8)(out16 + (o + r) * 16 + 8, s[r][1]);
        }
    }
    for (; o < n; o++) KG_F(lanes16)(false, K, w16, p + o * step, off, bias16, out16 + o * 16);
}

/* r[0..8) as the rows of an 8 x 8 matrix, transposed in place (unpack,
 * pairs, halves: what the AVX2 instructions do in three steps). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(tr8)(v8f *r) {
    v8f a[8], b[8];
    for (int i = 0; i < 8; i += 2) {
        a[i] = KG_SHUF(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        a[i + 1] = KG_SHUF(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++) {
            b[i + 2 * h] = KG_SHUF(a[i + h], a[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            b[i + 2 * h + 1] = KG_SHUF(a[i + h], a[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int i = 0; i < 4; i++) {
        r[i] = KG_SHUF(b[i], b[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = KG_SHUF(b[i], b[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* The narrow depthwise path's moves into and out of the lanes (kern_gemm.c
 * kg_dw16_fn), by the channel planes' flat positions, 8 channels x 8
 * positions a register transpose: by rows, a 7 x 7 or 14 x 14 map's rows
 * were mostly tails (an 8 x 8 transpose a row made MobileNetV3-Small
 * slower), and a value at a time the moves cost as much as the taps.
 * In: channel l's H x W plane xs[l] (nc of 16) to p[((ih + pt) Wp + iw +
 * pl) 16 + l]; out: y16[q 16 + l] to ys[l][q] for q < n. Lanes past nc are
 * not touched. */
static KG_TARGET void KG_F(lanes_in)(const float *const *xs, int64_t nc, int64_t H, int64_t W, float *p,
                                     int64_t Wp, int64_t pt, int64_t pl) {
    for (int64_t c0 = 0; c0 < nc; c0 += 8) {
        const int64_t n8 = nc - c0 < 8 ? nc - c0 : 8;
        int64_t q = 0, ih = 0, iw = 0;
        if (n8 == 8)
            for (; q + 8 <= H * W; q += 8) {
                v8f r[8];
                for (int l = 0; l < 8; l++) r[l] = KG_F(ld8)(xs[c0 + l] + q);
                KG_F(tr8)(r);
                for (int t = 0; t < 8; t++) {
                    KG_F(st8)(p + ((ih + pt) * Wp + iw + pl) * 16 + c0, r[t]);
                    if (++iw == W) iw = 0, ih++;
                }
            }
        for (; q < H * W; q++) {
            for (int64_t l = 0; l < n8; l++) p[((ih + pt) * Wp + iw + pl) * 16 + c0 + l] = xs[c0 + l][q];
            if (++iw == W) iw = 0, ih++;
        }
    }
}

static KG_TARGET void KG_F(lanes_out)(const float *y16, int64_t n, int64_t nc, float *const *ys) {
    for (int64_t c0 = 0; c0 < nc; c0 += 8) {
        const int64_t n8 = nc - c0 < 8 ? nc - c0 : 8;
        int64_t q = 0;
        if (n8 == 8)
            for (; q + 8 <= n; q += 8) {
                v8f r[8];
                for (int t = 0; t < 8; t++) r[t] = KG_F(ld8)(y16 + (q + t) * 16 + c0);
                KG_F(tr8)(r);
                for (int l = 0; l < 8; l++) KG_F(st8)(ys[c0 + l] + q, r[l]);
            }
        for (; q < n; q++)
            for (int64_t l = 0; l < n8; l++) ys[c0 + l][q] = y16[q * 16 + c0 + l];
    }
}

static KG_TARGET void KG_F(mv16)(int64_t K, const float *a16, const float *b, const int64_t *boff,
                                 const float *bias16, float *out16) {
    KG_F(lanes16)(true, K, a16, b, boff, bias16, out16);
}

/* dw_chan's 32 sums in the AVX-512 build, into s[0..4) (8 each), 16 lanes
 * at a time: fp32 as the 8-lane loop (each lane's fused multiply-adds and
 * blocks of 64, so the same bits, with half the loads and instructions:
 * rec's depthwise convolutions were a tenth of its forward, bound by the
 * 8-lane loads); rounded sums with ro16's rounding modes, or with fp16
 * operands and fp16 sums one fp16 fused multiply-add a term (ukrh's
 * step). */
#if KG_SIMD == 2
#if KG_HAVE_H16
static KG_H16_TARGET void KG_F(dw_h16)(int64_t K, const float *w, const float *xq, const int64_t *off,
                                       const float *bp, v8f *s) {
    __m512h c = _mm512_setzero_ph();
    for (int64_t k = 0; k < K; k++) {
        const float *p = xq + off[k];
        c = _mm512_fmadd_ph(_mm512_set1_ph((kg_half)w[k]), KG_F(h16_ld2)(p, p + KG_NR, 0xffff), c);
    }
    if (bp) c = _mm512_add_ph(c, _mm512_set1_ph((kg_half)*bp));
    KG_F(h16_st2)((float *)s, c, 0xffff);
}
#endif
/* The fp32 depthwise sums of NR grid rows rs floats apart, 32 outputs
 * each, into s[row][half]: each output's taps in order, blocks of 64 fused
 * multiply-adds from 0 added to the sum from 0, then the bias. NR 3 (the
 * wide path's rows, dw_chan) keeps 6 chains of fused multiply-adds in
 * flight where one row had 2, each K long (a 3x3 tap chain is 9 dependent
 * 4-cycle steps: one row at a time ran at a quarter of the FMA ports'
 * rate); NR 1 for the rows left over. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_rows_fp32)(const int NR, int64_t K,
                                                                     const float *w, const float *xq,
                                                                     int64_t rs, const int64_t *off,
                                                                     const float *bp, v16f (*s)[2]) {
    const v16f z = {0};
    for (int i = 0; i < NR; i++) s[i][0] = z, s[i][1] = z;
    for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
        v16f a[3][2];
        for (int i = 0; i < NR; i++) a[i][0] = z, a[i][1] = z;
        for (int64_t k = k0; k < k1; k++) {
            const __m512 wk = (__m512)KG_F(splat16)(w[k]);
            const float *p = xq + off[k];
            for (int i = 0; i < NR; i++) {
                a[i][0] = (v16f)_mm512_fmadd_ps(wk, _mm512_loadu_ps(p + i * rs), (__m512)a[i][0]);
                a[i][1] = (v16f)_mm512_fmadd_ps(wk, _mm512_loadu_ps(p + i * rs + KG_NR), (__m512)a[i][1]);
            }
        }
        for (int i = 0; i < NR; i++) s[i][0] += a[i][0], s[i][1] += a[i][1];
    }
    if (bp)
        for (int i = 0; i < NR; i++) s[i][0] += KG_F(splat16)(*bp), s[i][1] += KG_F(splat16)(*bp);
}

static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_sums16)(const int RM, bool h16, int64_t K,
                                                                  const float *w, const float *xq,
                                                                  const int64_t *off, const float *bp, v8f *s) {
#if KG_HAVE_H16
    if (RM == KG_FP16 && h16) {
        KG_F(dw_h16)(K, w, xq, off, bp, s);
        return;
    }
#else
    (void)h16;
#endif
    const v16f z = {0};
    v16f sa = z, sb = z;
    if (RM == KG_FP32) {
        v16f one[1][2];
        KG_F(dw_rows_fp32)(1, K, w, xq, 0, off, bp, one);
        sa = one[0][0], sb = one[0][1];
    } else {
        for (int64_t k = 0; k < K; k++) {
            const v16f wk = KG_F(splat16)(w[k]);
            const float *p = xq + off[k];
            v16f xa, xb;
            memcpy(&xa, p, sizeof xa);
            memcpy(&xb, p + KG_NR, sizeof xb);
            sa = KG_F(rsum16)(RM, sa, wk * xa);
            sb = KG_F(rsum16)(RM, sb, wk * xb);
        }
        if (bp) sa = KG_F(rsum16)(RM, sa, KG_F(splat16)(*bp)), sb = KG_F(rsum16)(RM, sb, KG_F(splat16)(*bp));
    }
    memcpy(s, &sa, sizeof sa);
    memcpy(s + 2, &sb, sizeof sb);
}
#endif

/* ---- depthwise: one channel ------------------------------------------------------------------
 * The channel's padded, phase-split input into the thread's strip, then grid
 * rows 32 outputs at a time in 4 vectors; the taps' terms in order (fp32:
 * blocks of 64 taps, as the GEMM). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_chan)(const int RM, const kg_ctx *x,
                                                                int tid, int64_t ch) {
    const kg_dw *j = x->d;
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW;
    float *st = x->strip[tid];
    KG_F(fill)(v, v->x + ch * v->H * v->W, 0, x->srows, st, x->splane);
    const float *w = j->w + ch * K;
    float *y = j->y + ch * j->yc;
    const float *bp = j->bias ? j->bias + ch : NULL;
    const int64_t *off = x->boff;
    const v8f z = {0};
    int64_t r0 = 0;
#if KG_SIMD == 2
    if (RM == KG_FP32)
        for (; r0 + 3 <= v->OH; r0 += 3)
            for (int64_t col = 0; col < j->OW; col += 32) {
                v16f s3r[3][2];
                KG_F(dw_rows_fp32)(3, K, w, st + r0 * v->Wq + col, v->Wq, off, bp, s3r);
                const int64_t n = j->OW - col < 32 ? j->OW - col : 32;
                for (int i = 0; i < 3; i++) {
                    float *yo = y + (r0 + i) * j->OW + col;
                    if (n == 32) {
                        memcpy(yo, &s3r[i][0], sizeof s3r[i][0]);
                        memcpy(yo + KG_NR, &s3r[i][1], sizeof s3r[i][1]);
                    } else {
                        float t[32];
                        memcpy(t, &s3r[i][0], sizeof s3r[i][0]);
                        memcpy(t + KG_NR, &s3r[i][1], sizeof s3r[i][1]);
                        memcpy(yo, t, (size_t)n * sizeof *t);
                    }
                }
            }
#endif
    for (int64_t r = r0; r < v->OH; r++) {
        for (int64_t col = 0; col < j->OW; col += 32) {
            const float *xq = st + r * v->Wq + col;
            v8f s0 = z, s1 = z, s2 = z, s3 = z;
#if KG_SIMD == 2
            v8f s16[4];
            KG_F(dw_sums16)(RM, x->h16, K, w, xq, off, bp, s16);
            s0 = s16[0], s1 = s16[1], s2 = s16[2], s3 = s16[3];
#else
            if (RM == KG_FP32) {
                for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
                    const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
                    v8f a0 = z, a1 = z, a2 = z, a3 = z;
                    for (int64_t k = k0; k < k1; k++) {
                        const v8f wk = KG_F(splat)(w[k]);
                        const float *p = xq + off[k];
                        a0 = KG_F(fma8)(wk, KG_F(ld8)(p), a0);
                        a1 = KG_F(fma8)(wk, KG_F(ld8)(p + 8), a1);
                        a2 = KG_F(fma8)(wk, KG_F(ld8)(p + 16), a2);
                        a3 = KG_F(fma8)(wk, KG_F(ld8)(p + 24), a3);
                    }
                    s0 += a0, s1 += a1, s2 += a2, s3 += a3;
                }
                if (bp) {
                    const v8f bv = KG_F(splat)(*bp);
                    s0 += bv, s1 += bv, s2 += bv, s3 += bv;
                }
            } else {
                for (int64_t k = 0; k < K; k++) {
                    const v8f wk = KG_F(splat)(w[k]);
                    const float *p = xq + off[k];
                    s0 = KG_F(rsum)(RM, s0, wk * KG_F(ld8)(p));
                    s1 = KG_F(rsum)(RM, s1, wk * KG_F(ld8)(p + 8));
                    s2 = KG_F(rsum)(RM, s2, wk * KG_F(ld8)(p + 16));
                    s3 = KG_F(rsum)(RM, s3, wk * KG_F(ld8)(p + 24));
                }
                if (bp) {
                    const v8f bv = KG_F(splat)(*bp);
                    s0 = KG_F(rsum)(RM, s0, bv), s1 = KG_F(rsum)(RM, s1, bv);
                    s2 = KG_F(rsum)(RM, s2, bv), s3 = KG_F(rsum)(RM, s3, bv);
                }
            }
#endif
            float *yo = y + r * j->OW + col;
            const int64_t n = j->OW - col < 32 ? j->OW - col : 32;
            if (n == 32) {
                KG_F(st8)(yo, s0), KG_F(st8)(yo + 8, s1), KG_F(st8)(yo + 16, s2), KG_F(st8)(yo + 24, s3);
            } else {
                float t[32];
                KG_F(st8)(t, s0), KG_F(st8)(t + 8, s1), KG_F(st8)(t + 16, s2), KG_F(st8)(t + 24, s3);
                memcpy(yo, t, (size_t)n * sizeof *t);
            }
        }
    }
}

static KG_TARGET void KG_F(dw_item)(const kg_ctx *x, int tid, long ch) {
    switch (x->d->mode) {
    case KG_FP32: KG_F(dw_chan)(KG_FP32, x, tid, ch); return;
    case KG_FP16:
#if KG_SIMD == 1
        if (x->d->f16) { /* fp16 operands: roz8's steps, as ukrz (which says why this is safe) */
            const unsigned csr = KG_F(csr_towards_zero)();
            KG_F(dw_chan)(KG_FP16Z, x, tid, ch);
            _mm_setcsr(csr);
            return;
        }
#endif
        KG_F(dw_chan)(KG_FP16, x, tid, ch);
        return;
    case KG_BF16: KG_F(dw_chan)(KG_BF16, x, tid, ch); return;
    case KG_TF32: KG_F(dw_chan)(KG_TF32, x, tid, ch); return;
    }
}

/* ---- a narrow map's convolution, output channels in the lanes --------------------------------
 * Item: t_cpi 16-channel panels of C's rows. The micro-kernel (AVX-512:
 * ukr16d, AVX2: ukr) with the roles turned: its 6 "rows" are 6 outputs
 * (x->t_pix's panels), its panels 16 output channels (A kept in 16-row
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
    for (int64_t k0 = 0; k0 < K; k0 += x->t_kc) {
        const int64_t kc = K - k0 < x->t_kc ? K - k0 : x->t_kc;
        const float *pix = x->t_pix + k0 * npp * KG_MR;
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
            const float *w = x->t_w16 + cp * K * KG_NR + k0 * KG_NR;
            for (int64_t pp = 0; pp < npp; pp++) {
                const int mr = (int)(N - pp * KG_MR < KG_MR ? N - pp * KG_MR : KG_MR);
                float *cr[KG_MR];
                for (int r = 0; r < mr; r++) cr[r] = tile + (pp * KG_MR + r) * ldt + (cp - cp0) * KG_NR;
                const float *ap = pix + pp * kc * KG_MR;
#if KG_SIMD == 2
                KG_F(ukrd_table)[mr - 1][np == 4 ? 2 : np - 1](kc, ap, w, NULL, K * KG_NR, cr, k0 == 0, NULL,
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
