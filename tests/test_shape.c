/* test_shape.c - binding, shape inference, constant folding and costs.
 *
 * Expected shapes were checked with onnx.shape_inference.infer_shapes (python3-onnx
 * 1.12, strict mode) unless a comment says otherwise (ONNX 1.12 leaves Einsum dims,
 * opset-9 Slice and opset-18 Split/Pad unresolved; those follow the operator spec). */
#include "check.h"
#include "graph_build.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static mpx_error err;

/* ---- building graphs in one line (tests/graph_build.h) ------------------- */

static mpx_graph *graph(int opset) {
    mpx_graph *g = mpx_graph_new("t.onnx");
    g->opset = opset;
    return g;
}

static mpx_status finish(mpx_graph *g) { return gb_build(g, NULL, &err); }

static const char *shape(mpx_graph *g, const char *t) {
    static char buf[4][128];
    static int k;
    const mpx_tensor *x = mpx_graph_find_tensor(g, t);
    char *b = buf[k++ & 3];
    if (!x) return "(no such tensor)";
    return mpx_tensor_shape_str(x, b, sizeof buf[0]);
}

static mpx_tensor *T(mpx_graph *g, const char *name) { return mpx_graph_find_tensor(g, name); }

/* One node, then "y=1x8x16x16:1 idx=...": each output's shape and, after a
 * colon, its dtype number. */
static void one_(int line, int opset, const char *op, const char *ins, const char *outs,
                 const char *attrs, const char *expect) {
    mpx_graph *g = graph(opset);
    node(g, "n", op, ins, outs, attrs);
    mpx_status st = finish(g);
    CHECK_MSG(st == MPX_OK, "line %d: %s: %s", line, op, err.msg);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", expect);
    char *save;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '='), *colon = strchr(tok, ':');
        *eq = '\0';
        if (colon) *colon = '\0';
        const char *got = shape(g, tok);
        CHECK_MSG(strcmp(got, eq + 1) == 0, "line %d: %s output %s: got %s, want %s", line, op, tok, got,
                  eq + 1);
        if (colon) {
            int want = atoi(colon + 1);
            CHECK_MSG(T(g, tok) && (int)T(g, tok)->dtype == want, "line %d: %s output %s: dtype %d, want %d",
                      line, op, tok, T(g, tok) ? (int)T(g, tok)->dtype : -1, want);
        }
    }
    mpx_graph_free(g);
}
#define ONE(...) one_(__LINE__, __VA_ARGS__)

/* One node that must fail with st and a message containing needle. */
static void fail_(int line, int opset, const char *op, const char *ins, const char *outs, const char *attrs,
                  mpx_status want, const char *needle) {
    mpx_graph *g = graph(opset);
    node(g, "/blk/bad", op, ins, outs, attrs);
    mpx_status st = finish(g);
    CHECK_MSG(st == want, "line %d: %s: status %d (%s), want %d", line, op, st, err.msg, want);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.msg, needle);
    char head[128];
    snprintf(head, sizeof head, "node \"/blk/bad\" (%s)", op);
    CHECK_MSG(strstr(err.msg, head) != NULL, "line %d: \"%s\" does not name the node", line, err.msg);
    mpx_graph_free(g);
}
#define FAIL(...) fail_(__LINE__, __VA_ARGS__)

/* ---- every family ------------------------------------------------------------ */

static void test_windows(void) {
    ONE(13, "Conv", "x:f:1x3x32x32 w:f:8x3x3x3", "y", "pads=[1,1,1,1] strides=[2,2]", "y=1x8x16x16:1");
    ONE(13, "Conv", "x:f:1x8x16x16 w:f:16x4x3x3", "y", "group=2 strides=[2,2] auto_pad=SAME_LOWER dilations=[2,2]",
        "y=1x16x8x8");
    ONE(13, "Conv", "x:f:1x32x15x15 w:f:32x1x3x3", "y", "group=32 strides=[2,2] pads=[1,1,1,1]", "y=1x32x8x8");
    ONE(13, "Conv", "x:f:1x3x10x11 w:f:4x3x3x3 b:f:4", "y", "strides=[2,2] auto_pad=VALID", "y=1x4x4x5");
    ONE(13, "Conv", "x:f:2x3x10 w:f:4x3x3", "y", "dilations=[3] pads=[2,1]", "y=2x4x7");
    ONE(13, "ConvTranspose", "x:f:1x4x5x5 w:f:4x2x3x3", "y", "strides=[2,2] pads=[1,1,1,1] output_padding=[1,1]",
        "y=1x2x10x10");
    ONE(13, "ConvTranspose", "x:f:1x4x5x6 w:f:4x3x4x4", "y", "group=2 strides=[2,2] pads=[1,1,1,1]", "y=1x6x10x12");
    ONE(13, "ConvTranspose", "x:f:1x4x5x5 w:f:4x2x3x3", "y", "strides=[2,2] output_shape=[11,11]", "y=1x2x11x11");
    ONE(13, "ConvTranspose", "x:f:1x4x5x7 w:f:4x2x3x3", "y", "strides=[2,3] auto_pad=SAME_UPPER", "y=1x2x10x21");
    ONE(12, "MaxPool", "x:f:1x4x5x5", "y idx", "kernel_shape=[2,2] strides=[2,2] ceil_mode=1", "y=1x4x3x3:1 idx=1x4x3x3:7");
    ONE(12, "MaxPool", "x:f:1x4x9x9", "y", "kernel_shape=[3,3] dilations=[2,2] pads=[1,1,1,1]", "y=1x4x7x7");
    ONE(13, "AveragePool", "x:f:1x4x7x7", "y", "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]", "y=1x4x4x4");
    ONE(13, "AveragePool", "x:f:1x4x7x8", "y", "kernel_shape=[3,3] strides=[2,2] auto_pad=SAME_UPPER", "y=1x4x4x4");
    ONE(13, "GlobalAveragePool", "x:f:2x4x7x8", "y", "", "y=2x4x1x1");
    ONE(13, "GlobalMaxPool", "x:f:2x4x7", "y", "", "y=2x4x1");
}

static void test_dot_norm(void) {
    ONE(13, "Gemm", "a:f:4x3 b:f:5x4 c:f:5", "y", "transA=1 transB=1", "y=3x5:1");
    ONE(13, "MatMul", "a:f:2x1x3x4 b:f:5x4x6", "y", "", "y=2x5x3x6");
    ONE(13, "MatMul", "a:f:4 b:f:2x4x6", "y", "", "y=2x6");
    ONE(13, "MatMul", "a:f:3x4 b:f:4", "y", "", "y=3");
    ONE(13, "MatMul", "a:f:4 b:f:4", "y", "", "y=scalar");
    /* Einsum: ONNX 1.12 infers only the rank; dims by the spec. */
    ONE(12, "Einsum", "a:f:2x3x4 b:f:2x4x5", "y", "equation=bij,bjk->bik", "y=2x3x5");
    ONE(12, "Einsum", "a:f:7x2x3x4 b:f:4x5", "y", "equation=...ij,jk", "y=7x2x3x5");
    ONE(12, "Einsum", "a:f:3x3", "y", "equation=ii->i", "y=3");
    ONE(12, "Einsum", "a:f:3x4 b:f:4x5", "y", "equation=ij,jk", "y=3x5");
    ONE(12, "Einsum", "a:f:3x4", "y", "equation=ij->", "y=scalar");
    /* Without "->": "..." then the labels that occur once, upper case first
     * (character order), as the kernel orders them (graph/geom.c for both). */
    ONE(12, "Einsum", "a:f:2x3 b:f:3x4", "y", "equation=Ab,bc", "y=2x4");
    ONE(12, "Einsum", "a:f:5x1x3 b:f:7x3", "y", "equation=...j,...j", "y=5x7");
    ONE(15, "BatchNormalization", "x:f:2x6x4x4 s:f:6 b:f:6 m:f:6 v:f:6", "y rm rv", "training_mode=1",
        "y=2x6x4x4 rm=6 rv=6");
    ONE(9, "BatchNormalization", "x:f:2x6x4x4 s:f:6 b:f:6 m:f:6 v:f:6", "y mo vo sm sv", "",
        "y=2x6x4x4 mo=6 sv=6"); /* ONNX 1.12 leaves opset-9 extras unknown */
    ONE(17, "LayerNormalization", "x:f:2x5x6 s:f:5x6 b:f:5x6", "y mean isd", "axis=-2",
        "y=2x5x6:1 mean=2x1x1:1 isd=2x1x1:1");
    ONE(13, "InstanceNormalization", "x:f:2x3x4x4 s:f:3 b:f:3", "y", "", "y=2x3x4x4");
    ONE(12, "Dropout", "x:f:2x5", "y mask", "", "y=2x5:1 mask=2x5:9");
    ONE(7, "Dropout", "x:f:2x5", "y mask", "", "y=2x5:1 mask=2x5:1");
}

static void test_elementwise_reduce(void) {
    ONE(13, "Add", "a:f:2x1x4 b:f:3x1", "y", "", "y=2x3x4:1");
    ONE(13, "Where", "c:b:3x1 a:i:1x4 b:i:2x1x1", "y", "", "y=2x3x4:7");
    ONE(13, "Equal", "a:f:3x1 b:f:4", "y", "", "y=3x4:9");
    ONE(13, "Sum", "a:f:3x1 b:f:4 c:f:2x1x1", "y", "", "y=2x3x4");
    ONE(13, "PRelu", "x:f:1x3x4x4 s:f:3x1x1", "y", "", "y=1x3x4x4");
    ONE(13, "IsNaN", "x:f:3x10", "y", "", "y=3x10:9");
    ONE(13, "Softmax", "x:f:3x10", "y", "axis=0", "y=3x10");
    ONE(13, "Clip", "x:f:3x10 lo=f0 hi=f6", "y", "", "y=3x10");
    ONE(13, "ReduceMean", "x:f:2x3x4x5", "y", "axes=[1,-1] keepdims=0", "y=2x4");
    ONE(13, "ReduceMean", "x:f:2x3x4x5", "y", "", "y=1x1x1x1");
    ONE(13, "ReduceSum", "x:f:2x3x4x5 ax=i[2]", "y", "", "y=2x3x1x5");
    ONE(13, "ReduceSum", "x:f:2x3x4x5", "y", "noop_with_empty_axes=1", "y=2x3x4x5");
    ONE(18, "ReduceMax", "x:f:2x3x4x5 ax=i[0,2]", "y", "keepdims=0", "y=3x5");
    ONE(13, "ArgMax", "x:f:2x3x4", "y", "axis=-2 keepdims=0", "y=2x4:7");
}

static void test_data_movement(void) {
    ONE(10, "Resize", "x:f:1x3x5x7 sc=f[1,1,2,1.5]", "y", "", "y=1x3x10x10");
    ONE(11, "Resize", "x:f:1x3x5x7 roi=f[] sc=f[] sz=i[1,3,9,9]", "y", "", "y=1x3x9x9");
    ONE(13, "Resize", "x:f:1x3x5x7 - sc=f[1,1,0.5,1.7]", "y", "", "y=1x3x2x11");
    ONE(7, "Upsample", "x:f:1x3x5x7", "y", "scales=[1.0,1.0,2.0,3.0]", "y=1x3x10x21");
    ONE(9, "Upsample", "x:f:1x3x5x7 sc=f[1,1,2,2]", "y", "", "y=1x3x10x14");
    /* Resize-18's axes and kept aspect ratio: graph/geom.c's lengths, the
     * kernel's too (one scale, min over the axes for not_larger, rounded). */
    ONE(18, "Resize", "x:f:1x3x5x7 - - sz=i[9,9]", "y", "axes=[2,3] keep_aspect_ratio_policy=not_larger", "y=1x3x6x9");
    ONE(18, "Resize", "x:f:1x3x5x7 - - sz=i[9,9]", "y", "axes=[2,3] keep_aspect_ratio_policy=not_smaller", "y=1x3x9x13");
    ONE(13, "Concat", "a:f:2x3x4 b:f:2x3x5", "y", "axis=-1", "y=2x3x9");
    ONE(11, "Split", "x:f:2x10", "a b", "axis=1 split=[3,7]", "a=2x3 b=2x7");
    ONE(13, "Split", "x:f:2x10 s=i[2,3,5]", "a b c", "axis=-1", "a=2x2 b=2x3 c=2x5");
    ONE(13, "Split", "x:f:6x4", "a b c", "", "a=2x4 b=2x4 c=2x4");
    ONE(18, "Split", "x:f:5x4", "a b c", "num_outputs=3", "a=2x4 b=2x4 c=1x4"); /* spec (opset 18) */
    ONE(13, "Reshape", "x:f:2x3x4 s=i[0,-1,2]", "y", "", "y=2x6x2");
    ONE(14, "Reshape", "x:f:0x3 s=i[3,0]", "y", "allowzero=1", "y=3x0");
    ONE(13, "Flatten", "x:f:2x3x4x5", "y", "axis=-1", "y=24x5");
    ONE(13, "Flatten", "x:f:2x3x4x5", "y", "axis=0", "y=1x120");
    ONE(13, "Transpose", "x:f:2x3x4", "y", "", "y=4x3x2");
    ONE(13, "Transpose", "x:f:2x3x4", "y", "perm=[1,2,0]", "y=3x4x2");
    ONE(11, "Squeeze", "x:f:1x3x1x4", "y", "axes=[-2]", "y=1x3x4");
    ONE(13, "Squeeze", "x:f:1x3x1x4 a=i[0]", "y", "", "y=3x1x4");
    ONE(13, "Squeeze", "x:f:1x3x1x4", "y", "", "y=3x4");
    ONE(11, "Unsqueeze", "x:f:3x4", "y", "axes=[0,-1]", "y=1x3x4x1");
    ONE(13, "Unsqueeze", "x:f:3x4 a=i[1,3]", "y", "", "y=3x1x4x1");
    ONE(9, "Slice", "x:f:4x10x6", "y", "starts=[1,-3] ends=[1000,-1] axes=[0,1]", "y=3x2x6"); /* spec */
    ONE(13, "Slice", "x:f:4x10x6 st=i[-1,9223372036854775807] en=i[-9223372036854775807,0] ax=i[1,-1] sp=i[-3,-2]",
        "y", "", "y=4x4x3");
    ONE(13, "Slice", "x:f:4x10x6 st=i[1,2] en=i[3,9223372036854775807]", "y", "", "y=2x8x6");
    ONE(13, "Gather", "x:f:5x6x7 i:i:2x3", "y", "axis=-2", "y=5x2x3x7");
    ONE(13, "Gather", "x:f:5x6x7 i=i1", "y", "", "y=6x7");
    ONE(13, "GatherElements", "x:f:5x6 i:i:2x6", "y", "axis=0", "y=2x6");
    ONE(7, "Pad", "x:f:1x3x4x4", "y", "pads=[0,0,1,2,0,0,3,4]", "y=1x3x8x10");
    ONE(11, "Pad", "x:f:1x3x4x4 p=i[0,0,1,2,0,0,3,4]", "y", "", "y=1x3x8x10");
    ONE(18, "Pad", "x:f:1x3x4x4 p=i[1,2,3,4] - ax=i[-1,1]", "y", "", "y=1x9x4x8"); /* spec (opset 18) */
    ONE(13, "Expand", "x:f:3x1 s=i[2,1,6]", "y", "", "y=2x3x6");
    ONE(13, "Tile", "x:f:3x2 r=i[2,3]", "y", "", "y=6x6");
    ONE(13, "DepthToSpace", "x:f:1x8x3x4", "y", "blocksize=2", "y=1x2x6x8");
    ONE(13, "SpaceToDepth", "x:f:1x2x6x4", "y", "blocksize=2", "y=1x8x3x2");
    ONE(15, "Shape", "x:f:2x3x4x5", "y", "start=1 end=-1", "y=2:7");
    ONE(13, "Size", "x:f:2x3x4x5", "y", "", "y=scalar:7");
    ONE(13, "Cast", "x:f:2x3", "y", "to=7", "y=2x3:7");
    ONE(13, "ConstantOfShape", "s=i[2,3]", "y", "value=T:i[7]", "y=2x3:7");
    ONE(13, "ConstantOfShape", "s=i[4]", "y", "", "y=4:1");
    ONE(13, "Range", "a=i1 b=i10 d=i3", "y", "", "y=3:7");
    ONE(13, "Range", "a=f0.5 b=f-2 d=f-0.75", "y", "", "y=4:1");
    ONE(9, "TopK", "x:f:3x10", "v i", "k=4", "v=3x4:1 i=3x4:7");
    ONE(11, "TopK", "x:f:3x10 k=i[2]", "v i", "axis=0", "v=2x10 i=2x10:7");
    ONE(13, "NonZero", "x:f:3x10", "y", "", "y=2x?:7");
}

/* ---- folding ------------------------------------------------------------------- */

/* The shape chain of PP-OCRv4 rec (opset 9): Shape -> Cast(int32) -> Slice ->
 * Cast(int64) -> Concat with constants -> Reshape. */
static void test_ppocr_chain(void) {
    mpx_graph *g = graph(9);
    node(g, "sh", "Shape", "x:f:1xTx360", "s", "");
    node(g, "c1", "Cast", "s", "s32", "to=6");
    node(g, "sl", "Slice", "s32", "s1", "axes=[0] starts=[1] ends=[2]");
    node(g, "c2", "Cast", "s1", "s64", "to=7");
    node(g, "k0", "Constant", "", "zero", "value=T:i[0]");
    node(g, "cc", "Concat", "zero s64 a=i[3] b=i[8] c=i[15]", "shape", "axis=0");
    node(g, "rs", "Reshape", "x shape", "y", "");
    T(g, "y")->flags |= MPX_T_OUTPUT;
    CHECK(finish(g) == MPX_OK);
    /* Before binding: T unknown, so Reshape knows only the rank. */
    CHECK(strcmp(shape(g, "y"), "?x?x?x?x?") == 0);
    CHECK(T(g, "s")->i64 == NULL);
    const mpx_tensor *first;
    CHECK(mpx_graph_count_unknown(g, &first) == 0);
    int64_t d[3] = {1, 40, 360};
    CHECK(mpx_graph_bind_input(g, "x", 3, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    CHECK(strcmp(shape(g, "y"), "1x40x3x8x15") == 0);
    const mpx_tensor *s = T(g, "shape");
    CHECK(s->i64 && s->nelem == 5 && s->i64[0] == 0 && s->i64[1] == 40 && s->i64[4] == 15);
    CHECK(s->flags & MPX_T_FOLDED);
    CHECK(T(g, "s32")->dtype == MPX_DT_INT32 && T(g, "s32")->i64[2] == 360);
    /* Re-binding recomputes the folded values. */
    d[1] = 7;
    CHECK(mpx_graph_bind_input(g, "x", 3, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    CHECK(strcmp(shape(g, "y"), "1x7x3x8x15") == 0);
    CHECK(T(g, "shape")->i64[1] == 7);
    /* 1x7x360 does not reshape to 0,7,3,8,16: an error naming the Reshape. */
    mpx_graph_free(g);
}

/* Shape arithmetic as torch exports it: Gather a dim, Unsqueeze, Mul/Div,
 * Concat, Reshape / Expand / ConstantOfShape / Range / Tile / Resize sizes. */
static void test_fold_ops(void) {
    mpx_graph *g = graph(13);
    node(g, "sh", "Shape", "x:f:2x6x8x10", "s", "");
    node(g, "g2", "Gather", "s i2=i2", "h", "");           /* scalar 8 */
    node(g, "g3", "Gather", "s i3=i[-1]", "w", "axis=0");  /* [10] */
    node(g, "dv", "Div", "h two=i2", "h2", "");             /* 4 */
    node(g, "us", "Unsqueeze", "h2 ax0=i[0]", "h2v", "");   /* [4] */
    node(g, "ml", "Mul", "w two", "w2", "");                /* [20] */
    node(g, "sb", "Sub", "w2 m3=i[3]", "w3", "");           /* [17] */
    node(g, "cc", "Concat", "h2v w3", "hw", "axis=0");      /* [4,17] */
    node(g, "cos", "ConstantOfShape", "hw", "z", "value=T:f[1.5]");
    node(g, "rg", "Range", "zero=i0 h2 one=i1", "r", "");   /* 0..3 */
    node(g, "rp", "ReduceProd", "hw", "prod", "keepdims=0"); /* 68 */
    node(g, "eq", "Equal", "hw hw", "same", "");
    node(g, "wh", "Where", "same hw neg=i[-7,-7]", "hw2", "");
    node(g, "ex", "Expand", "one hw2", "e", "");
    node(g, "sl", "Slice", "s st=i[-1] en=i[-9223372036854775807] ax0 sp=i[-2]", "rev", ""); /* [10,6] */
    node(g, "mx", "Max", "rev m3", "rmax", "");
    node(g, "mn", "Min", "rev m3", "rmin", "");
    node(g, "fl", "Floor", "f=f[2.5,-2.5]", "ff", "");
    node(g, "ce", "Ceil", "f", "fc", "");
    node(g, "cf", "Cast", "f", "fi", "to=7");               /* [2,-2] truncates */
    node(g, "ng", "Not", "same", "nsame", "");
    node(g, "sz", "Size", "x", "size", "");
    node(g, "id", "Identity", "hw", "hwi", "");
    node(g, "dn", "Div", "m7=i[-7] two", "dneg", "");       /* -3: truncates */
    node(g, "sq", "Squeeze", "h2v ax0", "h2s", "");
    node(g, "rs", "Reshape", "x nx=i[0,-1]", "xr", "");
    node(g, "t", "Tile", "x rep=i[1,1,1,2]", "xt", "");
    CHECK(finish(g) == MPX_OK);
    CHECK_MSG(err.status == MPX_OK, "%s", err.msg);
    const mpx_tensor *t;
    CHECK((t = T(g, "h")) && t->rank == 0 && t->i64 && t->i64[0] == 8);
    CHECK((t = T(g, "w")) && t->rank == 1 && t->i64 && t->i64[0] == 10);
    CHECK((t = T(g, "hw")) && t->i64 && t->i64[0] == 4 && t->i64[1] == 17);
    CHECK(strcmp(shape(g, "z"), "4x17") == 0 && T(g, "z")->f32 && T(g, "z")->f32[67] == 1.5f);
    CHECK(T(g, "z")->dtype == MPX_DT_FLOAT);
    CHECK((t = T(g, "r")) && t->nelem == 4 && t->i64 && t->i64[3] == 3);
    CHECK((t = T(g, "prod")) && t->rank == 0 && t->i64 && t->i64[0] == 68);
    CHECK((t = T(g, "hw2")) && t->i64 && t->i64[1] == 17);
    CHECK(strcmp(shape(g, "e"), "4x17") == 0);
    CHECK((t = T(g, "rev")) && t->nelem == 2 && t->i64 && t->i64[0] == 10 && t->i64[1] == 6);
    CHECK((t = T(g, "rmax")) && t->i64 && t->i64[0] == 10 && t->i64[1] == 6);
    CHECK((t = T(g, "rmin")) && t->i64 && t->i64[0] == 3 && t->i64[1] == 3);
    CHECK((t = T(g, "ff")) && t->f32 && t->f32[0] == 2.0f && t->f32[1] == -3.0f);
    CHECK((t = T(g, "fc")) && t->f32 && t->f32[0] == 3.0f && t->f32[1] == -2.0f);
    CHECK((t = T(g, "fi")) && t->i64 && t->i64[0] == 2 && t->i64[1] == -2);
    CHECK((t = T(g, "nsame")) && t->i64 && t->i64[0] == 0 && t->dtype == MPX_DT_BOOL);
    CHECK((t = T(g, "size")) && t->i64 && t->i64[0] == 960);
    CHECK((t = T(g, "hwi")) && t->i64 && t->i64[1] == 17);
    CHECK((t = T(g, "dneg")) && t->i64 && t->i64[0] == -3);
    CHECK((t = T(g, "h2s")) && t->rank == 0 && t->i64 && t->i64[0] == 4);
    CHECK(strcmp(shape(g, "xr"), "2x480") == 0);
    CHECK(strcmp(shape(g, "xt"), "2x6x8x20") == 0);
    CHECK(T(g, "xr")->f32 == NULL); /* x has no value */
    mpx_graph_free(g);

    /* Small ConstantOfShape values fold; Resize reads folded sizes. */
    g = graph(13);
    node(g, "cos", "ConstantOfShape", "s=i[2,3]", "z", "value=T:i[5]");
    node(g, "sh", "Shape", "x:f:1x3x4x5", "xs", "");
    node(g, "ml", "Mul", "xs k=i[1,1,2,3]", "sz", "");
    node(g, "rz", "Resize", "x - - sz", "y", "mode=nearest");
    CHECK(finish(g) == MPX_OK);
    CHECK(T(g, "z")->i64 && T(g, "z")->i64[5] == 5);
    CHECK(strcmp(shape(g, "y"), "1x3x8x15") == 0);
    mpx_graph_free(g);
}

/* Folding runs the kernels registered by mpx_numerics_init (one meaning per
 * op): without an evaluator only Shape/Size fold; with it a Cast to float16
 * rounds as the Cast kernel does, and an op marked run in ops.def (Sigmoid)
 * never folds. */
static void test_fold_evaluator(void) {
    mpx_node_eval_fn kernels = mpx_graph_evaluator();
    CHECK(kernels != NULL);
    mpx_graph *g = graph(13);
    node(g, "sh", "Shape", "x:f:2x6", "s", "");
    node(g, "c", "Cast", "s", "s32", "to=6");
    node(g, "h", "Cast", "k=f[0.1,70000]", "k16", "to=10");
    node(g, "sg", "Sigmoid", "k", "ks", "");
    node(g, "r", "Reshape", "x s32", "y", "");
    mpx_graph_set_evaluator(NULL);
    CHECK(finish(g) == MPX_OK);
    CHECK(T(g, "s")->i64 && T(g, "s")->i64[1] == 6);
    CHECK(T(g, "s32")->i64 == NULL && T(g, "k16")->f32 == NULL);
    CHECK(strcmp(shape(g, "y"), "?x?") == 0);
    mpx_graph_set_evaluator(kernels);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    CHECK(T(g, "s32")->i64 && T(g, "s32")->i64[0] == 2 && (T(g, "s32")->flags & MPX_T_FOLDED));
    CHECK(strcmp(shape(g, "y"), "2x6") == 0);
    const mpx_tensor *h = T(g, "k16");
    CHECK(h->f32 && h->f32[0] == 0.0999755859375f && h->f32[1] == INFINITY);
    CHECK(T(g, "ks")->f32 == NULL && !(T(g, "ks")->flags & MPX_T_FOLDED));
    mpx_graph_free(g);
}

/* ---- partial knowledge --------------------------------------------------------------- */

static void test_symbolic(void) {
    mpx_graph *g = graph(13);
    node(g, "r", "Relu", "x:f:Nx3xHxW", "a", "");
    node(g, "c", "Conv", "a w=f[0]", "b", ""); /* weight value shape fixed below */
    node(g, "ad", "Add", "a bias:f:1x3x1x1", "s", "");
    node(g, "u", "FooBar", "s", "u", "");
    node(g, "after", "Relu", "u", "v", "");
    /* A real 8x3x3x3 weight. */
    int64_t wd[4] = {8, 3, 3, 3};
    mpx_tensor_alloc_value(g, T(g, "w"), MPX_DT_FLOAT, 4, wd, NULL);
    CHECK(finish(g) == MPX_OK);
    const mpx_tensor *a = T(g, "a"), *s = T(g, "s");
    CHECK(a->rank == 4 && a->dims[0] == -1 && a->sym[0] && strcmp(a->sym[0], "N") == 0);
    CHECK(a->sym[2] && strcmp(a->sym[2], "H") == 0 && a->dims[1] == 3);
    CHECK(s->rank == 4 && s->sym[3] && strcmp(s->sym[3], "W") == 0);
    CHECK(strcmp(shape(g, "b"), "Nx8x?x?") == 0 && T(g, "b")->sym[0] && strcmp(T(g, "b")->sym[0], "N") == 0);
    CHECK(T(g, "u")->rank == -1 && T(g, "v")->rank == -1); /* unknown op: not an error */
    const mpx_tensor *first;
    CHECK(mpx_graph_count_unknown(g, &first) == 2 && first == T(g, "u"));
    CHECK(g->nodes[1]->cost.macs == -1 && mpx_graph_macs(g) == -1);
    int64_t d[4] = {1, 3, 32, 32};
    CHECK(mpx_graph_bind_input(g, "x", 4, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    CHECK(strcmp(shape(g, "b"), "1x8x30x30") == 0 && T(g, "b")->sym[0] == NULL);
    CHECK(strcmp(shape(g, "bias"), "1x3x1x1") == 0);
    d[0] = 2;
    d[3] = 64;
    CHECK(mpx_graph_bind_input(g, "x", 4, d, &err) == MPX_OK);
    CHECK(mpx_graph_infer(g, &err) == MPX_OK);
    CHECK(strcmp(shape(g, "b"), "2x8x30x62") == 0);
    CHECK(T(g, "b")->nelem == 2 * 8 * 30 * 62);

    /* Binding errors name the input and the dim. */
    int64_t bad[4] = {1, 4, 32, 32};
    CHECK(mpx_graph_bind_input(g, "x", 4, bad, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "\"x\"");
    CHECK_CONTAINS(err.msg, "dim 1");
    CHECK_CONTAINS(err.msg, "3");
    CHECK_CONTAINS(err.msg, "4");
    CHECK(mpx_graph_bind_input(g, "x", 3, bad, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "rank 4");
    CHECK(mpx_graph_bind_input(g, "nope", 4, d, &err) == MPX_E_ARG);
    CHECK_CONTAINS(err.msg, "\"nope\"");
    int64_t huge[4] = {1, 3, 1 << 20, 1 << 20};
    CHECK(mpx_graph_bind_input(g, "x", 4, huge, &err) == MPX_E_LIMIT);
    /* a failed bind leaves the old binding */
    CHECK(T(g, "x")->dims[3] == 64);
    mpx_graph_free(g);

    /* Symbolic dims survive Reshape's -1, MatMul, Transpose and broadcasting. */
    g = graph(13);
    node(g, "mm", "MatMul", "x:f:BxSx16 w:f:16x32", "m", "");
    node(g, "tr", "Transpose", "m", "t", "perm=[1,0,2]");
    node(g, "rs", "Reshape", "t s=i[0,0,4,8]", "r", "");
    node(g, "un", "Unsqueeze", "r ax=i[-1]", "u", "");
    node(g, "sl", "Slice", "u st:i:1 en=i[4]", "v", ""); /* starts unknown: rank only */
    CHECK(finish(g) == MPX_OK);
    CHECK(strcmp(shape(g, "t"), "SxBx32") == 0 && strcmp(T(g, "t")->sym[0], "S") == 0);
    CHECK(strcmp(shape(g, "r"), "SxBx4x8") == 0 && strcmp(T(g, "r")->sym[1], "B") == 0);
    CHECK(strcmp(shape(g, "u"), "SxBx4x8x1") == 0);
    CHECK_MSG(strcmp(shape(g, "v"), "?xBx4x8x1") == 0 && T(g, "v")->sym[0] == NULL, "%s", shape(g, "v"));
    mpx_graph_free(g);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_errors(void) {
    mpx_graph *g = graph(13);
    node(g, "/blk/add", "Add", "a:f:1x3x4 b:f:5", "y", "");
    CHECK(finish(g) == MPX_E_SHAPE);
    CHECK_CONTAINS(err.msg, "node \"/blk/add\" (Add): cannot broadcast 1x3x4 with 5");
    CHECK_CONTAINS(err.file, "t.onnx");
    mpx_graph_free(g);

    FAIL(13, "Reshape", "x:f:2x3x4 s=i[5,5]", "y", "", MPX_E_SHAPE, "2x3x4 (24 elements) to 5x5");
    FAIL(13, "Reshape", "x:f:2x3x4 s=i[5,-1]", "y", "", MPX_E_SHAPE, "cannot reshape 2x3x4");
    FAIL(13, "Conv", "x:f:1x4x8x8 w:f:8x3x3x3", "y", "", MPX_E_SHAPE, "has 4 channels");
    FAIL(13, "Conv", "x:f:1x8x8x8 w:f:6x2x3x3", "y", "group=4", MPX_E_SHAPE, "6 output channels");
    FAIL(13, "Conv", "x:f:1x8x8x8 w:f:8x4x3x3", "y", "group=4", MPX_E_SHAPE, "with group 4 expect 16");
    FAIL(13, "Conv", "x:f:1x3x2x2 w:f:8x3x3x3", "y", "", MPX_E_SHAPE, "smaller than the kernel");
    /* The window is graph/geom.c's, which the kernels read too: what a kernel
     * refuses, loading refuses (auto_pad spelled wrong, a kernel_shape the
     * weights contradict). */
    FAIL(13, "Conv", "x:f:1x3x8x8 w:f:8x3x3x3", "y", "auto_pad=SAME", MPX_E_INVALID, "auto_pad \"SAME\" is not");
    FAIL(13, "Conv", "x:f:1x3x8x8 w:f:8x3x3x3", "y", "kernel_shape=[3,2]", MPX_E_SHAPE,
         "kernel_shape[1] = 2 does not match the weights' kernel length 3");
    FAIL(13, "ConvTranspose", "x:f:1x3x1x1 w:f:3x2x1x1", "y", "pads=[1,1,0,0]", MPX_E_SHAPE, "would have length 0");
    FAIL(13, "Concat", "a:f:2x3 b:f:3x3", "y", "axis=1", MPX_E_SHAPE, "3x3 differs from 2x3 in dim 0");
    FAIL(13, "Concat", "a:f:2x3 b:f:2x3", "y", "axis=2", MPX_E_SHAPE, "axis 2 is out of range");
    FAIL(13, "MatMul", "a:f:2x3 b:f:4x5", "y", "", MPX_E_SHAPE, "inner dims differ: 2x3 times 4x5");
    FAIL(13, "MatMul", "a:f:2x2x3 b:f:3x3x5", "y", "", MPX_E_SHAPE, "batch dims");
    FAIL(13, "Gemm", "a:f:2x3 b:f:4x5", "y", "", MPX_E_SHAPE, "inner dims differ");
    FAIL(13, "Gather", "x:f:2x3 i:i:4", "y", "axis=3", MPX_E_SHAPE, "axis 3 is out of range");
    FAIL(13, "Gather", "x=f[1,2,3,4,5] i=i[7]", "y", "", MPX_E_SHAPE, "index 7 is out of range");
    FAIL(13, "Softmax", "x:f:2x3", "y", "axis=2", MPX_E_SHAPE, "axis 2");
    FAIL(13, "Squeeze", "x:f:2x3 a=i[1]", "y", "", MPX_E_SHAPE, "cannot squeeze axis 1");
    FAIL(13, "Split", "x:f:2x10 s=i[3,3]", "a b", "axis=1", MPX_E_SHAPE, "add up to 6");
    FAIL(13, "Split", "x:f:2x10", "a b c", "axis=1", MPX_E_SHAPE, "equal parts");
    FAIL(13, "Transpose", "x:f:2x3", "y", "perm=[0,0]", MPX_E_SHAPE, "permutation");
    FAIL(13, "Expand", "x:f:3x2 s=i[4,3]", "y", "", MPX_E_SHAPE, "cannot broadcast 3x2 with 4x3");
    FAIL(13, "Einsum", "a:f:3x4 b:f:5x6", "y", "equation=ij,jk->ik", MPX_E_SHAPE, "label 'j'");
    FAIL(9, "Upsample", "x:f:1x3x5x7 sc=f[1,1,0.5,1]", "y", "", MPX_E_INVALID, "scale 0.5 for axis 2 is not at least 1");
    FAIL(18, "Resize", "x:f:1x3x5x7 - - sz=i[9,9]", "y", "axes=[2,2]", MPX_E_INVALID, "axis 2 is listed twice");
    FAIL(13, "Einsum", "a:f:3x4 b:f:4x6", "y", "equation=ij,jk->ii", MPX_E_INVALID, "output label repeated");
    FAIL(13, "ConstantOfShape", "s=i[65536,65536]", "y", "", MPX_E_LIMIT, "output \"y\"");
    FAIL(13, "Unsqueeze", "x:f:2x3x4x5x6x7x8x9 a=i[0]", "y", "", MPX_E_UNSUPPORTED, "rank 9");
    FAIL(13, "Conv", "x:f:1x3x8x8", "y", "", MPX_E_INVALID, "input 1 is required");
    FAIL(11, "TopK", "x:f:3x4 k=i[5]", "v i", "", MPX_E_SHAPE, "k = 5");
}

/* ---- costs ------------------------------------------------------------------------------- */

static const mpx_cost *cost(mpx_graph *g, const char *node_name) {
    return &mpx_graph_find_node(g, node_name)->cost;
}

static void test_costs(void) {
    mpx_graph *g = graph(13);
    int64_t wd[4] = {16, 3, 3, 3}, bd = 16, dw[4] = {16, 1, 3, 3}, gw[4] = {32, 4, 1, 1};
    node(g, "conv", "Conv", "x:f:2x3x32x32 w b", "c", "pads=[1,1,1,1] strides=[2,2]");
    node(g, "dw", "Conv", "c dww", "d", "group=16 pads=[1,1,1,1]");
    node(g, "gc", "Conv", "d gww", "e", "group=4");
    node(g, "gap", "GlobalAveragePool", "e", "p", "");
    node(g, "fl", "Flatten", "p", "f", "");
    node(g, "gemm", "Gemm", "f gm=f[0] gb=f[0]", "o", "transB=1");
    node(g, "rm", "ReduceMean", "e", "rmo", "axes=[2,3] keepdims=1");
    node(g, "sm", "Softmax", "o", "smo", "axis=-1");
    node(g, "mm", "MatMul", "q:f:2x4x5x6 k:f:4x6x7", "qk", "");
    node(g, "relu", "Relu", "c", "cr", "");
    node(g, "mp", "MaxPool", "c", "mpo", "kernel_shape=[2,2] strides=[2,2]");
    node(g, "bn", "BatchNormalization", "c s:f:16 bb:f:16 mu:f:16 var:f:16", "bno", "");
    mpx_tensor_alloc_value(g, T(g, "w"), MPX_DT_FLOAT, 4, wd, NULL);
    T(g, "w")->flags |= MPX_T_INITIALIZER;
    mpx_tensor_alloc_value(g, T(g, "b"), MPX_DT_FLOAT, 1, &bd, NULL);
    T(g, "b")->flags |= MPX_T_INITIALIZER;
    mpx_tensor_alloc_value(g, mpx_graph_tensor(g, "dww"), MPX_DT_FLOAT, 4, dw, NULL);
    T(g, "dww")->flags |= MPX_T_INITIALIZER;
    mpx_tensor_alloc_value(g, mpx_graph_tensor(g, "gww"), MPX_DT_FLOAT, 4, gw, NULL);
    T(g, "gww")->flags |= MPX_T_INITIALIZER;
    int64_t gm[2] = {10, 32};
    mpx_tensor_alloc_value(g, T(g, "gm"), MPX_DT_FLOAT, 2, gm, NULL);
    int64_t ten = 10;
    mpx_tensor_alloc_value(g, T(g, "gb"), MPX_DT_FLOAT, 1, &ten, NULL);
    CHECK(finish(g) == MPX_OK);
    CHECK_MSG(err.status == MPX_OK, "%s", err.msg);
    const mpx_cost *c = cost(g, "conv");
    /* 2x16x16x16 outputs, 3*3*3 terms each */
    CHECK(c->macs == 2LL * 16 * 16 * 16 * 27 && c->k == 27 && c->kernel == 9 && c->group == 1);
    CHECK(c->params == 16 * 27 + 16 && c->in_elems == 2 * 3 * 32 * 32 && c->out_elems == 2 * 16 * 16 * 16);
    CHECK(c->in_ch == 3 && c->out_ch == 16);
    c = cost(g, "dw"); /* depthwise: one channel per output */
    CHECK(c->macs == 2LL * 16 * 16 * 16 * 9 && c->k == 9 && c->group == 16 && c->in_ch == 16 && c->out_ch == 16);
    c = cost(g, "gc"); /* grouped 1x1: 16/4 = 4 inputs per output */
    CHECK(c->macs == 2LL * 32 * 16 * 16 * 4 && c->k == 4 && c->group == 4 && c->kernel == 1 && c->out_ch == 32);
    c = cost(g, "gap");
    CHECK(c->kernel == 256 && c->k == 256 && c->macs == 2LL * 32 * 256);
    c = cost(g, "gemm"); /* M=2, K=32, N=10 */
    CHECK(c->macs == 2 * 32 * 10 && c->k == 32 && c->in_ch == 32 && c->out_ch == 10 && c->params == 330);
    c = cost(g, "rm");
    CHECK(c->k == 256 && c->macs == 2LL * 32 * 256 && c->out_elems == 64);
    c = cost(g, "sm");
    CHECK(c->k == 10 && c->macs == 20);
    c = cost(g, "mm"); /* batch 2x4, M=5, N=7, K=6 */
    CHECK(c->macs == 2 * 4 * 5 * 7 * 6 && c->k == 6 && c->in_ch == 6 && c->out_ch == 7);
    c = cost(g, "relu");
    CHECK(c->macs == 0 && c->k == 1 && c->kernel == 1);
    c = cost(g, "mp");
    CHECK(c->kernel == 4 && c->k == 4 && c->macs == 2LL * 16 * 8 * 8 * 4);
    c = cost(g, "bn");
    CHECK(c->macs == 2LL * 16 * 16 * 16 && c->in_elems == 2LL * 16 * 16 * 16 + 4 * 16);
    int64_t total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += g->nodes[i]->cost.macs;
    CHECK(mpx_graph_macs(g) == total);
    /* Initializers of every dtype and Constant outputs count; folded values do not. */
    CHECK(mpx_graph_param_count(g) == 16 * 27 + 16 + 16 * 9 + 32 * 4 + 330);
    mpx_graph_free(g);

    g = graph(13);
    node(g, "k", "Constant", "", "kc", "value=T:i[1,2,3]");
    node(g, "sh", "Shape", "x:f:2x3", "s", "");
    node(g, "a", "Add", "s kc2=i[1,1]", "y", "");
    node(g, "e", "Einsum", "x w:f:3x4", "z", "equation=ij,jk->ik");
    CHECK(finish(g) == MPX_OK);
    CHECK(mpx_graph_param_count(g) == 3 + 2);
    CHECK(cost(g, "a")->params == 4 && cost(g, "a")->in_elems == 0);
    CHECK(cost(g, "e")->macs == 2 * 3 * 4 && cost(g, "e")->k == 3);
    mpx_graph_free(g);
}

static void test_shape_str(void) {
    mpx_graph *g = graph(13);
    mpx_tensor *t = gb_tensor(g, "x:f:Nx3x?x4");
    char b[64];
    CHECK(strcmp(mpx_tensor_shape_str(t, b, sizeof b), "(unknown)") == 0); /* before finalize */
    CHECK(finish(g) == MPX_OK);
    CHECK(strcmp(mpx_tensor_shape_str(t, b, sizeof b), "Nx3x?x4") == 0); /* symbolic dims by name */
    char small[4];
    mpx_tensor_shape_str(t, small, sizeof small);
    CHECK(strlen(small) == 3);
    mpx_graph_free(g);
}

/* The normalisations' k: how many values one statistic sums. */
static void test_norm_k(void) {
    struct { const char *op, *ins, *attrs; int64_t k; } cases[] = {
        {"LayerNormalization", "x:f:2x3x8 s#f:8", "", 8},
        {"LayerNormalization", "x:f:2x3x8 s#f:3x8", "axis=1", 24},
        {"RMSNormalization", "x:f:2x3x8 s#f:8", "", 8},
        {"GroupNormalization", "x:f:2x6x4x4 s#f:6 b#f:6", "num_groups=3", 32},
        {"MeanVarianceNormalization", "x:f:2x6x4x4", "", 32},
        {"MeanVarianceNormalization", "x:f:2x6x4x4", "axes=[1]", 6},
        {"LpNormalization", "x:f:2x6x5", "axis=1", 6},
        {"InstanceNormalization", "x:f:2x6x4x5 s#f:6 b#f:6", "", 20},
        {"BatchNormalization", "x:f:2x6x4x4 s#f:6 b#f:6 m#f:6 v#f:6", "", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mpx_graph *g = mpx_graph_new(NULL);
        mpx_node *n = node(g, "n", cases[i].op, cases[i].ins, "y", cases[i].attrs);
        n->opset = 21;
        CHECK(gb_build(g, "y", &err) == MPX_OK);
        if (n->cost.k != cases[i].k)
            fprintf(stderr, "%s %s: k %lld, expected %lld\n", cases[i].op, cases[i].attrs, (long long)n->cost.k,
                    (long long)cases[i].k);
        CHECK(n->cost.k == cases[i].k);
        mpx_graph_free(g);
    }
}

int main(void) {
    test_norm_k();
    mpx_numerics_init(); /* constant folding runs the kernels */
    test_windows();
    test_dot_norm();
    test_elementwise_reduce();
    test_data_movement();
    test_ppocr_chain();
    test_fold_ops();
    test_fold_evaluator();
    test_symbolic();
    test_errors();
    test_costs();
    test_shape_str();
    return check_report("test_shape");
}
