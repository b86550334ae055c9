/* test_kern_data.c - the shape, data-movement and constant kernels
 * (numerics/kern_data.c): the examples of the ONNX operator documents, naive
 * re-implementations on random shapes (Transpose, Slice with Python's slice
 * rules, Pad with numpy.pad's modes, Tile, Expand, DepthToSpace as reshape +
 * transpose), integer and float values, and refusals of bad inputs. */
#include "check.h"
#include "graph_build.h"
#include "kern_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static mpx_graph *G;
static mpx_error err;
static mpx_value out[8];
static int n_outs;

/* ---- values from one-line specs --------------------------------------------- */

/* the type letters of graph_build.h (gb_dtype): one table for the tests */
static mpx_dtype dtype_of(char c) { return gb_dtype(c); }

/* "f2x3: 1 2 3 4 5 6", "i3: 0 -1 2", "f: 5" (a scalar), "f2x3x4: iota",
 * "i0:" (empty), "nan"/"inf"/"-inf"; numbers are parsed exactly for int64. */
static mpx_value V(const char *spec) {
    mpx_value v;
    int64_t dims[MPX_MAX_RANK];
    int r = 0;
    const char *p = spec + 1;
    while (*p && *p != ':') {
        char *end;
        dims[r++] = strtoll(p, &end, 10);
        p = *end == 'x' ? end + 1 : end;
    }
    mpx_value_alloc(&v, dtype_of(spec[0]), r, dims, NULL);
    if (*p == ':') p++;
    while (*p == ' ') p++;
    if (strncmp(p, "iota", 4) == 0) {
        for (int64_t k = 0; k < v.n; k++) {
            if (v.f)
                v.f[k] = (float)k;
            else
                v.i[k] = k;
        }
        return v;
    }
    for (int64_t k = 0; k < v.n && *p; k++) {
        char *end;
        if (v.f) {
            v.f[k] = strtof(p, &end);
        } else {
            v.i[k] = strtoll(p, &end, 10);
        }
        if (end == p) break;
        p = end;
        while (*p == ' ') p++;
    }
    return v;
}

/* ---- nodes with attributes from one-line specs ------------------------------------ */

static void set_tensor(mpx_tensor *t, const char *spec) {
    mpx_value v = V(spec);
    mpx_tensor_alloc_value(G, t, v.dtype, v.rank, v.dims, NULL);
    for (int64_t k = 0; k < v.n; k++) {
        if (t->f32)
            t->f32[k] = v.f[k];
        else
            t->i64[k] = v.i[k];
    }
    mpx_value_free(&v);
}

/* "axis=1 perm=[1,0] mode=reflect value=T:f:5 scales=[0.5,2.0] ratio=0.5" */
static void parse_attr(mpx_attr *a, const char *tok) {
    size_t n = strcspn(tok, "=");
    a->name = mpx_arena_strndup(G->arena, tok, n);
    const char *v = tok + n + 1;
    if (strncmp(v, "T:", 2) == 0) {
        a->type = MPX_ATTR_TENSOR;
        a->t = mpx_arena_alloc(G->arena, sizeof *a->t);
        a->t->name = "value";
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v + 2);
        for (char *q = buf; *q; q++)
            if (*q == ',') *q = ' ';
        set_tensor(a->t, buf);
    } else if (*v == '[') {
        bool flt = strchr(v, '.') != NULL;
        a->type = flt ? MPX_ATTR_FLOATS : MPX_ATTR_INTS;
        a->ints = mpx_arena_calloc(G->arena, 32, sizeof(int64_t));
        a->floats = mpx_arena_calloc(G->arena, 32, sizeof(float));
        const char *p = v + 1;
        while (*p && *p != ']') {
            char *end;
            if (flt)
                a->floats[a->n++] = strtof(p, &end);
            else
                a->ints[a->n++] = strtoll(p, &end, 10);
            p = *end == ',' ? end + 1 : end;
        }
    } else {
        char *end;
        long long i = strtoll(v, &end, 10);
        if (end != v && !*end) {
            a->type = MPX_ATTR_INT;
            a->i = i;
            return;
        }
        double f = strtod(v, &end);
        if (end != v && !*end) {
            a->type = MPX_ATTR_FLOAT;
            a->f = (float)f;
            return;
        }
        a->type = MPX_ATTR_STRING;
        a->s = mpx_arena_strdup(G->arena, v);
        a->s_len = strlen(v);
    }
}

static int count_tokens(const char *s, const char *sep) {
    int n = 0;
    for (const char *p = s; *p;) {
        p += strspn(p, sep);
        if (!*p) break;
        n++;
        p += strcspn(p, sep);
    }
    return n;
}

/* A node of op (attributes "name=value ..."); n_in input slots, left
 * empty (own fills one). */
static mpx_node *mk_in(const char *op, int opset, const char *attrs, int n_in) {
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "k%d", seq++);
    mpx_node *n = mpx_graph_add_node(G, name, op, "", n_in, 0, count_tokens(attrs, " "));
    n->name = "n"; /* every message names node "n" */
    n->opset = opset;
    n->op = mpx_op_from_name(op);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", attrs);
    int k = 0;
    char *save;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        parse_attr(&n->attrs[k++], tok);
    return n;
}

static mpx_node *mk(const char *op, int opset, const char *attrs) { return mk_in(op, opset, attrs, 0); }

/* The tensor whose values are v's (integers), as input k of n: a
 * constant's, on which the kernels keep forms of it (kern_kept.h). Undone
 * by unown. */
static mpx_tensor *own(mpx_node *n, int k, const mpx_value *v) {
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "c%d", seq++);
    mpx_tensor *t = n->inputs[k] = mpx_graph_tensor(G, name);
    t->dtype = v->dtype;
    t->rank = v->rank;
    for (int i = 0; i < v->rank; i++) t->dims[i] = v->dims[i];
    t->nelem = v->n;
    t->i64 = v->i;
    return t;
}

static void unown(mpx_tensor *t) {
    if (t->derived_free) t->derived_free(t->derived);
    t->derived = NULL;
    t->derived_free = NULL;
    t->i64 = NULL;
}

static void clear_outs(void) {
    for (int j = 0; j < 8; j++) mpx_value_free(&out[j]);
}

/* Run op on inputs "spec | spec | -" ("-" omits one) with n_out outputs. */
static mpx_status run(const char *op, int opset, const char *attrs, const char *ins, int n_out) {
    clear_outs();
    n_outs = n_out;
    mpx_node *n = mk(op, opset, attrs);
    mpx_value vals[8];
    const mpx_value *ptr[8];
    int ni = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", ins);
    char *save;
    for (char *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        while (*tok == ' ') tok++;
        if (*tok == '-') {
            ptr[ni] = NULL;
            memset(&vals[ni], 0, sizeof vals[ni]);
            vals[ni].n = -1;
        } else {
            vals[ni] = V(tok);
            ptr[ni] = &vals[ni];
        }
        ni++;
    }
    mpx_kernel_fn fn = mpx_kernel_for(n->op);
    mpx_error_clear(&err);
    mpx_status st = MPX_E_UNSUPPORTED;
    if (fn) {
        mpx_kctx c = {.node = n, .err = &err};
        st = fn(&c, ptr, ni, out, n_out);
    } else {
        snprintf(err.msg, sizeof err.msg, "no kernel for %s", op);
    }
    for (int k = 0; k < ni; k++) mpx_value_free(&vals[k]);
    return st;
}

static bool same_value(const mpx_value *a, const mpx_value *b, char *why, size_t n) {
    if (a->n < 0 || b->n < 0) return snprintf(why, n, "absent"), false;
    if ((a->f != NULL) != (b->f != NULL)) return snprintf(why, n, "float vs int"), false;
    if (a->rank != b->rank) return snprintf(why, n, "rank %d, want %d", a->rank, b->rank), false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return snprintf(why, n, "dim %d is %lld, want %lld", i, (long long)a->dims[i],
                            (long long)b->dims[i]),
                   false;
    for (int64_t k = 0; k < a->n; k++) {
        bool eq =
            a->f ? (a->f[k] == b->f[k] || (isnan(a->f[k]) && isnan(b->f[k]))) : a->i[k] == b->i[k];
        if (!eq)
            return snprintf(why, n, "element %lld is %g, want %g", (long long)k,
                            a->f ? (double)a->f[k] : (double)a->i[k],
                            b->f ? (double)b->f[k] : (double)b->i[k]),
                   false;
    }
    return true;
}

static void expect_(int line, int k, const char *spec) {
    mpx_value want = V(spec);
    char why[160] = "";
    CHECK_MSG(same_value(&out[k], &want, why, sizeof why), "line %d: output %d: %s (%s)", line, k,
              why, err.msg);
    mpx_value_free(&want);
}
#define EXPECT(k, spec) expect_(__LINE__, k, spec)

/* run() must be OK and output 0 equal spec. */
static void ok_(int line, const char *op, int opset, const char *attrs, const char *ins,
                const char *want) {
    mpx_status st = run(op, opset, attrs, ins, 1);
    CHECK_MSG(st == MPX_OK, "line %d: %s: %s", line, op, err.msg);
    if (st == MPX_OK) expect_(line, 0, want);
}
#define OK(...) ok_(__LINE__, __VA_ARGS__)

static void fail_(int line, const char *op, int opset, const char *attrs, const char *ins,
                  int n_out, mpx_status want, const char *needle) {
    mpx_status st = run(op, opset, attrs, ins, n_out);
    CHECK_MSG(st == want, "line %d: %s: status %d (%s), want %d", line, op, st, err.msg, want);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.msg,
              needle);
    char head[64];
    snprintf(head, sizeof head, "node \"n\" (%s)", op);
    CHECK_MSG(strstr(err.msg, head) != NULL, "line %d: \"%s\" does not name the node", line,
              err.msg);
    for (int j = 0; j < n_out; j++)
        CHECK_MSG(out[j].n < 0, "line %d: output %d left allocated after an error", line, j);
}
#define FAIL(...) fail_(__LINE__, __VA_ARGS__)

/* ---- random values and naive references ---------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15u;
static int64_t rnd(int64_t lo, int64_t hi) { /* [lo, hi] */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    return (int64_t)((uint64_t)lo + rng % span);
}

static mpx_value random_value(bool flt, int r, const int64_t *dims) {
    mpx_value v;
    mpx_value_alloc(&v, flt ? MPX_DT_FLOAT : MPX_DT_INT64, r, dims, NULL);
    for (int64_t k = 0; k < v.n; k++) {
        if (v.f)
            v.f[k] = (float)rnd(-1000, 1000) / 8.0f;
        else
            v.i[k] = rnd(INT64_MIN / 2, INT64_MAX / 2);
    }
    return v;
}

static void coords(int64_t k, int r, const int64_t *dims, int64_t *co) {
    for (int i = r - 1; i >= 0; i--) {
        co[i] = dims[i] ? k % dims[i] : 0;
        k = dims[i] ? k / dims[i] : 0;
    }
}

static int64_t flat(int r, const int64_t *dims, const int64_t *co) {
    int64_t k = 0;
    for (int i = 0; i < r; i++) k = k * dims[i] + co[i];
    return k;
}

static void copy_el(mpx_value *d, int64_t dk, const mpx_value *s, int64_t sk) {
    if (d->f)
        d->f[dk] = s->f[sk];
    else
        d->i[dk] = s->i[sk];
}

/* Call a kernel on prepared values. */
static mpx_status call(mpx_node *n, int ni, const mpx_value *const *ins, int n_out) {
    clear_outs();
    mpx_error_clear(&err);
    mpx_kctx c = {.node = n, .err = &err};
    mpx_kernel_fn fn = mpx_kernel_for(n->op);
    if (!fn) return MPX_E_UNSUPPORTED;
    return fn(&c, ins, ni, out, n_out);
}

static mpx_value ints_value(int n, const int64_t *v) {
    mpx_value x;
    int64_t d = n;
    mpx_value_alloc(&x, MPX_DT_INT64, 1, &d, NULL);
    for (int k = 0; k < n; k++) x.i[k] = v[k];
    return x;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_concat_split(void) {
    OK("Concat", 13, "axis=0", "f2x2: 1 2 3 4 | f2x2: 5 6 7 8", "f4x2: 1 2 3 4 5 6 7 8");
    OK("Concat", 13, "axis=1", "f2x2: 1 2 3 4 | f2x2: 5 6 7 8", "f2x4: 1 2 5 6 3 4 7 8");
    OK("Concat", 13, "axis=-1", "i2x1: 1 2 | i2x0: | i2x2: 3 4 5 6", "i2x3: 1 3 4 2 5 6");
    OK("Concat", 11, "axis=1", "i1x2x1: 1 2 | i1x1x1: 9", "i1x3x1: 1 2 9");
    OK("Concat", 13, "axis=0", "f3: 1 2 3", "f3: 1 2 3");
    FAIL("Concat", 13, "", "f2: 1 2 | f2: 3 4", 1, MPX_E_INVALID, "axis is required");
    FAIL("Concat", 13, "axis=0", "f: 1 | f: 2", 1, MPX_E_SHAPE, "scalars");
    FAIL("Concat", 13, "axis=1", "f2x2: iota | f3x2: iota", 1, MPX_E_SHAPE, "does not fit input 0");
    FAIL("Concat", 13, "axis=0", "f2: 1 2 | i2: 3 4", 1, MPX_E_SHAPE, "does not fit");
    FAIL("Concat", 13, "axis=2", "f2x2: iota | f2x2: iota", 1, MPX_E_SHAPE, "out of range");
    FAIL("Concat", 13, "axis=0", "f2: 1 2 | - ", 1, MPX_E_INVALID, "input 1 is missing");

    CHECK(run("Split", 13, "axis=0", "f6: 1 2 3 4 5 6", 3) == MPX_OK);
    EXPECT(0, "f2: 1 2");
    EXPECT(1, "f2: 3 4");
    EXPECT(2, "f2: 5 6");
    CHECK(run("Split", 11, "axis=0 split=[2,4]", "f6: 1 2 3 4 5 6", 2) == MPX_OK);
    EXPECT(0, "f2: 1 2");
    EXPECT(1, "f4: 3 4 5 6");
    CHECK(run("Split", 13, "axis=1", "i2x6: iota | i2: 2 4", 2) == MPX_OK);
    EXPECT(0, "i2x2: 0 1 6 7");
    EXPECT(1, "i2x4: 2 3 4 5 8 9 10 11");
    CHECK(run("Split", 13, "axis=-1", "f2x3: iota | i3: 0 3 0", 3) == MPX_OK);
    EXPECT(0, "f2x0:");
    EXPECT(1, "f2x3: 0 1 2 3 4 5");
    EXPECT(2, "f2x0:");
    /* Opset 18: num_outputs, the last chunk smaller (the operator's example). */
    CHECK(run("Split", 18, "axis=0 num_outputs=4", "f7: 1 2 3 4 5 6 7", 4) == MPX_OK);
    EXPECT(0, "f2: 1 2");
    EXPECT(1, "f2: 3 4");
    EXPECT(2, "f2: 5 6");
    EXPECT(3, "f1: 7");
    CHECK(run("Split", 18, "axis=1 num_outputs=2", "i2x5: iota", 2) == MPX_OK);
    EXPECT(0, "i2x3: 0 1 2 5 6 7");
    EXPECT(1, "i2x2: 3 4 8 9");
    FAIL("Split", 13, "axis=0", "f5: iota", 2, MPX_E_SHAPE, "does not split evenly");
    FAIL("Split", 13, "axis=0", "f5: iota | i2: 2 2", 2, MPX_E_SHAPE, "add up to 4");
    FAIL("Split", 13, "axis=0", "f5: iota | i2: 6 -1", 2, MPX_E_SHAPE, "out of range");
    FAIL("Split", 13, "axis=0", "f5: iota | i3: 1 1 3", 2, MPX_E_SHAPE, "3 values for 2 outputs");
    FAIL("Split", 18, "axis=0 num_outputs=4", "f5: iota", 4, MPX_E_SHAPE, "cannot split 5 into 4");
    FAIL("Split", 18, "axis=0 num_outputs=3", "f6: iota", 2, MPX_E_SHAPE, "num_outputs is 3");
    FAIL("Split", 13, "axis=0", "f: 1", 1, MPX_E_SHAPE, "scalar");
    FAIL("Split", 13, "axis=0", "f4: iota | f2: 2 2", 2, MPX_E_INVALID, "integer");
}

/* Concat against the naive element loop on random shapes, some large
 * enough to go in pieces of 64 KB over the kernel threads (a piece then
 * starts and ends inside inputs' chunks and rows), float and int64. */
static void test_concat_random(void) {
    int bad = 0;
    for (int it = 0; it < 60; it++) {
        const int r = (int)rnd(1, 4), ax = (int)rnd(0, r - 1), n_in = (int)rnd(1, 4);
        const bool big = it % 3 != 0;
        int64_t dims[MPX_MAX_RANK], odims[MPX_MAX_RANK];
        for (int i = 0; i < r; i++) dims[i] = rnd(1, !big ? 5 : r <= 2 ? 300 : r == 3 ? 40 : 12);
        mpx_value xs[4];
        const mpx_value *ins[4];
        memcpy(odims, dims, sizeof odims);
        odims[ax] = 0;
        for (int k = 0; k < n_in; k++) {
            int64_t d[MPX_MAX_RANK];
            memcpy(d, dims, sizeof d);
            d[ax] = rnd(k == 1 ? 0 : 1, big ? 97 : 4);
            xs[k] = random_value(it & 1, r, d);
            ins[k] = &xs[k];
            odims[ax] += d[ax];
        }
        mpx_value want;
        mpx_value_alloc(&want, xs[0].dtype, r, odims, NULL);
        for (int64_t q = 0; q < want.n; q++) {
            int64_t co[MPX_MAX_RANK];
            coords(q, r, odims, co);
            int k = 0;
            while (co[ax] >= xs[k].dims[ax]) co[ax] -= xs[k++].dims[ax];
            copy_el(&want, q, &xs[k], flat(r, xs[k].dims, co));
        }
        char attrs[32];
        snprintf(attrs, sizeof attrs, "axis=%d", ax);
        mpx_status st = call(mk("Concat", 13, attrs), n_in, ins, 1);
        char why[160] = "";
        if (st != MPX_OK || !same_value(&out[0], &want, why, sizeof why)) bad++;
        for (int k = 0; k < n_in; k++) mpx_value_free(&xs[k]);
        mpx_value_free(&want);
    }
    CHECK_MSG(bad == 0, "Concat: %d of 60 cases differ from the naive loop", bad);
}

static void test_reshape_family(void) {
    /* Reshape's operator examples on a 2x3x4 input. */
    OK("Reshape", 13, "", "f2x3x4: iota | i3: 4 2 3", "f4x2x3: iota");
    OK("Reshape", 13, "", "i2x3x4: iota | i4: 2 0 4 1", "i2x3x4x1: iota");
    OK("Reshape", 13, "", "f2x3x4: iota | i2: -1 4", "f6x4: iota");
    OK("Reshape", 13, "", "f2x3x4: iota | i3: 2 -1 2", "f2x6x2: iota");
    OK("Reshape", 13, "", "f2x3x4: iota | i1: -1", "f24: iota");
    OK("Reshape", 13, "", "f1: 7 | i0:", "f: 7");
    /* allowzero: a 0 is a 0. */
    OK("Reshape", 14, "allowzero=1", "f0x3x4: | i3: 3 4 0", "f3x4x0:");
    OK("Reshape", 14, "", "f0x3x4: | i3: 0 4 3", "f0x4x3:");
    FAIL("Reshape", 14, "allowzero=1", "f0x3x4: | i3: 0 -1 4", 1, MPX_E_SHAPE, "both 0 and -1");
    FAIL("Reshape", 13, "", "f2x3x4: iota | i2: -1 -1", 1, MPX_E_SHAPE, "more than one -1");
    FAIL("Reshape", 13, "", "f2x3x4: iota | i2: 5 5", 1, MPX_E_SHAPE,
         "cannot reshape 2x3x4 (24 elements) to 5x5");
    FAIL("Reshape", 13, "", "f2x3x4: iota | i2: -1 5", 1, MPX_E_SHAPE, "cannot reshape");
    FAIL("Reshape", 13, "", "f2x3x4: iota | i2: 6 -4", 1, MPX_E_SHAPE, "negative");
    FAIL("Reshape", 13, "", "f2x3: iota | i3: 0 0 0", 1, MPX_E_SHAPE, "rank 2");
    FAIL("Reshape", 13, "", "f2x3: iota | f2: 3 2", 1, MPX_E_INVALID, "integer tensor");
    FAIL("Reshape", 13, "", "f2x3: iota | -", 1, MPX_E_INVALID, "shape input is missing");
    FAIL("Reshape", 13, "", "f2x3: iota | i2: 4611686018427387904 4", 1, MPX_E_LIMIT, "");

    OK("Flatten", 13, "axis=0", "f2x3x4: iota", "f1x24: iota");
    OK("Flatten", 13, "", "f2x3x4: iota", "f2x12: iota");
    OK("Flatten", 13, "axis=3", "i2x3x4: iota", "i24x1: iota");
    OK("Flatten", 13, "axis=-1", "f2x3x4: iota", "f6x4: iota");
    OK("Flatten", 13, "axis=0", "f: 3", "f1x1: 3");
    FAIL("Flatten", 13, "axis=4", "f2x3x4: iota", 1, MPX_E_SHAPE, "out of range");

    OK("Squeeze", 11, "axes=[0]", "f1x3x1: 1 2 3", "f3x1: 1 2 3");
    OK("Squeeze", 13, "", "f1x3x1: 1 2 3 | i1: -1", "f1x3: 1 2 3");
    OK("Squeeze", 13, "", "i1x3x1x1: 4 5 6", "i3: 4 5 6");
    OK("Squeeze", 13, "", "f1x1: 9", "f: 9");
    FAIL("Squeeze", 13, "", "f1x3: iota | i1: 1", 1, MPX_E_SHAPE, "axis 1 of length 3");
    FAIL("Squeeze", 13, "", "f1x3: iota | i1: 2", 1, MPX_E_SHAPE, "out of range");

    /* Unsqueeze's examples: 3x4x5 with axes [0, 4] and [2, 4] ... */
    OK("Unsqueeze", 13, "", "f3x4x5: iota | i2: 0 4", "f1x3x4x5x1: iota");
    OK("Unsqueeze", 13, "", "f3x4x5: iota | i2: 4 2", "f3x4x1x5x1: iota");
    OK("Unsqueeze", 13, "", "f3x4x5: iota | i1: -1", "f3x4x5x1: iota");
    OK("Unsqueeze", 11, "axes=[0,-1]", "i3: 1 2 3", "i1x3x1: 1 2 3");
    OK("Unsqueeze", 13, "", "f: 2 | i1: 0", "f1: 2");
    FAIL("Unsqueeze", 13, "", "f3: iota | i2: 1 1", 1, MPX_E_SHAPE, "repeated");
    FAIL("Unsqueeze", 13, "", "f3: iota | i1: 2", 1, MPX_E_SHAPE, "out of range");
    FAIL("Unsqueeze", 13, "", "f3: iota", 1, MPX_E_INVALID, "axes are required");
    FAIL("Unsqueeze", 13, "", "f2x2x2x2x2x2x2: iota | i2: 0 1", 1, MPX_E_LIMIT, "rank 9");

    OK("Identity", 13, "", "i2x2: 1 2 3 4", "i2x2: 1 2 3 4");
    OK("Identity", 13, "", "f3: nan inf -0", "f3: nan inf -0");
    CHECK(run("Dropout", 13, "", "f2x2: 1 2 3 4", 2) == MPX_OK);
    EXPECT(0, "f2x2: 1 2 3 4");
    EXPECT(1, "b2x2: 1 1 1 1");
    CHECK(out[1].dtype == MPX_DT_BOOL);
    CHECK(run("Dropout", 7, "ratio=0.2", "f3: 1 2 3", 2) == MPX_OK);
    EXPECT(1, "f3: 1 1 1");
    CHECK(run("Dropout", 13, "", "f2: 1 2 | f: 0.5 | b: 0", 1) == MPX_OK);
    EXPECT(0, "f2: 1 2");
    FAIL("Dropout", 13, "", "f2: 1 2 | f: 0.5 | b: 1", 2, MPX_E_UNSUPPORTED, "training-mode");
    CHECK(run("Dropout", 13, "", "f2: 1 2 | f: 0 | b: 1", 1) == MPX_OK);
}

/* Transpose against out[co permuted] = x[co] on random shapes and perms
 * (ten of rank 4 and 2^16 values or more: copied in pieces of rows on the
 * kernel threads), then four fixed ones. */
static void test_transpose(void) {
    OK("Transpose", 13, "", "f2x3: 1 2 3 4 5 6", "f3x2: 1 4 2 5 3 6");
    OK("Transpose", 13, "perm=[0,2,1]", "i1x2x3: iota", "i1x3x2: 0 3 1 4 2 5");
    OK("Transpose", 13, "", "f: 5", "f: 5");
    FAIL("Transpose", 13, "perm=[0,0]", "f2x3: iota", 1, MPX_E_SHAPE, "not a permutation");
    FAIL("Transpose", 13, "perm=[0,1,2]", "f2x3: iota", 1, MPX_E_SHAPE, "3 values");
    FAIL("Transpose", 13, "perm=[0,2]", "f2x3: iota", 1, MPX_E_SHAPE, "not a permutation");
    int bad = 0;
    /* then attention's K^T (perm [1,2,0] of L x heads x D: tiles of 16
     * rows, on AVX-512 16 columns at a time, and the columns and rows
     * left over), and a 4-D one of the same kind */
    static const int64_t fixed[][5] = {{3, 64, 12, 64, 0}, {3, 197, 3, 64, 0}, {3, 37, 5, 19, 0}, {4, 2, 33, 3, 50}};
    static const int64_t fixed_perm[][4] = {{1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {0, 2, 3, 1}};
    for (int it = 0; it < 204; it++) {
        const bool big = it >= 190 && it < 200;
        int r = it >= 200 ? (int)fixed[it - 200][0] : big ? 4 : (int)rnd(1, 6);
        int64_t dims[MPX_MAX_RANK], perm[MPX_MAX_RANK], odims[MPX_MAX_RANK];
        for (int i = 0; i < r; i++) {
            dims[i] = it >= 200 ? fixed[it - 200][1 + i] : big ? rnd(17, 30) : rnd(it % 17 == 0 ? 0 : 1, 4);
            perm[i] = it >= 200 ? fixed_perm[it - 200][i] : i;
        }
        for (int i = r - 1; it < 200 && i > 0; i--) {
            int j = (int)rnd(0, i);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        char attrs[128] = "perm=[";
        for (int i = 0; i < r; i++) {
            odims[i] = dims[perm[i]];
            snprintf(attrs + strlen(attrs), sizeof attrs - strlen(attrs), i ? ",%lld" : "%lld",
                     (long long)perm[i]);
        }
        strcat(attrs, "]");
        mpx_value x = random_value(it >= 200 || (it & 1), r, dims), want;
        mpx_value_alloc(&want, x.dtype, r, odims, NULL);
        for (int64_t k = 0; k < want.n; k++) {
            int64_t co[MPX_MAX_RANK], ci[MPX_MAX_RANK];
            coords(k, r, odims, co);
            for (int i = 0; i < r; i++) ci[perm[i]] = co[i];
            copy_el(&want, k, &x, flat(r, dims, ci));
        }
        const mpx_value *ins[1] = {&x};
        mpx_status st = call(mk("Transpose", 13, attrs), 1, ins, 1);
        char why[160] = "";
        if (st != MPX_OK || !same_value(&out[0], &want, why, sizeof why)) bad++;
        mpx_value_free(&x);
        mpx_value_free(&want);
    }
    CHECK_MSG(bad == 0, "Transpose: %d of 204 cases differ from the naive loop", bad);
}

/* Python's slice.indices(): the naive reference (ONNX agrees with it except
 * for a start below -d with a negative step, pinned separately below). */
static int64_t py_slice(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *idx) {
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? d - 1 : d;
    if (s < 0) {
        s = s < -d ? lo : s + d;
        if (s < lo) s = lo;
    } else if (s > hi) {
        s = hi;
    }
    if (e < 0) {
        e = e < -d ? lo : e + d;
        if (e < lo) e = lo;
    } else if (e > hi) {
        e = hi;
    }
    int64_t n = 0;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step) idx[n++] = i;
    return n;
}

static void test_slice(void) {
    /* The operator's examples (x 20x10x5). */
    OK("Slice", 13, "", "f20x10x5: iota | i2: 0 0 | i2: 3 10 | i2: 0 1 | i2: 1 1", "f3x10x5: iota");
    OK("Slice", 13, "", "i3x4: iota | i1: 1 | i1: 9223372036854775807", "i2x4: 4 5 6 7 8 9 10 11");
    OK("Slice", 13, "", "f3x4: iota | i1: 0 | i1: -1 | i1: 1", "f3x3: 0 1 2 4 5 6 8 9 10");
    OK("Slice", 13, "", "i2x4: iota | i2: 1 -1 | i2: 2 -9223372036854775807 | i2: 0 1 | i2: 1 -2",
       "i1x2: 7 5");
    OK("Slice", 13, "", "f5: iota | i1: -1 | i1: -9223372036854775807 | i1: 0 | i1: -1",
       "f5: 4 3 2 1 0");
    OK("Slice", 13, "", "f5: iota | i1: 10 | i1: 20", "f0:");
    OK("Slice", 13, "", "f5: iota | i1: 1 | i1: 1000 | - | i1: 2", "f2: 1 3");
    OK("Slice", 13, "", "f5: iota | i1: 3 | i1: 5 | i1: 0 | i1: 4611686018427387904", "f1: 3");
    OK("Slice", 13, "", "f5: iota | i1: 4 | i1: -9223372036854775808 | i1: 0 | i1: -9223372036854775808",
       "f1: 4");
    /* Opset 9: attributes. */
    OK("Slice", 9, "starts=[1] ends=[3] axes=[1]", "i2x4: iota", "i2x2: 1 2 5 6");
    OK("Slice", 1000, "starts=[0,1] ends=[1,1000]", "f2x3: iota", "f1x2: 1 2");
    /* ONNX clamps a start below -d to 0 for negative steps (numpy would give []):
     * the spec's rule, as ONNX Runtime implements it. */
    OK("Slice", 13, "", "f3: 1 2 3 | i1: -10 | i1: -10 | i1: 0 | i1: -1", "f1: 1");
    FAIL("Slice", 13, "", "f3: iota | i1: 0 | i1: 3 | i1: 0 | i1: 0", 1, MPX_E_SHAPE, "step 0");
    FAIL("Slice", 13, "", "f3x3: iota | i2: 0 0 | i2: 3 3 | i2: 1 1", 1, MPX_E_SHAPE, "repeated");
    FAIL("Slice", 13, "", "f3: iota | i2: 0 1 | i1: 3", 1, MPX_E_SHAPE, "differ in length");
    FAIL("Slice", 13, "", "f3: iota | i1: 0 | i1: 3 | i1: 1", 1, MPX_E_SHAPE, "out of range");
    FAIL("Slice", 13, "", "f3: iota | i1: 0", 1, MPX_E_INVALID, "starts and ends");
    FAIL("Slice", 13, "", "f3: iota | f1: 0 | i1: 3", 1, MPX_E_INVALID, "integer tensor");
    FAIL("Slice", 13, "", "f3: iota | i1x1: 0 | i1: 3", 1, MPX_E_SHAPE, "1-D");
    int bad = 0, cases = 400;
    for (int it = 0; it < cases; it++) {
        int r = (int)rnd(1, 4);
        int64_t dims[MPX_MAX_RANK], odims[MPX_MAX_RANK], idx[MPX_MAX_RANK][64];
        int64_t st_[MPX_MAX_RANK], en[MPX_MAX_RANK], ax[MPX_MAX_RANK], sp[MPX_MAX_RANK];
        int ns = (int)rnd(1, r);
        for (int i = 0; i < r; i++) dims[i] = rnd(0, 6);
        for (int i = 0; i < r; i++) ax[i] = i;
        for (int i = r - 1; i > 0; i--) {
            int j = (int)rnd(0, i);
            int64_t t = ax[i];
            ax[i] = ax[j];
            ax[j] = t;
        }
        for (int i = 0; i < r; i++) {
            odims[i] = py_slice(dims[i], 0, dims[i], 1, idx[i]);
        }
        for (int i = 0; i < ns; i++) {
            int64_t a = ax[i], d = dims[a];
            sp[i] = rnd(-3, 3);
            if (sp[i] == 0) sp[i] = 1;
            st_[i] = rnd(sp[i] < 0 ? -d : -d - 2, d + 2);
            int64_t pick = rnd(0, 9);
            en[i] = pick == 0   ? INT64_MAX
                    : pick == 1 ? INT64_MIN
                    : pick == 2 ? -INT64_MAX
                                : rnd(-d - 2, d + 2);
            if (it & 1) ax[i] -= r; /* negative axes too */
            odims[a] = py_slice(d, st_[i], en[i], sp[i], idx[a]);
        }
        mpx_value x = random_value(it & 2, r, dims), want;
        mpx_value_alloc(&want, x.dtype, r, odims, NULL);
        for (int64_t k = 0; k < want.n; k++) {
            int64_t co[MPX_MAX_RANK];
            coords(k, r, odims, co);
            for (int i = 0; i < r; i++) co[i] = idx[i][co[i]];
            copy_el(&want, k, &x, flat(r, dims, co));
        }
        mpx_value vs = ints_value(ns, st_), ve = ints_value(ns, en), va = ints_value(ns, ax),
                  vp = ints_value(ns, sp);
        const mpx_value *ins[5] = {&x, &vs, &ve, &va, &vp};
        mpx_status st = call(mk("Slice", 13, ""), 5, ins, 1);
        char why[160] = "";
        if (st != MPX_OK || !same_value(&out[0], &want, why, sizeof why)) {
            if (bad++ < 3) fprintf(stderr, "Slice case %d: %s %s\n", it, why, err.msg);
        }
        mpx_value_free(&x);
        mpx_value_free(&want);
        mpx_value_free(&vs);
        mpx_value_free(&ve);
        mpx_value_free(&va);
        mpx_value_free(&vp);
    }
    CHECK_MSG(bad == 0, "Slice: %d of %d random cases differ from Python's slicing", bad, cases);
}

static void test_gather(void) {
    /* Gather's examples. */
    OK("Gather", 13, "axis=0", "f3x2: 1 1.2 2.3 3.4 4.5 5.7 | i2x2: 0 1 1 2",
       "f2x2x2: 1 1.2 2.3 3.4 2.3 3.4 4.5 5.7");
    OK("Gather", 13, "axis=1", "f3x3: 1 1.2 1.9 2.3 3.4 3.9 4.5 5.7 5.9 | i1x2: 0 2",
       "f3x1x2: 1 1.9 2.3 3.9 4.5 5.9");
    OK("Gather", 13, "axis=0", "i3: 10 20 30 | i3: -1 0 -3", "i3: 30 10 10");
    OK("Gather", 13, "axis=1", "i2x3: iota | i: 2", "i2: 2 5");
    OK("Gather", 13, "axis=0", "f2x2: iota | i0:", "f0x2:");
    FAIL("Gather", 13, "axis=0", "f3: iota | i1: 3", 1, MPX_E_SHAPE, "index 3 is out of range");
    FAIL("Gather", 13, "axis=0", "f3: iota | i1: -4", 1, MPX_E_SHAPE, "index -4");
    FAIL("Gather", 13, "axis=0", "f3: iota | f1: 1", 1, MPX_E_INVALID, "integer");
    FAIL("Gather", 13, "axis=1", "f3: iota | i1: 0", 1, MPX_E_SHAPE, "out of range");
    FAIL("Gather", 13, "axis=0", "f: 1 | i1: 0", 1, MPX_E_SHAPE, "scalar");

    /* GatherElements' examples. */
    OK("GatherElements", 13, "axis=1", "f2x2: 1 2 3 4 | i2x2: 0 0 1 0", "f2x2: 1 1 4 3");
    OK("GatherElements", 13, "axis=0", "i3x3: 1 2 3 4 5 6 7 8 9 | i2x3: 1 2 0 2 0 0",
       "i2x3: 4 8 3 7 2 3");
    OK("GatherElements", 13, "axis=0", "f3x3: 1 2 3 4 5 6 7 8 9 | i2x3: -1 -2 0 -2 0 0",
       "f2x3: 7 5 3 4 2 3");
    OK("GatherElements", 13, "axis=-1", "f2x3: iota | i2x1: 2 0", "f2x1: 2 3");
    FAIL("GatherElements", 13, "axis=1", "f2x2: iota | i2x2: 0 2 0 0", 1, MPX_E_SHAPE, "index 2");
    FAIL("GatherElements", 13, "axis=1", "f2x2: iota | i3x1: 0 0 0", 1, MPX_E_SHAPE, "exceed");
    FAIL("GatherElements", 13, "axis=0", "f2x2: iota | i4: 0 0 0 0", 1, MPX_E_SHAPE, "rank 1");
}

/* numpy.pad's index rule per mode for coordinate i (shifted) of an axis of d. */
static int64_t np_pad(int mode, int64_t i, int64_t d) {
    if (i >= 0 && i < d) return i;
    if (mode == 0) return -1;
    if (mode == 2) return i < 0 ? 0 : d - 1;
    if (mode == 3) {
        while (i < 0) i += d;
        while (i >= d) i -= d;
        return i;
    }
    if (d == 1) return 0;
    /* reflect: bounce off the ends one step at a time */
    while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;
    return i;
}

static void test_pad(void) {
    const char *x = "f3x2: 1 1.2 2.3 3.4 4.5 5.7 | i4: 0 2 0 0";
    OK("Pad", 13, "mode=constant", x, "f3x4: 0 0 1 1.2 0 0 2.3 3.4 0 0 4.5 5.7");
    OK("Pad", 13, "mode=reflect", x, "f3x4: 1 1.2 1 1.2 2.3 3.4 2.3 3.4 4.5 5.7 4.5 5.7");
    OK("Pad", 13, "mode=edge", x, "f3x4: 1 1 1 1.2 2.3 2.3 2.3 3.4 4.5 4.5 4.5 5.7");
    OK("Pad", 19, "mode=wrap", "f3x2: 1 2 3 4 5 6 | i4: 0 1 0 2",
       "f3x5: 2 1 2 1 2 4 3 4 3 4 6 5 6 5 6");
    OK("Pad", 13, "", "f2: 1 2 | i2: 1 1 | f: 9", "f4: 9 1 2 9");
    OK("Pad", 13, "", "i2: 1 2 | i2: 2 0 | i: -7", "i4: -7 -7 1 2");
    OK("Pad", 2, "pads=[1,0] value=2.5", "f2: 1 2", "f3: 2.5 1 2");
    OK("Pad", 18, "", "f2x2: 1 2 3 4 | i2: 1 0 | - | i1: -1", "f2x3: 0 1 2 0 3 4");
    OK("Pad", 13, "", "f5: iota | i2: -1 -2", "f2: 1 2");
    OK("Pad", 13, "mode=reflect", "f1: 7 | i2: 2 1", "f4: 7 7 7 7");
    OK("Pad", 13, "", "f: 3 | i0:", "f: 3");
    FAIL("Pad", 13, "", "f2x2: iota | i2: 1 1", 1, MPX_E_SHAPE, "pads has 2 values, expected 4");
    FAIL("Pad", 13, "mode=mirror", "f2: iota | i2: 1 1", 1, MPX_E_INVALID, "mirror");
    FAIL("Pad", 13, "", "f2: iota | i2: -2 -1", 1, MPX_E_SHAPE, "remove more");
    FAIL("Pad", 13, "mode=edge", "f0: | i2: 1 1", 1, MPX_E_SHAPE, "empty axis");
    FAIL("Pad", 13, "", "f2: iota | i2: 1 4611686018427387904", 1, MPX_E_LIMIT, "too large");
    FAIL("Pad", 13, "", "f2: iota | i2: 1 1 | i: 3", 1, MPX_E_INVALID, "does not match");
    FAIL("Pad", 13, "", "f2: iota", 1, MPX_E_INVALID, "pads are required");
    int bad = 0, cases = 300;
    for (int it = 0; it < cases; it++) {
        int r = (int)rnd(1, 4), mode = (int)rnd(0, 3);
        int64_t dims[MPX_MAX_RANK], odims[MPX_MAX_RANK], pads[2 * MPX_MAX_RANK];
        for (int i = 0; i < r; i++) {
            dims[i] = rnd(1, 4);
            pads[i] = rnd(mode == 0 ? -dims[i] / 2 : 0, 5);
            pads[i + r] = rnd(mode == 0 ? -dims[i] / 2 : 0, 5);
            odims[i] = dims[i] + pads[i] + pads[i + r];
        }
        mpx_value xv = random_value(it & 1, r, dims), want, pv = ints_value(2 * r, pads), cv;
        mpx_value_alloc(&cv, xv.dtype, 0, NULL, NULL);
        if (cv.f)
            cv.f[0] = -3.5f;
        else
            cv.i[0] = -35;
        mpx_value_alloc(&want, xv.dtype, r, odims, NULL);
        for (int64_t k = 0; k < want.n; k++) {
            int64_t co[MPX_MAX_RANK];
            bool fill = false;
            coords(k, r, odims, co);
            for (int i = 0; i < r; i++) {
                co[i] = np_pad(mode, co[i] - pads[i], dims[i]);
                fill = fill || co[i] < 0;
            }
            if (fill)
                copy_el(&want, k, &cv, 0);
            else
                copy_el(&want, k, &xv, flat(r, dims, co));
        }
        static const char *modes[] = {"mode=constant", "mode=reflect", "mode=edge", "mode=wrap"};
        const mpx_value *ins[3] = {&xv, &pv, &cv};
        mpx_status st = call(mk("Pad", 19, modes[mode]), 3, ins, 1);
        char why[160] = "";
        if (st != MPX_OK || !same_value(&out[0], &want, why, sizeof why))
            if (bad++ < 3)
                fprintf(stderr, "Pad case %d (%s): %s %s\n", it, modes[mode], why, err.msg);
        mpx_value_free(&xv);
        mpx_value_free(&want);
        mpx_value_free(&pv);
        mpx_value_free(&cv);
    }
    CHECK_MSG(bad == 0, "Pad: %d of %d random cases differ from numpy.pad's rules", bad, cases);
}

static void test_expand_tile(void) {
    OK("Expand", 13, "", "f3x1: 1 2 3 | i3: 2 1 6",
       "f2x3x6: 1 1 1 1 1 1 2 2 2 2 2 2 3 3 3 3 3 3 1 1 1 1 1 1 2 2 2 2 2 2 3 3 3 3 3 3");
    OK("Expand", 13, "", "i3x1: 1 2 3 | i2: 3 4", "i3x4: 1 1 1 1 2 2 2 2 3 3 3 3");
    OK("Expand", 13, "", "f2x3: iota | i1: 1", "f2x3: iota");
    OK("Expand", 13, "", "f: 4 | i2: 2 0", "f2x0:");
    FAIL("Expand", 13, "", "f3: iota | i1: 2", 1, MPX_E_SHAPE, "does not broadcast");
    FAIL("Expand", 13, "", "f3: iota | i1: -1", 1, MPX_E_SHAPE, "negative");
    OK("Tile", 13, "", "f2x2: 0 1 2 3 | i2: 2 2", "f4x4: 0 1 0 1 2 3 2 3 0 1 0 1 2 3 2 3");
    OK("Tile", 13, "", "i1x2: 0 1 | i2: 2 1", "i2x2: 0 1 0 1");
    OK("Tile", 13, "", "f2: 1 2 | i1: 0", "f0:");
    FAIL("Tile", 13, "", "f2: 1 2 | i2: 1 1", 1, MPX_E_SHAPE, "2 values for an input of rank 1");
    FAIL("Tile", 13, "", "f2: 1 2 | i1: -1", 1, MPX_E_SHAPE, "negative");
    FAIL("Tile", 13, "", "f2: 1 2 | i1: 4611686018427387904", 1, MPX_E_LIMIT, "too large");
    int bad = 0;
    for (int it = 0; it < 200; it++) {
        int r = (int)rnd(1, 4);
        int64_t dims[MPX_MAX_RANK], rep[MPX_MAX_RANK], odims[MPX_MAX_RANK], edims[MPX_MAX_RANK];
        int er = r + (int)rnd(0, 2);
        for (int i = 0; i < r; i++) {
            dims[i] = rnd(1, 3);
            rep[i] = rnd(0, 3);
            odims[i] = dims[i] * rep[i];
        }
        for (int i = 0; i < er; i++) {
            int xi = i - (er - r);
            edims[i] = xi >= 0 && dims[xi] != 1 ? dims[xi] : rnd(1, 3);
        }
        mpx_value x = random_value(it & 1, r, dims), tw, ew, rv = ints_value(r, rep),
                  sv = ints_value(er, edims);
        mpx_value_alloc(&tw, x.dtype, r, odims, NULL);
        mpx_value_alloc(&ew, x.dtype, er, edims, NULL);
        for (int64_t k = 0; k < tw.n; k++) {
            int64_t co[MPX_MAX_RANK];
            coords(k, r, odims, co);
            for (int i = 0; i < r; i++) co[i] %= dims[i];
            copy_el(&tw, k, &x, flat(r, dims, co));
        }
        for (int64_t k = 0; k < ew.n; k++) {
            int64_t co[MPX_MAX_RANK], ci[MPX_MAX_RANK];
            coords(k, er, edims, co);
            for (int i = 0; i < r; i++) ci[i] = dims[i] == 1 ? 0 : co[i + er - r];
            copy_el(&ew, k, &x, flat(r, dims, ci));
        }
        const mpx_value *ti[2] = {&x, &rv}, *ei[2] = {&x, &sv};
        char why[160] = "";
        if (call(mk("Tile", 13, ""), 2, ti, 1) != MPX_OK ||
            !same_value(&out[0], &tw, why, sizeof why))
            bad++;
        if (call(mk("Expand", 13, ""), 2, ei, 1) != MPX_OK ||
            !same_value(&out[0], &ew, why, sizeof why))
            bad++;
        mpx_value_free(&x);
        mpx_value_free(&tw);
        mpx_value_free(&ew);
        mpx_value_free(&rv);
        mpx_value_free(&sv);
    }
    CHECK_MSG(bad == 0, "Tile/Expand: %d random cases differ from the naive loops", bad);
}

static void test_depth_space(void) {
    /* DepthToSpace's examples: 1x8x2x3, blocksize 2. */
    const char *ex = "f1x8x2x3: 0 1 2 3 4 5 9 10 11 12 13 14 18 19 20 21 22 23 27 28 29 30 31 32 "
                     "36 37 38 39 40 41 45 46 47 48 49 50 54 55 56 57 58 59 63 64 65 66 67 68";
    OK("DepthToSpace", 13, "blocksize=2 mode=DCR", ex,
       "f1x2x4x6: 0 18 1 19 2 20 36 54 37 55 38 56 3 21 4 22 5 23 39 57 40 58 41 59 "
       "9 27 10 28 11 29 45 63 46 64 47 65 12 30 13 31 14 32 48 66 49 67 50 68");
    OK("DepthToSpace", 11, "blocksize=2 mode=CRD", ex,
       "f1x2x4x6: 0 9 1 10 2 11 18 27 19 28 20 29 3 12 4 13 5 14 21 30 22 31 23 32 "
       "36 45 37 46 38 47 54 63 55 64 56 65 39 48 40 49 41 50 57 66 58 67 59 68");
    /* SpaceToDepth's example: 1x2x2x2 blocksize 2... and it inverts DCR. */
    OK("SpaceToDepth", 13, "blocksize=2", "i1x1x2x2: 0 1 2 3", "i1x4x1x1: 0 1 2 3");
    FAIL("DepthToSpace", 13, "blocksize=3", "f1x8x2x3: iota", 1, MPX_E_SHAPE, "do not divide");
    FAIL("DepthToSpace", 13, "blocksize=2 mode=XYZ", "f1x8x2x3: iota", 1, MPX_E_INVALID, "XYZ");
    FAIL("DepthToSpace", 13, "blocksize=5000", "f0x0x0x0:", 1, MPX_E_INVALID, "out of range");
    OK("DepthToSpace", 13, "blocksize=4096", "f0x0x0x0:", "f0x0x0x0:");
    OK("SpaceToDepth", 13, "blocksize=4096", "f1x2x0x0:", "f1x33554432x0x0:");
    FAIL("DepthToSpace", 13, "blocksize=0", "f1x8x2x3: iota", 1, MPX_E_INVALID, "out of range");
    FAIL("DepthToSpace", 13, "blocksize=2", "f8x2x3: iota", 1, MPX_E_SHAPE, "4-D");
    FAIL("SpaceToDepth", 13, "blocksize=2", "f1x1x3x2: iota", 1, MPX_E_SHAPE, "does not divide");
    int bad = 0;
    for (int it = 0; it < 60; it++) {
        int64_t b = rnd(1, 3), N = rnd(1, 2), C = rnd(1, 3), H = rnd(1, 3), W = rnd(1, 3);
        int64_t dims[4] = {N, C * b * b, H, W};
        bool crd = it & 1;
        mpx_value x = random_value(it & 2, 4, dims), want;
        int64_t od[4] = {N, C, H * b, W * b};
        mpx_value_alloc(&want, x.dtype, 4, od, NULL);
        /* reshape to [N, b, b, C, H, W] (DCR) or [N, C, b, b, H, W] (CRD), then
         * transpose to [N, C, H, b, W, b]: written as the loops it means. */
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t i = 0; i < b; i++)
                        for (int64_t w = 0; w < W; w++)
                            for (int64_t j = 0; j < b; j++) {
                                int64_t ch = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
                                int64_t src = ((n * C * b * b + ch) * H + h) * W + w;
                                int64_t dst = ((n * C + c) * H * b + h * b + i) * W * b + w * b + j;
                                copy_el(&want, dst, &x, src);
                            }
        char attrs[64];
        snprintf(attrs, sizeof attrs, "blocksize=%lld mode=%s", (long long)b, crd ? "CRD" : "DCR");
        const mpx_value *ins[1] = {&x};
        char why[160] = "";
        if (call(mk("DepthToSpace", 13, attrs), 1, ins, 1) != MPX_OK ||
            !same_value(&out[0], &want, why, sizeof why))
            bad++;
        if (!crd) {
            /* SpaceToDepth undoes DCR. */
            mpx_value y = out[0];
            out[0].n = -1;
            out[0].f = NULL;
            out[0].i = NULL;
            const mpx_value *yi[1] = {&y};
            snprintf(attrs, sizeof attrs, "blocksize=%lld", (long long)b);
            if (call(mk("SpaceToDepth", 13, attrs), 1, yi, 1) != MPX_OK ||
                !same_value(&out[0], &x, why, sizeof why))
                bad++;
            mpx_value_free(&y);
        }
        mpx_value_free(&x);
        mpx_value_free(&want);
    }
    CHECK_MSG(bad == 0, "DepthToSpace/SpaceToDepth: %d random cases differ", bad);
}

static void test_shape_constants(void) {
    OK("Shape", 13, "", "f3x4x5: iota", "i3: 3 4 5");
    OK("Shape", 15, "start=-1", "f3x4x5: iota", "i1: 5");
    OK("Shape", 15, "end=-1", "f3x4x5: iota", "i2: 3 4");
    OK("Shape", 15, "start=1 end=2", "i3x4x5: iota", "i1: 4");
    OK("Shape", 15, "start=10", "f3x4x5: iota", "i0:");
    OK("Shape", 15, "start=-10 end=10", "f3x4x5: iota", "i3: 3 4 5");
    OK("Shape", 15, "", "f: 1", "i0:");
    CHECK(out[0].dtype == MPX_DT_INT64);
    OK("Size", 13, "", "f3x4x5: iota", "i: 60");
    OK("Size", 13, "", "b0x4:", "i: 0");

    OK("Constant", 13, "value=T:f2:1.5,-2", "", "f2: 1.5 -2");
    OK("Constant", 13, "value=T:i2x2:1,2,3,4", "", "i2x2: 1 2 3 4");
    OK("Constant", 13, "value_float=0.25", "", "f: 0.25");
    OK("Constant", 13, "value_floats=[1.0,2.5]", "", "f2: 1 2.5");
    OK("Constant", 13, "value_int=-3", "", "i: -3");
    OK("Constant", 13, "value_ints=[4,5,6]", "", "i3: 4 5 6");
    FAIL("Constant", 13, "value_string=abc", "", 1, MPX_E_UNSUPPORTED, "value_string");
    FAIL("Constant", 13, "", "", 1, MPX_E_INVALID, "no value attribute");

    OK("ConstantOfShape", 13, "", "i2: 2 3", "f2x3: 0 0 0 0 0 0");
    OK("ConstantOfShape", 13, "value=T:i1:7", "i1: 3", "i3: 7 7 7");
    OK("ConstantOfShape", 13, "value=T:f1:0.5", "i0:", "f: 0.5");
    OK("ConstantOfShape", 13, "", "i2: 2 0", "f2x0:");
    FAIL("ConstantOfShape", 13, "", "i2: 2 -1", 1, MPX_E_SHAPE, "negative");
    FAIL("ConstantOfShape", 13, "value=T:f2:1,2", "i1: 2", 1, MPX_E_INVALID, "one element");
    FAIL("ConstantOfShape", 13, "", "i2: 65536 65536", 1, MPX_E_LIMIT, "");

    /* Range's examples, and the int64 extremes. */
    OK("Range", 13, "", "f: 1 | f: 5 | f: 2", "f2: 1 3");
    OK("Range", 13, "", "I: 10 | I: 6 | I: -3", "I2: 10 7");
    OK("Range", 13, "", "i: 0 | i: 0 | i: 1", "i0:");
    OK("Range", 13, "", "f: 0 | f: 1 | f: 0.25", "f4: 0 0.25 0.5 0.75");
    OK("Range", 13, "", "i: -9223372036854775807 | i: 9223372036854775807 | i: 9223372036854775807",
       "i2: -9223372036854775807 0");
    OK("Range", 13, "", "i: -9223372036854775808 | i: 9223372036854775807 | i: 9223372036854775807",
       "i3: -9223372036854775808 -1 9223372036854775806");
    OK("Range", 13, "",
       "i: 9223372036854775807 | i: -9223372036854775808 | i: -9223372036854775808",
       "i2: 9223372036854775807 -1");
    OK("Range", 13, "", "i: 5 | i: 10 | i: -1", "i0:");
    FAIL("Range", 13, "", "i: 0 | i: 5 | i: 0", 1, MPX_E_INVALID, "delta is 0");
    FAIL("Range", 13, "", "f: 0 | f: 5 | f: 0", 1, MPX_E_INVALID, "not finite");
    FAIL("Range", 13, "", "f: 0 | f: 1e30 | f: 1", 1, MPX_E_LIMIT, "elements");
    FAIL("Range", 13, "", "f: 0 | i: 5 | f: 1", 1, MPX_E_INVALID, "differ in type");
    FAIL("Range", 13, "", "f2: 0 1 | f: 5 | f: 1", 1, MPX_E_SHAPE, "scalar");
}

static void test_topk_nonzero(void) {
    /* TopK's example: 3x4 iota, k 3. */
    CHECK(run("TopK", 11, "", "f3x4: iota | i1: 3", 2) == MPX_OK);
    EXPECT(0, "f3x3: 3 2 1 7 6 5 11 10 9");
    EXPECT(1, "i3x3: 3 2 1 3 2 1 3 2 1");
    CHECK(run("TopK", 11, "largest=0", "f3x4: iota | i1: 3", 2) == MPX_OK);
    EXPECT(0, "f3x3: 0 1 2 4 5 6 8 9 10");
    EXPECT(1, "i3x3: 0 1 2 0 1 2 0 1 2");
    CHECK(run("TopK", 11, "axis=0", "i3x2: 5 1 9 1 7 3 | i1: 2", 2) == MPX_OK);
    EXPECT(0, "i2x2: 9 3 7 1");
    EXPECT(1, "i2x2: 1 2 2 0");
    /* Equal values keep the lower index first; NaN ranks above everything. */
    CHECK(run("TopK", 11, "", "f6: 2 nan 2 5 -inf 2 | i1: 4", 2) == MPX_OK);
    EXPECT(0, "f4: nan 5 2 2");
    EXPECT(1, "i4: 1 3 0 2");
    CHECK(run("TopK", 11, "largest=0", "f6: 2 nan 2 5 -inf 2 | i1: 3", 2) == MPX_OK);
    EXPECT(0, "f3: -inf 2 2");
    EXPECT(1, "i3: 4 0 2");
    CHECK(run("TopK", 1, "k=1", "f2x3: 1 3 2 6 4 5", 2) == MPX_OK);
    EXPECT(0, "f2x1: 3 6");
    EXPECT(1, "i2x1: 1 0");
    CHECK(run("TopK", 11, "", "f2x3: iota | i1: 0", 2) == MPX_OK);
    EXPECT(0, "f2x0:");
    FAIL("TopK", 11, "", "f2x3: iota | i1: 4", 2, MPX_E_SHAPE, "k = 4");
    FAIL("TopK", 11, "", "f2x3: iota | i1: -1", 2, MPX_E_SHAPE, "k = -1");
    FAIL("TopK", 11, "", "f2x3: iota", 2, MPX_E_INVALID, "k is required");
    FAIL("TopK", 11, "", "f: 1 | i1: 1", 2, MPX_E_SHAPE, "rank");

    OK("NonZero", 13, "", "i2x2: 1 0 1 1", "i2x3: 0 1 1 0 0 1");
    OK("NonZero", 13, "", "f3: 0 nan -0", "i1x1: 1");
    OK("NonZero", 13, "", "f: 3", "i1x1: 0");
    OK("NonZero", 13, "", "f2x2: 0 0 0 0", "i2x0:");
    OK("NonZero", 13, "", "b2x1x3: 0 1 0 1 0 1", "i3x3: 0 1 1 0 0 0 1 0 2");
}

/* Whatever the op, no input value at all is refused (never read). */
static void test_missing(void) {
    static const char *ops[] = {"Concat",         "Split",        "Reshape",
                                "Flatten",        "Transpose",    "Squeeze",
                                "Unsqueeze",      "Slice",        "Gather",
                                "GatherElements", "Pad",          "Expand",
                                "Tile",           "DepthToSpace", "SpaceToDepth",
                                "Shape",          "Size",         "ConstantOfShape",
                                "Identity",       "Dropout",      "Range",
                                "TopK",           "NonZero"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        mpx_node *n = mk(ops[k], 13, "axis=0");
        CHECK_MSG(mpx_kernel_for(n->op) != NULL, "%s has no kernel", ops[k]);
        mpx_value broken = {.dtype = MPX_DT_FLOAT, .rank = 1, .dims = {4}, .n = 4};
        const mpx_value *ins[3] = {NULL, NULL, NULL};
        mpx_status st = call(n, 3, ins, 1);
        CHECK_MSG(st != MPX_OK && strstr(err.msg, "input 0"), "%s with no input: %d %s", ops[k], st,
                  err.msg);
        ins[0] = &broken; /* a float value without a buffer */
        st = call(n, 1, ins, 1);
        CHECK_MSG(st != MPX_OK && strstr(err.msg, "input 0"), "%s with a broken input: %s", ops[k],
                  err.msg);
        mpx_value x = V("f4: iota");
        /* n that disagrees with the dims, and dims whose product overflows. */
        mpx_value liar = x, huge = x;
        liar.rank = 2, liar.dims[0] = 2, liar.dims[1] = 3;
        huge.rank = 3, huge.n = 0, huge.dims[0] = huge.dims[1] = (int64_t)1 << 40, huge.dims[2] = 0;
        ins[0] = &liar;
        st = call(n, 1, ins, 1);
        CHECK_MSG(st != MPX_OK && strstr(err.msg, "malformed"), "%s with n != dims: %s", ops[k],
                  err.msg);
        ins[0] = &huge;
        st = call(n, 1, ins, 1);
        CHECK_MSG(st != MPX_OK && strstr(err.msg, "malformed"), "%s with huge dims: %s", ops[k],
                  err.msg);
        ins[0] = &x;
        st = call(n, 1, ins, 0);
        CHECK_MSG(st != MPX_OK, "%s with no output slot", ops[k]);
        mpx_value_free(&x);
    }
    CHECK(mpx_kernel_for(MPX_OP_Constant) != NULL);
    CHECK(mpx_kernel_for(MPX_OP_UNKNOWN) == NULL);
    CHECK(mpx_kernel_for(MPX_OP_COUNT) == NULL);
}

/* The operators of the coverage issue's first batch (their values are
 * checked by ONNX's cases in onnx_conformance): each bad input refused,
 * naming the node, with no output left allocated. */
static void test_new_ops_refusals(void) {
    FAIL("Trilu", 14, "", "f3: 1 2 3", 1, MPX_E_SHAPE, "rank 2 or more");
    FAIL("Trilu", 14, "", "f2x2: 1 2 3 4 | i2: 0 1", 1, MPX_E_SHAPE, "k has 2 values");
    FAIL("GatherND", 13, "", "f2x2: 1 2 3 4 | i1x2: 0 5", 1, MPX_E_SHAPE, "index 5 is out of range");
    FAIL("GatherND", 13, "batch_dims=2", "f2x2: 1 2 3 4 | i2x1: 0 1", 1, MPX_E_SHAPE, "batch_dims 2");
    FAIL("ScatterND", 13, "", "f4: 1 2 3 4 | i2x1: 0 1 | f3: 9 9 9", 1, MPX_E_SHAPE, "updates' shape");
    FAIL("ScatterND", 16, "reduction=avg", "f4: 1 2 3 4 | i1x1: 0 | f1: 9", 1, MPX_E_INVALID, "reduction \"avg\"");
    FAIL("ScatterElements", 13, "axis=0", "f4: 1 2 3 4 | i1: 7 | f1: 9", 1, MPX_E_SHAPE, "index 7 is out of range");
    FAIL("ScatterElements", 13, "axis=0", "f4: 1 2 3 4 | i1: 0 | i1: 9", 1, MPX_E_INVALID, "updates and data differ in type");
    FAIL("OneHot", 11, "", "i2: 0 1 | i: 0 | f2: 0 1", 1, MPX_E_SHAPE, "depth 0 is not from 1");
    FAIL("OneHot", 11, "", "i2: 0 1 | i: 3 | f3: 0 1 2", 1, MPX_E_SHAPE, "values must be [off, on]");
    FAIL("EyeLike", 9, "dtype=99", "f2x2: 1 2 3 4", 1, MPX_E_INVALID, "attribute dtype (99)");
    FAIL("EyeLike", 9, "", "f3: 1 2 3", 1, MPX_E_SHAPE, "2-D input");
    FAIL("Compress", 11, "axis=0", "f2: 1 2 | b3: 1 0 1", 1, MPX_E_SHAPE, "condition has 3 values for 2 slices");
    FAIL("ReverseSequence", 10, "", "f2x2: 1 2 3 4 | i2: 3 1", 1, MPX_E_INVALID, "sequence_lens[0] = 3");
    FAIL("HannWindow", 17, "", "i: -1", 1, MPX_E_LIMIT, "size -1 is out of range");
    FAIL("HannWindow", 17, "output_datatype=7", "i: 4", 1, MPX_E_UNSUPPORTED, "output_datatype 7");
    FAIL("Det", 11, "", "f2x3: iota", 1, MPX_E_SHAPE, "square matrices");
    FAIL("NegativeLogLikelihoodLoss", 13, "", "f2x3: iota | i2: 0 3", 1, MPX_E_INVALID, "target 3 at 1");
    FAIL("NegativeLogLikelihoodLoss", 13, "reduction=avg", "f2x3: iota | i2: 0 1", 1, MPX_E_INVALID, "reduction \"avg\"");
    FAIL("SoftmaxCrossEntropyLoss", 13, "", "f2x3: iota | i2: 0 9", 2, MPX_E_INVALID, "target 9 at 1");
    FAIL("QuantizeLinear", 13, "axis=0", "f2x3: iota | f3: 1 1 1", 1, MPX_E_SHAPE, "per-axis scale needs 2 values");
    FAIL("QuantizeLinear", 13, "", "f2: 1 2 | f: 1 | I: 0", 1, MPX_E_UNSUPPORTED, "8- and 16-bit");
    FAIL("DequantizeLinear", 13, "", "f2: 1 2 | f: 1", 1, MPX_E_INVALID, "x must be an integer tensor");
    FAIL("BitShift", 11, "direction=LEFT", "f2: 1 2 | f2: 1 1", 1, MPX_E_INVALID, "unsigned integers, not float32");
    FAIL("BitShift", 11, "direction=UP", "u2: 1 2 | u2: 1 1", 1, MPX_E_INVALID, "is not LEFT or RIGHT");
    FAIL("MeanVarianceNormalization", 13, "axes=[5]", "f2x2: 1 2 3 4", 1, MPX_E_INVALID, "axis 5 is out of range");
    /* a shift wraps to the type's width; by the width or more gives 0 */
    OK("BitShift", 11, "direction=LEFT", "u3: 1 255 3 | u3: 1 1 9", "u3: 2 254 0");
    OK("BitShift", 11, "direction=RIGHT", "U3: -1 8 8 | U3: 63 64 1", "U3: 1 0 4");
    /* recurrent ops: X [seq 2, batch 1, input 1], hidden 1 */
    FAIL("LSTM", 14, "direction=sideways", "f2x1x1: 1 2 | f1x4x1: iota | f1x4x1: iota", 3, MPX_E_INVALID,
         "direction \"sideways\" is not forward, reverse or bidirectional");
    FAIL("LSTM", 14, "", "f2x1x1: 1 2 | f1x3x1: iota | f1x4x1: iota", 3, MPX_E_SHAPE, "W has shape 1x3x1; 1x4x1 expected");
    FAIL("GRU", 14, "", "f2x1x1: 1 2 | f1x3x1: iota | f1x3x1: iota | - | I1: 3", 2, MPX_E_INVALID,
         "sequence_lens[0] = 3 is outside [0, 2]");
    FAIL("RNN", 14, "clip=-1.0", "f2x1x1: 1 2 | f1x1x1: iota | f1x1x1: iota", 2, MPX_E_INVALID, "clip -1 must be positive");
    FAIL("RNN", 14, "hidden_size=3", "f2x1x1: 1 2 | f1x1x1: iota | f1x1x1: iota", 2, MPX_E_SHAPE, "hidden_size 3 does not match");
    /* h_t = tanh(x_t w + h_{t-1} r), w = 0.5, r = 1: tanh(0.5), tanh(2 * 0.5 + tanh(0.5)) */
    OK("RNN", 14, "", "f2x1x1: 1 2 | f1x1x1: 0.5 | f1x1x1: 1", "f2x1x1x1: 0.462117165 0.898063004");
    FAIL("LpNormalization", 13, "p=3", "f2: 1 2", 1, MPX_E_INVALID, "p 3 is not 1 or 2");
    FAIL("GlobalLpPool", 13, "p=0", "f1x1x2: 1 2", 1, MPX_E_INVALID, "p 0 is not an integer from 1 to 64");
    FAIL("GroupNormalization", 18, "num_groups=4", "f1x6x1: iota | f4: iota | f4: iota", 1, MPX_E_INVALID,
         "num_groups 4 does not divide the 6 channels");
    FAIL("GroupNormalization", 21, "num_groups=3", "f1x6x1: iota | f3: iota | f3: iota", 1, MPX_E_SHAPE, "one per channel");
    FAIL("RMSNormalization", 23, "axis=2", "f2x3: iota | f3: iota", 1, MPX_E_INVALID, "axis 2 is out of range");
    FAIL("BitwiseAnd", 18, "", "f2: 1 2 | f2: 1 2", 1, MPX_E_INVALID, "takes integers, not float32");
    FAIL("NonMaxSuppression", 11, "", "f1x2x4: iota | f1x1x2: 1 2 | i: 2 | f: 1.5", 1, MPX_E_INVALID,
         "iou_threshold 1.5 is outside [0, 1]");
    FAIL("NonMaxSuppression", 11, "", "f1x2x3: iota | f1x1x2: 1 2", 1, MPX_E_SHAPE, "[batches, boxes, 4]");
    FAIL("NonMaxSuppression", 11, "center_point_box=2", "f1x2x4: iota | f1x1x2: 1 2", 1, MPX_E_INVALID,
         "center_point_box 2 is not 0 or 1");
    /* two overlapping boxes (IoU 1/3) and a third apart: the lower score of
     * the pair goes at threshold 0.3, stays at 0.5 */
    OK("NonMaxSuppression", 11, "", "f1x3x4: 0 0 2 2  0 1 2 3  5 5 6 6 | f1x1x3: 0.9 0.8 0.7 | i: 3 | f: 0.3",
       "i2x3: 0 0 0  0 0 2");
    OK("NonMaxSuppression", 11, "", "f1x3x4: 0 0 2 2  0 1 2 3  5 5 6 6 | f1x1x3: 0.9 0.8 0.7 | i: 3 | f: 0.5",
       "i3x3: 0 0 0  0 0 1  0 0 2");
    FAIL("GridSample", 16, "mode=area", "f1x1x2x2: iota | f1x1x1x2: 0 0", 1, MPX_E_INVALID,
         "mode \"area\" is not bilinear, nearest or bicubic");
    FAIL("GridSample", 16, "", "f1x1x2x2: iota | f1x1x1x3: 0 0 0", 1, MPX_E_SHAPE, "[N, Ho, Wo, 2] expected");
    FAIL("GridSample", 16, "padding_mode=wrap", "f1x1x2x2: iota | f1x1x1x2: 0 0", 1, MPX_E_INVALID, "padding_mode \"wrap\"");
    /* the centre of a 2x2 image (align_corners 0): the mean of its pixels */
    OK("GridSample", 16, "", "f1x1x2x2: 1 2 3 4 | f1x1x1x2: 0 0", "f1x1x1x1: 2.5");
    /* ONNX Runtime's contrib ops */
    FAIL("FusedMatMul", 1, "transBatchA=1", "f2x2: iota | f2x2: iota", 1, MPX_E_UNSUPPORTED, "transBatchA");
    FAIL("BiasGelu", 1, "", "f2x3: iota | f2: iota", 1, MPX_E_SHAPE, "must be 1-D with the last dim");
    FAIL("FastGelu", 1, "", "f2x3: iota | f2x3: iota", 1, MPX_E_SHAPE, "must be 1-D with the last dim");
    FAIL("BiasAdd", 1, "", "f1x2x3: iota | f3: iota | f1x3x2: iota", 1, MPX_E_SHAPE, "must have the input's shape");
    FAIL("SkipLayerNormalization", 1, "", "f1x2x3: iota | f1x2x3: iota | f2: iota", 1, MPX_E_SHAPE, "gamma");
    FAIL("SkipLayerNormalization", 1, "epsilon=-1", "f1x2x3: iota | f1x2x3: iota | f3: iota", 1, MPX_E_INVALID,
         "epsilon -1 must not be negative");
    FAIL("SkipSimplifiedLayerNormalization", 1, "", "f: 1 | f: 1 | f1: 1", 1, MPX_E_SHAPE, "a last dim");
    /* transA: [[0 2 4] [1 3 5]] (A 3x2 transposed) times [1 1 1], times alpha 0.5 */
    OK("FusedMatMul", 1, "transA=1 alpha=0.5", "f3x2: 0 1 2 3 4 5 | f3x1: 1 1 1", "f2x1: 3 4.5");
    OK("BiasAdd", 1, "", "f1x1x2: 1 2 | f2: 10 20 | f1x1x2: 100 200", "f1x1x2: 111 222");
    OK("QuickGelu", 1, "", "f2: 0 100", "f2: 0 100");
    /* (1 3) + (1 1) = (2 4): mean 3, variance 1 -> -1 1, times gamma, plus beta */
    OK("SkipLayerNormalization", 1, "", "f1x2: 1 3 | f1x2: 1 1 | f2: 2 3 | f2: 0.5 0.5", "f1x2: -1.5 3.5");
    /* (3 4) / rms 3.5355339 */
    OK("SkipSimplifiedLayerNormalization", 1, "", "f1x2: 3 4 | f1x2: 0 0 | f2: 1 1",
       "f1x2: 0.848528137 1.13137085");
    /* CenterCropPad, Col2Im, AffineGrid, MaxRoiPool */
    FAIL("CenterCropPad", 18, "axes=[0]", "f4: iota | i2: 2 2", 1, MPX_E_SHAPE, "shape has 2 values for 1 axes");
    /* 1 2 3 4 cut to the middle two; 1 2 padded to 4: a zero before, one after */
    OK("CenterCropPad", 18, "", "f4: 1 2 3 4 | i1: 2", "f2: 2 3");
    OK("CenterCropPad", 18, "", "f2: 1 2 | i1: 4", "f4: 0 1 2 0");
    FAIL("Col2Im", 18, "", "f1x4x3: iota | i2: 2 2 | i2: 2 2", 1, MPX_E_SHAPE, "must be [N, C x 4, 1]");
    FAIL("AffineGrid", 20, "", "f1x2x3: iota | i3: 1 1 2", 1, MPX_E_INVALID, "size must be 4 or 5 integers");
    FAIL("MaxRoiPool", 16, "pooled_shape=[1,1]", "f1x1x2x2: iota | f1x5: 3 0 0 1 1", 1, MPX_E_INVALID,
         "roi 0: batch index 3 is not one of the 1 images");
    FAIL("DeformConv", 19, "", "f1x1x3x3: iota | f1x1x2x2: iota | f1x8x1x1: iota", 1, MPX_E_SHAPE,
         "offset 1x8x1x1 must be [1, 8, 2, 2]");
    /* zero offsets and no mask: a plain Conv; a 1x1 kernel of 2 copies X times 2 */
    OK("DeformConv", 19, "", "f1x1x1x2: 1 2 | f1x1x1x1: 2 | f1x2x1x2: 0 0 0 0", "f1x1x1x2: 2 4");
    /* GroupQueryAttention */
    FAIL("GroupQueryAttention", 1, "num_heads=3 kv_num_heads=2", "f1x1x6: iota | f1x1x4: iota | f1x1x4: iota", 1,
         MPX_E_INVALID, "num_heads 3 must be a multiple of kv_num_heads 2");
    FAIL("GroupQueryAttention", 1, "num_heads=2 kv_num_heads=1", "f1x1x4: iota | f1x1x2: iota | f1x1x2: iota", 1,
         MPX_E_INVALID, "seqlens_k (one per batch) and total_sequence_length (one) are required");
    FAIL("GroupQueryAttention", 1, "num_heads=2 kv_num_heads=1",
         "f1x1x4: iota | f1x1x2: iota | f1x1x2: iota | - | - | I1: 7 | I: 2", 1, MPX_E_INVALID,
         "seqlens_k[0] = 7 does not fit");
    /* DFT, STFT, MelWeightMatrix */
    FAIL("DFT", 17, "axis=2", "f1x4x1: iota", 1, MPX_E_INVALID, "axis 2 is out of range");
    FAIL("DFT", 17, "inverse=1 onesided=1", "f1x4x2: iota", 1, MPX_E_UNSUPPORTED, "inverse one-sided");
    /* an impulse: every bin 1 + 0i (the twiddles of n = 0 are exact) */
    OK("DFT", 17, "", "f1x4x1: 1 0 0 0", "f1x4x2: 1 0 1 0 1 0 1 0");
    FAIL("STFT", 17, "", "f1x4x1: iota | i: 1 | - | i: 8", 1, MPX_E_SHAPE, "frame_length 8 is longer than the signal (4)");
    FAIL("MelWeightMatrix", 17, "", "i: 4 | i: 8 | i: 100 | f: 0 | f: 4000", 1, MPX_E_INVALID, "outside [0, 5)");
    /* Attention (ONNX, opset 23) */
    FAIL("Attention", 23, "", "f1x3x4: iota | f1x3x4: iota | f1x3x4: iota", 1, MPX_E_INVALID,
         "3-D inputs need q_num_heads and kv_num_heads");
    FAIL("Attention", 23, "", "f1x3x1x4: iota | f1x2x1x4: iota | f1x2x1x4: iota", 1, MPX_E_SHAPE,
         "3 query heads do not group over 2 key/value heads");
    FAIL("Attention", 23, "qk_matmul_output_mode=5", "f1x1x1x2: 1 1 | f1x1x1x2: 1 1 | f1x1x1x2: 1 1", 1,
         MPX_E_INVALID, "qk_matmul_output_mode 5 is not 0 to 3");
    /* one key: softmax 1, Y = V */
    OK("Attention", 23, "", "f1x1x1x2: 1 2 | f1x1x1x2: 3 4 | f1x1x1x2: 5 6", "f1x1x1x2: 5 6");
    /* a boolean mask masking every key: a row of zeros (ONNX) */
    OK("Attention", 23, "", "f1x1x1x2: 1 2 | f1x1x1x2: 3 4 | f1x1x1x2: 5 6 | b1x1: 0", "f1x1x1x2: 0 0");
    /* MatMulNBits, RotaryEmbedding */
    FAIL("MatMulNBits", 1, "K=16 N=1 bits=3 block_size=16", "f1x16: iota | u1x1x6: 0 0 0 0 0 0 | f1: 1", 1,
         MPX_E_INVALID, "bits 2, 4 or 8");
    FAIL("MatMulNBits", 1, "K=16 N=1 bits=4 block_size=16", "f1x16: iota | u1x1x4: 0 0 0 0 | f1: 1", 1, MPX_E_SHAPE,
         "must be uint8 [1, 1, 8]");
    FAIL("MatMulNBits", 1, "K=16 N=1 bits=4 block_size=16", "f1x8: iota | u1x1x8: 0 0 0 0 0 0 0 0 | f1: 1", 1,
         MPX_E_SHAPE, "its last dim must be K = 16");
    /* codes 1 (low nibble) and 0 alternating, zero point 8, scale 0.5: w = -3.5, -4, ...; A = 1 0 0 ...: y = -3.5 */
    OK("MatMulNBits", 1, "K=16 N=1 bits=4 block_size=16",
       "f1x16: 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 | u1x1x8: 1 1 1 1 1 1 1 1 | f1: 0.5", "f1x1: -3.5");
    FAIL("RotaryEmbedding", 23, "", "f1x1x2x4: iota | f4x2: iota | f4x2: iota | i1x2: 0 9", 1, MPX_E_INVALID,
         "position 9 (batch 0, token 1) is outside the caches' 4 positions");
    FAIL("RotaryEmbedding", 23, "rotary_embedding_dim=3", "f1x1x1x4: iota | f4x2: iota | f4x2: iota | i1x1: 0", 1,
         MPX_E_INVALID, "must be even");
    /* angle 90 degrees (cos 0, sin 1): (x0, x1) -> (-x1, x0) */
    OK("RotaryEmbedding", 23, "interleaved=1", "f1x1x1x2: 3 5 | f1x1: 0 | f1x1: 1 | i1x1: 0", "f1x1x1x2: -5 3");
    /* integer products, MaxUnpool, Unique, RoiAlign */
    FAIL("MatMulInteger", 10, "", "f2x2: iota | u2x1: 1 1", 1, MPX_E_INVALID, "A is float32; 8- or 16-bit integers expected");
    FAIL("MatMulInteger", 10, "", "u2x2: 1 2 3 4 | u2x1: 1 1 | u3: 1 1 1", 1, MPX_E_SHAPE,
         "a_zero_point has shape 3; one value or 2 expected");
    /* (A - 1) @ B: [[0 1] [2 3]] @ [1 1]^T */
    OK("MatMulInteger", 10, "", "u2x2: 1 2 3 4 | u2x1: 1 1 | u: 1", "I2x1: 1 5");
    FAIL("QLinearMatMul", 10, "", "u1x2: 1 2 | - | - | u2x1: 1 1", 1, MPX_E_INVALID, "a_scale, b_scale and y_scale are required");
    /* acc 1*1 + 2*1 = 3; 3 * (0.5 * 1 / 0.25) = 6, plus y's zero point 10 */
    OK("QLinearMatMul", 10, "", "u1x2: 1 2 | f: 0.5 | u: 0 | u2x1: 1 1 | f: 1 | u: 0 | f: 0.25 | u: 10", "u1x1: 16");
    /* saturates at 255 */
    OK("QLinearMatMul", 10, "", "u1x2: 200 200 | f: 1 | u: 0 | u2x1: 1 1 | f: 1 | u: 0 | f: 1 | u: 0", "u1x1: 255");
    FAIL("ConvInteger", 10, "", "u1x1x3x3: iota | u2x1x2x2: iota | u: 0 | u3: 0 0 0", 1, MPX_E_SHAPE,
         "w_zero_point has shape 3; one value or 2 expected");
    FAIL("MaxUnpool", 11, "kernel_shape=[2,2] strides=[2,2]", "f1x1x1x2: 5 6 | i1x1x1x2: 1 9", 1, MPX_E_INVALID,
         "I[1] = 9 is outside the unpooled tensor's 8 values");
    OK("MaxUnpool", 11, "kernel_shape=[2,2] strides=[2,2]", "f1x1x1x2: 5 6 | i1x1x1x2: 1 6",
       "f1x1x2x4: 0 5 0 0 0 0 6 0");
    FAIL("Unique", 11, "axis=2", "f2x2: iota", 1, MPX_E_INVALID, "axis 2 is out of range");
    OK("Unique", 11, "", "f5: 2 1 2 3 1", "f3: 1 2 3");
    OK("Unique", 11, "sorted=0", "f5: 2 1 2 3 1", "f3: 2 1 3");
    FAIL("RoiAlign", 16, "mode=median", "f1x1x2x2: iota | f1x4: 0 0 1 1 | i1: 0", 1, MPX_E_INVALID,
         "mode \"median\" is not avg or max");
    FAIL("RoiAlign", 16, "", "f1x1x2x2: iota | f1x4: 0 0 1 1 | i1: 3", 1, MPX_E_INVALID,
         "batch_indices[0] = 3 is outside [0, 1)");
    /* an all-zero row divides by a zero norm: 0, as ORT */
    OK("LpNormalization", 13, "axis=1 p=1", "f2x2: 0 0 3 -1", "f2x2: 0 0 0.75 -0.25");
    OK("BitwiseNot", 18, "", "u2: 0 5", "u2: 255 250");
    /* a constant group divides 0 by epsilon: 0, not NaN */
    OK("MeanVarianceNormalization", 13, "axes=[1]", "f2x2: 1 3 5 5", "f2x2: -1 1 0 0");
    /* and three values, beside ONNX's cases: */
    OK("Trilu", 14, "upper=0", "f2x3: 1 2 3 4 5 6", "f2x3: 1 0 0 4 5 0");
    OK("Det", 11, "", "f2x2: 1 2 3 4", "f: -2");
    OK("OneHot", 11, "axis=0", "f2: 1 -1 | i: 3 | i2: 0 7", "i3x2: 0 0 7 0 0 7");
}

/* The random generators: the values a distribution gives (a statistical
 * check with bounds at 4 standard errors, on fixed seeds: it cannot flake),
 * the same values for the same seed, others for another. */
static void test_random(void) {
    CHECK(run("RandomNormal", 15, "shape=[20000] mean=2.0 scale=3.0 seed=5.0", "", 1) == MPX_OK);
    double s = 0, s2 = 0;
    for (int64_t k = 0; k < out[0].n; k++) s += out[0].f[k], s2 += (double)out[0].f[k] * out[0].f[k];
    double mean = s / 20000, sd = sqrt(s2 / 20000 - mean * mean);
    CHECK(out[0].n == 20000 && fabs(mean - 2.0) < 4 * 3.0 / sqrt(20000.0) && fabs(sd - 3.0) < 0.1);
    float first[3] = {out[0].f[0], out[0].f[1], out[0].f[2]};
    CHECK(run("RandomNormal", 15, "shape=[3] mean=2.0 scale=3.0 seed=5.0", "", 1) == MPX_OK);
    CHECK(out[0].f[0] == first[0] && out[0].f[1] == first[1] && out[0].f[2] == first[2]);
    CHECK(run("RandomNormal", 15, "shape=[3] mean=2.0 scale=3.0 seed=6.0", "", 1) == MPX_OK);
    CHECK(out[0].f[0] != first[0]);
    CHECK(run("RandomUniform", 15, "shape=[100,100] low=-1.0 high=3.0 seed=1.0", "", 1) == MPX_OK);
    bool inside = true;
    s = 0;
    for (int64_t k = 0; k < out[0].n; k++) inside = inside && out[0].f[k] >= -1.0f && out[0].f[k] < 3.0f, s += out[0].f[k];
    CHECK(inside && fabs(s / 10000 - 1.0) < 4 * (4.0 / sqrt(12.0)) / 100.0);
    CHECK(run("RandomUniformLike", 15, "dtype=11", "f2x3: iota", 1) == MPX_OK);
    CHECK(out[0].rank == 2 && out[0].dims[1] == 3 && out[0].dtype == MPX_DT_DOUBLE);
    /* Bernoulli of 0.3, 400 times: about 120 ones */
    char spec[2048] = "f400:";
    for (int k = 0; k < 400; k++) strcat(spec, " 0.3");
    CHECK(run("Bernoulli", 15, "seed=2.0", spec, 1) == MPX_OK);
    s = 0;
    for (int64_t k = 0; k < out[0].n; k++) s += out[0].f[k];
    CHECK(fabs(s / 400 - 0.3) < 4 * sqrt(0.21 / 400));
    FAIL("Bernoulli", 15, "", "f2: 0.5 1.5", 1, MPX_E_INVALID, "probability 1.5 (element 1) is not in [0, 1]");
    /* Multinomial over logits 0, 0, ln 2: class 2 half of the time */
    CHECK(run("Multinomial", 7, "sample_size=4000 seed=3.0", "f1x3: 0 0 0.693147181", 1) == MPX_OK);
    s = 0;
    for (int64_t k = 0; k < out[0].n; k++) s += out[0].i[k] == 2;
    CHECK(out[0].dtype == MPX_DT_INT32 && fabs(s / 4000 - 0.5) < 4 * sqrt(0.25 / 4000));
}


/* ---- the integer core against naive sums ------------------------------------------ */

static mpx_value int_value(mpx_dtype dt, int r, const int64_t *dims, int64_t lo, int64_t hi) {
    mpx_value v;
    mpx_value_alloc(&v, dt, r, dims, NULL);
    for (int64_t k = 0; k < v.n; k++) v.i[k] = rnd(lo, hi);
    return v;
}

static int64_t wrap32_ref(int64_t v) { return (int64_t)(int32_t)(uint32_t)(uint64_t)v; }

/* ConvInteger (random geometry: groups, strides, dilations, pads, 1-3
 * spatial dims, per-channel weight zero points) and MatMulInteger (batches,
 * per-row and per-column zero points) through the packed core, in the AVX2
 * and the portable build and on one thread, equal to int64 sums wrapped to
 * int32 element for element; 16-bit operands far from their zero point take
 * the direct loops and must agree too. */
static void test_integer_core(void) {
    static const char *const builds[][2] = {{NULL, NULL}, {"MPX_KERN_PORTABLE", "1"}, {"MPX_KERN_THREADS", "1"}};
    int bad = 0, cases = 0;
    for (int b = 0; b < 3; b++) {
        if (builds[b][0]) setenv(builds[b][0], builds[b][1], 1);
        for (int t = 0; t < 40; t++, cases++) {
            bool wide = t % 10 == 9; /* int16 operands: the direct loops */
            mpx_dtype xt = wide ? MPX_DT_INT16 : t % 2 ? MPX_DT_INT8 : MPX_DT_UINT8;
            int64_t lo = wide ? -32768 : xt == MPX_DT_INT8 ? -128 : 0, hi = wide ? 32767 : xt == MPX_DT_INT8 ? 127 : 255;
            /* now and then a layer's many filters of long rows (filters x Kp past 65536 values), which the
             * core takes three filters at a time against the whole panel of positions */
            bool big = t % 10 == 4;
            int nsp = big ? 1 : 1 + (int)rnd(0, 2);
            int64_t grp = big ? 1 : rnd(1, 3), cg = big ? rnd(600, 640) : rnd(1, 5), mg = big ? rnd(115, 125) : rnd(1, 7),
                    N = rnd(1, 2);
            int64_t xd[5] = {N, grp * cg}, wd[5] = {grp * mg, cg};
            char attrs[300];
            int o = snprintf(attrs, sizeof attrs, "group=%lld", (long long)grp);
            int64_t st[3], dl[3], pb[3], pe[3], k[3];
            for (int i = 0; i < nsp; i++) {
                k[i] = rnd(1, 3), st[i] = rnd(1, 2), dl[i] = rnd(1, 2), pb[i] = rnd(0, 1), pe[i] = rnd(0, 1);
                xd[2 + i] = rnd(nsp == 3 ? 3 : 4, nsp == 1 ? 40 : nsp == 2 ? 13 : 6) + (k[i] - 1) * dl[i];
                wd[2 + i] = k[i];
            }
            o += snprintf(attrs + o, sizeof attrs - (size_t)o, " strides=[");
            for (int i = 0; i < nsp; i++) o += snprintf(attrs + o, sizeof attrs - (size_t)o, "%s%lld", i ? "," : "", (long long)st[i]);
            o += snprintf(attrs + o, sizeof attrs - (size_t)o, "] dilations=[");
            for (int i = 0; i < nsp; i++) o += snprintf(attrs + o, sizeof attrs - (size_t)o, "%s%lld", i ? "," : "", (long long)dl[i]);
            o += snprintf(attrs + o, sizeof attrs - (size_t)o, "] pads=[");
            for (int i = 0; i < 2 * nsp; i++)
                o += snprintf(attrs + o, sizeof attrs - (size_t)o, "%s%lld", i ? "," : "", (long long)(i < nsp ? pb[i] : pe[i - nsp]));
            snprintf(attrs + o, sizeof attrs - (size_t)o, "]");
            mpx_value x = int_value(xt, 2 + nsp, xd, lo, hi), w = int_value(xt, 2 + nsp, wd, lo, hi);
            int64_t one = 1, M = grp * mg;
            mpx_value xzp = int_value(xt, 0, &one, lo, hi), wzp = int_value(xt, 1, &M, lo, hi);
            const mpx_value *ins[4] = {&x, &w, &xzp, &wzp};
            /* v 0: w a plain value, a zero point per filter; 1: w a tensor's
             * constant and one zero point for every filter, its 16-bit rows
             * kept on the tensor; 2: again, reading them; 3: the same
             * weights under another zero point (not the kept rows) */
            mpx_node *kept = NULL;
            mpx_tensor *wt = NULL;
            mpx_status got = MPX_OK;
            for (int v = 0; v < (wide ? 1 : 4) && !bad; v++) {
                if (v == 1) {
                    kept = mk_in("ConvInteger", 10, attrs, 4);
                    wt = own(kept, 1, &w);
                }
                if (v == 1 || v == 3) {
                    const int64_t z = v == 1 ? wzp.i[0] : wzp.i[0] == lo ? hi : lo;
                    for (int64_t m = 0; m < M; m++) wzp.i[m] = z;
                }
                got = call(v ? kept : mk("ConvInteger", 10, attrs), 4, ins, 1);
                CHECK_MSG(got == MPX_OK, "ConvInteger %s (v %d): %s", attrs, v, err.msg);
                CHECK_MSG(v != 1 || wt->derived, "ConvInteger %s: the weights' rows were not kept", attrs);
                if (got == MPX_OK) {
                    /* naive: every output element from its definition */
                    const mpx_value *y = &out[0];
                    int64_t op = 1, kp = 1, ip = 1;
                    for (int i = 0; i < nsp; i++) op *= y->dims[2 + i], kp *= k[i], ip *= xd[2 + i];
                    for (int64_t e = 0; e < y->n && !bad; e++) {
                        int64_t pos = e % op, m = (e / op) % M, n = e / op / M, g = m / mg, s = 0;
                        int64_t oc[3];
                        for (int i = nsp - 1, r = (int)pos; i >= 0; i--) oc[i] = r % y->dims[2 + i], r /= (int)y->dims[2 + i];
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t tp = 0; tp < kp; tp++) {
                                int64_t kc[3], xi = 0;
                                bool in = true;
                                for (int i = nsp - 1, r = (int)tp; i >= 0; i--) kc[i] = r % k[i], r /= (int)k[i];
                                for (int i = 0; i < nsp; i++) {
                                    int64_t at = oc[i] * st[i] + kc[i] * dl[i] - pb[i];
                                    in = in && at >= 0 && at < xd[2 + i];
                                    xi = xi * xd[2 + i] + at;
                                }
                                if (in)
                                    s += (x.i[(n * grp * cg + g * cg + ci) * ip + xi] - xzp.i[0]) *
                                         (w.i[(m * cg + ci) * kp + tp] - wzp.i[m]);
                            }
                        if (y->i[e] != wrap32_ref(s)) {
                            bad++;
                            CHECK_MSG(false, "ConvInteger %s (build %d, v %d): element %lld is %lld, want %lld", attrs, b,
                                      v, (long long)e, (long long)y->i[e], (long long)wrap32_ref(s));
                        }
                    }
                }
            }
            if (wt) unown(wt);
            mpx_value_free(&x), mpx_value_free(&w), mpx_value_free(&xzp), mpx_value_free(&wzp);

            /* MatMulInteger: [B] x M x K times K x N */
            int64_t Mm = rnd(1, 37), K = rnd(1, 70), Nn = rnd(1, 45), Bt = rnd(1, 3);
            int64_t ad[3] = {Bt, Mm, K}, bd[2] = {K, Nn};
            mpx_value a = int_value(xt, 3, ad, lo, hi), bm = int_value(xt, 2, bd, lo, hi);
            mpx_value azp = int_value(xt, 1, &Mm, lo, hi), bzp = int_value(xt, 1, &Nn, lo, hi);
            const mpx_value *mins[4] = {&a, &bm, &azp, &bzp};
            got = call(mk("MatMulInteger", 10, ""), 4, mins, 1);
            CHECK_MSG(got == MPX_OK, "MatMulInteger: %s", err.msg);
            for (int64_t e = 0; got == MPX_OK && e < out[0].n && !bad; e++) {
                int64_t n = e % Nn, m = (e / Nn) % Mm, q = e / Nn / Mm, s = 0;
                for (int64_t kk = 0; kk < K; kk++)
                    s += (a.i[(q * Mm + m) * K + kk] - azp.i[m]) * (bm.i[kk * Nn + n] - bzp.i[n]);
                if (out[0].i[e] != wrap32_ref(s)) {
                    bad++;
                    CHECK_MSG(false, "MatMulInteger %lldx%lldx%lld (build %d): element %lld is %lld, want %lld",
                              (long long)Mm, (long long)K, (long long)Nn, b, (long long)e, (long long)out[0].i[e],
                              (long long)wrap32_ref(s));
                }
            }
            mpx_value_free(&a), mpx_value_free(&bm), mpx_value_free(&azp), mpx_value_free(&bzp);
        }
        if (builds[b][0]) unsetenv(builds[b][0]);
    }
    CHECK_MSG(bad == 0, "integer core: %d of %d cases differ", bad, cases);
}

/* DynamicQuantizeLinear as ONNX and ONNX Runtime define it, written plainly
 * (double nearbyint a value): the kernel's branch-free loop must give the
 * same bits on every value, halves, NaN, infinities and far-out ones included. */
static void dql_ref(const float *x, int64_t n, int64_t *y, float *scale_out, int64_t *zp_out) {
    float mn = 0.0f, mx = 0.0f;
    for (int64_t e = 0; e < n; e++) {
        if (x[e] < mn) mn = x[e];
        if (x[e] > mx) mx = x[e];
    }
    float scale = (mx - mn) / 255.0f;
    double zp = scale > 0 ? nearbyint((double)(0.0f - mn / scale)) : 0.0;
    zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
    for (int64_t e = 0; e < n; e++) {
        double v = scale > 0 ? nearbyint((double)(x[e] / scale)) + zp : zp;
        if (v != v) v = zp;
        y[e] = (int64_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    *scale_out = scale;
    *zp_out = (int64_t)zp;
}

static void test_dynamic_quantize(void) {
    mpx_rng qrng;
    mpx_rng_init(&qrng, 4711);
    enum { N = 4099, BIG = 70001 }; /* BIG: pieces of 32768 on the kernel threads */
    int64_t *want = malloc(BIG * sizeof *want);
    int bad = 0;
    for (int trial = 0; want && trial < 44; trial++) {
        int64_t dims[1] = {trial >= 40 ? BIG : trial < 30 ? N : 1 + trial};
        mpx_value x;
        CHECK(mpx_value_alloc(&x, MPX_DT_FLOAT, 1, dims, NULL) == MPX_OK);
        const double lo = trial % 4 == 1 ? 0.0 : -3.0, hi = trial % 4 == 2 ? 0.0 : 5.0;
        for (int64_t e = 0; e < x.n; e++) x.f[e] = (float)(lo + (hi - lo) * mpx_rng_unit(&qrng));
        if (trial % 5 == 3) /* values on the halves between two codes */
            for (int64_t e = 0; e < x.n; e++) x.f[e] = (float)((double)(e % 601) * 0.5 - 100.0) * 0.0625f;
        if (trial % 7 == 4) x.f[x.n / 2] = NAN, x.f[x.n / 3] = -NAN;
        if (trial % 9 == 5) x.f[0] = INFINITY; /* scale infinite: every quotient 0 or NaN */
        if (trial == 7) x.f[1] = 3e38f, x.f[2] = -3e38f;
        if (trial == 8)
            for (int64_t e = 0; e < x.n; e++) x.f[e] = 0.0f; /* scale 0 */
        if (trial == 9) x.f[5] = 1e-40f, x.f[6] = -1e-40f;
        if (trial == 41) x.f[BIG - 3] = -7.0f, x.f[40000] = 9.0f; /* the range's ends in later pieces */
        if (trial == 42) x.f[BIG - 1] = NAN, x.f[33000] = NAN;
        float scale;
        int64_t zp;
        dql_ref(x.f, x.n, want, &scale, &zp);
        mpx_node *n = mk("DynamicQuantizeLinear", 11, "");
        mpx_kctx c = {.node = n, .err = &err};
        const mpx_value *ptr[1] = {&x};
        clear_outs();
        mpx_error_clear(&err);
        mpx_status st = mpx_kernel_for(n->op)(&c, ptr, 1, out, 3);
        CHECK(st == MPX_OK);
        if (st == MPX_OK) {
            uint32_t a, b;
            memcpy(&a, &out[1].f[0], 4);
            memcpy(&b, &scale, 4);
            CHECK(a == b && out[2].i[0] == zp);
            for (int64_t e = 0; e < x.n; e++)
                if (out[0].i[e] != want[e] && bad++ < 5)
                    fprintf(stderr, "DynamicQuantizeLinear trial %d element %lld (x %a): %lld, want %lld\n", trial,
                            (long long)e, (double)x.f[e], (long long)out[0].i[e], (long long)want[e]);
        }
        mpx_value_free(&x);
    }
    CHECK(want && bad == 0);
    free(want);
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    G = mpx_graph_new("kern");
    for (int j = 0; j < 8; j++) out[j].n = -1;
    test_concat_split();
    test_concat_random();
    test_reshape_family();
    test_transpose();
    test_slice();
    test_gather();
    test_pad();
    test_expand_tile();
    test_depth_space();
    test_shape_constants();
    test_topk_nonzero();
    test_missing();
    test_new_ops_refusals();
    test_random();
    test_integer_core();
    test_dynamic_quantize();
    clear_outs();
    mpx_graph_free(G);
    return check_report("test_kern_data");
}
