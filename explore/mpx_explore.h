/* mpx_explore.h - exploring precision plans: the figures a plan and its run
 * show, conditions over them (what `assert` checks), and the search for the
 * plan that meets a condition with as much of the model low as possible.
 *
 * explore/ sits above colour/ and numerics/ and below the program: it reads
 * plans and comparisons, never a session. What it needs of the program that
 * drives it (planning and running a trial through its run cache, a progress
 * line, Ctrl-C) it reaches through callbacks (mpx_explore_host).
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
    /* Set by a stat prefix (mean:, worst:, p95:, sample<k>:) for the figures
     * read over a data set's samples one by one (task figures); the caller
     * leaves them zero. */
    bool has_stat;
    mpx_stat stat;
    int stat_k;
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
/* The dot before a <what>.<metric> figure's metric, or NULL: the last dot,
 * except in a task figure whose threshold holds one (output.iou@0.5), where
 * it is the last dot before the "@". */
const char *mpx_figure_metric_dot(const char *fig);
/* "; did you mean <metric>?" or "" into buf for a mistyped metric name
 * (extra: also absmax and local). Returns buf. */
const char *mpx_figure_metric_hint(const char *typed, bool extra, char *buf, size_t n);
/* "; did you mean <format>?" or "" into buf for a mistyped format name
 * (low_only: the formats other than fp32). Returns buf. */
const char *mpx_explore_format_hint(const char *typed, bool low_only, char *buf, size_t n);
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
/* got, a value of cl's figure, as text: digits significant digits, or as
 * many more as it takes to show it on its side of cl's number (never equal
 * to it unless it is). Returns buf. */
const char *mpx_clause_got_text(const mpx_clause *cl, double got, int digits, char *buf, size_t n);

/* ---- search (explore/search.c) -----------------------------------------------
 * The nodes to keep in fp32 so that a condition holds, with as much of the
 * model low as possible. Every evaluation is a real plan and a real run: the
 * base rules plus `colour name:<node> red` for each node of the set
 * (mpx_rules_add_node), planned and run by the host, and the condition read
 * by mpx_cond_eval. So the result, applied as ordinary rules, reproduces the
 * reported figures exactly.
 *
 * Methods:
 *  - auto: nodes whose weights overflow go fp32 first (known without a run,
 *    once a plain run says the plan as it is fails); one local run then ranks
 *    the low nodes (overflow in their output first, then the output error
 *    that keeping each fp32 is predicted to remove, by region); the shortest
 *    prefix of the ranking that meets the condition is kept fp32 (predicted,
 *    then doubled and bisected); then each node of the set, the last-ranked
 *    first, is given back to low while the condition still holds, pass after
 *    pass until a pass gives nothing back (the result is 1-minimal), and each
 *    node is tried swapped for the gray nodes that followed it into fp32.
 *    auto and greedy remember every set they evaluated and never run one twice.
 *  - greedy: auto without the give-back and swap passes.
 *  - bisect: onnxconverter-common's auto_convert_mixed_precision, for
 *    comparison: segments of the topological order tried low, a failing
 *    segment split in halves.
 *  - sensitivity: Intel Neural Compressor's fallback, for comparison.
 * auto's aim is the share of cost low (plan counts' low_cost_pct). */

typedef enum mpx_search_method {
    MPX_SEARCH_AUTO, MPX_SEARCH_GREEDY, MPX_SEARCH_BISECT, MPX_SEARCH_SENSITIVITY, MPX_SEARCH_METHOD_COUNT
} mpx_search_method;
/* "auto", "greedy", "bisect", "sensitivity"; NULL past the end. */
const char *mpx_search_method_name(mpx_search_method m);

/* How a search ended (its JSON's "ended"). */
typedef enum mpx_search_end {
    MPX_SEARCH_DONE, MPX_SEARCH_NO_PLAN, MPX_SEARCH_MAX_EVALS, MPX_SEARCH_TIME, MPX_SEARCH_INTERRUPTED,
    MPX_SEARCH_FAILED
} mpx_search_end;
/* "done", "no_plan", "max_evals", "time", "interrupted", "failed". */
const char *mpx_search_end_name(mpx_search_end e);

/* Where a search stands, for a progress line: evaluations done, the best
 * plan so far (have_best: one met the condition; its fp32 count, its
 * value of the first figure fig and low cost share) and the time left to the nearer limit in ms
 * (the time limit, or the evaluation limit at the mean evaluation's pace;
 * negative: unknown). */
typedef struct mpx_search_progress {
    const char *fig;  /* the condition's first figure */
    int n_evals;
    bool have_best;
    int best_k;
    double best_got0, best_low_cost_pct;
    double left_ms;
} mpx_search_progress;

typedef struct mpx_sweep mpx_sweep;

/* The program's side of a search or a sweep: trials (a plan of (rules,
 * options) and its run) reach the program through it. plan and run are
 * required; the others may be NULL. */
typedef struct mpx_explore_host {
    void *ctx;
    /* Plan rule set r with options o (NULL: the program's own), as the
     * program plans its own plans (without applying it). */
    mpx_status (*plan)(void *ctx, const mpx_rules *r, const mpx_plan_opts *o, mpx_plan **out, mpx_error *err);
    /* Run plan p on the program's inputs against the fp32 reference: local
     * (also each node's own error; not through a run cache), undoable (undo
     * may take the run back out of the program's run cache), measure and
     * keep as mpx_compare_opts's. MPX_E_CANCELLED when interrupted. */
    mpx_status (*run)(void *ctx, const mpx_plan *p, bool local, bool undoable, const bool *measure,
                      const bool *keep, mpx_compare **out, mpx_error *err);
    /* Take the last undoable run back out of the run cache: a trial that
     * fails is undone, so the next trial, one node off the set that held,
     * recomputes that node's cone alone. */
    void (*undo)(void *ctx);
    /* search: after each evaluation. */
    void (*progress)(void *ctx, const mpx_search_progress *pr);
    /* sweep: before point i of d. */
    void (*point)(void *ctx, const mpx_sweep *d, int i);
    /* Checked before each evaluation: true stops the search (interrupted). */
    bool (*cancelled)(void *ctx);
    /* eval and eval.<key> figures (mpx_figure_ctx.eval), or NULL. */
    mpx_status (*eval)(void *ctx, const mpx_graph *g, const mpx_compare *c, const char *fig, double *out,
                       mpx_error *err);
    void *eval_ctx;
} mpx_explore_host;

typedef struct mpx_search_opts {
    mpx_search_method method;
    int max_evals;  /* evaluations at most (0: 500); a set the run cache answers whole is not counted */
    double max_ms;  /* time limit in ms, 0: none */
    bool log;       /* keep every evaluation for mpx_search_json */
} mpx_search_opts;

/* What a search found: the set (end DONE), or on a stop the best set so far
 * that met the condition (set NULL when none did). set, got and cand point
 * into the search and live as long as it. */
typedef struct mpx_search_result {
    mpx_search_end end;
    const bool *set;       /* [n_cand] */
    int k;                 /* nodes in set */
    const double *got;     /* [cond's n] the condition's figures of set's plan */
    double low_macs_pct, low_cost_pct;
    int n_cand;
    const int *cand;       /* the candidates: the nodes low in the base plan, graph order */
    int n_evals, n_unchanged; /* evaluations, and sets whose plan computed as an earlier one */
    double ms;
} mpx_search_result;

typedef struct mpx_search mpx_search;

/* A search over the nodes low in base (a plan of g under rules), for cond,
 * driven through host. Checks nothing of the condition's names (see
 * mpx_figure_check). */
mpx_status mpx_search_new(const mpx_graph *g, const mpx_plan *base, const mpx_rules *rules, const mpx_cond *cond,
                          const mpx_search_opts *opts, const mpx_explore_host *host, mpx_search **out,
                          mpx_error *err);
/* Search. *r is filled however it ended (what the search learned is never
 * lost); the status is the stop's: MPX_E_LIMIT at max_evals or the time
 * limit, MPX_E_CANCELLED, MPX_E_INVALID when no plan meets the condition,
 * or an evaluation's error. Call once. */
mpx_status mpx_search_run(mpx_search *x, mpx_search_result *r, mpx_error *err);
/* The result as mpx_search_run gives it had the search ended with status
 * st: a caller whose own step after the search failed (search --validate)
 * reports the best set so far, as for a stop. */
void mpx_search_get_result(const mpx_search *x, mpx_status st, mpx_search_result *r);
/* What the search's evaluations read of a run, from its condition ([the
 * graph's n_tensors] each, owned by x; NULL: every layer, every value):
 * the values kept (mpx_cond_keep) and the layers measured
 * (mpx_cond_measure). A check of the found plan elsewhere (search
 * --validate) reads the same. */
void mpx_search_reads(const mpx_search *x, const bool **keep, const bool **measure);
/* The base rules plus one `colour name:<node> red` rule per node of set
 * ([n_cand]); with why, each rule's comment says why search added it (the
 * condition, how the search ended, what the ranking run saw of the node),
 * as `why` and `rules` then show. */
mpx_status mpx_search_rules(const mpx_search *x, const bool *set, bool why, mpx_search_end end, mpx_rules **out,
                            mpx_error *err);
/* The figures of a set's plan checked elsewhere (search --validate: the
 * held-out samples), for mpx_search_json. */
typedef struct mpx_search_validation {
    const char *data;      /* what the samples were, as given */
    int samples;
    const double *got;     /* [cond's n] */
    bool holds;
} mpx_search_validation;
/* {condition, method, ended, error, fp32, figures, low shares, applied,
 * validation, counts, ms, evaluations}, newline-terminated (malloc'd; NULL
 * on out of memory). Figures are written with every digit (null when not
 * finite), so an assert of them holds exactly. error and v may be NULL.
 * Takes the evaluations kept (opts.log): call once. */
char *mpx_search_json(mpx_search *x, const mpx_search_result *r, const char *error, bool applied,
                      const mpx_search_validation *v);
void mpx_search_free(mpx_search *x);

/* ---- sweep (explore/sweep.c) --------------------------------------------------
 * One command tried with each of several values, every point planned and
 * run, the figures side by side:
 *
 *   sweep t in 0,64k,256k,1M : colour Conv green when macs >= $t else gray
 *
 * Each point is the base rules and options plus the command with $name
 * replaced by the value (colour, color and accum add the rule; target and
 * keep-io change the options), planned and run by the host as a trial:
 * nothing is applied. Sharding: points i with i % n == k - 1 run in shard
 * k/n; mpx_sweep_merge joins the shards' JSON back into the sweep one
 * unsharded run gives. */
#define MPX_SWEEP_MAX_POINTS 256

/* One point's figures. */
typedef struct mpx_sweep_point {
    bool done;
    int colours[MPX_COLOUR_COUNT]; /* nodes of each colour */
    int casts;
    double low_pct;                /* share of MACs low */
    double low_cost_pct;
    int64_t weight_bytes;          /* the weights' bytes in the plan's formats */
    double out_rel_l2;             /* worst model output (NaN: none) */
    char worst[256];               /* worst layer's tensor ("-": none) */
    double worst_rel_l2;
    int64_t overflow, underflow;   /* elements, over every layer */
    int64_t weights_overflow;      /* weight values that overflow their format */
} mpx_sweep_point;

/* A sweep: what it tries and, point by point, what it found. A plain value
 * (no pointers; about 190 KB: allocate it). */
struct mpx_sweep {
    char name[64];
    char command[2048];     /* with $name */
    int n;
    char values[MPX_SWEEP_MAX_POINTS][64];
    char model[1024];       /* the model file (shards of one sweep name the same) */
    char target[32];        /* the base options' target format */
    mpx_sweep_point pts[MPX_SWEEP_MAX_POINTS];
    /* What the points ran on, set by the client before mpx_sweep_json and
     * compared by mpx_sweep_merge ("" where a client gives none: then the
     * path and target alone): model_id the model file's content (size and
     * CRC-32, the same whatever folder a worker has it in), session_id the
     * session's inputs, data set, keep-io and rules (a CRC-32 of them). */
    char model_id[48];
    char session_id[16];
};

/* Fill d from name, the command (with $name) and values "v1,v2,...".
 * Errors: no values, too many (MPX_SWEEP_MAX_POINTS), a value too long. */
mpx_status mpx_sweep_define(mpx_sweep *d, const char *name, const char *command, const char *values,
                            const char *model, const mpx_format *target, mpx_error *err);
/* Point i's command: the command with every $name (not followed by a name
 * character) replaced by the value, into out. Errors: the command does not
 * use $name, names another $variable, or is too long. */
mpx_status mpx_sweep_point_command(const mpx_sweep *d, int i, char *out, size_t n, mpx_error *err);
/* The rules and options of a point: rules and o plus line, which must
 * change the plan (colour, color, accum, target, keep-io). *out_rules is
 * the caller's (mpx_rules_free). */
mpx_status mpx_sweep_point_state(const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *o, const char *line,
                                 mpx_rules **out_rules, mpx_plan_opts *out_opts, mpx_error *err);
/* Check every point's command against g (a bad value costs no run), then
 * run the points of shard shard_k/shard_n (0/0: all) through host, in
 * order (through the program's run cache: the reference computed once, each
 * point recomputing only what its plan changes), recording each point's
 * figures in d. Errors name the point; the points before it keep their
 * figures. */
mpx_status mpx_sweep_run(mpx_sweep *d, const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *o,
                         const mpx_explore_host *host, int shard_k, int shard_n, mpx_error *err);
/* A point's figures from its plan and run. */
void mpx_sweep_record(const mpx_plan *p, const mpx_compare *c, mpx_sweep_point *pt);
/* {sweep: {name, command, values, model, target, shard}, points: [...]}
 * (shard may be NULL), the points done, numbers with every digit so that
 * merged shards equal an unsharded run exactly. malloc'd; NULL on out of
 * memory. */
char *mpx_sweep_json(const mpx_sweep *d, const char *shard);
/* The points done as CSV, a header line first. malloc'd; NULL on out of memory. */
char *mpx_sweep_csv(const mpx_sweep *d);
/* Add the points of one shard's JSON (text, read from path, which messages
 * name) to d: the first shard (first) defines the sweep, later ones must be
 * of the same sweep (name, command, values), model and target, and no
 * point may come twice. */
mpx_status mpx_sweep_merge(mpx_sweep *d, const char *path, const char *text, bool first, mpx_error *err);
/* After the shards: an error naming the first point no shard had. */
mpx_status mpx_sweep_check_complete(const mpx_sweep *d, mpx_error *err);

/* ---- ranges (explore/stats.c) ---------------------------------------------------
 * The range of every tensor of the fp32 reference over the runs added (the
 * samples of a data set): what range rules (`when absmax > ...`) read. */

/* One tensor's range over the runs (seen: some run computed it). */
typedef struct mpx_range {
    bool seen;
    double min, max, absmax;       /* over the finite values */
    int64_t n, zeros, nonfinite;   /* values seen, of them zeros and not finite */
} mpx_range;

typedef struct mpx_ranges mpx_ranges;
/* Ranges of g's tensors, none seen yet; NULL on out of memory. g must
 * outlive it. */
mpx_ranges *mpx_ranges_new(const mpx_graph *g);
void mpx_ranges_free(mpx_ranges *r);
/* Run the fp32 reference on inputs (g->inputs order), streaming, and add
 * every float value it computes to the ranges. */
mpx_status mpx_ranges_add_run(mpx_ranges *r, const mpx_value *inputs, mpx_error *err);
/* Tensor i's range. */
const mpx_range *mpx_ranges_at(const mpx_ranges *r, int tensor);
/* Runs added. */
int mpx_ranges_samples(const mpx_ranges *r);
/* The p-quantile (0..1) of |x| over tensor i's finite values, nearest rank,
 * from a histogram of 8 bins per power of two (a bin's upper edge: at most
 * 9% above the true value, never below it); NaN when none. */
double mpx_ranges_quantile(const mpx_ranges *r, int tensor, double p);
/* The ranges file `stats --save` writes: {kind: "mpx-ranges", model,
 * samples, tensors: [{tensor, node, min, max, absmax, p99, p999, n, zeros,
 * nonfinite}]} (malloc'd; NULL on out of memory). */
char *mpx_ranges_json(const mpx_ranges *r, const char *model);
/* A ranges file's text (read from path; model names g in messages) as
 * absmax per tensor of g (*out, [g->n_tensors], malloc'd; NaN where the file
 * has none), how many tensors it gave and its sample count. Errors: not a
 * ranges file, a tensor g does not have (ranges of another model). */
mpx_status mpx_ranges_load(const mpx_graph *g, const char *path, const char *text, const char *model, double **out,
                           int *used, int *samples, mpx_error *err);
/* absmax per node (its outputs' largest; NaN when none is known) from
 * absmax per tensor: what mpx_plan_build's measured figures take.
 * malloc'd; NULL on out of memory. */
double *mpx_ranges_node_absmax(const mpx_graph *g, const double *tensor_absmax);

/* ---- JSON ------------------------------------------------------------------------ */
struct cJSON;
/* obj[key] = v with every digit (%.17g): cJSON prints 15 digits when they
 * read back within an epsilon, which can lose the last bit, and merged
 * shards must give the figures of one run exactly. A value that is not finite is written as nonfinite (e.g.
 * "null"), or as the string "inf", "-inf" or "nan" when nonfinite is NULL. */
void mpx_explore_json_exact(struct cJSON *obj, const char *key, double v, const char *nonfinite);

#ifdef __cplusplus
}
#endif

#endif
