/* kern_spectral.c - DFT, STFT and MelWeightMatrix (the audio front-ends of
 * speech models).
 *
 * The transforms are direct sums, X_k = sum_n x_n (cos t - i sin t) with
 * t = 2 pi (k n mod N) / N, in order of n, each twiddle computed in double
 * and rounded to fp32 once; the real and imaginary sums go through mpx_acc,
 * so they follow the node's accumulation format. A direct sum is O(N^2)
 * where an FFT is O(N log N): mpx computes every term's rounding the same way
 * for every N, and the frames of speech models are short (400 to 2048). The
 * inverse divides by N at the end. Signals shorter than dft_length are padded
 * with zeros, longer ones cut. MelWeightMatrix is ONNX's reference formula in
 * double (bin edges floored), rounded once to the output type. */
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One transform of length n over `len` complex (or real) input values at
 * stride `xs` (in complex elements; cplx: interleaved re, im), `bins` outputs
 * at stride `ys` (interleaved re, im). win: optional window (STFT). */
static void dft1(const mpx_kctx *c, const float *x, int64_t xs, bool cplx, int64_t len, const float *win, int64_t n,
                 bool inverse, int64_t bins, float *y, int64_t ys, const float *cs, const float *sn) {
    int64_t m = len < n ? len : n;
    for (int64_t k = 0; k < bins; k++) {
        mpx_acc re, im;
        mpx_acc_init(&re, &c->acc, 0.0f);
        mpx_acc_init(&im, &c->acc, 0.0f);
        for (int64_t j = 0; j < m; j++) {
            int64_t t = (k * j) % n;
            float cr = cs[t], si = inverse ? -sn[t] : sn[t];
            float xr = cplx ? x[j * xs * 2] : x[j * xs], xi = cplx ? x[j * xs * 2 + 1] : 0.0f;
            if (win) xr *= win[j], xi *= win[j];
            /* (xr + i xi)(cr - i si) */
            mpx_acc_add(&re, xr * cr + xi * si);
            mpx_acc_add(&im, xi * cr - xr * si);
        }
        float r = mpx_acc_result(&re), i = mpx_acc_result(&im);
        if (inverse) r /= (float)n, i /= (float)n;
        y[k * ys * 2] = r, y[k * ys * 2 + 1] = i;
    }
}

/* dft1 of float64 values (kernels_f64.def): the same sum in order of n with
 * the twiddles and sums in double, unrounded. */
static void dft1_d(const double *x, int64_t xs, bool cplx, int64_t len, const double *win, int64_t n, bool inverse,
                   int64_t bins, double *y, int64_t ys, const double *cs, const double *sn) {
    int64_t m = len < n ? len : n;
    for (int64_t k = 0; k < bins; k++) {
        double re = 0.0, im = 0.0;
        for (int64_t j = 0; j < m; j++) {
            int64_t t = (k * j) % n;
            double cr = cs[t], si = inverse ? -sn[t] : sn[t];
            double xr = cplx ? x[j * xs * 2] : x[j * xs], xi = cplx ? x[j * xs * 2 + 1] : 0.0;
            if (win) xr *= win[j], xi *= win[j];
            re += xr * cr + xi * si;
            im += xi * cr - xr * si;
        }
        if (inverse) re /= (double)n, im /= (double)n;
        y[k * ys * 2] = re, y[k * ys * 2 + 1] = im;
    }
}

/* cos and sin of 2 pi t / n for t < n, each rounded once from double (kept
 * as doubles for a float64 transform: cd, sd not NULL). */
static mpx_status twiddles(const mpx_kctx *c, int64_t n, float **cs, float **sn, double **cd, double **sd) {
    *cs = *sn = NULL;
    *cd = *sd = NULL;
    mpx_status st;
    if ((st = kn_scratch(c, (size_t)n, sizeof **cs, (void **)cs)) ||
        (st = kn_scratch(c, (size_t)n, sizeof **sn, (void **)sn)) ||
        (st = kn_scratch(c, (size_t)n, sizeof **cd, (void **)cd)) ||
        (st = kn_scratch(c, (size_t)n, sizeof **sd, (void **)sd))) {
        free(*cs), free(*sn), free(*cd);
        *cs = *sn = NULL;
        *cd = NULL;
        return st;
    }
    for (int64_t t = 0; t < n; t++) {
        double a = 2.0 * 3.14159265358979323846 * (double)t / (double)n;
        (*cd)[t] = cos(a), (*sd)[t] = sin(a);
        (*cs)[t] = (float)(*cd)[t], (*sn)[t] = (float)(*sd)[t];
    }
    return MPX_OK;
}

static mpx_status scalar_of(const mpx_kctx *c, const mpx_value *v, const char *what, int64_t *out) {
    if (!v || v->n != 1 || (!v->i && !v->f))
        return mpx_kernel_error(c, MPX_E_INVALID, "%s must be one integer", what);
    *out = v->i ? v->i[0] : (int64_t)v->f[0];
    return MPX_OK;
}

enum { MAX_DFT = 1 << 20 };

mpx_status mpx_k_dft(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *nl = kn_opt(in, n_in, 1), *axv = kn_opt(in, n_in, 2);
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d; /* float64 (kernels_f64.def): dft1_d */
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", f64, &x);
    if (st) return st;
    int r = x->rank;
    if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
        return mpx_kernel_error(c, MPX_E_SHAPE, "input %s: the last dim must be 1 (real) or 2 (complex)", kn_shape(x, s1));
    int64_t ax = kn_opset(c) >= 20 ? -2 : mpx_node_attr_int(c->node, "axis", 1);
    if (kn_opset(c) >= 20 && axv && (st = scalar_of(c, axv, "axis", &ax))) return st;
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r - 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "axis %lld is out of range for input %s (the last dim is the "
                                "real/imaginary pair)", (long long)ax, kn_shape(x, s1));
    int64_t len = x->dims[ax], n = len;
    if (nl && (st = scalar_of(c, nl, "dft_length", &n))) return st;
    bool inverse = mpx_node_attr_int(c->node, "inverse", 0) != 0, onesided = mpx_node_attr_int(c->node, "onesided", 0) != 0;
    if (n < 1 || n > MAX_DFT) return mpx_kernel_error(c, MPX_E_INVALID, "dft_length %lld is not in [1, 2^20]", (long long)n);
    if (inverse && onesided) return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "an inverse one-sided DFT is not supported");
    int64_t bins = onesided ? n / 2 + 1 : n, od[MPX_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    od[ax] = bins, od[r - 1] = 2;
    bool cplx = x->dims[r - 1] == 2;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= x->dims[i];
    for (int i = (int)ax + 1; i < r - 1; i++) inner *= x->dims[i];
    float *cs, *sn;
    double *cd, *sd;
    if ((st = twiddles(c, n, &cs, &sn, &cd, &sd))) return st;
    if (!(st = mpx_k_alloc(c, &out[0], x->dtype, r, od)))
        for (int64_t o = 0; o < outer && !mpx_k_cancelled(); o++) /* (the executor drops a cancelled kernel's values) */
            for (int64_t q = 0; q < inner; q++) {
                const int64_t xo = (o * len * inner + q) * (cplx ? 2 : 1), yo = (o * bins * inner + q) * 2;
                if (f64) dft1_d(x->d + xo, inner, cplx, len, NULL, n, inverse, bins, out[0].d + yo, inner, cd, sd);
                else dft1(c, x->f + xo, inner, cplx, len, NULL, n, inverse, bins, out[0].f + yo, inner, cs, sn);
            }
    free(cs), free(sn), free(cd), free(sd);
    return st;
}

mpx_status mpx_k_stft(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x, *win, *flv = kn_opt(in, n_in, 3);
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    const bool f64 = n_in > 0 && in[0] && in[0]->d; /* float64 (kernels_f64.def): dft1_d */
    if (!st) st = kn_values_in(c, in, n_in, 0, "signal", f64, &x);
    if (!st) st = kn_values_opt(c, in, n_in, 2, "window", f64, &win);
    if (st) return st;
    int64_t step = 0, fl = win ? win->n : -1;
    if ((st = scalar_of(c, kn_opt(in, n_in, 1), "frame_step", &step))) return st;
    if (flv && (st = scalar_of(c, flv, "frame_length", &fl))) return st;
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return mpx_kernel_error(c, MPX_E_SHAPE, "signal %s must be [batch, length, 1 or 2]", kn_shape(x, s1));
    if (fl < 1 || fl > MAX_DFT || step < 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "frame_length (%lld; or a window) and frame_step (%lld) must be "
                                "positive", (long long)fl, (long long)step);
    if (win && (win->rank != 1 || win->n != fl))
        return mpx_kernel_error(c, MPX_E_SHAPE, "window %s must hold frame_length = %lld values", kn_shape(win, s1),
                                (long long)fl);
    int64_t B = x->dims[0], L = x->dims[1];
    if (fl > L)
        return mpx_kernel_error(c, MPX_E_SHAPE, "frame_length %lld is longer than the signal (%lld)", (long long)fl,
                                (long long)L);
    bool cplx = x->dims[2] == 2, onesided = mpx_node_attr_int(c->node, "onesided", 1) != 0;
    int64_t frames = (L - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl, od[4] = {B, frames, bins, 2};
    float *cs, *sn;
    double *cd, *sd;
    if ((st = twiddles(c, fl, &cs, &sn, &cd, &sd))) return st;
    if (!(st = mpx_k_alloc(c, &out[0], x->dtype, 4, od)))
        for (int64_t b = 0; b < B; b++)
            for (int64_t f = 0; f < frames && !mpx_k_cancelled(); f++) {
                const int64_t xo = (b * L + f * step) * (cplx ? 2 : 1), yo = ((b * frames + f) * bins) * 2;
                if (f64) dft1_d(x->d + xo, 1, cplx, fl, win ? win->d : NULL, fl, false, bins, out[0].d + yo, 1, cd, sd);
                else dft1(c, x->f + xo, 1, cplx, fl, win ? win->f : NULL, fl, false, bins, out[0].f + yo, 1, cs, sn);
            }
    free(cs), free(sn), free(cd), free(sd);
    return st;
}

mpx_status mpx_k_mel_weight_matrix(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                   int n_out) {
    int64_t mel = 0, n = 0, rate = 0;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = scalar_of(c, kn_opt(in, n_in, 0), "num_mel_bins", &mel);
    if (!st) st = scalar_of(c, kn_opt(in, n_in, 1), "dft_length", &n);
    if (!st) st = scalar_of(c, kn_opt(in, n_in, 2), "sample_rate", &rate);
    if (st) return st;
    const mpx_value *lo = kn_opt(in, n_in, 3), *hi = kn_opt(in, n_in, 4);
    if (!lo || !hi || (!lo->f && !lo->d) || (!hi->f && !hi->d) || lo->n != 1 || hi->n != 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "lower_edge_hertz and upper_edge_hertz must be one float each");
    if (mel < 1 || mel > 65536 || n < 1 || n > MAX_DFT || rate < 1)
        return mpx_kernel_error(c, MPX_E_INVALID, "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be "
                                "positive (at most 65536 bins, 2^20 long)", (long long)mel, (long long)n,
                                (long long)rate);
    int64_t spec = n / 2 + 1, dims[2] = {spec, mel};
    int64_t dt = mpx_node_attr_int(c->node, "output_datatype", MPX_DT_FLOAT);
    if (!mpx_dtype_is_float((mpx_dtype)dt))
        return mpx_kernel_error(c, MPX_E_UNSUPPORTED, "output_datatype %lld: mpx makes float weights", (long long)dt);
    int64_t *edge;
    if ((st = kn_scratch(c, (size_t)(mel + 2), sizeof *edge, (void **)&edge))) return st;
    const double lo_hz = lo->d ? lo->d[0] : (double)lo->f[0], hi_hz = hi->d ? hi->d[0] : (double)hi->f[0];
    double lm = 2595.0 * log10(1.0 + lo_hz / 700.0), hm = 2595.0 * log10(1.0 + hi_hz / 700.0);
    double step = (hm - lm) / (double)(mel + 2);
    for (int64_t i = 0; i < mel + 2; i++) {
        double f = 700.0 * (pow(10.0, ((double)i * step + lm) / 2595.0) - 1.0);
        edge[i] = (int64_t)floor((double)(n + 1) * f / (double)rate);
    }
    for (int64_t i = 0; i < mel + 2; i++)
        if (edge[i] < 0 || edge[i] >= spec) {
            int64_t e = edge[i];
            free(edge);
            return mpx_kernel_error(c, MPX_E_INVALID, "mel edge %lld falls on spectrum bin %lld, outside [0, %lld): "
                                    "the edges exceed the sample rate's range", (long long)i, (long long)e,
                                    (long long)spec);
        }
    if (!(st = mpx_k_alloc(c, &out[0], (mpx_dtype)dt, 2, dims))) {
        /* float64 weights (kernels_f64.def) keep the double unrounded */
        double *yd = out[0].d;
        float *yf = out[0].f;
#define MEL_SET(at, w) (yd ? (void)(yd[at] = (w)) : (void)(yf[at] = (float)(w)))
        for (int64_t i = 0; i < mel; i++) {
            int64_t l = edge[i], m = edge[i + 1], h = edge[i + 2];
            if (m - l == 0) MEL_SET(m * mel + i, 1.0);
            else
                for (int64_t j = l; j <= m; j++) MEL_SET(j * mel + i, (double)(j - l) / (double)(m - l));
            if (h - m > 0)
                for (int64_t j = m; j < h; j++) MEL_SET(j * mel + i, (double)(h - j) / (double)(h - m));
        }
#undef MEL_SET
    }
    free(edge);
    return st;
}
