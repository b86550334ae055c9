/* kern_check - randomised agreement of the Conv, ConvTranspose, Gemm and
 * MatMul kernels (numerics/kern_nn.c and the GEMM core, kern_gemm.c), of
 * RNN's gate sums (kern_rnn.c: the input projection on the core) and of
 * attention's two products (kern_attention.c), with
 * naive evaluations of their documented summation order, bit for bit:
 *  - accumulate fp16, bf16, tf32 (the exact sum rounded once at every
 *    addition, block 0),
 *    fp16 in blocks of 5 and fp8 e4m3 (the general path): terms in order
 *    (input channel, kernel row, kernel column; taps in the padding are not
 *    terms), the running sum rounded as mpx_accum says, the bias one more
 *    addition;
 *  - fp32: blocks of 64 consecutive k = (input channel, kernel row, kernel
 *    column), a tap in the padding keeping its place in its block (kern_nn.c's
 *    header), each term one fused multiply-add into its block (C99 fmaf: the
 *    product not rounded on its own), the block added to the running sum.
 * Shapes are random (1-D, 2-D and 3-D, strides, dilations, pads, groups,
 * depthwise, several images, sizes that reach the threads) and so are the
 * values: half the cases fp16-exact, half arbitrary fp32 so that products
 * are inexact. Run it also with MPX_KERN_PORTABLE=1 (the baseline-ISA build
 * of the inner loops) and MPX_KERN_THREADS=1.
 *
 * usage: kern_check [cases] [seed]      exit status 0 when everything agrees */
#include "mpx_numerics.h"
#include "kern_elem.h" /* ke_tanh: the recurrent ops' activation */

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mpx_graph *G;
static mpx_rng rng;
static int failures, checks;

static int64_t rnd(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(mpx_rng_unit(&rng) * (double)(hi - lo + 1));
}

static mpx_value value(int rank, const int64_t *dims, bool exact) {
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, rank, dims, NULL);
    for (int64_t i = 0; i < v.n; i++) {
        float x = (float)(2.0 * mpx_rng_unit(&rng) - 1.0);
        if (mpx_rng_unit(&rng) < 0.05) x = 0.0f;
        v.f[i] = exact ? mpx_round_scalar(&mpx_format_fp16, x) : x;
    }
    return v;
}

static void add_ints(mpx_attr *a, const char *name, int n, const int64_t *v) {
    a->name = name;
    a->type = MPX_ATTR_INTS;
    a->n = n;
    a->ints = mpx_arena_calloc(G->arena, (size_t)n, sizeof(int64_t));
    memcpy(a->ints, v, (size_t)n * sizeof *v);
}

static void add_int(mpx_attr *a, const char *name, int64_t v) {
    a->name = name;
    a->type = MPX_ATTR_INT;
    a->i = v;
}

/* ---- the documented order ------------------------------------------------------------- */

typedef struct racc {
    const mpx_format *f; /* NULL: fp32 */
    int block;           /* rounded: 0 per addition, else per block of terms */
    float sum, blk;
    int nb;              /* terms (rounded, block > 0) or positions (fp32) in blk */
} racc;

static void ra_init(racc *a, const mpx_format *f, int block) {
    a->f = f, a->block = block, a->sum = 0.0f, a->blk = 0.0f, a->nb = 0;
}

/* s + t, the exact sum, rounded once to f, found another way than
 * mpx_round_sum's Fast2Sum: the sum in double (exact, after a term below
 * 2^-30 of the other is replaced by one bit of its sign 2^-40 below, which
 * leaves every rounding to 24 bits or fewer as it was), rounded towards
 * zero to a float, its last bit set when that was inexact (round-to-odd),
 * then rounded to f. An fp32 overflow of finite terms keeps the largest
 * float (round-to-odd of a value beyond it). */
static float ref_round_sum(const mpx_format *f, float s, float t) {
    if (!isfinite(s) || !isfinite(t)) return mpx_round_scalar(f, s + t);
    const bool s_big = fabsf(s) >= fabsf(t);
    const double big = s_big ? s : t;
    double small = s_big ? t : s;
    int e;
    frexp(big, &e);
    if (small != 0.0 && fabs(small) < ldexp(1.0, e - 30)) small = copysign(ldexp(1.0, e - 40), small);
    const double d = big + small;
    if (fabs(d) > (double)FLT_MAX) return mpx_round_scalar(f, copysignf(FLT_MAX, (float)d));
    float z = (float)d;
    if (fabs((double)z) > fabs(d)) z = nextafterf(z, 0.0f);
    if ((double)z != d) {
        uint32_t u;
        memcpy(&u, &z, sizeof u);
        u |= 1u;
        memcpy(&z, &u, sizeof z);
    }
    return mpx_round_scalar(f, z);
}

/* A position of the sum: the term x * w, or (present false) a tap in the
 * padding, which in fp32 still counts in its block of 64. fp32 fuses the
 * product into the block's sum; the rounded modes round the product to fp32
 * first (exact there for 16-bit operands), then the sum. */
static void ra_add(racc *a, bool present, float x, float w) {
    if (!a->f) {
        if (present) a->blk = fmaf(x, w, a->blk);
        if (++a->nb == MPX_ACC_FP32_BLOCK) a->sum += a->blk, a->blk = 0.0f, a->nb = 0;
        return;
    }
    if (!present) return;
    const float t = x * w;
    if (a->block <= 0) {
        a->sum = ref_round_sum(a->f, a->sum, t);
    } else {
        a->blk += t;
        if (++a->nb == a->block) {
            a->sum = ref_round_sum(a->f, a->sum, mpx_round_scalar(a->f, a->blk));
            a->blk = 0.0f, a->nb = 0;
        }
    }
}

static float ra_result(racc *a, const float *bias) {
    if (!a->f) {
        if (a->nb > 0) a->sum += a->blk;
        a->nb = 0, a->blk = 0.0f;
        return bias ? a->sum + *bias : a->sum;
    }
    if (a->block > 0 && a->nb > 0)
        a->sum = ref_round_sum(a->f, a->sum, mpx_round_scalar(a->f, a->blk));
    a->nb = 0, a->blk = 0.0f;
    if (!bias) return a->sum;
    /* The bias is one more term (with blocks: a block of its own). */
    ra_add(a, true, *bias, 1.0f);
    return ra_result(a, NULL);
}

typedef struct cparams {
    int nsp;
    int64_t N, C, M, G, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, OH, OW;
    bool transpose, bias;
} cparams;

static mpx_value ref_conv(const cparams *p, const mpx_value *x, const mpx_value *w,
                          const mpx_value *b, const mpx_format *f, int block) {
    int64_t dims[4] = {p->N, p->M, p->nsp == 2 ? p->OH : p->OW, p->OW};
    mpx_value y;
    mpx_value_alloc(&y, MPX_DT_FLOAT, 2 + p->nsp, dims, NULL);
    const int64_t cig = p->C / p->G, mg = p->M / p->G;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t oh = 0; oh < p->OH; oh++)
                for (int64_t ow = 0; ow < p->OW; ow++) {
                    racc a;
                    ra_init(&a, f, block);
                    const int64_t g = m / mg;
                    for (int64_t ci = 0; ci < cig; ci++)
                        for (int64_t kh = 0; kh < p->KH; kh++)
                            for (int64_t kw = 0; kw < p->KW; kw++) {
                                const int64_t ih = oh * p->sh - p->pt + kh * p->dh;
                                const int64_t iw = ow * p->sw - p->pl + kw * p->dw;
                                const bool in = ih >= 0 && ih < p->H && iw >= 0 && iw < p->W;
                                const int64_t c = g * cig + ci;
                                ra_add(&a, in, in ? x->f[((n * p->C + c) * p->H + ih) * p->W + iw] : 0.0f,
                                       w->f[((m * cig + ci) * p->KH + kh) * p->KW + kw]);
                            }
                    y.f[((n * p->M + m) * p->OH + oh) * p->OW + ow] =
                        ra_result(&a, b ? &b->f[m] : NULL);
                }
    return y;
}

/* ConvTranspose: terms (input channel, tap) that reach the output, in order. */
static mpx_value ref_convt(const cparams *p, const mpx_value *x, const mpx_value *w,
                           const mpx_value *b, const mpx_format *f, int block, bool phases) {
    int64_t dims[4] = {p->N, p->M, p->nsp == 2 ? p->OH : p->OW, p->OW};
    mpx_value y;
    mpx_value_alloc(&y, MPX_DT_FLOAT, 2 + p->nsp, dims, NULL);
    const int64_t cig = p->C / p->G, mg = p->M / p->G;
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t oh = 0; oh < p->OH; oh++)
                for (int64_t ow = 0; ow < p->OW; ow++) {
                    racc a;
                    ra_init(&a, f, block);
                    const int64_t g = m / mg;
                    for (int64_t ci = 0; ci < cig; ci++)
                        for (int64_t kh = 0; kh < p->KH; kh++)
                            for (int64_t kw = 0; kw < p->KW; kw++) {
                                const int64_t nh = oh + p->pt - kh * p->dh, nw = ow + p->pl - kw * p->dw;
                                const bool in = nh >= 0 && nh % p->sh == 0 && nh / p->sh < p->H &&
                                                nw >= 0 && nw % p->sw == 0 && nw / p->sw < p->W;
                                /* phases (kern_nn.c convt_phases): a tap of the output's
                                 * phase whose input falls outside keeps its place */
                                const bool aligned = (nh % p->sh + p->sh) % p->sh == 0 &&
                                                     (nw % p->sw + p->sw) % p->sw == 0;
                                if (!in) {
                                    if (phases && aligned) ra_add(&a, false, 0.0f, 0.0f);
                                    continue; /* not a term */
                                }
                                const int64_t c = g * cig + ci;
                                ra_add(&a, true,
                                       x->f[((n * p->C + c) * p->H + nh / p->sh) * p->W + nw / p->sw],
                                       w->f[((c * mg + m % mg) * p->KH + kh) * p->KW + kw]);
                            }
                    y.f[((n * p->M + m) * p->OH + oh) * p->OW + ow] =
                        ra_result(&a, b ? &b->f[m] : NULL);
                }
    return y;
}

static bool same_bits(const mpx_value *a, const mpx_value *b, int64_t *at) {
    if (a->n != b->n) {
        *at = -1;
        return false;
    }
    for (int64_t i = 0; i < a->n; i++) {
        uint32_t u, v;
        memcpy(&u, &a->f[i], 4);
        memcpy(&v, &b->f[i], 4);
        if (u != v && !(isnan(a->f[i]) && isnan(b->f[i]))) {
            *at = i;
            return false;
        }
    }
    return true;
}

static const struct {
    const mpx_format *f;
    int block;
} ACCS[] = {
    {NULL, 0},
    {&mpx_format_fp16, 0},
    {&mpx_format_bf16, 0},
    {&mpx_format_tf32, 0},
    {&mpx_format_fp16, 5},
    {&mpx_format_fp8e4m3_sat, 0},
};
enum { N_ACCS = sizeof ACCS / sizeof ACCS[0] };

static void check(const char *what, const mpx_node *node, int n_in, const mpx_value *const *in,
                  int acc, const mpx_value *want) {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_kctx c = {.node = node, .acc = {.fmt = ACCS[acc].f, .block = ACCS[acc].block}, .err = &err};
    /* fp16-exact operands of a product: as the executor gives a node that
     * computes in fp16 (the GEMM core's fp16 fused multiply-add path). */
    bool f16 = node->op == MPX_OP_Conv || node->op == MPX_OP_ConvTranspose || node->op == MPX_OP_Gemm ||
               node->op == MPX_OP_MatMul;
    for (int i = 0; f16 && i < n_in; i++)
        for (int64_t k = 0; f16 && in[i] && k < in[i]->n; k++)
            f16 = mpx_round_scalar(&mpx_format_fp16, in[i]->f[k]) == in[i]->f[k];
    if (f16) c.round = &mpx_format_fp16;
    mpx_value y;
    memset(&y, 0, sizeof y);
    y.n = -1;
    mpx_status st = mpx_kernel_for(node->op)(&c, in, n_in, &y, 1);
    int64_t at = 0;
    checks++;
    if (st != MPX_OK) {
        failures++;
        fprintf(stderr, "FAIL %s acc %s/%d: %s\n", what, ACCS[acc].f ? ACCS[acc].f->name : "fp32",
                ACCS[acc].block, err.msg);
    } else if (!same_bits(&y, want, &at)) {
        failures++;
        fprintf(stderr, "FAIL %s acc %s/%d: at %lld got %.9g want %.9g\n", what,
                ACCS[acc].f ? ACCS[acc].f->name : "fp32", ACCS[acc].block, (long long)at,
                at >= 0 ? (double)y.f[at] : 0.0, at >= 0 ? (double)want->f[at] : 0.0);
    }
    mpx_value_free(&y);
}

/* ---- cases -------------------------------------------------------------------------------- */

/* dwide: a depthwise 3x3 or 5x5 over a map wider than 32 outputs (the
 * AVX-512 build's rows of 3 to 7 vectors, kern_dw_body.h dw_band3_fp32).
 * dnarrow: a depthwise convolution of 16 channels and more on the narrow
 * path (kern_depthwise.c kg_dw16_fn: 16 channels in the lanes; the lanes'
 * 16 x 16 moves, slide16_row, taps16_row): small maps, maps up to 56 wide,
 * and 5x5 kernels on wider ones. */
/* kind: the shapes of a code path drawn on purpose (CK_*) */
enum { CK_ANY, CK_WIDE_A, CK_NARROW };

static void conv_case(int idx, bool transpose, bool big, bool dwide, bool dnarrow, bool pw, int kind) {
    cparams p = {.nsp = dwide || dnarrow || mpx_rng_unit(&rng) >= 0.2 ? 2 : 1, .transpose = transpose};
    p.N = rnd(1, 2);
    p.G = mpx_rng_unit(&rng) < 0.6 ? 1 : rnd(2, 4);
    const bool dwise = dwide || dnarrow || (!transpose && mpx_rng_unit(&rng) < 0.25);
    int64_t cig = big ? rnd(8, 48) : rnd(1, 12), mg = big ? rnd(6, 40) : rnd(1, 14);
    if (dwise) cig = 1, mg = 1, p.G = big ? rnd(8, 64) : rnd(1, 12);
    p.C = cig * p.G, p.M = mg * p.G;
    p.H = p.nsp == 2 ? (big ? rnd(16, 70) : rnd(1, 24)) : 1;
    p.W = big ? rnd(16, 90) : rnd(1, 40);
    if (dwise && big && mpx_rng_unit(&rng) < 0.7) /* maps whose copy kg_dw_run takes in bands */
        p.H = p.nsp == 2 ? rnd(90, 150) : 1, p.W = rnd(90, 150);
    p.KH = p.nsp == 2 ? rnd(1, 5) : 1, p.KW = rnd(1, 5);
    if (dwide) p.KH = p.KW = mpx_rng_unit(&rng) < 0.5 ? 3 : 5, p.H = rnd(3, 20), p.W = rnd(34, 150);
    p.sh = p.nsp == 2 ? rnd(1, 3) : 1, p.sw = rnd(1, 3);
    p.dh = p.nsp == 2 ? rnd(1, 2) : 1, p.dw = rnd(1, 2);
    if (dnarrow) {
        const double u = mpx_rng_unit(&rng);
        p.G = p.C = p.M = rnd(16, 50);
        p.KH = rnd(1, 7), p.KW = rnd(1, 7);
        p.dh = mpx_rng_unit(&rng) < 0.2 ? 2 : 1, p.dw = mpx_rng_unit(&rng) < 0.2 ? 2 : 1;
        p.sh = rnd(1, 2), p.sw = rnd(1, 2);
        if (u < 0.4) p.H = rnd(1, 24), p.W = rnd(1, 24);
        else if (u < 0.7) p.H = rnd(4, 30), p.W = rnd(24, 58), p.sw = 1;
        else p.KH = p.KW = 5, p.dh = p.dw = 1, p.H = rnd(3, 14), p.W = rnd(40, 130);
    }
    if (pw) { /* set again below, after the draws for the other cases */
        p.nsp = 2, p.G = 1, p.C = rnd(1, 24), p.M = rnd(43, 80);
        p.H = rnd(40, 60), p.W = rnd(45, 70) | 1, p.H |= 1;
    }
    if (transpose && mpx_rng_unit(&rng) < 0.7) { /* the fast path: kernel = stride */
        p.KH = p.sh = p.nsp == 2 ? rnd(1, 3) : 1;
        p.KW = p.sw = rnd(1, 3);
        p.dh = p.dw = 1;
    } else if (transpose && mpx_rng_unit(&rng) < 0.7) { /* overlapping taps: by phases (kern_nn.c convt_phases) */
        p.sh = p.nsp == 2 ? rnd(1, 3) : 1, p.sw = rnd(1, 3);
        p.KH = p.nsp == 2 ? p.sh + rnd(0, 3) : 1, p.KW = p.sw + rnd(0, 3);
        p.dh = p.dw = 1;
    }
    p.pt = p.nsp == 2 ? rnd(0, 3) : 0, p.pb = p.nsp == 2 ? rnd(0, 3) : 0;
    p.pl = rnd(0, 3), p.pr = rnd(0, 3);
    if (!transpose && mpx_rng_unit(&rng) < 0.05) /* the fill's rare paths: a column phase past 8, pads past 8 */
        p.sw = rnd(9, 10), p.pl = rnd(8, 11);
    if (mpx_rng_unit(&rng) < 0.3) p.pt = p.pb = p.pl = p.pr = 0;
    if (transpose && mpx_rng_unit(&rng) < 0.7) p.pt = p.pb = p.pl = p.pr = 0;
    p.bias = mpx_rng_unit(&rng) < 0.6;
    if (kind == CK_NARROW) { /* the output channels in the lanes (kern_gemm.c kg_lanes_run) */
        p.nsp = 2, p.G = 1;
        /* (M above 96 half the time: on two threads kern_gemm.c takes the
         * lanes only from 97 output channels, 7 panels of 16) */
        cig = p.C = rnd(4, 40), mg = p.M = idx % 2 ? rnd(97, 180) : rnd(32, 90);
        p.KH = rnd(1, 3), p.KW = rnd(1, 3), p.sh = rnd(1, 2), p.sw = rnd(1, 2);
        p.dh = mpx_rng_unit(&rng) < 0.2 ? 2 : 1, p.dw = mpx_rng_unit(&rng) < 0.2 ? 2 : 1;
        p.pt = rnd(0, 2), p.pb = rnd(0, 2), p.pl = rnd(0, 2), p.pr = rnd(0, 2);
        if (idx % 4 == 3) { /* 1x1 at stride 2, no padding read before: terms read in the input itself
                               (kern_gemm.c kg_lanes_direct); with padding below or right, not */
            p.KH = p.KW = 1, p.pt = p.pl = 0, p.sh = 2, p.sw = rnd(1, 2);
            if (mpx_rng_unit(&rng) < 0.6) p.pb = p.pr = 0;
        }
        p.H = rnd(5, 22) * p.sh, p.W = rnd(5, 22) * p.sw;
    }
    if (kind == CK_WIDE_A) { /* more weights than input: the threads split A's rows (kern_gemm.c kg_ctx.amajor) */
        p.nsp = 2, p.G = 1, p.KH = p.KW = 3, p.sh = p.sw = 1, p.dh = p.dw = 1;
        p.pt = p.pb = p.pl = p.pr = 1;
        cig = p.C = rnd(8, 24), mg = p.M = rnd(130, 200);
        p.H = rnd(22, 26), p.W = rnd(25, 30);
    }
    if (pw) { /* 1x1, unit strides, unpadded: the input read as B itself */
        p.KH = p.KW = p.sh = p.sw = p.dh = p.dw = 1;
        p.pt = p.pb = p.pl = p.pr = 0;
        cig = p.C, mg = p.M;
        p.bias = idx % 2 == 0;
    }
    if (!transpose) {
        const int64_t eh = (p.KH - 1) * p.dh + 1, ew = (p.KW - 1) * p.dw + 1;
        if (p.H + p.pt + p.pb < eh || p.W + p.pl + p.pr < ew) return;
        p.OH = (p.H + p.pt + p.pb - eh) / p.sh + 1;
        p.OW = (p.W + p.pl + p.pr - ew) / p.sw + 1;
    } else {
        p.OH = p.sh * (p.H - 1) + (p.KH - 1) * p.dh + 1 - p.pt - p.pb;
        p.OW = p.sw * (p.W - 1) + (p.KW - 1) * p.dw + 1 - p.pl - p.pr;
        if (p.OH < 1 || p.OW < 1) return;
    }
    const bool exact = mpx_rng_unit(&rng) < 0.5;
    int64_t xd[4] = {p.N, p.C, p.nsp == 2 ? p.H : p.W, p.W};
    int64_t wd[4] = {transpose ? p.C : p.M, transpose ? mg : cig, p.nsp == 2 ? p.KH : p.KW, p.KW};
    int64_t bd[1] = {p.M};
    mpx_value x = value(2 + p.nsp, xd, exact), w = value(2 + p.nsp, wd, exact),
              b = value(1, bd, exact);
    mpx_node *n = mpx_graph_add_node(G, "conv", transpose ? "ConvTranspose" : "Conv", "", 3, 1, 4);
    n->op = mpx_op_from_name(transpose ? "ConvTranspose" : "Conv");
    n->opset = 13;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    int64_t s[2] = {p.sh, p.sw}, d[2] = {p.dh, p.dw}, pads[4] = {p.pt, p.pl, p.pb, p.pr};
    const int o = p.nsp == 2 ? 0 : 1;
    int64_t pads1[2] = {p.pl, p.pr};
    add_ints(&n->attrs[0], "strides", p.nsp, s + o);
    add_ints(&n->attrs[1], "dilations", p.nsp, d + o);
    add_ints(&n->attrs[2], "pads", 2 * p.nsp, p.nsp == 2 ? pads : pads1);
    add_int(&n->attrs[3], "group", p.G);
    const mpx_value *in[3] = {&x, &w, p.bias ? &b : NULL};
    char what[512];
    snprintf(what, sizeof what,
             "case %d %s%s N%lld C%lld M%lld G%lld in %lldx%lld k %lldx%lld s %lld,%lld d %lld,%lld "
             "pads %lld,%lld,%lld,%lld bias %d exact %d",
             idx, transpose ? "ConvTranspose" : "Conv", p.nsp == 1 ? " 1-D" : "", (long long)p.N,
             (long long)p.C, (long long)p.M, (long long)p.G, (long long)p.H, (long long)p.W,
             (long long)p.KH, (long long)p.KW, (long long)p.sh, (long long)p.sw, (long long)p.dh,
             (long long)p.dw, (long long)p.pt, (long long)p.pl, (long long)p.pb, (long long)p.pr,
             p.bias, exact);
    /* fp32 through the general path (ConvTranspose with dilations, or a
     * kernel shorter than its stride) has its own row order; only the fast
     * paths' order is checked for fp32 (kernel = stride without padding,
     * and the phases: kernel >= stride, no dilation). */
    const bool phases = transpose && p.dh == 1 && p.dw == 1 && p.KH >= p.sh && p.KW >= p.sw;
    const bool fast_t = !transpose || phases;
    for (int a = 0; a < N_ACCS; a++) {
        if (a == 0 && !fast_t) continue;
        mpx_value r = transpose ? ref_convt(&p, &x, &w, p.bias ? &b : NULL, ACCS[a].f, ACCS[a].block, phases)
                                : ref_conv(&p, &x, &w, p.bias ? &b : NULL, ACCS[a].f, ACCS[a].block);
        check(what, n, 3, in, a, &r);
        mpx_value_free(&r);
    }
    mpx_value_free(&x);
    mpx_value_free(&w);
    mpx_value_free(&b);
}

static void matmul_case(int idx, bool big) {
    const int64_t M = big ? rnd(1, 100) : rnd(1, 20), K = big ? rnd(1, 700) : rnd(1, 80),
                  N = big ? rnd(1, 300) : rnd(1, 40);
    const bool exact = mpx_rng_unit(&rng) < 0.5, gemm = mpx_rng_unit(&rng) < 0.5;
    const bool ta = gemm && mpx_rng_unit(&rng) < 0.5, tb = gemm && mpx_rng_unit(&rng) < 0.5;
    int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
    mpx_value a = value(2, ad, exact), b = value(2, bd, exact);
    mpx_node *n = mpx_graph_add_node(G, "mm", gemm ? "Gemm" : "MatMul", "", 2, 1, 2);
    n->op = mpx_op_from_name(gemm ? "Gemm" : "MatMul");
    n->opset = 13;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    add_int(&n->attrs[0], "transA", ta);
    add_int(&n->attrs[1], "transB", tb);
    if (!gemm) n->n_attrs = 0;
    /* Half the cases read B as the graph's weights (a Linear layer's
     * export: transB, or MatMul by the transposed initializer): B (B^T) is
     * packed once from where it lies and kept on the tensor, and every
     * accumulation after the first reads that packing. */
    mpx_tensor *wt = NULL;
    if (mpx_rng_unit(&rng) < 0.5) {
        char name[32];
        snprintf(name, sizeof name, "w%d", idx);
        wt = n->inputs[1] = mpx_graph_tensor(G, name);
        wt->dtype = MPX_DT_FLOAT;
        wt->rank = 2;
        wt->dims[0] = bd[0], wt->dims[1] = bd[1];
        wt->nelem = b.n;
        wt->f32 = b.f;
    }
    const mpx_value *in[2] = {&a, &b};
    char what[160];
    snprintf(what, sizeof what, "case %d %s M%lld K%lld N%lld ta %d tb %d%s exact %d", idx,
             gemm ? "Gemm" : "MatMul", (long long)M, (long long)K, (long long)N, ta, tb, wt ? " (weights)" : "",
             exact);
    for (int acc = 0; acc < N_ACCS; acc++) {
        int64_t yd[2] = {M, N};
        mpx_value r;
        mpx_value_alloc(&r, MPX_DT_FLOAT, 2, yd, NULL);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                racc s;
                ra_init(&s, ACCS[acc].f, ACCS[acc].block);
                for (int64_t k = 0; k < K; k++)
                    ra_add(&s, true, a.f[ta ? k * M + i : i * K + k], b.f[tb ? j * K + k : k * N + j]);
                r.f[i * N + j] = ra_result(&s, NULL);
            }
        check(what, n, 2, in, acc, &r);
        mpx_value_free(&r);
    }
    if (wt) { /* (its packings point into b) */
        if (wt->derived_free) wt->derived_free(wt->derived);
        wt->derived = NULL;
        wt->derived_free = NULL;
        wt->f32 = NULL;
    }
    mpx_value_free(&a);
    mpx_value_free(&b);
}

/* RNN (tanh, kern_rnn.c's order): per step, X_t.W_j^T in the GEMM core's
 * order where the core does the accumulation (fp32: blocks of 64 with
 * fmaf), then H_{t-1}.R_j^T added in mpx_acc's order starting from that sum
 * (fp32: blocks of 64, product then addition), then + Wb + Rb, tanh. A
 * rounded accumulation is one running sum over the X then the H terms. */
static void rnn_case(int idx, bool big) {
    const int64_t S = rnd(1, big ? 12 : 5), B = rnd(1, 3), I = big ? rnd(60, 200) : rnd(1, 70),
                  H = big ? rnd(60, 150) : rnd(1, 40);
    const int dirs = mpx_rng_unit(&rng) < 0.4 ? 2 : 1;
    const bool rev = dirs == 1 && mpx_rng_unit(&rng) < 0.3, bias = mpx_rng_unit(&rng) < 0.6,
               init = mpx_rng_unit(&rng) < 0.5, exact = mpx_rng_unit(&rng) < 0.5;
    int64_t xd[3] = {S, B, I}, wd[3] = {dirs, H, I}, rd[3] = {dirs, H, H}, bd[2] = {dirs, 2 * H}, hd[3] = {dirs, B, H};
    mpx_value x = value(3, xd, exact), w = value(3, wd, exact), r = value(3, rd, exact), b = value(2, bd, exact),
              h0 = value(3, hd, exact);
    mpx_node *n = mpx_graph_add_node(G, "rnn", "RNN", "", 6, 1, 2);
    n->op = mpx_op_from_name("RNN");
    n->opset = 14;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    add_int(&n->attrs[0], "hidden_size", H);
    n->attrs[1].name = "direction";
    n->attrs[1].type = MPX_ATTR_STRING;
    n->attrs[1].s = dirs == 2 ? "bidirectional" : rev ? "reverse" : "forward";
    n->attrs[1].s_len = strlen(n->attrs[1].s);
    const mpx_value *in[6] = {&x, &w, &r, bias ? &b : NULL, NULL, init ? &h0 : NULL};
    char what[200];
    snprintf(what, sizeof what, "case %d RNN S%lld B%lld I%lld H%lld dirs %d rev %d bias %d init %d exact %d", idx,
             (long long)S, (long long)B, (long long)I, (long long)H, dirs, rev, bias, init, exact);
    float *h = malloc((size_t)H * sizeof *h), *hn = malloc((size_t)H * sizeof *hn);
    for (int acc = 0; h && hn && acc < N_ACCS; acc++) {
        const bool core = !ACCS[acc].f || (ACCS[acc].block == 0 && ACCS[acc].f->storage_bits >= 16);
        int64_t yd[4] = {S, dirs, B, H};
        mpx_value y;
        mpx_value_alloc(&y, MPX_DT_FLOAT, 4, yd, NULL);
        for (int d = 0; d < dirs; d++)
            for (int64_t bb = 0; bb < B; bb++) {
                for (int64_t j = 0; j < H; j++) h[j] = init ? h0.f[(d * B + bb) * H + j] : 0.0f;
                for (int64_t step = 0; step < S; step++) {
                    const int64_t t = (dirs == 2 ? d == 1 : rev) ? S - 1 - step : step;
                    for (int64_t j = 0; j < H; j++) {
                        racc a;
                        ra_init(&a, ACCS[acc].f, ACCS[acc].block);
                        for (int64_t k = 0; k < I; k++)
                            ra_add(&a, true, x.f[(t * B + bb) * I + k], w.f[(d * H + j) * I + k]);
                        float v;
                        if (!ACCS[acc].f && core) { /* X part closed, H terms in mpx_acc's fp32 blocks */
                            float sum = ra_result(&a, NULL), blk = 0.0f;
                            int nb = 0;
                            for (int64_t k = 0; k < H; k++) {
                                blk += h[k] * r.f[(d * H + j) * H + k];
                                if (++nb == MPX_ACC_FP32_BLOCK) sum += blk, blk = 0.0f, nb = 0;
                            }
                            v = nb > 0 ? sum + blk : sum;
                        } else {
                            for (int64_t k = 0; k < H; k++) ra_add(&a, true, h[k], r.f[(d * H + j) * H + k]);
                            v = ra_result(&a, NULL);
                        }
                        if (bias) v = v + b.f[d * 2 * H + j] + b.f[d * 2 * H + H + j];
                        hn[j] = ke_tanh(v);
                    }
                    memcpy(h, hn, (size_t)H * sizeof *h);
                    memcpy(y.f + ((t * dirs + d) * B + bb) * H, h, (size_t)H * sizeof *h);
                }
            }
        check(what, n, 6, in, acc, &y);
        mpx_value_free(&y);
    }
    free(h);
    free(hn);
    mpx_value_free(&x);
    mpx_value_free(&w);
    mpx_value_free(&r);
    mpx_value_free(&b);
    mpx_value_free(&h0);
}

/* MultiHeadAttention (kern_attention.c's order, no mask): per head, the
 * scores q.k_t in the GEMM core's order where the core does the
 * accumulation (else mpx_acc's, the same terms), times the scale; the
 * softmax in fp32 (the maximum, expf of each score less it, their sum in
 * order, each divided by it); y_d = the probabilities' products with v_t[d]
 * in t order, in the same accumulation. */
static void attn_case(int idx, bool big) {
    const int64_t B = rnd(1, 2), S = rnd(1, big ? 90 : 12), T = rnd(1, big ? 150 : 20), N = rnd(1, 4),
                  D = rnd(1, big ? 96 : 24);
    const bool exact = mpx_rng_unit(&rng) < 0.5;
    int64_t qd[3] = {B, S, N * D}, kd[3] = {B, T, N * D};
    mpx_value q = value(3, qd, exact), k = value(3, kd, exact), v = value(3, kd, exact);
    mpx_node *n = mpx_graph_add_node(G, "mha", "MultiHeadAttention", "com.microsoft", 3, 1, 1);
    n->op = mpx_op_from_name("MultiHeadAttention");
    n->opset = 1;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    add_int(&n->attrs[0], "num_heads", N);
    const mpx_value *in[3] = {&q, &k, &v};
    char what[160];
    snprintf(what, sizeof what, "case %d MultiHeadAttention B%lld S%lld T%lld heads %lld D%lld exact %d", idx,
             (long long)B, (long long)S, (long long)T, (long long)N, (long long)D, exact);
    const float scale = 1.0f / sqrtf((float)D);
    float *p = malloc((size_t)T * sizeof *p);
    for (int acc = 0; p && acc < N_ACCS; acc++) {
        mpx_value y;
        mpx_value_alloc(&y, MPX_DT_FLOAT, 3, qd, NULL);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < N; h++)
                for (int64_t s = 0; s < S; s++) {
                    float mx = -INFINITY, sum = 0.0f;
                    for (int64_t t = 0; t < T; t++) {
                        racc a;
                        ra_init(&a, ACCS[acc].f, ACCS[acc].block);
                        for (int64_t d = 0; d < D; d++)
                            ra_add(&a, true, q.f[(b * S + s) * N * D + h * D + d], k.f[(b * T + t) * N * D + h * D + d]);
                        p[t] = ra_result(&a, NULL) * scale + 0.0f; /* (+ the bias of an unmasked score) */
                        if (p[t] > mx) mx = p[t];
                    }
                    for (int64_t t = 0; t < T; t++) {
                        p[t] = expf(p[t] - mx);
                        sum += p[t];
                    }
                    for (int64_t t = 0; t < T; t++) p[t] = p[t] / sum;
                    for (int64_t d = 0; d < D; d++) {
                        racc a;
                        ra_init(&a, ACCS[acc].f, ACCS[acc].block);
                        for (int64_t t = 0; t < T; t++) ra_add(&a, true, p[t], v.f[(b * T + t) * N * D + h * D + d]);
                        y.f[(b * S + s) * N * D + h * D + d] = ra_result(&a, NULL);
                    }
                }
        check(what, n, 3, in, acc, &y);
        mpx_value_free(&y);
    }
    free(p);
    mpx_value_free(&q);
    mpx_value_free(&k);
    mpx_value_free(&v);
}

/* A 3-D Conv (kern_nn.c conv3_fast: 2-D ones per output depth over the
 * (input channel, kernel depth) planes): terms (input channel, kernel
 * depth, row, column) in row-major order, a tap in the padding keeping its
 * place in its fp32 block of 64 and no term in a rounded sum, then the bias. */
static void conv3_case(int idx) {
    const int64_t N = rnd(1, 2), Gr = mpx_rng_unit(&rng) < 0.7 ? 1 : rnd(2, 3);
    const bool dwise = mpx_rng_unit(&rng) < 0.2;
    const int64_t cig = dwise ? 1 : rnd(1, 8), mg = dwise ? 1 : rnd(1, 12), Gd = dwise ? rnd(1, 8) : Gr;
    const int64_t C = cig * Gd, M = mg * Gd;
    int64_t in[3], k[3], st[3], dl[3], pb[3], pe[3], out[3];
    for (int i = 0; i < 3; i++) {
        in[i] = i == 0 ? rnd(1, 6) : rnd(1, 14), k[i] = rnd(1, 3), st[i] = rnd(1, 2), dl[i] = rnd(1, 2);
        pb[i] = rnd(0, 2), pe[i] = rnd(0, 2);
        out[i] = (in[i] + pb[i] + pe[i] - (k[i] - 1) * dl[i] - 1) / st[i] + 1;
        if (in[i] + pb[i] + pe[i] - (k[i] - 1) * dl[i] - 1 < 0 || out[i] < 1) return;
    }
    const bool exact = mpx_rng_unit(&rng) < 0.5, bias = mpx_rng_unit(&rng) < 0.5;
    int64_t xd[5] = {N, C, in[0], in[1], in[2]}, wd[5] = {M, cig, k[0], k[1], k[2]}, bd[1] = {M},
            yd[5] = {N, M, out[0], out[1], out[2]};
    mpx_value x = value(5, xd, exact), w = value(5, wd, exact), b = value(1, bd, exact);
    mpx_node *n = mpx_graph_add_node(G, "conv3", "Conv", "", 3, 1, 4);
    n->op = mpx_op_from_name("Conv");
    n->opset = 13;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    int64_t pads[6] = {pb[0], pb[1], pb[2], pe[0], pe[1], pe[2]};
    add_ints(&n->attrs[0], "strides", 3, st);
    add_ints(&n->attrs[1], "dilations", 3, dl);
    add_ints(&n->attrs[2], "pads", 6, pads);
    add_int(&n->attrs[3], "group", Gd);
    const mpx_value *ins[3] = {&x, &w, bias ? &b : NULL};
    char what[200];
    snprintf(what, sizeof what, "case %d Conv 3-D C%lld M%lld G%lld in %lldx%lldx%lld k %lldx%lldx%lld bias %d exact %d",
             idx, (long long)C, (long long)M, (long long)Gd, (long long)in[0], (long long)in[1], (long long)in[2],
             (long long)k[0], (long long)k[1], (long long)k[2], bias, exact);
    for (int a = 0; a < N_ACCS; a++) {
        mpx_value r;
        mpx_value_alloc(&r, MPX_DT_FLOAT, 5, yd, NULL);
        int64_t y = 0;
        for (int64_t nn = 0; nn < N; nn++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t o0 = 0; o0 < out[0]; o0++)
                    for (int64_t o1 = 0; o1 < out[1]; o1++)
                        for (int64_t o2 = 0; o2 < out[2]; o2++) {
                            racc acc;
                            ra_init(&acc, ACCS[a].f, ACCS[a].block);
                            const int64_t g = m / mg;
                            for (int64_t ci = 0; ci < cig; ci++)
                                for (int64_t k0 = 0; k0 < k[0]; k0++)
                                    for (int64_t k1 = 0; k1 < k[1]; k1++)
                                        for (int64_t k2 = 0; k2 < k[2]; k2++) {
                                            const int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                                            const int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                                            const int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                                            const bool inside = i0 >= 0 && i0 < in[0] && i1 >= 0 && i1 < in[1] &&
                                                                i2 >= 0 && i2 < in[2];
                                            const int64_t c = g * cig + ci;
                                            ra_add(&acc, inside,
                                                   inside ? x.f[(((nn * C + c) * in[0] + i0) * in[1] + i1) * in[2] + i2]
                                                          : 0.0f,
                                                   w.f[(((m * cig + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2]);
                                        }
                            r.f[y++] = ra_result(&acc, bias ? &b.f[m] : NULL);
                        }
        check(what, n, 3, ins, a, &r);
        mpx_value_free(&r);
    }
    mpx_value_free(&x);
    mpx_value_free(&w);
    mpx_value_free(&b);
}

/* InstanceNormalization (kern_norm.c): each plane's mean and variance sums
 * in index order as mpx_acc adds them (fp32: blocks of 64 from 0, each
 * added to the running sum; the vector paths sum blocks side by side),
 * then y = scale (x - mean) / sqrt(var / S + eps) + B. Planes from a few
 * values to tens of thousands (partial last blocks, the threads). */
static void inorm_case(int idx) {
    const int64_t N = rnd(1, 2), C = rnd(1, 5), H = rnd(1, 12), W = idx % 3 == 2 ? rnd(500, 3000) : rnd(1, 90);
    const bool exact = mpx_rng_unit(&rng) < 0.5;
    int64_t xd[4] = {N, C, H, W}, cd[1] = {C};
    mpx_value x = value(4, xd, exact), sc = value(1, cd, false), b = value(1, cd, false);
    mpx_node *n = mpx_graph_add_node(G, "in", "InstanceNormalization", "", 3, 1, 0);
    n->op = mpx_op_from_name("InstanceNormalization");
    n->opset = 6;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    const mpx_value *in[3] = {&x, &sc, &b};
    char what[160];
    snprintf(what, sizeof what, "case %d InstanceNormalization %lldx%lldx%lldx%lld exact %d", idx, (long long)N,
             (long long)C, (long long)H, (long long)W, exact);
    const int64_t S = H * W;
    for (int acc = 0; acc < N_ACCS; acc++) {
        mpx_value r;
        mpx_value_alloc(&r, MPX_DT_FLOAT, 4, xd, NULL);
        for (int64_t p = 0; p < N * C; p++) {
            const float *xp = x.f + p * S;
            racc a;
            ra_init(&a, ACCS[acc].f, ACCS[acc].block);
            for (int64_t k = 0; k < S; k++) ra_add(&a, true, xp[k], 1.0f);
            const float mean = ra_result(&a, NULL) / (float)S;
            ra_init(&a, ACCS[acc].f, ACCS[acc].block);
            for (int64_t k = 0; k < S; k++) {
                const float d = xp[k] - mean;
                ra_add(&a, true, d * d, 1.0f);
            }
            const float den = sqrtf(ra_result(&a, NULL) / (float)S + 1e-5f);
            for (int64_t k = 0; k < S; k++) r.f[p * S + k] = sc.f[p % C] * (xp[k] - mean) / den + b.f[p % C];
        }
        check(what, n, 3, in, acc, &r);
        mpx_value_free(&r);
    }
    mpx_value_free(&x);
    mpx_value_free(&sc);
    mpx_value_free(&b);
}

/* One axis of a linear half_pixel Resize (kern_resize.c axis_terms): the
 * fp32 source coordinate, its two neighbours' weights (one of weight 1 on a
 * whole coordinate; a weight of 0 is no term), indices clamped. */
static int rz_terms(int64_t in, float scale, int64_t x, int64_t *at, float *w) {
    const float xo = ((float)x + 0.5f) / scale - 0.5f;
    const double fl = floor((double)xo), r = (double)xo - fl;
    const int64_t x0 = (int64_t)fl;
#define RZ_CLAMP(i) ((i) < 0 ? 0 : (i) >= in ? in - 1 : (i))
    if (r == 0.0) {
        at[0] = RZ_CLAMP(x0), w[0] = 1.0f;
        return 1;
    }
    int n = 0;
    if (1.0 - r != 0.0) at[n] = RZ_CLAMP(x0), w[n++] = (float)(1.0 - r);
    at[n] = RZ_CLAMP(x0 + 1), w[n++] = (float)r;
#undef RZ_CLAMP
    return n;
}

/* Resize, linear, half_pixel (kern_resize.c): the sum along the last axis,
 * then along the one before over those sums, each a sum of fp32 products
 * (weight x value) through mpx_acc; one term of weight 1 passes its value. */
static void resize_case(int idx) {
    static const float scales[] = {0.5f, 0.75f, 1.0f, 1.5f, 2.0f, 3.0f};
    const int64_t N = rnd(1, 2), C = rnd(1, 3), H = rnd(1, 40), W = rnd(1, 40);
    const float sh = scales[rnd(0, 5)], sw = scales[rnd(0, 5)];
    const int64_t OH = (int64_t)floorf((float)H * sh), OW = (int64_t)floorf((float)W * sw);
    if (OH < 1 || OW < 1) return;
    int64_t xd[4] = {N, C, H, W}, sd[1] = {4}, yd[4] = {N, C, OH, OW};
    mpx_value x = value(4, xd, mpx_rng_unit(&rng) < 0.5), s;
    mpx_value_alloc(&s, MPX_DT_FLOAT, 1, sd, NULL);
    s.f[0] = 1.0f, s.f[1] = 1.0f, s.f[2] = sh, s.f[3] = sw;
    mpx_node *n = mpx_graph_add_node(G, "rz", "Resize", "", 3, 1, 1);
    n->op = mpx_op_from_name("Resize");
    n->opset = 13;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    n->attrs[0].name = "mode";
    n->attrs[0].type = MPX_ATTR_STRING;
    n->attrs[0].s = "linear";
    const mpx_value *in[3] = {&x, NULL, &s};
    char what[160];
    snprintf(what, sizeof what, "case %d Resize linear %lldx%lldx%lldx%lld scales %g %g", idx, (long long)N,
             (long long)C, (long long)H, (long long)W, (double)sh, (double)sw);
    for (int acc = 0; acc < N_ACCS; acc++) {
        mpx_value r;
        mpx_value_alloc(&r, MPX_DT_FLOAT, 4, yd, NULL);
        for (int64_t p = 0; p < N * C; p++)
            for (int64_t oh = 0; oh < OH; oh++) {
                int64_t ah[2], aw[2];
                float wh[2], ww[2];
                const int nh = rz_terms(H, sh, oh, ah, wh);
                for (int64_t ow = 0; ow < OW; ow++) {
                    const int nw = rz_terms(W, sw, ow, aw, ww);
                    float row[2];
                    for (int i = 0; i < nh; i++) {
                        const float *xr = x.f + (p * H + ah[i]) * W;
                        if (nw == 1 && ww[0] == 1.0f) {
                            row[i] = xr[aw[0]];
                            continue;
                        }
                        racc a;
                        ra_init(&a, ACCS[acc].f, ACCS[acc].block);
                        for (int j = 0; j < nw; j++) ra_add(&a, true, ww[j] * xr[aw[j]], 1.0f);
                        row[i] = ra_result(&a, NULL);
                    }
                    float v = row[0];
                    if (!(nh == 1 && wh[0] == 1.0f)) {
                        racc a;
                        ra_init(&a, ACCS[acc].f, ACCS[acc].block);
                        for (int i = 0; i < nh; i++) ra_add(&a, true, wh[i] * row[i], 1.0f);
                        v = ra_result(&a, NULL);
                    }
                    r.f[(p * OH + oh) * OW + ow] = v;
                }
            }
        check(what, n, 3, in, acc, &r);
        mpx_value_free(&r);
    }
    mpx_value_free(&x);
    mpx_value_free(&s);
}

/* Einsum of two operands that is a batched matrix product (kern_einsum.c
 * ein_matmul): each output element's terms in the order of the summed
 * labels, row-major by first appearance, summed as MatMul sums (fp32: each
 * product fused into its block of 64). */
static void einsum_case(int idx) {
    static const char *const eqs[] = {"btd,bsd->bts", "bts,bsd->btd", "btd,ed->bte", "ij,kj->ik",
                                      "bij,bjk->bik", "ijk,jkl->li", "abc,dc->dab", "i,i->"};
    const char *eq = eqs[idx % 8];
    int64_t sz[26];
    for (int l = 0; l < 26; l++) sz[l] = idx % 10 == 9 && idx % 8 != 5 ? rnd(1, 64) : rnd(1, 20);
    const char *arrow = strstr(eq, "->"), *comma = strchr(eq, ',');
    const char *terms[3] = {eq, comma + 1, arrow + 2};
    const int lens[3] = {(int)(comma - eq), (int)(arrow - comma - 1), (int)strlen(arrow + 2)};
    int64_t d[3][8];
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < lens[t]; p++) d[t][p] = sz[terms[t][p] - 'a'];
    const bool exact = mpx_rng_unit(&rng) < 0.5;
    mpx_value a = value(lens[0], d[0], exact), b = value(lens[1], d[1], exact);
    mpx_node *n = mpx_graph_add_node(G, "ein", "Einsum", "", 2, 1, 1);
    n->op = mpx_op_from_name("Einsum");
    n->opset = 12;
    n->outputs[0] = mpx_graph_tensor(G, "y");
    n->attrs[0].name = "equation";
    n->attrs[0].type = MPX_ATTR_STRING;
    n->attrs[0].s = eq;
    const mpx_value *in[2] = {&a, &b};
    /* the summed labels by first appearance */
    char sum[8];
    int ns = 0;
    for (const char *q = eq; q < arrow; q++)
        if (*q != ',' && !strchr(terms[2], *q) && !memchr(sum, *q, (size_t)ns)) sum[ns++] = *q;
    char what[160];
    snprintf(what, sizeof what, "case %d Einsum %s exact %d", idx, eq, exact);
    for (int acc = 0; acc < N_ACCS; acc++) {
        mpx_value r;
        mpx_value_alloc(&r, MPX_DT_FLOAT, lens[2], d[2], NULL);
        int64_t at[26] = {0};
        for (int64_t y = 0; y < r.n; y++) {
            int64_t rest = y;
            for (int p = lens[2] - 1; p >= 0; p--) at[terms[2][p] - 'a'] = rest % d[2][p], rest /= d[2][p];
            int64_t K = 1;
            for (int i = 0; i < ns; i++) K *= sz[sum[i] - 'a'];
            racc s;
            ra_init(&s, ACCS[acc].f, ACCS[acc].block);
            for (int64_t k = 0; k < K; k++) {
                int64_t kr = k;
                for (int i = ns - 1; i >= 0; i--) at[sum[i] - 'a'] = kr % sz[sum[i] - 'a'], kr /= sz[sum[i] - 'a'];
                int64_t oa = 0, ob = 0;
                for (int p = 0; p < lens[0]; p++) oa = oa * d[0][p] + at[terms[0][p] - 'a'];
                for (int p = 0; p < lens[1]; p++) ob = ob * d[1][p] + at[terms[1][p] - 'a'];
                ra_add(&s, true, a.f[oa], b.f[ob]);
            }
            r.f[y] = ra_result(&s, NULL);
        }
        check(what, n, 2, in, acc, &r);
        mpx_value_free(&r);
    }
    mpx_value_free(&a);
    mpx_value_free(&b);
}

int main(int argc, char **argv) {
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    mpx_rng_init(&rng, argc > 2 ? strtoull(argv[2], NULL, 10) : 20240612);
    G = mpx_graph_new("kern_check");
    for (int i = 0; i < cases; i++) {
        const bool big = i % 10 == 9;
        const double u = mpx_rng_unit(&rng);
        if (u < 0.55) conv_case(i, false, big, false, false, false, CK_ANY);
        else if (u < 0.75) conv_case(i, true, big, false, false, false, CK_ANY);
        else matmul_case(i, big);
    }
    for (int i = 0; i < cases / 10; i++) conv_case(i, false, false, true, false, false, CK_ANY);
    for (int i = 0; i < cases / 5; i++) conv_case(i, false, false, false, true, false, CK_ANY);
    /* 1x1 convolutions with few input channels on maps of 2000 to 4300
     * outputs, odd widths and heights (N odd: a partial last panel): on two
     * threads the GEMM core cuts them into narrower bands rather than
     * blocks of rows (kern_gemm.c kg_run) */
    for (int i = 0; i < cases / 15; i++) conv_case(i, false, false, false, false, true, CK_ANY);
    /* 3x3 convolutions with more weights than input values (a ResNet's
     * 28 x 28 stage): on two threads and more each thread takes its own
     * blocks of A's rows across every band (kern_gemm.c kg_ctx.amajor);
     * the others split B's columns and fill the input copy by the bands
     * of rows their items read (kg_fill_bands) */
    for (int i = 0; i < cases / 30; i++) conv_case(i, false, false, false, false, false, CK_WIDE_A);
    /* convolutions on maps of at most 512 outputs and 32 channels or more
     * (a ResNet's last two stages): the output channels in the lanes
     * (kern_gemm.c kg_lanes_run), on the threads by blocks of channels */
    for (int i = 0; i < cases / 10; i++) conv_case(i, false, false, false, false, false, CK_NARROW);
    for (int i = 0; i < cases / 10; i++) rnn_case(i, i % 4 == 3);
    for (int i = 0; i < cases / 10; i++) attn_case(i, i % 4 == 3);
    for (int i = 0; i < cases / 5; i++) conv3_case(i);
    for (int i = 0; i < cases / 10; i++) inorm_case(i);
    for (int i = 0; i < cases / 5; i++) resize_case(i);
    for (int i = 0; i < cases / 5; i++) einsum_case(i);
    mpx_graph_free(G);
    printf("kern_check: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
