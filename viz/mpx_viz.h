/* mpx_viz.h - pictures of a precision plan: the cast graph as DOT (built with
 * Graphviz's libcgraph) and SVG (laid out and rendered in-process by libgvc),
 * the per-layer error plot (SVG written by mpx itself) and the self-contained
 * HTML review page.
 *
 * Ownership: every function that makes text returns it in *out, malloc'ed and
 * NUL-terminated; the caller frees it with free(). Nothing else is allocated
 * across calls. The plan, compares and rules passed in are borrowed for the
 * call only.
 *
 * Nothing in viz/ prints, exits or reads stdin: functions return an mpx_status
 * and fill an mpx_error. Graphviz's own warnings are caught (not written to
 * stderr) and an error from it is returned in the mpx_error.
 *
 * Not thread-safe: Graphviz keeps global state (its error handler, and the
 * one layout context viz keeps for the life of the process; see graph.c).
 *
 * Determinism: the DOT text of a plan depends only on the plan, the options
 * and the compare given (ids from graph indices, nodes and edges in graph
 * order), never on layout, time or addresses, so it can be compared with
 * expected text.
 *
 * Node ids in DOT and in the SVG's <title> elements:
 *   n<i>   op node i (graph node index)        c<i>  a collapsed chain whose first node is i
 *   r<i>   a folded region whose first node is i
 *   s<i>   stub: node i, just outside --around  k<j>  runtime cast j (plan->casts[j])
 *   in<i>  model input i (g->inputs)            out<i> model output i (g->outputs)
 *   w<t>   constant tensor t (with weights on)  legend the legend
 *   n<i>b<j>  node j of node i's body (Loop, Scan, SequenceMap; nested
 *             bodies add b<k> again), n<i>i<k> / n<i>o<k> the body's
 *             input and output k; the body is the cluster cluster_body:n<i>
 */
#ifndef MPX_VIZ_H
#define MPX_VIZ_H

#include "mpx_colour.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the cast graph (viz/graph.c) ---------------------------------------- */

/* How many boxes the model-level view aims at by default (mpx_viz_opts.fold). */
#define MPX_VIZ_FOLD_BOXES 16

typedef struct mpx_viz_opts {
    /* Only the neighbourhood of one node: the nodes within `depth` data edges
     * of it (either direction); nodes one step further are drawn as dashed
     * stubs so the cut is visible. NULL: the whole graph. */
    const char *around;
    int depth;
    /* With around and an overlay that has local figures (run --local): also
     * draw the path along which the centre's error was inherited from its
     * cause, the upstream node with the largest own (local) error, however
     * far it lies; the path's edges are drawn bold red and the cause named. */
    bool to_cause;
    bool shapes;        /* edge labels add the tensor's shape */
    /* Collapse chains (a -> b where a's only data consumer is b and b's only
     * data producer is a) of nodes with the same compute and output format
     * and no cast between them into one node. */
    bool collapse;
    /* The model-level view: fold the graph into regions, convex groups of
     * connected nodes with the same compute and output format and no cast
     * between them, each drawn as one box that says what it holds (op
     * counts, colour shares, worst error). fold is about how many boxes the
     * regions make (each holds at most 1/fold of the drawn nodes; the CLI's
     * --fold and the page use MPX_VIZ_FOLD_BOXES); 0: off. Casts, model
     * inputs and outputs, the --around centre and nodes a name: rule set
     * (per-node overrides, search's fp32 set) stay visible. Replaces
     * collapse. */
    int fold;
    /* Group nodes into nested clusters by the first `cluster` components of
     * their names split at '/' (/backbone/stage2/conv3/Conv -> backbone,
     * backbone/stage2). 0: no clusters. */
    int cluster;
    bool weights;       /* draw constant float inputs as nodes (default: a mark on the reader) */
    bool all;           /* also draw Constant nodes and nodes folded at load */
    bool legend;        /* the legend node (default on) */
    /* The per-layer error overlay (rel_l2 of each node's worst output on the
     * log scale VZ_ERR_LO..HI as border colour and width, overflow and
     * underflow marked). NULL: none. Must be a compare of plan->g. */
    const mpx_compare *overlay;
    bool overlay_local; /* overlay the local error where the compare has it */
    /* The plan's rules, for rule text in node tooltips (NULL: "rule #n" only). */
    const mpx_rules *rules;
    /* Graph title (NULL: the model's name, target and plan summary). */
    const char *title;
    /* Layout engine for SVG: "dot" (default, layered), or "sfdp"/"neato"
     * for very large graphs. */
    const char *engine;
} mpx_viz_opts;

/* everything off, legend on, engine "dot". */
void mpx_viz_opts_default(mpx_viz_opts *o);

/* What was drawn and how long it took. */
typedef struct mpx_viz_stats {
    int nodes;          /* graph nodes drawn (ops, chains, stubs, casts, inputs, outputs, weights) */
    int op_nodes;       /* plan nodes drawn (inside chains included) */
    int edges;
    int casts;          /* runtime cast nodes drawn */
    int hidden;         /* Constant/folded nodes left out (see opts.all) */
    int chains;         /* collapsed chains or folded regions (each counts once in nodes) */
    int clusters;
    double ms_build;    /* building the cgraph */
    double ms_layout;   /* gvLayout (SVG only) */
    double ms_render;   /* agwrite or gvRenderData */
    size_t bytes;       /* length of the text returned */
} mpx_viz_stats;

/* The cast graph of plan as DOT text. stats may be NULL. Errors: --around
 * naming no node (the message says so), a negative depth, an overlay of
 * another graph, out of memory. */
mpx_status mpx_viz_dot(const mpx_plan *plan, const mpx_viz_opts *o, char **out,
                       mpx_viz_stats *stats, mpx_error *err);
/* Which drawn node stands for each graph node under o: ids[i] (of
 * g->n_nodes) receives its DOT/SVG id ("n12", "c12", "r12", "s12"), or ""
 * when node i is not drawn. What the review page's script uses to go from a
 * node to its box. */
mpx_status mpx_viz_node_ids(const mpx_plan *plan, const mpx_viz_opts *o, char (*ids)[16], mpx_error *err);
/* The most nodes (ops, casts, inputs, outputs... as mpx_viz_stats.nodes
 * counts them) mpx_viz_svg gives Graphviz to lay out. dot's time grows
 * faster than the node count (a 5,000-node chain: 6 s; 100,000: no answer in
 * minutes) and a million-node graph overflows its stack, so beyond this the
 * drawing is refused, naming the count and the ways to draw less: the
 * model-level view (--fold) or a neighbourhood (--around). */
#define MPX_VIZ_LAYOUT_MAX_NODES 10000

/* The same graph laid out and rendered to SVG in-process; more than
 * MPX_VIZ_LAYOUT_MAX_NODES drawn nodes: MPX_E_LIMIT before any layout. */
mpx_status mpx_viz_svg(const mpx_plan *plan, const mpx_viz_opts *o, char **out,
                       mpx_viz_stats *stats, mpx_error *err);

/* ---- per-layer error plot (viz/plot.c) ------------------------------------- */

/* The plot's metric is one of numerics' (numerics/metrics.def; by name with
 * mpx_metric_by_name); cos is plotted as 1 - cos on a log scale, sqnr_db on
 * a linear one, the others on a log scale. */
typedef mpx_metric_id mpx_viz_metric;

/* One line of the plot: a run (compare) and its legend text ("fp16"). */
typedef struct mpx_viz_series {
    const char *label;
    const mpx_compare *cmp;
} mpx_viz_series;

typedef struct mpx_viz_plot_opts {
    mpx_viz_metric metric;   /* default rel_l2 */
    bool local;              /* also each series' own (local) error, dashed, where the compares have it */
    /* Casts and red nodes to mark along the x axis (the plan the runs ran
     * under); NULL: no marks. Must be a plan of the compares' graph. */
    const mpx_plan *marks;
    const char *title;       /* NULL: "<metric> per layer" */
    int width, height;       /* pixels; 0: 1100 x 440 */
} mpx_viz_plot_opts;

void mpx_viz_plot_opts_default(mpx_viz_plot_opts *o);

/* SVG of the metric of every compared layer against the position of its node
 * in topological order, one line per series (log scale except sqnr_db, whose
 * scale is linear), with axis labels, a legend, casts, rule-set and red nodes
 * marked (red bands clipped to the frame), overflowing layers crossed,
 * underflow of 1% or more of a layer's values as one lane of bars under the
 * axis, and the three worst layers named where a label overlaps nothing. All
 * series must be compares of the same graph; n >= 1. */
mpx_status mpx_viz_plot(const mpx_viz_series *series, int n, const mpx_viz_plot_opts *o,
                        char **out, mpx_error *err);

/* ---- error against MACs low, with the Pareto front (viz/pareto.c) --------- */

/* One plan of a sweep: its label (the swept value), the share of MACs in
 * the low format, its output error, and the series (format) it belongs to. */
typedef struct mpx_viz_point {
    const char *label;
    double low_pct;  /* 0..100 */
    double error;    /* output rel_l2; 0 sits on the bottom edge, NaN is not on the front */
    int series;      /* index into the series names */
} mpx_viz_point;

/* SVG scatter: x = % of MACs low (linear), y = error (log), every point
 * labelled, each series' Pareto front (points no other point of the series
 * beats on both axes) filled and joined. n >= 1, n_series >= 1. */
mpx_status mpx_viz_pareto(const mpx_viz_point *p, int n, const char *const *series_names, int n_series,
                          const char *title, char **out, mpx_error *err);

/* ---- the HTML review page (viz/html.c) ------------------------------------- */

typedef struct mpx_viz_page {
    const mpx_plan *plan;           /* required */
    const mpx_rules *rules;         /* the plan's rules (NULL: none listed) */
    const char *model_path;         /* as loaded (NULL: the graph's path) */
    const mpx_viz_series *series;   /* runs (may be 0): plot, and the table of series[0] */
    int n_series;
    const mpx_viz_opts *graph;      /* cast graph options (NULL: defaults) */
    const mpx_viz_plot_opts *plot;  /* plot options (NULL: defaults; marks = plan) */
    /* For a run over a data set: the samples' names by their number
     * (mpx_samples.id), so the table names the worst sample of each layer
     * ("#3 line_03.png"); NULL or short: numbers only. */
    const char *const *sample_labels;
    int n_sample_labels;
} mpx_viz_page;

/* Graphs with more op nodes drawn than this open on the page as the
 * model-level view (mpx_viz_opts.fold) in front of the detailed graph. */
#define MPX_VIZ_PAGE_FOLD_NODES 150

/* One self-contained HTML page (inline CSS, inline SVG, inline script for
 * navigation, search, filters and sorting; nothing fetched): what to look
 * at and the cast graph on the first screen, then model summary, target and
 * options, rules, the plan's figures, the error plot and the per-layer
 * table. With graph->fold, or by default when more than
 * MPX_VIZ_PAGE_FOLD_NODES op nodes are drawn (and neither around nor
 * collapse is set), the model-level view opens first. stats (may be NULL)
 * receives the detailed cast graph's. */
mpx_status mpx_viz_html(const mpx_viz_page *page, char **out, mpx_viz_stats *stats,
                        mpx_error *err);

#ifdef __cplusplus
}
#endif

#endif
