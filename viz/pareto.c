/* pareto.c - error against the share of MACs in the low format, one point
 * per plan (a sweep's values), with the Pareto front: the points no other
 * point beats on both axes (more MACs low and less error).
 *
 * The plot is written by hand as SVG with plot.c's axes, legend and label
 * placement (plot_svg.c): a scatter of a few dozen labelled points needs no
 * layout engine, and the text stays deterministic (compared in tests). */
#include "viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 760, H = 480, ML = 80, MR = 30, MT = 50, MB = 60 };

static const char *const series_colour[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
#define N_COLOUR (sizeof series_colour / sizeof series_colour[0])

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

/* The labels of the plans whose figures equal point i's (a threshold
 * between two nodes' sizes changes nothing): one point, all its labels. */
static char *labels_of(const mpx_viz_point *p, int n, int i) {
    vz_buf lab;
    vz_buf_init(&lab);
    vz_put(&lab, p[i].label ? p[i].label : "");
    for (int j = i + 1; j < n; j++)
        if (p[j].series == p[i].series && p[j].low_pct == p[i].low_pct && p[j].error == p[i].error) {
            vz_put(&lab, ", ");
            vz_put(&lab, p[j].label ? p[j].label : "");
        }
    return vz_buf_take(&lab);
}

mpx_status mpx_viz_pareto(const mpx_viz_point *p, int n, const char *const *series_names, int n_series,
                          const char *title, char **out, mpx_error *err) {
    *out = NULL;
    if (n < 1 || n_series < 1) return mpx_error_set(err, MPX_E_ARG, "pareto plot: no points");
    double vmin = INFINITY, vmax = -INFINITY;
    for (int i = 0; i < n; i++) {
        double e = p[i].error;
        if (e > 0 && isfinite(e)) {
            if (e < vmin) vmin = e;
            if (e > vmax) vmax = e;
        }
    }
    vz_axes A;
    vz_axes_frame(&A, ML, MT, W - MR, H - MB, true);
    A.xlo = 0;
    A.xhi = 100;
    vz_axes_range(&A, vmin, vmax, 2);

    /* where each distinct point sits; circles are what labels must not cover */
    const mpx_viz_point **front = malloc((size_t)n * sizeof *front);
    double *xy = malloc((size_t)n * 2 * sizeof *xy);
    char **labels = calloc((size_t)n, sizeof *labels);
    vz_key *keys = malloc((size_t)n_series * sizeof *keys);
    char (*marks)[96] = malloc((size_t)n_series * sizeof *marks);
    char (*names)[300] = malloc((size_t)n_series * sizeof *names);
    mpx_status st = MPX_OK;
    if (!front || !xy || !labels || !keys || !marks || !names) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int edge;
        xy[2 * i] = vz_axes_x(&A, p[i].low_pct);
        xy[2 * i + 1] = vz_axes_y(&A, p[i].error, &edge);
    }

    /* The legend inside the frame, in the corner that hides the fewest points. */
    for (int s = 0; s < n_series; s++) {
        snprintf(marks[s], sizeof marks[s], "<circle cx=\"11\" cy=\"0\" r=\"5\" fill=\"%s\"/>",
                 series_colour[(size_t)s % N_COLOUR]);
        snprintf(names[s], sizeof names[s], "%s (filled: Pareto front)", series_names[s] ? series_names[s] : "?");
        keys[s] = (vz_key){marks[s], names[s]};
    }
    vz_box lb = vz_legend(NULL, NULL, 0, 0, keys, n_series);
    double lw = lb.x1 - lb.x0, lh = lb.y1 - lb.y0, lx = A.x0 + 8, ly = A.y0 + 8;
    int fewest = -1;
    for (int c = 0; c < 4; c++) {
        double x = c & 1 ? A.x1 - 8 - lw : A.x0 + 8, y = c & 2 ? A.y1 - 8 - lh : A.y0 + 8;
        vz_box box = {x - 6, y - 6, x + lw + 6, y + lh + 6};
        int k = 0;
        for (int i = 0; i < n; i++)
            k += xy[2 * i] >= box.x0 && xy[2 * i] <= box.x1 && xy[2 * i + 1] >= box.y0 && xy[2 * i + 1] <= box.y1;
        if (fewest < 0 || k < fewest) fewest = k, lx = x, ly = y;
    }

    vz_buf b;
    vz_buf_init(&b);
    const char *heading = title ? title : "error against MACs in the low format";
    vz_svg_open(&b, W, H, heading);
    vz_svg_heading(&b, A.x0, heading);
    vz_axes_draw_y(&b, &A, "output rel_l2 (log scale)");
    vz_axes_draw_x(&b, &A, 10, "%", true, A.yb + 18, "MACs in the low format", H - 16);
    vz_axes_draw_frame(&b, &A);

    vz_labeler L;
    vz_labeler_init(&L, (vz_box){A.x0 + 2, A.y0 + 2, A.x1 - 2, A.yb - 2}, NULL, 0);
    for (int i = 0; i < n; i++)
        if (!same_as_earlier(p, i)) vz_labeler_block(&L, (vz_box){xy[2 * i] - 6, xy[2 * i + 1] - 6, xy[2 * i] + 6, xy[2 * i + 1] + 6});
    vz_labeler_block(&L, vz_legend(NULL, NULL, lx, ly, keys, n_series));

    for (int s = 0; s < n_series; s++) {
        const char *col = series_colour[(size_t)s % N_COLOUR];
        int nf = 0;
        for (int i = 0; i < n; i++)
            if (p[i].series == s && on_front(p, n, i) && !same_as_earlier(p, i)) front[nf++] = &p[i];
        qsort(front, (size_t)nf, sizeof *front, by_pct);
        if (nf > 1) {
            vz_printf(&b, "<polyline class=\"front\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                          "stroke-dasharray=\"5,3\" points=\"", col);
            for (int i = 0; i < nf; i++) {
                int edge;
                vz_printf(&b, "%s%.1f,%.1f", i ? " " : "", vz_axes_x(&A, front[i]->low_pct),
                          vz_axes_y(&A, front[i]->error, &edge));
            }
            vz_put(&b, "\"/>\n");
        }
        for (int i = 0; i < n; i++) {
            if (p[i].series != s || same_as_earlier(p, i)) continue;
            bool fr = on_front(p, n, i);
            labels[i] = labels_of(p, n, i);
            vz_printf(&b, "<g class=\"point%s\"><title>", fr ? " on-front" : "");
            vz_put_xml(&b, labels[i] ? labels[i] : p[i].label);
            char e[32];
            vz_printf(&b, ": %.1f%% of MACs low, rel_l2 %s</title>", p[i].low_pct, vz_fig(p[i].error, e, sizeof e));
            vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" stroke=\"#222\" stroke-width=\"%s\"/></g>\n",
                      xy[2 * i], xy[2 * i + 1], fr ? 5 : 4, fr ? col : "white", fr ? "1" : "1.5");
        }
    }
    /* Labels after every point is known: the front's first (what a reader
     * picks from), each where it covers no point, label or the legend. */
    vz_put(&b, "<g id=\"pareto-labels\" fill=\"#212121\">\n");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (same_as_earlier(p, i) || on_front(p, n, i) != (pass == 0)) continue;
            const char *text = labels[i] ? labels[i] : p[i].label ? p[i].label : "";
            vz_label lab;
            if (vz_labeler_place(&L, xy[2 * i], xy[2 * i + 1], 5, text, 11, &lab))
                vz_label_draw(&b, &lab, xy[2 * i], xy[2 * i + 1], text, 11, "#212121");
        }
    vz_put(&b, "</g>\n");
    vz_legend(&b, NULL, lx, ly, keys, n_series);
    vz_put(&b, "</svg>\n");
    vz_labeler_free(&L);
    *out = vz_buf_take(&b);
    if (!*out) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
done:
    for (int i = 0; labels && i < n; i++) free(labels[i]);
    free(labels);
    free(front);
    free(xy);
    free(keys);
    free(marks);
    free(names);
    return st;
}
