/* test_graph.c - the builder and mpx_graph_finalize: the structural rules
 * both loaders rely on (one producer, no dangling read, no cycle), the
 * topological order, consumer lists, unique names, Constant values, limits. */
#include "check.h"
#include "mpx_graph.h"

#include <stdlib.h>

/* node(g, name, op, "a,b", "c") in one line */
static mpx_node *node(mpx_graph *g, const char *name, const char *op, const char *ins,
                      const char *outs) {
    const char *lists[2] = {ins, outs};
    int counts[2] = {0, 0};
    for (int l = 0; l < 2; l++)
        if (*lists[l]) {
            counts[l] = 1;
            for (const char *p = lists[l]; *p; p++) counts[l] += *p == ',';
        }
    mpx_node *n = mpx_graph_add_node(g, name, op, "", counts[0], counts[1], 0);
    for (int l = 0; l < 2; l++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", lists[l]);
        int k = 0;
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","), k++) {
            mpx_tensor *t = strcmp(tok, "-") == 0 ? NULL : mpx_graph_tensor(g, tok);
            if (l == 0) n->inputs[k] = t;
            else n->outputs[k] = t;
        }
    }
    return n;
}

static mpx_graph *with_input(const char *path) {
    mpx_graph *g = mpx_graph_new(path);
    mpx_tensor *x = mpx_graph_tensor(g, "x");
    int64_t d[2] = {2, 3};
    mpx_tensor_declare(x, MPX_DT_FLOAT, 2, d, NULL, NULL);
    x->flags |= MPX_T_INPUT;
    return g;
}

static void test_order_and_consumers(void) {
    mpx_graph *g = with_input("m.json");
    /* File order: c reads b which a later node produces. */
    node(g, "c", "Relu", "b", "y");
    node(g, "a", "Sigmoid", "x", "a_out");
    node(g, "b", "Mul", "a_out,a_out", "b");
    mpx_graph_tensor(g, "y")->flags |= MPX_T_OUTPUT;
    mpx_error err;
    mpx_error_clear(&err);
    CHECK(mpx_graph_finalize(g, &err) == MPX_OK);
    CHECK(strcmp(g->nodes[0]->name, "a") == 0);
    CHECK(strcmp(g->nodes[1]->name, "b") == 0);
    CHECK(strcmp(g->nodes[2]->name, "c") == 0);
    for (int i = 0; i < g->n_nodes; i++) CHECK(g->nodes[i]->index == i);
    CHECK(g->nodes[0]->op == MPX_OP_Sigmoid);
    mpx_tensor *a = mpx_graph_find_tensor(g, "a_out");
    CHECK(a->n_consumers == 1 && a->consumers[0] == g->nodes[1]);
    CHECK(a->producer == g->nodes[0]);
    CHECK(g->n_inputs == 1 && g->inputs[0] == mpx_graph_find_tensor(g, "x"));
    CHECK(g->n_outputs == 1 && strcmp(g->outputs[0]->name, "y") == 0);
    /* current shape starts as the declared one */
    CHECK(g->inputs[0]->rank == 2 && g->inputs[0]->nelem == 6);
    mpx_graph_free(g);
}

static void test_dangling(void) {
    mpx_graph *g = with_input("bad.onnx");
    node(g, "n1", "Add", "x,ghost", "y");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.file, "bad.onnx");
    CHECK_CONTAINS(err.msg, "\"n1\"");
    CHECK_CONTAINS(err.msg, "\"ghost\"");
    mpx_graph_free(g);
}

static void test_two_producers(void) {
    mpx_graph *g = with_input("bad.json");
    node(g, "p1", "Relu", "x", "y");
    node(g, "p2", "Sigmoid", "x", "y");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "two nodes");
    CHECK_CONTAINS(err.msg, "\"p1\"");
    CHECK_CONTAINS(err.msg, "\"p2\"");
    mpx_graph_free(g);
}

static void test_writes_input(void) {
    mpx_graph *g = with_input("bad.json");
    node(g, "w", "Relu", "x", "x");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "model input");
    mpx_graph_free(g);
}

static void test_cycle(void) {
    mpx_graph *g = with_input("cyc.onnx");
    node(g, "head", "Relu", "x", "h");
    node(g, "loop_a", "Add", "h,c", "a");
    node(g, "loop_b", "Relu", "a", "b");
    node(g, "loop_c", "Relu", "b", "c");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "cycle");
    CHECK_CONTAINS(err.msg, "loop_a");
    CHECK_CONTAINS(err.msg, "loop_b");
    CHECK_CONTAINS(err.msg, "loop_c");
    CHECK(strstr(err.msg, "head") == NULL);
    CHECK_CONTAINS(err.file, "cyc.onnx");
    mpx_graph_free(g);
}

static void test_self_loop(void) {
    mpx_graph *g = with_input("self.onnx");
    node(g, "me", "Add", "x,s", "s");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "cycle");
    CHECK_CONTAINS(err.msg, "\"me\"");
    mpx_graph_free(g);
}

static void test_names_and_unknown_ops(void) {
    mpx_graph *g = with_input("m.onnx");
    mpx_node *a = node(g, "", "Relu", "x", "r");
    mpx_node *b = node(g, "dup", "Relu", "r", "s");
    mpx_node *c = node(g, "dup", "FancyCustomOp", "s", "t");
    mpx_node *d = mpx_graph_add_node(g, "custom", "Relu", "com.vendor", 1, 1, 0);
    d->inputs[0] = mpx_graph_tensor(g, "t");
    d->outputs[0] = mpx_graph_tensor(g, "u");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_OK);
    CHECK(strcmp(a->name, "Relu_0") == 0);
    CHECK(strcmp(b->name, "dup") == 0);
    CHECK(strcmp(c->name, "dup#2") == 0);
    CHECK(mpx_graph_find_node(g, "dup#2") == c);
    /* an op the registry does not know loads, marked unknown */
    CHECK(c->op == MPX_OP_UNKNOWN);
    /* a known name in another domain is not the ONNX op */
    CHECK(d->op == MPX_OP_UNKNOWN);
    mpx_graph_free(g);
}

static void test_constant_values(void) {
    mpx_graph *g = with_input("c.onnx");
    mpx_node *k = node(g, "k", "Constant", "", "kv");
    k->n_attrs = 1;
    k->attrs = mpx_arena_calloc(g->arena, 1, sizeof(mpx_attr));
    k->attrs[0].name = "value_ints";
    k->attrs[0].type = MPX_ATTR_INTS;
    static int64_t vals[3] = {1, -1, 6};
    k->attrs[0].ints = vals;
    k->attrs[0].n = 3;
    node(g, "r", "Reshape", "x,kv", "y");
    mpx_error err;
    CHECK(mpx_graph_finalize(g, &err) == MPX_OK);
    mpx_tensor *kv = mpx_graph_find_tensor(g, "kv");
    CHECK(kv->i64 && kv->nelem == 3 && kv->i64[1] == -1 && kv->rank == 1);
    CHECK(kv->flags & MPX_T_CONSTANT);
    CHECK(kv->dtype == MPX_DT_INT64);
    mpx_graph_free(g);
}

static void test_limits(void) {
    mpx_error err;
    int64_t out;
    int64_t big[3] = {1 << 20, 1 << 20, 1 << 20};
    CHECK(mpx_dims_product(3, big, &out, &err) == MPX_E_LIMIT);
    int64_t huge[2] = {INT64_MAX, 3};
    CHECK(mpx_dims_product(2, huge, &out, &err) == MPX_E_LIMIT);
    int64_t ok[3] = {2, 3, 4};
    CHECK(mpx_dims_product(3, ok, &out, &err) == MPX_OK && out == 24);
    int64_t sym[2] = {-1, 4};
    CHECK(mpx_dims_product(2, sym, &out, &err) == MPX_OK && out == -1);
    int64_t zero[2] = {0, INT64_MAX};
    CHECK(mpx_dims_product(2, zero, &out, &err) == MPX_OK && out == 0);

    mpx_graph *g = mpx_graph_new("w.onnx");
    mpx_tensor *w = mpx_graph_tensor(g, "w");
    CHECK(mpx_tensor_alloc_value(g, w, MPX_DT_FLOAT, 3, big, &err) == MPX_E_LIMIT);
    CHECK_CONTAINS(err.msg, "\"w\"");
    int64_t neg[1] = {-4};
    CHECK(mpx_tensor_alloc_value(g, w, MPX_DT_FLOAT, 1, neg, &err) == MPX_E_INVALID);
    CHECK(mpx_tensor_alloc_value(g, w, MPX_DT_FLOAT, 3, ok, &err) == MPX_OK);
    CHECK(w->f32 && w->nelem == 24 && w->f32[23] == 0.0f);
    mpx_graph_free(g);
}

static void test_arena_and_registry(void) {
    mpx_arena *a = mpx_arena_new();
    for (int i = 0; i < 10000; i++) {
        char *p = mpx_arena_alloc(a, (size_t)(i % 97) + 1);
        CHECK(p != NULL && ((uintptr_t)p & 15) == 0);
    }
    char *big = mpx_arena_alloc(a, 1 << 20);
    CHECK(big && big[(1 << 20) - 1] == 0);
    CHECK(mpx_arena_calloc(a, SIZE_MAX / 2, 4) == NULL);
    CHECK(strcmp(mpx_arena_strdup(a, "conv"), "conv") == 0);
    mpx_arena_free(a);

    CHECK(mpx_op_from_name("Conv") == MPX_OP_Conv);
    CHECK(strcmp(mpx_op_name(MPX_OP_MatMul), "MatMul") == 0);
    CHECK(mpx_op_from_name("conv") == MPX_OP_UNKNOWN);
    CHECK(mpx_op_from_name_ci("conv") == MPX_OP_Conv);
    for (int i = 1; i < MPX_OP_COUNT; i++) CHECK((int)mpx_op_from_name(mpx_op_name((mpx_op)i)) == i);
    /* a node's domain decides which ops its op_type can name */
    CHECK(mpx_op_from_domain_name("", "Conv") == MPX_OP_Conv);
    CHECK(mpx_op_from_domain_name("ai.onnx", "Conv") == MPX_OP_Conv);
    CHECK(mpx_op_from_domain_name("com.microsoft", "FusedMatMul") == MPX_OP_FusedMatMul);
    CHECK(mpx_op_from_domain_name("", "FusedMatMul") == MPX_OP_UNKNOWN);
    CHECK(mpx_op_from_domain_name("com.microsoft", "Gelu") == MPX_OP_Gelu);
    CHECK(mpx_op_from_domain_name("com.microsoft", "Conv") == MPX_OP_UNKNOWN);
    CHECK(mpx_op_from_domain_name("", "SimplifiedLayerNormalization") == MPX_OP_SimplifiedLayerNormalization);
    CHECK(mpx_op_from_domain_name("ai.onnx.ml", "Conv") == MPX_OP_UNKNOWN);
    CHECK(mpx_dtype_from_name("float16") == MPX_DT_FLOAT16);
    CHECK(mpx_dtype_from_name("bf16") == MPX_DT_BFLOAT16);
    CHECK(mpx_dtype_from_name("int4x") == MPX_DT_UNDEFINED);
    CHECK(mpx_dtype_is_float(MPX_DT_BFLOAT16) && !mpx_dtype_is_float(MPX_DT_INT64));

    mpx_error err;
    char buf[2048];
    mpx_error_at(&err, MPX_E_PARSE, "m.json", 3, 14, "expected '%c'", ',');
    CHECK(strcmp(mpx_error_format(&err, buf, sizeof buf), "m.json:3:14: expected ','") == 0);
}

int main(void) {
    test_order_and_consumers();
    test_dangling();
    test_two_producers();
    test_writes_input();
    test_cycle();
    test_self_loop();
    test_names_and_unknown_ops();
    test_constant_values();
    test_limits();
    test_arena_and_registry();
    return check_report("test_graph");
}
