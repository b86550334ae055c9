/* mpx_colour.h - colours, rules, the precision plan, plan diffs and "why" traces.
 *
 * Ownership:
 *  - Default colours are a static table: nothing to allocate or free.
 *  - mpx_rules: mpx_rules_new and mpx_rules_copy allocate, mpx_rules_free frees.
 *    A rule set owns its rules (the text as typed and the parsed form). Parsed
 *    rules are immutable and shared by reference count between copies, so a
 *    copy (one per undo step) costs one pointer array. Rules never point into a
 *    graph: the same rule set plans a reloaded model.
 *  - mpx_history: owns copies of every state it keeps; mpx_history_free frees them.
 *  - mpx_plan: mpx_plan_build allocates, mpx_plan_free frees. A plan owns all its
 *    arrays, a copy of the rule set it was built from and of the measured figures
 *    (both needed by mpx_plan_why). It borrows the graph, which must outlive the
 *    plan and must not be re-bound or re-inferred while the plan is used, and the
 *    static format descriptors of numerics/.
 *  - mpx_plan_diff: mpx_plan_diff_new allocates, mpx_plan_diff_free frees.
 *  - Text (why, summary) is written into caller buffers with snprintf semantics:
 *    the return value is the length the full text needs.
 *  - mpx_assign is numerics' type and numerics allocates it (mpx_assign_uniform);
 *    mpx_plan_fill_assign only writes into it.
 *
 * Nothing in colour/ prints, exits or reads stdin: functions return an
 * mpx_status and fill an mpx_error (with the column for rule text).
 *
 * Numbering: rules are 0-based in this API; messages and why traces call them
 * "rule #1", "rule #2", ... as the `rules` listing and `unrule <n>` do.
 */
#ifndef MPX_COLOUR_H
#define MPX_COLOUR_H

#include "mpx_graph.h"
#include "mpx_numerics.h" /* mpx_format, mpx_assign */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- colours and their defaults (colour/defaults.c) ---------------------- */

typedef enum mpx_colour {
    MPX_COLOUR_NONE = 0, /* never a node's colour; marks "no entry" in tables */
    MPX_COLOUR_GREEN,    /* always runs in the target format */
    MPX_COLOUR_GRAY,     /* low when every float input arrives low (constants count as low) */
    MPX_COLOUR_CLEAR,    /* follows its inputs (mixed: the widest); adds no cast of its own */
    MPX_COLOUR_RED,      /* always fp32 */
    MPX_COLOUR_COUNT
} mpx_colour;

const char *mpx_colour_name(mpx_colour c); /* "green", "gray", "clear", "red" */
/* "green", "gray", "grey", "clear", "red", case-insensitive; NONE if unknown. */
mpx_colour mpx_colour_from_name(const char *s);

/* The default colour of an op for a target format. Targets whose exponent is as
 * wide as fp32's (bf16, tf32) take the wide-exponent column of the table, where
 * ops that are red only for fp16's range (sums, means, softmax) are gray.
 * *source (may be NULL) receives where the entry comes from, e.g.
 * "TF AMP deny list (Exp)". target NULL means fp16. */
mpx_colour mpx_colour_default(mpx_op op, const mpx_format *target, const char **source);
/* The default for one node: the op's entry, refined by attributes where the
 * table says so (Resize/Upsample that interpolate are gray, not clear). */
mpx_colour mpx_colour_default_node(const mpx_node *n, const mpx_format *target,
                                   const char **source);

/* ---- rules (colour/rules.c) ------------------------------------------------ */

/*   colour <selector> <colour> [when <expr> [else <colour>]]     (alias: color)
 *   accum  <selector> <format> [options] [when <expr> [else <format> [options]]]
 *   fuse   <selector> [when <expr>]
 *
 * fuse: each selected node hands its float output to its consumers
 *   unrounded (held in fp32, the node's inputs and accumulation as before);
 *   a consumer reads it unrounded and rounds its own output (its other
 *   inputs as before): the two nodes round once, as a runtime that
 *   computes them as one op. Besides op types, names and *, a fuse rule's
 *   selector may name a pattern (patterns.c): linear (MatMul by a weight
 *   and its bias Add), silu (Sigmoid and Mul), gelu (GELU's erf form); the
 *   pattern's nodes but its last are fused. An accum rule's selector may
 *   name the same patterns (the same nodes: `accum silu bf16 steps` is the
 *   Sigmoid of each SiLU).
 *
 * accum options (mpx_accum's flags; none: mpx's documented order):
 *   bias-first  Conv with a rounded format: the running sum starts at the bias
 *               instead of adding it last (refused with fp32);
 *   round-sum   GlobalAveragePool: the sum is rounded to the node's compute
 *               format before the division;
 *   welford     LayerNormalization with a rounded format: mean and variance
 *               by Welford's algorithm in 16 lanes, every step rounded
 *               (PyTorch 1.13's CPU bf16; refused with fp32);
 *   steps       Sigmoid with a rounded format: 1/(1 + e^-x) with e^-x and the
 *               sum each rounded to it (PyTorch 1.13's CPU bf16 silu, whose
 *               division the Mul after it makes under `fuse silu`);
 *   reciprocal  Div with a rounded format: a * r(1/b), the divisor's
 *               reciprocal rounded to it (PyTorch's GELU multiplies by
 *               bf16(1/sqrt 2) where ONNX divides by sqrt 2);
 *   sequential  Gemm and MatMul with fp32: the sum one term after another,
 *               not in blocks of 64 (PyTorch 1.13's CPU bf16 addmm and the
 *               bmm with a transposed operand);
 *   sleef-lanes Softmax over the last axis, fp32 only: exp by Sleef's
 *               expf8_u10 and the sum in 8 lanes reduced as AVX2's tree,
 *               a row's last D % 8 values by expf, each value times the
 *               fp32 1/sum (PyTorch 1.13's AVX2 softmax; a run refuses it
 *               on a CPU without AVX2 and FMA; over another axis mpx's
 *               softmax runs, torch's strided kernel depending on its
 *               threads).
 *
 * selector: items separated by commas (spaces around commas allowed): an op
 *   type (`Conv`, matched case-insensitively against the registry), `*`, or
 *   `name:<glob>` (fnmatch: `*` also crosses `/`; `name:"a b*"` for names with
 *   spaces or commas).
 * expr: comparisons (< <= > >= == = !=) of figures and numbers, joined by and,
 *   or, not and parentheses. Figures: macs params in_elems out_elems in_ch
 *   out_ch kernel group k attr.<name> absmax const_in (float inputs that are
 *   weights, an Identity of one included) transposed_b (1 when the second
 *   input is a Transpose that swaps its last two axes). Numbers: 3, -0.5, 1e6, 64K, 1M,
 *   1G, 2T (K/k = 1e3, M = 1e6, G = 1e9, T = 1e12).
 * A figure that is unknown for a node (shapes not bound, attribute absent or a
 * list) makes its comparison unknown; and/or/not follow Kleene's three-valued
 * logic, and a `when` that is unknown leaves the node as earlier rules had it
 * (neither branch applies; mpx_plan_why says so). */

typedef enum mpx_rule_kind { MPX_RULE_COLOUR, MPX_RULE_ACCUM, MPX_RULE_FUSE } mpx_rule_kind;

/* The accum options by the names rules take: option k's name and its
 * MPX_ACC_* flag into *flag (may be NULL); NULL past the last. */
const char *mpx_rules_accum_option(int k, unsigned *flag);
/* The names of the options in flags (an mpx_plan_node's accum_flags)
 * joined by sep into buf ("" for none); returns buf. */
const char *mpx_rules_accum_flags_str(unsigned flags, const char *sep, char *buf, size_t n);

typedef struct mpx_rules mpx_rules;

mpx_rules *mpx_rules_new(void);                 /* NULL on out of memory */
mpx_rules *mpx_rules_copy(const mpx_rules *r);  /* NULL on out of memory */
void mpx_rules_free(mpx_rules *r);
int mpx_rules_count(const mpx_rules *r);
/* How many nodes inside g's bodies (Loop, Scan, SequenceMap) rule i's
 * selector names; *first and *owner (may be NULL) get the first of them and
 * the node of g whose body holds it. A body runs as one node of the plan,
 * in that node's format, so such a rule colours nothing: the REPL says so. */
int mpx_rules_body_matches(const mpx_rules *r, int i, const mpx_graph *g, const mpx_node **first,
                           const mpx_node **owner);
/* For rule i matching no node of g: "; did you mean name:<node>?" with the
 * node name closest to its first name: item that matches none and has a
 * close one, else "" (into buf). */
const char *mpx_rules_name_tail(const mpx_rules *r, int i, const mpx_graph *g, char *buf, size_t n);
const char *mpx_rules_text(const mpx_rules *r, int i); /* as typed, trimmed; NULL if out of range */
mpx_rule_kind mpx_rules_kind(const mpx_rules *r, int i);
/* Whether rule i uses a measured figure (absmax), which needs a reference run. */
bool mpx_rules_uses_measured(const mpx_rules *r, int i);

/* Parse one rule and append it. On any error r is unchanged, err->column is
 * the 1-based column in text of the problem and the message says what was
 * expected there. An op type in the selector must be one the registry knows
 * (case-insensitive) or, when g is given, the op_type of one of g's nodes: a
 * typo is an error naming it (with a suggestion), never a rule that silently
 * matches nothing. A valid op type that g lacks is accepted (the plan's
 * rule_applied count is 0, for a warning). g may be NULL. */
mpx_status mpx_rules_add(mpx_rules *r, const char *text, const mpx_graph *g, mpx_error *err);
/* Append `colour name:<n's name> <colour>` without parsing text: a rule
 * whose selector matches n by its name (glob characters escaped), the rule's
 * text written as a person would type it, with `  # comment` when comment
 * (one line; may be NULL) is given: `rules`, `why` and `save` show it, and
 * the text read back with mpx_rules_add selects the same nodes. search
 * keeps the nodes it chose fp32 this way. On error r is unchanged. */
mpx_status mpx_rules_add_node(mpx_rules *r, const mpx_node *n, mpx_colour colour, const char *comment,
                              mpx_error *err);
/* The node figures a `when` condition may name ("macs", "params", ...,
 * "absmax"), i from 0; NULL past the end (attr.<name> is not listed). */
const char *mpx_rule_figure_at(size_t i);
/* Remove rule i (0-based). */
mpx_status mpx_rules_remove(mpx_rules *r, int i, mpx_error *err);

/* ---- plan options and the undo history (colour/history.c) ---------------- */

typedef struct mpx_plan_opts {
    const mpx_format *target; /* the low-precision format; NULL means fp16 */
    bool keep_io;             /* model inputs/outputs keep their declared type */
    const mpx_format *accum;  /* accumulate format of nodes that run low; NULL = fp32 */
    int accum_block;          /* 0: round the running sum after every add; k > 0: blocks of k */
} mpx_plan_opts;

/* target fp16, keep_io on, accumulate fp32, block 0. */
void mpx_plan_opts_default(mpx_plan_opts *o);

/* Undo/redo: a list of (rules, options) states and a cursor. `colour`, `accum`,
 * `unrule`, `keep-io` and `target` each push a new state once the candidate
 * state has planned successfully (so a refused command leaves no trace); undo
 * and redo move the cursor; a push after an undo drops the undone states. */
typedef struct mpx_history mpx_history;

mpx_history *mpx_history_new(const mpx_plan_opts *opts); /* state 0: no rules; NULL opts = defaults */
void mpx_history_free(mpx_history *h);
const mpx_rules *mpx_history_rules(const mpx_history *h);
const mpx_plan_opts *mpx_history_opts(const mpx_history *h);
/* The state `back` steps before the current one (0 = current), for `diff`.
 * false when there is none. */
bool mpx_history_state(const mpx_history *h, int back, const mpx_rules **rules,
                       const mpx_plan_opts **opts);
/* Make a copy of (rules, opts) the current state. */
mpx_status mpx_history_push(mpx_history *h, const mpx_rules *rules, const mpx_plan_opts *opts,
                            mpx_error *err);
bool mpx_history_undo(mpx_history *h); /* false: nothing to undo */
bool mpx_history_redo(mpx_history *h); /* false: nothing to redo */

/* ---- emulation profiles (colour/profiles.c) --------------------------------
 * A profile is a whole plan that mirrors one runtime: a target, block,
 * keep-io and rules (ordinary rules, listed by mpx_profile_rule). Profile k's
 * name and one-line description, NULL past the last; mpx_profile_find: the
 * index of a name (case-insensitive), -1 if none. */
const char *mpx_profile_name(int k);
const char *mpx_profile_about(int k);
int mpx_profile_find(const char *name);
/* Rule i of profile k as its text (NULL past the last). */
const char *mpx_profile_rule(int k, int i);
/* Profile k's rules parsed against g into a new *rules (the caller frees
 * it), and *opts: base (NULL: the defaults) with the profile's target,
 * block and keep-io. The profile replaces the rules: rules the session had
 * before would change what it mirrors. */
mpx_status mpx_profile_build(int k, const mpx_graph *g, const mpx_plan_opts *base, mpx_rules **rules,
                             mpx_plan_opts *opts, mpx_error *err);

/* ---- the plan (colour/plan.c) --------------------------------------------- */

/* Figures measured by a reference run, which `repl` hands over. absmax[i] is
 * the largest |value| of node i's fp32 float outputs (by node->index); NaN
 * where not measured. */
typedef struct mpx_plan_measured {
    int n_nodes;
    const double *absmax;
} mpx_plan_measured;

typedef struct mpx_plan_node {
    mpx_colour dflt;          /* the default-table colour */
    const char *dflt_source;  /* where the default comes from */
    mpx_colour colour;        /* after the rules */
    int colour_rule;          /* the rule that set it, -1: the default */
    int accum_rule;           /* the accum rule that set accum, -1: default */
    /* Whether precision applies: the node reads or writes float values at run
     * time. false for nodes on non-float tensors only, for Shape and Size
     * (which read no values) and for nodes folded to constants at load. */
    bool is_float;
    bool folded;              /* all outputs are constants computed at load */
    bool low;                 /* compute is narrower than fp32 */
    const mpx_format *compute; /* format its float inputs are converted to; NULL if !is_float */
    const mpx_format *accum;   /* NULL if !is_float */
    unsigned accum_flags;      /* the accum rule's options (MPX_ACC_*), 0 by default */
    const mpx_format *output;  /* format of its float outputs; NULL if !is_float */
    /* Propagation: for gray and clear nodes, the input tensor (graph index)
     * whose arriving format decided the compute format (gray: the first input
     * that arrives in fp32; clear: the first of the widest inputs); -1 when no
     * input decided (constants only, no float input, green, red). */
    int cause;
    /* A fuse rule (fuse_rule, -1: none) made the node hand its float outputs
     * to its consumers unrounded: output is fp32 and so are its output
     * tensors; each consumer reads them as held (mpx_plan_input_format) and
     * rounds its own output. */
    bool fused;
    int fuse_rule;
} mpx_plan_node;

typedef struct mpx_plan_tensor {
    /* The format the tensor's values are held in (for a low output kept fp32 by
     * keep-io: the producer's format; the cast before the output is listed in
     * casts). For a constant: the one format all consumers use, else its
     * declared format. NULL for non-float tensors. */
    const mpx_format *format;
    bool constant;            /* initializer, Constant output or folded value */
} mpx_plan_tensor;

typedef struct mpx_plan_cast {
    int tensor;               /* graph tensor index */
    const mpx_format *from, *to;
    int n_consumers;
    int *consumers;           /* node indices, ascending; -1 = the model output (keep-io) */
} mpx_plan_cast;

/* A constant converted offline to a format other than its declared one. */
typedef struct mpx_plan_weight {
    int tensor;
    const mpx_format *to;
    int64_t bytes_before, bytes_after; /* -1 when the element count is unknown */
} mpx_plan_weight;

typedef struct mpx_plan_counts {
    int nodes[MPX_COLOUR_COUNT]; /* every node, by final colour */
    int float_nodes;             /* nodes where precision applies */
    int low_nodes;               /* of those, nodes computing low */
    int casts;                   /* runtime casts (= n_casts) */
    int weights_converted;       /* (constant, format) conversions done offline */
    int64_t weight_bytes_before, weight_bytes_after;
    int64_t macs_total, macs_low; /* over nodes whose MACs are known */
    int macs_unknown;            /* nodes whose MACs are unknown (shapes not bound) */
    double low_macs_pct;         /* 100 * macs_low / macs_total; 0 when macs_total is 0 */
    /* Work (mpx_cost_node_work) of the float nodes computed at run time and
     * of the runtime casts, over those whose work is known; the low share
     * is the objective search maximises: the casts a plan adds count in the
     * total and never as low. */
    int64_t cost_total, cost_low;
    double low_cost_pct;         /* 100 * cost_low / cost_total; 0 when cost_total is 0 */
} mpx_plan_counts;

typedef struct mpx_plan {
    const mpx_graph *g;
    mpx_plan_opts opts;          /* target and accum resolved (never NULL) */
    int n_nodes, n_tensors;      /* = g->n_nodes, g->n_tensors */
    mpx_plan_node *nodes;        /* by node->index */
    mpx_plan_tensor *tensors;    /* by tensor->index */
    int n_casts;
    mpx_plan_cast *casts;        /* by (tensor, format) */
    int n_weights;
    mpx_plan_weight *weights;
    int n_rules;
    int *rule_selected;          /* per rule: nodes its selector matched */
    int *rule_applied;           /* per rule: nodes it set (when true, else, or no when) */
    mpx_plan_counts counts;
    struct mpx_plan_priv *priv_; /* the arena, rules and measured copies */
} mpx_plan;

/* Build the plan for g (shapes inferred; unknown shapes only make figures
 * unknown). Errors: a rule that uses a measured figure when measured is NULL
 * (the message names the rule and the figure), measured sized for another
 * graph, out of memory. */
mpx_status mpx_plan_build(const mpx_graph *g, const mpx_rules *rules, const mpx_plan_opts *opts,
                          const mpx_plan_measured *measured, mpx_plan **out, mpx_error *err);
void mpx_plan_free(mpx_plan *p);

/* The cast of tensor t to format f, or NULL. */
const mpx_plan_cast *mpx_plan_find_cast(const mpx_plan *p, int tensor, const mpx_format *f);
/* The format node `node` reads its input i in, as the plan decided it (a
 * constant converted offline or a value behind a cast reads in the node's
 * compute format), or NULL where precision does not apply to that input:
 * not a float tensor, a parameter rather than data (Resize/Upsample roi and
 * scales, Dropout's ratio: kept as declared), or a node where precision does
 * not apply. The exporter writes the model from this per-input view. */
const mpx_format *mpx_plan_input_format(const mpx_plan *p, const mpx_node *node, int i);
/* Whether input i of node is a parameter the plan never converts (above). */
bool mpx_plan_input_is_param(const mpx_node *node, int i);
/* The format descriptor of a float dtype (double as fp32; the FNUZ fp8
 * variants as the nearest descriptor); NULL for other dtypes. */
const mpx_format *mpx_plan_dtype_format(mpx_dtype t);
/* Whether the plan treats t as a constant (converted offline, never cast):
 * an initializer, a Constant's output or a value folded at load. */
bool mpx_plan_tensor_is_const(const mpx_tensor *t);
/* Whether a rule decided the node's colour or accumulate format, or its colour
 * differs from its default: what `plan --changed` lists. */
bool mpx_plan_node_changed(const mpx_plan *p, int node);
/* One line: "green 3, gray 5, clear 9, red 1; 2 casts; 4 weights converted
 * (12.0 KiB -> 6.0 KiB); 87.5% of MACs in fp16". */
size_t mpx_plan_summary(const mpx_plan *p, char *buf, size_t size);

/* Fill a (allocated by numerics for the same graph, e.g. mpx_assign_uniform)
 * from the plan: tensor formats and per node compute, output and accumulate
 * formats, fp32 given as NULL. A model output kept fp32 by keep-io is given
 * in its producer's format: the cast before the output is exact, so the
 * values are the same. Refuses an assign sized for another graph. */
/* Whether nodes of op compute in fp32 whatever their colour (Range, TopK,
 * CumSum: runtimes have no low-precision kernels for them). */
bool mpx_plan_op_fp32_only(mpx_op op);

mpx_status mpx_plan_fill_assign(const mpx_plan *p, mpx_assign *a, mpx_error *err);
/* The same into a new assignment (free with mpx_assign_free); NULL on error. */
mpx_assign *mpx_plan_to_assign(const mpx_plan *p, mpx_error *err);

/* ---- figures per scope (colour/scopes.c) ---------------------------------- */

/* What a scope's box says (the review page, dot/svg --fold scopes, plan
 * --scopes): over the plan nodes in the scope and below it (mpx_graph_scopes). */
typedef struct mpx_scope_figures {
    int nodes;
    int colours[MPX_COLOUR_COUNT];
    /* the compute formats of its float nodes, most nodes first (at most 4;
     * n_formats counts them all) */
    const mpx_format *formats[4];
    int format_nodes[4];
    int n_formats;
    /* runtime casts on its border: of a value made outside to a node inside
     * (in), of a value made inside to a node or model output outside (out);
     * and casts wholly inside */
    int casts_in, casts_out, casts_inside;
    int64_t macs;
    /* from the run given (none: has_error false) */
    bool has_error;
    double worst_rel_l2; /* the largest rel_l2 of its nodes' outputs (inf: NaN or overflow to inf) */
    int worst_node;      /* where; -1 */
    int64_t overflow;    /* values that overflowed, over its nodes */
    int overflow_nodes;  /* nodes with an overflow */
} mpx_scope_figures;

/* Figures of every scope of sc (a tree of p's graph): *out gets sc->n of
 * them (free()). run may be NULL; else a compare of p's graph. */
mpx_status mpx_plan_scope_figures(const mpx_plan *p, const mpx_scopes *sc, const mpx_compare *run,
                                  mpx_scope_figures **out, mpx_error *err);

/* ---- why (colour/why.c) --------------------------------------------------- */

/* Lines (each ending in '\n') telling how node `node` got its colour and
 * formats: its default and where it comes from, each rule whose selector
 * matched and what its `when` gave (with the figures), the propagation step
 * (for a gray node in fp32: which input arrived fp32, followed upstream to the
 * red node, fp32 input or rule that started it), the accumulate format, and
 * the casts and conversions on its inputs. */
size_t mpx_plan_why(const mpx_plan *p, int node, char *buf, size_t size);

/* ---- why a node made non-finite values (colour/cause.c) ------------------- */

typedef enum mpx_nonfinite_kind {
    MPX_NONFINITE_TOO_LARGE, /* its fp32 values exceed the format's largest finite value */
    MPX_NONFINITE_CONSTANT,  /* a constant it reads overflows or flushes to zero in that format */
    MPX_NONFINITE_INPUT,     /* an input already holds non-finite values where fp32 is finite */
    MPX_NONFINITE_UNDERFLOW, /* an input has values non-zero in fp32 and zero in the run (Log, a division) */
    MPX_NONFINITE_INSIDE,    /* finite inputs that did not underflow: its own arithmetic */
    MPX_NONFINITE_CONVERSION /* an input's fp32 values exceed the format it is converted into for the node */
} mpx_nonfinite_kind;

typedef struct mpx_nonfinite_cause {
    mpx_nonfinite_kind kind;
    const mpx_format *fmt;   /* where the values are made: the node's compute format when low */
    double absmax_ref;       /* its largest |fp32 value| */
    int input;               /* INPUT, UNDERFLOW: the input (tensor index), else -1 */
    int64_t count;           /* its values that were non-finite or underflowed */
    const mpx_format *input_format;
    /* CONSTANT, and for UNDERFLOW the constant upstream that flushed to zero
     * and made the input's zeros (-1: none found, the values underflowed in
     * the arithmetic): tensor, the node reading it, the format it is read in,
     * how many of its constant_n values it loses and the largest of them. */
    int constant, constant_node;
    const mpx_format *constant_format;
    bool constant_overflows; /* else its values flush to zero */
    int64_t constant_count, constant_n;
    double constant_value;
    int tensor;              /* the layer's tensor (index): its reference values are float64 or fp32 */
    double input_absmax;     /* CONVERSION: the input's largest |fp32 value| (input, input_format: into what) */
} mpx_nonfinite_cause;

/* Why layer L of c, a run of plan p, holds values that are non-finite where
 * the fp32 reference is finite (its overflow count): values too large for
 * the format only when the fp32 ones are; otherwise a constant the node
 * reads that the conversion damages, an input already non-finite, an input
 * too large for the format it is converted into for the node (a model
 * input's values beyond fp16 arriving at a low node), an input
 * that underflowed (and the flushed constant upstream that made it so, when
 * there is one), or the node's own arithmetic. */
mpx_status mpx_plan_nonfinite_cause(const mpx_plan *p, const mpx_compare *c, const mpx_layer *L,
                                    mpx_nonfinite_cause *out, mpx_error *err);
/* The cause as one clause, names and fp32 values included ("its fp32 values
 * (up to 23.03) fit fp16; its input \"c\" has 464 values that are non-zero
 * in fp32 and zero in fp16: they come from constant ..."); snprintf's contract. */
size_t mpx_nonfinite_cause_text(const mpx_plan *p, const mpx_nonfinite_cause *k, char *buf, size_t size);

/* ---- diff (colour/diff.c) ------------------------------------------------- */

typedef struct mpx_plan_diff_node {
    int node;
    mpx_colour colour_a, colour_b;
    const mpx_format *compute_a, *compute_b, *accum_a, *accum_b, *output_a, *output_b;
} mpx_plan_diff_node;

typedef struct mpx_plan_diff_cast {
    int tensor;
    const mpx_format *from, *to;
} mpx_plan_diff_cast;

typedef struct mpx_plan_diff {
    int n_nodes;
    mpx_plan_diff_node *nodes;   /* nodes whose colour or a format changed, by index */
    int n_added, n_removed;
    mpx_plan_diff_cast *added;   /* casts in b and not in a */
    mpx_plan_diff_cast *removed; /* casts in a and not in b */
    mpx_plan_counts a, b;        /* both plans' summary figures */
} mpx_plan_diff;

/* a and b must be plans of the same graph. */
mpx_status mpx_plan_diff_new(const mpx_plan *a, const mpx_plan *b, mpx_plan_diff **out,
                             mpx_error *err);
void mpx_plan_diff_free(mpx_plan_diff *d);

/* ---- weights converted offline (colour/weights.c) -------------------------- */

/* A weight whose conversion is lossy enough to look at. */
#define MPX_WEIGHT_LOSS 1e-2   /* rel_l2 above which a converted weight is listed */

typedef struct mpx_weight_check {
    int weight;                /* index into plan->weights */
    int64_t n;
    /* Values that overflow the format and non-zero values flushed to zero
     * (mpx_format_count_damage's rule). A weight "overflows" when overflow
     * > 0 and "has values flushed to zero" when underflow > 0: the one
     * definition plan, run, compare, sweep, html and export count by. */
    int64_t overflow, underflow;
    double absmax;             /* largest |value| before conversion */
    double rel_l2;             /* converted against original (inf on overflow) */
} mpx_weight_check;

/* Convert every weight the plan converts and compare it with the original:
 * the weights that overflow the format, have a non-zero value flushed to zero
 * or lose more than MPX_WEIGHT_LOSS (rel_l2), in plan order, in *out
 * (malloc'ed; NULL when none). */
mpx_status mpx_plan_check_weights(const mpx_plan *p, mpx_weight_check **out, int *n, mpx_error *err);

#ifdef __cplusplus
}
#endif

#endif
