/* plot.c - per-layer error along the graph's topological order, as SVG
 * written here (no plotting library, no Python at run time).
 *
 * x: the position of a layer's node among the nodes that have compared
 * layers (Constant and integer-only nodes have none, so they leave no gaps);
 * y: the metric, on a log scale (sqnr_db: linear). A value of 0 (exact) sits
 * on the bottom edge as a hollow mark, an infinite one (overflow) on the top
 * edge, so neither disappears from a log axis. Red nodes are light bands
 * behind the lines, runtime casts triangles on the x axis, overflowing
 * layers crosses; the three worst layers are named. Every point carries a
 * <title> (node, op, value) that a browser shows on hover. */
#include "viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const palette[] = {"#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#5d4037"};
#define N_PALETTE (sizeof palette / sizeof palette[0])

void mpx_viz_plot_opts_default(mpx_viz_plot_opts *o) {
    memset(o, 0, sizeof *o);
    o->metric = MPX_METRIC_rel_l2;
}

typedef struct plot {
    double x0, x1, y0, y1; /* plot area in pixels (y1: the bottom of the value range) */
    double yz, yb;         /* the lane of zeros (log scale) and the frame's bottom */
    int n_pos;             /* x positions */
    bool logy;
    double lo, hi;         /* y range (log10 of it when logy) */
} plot;

static double px(const plot *p, double pos) {
    return p->n_pos <= 1 ? (p->x0 + p->x1) / 2 : p->x0 + (p->x1 - p->x0) * pos / (p->n_pos - 1);
}

/* The y pixel of value v; *edge: -1 clamped to the bottom (zero or below),
 * +1 to the top (infinite/NaN or above). */
static double py(const plot *p, double v, int *edge) {
    *edge = 0;
    double y;
    if (isnan(v) || (isinf(v) && v > 0)) {
        *edge = 1;
        return p->y0;
    }
    if (p->logy) {
        if (v <= 0) {
            *edge = -1;
            return p->yz;
        }
        y = log10(v);
    } else {
        if (isinf(v)) {
            *edge = -1;
            return p->y1;
        }
        y = v;
    }
    if (y < p->lo) {
        *edge = -1;
        return p->logy ? p->yz : p->y1;
    }
    if (y > p->hi) {
        *edge = 1;
        return p->y0;
    }
    return p->y1 - (p->y1 - p->y0) * (y - p->lo) / (p->hi - p->lo);
}

static double layer_value(const mpx_layer *l, const mpx_viz_plot_opts *o) {
    const mpx_metrics *m = o->local && l->has_local ? &l->local : &l->m;
    return vz_metric(m, o->metric);
}

typedef struct worst {
    int series, layer;
    double v;
} worst;

/* Larger is worse, except sqnr_db where smaller is. NaN/inf count as worst. */
static double badness(double v, mpx_viz_metric m) {
    if (isnan(v)) return INFINITY;
    return m == MPX_METRIC_sqnr_db ? -v : v; /* cos is plotted as 1 - cos */
}

mpx_status mpx_viz_plot(const mpx_viz_series *series, int n, const mpx_viz_plot_opts *opts, char **out,
                        mpx_error *err) {
    *out = NULL;
    mpx_viz_plot_opts dflt;
    mpx_viz_plot_opts_default(&dflt);
    const mpx_viz_plot_opts *o = opts ? opts : &dflt;
    if (n < 1 || !series || !series[0].cmp) return mpx_error_set(err, MPX_E_ARG, "nothing to plot: no run yet");
    if ((int)o->metric < 0 || o->metric >= MPX_METRIC_COUNT)
        return mpx_error_set(err, MPX_E_ARG, "unknown metric");
    const mpx_graph *g = series[0].cmp->g;
    for (int s = 1; s < n; s++)
        if (!series[s].cmp || series[s].cmp->g != g)
            return mpx_error_set(err, MPX_E_ARG, "plot: run \"%s\" belongs to another model",
                                 series[s].label ? series[s].label : "?");
    if (o->marks && o->marks->g != g)
        return mpx_error_set(err, MPX_E_ARG, "plot: the plan to mark belongs to another model");

    /* x positions: nodes that have a layer in some series, in node order. */
    int *pos = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *pos);
    if (!pos) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) pos[i] = -1;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < series[s].cmp->n_layers; k++) {
            int nd = series[s].cmp->layers[k].node;
            if (nd >= 0 && nd < g->n_nodes) pos[nd] = 0;
        }
    int n_pos = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (pos[i] == 0) pos[i] = n_pos++;
    if (n_pos == 0) {
        free(pos);
        return mpx_error_set(err, MPX_E_ARG, "nothing to plot: the run compared no float tensors");
    }

    /* y range over finite (and, on a log scale, positive) values */
    bool logy = o->metric != MPX_METRIC_sqnr_db;
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < series[s].cmp->n_layers; k++) {
            double v = layer_value(&series[s].cmp->layers[k], o);
            if (!isfinite(v) || (logy && v <= 0)) continue;
            double y = logy ? log10(v) : v;
            if (y < lo) lo = y;
            if (y > hi) hi = y;
        }
    if (!(lo <= hi)) lo = logy ? -8 : 0, hi = logy ? 0 : 100;
    if (logy) {
        lo = floor(lo);
        hi = ceil(hi);
        if (hi - lo < 1) hi = lo + 1;
    } else {
        double pad = (hi - lo) * 0.05 + 1;
        lo = floor((lo - pad) / 10) * 10;
        hi = ceil((hi + pad) / 10) * 10;
    }

    int W = o->width > 0 ? o->width : 1100, H = o->height > 0 ? o->height : 440;
    /* A log axis gets a lane below its range for exact (zero) values. */
    double yb = (double)H - 62;
    plot P = {78, (double)W - 190, 44, logy ? yb - 22 : yb, logy ? yb - 8 : yb, yb, n_pos, logy, lo, hi};
    const char *mname = mpx_metric_info_of(o->metric)->name;
    char ylab[96];
    snprintf(ylab, sizeof ylab, "%s%s%s", o->metric == MPX_METRIC_cos ? "1 - cos" : mname, o->local ? " (local)" : "",
             logy ? " (log scale)" : " (dB)");

    vz_buf b;
    vz_buf_init(&b);
    vz_printf(&b,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
              "font-family=\"Helvetica,Arial,sans-serif\" font-size=\"12\">\n",
              W, H, W, H);
    vz_put(&b, "<title>");
    if (o->title) vz_put_xml(&b, o->title);
    else vz_printf(&b, "%s per layer", mname);
    vz_put(&b, "</title>\n");
    vz_printf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    /* title */
    vz_printf(&b, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", P.x0);
    if (o->title) vz_put_xml(&b, o->title);
    else {
        vz_printf(&b, "%s%s per layer, ", mname, o->local ? " (local)" : "");
        const char *base = g->path ? strrchr(g->path, '/') : NULL;
        base = base ? base + 1 : g->path;
        vz_put_xml(&b, base && *base ? base : g->name && *g->name ? g->name : "model");
    }
    vz_put(&b, "</text>\n");

    double step = n_pos > 1 ? (P.x1 - P.x0) / (n_pos - 1) : 10;
    double band = step < 2 ? 2 : step;
    /* red nodes: bands behind everything */
    if (o->marks) {
        vz_put(&b, "<g id=\"plot-red-nodes\" fill=\"#ef9a9a\" fill-opacity=\"0.45\">\n");
        for (int i = 0; i < g->n_nodes; i++) {
            if (pos[i] < 0 || o->marks->nodes[i].colour != MPX_COLOUR_RED || !o->marks->nodes[i].is_float) continue;
            vz_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>red: ",
                      px(&P, pos[i]) - band / 2, P.y0, band, P.yb - P.y0);
            vz_put_xml(&b, g->nodes[i]->op_type);
            vz_put(&b, " ");
            vz_put_xml(&b, g->nodes[i]->name);
            vz_put(&b, "</title></rect>\n");
        }
        vz_put(&b, "</g>\n");
    }
    /* grid and y ticks */
    vz_put(&b, "<g id=\"plot-axes\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    int ticks = 0;
    double tstep = logy ? 1 : 10;
    if (!logy) {
        while ((hi - lo) / tstep > 10) tstep *= 2;
    } else {
        while ((hi - lo) / tstep > 10) tstep += 1;
    }
    for (double y = lo; y <= hi + 1e-9 && ticks < 40; y += tstep, ticks++) {
        int edge;
        double yy = py(&P, logy ? pow(10, y) : y, &edge);
        vz_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", P.x0, yy, P.x1, yy);
    }
    vz_put(&b, "</g>\n<g id=\"plot-ticks\" font-size=\"11\" text-anchor=\"end\" fill=\"#424242\">\n");
    ticks = 0;
    for (double y = lo; y <= hi + 1e-9 && ticks < 40; y += tstep, ticks++) {
        int edge;
        double yy = py(&P, logy ? pow(10, y) : y, &edge);
        if (logy) vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">1e%d</text>\n", P.x0 - 6, yy + 4, (int)lround(y));
        else vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%g</text>\n", P.x0 - 6, yy + 4, y);
    }
    /* x ticks: about 10 */
    int xstep = 1;
    while (n_pos / xstep > 10) xstep = xstep < 5 ? xstep + 1 : xstep * 2;
    vz_put(&b, "</g>\n<g font-size=\"11\" text-anchor=\"middle\" fill=\"#424242\">\n");
    for (int k = 0; k < n_pos; k += xstep)
        vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">%d</text>\n", px(&P, k), P.yb + 22, k);
    vz_put(&b, "</g>\n");
    vz_printf(&b,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#616161\"/>\n",
              P.x0, P.y0, P.x1 - P.x0, P.yb - P.y0);
    if (logy)
        vz_printf(&b,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bdbdbd\" stroke-dasharray=\"3,3\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#424242\">0</text>\n",
                  P.x0, P.yz, P.x1, P.yz, P.x0 - 6, P.yz + 4);
    /* axis labels */
    vz_printf(&b,
              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">layers in topological order "
              "(%d nodes with float outputs of %d)</text>\n",
              (P.x0 + P.x1) / 2, (double)H - 18, n_pos, g->n_nodes);
    vz_printf(&b,
              "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">%s</text>\n",
              (P.y0 + P.y1) / 2, (P.y0 + P.y1) / 2, ylab);

    /* casts: triangles on the x axis at their tensor's producer */
    if (o->marks && o->marks->n_casts) {
        vz_printf(&b, "<g id=\"plot-casts\" fill=\"%s\" stroke=\"#e65100\" stroke-width=\"0.8\">\n", VZ_CAST_FILL);
        for (int k = 0; k < o->marks->n_casts; k++) {
            const mpx_plan_cast *c = &o->marks->casts[k];
            const mpx_tensor *t = g->tensors[c->tensor];
            double x = t->producer && pos[t->producer->index] >= 0 ? px(&P, pos[t->producer->index]) : P.x0;
            double y = P.yb;
            vz_printf(&b, "<path d=\"M%.1f %.1f l-4.5 8 h9 z\"><title>Cast ", x, y + 1);
            vz_put_xml(&b, t->name);
            vz_printf(&b, " %s&#8594;%s</title></path>\n", mpx_format_name(c->from),
                      mpx_format_name(c->to));
        }
        vz_put(&b, "</g>\n");
    }

    /* the lines and points */
    worst top[3];
    int n_top = 0;
    for (int s = 0; s < n; s++) {
        const mpx_compare *c = series[s].cmp;
        const char *col = palette[(size_t)s % N_PALETTE];
        vz_printf(&b, "<g id=\"plot-series-%d\">\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\" points=\"", s,
                  col);
        /* one point per node (its worst output), in x order */
        int last_pos = -1;
        for (int k = 0; k < c->n_layers; k++) {
            const mpx_layer *l = &c->layers[k];
            if (l->node < 0 || l->node >= g->n_nodes || pos[l->node] <= last_pos) continue;
            int edge;
            double v = layer_value(l, o);
            for (int j = k + 1; j < c->n_layers && c->layers[j].node == l->node; j++) {
                double w = layer_value(&c->layers[j], o);
                if (badness(w, o->metric) > badness(v, o->metric)) v = w;
            }
            last_pos = pos[l->node];
            vz_printf(&b, "%.1f,%.1f ", px(&P, pos[l->node]), py(&P, v, &edge));
        }
        vz_put(&b, "\"/>\n");
        for (int k = 0; k < c->n_layers; k++) {
            const mpx_layer *l = &c->layers[k];
            if (l->node < 0 || l->node >= g->n_nodes) continue;
            int edge;
            double v = layer_value(l, o);
            double x = px(&P, pos[l->node]), y = py(&P, v, &edge);
            const mpx_metrics *m = o->local && l->has_local ? &l->local : &l->m;
            if (m->overflow > 0)
                vz_printf(&b, "<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"%s\" stroke-width=\"2\">", x - 4,
                          y - 4, VZ_OVERFLOW_COLOUR);
            else if (m->underflow > 0)
                vz_printf(&b, "<path d=\"M%.1f %.1f h8 l-4 7 z\" fill=\"white\" stroke=\"%s\" stroke-width=\"1.3\">",
                          x - 4, y - 3.5, col);
            else if (edge < 0)
                vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"white\" stroke=\"%s\">", x, y, col);
            else
                vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\" fill=\"%s\">", x, y, col);
            char fig[32];
            vz_put(&b, "<title>");
            vz_put_xml(&b, series[s].label ? series[s].label : "run");
            vz_printf(&b, " #%d ", pos[l->node]);
            vz_put_xml(&b, g->nodes[l->node]->op_type);
            vz_put(&b, " ");
            vz_put_xml(&b, g->nodes[l->node]->name);
            vz_printf(&b, ": %s %s", mname, vz_fig(v, fig, sizeof fig));
            if (m->overflow) vz_printf(&b, ", overflow %lld", (long long)m->overflow);
            if (m->underflow) vz_printf(&b, ", underflow %lld", (long long)m->underflow);
            vz_put(&b, "</title></");
            vz_put(&b, m->overflow > 0 || m->underflow > 0 ? "path>\n" : "circle>\n");
            /* keep the three worst (one entry per node) */
            double bad = badness(v, o->metric);
            int same = -1;
            for (int t = 0; t < n_top; t++)
                if (series[top[t].series].cmp->layers[top[t].layer].node == l->node) same = t;
            if (same >= 0) {
                if (bad > badness(top[same].v, o->metric)) top[same] = (worst){s, k, v};
            } else if (n_top < 3) {
                top[n_top++] = (worst){s, k, v};
            } else {
                int w = 0;
                for (int t = 1; t < 3; t++)
                    if (badness(top[t].v, o->metric) < badness(top[w].v, o->metric)) w = t;
                if (bad > badness(top[w].v, o->metric)) top[w] = (worst){s, k, v};
            }
        }
        vz_put(&b, "</g>\n");
    }
    /* name the worst layers, staggered so the labels do not overlap */
    for (int i = 0; i < n_top; i++)
        for (int j = i + 1; j < n_top; j++)
            if (badness(top[j].v, o->metric) > badness(top[i].v, o->metric)) {
                worst t = top[i];
                top[i] = top[j];
                top[j] = t;
            }
    vz_put(&b, "<g id=\"plot-worst\" font-size=\"10\" fill=\"#212121\">\n");
    for (int i = 0; i < n_top; i++) {
        const mpx_layer *l = &series[top[i].series].cmp->layers[top[i].layer];
        int edge;
        double x = px(&P, pos[l->node]), y = py(&P, top[i].v, &edge);
        double ly = P.y0 + 14 + 13.0 * i;
        bool right = x < (P.x0 + P.x1) / 2;
        char fig[32];
        vz_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9e9e9e\" stroke-dasharray=\"2,2\"/>\n",
                  x, y, x + (right ? 12 : -12), ly - 3);
        vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x + (right ? 14 : -14), ly,
                  right ? "start" : "end");
        vz_put_xml(&b, g->nodes[l->node]->name);
        vz_printf(&b, " (%s)</text>\n", vz_fig(top[i].v, fig, sizeof fig));
    }
    vz_put(&b, "</g>\n");

    /* legend */
    double lx = P.x1 + 16, ly = P.y0 + 6;
    vz_printf(&b, "<g id=\"plot-legend\" font-size=\"11\">\n<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">legend</text>\n",
              lx, ly);
    ly += 18;
    for (int s = 0; s < n; s++, ly += 17) {
        vz_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>", lx,
                  ly - 4, lx + 22, ly - 4, palette[(size_t)s % N_PALETTE]);
        vz_printf(&b, "<text x=\"%.1f\" y=\"%.1f\">", lx + 28, ly);
        vz_put_xml(&b, series[s].label ? series[s].label : "run");
        vz_put(&b, "</text>\n");
    }
    if (o->marks) {
        vz_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"10\" fill=\"#ef9a9a\" fill-opacity=\"0.45\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\">red node (fp32)</text>\n", lx, ly - 9, lx + 28, ly);
        ly += 17;
        vz_printf(&b, "<path d=\"M%.1f %.1f l-4.5 8 h9 z\" fill=\"%s\" stroke=\"#e65100\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\">runtime cast</text>\n", lx + 11, ly - 9, VZ_CAST_FILL, lx + 28, ly);
        ly += 17;
    }
    vz_printf(&b, "<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"%s\" stroke-width=\"2\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\">overflow (top edge)</text>\n", lx + 7, ly - 9, VZ_OVERFLOW_COLOUR, lx + 28, ly);
    ly += 17;
    vz_printf(&b, "<path d=\"M%.1f %.1f h8 l-4 7 z\" fill=\"white\" stroke=\"#424242\" stroke-width=\"1.3\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\">underflow (values to 0)</text>\n", lx + 7, ly - 9, lx + 28, ly);
    ly += 17;
    if (logy)
        vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"white\" stroke=\"#424242\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\">exact (lane 0)</text>\n", lx + 11, ly - 4, lx + 28, ly);
    vz_put(&b, "</g>\n</svg>\n");
    free(pos);
    *out = vz_buf_take(&b);
    if (!*out) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return MPX_OK;
}
