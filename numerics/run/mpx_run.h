/* mpx_run.h - running and comparing: the executor (a precision assignment
 * run node by node), the error metrics (metrics.def), task figures, paired
 * runs of a reference and candidates with their per-layer figures, many
 * samples, and the incremental cache. Includes mpx_kernels.h. */
#ifndef MPX_RUN_H
#define MPX_RUN_H

#include "mpx_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== executor (exec.c) ============================================ */

/* What a precision plan hands the executor: the format every tensor is held
 * in, and per node the format its float inputs are converted to before it
 * computes (fp32 for a red node) and its accumulation. Arrays indexed by
 * tensor->index and node->index; NULL format means fp32. */
typedef struct mpx_node_prec {
    const mpx_format *compute;
    mpx_accum acc;
    /* The format the node writes its float outputs in before they are stored
     * in their tensors' formats (NULL: straight into the tensor's format).
     * It matters where a low node's output tensor is wider than the node:
     * with keep-io an fp16 node producing an fp32 model output writes fp16
     * values, which the cast the plan puts before the output keeps exactly. */
    const mpx_format *output;
    /* Bit j (j < 64): input j is read as it is held, not rounded to compute:
     * the unrounded output of a node a fuse rule fused (colour/plan.c), so
     * the pair rounds once. */
    uint64_t held;
} mpx_node_prec;

typedef struct mpx_assign {
    int n_tensors, n_nodes;
    const mpx_format **tensor;
    mpx_node_prec *node;
} mpx_assign;

/* Everything fp32 (the reference: f NULL or fp32), or all-green: every float
 * tensor held in f, every node with a float input computing and writing in f
 * with accumulate format acc (NULL: fp32), nodes without float inputs in
 * fp32. keep_io holds model inputs and outputs in fp32 (a low consumer rounds
 * an input on entry; a low producer still writes f, see output above). NULL
 * on out of memory. */
mpx_assign *mpx_assign_uniform(const mpx_graph *g, const mpx_format *f,
                               const mpx_format *acc, bool keep_io);
void mpx_assign_free(mpx_assign *a);

typedef struct mpx_run_opts {
    /* "local" error: when set, every node reads the reference run's values of
     * its inputs (converted to its formats) instead of this run's. */
    const struct mpx_run *local_ref;
    /* Stream: free every value once its last consumer has run, keeping only
     * model outputs and the tensors marked in keep ([g->n_tensors], may be
     * NULL). A forward pass then holds one live activation set, as a runtime
     * does, and its buffers are reused instead of faulting in fresh pages
     * (keeping every tensor of PP-OCRv4 det is 680 MB, and the kernel's page
     * clearing was half of that run's time). Values are the same bits. */
    bool stream;
    const bool *keep;
    /* Called with every node's float outputs as soon as they exist (before
     * streaming frees them): `stats` reads each tensor's range this way.
     * Elementwise chains then run node by node (no fusion: every value is
     * made whole); the values are the same bits. */
    void (*on_value)(void *ctx, const mpx_tensor *t, const mpx_value *v);
    void *on_value_ctx;
    /* numerics-internal (kern_loop.c): a candidate body run whose own Loop,
     * Scan and SequenceMap nodes take their bodies' figures too; NULL. */
    const struct mpx_body_probe *probe;
    /* [g->n_nodes] or NULL: each node's wall time in ms as this run ran it
     * (streaming, writing over dying inputs, freeing what dies; a chain run
     * by tiles shares its time equally among its nodes; nodes not run keep
     * what was there). mpx_bench's per-op profile reads it. */
    double *node_ms;
} mpx_run_opts;

/* The values of every tensor of one run. Owns vals[i] (borrowed views for
 * constants). */
typedef struct mpx_run {
    const mpx_graph *g;
    int n;
    mpx_value *vals;         /* [g->n_tensors]; n = -1 where not computed */
    double ms;               /* wall time of the run */
} mpx_run;

/* Runs every node in topological order (DESIGN section 3, Emulation): model
 * inputs and constants are rounded to their tensors' formats (constants as
 * rounded copies, or borrowed views when nothing needs rounding; Constant
 * nodes are not run, their values come from the graph); each node gets its
 * float inputs rounded to its compute format, runs its kernel with its
 * accumulation, and its float outputs are rounded to its output format and
 * then their tensors' formats. Every tensor's value is kept (unless
 * opts->stream). Chains of elementwise nodes run tile by tile (fuse.c; the
 * same kernels, the same bits; MPX_FUSE=0 turns it off), except with
 * opts->local_ref.
 * Refuses, before running anything, a graph with a node that has no kernel
 * (message names the node and op), an unbound input, or an input value whose
 * shape or type differs from the bound input. inputs are in g->inputs order.
 * An assignment a of NULL means everything fp32. On an error mid-run nothing
 * is returned and the message names the node. */
/* The flag (NULL: none) a Ctrl-C handler sets, process-wide as Ctrl-C is:
 * every graph run, a Loop's or Scan's body runs included, checks it between
 * nodes, every Loop, Scan and SequenceMap between iterations, and the long
 * kernels inside themselves (the GEMM core between the K blocks of its
 * work items, 256 terms of up to 512 output columns; direct and quantised
 * convolutions, attention and Einsum between blocks of rows or terms; the
 * recurrent ops between time steps), so that one huge node stops too
 * (MPX_E_CANCELLED naming the node). A comparison's own opts.cancel reaches
 * the same places inside its steps. A node that saw a cancel returns
 * nothing: its values, part computed, are never stored, cached (the
 * comparison cache, the packed and rounded weights kept on the graph) nor
 * compared. A flag must stay set until the run returns. */
void mpx_set_cancel_flag(const volatile int *flag);
/* The process-wide flag, or the calling thread's comparison's, is set. */
bool mpx_cancel_requested(void);
/* The time one Loop, Scan or SequenceMap node may spend on its iterations,
 * in seconds (0: no limit; MPX_LOOP_SECONDS until set), process-wide as the
 * cancel flag is. Checked before each iteration after the first, so the
 * iteration under way ends first; past it the node fails with MPX_E_LIMIT,
 * naming the node and the iterations done. A comparison runs the node's
 * reference and candidate loops each under the budget. */
enum { MPX_LOOP_SECONDS = 300 };
void mpx_set_loop_budget(double seconds);
double mpx_loop_budget(void);
mpx_status mpx_run_graph(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                         const mpx_run_opts *opts, mpx_run **out, mpx_error *err);
void mpx_run_free(mpx_run *r);

/* ==== error metrics (metrics.c) ==================================== */

/* Sums are taken in double, in eight lanes (element k in lane k % 8 up to
 * the first non-finite value, the lanes then added pairwise; metrics.c), the
 * same order on every CPU. Non-finite values follow one rule: an element
 * where c and r differ and one of them is not finite (an overflow: r finite,
 * c +-inf or NaN; or r +-inf/NaN and c something else) makes the error infinite:
 * max_abs, mean_abs and rel_l2 are +inf, sqnr_db is -inf and cos is NaN. A
 * tensor that overflowed so never looks accurate in a table sorted by rel_l2
 * and never passes a gate like "rel_l2 < 1e-2"; the overflow count says how
 * many elements did it. Elements where c and r are the same infinity or both
 * NaN agree: they add no error and are left out of the norms. */
typedef struct mpx_metrics {
    int64_t n;
    double max_abs, mean_abs;
    double rel_l2;     /* ||c - r|| / ||r|| (0 when both are 0, +inf when only r is) */
    double cos;        /* cosine similarity (1 when both are all zero, 0 when one is) */
    double sqnr_db;    /* 20 log10(||r|| / ||c - r||); +inf when equal */
    int64_t overflow;  /* finite in r, +-inf or NaN in c */
    int64_t underflow; /* non-zero in r, zero in c */
    int64_t subnormal; /* subnormal in fmt among c's values */
    double absmax_ref; /* largest |r| (NaNs left out) */
} mpx_metrics;

/* The metrics by name and in one order (metrics.def): every list
 * of metrics (report, assert, completion, plots) iterates this table. */
typedef enum mpx_metric_id {
#define MPX_METRIC(name, kind, worse) MPX_METRIC_##name,
#include "metrics.def"

#undef MPX_METRIC
    MPX_METRIC_COUNT
} mpx_metric_id;

typedef struct mpx_metric_info {
    const char *name;
    bool count;        /* an int64 count of elements (else a double) */
    bool low_is_worse; /* cos, sqnr_db */
} mpx_metric_info;

/* The row of id (NULL when out of range). */
const mpx_metric_info *mpx_metric_info_of(mpx_metric_id id);
/* The metric named name (case-insensitive); false if none. */
bool mpx_metric_by_name(const char *name, mpx_metric_id *id);
/* Its value in m (a count as a double). */
double mpx_metric_value(const mpx_metrics *m, mpx_metric_id id);
/* "rel_l2 max_abs ... subnormal": the names in order, separated by sep. */
const char *mpx_metric_names(const char *sep, char *buf, size_t n);

/* Candidate c against reference r (same shape, both float or both integer);
 * fmt (NULL: fp32) decides "subnormal". */
mpx_status mpx_metrics_compute(const mpx_value *r, const mpx_value *c, const mpx_format *fmt,
                               mpx_metrics *m, mpx_error *err);
/* mpx_metrics_compute of nc candidates c[q] (fmt[q]; fmt NULL: all fp32)
 * against one reference, m[q] each, bit for bit the same; the reference is
 * read once where it can be. Returns the first candidate's refusal (the
 * others' metrics are still taken). */
mpx_status mpx_metrics_compute_many(const mpx_value *r, const mpx_value *const *c,
                                    const mpx_format *const *fmt, int nc, mpx_metrics *m,
                                    mpx_error *err);

/* ==== task figures (task.c) ========================================= */

/* What a user checks of one output against its fp32 reference, each a share
 * in [0, 1], higher better: top1 (rows, along the last axis, whose argmax
 * agrees), topk_overlap@k (the mean share of a row's k largest that are the
 * reference's; k 5 when not given), iou@t (per sample, the first axis: the
 * intersection over union of the elements above t, a sample with none in
 * either counting 1; the mean over samples), sign_agree@t (elements on the
 * same side of t). Ties go to the lower index. */
typedef enum { MPX_TASK_TOP1, MPX_TASK_TOPK_OVERLAP, MPX_TASK_IOU, MPX_TASK_SIGN_AGREE, MPX_TASK_COUNT } mpx_task_id;
typedef struct mpx_task_figure {
    mpx_task_id id;
    double param; /* k (topk_overlap) or t (iou, sign_agree) */
} mpx_task_figure;
const char *mpx_task_name(mpx_task_id id);
/* name ("top1", "topk_overlap@3", "iou@0.5", "sign_agree@0"): *is_task false
 * when it names no task figure (no error); an error when it does but is
 * badly written (iou or sign_agree without @t, a bad number, k < 1). */
mpx_status mpx_task_parse(const char *name, bool *is_task, mpx_task_figure *f, mpx_error *err);
/* The figure of candidate c against reference r (float, one shape). Errors:
 * top1 or topk_overlap on an output whose last axis has fewer than 2
 * elements, k beyond the last axis, an empty output. */
mpx_status mpx_task_compute(const mpx_value *r, const mpx_value *c, const mpx_task_figure *f, double *out,
                            mpx_error *err);

/* ==== paired runs: per-layer comparison (compare.c) ================ */

/* One float tensor computed by a node (not constants, not model inputs), as
 * compared: the candidate's format and metrics against the reference, and
 * with local mode the node's own error (reference inputs, converted to its
 * formats). Kept for every such tensor whatever keep says. */
typedef struct mpx_layer {
    int tensor, node;            /* graph indices */
    const mpx_format *fmt;       /* the candidate tensor's format (NULL: fp32) */
    mpx_metrics m;               /* candidate run vs reference run */
    bool has_local;
    mpx_metrics local;           /* node fed reference inputs vs reference */
    /* Left out by mpx_compare_opts.measure: m's figures are NaN, its counts
     * 0; nothing may be read from it. */
    bool unmeasured;
} mpx_layer;

/* A float value computed inside the body of a Loop, Scan or SequenceMap
 * (nested bodies too), compared iteration by iteration: the candidate's
 * body run against the reference's body run of the same iteration (each
 * side's loop carrying its own state, as the two runs do). Iterations are
 * compared while both runs iterate with values of one shape; a run where
 * the two differ in trip count or shape compares the iterations before. */
typedef struct mpx_body_layer {
    const mpx_node *owner;       /* the node of g whose body holds it (the one the plan colours) */
    const mpx_node *node;        /* the body node that computes it (name "<owner>/body/...") */
    const mpx_tensor *tensor;    /* a tensor of that body's graph */
    const mpx_format *fmt;       /* the candidate's format for it (NULL: fp32) */
    int64_t runs;                /* body runs compared */
    /* The run of its worst rel_l2: the iteration, counted from 0 (for a
     * body nested in another, its runs are counted across the outer
     * iterations). */
    int64_t worst_run;
    mpx_metrics worst;           /* each metric's worst over the runs */
    /* The mean over the runs (counts: their total; n: one run's). */
    mpx_metrics mean;
    /* With local figures: each run's body node fed the reference run's
     * values of that iteration (converted to its formats). */
    bool has_local;
    int64_t local_worst_run;
    mpx_metrics local_worst, local_mean;
} mpx_body_layer;

typedef struct mpx_compare_opts {
    bool local;                  /* also compute local metrics (a third, per-node run) */
    /* [g->n_tensors] or NULL: tensors whose reference and candidate values are
     * kept after the run (for `tensor`, plots); model outputs are always kept. */
    const bool *keep;
    /* Checked between nodes; when it becomes non-zero the run stops with
     * MPX_E_CANCELLED (a Ctrl-C handler sets it). */
    const volatile int *cancel;
    /* Called between nodes (may be NULL): done of total nodes. */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    /* 1: everything on the calling thread, node by node. 2: a second
     * thread shares the work: each node's reference, candidate and local
     * steps and its metrics are jobs that run as soon as their inputs
     * exist, a few nodes ahead of the first unfinished one where a thread
     * would otherwise wait. 0 (the default): two where one forward has at
     * least 4 G multiply-adds, else one (compare.c two_job_threads). Either
     * way each node's kernels may use the kernels' threads, results are the
     * same bits, the progress callback is called on the caller's thread,
     * and the run ends at the node after the one it was last told of when
     * cancel is set. */
    int threads;
    /* An incremental cache (may be NULL; see mpx_compare_cache_new). A run
     * with a cache keeps the computed values in it (within its budget; a
     * full run leaves out large outputs of pointwise nodes, which later runs
     * make again from the values held when they need them) with the
     * assignment it ran under; the next run with the same cache, graph
     * and input values recomputes only the nodes whose precision or tensor
     * formats changed and everything downstream of them, reusing the cached
     * values and the other layers' metrics. The result is bit for bit what a
     * run without the cache gives. Local runs do not use it (nor touch it). */
    struct mpx_compare_cache *cache;
    /* [g->n_tensors] or NULL (every layer): the layers whose metrics are
     * taken. The others are listed, marked unmeasured, and cost nothing:
     * `search` reads only its condition's figures, and measuring det's 330
     * layers was half of each evaluation. A run with a cache keeps no
     * reference value of a layer it does not measure (its incremental
     * successors need only candidate values there: half the bytes). A later
     * run through the same cache that wants an unmeasured layer measures it
     * from the cached values when both are there, else runs in full. Local
     * runs measure every layer. */
    const bool *measure;
    /* With a cache, an incremental run keeps what it replaces there until
     * the next run through the cache, so that mpx_compare_cache_undo can
     * bring back the run before it: a search trial that fails is undone, and
     * the next trial, one node away from the set that holds, recomputes that
     * node's cone alone instead of the failed trial's too. */
    bool undoable;
} mpx_compare_opts;

typedef struct mpx_compare {
    const mpx_graph *g;
    int n_layers;
    mpx_layer *layers;           /* in node order, then output order */
    /* [g->n_tensors]: kept values (n = -1 where not kept); owned. */
    mpx_value *ref, *cand;
    /* Time spent in each kind of work; on two threads they overlap, so
     * their sum may exceed the run's wall time. */
    double ms_ref, ms_cand, ms_local, ms_metrics;
    /* Most value bytes alive at once during the run: the runs' live values,
     * a step's outputs and input copies (on two threads also the input
     * copies of a step the other thread finished meanwhile). Kernels' own
     * scratch is not counted. On two threads it depends on how the jobs
     * met in time, within a few nodes' outputs. */
    size_t peak_bytes;
    /* Nodes run by this call (over a data set: in all its samples, as
     * n_shared below): all of them for a full run, only the
     * recomputed ones when a cache made the run incremental (values held
     * by the cache are not counted in peak_bytes). */
    int n_run;
    bool incremental;
    /* When this comparison stands for a run over several samples (a data
     * set): every sample's figures (owned; freed with it). layers then hold
     * each layer's worst over the samples (mpx_samples_reduce), and ref/cand
     * the kept values of the sample whose worst model output is worst. NULL
     * for a one-input run. */
    struct mpx_samples *samples;
    /* The values inside Loop, Scan and SequenceMap bodies (owned), in the
     * order their owners run, body order within: taken by full runs that
     * measure every layer (opts.measure NULL). A data set's combined result
     * holds those of the sample it keeps (the one whose worst model output
     * is worst), not a reduction over the samples. */
    int n_body;
    mpx_body_layer *body;
    /* Of the n_run nodes, those whose candidate values were copied from
     * the reference instead of computed again: a node that rounds nothing
     * (fp32 compute and accumulation, no output or tensor format) on
     * inputs whose candidate values are the reference's, such as every
     * node of a plan that rounds nothing. The same bits either way. */
    int n_shared;
    /* The length of ref and cand (g->n_tensors when made): what
     * mpx_compare_free reads instead of g, which a caller may free first
     * (Python's collector frees a session's graph and its runs in any
     * order). */
    int n_values;
} mpx_compare;

/* Runs the fp32 reference and the candidate assignment a (NULL: fp32) side by
 * side, node by node in topological order, computes every layer's metrics as
 * soon as both values exist, and frees each value once its last consumer has
 * run in both runs unless it is kept: memory stays near two live activation
 * sets, not two copies of the whole model. The same executor semantics as
 * mpx_run_graph (section "executor"); errors name the node. On error or
 * cancel nothing is returned. */
mpx_status mpx_compare_run(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                           const mpx_compare_opts *opts, mpx_compare **out, mpx_error *err);
/* Several candidates (n <= MPX_COMPARE_MAX_CANDS) against one reference
 * run, all streamed together: the reference is computed once, not once per
 * candidate (`compare fp16 bf16`). out[k] is a[k]'s result, the same as
 * mpx_compare_run(a[k]) gives bit for bit, except that peak_bytes is the
 * joint run's and ms_ref the shared reference's time. The cache is used
 * only when n is 1. On error nothing is returned. */
enum { MPX_COMPARE_MAX_CANDS = 8 };
mpx_status mpx_compare_run_many(const mpx_graph *g, const mpx_assign *const *a, int n,
                                const mpx_value *inputs, const mpx_compare_opts *opts,
                                mpx_compare **out, mpx_error *err);
void mpx_compare_free(mpx_compare *c);
/* The layer of a tensor, or NULL. */
const mpx_layer *mpx_compare_layer(const mpx_compare *c, int tensor);

/* Which layers mpx_compare_worst_layer looks at, and by which rel_l2. */
typedef enum mpx_worst_of {
    MPX_WORST_ANY,    /* every measured layer, by its rel_l2 (m) */
    MPX_WORST_OUTPUT, /* the model's outputs only, by their rel_l2 */
    MPX_WORST_OWN,    /* layers with local figures, by their own error (local.rel_l2) */
} mpx_worst_of;
/* "The worst layer" of a comparison, the one rule every reader of a run
 * uses (the run line, report, sweep, search's figures, the review page):
 * the largest rel_l2, NaN worse than any number (a NaN is the worst thing a
 * run can show), the first in layer order among equals. Unmeasured layers
 * (mpx_compare_opts.measure) are skipped. NULL when no layer qualifies. */
const mpx_layer *mpx_compare_worst_layer(const mpx_compare *c, mpx_worst_of which);

/* Counts over every measured layer of a comparison: overflowed, underflowed
 * and subnormal elements, the layers with any, the first layer that
 * overflows, and the worst model output (mpx_compare_worst_layer with
 * MPX_WORST_OUTPUT) and its rel_l2 (NaN without one). */
typedef struct mpx_run_totals {
    int64_t overflow, underflow, subnormal;
    int layers_overflow, layers_underflow;
    const mpx_layer *first_overflow;
    double out_rel_l2;
    const mpx_layer *worst_out;
} mpx_run_totals;
mpx_run_totals mpx_compare_totals(const mpx_compare *c);

/* ---- many samples (samples.c) ----------------------------------------
 * The figures of one plan run on several samples, layer by layer, and their
 * statistics. A layer's "worst" is taken per metric (the largest of a HIGH
 * metric, the smallest of a LOW one, NaN worst of all), so the worst rel_l2
 * and the worst cos of a layer may come from different samples. */
typedef enum mpx_stat {
    MPX_STAT_WORST,
    MPX_STAT_MEAN,   /* arithmetic mean (an infinite sample makes it infinite) */
    MPX_STAT_P95,    /* nearest rank: the ceil(0.95 n)-th best sample */
    MPX_STAT_SAMPLE, /* one sample's own figures */
} mpx_stat;

typedef struct mpx_samples {
    int n_layers, n_samples;
    int *tensor;           /* [n_layers] each layer's tensor (the first sample's order) */
    int *id;               /* [n_samples] the caller's number of each sample (e.g. its
                              index in a data set; a shard holds some of them) */
    bool local;            /* local figures held too */
    mpx_metrics *m;        /* [n_samples * n_layers], sample by sample */
    mpx_metrics *lm;       /* the same for local figures, or NULL */
    int cap;
    int kept;              /* the row of the sample whose values a comparison kept */
    /* Values held for every sample (mpx_samples_hold): the tensors a task
     * figure or search --eval reads, which a run over a data set cannot read
     * from one kept comparison. held_tensor[n_held]; href and hcand
     * [held_cap * n_held], sample row by row (n = -1 where not held). */
    int n_held, held_cap;
    int *held_tensor;
    mpx_value *href, *hcand;
    uint64_t held_bytes;
} mpx_samples;

mpx_samples *mpx_samples_new(void);
void mpx_samples_free(mpx_samples *S);
/* Appends c's figures as the next sample; c must have the same layers, in
 * the same order, as the first sample added. */
mpx_status mpx_samples_add(mpx_samples *S, const mpx_compare *c, int id, mpx_error *err);
/* The row of the sample numbered id, or -1. */
int mpx_samples_row(const mpx_samples *S, int id);
/* Copies the reference and candidate values of the tensors keep marks
 * ([n_tensors]) from c, the sample added last, so that figures of every
 * sample's values can be taken after the run (task figures, --eval). The
 * first sample fixes the tensors held. An error, naming the tensor and the
 * sample, when c did not keep one of them or when the values held would pass
 * the memory budget (mpx_memory_budget: `set memory`). */
mpx_status mpx_samples_hold(mpx_samples *S, const mpx_compare *c, const bool *keep, int n_tensors,
                            mpx_error *err);
/* The held values of tensor t in sample row k (NULL when not held). */
const mpx_value *mpx_samples_held(const mpx_samples *S, int k, int t, bool cand);
/* Writes stat over the samples (the sample of row k for MPX_STAT_SAMPLE) into
 * layers[0..n_layers) (their tensor, node and fmt are left as they are: the
 * caller's copy of the layers); worst_sample (may be NULL) [n_layers] gets, per
 * layer, the row of the sample with the worst rel_l2. */
mpx_status mpx_samples_reduce(const mpx_samples *S, mpx_stat stat, int k, mpx_layer *layers,
                              int *worst_sample, mpx_error *err);
/* The 95th percentile by nearest rank (the ceil(0.95 n)-th smallest) of
 * badness[0..n) (larger is worse; sorted in place): MPX_STAT_P95's one rule,
 * for layers' metrics and task figures alike. */
double mpx_samples_p95(double *badness, int n);
/* Set a metric of m (a count is rounded). */
void mpx_metric_set(mpx_metrics *m, mpx_metric_id id, double v);

/* The incremental cache of mpx_compare_opts.cache: owned by the caller, one
 * per graph and input set in use (a run with other input values or another
 * graph does a full run and refills it; local runs leave it alone; the
 * caller clears it when a graph is freed, since a new one may reuse its
 * address). budget_bytes caps the values
 * it holds (0: 512 MB); over it, the values earliest in topological order
 * are dropped first (late recolours are the common case); a later run
 * needing a dropped candidate value makes it again from the values still
 * held (candidate work only), one needing a dropped reference value runs
 * in full. A full run does not give it the outputs of pointwise nodes,
 * Concats, Resizes, element moves and DynamicQuantizeLinear of 64 KB and
 * more (at most eight in a row): they are the cheapest to make
 * again, and a later run that needs one makes it (reference or candidate)
 * from the values held; an undoable run (a search's trial) keeps it when the
 * budget has room (not those made only to make it), a run that cannot be
 * undone frees it after its last reader, as a full run does; keeping every
 * value made a session's first run pay for hundreds of MB of fresh memory.
 * Peak memory of a cached run is about
 * the budget plus a run without it. NULL on out of memory. */
typedef struct mpx_compare_cache mpx_compare_cache;
mpx_compare_cache *mpx_compare_cache_new(size_t budget_bytes);
/* Forget everything held (e.g. when the inputs or the model change). */
void mpx_compare_cache_clear(mpx_compare_cache *k);
void mpx_compare_cache_free(mpx_compare_cache *k);
/* Bytes of values it holds now. */
size_t mpx_compare_cache_bytes(const mpx_compare_cache *k);
/* Back to the run before the last one, when the last was an incremental
 * run made with opts.undoable; false (nothing changes) otherwise. Either way
 * the cache describes a run it can continue from. (A run not made undoable
 * frees the candidate values it replaces before making the new ones; if it
 * fails, the cache describes the run before it without them, and a later
 * run that reads one makes it again.) */
bool mpx_compare_cache_undo(mpx_compare_cache *k);


/* ---- the executor's steps (exec.c) ----------------------------------
 * mpx_run_graph and mpx_compare_run are both built from these, so the two
 * follow one set of rules (section "executor"); a driver that runs nodes in
 * its own order (streaming, threads) uses them too. vals is always an array
 * of g->n_tensors values indexed by tensor->index. */

/* mpx_run_graph's refusals before anything runs (no kernel, unbound or
 * mismatched inputs, an assignment of another graph, a node input nothing
 * computes). */
mpx_status mpx_exec_check(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_error *err);
/* A node that is not run: every output is a constant the graph holds. */
bool mpx_exec_skipped(const mpx_node *n);
/* The kept forms of g's weights a first fp32 run would make (mpx_k_prepare_node
 * on every node that runs, then the reference's forms a comparison's
 * start makes: convolutions' packings, one-column products' panels), made
 * now: what `load` does after inferring shapes, so that a session's first
 * run does not pack its weights. About the bytes of the first kind kept
 * (memory a run would have taken, now taken at once; the second kind is
 * not counted). The run's threads are started too (mpx_run_start_threads). */
size_t mpx_exec_prepare(const mpx_graph *g);
/* Starts the threads runs and comparisons use (the kernels' pool and a
 * comparison's second job thread; both are kept for the process) now,
 * rather than in the first run, where starting them cost about 1-2 ms on a
 * KVM machine: what mpx_exec_prepare does first. Idempotent. */
void mpx_run_start_threads(void);
/* Whether a node runs in a run with these values: false for the nodes of
 * an If's branch its condition does not take (mpx_exec_node then computes
 * nothing and returns MPX_OK with every output absent). */
bool mpx_exec_active(const mpx_node *n, const mpx_value *vals);
/* Fill vals with what a run under a starts from: constants as borrowed views,
 * or rounded copies where a's format needs rounding; model inputs as copies
 * in their tensors' formats; everything else absent. On error every value is
 * freed (absent). */
mpx_status mpx_exec_start(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_value *vals, mpx_error *err);
/* One node under a: its float inputs, read from vals, converted to its compute
 * format (ref_inputs: vals are fp32 reference values, the local mode, so
 * every float input is converted); its kernel with its accumulation; its
 * float outputs rounded to its output format, then their tensors' formats.
 * outs[n->n_outputs] receives the outputs (owned by the caller; absent for
 * an omitted output). scratch_bytes (may be NULL): bytes of the converted
 * input copies held while the kernel ran. Reads vals and writes only outs,
 * its scratch and err: two calls may run at once on different outs and err.
 * On error outs are all absent and the message names the node. */
mpx_status mpx_exec_node(const mpx_node *n, const mpx_assign *a, const mpx_value *vals,
                         bool ref_inputs, mpx_value *outs, size_t *scratch_bytes,
                         mpx_error *err);

#ifdef __cplusplus
}
#endif

#endif
