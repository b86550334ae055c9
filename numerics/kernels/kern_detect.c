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

typedef struct sample {
    int64_t pos[4];
    float w[4];
} sample;

/* A float64 RoiAlign's bins (roi_align_d): the fp32 loop's steps in
 * double, coordinates and weights included, as ONNX Runtime's double kernel
 * computes them; spatial_scale is the attribute's float. */
static void roi_align_d(const mpx_value *x, const double *b, const double *img, double scale, bool half, bool avg,
                        int64_t oh, int64_t ow, int64_t sr, double *y) {
    const int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
    const double off = half ? 0.5 : 0.0;
    const double x0 = b[0] * scale - off, y0 = b[1] * scale - off, x1 = b[2] * scale - off, y1 = b[3] * scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
    const double bh = rh / (double)oh, bw = rw / (double)ow;
    const int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)oh), gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)ow);
    const int64_t count = gh * gw > 1 ? gh * gw : 1;
    for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++)
            for (int64_t ch = 0; ch < C; ch++) {
                const double *p = img + ch * H * W;
                double v = 0.0;
                bool first = true;
                for (int64_t iy = 0; iy < gh; iy++) {
                    const double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                    for (int64_t ix = 0; ix < gw; ix++) {
                        double yq = yy, xq = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                        double w[4] = {0, 0, 0, 0};
                        int64_t pos[4] = {0, 0, 0, 0};
                        if (!(yq < -1.0 || yq > (double)H || xq < -1.0 || xq > (double)W)) {
                            if (yq <= 0) yq = 0;
                            if (xq <= 0) xq = 0;
                            int64_t yl = (int64_t)yq, xl = (int64_t)xq, yh, xh;
                            if (yl >= H - 1) yh = yl = H - 1, yq = (double)yl;
                            else yh = yl + 1;
                            if (xl >= W - 1) xh = xl = W - 1, xq = (double)xl;
                            else xh = xl + 1;
                            const double ly = yq - (double)yl, lx = xq - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
                            w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
                            pos[0] = yl * W + xl, pos[1] = yl * W + xh, pos[2] = yh * W + xl, pos[3] = yh * W + xh;
                        }
                        if (avg) {
                            v += w[0] * p[pos[0]] + w[1] * p[pos[1]] + w[2] * p[pos[2]] + w[3] * p[pos[3]];
                        } else {
                            const double m =
                                fmax(fmax(fmax(w[0] * p[pos[0]], w[1] * p[pos[1]]), w[2] * p[pos[2]]), w[3] * p[pos[3]]);
                            v = first ? m : fmax(v, m);
                            first = false;
                        }
                    }
                }
                y[(ch * oh + ph) * ow + pw] = avg ? v / (double)count : v;
            }
}

/* f64: a float64 node (kern_f64.c's table): the same checks, the bins in
 * double (roi_align_d). */
static mpx_status roi_align(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                            bool f64) {
    const mpx_value *x, *rois, *bi = kn_opt(in, n_in, 2);
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
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
    if ((st = mpx_k_alloc(c, &out[0], f64 ? MPX_DT_DOUBLE : x->dtype, 4, dims))) return st;
    float off = half ? 0.5f : 0.0f;
    for (int64_t r = 0; f64 && r < R; r++) {
        const double *b = rois->d + r * 4, rw = (b[2] - b[0]) * scale, rh = (b[3] - b[1]) * scale;
        const double gh_d = sr > 0 ? (double)sr : ceil(rh / (double)oh), gw_d = sr > 0 ? (double)sr : ceil(rw / (double)ow);
        if (!(fabs(gh_d) <= 1e6 && fabs(gw_d) <= 1e6) || gh_d * gw_d > 1e6) { /* as below (a NaN roi too) */
            mpx_value_free(&out[0]);
            return mpx_kernel_error(c, MPX_E_LIMIT, "roi %lld samples a %gx%g grid per bin", (long long)r, gh_d, gw_d);
        }
        roi_align_d(x, b, x->d + bi->i[r] * C * H * W, (double)scale, half, avg, oh, ow, sr, out[0].d + r * C * oh * ow);
    }
    for (int64_t r = 0; !f64 && r < R; r++) {
        const float *b = rois->f + r * 4;
        float x0 = b[0] * scale - off, y0 = b[1] * scale - off, x1 = b[2] * scale - off, y1 = b[3] * scale - off;
        float rw = x1 - x0, rh = y1 - y0;
        if (!half) rw = fmaxf(rw, 1.0f), rh = fmaxf(rh, 1.0f);
        float bh = rh / (float)oh, bw = rw / (float)ow;
        double gh_d = sr > 0 ? (double)sr : ceil((double)(rh / (float)oh)), gw_d = sr > 0 ? (double)sr : ceil((double)(rw / (float)ow));
        /* a box far larger than the image would sample without end: refused */
        if (!(gh_d >= 0 && gw_d >= 0) || gh_d * gw_d > 1e6) {
            mpx_value_free(&out[0]);
            return mpx_kernel_error(c, MPX_E_LIMIT, "roi %lld samples a %gx%g grid per bin", (long long)r, gh_d, gw_d);
        }
        int64_t gh = (int64_t)gh_d, gw = (int64_t)gw_d, count = gh * gw > 1 ? gh * gw : 1;
        const float *img = x->f + bi->i[r] * C * H * W;
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++) {
                for (int64_t ch = 0; ch < C; ch++) {
                    const float *p = img + ch * H * W;
                    float v = 0.0f;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        float yy = y0 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            float xx = x0 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                            sample sm = {{0, 0, 0, 0}, {0, 0, 0, 0}};
                            float y = yy, xq = xx;
                            if (!(y < -1.0f || y > (float)H || xq < -1.0f || xq > (float)W)) {
                                if (y <= 0) y = 0;
                                if (xq <= 0) xq = 0;
                                int64_t yl = (int64_t)y, xl = (int64_t)xq, yh, xh;
                                if (yl >= H - 1) yh = yl = H - 1, y = (float)yl;
                                else yh = yl + 1;
                                if (xl >= W - 1) xh = xl = W - 1, xq = (float)xl;
                                else xh = xl + 1;
                                float ly = y - (float)yl, lx = xq - (float)xl, hy = 1.0f - ly, hx = 1.0f - lx;
                                sm.w[0] = hy * hx, sm.w[1] = hy * lx, sm.w[2] = ly * hx, sm.w[3] = ly * lx;
                                sm.pos[0] = yl * W + xl, sm.pos[1] = yl * W + xh, sm.pos[2] = yh * W + xl,
                                sm.pos[3] = yh * W + xh;
                            }
                            if (avg) {
                                v += sm.w[0] * p[sm.pos[0]] + sm.w[1] * p[sm.pos[1]] + sm.w[2] * p[sm.pos[2]] +
                                     sm.w[3] * p[sm.pos[3]];
                            } else {
                                float m = fmaxf(fmaxf(fmaxf(sm.w[0] * p[sm.pos[0]], sm.w[1] * p[sm.pos[1]]),
                                                      sm.w[2] * p[sm.pos[2]]),
                                                sm.w[3] * p[sm.pos[3]]);
                                v = first ? m : fmaxf(v, m);
                                first = false;
                            }
                        }
                    }
                    out[0].f[((r * C + ch) * oh + ph) * ow + pw] = avg ? v / (float)count : v;
                }
            }
    }
    return MPX_OK;
}

mpx_status mpx_k_roi_align(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return roi_align(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_roi_align_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return roi_align(c, in, n_in, out, n_out, true);
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
    if (!st) st = kn_float_in(c, in, n_in, 0, "X", &x);
    if (!st) st = kn_float_in(c, in, n_in, 1, "rois", &rois);
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
        float b = rois->f[r * 5];
        if (!(b >= 0.0f && b < (float)N) || b != floorf(b))
            return mpx_kernel_error(c, MPX_E_INVALID, "roi %lld: batch index %g is not one of the %lld images",
                                    (long long)r, (double)b, (long long)N);
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, 4, od))) return st;
    for (int64_t r = 0; r < R; r++) {
        const float *ro = rois->f + r * 5;
        int64_t b = (int64_t)ro[0];
        int64_t x1 = (int64_t)roundf(ro[1] * scale), y1 = (int64_t)roundf(ro[2] * scale);
        int64_t x2 = (int64_t)roundf(ro[3] * scale), y2 = (int64_t)roundf(ro[4] * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        float bh = (float)rh / (float)PH, bw = (float)rw / (float)PW;
        for (int64_t ch = 0; ch < C; ch++) {
            const float *img = x->f + (b * C + ch) * H * W;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)floorf((float)ph * bh) + y1, he = (int64_t)ceilf((float)(ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)floorf((float)pw * bw) + x1, we = (int64_t)ceilf((float)(pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : hs > H ? H : hs, he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws, we = we < 0 ? 0 : we > W ? W : we;
                    float m = he <= hs || we <= ws ? 0.0f : -FLT_MAX;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++)
                            if (img[h * W + w] > m) m = img[h * W + w];
                    out[0].f[((r * C + ch) * PH + ph) * PW + pw] = m;
                }
        }
    }
    return MPX_OK;
}
