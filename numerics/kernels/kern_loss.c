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
 * optional second output is that log_softmax. A float64 loss computes the
 * same in double (kern_f64.c's table). */
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

/* The loss of logp (N, C, d...) against targets t (N, d...), into out[0];
 * a float64 loss (kern_f64.c's table) reads logpd and double weights, and
 * sums in double in the same order. */
static mpx_status nll(const mpx_kctx *c, const float *logp, const double *logpd, const mpx_value *x,
                      const mpx_value *t, const mpx_value *w, mpx_value *out) {
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
    const mpx_dtype dt = logpd ? MPX_DT_DOUBLE : x->dtype;
    if (red == LR_NONE) {
        if ((st = mpx_k_alloc(c, out, dt, t->rank, t->dims))) return st;
    } else if ((st = mpx_k_alloc(c, out, dt, 0, NULL))) {
        return st;
    }
    if (logpd) {
        double sum = 0, wsum = 0;
        for (int64_t j = 0; j < t->n; j++) {
            const int64_t n = j / (D ? D : 1), d = j % (D ? D : 1), k = t->i[j];
            const bool skip = has_ignore && k == ignore;
            const double wk = skip ? 0.0 : w ? w->d[k] : 1.0, l = skip ? 0.0 : -logpd[(n * C + k) * D + d] * wk;
            if (red == LR_NONE) out->d[j] = l;
            sum += l;
            wsum += wk;
        }
        if (red != LR_NONE) out->d[0] = red == LR_SUM ? sum : sum / wsum;
        return MPX_OK;
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

static mpx_status nll_run(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                          bool f64) {
    const mpx_value *x, *w;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", f64, &x);
    if (!st) st = kn_values_opt(c, in, n_in, 2, "weight", f64, &w);
    if (st) return st;
    const mpx_value *t = kn_opt(in, n_in, 1);
    if (!t) return mpx_kernel_error(c, MPX_E_INVALID, "the target input is missing");
    return nll(c, x->f, f64 ? x->d : NULL, x, t, w, &out[0]);
}

mpx_status mpx_k_nll_loss(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return nll_run(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_nll_loss_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return nll_run(c, in, n_in, out, n_out, true);
}

static mpx_status sce_run(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                          bool f64) {
    const mpx_value *x, *w;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "scores", f64, &x);
    if (!st) st = kn_values_opt(c, in, n_in, 2, "weights", f64, &w);
    if (st) return st;
    const mpx_value *t = kn_opt(in, n_in, 1);
    if (!t) return mpx_kernel_error(c, MPX_E_INVALID, "the labels input is missing");
    if (x->rank < 2) return mpx_kernel_error(c, MPX_E_SHAPE, "scores of rank %d: expected (N, C, d...)", x->rank);
    /* log_softmax over axis 1, kept (second output) or in scratch */
    bool keep = kn_wants_out(c, n_out, 1);
    int64_t N = x->dims[0], C = x->dims[1], D = N && C ? x->n / N / C : 0;
    if (f64) {
        double *lp = NULL;
        if (keep) {
            if ((st = mpx_k_alloc(c, &out[1], MPX_DT_DOUBLE, x->rank, x->dims))) return st;
            lp = out[1].d;
        } else if ((st = kn_scratch(c, (size_t)(x->n ? x->n : 1), sizeof *lp, (void **)&lp))) {
            return st;
        }
        mpx_k_softmax_rows_f64(x->d, lp, N, C, D, true); /* over axis 1 */
        st = nll(c, NULL, lp, x, t, w, &out[0]);
        if (!keep) free(lp);
        else if (st) mpx_value_free(&out[1]);
        return st;
    }
    float *logp = NULL;
    if (keep) {
        if ((st = mpx_k_alloc(c, &out[1], x->dtype, x->rank, x->dims))) return st;
        logp = out[1].f;
    } else if ((st = kn_scratch(c, (size_t)(x->n ? x->n : 1), sizeof *logp, (void **)&logp))) {
        return st;
    }
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
    st = nll(c, logp, NULL, x, t, w, &out[0]);
    if (!keep) free(logp);
    else if (st) mpx_value_free(&out[1]); /* a failed kernel leaves its outputs absent */
    return st;
}

mpx_status mpx_k_softmax_cross_entropy(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                       int n_out) {
    return sce_run(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_softmax_cross_entropy_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                           mpx_value *out, int n_out) {
    return sce_run(c, in, n_in, out, n_out, true);
}
