/* mpx_explore.h - exploring precision plans: the figures a plan and its run
 * show, conditions over them (what `assert` checks), and the search for the
 * plan that meets a condition with as much of the model low as possible.
 *
 * explore/ sits above colour/ and numerics/ and below the program: it reads
 * plans and comparisons, never a session. What it needs of the program that
 * drives it (planning and running a trial through its run cache, a progress
 * line, Ctrl-C) it reaches through callbacks (mpx_search_host).
 *
 * Ownership:
 *  - mpx_figure_ctx borrows everything it points to for the call.
 *  - mpx_cond is a plain value (no pointers): copy it freely.
 *  - mpx_search_run borrows its host and options for the call; the result's
 *    arrays (set, names, log) are allocated by it and freed by
 *    mpx_search_result_free; a result filled on an error is freed the same way.
 *  - Plans and comparisons a host's callbacks return are owned by the caller
 *    of the callback, which frees them (mpx_plan_free, mpx_compare_free).
 *
 * Nothing in explore/ prints, exits or reads stdin: functions return an
 * mpx_status and fill an mpx_error whose message names the figure, node or
 * limit at fault; the program prints.
 */
#ifndef MPX_EXPLORE_H
#define MPX_EXPLORE_H

#include "mpx_colour.h"
#include "mpx_numerics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- figures (explore/figures.c) ---------------------------------------------
 * A figure is read from a (plan, comparison) pair, never from a program's
 * state, so that search evaluates plans it has not applied with the code
 * assert uses: a search result that meets "output.rel_l2 < 1e-3" is an
 * assert that passes, by construction.
 *
 * Figures: the plan's (casts low_nodes low_macs_pct low_cost_pct
 * weights_converted weights_overflow, and each colour's node count: green
 * gray clear red), the run's totals (overflow underflow subnormal layers),
 * <what>.<metric> with what = output (the worst model output), worst (the
 * worst layer), out[<output>] or a tensor or node name, and metric one of
 * the metric table's, absmax, local or a task figure (top1, topk_overlap@k,
 * iou@t, sign_agree@t); before a run figure, mean: p95: worst: or
 * sample<k>: reads that statistic over a data set's samples; eval and
 * eval.<key> are a command's figures (mpx_figure_ctx.eval). */

/* What a figure is read from. */
typedef struct mpx_figure_ctx {
    const mpx_plan *plan;    /* the plan (its graph: plan->g) */
    const mpx_compare *cmp;  /* a run of that plan, or NULL: none yet */
    bool local;              /* cmp has local metrics (the message listing metrics says local) */
    /* eval and eval.<key> (may be NULL: those figures are refused): the
     * figure fig of run c of graph g into *out. */
    mpx_status (*eval)(void *ctx, const mpx_graph *g, const mpx_compare *c, const char *fig, double *out,
                       mpx_error *err);
    void *eval_ctx;
} mpx_figure_ctx;

/* Figure fig of x into *out. Errors: an unknown figure or name (with a
 * did-you-mean), a run figure without a run, a layer the run did not
 * compare, a task figure whose values the run did not keep. */
mpx_status mpx_figure_read(const mpx_figure_ctx *x, const char *fig, double *out, mpx_error *err);
/* The names a figure reads, checked against g without a run: an unknown
 * figure, a <what> that names no node or tensor, out[<name>] naming no model
 * output (each with a did-you-mean). */
mpx_status mpx_figure_check(const mpx_graph *g, const char *fig, mpx_error *err);
/* Whether a figure is read from a run (false: from the plan alone). */
bool mpx_figure_needs_run(const char *fig);
/* Every whole-model figure's name (plan figures, colours, run figures),
 * each passed to add with text (for completion). */
void mpx_figure_names(const char *text, void (*add)(const char *prefix, const char *word));
/* The weights plan p converts whose values overflow the format, counted in
 * values (the figure weights_overflow). */
int64_t mpx_figure_weights_overflow(const mpx_plan *p);
/* A name as a person types it in a figure: a node (its first output, what
 * report and plan show) or else a tensor; NULL when neither. Nodes first:
 * exported models reuse names across nodes and tensors. */
const mpx_tensor *mpx_figure_find_tensor(const mpx_graph *g, const char *name);
/* "; did you mean <metric>?" or "" into buf for a mistyped metric name
 * (extra: also absmax and local). Returns buf. */
const char *mpx_figure_metric_hint(const char *typed, bool extra, char *buf, size_t n);
/* A number as figures and options take it: 1e-3, 64K, 1M, 2G (K = 1e3,
 * M = 1e6, G = 1e9); what names it in the error. */
mpx_status mpx_explore_parse_number(const char *text, const char *what, double *out, mpx_error *err);

/* ---- conditions (explore/figures.c) ------------------------------------------
 * <figure> <op> <number> [and <figure> <op> <number> ...], op one of
 * < <= > >= == = !=. */
#define MPX_COND_MAX 16
typedef struct mpx_clause {
    char fig[512];
    char num[64]; /* the number as typed */
    int op;       /* index into the operators <= >= == != < > = */
    double want;
} mpx_clause;
typedef struct mpx_cond {
    int n;
    mpx_clause c[MPX_COND_MAX];
    char text[1024]; /* normalised: "output.rel_l2 < 1e-3 and casts <= 40" */
} mpx_cond;

/* Parse the words argv[0..argc) (cmd names the command in messages). */
mpx_status mpx_cond_parse(const char *cmd, int argc, char **argv, mpx_cond *c, mpx_error *err);
/* Whether any clause reads a run. */
bool mpx_cond_needs_run(const mpx_cond *c);
/* The tensors whose values c's task figures (top1, iou@t, ...) and eval
 * figures read, into keep[g->n_tensors]: the model outputs for output.* and
 * eval, else the tensor named. false when none. */
bool mpx_cond_keep(const mpx_graph *g, const mpx_cond *c, bool *keep);
/* The layers whose metrics the condition reads, into measure[g->n_tensors]
 * (the model outputs always); false when it reads every layer's (worst.*,
 * overflow, ...) or names a tensor the model does not have. */
bool mpx_cond_measure(const mpx_graph *g, const mpx_cond *c, bool *measure);
/* The first clause's figure that reads output.<metric> (the worst over every
 * model output) when a model output is named "output" (which a reader may
 * have meant: out[output].<metric>), else NULL. */
const char *mpx_cond_output_ambiguity(const mpx_graph *g, const mpx_cond *c);
/* Evaluate the clauses in order: got[i] their figures (NaN where not
 * evaluated); *failed the first clause that does not hold (-1: all hold);
 * the clauses after it are not evaluated. Errors: those of mpx_figure_read. */
mpx_status mpx_cond_eval(const mpx_figure_ctx *x, const mpx_cond *c, double *got, int *failed, mpx_error *err);
/* The operator of a clause as written ("<=", ...). */
const char *mpx_cond_op(const mpx_clause *cl);

#ifdef __cplusplus
}
#endif

#endif
