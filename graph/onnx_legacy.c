/* onnx_legacy.c - models of ONNX opsets 1-6 read in opset 7's form, and the
 * experimental ops of opsets 1-9 read as standard ops.
 *
 * Every op of opset 7 either kept the form it had before (its schema's
 * since_version is below 7) or changed at 7 or earlier; this pass rewrites
 * the nodes whose form changed into the form opset 7 gives them, so that the
 * kernels, shape inference, the plan and the reports know one meaning per op
 * and need no rules for opsets nobody writes any more. After it the graph is
 * an opset-7 graph (g->opset 7, every default-domain node opset 7) and
 * g->opset_file keeps what the file said. The rewrites, as ONNX's changelog
 * defines the old forms:
 *
 *  - consumed_inputs (opset 1, every op that had it) is dropped: it only
 *    described in-place reuse;
 *  - BatchNormalization and Dropout lose is_test: an inference graph is read
 *    (running statistics, Dropout passing its input through) whatever
 *    is_test says, as an inference runtime runs such a model: opset 7's form
 *    with only Y wired is the inference form;
 *    with is_test=0 and the statistics outputs wired, the node is opset
 *    7's training form; those outputs wired with is_test=1 (left unfilled
 *    then) are refused;
 *  - Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less with
 *    broadcast=1 and an axis: B's dims align with A's from axis on, so B
 *    gets an Unsqueeze that appends the trailing 1s numpy broadcasting needs
 *    (this needs A's rank, followed through the graph from the declared
 *    shapes; where it cannot be known the node is refused by name); without
 *    axis the old alignment is the trailing one, numpy's;
 *  - Gemm loses broadcast (C of the full shape or broadcast: the same sums);
 *  - Reshape's shape attribute (before 5) becomes an int64 initializer input;
 *  - Concat without axis (before 4) gets axis 1, its old default;
 *  - Pad's paddings (1) is named pads (2), the same layout;
 *  - Cast's `to` as a type name (1) becomes the type number (6);
 *  - Split's sizes as input 1 (1) become the split attribute (2);
 *  - Tile's tiles and axis inputs (1) become a repeats input (6);
 *  - Upsample's height_scale/width_scale and upper-case mode (1) become
 *    scales [1, 1, h, w] and the mode's opset-7 name;
 *  - LpPool/GlobalLpPool's float p (1) becomes the integer p (2);
 *  - LSTM/GRU/RNN lose output_sequence (1): it only said whether Y is wired;
 *  - the experimental ops of opsets 1-9 that ONNX Runtime runs become
 *    standard ops (below): ImageScaler, Scale, Affine, ScaledTanh,
 *    ParametricSoftplus and Crop, and MeanVarianceNormalization's
 *    experimental form (before 9) opset 9's.
 * Ops whose inputs must be constants for the rewrite (Reshape's shape is an
 * attribute anyway; Split's sizes, Tile's tiles and axis) are refused by name
 * when they are computed. Loop and Scan bodies of such models are refused. */
#include "graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    mpx_graph *g;
    mpx_error *err;
    int opset;
    int *rank; /* by tensor index; -1 unknown */
    int cap;
} lctx;

static mpx_status lfail(const lctx *c, const mpx_node *n, mpx_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Experimental ops (no schema in ONNX's defs, so onnx.version_converter
 * cannot help with them). */
static bool experimental_op(const char *op) {
    static const char *const ops[] = {"ImageScaler", "Scale", "Affine", "ScaledTanh", "ParametricSoftplus", "Crop",
                                      "MeanVarianceNormalization"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(op, ops[i]) == 0) return true;
    return false;
}

static mpx_status lfail(const lctx *c, const mpx_node *n, mpx_status st, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    bool hint = c->opset < 7 && !experimental_op(n->op_type);
    return mpx_error_at(c->err, st, c->g->path, 0, 0, "node \"%s\" (%s, opset %d): %s%s", n->name, n->op_type,
                        c->opset, msg,
                        hint ? "; or convert the model to opset 7 first (python3 -c \"import onnx, "
                               "onnx.version_converter as v; onnx.save(v.convert_version(onnx.load('in.onnx'), 7), "
                               "'out.onnx')\")"
                             : "");
}

static mpx_status oom(const lctx *c) { return mpx_error_set(c->err, MPX_E_NOMEM, "out of memory"); }

static bool is(const mpx_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }

static int rank_of(const lctx *c, const mpx_tensor *t) {
    return t && t->index < c->cap ? c->rank[t->index] : -1;
}

/* (a rank mpx cannot hold is unknown: shape inference names the fault) */
static void set_rank(lctx *c, const mpx_tensor *t, int r) {
    if (t && t->index < c->cap) c->rank[t->index] = r >= 0 && r <= MPX_MAX_RANK ? r : -1;
}

static void drop_attr(mpx_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) {
            memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->n_attrs - i - 1) * sizeof *n->attrs);
            n->n_attrs--;
            return;
        }
}

/* A new attribute slot (the array is copied one longer). */
static mpx_attr *add_attr(lctx *c, mpx_node *n, const char *name, mpx_attr_type type) {
    mpx_attr *a = mpx_arena_calloc(c->g->arena, (size_t)n->n_attrs + 1, sizeof *a);
    const char *nm = mpx_arena_strdup(c->g->arena, name);
    if (!a || !nm) return NULL;
    if (n->n_attrs) memcpy(a, n->attrs, (size_t)n->n_attrs * sizeof *a);
    n->attrs = a;
    mpx_attr *x = &a[n->n_attrs++];
    x->name = nm, x->type = type;
    return x;
}

static mpx_attr *attr_mut(mpx_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

/* A tensor name not taken yet: "<base>_<what>", then "#k" suffixes. */
static mpx_tensor *fresh_tensor(lctx *c, const char *base, const char *what) {
    char name[900];
    snprintf(name, sizeof name, "%.700s_%s", base, what);
    for (int k = 2; mpx_graph_find_tensor(c->g, name); k++)
        snprintf(name, sizeof name, "%.700s_%s#%d", base, what, k);
    return mpx_graph_tensor(c->g, name);
}

/* A new int64 initializer of one dim holding vals. */
static mpx_tensor *int_init(lctx *c, const mpx_node *n, const char *what, const int64_t *vals, int k) {
    mpx_tensor *t = fresh_tensor(c, n->name, what);
    int64_t dim = k;
    if (!t || mpx_tensor_declare(t, MPX_DT_INT64, 1, &dim, NULL, c->err) != MPX_OK ||
        mpx_tensor_alloc_value(c->g, t, MPX_DT_INT64, 1, &dim, c->err) != MPX_OK)
        return NULL;
    if (k) memcpy(t->i64, vals, (size_t)k * sizeof *vals);
    t->flags |= MPX_T_INITIALIZER;
    set_rank(c, t, 1);
    return t;
}

/* n's inputs replaced by k new slots (the first min(k, old) kept). */
static bool resize_inputs(lctx *c, mpx_node *n, int k) {
    mpx_tensor **in = mpx_arena_calloc(c->g->arena, (size_t)k, sizeof *in);
    if (!in) return false;
    for (int i = 0; i < k && i < n->n_inputs; i++) in[i] = n->inputs[i];
    n->inputs = in, n->n_inputs = k;
    return true;
}

/* An int64 constant input's values (an initializer loaded in memory). */
static bool const_ints(const mpx_tensor *t, const int64_t **v, int64_t *count) {
    if (!t || !(t->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT)) || !t->i64 || t->nelem < 0) return false;
    *v = t->i64, *count = t->nelem;
    return true;
}

static bool binary_op(const mpx_node *n) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (is(n, ops[i])) return true;
    return false;
}

/* broadcast=1 with axis: B [b0..] sits at A's dims axis..axis+rb-1; an
 * Unsqueeze appends the ra - axis - rb trailing 1s numpy broadcasting needs. */
static mpx_status binary(lctx *c, mpx_node *n) {
    int64_t bc = mpx_node_attr_int(n, "broadcast", 0);
    const mpx_attr *ax = mpx_node_attr(n, "axis");
    if (bc && ax && n->n_inputs == 2 && n->inputs[0] && n->inputs[1]) {
        int ra = rank_of(c, n->inputs[0]), rb = rank_of(c, n->inputs[1]);
        if (ra < 0 || rb < 0)
            return lfail(c, n, MPX_E_UNSUPPORTED,
                         "broadcast=1 with axis=%lld aligns input B with input A's dims from that axis, which needs "
                         "the rank of %s \"%s\"; mpx could not follow it from the declared shapes (declare its shape "
                         "in the model's value_info)",
                         (long long)ax->i, ra < 0 ? "input A" : "input B",
                         ra < 0 ? n->inputs[0]->name : n->inputs[1]->name);
        int64_t axis = ax->i < 0 ? ax->i + ra : ax->i;
        int64_t k = ra - axis - rb;
        if (axis < 0 || k < 0)
            return lfail(c, n, MPX_E_INVALID,
                         "broadcast=1 with axis=%lld: input B of rank %d does not fit in input A of rank %d from that "
                         "axis", (long long)ax->i, rb, ra);
        if (k > 0 && rb > 0) { /* (a scalar B broadcasts as it is) */
            mpx_tensor *u = fresh_tensor(c, n->inputs[1]->name, "aligned");
            char nm[900];
            snprintf(nm, sizeof nm, "%.700s/broadcast_axis", n->name);
            mpx_node *un = u ? mpx_graph_add_node(c->g, nm, "Unsqueeze", "", 1, 1, 0) : NULL;
            mpx_attr *a = un ? add_attr(c, un, "axes", MPX_ATTR_INTS) : NULL;
            int64_t *axes = a ? mpx_arena_calloc(c->g->arena, (size_t)k, sizeof *axes) : NULL;
            if (!axes) return oom(c);
            for (int64_t i = 0; i < k; i++) axes[i] = rb + i;
            a->ints = axes, a->n = (int)k;
            un->inputs[0] = n->inputs[1], un->outputs[0] = u;
            un->opset = 7;
            set_rank(c, u, (int)(rb + k));
            n->inputs[1] = u;
        }
    }
    drop_attr(n, "broadcast");
    drop_attr(n, "axis");
    return MPX_OK;
}

static int cast_type(const char *s) {
    static const char *const names[] = {"", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64"};
    for (int i = 1; i < (int)(sizeof names / sizeof *names); i++)
        if (strcasecmp(s, names[i]) == 0) return i;
    return 0;
}

/* The rank of each output, from the inputs' ranks (what the rewrites above
 * need: A's rank for the binary ops, the input's for Tile). -1: unknown. */
static void out_ranks(lctx *c, const mpx_node *n) {
    int r0 = n->n_inputs && n->inputs[0] ? rank_of(c, n->inputs[0]) : -1, r = -1;
    const int64_t *v;
    int k;
    if (is(n, "Gemm") || is(n, "Flatten")) r = 2;
    else if (is(n, "Shape")) r = 1;
    else if (is(n, "Size")) r = 0;
    else if (is(n, "Constant")) {
        const mpx_attr *a = mpx_node_attr(n, "value");
        r = a && a->t ? a->t->rank : -1;
    } else if (is(n, "Reshape")) {
        if ((k = mpx_node_attr_ints(n, "shape", &v)) > 0) r = k;
        else if (n->n_inputs > 1 && n->inputs[1] && n->inputs[1]->nelem >= 0 && n->inputs[1]->rank == 1)
            r = (int)n->inputs[1]->nelem;
    } else if (is(n, "MatMul")) {
        int r1 = n->n_inputs > 1 ? rank_of(c, n->inputs[1]) : -1;
        if (r0 >= 2 && r1 >= 2) r = r0 > r1 ? r0 : r1;
        else if (r0 >= 0 && r1 >= 0) r = (r0 > r1 ? r0 : r1) - 1;
    } else if (is(n, "Squeeze")) {
        if (r0 >= 0 && (k = mpx_node_attr_ints(n, "axes", &v)) > 0) r = r0 - k;
    } else if (is(n, "Unsqueeze")) {
        if (r0 >= 0 && (k = mpx_node_attr_ints(n, "axes", &v)) > 0) r = r0 + k;
    } else if (strncmp(n->op_type, "Reduce", 6) == 0 || is(n, "ArgMax") || is(n, "ArgMin")) {
        bool keep = mpx_node_attr_int(n, "keepdims", 1) != 0;
        if (keep) r = r0;
        else if (r0 >= 0 && (is(n, "ArgMax") || is(n, "ArgMin"))) r = r0 - 1;
        else if (r0 >= 0) r = (k = mpx_node_attr_ints(n, "axes", &v)) > 0 ? r0 - k : 0;
    } else if (is(n, "Gather")) {
        int r1 = n->n_inputs > 1 ? rank_of(c, n->inputs[1]) : -1;
        if (r0 >= 0 && r1 >= 0) r = r0 + r1 - 1;
    } else if (is(n, "LSTM") || is(n, "GRU") || is(n, "RNN")) {
        for (int j = 0; j < n->n_outputs; j++) set_rank(c, n->outputs[j], j == 0 ? 4 : 3);
        return;
    } else if (binary_op(n) || is(n, "Sum") || is(n, "Max") || is(n, "Min") || is(n, "Mean")) {
        /* opset-7 broadcasting: the largest rank */
        r = r0;
        for (int j = 1; j < n->n_inputs; j++) {
            int rj = rank_of(c, n->inputs[j]);
            if (rj < 0 || r < 0) r = -1;
            else if (rj > r) r = rj;
        }
    } else {
        /* Everything else these models hold keeps its first input's rank
         * (element-wise ops, Conv and the pools, normalisations, Concat,
         * Transpose, Pad, Slice, Split, Tile, Upsample, Softmax, Cast,
         * Dropout, ...). Ops outside this list that change the rank do not
         * occur before opset 7. */
        r = r0;
    }
    for (int j = 0; j < n->n_outputs; j++) set_rank(c, n->outputs[j], j == 0 || is(n, "Split") ? r : -1);
}

static void note_split(lctx *c, const mpx_node *n, const char *op) {
    if (!c->g->split_node) c->g->split_node = n->name, c->g->split_op = op;
}

/* MeanVarianceNormalization before opset 9 (experimental): across_channels
 * and normalize_variance instead of axes. ONNX Runtime, the reference for
 * this op, normalises over N, H, W (across_channels=0, the default) or over
 * every dim (1), as opset 9's axes [0, 2, 3] and [0, 1, 2, 3] for NCHW;
 * normalize_variance=0 only subtracts that mean, which is read as
 * Sub(X, ReduceMean(X, axes, keepdims=1)). */
static mpx_status mvn(lctx *c, mpx_node *n) {
    if (mpx_node_attr(n, "axes")) return MPX_OK;
    bool across = mpx_node_attr_int(n, "across_channels", 0) != 0;
    bool var = mpx_node_attr_int(n, "normalize_variance", 1) != 0;
    drop_attr(n, "across_channels");
    drop_attr(n, "normalize_variance");
    if (!across && var) return MPX_OK; /* opset 9's default axes */
    int r = n->n_inputs == 1 && n->inputs[0] ? rank_of(c, n->inputs[0]) : -1;
    if (r < 2)
        return lfail(c, n, MPX_E_UNSUPPORTED,
                     "across_channels=%d normalize_variance=%d: the rank of the input could not be followed from the "
                     "declared shapes (declare its shape in the model's value_info)", across, var);
    mpx_node *red = n;
    mpx_tensor *mean = NULL;
    if (!var) {
        char nm[900];
        snprintf(nm, sizeof nm, "%.700s/mean", n->name);
        mean = fresh_tensor(c, n->name, "mean");
        red = mean ? mpx_graph_add_node(c->g, nm, "ReduceMean", "", 1, 1, 0) : NULL;
        if (!red || !resize_inputs(c, n, 2)) return oom(c);
        red->inputs[0] = n->inputs[0], red->outputs[0] = mean, red->opset = n->opset;
        mpx_attr *k = add_attr(c, red, "keepdims", MPX_ATTR_INT);
        if (!k) return oom(c);
        k->i = 1;
        set_rank(c, mean, r);
    }
    mpx_attr *a = add_attr(c, red, "axes", MPX_ATTR_INTS);
    int64_t *axes = a ? mpx_arena_calloc(c->g->arena, (size_t)r, sizeof *axes) : NULL;
    if (!axes) return oom(c);
    a->ints = axes;
    for (int i = 0; i < r; i++)
        if (across || i != 1) axes[a->n++] = i;
    if (!var) {
        const char *sub = mpx_arena_strdup(c->g->arena, "Sub");
        if (!sub) return oom(c);
        n->op_type = sub;
        n->inputs[1] = mean;
        note_split(c, n, "MeanVarianceNormalization");
    }
    return MPX_OK;
}

/* The other experimental element-wise ops of opsets 1-9 that ONNX Runtime
 * runs, read as chains of standard ops on scalars (ORT computes them in the
 * same steps): Scale: x * scale; Affine: x * alpha + beta; ScaledTanh:
 * alpha * tanh(beta * x); ParametricSoftplus: alpha * softplus(beta * x).
 * The last step is the node itself (name and output kept), the others are
 * "<node>/<k>_<op>". */
typedef struct {
    const char *op;
    const char *attr; /* the scalar operand's attribute, NULL for a unary op */
    float dflt;
} step;

static mpx_status chain(lctx *c, mpx_node *n, const step *s, int k) {
    if (n->n_inputs != 1 || !n->inputs[0] || n->n_outputs != 1 || !n->outputs[0])
        return lfail(c, n, MPX_E_INVALID, "it takes one input and gives one output");
    const char *op = n->op_type;
    float vals[4];
    for (int i = 0; i < k; i++) vals[i] = s[i].attr ? mpx_node_attr_float(n, s[i].attr, s[i].dflt) : 0.0f;
    mpx_tensor *cur = n->inputs[0];
    int r = rank_of(c, cur);
    for (int i = 0; i < k; i++) {
        mpx_tensor *kt = NULL;
        char what[32];
        if (s[i].attr) {
            snprintf(what, sizeof what, "%s", s[i].attr);
            kt = fresh_tensor(c, n->name, what);
            if (!kt || mpx_tensor_declare(kt, MPX_DT_FLOAT, 0, NULL, NULL, c->err) != MPX_OK ||
                mpx_tensor_alloc_value(c->g, kt, MPX_DT_FLOAT, 0, NULL, c->err) != MPX_OK)
                return oom(c);
            kt->f32[0] = vals[i];
            kt->flags |= MPX_T_INITIALIZER;
            set_rank(c, kt, 0);
        }
        mpx_node *m;
        if (i == k - 1) {
            m = n;
            n->op_type = mpx_arena_strdup(c->g->arena, s[i].op);
            if (!n->op_type || !resize_inputs(c, n, kt ? 2 : 1)) return oom(c);
            n->n_attrs = 0;
        } else {
            char nm[900];
            snprintf(nm, sizeof nm, "%.700s/%d_%s", n->name, i, s[i].op);
            snprintf(what, sizeof what, "step%d", i);
            mpx_tensor *out = fresh_tensor(c, n->name, what);
            m = out ? mpx_graph_add_node(c->g, nm, s[i].op, "", kt ? 2 : 1, 1, 0) : NULL;
            if (!m) return oom(c);
            m->outputs[0] = out, m->opset = n->opset;
            set_rank(c, out, r);
        }
        m->inputs[0] = cur;
        if (kt) m->inputs[1] = kt;
        cur = m->outputs[0];
    }
    note_split(c, n, op);
    return MPX_OK;
}

/* Crop (experimental, opsets 1-9; ORT runs it): NCHW with border [left,
 * top, right, bottom] and optional scale [height, width], read as Slice of
 * dims 2 and 3 (a negative end counts from the end, so H and W need not be
 * known at load). */
static mpx_status crop(lctx *c, mpx_node *n) {
    const int64_t *b, *sc;
    int nb = mpx_node_attr_ints(n, "border", &b), ns = mpx_node_attr_ints(n, "scale", &sc);
    if (nb != 4 || (ns != 0 && ns != 2) || n->n_inputs != 1 || !n->inputs[0])
        return lfail(c, n, MPX_E_INVALID, "Crop takes one input, border as 4 integers and scale as none or 2");
    for (int i = 0; i < nb + ns; i++) {
        int64_t v = i < nb ? b[i] : sc[i - nb];
        if (v < 0 || v > INT32_MAX)
            return lfail(c, n, MPX_E_INVALID, "border and scale must be counts from 0 to %d, not %lld", INT32_MAX,
                         (long long)v);
    }
    int64_t st[2] = {b[1], b[0]}, en[2], ax[2] = {2, 3};
    for (int i = 0; i < 2; i++)
        en[i] = ns ? st[i] + sc[i] : b[3 - i] ? -b[3 - i] : INT64_MAX;
    const char *op = n->op_type;
    n->op_type = mpx_arena_strdup(c->g->arena, "Slice");
    if (!n->op_type) return oom(c);
    n->n_attrs = 0;
    const char *names[3] = {"starts", "ends", "axes"};
    const int64_t *src[3] = {st, en, ax};
    for (int j = 0; j < 3; j++) {
        mpx_attr *a = add_attr(c, n, names[j], MPX_ATTR_INTS);
        int64_t *v = a ? mpx_arena_calloc(c->g->arena, 2, sizeof *v) : NULL;
        if (!v) return oom(c);
        v[0] = src[j][0], v[1] = src[j][1];
        a->ints = v, a->n = 2;
    }
    note_split(c, n, op);
    return MPX_OK;
}

/* ImageScaler (experimental in opsets 1-9, removed at 10; image models of
 * that age open with it): y = scale * x + bias[c] on NCHW, read as
 * Mul(x, scale) named "<node>/scale" then this node as Add(., bias as
 * [C, 1, 1]); ONNX Runtime computes the same product then sum. */
static mpx_status image_scaler(lctx *c, mpx_node *n) {
    const mpx_attr *b = mpx_node_attr(n, "bias");
    if (n->n_inputs != 1 || !n->inputs[0] || n->n_outputs != 1 || (b && b->type != MPX_ATTR_FLOATS))
        return lfail(c, n, MPX_E_INVALID, "ImageScaler takes one input and gives one output, with bias a list of floats");
    int nb = b ? b->n : 0;
    char nm[900];
    snprintf(nm, sizeof nm, "%.700s/scale", n->name);
    mpx_tensor *st = fresh_tensor(c, n->name, "scale"), *bt = fresh_tensor(c, n->name, "bias"),
               *mid = fresh_tensor(c, n->name, "scaled");
    int64_t bdims[3] = {nb, 1, 1};
    if (!st || !bt || !mid || mpx_tensor_declare(st, MPX_DT_FLOAT, 0, NULL, NULL, c->err) != MPX_OK ||
        mpx_tensor_alloc_value(c->g, st, MPX_DT_FLOAT, 0, NULL, c->err) != MPX_OK ||
        mpx_tensor_declare(bt, MPX_DT_FLOAT, 3, bdims, NULL, c->err) != MPX_OK ||
        mpx_tensor_alloc_value(c->g, bt, MPX_DT_FLOAT, 3, bdims, c->err) != MPX_OK)
        return oom(c);
    st->f32[0] = mpx_node_attr_float(n, "scale", 1.0f);
    for (int i = 0; i < nb; i++) bt->f32[i] = b->floats[i];
    st->flags |= MPX_T_INITIALIZER, bt->flags |= MPX_T_INITIALIZER;
    set_rank(c, st, 0);
    set_rank(c, bt, 3);
    mpx_node *mul = mpx_graph_add_node(c->g, nm, "Mul", "", 2, 1, 0);
    if (!mul || !resize_inputs(c, n, 2)) return oom(c);
    mul->inputs[0] = n->inputs[0], mul->inputs[1] = st, mul->outputs[0] = mid;
    mul->opset = n->opset;
    set_rank(c, mid, rank_of(c, n->inputs[0]));
    const char *add = mpx_arena_strdup(c->g->arena, "Add");
    if (!add) return oom(c);
    n->op_type = add;
    n->inputs[0] = mid, n->inputs[1] = bt;
    drop_attr(n, "bias");
    drop_attr(n, "scale");
    note_split(c, n, "ImageScaler");
    return MPX_OK;
}

static mpx_status node(lctx *c, mpx_node *n) {
    drop_attr(n, "consumed_inputs");
    if (n->body)
        return lfail(c, n, MPX_E_UNSUPPORTED, "mpx does not read Loop or Scan bodies of models before opset 7");
    if (binary_op(n)) return binary(c, n);
    if (is(n, "Gemm")) drop_attr(n, "broadcast");
    else if (is(n, "LSTM") || is(n, "GRU") || is(n, "RNN")) drop_attr(n, "output_sequence");
    else if (is(n, "BatchNormalization") || is(n, "Dropout")) {
        if (mpx_node_attr_int(n, "is_test", 0) != 0)
            for (int j = 1; j < n->n_outputs; j++)
                if (n->outputs[j])
                    return lfail(c, n, MPX_E_UNSUPPORTED,
                                 "is_test=1 with output %d (\"%s\") wired, which opset %d leaves unfilled in "
                                 "test mode", j, n->outputs[j]->name, c->opset);
        drop_attr(n, "is_test");
    } else if (is(n, "Reshape")) {
        const int64_t *v;
        int k = mpx_node_attr_ints(n, "shape", &v);
        const mpx_attr *a = mpx_node_attr(n, "shape");
        if (a && a->type != MPX_ATTR_INTS)
            return lfail(c, n, MPX_E_INVALID, "the shape attribute is not a list of integers");
        if (a) {
            mpx_tensor *s = int_init(c, n, "shape", v, k);
            if (!s || !resize_inputs(c, n, 2)) return oom(c);
            n->inputs[1] = s;
            drop_attr(n, "shape");
        }
    } else if (is(n, "Concat")) {
        if (!mpx_node_attr(n, "axis")) {
            mpx_attr *a = add_attr(c, n, "axis", MPX_ATTR_INT);
            if (!a) return oom(c);
            a->i = 1;
        }
    } else if (is(n, "Pad")) {
        mpx_attr *a = attr_mut(n, "paddings");
        if (a && !mpx_node_attr(n, "pads")) a->name = "pads";
    } else if (is(n, "Cast")) {
        mpx_attr *a = attr_mut(n, "to");
        if (a && a->type == MPX_ATTR_STRING) {
            int t = cast_type(a->s ? a->s : "");
            if (!t) return lfail(c, n, MPX_E_INVALID, "to=\"%s\" is not a type name ONNX knows", a->s ? a->s : "");
            a->type = MPX_ATTR_INT, a->i = t, a->s = NULL, a->s_len = 0;
        }
    } else if (is(n, "Split")) {
        if (n->n_inputs > 1 && n->inputs[1]) {
            const int64_t *v;
            int64_t k;
            if (!const_ints(n->inputs[1], &v, &k))
                return lfail(c, n, MPX_E_UNSUPPORTED,
                             "the split sizes come from input 1 (\"%s\"), which is not a constant; opset 2 made "
                             "them an attribute and mpx reads only a constant here", n->inputs[1]->name);
            drop_attr(n, "split");
            mpx_attr *a = add_attr(c, n, "split", MPX_ATTR_INTS);
            int64_t *s = a ? mpx_arena_calloc(c->g->arena, (size_t)(k ? k : 1), sizeof *s) : NULL;
            if (!s) return oom(c);
            memcpy(s, v, (size_t)k * sizeof *s);
            a->ints = s, a->n = (int)k;
        }
        if (n->n_inputs > 1 && !resize_inputs(c, n, 1)) return oom(c);
    } else if (is(n, "Tile") && c->opset < 6) {
        const int64_t *tv, *av;
        int64_t tk, ak;
        int r = n->n_inputs == 3 ? rank_of(c, n->inputs[0]) : -1;
        if (n->n_inputs != 3 || !const_ints(n->inputs[1], &tv, &tk) || !const_ints(n->inputs[2], &av, &ak) ||
            tk != 1 || ak != 1)
            return lfail(c, n, MPX_E_UNSUPPORTED,
                         "Tile of opset 1 takes tiles and axis as inputs 1 and 2; mpx reads them only as one-element "
                         "constants (opset 6 made them one repeats input)");
        if (r < 0 || !n->inputs[0])
            return lfail(c, n, MPX_E_UNSUPPORTED,
                         "the rank of input \"%s\" could not be followed from the declared shapes (declare its shape "
                         "in the model's value_info)", n->inputs[0] ? n->inputs[0]->name : "");
        int64_t axis = av[0] < 0 ? av[0] + r : av[0];
        if (axis < 0 || axis >= r)
            return lfail(c, n, MPX_E_INVALID, "axis %lld is outside the input's %d dims", (long long)av[0], r);
        int64_t reps[MPX_MAX_RANK];
        for (int i = 0; i < r; i++) reps[i] = i == axis ? tv[0] : 1;
        mpx_tensor *t = int_init(c, n, "repeats", reps, r);
        if (!t || !resize_inputs(c, n, 2)) return oom(c);
        n->inputs[1] = t;
    } else if (is(n, "Upsample")) {
        const mpx_attr *h = mpx_node_attr(n, "height_scale"), *w = mpx_node_attr(n, "width_scale");
        if (h || w) {
            int r = n->n_inputs ? rank_of(c, n->inputs[0]) : -1;
            if (r != 4 && r != -1)
                return lfail(c, n, MPX_E_INVALID, "height_scale/width_scale apply to NCHW inputs, this one has rank %d",
                             r);
            mpx_attr *a = add_attr(c, n, "scales", MPX_ATTR_FLOATS);
            float *s = a ? mpx_arena_calloc(c->g->arena, 4, sizeof *s) : NULL;
            if (!s) return oom(c);
            s[0] = s[1] = 1.0f, s[2] = h ? h->f : 1.0f, s[3] = w ? w->f : 1.0f;
            a->floats = s, a->n = 4;
            drop_attr(n, "height_scale");
            drop_attr(n, "width_scale");
        }
        mpx_attr *m = attr_mut(n, "mode");
        if (m && m->type == MPX_ATTR_STRING && m->s) {
            const char *nm = strcasecmp(m->s, "bilinear") == 0 || strcasecmp(m->s, "linear") == 0 ? "linear"
                             : strcasecmp(m->s, "nearest") == 0                                  ? "nearest"
                                                                                                  : NULL;
            if (!nm) return lfail(c, n, MPX_E_INVALID, "mode \"%s\" is neither NEAREST nor BILINEAR", m->s);
            m->s = nm, m->s_len = strlen(nm);
        }
    } else if (is(n, "LpPool") || is(n, "GlobalLpPool")) {
        mpx_attr *p = attr_mut(n, "p");
        if (p && p->type == MPX_ATTR_FLOAT) {
            if (!(p->f >= 1 && p->f <= 1e6f) || p->f != (float)(int64_t)p->f)
                return lfail(c, n, MPX_E_UNSUPPORTED, "p=%g: opset 2 made p an integer, and mpx computes integer p only",
                             (double)p->f);
            p->type = MPX_ATTR_INT, p->i = (int64_t)p->f;
        }
    }
    return MPX_OK;
}

static bool default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

mpx_status mpx_onnx_legacy_rewrite(mpx_graph *g, int opset, mpx_error *err) {
    int n0 = g->n_nodes;
    /* Each node adds at most five tensors. */
    lctx c = {.g = g, .err = err, .opset = opset, .cap = g->n_tensors + 5 * n0 + 1};
    c.rank = malloc((size_t)c.cap * sizeof *c.rank);
    if (!c.rank) return oom(&c);
    for (int i = 0; i < c.cap; i++) c.rank[i] = -1;
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        c.rank[i] = t->decl_rank >= 0 ? t->decl_rank : (t->flags & MPX_T_INITIALIZER) ? t->rank : -1;
    }
    mpx_status st = MPX_OK;
    /* File order: ONNX requires it to be topological, so each node's input
     * ranks are known when it is reached. */
    for (int i = 0; i < n0 && st == MPX_OK; i++) {
        mpx_node *n = g->nodes[i];
        if (!default_domain(n->domain)) continue;
        if (is(n, "ImageScaler")) st = image_scaler(&c, n);
        else if (is(n, "MeanVarianceNormalization") && opset < 9) st = mvn(&c, n);
        else if (is(n, "Crop")) st = crop(&c, n);
        else if (is(n, "Scale")) st = chain(&c, n, (const step[]){{"Mul", "scale", 1.0f}}, 1);
        else if (is(n, "Affine"))
            st = chain(&c, n, (const step[]){{"Mul", "alpha", 1.0f}, {"Add", "beta", 0.0f}}, 2);
        else if (is(n, "ScaledTanh"))
            st = chain(&c, n, (const step[]){{"Mul", "beta", 1.0f}, {"Tanh", NULL, 0}, {"Mul", "alpha", 1.0f}}, 3);
        else if (is(n, "ParametricSoftplus"))
            st = chain(&c, n, (const step[]){{"Mul", "beta", 1.0f}, {"Softplus", NULL, 0}, {"Mul", "alpha", 1.0f}}, 3);
        else if (opset < 7) st = node(&c, n);
        if (opset < 7) n->opset = 7;
        if (st == MPX_OK) out_ranks(&c, n);
    }
    free(c.rank);
    if (st != MPX_OK || opset >= 7) return st;
    g->opset_file = opset;
    g->opset = 7;
    return MPX_OK;
}
