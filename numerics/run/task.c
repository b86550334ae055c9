/* task.c - task figures: what a model's user checks of an output, against
 * the fp32 reference, beside the tensor distances of metrics.c: does the
 * classifier's top-1 agree (top1), how much of the top k is the same
 * (topk_overlap@k), does a mask keep its IoU (iou@t), does a decision fall
 * on the same side of its threshold (sign_agree@t).
 *
 * Rows are the values along the last axis (a classifier's [N, C] has N
 * rows, a sequence's [N, T, C] N * T); samples are the values under the
 * first axis (a mask's [N, 1, H, W] has N). All four figures are shares in
 * [0, 1], higher is better. */
#include "mpx_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const task_names[MPX_TASK_COUNT] = {"top1", "topk_overlap", "iou", "sign_agree"};

const char *mpx_task_name(mpx_task_id id) { return id < MPX_TASK_COUNT ? task_names[id] : "?"; }

mpx_status mpx_task_parse(const char *name, bool *is_task, mpx_task_figure *f, mpx_error *err) {
    *is_task = false;
    const char *at = strchr(name, '@');
    size_t len = at ? (size_t)(at - name) : strlen(name);
    int id = 0;
    while (id < MPX_TASK_COUNT && !(strlen(task_names[id]) == len && strncmp(name, task_names[id], len) == 0)) id++;
    if (id == MPX_TASK_COUNT) return MPX_OK;
    *is_task = true;
    f->id = (mpx_task_id)id;
    f->param = id == MPX_TASK_TOPK_OVERLAP ? 5 : 0;
    bool wants = id == MPX_TASK_IOU || id == MPX_TASK_SIGN_AGREE, may = wants || id == MPX_TASK_TOPK_OVERLAP;
    if (!at && wants)
        return mpx_error_set(err, MPX_E_ARG, "%s needs a threshold: %s@<t>, e.g. %s@0.5", name, name, name);
    if (at && !may) return mpx_error_set(err, MPX_E_ARG, "%s takes no @ parameter", task_names[id]);
    if (at) {
        char *end;
        double v = strtod(at + 1, &end);
        if (end == at + 1 || *end || !isfinite(v))
            return mpx_error_set(err, MPX_E_ARG, "%s: \"%s\" after @ is not a number", name, at + 1);
        if (id == MPX_TASK_TOPK_OVERLAP && (v < 1 || v != floor(v) || v > 1e6))
            return mpx_error_set(err, MPX_E_ARG, "%s: k must be a count from 1 up", name);
        f->param = v;
    }
    return MPX_OK;
}

/* Element j of a float or a float64 value, as a double (a float widens
 * exactly, so comparisons give what they give in float). */
static inline double at(const mpx_value *v, int64_t j) { return v->d ? v->d[j] : (double)v->f[j]; }

/* The indices of the k largest of v's elements [o, o + n) into top (k <= n),
 * relative to o, ties to the lower index: one pass of insertion into a
 * sorted list of k. */
static void top_k(const mpx_value *v, int64_t o, int64_t n, int k, int64_t *top) {
    int m = 0;
    for (int64_t j = 0; j < n; j++) {
        const double x = at(v, o + j);
        int p = m < k ? m : k;
        if (p == k && !(x > at(v, o + top[k - 1]))) continue;
        if (m < k) m++;
        while (p > 0 && x > at(v, o + top[p - 1])) {
            if (p < k) top[p] = top[p - 1];
            p--;
        }
        if (p < k) top[p] = j;
    }
}

mpx_status mpx_task_compute(const mpx_value *r, const mpx_value *c, const mpx_task_figure *f, double *out,
                            mpx_error *err) {
    if (!r || !c || !((r->f && c->f) || (r->d && c->d)) || r->n != c->n || r->rank != c->rank)
        return mpx_error_set(err, MPX_E_ARG, "%s: needs a float output and its reference, of one shape",
                             mpx_task_name(f->id));
    int64_t n = r->n;
    if (n <= 0) return mpx_error_set(err, MPX_E_ARG, "%s: the output is empty", mpx_task_name(f->id));
    int64_t last = r->rank > 0 ? r->dims[r->rank - 1] : 1, rows = last > 0 ? n / last : 0;
    int64_t first = r->rank > 0 ? r->dims[0] : 1, per = first > 0 ? n / first : 0;
    switch (f->id) {
    case MPX_TASK_TOP1:
    case MPX_TASK_TOPK_OVERLAP: {
        int k = f->id == MPX_TASK_TOP1 ? 1 : (int)f->param;
        if (last < 2)
            return mpx_error_set(err, MPX_E_ARG,
                                 "%s: the output's last axis has %lld element%s: there is nothing to rank",
                                 mpx_task_name(f->id), (long long)last, last == 1 ? "" : "s");
        if (k > last)
            return mpx_error_set(err, MPX_E_ARG, "topk_overlap@%d: the output's last axis has only %lld elements", k,
                                 (long long)last);
        int64_t *a = malloc((size_t)k * 2 * sizeof *a);
        if (!a) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        double sum = 0;
        for (int64_t i = 0; i < rows; i++) {
            top_k(r, i * last, last, k, a);
            top_k(c, i * last, last, k, a + k);
            int same = 0;
            for (int p = 0; p < k; p++)
                for (int q = 0; q < k; q++) same += a[p] == a[k + q];
            sum += (double)same / k;
        }
        free(a);
        *out = sum / (double)rows;
        return MPX_OK;
    }
    case MPX_TASK_IOU: {
        double sum = 0;
        for (int64_t s = 0; s < first; s++) {
            int64_t both = 0, any = 0;
            for (int64_t j = s * per; j < (s + 1) * per; j++) {
                bool x = at(r, j) > f->param, y = at(c, j) > f->param;
                both += x && y;
                any += x || y;
            }
            sum += any ? (double)both / (double)any : 1; /* both masks empty: the same mask */
        }
        *out = sum / (double)first;
        return MPX_OK;
    }
    case MPX_TASK_SIGN_AGREE: {
        int64_t same = 0;
        for (int64_t j = 0; j < n; j++) same += (at(r, j) > f->param) == (at(c, j) > f->param);
        *out = (double)same / (double)n;
        return MPX_OK;
    }
    default: return mpx_error_set(err, MPX_E_ARG, "unknown task figure");
    }
}
