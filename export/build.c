/* build.c - an ONNX ModelProto made from mpx's IR, for models loaded
 * from JSON (an .onnx source is re-read instead: see edit.c).
 *
 * Everything is allocated from the export's arena and points into the graph
 * (names, dims) or the arena, so the tree is never handed to protobuf-c's
 * free. What JSON models carry maps one to one: inputs and outputs with
 * their declared shapes (symbolic dims by name), initializers with their
 * values, nodes in file order with their attributes. Subgraph attributes
 * are refused (JSON models have none; mpx keeps only their node count).
 */
#include "export_internal.h"

#include <stdio.h>
#include <string.h>

#define NEW(e, T) ((T *)mpx_arena_alloc((e)->a, sizeof(T)))
#define NEWS(e, T, n) ((T *)mpx_arena_calloc((e)->a, (size_t)(n) + 1, sizeof(T)))

/* t's value as a TensorProto of its own dtype (raw little-endian data). */
static Onnx__TensorProto *tensor_proto(ex *e, const mpx_tensor *t, mpx_error *err) {
    Onnx__TensorProto *tp = NEW(e, Onnx__TensorProto);
    size_t nb = mpx_dtype_size(t->dtype);
    int64_t ne = t->nelem;
    const mpx_format *f = mpx_plan_dtype_format(t->dtype);
    if (!tp) return NULL;
    if (!nb || ne < 0 || (!t->f32 && !t->i64 && !t->f64) || (t->f32 && !f)) {
        mpx_error_set(err, MPX_E_UNSUPPORTED, "constant %s (%s) cannot be written as an ONNX tensor", t->name,
                      mpx_dtype_name(t->dtype));
        return NULL;
    }
    onnx__tensor_proto__init(tp);
    tp->name = (char *)t->name;
    tp->has_data_type = true;
    tp->data_type = (int32_t)t->dtype;
    tp->n_dims = (size_t)(t->rank > 0 ? t->rank : 0);
    tp->dims = NEWS(e, int64_t, tp->n_dims);
    uint8_t *raw = NEWS(e, uint8_t, (size_t)ne * nb);
    if (!tp->dims || !raw) return NULL;
    for (size_t i = 0; i < tp->n_dims; i++) tp->dims[i] = t->dims[i];
    if (t->dtype == MPX_DT_DOUBLE) {
        for (int64_t i = 0; i < ne; i++) {
            double d = t->f64 ? t->f64[i] : (double)t->f32[i];
            memcpy(raw + (size_t)i * 8, &d, 8); /* little-endian hosts only, as the loader */
        }
    } else {
        for (int64_t i = 0; i < ne; i++) {
            uint64_t code = f ? mpx_format_encode(f, t->f32[i]) : (uint64_t)t->i64[i];
            for (size_t b = 0; b < nb; b++) raw[(size_t)i * nb + b] = (uint8_t)(code >> (8 * b));
        }
    }
    tp->has_raw_data = true;
    tp->raw_data.len = (size_t)ne * nb;
    tp->raw_data.data = raw;
    return tp;
}

static Onnx__ValueInfoProto *value_info(ex *e, const mpx_tensor *t) {
    Onnx__ValueInfoProto *vi = NEW(e, Onnx__ValueInfoProto);
    Onnx__TypeProto *tp = NEW(e, Onnx__TypeProto);
    Onnx__TypeProto__Tensor *tt = NEW(e, Onnx__TypeProto__Tensor);
    Onnx__TensorShapeProto *sp = NEW(e, Onnx__TensorShapeProto);
    int rank = t->decl_rank >= 0 ? t->decl_rank : t->rank;
    Onnx__TensorShapeProto__Dimension *dims = NEWS(e, Onnx__TensorShapeProto__Dimension, rank > 0 ? rank : 0);
    Onnx__TensorShapeProto__Dimension **dp = NEWS(e, Onnx__TensorShapeProto__Dimension *, rank > 0 ? rank : 0);
    if (!vi || !tp || !tt || !sp || !dims || !dp) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    vi->name = (char *)t->name;
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = true;
    tt->elem_type = (int32_t)t->dtype;
    if (rank < 0) return vi; /* shape unknown: no shape field */
    tt->shape = sp;
    sp->n_dim = (size_t)rank;
    sp->dim = dp;
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = &dims[i];
        onnx__tensor_shape_proto__dimension__init(d);
        int64_t v = t->decl_rank >= 0 ? t->decl_dims[i] : t->dims[i];
        const char *sym = t->decl_rank >= 0 ? t->decl_sym[i] : t->sym[i];
        if (v >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = v;
        } else if (sym) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)sym;
        }
        dp[i] = d;
    }
    return vi;
}

static mpx_status attr_proto(ex *e, const mpx_node *n, const mpx_attr *at, Onnx__AttributeProto *ap,
                             mpx_error *err) {
    onnx__attribute_proto__init(ap);
    ap->name = (char *)at->name;
    ap->has_type = true;
    ap->type = (Onnx__AttributeProto__AttributeType)at->type;
    switch (at->type) {
    case MPX_ATTR_FLOAT: ap->has_f = true; ap->f = at->f; break;
    case MPX_ATTR_INT: ap->has_i = true; ap->i = at->i; break;
    case MPX_ATTR_STRING:
        ap->has_s = true;
        ap->s.len = at->s_len;
        ap->s.data = (uint8_t *)at->s;
        break;
    case MPX_ATTR_FLOATS: ap->n_floats = (size_t)at->n; ap->floats = at->floats; break;
    case MPX_ATTR_INTS: ap->n_ints = (size_t)at->n; ap->ints = at->ints; break;
    case MPX_ATTR_STRINGS:
        ap->n_strings = (size_t)at->n;
        ap->strings = NEWS(e, ProtobufCBinaryData, at->n);
        if (!ap->strings) return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
        for (int i = 0; i < at->n; i++) {
            ap->strings[i].len = strlen(at->strings[i]);
            ap->strings[i].data = (uint8_t *)at->strings[i];
        }
        break;
    case MPX_ATTR_TENSOR:
        if (!(ap->t = tensor_proto(e, at->t, err)))
            return err && err->status ? err->status : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        break;
    default:
        return mpx_error_set(err, MPX_E_UNSUPPORTED,
                             "node %s: attribute %s (kind %d) cannot be written from mpx's model; export "
                             "a model loaded from .onnx instead",
                             n->name, at->name, (int)at->type);
    }
    return MPX_OK;
}

mpx_status ex_build_model(ex *e, mpx_error *err) {
    const mpx_graph *g = e->g;
    mpx_status st = MPX_OK;
    Onnx__ModelProto *m = NEW(e, Onnx__ModelProto);
    Onnx__GraphProto *gp = NEW(e, Onnx__GraphProto);
    Onnx__OperatorSetIdProto *os = NEW(e, Onnx__OperatorSetIdProto);
    Onnx__OperatorSetIdProto **osv = NEWS(e, Onnx__OperatorSetIdProto *, 1);
    if (!m || !gp || !os || !osv) return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    onnx__model_proto__init(m);
    onnx__graph_proto__init(gp);
    onnx__operator_set_id_proto__init(os);
    m->has_ir_version = true;
    m->ir_version = 8;
    m->producer_name = (char *)"mpx";
    m->graph = gp;
    os->domain = (char *)"";
    os->has_version = true;
    os->version = g->opset;
    osv[0] = os;
    m->n_opset_import = 1;
    m->opset_import = osv;
    gp->name = (char *)(g->name && *g->name ? g->name : "mpx");

    gp->input = NEWS(e, Onnx__ValueInfoProto *, g->n_inputs);
    gp->output = NEWS(e, Onnx__ValueInfoProto *, g->n_outputs);
    gp->initializer = NEWS(e, Onnx__TensorProto *, g->n_tensors);
    gp->node = NEWS(e, Onnx__NodeProto *, g->n_nodes);
    if (!gp->input || !gp->output || !gp->initializer || !gp->node)
        return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[gp->n_input++] = value_info(e, g->inputs[i])))
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    for (int i = 0; i < g->n_outputs; i++)
        if (!(gp->output[gp->n_output++] = value_info(e, g->outputs[i])))
            return mpx_error_set(err, MPX_E_NOMEM, "out of memory writing the model");
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (!(t->flags & MPX_T_INITIALIZER)) continue;
        if (!(gp->initializer[gp->n_initializer++] = tensor_proto(e, t, err)))
            return err && err->status ? err->status : mpx_error_set(err, MPX_E_NOMEM, "out of memory");
    }
    /* Proto node k is the node loaded k-th (file_order), as for a file. */
    for (int k = 0; k < g->n_nodes && !st; k++) {
        const mpx_node *n = g->nodes[k];
        Onnx__NodeProto *np = NEW(e, Onnx__NodeProto);
        char **in = NEWS(e, char *, n->n_inputs), **out = NEWS(e, char *, n->n_outputs);
        Onnx__AttributeProto *ats = NEWS(e, Onnx__AttributeProto, n->n_attrs);
        Onnx__AttributeProto **atp = NEWS(e, Onnx__AttributeProto *, n->n_attrs);
        if (!np || !in || !out || !ats || !atp) return mpx_error_set(err, MPX_E_NOMEM, "out of memory");
        onnx__node_proto__init(np);
        np->name = (char *)n->name;
        np->op_type = (char *)n->op_type;
        np->domain = (char *)(n->domain ? n->domain : "");
        for (int i = 0; i < n->n_inputs; i++) in[i] = (char *)(n->inputs[i] ? n->inputs[i]->name : "");
        for (int i = 0; i < n->n_outputs; i++) out[i] = (char *)(n->outputs[i] ? n->outputs[i]->name : "");
        np->n_input = (size_t)n->n_inputs;
        np->input = in;
        np->n_output = (size_t)n->n_outputs;
        np->output = out;
        for (int i = 0; i < n->n_attrs && !st; i++) {
            st = attr_proto(e, n, &n->attrs[i], &ats[i], err);
            atp[i] = &ats[i];
        }
        np->n_attribute = (size_t)n->n_attrs;
        np->attribute = atp;
        gp->node[n->file_order] = np;
    }
    gp->n_node = (size_t)g->n_nodes;
    e->m = m;
    return st;
}
