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

#endif
