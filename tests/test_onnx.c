/* test_onnx.c - the ONNX loader: models built here with the generated
 * protobuf-c structs, packed, written to $MPX_TMP and loaded. Covers every
 * initializer encoding (exact values), Constant nodes, attributes of every
 * kind, opsets, declared and symbolic shapes, external data and its
 * refusals, and bad files, each refusal naming the file and the offender. */
#include "check.h"
#include "test_alloc.h"
#include "mpx_graph.h"
#include "mpx_numerics.h"
#include "onnx.pb-c.h"
#include "onnx_walk.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static mpx_error err;
static char tmp[600];  /* $MPX_TMP/onnx */
static char msgbuf[2048];

static const char *msg(void) { return mpx_error_format(&err, msgbuf, sizeof msgbuf); }

/* Allocations of the test models: tests/test_alloc.h (tal, tstr, pool_free). */

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
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* ---- building models --------------------------------------------------------- */

static Onnx__TensorProto *tensor(const char *name, int dt, int nd, const int64_t *dims) {
    Onnx__TensorProto *t = tal(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = tstr(name);
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)nd;
    t->dims = tal((size_t)nd * sizeof(int64_t));
    if (nd) memcpy(t->dims, dims, (size_t)nd * sizeof(int64_t));
    return t;
}

/* n values of es bytes each, little-endian, into raw_data. */
static void raw_le(Onnx__TensorProto *t, const uint64_t *v, size_t n, size_t es) {
    t->has_raw_data = 1;
    t->raw_data.len = n * es;
    t->raw_data.data = tal(n * es);
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++) t->raw_data.data[i * es + b] = (uint8_t)(v[i] >> (8 * b));
}

static uint64_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t dbits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static void i32_data(Onnx__TensorProto *t, const int32_t *v, size_t n) {
    t->n_int32_data = n;
    t->int32_data = tal(n * sizeof *v);
    memcpy(t->int32_data, v, n * sizeof *v);
}

static void ext(Onnx__TensorProto *t, const char *loc, const char *off, const char *len) {
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->external_data = tal(3 * sizeof *t->external_data);
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {loc, off, len};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = tal(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = tstr(keys[i]);
        e->value = tstr(vals[i]);
        t->external_data[t->n_external_data++] = e;
    }
}

/* Comma-separated names; an empty entry is an omitted optional input. */
static char **names(const char *csv, size_t *n) {
    *n = 0;
    if (!csv) return NULL;
    char **v = tal(16 * sizeof *v);
    const char *p = csv;
    for (;;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        char *s = tal(len + 1);
        memcpy(s, p, len);
        v[(*n)++] = s;
        if (!q) break;
        p = q + 1;
    }
    return v;
}

static Onnx__NodeProto *node(const char *op, const char *name, const char *ins, const char *outs) {
    Onnx__NodeProto *n = tal(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = tstr(op);
    if (name) n->name = tstr(name);
    n->input = names(ins, &n->n_input);
    n->output = names(outs, &n->n_output);
    n->attribute = tal(32 * sizeof *n->attribute);
    return n;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name, int type) {
    Onnx__AttributeProto *a = tal(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = tstr(name);
    if (type >= 0) {
        a->has_type = 1;
        a->type = (Onnx__AttributeProto__AttributeType)type;
    }
    n->attribute[n->n_attribute++] = a;
    return a;
}

/* dims like "N,3,?,7": numbers are fixed, "?" anonymous, others symbolic;
 * NULL: no shape (rank unknown). */
static Onnx__ValueInfoProto *vinfo(const char *name, int elem, const char *dims) {
    Onnx__ValueInfoProto *v = tal(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = tstr(name);
    Onnx__TypeProto *tp = tal(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = tal(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    if (!dims) return v;
    Onnx__TensorShapeProto *sh = tal(sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    tt->shape = sh;
    size_t n;
    char **d = names(*dims ? dims : NULL, &n);
    sh->dim = tal((n ? n : 1) * sizeof *sh->dim);
    sh->n_dim = n;
    for (size_t i = 0; i < n; i++) {
        Onnx__TensorShapeProto__Dimension *x = tal(sizeof *x);
        onnx__tensor_shape_proto__dimension__init(x);
        char *end;
        long long val = strtoll(d[i], &end, 10);
        if (strcmp(d[i], "?") == 0) {
        } else if (*d[i] && !*end) {
            x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            x->dim_value = val;
        } else {
            x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            x->dim_param = d[i];
        }
        sh->dim[i] = x;
    }
    return v;
}

typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__NodeProto *nodes[64];
    Onnx__TensorProto *inits[64];
    Onnx__ValueInfoProto *ins[16], *outs[16], *vis[16];
    Onnx__OperatorSetIdProto *ops[4];
} model;

static void add_opset(model *md, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = tal(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = tstr(domain);
    o->has_version = 1;
    o->version = version;
    md->ops[md->m.n_opset_import++] = o;
}

/* x (float, 2) -> Identity -> y, default opset (0: none imported). */
static model *model_new(int opset) {
    model *md = tal(sizeof *md);
    onnx__model_proto__init(&md->m);
    onnx__graph_proto__init(&md->g);
    md->m.has_ir_version = 1;
    md->m.ir_version = 8;
    md->m.producer_name = tstr("test");
    md->m.producer_version = tstr("1.0");
    md->m.graph = &md->g;
    md->m.opset_import = md->ops;
    md->g.name = tstr("g0");
    md->g.node = md->nodes;
    md->g.initializer = md->inits;
    md->g.input = md->ins;
    md->g.output = md->outs;
    md->g.value_info = md->vis;
    if (opset > 0) add_opset(md, "", opset);
    return md;
}

static void add_node(model *md, Onnx__NodeProto *n) { md->nodes[md->g.n_node++] = n; }
static void add_init(model *md, Onnx__TensorProto *t) { md->inits[md->g.n_initializer++] = t; }
static void add_in(model *md, Onnx__ValueInfoProto *v) { md->ins[md->g.n_input++] = v; }
static void add_out(model *md, Onnx__ValueInfoProto *v) { md->outs[md->g.n_output++] = v; }
static void add_vi(model *md, Onnx__ValueInfoProto *v) { md->vis[md->g.n_value_info++] = v; }

/* The usual frame: input x (float 2), Identity, output y. */
static model *model_xy(int opset) {
    model *md = model_new(opset);
    add_in(md, vinfo("x", 1, "2"));
    add_out(md, vinfo("y", 1, "2"));
    add_node(md, node("Identity", "id", "x", "y"));
    return md;
}

static uint8_t *pack(model *md, size_t *n) {
    *n = onnx__model_proto__get_packed_size(&md->m);
    uint8_t *buf = tal(*n);
    onnx__model_proto__pack(&md->m, buf);
    return buf;
}

/* Write md as dir/file and load it from there. */
static mpx_graph *load_in(model *md, const char *dir, const char *file) {
    size_t n;
    uint8_t *buf = pack(md, &n);
    const char *p = path_in(dir, file);
    write_file(p, buf, n);
    mpx_error_clear(&err);
    return mpx_graph_load_onnx(p, &err);
}

static mpx_graph *load(model *md, const char *file) { return load_in(md, tmp, file); }

/* Loading must fail with st, the message naming the file and each needle. */
static void expect_fail_(int line, mpx_graph *g, mpx_status st, const char *file,
                         const char *n1, const char *n2) {
    CHECK_MSG(g == NULL, "line %d: accepted", line);
    mpx_graph_free(g);
    if (getenv("MPX_TEST_VERBOSE")) fprintf(stderr, "line %d: %s\n", line, msg());
    CHECK_MSG(err.status == st, "line %d: status %s, wanted %s (%s)", line,
              mpx_status_name(err.status), mpx_status_name(st), msg());
    CHECK_MSG(strstr(err.file, file) != NULL, "line %d: file \"%s\" lacks \"%s\"", line, err.file,
              file);
    CHECK_MSG(strstr(msg(), file) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), file);
    if (n1) CHECK_MSG(strstr(msg(), n1) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), n1);
    if (n2) CHECK_MSG(strstr(msg(), n2) != NULL, "line %d: \"%s\" lacks \"%s\"", line, msg(), n2);
}
#define EXPECT_FAIL(g, st, file, n1, n2) expect_fail_(__LINE__, g, st, file, n1, n2)

static mpx_tensor *T(mpx_graph *g, const char *name) {
    mpx_tensor *t = mpx_graph_find_tensor(g, name);
    CHECK_MSG(t != NULL, "no tensor %s", name);
    return t;
}

static bool same_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- initializer encodings --------------------------------------------------- */

static void test_encodings(void) {
    model *md = model_xy(13);
    int64_t d1 = 1, d2 = 2, d3 = 3, d4 = 4, d22[2] = {2, 2}, d0 = 0;
    Onnx__TensorProto *t;

    t = tensor("f_raw", 1, 2, d22);
    uint64_t fr[4] = {fbits(1.5f), fbits(-2.25f), fbits(1e-45f), fbits(INFINITY)};
    raw_le(t, fr, 4, 4);
    add_init(md, t);

    t = tensor("f_data", 1, 1, &d3);
    t->n_float_data = 3;
    t->float_data = tal(3 * sizeof(float));
    t->float_data[0] = 0.1f;
    t->float_data[1] = -0.0f;
    t->float_data[2] = 3.0e38f;
    add_init(md, t);

    t = tensor("h_i32", 10, 1, &d4); /* fp16 bit patterns in int32_data */
    i32_data(t, (const int32_t[]){0x3c00, 0xc000, 0x0001, 0x7bff}, 4);
    add_init(md, t);
    t = tensor("h_raw", 10, 1, &d4);
    raw_le(t, (const uint64_t[]){0x3555, 0x8400, 0x7c00, 0xfe00}, 4, 2);
    add_init(md, t);
    t = tensor("bf_raw", 16, 1, &d3);
    raw_le(t, (const uint64_t[]){0x3f80, 0xc0a0, 0x0001}, 3, 2);
    add_init(md, t);
    t = tensor("bf_i32", 16, 1, &d1);
    i32_data(t, (const int32_t[]){0x4049}, 1);
    add_init(md, t);

    t = tensor("i64_raw", 7, 1, &d3);
    raw_le(t, (const uint64_t[]){(uint64_t)INT64_MIN, UINT64_MAX, (uint64_t)1 << 40}, 3, 8);
    add_init(md, t);
    t = tensor("i64_data", 7, 1, &d2);
    t->n_int64_data = 2;
    t->int64_data = tal(2 * sizeof(int64_t));
    t->int64_data[0] = INT64_MAX;
    t->int64_data[1] = -7;
    add_init(md, t);

    t = tensor("d_data", 11, 1, &d2);
    t->n_double_data = 2;
    t->double_data = tal(2 * sizeof(double));
    t->double_data[0] = 0.1;
    t->double_data[1] = -3.0;
    add_init(md, t);
    t = tensor("d_raw", 11, 1, &d1);
    raw_le(t, (const uint64_t[]){dbits(2.5)}, 1, 8);
    add_init(md, t);

    t = tensor("b_raw", 9, 1, &d3);
    raw_le(t, (const uint64_t[]){0, 1, 2}, 3, 1);
    add_init(md, t);
    t = tensor("b_i32", 9, 1, &d2);
    i32_data(t, (const int32_t[]){1, 0}, 2);
    add_init(md, t);
    t = tensor("i8_i32", 3, 1, &d3);
    i32_data(t, (const int32_t[]){-128, 127, -1}, 3);
    add_init(md, t);
    t = tensor("i8_raw", 3, 1, &d2);
    raw_le(t, (const uint64_t[]){0x80, 0x7f}, 2, 1);
    add_init(md, t);
    t = tensor("u8_raw", 2, 1, &d2);
    raw_le(t, (const uint64_t[]){255, 0}, 2, 1);
    add_init(md, t);
    t = tensor("u8_i32", 2, 1, &d1);
    i32_data(t, (const int32_t[]){200}, 1);
    add_init(md, t);
    t = tensor("i16_raw", 5, 1, &d2);
    raw_le(t, (const uint64_t[]){0x8000, 0x7fff}, 2, 2);
    add_init(md, t);
    t = tensor("u16_i32", 4, 1, &d1);
    i32_data(t, (const int32_t[]){65535}, 1);
    add_init(md, t);
    t = tensor("i32_raw", 6, 1, &d1);
    raw_le(t, (const uint64_t[]){(uint32_t)-5}, 1, 4);
    add_init(md, t);
    t = tensor("i32_data", 6, 1, &d2);
    i32_data(t, (const int32_t[]){7, INT32_MIN}, 2);
    add_init(md, t);
    t = tensor("u32_raw", 12, 1, &d1);
    raw_le(t, (const uint64_t[]){0xffffffffu}, 1, 4);
    add_init(md, t);
    t = tensor("u64_data", 13, 1, &d1);
    t->n_uint64_data = 1;
    t->uint64_data = tal(sizeof(uint64_t));
    t->uint64_data[0] = 12345;
    add_init(md, t);
    t = tensor("e4m3", 17, 1, &d4); /* 1.0, 448 (max), 2^-9 (min subnormal), NaN */
    raw_le(t, (const uint64_t[]){0x38, 0x7e, 0x01, 0xff}, 4, 1);
    add_init(md, t);
    t = tensor("e5m2", 19, 1, &d3); /* 1.0, -inf, -2^-16 */
    raw_le(t, (const uint64_t[]){0x3c, 0xfc, 0x81}, 3, 1);
    add_init(md, t);
    t = tensor("e4m3fnuz_i32", 18, 1, &d2); /* 1.0 (bias 8), NaN */
    i32_data(t, (const int32_t[]){0x40, 0x80}, 2);
    add_init(md, t);

    t = tensor("s", 8, 1, &d2);
    t->n_string_data = 2;
    t->string_data = tal(2 * sizeof *t->string_data);
    t->string_data[0] = (ProtobufCBinaryData){1, (uint8_t *)tstr("a")};
    t->string_data[1] = (ProtobufCBinaryData){2, (uint8_t *)tstr("bc")};
    add_init(md, t);
    add_init(md, tensor("empty", 1, 1, &d0));
    t = tensor("scalar", 1, 0, NULL);
    t->n_float_data = 1;
    t->float_data = tal(sizeof(float));
    t->float_data[0] = 4.0f;
    add_init(md, t);

    mpx_graph *g = load(md, "enc.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        mpx_tensor *x = T(g, "f_raw");
        CHECK(x->dtype == MPX_DT_FLOAT && x->rank == 2 && x->dims[0] == 2 && x->dims[1] == 2);
        CHECK(x->decl_rank == 2 && x->decl_dims[1] == 2 && x->nelem == 4);
        CHECK((x->flags & (MPX_T_INITIALIZER | MPX_T_CONSTANT)) ==
              (MPX_T_INITIALIZER | MPX_T_CONSTANT));
        CHECK(!(x->flags & MPX_T_INPUT) && x->i64 == NULL && x->f32 != NULL);
        CHECK(x->f32[0] == 1.5f && x->f32[1] == -2.25f && x->f32[2] == 1e-45f &&
              isinf(x->f32[3]) && x->f32[3] > 0);
        x = T(g, "f_data");
        CHECK(x->f32[0] == 0.1f && same_f32(x->f32[1], -0.0f) && x->f32[2] == 3.0e38f);
        x = T(g, "h_i32");
        CHECK(x->dtype == MPX_DT_FLOAT16 && x->f32);
        CHECK(x->f32[0] == 1.0f && x->f32[1] == -2.0f && x->f32[2] == ldexpf(1, -24) &&
              x->f32[3] == 65504.0f);
        x = T(g, "h_raw");
        CHECK(x->f32[0] == 0.333251953125f && x->f32[1] == -ldexpf(1, -14));
        CHECK(isinf(x->f32[2]) && isnan(x->f32[3]));
        x = T(g, "bf_raw");
        CHECK(x->dtype == MPX_DT_BFLOAT16 && x->f32[0] == 1.0f && x->f32[1] == -5.0f &&
              x->f32[2] == ldexpf(1, -133));
        CHECK(T(g, "bf_i32")->f32[0] == 3.140625f);
        x = T(g, "i64_raw");
        CHECK(x->i64 && x->f32 == NULL);
        CHECK(x->i64[0] == INT64_MIN && x->i64[1] == -1 && x->i64[2] == (int64_t)1 << 40);
        x = T(g, "i64_data");
        CHECK(x->i64[0] == INT64_MAX && x->i64[1] == -7);
        x = T(g, "d_data");
        CHECK(x->dtype == MPX_DT_DOUBLE && x->f64 && x->f64[0] == 0.1 && x->f64[1] == -3.0); /* held as float64 */
        CHECK(T(g, "d_raw")->f64 && T(g, "d_raw")->f64[0] == 2.5);
        x = T(g, "b_raw");
        CHECK(x->dtype == MPX_DT_BOOL && x->i64[0] == 0 && x->i64[1] == 1 && x->i64[2] == 1);
        x = T(g, "b_i32");
        CHECK(x->i64[0] == 1 && x->i64[1] == 0);
        x = T(g, "i8_i32");
        CHECK(x->i64[0] == -128 && x->i64[1] == 127 && x->i64[2] == -1);
        x = T(g, "i8_raw");
        CHECK(x->i64[0] == -128 && x->i64[1] == 127);
        x = T(g, "u8_raw");
        CHECK(x->i64[0] == 255 && x->i64[1] == 0);
        CHECK(T(g, "u8_i32")->i64[0] == 200);
        x = T(g, "i16_raw");
        CHECK(x->i64[0] == -32768 && x->i64[1] == 32767);
        CHECK(T(g, "u16_i32")->i64[0] == 65535);
        CHECK(T(g, "i32_raw")->i64[0] == -5);
        x = T(g, "i32_data");
        CHECK(x->i64[0] == 7 && x->i64[1] == INT32_MIN);
        CHECK(T(g, "u32_raw")->i64[0] == 4294967295LL);
        CHECK(T(g, "u64_data")->i64[0] == 12345);
        x = T(g, "e4m3");
        CHECK(x->f32[0] == 1.0f && x->f32[1] == 448.0f && x->f32[2] == ldexpf(1, -9) &&
              isnan(x->f32[3]));
        x = T(g, "e5m2");
        CHECK(x->f32[0] == 1.0f && isinf(x->f32[1]) && x->f32[1] < 0 &&
              x->f32[2] == -ldexpf(1, -16));
        x = T(g, "e4m3fnuz_i32");
        CHECK(x->f32[0] == 1.0f && isnan(x->f32[1]));
        x = T(g, "s");
        CHECK(x->dtype == MPX_DT_STRING && !x->f32 && !x->i64 && x->rank == 1 && x->dims[0] == 2);
        CHECK(x->flags & MPX_T_INITIALIZER);
        x = T(g, "empty");
        CHECK(x->nelem == 0 && x->rank == 1 && x->dims[0] == 0 && x->f32);
        x = T(g, "scalar");
        CHECK(x->rank == 0 && x->nelem == 1 && x->f32[0] == 4.0f);
        /* Only x is a model input; y the output. */
        CHECK(g->n_inputs == 1 && g->inputs[0] == T(g, "x"));
        CHECK(g->n_outputs == 1 && g->outputs[0] == T(g, "y"));
    }
    mpx_graph_free(g);
    pool_free();
}

/* ---- Constant nodes ------------------------------------------------------------- */

static void test_constants(void) {
    model *md = model_xy(13);
    int64_t d2 = 2, d22[2] = {2, 2};
    Onnx__NodeProto *n;
    Onnx__AttributeProto *a;

    n = node("Constant", "c_t", NULL, "ct");
    a = attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("ct_val", 1, 2, d22);
    raw_le(a->t, (const uint64_t[]){fbits(1), fbits(2), fbits(-3), fbits(0.5f)}, 4, 4);
    add_node(md, n);
    n = node("Constant", "c_t16", NULL, "ct16");
    a = attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("", 10, 1, &d2);
    i32_data(a->t, (const int32_t[]){0x3800, 0xbc00}, 2);
    add_node(md, n);
    n = node("Constant", "c_ti", NULL, "cti");
    a = attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("", 7, 0, NULL);
    a->t->n_int64_data = 1;
    a->t->int64_data = tal(sizeof(int64_t));
    a->t->int64_data[0] = -9;
    add_node(md, n);
    n = node("Constant", "c_f", NULL, "cf");
    a = attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = 2.5f;
    add_node(md, n);
    n = node("Constant", "c_fs", NULL, "cfs");
    a = attr(n, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 3;
    a->floats = tal(3 * sizeof(float));
    a->floats[0] = 1;
    a->floats[1] = 2;
    a->floats[2] = -0.25f;
    add_node(md, n);
    n = node("Constant", "c_i", NULL, "ci");
    a = attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = -4;
    add_node(md, n);
    n = node("Constant", "c_is", NULL, "cis");
    a = attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 2;
    a->ints = tal(2 * sizeof(int64_t));
    a->ints[0] = 5;
    a->ints[1] = (int64_t)1 << 50;
    add_node(md, n);
    n = node("Constant", "c_s", NULL, "cs");
    a = attr(n, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s = (ProtobufCBinaryData){2, (uint8_t *)tstr("hi")};
    add_node(md, n);
    n = node("Constant", "c_ss", NULL, "css");
    a = attr(n, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 1;
    a->strings = tal(sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){1, (uint8_t *)tstr("z")};
    add_node(md, n);
    add_node(md, node("Add", "add", "ct,ct", "sum"));

    mpx_graph *g = load(md, "const.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        mpx_tensor *x = T(g, "ct");
        CHECK(x->dtype == MPX_DT_FLOAT && x->rank == 2 && x->nelem == 4 && x->f32);
        CHECK(x->f32 && x->f32[0] == 1 && x->f32[2] == -3 && x->f32[3] == 0.5f);
        CHECK(x->flags & MPX_T_CONSTANT);
        CHECK(x->producer == mpx_graph_find_node(g, "c_t"));
        const mpx_attr *va = mpx_node_attr(mpx_graph_find_node(g, "c_t"), "value");
        CHECK(va && va->type == MPX_ATTR_TENSOR && va->t && va->t->index == -1);
        CHECK(va && va->t && strcmp(va->t->name, "ct_val") == 0 && va->t->f32[1] == 2);
        for (int i = 0; i < g->n_tensors; i++)
            CHECK(va == NULL || g->tensors[i] != va->t);
        x = T(g, "ct16");
        CHECK(x->dtype == MPX_DT_FLOAT16 && x->f32 && x->f32[0] == 0.5f && x->f32[1] == -1.0f);
        x = T(g, "cti");
        CHECK(x->dtype == MPX_DT_INT64 && x->rank == 0 && x->i64 && x->i64[0] == -9);
        x = T(g, "cf");
        CHECK(x->rank == 0 && x->f32 && x->f32[0] == 2.5f);
        x = T(g, "cfs");
        CHECK(x->rank == 1 && x->dims[0] == 3 && x->f32 && x->f32[2] == -0.25f);
        x = T(g, "ci");
        CHECK(x->rank == 0 && x->i64 && x->i64[0] == -4);
        x = T(g, "cis");
        CHECK(x->rank == 1 && x->i64 && x->i64[0] == 5 && x->i64[1] == (int64_t)1 << 50);
        CHECK(T(g, "cs")->dtype == MPX_DT_STRING && T(g, "css")->dtype == MPX_DT_STRING);
        CHECK(mpx_graph_param_count(g) >= 4 + 2 + 1 + 1 + 3 + 1 + 2);
        CHECK(T(g, "sum")->producer == mpx_graph_find_node(g, "add"));
    }
    mpx_graph_free(g);
    pool_free();
}

/* ---- attributes of every kind ------------------------------------------------ */

static Onnx__GraphProto *subgraph(const char *name, int nodes) {
    Onnx__GraphProto *sg = tal(sizeof *sg);
    onnx__graph_proto__init(sg);
    sg->name = tstr(name);
    sg->node = tal((size_t)nodes * sizeof *sg->node);
    for (int i = 0; i < nodes; i++) sg->node[sg->n_node++] = node("Relu", NULL, "a", "b");
    return sg;
}

static void test_attributes(void) {
    model *md = model_new(13);
    add_opset(md, "com.example", 2);
    add_in(md, vinfo("x", 1, "2"));
    add_out(md, vinfo("z", 1, NULL));
    Onnx__NodeProto *n = node("MyOp", "my", "x,,x", "z,");
    n->domain = tstr("com.example");
    Onnx__AttributeProto *a;
    int64_t d2 = 2;
    a = attr(n, "f", 1);
    a->has_f = 1;
    a->f = 0.25f;
    a = attr(n, "i", 2);
    a->has_i = 1;
    a->i = -3;
    a = attr(n, "s", 3);
    a->has_s = 1;
    a->s = (ProtobufCBinaryData){4, (uint8_t *)tstr("ab_c")};
    a->s.data[2] = 0; /* bytes, not a C string */
    a = attr(n, "t", 4);
    a->t = tensor("tv", 7, 1, &d2);
    raw_le(a->t, (const uint64_t[]){3, 4}, 2, 8);
    a = attr(n, "g", 5);
    a->g = subgraph("body", 2);
    a = attr(n, "fs", 6);
    a->n_floats = 2;
    a->floats = tal(2 * sizeof(float));
    a->floats[0] = 1.5f;
    a->floats[1] = -1;
    a = attr(n, "is", 7);
    a->n_ints = 3;
    a->ints = tal(3 * sizeof(int64_t));
    a->ints[0] = 1;
    a->ints[1] = INT64_MIN;
    a->ints[2] = 3;
    a = attr(n, "ss", 8);
    a->n_strings = 2;
    a->strings = tal(2 * sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){1, (uint8_t *)tstr("x")};
    a->strings[1] = (ProtobufCBinaryData){2, (uint8_t *)tstr("yz")};
    a = attr(n, "ts", 9);
    a->n_tensors = 2;
    a->tensors = tal(2 * sizeof *a->tensors);
    a->tensors[0] = tensor("t0", 1, 1, &d2);
    raw_le(a->tensors[0], (const uint64_t[]){fbits(7), fbits(8)}, 2, 4);
    a->tensors[1] = tensor("t1", 10, 0, NULL);
    i32_data(a->tensors[1], (const int32_t[]){0x4000}, 1);
    a = attr(n, "gs", 10);
    a->n_graphs = 2;
    a->graphs = tal(2 * sizeof *a->graphs);
    a->graphs[0] = subgraph("then", 1);
    a->graphs[1] = subgraph("else", 3);
    a = attr(n, "sp", 11);
    a->sparse_tensor = tal(sizeof *a->sparse_tensor);
    onnx__sparse_tensor_proto__init(a->sparse_tensor);
    a = attr(n, "sps", 12);
    a->n_sparse_tensors = 2;
    a->sparse_tensors = tal(2 * sizeof *a->sparse_tensors);
    for (int i = 0; i < 2; i++) {
        a->sparse_tensors[i] = tal(sizeof **a->sparse_tensors);
        onnx__sparse_tensor_proto__init(a->sparse_tensors[i]);
    }
    a = attr(n, "tp", 13);
    a->tp = vinfo("q", 1, "1")->type;
    a = attr(n, "tps", 14);
    a->n_type_protos = 3;
    a->type_protos = tal(3 * sizeof *a->type_protos);
    for (int i = 0; i < 3; i++) a->type_protos[i] = vinfo("q", 7, NULL)->type;
    a = attr(n, "untyped", -1); /* no type field: taken from the field set */
    a->has_i = 1;
    a->i = 42;
    a = attr(n, "untyped_fs", -1);
    a->n_floats = 1;
    a->floats = tal(sizeof(float));
    a->floats[0] = 9;
    add_node(md, n);

    mpx_graph *g = load(md, "attrs.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        mpx_node *m = mpx_graph_find_node(g, "my");
        CHECK(m && m->n_attrs == 16 && m->op == MPX_OP_UNKNOWN);
        CHECK(m && strcmp(m->domain, "com.example") == 0 && m->opset == 2);
        CHECK(m && m->n_inputs == 3 && m->inputs[1] == NULL && m->inputs[0] == m->inputs[2]);
        CHECK(m && m->n_outputs == 2 && m->outputs[1] == NULL);
        CHECK(mpx_node_attr_float(m, "f", 0) == 0.25f);
        CHECK(mpx_node_attr_int(m, "i", 0) == -3);
        const mpx_attr *at = mpx_node_attr(m, "s");
        CHECK(at && at->type == MPX_ATTR_STRING && at->s_len == 4 && memcmp(at->s, "ab\0c", 5) == 0);
        at = mpx_node_attr(m, "t");
        CHECK(at && at->type == MPX_ATTR_TENSOR && at->t && at->t->dtype == MPX_DT_INT64 &&
              at->t->rank == 1 && at->t->nelem == 2 && at->t->i64[1] == 4);
        at = mpx_node_attr(m, "g");
        CHECK(at && at->type == MPX_ATTR_GRAPH && strcmp(at->graph_name, "body") == 0 &&
              at->graph_nodes == 2);
        at = mpx_node_attr(m, "fs");
        CHECK(at && at->type == MPX_ATTR_FLOATS && at->n == 2 && at->floats[0] == 1.5f &&
              at->floats[1] == -1);
        const int64_t *iv;
        CHECK(mpx_node_attr_ints(m, "is", &iv) == 3 && iv[1] == INT64_MIN && iv[2] == 3);
        at = mpx_node_attr(m, "ss");
        CHECK(at && at->type == MPX_ATTR_STRINGS && at->n == 2 && strcmp(at->strings[1], "yz") == 0);
        at = mpx_node_attr(m, "ts");
        CHECK(at && at->type == MPX_ATTR_TENSORS && at->n == 2 && at->tensors[0]->f32[1] == 8 &&
              at->tensors[1]->dtype == MPX_DT_FLOAT16 && at->tensors[1]->f32[0] == 2.0f);
        at = mpx_node_attr(m, "gs");
        CHECK(at && at->type == MPX_ATTR_GRAPHS && at->n == 2 && at->graph_nodes == 4 &&
              strcmp(at->graph_name, "then") == 0);
        at = mpx_node_attr(m, "sp");
        CHECK(at && at->type == MPX_ATTR_SPARSE_TENSOR);
        at = mpx_node_attr(m, "sps");
        CHECK(at && at->type == MPX_ATTR_SPARSE_TENSORS && at->n == 2);
        at = mpx_node_attr(m, "tp");
        CHECK(at && at->type == MPX_ATTR_TYPE_PROTO);
        at = mpx_node_attr(m, "tps");
        CHECK(at && at->type == MPX_ATTR_TYPE_PROTOS && at->n == 3);
        at = mpx_node_attr(m, "untyped");
        CHECK(at && at->type == MPX_ATTR_INT && at->i == 42);
        at = mpx_node_attr(m, "untyped_fs");
        CHECK(at && at->type == MPX_ATTR_FLOATS && at->n == 1 && at->floats[0] == 9);
        CHECK(strcmp(g->name, "g0") == 0 && strcmp(g->producer, "test 1.0") == 0);
        CHECK(g->ir_version == 8 && g->opset == 13);
    }
    mpx_graph_free(g);
    pool_free();
}

/* ---- opsets ---------------------------------------------------------------------- */

static void test_opsets(void) {
    model *md = model_new(0);
    add_opset(md, "ai.onnx", 17);
    add_opset(md, "ai.onnx.ml", 3);
    add_in(md, vinfo("x", 1, "2"));
    add_out(md, vinfo("y", 1, "2"));
    add_node(md, node("Relu", "r", "x", "y"));
    Onnx__NodeProto *n = node("Relu", "r2", "x", "y2");
    n->domain = tstr("ai.onnx");
    add_node(md, n);
    n = node("Scaler", "ml", "x", "y3");
    n->domain = tstr("ai.onnx.ml");
    add_node(md, n);
    n = node("Foo", "foo", "x", "y4");
    n->domain = tstr("org.unimported");
    add_node(md, n);
    mpx_graph *g = load(md, "opset17.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        CHECK(g->opset == 17);
        CHECK(mpx_graph_find_node(g, "r")->opset == 17 && mpx_graph_find_node(g, "r")->op == MPX_OP_Relu);
        CHECK(mpx_graph_find_node(g, "r2")->opset == 17 && mpx_graph_find_node(g, "r2")->op == MPX_OP_Relu);
        CHECK(mpx_graph_find_node(g, "ml")->opset == 3 && mpx_graph_find_node(g, "ml")->op == MPX_OP_UNKNOWN);
        CHECK(mpx_graph_find_node(g, "foo")->opset == 0);
    }
    mpx_graph_free(g);
    pool_free();

    /* opsets 1-6 are read in opset 7's form (onnx_legacy.c; the forms
     * themselves: tests/opset_ort.sh) */
    md = model_xy(6);
    g = load(md, "opset6.onnx");
    CHECK_MSG(g && g->opset == 7 && g->opset_file == 6 && g->nodes[0]->opset == 7, "%s", msg());
    mpx_graph_free(g);
    pool_free();
    md = model_xy(7);
    g = load(md, "opset7.onnx");
    CHECK_MSG(g && g->opset == 7, "%s", msg());
    mpx_graph_free(g);
    pool_free();
    md = model_xy(0);
    add_opset(md, "com.microsoft", 1);
    EXPECT_FAIL(load(md, "noopset.onnx"), MPX_E_UNSUPPORTED, "noopset.onnx", "opset", NULL);
    pool_free();
}

/* ---- inputs, outputs, declared shapes ------------------------------------------- */

static void test_io(void) {
    model *md = model_new(13);
    int64_t d3 = 3;
    add_in(md, vinfo("X", 1, "p2o.DynamicDimension.0,3,?,-1"));
    add_in(md, vinfo("W", 1, "3"));
    add_in(md, vinfo("S", 7, NULL));
    Onnx__TensorProto *t = tensor("W", 1, 1, &d3);
    raw_le(t, (const uint64_t[]){fbits(1), fbits(2), fbits(3)}, 3, 4);
    add_init(md, t);
    add_node(md, node("Add", "add", "X,W", "mid"));
    add_node(md, node("Relu", "relu", "mid", "Y"));
    add_vi(md, vinfo("mid", 1, "batch,3,h,w"));
    add_out(md, vinfo("Y", 1, "batch,3,?,?"));
    add_out(md, vinfo("W", 1, "3"));

    mpx_graph *g = load(md, "io.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        mpx_tensor *x = T(g, "X"), *w = T(g, "W"), *s = T(g, "S");
        CHECK(g->n_inputs == 2 && g->inputs[0] == x && g->inputs[1] == s);
        CHECK(x->flags & MPX_T_INPUT);
        CHECK(!(w->flags & MPX_T_INPUT) && (w->flags & MPX_T_INITIALIZER) && w->f32[2] == 3);
        CHECK(g->n_outputs == 2 && g->outputs[0] == T(g, "Y") && g->outputs[1] == w);
        CHECK(T(g, "Y")->flags & MPX_T_OUTPUT);
        CHECK(x->dtype == MPX_DT_FLOAT && x->decl_rank == 4);
        CHECK(x->decl_dims[0] == -1 && x->decl_sym[0] &&
              strcmp(x->decl_sym[0], "p2o.DynamicDimension.0") == 0);
        CHECK(x->decl_dims[1] == 3 && x->decl_sym[1] == NULL);
        CHECK(x->decl_dims[2] == -1 && x->decl_sym[2] == NULL);
        CHECK(x->decl_dims[3] == -1 && x->decl_sym[3] == NULL);
        CHECK(x->rank == 4 && x->dims[0] == -1 && x->sym[0] && x->dims[1] == 3 && x->nelem == -1);
        CHECK(s->dtype == MPX_DT_INT64 && s->decl_rank == -1 && s->rank == -1);
        mpx_tensor *m = T(g, "mid");
        CHECK(m->decl_rank == 4 && m->decl_sym[3] && strcmp(m->decl_sym[3], "w") == 0);
        CHECK(T(g, "Y")->decl_rank == 4 && strcmp(T(g, "Y")->decl_sym[0], "batch") == 0);
    }
    mpx_graph_free(g);
    pool_free();

    /* Through mpx_graph_load (dispatch by extension). */
    md = model_xy(13);
    size_t n;
    uint8_t *buf = pack(md, &n);
    write_file(path_in(tmp, "UPPER.ONNX"), buf, n);
    mpx_error_clear(&err);
    g = mpx_graph_load(path_in(tmp, "UPPER.ONNX"), &err);
    CHECK_MSG(g != NULL && g->n_nodes == 1, "%s", msg());
    mpx_graph_free(g);
    write_file(path_in(tmp, "model.bin"), buf, n);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load(path_in(tmp, "model.bin"), &err), MPX_E_ARG, "model.bin", ".onnx",
                NULL);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load(path_in(tmp, "absent.json"), &err), MPX_E_IO, "absent.json", NULL,
                NULL);
    /* In memory, with no folder. */
    mpx_error_clear(&err);
    g = mpx_graph_load_onnx_buffer(buf, n, "mem.onnx", NULL, &err);
    CHECK_MSG(g != NULL && strcmp(g->path, "mem.onnx") == 0, "%s", msg());
    mpx_graph_free(g);
    pool_free();
}

/* ---- external data ------------------------------------------------------------- */

static model *ext_model(const char *loc, const char *off, const char *len, int64_t dim) {
    model *md = model_xy(13);
    Onnx__TensorProto *t = tensor("w_ext", 1, 1, &dim);
    ext(t, loc, off, len);
    add_init(md, t);
    return md;
}

static void test_external(void) {
    char dir[700], outside[700];
    snprintf(dir, sizeof dir, "%s/ext", tmp);
    mkdir(dir, 0755);
    /* 16 bytes of padding, 3 floats, 2 int64. */
    uint8_t data[16 + 12 + 16];
    for (int i = 0; i < 16; i++) data[i] = 0xee;
    float fv[3] = {0.5f, -1.25f, 1e20f};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++) data[16 + 4 * i + b] = (uint8_t)(fbits(fv[i]) >> (8 * b));
    int64_t iv[2] = {-2, (int64_t)1 << 33};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 8; b++) data[28 + 8 * i + b] = (uint8_t)((uint64_t)iv[i] >> (8 * b));
    write_file(path_in(dir, "w.bin"), data, sizeof data);
    snprintf(outside, sizeof outside, "%s/outside.bin", tmp);
    write_file(outside, data, sizeof data);
    unlink(path_in(dir, "escape.bin"));
    CHECK(symlink("../outside.bin", path_in(dir, "escape.bin")) == 0);
    unlink(path_in(dir, "inner.bin"));
    CHECK(symlink("w.bin", path_in(dir, "inner.bin")) == 0);
    mkdir(path_in(dir, "sub"), 0755);

    int64_t d3 = 3, d2 = 2;
    model *md = model_xy(13);
    Onnx__TensorProto *t = tensor("ew", 1, 1, &d3);
    ext(t, "w.bin", "16", "12");
    add_init(md, t);
    t = tensor("ei", 7, 1, &d2);
    ext(t, "./sub/../w.bin", "28", NULL);
    add_init(md, t);
    t = tensor("el", 1, 1, &d2);
    ext(t, "inner.bin", NULL, "8"); /* symlink that stays inside */
    add_init(md, t);
    mpx_graph *g = load_in(md, dir, "good.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        mpx_tensor *x = T(g, "ew");
        CHECK(x->f32 && x->f32[0] == 0.5f && x->f32[1] == -1.25f && x->f32[2] == 1e20f);
        CHECK(x->flags & MPX_T_INITIALIZER);
        x = T(g, "ei");
        CHECK(x->i64 && x->i64[0] == -2 && x->i64[1] == (int64_t)1 << 33);
        x = T(g, "el");
        float pad;
        uint32_t pb = 0xeeeeeeeeu;
        memcpy(&pad, &pb, sizeof pad);
        CHECK(x->f32 && same_f32(x->f32[0], pad) && same_f32(x->f32[1], pad));
    }
    mpx_graph_free(g);
    pool_free();

    EXPECT_FAIL(load_in(ext_model("nope.bin", NULL, NULL, 3), dir, "missing.onnx"), MPX_E_IO,
                "missing.onnx", "w_ext", "nope.bin");
    EXPECT_FAIL(load_in(ext_model("w.bin", "16", NULL, 100), dir, "short.onnx"), MPX_E_IO,
                "short.onnx", "w_ext", "w.bin");
    EXPECT_FAIL(load_in(ext_model("w.bin", "40", "12", 3), dir, "short2.onnx"), MPX_E_IO,
                "short2.onnx", "w_ext", "too short");
    EXPECT_FAIL(load_in(ext_model("../outside.bin", NULL, NULL, 3), dir, "dotdot.onnx"),
                MPX_E_INVALID, "dotdot.onnx", "w_ext", "../outside.bin");
    CHECK_CONTAINS(msg(), "outside the model's folder");
    EXPECT_FAIL(load_in(ext_model("sub/../../outside.bin", NULL, NULL, 3), dir, "dotdot2.onnx"),
                MPX_E_INVALID, "dotdot2.onnx", "w_ext", "outside");
    char abs[900];
    snprintf(abs, sizeof abs, "%s/w.bin", dir);
    EXPECT_FAIL(load_in(ext_model(abs, NULL, NULL, 3), dir, "abs.onnx"), MPX_E_INVALID,
                "abs.onnx", "w_ext", "absolute");
    CHECK_CONTAINS(msg(), abs);
    EXPECT_FAIL(load_in(ext_model("escape.bin", NULL, NULL, 3), dir, "link.onnx"), MPX_E_INVALID,
                "link.onnx", "w_ext", "escape.bin");
    CHECK_CONTAINS(msg(), "outside the model's folder");
    EXPECT_FAIL(load_in(ext_model("w.bin", "16", "8", 3), dir, "len.onnx"), MPX_E_INVALID,
                "len.onnx", "w_ext", "length 8");
    CHECK_CONTAINS(msg(), "w.bin");
    EXPECT_FAIL(load_in(ext_model("w.bin", "-4", NULL, 3), dir, "off.onnx"), MPX_E_INVALID,
                "off.onnx", "w_ext", "offset");
    EXPECT_FAIL(load_in(ext_model("sub", NULL, NULL, 3), dir, "isdir.onnx"), MPX_E_IO,
                "isdir.onnx", "w_ext", "regular file");
    /* From memory there is no folder to read from. */
    md = ext_model("w.bin", "16", NULL, 3);
    size_t n;
    uint8_t *buf = pack(md, &n);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx_buffer(buf, n, "mem.onnx", NULL, &err), MPX_E_UNSUPPORTED,
                "mem.onnx", "w_ext", "w.bin");
    pool_free();
}

/* ---- bad files and bad graphs ---------------------------------------------- */

static model *model_with_weight(void) {
    model *md = model_xy(13);
    int64_t d = 64;
    Onnx__TensorProto *t = tensor("w", 1, 1, &d);
    uint64_t v[64];
    for (int i = 0; i < 64; i++) v[i] = fbits((float)i);
    raw_le(t, v, 64, 4);
    add_init(md, t);
    return md;
}

static void test_bad_files(void) {
    model *md = model_with_weight();
    size_t n;
    uint8_t *buf = pack(md, &n);
    write_file(path_in(tmp, "half.onnx"), buf, n / 2);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx(path_in(tmp, "half.onnx"), &err), MPX_E_PARSE, "half.onnx",
                "not an ONNX model", NULL);
    /* A folder gets one answer whatever its name ends in. */
    const char *dirs[3] = {"dir.onnx", "dir.json", "dir"};
    for (int i = 0; i < 3; i++) {
        mkdir(path_in(tmp, dirs[i]), 0755);
        mpx_error_clear(&err);
        EXPECT_FAIL(mpx_graph_load(path_in(tmp, dirs[i]), &err), MPX_E_IO, dirs[i], "a folder, not a model file", NULL);
    }

    /* Every prefix and every single-byte corruption: an error or a graph,
     * never a crash (ASan/UBSan builds check the "never"). */
    int loaded = 0;
    for (size_t k = 0; k < n; k++) {
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_onnx_buffer(buf, k, "prefix.onnx", tmp, &err);
        CHECK_MSG(g != NULL || (err.status != MPX_OK && strcmp(err.file, "prefix.onnx") == 0),
                  "prefix %zu: no error", k);
        loaded += g != NULL;
        mpx_graph_free(g);
    }
    /* A prefix that ends on a field boundary is a valid, smaller model; but a
     * loader that took every prefix would not be checking anything. */
    CHECK_MSG(loaded < (int)n / 2, "%d of %zu prefixes loaded", loaded, n);
    uint8_t *copy = tal(n);
    for (size_t k = 0; k < n; k++) {
        for (int flip = 1; flip < 256; flip <<= 2) {
            memcpy(copy, buf, n);
            copy[k] = (uint8_t)(copy[k] ^ flip);
            mpx_error_clear(&err);
            mpx_graph *g = mpx_graph_load_onnx_buffer(copy, n, "flip.onnx", tmp, &err);
            CHECK_MSG(g != NULL || err.status != MPX_OK, "flip at %zu: no error", k);
            mpx_graph_free(g);
        }
    }

    uint8_t rnd[4096];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 64; round++) {
        size_t len = (size_t)(round * 61 % 4096) + 1;
        for (size_t i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            rnd[i] = (uint8_t)(s >> 56);
        }
        mpx_error_clear(&err);
        mpx_graph *g = mpx_graph_load_onnx_buffer(rnd, len, "rnd.onnx", tmp, &err);
        CHECK_MSG(g == NULL && err.status == MPX_E_PARSE, "random round %d: %s", round, msg());
        mpx_graph_free(g);
    }
    write_file(path_in(tmp, "random.onnx"), rnd, 1000);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx(path_in(tmp, "random.onnx"), &err), MPX_E_PARSE,
                "random.onnx", NULL, NULL);

    write_file(path_in(tmp, "empty.onnx"), "", 0);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx(path_in(tmp, "empty.onnx"), &err), MPX_E_PARSE, "empty.onnx",
                "empty", NULL);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx(path_in(tmp, "not-there.onnx"), &err), MPX_E_IO,
                "not-there.onnx", "cannot open", NULL);
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx(tmp, &err), MPX_E_IO, tmp, "regular", NULL);
    /* A valid protobuf that is not a model (no graph). */
    static const uint8_t notmodel[] = {0x08, 0x07};
    mpx_error_clear(&err);
    EXPECT_FAIL(mpx_graph_load_onnx_buffer(notmodel, sizeof notmodel, "nograph.onnx", tmp, &err),
                MPX_E_PARSE, "nograph.onnx", "no graph", NULL);
    pool_free();
}

static void test_bad_graphs(void) {
    model *md = model_xy(13);
    add_node(md, node("Add", "adder", "x,ghost", "z"));
    EXPECT_FAIL(load(md, "dangling.onnx"), MPX_E_INVALID, "dangling.onnx", "ghost", "adder");
    pool_free();

    md = model_xy(13);
    add_node(md, node("Relu", "ra", "b", "a"));
    add_node(md, node("Relu", "rb", "a", "b"));
    EXPECT_FAIL(load(md, "cycle.onnx"), MPX_E_INVALID, "cycle.onnx", "cycle", "ra");
    pool_free();

    md = model_xy(13);
    add_node(md, node("Relu", "second", "x", "y"));
    EXPECT_FAIL(load(md, "twoprod.onnx"), MPX_E_INVALID, "twoprod.onnx", "two nodes", "second");
    pool_free();

    int64_t d4 = 4, d3 = 3;
    md = model_xy(13);
    Onnx__TensorProto *t = tensor("w_bad", 1, 1, &d4);
    raw_le(t, (const uint64_t[]){0, 0, 0}, 3, 4);
    add_init(md, t);
    EXPECT_FAIL(load(md, "rawlen.onnx"), MPX_E_INVALID, "rawlen.onnx", "w_bad", "12 bytes");
    pool_free();

    md = model_xy(13);
    t = tensor("w_few", 1, 1, &d4);
    t->n_float_data = 3;
    t->float_data = tal(3 * sizeof(float));
    add_init(md, t);
    EXPECT_FAIL(load(md, "fewfloats.onnx"), MPX_E_INVALID, "fewfloats.onnx", "w_few", "float_data");
    pool_free();

    md = model_xy(13);
    t = tensor("w_i32", 10, 1, &d3);
    i32_data(t, (const int32_t[]){1, 2, 3, 4}, 4);
    add_init(md, t);
    EXPECT_FAIL(load(md, "manyhalves.onnx"), MPX_E_INVALID, "manyhalves.onnx", "w_i32", "int32_data");
    pool_free();

    md = model_xy(13);
    add_init(md, tensor("w_nodata", 7, 1, &d3));
    EXPECT_FAIL(load(md, "nodata.onnx"), MPX_E_INVALID, "nodata.onnx", "w_nodata", NULL);
    pool_free();

    int64_t huge[3] = {(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40};
    md = model_xy(13);
    add_init(md, tensor("w_overflow", 1, 3, huge));
    EXPECT_FAIL(load(md, "overflow.onnx"), MPX_E_LIMIT, "overflow.onnx", "w_overflow", NULL);
    pool_free();

    int64_t big[2] = {(int64_t)1 << 16, ((int64_t)1 << 15) + 1};
    md = model_xy(13);
    add_init(md, tensor("w_big", 1, 2, big));
    EXPECT_FAIL(load(md, "big.onnx"), MPX_E_LIMIT, "big.onnx", "w_big", NULL);
    pool_free();

    int64_t neg[2] = {2, -3};
    md = model_xy(13);
    add_init(md, tensor("w_neg", 1, 2, neg));
    EXPECT_FAIL(load(md, "neg.onnx"), MPX_E_INVALID, "neg.onnx", "w_neg", "-3");
    pool_free();

    int64_t r9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    md = model_xy(13);
    t = tensor("w_rank9", 1, 9, r9);
    raw_le(t, (const uint64_t[]){0}, 1, 4);
    add_init(md, t);
    EXPECT_FAIL(load(md, "rank9.onnx"), MPX_E_UNSUPPORTED, "rank9.onnx", "w_rank9", "rank 9");
    pool_free();

    md = model_xy(13);
    t = tensor("w_dtype", 99, 1, &d3);
    add_init(md, t);
    EXPECT_FAIL(load(md, "dtype.onnx"), MPX_E_UNSUPPORTED, "dtype.onnx", "w_dtype", "99");
    pool_free();

    md = model_xy(13);
    t = tensor("w_twice", 1, 0, NULL);
    raw_le(t, (const uint64_t[]){0}, 1, 4);
    add_init(md, t);
    add_init(md, t);
    EXPECT_FAIL(load(md, "twice.onnx"), MPX_E_INVALID, "twice.onnx", "w_twice", "twice");
    pool_free();

    /* A Constant's tensor with a bad length names the node and attribute. */
    md = model_xy(13);
    Onnx__NodeProto *n = node("Constant", "cbad", NULL, "cv");
    Onnx__AttributeProto *a = attr(n, "value", 4);
    a->t = tensor("", 1, 1, &d3);
    raw_le(a->t, (const uint64_t[]){0}, 1, 4);
    add_node(md, n);
    EXPECT_FAIL(load(md, "constbad.onnx"), MPX_E_INVALID, "constbad.onnx", "cbad", "value");
    pool_free();

    md = model_xy(13);
    add_node(md, node("", "noop", "x", "q"));
    EXPECT_FAIL(load(md, "noop.onnx"), MPX_E_INVALID, "noop.onnx", "noop", "op_type");
    pool_free();
}

/* ---- params and MACs counted once --------------------------------------------- */

/* A branch of one node reading the outer tensors named in ins, its output out. */
static Onnx__GraphProto *branch(const char *name, const char *op, const char *ins, const char *out) {
    Onnx__GraphProto *sg = tal(sizeof *sg);
    onnx__graph_proto__init(sg);
    sg->name = tstr(name);
    sg->node = tal(sizeof *sg->node);
    sg->node[sg->n_node++] = node(op, name, ins, out);
    sg->output = tal(sizeof *sg->output);
    sg->output[sg->n_output++] = vinfo(out, 1, "2,4");
    return sg;
}

/* x (2x4) -> MatMul(x, W) -> a -> If(c): then MatMul(a, W), else Mul(a, a)
 * -> y, and Add(y, W_row): W (16 values) is read by the main graph and the
 * then branch, W_row (4) once. c is a model input (known at run time only)
 * or, with c_value 0 or 1, a constant. */
static mpx_graph *shared_if_model(int c_value, const char *file) {
    model *md = model_new(13);
    int64_t d44[2] = {4, 4}, d4 = 4;
    add_in(md, vinfo("x", 1, "2,4"));
    if (c_value < 0) add_in(md, vinfo("c", 9, ""));
    add_out(md, vinfo("z", 1, "2,4"));
    Onnx__TensorProto *w = tensor("W", 1, 2, d44);
    uint64_t wv[16];
    for (int i = 0; i < 16; i++) wv[i] = fbits((float)(i % 5) * 0.25f);
    raw_le(w, wv, 16, 4);
    add_init(md, w);
    Onnx__TensorProto *wr = tensor("W_row", 1, 1, &d4);
    raw_le(wr, wv, 4, 4);
    add_init(md, wr);
    if (c_value >= 0) {
        Onnx__TensorProto *c = tensor("c", 9, 0, NULL);
        raw_le(c, (const uint64_t[]){(uint64_t)c_value}, 1, 1);
        add_init(md, c);
    }
    add_node(md, node("MatMul", "mm", "x,W", "a"));
    Onnx__NodeProto *f = node("If", "choose", "c", "y");
    attr(f, "then_branch", 5)->g = branch("then_mm", "MatMul", "a,W", "t");
    attr(f, "else_branch", 5)->g = branch("else_mul", "Mul", "a,a", "e");
    add_node(md, f);
    add_node(md, node("Add", "add", "y,W_row", "z"));
    return load(md, file);
}

static void test_count_once(void) {
    const int64_t mm = 2 * 4 * 4; /* one MatMul's MACs */
    for (int c = -1; c <= 1; c++) {
        mpx_graph *g = shared_if_model(c, c < 0 ? "if_input.onnx" : c ? "if_true.onnx" : "if_false.onnx");
        CHECK_MSG(g != NULL, "%s", msg());
        if (!g) continue;
        CHECK_MSG(mpx_graph_infer(g, &err) == MPX_OK, "%s", msg());
        int64_t params[16], macs[16];
        CHECK(g->n_nodes <= 16 && mpx_graph_count_once(g, params, macs));
        int64_t p_sum = 0, m_sum = 0;
        for (int i = 0; i < g->n_nodes; i++) p_sum += params[i], m_sum += macs[i];
        /* W once however many nodes and branches read it, W_row once; the
         * condition (a constant bool) too when it is one. */
        int64_t stored = 16 + 4 + (c >= 0);
        CHECK_MSG(p_sum == stored && mpx_graph_param_count(g) == stored, "c %d: params %lld, model %lld", c,
                  (long long)p_sum, (long long)mpx_graph_param_count(g));
        const mpx_node *then_mm = mpx_graph_find_node(g, "choose/then_branch/then_mm");
        CHECK_MSG(then_mm != NULL, "no then-branch node");
        if (then_mm) CHECK(params[then_mm->index] == 0 && then_mm->cost.params == 16);
        /* The main MatMul, plus the then branch's when it is taken: known
         * true, or unknown (the costlier branch); not when known false. */
        int64_t want = c == 0 ? mm : 2 * mm;
        CHECK_MSG(m_sum == want && mpx_graph_macs(g) == want, "c %d: MACs %lld, graph %lld, want %lld", c,
                  (long long)m_sum, (long long)mpx_graph_macs(g), (long long)want);
        mpx_graph_free(g);
    }
}

/* ---- the loader's walk, as the exporter reads it -------------------------------
 * The exporter finds the NodeProto behind each mpx_node.file_order by walking
 * the file with mpx_onnx_walk_graph: every step's order must be the loaded
 * node's file_order, with its op, under the step's prefix, an If named as
 * the walk names it. */

typedef struct walk_seen {
    const mpx_graph *g;
    int steps, bad;
} walk_seen;

static mpx_status walk_step(void *ctx, const Onnx__GraphProto *gp, size_t i, const char *prefix, int order,
                            const char *if_name) {
    walk_seen *w = ctx;
    const Onnx__NodeProto *np = gp->node[i];
    const mpx_node *n = NULL;
    for (int k = 0; k < w->g->n_nodes; k++)
        if (w->g->nodes[k]->file_order == order) n = w->g->nodes[k];
    bool ok = n && strcmp(n->op_type, np->op_type) == 0 && strncmp(n->name, prefix, strlen(prefix)) == 0 &&
              (!if_name || strcmp(n->name, if_name) == 0);
    CHECK_MSG(ok, "walk step %d (%s%s, %s): loaded node %s (%s)", order, prefix, np->name ? np->name : "",
              np->op_type, n ? n->name : "none", n ? n->op_type : "");
    w->bad += !ok;
    w->steps++;
    return MPX_OK;
}

static void test_walk_order(void) {
    /* mm; If outer (then: If unnamed (then Relu, else Neg), Sigmoid; else:
     * Mul); Add. Unnamed nodes are named by the loader from their order. */
    model *md = model_new(13);
    add_in(md, vinfo("x", 1, "2,4"));
    add_in(md, vinfo("c", 9, ""));
    add_out(md, vinfo("z", 1, "2,4"));
    add_node(md, node("Relu", "mm", "x", "a"));
    Onnx__NodeProto *inner = node("If", NULL, "c", "t0");
    attr(inner, "then_branch", 5)->g = branch("r", "Relu", "a", "tr");
    attr(inner, "else_branch", 5)->g = branch("n", "Neg", "a", "tn");
    Onnx__GraphProto *tb = tal(sizeof *tb);
    onnx__graph_proto__init(tb);
    tb->name = tstr("then");
    tb->node = tal(2 * sizeof *tb->node);
    tb->node[tb->n_node++] = inner;
    tb->node[tb->n_node++] = node("Sigmoid", NULL, "t0", "t");
    tb->output = tal(sizeof *tb->output);
    tb->output[tb->n_output++] = vinfo("t", 1, "2,4");
    Onnx__NodeProto *outer = node("If", "outer", "c", "y");
    attr(outer, "then_branch", 5)->g = tb;
    attr(outer, "else_branch", 5)->g = branch("m", "Mul", "a,a", "e");
    add_node(md, outer);
    add_node(md, node("Add", "add", "y,a", "z"));
    mpx_graph *g = load(md, "walk.onnx");
    CHECK_MSG(g != NULL, "%s", msg());
    if (g) {
        walk_seen w = {.g = g};
        const mpx_onnx_walk hooks = {.ctx = &w, .node = walk_step};
        CHECK_MSG(mpx_onnx_walk_graph(&md->g, "", &hooks, "walk.onnx", &err) == MPX_OK, "%s", msg());
        CHECK_MSG(w.steps == g->n_nodes && w.bad == 0, "%d steps, %d nodes, %d wrong", w.steps, g->n_nodes, w.bad);
        /* the nested If's name: its order among the nodes walked before its branches */
        CHECK(mpx_graph_find_node(g, "outer/then_branch/If_1") != NULL);
        CHECK(mpx_graph_find_node(g, "outer/then_branch/If_1/else_branch/n") != NULL);
        mpx_graph_free(g);
    }
    pool_free();
}

/* ---- nesting beyond the limit, in raw wire format ----------------------------
 * protobuf-c's unpacking recursion overflowed the stack at about 2,500 nested
 * graphs; the structs above would build the same bytes only through that
 * same recursion (pack), so the file is written field by field: graph k
 * holds one If "n<k>" whose then_branch is graph k+1. */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static void wb_put(wbuf *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, data, n); /* the innermost graph is empty: data NULL */
    b->n += n;
}

static void wb_varint(wbuf *b, uint64_t v) {
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    wb_put(b, t, k);
}

/* field (wire type 2) holding len bytes of data */
static void wb_bytes(wbuf *b, unsigned field, const void *data, size_t len) {
    wb_varint(b, (uint64_t)field << 3 | 2);
    wb_varint(b, len);
    wb_put(b, data, len);
}

/* A ModelProto whose graph 0 (the model's) holds If "n0", and so on: graphs
 * 1 to depth nested in then_branches, the last one empty. */
static wbuf nested_ifs(int depth) {
    wbuf g = {0};
    for (int k = depth - 1; k >= 0; k--) {
        char name[32];
        snprintf(name, sizeof name, "n%d", k);
        wbuf attr = {0}, node = {0}, graph = {0};
        wb_bytes(&attr, 1, "then_branch", 11);
        wb_varint(&attr, 20 << 3 | 0); /* type = GRAPH (5) */
        wb_varint(&attr, 5);
        wb_bytes(&attr, 6, g.p, g.n);
        wb_bytes(&node, 1, "c", 1);
        wb_bytes(&node, 2, "y", 1);
        wb_bytes(&node, 3, name, strlen(name));
        wb_bytes(&node, 4, "If", 2);
        wb_bytes(&node, 5, attr.p, attr.n);
        wb_bytes(&graph, 1, node.p, node.n);
        wb_bytes(&graph, 2, "g", 1);
        free(g.p);
        free(attr.p);
        free(node.p);
        g = graph;
    }
    wbuf m = {0}, op = {0};
    wb_varint(&m, 1 << 3 | 0); /* ir_version 8 */
    wb_varint(&m, 8);
    wb_varint(&op, 2 << 3 | 0);
    wb_varint(&op, 13);
    wb_bytes(&m, 8, op.p, op.n);
    wb_bytes(&m, 7, g.p, g.n);
    free(g.p);
    free(op.p);
    return m;
}

static void test_nesting(void) {
    /* 3,000 levels (130 KB): refused before protobuf-c unpacks it, naming
     * the node whose branch is the 17th nested graph. */
    wbuf m = nested_ifs(3000);
    mpx_graph *g = mpx_graph_load_onnx_buffer(m.p, m.n, "deep.onnx", NULL, &err);
    CHECK(g == NULL && err.status == MPX_E_LIMIT);
    CHECK_CONTAINS(msg(), "deep.onnx: node \"n16\" (If): subgraphs nested deeper than 16 (If branches and Loop and Scan bodies together)");
    mpx_graph_free(g);
    free(m.p);
    /* 17 nested graphs: the first beyond the limit. */
    m = nested_ifs(17);
    g = mpx_graph_load_onnx_buffer(m.p, m.n, "deep17.onnx", NULL, &err);
    CHECK(g == NULL);
    CHECK_CONTAINS(msg(), "node \"n16\" (If): subgraphs");
    mpx_graph_free(g);
    free(m.p);
    /* 16 nested graphs pass the scan: the loader judges the Ifs (a branch
     * without its else_branch) for what they are. */
    m = nested_ifs(16);
    g = mpx_graph_load_onnx_buffer(m.p, m.n, "deep16.onnx", NULL, &err);
    CHECK(g == NULL);
    CHECK_MSG(strstr(msg(), "nested deeper") == NULL, "16 levels refused: %s", msg());
    mpx_graph_free(g);
    free(m.p);
}

/* ---- Ctrl-C inside a Loop ------------------------------------------------------
 * x [256x256] -> Loop (300 trips; body v -> MatMul(v, W) with W from the
 * outer graph) -> y: a long run inside one top-level node. The flag
 * mpx_set_cancel_flag registers is set from another thread; the comparison
 * itself is given no cancel of its own, so only the body's checks can stop
 * it, and they must, at whatever iteration it has reached. */

typedef struct loop_job {
    const mpx_graph *g;
    const mpx_value *x;
    mpx_status st;
    mpx_error err;
    mpx_compare *c;
} loop_job;

static void *loop_run(void *arg) {
    loop_job *j = arg;
    mpx_compare_opts o = {.threads = 1};
    j->st = mpx_compare_run(j->g, NULL, j->x, &o, &j->c, &j->err);
    return NULL;
}

static void test_loop_cancel(void) {
    model *md = model_new(13);
    add_in(md, vinfo("x", 1, "256,256"));
    add_out(md, vinfo("y", 1, "256,256"));
    int64_t dw[2] = {256, 256};
    Onnx__TensorProto *w = tensor("W", 1, 2, dw);
    w->has_raw_data = 1;
    w->raw_data.len = 256 * 256 * 4;
    w->raw_data.data = tal(w->raw_data.len);
    memset(w->raw_data.data, 0, w->raw_data.len);
    add_init(md, w);
    Onnx__TensorProto *m = tensor("M", 7, 0, NULL);
    raw_le(m, (const uint64_t[]){300}, 1, 8);
    add_init(md, m);
    Onnx__TensorProto *cond = tensor("cond", 9, 0, NULL);
    raw_le(cond, (const uint64_t[]){1}, 1, 1);
    add_init(md, cond);
    Onnx__NodeProto *loop = node("Loop", "loop", "M,cond,x", "y");
    Onnx__GraphProto *body = tal(sizeof *body);
    onnx__graph_proto__init(body);
    body->name = tstr("body");
    body->node = tal(2 * sizeof *body->node);
    body->node[body->n_node++] = node("MatMul", "mm", "v,W", "v2");
    body->node[body->n_node++] = node("Identity", "keep", "c", "co");
    body->input = tal(3 * sizeof *body->input);
    body->input[body->n_input++] = vinfo("i", 7, "");
    body->input[body->n_input++] = vinfo("c", 9, "");
    body->input[body->n_input++] = vinfo("v", 1, "256,256");
    body->output = tal(2 * sizeof *body->output);
    body->output[body->n_output++] = vinfo("co", 9, "");
    body->output[body->n_output++] = vinfo("v2", 1, "256,256");
    Onnx__AttributeProto *a = attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = body;
    add_node(md, loop);
    mpx_graph *g = load(md, "loop_cancel.onnx");
    CHECK_MSG(g != NULL, "loop_cancel.onnx: %s", msg());
    if (!g) {
        pool_free();
        return;
    }
    mpx_value x = {0};
    CHECK(mpx_value_alloc(&x, MPX_DT_FLOAT, 2, dw, &err) == MPX_OK);
    for (int64_t i = 0; i < 256; i++) x.f[i * 257] = 1.0f;

    volatile int flag = 0;
    mpx_set_cancel_flag(&flag);
    loop_job j = {.g = g, .x = &x};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, loop_run, &j) == 0);
    flag = 1; /* before or during the loop: either way it must stop it */
    pthread_join(t, NULL);
    CHECK_MSG(j.st == MPX_E_CANCELLED && j.c == NULL, "status %s: %s", mpx_status_name(j.st), j.err.msg);
    /* Between two iterations or between two body nodes. */
    CHECK_CONTAINS(j.err.msg, "node \"loop\" (Loop): ");
    CHECK_CONTAINS(j.err.msg, "cancelled");
    mpx_compare_free(j.c);

    /* The flag cleared, the same graph runs again to the end (the session
     * stays usable): 300 trips of a product with zeros. */
    flag = 0;
    j = (loop_job){.g = g, .x = &x};
    loop_run(&j);
    CHECK_MSG(j.st == MPX_OK && j.c != NULL, "rerun: %s", j.err.msg);
    mpx_compare_free(j.c);
    mpx_set_cancel_flag(NULL);
    mpx_value_free(&x);
    mpx_graph_free(g);
    pool_free();
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    const char *t = getenv("MPX_TMP");
    snprintf(tmp, sizeof tmp, "%s/onnx", t ? t : "/tmp/mpx_test_onnx");
    mkdir(t ? t : "/tmp/mpx_test_onnx", 0755);
    mkdir(tmp, 0755);
    test_encodings();
    test_constants();
    test_attributes();
    test_opsets();
    test_io();
    test_external();
    test_bad_files();
    test_bad_graphs();
    test_count_once();
    test_walk_order();

    test_nesting();
    test_loop_cancel();
    free(pool);
    return check_report("test_onnx");
}
