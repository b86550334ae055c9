/* kern_detect.c - the detection ops: NonMaxSuppression and RoiAlign.
 *
 * NonMaxSuppression, as ONNX Runtime's CPU kernel runs it:
 * per batch and class, the boxes whose score is above score_threshold (when
 * given) in order of score (ties: the lower box index first), each kept
 * unless its IoU with a box already kept exceeds iou_threshold, until
 * max_output_boxes_per_class are kept (0 or omitted: none). Corners may come
 * in either order (center_point_box 0) or as centre and size (1). A box of
 * zero area suppresses nothing and is suppressed by nothing. Selected
 * indices are listed batch by batch, class by class, in the order chosen.
 *
 * RoiAlign, as ONNX Runtime's CPU kernel (and ONNX's reference) computes it:
 * each output bin averages (or, mode max, takes the largest of) a grid of
 * bilinear samples, sampling_ratio per side or ceil(roi size / bins); a
 * sample more than one pixel outside the image counts 0, one within a pixel
 * is clamped to the border. coordinate_transformation_mode half_pixel
 * (opset 16's default) shifts the box by half a pixel; output_half_pixel
 * (opset 10's behaviour) does not, and makes every box at least 1x1. Max
 * mode takes the largest of the four weighted corners of each sample, as
 * ORT does (not the largest interpolated value). */
#include "kern_nn.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    float score;
    int64_t box;
} cand;

static int by_score(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->box < y->box ? -1 : x->box > y->box;
}

/* [ymin, xmin, ymax, xmax] of box k */
static void corners(const float *b, bool centre, float *out) {
    if (centre) {
        float xc = b[0], yc = b[1], w = b[2] / 2.0f, h = b[3] / 2.0f;
        out[0] = yc - h, out[1] = xc - w, out[2] = yc + h, out[3] = xc + w;
    } else {
        out[0] = fminf(b[0], b[2]), out[1] = fminf(b[1], b[3]);
        out[2] = fmaxf(b[0], b[2]), out[3] = fmaxf(b[1], b[3]);
    }
}

static bool suppresses(const float *a, const float *b, float iou_threshold) {
    float ymin = fmaxf(a[0], b[0]), xmin = fmaxf(a[1], b[1]), ymax = fminf(a[2], b[2]), xmax = fminf(a[3], b[3]);
    float inter = fmaxf(0.0f, xmax - xmin) * fmaxf(0.0f, ymax - ymin);
    if (inter <= 0.0f) return false;
    float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    float uni = area_a + area_b - inter;
    if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return false;
    return inter / uni > iou_threshold;
}

static mpx_status scalar_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what,
                            double *v, bool *given) {
    const mpx_value *x = kn_opt(in, n_in, i);
    *given = x != NULL;
    if (!x) return MPX_OK;
    if (x->n != 1) {
        char s[160];
        return mpx_kernel_error(c, MPX_E_SHAPE, "%s must be one value, not %s", what, kn_shape(x, s));
    }
    *v = x->f ? (double)x->f[0] : (double)x->i[0];
    return MPX_OK;
}

mpx_status mpx_k_non_max_suppression(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                     int n_out) {
    const mpx_value *boxes, *scores;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "boxes", &boxes);
    if (!st) st = kn_float_in(c, in, n_in, 1, "scores", &scores);
    if (st) return st;
    double max_out = 0, iou = 0, score_thr = 0;
    bool has_max, has_iou, has_score;
    if ((st = scalar_in(c, in, n_in, 2, "max_output_boxes_per_class", &max_out, &has_max)) ||
        (st = scalar_in(c, in, n_in, 3, "iou_threshold", &iou, &has_iou)) ||
        (st = scalar_in(c, in, n_in, 4, "score_threshold", &score_thr, &has_score)))
        return st;
    if (iou < 0 || iou > 1) return mpx_kernel_error(c, MPX_E_INVALID, "iou_threshold %g is outside [0, 1]", iou);
    int64_t cpb = mpx_node_attr_int(c->node, "center_point_box", 0);
    if (cpb != 0 && cpb != 1) return mpx_kernel_error(c, MPX_E_INVALID, "center_point_box %lld is not 0 or 1", (long long)cpb);
    if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 || scores->dims[0] != boxes->dims[0] ||
        scores->dims[2] != boxes->dims[1])
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "boxes %s and scores %s: [batches, boxes, 4] and [batches, classes, boxes] expected",
                                kn_shape(boxes, s1), kn_shape(scores, s2));
    int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];
    int64_t keep_max = max_out < 0 ? 0 : max_out > (double)N ? N : (int64_t)max_out;
    float *cor = NULL;
    cand *cands = NULL;
    int64_t *sel = NULL, *picked = NULL, n_sel = 0;
    size_t cap = (size_t)(B * C * keep_max);
    if ((st = kn_scratch(c, (size_t)(N * 4), sizeof *cor, (void **)&cor)) ||
        (st = kn_scratch(c, (size_t)N, sizeof *cands, (void **)&cands)) ||
        (st = kn_scratch(c, (size_t)N, sizeof *picked, (void **)&picked)) ||
        (st = kn_scratch(c, cap * 3, sizeof *sel, (void **)&sel)))
        goto done;
    for (int64_t b = 0; b < B && keep_max > 0; b++) {
        for (int64_t k = 0; k < N; k++) corners(boxes->f + (b * N + k) * 4, cpb == 1, cor + k * 4);
        for (int64_t cl = 0; cl < C; cl++) {
            const float *sc = scores->f + (b * C + cl) * N;
            int64_t n = 0, n_picked = 0;
            for (int64_t k = 0; k < N; k++)
                if (!has_score || (double)sc[k] > score_thr) cands[n++] = (cand){sc[k], k};
            qsort(cands, (size_t)n, sizeof *cands, by_score);
            for (int64_t q = 0; q < n && n_picked < keep_max; q++) {
                bool gone = false;
                for (int64_t p = 0; p < n_picked && !gone; p++)
                    gone = suppresses(cor + picked[p] * 4, cor + cands[q].box * 4, (float)iou);
                if (gone) continue;
                picked[n_picked++] = cands[q].box;
                sel[n_sel * 3] = b, sel[n_sel * 3 + 1] = cl, sel[n_sel * 3 + 2] = cands[q].box;
                n_sel++;
            }
        }
    }
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 2, (int64_t[]){n_sel, 3}))) goto done;
    if (n_sel) memcpy(out[0].i, sel, (size_t)n_sel * 3 * sizeof *sel);
done:
    free(cor);
    free(cands);
    free(picked);
    free(sel);
    return st;
}

/* ---- RoiAlign -------------------------------------------------------------------------- */

#define RA_T float
#define RA_F(x) x##_f
#define RA_FMAX fmaxf
#define RA_ROUND roundf
#define RA_FLOOR floorf
#define RA_CEIL ceilf
#define RA_MAX FLT_MAX
#include "kern_roi_body.h"
#define RA_T double
#define RA_F(x) x##_d
#define RA_FMAX fmax
#define RA_ROUND round
#define RA_FLOOR floor
#define RA_CEIL ceil
#define RA_MAX DBL_MAX
#include "kern_roi_body.h"

mpx_status mpx_k_roi_align(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *rois, *bi = kn_opt(in, n_in, 2);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d; /* float64 X and rois (kernels_f64.def): roi_align_rois_d */
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "rois", f64, &rois);
    if (st) return st;
    if (x->rank != 4) return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; N x C x H x W expected", kn_shape(x, s1));
    if (rois->rank != 2 || rois->dims[1] != 4)
        return mpx_kernel_error(c, MPX_E_SHAPE, "rois has shape %s; num_rois x 4 expected", kn_shape(rois, s1));
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (!bi || !bi->i || bi->rank != 1 || bi->dims[0] != R)
        return mpx_kernel_error(c, MPX_E_SHAPE, "batch_indices %s must hold one integer per roi (%lld)",
                                bi ? kn_shape(bi, s2) : "(none)", (long long)R);
    int64_t oh = mpx_node_attr_int(c->node, "output_height", 1), ow = mpx_node_attr_int(c->node, "output_width", 1);
    int64_t sr = mpx_node_attr_int(c->node, "sampling_ratio", 0);
    float scale = mpx_node_attr_float(c->node, "spatial_scale", 1.0f);
    const char *mode = mpx_node_attr_string(c->node, "mode", "avg");
    const char *ctm = mpx_node_attr_string(c->node, "coordinate_transformation_mode",
                                           kn_opset(c) >= 16 ? "half_pixel" : "output_half_pixel");
    bool avg = strcmp(mode, "avg") == 0, half = strcmp(ctm, "half_pixel") == 0;
    if (!avg && strcmp(mode, "max") != 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "mode \"%s\" is not avg or max", mode);
    if (!half && strcmp(ctm, "output_half_pixel") != 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "coordinate_transformation_mode \"%s\" is not half_pixel or "
                                "output_half_pixel", ctm);
    if (oh < 1 || ow < 1 || oh > 65536 || ow > 65536 || sr < 0 || sr > 65536)
        return mpx_kernel_error(c, MPX_E_INVALID, "output_height %lld, output_width %lld and sampling_ratio %lld "
                                "must be positive (sampling_ratio may be 0) and at most 65536",
                                (long long)oh, (long long)ow, (long long)sr);
    for (int64_t r = 0; r < R; r++)
        if (bi->i[r] < 0 || bi->i[r] >= N)
            return mpx_kernel_error(c, MPX_E_INVALID, "batch_indices[%lld] = %lld is outside [0, %lld)", (long long)r,
                                    (long long)bi->i[r], (long long)N);
    int64_t dims[4] = {R, C, oh, ow};
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, 4, dims))) return st;
    const int64_t *bix = bi->i;
    double bad_h = 0, bad_w = 0;
    const int64_t bad = x->d ? roi_align_rois_d(x->d, rois->d, bix, R, C, H, W, oh, ow, sr, (double)scale, avg, half,
                                                out[0].d, &bad_h, &bad_w)
                             : roi_align_rois_f(x->f, rois->f, bix, R, C, H, W, oh, ow, sr, scale, avg, half, out[0].f,
                                                &bad_h, &bad_w);
    if (bad >= 0) {
        mpx_value_free(&out[0]);
        return mpx_kernel_error(c, MPX_E_LIMIT, "roi %lld samples a %gx%g grid per bin", (long long)bad, bad_h, bad_w);
    }
    return MPX_OK;
}

/* ---- MaxRoiPool ------------------------------------------------------------------------ */

/* As ORT's CPU kernel (Caffe's RoIPooling): a roi's corners scaled and
 * rounded to whole pixels, its size at least 1x1, split into pooled_shape
 * bins (floor of the start, ceil of the end, clipped to the image); each
 * output the largest value in its bin, 0 for an empty bin. */
mpx_status mpx_k_max_roi_pool(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *rois;
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d; /* float64 X and rois (kernels_f64.def): max_roi_pool_rois_d */
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "rois", f64, &rois);
    if (st) return st;
    if (x->rank != 4) return mpx_kernel_error(c, MPX_E_SHAPE, "X has shape %s; N x C x H x W expected", kn_shape(x, s1));
    if (rois->rank != 2 || rois->dims[1] != 5)
        return mpx_kernel_error(c, MPX_E_SHAPE, "rois has shape %s; num_rois x 5 (batch, x1, y1, x2, y2) expected",
                                kn_shape(rois, s1));
    const int64_t *ps;
    if (mpx_node_attr_ints(c->node, "pooled_shape", &ps) != 2 || !ps || ps[0] < 1 || ps[1] < 1 || ps[0] > 65536 ||
        ps[1] > 65536)
        return mpx_kernel_error(c, MPX_E_INVALID, "pooled_shape must be two positive values");
    float scale = mpx_node_attr_float(c->node, "spatial_scale", 1.0f);
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], PH = ps[0], PW = ps[1];
    int64_t od[4] = {R, C, PH, PW};
    for (int64_t r = 0; r < R; r++) {
        const double b = f64 ? rois->d[r * 5] : (double)rois->f[r * 5];
        if (!(b >= 0.0 && b < (double)N) || b != floor(b))
            return mpx_kernel_error(c, MPX_E_INVALID, "roi %lld: batch index %g is not one of the %lld images",
                                    (long long)r, (double)b, (long long)N);
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, 4, od))) return st;
    if (x->d) max_roi_pool_rois_d(x->d, rois->d, R, C, H, W, PH, PW, (double)scale, out[0].d);
    else max_roi_pool_rois_f(x->f, rois->f, R, C, H, W, PH, PW, scale, out[0].f);
    return MPX_OK;
}
