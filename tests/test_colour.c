/* test_colour.c - default colours, rules, the precision plan, casts, keep-io,
 * why, diff, undo history and the plan -> executor assignment.
 *
 * Graphs are built in one line per node (the builder API, as test_shape.c);
 * tiny_cnn is examples/tiny_cnn.json bound to 1x3x64x64. */
#include "check.h"
#include "graph_build.h"
#include "mpx_colour.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static mpx_error err;
static const mpx_format *F16 = &mpx_format_fp16, *F32 = &mpx_format_fp32, *BF16 = &mpx_format_bf16;

/* ---- building graphs (tests/graph_build.h) ------------------------------------ */

/* Mark model outputs, finalize, infer. */
static mpx_graph *finish(mpx_graph *g, const char *outputs) {
    mpx_status st = gb_build(g, outputs, &err);
    CHECK_MSG(st == MPX_OK, "building the graph: %s", err.msg);
    return g;
}

static mpx_graph *new_graph(void) {
    mpx_graph *g = mpx_graph_new("t.onnx");
    g->opset = 17;
    return g;
}

static mpx_graph *load_tiny_cnn(bool bind) {
    static const int64_t d[4] = {1, 3, 64, 64};
    mpx_graph *g = gb_load_example("tiny_cnn.json", bind ? 4 : 0, d, &err);
    CHECK_MSG(g != NULL, "%s", err.msg);
    return g;
}

/* ---- planning helpers ----------------------------------------------------------- */

/* A plan of g under the rules given one per line ("" for none). */
static mpx_plan *plan_with(const mpx_graph *g, const char *rules_text, const mpx_plan_opts *o) {
    mpx_rules *r = mpx_rules_new();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", rules_text);
    char *save;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        mpx_error_clear(&err);
        CHECK_MSG(mpx_rules_add(r, line, g, &err) == MPX_OK, "rule \"%s\": %s", line, err.msg);
    }
    mpx_plan *p = NULL;
    mpx_error_clear(&err);
    CHECK_MSG(mpx_plan_build(g, r, o, NULL, &p, &err) == MPX_OK, "plan: %s", err.msg);
    mpx_rules_free(r);
    return p;
}

static const mpx_plan_node *PN(const mpx_plan *p, const char *node) {
    const mpx_node *n = mpx_graph_find_node(p->g, node);
    CHECK_MSG(n != NULL, "no node %s", node);
    return n ? &p->nodes[n->index] : &p->nodes[0];
}

static int TI(const mpx_plan *p, const char *tensor) {
    const mpx_tensor *t = mpx_graph_find_tensor(p->g, tensor);
    CHECK_MSG(t != NULL, "no tensor %s", tensor);
    return t ? t->index : 0;
}

static const mpx_format *TF(const mpx_plan *p, const char *tensor) {
    return p->tensors[TI(p, tensor)].format;
}

static const mpx_plan_cast *cast_of(const mpx_plan *p, const char *tensor, const mpx_format *f) {
    return mpx_plan_find_cast(p, TI(p, tensor), f);
}

static int NI(const mpx_graph *g, const char *node) {
    const mpx_node *n = mpx_graph_find_node(g, node);
    return n ? n->index : -1;
}

/* The cancelling-pair check, on every plan the tests build: no cast to the
 * format a tensor is already in, and no cast into a clear node that only
 * passes it on to a cast back to where it started. */
static void check_no_cancelling(const mpx_plan *p) {
    for (int i = 0; i < p->n_casts; i++) {
        const mpx_plan_cast *c = &p->casts[i];
        CHECK_MSG(c->from != c->to, "cast %d of %s is a no-op", i, p->g->tensors[c->tensor]->name);
        CHECK(c->n_consumers > 0);
        for (int k = 0; k < c->n_consumers; k++) {
            int ni = c->consumers[k];
            if (ni < 0) continue;
            const mpx_node *n = p->g->nodes[ni];
            if (p->nodes[ni].colour != MPX_COLOUR_CLEAR || n->n_outputs < 1 || !n->outputs[0]) continue;
            const mpx_plan_cast *back = mpx_plan_find_cast(p, n->outputs[0]->index, c->from);
            CHECK_MSG(!back, "cancelling casts around %s", n->name);
        }
    }
}

/* ---- defaults ----------------------------------------------------------------- */

static void test_defaults(void) {
    int empty = 0;
    for (int op = 0; op < MPX_OP_COUNT; op++) {
        const char *src = NULL;
        mpx_colour a = mpx_colour_default((mpx_op)op, F16, &src);
        mpx_colour b = mpx_colour_default((mpx_op)op, BF16, NULL);
        if (a == MPX_COLOUR_NONE || b == MPX_COLOUR_NONE || !src || !*src) {
            empty++;
            fprintf(stderr, "no default colour for %s\n", mpx_op_name((mpx_op)op));
        }
    }
    CHECK(empty == 0);
    const char *src;
    CHECK(mpx_colour_default(MPX_OP_Conv, F16, &src) == MPX_COLOUR_GREEN);
    CHECK_CONTAINS(src, "TF AMP allow");
    CHECK(mpx_colour_default(MPX_OP_MatMul, NULL, NULL) == MPX_COLOUR_GREEN);
    CHECK(mpx_colour_default(MPX_OP_Exp, F16, &src) == MPX_COLOUR_RED);
    CHECK_CONTAINS(src, "deny");
    CHECK(mpx_colour_default(MPX_OP_Exp, BF16, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default(MPX_OP_Add, F16, NULL) == MPX_COLOUR_GRAY);
    CHECK(mpx_colour_default(MPX_OP_Relu, F16, NULL) == MPX_COLOUR_CLEAR);
    CHECK(mpx_colour_default(MPX_OP_MaxPool, F16, NULL) == MPX_COLOUR_CLEAR);
    /* TF moves Mean/Sum to infer for bf16; tf32 has the same exponent. */
    CHECK(mpx_colour_default(MPX_OP_ReduceMean, F16, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default(MPX_OP_ReduceMean, BF16, NULL) == MPX_COLOUR_GRAY);
    CHECK(mpx_colour_default(MPX_OP_ReduceSum, &mpx_format_tf32, NULL) == MPX_COLOUR_GRAY);
    CHECK(mpx_colour_default(MPX_OP_ReduceSum, &mpx_format_fp8e5m2, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default(MPX_OP_Softmax, F16, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default(MPX_OP_GlobalAveragePool, F16, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default(MPX_OP_UNKNOWN, F16, NULL) == MPX_COLOUR_RED);
    CHECK(mpx_colour_default((mpx_op)9999, F16, NULL) == MPX_COLOUR_RED);

    mpx_graph *g = new_graph();
    node(g, "near", "Resize", "x:f:1x2x4x4 - s#f:4", "y", "mode=nearest");
    node(g, "lin", "Resize", "y - s", "z", "mode=linear");
    finish(g, "z");
    CHECK(mpx_colour_default_node(mpx_graph_find_node(g, "near"), F16, NULL) == MPX_COLOUR_CLEAR);
    CHECK(mpx_colour_default_node(mpx_graph_find_node(g, "lin"), F16, &src) == MPX_COLOUR_GRAY);
    CHECK_CONTAINS(src, "interpolates");
    mpx_graph_free(g);

    CHECK(strcmp(mpx_colour_name(MPX_COLOUR_GRAY), "gray") == 0);
    CHECK(mpx_colour_from_name("GREY") == MPX_COLOUR_GRAY);
    CHECK(mpx_colour_from_name("Red") == MPX_COLOUR_RED);
    CHECK(mpx_colour_from_name("blue") == MPX_COLOUR_NONE);
    CHECK(mpx_colour_from_name(NULL) == MPX_COLOUR_NONE);
}

/* ---- parsing -------------------------------------------------------------------- */

static void parse_ok_(int line, const char *text, const mpx_graph *g) {
    mpx_rules *r = mpx_rules_new();
    mpx_error_clear(&err);
    mpx_status st = mpx_rules_add(r, text, g, &err);
    CHECK_MSG(st == MPX_OK, "line %d: \"%s\": %s", line, text, err.msg);
    CHECK_MSG(mpx_rules_count(r) == (st == MPX_OK), "line %d", line);
    mpx_rules_free(r);
}
#define PARSE_OK(text) parse_ok_(__LINE__, text, NULL)

/* text must fail at column col with a message containing needle, and leave
 * the rule set as it was. */
static void parse_bad_(int line, const char *text, const mpx_graph *g, int col, const char *needle) {
    mpx_rules *r = mpx_rules_new();
    CHECK(mpx_rules_add(r, "colour * red", NULL, &err) == MPX_OK);
    mpx_error_clear(&err);
    mpx_status st = mpx_rules_add(r, text, g, &err);
    CHECK_MSG(st == MPX_E_PARSE, "line %d: \"%s\" parsed (status %d)", line, text, st);
    CHECK_MSG(err.column == col, "line %d: \"%s\": column %d, want %d (%s)", line, text, err.column,
              col, err.msg);
    char colstr[32];
    snprintf(colstr, sizeof colstr, "column %d", col);
    CHECK_MSG(strstr(err.msg, colstr) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.msg, colstr);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.msg, needle);
    CHECK_MSG(mpx_rules_count(r) == 1, "line %d: a failed rule changed the set", line);
    mpx_rules_free(r);
}
#define PARSE_BAD(text, col, needle) parse_bad_(__LINE__, text, NULL, col, needle)

static void test_parse(void) {
    PARSE_OK("colour Conv green");
    PARSE_OK("color conv GREEN");
    PARSE_OK("  colour Conv,Gemm , MatMul gray  ");
    PARSE_OK("colour * red");
    PARSE_OK("colour name:/backbone/* clear");
    PARSE_OK("colour name:\"a b,c\" red");
    PARSE_OK("colour Conv,name:/head/* red");
    PARSE_OK("colour Conv green when macs >= 1M else gray");
    PARSE_OK("colour Conv green when macs>=1e6 and (k > 64K or not group == 1) else grey");
    PARSE_OK("colour Conv green when 1G > macs");
    PARSE_OK("colour Conv red when attr.group != 1 or kernel <= 1 and in_ch < out_ch");
    PARSE_OK("colour Conv red when params > 1.5M or in_elems > 2T or out_elems = -1");
    PARSE_OK("colour Conv red when absmax > 60000");
    PARSE_OK("accum Conv,Gemm fp16");
    PARSE_OK("accum * bf16 when k > 4096 else fp32");
    PARSE_OK("colour Conv green WHEN macs > 1 ELSE red");

    PARSE_BAD("paint Conv green", 1, "expected \"colour\", \"accum\" or \"fuse\"");
    PARSE_BAD("fuse Conv when macs > 1 else red", 25, "a fuse rule has no else");
    PARSE_BAD("colour", 7, "expected a selector");
    PARSE_BAD("colour Conv", 12, "expected a colour");
    PARSE_BAD("colour Conv blue", 13, "expected a colour (green, gray, clear, red)");
    PARSE_BAD("colour Conv blue", 13, "found \"blue\"");
    PARSE_BAD("colour Conv Gemm green", 13, "separated by commas");
    PARSE_BAD("colour Conv2D green", 8, "unknown op type \"Conv2D\"");
    PARSE_BAD("colour Conv2D green", 8, "did you mean Conv?");
    PARSE_BAD("colour Conv,Gem green", 13, "did you mean Gemm?");
    PARSE_BAD("colour Conv,,Gemm green", 13, "expected a selector");
    PARSE_BAD("colour Co-nv green", 10, "unexpected '-'");
    PARSE_BAD("colour name: green", 13, "expected a node-name glob");
    PARSE_BAD("colour name:\"abc green", 13, "unterminated quote");
    PARSE_BAD("colour Conv green else gray", 19, "expected \"when\" or end of rule");
    PARSE_BAD("colour Conv green when", 23, "expected a condition");
    PARSE_BAD("colour Conv green when macs >= ", 32, "expected a number or a figure");
    PARSE_BAD("colour Conv green when macs 1M", 29, "expected a comparison");
    PARSE_BAD("colour Conv green when macs 1M", 29, "after \"macs\"");
    PARSE_BAD("colour Conv green when mac > 1", 24, "unknown figure \"mac\"");
    PARSE_BAD("colour Conv green when mac > 1", 24, "did you mean macs?");
    PARSE_BAD("colour Conv green when macs > 1Q", 32, "unexpected 'Q' after the number");
    PARSE_BAD("colour Conv green when macs > 1m", 32, "suffixes: K, M, G, T");
    PARSE_BAD("colour Conv green when macs > 1e", 32, "unexpected 'e'");
    PARSE_BAD("colour Conv green when macs > -", 31, "expected a number");
    PARSE_BAD("colour Conv green when (macs > 1 and k < 3", 43, "expected ')' to close the '(' at column 24");
    PARSE_BAD("colour Conv green when macs > 1 k < 3", 33, "expected \"and\", \"or\", \"else\"");
    PARSE_BAD("colour Conv green when macs > 1 else", 37, "expected a colour");
    PARSE_BAD("colour Conv green when macs > 1 else red now", 42, "expected end of rule");
    PARSE_BAD("colour Conv green when attr. > 1", 29, "expected an attribute name");
    PARSE_BAD("colour Conv green when and > 1", 24, "unknown figure \"and\"");
    PARSE_BAD("colour Conv fp16", 13, "accum rule");
    PARSE_BAD("accum Conv fp17", 12, "expected a format");
    PARSE_BAD("accum Conv green", 12, "expected a format (fp32, tf32, fp16");
    PARSE_BAD("accum Conv fp16 else fp32", 17, "expected \"when\"");
    PARSE_BAD("accum Conv fp32 bias-first", 17, "bias-first needs a rounded accumulate format");
    PARSE_BAD("accum Conv bf16 bias-first when k > 4 else fp32 bias-first", 49,
              "bias-first needs a rounded");
    PARSE_BAD("accum Conv bf16 bias-last", 17, "expected \"when\" or end of rule");
    /* sleef-lanes is torch's fp32 softmax: refused with a rounded format */
    PARSE_BAD("accum Softmax bf16 sleef-lanes", 20, "sleef-lanes needs fp32 accumulation");
    PARSE_BAD("accum Softmax fp32 sleef-lanes when k > 4 else fp16 sleef-lanes", 53, "sleef-lanes needs fp32");

    char deep[400] = "colour Conv green when ";
    for (int i = 0; i < 100; i++) strcat(deep, "(");
    strcat(deep, "macs > 1");
    for (int i = 0; i < 100; i++) strcat(deep, ")");
    mpx_rules *r = mpx_rules_new();
    CHECK(mpx_rules_add(r, deep, NULL, &err) == MPX_E_PARSE);
    CHECK_CONTAINS(err.msg, "nested too deeply");
    CHECK(mpx_rules_count(r) == 0);
    CHECK(mpx_rules_add(r, NULL, NULL, &err) == MPX_E_ARG);

    /* Text is kept as typed (trimmed); kinds and measured figures are known. */
    CHECK(mpx_rules_add(r, "  colour Conv green when macs >= 1M else gray \n", NULL, &err) == MPX_OK);
    CHECK(mpx_rules_add(r, "accum * fp16", NULL, &err) == MPX_OK);
    CHECK(mpx_rules_add(r, "colour Exp gray when absmax < 10", NULL, &err) == MPX_OK);
    CHECK(mpx_rules_count(r) == 3);
    CHECK(strcmp(mpx_rules_text(r, 0), "colour Conv green when macs >= 1M else gray") == 0);
    CHECK(mpx_rules_kind(r, 1) == MPX_RULE_ACCUM);
    CHECK(mpx_rules_kind(r, 0) == MPX_RULE_COLOUR);
    CHECK(!mpx_rules_uses_measured(r, 0) && mpx_rules_uses_measured(r, 2));
    CHECK(mpx_rules_text(r, 3) == NULL && mpx_rules_text(r, -1) == NULL);

    /* Copies share rules but not membership. */
    mpx_rules *c = mpx_rules_copy(r);
    CHECK(mpx_rules_remove(r, 0, &err) == MPX_OK);
    CHECK(mpx_rules_count(r) == 2 && mpx_rules_count(c) == 3);
    CHECK(strcmp(mpx_rules_text(r, 0), "accum * fp16") == 0);
    CHECK(strcmp(mpx_rules_text(c, 0), "colour Conv green when macs >= 1M else gray") == 0);
    CHECK(mpx_rules_remove(r, 5, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "no rule #6");
    mpx_rules_free(r);
    mpx_rules_free(c);
    mpx_rules_free(NULL);

    /* An op type outside the registry is accepted only when the model has it. */
    mpx_graph *g = new_graph();
    node(g, "custom", "MyOp", "x:f:4", "y", "");
    node(g, "r", "Relu", "y", "z", "");
    finish(g, "z");
    parse_ok_(__LINE__, "colour MyOp green", g);
    parse_bad_(__LINE__, "colour MyOp green", NULL, 8, "unknown op type \"MyOp\"");
    parse_bad_(__LINE__, "colour MyOq green", g, 8, "no node of the model has it; did you mean MyOp?");
    /* A valid op type the model lacks: accepted, and the plan says it applied to nothing. */
    mpx_plan *p = plan_with(g, "colour Softmax gray\ncolour MyOp green\ncolour MyOp red when macs > 1", NULL);
    if (p) {
        CHECK(p->n_rules == 3);
        CHECK(p->rule_selected[0] == 0 && p->rule_applied[0] == 0);
        CHECK(p->rule_selected[1] == 1 && p->rule_applied[1] == 1);
        CHECK(p->rule_selected[2] == 1 && p->rule_applied[2] == 0); /* macs unknown */
        CHECK(PN(p, "custom")->colour == MPX_COLOUR_GREEN);
    }
    mpx_plan_free(p);
    mpx_graph_free(g);
}

/* ---- rule semantics ---------------------------------------------------------- */

/* c1: 8x3x3x3 on 1x3x16x16 pad 1 -> 8x16x16, k = 27, macs = 55296
 * c2: 16x8x3x3 on 8x16x16        -> 16x16x16, k = 72, macs = 294912
 * c3: 16x16x1x1 group 1           -> k = 16, macs = 65536 = 64K? no: 65.536K */
static mpx_graph *three_convs(void) {
    mpx_graph *g = new_graph();
    node(g, "/a/c1", "Conv", "x:f:1x3x16x16 w1#f:8x3x3x3", "t1", "pads=[1,1,1,1]");
    node(g, "/a/c2", "Conv", "t1 w2#f:16x8x3x3", "t2", "pads=[1,1,1,1]");
    node(g, "/b/c3", "Conv", "t2 w3#f:16x16x1x1", "t3", "group=1");
    return finish(g, "t3");
}

/* A rule made from a node, not from text: it selects that node alone even
 * when its name holds glob characters, its text reads back to the same
 * rule, and a comment of two lines is refused with r unchanged. */
static void test_rule_of_node(void) {
    mpx_graph *g = three_convs();
    static char starred[] = "/a/c*"; /* unescaped, a glob that would match /a/c2 too */
    mpx_node *c1 = (mpx_node *)mpx_graph_find_node(g, "/a/c1");
    c1->name = starred;
    mpx_rules *r = mpx_rules_new();
    mpx_error_clear(&err);
    CHECK_MSG(mpx_rules_add_node(r, c1, MPX_COLOUR_RED, "why: a test", &err) == MPX_OK, "%s", err.msg);
    CHECK(mpx_rules_count(r) == 1 && mpx_rules_kind(r, 0) == MPX_RULE_COLOUR);
    CHECK_MSG(strcmp(mpx_rules_text(r, 0), "colour name:/a/c\\* red  # why: a test") == 0, "text %s",
              mpx_rules_text(r, 0));
    CHECK(mpx_rules_add_node(r, c1, MPX_COLOUR_RED, "two\nlines", &err) == MPX_E_ARG && mpx_rules_count(r) == 1);
    mpx_plan *p = NULL;
    CHECK(mpx_plan_build(g, r, NULL, NULL, &p, &err) == MPX_OK);
    CHECK(p && p->nodes[c1->index].colour == MPX_COLOUR_RED && PN(p, "/a/c2")->colour != MPX_COLOUR_RED);
    CHECK(p && p->rule_applied[0] == 1);
    mpx_plan_free(p);
    /* read back as text: the same selection */
    mpx_plan *q = plan_with(g, mpx_rules_text(r, 0), NULL);
    CHECK(q->nodes[c1->index].colour == MPX_COLOUR_RED && PN(q, "/a/c2")->colour != MPX_COLOUR_RED);
    mpx_plan_free(q);
    /* A glob without wildcards is compared as the name it spells, its
     * escapes taken out (\2 is 2), as fnmatch reads it; a trailing
     * backslash matches nothing. */
    q = plan_with(g, "colour name:/a/c\\2 red\ncolour name:/b/c3\\ red", NULL);
    CHECK(PN(q, "/a/c2")->colour == MPX_COLOUR_RED && q->rule_applied[0] == 1);
    CHECK(PN(q, "/b/c3")->colour != MPX_COLOUR_RED && q->rule_applied[1] == 0);
    mpx_plan_free(q);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

static void test_rule_semantics(void) {
    mpx_graph *g = three_convs();
    CHECK(mpx_graph_find_node(g, "/a/c1")->cost.macs == 55296);
    CHECK(mpx_graph_find_node(g, "/a/c2")->cost.macs == 294912);
    CHECK(mpx_graph_find_node(g, "/b/c3")->cost.macs == 65536);

    /* The last matching rule wins; rules that do not select a node leave it. */
    mpx_plan *p = plan_with(g, "colour Conv red\ncolour name:/a/* gray\ncolour name:/a/c2 clear", NULL);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_GRAY && PN(p, "/a/c1")->colour_rule == 1);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_CLEAR && PN(p, "/a/c2")->colour_rule == 2);
    CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_RED && PN(p, "/b/c3")->colour_rule == 0);
    CHECK(p->rule_applied[0] == 3 && p->rule_applied[1] == 2 && p->rule_applied[2] == 1);
    CHECK(mpx_plan_node_changed(p, NI(g, "/a/c1")));
    mpx_plan_free(p);

    /* when without else recolours only the matches; else covers the rest. */
    p = plan_with(g, "colour Conv red when macs > 60K", NULL);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_GREEN && PN(p, "/a/c1")->colour_rule == -1);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_RED);
    CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_RED);
    CHECK(!mpx_plan_node_changed(p, NI(g, "/a/c1")));
    mpx_plan_free(p);
    p = plan_with(g, "colour Conv red when macs > 100K else gray", NULL);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_GRAY && PN(p, "/a/c1")->colour_rule == 0);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_RED);
    CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_GRAY);
    mpx_plan_free(p);

    /* Numbers and figures: 64K is 64000 (decimal, like 1M), k and kernel. */
    p = plan_with(g,
                  "colour Conv clear when macs == 65536 and macs != 64K\n"
                  "colour Conv red when k = 27 and kernel == 9 and in_ch == 3 and out_ch == 8\n"
                  "colour Conv gray when params == 1152 and group == 1 and out_elems == 4096",
                  NULL);
    CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_CLEAR);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_RED);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_GRAY);
    mpx_plan_free(p);
    p = plan_with(g, "colour Conv red when macs >= 2.9e5 and macs < 0.3M\ncolour Conv clear when 1G < macs", NULL);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_RED);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_GREEN);
    mpx_plan_free(p);

    /* and/or/not with parentheses, attr.<name>. */
    p = plan_with(g,
                  "colour Conv red when not (macs < 60K or attr.group != 1)\n"
                  "colour name:/b/* clear when attr.pads == 1 or attr.group == 1",
                  NULL);
    CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_GREEN);
    CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_GREEN); /* attr.group absent: unknown */
    CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_CLEAR); /* unknown or true = true */
    mpx_plan_free(p);

    /* accum rules: last wins; default fp32 for low nodes, fp32 for fp32 nodes. */
    p = plan_with(g, "accum Conv fp16\naccum name:/b/* bf16 when k < 20\ncolour name:/a/c2 red", NULL);
    CHECK(PN(p, "/a/c1")->accum == F16 && PN(p, "/a/c1")->accum_rule == 0);
    CHECK(PN(p, "/b/c3")->accum == BF16 && PN(p, "/b/c3")->accum_rule == 1);
    CHECK(PN(p, "/a/c2")->accum == F16); /* explicit: the user asked, even on a red node */
    CHECK(PN(p, "/a/c1")->accum_flags == 0);
    mpx_plan_free(p);
    /* accum options: the branch taken gives its own; a later rule replaces them. */
    p = plan_with(g, "accum Conv bf16 bias-first round-sum when k > 20 else fp16 bias-first", NULL);
    CHECK(PN(p, "/a/c1")->accum == BF16 &&
          PN(p, "/a/c1")->accum_flags == (MPX_ACC_BIAS_FIRST | MPX_ACC_ROUND_SUM));
    CHECK(PN(p, "/b/c3")->accum == F16 && PN(p, "/b/c3")->accum_flags == MPX_ACC_BIAS_FIRST);
    mpx_plan_free(p);
    p = plan_with(g, "accum Conv bf16 bias-first\naccum name:/b/* fp32 round-sum", NULL);
    CHECK(PN(p, "/a/c1")->accum_flags == MPX_ACC_BIAS_FIRST);
    CHECK(PN(p, "/b/c3")->accum == F32 && PN(p, "/b/c3")->accum_flags == MPX_ACC_ROUND_SUM);
    mpx_plan_free(p);
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.accum = BF16;
    p = plan_with(g, "colour name:/a/c2 red", &o);
    CHECK(PN(p, "/a/c1")->accum == BF16 && PN(p, "/a/c1")->accum_rule == -1);
    CHECK(PN(p, "/a/c2")->accum == F32);
    mpx_plan_free(p);
    mpx_graph_free(g);

    /* Unknown figures (shapes not bound): a when that is unknown changes nothing. */
    g = load_tiny_cnn(false);
    if (g) {
        p = plan_with(g, "colour Conv gray when macs < 1M\ncolour Conv red when not macs >= 1", NULL);
        const mpx_plan_node *c = PN(p, "/backbone/stem/conv/Conv");
        CHECK(c->colour == MPX_COLOUR_GREEN && c->colour_rule == -1);
        CHECK(p->rule_selected[0] == 7 && p->rule_applied[0] == 0);
        CHECK(p->counts.macs_unknown > 0);
        char why[4096];
        mpx_plan_why(p, NI(g, "/backbone/stem/conv/Conv"), why, sizeof why);
        CHECK_CONTAINS(why, "when is unknown (macs unknown (shapes not bound)): rule skipped");
        mpx_plan_free(p);
        mpx_graph_free(g);
    }
}

/* ---- tiny_cnn: the canonical threshold rule --------------------------------------- */

/* MACs of a Conv from its tensors' shapes, independent of graph/cost.c. */
static int64_t conv_macs(const mpx_node *n) {
    const mpx_tensor *w = n->inputs[1], *y = n->outputs[0];
    int64_t k = 1;
    for (int i = 1; i < w->rank; i++) k *= w->dims[i];
    return y->nelem * k;
}

static void test_tiny_cnn(void) {
    mpx_graph *g = load_tiny_cnn(true);
    if (!g) return;
    int want_green = 0, convs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->op != MPX_OP_Conv) continue;
        convs++;
        want_green += conv_macs(g->nodes[i]) >= 1000000;
    }
    CHECK(convs == 7);
    CHECK(want_green == 1);

    const char *forms[2] = {"colour Conv green when macs >= 1M else gray",
                            "colour Conv gray\ncolour Conv green when macs >= 1M"};
    mpx_plan *plans[2];
    for (int f = 0; f < 2; f++) {
        mpx_plan *p = plans[f] = plan_with(g, forms[f], NULL);
        if (!p) return;
        int green = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            const mpx_node *n = g->nodes[i];
            if (n->op != MPX_OP_Conv) continue;
            bool big = conv_macs(n) >= 1000000;
            CHECK_MSG(p->nodes[i].colour == (big ? MPX_COLOUR_GREEN : MPX_COLOUR_GRAY), "form %d: %s", f,
                      n->name);
            green += p->nodes[i].colour == MPX_COLOUR_GREEN;
        }
        CHECK(green == want_green);
        check_no_cancelling(p);
    }
    const mpx_plan_node *big = PN(plans[0], "/backbone/stage1/conv1/Conv");
    CHECK(big->colour == MPX_COLOUR_GREEN && big->low && big->compute == F16 && big->accum == F32);
    /* The stem conv is gray and reads the model input, kept fp32: it runs fp32. */
    const mpx_plan_node *stem = PN(plans[0], "/backbone/stem/conv/Conv");
    CHECK(stem->colour == MPX_COLOUR_GRAY && stem->compute == F32 && stem->cause == TI(plans[0], "x"));
    /* The two forms give the same formats, so an empty diff of nodes and casts. */
    mpx_plan_diff *d = NULL;
    CHECK(mpx_plan_diff_new(plans[0], plans[1], &d, &err) == MPX_OK);
    if (d) CHECK(d->n_nodes == 0 && d->n_added == 0 && d->n_removed == 0);
    mpx_plan_diff_free(d);

    /* why of the gray stage2 conv: the default, the rule and its figures. */
    char why[8192];
    size_t need = mpx_plan_why(plans[0], NI(g, "/backbone/stage2/conv/Conv"), why, sizeof why);
    CHECK(need > 0 && need < sizeof why);
    CHECK_CONTAINS(why, "node \"/backbone/stage2/conv/Conv\" (Conv), target fp16");
    CHECK_CONTAINS(why, "default: green (TF AMP allow list (Conv2D))");
    CHECK_CONTAINS(why, "rule #1 `colour Conv green when macs >= 1M else gray`: when fails (macs = 884736) -> else gray");
    CHECK_CONTAINS(why, "colour: gray (rule #1)");
    /* Its input comes from a gray Add that runs fp32 because of the fp32 chain from x. */
    CHECK_CONTAINS(why, "gray: input \"s1.out\" arrives in fp32, so it computes in fp32");
    CHECK_CONTAINS(why, "comes from \"/backbone/stage1/Add\" (Add, gray by default)");
    /* ... followed upstream to the red global average pool that started it. */
    CHECK_CONTAINS(why, "\"s1.se.pool\" comes from \"/backbone/stage1/se/GlobalAveragePool\" "
                        "(GlobalAveragePool, red by default), which computes in fp32\n");
    CHECK_CONTAINS(why, "input \"backbone.stage2.conv.weight\": a constant, used in fp32");
    /* The green conv's why: the rule held. */
    mpx_plan_why(plans[0], NI(g, "/backbone/stage1/conv1/Conv"), why, sizeof why);
    CHECK_CONTAINS(why, "when holds (macs = 4718592) -> green");
    CHECK_CONTAINS(why, "green: computes in fp16, the target");
    CHECK_CONTAINS(why, "accumulate: fp32 (default for nodes that run low)");
    CHECK_CONTAINS(why, "input \"stem.out\" arrives in fp32: cast to fp16 (one cast, 1 consumer)");
    CHECK_CONTAINS(why, "converted offline from fp32 to fp16");
    /* Truncation keeps snprintf semantics. */
    char small[16];
    size_t full = mpx_plan_why(plans[0], 0, small, sizeof small);
    CHECK(full > sizeof small && strlen(small) == sizeof small - 1);
    CHECK(mpx_plan_why(plans[0], 0, NULL, 0) == full);
    mpx_plan_why(plans[0], 999, why, sizeof why);
    CHECK_CONTAINS(why, "no node #999");

    char sum[512];
    mpx_plan_summary(plans[0], sum, sizeof sum);
    CHECK_CONTAINS(sum, "green 2, gray 14, clear 6, red 3");
    CHECK_CONTAINS(sum, "of MACs in fp16");
    mpx_plan_free(plans[0]);
    mpx_plan_free(plans[1]);

    /* With defaults (every Conv green) most MACs run low; red Softmax and GAPs. */
    mpx_plan *p = plan_with(g, "", NULL);
    CHECK(p->counts.nodes[MPX_COLOUR_GREEN] == 8); /* 7 Conv + Gemm */
    CHECK(p->counts.nodes[MPX_COLOUR_RED] == 3);   /* 2 GlobalAveragePool + Softmax */
    int total = 0;
    for (int c = 0; c < MPX_COLOUR_COUNT; c++) total += p->counts.nodes[c];
    CHECK(total == g->n_nodes);
    CHECK(p->counts.macs_unknown == 0 && p->counts.macs_total == mpx_graph_macs(g));
    CHECK(p->counts.low_macs_pct > 90.0 && p->counts.low_macs_pct <= 100.0);
    CHECK(PN(p, "/head/Softmax")->compute == F32);
    check_no_cancelling(p);
    mpx_plan_free(p);
    /* bf16 takes the wide-exponent defaults: the pools and Softmax turn gray. */
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.target = BF16;
    p = plan_with(g, "", &o);
    CHECK(p->counts.nodes[MPX_COLOUR_RED] == 0 && p->counts.nodes[MPX_COLOUR_GREEN] == 8);
    CHECK(PN(p, "/head/pool/GlobalAveragePool")->colour == MPX_COLOUR_GRAY);
    CHECK(PN(p, "/head/Softmax")->compute == BF16);
    check_no_cancelling(p);
    mpx_plan_free(p);
    mpx_graph_free(g);
}

/* ---- propagation ------------------------------------------------------------------ */

/* TVM's RFC example: conv2d -> multiply -> bias_add -> relu -> max_pool. */
static mpx_graph *rfc_graph(void) {
    mpx_graph *g = new_graph();
    node(g, "conv", "Conv", "x:f:1x3x8x8 w#f:4x3x3x3", "c", "pads=[1,1,1,1]");
    node(g, "mul", "Mul", "c s#f:1x4x1x1", "m", "");
    node(g, "bias", "Add", "m b#f:1x4x1x1", "a", "");
    node(g, "relu", "Relu", "a", "r", "");
    node(g, "pool", "MaxPool", "r", "y", "kernel_shape=[2,2] strides=[2,2]");
    return finish(g, "y");
}

static void test_rfc_and_keep_io(void) {
    mpx_graph *g = rfc_graph();
    mpx_plan *p = plan_with(g, "", NULL);
    const char *chain[] = {"conv", "mul", "bias", "relu", "pool"};
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(PN(p, chain[i])->compute == F16 && PN(p, chain[i])->low, "%s", chain[i]);
        CHECK(PN(p, chain[i])->output == F16);
    }
    CHECK(PN(p, "conv")->accum == F32);
    CHECK(TF(p, "c") == F16 && TF(p, "r") == F16 && TF(p, "y") == F16);
    CHECK(TF(p, "x") == F32); /* keep-io: the input keeps its type */
    /* keep-io on: one cast after the input, one before the output, none inside. */
    CHECK(p->n_casts == 2 && p->counts.casts == 2);
    const mpx_plan_cast *cx = cast_of(p, "x", F16), *cy = cast_of(p, "y", F32);
    CHECK(cx && cx->from == F32 && cx->n_consumers == 1 && cx->consumers[0] == NI(g, "conv"));
    CHECK(cy && cy->from == F16 && cy->n_consumers == 1 && cy->consumers[0] == -1);
    CHECK(!cast_of(p, "r", F16) && !cast_of(p, "r", F32)); /* no cast before max_pool */
    /* Weights, scale and bias converted offline: 108 + 4 + 4 values. */
    CHECK(p->counts.weights_converted == 3);
    CHECK(p->counts.weight_bytes_before == 116 * 4 && p->counts.weight_bytes_after == 116 * 2);
    CHECK(TF(p, "w") == F16 && p->tensors[TI(p, "w")].constant);
    CHECK(p->counts.low_macs_pct == 100.0);
    char why[4096];
    mpx_plan_why(p, NI(g, "pool"), why, sizeof why);
    CHECK_CONTAINS(why, "output \"y\" is a model output: cast from fp16 to fp32 before it (keep-io on)");
    CHECK_CONTAINS(why, "clear: follows its inputs, which arrive in fp16");
    mpx_plan_why(p, NI(g, "mul"), why, sizeof why);
    CHECK_CONTAINS(why, "gray: every float input arrives low: computes in fp16");
    check_no_cancelling(p);

    /* keep-io off: the model's I/O is in fp16, no casts at all. */
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.keep_io = false;
    mpx_plan *q = plan_with(g, "", &o);
    CHECK(q->n_casts == 0);
    CHECK(TF(q, "x") == F16 && TF(q, "y") == F16);
    mpx_plan_why(q, NI(g, "conv"), why, sizeof why);
    CHECK_CONTAINS(why, "input \"x\" arrives in fp16: no cast");

    /* diff on -> off: both casts removed, no node changed. */
    mpx_plan_diff *d = NULL;
    CHECK(mpx_plan_diff_new(p, q, &d, &err) == MPX_OK);
    if (d) {
        CHECK(d->n_nodes == 0 && d->n_added == 0 && d->n_removed == 2);
        CHECK(d->a.casts == 2 && d->b.casts == 0);
    }
    mpx_plan_diff_free(d);
    mpx_plan_free(q);

    /* bf16 target: every format follows. */
    o.keep_io = true;
    o.target = BF16;
    q = plan_with(g, "", &o);
    CHECK(PN(q, "relu")->compute == BF16 && cast_of(q, "x", BF16) && cast_of(q, "y", F32));
    mpx_plan_free(q);
    mpx_plan_free(p);
    mpx_graph_free(g);

    /* An input that feeds both a red and a green node, an output also read by a red node. */
    g = new_graph();
    node(g, "e", "Exp", "x:f:4x4", "ex", "");
    node(g, "mm", "MatMul", "x wm#f:4x4", "y", "");
    node(g, "mm2", "MatMul", "ex wm", "y2", "");
    node(g, "mm3", "MatMul", "ex wm", "y3", "");
    node(g, "red", "Softmax", "y", "z", "");
    finish(g, "y z y2 y3");
    p = plan_with(g, "", NULL);
    CHECK(TF(p, "x") == F32 && cast_of(p, "x", F16) && !cast_of(p, "x", F32));
    CHECK(cast_of(p, "x", F16)->n_consumers == 1);
    const mpx_plan_cast *c = cast_of(p, "y", F32);
    CHECK(c && c->n_consumers == 2 && c->consumers[0] == -1 && c->consumers[1] == NI(g, "red"));
    /* One tensor feeding two green consumers: one cast, shared. */
    c = cast_of(p, "ex", F16);
    CHECK(c && c->n_consumers == 2 && c->consumers[0] == NI(g, "mm2") && c->consumers[1] == NI(g, "mm3"));
    CHECK(!cast_of(p, "z", F32) && !cast_of(p, "z", F16)); /* red output is already fp32 */
    CHECK(p->n_casts == 5); /* x->16, ex->16 (shared), y->32 (shared), y2->32, y3->32 */
    /* The shared weight is converted once. */
    CHECK(p->counts.weights_converted == 1 && p->counts.weight_bytes_after == 32);
    check_no_cancelling(p);
    o.target = F16;
    o.keep_io = false;
    q = plan_with(g, "", &o);
    CHECK(TF(q, "x") == F16);
    CHECK(cast_of(q, "x", F32) && !cast_of(q, "x", F16)); /* Exp needs x back in fp32 */
    CHECK(cast_of(q, "y", F32) && cast_of(q, "y", F32)->n_consumers == 1); /* only Softmax now */
    CHECK(!cast_of(q, "y2", F32) && !cast_of(q, "y3", F32));
    CHECK(q->n_casts == 3); /* x->32 for Exp, ex->16 (shared), y->32 for Softmax */
    check_no_cancelling(q);
    mpx_plan_free(q);
    mpx_plan_free(p);
    mpx_graph_free(g);
}

static void test_gray_clear_red(void) {
    /* Gray propagation through a chain: an fp32 value from a red node keeps
     * every gray node after it in fp32, until a green node casts. */
    mpx_graph *g = new_graph();
    node(g, "exp", "Exp", "x:f:1x4x4x4", "e", "");
    node(g, "add", "Add", "e k#f:1", "a", "");
    node(g, "sig", "Sigmoid", "a", "s", "");
    node(g, "conv", "Conv", "s w#f:4x4x1x1", "c", "");
    node(g, "tanh", "Tanh", "c", "t", "");
    node(g, "mul", "Mul", "t s", "m", "");       /* gray: one input low, one fp32 */
    node(g, "cat", "Concat", "t s", "cc", "axis=1"); /* clear: mixed -> fp32 */
    node(g, "relu", "Relu", "t", "r", "");       /* clear: follows fp16 */
    node(g, "both", "Concat", "t r", "b", "axis=1"); /* clear: both fp16 */
    finish(g, "m cc b");
    mpx_plan *p = plan_with(g, "", NULL);
    CHECK(PN(p, "exp")->compute == F32 && !PN(p, "exp")->low);
    CHECK(PN(p, "add")->compute == F32 && PN(p, "add")->cause == TI(p, "e"));
    CHECK(PN(p, "sig")->compute == F32 && PN(p, "sig")->cause == TI(p, "a"));
    CHECK(PN(p, "conv")->compute == F16 && cast_of(p, "s", F16));
    CHECK(PN(p, "tanh")->compute == F16 && PN(p, "tanh")->cause == -1);
    CHECK(PN(p, "mul")->compute == F32 && PN(p, "mul")->cause == TI(p, "s"));
    CHECK(PN(p, "cat")->compute == F32 && PN(p, "cat")->cause == TI(p, "s"));
    CHECK(PN(p, "relu")->compute == F16 && PN(p, "relu")->cause == TI(p, "t"));
    CHECK(PN(p, "both")->compute == F16);
    /* t is cast once to fp32, shared by mul and cat. */
    const mpx_plan_cast *ct = cast_of(p, "t", F32);
    CHECK(ct && ct->n_consumers == 2 && ct->consumers[0] == NI(g, "mul") &&
          ct->consumers[1] == NI(g, "cat"));
    CHECK(!cast_of(p, "r", F32) && !cast_of(p, "t", F16));
    CHECK(TF(p, "cc") == F32 && TF(p, "b") == F16 && cast_of(p, "b", F32));
    CHECK(TF(p, "k") == F32 && p->counts.weights_converted == 1); /* k stays fp32 for the fp32 Add */
    char why[4096];
    mpx_plan_why(p, NI(g, "sig"), why, sizeof why);
    CHECK_CONTAINS(why, "gray: input \"a\" arrives in fp32, so it computes in fp32");
    CHECK_CONTAINS(why, "\"a\" comes from \"add\" (Add, gray by default), which computes in fp32 because \"e\" arrives in fp32");
    CHECK_CONTAINS(why, "\"e\" comes from \"exp\" (Exp, red by default), which computes in fp32\n");
    mpx_plan_why(p, NI(g, "cat"), why, sizeof why);
    CHECK_CONTAINS(why, "clear: its inputs arrive in different formats: computes in the widest, fp32 (from \"s\")");
    CHECK_CONTAINS(why, "input \"t\" arrives in fp16: cast to fp32 (one cast, 2 consumers)");
    check_no_cancelling(p);

    /* Recolour Exp green: the whole chain goes low; diff names the changes. */
    mpx_plan *q = plan_with(g, "colour Exp green", NULL);
    CHECK(PN(q, "add")->compute == F16 && PN(q, "sig")->compute == F16 && PN(q, "mul")->compute == F16);
    CHECK(PN(q, "cat")->compute == F16 && !cast_of(q, "t", F32));
    mpx_plan_diff *d = NULL;
    CHECK(mpx_plan_diff_new(p, q, &d, &err) == MPX_OK);
    if (d) {
        bool exp_seen = false, add_seen = false, relu_seen = false;
        for (int i = 0; i < d->n_nodes; i++) {
            const mpx_plan_diff_node *dn = &d->nodes[i];
            if (dn->node == NI(g, "exp"))
                exp_seen = dn->colour_a == MPX_COLOUR_RED && dn->colour_b == MPX_COLOUR_GREEN;
            if (dn->node == NI(g, "add"))
                add_seen = dn->colour_a == dn->colour_b && dn->compute_a == F32 && dn->compute_b == F16;
            if (dn->node == NI(g, "relu")) relu_seen = true;
        }
        CHECK(exp_seen && add_seen && !relu_seen);
        CHECK(d->n_nodes == 5); /* exp add sig mul cat */
        bool x_added = false, s_removed = false, t_removed = false;
        for (int i = 0; i < d->n_added; i++)
            x_added |= d->added[i].tensor == TI(p, "x") && d->added[i].to == F16;
        for (int i = 0; i < d->n_removed; i++) {
            s_removed |= d->removed[i].tensor == TI(p, "s") && d->removed[i].to == F16;
            t_removed |= d->removed[i].tensor == TI(p, "t") && d->removed[i].to == F32;
        }
        CHECK(x_added && s_removed && t_removed);
        /* m and cc are model outputs that now come out in fp16: keep-io casts them back. */
        bool m_added = false, cc_added = false;
        for (int i = 0; i < d->n_added; i++) {
            m_added |= d->added[i].tensor == TI(p, "m") && d->added[i].from == F16 && d->added[i].to == F32;
            cc_added |= d->added[i].tensor == TI(p, "cc") && d->added[i].to == F32;
        }
        CHECK(m_added && cc_added);
        CHECK(d->n_added == 3 && d->n_removed == 2);
        CHECK(d->a.casts == 3 && d->b.casts == 4);
    }
    mpx_plan_diff_free(d);
    mpx_plan_free(q);
    mpx_plan_free(p);
    mpx_graph_free(g);

    /* No cancelling pairs: green -> clear -> red -> clear -> green casts only
     * where the format really changes (2 casts, not 4). */
    g = new_graph();
    node(g, "g1", "MatMul", "x:f:4x4 w#f:4x4", "a", "");
    node(g, "id1", "Identity", "a", "b", "");
    node(g, "red", "Exp", "b", "c", "");
    node(g, "id2", "Identity", "c", "d", "");
    node(g, "g2", "MatMul", "d w", "y", "");
    finish(g, "y");
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.keep_io = false;
    p = plan_with(g, "", &o);
    CHECK(p->n_casts == 2);
    CHECK(cast_of(p, "b", F32) && cast_of(p, "d", F16));
    CHECK(PN(p, "id1")->compute == F16 && PN(p, "id2")->compute == F32);
    check_no_cancelling(p);
    mpx_plan_free(p);
    mpx_graph_free(g);

    /* Gray and clear nodes fed only by constants run low; a node without
     * float input is a source (fp32 unless green). */
    g = new_graph();
    node(g, "cadd", "Sigmoid", "k1#f:4", "s", "");
    node(g, "cclip", "Clip", "k1", "s2", "");
    node(g, "folded", "Add", "k1 k1", "s3", "");
    node(g, "use", "Sum", "x:f:4 s s2 s3", "y", "");
    node(g, "cast", "Cast", "i:i:4", "fi", "to=1");
    node(g, "mix", "Mul", "fi y", "z", "");
    finish(g, "z");
    /* Inference folds the Add of constants, not the Sigmoid nor the Clip. */
    p = plan_with(g, "", NULL);
    CHECK(PN(p, "cadd")->is_float && PN(p, "cadd")->compute == F16);
    CHECK(PN(p, "cclip")->is_float && PN(p, "cclip")->compute == F16);
    CHECK(PN(p, "folded")->folded && !PN(p, "folded")->is_float && PN(p, "folded")->compute == NULL);
    CHECK(p->tensors[TI(p, "s3")].constant);
    CHECK(PN(p, "cast")->is_float && PN(p, "cast")->compute == F32);
    CHECK(PN(p, "use")->compute == F32); /* x is kept fp32 */
    CHECK(TF(p, "i") == NULL);           /* int tensors never get a format */
    mpx_plan_why(p, NI(g, "cadd"), why, sizeof why);
    CHECK_CONTAINS(why, "its float inputs are constants, which count as low: computes in fp16");
    mpx_plan_why(p, NI(g, "cast"), why, sizeof why);
    CHECK_CONTAINS(why, "no float input, so a source of float values: computes in fp32");
    mpx_plan_why(p, NI(g, "folded"), why, sizeof why);
    CHECK_CONTAINS(why, "computed at load from constants (folded): precision does not apply");
    mpx_plan_free(p);
    mpx_graph_free(g);

    /* Red with an accum rule, and the model's own Cast to fp16. */
    g = new_graph();
    node(g, "gemm", "Gemm", "x:f:2x8 w#f:8x4", "g", "");
    node(g, "sm", "Softmax", "g", "s", "axis=1");
    node(g, "tohalf", "Cast", "s", "h", "to=10");
    node(g, "r", "Relu", "h", "y", "");
    /* CastLike takes its type from h: fp16 out; h's values are not read,
     * so no cast of h is made for it. */
    node(g, "like", "CastLike", "g h", "l", "");
    node(g, "r2", "Relu", "l", "y2", "");
    finish(g, "y y2");
    p = plan_with(g, "accum Softmax bf16", NULL);
    CHECK(PN(p, "like")->compute == F16 && PN(p, "like")->output == F16 && TF(p, "l") == F16);
    CHECK(PN(p, "sm")->colour == MPX_COLOUR_RED && PN(p, "sm")->compute == F32);
    CHECK(PN(p, "sm")->accum == BF16);
    CHECK(cast_of(p, "g", F32) != NULL);
    CHECK(PN(p, "tohalf")->compute == F32 && PN(p, "tohalf")->output == F16);
    CHECK(TF(p, "h") == F16 && PN(p, "r")->compute == F16);
    CHECK(TF(p, "y") == F16 && p->n_casts == 2); /* x->16, g->32; y's declared type is fp16 */
    mpx_plan_free(p);
    mpx_graph_free(g);
}

/* ---- non-float edges, Shape, folded nodes --------------------------------------- */

/* TopK (like Range and CumSum) computes in fp32 whatever its colour:
 * runtimes have no low-precision kernel, so a low plan would predict a
 * model nobody runs. The cast before it is the plan's, and why says so. */
static void test_fp32_only_ops(void) {
    char why[4096];
    mpx_graph *g = new_graph();
    node(g, "conv", "Conv", "x:f:1x2x4x4 w#f:2x2x1x1", "c", "");
    node(g, "flat", "Flatten", "c", "f", "axis=1");
    node(g, "topk", "TopK", "f k=i[3]", "vals idx", "axis=1");
    finish(g, "vals idx");
    mpx_plan *p = plan_with(g, "colour TopK green", NULL);
    CHECK(PN(p, "conv")->compute == F16 && PN(p, "flat")->compute == F16);
    CHECK(PN(p, "topk")->colour == MPX_COLOUR_GREEN && PN(p, "topk")->compute == F32 && !PN(p, "topk")->low);
    CHECK(cast_of(p, "f", F32) != NULL);
    mpx_plan_why(p, NI(g, "topk"), why, sizeof why);
    CHECK_CONTAINS(why, "TopK computes in fp32 whatever its colour");
    CHECK(mpx_plan_op_fp32_only(MPX_OP_Range) && mpx_plan_op_fp32_only(MPX_OP_CumSum) &&
          !mpx_plan_op_fp32_only(MPX_OP_Conv));
    mpx_plan_free(p);
    mpx_graph_free(g);
}

static void test_non_float(void) {
    mpx_graph *g = new_graph();
    node(g, "conv", "Conv", "x:f:1x2x4x4 w#f:2x2x1x1", "c", "");
    node(g, "shape", "Shape", "c", "sh", "");
    node(g, "g", "Gather", "sh idx=i[0,1]", "hw", "axis=0");
    node(g, "cat", "Concat", "hw m=i[-1]", "ns", "axis=0");
    node(g, "resh", "Reshape", "c ns", "r", "");
    node(g, "am", "ArgMax", "r", "am_out", "axis=1");
    node(g, "rs", "Resize", "c - sc#f:4", "up", "mode=nearest");
    finish(g, "r am_out up");
    mpx_plan *p = plan_with(g, "colour Shape,Gather,Concat red", NULL);
    CHECK(!PN(p, "shape")->is_float && PN(p, "shape")->compute == NULL);
    /* The shape chain is folded at load: no float work, no casts on it. */
    CHECK(!PN(p, "g")->is_float && !PN(p, "cat")->is_float);
    CHECK(TF(p, "sh") == NULL && TF(p, "ns") == NULL);
    CHECK(PN(p, "resh")->compute == F16);
    CHECK(PN(p, "am")->compute == F16 && PN(p, "am")->is_float);
    CHECK(!cast_of(p, "c", F32));
    /* Resize's scales are a parameter: neither a cast nor a weight conversion. */
    CHECK(PN(p, "rs")->compute == F16 && TF(p, "sc") == F32);
    for (int i = 0; i < p->n_weights; i++) CHECK(p->weights[i].tensor != TI(p, "sc"));
    CHECK(p->counts.weights_converted == 1);
    for (int i = 0; i < p->n_casts; i++) CHECK(p->g->tensors[p->casts[i].tensor]->dtype == MPX_DT_FLOAT);
    char why[2048];
    mpx_plan_why(p, NI(g, "shape"), why, sizeof why);
    CHECK_CONTAINS(why, "reads only its input's shape: precision does not apply");
    CHECK_CONTAINS(why, "colour: red (rule #1)");
    mpx_plan_why(p, NI(g, "cat"), why, sizeof why);
    CHECK_CONTAINS(why, "precision does not apply");
    mpx_plan_free(p);
    mpx_graph_free(g);
}

/* ---- measured figures ---------------------------------------------------------------- */

static void test_measured(void) {
    mpx_graph *g = three_convs();
    mpx_rules *r = mpx_rules_new();
    CHECK(mpx_rules_add(r, "colour Conv green", g, &err) == MPX_OK);
    CHECK(mpx_rules_add(r, "colour Conv red when absmax > 1000", g, &err) == MPX_OK);
    mpx_plan *p = NULL;
    mpx_error_clear(&err);
    CHECK(mpx_plan_build(g, r, NULL, NULL, &p, &err) == MPX_E_ARG && p == NULL);
    CHECK_CONTAINS(err.msg, "rule #2 (colour Conv red when absmax > 1000) uses absmax");
    CHECK_CONTAINS(err.msg, "`run` first");
    double absmax[3] = {5000.0, 10.0, NAN};
    mpx_plan_measured m = {3, absmax};
    CHECK(mpx_plan_build(g, r, NULL, &m, &p, &err) == MPX_OK);
    if (p) {
        CHECK(PN(p, "/a/c1")->colour == MPX_COLOUR_RED);
        CHECK(PN(p, "/a/c2")->colour == MPX_COLOUR_GREEN);
        CHECK(PN(p, "/b/c3")->colour == MPX_COLOUR_GREEN); /* not measured: unknown */
        char why[2048];
        absmax[0] = 0; /* the plan keeps its own copy */
        mpx_plan_why(p, NI(g, "/a/c1"), why, sizeof why);
        CHECK_CONTAINS(why, "when holds (absmax = 5000) -> red");
        mpx_plan_why(p, NI(g, "/b/c3"), why, sizeof why);
        CHECK_CONTAINS(why, "absmax not measured");
    }
    mpx_plan_free(p);
    p = NULL;
    mpx_plan_measured wrong = {2, absmax};
    CHECK(mpx_plan_build(g, r, NULL, &wrong, &p, &err) == MPX_E_ARG && !p);
    CHECK_CONTAINS(err.msg, "run the reference again");
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.accum_block = -1;
    CHECK(mpx_plan_build(g, r, &o, &m, &p, &err) == MPX_E_ARG && !p);
    CHECK(mpx_plan_build(NULL, r, NULL, NULL, &p, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "no model loaded");
    CHECK(mpx_plan_build(g, r, NULL, NULL, NULL, &err) == MPX_E_ARG);
    /* No rules at all is the default plan. */
    CHECK(mpx_plan_build(g, NULL, NULL, NULL, &p, &err) == MPX_OK && p && p->n_rules == 0);
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* ---- plan -> executor assignment ------------------------------------------------ */

static void test_assign(void) {
    mpx_graph *g = rfc_graph();
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.accum_block = 32;
    mpx_plan *p = plan_with(g, "colour Relu red\naccum Conv bf16", &o);
    mpx_assign a = {0};
    a.n_tensors = g->n_tensors;
    a.n_nodes = g->n_nodes;
    a.tensor = calloc((size_t)g->n_tensors, sizeof *a.tensor);
    a.node = calloc((size_t)g->n_nodes, sizeof *a.node);
    for (int i = 0; i < g->n_tensors; i++) a.tensor[i] = &mpx_format_tf32; /* overwritten */
    CHECK(mpx_plan_fill_assign(p, &a, &err) == MPX_OK);
    CHECK(a.tensor[TI(p, "x")] == NULL);      /* fp32 as NULL */
    CHECK(a.tensor[TI(p, "c")] == F16);
    CHECK(a.tensor[TI(p, "w")] == F16);
    CHECK(a.tensor[TI(p, "r")] == NULL);      /* red Relu writes fp32 */
    CHECK(a.tensor[TI(p, "y")] == NULL);      /* MaxPool follows fp32 */
    CHECK(a.node[NI(g, "conv")].compute == F16 && a.node[NI(g, "conv")].acc.fmt == BF16);
    CHECK(a.node[NI(g, "conv")].acc.block == 32);
    CHECK(a.node[NI(g, "mul")].compute == F16 && a.node[NI(g, "mul")].acc.fmt == NULL);
    CHECK(a.node[NI(g, "conv")].output == F16 && a.node[NI(g, "mul")].output == F16);
    CHECK(a.node[NI(g, "relu")].compute == NULL && a.node[NI(g, "relu")].output == NULL);
    CHECK(a.node[NI(g, "pool")].compute == NULL);
    a.n_nodes--;
    CHECK(mpx_plan_fill_assign(p, &a, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "the assignment is for a graph of");
    CHECK(mpx_plan_fill_assign(p, NULL, &err) == MPX_E_ARG);
    free(a.tensor);
    free(a.node);
    mpx_plan_free(p);
    /* A diff of plans of different graphs is refused. */
    mpx_graph *h = rfc_graph();
    mpx_plan *p1 = plan_with(g, "", NULL), *p2 = plan_with(h, "", NULL);
    mpx_plan_diff *d = NULL;
    CHECK(mpx_plan_diff_new(p1, p2, &d, &err) == MPX_E_ARG && !d);
    CHECK_CONTAINS(err.msg, "different models");
    mpx_plan_free(p1);
    mpx_plan_free(p2);
    mpx_graph_free(h);
    mpx_graph_free(g);
}

/* Runs the RFC graph (x filled with a fixed pattern) under an assignment. */
static mpx_run *run_rfc(const mpx_graph *g, const mpx_assign *a) {
    mpx_value x;
    int64_t d[4] = {1, 3, 8, 8};
    if (mpx_value_alloc(&x, MPX_DT_FLOAT, 4, d, &err) != MPX_OK) return NULL;
    for (int64_t i = 0; i < x.n; i++) x.f[i] = (float)(3.0 * sin(0.37 * (double)i + 0.1));
    mpx_run *r = NULL;
    mpx_error_clear(&err);
    CHECK_MSG(mpx_run_graph(g, a, &x, NULL, &r, &err) == MPX_OK, "run: %s", err.msg);
    mpx_value_free(&x);
    return r;
}

static bool same_bits(const mpx_value *a, const mpx_value *b) {
    return a->n == b->n && a->n > 0 && memcmp(a->f, b->f, (size_t)a->n * sizeof *a->f) == 0;
}

/* The executor runs a plan as the plan says: the all-default plan of the RFC
 * graph is numerically the uniform fp16 assignment with keep-io, and an
 * all-red plan is the fp32 reference, bit for bit. */
static void test_run_plan(void) {
    mpx_graph *g = rfc_graph();
    int y = mpx_graph_find_tensor(g, "y")->index;
    mpx_plan *p = plan_with(g, "", NULL), *red = plan_with(g, "colour * red", NULL);
    mpx_assign *a = mpx_plan_to_assign(p, &err), *ar = mpx_plan_to_assign(red, &err);
    mpx_assign *u = mpx_assign_uniform(g, F16, NULL, true);
    CHECK(a && ar && u);
    mpx_run *rp = a ? run_rfc(g, a) : NULL, *ru = u ? run_rfc(g, u) : NULL;
    mpx_run *rr = ar ? run_rfc(g, ar) : NULL, *ref = run_rfc(g, NULL);
    if (rp && ru && rr && ref) {
        CHECK(same_bits(&rp->vals[y], &ru->vals[y]));
        CHECK(same_bits(&rr->vals[y], &ref->vals[y]));
        CHECK(!same_bits(&rp->vals[y], &ref->vals[y])); /* fp16 did change something */
        int not16 = 0;
        for (int64_t i = 0; i < rp->vals[y].n; i++)
            not16 += mpx_round_scalar(F16, rp->vals[y].f[i]) != rp->vals[y].f[i];
        CHECK(not16 == 0);
    }
    CHECK(mpx_plan_to_assign(NULL, &err) == NULL);
    mpx_run_free(rp);
    mpx_run_free(ru);
    mpx_run_free(rr);
    mpx_run_free(ref);
    mpx_assign_free(a);
    mpx_assign_free(ar);
    mpx_assign_free(u);
    mpx_plan_free(p);
    mpx_plan_free(red);
    mpx_graph_free(g);
}

/* ---- undo history ---------------------------------------------------------------- */

static void test_history(void) {
    mpx_history *h = mpx_history_new(NULL);
    CHECK(h != NULL);
    if (!h) return;
    CHECK(mpx_rules_count(mpx_history_rules(h)) == 0);
    CHECK(mpx_history_opts(h)->keep_io && mpx_history_opts(h)->target == F16);
    CHECK(!mpx_history_undo(h) && !mpx_history_redo(h));

    /* colour: copy, add, push */
    mpx_rules *r = mpx_rules_copy(mpx_history_rules(h));
    CHECK(mpx_rules_add(r, "colour Conv red", NULL, &err) == MPX_OK);
    CHECK(mpx_history_push(h, r, NULL, &err) == MPX_OK);
    mpx_rules_free(r);
    /* target bf16 */
    mpx_plan_opts o = *mpx_history_opts(h);
    o.target = BF16;
    CHECK(mpx_history_push(h, mpx_history_rules(h), &o, &err) == MPX_OK);
    CHECK(mpx_rules_count(mpx_history_rules(h)) == 1 && mpx_history_opts(h)->target == BF16);
    const mpx_rules *prev;
    const mpx_plan_opts *popts;
    CHECK(mpx_history_state(h, 1, &prev, &popts) && popts->target == F16 && mpx_rules_count(prev) == 1);
    CHECK(mpx_history_state(h, 2, &prev, &popts) && mpx_rules_count(prev) == 0);
    CHECK(!mpx_history_state(h, 3, &prev, &popts));

    CHECK(mpx_history_undo(h) && mpx_history_opts(h)->target == F16);
    CHECK(mpx_history_undo(h) && mpx_rules_count(mpx_history_rules(h)) == 0);
    CHECK(!mpx_history_undo(h));
    CHECK(mpx_history_redo(h) && mpx_rules_count(mpx_history_rules(h)) == 1);
    /* A new change after an undo forgets the undone target change. */
    r = mpx_rules_copy(mpx_history_rules(h));
    CHECK(mpx_rules_remove(r, 0, &err) == MPX_OK);
    CHECK(mpx_history_push(h, r, NULL, &err) == MPX_OK);
    mpx_rules_free(r);
    CHECK(!mpx_history_redo(h));
    CHECK(mpx_rules_count(mpx_history_rules(h)) == 0 && mpx_history_opts(h)->target == F16);
    for (int i = 0; i < 40; i++) CHECK(mpx_history_push(h, mpx_history_rules(h), NULL, &err) == MPX_OK);
    int undos = 0;
    while (mpx_history_undo(h)) undos++;
    CHECK(undos == 42);
    mpx_history_free(h);
    mpx_history_free(NULL);
}

/* Converting weights: a variance of 1e8 overflows fp16 (found, with its
 * count and size), bf16 keeps it; a weight of tiny values flushes to zero in
 * fp16 (listed as lossy); 0.5 everywhere converts exactly (not listed). */
static void test_weight_check(void) {
    mpx_graph *g = new_graph();
    node(g, "bn", "BatchNormalization", "x:f:1x4x2x2 sc#f:4 b#f:4 m#f:4 v#f:4", "y", "epsilon=1e-5");
    node(g, "mul", "Mul", "y tiny#f:4x2x2", "z", "");
    finish(g, "z");
    mpx_tensor *v = mpx_graph_find_tensor(g, "v"), *tiny = mpx_graph_find_tensor(g, "tiny");
    v->f32[1] = 1e8f;
    v->f32[3] = -7e4f;
    for (int64_t i = 0; i < tiny->nelem; i++) tiny->f32[i] = 1e-9f;
    const char *forms[2] = {"fp16", "bf16"};
    for (int f = 0; f < 2; f++) {
        mpx_plan_opts o;
        mpx_plan_opts_default(&o);
        o.target = mpx_format_by_name(forms[f]);
        mpx_plan *p = plan_with(g, "colour * green", &o);
        if (!p) continue;
        mpx_weight_check *w = NULL;
        int n = -1;
        CHECK(mpx_plan_check_weights(p, &w, &n, &err) == MPX_OK);
        if (f == 0) {
            CHECK_MSG(n == 2, "fp16: %d weights listed", n);
            for (int i = 0; i < n; i++) {
                const char *name = g->tensors[p->weights[w[i].weight].tensor]->name;
                if (strcmp(name, "v") == 0) CHECK(w[i].overflow == 2 && w[i].absmax == 1e8 && isinf(w[i].rel_l2));
                else CHECK(strcmp(name, "tiny") == 0 && w[i].overflow == 0 && w[i].underflow == 16 && w[i].rel_l2 == 1.0);
            }
        } else {
            CHECK_MSG(n == 0, "bf16: %d weights listed", n);
        }
        free(w);
        mpx_plan_free(p);
    }
    mpx_graph_free(g);
}

/* ---- a big graph ------------------------------------------------------------------ */

static void test_big_graph(void) {
    /* 10,000 nodes: blocks of Conv -> BatchNormalization -> Relu -> Add
     * (residual) -> Sigmoid, with a threshold rule and a name rule. */
    mpx_graph *g = new_graph();
    char prev[32] = "x:f:1x8x8x8", name[64], out[32], ins[128];
    node(g, "first", "Relu", prev, "t0", "");
    snprintf(prev, sizeof prev, "t0");
    int k = 1;
    for (int b = 0; k < 10000; b++) {
        const char *ops[5] = {"Conv", "BatchNormalization", "Relu", "Add", "Sigmoid"};
        for (int j = 0; j < 5 && k < 10000; j++, k++) {
            snprintf(name, sizeof name, "/blk%d/%s", b, ops[j]);
            snprintf(out, sizeof out, "t%d", k);
            if (j == 0) snprintf(ins, sizeof ins, "%s w%d#f:8x8x1x1", prev, b);
            else if (j == 1) snprintf(ins, sizeof ins, "%s s%d#f:8 s%d s%d s%d", prev, b, b, b, b);
            else if (j == 3) snprintf(ins, sizeof ins, "%s t%d", prev, k - 4);
            else snprintf(ins, sizeof ins, "%s", prev);
            node(g, name, ops[j], ins, out, "");
            snprintf(prev, sizeof prev, "%s", out);
        }
    }
    finish(g, prev);
    CHECK(g->n_nodes == 10000);
    mpx_rules *r = mpx_rules_new();
    CHECK(mpx_rules_add(r, "colour Conv green when macs >= 1M else gray", g, &err) == MPX_OK);
    CHECK(mpx_rules_add(r, "colour name:/blk1*/* red", g, &err) == MPX_OK);
    CHECK(mpx_rules_add(r, "accum Conv fp16 when k > 4", g, &err) == MPX_OK);
    /* Timing lives in bench/plan_bench.c; this checks a big plan is right. */
    mpx_plan *p = NULL;
    CHECK(mpx_plan_build(g, r, NULL, NULL, &p, &err) == MPX_OK);
    if (p) {
        CHECK(p->counts.nodes[MPX_COLOUR_RED] > 0 && p->counts.nodes[MPX_COLOUR_GRAY] > 0);
        check_no_cancelling(p);
    }
    mpx_plan_free(p);
    mpx_rules_free(r);
    mpx_graph_free(g);
}

/* ---- fuse: a node's output handed on unrounded ------------------------------------ */

/* A Linear exported as MatMul + Add, then SiLU as Sigmoid + Mul, then a
 * squeeze-excitation-like Sigmoid whose Mul reads another tensor. */
static mpx_graph *fuse_graph(void) {
    mpx_graph *g = new_graph();
    node(g, "mm", "MatMul", "x:f:2x4x8 w#f:8x8", "m", "");
    node(g, "bias", "Add", "b#f:8 m", "a", "");
    node(g, "sig", "Sigmoid", "a", "s", "");
    node(g, "silu", "Mul", "a s", "u", "");
    node(g, "gate", "Sigmoid", "u", "t", "");
    node(g, "scale", "Mul", "a t", "y", "");
    return finish(g, "y");
}

static void test_fuse(void) {
    mpx_graph *g = fuse_graph();
    mpx_plan_opts o;
    mpx_plan_opts_default(&o);
    o.target = BF16;
    o.keep_io = false;
    mpx_plan *p = plan_with(g, "colour * green\nfuse linear, silu", &o);
    /* the pattern picks the Linear's MatMul and SiLU's Sigmoid, not the gate */
    CHECK(PN(p, "mm")->fused && PN(p, "mm")->fuse_rule == 1 && PN(p, "sig")->fused);
    CHECK(!PN(p, "bias")->fused && !PN(p, "gate")->fused && !PN(p, "silu")->fused);
    CHECK(p->rule_selected[1] == 2 && p->rule_applied[1] == 2);
    /* inputs and accumulation as before; the output unrounded, held fp32 */
    CHECK(PN(p, "mm")->compute == BF16 && PN(p, "mm")->low && PN(p, "mm")->output == F32);
    CHECK(TF(p, "m") == F32 && TF(p, "s") == F32 && TF(p, "a") == BF16 && TF(p, "u") == BF16);
    /* the consumer reads it as held: no cast, and it still rounds its output */
    CHECK(p->n_casts == 0);
    CHECK(PN(p, "bias")->compute == BF16 && PN(p, "bias")->output == BF16);
    CHECK(mpx_plan_input_format(p, g->nodes[NI(g, "bias")], 1) == F32);
    CHECK(mpx_plan_input_format(p, g->nodes[NI(g, "bias")], 0) == BF16);
    CHECK(mpx_plan_node_changed(p, NI(g, "mm")));
    char why[4096];
    mpx_plan_why(p, NI(g, "mm"), why, sizeof why);
    CHECK_CONTAINS(why, "output: fp32, unrounded");
    mpx_plan_why(p, NI(g, "bias"), why, sizeof why);
    CHECK_CONTAINS(why, "unrounded (its producer is fused)");
    /* the executor's view: the consumers' held inputs */
    mpx_assign *a = mpx_plan_to_assign(p, &err);
    CHECK_MSG(a != NULL, "%s", err.msg);
    CHECK(a->node[NI(g, "bias")].held == 2u && a->node[NI(g, "silu")].held == 2u);
    CHECK(a->node[NI(g, "mm")].held == 0 && a->node[NI(g, "scale")].held == 0);
    mpx_assign_free(a);
    mpx_plan_free(p);

    /* op selectors and conditions; a fused node that computes fp32 (red)
     * changes nothing but its consumers' reading */
    p = plan_with(g, "colour * green\nfuse MatMul when params > 100", &o);
    CHECK(!PN(p, "mm")->fused && PN(p, "mm")->output == BF16);
    mpx_plan_free(p);
    p = plan_with(g, "colour * green\nfuse MatMul when params >= 64", &o);
    CHECK(PN(p, "mm")->fused && PN(p, "mm")->output == F32);
    mpx_plan_free(p);

    /* an accum rule's selector names the same patterns: the SiLU's Sigmoid,
     * not the gate's; a colour rule's does not (silu is no op type) */
    p = plan_with(g, "colour * green\naccum silu bf16 steps", &o);
    CHECK(PN(p, "sig")->accum == BF16 && PN(p, "sig")->accum_flags == MPX_ACC_STEPS);
    CHECK(PN(p, "gate")->accum_flags == 0 && PN(p, "silu")->accum_flags == 0);
    CHECK(p->rule_selected[1] == 1);
    mpx_plan_free(p);
    mpx_rules *bad = mpx_rules_new();
    CHECK(mpx_rules_add(bad, "colour silu red", g, &err) != MPX_OK);
    CHECK(mpx_rules_add(bad, "accum Div fp32 reciprocal", g, &err) != MPX_OK);
    CHECK_CONTAINS(err.msg, "reciprocal needs a rounded accumulate format");
    CHECK(mpx_rules_add(bad, "accum Sigmoid fp32 steps", g, &err) != MPX_OK);
    mpx_rules_free(bad);

    /* the torch-cpu-bf16 profile: its rules parse, replace the plan's, and
     * set the target, block and keep-io */
    int k = mpx_profile_find("TORCH-CPU-BF16");
    CHECK(k >= 0 && mpx_profile_find("torch") < 0 && mpx_profile_name(k) && !mpx_profile_name(k + 1));
    mpx_rules *pr = NULL;
    mpx_plan_opts po;
    CHECK(mpx_profile_build(k, g, &o, &pr, &po, &err) == MPX_OK);
    CHECK(pr && po.target == BF16 && po.accum_block == 1 && !po.keep_io);
    int n_rules = 0;
    while (mpx_profile_rule(k, n_rules)) n_rules++;
    CHECK(pr && mpx_rules_count(pr) == n_rules && strcmp(mpx_rules_text(pr, 0), "colour * green") == 0);
    p = NULL;
    CHECK(pr && mpx_plan_build(g, pr, &po, NULL, &p, &err) == MPX_OK);
    if (p) {
        CHECK(PN(p, "mm")->fused && PN(p, "sig")->fused && !PN(p, "gate")->fused);
        CHECK(PN(p, "sig")->accum_flags == MPX_ACC_STEPS && PN(p, "gate")->accum_flags == 0);
        CHECK(PN(p, "mm")->accum == F32 && PN(p, "mm")->accum_flags == MPX_ACC_SEQUENTIAL &&
              PN(p, "scale")->compute == BF16);
    }
    mpx_plan_free(p);
    mpx_rules_free(pr);
    mpx_graph_free(g);
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    test_defaults();
    test_parse();
    test_rule_semantics();
    test_rule_of_node();
    test_tiny_cnn();
    test_rfc_and_keep_io();
    test_fuse();
    test_gray_clear_red();
    test_non_float();
    test_fp32_only_ops();
    test_measured();
    test_assign();
    test_run_plan();
    test_history();
    test_weight_check();
    test_big_graph();
    return check_report("test_colour");
}
