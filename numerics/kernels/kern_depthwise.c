/* kern_depthwise.c - the depthwise convolution kernels of the GEMM core
 * (kern_gemm.h: kg_dw_run): a channel at a time on the grid (dw_chan), or
 * 16 channels in the lanes on narrow maps; the inner loops per build in
 * kern_dw_body.h, after the helpers they share with the GEMM
 * (kern_gemm_vec.h). */
#include "kern_gemm_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The row loops of kern_dw_body.h are unrolled so their sums stay in
 * registers (unrolling keeps each sum's order: the bits do not change).
 * Under AddressSanitizer the unrolled, always-inlined rows of every
 * (kernel, stride, row) shape make clang's instrumented compile of this
 * file take many minutes (the fuzz and sanitizer builds): there they are
 * left rolled. */
#define DW_PRAGMA(x) _Pragma(#x)
#if defined(__SANITIZE_ADDRESS__)
#define DW_UNROLL(n)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DW_UNROLL(n)
#endif
#endif
#ifndef DW_UNROLL
#define DW_UNROLL(n) DW_PRAGMA(GCC unroll n)
#endif
#define KG_BODY "kern_dw_body.h"
#include "kern_builds.h"

KG_ITEM_FN(kg_dw_fn, dw_item)

/* fp32 depthwise on narrow maps (MobileNet's and EfficientNet's 7 x 7 and
 * 14 x 14 stages, where dw_chan's 32-wide rows were mostly dropped
 * columns): 16 channels an item in the lanes, over a zero-padded
 * channels-last copy of their input, each output's taps in order (blocks
 * of 64 fused multiply-adds from 0, added to the sum from 0, then the
 * bias): dw_chan's operations per output, padding taps included as its
 * zero strip has them, so the same bits. */
typedef void (*kg_row_fn)(int64_t K, const float *w16, const float *p, const int64_t *off, int64_t step,
                          int64_t n, const float *bias16, float *out16);
typedef void (*kg_slide_fn)(int64_t KH, int64_t KW, int64_t SW, const float *w16, const float *p, int64_t rs,
                            int64_t n, const float *bias16, float *out16);
typedef void (*kg_in_fn)(const float *const *xs, int64_t nc, int64_t H, int64_t W, float *p, int64_t Wp,
                         int64_t pt, int64_t pl);
typedef void (*kg_out_fn)(const float *y16, int64_t n, int64_t nc, float *const *ys);

typedef struct kg_dw16 {
    const kg_dw *j;
    int64_t Hp, Wp;     /* padded input */
    const int64_t *off; /* [K]: each tap's place in it, from an output's first */
    kg_row_fn row;      /* taps16_row, slide16_row, lanes_in and lanes_out of the build the CPU takes */
    kg_slide_fn slide;  /* NULL: the kernel is not one slide16_row takes */
    kg_in_fn in;
    kg_out_fn out;
    float *buf[8];      /* per thread: the padded input, the weights, the output's lanes */
} kg_dw16;

/* Narrow maps: outputs up to this wide, or up to KG_DW16_MAX_OW1 at
 * column stride 1 (MobileNetV3-Small's 88 x 28 x 28 3x3: 0.041 -> 0.035 ms
 * one thread, 0.053 -> 0.042 two; EfficientNet-B0's 144 x 56 x 56 3x3
 * about 15% and 8% faster, PP-OCRv4 det's 192 x 40 x 40 5x5 about 20%;
 * MobileNetV3-Small's 72 x 56 x 56 stride-2 one, 28 wide, was no faster:
 * its padded copy is four times the outputs). Kernels of 25 taps and more
 * at any width whose padded copy stays within KG_DW16_MAX_PAD floats (one
 * thread, 16-lane slide16_row: PP-OCRv4 rec's 240 x 12 x 80 5x5, 0.29 ->
 * 0.16 ms, its 480 x 6 x 80 -> 3 x 80 0.19 -> 0.11 ms; the moves into and
 * out of the lanes cost the same per output at any K, so 3x3 kernels on
 * wider maps stay on dw_chan: rec's 128 x 12 x 160 0.10 -> 0.14 ms there). */
enum { KG_DW16_MAX_OW = 23, KG_DW16_MAX_OW1 = 56, KG_DW16_MIN_K = 25, KG_DW16_MAX_PAD = 1 << 16 };

static void kg_dw16_fn(void *ctx, int tid, long item) {
    (void)tid;
    const kg_dw16 *d = ctx;
    const kg_dw *j = d->j;
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW, c0 = item * 16, nc = j->C - c0 < 16 ? j->C - c0 : 16;
    const int64_t Wp = d->Wp;
    /* The padded map's pads, zeroed when the buffer was made, stay zero:
     * lanes_in writes only the input's places. Lanes past nc (the last
     * item's) hold an earlier item's values and are never written out. */
    float *p = d->buf[tid], *wt = p + d->Hp * Wp * 16;
    float *o16 = wt + K * 16;
    const float *xs[16] = {0};
    float *ys[16] = {0};
    for (int64_t l = 0; l < nc; l++) xs[l] = v->x + (c0 + l) * v->H * v->W, ys[l] = j->y + (c0 + l) * j->yc;
    d->in(xs, nc, v->H, v->W, p, Wp, v->pt, v->pl);
    for (int64_t l = 0; l < nc; l++)
        for (int64_t k = 0; k < K; k++) wt[k * 16 + l] = j->w[(c0 + l) * K + k];
    float bias16[16] = {0};
    for (int64_t l = 0; j->bias && l < nc; l++) bias16[l] = j->bias[c0 + l];
    if (d->slide)
        for (int64_t oh = 0; oh < v->OH; oh++)
            d->slide(v->KH, v->KW, v->sw, wt, p + oh * v->sh * Wp * 16, v->dh * Wp * 16, j->OW, j->bias ? bias16 : NULL,
                     o16 + oh * j->OW * 16);
    else
        for (int64_t oh = 0; oh < v->OH; oh++)
            d->row(K, wt, p + oh * v->sh * Wp * 16, d->off, v->sw * 16, j->OW, j->bias ? bias16 : NULL,
               o16 + oh * j->OW * 16);
    d->out(o16, v->OH * j->OW, nc, ys);
}

/* dw_chan's bands: a whole number of its row groups (2 on AVX2, 3 on
 * AVX-512: 6), as many as keep the band's copy near KG_DW_STRIP floats. */
enum { KG_DW_STRIP = 8192, KG_DW_BAND_ROWS = 6 };

bool kg_dw_run(const kg_dw *j) {
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW;
    int nt = kg_threads_for((double)j->C * (double)v->OH * (double)j->OW * (double)K * 4.0);
    /* The narrow path's padded map: every tap a grid position reads (pads as zero). */
    kg_dw16 d = {.j = j, .Hp = (v->OH - 1) * v->sh + (v->KH - 1) * v->dh + 1,
                 .Wp = (j->OW - 1) * v->sw + (v->KW - 1) * v->dw + 1};
    if (d.Hp < v->H + v->pt) d.Hp = v->H + v->pt;
    if (d.Wp < v->W + v->pl) d.Wp = v->W + v->pl;
    const bool narrow = j->OW <= KG_DW16_MAX_OW || (j->OW <= KG_DW16_MAX_OW1 && v->sw == 1) ||
                        (K >= KG_DW16_MIN_K && d.Hp * d.Wp * 16 <= KG_DW16_MAX_PAD);
    if (j->mode == KG_FP32 && narrow && j->C >= 16) {
        const long items = (long)((j->C + 15) / 16);
        if (nt > items) nt = (int)items;
        int64_t *off = malloc((size_t)K * sizeof *off);
        bool ok = off != NULL;
        for (int64_t k = 0; ok && k < K; k++) off[k] = ((k / v->KW) * v->dh * d.Wp + (k % v->KW) * v->dw) * 16;
        d.off = off, d.row = KG_PICK(kg_row_fn, taps16_row);
        if (v->dw == 1 && (v->KW == 3 || v->KW == 5 || v->KW == 7) && (v->sw == 1 || v->sw == 2) &&
            K <= MPX_ACC_FP32_BLOCK && j->OW >= 4 && !mpx_env_on("MPX_KERN_NOSLIDE"))
            d.slide = KG_PICK(kg_slide_fn, slide16_row);
        d.in = KG_PICK(kg_in_fn, lanes_in), d.out = KG_PICK(kg_out_fn, lanes_out);
        for (int t = 0; ok && t < nt; t++)
            ok = (d.buf[t] = calloc((size_t)(d.Hp * d.Wp * 16 + K * 16 + v->OH * j->OW * 16), sizeof(float))) !=
                 NULL;
        if (ok) mpx_k_parallel_stoppable(items, nt, kg_dw16_fn, &d);
        for (int t = 0; t < 8; t++) free(d.buf[t]);
        free(off);
        return ok;
    }
    if (nt > j->C) nt = (int)j->C;
    kg_ctx x = {.d = j, .avx2 = kg_use_avx2(), .avx512 = kg_use_avx512(), .h16 = kg_use_h16(j->mode, j->f16)};
    /* A band of the channel's grid rows: its rows, the rows the taps reach
     * below them, one more for the dropped columns (ext); 64 floats of
     * slack for the last vectors (dw_band3_fp32's blocks of 3 to 7 vectors).
     * Bands of KG_DW_BAND_ROWS grid rows where
     * the whole channel's copy would pass KG_DW_STRIP floats (dw_chan fills
     * and computes one band at a time, so the copy is read back from the
     * first-level caches: PP-OCRv4 det's 320 x 320 and 160 x 160 maps made
     * copies of 400 KB a channel, each written out to the second-level
     * cache and read back from it). Banding moves only the copy; every
     * output's taps and sums are the same. */
    const int64_t ext = (v->KH - 1) * v->dh / v->sh + 1;
    int64_t band = v->OH;
    if (v->sh * v->sw * (v->OH + ext) * v->Wq > KG_DW_STRIP) {
        band = KG_DW_STRIP / (v->sh * v->sw * v->Wq) - ext;
        band = band / KG_DW_BAND_ROWS * KG_DW_BAND_ROWS;
        if (band < KG_DW_BAND_ROWS) band = KG_DW_BAND_ROWS;
        if (band > v->OH) band = v->OH;
    }
    x.srows = band + ext;
    x.splane = x.srows * v->Wq;
    x.schan = v->sh * v->sw * x.splane;
    int64_t *off = malloc((size_t)K * sizeof *off);
    bool ok = off != NULL;
    for (int64_t kh = 0; ok && kh < v->KH; kh++)
        for (int64_t kw = 0; kw < v->KW; kw++) {
            const int64_t ph = kh * v->dh % v->sh, pw = kw * v->dw % v->sw;
            off[kh * v->KW + kw] = (ph * v->sw + pw) * x.splane + kh * v->dh / v->sh * v->Wq + kw * v->dw / v->sw;
        }
    x.boff = off;
    for (int t = 0; ok && t < nt; t++)
        ok = (x.strip[t] = calloc((size_t)(x.schan + 64), sizeof(float))) != NULL;
    if (ok) mpx_k_parallel_stoppable((long)j->C, nt, kg_dw_fn, &x);
    kg_free_bufs(&x);
    free(off);
    return ok;
}
