/* test_exec.c - the executor (numerics/exec.c) and the error metrics
 * (numerics/metrics.c): reference runs against hand computations, fp16/bf16
 * emulation (rounding on entry, constants converted offline, accumulation),
 * keep-io, local error, refusals before anything runs, and the metrics on
 * vectors whose figures are known. Checks that need a kernel another file
 * provides say so and are skipped while it is missing. */
#include "check.h"
#include "graph_build.h"
#include "mpx_numerics.h"
#include "run_internal.h" /* mpx_fuse_span: which chains run by tiles */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static mpx_error err;

/* ---- building graphs in one line (tests/graph_build.h) ------------------------ */

static mpx_graph *finish(mpx_graph *g, const char *outputs) {
    mpx_status st = gb_build(g, outputs, &err);
    CHECK_MSG(st == MPX_OK, "building the test graph: %s", err.msg);
    return g;
}

static mpx_tensor *T(const mpx_graph *g, const char *name) {
    return mpx_graph_find_tensor(g, name);
}

/* The run's value of tensor name. */
static const mpx_value *val(const mpx_run *r, const char *name) {
    const mpx_tensor *t = T(r->g, name);
    return t ? &r->vals[t->index] : NULL;
}

static float f0(const mpx_run *r, const char *name) {
    const mpx_value *v = val(r, name);
    return v && v->n > 0 && v->f ? v->f[0] : NAN;
}

static mpx_value fvalue(int rank, const int64_t *dims, const float *data) {
    mpx_value v;
    mpx_value_alloc(&v, MPX_DT_FLOAT, rank, dims, NULL);
    for (int64_t k = 0; data && k < v.n; k++) v.f[k] = data[k];
    return v;
}

static bool have(mpx_op op, const char *why) {
    if (mpx_kernel_for(op)) return true;
    printf("test_exec: skipped (no %s kernel yet): %s\n", mpx_op_name(op), why);
    return false;
}

static mpx_run *run_(int line, const mpx_graph *g, const mpx_assign *a, const mpx_value *in,
                     const mpx_run *local) {
    mpx_run *r = NULL;
    mpx_run_opts o = {.local_ref = local};
    mpx_error_clear(&err);
    mpx_status st = mpx_run_graph(g, a, in, &o, &r, &err);
    CHECK_MSG(st == MPX_OK && r, "line %d: run failed: %s", line, err.msg);
    return r;
}
#define RUN(...) run_(__LINE__, __VA_ARGS__)

/* ---- reference runs ----------------------------------------------------------------- */

/* x (2x3) -> Transpose -> Concat with w -> Reshape -> Slice, by hand. */
static void test_reference_data(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "tr", "Transpose", "x:f:2x3", "t", "");
    node(g, "uq", "Unsqueeze", "w=f[7,8,9] one=i[1]", "w2", "");
    node(g, "cat", "Concat", "t w2", "c", "axis=1");
    node(g, "rs", "Reshape", "c s=i[1,9]", "r", "");
    node(g, "sl", "Slice", "r st=i[2] en=i[9] ax=i[1] sp=i[3]", "y", "");
    finish(g, "y");
    float xd[6] = {1, 2, 3, 4, 5, 6};
    int64_t xdims[2] = {2, 3};
    mpx_value x = fvalue(2, xdims, xd);
    mpx_assign *ref = mpx_assign_uniform(g, NULL, NULL, false);
    mpx_run *r = RUN(g, ref, &x, NULL);
    if (r) {
        /* t = [[1,4],[2,5],[3,6]]; c = [[1,4,7],[2,5,8],[3,6,9]]; r = 1x9;
         * r[0, 2:9:3] = c.flat[2], [5], [8] = 7, 8, 9. */
        const mpx_value *y = val(r, "y");
        CHECK(y->rank == 2 && y->dims[0] == 1 && y->dims[1] == 3);
        CHECK(y->n == 3 && y->f[0] == 7 && y->f[1] == 8 && y->f[2] == 9);
        const mpx_value *c = val(r, "c");
        float want[9] = {1, 4, 7, 2, 5, 8, 3, 6, 9};
        bool same = c->n == 9;
        for (int k = 0; same && k < 9; k++) same = c->f[k] == want[k];
        CHECK(same);
        /* Every tensor keeps its value; weights are views of the graph's data. */
        for (int i = 0; i < g->n_tensors; i++)
            CHECK_MSG(r->vals[i].n >= 0, "%s", g->tensors[i]->name);
        CHECK(val(r, "w")->borrowed && val(r, "w")->f == T(g, "w")->f32);
        CHECK(!val(r, "x")->borrowed && val(r, "x")->f != x.f);
        CHECK(r->ms >= 0);
        /* Values' shapes are what shape inference said. */
        for (int i = 0; i < g->n_tensors; i++) {
            const mpx_tensor *t = g->tensors[i];
            bool ok = r->vals[i].rank == t->rank;
            for (int k = 0; ok && k < t->rank; k++) ok = r->vals[i].dims[k] == t->dims[k];
            CHECK_MSG(ok, "shape of %s", t->name);
        }
    }
    mpx_run_free(r);
    mpx_assign_free(ref);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* y = relu(x + b) * 2 against the same figures by hand, when the kernels exist. */
static void test_reference_arith(void) {
    if (!have(MPX_OP_Add, "reference run of Add/Relu/Mul") || !have(MPX_OP_Relu, "") ||
        !have(MPX_OP_Mul, ""))
        return;
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "add", "Add", "x:f:4 b=f[0.5,-3,1,-0.25]", "s", "");
    node(g, "relu", "Relu", "s", "a", "");
    node(g, "mul", "Mul", "a two=f2", "y", "");
    finish(g, "y");
    float xd[4] = {1, 2, -4, 0.125f};
    int64_t d = 4;
    mpx_value x = fvalue(1, &d, xd);
    mpx_run *r = RUN(g, NULL, &x, NULL);
    if (r) {
        const mpx_value *y = val(r, "y");
        CHECK(y->n == 4 && y->f[0] == 3.0f && y->f[1] == 0.0f && y->f[2] == 0.0f &&
              y->f[3] == 0.0f);
        CHECK(val(r, "s")->f[3] == -0.125f);
    }
    mpx_run_free(r);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* ---- emulation ------------------------------------------------------------------------ */

static void test_fp16_add(void) {
    if (!have(MPX_OP_Add, "fp16 Add of 1 and 2^-11")) return;
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "add", "Add", "x:f:1 c=f[0.00048828125]", "y", ""); /* 2^-11 */
    finish(g, "y");
    int64_t d = 1;
    float one = 1.0f;
    mpx_value x = fvalue(1, &d, &one);
    mpx_assign *a32 = mpx_assign_uniform(g, &mpx_format_fp32, NULL, false);
    mpx_assign *a16 = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *k16 = mpx_assign_uniform(g, &mpx_format_fp16, NULL, true);
    mpx_run *r32 = RUN(g, a32, &x, NULL), *r16 = RUN(g, a16, &x, NULL), *k = RUN(g, k16, &x, NULL);
    if (r32 && r16 && k) {
        CHECK(f0(r32, "y") == 1.0f + 0x1p-11f);
        CHECK(f0(r16, "y") == 1.0f); /* the tie rounds to even */
        /* keep-io: the fp32 output holds what the fp16 node wrote. */
        CHECK(f0(k, "y") == 1.0f);
    }
    mpx_run_free(r32);
    mpx_run_free(r16);
    mpx_run_free(k);
    mpx_assign_free(a32);
    mpx_assign_free(a16);
    mpx_assign_free(k16);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* A binary or unary node's output rounded as the kernel makes it (in
 * pieces, while in cache: mpx_kctx.out_round) is the fp32 result rounded
 * once, element by element: rows longer than a piece, a broadcast operand,
 * fp16 and bf16, and keep-io (the output tensor fp32, the node's output
 * low). */
static void test_binary_rounded(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "add", "Add", "x:f:2x3x5000 b:f:3x1", "s", "");
    node(g, "div", "Div", "s x", "y", "");
    node(g, "abs", "Abs", "y", "a", "");
    node(g, "sqrt", "Sqrt", "a", "z", "");
    finish(g, "z");
    int64_t d[3] = {2, 3, 5000}, db[2] = {3, 1};
    const float bv[3] = {0.1f, -2.7f, 1000.3f};
    mpx_value in[2] = {fvalue(3, d, NULL), fvalue(2, db, bv)}, x = in[0];
    mpx_rng rng;
    mpx_rng_init(&rng, 7);
    for (int64_t k = 0; k < x.n; k++) x.f[k] = (float)(mpx_rng_unit(&rng) * 200.0 - 100.0);
    const mpx_format *fmts[2] = {&mpx_format_fp16, &mpx_format_bf16};
    for (int fi = 0; fi < 2; fi++)
        for (int keep_io = 0; keep_io < 2; keep_io++) {
            const mpx_format *f = fmts[fi];
            mpx_assign *a = mpx_assign_uniform(g, f, NULL, keep_io);
            mpx_run *r = RUN(g, a, in, NULL);
            int bad = 0;
            for (int64_t k = 0; r && k < x.n; k++) {
                const float xr = mpx_round_scalar(f, x.f[k]), br = mpx_round_scalar(f, bv[(k / 5000) % 3]);
                const float sv = mpx_round_scalar(f, xr + br);
                const float yv = mpx_round_scalar(f, sv / xr), zv = mpx_round_scalar(f, sqrtf(fabsf(yv)));
                bad += memcmp(&val(r, "s")->f[k], &sv, 4) != 0 || memcmp(&val(r, "y")->f[k], &yv, 4) != 0 ||
                       memcmp(&val(r, "z")->f[k], &zv, 4) != 0;
            }
            CHECK_MSG(r && bad == 0, "%s keep-io %d: %d elements differ", f->name, keep_io, bad);
            mpx_run_free(r);
            mpx_assign_free(a);
        }
    mpx_value_free(&in[0]);
    mpx_value_free(&in[1]);
    mpx_graph_free(g);
}

/* Rounding on entry and keep-io with data-movement ops only. */
static void test_entry_and_keep_io(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "id", "Identity", "x:f:3", "t", "");
    node(g, "cat", "Concat", "t c=f[1e5,3.0001]", "y", "axis=0");
    node(g, "shp", "Shape", "y", "s", "");
    finish(g, "y s");
    int64_t d = 3;
    float xd[3] = {1.0f + 0x1p-11f, 70000.0f, 0x1p-30f};
    mpx_value x = fvalue(1, &d, xd);

    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *k = mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, true);
    CHECK(a && k);
    if (!a || !k) return;
    /* The arrays: keep-io leaves x and y fp32, s is int64 (no format). */
    CHECK(a->tensor[T(g, "x")->index] == &mpx_format_fp16 &&
          a->tensor[T(g, "y")->index] == &mpx_format_fp16);
    CHECK(k->tensor[T(g, "x")->index] == NULL && k->tensor[T(g, "y")->index] == NULL);
    CHECK(k->tensor[T(g, "t")->index] == &mpx_format_fp16 &&
          k->tensor[T(g, "c")->index] == &mpx_format_fp16);
    CHECK(a->tensor[T(g, "s")->index] == NULL);
    for (int i = 0; i < g->n_nodes; i++) {
        CHECK(k->node[i].compute == &mpx_format_fp16 && k->node[i].output == &mpx_format_fp16);
        CHECK(k->node[i].acc.fmt == &mpx_format_fp16);
    }
    mpx_run *r = RUN(g, a, &x, NULL), *rk = RUN(g, k, &x, NULL), *ref = RUN(g, NULL, &x, NULL);
    if (r && rk && ref) {
        /* All fp16: the input is rounded as it enters. */
        const mpx_value *xv = val(r, "x"), *y = val(r, "y");
        CHECK(xv->f[0] == 1.0f && isinf(xv->f[1]) && xv->f[2] == 0.0f);
        CHECK(y->n == 5 && y->f[0] == 1.0f && isinf(y->f[3]) && y->f[4] == 3.0f);
        /* keep-io: x stays fp32, the fp16 node rounds it on entry. */
        const mpx_value *kx = val(rk, "x"), *ky = val(rk, "y");
        CHECK(kx->f[0] == xd[0] && kx->f[1] == xd[1] && kx->f[2] == xd[2]);
        CHECK(ky->f[0] == 1.0f && isinf(ky->f[1]) && ky->f[2] == 0.0f && isinf(ky->f[3]));
        /* Constants: rounded copies (kept on the tensor, shared by the
         * runs: a view); the graph's own data untouched. */
        CHECK(T(g, "c")->f32[0] == 1e5f && T(g, "c")->f32[1] == 3.0001f);
        CHECK(val(r, "c")->f != T(g, "c")->f32 && isinf(val(r, "c")->f[0]));
        CHECK(val(rk, "c")->f == val(r, "c")->f);
        CHECK(val(ref, "c")->borrowed && val(ref, "c")->f[0] == 1e5f);
        CHECK(val(ref, "y")->f[0] == xd[0] && val(ref, "y")->f[4] == 3.0001f);
        const mpx_value *s = val(r, "s");
        CHECK(s->i && s->n == 1 && s->i[0] == 5);
    }
    mpx_run_free(r);
    mpx_run_free(rk);
    mpx_run_free(ref);
    /* bf16 keeps 1e5 and 70000 finite. */
    mpx_assign *b = mpx_assign_uniform(g, &mpx_format_bf16, NULL, false);
    mpx_run *rb = RUN(g, b, &x, NULL);
    if (rb) {
        const mpx_value *y = val(rb, "y");
        CHECK(y->f[1] == 70144.0f && y->f[3] == 99840.0f && y->f[0] == 1.0f);
    }
    mpx_run_free(rb);
    mpx_assign_free(b);
    mpx_assign_free(a);
    mpx_assign_free(k);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* A product that overflows fp16 is an overflow in the metrics; bf16 keeps it. */
static void test_overflow_report(void) {
    if (!have(MPX_OP_Mul, "fp16 overflow of a product")) return;
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "mul", "Mul", "x:f:2 c=f[300,2]", "y", "");
    finish(g, "y");
    int64_t d = 2;
    float xd[2] = {300, 3};
    mpx_value x = fvalue(1, &d, xd);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *b = mpx_assign_uniform(g, &mpx_format_bf16, NULL, false);
    mpx_run *ref = RUN(g, NULL, &x, NULL), *rh = RUN(g, h, &x, NULL), *rb = RUN(g, b, &x, NULL);
    if (ref && rh && rb) {
        mpx_metrics mh, mb;
        CHECK(mpx_metrics_compute(val(ref, "y"), val(rh, "y"), &mpx_format_fp16, &mh, &err) ==
              MPX_OK);
        CHECK(mpx_metrics_compute(val(ref, "y"), val(rb, "y"), &mpx_format_bf16, &mb, &err) ==
              MPX_OK);
        CHECK(mh.overflow == 1 && isinf(mh.rel_l2));
        CHECK(mb.overflow == 0 && isfinite(mb.rel_l2) && mb.rel_l2 > 0 && mb.rel_l2 < 1e-2);
        CHECK(val(rb, "y")->f[0] == 90112.0f); /* 90000 in bf16 */
        CHECK(mh.absmax_ref == 90000.0);
    }
    mpx_run_free(ref);
    mpx_run_free(rh);
    mpx_run_free(rb);
    mpx_assign_free(h);
    mpx_assign_free(b);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* Sums of 4096 ones: fp16 accumulation stops at 2048 (2048 + 1 is a tie
 * that rounds back to 2048); fp32 accumulation reaches 4096. */
static void test_accumulation(void) {
    int64_t d[2] = {1, 4096};
    float *ones = malloc(4096 * sizeof *ones);
    for (int k = 0; k < 4096; k++) ones[k] = 1.0f;
    mpx_value x = fvalue(2, d, ones);
    if (have(MPX_OP_MatMul, "MatMul with k = 4096 ones in fp16 accumulation")) {
        mpx_graph *g = mpx_graph_new("t.json");
        g->opset = 13;
        node(g, "mm", "MatMul", "x:f:1x4096 w", "y", "");
        int64_t wd[2] = {4096, 1};
        mpx_tensor *w = T(g, "w");
        mpx_tensor_alloc_value(g, w, MPX_DT_FLOAT, 2, wd, NULL);
        w->flags |= MPX_T_INITIALIZER;
        for (int k = 0; k < 4096; k++) w->f32[k] = 1.0f;
        finish(g, "y");
        mpx_assign *acc16 = mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, false);
        mpx_assign *acc32 = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        mpx_run *r16 = RUN(g, acc16, &x, NULL), *r32 = RUN(g, acc32, &x, NULL);
        if (r16 && r32) {
            CHECK_MSG(f0(r16, "y") == 2048.0f, "fp16 accumulation gave %g", (double)f0(r16, "y"));
            CHECK_MSG(f0(r32, "y") == 4096.0f, "fp32 accumulation gave %g", (double)f0(r32, "y"));
        }
        mpx_run_free(r16);
        mpx_run_free(r32);
        mpx_assign_free(acc16);
        mpx_assign_free(acc32);
        mpx_graph_free(g);
    }
    if (have(MPX_OP_ReduceSum, "ReduceSum of 4096 ones in fp16 accumulation")) {
        mpx_graph *g = mpx_graph_new("t.json");
        g->opset = 13;
        node(g, "sum", "ReduceSum", "x:f:1x4096 ax=i[1]", "y", "keepdims=0");
        finish(g, "y");
        mpx_assign *acc16 = mpx_assign_uniform(g, &mpx_format_fp16, &mpx_format_fp16, false);
        mpx_run *r16 = RUN(g, acc16, &x, NULL);
        if (r16)
            CHECK_MSG(f0(r16, "y") == 2048.0f, "fp16 accumulation gave %g", (double)f0(r16, "y"));
        mpx_run_free(r16);
        mpx_assign_free(acc16);
        mpx_graph_free(g);
    }
    mpx_value_free(&x);
    free(ones);
}

/* ---- local error ------------------------------------------------------------------------ */

static void test_local(void) {
    /* Mechanics: a node in local mode reads the reference run's input (here
     * doctored), rounded to its compute format. */
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "a", "Identity", "x:f:1", "t", "");
    node(g, "b", "Identity", "t", "y", "");
    finish(g, "y");
    int64_t d = 1;
    float v = 2.0f;
    mpx_value x = fvalue(1, &d, &v);
    mpx_assign *a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_run *ref = RUN(g, NULL, &x, NULL);
    if (ref) {
        ref->vals[T(g, "t")->index].f[0] = 5.0f + 0x1p-9f; /* not an fp16 value */
        mpx_run *loc = RUN(g, a, &x, ref), *glob = RUN(g, a, &x, NULL);
        if (loc && glob) {
            CHECK(f0(loc, "y") == 5.0f);
            CHECK(f0(loc, "t") == 2.0f);
            CHECK(f0(glob, "y") == 2.0f);
        }
        mpx_run_free(loc);
        mpx_run_free(glob);
        /* A reference of another graph is refused. */
        mpx_graph *g2 = mpx_graph_new("u.json");
        node(g2, "a", "Identity", "x:f:1", "y", "");
        finish(g2, "y");
        mpx_run *bad = NULL;
        mpx_run_opts o = {.local_ref = ref};
        CHECK(mpx_run_graph(g2, NULL, &x, &o, &bad, &err) == MPX_E_ARG && !bad);
        CHECK_CONTAINS(err.msg, "another graph");
        mpx_graph_free(g2);
    }
    mpx_run_free(ref);
    mpx_assign_free(a);
    mpx_graph_free(g);

    /* Error separation: t1 = x + c, t2 = t1 + c, y = t2 - x with x = 1 and
     * c = 0.625 ulp(1) in fp16. Globally t1 = 1+u, t2 = 1+2u, y = 2u; locally
     * y's node reads round(ref t2 = 1 + 1.25u) = 1+u and gives u. The
     * reference y is 1.25u. */
    if (have(MPX_OP_Add, "local error of an Add chain") && have(MPX_OP_Sub, "local error")) {
        g = mpx_graph_new("t.json");
        g->opset = 13;
        node(g, "a1", "Add", "x:f:1 c=f[0.0006103515625]", "t1", "");
        node(g, "a2", "Add", "t1 c", "t2", "");
        node(g, "s", "Sub", "t2 x", "y", "");
        finish(g, "y");
        v = 1.0f;
        x.f[0] = v;
        a = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
        ref = RUN(g, NULL, &x, NULL);
        mpx_run *glob = RUN(g, a, &x, NULL), *loc = ref ? RUN(g, a, &x, ref) : NULL;
        if (ref && glob && loc) {
            CHECK(f0(ref, "y") == 1.25f * 0x1p-10f);
            CHECK(f0(glob, "y") == 0x1p-9f);
            CHECK(f0(loc, "y") == 0x1p-10f);
            CHECK(f0(loc, "t2") == 1.0f + 0x1p-9f); /* from ref t1 rounded: 1+u, + c */
        }
        mpx_run_free(ref);
        mpx_run_free(glob);
        mpx_run_free(loc);
        mpx_assign_free(a);
        mpx_graph_free(g);
    }
    mpx_value_free(&x);
}

/* ---- refusals ------------------------------------------------------------------------ */

static void test_refusals(void) {
    /* A Gather that would fail at run time comes before an op with no kernel:
     * the missing kernel is reported, so nothing ran. */
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "/blk/gather", "Gather", "x:f:3 idx:i:1", "g1", "axis=0");
    node(g, "/blk/foo", "FooBar", "g1", "y", "");
    finish(g, "y");
    int64_t d = 3, one = 1;
    float xd[3] = {1, 2, 3};
    mpx_value in[2];
    in[0] = fvalue(1, &d, xd);
    mpx_value_alloc(&in[1], MPX_DT_INT64, 1, &one, NULL);
    in[1].i[0] = 7;
    mpx_run *r = (mpx_run *)&err; /* must come back NULL */
    mpx_error_clear(&err);
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) == MPX_E_UNSUPPORTED && r == NULL);
    CHECK_CONTAINS(err.msg, "node \"/blk/foo\" (FooBar): no kernel for FooBar");
    mpx_graph_free(g);

    /* Without it, the Gather fails mid-run: the error names it, no run is returned. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "/blk/gather", "Gather", "x:f:3 idx:i:1", "g1", "axis=0");
    node(g, "/blk/id", "Identity", "g1", "y", "");
    finish(g, "y");
    mpx_error_clear(&err);
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) == MPX_E_SHAPE && r == NULL);
    CHECK_CONTAINS(err.msg, "node \"/blk/gather\" (Gather)");
    CHECK_CONTAINS(err.msg, "index 7");
    in[1].i[0] = -1;
    r = RUN(g, NULL, in, NULL);
    if (r) CHECK(f0(r, "y") == 3.0f);
    mpx_run_free(r);

    /* Inputs: missing, wrong shape, wrong type; an assignment of another graph. */
    CHECK(mpx_run_graph(g, NULL, NULL, NULL, &r, &err) == MPX_E_ARG && !r);
    CHECK_CONTAINS(err.msg, "no input values");
    mpx_value wrong;
    int64_t wd[2] = {1, 3};
    mpx_value_alloc(&wrong, MPX_DT_FLOAT, 2, wd, NULL);
    mpx_value keep = in[0];
    in[0] = wrong;
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) == MPX_E_SHAPE && !r);
    CHECK_CONTAINS(err.msg, "input \"x\": the value has shape 1x3, the input is bound to 3");
    in[0] = in[1];
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) != MPX_OK && !r);
    in[0] = keep;
    mpx_value_free(&wrong);
    mpx_value absent = {.n = -1};
    mpx_value tmp = in[1];
    in[1] = absent;
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) == MPX_E_ARG && !r);
    CHECK_CONTAINS(err.msg, "input \"idx\" has no value");
    in[1] = tmp;
    mpx_assign other = {.n_tensors = 1, .n_nodes = 1};
    CHECK(mpx_run_graph(g, &other, in, NULL, &r, &err) == MPX_E_ARG && !r);
    CHECK_CONTAINS(err.msg, "another graph");
    mpx_graph_free(g);

    /* An input whose shape is not bound. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "id", "Identity", "x:f:Nx3", "y", "");
    finish(g, "y");
    CHECK(mpx_run_graph(g, NULL, in, NULL, &r, &err) == MPX_E_ARG && !r);
    CHECK_CONTAINS(err.msg, "input \"x\" is not bound");
    int64_t bd[2] = {2, 3};
    CHECK(mpx_graph_bind_input(g, "x", 2, bd, &err) == MPX_OK &&
          mpx_graph_infer(g, &err) == MPX_OK);
    mpx_value xv;
    mpx_value_alloc(&xv, MPX_DT_FLOAT, 2, bd, NULL);
    r = RUN(g, NULL, &xv, NULL);
    if (r) CHECK(val(r, "y")->n == 6);
    mpx_run_free(r);
    mpx_value_free(&xv);
    mpx_graph_free(g);
    mpx_value_free(&in[0]);
    mpx_value_free(&in[1]);

    CHECK(mpx_assign_uniform(NULL, NULL, NULL, false) == NULL);
    mpx_assign_free(NULL);
    mpx_run_free(NULL);
}

/* ---- the example models ------------------------------------------------------------------ */

/* A streaming run (values freed after their last consumer) gives the same
 * bits as keeping everything, for the outputs and for a kept intermediate
 * tensor (the middle node's first output), and holds nothing else. */
static void check_stream(const char *file, const mpx_graph *g, const mpx_assign *a,
                         const mpx_value *x, const mpx_run *whole) {
    bool *keep = calloc((size_t)g->n_tensors, sizeof *keep);
    const mpx_tensor *mid = g->nodes[g->n_nodes / 2]->outputs[0];
    keep[mid->index] = true;
    mpx_run_opts o = {.stream = true, .keep = keep};
    mpx_run *r = NULL;
    CHECK_MSG(mpx_run_graph(g, a, x, &o, &r, &err) == MPX_OK, "%s: %s", file, err.msg);
    int differ = 0, held = 0;
    for (int i = 0; r && i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        const mpx_value *v = &r->vals[i], *w = &whole->vals[i];
        if ((t->flags & MPX_T_CONSTANT) && !keep[i]) continue; /* views, or copies freed */
        bool want = keep[i] || (t->flags & MPX_T_OUTPUT);
        if (!want) {
            held += v->n >= 0 && !(t->flags & MPX_T_INPUT);
            continue;
        }
        if (v->n != w->n || (v->f && memcmp(v->f, w->f, (size_t)v->n * sizeof *v->f) != 0))
            differ++;
    }
    CHECK_MSG(r && differ == 0 && held == 0,
              "%s (%s): streaming: %d tensors differ from the whole run, %d freed ones held",
              file, a ? "fp16" : "fp32", differ, held);
    mpx_run_free(r);
    free(keep);
}

static void test_model(const char *file, const int64_t *dims, int rank) {
    mpx_graph *g = gb_load_example(file, rank, dims, &err);
    CHECK_MSG(g != NULL, "%s: %s", file, err.msg);
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++)
        if (!mpx_kernel_for(g->nodes[i]->op)) {
            printf("test_exec: skipped %s (no %s kernel yet)\n", file, g->nodes[i]->op_type);
            mpx_graph_free(g);
            return;
        }
    mpx_value x;
    mpx_value_alloc(&x, MPX_DT_FLOAT, rank, dims, NULL);
    gb_fill_normal(&x, 7);
    mpx_assign *h = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *b = mpx_assign_uniform(g, &mpx_format_bf16, NULL, false);
    mpx_assign *k = mpx_assign_uniform(g, &mpx_format_fp16, NULL, true);
    mpx_run *ref = RUN(g, NULL, &x, NULL), *rh = RUN(g, h, &x, NULL), *rb = RUN(g, b, &x, NULL);
    mpx_run *rk = RUN(g, k, &x, NULL), *rl = ref ? RUN(g, h, &x, ref) : NULL;
    if (ref && rh && rb && rk && rl) {
        int bad_shape = 0;
        for (int i = 0; i < g->n_tensors; i++) {
            const mpx_tensor *t = g->tensors[i];
            const mpx_value *v = &ref->vals[i];
            if (v->n < 0) continue;
            bool ok = v->rank == t->rank;
            for (int q = 0; ok && q < t->rank; q++) ok = v->dims[q] == t->dims[q];
            if (!ok && bad_shape++ < 3)
                fprintf(stderr, "%s: %s differs from inference\n", file, t->name);
        }
        CHECK_MSG(bad_shape == 0, "%s: %d values differ in shape from shape inference", file,
                  bad_shape);
        const mpx_tensor *y = g->outputs[0];
        mpx_metrics mh, mb, mk, ml;
        CHECK(mpx_metrics_compute(&ref->vals[y->index], &rh->vals[y->index], &mpx_format_fp16, &mh,
                                  &err) == MPX_OK);
        CHECK(mpx_metrics_compute(&ref->vals[y->index], &rb->vals[y->index], &mpx_format_bf16, &mb,
                                  &err) == MPX_OK);
        CHECK(mpx_metrics_compute(&ref->vals[y->index], &rk->vals[y->index], &mpx_format_fp16, &mk,
                                  &err) == MPX_OK);
        CHECK(mpx_metrics_compute(&ref->vals[y->index], &rl->vals[y->index], &mpx_format_fp16, &ml,
                                  &err) == MPX_OK);
        printf(
            "test_exec: %s output rel_l2 fp16 %.3g, bf16 %.3g, fp16 keep-io %.3g, fp16 local %.3g; "
            "reference %.2f ms, fp16 %.2f ms\n",
            file, mh.rel_l2, mb.rel_l2, mk.rel_l2, ml.rel_l2, ref->ms, rh->ms);
        CHECK(mh.rel_l2 > 0 && mh.rel_l2 < 1e-2 && mh.overflow == 0);
        CHECK(mb.rel_l2 > mh.rel_l2 && mb.rel_l2 < 5e-2);
        CHECK(ml.rel_l2 > 0 && ml.rel_l2 <= mh.rel_l2);
        CHECK(mh.cos > 0.999 && mh.n == ref->vals[y->index].n);
        /* fp16 values everywhere a format says fp16. */
        int off = 0;
        for (int i = 0; i < g->n_tensors; i++) {
            const mpx_value *v = &rh->vals[i];
            if (!v->f || !h->tensor[i]) continue;
            for (int64_t q = 0; q < v->n; q++) {
                float f = v->f[q];
                if (!(f != f) && mpx_round_scalar(&mpx_format_fp16, f) != f) off++;
            }
        }
        CHECK_MSG(off == 0, "%s: %d values of fp16 tensors are not fp16 values", file, off);
        /* keep-io: the model input stays fp32. */
        const mpx_value *kx = &rk->vals[g->inputs[0]->index];
        CHECK(memcmp(kx->f, x.f, (size_t)x.n * sizeof *x.f) == 0);
        check_stream(file, g, NULL, &x, ref);
        check_stream(file, g, h, &x, rh);
    }
    mpx_run_free(ref);
    mpx_run_free(rh);
    mpx_run_free(rb);
    mpx_run_free(rk);
    mpx_run_free(rl);
    mpx_assign_free(h);
    mpx_assign_free(b);
    mpx_assign_free(k);
    mpx_value_free(&x);
    mpx_graph_free(g);
}

/* ---- chains run by tiles (numerics/fuse.c) ----------------------------------------- */

/* Every node on its own through mpx_exec_node, every value kept: what a
 * fused chain must equal bit for bit. */
static mpx_value *run_unfused(const mpx_graph *g, const mpx_assign *a, const mpx_value *in) {
    mpx_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
    CHECK(mpx_exec_start(g, a, in, vals, &err) == MPX_OK);
    mpx_value outs[4];
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_node *n = g->nodes[i];
        if (mpx_exec_skipped(n)) continue;
        CHECK_MSG(mpx_exec_node(n, a, vals, false, outs, NULL, &err) == MPX_OK, "%s", err.msg);
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j]) vals[n->outputs[j]->index] = outs[j];
    }
    return vals;
}

/* g run whole and streamed (under fmt: every node in it, or fp32 for NULL)
 * against node by node: every value the whole run holds, and the outputs
 * the streamed one holds, equal bit for bit; the streamed run holds no
 * other value. */
static void check_fused(mpx_graph *g, const mpx_format *fmt, const mpx_value *in, const char *what) {
    mpx_assign *a = fmt ? mpx_assign_uniform(g, fmt, NULL, false) : NULL;
    mpx_value *want = run_unfused(g, a, in);
    mpx_run *whole = RUN(g, a, in, NULL), *st = NULL;
    mpx_run_opts o = {.stream = true};
    CHECK(mpx_run_graph(g, a, in, &o, &st, &err) == MPX_OK);
    int differ = 0, missing = 0, held = 0;
    for (int i = 0; whole && st && i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        if (t->flags & MPX_T_CONSTANT) continue;
        const mpx_value *w = &want[i];
        for (int r = 0; r < 2; r++) {
            const mpx_value *v = r ? &st->vals[i] : &whole->vals[i];
            bool must = !r || (t->flags & MPX_T_OUTPUT);
            if (v->n < 0) {
                missing += must;
                continue;
            }
            held += r && !must && !(t->flags & MPX_T_INPUT);
            if (v->n != w->n || v->dtype != w->dtype || v->rank != w->rank ||
                memcmp(v->f, w->f, (size_t)w->n * sizeof *w->f) != 0)
                differ++;
        }
    }
    CHECK_MSG(whole && st && differ == 0 && missing == 0 && held == 0,
              "%s (%s): %d values differ from node-by-node, %d missing, %d held", what, fmt ? fmt->name : "fp32",
              differ, missing, held);
    for (int i = 0; i < g->n_tensors; i++) mpx_value_free(&want[i]);
    free(want);
    mpx_run_free(whole);
    mpx_run_free(st);
    mpx_assign_free(a);
}

/* The fused-chain graphs' inputs x (1x8x128x128, four times normal: both
 * ends of Clip), s (1x8x1x1) and y (as x, normal). */
static void chain_inputs(mpx_value *in, uint64_t seed) {
    int64_t xd[4] = {1, 8, 128, 128}, sd[4] = {1, 8, 1, 1};
    mpx_value_alloc(&in[0], MPX_DT_FLOAT, 4, xd, NULL);
    mpx_value_alloc(&in[1], MPX_DT_FLOAT, 4, sd, NULL);
    mpx_value_alloc(&in[2], MPX_DT_FLOAT, 4, xd, NULL);
    for (int k = 0; k < 3; k++) gb_fill_normal(&in[k], seed + (uint64_t)k);
    for (int64_t k = 0; k < in[0].n; k++) in[0].f[k] *= 4.0f;
}

static void test_fused_chain(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    /* BatchNormalization, hard-swish (Add Clip Mul Div, the divisor from a
     * Constant node between them, as exporters write it), a per-channel
     * scale computed outside (input s), Sigmoid, Sub of a second whole
     * input; then a row-broadcast Add (one value per W: not one value per
     * tile, so it runs alone) and Relu, Mul after it; hs is also read by
     * a Transpose, so it must be written out. */
    node(g, "bn", "BatchNormalization",
         "x:f:1x8x128x128 sc=f[1,2,0.5,1.5,3,0.25,1,2] bi=f[0,1,-1,0.5,2,-2,0,3] "
         "mu=f[0.1,-0.2,0.3,0,1,-1,0.5,0] va=f[1,2,0.5,4,1,0.25,3,1]",
         "b", "epsilon=0.001");
    node(g, "a1", "Add", "b three=f3", "t1", "");
    node(g, "cl", "Clip", "t1 lo=f0 hi=f6", "t2", "");
    node(g, "m1", "Mul", "b t2", "t3", "");
    node(g, "k6", "Constant", "", "six", "value=T:f6"); /* not run: stepped over */
    node(g, "dv", "Div", "t3 six", "hs", "");
    node(g, "m2", "Mul", "hs s:f:1x8x1x1", "t4", "");
    node(g, "sg", "Sigmoid", "t4", "t5", "");
    node(g, "sb", "Sub", "t5 y:f:1x8x128x128", "t6", "");
    node(g, "ar", "Add", "t6 row#f:128", "t7", "");
    node(g, "rl", "Relu", "t7", "t8", "");
    node(g, "m3", "Mul", "t8 t6", "t9", "");
    node(g, "tr", "Transpose", "hs", "ht", "perm=[0,1,3,2]");
    finish(g, "t9 ht");
    CHECK(mpx_exec_skipped(g->nodes[4]));
    CHECK(mpx_fuse_span(g, 0) == 9); /* bn .. sb with k6 inside; ar breaks the chain */
    CHECK(mpx_fuse_span(g, 9) == 0 && mpx_fuse_span(g, 10) == 2);
    mpx_value in[3];
    chain_inputs(in, 11);
    const mpx_format *fmts[3] = {NULL, &mpx_format_fp16, &mpx_format_bf16};
    for (int f = 0; f < 3; f++) check_fused(g, fmts[f], in, "fused chain");
    /* The profile's times (mpx_run_opts.node_ms): the chain's shared by the
     * nodes it ran, none for the Constant inside it, which is not run. */
    double ms[16];
    for (int i = 0; i < 16; i++) ms[i] = -1.0;
    mpx_run_opts ot = {.stream = true, .node_ms = ms};
    mpx_run *rt = NULL;
    CHECK(g->n_nodes <= 16 && mpx_run_graph(g, NULL, in, &ot, &rt, &err) == MPX_OK);
    bool shared = ms[4] == 0.0 && ms[0] > 0.0;
    for (int i = 1; i < 9; i++) shared = shared && (i == 4 || ms[i] == ms[0]);
    CHECK_MSG(shared, "chain times %g %g %g %g (k6) %g %g", ms[0], ms[1], ms[3], ms[4], ms[5], ms[8]);
    mpx_run_free(rt);
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);

    /* A plain fp32 chain of Mul, Add, Clip, Div, Sub, Relu, Sigmoid and
     * BatchNormalization runs without the executor (fuse.c's run_direct):
     * per-channel and one-value operands, a whole outside input, an
     * intermediate someone else reads (t3, by the Transpose), NaN,
     * infinities, -0 and values past Sigmoid's fast range (|x| > 80)
     * among the inputs; the same bits as node by node, whole and
     * streamed, under fp32 and (through the executor) under fp16. (The
     * chain above runs this way too under fp32, and through the executor
     * under fp16 and bf16.) */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "bn", "BatchNormalization",
         "x:f:1x8x128x128 bsc=f[1,2,0.5,1.5,3,0.25,1,-2] bbi=f[0,1,-1,0.5,2,-2,0,3] "
         "bmu=f[0.1,-0.2,0.3,0,1,-1,0.5,0] bva=f[1,2,0.5,4,1,0.25,3,0]",
         "b", "epsilon=0.001");
    node(g, "sg", "Sigmoid", "b", "sgo", "");
    node(g, "sw", "Mul", "b sgo", "t0", "");
    node(g, "m1", "Mul", "t0 s:f:1x8x1x1", "t1", "");
    node(g, "a1", "Add", "t1 bi#f:1x8x1x1", "t2", "");
    node(g, "a2", "Add", "t2 three=f3", "t3", "");
    node(g, "cl", "Clip", "t3 lo=f0 hi=f6", "t4", "");
    node(g, "m2", "Mul", "t3 t4", "t5", "");
    node(g, "dv", "Div", "t5 six=f6", "t6", "");
    node(g, "sb", "Sub", "t6 y:f:1x8x128x128", "t7", "");
    node(g, "rl", "Relu", "t7", "t8", "");
    node(g, "m3", "Mul", "t8 t2", "t9", "");
    node(g, "tr", "Transpose", "t3", "ht", "perm=[0,1,3,2]");
    finish(g, "t9 ht");
    CHECK(mpx_fuse_span(g, 0) == 12);
    chain_inputs(in, 21);
    in[0].f[5] = NAN, in[0].f[77] = INFINITY, in[0].f[999] = -INFINITY, in[0].f[1234] = -0.0f;
    in[0].f[2000] = 95.0f, in[0].f[2017] = -300.0f, in[0].f[3000] = -85.0f;
    in[2].f[6] = NAN, in[2].f[4321] = -0.0f;
    check_fused(g, NULL, in, "plain chain");
    check_fused(g, &mpx_format_fp16, in, "plain chain");
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);

    /* GELU as exporters write it (Div by sqrt 2, Erf, Add 1, Mul by x, Mul
     * by 0.5): Erf runs in run_direct too, through Erf's own map; its
     * input's NaN, infinities, -0, values past erf's saturation (|x| >
     * 3.95 after the Div) and tiny ones among the inputs. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "dv", "Div", "x:f:1x8x128x128 r2=f1.4142135", "t0", "");
    node(g, "ef", "Erf", "t0", "t1", "");
    node(g, "a1", "Add", "t1 one=f1", "t2", "");
    node(g, "m1", "Mul", "x t2", "t3", "");
    node(g, "m2", "Mul", "t3 half=f0.5", "t4", "");
    finish(g, "t4");
    CHECK(mpx_fuse_span(g, 0) == 5);
    chain_inputs(in, 41);
    for (int64_t k = 0; k < in[0].n; k += 5) in[0].f[k] *= 4.0f; /* (beyond the saturation too) */
    in[0].f[5] = NAN, in[0].f[77] = INFINITY, in[0].f[999] = -INFINITY, in[0].f[1234] = -0.0f;
    in[0].f[2000] = 5.6f, in[0].f[2017] = -5.59f, in[0].f[3000] = 1e-30f, in[0].f[3001] = -1e-38f;
    check_fused(g, NULL, in, "GELU chain");
    check_fused(g, &mpx_format_fp16, in, "GELU chain");
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);

    /* Relu's, Clip's and HardSwish's selects in run_direct, 8 lanes a step:
     * -0 (kept: -0 < 0 is false), NaN (kept), values at Clip's bounds and
     * beyond, at HardSwish's bends and beyond. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "m0", "Mul", "x:f:1x8x128x128 one=f1", "t0", "");
    node(g, "rl", "Relu", "t0", "t1", "");
    node(g, "cl", "Clip", "t0 lo=f0 hi=f2", "t2", "");
    node(g, "ad", "Add", "t1 t2", "t3", "");
    node(g, "hs", "HardSwish", "t0", "t4", "");
    node(g, "a2", "Add", "t3 t4", "t5", "");
    finish(g, "t5");
    CHECK(mpx_fuse_span(g, 0) == 6);
    chain_inputs(in, 31);
    for (int64_t k = 0; k < in[0].n; k += 7) in[0].f[k] = -0.0f;
    for (int64_t k = 3; k < in[0].n; k += 11) in[0].f[k] = NAN;
    for (int64_t k = 5; k < in[0].n; k += 13) in[0].f[k] = 2.0f;
    /* HardSwish's clamp: at and near x = +-3 (t = 1 and 0), infinities */
    for (int64_t k = 1; k < in[0].n; k += 17) in[0].f[k] = (k & 2) ? 3.0f : -3.0f;
    for (int64_t k = 2; k < in[0].n; k += 19) in[0].f[k] = (k & 1) ? 2.9999998f : -2.9999998f;
    for (int64_t k = 4; k < in[0].n; k += 23) in[0].f[k] = (k & 1) ? INFINITY : -INFINITY;
    check_fused(g, NULL, in, "Relu and Clip selects");
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);

    /* A chain whose outside input has another shape than shape inference
     * says (here: made so by hand) is not run by tiles: its nodes run one
     * by one on the values as they are, and the run still succeeds. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "tr", "Transpose", "x:f:1x8x64x256", "t", "perm=[0,1,3,2]");
    node(g, "a1", "Add", "t one=f1", "u", "");
    node(g, "r1", "Relu", "u", "v", "");
    finish(g, "v");
    int64_t wrong[4] = {1, 8, 64, 256};
    const char *names[3] = {"t", "u", "v"};
    for (int q = 0; q < 3; q++)
        for (int d = 0; d < 4; d++) T(g, names[q])->dims[d] = wrong[d];
    CHECK(mpx_fuse_span(g, 1) == 2);
    int64_t x2d[4] = {1, 8, 64, 256};
    mpx_value x2;
    mpx_value_alloc(&x2, MPX_DT_FLOAT, 4, x2d, NULL);
    gb_fill_normal(&x2, 3);
    mpx_run *r2 = RUN(g, NULL, &x2, NULL);
    const mpx_value *v2 = r2 ? val(r2, "v") : NULL;
    CHECK(v2 && v2->n == x2.n && v2->dims[2] == 256 && v2->dims[3] == 64);
    if (v2 && v2->n == x2.n) /* v[0,0,i,j] = relu(x[0,0,j,i] + 1) */
        CHECK(v2->f[1 * 64 + 2] == fmaxf(x2.f[2 * 256 + 1] + 1.0f, 0.0f));
    mpx_run_free(r2);
    mpx_value_free(&x2);
    mpx_graph_free(g);
}

/* n values (a run's, by tensor), freed with their array. */
static void free_vals(mpx_value *v, int n) {
    for (int i = 0; v && i < n; i++) mpx_value_free(&v[i]);
    free(v);
}

static bool same_bits(const mpx_value *a, const mpx_value *b) {
    return a->n >= 0 && a->n == b->n && a->f && b->f && memcmp(a->f, b->f, (size_t)a->n * sizeof *a->f) == 0;
}

/* Nodes first .. first+count-1 of g run straight through mpx_fuse_run on the
 * values mpx_exec_start makes of in, with the outputs named in needed
 * written out and the inputs named in dead (space-separated) said to die
 * with the chain; the values, for the caller to check and free_vals. */
static mpx_value *fuse_direct(mpx_graph *g, const mpx_value *in, int first, int count, const char *needed,
                              const char *dead) {
    mpx_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
    bool *flags[2] = {calloc((size_t)g->n_tensors, sizeof(bool)), calloc((size_t)g->n_tensors, sizeof(bool))};
    CHECK(mpx_exec_start(g, NULL, in, vals, &err) == MPX_OK);
    for (int f = 0; f < 2; f++)
        for (const char *p = f ? dead : needed; *p;) {
            char name[32];
            size_t n = strcspn(p, " ");
            snprintf(name, sizeof name, "%.*s", (int)n, p);
            flags[f][T(g, name)->index] = true;
            p += n + (p[n] == ' ');
        }
    CHECK_MSG(mpx_fuse_run(g, NULL, first, count, vals, flags[0], flags[1], &err) == MPX_OK, "%s", err.msg);
    free(flags[0]);
    free(flags[1]);
    return vals;
}

/* A plain chain's output written over an outside input that dies with the
 * chain (fuse.c, "writing over a dead input"): the output holds that
 * input's buffer, the input's value is gone, the bits are node by node's;
 * an input a later node of the chain reads, one not said to be dead, or a
 * constant's keeps its buffer. */
static void test_fused_donor(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "a1", "Add", "x:f:1x8x128x128 three=f3", "t1", "");
    node(g, "m1", "Mul", "x t1", "t3", "");
    node(g, "s2", "Sub", "t3 x", "z", "");
    node(g, "tr", "Transpose", "t3", "tt", "perm=[0,1,3,2]");
    finish(g, "z tt");
    CHECK(mpx_fuse_span(g, 0) == 3);
    mpx_value in[3];
    chain_inputs(in, 41);
    mpx_value *want = run_unfused(g, NULL, in);
    const int x = T(g, "x")->index, t3 = T(g, "t3")->index, z = T(g, "z")->index;
    for (int pass = 0; pass < 2; pass++) {
        /* z takes x's buffer (s2 reads x last); t3 cannot (s2 reads x after m1) */
        mpx_value *vals = fuse_direct(g, in, 0, 3, "t3 z", pass == 0 ? "x" : "");
        CHECK(pass == 0 ? vals[x].n < 0 && !vals[z].borrowed : same_bits(&vals[x], &want[x]));
        CHECK(vals[t3].f != vals[z].f && (pass == 0 || vals[z].f != vals[x].f));
        CHECK_MSG(same_bits(&vals[z], &want[z]) && same_bits(&vals[t3], &want[t3]) && vals[z].rank == 4 &&
                      vals[z].dims[3] == 128,
                  "pass %d: the chain's outputs differ from node by node", pass);
        free_vals(vals, g->n_tensors);
    }
    free_vals(want, g->n_tensors);
    mpx_graph_free(g);

    /* Two dead inputs: z takes x; t3 may not take y, which s2 reads after m1. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "a1", "Add", "x:f:1x8x128x128 three=f3", "t1", "");
    node(g, "m1", "Mul", "y:f:1x8x128x128 t1", "t3", "");
    node(g, "s2", "Sub", "t3 y", "z", "");
    finish(g, "z t3");
    mpx_value in2[2] = {in[0], in[2]};
    want = run_unfused(g, NULL, in2);
    mpx_value *vals = fuse_direct(g, in2, 0, 3, "t3 z", "x y");
    const int x2 = T(g, "x")->index, y2 = T(g, "y")->index, t32 = T(g, "t3")->index, z2 = T(g, "z")->index;
    CHECK(vals[x2].n < 0 && same_bits(&vals[y2], &want[y2]) && vals[t32].f != vals[y2].f);
    CHECK_MSG(same_bits(&vals[z2], &want[z2]) && same_bits(&vals[t32], &want[t32]),
              "two dead inputs: the chain's outputs differ from node by node");
    free_vals(vals, g->n_tensors);
    free_vals(want, g->n_tensors);
    mpx_graph_free(g);

    /* A whole-size constant the chain reads last is the graph's own value
     * (a view): never written over, however dead. */
    g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "a1", "Add", "x:f:1x8x128x128 cst#f:1x8x128x128", "t1", "");
    node(g, "r1", "Relu", "t1", "z", "");
    finish(g, "z");
    const mpx_tensor *cst = T(g, "cst");
    for (int pass = 0; pass < 2; pass++) {
        mpx_run_opts o = {.stream = true};
        mpx_run *r = NULL;
        CHECK(mpx_run_graph(g, NULL, in, &o, &r, &err) == MPX_OK);
        const mpx_value *zv = r ? val(r, "z") : NULL;
        int off = 0;
        for (int64_t k = 0; k < cst->nelem; k++) off += cst->f32[k] != 0.5f;
        CHECK_MSG(off == 0 && zv && zv->n == cst->nelem && zv->f != cst->f32 &&
                      zv->f[77] == fmaxf(in[0].f[77] + 0.5f, 0.0f),
                  "run %d: the constant was written over (%d values changed)", pass, off);
        mpx_run_free(r);
    }
    /* (the executor never calls a constant dead; said so, it is still kept) */
    vals = fuse_direct(g, in, 0, 2, "z", "cst");
    CHECK(vals[T(g, "z")->index].f != cst->f32 && vals[cst->index].f == cst->f32);
    free_vals(vals, g->n_tensors);
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);
}

/* Single pointwise nodes of a streamed run write over an input that dies
 * there (exec.c's dying_input): the same bits as node by node, and an input
 * a later node still reads (x, by the Mul) is not written over. Small
 * tensors: no chain is fused, every node runs on its own. */
static void test_streamed_inplace(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "r1", "Relu", "x:f:1x4x8x8", "a", "");
    node(g, "a1", "Add", "a y:f:1x4x8x8", "b", "");
    node(g, "m1", "Mul", "b x", "c", "");
    node(g, "s1", "Sigmoid", "c", "d", "");
    node(g, "tr", "Transpose", "d", "z", "perm=[0,1,3,2]");
    finish(g, "z");
    CHECK(mpx_fuse_span(g, 0) == 0);
    int64_t d[4] = {1, 4, 8, 8};
    mpx_value in[2];
    for (int k = 0; k < 2; k++) {
        mpx_value_alloc(&in[k], MPX_DT_FLOAT, 4, d, NULL);
        gb_fill_normal(&in[k], 51 + (uint64_t)k);
    }
    check_fused(g, NULL, in, "streamed in place");
    check_fused(g, &mpx_format_fp16, in, "streamed in place");
    for (int k = 0; k < 2; k++) mpx_value_free(&in[k]);
    mpx_graph_free(g);
}

/* Where a streamed run's float values were made (on_value): by tensor. */
typedef struct where_made {
    const float *at[32];
} where_made;

static void note_where(void *ctx, const mpx_tensor *t, const mpx_value *v) {
    where_made *w = ctx;
    if (t->index < 32) w->at[t->index] = v->f;
}

/* Reshape, Flatten, Unsqueeze, Squeeze, Identity, Softmax and
 * LayerNormalization of a streamed run take over a data input that dies at
 * them (kernels.def's MPX_KERNEL_TAKES_INPUT0, exec.c's dying_input): the
 * output is the input's buffer, nothing copied; an input a later node
 * still reads (b, by the Add) is copied and left as it was, and LogSoftmax
 * (which reads its input again after writing) is not offered its. The same
 * bits as node by node, fp32 and fp16. */
static void test_streamed_reshape(void) {
    mpx_graph *g = mpx_graph_new("t.json");
    g->opset = 13;
    node(g, "r1", "Relu", "x:f:1x4x8x8", "a", "");
    node(g, "rs", "Reshape", "a s=i[4,64]", "b", "");
    node(g, "fl", "Flatten", "b", "c", "axis=1");
    node(g, "ad", "Add", "c b", "d", "");
    node(g, "un", "Unsqueeze", "d ax=i[0]", "e", "");
    node(g, "sq", "Squeeze", "e ax2=i[0]", "f", "");
    node(g, "id", "Identity", "f", "h", "");
    node(g, "sm", "Softmax", "h", "s1", "");
    node(g, "ls", "LogSoftmax", "s1", "s2", "");
    node(g, "ln", "LayerNormalization", "s2 lsc#f:64 lb#f:64", "s3", "");
    node(g, "tr", "Transpose", "s3", "z", "perm=[1,0]");
    finish(g, "z");
    CHECK(g->n_tensors <= 32 && mpx_fuse_span(g, 0) == 0);
    int64_t d[4] = {1, 4, 8, 8};
    mpx_value in;
    mpx_value_alloc(&in, MPX_DT_FLOAT, 4, d, NULL);
    gb_fill_normal(&in, 61);
    check_fused(g, NULL, &in, "streamed reshapes");
    check_fused(g, &mpx_format_fp16, &in, "streamed reshapes");
    where_made w = {{0}};
    mpx_run_opts o = {.stream = true, .on_value = note_where, .on_value_ctx = &w};
    mpx_run *r = NULL;
    CHECK(mpx_run_graph(g, NULL, &in, &o, &r, &err) == MPX_OK);
    const float *a = w.at[T(g, "a")->index], *b = w.at[T(g, "b")->index], *c = w.at[T(g, "c")->index];
    const float *dd = w.at[T(g, "d")->index], *e = w.at[T(g, "e")->index], *f = w.at[T(g, "f")->index];
    const float *h = w.at[T(g, "h")->index], *s1 = w.at[T(g, "s1")->index], *s2 = w.at[T(g, "s2")->index];
    const float *s3 = w.at[T(g, "s3")->index];
    CHECK_MSG(a && b == a && c != b && dd && e == dd && f == e && h == f && s1 == h && s2 && s2 != s1 && s3 == s2,
              "the buffers: a %p b %p c %p d %p e %p f %p h %p s1 %p s2 %p s3 %p", (const void *)a, (const void *)b,
              (const void *)c, (const void *)dd, (const void *)e, (const void *)f, (const void *)h,
              (const void *)s1, (const void *)s2, (const void *)s3);
    mpx_run_free(r);
    /* mpx_run_opts.node_ms: every node's time (mpx_bench's profile) */
    double ms[32];
    for (int i = 0; i < 32; i++) ms[i] = -1.0;
    mpx_run_opts ot = {.stream = true, .node_ms = ms};
    CHECK(g->n_nodes <= 32 && mpx_run_graph(g, NULL, &in, &ot, &r, &err) == MPX_OK);
    int timed = 0;
    for (int i = 0; i < g->n_nodes; i++) timed += ms[i] >= 0.0;
    CHECK_MSG(timed == g->n_nodes, "%d of %d nodes timed", timed, g->n_nodes);
    mpx_run_free(r);
    mpx_value_free(&in);
    mpx_graph_free(g);
}

/* ---- metrics ----------------------------------------------------------------------------- */

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(1.0, fabs(b)); }

static mpx_metrics metrics(int n, const float *r, const float *c, const mpx_format *f) {
    int64_t d = n;
    mpx_value rv = fvalue(1, &d, r), cv = fvalue(1, &d, c);
    mpx_metrics m;
    mpx_error_clear(&err);
    CHECK_MSG(mpx_metrics_compute(&rv, &cv, f, &m, &err) == MPX_OK, "%s", err.msg);
    mpx_value_free(&rv);
    mpx_value_free(&cv);
    return m;
}

static void test_metrics(void) {
    float r1[4] = {1, 2, 3, 4}, c1[4] = {1, 2, 3, 5};
    mpx_metrics m = metrics(4, r1, c1, NULL);
    CHECK(m.n == 4 && m.max_abs == 1.0 && m.mean_abs == 0.25);
    CHECK(near(m.rel_l2, 1.0 / sqrt(30.0)));
    CHECK(near(m.cos, 34.0 / sqrt(30.0 * 39.0)));
    CHECK(near(m.sqnr_db, 10.0 * log10(30.0)));
    CHECK(m.overflow == 0 && m.underflow == 0 && m.subnormal == 0 && m.absmax_ref == 4.0);

    float r2[4] = {1, -2, 0.5f, 0}, c2[4] = {-1, 2, -0.5f, 0};
    m = metrics(4, r2, c2, NULL);
    CHECK(near(m.cos, -1.0) && near(m.rel_l2, 2.0) && m.max_abs == 4.0);

    /* Overflow and underflow: counted, and the error is infinite. */
    float r3[5] = {1e5f, 1, 0, 1e-8f, -3}, c3[5] = {INFINITY, 1, 0, 0, -3};
    m = metrics(5, r3, c3, &mpx_format_fp16);
    CHECK(m.overflow == 1 && m.underflow == 1);
    CHECK(isinf(m.rel_l2) && m.rel_l2 > 0 && isinf(m.max_abs) && isinf(m.mean_abs));
    CHECK(isinf(m.sqnr_db) && m.sqnr_db < 0 && isnan(m.cos));
    CHECK(m.absmax_ref == (double)1e5f);
    float c3n[5] = {1e5f, NAN, 0, 1e-8f, -3};
    m = metrics(5, r3, c3n, NULL);
    CHECK(m.overflow == 1 && isinf(m.rel_l2));

    /* Agreeing non-finite values add nothing; a disagreeing reference infinity does. */
    float r4[3] = {INFINITY, NAN, 2}, c4[3] = {INFINITY, NAN, 2};
    m = metrics(3, r4, c4, NULL);
    CHECK(m.rel_l2 == 0 && m.max_abs == 0 && m.overflow == 0 && m.cos == 1.0 && isinf(m.sqnr_db));
    CHECK(isinf(m.absmax_ref));
    float c4b[3] = {65504, NAN, 2};
    m = metrics(3, r4, c4b, NULL);
    CHECK(isinf(m.rel_l2) && m.overflow == 0);

    /* Subnormals of the candidate's format. */
    float r5[4] = {1e-5f, 1e-4f, 0, 6e-8f}, c5[4] = {1e-5f, 1e-4f, 0, 6e-8f};
    CHECK(metrics(4, r5, c5, &mpx_format_fp16).subnormal == 2);
    CHECK(metrics(4, r5, c5, NULL).subnormal == 0);
    CHECK(metrics(4, r5, c5, &mpx_format_bf16).subnormal == 0);
    float c5b[2] = {1e-39f, -1e-40f};
    CHECK(metrics(2, c5b, c5b, &mpx_format_fp32).subnormal == 2);

    /* Zeros. */
    float z[3] = {0, 0, 0}, o[3] = {0, 1, 0};
    m = metrics(3, z, z, NULL);
    CHECK(m.rel_l2 == 0 && m.cos == 1.0 && isinf(m.sqnr_db) && m.sqnr_db > 0);
    m = metrics(3, z, o, NULL);
    CHECK(isinf(m.rel_l2) && m.cos == 0.0 && isinf(m.sqnr_db) && m.sqnr_db < 0 && m.max_abs == 1.0);
    m = metrics(3, o, z, NULL);
    CHECK(m.rel_l2 == 1.0 && m.cos == 0.0 && m.sqnr_db == 0.0 && m.underflow == 1);
    m = metrics(0, NULL, NULL, NULL);
    CHECK(m.n == 0 && m.rel_l2 == 0 && m.mean_abs == 0);

    /* Sums in double: 2^24 + 1 terms of fp32 would lose the 1s. */
    int64_t big = (1 << 24) + 2;
    mpx_value rv, cv;
    mpx_value_alloc(&rv, MPX_DT_FLOAT, 1, &big, NULL);
    mpx_value_alloc(&cv, MPX_DT_FLOAT, 1, &big, NULL);
    for (int64_t k = 0; k < big; k++) {
        rv.f[k] = 1.0f;
        cv.f[k] = k & 1 ? 1.0f : 1.0f + 0x1p-10f;
    }
    CHECK(mpx_metrics_compute(&rv, &cv, NULL, &m, &err) == MPX_OK);
    CHECK(near(m.mean_abs, 0x1p-11) && near(m.rel_l2, sqrt(0.5) * 0x1p-10));
    mpx_value_free(&rv);
    mpx_value_free(&cv);

    /* The float path's lanes (AVX2 or portable): the same bits either way,
     * the sums of a naive long double loop, counts over every element, and
     * a non-finite value in the middle handed on to the general loop. */
    enum { NL = 1003 };
    float *lr = malloc(NL * sizeof *lr), *lc = malloc(NL * sizeof *lc);
    mpx_rng rng;
    mpx_rng_init(&rng, 5);
    for (int k = 0; k < NL; k++) {
        lr[k] = (float)mpx_rng_normal(&rng, 0.0, k % 7 == 0 ? 1e-6 : 3.0);
        lc[k] = mpx_round_scalar(&mpx_format_fp16, lr[k]);
        if (k % 97 == 0) lr[k] = lc[k] = 0.0f;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass) lc[517] = INFINITY;
        long double se = 0, rr = 0, sa = 0, mx = 0;
        int64_t sub = 0, unf = 0;
        for (int k = 0; k < NL; k++) {
            long double d = (long double)lc[k] - lr[k];
            if (pass && k == 517) d = 0;
            se += d * d, rr += (long double)lr[k] * lr[k], sa += fabsl(d);
            mx = fabsl(d) > mx ? fabsl(d) : mx;
            sub += lc[k] != 0 && fabsf(lc[k]) < 0x1p-14f;
            unf += lr[k] != 0 && lc[k] == 0;
        }
        mpx_metrics a = metrics(NL, lr, lc, &mpx_format_fp16), b;
        setenv("MPX_KERN_PORTABLE", "1", 1);
        b = metrics(NL, lr, lc, &mpx_format_fp16);
        unsetenv("MPX_KERN_PORTABLE");
        CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "metrics: lanes differ between AVX2 and portable (pass %d)", pass);
        CHECK(a.subnormal == sub && a.underflow == unf);
        if (!pass) {
            CHECK(fabs(a.rel_l2 - (double)sqrtl(se / rr)) <= 1e-12 * a.rel_l2);
            CHECK(fabs(a.mean_abs - (double)(sa / NL)) <= 1e-12 * a.mean_abs);
            CHECK(a.max_abs == (double)mx && a.overflow == 0);
        } else {
            CHECK(a.overflow == 1 && isinf(a.rel_l2));
        }
    }
    free(lr);
    free(lc);

    /* Integers compare too; mismatches are refused. */
    int64_t d3 = 3, d2[2] = {1, 3};
    mpx_value ri, ci, rf, rs;
    mpx_value_alloc(&ri, MPX_DT_INT64, 1, &d3, NULL);
    mpx_value_alloc(&ci, MPX_DT_INT64, 1, &d3, NULL);
    ri.i[0] = 1, ri.i[1] = 2, ri.i[2] = 3;
    ci.i[0] = 1, ci.i[1] = 2, ci.i[2] = 5;
    CHECK(mpx_metrics_compute(&ri, &ci, NULL, &m, &err) == MPX_OK && m.max_abs == 2.0 &&
          m.subnormal == 0);
    mpx_value_alloc(&rf, MPX_DT_FLOAT, 1, &d3, NULL);
    mpx_value_alloc(&rs, MPX_DT_FLOAT, 2, d2, NULL);
    CHECK(mpx_metrics_compute(&rf, &ci, NULL, &m, &err) == MPX_E_ARG);
    CHECK(mpx_metrics_compute(&rf, &rs, NULL, &m, &err) == MPX_E_SHAPE);
    CHECK_CONTAINS(err.msg, "shape");
    mpx_value absent = {.n = -1};
    CHECK(mpx_metrics_compute(&rf, &absent, NULL, &m, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "candidate has no value");
    CHECK(mpx_metrics_compute(&rf, &rf, NULL, NULL, &err) == MPX_E_ARG);
    mpx_value_free(&ri);
    mpx_value_free(&ci);
    mpx_value_free(&rf);
    mpx_value_free(&rs);
}

/* Outputs y, z and p of three runs hold the same bits. */
static void same_outputs(const mpx_run *r1, const mpx_run *r2, const mpx_run *r3, const char *what) {
    for (int k = 0; r1 && r2 && r3 && k < 3; k++) {
        const char *o = k == 2 ? "p" : k ? "z" : "y";
        const mpx_value *a = val(r1, o), *b = val(r2, o), *c = val(r3, o);
        CHECK_MSG(a && b && c && a->n == b->n && a->n == c->n && a->n > 0 &&
                      memcmp(a->f, b->f, (size_t)a->n * sizeof(float)) == 0 &&
                      memcmp(a->f, c->f, (size_t)a->n * sizeof(float)) == 0,
                  "%s: %s give the same bits", o, what);
    }
    CHECK_MSG(r1 && r2 && r3, "%s: the runs ran", what);
}

/* Weights the graph holds are packed once and kept on their tensor (the
 * GEMM core: convolutions' panels, a matrix-vector's 16-row panels, a
 * MatMul's B panels); a run with them kept gives the bits of a run that
 * packs afresh, and of one whose weights arrive as inputs (never kept). The
 * MatMul's B: 200 terms (a K block of 128 and one of 72), 70 columns (a
 * partial last panel), a batch of two 37-row matrices (one product). */
static void test_kept_weights(void) {
    const char *conv = "x:f:1x8x12x12 w#f:16x8x3x3 -", *gemm = "v:f:1x40 u#f:30x40 bb#f:30";
    mpx_graph *g = mpx_graph_new("");
    node(g, "c", "Conv", conv, "y", "pads=[1,1,1,1]");
    node(g, "m", "Gemm", gemm, "z", "transB=1");
    node(g, "mm", "MatMul", "a:f:2x37x200 bm#f:200x70", "p", "");
    finish(g, "y z p");
    mpx_graph *h = mpx_graph_new("");
    node(h, "c", "Conv", "x:f:1x8x12x12 w:f:16x8x3x3 -", "y", "pads=[1,1,1,1]");
    node(h, "m", "Gemm", "v:f:1x40 u:f:30x40 bb#f:30", "z", "transB=1");
    node(h, "mm", "MatMul", "a:f:2x37x200 bm:f:200x70", "p", "");
    finish(h, "y z p");
    mpx_tensor *w = T(g, "w"), *u = T(g, "u"), *bm = T(g, "bm");
    mpx_value in[3], hin[6];
    int64_t dx[4] = {1, 8, 12, 12}, dv[2] = {1, 40}, dw[4] = {16, 8, 3, 3}, du[2] = {30, 40};
    int64_t da[3] = {2, 37, 200}, db[2] = {200, 70};
    in[0] = fvalue(4, dx, NULL), in[1] = fvalue(2, dv, NULL), in[2] = fvalue(3, da, NULL);
    gb_fill_normal(&in[0], 1);
    gb_fill_normal(&in[1], 2);
    gb_fill_normal(&in[2], 5);
    hin[0] = in[0], hin[2] = in[1], hin[4] = in[2];
    hin[1] = fvalue(4, dw, NULL), hin[3] = fvalue(2, du, NULL), hin[5] = fvalue(2, db, NULL);
    gb_fill_normal(&hin[1], 3);
    gb_fill_normal(&hin[3], 4);
    gb_fill_normal(&hin[5], 6);
    memcpy(w->f32, hin[1].f, (size_t)hin[1].n * sizeof(float));
    memcpy(u->f32, hin[3].f, (size_t)hin[3].n * sizeof(float));
    memcpy(bm->f32, hin[5].f, (size_t)hin[5].n * sizeof(float));
    /* h's inputs in its order: x, w, v, u, a, bm */
    mpx_value hv[6] = {hin[0], hin[1], hin[2], hin[3], hin[4], hin[5]};
    CHECK(w->derived == NULL && u->derived == NULL && bm->derived == NULL);
    mpx_run *r1 = RUN(g, NULL, in, NULL);
    CHECK_MSG(w->derived != NULL && u->derived != NULL && bm->derived != NULL,
              "the first run keeps the three tensors' packed weights");
    mpx_run *r2 = RUN(g, NULL, in, NULL), *r3 = RUN(h, NULL, hv, NULL);
    same_outputs(r1, r2, r3, "kept, fresh and input weights");
    /* Under an fp16 plan the weights held in fp16 are rounded once and kept
     * (with their packings): two runs read the same copy and give the bits
     * of a run whose weights arrive as inputs (rounded as they enter). */
    mpx_assign *g16 = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_assign *h16 = mpx_assign_uniform(h, &mpx_format_fp16, NULL, false);
    mpx_run *q1 = RUN(g, g16, in, NULL), *q2 = RUN(g, g16, in, NULL), *q3 = RUN(h, h16, hv, NULL);
    same_outputs(q1, q2, q3, "fp16: kept rounded, again, and input weights");
    const mpx_value *k1 = q1 ? val(q1, "w") : NULL, *k2 = q2 ? val(q2, "w") : NULL;
    CHECK_MSG(k1 && k2 && k1->f == k2->f && k1->f != w->f32 && k1->f[0] == mpx_round_scalar(&mpx_format_fp16, w->f32[0]),
              "fp16 runs share one rounded copy of the weights");
    mpx_run_free(q1), mpx_run_free(q2), mpx_run_free(q3);
    mpx_assign_free(g16), mpx_assign_free(h16);
    /* The tensor's values moved to a new buffer (as a folded weight's do when
     * shapes are bound again): the next run packs them anew, the same bits,
     * and its packing is kept in place of the old buffer's. */
    float *moved = mpx_arena_alloc(g->arena, (size_t)hin[1].n * sizeof(float));
    void *before = w->derived;
    if (moved) {
        memcpy(moved, w->f32, (size_t)hin[1].n * sizeof(float));
        w->f32 = moved;
    }
    mpx_run *r4 = moved ? RUN(g, NULL, in, NULL) : NULL;
    const mpx_value *a1 = r1 ? val(r1, "y") : NULL, *a4 = r4 ? val(r4, "y") : NULL;
    CHECK_MSG(a1 && a4 && a1->n == a4->n && memcmp(a1->f, a4->f, (size_t)a1->n * sizeof(float)) == 0,
              "moved weights give the same bits");
    CHECK_MSG(w->derived && w->derived != before, "the moved values' packing is kept");
    mpx_run_free(r4);
    mpx_run_free(r1), mpx_run_free(r2), mpx_run_free(r3);
    for (int k = 0; k < 3; k++) mpx_value_free(&in[k]);
    mpx_value_free(&hin[1]), mpx_value_free(&hin[3]), mpx_value_free(&hin[5]);
    mpx_graph_free(g); /* frees the kept packings (ASan: no leak) */
    mpx_graph_free(h);
}

/* Weights prepared before any run (mpx_exec_prepare, as `load` does): the
 * packings a fp32 run keeps (a MatMul's B, a Gemm's transB weights, a
 * GRU's W panels and R transposed, a MatMulInteger's B in the integer
 * core's rows, a ConvInteger's weights as its 16-bit rows, a convolution's
 * weights, a one-row Gemm's weights as the
 * matrix-vector route keeps them) are on their tensors at once; the runs find them (no entry
 * added: a new one would go to the list's head) and give the bits of a
 * graph whose weights arrive as inputs, packed per call. */
static void test_prepared_weights(void) {
    static const char *w_names[] = {"bm", "u", "gw", "gr", "qb", "cw", "u1", "iw"};
    enum { NW = 8, NH = 15, NO = 8 };
    mpx_graph *g = mpx_graph_new(""), *h = mpx_graph_new("");
    node(g, "mm", "MatMul", "a:f:2x37x200 bm#f:200x70", "p", "");
    node(g, "m", "Gemm", "v:f:20x40 u#f:30x40 bb#f:30", "z", "transB=1");
    node(g, "gru", "GRU", "gx:f:6x1x8 gw#f:1x48x8 gr#f:1x48x16", "gy gyh", "hidden_size=16");
    node(g, "q", "MatMulInteger", "qa:u:8x64 qb#u:64x32", "qy", "");
    node(g, "c", "Conv", "cx:f:1x3x9x9 cw#f:5x3x3x3", "cy", "");
    node(g, "m1", "Gemm", "v1:f:1x40 u1#f:30x40", "z1", "transB=1");
    node(g, "ci", "ConvInteger", "ix:u:1x4x7x7 iw#u:6x4x3x3", "iy", "");
    finish(g, "p z gy qy cy z1 iy");
    node(h, "mm", "MatMul", "a:f:2x37x200 bm:f:200x70", "p", "");
    node(h, "m", "Gemm", "v:f:20x40 u:f:30x40 bb#f:30", "z", "transB=1");
    node(h, "gru", "GRU", "gx:f:6x1x8 gw:f:1x48x8 gr:f:1x48x16", "gy gyh", "hidden_size=16");
    node(h, "q", "MatMulInteger", "qa:u:8x64 qb:u:64x32", "qy", "");
    node(h, "c", "Conv", "cx:f:1x3x9x9 cw:f:5x3x3x3", "cy", "");
    node(h, "m1", "Gemm", "v1:f:1x40 u1:f:30x40", "z1", "transB=1");
    node(h, "ci", "ConvInteger", "ix:u:1x4x7x7 iw:u:6x4x3x3", "iy", "");
    finish(h, "p z gy qy cy z1 iy");
    /* g's inputs a, v, gx, qa, cx, v1, ix; h's a, bm, v, u, gx, gw, gr, qa, qb, cx, cw, v1, u1, ix, iw */
    mpx_value hv[NH];
    const int w_at[NW] = {1, 3, 5, 6, 8, 10, 12, 14};
    for (int i = 0; i < NH; i++) {
        const mpx_tensor *t = h->inputs[i];
        mpx_value_alloc(&hv[i], t->dtype, t->rank, t->dims, NULL);
        if (hv[i].f) gb_fill_normal(&hv[i], (uint64_t)(20 + i));
        for (int64_t k = 0; !hv[i].f && k < hv[i].n; k++) hv[i].i[k] = (k * 37 + i) % 256;
    }
    for (int w = 0; w < NW; w++) {
        mpx_tensor *t = T(g, w_names[w]);
        const mpx_value *v = &hv[w_at[w]];
        if (t->f32) memcpy(t->f32, v->f, (size_t)v->n * sizeof(float));
        else memcpy(t->i64, v->i, (size_t)v->n * sizeof(int64_t));
    }
    mpx_value in[7] = {hv[0], hv[2], hv[4], hv[7], hv[9], hv[11], hv[13]};
    CHECK_MSG(mpx_exec_prepare(g) > 0, "weights prepared");
    void *kept[NW];
    for (int w = 0; w < NW; w++) {
        kept[w] = T(g, w_names[w])->derived;
        CHECK_MSG(kept[w] != NULL, "%s: its packing made before any run", w_names[w]);
    }
    CHECK_MSG(mpx_exec_prepare(g) == 0, "prepared again: nothing more made");
    mpx_run *r1 = RUN(g, NULL, in, NULL), *r2 = RUN(g, NULL, in, NULL), *r3 = RUN(h, NULL, hv, NULL);
    for (int w = 0; w < NW; w++)
        CHECK_MSG(T(g, w_names[w])->derived == kept[w], "%s: the runs read the prepared packing", w_names[w]);
    static const char *outs[NO] = {"p", "z", "gy", "gyh", "qy", "cy", "z1", "iy"};
    for (int k = 0; r1 && r2 && r3 && k < NO; k++) {
        const mpx_value *a = val(r1, outs[k]), *b = val(r2, outs[k]), *c = val(r3, outs[k]);
        const size_t bytes = a && a->f ? sizeof(float) : sizeof(int64_t);
        const void *pa = a ? (a->f ? (void *)a->f : (void *)a->i) : NULL, *pb = b ? (b->f ? (void *)b->f : (void *)b->i) : NULL,
                   *pc = c ? (c->f ? (void *)c->f : (void *)c->i) : NULL;
        CHECK_MSG(pa && pb && pc && a->n == b->n && a->n == c->n && a->n > 0 &&
                      memcmp(pa, pb, (size_t)a->n * bytes) == 0 && memcmp(pa, pc, (size_t)a->n * bytes) == 0,
                  "%s: prepared, again and input weights give the same bits", outs[k]);
    }
    CHECK_MSG(r1 && r2 && r3, "prepared weights: the runs ran");
    mpx_run_free(r1), mpx_run_free(r2), mpx_run_free(r3);
    for (int i = 0; i < NH; i++) mpx_value_free(&hv[i]);
    mpx_graph_free(g);
    mpx_graph_free(h);
}

/* A weight read through Identity (torch's export of layers sharing
 * weights): in fp32 the Identity's value is a view of the weight, the
 * MatMul keeps the weight's packing on the weight itself, and the results
 * are the bits of a graph without the Identity; under an fp16 plan the
 * Identity's value is a rounded copy, and the weight is left as it was. */
static void test_identity_view(void) {
    mpx_graph *g = mpx_graph_new(""), *h = mpx_graph_new("");
    node(g, "id", "Identity", "ws#f:48x20", "wi", "");
    node(g, "mm", "MatMul", "a:f:5x48 wi", "y", "");
    finish(g, "y");
    node(h, "mm", "MatMul", "a:f:5x48 ws#f:48x20", "y", "");
    finish(h, "y");
    mpx_tensor *ws = T(g, "ws");
    int64_t da[2] = {5, 48};
    mpx_value in = fvalue(2, da, NULL);
    gb_fill_normal(&in, 7);
    mpx_value w = fvalue(2, (int64_t[]){48, 20}, NULL);
    gb_fill_normal(&w, 8);
    memcpy(ws->f32, w.f, (size_t)w.n * sizeof(float));
    memcpy(T(h, "ws")->f32, w.f, (size_t)w.n * sizeof(float));
    mpx_run *r1 = RUN(g, NULL, &in, NULL), *r2 = RUN(h, NULL, &in, NULL);
    const mpx_value *a = r1 ? val(r1, "y") : NULL, *b = r2 ? val(r2, "y") : NULL;
    CHECK_MSG(a && b && a->n == b->n && a->n == 100 && memcmp(a->f, b->f, 100 * sizeof(float)) == 0,
              "a weight read through Identity gives the bits of one read directly");
    CHECK_MSG(ws->derived != NULL && T(g, "wi")->derived == NULL, "the packing is kept on the weight itself");
    mpx_assign *lo = mpx_assign_uniform(g, &mpx_format_fp16, NULL, false);
    mpx_run *r3 = RUN(g, lo, &in, NULL);
    const mpx_value *wi = r3 ? val(r3, "wi") : NULL;
    bool rounded = wi && wi->n == w.n, intact = memcmp(ws->f32, w.f, (size_t)w.n * sizeof(float)) == 0;
    for (int64_t k = 0; rounded && k < w.n; k++)
        rounded = wi->f[k] == mpx_round_scalar(&mpx_format_fp16, w.f[k]);
    CHECK_MSG(rounded && intact, "fp16 plan: the Identity's value is the weight rounded, the weight unchanged");
    mpx_run_free(r3), mpx_run_free(r1), mpx_run_free(r2);
    mpx_assign_free(lo);
    mpx_value_free(&in), mpx_value_free(&w);
    mpx_graph_free(g), mpx_graph_free(h);
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    test_reference_data();
    test_reference_arith();
    test_fp16_add();
    test_binary_rounded();
    test_entry_and_keep_io();
    test_overflow_report();
    test_accumulation();
    test_local();
    test_refusals();
    test_fused_chain();
    test_fused_donor();
    test_streamed_inplace();
    test_streamed_reshape();
    test_kept_weights();
    test_prepared_weights();
    test_identity_view();
    int64_t cnn[4] = {1, 3, 16, 16}, tr[3] = {1, 16, 64};
    test_model("tiny_cnn.json", cnn, 4);
    test_model("tiny_transformer.json", tr, 3);
    test_metrics();
    return check_report("test_exec");
}
