/* upgrade.c - raising the model's opset where a format needs it (bf16
 * Cast and arithmetic: 13; FLOAT8: 19), with the nodes whose form changed on
 * the way rewritten to the new form, as onnx.version_converter does:
 *
 *  - Clip (11): min/max attributes become inputs, scalars of the type the
 *    node reads (the plan's format), written as the defaults when absent;
 *  - Slice (10), Squeeze/Unsqueeze/ReduceSum/Split (13), ReduceMean and the
 *    other reductions (18): their integer list attributes become int64
 *    inputs (absent stays absent: the new form means the same);
 *  - Softmax/LogSoftmax/Hardmax (13): the same node when its axis is the input's
 *    last (coercing to 2-D on the last axis is the single-axis softmax);
 *    any other axis is refused, naming the node.
 * What has no faithful rewrite here (Resize 11, Upsample 10, TopK 10,
 * Pad 11, Dropout 12) is refused with the node named and onnx's converter
 * suggested. The rewrite runs on the proto after the plan's edit (the node
 * lists then still match the loaded graph) and every replaced pointer goes
 * through ex_save_slot, so the source tree is restored as for any edit. */
#include "export_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum { UP_REFUSE, UP_CLIP, UP_INTS, UP_LAST_AXIS, UP_SAME } up_kind;

static const struct {
    mpx_op op;
    int version; /* the opset whose form differs from the one before */
    const char *what;
    up_kind how;
    const char *attrs[3]; /* UP_INTS: the attributes that become inputs 1, 2, 3 */
} op_changes[] = {
    {MPX_OP_Slice, 10, "starts/ends became inputs", UP_INTS, {"starts", "ends", "axes"}},
    {MPX_OP_Clip, 11, "min/max became inputs", UP_CLIP, {NULL}},
    {MPX_OP_Dropout, 12, "ratio became an input", UP_REFUSE, {NULL}},
    {MPX_OP_TopK, 10, "k became an input", UP_REFUSE, {NULL}},
    {MPX_OP_Resize, 11, "roi input and new attributes", UP_REFUSE, {NULL}},
    {MPX_OP_Upsample, 10, "removed", UP_REFUSE, {NULL}},
    {MPX_OP_Pad, 11, "pads became an input", UP_REFUSE, {NULL}},
    {MPX_OP_Squeeze, 13, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_Unsqueeze, 13, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceSum, 13, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_Split, 13, "split became an input", UP_INTS, {"split"}},
    {MPX_OP_Softmax, 13, "axis no longer flattens to 2-D", UP_LAST_AXIS, {NULL}},
    {MPX_OP_LogSoftmax, 13, "axis no longer flattens to 2-D", UP_LAST_AXIS, {NULL}},
    {MPX_OP_Hardmax, 13, "axis no longer flattens to 2-D", UP_LAST_AXIS, {NULL}},
    {MPX_OP_ReduceMean, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceMax, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceMin, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceProd, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceL2, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceSumSquare, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceL1, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceLogSum, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_ReduceLogSumExp, 18, "axes became an input", UP_INTS, {"axes"}},
    {MPX_OP_Split, 18, "num_outputs added", UP_SAME, {NULL}},
};



static mpx_status refuse(const ex *e, const mpx_node *n, int have, int need, int c, const char *why, mpx_error *err) {
    return mpx_error_set(err, MPX_E_UNSUPPORTED,
                         "%s needs ONNX opset %d and the model is opset %d: node %s (%s) changed at opset %d (%s)%s, "
                         "so raising the opset would change the model; convert the model first (python3 -c "
                         "\"import onnx, onnx.version_converter as v; onnx.save(v.convert_version(onnx.load('in.onnx'), "
                         "%d), 'out.onnx')\") or export with target fp16",
                         e->p->opts.target->name, need, have, n->name, n->op_type, op_changes[c].version,
                         op_changes[c].what, why, need);
}

/* A new initializer named after the node (<node>_min, ...): raw
 * little-endian bytes. */
static const char *add_init(ex *e, const mpx_node *n, const Onnx__NodeProto *np, const char *what, int dtype, size_t n_dims,
                            int64_t dim, const uint8_t *bytes, size_t len) {
    Onnx__TensorProto *tp = mpx_arena_alloc(e->a, sizeof *tp);
    int64_t *dims = mpx_arena_calloc(e->a, 1, sizeof *dims);
    uint8_t *raw = mpx_arena_alloc(e->a, len + 1);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "_%s", what);
    const char *name = ex_fresh_name(e, np->name && *np->name ? np->name : "node", suffix);
    if (!tp || !dims || !raw || !name) return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = (char *)name;
    tp->has_data_type = true;
    tp->data_type = dtype;
    tp->n_dims = n_dims;
    dims[0] = dim;
    tp->dims = dims;
    memcpy(raw, bytes, len);
    tp->has_raw_data = true;
    tp->raw_data.len = len;
    tp->raw_data.data = raw;
    ex_scope *sc = &e->scopes[e->site_scope[n->file_order]]; /* the graph holding the node */
    if (!ex_grow(&sc->extra_init, sc->n_extra_init, &sc->cap_extra_init, sizeof *sc->extra_init)) return NULL;
    sc->extra_init[sc->n_extra_init++] = tp;
    return name;
}

/* The node's attributes without those named in drop[] (NULL-ended), and its
 * inputs with add[] (n_add names) appended, both as new arrays. */
static bool rewrite(ex *e, Onnx__NodeProto *np, const char *const *drop, const char *const *add, size_t n_add) {
    Onnx__AttributeProto **at = mpx_arena_calloc(e->a, np->n_attribute + 1, sizeof *at);
    char **in = mpx_arena_calloc(e->a, np->n_input + n_add + 1, sizeof *in);
    if (!at || !in) return false;
    size_t na = 0;
    for (size_t i = 0; i < np->n_attribute; i++) {
        bool gone = false;
        for (const char *const *d = drop; *d && !gone; d++) gone = strcmp(np->attribute[i]->name, *d) == 0;
        if (!gone) at[na++] = np->attribute[i];
    }
    memcpy(in, np->input, np->n_input * sizeof *in);
    for (size_t i = 0; i < n_add; i++) in[np->n_input + i] = (char *)add[i];
    if (!ex_save_slot(e, &np->attribute, &np->n_attribute) || !ex_save_slot(e, &np->input, &np->n_input))
        return false;
    np->attribute = at;
    np->n_attribute = na;
    np->input = in;
    np->n_input += n_add;
    return true;
}

/* Clip-6: min/max attributes (defaults -/+ FLT_MAX) -> inputs of type T,
 * the format the plan has the node read its input in. */
static bool up_clip(ex *e, const mpx_node *n, Onnx__NodeProto *np) {
    const mpx_format *f = mpx_plan_input_format(e->p, n, 0);
    if (!f && n->inputs[0]) f = e->p->tensors[n->inputs[0]->index].format;
    if (!f) f = &mpx_format_fp32;
    const char *names[2];
    static const char *const which[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        Onnx__AttributeProto *a = ex_find_attr(np, which[k]);
        float v = a && a->has_f ? a->f : k ? FLT_MAX : -FLT_MAX;
        uint32_t code = mpx_format_encode(f, v);
        uint8_t b[4];
        size_t nb = (size_t)f->storage_bits / 8;
        for (size_t i = 0; i < nb; i++) b[i] = (uint8_t)(code >> (8 * i));
        if (!(names[k] = add_init(e, n, np, which[k], ex_dtype_of(f), 0, 1, b, nb))) return false;
    }
    static const char *const drop[] = {"min", "max", NULL};
    return rewrite(e, np, drop, names, 2);
}

/* Integer list attributes -> int64 1-D inputs, in order; the trailing absent
 * ones are left out, an absent one before a present one is "" (optional). */
static bool up_ints(ex *e, const mpx_node *n, Onnx__NodeProto *np, const char *const *attrs) {
    const char *names[3] = {NULL, NULL, NULL};
    size_t n_add = 0;
    for (int k = 0; k < 3 && attrs[k]; k++) {
        Onnx__AttributeProto *a = ex_find_attr(np, attrs[k]);
        if (!a) {
            names[k] = "";
            continue;
        }
        uint8_t *b = mpx_arena_alloc(e->a, a->n_ints * 8 + 1);
        if (!b) return false;
        for (size_t i = 0; i < a->n_ints; i++)
            for (int j = 0; j < 8; j++) b[i * 8 + (size_t)j] = (uint8_t)((uint64_t)a->ints[i] >> (8 * j));
        if (!(names[k] = add_init(e, n, np, attrs[k], ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t)a->n_ints, b,
                                  a->n_ints * 8)))
            return false;
        n_add = (size_t)k + 1;
    }
    const char *drop[4] = {attrs[0], attrs[1], attrs[2], NULL};
    return rewrite(e, np, drop, names, n_add);
}

/* Whether row c of op_changes applies to n when raising from have to need. */
static bool changes(size_t c, const mpx_node *n, int have, int need) {
    return op_changes[c].op == n->op && op_changes[c].version > have && op_changes[c].version <= need;
}

mpx_status ex_upgrade_check(ex *e, int have, int need, mpx_error *err) {
    for (int k = 0; k < e->g->n_nodes; k++) {
        const mpx_node *n = e->g->nodes[k];
        if (!mpx_onnx_default_domain(n->domain)) continue;
        for (size_t c = 0; c < sizeof op_changes / sizeof op_changes[0]; c++) {
            if (!changes(c, n, have, need)) continue;
            if (op_changes[c].how == UP_REFUSE) return refuse(e, n, have, need, (int)c, "", err);
            if (op_changes[c].how == UP_LAST_AXIS) {
                const mpx_tensor *x = n->inputs[0];
                int64_t axis = mpx_node_attr_int(n, "axis", 1);
                if (!x || x->rank < 0)
                    return refuse(e, n, have, need, (int)c, " and its input's rank is unknown (bind the inputs' shapes)",
                                  err);
                if (axis < 0) axis += x->rank;
                if (axis != x->rank - 1)
                    return refuse(e, n, have, need, (int)c, " and its axis is not the input's last", err);
            }
        }
    }
    return MPX_OK;
}

mpx_status ex_upgrade_nodes(ex *e, int have, int need, mpx_error *err) {
    for (int k = 0; k < e->g->n_nodes; k++) {
        const mpx_node *n = e->g->nodes[k];
        if (!mpx_onnx_default_domain(n->domain)) continue;
        Onnx__NodeProto *np = e->site[n->file_order];
        for (size_t c = 0; c < sizeof op_changes / sizeof op_changes[0]; c++) {
            if (!changes(c, n, have, need)) continue;
            bool ok = true;
            if (op_changes[c].how == UP_CLIP) ok = up_clip(e, n, np);
            else if (op_changes[c].how == UP_INTS) ok = up_ints(e, n, np, op_changes[c].attrs);
            if (!ok) return ex_oom(err);
            if (op_changes[c].how == UP_CLIP || op_changes[c].how == UP_INTS) e->sum.upgraded++;
        }
    }
    return MPX_OK;
}
