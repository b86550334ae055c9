/* fold.c - constant folding of small values, so shape-computing chains
 * (Shape -> Cast -> Slice -> Concat -> Reshape, as exporters emit them) give
 * Reshape, Expand, Tile, ConstantOfShape and Resize known shape arguments.
 *
 * Runs after the node's shape function, which has set the output shapes.
 * graph/ decides WHEN a node folds (every input known, outputs small) and
 * owns the buffers; WHAT the node computes comes from the evaluator that
 * numerics/ registers (mpx_graph_set_evaluator: its kernels), so each op's
 * meaning is written once. Values follow the IR's convention: float dtypes as
 * fp32, integer and bool dtypes as int64. Folding is best effort: anything
 * the evaluator cannot compute leaves the value unknown. */
#include "shape_internal.h"

#include <string.h>

/* Set once at start (mpx_numerics_init) and only read afterwards. */
static mpx_node_eval_fn evaluator;

void mpx_graph_set_evaluator(mpx_node_eval_fn fn) { evaluator = fn; }
mpx_node_eval_fn mpx_graph_evaluator(void) { return evaluator; }

static bool has_value(const mpx_tensor *t) {
    return t && t->nelem >= 0 && (t->f32 || t->i64 || t->f64);
}

/* Give output i a value buffer matching its dtype; *ok false when it cannot
 * hold one (unknown or large shape, a dtype without values, a constant). */
static mpx_status alloc_out(mpx_sctx *c, int i, bool *ok) {
    *ok = false;
    mpx_tensor *t = i < c->n->n_outputs ? c->n->outputs[i] : NULL;
    if (!t || t->rank < 0 || t->nelem < 0 || t->nelem > MPX_FOLD_MAX_ELEMS || (t->flags & MPX_T_CONSTANT))
        return MPX_OK;
    size_t n = (size_t)(t->nelem ? t->nelem : 1);
    if (t->dtype == MPX_DT_DOUBLE) t->f64 = mpx_arena_calloc(c->g->arena, n, sizeof(double));
    else if (mpx_dtype_is_float(t->dtype)) t->f32 = mpx_arena_calloc(c->g->arena, n, sizeof(float));
    else if (mpx_dtype_is_int_like(t->dtype)) t->i64 = mpx_arena_calloc(c->g->arena, n, sizeof(int64_t));
    else return MPX_OK;
    if (!t->f32 && !t->i64 && !t->f64) return mpx_node_error(c, MPX_E_NOMEM, "out of memory folding \"%s\"", t->name);
    t->flags |= MPX_T_FOLDED;
    *ok = true;
    return MPX_OK;
}

/* Undo alloc_out when a value turns out not to be computable. */
static void drop(mpx_tensor *t) {
    if (!t || !(t->flags & MPX_T_FOLDED)) return;
    t->f32 = NULL;
    t->i64 = NULL;
    t->f64 = NULL;
    t->flags &= ~(uint32_t)MPX_T_FOLDED;
}

/* Shape and Size: values that are their input's shape, known before the
 * input's values are (the shape layer's own knowledge, not an op's meaning). */
static mpx_status fold_shape_of(mpx_sctx *c) {
    const mpx_tensor *x = mpx_sh_in(c, 0);
    mpx_tensor *o = c->n->outputs[0];
    if (!x || x->rank < 0) return MPX_OK;
    if (c->n->op == MPX_OP_Shape) {
        for (int64_t i = 0; i < o->nelem; i++)
            if (x->dims[c->shape_start + i] < 0) return MPX_OK;
    } else if (x->nelem < 0) {
        return MPX_OK;
    }
    bool ok;
    mpx_status st = alloc_out(c, 0, &ok);
    if (st || !ok) return st;
    if (c->n->op == MPX_OP_Size) o->i64[0] = x->nelem;
    else
        for (int64_t i = 0; i < o->nelem; i++) o->i64[i] = x->dims[c->shape_start + i];
    return MPX_OK;
}

/* If with a known condition: the chosen branch's known values (a select,
 * as Shape's is the shape layer's own knowledge). */
static mpx_status fold_if(mpx_sctx *c) {
    mpx_node *n = c->n;
    int pick = mpx_node_if_pick(n), k = n->n_outputs;
    if (pick < 0 || n->n_inputs != 1 + 2 * k) return MPX_OK;
    for (int j = 0; j < k; j++) {
        const mpx_tensor *src = n->inputs[1 + pick * k + j];
        mpx_tensor *o = n->outputs[j];
        if (!has_value(src) || !o || o->nelem != src->nelem) continue;
        bool ok;
        mpx_status st = alloc_out(c, j, &ok);
        if (st) return st;
        if (!ok) continue;
        if (o->f32 && src->f32) memcpy(o->f32, src->f32, (size_t)src->nelem * sizeof *o->f32);
        else if (o->i64 && src->i64) memcpy(o->i64, src->i64, (size_t)src->nelem * sizeof *o->i64);
        else if (o->f64 && src->f64) memcpy(o->f64, src->f64, (size_t)src->nelem * sizeof *o->f64);
        else drop(o);
    }
    return MPX_OK;
}

mpx_status mpx_fold_node(mpx_sctx *c) {
    mpx_node *n = c->n;
    if (n->n_outputs < 1 || !n->outputs[0] || n->op == MPX_OP_Constant) return MPX_OK;
    if (n->op == MPX_OP_Shape || n->op == MPX_OP_Size) return fold_shape_of(c);
    if (n->op == MPX_OP_If) return fold_if(c);

    /* Everything else needs every present input's value. Inputs that only
     * carry shape arguments (Reshape's shape, ...) are values too. */
    if (n->n_inputs == 0 || !n->inputs[0]) return MPX_OK;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !has_value(n->inputs[i])) return MPX_OK;

    mpx_status st = MPX_OK;
    bool any = false, all_empty = true;
    for (int j = 0; j < n->n_outputs && st == MPX_OK; j++) {
        bool ok;
        st = alloc_out(c, j, &ok);
        if (ok) {
            any = true;
            all_empty &= n->outputs[j]->nelem == 0;
        }
    }
    /* An empty result is known without computing anything (whatever the op). */
    if (st != MPX_OK || !any || all_empty) return st;
    bool done = false;
    if (mpx_op_folds(n->op) && evaluator) {
        mpx_error e = {0};
        if ((st = evaluator(n, &done, &e)) != MPX_OK) /* with the file, as shape errors */
            st = mpx_error_at(c->err, st, c->g->path, 0, 0, "%s", e.msg);
    }
    if (st != MPX_OK || !done)
        for (int j = 0; j < n->n_outputs; j++) drop(n->outputs[j]);
    return st;
}
