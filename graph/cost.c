/* cost.c - per-node cost figures for colouring rules and reports.
 *
 * Decided conventions (the header's mpx_cost fields, -1 where unknown):
 *  - macs counts multiply-accumulates of one forward: Conv, ConvTranspose,
 *    Gemm, MatMul, Einsum their dot products (bias adds not counted);
 *    normalisations one per output element; pools and reductions one per
 *    input element visited (out_elems * window); Softmax one per element (its
 *    sum). Elementwise and data-movement ops count 0: they are cheap and their
 *    precision risk is not a matter of accumulation.
 *  - k is the number of terms summed into one output value: the figure that
 *    decides how much a low-precision accumulator loses. Elementwise ops have
 *    k = 1, data movement k = 0. ConvTranspose's k is the average
 *    (macs / out_elems), since border outputs get fewer terms.
 *  - in_ch / out_ch are dim 1 of the first input / output (NCHW) where that
 *    has rank >= 2, K and N for Gemm and MatMul; -1 otherwise.
 *  - params counts elements of inputs whose value is known before running:
 *    initializers, Constant outputs, folded values.
 * Products saturate at INT64_MAX rather than wrap. */
#include "shape_internal.h"

#include <stdlib.h>
#include <string.h>

static int64_t mul(int64_t a, int64_t b) {
    if (a < 0 || b < 0) return -1;
    if (a && b > INT64_MAX / a) return INT64_MAX;
    return a * b;
}

static int64_t add(int64_t a, int64_t b) {
    if (a < 0 || b < 0) return -1;
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static const mpx_tensor *in(const mpx_node *n, int i) { return i < n->n_inputs ? n->inputs[i] : NULL; }
static const mpx_tensor *out(const mpx_node *n, int i) { return i < n->n_outputs ? n->outputs[i] : NULL; }

static int64_t dim(const mpx_tensor *t, int i) {
    if (!t || t->rank < 0) return -1;
    if (i < 0) i += t->rank;
    return i >= 0 && i < t->rank ? t->dims[i] : -1;
}

static int64_t prod(const mpx_tensor *t, int from, int to) {
    if (!t || t->rank < 0) return -1;
    int64_t p = 1;
    for (int i = from; i < to && i < t->rank; i++) p = mul(p, t->dims[i]);
    return p;
}

static int64_t nelem(const mpx_tensor *t) { return t ? t->nelem : -1; }

static int64_t ratio(int64_t a, int64_t b) { return a < 0 || b <= 0 ? -1 : a / b; }

typedef void cost_fn(const mpx_node *n, mpx_cost *c);

static void cost_none(const mpx_node *n, mpx_cost *c) {
    (void)n;
    c->macs = 0;
    c->k = 0;
}

static void cost_elementwise(const mpx_node *n, mpx_cost *c) {
    (void)n;
    c->macs = 0;
    c->k = 1;
}

static void cost_conv(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *w = in(n, mpx_node_weight_input(n));
    c->group = mpx_node_attr_int(n, "group", 1);
    c->kernel = prod(w, 2, MPX_MAX_RANK);
    c->k = mul(dim(w, 1), c->kernel); /* Cin/group * KH * KW */
    c->out_ch = dim(w, 0);
    c->macs = mul(nelem(out(n, 0)), c->k);
}

static void cost_conv_transpose(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *w = in(n, 1);
    c->group = mpx_node_attr_int(n, "group", 1);
    c->kernel = prod(w, 2, MPX_MAX_RANK);
    /* Every input value scatters into Cout/group * KH * KW outputs. */
    c->macs = mul(nelem(in(n, 0)), mul(dim(w, 1), c->kernel));
    c->k = ratio(c->macs, nelem(out(n, 0)));
}

static void cost_gemm(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *a = in(n, 0), *b = in(n, 1);
    bool ta = mpx_node_attr_int(n, "transA", 0) != 0, tb = mpx_node_attr_int(n, "transB", 0) != 0;
    int64_t k = dim(a, ta ? 0 : 1), nn = dim(b, tb ? 0 : 1), m = dim(a, ta ? 1 : 0);
    c->k = k;
    c->in_ch = k;
    c->out_ch = nn;
    c->macs = mul(mul(m, nn), k);
}

static void cost_matmul(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *b = in(n, mpx_node_weight_input(n));
    /* FusedMatMul with transA sums over A's second-to-last dim */
    int64_t k = dim(in(n, 0), mpx_node_attr_int(n, "transA", 0) && n->op == MPX_OP_FusedMatMul ? -2 : -1);
    c->k = k;
    c->in_ch = k;
    c->out_ch = b && b->rank == 1 ? 1 : dim(b, -1);
    c->macs = mul(nelem(out(n, 0)), k); /* batch * M * N * K */
}

/* MatMulNBits: A [.., K] times the dequantised [K, N] (attributes K, N). */
static void cost_matmul_nbits(const mpx_node *n, mpx_cost *c) {
    int64_t k = mpx_node_attr_int(n, "K", -1);
    c->k = k;
    c->in_ch = k;
    c->out_ch = mpx_node_attr_int(n, "N", -1);
    c->macs = mul(nelem(out(n, 0)), k);
}

/* Attention: the two products per head, B * Hq * S * T * (D + Dv), from the
 * output (B, S, Hq * Dv or B, Hq, S, Dv) and the key length; ORT's BERT form
 * adds its QKV projection. k: the longer of the two sums, D. */
static void cost_attention(const mpx_node *n, mpx_cost *c) {
    bool ms = n->domain && strcmp(n->domain, "com.microsoft") == 0;
    const mpx_tensor *q = in(n, 0), *k = in(n, 1);
    int64_t macs = -1, d = -1;
    if (n->op == MPX_OP_Attention && ms) {
        const mpx_tensor *w = k;
        int64_t B = dim(q, 0), S = dim(q, 1), W = dim(w, 1), N = mpx_node_attr_int(n, "num_heads", 1);
        int64_t proj = mul(mul(mul(B, S), dim(q, 2)), W), h = W > 0 ? W / 3 : -1;
        d = N > 0 && h > 0 ? h / N : -1;
        macs = proj < 0 ? -1 : proj + mul(mul(mul(B, S), S), mul(h, 2));
    } else {
        bool q4 = q && q->rank == 4;
        int64_t heads = q4 ? dim(q, 1) : n->op == MPX_OP_Attention ? mpx_node_attr_int(n, "q_num_heads", 1)
                                                                    : mpx_node_attr_int(n, "num_heads", 1);
        if (n->op == MPX_OP_GroupQueryAttention) k = out(n, 1); /* the present cache [B, KV, T, H] */
        int64_t B = dim(q, 0), S = q4 ? dim(q, 2) : dim(q, 1);
        int64_t T = k && k->rank == 4 ? dim(k, 2) : dim(k, 1);
        d = q4 ? dim(q, 3) : heads > 0 && dim(q, 2) > 0 ? dim(q, 2) / heads : -1;
        if (n->op == MPX_OP_GroupQueryAttention) d = dim(k, 3);
        int64_t dv = nelem(out(n, 0)) > 0 && B > 0 && S > 0 && heads > 0 ? nelem(out(n, 0)) / (B * S * heads) : -1;
        macs = mul(mul(mul(B, heads), mul(S, T)), dv < 0 || d < 0 ? -1 : d + dv);
    }
    c->macs = macs;
    c->k = d;
    c->in_ch = d;
}

/* DFT and STFT as direct sums: each output value sums over the transform
 * length (DFT: dft_length or the axis; STFT: the frame). */
static void cost_dft(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *x = in(n, 0), *o = out(n, 0);
    int64_t len = -1;
    if (n->op == MPX_OP_STFT) {
        const mpx_tensor *fl = in(n, 3), *w = in(n, 2);
        len = fl && fl->i64 && fl->nelem == 1 ? fl->i64[0] : w ? dim(w, 0) : -1;
    } else {
        const mpx_tensor *nl = in(n, 1);
        len = nl && nl->i64 && nl->nelem == 1 ? nl->i64[0] : x && o && x->rank == o->rank ? dim(x, o->rank - 2) : -1;
    }
    c->k = len;
    c->macs = mul(nelem(o), len);
}

static void cost_einsum(const mpx_node *n, mpx_cost *c) {
    c->macs = mpx_einsum_terms(n);
    c->k = ratio(c->macs, nelem(out(n, 0)));
}

/* Normalisations: k is how many values one statistic sums (a row, a
 * channel plane, a group), which rules such as `when k >= 4096` read;
 * inference-mode BatchNormalization sums nothing. */
static void cost_norm(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *x = in(n, 0);
    bool known = x && x->rank >= 0;
    c->macs = nelem(out(n, 0));
    switch (n->op) {
    case MPX_OP_LayerNormalization: case MPX_OP_RMSNormalization: case MPX_OP_SimplifiedLayerNormalization: {
        int64_t ax = mpx_node_attr_int(n, "axis", -1);
        if (known && ax < 0) ax += x->rank;
        c->k = known && ax >= 0 ? prod(x, (int)ax, x->rank) : -1;
        break;
    }
    case MPX_OP_SkipLayerNormalization: case MPX_OP_SkipSimplifiedLayerNormalization:
        c->k = dim(x, -1);
        break;
    case MPX_OP_LpNormalization:
        c->k = dim(x, (int)mpx_node_attr_int(n, "axis", -1));
        break;
    case MPX_OP_InstanceNormalization:
        c->k = prod(x, 2, MPX_MAX_RANK);
        break;
    case MPX_OP_GroupNormalization: {
        int64_t g = mpx_node_attr_int(n, "num_groups", 1);
        c->k = g > 0 && dim(x, 1) > 0 ? mul(dim(x, 1) / g, prod(x, 2, MPX_MAX_RANK)) : -1;
        break;
    }
    case MPX_OP_MeanVarianceNormalization: { /* over axes, [0, 2, 3] by default */
        static const int64_t dflt[3] = {0, 2, 3};
        const int64_t *ax;
        int na = mpx_node_attr_ints(n, "axes", &ax);
        if (!ax) ax = dflt, na = 3;
        c->k = known ? 1 : -1;
        for (int i = 0; known && i < na; i++) c->k = mul(c->k, dim(x, (int)ax[i]));
        break;
    }
    default:
        c->k = 1;
    }
}

/* LSTM, GRU, RNN: every step's gate products, X.W^T and H.R^T, for each
 * direction; k the terms of one gate's sum (input + hidden). */
static void cost_rnn(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *x = in(n, 0), *w = in(n, 1), *r = in(n, 2);
    int64_t gates_hidden = dim(w, 1), layout = mpx_node_attr_int(n, "layout", 0);
    int64_t steps = mul(dim(x, 0), dim(x, 1)); /* seq * batch, either layout */
    (void)layout;
    c->k = add(dim(w, 2), dim(r, 2));
    c->in_ch = dim(w, 2);
    c->out_ch = dim(r, 2);
    c->macs = mul(mul(mul(steps, dim(w, 0)), gates_hidden), c->k);
}

static void cost_softmax(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *x = in(n, 0);
    c->macs = nelem(out(n, 0));
    c->k = -1;
    if (!x || x->rank < 0) return;
    int r = x->rank ? x->rank : 1;
    bool v13 = n->opset <= 0 || n->opset >= 13;
    int64_t ax = mpx_node_attr_int(n, "axis", v13 ? -1 : 1);
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r) return;
    /* Before opset 13 the input is coerced to 2-D at axis: the sum runs over all trailing dims. */
    c->k = x->rank == 0 ? 1 : v13 ? x->dims[ax] : prod(x, (int)ax, x->rank);
}

static void cost_reduce(const mpx_node *n, mpx_cost *c) {
    const mpx_tensor *x = in(n, 0);
    if (n->op == MPX_OP_ArgMax || n->op == MPX_OP_ArgMin) {
        int64_t ax = mpx_node_attr_int(n, "axis", 0);
        c->k = x && x->rank > 0 ? dim(x, (int)(ax < 0 ? ax + x->rank : ax)) : -1;
    } else {
        c->k = ratio(nelem(x), nelem(out(n, 0)));
        if (nelem(out(n, 0)) == 0) c->k = 0;
    }
    c->macs = mul(nelem(out(n, 0)), c->k);
}

static void cost_pool(const mpx_node *n, mpx_cost *c) {
    const int64_t *ks;
    int nk = mpx_node_attr_ints(n, "kernel_shape", &ks);
    c->kernel = ks ? 1 : -1;
    for (int i = 0; i < nk; i++) c->kernel = mul(c->kernel, ks[i]);
    c->k = c->kernel;
    c->macs = mul(nelem(out(n, 0)), c->kernel);
}

static void cost_global_pool(const mpx_node *n, mpx_cost *c) {
    c->kernel = prod(in(n, 0), 2, MPX_MAX_RANK);
    c->k = c->kernel;
    c->macs = mul(nelem(out(n, 0)), c->kernel);
}

static cost_fn *const cost_table[MPX_OP_COUNT] = {
    [MPX_OP_UNKNOWN] = NULL,
#define MPX_OP(name, shape, cost, fold) [MPX_OP_##name] = cost_##cost,
#include "ops.def"
#undef MPX_OP
};

static int cmp_index(const void *a, const void *b) {
    int32_t x = (*(const mpx_tensor *const *)a)->index, y = (*(const mpx_tensor *const *)b)->index;
    return (x > y) - (x < y);
}

void mpx_cost_node(mpx_node *n) {
    mpx_cost c = {.macs = -1, .params = 0, .in_elems = 0, .out_elems = 0, .in_ch = -1, .out_ch = -1,
                  .kernel = 1, .group = 1, .k = -1};
    /* Each distinct input counts once (Mul x x). A wide node's inputs are
     * sorted to find repeats: comparing all pairs was quadratic. */
    const mpx_tensor **sorted = NULL;
    int count = n->n_inputs;
    if (n->n_inputs > 16 && (sorted = malloc((size_t)n->n_inputs * sizeof *sorted))) {
        count = 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i]) sorted[count++] = n->inputs[i];
        qsort(sorted, (size_t)count, sizeof *sorted, cmp_index);
    }
    for (int i = 0; i < count; i++) {
        const mpx_tensor *t = sorted ? sorted[i] : n->inputs[i];
        bool dup = sorted && i > 0 && sorted[i - 1] == t;
        for (int j = 0; !sorted && j < i; j++) dup |= n->inputs[j] == t;
        if (!t || dup) continue;
        /* A constant's element count is known even when its value is not held (strings). */
        if (t->f32 || t->i64 || t->f64 || (t->flags & (MPX_T_CONSTANT | MPX_T_INITIALIZER)))
            c.params = add(c.params, t->nelem);
        else
            c.in_elems = add(c.in_elems, t->nelem);
    }
    free(sorted);
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]) c.out_elems = add(c.out_elems, n->outputs[i]->nelem);
    const mpx_tensor *x = in(n, 0), *y = out(n, 0);
    if (x && x->rank >= 2) c.in_ch = x->dims[1];
    if (y && y->rank >= 2) c.out_ch = y->dims[1];
    if (n->op > MPX_OP_UNKNOWN && n->op < MPX_OP_COUNT) cost_table[n->op](n, &c);
    if (c.params < 0) c.params = -1;
    n->cost = c;
}

/* The elements a tensor adds to the model's parameters: those of a value
 * stored in the file (an initializer or a Constant's), 0 for anything else
 * (a value folded at load is derived from them, not held). */
static int64_t stored_elems(const mpx_tensor *t) {
    if (!t || !(t->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT)) || (t->flags & MPX_T_FOLDED)) return 0;
    int64_t n = t->nelem;
    if (n < 0 && t->rank >= 0) n = prod(t, 0, t->rank);
    return n > 0 ? n : 0;
}

int64_t mpx_graph_param_count(const mpx_graph *g) {
    if (!g) return 0;
    int64_t total = 0;
    for (int i = 0; i < g->n_tensors; i++) total = add(total, stored_elems(g->tensors[i]));
    return total;
}

/* The MACs of If node f's branch b: its nodes' own, a nested If's those of
 * the branch it counts (pick[] memoises each If's: the branch a constant
 * condition selects, else the costlier; -1 unknown MACs propagate). */
static int64_t branch_macs(const mpx_graph *g, const mpx_node *f, int b, signed char *pick, int depth);

static int64_t if_macs(const mpx_graph *g, const mpx_node *f, signed char *pick, int depth) {
    if (depth > MPX_MAX_SUBGRAPH_DEPTH) return -1;
    int64_t m0 = branch_macs(g, f, 0, pick, depth + 1), m1 = branch_macs(g, f, 1, pick, depth + 1);
    int known = mpx_node_if_pick(f);
    int b = known >= 0 ? known : m1 > m0 ? 1 : 0;
    pick[f->index] = (signed char)b;
    return known < 0 && (m0 < 0 || m1 < 0) ? -1 : b ? m1 : m0;
}

static int64_t branch_macs(const mpx_graph *g, const mpx_node *f, int b, signed char *pick, int depth) {
    int64_t total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (n->guard != f || n->branch != b) continue;
        total = add(total, n->op == MPX_OP_If ? if_macs(g, n, pick, depth) : n->cost.macs);
    }
    return total;
}

bool mpx_graph_count_once(const mpx_graph *g, int64_t *params, int64_t *macs) {
    if (!g) return true;
    if (params) {
        bool *seen = calloc((size_t)g->n_tensors + 1, sizeof *seen);
        if (!seen) return false;
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_node *n = g->nodes[i];
            params[i] = 0;
            for (int k = 0; k < n->n_inputs; k++) {
                const mpx_tensor *t = n->inputs[k];
                if (!t || seen[t->index]) continue;
                seen[t->index] = true;
                params[i] = add(params[i], stored_elems(t));
            }
        }
        free(seen);
    }
    if (macs) {
        signed char *pick = malloc((size_t)g->n_nodes + 1);
        if (!pick) return false;
        memset(pick, -1, (size_t)g->n_nodes + 1);
        for (int i = 0; i < g->n_nodes; i++)
            if (g->nodes[i]->op == MPX_OP_If && !g->nodes[i]->guard) (void)if_macs(g, g->nodes[i], pick, 0);
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_node *n = g->nodes[i];
            bool taken = true;
            for (const mpx_node *m = n; taken && m->guard; m = m->guard) taken = pick[m->guard->index] == m->branch;
            macs[i] = taken ? n->cost.macs : 0;
        }
        free(pick);
    }
    return true;
}

int64_t mpx_graph_macs(const mpx_graph *g) {
    if (!g) return -1;
    int64_t *m = malloc(((size_t)g->n_nodes + 1) * sizeof *m), total = 0;
    if (!m || !mpx_graph_count_once(g, NULL, m)) total = -1;
    for (int i = 0; total >= 0 && i < g->n_nodes; i++) total = m[i] < 0 ? -1 : add(total, m[i]);
    free(m);
    return total;
}

/* The objective of search and the figure low_cost_pct: what a plan pays
 * for in the slow format is work, and multiply-adds alone price an Add, a
 * BatchNormalization or a cast at nothing, so keeping one Add fp32 between
 * two low Convs would look free when it costs two casts and an fp32 pass
 * over the tensor. Work is therefore multiply-adds plus one unit per
 * element read or written: an elementwise node costs what it moves
 * (in + out), a Conv its k products per output plus its traffic, a cast
 * 2 * its elements. One unit per element (MPX_COST_PER_ELEMENT) weighs a
 * streaming pass about like the products of a k = 1 dot product: a count
 * of operations, as MACs are, not a time, so the figure does not depend on
 * the machine a plan is explored on. */
int64_t mpx_cost_node_work(const mpx_node *n) {
    const mpx_cost *c = &n->cost;
    int64_t moved = add(add(c->in_elems, c->out_elems), c->params);
    return add(c->macs, mul(moved, MPX_COST_PER_ELEMENT));
}

int64_t mpx_cost_cast_work(const mpx_tensor *t) { return mul(nelem(t), 2 * MPX_COST_PER_ELEMENT); }
