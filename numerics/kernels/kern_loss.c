/* kern_loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Both read input (N, C, d1..dk) and integer targets (N, d1..dk): the loss
 * of an element is -input[n, t, d...] * weight[t] (weight 1 without the
 * weights input), 0 where t is ignore_index. reduction none keeps the
 * (N, d1..dk) losses; sum adds them; mean divides that sum by the sum of
 * the weights of the elements not ignored (their count without weights), as
 * the ONNX text and ONNX Runtime do. Sums go through mpx_acc in flat index
 * order. SoftmaxCrossEntropyLoss is that loss of log_softmax(scores) over
 * axis 1 (kern_norm.c's order: x - max - log(sum(exp(x - max)))), and its
 * optional second output is that log_softmax. */
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { LR_NONE, LR_SUM, LR_MEAN } loss_reduce;

static mpx_status loss_reduction(const mpx_kctx *c, loss_reduce *r) {
    const char *s = mpx_node_attr_string(c->node, "reduction", "mean");
    if (strcmp(s, "none") == 0) *r = LR_NONE;
    else if (strcmp(s, "sum") == 0) *r = LR_SUM;
    else if (strcmp(s, "mean") == 0) *r = LR_MEAN;
    else return mpx_kernel_error(c, MPX_E_INVALID, "reduction \"%s\" is not none, sum or mean", s);
    return MPX_OK;
}

/* The loss of logp (N, C, d...) against targets t (N, d...), into out[0]. */
static mpx_status nll(const mpx_kctx *c, const float *logp, const mpx_value *x, const mpx_value *t,
                      const mpx_value *w, mpx_value *out) {
    if (!t->i) return mpx_kernel_error(c, MPX_E_INVALID, "the targets must be integers");
    if (x->rank < 2 || t->rank != x->rank - 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "input of rank %d and targets of rank %d: expected (N, C, d...) and (N, d...)",
                                x->rank, t->rank);
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != x->dims[i ? i + 1 : 0])
            return mpx_kernel_error(c, MPX_E_SHAPE, "targets' dim %d is %lld, the input's is %lld", i,
                                    (long long)t->dims[i], (long long)x->dims[i ? i + 1 : 0]);
    int64_t N = x->dims[0], C = x->dims[1], D = N ? t->n / N : 0;
    if (w && (w->rank != 1 || w->dims[0] != C))
        return mpx_kernel_error(c, MPX_E_SHAPE, "weights must have C = %lld values", (long long)C);
    loss_reduce red = LR_MEAN;
    mpx_status st = loss_reduction(c, &red);
    if (st) return st;
    const mpx_attr *ia = mpx_node_attr(c->node, "ignore_index");
    bool has_ignore = ia != NULL;
    int64_t ignore = ia ? ia->i : 0;
    for (int64_t j = 0; j < t->n; j++)
        if (!(has_ignore && t->i[j] == ignore) && (t->i[j] < 0 || t->i[j] >= C))
            return mpx_kernel_error(c, MPX_E_INVALID, "target %lld at %lld is not a class from 0 to %lld",
                                    (long long)t->i[j], (long long)j, (long long)C - 1);
    if (red == LR_NONE) {
        if ((st = mpx_k_alloc(c, out, x->dtype, t->rank, t->dims))) return st;
    } else if ((st = mpx_k_alloc(c, out, x->dtype, 0, NULL))) {
        return st;
    }
    mpx_acc sum, wsum;
    mpx_acc_init(&sum, &c->acc, 0.0f);
    mpx_acc_init(&wsum, &c->acc, 0.0f);
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            int64_t j = n * D + d, k = t->i[j];
            bool skip = has_ignore && k == ignore;
            float wk = skip ? 0.0f : w ? w->f[k] : 1.0f;
            float l = skip ? 0.0f : -logp[(n * C + k) * D + d] * wk;
            if (red == LR_NONE) out->f[j] = l;
            mpx_acc_add(&sum, l);
            mpx_acc_add(&wsum, wk);
        }
    if (red == LR_SUM) out->f[0] = mpx_acc_result(&sum);
    if (red == LR_MEAN) out->f[0] = mpx_acc_result(&sum) / mpx_acc_result(&wsum);
    return MPX_OK;
}

mpx_status mpx_k_nll_loss(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *w;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "input", &x);
    if (!st) st = kn_float_opt(c, in, n_in, 2, "weight", &w);
    if (st) return st;
    const mpx_value *t = kn_opt(in, n_in, 1);
    if (!t) return mpx_kernel_error(c, MPX_E_INVALID, "the target input is missing");
    return nll(c, x->f, x, t, w, &out[0]);
}

mpx_status mpx_k_softmax_cross_entropy(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                       int n_out) {
    const mpx_value *x, *w;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "scores", &x);
    if (!st) st = kn_float_opt(c, in, n_in, 2, "weights", &w);
    if (st) return st;
    const mpx_value *t = kn_opt(in, n_in, 1);
    if (!t) return mpx_kernel_error(c, MPX_E_INVALID, "the labels input is missing");
    if (x->rank < 2) return mpx_kernel_error(c, MPX_E_SHAPE, "scores of rank %d: expected (N, C, d...)", x->rank);
    /* log_softmax over axis 1, kept (second output) or in scratch */
    bool keep = kn_wants_out(c, n_out, 1);
    float *logp = NULL;
    if (keep) {
        if ((st = mpx_k_alloc(c, &out[1], x->dtype, x->rank, x->dims))) return st;
        logp = out[1].f;
    } else if ((st = kn_scratch(c, (size_t)(x->n ? x->n : 1), sizeof *logp, (void **)&logp))) {
        return st;
    }
    int64_t N = x->dims[0], C = x->dims[1], D = N && C ? x->n / N / C : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            const float *xp = x->f + n * C * D + d;
            float *yp = logp + n * C * D + d;
            float m = xp[0];
            for (int64_t k = 1; k < C; k++)
                if (xp[k * D] > m) m = xp[k * D];
            mpx_acc a;
            mpx_acc_init(&a, &c->acc, 0.0f);
            for (int64_t k = 0; k < C; k++) mpx_acc_add(&a, expf(xp[k * D] - m));
            float ls = logf(mpx_acc_result(&a));
            for (int64_t k = 0; k < C; k++) yp[k * D] = (xp[k * D] - m) - ls;
        }
    st = nll(c, logp, x, t, w, &out[0]);
    if (!keep) free(logp);
    else if (st) mpx_value_free(&out[1]); /* a failed kernel leaves its outputs absent */
    return st;
}
