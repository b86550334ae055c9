/* test_robust.c - a malformed model never crashes mpx.
 *
 * Seeded, deterministic fuzzing of both loaders and of shape inference:
 *  - onnx-gen: random ONNX graphs built here with protobuf-c: ops from the
 *    registry (and unknown ones) with plausible and hostile attributes
 *    (INT64_MAX pads, negative strides, wrong attribute types, absurd
 *    equations), initializers with hostile values, dims and encodings, inputs
 *    that name missing tensors or later outputs (cycles), tensors written
 *    twice; loaded from the packed bytes;
 *  - onnx-bytes: the packed bytes of such models (and of single TensorProtos,
 *    as ONNX test data files hold them) with flipped, deleted, repeated and
 *    truncated bytes; and one small model truncated at every length;
 *  - json-tiny, json-chain: examples/tiny_cnn.json and a small shape-chain
 *    model below, mutated token by token (hostile numbers, swapped strings,
 *    values of the wrong kind, deleted and repeated objects) and byte by
 *    byte; the small one is also truncated at every length.
 * Then, deterministically: every input that crashed or misbehaved before
 * its fix (test_known: the error's status, file, node and wording), and a
 * 0.9 MB model whose size used to make loading quadratic (test_big).
 * Every load must give a graph or an error whose message is not empty and
 * names the file. Every graph is then bound (random shapes, some absurd) and
 * inferred, which must give OK or an error with a message, and must leave every
 * shape, value and cost within mpx's limits. Under the sanitizer build
 * (-DMPX_SANITIZE=ON: ASan + UBSan, no recovery) any memory error or undefined
 * behaviour fails the test.
 *
 * MPX_ROBUST_ITERS=n    random cases per family (default 800; json-tiny runs half)
 * MPX_ROBUST_SEED=s     base seed (default 1)
 * MPX_ROBUST_CASE=f:i   run only case i of family f (0 onnx-gen, 1 onnx-bytes,
 *                       2 json-tiny, 3 json-chain) and save its input in $MPX_TMP
 * MPX_ROBUST_TRACE=1    print each case before running it (to name a crasher);
 *                       2 also prints every refusal and inference error */
#include "check.h"
#include "test_alloc.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"
#include "onnx.pb-c.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static mpx_error err;
static char tmp[600];
static char msgbuf[2048];
static int trace; /* 1: name each case; 2: also print every refusal */
static const char *cur_case = "";

static const char *msg(void) { return mpx_error_format(&err, msgbuf, sizeof msgbuf); }

/* ---- randomness -------------------------------------------------------------- */

static mpx_rng R;

static uint64_t rnd(uint64_t n) { return n ? mpx_rng_next(&R) % n : 0; }
static bool chance(int pct) { return (int)rnd(100) < pct; }

/* Each case has its own seed, so one can be rerun alone. */
static uint64_t case_seed(uint64_t base, int family, int i) {
    uint64_t z = base ^ ((uint64_t)family << 40) ^ (uint64_t)i;
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Percent of hostile picks in the current case: some cases are nearly sane so
 * they reach deep into shape inference, some are mostly garbage. */
static int hostility;

static const int64_t EVIL[] = {
    INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, INT32_MAX, INT32_MIN,
    (int64_t)1 << 31, ((int64_t)1 << 31) + 1, (int64_t)1 << 40, -((int64_t)1 << 40),
    (int64_t)1 << 62, 3037000500, -3037000500, 65536, -65536, 4611686018427387904,
};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int64_t pick_int(void) {
    if (chance(hostility)) return EVIL[rnd(NELEM(EVIL))];
    return (int64_t)rnd(10) - 2; /* -2 .. 7 */
}

static int64_t pick_dim(void) {
    static const int64_t d[] = {1, 1, 2, 3, 3, 4, 8, 16};
    if (chance(hostility / 2)) {
        static const int64_t bad[] = {0, -1, -7, 1 << 20, ((int64_t)1 << 31) + 1, INT64_MAX};
        return bad[rnd(NELEM(bad))];
    }
    return d[rnd(NELEM(d))];
}

static float pick_float(void) {
    static const float f[] = {0.0f, -0.0f, 1.0f, 0.5f, 2.0f, 1e-45f, 3e38f, -1.0f, 1e10f, 1.5f};
    if (chance(hostility / 3)) {
        switch (rnd(3)) {
        case 0: return (float)INFINITY;
        case 1: return -(float)INFINITY;
        default: return (float)NAN;
        }
    }
    return f[rnd(NELEM(f))];
}

/* Allocations of the test models: tests/test_alloc.h (tal, tstr, pool_free). */

static char *tfmt(const char *fmt, int a, int b) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, a, b);
    return tstr(buf);
}

static void save(const char *name, const void *data, size_t n) {
    char path[900];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (n) fwrite(data, 1, n, f);
    fclose(f);
    fprintf(stderr, "saved %s (%zu bytes)\n", path, n);
}

/* ---- what every load, bind and infer must satisfy ----------------------------- */

static bool err_ok(const char *path) {
    return err.status != MPX_OK && err.msg[0] != '\0' && strcmp(err.file, path) == 0;
}

/* Every figure mpx derived stays within its limits, whatever the model. */
static void check_graph(const mpx_graph *g) {
    char buf[256];
    for (int i = 0; i < g->n_tensors; i++) {
        const mpx_tensor *t = g->tensors[i];
        mpx_tensor_shape_str(t, buf, sizeof buf);
        CHECK_MSG(t->rank >= -1 && t->rank <= MPX_MAX_RANK, "%s: tensor \"%s\" rank %d", cur_case, t->name,
                  t->rank);
        CHECK_MSG(t->nelem >= -1 && t->nelem <= MPX_MAX_ELEMS, "%s: tensor \"%s\" nelem %lld", cur_case,
                  t->name, (long long)t->nelem);
        if (t->rank >= 0 && t->nelem >= 0)
            for (int k = 0; k < t->rank; k++)
                CHECK_MSG(t->dims[k] >= 0, "%s: tensor \"%s\" of %lld elements has dim %d = %lld", cur_case,
                          t->name, (long long)t->nelem, k, (long long)t->dims[k]);
        if (t->f32 || t->i64)
            CHECK_MSG(t->nelem >= 0 && t->rank >= 0, "%s: tensor \"%s\" has a value but shape %s", cur_case,
                      t->name, buf);
        /* Touch the whole value: ASan sees a value shorter than its shape. */
        volatile double sink = 0;
        for (int64_t k = 0; t->f32 && k < t->nelem; k++) sink += t->f32[k];
        for (int64_t k = 0; t->i64 && k < t->nelem; k++) sink += (double)t->i64[k];
        (void)sink;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const mpx_cost *c = &g->nodes[i]->cost;
        const int64_t f[] = {c->macs, c->params, c->in_elems, c->out_elems, c->k};
        for (size_t k = 0; k < NELEM(f); k++)
            CHECK_MSG(f[k] >= -1, "%s: node \"%s\" cost figure %zu is %lld", cur_case, g->nodes[i]->name, k,
                      (long long)f[k]);
    }
    const mpx_tensor *first;
    int unknown = mpx_graph_count_unknown(g, &first);
    CHECK(unknown >= 0 && (unknown == 0) == (first == NULL));
    CHECK(mpx_graph_param_count(g) >= 0);
    CHECK(mpx_graph_macs(g) >= -1);
}

static int64_t bind_dim(int64_t declared) {
    if (declared >= 0 && !chance(5)) return declared;
    static const int64_t d[] = {1, 2, 3, 4, 8, 16, 32};
    if (chance(hostility / 2)) {
        static const int64_t bad[] = {0, 7, 1 << 20, ((int64_t)1 << 31) + 1, INT64_MAX};
        return bad[rnd(NELEM(bad))];
    }
    return d[rnd(NELEM(d))];
}

/* Bind every input (random shapes where the model leaves them open), infer,
 * check; sometimes bind again and infer again. */
static void bind_infer(mpx_graph *g, const char *path) {
    int rounds = chance(20) ? 2 : 1;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < g->n_inputs; i++) {
            const mpx_tensor *t = g->inputs[i];
            int rank = t->decl_rank >= 0 && !chance(3) ? t->decl_rank : (int)rnd(6);
            int64_t dims[MPX_MAX_RANK];
            for (int k = 0; k < rank; k++) dims[k] = bind_dim(k < t->decl_rank ? t->decl_dims[k] : -1);
            mpx_error_clear(&err);
            if (mpx_graph_bind_input(g, t->name, rank, dims, &err) != MPX_OK)
                CHECK_MSG(err.status != MPX_OK && err.msg[0], "%s: bind failed without a message", cur_case);
        }
        mpx_error_clear(&err);
        mpx_status st = mpx_graph_infer(g, &err);
        if (st != MPX_OK)
            CHECK_MSG(st == err.status && err_ok(path), "%s: infer %s without a proper message: %s",
                      cur_case, mpx_status_name(st), msg());
        if (st != MPX_OK && trace >= 2) fprintf(stderr, "%s: infer: %s\n", cur_case, msg());
        check_graph(g);
    }
}

static int n_loaded, n_refused, n_inferred_ok;

static void run_onnx(const uint8_t *buf, size_t n, const char *path) {
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_onnx_buffer(buf, n, path, tmp, &err);
    if (!g) {
        n_refused++;
        CHECK_MSG(err_ok(path), "%s: refused without a proper message: %s", cur_case, msg());
        if (trace >= 2) fprintf(stderr, "%s: load: %s\n", cur_case, msg());
        return;
    }
    n_loaded++;
    check_graph(g);
    bind_infer(g, path);
    n_inferred_ok += err.status == MPX_OK;
    mpx_graph_free(g);
}

static void run_json(const char *text, size_t n, const char *path) {
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(text, n, path, tmp, &err);
    if (!g) {
        n_refused++;
        CHECK_MSG(err_ok(path), "%s: refused without a proper message: %s", cur_case, msg());
        if (trace >= 2) fprintf(stderr, "%s: load: %s\n", cur_case, msg());
        return;
    }
    n_loaded++;
    check_graph(g);
    bind_infer(g, path);
    n_inferred_ok += err.status == MPX_OK;
    mpx_graph_free(g);
}

/* ---- random ONNX models ----------------------------------------------------------- */

enum { MAXN = 12, MAXI = 48, MAXT = 160 };

typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__NodeProto *nodes[MAXN];
    Onnx__TensorProto *inits[MAXI];
    Onnx__ValueInfoProto *ins[4], *outs[4], *vis[4];
    Onnx__OperatorSetIdProto *ops[3];
    const char *avail[MAXT]; /* tensors a node may read */
    int n_avail;
    int n_planned;           /* nodes this model will have (for forward references) */
} model;

/* Per-op inputs and attributes, so that many nodes get far into their shape
 * function. Input codes: x the previous tensor, w a float weight, b a float
 * vector, i an int64 list, s an int64 scalar, f a float list, o an optional
 * (often omitted) int64 list, a any tensor. Attribute kinds: i int, I ints,
 * f float, F floats, s string, t tensor, e Einsum equation. */
typedef struct opsig {
    const char *op, *ins, *attrs;
} opsig;

static const opsig SIGS[] = {
    {"Conv", "xwb", "kernel_shape:I strides:I pads:I dilations:I group:i auto_pad:s"},
    {"ConvTranspose", "xwb", "kernel_shape:I strides:I pads:I dilations:I group:i output_padding:I "
                             "output_shape:I auto_pad:s"},
    {"MaxPool", "x", "kernel_shape:I strides:I pads:I dilations:I ceil_mode:i auto_pad:s"},
    {"AveragePool", "x", "kernel_shape:I strides:I pads:I ceil_mode:i auto_pad:s count_include_pad:i"},
    {"LpPool", "x", "kernel_shape:I strides:I pads:I p:i"},
    {"GlobalAveragePool", "x", ""},
    {"Gemm", "xwb", "transA:i transB:i alpha:f beta:f"},
    {"MatMul", "xw", ""},
    {"Einsum", "xa", "equation:e"},
    {"BatchNormalization", "xbbbb", "epsilon:f momentum:f"},
    {"LayerNormalization", "xbb", "axis:i epsilon:f stash_type:i"},
    {"InstanceNormalization", "xbb", "epsilon:f"},
    {"Softmax", "x", "axis:i"},
    {"Add", "xa", ""},
    {"Mul", "xw", ""},
    {"Div", "xi", ""},
    {"Mod", "xi", "fmod:i"},
    {"Pow", "xi", ""},
    {"Where", "axa", ""},
    {"ReduceSum", "xo", "axes:I keepdims:i noop_with_empty_axes:i"},
    {"ReduceMax", "x", "axes:I keepdims:i"},
    {"ReduceProd", "xo", "axes:I keepdims:i"},
    {"ArgMax", "x", "axis:i keepdims:i"},
    {"Resize", "xofo", "mode:s keep_aspect_ratio_policy:s axes:I"},
    {"Upsample", "xf", "scales:F mode:s"},
    {"Concat", "xaa", "axis:i"},
    {"Split", "xo", "axis:i split:I num_outputs:i"},
    {"Reshape", "xi", "allowzero:i shape:I"},
    {"Flatten", "x", "axis:i"},
    {"Transpose", "x", "perm:I"},
    {"Squeeze", "xo", "axes:I"},
    {"Unsqueeze", "xi", "axes:I"},
    {"Slice", "xiioo", "starts:I ends:I axes:I"},
    {"Gather", "xi", "axis:i"},
    {"GatherElements", "xi", "axis:i"},
    {"Pad", "xiso", "mode:s pads:I"},
    {"Expand", "xi", ""},
    {"Tile", "xi", ""},
    {"DepthToSpace", "x", "blocksize:i mode:s"},
    {"SpaceToDepth", "x", "blocksize:i"},
    {"Shape", "x", "start:i end:i"},
    {"Size", "x", ""},
    {"Cast", "x", "to:i"},
    {"Constant", "", "value:t"},
    {"ConstantOfShape", "i", "value:t"},
    {"Range", "sss", ""},
    {"TopK", "xs", "axis:i k:i largest:i"},
    {"NonZero", "x", ""},
    {"CumSum", "xs", "exclusive:i"},
    {"Dropout", "xo", "ratio:f"},
};

static const char *const ATTR_NAMES[] = {
    "axis", "axes", "keepdims", "kernel_shape", "strides", "pads", "dilations", "group", "auto_pad",
    "ceil_mode", "output_padding", "output_shape", "transA", "transB", "equation", "perm", "split",
    "num_outputs", "shape", "allowzero", "starts", "ends", "blocksize", "start", "end", "to", "value",
    "value_float", "value_int", "value_floats", "value_ints", "value_string", "k", "scales", "mode",
    "stash_type", "fmod", "noop_with_empty_axes", "keep_aspect_ratio_policy", "epsilon",
};

static const char *const STRINGS[] = {
    "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "", "nearest", "linear", "not_larger",
    "not_smaller", "stretch", "%s%n%s", "\xff\xfe", "constant", "reflect", "DCR", "CRD",
};

static const char *pick_equation(void) {
    static const char *const eq[] = {"ij,jk->ik", "bij,bjk->bik", "...ij->...ji", "ii->i", "i,i->",
                                     "abcd->dcba", "ij->", "...", "->", "ij,jk", "a...,...a->a",
                                     "ab,ab->ab", "Zz,zZ->", "...i,...i->...", "a.b->a"};
    if (!chance(hostility)) return eq[rnd(NELEM(eq))];
    static const char alpha[] = "abij.,->A ";
    char buf[24];
    size_t n = (size_t)rnd(20);
    for (size_t i = 0; i < n; i++) buf[i] = alpha[rnd(sizeof alpha - 1)];
    buf[n] = '\0';
    return tstr(buf);
}

static void put_ints(int64_t **out, size_t *n_out, size_t n) {
    *out = tal(n * sizeof **out);
    *n_out = n;
    for (size_t i = 0; i < n; i++) (*out)[i] = pick_int();
}

/* kind: i int64 list, s int64 scalar, f float list, w float weight, b float vector. */
static Onnx__TensorProto *mk_tensor(const char *name, char kind) {
    Onnx__TensorProto *t = tal(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = tstr(name);
    t->has_data_type = 1;
    bool is_int = kind == 'i' || kind == 's';
    t->data_type = is_int ? 7 : 1;
    size_t rank = kind == 's' ? 0 : kind == 'w' ? 1 + (size_t)rnd(4) : 1;
    if (chance(hostility / 4)) rank = (size_t)rnd(10); /* up to 9: above mpx's limit */
    t->n_dims = rank;
    t->dims = tal((rank ? rank : 1) * sizeof(int64_t));
    int64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        int64_t d;
        if (kind == 'i' || kind == 'f') d = chance(hostility / 4) ? 70 : (int64_t)rnd(6);
        else d = pick_dim();
        t->dims[i] = d;
        if (d <= 0) n = 0;
        else if (n > 4096 || d > 4096) n = 4097;
        else n *= d;
    }
    if (n > 4096) n = chance(50) ? 0 : 4096; /* too big for the data it carries: refused */
    size_t cnt = (size_t)n;
    if (chance(hostility / 4)) { /* a count that disagrees */
        size_t delta = (size_t)rnd(3);
        cnt = cnt + 1 >= delta ? cnt + 1 - delta : 0;
    }
    if (chance(hostility / 5)) t->data_type = (int32_t)rnd(24); /* any type, also unknown ones */
    bool raw = chance(30);
    if (is_int) {
        if (raw) {
            t->has_raw_data = 1;
            t->raw_data.len = cnt * 8;
            t->raw_data.data = tal(cnt * 8);
            for (size_t i = 0; i < cnt; i++) {
                uint64_t v = (uint64_t)pick_int();
                for (int b = 0; b < 8; b++) t->raw_data.data[i * 8 + (size_t)b] = (uint8_t)(v >> (8 * b));
            }
        } else {
            put_ints(&t->int64_data, &t->n_int64_data, cnt);
        }
    } else if (raw) {
        t->has_raw_data = 1;
        t->raw_data.len = cnt * 4;
        t->raw_data.data = tal(cnt * 4);
        for (size_t i = 0; i < cnt; i++) {
            float f = pick_float();
            memcpy(t->raw_data.data + i * 4, &f, 4);
        }
    } else {
        t->n_float_data = cnt;
        t->float_data = tal((cnt ? cnt : 1) * sizeof(float));
        for (size_t i = 0; i < cnt; i++) t->float_data[i] = pick_float();
    }
    if (chance(hostility / 10)) {
        /* External data: a missing file, or one outside the model's folder. */
        static const char *const locs[] = {"missing.bin", "../escape.bin", "/etc/passwd", ""};
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        t->n_external_data = 1;
        t->external_data = tal(sizeof *t->external_data);
        Onnx__StringStringEntryProto *e = tal(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = tstr("location");
        e->value = tstr(locs[rnd(NELEM(locs))]);
        t->external_data[0] = e;
    }
    return t;
}

static Onnx__AttributeProto *mk_attr(const char *name, char kind) {
    Onnx__AttributeProto *a = tal(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = tstr(name);
    if (chance(hostility / 2)) kind = "iIfFste"[rnd(7)]; /* the wrong type */
    size_t n;
    switch (kind) {
    case 'i':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = pick_int();
        break;
    case 'I':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        /* Often the length a rank-4 input's window attributes need. */
        n = chance(hostility / 4) ? 70 : chance(50) ? (chance(50) ? 2 : 4) : (size_t)rnd(9);
        put_ints(&a->ints, &a->n_ints, n);
        break;
    case 'f':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->has_f = 1;
        a->f = pick_float();
        break;
    case 'F':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        n = (size_t)rnd(9);
        a->n_floats = n;
        a->floats = tal((n ? n : 1) * sizeof(float));
        for (size_t i = 0; i < n; i++) a->floats[i] = pick_float();
        break;
    case 's':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = 1;
        a->s.data = (uint8_t *)tstr(STRINGS[rnd(NELEM(STRINGS))]);
        a->s.len = strlen((const char *)a->s.data);
        break;
    case 'e':
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        a->has_s = 1;
        a->s.data = (uint8_t *)tstr(pick_equation());
        a->s.len = strlen((const char *)a->s.data);
        break;
    default: /* 't' */
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        a->t = mk_tensor("", "isfwb"[rnd(5)]);
        break;
    }
    a->has_type = !chance(10); /* old files omit it: inferred from the field set */
    if (chance(hostility / 10)) a->type = (Onnx__AttributeProto__AttributeType)rnd(20); /* lies */
    return a;
}

static Onnx__ValueInfoProto *mk_vinfo(const char *name) {
    Onnx__ValueInfoProto *v = tal(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = tstr(name);
    Onnx__TypeProto *tp = tal(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = tal(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = chance(85) ? 1 : chance(50) ? 7 : (int32_t)rnd(25);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    if (chance(5)) return v; /* rank unknown */
    Onnx__TensorShapeProto *sh = tal(sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    tt->shape = sh;
    size_t rank = chance(60) ? 4 : (size_t)rnd(chance(hostility / 4) ? 10 : 6);
    sh->n_dim = rank;
    sh->dim = tal((rank ? rank : 1) * sizeof *sh->dim);
    for (size_t i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = tal(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (chance(20)) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = tstr(chance(50) ? "N" : "p2o.DynamicDimension.0");
        } else if (!chance(5)) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = i == 1 && chance(70) ? 3 : pick_dim();
        }
        sh->dim[i] = d;
    }
    return v;
}

static const char *add_init(model *md, char kind) {
    if (md->g.n_initializer >= MAXI) return md->avail[0];
    char *name = tfmt("init%d_%d", (int)md->g.n_initializer, 0);
    md->inits[md->g.n_initializer++] = mk_tensor(name, kind);
    if (md->n_avail < MAXT) md->avail[md->n_avail++] = name;
    return name;
}

/* The name of input slot code for node k (whose outputs are "t<k>_<j>"). */
static const char *pick_input(model *md, int k, char code) {
    if (!chance(100 - hostility / 2)) {
        switch (rnd(5)) {
        case 0: return "";
        case 1: return "ghost";                                      /* nobody produces it */
        case 2: return tfmt("t%d_%d", k + (int)rnd(3), 0);            /* itself or later: a cycle */
        case 3: return add_init(md, "iswbf"[rnd(5)]);
        default: return md->avail[rnd((uint64_t)md->n_avail)];
        }
    }
    switch (code) {
    case 'x': return chance(80) ? md->avail[md->n_avail - 1] : md->avail[rnd((uint64_t)md->n_avail)];
    case 'a': return md->avail[rnd((uint64_t)md->n_avail)];
    case 'o': return chance(50) ? "" : add_init(md, 'i');
    default: return add_init(md, code);
    }
}

static void add_node(model *md, int k) {
    const opsig *sig = NULL;
    Onnx__NodeProto *n = tal(sizeof *n);
    onnx__node_proto__init(n);
    if (chance(70)) {
        sig = &SIGS[rnd(NELEM(SIGS))];
        n->op_type = tstr(sig->op);
    } else if (chance(95)) {
        n->op_type = tstr(mpx_op_name((mpx_op)(1 + rnd(MPX_OP_COUNT - 1))));
    } else {
        n->op_type = tstr(chance(50) ? "NoSuchOp" : "Conv");
        n->domain = tstr(chance(50) ? "com.example" : "ai.onnx");
    }
    if (chance(80)) n->name = tfmt(chance(90) ? "n%d" : "n%d%%s", k, 0);
    /* Inputs. */
    const char *codes = sig ? sig->ins : "xaa";
    size_t nin = strlen(codes);
    if (!sig) nin = (size_t)rnd(4);
    if (chance(hostility / 4)) nin = (size_t)rnd(7);
    n->n_input = nin;
    n->input = tal((nin ? nin : 1) * sizeof *n->input);
    for (size_t j = 0; j < nin; j++)
        n->input[j] = (char *)pick_input(md, k, j < strlen(codes) ? codes[j] : 'a');
    /* Outputs "t<k>_<j>"; sometimes a name that already exists. */
    size_t nout = chance(85) ? 1 : 1 + (size_t)rnd(3);
    if (sig && strcmp(sig->op, "TopK") == 0) nout = 2;
    if (sig && strcmp(sig->op, "Split") == 0) nout = 1 + (size_t)rnd(3);
    n->n_output = nout;
    n->output = tal(nout * sizeof *n->output);
    for (size_t j = 0; j < nout; j++) {
        if (chance(hostility / 10))
            n->output[j] = (char *)(chance(30) ? "" : md->avail[rnd((uint64_t)md->n_avail)]);
        else
            n->output[j] = tfmt("t%d_%d", k, (int)j);
    }
    /* Attributes. */
    n->attribute = tal(12 * sizeof *n->attribute);
    if (sig) {
        char spec[200];
        snprintf(spec, sizeof spec, "%s", sig->attrs);
        for (char *tok = strtok(spec, " "); tok; tok = strtok(NULL, " ")) {
            char *colon = strchr(tok, ':');
            if (!colon || !chance(55) || n->n_attribute >= 10) continue;
            *colon = '\0';
            n->attribute[n->n_attribute++] = mk_attr(tok, colon[1]);
        }
    }
    int extra = chance(hostility) ? (int)rnd(3) : 0;
    for (int j = 0; j < extra && n->n_attribute < 12; j++)
        n->attribute[n->n_attribute++] = mk_attr(ATTR_NAMES[rnd(NELEM(ATTR_NAMES))], "iIfFste"[rnd(7)]);
    md->nodes[md->g.n_node++] = n;
    for (size_t j = 0; j < nout; j++)
        if (n->output[j][0] && md->n_avail < MAXT) md->avail[md->n_avail++] = n->output[j];
}

static model *gen_model(void) {
    model *md = tal(sizeof *md);
    onnx__model_proto__init(&md->m);
    onnx__graph_proto__init(&md->g);
    md->m.has_ir_version = 1;
    md->m.ir_version = 8;
    md->m.graph = &md->g;
    md->m.opset_import = md->ops;
    md->g.node = md->nodes;
    md->g.initializer = md->inits;
    md->g.input = md->ins;
    md->g.output = md->outs;
    md->g.value_info = md->vis;
    static const int64_t opsets[] = {7, 9, 10, 11, 12, 13, 13, 17, 17, 18, 21};
    if (!chance(hostility / 10)) {
        Onnx__OperatorSetIdProto *o = tal(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = tstr(chance(90) ? "" : "ai.onnx");
        o->has_version = 1;
        o->version = chance(hostility / 5) ? pick_int() : opsets[rnd(NELEM(opsets))];
        md->ops[md->m.n_opset_import++] = o;
    }
    int n_in = chance(80) ? 1 : (int)rnd(3);
    for (int i = 0; i < n_in; i++) {
        md->ins[md->g.n_input++] = mk_vinfo(i ? "x1" : "x");
        md->avail[md->n_avail++] = i ? "x1" : "x";
    }
    if (!md->n_avail) add_init(md, 'w');
    md->n_planned = 1 + (int)rnd(chance(30) ? MAXN : 5);
    for (int k = 0; k < md->n_planned; k++) add_node(md, k);
    if (chance(10)) add_init(md, "iw"[rnd(2)]);
    if (chance(hostility / 5) && md->g.n_input && md->g.n_initializer < MAXI) /* input and initializer */
        md->inits[md->g.n_initializer++] = mk_tensor(md->ins[0]->name, 'w');
    int n_out = chance(90) ? 1 : (int)rnd(3);
    for (int i = 0; i < n_out; i++)
        md->outs[md->g.n_output++] =
            mk_vinfo(chance(95) ? md->avail[md->n_avail - 1 - (int)rnd(md->n_avail > 1 ? 2 : 1)] : "nowhere");
    if (chance(15)) md->vis[md->g.n_value_info++] = mk_vinfo(md->avail[rnd((uint64_t)md->n_avail)]);
    return md;
}

static uint8_t *pack(model *md, size_t *n) {
    *n = onnx__model_proto__get_packed_size(&md->m);
    uint8_t *buf = tal(*n + 64);
    onnx__model_proto__pack(&md->m, buf);
    return buf;
}

/* ---- byte-level mutation ----------------------------------------------------------- */

/* Flip, overwrite, delete, repeat or cut bytes; returns the new length.
 * buf has room for cap bytes. */
static size_t mutate_bytes(uint8_t *buf, size_t n, size_t cap) {
    int k = chance(60) ? 1 : 1 + (int)rnd(4);
    for (int m = 0; m < k && n > 0; m++) {
        size_t at = (size_t)rnd(n);
        switch (rnd(10)) {
        case 0: case 7: case 8: case 9: buf[at] ^= (uint8_t)(1u << rnd(8)); break;
        case 1: buf[at] = (uint8_t)rnd(256); break;
        case 2: buf[at] = (const uint8_t[]){0x00, 0xff, 0x7f, 0x80, 0x01}[rnd(5)]; break;
        case 3: { /* delete a run */
            size_t len = 1 + (size_t)rnd(8);
            if (at + len > n) len = n - at;
            memmove(buf + at, buf + at + len, n - at - len);
            n -= len;
            break;
        }
        case 4: { /* repeat a run */
            size_t len = 1 + (size_t)rnd(16);
            if (at + len > n) len = n - at;
            if (n + len > cap) break;
            memmove(buf + at + len, buf + at, n - at);
            n += len;
            break;
        }
        case 5: n = at; break; /* truncate */
        case 6: /* varint with the high bits set: huge lengths and counts */
            if (at + 4 <= n) memset(buf + at, 0xff, 4);
            break;
        }
    }
    return n;
}

/* ---- ONNX families ------------------------------------------------------------------ */

static void onnx_gen_case(int i, bool keep) {
    hostility = (const int[]){0, 5, 15, 30, 60}[rnd(5)];
    model *md = gen_model();
    size_t n;
    uint8_t *buf = pack(md, &n);
    if (keep) save("robust_case.onnx", buf, n);
    char path[32];
    snprintf(path, sizeof path, "gen%d.onnx", i);
    run_onnx(buf, n, path);
    pool_free();
}

/* A mutated TensorProto (ONNX test data files) through mpx_tensor_proto_decode. */
static void tensor_bytes_case(int i, bool keep) {
    Onnx__TensorProto *t = mk_tensor("t", "iswbf"[rnd(5)]);
    size_t n = onnx__tensor_proto__get_packed_size(t), cap = n + 64;
    uint8_t *buf = tal(cap);
    onnx__tensor_proto__pack(t, buf);
    n = chance(90) ? mutate_bytes(buf, n, cap) : n;
    if (keep) save("robust_case.pb", buf, n);
    char path[32];
    snprintf(path, sizeof path, "bytes%d.pb", i);
    mpx_graph *g = mpx_graph_new("holder.onnx");
    if (!g) abort();
    mpx_tensor *out = NULL;
    mpx_error_clear(&err);
    mpx_status st = mpx_tensor_proto_decode(g, buf, n, path, &out, &err);
    if (st == MPX_OK) {
        n_loaded++;
        CHECK_MSG(out && out->rank >= 0 && out->rank <= MPX_MAX_RANK && out->nelem >= 0 &&
                      out->nelem <= MPX_MAX_ELEMS, "%s: decoded a tensor out of limits", cur_case);
        volatile double sink = 0;
        for (int64_t k = 0; out && out->f32 && k < out->nelem; k++) sink += out->f32[k];
        for (int64_t k = 0; out && out->i64 && k < out->nelem; k++) sink += (double)out->i64[k];
        (void)sink;
    } else {
        n_refused++;
        CHECK_MSG(st == err.status && err_ok(path), "%s: refused without a proper message: %s", cur_case, msg());
    }
    mpx_graph_free(g);
    pool_free();
}

static void onnx_bytes_case(int i, bool keep) {
    hostility = (const int[]){0, 5, 15}[rnd(3)];
    if (chance(25)) {
        tensor_bytes_case(i, keep);
        return;
    }
    model *md = gen_model();
    size_t n;
    uint8_t *packed = pack(md, &n);
    size_t cap = n + 64;
    uint8_t *buf = tal(cap);
    memcpy(buf, packed, n);
    n = mutate_bytes(buf, n, cap);
    if (keep) save("robust_case.onnx", buf, n);
    char path[32];
    snprintf(path, sizeof path, "bytes%d.onnx", i);
    run_onnx(buf, n, path);
    pool_free();
}

/* A small model that loads, cut at every length. */
static void onnx_every_prefix(uint64_t base) {
    for (int s = 0;; s++) {
        mpx_rng_init(&R, case_seed(base, 9, s));
        hostility = 0;
        model *md = gen_model();
        size_t n;
        uint8_t *buf = pack(md, &n);
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_onnx_buffer(buf, n, "full.onnx", tmp, &err);
        bool good = g && g->n_nodes >= 3 && n >= 200;
        mpx_graph_free(g);
        if (!good && s < 1000) {
            pool_free();
            continue;
        }
        CHECK_MSG(good, "no small model that loads in 1000 tries");
        for (size_t k = 0; k < n; k++) {
            char path[32];
            snprintf(path, sizeof path, "prefix%zu.onnx", k);
            cur_case = path;
            run_onnx(buf, k, path);
        }
        printf("onnx: a %zu-byte model with %zu nodes truncated at every length\n", n, md->g.n_node);
        pool_free();
        return;
    }
}

/* ---- JSON: tokens and mutations -------------------------------------------------- */

typedef struct tok {
    size_t at, len;
    char kind; /* n number, s string, p punctuation, l literal */
} tok;

static size_t tokenize(const char *s, size_t n, tok *out, size_t max) {
    size_t k = 0;
    for (size_t i = 0; i < n && k < max;) {
        char ch = s[i];
        size_t b = i;
        if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r') {
            i++;
            continue;
        }
        if (ch == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            i++;
            if (i > n) i = n;
            out[k++] = (tok){b, i - b, 's'};
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            while (i < n && strchr("0123456789+-.eE", s[i])) i++;
            out[k++] = (tok){b, i - b, 'n'};
        } else if (ch >= 'a' && ch <= 'z') {
            while (i < n && s[i] >= 'a' && s[i] <= 'z') i++;
            out[k++] = (tok){b, i - b, 'l'};
        } else {
            i++;
            out[k++] = (tok){b, 1, 'p'};
        }
    }
    return k;
}

/* A growing text buffer (malloc'd; freed by the caller). */
typedef struct text {
    char *s;
    size_t n;
} text;

static void replace(text *t, size_t at, size_t len, const char *with, size_t wlen) {
    if (at > t->n) at = t->n;
    if (at + len > t->n) len = t->n - at;
    char *s = malloc(t->n - len + wlen + 1);
    if (!s) abort();
    memcpy(s, t->s, at);
    memcpy(s + at, with, wlen);
    memcpy(s + at + wlen, t->s + at + len, t->n - at - len);
    t->n = t->n - len + wlen;
    s[t->n] = '\0';
    free(t->s);
    t->s = s;
}

/* No number between 1000 and 2^31: a JSON tensor with a seeded "init" may
 * legally hold 2^31 elements, and filling that is slow, not wrong. */
static const char *const HOSTILE_NUMS[] = {
    "0", "-1", "1", "2", "3", "7", "-9223372036854775808", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "1e308", "-1e308", "1e999", "2.5", "-0", "1000",
    "2147483649", "1099511627776", "0.0", "1e-320", "17", "99", "-2", "3037000500",
    "4611686018427387904", "1.0", "-65536",
};

static const char *const HOSTILE_VALUES[] = {
    "null", "true", "false", "[]", "{}", "\"s\"", "[1,2]", "[[1]]", "{\"a\":1}", "-1", "[-1]",
    "[9223372036854775807]", "[0]", "[1,1,1,1,1,1,1,1,1]", "\"\"", "[\"a\",1]", "[1.5]",
    "{\"tensor\":{\"type\":\"int64\",\"shape\":[],\"data\":9223372036854775807}}",
    "{\"type\":\"ints\",\"value\":[9223372036854775807,-9223372036854775808]}",
    "[-9223372036854775808,-9223372036854775808]", "\"SAME_UPPER\"", "\"VALID\"",
};

static const char *const HOSTILE_STRINGS[] = {
    "\"\"", "\"x\"", "\"ghost\"", "\"float16\"", "\"int64\"", "\"bool\"", "\"%s%s%n\"",
    "\"\\u0000\"", "\"inputs\"", "\"NOTSET\"", "\"SAME_UPPER\"", "\"SAME_LOWER\"", "\"VALID\"",
    "\"string\"", "\"Constant\"", "\"normal\"", "\"zeros\"", "\"..\"", "\"/etc/passwd\"",
    "\"\\ud800\"", "\"ij,jk->ik\"", "\"...\"", "\"i->\"",
};

/* End of the JSON value starting at token k (its matching bracket for { and [). */
static size_t value_end(const tok *tk, size_t nt, size_t k, const char *s) {
    if (tk[k].kind != 'p' || (s[tk[k].at] != '{' && s[tk[k].at] != '[')) return k;
    int depth = 0;
    for (size_t j = k; j < nt; j++) {
        if (tk[j].kind != 'p') continue;
        char ch = s[tk[j].at];
        if (ch == '{' || ch == '[') depth++;
        else if (ch == '}' || ch == ']') {
            if (--depth == 0) return j;
        }
    }
    return nt - 1;
}

static void mutate_json(text *t) {
    enum { MAXTOK = 16384 };
    static tok tk[MAXTOK];
    int k = 1 + (int)rnd(3);
    for (int m = 0; m < k; m++) {
        size_t nt = tokenize(t->s, t->n, tk, MAXTOK);
        if (nt == 0) return;
        size_t a = (size_t)rnd(nt);
        const char *w;
        switch (rnd(20)) {
        case 0: case 1: case 2: case 3: case 4: { /* a number -> a hostile number */
            for (int tries = 0; tries < 50 && tk[a].kind != 'n'; tries++) a = (size_t)rnd(nt);
            w = HOSTILE_NUMS[rnd(NELEM(HOSTILE_NUMS))];
            replace(t, tk[a].at, tk[a].len, w, strlen(w));
            break;
        }
        case 5: case 6: case 7: { /* a string -> another string of the text, or a hostile one */
            for (int tries = 0; tries < 50 && tk[a].kind != 's'; tries++) a = (size_t)rnd(nt);
            if (chance(60)) {
                size_t b = (size_t)rnd(nt);
                for (int tries = 0; tries < 50 && tk[b].kind != 's'; tries++) b = (size_t)rnd(nt);
                char *copy = malloc(tk[b].len + 1);
                if (!copy) abort();
                memcpy(copy, t->s + tk[b].at, tk[b].len);
                replace(t, tk[a].at, tk[a].len, copy, tk[b].len);
                free(copy);
            } else if (chance(30)) {
                char op[80];
                snprintf(op, sizeof op, "\"%s\"", mpx_op_name((mpx_op)(1 + rnd(MPX_OP_COUNT - 1))));
                replace(t, tk[a].at, tk[a].len, op, strlen(op));
            } else {
                w = HOSTILE_STRINGS[rnd(NELEM(HOSTILE_STRINGS))];
                replace(t, tk[a].at, tk[a].len, w, strlen(w));
            }
            break;
        }
        case 8: case 9: case 10: { /* a value -> a value of another kind */
            for (int tries = 0; tries < 50; tries++) {
                if (tk[a].kind != 'p' || t->s[tk[a].at] == '{' || t->s[tk[a].at] == '[') break;
                a = (size_t)rnd(nt);
            }
            /* Not a key: a string followed by ':' stays. */
            if (tk[a].kind == 's' && a + 1 < nt && t->s[tk[a + 1].at] == ':') break;
            size_t e = value_end(tk, nt, a, t->s);
            w = HOSTILE_VALUES[rnd(NELEM(HOSTILE_VALUES))];
            replace(t, tk[a].at, tk[e].at + tk[e].len - tk[a].at, w, strlen(w));
            break;
        }
        case 11: case 12: { /* repeat an object or array element: two producers, keys twice */
            for (int tries = 0; tries < 100 && !(tk[a].kind == 'p' && t->s[tk[a].at] == '{'); tries++)
                a = (size_t)rnd(nt);
            if (!(tk[a].kind == 'p' && t->s[tk[a].at] == '{')) break;
            size_t e = value_end(tk, nt, a, t->s);
            size_t from = tk[a].at, to = tk[e].at + tk[e].len;
            char *copy = malloc(to - from + 2);
            if (!copy) abort();
            memcpy(copy, t->s + from, to - from);
            copy[to - from] = ',';
            replace(t, from, 0, copy, to - from + 1);
            free(copy);
            break;
        }
        case 13: { /* delete a value (and the comma after it) */
            size_t e = value_end(tk, nt, a, t->s);
            size_t to = tk[e].at + tk[e].len;
            if (e + 1 < nt && t->s[tk[e + 1].at] == ',') to = tk[e + 1].at + 1;
            replace(t, tk[a].at, to - tk[a].at, "", 0);
            break;
        }
        case 14: { /* swap two numbers */
            size_t b = (size_t)rnd(nt);
            for (int tries = 0; tries < 50 && tk[a].kind != 'n'; tries++) a = (size_t)rnd(nt);
            for (int tries = 0; tries < 50 && (tk[b].kind != 'n' || b == a); tries++) b = (size_t)rnd(nt);
            if (tk[a].kind != 'n' || tk[b].kind != 'n' || a == b) break;
            if (a > b) {
                size_t x = a;
                a = b;
                b = x;
            }
            char na[80], nb[80];
            snprintf(na, sizeof na, "%.*s", (int)tk[a].len, t->s + tk[a].at);
            snprintf(nb, sizeof nb, "%.*s", (int)tk[b].len, t->s + tk[b].at);
            replace(t, tk[b].at, tk[b].len, na, strlen(na)); /* the later one first */
            replace(t, tk[a].at, tk[a].len, nb, strlen(nb));
            break;
        }
        case 15: case 16: { /* a byte */
            size_t at = (size_t)rnd(t->n);
            char ch = chance(50) ? "{}[]\",:0-9e.\\ a"[rnd(16)] : (char)(1 + rnd(255));
            if (t->n) replace(t, at, 1, &ch, 1);
            break;
        }
        case 17: t->n = (size_t)rnd(t->n + 1); t->s[t->n] = '\0'; break; /* truncate */
        default: { /* insert an extra element before a value */
            w = HOSTILE_VALUES[rnd(NELEM(HOSTILE_VALUES))];
            char ins[200];
            snprintf(ins, sizeof ins, "%s,", w);
            if (tk[a].kind == 'n' || (tk[a].kind == 'p' && t->s[tk[a].at] == '['))
                replace(t, tk[a].at, 0, ins, strlen(ins));
            break;
        }
        }
    }
}

/* The shape-chain model: windows, Pad, Slice, Resize, Shape -> Gather ->
 * Concat -> Reshape, ConstantOfShape, Expand, Tile, Split, TopK, Einsum, Gemm,
 * DepthToSpace, ConvTranspose, Range. Loads and infers cleanly for x 1x3x8x8. */
static const char CHAIN[] =
    "{\"format\": \"mpx-model\", \"version\": 1, \"opset\": 17,\n"
    "\"inputs\": [{\"name\": \"x\", \"type\": \"float32\", \"shape\": [\"N\", 3, 8, 8]}],\n"
    "\"outputs\": [{\"name\": \"y\"}, {\"name\": \"z\"}],\n"
    "\"initializers\": [\n"
    "{\"name\": \"w\", \"type\": \"float32\", \"shape\": [4, 3, 3, 3], \"init\": \"normal\", \"std\": 0.1},\n"
    "{\"name\": \"wt\", \"type\": \"float32\", \"shape\": [4, 2, 3, 3], \"init\": {\"dist\": \"uniform\"}},\n"
    "{\"name\": \"gw\", \"type\": \"float32\", \"shape\": [3, 4], \"data\": [1,2,3,4,5,6,7,8,9,10,11,12]},\n"
    "{\"name\": \"idx\", \"type\": \"int64\", \"shape\": [1], \"data\": [0]},\n"
    "{\"name\": \"m1\", \"type\": \"int64\", \"shape\": [1], \"data\": [-1]},\n"
    "{\"name\": \"four\", \"type\": \"int64\", \"shape\": [1], \"data\": [4]},\n"
    "{\"name\": \"st\", \"type\": \"int64\", \"shape\": [2], \"data\": [1, 0]},\n"
    "{\"name\": \"en\", \"type\": \"int64\", \"shape\": [2], \"data\": [9223372036854775807, -1]},\n"
    "{\"name\": \"ax\", \"type\": \"int64\", \"shape\": [2], \"data\": [2, 3]},\n"
    "{\"name\": \"pads\", \"type\": \"int64\", \"shape\": [8], \"data\": [0, 0, 1, 1, 0, 0, 1, 1]},\n"
    "{\"name\": \"sc\", \"type\": \"float32\", \"shape\": [4], \"data\": [1, 1, 2, 2]},\n"
    "{\"name\": \"reps\", \"type\": \"int64\", \"shape\": [2], \"data\": [1, 2]},\n"
    "{\"name\": \"k\", \"type\": \"int64\", \"shape\": [1], \"data\": [3]},\n"
    "{\"name\": \"r0\", \"type\": \"int64\", \"shape\": [], \"data\": 0},\n"
    "{\"name\": \"r1\", \"type\": \"int64\", \"shape\": [], \"data\": 10},\n"
    "{\"name\": \"r2\", \"type\": \"int64\", \"shape\": [], \"data\": 3}],\n"
    "\"nodes\": [\n"
    "{\"op\": \"Conv\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"c\"], \"attrs\": {\"kernel_shape\": [3, 3], "
    "\"pads\": [1, 1, 1, 1], \"strides\": [1, 1], \"dilations\": [1, 1], \"group\": 1}},\n"
    "{\"op\": \"MaxPool\", \"inputs\": [\"c\"], \"outputs\": [\"p\"], \"attrs\": {\"kernel_shape\": [2, 2], "
    "\"strides\": [2, 2], \"ceil_mode\": 1}},\n"
    "{\"op\": \"AveragePool\", \"inputs\": [\"c\"], \"outputs\": [\"ap\"], \"attrs\": {\"kernel_shape\": [3, 3], "
    "\"pads\": [1, 1, 1, 1], \"auto_pad\": \"NOTSET\"}},\n"
    "{\"op\": \"ConvTranspose\", \"inputs\": [\"p\", \"wt\"], \"outputs\": [\"ct\"], \"attrs\": {\"strides\": [2, 2], "
    "\"output_padding\": [1, 1], \"pads\": [0, 0, 0, 0]}},\n"
    "{\"op\": \"DepthToSpace\", \"inputs\": [\"c\"], \"outputs\": [\"d2s\"], \"attrs\": {\"blocksize\": 2}},\n"
    "{\"op\": \"Pad\", \"inputs\": [\"p\", \"pads\"], \"outputs\": [\"pd\"]},\n"
    "{\"op\": \"Slice\", \"inputs\": [\"pd\", \"st\", \"en\", \"ax\"], \"outputs\": [\"sl\"]},\n"
    "{\"op\": \"Resize\", \"inputs\": [\"sl\", \"\", \"sc\"], \"outputs\": [\"rs\"], \"attrs\": {\"mode\": \"nearest\"}},\n"
    "{\"op\": \"Shape\", \"inputs\": [\"rs\"], \"outputs\": [\"s\"]},\n"
    "{\"op\": \"Gather\", \"inputs\": [\"s\", \"idx\"], \"outputs\": [\"n\"], \"attrs\": {\"axis\": 0}},\n"
    "{\"op\": \"Concat\", \"inputs\": [\"n\", \"m1\"], \"outputs\": [\"tgt\"], \"attrs\": {\"axis\": 0}},\n"
    "{\"op\": \"Reshape\", \"inputs\": [\"rs\", \"tgt\"], \"outputs\": [\"r\"]},\n"
    "{\"op\": \"Transpose\", \"inputs\": [\"r\"], \"outputs\": [\"t\"], \"attrs\": {\"perm\": [1, 0]}},\n"
    "{\"op\": \"ReduceSum\", \"inputs\": [\"t\"], \"outputs\": [\"y\"], \"attrs\": {\"keepdims\": 0, \"axes\": [0]}},\n"
    "{\"op\": \"Concat\", \"inputs\": [\"n\", \"four\"], \"outputs\": [\"shp\"], \"attrs\": {\"axis\": 0}},\n"
    "{\"op\": \"ConstantOfShape\", \"inputs\": [\"shp\"], \"outputs\": [\"cos\"], \"attrs\": {\"value\": "
    "{\"tensor\": {\"type\": \"float32\", \"shape\": [1], \"data\": [1.5]}}}},\n"
    "{\"op\": \"Expand\", \"inputs\": [\"cos\", \"shp\"], \"outputs\": [\"ex\"]},\n"
    "{\"op\": \"Tile\", \"inputs\": [\"ex\", \"reps\"], \"outputs\": [\"tl\"]},\n"
    "{\"op\": \"Split\", \"inputs\": [\"tl\"], \"outputs\": [\"sa\", \"sb\"], \"attrs\": {\"axis\": 1}},\n"
    "{\"op\": \"Einsum\", \"inputs\": [\"sa\", \"sb\"], \"outputs\": [\"es\"], \"attrs\": {\"equation\": \"ij,ij->i\"}},\n"
    "{\"op\": \"TopK\", \"inputs\": [\"sa\", \"k\"], \"outputs\": [\"tv\", \"ti\"], \"attrs\": {\"axis\": 1}},\n"
    "{\"op\": \"Gemm\", \"inputs\": [\"sa\", \"gw\"], \"outputs\": [\"gm\"], \"attrs\": {\"transB\": 1}},\n"
    "{\"op\": \"Range\", \"inputs\": [\"r0\", \"r1\", \"r2\"], \"outputs\": [\"rg\"]},\n"
    "{\"op\": \"Add\", \"inputs\": [\"gm\", \"tv\"], \"outputs\": [\"z\"]}\n"
    "]}\n";

static char *tiny_cnn;
static size_t tiny_cnn_len;

static void json_case(int family, int i, bool keep) {
    hostility = (const int[]){5, 15, 30}[rnd(3)];
    const char *base = family == 2 ? tiny_cnn : CHAIN;
    size_t len = family == 2 ? tiny_cnn_len : sizeof CHAIN - 1;
    text t = {malloc(len + 1), len};
    if (!t.s) abort();
    memcpy(t.s, base, len + 1);
    mutate_json(&t);
    if (keep) save("robust_case.json", t.s, t.n);
    char path[32];
    snprintf(path, sizeof path, "%s%d.json", family == 2 ? "tiny" : "chain", i);
    run_json(t.s, t.n, path);
    free(t.s);
}

static void json_every_prefix(void) {
    size_t n = sizeof CHAIN - 1;
    for (size_t k = 0; k < n; k++) {
        char path[32];
        snprintf(path, sizeof path, "prefix%zu.json", k);
        cur_case = path;
        run_json(CHAIN, k, path);
    }
    printf("json: a %zu-byte model truncated at every length\n", n);
}

/* The unmutated bases load and infer cleanly, so mutations start from a model
 * that reaches every shape function. */
static void bases_are_good(void) {
    const char *names[2] = {"tiny_cnn.json", "chain.json"};
    const char *texts[2] = {tiny_cnn, CHAIN};
    size_t lens[2] = {tiny_cnn_len, sizeof CHAIN - 1};
    for (int b = 0; b < 2; b++) {
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_json_text(texts[b], lens[b], names[b], tmp, &err);
        CHECK_MSG(g != NULL, "%s: %s", names[b], msg());
        if (!g) continue;
        int64_t dims[4] = {1, 3, b ? 8 : 32, b ? 8 : 32};
        mpx_error_clear(&err);
        CHECK_MSG(mpx_graph_bind_input(g, "x", 4, dims, &err) == MPX_OK, "%s: %s", names[b], msg());
        CHECK_MSG(mpx_graph_infer(g, &err) == MPX_OK, "%s: %s", names[b], msg());
        CHECK_MSG(mpx_graph_count_unknown(g, NULL) == 0, "%s: unknown shapes left", names[b]);
        mpx_graph_free(g);
    }
}

/* ---- the inputs that crashed or misbehaved before, one check each ---------------- */

static double now(void);

/* Loading must fail (infer_node NULL) or inference must fail naming infer_node,
 * with status st, the file "known.json" and the needle in the message. */
static void expect_(int line, const char *json, const char *infer_node, mpx_status st, const char *needle) {
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(json, strlen(json), "known.json", tmp, &err);
    mpx_status got = err.status;
    if (infer_node) {
        CHECK_MSG(g != NULL, "line %d: not loaded: %s", line, msg());
        mpx_error_clear(&err);
        got = g ? mpx_graph_infer(g, &err) : MPX_OK;
        if (g) check_graph(g);
        char want[160];
        snprintf(want, sizeof want, "node \"%s\"", infer_node);
        CHECK_MSG(strstr(msg(), want) != NULL, "line %d: \"%s\" lacks %s", line, msg(), want);
    } else {
        CHECK_MSG(g == NULL, "line %d: accepted", line);
    }
    mpx_graph_free(g);
    CHECK_MSG(got == st && err.status == st, "line %d: status %s, wanted %s (%s)", line, mpx_status_name(got),
              mpx_status_name(st), msg());
    CHECK_MSG(strcmp(err.file, "known.json") == 0 && strncmp(msg(), "known.json: ", 12) == 0,
              "line %d: the message does not name the file: %s", line, msg());
    CHECK_MSG(strstr(msg(), needle) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), needle);
}
#define EXPECT(json, node, st, needle) expect_(__LINE__, json, node, st, needle)

#define M(inputs, inits, nodes)                                                                    \
    "{\"format\": \"mpx-model\", \"outputs\": [{\"name\": \"y\"}], \"inputs\": [" inputs "], " \
    "\"initializers\": [" inits "], \"nodes\": [" nodes "]}"
#define X4 "{\"name\": \"x\", \"shape\": [1, 1, 8, 8]}"
#define W33 "{\"name\": \"w\", \"type\": \"float32\", \"shape\": [1, 1, 3, 3], \"init\": \"ones\"}"
#define I64(name, shape, data) \
    "{\"name\": \"" name "\", \"type\": \"int64\", \"shape\": " shape ", \"data\": " data "}"
#define NODE(op, ins, attrs) \
    "{\"name\": \"n\", \"op\": \"" op "\", \"inputs\": " ins ", \"outputs\": [\"y\"], \"attrs\": {" attrs "}}"
#define BIG "9223372036854775807"

static void test_known(void) {
    /* Window arithmetic overflowed (signed overflow, UBSan) on huge pads,
     * dilations, strides and group. */
    EXPECT(M(X4, "", NODE("MaxPool", "[\"x\"]", "\"kernel_shape\": [2, 2], \"pads\": [" BIG ", 0, 0, 0]")), "n",
           MPX_E_LIMIT, "pads[0] = " BIG " is beyond mpx's limit");
    EXPECT(M(X4, W33, NODE("Conv", "[\"x\", \"w\"]", "\"dilations\": [" BIG ", 1]")), "n", MPX_E_LIMIT,
           "dilations[0] = " BIG " is beyond mpx's limit");
    EXPECT(M(X4, "", NODE("AveragePool", "[\"x\"]", "\"kernel_shape\": [2, 2], \"ceil_mode\": 1, \"strides\": [1, " BIG "]")),
           "n", MPX_E_LIMIT, "strides[1] = " BIG " is beyond mpx's limit");
    EXPECT(M(X4, W33, NODE("Conv", "[\"x\", \"w\"]", "\"group\": 4611686018427387904")), "n", MPX_E_SHAPE,
           "group 4611686018427387904");
    EXPECT(M(X4, W33, NODE("Conv", "[\"x\", \"w\"]", "\"kernel_shape\": [0, 3]")), "n", MPX_E_INVALID,
           "kernel_shape[0] = 0 is out of range");
    EXPECT(M(X4, W33, NODE("ConvTranspose", "[\"x\", \"w\"]", "\"output_padding\": [" BIG ", 0]")), "n",
           MPX_E_LIMIT, "output_padding[0] = " BIG " is beyond mpx's limit");
    /* Every term at its limit: the length is refused, not wrapped. */
    EXPECT(M("{\"name\": \"x\", \"shape\": [1, 1, 2147483648]}",
             "{\"name\": \"w\", \"type\": \"float32\", \"shape\": [1, 1, 1], \"data\": [1]}",
             NODE("ConvTranspose", "[\"x\", \"w\"]", "\"kernel_shape\": [2147483648], \"strides\": [2147483648], "
                  "\"dilations\": [2147483648]")),
           "n", MPX_E_LIMIT, "beyond mpx's limit");
    /* Pad, DepthToSpace (blocksize 2^32 made blocksize^2 wrap to 0: SIGFPE),
     * Resize (a float beyond int64 converted), Split, Range, Einsum (a second
     * "..." read past the dims array), LayerNormalization. */
    EXPECT(M("{\"name\": \"x\", \"shape\": [4]}", I64("p", "[2]", "[0, " BIG "]"),
             NODE("Pad", "[\"x\", \"p\"]", "")), "n", MPX_E_LIMIT, "overflow axis 0");
    EXPECT(M("{\"name\": \"x\", \"shape\": [1, 4, 2, 2]}", "", NODE("DepthToSpace", "[\"x\"]", "\"blocksize\": 4294967296")),
           "n", MPX_E_SHAPE, "blocksize 4294967296");
    EXPECT(M("{\"name\": \"x\", \"shape\": [1, 4, 2, 2]}", "", NODE("SpaceToDepth", "[\"x\"]", "\"blocksize\": 3037000500")),
           "n", MPX_E_SHAPE, "blocksize 3037000500");
    EXPECT(M("{\"name\": \"x\", \"shape\": [1, 1, 2, 2]}",
             "{\"name\": \"s\", \"type\": \"float32\", \"shape\": [4], \"data\": [1, 1, 3e38, 1]}",
             NODE("Resize", "[\"x\", \"\", \"s\"]", "")), "n", MPX_E_LIMIT, "scale 3e+38");
    EXPECT(M("{\"name\": \"x\", \"shape\": [1, 1, 2, 2]}", I64("s", "[4]", "[1, 1, -1, 2]"),
             NODE("Resize", "[\"x\", \"\", \"\", \"s\"]", "")), "n", MPX_E_SHAPE, "sizes[2] = -1 is not a length");
    EXPECT(M("{\"name\": \"x\", \"shape\": [4]}", "",
             "{\"name\": \"n\", \"op\": \"Split\", \"inputs\": [\"x\"], \"outputs\": [\"y\", \"z\"], "
             "\"attrs\": {\"split\": [" BIG ", 2]}}"), "n", MPX_E_SHAPE, "split sizes add up");
    EXPECT(M("", I64("a", "[]", "-9223372036854775808") "," I64("b", "[]", BIG) "," I64("d", "[]", "1"),
             NODE("Range", "[\"a\", \"b\", \"d\"]", "")), "n", MPX_E_LIMIT, "range too long");
    EXPECT(M("{\"name\": \"x\", \"shape\": [2, 2, 2, 2, 2]}", "", NODE("Einsum", "[\"x\"]", "\"equation\": \"......->\"")),
           "n", MPX_E_INVALID, "twice in one term");
    EXPECT(M("{\"name\": \"x\", \"shape\": [2, 3]}", "", NODE("LayerNormalization", "[\"x\"]", "\"stash_type\": 99")),
           "n", MPX_E_INVALID, "stash_type 99");
    /* A dim beyond the limit beside a 0 or an unknown dim is refused at load. */
    EXPECT(M("{\"name\": \"x\", \"shape\": [0, 3000000000]}", "", NODE("Relu", "[\"x\"]", "")), NULL, MPX_E_LIMIT,
           "dim 1 is 3000000000");
    EXPECT(M("{\"name\": \"x\", \"shape\": [\"N\", " BIG "]}", "", NODE("Relu", "[\"x\"]", "")), NULL, MPX_E_LIMIT,
           "dim 1 is " BIG);

    /* Folding an empty Gather took products of the other dims (2^93). Now the
     * empty result is folded without computing anything. */
    const char *gather = M("", I64("X", "[2, 0, 2147483648, 2147483648, 2147483648]", "[]") "," I64("i", "[0]", "[]"),
                           NODE("Gather", "[\"X\", \"i\"]", "\"axis\": 1"));
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(gather, strlen(gather), "known.json", tmp, &err);
    CHECK_MSG(g && mpx_graph_infer(g, &err) == MPX_OK, "%s", msg());
    const mpx_tensor *y = g ? mpx_graph_find_tensor(g, "y") : NULL;
    CHECK(y && y->rank == 5 && y->nelem == 0 && y->i64 && (y->flags & MPX_T_FOLDED));
    if (g) check_graph(g);
    mpx_graph_free(g);

    /* The side-file message added an offset of INT64_MAX (signed overflow). */
    char side[900];
    snprintf(side, sizeof side, "%s/four.bin", tmp);
    FILE *f = fopen(side, "wb");
    if (f) {
        fputs("abcd", f);
        fclose(f);
    }
    EXPECT(M("", "{\"name\": \"w\", \"type\": \"float32\", \"shape\": [1], \"file\": "
                 "{\"path\": \"four.bin\", \"offset\": " BIG "}}", NODE("Relu", "[\"w\"]", "")),
           NULL, MPX_E_INVALID, "has 4 bytes; offset " BIG);

    /* An ONNX initializer claiming 2^31 floats with 4 bytes of data: the
     * value (8 GiB, zeroed) was allocated before the length was checked. */
    Onnx__ModelProto m;
    Onnx__GraphProto gp;
    Onnx__TensorProto t;
    Onnx__OperatorSetIdProto op;
    Onnx__ValueInfoProto out;
    onnx__model_proto__init(&m);
    onnx__graph_proto__init(&gp);
    onnx__tensor_proto__init(&t);
    onnx__operator_set_id_proto__init(&op);
    onnx__value_info_proto__init(&out);
    int64_t dim = (int64_t)1 << 31;
    uint8_t four[4] = {0};
    t.name = "w";
    t.has_data_type = 1;
    t.data_type = 1;
    t.n_dims = 1;
    t.dims = &dim;
    t.has_raw_data = 1;
    t.raw_data.len = 4;
    t.raw_data.data = four;
    op.has_version = 1;
    op.version = 13;
    out.name = "w";
    Onnx__TensorProto *tp = &t;
    Onnx__OperatorSetIdProto *opp = &op;
    Onnx__ValueInfoProto *outp = &out;
    gp.n_initializer = 1;
    gp.initializer = &tp;
    gp.n_output = 1;
    gp.output = &outp;
    m.graph = &gp;
    m.n_opset_import = 1;
    m.opset_import = &opp;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(n);
    if (!buf) abort();
    onnx__model_proto__pack(&m, buf);
    double t0 = now();
    mpx_error_clear(&err);
    g = mpx_graph_load_onnx_buffer(buf, n, "claims.onnx", tmp, &err);
    double dt = now() - t0;
    CHECK_MSG(g == NULL && err.status == MPX_E_INVALID, "%s", msg());
    CHECK_CONTAINS(msg(), "claims.onnx: initializer \"w\": raw_data has 4 bytes");
    CHECK_MSG(dt < 2.0, "refusing took %.2f s: was the value allocated first?", dt);
    mpx_graph_free(g);
    free(buf);
}

/* Sizes a hand-written or generated model can reach cheaply must not make
 * loading quadratic: 10000 nodes sharing one name (took minutes), fanning out
 * of one tensor, all read by one Sum, and a node with 10000 attributes. CPU
 * time, not wall time, so a busy machine does not fail it. */
static void test_big(void) {
    enum { N = 10000 };
    size_t cap = (size_t)N * 160 + 4096, n = 0;
    char *s = malloc(cap);
    if (!s) abort();
#define PUT(...) (n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__))
    PUT("{\"format\": \"mpx-model\", \"inputs\": [{\"name\": \"x\", \"shape\": [2]}], "
        "\"outputs\": [{\"name\": \"y\"}, {\"name\": \"z\"}], \"nodes\": [");
    for (int i = 0; i < N; i++)
        PUT("{\"name\": \"a\", \"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"r%d\"]},", i);
    PUT("{\"op\": \"Sum\", \"inputs\": [");
    for (int i = 0; i < N; i++) PUT("\"r%d\"%s", i, i + 1 < N ? ", " : "");
    PUT("], \"outputs\": [\"y\"]}, {\"op\": \"Relu\", \"inputs\": [\"x\"], \"outputs\": [\"z\"], \"attrs\": {");
    for (int i = 0; i < N; i++) PUT("\"a%d\": %d%s", i, i, i + 1 < N ? ", " : "");
    PUT("}}]}");
#undef PUT
    clock_t t0 = clock();
    mpx_error_clear(&err);
    mpx_graph *g = mpx_graph_load_json_text(s, n, "big.json", tmp, &err);
    CHECK_MSG(g && mpx_graph_infer(g, &err) == MPX_OK, "%s", msg());
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK_MSG(cpu < 3.0, "a %zu-byte model took %.2f s of CPU to load and infer", n, cpu);
    if (g) {
        CHECK(g->n_nodes == N + 2 && mpx_graph_find_node(g, "a#10000") && !mpx_graph_find_node(g, "a#10001"));
        const mpx_tensor *x = mpx_graph_find_tensor(g, "x");
        CHECK(x && x->n_consumers == N + 1);
        const mpx_node *sum = g->nodes[g->n_nodes - 1]->op == MPX_OP_Sum ? g->nodes[g->n_nodes - 1]
                                                                          : g->nodes[g->n_nodes - 2];
        CHECK(sum->op == MPX_OP_Sum && sum->cost.in_elems == 2 * N);
    }
    printf("big: a %zu-byte model loaded and inferred in %.2f s of CPU\n", n, cpu);
    mpx_graph_free(g);
    free(s);
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (s) {
        *n = fread(s, 1, (size_t)sz, f);
        s[*n] = '\0';
    }
    fclose(f);
    return s;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef void case_fn(int i, bool keep);
static void json_tiny_case(int i, bool keep) { json_case(2, i, keep); }
static void json_chain_case(int i, bool keep) { json_case(3, i, keep); }

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    const char *t = getenv("MPX_TMP"), *src = getenv("MPX_SRC");
    snprintf(tmp, sizeof tmp, "%s", t && *t ? t : "/tmp/mpx_test_robust");
    mkdir(tmp, 0777);
    char path[700];
    snprintf(path, sizeof path, "%s/examples/tiny_cnn.json", src && *src ? src : ".");
    tiny_cnn = read_file(path, &tiny_cnn_len);
    if (!tiny_cnn) {
        fprintf(stderr, "cannot read %s (set MPX_SRC)\n", path);
        return 1;
    }
    const char *it = getenv("MPX_ROBUST_ITERS"), *sd = getenv("MPX_ROBUST_SEED"),
               *one = getenv("MPX_ROBUST_CASE");
    int iters = it && *it ? atoi(it) : 800;
    uint64_t base = sd && *sd ? strtoull(sd, NULL, 0) : 1;
    trace = getenv("MPX_ROBUST_TRACE") ? atoi(getenv("MPX_ROBUST_TRACE")) : 0;

    static case_fn *const fam[4] = {onnx_gen_case, onnx_bytes_case, json_tiny_case, json_chain_case};
    static const char *const fam_name[4] = {"onnx-gen", "onnx-bytes", "json-tiny", "json-chain"};
    char label[64];
    if (one && *one) {
        int f = atoi(one), i = strchr(one, ':') ? atoi(strchr(one, ':') + 1) : 0;
        if (f < 0 || f > 3) return 2;
        snprintf(label, sizeof label, "%s:%d", fam_name[f], i);
        cur_case = label;
        mpx_rng_init(&R, case_seed(base, f, i));
        fam[f](i, true);
        fprintf(stderr, "%s: %s\n", label, err.status == MPX_OK ? "ok" : msg());
        return check_report("test_robust");
    }

    bases_are_good();
    test_known();
    test_big();
    double t0 = now();
    for (int f = 0; f < 4; f++) {
        double tf = now();
        int loaded0 = n_loaded, refused0 = n_refused, ok0 = n_inferred_ok;
        /* tiny_cnn's seeded weights make its cases ten times dearer than the others. */
        int count = f == 2 ? (iters + 1) / 2 : iters;
        for (int i = 0; i < count; i++) {
            snprintf(label, sizeof label, "%s:%d", fam_name[f], i);
            cur_case = label;
            if (trace == 1) fprintf(stderr, "case %d:%d\n", f, i);
            mpx_rng_init(&R, case_seed(base, f, i));
            double tc = now();
            fam[f](i, false);
            if (trace && now() - tc > 0.02) fprintf(stderr, "slow case %d:%d: %.3f s\n", f, i, now() - tc);
        }
        printf("%s: %d cases, %d loaded (%d inferred cleanly), %d refused, %.2f s\n", fam_name[f], count,
               n_loaded - loaded0, n_inferred_ok - ok0, n_refused - refused0, now() - tf);
    }
    onnx_every_prefix(base);
    json_every_prefix();
    printf("total %.2f s\n", now() - t0);
    pool_free();
    free(pool);
    free(tiny_cnn);
    return check_report("test_robust");
}
