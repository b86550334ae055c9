/* kern_attention.c - scaled dot-product attention as one node: ONNX's
 * Attention (opset 23) and ONNX Runtime's com.microsoft MultiHeadAttention,
 * Attention (the fused BERT form with the QKV projection) and
 * GroupQueryAttention (the decoder form with a KV cache, rotary embedding,
 * local windows).
 *
 * One core (attend) for the three: per batch, query head and query token,
 * scores s_t = q . k_t over the keys (past keys first), scaled, soft-capped
 * (ONNX's softcap, before the mask), plus an additive bias (a float mask,
 * -inf where a boolean mask is false, the causal frontier, a key padding
 * mask), softmax over t, and y = sum_t p_t v_t. Query heads share key/value
 * heads in groups (GQA/MQA: head h reads kv head h / (Hq / Hkv)).
 *
 * Where the forms differ, each follows its own definition: ONNX scales Q and
 * K by sqrt(scale) each before the product (its reference), a row with every
 * key masked gives 0, and masked scores are -inf; ORT's ops multiply the
 * product by scale and add mask_filter_value (-10000 by default) where a
 * mask or the causal frontier excludes a key, as its CPU kernels do.
 *
 * Precision under a low plan (the node's compute format c->round): Q, K and
 * V arrive rounded to it (the executor); both products accumulate in the
 * node's accumulation format, on the GEMM core where it does that
 * accumulation (kern_gemm.h's order: fp32 in blocks of 64 with fused
 * multiply-adds, rounded ones after every addition, mpx_acc's bits), else
 * in mpx_acc row by row (kern_check checks both against a naive evaluation);
 * a MultiHeadAttention of 8 heads, 256 tokens, head size 64: an fp16 run
 * with fp16 accumulation 0.50 -> 0.02 s, fp32 accumulation 0.09 -> 0.02 s
 * (the process, load included); scaling, masking and the softmax are
 * fp32, as fused attention kernels keep them; the probabilities are rounded
 * to the compute format before the second product, which is where a
 * half-precision kernel holds them; Y is rounded to the output format (the
 * executor).
 *
 * A float64 ONNX Attention (kern_f64.c's table) shares the checks, shapes,
 * masks and past/present handling and walks the rows in double (attend_d):
 * sums in index order, libm's exp and tanh. */
#include "kern_elem.h"
#include "kern_gemm.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn {
    int64_t B, Hq, Hkv, S, P, T, D, Dv; /* T = P + new keys */
    /* [b, h, token, d] element strides of each operand (any layout) */
    const float *q, *k, *v, *pk, *pv; /* pk/pv: past [B, Hkv, P, D] (BNSH) */
    int64_t qs[4], ks[4], vs[4];
    float qscale, kscale, post_scale;   /* q*qscale . k*kscale, times post_scale */
    float softcap;
    bool onnx;                          /* -inf masking, masked rows give 0 */
    bool causal;
    float filter;                       /* ORT: the masked score */
    const float *bias; int64_t bs[4];   /* additive, broadcast [B, Hq, S, T] (strides; 0 broadcast) */
    int64_t bias_last;                  /* ONNX: a mask shorter than T is padded with -inf */
    const int64_t *keep; int64_t kps[2]; /* boolean mask / key padding [b, t] (or [b,h,s,t] via bs) */
    bool keep_bnst;                     /* keep indexed like bias (ONNX's boolean mask) */
    const int64_t *klen;                /* ORT: valid key count per batch */
    float *y; int64_t ys[4];            /* [b, h, s, dv] */
    float *qk; int mode;                /* ONNX's qk_matmul_output (NULL: none) */
    const int64_t *coff;                /* GQA: causal offset per batch (else T - S) */
    int64_t window;                     /* GQA: only the last `window` keys up to the query (-1: all) */
    bool smooth;                        /* GQA: smooth softmax (an extra zero logit) */
    /* a float64 ONNX Attention (kern_f64.c's table): the operands, mask and
     * outputs as doubles, the scales in double (the float pointers unset) */
    const double *qd, *kd, *vd, *pkd, *pvd, *biasd;
    double *yd, *qkd;
    double qscale_d, kscale_d;
} attn;

static const float *key_at(const attn *a, int64_t b, int64_t h, int64_t t) {
    if (t < a->P) return a->pk + ((b * a->Hkv + h) * a->P + t) * a->D;
    t -= a->P;
    return a->k + b * a->ks[0] + h * a->ks[1] + t * a->ks[2];
}

static const float *val_at(const attn *a, int64_t b, int64_t h, int64_t t) {
    if (t < a->P) return a->pv + ((b * a->Hkv + h) * a->P + t) * a->Dv;
    t -= a->P;
    return a->v + b * a->vs[0] + h * a->vs[1] + t * a->vs[2];
}

static const double *key_at_d(const attn *a, int64_t b, int64_t h, int64_t t) {
    if (t < a->P) return a->pkd + ((b * a->Hkv + h) * a->P + t) * a->D;
    t -= a->P;
    return a->kd + b * a->ks[0] + h * a->ks[1] + t * a->ks[2];
}

static const double *val_at_d(const attn *a, int64_t b, int64_t h, int64_t t) {
    if (t < a->P) return a->pvd + ((b * a->Hkv + h) * a->P + t) * a->Dv;
    t -= a->P;
    return a->vd + b * a->vs[0] + h * a->vs[1] + t * a->vs[2];
}

/* The additive bias of each score of row (b, h, s) into bias[0 .. T)
 * (-inf: masked, ONNX); whether any key is visible. Doubles, for the
 * float64 core's float64 mask; a float one's sum with a float score rounded
 * to float is the float sum. */
static bool row_bias(const attn *a, int64_t b, int64_t h, int64_t s, double *bias) {
    bool any = false;
    for (int64_t t = 0; t < a->T; t++) {
        double add = 0.0;
        bool masked = false;
        if (a->bias || a->biasd) {
            const int64_t i = b * a->bs[0] + h * a->bs[1] + s * a->bs[2] + t * a->bs[3];
            if (t >= a->bias_last) masked = true;
            else add = a->biasd ? a->biasd[i] : (double)a->bias[i];
        }
        if (a->keep) {
            int64_t kv = a->keep_bnst ? a->keep[b * a->bs[0] + h * a->bs[1] + s * a->bs[2] + t * a->bs[3]]
                                      : a->keep[b * a->kps[0] + t * a->kps[1]];
            if (a->keep_bnst && t >= a->bias_last) kv = 0;
            if (!kv) masked = true;
        }
        if (a->klen && t >= a->klen[b]) masked = true;
        int64_t off = a->coff ? a->coff[b] : a->T - a->S;
        if (a->causal && t > s + off) masked = true;
        if (a->window >= 0 && t <= s + off - a->window) masked = true;
        if (masked && !a->onnx) add = a->filter, masked = false;
        bias[t] = masked ? -INFINITY : add;
        any = any || !masked;
    }
    return any;
}

/* Row (b, h, s): sc holds the products q.k; made the probabilities, in
 * place, rounded to the compute format (scaling, soft-cap, masking and the
 * softmax in fp32). */
static void row_probs(const mpx_kctx *c, const attn *a, int64_t b, int64_t h, int64_t s, float *sc, double *bias) {
    bool any = row_bias(a, b, h, s, bias);
    for (int64_t t = 0; t < a->T; t++) {
        float x = sc[t] * a->post_scale;
        if (a->softcap > 0.0f) x = ke_tanh(x / a->softcap) * a->softcap;
        sc[t] = x;
    }
    float *qk = a->qk ? a->qk + ((b * a->Hq + h) * a->S + s) * a->T : NULL;
    if (qk && a->mode == 0) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    float mx = -INFINITY;
    for (int64_t t = 0; t < a->T; t++) {
        sc[t] = (float)((double)sc[t] + bias[t]);
        if (sc[t] > mx) mx = sc[t];
    }
    if (qk && (a->mode == 1 || a->mode == 2)) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    /* smooth softmax: a zero logit beside the keys (in the sum only) */
    if (a->smooth && mx < 0.0f) mx = 0.0f;
    float sum = a->smooth ? expf(-mx) : 0.0f;
    for (int64_t t = 0; t < a->T; t++) {
        sc[t] = any && bias[t] != -INFINITY ? expf(sc[t] - mx) : 0.0f;
        sum += sc[t];
    }
    for (int64_t t = 0; t < a->T; t++) sc[t] = any ? sc[t] / sum : 0.0f;
    if (qk && a->mode == 3) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    if (c->round) mpx_round_array(c->round, sc, sc, (size_t)a->T);
}

enum { ATT_ROWS = 64 }; /* query rows whose scores are held at once (the core's path) */

/* Both products of every head on the GEMM core (kern_gemm.h's order: in
 * fp32 blocks of 64 with fused multiply-adds; a rounded accumulation the
 * running sum rounded after every addition from +0, mpx_acc's bits), as
 * fused attention kernels run them: per batch and query head, the scores
 * of up to ATT_ROWS query rows, their probabilities, then those rows of Y.
 * K (scaled, transposed) and V are copied per key/value head into
 * contiguous operands. false: no memory (nothing written). */
static bool attend_core(const mpx_kctx *c, const attn *a, int mode) {
    const int64_t T = a->T, D = a->D, Dv = a->Dv, S = a->S, grp = a->Hq / a->Hkv;
    const int64_t rows = S < ATT_ROWS ? S : ATT_ROWS;
    const bool qsc = a->qscale != 1.0f;
    float *kt = malloc((size_t)(D * T) * sizeof *kt), *vb = malloc((size_t)(T * Dv) * sizeof *vb);
    float *sc = malloc((size_t)(rows * T) * sizeof *sc);
    double *bias = malloc((size_t)T * sizeof *bias);
    float *qb = qsc ? malloc((size_t)(rows * D) * sizeof *qb) : NULL;
    int64_t *boff = malloc((size_t)(T > D ? T : D) * sizeof *boff), *crow = malloc((size_t)rows * sizeof *crow);
    bool ok = kt && vb && sc && bias && boff && crow && (!qsc || qb);
    for (int64_t b = 0; ok && b < a->B; b++)
        for (int64_t h = 0; ok && h < a->Hq; h++) {
            const int64_t hk = h / grp;
            /* (the query heads of one key/value head share its copies) */
            for (int64_t t = 0; h % grp == 0 && t < T; t++) {
                const float *k = key_at(a, b, hk, t), *v = val_at(a, b, hk, t);
                for (int64_t d = 0; d < D; d++) kt[d * T + t] = a->kscale != 1.0f ? k[d] * a->kscale : k[d];
                memcpy(vb + t * Dv, v, (size_t)Dv * sizeof *vb);
            }
            /* (a block of query rows between two cancel checks; the
             * executor drops what a cancelled kernel leaves) */
            for (int64_t s0 = 0; ok && s0 < S && !mpx_k_cancelled(); s0 += rows) {
                const int64_t ns = S - s0 < rows ? S - s0 : rows;
                const float *q0 = a->q + b * a->qs[0] + h * a->qs[1] + s0 * a->qs[2];
                if (qsc)
                    for (int64_t m = 0; m < ns; m++)
                        for (int64_t d = 0; d < D; d++) qb[m * D + d] = q0[m * a->qs[2] + d] * a->qscale;
                for (int64_t d = 0; d < D; d++) boff[d] = d * T;
                for (int64_t m = 0; m < ns; m++) crow[m] = m * T;
                kg_gemm g1 = {.M = ns, .N = T, .K = D, .G = 1, .a = qsc ? qb : q0, .ams = qsc ? D : a->qs[2],
                              .aks = 1, .b = kt, .boff = boff, .c = sc, .crow = crow, .gw = T, .gvalid = T,
                              .rs = 0, .cs = 1, .mode = (kg_mode)mode};
                ok = kg_gemm_run(&g1) == KG_DONE;
                for (int64_t m = 0; ok && m < ns; m++) row_probs(c, a, b, h, s0 + m, sc + m * T, bias);
                for (int64_t t = 0; t < T; t++) boff[t] = t * Dv;
                for (int64_t m = 0; m < ns; m++) crow[m] = (s0 + m) * a->ys[2];
                kg_gemm g2 = {.M = ns, .N = Dv, .K = T, .G = 1, .a = sc, .ams = T, .aks = 1, .b = vb, .boff = boff,
                              .c = a->y + b * a->ys[0] + h * a->ys[1], .crow = crow, .gw = Dv, .gvalid = Dv,
                              .rs = 0, .cs = 1, .mode = (kg_mode)mode};
                ok = ok && kg_gemm_run(&g2) == KG_DONE;
            }
        }
    free(kt);
    free(vb);
    free(sc);
    free(bias);
    free(qb);
    free(boff);
    free(crow);
    return ok;
}

/* k and v rows of new tokens may be strided by heads in their last dim
 * (3-D inputs): ks[3]/vs[3] is the element stride (1 here, by construction).
 * The products on the GEMM core where it does the node's accumulation;
 * else (per-block rounding, fp8) row by row in mpx_acc, the same terms in
 * the same order. */
static mpx_status attend(const mpx_kctx *c, const attn *a) {
    const int mode = kg_mode_of(&c->acc);
    if (mode >= 0 && a->T > 0 && a->D > 0 && a->Dv > 0 && a->S > 0) {
        if (attend_core(c, a, mode)) return MPX_OK;
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for the attention's products");
    }
    float *sc = NULL;
    double *bias = NULL;
    mpx_status st;
    if ((st = kn_scratch(c, (size_t)a->T, sizeof *sc, (void **)&sc)) ||
        (st = kn_scratch(c, (size_t)a->T, sizeof *bias, (void **)&bias))) {
        free(sc);
        return st;
    }
    int64_t grp = a->Hq / a->Hkv;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++)
            for (int64_t s = 0; s < a->S; s++) {
                if (mpx_k_cancelled()) { /* a query row apart */
                    free(sc);
                    free(bias);
                    return mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
                }
                const float *q = a->q + b * a->qs[0] + h * a->qs[1] + s * a->qs[2];
                int64_t hk = h / grp;
                for (int64_t t = 0; t < a->T; t++) {
                    const float *k = key_at(a, b, hk, t);
                    mpx_acc acc;
                    mpx_acc_init(&acc, &c->acc, 0.0f);
                    if (a->qscale != 1.0f || a->kscale != 1.0f)
                        for (int64_t d = 0; d < a->D; d++) mpx_acc_add(&acc, (q[d] * a->qscale) * (k[d] * a->kscale));
                    else
                        for (int64_t d = 0; d < a->D; d++) mpx_acc_add(&acc, q[d] * k[d]);
                    sc[t] = mpx_acc_result(&acc);
                }
                row_probs(c, a, b, h, s, sc, bias);
                float *y = a->y + b * a->ys[0] + h * a->ys[1] + s * a->ys[2];
                for (int64_t d = 0; d < a->Dv; d++) {
                    mpx_acc acc;
                    mpx_acc_init(&acc, &c->acc, 0.0f);
                    for (int64_t t = 0; t < a->T; t++) mpx_acc_add(&acc, sc[t] * val_at(a, b, hk, t)[d]);
                    y[d] = mpx_acc_result(&acc);
                }
            }
    free(sc);
    free(bias);
    return MPX_OK;
}

/* A float64 ONNX Attention: the row walk of attend in double (libm's exp
 * and tanh; sums in index order), the probabilities rounded to the compute
 * format where a plan colours the node low. */
static void row_probs_d(const mpx_kctx *c, const attn *a, int64_t b, int64_t h, int64_t s, double *sc, double *bias) {
    const bool any = row_bias(a, b, h, s, bias);
    for (int64_t t = 0; t < a->T; t++) {
        double x = sc[t];
        if (a->softcap > 0.0f) x = tanh(x / a->softcap) * a->softcap;
        sc[t] = x;
    }
    double *qk = a->qkd ? a->qkd + ((b * a->Hq + h) * a->S + s) * a->T : NULL;
    if (qk && a->mode == 0) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    double mx = -INFINITY, sum = 0;
    for (int64_t t = 0; t < a->T; t++) {
        sc[t] += bias[t];
        if (sc[t] > mx) mx = sc[t];
    }
    if (qk && (a->mode == 1 || a->mode == 2)) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    for (int64_t t = 0; t < a->T; t++) {
        sc[t] = any && bias[t] != -INFINITY ? exp(sc[t] - mx) : 0.0;
        sum += sc[t];
    }
    for (int64_t t = 0; t < a->T; t++) sc[t] = any ? sc[t] / sum : 0.0;
    if (qk && a->mode == 3) memcpy(qk, sc, (size_t)a->T * sizeof *qk);
    if (c->round) mpx_round_double_array(c->round, sc, sc, (size_t)a->T);
}

static mpx_status attend_d(const mpx_kctx *c, const attn *a) {
    double *sc = NULL, *bias = NULL;
    mpx_status st;
    if ((st = kn_scratch(c, (size_t)a->T, sizeof *sc, (void **)&sc)) ||
        (st = kn_scratch(c, (size_t)a->T, sizeof *bias, (void **)&bias))) {
        free(sc);
        return st;
    }
    const int64_t grp = a->Hq / a->Hkv;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++)
            for (int64_t s = 0; s < a->S; s++) {
                if (mpx_k_cancelled()) {
                    free(sc);
                    free(bias);
                    return mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
                }
                const double *q = a->qd + b * a->qs[0] + h * a->qs[1] + s * a->qs[2];
                const int64_t hk = h / grp;
                for (int64_t t = 0; t < a->T; t++) {
                    const double *k = key_at_d(a, b, hk, t);
                    double acc = 0;
                    for (int64_t d = 0; d < a->D; d++) acc += (q[d] * a->qscale_d) * (k[d] * a->kscale_d);
                    sc[t] = acc;
                }
                row_probs_d(c, a, b, h, s, sc, bias);
                double *y = a->yd + b * a->ys[0] + h * a->ys[1] + s * a->ys[2];
                for (int64_t d = 0; d < a->Dv; d++) {
                    double acc = 0;
                    for (int64_t t = 0; t < a->T; t++) acc += sc[t] * val_at_d(a, b, hk, t)[d];
                    y[d] = acc;
                }
            }
    free(sc);
    free(bias);
    return MPX_OK;
}

/* Strides of a [b, h, token, d] view of x: 4-D BNSH as is, 3-D
 * [b, token, h * d] split into heads. */
static void view_strides(const mpx_value *x, int64_t heads, int64_t *s) {
    if (x->rank == 4) {
        s[3] = 1, s[2] = x->dims[3], s[1] = x->dims[2] * x->dims[3], s[0] = x->dims[1] * s[1];
    } else {
        int64_t hd = x->dims[2] / heads;
        s[3] = 1, s[2] = x->dims[2], s[1] = hd, s[0] = x->dims[1] * x->dims[2];
    }
}

/* An additive mask broadcast to [B, H, S, T] (right-aligned); its last dim
 * may be shorter than T (ONNX: the rest is masked). */
static mpx_status mask_strides(const mpx_kctx *c, const mpx_value *m, const attn *a, int64_t *bs, int64_t *last) {
    char s1[160];
    int64_t full[4] = {a->B, a->Hq, a->S, a->T};
    if (m->rank < 1 || m->rank > 4) goto bad;
    int64_t stride = 1;
    for (int i = 3; i >= 0; i--) {
        int mi = m->rank - 4 + i;
        int64_t d = mi >= 0 ? m->dims[mi] : 1;
        if (i == 3) {
            if (d > a->T) goto bad;
            *last = d == 1 && a->T > 1 ? a->T : d;
            bs[3] = d == 1 ? 0 : 1;
        } else {
            if (d != 1 && d != full[i]) goto bad;
            bs[i] = d == 1 ? 0 : stride;
        }
        stride *= d;
    }
    return MPX_OK;
bad:
    return mpx_kernel_error(c, MPX_E_SHAPE, "the mask %s does not broadcast to [%lld, %lld, %lld, %lld]",
                            kn_shape(m, s1), (long long)a->B, (long long)a->Hq, (long long)a->S, (long long)a->T);
}

/* present_key (w 0) or present_value (w 1): [B, Hkv, T, D or Dv], past then new. */
static mpx_status write_present(const mpx_kctx *c, const attn *a, int w, mpx_value *o) {
    int64_t dd = w ? a->Dv : a->D, dims[4] = {a->B, a->Hkv, a->T, dd};
    mpx_status st = mpx_k_alloc(c, o, a->qd ? MPX_DT_DOUBLE : MPX_DT_FLOAT, 4, dims);
    if (st) return st;
    for (int64_t b = 0; a->qd && b < a->B; b++)
        for (int64_t h = 0; h < a->Hkv; h++)
            for (int64_t t = 0; t < a->T; t++)
                memcpy(o->d + ((b * a->Hkv + h) * a->T + t) * dd, w ? val_at_d(a, b, h, t) : key_at_d(a, b, h, t),
                       (size_t)dd * sizeof(double));
    for (int64_t b = 0; !a->qd && b < a->B; b++)
        for (int64_t h = 0; h < a->Hkv; h++)
            for (int64_t t = 0; t < a->T; t++)
                memcpy(o->f + ((b * a->Hkv + h) * a->T + t) * dd, w ? val_at(a, b, h, t) : key_at(a, b, h, t),
                       (size_t)dd * sizeof(float));
    return MPX_OK;
}

/* Past keys/values [B, Hkv, P, D] and the present outputs (past then new). */
static mpx_status past_present(const mpx_kctx *c, attn *a, const mpx_value *pk, const mpx_value *pv, mpx_value *out,
                               int n_out, int ik, int iv) {
    char s1[160];
    a->P = 0;
    if (!pk != !pv) return mpx_kernel_error(c, MPX_E_INVALID, "past_key and past_value come together");
    if (pk) {
        if (pk->rank != 4 || pk->dims[0] != a->B || pk->dims[1] != a->Hkv || pk->dims[3] != a->D || pv->rank != 4 ||
            pv->dims[0] != a->B || pv->dims[1] != a->Hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != a->Dv)
            return mpx_kernel_error(c, MPX_E_SHAPE, "past_key %s / past_value must be [%lld, %lld, past, %lld]",
                                    kn_shape(pk, s1), (long long)a->B, (long long)a->Hkv, (long long)a->D);
        a->P = pk->dims[2];
        a->pk = pk->f, a->pv = pv->f, a->pkd = pk->d, a->pvd = pv->d;
    }
    a->T += a->P;
    for (int w = 0; w < 2; w++) {
        int o = w ? iv : ik;
        if (o < 0 || !kn_wants_out(c, n_out, o)) continue;
        mpx_status st = write_present(c, a, w, &out[o]);
        if (st) return st;
    }
    return MPX_OK;
}

static mpx_status ms_attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);

/* ---- ONNX Attention (opset 23) ----------------------------------------------------------- */

/* f64: a float64 node (kern_f64.c's table), computed by attend_d. */
static mpx_status attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                            bool f64) {
    const mpx_value *q, *k, *v, *pk, *pv, *mask = kn_opt(in, n_in, 3);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "Q", f64, &q);
    if (!st) st = kn_values_in(c, in, n_in, 1, "K", f64, &k);
    if (!st) st = kn_values_in(c, in, n_in, 2, "V", f64, &v);
    if (!st) st = kn_values_opt(c, in, n_in, 4, "past_key", f64, &pk);
    if (!st) st = kn_values_opt(c, in, n_in, 5, "past_value", f64, &pv);
    if (st) return st;
    if (kn_opt(in, n_in, 6)) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "nonpad_kv_seqlen is not supported");
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return mpx_kernel_error(c, MPX_E_SHAPE, "Q %s, K and V must all be 3-D or all 4-D", kn_shape(q, s1));
    attn a = {.onnx = true, .qscale = 1, .kscale = 1, .post_scale = 1, .bias_last = INT64_MAX, .window = -1};
    a.B = q->dims[0];
    if (q->rank == 4) {
        a.Hq = q->dims[1], a.S = q->dims[2], a.D = q->dims[3];
        a.Hkv = k->dims[1], a.T = k->dims[2], a.Dv = v->dims[3];
        if (k->dims[3] != a.D || v->dims[1] != a.Hkv || v->dims[2] != a.T)
            return mpx_kernel_error(c, MPX_E_SHAPE, "K %s and V %s do not fit Q", kn_shape(k, s1), kn_shape(v, s2));
    } else {
        a.Hq = mpx_node_attr_int(c->node, "q_num_heads", 0), a.Hkv = mpx_node_attr_int(c->node, "kv_num_heads", 0);
        if (a.Hq < 1 || a.Hkv < 1 || q->dims[2] % a.Hq || k->dims[2] % a.Hkv || v->dims[2] % a.Hkv)
            return mpx_kernel_error(c, MPX_E_INVALID, "3-D inputs need q_num_heads and kv_num_heads dividing their "
                                    "last dims (Q %s, K %s)", kn_shape(q, s1), kn_shape(k, s2));
        a.S = q->dims[1], a.D = q->dims[2] / a.Hq, a.T = k->dims[1], a.Dv = v->dims[2] / a.Hkv;
        if (k->dims[2] / a.Hkv != a.D || v->dims[1] != a.T)
            return mpx_kernel_error(c, MPX_E_SHAPE, "K %s and V %s do not fit Q", kn_shape(k, s1), kn_shape(v, s2));
    }
    if (a.Hkv < 1 || a.Hq % a.Hkv || k->dims[0] != a.B || v->dims[0] != a.B)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%lld query heads do not group over %lld key/value heads (or the "
                                "batches differ)", (long long)a.Hq, (long long)a.Hkv);
    a.q = q->f, a.k = k->f, a.v = v->f, a.qd = q->d, a.kd = k->d, a.vd = v->d;
    view_strides(q, a.Hq, a.qs), view_strides(k, a.Hkv, a.ks), view_strides(v, a.Hkv, a.vs);
    float scale = mpx_node_attr_float(c->node, "scale", 1.0f / sqrtf((float)a.D));
    a.qscale = a.kscale = sqrtf(scale);
    /* double: the attribute's float, or 1/sqrt(D) in double; its square
     * root rounded to float, as ONNX Runtime's double Attention computes it */
    const double scale_d = mpx_node_attr(c->node, "scale") ? (double)scale : 1.0 / sqrt((double)a.D);
    a.qscale_d = a.kscale_d = (double)(float)sqrt(scale_d);
    a.softcap = mpx_node_attr_float(c->node, "softcap", 0.0f);
    a.causal = mpx_node_attr_int(c->node, "is_causal", 0) != 0;
    a.mode = (int)mpx_node_attr_int(c->node, "qk_matmul_output_mode", 0);
    if (a.mode < 0 || a.mode > 3)
        return mpx_kernel_error(c, MPX_E_INVALID, "qk_matmul_output_mode %d is not 0 to 3", a.mode);
    if ((st = past_present(c, &a, pk, pv, out, n_out, 1, 2))) return mpx_k_free_values(out, n_out), st;
    if (mask) {
        if ((st = mask_strides(c, mask, &a, a.bs, &a.bias_last))) return mpx_k_free_values(out, n_out), st;
        if (mask->f) a.bias = mask->f;
        else if (mask->d) a.biasd = mask->d;
        else a.keep = mask->i, a.keep_bnst = true;
    }
    int64_t yd[4];
    int yr = q->rank;
    if (yr == 4) yd[0] = a.B, yd[1] = a.Hq, yd[2] = a.S, yd[3] = a.Dv;
    else yd[0] = a.B, yd[1] = a.S, yd[2] = a.Hq * a.Dv;
    if ((st = mpx_k_alloc(c, &out[0], q->dtype, yr, yd))) return mpx_k_free_values(out, n_out), st;
    if (yr == 4) a.ys[2] = a.Dv, a.ys[1] = a.S * a.Dv, a.ys[0] = a.Hq * a.S * a.Dv;
    else a.ys[2] = a.Hq * a.Dv, a.ys[1] = a.Dv, a.ys[0] = a.S * a.Hq * a.Dv;
    a.y = out[0].f, a.yd = out[0].d;
    if (kn_wants_out(c, n_out, 3)) {
        int64_t qd[4] = {a.B, a.Hq, a.S, a.T};
        if ((st = mpx_k_alloc(c, &out[3], q->dtype, 4, qd))) return mpx_k_free_values(out, n_out), st;
        a.qk = out[3].f, a.qkd = out[3].d;
    }
    if ((st = f64 ? attend_d(c, &a) : attend(c, &a))) mpx_k_free_values(out, n_out);
    return st;
}

mpx_status mpx_k_attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    if (c->node->domain && strcmp(c->node->domain, "com.microsoft") == 0)
        return ms_attention(c, in, n_in, out, n_out);
    return attention(c, in, n_in, out, n_out, false);
}

/* ONNX's Attention of float64 Q, K, V (a float or float64 mask); ORT's
 * com.microsoft form has no float64 kernel. */
mpx_status mpx_k_attention_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    if (c->node->domain && strcmp(c->node->domain, "com.microsoft") == 0)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "a float64 com.microsoft Attention is not supported");
    return attention(c, in, n_in, out, n_out, true);
}

/* ---- com.microsoft MultiHeadAttention and Attention --------------------------------------- */

/* What the two share after their Q, K, V: masks, past, the core, outputs. */
static mpx_status ms_finish(const mpx_kctx *c, attn *a, const mpx_value *kpm, const mpx_value *ab,
                            const mpx_value *pk, const mpx_value *pv, mpx_value *out, int n_out, int ipk, int ipv) {
    char s1[160];
    mpx_status st;
    a->post_scale = mpx_node_attr_float(c->node, "scale", 0.0f);
    if (a->post_scale == 0.0f) a->post_scale = 1.0f / sqrtf((float)a->D);
    a->filter = mpx_node_attr_float(c->node, "mask_filter_value", -10000.0f);
    a->causal = mpx_node_attr_int(c->node, "unidirectional", 0) != 0;
    if ((st = past_present(c, a, pk, pv, out, n_out, ipk, ipv))) return st;
    if (kpm) {
        if (!kpm->i) return mpx_kernel_error(c, MPX_E_INVALID, "the key padding mask must be integers");
        if (kpm->rank == 1 && kpm->n == a->B) {
            a->klen = kpm->i;
        } else if (kpm->rank == 2 && kpm->dims[0] == a->B && kpm->dims[1] == a->T) {
            a->keep = kpm->i, a->kps[0] = a->T, a->kps[1] = 1;
        } else {
            return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "a key padding mask %s: mpx takes [batch] (key counts) or "
                                    "[batch, total keys] (1 keep, 0 mask)", kn_shape(kpm, s1));
        }
    }
    if (ab) {
        int64_t last = 0;
        if ((st = mask_strides(c, ab, a, a->bs, &last))) return st;
        if (last != a->T) return mpx_kernel_error(c, MPX_E_SHAPE, "attention_bias %s must cover all %lld keys",
                                                  kn_shape(ab, s1), (long long)a->T);
        a->bias = ab->f;
    }
    a->bias_last = INT64_MAX;
    return attend(c, a);
}

static mpx_status ms_output(const mpx_kctx *c, attn *a, mpx_dtype dt, mpx_value *out) {
    int64_t yd[3] = {a->B, a->S, a->Hq * a->Dv};
    mpx_status st = mpx_k_alloc(c, &out[0], dt, 3, yd);
    a->y = out[0].f;
    a->ys[2] = a->Hq * a->Dv, a->ys[1] = a->Dv, a->ys[0] = a->S * a->Hq * a->Dv;
    return st;
}

mpx_status mpx_k_multi_head_attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                      int n_out) {
    const mpx_value *q, *k = kn_opt(in, n_in, 1), *v = kn_opt(in, n_in, 2), *bias, *ab, *pk, *pv;
    const mpx_value *kpm = kn_opt(in, n_in, 4);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "query", &q);
    if (!st) st = kn_float_opt(c, in, n_in, 3, "bias", &bias);
    if (!st) st = kn_float_opt(c, in, n_in, 5, "attention_bias", &ab);
    if (!st) st = kn_float_opt(c, in, n_in, 6, "past_key", &pk);
    if (!st) st = kn_float_opt(c, in, n_in, 7, "past_value", &pv);
    if (st) return st;
    for (int i = 8; i < n_in; i++)
        if (kn_opt(in, n_in, i)) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "input %d (past_sequence_length, "
                                                          "cache_indirection) is not supported", i);
    int64_t N = mpx_node_attr_int(c->node, "num_heads", 0);
    if (!k || !v || !k->f || !v->f || q->rank != 3 || (k->rank != 3 && k->rank != 4) || v->rank != k->rank)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "mpx takes query [B, S, D] with key and value both [B, L, D] "
                                "or both [B, N, L, H] (packed QKV or KV is not supported)");
    if (N < 1 || q->dims[2] % N) return mpx_kernel_error(c, MPX_E_INVALID, "num_heads %lld must divide query's %lld",
                                                         (long long)N, (long long)q->dims[2]);
    attn a = {.qscale = 1, .kscale = 1, .bias_last = INT64_MAX, .window = -1};
    a.B = q->dims[0], a.S = q->dims[1], a.Hq = a.Hkv = N, a.D = q->dims[2] / N;
    if (k->rank == 3) a.T = k->dims[1], a.Dv = v->dims[2] / N;
    else a.T = k->dims[2], a.Dv = v->dims[3];
    bool ok = k->dims[0] == a.B && v->dims[0] == a.B &&
              (k->rank == 3 ? k->dims[2] == N * a.D && v->dims[1] == a.T && v->dims[2] % N == 0
                            : k->dims[1] == N && k->dims[3] == a.D && v->dims[1] == N && v->dims[2] == a.T);
    if (!ok) return mpx_kernel_error(c, MPX_E_SHAPE, "key %s and value %s do not fit query with %lld heads",
                                     kn_shape(k, s1), kn_shape(v, s2), (long long)N);
    /* the projection bias: added to copies of q (and of 3-D k, v) */
    mpx_value qb = {.n = -1}, kb = {.n = -1}, vb = {.n = -1};
    a.q = q->f, a.k = k->f, a.v = v->f;
    if (bias) {
        int64_t D = N * a.D, Dv = N * a.Dv;
        if (k->rank != 3 || bias->n != D + D + Dv)
            return mpx_kernel_error(c, MPX_E_SHAPE, "bias %s must hold %lld values, with 3-D key and value",
                                    kn_shape(bias, s1), (long long)(D + D + Dv));
        mpx_error e;
        const mpx_value *src[3] = {q, k, v};
        mpx_value *dst[3] = {&qb, &kb, &vb};
        int64_t off[3] = {0, D, 2 * D}, w[3] = {D, D, Dv};
        for (int i = 0; i < 3; i++) {
            if (mpx_value_copy(dst[i], src[i], &e) != MPX_OK) {
                mpx_value_free(&qb), mpx_value_free(&kb), mpx_value_free(&vb);
                return mpx_kernel_error(c, e.status, "%s", e.msg);
            }
            for (int64_t j = 0; j < dst[i]->n; j++) dst[i]->f[j] += bias->f[off[i] + j % w[i]];
        }
        a.q = qb.f, a.k = kb.f, a.v = vb.f;
    }
    view_strides(q, N, a.qs), view_strides(k, N, a.ks), view_strides(v, N, a.vs);
    st = ms_output(c, &a, q->dtype, out);
    if (!st) st = ms_finish(c, &a, kpm, ab, pk, pv, out, n_out, 1, 2);
    if (st) mpx_k_free_values(out, n_out);
    mpx_value_free(&qb), mpx_value_free(&kb), mpx_value_free(&vb);
    return st;
}

/* Attention (BERT): QKV = input @ weights + bias, then as MultiHeadAttention;
 * its mask_index as a key padding mask ([batch] key counts or [batch, keys]
 * 0/1), its past a [2, B, N, P, H] pair. */
static mpx_status ms_attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *w, *bias, *past, *ab, *mi = kn_opt(in, n_in, 3);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "input", &x);
    if (!st) st = kn_float_in(c, in, n_in, 1, "weights", &w);
    if (!st) st = kn_float_opt(c, in, n_in, 2, "bias", &bias);
    if (!st) st = kn_float_opt(c, in, n_in, 4, "past", &past);
    if (!st) st = kn_float_opt(c, in, n_in, 5, "attention_bias", &ab);
    if (st) return st;
    if (kn_opt(in, n_in, 6)) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "past_sequence_length is not supported");
    if (mpx_node_attr_int(c->node, "do_rotary", 0) || mpx_node_attr_int(c->node, "past_present_share_buffer", 0))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "do_rotary and past_present_share_buffer are not supported");
    int64_t N = mpx_node_attr_int(c->node, "num_heads", 0);
    if (x->rank != 3 || w->rank != 2 || w->dims[0] != x->dims[2])
        return mpx_kernel_error(c, MPX_E_SHAPE, "input %s must be [B, S, D_in] and weights %s [D_in, Dq + Dk + Dv]",
                                kn_shape(x, s1), kn_shape(w, s2));
    int64_t hs[3];
    const int64_t *qkv;
    int nq = mpx_node_attr_ints(c->node, "qkv_hidden_sizes", &qkv);
    if (qkv && nq == 3) hs[0] = qkv[0], hs[1] = qkv[1], hs[2] = qkv[2];
    else hs[0] = hs[1] = hs[2] = w->dims[1] / 3;
    if (N < 1 || hs[0] + hs[1] + hs[2] != w->dims[1] || hs[0] != hs[1] || hs[0] % N || hs[2] % N ||
        (bias && bias->n != w->dims[1]))
        return mpx_kernel_error(c, MPX_E_INVALID, "num_heads %lld and qkv_hidden_sizes must split weights %s (and "
                                "bias) into Q, K, V with whole heads", (long long)N, kn_shape(w, s1));
    int64_t B = x->dims[0], S = x->dims[1], Din = x->dims[2], W = w->dims[1];
    float *qkvv = NULL;
    if ((st = kn_scratch(c, (size_t)(B * S * W), sizeof *qkvv, (void **)&qkvv))) return st;
    /* the projection: one dot product per value, in the accumulation format */
    for (int64_t r = 0; r < B * S && !mpx_k_cancelled(); r++) /* (a row apart; the values then dropped) */
        for (int64_t j = 0; j < W; j++) {
            mpx_acc acc;
            mpx_acc_init(&acc, &c->acc, 0.0f);
            for (int64_t i = 0; i < Din; i++) mpx_acc_add(&acc, x->f[r * Din + i] * w->f[i * W + j]);
            float y = mpx_acc_result(&acc);
            qkvv[r * W + j] = bias ? y + bias->f[j] : y;
        }
    if (c->round) mpx_round_array(c->round, qkvv, qkvv, (size_t)(B * S * W));
    attn a = {.qscale = 1, .kscale = 1, .bias_last = INT64_MAX, .window = -1};
    a.B = B, a.S = S, a.T = S, a.Hq = a.Hkv = N, a.D = hs[0] / N, a.Dv = hs[2] / N;
    a.q = qkvv, a.k = qkvv + hs[0], a.v = qkvv + 2 * hs[0];
    a.qs[3] = a.ks[3] = a.vs[3] = 1;
    a.qs[2] = a.ks[2] = a.vs[2] = W;
    a.qs[1] = a.ks[1] = a.D, a.vs[1] = a.Dv;
    a.qs[0] = a.ks[0] = a.vs[0] = S * W;
    mpx_value pk = {.n = -1}, pv = {.n = -1};
    if (past) {
        if (past->rank != 5 || past->dims[0] != 2 || past->dims[1] != B || past->dims[2] != N || past->dims[4] != a.D ||
            a.D != a.Dv) {
            free(qkvv);
            return mpx_kernel_error(c, MPX_E_SHAPE, "past %s must be [2, %lld, %lld, past, %lld]", kn_shape(past, s1),
                                    (long long)B, (long long)N, (long long)a.D);
        }
        /* views of the two halves */
        pk = (mpx_value){.dtype = MPX_DT_FLOAT, .rank = 4, .n = past->n / 2, .f = past->f};
        pv = pk;
        pv.f = past->f + past->n / 2;
        for (int i = 0; i < 4; i++) pk.dims[i] = pv.dims[i] = past->dims[1 + i];
        pk.borrowed = pv.borrowed = true;
    }
    st = ms_output(c, &a, x->dtype, out);
    if (!st) st = ms_finish(c, &a, mi, ab, past ? &pk : NULL, past ? &pv : NULL, out, n_out, -1, -1);
    /* present [2, B, N, T, H]: the present keys, then the present values */
    if (!st && kn_wants_out(c, n_out, 1)) {
        mpx_value half[2] = {{.n = -1}, {.n = -1}};
        int64_t pd[5] = {2, B, N, a.T, a.D};
        if (!(st = write_present(c, &a, 0, &half[0])) && !(st = write_present(c, &a, 1, &half[1])) &&
            !(st = mpx_k_alloc(c, &out[1], x->dtype, 5, pd))) {
            memcpy(out[1].f, half[0].f, (size_t)half[0].n * sizeof(float));
            memcpy(out[1].f + half[0].n, half[1].f, (size_t)half[1].n * sizeof(float));
        }
        mpx_value_free(&half[0]), mpx_value_free(&half[1]);
    }
    if (st) mpx_k_free_values(out, n_out);
    free(qkvv);
    return st;
}

/* ---- com.microsoft GroupQueryAttention ----------------------------------------------------- */

/* As ORT's CPU kernel: per batch, total = seqlens_k + 1 keys; a first prompt
 * (sequence length = total_sequence_length) starts at position 0, later
 * calls at total - S, the past keys before them coming from past_key. The
 * new keys (rotated with the queries when do_rotary) are written into the
 * present cache after the past ones, the rest of the cache zero. Queries
 * see keys up to their own position (causal), and with local_window_size
 * w only the last w of them, their own included (as onnxruntime 1.30 does;
 * the ORT source of early 2025 kept w + 1). Scores are scale * q.k, soft-capped, with
 * attention_bias added; smooth_softmax adds a zero logit to the softmax. */
mpx_status mpx_k_group_query_attention(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                       int n_out) {
    const mpx_value *q, *k = kn_opt(in, n_in, 1), *v = kn_opt(in, n_in, 2), *pk, *pv, *cs, *sn, *ab;
    const mpx_value *sl = kn_opt(in, n_in, 5), *tsl = kn_opt(in, n_in, 6), *pid = kn_opt(in, n_in, 9);
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "query", &q);
    if (!st) st = kn_float_opt(c, in, n_in, 3, "past_key", &pk);
    if (!st) st = kn_float_opt(c, in, n_in, 4, "past_value", &pv);
    if (!st) st = kn_float_opt(c, in, n_in, 7, "cos_cache", &cs);
    if (!st) st = kn_float_opt(c, in, n_in, 8, "sin_cache", &sn);
    if (!st) st = kn_float_opt(c, in, n_in, 10, "attention_bias", &ab);
    if (st) return st;
    if (kn_opt(in, n_in, 11)) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "head_sink is not supported");
    if (mpx_node_attr_int(c->node, "qk_output", 0))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "qk_output is not supported");
    int64_t N = mpx_node_attr_int(c->node, "num_heads", 0), KV = mpx_node_attr_int(c->node, "kv_num_heads", 0);
    if (N < 1 || KV < 1 || N % KV) return mpx_kernel_error(c, MPX_E_INVALID, "num_heads %lld must be a multiple of "
                                                           "kv_num_heads %lld", (long long)N, (long long)KV);
    if (q->rank != 3) return mpx_kernel_error(c, MPX_E_SHAPE, "query %s must be [B, S, D]", kn_shape(q, s1));
    bool packed = !k;
    if (packed != !v) return mpx_kernel_error(c, MPX_E_INVALID, "key and value come together (or both absent: packed)");
    int64_t B = q->dims[0], S = q->dims[1], H = q->dims[2] / (packed ? N + 2 * KV : N);
    if (H < 1 || q->dims[2] != H * (packed ? N + 2 * KV : N) ||
        (!packed && (k->rank != 3 || v->rank != 3 || k->dims[0] != B || k->dims[1] != S || k->dims[2] != KV * H ||
                     v->dims[0] != B || v->dims[1] != S || v->dims[2] != KV * H || !k->f || !v->f)))
        return mpx_kernel_error(c, MPX_E_SHAPE, "query %s, key and value do not fit %lld and %lld heads",
                                kn_shape(q, s1), (long long)N, (long long)KV);
    if (!sl || !sl->i || sl->n != B || !tsl || !tsl->i || tsl->n != 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "seqlens_k (one per batch) and total_sequence_length (one) are "
                                "required integers");
    int64_t TS = tsl->i[0], Pb = pk ? pk->dims[2] : 0, Tp = Pb > TS ? Pb : TS;
    if (!pk != !pv || (pk && (pk->rank != 4 || pk->dims[0] != B || pk->dims[1] != KV || pk->dims[3] != H ||
                              pv->rank != 4 || pv->n != pk->n)))
        return mpx_kernel_error(c, MPX_E_SHAPE, "past_key %s and past_value must both be [%lld, %lld, past, %lld]",
                                pk ? kn_shape(pk, s1) : "(none)", (long long)B, (long long)KV, (long long)H);
    bool rot = mpx_node_attr_int(c->node, "do_rotary", 0) != 0, inter = mpx_node_attr_int(c->node, "rotary_interleaved", 0);
    int64_t rd = cs ? 2 * cs->dims[cs->rank - 1] : 0;
    if (rot && (!cs || !sn || cs->rank != 2 || sn->n != cs->n || rd < 2 || rd > H))
        return mpx_kernel_error(c, MPX_E_INVALID, "do_rotary needs cos_cache and sin_cache [positions, rotary_dim / 2] "
                                "with rotary_dim at most the head size %lld", (long long)H);
    if (pid && (!pid->i || pid->n != B * S))
        return mpx_kernel_error(c, MPX_E_SHAPE, "position_ids %s must be [%lld, %lld]", kn_shape(pid, s1),
                                (long long)B, (long long)S);
    bool prompt = S == TS;
    int64_t *past = NULL, *total = NULL;
    float *qr = NULL, *kc = NULL, *vc = NULL;
    size_t cache = (size_t)(B * KV * Tp * H);
    if ((st = kn_scratch(c, (size_t)B, sizeof *past, (void **)&past)) ||
        (st = kn_scratch(c, (size_t)B, sizeof *total, (void **)&total)) ||
        (st = kn_scratch(c, (size_t)(B * N * S * H), sizeof *qr, (void **)&qr)) ||
        (st = kn_scratch(c, cache ? cache : 1, sizeof *kc, (void **)&kc)) ||
        (st = kn_scratch(c, cache ? cache : 1, sizeof *vc, (void **)&vc)))
        goto done;
    for (int64_t b = 0; b < B && !st; b++) {
        total[b] = sl->i[b] + 1;
        past[b] = prompt ? 0 : total[b] - S;
        if (total[b] < 1 || total[b] > Tp || past[b] < 0 || past[b] > Pb || past[b] + S > Tp)
            st = mpx_kernel_error(c, MPX_E_INVALID, "seqlens_k[%lld] = %lld does not fit %lld new tokens, a cache of "
                                  "%lld and total_sequence_length %lld", (long long)b, (long long)sl->i[b],
                                  (long long)S, (long long)Pb, (long long)TS);
    }
    if (st) goto done;
    memset(kc, 0, cache * sizeof *kc);
    memset(vc, 0, cache * sizeof *vc);
    int64_t D = q->dims[2], maxpos = cs ? cs->dims[0] : 0;
    for (int64_t b = 0; b < B && !st; b++)
        for (int64_t s = 0; s < S && !st; s++) {
            int64_t pos = pid ? pid->i[b * S + s] : past[b] + s;
            if (rot && (pos < 0 || pos >= maxpos)) {
                st = mpx_kernel_error(c, MPX_E_INVALID, "position %lld is outside the caches' %lld", (long long)pos,
                                      (long long)maxpos);
                break;
            }
            const float *cr = rot ? cs->f + pos * (rd / 2) : NULL, *sr = rot ? sn->f + pos * (rd / 2) : NULL;
            const float *row = q->f + (b * S + s) * D;
            for (int64_t h = 0; h < N; h++) {
                float *dst = qr + ((b * N + h) * S + s) * H;
                if (rot) kn_rotate(row + h * H, dst, H, rd, inter, cr, sr);
                else memcpy(dst, row + h * H, (size_t)H * sizeof *dst);
            }
            for (int64_t h = 0; h < KV; h++) {
                const float *kr = packed ? row + (N + h) * H : k->f + (b * S + s) * KV * H + h * H;
                const float *vr = packed ? row + (N + KV + h) * H : v->f + (b * S + s) * KV * H + h * H;
                float *kd = kc + ((b * KV + h) * Tp + past[b] + s) * H, *vd = vc + ((b * KV + h) * Tp + past[b] + s) * H;
                if (rot) kn_rotate(kr, kd, H, rd, inter, cr, sr);
                else memcpy(kd, kr, (size_t)H * sizeof *kd);
                memcpy(vd, vr, (size_t)H * sizeof *vd);
            }
        }
    for (int64_t b = 0; b < B && pk && !st; b++)
        for (int64_t h = 0; h < KV; h++) {
            memcpy(kc + (b * KV + h) * Tp * H, pk->f + (b * KV + h) * Pb * H, (size_t)(past[b] * H) * sizeof *kc);
            memcpy(vc + (b * KV + h) * Tp * H, pv->f + (b * KV + h) * Pb * H, (size_t)(past[b] * H) * sizeof *vc);
        }
    if (st) goto done;
    /* the present cache holds what a runtime holds: in the compute format */
    if (c->round) mpx_round_array(c->round, kc, kc, cache), mpx_round_array(c->round, vc, vc, cache);
    if (c->round && rot) mpx_round_array(c->round, qr, qr, (size_t)(B * N * S * H));
    attn a = {.onnx = true, .qscale = 1, .kscale = 1, .bias_last = INT64_MAX, .causal = true, .coff = past,
              .klen = total, .window = mpx_node_attr_int(c->node, "local_window_size", -1),
              .smooth = mpx_node_attr_int(c->node, "smooth_softmax", 0) != 0};
    a.B = B, a.Hq = N, a.Hkv = KV, a.S = S, a.T = Tp, a.D = H, a.Dv = H;
    a.post_scale = mpx_node_attr_float(c->node, "scale", 0.0f);
    if (a.post_scale == 0.0f) a.post_scale = 1.0f / sqrtf((float)H);
    a.softcap = mpx_node_attr_float(c->node, "softcap", 0.0f);
    a.q = qr, a.k = kc, a.v = vc;
    a.qs[3] = a.ks[3] = a.vs[3] = 1;
    a.qs[2] = H, a.qs[1] = S * H, a.qs[0] = N * S * H;
    a.ks[2] = a.vs[2] = H, a.ks[1] = a.vs[1] = Tp * H, a.ks[0] = a.vs[0] = KV * Tp * H;
    if (ab) {
        int64_t last = 0;
        if ((st = mask_strides(c, ab, &a, a.bs, &last))) goto done;
        a.bias = ab->f;
    }
    if ((st = ms_output(c, &a, q->dtype, out)) || (st = attend(c, &a))) goto done;
    for (int w = 0; w < 2 && !st; w++) {
        if (!kn_wants_out(c, n_out, 1 + w)) continue;
        int64_t dims[4] = {B, KV, Tp, H};
        if (!(st = mpx_k_alloc(c, &out[1 + w], q->dtype, 4, dims)))
            memcpy(out[1 + w].f, w ? vc : kc, cache * sizeof(float));
    }
done:
    if (st) mpx_k_free_values(out, n_out);
    free(past), free(total), free(qr), free(kc), free(vc);
    return st;
}
