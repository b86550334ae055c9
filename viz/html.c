/* html.c - one self-contained review page: everything a reviewer needs to
 * judge a precision plan without mpx, in one file that opens from disk with
 * no network (inline CSS, inline SVG, inline script; no fonts, images or
 * scripts fetched).
 *
 * The first screen: "what to look at" beside the cast graph. On large
 * graphs (over MPX_VIZ_PAGE_FOLD_NODES drawn nodes) the graph opens as the
 * model-level view (graph.c's fold: by the scopes of node names, with the
 * view of each scope opened in place written as a <template>, or by about
 * MPX_VIZ_PAGE_BOXES regions) with the detailed graph behind it (none for a
 * graph too large to lay out); page.js pans and zooms both, opens a scope in
 * place and a region at its nodes, finds nodes, tensors and ops, and jumps to
 * the worst layer, each overflow and along the path to the cause, from an
 * index of the nodes written here as JSON. Then: model summary; target, rules, the plan's figures and casts;
 * the error plot (plot.c); the per-layer table with filters. */
#include "viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bytes_str(int64_t v, char *buf, size_t n) {
    if (v < 0) snprintf(buf, n, "?");
    else if (v >= 1 << 20) snprintf(buf, n, "%.1f MiB", (double)v / (1 << 20));
    else if (v >= 1 << 10) snprintf(buf, n, "%.1f KiB", (double)v / (1 << 10));
    else snprintf(buf, n, "%lld B", (long long)v);
    return buf;
}

/* The page's style and script: viz/page.css and viz/page.js, made into C
 * strings at build time (viz/embed.cmake). */
#include "viz_page_css.h"
#include "viz_page_js.h"

static void colour_badge(vz_buf *b, mpx_colour c) {
    vz_printf(b, "<span class=\"badge\" style=\"background:%s\">%s</span>", vz_fill(c), mpx_colour_name(c));
}

/* A number cell; data-v holds the exact value the sort script compares
 * (NaN sorts as the worst: +inf). style may be NULL. */
static void num_cell(vz_buf *b, double v, const char *style) {
    char fig[32], key[40];
    if (isnan(v) || (isinf(v) && v > 0)) snprintf(key, sizeof key, "Infinity");
    else if (isinf(v)) snprintf(key, sizeof key, "-Infinity");
    else snprintf(key, sizeof key, "%.17g", v);
    vz_printf(b, "<td class=\"num\"%s%s%s data-v=\"%s\">%s</td>", style ? " style=\"" : "", style ? style : "",
              style ? "\"" : "", key, vz_fig(v, fig, sizeof fig));
}

static void model_section(vz_buf *b, const mpx_viz_page *pg) {
    const mpx_graph *g = pg->plan->g;
    char h1[32], h2[32], sh[256];
    vz_put(b, "<section id=\"model\"><h2>Model</h2><table class=\"kv\">");
    vz_put(b, "<tr><th>file</th><td>");
    vz_put_xml(b, pg->model_path ? pg->model_path : g->path);
    vz_put(b, "</td></tr><tr><th>name</th><td>");
    vz_put_xml(b, g->name);
    vz_put(b, "</td></tr><tr><th>producer</th><td>");
    vz_put_xml(b, g->producer);
    vz_printf(b, "</td></tr><tr><th>opset</th><td>%d</td></tr>", g->opset);
    vz_printf(b, "<tr><th>nodes</th><td>%d (%d tensors)</td></tr>", g->n_nodes, g->n_tensors);
    vz_printf(b, "<tr><th>parameters</th><td>%s</td></tr><tr><th>MACs</th><td>%s</td></tr>",
              mpx_count_str(mpx_graph_param_count(g), h1, sizeof h1), mpx_count_str(mpx_graph_macs(g), h2, sizeof h2));
    for (int i = 0; i < g->n_inputs; i++) {
        vz_put(b, "<tr><th>input</th><td><code>");
        vz_put_xml(b, g->inputs[i]->name);
        vz_printf(b, "</code> %s %s</td></tr>", mpx_dtype_name(g->inputs[i]->dtype),
                  mpx_tensor_shape_str(g->inputs[i], sh, sizeof sh));
    }
    for (int i = 0; i < g->n_outputs; i++) {
        vz_put(b, "<tr><th>output</th><td><code>");
        vz_put_xml(b, g->outputs[i]->name);
        vz_printf(b, "</code> %s %s</td></tr>", mpx_dtype_name(g->outputs[i]->dtype),
                  mpx_tensor_shape_str(g->outputs[i], sh, sizeof sh));
    }
    /* op types by count */
    int counts[MPX_OP_COUNT];
    memset(counts, 0, sizeof counts);
    for (int i = 0; i < g->n_nodes; i++) counts[g->nodes[i]->op]++;
    vz_put(b, "<tr><th>op types</th><td>");
    for (int shown = 0; shown < MPX_OP_COUNT; shown++) {
        int best = -1;
        for (int k = 0; k < MPX_OP_COUNT; k++)
            if (counts[k] > 0 && (best < 0 || counts[k] > counts[best])) best = k;
        if (best < 0) break;
        vz_printf(b, "%s%s %d", shown ? ", " : "", mpx_op_name((mpx_op)best), counts[best]);
        counts[best] = 0;
    }
    vz_put(b, "</td></tr></table></section>\n");
}

static void plan_section(vz_buf *b, const mpx_viz_page *pg) {
    const mpx_plan *p = pg->plan;
    const mpx_graph *g = p->g;
    char sum[512], a[32], c[32];
    vz_put(b, "<section id=\"plan\"><h2>Target and rules</h2><table class=\"kv\">");
    vz_printf(b, "<tr><th>target</th><td><b>%s</b></td></tr>", mpx_format_name(p->opts.target));
    vz_printf(b, "<tr><th>keep-io</th><td>%s</td></tr>", p->opts.keep_io ? "on (model inputs and outputs keep their type)" : "off");
    vz_printf(b, "<tr><th>accumulate</th><td>%s", mpx_format_name(p->opts.accum));
    if (p->opts.accum_block > 0) vz_printf(b, ", rounded every %d terms", p->opts.accum_block);
    vz_put(b, "</td></tr></table>");
    int nr = pg->rules ? mpx_rules_count(pg->rules) : 0;
    if (nr == 0) {
        vz_put(b, "<p>No rules: every node has its default colour.</p>");
    } else {
        vz_put(b, "<h3>Rules (later rules override earlier ones)</h3><ol class=\"rules\">");
        for (int i = 0; i < nr; i++) {
            vz_put(b, "<li><code>");
            vz_put_xml(b, mpx_rules_text(pg->rules, i));
            vz_put(b, "</code>");
            if (i < p->n_rules)
                vz_printf(b, " <span class=\"note\">selects %d node%s, sets %d</span>", p->rule_selected[i],
                          p->rule_selected[i] == 1 ? "" : "s", p->rule_applied[i]);
            vz_put(b, "</li>");
        }
        vz_put(b, "</ol>");
    }
    mpx_plan_summary(p, sum, sizeof sum);
    const mpx_plan_counts *k = &p->counts;
    vz_put(b, "<h2>Plan</h2><p>");
    vz_put_xml(b, sum);
    vz_put(b, "</p><div class=\"cards\">");
    for (int col = 1; col < MPX_COLOUR_COUNT; col++)
        vz_printf(b, "<div class=\"card\" style=\"background:%s\"><b>%d</b><span>%s nodes</span></div>",
                  vz_fill((mpx_colour)col), k->nodes[col], mpx_colour_name((mpx_colour)col));
    vz_printf(b, "<div class=\"card\"><b>%d / %d</b><span>float nodes computing low</span></div>", k->low_nodes,
              k->float_nodes);
    vz_printf(b, "<div class=\"card\" style=\"background:%s\"><b>%d</b><span>runtime casts</span></div>",
              VZ_CAST_FILL, k->casts);
    vz_printf(b, "<div class=\"card\"><b>%d</b><span>weights converted (%s &#8594; %s)</span></div>",
              k->weights_converted, bytes_str(k->weight_bytes_before, a, sizeof a),
              bytes_str(k->weight_bytes_after, c, sizeof c));
    vz_printf(b, "<div class=\"card\"><b>%.1f%%</b><span>of MACs in %s%s</span></div></div>", k->low_macs_pct,
              mpx_format_name(p->opts.target), k->macs_unknown ? " (some MACs unknown)" : "");
    mpx_weight_check *wc = NULL;
    int nwc = 0;
    mpx_error werr;
    if (mpx_plan_check_weights(p, &wc, &nwc, &werr) == MPX_OK && nwc) {
        /* Converting a weight offline can overflow it: the run only shows the
         * layer that went wrong, so the page names the weight. */
        vz_put(b, "<h3>Weights the conversion damages</h3><div class=\"scroll\"><table><thead><tr><th>weight</th>"
                  "<th>used by</th><th>to</th><th>values</th><th>overflow</th><th>largest |value|</th>"
                  "<th>rel_l2</th></tr></thead><tbody>");
        for (int i = 0; i < nwc; i++) {
            const mpx_plan_weight *pw = &p->weights[wc[i].weight];
            const mpx_tensor *t = g->tensors[pw->tensor];
            vz_put(b, "<tr><td><code>");
            vz_put_xml(b, t->name);
            vz_put(b, "</code></td><td>");
            vz_put_xml(b, t->n_consumers ? t->consumers[0]->name : "?");
            vz_printf(b, "</td><td>%s</td><td>%lld</td><td>%lld</td><td>%.4g</td><td>%.3g</td></tr>", mpx_format_name(pw->to),
                      (long long)wc[i].n, (long long)wc[i].overflow, wc[i].absmax, wc[i].rel_l2);
        }
        vz_put(b, "</tbody></table></div>");
    }
    free(wc);
    if (p->n_casts) {
        vz_put(b, "<h3>Runtime casts</h3><div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>tensor</th>"
                  "<th>from</th><th>to</th><th>consumers</th></tr></thead><tbody>");
        for (int i = 0; i < p->n_casts; i++) {
            const mpx_plan_cast *cs = &p->casts[i];
            vz_put(b, "<tr><td><code>");
            vz_put_xml(b, g->tensors[cs->tensor]->name);
            vz_printf(b, "</code></td><td>%s</td><td>%s</td><td>", mpx_format_name(cs->from), mpx_format_name(cs->to));
            for (int j = 0; j < cs->n_consumers; j++) {
                if (j) vz_put(b, ", ");
                if (j == 8) {
                    vz_printf(b, "&#8230; %d more", cs->n_consumers - 8);
                    break;
                }
                vz_put_xml(b, cs->consumers[j] < 0 ? "(model output)" : g->nodes[cs->consumers[j]]->name);
            }
            vz_put(b, "</td></tr>");
        }
        vz_put(b, "</tbody></table></div>");
    }
    vz_put(b, "</section>\n");
}

static void run_summary(vz_buf *b, const mpx_viz_page *pg) {
    const mpx_graph *g = pg->plan->g;
    vz_put(b, "<table class=\"kv\">");
    for (int s = 0; s < pg->n_series; s++) {
        const mpx_compare *c = pg->series[s].cmp;
        const mpx_layer *worst = mpx_compare_worst_layer(c, MPX_WORST_ANY);
        const mpx_run_totals t = mpx_compare_totals(c);
        const int ovf = t.layers_overflow, unf = t.layers_underflow;
        char fig[32];
        vz_put(b, "<tr><th>");
        vz_put_xml(b, pg->series[s].label ? pg->series[s].label : "run");
        vz_printf(b, "</th><td>%d layers compared", c->n_layers);
        if (worst) {
            vz_printf(b, "; worst rel_l2 %s at <code>", vz_fig(worst->m.rel_l2, fig, sizeof fig));
            vz_put_xml(b, g->nodes[worst->node]->name);
            vz_put(b, "</code>");
        }
        vz_printf(b, "; %d layer%s overflowed, %d underflowed", ovf, ovf == 1 ? "" : "s", unf);
        for (int o = 0; o < g->n_outputs; o++) {
            const mpx_layer *l = mpx_compare_layer(c, g->outputs[o]->index);
            if (!l) continue;
            vz_put(b, "<br>output <code>");
            vz_put_xml(b, g->outputs[o]->name);
            vz_printf(b, "</code>: rel_l2 %s", vz_fig(l->m.rel_l2, fig, sizeof fig));
            vz_printf(b, ", max_abs %s", vz_fig(l->m.max_abs, fig, sizeof fig));
            vz_printf(b, ", sqnr %s dB", vz_fig(l->m.sqnr_db, fig, sizeof fig));
        }
        vz_put(b, "</td></tr>");
    }
    vz_put(b, "</table>");
}

static void node_link(vz_buf *b, const mpx_viz_page *pg, int n);

/* The ten layers with the largest rel_l2 in the first run. */
static void worst_table(vz_buf *b, const mpx_viz_page *pg) {
    const mpx_compare *c = pg->series[0].cmp;
    const mpx_graph *g = pg->plan->g;
    int top[10], nt = 0;
    for (int k = 0; k < c->n_layers; k++) {
        double r = isnan(c->layers[k].m.rel_l2) ? INFINITY : c->layers[k].m.rel_l2;
        int at = nt;
        while (at > 0) {
            double q = c->layers[top[at - 1]].m.rel_l2;
            if (!(r > (isnan(q) ? INFINITY : q))) break;
            at--;
        }
        if (at >= 10) continue;
        for (int j = (nt < 10 ? nt : 9); j > at; j--) top[j] = top[j - 1];
        top[at] = k;
        if (nt < 10) nt++;
    }
    if (!nt) return;
    vz_put(b, "<h3>Worst layers</h3><table><thead><tr><th>#</th><th>order</th><th>node</th><th>op</th><th>colour</th>"
              "<th>format</th><th>rel_l2</th><th>max_abs</th><th>overflow</th><th>underflow</th></tr></thead><tbody>");
    for (int i = 0; i < nt; i++) {
        const mpx_layer *l = &c->layers[top[i]];
        char col[8], style[64];
        vz_err_colour(vz_err_t(l->m.rel_l2), col);
        snprintf(style, sizeof style, "border-left:6px solid %s", l->m.overflow ? VZ_OVERFLOW_COLOUR : col);
        vz_printf(b, "<tr><td class=\"num\">%d</td><td class=\"num\">%d</td><td>", i + 1, l->node);
        node_link(b, pg, l->node);
        vz_put(b, "</td><td>");
        vz_put_xml(b, g->nodes[l->node]->op_type);
        vz_put(b, "</td><td>");
        colour_badge(b, pg->plan->nodes[l->node].colour);
        vz_printf(b, "</td><td>%s</td>", mpx_format_name(l->fmt));
        num_cell(b, l->m.rel_l2, style);
        num_cell(b, l->m.max_abs, NULL);
        vz_printf(b, "<td class=\"num\">%lld</td><td class=\"num\">%lld</td></tr>", (long long)l->m.overflow,
                  (long long)l->m.underflow);
    }
    vz_put(b, "</tbody></table>");
}

/* What the first screen and the script need from the first run, worked
 * out once (all empty without a run). */
typedef struct page_facts {
    const mpx_layer *worst;      /* the layer with the largest rel_l2, NULL */
    const mpx_layer *worst_out;  /* the model output with the largest rel_l2, NULL */
    vz_node_err *err;            /* [n_nodes] per node (vz_node_errors), NULL */
    int n_ovf;                   /* nodes with an overflowing output */
    int *path;                   /* vz_cause_path from worst_out's node: it first, the cause last */
    int n_path;
} page_facts;

/* "What to look at": where a reviewer starts - the worst output, the worst
 * layer, the layer whose own error is largest (a --local run), overflow
 * sites, weights the conversion damages, the nodes search kept fp32. Every
 * item names the node, linked to the graph; figures from the first run. */
static void look_section(vz_buf *b, const mpx_viz_page *pg, const page_facts *f) {
    const mpx_plan *p = pg->plan;
    const mpx_graph *g = p->g;
    char fig[32];
    vz_put(b, "<section id=\"look\"><h2>What to look at</h2><ul>");
    if (pg->n_series > 0) {
        const mpx_compare *c = pg->series[0].cmp;
        const mpx_layer *wo = f->worst_out;
        if (wo) {
            vz_put(b, "<li>worst output <code>");
            vz_put_xml(b, g->tensors[wo->tensor]->name);
            vz_printf(b, "</code>: rel_l2 %s</li>", vz_fig(wo->m.rel_l2, fig, sizeof fig));
        }
        int own = -1, ovf = 0, first_ovf = -1;
        for (int k = 0; k < c->n_layers; k++) {
            const mpx_layer *l = &c->layers[k];
            if (l->has_local && (own < 0 || !(l->local.rel_l2 <= c->layers[own].local.rel_l2))) own = k;
            if (l->m.overflow > 0) {
                ovf++;
                if (first_ovf < 0 || l->node < c->layers[first_ovf].node) first_ovf = k;
            }
        }
        if (f->worst) {
            vz_put(b, "<li>worst layer ");
            node_link(b, pg, f->worst->node);
            vz_printf(b, ": rel_l2 %s (what it makes and what it inherits)</li>",
                      vz_fig(f->worst->m.rel_l2, fig, sizeof fig));
        }
        if (own >= 0) {
            vz_put(b, "<li>largest own error ");
            node_link(b, pg, c->layers[own].node);
            vz_printf(b, ": local rel_l2 %s with exact inputs: the cause to fix first</li>",
                      vz_fig(c->layers[own].local.rel_l2, fig, sizeof fig));
        } else {
            vz_put(b, "<li>own errors: not measured (<code>run --local</code> tells the layer that causes the "
                      "error from those that inherit it)</li>");
        }
        if (ovf) {
            vz_printf(b, "<li>overflow in %d layer%s, the first ", ovf, ovf == 1 ? "" : "s");
            node_link(b, pg, c->layers[first_ovf].node);
            vz_put(b, "</li>");
        } else {
            vz_put(b, "<li>no overflow</li>");
        }
    } else {
        vz_put(b, "<li>no run yet: <code>run --local</code> shows the worst layers and their causes</li>");
    }
    mpx_weight_check *wc = NULL;
    int nwc = 0, bad = 0, first = -1;
    mpx_error werr;
    if (mpx_plan_check_weights(p, &wc, &nwc, &werr) == MPX_OK)
        for (int i = 0; i < nwc; i++)
            if (wc[i].overflow > 0 && bad++ == 0) first = i;
    if (bad) {
        const mpx_tensor *t = g->tensors[p->weights[wc[first].weight].tensor];
        vz_printf(b, "<li>%d weight%s not fit %s, the first <code>", bad, bad == 1 ? " does" : "s do",
                  mpx_format_name(p->opts.target));
        vz_put_xml(b, t->name);
        vz_put(b, "</code> (see the plan)</li>");
    }
    free(wc);
    if (f->n_path > 1) {
        vz_printf(b, "<li>the worst output's error comes from ");
        node_link(b, pg, f->path[f->n_path - 1]);
        vz_printf(b, " along %d nodes: ", f->n_path);
        for (int i = f->n_path - 1; i >= 0; i--) {
            if (i != f->n_path - 1) vz_put(b, " &#8594; ");
            if (i == f->n_path - 1 || i == 0 || f->n_path <= 6 || i == f->n_path - 2 || i == 1) {
                vz_put_xml(b, g->nodes[f->path[i]]->name);
            } else if (i == f->n_path - 3) {
                vz_printf(b, "&#8230; %d more", f->n_path - 4);
                i = 2;
            }
        }
        vz_put(b, " <button data-act=\"path\">show the path</button></li>");
    }
    int searched = 0;
    for (int i = 0; pg->rules && i < mpx_rules_count(pg->rules); i++) {
        const char *tx = mpx_rules_text(pg->rules, i);
        searched += tx && strstr(tx, "# search:") != NULL;
    }
    if (searched) {
        /* the fix search found: the nodes it keeps fp32, each with what the
         * ranking run saw of it (the rule's comment: "# search: <condition>
         * (own rel_l2 ...)") */
        vz_printf(b, "<li>search kept %d node%s in fp32:", searched, searched == 1 ? "" : "s");
        int shown = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            int r = p->nodes[i].colour_rule;
            const char *tx = r >= 0 && pg->rules ? mpx_rules_text(pg->rules, r) : NULL;
            const char *why = tx ? strstr(tx, "# search:") : NULL;
            if (!why) continue;
            if (shown++ == 6) {
                vz_printf(b, " &#8230; and %d more (the rules are listed with the plan)", searched - 6);
                break;
            }
            vz_put(b, shown > 1 ? "; " : " ");
            node_link(b, pg, i);
            const char *paren = strchr(why, '(');
            if (paren) {
                vz_put(b, " <span class=\"note\">");
                vz_put_xml(b, paren);
                vz_put(b, "</span>");
            }
        }
        const char *cond_text = NULL;
        for (int i = 0; pg->rules && i < mpx_rules_count(pg->rules) && !cond_text; i++) {
            const char *tx = mpx_rules_text(pg->rules, i);
            if (tx && strstr(tx, "# search:")) cond_text = strstr(tx, "# search:") + 9;
        }
        if (cond_text) {
            size_t n = strcspn(cond_text, "(");
            vz_put(b, " <span class=\"note\">to meet <code>");
            while (n > 0 && cond_text[n - 1] == ' ') n--;
            while (n > 0 && *cond_text == ' ') cond_text++, n--;
            char cond[512];
            snprintf(cond, sizeof cond, "%.*s", (int)(n < sizeof cond ? n : sizeof cond - 1), cond_text);
            vz_put_xml(b, cond);
            vz_put(b, "</code></span>");
        }
        vz_put(b, "</li>");
    }
    vz_put(b, "</ul></section>\n");
}

static void node_link(vz_buf *b, const mpx_viz_page *pg, int n) {
    /* page.js takes data-node to the node in whichever view draws it; the
     * href is the plain anchor for a reader without the script */
    vz_printf(b, "<a href=\"#n%d\" data-node=\"%d\">", n, n);
    vz_put_xml(b, pg->plan->g->nodes[n]->name);
    vz_put(b, "</a>");
}

static void layer_table(vz_buf *b, const mpx_viz_page *pg) {
    const mpx_plan *p = pg->plan;
    const mpx_graph *g = p->g;
    int rows = 0;
    vz_put(b, "<section id=\"layers\"><h2>Per-layer table</h2>");
    if (pg->n_series == 0) {
        vz_put(b, "<p class=\"note\">No run yet: the plan per node. Click a heading to sort.</p>"
                  "<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>#</th><th>order</th><th>node</th>"
                  "<th>op</th><th>colour</th><th>set by</th><th>compute</th><th>accumulate</th><th>output</th><th>MACs</th>"
                  "</tr></thead><tbody>");
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_plan_node *pn = &p->nodes[i];
            if (g->nodes[i]->op == MPX_OP_Constant || pn->folded) continue;
            char m[32];
            /* # counts the rows (the script renumbers them as they are sorted
             * and filtered); order is the node's place in the graph */
            vz_printf(b, "<tr><td class=\"num rowno\">%d</td><td class=\"num\">%d</td><td>", ++rows, i);
            node_link(b, pg, i);
            vz_put(b, "</td><td>");
            vz_put_xml(b, g->nodes[i]->op_type);
            vz_put(b, "</td><td>");
            colour_badge(b, pn->colour);
            if (pn->colour_rule >= 0) vz_printf(b, "</td><td>rule #%d", pn->colour_rule + 1);
            else vz_put(b, "</td><td>default");
            vz_printf(b, "</td><td>%s</td><td>%s</td><td>%s</td><td class=\"num\" data-v=\"%lld\">%s</td></tr>",
                      pn->is_float ? mpx_format_name(pn->compute) : "-", pn->is_float ? mpx_format_name(pn->accum) : "-",
                      pn->is_float ? mpx_format_name(pn->output) : "-", (long long)g->nodes[i]->cost.macs,
                      mpx_count_str(g->nodes[i]->cost.macs, m, sizeof m));
        }
        vz_put(b, "</tbody></table></div></section>\n");
        return;
    }
    rows = 0;
    const mpx_compare *c = pg->series[0].cmp;
    bool local = false;
    for (int k = 0; k < c->n_layers && !local; k++) local = c->layers[k].has_local;
    /* a data set: each layer's figures are its worst over the samples; the
     * table names the sample that gave the worst rel_l2 */
    int *worst_sample = NULL;
    const mpx_samples *S = c->samples;
    if (S && S->n_layers == c->n_layers && S->n_samples > 0) {
        mpx_layer *tmp = malloc((size_t)c->n_layers * sizeof *tmp);
        worst_sample = malloc((size_t)c->n_layers * sizeof *worst_sample);
        mpx_error serr;
        if (tmp && worst_sample) memcpy(tmp, c->layers, (size_t)c->n_layers * sizeof *tmp);
        if (!tmp || !worst_sample || mpx_samples_reduce(S, MPX_STAT_WORST, 0, tmp, worst_sample, &serr) != MPX_OK) {
            free(worst_sample);
            worst_sample = NULL;
        }
        free(tmp);
    }
    vz_put(b, "<p class=\"note\">One row per float tensor a node computes, in topological order (# counts the rows, "
              "order is the node's place in the graph), against the fp32 reference (");
    vz_put_xml(b, pg->series[0].label ? pg->series[0].label : "run");
    if (worst_sample)
        vz_printf(b, ", %d samples: each figure is the layer's worst over the samples; the sample column names the "
                     "one with the worst rel_l2",
                  S->n_samples);
    vz_put(b, "). The rel_l2 cell is tinted on the graph overlay's scale. Click a heading to sort; a node name "
              "shows it in the graph.</p>");
    /* filters: the choices are the values present */
    vz_put(b, "<div class=\"filters\"><input id=\"tf-text\" placeholder=\"filter by name\" aria-label=\"filter\">"
              "<select id=\"tf-op\" aria-label=\"op\"><option value=\"\">every op</option>");
    {
        bool seen_op[MPX_OP_COUNT] = {false};
        for (int k = 0; k < c->n_layers; k++) {
            int n = c->layers[k].node;
            if (n < 0 || n >= g->n_nodes) continue;
            seen_op[g->nodes[n]->op] = true;
        }
        for (int op = 0; op < MPX_OP_COUNT; op++)
            if (seen_op[op]) {
                vz_put(b, "<option>");
                vz_put_xml(b, mpx_op_name((mpx_op)op));
                vz_put(b, "</option>");
            }
    }
    vz_put(b, "</select><select id=\"tf-colour\" aria-label=\"colour\"><option value=\"\">every colour</option>");
    for (int col = 1; col < MPX_COLOUR_COUNT; col++) vz_printf(b, "<option>%s</option>", mpx_colour_name((mpx_colour)col));
    vz_put(b, "</select><select id=\"tf-format\" aria-label=\"format\"><option value=\"\">every format</option>");
    {
        const char *fmts[16];
        int nf = 0;
        for (int k = 0; k < c->n_layers; k++) {
            const char *f = mpx_format_name(c->layers[k].fmt);
            bool have = false;
            for (int j = 0; j < nf && !have; j++) have = strcmp(fmts[j], f) == 0;
            if (!have && nf < 16) fmts[nf++] = f;
        }
        for (int j = 0; j < nf; j++) vz_printf(b, "<option>%s</option>", fmts[j]);
    }
    vz_printf(b, "</select><label><input type=\"checkbox\" id=\"tf-ovf\"> only overflow</label>"
                 "<span id=\"tf-count\" class=\"note\">%d rows</span></div>",
              c->n_layers);
    vz_put(b, "<div class=\"scroll\"><table class=\"sortable\" id=\"layer-table\"><thead><tr><th>#</th>"
              "<th>order</th><th>node</th><th>op</th><th>colour</th><th>compute</th><th>tensor</th><th>format</th><th>rel_l2</th>");
    for (int s = 1; s < pg->n_series; s++) {
        vz_put(b, "<th>rel_l2 ");
        vz_put_xml(b, pg->series[s].label ? pg->series[s].label : "run");
        vz_put(b, "</th>");
    }
    if (local) vz_put(b, "<th>local rel_l2</th>");
    vz_put(b, "<th>max_abs</th><th>sqnr_db</th><th>cos</th><th>overflow</th><th>underflow</th><th>subnormal</th>");
    if (worst_sample) vz_put(b, "<th>sample</th>");
    vz_put(b, "</tr></thead><tbody>");
    bool *rowed = calloc((size_t)g->n_nodes + 1, sizeof *rowed);
    for (int k = 0; k < c->n_layers; k++) {
        const mpx_layer *l = &c->layers[k];
        if (l->node < 0 || l->node >= g->n_nodes || l->tensor < 0 || l->tensor >= g->n_tensors) continue;
        const mpx_plan_node *pn = &p->nodes[l->node];
        /* the first row of a node is the graph's way back to the table */
        if (rowed && !rowed[l->node]) {
            rowed[l->node] = true;
            vz_printf(b, "<tr id=\"row-%d\"", l->node);
        } else {
            vz_put(b, "<tr");
        }
        vz_printf(b, " data-op=\"%s\" data-colour=\"%s\" data-fmt=\"%s\" data-ovf=\"%d\">",
                  mpx_op_name(g->nodes[l->node]->op), mpx_colour_name(pn->colour), mpx_format_name(l->fmt),
                  l->m.overflow > 0);
        vz_printf(b, "<td class=\"num rowno\">%d</td><td class=\"num\">%d</td><td>", ++rows, l->node);
        node_link(b, pg, l->node);
        vz_put(b, "</td><td>");
        vz_put_xml(b, g->nodes[l->node]->op_type);
        vz_put(b, "</td><td>");
        colour_badge(b, pn->colour);
        if (pn->colour_rule >= 0) vz_printf(b, " #%d", pn->colour_rule + 1);
        vz_printf(b, "</td><td>%s</td><td><code>", pn->is_float ? mpx_format_name(pn->compute) : "-");
        vz_put_xml(b, g->tensors[l->tensor]->name);
        vz_printf(b, "</code></td><td>%s</td>", mpx_format_name(l->fmt));
        char col[8], style[64];
        vz_err_colour(vz_err_t(l->m.rel_l2), col);
        snprintf(style, sizeof style, "border-left:6px solid %s", l->m.overflow ? VZ_OVERFLOW_COLOUR : col);
        num_cell(b, l->m.rel_l2, style);
        for (int s = 1; s < pg->n_series; s++) {
            const mpx_layer *o = mpx_compare_layer(pg->series[s].cmp, l->tensor);
            num_cell(b, o ? o->m.rel_l2 : NAN, NULL);
        }
        if (local) num_cell(b, l->has_local ? l->local.rel_l2 : NAN, NULL);
        num_cell(b, l->m.max_abs, NULL);
        num_cell(b, l->m.sqnr_db, NULL);
        num_cell(b, l->m.cos, NULL);
        vz_printf(b, "<td class=\"num\"%s>%lld</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>",
                  l->m.overflow ? " style=\"background:#e1bee7\"" : "", (long long)l->m.overflow,
                  (long long)l->m.underflow, (long long)l->m.subnormal);
        if (worst_sample) {
            int id = S->id[worst_sample[k]];
            /* numbered from 1, as report --samples numbers them */
            vz_printf(b, "<td class=\"num\" data-v=\"%d\">%d", id + 1, id + 1);
            if (id >= 0 && id < pg->n_sample_labels && pg->sample_labels[id]) {
                vz_put(b, " ");
                vz_put_xml(b, pg->sample_labels[id]);
            }
            vz_put(b, "</td>");
        }
        vz_put(b, "</tr>\n");
    }
    free(rowed);
    free(worst_sample);
    vz_put(b, "</tbody></table></div></section>\n");
}

/* s as a JSON string inside <script>: '<' escaped too, so no name can
 * close the script element. */
static void put_json_str(vz_buf *b, const char *s) {
    vz_put(b, "\"");
    for (const unsigned char *q = (const unsigned char *)(s ? s : ""); *q; q++) {
        if (*q == '"' || *q == '\\') vz_printf(b, "\\%c", *q);
        else if (*q < 0x20 || *q == '<' || *q == '>' || *q == '&') vz_printf(b, "\\u%04x", *q);
        else vz_putn(b, (const char *)q, 1);
    }
    vz_put(b, "\"");
}

/* The node index page.js reads: per graph node [name, op, its id in the
 * detailed view, its box in the model view, colour, rel_l2, overflow]; tensor
 * names to their producers; the worst layer's node, the overflowing nodes,
 * the path to the cause. */
static void put_index(vz_buf *b, const mpx_viz_page *pg, const page_facts *f, char (*detail)[16],
                      char (*model)[16], const mpx_scopes *sc, const bool *has_view, const char *regions) {
    const mpx_plan *p = pg->plan;
    const mpx_graph *g = p->g;
    const vz_node_err *e = f->err;
    vz_put(b, "<script id=\"mpx-index\" type=\"application/json\">{\"nodes\":[");
    for (int i = 0; i < g->n_nodes; i++) {
        vz_put(b, i ? ",\n[" : "[");
        put_json_str(b, g->nodes[i]->name);
        vz_put(b, ",");
        put_json_str(b, g->nodes[i]->op_type);
        vz_printf(b, ",\"%s\",\"%s\",\"%s\",", detail[i], model ? model[i] : "", mpx_colour_name(p->nodes[i].colour));
        if (!e || !e[i].has) vz_put(b, "null");
        else if (!isfinite(e[i].rel_l2)) vz_put(b, "\"inf\"");
        else vz_printf(b, "%.4g", e[i].rel_l2);
        vz_printf(b, ",%lld,%d]", e ? (long long)e[i].overflow : 0LL, sc ? sc->of_node[i] : -1);
    }
    vz_put(b, "],\n\"tensors\":{");
    bool first = true;
    for (int t = 0; t < g->n_tensors; t++) {
        const mpx_tensor *x = g->tensors[t];
        if (!x->producer || p->tensors[t].constant || !x->name || !*x->name) continue;
        vz_put(b, first ? "" : ",");
        first = false;
        put_json_str(b, x->name);
        vz_printf(b, ":%d", x->producer->index);
    }
    vz_printf(b, "},\n\"worst\":%d,\"overflow\":[", f->worst ? f->worst->node : -1);
    first = true;
    for (int i = 0; e && i < g->n_nodes; i++)
        if (e[i].overflow > 0) {
            vz_printf(b, "%s%d", first ? "" : ",", i);
            first = false;
        }
    vz_put(b, "],\"path\":[");
    for (int i = 0; i < f->n_path; i++) vz_printf(b, "%s%d", i ? "," : "", f->path[i]);
    /* the scope tree the model view opens: per scope [label, parent, nodes,
     * whether the page holds its view] */
    vz_put(b, "],\"scopes\":[");
    for (int k = 0; sc && k < sc->n; k++) {
        vz_put(b, k ? ",[" : "[");
        put_json_str(b, sc->s[k].label);
        vz_printf(b, ",%d,%d,%d]", sc->s[k].parent, sc->s[k].n_total, has_view && has_view[k]);
    }
    vz_printf(b, "],\"top\":%d,\"regions\":{%s}}</script>\n", sc ? sc->top : -1, regions);
}

/* An SVG of the model view: its ids prefixed "m-" so they differ from the
 * detailed graph's on the same page. */
static void put_prefixed(vz_buf *b, const char *svg) {
    for (const char *q = svg;;) {
        const char *at = strstr(q, " id=\"");
        if (!at) {
            vz_put(b, q);
            return;
        }
        vz_putn(b, q, (size_t)(at - q) + 5);
        vz_put(b, "m-");
        q = at + 5;
    }
}

static void facts_of(const mpx_viz_page *pg, page_facts *f) {
    const mpx_graph *g = pg->plan->g;
    memset(f, 0, sizeof *f);
    if (!pg->n_series) return;
    const mpx_compare *c = pg->series[0].cmp;
    f->worst = mpx_compare_worst_layer(c, MPX_WORST_ANY);
    f->worst_out = mpx_compare_worst_layer(c, MPX_WORST_OUTPUT);
    f->err = vz_node_errors(c, g->n_nodes, false);
    for (int i = 0; f->err && i < g->n_nodes; i++) f->n_ovf += f->err[i].overflow > 0;
    if (!f->worst_out || f->worst_out->node < 0) return;
    f->path = malloc((size_t)g->n_nodes * sizeof *f->path);
    if (f->path) f->n_path = vz_cause_path(g, c, f->worst_out->node, f->path);
    if (f->n_path < 0) f->n_path = 0;
}

mpx_status mpx_viz_html(const mpx_viz_page *pg, char **out, mpx_viz_stats *stats, mpx_error *err) {
    *out = NULL;
    if (!pg || !pg->plan) return mpx_error_set(err, MPX_E_ARG, "no plan for the page");
    const mpx_plan *p = pg->plan;
    const mpx_graph *g = p->g;
    for (int s = 0; s < pg->n_series; s++)
        if (!pg->series[s].cmp || pg->series[s].cmp->g != g)
            return mpx_error_set(err, MPX_E_ARG, "the run \"%s\" belongs to another model (run again)",
                                 pg->series[s].label ? pg->series[s].label : "?");
    /* the cast graph and the plot first: their errors stop the page */
    mpx_viz_opts go;
    if (pg->graph) go = *pg->graph;
    else {
        mpx_viz_opts_default(&go);
        if (pg->n_series) go.overlay = pg->series[0].cmp;
    }
    if (!go.rules) go.rules = pg->rules;
    /* The detailed graph, and on large graphs (or when asked) the model-level
     * view in front of it. */
    int want_model = go.fold;
    go.fold = 0;
    char *svg = NULL, *msvg = NULL, *plot = NULL;
    char(*ids)[16] = NULL, (*mids)[16] = NULL;
    mpx_viz_stats gst, mst;
    page_facts facts = {NULL, NULL, NULL, 0, NULL, 0};
    mpx_scopes *sc = NULL;
    char **scope_svg = NULL; /* [sc->n] the view with scope k open, or NULL */
    bool *has_view = NULL;
    char(*kids)[16] = NULL;
    vz_buf b, regions; /* regions: the JSON of each scope view's regions */
    vz_buf_init(&b);
    vz_buf_init(&regions);
    mpx_status st = mpx_viz_svg(p, &go, &svg, &gst, err);
    /* A graph too large to lay out whole still gets its page: the model
     * view alone (the folded picture is small whatever the model's size),
     * the detailed graph left to svg --around. */
    bool too_big = st == MPX_E_LIMIT && !go.around;
    if (too_big) {
        st = MPX_OK;
        mpx_error_clear(err);
        free(svg);
        svg = NULL;
    }
    if (st) goto out;
    if (stats) *stats = gst;
    if (!go.around && !go.collapse && (too_big || gst.op_nodes > MPX_VIZ_PAGE_FOLD_NODES)) want_model = MPX_VIZ_PAGE_BOXES;
    mpx_viz_opts mo = go;
    mo.fold = want_model;
    mo.collapse = false;
    mo.legend = false; /* the page explains the colours beside it */
    mo.title = "";     /* and names the model in its header */
    /* a model with nothing to fold (100k parallel nodes): the model view is
     * too large too, and the page keeps its tables without a drawing */
    bool model_too_big = false;
    if (want_model && (st = mpx_viz_svg(p, &mo, &msvg, &mst, err))) {
        if (st != MPX_E_LIMIT || !too_big) goto out;
        model_too_big = true;
        st = MPX_OK;
        mpx_error_clear(err);
        free(msvg);
        msvg = NULL;
    }
    if (msvg && !mst.scopes && mo.fold_by == MPX_VIZ_FOLD_AUTO && mst.nodes > MPX_VIZ_PAGE_MAX_BOXES) {
        /* regions of one format each make too many boxes for a first screen
         * (a plan that alternates formats): regions of any formats, the
         * casts on the edges between them (a fold by scopes of names that
         * carry none) */
        mpx_viz_opts ro = mo;
        ro.fold_by = MPX_VIZ_FOLD_SCOPES;
        char *rsvg = NULL;
        mpx_viz_stats rst;
        if ((st = mpx_viz_svg(p, &ro, &rsvg, &rst, err))) goto out;
        if (rst.nodes < mst.nodes) {
            free(msvg);
            msvg = rsvg;
            mst = rst;
            mo = ro;
        } else {
            free(rsvg);
        }
    }
    if (msvg && mst.scopes > 0) {
        /* folded by scopes: the view of each scope opened in place, for the
         * script to show when its box is clicked; within a budget of views,
         * the shallowest first (a scope without its view opens the detailed
         * graph at its nodes) */
        if ((st = mpx_viz_scope_tree(p, &mo, &sc, err))) goto out;
        scope_svg = sc ? calloc((size_t)sc->n + 1, sizeof *scope_svg) : NULL;
        has_view = sc ? calloc((size_t)sc->n + 1, sizeof *has_view) : NULL;
        if (sc && (!scope_svg || !has_view)) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            goto out;
        }
        int views = 0;
        kids = calloc((size_t)g->n_nodes + 1, sizeof *kids);
        if (!kids) {
            st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
            goto out;
        }
        bool first_view = true;
        for (int depth = sc ? sc->s[sc->top].depth + 1 : 0; sc && views < MPX_VIZ_PAGE_SCOPE_VIEWS; depth++) {
            bool any = false;
            for (int k = 1; k < sc->n && views < MPX_VIZ_PAGE_SCOPE_VIEWS; k++) {
                if (sc->s[k].depth != depth) continue;
                any = true;
                if (mpx_scope_within(sc, sc->top, k) || !mpx_scope_within(sc, k, sc->top)) continue;
                if (sc->s[k].n_children == 0 && sc->s[k].n_nodes < 2) continue;
                mpx_viz_opts ko = mo;
                ko.open_scope = k;
                mpx_viz_stats kst;
                if ((st = mpx_viz_svg(p, &ko, &scope_svg[k], &kst, err))) goto out;
                has_view[k] = true;
                /* its regions' members, for the script to open them */
                if ((st = mpx_viz_node_ids(p, &ko, kids, err))) goto out;
                vz_printf(&regions, "%s\"%d\":[", first_view ? "" : ",", k);
                first_view = false;
                bool first_r = true;
                for (int h = 0; h < g->n_nodes; h++) {
                    if (kids[h][0] != 'r' || atoi(kids[h] + 1) != h) continue;
                    vz_printf(&regions, "%s[%d", first_r ? "" : ",", h);
                    first_r = false;
                    for (int m = h + 1; m < g->n_nodes; m++)
                        if (strcmp(kids[m], kids[h]) == 0) vz_printf(&regions, ",%d", m);
                    vz_put(&regions, "]");
                }
                vz_put(&regions, "]");
                views++;
            }
            if (!any) break;
        }
    }
    ids = calloc((size_t)g->n_nodes + 1, sizeof *ids);
    mids = msvg ? calloc((size_t)g->n_nodes + 1, sizeof *mids) : NULL;
    if (!ids || (msvg && !mids)) {
        st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        goto out;
    }
    if ((svg && (st = mpx_viz_node_ids(p, &go, ids, err))) || (msvg && (st = mpx_viz_node_ids(p, &mo, mids, err))))
        goto out;
    if (pg->n_series) {
        mpx_viz_plot_opts po;
        if (pg->plot) po = *pg->plot;
        else {
            mpx_viz_plot_opts_default(&po);
            po.marks = p;
        }
        if ((st = mpx_viz_plot(pg->series, pg->n_series, &po, &plot, err))) goto out;
    }
    facts_of(pg, &facts);

    /* the file's base name says which model at a glance; exported models'
     * own names are often generic ("Model from PaddlePaddle.") */
    const char *path = pg->model_path && *pg->model_path ? pg->model_path : g->path;
    const char *title = path ? strrchr(path, '/') : NULL;
    title = title ? title + 1 : path;
    if (!title || !*title) title = g->name && *g->name ? g->name : "model";
    vz_put(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>mpx review: ");
    vz_put_xml(&b, title);
    vz_printf(&b, "</title><style>%s</style></head><body>\n<header><h1>Precision review: ", vz_page_css);
    vz_put_xml(&b, title);
    vz_printf(&b, " &#8594; %s</h1><p>", mpx_format_name(p->opts.target));
    vz_put_xml(&b, pg->model_path ? pg->model_path : g->path);
    vz_put(&b, " &#183; written by mpx; this page is self-contained and needs no network</p></header>\n"
               "<nav><a href=\"#look\">what to look at</a><a href=\"#graph\">cast graph</a><a href=\"#model\">model</a>"
               "<a href=\"#plan\">target, rules and plan</a><a href=\"#plot\">error plot</a>"
               "<a href=\"#layers\">per-layer table</a></nav>\n<div class=\"top\">");
    look_section(&b, pg, &facts);

    vz_put(&b, "<section id=\"graph\"><h2>Cast graph</h2><div class=\"tools\">");
    if (msvg && svg)
        vz_printf(&b, "<button data-view=\"model\">model view (%d boxes)</button><button data-view=\"detail\">every "
                      "node (%d)</button>",
                  mst.nodes, gst.op_nodes);
    vz_put(&b, "<button data-act=\"fit\" title=\"the whole graph\">fit</button><button data-act=\"in\">+</button>"
               "<button data-act=\"out\">&#8722;</button><form id=\"find-form\"><input id=\"find\" list=\"names\" "
               "placeholder=\"find a node, tensor or op\" aria-label=\"find\"> <button>find</button></form>");
    if (facts.worst) vz_put(&b, "<button data-act=\"worst\">worst layer</button>");
    if (facts.n_ovf) vz_printf(&b, "<button data-act=\"ovf\">next overflow (%d)</button>", facts.n_ovf);
    if (facts.n_path > 1) vz_put(&b, "<button data-act=\"path\">path to the cause</button>");
    vz_put(&b, "</div><div id=\"info\" class=\"note\">");
    if (msvg && sc)
        vz_put(&b, "Boxes: the model's own scopes (node names, If branches) with their nodes, formats, casts, "
                   "worst error; click one to open it. ");
    else if (msvg && mo.fold_by == MPX_VIZ_FOLD_SCOPES)
        vz_printf(&b, "The model view folds the %d nodes into boxes of connected nodes (their formats listed, "
                      "casts on the edges between boxes); click a box to open it, or a node to select it. ",
                  gst.op_nodes);
    else if (msvg)
        vz_printf(&b, "The model view folds the %d nodes into boxes of nodes in the same formats with no cast "
                      "between them; click a box to open it, or a node to select it. ",
                  gst.op_nodes);
    if (too_big)
        vz_printf(&b, "The model has %d nodes to draw, more than mpx lays out whole (%d): the detailed graph is left "
                      "out%s (draw a part with <code>svg --around</code>). ",
                  gst.nodes, MPX_VIZ_LAYOUT_MAX_NODES,
                  model_too_big ? ", and so is the model view, whose boxes are as many (nodes with nothing to fold "
                                  "together)" : "");
    vz_put(&b, "Drag to pan, wheel to zoom. Fill: colour (green always low, gray low when its inputs are, clear "
               "follows its inputs, red fp32); hexagons are runtime casts; a double border marks a rule");
    if (go.overlay) vz_put(&b, "; border colour and width: the run's rel_l2 (blue small, dark red large, purple "
                               "overflow)");
    vz_put(&b, ".</div>");
    if (sc) vz_put(&b, "<div id=\"crumbs\" class=\"crumbs\"></div>");
    if (msvg) {
        vz_put(&b, "<div class=\"viewer\" id=\"view-model\">");
        put_prefixed(&b, vz_svg_body(msvg));
        vz_put(&b, "</div>");
    }
    for (int k = 0; sc && k < sc->n; k++) {
        if (!scope_svg[k]) continue;
        vz_printf(&b, "<template id=\"mv-%d\">", k);
        put_prefixed(&b, vz_svg_body(scope_svg[k]));
        vz_put(&b, "</template>");
    }
    if (svg)
        vz_printf(&b, "<div class=\"viewer\" id=\"view-detail\"%s>%s</div>", msvg ? " hidden" : "", vz_svg_body(svg));
    vz_put(&b, "<datalist id=\"names\">");
    for (int i = 0; i < g->n_nodes; i++) {
        if (!ids[i][0]) continue;
        vz_put(&b, "<option value=\"");
        vz_put_xml(&b, g->nodes[i]->name);
        vz_put(&b, "\">");
    }
    vz_put(&b, "</datalist><p class=\"note\">");
    vz_printf(&b, "%d nodes drawn", gst.nodes);
    if (gst.hidden) vz_printf(&b, " (%d Constant/folded nodes left out)", gst.hidden);
    if (gst.chains) vz_printf(&b, ", %d chains collapsed", gst.chains);
    vz_put(&b, ".</p></section></div>\n");
    model_section(&b, pg);
    plan_section(&b, pg);

    vz_put(&b, "<section id=\"plot\"><h2>Error per layer</h2>");
    if (plot) {
        run_summary(&b, pg);
        vz_printf(&b, "<div class=\"plot\">%s</div>", vz_svg_body(plot));
        worst_table(&b, pg);
    } else {
        vz_put(&b, "<p>No run yet: run the plan (<code>run</code>) to compare it with the fp32 reference.</p>");
    }
    vz_put(&b, "</section>\n");
    layer_table(&b, pg);
    vz_printf(&b, "<footer>Cast graph: %d nodes, %d edges, %d casts; built in %.0f ms, laid out in %.0f ms, rendered "
                  "in %.0f ms.</footer>\n",
              gst.nodes, gst.edges, gst.casts, gst.ms_build, gst.ms_layout, gst.ms_render);
    put_index(&b, pg, &facts, ids, mids, sc, has_view, regions.s ? regions.s : "");
    vz_printf(&b, "<script>%s</script>\n</body></html>\n", vz_page_js);
    *out = vz_buf_take(&b);
    if (!*out) st = mpx_error_set(err, MPX_E_NOMEM, "out of memory");
out:
    vz_buf_free(&b);
    free(svg);
    free(msvg);
    free(plot);
    free(ids);
    free(mids);
    free(facts.path);
    free(facts.err);
    for (int k = 0; sc && scope_svg && k < sc->n; k++) free(scope_svg[k]);
    free(scope_svg);
    free(has_view);
    free(kids);
    vz_buf_free(&regions);
    mpx_scopes_free(sc);
    return st;
}
