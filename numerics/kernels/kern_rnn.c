/* kern_rnn.c - the recurrent ops: LSTM, GRU and RNN (ONNX opset 7 to 22:
 * directions, layout, sequence_lens, initial states, peepholes, clip,
 * input_forget, linear_before_reset, the activation list with its alphas
 * and betas).
 *
 * Where a low plan rounds (the executor has already rounded X, W, R, B and
 * the initial states to the node's compute format, and rounds Y, Y_h and
 * Y_c to its output format afterwards). Per time step:
 *  - each gate's pre-activation: X_t.W^T, then H_{t-1}.R^T added to that
 *    sum in the node's accumulation format (the input's terms, then the
 *    hidden state's), plus the biases (and the peephole term), rounded once
 *    to the compute format, as a runtime's gate GEMM writes it. X.W^T of
 *    every step comes from one GEMM on the core before the time loop (as
 *    runtimes do it: kern_gemm.h's order; in fp32 its blocks of 64 use fused
 *    multiply-adds), the H terms per step continue in mpx_acc from it (in
 *    fp32 all gate rows at once, vectorised across rows, the same bits as
 *    row by row). For a rounded accumulation (fp16, bf16, tf32, after every
 *    addition) that is the one accumulator of the definition, bit for bit;
 *    an accumulation the core does not do (per-block rounding, fp8) sums
 *    the X terms per step too;
 *  - each gate's activation, rounded to the compute format;
 *  - the hidden state H_t (and LSTM's cell state C_t), rounded to the
 *    node's output format: the state a runtime carries from one step to the
 *    next is a tensor of that format, so its rounding error accumulates over
 *    time as it does there. This is what a user of a low recurrent op needs
 *    to see, and why the default colour keeps these ops out of the low
 *    format unless a rule says otherwise (colour/defaults.c).
 * The fp32 reference rounds nothing (compute and state formats are NULL).
 *
 * The activations are kern_elem.h's for Sigmoid and Tanh (ke_sigmoid,
 * within 2.4 ulp of the exact function; ke_tanh, within 1.03 ulp: float
 * arithmetic with fused multiply-adds, the same bits on every build and C
 * library, 8 or 16 lanes at a time where libm's tanhf was a call per
 * element and a quarter of an LSTM's time), libm's for the rest, so fp32
 * results agree with ONNX Runtime's to a few ulp, not bit for bit (ORT
 * evaluates its gates with MLAS's approximations; ops_ort holds the two
 * within its tolerances). The input
 * projection of every step runs on the GEMM core as one product and the
 * hidden terms are summed across rows, because a step at a time left the
 * recurrence several times slower than the product it contains. A step's
 * H terms are a small matrix-vector product: on AVX-512F or AVX2 with the
 * block sums in registers (rt_terms_avx512, rt_terms_avx2), R transposed
 * once and kept on its tensor, the directions and batch rows on the
 * threads (one direction each in a bidirectional layer: no hand-off per
 * step), and where nothing rounds a step's gates go over all units at once
 * (lstm_gates_f32, gru_step_f32; Sigmoid and Tanh vectorised); the
 * same operations in the same order as row by row and element by element,
 * so the same bits in every plan (test_rnn).
 *
 * A float64 node (kern_f64.c's table) runs the same kernel with f64 set:
 * the same checks, attributes, outputs and step walk, each step computed in
 * double by run_row_d (which says why it is plain C), rounded at the same
 * points when a plan colours the node low. */
#include "kern_elem.h"
#include "kern_gemm_core.h"
#include "kern_kept.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum rnn_kind { K_RNN, K_GRU, K_LSTM } rnn_kind;

/* ---- activations ---------------------------------------------------------------------- */

typedef enum act_fn {
    A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY_RELU, A_THRESHOLDED_RELU, A_SCALED_TANH,
    A_HARD_SIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS
} act_fn;

/* The activations ONNX lists for recurrent ops; uses: how many of
 * activation_alpha (1) and activation_beta (2) it takes, with the defaults
 * ONNX Runtime uses when the lists run short. */
static const struct {
    const char *name;
    act_fn fn;
    int uses;
    float alpha, beta;
} act_table[] = {
    {"Sigmoid", A_SIGMOID, 0, 0, 0},         {"Tanh", A_TANH, 0, 0, 0},
    {"Relu", A_RELU, 0, 0, 0},               {"Affine", A_AFFINE, 3, 1.0f, 0.0f},
    {"LeakyRelu", A_LEAKY_RELU, 1, 0.01f, 0}, {"ThresholdedRelu", A_THRESHOLDED_RELU, 1, 1.0f, 0},
    {"ScaledTanh", A_SCALED_TANH, 3, 1.0f, 1.0f}, {"HardSigmoid", A_HARD_SIGMOID, 3, 0.2f, 0.5f},
    {"Elu", A_ELU, 1, 1.0f, 0},              {"Softsign", A_SOFTSIGN, 0, 0, 0},
    {"Softplus", A_SOFTPLUS, 0, 0, 0},
};

typedef struct act {
    act_fn fn;
    float alpha, beta;
} act;

static float act_apply(const act *a, float x) {
    /* (act_map gives the same bits over arrays) */
    switch (a->fn) {
    case A_SIGMOID: return ke_sigmoid(x);
    case A_TANH: return ke_tanh(x);
    case A_RELU: return x > 0.0f ? x : 0.0f;
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY_RELU: return x >= 0.0f ? x : a->alpha * x;
    case A_THRESHOLDED_RELU: return x > a->alpha ? x : 0.0f;
    case A_SCALED_TANH: return a->alpha * ke_tanh(a->beta * x);
    case A_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    case A_ELU: return x >= 0.0f ? x : a->alpha * (expf(x) - 1.0f);
    case A_SOFTSIGN: return x / (1.0f + fabsf(x));
    case A_SOFTPLUS: return ke_softplus(x);
    }
    return x;
}

/* act_apply over x[0 .. n), in place: Sigmoid in vector form vec (read
 * once a node: ke_sigmoid_map, 16 lanes on AVX-512) and Tanh 8 or 16 lanes
 * at a time (mpx_k_tanh_map), ke_sigmoid's and ke_tanh's bits; the others
 * element by element. */
static void act_map(const act *a, float *x, int64_t n, ke_vec vec) {
    if (a->fn == A_SIGMOID) {
        ke_sigmoid_map(x, x, n, vec);
        return;
    }
    if (a->fn == A_TANH) {
        mpx_k_tanh_map(x, x, n);
        return;
    }
    for (int64_t k = 0; k < n; k++) x[k] = act_apply(a, x[k]);
}

/* The activation list: `per` functions per direction (RNN 1, GRU 2, LSTM 3),
 * given for every direction or defaulted (RNN: Tanh; GRU: Sigmoid, Tanh;
 * LSTM: Sigmoid, Tanh, Tanh); alphas and betas are taken in order by the
 * functions that use them. */
static mpx_status read_acts(const mpx_kctx *c, int per, int dirs, act *acts) {
    static const act_fn dflt[3][3] = {{A_TANH}, {A_SIGMOID, A_TANH}, {A_SIGMOID, A_TANH, A_TANH}};
    const mpx_attr *names = mpx_node_attr(c->node, "activations");
    const mpx_attr *al = mpx_node_attr(c->node, "activation_alpha"), *be = mpx_node_attr(c->node, "activation_beta");
    int n = per * dirs, ia = 0, ib = 0;
    if (names && (names->type != MPX_ATTR_STRINGS || names->n != n))
        return mpx_kernel_error(c, MPX_E_INVALID, "activations lists %d functions; %d expected (%d per direction)",
                                names->type == MPX_ATTR_STRINGS ? names->n : 1, n, per);
    for (int k = 0; k < n; k++) {
        size_t t = 0;
        if (names) {
            while (t < sizeof act_table / sizeof act_table[0] && strcasecmp(act_table[t].name, names->strings[k]) != 0) t++;
            if (t == sizeof act_table / sizeof act_table[0])
                return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "activation \"%s\" is not one ONNX defines for recurrent ops",
                                        names->strings[k]);
        } else {
            while (act_table[t].fn != dflt[per - 1][k % per]) t++;
        }
        acts[k] = (act){act_table[t].fn, act_table[t].alpha, act_table[t].beta};
        if ((act_table[t].uses & 1) && al && al->type == MPX_ATTR_FLOATS && ia < al->n) acts[k].alpha = al->floats[ia++];
        if ((act_table[t].uses & 2) && be && be->type == MPX_ATTR_FLOATS && ib < be->n) acts[k].beta = be->floats[ib++];
    }
    return MPX_OK;
}

/* ---- the kernel ------------------------------------------------------------------------- */

typedef struct rnn {
    const mpx_kctx *c;
    rnn_kind kind;
    int64_t seq, batch, in, hid, dirs, gates;
    bool layout1, reverse, input_forget, linear_before_reset, has_clip; /* reverse: direction "reverse" */
    float clip;
    const float *x, *w, *r, *b, *p, *h0, *c0;
    const int64_t *lens;
    float *y, *yh, *yc;
    /* float64 nodes (f64): the same tensors as doubles, the fp32 pointers
     * above NULL (run_row_d) */
    bool f64;
    const double *xd, *wd, *rd, *bd, *pd, *h0d, *c0d;
    double *yd, *yhd, *ycd;
    act acts[6];
    /* Each (direction, batch row)'s vectors, per_row elements (floats, or
     * doubles for f64) apart: h, c, the gates, r.h (GRU), the next h, GRU's
     * two hidden-gate parts, the blocks (see rnn_kernel). */
    void *scratch;
    int64_t per_row;
    bool avx2, avx512; /* the H terms on AVX2 (rt_terms_avx2) or AVX-512F (rt_terms_avx512) */
    ke_vec vec;        /* Sigmoid's vector form (act_map) */
    /* X.W^T of every step and direction from the GEMM core
     * ([dirs][seq * batch][gates * hid], rows in X's order), or NULL when the
     * node's accumulation is one the core does not do (per-block rounding,
     * fp8): then each gate sums its X terms itself. */
    float *xw;
    /* R transposed ([dirs][hid][gates * hid]) when the accumulation is fp32:
     * the H terms of all gate rows at once, vectorised across rows; NULL:
     * row by row. Kept on R's tensor when R is a constant (rt_owned NULL),
     * else made for the call (rt_owned, freed with it). */
    const float *rt;
    float *rt_owned;
} rnn;

static float rnd(const mpx_format *f, float v) {
    if (f) mpx_round_array(f, &v, &v, 1);
    return v;
}

static float clipped(const rnn *s, float v) {
    if (!s->has_clip) return v;
    return v < -s->clip ? -s->clip : v > s->clip ? s->clip : v;
}

/* dot(x_t, W row), or xw (that sum, from the GEMM core), then + dot(h, R
 * row) in the node's accumulator starting from it; any part may be NULL. */
static float gate_sum(const rnn *s, const float *xw, const float *xt, const float *wrow, const float *h,
                      const float *rrow) {
    mpx_acc a;
    mpx_acc_init(&a, &s->c->acc, xw ? *xw : 0.0f);
    for (int64_t i = 0; !xw && xt && i < s->in; i++) mpx_acc_add(&a, xt[i] * wrow[i]);
    for (int64_t k = 0; h && k < s->hid; k++) mpx_acc_add(&a, h[k] * rrow[k]);
    return mpx_acc_result(&a);
}

/* out[q] += v.RT[.][q] for q < nq (RT's rows ld apart, one per k < H),
 * in mpx_acc's fp32 order: per block of MPX_ACC_FP32_BLOCK k, the block's
 * products summed from 0 (each product rounded, then added: no fused
 * multiply-add), the block added to out[q]. blk: nq floats of scratch. */
static void rt_terms(const float *RT, int64_t ld, const float *v, int64_t H, int64_t nq, float *out, float *blk) {
    for (int64_t k0 = 0; k0 < H; k0 += MPX_ACC_FP32_BLOCK) {
        int64_t k1 = H - k0 < MPX_ACC_FP32_BLOCK ? H : k0 + MPX_ACC_FP32_BLOCK;
        for (int64_t q = 0; q < nq; q++) blk[q] = 0.0f;
        for (int64_t k = k0; k < k1; k++) {
            const float hk = v[k], *rr = RT + k * ld;
            for (int64_t q = 0; q < nq; q++) blk[q] += hk * rr[q];
        }
        for (int64_t q = 0; q < nq; q++) out[q] += blk[q];
    }
}

#if KG_HAVE_X86
/* rt_terms for the rows [q, q + 8 nb) on AVX2, the same operations per row:
 * the rows' block sums held in nb registers across the block's k (one load
 * of RT per product, where rt_terms loads and stores the block sums at every
 * k: a step's matrix-vector product is most of a recurrent op's time), the
 * multiplies and adds separate, as rt_terms. nb is a constant at each call
 * (8, 4, 1), so the loops over the registers unroll and the arrays stay in
 * registers. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
rt_panel_avx2(const float *RT, int64_t ld, const float *v, int64_t H, int64_t q, float *out, const int nb) {
    __m256 o[8], b[8];
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) o[j] = _mm256_loadu_ps(out + q + 8 * j);
    for (int64_t k0 = 0; k0 < H; k0 += MPX_ACC_FP32_BLOCK) {
        int64_t k1 = H - k0 < MPX_ACC_FP32_BLOCK ? H : k0 + MPX_ACC_FP32_BLOCK;
#pragma GCC unroll 8
        for (int j = 0; j < nb; j++) b[j] = _mm256_setzero_ps();
        for (int64_t k = k0; k < k1; k++) {
            const __m256 hk = _mm256_set1_ps(v[k]);
            const float *rr = RT + k * ld + q;
#pragma GCC unroll 8
            for (int j = 0; j < nb; j++) b[j] = _mm256_add_ps(b[j], _mm256_mul_ps(hk, _mm256_loadu_ps(rr + 8 * j)));
        }
#pragma GCC unroll 8
        for (int j = 0; j < nb; j++) o[j] = _mm256_add_ps(o[j], b[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) _mm256_storeu_ps(out + q + 8 * j, o[j]);
}

/* rt_terms on AVX2: 64 rows at a time (eight chains of additions in
 * flight), then 32, then 8, then one at a time. */
__attribute__((target("avx2,fma"))) static void rt_terms_avx2(const float *RT, int64_t ld, const float *v, int64_t H,
                                                              int64_t nq, float *out) {
    int64_t q = 0;
    for (; q + 64 <= nq; q += 64) rt_panel_avx2(RT, ld, v, H, q, out, 8);
    for (; q + 32 <= nq; q += 32) rt_panel_avx2(RT, ld, v, H, q, out, 4);
    for (; q + 8 <= nq; q += 8) rt_panel_avx2(RT, ld, v, H, q, out, 1);
    for (; q < nq; q++)
        for (int64_t k0 = 0; k0 < H; k0 += MPX_ACC_FP32_BLOCK) {
            int64_t k1 = H - k0 < MPX_ACC_FP32_BLOCK ? H : k0 + MPX_ACC_FP32_BLOCK;
            float b = 0.0f;
            for (int64_t k = k0; k < k1; k++) b += v[k] * RT[k * ld + q];
            out[q] += b;
        }
}

/* rt_panel_avx2 on 16 lanes: the rows [q, q + 16 nb), the last register's
 * lanes outside `last` neither read nor written, the same operations per
 * row (a multiply, then an add: no fused multiply-add), so the same bits.
 * Why: a GRU's (hidden 128) step spent 40% of its time in the 8-lane
 * form; a 16-lane register holds twice the rows for the same loads,
 * multiplies and adds. */
__attribute__((target("avx512f"), always_inline)) static inline void
rt_panel_avx512(const float *RT, int64_t ld, const float *v, int64_t H, int64_t q, float *out, const int nb,
                __mmask16 last) {
    __m512 o[8], b[8];
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) o[j] = _mm512_maskz_loadu_ps(j == nb - 1 ? last : 0xffff, out + q + 16 * j);
    for (int64_t k0 = 0; k0 < H; k0 += MPX_ACC_FP32_BLOCK) {
        int64_t k1 = H - k0 < MPX_ACC_FP32_BLOCK ? H : k0 + MPX_ACC_FP32_BLOCK;
#pragma GCC unroll 8
        for (int j = 0; j < nb; j++) b[j] = _mm512_setzero_ps();
        for (int64_t k = k0; k < k1; k++) {
            const __m512 hk = _mm512_set1_ps(v[k]);
            const float *rr = RT + k * ld + q;
#pragma GCC unroll 8
            for (int j = 0; j < nb; j++)
                b[j] = _mm512_add_ps(
                    b[j], _mm512_mul_ps(hk, _mm512_maskz_loadu_ps(j == nb - 1 ? last : 0xffff, rr + 16 * j)));
        }
#pragma GCC unroll 8
        for (int j = 0; j < nb; j++) o[j] = _mm512_add_ps(o[j], b[j]);
    }
#pragma GCC unroll 8
    for (int j = 0; j < nb; j++) _mm512_mask_storeu_ps(out + q + 16 * j, j == nb - 1 ? last : 0xffff, o[j]);
}

/* rt_terms on AVX-512F: 128 rows at a time, then 64, then 16, then the
 * last few under a mask. */
__attribute__((target("avx512f"))) static void rt_terms_avx512(const float *RT, int64_t ld, const float *v,
                                                                int64_t H, int64_t nq, float *out) {
    int64_t q = 0;
    for (; q + 128 <= nq; q += 128) rt_panel_avx512(RT, ld, v, H, q, out, 8, 0xffff);
    for (; q + 64 <= nq; q += 64) rt_panel_avx512(RT, ld, v, H, q, out, 4, 0xffff);
    for (; q + 16 <= nq; q += 16) rt_panel_avx512(RT, ld, v, H, q, out, 1, 0xffff);
    if (q < nq) rt_panel_avx512(RT, ld, v, H, q, out, 1, (__mmask16)((1u << (nq - q)) - 1u));
}
#endif

/* Gate rows q0 .. q0 + nq - 1 of direction d at one step: with_x: the X
 * terms (xwrow: the row of s->xw, else from xt), then v.R_q (v NULL: none),
 * into out[0 .. nq). With s->rt (fp32) the H terms of every row go at once
 * (rt_terms: the bits of the row-by-row sums). blk: nq floats of scratch. */
static void gate_sums(const rnn *s, int64_t d, bool with_x, const float *xwrow, const float *xt, const float *v,
                      int64_t q0, int64_t nq, float *out, float *blk) {
    const int64_t H = s->hid, GH = s->gates * H;
    const float *W = s->w + d * GH * s->in, *R = s->r + d * GH * H;
    if (s->rt && (!with_x || xwrow)) {
        if (with_x) /* (a copy: a loop choosing per value ran a value at a time, 8% of a GRU's time) */
            memcpy(out, xwrow + q0, (size_t)nq * sizeof *out);
        else
            memset(out, 0, (size_t)nq * sizeof *out);
        if (!v) return;
        const float *RT = s->rt + d * H * GH + q0;
#if KG_HAVE_X86
        if (s->avx512) {
            rt_terms_avx512(RT, GH, v, H, nq, out);
            return;
        }
        if (s->avx2) {
            rt_terms_avx2(RT, GH, v, H, nq, out);
            return;
        }
#endif
        rt_terms(RT, GH, v, H, nq, out, blk);
        return;
    }
    for (int64_t q = 0; q < nq; q++) {
        const float *xq = with_x && xwrow ? &xwrow[q0 + q] : NULL;
        out[q] = gate_sum(s, xq, with_x ? xt : NULL, W + (q0 + q) * s->in, v, v ? R + (q0 + q) * H : NULL);
    }
}

/* ---- the walk the fp32 and float64 paths share ---------------------------------------- */

/* The offset of direction d, batch row b's H values in initial_h,
 * initial_c, Y_h and Y_c. */
static int64_t state_at(const rnn *s, int64_t d, int64_t b) {
    return (s->layout1 ? b * s->dirs + d : d * s->batch + b) * s->hid;
}

/* Where step `step` of direction d over batch row b reads and writes: its
 * time t (backwards for "reverse" and a bidirectional node's second
 * direction, from the row's own sequence length), X's row (and xw's), and
 * the offset of its H values in Y. */
typedef struct rnn_at {
    int64_t t, row, yo;
} rnn_at;

static int64_t seq_len(const rnn *s, int64_t b) {
    return s->lens ? s->lens[b] : s->seq;
}

static rnn_at step_at(const rnn *s, int64_t d, int64_t b, int64_t step) {
    const bool reverse = s->dirs == 2 ? d == 1 : s->reverse;
    const int64_t t = reverse ? seq_len(s, b) - 1 - step : step, H = s->hid;
    return (rnn_at){.t = t,
                    .row = s->layout1 ? b * s->seq + t : t * s->batch + b,
                    .yo = s->layout1 ? ((b * s->seq + t) * s->dirs + d) * H : ((t * s->dirs + d) * s->batch + b) * H};
}

/* Direction d's parameters: the offsets of its biases (W's G H, then R's)
 * and peepholes (i, o, f: 3 H), its activations. */
static int64_t bias_at(const rnn *s, int64_t d) {
    return d * 2 * s->gates * s->hid;
}
static int64_t peep_at(const rnn *s, int64_t d) {
    return d * 3 * s->hid;
}
static const act *acts_of(const rnn *s, int64_t d) {
    return s->acts + d * (s->kind == K_LSTM ? 3 : s->kind == K_GRU ? 2 : 1);
}

/* LSTM's gates at one step where nothing rounds (fp32: no compute or
 * state format): g holds the pre-activations i, o, f, c (X and H terms and
 * biases), cs the cell state, updated; hn gets the next h. run_row's
 * scalar loop in other words, each gate's activation over all H units at
 * once (act_map; tc: H floats of scratch for the cell state's): the same
 * operations on the same values, so the same bits. */
static void lstm_gates_f32(const rnn *s, const act *A, const float *P, float *g, float *cs, float *hn, float *tc) {
    const int64_t H = s->hid;
    for (int64_t j = 0; P && j < H; j++) {
        g[j] = g[j] + P[j] * cs[j];
        g[2 * H + j] = g[2 * H + j] + P[2 * H + j] * cs[j];
    }
    for (int64_t q = 0; s->has_clip && q < 4 * H; q++)
        if (!P || q < H || q >= 2 * H) g[q] = clipped(s, g[q]);
    act_map(&A[0], g, H, s->vec);
    if (!s->input_forget) act_map(&A[0], g + 2 * H, H, s->vec);
    act_map(&A[1], g + 3 * H, H, s->vec);
    for (int64_t j = 0; j < H; j++) {
        const float ig = g[j], fg = s->input_forget ? 1.0f - ig : g[2 * H + j];
        cs[j] = fg * cs[j] + ig * g[3 * H + j];
    }
    for (int64_t j = 0; P && j < H; j++) g[H + j] = clipped(s, g[H + j] + P[H + j] * cs[j]);
    act_map(&A[0], g + H, H, s->vec);
    memcpy(tc, cs, (size_t)H * sizeof *tc);
    act_map(&A[2], tc, H, s->vec);
    for (int64_t j = 0; j < H; j++) hn[j] = g[H + j] * tc[j];
}

/* clipped over x[0 .. n), in place. */
static void clip_map(const rnn *s, float *x, int64_t n) {
    if (!s->has_clip) return;
    const float c = s->clip;
    for (int64_t q = 0; q < n; q++) x[q] = x[q] < -c ? -c : x[q] > c ? c : x[q];
}

/* A GRU step where nothing rounds, after the z and r gates' sums (g[0 ..
 * 2H)): run_row's GRU branch with every rounding the identity, each loop
 * plain over arrays (the same operations on the same values in the same
 * order, so the same bits: test_rnn) where run_row's element loops call
 * rnd and clipped per value. Why: those loops were a sixth of a GRU's
 * (hidden 128) time, scalar with a call and two branches a value. */
static void gru_step_f32(const rnn *s, int64_t d, const act *A, const float *xwrow, const float *xt,
                         const float *Wb, const float *Rb, const float *h, float *g, float *rh, float *hs, float *hx,
                         float *hn, float *blk) {
    const int64_t H = s->hid;
    if (Wb)
        for (int64_t q = 0; q < 2 * H; q++) g[q] = g[q] + Wb[q] + Rb[q];
    clip_map(s, g, 2 * H);
    act_map(&A[0], g, 2 * H, s->vec);
    const float *r = g + H;
    if (s->linear_before_reset) { /* r . (H.Rh^T + Rbh): the H part alone, then the X part alone */
        gate_sums(s, d, false, NULL, NULL, h, 2 * H, H, hs, blk);
        gate_sums(s, d, true, xwrow, xt, NULL, 2 * H, H, hx, blk);
        if (Wb) {
            const float *wh = Wb + 2 * H, *rbh = Rb + 2 * H;
            for (int64_t j = 0; j < H; j++) hx[j] = hx[j] + wh[j] + r[j] * (hs[j] + rbh[j]);
        } else {
            for (int64_t j = 0; j < H; j++) hx[j] = hx[j] + 0.0f + r[j] * (hs[j] + 0.0f);
        }
    } else { /* (r . H).Rh^T */
        for (int64_t k = 0; k < H; k++) rh[k] = r[k] * h[k];
        gate_sums(s, d, true, xwrow, xt, rh, 2 * H, H, hx, blk);
        if (Wb) {
            const float *wh = Wb + 2 * H, *rbh = Rb + 2 * H;
            for (int64_t j = 0; j < H; j++) hx[j] = hx[j] + wh[j] + rbh[j];
        }
    }
    clip_map(s, hx, H);
    act_map(&A[1], hx, H, s->vec);
    for (int64_t j = 0; j < H; j++) hn[j] = (1.0f - g[j]) * hx[j] + g[j] * h[j];
}

/* One direction d over one batch row b; scratch: its own s->per_row floats. */
static void run_row(const rnn *s, int64_t d, int64_t b, float *scratch) {
    const mpx_format *cf = s->c->round, *sf = s->c->state;
    int64_t H = s->hid, G = s->gates, len = seq_len(s, b);
    float *h = scratch, *cs = h + H, *g = cs + H, *rh = g + G * H, *hn = rh + H, *hs = hn + H, *hx = hs + H;
    float *blk = hx + H;
    const float *Wb = s->b ? s->b + bias_at(s, d) : NULL, *Rb = Wb ? Wb + G * H : NULL;
    const float *P = s->p ? s->p + peep_at(s, d) : NULL;
    const act *A = acts_of(s, d);
    const bool f32 = !cf && !sf; /* nothing rounds: the gates over arrays */
    for (int64_t j = 0; j < H; j++) {
        h[j] = s->h0 ? s->h0[state_at(s, d, b) + j] : 0.0f;
        cs[j] = s->c0 ? s->c0[state_at(s, d, b) + j] : 0.0f;
    }
    for (int64_t step = 0; step < len; step++) { /* Y past the sequence's length stays 0 */
        if (mpx_k_cancelled()) return; /* a step apart; the executor drops the values (mpx_k_cancelled) */
        const rnn_at at = step_at(s, d, b, step);
        float *yt = s->y ? s->y + at.yo : NULL;
        const float *xt = s->x + at.row * s->in;
        const float *xwrow = s->xw ? s->xw + (d * s->seq * s->batch + at.row) * G * H : NULL;
        if (s->kind == K_LSTM) { /* gates i, o, f, c */
            gate_sums(s, d, true, xwrow, xt, h, 0, 4 * H, g, blk);
            for (int64_t q = 0; Wb && q < 4 * H; q++) g[q] = g[q] + Wb[q] + Rb[q];
            if (f32) {
                lstm_gates_f32(s, A, P, g, cs, hn, rh); /* (rh: GRU's, free here) */
            } else {
                for (int64_t j = 0; j < H; j++) {
                    float pi = g[j], po = g[H + j], pf = g[2 * H + j], pc = g[3 * H + j];
                    if (P) pi += P[j] * cs[j], pf += P[2 * H + j] * cs[j];
                    float ig = rnd(cf, act_apply(&A[0], clipped(s, rnd(cf, pi))));
                    float fg = s->input_forget ? rnd(cf, 1.0f - ig) : rnd(cf, act_apply(&A[0], clipped(s, rnd(cf, pf))));
                    float cg = rnd(cf, act_apply(&A[1], clipped(s, rnd(cf, pc))));
                    float cn = rnd(sf, fg * cs[j] + ig * cg);
                    if (P) po += P[H + j] * cn;
                    float og = rnd(cf, act_apply(&A[0], clipped(s, rnd(cf, po))));
                    hn[j] = rnd(sf, og * act_apply(&A[2], cn));
                    cs[j] = cn;
                }
            }
        } else if (s->kind == K_GRU && f32) { /* gates z, r, h; nothing rounds */
            gate_sums(s, d, true, xwrow, xt, h, 0, 2 * H, g, blk);
            gru_step_f32(s, d, A, xwrow, xt, Wb, Rb, h, g, rh, hs, hx, hn, blk);
        } else if (s->kind == K_GRU) { /* gates z, r, h, each rounded where a runtime rounds it */
            gate_sums(s, d, true, xwrow, xt, h, 0, 2 * H, g, blk);
            for (int64_t q = 0; q < 2 * H; q++) {
                float v = g[q];
                if (Wb) v = v + Wb[q] + Rb[q];
                g[q] = rnd(cf, act_apply(&A[0], clipped(s, rnd(cf, v))));
            }
            for (int64_t k = 0; k < H; k++) rh[k] = rnd(cf, g[H + k] * h[k]);
            if (s->linear_before_reset) { /* the H part alone, then the X part alone */
                gate_sums(s, d, false, NULL, NULL, h, 2 * H, H, hs, blk);
                gate_sums(s, d, true, xwrow, xt, NULL, 2 * H, H, hx, blk);
            } else { /* (r . H).Rh^T */
                gate_sums(s, d, true, xwrow, xt, rh, 2 * H, H, hx, blk);
            }
            for (int64_t j = 0; j < H; j++) {
                float v;
                if (s->linear_before_reset) { /* r . (H.Rh^T + Rbh), rounded as its GEMM writes it */
                    float hsj = hs[j] + (Rb ? Rb[2 * H + j] : 0.0f);
                    v = hx[j] + (Wb ? Wb[2 * H + j] : 0.0f) + g[H + j] * rnd(cf, hsj);
                } else {
                    v = hx[j];
                    if (Wb) v = v + Wb[2 * H + j] + Rb[2 * H + j];
                }
                hx[j] = rnd(cf, act_apply(&A[1], clipped(s, rnd(cf, v))));
            }
            for (int64_t j = 0; j < H; j++) {
                float hh = hx[j], z = g[j];
                hn[j] = rnd(sf, (1.0f - z) * hh + z * h[j]);
            }
        } else if (f32) { /* RNN, nothing rounds: as below, over arrays (gru_step_f32 says why) */
            gate_sums(s, d, true, xwrow, xt, h, 0, H, hn, blk);
            if (Wb)
                for (int64_t j = 0; j < H; j++) hn[j] = hn[j] + Wb[j] + Rb[j];
            clip_map(s, hn, H);
            act_map(&A[0], hn, H, s->vec);
        } else {
            gate_sums(s, d, true, xwrow, xt, h, 0, H, hx, blk);
            for (int64_t j = 0; j < H; j++) {
                float v = hx[j];
                if (Wb) v = v + Wb[j] + Rb[j];
                hn[j] = rnd(sf, act_apply(&A[0], clipped(s, rnd(cf, v))));
            }
        }
        memcpy(h, hn, (size_t)H * sizeof *h);
        if (yt) memcpy(yt, h, (size_t)H * sizeof *h);
    }
    if (s->yh) memcpy(s->yh + state_at(s, d, b), h, (size_t)H * sizeof *h);
    if (s->yc) memcpy(s->yc + state_at(s, d, b), cs, (size_t)H * sizeof *cs);
}

/* ---- float64 ------------------------------------------------------------------------------ */

/* The float64 path (run_row_d): run_row's steps, walk and rounding points
 * on doubles, every product, sum and activation in double (libm's; the
 * alphas, betas and clip are the attributes' floats). It is plain C, one
 * gate row at a time with its sum in index order (the X terms, then the H
 * terms, then the biases: the order of the fp32 path's definition and of
 * the float64 kernels' rule, docs/float64.md), because what makes the fp32
 * path fast is fp32-only: the GEMM core's input projection, mpx_acc's fp32
 * blocks in AVX2 registers, the vectorised Sigmoid and Tanh. A reference
 * for float64 models, which are small where recurrent, needs the defined
 * sum more than that speed. */

static double act_apply_d(const act *a, double x) {
    const double al = (double)a->alpha, be = (double)a->beta;
    switch (a->fn) {
    case A_SIGMOID: return ke_sigmoid_d(x);
    case A_TANH: return tanh(x);
    case A_RELU: return x > 0.0 ? x : 0.0;
    case A_AFFINE: return al * x + be;
    case A_LEAKY_RELU: return x >= 0.0 ? x : al * x;
    case A_THRESHOLDED_RELU: return x > al ? x : 0.0;
    case A_SCALED_TANH: return al * tanh(be * x);
    case A_HARD_SIGMOID: {
        double v = al * x + be;
        return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
    }
    case A_ELU: return x >= 0.0 ? x : al * (exp(x) - 1.0);
    case A_SOFTSIGN: return x / (1.0 + fabs(x));
    case A_SOFTPLUS: return ke_softplus_d(x);
    }
    return x;
}

/* A float64 node a plan colours low: the values rounded from the double at
 * the fp32 path's points (compute and state formats), held as doubles. */
static double rnd_d(const mpx_format *f, double v) {
    if (f) mpx_round_double_array(f, &v, &v, 1);
    return v;
}

static double clipped_d(const rnn *s, double v) {
    if (!s->has_clip) return v;
    const double c = (double)s->clip;
    return v < -c ? -c : v > c ? c : v;
}

/* Gate rows q0 .. q0 + nq - 1 of direction d at one step, into out: the
 * X terms xt.W_q (xt NULL: none), then v.R_q (v NULL: none), in index
 * order in double. */
static void gate_sums_d(const rnn *s, int64_t d, const double *xt, const double *v, int64_t q0, int64_t nq,
                        double *out) {
    const int64_t H = s->hid, GH = s->gates * H;
    for (int64_t q = q0; q < q0 + nq; q++) {
        const double *wq = s->wd + (d * GH + q) * s->in, *rq = s->rd + (d * GH + q) * H;
        double a = 0.0;
        for (int64_t i = 0; xt && i < s->in; i++) a += xt[i] * wq[i];
        for (int64_t k = 0; v && k < H; k++) a += v[k] * rq[k];
        out[q - q0] = a;
    }
}

/* run_row for a float64 node; scratch: its own s->per_row doubles. */
static void run_row_d(const rnn *s, int64_t d, int64_t b, double *scratch) {
    const mpx_format *cf = s->c->round, *sf = s->c->state;
    const int64_t H = s->hid, G = s->gates, len = seq_len(s, b);
    double *h = scratch, *cs = h + H, *g = cs + H, *rh = g + G * H, *hn = rh + H, *hs = hn + H, *hx = hs + H;
    const double *Wb = s->bd ? s->bd + bias_at(s, d) : NULL, *Rb = Wb ? Wb + G * H : NULL;
    const double *P = s->pd ? s->pd + peep_at(s, d) : NULL;
    const act *A = acts_of(s, d);
    for (int64_t j = 0; j < H; j++) {
        h[j] = s->h0d ? s->h0d[state_at(s, d, b) + j] : 0.0;
        cs[j] = s->c0d ? s->c0d[state_at(s, d, b) + j] : 0.0;
    }
    for (int64_t step = 0; step < len; step++) { /* Y past the sequence's length stays 0 */
        if (mpx_k_cancelled()) return;
        const rnn_at at = step_at(s, d, b, step);
        const double *xt = s->xd + at.row * s->in;
        if (s->kind == K_LSTM) { /* gates i, o, f, c */
            gate_sums_d(s, d, xt, h, 0, 4 * H, g);
            for (int64_t q = 0; Wb && q < 4 * H; q++) g[q] = g[q] + Wb[q] + Rb[q];
            for (int64_t j = 0; j < H; j++) {
                double pi = g[j], po = g[H + j], pf = g[2 * H + j], pc = g[3 * H + j];
                if (P) pi += P[j] * cs[j], pf += P[2 * H + j] * cs[j];
                double ig = rnd_d(cf, act_apply_d(&A[0], clipped_d(s, rnd_d(cf, pi))));
                double fg = s->input_forget ? rnd_d(cf, 1.0 - ig)
                                            : rnd_d(cf, act_apply_d(&A[0], clipped_d(s, rnd_d(cf, pf))));
                double cg = rnd_d(cf, act_apply_d(&A[1], clipped_d(s, rnd_d(cf, pc))));
                double cn = rnd_d(sf, fg * cs[j] + ig * cg);
                if (P) po += P[H + j] * cn;
                double og = rnd_d(cf, act_apply_d(&A[0], clipped_d(s, rnd_d(cf, po))));
                hn[j] = rnd_d(sf, og * act_apply_d(&A[2], cn));
                cs[j] = cn;
            }
        } else if (s->kind == K_GRU) { /* gates z, r, h, each rounded where a runtime rounds it */
            gate_sums_d(s, d, xt, h, 0, 2 * H, g);
            for (int64_t q = 0; q < 2 * H; q++) {
                double v = g[q];
                if (Wb) v = v + Wb[q] + Rb[q];
                g[q] = rnd_d(cf, act_apply_d(&A[0], clipped_d(s, rnd_d(cf, v))));
            }
            for (int64_t k = 0; k < H; k++) rh[k] = rnd_d(cf, g[H + k] * h[k]);
            if (s->linear_before_reset) { /* the H part alone, then the X part alone */
                gate_sums_d(s, d, NULL, h, 2 * H, H, hs);
                gate_sums_d(s, d, xt, NULL, 2 * H, H, hx);
            } else { /* (r . H).Rh^T */
                gate_sums_d(s, d, xt, rh, 2 * H, H, hx);
            }
            for (int64_t j = 0; j < H; j++) {
                double v;
                if (s->linear_before_reset) { /* r . (H.Rh^T + Rbh) */
                    double hsj = hs[j] + (Rb ? Rb[2 * H + j] : 0.0);
                    v = hx[j] + (Wb ? Wb[2 * H + j] : 0.0) + g[H + j] * rnd_d(cf, hsj);
                } else {
                    v = hx[j];
                    if (Wb) v = v + Wb[2 * H + j] + Rb[2 * H + j];
                }
                double hh = rnd_d(cf, act_apply_d(&A[1], clipped_d(s, rnd_d(cf, v)))), z = g[j];
                hn[j] = rnd_d(sf, (1.0 - z) * hh + z * h[j]);
            }
        } else {
            gate_sums_d(s, d, xt, h, 0, H, hx);
            for (int64_t j = 0; j < H; j++) {
                double v = hx[j];
                if (Wb) v = v + Wb[j] + Rb[j];
                hn[j] = rnd_d(sf, act_apply_d(&A[0], clipped_d(s, rnd_d(cf, v))));
            }
        }
        memcpy(h, hn, (size_t)H * sizeof *h);
        if (s->yd) memcpy(s->yd + at.yo, h, (size_t)H * sizeof *h);
    }
    if (s->yhd) memcpy(s->yhd + state_at(s, d, b), h, (size_t)H * sizeof *h);
    if (s->ycd) memcpy(s->ycd + state_at(s, d, b), cs, (size_t)H * sizeof *cs);
}

/* The (direction, batch row) pairs are independent: item i is direction
 * i / batch, row i % batch, each with its own scratch. */
static void row_item(void *ctx, int tid, long item) {
    (void)tid;
    const rnn *s = ctx;
    if (s->f64)
        run_row_d(s, item / s->batch, item % s->batch, (double *)s->scratch + item * s->per_row);
    else
        run_row(s, item / s->batch, item % s->batch, (float *)s->scratch + item * s->per_row);
}

/* R transposed, [dirs][hid][gates * hid]: tiles of 8 x 8 (reads and writes
 * of whole lines). */
static void transpose_r(const rnn *s, float *rt) {
    const int64_t H = s->hid, GH = s->gates * H;
    for (int64_t d = 0; d < s->dirs; d++)
        for (int64_t q0 = 0; q0 < GH; q0 += 8)
            for (int64_t k0 = 0; k0 < H; k0 += 8)
                for (int64_t q = q0; q < q0 + 8 && q < GH; q++)
                    for (int64_t k = k0; k < k0 + 8 && k < H; k++) rt[(d * H + k) * GH + q] = s->r[(d * GH + q) * H + k];
}

/* R transposed for the fp32 path: kept on R's tensor when R is the
 * graph's constant (a copy of its values in another order, made once
 * rather than at every call), else made for this call into s->rt_owned;
 * NULL without memory (the H terms then go row by row, the same bits). */
static const float *r_transposed(rnn *s) {
    const int64_t n = s->dirs * s->hid * s->gates * s->hid;
    mpx_tensor *owner = mpx_k_value_owner(s->c, 2, s->r);
    const kg_key key = {.k = {.kind = KG_KEPT_RNN_RT, .a = s->r, .M = s->dirs * s->gates * s->hid, .K = s->hid},
                        .owner = owner};
    const kg_kept *kept = owner ? kg_kept_find(&key) : NULL;
    if (kept) return kept->ap;
    float *rt = kg_alloc((size_t)n);
    if (!rt) return NULL;
    transpose_r(s, rt);
    if (owner && kg_kept_add(&key, rt, true)) return rt;
    s->rt_owned = rt;
    return rt;
}

/* R transposed and kept as r_transposed makes it, before the first run
 * (kern_kept.c: mpx_k_prepare_node): R a constant [dirs][gates * hid][hid]. */
size_t kg_prep_rnn(const mpx_node *n) {
    mpx_tensor *t = kg_prep_owner(n, 2);
    rnn s = {.gates = n->op == MPX_OP_LSTM ? 4 : n->op == MPX_OP_GRU ? 3 : 1};
    if (!t || !t->f32 || t->dtype != MPX_DT_FLOAT || t->rank != 3 || t->dims[2] < 1 ||
        t->dims[1] != s.gates * t->dims[2])
        return 0;
    s.dirs = t->dims[0], s.hid = t->dims[2], s.r = t->f32;
    const kg_key key = {.k = {.kind = KG_KEPT_RNN_RT, .a = s.r, .M = s.dirs * s.gates * s.hid, .K = s.hid}, .owner = t};
    if (kg_kept_find(&key)) return 0;
    float *rt = kg_alloc((size_t)t->nelem);
    if (!rt) return 0;
    transpose_r(&s, rt);
    if (kg_kept_add(&key, rt, true)) return (size_t)t->nelem * sizeof(float);
    free(rt);
    return 0;
}

/* X.W^T for every step, batch row and direction at once on the GEMM core
 * (as runtimes compute a recurrent op's input projection: one GEMM before
 * the time loop), where the node's accumulation is one the core does; and
 * R transposed for the fp32 path. Without them (an accumulation the core
 * does not do, or no memory for the copies) the steps sum their X terms
 * themselves: the same terms in the same order, so in the rounded
 * accumulations the same bits; in fp32 the core's blocks use fused
 * multiply-adds (kern_gemm.h), a different last bit. */
static mpx_status project_inputs(rnn *s) {
    const mpx_kctx *c = s->c;
    const int mode = kg_mode_of(&c->acc);
    const int64_t GH = s->gates * s->hid, N = s->seq * s->batch, K = s->in;
    if (mode < 0 || N == 0 || K == 0) return MPX_OK;
    float *xt = malloc((size_t)(K * N) * sizeof *xt);
    int64_t *boff = malloc((size_t)K * sizeof *boff), *crow = malloc((size_t)(s->dirs * GH) * sizeof *crow);
    s->xw = malloc((size_t)(s->dirs * N * GH) * sizeof *s->xw);
    mpx_status st = MPX_OK;
    if (!xt || !boff || !crow || !s->xw) {
        free(s->xw);
        s->xw = NULL;
    } else {
        for (int64_t q = 0; q < N; q++) /* B(k, q) = X row q, term k: contiguous in q */
            for (int64_t k = 0; k < K; k++) xt[k * N + q] = s->x[q * K + k];
        for (int64_t k = 0; k < K; k++) boff[k] = k * N;
        /* both directions in one product: W's rows are [dirs][gates * hid] */
        for (int64_t m = 0; m < s->dirs * GH; m++) crow[m] = (m / GH) * N * GH + m % GH;
        kg_gemm g = {.M = s->dirs * GH, .N = N, .K = K, .G = 1, .a = s->w, .ams = K, .aks = 1, .b = xt,
                     .boff = boff, .c = s->xw, .crow = crow, .gw = N, .gvalid = N, .rs = 0, .cs = GH,
                     .mode = (kg_mode)mode, .a_owner = mpx_k_value_owner(c, 1, s->w)};
        if (kg_gemm_run(&g) != KG_DONE) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for the input projection");
    }
    free(xt);
    free(boff);
    free(crow);
    if (st || !s->xw || !mpx_acc_is_fp32(&c->acc)) return st;
    s->rt = r_transposed(s);
    return MPX_OK;
}

/* A tensor's shape must be exactly want (n dims); what names it. */
static mpx_status need_shape(const mpx_kctx *c, const mpx_value *v, const char *what, int n, const int64_t *want) {
    bool ok = v->rank == n;
    for (int i = 0; ok && i < n; i++) ok = v->dims[i] == want[i];
    if (ok) return MPX_OK;
    char got[160], exp[160];
    mpx_value tmp = {.rank = n};
    for (int i = 0; i < n; i++) tmp.dims[i] = want[i];
    return mpx_kernel_error(c, MPX_E_SHAPE, "%s has shape %s; %s expected", what, kn_shape(v, got), kn_shape(&tmp, exp));
}

/* The one kernel of both paths: inputs, attributes and shapes checked
 * once, outputs allocated, then each (direction, batch row) on run_row
 * (fp32) or run_row_d (f64: every float input and output float64). */
static mpx_status rnn_kernel(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                             rnn_kind kind, bool f64) {
    rnn s = {.c = c, .kind = kind, .gates = kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1, .f64 = f64};
    const mpx_value *x, *w, *r, *b = NULL, *h0 = NULL, *c0 = NULL, *p = NULL;
    char s1[160];
    mpx_status st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "W", f64, &w);
    if (!st) st = kn_values_in(c, in, n_in, 2, "R", f64, &r);
    if (!st) st = kn_values_opt(c, in, n_in, 3, "B", f64, &b);
    if (!st) st = kn_values_opt(c, in, n_in, 5, "initial_h", f64, &h0);
    if (!st && kind == K_LSTM) st = kn_values_opt(c, in, n_in, 6, "initial_c", f64, &c0);
    if (!st && kind == K_LSTM) st = kn_values_opt(c, in, n_in, 7, "P", f64, &p);
    if (st) return st;
    const mpx_value *lens = kn_opt(in, n_in, 4);
    const char *dir = mpx_node_attr_string(c->node, "direction", "forward");
    s.dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (s.dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "direction \"%s\" is not forward, reverse or bidirectional", dir);
    s.reverse = strcmp(dir, "reverse") == 0;
    int64_t layout = mpx_node_attr_int(c->node, "layout", 0);
    if (layout != 0 && layout != 1) return mpx_kernel_error(c, MPX_E_INVALID, "layout %lld is not 0 or 1", (long long)layout);
    s.layout1 = layout == 1;
    if (x->rank != 3) return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; rank 3 expected", kn_shape(x, s1));
    s.seq = x->dims[s.layout1 ? 1 : 0];
    s.batch = x->dims[s.layout1 ? 0 : 1];
    s.in = x->dims[2];
    if (r->rank != 3) return mpx_kernel_error(c, MPX_E_SHAPE, "R has shape %s; rank 3 expected", kn_shape(r, s1));
    s.hid = r->dims[2];
    int64_t hs = mpx_node_attr_int(c->node, "hidden_size", s.hid);
    if (hs != s.hid || s.hid < 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "hidden_size %lld does not match R's shape %s", (long long)hs, kn_shape(r, s1));
    int64_t GH = s.gates * s.hid;
    if ((st = need_shape(c, w, "W", 3, (int64_t[]){s.dirs, GH, s.in}))) return st;
    if ((st = need_shape(c, r, "R", 3, (int64_t[]){s.dirs, GH, s.hid}))) return st;
    if (b && (st = need_shape(c, b, "B", 2, (int64_t[]){s.dirs, 2 * GH}))) return st;
    int64_t state_dims[3] = {s.dirs, s.batch, s.hid};
    if (s.layout1) state_dims[0] = s.batch, state_dims[1] = s.dirs;
    if (h0 && (st = need_shape(c, h0, "initial_h", 3, state_dims))) return st;
    if (c0 && (st = need_shape(c, c0, "initial_c", 3, state_dims))) return st;
    if (p && (st = need_shape(c, p, "P", 2, (int64_t[]){s.dirs, 3 * s.hid}))) return st;
    if (lens) {
        if (lens->f || lens->rank != 1 || lens->dims[0] != s.batch)
            return mpx_kernel_error(c, MPX_E_SHAPE, "sequence_lens must be %lld integers (one per batch row), not %s %s",
                                    (long long)s.batch, mpx_dtype_name(lens->dtype), kn_shape(lens, s1));
        for (int64_t i = 0; i < s.batch; i++)
            if (lens->i[i] < 0 || lens->i[i] > s.seq)
                return mpx_kernel_error(c, MPX_E_INVALID, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)i,
                                        (long long)lens->i[i], (long long)s.seq);
        s.lens = lens->i;
    }
    const mpx_attr *ca = mpx_node_attr(c->node, "clip");
    if (ca) {
        s.has_clip = true;
        s.clip = mpx_node_attr_float(c->node, "clip", 0.0f);
        if (!(s.clip > 0.0f)) return mpx_kernel_error(c, MPX_E_INVALID, "clip %g must be positive", (double)s.clip);
    }
    s.input_forget = kind == K_LSTM && mpx_node_attr_int(c->node, "input_forget", 0) != 0;
    s.linear_before_reset = kind == K_GRU && mpx_node_attr_int(c->node, "linear_before_reset", 0) != 0;
    if ((st = read_acts(c, kind == K_LSTM ? 3 : kind == K_GRU ? 2 : 1, (int)s.dirs, s.acts))) return st;
    if (f64) {
        s.xd = x->d, s.wd = w->d, s.rd = r->d, s.bd = b ? b->d : NULL, s.pd = p ? p->d : NULL;
        s.h0d = h0 ? h0->d : NULL, s.c0d = c0 ? c0->d : NULL;
    } else {
        s.x = x->f, s.w = w->f, s.r = r->f, s.b = b ? b->f : NULL, s.p = p ? p->f : NULL;
        s.h0 = h0 ? h0->f : NULL, s.c0 = c0 ? c0->f : NULL;
    }
    int64_t ydims[4] = {s.seq, s.dirs, s.batch, s.hid};
    if (s.layout1) ydims[0] = s.batch, ydims[1] = s.seq, ydims[2] = s.dirs;
    int n_state_out = kind == K_LSTM ? 3 : 2;
    /* Every output slot is filled (zeroed: Y past a sequence's length is 0);
     * the executor drops those the graph omits. */
    for (int k = 0; k < n_out && k < n_state_out; k++)
        if ((st = k == 0 ? mpx_k_alloc(c, &out[0], x->dtype, 4, ydims) : mpx_k_alloc(c, &out[k], x->dtype, 3, state_dims)))
            goto fail;
    if (f64) {
        s.yd = n_out > 0 ? out[0].d : NULL;
        s.yhd = n_out > 1 ? out[1].d : NULL;
        s.ycd = n_out > 2 && kind == K_LSTM ? out[2].d : NULL;
    } else {
        s.y = n_out > 0 ? out[0].f : NULL;
        s.yh = n_out > 1 ? out[1].f : NULL;
        s.yc = n_out > 2 && kind == K_LSTM ? out[2].f : NULL;
    }
    /* Per (direction, batch row): h, c, the gates, r.h, the next h, GRU's
     * H and X parts of the hidden gate, and the blocks of rt_terms */
    s.per_row = (6 + 2 * s.gates) * s.hid;
    const long items = (long)(s.dirs * s.batch);
    if ((st = kn_scratch(c, (size_t)(s.per_row * (items > 0 ? items : 1)), f64 ? sizeof(double) : sizeof(float),
                         &s.scratch)))
        goto fail;
    if (!f64 && (st = project_inputs(&s))) goto fail;
    s.avx2 = !f64 && kg_use_avx2();
    s.avx512 = !f64 && kg_use_avx512();
    s.vec = ke_vec_now();
    /* The directions and batch rows on the threads when there is work for
     * them (a bidirectional layer: one direction each); a step's product
     * is too small to split. */
    const double macs = (double)s.seq * (double)(s.gates * s.hid) * (double)s.hid * (double)items;
    mpx_k_parallel(items, items > 1 ? kg_threads_for(macs) : 1, row_item, &s);
    free(s.scratch);
    free(s.xw);
    free(s.rt_owned);
    return MPX_OK;
fail:
    free(s.scratch);
    free(s.xw);
    free(s.rt_owned);
    for (int k = 0; k < n_out; k++) mpx_value_free(&out[k]);
    return st;
}

mpx_status mpx_k_lstm(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_LSTM, false);
}

mpx_status mpx_k_gru(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_GRU, false);
}

mpx_status mpx_k_rnn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_RNN, false);
}

/* float64 (kern_f64.c's table): run_row_d. */
mpx_status mpx_k_lstm_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_LSTM, true);
}

mpx_status mpx_k_gru_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_GRU, true);
}

mpx_status mpx_k_rnn_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return rnn_kernel(c, in, n_in, out, n_out, K_RNN, true);
}
