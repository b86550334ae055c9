/* kern_dw_body.h - the inner loops of kern_depthwise.c, included there
 * once per build after kern_gemm_vec.h, as kern_gemm_body.h is in
 * kern_gemm.c (it says what each build is). Not a header of its own: no
 * include guard on purpose. */

/* The narrow path's vector (taps16_row, slide16_row): 16 lanes, one
 * register of the AVX-512 build, where two 8-lane halves ran its 16
 * channels at half the fused multiply-add rate the CPU has (MobileNetV3's,
 * EfficientNet's and PP-OCRv4 rec's depthwise convolutions); 8 lanes in the
 * other builds. Each lane's operations are the same either way. */
#if KG_SIMD == 2
#define DW_VL 16
#define DW_V v16f
#else
#define DW_VL 8
#define DW_V v8f
#endif

static inline KG_TARGET __attribute__((always_inline)) DW_V KG_F(dw_ld)(const float *p) {
    DW_V v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_st)(float *p, DW_V v) { memcpy(p, &v, sizeof v); }

static inline KG_TARGET __attribute__((always_inline)) DW_V KG_F(dw_fma)(DW_V a, DW_V b, DW_V c) {
#if KG_SIMD == 2
    return (DW_V)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
    return KG_F(fma8)(a, b, c);
#endif
}

/* lanes16's taps (w16 against p) for n outputs `step` floats apart in p
 * and 16 apart in out16: each lane's operations are lanes16's (blocks of 64 fused multiply-adds
 * from 0, added to the sum from 0, then the bias). Why: one output's sum
 * is a chain of K dependent fused multiply-adds, 4 cycles each, so a call
 * per output ran at a fraction of the FMA ports' rate (MobileNetV3's and
 * EfficientNet's narrow depthwise convolutions); RW outputs side by side
 * are RW NH independent chains (8 in the AVX-512 build: its 16-lane fused
 * multiply-adds' latency times the two ports). */
static KG_TARGET void KG_F(taps16_row)(int64_t K, const float *w16, const float *p, const int64_t *off,
                                       int64_t step, int64_t n, const float *bias16, float *out16) {
    enum { NH = 16 / DW_VL, RW = KG_SIMD == 2 ? 8 : 3 };
    const DW_V z = {0};
    int64_t o = 0;
    for (; o + RW <= n; o += RW) {
        DW_V s[RW][NH];
DW_UNROLL(8)
        for (int r = 0; r < RW; r++)
            for (int h = 0; h < NH; h++) s[r][h] = z;
        for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
            const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
            DW_V a[RW][NH];
DW_UNROLL(8)
            for (int r = 0; r < RW; r++)
                for (int h = 0; h < NH; h++) a[r][h] = z;
            for (int64_t k = k0; k < k1; k++) {
                DW_V wv[NH];
                for (int h = 0; h < NH; h++) wv[h] = KG_F(dw_ld)(w16 + k * 16 + h * DW_VL);
                const float *pk = p + off[k] + o * step;
DW_UNROLL(8)
                for (int r = 0; r < RW; r++)
                    for (int h = 0; h < NH; h++)
                        a[r][h] = KG_F(dw_fma)(wv[h], KG_F(dw_ld)(pk + r * step + h * DW_VL), a[r][h]);
            }
DW_UNROLL(8)
            for (int r = 0; r < RW; r++)
                for (int h = 0; h < NH; h++) s[r][h] += a[r][h];
        }
DW_UNROLL(8)
        for (int r = 0; r < RW; r++)
            for (int h = 0; h < NH; h++) {
                if (bias16) s[r][h] += KG_F(dw_ld)(bias16 + h * DW_VL);
                KG_F(dw_st)(out16 + (o + r) * 16 + h * DW_VL, s[r][h]);
            }
    }
    for (; o < n; o++) KG_F(lanes16)(false, K, w16, p + o * step, off, bias16, out16 + o * 16);
}

/* taps16_row's sums for kernels KW wide (undilated along the row) at
 * column stride SW, RW outputs side by side, DW_VL of the 16 lanes (w16,
 * p, bias16 and out16 offset to them): each pixel of a kernel row is loaded
 * once and taken by every output whose window holds it, with that row's KW
 * weights in registers (taps16_row loads a pixel for every term: two loads
 * a fused multiply-add, so its loop ran at the load ports' rate). For one
 * output the pixels of a kernel row come in column order, so its terms are
 * still the taps in order, each one fused multiply-add into a sum from 0;
 * the sum is added to +0 (taps16_row's running sum, one block: K <= 64)
 * and then the bias: its bits. rs: floats from a kernel row to the next. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(slide8)(const int KW, const int SW, const int RW,
                                                                      int64_t KH, const float *w16,
                                                                      const float *p, int64_t rs,
                                                                      const float *bias16, float *out16) {
    const DW_V z = {0};
    DW_V acc[8];
DW_UNROLL(8)
    for (int r = 0; r < RW; r++) acc[r] = z;
    for (int64_t kh = 0; kh < KH; kh++) {
        const float *pr = p + kh * rs, *wr = w16 + kh * KW * 16;
        DW_V wv[7];
DW_UNROLL(7)
        for (int kw = 0; kw < KW; kw++) wv[kw] = KG_F(dw_ld)(wr + kw * 16);
DW_UNROLL(24)
        for (int jx = 0; jx < (RW - 1) * SW + KW; jx++) {
            const DW_V x = KG_F(dw_ld)(pr + jx * 16);
DW_UNROLL(8)
            for (int r = 0; r < RW; r++) {
                const int kw = jx - r * SW;
                if (kw >= 0 && kw < KW) acc[r] = KG_F(dw_fma)(wv[kw], x, acc[r]);
            }
        }
    }
DW_UNROLL(8)
    for (int r = 0; r < RW; r++) {
        DW_V s = z + acc[r];
        if (bias16) s += KG_F(dw_ld)(bias16);
        KG_F(dw_st)(out16 + r * 16, s);
    }
}

/* slide8's instances: KW 3, 5 or 7, SW 1 or 2, RW 4 to 8 (slide8: named for
 * its 8 lanes of the AVX2 build; 16 in the AVX-512 one). */
#define KG_SLIDE_RW(KW, SW)                                                                        \
    switch (rw) {                                                                                  \
    case 4: KG_F(slide8)(KW, SW, 4, KH, w16, p, rs, bias16, out16); return;                        \
    case 5: KG_F(slide8)(KW, SW, 5, KH, w16, p, rs, bias16, out16); return;                        \
    case 6: KG_F(slide8)(KW, SW, 6, KH, w16, p, rs, bias16, out16); return;                        \
    case 7: KG_F(slide8)(KW, SW, 7, KH, w16, p, rs, bias16, out16); return;                        \
    default: KG_F(slide8)(KW, SW, 8, KH, w16, p, rs, bias16, out16); return;                       \
    }
static KG_TARGET void KG_F(slide8_any)(int64_t KW, int64_t SW, int rw, int64_t KH, const float *w16,
                                       const float *p, int64_t rs, const float *bias16, float *out16) {
    if (SW == 1) {
        if (KW == 3) KG_SLIDE_RW(3, 1)
        if (KW == 5) KG_SLIDE_RW(5, 1)
        KG_SLIDE_RW(7, 1)
    }
    if (KW == 3) KG_SLIDE_RW(3, 2)
    if (KW == 5) KG_SLIDE_RW(5, 2)
    KG_SLIDE_RW(7, 2)
}
#undef KG_SLIDE_RW

/* A row of n >= 4 outputs by slide8: blocks of at most 8 outputs, as even
 * as they come (14: 7 and 7), the last block moved back to end at n where
 * the count does not divide (its first outputs computed twice, to the same
 * bits); both 8-lane halves, or the 16 lanes at once. rs: a kernel row's floats. */
static KG_TARGET void KG_F(slide16_row)(int64_t KH, int64_t KW, int64_t SW, const float *w16, const float *p,
                                        int64_t rs, int64_t n, const float *bias16, float *out16) {
    const int64_t nb = (n + 7) / 8;
    const int rw = (int)((n + nb - 1) / nb);
    for (int64_t b = 0; b < nb; b++) {
        const int64_t o = b * rw + rw <= n ? b * rw : n - rw;
        for (int h = 0; h < 16; h += DW_VL)
            KG_F(slide8_any)(KW, SW, rw, KH, w16 + h, p + o * SW * 16 + h, rs, bias16 ? bias16 + h : NULL,
                             out16 + o * 16 + h);
    }
}

/* r[0..8) as the rows of an 8 x 8 matrix, transposed in place (unpack,
 * pairs, halves: what the AVX2 instructions do in three steps). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(tr8)(v8f *r) {
    v8f a[8], b[8];
DW_UNROLL(4)
    for (int i = 0; i < 8; i += 2) {
        a[i] = KG_SHUF(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        a[i + 1] = KG_SHUF(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
DW_UNROLL(2)
    for (int i = 0; i < 8; i += 4)
DW_UNROLL(2)
        for (int h = 0; h < 2; h++) {
            b[i + 2 * h] = KG_SHUF(a[i + h], a[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            b[i + 2 * h + 1] = KG_SHUF(a[i + h], a[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
DW_UNROLL(4)
    for (int i = 0; i < 4; i++) {
        r[i] = KG_SHUF(b[i], b[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = KG_SHUF(b[i], b[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* The narrow depthwise path's moves into and out of the lanes (kern_gemm.c
 * kg_dw16_fn), by the channel planes' flat positions, 8 channels x 8
 * positions a register transpose (16 x 16 in the AVX-512 build, for items
 * of 16 channels: lanes16_in, lanes16_out): by rows, a 7 x 7 or 14 x 14
 * map's rows were mostly tails (an 8 x 8 transpose a row made
 * MobileNetV3-Small slower), and a value at a time the moves cost as much
 * as the taps. In: channel l's H x W plane xs[l] (nc of 16) to p[((ih +
 * pt) Wp + iw + pl) 16 + l] for positions q0 on; out: y16[q 16 + l] to
 * ys[l][q] for q0 <= q < n. Lanes past nc are not touched. */
static KG_TARGET void KG_F(lanes_in8)(const float *const *xs, int64_t nc, int64_t H, int64_t W, float *p,
                                      int64_t Wp, int64_t pt, int64_t pl, int64_t q0) {
    for (int64_t c0 = 0; c0 < nc; c0 += 8) {
        const int64_t n8 = nc - c0 < 8 ? nc - c0 : 8;
        int64_t q = q0, ih = q0 / W, iw = q0 % W;
        if (n8 == 8)
            for (; q + 8 <= H * W; q += 8) {
                v8f r[8];
DW_UNROLL(8)
                for (int l = 0; l < 8; l++) r[l] = KG_F(ld8)(xs[c0 + l] + q);
                KG_F(tr8)(r);
DW_UNROLL(8)
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

static KG_TARGET void KG_F(lanes_out8)(const float *y16, int64_t n, int64_t nc, float *const *ys, int64_t q0) {
    for (int64_t c0 = 0; c0 < nc; c0 += 8) {
        const int64_t n8 = nc - c0 < 8 ? nc - c0 : 8;
        int64_t q = q0;
        if (n8 == 8)
            for (; q + 8 <= n; q += 8) {
                v8f r[8];
DW_UNROLL(8)
                for (int t = 0; t < 8; t++) r[t] = KG_F(ld8)(y16 + (q + t) * 16 + c0);
                KG_F(tr8)(r);
DW_UNROLL(8)
                for (int l = 0; l < 8; l++) KG_F(st8)(ys[c0 + l] + q, r[l]);
            }
        for (; q < n; q++)
            for (int64_t l = 0; l < n8; l++) ys[c0 + l][q] = y16[q * 16 + c0 + l];
    }
}

#if KG_SIMD == 2
/* r[0..16) as the rows of a 16 x 16 matrix, transposed in place: pairs of
 * rows interleaved, then fours (columns within each 128-bit lane), then
 * the 128-bit lanes (two shuffles of four: 64 in all, where four 8 x 8
 * transposes are 96 on half-width registers and twice the loads and
 * stores). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(tr16)(__m512 *r) {
    __m512 a[16], b[16];
DW_UNROLL(8)
    for (int i = 0; i < 16; i += 2)
        a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
DW_UNROLL(4)
    for (int i = 0; i < 16; i += 4)
DW_UNROLL(2)
        for (int h = 0; h < 2; h++) {
            const __m512d x = _mm512_castps_pd(a[i + h]), y = _mm512_castps_pd(a[i + h + 2]);
            b[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            b[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    /* b[4 g + j]: rows 4 g .. 4 g + 3 of columns j, j + 4, j + 8, j + 12 (one a 128-bit lane) */
DW_UNROLL(4)
    for (int j = 0; j < 4; j++) {
        const __m512 x0 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0x88), y0 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0x88);
        const __m512 x1 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0xdd), y1 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0xdd);
        r[j] = _mm512_shuffle_f32x4(x0, y0, 0x88), r[j + 8] = _mm512_shuffle_f32x4(x0, y0, 0xdd);
        r[j + 4] = _mm512_shuffle_f32x4(x1, y1, 0x88), r[j + 12] = _mm512_shuffle_f32x4(x1, y1, 0xdd);
    }
}
#endif

static KG_TARGET void KG_F(lanes_in)(const float *const *xs, int64_t nc, int64_t H, int64_t W, float *p,
                                     int64_t Wp, int64_t pt, int64_t pl) {
    int64_t q = 0;
#if KG_SIMD == 2
    if (nc == 16)
        for (int64_t ih = 0, iw = 0; q + 16 <= H * W; q += 16) {
            __m512 r[16];
DW_UNROLL(16)
            for (int l = 0; l < 16; l++) r[l] = _mm512_loadu_ps(xs[l] + q);
            KG_F(tr16)(r);
DW_UNROLL(16)
            for (int t = 0; t < 16; t++) {
                _mm512_storeu_ps(p + ((ih + pt) * Wp + iw + pl) * 16, r[t]);
                if (++iw == W) iw = 0, ih++;
            }
        }
#endif
    KG_F(lanes_in8)(xs, nc, H, W, p, Wp, pt, pl, q);
}

static KG_TARGET void KG_F(lanes_out)(const float *y16, int64_t n, int64_t nc, float *const *ys) {
    int64_t q = 0;
#if KG_SIMD == 2
    if (nc == 16)
        for (; q + 16 <= n; q += 16) {
            __m512 r[16];
DW_UNROLL(16)
            for (int t = 0; t < 16; t++) r[t] = _mm512_loadu_ps(y16 + (q + t) * 16);
            KG_F(tr16)(r);
DW_UNROLL(16)
            for (int l = 0; l < 16; l++) _mm512_storeu_ps(ys[l] + q, r[l]);
        }
#endif
    KG_F(lanes_out8)(y16, n, nc, ys, q);
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
 * rate); NR 1 for the rows left over. The row loops are unrolled (DW_UNROLL):
 * rolled, GCC kept the 6 sums on the stack, each fused multiply-add a load,
 * the operation and a store, and the chains waited on store forwarding. */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_rows_fp32)(const int NR, int64_t K,
                                                                     const float *w, const float *xq,
                                                                     int64_t rs, const int64_t *off,
                                                                     const float *bp, v16f (*s)[2]) {
    const v16f z = {0};
DW_UNROLL(3)
    for (int i = 0; i < NR; i++) s[i][0] = z, s[i][1] = z;
    for (int64_t k0 = 0; k0 < K; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < K ? k0 + MPX_ACC_FP32_BLOCK : K;
        v16f a[3][2];
DW_UNROLL(3)
        for (int i = 0; i < NR; i++) a[i][0] = z, a[i][1] = z;
        for (int64_t k = k0; k < k1; k++) {
            const __m512 wk = (__m512)KG_F(splat16)(w[k]);
            const float *p = xq + off[k];
DW_UNROLL(3)
            for (int i = 0; i < NR; i++) {
                a[i][0] = (v16f)_mm512_fmadd_ps(wk, _mm512_loadu_ps(p + i * rs), (__m512)a[i][0]);
                a[i][1] = (v16f)_mm512_fmadd_ps(wk, _mm512_loadu_ps(p + i * rs + KG_NR), (__m512)a[i][1]);
            }
        }
DW_UNROLL(3)
        for (int i = 0; i < NR; i++) s[i][0] += a[i][0], s[i][1] += a[i][1];
    }
    if (bp)
DW_UNROLL(3)
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

#if KG_SIMD == 2
/* dw_chan's fp32 grid rows [rb, re) of a band three at a time, NV vectors
 * of 16 outputs a block (the last vector of a row masked), for kernels of
 * one block of taps (K <= 64): each output's taps in order, fused
 * multiply-adds from 0, the sum added to +0, then the bias (dw_rows_fp32's
 * operations, so its bits). Why: 32 outputs a block were 6 chains of K
 * dependent fused multiply-adds (4 cycles each), too few to keep the FMA
 * ports busy; 3 NV are 9 to 21. NV: the row's vectors in as few blocks of
 * at most 7 as they fit, evenly (dw_band3_nv): blocks of 64 had computed
 * 128 outputs for PP-OCRv4 rec's 80-wide rows, 192 for its 160-wide ones.
 * KC: K as a constant (the tap loop unrolled, the weights held across the
 * blocks). Returns the first row left (fewer than 3). */
static inline KG_TARGET __attribute__((always_inline)) int64_t KG_F(dw_band3_fp32)(const int KC, const int NV,
                                                                               const kg_ctx *x, const float *w,
                                                                               const float *st, int64_t rb,
                                                                               int64_t re, float *y,
                                                                               const float *bp) {
    const kg_dw *j = x->d;
    const kg_conv *v = j->conv;
    const int64_t Wq = v->Wq, *off = x->boff;
    const __m512 z = _mm512_setzero_ps(), bv = _mm512_set1_ps(bp ? *bp : 0.0f);
    int64_t r0 = rb;
    for (; r0 + 3 <= re; r0 += 3)
        for (int64_t col = 0; col < j->OW; col += NV * 16) {
            const float *xq = st + (r0 - rb) * Wq + col;
            __m512 a[3][7];
DW_UNROLL(3)
            for (int i = 0; i < 3; i++)
DW_UNROLL(7)
                for (int c = 0; c < NV; c++) a[i][c] = z;
            for (int k = 0; k < KC; k++) {
                const __m512 wk = _mm512_set1_ps(w[k]);
                const float *p = xq + off[k];
DW_UNROLL(3)
                for (int i = 0; i < 3; i++)
DW_UNROLL(7)
                    for (int c = 0; c < NV; c++) a[i][c] = _mm512_fmadd_ps(wk, _mm512_loadu_ps(p + i * Wq + c * 16), a[i][c]);
            }
            const int64_t n = j->OW - col;
DW_UNROLL(3)
            for (int i = 0; i < 3; i++) {
                float *yo = y + (r0 + i) * j->OW + col;
DW_UNROLL(7)
                for (int c = 0; c < NV; c++) {
                    __m512 sc = _mm512_add_ps(z, a[i][c]);
                    if (bp) sc = _mm512_add_ps(sc, bv);
                    const int64_t m = n - c * 16;
                    const __mmask16 mk = (__mmask16)(m >= 16 ? 0xffffu : m > 0 ? (1u << m) - 1u : 0u);
                    _mm512_mask_storeu_ps(yo + c * 16, mk, sc);
                }
            }
        }
    return r0;
}

/* dw_band3_fp32's vectors a block for rows OW wide (> 32 outputs: 3 to 7). */
static inline int KG_F(dw_band3_nv)(int64_t OW) {
    const int64_t nvec = (OW + 15) / 16, nb = (nvec + 6) / 7;
    return (int)((nvec + nb - 1) / nb);
}

#define KG_BAND3_NV(KC)                                                                            \
    switch (KG_F(dw_band3_nv)(j->OW)) {                                                            \
    case 3: r0 = KG_F(dw_band3_fp32)(KC, 3, x, w, st, rb, re, y, bp); break;                       \
    case 4: r0 = KG_F(dw_band3_fp32)(KC, 4, x, w, st, rb, re, y, bp); break;                       \
    case 5: r0 = KG_F(dw_band3_fp32)(KC, 5, x, w, st, rb, re, y, bp); break;                       \
    case 6: r0 = KG_F(dw_band3_fp32)(KC, 6, x, w, st, rb, re, y, bp); break;                       \
    default: r0 = KG_F(dw_band3_fp32)(KC, 7, x, w, st, rb, re, y, bp); break;                      \
    }
#endif

/* ---- depthwise: one channel ------------------------------------------------------------------
 * The channel's padded, phase-split input into the thread's strip (a band
 * of rows at a time), then grid rows 32 outputs at a time in 4 vectors; the taps' terms in order (fp32:
 * blocks of 64 taps, as the GEMM). */
static inline KG_TARGET __attribute__((always_inline)) void KG_F(dw_chan)(const int RM, const kg_ctx *x,
                                                                int tid, int64_t ch) {
    const kg_dw *j = x->d;
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW;
    float *st = x->strip[tid];
    const float *w = j->w + ch * K;
    float *y = j->y + ch * j->yc;
    const float *bp = j->bias ? j->bias + ch : NULL;
    const int64_t *off = x->boff;
    const v8f z = {0};
    /* The channel in bands of grid rows [rb, re) (kg_dw_run says why), each
     * band's input filled in just before its rows are computed; the strip's
     * row 0 is the band's first. */
    const int64_t ext = (v->KH - 1) * v->dh / v->sh + 1, band = x->srows - ext;
    for (int64_t rb = 0; rb < v->OH; rb += band) {
        const int64_t re = rb + band < v->OH ? rb + band : v->OH;
        KG_F(fill)(v, v->x + ch * v->H * v->W, rb, re - rb + ext, st, x->splane);
        int64_t r0 = rb;
#if KG_SIMD == 2
        if (RM == KG_FP32) {
            /* 3 x 3 and 5 x 5 kernels on rows wider than 32 outputs by
             * dw_band3_fp32 (EfficientNet-B0's 32 x 112 x 112 3 x 3, one
             * thread: 0.19 -> 0.16 ms). Not narrower rows, where a block
             * of 64 is mostly dropped lanes (its 28-wide 5 x 5: 0.20 ->
             * 0.26 ms), nor other kernels, whose tap count is no constant
             * (a 16 x 80 x 80 7 x 7: 0.17 -> 0.20 ms). */
            if (j->OW > 32 && K == 9) KG_BAND3_NV(9)
            else if (j->OW > 32 && K == 25) KG_BAND3_NV(25)
            else
                for (; r0 + 3 <= re; r0 += 3)
                    for (int64_t col = 0; col < j->OW; col += 32) {
                        v16f s3r[3][2];
                        KG_F(dw_rows_fp32)(3, K, w, st + (r0 - rb) * v->Wq + col, v->Wq, off, bp, s3r);
                        const int64_t n = j->OW - col < 32 ? j->OW - col : 32;
                        /* A row's last, partial block by masked stores
                         * (through a buffer and a variable-length copy it
                         * was a sixth of a 56-wide map's time: 32 + 24). */
                        const uint32_t keep = n >= 32 ? 0xffffffffu : (1u << n) - 1u;
                        const __mmask16 m0 = (__mmask16)(keep & 0xffffu), m1 = (__mmask16)(keep >> 16);
                        for (int i = 0; i < 3; i++) {
                            float *yo = y + (r0 + i) * j->OW + col;
                            _mm512_mask_storeu_ps(yo, m0, (__m512)s3r[i][0]);
                            _mm512_mask_storeu_ps(yo + KG_NR, m1, (__m512)s3r[i][1]);
                        }
                    }
        }
#else
        /* fp32, one block of taps: two grid rows at a time, 8 chains of fused
         * multiply-adds in flight where one row has 4 (each K long: a 3 x 3
         * chain is 9 dependent 4-cycle steps, so a row at a time kept the FMA
         * ports half idle); each output's operations as the loop below. */
        if (RM == KG_FP32 && K <= MPX_ACC_FP32_BLOCK)
            for (; r0 + 2 <= re; r0 += 2)
                for (int64_t col = 0; col < j->OW; col += 32) {
                    const float *xq = st + (r0 - rb) * v->Wq + col;
                    v8f a[2][4];
DW_UNROLL(2)
                    for (int i = 0; i < 2; i++)
DW_UNROLL(4)
                        for (int c = 0; c < 4; c++) a[i][c] = z;
                    for (int64_t k = 0; k < K; k++) {
                        const v8f wk = KG_F(splat)(w[k]);
                        const float *p = xq + off[k];
DW_UNROLL(2)
                        for (int i = 0; i < 2; i++)
DW_UNROLL(4)
                            for (int c = 0; c < 4; c++) a[i][c] = KG_F(fma8)(wk, KG_F(ld8)(p + i * v->Wq + c * 8), a[i][c]);
                    }
                    const int64_t n = j->OW - col < 32 ? j->OW - col : 32;
DW_UNROLL(2)
                    for (int i = 0; i < 2; i++) {
                        float *yo = y + (r0 + i) * j->OW + col;
DW_UNROLL(4)
                        for (int c = 0; c < 4; c++) {
                            v8f sc = z + a[i][c];
                            if (bp) sc += KG_F(splat)(*bp);
                            if (n >= c * 8 + 8) KG_F(st8)(yo + c * 8, sc);
                            else if (n > c * 8 && r0 + i + 1 < v->OH && j->OW >= 8 && (i == 1 || col == 0))
                                KG_F(st8)(yo + c * 8, sc); /* (the next row's columns: see below) */
                            else if (n > c * 8) KG_F(st8n)(yo + c * 8, sc, n - c * 8);
                        }
                    }
                }
#endif
        for (int64_t r = r0; r < re; r++) {
            for (int64_t col = 0; col < j->OW; col += 32) {
                const float *xq = st + (r - rb) * v->Wq + col;
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
                    const v8f sv[4] = {s0, s1, s2, s3};
                    for (int c = 0; c * 8 < n; c++) {
                        if (n >= c * 8 + 8) KG_F(st8)(yo + c * 8, sv[c]);
                        /* A row's last, partial vector whole where the lanes
                         * past the row land in the channel's next row before
                         * this item writes them (here: always; in the pairs
                         * above: from the first row of a pair only when the
                         * row is one block of columns): a masked store is a
                         * sixth of the row loops' time on 28-wide maps (AVX2's
                         * vmaskmovps). The last row's stays masked. */
                        else if (r + 1 < v->OH && j->OW >= 8) KG_F(st8)(yo + c * 8, sv[c]);
                        else KG_F(st8n)(yo + c * 8, sv[c], n - c * 8);
                    }
                }
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

#undef DW_VL
#undef DW_V
#if KG_SIMD == 2
#undef KG_BAND3_NV
#endif
