/* kern_gemm_vec.h - the per-build helpers of the GEMM core and the
 * depthwise kernels (kern_gemm.c, kern_depthwise.c): vector loads, stores
 * and fused multiply-adds, the padded input's fill, rounding a vector of
 * running sums, 16 lanes of independent sums. Included once per build
 * before kern_gemm_body.h or kern_dw_body.h, under the same KG_F, KG_SIMD
 * and KG_TARGET (kern_gemm_body.h says what each build is). Not a header
 * of its own: no include guard on purpose. */

/* ---- vector helpers ---------------------------------------------------------------- */

static inline KG_TARGET __attribute__((always_inline)) v8f KG_F(ld8)(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline KG_TARGET __attribute__((always_inline)) void KG_F(st8)(float *p, v8f v) {
    memcpy(p, &v, sizeof v);
}

/* v's first n lanes (0 < n < 8) to p, nothing past them: a masked store in
 * the SIMD builds (a copy of a variable count through a buffer became `rep
 * movsq`, whose start-up cost was a third of a 28-wide depthwise row's
 * time). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(st8n)(float *p, v8f v, int64_t n) {
#if KG_SIMD
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(p, m, (__m256)v);
#else
    for (int64_t l = 0; l < n; l++) p[l] = v[l];
#endif
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

/* fill's rows at column stride 2 where both phases' pads are within a
 * vector of each end and the input is at least 16 wide: an input row read
 * once, 16 columns a step, its even columns to one phase's row and its odd
 * ones to the other's (fill's general loop read the row once per phase and
 * copied each phase's last 1-8 columns one at a time: on MobileNetV3's
 * wide stride-2 depthwise convolutions, 16 x 112 x 112 and 72 x 56 x 56,
 * that fill was most of the node's time). The same values in the same
 * places: the strip is fill's. */
static KG_TARGET void KG_F(fill_sw2)(const kg_conv *v, const float *xc, int64_t r0, int64_t nr, float *dst,
                                     int64_t plane) {
    const int64_t W = v->W, Wq = v->Wq, pe = v->pl & 1, po = pe ^ 1;
    const v8f z = {0};
    /* input column t to column (t + pl - pw) / 2 of phase pw: an even t to
     * phase pe, an odd one to po */
    const int64_t ce = (v->pl - pe) / 2, co = (1 + v->pl - po) / 2;
    const int64_t tl = (W - 16) & ~(int64_t)1; /* the last block, even as every block's start */
    /* only the row phases some tap reads, as fill's loop (the copy may end
     * before the others' planes: kern_gemm.c kg_phase_planes) */
    const uint32_t hs = kg_fill_phases(v->KH, v->dh, v->sh);
    for (int64_t i = 0; i < nr; i++)
        for (int64_t ph = 0; ph < v->sh; ph++) {
            if (ph < 32 && !(hs >> ph & 1u)) continue;
            const int64_t ir = (r0 + i) * v->sh + ph - v->pt;
            float *row0 = dst + ph * 2 * plane + i * Wq, *row1 = row0 + plane;
            if (ir < 0 || ir >= v->H) {
                memset(row0, 0, (size_t)Wq * sizeof *row0);
                memset(row1, 0, (size_t)Wq * sizeof *row1);
                continue;
            }
            /* the pads first, a vector of zeros at each end of each row */
            KG_F(st8)(row0, z), KG_F(st8)(row0 + Wq - 8, z);
            KG_F(st8)(row1, z), KG_F(st8)(row1 + Wq - 8, z);
            const float *in = xc + ir * W;
            float *re = (pe ? row1 : row0) + ce, *ro = (po ? row1 : row0) + co;
#if KG_SIMD == 2
            /* 32 columns a step on 16 lanes where the row has them (the
             * same values to the same places; half the instructions of
             * the 8-lane loop, which was most of the fill's time on
             * MobileNetV3-Small's 112- and 56-wide stride-2 depthwise
             * convolutions) */
            if (W >= 32) {
                const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
                const int64_t tl32 = (W - 32) & ~(int64_t)1;
                for (int64_t t = 0;; t += 32) {
                    if (t > tl32) t = tl32;
                    const __m512 a = _mm512_loadu_ps(in + t), b = _mm512_loadu_ps(in + t + 16);
                    _mm512_storeu_ps(re + t / 2, _mm512_permutex2var_ps(a, ie, b));
                    _mm512_storeu_ps(ro + t / 2, _mm512_permutex2var_ps(a, io, b));
                    if (t == tl32) break;
                }
                if (W & 1) re[(W - 1) / 2] = in[W - 1];
                continue;
            }
#endif
            for (int64_t t = 0;; t += 16) {
                if (t > tl) t = tl; /* the last block moved back: some columns written twice, the same */
                const v8f a = KG_F(ld8)(in + t), b = KG_F(ld8)(in + t + 8);
                KG_F(st8)(re + t / 2, KG_EVENS(a, b));
                KG_F(st8)(ro + t / 2, KG_ODDS(a, b));
                if (t == tl) break;
            }
            if (W & 1) re[(W - 1) / 2] = in[W - 1]; /* an odd width's last column, past the last block */
        }
}

static KG_TARGET void KG_F(fill)(const kg_conv *v, const float *xc, int64_t r0, int64_t nr,
                                 float *dst, int64_t plane) {
    /* Column jj of phase pw reads input column jj sw + pw - pl, inside the
     * row for jlo <= jj < jhi (found once for the first 8 phases). */
    int64_t jlo[8], jhi[8];
    for (int64_t pw = 0; pw < v->sw && pw < 8; pw++) KG_F(fill_cols)(v, pw, &jlo[pw], &jhi[pw]);
    /* Only the phases some tap reads are filled (the others' planes are
     * never read): a 1x1 convolution at stride 2 (ResNet's downsampling)
     * reads one of its four, and filling all four was a third of its time. */
    const uint32_t hs = kg_fill_phases(v->KH, v->dh, v->sh), ws = kg_fill_phases(v->KW, v->dw, v->sw);
    if (v->sw == 2 && (ws & 3u) == 3u && v->W >= 16 && v->Wq >= 8 && jlo[0] <= 8 && jlo[1] <= 8 && v->Wq - jhi[0] <= 8 &&
        v->Wq - jhi[1] <= 8 && kg_cdiv(v->W + v->pl, 2) <= v->Wq && kg_cdiv(v->W + v->pl - 1, 2) <= v->Wq) {
        KG_F(fill_sw2)(v, xc, r0, nr, dst, plane);
        return;
    }
    /* Input row by input row, in order (grid row, then row phase), each
     * row's column phases while it is in L1. */
    for (int64_t i = 0; i < nr; i++)
        for (int64_t ph = 0; ph < v->sh; ph++) {
            const int64_t ir = (r0 + i) * v->sh + ph - v->pt;
            if (ph < 32 && !(hs >> ph & 1u)) continue;
            for (int64_t pw = 0; pw < v->sw; pw++) {
                if (pw < 32 && !(ws >> pw & 1u)) continue;
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
                 * stride-2 fill's time. */
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
#if KG_SIMD == 2
                    /* 16 at a time, the last step under masks: the even
                     * lanes of the 2n - 1 input columns a step of n
                     * reads, all inside the row (masked lanes are neither
                     * read nor written). A 1x1 convolution at stride 2
                     * (ResNet's downsampling) fills one phase of 14- and
                     * 28-wide rows, where the loop below moved 8 and then
                     * copied up to 7 one at a time: a sixth of the node's
                     * time on one thread. The same values to the same
                     * places. */
                    if (v->sw == 2) {
                        const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                        for (; jj < hi; jj += 16) {
                            const int64_t n = hi - jj < 16 ? hi - jj : 16, m = 2 * n - 1;
                            const __mmask16 m0 = (__mmask16)(m >= 16 ? 0xffffu : (1u << m) - 1u);
                            const __mmask16 m1 = (__mmask16)(m > 16 ? (1u << (m - 16)) - 1u : 0u);
                            const float *p = in + 2 * jj + o;
                            const __m512 a = _mm512_maskz_loadu_ps(m0, p), b = _mm512_maskz_loadu_ps(m1, p + 16);
                            _mm512_mask_storeu_ps(row + jj, (__mmask16)((1u << n) - 1u), _mm512_permutex2var_ps(a, ie, b));
                        }
                    }
#endif
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

#if KG_SIMD == 2
static inline KG_TARGET __attribute__((always_inline)) v16f KG_F(splat16)(float x) {
    return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

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

#if KG_HAVE_H16
/* 16 floats as fp16 lanes and back (AVX512-FP16: ukrh, dw_h16). */
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

#endif
#endif

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
