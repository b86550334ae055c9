/* kern_resize.c - Resize (opsets 10-19) and Upsample (7-9).
 *
 * Inputs by version: Upsample-7 has a scales attribute; Upsample-9 and
 * Resize-10 take scales as input 1; Resize-11+ takes (X, roi, scales, sizes),
 * where an empty tensor (opset 11) or an omitted input stands for "not
 * given", and exactly one of scales and sizes must be given. Resize-18 adds
 * axes and keep_aspect_ratio_policy (supported) and antialias (refused when
 * it would change the result: linear or cubic downsampling).
 *
 * Output lengths: floor(in * scale) with an fp32 product (as ONNX Runtime and
 * graph/shape.c), or sizes. Source coordinates are computed in fp32 from the
 * fp32 scale (the given one, or out / in from sizes) with ONNX Runtime's
 * expressions, so nearest-neighbour ties fall as in ORT (ONNX's Python
 * reference computes in double; the ONNX node tests agree with both).
 * "length_resized" in the align_corners, pytorch_half_pixel,
 * half_pixel_symmetric and tf_crop_and_resize formulas is in * scale, as the
 * operator text defines scale = length_resized / length_original and ONNX's
 * reference reads it; ORT uses the integer output length instead. The two
 * differ only when in * scale is not a whole number (ONNX's
 * test_resize_downsample_scales_*_align_corners, which ORT skips).
 * pytorch_half_pixel maps to 0 when length_resized <= 1, as the text says.
 *
 * Opset 10 and Upsample: asymmetric coordinates; nearest picks ceil(x) when
 * downsampling and floor(x) otherwise (ORT's rule for these versions).
 * Opset 11+: coordinate_transformation_mode half_pixel (default),
 * half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
 * tf_half_pixel_for_nn, tf_crop_and_resize (with roi and
 * extrapolation_value); nearest_mode round_prefer_floor (default),
 * round_prefer_ceil, floor, ceil; cubic with cubic_coeff_a and
 * exclude_outside. Neighbours outside the input take the edge value.
 *
 * Values: nearest copies input values (any numeric dtype). Linear and cubic
 * (float inputs) are separable weighted sums as in ONNX's reference: along
 * the last axis first, then each earlier axis over the results, every sum
 * over neighbours in increasing input index through mpx_acc; a weight is an
 * fp32 product with the value. Neighbours with weight 0 are not terms, so an
 * axis that is not resized adds no rounding. */
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_TF_CROP };
enum { NM_SIMPLE, NM_PREFER_FLOOR, NM_PREFER_CEIL, NM_FLOOR, NM_CEIL };

typedef struct rs_term {
    int64_t off; /* element offset in X: input index times the axis stride */
    float w;
    double wd; /* the weight in double, for float64 values */
} rs_term;

/* One axis: up to 4 terms per output coordinate; 0 terms marks a coordinate
 * outside the roi (tf_crop_and_resize: the output is extrapolation_value). */
typedef struct rs_axis {
    int64_t in, out, stride;
    float scale, lr, roi_s, roi_e;
    rs_term *t;
    unsigned char *nt;
} rs_axis;

typedef struct rs_opts {
    int mode, ct, nm;
    double cubic_a;
    bool exclude_outside;
} rs_opts;

static int lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* fp32 arithmetic in the order ONNX Runtime evaluates these, so that ties of
 * nearest (x exactly k + 0.5, or a whole number) fall the same way. */
static float source_coord(const rs_opts *o, const rs_axis *a, float x) {
    float in = (float)a->in, s = a->scale, lr = a->lr;
    switch (o->ct) {
    case CT_HALF_PIXEL: return (x + 0.5f) / s - 0.5f;
    case CT_HALF_PIXEL_SYM: {
        float adj = (float)a->out / lr, center = in / 2.0f;
        return center * (1.0f - adj) + ((x + 0.5f) / s - 0.5f);
    }
    case CT_PYTORCH: return lr > 1.0f ? (x + 0.5f) / s - 0.5f : 0.0f;
    case CT_ALIGN: return lr == 1.0f ? 0.0f : x * (in - 1.0f) / (lr - 1.0f);
    case CT_TF_NN: return (x + 0.5f) / s;
    case CT_TF_CROP:
        if (lr > 1.0f)
            return a->roi_s * (in - 1.0f) + (x * (a->roi_e - a->roi_s) * (in - 1.0f)) / (lr - 1.0f);
        return (float)(0.5 * (double)(a->roi_s + a->roi_e) * (double)(in - 1.0f));
    default: return x / s; /* asymmetric */
    }
}

static int64_t clamp_idx(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

static void cubic_coeffs(double r, double A, double *cf) {
    double r1 = r + 1.0, q = 1.0 - r, q1 = q + 1.0;
    cf[0] = ((A * r1 - 5.0 * A) * r1 + 8.0 * A) * r1 - 4.0 * A;
    cf[1] = ((A + 2.0) * r - (A + 3.0)) * r * r + 1.0;
    cf[2] = ((A + 2.0) * q - (A + 3.0)) * q * q + 1.0;
    cf[3] = ((A * q1 - 5.0 * A) * q1 + 8.0 * A) * q1 - 4.0 * A;
}

/* The terms of output coordinate x of axis a. */
static void axis_terms(const rs_opts *o, rs_axis *a, int64_t x) {
    rs_term *t = a->t + 4 * x;
    float xo = source_coord(o, a, (float)x);
    int n = 0;
    if (o->ct == CT_TF_CROP && (xo < 0.0f || xo > (float)(a->in - 1))) {
        a->nt[x] = 0;
        return;
    }
    double fl = floor((double)xo), r = (double)xo - fl;
    int64_t x0 = (int64_t)fl;
    if (o->mode == RS_NEAREST) {
        int64_t i;
        switch (o->nm) {
        case NM_SIMPLE: i = a->scale < 1.0f ? (int64_t)ceil((double)xo) : x0; break;
        case NM_PREFER_CEIL: i = r >= 0.5 ? x0 + 1 : x0; break;
        case NM_FLOOR: i = x0; break;
        case NM_CEIL: i = r > 0.0 ? x0 + 1 : x0; break;
        default: i = r > 0.5 ? x0 + 1 : x0; break;
        }
        t[n++] = (rs_term){clamp_idx(i, a->in) * a->stride, 1.0f, 1.0};
    } else if (r == 0.0) {
        t[n++] = (rs_term){clamp_idx(x0, a->in) * a->stride, 1.0f, 1.0};
    } else {
        double cf[4];
        int64_t first;
        int k;
        if (o->mode == RS_LINEAR) {
            cf[0] = 1.0 - r;
            cf[1] = r;
            first = x0, k = 2;
        } else {
            cubic_coeffs(r, o->cubic_a, cf);
            first = x0 - 1, k = 4;
        }
        if (o->exclude_outside) {
            double sum = 0.0;
            for (int j = 0; j < k; j++) {
                if (first + j < 0 || first + j >= a->in) cf[j] = 0.0;
                sum += cf[j];
            }
            for (int j = 0; j < k; j++) cf[j] = sum != 0.0 ? cf[j] / sum : 0.0;
        }
        for (int j = 0; j < k; j++)
            if (cf[j] != 0.0)
                t[n++] = (rs_term){clamp_idx(first + j, a->in) * a->stride, (float)cf[j], cf[j]};
    }
    a->nt[x] = (unsigned char)n;
}

/* The weighted sum over axes [k, rank) at output coordinates oc. */
static float interp(const mpx_kctx *c, const rs_axis *ax, int rank, int k, const int64_t *oc,
                    const float *x, int64_t base) {
    if (k == rank) return x[base];
    const rs_axis *a = &ax[k];
    const rs_term *t = a->t + 4 * oc[k];
    int n = a->nt[oc[k]];
    if (n == 1 && t[0].w == 1.0f) return interp(c, ax, rank, k + 1, oc, x, base + t[0].off);
    mpx_acc acc;
    mpx_acc_init(&acc, &c->acc, 0.0f);
    for (int j = 0; j < n; j++) mpx_acc_add(&acc, t[j].w * interp(c, ax, rank, k + 1, oc, x, base + t[j].off));
    return mpx_acc_result(&acc);
}

/* interp for float64 values: the same terms, double weights, sums in
 * increasing input index in double. */
static double interp_d(const rs_axis *ax, int rank, int k, const int64_t *oc, const double *x, int64_t base) {
    if (k == rank) return x[base];
    const rs_axis *a = &ax[k];
    const rs_term *t = a->t + 4 * oc[k];
    int n = a->nt[oc[k]];
    if (n == 1 && t[0].wd == 1.0) return interp_d(ax, rank, k + 1, oc, x, base + t[0].off);
    double s = 0.0;
    for (int j = 0; j < n; j++) s += t[j].wd * interp_d(ax, rank, k + 1, oc, x, base + t[j].off);
    return s;
}

/* Scales and output lengths per axis from the inputs and attributes. */
static mpx_status rs_sizes(const mpx_kctx *c, const mpx_value *const *in, int n_in, bool upsample,
                           const mpx_value *x, rs_axis *ax, const rs_opts *o, float *extrap) {
    char s2[160];
    int opset = kn_opset(c), r = x->rank;
    bool legacy = upsample || opset <= 10;
    const mpx_value *scales = NULL, *sizes = NULL, *roi = NULL;
    const mpx_attr *sa = NULL;
    mpx_status st;
    if (upsample && opset < 9) {
        sa = mpx_node_attr(c->node, "scales");
        if (!sa || sa->type != MPX_ATTR_FLOATS)
            return mpx_kernel_error(c, MPX_E_INVALID, "attribute scales (a list of floats) is required");
    } else if (legacy) {
        if ((st = kn_float_in(c, in, n_in, 1, "scales", &scales))) return st;
    } else {
        roi = kn_opt(in, n_in, 1);
        if (!(roi && roi->dtype == MPX_DT_DOUBLE && roi->d) && (st = kn_float_opt(c, in, n_in, 1, "roi", &roi)))
            return st;
        if ((st = kn_float_opt(c, in, n_in, 2, "scales", &scales))) return st;
        sizes = kn_opt(in, n_in, 3);
        if (sizes && (!mpx_dtype_is_int_like(sizes->dtype) || !sizes->i))
            return mpx_kernel_error(c, MPX_E_INVALID, "input sizes must be int64, not %s",
                                    mpx_dtype_name(sizes->dtype));
        if (scales && scales->n == 0) scales = NULL;
        if (sizes && sizes->n == 0) sizes = NULL;
        if (roi && roi->n == 0) roi = NULL;
        if (scales && sizes)
            return mpx_kernel_error(c, MPX_E_INVALID, "scales and sizes are both given; only one may be");
        if (!scales && !sizes)
            return mpx_kernel_error(c, MPX_E_INVALID, "neither scales nor sizes is given");
    }
    /* The axes, lengths and scales are graph/geom.c's, which shape
     * inference computes with too. */
    mpx_resize_geometry gm;
    mpx_error ge;
    if (mpx_resize_geom(c->node, legacy, upsample, r, x->dims, sa ? sa->floats : scales ? scales->f : NULL,
                        sa || scales ? NULL : sizes->i, sa ? sa->n : scales ? scales->n : sizes->n, &gm, &ge))
        return mpx_kernel_error(c, ge.status, "%s", ge.msg);
    int na = gm.na;
    if (roi && roi->n != 2 * na)
        return mpx_kernel_error(c, MPX_E_SHAPE, "roi of shape %s does not hold 2 x %d values",
                                kn_shape(roi, s2), na);
    if (o->ct == CT_TF_CROP && !roi)
        return mpx_kernel_error(c, MPX_E_INVALID, "tf_crop_and_resize needs the roi input");
    *extrap = mpx_node_attr_float(c->node, "extrapolation_value", 0.0f);
    for (int i = 0; i < r; i++) {
        rs_axis *a = &ax[i];
        a->in = x->dims[i];
        a->out = gm.out[i];
        a->scale = gm.scale[i];
        /* The length the coordinates map onto: the given size, or scale x in. */
        a->lr = gm.exact[i] ? (float)gm.out[i] : gm.scale[i] * (float)a->in;
        a->roi_s = 0.0f, a->roi_e = 1.0f;
    }
    for (int i = 0; roi && i < na; i++) { /* a float64 roi to fp32: the coordinates are fp32 */
        ax[gm.axes[i]].roi_s = roi->d ? (float)roi->d[i] : roi->f[i];
        ax[gm.axes[i]].roi_e = roi->d ? (float)roi->d[na + i] : roi->f[na + i];
    }
    if (mpx_node_attr_int(c->node, "antialias", 0) != 0 && o->mode != RS_NEAREST)
        for (int i = 0; i < r; i++)
            if (ax[i].scale < 1.0f)
                return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "antialias downsampling is not supported");
    return MPX_OK;
}

/* ---- nearest, float: rows of the last axis, on two threads ----------------------------
 * The same copies as the general loop in resize() (each output element is one
 * input element, or the extrapolation value), done as a gather per output
 * row with the last axis' offsets made once, and a row that reads the same
 * input row as the one before it (upsampling repeats each row) copied from
 * it. The general loop spent about 3 ns per element (PP-OCRv4 det's 2x
 * upsamplings were 8% of its forward). */
enum { RS_ROWS_PER_ITEM = 64 };

typedef struct rs_near {
    const rs_axis *ax;
    int r;
    const float *x;
    float *y;
    const int64_t *loff; /* [last]: input offset, or -1 outside */
    int64_t last, rows;
    float extrap;
} rs_near;

/* The input offset of output row `row` over the outer axes, or -1 when it
 * is outside (0 terms on some axis). */
static int64_t near_base(const rs_near *n, int64_t row) {
    int64_t base = 0;
    for (int i = n->r - 2; i >= 0; i--) {
        const rs_axis *a = &n->ax[i];
        int64_t k = row % a->out;
        row /= a->out;
        if (a->nt[k] == 0) return -1;
        base += a->t[4 * k].off;
    }
    return base;
}

static void near_item(void *vc, int tid, long item) {
    (void)tid;
    const rs_near *n = vc;
    int64_t r0 = (int64_t)item * RS_ROWS_PER_ITEM;
    int64_t r1 = r0 + RS_ROWS_PER_ITEM < n->rows ? r0 + RS_ROWS_PER_ITEM : n->rows;
    int64_t prev = -2;
    for (int64_t row = r0; row < r1; row++) {
        float *y = n->y + row * n->last;
        int64_t base = near_base(n, row);
        if (base == prev && row > r0) {
            memcpy(y, y - n->last, (size_t)n->last * sizeof *y);
            continue;
        }
        prev = base;
        if (base < 0) {
            for (int64_t k = 0; k < n->last; k++) y[k] = n->extrap;
            continue;
        }
        const float *xb = n->x + base;
        for (int64_t k = 0; k < n->last; k++) y[k] = n->loff[k] >= 0 ? xb[n->loff[k]] : n->extrap;
    }
}

static mpx_status nearest_rows(const mpx_kctx *c, const rs_axis *ax, int r, const float *x, float *y,
                               int64_t total, float extrap) {
    const rs_axis *al = &ax[r - 1];
    int64_t *loff = NULL;
    mpx_status st = kn_scratch(c, (size_t)al->out, sizeof *loff, (void **)&loff);
    if (st) return st;
    for (int64_t k = 0; k < al->out; k++) loff[k] = al->nt[k] ? al->t[4 * k].off : -1;
    rs_near n = {ax, r, x, y, loff, al->out, total / al->out, extrap};
    long items = (long)((n.rows + RS_ROWS_PER_ITEM - 1) / RS_ROWS_PER_ITEM);
    mpx_k_parallel(items, total >= (1 << 16) ? kg_threads() : 1, near_item, &n);
    free(loff);
    return MPX_OK;
}

/* ---- linear and cubic, float: the last two axes apart -------------------------------
 * interp's sums, computed once each instead of once per output element:
 * along the last axis, every input row of a plane that an output row reads
 * becomes a row of the output's width (its sums as interp makes them for
 * axis r - 1), then each output row is the sum over its terms along axis
 * r - 2 of those rows (interp's sums for that axis, over the same values).
 * The same mpx_acc calls in the same order on the same values: the same
 * bits. Taken when every outer axis passes its value through (one term of
 * weight 1: the batch and channel axes) and every coordinate has a term
 * (not tf_crop_and_resize's outside). Why: interp walked the recursion,
 * its term tables and an mpx_acc for every output element, about 25 ns an
 * element; a 2x bilinear upsampling of 32 x 112 x 112 took 80 ms where
 * ONNX Runtime takes 1.2 (AMD EPYC Zen 3). */
enum { RS_SEP_MAX_THREADS = 64 };

typedef struct rs_sep {
    const mpx_kctx *c;
    const rs_axis *ax;
    int r;
    const float *x;
    float *y;
    int64_t hin, win, hout, wout;
    const unsigned char *need; /* [hin]: an output row reads input row h */
    float *buf[RS_SEP_MAX_THREADS]; /* per thread: [hin][wout], the rows along the last axis */
} rs_sep;

/* The sum of n terms w_j * v_j in fp32 as mpx_acc adds them (n < MPX_ACC_FP32_BLOCK:
 * one block from +0, then added to the running sum from +0). */
static inline float rs_sum_fp32(int n, const rs_term *t, const float *v, int64_t div) {
    float b = 0.0f;
    for (int j = 0; j < n; j++) b += t[j].w * v[t[j].off / div];
    return 0.0f + b;
}

static void sep_item(void *vc, int tid, long item) {
    const rs_sep *s = vc;
    const rs_axis *ah = &s->ax[s->r - 2], *aw = &s->ax[s->r - 1];
    const bool fp32 = mpx_acc_is_fp32(&s->c->acc);
    /* the plane's input offset: the outer axes' single terms */
    int64_t base = 0, rest = item;
    for (int i = s->r - 3; i >= 0; i--) {
        const rs_axis *a = &s->ax[i];
        base += a->t[4 * (rest % a->out)].off;
        rest /= a->out;
    }
    const float *xp = s->x + base;
    float *t = s->buf[tid], *yp = s->y + (int64_t)item * s->hout * s->wout;
    for (int64_t h = 0; h < s->hin; h++) {
        if (!s->need[h]) continue;
        const float *xr = xp + h * s->win;
        float *tr = t + h * s->wout;
        for (int64_t k = 0; k < s->wout; k++) {
            const rs_term *tk = aw->t + 4 * k;
            const int n = aw->nt[k];
            if (n == 1 && tk[0].w == 1.0f) {
                tr[k] = xr[tk[0].off];
            } else if (fp32) {
                tr[k] = rs_sum_fp32(n, tk, xr, 1);
            } else {
                mpx_acc acc;
                mpx_acc_init(&acc, &s->c->acc, 0.0f);
                for (int j = 0; j < n; j++) mpx_acc_add(&acc, tk[j].w * xr[tk[j].off]);
                tr[k] = mpx_acc_result(&acc);
            }
        }
    }
    const int64_t W = s->wout;
    for (int64_t oh = 0; oh < s->hout; oh++) {
        const rs_term *th = ah->t + 4 * oh;
        const int n = ah->nt[oh];
        float *yr = yp + oh * W;
        if (n == 1 && th[0].w == 1.0f) {
            memcpy(yr, t + th[0].off / ah->stride * W, (size_t)W * sizeof *yr);
        } else if (fp32 && n == 2) { /* rs_sum_fp32's steps, a row at a time (vectorised) */
            const float w0 = th[0].w, w1 = th[1].w;
            const float *r0 = t + th[0].off / ah->stride * W, *r1 = t + th[1].off / ah->stride * W;
            for (int64_t k = 0; k < W; k++) {
                float b = 0.0f;
                b += w0 * r0[k];
                b += w1 * r1[k];
                yr[k] = 0.0f + b;
            }
        } else {
            for (int64_t k = 0; k < W; k++) {
                if (fp32) {
                    float b = 0.0f;
                    for (int j = 0; j < n; j++) b += th[j].w * t[th[j].off / ah->stride * W + k];
                    yr[k] = 0.0f + b;
                } else {
                    mpx_acc acc;
                    mpx_acc_init(&acc, &s->c->acc, 0.0f);
                    for (int j = 0; j < n; j++) mpx_acc_add(&acc, th[j].w * t[th[j].off / ah->stride * W + k]);
                    yr[k] = mpx_acc_result(&acc);
                }
            }
        }
    }
}

/* Whether sep_rows computes this resize: rank >= 2, every coordinate of
 * every axis with a term, the outer axes' one term of weight 1. */
static bool sep_fits(const rs_axis *ax, int r) {
    if (r < 2) return false;
    for (int i = 0; i < r; i++)
        for (int64_t k = 0; k < ax[i].out; k++) {
            if (ax[i].nt[k] == 0) return false;
            if (i < r - 2 && !(ax[i].nt[k] == 1 && ax[i].t[4 * k].w == 1.0f)) return false;
        }
    return true;
}

static mpx_status sep_rows(const mpx_kctx *c, const rs_axis *ax, int r, const float *x, float *y,
                           int64_t total) {
    const rs_axis *ah = &ax[r - 2], *aw = &ax[r - 1];
    rs_sep s = {.c = c, .ax = ax, .r = r, .x = x, .y = y, .hin = ah->in, .win = aw->in, .hout = ah->out,
                .wout = aw->out};
    int nt = total >= (1 << 16) ? kg_threads() : 1;
    if (nt > RS_SEP_MAX_THREADS) nt = RS_SEP_MAX_THREADS;
    unsigned char *need = NULL;
    mpx_status st = kn_scratch(c, (size_t)s.hin, 1, (void **)&need);
    for (int i = 0; !st && i < nt; i++) st = kn_scratch(c, (size_t)(s.hin * s.wout), sizeof(float), (void **)&s.buf[i]);
    if (!st) {
        memset(need, 0, (size_t)s.hin);
        for (int64_t k = 0; k < ah->out; k++)
            for (int j = 0; j < ah->nt[k]; j++) need[ah->t[4 * k + j].off / ah->stride] = 1;
        s.need = need;
        const int64_t planes = total / (s.hout * s.wout);
        if (!mpx_k_parallel_stoppable((long)planes, nt, sep_item, &s))
            st = mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
    }
    for (int i = 0; i < nt; i++) free(s.buf[i]);
    free(need);
    return st;
}

static mpx_status resize(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out, bool upsample, bool f64) {
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const cts[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                      "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                      "tf_crop_and_resize"};
    static const char *const nms[] = {"", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    const mpx_value *x = kn_opt(in, n_in, 0);
    if (!x) return mpx_kernel_error(c, MPX_E_INVALID, "input 0 (X) is missing");
    bool is_double = f64 && x->dtype == MPX_DT_DOUBLE && x->d;
    bool is_float = (mpx_dtype_is_float(x->dtype) && x->f) || is_double;
    if (!is_float && !(mpx_dtype_is_int_like(x->dtype) && x->i))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "input X is %s", mpx_dtype_name(x->dtype));
    bool legacy = upsample || kn_opset(c) <= 10;
    rs_opts o = {0};
    const char *s = mpx_node_attr_string(c->node, "mode", "nearest");
    o.mode = lookup(s, modes, legacy ? 2 : 3);
    if (o.mode < 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "mode \"%s\" is not one of nearest, linear%s", s,
                                legacy ? "" : ", cubic");
    if (legacy) {
        o.ct = CT_ASYM;
        o.nm = NM_SIMPLE;
    } else {
        s = mpx_node_attr_string(c->node, "coordinate_transformation_mode", "half_pixel");
        o.ct = lookup(s, cts, 7);
        if (o.ct < 0)
            return mpx_kernel_error(c, MPX_E_INVALID, "coordinate_transformation_mode \"%s\" is unknown", s);
        s = mpx_node_attr_string(c->node, "nearest_mode", "round_prefer_floor");
        o.nm = lookup(s, nms, 5);
        if (o.nm <= 0) return mpx_kernel_error(c, MPX_E_INVALID, "nearest_mode \"%s\" is unknown", s);
        o.cubic_a = mpx_node_attr_float(c->node, "cubic_coeff_a", -0.75f);
        o.exclude_outside = mpx_node_attr_int(c->node, "exclude_outside", 0) != 0;
    }
    if (!is_float && o.mode != RS_NEAREST)
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "%s interpolation of %s values is not supported",
                                modes[o.mode], mpx_dtype_name(x->dtype));
    int r = x->rank;
    if (r < 1) return mpx_kernel_error(c, MPX_E_SHAPE, "input X is a scalar");
    rs_axis ax[MPX_MAX_RANK];
    memset(ax, 0, sizeof ax);
    float extrap = 0.0f;
    if ((st = rs_sizes(c, in, n_in, upsample, x, ax, &o, &extrap))) return st;
    int64_t dims[MPX_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = ax[i].out;
    for (int i = r - 1; i >= 0; i--) ax[i].stride = i == r - 1 ? 1 : ax[i + 1].stride * ax[i + 1].in;
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, r, dims))) return st;
    int64_t total = out[0].n;
    for (int i = 0; i < r && !st; i++) {
        st = kn_scratch(c, (size_t)(4 * ax[i].out), sizeof *ax[i].t, (void **)&ax[i].t);
        if (!st) st = kn_scratch(c, (size_t)ax[i].out, 1, (void **)&ax[i].nt);
        for (int64_t k = 0; !st && k < ax[i].out; k++) axis_terms(&o, &ax[i], k);
    }
    if (st || total == 0 || x->n == 0) {
        if (total > 0 && x->n == 0 && !st)
            st = mpx_kernel_error(c, MPX_E_SHAPE, "input X is empty but the output is not");
        goto done;
    }
    if (o.mode == RS_NEAREST && is_float && !is_double) {
        st = nearest_rows(c, ax, r, x->f, out[0].f, total, extrap);
        goto done;
    }
    if (o.mode != RS_NEAREST && is_float && !is_double && sep_fits(ax, r)) {
        st = sep_rows(c, ax, r, x->f, out[0].f, total);
        goto done;
    }
    int64_t oc[MPX_MAX_RANK] = {0}, last = ax[r - 1].out;
    const rs_axis *al = &ax[r - 1];
    for (int64_t p = 0; p < total; p += last) {
        /* Offsets of the outer axes (nearest: one term each; 0 terms: outside). */
        bool outside = false, single = o.mode == RS_NEAREST;
        int64_t base = 0;
        for (int i = 0; i < r - 1; i++) {
            int n = ax[i].nt[oc[i]];
            outside = outside || n == 0;
            if (single && n) base += ax[i].t[4 * oc[i]].off;
        }
        for (int64_t k = 0; k < last; k++) {
            int64_t yi = p + k;
            oc[r - 1] = k;
            if (outside || al->nt[k] == 0) {
                if (is_double) out[0].d[yi] = (double)extrap;
                else if (is_float) out[0].f[yi] = extrap;
                else out[0].i[yi] = (int64_t)extrap;
            } else if (single) {
                int64_t xi = base + al->t[4 * k].off;
                if (is_double) out[0].d[yi] = x->d[xi];
                else if (is_float) out[0].f[yi] = x->f[xi];
                else out[0].i[yi] = x->i[xi];
            } else if (is_double) {
                out[0].d[yi] = interp_d(ax, r, 0, oc, x->d, 0);
            } else {
                out[0].f[yi] = interp(c, ax, r, 0, oc, x->f, 0);
            }
        }
        for (int i = r - 2; i >= 0; i--) { /* odometer over the outer axes */
            if (++oc[i] < ax[i].out) break;
            oc[i] = 0;
        }
    }
done:
    for (int i = 0; i < r; i++) {
        free(ax[i].t);
        free(ax[i].nt);
    }
    if (st) mpx_value_free(&out[0]);
    return st;
}

mpx_status mpx_k_resize(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    return resize(c, in, n_in, out, n_out, false, false);
}

mpx_status mpx_k_upsample(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                          int n_out) {
    return resize(c, in, n_in, out, n_out, true, false);
}

/* float64 X: the fp32 kernel's axes, coordinates and neighbours (its
 * coordinates are fp32, as ONNX Runtime computes them for every type), the
 * weights in double and every sum in double; nearest copies the doubles. */
mpx_status mpx_k_resize_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return resize(c, in, n_in, out, n_out, false, true);
}

/* Upsample (opsets 7-9) of float64 X: the same, with Upsample's inputs and
 * coordinates. */
mpx_status mpx_k_upsample_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return resize(c, in, n_in, out, n_out, true, true);
}

/* ---- GridSample ------------------------------------------------------------------------ */

/* X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] (x, y in [-1, 1]): modes
 * bilinear/linear, nearest (half to even, as nearbyint), bicubic/cubic
 * (A = -0.75); padding zeros, border, reflection; align_corners. The
 * arithmetic follows ONNX Runtime's CPU kernel step for step (coordinates
 * brought back inside for border and reflection before interpolating,
 * except in cubic mode, each pixel read padded again), so the fp32 results
 * agree with it (ORT 1.30, every mode and padding, tests/f64_ort.sh); a
 * float64 X and grid (kernels_f64.def) take the same steps in double, as
 * ORT's template does (kern_gs_body.h, once per type). */
#define GS_T float
#define GS_F(x) x##_f
#define GS_FLOOR floorf
#define GS_NEARBY nearbyintf
#define GS_FABS fabsf
#include "kern_gs_body.h"
#define GS_T double
#define GS_F(x) x##_d
#define GS_FLOOR floor
#define GS_NEARBY nearbyint
#define GS_FABS fabs
#include "kern_gs_body.h"

mpx_status mpx_k_grid_sample(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *grid;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d;
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (!st) st = kn_values_in(c, in, n_in, 1, "grid", f64, &grid);
    if (st) return st;
    if (x->rank != 4 || grid->rank != 4 || grid->dims[0] != x->dims[0] || grid->dims[3] != 2)
        return mpx_kernel_error(c, MPX_E_SHAPE, "X %s and grid %s: [N, C, H, W] and [N, Ho, Wo, 2] expected (2-D sampling)",
                                kn_shape(x, s1), kn_shape(grid, s2));
    const char *mode = mpx_node_attr_string(c->node, "mode", kn_opset(c) >= 20 ? "linear" : "bilinear");
    const char *pad = mpx_node_attr_string(c->node, "padding_mode", "zeros");
    int m = strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0 ? 1
            : strcmp(mode, "nearest") == 0                            ? 0
            : strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0 ? 2
                                                                      : -1;
    if (m < 0) return mpx_kernel_error(c, MPX_E_INVALID, "mode \"%s\" is not bilinear, nearest or bicubic", mode);
    int padm = strcmp(pad, "zeros") == 0 ? 0 : strcmp(pad, "border") == 0 ? 1 : strcmp(pad, "reflection") == 0 ? 2 : -1;
    if (padm < 0) return mpx_kernel_error(c, MPX_E_INVALID, "padding_mode \"%s\" is not zeros, border or reflection", pad);
    bool align = mpx_node_attr_int(c->node, "align_corners", 0) != 0;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Ho = grid->dims[1], Wo = grid->dims[2];
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, 4, (int64_t[]){N, C, Ho, Wo}))) return st;
    if (!H || !W) return MPX_OK; /* an empty image samples zeros */
    if (f64) gs_sample_d(m, padm, align, N, C, H, W, Ho, Wo, x->d, grid->d, out[0].d);
    else gs_sample_f(m, padm, align, N, C, H, W, Ho, Wo, x->f, grid->f, out[0].f);
    return MPX_OK;
}

/* AffineGrid: the sampling grid GridSample reads, theta applied to the
 * normalised coordinates of an output of `size`: x_i = -1 + 2 i / (W - 1)
 * with align_corners (0 when W is 1), (2 i + 1) / W - 1 without; each grid
 * point theta . (x, y[, z], 1), summed left to right (kern_gs_body.h:
 * in double for a float64 theta). */
mpx_status mpx_k_affine_grid(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *th, *sz = kn_opt(in, n_in, 1);
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d;
    if (!st) st = kn_values_in(c, in, n_in, 0, "theta", f64, &th);
    if (st) return st;
    if (!sz || !sz->i || (sz->n != 4 && sz->n != 5))
        return mpx_kernel_error(c, MPX_E_INVALID, "size must be 4 or 5 integers (N, C, [D,] H, W)");
    int nd = (int)sz->n - 2; /* spatial dims: 2 or 3 */
    int64_t N = sz->i[0], sp[3] = {1, 1, 1};
    for (int i = 0; i < nd; i++) sp[3 - nd + i] = sz->i[2 + i];
    if (th->rank != 3 || th->dims[0] != N || th->dims[1] != nd || th->dims[2] != nd + 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "theta %s must be [%lld, %d, %d]", kn_shape(th, s1), (long long)N, nd,
                                nd + 1);
    int64_t od[5], total = N;
    od[0] = N;
    for (int i = 0; i < nd; i++) {
        if (sz->i[2 + i] < 1 || sz->i[2 + i] > MPX_MAX_ELEMS)
            return mpx_kernel_error(c, MPX_E_SHAPE, "size[%d] = %lld", 2 + i, (long long)sz->i[2 + i]);
        od[1 + i] = sz->i[2 + i];
        total *= sz->i[2 + i];
        if (total > MPX_MAX_ELEMS) return mpx_kernel_error(c, MPX_E_LIMIT, "the grid would hold over 2^31 points");
    }
    od[1 + nd] = nd;
    bool align = mpx_node_attr_int(c->node, "align_corners", 0) != 0;
    if ((st = mpx_k_alloc(c, &out[0], th->dtype, nd + 2, od))) return st;
    if (f64) affine_grid_d(nd, N, sp, align, th->d, out[0].d);
    else affine_grid_f(nd, N, sp, align, th->f, out[0].f);
    return MPX_OK;
}
