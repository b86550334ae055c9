/* pareto.c - error against the share of MACs in the low format, one point
 * per plan (a sweep's values), with the Pareto front: the points no other
 * point beats on both axes (more MACs low and less error).
 *
 * The plot is written by hand as SVG, like plot.c: a scatter of a few dozen
 * labelled points needs no layout engine, and the text stays deterministic
 * (compared in tests). */
#include "viz_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 760, H = 480, ML = 80, MR = 30, MT = 50, MB = 60 };

static const char *const series_colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

typedef struct frame {
    double lo, hi; /* log10 of the error axis */
} frame;

static double fx(double pct) { return ML + (W - ML - MR) * (pct < 0 ? 0 : pct > 100 ? 100 : pct) / 100.0; }

/* Errors of 0 (a plan all in fp32 is exact) sit on the bottom edge. */
static double fy(const frame *f, double e) {
    double l = e > 0 && isfinite(e) ? log10(e) : e > 0 ? f->hi : f->lo;
    if (l < f->lo) l = f->lo;
    if (l > f->hi) l = f->hi;
    return MT + (H - MT - MB) * (f->hi - l) / (f->hi - f->lo);
}

/* Whether point i is on its series' front: no point of the series has at
 * least as many MACs low and at most its error, one of them strictly. */
static bool on_front(const mpx_viz_point *p, int n, int i) {
    for (int j = 0; j < n; j++) {
        if (j == i || p[j].series != p[i].series) continue;
        bool ge = p[j].low_pct >= p[i].low_pct, le = p[j].error <= p[i].error;
        if (ge && le && (p[j].low_pct > p[i].low_pct || p[j].error < p[i].error)) return false;
    }
    return !isnan(p[i].error);
}

static bool same_as_earlier(const mpx_viz_point *p, int i) {
    for (int j = 0; j < i; j++)
        if (p[j].series == p[i].series && p[j].low_pct == p[i].low_pct && p[j].error == p[i].error) return true;
    return false;
}

static int by_pct(const void *a, const void *b) {
    const mpx_viz_point *x = *(const mpx_viz_point *const *)a, *y = *(const mpx_viz_point *const *)b;
    return x->low_pct < y->low_pct ? -1 : x->low_pct > y->low_pct;
}

mpx_status mpx_viz_pareto(const mpx_viz_point *p, int n, const char *const *series_names, int n_series,
                          const char *title, char **out, mpx_error *err) {
    if (n < 1 || n_series < 1) return mpx_error_set(err, MPX_E_ARG, "pareto plot: no points");
    frame f = {INFINITY, -INFINITY};
    for (int i = 0; i < n; i++) {
        double e = p[i].error;
        if (e > 0 && isfinite(e)) {
            if (log10(e) < f.lo) f.lo = log10(e);
            if (log10(e) > f.hi) f.hi = log10(e);
        }
    }
    if (!isfinite(f.lo)) f.lo = -6, f.hi = 0;
    f.lo = floor(f.lo) - (f.lo == floor(f.lo) ? 1 : 0);
    f.hi = ceil(f.hi) + (f.hi == ceil(f.hi) ? 1 : 0);
    if (f.hi - f.lo < 2) f.lo = f.hi - 2;
    vz_buf b;
    vz_buf_init(&b);
    vz_printf(&b,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
              "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
              W, H, W, H, W, H);
    vz_put(&b, "<text x=\"380\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">");
    vz_put_xml(&b, title ? title : "error against MACs in the low format");
    vz_put(&b, "</text>\n");
    /* Axes: decades of error, tens of per cent. */
    for (int d = (int)f.lo; d <= (int)f.hi; d++) {
        double y = fy(&f, pow(10, d));
        vz_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", ML, y, W - MR, y);
        vz_printf(&b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n", ML - 6, y + 4, d);
    }
    for (int pc = 0; pc <= 100; pc += 10) {
        double x = fx(pc);
        vz_printf(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>", x, MT, x, H - MB);
        vz_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d%%</text>\n", x, H - MB + 18, pc);
    }
    vz_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", ML, MT,
              W - ML - MR, H - MT - MB);
    vz_printf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">MACs in the low format</text>\n", (ML + W - MR) / 2,
              H - 16);
    vz_printf(&b, "<text transform=\"translate(18 %d) rotate(-90)\" text-anchor=\"middle\">output rel_l2 (log)</text>\n",
              (MT + H - MB) / 2);
    const mpx_viz_point **front = malloc((size_t)n * sizeof *front);
    if (!front) {
        vz_buf_free(&b);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int s = 0; s < n_series; s++) {
        const char *col = series_colour[s % (int)(sizeof series_colour / sizeof *series_colour)];
        int nf = 0;
        for (int i = 0; i < n; i++)
            if (p[i].series == s && on_front(p, n, i) && !same_as_earlier(p, i)) front[nf++] = &p[i];
        qsort(front, (size_t)nf, sizeof *front, by_pct);
        if (nf > 1) {
            vz_printf(&b, "<polyline class=\"front\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                          "stroke-dasharray=\"5,3\" points=\"", col);
            for (int i = 0; i < nf; i++) vz_printf(&b, "%s%.1f,%.1f", i ? " " : "", fx(front[i]->low_pct), fy(&f, front[i]->error));
            vz_put(&b, "\"/>\n");
        }
        for (int i = 0; i < n; i++) {
            if (p[i].series != s || same_as_earlier(p, i)) continue;
            bool fr = on_front(p, n, i);
            double x = fx(p[i].low_pct), y = fy(&f, p[i].error);
            /* Plans with the same figures (a threshold between two nodes'
             * sizes changes nothing) are one point with all their labels. */
            vz_buf lab;
            vz_buf_init(&lab);
            vz_put(&lab, p[i].label);
            for (int j = i + 1; j < n; j++)
                if (p[j].series == s && p[j].low_pct == p[i].low_pct && p[j].error == p[i].error) {
                    vz_put(&lab, ", ");
                    vz_put(&lab, p[j].label);
                }
            char *label = vz_buf_take(&lab);
            vz_printf(&b, "<g class=\"point%s\"><title>", fr ? " on-front" : "");
            vz_put_xml(&b, label ? label : p[i].label);
            char e[32];
            vz_printf(&b, ": %.1f%% of MACs low, rel_l2 %s</title>", p[i].low_pct, vz_fig(p[i].error, e, sizeof e));
            vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" stroke=\"#222\" stroke-width=\"%s\"/>",
                      x, y, fr ? 5 : 4, fr ? col : "white", fr ? "1" : "1.5");
            /* The label beside its own point, on its line (left of it near
             * the right edge): never nearer to another point than to its own. */
            bool left = x > W - MR - 120;
            vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"11\">", left ? x - 9 : x + 9,
                      y + 4, left ? "end" : "start");
            vz_put_xml(&b, label ? label : p[i].label);
            free(label);
            vz_put(&b, "</text></g>\n");
        }
        vz_printf(&b, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">", ML + 12,
                  MT + 16 + 18 * s, col, ML + 22, MT + 20 + 18 * s);
        vz_put_xml(&b, series_names[s]);
        vz_put(&b, " (filled: Pareto front)</text>\n");
    }
    free(front);
    vz_put(&b, "</svg>\n");
    char *text = vz_buf_take(&b);
    if (!text) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    *out = text;
    return MPX_OK;
}
