/* test_qint - MatMulInteger and QLinearMatMul (numerics/kernels/kern_qint.c:
 * batches that read the same matrix of B stacked as one A on the packed
 * integer core, B packed raw and kept on its tensor, zero points as a
 * correction) bit for bit against qint_direct.c, the same ops by the direct
 * loops: random shapes (1-D to 4-D operands, batch dims broadcast either
 * way, a 3-D activation times a 2-D weight as quantize_dynamic writes
 * them, sizes that reach the threads and the core's tile edges, B wider
 * than one block of its packing), uint8 and
 * int8 operands, zero points absent, one, per row of A or per column of B,
 * int16 operands far from their zero points (the direct loops' fallback).
 * B is given as a tensor's constant (its packing kept on the tensor: each
 * case runs twice, the second reading the kept packing) and as a plain
 * value. Each case runs on every core this CPU has (kern_igemm.c: the 8-bit
 * core on AVX512-VNNI, on AVX-VNNI, and the 16-bit one; chosen by the
 * environment, set here per run), with operands now and then at their
 * types' extremes and K past the prefetching tiles' 2 KB rows. Run also
 * with MPX_KERN_PORTABLE=1 and MPX_KERN_THREADS=1 (ctest).
 *
 * usage: test_qint [cases] [seed] */
#include "check.h"
#include "mpx_numerics.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mpx_status direct_matmul_integer(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);
mpx_status direct_qlinear_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);

static mpx_graph *G;
static mpx_rng rng;

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(mpx_rng_unit(&rng) * (double)(hi - lo + 1)); }
static bool coin(double p) { return mpx_rng_unit(&rng) < p; }

static mpx_value ints(mpx_dtype dt, int rank, const int64_t *dims, int64_t lo, int64_t hi) {
    mpx_value v;
    mpx_value_alloc(&v, dt, rank, dims, NULL);
    for (int64_t k = 0; k < v.n; k++) v.i[k] = rnd(lo, hi);
    return v;
}

static mpx_value floats(int64_t n, float lo, float hi) {
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, n == 1 ? 0 : 1, &n, NULL);
    for (int64_t k = 0; k < v.n; k++) v.f[k] = lo + (hi - lo) * (float)mpx_rng_unit(&rng);
    return v;
}

static bool same(const mpx_value *a, const mpx_value *b) {
    if (a->n != b->n || a->rank != b->rank || a->dtype != b->dtype || !a->i || !b->i) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    return a->n <= 0 || memcmp(a->i, b->i, (size_t)a->n * sizeof *a->i) == 0;
}

static const char *strs(const char *s) { return mpx_arena_strdup(G->arena, s); }

/* The integer cores, by the variables kern_igemm.c reads at each call:
 * the best this CPU has, AVX-VNNI rather than AVX512-VNNI, and the 16-bit
 * core (the same where the CPU lacks one: then compared twice). */
enum { N_CORES = 3 };
static const char *const core_names[N_CORES] = {"default", "MPX_KERN_AVX2", "MPX_KERN_NOVNNI"};

static void use_core(int k) {
    unsetenv("MPX_KERN_AVX2"), unsetenv("MPX_KERN_NOVNNI");
    if (k) setenv(core_names[k], "1", 1);
}

static void range_of(mpx_dtype t, int64_t *lo, int64_t *hi) {
    *lo = t == MPX_DT_INT8 ? -128 : t == MPX_DT_INT16 ? -32768 : 0;
    *hi = t == MPX_DT_INT8 ? 127 : t == MPX_DT_INT16 ? 32767 : 255;
}

static void one_case(int idx) {
    /* shapes: [batch...] x M x K times [batch...] x K x N, either side 1-D now and then */
    /* now and then more columns than B's packing takes in one block (kern_qint.c's BT_COLS) */
    const bool wide_b = coin(0.03);
    const int64_t M = coin(0.2) && !wide_b ? rnd(40, 130) : rnd(1, 30),
                  K = coin(0.2) && !wide_b ? rnd(200, 800) : coin(0.04) && !wide_b ? rnd(2040, 3100) : rnd(1, 70),
                  N = wide_b ? rnd(4097, 4400) : coin(0.2) ? rnd(60, 300) : rnd(1, 50);
    const int shape = (int)rnd(0, 5);
    int64_t ad[5], bd[5];
    int ar, br;
    switch (shape) {
    case 0: /* 2-D x 2-D */ ar = 2, br = 2, ad[0] = M, ad[1] = K, bd[0] = K, bd[1] = N; break;
    case 1: /* S x 1 x K times K x N: one-row batches sharing B (quantize_dynamic's 3-D activations) */
        ar = 3, br = 2, ad[0] = rnd(1, 70), ad[1] = 1, ad[2] = K, bd[0] = K, bd[1] = N;
        break;
    case 2: /* B x M x K times K x N */ ar = 3, br = 2, ad[0] = rnd(1, 4), ad[1] = M, ad[2] = K, bd[0] = K, bd[1] = N; break;
    case 3: /* batched both sides, broadcast each way: [2,1] x [1,3] */
        ar = 4, br = 4, ad[0] = rnd(1, 2), ad[1] = 1, ad[2] = M, ad[3] = K, bd[0] = 1, bd[1] = rnd(1, 3), bd[2] = K,
        bd[3] = N;
        break;
    case 4: /* 1-D A or 1-D B */
        if (coin(0.5)) ar = 1, ad[0] = K, br = 3, bd[0] = rnd(1, 3), bd[1] = K, bd[2] = N;
        else ar = 3, ad[0] = rnd(1, 3), ad[1] = M, ad[2] = K, br = 1, bd[0] = K;
        break;
    default: /* B batched, A 2-D: A broadcast over B's batches */
        ar = 2, ad[0] = M, ad[1] = K, br = 3, bd[0] = rnd(1, 3), bd[1] = K, bd[2] = N;
        break;
    }
    const int64_t Mr = ar == 1 ? 1 : ad[ar - 2], Nr = br == 1 ? 1 : bd[br - 1];
    const bool wide = coin(0.1); /* int16 operands spread across their range: no 16-bit difference */
    const mpx_dtype at = wide ? MPX_DT_INT16 : coin(0.7) ? MPX_DT_UINT8 : MPX_DT_INT8,
                    bt = wide ? MPX_DT_INT16 : coin(0.7) ? MPX_DT_INT8 : MPX_DT_UINT8;
    int64_t alo, ahi, blo, bhi;
    range_of(at, &alo, &ahi);
    range_of(bt, &blo, &bhi);
    mpx_value a = ints(at, ar, ad, alo, ahi), b = ints(bt, br, bd, blo, bhi);
    if (coin(0.1)) /* every value at one end of its range: the largest products the cores sum */
        for (int64_t k = 0; k < a.n + b.n; k++) {
            int64_t *v = k < a.n ? &a.i[k] : &b.i[k - a.n];
            *v = k < a.n ? (coin(0.5) ? alo : ahi) : (coin(0.5) ? blo : bhi);
        }
    /* zero points: absent, one, or per row (A) / per column (B); zeros now and then */
    const int azk = (int)rnd(0, 2), bzk = (int)rnd(0, 2);
    const int64_t one = 1;
    mpx_value azp = ints(at, azk == 2 ? 1 : 0, azk == 2 ? &Mr : &one, coin(0.2) ? 0 : alo, coin(0.2) ? 0 : ahi);
    mpx_value bzp = ints(bt, bzk == 2 ? 1 : 0, bzk == 2 ? &Nr : &one, coin(0.2) ? 0 : blo, coin(0.2) ? 0 : bhi);
    const bool qlinear = coin(0.25);
    char name[32];
    snprintf(name, sizeof name, "mm%d", idx);
    mpx_node *n = mpx_graph_add_node(G, strs(name), qlinear ? "QLinearMatMul" : "MatMulInteger", "", qlinear ? 8 : 4,
                                     1, 0);
    n->op = mpx_op_from_name(qlinear ? "QLinearMatMul" : "MatMulInteger");
    n->opset = 10;
    /* B as the graph's constant: the kernel keeps its packing on the tensor */
    snprintf(name, sizeof name, "b%d", idx);
    mpx_tensor *btn = n->inputs[qlinear ? 3 : 1] = mpx_graph_tensor(G, strs(name));
    btn->dtype = bt;
    btn->rank = br;
    memcpy(btn->dims, bd, sizeof bd);
    btn->nelem = b.n;
    btn->i64 = b.i;
    mpx_value as = floats(1, 0.001f, 0.05f), bs = floats(bzk == 2 && qlinear ? Nr : 1, 0.001f, 0.05f),
              ys = floats(1, 0.05f, 2.0f), /* (b_scale per column with a per-column zero point) */
              yzp = ints(coin(0.5) ? MPX_DT_UINT8 : MPX_DT_INT8, 0, &one, 0, 20);
    const mpx_value *azp_in = azk ? &azp : NULL, *bzp_in = bzk ? &bzp : NULL;
    if (qlinear && azk == 2) azp_in = NULL; /* QLinearMatMul's a_zero_point is one value */
    const mpx_value *mins[4] = {&a, &b, azp_in, bzp_in};
    const mpx_value *qins[8] = {&a, &as, azp_in ? azp_in : NULL, &b, &bs, bzp_in, &ys, &yzp};
    const mpx_value *const *in = qlinear ? qins : mins;
    const int n_in = qlinear ? 8 : 4;
    char what[200];
    snprintf(what, sizeof what, "case %d %s shape %d A%dD B%dD M%lld K%lld N%lld types %s/%s zp %d/%d", idx,
             qlinear ? "QLinearMatMul" : "MatMulInteger", shape, ar, br, (long long)Mr, (long long)K, (long long)Nr,
             mpx_dtype_name(at), mpx_dtype_name(bt), azk, bzk);
    mpx_value bc;
    mpx_value_clear(&bc);
    /* rep 1: the kept packing; rep 2: B a copy no tensor owns; then each again on the other cores */
    for (int rep = 0; rep < 3 * N_CORES; rep++) {
        use_core(rep / 3);
        if (rep % 3 == 2 && !bc.i) mpx_value_copy(&bc, &b, NULL);
        if (qlinear) qins[3] = rep % 3 == 2 ? &bc : &b;
        else mins[1] = rep % 3 == 2 ? &bc : &b;
        mpx_error e1, e2;
        mpx_error_clear(&e1);
        mpx_error_clear(&e2);
        mpx_kctx c = {.node = n, .err = &e1};
        mpx_value got, want;
        mpx_value_clear(&got);
        mpx_value_clear(&want);
        mpx_status s1 = mpx_kernel_for(n->op)(&c, in, n_in, &got, 1);
        c.err = &e2;
        mpx_status s2 = qlinear ? direct_qlinear_matmul(&c, in, n_in, &want, 1)
                                : direct_matmul_integer(&c, in, n_in, &want, 1);
        CHECK_MSG(s1 == s2, "%s rep %d: status %d / %d (%s / %s)", what, rep, (int)s1, (int)s2, e1.msg, e2.msg);
        if (s1 == MPX_OK && s2 == MPX_OK)
            CHECK_MSG(same(&got, &want), "%s rep %d (%s): the outputs differ", what, rep, core_names[rep / 3]);
        mpx_value_free(&got), mpx_value_free(&want);
    }
    if (btn->derived_free) btn->derived_free(btn->derived);
    btn->derived = NULL;
    btn->derived_free = NULL;
    btn->i64 = NULL;
    use_core(0);
    mpx_value *vs[] = {&a, &b, &azp, &bzp, &as, &bs, &ys, &yzp, &bc};
    for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++) mpx_value_free(vs[k]);
}

int main(int argc, char **argv) {
    mpx_numerics_init();
    const int cases = argc > 1 ? atoi(argv[1]) : 300;
    mpx_rng_init(&rng, argc > 2 ? strtoull(argv[2], NULL, 10) : 20261129);
    G = mpx_graph_new("test_qint");
    for (int i = 0; i < cases; i++) one_case(i);
    mpx_graph_free(G);
    return check_report("test_qint");
}
