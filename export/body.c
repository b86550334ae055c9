/* body.c - a Loop's, Scan's or SequenceMap's body written in the low
 * format its node runs it in.
 *
 * Under a low plan mpx runs such a body with every float value in the
 * node's compute format (numerics/kern_loop.c: mpx_assign_uniform, no
 * keep-io), so carried values enter and leave each iteration in it. The
 * file's body says the same when every float in it is that type: its float
 * inputs, outputs and value_info retyped; its float initializers, Constant
 * values and ConstantOfShape values stored in the format (mpx_format_encode,
 * the emulation's own rounding); Casts and dtype attributes that make float
 * values made to make the format instead; nested bodies and If branches
 * likewise. Only protos change (pointer swaps recorded for undo, scalars in
 * place), so the tensors are read from the file itself: mpx's IR does not
 * keep a body's nested branches' constants under the file's names. */
#include "export_internal.h"

#include <string.h>

enum { FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT };

/* A float TensorProto's values (raw little-endian or float_data) stored in
 * format f; NULL on out of memory, *bad for external or short data. */
static Onnx__TensorProto *lower_tensor(ex *e, const Onnx__TensorProto *src, const mpx_format *f, bool *bad) {
    size_t ne = 1;
    for (size_t i = 0; i < src->n_dims; i++) ne *= (size_t)(src->dims[i] > 0 ? src->dims[i] : 0);
    bool raw = src->has_raw_data && src->raw_data.len > 0;
    if (src->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL ||
        (raw ? src->raw_data.len != ne * 4 : src->n_float_data != ne)) {
        *bad = true;
        return NULL;
    }
    Onnx__TensorProto *tp = mpx_arena_alloc(e->a, sizeof *tp);
    size_t nb = (size_t)f->storage_bits / 8;
    uint8_t *out = mpx_arena_alloc(e->a, ne * nb + 1);
    if (!tp || !out) return NULL;
    onnx__tensor_proto__init(tp);
    for (size_t i = 0; i < ne; i++) {
        float x;
        if (raw) {
            uint32_t u = 0;
            for (int b = 0; b < 4; b++) u |= (uint32_t)src->raw_data.data[i * 4 + (size_t)b] << (8 * b);
            memcpy(&x, &u, sizeof x);
        } else {
            x = src->float_data[i];
        }
        uint32_t code = mpx_format_encode(f, x);
        for (size_t b = 0; b < nb; b++) out[i * nb + b] = (uint8_t)(code >> (8 * b));
    }
    tp->n_dims = src->n_dims;
    tp->dims = src->dims;
    tp->name = src->name;
    tp->doc_string = src->doc_string;
    tp->has_data_type = true;
    tp->data_type = ex_dtype_of(f);
    tp->has_raw_data = true;
    tp->raw_data.len = ne * nb;
    tp->raw_data.data = out;
    e->sum.weights++;
    e->sum.weight_elems += (int64_t)ne;
    return tp;
}

static void retype_vi(Onnx__ValueInfoProto **v, size_t n, int dt) {
    for (size_t i = 0; i < n; i++) {
        Onnx__TypeProto *tp = v[i]->type;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
            tp->tensor_type->elem_type == FLOAT)
            tp->tensor_type->elem_type = dt;
    }
}

/* The tensor at *slot, if float, replaced by its lowered copy. */
static mpx_status lower_slot(ex *e, Onnx__TensorProto **slot, const mpx_format *f, const char *owner,
                             mpx_error *err) {
    if (!*slot || (*slot)->data_type != FLOAT) return MPX_OK;
    bool bad = false;
    Onnx__TensorProto *tp = lower_tensor(e, *slot, f, &bad);
    if (bad)
        return mpx_error_set(err, MPX_E_UNSUPPORTED, "node %s: the tensor \"%s\" in its body is stored as external "
                             "or malformed data, which mpx does not rewrite in %s", owner,
                             (*slot)->name ? (*slot)->name : "", f->name);
    if (!tp || !ex_save_slot(e, slot, NULL)) return ex_oom(err);
    *slot = tp;
    return MPX_OK;
}

/* Resize's roi and scales and Upsample's scales stay float, as ONNX types
 * them (the plan keeps them as declared in the main graph too). */
static bool is_param(const Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; name && i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        bool resize = np->op_type && strcmp(np->op_type, "Resize") == 0;
        bool upsample = np->op_type && strcmp(np->op_type, "Upsample") == 0;
        for (size_t j = 1; (resize || upsample) && j < np->n_input && j <= (resize ? 2u : 1u); j++)
            if (np->input[j] && strcmp(np->input[j], name) == 0) return true;
    }
    return false;
}

mpx_status ex_lower_body(ex *e, Onnx__GraphProto *gp, const mpx_format *f, const char *owner, int depth,
                         mpx_error *err) {
    if (depth > MPX_MAX_SUBGRAPH_DEPTH) return mpx_error_set(err, MPX_E_LIMIT, "node %s: subgraphs nested too deep", owner);
    int dt = ex_dtype_of(f);
    mpx_status st;
    retype_vi(gp->input, gp->n_input, dt);
    retype_vi(gp->output, gp->n_output, dt);
    retype_vi(gp->value_info, gp->n_value_info, dt);
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (!is_param(gp, gp->initializer[i]->name) && (st = lower_slot(e, &gp->initializer[i], f, owner, err)))
            return st;
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        bool cast = np->op_type && strcmp(np->op_type, "Cast") == 0;
        for (size_t a = 0; a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            if (!ap->name) continue;
            /* Constant's value, ConstantOfShape's value */
            if (ap->t && (st = lower_slot(e, &ap->t, f, owner, err))) return st;
            /* a Cast to float, RandomNormal/EyeLike's dtype: the format */
            if (ap->has_i && ap->i == FLOAT &&
                ((cast && strcmp(ap->name, "to") == 0) || strcmp(ap->name, "dtype") == 0)) {
                ap->i = dt;
                if (cast) e->sum.casts_retyped++;
            }
            if (ap->g && (st = ex_lower_body(e, ap->g, f, owner, depth + 1, err))) return st;
            for (size_t q = 0; q < ap->n_graphs; q++)
                if ((st = ex_lower_body(e, ap->graphs[q], f, owner, depth + 1, err))) return st;
        }
    }
    return MPX_OK;
}
