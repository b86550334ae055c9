/* kern_nn.c - the convolutions: Conv and ConvTranspose (Gemm and MatMul are
 * kern_matmul.c's), and what the nn kernel files share (kern_nn.h: input
 * checks, window geometry).
 * Pooling is in kern_pool.c, normalisation and softmax in kern_norm.c, Resize
 * and Upsample in kern_resize.c.
 *
 * Summation order (DESIGN section 3; every sum goes through mpx_acc):
 *  - Conv: the terms of one output value are added input channel by input
 *    channel (within the group), then kernel tap in row-major order (for 2-D:
 *    kernel row, then kernel column; for 3-D: depth, row, column). Taps that
 *    fall into the padding are not terms. The bias is one more addition after
 *    the products (a partial block is flushed first), or with the accum
 *    rule's bias-first and a rounded format the running sum's start.
 *  - ConvTranspose: the same order over (input channel, kernel tap) pairs that
 *    reach the output value.
 *  - Gemm and MatMul: k = 0, 1, ..., K-1. Gemm then multiplies the sum by
 *    alpha (one fp32 product) and adds beta * C as one more addition.
 * Products are fp32 products of the inputs (exact for 16-bit and 8-bit
 * formats), except that the fast paths' fp32 sums fuse each product into
 * its block's sum (one rounding: kern_gemm.h); every build does the same
 * (FMA instruction or C99 fmaf), so results do not depend on the CPU.
 *
 * How the sums are kept, by accumulate format:
 *  - rounded (fp16, bf16, tf32 with block 0): the running sum is rounded
 *    after every addition (the exact sum rounded once), exactly as mpx_acc (bit for bit the same results
 *    on every path below).
 *  - fp32: blocks of MPX_ACC_FP32_BLOCK (64) consecutive terms in the order
 *    above are summed from 0, each block then added to the running sum, as
 *    mpx_acc; on the fast paths each term is a fused multiply-add into its
 *    block's sum. On the fast paths (below) a Conv tap that falls into the
 *    padding still takes its place in its block, adding nothing: a block is
 *    64 consecutive (input channel, kernel row, kernel column) indices, so
 *    output values near the border may group their terms differently from
 *    interior ones (the sums are otherwise the same; with at most 64 taps
 *    there is one block and no difference). On the general path the fp32
 *    sums are plain running sums per (input channel, tap) row update, with
 *    register tiles that sum about 64 terms at a time (conv_tile8).
 *
 * Paths (the fast ones in kern_gemm.c, kern_gemm.h says why they look as
 * they do):
 *  - Conv, 1-D or 2-D, fp32 or rounded per addition, finite weights: the
 *    packed GEMM core (B a shifted view of the zero-padded input, no im2col
 *    matrix), or the direct depthwise kernel when each group has one input
 *    and one output channel. 3-D: the same, one output depth at a time,
 *    its input channels the (channel, kernel depth) planes (conv3_fast). Zero-padding adds 0 * w = +-0 terms where the
 *    order above has none, which changes no running sum (it starts at +0 and
 *    x + +-0 = x) as long as w is finite; non-finite weights (an fp16 weight
 *    that overflowed) take the general path so that 0 * inf never makes NaN.
 *  - ConvTranspose with kernel = stride (no overlap), no padding and
 *    dilation 1: one GEMM with a row per (output channel, tap).
 *  - Gemm and MatMul: the GEMM core, fp32 or rounded per addition.
 *  - ConvTranspose with overlapping taps (kernel at least the stride, no
 *    dilation): stride-1 Convs on the core, one an output phase, over the
 *    input reversed (convt_phases); the same (input channel, tap) order,
 *    a tap of the phase that falls outside the input keeping its place in
 *    its fp32 block as a Conv's padding tap does.
 *  - Everything else (dilated ConvTranspose, or kernels shorter than the
 *    stride; blocked
 *    rounding, fp8 accumulation): the general path here, rows of mpx_acc (or
 *    plain float rows for fp32) updated in the order above. */
#include "kern_gemm.h"
#include "kern_nn.h"
#include "kern_rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers (kern_nn.h) ---------------------------------------------------- */

const char *kn_shape(const mpx_value *v, char *buf) {
    if (!v || v->n < 0) {
        snprintf(buf, 160, "(absent)");
        return buf;
    }
    if (v->rank == 0) {
        snprintf(buf, 160, "scalar");
        return buf;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->rank && len < 150; i++) {
        int k = snprintf(buf + len, 160 - len, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
        if (k < 0) break;
        len += (size_t)k;
    }
    return buf;
}

const mpx_value *kn_opt(const mpx_value *const *in, int n_in, int i) {
    if (!in || i < 0 || i >= n_in || !in[i] || in[i]->n < 0) return NULL;
    return in[i];
}

mpx_status kn_values_opt(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what, bool f64,
                         const mpx_value **v) {
    const mpx_value *p = kn_opt(in, n_in, i);
    *v = NULL;
    if (!p) return MPX_OK;
    if (f64 ? !p->d : !mpx_dtype_is_float(p->dtype) || !p->f)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "input %d (%s) is %s; this kernel takes %s values", i, what,
                                mpx_dtype_name(p->dtype), f64 ? "float64" : "floating-point");
    *v = p;
    return MPX_OK;
}

mpx_status kn_values_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what, bool f64,
                        const mpx_value **v) {
    mpx_status st = kn_values_opt(c, in, n_in, i, what, f64, v);
    if (st == MPX_OK && !*v)
        return mpx_kernel_error(c, MPX_E_INVALID, "input %d (%s) is missing", i, what);
    return st;
}

mpx_status kn_float_opt(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i,
                        const char *what, const mpx_value **v) {
    return kn_values_opt(c, in, n_in, i, what, false, v);
}

mpx_status kn_float_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i,
                       const char *what, const mpx_value **v) {
    return kn_values_in(c, in, n_in, i, what, false, v);
}

mpx_status kn_need_out(const mpx_kctx *c, int n_out, int need) {
    if (n_out < need)
        return mpx_kernel_error(c, MPX_E_INVALID, "%d output slot(s) given, %d needed", n_out,
                                need);
    return MPX_OK;
}

int kn_opset(const mpx_kctx *c) {
    /* A node without a known opset is read as the newest definitions. */
    return c->node && c->node->opset > 0 ? c->node->opset : 1000;
}

bool kn_wants_out(const mpx_kctx *c, int n_out, int i) {
    if (i >= n_out) return false;
    if (!c->node) return true;
    return i < c->node->n_outputs && c->node->outputs[i] != NULL;
}

int64_t kn_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t kn_ceil_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

mpx_status kn_scratch(const mpx_kctx *c, size_t n, size_t size, void **p) {
    *p = calloc(n ? n : 1, size);
    if (!*p)
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for %zu scratch elements", n);
    return MPX_OK;
}

/* ---- window attributes -------------------------------------------------------------- */

mpx_status kn_window_attrs(const mpx_kctx *c, const mpx_value *x, const int64_t *kernel,
                           kn_window *w) {
    char sb[160];
    mpx_error e;
    if (x->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X has shape %s; N x C x D1 x ... (rank 3 or more) expected",
                                kn_shape(x, sb));
    if (mpx_window_read(c->node, x->rank, x->dims + 2, kernel, w, &e)) return mpx_kernel_error(c, e.status, "%s", e.msg);
    return MPX_OK;
}

mpx_status kn_window_out(const mpx_kctx *c, kn_window *w, bool ceil_mode) {
    mpx_error e;
    if (mpx_window_out(w, ceil_mode, &e)) return mpx_kernel_error(c, e.status, "%s", e.msg);
    return MPX_OK;
}

mpx_status kn_window_transpose_out(const mpx_kctx *c, kn_window *w) {
    mpx_error e;
    if (mpx_window_transpose_out(c->node, w, &e)) return mpx_kernel_error(c, e.status, "%s", e.msg);
    return MPX_OK;
}

/* ---- Conv and ConvTranspose ---------------------------------------------------------- */

/* The geometry of one convolution, arranged as rows: every spatial dim but the
 * last is "outer" (one output row per outer position, one kernel row per outer
 * tap); the last dim is the row. A 1x1 convolution with unit strides and no
 * padding is one row over the whole plane. */
typedef struct conv_job {
    bool transpose;
    const float *x, *w, *b;
    float *y;
    int64_t N, C, M, G, cig, mg;
    int64_t in_plane, out_plane, k_plane;
    int no;                                         /* outer dims */
    int64_t in_o[KN_MAX_SP], out_o[KN_MAX_SP], k_o[KN_MAX_SP], s_o[KN_MAX_SP],
        d_o[KN_MAX_SP], pb_o[KN_MAX_SP];
    int64_t IW, OW, KW, sw, dw, pw;                 /* the row dim */
    int64_t rows, taps;                             /* outer output positions, outer taps */
} conv_job;

static void conv_geometry(conv_job *j, const kn_window *win, const int64_t *out) {
    int nsp = win->nsp;
    j->in_plane = j->out_plane = j->k_plane = 1;
    bool pointwise = !j->transpose;
    for (int i = 0; i < nsp; i++) {
        j->in_plane *= win->in[i];
        j->out_plane *= out[i];
        j->k_plane *= win->k[i];
        if (win->k[i] != 1 || win->s[i] != 1 || win->pb[i] != 0 || win->pe[i] != 0)
            pointwise = false;
    }
    if (pointwise) {
        j->no = 0;
        j->IW = j->in_plane;
        j->OW = j->out_plane;
        j->KW = 1;
        j->sw = j->dw = 1;
        j->pw = 0;
    } else {
        j->no = nsp - 1;
        for (int i = 0; i < j->no; i++) {
            j->in_o[i] = win->in[i];
            j->out_o[i] = out[i];
            j->k_o[i] = win->k[i];
            j->s_o[i] = win->s[i];
            j->d_o[i] = win->d[i];
            j->pb_o[i] = win->pb[i];
        }
        j->IW = win->in[nsp - 1];
        j->OW = out[nsp - 1];
        j->KW = win->k[nsp - 1];
        j->sw = win->s[nsp - 1];
        j->dw = win->d[nsp - 1];
        j->pw = win->pb[nsp - 1];
    }
    j->rows = j->OW ? j->out_plane / j->OW : 0;
    j->taps = j->k_plane / j->KW;
}

/* For output row r: the input row (flat over the outer dims) each outer tap
 * reads, or -1 where the tap falls into the padding (or, transposed, between
 * input positions). tc holds the taps' outer coordinates. */
static void conv_tap_rows(const conv_job *j, int64_t r, const int64_t *tc, int64_t *tap_in) {
    int64_t oc[KN_MAX_SP];
    for (int i = j->no - 1; i >= 0; i--) {
        oc[i] = r % j->out_o[i];
        r /= j->out_o[i];
    }
    for (int64_t t = 0; t < j->taps; t++) {
        int64_t flat = 0;
        for (int i = 0; i < j->no && flat >= 0; i++) {
            int64_t kc = tc[t * j->no + i], ic;
            if (!j->transpose) {
                ic = oc[i] * j->s_o[i] - j->pb_o[i] + kc * j->d_o[i];
            } else {
                int64_t num = oc[i] + j->pb_o[i] - kc * j->d_o[i];
                ic = (num >= 0 && num % j->s_o[i] == 0) ? num / j->s_o[i] : -1;
            }
            flat = (ic >= 0 && ic < j->in_o[i]) ? flat * j->in_o[i] + ic : -1;
        }
        tap_in[t] = flat;
    }
}

/* Which i of a row update (y index i * ys + yoff, x index i * xs + xoff)
 * exist for each kernel column; computed once per convolution. */
typedef struct kw_span {
    int64_t lo, hi, xs, xoff, ys, yoff;
} kw_span;

static void conv_spans(const conv_job *j, kw_span *sp) {
    for (int64_t kw = 0; kw < j->KW; kw++) {
        kw_span *p = &sp[kw];
        int64_t off = kw * j->dw - j->pw;
        if (!j->transpose) { /* y[ow] += w * x[ow * sw + off] */
            p->xs = j->sw, p->xoff = off, p->ys = 1, p->yoff = 0;
            p->lo = kn_ceil_div(-off, j->sw);
            p->hi = kn_floor_div(j->IW - 1 - off, j->sw) + 1;
            if (p->hi > j->OW) p->hi = j->OW;
        } else { /* y[iw * sw + off] += w * x[iw] */
            p->xs = 1, p->xoff = 0, p->ys = j->sw, p->yoff = off;
            p->lo = kn_ceil_div(-off, j->sw);
            p->hi = kn_floor_div(j->OW - 1 - off, j->sw) + 1;
            if (p->hi > j->IW) p->hi = j->IW;
        }
        if (p->lo < 0) p->lo = 0;
    }
}

/* What one convolution's loops share. */
typedef struct conv_ctx {
    const conv_job *j;
    bool fp32;
    int64_t ch;                 /* output chunk length */
    const int64_t *tap_in;      /* input row per outer tap, for the current output row */
    const kw_span *sp;
    const float *wp;            /* Conv weights packed per 4 output channels (fp32 tiles) */
    mpx_acc *acc;               /* CONV_MB x ch accumulators (rounded path) */
} conv_ctx;

/* Row updates for output channels m0 .. m0 + nm - 1 of group g, output
 * positions [o_lo, o_hi) of row pointers yrow (chunk start c0 for the
 * accumulators), every input channel and tap in order. */
static void conv_rows(const conv_ctx *k, int64_t n, int64_t g, int64_t m0, int nm, float *const *yrow,
                      int64_t c0, int64_t o_lo, int64_t o_hi) {
    const conv_job *j = k->j;
    for (int64_t ci = 0; ci < j->cig; ci++) {
        const float *xc = j->x + (n * j->C + g * j->cig + ci) * j->in_plane;
        for (int64_t t = 0; t < j->taps; t++) {
            if (k->tap_in[t] < 0) continue;
            const float *xrow = xc + k->tap_in[t] * j->IW;
            for (int64_t kw = 0; kw < j->KW; kw++) {
                const kw_span *p = &k->sp[kw];
                int64_t i0 = p->lo, i1 = p->hi;
                if (!j->transpose) { /* i is the output index */
                    if (i0 < o_lo) i0 = o_lo;
                    if (i1 > o_hi) i1 = o_hi;
                }
                if (i1 <= i0) continue;
                float wv[CONV_MB];
                for (int q = 0; q < nm; q++) {
                    int64_t wi = j->transpose ? (g * j->cig + ci) * j->mg + m0 + q
                                              : (g * j->mg + m0 + q) * j->cig + ci;
                    wv[q] = j->w[wi * j->k_plane + t * j->KW + kw];
                }
                const float *xp = xrow + i0 * p->xs + p->xoff;
                int64_t yo = i0 * p->ys + p->yoff;
                if (k->fp32) {
                    float *yp[CONV_MB] = {NULL};
                    for (int q = 0; q < nm; q++) yp[q] = yrow[q] + yo;
                    axpy_rows(nm, yp, p->ys, wv, xp, p->xs, i1 - i0);
                } else {
                    mpx_acc *ap[CONV_MB];
                    for (int q = 0; q < nm; q++) ap[q] = k->acc + q * k->ch + (yo - c0);
                    acc_rows(nm, ap, p->ys, wv, xp, p->xs, i1 - i0);
                }
            }
        }
    }
}

/* fp32 Conv, 4 output channels x 8 output positions starting at o, every tap
 * inside the input: 32 sums stay in registers through a block of input
 * channels (about MPX_ACC_FP32_BLOCK terms, as mpx_accum's blocked fp32
 * order), then go into the output, which holds the running sum. wp: the 4
 * channels' weights as [ci][tap][kw][4]. */
static void conv_tile8(const conv_ctx *k, const float *xg, const float *wp, int64_t o,
                       float *const *yrow) {
    const conv_job *j = k->j;
    const int64_t sw = j->sw;
    const int64_t per_ci = j->taps * j->KW;
    const int64_t cb = per_ci >= MPX_ACC_FP32_BLOCK ? 1 : MPX_ACC_FP32_BLOCK / per_ci;
    for (int64_t c0 = 0; c0 < j->cig; c0 += cb) {
        const int64_t c1 = c0 + cb < j->cig ? c0 + cb : j->cig;
        v4f a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0}, a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
        for (int64_t ci = c0; ci < c1; ci++) {
            const float *xc = xg + ci * j->in_plane;
            for (int64_t t = 0; t < j->taps; t++) {
                if (k->tap_in[t] < 0) continue;
                const float *xr = xc + k->tap_in[t] * j->IW + o * sw;
                const float *wt = wp + (ci * j->taps + t) * j->KW * 4;
                for (int64_t kw = 0; kw < j->KW; kw++) {
                    const float *xp = xr + k->sp[kw].xoff, *wk = wt + kw * 4;
                    const v4f x0 = sw == 1 ? ld4(xp) : ld4s(xp, sw);
                    const v4f x1 = sw == 1 ? ld4(xp + 4) : ld4s(xp + 4 * sw, sw);
                    const v4f b0 = {wk[0], wk[0], wk[0], wk[0]}, b1 = {wk[1], wk[1], wk[1], wk[1]},
                              b2 = {wk[2], wk[2], wk[2], wk[2]}, b3 = {wk[3], wk[3], wk[3], wk[3]};
                    a00 += b0 * x0;
                    a01 += b0 * x1;
                    a10 += b1 * x0;
                    a11 += b1 * x1;
                    a20 += b2 * x0;
                    a21 += b2 * x1;
                    a30 += b3 * x0;
                    a31 += b3 * x1;
                }
            }
        }
        if (c0 > 0) {
            a00 += ld4(yrow[0] + o), a01 += ld4(yrow[0] + o + 4);
            a10 += ld4(yrow[1] + o), a11 += ld4(yrow[1] + o + 4);
            a20 += ld4(yrow[2] + o), a21 += ld4(yrow[2] + o + 4);
            a30 += ld4(yrow[3] + o), a31 += ld4(yrow[3] + o + 4);
        }
        st4(yrow[0] + o, a00);
        st4(yrow[0] + o + 4, a01);
        st4(yrow[1] + o, a10);
        st4(yrow[1] + o + 4, a11);
        st4(yrow[2] + o, a20);
        st4(yrow[2] + o + 4, a21);
        st4(yrow[3] + o, a30);
        st4(yrow[3] + o + 4, a31);
    }
}

/* The accum rule's bias-first (MPX_ACC_BIAS_FIRST), Conv only: with a
 * rounded accumulate format the running sum starts at the bias, as PyTorch's CPU
 * loop `c += a * b` over a result initialised with the bias does. Only the
 * general path (conv_run) does it; with fp32 sums the flag is ignored (the
 * rule refuses it: colour/rules.c). */
static bool conv_bias_first(const mpx_kctx *c) {
    return (c->acc.flags & MPX_ACC_BIAS_FIRST) && !mpx_acc_is_fp32(&c->acc);
}

/* The general path's tables: the outer taps' coordinates (tc, row-major),
 * room for each output row's input rows (tap_in) and the kernel columns'
 * spans (sp); freed by the caller, also on error. */
static mpx_status conv_tables(const mpx_kctx *c, const conv_job *j, int64_t **tap_in, int64_t **tc, kw_span **sp) {
    mpx_status st = kn_scratch(c, (size_t)j->taps, sizeof **tap_in, (void **)tap_in);
    if (!st) st = kn_scratch(c, (size_t)(j->taps * (j->no ? j->no : 1)), sizeof **tc, (void **)tc);
    if (!st) st = kn_scratch(c, (size_t)j->KW, sizeof **sp, (void **)sp);
    if (st) return st;
    for (int64_t t = 0; t < j->taps; t++) {
        int64_t q = t;
        for (int i = j->no - 1; i >= 0; i--) {
            (*tc)[t * j->no + i] = q % j->k_o[i];
            q /= j->k_o[i];
        }
    }
    conv_spans(j, *sp);
    return MPX_OK;
}

static mpx_status conv_run(const mpx_kctx *c, const conv_job *j) {
    if (j->N == 0 || j->M == 0 || j->out_plane == 0) return MPX_OK;
    const bool bias_first = conv_bias_first(c) && !j->transpose;
    conv_ctx k = {.j = j, .fp32 = mpx_acc_is_fp32(&c->acc)};
    /* Transposed rows scatter with a stride, so they are not chunked. */
    k.ch = (j->transpose || j->OW < CONV_CHUNK) ? j->OW : CONV_CHUNK;
    int64_t *tap_in = NULL, *tc = NULL;
    kw_span *sp = NULL;
    float *wp = NULL;
    const bool tiles = k.fp32 && !j->transpose && j->mg >= CONV_MB;
    const int64_t nblk = j->mg / CONV_MB;
    mpx_status st = conv_tables(c, j, &tap_in, &tc, &sp);
    if (!st && !k.fp32) st = kn_scratch(c, (size_t)(CONV_MB * k.ch), sizeof *k.acc, (void **)&k.acc);
    if (!st && tiles)
        st = kn_scratch(c, (size_t)(j->G * nblk * CONV_MB * j->cig * j->k_plane), sizeof *wp, (void **)&wp);
    if (st) goto done;
    k.sp = sp;
    k.tap_in = tap_in;
    k.wp = wp;
    int64_t in_lo = 0, in_hi = j->OW; /* output positions every kernel column reaches */
    for (int64_t kw = 0; kw < j->KW; kw++) {
        if (sp[kw].lo > in_lo) in_lo = sp[kw].lo;
        if (sp[kw].hi < in_hi) in_hi = sp[kw].hi;
    }
    if (tiles) /* [g][block][ci][tap][kw][4] */
        for (int64_t g = 0; g < j->G; g++)
            for (int64_t b = 0; b < nblk; b++)
                for (int64_t q = 0; q < CONV_MB; q++)
                    for (int64_t ci = 0; ci < j->cig; ci++)
                        for (int64_t tk = 0; tk < j->k_plane; tk++) {
                            int64_t m = g * j->mg + b * CONV_MB + q;
                            wp[(((g * nblk + b) * j->cig + ci) * j->k_plane + tk) * CONV_MB + q] =
                                j->w[(m * j->cig + ci) * j->k_plane + tk];
                        }
    for (int64_t n = 0; n < j->N; n++)
        for (int64_t g = 0; g < j->G; g++)
            for (int64_t r = 0; r < j->rows; r++) {
                if (mpx_k_cancelled()) { /* (a row of outputs between two checks) */
                    st = mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
                    goto done;
                }
                conv_tap_rows(j, r, tc, tap_in);
                for (int64_t c0 = 0; c0 < j->OW; c0 += k.ch) {
                    int64_t c1 = c0 + k.ch < j->OW ? c0 + k.ch : j->OW;
                    for (int64_t m0 = 0; m0 < j->mg; m0 += CONV_MB) {
                        int nm = (int)(j->mg - m0 < CONV_MB ? j->mg - m0 : CONV_MB);
                        float *yrow[CONV_MB];
                        for (int q = 0; q < nm; q++)
                            yrow[q] = j->y + (n * j->M + g * j->mg + m0 + q) * j->out_plane + r * j->OW;
                        if (!k.fp32)
                            for (int q = 0; q < nm; q++) {
                                const float b0 = bias_first && j->b ? j->b[g * j->mg + m0 + q] : 0.0f;
                                for (int64_t o = 0; o < k.ch; o++) mpx_acc_init(&k.acc[q * k.ch + o], &c->acc, b0);
                            }
                        if (tiles && nm == CONV_MB) {
                            /* Interior tiles in registers, the edges and the rest by rows. */
                            int64_t a = in_lo > c0 ? in_lo : c0, b = in_hi < c1 ? in_hi : c1;
                            if (a > c1) a = c1;
                            int64_t o = a;
                            const float *xg = j->x + (n * j->C + g * j->cig) * j->in_plane;
                            const float *wb = wp + (g * nblk + m0 / CONV_MB) * j->cig * j->k_plane * CONV_MB;
                            for (; o + 8 <= b; o += 8) conv_tile8(&k, xg, wb, o, yrow);
                            if (a > c0) conv_rows(&k, n, g, m0, nm, yrow, c0, c0, a);
                            conv_rows(&k, n, g, m0, nm, yrow, c0, o > c0 ? o : c0, c1);
                        } else {
                            conv_rows(&k, n, g, m0, nm, yrow, c0, c0, c1);
                        }
                        for (int q = 0; q < nm; q++) {
                            const float *bp = j->b ? &j->b[g * j->mg + m0 + q] : NULL;
                            for (int64_t o = c0; o < c1; o++) {
                                if (k.fp32) {
                                    if (bp) yrow[q][o] += *bp;
                                    continue;
                                }
                                mpx_acc *ac = &k.acc[q * k.ch + (o - c0)];
                                float s = mpx_acc_result(ac);
                                if (bp && !bias_first) {
                                    mpx_acc_add(ac, *bp);
                                    s = mpx_acc_result(ac);
                                }
                                yrow[q][o] = s;
                            }
                        }
                    }
                }
            }
done:
    free(tap_in);
    free(tc);
    free(sp);
    free(k.acc);
    free(wp);
    return st;
}

/* ---- the fast paths: the GEMM core and the depthwise kernel (kern_gemm.h) ---------- */

/* A 1-D or 2-D convolution seen as 2-D (a 1-D one has one row). */
typedef struct conv2 {
    int64_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} conv2;

static conv2 conv2_of(const kn_window *w, const int64_t *out) {
    conv2 v = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    int last = w->nsp - 1;
    if (w->nsp == 2) {
        v.H = w->in[0], v.OH = out[0], v.KH = w->k[0], v.sh = w->s[0], v.dh = w->d[0];
        v.pt = w->pb[0], v.pb = w->pe[0];
    }
    v.W = w->in[last], v.OW = out[last], v.KW = w->k[last], v.sw = w->s[last], v.dw = w->d[last];
    v.pl = w->pb[last], v.pr = w->pe[last];
    return v;
}

/* Conv through the GEMM core, or for depthwise convolutions the depthwise
 * kernel. B is the input seen through kg_conv (kern_gemm.h): outputs on a
 * grid Wq = ceil(padded width / sw) columns wide, of which the first OW are
 * kept, and tap (kh, kw) a fixed shift of a zero-padded, stride-phase-split
 * copy of the input rows (made per work item, not one im2col matrix). A
 * kernel one column wide over an unpadded input with unit strides (1x1
 * convolutions) reads the input itself, the grid being the output.
 * *declined: the core found non-finite weights; nothing was written and the
 * caller takes the general path. */
static mpx_status conv_fast(const mpx_kctx *c, const conv_job *j, const kn_window *win, int mode,
                            bool *declined) {
    mpx_tensor *w_own = mpx_k_value_owner(c, 1, j->w);
    const conv2 v = conv2_of(win, win->out);
    const bool dwise = j->cig == 1 && j->mg == 1;
    const bool direct = !dwise && v.KW == 1 && v.sh == 1 && v.sw == 1 && v.pt == 0 && v.pl == 0 &&
                        v.pb == 0 && v.pr == 0;
    int64_t Wq = direct ? v.W : kn_ceil_div(v.W + v.pl + v.pr, v.sw);
    /* With unit column stride a grid row needs its left padding and the
     * input row; the taps that reach past it read the next row's left
     * padding, zeros as the right padding is (reads past the last row
     * land in the row kept below it for the dropped columns). Fewer
     * columns computed and dropped: a 3x3 convolution on a 14 x 14 map had
     * 16 for 14 outputs, now 15; on 7 x 7, 9 for 7, now 8. */
    const int64_t pad_max = v.pl > v.pr ? v.pl : v.pr;
    if (!direct && v.sw == 1 && v.W + pad_max >= v.OW) Wq = v.W + pad_max;
    const int64_t K = j->cig * j->k_plane;
    int64_t *boff = NULL, *crow = NULL;
    mpx_status st = MPX_OK;
    if (!dwise) st = kn_scratch(c, (size_t)j->mg, sizeof *crow, (void **)&crow);
    if (!st && direct) st = kn_scratch(c, (size_t)K, sizeof *boff, (void **)&boff);
    if (st) goto done;
    for (int64_t m = 0; crow && m < j->mg; m++) crow[m] = m * j->out_plane;
    for (int64_t ci = 0; boff && ci < j->cig; ci++)
        for (int64_t kh = 0; kh < v.KH; kh++) boff[ci * v.KH + kh] = ci * j->in_plane + kh * v.dh * v.W;
    for (int64_t n = 0; n < j->N; n++) {
        const float *x = j->x + n * j->C * j->in_plane;
        float *y = j->y + n * j->M * j->out_plane;
        kg_conv cv = {.x = x, .H = v.H, .W = v.W, .KH = v.KH, .KW = v.KW, .sh = v.sh, .sw = v.sw,
                      .dh = v.dh, .dw = v.dw, .pt = v.pt, .pl = v.pl, .OH = v.OH, .Wq = Wq,
                      .cig = j->cig};
        bool ok;
        if (dwise) {
            kg_dw d = {.C = j->C, .OW = v.OW, .conv = &cv, .w = j->w, .bias = j->b, .y = y,
                       .yc = j->out_plane, .mode = (kg_mode)mode, .f16 = mpx_k_f16_operands(c)};
            ok = kg_dw_run(&d);
        } else {
            kg_result r;
            kg_gemm g = {.M = j->mg, .N = v.OH * Wq, .K = K, .G = j->G,
                         .a = j->w, .ams = K, .aks = 1, .ga = j->mg * K,
                         .b = x, .boff = boff, .gb = j->cig * j->in_plane, .conv = direct ? NULL : &cv,
                         .c = y, .crow = crow, .gc = j->mg * j->out_plane,
                         .gw = Wq, .gvalid = v.OW, .rs = v.OW, .cs = 1,
                         .bias = j->b, .gbias = j->mg, .mode = (kg_mode)mode, .f16 = mpx_k_f16_operands(c),
                         .finite_a = true,
                         .a_owner = w_own, .a_fmt = mpx_k_in_round(c, 1)};
            r = kg_gemm_run(&g);
            if (r == KG_NONFINITE) { /* found on the first image: nothing written */
                *declined = true;
                goto done;
            }
            ok = r == KG_DONE;
        }
        if (!ok) {
            st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for the convolution's buffers");
            goto done;
        }
    }
done:
    free(crow);
    free(boff);
    return st;
}

/* A 3-D Conv as 2-D ones through conv_fast, one an output depth: its input
 * channels are the (input channel, kernel depth) pairs, each the input
 * plane at depth od * sd - pd + kd * dd (a zero plane in the padding), so
 * its terms are (input channel, kernel depth, row, column) in row-major
 * order - kern_nn.c's order - over the weights as they lie ([M][cig][KD]
 * [KH][KW] is [M][cig * KD][KH][KW]), a tap in the depth padding keeping
 * its place in its block as one in the rows' or columns' does. The output
 * plane is written where its depth lies (out_plane is the channel
 * stride). Why: the general loop ran a video model's 3x3x3 convolutions at
 * 1-4 G multiply-adds/s against 60 for the 2-D ones on the core (a
 * 3x7x7 stem on 3 x 8 x 112 x 112: 97 ms, ONNX Runtime's 16). */
static mpx_status conv3_fast(const mpx_kctx *c, const conv_job *j, const kn_window *win, int mode,
                             bool *declined) {
    const int64_t D = win->in[0], H = win->in[1], W = win->in[2], OD = win->out[0], KD = win->k[0];
    const int64_t sd = win->s[0], dd = win->d[0], pd = win->pb[0], HW = H * W;
    const int64_t oplane = win->out[1] * win->out[2];
    kn_window w2 = *win;
    w2.nsp = 2;
    for (int i = 0; i < 2; i++) {
        w2.in[i] = win->in[i + 1], w2.out[i] = win->out[i + 1], w2.k[i] = win->k[i + 1];
        w2.s[i] = win->s[i + 1], w2.d[i] = win->d[i + 1], w2.pb[i] = win->pb[i + 1], w2.pe[i] = win->pe[i + 1];
    }
    conv_job j2 = *j;
    j2.N = 1, j2.C = j->C * KD, j2.cig = j->cig * KD;
    j2.in_plane = HW, j2.k_plane = win->k[1] * win->k[2];
    j2.out_plane = OD * oplane; /* the output's channel stride */
    float *xg = NULL;
    mpx_status st = kn_scratch(c, (size_t)(j2.C * HW), sizeof *xg, (void **)&xg);
    for (int64_t n = 0; !st && n < j->N; n++)
        for (int64_t od = 0; !st && od < OD; od++) {
            const float *x = j->x + n * j->C * j->in_plane;
            for (int64_t ci = 0; ci < j->C; ci++)
                for (int64_t kd = 0; kd < KD; kd++) {
                    const int64_t id = od * sd - pd + kd * dd;
                    float *p = xg + (ci * KD + kd) * HW;
                    if (id >= 0 && id < D) memcpy(p, x + ci * j->in_plane + id * HW, (size_t)HW * sizeof *p);
                    else memset(p, 0, (size_t)HW * sizeof *p);
                }
            j2.x = xg;
            j2.y = j->y + n * j->M * j->out_plane + od * oplane;
            st = conv_fast(c, &j2, &w2, mode, declined);
            if (!st && *declined) break; /* the weights' check, at the first call: nothing written */
            if (!st && mpx_k_cancelled()) st = mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
        }
    free(xg);
    return st;
}

/* ConvTranspose whose kernel equals its stride (no overlap, no padding, no
 * dilation): every output value gets one tap, from one input position, per
 * input channel, so it is one GEMM with a row per (output channel, tap):
 * row m * taps + t, column q = input position, written to output position
 * (ih sh + th, iw sw + tw). The terms of an output are the input channels in
 * order, as the general path adds them. */
static bool convt_fast_ok(const conv_job *j, const kn_window *win, const int64_t *out) {
    if (win->nsp > 2) return false;
    for (int i = 0; i < win->nsp; i++)
        if (win->k[i] != win->s[i] || win->d[i] != 1 || win->pb[i] != 0 || win->pe[i] != 0 ||
            out[i] != win->s[i] * win->in[i])
            return false;
    return j->N > 0;
}

static mpx_status convt_fast(const mpx_kctx *c, const conv_job *j, const kn_window *win,
                             const int64_t *out, int mode) {
    const conv2 v = conv2_of(win, out);
    const int64_t taps = j->k_plane, Mr = j->mg * taps;
    int64_t *boff = NULL, *crow = NULL;
    float *bx = NULL;
    mpx_status st = kn_scratch(c, (size_t)j->cig, sizeof *boff, (void **)&boff);
    if (!st) st = kn_scratch(c, (size_t)Mr, sizeof *crow, (void **)&crow);
    if (!st && j->b) st = kn_scratch(c, (size_t)(j->G * Mr), sizeof *bx, (void **)&bx);
    if (st) goto done;
    for (int64_t ci = 0; ci < j->cig; ci++) boff[ci] = ci * j->in_plane;
    for (int64_t m = 0; m < j->mg; m++)
        for (int64_t t = 0; t < taps; t++)
            crow[m * taps + t] = m * j->out_plane + (t / v.KW) * v.OW + t % v.KW;
    if (bx)
        for (int64_t g = 0; g < j->G; g++)
            for (int64_t r = 0; r < Mr; r++) bx[g * Mr + r] = j->b[g * j->mg + r / taps];
    for (int64_t n = 0; n < j->N; n++) {
        kg_gemm g = {.M = Mr, .N = j->in_plane, .K = j->cig, .G = j->G,
                     .a = j->w, .ams = 1, .aks = j->mg * taps, .ga = j->cig * j->mg * taps,
                     .b = j->x + n * j->C * j->in_plane, .boff = boff, .gb = j->cig * j->in_plane,
                     .c = j->y + n * j->M * j->out_plane, .crow = crow, .gc = j->mg * j->out_plane,
                     .gw = v.W, .gvalid = v.W, .rs = v.sh * v.OW, .cs = v.sw,
                     .bias = bx, .gbias = Mr, .mode = (kg_mode)mode, .f16 = mpx_k_f16_operands(c)};
        if (kg_gemm_run(&g) != KG_DONE) {
            st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for the convolution's buffers");
            goto done;
        }
    }
done:
    free(bx);
    free(crow);
    free(boff);
    return st;
}

/* Checks shared by Conv and ConvTranspose: ranks, group, bias. */
static mpx_status conv_inputs(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                              const mpx_value **x, const mpx_value **w, const mpx_value **b,
                              int64_t *group) {
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "W", f64, w);
    if (!st) st = kn_values_opt(c, in, n_in, 2, "B", f64, b);
    if (st) return st;
    if ((*x)->rank < 3)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X has shape %s; N x C x D1 x ... (rank 3 or more) expected",
                                kn_shape(*x, s1));
    if ((*w)->rank != (*x)->rank)
        return mpx_kernel_error(c, MPX_E_SHAPE, "weights W of shape %s do not match input X of shape %s",
                                kn_shape(*w, s1), kn_shape(*x, s2));
    *group = mpx_node_attr_int(c->node, "group", 1);
    if (*group < 1 || *group > KN_ATTR_MAX)
        return mpx_kernel_error(c, MPX_E_INVALID, "group %lld is not a positive count",
                                (long long)*group);
    return MPX_OK;
}

static mpx_status check_bias(const mpx_kctx *c, const mpx_value *b, int64_t m) {
    char s1[160];
    if (b && (b->rank != 1 || b->dims[0] != m))
        return mpx_kernel_error(c, MPX_E_SHAPE, "bias B of shape %s does not match %lld output channels",
                                kn_shape(b, s1), (long long)m);
    return MPX_OK;
}

/* Conv's checks, output dims and geometry (j without its value pointers),
 * for the fp32 and the float64 kernel. */
static mpx_status conv_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                             const mpx_value **xp, const mpx_value **wp, const mpx_value **bp, kn_window *win,
                             int64_t *dims, conv_job *j) {
    const mpx_value *x, *w, *b;
    int64_t group = 1;
    char s1[160], s2[160];
    mpx_status st = conv_inputs(c, in, n_in, n_out, f64, &x, &w, &b, &group);
    if (st) return st;
    int64_t C = x->dims[1], M = w->dims[0], cig = w->dims[1];
    if (cig * group != C)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X of shape %s has %lld channels but weights W of shape %s "
                                "with group %lld expect %lld",
                                kn_shape(x, s1), (long long)C, kn_shape(w, s2), (long long)group,
                                (long long)(cig * group));
    if (M % group)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "weights W of shape %s have %lld output channels, which group %lld "
                                "does not divide",
                                kn_shape(w, s1), (long long)M, (long long)group);
    if ((st = check_bias(c, b, M))) return st;
    if ((st = kn_window_attrs(c, x, w->dims + 2, win))) return st;
    if ((st = kn_window_out(c, win, false))) return st;
    dims[0] = x->dims[0], dims[1] = M;
    for (int i = 0; i < win->nsp; i++) dims[2 + i] = win->out[i];
    *j = (conv_job){.transpose = false, .N = x->dims[0], .C = C, .M = M, .G = group, .cig = cig, .mg = M / group};
    conv_geometry(j, win, win->out);
    *xp = x, *wp = w, *bp = b;
    return MPX_OK;
}

mpx_status mpx_k_conv(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    const mpx_value *x, *w, *b;
    kn_window win;
    int64_t dims[MPX_MAX_RANK];
    conv_job j;
    mpx_status st = conv_setup(c, in, n_in, n_out, false, &x, &w, &b, &win, dims, &j);
    if (st) return st;
    /* Uncleared: the fast path writes every output (its first K block
     * stores without reading); the general loop adds into zeros. */
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, dims))) return st;
    j.x = x->f, j.w = w->f, j.b = b ? b->f : NULL, j.y = out[0].f;
    const int mode = conv_bias_first(c) ? -1 : kg_mode_of(&c->acc);
    /* Non-finite weights take the general path (kern_gemm.h): the GEMM core
     * checks them while it packs them; the depthwise kernel's are few.
     * Weights handed unrounded (mpx_kctx.in_round) are rounded by the core
     * as it packs them; the depthwise kernel and the general loop read them
     * where they lie, so they take the rounded values first. */
    bool declined = !(mode >= 0 && win.nsp <= 3 && j.N > 0 && j.M > 0 && j.cig > 0 && j.out_plane > 0);
    const bool dwise = j.cig == 1 && j.mg == 1;
    mpx_kctx lc;
    mpx_value lw;
    float *w_held = NULL;
    if (declined || dwise) st = mpx_k_in_rounded(&c, &lc, 1, &w, &lw, &w_held);
    j.w = w->f;
    if (!st && !declined) declined = dwise && !kg_all_finite(j.w, w->n);
    if (!st && !declined) st = win.nsp == 3 ? conv3_fast(c, &j, &win, mode, &declined) : conv_fast(c, &j, &win, mode, &declined);
    if (!st && declined && mpx_k_in_round(c, 1)) { /* (the core found them non-finite once rounded) */
        st = mpx_k_in_rounded(&c, &lc, 1, &w, &lw, &w_held);
        j.w = w->f;
    }
    if (!st && declined) {
        if (out[0].n > 0) memset(out[0].f, 0, (size_t)out[0].n * sizeof *out[0].f);
        st = conv_run(c, &j);
    }
    free(w_held);
    if (st) mpx_value_free(&out[0]);
    return st;
}

/* ConvTranspose: output lengths and pads as the operator text says (pads from
 * output_shape or SAME_* split with the odd unit at the end for SAME_UPPER and
 * at the beginning otherwise; total_padding may be negative, which extends
 * the output with values no input reaches). */
static mpx_status convt_setup(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out, bool f64,
                              const mpx_value **xp, const mpx_value **wp, const mpx_value **bp, kn_window *win,
                              int64_t *dims, conv_job *j) {
    const mpx_value *x, *w, *b;
    int64_t group = 1;
    char s1[160], s2[160];
    mpx_status st = conv_inputs(c, in, n_in, n_out, f64, &x, &w, &b, &group);
    if (st) return st;
    int64_t C = x->dims[1];
    if (w->dims[0] != C)
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "input X of shape %s has %lld channels but weights W have shape %s "
                                "(C x M/group x kernel expected)",
                                kn_shape(x, s1), (long long)C, kn_shape(w, s2));
    if (C % group)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%lld input channels do not divide into %lld groups",
                                (long long)C, (long long)group);
    int64_t mg = w->dims[1], M = mg * group;
    if ((st = check_bias(c, b, M))) return st;
    if ((st = kn_window_attrs(c, x, w->dims + 2, win))) return st;
    if ((st = kn_window_transpose_out(c, win))) return st;
    dims[0] = x->dims[0], dims[1] = M;
    for (int i = 0; i < win->nsp; i++) dims[2 + i] = win->out[i];
    *j = (conv_job){.transpose = true, .N = x->dims[0], .C = C, .M = M, .G = group, .cig = C / group, .mg = mg};
    conv_geometry(j, win, dims + 2);
    *xp = x, *wp = w, *bp = b;
    return MPX_OK;
}

/* ConvTranspose with overlapping taps (kernel at least the stride, no
 * dilation), as stride-1 Convs through conv_fast, one an output phase: the
 * outputs o with (o + pad) mod s = q on every axis get the taps k = q,
 * q + s, ... (ascending, the documented order within an input channel),
 * which read input t - j for the j-th (t = (o + pad - q) / s). On a copy of
 * the input reversed along each axis, those are the positions b + j, b =
 * in - 1 - t: a correlation over the sub-kernel w[ci][m][q + j s], taps in
 * the same order; taps that fall outside the input are padding, keeping
 * their places in the fp32 blocks (as Conv's on the GEMM core). The copy is
 * cut to the rows and columns the phase reads, its output written back to
 * the phase's places in reverse. Why: the general path's rows of sums ran a
 * decoder's 4x4 stride-2 ConvTranspose (64 -> 64 channels, 28 -> 56) at
 * 1.6 G multiply-adds/s, 33 ms where ONNX Runtime takes 2.2. */
enum { CT_MAX_SP = 2 };

static bool convt_phases_ok(const conv_job *j, const kn_window *win) {
    if (win->nsp > CT_MAX_SP || j->N <= 0) return false;
    for (int i = 0; i < win->nsp; i++)
        if (win->d[i] != 1 || win->k[i] < win->s[i] || win->in[i] <= 0) return false;
    return true;
}

/* Phase q's geometry on one axis: its taps J, its outputs t_lo..t_hi, the
 * reversed input's positions [lo, lo + len) it reads with pads pb, pe. */
typedef struct ct_axis {
    int64_t J, t_lo, t_hi, lo, len, pb, pe;
} ct_axis;

static bool ct_axis_of(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad, int64_t q, ct_axis *a) {
    a->J = (k - q + s - 1) / s;
    /* outputs o = s t + q - pad in [0, out) */
    a->t_lo = (pad - q + s - 1) / s > 0 ? (pad - q + s - 1) / s : 0;
    if (pad - q < 0) a->t_lo = 0;
    while (s * a->t_lo + q - pad < 0) a->t_lo++;
    a->t_hi = (out - 1 + pad - q) >= 0 ? (out - 1 + pad - q) / s : -1;
    if (a->t_hi < a->t_lo) return false; /* no output in this phase */
    const int64_t bmin = in - 1 - a->t_hi, bmax = in - 1 - a->t_lo;
    const int64_t lo = bmin > 0 ? bmin : 0, hi = bmax + a->J - 1 < in - 1 ? bmax + a->J - 1 : in - 1;
    a->lo = lo, a->len = hi - lo + 1, a->pb = lo - bmin, a->pe = bmax + a->J - 1 - hi;
    return a->len > 0;
}

/* MPX_OK with *done false: a phase that reads no input (the general path
 * then); *declined: non-finite weights (nothing written). */
static mpx_status convt_phases(const mpx_kctx *c, const conv_job *j, const kn_window *win, int mode, bool *done,
                               bool *declined) {
    const int nsp = win->nsp;
    const int64_t H = nsp == 2 ? win->in[0] : 1, W = win->in[nsp - 1];
    const int64_t OH = nsp == 2 ? win->out[0] : 1, OW = win->out[nsp - 1];
    const int64_t KH = nsp == 2 ? win->k[0] : 1, KW = win->k[nsp - 1];
    const int64_t sh = nsp == 2 ? win->s[0] : 1, sw = win->s[nsp - 1];
    const int64_t ph = nsp == 2 ? win->pb[0] : 0, pw = win->pb[nsp - 1];
    *done = false;
    /* every phase must read some input, or its outputs have no terms */
    for (int64_t qh = 0; qh < sh; qh++)
        for (int64_t qw = 0; qw < sw; qw++) {
            ct_axis ah, aw;
            const bool okh = nsp == 2 ? ct_axis_of(H, OH, KH, sh, ph, qh, &ah) : (ah = (ct_axis){1, 0, 0, 0, 1, 0, 0}, true);
            const bool okw = ct_axis_of(W, OW, KW, sw, pw, qw, &aw);
            if (!okh || !okw) {
                /* a phase without outputs is fine; one with outputs and no input is not */
                if ((nsp == 2 && ah.t_hi >= ah.t_lo && !okh) || (aw.t_hi >= aw.t_lo && !okw)) return MPX_OK;
            }
        }
    mpx_kctx lc = *c;
    lc.in_round = NULL, lc.dest = NULL, lc.dest_n = 0, lc.dest_taken = NULL, lc.out_round = NULL, lc.out_rounded = NULL;
    mpx_status st = MPX_OK;
    float *xr = NULL, *wq = NULL, *yq = NULL;
    const int64_t plane = j->in_plane, oplane = j->out_plane;
    for (int64_t qh = 0; qh < sh && !st; qh++)
        for (int64_t qw = 0; qw < sw && !st; qw++) {
            ct_axis ah = {1, 0, 0, 0, 1, 0, 0}, aw;
            if ((nsp == 2 && !ct_axis_of(H, OH, KH, sh, ph, qh, &ah)) || !ct_axis_of(W, OW, KW, sw, pw, qw, &aw))
                continue; /* no outputs */
            const int64_t J = ah.J * aw.J, nh = ah.t_hi - ah.t_lo + 1, nw = aw.t_hi - aw.t_lo + 1;
            free(xr), free(wq), free(yq);
            xr = wq = yq = NULL;
            st = kn_scratch(c, (size_t)(j->N * j->C * ah.len * aw.len), sizeof *xr, (void **)&xr);
            if (!st) st = kn_scratch(c, (size_t)(j->G * j->mg * j->cig * J), sizeof *wq, (void **)&wq);
            if (!st) st = kn_scratch(c, (size_t)(j->N * j->M * nh * nw), sizeof *yq, (void **)&yq);
            if (st) break;
            /* the reversed input, cut: xr[n][ci][u][v] = x[n][ci][H-1-(lo_h+u)][W-1-(lo_w+v)] */
            for (int64_t nc = 0; nc < j->N * j->C; nc++)
                for (int64_t u = 0; u < ah.len; u++) {
                    const float *xs = j->x + nc * plane + (H - 1 - (ah.lo + u)) * W + (W - 1 - aw.lo);
                    float *xd = xr + (nc * ah.len + u) * aw.len;
                    for (int64_t v = 0; v < aw.len; v++) xd[v] = xs[-v];
                }
            /* the sub-kernels: wq[g][m][ci][jh][jw] = w[g cig + ci][m][qh + jh sh][qw + jw sw] */
            for (int64_t g = 0; g < j->G; g++)
                for (int64_t m = 0; m < j->mg; m++)
                    for (int64_t ci = 0; ci < j->cig; ci++)
                        for (int64_t jh = 0; jh < ah.J; jh++)
                            for (int64_t jw = 0; jw < aw.J; jw++)
                                wq[(((g * j->mg + m) * j->cig + ci) * ah.J + jh) * aw.J + jw] =
                                    j->w[(((g * j->cig + ci) * j->mg + m) * KH + qh + jh * sh) * KW + qw + jw * sw];
            kn_window w2 = {.nsp = 2,
                            .in = {ah.len, aw.len}, .out = {nh, nw}, .k = {ah.J, aw.J}, .s = {1, 1}, .d = {1, 1},
                            .pb = {ah.pb, aw.pb}, .pe = {ah.pe, aw.pe}};
            conv_job j2 = *j;
            j2.transpose = false, j2.x = xr, j2.w = wq, j2.y = yq;
            j2.in_plane = ah.len * aw.len, j2.out_plane = nh * nw, j2.k_plane = J;
            st = conv_fast(&lc, &j2, &w2, mode, declined);
            if (st || *declined) break;
            /* back to the phase's places: output row s t + q - pad for t = t_hi - u */
            for (int64_t nm = 0; nm < j->N * j->M; nm++)
                for (int64_t u = 0; u < nh; u++) {
                    const int64_t oh = sh * (ah.t_hi - u) + qh - ph;
                    const float *ys = yq + (nm * nh + u) * nw;
                    float *yd = j->y + nm * oplane + oh * OW;
                    for (int64_t v = 0; v < nw; v++) yd[sw * (aw.t_hi - v) + qw - pw] = ys[v];
                }
        }
    free(xr), free(wq), free(yq);
    if (!st && !*declined) *done = true;
    return st;
}

mpx_status mpx_k_conv_transpose(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                mpx_value *out, int n_out) {
    const mpx_value *x, *w, *b;
    kn_window win;
    int64_t dims[MPX_MAX_RANK];
    conv_job j;
    mpx_status st = convt_setup(c, in, n_in, n_out, false, &x, &w, &b, &win, dims, &j);
    if (st) return st;
    j.x = x->f, j.w = w->f, j.b = b ? b->f : NULL;
    const int mode = kg_mode_of(&c->acc);
    const bool fast = mode >= 0 && j.M > 0 && j.cig > 0 && j.in_plane > 0 && j.out_plane > 0 &&
                      convt_fast_ok(&j, &win, dims + 2) && kg_all_finite(j.w, w->n);
    /* The fast path writes every output once (each gets exactly one tap per
     * input channel), so its buffer is not cleared first (a tenth of det's
     * 24 x 320 x 320 one); the general path adds into zeros. */
    if ((st = fast ? mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, dims)
                   : mpx_k_alloc(c, &out[0], x->dtype, x->rank, dims)))
        return st;
    j.y = out[0].f;
    bool done = false, declined = false;
    if (fast)
        st = convt_fast(c, &j, &win, dims + 2, mode);
    else if (mode >= 0 && j.M > 0 && j.cig > 0 && j.out_plane > 0 && convt_phases_ok(&j, &win) &&
             kg_all_finite(j.w, w->n)) /* (so no phase declines once another has written) */
        st = convt_phases(c, &j, &win, mode, &done, &declined);
    if (!st && !fast && !done) st = conv_run(c, &j);
    if (st) mpx_value_free(&out[0]);
    return st;
}

/* ---- float64 (kern_f64.c's table) ---------------------------------------------------- */

/* Conv and ConvTranspose (one kernel, the op read off the node) of float64
 * values in double: the general path's geometry and order (input channel,
 * outer tap, kernel column, then the bias), as plain double sums; no fast
 * path. */
static mpx_status conv_run_f64(const mpx_kctx *c, const conv_job *j, const double *x, const double *w,
                               const double *b, double *y) {
    int64_t *tap_in = NULL, *tc = NULL;
    kw_span *sp = NULL;
    mpx_status st = conv_tables(c, j, &tap_in, &tc, &sp);
    for (int64_t n = 0; !st && n < j->N; n++)
        for (int64_t g = 0; g < j->G; g++)
            for (int64_t r = 0; r < j->rows; r++) {
                conv_tap_rows(j, r, tc, tap_in);
                for (int64_t m = 0; m < j->mg; m++) {
                    double *yr = y + (n * j->M + g * j->mg + m) * j->out_plane + r * j->OW;
                    for (int64_t ci = 0; ci < j->cig; ci++) {
                        const double *xc = x + (n * j->C + g * j->cig + ci) * j->in_plane;
                        const int64_t wi = j->transpose ? (g * j->cig + ci) * j->mg + m : (g * j->mg + m) * j->cig + ci;
                        for (int64_t t = 0; t < j->taps; t++) {
                            if (tap_in[t] < 0) continue;
                            const double *xr = xc + tap_in[t] * j->IW;
                            for (int64_t kw = 0; kw < j->KW; kw++) {
                                const kw_span *p = &sp[kw];
                                const double wv = w[wi * j->k_plane + t * j->KW + kw];
                                for (int64_t i = p->lo; i < p->hi; i++) yr[i * p->ys + p->yoff] += wv * xr[i * p->xs + p->xoff];
                            }
                        }
                    }
                    if (b)
                        for (int64_t o = 0; o < j->OW; o++) yr[o] += b[g * j->mg + m];
                }
            }
    free(tap_in);
    free(tc);
    free(sp);
    return st;
}

mpx_status mpx_k_conv_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *w, *b;
    kn_window win;
    int64_t dims[MPX_MAX_RANK];
    conv_job j;
    mpx_status st = (c->node->op == MPX_OP_ConvTranspose ? convt_setup : conv_setup)(c, in, n_in, n_out, true, &x, &w,
                                                                                      &b, &win, dims, &j);
    if (!st) st = mpx_k_alloc(c, &out[0], MPX_DT_DOUBLE, x->rank, dims);
    if (!st && (st = conv_run_f64(c, &j, x->d, w->d, b ? b->d : NULL, out[0].d))) mpx_value_free(&out[0]);
    return st;
}

/* ---- DeformConv ------------------------------------------------------------------------ */

/* X at a fractional position of one channel plane: bilinear between the
 * four pixels around it, a pixel outside the plane counting 0, and 0 when
 * the position is a pixel or more outside (ONNX's reference, ORT's
 * deformable im2col). One body for float (the fp32 kernel) and double (the
 * float64 one), so both types take the same steps. */
#define DEFORM_SAMPLE(name, T, FLOOR)                                                             \
    static T name(const T *p, int64_t H, int64_t W, T h, T w) {                                   \
        if (h <= (T)-1 || h >= (T)H || w <= (T)-1 || w >= (T)W) return (T)0;                      \
        T hf = FLOOR(h), wf = FLOOR(w);                                                           \
        int64_t hl = (int64_t)hf, wl = (int64_t)wf, hh = hl + 1, wh = wl + 1;                     \
        T lh = h - hf, lw = w - wf, uh = (T)1 - lh, uw = (T)1 - lw;                               \
        T v1 = hl >= 0 && wl >= 0 ? p[hl * W + wl] : (T)0;                                        \
        T v2 = hl >= 0 && wh < W ? p[hl * W + wh] : (T)0;                                         \
        T v3 = hh < H && wl >= 0 ? p[hh * W + wl] : (T)0;                                         \
        T v4 = hh < H && wh < W ? p[hh * W + wh] : (T)0;                                          \
        return uh * uw * v1 + uh * lw * v2 + lh * uw * v3 + lh * lw * v4;                         \
    }
DEFORM_SAMPLE(deform_sample, float, floorf)
DEFORM_SAMPLE(deform_sample_f64, double, floor)
#undef DEFORM_SAMPLE

/* DeformConv (2-D): Conv whose kernel taps are moved, per output position,
 * by the offsets (dy, dx per tap and offset group) and weighted by the
 * optional mask; X is sampled bilinearly there. Each output value is one
 * sum over input channels and taps (in that order), plus the bias: in the
 * node's accumulation format, or with f64 (every input float64: the
 * float64 kernel) the positions, samples, mask, products and sum in
 * double. */
static mpx_status deform_conv(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                              bool f64) {
    const mpx_value *x, *w, *off, *b, *mask;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "W", f64, &w);
    if (!st) st = kn_values_in(c, in, n_in, 2, "offset", f64, &off);
    if (!st) st = kn_values_opt(c, in, n_in, 3, "B", f64, &b);
    if (!st) st = kn_values_opt(c, in, n_in, 4, "mask", f64, &mask);
    if (st) return st;
    if (x->rank != 4 || w->rank != 4)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "mpx runs 2-D DeformConv (X %s, W %s)", kn_shape(x, s1),
                                kn_shape(w, s2));
    kn_window win;
    if ((st = kn_window_attrs(c, x, w->dims + 2, &win)) || (st = kn_window_out(c, &win, false))) return st;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], M = w->dims[0];
    int64_t G = mpx_node_attr_int(c->node, "group", 1), OG = mpx_node_attr_int(c->node, "offset_group", 1);
    int64_t KH = win.k[0], KW = win.k[1], OH = win.out[0], OW = win.out[1], taps = KH * KW;
    if (G < 1 || OG < 1 || C % G || M % G || C % OG || w->dims[1] != C / G)
        return mpx_kernel_error(c, MPX_E_SHAPE, "group %lld / offset_group %lld do not fit X %s and W %s", (long long)G,
                                (long long)OG, kn_shape(x, s1), kn_shape(w, s2));
    if (off->rank != 4 || off->dims[0] != N || off->dims[1] != OG * 2 * taps || off->dims[2] != OH || off->dims[3] != OW)
        return mpx_kernel_error(c, MPX_E_SHAPE, "offset %s must be [%lld, %lld, %lld, %lld]", kn_shape(off, s1),
                                (long long)N, (long long)(OG * 2 * taps), (long long)OH, (long long)OW);
    if (mask && (mask->rank != 4 || mask->dims[0] != N || mask->dims[1] != OG * taps || mask->dims[2] != OH ||
                 mask->dims[3] != OW))
        return mpx_kernel_error(c, MPX_E_SHAPE, "mask %s must be [%lld, %lld, %lld, %lld]", kn_shape(mask, s1),
                                (long long)N, (long long)(OG * taps), (long long)OH, (long long)OW);
    if (b && b->n != M) return mpx_kernel_error(c, MPX_E_SHAPE, "B %s must hold %lld values", kn_shape(b, s1), (long long)M);
    int64_t od[4] = {N, M, OH, OW}, cg = C / G, mg = M / G, cpo = C / OG;
    if ((st = mpx_k_alloc(c, &out[0], f64 ? MPX_DT_DOUBLE : x->dtype, 4, od))) return st;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t g = m / mg;
            if (mpx_k_cancelled()) {
                mpx_value_free(&out[0]);
                return mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled"); /* (a channel apart) */
            }
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    mpx_acc acc;
                    double sum = 0.0;
                    mpx_acc_init(&acc, &c->acc, 0.0f);
                    for (int64_t ci = 0; ci < cg; ci++) {
                        int64_t ch = g * cg + ci, og = ch / cpo, pl = (n * C + ch) * H * W, wk = (m * cg + ci) * taps;
                        for (int64_t t = 0; t < taps; t++) {
                            int64_t i = t / KW, j = t % KW;
                            int64_t oc = ((n * OG + og) * 2 * taps + 2 * t) * OH * OW + oh * OW + ow;
                            int64_t mi = ((n * OG + og) * taps + t) * OH * OW + oh * OW + ow;
                            int64_t bh = oh * win.s[0] - win.pb[0] + i * win.d[0], bw = ow * win.s[1] - win.pb[1] + j * win.d[1];
                            if (f64) {
                                double v = deform_sample_f64(x->d + pl, H, W, (double)bh + off->d[oc],
                                                             (double)bw + off->d[oc + OH * OW]);
                                if (mask) v *= mask->d[mi];
                                sum += w->d[wk + t] * v;
                            } else {
                                float v = deform_sample(x->f + pl, H, W, (float)bh + off->f[oc],
                                                        (float)bw + off->f[oc + OH * OW]);
                                if (mask) v *= mask->f[mi];
                                mpx_acc_add(&acc, w->f[wk + t] * v);
                            }
                        }
                    }
                    int64_t o = ((n * M + m) * OH + oh) * OW + ow;
                    if (f64) {
                        out[0].d[o] = b ? sum + b->d[m] : sum;
                    } else {
                        float y = mpx_acc_result(&acc);
                        out[0].f[o] = b ? y + b->f[m] : y;
                    }
                }
        }
    return MPX_OK;
}

mpx_status mpx_k_deform_conv(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return deform_conv(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_deform_conv_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return deform_conv(c, in, n_in, out, n_out, true);
}
