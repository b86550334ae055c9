/* plot_svg.c - what the two hand-written SVG plots share: the per-layer
 * error plot (plot.c) and a sweep's error against MACs low (pareto.c). The
 * document head, axes on a log (or linear) value scale with a lane for exact
 * zeros, the frame, the legend, and labels placed so that they overlap
 * nothing. Coordinates are written with one decimal, so the text is the same
 * on every machine. */
#include "viz_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- text boxes ---------------------------------------------------------------- */

/* No font is at hand when the SVG is written, so widths are estimated from a
 * table: DejaVu Sans's advances (hundredths of an em, ASCII 32..126). It is
 * the widest of the usual matches of "Helvetica,Arial,sans-serif" (and what
 * Linux browsers fall back to), so a box is never narrower than the text. */
static const unsigned char ascii_width[95] = {
    32, 40, 46, 84, 64, 95, 78, 28, 39, 39, 50, 84, 32, 36, 32, 34,  /*  !"#$%&'()*+,-./ */
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34, 84, 84, 84, 53,  /* 0-9 :;<=>? */
    100, 68, 69, 70, 77, 63, 58, 78, 75, 30, 30, 66, 56, 86, 75, 79, /* @A-O */
    60, 79, 70, 64, 61, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50,  /* P-Z [\]^_ */
    50, 61, 64, 55, 64, 62, 35, 64, 63, 28, 28, 58, 28, 97, 63, 61,  /* `a-o */
    64, 64, 41, 52, 39, 63, 59, 82, 59, 59, 53, 64, 34, 64, 84,      /* p-z {|}~ */
};

double vz_text_width(const char *s, double font) {
    double em = 0;
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p >= 32 && *p < 127) em += ascii_width[*p - 32] / 100.0;
        else if ((*p & 0xc0) != 0x80) em += 1.0; /* one per code point: wide, to be safe */
    }
    return em * font;
}

vz_box vz_text_box(const char *s, double font, double x, double y, vz_anchor anchor) {
    double w = vz_text_width(s, font);
    double left = anchor == VZ_START ? x : anchor == VZ_END ? x - w : x - w / 2;
    return (vz_box){left, y - VZ_ASCENT * font, left + w, y + VZ_DESCENT * font};
}

bool vz_boxes_meet(vz_box a, vz_box b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

bool vz_box_inside(vz_box in, vz_box out) {
    return in.x0 >= out.x0 && in.x1 <= out.x1 && in.y0 >= out.y0 && in.y1 <= out.y1;
}

static vz_box grow_box(vz_box b, double d) { return (vz_box){b.x0 - d, b.y0 - d, b.x1 + d, b.y1 + d}; }

static const char *anchor_name(vz_anchor a) { return a == VZ_START ? "start" : a == VZ_END ? "end" : "middle"; }

/* ---- document and axes ----------------------------------------------------------- */

void vz_svg_open(vz_buf *b, int w, int h, const char *title) {
    vz_printf(b,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
              "font-family=\"Helvetica,Arial,sans-serif\" font-size=\"12\">\n<title>",
              w, h, w, h);
    vz_put_xml(b, title);
    vz_printf(b, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
}

void vz_svg_heading(vz_buf *b, double x, const char *text) {
    vz_printf(b, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", x);
    vz_put_xml(b, text);
    vz_put(b, "</text>\n");
}

void vz_axes_frame(vz_axes *a, double x0, double y0, double x1, double yb, bool logy) {
    a->x0 = x0;
    a->x1 = x1;
    a->y0 = y0;
    a->yb = yb;
    a->logy = logy;
    /* A log axis keeps a lane below its range for exact (zero) values. */
    a->y1 = logy ? yb - 22 : yb;
    a->yz = logy ? yb - 8 : yb;
}

void vz_axes_range(vz_axes *a, double vmin, double vmax, double min_span) {
    if (a->logy) {
        if (!(vmin > 0 && vmin <= vmax && isfinite(vmax))) {
            a->lo = -8, a->hi = 0;
            return;
        }
        a->lo = floor(log10(vmin));
        a->hi = ceil(log10(vmax));
        if (a->hi - a->lo < min_span) a->lo = a->hi - min_span;
        return;
    }
    if (!(vmin <= vmax) || !isfinite(vmin) || !isfinite(vmax)) {
        a->lo = 0, a->hi = 100;
        return;
    }
    double pad = (vmax - vmin) * 0.05 + 1;
    a->lo = floor((vmin - pad) / 10) * 10;
    a->hi = ceil((vmax + pad) / 10) * 10;
    if (a->hi - a->lo < min_span) a->hi = a->lo + min_span;
}

double vz_axes_x(const vz_axes *a, double v) {
    if (!(a->xhi > a->xlo)) return (a->x0 + a->x1) / 2;
    if (v < a->xlo) v = a->xlo;
    if (v > a->xhi) v = a->xhi;
    return a->x0 + (a->x1 - a->x0) * (v - a->xlo) / (a->xhi - a->xlo);
}

double vz_axes_y(const vz_axes *a, double v, int *edge) {
    *edge = 0;
    double y;
    if (isnan(v) || (isinf(v) && v > 0)) {
        *edge = 1;
        return a->y0;
    }
    if (a->logy) {
        if (v <= 0) {
            *edge = -1;
            return a->yz;
        }
        y = log10(v);
    } else {
        if (isinf(v)) {
            *edge = -1;
            return a->y1;
        }
        y = v;
    }
    if (y < a->lo) {
        *edge = -1;
        return a->logy ? a->yz : a->y1;
    }
    if (y > a->hi) {
        *edge = 1;
        return a->y0;
    }
    return a->y1 - (a->y1 - a->y0) * (y - a->lo) / (a->hi - a->lo);
}

vz_box vz_axes_area(const vz_axes *a) { return (vz_box){a->x0, a->y0, a->x1, a->yb}; }

void vz_axes_draw_y(vz_buf *b, const vz_axes *a, const char *label) {
    /* about ten grid lines: decades on a log scale, tens (doubled) on a linear one */
    double step = a->logy ? 1 : 10;
    while ((a->hi - a->lo) / step > 10) step = a->logy ? step + 1 : step * 2;
    int n = 0;
    double ys[48], vs[48];
    for (double v = a->lo; v <= a->hi + 1e-9 && n < 48; v += step, n++) {
        int edge;
        vs[n] = v;
        ys[n] = vz_axes_y(a, a->logy ? pow(10, v) : v, &edge);
    }
    vz_put(b, "<g id=\"plot-grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    for (int i = 0; i < n; i++)
        vz_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", a->x0, ys[i], a->x1, ys[i]);
    vz_put(b, "</g>\n<g id=\"plot-ticks\" font-size=\"11\" text-anchor=\"end\" fill=\"#424242\">\n");
    for (int i = 0; i < n; i++) {
        if (a->logy) vz_printf(b, "<text x=\"%.1f\" y=\"%.1f\">1e%d</text>\n", a->x0 - 6, ys[i] + 4, (int)lround(vs[i]));
        else vz_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%g</text>\n", a->x0 - 6, ys[i] + 4, vs[i]);
    }
    vz_put(b, "</g>\n");
    if (a->logy)
        vz_printf(b,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bdbdbd\" stroke-dasharray=\"3,3\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#424242\">0</text>\n",
                  a->x0, a->yz, a->x1, a->yz, a->x0 - 6, a->yz + 4);
    double mid = (a->y0 + a->y1) / 2;
    vz_printf(b, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">", mid, mid);
    vz_put_xml(b, label);
    vz_put(b, "</text>\n");
}

void vz_axes_draw_x(vz_buf *b, const vz_axes *a, double step, const char *unit, bool grid, double tick_y,
                    const char *label, double label_y) {
    if (!(step > 0)) step = 1;
    if (grid) {
        vz_put(b, "<g stroke=\"#eeeeee\" stroke-width=\"1\">\n");
        for (double v = a->xlo; v <= a->xhi + 1e-9; v += step)
            vz_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", vz_axes_x(a, v), a->y0,
                      vz_axes_x(a, v), a->yb);
        vz_put(b, "</g>\n");
    }
    vz_put(b, "<g font-size=\"11\" text-anchor=\"middle\" fill=\"#424242\">\n");
    for (double v = a->xlo; v <= a->xhi + 1e-9; v += step)
        vz_printf(b, "<text x=\"%.1f\" y=\"%.1f\">%g%s</text>\n", vz_axes_x(a, v), tick_y, v, unit ? unit : "");
    vz_put(b, "</g>\n");
    vz_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (a->x0 + a->x1) / 2, label_y);
    vz_put_xml(b, label);
    vz_put(b, "</text>\n");
}

void vz_axes_draw_frame(vz_buf *b, const vz_axes *a) {
    vz_printf(b,
              "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
              "stroke=\"#616161\"/>\n",
              a->x0, a->y0, a->x1 - a->x0, a->yb - a->y0);
}

/* ---- legend ---------------------------------------------------------------------- */

enum { KEY_ROW = 17, KEY_MARK = 24 };

vz_box vz_legend(vz_buf *b, const char *heading, double x, double y, const vz_key *keys, int n) {
    double w = heading ? vz_text_width(heading, 11) : 0;
    for (int i = 0; i < n; i++) {
        double t = KEY_MARK + 6 + vz_text_width(keys[i].text, 11);
        if (t > w) w = t;
    }
    double h = (heading ? KEY_ROW : 0) + KEY_ROW * n + 8;
    vz_box box = {x, y, x + w + 12, y + h};
    if (!b) return box;
    vz_printf(b,
              "<g id=\"plot-legend\" font-size=\"11\">\n<rect class=\"legend-box\" x=\"%.1f\" y=\"%.1f\" "
              "width=\"%.1f\" height=\"%.1f\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#e0e0e0\"/>\n",
              box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0);
    double ly = y + 4 + KEY_ROW - 4; /* baseline of the first row */
    if (heading) {
        vz_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">", x + 6, ly);
        vz_put_xml(b, heading);
        vz_put(b, "</text>\n");
        ly += KEY_ROW;
    }
    for (int i = 0; i < n; i++, ly += KEY_ROW) {
        /* the mark's origin: the left of its 24 px, on the middle of the text */
        vz_printf(b, "<g transform=\"translate(%.1f %.1f)\">%s</g><text x=\"%.1f\" y=\"%.1f\">", x + 6, ly - 4,
                  keys[i].mark, x + 6 + KEY_MARK + 6, ly);
        vz_put_xml(b, keys[i].text);
        vz_put(b, "</text>\n");
    }
    vz_put(b, "</g>\n");
    return box;
}

/* ---- labels without overlap ------------------------------------------------------- */

void vz_labeler_init(vz_labeler *L, vz_box area, const double *soft_xy, int n_soft) {
    memset(L, 0, sizeof *L);
    L->area = area;
    L->soft = soft_xy;
    L->n_soft = n_soft;
}

void vz_labeler_free(vz_labeler *L) {
    free(L->taken);
    memset(L, 0, sizeof *L);
}

void vz_labeler_block(vz_labeler *L, vz_box b) {
    if (L->n_taken == L->cap) {
        int cap = L->cap ? L->cap * 2 : 16;
        vz_box *t = realloc(L->taken, (size_t)cap * sizeof *t);
        if (!t) {
            L->oom = true; /* a label then may overlap what was not recorded; nothing worse */
            return;
        }
        L->taken = t;
        L->cap = cap;
    }
    L->taken[L->n_taken++] = b;
}

static int soft_covered(const vz_labeler *L, vz_box b) {
    int n = 0;
    b = grow_box(b, 1.5);
    for (int i = 0; i < L->n_soft; i++) {
        double x = L->soft[2 * i], y = L->soft[2 * i + 1];
        n += x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1;
    }
    return n;
}

/* Rings of distance from the point, and eight directions on each; the
 * first rings read as the point's label, the outer ones get a leader line. */
static const double ring[] = {3, 14, 30, 50, 76, 110};
static const int dir[8][2] = {{1, 0}, {-1, 0}, {1, -1}, {-1, -1}, {1, 1}, {-1, 1}, {0, -1}, {0, 1}};

bool vz_labeler_place(vz_labeler *L, double px, double py, double r, const char *text, double font, vz_label *out) {
    int best_cost = -1;
    vz_label best = {0};
    for (size_t k = 0; k < sizeof ring / sizeof ring[0] && best_cost != 0; k++)
        for (int d = 0; d < 8 && best_cost != 0; d++) {
            double dist = r + ring[k], dx = dir[d][0], dy = dir[d][1];
            if (dx != 0 && dy != 0) dist *= 0.75; /* diagonals: the box's corner about as far */
            vz_label c;
            c.anchor = dx > 0 ? VZ_START : dx < 0 ? VZ_END : VZ_MIDDLE;
            c.x = px + dx * dist;
            /* baseline: the box beside (dy = 0), above or below the point */
            c.y = dy == 0 ? py + (VZ_ASCENT - VZ_DESCENT) * font / 2
                  : dy < 0 ? py - dist - VZ_DESCENT * font
                           : py + dist + VZ_ASCENT * font;
            c.box = vz_text_box(text, font, c.x, c.y, c.anchor);
            c.leader = k >= 2;
            if (!vz_box_inside(c.box, L->area)) continue;
            bool hit = false;
            for (int i = 0; i < L->n_taken && !hit; i++) hit = vz_boxes_meet(c.box, L->taken[i]);
            if (hit) continue;
            /* fewest plotted points covered; at equal cost the nearer, earlier candidate */
            int cost = soft_covered(L, c.box);
            if (best_cost < 0 || cost < best_cost) best_cost = cost, best = c;
        }
    if (best_cost < 0) return false;
    *out = best;
    /* two pixels of air to the next label */
    vz_labeler_block(L, grow_box(best.box, 2));
    return true;
}

void vz_label_draw(vz_buf *b, const vz_label *l, double px, double py, const char *text, double font,
                   const char *colour) {
    if (l->leader) {
        /* from the point to the nearest point of the box */
        double bx = px < l->box.x0 ? l->box.x0 : px > l->box.x1 ? l->box.x1 : px;
        double by = py < l->box.y0 ? l->box.y0 : py > l->box.y1 ? l->box.y1 : py;
        vz_printf(b,
                  "<line class=\"leader\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                  "stroke-width=\"0.8\"/>\n",
                  px, py, bx, by, colour);
    }
    vz_printf(b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"%s\" fill=\"%s\">", l->x,
              l->y, font, anchor_name(l->anchor), colour);
    vz_put_xml(b, text);
    vz_put(b, "</text>\n");
}
