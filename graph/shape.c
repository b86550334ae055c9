/* shape.c - binding input shapes and inferring every tensor's dtype and shape.
 *
 * One shape function per SHAPE family of ops.def, generated into a table so a
 * new op cannot be registered without one. Semantics follow ONNX (opsets 7 and
 * newer). Where an argument moved from an attribute to an input across opsets
 * (Squeeze axes, Slice starts, Split sizes, Pad pads, TopK k, reduce axes...),
 * the attribute is used when the node carries it and the input otherwise: a
 * node can only hold the form its opset defines, so this needs no opset table
 * and also reads hand-written JSON models whose opset is left out.
 *
 * Unknown stays unknown: an input of unknown rank gives outputs of unknown
 * rank, an unknown dim (-1, maybe with a symbolic name) propagates as -1.
 * Only facts that contradict each other are errors. */
#include "shape_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- small shape values ------------------------------------------------- */


shp mpx_sh_shp_unknown(void) {
    shp s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    for (int i = 0; i < MPX_MAX_RANK; i++) s.d[i] = -1;
    return s;
}

shp mpx_sh_shp_rank(int rank) {
    shp s = mpx_sh_shp_unknown();
    s.rank = rank;
    return s;
}

shp mpx_sh_shp_of(const mpx_tensor *t) {
    shp s = mpx_sh_shp_unknown();
    if (!t || t->rank < 0) return s;
    s.rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
        s.d[i] = t->dims[i];
        s.s[i] = t->dims[i] < 0 ? t->sym[i] : NULL;
    }
    return s;
}

const char *mpx_dims_str(int rank, const int64_t *d, char *buf, size_t n) {
    if (!buf || n == 0) return buf;
    buf[0] = '\0';
    if (rank < 0) {
        snprintf(buf, n, "(unknown)");
        return buf;
    }
    if (rank == 0) {
        snprintf(buf, n, "scalar");
        return buf;
    }
    size_t used = 0;
    for (int i = 0; i < rank && used < n; i++) {
        int w = d[i] < 0 ? snprintf(buf + used, n - used, "%s?", i ? "x" : "")
                         : snprintf(buf + used, n - used, "%s%lld", i ? "x" : "", (long long)d[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

/* Shapes name their unbound symbolic dims ("batchx3xheightxwidth"), which is
 * what a user needs to know to write an `input ... shape` line. */
static const char *dims_sym_str(int rank, const int64_t *d, const char *const *sym, char *buf,
                                size_t n) {
    mpx_dims_str(rank, d, buf, n);
    if (rank <= 0 || !buf || n == 0) return buf;
    size_t used = 0;
    for (int i = 0; i < rank && used < n; i++) {
        const char *sep = i ? "x" : "";
        int w = d[i] >= 0 ? snprintf(buf + used, n - used, "%s%lld", sep, (long long)d[i])
                : sym[i]  ? snprintf(buf + used, n - used, "%s%s", sep, sym[i])
                          : snprintf(buf + used, n - used, "%s?", sep);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

const char *mpx_tensor_shape_str(const mpx_tensor *t, char *buf, size_t n) {
    if (!t) return mpx_dims_str(-1, NULL, buf, n);
    return dims_sym_str(t->rank, t->dims, t->sym, buf, n);
}

/* Shape strings for messages: a few rotating buffers so one message can name
 * several shapes. */
const char *mpx_sh_S(const shp *s) {
    static _Thread_local char bufs[4][160];
    static _Thread_local int k;
    char *b = bufs[k++ & 3];
    return mpx_dims_str(s->rank, s->d, b, sizeof bufs[0]);
}

const char *mpx_sh_TS(const mpx_tensor *t) {
    shp s = mpx_sh_shp_of(t);
    return mpx_sh_S(&s);
}

/* ---- node context -------------------------------------------------------- */

mpx_status mpx_node_error(const mpx_sctx *c, mpx_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    st = mpx_error_vnode(c->err, st, c->g->path, c->n, fmt, ap);
    va_end(ap);
    return st;
}

mpx_tensor *mpx_sh_in(const mpx_sctx *c, int i) {
    return i < c->n->n_inputs ? c->n->inputs[i] : NULL;
}

bool mpx_sh_known(const mpx_tensor *t) { return t && t->rank >= 0; }

/* A missing required input is a malformed model, not an unknown shape. */
mpx_status mpx_sh_need(const mpx_sctx *c, int k) {
    for (int i = 0; i < k; i++)
        if (!mpx_sh_in(c, i))
            return mpx_node_error(c, MPX_E_INVALID, "input %d is required but missing", i);
    return MPX_OK;
}

const mpx_tensor *mpx_sh_in0_known(const mpx_sctx *c, mpx_status *st) {
    if ((*st = mpx_sh_need(c, 1))) return NULL;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    if (mpx_sh_known(x)) return x;
    *st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    return NULL;
}

/* Nodes built without an opset (JSON without one, tests) follow the newest rules. */
int mpx_sh_opset(const mpx_sctx *c) { return c->n->opset > 0 ? c->n->opset : 1000; }

mpx_dtype mpx_sh_dt(const mpx_tensor *t) { return t ? t->dtype : MPX_DT_UNDEFINED; }

mpx_status mpx_sh_set_out(const mpx_sctx *c, int i, mpx_dtype dtype, const shp *s) {
    if (i >= c->n->n_outputs || !c->n->outputs[i]) return MPX_OK;
    mpx_tensor *t = c->n->outputs[i];
    if (t->flags & MPX_T_CONSTANT) return MPX_OK;
    if (dtype != MPX_DT_UNDEFINED) t->dtype = dtype;
    if (!s || s->rank < 0) {
        t->rank = -1;
        t->nelem = -1;
        for (int k = 0; k < MPX_MAX_RANK; k++) {
            t->dims[k] = -1;
            t->sym[k] = NULL;
        }
        return MPX_OK;
    }
    t->rank = s->rank;
    for (int k = 0; k < MPX_MAX_RANK; k++) {
        t->dims[k] = k < s->rank ? s->d[k] : -1;
        t->sym[k] = k < s->rank && s->d[k] < 0 ? s->s[k] : NULL;
    }
    mpx_error sub;
    if (mpx_dims_check(t->rank, t->dims, &t->nelem, &sub) != MPX_OK)
        return mpx_node_error(c, MPX_E_LIMIT, "output \"%s\" (%s): %s", t->name, mpx_sh_S(s), sub.msg);
    return MPX_OK;
}

mpx_status mpx_sh_check_rank(const mpx_sctx *c, int rank) {
    if (rank > MPX_MAX_RANK)
        return mpx_node_error(c, MPX_E_UNSUPPORTED, "output rank %d exceeds mpx's limit of %d", rank,
                              MPX_MAX_RANK);
    return MPX_OK;
}

/* ---- reading arguments ----------------------------------------------------- */


static int64_t f2i(float f) {
    if (!(f == f)) return 0;
    if (f >= 9.2e18f) return INT64_MAX;
    if (f <= -9.2e18f) return INT64_MIN;
    return (int64_t)f;
}

/* A tensor's value as int64s. V_UNKNOWN when present but not known (or longer
 * than max, which no shape argument is). */
int mpx_sh_ints_of(const mpx_tensor *t, int64_t *buf, int max, int *n) {
    *n = 0;
    if (!t) return V_ABSENT;
    if (t->nelem < 0 || (!t->i64 && !t->f32 && !t->f64) || t->nelem > max) return V_UNKNOWN;
    *n = (int)t->nelem;
    for (int i = 0; i < *n; i++) buf[i] = t->i64 ? t->i64[i] : t->f64 ? f2i((float)t->f64[i]) : f2i(t->f32[i]);
    return V_KNOWN;
}

int mpx_sh_floats_of(const mpx_tensor *t, float *buf, int max, int *n) {
    *n = 0;
    if (!t) return V_ABSENT;
    if (t->nelem < 0 || (!t->i64 && !t->f32 && !t->f64) || t->nelem > max) return V_UNKNOWN;
    *n = (int)t->nelem;
    for (int i = 0; i < *n; i++) buf[i] = t->f32 ? t->f32[i] : t->f64 ? (float)t->f64[i] : (float)t->i64[i];
    return V_KNOWN;
}

/* An int list that is an attribute in older opsets and input idx in newer ones. */
int mpx_sh_list_arg(const mpx_sctx *c, const char *attr, int idx, int64_t *buf, int max, int *n) {
    const mpx_attr *a = mpx_node_attr(c->n, attr);
    if (a && a->type == MPX_ATTR_INTS) {
        if (a->n > max) return V_UNKNOWN;
        *n = a->n;
        for (int i = 0; i < a->n; i++) buf[i] = a->ints[i];
        return V_KNOWN;
    }
    if (idx < 0) {
        *n = 0;
        return V_ABSENT;
    }
    return mpx_sh_ints_of(mpx_sh_in(c, idx), buf, max, n);
}

mpx_status mpx_sh_axes_arg(mpx_sctx *c, const mpx_tensor **x, int64_t *axes, int *na, int *v) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    *x = mpx_sh_in(c, 0);
    *v = mpx_sh_list_arg(c, "axes", 1, axes, LIST_MAX, na);
    return MPX_OK;
}

/* An INTS attribute of exactly n values, or n copies of dflt when absent. */
mpx_status mpx_sh_ints_attr(const mpx_sctx *c, const char *name, int n, int64_t dflt, int64_t *out) {
    const int64_t *v;
    int k = mpx_node_attr_ints(c->n, name, &v);
    if (!v) {
        for (int i = 0; i < n; i++) out[i] = dflt;
        return MPX_OK;
    }
    if (k != n)
        return mpx_node_error(c, MPX_E_SHAPE, "attribute %s has %d values, expected %d", name, k, n);
    for (int i = 0; i < n; i++) out[i] = v[i];
    return MPX_OK;
}

mpx_status mpx_sh_norm_axis(const mpx_sctx *c, int64_t ax, int rank, const char *what,
                            const mpx_tensor *t, int *out) {
    if (ax < -rank || ax >= rank)
        return mpx_node_error(c, MPX_E_SHAPE, "%s %lld is out of range for %s \"%s\" of shape %s",
                              what, (long long)ax, "input", t ? t->name : "?", t ? mpx_sh_TS(t) : "?");
    *out = (int)(ax < 0 ? ax + rank : ax);
    return MPX_OK;
}

/* ---- broadcasting ---------------------------------------------------------- */

mpx_status mpx_sh_bcast2(const mpx_sctx *c, const shp *a, const shp *b, shp *o) {
    if (a->rank < 0 || b->rank < 0) {
        *o = mpx_sh_shp_unknown();
        return MPX_OK;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    shp res = mpx_sh_shp_rank(r);
    for (int i = 0; i < r; i++) {
        int ia = a->rank - 1 - i, ib = b->rank - 1 - i, io = r - 1 - i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        const char *sa = ia >= 0 ? a->s[ia] : NULL, *sb = ib >= 0 ? b->s[ib] : NULL;
        res.d[io] = mpx_bcast_dim(da, db);
        if (res.d[io] == MPX_BCAST_NO)
            return mpx_node_error(c, MPX_E_SHAPE, "cannot broadcast %s with %s", mpx_sh_S(a), mpx_sh_S(b));
        /* The symbolic name travels with the dim it came from (shape's own
         * concern: values have no symbols). */
        if (da == 1) res.s[io] = sb;
        else if (db == 1) res.s[io] = sa;
        else if (da < 0 && db < 0) res.s[io] = sa && sb && strcmp(sa, sb) == 0 ? sa : NULL;
    }
    *o = res;
    return MPX_OK;
}

/* ---- families ---------------------------------------------------------------- */

typedef mpx_status shape_fn(mpx_sctx *c);

mpx_status mpx_shape_constant(mpx_sctx *c) {
    (void)c; /* mpx_graph_finalize gave the output its value */
    return MPX_OK;
}

mpx_status mpx_shape_unary(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s = mpx_sh_shp_of(x);
    if ((c->n->op == MPX_OP_Softmax || c->n->op == MPX_OP_LogSoftmax || c->n->op == MPX_OP_Hardmax) && s.rank >= 0) {
        int ax;
        st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", mpx_sh_opset(c) >= 13 ? -1 : 1),
                       s.rank ? s.rank : 1, "axis", x, &ax);
        if (st) return st;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &s);
}

mpx_status mpx_shape_unary_bool(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    shp s = mpx_sh_shp_of(mpx_sh_in(c, 0));
    return mpx_sh_set_out(c, 0, MPX_DT_BOOL, &s);
}

mpx_status mpx_shape_dropout(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    shp s = mpx_sh_shp_of(mpx_sh_in(c, 0));
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(mpx_sh_in(c, 0)), &s))) return st;
    return mpx_sh_set_out(c, 1, mpx_sh_opset(c) >= 10 ? MPX_DT_BOOL : mpx_sh_dt(mpx_sh_in(c, 0)), &s);
}

static mpx_status bcast_all(mpx_sctx *c, int first, shp *o) {
    *o = mpx_sh_shp_unknown();
    bool any = false;
    for (int i = first; i < c->n->n_inputs; i++) {
        const mpx_tensor *t = mpx_sh_in(c, i);
        if (!t) continue;
        shp s = mpx_sh_shp_of(t);
        if (!any) {
            *o = s;
            any = true;
            continue;
        }
        mpx_status st = mpx_sh_bcast2(c, o, &s, o);
        if (st) return st;
    }
    return MPX_OK;
}

/* Outputs broadcast from every input, after the first `need` are checked
 * present; dtype from input dt_input (-1: bool). */
static mpx_status bcast_out(mpx_sctx *c, int need, int dt_input) {
    mpx_status st = mpx_sh_need(c, need);
    if (st) return st;
    shp o;
    if ((st = bcast_all(c, 0, &o))) return st;
    return mpx_sh_set_out(c, 0, dt_input < 0 ? MPX_DT_BOOL : mpx_sh_dt(mpx_sh_in(c, dt_input)), &o);
}

mpx_status mpx_shape_broadcast(mpx_sctx *c) { return bcast_out(c, 1, 0); }
mpx_status mpx_shape_broadcast_bool(mpx_sctx *c) { return bcast_out(c, 2, -1); }
mpx_status mpx_shape_where(mpx_sctx *c) { return bcast_out(c, 3, 1); }

/* ---- normalisation ---------------------------------------------------------- */

mpx_status mpx_shape_norm(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s = mpx_sh_shp_of(x);
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), &s))) return st;
    if (c->n->op == MPX_OP_LayerNormalization) {
        if (s.rank < 0) return MPX_OK;
        int ax;
        if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", -1), s.rank, "axis", x, &ax)))
            return st;
        shp m = s;
        for (int i = ax; i < s.rank; i++) {
            m.d[i] = 1;
            m.s[i] = NULL;
        }
        int64_t st_type = mpx_node_attr_int(c->n, "stash_type", MPX_DT_FLOAT);
        if (st_type <= MPX_DT_UNDEFINED || st_type >= MPX_DT_COUNT_)
            return mpx_node_error(c, MPX_E_INVALID, "stash_type %lld is not an element type", (long long)st_type);
        mpx_dtype stash = (mpx_dtype)st_type;
        if ((st = mpx_sh_set_out(c, 1, stash, &m))) return st;
        return mpx_sh_set_out(c, 2, stash, &m);
    }
    if (c->n->op == MPX_OP_BatchNormalization || c->n->op == MPX_OP_InstanceNormalization) {
        /* Channel count agrees with the per-channel inputs. */
        int64_t ch = s.rank >= 2 ? s.d[1] : -1;
        for (int i = 1; i < c->n->n_inputs; i++) {
            const mpx_tensor *p = mpx_sh_in(c, i);
            if (!p || p->rank != 1 || p->dims[0] < 0) continue;
            if (ch >= 0 && p->dims[0] != ch)
                return mpx_node_error(c, MPX_E_SHAPE,
                                      "input \"%s\" has %lld elements but input \"%s\" (%s) has %lld channels",
                                      p->name, (long long)p->dims[0], x->name, mpx_sh_TS(x), (long long)ch);
            if (ch < 0) ch = p->dims[0];
        }
        /* Training-mode outputs (running or saved mean and variance) are per channel. */
        shp v = mpx_sh_shp_rank(1);
        v.d[0] = ch;
        if (ch < 0 && s.rank >= 2) v.s[0] = s.s[1];
        const mpx_tensor *mean = mpx_sh_in(c, 3);
        for (int i = 1; i < c->n->n_outputs; i++)
            if ((st = mpx_sh_set_out(c, i, mean ? mpx_sh_dt(mean) : mpx_sh_dt(x), &v))) return st;
    }
    return MPX_OK;
}

/* ---- the table ------------------------------------------------------------------ */

static shape_fn *const shape_table[MPX_OP_COUNT] = {
    [MPX_OP_UNKNOWN] = NULL,
#define MPX_OP(name, shape, cost, fold) [MPX_OP_##name] = mpx_shape_##shape,
#include "ops.def"
#undef MPX_OP
};

/* ---- binding, inference, queries ---------------------------------------------------- */

mpx_status mpx_graph_bind_input(mpx_graph *g, const char *input, int rank, const int64_t *dims,
                                mpx_error *err) {
    if (!g || !input) return mpx_error_set(err, MPX_E_ARG, "no model or no input name");
    mpx_tensor *t = NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, input) == 0) t = g->inputs[i];
    if (!t) {
        char names[512] = "";
        size_t used = 0;
        for (int i = 0; i < g->n_inputs && used < sizeof names; i++) {
            int w = snprintf(names + used, sizeof names - used, "%s\"%s\"", i ? ", " : "",
                             g->inputs[i]->name);
            if (w < 0) break;
            used += (size_t)w;
        }
        return mpx_error_set(err, MPX_E_ARG, "the model has no input \"%s\" (inputs: %s)", input,
                             g->n_inputs ? names : "none");
    }
    if (rank < 0 || rank > MPX_MAX_RANK || (rank > 0 && !dims))
        return mpx_error_set(err, MPX_E_ARG, "input \"%s\": rank %d is not supported (at most %d)", input,
                             rank, MPX_MAX_RANK);
    char want[160], got[160];
    dims_sym_str(t->decl_rank, t->decl_dims, t->decl_sym, want, sizeof want);
    mpx_dims_str(rank, dims, got, sizeof got);
    if (t->decl_rank >= 0 && rank != t->decl_rank)
        return mpx_error_set(err, MPX_E_ARG, "input \"%s\" has rank %d (declared %s), not %d (%s)", input,
                             t->decl_rank, want, rank, got);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\": dim %d is %lld", input, i,
                                 (long long)dims[i]);
        if (t->decl_rank >= 0 && t->decl_dims[i] >= 0 && t->decl_dims[i] != dims[i])
            return mpx_error_set(err, MPX_E_ARG, "input \"%s\": dim %d is fixed at %lld (declared %s), not %lld",
                                 input, i, (long long)t->decl_dims[i], want, (long long)dims[i]);
    }
    int64_t n;
    mpx_error sub;
    if (mpx_dims_check(rank, dims, &n, &sub) != MPX_OK)
        return mpx_error_set(err, MPX_E_LIMIT, "input \"%s\" of shape %s: %s", input, got, sub.msg);
    t->rank = rank;
    t->nelem = n;
    for (int i = 0; i < MPX_MAX_RANK; i++) {
        t->dims[i] = i < rank ? dims[i] : -1;
        t->sym[i] = NULL;
    }
    return MPX_OK;
}

mpx_status mpx_graph_infer(mpx_graph *g, mpx_error *err) {
    if (!g) return mpx_error_set(err, MPX_E_ARG, "no model");
    /* Everything derived is recomputed: inputs keep their binding (or
     * declared shape), constants their value. */
    for (int i = 0; i < g->n_tensors; i++) {
        mpx_tensor *t = g->tensors[i];
        if (t->flags & MPX_T_CONSTANT) continue;
        t->flags &= ~(uint32_t)MPX_T_FOLDED;
        t->f32 = NULL;
        t->i64 = NULL;
        t->f64 = NULL;
        if (!t->producer) continue;
        t->rank = -1;
        t->nelem = -1;
        for (int k = 0; k < MPX_MAX_RANK; k++) {
            t->dims[k] = -1;
            t->sym[k] = NULL;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        mpx_sctx c;
        memset(&c, 0, sizeof c);
        c.g = g;
        c.n = g->nodes[i];
        c.err = err;
        if (c.n->op <= MPX_OP_UNKNOWN || c.n->op >= MPX_OP_COUNT) continue;
        /* The nodes of an If's branch that a known condition rules out keep
         * unknown shapes (they never run, and need not fit the inputs). */
        if (mpx_node_inactive(c.n)) continue;
        mpx_error sub = {0};
        c.err = c.n->guard ? &sub : err;
        mpx_status st = shape_table[c.n->op](&c);
        if (st == MPX_OK) st = mpx_fold_node(&c);
        /* Identity and If hand on what they read: a container stays one */
        if (st == MPX_OK && (c.n->op == MPX_OP_Identity || c.n->op == MPX_OP_If))
            for (int j = 0; j < c.n->n_outputs; j++) {
                const mpx_tensor *src = c.n->op == MPX_OP_If ? c.n->inputs[1 + j] : c.n->inputs[0];
                if (c.n->outputs[j] && src && (src->flags & MPX_T_SEQUENCE))
                    c.n->outputs[j]->flags |= src->flags & (MPX_T_SEQUENCE | MPX_T_OPTIONAL | MPX_T_INNER_SEQ);
            }
        /* A branch that may not run must not stop the model: its outputs
         * stay unknown, and running it (when its condition selects it) gives
         * the kernel's own message. */
        if (st != MPX_OK && c.n->guard) {
            for (int j = 0; j < c.n->n_outputs; j++)
                if (c.n->outputs[j] && !(c.n->outputs[j]->flags & MPX_T_CONSTANT)) {
                    mpx_sh_set_out(&c, j, MPX_DT_UNDEFINED, NULL);
                    c.n->outputs[j]->f32 = NULL, c.n->outputs[j]->i64 = NULL, c.n->outputs[j]->f64 = NULL;
                    c.n->outputs[j]->flags &= ~(uint32_t)MPX_T_FOLDED;
                }
            continue;
        }
        if (st != MPX_OK) return st;
    }
    for (int i = 0; i < g->n_nodes; i++) mpx_cost_node(g->nodes[i]);
    return MPX_OK;
}

int mpx_graph_count_unknown(const mpx_graph *g, const mpx_tensor **first_unknown) {
    if (first_unknown) *first_unknown = NULL;
    if (!g) return 0;
    int n = 0;
    for (int i = 0; i < g->n_tensors; i++) n += g->tensors[i]->rank < 0;
    if (first_unknown && n) {
        for (int i = 0; i < g->n_inputs && !*first_unknown; i++)
            if (g->inputs[i]->rank < 0) *first_unknown = g->inputs[i];
        for (int i = 0; i < g->n_nodes && !*first_unknown; i++)
            for (int j = 0; j < g->nodes[i]->n_outputs && !*first_unknown; j++) {
                const mpx_tensor *t = g->nodes[i]->outputs[j];
                if (t && t->rank < 0) *first_unknown = t;
            }
        for (int i = 0; i < g->n_tensors && !*first_unknown; i++)
            if (g->tensors[i]->rank < 0) *first_unknown = g->tensors[i];
    }
    return n;
}
