/* colour_internal.h - what rules.c, plan.c, why.c and diff.c share: the parsed
 * form of a rule and its evaluation against a node. Not part of the public API. */
#ifndef MPX_COLOUR_INTERNAL_H
#define MPX_COLOUR_INTERNAL_H

#include "mpx_colour.h"

/* Figures a `when` expression can read. FIG_NUM is a number literal. */
typedef enum fig {
    FIG_NUM, FIG_MACS, FIG_PARAMS, FIG_IN_ELEMS, FIG_OUT_ELEMS, FIG_IN_CH, FIG_OUT_CH,
    FIG_KERNEL, FIG_GROUP, FIG_K, FIG_ATTR, FIG_ABSMAX, FIG_CONST_IN, FIG_TRANSPOSED_B
} fig;

typedef struct operand {
    fig kind;
    double num;       /* FIG_NUM */
    const char *attr; /* FIG_ATTR: the attribute name */
} operand;

typedef enum cmp_op { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE } cmp_op;
typedef enum expr_kind { EX_CMP, EX_AND, EX_OR, EX_NOT } expr_kind;

typedef struct expr {
    expr_kind kind;
    cmp_op cmp;            /* EX_CMP */
    operand a, b;          /* EX_CMP */
    struct expr *l, *r;    /* EX_AND/EX_OR: both; EX_NOT: l */
} expr;

typedef enum sel_kind { SEL_ALL, SEL_OP, SEL_OPTYPE, SEL_NAME, SEL_PATTERN } sel_kind;

typedef struct sel_item {
    sel_kind kind;
    mpx_op op;        /* SEL_OP: a registry op */
    const char *s;    /* SEL_OPTYPE: an op_type outside the registry; SEL_NAME: the glob */
    const char *lit;  /* SEL_NAME: the one name a glob without wildcards matches, NULL: a glob with
                       * some (a plan matches every rule against every node: search's trials carry
                       * hundreds of name rules, and fnmatch on each was most of planning's time) */
    int pattern;      /* SEL_PATTERN (fuse rules): index into the pattern table (patterns.c) */
} sel_item;

/* Immutable once parsed; shared between rule sets by reference count. */
typedef struct mpx_rule {
    int refs;
    mpx_arena *arena;  /* everything below lives in it */
    mpx_rule_kind kind;
    const char *text;
    int n_sel;
    sel_item *sel;
    expr *when;        /* NULL: unconditional */
    bool has_else;
    mpx_colour colour, else_colour;             /* MPX_RULE_COLOUR */
    const mpx_format *format, *else_format;     /* MPX_RULE_ACCUM */
    unsigned flags, else_flags;                 /* MPX_RULE_ACCUM: MPX_ACC_* options */
    bool measured;     /* reads absmax */
} mpx_rule;

struct mpx_rules {
    int n, cap;
    mpx_rule **v;
};

typedef enum tri { TRI_FALSE, TRI_TRUE, TRI_UNKNOWN } tri;

const mpx_rule *mpx_rules_at_(const mpx_rules *r, int i);

/* The fuse rule's patterns (patterns.c): a chain of ONNX nodes that a
 * runtime computes as one op, rounding once. mpx_fuse_pattern_find_ gives
 * the index of a name (case-insensitive), -1 if none; _name and _about its
 * name and one line; mpx_fuse_pattern_inner_ whether n is a node of a
 * match of pattern k other than its last (the nodes a fuse rule fuses). */
int mpx_fuse_pattern_find_(const char *name, size_t len);
int mpx_fuse_pattern_count_(void);
const char *mpx_fuse_pattern_name_(int k);
const char *mpx_fuse_pattern_about_(int k);
bool mpx_fuse_pattern_inner_(int k, const mpx_node *n);
bool mpx_rule_selects_(const mpx_rule *r, const mpx_node *n);
/* absmax: per node (by index), NULL when not measured. */
tri mpx_rule_eval_(const mpx_rule *r, const mpx_node *n, const double *absmax);
/* "macs = 4718592, k = 144": the figures the rule's `when` reads, for n.
 * Returns the length needed (snprintf semantics). */
size_t mpx_rule_figures_(const mpx_rule *r, const mpx_node *n, const double *absmax, char *buf,
                         size_t size);

/* The natural format of a float dtype (the model's declared type), NULL for
 * non-float dtypes. */
const mpx_format *mpx_dtype_format_(mpx_dtype t);

/* Initializer, Constant output or folded value (plan.c). */
bool mpx_tensor_is_const_(const mpx_tensor *t);
/* The same, or the output of an Identity (a chain of them) of one: how an
 * exporter shares a weight between layers (patterns.c). */
bool mpx_tensor_is_weight_(const mpx_tensor *t);
/* Input i of n when it is a float data input seen for the first time in n
 * (not a parameter such as Resize's scales, not a repeat), else NULL. */
const mpx_tensor *mpx_node_data_input_(const mpx_node *n, int i);

/* The rule set and measured figures a plan was built from (plan.c). */
const mpx_rules *mpx_plan_rules_(const mpx_plan *p);
const double *mpx_plan_absmax_(const mpx_plan *p);

/* Text written into a caller's buffer of size bytes (why, rule figures):
 * len counts what the whole text needs, as snprintf does, so a caller can ask
 * for the size first with size 0. */
typedef struct mpx_text_ {
    char *buf;
    size_t size, len;
} mpx_text_;
void mpx_text_printf_(mpx_text_ *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
