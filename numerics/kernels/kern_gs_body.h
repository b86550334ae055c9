/* kern_gs_body.h - GridSample's and AffineGrid's arithmetic, included by
 * kern_resize.c once with GS_T float (the fp32 kernels) and once with GS_T
 * double (the float64 ones, kernels_f64.def), so both types walk the same
 * steps: ONNX Runtime's CPU kernels are one template over the element type.
 * GS_F(name) names this inclusion's functions; GS_FLOOR, GS_NEARBY and
 * GS_FABS are floor, nearbyint and fabs of GS_T; the body undefines them
 * at its end, so the next inclusion defines them afresh. Not a header of
 * its own: no include guard on purpose. */

typedef struct GS_F(gs) {
    int64_t H, W;
    int pad; /* 0 zeros, 1 border, 2 reflection */
    GS_T xmin, ymin, xmax, ymax;
} GS_F(gs);

static GS_T GS_F(gs_reflect)(GS_T x, GS_T lo, GS_T hi) {
    GS_T range = hi - lo;
    if (x < lo) {
        GS_T dx = lo - x;
        int n = (int)(dx / range);
        GS_T r = dx - (GS_T)n * range;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        GS_T dx = x - hi;
        int n = (int)(dx / range);
        GS_T r = dx - (GS_T)n * range;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

static GS_T GS_F(gs_pixel)(const GS_F(gs) *g, const GS_T *img, int64_t r, int64_t c) {
    if (g->pad == 0) return c >= 0 && c < g->W && r >= 0 && r < g->H ? img[r * g->W + c] : (GS_T)0;
    if (g->pad == 1) {
        c = c < 0 ? 0 : c >= g->W ? g->W - 1 : c;
        r = r < 0 ? 0 : r >= g->H ? g->H - 1 : r;
    } else {
        c = (int64_t)GS_F(gs_reflect)((GS_T)c, g->xmin, g->xmax);
        r = (int64_t)GS_F(gs_reflect)((GS_T)r, g->ymin, g->ymax);
        c = c < 0 ? 0 : c >= g->W ? g->W - 1 : c; /* reflected within [-0.5, W-0.5]: truncation stays inside */
        r = r < 0 ? 0 : r >= g->H ? g->H - 1 : r;
    }
    return img[r * g->W + c];
}

static void GS_F(gs_cubic_coeffs)(GS_T x, GS_T k[4]) {
    const GS_T A = (GS_T)-0.75;
    x = GS_FABS(x);
    k[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    k[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    k[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    k[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

/* The sampling of mpx_k_grid_sample (m: 0 nearest, 1 linear, 2 cubic). */
static void GS_F(gs_sample)(int m, int pad, bool align, int64_t N, int64_t C, int64_t H, int64_t W, int64_t Ho,
                            int64_t Wo, const GS_T *xv, const GS_T *grid, GS_T *out) {
    GS_F(gs) g = {.H = H, .W = W, .pad = pad};
    g.xmin = align ? (GS_T)0 : (GS_T)-0.5, g.ymin = g.xmin;
    g.xmax = align ? (GS_T)(g.W - 1) : (GS_T)g.W - (GS_T)0.5, g.ymax = align ? (GS_T)(g.H - 1) : (GS_T)g.H - (GS_T)0.5;
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < Ho * Wo; q++) {
            GS_T gx = grid[(n * Ho * Wo + q) * 2], gy = grid[(n * Ho * Wo + q) * 2 + 1];
            GS_T px = align ? (gx + 1) / 2 * (GS_T)(g.W - 1) : ((gx + 1) * (GS_T)g.W - 1) / 2;
            GS_T py = align ? (gy + 1) / 2 * (GS_T)(g.H - 1) : ((gy + 1) * (GS_T)g.H - 1) / 2;
            if (m == 0) px = GS_NEARBY(px), py = GS_NEARBY(py);
            /* cubic pads each of its 16 pixels only (ORT 1.30: clamping
             * its coordinates first moved border results by 5%) */
            if (m != 2 && (px < g.xmin || px > g.xmax || py < g.ymin || py > g.ymax)) {
                if (g.pad == 1) {
                    px = px < 0 ? 0 : px > (GS_T)(g.W - 1) ? (GS_T)(g.W - 1) : px;
                    py = py < 0 ? 0 : py > (GS_T)(g.H - 1) ? (GS_T)(g.H - 1) : py;
                } else if (g.pad == 2) {
                    px = GS_F(gs_reflect)(px, g.xmin, g.xmax);
                    py = GS_F(gs_reflect)(py, g.ymin, g.ymax);
                }
            }
            for (int64_t ch = 0; ch < C; ch++) {
                const GS_T *img = xv + (n * C + ch) * g.H * g.W;
                GS_T v;
                if (m == 0) {
                    v = GS_F(gs_pixel)(&g, img, (int64_t)py, (int64_t)px);
                } else if (m == 1) {
                    int64_t x1 = (int64_t)GS_FLOOR(px), y1 = (int64_t)GS_FLOOR(py), x2 = x1 + 1, y2 = y1 + 1;
                    GS_T p11 = GS_F(gs_pixel)(&g, img, y1, x1), p12 = GS_F(gs_pixel)(&g, img, y1, x2);
                    GS_T p21 = GS_F(gs_pixel)(&g, img, y2, x1), p22 = GS_F(gs_pixel)(&g, img, y2, x2);
                    GS_T dx2 = (GS_T)x2 - px, dx1 = px - (GS_T)x1, dy2 = (GS_T)y2 - py, dy1 = py - (GS_T)y1;
                    v = dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22);
                } else {
                    int64_t x0 = (int64_t)GS_FLOOR(px) - 1, y0 = (int64_t)GS_FLOOR(py) - 1;
                    GS_T k[4], row[4];
                    GS_F(gs_cubic_coeffs)(px - (GS_T)x0 - 1, k);
                    for (int64_t h = 0; h < 4; h++) {
                        GS_T p0 = GS_F(gs_pixel)(&g, img, y0 + h, x0), p1 = GS_F(gs_pixel)(&g, img, y0 + h, x0 + 1);
                        GS_T p2 = GS_F(gs_pixel)(&g, img, y0 + h, x0 + 2), p3 = GS_F(gs_pixel)(&g, img, y0 + h, x0 + 3);
                        row[h] = k[0] * p0 + k[1] * p1 + k[2] * p2 + k[3] * p3;
                    }
                    GS_F(gs_cubic_coeffs)(py - (GS_T)y0 - 1, k);
                    v = k[0] * row[0] + k[1] * row[1] + k[2] * row[2] + k[3] * row[3];
                }
                out[(n * C + ch) * Ho * Wo + q] = v;
            }
        }
}

/* The grid of mpx_k_affine_grid: nd spatial dims sp (outermost first, 1
 * where absent), theta [N, nd, nd + 1]. */
static void GS_F(affine_grid)(int nd, int64_t N, const int64_t sp[3], bool align, const GS_T *theta, GS_T *y) {
    for (int64_t n = 0; n < N; n++) {
        const GS_T *t = theta + n * nd * (nd + 1);
        for (int64_t zd = 0; zd < sp[0]; zd++)
            for (int64_t yh = 0; yh < sp[1]; yh++)
                for (int64_t xw = 0; xw < sp[2]; xw++) {
                    int64_t idx[3] = {zd, yh, xw};
                    GS_T base[4];
                    /* x first: (x, y[, z], 1) */
                    for (int i = 0; i < nd; i++) {
                        int64_t len = sp[2 - i], at = idx[2 - i];
                        base[i] = align ? (len == 1 ? (GS_T)0 : (GS_T)-1 + (GS_T)2 * (GS_T)at / (GS_T)(len - 1))
                                        : ((GS_T)2 * (GS_T)at + (GS_T)1) / (GS_T)len - (GS_T)1;
                    }
                    base[nd] = 1;
                    for (int r = 0; r < nd; r++) {
                        GS_T v = 0;
                        for (int k = 0; k <= nd; k++) v += t[r * (nd + 1) + k] * base[k];
                        *y++ = v;
                    }
                }
    }
}

#undef GS_T
#undef GS_F
#undef GS_FLOOR
#undef GS_NEARBY
#undef GS_FABS
