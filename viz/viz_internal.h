/* viz_internal.h - what the files of viz/ share: a growing text buffer with
 * escaping for the three output languages (DOT labels, XML/SVG, HTML), the
 * per-node overlay figures and the error-to-colour scale. Only viz/ includes it.
 *
 * Ownership: a vz_buf owns its malloc'ed text; vz_buf_take hands it over
 * (the caller frees it), vz_buf_free drops it. Out of memory is sticky: once
 * an append fails every later append is a no-op and vz_buf_take returns NULL,
 * so builders check once at the end instead of after every line. */
#ifndef MPX_VIZ_INTERNAL_H
#define MPX_VIZ_INTERNAL_H

#include "mpx_viz.h"

#include <stdarg.h>
#include <stddef.h>

typedef struct vz_buf {
    char *s;
    size_t len, cap;
    bool oom;
} vz_buf;

void vz_buf_init(vz_buf *b);
void vz_buf_free(vz_buf *b);
/* The text (NUL-terminated, caller frees), or NULL after an out of memory. */
char *vz_buf_take(vz_buf *b);
void vz_put(vz_buf *b, const char *s);
void vz_putn(vz_buf *b, const char *s, size_t n);
void vz_printf(vz_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' escaped: safe in XML/HTML text and attribute values. */
void vz_put_xml(vz_buf *b, const char *s);

/* "3.2e-03" style figure for labels and tables: "0", "inf", "nan" spelled out. */
const char *vz_fig(double v, char *buf, size_t n);

/* The error scale shared by the graph overlay, the plot and the HTML table:
 * log10(rel_l2) from VZ_ERR_LO (best) to VZ_ERR_HI (worst), clamped, as
 * t in [0, 1]; 0 and below-range errors give 0, inf/NaN give 1. */
/* fp16's own rounding gives 1e-4..1e-3: the middle of the scale, so what is
 * worse than rounding turns warm and 10% or more is dark red. */
#define VZ_ERR_LO 1e-6
#define VZ_ERR_HI 1.0
double vz_err_t(double rel_l2);
/* "#rrggbb" on the scale blue (t = 0) -> orange -> dark red (t = 1). */
void vz_err_colour(double t, char out[8]);

/* Fill colours of the four node colours (and of Cast nodes) in every output,
 * so the graph, the plot and the page agree. */
const char *vz_fill(mpx_colour c);
#define VZ_CAST_FILL "#ffd54f"
#define VZ_IO_FILL "#cfe2f3"
#define VZ_OVERFLOW_COLOUR "#7b1fa2"

/* Per node: the worst layer of a compare (max rel_l2 over the node's float
 * outputs; inf when any overflowed) and its overflow/underflow counts. */
typedef struct vz_node_err {
    bool has;           /* the node has at least one compared layer */
    double rel_l2;
    int64_t overflow, underflow;
} vz_node_err;

/* [g->n_nodes] figures for cmp (NULL when out of memory). local picks the
 * local metrics of layers that have them. */
vz_node_err *vz_node_errors(const mpx_compare *cmp, int n_nodes, bool local);

/* The path along which the error at node `end` was inherited from its cause:
 * the cause is the ancestor of end (or end itself) with the largest own
 * (local) rel_l2; from end the path steps back through the input whose
 * producer has the largest rel_l2, staying on nodes that lie between the
 * cause and end, until it reaches the cause. path (room for g->n_nodes)
 * receives end first and the cause last. Returns the length; 0 when c has no
 * local figures (run --local measures them) or no ancestor has an own
 * error; -1 when out of memory. */
int vz_cause_path(const mpx_graph *g, const mpx_compare *c, int end, int *path);

/* The metric value of a layer (for the plot and the table). */
double vz_metric(const mpx_metrics *m, mpx_viz_metric k);

/* The SVG text without its XML prolog and DOCTYPE, for inlining in HTML. */
const char *vz_svg_body(const char *svg);

double vz_now_ms(void);

/* ---- plotting (viz/plot_svg.c): what plot.c and pareto.c share ---------------- */

typedef struct vz_box {
    double x0, y0, x1, y1; /* pixels, y down */
} vz_box;

bool vz_boxes_meet(vz_box a, vz_box b);   /* the interiors overlap */
bool vz_box_inside(vz_box in, vz_box out);

typedef enum vz_anchor { VZ_START, VZ_MIDDLE, VZ_END } vz_anchor;
/* Text extends this share of its font size above and below its baseline. */
#define VZ_ASCENT 0.76
#define VZ_DESCENT 0.24
/* An estimate that is never narrower than a browser's text (see plot_svg.c). */
double vz_text_width(const char *s, double font);
/* The box of text drawn at (x, y), y its baseline. */
vz_box vz_text_box(const char *s, double font, double x, double y, vz_anchor anchor);

/* The XML prolog, the <svg> root (w x h), its <title> and a white page. */
void vz_svg_open(vz_buf *b, int w, int h, const char *title);
/* The bold heading above the frame, from x. */
void vz_svg_heading(vz_buf *b, double x, const char *text);

/* A frame with x linear from xlo to xhi and y linear or on a log scale
 * (lo/hi: decades when logy). On a log scale values of 0 (exact) sit in a
 * lane of their own below the range, at yz; infinite or NaN ones on the top
 * edge, so none disappears. */
typedef struct vz_axes {
    double x0, x1;  /* the frame's left and right */
    double y0, y1;  /* its top; the bottom of the value range */
    double yz, yb;  /* the lane of zeros; the frame's bottom */
    double xlo, xhi;
    bool logy;
    double lo, hi;
} vz_axes;

void vz_axes_frame(vz_axes *a, double x0, double y0, double x1, double yb, bool logy);
/* The range to show values vmin..vmax (finite; positive on a log scale):
 * whole decades, or tens with a margin; at least min_span of them. */
void vz_axes_range(vz_axes *a, double vmin, double vmax, double min_span);
double vz_axes_x(const vz_axes *a, double v);
/* *edge: -1 clamped to the bottom (zero lane), +1 to the top (inf, NaN). */
double vz_axes_y(const vz_axes *a, double v, int *edge);
vz_box vz_axes_area(const vz_axes *a);
/* Grid, tick labels ("1e-3" or figures), the zero lane and the y label. */
void vz_axes_draw_y(vz_buf *b, const vz_axes *a, const char *label);
/* Tick labels every step from xlo (unit appended; vertical grid lines if
 * grid) at tick_y, and the x label at label_y. */
void vz_axes_draw_x(vz_buf *b, const vz_axes *a, double step, const char *unit, bool grid, double tick_y,
                    const char *label, double label_y);
/* The frame (class "frame"): drawn after what lies behind the lines. */
void vz_axes_draw_frame(vz_buf *b, const vz_axes *a);

/* A legend row: an SVG mark drawn with its origin at the left middle of a
 * 24 px wide slot, and its text. */
typedef struct vz_key {
    const char *mark;
    const char *text;
} vz_key;
/* The legend (id "plot-legend", its box class "legend-box") with its top
 * left at (x, y); its box. b NULL: only the box, to place it first. */
vz_box vz_legend(vz_buf *b, const char *heading, double x, double y, const vz_key *keys, int n);

/* Greedy label placement: each label takes the first candidate position
 * around its point (rings of growing distance, eight directions each) that
 * stays inside the area and meets no placed label and nothing blocked,
 * preferring positions that cover the fewest plotted points; a point with
 * no such position stays unlabelled. */
typedef struct vz_labeler {
    vz_box area;
    vz_box *taken; /* placed labels and blocked boxes */
    int n_taken, cap;
    const double *soft; /* x, y pairs of plotted points (borrowed) */
    int n_soft;
    bool oom;
} vz_labeler;

typedef struct vz_label {
    double x, y; /* the text's anchor on its baseline */
    vz_anchor anchor;
    vz_box box;
    bool leader; /* far from its point: drawn with a line to it */
} vz_label;

void vz_labeler_init(vz_labeler *L, vz_box area, const double *soft_xy, int n_soft);
void vz_labeler_free(vz_labeler *L);
void vz_labeler_block(vz_labeler *L, vz_box b);
/* A place for text naming the point (px, py), whose mark has radius r. */
bool vz_labeler_place(vz_labeler *L, double px, double py, double r, const char *text, double font, vz_label *out);
/* <text class="label"> with explicit x, y, font-size and text-anchor (so its
 * box can be checked from the SVG alone) and its leader line, in colour. */
void vz_label_draw(vz_buf *b, const vz_label *l, double px, double py, const char *text, double font,
                   const char *colour);

#endif
