/* test_kern_nn.c - the nn kernels (numerics/kern_nn.c, kern_pool.c, kern_norm.c,
 * kern_resize.c): random cases against naive computations written here from
 * the operator definitions (bit for bit, since both add the terms in the
 * documented order), ONNX's operator examples (values from python3-onnx
 * 1.12's backend test cases), accumulation in fp16/bf16 (per addition and
 * blocked), and inputs that must be refused with a message. */
#include "check.h"
#include "mpx_numerics.h"
#include "kern_internal.h" /* mpx_acc: the order sums follow */

#include <fp16.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static mpx_graph *G;
static mpx_error err;
static mpx_rng rng;

/* ---- values --------------------------------------------------------------------- */

/* "2x3x4" ("" is a scalar). */
static int parse_shape(const char *s, int64_t *d) {
    int r = 0;
    while (*s) {
        char *end;
        d[r++] = strtoll(s, &end, 10);
        s = *end == 'x' ? end + 1 : end;
    }
    return r;
}

static mpx_value vzero(mpx_dtype dt, const char *shape) {
    int64_t d[MPX_MAX_RANK];
    int r = parse_shape(shape, d);
    mpx_value v;
    mpx_value_alloc(&v, dt, r, d, NULL);
    return v;
}

static mpx_value vdata(const char *shape, const float *data) {
    mpx_value v = vzero(MPX_DT_FLOAT, shape);
    memcpy(v.f, data, (size_t)v.n * sizeof *v.f);
    return v;
}

static mpx_value vints(const char *shape, const int64_t *data) {
    mpx_value v = vzero(MPX_DT_INT64, shape);
    memcpy(v.i, data, (size_t)v.n * sizeof *v.i);
    return v;
}

/* 1, 2, 3, ... (start 0 or 1), as ONNX's examples. */
static mpx_value vseq(const char *shape, float start) {
    mpx_value v = vzero(MPX_DT_FLOAT, shape);
    for (int64_t i = 0; i < v.n; i++) v.f[i] = start + (float)i;
    return v;
}

static mpx_value vfill(const char *shape, float x) {
    mpx_value v = vzero(MPX_DT_FLOAT, shape);
    for (int64_t i = 0; i < v.n; i++) v.f[i] = x;
    return v;
}

/* Uniform in [-1, 1), rounded to fp16 so products are exact in fp32. */
static mpx_value vrand(const char *shape) {
    mpx_value v = vzero(MPX_DT_FLOAT, shape);
    for (int64_t i = 0; i < v.n; i++)
        v.f[i] = mpx_round_scalar(&mpx_format_fp16, (float)(2.0 * mpx_rng_unit(&rng) - 1.0));
    return v;
}

static mpx_value absent(void) {
    mpx_value v;
    memset(&v, 0, sizeof v);
    v.n = -1;
    return v;
}

/* ---- nodes ----------------------------------------------------------------------- */

static int count_tokens(const char *s) {
    int n = 0;
    for (const char *p = s; *p;) {
        p += strspn(p, " ");
        if (!*p) break;
        n++;
        p += strcspn(p, " ");
    }
    return n;
}

/* "pads=[1,1,1,1] alpha=0.5 mode=linear scales=[1.0,2.0] group=2" */
static void parse_attr(mpx_attr *a, const char *tok) {
    size_t n = strcspn(tok, "=");
    a->name = mpx_arena_strndup(G->arena, tok, n);
    const char *v = tok + n + 1;
    char *end;
    if (*v == '[') {
        bool flt = strchr(v, '.') != NULL;
        a->type = flt ? MPX_ATTR_FLOATS : MPX_ATTR_INTS;
        a->ints = mpx_arena_calloc(G->arena, 16, sizeof(int64_t));
        a->floats = mpx_arena_calloc(G->arena, 16, sizeof(float));
        for (const char *p = v + 1; *p && *p != ']'; p = *end == ',' ? end + 1 : end) {
            if (flt) a->floats[a->n++] = strtof(p, &end);
            else a->ints[a->n++] = strtoll(p, &end, 10);
            if (end == p) break;
        }
        return;
    }
    long long i = strtoll(v, &end, 10);
    if (end != v && !*end) {
        a->type = MPX_ATTR_INT;
        a->i = i;
        return;
    }
    double f = strtod(v, &end);
    if (end != v && !*end) {
        a->type = MPX_ATTR_FLOAT;
        a->f = (float)f;
        return;
    }
    a->type = MPX_ATTR_STRING;
    a->s = mpx_arena_strdup(G->arena, v);
    a->s_len = strlen(v);
}

/* A node of op at opset with n_in inputs; outs names the outputs ("-" for
 * an omitted one, e.g. "y - inv"). */
static mpx_node *node(const char *op, int opset, int n_in, const char *outs, const char *attrs) {
    G->opset = opset;
    mpx_node *n = mpx_graph_add_node(G, "/blk/n", op, "", n_in, count_tokens(outs), count_tokens(attrs));
    n->op = mpx_op_from_name(op);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", outs);
    int k = 0;
    char *save;
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save), k++)
        n->outputs[k] = strcmp(t, "-") ? mpx_graph_tensor(G, t) : NULL;
    snprintf(buf, sizeof buf, "%s", attrs);
    k = 0;
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save), k++) parse_attr(&n->attrs[k], t);
    return n;
}

/* Run n's kernel; out[0..n_out) come back allocated (or absent). */
static mpx_status run(const mpx_node *n, const mpx_format *acc, int block, int n_in,
                      const mpx_value *const *in, int n_out, mpx_value *out) {
    for (int i = 0; i < n_out; i++) out[i] = absent();
    mpx_error_clear(&err);
    mpx_kernel_fn fn = mpx_kernel_for(n->op);
    if (!fn) return mpx_error_set(&err, MPX_E_UNSUPPORTED, "no kernel for %s", n->op_type);
    /* fp16 accumulation comes with fp16 operands (every test's values are
     * fp16 values then), as in a node computing in fp16: the kernels' f16
     * paths (kg_gemm.f16) run, and must give the same bits. */
    mpx_kctx c = {.node = n, .acc = {.fmt = acc, .block = block}, .round = acc == &mpx_format_fp16 && block == 0 ? acc : NULL,
                  .err = &err};
    return fn(&c, in, n_in, out, n_out);
}

/* One output, fp32 accumulation; the value, or absent on error. */
static mpx_value run1(const mpx_node *n, int n_in, const mpx_value *const *in) {
    mpx_value y;
    if (run(n, NULL, 0, n_in, in, 1, &y) != MPX_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return absent();
    }
    return y;
}

static void vfree(int n, mpx_value *v) {
    for (int i = 0; i < n; i++) mpx_value_free(&v[i]);
}

/* ---- comparing ---------------------------------------------------------------------- */

static bool same_shape(const mpx_value *a, const char *shape) {
    int64_t d[MPX_MAX_RANK];
    int r = parse_shape(shape, d);
    if (a->n < 0 || a->rank != r) return false;
    for (int i = 0; i < r; i++)
        if (a->dims[i] != d[i]) return false;
    return true;
}

/* Equal bits (NaN equal to NaN). */
static void check_bits_(int line, const char *what, const mpx_value *got, const mpx_value *want) {
    bool ok = got->n == want->n && got->rank == want->rank && got->n >= 0;
    for (int i = 0; ok && i < got->rank; i++) ok = got->dims[i] == want->dims[i];
    int64_t bad = -1;
    for (int64_t k = 0; ok && k < got->n; k++) {
        float a = got->f[k], b = want->f[k];
        if (memcmp(&a, &b, sizeof a) != 0 && !(a != a && b != b)) {
            ok = false;
            bad = k;
        }
    }
    CHECK_MSG(ok, "line %d: %s: n %lld vs %lld; first difference at %lld: %.9g vs %.9g", line, what,
              (long long)got->n, (long long)want->n, (long long)bad, bad >= 0 ? (double)got->f[bad] : 0.0,
              bad >= 0 ? (double)want->f[bad] : 0.0);
}
#define CHECK_BITS(what, got, want) check_bits_(__LINE__, what, got, want)

/* Close to literal values: |d| <= atol + rtol |want| (ONNX's test tolerances). */
static void check_vals_(int line, const char *what, const mpx_value *got, const char *shape,
                        const float *want, double rtol) {
    bool ok = same_shape(got, shape);
    int64_t bad = -1;
    for (int64_t k = 0; ok && k < got->n; k++)
        if (!(fabs((double)got->f[k] - want[k]) <= 1e-7 + rtol * fabs(want[k]))) {
            ok = false;
            bad = k;
        }
    CHECK_MSG(ok, "line %d: %s: first difference at %lld: %.9g vs %.9g (shape ok: %d)", line, what,
              (long long)bad, bad >= 0 ? (double)got->f[bad] : 0.0, bad >= 0 ? (double)want[bad] : 0.0,
              same_shape(got, shape));
}
#define CHECK_VALS(what, got, shape, ...)                                                   \
    do {                                                                                    \
        static const float want_[] = {__VA_ARGS__};                                         \
        check_vals_(__LINE__, what, got, shape, want_, 1e-6);                               \
    } while (0)

/* ---- the naive references ------------------------------------------------------------- */

/* The accumulation rule of DESIGN section 3, written again from its text with
 * the slow reference rounding. */
typedef struct tacc {
    const mpx_format *f;
    int block, nb;
    float sum, blk;
} tacc;

static void ta_init(tacc *a, const mpx_format *f, int block, float init) {
    a->f = f, a->block = block, a->nb = 0, a->blk = 0.0f;
    a->sum = f ? mpx_round_scalar(f, init) : init;
}

static void ta_add(tacc *a, float t) {
    if (!a->f && a->block > 0) { /* fp32 in blocks (the GEMM core's order) */
        a->blk += t;
        if (++a->nb == a->block) {
            a->sum += a->blk;
            a->blk = 0.0f, a->nb = 0;
        }
    } else if (!a->f) {
        a->sum += t;
    } else if (a->block <= 0) {
        a->sum = mpx_round_sum(a->f, a->sum, t);
    } else {
        a->blk += t;
        if (++a->nb == a->block) {
            a->sum = mpx_round_sum(a->f, a->sum, mpx_round_scalar(a->f, a->blk));
            a->blk = 0.0f, a->nb = 0;
        }
    }
}

static float ta_result(tacc *a) {
    if (!a->f && a->block > 0 && a->nb > 0) {
        a->sum += a->blk;
        a->blk = 0.0f, a->nb = 0;
    }
    if (a->f && a->block > 0 && a->nb > 0) {
        a->sum = mpx_round_sum(a->f, a->sum, mpx_round_scalar(a->f, a->blk));
        a->blk = 0.0f, a->nb = 0;
    }
    return a->sum;
}

/* The bias: one more addition after the products. */
static float ta_finish(tacc *a, const float *bias) {
    float s = ta_result(a);
    if (!bias) return s;
    ta_add(a, *bias);
    return ta_result(a);
}

typedef struct convp {
    int nsp;
    int64_t k[3], s[3], d[3], pb[3], pe[3], opad[3];
    int64_t group;
} convp;

/* Conv with explicit pads: for every output value, input channel, then the
 * kernel taps in row-major order, skipping taps in the padding. */
static mpx_value ref_conv(const mpx_value *x, const mpx_value *w, const mpx_value *b, const convp *p,
                          const mpx_format *f, int block) {
    int nsp = p->nsp;
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], cig = C / p->group, mg = M / p->group;
    int64_t od[MPX_MAX_RANK] = {N, M}, in_pl = 1, out_pl = 1, k_pl = 1;
    for (int i = 0; i < nsp; i++) {
        od[2 + i] = (x->dims[2 + i] + p->pb[i] + p->pe[i] - (p->k[i] - 1) * p->d[i] - 1) / p->s[i] + 1;
        in_pl *= x->dims[2 + i];
        out_pl *= od[2 + i];
        k_pl *= p->k[i];
    }
    mpx_value y;
    mpx_value_alloc(&y, MPX_DT_FLOAT, 2 + nsp, od, NULL);
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < out_pl; o++) {
                int64_t oc[3], rem = o;
                for (int i = nsp - 1; i >= 0; i--) oc[i] = rem % od[2 + i], rem /= od[2 + i];
                tacc a;
                ta_init(&a, f, f ? block : MPX_ACC_FP32_BLOCK, 0.0f); /* fp32: the core's blocks of 64 */
                int64_t g = m / mg;
                for (int64_t ci = 0; ci < cig; ci++)
                    for (int64_t t = 0; t < k_pl; t++) {
                        int64_t tc[3], tr = t, xi = 0;
                        bool in = true;
                        for (int i = nsp - 1; i >= 0; i--) tc[i] = tr % p->k[i], tr /= p->k[i];
                        for (int i = 0; i < nsp; i++) {
                            int64_t pos = oc[i] * p->s[i] - p->pb[i] + tc[i] * p->d[i];
                            in = in && pos >= 0 && pos < x->dims[2 + i];
                            xi = xi * x->dims[2 + i] + pos;
                        }
                        /* fp32: a tap in the padding still takes its place in
                         * its block of 64, as a +-0 product (kern_gemm.h) */
                        if (!in) {
                            if (!f) ta_add(&a, 0.0f);
                            continue;
                        }
                        ta_add(&a, x->f[(n * C + g * cig + ci) * in_pl + xi] * w->f[(m * cig + ci) * k_pl + t]);
                    }
                y.f[(n * M + m) * out_pl + o] = ta_finish(&a, b ? &b->f[m] : NULL);
            }
    return y;
}

/* ConvTranspose with explicit pads and output_padding: for every output
 * value, input channel, then kernel taps in row-major order, where a tap
 * reaches the output from input position (o + pad - tap * dilation) / stride
 * when that divides exactly and lies inside the input. */
static mpx_value ref_convt(const mpx_value *x, const mpx_value *w, const mpx_value *b, const convp *p,
                           const mpx_format *f, int block) {
    int nsp = p->nsp;
    int64_t N = x->dims[0], C = x->dims[1], cig = C / p->group, mg = w->dims[1], M = mg * p->group;
    int64_t od[MPX_MAX_RANK] = {N, M}, in_pl = 1, out_pl = 1, k_pl = 1;
    for (int i = 0; i < nsp; i++) {
        od[2 + i] = p->s[i] * (x->dims[2 + i] - 1) + p->opad[i] + (p->k[i] - 1) * p->d[i] + 1 - p->pb[i] - p->pe[i];
        in_pl *= x->dims[2 + i];
        out_pl *= od[2 + i];
        k_pl *= p->k[i];
    }
    mpx_value y;
    mpx_value_alloc(&y, MPX_DT_FLOAT, 2 + nsp, od, NULL);
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < out_pl; o++) {
                int64_t oc[3], rem = o, g = m / mg;
                for (int i = nsp - 1; i >= 0; i--) oc[i] = rem % od[2 + i], rem /= od[2 + i];
                tacc a;
                ta_init(&a, f, block, 0.0f);
                for (int64_t ci = 0; ci < cig; ci++)
                    for (int64_t t = 0; t < k_pl; t++) {
                        int64_t tc[3], tr = t, xi = 0;
                        bool in = true;
                        for (int i = nsp - 1; i >= 0; i--) tc[i] = tr % p->k[i], tr /= p->k[i];
                        for (int i = 0; i < nsp; i++) {
                            int64_t num = oc[i] + p->pb[i] - tc[i] * p->d[i];
                            in = in && num >= 0 && num % p->s[i] == 0 && num / p->s[i] < x->dims[2 + i];
                            xi = xi * x->dims[2 + i] + (in ? num / p->s[i] : 0);
                        }
                        if (!in) continue;
                        int64_t cg = g * cig + ci;
                        ta_add(&a, x->f[(n * C + cg) * in_pl + xi] * w->f[(cg * mg + (m - g * mg)) * k_pl + t]);
                    }
                y.f[(n * M + m) * out_pl + o] = ta_finish(&a, b ? &b->f[m] : NULL);
            }
    return y;
}

static convp cp2(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                 int64_t pl, int64_t pb, int64_t pr, int64_t group) {
    convp p = {.nsp = 2, .k = {kh, kw}, .s = {sh, sw}, .d = {dh, dw}, .pb = {pt, pl}, .pe = {pb, pr}, .group = group};
    return p;
}

/* ---- Conv ------------------------------------------------------------------------------- */

/* x, w, b random; the kernel against ref_conv in fp32, fp16 per addition and
 * bf16 in blocks of 3, bit for bit. */
static void conv_case(int line, const char *xs, const char *ws, bool bias, const convp *p, const char *attrs) {
    mpx_value x = vrand(xs), w = vrand(ws), b = absent();
    if (bias) {
        char bs[32];
        snprintf(bs, sizeof bs, "%lld", (long long)w.dims[0]);
        b = vrand(bs);
    }
    const mpx_value *in[3] = {&x, &w, bias ? &b : NULL};
    mpx_node *n = node("Conv", 13, 3, "y", attrs);
    const mpx_format *fs[3] = {NULL, &mpx_format_fp16, &mpx_format_bf16};
    int blocks[3] = {0, 0, 3};
    for (int k = 0; k < 3; k++) {
        mpx_value y, r = ref_conv(&x, &w, bias ? &b : NULL, p, fs[k], blocks[k]);
        mpx_status st = run(n, fs[k], blocks[k], 3, in, 1, &y);
        CHECK_MSG(st == MPX_OK, "line %d: %s", line, err.msg);
        char what[64];
        snprintf(what, sizeof what, "conv line %d acc %s", line, fs[k] ? fs[k]->name : "fp32");
        if (st == MPX_OK) CHECK_BITS(what, &y, &r);
        mpx_value_free(&y);
        mpx_value_free(&r);
    }
    mpx_value_free(&x);
    mpx_value_free(&w);
    mpx_value_free(&b);
}

static void test_conv(void) {
    convp p;
    p = cp2(3, 2, 1, 2, 1, 2, 1, 0, 2, 1, 2);
    conv_case(__LINE__, "2x4x7x9", "6x2x3x2", true, &p, "group=2 strides=[1,2] dilations=[1,2] pads=[1,0,2,1]");
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6);
    conv_case(__LINE__, "1x6x9x9", "6x1x3x3", true, &p, "group=6 pads=[1,1,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1); /* 4-channel register tiles over a strided input */
    conv_case(__LINE__, "1x3x16x37", "8x3x3x3", true, &p, "strides=[2,2] pads=[1,1,1,1]");
    p = cp2(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1); /* 1x1: one row over 1200 positions, chunked */
    conv_case(__LINE__, "1x5x40x30", "7x5x1x1", true, &p, "");
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1); /* rows longer than a chunk */
    conv_case(__LINE__, "1x2x3x700", "9x2x3x3", false, &p, "pads=[1,1,1,1] kernel_shape=[3,3]");
    p = cp2(2, 5, 3, 1, 2, 1, 0, 3, 1, 0, 1); /* kernel wider than its padded row in places */
    conv_case(__LINE__, "2x2x8x6", "4x2x2x5", true, &p, "strides=[3,1] dilations=[2,1] pads=[0,3,1,0]");
    p = cp2(1, 3, 1, 1, 1, 1, 0, 290, 0, 290, 1); /* padding wider than a chunk */
    conv_case(__LINE__, "1x1x1x300", "4x1x1x3", true, &p, "pads=[0,290,0,290]");
    p = cp2(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1); /* squeeze-excitation: 1x1 on a 1x1 map, one column */
    conv_case(__LINE__, "1x130x1x1", "40x130x1x1", true, &p, "");
    p = cp2(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2);
    conv_case(__LINE__, "2x260x1x1", "20x130x1x1", true, &p, "group=2");
    /* depthwise on narrow maps (16 channels in the lanes): a partial group
     * of channels, strides, dilations, uneven pads, two images */
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20);
    conv_case(__LINE__, "2x20x9x11", "20x1x3x3", true, &p, "group=20 pads=[1,1,1,1]");
    p = cp2(5, 5, 2, 2, 1, 1, 2, 1, 2, 3, 35);
    conv_case(__LINE__, "1x35x14x13", "35x1x5x5", true, &p, "group=35 strides=[2,2] pads=[2,1,2,3]");
    p = cp2(3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 16);
    conv_case(__LINE__, "1x16x7x23", "16x1x3x3", false, &p, "group=16 dilations=[2,2] pads=[2,2,2,2]");
    /* the narrow path's sliding rows (kernels 3, 5 and 7 wide, column
     * stride 1 or 2): rows of 4, 5, 9 (blocks of 5 and 4: the last moved
     * back), 17 and 23 outputs; a row dilation; 7 x 7 taps, 49 in one
     * block; a 1 x 3 kernel; no bias */
    p = cp2(7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 17);
    conv_case(__LINE__, "1x17x9x9", "17x1x7x7", true, &p, "group=17 pads=[3,3,3,3]");
    p = cp2(7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 16);
    conv_case(__LINE__, "2x16x33x33", "16x1x7x7", false, &p, "group=16 strides=[2,2] pads=[3,3,3,3]");
    p = cp2(5, 5, 1, 1, 2, 1, 4, 2, 4, 2, 18);
    conv_case(__LINE__, "1x18x6x17", "18x1x5x5", true, &p, "group=18 dilations=[2,1] pads=[4,2,4,2]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24);
    conv_case(__LINE__, "1x24x10x45", "24x1x3x3", true, &p, "group=24 strides=[2,2] pads=[1,1,1,1]");
    p = cp2(1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 16);
    conv_case(__LINE__, "1x16x3x5", "16x1x1x3", true, &p, "group=16 pads=[0,1,0,1]");
    /* at column stride 1 the narrow path takes rows up to 56 wide: 28 (4
     * blocks of 7), 25 (the last block moved back), a 5 x 5 kernel; 56 */
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20);
    conv_case(__LINE__, "1x20x6x28", "20x1x3x3", true, &p, "group=20 pads=[1,1,1,1]");
    p = cp2(5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 17);
    conv_case(__LINE__, "1x17x5x25", "17x1x5x5", false, &p, "group=17 pads=[2,2,2,2]");
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16);
    conv_case(__LINE__, "1x16x4x56", "16x1x3x3", true, &p, "group=16 pads=[1,1,1,1]");
    p = cp2(3, 3, 1, 2, 1, 1, 0, 0, 0, 0, 16);
    conv_case(__LINE__, "1x16x4x10", "16x1x3x3", false, &p, "group=16 strides=[1,2]");
    /* the wide path's pairs of rows: an odd row count, rows of 45 (32 and
     * 13) and 40 outputs; 9 x 9 taps (81: two blocks, a row at a time) */
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3);
    conv_case(__LINE__, "1x3x7x45", "3x1x3x3", true, &p, "group=3 pads=[1,1,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 2);
    conv_case(__LINE__, "2x2x11x80", "2x1x3x3", false, &p, "group=2 strides=[2,2] pads=[1,0,1,1]");
    p = cp2(9, 9, 1, 1, 1, 1, 4, 4, 4, 4, 2);
    conv_case(__LINE__, "1x2x6x40", "2x1x9x9", true, &p, "group=2 pads=[4,4,4,4]");
    /* column stride 2 over inputs 16 or more wide (fill's one pass a row,
     * both phases: 16-column blocks, the last moved back, an odd width's
     * last column): MobileNetV3's wide depthwise shape, left pads 1, 2 and
     * 0 (each parity of the phases), odd widths, a width of one block; and
     * the GEMM core's strip (a full convolution) */
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3);
    conv_case(__LINE__, "1x3x12x56", "3x1x3x3", true, &p, "group=3 strides=[2,2] pads=[1,1,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2);
    conv_case(__LINE__, "2x2x9x51", "2x1x3x3", false, &p, "group=2 strides=[2,2] pads=[1,1,1,1]");
    p = cp2(5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 2);
    conv_case(__LINE__, "1x2x8x67", "2x1x5x5", true, &p, "group=2 strides=[2,2] pads=[2,2,2,2]");
    p = cp2(3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2);
    conv_case(__LINE__, "1x2x6x16", "2x1x3x3", true, &p, "group=2 strides=[2,2] pads=[0,0,1,1]");
    conv_case(__LINE__, "1x2x7x33", "2x1x3x3", true, &p, "group=2 strides=[2,2] pads=[0,0,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
    conv_case(__LINE__, "1x3x10x57", "5x3x3x3", true, &p, "strides=[2,2] pads=[1,1,1,1]");
    /* the AVX-512 fill's 32-column steps: a width of exactly one step,
     * one and a half (the last step moved back), an odd width past two */
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2);
    conv_case(__LINE__, "1x2x5x32", "2x1x3x3", true, &p, "group=2 strides=[2,2] pads=[1,1,1,1]");
    conv_case(__LINE__, "1x2x5x48", "2x1x3x3", false, &p, "group=2 strides=[2,2] pads=[1,1,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2);
    conv_case(__LINE__, "1x2x4x95", "2x1x3x3", true, &p, "group=2 strides=[2,2] pads=[0,0,1,1]");
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1); /* terms beyond one fp32 block of 64 */
    conv_case(__LINE__, "1x16x5x5", "9x16x3x3", true, &p, "pads=[1,1,1,1]");
    /* unit column stride: a grid row is its left padding and the input row,
     * the taps past it read the next row's left padding (more right than
     * left padding; more left than right, dilated, on the wide depthwise
     * path; 50 rows of A on a 7 x 7 map, split in row blocks) */
    p = cp2(3, 3, 1, 1, 1, 1, 1, 0, 0, 2, 1);
    conv_case(__LINE__, "1x3x6x9", "4x3x3x3", true, &p, "pads=[1,0,0,2]");
    p = cp2(3, 3, 1, 1, 1, 2, 1, 3, 1, 1, 16);
    conv_case(__LINE__, "1x16x5x60", "16x1x3x3", true, &p, "group=16 dilations=[1,2] pads=[1,3,1,1]");
    p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    conv_case(__LINE__, "1x8x7x7", "50x8x3x3", true, &p, "pads=[1,1,1,1]");
    /* narrow maps with the output channels in the lanes (AVX-512): 64
     * channels, 88 (a partial 16) without bias, stride 2 over two images */
    conv_case(__LINE__, "1x8x7x7", "64x8x3x3", true, &p, "pads=[1,1,1,1]");
    conv_case(__LINE__, "1x9x7x7", "88x9x3x3", false, &p, "pads=[1,1,1,1]");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
    conv_case(__LINE__, "2x8x14x14", "96x8x3x3", true, &p, "strides=[2,2] pads=[1,1,1,1]");
    p = cp2(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1); /* 1x1: B read where it lies, no grid */
    conv_case(__LINE__, "1x70x7x7", "48x70x1x1", true, &p, "");
    convp p1 = {.nsp = 1, .k = {4}, .s = {2}, .d = {2}, .pb = {2}, .pe = {1}, .group = 1};
    conv_case(__LINE__, "2x3x11", "5x3x4", false, &p1, "strides=[2] pads=[2,1] dilations=[2]");
    convp p3 = {.nsp = 3, .k = {2, 3, 2}, .s = {1, 2, 1}, .d = {1, 1, 1}, .pb = {1, 0, 1}, .pe = {0, 1, 1}, .group = 1};
    conv_case(__LINE__, "1x2x5x6x7", "3x2x2x3x2", true, &p3, "strides=[1,2,1] pads=[1,0,1,0,1,1]");

    /* auto_pad against the explicit pads it stands for: in 6, kernel 3,
     * stride 2 -> out 3, total padding 1: SAME_UPPER (0, 1), SAME_LOWER (1, 0). */
    p = cp2(3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1);
    conv_case(__LINE__, "1x2x6x6", "3x2x3x3", true, &p, "strides=[2,2] auto_pad=SAME_UPPER");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1);
    conv_case(__LINE__, "1x2x6x6", "3x2x3x3", true, &p, "strides=[2,2] auto_pad=SAME_LOWER");
    p = cp2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1);
    conv_case(__LINE__, "1x2x6x6", "3x2x3x3", true, &p, "strides=[2,2] pads=[5,5,5,5] auto_pad=VALID");
    /* kernel 1 with stride 3 on 6: SAME needs no padding (the total is clamped at 0) */
    p = cp2(1, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1);
    conv_case(__LINE__, "1x2x6x6", "3x2x1x1", false, &p, "strides=[3,3] auto_pad=SAME_UPPER");

    /* ONNX's examples */
    mpx_value x = vseq("1x1x5x5", 0.0f), w = vfill("1x1x3x3", 1.0f), y;
    const mpx_value *in[2] = {&x, &w};
    y = run1(node("Conv", 11, 2, "y", "kernel_shape=[3,3] pads=[1,1,1,1]"), 2, in);
    CHECK_VALS("test_basic_conv_with_padding", &y, "1x1x5x5", 12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99,
               108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84);
    mpx_value_free(&y);
    y = run1(node("Conv", 11, 2, "y", "kernel_shape=[3,3] strides=[2,2] auto_pad=SAME_LOWER"), 2, in);
    CHECK_VALS("test_conv_with_autopad_same", &y, "1x1x3x3", 12, 27, 24, 63, 108, 81, 72, 117, 84);
    mpx_value_free(&y);
    mpx_value_free(&x);
    x = vseq("1x1x7x5", 0.0f);
    y = run1(node("Conv", 11, 2, "y", "kernel_shape=[3,3] pads=[1,0,1,0] strides=[2,2]"), 2, in);
    CHECK_VALS("test_conv_with_strides_and_asymmetric_padding", &y, "1x1x4x2", 21, 33, 99, 117, 189, 207, 171, 183);
    mpx_value_free(&y);
    vfree(1, &x);
    vfree(1, &w);
}

/* A weight that is infinite (an fp16 weight that overflowed): the GEMM core
 * would make NaN of the 0 * inf products of padding taps, so it declines
 * while it packs the weights and the general path runs, where a tap in the
 * padding is no term. Output (0, 0) of channel 0 has the infinite tap in
 * the padding and stays finite; the rounded runs match the reference bit
 * for bit (the fp32 general path has its own row order, kern_nn.c). Also
 * through the one-column path (a 1x1 map: no padding, the product is
 * inf). */
static void test_conv_inf(void) {
    mpx_value x = vrand("1x2x6x7"), w = vrand("4x2x3x3");
    w.f[0] = INFINITY; /* channel 0, input channel 0, tap (0, 0) */
    const mpx_value *in[3] = {&x, &w, NULL};
    mpx_node *n = node("Conv", 13, 3, "y", "pads=[1,1,1,1]");
    convp p = cp2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    const mpx_format *fs[3] = {NULL, &mpx_format_fp16, &mpx_format_bf16};
    int blocks[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        mpx_value y, r = ref_conv(&x, &w, NULL, &p, fs[k], blocks[k]);
        mpx_status st = run(n, fs[k], blocks[k], 3, in, 1, &y);
        CHECK_MSG(st == MPX_OK, "conv inf: %s", err.msg);
        if (st == MPX_OK) {
            CHECK_MSG(isfinite(y.f[0]), "conv inf acc %s: output (0, 0) is %g, its infinite tap is in the padding",
                      fs[k] ? fs[k]->name : "fp32", (double)y.f[0]);
            if (fs[k]) CHECK_BITS(fs[k]->name, &y, &r);
        }
        vfree(1, &y);
        vfree(1, &r);
    }
    vfree(1, &x);
    vfree(1, &w);
    /* 1x1 convolution of a 1x1 map (a squeeze-excitation block's). */
    mpx_value x1 = vrand("1x8x1x1"), w1 = vrand("5x8x1x1"), y1;
    w1.f[3] = -INFINITY;
    const mpx_value *in1[3] = {&x1, &w1, NULL};
    CHECK(run(node("Conv", 13, 3, "y", ""), NULL, 0, 3, in1, 1, &y1) == MPX_OK);
    CHECK_MSG(y1.n == 5 && isinf(y1.f[0]) && isfinite(y1.f[1]), "1x1 conv with an infinite weight: %g %g",
              y1.n == 5 ? (double)y1.f[0] : 0.0, y1.n == 5 ? (double)y1.f[1] : 0.0);
    vfree(1, &x1);
    vfree(1, &w1);
    vfree(1, &y1);
}

/* ---- ConvTranspose ------------------------------------------------------------------ */

static void convt_case(int line, const char *xs, const char *ws, bool bias, const convp *p, const char *attrs) {
    mpx_value x = vrand(xs), w = vrand(ws), b = absent();
    if (bias) {
        char bs[32];
        snprintf(bs, sizeof bs, "%lld", (long long)(w.dims[1] * p->group));
        b = vrand(bs);
    }
    const mpx_value *in[3] = {&x, &w, bias ? &b : NULL};
    mpx_node *n = node("ConvTranspose", 13, 3, "y", attrs);
    const mpx_format *fs[3] = {NULL, &mpx_format_fp16, &mpx_format_bf16};
    int blocks[3] = {0, 0, 2};
    for (int k = 0; k < 3; k++) {
        mpx_value y, r = ref_convt(&x, &w, bias ? &b : NULL, p, fs[k], blocks[k]);
        mpx_status st = run(n, fs[k], blocks[k], 3, in, 1, &y);
        CHECK_MSG(st == MPX_OK, "line %d: %s", line, err.msg);
        char what[64];
        snprintf(what, sizeof what, "convtranspose line %d acc %s", line, fs[k] ? fs[k]->name : "fp32");
        if (st == MPX_OK) CHECK_BITS(what, &y, &r);
        mpx_value_free(&y);
        mpx_value_free(&r);
    }
    vfree(1, &x);
    vfree(1, &w);
    vfree(1, &b);
}

static void test_conv_transpose(void) {
    convp p = cp2(3, 2, 3, 2, 1, 2, 1, 0, 0, 1, 2);
    p.opad[0] = 1, p.opad[1] = 1;
    convt_case(__LINE__, "2x4x3x4", "4x2x3x2", true, &p,
               "group=2 strides=[3,2] pads=[1,0,0,1] output_padding=[1,1] dilations=[1,2]");
    p = cp2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1);
    convt_case(__LINE__, "1x3x5x6", "3x5x2x2", false, &p, "strides=[2,2]");
    /* SAME_UPPER: out = in * stride; total padding 2*2 + 3 - 6 = 1, put at the end */
    p = cp2(3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1);
    convt_case(__LINE__, "1x2x3x3", "2x2x3x3", true, &p, "strides=[2,2] auto_pad=SAME_UPPER");
    p = cp2(3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1);
    convt_case(__LINE__, "1x2x3x3", "2x2x3x3", true, &p, "strides=[2,2] auto_pad=SAME_LOWER");
    /* output_shape 10x8 from 3x3, strides 3x2, kernel 3: totals -1 -> pads (0, -1) */
    p = cp2(3, 3, 3, 2, 1, 1, 0, 0, -1, -1, 1);
    convt_case(__LINE__, "1x1x3x3", "1x2x3x3", false, &p, "strides=[3,2] output_shape=[10,8]");
    convp p1 = {.nsp = 1, .k = {3}, .s = {2}, .d = {1}, .pb = {1}, .pe = {1}, .group = 1};
    convt_case(__LINE__, "1x2x5", "2x3x3", true, &p1, "strides=[2] pads=[1,1]");

    /* ONNX's examples */
    mpx_value x = vseq("1x1x3x3", 0.0f), w = vfill("1x2x3x3", 1.0f), y;
    const mpx_value *in[2] = {&x, &w};
    y = run1(node("ConvTranspose", 11, 2, "y", "strides=[3,2] pads=[1,2,1,2]"), 2, in);
    CHECK_VALS("test_convtranspose_pads", &y, "1x2x7x3", 1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15,
               13, 7, 15, 1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15);
    mpx_value_free(&y);
    y = run1(node("ConvTranspose", 11, 2, "y", "strides=[2,2] auto_pad=SAME_UPPER"), 2, in);
    CHECK_VALS("test_convtranspose_autopad_same", &y, "1x2x6x6", 0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5,
               12, 7, 3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8, 0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3,
               2, 3, 3, 8, 5, 12, 7, 3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8);
    mpx_value_free(&y);
    y = run1(node("ConvTranspose", 11, 2, "y", "strides=[3,2] output_shape=[10,8] kernel_shape=[3,3] output_padding=[1,1]"), 2, in);
    CHECK(same_shape(&y, "1x2x10x8") && y.f[7] == 0.0f && y.f[8 * 3 + 2] == 7.0f && y.f[79] == 0.0f);
    mpx_value_free(&y);
    vfree(1, &w);
    mpx_value_free(&x);
    static const float xd[] = {3, 8, 1, 9, 5, 7, 3, 2, 6}, wd[] = {7, 2, 1, 9};
    x = vdata("1x1x3x3", xd);
    w = vdata("1x1x2x2", wd);
    y = run1(node("ConvTranspose", 11, 2, "y", "dilations=[2,2]"), 2, in);
    CHECK_VALS("test_convtranspose_dilations", &y, "1x1x5x5", 21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76,
               21, 9, 5, 88, 45, 63, 3, 2, 33, 18, 54);
    mpx_value_free(&y);
    vfree(1, &x);
    vfree(1, &w);
}

/* ---- Gemm, MatMul --------------------------------------------------------------------- */

/* Y = alpha * A'B' + beta * C, k in order, then alpha, then beta * C as one
 * more addition. */
static mpx_value ref_gemm(const mpx_value *a, const mpx_value *b, const mpx_value *c, bool ta, bool tb,
                          float alpha, float beta, const mpx_format *f, int block) {
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1], N = b->dims[tb ? 0 : 1];
    int64_t d[2] = {M, N};
    mpx_value y;
    mpx_value_alloc(&y, MPX_DT_FLOAT, 2, d, NULL);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            tacc s;
            /* fp32: blocks of 64 terms, each summed from 0 (kern_gemm.h) */
            ta_init(&s, f, f ? block : MPX_ACC_FP32_BLOCK, 0.0f);
            for (int64_t k = 0; k < K; k++)
                ta_add(&s, a->f[ta ? k * M + i : i * K + k] * b->f[tb ? j * K + k : k * N + j]);
            float v = alpha * ta_result(&s);
            if (c && beta != 0.0f) {
                int64_t ci = 0;
                if (c->rank == 1) ci = c->dims[0] == 1 ? 0 : j;
                if (c->rank == 2) ci = (c->dims[0] == 1 ? 0 : i) * c->dims[1] + (c->dims[1] == 1 ? 0 : j);
                ta_init(&s, f, block, v);
                ta_add(&s, beta * c->f[ci]);
                v = ta_result(&s);
            }
            y.f[i * N + j] = v;
        }
    return y;
}

static void test_gemm(void) {
    struct {
        const char *a, *b, *c, *attrs;
        bool ta, tb;
        float alpha, beta;
    } cs[] = {
        {"5x3", "4x5", "4", "transA=1 transB=1 alpha=0.5 beta=2.0", true, true, 0.5f, 2.0f},
        {"3x5", "5x4", "3x1", "", false, false, 1.0f, 1.0f},
        {"3x5", "5x4", "", "alpha=3.0", false, false, 3.0f, 1.0f},
        {"3x7", "4x7", "1x1", "transB=1", false, true, 1.0f, 1.0f},
        {"9x6", "9x600", "6x600", "transA=1 beta=-1.5", true, false, 1.0f, -1.5f},
        {"2x3", "3x2", "", "beta=0.0", false, false, 1.0f, 0.0f},
        /* transB with few rows runs as Y^T = B A^T (one row: no copy at
         * all); with many, B is transposed in tiles (partial ones here) */
        {"1x130", "200x130", "200", "transB=1", false, true, 1.0f, 1.0f},
        {"2x100", "300x100", "", "transB=1 alpha=0.5", false, true, 0.5f, 1.0f},
        {"100x3", "90x100", "3x90", "transA=1 transB=1", true, true, 1.0f, 1.0f},
        {"70x40", "50x40", "", "transB=1", false, true, 1.0f, 1.0f},
        {"3x130", "130x4", "", "", false, false, 1.0f, 1.0f},
    };
    const mpx_format *fs[3] = {NULL, &mpx_format_fp16, &mpx_format_bf16};
    int blocks[3] = {0, 0, 4};
    for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
        mpx_value a = vrand(cs[t].a), b = vrand(cs[t].b), c = cs[t].c[0] ? vrand(cs[t].c) : absent();
        const mpx_value *in[3] = {&a, &b, cs[t].c[0] ? &c : NULL};
        mpx_node *n = node("Gemm", 13, 3, "y", cs[t].attrs);
        for (int k = 0; k < 3; k++) {
            mpx_value y, r = ref_gemm(&a, &b, in[2], cs[t].ta, cs[t].tb, cs[t].alpha, cs[t].beta, fs[k], blocks[k]);
            mpx_status st = run(n, fs[k], blocks[k], 3, in, 1, &y);
            CHECK_MSG(st == MPX_OK, "gemm %zu: %s", t, err.msg);
            char what[64];
            snprintf(what, sizeof what, "gemm case %zu acc %s", t, fs[k] ? fs[k]->name : "fp32");
            if (st == MPX_OK) CHECK_BITS(what, &y, &r);
            vfree(1, &y);
            vfree(1, &r);
        }
        vfree(1, &a);
        vfree(1, &b);
        vfree(1, &c);
    }
    static const float ad[] = {1, 2, 3, 4}, bd[] = {5, 6, 7, 8}, cd[] = {1, 1};
    mpx_value a = vdata("2x2", ad), b = vdata("2x2", bd), c = vdata("2", cd), y;
    const mpx_value *in[3] = {&a, &b, &c};
    y = run1(node("Gemm", 13, 3, "y", ""), 3, in);
    CHECK_VALS("gemm 2x2", &y, "2x2", 20, 23, 44, 51);
    vfree(1, &y);
    vfree(1, &a);
    vfree(1, &b);
    vfree(1, &c);
}

/* MatMul on each broadcast pair of matrices against dot products in
 * order, bit for bit: in fp16 accumulation (each step rounded) and in fp32
 * (the GEMM core's order, kern_gemm.h: blocks of 64 fused multiply-adds,
 * each from 0, added to the running sum from +0). */
static void matmul_case(int line, const char *as, const char *bs, const char *ys) {
    mpx_value a = vrand(as), b = vrand(bs), y;
    const mpx_value *in[2] = {&a, &b};
    for (int fp32 = 0; fp32 < 2; fp32++) {
        mpx_status st = run(node("MatMul", 13, 2, "y", ""), fp32 ? NULL : &mpx_format_fp16, 0, 2, in, 1, &y);
        CHECK_MSG(st == MPX_OK && same_shape(&y, ys), "line %d: %s", line, err.msg);
        if (st != MPX_OK || !same_shape(&y, ys)) break;
        /* Check each output value against a dot product in order. */
        int ra = a.rank, rb = b.rank, ry = y.rank;
        int64_t K = a.dims[ra - 1], M = ra == 1 ? 1 : a.dims[ra - 2], N = rb == 1 ? 1 : b.dims[rb - 1];
        int64_t nb = y.n / (M * N);
        bool ok = true;
        for (int64_t bi = 0; bi < nb; bi++) {
            /* batch coordinates of y, then the broadcast offsets of a and b */
            int nbd = ry - (ra > 1) - (rb > 1);
            int64_t bc[MPX_MAX_RANK], rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
            for (int i = nbd - 1; i >= 0; i--) bc[i] = rem % y.dims[i], rem /= y.dims[i];
            for (int i = nbd - 1, ia = ra - 3, ib = rb - 3; i >= 0; i--, ia--, ib--) {
                if (ia >= 0) {
                    oa += (a.dims[ia] == 1 ? 0 : bc[i]) * sa;
                    sa *= a.dims[ia];
                }
                if (ib >= 0) {
                    ob += (b.dims[ib] == 1 ? 0 : bc[i]) * sb;
                    sb *= b.dims[ib];
                }
            }
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    const float *ar = a.f + oa * M * K + i * K, *bc0 = b.f + ob * K * N + j;
                    float want;
                    if (fp32) {
                        float sum = 0.0f, blk = 0.0f;
                        for (int64_t k = 0; k < K; k++) {
                            blk = fmaf(ar[k], bc0[k * N], blk);
                            if (k % MPX_ACC_FP32_BLOCK == MPX_ACC_FP32_BLOCK - 1 || k == K - 1) sum += blk, blk = 0.0f;
                        }
                        want = sum;
                    } else {
                        tacc s;
                        ta_init(&s, &mpx_format_fp16, 0, 0.0f);
                        for (int64_t k = 0; k < K; k++) ta_add(&s, ar[k] * bc0[k * N]);
                        want = ta_result(&s);
                    }
                    ok = ok && memcmp(&y.f[bi * M * N + i * N + j], &want, sizeof want) == 0;
                }
        }
        CHECK_MSG(ok, "line %d: MatMul %s x %s values (%s)", line, as, bs, fp32 ? "fp32" : "fp16 accumulation");
        vfree(1, &y);
    }
    vfree(1, &a);
    vfree(1, &b);
}

static void test_matmul(void) {
    matmul_case(__LINE__, "3", "3", "");
    matmul_case(__LINE__, "3", "3x4", "4");
    matmul_case(__LINE__, "2x3", "3", "2");
    matmul_case(__LINE__, "2x1x3x4", "5x4x2", "2x5x3x2");
    matmul_case(__LINE__, "4", "2x4x3", "2x3");
    matmul_case(__LINE__, "2x3x5", "5", "2x3");
    matmul_case(__LINE__, "6x700", "700x9", "6x9");
    matmul_case(__LINE__, "3x1x2x8", "1x4x8x5", "3x4x2x5");
    /* a batch of rows times one matrix runs as one product of all the rows
     * (torch's attention: [L, 1, E] x [E, 3E]): the same sums in order */
    matmul_case(__LINE__, "37x1x130", "130x20", "37x1x20");
    matmul_case(__LINE__, "2x3x5x70", "70x9", "2x3x5x9");
    /* batches whose A and B are each a matrix a slice or one for all (the
     * attention heads' products) run as one call of the GEMM core, a group
     * a slice; other broadcasts a product an item on the kernel threads:
     * the same sums either way (K past one block of 64, columns past one
     * band, rows in several panels) */
    matmul_case(__LINE__, "2x6x20x16", "2x6x16x21", "2x6x20x21");
    matmul_case(__LINE__, "3x1x20x16", "1x4x16x21", "3x4x20x21");
    matmul_case(__LINE__, "12x64x64", "12x64x64", "12x64x64");
    matmul_case(__LINE__, "3x37x130", "3x130x197", "3x37x197");
    matmul_case(__LINE__, "1x13x70", "5x70x33", "5x13x33");
    matmul_case(__LINE__, "4x13x70", "1x70x33", "4x13x33");
    matmul_case(__LINE__, "70", "3x70x33", "3x33");
    matmul_case(__LINE__, "3x2x70", "70", "3x2");
}

/* ---- fp16 accumulation's step with fp16 operands ---------------------------------------- */

/* A random fp16 value over the whole range: any sign and exponent (subnormals
 * included), any mantissa; one in 64 a special (+-inf, NaN, +-0, +-65504). */
static float rand_half_any(void) {
    static const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 65504.0f, -65504.0f, 1.0f};
    const uint64_t r = mpx_rng_next(&rng);
    if ((r & 63) == 0) return specials[(r >> 6) % 8];
    const int e = (int)((r >> 12) % 41) - 24;      /* 2^-24 .. 2^16: past the range both ways */
    const float m = 1.0f + (float)((r >> 20) & 1023) / 1024.0f;
    return mpx_round_scalar(&mpx_format_fp16, ((r >> 40) & 1 ? -1.0f : 1.0f) * ldexpf(m, e));
}

/* The step of an fp16-accumulated sum of a node computing in fp16 (kctx
 * round fp16: the GEMM core's kg_gemm.f16, on AVX2 ukrz's round-to-odd
 * under a round-towards-zero MXCSR) is the exact running sum + product
 * rounded once to fp16, for every fp16 running sum: y = A x B with K = 2,
 * A(i, 0) = fp16 bit pattern i (all 65536: infinities, NaNs, subnormals)
 * times B(0, j) = 1, then A(i, 1) B(1, j) over the whole fp16 range (ties,
 * overflow past 65504, products far below the sum's last bit), against
 * mpx_round_sum twice. Four draws of the products, 16 M steps. */
static void test_fp16_step(void) {
    mpx_value a = vzero(MPX_DT_FLOAT, "65536x2"), b = vzero(MPX_DT_FLOAT, "2x64"), y;
    const mpx_value *in[2] = {&a, &b};
    mpx_node *mm = node("MatMul", 13, 2, "y", "");
    for (int draw = 0; draw < 4; draw++) {
        for (int64_t i = 0; i < 65536; i++) {
            a.f[2 * i] = fp16_ieee_to_fp32_value((uint16_t)i);
            a.f[2 * i + 1] = rand_half_any();
        }
        for (int j = 0; j < 64; j++) b.f[j] = 1.0f, b.f[64 + j] = rand_half_any();
        mpx_status st = run(mm, &mpx_format_fp16, 0, 2, in, 1, &y); /* (run: an fp16 node) */
        CHECK_MSG(st == MPX_OK && same_shape(&y, "65536x64"), "draw %d: %s", draw, err.msg);
        if (st != MPX_OK || !same_shape(&y, "65536x64")) break;
        mpx_value want = vzero(MPX_DT_FLOAT, "65536x64");
        for (int64_t i = 0; i < 65536; i++)
            for (int64_t j = 0; j < 64; j++) {
                const float s0 = mpx_round_sum(&mpx_format_fp16, 0.0f, a.f[2 * i] * b.f[j]);
                want.f[i * 64 + j] = mpx_round_sum(&mpx_format_fp16, s0, a.f[2 * i + 1] * b.f[64 + j]);
            }
        CHECK_BITS("fp16 steps (row: the running sum's bit pattern)", &y, &want);
        vfree(1, &want);
        vfree(1, &y);
    }
    vfree(1, &a);
    vfree(1, &b);
}

/* ---- accumulation order: 2048 + 1 stays 2048 in fp16 ------------------------------------ */

static void test_accumulation(void) {
    mpx_value x = vfill("1x4096x1x1", 1.0f), w = vfill("1x4096x1x1", 1.0f), y;
    static const float b1[] = {1}, b3[] = {3};
    mpx_value bias1 = vdata("1", b1), bias3 = vdata("1", b3);
    const mpx_value *in[3] = {&x, &w, NULL};
    mpx_node *conv = node("Conv", 13, 3, "y", "");
    struct {
        const mpx_format *f;
        int block;
        const mpx_value *bias;
        float want;
    } cs[] = {
        {NULL, 0, NULL, 4096.0f},
        {&mpx_format_fp16, 0, NULL, 2048.0f},      /* 2048 + 1 rounds back to 2048 */
        {&mpx_format_fp16, 16, NULL, 4096.0f},     /* blocks of 16: 2048 + 16 is exact */
        {&mpx_format_fp16, 0, &bias1, 2048.0f},    /* bias: one more addition */
        {&mpx_format_fp16, 0, &bias3, 2052.0f},    /* 2051 is a tie: to even, 2052 */
        {&mpx_format_bf16, 0, NULL, 256.0f},       /* bf16's 8 bits stop at 256 */
        {&mpx_format_bf16, 4, NULL, 1024.0f},      /* blocks of 4: 1024 + 4 is a tie, stays */
        {&mpx_format_fp32, 0, NULL, 4096.0f},
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        in[2] = cs[k].bias;
        mpx_status st = run(conv, cs[k].f, cs[k].block, 3, in, 1, &y);
        CHECK_MSG(st == MPX_OK && y.f[0] == cs[k].want, "conv case %zu: got %g want %g (%s)", k,
                  st == MPX_OK ? (double)y.f[0] : -1.0, (double)cs[k].want, err.msg);
        vfree(1, &y);
    }
    /* MatMul of two 4096-vectors; Gemm 1x4096 by 4096x1 with alpha and C. */
    mpx_value a = vfill("4096", 1.0f), b = vfill("4096", 1.0f);
    const mpx_value *mi[2] = {&a, &b};
    CHECK(run(node("MatMul", 13, 2, "y", ""), &mpx_format_fp16, 0, 2, mi, 1, &y) == MPX_OK && y.rank == 0 &&
          y.f[0] == 2048.0f);
    vfree(1, &y);
    vfree(1, &a);
    vfree(1, &b);
    a = vfill("1x4096", 1.0f), b = vfill("4096x1", 1.0f);
    const mpx_value *gi[3] = {&a, &b, &bias3};
    CHECK(run(node("Gemm", 13, 3, "y", ""), &mpx_format_fp16, 0, 3, gi, 1, &y) == MPX_OK && y.f[0] == 2052.0f);
    vfree(1, &y);
    CHECK(run(node("Gemm", 13, 3, "y", "alpha=0.5"), &mpx_format_fp16, 0, 3, gi, 1, &y) == MPX_OK &&
          y.f[0] == 1027.0f);
    vfree(1, &y);
    vfree(1, &a);
    vfree(1, &b);
    /* Pools, normalisation and softmax sums go through the same accumulator. */
    mpx_value ones = vfill("1x1x64x64", 1.0f), zeros = vfill("1x4096", 0.0f);
    const mpx_value *pi[1] = {&ones}, *si[1] = {&zeros};
    CHECK(run(node("GlobalAveragePool", 13, 1, "y", ""), &mpx_format_fp16, 0, 1, pi, 1, &y) == MPX_OK &&
          y.f[0] == 0.5f);
    vfree(1, &y);
    CHECK(run(node("AveragePool", 13, 1, "y", "kernel_shape=[64,64]"), &mpx_format_fp16, 0, 1, pi, 1, &y) ==
              MPX_OK && y.f[0] == 0.5f);
    vfree(1, &y);
    CHECK(run(node("AveragePool", 13, 1, "y", "kernel_shape=[64,64]"), NULL, 0, 1, pi, 1, &y) == MPX_OK &&
          y.f[0] == 1.0f);
    vfree(1, &y);
    CHECK(run(node("Softmax", 13, 1, "y", ""), &mpx_format_fp16, 0, 1, si, 1, &y) == MPX_OK &&
          y.f[0] == 1.0f / 2048.0f && y.f[4095] == 1.0f / 2048.0f);
    vfree(1, &y);
    CHECK(run(node("Softmax", 13, 1, "y", ""), NULL, 0, 1, si, 1, &y) == MPX_OK && y.f[0] == 1.0f / 4096.0f);
    vfree(1, &y);
    mpx_value sc = vfill("4096", 1.0f), lo[3];
    const mpx_value *li[2] = {&ones, &sc};
    /* LayerNormalization's mean of 4096 ones: fp16 stops at 2048 -> 0.5. */
    ones.rank = 2, ones.dims[0] = 1, ones.dims[1] = 4096;
    CHECK(run(node("LayerNormalization", 17, 2, "y mean -", ""), &mpx_format_fp16, 0, 2, li, 3, lo) == MPX_OK &&
          lo[1].n == 1 && lo[1].f[0] == 0.5f && lo[2].n < 0);
    vfree(3, lo);
    vfree(1, &sc);
    vfree(1, &ones);
    vfree(1, &zeros);
    vfree(1, &x);
    vfree(1, &w);
    vfree(1, &bias1);
    vfree(1, &bias3);
}

/* ---- pooling ------------------------------------------------------------------------------ */

static void test_pool(void) {
    mpx_value x = vseq("1x1x5x5", 1.0f), y[2];
    const mpx_value *in[1] = {&x};
    CHECK(run(node("MaxPool", 12, 1, "y i", "kernel_shape=[5,5] pads=[2,2,2,2]"), NULL, 0, 1, in, 2, y) == MPX_OK);
    CHECK_VALS("test_maxpool_with_argmax_2d_precomputed_pads", &y[0], "1x1x5x5", 13, 14, 15, 15, 15, 18, 19, 20,
               20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25);
    static const int64_t idx1[] = {12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24};
    CHECK(y[1].dtype == MPX_DT_INT64 && y[1].n == 25 && memcmp(y[1].i, idx1, sizeof idx1) == 0);
    vfree(2, y);
    CHECK(run(node("MaxPool", 12, 1, "y i", "kernel_shape=[2,2] strides=[2,2] storage_order=1"), NULL, 0, 1, in, 2,
              y) == MPX_OK);
    CHECK_VALS("test_maxpool_with_argmax_2d_precomputed_strides", &y[0], "1x1x2x2", 7, 9, 17, 19);
    CHECK(y[1].n == 4 && y[1].i[0] == 6 && y[1].i[1] == 16 && y[1].i[2] == 8 && y[1].i[3] == 18);
    vfree(2, y);
    /* Indices not asked for: the slot stays absent. */
    CHECK(run(node("MaxPool", 12, 1, "y -", "kernel_shape=[2,2]"), NULL, 0, 1, in, 2, y) == MPX_OK && y[1].n < 0);
    vfree(2, y);
    y[0] = run1(node("AveragePool", 11, 1, "y", "kernel_shape=[5,5] pads=[2,2,2,2] count_include_pad=1"), 1, in);
    CHECK_VALS("test_averagepool_2d_precomputed_pads_count_include_pad", &y[0], "1x1x5x5", 2.52f, 3.6f, 4.8f,
               4.08f, 3.24f, 4.56f, 6.4f, 8.4f, 7.04f, 5.52f, 7.2f, 10.0f, 13.0f, 10.8f, 8.4f, 6.96f, 9.6f, 12.4f,
               10.24f, 7.92f, 6.12f, 8.4f, 10.8f, 8.88f, 6.84f);
    vfree(1, y);
    y[0] = run1(node("AveragePool", 11, 1, "y", "kernel_shape=[5,5] pads=[2,2,2,2]"), 1, in);
    CHECK(same_shape(&y[0], "1x1x5x5") && y[0].f[0] == 7.0f && y[0].f[12] == 13.0f);
    vfree(1, y);
    vfree(1, &x);
    x = vseq("1x1x4x4", 1.0f);
    y[0] = run1(node("MaxPool", 12, 1, "y", "kernel_shape=[2,2] strides=[1,1] dilations=[2,2]"), 1, in);
    CHECK_VALS("test_maxpool_2d_dilations", &y[0], "1x1x2x2", 11, 12, 15, 16);
    vfree(1, y);
    y[0] = run1(node("MaxPool", 12, 1, "y", "kernel_shape=[3,3] strides=[2,2] ceil_mode=1"), 1, in);
    CHECK_VALS("test_maxpool_2d_ceil", &y[0], "1x1x2x2", 11, 12, 15, 16);
    vfree(1, y);
    y[0] = run1(node("AveragePool", 11, 1, "y", "kernel_shape=[3,3] strides=[2,2] ceil_mode=1"), 1, in);
    CHECK_VALS("test_averagepool_2d_ceil", &y[0], "1x1x2x2", 6, 7.5f, 12, 13.5f);
    vfree(1, y);
    /* ceil_mode's overhang is not counted even with count_include_pad (ORT,
     * PyTorch): the last window starts at row 3 of 4 with 1 row of padding,
     * so rows 3 and 4 count and row 5 does not: 16 / (2 x 2). */
    y[0] = run1(node("AveragePool", 19, 1, "y",
                     "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1 count_include_pad=1"), 1, in);
    CHECK(same_shape(&y[0], "1x1x3x3") && y[0].f[0] == (1.0f + 2.0f + 5.0f + 6.0f) / 9.0f && y[0].f[8] == 4.0f &&
          y[0].f[1] == (2.0f + 3.0f + 4.0f + 6.0f + 7.0f + 8.0f) / 9.0f);
    vfree(1, y);
    y[0] = run1(node("AveragePool", 19, 1, "y", "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1"), 1, in);
    CHECK(same_shape(&y[0], "1x1x3x3") && y[0].f[0] == 14.0f / 4.0f && y[0].f[8] == 16.0f);
    vfree(1, y);
    vfree(1, &x);
    /* AveragePool 2-D against its definition, bit for bit: the in-bounds
     * taps in window order summed in fp32 from +0 (blocks of 64 terms added
     * to the sum), over the count (padding counted up to the padded input's
     * edge with count_include_pad), 0 for a window with no tap inside; on
     * random planes, with strides, pads, ceil_mode, dilations, and windows
     * of 64 taps (one block) and 81 (two); on planes 13 wide and 45 wide
     * (rows of eight outputs and more: the vectorised sums, strides 1 and 2,
     * the last plane's last vector reading up to the input's end) */
    for (int wide = 0; wide < 2; wide++) {
        static const struct { const char *attrs; int k0, k1, s0, s1, p0, p1, d0, d1, inc; } cf[] = {
            {"kernel_shape=[3,2] strides=[3,2]", 3, 2, 3, 2, 0, 0, 1, 1, 0},
            {"kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1", 3, 3, 2, 2, 1, 1, 1, 1, 0},
            {"kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] ceil_mode=1 count_include_pad=1", 3, 3, 2, 2, 1, 1, 1, 1, 1},
            {"kernel_shape=[2,2] dilations=[2,2]", 2, 2, 1, 1, 0, 0, 2, 2, 0},
            {"kernel_shape=[5,5] pads=[2,2,2,2] count_include_pad=1", 5, 5, 1, 1, 2, 2, 1, 1, 1},
            {"kernel_shape=[8,8] pads=[3,3,3,3]", 8, 8, 1, 1, 3, 3, 1, 1, 0},
            {"kernel_shape=[9,9] strides=[2,2] pads=[4,4,4,4]", 9, 9, 2, 2, 4, 4, 1, 1, 0},
        };
        const int64_t H = 11, W = wide ? 45 : 13;
        x = vrand(wide ? "2x3x11x45" : "2x3x11x13");
        for (int64_t k = 0; k < x.n; k++) x.f[k] = x.f[k] * 1000.0f + 1.0f / (float)(k + 3);
        for (size_t ci = 0; ci < sizeof cf / sizeof cf[0]; ci++) {
            y[0] = run1(node("AveragePool", 19, 1, "y", cf[ci].attrs), 1, in);
            const bool ceil = strstr(cf[ci].attrs, "ceil_mode=1") != NULL;
            const int64_t ek0 = (cf[ci].k0 - 1) * cf[ci].d0 + 1, ek1 = (cf[ci].k1 - 1) * cf[ci].d1 + 1;
            const int64_t span0 = H + 2 * cf[ci].p0 - ek0, span1 = W + 2 * cf[ci].p1 - ek1;
            const int64_t OH = (ceil ? (span0 + cf[ci].s0 - 1) / cf[ci].s0 : span0 / cf[ci].s0) + 1,
                          OW = (ceil ? (span1 + cf[ci].s1 - 1) / cf[ci].s1 : span1 / cf[ci].s1) + 1;
            bool same = y[0].n == 6 * OH * OW;
            for (int64_t pc = 0; pc < 6 && same; pc++)
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float sum = 0.0f, blk = 0.0f;
                        int nb = 0, n_in = 0, n_pad = 0;
                        for (int a = 0; a < cf[ci].k0; a++)
                            for (int b = 0; b < cf[ci].k1; b++) {
                                const int64_t ih = oh * cf[ci].s0 + a * cf[ci].d0 - cf[ci].p0,
                                              iw = ow * cf[ci].s1 + b * cf[ci].d1 - cf[ci].p1;
                                n_pad += ih < H + cf[ci].p0 && iw < W + cf[ci].p1;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                blk += x.f[pc * H * W + ih * W + iw];
                                n_in++;
                                if (++nb == MPX_ACC_FP32_BLOCK) sum += blk, blk = 0.0f, nb = 0;
                            }
                        if (nb > 0) sum += blk;
                        const float want = n_in > 0 ? sum / (float)(cf[ci].inc ? n_pad : n_in) : 0.0f;
                        same = same && memcmp(&want, &y[0].f[(pc * OH + oh) * OW + ow], sizeof want) == 0;
                    }
            CHECK_MSG(same, "AveragePool %s differs from its definition (W %lld)", cf[ci].attrs, (long long)W);
            vfree(1, y);
        }
        vfree(1, &x);
    }
    x = vseq("1x1x4x4", 1.0f);
    /* MaxPool 2-D against its definition, bit for bit: each output the
     * first in-bounds tap in window order, then any strictly greater one (a
     * first NaN stays, a later one is never taken); planes 37 wide, so the
     * columns whose taps are all inside run through the vector loop with
     * strides 1, 2 and 3 (3x3 windows: eight outputs a vector, the border
     * ones from clamped tap ranges) and the border ones through the flagged
     * loop; ties (fp16 values, -0 and +0) and NaNs included. */
    {
        static const struct { const char *attrs; int k0, k1, s0, s1, p0, p1, d0, d1; } cf[] = {
            {"kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]", 3, 3, 2, 2, 1, 1, 1, 1},
            {"kernel_shape=[2,2] strides=[2,2]", 2, 2, 2, 2, 0, 0, 1, 1},
            {"kernel_shape=[3,3] pads=[1,1,1,1]", 3, 3, 1, 1, 1, 1, 1, 1},
            {"kernel_shape=[3,2] strides=[3,3]", 3, 2, 3, 3, 0, 0, 1, 1},
            {"kernel_shape=[2,3] dilations=[2,3] pads=[2,3,2,3]", 2, 3, 1, 1, 2, 3, 2, 3},
            {"kernel_shape=[9,9] strides=[2,2] pads=[4,4,4,4]", 9, 9, 2, 2, 4, 4, 1, 1},
            /* the AVX-512 rows (maxk_avx512): two taps a load at stride 2,
             * an odd last tap alone, stride 1, overlapping last vectors */
            {"kernel_shape=[2,2]", 2, 2, 1, 1, 0, 0, 1, 1},
            {"kernel_shape=[4,5] strides=[2,2] pads=[1,2,1,2]", 4, 5, 2, 2, 1, 2, 1, 1},
            {"kernel_shape=[2,2] strides=[2,2] pads=[1,1,1,1]", 2, 2, 2, 2, 1, 1, 1, 1},
            {"kernel_shape=[1,3] strides=[2,2]", 1, 3, 2, 2, 0, 0, 1, 1},
        };
        const int64_t H = 11, W = 37;
        vfree(1, &x);
        x = vrand("2x3x11x37");
        for (int64_t i = 5; i < x.n; i += 97) x.f[i] = NAN;
        x.f[0] = NAN; /* a window's first tap */
        for (int64_t i = 40; i + 1 < x.n; i += 61) x.f[i] = -0.0f, x.f[i + 1] = 0.0f; /* ties of zeros' signs */
        for (int64_t r = 0; r < 3; r++) /* ... at a border: plane 1's first columns -0 +0 over rows of -1 */
            for (int64_t col = 0; col < 2; col++) x.f[H * W + r * W + col] = r ? -1.0f : col ? 0.0f : -0.0f;
        for (size_t ci = 0; ci < sizeof cf / sizeof cf[0]; ci++) {
            y[0] = run1(node("MaxPool", 12, 1, "y", cf[ci].attrs), 1, in);
            const int64_t ek0 = (cf[ci].k0 - 1) * cf[ci].d0 + 1, ek1 = (cf[ci].k1 - 1) * cf[ci].d1 + 1;
            const int64_t OH = (H + 2 * cf[ci].p0 - ek0) / cf[ci].s0 + 1, OW = (W + 2 * cf[ci].p1 - ek1) / cf[ci].s1 + 1;
            bool same = y[0].n == 6 * OH * OW;
            for (int64_t pc = 0; pc < 6 && same; pc++)
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float want = -FLT_MAX;
                        bool any = false;
                        for (int a = 0; a < cf[ci].k0; a++)
                            for (int b = 0; b < cf[ci].k1; b++) {
                                const int64_t ih = oh * cf[ci].s0 + a * cf[ci].d0 - cf[ci].p0,
                                              iw = ow * cf[ci].s1 + b * cf[ci].d1 - cf[ci].p1;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                const float v = x.f[pc * H * W + ih * W + iw];
                                if (!any || v > want) want = v;
                                any = true;
                            }
                        same = same && memcmp(&want, &y[0].f[(pc * OH + oh) * OW + ow], sizeof want) == 0;
                    }
            CHECK_MSG(same, "MaxPool %s differs from its definition", cf[ci].attrs);
            vfree(1, y);
        }
        vfree(1, &x);
        x = vseq("1x1x4x4", 1.0f);
    }
    /* LpPool: (sum |x|^p)^(1/p) over the window; padding adds nothing. On
     * 1..16: the 2x2 window at (0,0) holds 1 2 5 6. */
    y[0] = run1(node("LpPool", 11, 1, "y", "kernel_shape=[2,2] strides=[2,2]"), 1, in);
    CHECK(same_shape(&y[0], "1x1x2x2") && y[0].f[0] == sqrtf(66.0f) && y[0].f[3] == sqrtf(121.0f + 144.0f + 225.0f + 256.0f));
    vfree(1, y);
    y[0] = run1(node("LpPool", 11, 1, "y", "kernel_shape=[2,2] strides=[2,2] p=1"), 1, in);
    CHECK_VALS("LpPool p=1", &y[0], "1x1x2x2", 14, 22, 46, 54);
    vfree(1, y);
    y[0] = run1(node("LpPool", 11, 1, "y", "kernel_shape=[2,2] pads=[1,1,0,0] p=3"), 1, in);
    CHECK(same_shape(&y[0], "1x1x4x4") && y[0].f[0] == 1.0f && fabsf(y[0].f[5] - cbrtf(1 + 8 + 125 + 216)) < 1e-5f);
    vfree(1, y);
    y[0] = run1(node("GlobalMaxPool", 1, 1, "y", ""), 1, in);
    CHECK_VALS("GlobalMaxPool", &y[0], "1x1x1x1", 16);
    vfree(1, y);
    y[0] = run1(node("GlobalAveragePool", 1, 1, "y", ""), 1, in);
    CHECK_VALS("GlobalAveragePool", &y[0], "1x1x1x1", 8.5f);
    vfree(1, y);
    vfree(1, &x);
    /* uint8 (opset 12) pools as integers; 3-D storage_order 1 indices. */
    x = vzero(MPX_DT_UINT8, "1x1x5x5");
    for (int k = 0; k < 25; k++) x.i[k] = k + 1;
    CHECK(run(node("MaxPool", 12, 1, "y", "kernel_shape=[5,5] pads=[2,2,2,2]"), NULL, 0, 1, in, 1, y) == MPX_OK &&
          y[0].dtype == MPX_DT_UINT8 && y[0].i && y[0].i[0] == 13 && y[0].i[24] == 25);
    vfree(1, y);
    vfree(1, &x);
    x = vrand("1x2x3x4x5");
    CHECK(run(node("MaxPool", 12, 1, "y i", "kernel_shape=[3,4,5] storage_order=1"), NULL, 0, 1, in, 2, y) ==
          MPX_OK);
    for (int c = 0; c < 2 && y[1].n == 2; c++) {
        /* column-major over the spatial dims: idx = c*60 + d0 + 3*d1 + 12*d2 */
        int64_t id = y[1].i[c] - c * 60, d0 = id % 3, d1 = (id / 3) % 4, d2 = id / 12;
        float best = -INFINITY;
        for (int k = 0; k < 60; k++) best = fmaxf(best, x.f[c * 60 + k]);
        CHECK(x.f[c * 60 + (d0 * 4 + d1) * 5 + d2] == best && y[0].f[c] == best);
    }
    vfree(2, y);
    vfree(1, &x);
    /* GlobalAveragePool over 13 planes of 150 (eight at a time, then one by
     * one: blocks of 64 and a partial one), and over 41 planes of 7200 (the
     * groups of eight on the pool's threads): each plane's sum is mpx_acc's,
     * bit for bit; in fp16 accumulation too. */
    static const char *const gshape[2] = {"1x13x10x15", "1x41x80x90"};
    for (int sh = 0; sh < 2; sh++) {
        x = vrand(gshape[sh]);
        const int np = (int)x.dims[1], pl = (int)(x.dims[2] * x.dims[3]);
        /* Full fp32 mantissas of mixed magnitudes, so that another order of
         * additions would show. */
        for (int64_t k = 0; k < x.n; k++) x.f[k] = x.f[k] * 1000.0f + 1.0f / (float)(k + 3);
        for (int fp16 = 0; fp16 < 2; fp16++) {
            const mpx_format *acc = fp16 ? &mpx_format_fp16 : NULL;
            CHECK(run(node("GlobalAveragePool", 1, 1, "y", ""), acc, 0, 1, in, 1, y) == MPX_OK);
            int off = 0;
            for (int pc = 0; pc < np && y[0].n == np; pc++) {
                mpx_accum m = {.fmt = acc};
                mpx_acc a;
                mpx_acc_init(&a, &m, 0.0f);
                for (int k = 0; k < pl; k++) mpx_acc_add(&a, x.f[(int64_t)pc * pl + k]);
                float want = mpx_acc_result(&a) / (float)pl;
                off += memcmp(&want, &y[0].f[pc], sizeof want) != 0;
            }
            CHECK_MSG(y[0].n == np && off == 0, "GlobalAveragePool %s (%s accumulation): %d planes differ from mpx_acc",
                      gshape[sh], fp16 ? "fp16" : "fp32", off);
            vfree(1, y);
        }
        vfree(1, &x);
    }
}

/* ---- normalisation, softmax, LRN ------------------------------------------------------------ */

/* BatchNormalization's value as kern_norm.c computes it: the channel's
 * factors first (ONNX Runtime's and PyTorch's order), then one fused
 * multiply-add (PyTorch's vector loop). */
static float bn_ref(float x, float mean, float var, float eps, float scale, float bias) {
    float a = 1.0f / sqrtf(var + eps) * scale;
    float b = bias - mean * a;
    return fmaf(x, a, b);
}

static void test_norm(void) {
    /* BatchNormalization from its formula, per channel and (opset 7) per activation. */
    static const float xd[] = {-1, 0, 1, 2, 3, 4}, sd[] = {1.0f, 1.5f}, bd[] = {0, 1}, md[] = {0, 3}, vd[] = {1, 1.5f};
    mpx_value x = vdata("1x2x1x3", xd), s = vdata("2", sd), b = vdata("2", bd), m = vdata("2", md), v = vdata("2", vd);
    const mpx_value *in[5] = {&x, &s, &b, &m, &v};
    mpx_value y = run1(node("BatchNormalization", 15, 5, "y", ""), 5, in);
    bool ok = same_shape(&y, "1x2x1x3");
    for (int k = 0; ok && k < 6; k++) {
        int c = k / 3;
        ok = y.f[k] == bn_ref(xd[k], md[c], vd[c], 1e-5f, sd[c], bd[c]);
    }
    CHECK(ok);
    vfree(1, &y);
    mpx_value s6 = vfill("2x1x3", 2.0f), b6 = vseq("2x1x3", 0.0f), m6 = vfill("2x1x3", 1.0f), v6 = vfill("2x1x3", 4.0f);
    const mpx_value *in6[5] = {&x, &s6, &b6, &m6, &v6};
    y = run1(node("BatchNormalization", 7, 5, "y", "spatial=0 epsilon=0.0"), 5, in6);
    CHECK(same_shape(&y, "1x2x1x3") && y.f[0] == -2.0f && y.f[5] == 8.0f); /* (4 - 1) / 2 * 2 + 5 */
    vfree(1, &y);
    /* Many rows, several a work item, on both threads (kern_norm.c bn_rows:
     * 2 x 64 rows of 256), each from the formula; and an empty map. */
    mpx_value xb = vseq("2x64x16x16", -3.0f), sb = vseq("64", 0.5f), bb = vseq("64", -1.0f), mb = vseq("64", 0.25f),
              vb = vseq("64", 1.0f);
    const mpx_value *inb[5] = {&xb, &sb, &bb, &mb, &vb};
    y = run1(node("BatchNormalization", 15, 5, "y", ""), 5, inb);
    ok = same_shape(&y, "2x64x16x16");
    for (int64_t k = 0; ok && k < y.n; k++) {
        const int64_t c = k / 256 % 64;
        ok = y.f[k] == bn_ref(xb.f[k], mb.f[c], vb.f[c], 1e-5f, sb.f[c], bb.f[c]);
    }
    CHECK(ok);
    vfree(1, &y);
    mpx_value xe = vfill("1x2x0", 0.0f);
    const mpx_value *ine[5] = {&xe, &s, &b, &m, &v};
    y = run1(node("BatchNormalization", 15, 5, "y", ""), 5, ine);
    CHECK(same_shape(&y, "1x2x0"));
    vfree(1, &y);
    vfree(1, &xb), vfree(1, &sb), vfree(1, &bb), vfree(1, &mb), vfree(1, &vb), vfree(1, &xe);
    /* training mode: batch statistics and running averages */
    mpx_value tr[3];
    CHECK(run(node("BatchNormalization", 15, 5, "y rm rv", "training_mode=1 momentum=0.5 epsilon=0.0"), NULL, 0, 5,
              in, 3, tr) == MPX_OK);
    CHECK(tr[1].n == 2 && tr[1].f[0] == 0.0f && tr[1].f[1] == 3.0f);                    /* 0.5*0 + 0.5*0 ; 0.5*3 + 0.5*3 */
    CHECK(tr[2].n == 2 && tr[2].f[0] == 0.5f * 1.0f + 0.5f * (2.0f / 3.0f));             /* population variance */
    CHECK(tr[0].n == 6 && tr[0].f[2] == (1.0f - 0.0f) / sqrtf(2.0f / 3.0f) * 1.0f + 0.0f);
    vfree(3, tr);
    vfree(1, &s6), vfree(1, &b6), vfree(1, &m6), vfree(1, &v6);

    /* InstanceNormalization, ONNX's example */
    const mpx_value *ii[3] = {&x, &s, &b};
    y = run1(node("InstanceNormalization", 6, 3, "y", ""), 3, ii);
    CHECK_VALS("test_instancenorm_example", &y, "1x2x1x3", -1.2247356f, 0.0f, 1.2247356f, -0.8371035f, 1.0f, 2.8371034f);
    vfree(1, &y);

    /* LayerNormalization over the last two dims against a double computation */
    mpx_value lx = vrand("2x3x4x5"), ls = vrand("4x5"), lb = vrand("5"), lo[3];
    const mpx_value *li[3] = {&lx, &ls, &lb};
    CHECK(run(node("LayerNormalization", 17, 3, "y mean inv", "axis=-2 epsilon=0.001"), NULL, 0, 3, li, 3, lo) == MPX_OK);
    ok = same_shape(&lo[0], "2x3x4x5") && same_shape(&lo[1], "2x3x1x1") && same_shape(&lo[2], "2x3x1x1");
    for (int r = 0; ok && r < 6; r++) {
        double mean = 0, var = 0;
        for (int k = 0; k < 20; k++) mean += lx.f[r * 20 + k];
        mean /= 20;
        for (int k = 0; k < 20; k++) var += (lx.f[r * 20 + k] - mean) * (lx.f[r * 20 + k] - mean);
        double inv = 1.0 / sqrt(var / 20 + 0.001);
        ok = fabs(lo[1].f[r] - mean) < 1e-6 && fabs(lo[2].f[r] - inv) < 1e-5 * inv;
        for (int k = 0; ok && k < 20; k++) {
            double want = (lx.f[r * 20 + k] - mean) * inv * ls.f[k] + lb.f[k % 5];
            ok = fabs(lo[0].f[r * 20 + k] - want) < 1e-5;
        }
    }
    CHECK(ok);
    vfree(3, lo);
    vfree(1, &lx), vfree(1, &ls), vfree(1, &lb);

    /* LayerNormalization's fp32 sums bit for bit in their documented order
     * (each row's terms in order, blocks of 64 summed from 0 and added to
     * the running sum, a partial last one too): 15 rows of 200 (the kernel
     * takes rows 16 at a time, 8 or 16 a vector: partial groups; the rows'
     * last values under a mask), Scale and B one value per place; Scale
     * broadcast over rows too ([1]: the general path); 303 rows of 256 (2^16
     * values or more: groups of rows on the kernel threads); 9 rows of 1100
     * (longer than the rows the portable build copies transposed,
     * kern_norm.c's LN_T); 15 rows of 200 without B; 21 rows of 7 (fewer
     * values than a vector's lanes). */
    for (int variant = 0; variant < 6; variant++) {
        static const char *const xs[6] = {"3x5x200", "3x5x200", "3x101x256", "3x3x1100", "3x5x200", "3x7x7"};
        static const char *const ss[6] = {"200", "1", "256", "1100", "200", "7"};
        static const int64_t Rs[6] = {15, 15, 303, 9, 15, 21}, Ds[6] = {200, 200, 256, 1100, 200, 7};
        static const char *const what[6] = {"Scale [200]", "Scale [1]", "303 rows of 256", "9 rows of 1100",
                                            "no B", "21 rows of 7"};
        const int64_t R = Rs[variant], D = Ds[variant];
        const bool has_b = variant != 4;
        mpx_value nx = vrand(xs[variant]), ns = vrand(ss[variant]), nb = vrand(ss[variant == 1 ? 0 : variant]),
                  no[3];
        for (int64_t k = 0; k < nx.n; k++) nx.f[k] = nx.f[k] * 3.0f + 1.5f;
        const mpx_value *ni[3] = {&nx, &ns, &nb};
        CHECK(run(node("LayerNormalization", 17, has_b ? 3 : 2, "y mean inv", "epsilon=0.0001"), NULL, 0,
                  has_b ? 3 : 2, ni, 3, no) == MPX_OK);
        ok = same_shape(&no[0], xs[variant]);
        for (int64_t r = 0; ok && r < R; r++) {
            const float *xr = nx.f + r * D;
            float sum = 0, blk = 0, mean, inv;
            for (int64_t k = 0; k < D; k++) {
                blk += xr[k];
                if ((k + 1) % 64 == 0) sum += blk, blk = 0;
            }
            mean = (sum + blk) / (float)D;
            sum = blk = 0;
            for (int64_t k = 0; k < D; k++) {
                float d = xr[k] - mean;
                blk += d * d;
                if ((k + 1) % 64 == 0) sum += blk, blk = 0;
            }
            inv = 1.0f / sqrtf((sum + blk) / (float)D + 0.0001f);
            ok = no[1].f[r] == mean && no[2].f[r] == inv;
            for (int64_t k = 0; ok && k < D; k++) {
                const float t = (xr[k] - mean) * inv * ns.f[variant == 1 ? 0 : k];
                ok = no[0].f[r * D + k] == (has_b ? t + nb.f[k] : t);
            }
        }
        CHECK_MSG(ok, "LayerNormalization's fp32 sums in their order (%s)", what[variant]);
        vfree(3, no);
        vfree(1, &nx), vfree(1, &ns), vfree(1, &nb);
    }

    /* LRN from its formula (size 3: channels c-1 .. c+1) */
    mpx_value rx = vrand("1x5x2x2");
    const mpx_value *ri[1] = {&rx};
    y = run1(node("LRN", 13, 1, "y", "size=3 alpha=0.5 beta=0.75 bias=2.0"), 1, ri);
    ok = same_shape(&y, "1x5x2x2");
    for (int c = 0; ok && c < 5; c++)
        for (int p = 0; ok && p < 4; p++) {
            double sq = 0;
            for (int i = c - 1; i <= c + 1; i++)
                if (i >= 0 && i < 5) sq += (double)rx.f[i * 4 + p] * rx.f[i * 4 + p];
            double want = rx.f[c * 4 + p] / pow(2.0 + 0.5 / 3 * sq, 0.75);
            ok = fabs(y.f[c * 4 + p] - want) < 1e-6;
        }
    CHECK(ok);
    vfree(1, &y);
    vfree(1, &rx);
    vfree(1, &x), vfree(1, &s), vfree(1, &b), vfree(1, &m), vfree(1, &v);
}

static void test_softmax(void) {
    static const float d[] = {-1, 0, 1};
    mpx_value x = vdata("1x3", d), y;
    const mpx_value *in[1] = {&x};
    y = run1(node("Softmax", 13, 1, "y", ""), 1, in);
    CHECK_VALS("test_softmax_example", &y, "1x3", 0.09003057f, 0.24472847f, 0.66524094f);
    vfree(1, &y);
    y = run1(node("LogSoftmax", 13, 1, "y", ""), 1, in);
    CHECK_VALS("test_logsoftmax_example_1", &y, "1x3", -2.4076061f, -1.4076060f, -0.40760601f);
    vfree(1, &y);
    vfree(1, &x);
    /* Opset 11 coerces to 2-D at axis 1 (one softmax over 3x4 = 12 values);
     * opset 13 takes axis 1 alone (over 3 values). */
    x = vrand("2x3x4");
    y = run1(node("Softmax", 11, 1, "y", "axis=1"), 1, in);
    double sum = 0, e12 = 0;
    for (int k = 12; k < 24; k++) sum += y.f[k], e12 += exp(x.f[k]);
    CHECK(fabs(sum - 1.0) < 1e-6 && fabs(y.f[12] - exp(x.f[12]) / e12) < 1e-7);
    vfree(1, &y);
    y = run1(node("Softmax", 13, 1, "y", "axis=1"), 1, in);
    sum = (double)y.f[1] + y.f[5] + y.f[9]; /* n 0, inner 1, over the 3 channels */
    double e = exp(x.f[1]) + exp(x.f[5]) + exp(x.f[9]);
    CHECK(fabs(sum - 1.0) < 1e-6 && fabs(y.f[5] - exp(x.f[5]) / e) < 1e-7);
    vfree(1, &y);
    y = run1(node("LogSoftmax", 11, 1, "y", ""), 1, in); /* default axis 1 before 13 */
    double ls = 0;
    for (int k = 12; k < 24; k++) ls += exp(y.f[k]);
    CHECK(fabs(ls - 1.0) < 1e-6);
    vfree(1, &y);
    vfree(1, &x);
    /* the definition, bit for bit, on slices long enough for the vector
     * loop and the threads (61 x 301, contiguous) and strided (axis 1 of
     * 4x301x3), and long slices (11 x 1100: 18 blocks of 64, the last
     * partial; sm_long_sum's groups of 16 blocks and a partial group:
     * 3 x 6625, rec's classes, 2 x 2048 without a partial block, 4 x 1040
     * with one after exactly 16), and contiguous slices whose lengths take each part of the
     * vector paths (kern_norm.c: sm_sums_avx512's 16 x 16 and
     * sm_sums_avx2's 8 x 8 steps and partial blocks, row_max's 16 lanes
     * and overlapping last block, the exponentials' 64, 16 and masked 16
     * lanes and 32, 8 and masked 8; groups of 16 and 8 slices and their
     * remainders): e_k = the float nearest exp(x_k - max), their sum in
     * order in fp32 (blocks of 64), e_k / sum; on the CPU's best path
     * (AVX-512 where it has it), the AVX2 one (MPX_KERN_AVX2=1) and the
     * portable one (MPX_KERN_PORTABLE=1) */
    static const char *const shapes[] = {"61x301", "4x301x3", "11x1100", "37x64", "45x197", "9x7",   "13x16",
                                         "5x1",    "19x129",  "70x40",   "3x8",   "33x72",  "50x16", "29x100",
                                         "17x31",  "40x200",  "3x6625", "2x2048", "4x1040"};
    static const char *const paths[] = {"default", "MPX_KERN_AVX2", "MPX_KERN_PORTABLE"};
    for (int path = 0; path < 3; path++) {
        if (path) setenv(paths[path], "1", 1);
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
            const bool strided = sh == 1;
            x = vrand(shapes[sh]);
            for (int64_t k = 0; k < x.n; k++) x.f[k] *= 20.0f; /* exponents from 0 to far below */
            y = run1(node("Softmax", 13, 1, "y", strided ? "axis=1" : ""), 1, in);
            const int64_t inner = strided ? 3 : 1, D = strided ? 301 : x.dims[x.rank - 1], rows = x.n / D;
            bool same = y.n == x.n;
            for (int64_t r = 0; r < rows && same; r++) {
                const int64_t o = r / inner, i = r % inner;
                const float *xp = x.f + o * D * inner + i;
                float m = xp[0], total = 0.0f, ek[6625];
                for (int64_t k = 1; k < D; k++) m = xp[k * inner] > m ? xp[k * inner] : m;
                float blk = 0.0f; /* fp32 sums: blocks of 64 terms, as mpx_acc adds them */
                for (int64_t k = 0; k < D; k++) {
                    blk += ek[k] = (float)exp((double)(xp[k * inner] - m));
                    if (k % MPX_ACC_FP32_BLOCK == MPX_ACC_FP32_BLOCK - 1 || k == D - 1) total += blk, blk = 0.0f;
                }
                for (int64_t k = 0; k < D; k++) same = same && y.f[o * D * inner + i + k * inner] == ek[k] / total;
            }
            CHECK_MSG(same, "Softmax (%s, %s path) differs from its definition", shapes[sh], paths[path]);
            vfree(1, &y);
            vfree(1, &x);
        }
        if (path) unsetenv(paths[path]);
    }
    /* rows whose largest value the 16-lane max must find as the loop
     * `if (x > m) m = x` from x[0] does: NaN first (the row is NaN), NaN
     * later (never taken), a largest of zero met as -0 then +0 in other
     * lanes, -inf values, all equal; Softmax and LogSoftmax against the
     * definition with that loop, NaN matching NaN */
    {
        enum { D = 40, R = 5 };
        float rows[R * D];
        for (int r = 0; r < R; r++)
            for (int k = 0; k < D; k++) rows[r * D + k] = -1.0f - 0.25f * (float)((k * 7 + r) % 13);
        rows[0 * D + 0] = NAN;
        rows[1 * D + 20] = NAN, rows[1 * D + 33] = 2.5f;
        rows[2 * D + 3] = -0.0f, rows[2 * D + 20] = 0.0f, rows[2 * D + 37] = -0.0f;
        rows[3 * D + 5] = -INFINITY, rows[3 * D + 17] = -INFINITY, rows[3 * D + 39] = 7.0f;
        for (int k = 0; k < D; k++) rows[4 * D + k] = 0.5f;
        x = vdata("5x40", rows);
        for (int log_form = 0; log_form < 2; log_form++) {
            y = run1(node(log_form ? "LogSoftmax" : "Softmax", 13, 1, "y", ""), 1, in);
            bool same = y.n == R * D;
            for (int r = 0; r < R && same; r++) {
                const float *xp = rows + r * D;
                float m = xp[0], ek[D], total = 0.0f, blk = 0.0f;
                for (int k = 1; k < D; k++) m = xp[k] > m ? xp[k] : m;
                for (int k = 0; k < D; k++) {
                    blk += ek[k] = (float)exp((double)(xp[k] - m));
                    if (k % MPX_ACC_FP32_BLOCK == MPX_ACC_FP32_BLOCK - 1 || k == D - 1) total += blk, blk = 0.0f;
                }
                for (int k = 0; k < D; k++) {
                    const float want = log_form ? (xp[k] - m) - logf(total) : ek[k] / total, got = y.f[r * D + k];
                    same = same && (memcmp(&want, &got, sizeof want) == 0 || (isnan(want) && isnan(got)));
                }
            }
            CHECK_MSG(same, "%s of the special rows differs from its definition", log_form ? "LogSoftmax" : "Softmax");
            vfree(1, &y);
        }
        vfree(1, &x);
    }
    /* large values: no overflow (the max is subtracted) */
    static const float big[] = {1000, 1001, 1002};
    x = vdata("3", big);
    y = run1(node("Softmax", 13, 1, "y", ""), 1, in);
    CHECK_VALS("softmax large", &y, "3", 0.09003057f, 0.24472847f, 0.66524094f);
    vfree(1, &y);
    vfree(1, &x);
}

/* ---- Resize, Upsample --------------------------------------------------------------------- */

static void test_resize(void) {
    static const float s2[] = {1, 1, 2, 2}, s23[] = {1, 1, 2, 3}, s06[] = {1, 1, 0.6f, 0.6f};
    mpx_value x = vseq("1x1x2x2", 1.0f), sc = vdata("4", s23), y;
    const mpx_value *in4[4] = {&x, NULL, &sc, NULL};
    y = run1(node("Resize", 13, 4, "y", "mode=nearest"), 3, in4);
    CHECK_VALS("test_resize_upsample_scales_nearest", &y, "1x1x4x6", 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4,
               4, 4, 3, 3, 3, 4, 4, 4);
    vfree(1, &y);
    vfree(1, &sc);
    sc = vdata("4", s2);
    y = run1(node("Resize", 13, 4, "y", "mode=linear"), 3, in4);
    CHECK_VALS("test_resize_upsample_scales_linear", &y, "1x1x4x4", 1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
               2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4);
    vfree(1, &y);
    y = run1(node("Resize", 13, 4, "y", "mode=linear coordinate_transformation_mode=align_corners"), 3, in4);
    CHECK_VALS("test_resize_upsample_scales_linear_align_corners", &y, "1x1x4x4", 1, 1.3333333f, 1.6666666f, 2,
               1.6666666f, 2, 2.3333333f, 2.6666667f, 2.3333333f, 2.6666667f, 3, 3.3333333f, 3, 3.3333333f,
               3.6666667f, 4);
    vfree(1, &y);
    /* Upsample-7 (scales attribute) and -9 (scales input): asymmetric, floor */
    const mpx_value *u1[1] = {&x};
    y = run1(node("Upsample", 7, 1, "y", "mode=nearest scales=[1.0,1.0,2.0,3.0]"), 1, u1);
    CHECK_VALS("test_upsample_nearest", &y, "1x1x4x6", 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3,
               3, 4, 4, 4);
    vfree(1, &y);
    const mpx_value *u9[2] = {&x, &sc};
    y = run1(node("Upsample", 9, 2, "y", "mode=linear"), 2, u9);
    CHECK_VALS("upsample-9 linear (asymmetric, edge)", &y, "1x1x4x4", 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4,
               3, 3.5f, 4, 4);
    vfree(1, &y);
    vfree(1, &x);
    vfree(1, &sc);

    x = vseq("1x1x2x4", 1.0f);
    sc = vdata("4", s06);
    in4[0] = &x;
    y = run1(node("Resize", 13, 4, "y", "mode=nearest"), 3, in4);
    CHECK_VALS("test_resize_downsample_scales_nearest", &y, "1x1x1x2", 1, 3);
    vfree(1, &y);
    y = run1(node("Resize", 13, 4, "y", "mode=linear"), 3, in4);
    CHECK_VALS("test_resize_downsample_scales_linear", &y, "1x1x1x2", 2.6666665f, 4.3333331f);
    vfree(1, &y);
    /* ONNX's reference reads length_resized as in * scale (2.4 here, not 2) */
    y = run1(node("Resize", 13, 4, "y", "mode=linear coordinate_transformation_mode=align_corners"), 3, in4);
    CHECK_VALS("test_resize_downsample_scales_linear_align_corners", &y, "1x1x1x2", 1, 3.142857f);
    vfree(1, &y);
    /* Resize-10: scales as input 1, asymmetric; nearest downsampling takes ceil */
    const mpx_value *r10[2] = {&x, &sc};
    y = run1(node("Resize", 10, 2, "y", "mode=nearest"), 2, r10);
    CHECK_VALS("resize-10 nearest downsample", &y, "1x1x1x2", 1, 3);
    vfree(1, &y);
    static const int64_t sz[] = {1, 1, 1, 3};
    mpx_value size = vints("4", sz);
    const mpx_value *in_sz[4] = {&x, NULL, NULL, &size};
    y = run1(node("Resize", 13, 4, "y", "mode=nearest"), 4, in_sz);
    CHECK_VALS("test_resize_downsample_sizes_nearest", &y, "1x1x1x3", 1, 2, 4);
    vfree(1, &y);
    vfree(1, &size);
    vfree(1, &x);
    vfree(1, &sc);

    x = vseq("1x1x4x4", 1.0f);
    static const int64_t sz8[] = {1, 1, 8, 8}, sz31[] = {1, 1, 3, 1}, sz33[] = {1, 1, 3, 3};
    size = vints("4", sz8);
    in_sz[0] = &x, in_sz[3] = &size;
    y = run1(node("Resize", 13, 4, "y", "mode=nearest nearest_mode=ceil"), 4, in_sz);
    CHECK_VALS("test_resize_upsample_sizes_nearest_ceil_half_pixel", &y, "1x1x8x8", 1, 2, 2, 3, 3, 4, 4, 4, 5, 6, 6,
               7, 7, 8, 8, 8, 5, 6, 6, 7, 7, 8, 8, 8, 9, 10, 10, 11, 11, 12, 12, 12, 9, 10, 10, 11, 11, 12, 12, 12, 13,
               14, 14, 15, 15, 16, 16, 16, 13, 14, 14, 15, 15, 16, 16, 16, 13, 14, 14, 15, 15, 16, 16, 16);
    vfree(1, &y);
    y = run1(node("Resize", 13, 4, "y", "mode=nearest nearest_mode=floor coordinate_transformation_mode=align_corners"),
             4, in_sz);
    CHECK_VALS("test_resize_upsample_sizes_nearest_floor_align_corners", &y, "1x1x8x8", 1, 1, 1, 2, 2, 3, 3, 4, 1,
               1, 1, 2, 2, 3, 3, 4, 1, 1, 1, 2, 2, 3, 3, 4, 5, 5, 5, 6, 6, 7, 7, 8, 5, 5, 5, 6, 6, 7, 7, 8, 9, 9, 9, 10,
               10, 11, 11, 12, 9, 9, 9, 10, 10, 11, 11, 12, 13, 13, 13, 14, 14, 15, 15, 16);
    vfree(1, &y);
    vfree(1, &size);
    size = vints("4", sz31);
    in_sz[3] = &size;
    y = run1(node("Resize", 13, 4, "y", "mode=linear coordinate_transformation_mode=pytorch_half_pixel"), 4, in_sz);
    CHECK_VALS("test_resize_downsample_sizes_linear_pytorch_half_pixel", &y, "1x1x3x1", 1.6666666f, 7, 12.333333f);
    vfree(1, &y);
    vfree(1, &size);
    sc = vdata("4", s2);
    in4[0] = &x, in4[2] = &sc;
    y = run1(node("Resize", 13, 4, "y", "mode=cubic coordinate_transformation_mode=asymmetric"), 3, in4);
    CHECK(same_shape(&y, "1x1x8x8") && fabsf(y.f[1] - 1.40625f) < 1e-6f && fabsf(y.f[7] - 4.09375f) < 1e-6f &&
          fabsf(y.f[63] - 16.46875f) < 1e-5f && y.f[56] == 13.375f && y.f[8] == 2.625f);
    vfree(1, &y);
    vfree(1, &sc);
    static const float s08[] = {1, 1, 0.8f, 0.8f};
    sc = vdata("4", s08);
    in4[2] = &sc;
    y = run1(node("Resize", 13, 4, "y", "mode=cubic cubic_coeff_a=-0.5 exclude_outside=1"), 3, in4);
    CHECK_VALS("test_resize_downsample_scales_cubic_A_n0p5_exclude_outside", &y, "1x1x3x3", 1.3681267f, 2.6695013f,
               4.0133367f, 6.573625f, 7.875f, 9.218835f, 11.948966f, 13.250341f, 14.594176f);
    vfree(1, &y);
    vfree(1, &sc);
    static const float roi[] = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};
    mpx_value rv = vdata("8", roi);
    size = vints("4", sz33);
    const mpx_value *in_crop[4] = {&x, &rv, NULL, &size};
    y = run1(node("Resize", 13, 4, "y", "mode=linear coordinate_transformation_mode=tf_crop_and_resize extrapolation_value=10.0"),
             4, in_crop);
    CHECK_VALS("test_resize_tf_crop_and_resize_extrapolation_value", &y, "1x1x3x3", 7.6000004f, 10, 10, 12.400001f,
               10, 10, 10, 10, 10);
    vfree(1, &y);
    vfree(1, &rv);
    vfree(1, &size);
    /* opset 18: axes */
    static const float s_ax[] = {2.0f, 0.5f};
    sc = vdata("2", s_ax);
    in4[2] = &sc;
    y = run1(node("Resize", 18, 4, "y", "mode=nearest axes=[3,2]"), 3, in4);
    CHECK(same_shape(&y, "1x1x2x8") && y.f[0] == 1.0f && y.f[1] == 1.0f && y.f[8] == 9.0f);
    vfree(1, &y);
    vfree(1, &sc);
    vfree(1, &x);

    /* linear sums go through the accumulator: fp16 rounds 2048 + 0.5 * 1 */
    static const float big[] = {2048, 2049.0f};
    x = vdata("2", big);
    static const float s15[] = {1.5f};
    sc = vdata("1", s15);
    in4[0] = &x, in4[2] = &sc;
    mpx_node *lin = node("Resize", 13, 4, "y", "mode=linear coordinate_transformation_mode=align_corners");
    CHECK(run(lin, &mpx_format_fp16, 0, 3, in4, 1, &y) == MPX_OK && same_shape(&y, "3") && y.f[1] == 2048.0f);
    vfree(1, &y);
    CHECK(run(lin, NULL, 0, 3, in4, 1, &y) == MPX_OK && y.f[1] == 2048.5f);
    vfree(1, &y);
    vfree(1, &x);
    vfree(1, &sc);
}

/* ---- refused inputs --------------------------------------------------------------------------- */

/* The node must fail with st and a message naming the node and containing needle. */
static void bad_(int line, mpx_node *n, int n_in, const mpx_value *const *in, mpx_status want, const char *needle) {
    mpx_value out[3];
    mpx_status st = run(n, NULL, 0, n_in, in, 3, out);
    CHECK_MSG(st == want, "line %d: %s: status %d, want %d (%s)", line, n->op_type, st, want, err.msg);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.msg, needle);
    CHECK_MSG(strstr(err.msg, "/blk/n") != NULL, "line %d: \"%s\" does not name the node", line, err.msg);
    for (int i = 0; i < 3; i++) CHECK_MSG(out[i].n < 0, "line %d: output %d left allocated", line, i);
}
#define BAD(n, n_in, in, st, needle) bad_(__LINE__, n, n_in, in, st, needle)

static void test_bad(void) {
    mpx_value x = vrand("1x4x5x5"), w = vrand("6x3x3x3"), w2 = vrand("6x2x3x3"), b = vrand("5");
    mpx_value xi = vzero(MPX_DT_INT64, "2x2"), x2 = vrand("4x5");
    const mpx_value *cw[3] = {&x, &w, NULL}, *cw2[3] = {&x, &w2, NULL}, *cb[3] = {&x, &w2, &b};
    BAD(node("Conv", 13, 3, "y", ""), 3, cw, MPX_E_SHAPE, "expect 3");
    BAD(node("Conv", 13, 3, "y", "group=4"), 3, cw2, MPX_E_SHAPE, "expect 8");
    BAD(node("Conv", 13, 3, "y", "group=0"), 3, cw2, MPX_E_INVALID, "group 0");
    BAD(node("Conv", 13, 3, "y", "group=2"), 3, cb, MPX_E_SHAPE, "bias B of shape 5");
    BAD(node("Conv", 13, 3, "y", "group=2 pads=[1,1]"), 3, cw2, MPX_E_INVALID, "pads has 2 values");
    BAD(node("Conv", 13, 3, "y", "group=2 strides=[0,1]"), 3, cw2, MPX_E_INVALID, "strides[0] = 0");
    BAD(node("Conv", 13, 3, "y", "group=2 auto_pad=SAME"), 3, cw2, MPX_E_INVALID, "auto_pad \"SAME\"");
    BAD(node("Conv", 13, 3, "y", "group=2 kernel_shape=[2,2]"), 3, cw2, MPX_E_SHAPE, "kernel_shape[0] = 2");
    BAD(node("Conv", 13, 3, "y", "group=2 dilations=[3,3]"), 3, cw2, MPX_E_SHAPE, "smaller than the kernel extent 7");
    mpx_value wbig = vrand("2x4x6x6");
    const mpx_value *cbig[2] = {&x, &wbig};
    BAD(node("Conv", 13, 2, "y", ""), 2, cbig, MPX_E_SHAPE, "kernel extent 6");
    const mpx_value *c1[2] = {&x, NULL};
    BAD(node("Conv", 13, 2, "y", ""), 2, c1, MPX_E_INVALID, "input 1 (W) is missing");
    const mpx_value *cint[2] = {&xi, &w};
    BAD(node("Conv", 13, 2, "y", ""), 2, cint, MPX_E_UNSUPPORTED, "int64");
    const mpx_value *c2d[2] = {&x2, &x2};
    BAD(node("Conv", 13, 2, "y", ""), 2, c2d, MPX_E_SHAPE, "rank 3 or more");
    BAD(node("ConvTranspose", 13, 2, "y", ""), 2, cw, MPX_E_SHAPE, "4 channels but weights W have shape 6x3x3x3");
    mpx_value wt = vrand("4x1x3x3");
    const mpx_value *ct[2] = {&x, &wt};
    BAD(node("ConvTranspose", 13, 2, "y", "group=3"), 2, ct, MPX_E_SHAPE, "do not divide into 3 groups");
    BAD(node("ConvTranspose", 13, 2, "y", "pads=[4,4,4,4]"), 2, ct, MPX_E_SHAPE, "would have length -1");
    BAD(node("ConvTranspose", 13, 2, "y", "output_shape=[3]"), 2, ct, MPX_E_INVALID, "output_shape must list 2");

    mpx_value a = vrand("3x5"), bm = vrand("4x5"), c = vrand("2x4");
    const mpx_value *g[3] = {&a, &bm, NULL}, *gc[3] = {&a, &bm, &c};
    BAD(node("Gemm", 13, 3, "y", ""), 3, g, MPX_E_SHAPE, "inner dims differ");
    BAD(node("Gemm", 13, 3, "y", "transB=1"), 3, gc, MPX_E_SHAPE, "C of shape 2x4 does not broadcast to 3x4");
    BAD(node("Gemm", 9, 3, "y", "transB=1"), 3, g, MPX_E_INVALID, "C is required before opset 11");
    const mpx_value *g3[3] = {&x, &bm, NULL};
    BAD(node("Gemm", 13, 3, "y", ""), 3, g3, MPX_E_SHAPE, "must both be matrices");
    mpx_value m1 = vrand("2x3x4"), m2 = vrand("3x4x5"), s0 = vzero(MPX_DT_FLOAT, "");
    const mpx_value *mm[2] = {&m1, &m2}, *mm2[2] = {&m1, &a}, *ms[2] = {&s0, &a}, *mi[2] = {&xi, &xi};
    BAD(node("MatMul", 13, 2, "y", ""), 2, mm, MPX_E_SHAPE, "batch dims do not broadcast");
    BAD(node("MatMul", 13, 2, "y", ""), 2, mm2, MPX_E_SHAPE, "inner dims differ: A 2x3x4 times B 3x5");
    BAD(node("MatMul", 13, 2, "y", ""), 2, ms, MPX_E_SHAPE, "must not be scalars");
    BAD(node("MatMul", 13, 2, "y", ""), 2, mi, MPX_E_UNSUPPORTED, "floating-point");

    const mpx_value *p1[1] = {&x};
    BAD(node("MaxPool", 12, 1, "y", ""), 1, p1, MPX_E_INVALID, "kernel_shape is required");
    BAD(node("MaxPool", 12, 1, "y", "kernel_shape=[3]"), 1, p1, MPX_E_INVALID, "kernel_shape has 1 values");
    BAD(node("AveragePool", 12, 1, "y", "kernel_shape=[7,7]"), 1, p1, MPX_E_SHAPE, "kernel extent 7");
    BAD(node("MaxPool", 12, 1, "y", "kernel_shape=[2,2] storage_order=2"), 1, p1, MPX_E_INVALID, "storage_order 2");
    const mpx_value *p2[1] = {&x2};
    BAD(node("GlobalAveragePool", 1, 1, "y", ""), 1, p2, MPX_E_SHAPE, "rank 3 or more");

    mpx_value s3 = vrand("3");
    const mpx_value *bn[5] = {&x, &s3, &s3, &s3, &s3};
    BAD(node("BatchNormalization", 15, 5, "y", ""), 5, bn, MPX_E_SHAPE, "one value per channel");
    const mpx_value *bn4[5] = {&x, &s3, &s3, &s3, NULL};
    BAD(node("BatchNormalization", 15, 5, "y", ""), 5, bn4, MPX_E_INVALID, "input 4 (var) is missing");
    const mpx_value *ln[2] = {&x, &s3};
    BAD(node("LayerNormalization", 17, 2, "y", ""), 2, ln, MPX_E_SHAPE, "Scale of shape 3 does not broadcast");
    BAD(node("LayerNormalization", 17, 2, "y", "axis=4"), 2, ln, MPX_E_SHAPE, "axis 4 is out of range");
    const mpx_value *in3[3] = {&x, &s3, &s3};
    BAD(node("InstanceNormalization", 6, 3, "y", ""), 3, in3, MPX_E_SHAPE, "one value per channel");
    BAD(node("LRN", 13, 1, "y", ""), 1, p1, MPX_E_INVALID, "size");
    BAD(node("Softmax", 13, 1, "y", "axis=-5"), 1, p1, MPX_E_SHAPE, "axis -5 is out of range");
    BAD(node("Softmax", 11, 1, "y", "axis=4"), 1, p1, MPX_E_SHAPE, "axis 4 is out of range");

    static const float s4[] = {1, 1, 2, 2}, s3v[] = {1, 2, 2}, sneg[] = {1, 1, -2, 2}, s05[] = {1, 1, 0.5f, 1};
    static const int64_t z4[] = {1, 4, 10, 10};
    mpx_value sc4 = vdata("4", s4), sc3 = vdata("3", s3v), scn = vdata("4", sneg), sc05 = vdata("4", s05), sz = vints("4", z4);
    const mpx_value *r1[4] = {&x, NULL, &sc4, &sz}, *r2[4] = {&x, NULL, &sc3, NULL}, *r3[4] = {&x, NULL, NULL, NULL},
                    *r4[4] = {&x, NULL, &scn, NULL};
    BAD(node("Resize", 13, 4, "y", ""), 4, r1, MPX_E_INVALID, "scales and sizes are both given");
    BAD(node("Resize", 13, 4, "y", ""), 4, r2, MPX_E_SHAPE, "scales has 3 values for 4 axes");
    BAD(node("Resize", 13, 4, "y", ""), 4, r3, MPX_E_INVALID, "neither scales nor sizes");
    BAD(node("Resize", 13, 4, "y", ""), 3, r4, MPX_E_INVALID, "scale -2 for axis 2 is not positive");
    BAD(node("Resize", 13, 4, "y", "mode=bilinear"), 3, r1, MPX_E_INVALID, "mode \"bilinear\"");
    BAD(node("Resize", 10, 2, "y", "mode=cubic"), 2, r1, MPX_E_INVALID, "mode \"cubic\"");
    BAD(node("Resize", 13, 4, "y", "coordinate_transformation_mode=tf_crop_and_resize"), 3, r1, MPX_E_INVALID, "roi");
    const mpx_value *u7[1] = {&x}, *u9[2] = {&x, &sc05};
    BAD(node("Upsample", 7, 1, "y", ""), 1, u7, MPX_E_INVALID, "scales (a list of floats) is required");
    BAD(node("Upsample", 9, 2, "y", ""), 2, u9, MPX_E_INVALID, "not at least 1");
    const mpx_value *r5[4] = {&x, NULL, &sc05, NULL};
    BAD(node("Resize", 18, 4, "y", "mode=linear antialias=1"), 3, r5, MPX_E_UNSUPPORTED, "antialias");
    mpx_value xi4 = vzero(MPX_DT_INT64, "1x1x2x2");
    const mpx_value *r6[4] = {&xi4, NULL, &sc4, NULL};
    BAD(node("Resize", 13, 4, "y", "mode=linear"), 3, r6, MPX_E_UNSUPPORTED, "linear interpolation of int64");
    /* nearest on integers is a copy */
    mpx_value y;
    CHECK(run(node("Resize", 13, 4, "y", ""), NULL, 0, 3, r6, 1, &y) == MPX_OK && y.dtype == MPX_DT_INT64 && y.n == 16);
    vfree(1, &y);
    BAD(node("Conv", 13, 2, "y", ""), 2, cw, MPX_E_SHAPE, "/blk/n");
    mpx_value_free(&x), mpx_value_free(&w), mpx_value_free(&w2), mpx_value_free(&b), mpx_value_free(&xi);
    mpx_value_free(&x2), mpx_value_free(&wbig), mpx_value_free(&wt), mpx_value_free(&a), mpx_value_free(&bm);
    mpx_value_free(&c), mpx_value_free(&m1), mpx_value_free(&m2), mpx_value_free(&s0), mpx_value_free(&s3);
    mpx_value_free(&sc4), mpx_value_free(&sc3), mpx_value_free(&scn), mpx_value_free(&sc05), mpx_value_free(&sz);
    mpx_value_free(&xi4);
}

/* The accum rule's sequential (MPX_ACC_SEQUENTIAL): Gemm and MatMul in fp32
 * sum one term after another, as PyTorch 1.13's CPU bf16 Linear does, not
 * in mpx's blocks of 64. 2^24 then 127 ones: term by term each 1 is lost
 * (2^24 + 1 rounds to 2^24); in blocks the second block's 64 ones are
 * summed apart and kept. */
static void test_matmul_sequential(void) {
    float bd[128];
    bd[0] = 16777216.0f;
    for (int k = 1; k < 128; k++) bd[k] = 1.0f;
    mpx_value a = vfill("3x128", 1.0f), b = vdata("128x1", bd), bt = vdata("1x128", bd), c1 = vfill("1", 1.0f), y;
    const mpx_value *mi[2] = {&a, &b}, *gi[3] = {&a, &bt, &c1};
    for (int seq = 0; seq < 2; seq++) {
        mpx_kctx c = {.node = node("MatMul", 13, 2, "y", ""), .acc = {.flags = seq ? MPX_ACC_SEQUENTIAL : 0u},
                      .err = &err};
        CHECK(mpx_kernel_for(MPX_OP_MatMul)(&c, mi, 2, &y, 1) == MPX_OK &&
              y.f[0] == (seq ? 16777216.0f : 16777280.0f) && y.f[2] == y.f[0]);
        vfree(1, &y);
        c.node = node("Gemm", 13, 3, "y", "transB=1");
        /* the bias after the sum: 2^24 + 1 rounds to 2^24 again */
        CHECK(mpx_kernel_for(MPX_OP_Gemm)(&c, gi, 3, &y, 1) == MPX_OK &&
              y.f[0] == (seq ? 16777216.0f : 16777280.0f) && y.f[1] == y.f[0]);
        vfree(1, &y);
    }
    vfree(1, &a);
    vfree(1, &b);
    vfree(1, &bt);
    vfree(1, &c1);
}

/* The accum rule's sleef-lanes (MPX_ACC_SLEEF_LANES): Softmax rows as
 * PyTorch 1.13's AVX2 kernel computes them, against that computation
 * written here one value at a time: e_k = Sleef's expf8_u10(x_k - max)
 * for k < D - D % 8 (sleef_ref.c calls the library), lane k % 8 summing
 * them in order from 0, the lanes combined as AVX2's halving tree
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), then e_k = expf(x_k -
 * max) for the last D % 8, each added in order; y_k = e_k * (1 / sum).
 * Rows of 1, 7, 8, 9, 17 and 197 (ViT-B/16's attention), bit for bit;
 * the same rows without the option differ (mpx's exp and blocks of 64);
 * over another axis the option leaves mpx's softmax. */
#ifdef MPX_TEST_SLEEF
float sleef_ref_expf8(float x);

static void test_softmax_sleef_lanes(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    /* (MPX_KERN_PORTABLE, set and not 0, stands for such a CPU: the kernel refuses the option) */
    const char *portable = getenv("MPX_KERN_PORTABLE");
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || (portable && *portable && strcmp(portable, "0") != 0)) {
        printf("test_softmax_sleef_lanes: skipped: no AVX2 and FMA (or MPX_KERN_PORTABLE)\n");
        return;
    }
#endif
    static const int lens[] = {1, 7, 8, 9, 17, 197};
    enum { ROWS = 6 };
    long bad = 0, values = 0, differ = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int D = lens[li];
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%d", ROWS, D);
        mpx_value x = vrand(shape), y, z;
        for (int64_t k = 0; k < x.n; k++) x.f[k] *= 12.0f; /* attention-like logits, e^-24 and below */
        const mpx_value *in[1] = {&x};
        const mpx_node *n = node("Softmax", 13, 1, "y", "");
        mpx_kctx c = {.node = n, .acc = {.flags = MPX_ACC_SLEEF_LANES}, .err = &err};
        CHECK_MSG(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &y, 1) == MPX_OK, "%s", err.msg);
        c.acc.flags = 0;
        CHECK(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &z, 1) == MPX_OK);
        for (int r = 0; r < ROWS; r++) {
            const float *xp = x.f + r * D;
            float m = xp[0], lane[8] = {0}, e[197];
            for (int k = 1; k < D; k++) m = xp[k] > m ? xp[k] : m;
            const int D8 = D - D % 8;
            for (int k = 0; k < D8; k++) lane[k % 8] += e[k] = sleef_ref_expf8(xp[k] - m);
            float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
            for (int k = D8; k < D; k++) sum += e[k] = expf(xp[k] - m);
            const float rs = 1.0f / sum;
            for (int k = 0; k < D; k++) {
                const float want = e[k] * rs;
                bad += memcmp(&want, &y.f[r * D + k], sizeof want) != 0;
                differ += y.f[r * D + k] != z.f[r * D + k];
                values++;
            }
        }
        vfree(1, &y);
        vfree(1, &z);
        vfree(1, &x);
    }
    CHECK_MSG(bad == 0, "sleef-lanes: %ld of %ld values differ from torch's steps computed here", bad, values);
    CHECK_MSG(differ > 10, "sleef-lanes: only %ld of %ld values differ from mpx's softmax", differ, values);
    /* axis 0 of 9x3: not the last axis, mpx's softmax as without the option */
    mpx_value x = vrand("9x3"), y, z;
    const mpx_value *in[1] = {&x};
    mpx_kctx c = {.node = node("Softmax", 13, 1, "y", "axis=0"), .acc = {.flags = MPX_ACC_SLEEF_LANES}, .err = &err};
    CHECK(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &y, 1) == MPX_OK);
    c.acc.flags = 0;
    CHECK(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &z, 1) == MPX_OK);
    CHECK(y.n == z.n && memcmp(y.f, z.f, (size_t)y.n * sizeof(float)) == 0);
    vfree(1, &y);
    vfree(1, &z);
    /* On a CPU without AVX2 and FMA (MPX_KERN_PORTABLE=1 stands for one)
     * the option is refused, naming what is missing and the rule that drops
     * it, and nothing is written; the same row over another axis still runs. */
    setenv("MPX_KERN_PORTABLE", "1", 1);
    c.node = node("Softmax", 13, 1, "y", "");
    c.acc.flags = MPX_ACC_SLEEF_LANES;
    mpx_value_clear(&y);
    mpx_error_clear(&err);
    CHECK(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &y, 1) == MPX_E_UNSUPPORTED && y.n < 0);
    CHECK_MSG(strstr(err.msg, "AVX2 and FMA") && strstr(err.msg, "accum Softmax fp32"), "refusal: %s", err.msg);
    c.node = node("Softmax", 13, 1, "y", "axis=0");
    CHECK(mpx_kernel_for(MPX_OP_Softmax)(&c, in, 1, &y, 1) == MPX_OK);
    unsetenv("MPX_KERN_PORTABLE");
    vfree(1, &y);
    vfree(1, &x);
}
#endif

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    G = mpx_graph_new("test_kern_nn");
    mpx_rng_init(&rng, 20240611);
    test_conv();
    test_conv_inf();
    test_matmul_sequential();
#ifdef MPX_TEST_SLEEF
    test_softmax_sleef_lanes();
#endif
    test_conv_transpose();
    test_gemm();
    test_matmul();
    test_accumulation();
    test_fp16_step();
    test_pool();
    test_norm();
    test_softmax();
    test_resize();
    test_bad();
    mpx_graph_free(G);
    return check_report("test_kern_nn");
}
