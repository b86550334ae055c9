/* test_json.c - the JSON model loader: the examples, attribute typing, inline,
 * seeded and side-file values, fp16/bf16 rounding, and every refusal naming
 * the file and the problem (line and column for syntax errors). */
#include "check.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static mpx_error err;
static char tmp[600];   /* $MPX_TMP/json */
static char msgbuf[2048];

static const char *msg(void) { return mpx_error_format(&err, msgbuf, sizeof msgbuf); }

static char *path_in(const char *dir, const char *name) {
    static char buf[4][900];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static mpx_graph *load_text(const char *text) {
    mpx_error_clear(&err);
    return mpx_graph_load_json_text(text, strlen(text), "t.json", tmp, &err);
}

/* A model that must be refused with status st, naming bad.json and each needle. */
static void expect_err_(int line, const char *text, mpx_status st, const char *n1, const char *n2) {
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(text, strlen(text), "bad.json", tmp, &err);
    CHECK_MSG(g == NULL, "line %d: accepted", line);
    mpx_graph_free(g);
    CHECK_MSG(err.status == st, "line %d: status %s, wanted %s (%s)", line,
              mpx_status_name(err.status), mpx_status_name(st), msg());
    CHECK_MSG(strcmp(err.file, "bad.json") == 0, "line %d: file \"%s\"", line, err.file);
    CHECK_MSG(strncmp(msg(), "bad.json", 8) == 0, "line %d: %s", line, msg());
    if (n1) CHECK_MSG(strstr(msg(), n1) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), n1);
    if (n2) CHECK_MSG(strstr(msg(), n2) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), n2);
}
#define EXPECT_ERR(text, st, n1, n2) expect_err_(__LINE__, text, st, n1, n2)

/* A minimal model around one node line and one initializer line. */
#define HEAD "{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"shape\": [2, 3]}], " \
             "\"outputs\": [{\"name\": \"y\"}], "

static mpx_tensor *T(mpx_graph *g, const char *name) {
    mpx_tensor *t = mpx_graph_find_tensor(g, name);
    CHECK_MSG(t != NULL, "no tensor %s", name);
    return t;
}

static mpx_node *N(mpx_graph *g, const char *name) {
    mpx_node *n = mpx_graph_find_node(g, name);
    CHECK_MSG(n != NULL, "no node %s", name);
    return n;
}

static int count_op(const mpx_graph *g, mpx_op op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += g->nodes[i]->op == op;
    return c;
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- the examples ----------------------------------------------------------- */

static mpx_graph *load_example(const char *name) {
    const char *src = getenv("MPX_SRC");
    char p[900];
    snprintf(p, sizeof p, "%s/examples/%s", src ? src : ".", name);
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json(p, &err);
    CHECK_MSG(g != NULL, "%s", msg());
    return g;
}

static void test_cnn(void) {
    mpx_graph *g = load_example("tiny_cnn.json");
    if (!g) return;
    CHECK(strcmp(g->name, "tiny_cnn") == 0 && g->opset == 17);
    CHECK(g->n_nodes == 25);
    CHECK(count_op(g, MPX_OP_Conv) == 7 && count_op(g, MPX_OP_BatchNormalization) == 5);
    CHECK(count_op(g, MPX_OP_UNKNOWN) == 0);
    CHECK(g->n_inputs == 1 && g->n_outputs == 1);
    const mpx_tensor *x = g->inputs[0];
    CHECK(strcmp(x->name, "x") == 0 && x->dtype == MPX_DT_FLOAT && x->decl_rank == 4);
    /* batch, height and width are symbolic: the same model serves any input size. */
    CHECK(x->decl_dims[0] == -1 && x->decl_dims[1] == 3 && x->decl_dims[2] == -1 && x->decl_dims[3] == -1);
    CHECK(x->decl_sym[0] && strcmp(x->decl_sym[0], "batch") == 0 && x->decl_sym[1] == NULL);
    CHECK(x->decl_sym[3] && strcmp(x->decl_sym[3], "width") == 0);
    CHECK(strcmp(g->outputs[0]->name, "y") == 0 && g->outputs[0]->producer == N(g, "/head/Softmax"));
    CHECK(strcmp(g->nodes[0]->name, "/backbone/stem/conv/Conv") == 0);

    const mpx_node *dw = N(g, "/backbone/stage1/dwconv/Conv");
    const int64_t *ks;
    CHECK(mpx_node_attr(dw, "group")->type == MPX_ATTR_INT && mpx_node_attr_int(dw, "group", 0) == 32);
    CHECK(mpx_node_attr_ints(dw, "kernel_shape", &ks) == 2 && ks[0] == 3 && ks[1] == 3);
    CHECK(mpx_node_attr_ints(dw, "pads", &ks) == 4 && ks[3] == 1);
    CHECK(mpx_node_attr_ints(dw, "strides", &ks) == 2 && ks[0] == 2);
    const mpx_node *hs = N(g, "/backbone/stage1/se/HardSigmoid");
    CHECK(mpx_node_attr(hs, "alpha")->type == MPX_ATTR_FLOAT);
    CHECK(mpx_node_attr_float(hs, "alpha", 0) == 0.16666667f);
    const mpx_node *bn = N(g, "/backbone/stem/bn/BatchNormalization");
    CHECK(mpx_node_attr(bn, "epsilon")->type == MPX_ATTR_FLOAT &&
          mpx_node_attr_float(bn, "epsilon", 0) == 1e-5f);
    const mpx_node *gemm = N(g, "/head/fc/Gemm");
    CHECK(mpx_node_attr(gemm, "alpha")->type == MPX_ATTR_FLOAT); /* spelled 1.0 */
    CHECK(mpx_node_attr(gemm, "transB")->type == MPX_ATTR_INT && mpx_node_attr_int(gemm, "transB", 0) == 1);
    CHECK(mpx_node_attr_int(N(g, "/head/Softmax"), "axis", 0) == -1);

    const mpx_tensor *w = T(g, "backbone.stage1.conv1.weight");
    CHECK(w->dtype == MPX_DT_FLOAT && w->rank == 4 && w->nelem == 32 * 16 * 9 && w->f32 && !w->i64);
    CHECK(w->dims[0] == 32 && w->dims[1] == 16 && w->dims[2] == 3 && w->dims[3] == 3);
    CHECK(w->decl_rank == 4 && w->decl_dims[0] == 32);
    CHECK((w->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT)) == (MPX_T_INITIALIZER | MPX_T_CONSTANT));
    CHECK(!(w->flags & MPX_T_INPUT) && w->producer == NULL && w->n_consumers == 1);
    const mpx_tensor *b = T(g, "head.fc.bias");
    CHECK(b->nelem == 10 && b->f32[0] == 0.01f && b->f32[2] == 0.03f && b->f32[9] == 0.0f);
    const mpx_tensor *var = T(g, "backbone.stem.bn.var");
    bool in_range = true;
    for (int i = 0; i < var->nelem; i++) in_range &= var->f32[i] >= 0.5f && var->f32[i] < 1.5f;
    CHECK(in_range);

    /* At 1x3x64x64, one Conv above 1 M MACs (so "Conv green when macs >= 1M"
     * has work to do). */
    const int64_t dims[4] = {1, 3, 64, 64};
    if (mpx_graph_bind_input(g, "x", 4, dims, &err) == MPX_OK && mpx_graph_infer(g, &err) == MPX_OK) {
        int big = 0;
        for (int i = 0; i < g->n_nodes; i++)
            big += g->nodes[i]->op == MPX_OP_Conv && g->nodes[i]->cost.macs >= 1000000;
        CHECK_MSG(big == 1, "%d Convs above 1M MACs", big);
        CHECK(g->outputs[0]->rank == 2 && g->outputs[0]->dims[1] == 10);
    } else {
        CHECK_MSG(0, "infer: %s", msg());
    }
    mpx_graph_free(g);
}

static void test_transformer(void) {
    mpx_graph *g = load_example("tiny_transformer.json");
    if (!g) return;
    CHECK(g->n_nodes == 34);
    CHECK(count_op(g, MPX_OP_MatMul) == 8 && count_op(g, MPX_OP_LayerNormalization) == 2);
    CHECK(count_op(g, MPX_OP_Erf) == 1 && count_op(g, MPX_OP_Softmax) == 1 && count_op(g, MPX_OP_UNKNOWN) == 0);
    const mpx_tensor *x = g->inputs[0];
    CHECK(x->decl_rank == 3 && x->decl_dims[1] == 16 && x->decl_dims[2] == 64);
    const mpx_tensor *split = T(g, "attn.split_heads");
    CHECK(split->dtype == MPX_DT_INT64 && split->i64 && !split->f32 && split->nelem == 4);
    CHECK(split->i64[0] == 0 && split->i64[2] == 4 && split->i64[3] == 16);
    const mpx_tensor *sc = T(g, "attn.scale");
    CHECK(sc->rank == 0 && sc->nelem == 1 && sc->f32[0] == 4.0f);
    const mpx_tensor *ones = T(g, "ln1.weight"), *zeros = T(g, "ln1.bias");
    CHECK(ones->f32[0] == 1.0f && ones->f32[63] == 1.0f && zeros->f32[5] == 0.0f);
    /* The Constant node's value reaches its output through finalize. */
    const mpx_node *k = N(g, "/block/mlp/act/Constant");
    CHECK(mpx_node_attr(k, "value")->type == MPX_ATTR_TENSOR);
    const mpx_tensor *sqrt2 = T(g, "mlp.act.sqrt2");
    CHECK((sqrt2->flags & MPX_T_CONSTANT) && sqrt2->f32 && sqrt2->f32[0] == 1.41421356f);
    const int64_t *perm;
    CHECK(mpx_node_attr_ints(N(g, "/block/attn/k/Transpose"), "perm", &perm) == 4 && perm[2] == 3);
    if (mpx_graph_infer(g, &err) == MPX_OK)
        CHECK(g->outputs[0]->rank == 3 && g->outputs[0]->dims[2] == 64 &&
              T(g, "attn.scores")->dims[1] == 4);
    else
        CHECK_MSG(0, "infer: %s", msg());
    mpx_graph_free(g);
}

/* Pinned values: a change of PRNG, Box-Muller or rounding shows up here (and
 * docs/json-model.md must then change too; it lets others rebuild weights). */
static void test_seeded(void) {
    mpx_graph *g1 = load_example("tiny_cnn.json"), *g2 = load_example("tiny_cnn.json");
    if (!g1 || !g2) {
        mpx_graph_free(g1);
        mpx_graph_free(g2);
        return;
    }
    for (int i = 0; i < g1->n_tensors; i++) {
        const mpx_tensor *a = g1->tensors[i], *b = mpx_graph_find_tensor(g2, a->name);
        if (a->f32) CHECK(b && memcmp(a->f32, b->f32, (size_t)a->nelem * sizeof(float)) == 0);
    }
    const mpx_tensor *w = T(g1, "backbone.stage1.conv1.weight"); /* normal, std 0.1179, 4608 values */
    double s = 0, s2 = 0;
    for (int i = 0; i < w->nelem; i++) s += w->f32[i], s2 += (double)w->f32[i] * w->f32[i];
    double mean = s / (double)w->nelem, sd = sqrt(s2 / (double)w->nelem - mean * mean);
    CHECK_MSG(fabs(mean) < 0.006 && fabs(sd - 0.1179) < 0.004, "mean %g std %g", mean, sd);
    const mpx_tensor *u = T(g1, "backbone.stage1.bn1.var"); /* uniform 0.5..1.5 */
    s = 0;
    for (int i = 0; i < u->nelem; i++) s += u->f32[i];
    CHECK(fabs(s / (double)u->nelem - 1.0) < 0.15);
    mpx_graph_free(g1);
    mpx_graph_free(g2);

    mpx_graph *g = load_text(HEAD "\"initializers\": ["
        "{\"name\": \"n\", \"type\": \"float32\", \"shape\": [4], \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1, \"seed\": 42}},"
        "{\"name\": \"u\", \"type\": \"float32\", \"shape\": [3], \"init\": {\"dist\": \"uniform\", \"low\": -1, \"high\": 1, \"seed\": 7}},"
        "{\"name\": \"h\", \"type\": \"float16\", \"shape\": [2], \"init\": \"normal\", \"std\": 0.05, \"seed\": 3},"
        "{\"name\": \"c\", \"type\": \"int32\", \"shape\": [2, 2], \"init\": {\"dist\": \"constant\", \"value\": -7}},"
        "{\"name\": \"d\", \"type\": \"float32\", \"shape\": [5], \"init\": {\"dist\": \"normal\"}}],"
        "\"nodes\": [{\"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}");
    CHECK_MSG(g != NULL, "%s", msg());
    if (!g) return;
    const float *n = T(g, "n")->f32, *uu = T(g, "u")->f32, *h = T(g, "h")->f32;
    static const uint32_t n_bits[4] = {0xbe9b454cu, 0x3e93b142u, 0x3fac0206u, 0xbf301f24u};
    static const uint32_t u_bits[3] = {0x3ecd63ecu, 0xbee28f0au, 0x3f2de3a7u};
    static const uint32_t h_bits[2] = {0xbd472000u, 0xbd728000u};
    for (int i = 0; i < 4; i++) CHECK_MSG(bits(n[i]) == n_bits[i], "n[%d] = %a (0x%08x)", i, (double)n[i], bits(n[i]));
    for (int i = 0; i < 3; i++) CHECK_MSG(bits(uu[i]) == u_bits[i], "u[%d] = %a (0x%08x)", i, (double)uu[i], bits(uu[i]));
    for (int i = 0; i < 2; i++) CHECK_MSG(bits(h[i]) == h_bits[i], "h[%d] = %a (0x%08x)", i, (double)h[i], bits(h[i]));
    const int64_t *c = T(g, "c")->i64;
    CHECK(c && c[0] == -7 && c[3] == -7);
    /* No seed: derived from the name, so two same-shaped tensors differ. */
    CHECK(T(g, "d")->f32[0] != T(g, "d")->f32[1] && T(g, "d")->f32[0] != n[0]);
    mpx_graph_free(g);
}

/* ---- values and attributes ------------------------------------------------ */

static void test_attrs(void) {
    mpx_graph *g = load_text(HEAD "\"nodes\": [{\"name\": \"n\", \"op\": \"Custom\", \"domain\": \"my.ops\", "
        "\"inputs\": [\"x\", \"\", \"x\"], \"outputs\": [\"y\", \"\"], \"attrs\": {"
        "\"i\": 1, \"f\": 1.0, \"e\": 1e3, \"neg\": -2, \"ints\": [1, 2, 3], \"floats\": [1, 2.5],"
        "\"strs\": [\"a\", \"bc\"], \"s\": \"nearest\", \"empty\": [], \"b\": true,"
        "\"big\": 9223372036854775807, \"small\": -9223372036854775808,"
        "\"tf\": {\"type\": \"float\", \"value\": 2}, \"tfs\": {\"type\": \"floats\", \"value\": [1, 2]},"
        "\"tt\": {\"type\": \"tensor\", \"value\": {\"type\": \"int64\", \"shape\": [2], \"data\": [5, 6]}},"
        "\"t\": {\"tensor\": {\"type\": \"float16\", \"shape\": [1, 2], \"data\": [0.1, 2]}}}}]}");
    CHECK_MSG(g != NULL, "%s", msg());
    if (!g) return;
    const mpx_node *n = N(g, "n");
    CHECK(n->n_attrs == 16 && strcmp(n->domain, "my.ops") == 0 && n->op == MPX_OP_UNKNOWN);
    CHECK(n->n_inputs == 3 && n->inputs[0] == n->inputs[2] && n->inputs[1] == NULL);
    CHECK(n->n_outputs == 2 && n->outputs[1] == NULL);
    const mpx_attr *a;
    CHECK((a = mpx_node_attr(n, "i"))->type == MPX_ATTR_INT && a->i == 1);
    CHECK((a = mpx_node_attr(n, "f"))->type == MPX_ATTR_FLOAT && a->f == 1.0f);
    CHECK((a = mpx_node_attr(n, "e"))->type == MPX_ATTR_FLOAT && a->f == 1000.0f);
    CHECK((a = mpx_node_attr(n, "neg"))->type == MPX_ATTR_INT && a->i == -2);
    CHECK((a = mpx_node_attr(n, "ints"))->type == MPX_ATTR_INTS && a->n == 3 && a->ints[2] == 3);
    CHECK((a = mpx_node_attr(n, "floats"))->type == MPX_ATTR_FLOATS && a->n == 2 && a->floats[0] == 1.0f && a->floats[1] == 2.5f);
    CHECK((a = mpx_node_attr(n, "strs"))->type == MPX_ATTR_STRINGS && a->n == 2 && strcmp(a->strings[1], "bc") == 0);
    CHECK((a = mpx_node_attr(n, "s"))->type == MPX_ATTR_STRING && strcmp(a->s, "nearest") == 0 && a->s_len == 7);
    CHECK((a = mpx_node_attr(n, "empty"))->type == MPX_ATTR_INTS && a->n == 0);
    CHECK((a = mpx_node_attr(n, "b"))->type == MPX_ATTR_INT && a->i == 1);
    CHECK((a = mpx_node_attr(n, "big"))->type == MPX_ATTR_INT && a->i == INT64_MAX);
    CHECK((a = mpx_node_attr(n, "small"))->type == MPX_ATTR_INT && a->i == INT64_MIN);
    CHECK((a = mpx_node_attr(n, "tf"))->type == MPX_ATTR_FLOAT && a->f == 2.0f);
    CHECK((a = mpx_node_attr(n, "tfs"))->type == MPX_ATTR_FLOATS && a->n == 2 && a->floats[1] == 2.0f);
    CHECK((a = mpx_node_attr(n, "tt"))->type == MPX_ATTR_TENSOR && a->t->i64 && a->t->i64[1] == 6);
    a = mpx_node_attr(n, "t");
    CHECK(a->type == MPX_ATTR_TENSOR && a->t && a->t->dtype == MPX_DT_FLOAT16 && a->t->rank == 2);
    CHECK(a->t->dims[1] == 2 && a->t->f32[0] == 0.0999755859375f && a->t->f32[1] == 2.0f);
    CHECK(a->t->index == -1 && g->n_tensors == 2); /* detached: not in graph->tensors */
    CHECK(mpx_node_attr_float(n, "i", 0) == 1.0f);   /* an INT reads as float too */
    mpx_graph_free(g);
}

static void test_data(void) {
    mpx_graph *g = load_text(HEAD "\"initializers\": ["
        "{\"name\": \"f32\", \"type\": \"float32\", \"shape\": [3], \"data\": [0.1, \"inf\", \"nan\"]},"
        "{\"name\": \"f16\", \"type\": \"float16\", \"shape\": [8], \"data\": [0.1, 65519, 65520, 1e-8, 3e-8, 1.00048828125, 1.00146484375, -1e9]},"
        "{\"name\": \"bf16\", \"type\": \"bfloat16\", \"shape\": [3], \"data\": [0.1, 1.00390625, 1.01171875]},"
        "{\"name\": \"f64\", \"type\": \"float64\", \"shape\": [1], \"data\": 0.1},"
        "{\"name\": \"i8\", \"type\": \"int8\", \"shape\": [2], \"data\": [127, -128]},"
        "{\"name\": \"u8\", \"type\": \"uint8\", \"shape\": [2], \"data\": [0, 255]},"
        "{\"name\": \"bool\", \"type\": \"bool\", \"shape\": [3], \"data\": [true, false, 1]},"
        "{\"name\": \"i64\", \"type\": \"int64\", \"shape\": [2], \"data\": [9223372036854775807, -3]},"
        "{\"name\": \"empty\", \"type\": \"float32\", \"shape\": [0, 4], \"data\": []},"
        "{\"name\": \"x\", \"type\": \"float32\", \"shape\": [2, 3], \"init\": \"zeros\"}],"
        "\"nodes\": [{\"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}");
    CHECK_MSG(g != NULL, "%s", msg());
    if (!g) return;
    const float *f = T(g, "f32")->f32, *h = T(g, "f16")->f32, *b = T(g, "bf16")->f32;
    CHECK(f[0] == 0.1f && isinf(f[1]) && f[1] > 0 && isnan(f[2]));
    CHECK(h[0] == 0.0999755859375f);         /* nearest fp16 to 0.1 */
    CHECK(h[1] == 65504.0f);                 /* below the overflow threshold */
    CHECK(isinf(h[2]) && h[2] > 0);          /* 65520 is the halfway point: to inf */
    CHECK(h[3] == 0.0f);                     /* below half the smallest subnormal */
    CHECK(h[4] == 0x1p-24f);                 /* above it: the smallest subnormal */
    CHECK(h[5] == 1.0f);                     /* 1 + 2^-11, a tie: to even */
    CHECK(h[6] == 1.001953125f);             /* 1 + 3*2^-11, a tie: to even (1 + 2^-9) */
    CHECK(isinf(h[7]) && h[7] < 0);
    CHECK(b[0] == 0.10009765625f && b[1] == 1.0f && b[2] == 1.015625f);
    CHECK(T(g, "f64")->f64[0] == 0.1 && T(g, "f64")->dtype == MPX_DT_DOUBLE); /* held as float64 */
    CHECK(T(g, "i8")->i64[0] == 127 && T(g, "i8")->i64[1] == -128 && T(g, "u8")->i64[1] == 255);
    const int64_t *bo = T(g, "bool")->i64;
    CHECK(bo[0] == 1 && bo[1] == 0 && bo[2] == 1);
    CHECK(T(g, "i64")->i64[0] == INT64_MAX && T(g, "i64")->i64[1] == -3);
    CHECK(T(g, "empty")->nelem == 0);
    /* An input that also has an initializer is a weight with a default. */
    CHECK(g->n_inputs == 0 && (T(g, "x")->flags & MPX_T_INITIALIZER));
    mpx_graph_free(g);
}

static void test_symbolic(void) {
    mpx_graph *g = load_text("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"type\": \"float16\", "
        "\"shape\": [\"batch\", 3, null]}, {\"name\": \"z\"}], \"outputs\": [{\"name\": \"y\", \"type\": \"float16\"}],"
        "\"value_info\": [{\"name\": \"m\", \"shape\": [\"batch\", 3, 7]}],"
        "\"nodes\": [{\"op\": \"Add\", \"inputs\": [\"x\", \"z\"], \"outputs\": [\"m\"]}, "
        "{\"op\": \"Relu\", \"inputs\": [\"m\"], \"outputs\": [\"y\"], \"_comment\": \"ignored\"}]}");
    CHECK_MSG(g != NULL, "%s", msg());
    if (!g) return;
    const mpx_tensor *x = T(g, "x");
    CHECK(x->dtype == MPX_DT_FLOAT16 && x->decl_rank == 3 && x->decl_dims[0] == -1);
    CHECK(x->decl_sym[0] && strcmp(x->decl_sym[0], "batch") == 0 && x->decl_dims[1] == 3);
    CHECK(x->decl_dims[2] == -1 && x->decl_sym[2] == NULL);
    CHECK(T(g, "z")->dtype == MPX_DT_FLOAT && T(g, "z")->decl_rank == -1);
    CHECK(T(g, "m")->decl_rank == 3 && T(g, "m")->decl_dims[2] == 7);
    CHECK(T(g, "y")->dtype == MPX_DT_FLOAT16 && g->n_inputs == 2 && g->inputs[1] == T(g, "z"));
    CHECK(strcmp(g->nodes[0]->name, "Add_0") == 0);
    mpx_graph_free(g);
}

/* ---- side files ---------------------------------------------------------- */

static mpx_graph *load_side(const char *file_spec, const char *type, int n) {
    char text[1024];
    snprintf(text, sizeof text, HEAD "\"initializers\": [{\"name\": \"w\", \"type\": \"%s\", "
             "\"shape\": [%d], \"file\": %s}], \"nodes\": [{\"op\": \"Relu\", \"inputs\": [\"x\"], "
             "\"outputs\": [\"y\"]}]}", type, n, file_spec);
    const char *model = path_in(tmp, "side.json");
    write_file(model, text, strlen(text));
    mpx_error_clear(&err);
    return mpx_graph_load_json(model, &err);
}

static void test_side_files(void) {
    /* 8 bytes of junk, then fp32 1.5, -2, 3e-3 little-endian, then fp16 1, -2, 65504. */
    unsigned char buf[8 + 12 + 6] = {9, 9, 9, 9, 9, 9, 9, 9};
    float fv[3] = {1.5f, -2.0f, 3e-3f};
    for (int i = 0; i < 3; i++) {
        uint32_t u = bits(fv[i]);
        for (int b = 0; b < 4; b++) buf[8 + 4 * i + b] = (unsigned char)(u >> (8 * b));
    }
    const unsigned char half[6] = {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b};
    memcpy(buf + 20, half, 6);
    write_file(path_in(tmp, "w.bin"), buf, sizeof buf);

    mpx_graph *g = load_side("{\"path\": \"w.bin\", \"offset\": 8}", "float32", 3);
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) CHECK(T(g, "w")->f32[0] == 1.5f && T(g, "w")->f32[1] == -2.0f && T(g, "w")->f32[2] == 3e-3f);
    mpx_graph_free(g);
    g = load_side("{\"path\": \"./w.bin\", \"offset\": 20}", "float16", 3);
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) CHECK(T(g, "w")->f32[0] == 1.0f && T(g, "w")->f32[1] == -2.0f && T(g, "w")->f32[2] == 65504.0f);
    mpx_graph_free(g);
    /* fp16 NaNs keep their payload (graph/dtype.c's one decoder): quiet
     * 0x7e01 and signalling -0xfc01. */
    const unsigned char nan16[4] = {0x01, 0x7e, 0x01, 0xfc};
    write_file(path_in(tmp, "nan.bin"), nan16, sizeof nan16);
    g = load_side("\"nan.bin\"", "float16", 2);
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) CHECK(bits(T(g, "w")->f32[0]) == 0x7fc02000u && bits(T(g, "w")->f32[1]) == 0xff802000u);
    mpx_graph_free(g);
    g = load_side("\"w.bin\"", "uint8", 2);
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) CHECK(T(g, "w")->i64[0] == 9 && T(g, "w")->i64[1] == 9);
    mpx_graph_free(g);

    /* too short: 26 bytes hold no 4 fp32 values after offset 16 */
    CHECK(load_side("{\"path\": \"w.bin\", \"offset\": 16}", "float32", 4) == NULL);
    CHECK(err.status == MPX_E_INVALID && strstr(err.file, "side.json"));
    CHECK_CONTAINS(msg(), "initializers[0] (\"w\"): side file \"w.bin\" has 26 bytes");
    CHECK(load_side("\"missing.bin\"", "float32", 1) == NULL);
    CHECK(err.status == MPX_E_IO);
    CHECK_CONTAINS(msg(), "cannot open side file");
    CHECK_CONTAINS(msg(), "missing.bin");
    write_file(path_in(tmp, "../outside.bin"), buf, sizeof buf);
    CHECK(load_side("\"../outside.bin\"", "float32", 1) == NULL);
    CHECK(err.status == MPX_E_INVALID);
    CHECK_CONTAINS(msg(), "leaves the model's folder");
    CHECK(load_side("\"/etc/passwd\"", "uint8", 1) == NULL);
    CHECK(err.status == MPX_E_INVALID);
    CHECK_CONTAINS(msg(), "absolute path");
    unlink(path_in(tmp, "link.bin"));
    if (symlink("/etc/passwd", path_in(tmp, "link.bin")) == 0) {
        CHECK(load_side("\"link.bin\"", "uint8", 1) == NULL);
        CHECK(err.status == MPX_E_INVALID);
        CHECK_CONTAINS(msg(), "outside the model's folder");
    }
    /* From memory without a folder, side files are refused. */
    const char *text = HEAD "\"initializers\": [{\"name\": \"w\", \"type\": \"float32\", \"shape\": [1], "
                       "\"file\": \"w.bin\"}], \"nodes\": []}";
    mpx_error_clear(&err);
    CHECK(mpx_graph_load_json_text(text, strlen(text), "mem.json", NULL, &err) == NULL);
    CHECK(err.status == MPX_E_UNSUPPORTED);
    CHECK_CONTAINS(msg(), "no folder");
}

/* ---- refusals -------------------------------------------------------------- */

#define RELU "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}"

static void test_syntax_errors(void) {
    /* line 3, column 13: the comma after '[' */
    EXPECT_ERR("{\n  \"format\": \"mpx-model\",\n  \"nodes\": [,]\n}", MPX_E_PARSE, "bad.json:3:13:", "syntax error");
    CHECK(err.line == 3 && err.column == 13);
    /* truncated: reported at the end of the text */
    EXPECT_ERR("{\"format\": \"mpx-model\",\n \"nodes\": [{\"op\": \"Relu\"", MPX_E_PARSE, "bad.json:2:25:", "end of input");
    EXPECT_ERR("{\"format\": \"mpx-mo", MPX_E_PARSE, "bad.json:1:19:", "end of input");
    EXPECT_ERR("", MPX_E_PARSE, "bad.json:1:1:", "empty");
    {
        /* deeper than cJSON reads: said, not "unexpected character" */
        char deep[2600];
        size_t o = (size_t)snprintf(deep, sizeof deep, "{\"format\": \"mpx-model\", \"x\": ");
        for (int i = 0; i < 1200; i++) deep[o++] = '[';
        for (int i = 0; i < 1200; i++) deep[o++] = ']';
        deep[o++] = '}';
        deep[o] = '\0';
        EXPECT_ERR(deep, MPX_E_PARSE, "nested too deeply", "1000 levels");
    }
    EXPECT_ERR("  \n ", MPX_E_PARSE, "empty", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\"} x", MPX_E_PARSE, "bad.json:1:25:", "after the JSON value");
    EXPECT_ERR("[1, 2]", MPX_E_PARSE, "top level must be a JSON object", NULL);
    EXPECT_ERR("42", MPX_E_PARSE, "top level must be a JSON object, not a number", NULL);
    EXPECT_ERR("{\"format\": \"onnx\", " RELU, MPX_E_PARSE, "\"format\"", "mpx-model");
    EXPECT_ERR("{\"nodes\": []}", MPX_E_INVALID, "missing \"format\"", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\", \"version\": 2, " RELU, MPX_E_UNSUPPORTED, "version 2", NULL);

    /* Nesting beyond cJSON's limit is a syntax error, not a stack overflow. */
    size_t n = 200000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\0';
    EXPECT_ERR(deep, MPX_E_PARSE, "syntax error", NULL);
    free(deep);
    const char zero[] = "{\"format\": \"mpx-model\"\0, \"nodes\": []}";
    mpx_error_clear(&err);
    CHECK(mpx_graph_load_json_text(zero, sizeof zero - 1, "bad.json", NULL, &err) == NULL);
    CHECK(err.status == MPX_E_PARSE && err.line == 1 && err.column == 23);
    CHECK_CONTAINS(msg(), "NUL byte");

    mpx_error_clear(&err);
    CHECK(mpx_graph_load_json(path_in(tmp, "no-such-model.json"), &err) == NULL);
    CHECK(err.status == MPX_E_IO && strstr(err.file, "no-such-model.json"));
    CHECK_CONTAINS(msg(), "cannot open");
    write_file(path_in(tmp, "empty.json"), "", 0);
    mpx_error_clear(&err);
    CHECK(mpx_graph_load_json(path_in(tmp, "empty.json"), &err) == NULL);
    CHECK(err.status == MPX_E_PARSE && strstr(err.file, "empty.json") && err.line == 1);
    mpx_error_clear(&err);
    CHECK(mpx_graph_load_json(tmp, &err) == NULL); /* a folder */
    CHECK(err.status == MPX_E_IO);
}

static void test_semantic_errors(void) {
    EXPECT_ERR(HEAD "\"initialisers\": [], " RELU, MPX_E_INVALID, "unknown key \"initialisers\"", NULL);
    EXPECT_ERR(HEAD "\"nodes\": {}}", MPX_E_INVALID, "\"nodes\" must be an array", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\", \"outputs\": [{\"name\": \"y\"}]}", MPX_E_INVALID, "missing \"nodes\"", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\", " RELU, MPX_E_INVALID, "missing \"outputs\"", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"conv2\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}",
               MPX_E_INVALID, "bad.json: nodes[0] (\"conv2\"): missing \"op\"", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"op\": \"Relu\", \"outputs\": [\"y\"]}, {\"name\": \"conv2\", \"op\": \"Relu\", "
               "\"inputs\": \"x\", \"outputs\": [\"z\"]}]}",
               MPX_E_INVALID, "nodes[1] (\"conv2\"): \"inputs\" must be an array of strings", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\", 3], \"outputs\": [\"y\"]}]}",
               MPX_E_INVALID, "\"inputs\" must be an array of strings", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [7]}", MPX_E_INVALID, "nodes[0]: must be an object", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"alpha\": null}}]}", MPX_E_INVALID, "nodes[0] (\"r\"): attrs.alpha: null is not", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"p\": [1, \"a\"]}}]}", MPX_E_INVALID, "attrs.p:", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"p\": 1e999}}]}", MPX_E_INVALID, "attrs.p: must be a finite number", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"p\": 99999999999999999999}}]}", MPX_E_INVALID, "within int64", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"p\": {\"type\": \"int\", \"value\": 1.5}}}]}", MPX_E_INVALID, "must be an integer", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
               "\"attrs\": {\"p\": 1, \"p\": 2}}]}", MPX_E_INVALID, "attribute \"p\" appears twice", NULL);

#define INIT(body) HEAD "\"initializers\": [{\"name\": \"w\", " body "}], " RELU
    EXPECT_ERR(INIT("\"type\": \"float33\", \"shape\": [1], \"data\": [1]"), MPX_E_INVALID,
               "initializers[0] (\"w\"): unknown type \"float33\"", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [2, 2], \"data\": [1, 2, 3]"), MPX_E_INVALID,
               "initializers[0] (\"w\"): \"data\" has 3 values but the shape needs 4", NULL);
    /* refused before 8 GB are allocated */
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [2147483648], \"data\": [1]"), MPX_E_INVALID,
               "has 1 values but the shape needs 2147483648", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [2], \"data\": [1, \"x\"]"), MPX_E_INVALID, "data[1] must be a number", NULL);
    EXPECT_ERR(INIT("\"type\": \"int8\", \"shape\": [1], \"data\": [128]"), MPX_E_INVALID, "data[0] (128) is out of range for type int8", NULL);
    EXPECT_ERR(INIT("\"type\": \"int32\", \"shape\": [1], \"data\": [1.5]"), MPX_E_INVALID, "must be an integer", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [3, -2], \"data\": []"), MPX_E_INVALID, "shape[1] is negative (-2)", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [100000, 100000, 100000], \"init\": \"zeros\""), MPX_E_LIMIT,
               "initializers[0] (\"w\"): \"shape\": dims product exceeds", NULL);
    /* generated values are bounded (1 GiB a model): a short shape asks for 2.5 GB */
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [666666664], \"init\": \"zeros\""), MPX_E_LIMIT,
               "initializers[0] (\"w\"): \"init\" would generate 666666664 values", "beyond the 1024 MiB");
    EXPECT_ERR(INIT("\"type\": \"int64\", \"shape\": [200000000], \"init\": \"zeros\""), MPX_E_LIMIT,
               "would generate 200000000 values (1525.9 MiB)", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1e300], \"init\": \"zeros\""), MPX_E_INVALID, "shape[0] must be an integer", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"init\": \"zeros\""), MPX_E_UNSUPPORTED, "rank 9", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1]"), MPX_E_INVALID, "needs one of \"data\", \"init\" or \"file\"", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1], \"data\": [1], \"init\": \"ones\""), MPX_E_INVALID, "only one of", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1], \"init\": \"gaussian\""), MPX_E_INVALID, "unknown init \"gaussian\"", NULL);
    EXPECT_ERR(INIT("\"type\": \"int64\", \"shape\": [1], \"init\": {\"dist\": \"normal\"}"), MPX_E_UNSUPPORTED, "float type", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1], \"init\": {\"dist\": \"normal\", \"std\": -1}"), MPX_E_INVALID, "\"std\" is negative", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1], \"init\": {\"dist\": \"normal\", \"sd\": 1}"), MPX_E_INVALID, "unknown key \"sd\"", NULL);
    EXPECT_ERR(INIT("\"type\": \"float32\", \"shape\": [1], \"init\": {\"dist\": \"normal\", \"seed\": -1}"), MPX_E_INVALID, "\"seed\"", NULL);
    EXPECT_ERR(INIT("\"type\": \"string\", \"shape\": [1], \"data\": [\"a\"]"), MPX_E_UNSUPPORTED, "type string", NULL);
    EXPECT_ERR(HEAD "\"initializers\": [{\"name\": \"w\", \"type\": \"float32\", \"shape\": [], \"data\": [1]}, "
               "{\"name\": \"w\", \"type\": \"float32\", \"shape\": [], \"data\": [2]}], " RELU,
               MPX_E_INVALID, "initializers[1] (\"w\"): initializer \"w\" is defined twice", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"shape\": [\"n\", -1]}], "
               "\"outputs\": [{\"name\": \"y\"}], " RELU, MPX_E_INVALID, "inputs[0] (\"x\"): shape[1] is negative", "null or a name");
    EXPECT_ERR("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"type\": \"floot\"}], "
               "\"outputs\": [{\"name\": \"y\"}], " RELU, MPX_E_INVALID, "inputs[0] (\"x\"): unknown type \"floot\"", NULL);
    EXPECT_ERR("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"shape\": [65536, 65536, 65536]}], "
               "\"outputs\": [{\"name\": \"y\"}], " RELU, MPX_E_LIMIT, "inputs[0] (\"x\")", "exceeds");
    EXPECT_ERR("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\"}, {\"name\": \"x\"}], "
               "\"outputs\": [{\"name\": \"y\"}], " RELU, MPX_E_INVALID, "inputs[1] (\"x\"): \"x\" is listed twice", NULL);

    /* Structure: found by mpx_graph_finalize, surfaced unchanged. */
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"r\", \"op\": \"Add\", \"inputs\": [\"x\", \"nope\"], \"outputs\": [\"y\"]}]}",
               MPX_E_INVALID, "node \"r\" (Add) reads tensor \"nope\"", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"a\", \"op\": \"Add\", \"inputs\": [\"x\", \"c\"], \"outputs\": [\"b\"]}, "
               "{\"name\": \"b\", \"op\": \"Relu\", \"inputs\": [\"b\"], \"outputs\": [\"c\"]}, "
               "{\"name\": \"c\", \"op\": \"Relu\", \"inputs\": [\"c\"], \"outputs\": [\"y\"]}]}",
               MPX_E_INVALID, "cycle", "\"a\"");
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"a\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}, "
               "{\"name\": \"b\", \"op\": \"Neg\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}",
               MPX_E_INVALID, "tensor \"y\" is written by two nodes", "\"b\"");
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"a\", \"op\": \"Split\", \"inputs\": [\"x\"], \"outputs\": [\"y\", \"y\"]}]}",
               MPX_E_INVALID, "output \"y\" is listed twice", NULL);
    EXPECT_ERR(HEAD "\"nodes\": [{\"name\": \"a\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"z\"]}]}",
               MPX_E_INVALID, "model output \"y\"", NULL);
}

/* Every prefix of a real model, and random byte damage, must load or fail
 * cleanly (ASan/UBSan builds catch what a plain build would not). */
static void test_fuzz(void) {
    const char *src = getenv("MPX_SRC");
    char p[900];
    snprintf(p, sizeof p, "%s/examples/tiny_transformer.json", src ? src : ".");
    FILE *f = fopen(p, "rb");
    CHECK(f != NULL);
    if (!f) return;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    int ok = 0, failed_clean = 0;
    for (size_t cut = 0; cut < n; cut += 7) {
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_json_text(text, cut, "cut.json", NULL, &err);
        if (g) ok++;
        else failed_clean += err.status != MPX_OK && err.msg[0];
        mpx_graph_free(g);
    }
    CHECK(ok == 0 && failed_clean == (int)((n + 6) / 7));
    uint64_t r = 12345;
    static char mut[1 << 16];
    for (int it = 0; it < 400; it++) {
        memcpy(mut, text, n);
        for (int k = 0; k < 3; k++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            static const char junk[] = "{}[],:\"0-9e.x \\";
            mut[(r >> 33) % n] = junk[(r >> 20) % (sizeof junk - 1)];
        }
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_json_text(mut, n, "mut.json", NULL, &err);
        CHECK(g || (err.status != MPX_OK && err.msg[0]));
        mpx_graph_free(g);
    }
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    const char *t = getenv("MPX_TMP");
    snprintf(tmp, sizeof tmp, "%s/json", t ? t : "/tmp/mpx_test_json");
    mkdir(t ? t : "/tmp/mpx_test_json", 0755);
    mkdir(tmp, 0755);
    test_cnn();
    test_transformer();
    test_seeded();
    test_attrs();
    test_data();
    test_symbolic();
    test_side_files();
    test_syntax_errors();
    test_semantic_errors();
    test_fuzz();
    return check_report("test_json");
}
