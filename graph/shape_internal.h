/* shape_internal.h - what shape.c and fold.c share (graph/ only). */
#ifndef MPX_SHAPE_INTERNAL_H
#define MPX_SHAPE_INTERNAL_H

#include "graph_internal.h"

/* One node being inferred. */
typedef struct mpx_sctx {
    mpx_graph *g;
    mpx_node *n;
    mpx_error *err;
    /* Shape's resolved start (its value needs only its input's shape, so
     * fold.c fills it without an evaluator). */
    int64_t shape_start;
} mpx_sctx;

/* Fill err with "node "<name>" (<op>): <message>" and return st. */
mpx_status mpx_node_error(const mpx_sctx *c, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* fold.c: after the node's output shapes are set, compute its output values
 * through the registered evaluator (mpx_graph_set_evaluator) when every input
 * value is known and the outputs are small. Leaves values unknown (not an
 * error) for anything it cannot fold. */
mpx_status mpx_fold_node(mpx_sctx *c);

/* shape.c, for cost.c: product of every Einsum label's dim (the terms of the
 * naive loop nest); -1 when a shape is unknown. */
int64_t mpx_einsum_terms(const mpx_node *n);

/* ---- shared by shape.c and shape_ops.c -------------------------------------- */

/* A shape under construction: rank -1 unknown; dims -1 unknown, s[i] the
 * symbolic name an unknown dim carries. */
typedef struct shp {
    int rank; /* -1 unknown */
    int64_t d[MPX_MAX_RANK];
    const char *s[MPX_MAX_RANK];
} shp;

/* A value argument: absent (optional input omitted), known, or present but
 * not known until the graph runs. */
enum { V_ABSENT, V_KNOWN, V_UNKNOWN };
enum { LIST_MAX = 64 }; /* longest int list read from a value (shape arguments) */

shp mpx_sh_shp_unknown(void);
shp mpx_sh_shp_rank(int rank); /* all dims unknown */
shp mpx_sh_shp_of(const mpx_tensor *t);
/* Shape strings for messages, from a few rotating buffers. */
const char *mpx_sh_S(const shp *s);
const char *mpx_sh_TS(const mpx_tensor *t);

mpx_tensor *mpx_sh_in(const mpx_sctx *c, int i); /* NULL when omitted */
bool mpx_sh_known(const mpx_tensor *t);           /* rank known */
mpx_status mpx_sh_need(const mpx_sctx *c, int k); /* inputs 0..k-1 present */
/* Input 0 of an op whose output 0 follows from its shape (the start of
 * most one-input ops' rules): NULL when the rule is done before it looks,
 * with *st what to return: input 0 missing (the error), or its rank unknown
 * (output 0 set unknown, of input 0's type). */
const mpx_tensor *mpx_sh_in0_known(const mpx_sctx *c, mpx_status *st);
int mpx_sh_opset(const mpx_sctx *c);
mpx_dtype mpx_sh_dt(const mpx_tensor *t);
/* Set output i's dtype (UNDEFINED: keep) and shape (NULL: unknown); element
 * count limits are checked here. */
mpx_status mpx_sh_set_out(const mpx_sctx *c, int i, mpx_dtype dtype, const shp *s);
mpx_status mpx_sh_check_rank(const mpx_sctx *c, int rank);
int mpx_sh_ints_of(const mpx_tensor *t, int64_t *buf, int max, int *n);
int mpx_sh_floats_of(const mpx_tensor *t, float *buf, int max, int *n);
/* An int list that is attribute attr in older opsets and input idx (-1: none) in newer ones. */
int mpx_sh_list_arg(const mpx_sctx *c, const char *attr, int idx, int64_t *buf, int max, int *n);
/* Squeeze, Unsqueeze and the reductions: input 0 present (*x) and the axes
 * list (attribute, or input 1 in newer opsets) into axes[LIST_MAX]; *v is
 * mpx_sh_list_arg's answer (V_ABSENT, V_UNKNOWN or known). */
mpx_status mpx_sh_axes_arg(mpx_sctx *c, const mpx_tensor **x, int64_t *axes, int *na, int *v);
mpx_status mpx_sh_ints_attr(const mpx_sctx *c, const char *name, int n, int64_t dflt, int64_t *out);
mpx_status mpx_sh_norm_axis(const mpx_sctx *c, int64_t ax, int rank, const char *what,
                            const mpx_tensor *t, int *out);
mpx_status mpx_sh_bcast2(const mpx_sctx *c, const shp *a, const shp *b, shp *o);

/* Checked int64 arithmetic for sizes that combine dims with attributes or
 * values a model may set to anything (pads of INT64_MAX): false, and *r
 * untouched, when the exact result does not fit. */
static inline bool mpx_sh_add(int64_t a, int64_t b, int64_t *r) {
    int64_t t;
    if (__builtin_add_overflow(a, b, &t)) return false;
    *r = t;
    return true;
}
static inline bool mpx_sh_mul(int64_t a, int64_t b, int64_t *r) {
    int64_t t;
    if (__builtin_mul_overflow(a, b, &t)) return false;
    *r = t;
    return true;
}

/* One shape function per SHAPE family of ops.def (shape.c, shape_ops.c). */
#define MPX_OP(name, shape, cost, fold) mpx_status mpx_shape_##shape(mpx_sctx *c);
#include "ops.def"
#undef MPX_OP

#endif
