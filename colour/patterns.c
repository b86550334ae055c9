/* patterns.c - the fuse rule's patterns: chains of ONNX nodes that a runtime
 * computes as one op, rounding once.
 *
 * ONNX has no Linear with a 3-D input, and (before opset 20) no GELU; an
 * exporter writes them as several nodes (MatMul then Add; Div, Erf, Add,
 * Mul, Mul) and SiLU as Sigmoid then Mul. A runtime that computes the op
 * whole (PyTorch's CPU bf16: addmm, gelu, silu) rounds its result once,
 * where a plan that rounds every node's output rounds two to five times.
 * A fuse rule names such a pattern; the nodes of each match except its last
 * then hand their outputs on unrounded (plan.c), and the last rounds once.
 *
 * A match is recognised from the graph alone, whatever the node names:
 *   linear  MatMul(x, W) with W a constant, whose one consumer is an Add
 *           of it and a constant (the bias);
 *   silu    Sigmoid(x) whose one consumer is Mul(x, Sigmoid(x));
 *   gelu    GELU's erf form as torch exports it: Div(x, c) (or Mul(x, c)),
 *           Erf, Add(., c), Mul(x, .), Mul(., c), each feeding only the next
 *           (the last Mul may come first: Mul(Mul(x, c), .) ends the chain
 *           at the Mul after Add).
 * Every inner node must feed only the next (one consumer, not a model
 * output): a value another node reads is rounded for it, and then the
 * runtime's op would not be one op either. */
#include "colour_internal.h"

#include <string.h>
#include <strings.h>

bool mpx_tensor_is_weight_(const mpx_tensor *t) {
    for (int depth = 0; t && depth < 16; depth++) {
        if (mpx_tensor_is_const_(t)) return true;
        const mpx_node *p = t->producer;
        if (!p || p->op != MPX_OP_Identity || p->n_inputs < 1) return false;
        t = p->inputs[0];
    }
    return false;
}

static bool is_const(const mpx_tensor *t) { return t && mpx_tensor_is_weight_(t); }

/* n's one consumer when n has one output, read by one node and not a model
 * output; else NULL. */
static const mpx_node *only_consumer(const mpx_node *n) {
    if (!n || n->n_outputs != 1 || !n->outputs[0]) return NULL;
    const mpx_tensor *t = n->outputs[0];
    if (t->n_consumers != 1 || (t->flags & MPX_T_OUTPUT)) return NULL;
    return t->consumers[0];
}

/* For a two-input node reading t: its other input (NULL when it reads t
 * twice or is not binary). */
static const mpx_tensor *other_input(const mpx_node *n, const mpx_tensor *t) {
    if (!n || n->n_inputs != 2) return NULL;
    if (n->inputs[0] == t && n->inputs[1] != t) return n->inputs[1];
    if (n->inputs[1] == t && n->inputs[0] != t) return n->inputs[0];
    return NULL;
}

static bool linear_inner(const mpx_node *n) {
    if (n->op != MPX_OP_MatMul || n->n_inputs != 2 || !is_const(n->inputs[1]) || is_const(n->inputs[0]))
        return false;
    const mpx_node *c = only_consumer(n);
    return c && c->op == MPX_OP_Add && is_const(other_input(c, n->outputs[0]));
}

static bool silu_inner(const mpx_node *n) {
    if (n->op != MPX_OP_Sigmoid || n->n_inputs != 1) return false;
    const mpx_node *c = only_consumer(n);
    return c && c->op == MPX_OP_Mul && other_input(c, n->outputs[0]) == n->inputs[0];
}

/* The inner nodes of a GELU chain starting at h, into in[] (count returned;
 * 0: no chain there). */
static int gelu_from(const mpx_node *h, const mpx_node *in[4]) {
    if (!h || (h->op != MPX_OP_Div && h->op != MPX_OP_Mul) || h->n_inputs != 2 || !is_const(h->inputs[1]) ||
        is_const(h->inputs[0]))
        return 0;
    const mpx_tensor *x = h->inputs[0];
    const mpx_node *e = only_consumer(h);
    if (!e || e->op != MPX_OP_Erf) return 0;
    const mpx_node *a = only_consumer(e);
    if (!a || a->op != MPX_OP_Add || !is_const(other_input(a, e->outputs[0]))) return 0;
    const mpx_node *m = only_consumer(a);
    if (!m || m->op != MPX_OP_Mul) return 0;
    const mpx_tensor *o = other_input(m, a->outputs[0]);
    in[0] = h, in[1] = e, in[2] = a;
    if (o == x) { /* x * (1 + erf) then * 0.5: m is inner, the last Mul rounds */
        const mpx_node *l = only_consumer(m);
        if (!l || l->op != MPX_OP_Mul || !is_const(other_input(l, m->outputs[0]))) return 0;
        in[3] = m;
        return 4;
    }
    /* (x * 0.5) * (1 + erf): m is the last */
    const mpx_node *half = o ? o->producer : NULL;
    if (!half || half->op != MPX_OP_Mul || other_input(half, x) == NULL || !is_const(other_input(half, x)))
        return 0;
    return 3;
}

/* Whether n is an inner node of a GELU chain: the chain's head is n or up
 * to three steps above it. */
static bool gelu_inner_at(const mpx_node *n, const mpx_node *h, int depth) {
    if (!h) return false;
    const mpx_node *in[4];
    int k = gelu_from(h, in);
    for (int i = 0; i < k; i++)
        if (in[i] == n) return true;
    if (depth == 3) return false;
    for (int i = 0; i < h->n_inputs; i++)
        if (h->inputs[i] && h->inputs[i]->producer && gelu_inner_at(n, h->inputs[i]->producer, depth + 1))
            return true;
    return false;
}

static bool gelu_inner(const mpx_node *n) {
    if (n->op != MPX_OP_Div && n->op != MPX_OP_Mul && n->op != MPX_OP_Erf && n->op != MPX_OP_Add) return false;
    return gelu_inner_at(n, n, 0);
}

static const struct {
    const char *name, *about;
    bool (*inner)(const mpx_node *n);
} patterns[] = {
    {"linear", "MatMul by a constant whose one consumer adds a constant bias (a Linear)", linear_inner},
    {"silu", "Sigmoid(x) whose one consumer is Mul(x, Sigmoid(x)) (SiLU, Swish)", silu_inner},
    {"gelu", "Div or Mul by a constant, Erf, Add, Mul, Mul (GELU's erf form)", gelu_inner},
};

int mpx_fuse_pattern_count_(void) { return (int)(sizeof patterns / sizeof patterns[0]); }

int mpx_fuse_pattern_find_(const char *name, size_t len) {
    for (int k = 0; k < mpx_fuse_pattern_count_(); k++)
        if (strlen(patterns[k].name) == len && strncasecmp(patterns[k].name, name, len) == 0) return k;
    return -1;
}

const char *mpx_fuse_pattern_name_(int k) { return k >= 0 && k < mpx_fuse_pattern_count_() ? patterns[k].name : NULL; }
const char *mpx_fuse_pattern_about_(int k) {
    return k >= 0 && k < mpx_fuse_pattern_count_() ? patterns[k].about : NULL;
}

bool mpx_fuse_pattern_inner_(int k, const mpx_node *n) {
    return n && k >= 0 && k < mpx_fuse_pattern_count_() && patterns[k].inner(n);
}
