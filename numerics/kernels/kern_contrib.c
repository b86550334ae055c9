/* kern_contrib.c - ONNX Runtime's contrib ops (domain com.microsoft) that
 * its exporters and transformer optimiser write into real models: fused
 * forms of ops mpx has, with the semantics of ORT's ContribOperators.md and
 * its CPU kernels:
 *  - FusedMatMul: alpha * op(A) @ op(B), op a transpose of the last two
 *    dims (transA, transB); transBatchA/B are refused by name;
 *  - FastGelu (X [+ bias]): the tanh approximation of Gelu;
 *  - BiasGelu (A + B): exact (erf) Gelu of the sum;
 *  - QuickGelu: x * sigmoid(alpha x), alpha 1.702 by default;
 *  - BiasAdd: X + bias + skip;
 *  - SkipLayerNormalization: LayerNormalization of input + skip [+ bias]
 *    over the last dim, times gamma [plus beta]; outputs the result, the
 *    mean, 1/std and the sum;
 *  - SkipSimplifiedLayerNormalization: the same with RMS normalisation (no
 *    mean, no beta).
 * SimplifiedLayerNormalization, which ORT registers in the default domain,
 * is RMSNormalization (kern_norm.c). Each op is one node of mpx's plan, so
 * its precision is the node's: inputs rounded to its compute format on
 * entry, the result to its output format, as the fused kernel of a
 * low-precision runtime does. A 1-D bias must match the last dim.
 *
 * The optional mean and inv_std_var outputs of the Skip*LayerNormalization
 * ops are float ("U") in ORT even for fp16 inputs: the plan holds them fp32
 * and the executor does not round them (mpx_node_output_is_f32). The
 * normalised output and the sum agree bit for bit with ORT's fp16 kernel,
 * mean and inv_std_var within 7e-8 (tests/export_check.sh). */
#include "kern_elem.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static mpx_status last_dim_vec(const mpx_kctx *c, const mpx_value *v, const mpx_value *x, const char *what) {
    char s1[160], s2[160];
    if (v->rank == 1 && x->rank >= 1 && v->dims[0] == x->dims[x->rank - 1]) return MPX_OK;
    return mpx_kernel_error(c, MPX_E_SHAPE, "%s %s must be 1-D with the last dim of %s", what, kn_shape(v, s1),
                            kn_shape(x, s2));
}

static mpx_status same_shape(const mpx_kctx *c, const mpx_value *v, const mpx_value *x, const char *what) {
    char s1[160], s2[160];
    if (mpx_k_same_dims(v, x)) return MPX_OK;
    return mpx_kernel_error(c, MPX_E_SHAPE, "%s %s must have the input's shape %s", what, kn_shape(v, s1),
                            kn_shape(x, s2));
}

/* ---- FusedMatMul ------------------------------------------------------------------------ */

/* A copy of v with its last two dims swapped. */
static mpx_status transposed(const mpx_kctx *c, const mpx_value *v, mpx_value *t) {
    int64_t d[MPX_MAX_RANK];
    for (int i = 0; i < v->rank; i++) d[i] = v->dims[i];
    int64_t R = v->dims[v->rank - 2], C = v->dims[v->rank - 1];
    d[v->rank - 2] = C, d[v->rank - 1] = R;
    mpx_error e;
    if (mpx_value_alloc(t, v->dtype, v->rank, d, &e) != MPX_OK) return mpx_kernel_error(c, e.status, "%s", e.msg);
    int64_t planes = R && C ? v->n / (R * C) : 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) t->f[p * R * C + j * R + i] = v->f[p * R * C + i * C + j];
    return MPX_OK;
}

mpx_status mpx_k_fused_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *a, *b;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "A", &a);
    if (!st) st = kn_float_in(c, in, n_in, 1, "B", &b);
    if (st) return st;
    if (mpx_node_attr_int(c->node, "transBatchA", 0) || mpx_node_attr_int(c->node, "transBatchB", 0))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "transBatchA/transBatchB are not supported");
    bool ta = mpx_node_attr_int(c->node, "transA", 0) && a->rank >= 2;
    bool tb = mpx_node_attr_int(c->node, "transB", 0) && b->rank >= 2;
    float alpha = mpx_node_attr_float(c->node, "alpha", 1.0f);
    mpx_value at = {.n = -1}, bt = {.n = -1};
    if (ta && (st = transposed(c, a, &at))) return st;
    if (tb && (st = transposed(c, b, &bt))) {
        mpx_value_free(&at);
        return st;
    }
    const mpx_value *ins[2] = {ta ? &at : a, tb ? &bt : b};
    /* The dot products are MatMul's (its GEMM core, its accumulation);
     * alpha scales each result, as ORT's GEMM with alpha does. */
    st = mpx_k_matmul(c, ins, 2, out, 1);
    mpx_value_free(&at);
    mpx_value_free(&bt);
    if (!st && alpha != 1.0f)
        for (int64_t k = 0; k < out[0].n; k++) out[0].f[k] *= alpha;
    return st;
}

/* ---- the Gelu family and BiasAdd ---------------------------------------------------------- */

typedef enum act { FAST_GELU, BIAS_GELU, QUICK_GELU } act;

/* One row (the bias's span, or the whole tensor), compiled as target
 * clones (kern_internal.h): BiasGelu's erf and QuickGelu's sigmoid are
 * fused multiply-adds, which the baseline copy calls libm for. The same
 * operations per element in every copy. */
MPX_K_CLONES_FMA
static void gelu_row(act kind, float alpha, const float *x, const float *bias, float *y, int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        const float v = bias ? x[k] + bias[k] : x[k];
        if (kind == FAST_GELU) y[k] = ke_gelu_tanh(v);
        else if (kind == BIAS_GELU) y[k] = ke_gelu(v);
        else y[k] = v * ke_sigmoid(alpha * v);
    }
}

static mpx_status gelu_like(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                            act kind) {
    const mpx_value *x, *bias = NULL;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "X", &x);
    if (!st && kind == BIAS_GELU) st = kn_float_in(c, in, n_in, 1, "B", &bias);
    if (!st && kind == FAST_GELU) st = kn_float_opt(c, in, n_in, 1, "bias", &bias);
    if (!st && bias) st = last_dim_vec(c, bias, x, "bias");
    if (st) return st;
    float alpha = mpx_node_attr_float(c->node, "alpha", 1.702f);
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    const int64_t D = bias ? bias->n : x->n; /* a row: the bias's span */
    for (int64_t r = 0; r < x->n; r += D) gelu_row(kind, alpha, x->f + r, bias ? bias->f : NULL, out[0].f + r, D);
    return MPX_OK;
}

mpx_status mpx_k_fast_gelu(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return gelu_like(c, in, n_in, out, n_out, FAST_GELU);
}

mpx_status mpx_k_bias_gelu(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return gelu_like(c, in, n_in, out, n_out, BIAS_GELU);
}

mpx_status mpx_k_quick_gelu(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return gelu_like(c, in, n_in, out, n_out, QUICK_GELU);
}

mpx_status mpx_k_bias_add(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *bias, *skip;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "X", &x);
    if (!st) st = kn_float_in(c, in, n_in, 1, "bias", &bias);
    if (!st) st = kn_float_in(c, in, n_in, 2, "skip", &skip);
    if (!st) st = last_dim_vec(c, bias, x, "bias");
    if (!st) st = same_shape(c, skip, x, "skip");
    if (st) return st;
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    for (int64_t k = 0; k < x->n; k++) out[0].f[k] = x->f[k] + bias->f[k % bias->n] + skip->f[k];
    return MPX_OK;
}

/* ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ------------------------------- */

static mpx_status skip_norm(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                            bool simplified) {
    const mpx_value *x, *skip, *gamma, *beta = NULL, *bias = NULL;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "input", &x);
    if (!st) st = kn_float_in(c, in, n_in, 1, "skip", &skip);
    if (!st) st = kn_float_in(c, in, n_in, 2, "gamma", &gamma);
    if (!st && !simplified) st = kn_float_opt(c, in, n_in, 3, "beta", &beta);
    if (!st) st = kn_float_opt(c, in, n_in, simplified ? 3 : 4, "bias", &bias);
    if (st) return st;
    if (x->rank < 1) return mpx_kernel_error(c, MPX_E_SHAPE, "input must have a last dim to normalise over");
    if ((st = same_shape(c, skip, x, "skip")) || (st = last_dim_vec(c, gamma, x, "gamma")) ||
        (beta && (st = last_dim_vec(c, beta, x, "beta"))) || (bias && (st = last_dim_vec(c, bias, x, "bias"))))
        return st;
    float eps = mpx_node_attr_float(c->node, "epsilon", 1e-12f);
    if (!(eps >= 0.0f)) return mpx_kernel_error(c, MPX_E_INVALID, "epsilon %g must not be negative", (double)eps);
    int64_t D = x->dims[x->rank - 1], rows = D ? x->n / D : 0, md[MPX_MAX_RANK];
    for (int i = 0; i < x->rank; i++) md[i] = i == x->rank - 1 ? 1 : x->dims[i];
    for (int k = 0; k < n_out && k < 4; k++) {
        bool small = k == 1 || k == 2;
        if ((st = mpx_k_alloc(c, &out[k], x->dtype, x->rank, small ? md : x->dims))) {
            for (int j = 0; j < k; j++) mpx_value_free(&out[j]);
            return st;
        }
    }
    float *sum = n_out > 3 ? out[3].f : NULL, *tmp = NULL;
    if (!sum && (st = kn_scratch(c, (size_t)D, sizeof *tmp, (void **)&tmp))) {
        for (int j = 0; j < n_out && j < 4; j++) mpx_value_free(&out[j]);
        return st;
    }
    for (int64_t r = 0; r < rows; r++) {
        float *s = sum ? sum + r * D : tmp;
        for (int64_t k = 0; k < D; k++) {
            float v = x->f[r * D + k] + skip->f[r * D + k];
            s[k] = bias ? v + bias->f[k] : v;
        }
        mpx_acc a;
        float mean = 0.0f;
        if (!simplified) {
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t k = 0; k < D; k++) mpx_acc_add(&a, s[k]);
            mean = mpx_acc_result(&a) / (float)D;
        }
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t k = 0; k < D; k++) mpx_acc_add(&a, (s[k] - mean) * (s[k] - mean));
        float inv = 1.0f / sqrtf(mpx_acc_result(&a) / (float)D + eps);
        for (int64_t k = 0; k < D; k++) {
            float y = (s[k] - mean) * inv * gamma->f[k];
            out[0].f[r * D + k] = beta ? y + beta->f[k] : y;
        }
        if (n_out > 1) out[1].f[r] = mean;
        if (n_out > 2) out[2].f[r] = inv;
    }
    free(tmp);
    return MPX_OK;
}

mpx_status mpx_k_skip_layer_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                          int n_out) {
    return skip_norm(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_skip_simplified_layer_normalization(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                                     mpx_value *out, int n_out) {
    return skip_norm(c, in, n_in, out, n_out, true);
}

/* ---- MatMulNBits ------------------------------------------------------------------------ */

/* Y = A @ W^T (+ bias), W [N, K] dequantised from B's block-quantised codes:
 * w = (code - zero_point) * scale per block of block_size along K, codes
 * of `bits` bits packed low bits first, zero points uint8-packed the same
 * way per column (or floats; 2^(bits-1) when omitted). The dequantised
 * weight is what a runtime multiplies: rounded to the node's compute format
 * when that is low (an fp16 model's scales are fp16 already, converted as
 * constants). ORT's accuracy_level 4 makes its CPU kernel quantise A to
 * int8 as well; mpx computes the operator's definition, A as given. */
mpx_status mpx_k_matmul_nbits(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *a, *sc, *b = kn_opt(in, n_in, 1), *zp = kn_opt(in, n_in, 3), *bias;
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "A", &a);
    if (!st) st = kn_float_in(c, in, n_in, 2, "scales", &sc);
    if (!st) st = kn_float_opt(c, in, n_in, 5, "bias", &bias);
    if (st) return st;
    if (kn_opt(in, n_in, 4)) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "g_idx (deprecated in ORT) is not supported");
    int64_t K = mpx_node_attr_int(c->node, "K", -1), N = mpx_node_attr_int(c->node, "N", -1);
    int64_t bits = mpx_node_attr_int(c->node, "bits", 4), bs = mpx_node_attr_int(c->node, "block_size", -1);
    if (K < 1 || N < 1 || K > MPX_MAX_ELEMS || N > MPX_MAX_ELEMS || (bits != 2 && bits != 4 && bits != 8) || bs < 16 ||
        bs > 65536 || (bs & (bs - 1)))
        return mpx_kernel_error(c, MPX_E_INVALID, "K %lld, N %lld, bits %lld, block_size %lld: K and N positive, bits 2, "
                                "4 or 8, block_size a power of 2 from 16", (long long)K, (long long)N,
                                (long long)bits, (long long)bs);
    int64_t blocks = (K + bs - 1) / bs, blob = bs * bits / 8, zpb = (blocks * bits + 7) / 8;
    if (!b || !b->i || b->rank != 3 || b->dims[0] != N || b->dims[1] != blocks || b->dims[2] != blob)
        return mpx_kernel_error(c, MPX_E_SHAPE, "B %s must be uint8 [%lld, %lld, %lld]", b ? kn_shape(b, s1) : "(none)",
                                (long long)N, (long long)blocks, (long long)blob);
    if (sc->n != N * blocks)
        return mpx_kernel_error(c, MPX_E_SHAPE, "scales %s must hold N x blocks = %lld values", kn_shape(sc, s1),
                                (long long)(N * blocks));
    if (zp && !((zp->i && zp->n == N * zpb) || (zp->f && zp->n == N * blocks)))
        return mpx_kernel_error(c, MPX_E_SHAPE, "zero_points %s must hold %lld packed uint8 or %lld float values",
                                kn_shape(zp, s1), (long long)(N * zpb), (long long)(N * blocks));
    if (bias && bias->n != N) return mpx_kernel_error(c, MPX_E_SHAPE, "bias %s must hold N = %lld values",
                                                      kn_shape(bias, s1), (long long)N);
    if (a->rank < 1 || a->dims[a->rank - 1] != K)
        return mpx_kernel_error(c, MPX_E_SHAPE, "A has shape %s; its last dim must be K = %lld", kn_shape(a, s1),
                                (long long)K);
    mpx_value wt = {.n = -1};
    int64_t wd[2] = {K, N};
    mpx_error e;
    if (mpx_value_alloc(&wt, MPX_DT_FLOAT, 2, wd, &e) != MPX_OK) return mpx_kernel_error(c, e.status, "%s", e.msg);
    int64_t mask = (1 << bits) - 1, dflt = 1 << (bits - 1);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            int64_t blk = k / bs, j = k % bs;
            int64_t byte = b->i[(n * blocks + blk) * blob + j * bits / 8];
            float code = (float)((byte >> ((j * bits) % 8)) & mask), z = (float)dflt;
            if (zp && zp->i) z = (float)((zp->i[n * zpb + blk * bits / 8] >> ((blk * bits) % 8)) & mask);
            else if (zp) z = zp->f[n * blocks + blk];
            wt.f[k * N + n] = (code - z) * sc->f[n * blocks + blk];
        }
    if (c->round) mpx_round_array(c->round, wt.f, wt.f, (size_t)wt.n);
    const mpx_value *ins[2] = {a, &wt};
    st = mpx_k_matmul(c, ins, 2, out, 1);
    mpx_value_free(&wt);
    if (!st && bias)
        for (int64_t k = 0; k < out[0].n; k++) out[0].f[k] += bias->f[k % N];
    return st;
}

/* ---- RotaryEmbedding ---------------------------------------------------------------------- */

void kn_rotate(const float *xi, float *yo, int64_t D, int64_t rd, bool inter, const float *cr, const float *sr) {
    int64_t half = rd / 2;
    for (int64_t i = 0; i < rd; i++) {
        int64_t ci, j;
        float sign;
        if (inter) ci = (i / 2) % half, sign = i % 2 == 0 ? -1.0f : 1.0f, j = i % 2 == 0 ? i + 1 : i - 1;
        else ci = i % half, sign = i < half ? -1.0f : 1.0f, j = (i + half) % rd;
        yo[i] = xi[i] * cr[ci] + sign * xi[j] * sr[ci];
    }
    for (int64_t i = rd; i < D; i++) yo[i] = xi[i];
}

/* ONNX's (opset 23) and ORT's com.microsoft RotaryEmbedding, as ORT's CPU
 * kernel computes them: for each head, the first rotary_embedding_dim values
 * (default: all) are rotated in pairs - (i, i + d/2), or (2i, 2i + 1) when
 * interleaved - by the angle whose cos and sin the caches hold for the
 * token's position: y_i = x_i cos - x_j sin for the first of a pair,
 * x_i cos + x_j sin for the second; the rest are copied. Positions come from
 * position_ids (batch x sequence; com.microsoft also takes one offset added
 * to the token's index), or, in ONNX's form without position_ids, from caches
 * shaped batch x sequence x d/2. X is (batch, heads, sequence, head) or
 * (batch, sequence, heads * head) with num_heads. */
mpx_status mpx_k_rotary_embedding(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                  int n_out) {
    bool ms = c->node->domain && strcmp(c->node->domain, "com.microsoft") == 0;
    const mpx_value *x, *cs, *sn, *pid = kn_opt(in, n_in, ms ? 1 : 3);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "X", &x);
    if (!st) st = kn_float_in(c, in, n_in, ms ? 2 : 1, "cos_cache", &cs);
    if (!st) st = kn_float_in(c, in, n_in, ms ? 3 : 2, "sin_cache", &sn);
    if (st) return st;
    if (ms && !pid) return mpx_kernel_error(c, MPX_E_INVALID, "position_ids is required");
    if (pid && !pid->i) return mpx_kernel_error(c, MPX_E_INVALID, "position_ids must be integers");
    if (mpx_node_attr_int(c->node, "is_packed_batching", 0))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "is_packed_batching is not supported");
    bool inter = mpx_node_attr_int(c->node, "interleaved", 0) != 0;
    int64_t nh = mpx_node_attr_int(c->node, "num_heads", 0), rd = mpx_node_attr_int(c->node, "rotary_embedding_dim", 0);
    if (x->rank != 3 && x->rank != 4)
        return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; rank 3 or 4 expected", kn_shape(x, s1));
    if (cs->rank != sn->rank || cs->n != sn->n || (cs->rank != 2 && cs->rank != 3))
        return mpx_kernel_error(c, MPX_E_SHAPE, "cos_cache %s and sin_cache %s must have one shape, rank 2 (or 3 "
                                "without position_ids)", kn_shape(cs, s1), kn_shape(sn, s2));
    int64_t B = x->dims[0], S, H, D;
    if (x->rank == 4) {
        H = x->dims[1], S = x->dims[2], D = x->dims[3];
    } else {
        S = x->dims[1];
        int64_t hidden = x->dims[2];
        if (nh <= 0 && ms && rd == 0) nh = hidden / (cs->dims[cs->rank - 1] * 2);
        if (nh <= 0 || hidden % nh)
            return mpx_kernel_error(c, MPX_E_INVALID, "num_heads %lld must divide X's last dim %lld", (long long)nh,
                                    (long long)hidden);
        H = nh, D = hidden / nh;
    }
    if (rd == 0) rd = D;
    int64_t half = rd / 2;
    if (rd < 2 || rd > D || rd % 2)
        return mpx_kernel_error(c, MPX_E_INVALID, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                                (long long)rd, (long long)D);
    if (cs->dims[cs->rank - 1] != half)
        return mpx_kernel_error(c, MPX_E_SHAPE, "cos_cache %s: its last dim must be rotary_embedding_dim / 2 = %lld",
                                kn_shape(cs, s1), (long long)half);
    bool per_token = cs->rank == 3;
    if (per_token && (pid || cs->dims[0] != B || cs->dims[1] != S))
        return mpx_kernel_error(c, MPX_E_SHAPE, "a cos_cache %s of rank 3 is per token (%lld x %lld), without "
                                "position_ids", kn_shape(cs, s1), (long long)B, (long long)S);
    if (!per_token && !pid)
        return mpx_kernel_error(c, MPX_E_INVALID, "position_ids is required with a cos_cache of rank 2");
    bool offset = pid && ms && pid->n == 1;
    if (pid && !offset && pid->n != B * S)
        return mpx_kernel_error(c, MPX_E_SHAPE, "position_ids %s must be batch x sequence (%lld x %lld)%s",
                                kn_shape(pid, s1), (long long)B, (long long)S, ms ? " or one offset" : "");
    int64_t maxpos = per_token ? 0 : cs->dims[0];
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, x->dims))) return st;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            const float *cr, *sr;
            if (per_token) {
                cr = cs->f + (b * S + s) * half, sr = sn->f + (b * S + s) * half;
            } else {
                int64_t p = offset ? pid->i[0] + s : pid->i[b * S + s];
                if (p < 0 || p >= maxpos) {
                    mpx_value_free(&out[0]);
                    return mpx_kernel_error(c, MPX_E_INVALID, "position %lld (batch %lld, token %lld) is outside the "
                                            "caches' %lld positions", (long long)p, (long long)b, (long long)s,
                                            (long long)maxpos);
                }
                cr = cs->f + p * half, sr = sn->f + p * half;
            }
            for (int64_t h = 0; h < H; h++) {
                int64_t at = x->rank == 4 ? ((b * H + h) * S + s) * D : (b * S + s) * H * D + h * D;
                const float *xi = x->f + at;
                float *yo = out[0].f + at;
                kn_rotate(xi, yo, D, rd, inter, cr, sr);
            }
        }
    return MPX_OK;
}
