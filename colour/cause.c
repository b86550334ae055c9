/* cause.c - why a node made non-finite values that the fp32 reference did
 * not.
 *
 * "fp32 values up to X do not fit fp16" is true only when X is beyond the
 * format's largest finite value. A node can also make inf or NaN out of
 * values that fit: Log of a value that underflowed to zero, a division by a
 * constant that flushed to zero, a constant that itself overflowed. The run's
 * figures hold what tells them apart (each layer's fp32 absmax and its
 * underflow count) and the plan says which constants are read in which
 * format, so the cause is named here, once, for every message that reports
 * an overflow (run, why). */
#include "colour_internal.h"

#include <float.h>
#include <math.h>

enum { MAX_UPSTREAM = 32 };

static const mpx_layer *layer_of(const mpx_compare *c, int tensor) {
    for (int i = 0; i < c->n_layers; i++)
        if (c->layers[i].tensor == tensor && !c->layers[i].unmeasured) return &c->layers[i];
    return NULL;
}

/* A constant input i of n read in a format that damages it: its values that
 * overflow (else flush), and the fp32 value of the largest of them. */
static bool damaged_const(const mpx_plan *p, const mpx_node *n, int i, mpx_nonfinite_cause *k) {
    const mpx_tensor *t = n->inputs[i];
    if (!t || !mpx_tensor_is_const_(t)) return false;
    const mpx_format *f = mpx_plan_input_format(p, n, i);
    if (!f || f == mpx_dtype_format_(t->dtype)) return false;
    mpx_value v;
    mpx_value_view(&v, t);
    if (v.n <= 0 || !v.f) return false;
    int64_t ovf = 0, flush = 0;
    mpx_format_count_damage(f, v.f, (size_t)v.n, &ovf, &flush);
    if (!ovf && !flush) return false;
    double worst = 0;
    for (int64_t j = 0; j < v.n; j++) {
        int64_t o = 0, z = 0;
        mpx_format_count_damage(f, &v.f[j], 1, &o, &z);
        if ((ovf ? o : z) && fabs((double)v.f[j]) >= fabs(worst)) worst = v.f[j];
    }
    k->constant = t->index;
    k->constant_node = n->index;
    k->constant_format = f;
    k->constant_overflows = ovf > 0;
    k->constant_count = ovf ? ovf : flush;
    k->constant_n = v.n;
    k->constant_value = worst;
    return true;
}

static bool node_damaged_const(const mpx_plan *p, const mpx_node *n, mpx_nonfinite_cause *k) {
    for (int i = 0; i < n->n_inputs; i++)
        if (damaged_const(p, n, i, k)) return true;
    return false;
}

/* Upstream of a tensor that underflowed: the first constant, going up
 * through producers whose outputs underflowed too, that flushes to zero in
 * the format its node reads it in. */
static void underflow_origin(const mpx_plan *p, const mpx_compare *c, int tensor, mpx_nonfinite_cause *k) {
    int queue[MAX_UPSTREAM], head = 0, tail = 0;
    queue[tail++] = tensor;
    while (head < tail) {
        const mpx_tensor *t = p->g->tensors[queue[head++]];
        const mpx_node *n = t->producer;
        if (!n) continue;
        if (node_damaged_const(p, n, k)) return;
        for (int i = 0; i < n->n_inputs && tail < MAX_UPSTREAM; i++) {
            const mpx_tensor *in = n->inputs[i];
            const mpx_layer *L = in ? layer_of(c, in->index) : NULL;
            if (L && L->m.underflow > 0) queue[tail++] = in->index;
        }
    }
}

mpx_status mpx_plan_nonfinite_cause(const mpx_plan *p, const mpx_compare *c, const mpx_layer *L,
                                    mpx_nonfinite_cause *k, mpx_error *err) {
    *k = (mpx_nonfinite_cause){.input = -1, .constant = -1, .constant_node = -1, .tensor = -1};
    if (!p || !c || !L || L->node < 0 || L->node >= p->n_nodes || c->g != p->g)
        return mpx_error_set(err, MPX_E_ARG, "a layer of a run of this plan's model is needed");
    const mpx_node *n = p->g->nodes[L->node];
    const mpx_plan_node *pn = &p->nodes[L->node];
    /* Where the values are made: the node's compute format when it runs
     * low, else the format its output is held in. */
    k->fmt = pn->is_float && pn->low ? pn->compute : L->fmt;
    k->absmax_ref = L->m.absmax_ref;
    k->tensor = L->tensor;
    double max = k->fmt ? (double)k->fmt->max_finite : (double)FLT_MAX;
    if (k->absmax_ref > max) {
        k->kind = MPX_NONFINITE_TOO_LARGE;
        return MPX_OK;
    }
    if (node_damaged_const(p, n, k)) {
        k->kind = MPX_NONFINITE_CONSTANT;
        return MPX_OK;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = n->inputs[i];
        const mpx_layer *in = t ? layer_of(c, t->index) : NULL;
        if (in && in->m.overflow > 0) {
            k->kind = MPX_NONFINITE_INPUT;
            k->input = t->index;
            k->count = in->m.overflow;
            return MPX_OK;
        }
    }
    /* an input whose fp32 values do not fit the format the node converts it
     * into (a model input, or an fp32 node's output, arriving at a low node):
     * the conversion makes the infinities, not the node */
    if (pn->is_float && pn->low && k->fmt)
        for (int i = 0; i < n->n_inputs; i++) {
            const mpx_tensor *t = n->inputs[i];
            if (!t || !mpx_dtype_is_float(t->dtype) || (t->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT))) continue;
            const mpx_layer *in = layer_of(c, t->index);
            double amax = in ? in->m.absmax_ref : -1;
            if (!in && c->ref && t->index < c->n_values && c->ref[t->index].n > 0 && c->ref[t->index].f) {
                const mpx_value *v = &c->ref[t->index];
                for (int64_t j = 0; j < v->n; j++) amax = fabs((double)v->f[j]) > amax ? fabs((double)v->f[j]) : amax;
            }
            if (amax > (double)k->fmt->max_finite) {
                k->kind = MPX_NONFINITE_CONVERSION;
                k->input = t->index;
                k->input_format = k->fmt;
                k->input_absmax = amax;
                return MPX_OK;
            }
        }
    for (int i = 0; i < n->n_inputs; i++) {
        const mpx_tensor *t = n->inputs[i];
        const mpx_layer *in = t ? layer_of(c, t->index) : NULL;
        if (in && in->m.underflow > 0) {
            k->kind = MPX_NONFINITE_UNDERFLOW;
            k->input = t->index;
            k->count = in->m.underflow;
            k->input_format = in->fmt;
            underflow_origin(p, c, t->index, k);
            return MPX_OK;
        }
    }
    k->kind = MPX_NONFINITE_INSIDE;
    return MPX_OK;
}

static const char *fname(const mpx_format *f) { return mpx_format_name(f); }

size_t mpx_nonfinite_cause_text(const mpx_plan *p, const mpx_nonfinite_cause *k, char *buf, size_t size) {
    mpx_text_ o = {buf, size, 0};
    if (size) buf[0] = '\0';
    const mpx_graph *g = p->g;
    const char *f = fname(k->fmt);
    /* the reference's type: float64 tensors keep theirs (docs/float64.md) */
    const char *ref = k->tensor >= 0 && k->tensor < g->n_tensors && g->tensors[k->tensor]->dtype == MPX_DT_DOUBLE
                          ? "float64" : "fp32";
    if (k->kind == MPX_NONFINITE_TOO_LARGE) {
        mpx_text_printf_(&o, "%s values up to %.4g do not fit %s (largest finite %.6g)", ref, k->absmax_ref, f,
                         k->fmt ? (double)k->fmt->max_finite : (double)FLT_MAX);
        return o.len;
    }
    mpx_text_printf_(&o, "its %s values (up to %.4g) fit %s; ", ref, k->absmax_ref, f);
    switch (k->kind) {
    case MPX_NONFINITE_INPUT:
        mpx_text_printf_(&o, "its input \"%s\" already holds %lld non-finite values where fp32 is finite",
                         g->tensors[k->input]->name, (long long)k->count);
        return o.len;
    case MPX_NONFINITE_UNDERFLOW:
        mpx_text_printf_(&o, "its input \"%s\" has %lld values that are non-zero in fp32 and zero in %s",
                         g->tensors[k->input]->name, (long long)k->count, fname(k->input_format));
        if (k->constant < 0) {
            const mpx_format *u = k->input_format ? k->input_format : k->fmt;
            if (u)
                mpx_text_printf_(&o, " (they underflow: %s's smallest non-zero value is %.3g)", fname(u),
                                 (double)u->min_subnormal);
            return o.len;
        }
        mpx_text_printf_(&o, ": they come from ");
        break;
    case MPX_NONFINITE_CONSTANT: mpx_text_printf_(&o, "the cause is its "); break;
    case MPX_NONFINITE_CONVERSION:
        mpx_text_printf_(&o, "its input \"%s\" holds values up to %.6g in fp32, beyond %s's largest finite %.6g: "
                             "they overflow where it is converted into %s for this node",
                         g->tensors[k->input]->name, k->input_absmax, fname(k->input_format),
                         (double)k->input_format->max_finite, fname(k->input_format));
        return o.len;
    case MPX_NONFINITE_INSIDE:
        mpx_text_printf_(&o, "its inputs are finite and none underflowed, so the non-finite values come from "
                             "inside its own arithmetic in %s (an intermediate beyond %.6g)",
                         f, k->fmt ? (double)k->fmt->max_finite : (double)FLT_MAX);
        return o.len;
    default: return o.len;
    }
    const mpx_node *cn = g->nodes[k->constant_node];
    const mpx_tensor *ct = g->tensors[k->constant];
    mpx_text_printf_(&o, "constant \"%s\" of %s (%s)", ct->name, cn->name, cn->op_type);
    if (k->constant_n == 1)
        mpx_text_printf_(&o, ", %.6g in fp32, which ", k->constant_value);
    else
        mpx_text_printf_(&o, " has %lld of %lld values (%.6g the largest) that ", (long long)k->constant_count,
                         (long long)k->constant_n, k->constant_value);
    if (k->constant_overflows)
        mpx_text_printf_(&o, "%s %s (largest finite %.6g)", k->constant_n == 1 ? "overflows" : "overflow",
                         fname(k->constant_format), (double)k->constant_format->max_finite);
    else
        mpx_text_printf_(&o, "%s to zero in %s (smallest non-zero %.3g)", k->constant_n == 1 ? "flushes" : "flush",
                         fname(k->constant_format), (double)k->constant_format->min_subnormal);
    return o.len;
}
