/* attr.c - typed attribute look-ups with defaults. */
#include "mpx_graph.h"

#include <math.h>
#include <string.h>

const mpx_attr *mpx_node_attr(const mpx_node *n, const char *name) {
    if (!n || !name) return NULL;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t mpx_node_attr_int(const mpx_node *n, const char *name, int64_t dflt) {
    const mpx_attr *a = mpx_node_attr(n, name);
    if (!a) return dflt;
    if (a->type == MPX_ATTR_INT) return a->i;
    /* A FLOAT that holds an integral value stands for the int it spells. */
    if (a->type == MPX_ATTR_FLOAT && isfinite(a->f) && a->f == floorf(a->f) &&
        fabsf(a->f) < 9.0e15f)
        return (int64_t)a->f;
    return dflt;
}

mpx_dtype mpx_node_cast_to(const mpx_node *n) {
    int64_t to = MPX_DT_UNDEFINED;
    if (n->op == MPX_OP_Cast) to = mpx_node_attr_int(n, "to", MPX_DT_UNDEFINED);
    else if (n->op == MPX_OP_CastLike && n->n_inputs > 1 && n->inputs[1]) to = n->inputs[1]->dtype;
    return to > MPX_DT_UNDEFINED && to < MPX_DT_COUNT_ ? (mpx_dtype)to : MPX_DT_UNDEFINED;
}

bool mpx_node_output_is_f32(const mpx_node *n, int j) {
    switch (n->op) {
    case MPX_OP_LayerNormalization:
        return (j == 1 || j == 2) && mpx_node_attr_int(n, "stash_type", MPX_DT_FLOAT) == MPX_DT_FLOAT;
    case MPX_OP_SkipLayerNormalization: case MPX_OP_SkipSimplifiedLayerNormalization: return j == 1 || j == 2;
    case MPX_OP_SimplifiedLayerNormalization: return j == 1;
    default: return false;
    }
}

float mpx_node_attr_float(const mpx_node *n, const char *name, float dflt) {
    const mpx_attr *a = mpx_node_attr(n, name);
    if (!a) return dflt;
    if (a->type == MPX_ATTR_FLOAT) return a->f;
    if (a->type == MPX_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *mpx_node_attr_string(const mpx_node *n, const char *name, const char *dflt) {
    const mpx_attr *a = mpx_node_attr(n, name);
    if (!a || a->type != MPX_ATTR_STRING || !a->s) return dflt;
    return a->s;
}

int mpx_node_attr_ints(const mpx_node *n, const char *name, const int64_t **vals) {
    const mpx_attr *a = mpx_node_attr(n, name);
    if (!a || a->type != MPX_ATTR_INTS) {
        if (vals) *vals = NULL;
        return 0;
    }
    if (vals) *vals = a->ints;
    return a->n;
}
