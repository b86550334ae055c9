/* plot.c - per-layer error along the graph's topological order, as SVG
 * written here (no plotting library, no Python at run time; axes, legend and
 * label placement are plot_svg.c's, shared with the Pareto plot).
 *
 * x: the position of a layer's node among the nodes that have compared
 * layers (Constant and integer-only nodes have none, so they leave no gaps);
 * y: the metric of the node's worst output, on a log scale (sqnr_db:
 * linear), one line per series. A value of 0 (exact) sits in a lane below
 * the range, an infinite one (overflow) on the top edge, so neither
 * disappears from a log axis.
 *
 * Five formats on a few hundred layers stay readable because marks are only
 * where something happens: overflow is a cross on the point (rare, and what
 * to look at); underflow, which low formats cause almost everywhere, is one
 * lane of thin bars under the axis, one per position where it is more than
 * a trace; casts and nodes set by a rule are marked once on the x axis, not
 * once per series; red nodes are bands behind the lines. The worst few
 * layers are named where a label fits. Every point carries a <title> (node,
 * op, figures) that a browser shows on hover. With local figures (run
 * --local) each series also gets a dashed line of its own error. */
#include "viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const palette[] = {"#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#5d4037"};
#define N_PALETTE (sizeof palette / sizeof palette[0])

/* The worst layers named: a few, so the names can be read. */
#define WORST_K 3
/* A layer's underflow is marked when at least 1 in UNDERFLOW_SHARE of its
 * values went to zero: fp16 flushes a few tiny values in most layers of a
 * CNN, fp8 many in most of them, and a mark for every such layer says
 * nothing. */
#define UNDERFLOW_SHARE 100
/* The underflow lane's height in pixels; a bar's height grows with the log
 * of the count (1 value: a stub, the largest count: the whole lane). */
#define LANE_H 14.0

/* Below the frame, from its bottom edge: the casts' triangles, the marks of
 * rule-set nodes, the underflow lane, tick labels, the axis label. */
enum { CAST_Y = 1, RULE_Y = 11, LANE_BOTTOM = 32, TICK_Y = 46, XLABEL_Y = 64, BELOW = 78 };

void mpx_viz_plot_opts_default(mpx_viz_plot_opts *o) {
    memset(o, 0, sizeof *o);
    o->metric = MPX_METRIC_rel_l2;
}

/* One node of one series: its worst output's figure, run and own. */
typedef struct node_pt {
    bool has, has_local;
    double v, lv;
    int64_t n, overflow, underflow, local_overflow;
} node_pt;

/* Larger is worse, except sqnr_db where smaller is. NaN counts as worst. */
static double badness(double v, mpx_viz_metric m) {
    if (isnan(v)) return INFINITY;
    return m == MPX_METRIC_sqnr_db ? -v : v; /* cos is plotted as 1 - cos */
}

static bool notable_underflow(const node_pt *q) {
    return q->underflow > 0 && (q->n <= 0 || q->underflow * UNDERFLOW_SHARE >= q->n);
}

/* pts[s * n_pos + p]: series s at position p. */
static node_pt *collect(const mpx_viz_series *series, int n, const int *pos, int n_pos, int n_nodes,
                        mpx_viz_metric metric) {
    node_pt *pts = calloc((size_t)n * (size_t)n_pos, sizeof *pts);
    if (!pts) return NULL;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < series[s].cmp->n_layers; k++) {
            const mpx_layer *l = &series[s].cmp->layers[k];
            if (l->node < 0 || l->node >= n_nodes) continue;
            node_pt *q = &pts[(size_t)s * (size_t)n_pos + (size_t)pos[l->node]];
            double v = vz_metric(&l->m, metric);
            if (!q->has || badness(v, metric) > badness(q->v, metric)) q->v = v;
            q->has = true;
            q->n += l->m.n;
            q->overflow += l->m.overflow;
            q->underflow += l->m.underflow;
            if (l->has_local) {
                double lv = vz_metric(&l->local, metric);
                if (!q->has_local || badness(lv, metric) > badness(q->lv, metric)) q->lv = lv;
                q->has_local = true;
                q->local_overflow += l->local.overflow;
            }
        }
    return pts;
}

static const char *label_of(const mpx_viz_series *s) { return s->label ? s->label : "run"; }

static void put_node(vz_buf *b, const mpx_node *nd) {
    vz_put_xml(b, nd->op_type);
    vz_put(b, " ");
    vz_put_xml(b, nd->name);
}

/* A polyline through the series' points (own figures when local), passing
 * over positions where the series has none. */
static void polyline(vz_buf *b, const vz_axes *A, const node_pt *q, int n_pos, bool local, const char *col) {
    vz_printf(b, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
              local ? "local" : "run", col, local ? "1.2" : "1.4", local ? " stroke-dasharray=\"4,2.5\"" : "");
    const char *sep = "";
    for (int p = 0; p < n_pos; p++) {
        if (!(local ? q[p].has_local : q[p].has)) continue;
        int edge;
        vz_printf(b, "%s%.1f,%.1f", sep, vz_axes_x(A, p), vz_axes_y(A, local ? q[p].lv : q[p].v, &edge));
        sep = " ";
    }
    vz_put(b, "\"/>\n");
}

typedef struct worst {
    int pos, series;
    double v, bad;
} worst;

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
            return mpx_error_set(err, MPX_E_ARG, "plot: run \"%s\" belongs to another model", label_of(&series[s]));
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
    /* node of each position, and the figures */
    int *node_at = malloc((size_t)n_pos * sizeof *node_at);
    node_pt *pts = collect(series, n, pos, n_pos, g->n_nodes, o->metric);
    double *soft = malloc((size_t)n_pos * (size_t)n * 2 * 2 * sizeof *soft);
    if (!node_at || !pts || !soft) {
        free(pos), free(node_at), free(pts), free(soft);
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (pos[i] >= 0) node_at[pos[i]] = i;
    /* Own errors are drawn beside the run's only where they were measured. */
    bool local = false;
    for (size_t i = 0; o->local && i < (size_t)n * (size_t)n_pos; i++) local |= pts[i].has_local;

    /* y range over finite (and, on a log scale, positive) values */
    bool logy = o->metric != MPX_METRIC_sqnr_db, any_zero = false;
    double vmin = INFINITY, vmax = -INFINITY;
    for (size_t i = 0; i < (size_t)n * (size_t)n_pos; i++)
        for (int w = 0; w < 2; w++) {
            if (!(w ? local && pts[i].has_local : pts[i].has)) continue;
            double v = w ? pts[i].lv : pts[i].v;
            any_zero |= logy && v <= 0;
            if (!isfinite(v) || (logy && v <= 0)) continue;
            if (v < vmin) vmin = v;
            if (v > vmax) vmax = v;
        }

    const char *mname = mpx_metric_info_of(o->metric)->name;
    char ylab[96];
    snprintf(ylab, sizeof ylab, "%s%s", o->metric == MPX_METRIC_cos ? "1 - cos" : mname,
             logy ? " (log scale)" : " (dB)");

    /* Which marks there are, for the legend. */
    bool any_rule = false, any_underflow = false, any_overflow = false;
    if (o->marks)
        for (int p = 0; p < n_pos; p++) any_rule |= o->marks->nodes[node_at[p]].colour_rule >= 0;
    for (size_t i = 0; i < (size_t)n * (size_t)n_pos; i++) {
        any_underflow |= notable_underflow(&pts[i]);
        any_overflow |= pts[i].overflow > 0 || (local && pts[i].local_overflow > 0);
    }

    /* The legend first: its width decides where the frame ends. */
    vz_key keys[24];
    char marks[24][200];
    int nk = 0;
    for (int s = 0; s < n && nk < 16; s++, nk++) {
        snprintf(marks[nk], sizeof marks[nk], "<line x1=\"0\" y1=\"0\" x2=\"22\" y2=\"0\" stroke=\"%s\" stroke-width=\"2\"/>",
                 palette[(size_t)s % N_PALETTE]);
        keys[nk] = (vz_key){marks[nk], label_of(&series[s])};
    }
    if (local) {
        keys[nk++] = (vz_key){"<line x1=\"0\" y1=\"0\" x2=\"22\" y2=\"0\" stroke=\"#616161\" stroke-width=\"1.6\"/>",
                              "solid: with inherited error"};
        keys[nk++] = (vz_key){"<line x1=\"0\" y1=\"0\" x2=\"22\" y2=\"0\" stroke=\"#616161\" stroke-width=\"1.4\" "
                              "stroke-dasharray=\"4,2.5\"/>",
                              "dashed: own error (local)"};
    }
    if (o->marks) {
        keys[nk++] = (vz_key){"<rect x=\"0\" y=\"-5\" width=\"22\" height=\"10\" fill=\"#ef9a9a\" fill-opacity=\"0.45\"/>",
                              "red node (fp32)"};
        snprintf(marks[nk], sizeof marks[nk], "<path d=\"M11 -4 l-4.5 8 h9 z\" fill=\"%s\" stroke=\"#e65100\"/>",
                 VZ_CAST_FILL);
        keys[nk] = (vz_key){marks[nk], "runtime cast"};
        nk++;
        if (any_rule)
            keys[nk++] = (vz_key){"<rect x=\"9\" y=\"-2\" width=\"4\" height=\"4\" fill=\"#424242\"/>", "set by a rule"};
    }
    if (any_overflow) {
        snprintf(marks[nk], sizeof marks[nk], "<path d=\"M7 -4 l8 8 m0 -8 l-8 8\" stroke=\"%s\" stroke-width=\"2\"/>",
                 VZ_OVERFLOW_COLOUR);
        keys[nk] = (vz_key){marks[nk], "overflow (top edge)"};
        nk++;
    }
    if (any_underflow)
        keys[nk++] = (vz_key){"<rect x=\"6\" y=\"-5\" width=\"2\" height=\"9\" fill=\"#757575\"/>"
                              "<rect x=\"11\" y=\"-1\" width=\"2\" height=\"5\" fill=\"#757575\"/>"
                              "<rect x=\"16\" y=\"-3\" width=\"2\" height=\"7\" fill=\"#757575\"/>",
                              "underflow \xe2\x89\xa5 1% of values"};
    if (any_zero)
        keys[nk++] = (vz_key){"<circle cx=\"11\" cy=\"0\" r=\"2.5\" fill=\"white\" stroke=\"#424242\"/>", "exact (lane 0)"};

    int W = o->width > 0 ? o->width : 1100, H = o->height > 0 ? o->height : 440;
    vz_box lbox = vz_legend(NULL, "legend", 0, 0, keys, nk);
    double lw = lbox.x1 - lbox.x0;
    vz_axes A;
    /* the legend keeps its width; a frame too narrow to read is not saved by a smaller one */
    vz_axes_frame(&A, 78, 44, fmax(78 + 60, floor((double)W - lw - 22)), (double)H - BELOW, logy);
    A.xlo = 0;
    A.xhi = n_pos - 1;
    vz_axes_range(&A, vmin, vmax, 1);

    vz_buf b;
    vz_buf_init(&b);
    char head[512];
    const char *base = g->path ? strrchr(g->path, '/') : NULL;
    base = base ? base + 1 : g->path;
    snprintf(head, sizeof head, "%s per layer%s, %s", mname, local ? ", own error dashed" : "",
             base && *base ? base : g->name && *g->name ? g->name : "model");
    if (o->title) vz_svg_open(&b, W, H, o->title);
    else {
        char t[64];
        snprintf(t, sizeof t, "%s per layer", mname);
        vz_svg_open(&b, W, H, t);
    }
    vz_svg_heading(&b, A.x0, o->title ? o->title : head);

    double step = n_pos > 1 ? (A.x1 - A.x0) / (n_pos - 1) : 10;
    /* red nodes: bands behind everything, cut at the frame */
    if (o->marks) {
        double half = (step < 2 ? 2 : step) / 2;
        vz_put(&b, "<g id=\"plot-red-nodes\" fill=\"#ef9a9a\" fill-opacity=\"0.45\">\n");
        for (int p = 0; p < n_pos; p++) {
            int i = node_at[p];
            if (o->marks->nodes[i].colour != MPX_COLOUR_RED || !o->marks->nodes[i].is_float) continue;
            double x = vz_axes_x(&A, p), l = fmax(A.x0, x - half), r = fmin(A.x1, x + half);
            vz_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>red: ", l, A.y0, r - l,
                      A.yb - A.y0);
            put_node(&b, g->nodes[i]);
            vz_put(&b, "</title></rect>\n");
        }
        vz_put(&b, "</g>\n");
    }
    vz_axes_draw_y(&b, &A, ylab);
    /* x ticks: about 10 */
    int xstep = 1;
    while (n_pos / xstep > 10) xstep = xstep < 5 ? xstep + 1 : xstep * 2;
    char xlab[128];
    snprintf(xlab, sizeof xlab, "layers in topological order (%d nodes with float outputs of %d)", n_pos, g->n_nodes);
    vz_axes_draw_x(&b, &A, xstep, NULL, false, A.yb + TICK_Y, xlab, A.yb + XLABEL_Y);
    vz_axes_draw_frame(&b, &A);

    /* casts: triangles on the x axis at their tensor's producer */
    if (o->marks && o->marks->n_casts) {
        vz_printf(&b, "<g id=\"plot-casts\" fill=\"%s\" stroke=\"#e65100\" stroke-width=\"0.8\">\n", VZ_CAST_FILL);
        for (int k = 0; k < o->marks->n_casts; k++) {
            const mpx_plan_cast *c = &o->marks->casts[k];
            const mpx_tensor *t = g->tensors[c->tensor];
            double x = t->producer && pos[t->producer->index] >= 0 ? vz_axes_x(&A, pos[t->producer->index]) : A.x0;
            vz_printf(&b, "<path d=\"M%.1f %.1f l-4.5 8 h9 z\"><title>Cast ", x, A.yb + CAST_Y);
            vz_put_xml(&b, t->name);
            vz_printf(&b, " %s&#8594;%s</title></path>\n", mpx_format_name(c->from), mpx_format_name(c->to));
        }
        vz_put(&b, "</g>\n");
    }
    /* nodes whose colour a rule set: a square under the axis */
    if (any_rule) {
        vz_put(&b, "<g id=\"plot-rules\" fill=\"#424242\">\n");
        for (int p = 0; p < n_pos; p++) {
            const mpx_plan_node *pn = &o->marks->nodes[node_at[p]];
            if (pn->colour_rule < 0) continue;
            vz_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"3\" height=\"3\"><title>rule %d: %s ",
                      vz_axes_x(&A, p) - 1.5, A.yb + RULE_Y, pn->colour_rule + 1, mpx_colour_name(pn->colour));
            put_node(&b, g->nodes[node_at[p]]);
            vz_put(&b, "</title></rect>\n");
        }
        vz_put(&b, "</g>\n");
    }
    /* Underflow: one lane of bars, a bar per bucket of positions (a
     * position each when they are 2 px apart or more) where some series lost
     * at least 1 in UNDERFLOW_SHARE values; its height is the log of the
     * worst series' count and its colour that series'. */
    if (any_underflow) {
        int bucket = step >= 2 ? 1 : (int)ceil(2 / step);
        int64_t cmax = 1;
        for (size_t i = 0; i < (size_t)n * (size_t)n_pos; i++)
            if (notable_underflow(&pts[i]) && pts[i].underflow > cmax) cmax = pts[i].underflow;
        double lb = A.yb + LANE_BOTTOM, bw = fmin(4, fmax(1.2, step * bucket * 0.7));
        vz_printf(&b,
                  "<g id=\"plot-underflow\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"#424242\">underflow</text>\n",
                  A.x0, lb + 0.5, A.x1, lb + 0.5, A.x0 - 6, lb);
        for (int p0 = 0; p0 < n_pos; p0 += bucket) {
            int ws = -1, wp = -1;
            for (int p = p0; p < p0 + bucket && p < n_pos; p++)
                for (int s = 0; s < n; s++) {
                    const node_pt *q = &pts[(size_t)s * (size_t)n_pos + (size_t)p];
                    if (notable_underflow(q) &&
                        (ws < 0 || q->underflow > pts[(size_t)ws * (size_t)n_pos + (size_t)wp].underflow))
                        ws = s, wp = p;
                }
            if (ws < 0) continue;
            int p1 = p0 + bucket - 1 < n_pos ? p0 + bucket - 1 : n_pos - 1;
            int64_t cnt = pts[(size_t)ws * (size_t)n_pos + (size_t)wp].underflow;
            double h = LANE_H * (1 + log10((double)cnt)) / (1 + log10((double)cmax));
            double x = (vz_axes_x(&A, p0) + vz_axes_x(&A, p1)) / 2;
            vz_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>underflow at #%d ",
                      x - bw / 2, lb - h, bw, h, palette[(size_t)ws % N_PALETTE], wp);
            put_node(&b, g->nodes[node_at[wp]]);
            vz_put(&b, ":");
            /* every series' count at the worst position of the bucket */
            const char *sep = " ";
            for (int s = 0; s < n; s++) {
                const node_pt *q = &pts[(size_t)s * (size_t)n_pos + (size_t)wp];
                if (q->underflow <= 0) continue;
                vz_put(&b, sep);
                vz_put_xml(&b, label_of(&series[s]));
                vz_printf(&b, " %lld", (long long)q->underflow);
                if (q->n > 0) vz_printf(&b, " of %lld (%.2g%%)", (long long)q->n, 100.0 * (double)q->underflow / (double)q->n);
                sep = ", ";
            }
            vz_put(&b, "</title></rect>\n");
        }
        vz_put(&b, "</g>\n");
    }

    /* the lines, the marks on them, and a hover target per point */
    int n_soft = 0;
    for (int s = n - 1; s >= 0; s--) { /* the first series (the last run) on top */
        const node_pt *q = &pts[(size_t)s * (size_t)n_pos];
        const char *col = palette[(size_t)s % N_PALETTE];
        bool has_local = false;
        for (int p = 0; p < n_pos; p++) has_local |= q[p].has_local;
        vz_printf(&b, "<g id=\"plot-series-%d\">\n", s);
        polyline(&b, &A, q, n_pos, false, col);
        if (local && has_local) polyline(&b, &A, q, n_pos, true, col);
        vz_put(&b, "<g class=\"marks\">\n");
        for (int p = 0; p < n_pos; p++)
            for (int w = 0; w < 2; w++) {
                if (!(w ? local && q[p].has_local : q[p].has)) continue;
                int edge;
                double x = vz_axes_x(&A, p), y = vz_axes_y(&A, w ? q[p].lv : q[p].v, &edge);
                soft[2 * n_soft] = x, soft[2 * n_soft + 1] = y, n_soft++;
                if ((w ? q[p].local_overflow : q[p].overflow) > 0)
                    vz_printf(&b, "<path d=\"M%.1f %.1f l8 8 m0 -8 l-8 8\" stroke=\"%s\" stroke-width=\"2\"/>\n", x - 4,
                              y - 4, VZ_OVERFLOW_COLOUR);
                else if (edge < 0 && logy)
                    vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"white\" stroke=\"%s\"/>\n", x, y, col);
            }
        vz_put(&b, "</g>\n<g class=\"hover\" fill=\"#000\" fill-opacity=\"0\">\n");
        for (int p = 0; p < n_pos; p++) {
            if (!q[p].has) continue;
            int edge;
            char fig[32];
            vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>", vz_axes_x(&A, p), vz_axes_y(&A, q[p].v, &edge));
            vz_put_xml(&b, label_of(&series[s]));
            vz_printf(&b, " #%d ", p);
            put_node(&b, g->nodes[node_at[p]]);
            vz_printf(&b, ": %s %s", mname, vz_fig(q[p].v, fig, sizeof fig));
            if (q[p].has_local) vz_printf(&b, ", own %s", vz_fig(q[p].lv, fig, sizeof fig));
            if (q[p].overflow) vz_printf(&b, ", overflow %lld", (long long)q[p].overflow);
            if (q[p].underflow) {
                vz_printf(&b, ", underflow %lld", (long long)q[p].underflow);
                if (q[p].n > 0) vz_printf(&b, " of %lld values", (long long)q[p].n);
            }
            vz_put(&b, "</title></circle>\n");
        }
        vz_put(&b, "</g>\n</g>\n");
    }

    /* the legend beside the frame */
    vz_box legend = vz_legend(&b, "legend", A.x1 + 16, A.y0, keys, nk);

    /* The worst positions (own error when it is drawn: the causes), one
     * per node whichever series; named where a label fits. */
    worst top[WORST_K];
    int n_top = 0;
    for (int p = 0; p < n_pos; p++) {
        worst wp = {p, -1, 0, -INFINITY};
        for (int s = 0; s < n; s++) {
            const node_pt *q = &pts[(size_t)s * (size_t)n_pos + (size_t)p];
            if (!(local ? q->has_local : q->has)) continue;
            double v = local ? q->lv : q->v;
            if (logy && v == 0) continue; /* exact is not worth a name */
            double bad = badness(v, o->metric);
            if (wp.series < 0 || bad > wp.bad) wp = (worst){p, s, v, bad};
        }
        if (wp.series < 0) continue;
        if (n_top == WORST_K && !(wp.bad > top[WORST_K - 1].bad)) continue; /* ties: the earlier stays */
        int at = n_top < WORST_K ? n_top++ : WORST_K - 1;
        top[at] = wp;
        for (int i = at; i > 0 && top[i].bad > top[i - 1].bad; i--) {
            worst t = top[i];
            top[i] = top[i - 1];
            top[i - 1] = t;
        }
    }
    vz_labeler L;
    vz_box area = vz_axes_area(&A);
    vz_labeler_init(&L, (vz_box){area.x0 + 2, area.y0 + 2, area.x1 - 2, area.y1 - 2}, soft, n_soft);
    vz_labeler_block(&L, legend);
    double tx[WORST_K], ty[WORST_K];
    for (int i = 0; i < n_top; i++) {
        int edge;
        tx[i] = vz_axes_x(&A, top[i].pos);
        ty[i] = vz_axes_y(&A, top[i].v, &edge);
        vz_labeler_block(&L, (vz_box){tx[i] - 4, ty[i] - 4, tx[i] + 4, ty[i] + 4});
    }
    vz_put(&b, "<g id=\"plot-worst\">\n");
    for (int i = 0; i < n_top; i++) {
        char fig[32], text[300];
        snprintf(text, sizeof text, "%s (%s%s)", g->nodes[node_at[top[i].pos]]->name, local ? "own " : "",
                 vz_fig(top[i].v, fig, sizeof fig));
        vz_label lab;
        if (!vz_labeler_place(&L, tx[i], ty[i], 4, text, 10, &lab)) continue;
        /* in its series' colour, the point ringed: which line it names */
        const char *col = palette[(size_t)top[i].series % N_PALETTE];
        vz_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\"/>\n",
                  tx[i], ty[i], col);
        vz_label_draw(&b, &lab, tx[i], ty[i], text, 10, col);
    }
    vz_put(&b, "</g>\n</svg>\n");
    vz_labeler_free(&L);
    free(pos);
    free(node_at);
    free(pts);
    free(soft);
    *out = vz_buf_take(&b);
    if (!*out) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    return MPX_OK;
}
