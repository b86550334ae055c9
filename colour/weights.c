/* weights.c - what converting the plan's weights offline does to them.
 *
 * A constant converted to the target can overflow (a BatchNormalization
 * variance of 1e8 becomes inf in fp16) or lose its small values; the run's
 * activation metrics only show the consequence, a layer gone wrong, so the
 * conversions are checked value by value here. */
#include "mpx_colour.h"

#include <math.h>
#include <stdlib.h>

mpx_status mpx_plan_check_weights(const mpx_plan *p, mpx_weight_check **out, int *n_out, mpx_error *err) {
    *out = NULL;
    *n_out = 0;
    mpx_weight_check *w = NULL;
    int n = 0;
    for (int i = 0; i < p->n_weights; i++) {
        const mpx_plan_weight *pw = &p->weights[i];
        const mpx_tensor *t = p->g->tensors[pw->tensor];
        mpx_value ref, conv;
        mpx_value_view(&ref, t);
        if (ref.n <= 0 || !ref.f) continue;
        mpx_status st = mpx_value_copy(&conv, &ref, err);
        if (st) {
            free(w);
            return st;
        }
        mpx_round_array(pw->to, conv.f, conv.f, (size_t)conv.n);
        mpx_metrics m;
        st = mpx_metrics_compute(&ref, &conv, pw->to, &m, err);
        mpx_value_free(&conv);
        if (st) {
            free(w);
            return st;
        }
        /* Overflow and flush by the format's one rule (the metrics' overflow
         * is "not finite", which a saturating format never is). */
        int64_t overflow = 0, flushed = 0;
        mpx_format_count_damage(pw->to, ref.f, (size_t)ref.n, &overflow, &flushed);
        if (!(overflow || flushed || m.rel_l2 > MPX_WEIGHT_LOSS || isnan(m.rel_l2))) continue;
        mpx_weight_check *grown = realloc(w, (size_t)(n + 1) * sizeof *w);
        if (!grown) {
            free(w);
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        }
        w = grown;
        w[n++] = (mpx_weight_check){.weight = i, .n = m.n, .overflow = overflow, .underflow = flushed,
                                    .absmax = m.absmax_ref, .rel_l2 = m.rel_l2};
    }
    *out = w;
    *n_out = n;
    return MPX_OK;
}
