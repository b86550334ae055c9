/* common.c - the text buffer, escaping, number formatting and the error
 * scale that the graph, the plot and the page share. */
#include "viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void vz_buf_init(vz_buf *b) { memset(b, 0, sizeof *b); }

void vz_buf_free(vz_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

char *vz_buf_take(vz_buf *b) {
    if (b->oom) {
        vz_buf_free(b);
        return NULL;
    }
    if (!b->s) {
        b->s = malloc(1);
        if (!b->s) return NULL;
        b->s[0] = '\0';
    }
    char *s = b->s;
    memset(b, 0, sizeof *b);
    return s;
}

static bool grow(vz_buf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void vz_putn(vz_buf *b, const char *s, size_t n) {
    if (!grow(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void vz_put(vz_buf *b, const char *s) { vz_putn(b, s, strlen(s)); }

void vz_printf(vz_buf *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        vz_putn(b, small, (size_t)n);
        return;
    }
    if (!grow(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void vz_put_xml(vz_buf *b, const char *s) {
    if (!s) return;
    const char *run = s;
    for (const char *p = s; *p; p++) {
        const char *rep = NULL;
        switch (*p) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: break;
        }
        if (rep) {
            vz_putn(b, run, (size_t)(p - run));
            vz_put(b, rep);
            run = p + 1;
        }
    }
    vz_put(b, run);
}

const char *vz_fig(double v, char *buf, size_t n) {
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else if (v == 0) snprintf(buf, n, "0");
    else if (fabs(v) >= 1e-3 && fabs(v) < 1e4) snprintf(buf, n, "%.4g", v);
    else snprintf(buf, n, "%.2e", v);
    return buf;
}

double vz_err_t(double e) {
    if (isnan(e) || isinf(e)) return 1.0;
    if (e <= VZ_ERR_LO) return 0.0;
    if (e >= VZ_ERR_HI) return 1.0;
    return (log10(e) - log10(VZ_ERR_LO)) / (log10(VZ_ERR_HI) - log10(VZ_ERR_LO));
}

void vz_err_colour(double t, char out[8]) {
    /* Three stops: blue (accurate), orange, dark red (worst). Not the fill
     * colours' green/red hues at the ends, so a border never reads as a colour
     * class; the ends differ in lightness too, for grayscale prints. */
    static const double stop[3][3] = {{69, 117, 180}, {253, 174, 97}, {165, 0, 38}};
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    int k = t < 0.5 ? 0 : 1;
    double u = t < 0.5 ? t / 0.5 : (t - 0.5) / 0.5;
    int rgb[3];
    for (int i = 0; i < 3; i++) rgb[i] = (int)lround(stop[k][i] + (stop[k + 1][i] - stop[k][i]) * u);
    snprintf(out, 8, "#%02x%02x%02x", rgb[0] & 0xff, rgb[1] & 0xff, rgb[2] & 0xff);
}

const char *vz_fill(mpx_colour c) {
    switch (c) {
    case MPX_COLOUR_GREEN: return "#a5d6a7";
    case MPX_COLOUR_GRAY: return "#bdbdbd";
    case MPX_COLOUR_CLEAR: return "#ffffff";
    case MPX_COLOUR_RED: return "#ef9a9a";
    default: return "#ffffff";
    }
}

vz_node_err *vz_node_errors(const mpx_compare *cmp, int n_nodes, bool local) {
    vz_node_err *e = calloc(n_nodes > 0 ? (size_t)n_nodes : 1u, sizeof *e);
    if (!e) return NULL;
    for (int i = 0; i < cmp->n_layers; i++) {
        const mpx_layer *l = &cmp->layers[i];
        if (l->node < 0 || l->node >= n_nodes) continue;
        const mpx_metrics *m = local && l->has_local ? &l->local : &l->m;
        vz_node_err *x = &e[l->node];
        double r = isnan(m->rel_l2) ? INFINITY : m->rel_l2;
        if (!x->has || r > x->rel_l2) x->rel_l2 = r;
        x->has = true;
        x->overflow += m->overflow;
        x->underflow += m->underflow;
    }
    return e;
}

double vz_metric(const mpx_metrics *m, mpx_viz_metric k) {
    if (k == MPX_METRIC_cos) return isnan(m->cos) ? INFINITY : 1.0 - m->cos;
    return mpx_metric_value(m, k);
}

const char *vz_svg_body(const char *svg) {
    const char *p = strstr(svg, "<svg");
    return p ? p : svg;
}

double vz_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int vz_cause_path(const mpx_graph *g, const mpx_compare *c, int end, int *path) {
    int n = g->n_nodes;
    if (end < 0 || end >= n) return 0;
    double *own = malloc((size_t)n * sizeof *own), *inh = malloc((size_t)n * sizeof *inh);
    char *up = calloc((size_t)n, 1), *down = calloc((size_t)n, 1);
    int cause = -1, len = -1;
    if (!own || !inh || !up || !down) goto out;
    for (int i = 0; i < n; i++) own[i] = inh[i] = -1;
    bool any = false;
    for (int k = 0; k < c->n_layers; k++) {
        const mpx_layer *l = &c->layers[k];
        if (l->node < 0 || l->node >= n) continue;
        double r = isnan(l->m.rel_l2) ? INFINITY : l->m.rel_l2;
        if (r > inh[l->node]) inh[l->node] = r;
        if (!l->has_local) continue;
        any = true;
        r = isnan(l->local.rel_l2) ? INFINITY : l->local.rel_l2;
        if (r > own[l->node]) own[l->node] = r;
    }
    len = 0;
    if (!any) goto out;
    /* ancestors of end (graph order is topological: one backward sweep) */
    up[end] = 1;
    for (int i = end; i >= 0; i--) {
        if (!up[i]) continue;
        const mpx_node *nd = g->nodes[i];
        for (int k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] && nd->inputs[k]->producer) up[nd->inputs[k]->producer->index] = 1;
    }
    for (int i = 0; i <= end; i++)
        if (up[i] && own[i] > 0 && (cause < 0 || own[i] > own[cause])) cause = i;
    if (cause < 0) goto out;
    /* nodes between the cause and end: descendants of the cause among the ancestors */
    down[cause] = 1;
    for (int i = cause; i <= end; i++) {
        if (!down[i]) continue;
        const mpx_node *nd = g->nodes[i];
        for (int k = 0; k < nd->n_outputs; k++) {
            const mpx_tensor *t = nd->outputs[k];
            for (int q = 0; t && q < t->n_consumers; q++)
                if (up[t->consumers[q]->index]) down[t->consumers[q]->index] = 1;
        }
    }
    for (int at = end; at >= 0;) {
        path[len++] = at;
        if (at == cause) break;
        const mpx_node *nd = g->nodes[at];
        int best = -1;
        for (int k = 0; k < nd->n_inputs; k++) {
            const mpx_tensor *t = nd->inputs[k];
            int p = t && t->producer ? t->producer->index : -1;
            if (p >= 0 && down[p] && (best < 0 || inh[p] > inh[best])) best = p;
        }
        at = best; /* never -1: every node between has an input from between */
    }
out:
    free(own);
    free(inh);
    free(up);
    free(down);
    return len;
}
