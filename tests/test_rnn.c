/* test_rnn - LSTM, GRU and RNN (numerics/kernels/kern_rnn.c) bit for bit
 * against rnn_rowwise.c, the same definition computed one (direction, batch
 * row) at a time, element by element, on one thread: random shapes
 * (hidden sizes across the 64-term blocks and the 32- and 8-row vectors),
 * forward, reverse and bidirectional, both layouts, sequence_lens, initial
 * states, peepholes, clip, input_forget, linear_before_reset and other
 * activations, each in fp32 and under low plans: compute and state
 * formats fp16 and bf16 (the roundings of a candidate's gates and carried
 * state), with fp32, fp16, bf16 and blocked accumulations. Y, Y_h and Y_c
 * must have the same bits (NaN included). R is given once as a tensor's
 * constant (its transposition kept on the tensor: each case runs twice, the
 * second reading the kept copy) and once as a plain value.
 *
 * usage: test_rnn [cases] [seed] */
#include "check.h"
#include "mpx_numerics.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mpx_status rowwise_rnn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out, int kind);

static mpx_graph *G;
static mpx_rng rng;

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(mpx_rng_unit(&rng) * (double)(hi - lo + 1)); }
static bool coin(double p) { return mpx_rng_unit(&rng) < p; }

static mpx_value value(int rank, const int64_t *dims, float scale) {
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, rank, dims, NULL);
    for (int64_t i = 0; i < v.n; i++) v.f[i] = scale * (float)(2.0 * mpx_rng_unit(&rng) - 1.0);
    return v;
}

static bool same_bits(const mpx_value *a, const mpx_value *b) {
    if (a->n != b->n || a->rank != b->rank || !a->f != !b->f) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    return a->n <= 0 || memcmp(a->f, b->f, (size_t)a->n * sizeof *a->f) == 0;
}

static const char *strs(const char *s) { return mpx_arena_strdup(G->arena, s); }

static void set_str(mpx_attr *a, const char *name, const char *s) {
    a->name = name;
    a->type = MPX_ATTR_STRING;
    a->s = strs(s);
    a->s_len = strlen(s);
}

static void set_int(mpx_attr *a, const char *name, int64_t v) {
    a->name = name;
    a->type = MPX_ATTR_INT;
    a->i = v;
}

static const struct {
    const mpx_format *round, *state, *acc;
    int block;
} PLANS[] = {
    {NULL, NULL, NULL, 0},
    {NULL, NULL, &mpx_format_fp16, 0},
    {&mpx_format_fp16, &mpx_format_fp16, NULL, 0},
    {&mpx_format_fp16, &mpx_format_fp16, &mpx_format_fp16, 0},
    {&mpx_format_bf16, &mpx_format_bf16, &mpx_format_bf16, 0},
    {&mpx_format_bf16, &mpx_format_bf16, NULL, 0},
    {&mpx_format_fp16, NULL, &mpx_format_fp16, 5},
};
enum { N_PLANS = sizeof PLANS / sizeof PLANS[0] };

static void one_case(int idx) {
    const int kind = (int)rnd(0, 2); /* RNN, GRU, LSTM */
    static const char *ops[3] = {"RNN", "GRU", "LSTM"};
    const int gates = kind == 2 ? 4 : kind == 1 ? 3 : 1;
    const int dir = (int)rnd(0, 2); /* forward, reverse, bidirectional */
    const int64_t dirs = dir == 2 ? 2 : 1, S = rnd(1, 7), B = rnd(1, 3), I = rnd(1, 48),
                  H = coin(0.3) ? rnd(60, 140) : rnd(1, 40);
    const bool layout1 = coin(0.25), bias = coin(0.7), init_h = coin(0.5), init_c = kind == 2 && coin(0.5),
               peep = kind == 2 && coin(0.4), lens = coin(0.4), clip = coin(0.3), forget = kind == 2 && coin(0.2),
               lbr = kind == 1 && coin(0.4), acts = coin(0.2);
    int64_t xd[3] = {S, B, I}, st[3] = {dirs, B, H};
    if (layout1) xd[0] = B, xd[1] = S, st[0] = B, st[1] = dirs;
    int64_t wd[3] = {dirs, gates * H, I}, rd[3] = {dirs, gates * H, H}, bd[2] = {dirs, 2 * gates * H},
            pd[2] = {dirs, 3 * H}, ld[1] = {B};
    mpx_value x = value(3, xd, 1.0f), w = value(3, wd, 0.6f), r = value(3, rd, 0.6f), b = value(2, bd, 0.5f),
              h0 = value(3, st, 1.0f), c0 = value(3, st, 1.0f), p = value(2, pd, 0.5f), sl;
    mpx_value_alloc(&sl, MPX_DT_INT32, 1, ld, NULL);
    for (int64_t i = 0; i < B; i++) sl.i[i] = rnd(0, S);
    char name[32];
    snprintf(name, sizeof name, "rnn%d", idx);
    mpx_node *n = mpx_graph_add_node(G, strs(name), ops[kind], "", kind == 2 ? 8 : 6, 3, 8);
    n->op = mpx_op_from_name(ops[kind]);
    n->opset = 14;
    int na = 0;
    set_int(&n->attrs[na++], "hidden_size", H);
    set_str(&n->attrs[na++], "direction", dir == 2 ? "bidirectional" : dir == 1 ? "reverse" : "forward");
    if (layout1) set_int(&n->attrs[na++], "layout", 1);
    if (clip) {
        n->attrs[na].name = "clip";
        n->attrs[na].type = MPX_ATTR_FLOAT;
        n->attrs[na++].f = 0.5f + (float)mpx_rng_unit(&rng);
    }
    if (forget) set_int(&n->attrs[na++], "input_forget", 1);
    if (lbr) set_int(&n->attrs[na++], "linear_before_reset", 1);
    if (acts) { /* per direction: HardSigmoid for the gates, Tanh or Relu-like for the rest */
        static const char *pick[3][3] = {{"Softsign"}, {"HardSigmoid", "Tanh"}, {"HardSigmoid", "LeakyRelu", "Tanh"}};
        const int per = kind == 2 ? 3 : kind == 1 ? 2 : 1;
        mpx_attr *a = &n->attrs[na++];
        a->name = "activations";
        a->type = MPX_ATTR_STRINGS;
        a->n = (int)(per * dirs);
        a->strings = mpx_arena_calloc(G->arena, (size_t)a->n, sizeof *a->strings);
        for (int k = 0; k < a->n; k++) a->strings[k] = strs(pick[kind][k % per]);
    }
    n->n_attrs = na;
    /* R as the graph's constant: the kernel keeps its transposition on the tensor */
    snprintf(name, sizeof name, "r%d", idx);
    mpx_tensor *rt = n->inputs[2] = mpx_graph_tensor(G, strs(name));
    rt->dtype = MPX_DT_FLOAT;
    rt->rank = 3;
    memcpy(rt->dims, rd, sizeof rd);
    rt->nelem = r.n;
    rt->f32 = r.f;
    const mpx_value *in[8] = {&x, &w, &r, bias ? &b : NULL, lens ? &sl : NULL, init_h ? &h0 : NULL,
                              init_c ? &c0 : NULL, peep ? &p : NULL};
    const int n_in = kind == 2 ? 8 : 6, n_out = kind == 2 ? 3 : 2;
    mpx_kernel_fn kfn = mpx_kernel_for(n->op);
    char what[240];
    snprintf(what, sizeof what,
             "case %d %s dir %d S%lld B%lld I%lld H%lld layout %d bias %d init %d/%d peep %d lens %d clip %d forget %d "
             "lbr %d acts %d",
             idx, ops[kind], dir, (long long)S, (long long)B, (long long)I, (long long)H, layout1, bias, init_h, init_c,
             peep, lens, clip, forget, lbr, acts);
    for (int pl = 0; pl < N_PLANS; pl++)
        for (int rep = 0; rep < 2; rep++) { /* rep 1: the kept transposition; then R not a constant */
            mpx_error e1, e2;
            mpx_error_clear(&e1);
            mpx_error_clear(&e2);
            mpx_kctx c = {.node = n, .acc = {.fmt = PLANS[pl].acc, .block = PLANS[pl].block}, .round = PLANS[pl].round,
                          .state = PLANS[pl].state, .err = &e1};
            mpx_value got[3], want[3];
            for (int k = 0; k < 3; k++) mpx_value_clear(&got[k]), mpx_value_clear(&want[k]);
            mpx_value rc;
            mpx_value_clear(&rc);
            if (rep == 1 && pl == N_PLANS - 1) { /* a copy of R: no tensor owns it */
                mpx_value_copy(&rc, &r, NULL);
                in[2] = &rc;
            }
            mpx_status s1 = kfn(&c, in, n_in, got, n_out);
            c.err = &e2;
            mpx_status s2 = rowwise_rnn(&c, in, n_in, want, n_out, kind);
            CHECK_MSG(s1 == MPX_OK && s2 == MPX_OK, "%s plan %d: %s / %s", what, pl, e1.msg, e2.msg);
            for (int k = 0; s1 == MPX_OK && s2 == MPX_OK && k < n_out; k++)
                CHECK_MSG(same_bits(&got[k], &want[k]), "%s plan %d rep %d: output %d differs", what, pl, rep, k);
            for (int k = 0; k < 3; k++) mpx_value_free(&got[k]), mpx_value_free(&want[k]);
            in[2] = &r;
            mpx_value_free(&rc);
        }
    if (rt->derived_free) rt->derived_free(rt->derived);
    rt->derived = NULL;
    rt->derived_free = NULL;
    rt->f32 = NULL;
    mpx_value *vs[] = {&x, &w, &r, &b, &h0, &c0, &p, &sl};
    for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++) mpx_value_free(vs[k]);
}

int main(int argc, char **argv) {
    mpx_numerics_init();
    const int cases = argc > 1 ? atoi(argv[1]) : 150;
    mpx_rng_init(&rng, argc > 2 ? strtoull(argv[2], NULL, 10) : 20261129);
    G = mpx_graph_new("test_rnn");
    for (int i = 0; i < cases; i++) one_case(i);
    mpx_graph_free(G);
    return check_report("test_rnn");
}
