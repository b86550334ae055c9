/* kern_roi_body.h - RoiAlign's sampling and MaxRoiPool's bins, included by kern_detect.c once
 * with RA_T float (the fp32 kernel) and once with RA_T double (the float64
 * one, kernels_f64.def), so both types take ONNX Runtime's steps (its CPU
 * kernel is one template over the element type). RA_F(name) names this
 * inclusion's functions; RA_FMAX, RA_ROUND, RA_FLOOR, RA_CEIL are fmax,
 * round, floor, ceil of RA_T and RA_MAX its largest finite value; the body
 * undefines them at its end, so the next inclusion defines them afresh.
 * Not a header of its own: no include guard on purpose. */

typedef struct RA_F(sample) {
    int64_t pos[4];
    RA_T w[4];
} RA_F(sample);

/* Every roi of mpx_k_roi_align into y; -1, or the roi whose sampling grid
 * is too large (its size in *bad_h x *bad_w). */
static int64_t RA_F(roi_align_rois)(const RA_T *x, const RA_T *rois, const int64_t *bi, int64_t R, int64_t C,
                                   int64_t H, int64_t W, int64_t oh, int64_t ow, int64_t sr, RA_T scale, bool avg,
                                   bool half, RA_T *out, double *bad_h, double *bad_w) {
    const RA_T off = half ? (RA_T)0.5 : (RA_T)0;
    for (int64_t r = 0; r < R; r++) {
        const RA_T *b = rois + r * 4;
        RA_T x0 = b[0] * scale - off, y0 = b[1] * scale - off, x1 = b[2] * scale - off, y1 = b[3] * scale - off;
        RA_T rw = x1 - x0, rh = y1 - y0;
        if (!half) rw = RA_FMAX(rw, (RA_T)1), rh = RA_FMAX(rh, (RA_T)1);
        RA_T bh = rh / (RA_T)oh, bw = rw / (RA_T)ow;
        double gh_d = sr > 0 ? (double)sr : ceil((double)(rh / (RA_T)oh)), gw_d = sr > 0 ? (double)sr : ceil((double)(rw / (RA_T)ow));
        /* a box far larger than the image would sample without end: refused */
        if (!(gh_d >= 0 && gw_d >= 0) || gh_d * gw_d > 1e6) {
            *bad_h = gh_d, *bad_w = gw_d;
            return r;
        }
        int64_t gh = (int64_t)gh_d, gw = (int64_t)gw_d, count = gh * gw > 1 ? gh * gw : 1;
        const RA_T *img = x + bi[r] * C * H * W;
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++) {
                for (int64_t ch = 0; ch < C; ch++) {
                    const RA_T *p = img + ch * H * W;
                    RA_T v = 0;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        RA_T yy = y0 + (RA_T)ph * bh + ((RA_T)iy + (RA_T)0.5) * bh / (RA_T)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            RA_T xx = x0 + (RA_T)pw * bw + ((RA_T)ix + (RA_T)0.5) * bw / (RA_T)gw;
                            RA_F(sample) sm = {{0, 0, 0, 0}, {0, 0, 0, 0}};
                            RA_T y = yy, xq = xx;
                            if (!(y < (RA_T)-1 || y > (RA_T)H || xq < (RA_T)-1 || xq > (RA_T)W)) {
                                if (y <= 0) y = 0;
                                if (xq <= 0) xq = 0;
                                int64_t yl = (int64_t)y, xl = (int64_t)xq, yh, xh;
                                if (yl >= H - 1) yh = yl = H - 1, y = (RA_T)yl;
                                else yh = yl + 1;
                                if (xl >= W - 1) xh = xl = W - 1, xq = (RA_T)xl;
                                else xh = xl + 1;
                                RA_T ly = y - (RA_T)yl, lx = xq - (RA_T)xl, hy = (RA_T)1 - ly, hx = (RA_T)1 - lx;
                                sm.w[0] = hy * hx, sm.w[1] = hy * lx, sm.w[2] = ly * hx, sm.w[3] = ly * lx;
                                sm.pos[0] = yl * W + xl, sm.pos[1] = yl * W + xh, sm.pos[2] = yh * W + xl,
                                sm.pos[3] = yh * W + xh;
                            }
                            if (avg) {
                                v += sm.w[0] * p[sm.pos[0]] + sm.w[1] * p[sm.pos[1]] + sm.w[2] * p[sm.pos[2]] +
                                     sm.w[3] * p[sm.pos[3]];
                            } else {
                                RA_T m = RA_FMAX(RA_FMAX(RA_FMAX(sm.w[0] * p[sm.pos[0]], sm.w[1] * p[sm.pos[1]]),
                                                      sm.w[2] * p[sm.pos[2]]),
                                                sm.w[3] * p[sm.pos[3]]);
                                v = first ? m : RA_FMAX(v, m);
                                first = false;
                            }
                        }
                    }
                    out[((r * C + ch) * oh + ph) * ow + pw] = avg ? v / (RA_T)count : v;
                }
            }
    }
    return -1;
}

/* Every roi of mpx_k_max_roi_pool into out (batch indices checked). */
static void RA_F(max_roi_pool_rois)(const RA_T *x, const RA_T *rois, int64_t R, int64_t C, int64_t H, int64_t W,
                                    int64_t PH, int64_t PW, RA_T scale, RA_T *out) {
    for (int64_t r = 0; r < R; r++) {
        const RA_T *ro = rois + r * 5;
        int64_t b = (int64_t)ro[0];
        int64_t x1 = (int64_t)RA_ROUND(ro[1] * scale), y1 = (int64_t)RA_ROUND(ro[2] * scale);
        int64_t x2 = (int64_t)RA_ROUND(ro[3] * scale), y2 = (int64_t)RA_ROUND(ro[4] * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        RA_T bh = (RA_T)rh / (RA_T)PH, bw = (RA_T)rw / (RA_T)PW;
        for (int64_t ch = 0; ch < C; ch++) {
            const RA_T *img = x + (b * C + ch) * H * W;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)RA_FLOOR((RA_T)ph * bh) + y1, he = (int64_t)RA_CEIL((RA_T)(ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)RA_FLOOR((RA_T)pw * bw) + x1, we = (int64_t)RA_CEIL((RA_T)(pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : hs > H ? H : hs, he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws, we = we < 0 ? 0 : we > W ? W : we;
                    RA_T m = he <= hs || we <= ws ? (RA_T)0 : -RA_MAX;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++)
                            if (img[h * W + w] > m) m = img[h * W + w];
                    out[((r * C + ch) * PH + ph) * PW + pw] = m;
                }
        }
    }
}

#undef RA_T
#undef RA_F
#undef RA_FMAX
#undef RA_ROUND
#undef RA_FLOOR
#undef RA_CEIL
#undef RA_MAX
