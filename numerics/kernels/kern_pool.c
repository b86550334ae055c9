/* kern_pool.c - MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, MaxUnpool.
 *
 * GlobalAveragePool sums each plane through mpx_acc and divides by its size
 * (one fp32 division); with the accum rule's round-sum the sum is rounded to
 * the node's compute format before the division (mean_of).
 *
 * Windows: kn_window_out gives the output lengths and the padding implied by
 * auto_pad (kern_nn.h). A window's taps are visited in row-major order (for
 * 2-D: kernel row, then kernel column); taps outside the input are skipped.
 *
 * AveragePool sums the taps inside the input through mpx_acc in that order
 * and divides the sum by the count (one fp32 division). The count is, as in
 * ONNX Runtime and PyTorch: without count_include_pad, the taps inside the
 * input; with it, the taps inside the padded input (explicit or auto_pad
 * padding, never the overhang ceil_mode adds). A window with no tap inside
 * the input gives 0 (ORT).
 *
 * MaxPool takes the first tap inside the input, then any later tap that is
 * strictly greater (ORT's rule: a NaN first tap stays, later NaNs are
 * skipped). Indices (int64) are flat indices into X: row-major for
 * storage_order 0, spatial dims column-major for 1, as ORT computes them. A
 * window with no tap inside the input gives the dtype's lowest value (ORT)
 * and index -1. Integer inputs (opset 12 int8/uint8) are pooled as integers. */
#include "kern_nn.h"

#include <float.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* For one output position: the valid tap range in each spatial dim and the
 * counts for averaging. */
typedef struct win_pos {
    int64_t start[KN_MAX_SP]; /* input coordinate of tap 0 */
    int64_t lo[KN_MAX_SP], hi[KN_MAX_SP];
    int64_t n_in;             /* taps inside the input */
    int64_t n_pad;            /* taps inside the padded input */
} win_pos;

/* Each axis' window for every output coordinate, made once: the window is
 * separable, so a position's is read from the tables (working it out with
 * divisions at every output position of every plane was a fifth of the
 * pools' time in a small model). */
typedef struct win_tab {
    int64_t *t[KN_MAX_SP]; /* [out[i] * 4]: start, lo, hi, hp */
} win_tab;

static mpx_status win_tab_make(const mpx_kctx *c, const kn_window *w, win_tab *tab) {
    memset(tab, 0, sizeof *tab);
    for (int i = 0; i < w->nsp; i++) {
        mpx_status st = kn_scratch(c, (size_t)(4 * (w->out[i] ? w->out[i] : 1)), sizeof(int64_t),
                                   (void **)&tab->t[i]);
        if (st) return st;
        for (int64_t o = 0; o < w->out[i]; o++) {
            int64_t st0 = o * w->s[i] - w->pb[i], d = w->d[i];
            int64_t lo = kn_ceil_div(-st0, d), hi = kn_floor_div(w->in[i] - 1 - st0, d) + 1;
            int64_t hp = kn_floor_div(w->in[i] + w->pe[i] - 1 - st0, d) + 1;
            if (lo < 0) lo = 0;
            if (hi > w->k[i]) hi = w->k[i];
            if (hp > w->k[i]) hp = w->k[i];
            if (hi < lo) hi = lo;
            if (hp < 0) hp = 0;
            int64_t *e = tab->t[i] + 4 * o;
            e[0] = st0, e[1] = lo, e[2] = hi, e[3] = hp;
        }
    }
    return MPX_OK;
}

static void win_tab_free(win_tab *tab) {
    for (int i = 0; i < KN_MAX_SP; i++) free(tab->t[i]);
}

/* Position oc's window into p, and its first tap into t. */
static void window_from(const win_tab *tab, int nsp, const int64_t *oc, win_pos *p, int64_t *t) {
    p->n_in = p->n_pad = 1;
    for (int i = 0; i < nsp; i++) {
        const int64_t *e = tab->t[i] + 4 * oc[i];
        p->start[i] = e[0];
        p->lo[i] = e[1];
        p->hi[i] = e[2];
        p->n_in *= e[2] - e[1];
        p->n_pad *= e[3];
        t[i] = e[1];
    }
}

/* Advance a row-major odometer over the box [lo, hi); false when done. */
static bool next_tap(int nsp, const win_pos *p, int64_t *t) {
    for (int i = nsp - 1; i >= 0; i--) {
        if (++t[i] < p->hi[i]) return true;
        t[i] = p->lo[i];
    }
    return false;
}

static bool next_pos(int nsp, const int64_t *out, int64_t *oc) {
    for (int i = nsp - 1; i >= 0; i--) {
        if (++oc[i] < out[i]) return true;
        oc[i] = 0;
    }
    return false;
}

static int64_t int_lowest(mpx_dtype dt) {
    switch (dt) {
    case MPX_DT_INT8: return INT8_MIN;
    case MPX_DT_INT16: return INT16_MIN;
    case MPX_DT_INT32: return INT32_MIN;
    case MPX_DT_INT64: return INT64_MIN;
    default: return 0; /* unsigned, bool */
    }
}

/* X: float values (float64 ones for f64, the float64 kernels), or integer
 * ones where ints_ok. */
static mpx_status pool_input(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                             bool ints_ok, bool f64, const mpx_value **x) {
    const mpx_value *p = kn_opt(in, n_in, 0);
    char sb[160];
    if (!p) return mpx_kernel_error(c, MPX_E_INVALID, "input 0 (X) is missing");
    bool fl = f64 ? p->d != NULL : mpx_dtype_is_float(p->dtype) && p->f;
    bool it = ints_ok && mpx_dtype_is_int_like(p->dtype) && p->i && p->dtype != MPX_DT_BOOL;
    if (!fl && !it)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "input X is %s, which this op does not take",
                                mpx_dtype_name(p->dtype));
    if (p->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X has shape %s; N x C x D1 x ... (rank 3 or more) expected",
                                kn_shape(p, sb));
    *x = p;
    return MPX_OK;
}

/* Average, max or Lp (y = (sum |x|^p)^(1/p) over the taps inside the input,
 * as ONNX's LpPool: padding adds zeros, which add nothing). */
typedef enum pool_kind { POOL_AVG, POOL_MAX, POOL_LP } pool_kind;

static float lp_term(float v, float pw) { return pw == 2.0f ? v * v : pw == 1.0f ? fabsf(v) : powf(fabsf(v), pw); }
static float lp_root(float s, float pw) { return pw == 2.0f ? sqrtf(s) : pw == 1.0f ? s : powf(s, 1.0f / pw); }

/* A pool's attributes and shapes, for the fp32 and the float64 kernel. */
typedef struct pool_geo {
    kn_window w;
    bool include_pad;
    int64_t pw;    /* LpPool's p */
    int64_t order; /* storage_order */
    int64_t dims[MPX_MAX_RANK], in_plane, out_plane, rstride[KN_MAX_SP], cstride[KN_MAX_SP];
} pool_geo;

static mpx_status pool_setup(const mpx_kctx *c, const mpx_value *x, pool_kind kind, pool_geo *g) {
    kn_window *w = &g->w;
    mpx_status st = kn_window_attrs(c, x, NULL, w);
    if (st) return st;
    bool ceil_mode = mpx_node_attr_int(c->node, "ceil_mode", 0) != 0;
    if ((st = kn_window_out(c, w, ceil_mode))) return st;
    g->include_pad = mpx_node_attr_int(c->node, "count_include_pad", 0) != 0;
    g->pw = 2;
    if (kind == POOL_LP) {
        g->pw = mpx_node_attr_int(c->node, "p", 2);
        if (g->pw < 1 || g->pw > 64)
            return mpx_kernel_error(c, MPX_E_INVALID, "p = %lld: a power from 1 to 64", (long long)g->pw);
    }
    g->order = mpx_node_attr_int(c->node, "storage_order", 0);
    if (g->order != 0 && g->order != 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "storage_order %lld is not 0 or 1",
                                (long long)g->order);
    int nsp = w->nsp;
    g->dims[0] = x->dims[0], g->dims[1] = x->dims[1];
    g->in_plane = g->out_plane = 1;
    for (int i = 0; i < nsp; i++) {
        g->dims[2 + i] = w->out[i];
        g->out_plane *= w->out[i];
        g->cstride[i] = g->in_plane; /* column-major strides for storage_order 1 */
        g->in_plane *= w->in[i];
    }
    for (int i = nsp - 1; i >= 0; i--) g->rstride[i] = i == nsp - 1 ? 1 : g->rstride[i + 1] * w->in[i + 1];
    return MPX_OK;
}

/* The offset in its plane of tap t of window p. */
static inline int64_t tap_offset(const pool_geo *g, const win_pos *p, const int64_t *t) {
    int64_t off = 0;
    for (int i = 0; i < g->w.nsp; i++) off += (p->start[i] + t[i] * g->w.d[i]) * g->rstride[i];
    return off;
}

/* MaxPool's Indices value for the tap at offset best of plane xb (-1: none). */
static int64_t max_index(const pool_geo *g, int64_t xb, int64_t best) {
    if (best < 0) return -1;
    int64_t idx = xb;
    for (int i = 0; i < g->w.nsp; i++) {
        int64_t coord = (best / g->rstride[i]) % g->w.in[i];
        idx += coord * (g->order ? g->cstride[i] : g->rstride[i]);
    }
    return idx;
}

/* 2-D float MaxPool without indices, a plane an item on the kernel threads:
 * per output row, each in-bounds tap in the window's order (rows, then
 * columns) over the row's outputs at once, each output taking its first
 * tap's value and then any strictly greater one: the general loop's rule,
 * output by output, so the same values (NaN included: a first NaN stays,
 * a later one is never greater). The general loop walked a window an
 * output (ResNet-18's MaxPool: 2.8 ms of a 31 ms forward). */
typedef struct pool2d {
    const kn_window *w;
    const win_tab *tab; /* (AveragePool: the counts) */
    const float *x;
    float *y;
    int64_t H, W, OH, OW;
    bool include_pad;
    bool avx2; /* MaxPool's 3x3 rows by max3x3_avx2, AveragePool's by avg_row_avx2 (the same values) */
    bool avx512; /* MaxPool's rows by maxk_avx512 first (the same values) */
} pool2d;

/* The outputs [*lo, *hi) of a row, within the outputs [c0, c1) a caller
 * walks, whose tap b (its input column o * s + *off) lies inside the input
 * row of W columns. */
static void tap_cols(const kn_window *w, int64_t W, int64_t b, int64_t c0, int64_t c1, int64_t *off,
                     int64_t *lo, int64_t *hi) {
    *off = b * w->d[1] - w->pb[1];
    *lo = kn_ceil_div(-*off, w->s[1]);
    *hi = kn_ceil_div(W - *off, w->s[1]);
    if (*lo < c0) *lo = c0;
    if (*hi > c1) *hi = c1;
}

/* The input row that output row oh's tap row a reads in plane xp, or NULL
 * where it lies in the padding. */
static const float *tap_row(const pool2d *m, const float *xp, int64_t oh, int64_t a) {
    const int64_t ih = oh * m->w->s[0] + a * m->w->d[0] - m->w->pb[0];
    return ih < 0 || ih >= m->H ? NULL : xp + ih * m->W;
}

/* Outputs [lo, hi) of a row whose every column tap is inside the input:
 * tap (first row, first column) is each output's first, so the loop needs
 * no per-output flag and takes the later taps as v > y ? v : y, which is
 * vmaxps(v, y) (NaN included: y stays unless v is greater), vectorised
 * with the stride a constant (1 and 2: ResNet's and UNet's MaxPools; the
 * flag loop had run them at 2-3 GMAC/s). */
static inline void max_interior_s(const pool2d *m, const float *xp, int64_t oh, float *yr, int64_t lo,
                                  int64_t hi, const int64_t s) {
    const kn_window *w = m->w;
    bool started = false;
    for (int64_t a = 0; a < w->k[0]; a++) {
        const float *xr = tap_row(m, xp, oh, a);
        if (!xr) continue;
        for (int64_t b = 0; b < w->k[1]; b++) {
            const float *xo = xr + b * w->d[1] - w->pb[1];
            if (!started)
                for (int64_t o = lo; o < hi; o++) yr[o] = xo[o * s];
            else
                for (int64_t o = lo; o < hi; o++) {
                    const float v = xo[o * s];
                    yr[o] = v > yr[o] ? v : yr[o];
                }
            started = true;
        }
    }
}

MPX_K_CLONES("avx512f", "avx2", "default")
static void max_interior(const pool2d *m, const float *xp, int64_t oh, float *yr, int64_t lo, int64_t hi) {
    if (m->w->s[1] == 1) max_interior_s(m, xp, oh, yr, lo, hi, 1);
    else if (m->w->s[1] == 2) max_interior_s(m, xp, oh, yr, lo, hi, 2);
    else max_interior_s(m, xp, oh, yr, lo, hi, m->w->s[1]);
}

/* A 3x3 window's row (dilation 1) by its valid tap rows rows[0..nr) (1 to
 * 3, in the window's order: the padding's rows left out), output o's first
 * column at o * s + off. Outputs [lo, hi), whose column taps are all inside
 * the input: the taps in the window's order folded in a register per
 * output and stored once (max_interior reads and writes the row once a
 * tap: nine passes, ResNet's stem MaxPool at 6x ONNX Runtime's time). The
 * same fold, so the same values. */
static inline void max3x3_interior_s(const float *const *rows, int nr, int64_t off, float *yr, int64_t lo,
                                     int64_t hi, const int64_t s) {
    for (int64_t o = lo; o < hi; o++) {
        const float *p = rows[0] + (o * s + off);
        float y = p[0];
        y = p[1] > y ? p[1] : y;
        y = p[2] > y ? p[2] : y;
        for (int a = 1; a < nr; a++) {
            p = rows[a] + (o * s + off);
            y = p[0] > y ? p[0] : y;
            y = p[1] > y ? p[1] : y;
            y = p[2] > y ? p[2] : y;
        }
        yr[o] = y;
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* Eight outputs at a time with vmaxps(tap, y) in the taps' order, which is
 * y = tap > y ? tap : y lane by lane (GCC left the loop above scalar: its
 * overlapping strided loads are no group it vectorises). Outputs [lo, hi)
 * have every tap inside the row, so a vector of eight reads only inside
 * it; the last vector overlaps the one before (its outputs computed twice,
 * from the inputs, the same values) rather than leaving a scalar tail
 * (ResNet's stem MaxPool: 7 of a row's 56 outputs). Returns the first
 * output not done (lo where the outputs are fewer than eight). */
__attribute__((target("avx2"))) static inline __m256 max3_s1_avx2(const float *const *rows, int nr, int64_t c) {
    __m256 y = _mm256_loadu_ps(rows[0] + c);
    for (int a = 0; a < nr; a++) {
        const float *p = rows[a] + c;
        if (a) y = _mm256_max_ps(_mm256_loadu_ps(p), y);
        y = _mm256_max_ps(_mm256_loadu_ps(p + 1), y);
        y = _mm256_max_ps(_mm256_loadu_ps(p + 2), y);
    }
    return y;
}

/* Stride 2: the row's terms p[0..17) as evens (p[0], p[2], ...), odds and
 * evens from p[2], each by one in-lane shuffle of two loads, all three in
 * the same lane order [0 1 4 5 2 3 6 7] (the max is lane by lane, so the
 * order is put right once, at the end; the loads end at p[16], output
 * 7's last tap). */
__attribute__((target("avx2"))) static inline __m256 max3_s2_avx2(const float *const *rows, int nr, int64_t c) {
    __m256 y = _mm256_setzero_ps();
    for (int a = 0; a < nr; a++) {
        const float *p = rows[a] + c;
        const __m256 x0 = _mm256_loadu_ps(p), x8 = _mm256_loadu_ps(p + 8), x1 = _mm256_loadu_ps(p + 1),
                     x9 = _mm256_loadu_ps(p + 9);
        const __m256 ev = _mm256_shuffle_ps(x0, x8, 0x88), od = _mm256_shuffle_ps(x0, x8, 0xdd),
                     ev2 = _mm256_shuffle_ps(x1, x9, 0xdd);
        y = a ? _mm256_max_ps(ev, y) : ev;
        y = _mm256_max_ps(od, y);
        y = _mm256_max_ps(ev2, y);
    }
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(y), 0xd8));
}

__attribute__((target("avx2"))) static int64_t max3x3_avx2(const float *const *rows, int nr, int64_t off, float *yr,
                                                           int64_t lo, int64_t hi, int64_t s) {
    if (hi - lo < 8 || (s != 1 && s != 2)) return lo;
    for (int64_t o = lo;; o += 8) {
        if (o + 8 > hi) o = hi - 8;
        _mm256_storeu_ps(yr + o, s == 1 ? max3_s1_avx2(rows, nr, o + off) : max3_s2_avx2(rows, nr, 2 * o + off));
        if (o + 8 == hi) return hi;
    }
}

/* Any window KW wide (dilation 1) at column stride 1 or 2, sixteen outputs
 * a vector, a tap row at a time over the row's outputs (the row's taps
 * folded into y in order, y read back from the output row for the rows
 * after the first): y = tap > y ? tap : y lane by lane is vmaxps(tap, y)
 * (the first tap taken as it is), the flag loop's values. Stride 2: a
 * tap's values are the even lanes of the 32 floats from its column, the
 * next tap's the odd ones (two loads and a permute for two taps; UNet's
 * 2x2 windows had four passes over the row, 2.4 times ONNX Runtime's
 * time). The second load stops at the last float an output reads (masked:
 * none past the row's last tap, which may be the plane's last float). The
 * next rows are prefetched (the windows' rows follow one another). Outputs
 * [lo, hi) have every tap inside the row; the last vector overlaps the one
 * before, whose outputs then take the row's taps twice: the same values,
 * as folding a tap into a y that has taken it changes nothing (y is then
 * not below it, or a NaN that stays). Returns the first output not done
 * (lo where there are fewer than 16). */
__attribute__((target("avx512f"))) static int64_t maxk_avx512(const float *const *rows, int nr, int64_t kw,
                                                              int64_t off, float *yr, int64_t lo, int64_t hi,
                                                              int64_t s) {
    if (hi - lo < 16 || (s != 1 && s != 2) || nr < 1) return lo;
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
                  od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int a = 0; a < nr; a++)
        for (int64_t o = lo;; o += 16) {
            if (o + 16 > hi) o = hi - 16;
            __m512 y = a ? _mm512_loadu_ps(yr + o) : _mm512_setzero_ps();
            bool first = a == 0;
            const float *p = rows[a] + o * s + off;
            _mm_prefetch((const char *)(p + 256), _MM_HINT_T0);
            _mm_prefetch((const char *)(p + 272), _MM_HINT_T0);
            if (s == 1)
                for (int64_t b = 0; b < kw; b++) {
                    const __m512 v = _mm512_loadu_ps(p + b);
                    y = first ? v : _mm512_max_ps(v, y);
                    first = false;
                }
            else
                for (int64_t b = 0; b < kw; b += 2) {
                    const __m512 x0 = _mm512_loadu_ps(p + b),
                                 x1 = _mm512_maskz_loadu_ps(b + 1 < kw ? 0xffff : 0x7fff, p + b + 16);
                    const __m512 v = _mm512_permutex2var_ps(x0, ev, x1);
                    y = first ? v : _mm512_max_ps(v, y);
                    first = false;
                    if (b + 1 < kw) y = _mm512_max_ps(_mm512_permutex2var_ps(x0, od, x1), y);
                }
            _mm512_storeu_ps(yr + o, y);
            if (o + 16 == hi) break;
        }
    return hi;
}
#endif

/* Whether MaxPool takes max3x3_avx2 (the CPU has AVX2 and MPX_KERN_PORTABLE
 * does not ask for the portable loops; the same values either way). */
static bool pool_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_supports("avx2") && !mpx_env_on("MPX_KERN_PORTABLE");
#else
    return false;
#endif
}

/* Whether MaxPool takes maxk_avx512 (as pool_avx2, with AVX-512F, unless
 * MPX_KERN_AVX2 asks for the AVX2 build as in the GEMM core). */
static bool pool_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
    return pool_avx2() && __builtin_cpu_supports("avx512f") && !mpx_env_on("MPX_KERN_AVX2");
#else
    return false;
#endif
}

/* A 3x3 window's output row: the interior as above, each edge output
 * (some column tap in the padding) from its clamped range of columns. */
static void max3x3_row(const pool2d *m, const float *const *rows, int nr, float *yr, int64_t ilo, int64_t ihi) {
    const int64_t s = m->w->s[1], off = -m->w->pb[1];
    int64_t lo = ilo;
#if defined(__x86_64__) || defined(__i386__)
    if (m->avx2) lo = max3x3_avx2(rows, nr, off, yr, lo, ihi, s);
#endif
    if (s == 1) max3x3_interior_s(rows, nr, off, yr, lo, ihi, 1);
    else if (s == 2) max3x3_interior_s(rows, nr, off, yr, lo, ihi, 2);
    else max3x3_interior_s(rows, nr, off, yr, lo, ihi, s);
    for (int part = 0; part < 2; part++)
        for (int64_t o = part ? ihi : 0; o < (part ? m->OW : ilo); o++) {
            const int64_t c = o * s + off, b0 = c < 0 ? -c : 0, b1 = m->W - c < 3 ? m->W - c : 3;
            float y = -FLT_MAX;
            bool first = true;
            for (int a = 0; a < nr; a++)
                for (int64_t b = b0; b < b1; b++) {
                    const float v = rows[a][c + b];
                    y = first || v > y ? v : y;
                    first = false;
                }
            yr[o] = y;
        }
}

enum { POOL_TAPS = 16 };

static void max2d_plane(void *ctx, int tid, long pc) {
    (void)tid;
    const pool2d *m = ctx;
    const kn_window *w = m->w;
    const float *xp = m->x + pc * m->H * m->W;
    float *yp = m->y + pc * m->OH * m->OW;
    const int64_t s = w->s[1];
    unsigned char any[4096];
    /* the outputs whose column taps are all inside the input; each column
     * tap's outputs, the same for every row (the first POOL_TAPS kept: a
     * row's edge outputs took two divisions a tap, a sixth of ResNet's
     * MaxPool) */
    int64_t ilo = 0, ihi = m->OW, toff[POOL_TAPS], tlo[POOL_TAPS], thi[POOL_TAPS];
    for (int64_t b = 0; b < w->k[1]; b++) {
        int64_t off, lo, hi;
        tap_cols(w, m->W, b, 0, m->OW, &off, &lo, &hi);
        if (b < POOL_TAPS) toff[b] = off, tlo[b] = lo, thi[b] = hi;
        ilo = lo > ilo ? lo : ilo;
        ihi = hi < ihi ? hi : ihi;
    }
    if (ihi < ilo) ihi = ilo;
    const bool w3 = w->k[0] == 3 && w->k[1] == 3 && w->d[0] == 1 && w->d[1] == 1;
    for (int64_t oh = 0; oh < m->OH; oh++) {
        float *yr = yp + oh * m->OW;
        if (w3) {
            const float *rows[3];
            int nr = 0;
            for (int64_t a = 0; a < 3; a++)
                if ((rows[nr] = tap_row(m, xp, oh, a))) nr++;
            if (nr) {
                max3x3_row(m, rows, nr, yr, ilo, ihi);
                continue;
            }
        }
        int64_t done = ilo; /* the interior's outputs [ilo, done) by maxk_avx512 */
#if defined(__x86_64__) || defined(__i386__)
        if (m->avx512 && w->d[1] == 1 && w->k[0] <= POOL_TAPS) {
            const float *rows[POOL_TAPS];
            int nr = 0;
            for (int64_t a = 0; a < w->k[0]; a++)
                if ((rows[nr] = tap_row(m, xp, oh, a))) nr++;
            done = maxk_avx512(rows, nr, w->k[1], -w->pb[1], yr, ilo, ihi, s);
        }
#endif
        for (int64_t o = 0; o < ilo; o++) yr[o] = -FLT_MAX;
        for (int64_t o = done; o < m->OW; o++) yr[o] = -FLT_MAX;
        if (done < ihi) max_interior(m, xp, oh, yr, done, ihi);
        /* the others: [0, ilo) and [ihi, OW), a first-tap flag each */
        for (int part = 0; part < 2; part++) {
            const int64_t p0 = part ? ihi : 0, p1 = part ? m->OW : ilo;
            for (int64_t c0 = p0; c0 < p1; c0 += 4096) {
                const int64_t c1 = c0 + 4096 < p1 ? c0 + 4096 : p1;
                for (int64_t o = c0; o < c1; o++) any[o - c0] = 0;
                for (int64_t a = 0; a < w->k[0]; a++) {
                    const float *xr = tap_row(m, xp, oh, a);
                    if (!xr) continue;
                    for (int64_t b = 0; b < w->k[1]; b++) {
                        int64_t off, lo, hi;
                        if (b < POOL_TAPS) {
                            off = toff[b], lo = tlo[b], hi = thi[b];
                            if (lo < c0) lo = c0;
                            if (hi > c1) hi = c1;
                        } else
                            tap_cols(w, m->W, b, c0, c1, &off, &lo, &hi);
                        for (int64_t o = lo; o < hi; o++) {
                            const float v = xr[o * s + off];
                            const bool take = !any[o - c0] || v > yr[o];
                            yr[o] = take ? v : yr[o];
                            any[o - c0] = 1;
                        }
                    }
                }
            }
        }
    }
}

/* 2-D float AveragePool with fp32 sums over at most MPX_ACC_FP32_BLOCK taps
 * (one block: the sum is the block's, from +0, tap by tap in the window's
 * order), then each sum over its count (padding counted or not). The
 * general loop's values: the same terms added in the same order, each
 * output's sum in a register (eight outputs to a vector on AVX2). Items are
 * runs of planes (AVG_ITEM_TAPS taps' work each): with an item a plane,
 * each thread takes rec's 480 small planes one by one from the shared
 * counter, and working out each output's window and count from the tables
 * costs more than its six additions (rec's AveragePool, 480 planes of 3x80
 * to 1x40: 7x ONNX Runtime's time that way). */
enum { AVG_ITEM_TAPS = 1 << 15, AVG_MAX_OW = 1024 };
typedef struct avg2d {
    pool2d m;
    const float *x_end; /* the input's end: the stride-2 vectors may read up to it */
    int64_t ilo, ihi;   /* outputs whose column taps are all inside the input */
    int64_t per_item;   /* planes an item */
    int64_t planes;
} avg2d;

/* Output o's sum over the valid tap rows rows[0..nr) and the column taps
 * [b0, b1), first column at c = o * s - pb: tap by tap from +0. */
static inline float avg_sum(const float *const *rows, int nr, int64_t c, int64_t b0, int64_t b1, int64_t d) {
    float y = 0.0f;
    for (int a = 0; a < nr; a++)
        for (int64_t b = b0; b < b1; b++) y += rows[a][c + b * d];
    return y;
}

#if defined(__x86_64__) || defined(__i386__)
/* Outputs [lo, hi) of the interior, eight at a time, strides 1 and 2 (the
 * stride-2 terms q[0], q[2], ..., q[14] as the even lanes of two loads, in
 * the lane order [0 1 4 5 2 3 6 7], put right once at the end; the second
 * load may read past the row, never past x_end). Each lane adds its taps
 * in the window's order from +0: the scalar sum's value. Returns the first
 * output not done. */
__attribute__((target("avx2"))) static int64_t avg_row_avx2(const float *const *rows, int nr, int64_t kw, int64_t d,
                                                            int64_t off, int64_t s, const float *x_end, float *yr,
                                                            int64_t lo, int64_t hi) {
    int64_t o = lo;
    if (s == 1)
        for (; o + 8 <= hi; o += 8) {
            __m256 y = _mm256_setzero_ps();
            for (int a = 0; a < nr; a++)
                for (int64_t b = 0; b < kw; b++) y = _mm256_add_ps(y, _mm256_loadu_ps(rows[a] + o + off + b * d));
            _mm256_storeu_ps(yr + o, y);
        }
    else if (s == 2)
        for (; o + 8 <= hi; o += 8) {
            bool inside = true;
            for (int a = 0; a < nr; a++) inside = inside && rows[a] + 2 * o + off + (kw - 1) * d + 16 <= x_end;
            if (!inside) break;
            __m256 y = _mm256_setzero_ps();
            for (int a = 0; a < nr; a++)
                for (int64_t b = 0; b < kw; b++) {
                    const float *q = rows[a] + 2 * o + off + b * d;
                    y = _mm256_add_ps(y, _mm256_shuffle_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8), 0x88));
                }
            _mm256_storeu_ps(yr + o, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(y), 0xd8)));
        }
    return o;
}
#endif

/* A row's sums over their counts; cnt[o] 0: no tap inside the input, 0.
 * On AVX2 eight at a time, every lane divided (by 1 where the count is 0,
 * then replaced): GCC left the loop scalar, a fifth of rec's AveragePool.
 * A division is IEEE's either way: the same values. */
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static int64_t avg_divide_avx2(float *yr, const float *cnt, int64_t n) {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    int64_t o = 0;
    for (; o + 8 <= n; o += 8) {
        const __m256 c = _mm256_loadu_ps(cnt + o), has = _mm256_cmp_ps(c, zero, _CMP_GT_OQ);
        const __m256 q = _mm256_div_ps(_mm256_loadu_ps(yr + o), _mm256_blendv_ps(one, c, has));
        _mm256_storeu_ps(yr + o, _mm256_and_ps(q, has));
    }
    return o;
}
#endif

static void avg_divide(bool avx2, float *yr, const float *cnt, int64_t n) {
    int64_t o = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (avx2) o = avg_divide_avx2(yr, cnt, n);
#else
    (void)avx2;
#endif
    for (; o < n; o++) yr[o] = cnt[o] > 0.0f ? yr[o] / cnt[o] : 0.0f;
}

static void avg2d_item(void *ctx, int tid, long item) {
    (void)tid;
    const avg2d *v = ctx;
    const pool2d *m = &v->m;
    const kn_window *w = m->w;
    const int64_t s = w->s[1], d = w->d[1], kw = w->k[1], off = -w->pb[1];
    const int64_t p0 = (int64_t)item * v->per_item, p1 = p0 + v->per_item < v->planes ? p0 + v->per_item : v->planes;
    float cnt[AVG_MAX_OW];
    for (int64_t oh = 0; oh < m->OH; oh++) {
        const int64_t *er = m->tab->t[0] + 4 * oh;
        const int64_t rin = er[2] - er[1], rpad = er[3];
        for (int64_t o = 0; o < m->OW; o++) {
            const int64_t *ec = m->tab->t[1] + 4 * o;
            const int64_t nin = rin * (ec[2] - ec[1]);
            cnt[o] = nin > 0 ? (float)(m->include_pad ? rpad * ec[3] : nin) : 0.0f;
        }
        for (int64_t pc = p0; pc < p1; pc++) {
            const float *xp = m->x + pc * m->H * m->W;
            float *yr = m->y + (pc * m->OH + oh) * m->OW;
            const float *rows[MPX_ACC_FP32_BLOCK]; /* k[0] <= k[0] * k[1] <= the block */
            int nr = 0;
            for (int64_t a = 0; a < w->k[0]; a++)
                if ((rows[nr] = tap_row(m, xp, oh, a))) nr++;
            int64_t lo = v->ilo;
#if defined(__x86_64__) || defined(__i386__)
            if (m->avx2) lo = avg_row_avx2(rows, nr, kw, d, off, s, v->x_end, yr, lo, v->ihi);
#endif
            for (int64_t o = lo; o < v->ihi; o++) yr[o] = avg_sum(rows, nr, o * s + off, 0, kw, d);
            for (int part = 0; part < 2; part++)
                for (int64_t o = part ? v->ihi : 0; o < (part ? m->OW : v->ilo); o++) {
                    const int64_t *ec = m->tab->t[1] + 4 * o;
                    yr[o] = avg_sum(rows, nr, o * s + off, ec[1], ec[2], d);
                }
            avg_divide(m->avx2, yr, cnt, m->OW);
        }
    }
}

/* 3-D MaxPool without indices: every input depth plane pooled over rows
 * and columns by max2d_plane, then each output the first of its depth
 * taps inside the input and any later one strictly greater. The same value
 * as the taps in row-major order (depth, row, column): a window's row and
 * column taps inside the input are the same at every depth, so each
 * depth's plane result is its first such tap or a later strictly greater
 * one, and the first strictly greatest of those is the window's (a NaN
 * first tap stays, later NaNs are skipped, of equal values the first is
 * kept, as the whole walk). Why: the general walk took 16 ms for a video
 * model's 1x3x3 pool over 32 x 8 x 56 x 56, ONNX Runtime 0.4. */
static mpx_status max3d(const mpx_value *x, const kn_window *w, float *y, int64_t planes) {
    const int64_t D = w->in[0], OD = w->out[0], oplane = w->out[1] * w->out[2];
    kn_window w2 = *w;
    w2.nsp = 2;
    for (int i = 0; i < 2; i++) {
        w2.in[i] = w->in[i + 1], w2.out[i] = w->out[i + 1], w2.k[i] = w->k[i + 1];
        w2.s[i] = w->s[i + 1], w2.d[i] = w->d[i + 1], w2.pb[i] = w->pb[i + 1], w2.pe[i] = w->pe[i + 1];
    }
    float *t = malloc((size_t)(planes * D * oplane) * sizeof *t);
    if (!t) return MPX_E_NOMEM;
    pool2d m = {.w = &w2, .x = x->f, .y = t, .H = w2.in[0], .W = w2.in[1], .OH = w2.out[0], .OW = w2.out[1],
                .avx2 = pool_avx2(), .avx512 = pool_avx512()};
    const int64_t n2 = planes * D;
    mpx_k_parallel((long)n2, n2 * oplane * w2.k[0] * w2.k[1] < 100000 ? 1 : kg_threads(), max2d_plane, &m);
    for (int64_t pc = 0; pc < planes; pc++)
        for (int64_t od = 0; od < OD; od++) {
            float *yo = y + (pc * OD + od) * oplane;
            bool any = false;
            for (int64_t kd = 0; kd < w->k[0]; kd++) {
                const int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0];
                if (id < 0 || id >= D) continue;
                const float *tp = t + (pc * D + id) * oplane;
                if (!any)
                    memcpy(yo, tp, (size_t)oplane * sizeof *yo);
                else
                    for (int64_t k = 0; k < oplane; k++) yo[k] = tp[k] > yo[k] ? tp[k] : yo[k];
                any = true;
            }
            if (!any)
                for (int64_t k = 0; k < oplane; k++) yo[k] = -FLT_MAX;
        }
    free(t);
    return MPX_OK;
}

static mpx_status pool(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out, pool_kind kind) {
    const bool is_max = kind == POOL_MAX;
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = pool_input(c, in, n_in, is_max, false, &x);
    if (st) return st;
    pool_geo g;
    if ((st = pool_setup(c, x, kind, &g))) return st;
    kn_window w = g.w;
    const bool include_pad = g.include_pad;
    const float pw = (float)g.pw;
    const int nsp = w.nsp;
    const int64_t *dims = g.dims, in_plane = g.in_plane, out_plane = g.out_plane, *rstride = g.rstride;
    bool want_idx = is_max && kn_wants_out(c, n_out, 1);
    /* max2d_plane writes every output, so its output needs no clearing
     * and may be the run's destination (calloc clears its pages or maps
     * fresh ones, for nothing here) */
    const bool max2d = is_max && nsp == 2 && x->f && !want_idx;
    /* avg2d_item, too, writes every output */
    const bool avg2d_on = kind == POOL_AVG && nsp == 2 && x->f && mpx_acc_is_fp32(&c->acc) &&
                          w.k[0] * w.k[1] <= MPX_ACC_FP32_BLOCK && w.out[1] <= AVG_MAX_OW;
    if ((st = (max2d || avg2d_on ? mpx_k_alloc_raw : mpx_k_alloc)(c, &out[0], x->dtype, x->rank, dims))) return st;
    if (want_idx && (st = mpx_k_alloc(c, &out[1], MPX_DT_INT64, x->rank, dims))) {
        mpx_value_free(&out[0]);
        return st;
    }
    const int64_t planes = x->dims[0] * x->dims[1];
    if (out_plane == 0 || planes == 0) return MPX_OK;
    if (max2d) {
        pool2d m = {.w = &w, .x = x->f, .y = out[0].f, .H = w.in[0], .W = w.in[1], .OH = w.out[0], .OW = w.out[1],
                    .avx2 = pool_avx2(), .avx512 = pool_avx512()};
        mpx_k_parallel((long)planes, planes * out_plane * w.k[0] * w.k[1] < 100000 ? 1 : kg_threads(), max2d_plane,
                       &m);
        return MPX_OK;
    }
    if (is_max && nsp == 3 && x->f && !want_idx) {
        st = max3d(x, &w, out[0].f, planes);
        if (st == MPX_E_NOMEM) st = mpx_kernel_error(c, st, "out of memory for the pool's rows");
        if (st) mpx_value_free(&out[0]);
        return st;
    }
    const int64_t low_i = int_lowest(x->dtype);
    win_tab tab;
    if ((st = win_tab_make(c, &w, &tab))) {
        win_tab_free(&tab);
        mpx_value_free(&out[0]);
        if (want_idx) mpx_value_free(&out[1]);
        return st;
    }
    if (avg2d_on) {
        avg2d v = {.m = {.w = &w, .tab = &tab, .x = x->f, .y = out[0].f, .H = w.in[0], .W = w.in[1], .OH = w.out[0],
                         .OW = w.out[1], .include_pad = include_pad, .avx2 = pool_avx2()},
                   .x_end = x->f + planes * in_plane, .ilo = 0, .ihi = w.out[1], .planes = planes};
        for (int64_t b = 0; b < w.k[1]; b++) { /* the interior: every column tap inside the input */
            int64_t off, lo, hi;
            tap_cols(&w, w.in[1], b, 0, w.out[1], &off, &lo, &hi);
            v.ilo = lo > v.ilo ? lo : v.ilo;
            v.ihi = hi < v.ihi ? hi : v.ihi;
        }
        if (v.ihi < v.ilo) v.ihi = v.ilo;
        const int64_t taps = out_plane * w.k[0] * w.k[1];
        v.per_item = AVG_ITEM_TAPS / taps > 1 ? AVG_ITEM_TAPS / taps : 1;
        const long items = (long)((planes + v.per_item - 1) / v.per_item);
        mpx_k_parallel(items, items > 1 ? kg_threads() : 1, avg2d_item, &v);
        win_tab_free(&tab);
        return MPX_OK;
    }
    for (int64_t pc = 0; pc < planes; pc++) {
        const int64_t xb = pc * in_plane;
        int64_t oc[KN_MAX_SP] = {0}, o = 0;
        do {
            win_pos p;
            int64_t t[KN_MAX_SP], best = -1;
            window_from(&tab, nsp, oc, &p, t);
            const int64_t yi = pc * out_plane + o;
            if (!is_max) {
                mpx_acc acc;
                mpx_acc_init(&acc, &c->acc, 0.0f);
                if (p.n_in > 0) {
                    do {
                        float v = x->f[xb + tap_offset(&g, &p, t)];
                        mpx_acc_add(&acc, kind == POOL_LP ? lp_term(v, pw) : v);
                    } while (next_tap(nsp, &p, t));
                }
                int64_t cnt = include_pad ? p.n_pad : p.n_in;
                if (kind == POOL_LP) out[0].f[yi] = p.n_in > 0 ? lp_root(mpx_acc_result(&acc), pw) : 0.0f;
                else out[0].f[yi] = p.n_in > 0 ? mpx_acc_result(&acc) / (float)cnt : 0.0f;
            } else {
                float bf = -FLT_MAX;
                int64_t bi = low_i;
                if (p.n_in > 0 && nsp == 2 && x->f && !want_idx) {
                    /* 2-D float without indices: the same taps in the same
                     * order, as two plain loops. */
                    const float *xr = x->f + xb;
                    bool any = false;
                    for (int64_t a = p.lo[0]; a < p.hi[0]; a++) {
                        const float *row = xr + (p.start[0] + a * w.d[0]) * rstride[0] + p.start[1];
                        for (int64_t b = p.lo[1]; b < p.hi[1]; b++) {
                            float v = row[b * w.d[1]];
                            if (!any || v > bf) bf = v, any = true;
                        }
                    }
                } else if (p.n_in > 0) {
                    do {
                        const int64_t off = tap_offset(&g, &p, t);
                        bool take = best < 0 || (x->f ? x->f[xb + off] > bf : x->i[xb + off] > bi);
                        if (!take) continue;
                        best = off;
                        if (x->f) bf = x->f[xb + off];
                        else bi = x->i[xb + off];
                    } while (next_tap(nsp, &p, t));
                }
                if (x->f) out[0].f[yi] = bf;
                else out[0].i[yi] = bi;
                if (want_idx) out[1].i[yi] = max_index(&g, xb, best);
            }
            o++;
        } while (next_pos(nsp, w.out, oc));
    }
    win_tab_free(&tab);
    return MPX_OK;
}

/* MaxPool, AveragePool and LpPool: one kernel, the kind read off the op. */
mpx_status mpx_k_pool(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    const mpx_op op = c->node->op;
    return pool(c, in, n_in, out, n_out,
                op == MPX_OP_MaxPool ? POOL_MAX : op == MPX_OP_LpPool ? POOL_LP : POOL_AVG);
}

/* A plane's mean from its sum: with the accum rule's round-sum
 * (MPX_ACC_ROUND_SUM) the sum is rounded to the node's compute format rs
 * first (PyTorch's CPU bf16 mean: a bf16 sum, then the division), else
 * divided as it is (rs NULL). */
static inline float mean_of(const mpx_format *rs, float sum, int64_t plane) {
    return (rs ? mpx_round_value(rs, sum) : sum) / (float)plane;
}

/* GlobalAveragePool's fp32 sums, planes 8 item .. 8 item + 7: eight planes
 * at once, each summed exactly as mpx_acc does (blocks of
 * MPX_ACC_FP32_BLOCK added to the running sum): the same bits, with eight
 * independent chains of additions instead of one (the sum's latency bound
 * it: GlobalAveragePool was 2% of det). */
enum { GP8 = 8, GP8_PAR_MIN = 1 << 18 };
typedef struct gp8 {
    const float *x;
    float *y;
    int64_t plane;
    const mpx_format *rs;
    bool avx2; /* gp8_avx2 (the same values) */
} gp8;

#if defined(__x86_64__) || defined(__i386__)
/* The eight planes from xp on, as gp8_group sums them: eight terms of each
 * plane loaded and transposed, so that each vector holds one term of every
 * plane, added lane by lane in the terms' order (a lane's sum is its
 * plane's, the same additions in the same order: the same bits). The loop
 * of scalar chains runs at 1.6 G terms/s (rec's squeeze-excitation pools,
 * 480 planes of 480: 2.8x ONNX Runtime's time). */
__attribute__((target("avx2"))) static void gp8_avx2(const float *xp, int64_t plane, float *sum8) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < plane; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < plane ? k0 + MPX_ACC_FP32_BLOCK : plane;
        __m256 blk = _mm256_setzero_ps();
        int64_t k = k0;
        for (; k + 8 <= k1; k += 8) {
            const __m256 r0 = _mm256_loadu_ps(xp + k), r1 = _mm256_loadu_ps(xp + plane + k),
                         r2 = _mm256_loadu_ps(xp + 2 * plane + k), r3 = _mm256_loadu_ps(xp + 3 * plane + k),
                         r4 = _mm256_loadu_ps(xp + 4 * plane + k), r5 = _mm256_loadu_ps(xp + 5 * plane + k),
                         r6 = _mm256_loadu_ps(xp + 6 * plane + k), r7 = _mm256_loadu_ps(xp + 7 * plane + k);
            const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
                         t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
                         t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee),
                         s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee),
                         s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee),
                         s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
            /* s0: terms 0 (low half) and 4 (high) of planes 0-3; s4: of planes 4-7 */
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s0, s4, 0x20));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s1, s5, 0x20));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s2, s6, 0x20));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s3, s7, 0x20));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s0, s4, 0x31));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s1, s5, 0x31));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s2, s6, 0x31));
            blk = _mm256_add_ps(blk, _mm256_permute2f128_ps(s3, s7, 0x31));
        }
        for (; k < k1; k++)
            blk = _mm256_add_ps(blk, _mm256_set_ps(xp[7 * plane + k], xp[6 * plane + k], xp[5 * plane + k],
                                                   xp[4 * plane + k], xp[3 * plane + k], xp[2 * plane + k],
                                                   xp[plane + k], xp[k]));
        sum = _mm256_add_ps(sum, blk);
    }
    _mm256_storeu_ps(sum8, sum);
}
#endif

static void gp8_group(void *ctx, int tid, long item) {
    (void)tid;
    const gp8 *w = ctx;
    const int64_t plane = w->plane, pc = (int64_t)item * GP8;
    const float *xp = w->x + pc * plane;
    float sum[GP8] = {0}, blk[GP8];
#if defined(__x86_64__) || defined(__i386__)
    if (w->avx2) {
        gp8_avx2(xp, plane, sum);
        for (int q = 0; q < GP8; q++) w->y[pc + q] = mean_of(w->rs, sum[q], plane);
        return;
    }
#endif
    for (int64_t k0 = 0; k0 < plane; k0 += MPX_ACC_FP32_BLOCK) {
        int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < plane ? k0 + MPX_ACC_FP32_BLOCK : plane;
        for (int q = 0; q < GP8; q++) blk[q] = 0.0f;
        for (int64_t k = k0; k < k1; k++)
            for (int q = 0; q < GP8; q++) blk[q] += xp[q * plane + k];
        for (int q = 0; q < GP8; q++) sum[q] += blk[q];
    }
    for (int q = 0; q < GP8; q++) w->y[pc + q] = mean_of(w->rs, sum[q], plane);
}

/* Global pools: the whole spatial plane of each (n, c), in flat order. */
static mpx_status global_pool(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                              mpx_value *out, int n_out, bool is_max) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = pool_input(c, in, n_in, false, false, &x);
    if (st) return st;
    int64_t dims[MPX_MAX_RANK], plane = 1;
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        if (i >= 2) plane *= x->dims[i];
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, dims))) return st;
    const int64_t planes = x->dims[0] * x->dims[1];
    int64_t pc = 0;
    const mpx_format *rs = (c->acc.flags & MPX_ACC_ROUND_SUM) && c->round && c->round->kind != MPX_FMT_FP32
                               ? c->round
                               : NULL;
    if (!is_max && mpx_acc_is_fp32(&c->acc)) { /* (gp8_group) */
        const gp8 w = {x->f, out[0].f, plane, rs, pool_avx2()};
        const long groups = (long)(planes / GP8);
        /* The groups on the pool's threads where the input is large (the
         * squeeze-excitation pools of EfficientNet-B0's early stages, 1.2 M
         * elements: the other thread had waited on this one). */
        mpx_k_parallel(groups, groups * GP8 * plane >= GP8_PAR_MIN ? kg_threads() : 1, gp8_group, (void *)&w);
        pc = groups * GP8;
    } else if (!is_max && c->acc.block <= 0) {
        /* Rounded accumulation, after every addition: 32 running sums side
         * by side, rounded together (one vectorised pass instead of 32
         * scalar ones: EfficientNet-B0's fp16-accumulated squeeze-excitation
         * pools were 15% of its run), each the sequence mpx_acc makes. */
        enum { GP = 32 };
        const mpx_format *f = c->acc.fmt;
        for (; pc < planes; pc += GP) {
            const int g = planes - pc < GP ? (int)(planes - pc) : GP;
            const float *xp = x->f + pc * plane;
            float sum[GP], t[GP];
            for (int q = 0; q < g; q++) sum[q] = mpx_round_value(f, 0.0f);
            for (int64_t k = 0; k < plane; k++) {
                for (int q = 0; q < g; q++) t[q] = xp[q * plane + k];
                mpx_round_sums(f, sum, t, (size_t)g);
            }
            for (int q = 0; q < g; q++) out[0].f[pc + q] = mean_of(rs, sum[q], plane);
        }
    }
    for (; pc < planes; pc++) {
        const float *xp = x->f + pc * plane;
        if (is_max) {
            float m = plane ? xp[0] : -FLT_MAX;
            for (int64_t k = 1; k < plane; k++)
                if (xp[k] > m) m = xp[k];
            out[0].f[pc] = m;
        } else {
            mpx_acc acc;
            mpx_acc_init(&acc, &c->acc, 0.0f);
            for (int64_t k = 0; k < plane; k++) mpx_acc_add(&acc, xp[k]);
            out[0].f[pc] = mean_of(rs, mpx_acc_result(&acc), plane);
        }
    }
    return MPX_OK;
}

/* GlobalLpPool: (sum |x|^p)^(1/p) over each plane, p an integer from 1
 * (ORT's pool with p: powf of the absolute values, summed, then 1/p). */
mpx_status mpx_k_global_lp_pool(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = pool_input(c, in, n_in, false, false, &x);
    if (st) return st;
    int64_t p = mpx_node_attr_int(c->node, "p", 2);
    if (p < 1 || p > 64) return mpx_kernel_error(c, MPX_E_INVALID, "p %lld is not an integer from 1 to 64", (long long)p);
    int64_t dims[MPX_MAX_RANK], plane = 1;
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        if (i >= 2) plane *= x->dims[i];
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, dims))) return st;
    for (int64_t pc = 0; pc < x->dims[0] * x->dims[1]; pc++) {
        mpx_acc a;
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t k = 0; k < plane; k++) mpx_acc_add(&a, powf(fabsf(x->f[pc * plane + k]), (float)p));
        out[0].f[pc] = powf(mpx_acc_result(&a), 1.0f / (float)p);
    }
    return MPX_OK;
}

/* GlobalAveragePool and GlobalMaxPool: one kernel, the kind read off the op. */
mpx_status mpx_k_global_pool(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                             mpx_value *out, int n_out) {
    return global_pool(c, in, n_in, out, n_out, c->node->op == MPX_OP_GlobalMaxPool);
}

/* ---- float64 (kern_f64.c's table) ------------------------------------------- */

/* MaxPool, AveragePool and LpPool of float64 values: the windows and taps
 * of the fp32 kernel's general loop (same order, same counts, same rules for
 * empty windows and NaN), summed in double. */
mpx_status mpx_k_pool_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_op op = c->node->op;
    const pool_kind kind = op == MPX_OP_MaxPool ? POOL_MAX : op == MPX_OP_LpPool ? POOL_LP : POOL_AVG;
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = pool_input(c, in, n_in, false, true, &x);
    if (st) return st;
    pool_geo g;
    win_tab tab;
    if ((st = pool_setup(c, x, kind, &g))) return st;
    const bool want_idx = kind == POOL_MAX && kn_wants_out(c, n_out, 1);
    const int nsp = g.w.nsp;
    const double pw = (double)g.pw;
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, g.dims))) return st;
    if (want_idx && (st = mpx_k_alloc(c, &out[1], MPX_DT_INT64, x->rank, g.dims))) {
        mpx_value_free(&out[0]);
        return st;
    }
    const int64_t planes = x->dims[0] * x->dims[1];
    if (g.out_plane == 0 || planes == 0) return MPX_OK;
    if ((st = win_tab_make(c, &g.w, &tab))) {
        win_tab_free(&tab);
        mpx_k_free_values(out, want_idx ? 2 : 1);
        return st;
    }
    for (int64_t pc = 0; pc < planes; pc++) {
        const int64_t xb = pc * g.in_plane;
        int64_t oc[KN_MAX_SP] = {0}, o = 0;
        do {
            win_pos p;
            int64_t t[KN_MAX_SP], best = -1;
            window_from(&tab, nsp, oc, &p, t);
            double s = kind == POOL_MAX ? -DBL_MAX : 0.0;
            if (p.n_in > 0) {
                do {
                    const int64_t off = tap_offset(&g, &p, t);
                    const double v = x->d[xb + off];
                    if (kind == POOL_MAX) {
                        if (best < 0 || v > s) s = v, best = off;
                    } else {
                        s += kind == POOL_LP ? (g.pw == 1 ? fabs(v) : g.pw == 2 ? v * v : pow(fabs(v), pw)) : v;
                    }
                } while (next_tap(nsp, &p, t));
            }
            const int64_t yi = pc * g.out_plane + o;
            if (kind == POOL_LP) s = p.n_in > 0 ? (g.pw == 1 ? s : g.pw == 2 ? sqrt(s) : pow(s, 1.0 / pw)) : 0.0;
            else if (kind == POOL_AVG) s = p.n_in > 0 ? s / (double)(g.include_pad ? p.n_pad : p.n_in) : 0.0;
            out[0].d[yi] = s;
            if (want_idx) out[1].i[yi] = max_index(&g, xb, best);
            o++;
        } while (next_pos(nsp, g.w.out, oc));
    }
    win_tab_free(&tab);
    return MPX_OK;
}

/* GlobalAveragePool, GlobalMaxPool and GlobalLpPool of float64 values: each
 * plane in flat order, in double (the max as the fp32 kernel's: the first
 * value, then any strictly greater one). */
mpx_status mpx_k_global_pool_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    const mpx_op op = c->node->op;
    const bool mx = op == MPX_OP_GlobalMaxPool, lp = op == MPX_OP_GlobalLpPool;
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = pool_input(c, in, n_in, false, true, &x);
    if (st) return st;
    const int64_t p = lp ? mpx_node_attr_int(c->node, "p", 2) : 2;
    if (p < 1 || p > 64) return mpx_kernel_error(c, MPX_E_INVALID, "p %lld is not an integer from 1 to 64", (long long)p);
    int64_t dims[MPX_MAX_RANK], plane = 1;
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        if (i >= 2) plane *= x->dims[i];
    }
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, dims))) return st;
    for (int64_t pc = 0; pc < x->dims[0] * x->dims[1]; pc++) {
        const double *xp = x->d + pc * plane;
        double s = mx ? (plane ? xp[0] : -DBL_MAX) : 0.0;
        for (int64_t k = mx ? 1 : 0; k < plane; k++) {
            if (mx) s = xp[k] > s ? xp[k] : s;
            else s += lp ? pow(fabs(xp[k]), (double)p) : xp[k];
        }
        out[0].d[pc] = mx ? s : lp ? pow(s, 1.0 / (double)p) : s / (double)plane;
    }
    return MPX_OK;
}

/* MaxUnpool: zeros of the output shape (kernel_shape, strides, pads, or the
 * output_shape input), with X's values put where I (MaxPool's Indices:
 * flat positions in the whole output tensor) says. Two values for one place:
 * the later one stays, as in ORT. */
mpx_status mpx_k_max_unpool(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                            int n_out) {
    const mpx_value *x, *idx = kn_opt(in, n_in, 1), *os = kn_opt(in, n_in, 2);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    /* float64 X (kernels_f64.def): the same walk moving doubles */
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", n_in > 0 && in[0] && in[0]->d, &x);
    if (st) return st;
    if (x->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; N x C x D1 x ... expected", kn_shape(x, s1));
    bool same = idx && idx->i && idx->rank == x->rank;
    for (int i = 0; same && i < x->rank; i++) same = idx->dims[i] == x->dims[i];
    if (!same)
        return mpx_kernel_error(c, MPX_E_SHAPE, "I %s must be integers of X's shape %s", idx ? kn_shape(idx, s1) : "(none)",
                                kn_shape(x, s2));
    /* The indices address the shape the attributes give (MaxPool's input);
     * a larger output_shape pads it at the end of each dim, the values
     * keeping their coordinates (ONNX's reference and ORT). */
    int64_t dflt[MPX_MAX_RANK], dims[MPX_MAX_RANK];
    kn_window w;
    if ((st = kn_window_attrs(c, x, NULL, &w))) return st;
    dflt[0] = x->dims[0], dflt[1] = x->dims[1];
    for (int i = 0; i < w.nsp; i++) dflt[2 + i] = mpx_window_unpool_len(&w, i);
    memcpy(dims, dflt, sizeof dims);
    if (os) {
        if (!os->i || os->rank != 1 || os->n != x->rank)
            return mpx_kernel_error(c, MPX_E_SHAPE, "output_shape %s must list %d dims", kn_shape(os, s1), x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (os->i[i] < dflt[i])
                return mpx_kernel_error(c, MPX_E_SHAPE, "output_shape[%d] = %lld is below the unpooled length %lld", i,
                                        (long long)os->i[i], (long long)dflt[i]);
            dims[i] = os->i[i];
        }
    }
    int64_t n = 1, nd = 1;
    for (int i = 0; i < x->rank; i++) {
        if (dflt[i] < 1 || dims[i] > MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_SHAPE, "output dim %d is %lld", i, (long long)dflt[i]);
        n *= dims[i], nd *= dflt[i];
        if (n > MPX_MAX_ELEMS) return mpx_kernel_error(c, MPX_E_LIMIT, "the output would hold over 2^31 values");
    }
    for (int64_t k = 0; k < idx->n; k++)
        if (idx->i[k] < 0 || idx->i[k] >= nd)
            return mpx_kernel_error(c, MPX_E_INVALID, "I[%lld] = %lld is outside the unpooled tensor's %lld values",
                                    (long long)k, (long long)idx->i[k], (long long)nd);
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, dims))) return st;
    if (out[0].d) memset(out[0].d, 0, (size_t)n * sizeof *out[0].d);
    else memset(out[0].f, 0, (size_t)n * sizeof *out[0].f);
    for (int64_t k = 0; k < x->n; k++) {
        int64_t r = idx->i[k], at = 0, stride = 1;
        for (int i = x->rank - 1; i >= 0; i--) {
            at += (r % dflt[i]) * stride;
            r /= dflt[i], stride *= dims[i];
        }
        if (out[0].d) out[0].d[at] = x->d[k];
        else out[0].f[at] = x->f[k];
    }
    return MPX_OK;
}

/* Col2Im: the blocks of an [N, C x prod(block), L] tensor added back into
 * [N, C, image...] (the inverse of im2col): block l at its window position
 * (strides, dilations, pads as Conv's). Each output value sums the block
 * values that land on it, in order of kernel offset (as ORT's Col2im), at
 * most prod(block) terms, in fp32 (in double for float64 values). */
mpx_status mpx_k_col2im(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *im = kn_opt(in, n_in, 1), *bl = kn_opt(in, n_in, 2);
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d; /* float64 (kernels_f64.def): the same sums in double */
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", f64, &x);
    if (st) return st;
    if (!im || !bl || !im->i || !bl->i || im->n != bl->n || im->n < 1 || im->n > KN_MAX_SP || x->rank != 3)
        return mpx_kernel_error(c, MPX_E_SHAPE, "input %s must be [N, C x block, L], image_shape and block_shape "
                                "integer lists of one length (1 to %d)", kn_shape(x, s1), KN_MAX_SP);
    int nsp = (int)im->n;
    int64_t K = 1, L = 1, img[KN_MAX_SP], blk[KN_MAX_SP], nb[KN_MAX_SP], s[KN_MAX_SP], d[KN_MAX_SP], p[2 * KN_MAX_SP];
    const int64_t *v;
    const char *names[3] = {"strides", "dilations", "pads"};
    int64_t *dst[3] = {s, d, p}, dflt[3] = {1, 1, 0};
    int want[3] = {nsp, nsp, 2 * nsp};
    for (int q = 0; q < 3; q++) {
        int n = mpx_node_attr_ints(c->node, names[q], &v);
        if (v && n != want[q]) return mpx_kernel_error(c, MPX_E_INVALID, "%s has %d values, %d expected", names[q], n, want[q]);
        for (int i = 0; i < want[q]; i++) dst[q][i] = v ? v[i] : dflt[q];
    }
    for (int i = 0; i < nsp; i++) {
        img[i] = im->i[i], blk[i] = bl->i[i];
        if (img[i] < 1 || blk[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0 || p[nsp + i] < 0 || img[i] > MPX_MAX_ELEMS ||
            blk[i] > MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_INVALID, "image_shape, block_shape, strides, dilations must be positive, "
                                    "pads not negative (dim %d)", i);
        int64_t span = img[i] + p[i] + p[nsp + i] - (d[i] * (blk[i] - 1) + 1);
        if (span < 0) return mpx_kernel_error(c, MPX_E_SHAPE, "dim %d: the block is larger than the padded image", i);
        nb[i] = span / s[i] + 1;
        K *= blk[i], L *= nb[i];
    }
    int64_t N = x->dims[0], C = x->dims[1] / K;
    if (x->dims[1] % K || x->dims[2] != L)
        return mpx_kernel_error(c, MPX_E_SHAPE, "input %s must be [N, C x %lld, %lld]", kn_shape(x, s1), (long long)K,
                                (long long)L);
    int64_t od[MPX_MAX_RANK] = {N, C}, plane = 1;
    for (int i = 0; i < nsp; i++) od[2 + i] = img[i], plane *= img[i];
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, 2 + nsp, od))) return st;
    if (f64) memset(out[0].d, 0, (size_t)out[0].n * sizeof *out[0].d);
    else memset(out[0].f, 0, (size_t)out[0].n * sizeof *out[0].f);
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t k = 0; k < K; k++) {
                const int64_t ro = ((n * C + ch) * K + k) * L, yo = (n * C + ch) * plane;
                int64_t kc[KN_MAX_SP], r = k;
                for (int i = nsp - 1; i >= 0; i--) kc[i] = r % blk[i], r /= blk[i];
                for (int64_t l = 0; l < L; l++) {
                    int64_t lc = l, at = 0, stride = 1;
                    bool inside = true;
                    for (int i = nsp - 1; i >= 0; i--) {
                        int64_t pos = (lc % nb[i]) * s[i] - p[i] + kc[i] * d[i];
                        lc /= nb[i];
                        inside = inside && pos >= 0 && pos < img[i];
                        at += pos * stride, stride *= img[i];
                    }
                    if (inside && f64) out[0].d[yo + at] += x->d[ro + l];
                    else if (inside) out[0].f[yo + at] += x->f[ro + l];
                }
            }
    return MPX_OK;
}
