/* test_kern_elem.c - the elementwise, broadcasting, reduction and Cast kernels
 * (numerics/kern_elem.c, kern_binary.c, kern_reduce.c).
 *
 * Expected values come from independent naive code: double-precision libm
 * for the unary functions, index arithmetic written out per element for
 * broadcasting, sequential sums in flat order for the reductions (whose order
 * is documented, so fp32 results must match bit for bit), the FP16 library's
 * own converter (fp16.h) for Cast to float16, and hand-worked numbers for
 * integer semantics, fp8 saturation and fp16 accumulation. */
#include "check.h"
#include "kern_elem.h"
#include "mpx_numerics.h"

#include <float.h>
#include <fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- nodes, values, running a kernel ----------------------------------------------- */

static mpx_error err;
static mpx_node node;
static mpx_attr attrs[8];
static int64_t attr_ints_store[8][8];
static mpx_accum acc; /* zero: fp32 accumulation */

static void node_reset(const char *op, int opset) {
    memset(&node, 0, sizeof node);
    memset(attrs, 0, sizeof attrs);
    node.name = "n1";
    node.op_type = op;
    node.op = mpx_op_from_name(op);
    node.domain = "";
    node.opset = opset;
    node.attrs = attrs;
    acc.fmt = NULL;
    acc.block = 0;
    acc.flags = 0;
}

static mpx_attr *attr_new(const char *name, mpx_attr_type t) {
    mpx_attr *a = &attrs[node.n_attrs++];
    a->name = name;
    a->type = t;
    return a;
}
static void attr_int(const char *name, int64_t v) { attr_new(name, MPX_ATTR_INT)->i = v; }
static void attr_float(const char *name, float v) { attr_new(name, MPX_ATTR_FLOAT)->f = v; }
static void attr_str(const char *name, const char *s) {
    mpx_attr *a = attr_new(name, MPX_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}
static void attr_ints(const char *name, int n, const int64_t *v) {
    int slot = node.n_attrs;
    mpx_attr *a = attr_new(name, MPX_ATTR_INTS);
    for (int i = 0; i < n; i++) attr_ints_store[slot][i] = v[i];
    a->ints = attr_ints_store[slot];
    a->n = n;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define FV(...) ((const float[]){__VA_ARGS__})
#define IV(...) ((const int64_t[]){__VA_ARGS__})

static mpx_value val(mpx_dtype dt, int rank, const int64_t *dims) {
    mpx_value v;
    if (mpx_value_alloc(&v, dt, rank, dims, NULL) != MPX_OK) {
        fprintf(stderr, "allocation failed\n");
        exit(2);
    }
    return v;
}
static mpx_value valf(int rank, const int64_t *dims, const float *x) {
    mpx_value v = val(MPX_DT_FLOAT, rank, dims);
    if (x) memcpy(v.f, x, (size_t)v.n * sizeof *x);
    return v;
}
static mpx_value vali(mpx_dtype dt, int rank, const int64_t *dims, const int64_t *x) {
    mpx_value v = val(dt, rank, dims);
    if (x) memcpy(v.i, x, (size_t)v.n * sizeof *x);
    return v;
}

static mpx_rng rng;
static void fill_uniform(mpx_value *v, double lo, double hi) {
    for (int64_t i = 0; i < v->n; i++) v->f[i] = (float)(lo + (hi - lo) * mpx_rng_unit(&rng));
}
static void fill_int(mpx_value *v, int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < v->n; i++)
        v->i[i] = lo + (int64_t)(mpx_rng_next(&rng) % (uint64_t)(hi - lo + 1));
}

/* Run the node's kernel on up to 4 inputs (NULL: omitted). */
static mpx_status run(mpx_value *out, int n_in, const mpx_value *a, const mpx_value *b,
                      const mpx_value *c3, const mpx_value *d) {
    const mpx_value *in[4] = {a, b, c3, d};
    mpx_kernel_fn fn = mpx_kernel_for(node.op);
    memset(out, 0, sizeof *out);
    out->n = -1;
    mpx_error_clear(&err);
    if (!fn) {
        fprintf(stderr, "no kernel for %s\n", node.op_type);
        return MPX_E_UNSUPPORTED;
    }
    mpx_kctx c = {.node = &node, .acc = acc, .err = &err};
    return fn(&c, in, n_in, out, 1);
}
#define RUN1(o, a) run(o, 1, a, NULL, NULL, NULL)
#define RUN2(o, a, b) run(o, 2, a, b, NULL, NULL)
#define RUN3(o, a, b, c) run(o, 3, a, b, c, NULL)

static bool same_shape(const mpx_value *v, int rank, const int64_t *dims) {
    if (v->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (v->dims[i] != dims[i]) return false;
    return true;
}

static bool same_bits(float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (a != a && b != b);
}

/* The flat index of v's element that output coordinate co (of rank r) reads. */
static int64_t bidx(const mpx_value *v, int r, const int64_t *co) {
    int64_t k = 0;
    int off = r - v->rank;
    for (int i = 0; i < v->rank; i++) k = k * v->dims[i] + (v->dims[i] == 1 ? 0 : co[off + i]);
    return k;
}
static void coord(int64_t flat, int r, const int64_t *dims, int64_t *co) {
    for (int i = r - 1; i >= 0; i--) {
        co[i] = dims[i] ? flat % dims[i] : 0;
        flat = dims[i] ? flat / dims[i] : 0;
    }
}

/* ---- unary --------------------------------------------------------------------------- */

static double ref_unary(const char *op, double x) {
    if (!strcmp(op, "Relu")) return x > 0 ? x : 0;
    if (!strcmp(op, "LeakyRelu")) return x >= 0 ? x : 0.01 * x;
    if (!strcmp(op, "Elu")) return x >= 0 ? x : expm1(x);
    if (!strcmp(op, "Selu"))
        return 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * expm1(x));
    if (!strcmp(op, "Celu")) return x > 0 ? x : expm1(x);
    if (!strcmp(op, "ThresholdedRelu")) return x > 1 ? x : 0;
    if (!strcmp(op, "Sigmoid")) return 1 / (1 + exp(-x));
    if (!strcmp(op, "HardSigmoid")) return fmax(0, fmin(1, 0.2 * x + 0.5));
    if (!strcmp(op, "HardSwish")) return x * fmax(0, fmin(1, x / 6 + 0.5));
    if (!strcmp(op, "Softplus")) return log1p(exp(x));
    if (!strcmp(op, "Softsign")) return x / (1 + fabs(x));
    if (!strcmp(op, "Mish")) return x * tanh(log1p(exp(x)));
    if (!strcmp(op, "Tanh")) return tanh(x);
    if (!strcmp(op, "Erf")) return erf(x);
    if (!strcmp(op, "Gelu")) return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    if (!strcmp(op, "Exp")) return exp(x);
    if (!strcmp(op, "Log")) return log(x);
    if (!strcmp(op, "Sqrt")) return sqrt(x);
    if (!strcmp(op, "Reciprocal")) return 1 / x;
    if (!strcmp(op, "Neg")) return -x;
    if (!strcmp(op, "Abs")) return fabs(x);
    if (!strcmp(op, "Sign")) return x > 0 ? 1 : x < 0 ? -1 : 0;
    if (!strcmp(op, "Floor")) return floor(x);
    if (!strcmp(op, "Ceil")) return ceil(x);
    if (!strcmp(op, "Round")) return nearbyint(x);
    if (!strcmp(op, "Sin")) return sin(x);
    if (!strcmp(op, "Cos")) return cos(x);
    return NAN;
}

/* Ops whose fp32 result is the correctly rounded value (double rounding of
 * +-*, /, sqrt through double is innocuous), so they must match exactly. */
static bool exact_op(const char *op) {
    static const char *const ex[] = {"Relu", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round",
                                     "Sqrt", "Reciprocal", "ThresholdedRelu"};
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
        if (!strcmp(op, ex[i])) return true;
    return false;
}

static void test_unary_float(void) {
    static const char *const ops[] = {
        "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "Sigmoid", "HardSigmoid",
        "HardSwish", "Softplus", "Softsign", "Mish", "Tanh", "Erf", "Gelu", "Exp", "Log",
        "Sqrt", "Reciprocal", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const char *op = ops[k];
        bool pos = !strcmp(op, "Log") || !strcmp(op, "Sqrt");
        mpx_value x = val(MPX_DT_FLOAT16, 3, DIMS(2, 3, 50)), y;
        fill_uniform(&x, pos ? 0.01 : -6.0, 6.0);
        x.f[0] = 2.5f, x.f[1] = -0.5f, x.f[2] = 0.0f, x.f[3] = -0.0f, x.f[4] = 1.0f;
        node_reset(op, 20);
        mpx_status st = RUN1(&y, &x);
        CHECK_MSG(st == MPX_OK, "%s: %s", op, err.msg);
        if (st != MPX_OK) continue;
        CHECK_MSG(y.dtype == MPX_DT_FLOAT16 && same_shape(&y, 3, x.dims), "%s: dtype/shape", op);
        int bad = 0;
        for (int64_t i = 0; i < x.n; i++) {
            double r = ref_unary(op, x.f[i]), g = y.f[i];
            bool ok = exact_op(op) ? same_bits((float)r, y.f[i]) || (r == 0 && g == 0)
                                   : fabs(g - r) <= 4e-6 * fabs(r) + 2e-7 || (float)r == (float)g ||
                                         (isnan(r) && isnan(g));
            if (!ok && bad++ < 3)
                fprintf(stderr, "%s(%.9g) = %.9g, expected %.9g\n", op, (double)x.f[i], g, r);
        }
        CHECK_MSG(bad == 0, "%s: %d values off", op, bad);
        mpx_value_free(&x);
        mpx_value_free(&y);
    }
}

static float un1(const char *op, float v) {
    mpx_value x = valf(1, DIMS(1), &v), y;
    float r = NAN;
    if (RUN1(&y, &x) == MPX_OK) r = y.f[0];
    mpx_value_free(&x);
    mpx_value_free(&y);
    (void)op;
    return r;
}

/* Distance of got from want in units in the last place of the float
 * nearest want (subnormal ulp 2^-149 below 2^-126). */
static double ulps(float got, double want) {
    const float w = (float)want;
    if (got == w) return 0;
    const double u = fabs((double)w) < 0x1p-126 ? 0x1p-149 : fabs((double)nextafterf(w, INFINITY) - (double)w);
    return fabs((double)got - want) / u;
}

/* Whether MPX_EXHAUSTIVE asks for every float in the sweeps of `name`: "1"
 * for all of them, else a comma-separated list of names (the long test
 * test_kern_elem_tanh_all: "tanh"). */
static bool exhaustive(const char *name) {
    const char *ex = getenv("MPX_EXHAUSTIVE");
    if (!ex || !*ex) return false;
    if (strcmp(ex, "1") == 0) return true;
    const size_t n = strlen(name);
    for (const char *p = ex; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* Every 512th float of both signs (8.4 M values, every exponent, subnormals
 * and the underflow near -104 included) through the kernel's vector loop
 * (arrays of 4099, odd tails), with the special values first; every float
 * (2^32) where exhaustive(name). check() sees the inputs and outputs chunk
 * by chunk; shape [m / D, D] (m a multiple of D). */
typedef void (*sweep_check)(const float *x, const float *y, int64_t m, void *ctx);
static void sweep_floats(const char *name, int64_t D, bool negative_only, const float *specials, size_t ns,
                         sweep_check check, void *ctx) {
    const uint64_t step = exhaustive(name) ? 1 : 512;
    const int64_t chunk = 4099 / D * D;
    mpx_value x = valf(2, DIMS(chunk / D, D), NULL), y;
    uint64_t u = negative_only ? 0x80000000u : 0;
    for (bool done = false; !done;) {
        int64_t m = 0;
        if (u == (negative_only ? 0x80000000u : 0))
            for (size_t i = 0; i < ns; i++, m += D)
                for (int64_t d = 0; d < D; d++) x.f[m + d] = d == D - 1 ? specials[i] : 0.0f;
        for (; m < chunk && !done; m += D, u += step) {
            if (u > 0xffffffffu) {
                done = true;
                break;
            }
            uint32_t bits = (uint32_t)u;
            for (int64_t d = 0; d + 1 < D; d++) x.f[m + d] = 0.0f;
            memcpy(&x.f[m + D - 1], &bits, sizeof bits);
        }
        x.n = m;
        x.dims[0] = m / D;
        if (RUN1(&y, &x) != MPX_OK) {
            CHECK_MSG(0, "%s: %s", node.op_type, err.msg);
            break;
        }
        check(x.f, y.f, m, ctx);
        mpx_value_free(&y);
    }
    x.n = chunk;
    x.dims[0] = chunk / D;
    mpx_value_free(&x);
}

typedef struct sweep_stats {
    double (*ref)(double); /* accuracy_check's exact function */
    bool odd;              /* and whether the sign must follow the input's */
    long n, bad;
    double worst;
    float worst_at, first_bad;
} sweep_stats;

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Each output's distance from st->ref in ulps (the worst kept), NaN for NaN
 * and, for an odd function, the input's sign. */
static void accuracy_check(const float *x, const float *y, int64_t m, void *ctx) {
    sweep_stats *st = ctx;
    for (int64_t i = 0; i < m; i++, st->n++) {
        if (isnan(x[i])) {
            if (!isnan(y[i]) && st->bad++ == 0) st->first_bad = x[i];
            continue;
        }
        const double e = ulps(y[i], st->ref((double)x[i]));
        if (e > st->worst) st->worst = e, st->worst_at = x[i];
        if (st->odd && signbit(y[i]) != signbit(x[i]) && st->bad++ == 0) st->first_bad = x[i];
    }
}

/* Sigmoid within 2.5 ulp of the exact 1/(1 + e^-x) for every float checked
 * (2.4 over all 2^32 floats: ke_expf_neg's error under Sigmoid's two float
 * roundings, which alone give 2.3), NaN for NaN. Even 1/700 for the
 * polynomial's 1/720 fails it (2.6 ulp). */
static void test_sigmoid_accuracy(void) {
    node_reset("Sigmoid", 13);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -110.0f, -103.9f, -87.4f, 88.8f, 1e-45f, -1e-45f};
    sweep_stats st = {.ref = sigmoid_ref};
    sweep_floats("sigmoid", 1, false, specials, sizeof specials / sizeof specials[0], accuracy_check, &st);
    CHECK_MSG(st.bad == 0, "Sigmoid of NaN is not NaN (first %a)", (double)st.first_bad);
    CHECK_MSG(st.worst <= 2.5, "Sigmoid is %.2f ulp off at %a (of %ld inputs)", st.worst, (double)st.worst_at, st.n);
    CHECK(st.n > 8000000);
}

static void sigmoid_bits_check(const float *x, const float *y, int64_t m, void *ctx) {
    sweep_stats *st = ctx;
    for (int64_t i = 0; i < m; i++, st->n++) {
        const float r = ke_sigmoid(x[i]); /* this file's copy: libm's fmaf */
        const bool same = (isnan(r) && isnan(y[i])) || memcmp(&r, &y[i], sizeof r) == 0;
        if (!same && st->bad++ == 0) st->first_bad = x[i];
    }
}

/* Sigmoid's kernel computes ke_sigmoid's bits for every float swept: the
 * AVX2 path's 16-lane form for |x| <= 80 (kern_elem.c, sigmoid_avx2)
 * included, and blocks that mix such lanes with larger ones, infinities
 * and NaN (the specials first, then the sweep's neighbours across 80). */
static void test_sigmoid_bits(void) {
    node_reset("Sigmoid", 13);
    const float specials[] = {1.0f, 80.0f, 0x1.400002p6f, -80.0f, -0x1.400002p6f, 2.0f, NAN, -3.0f, 79.9f,
                              INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 5.0f, -79.9f, 0.5f};
    sweep_stats st = {0};
    sweep_floats("sigmoid", 1, false, specials, sizeof specials / sizeof specials[0], sigmoid_bits_check, &st);
    CHECK_MSG(st.bad == 0, "Sigmoid differs from ke_sigmoid at %ld of %ld inputs, the first %a", st.bad, st.n,
              (double)st.first_bad);
    CHECK(st.n > 8000000);
}

/* A map of one function over a row (ke_sigmoid_map, ke_erf_map) in one
 * form against the function one value at a time, bit for bit (NaN matching
 * any NaN): every length to 80 in place between guards (a ramp of the given
 * step, each step's count, every tail, the masked last lanes), then every
 * 509th float of both signs with the specials first. */
typedef struct row_map {
    const char *map_name, *one_name;
    void (*map)(const float *x, float *y, int64_t n, ke_vec vec);
    float (*one)(float x);
    float step;
    const float *specials;
    size_t n_specials;
} row_map;

static float guard_at(const row_map *m, int i) { return m->step * (float)(i - 40) + (i == 50 ? 100.0f : 0.0f); }

static void test_row_map_in(const row_map *m, ke_vec vec, const char *name) {
    enum { N = 4099 };
    static float x[N], y[N];
    static float g[96];
    for (int64_t len = 1; len <= 80; len++) {
        for (int i = 0; i < 96; i++) g[i] = guard_at(m, i);
        float want[80];
        for (int64_t i = 0; i < len; i++) want[i] = m->one(g[i + 8]);
        m->map(g + 8, g + 8, len, vec);
        bool same = memcmp(want, g + 8, (size_t)len * sizeof *want) == 0;
        for (int i = 0; i < 96; i++) same = same && (i >= 8 && i < 8 + len ? true : g[i] == guard_at(m, i));
        CHECK_MSG(same, "%s (%s) over %ld values in place: wrong values or guards written", m->map_name, name, (long)len);
    }
    long n = 0, bad = 0;
    uint32_t fb[3] = {0, 0, 0};
    uint64_t u = 0;
    for (bool first = true; u <= 0xffffffffu; first = false) {
        int64_t c = 0;
        if (first)
            for (size_t i = 0; i < m->n_specials; i++) x[c++] = m->specials[i];
        for (; c < N && u <= 0xffffffffu; c++, u += 509) {
            const uint32_t b = (uint32_t)u;
            memcpy(&x[c], &b, sizeof b);
        }
        m->map(x, y, c, vec);
        for (int64_t i = 0; i < c; i++, n++) {
            const float want = m->one(x[i]);
            if (memcmp(&want, &y[i], sizeof want) != 0 && !(isnan(want) && isnan(y[i])) && bad++ == 0)
                memcpy(&fb[0], &x[i], 4), memcpy(&fb[1], &want, 4), memcpy(&fb[2], &y[i], 4);
        }
    }
    CHECK_MSG(bad == 0, "%s (%s) differs from %s at %ld of %ld inputs, the first at 0x%08x: 0x%08x, the map 0x%08x",
              m->map_name, name, m->one_name, bad, n, (unsigned)fb[0], (unsigned)fb[1], (unsigned)fb[2]);
    CHECK(n > 8000000L);
}

/* ke_sigmoid_map in each form this CPU has (kern_elem.c: AVX-512's 32, 16
 * and masked 16 lanes at a time, AVX2's 16, the clones) against ke_sigmoid;
 * the specials: blocks mixing lanes inside |x| <= 80 with ones outside,
 * infinities and NaN. The Sigmoid node (test_sigmoid_bits) takes only the
 * CPU's best form. */
static void test_sigmoid_map(void) {
    static const float specials[] = {1.0f, 80.0f, 0x1.400002p6f, -80.0f, -0x1.400002p6f, NAN, -3.0f, 79.9f, INFINITY,
                                     -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, -79.9f, -NAN, 88.0f, -104.0f};
    const row_map m = {"ke_sigmoid_map", "ke_sigmoid", ke_sigmoid_map, ke_sigmoid, 0.37f,
                       specials, sizeof specials / sizeof specials[0]};
    const ke_vec best = ke_vec_now();
    if (best == KE_VEC_AVX512) test_row_map_in(&m, KE_VEC_AVX512, "AVX-512");
    else printf("test_sigmoid_map: the AVX-512 form not run: this CPU has no AVX-512F\n");
    if (best >= KE_VEC_AVX2) test_row_map_in(&m, KE_VEC_AVX2, "AVX2");
    test_row_map_in(&m, KE_VEC_NONE, "clones");
}

/* ke_erf_map in each form this CPU has (kern_elem.c: AVX-512's 64, 32
 * and masked 16-lane steps, AVX2's 32 and 1-4 vectors of 8 with the last
 * masked, the clones) against ke_erf (this file's copy:
 * libm's fmaf); the specials: the neighbours of 0.9 and 3.95, where the
 * sides meet; infinities, NaN, zeros, the largest x whose x^2 is finite.
 * The Erf node takes the CPU's best form. */
static void test_erf_map(void) {
    static const float specials[] = {0.9f, 0x1.cccccap-1f, 0x1.ccccd0p-1f, -0.9f, 3.95f, 0x1.f99998p1f, 0x1.f9999cp1f,
                                     -3.95f, NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 1.0f,
                                     -2.5f, 0x1.fffffep63f, -0x1p64f, 1e30f, 0.5f, 3.9f};
    const row_map m = {"ke_erf_map", "ke_erf", ke_erf_map, ke_erf, 0.11f, specials, sizeof specials / sizeof specials[0]};
    const ke_vec best = ke_vec_now();
    if (best == KE_VEC_AVX512) test_row_map_in(&m, KE_VEC_AVX512, "AVX-512");
    else printf("test_erf_map: the AVX-512 form not run: this CPU has no AVX-512F\n");
    if (best >= KE_VEC_AVX2) test_row_map_in(&m, KE_VEC_AVX2, "AVX2");
    test_row_map_in(&m, KE_VEC_NONE, "clones");
}

/* Tanh within 1.03 ulp of the exact tanh for every float checked (1.027
 * over all 2^32 floats: ke_tanh, the long test test_kern_elem_tanh_all),
 * odd (the sign of -0 kept), NaN for NaN, +-1 far out. The polynomial's
 * last coefficient four float steps off fails it. */
static void test_tanh_accuracy(void) {
    node_reset("Tanh", 13);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0x1.fffffep-1f, 9.1f, -40.0f,
                              1e-45f, -1e-45f};
    sweep_stats st = {.ref = tanh, .odd = true};
    sweep_floats("tanh", 1, false, specials, sizeof specials / sizeof specials[0], accuracy_check, &st);
    CHECK_MSG(st.bad == 0, "Tanh: NaN or sign wrong (first %a)", (double)st.first_bad);
    CHECK_MSG(st.worst <= 1.03, "Tanh is %.3f ulp off at %a (of %ld inputs)", st.worst, (double)st.worst_at, st.n);
    CHECK(st.n > 8000000);
    CHECK(un1("Tanh", 9.1f) == 1.0f && un1("Tanh", -INFINITY) == -1.0f && signbit(un1("Tanh", -0.0f)));
}

static void tanh_bits_check(const float *x, const float *y, int64_t m, void *ctx) {
    sweep_stats *st = ctx;
    for (int64_t i = 0; i < m; i++, st->n++) {
        const float r = ke_tanh(x[i]); /* this file's copy: libm's fmaf */
        const bool same = (isnan(r) && isnan(y[i])) || memcmp(&r, &y[i], sizeof r) == 0;
        if (!same && st->bad++ == 0) st->first_bad = x[i];
    }
}

/* Tanh's kernel computes ke_tanh's bits for every float swept, as Sigmoid's
 * (its AVX2 form for |x| <= 40, blocks mixing such lanes with larger ones,
 * infinities and NaN; the neighbours of 1, where the two sides meet). */
static void test_tanh_bits(void) {
    node_reset("Tanh", 13);
    const float specials[] = {1.0f, 40.0f, 0x1.400002p5f, -40.0f, -0x1.400002p5f, 0x1.fffffep-1f, NAN, -3.0f,
                              39.9f, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, -1.0f, 0.5f, 0x1.000002p0f};
    sweep_stats st = {0};
    sweep_floats("tanh", 1, false, specials, sizeof specials / sizeof specials[0], tanh_bits_check, &st);
    CHECK_MSG(st.bad == 0, "Tanh differs from ke_tanh at %ld of %ld inputs, the first %a", st.bad, st.n,
              (double)st.first_bad);
    CHECK(st.n > 8000000);
}

/* Erf within 1.2 ulp of erf (1.11 over all 2^32 floats: ke_erf), odd (the
 * sign of -0 kept), NaN for NaN, +-1 from 3.95 on. */
static void test_erf_accuracy(void) {
    node_reset("Erf", 13);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0.9f, -0.9f, 3.95f, 1e-45f, -1e-45f};
    sweep_stats st = {.ref = erf, .odd = true};
    sweep_floats("erf", 1, false, specials, sizeof specials / sizeof specials[0], accuracy_check, &st);
    CHECK_MSG(st.bad == 0, "Erf: NaN or sign wrong (first %a)", (double)st.first_bad);
    CHECK_MSG(st.worst <= 1.2, "Erf is %.2f ulp off at %a (of %ld inputs)", st.worst, (double)st.worst_at, st.n);
}

static void softmax_exp_check(const float *x, const float *y, int64_t m, void *ctx) {
    sweep_stats *st = ctx;
    for (int64_t i = 1; i < m; i += 2, st->n++) {
        const float v = x[i], e = (float)exp((double)v), r = e / (1.0f + e);
        const bool same = (isnan(r) && isnan(y[i])) || memcmp(&r, &y[i], sizeof r) == 0;
        if (!same && st->bad++ == 0) st->first_bad = v;
    }
}

/* Softmax's exponentials are the float nearest e^(x - max) (in double,
 * rounded once; ke_exp_neg): a row [0, x] with x <= 0 gives exactly e/(1 +
 * e) with e = (float)exp(x), the sum in fp32 from 0. Every 512th negative
 * float (every float with MPX_EXHAUSTIVE=1: run when ke_exp_neg changes). */
static void test_softmax_exp_exact(void) {
    node_reset("Softmax", 13);
    const float specials[] = {-0.0f, -INFINITY, NAN, -110.0f, -103.9f, -87.4f, -1e-45f};
    sweep_stats st = {0};
    sweep_floats("softmax", 2, true, specials, sizeof specials / sizeof specials[0], softmax_exp_check, &st);
    CHECK_MSG(st.bad == 0, "Softmax's exponential differs from (float)exp(x) at %ld of %ld inputs, the first %a",
              st.bad, st.n, (double)st.first_bad);
    CHECK(st.n > 4000000);
}

/* Softmax's exponentials through ke_exp_neg_map's vector loops (kern_elem.c:
 * 64 lanes at a time then 1 to 4 vectors of 16, the last masked, on a CPU
 * with AVX-512F, 32 then 1 to 4 vectors of 8 with AVX2 and FMA, the
 * clones; each form this CPU has)
 * against ke_exp_neg one value at a time (compiled here for the baseline:
 * libm's fma), bit for bit: the special values (-0, -inf, NaNs, the clamp
 * at -110, the underflow to zero near -103.97, the subnormal results below
 * -87.34), every 7th float from -87 to -111 (subnormal and zero results),
 * every 509th other non-positive float (4.2 M); with MPX_EXHAUSTIVE=exp_neg
 * every non-positive float (2^31: the long test test_kern_elem_exp_neg_all)
 * through the CPU's best form. Again sampled with m = 1.5 (x - m is the
 * same float subtraction on both sides); the arrays' odd length leaves
 * lanes for each step and the tail. A NaN matches any NaN: its sign is not
 * the same on every build (ke_exp_neg negates a NaN's kd, and libm's fma
 * and the FMA instruction pass on different operands' NaNs). */
static void test_exp_neg_map_in(ke_vec vec, const char *name) {
    enum { N = 4099 };
    static float x[N], y[N];
    static const float specials[] = {-0.0f, -INFINITY, NAN, -NAN, -110.0f, -110.00001f, -109.99999f, -103.97208f,
                                     -103.97207f, -103.9f, -87.33654f, -87.33655f, -87.4f, -1e-45f, -0x1p-126f,
                                     -1e-30f, -0x1p-25f, -0x1p-24f, -0.5f, -0.6931472f, -1.0f, -88.72283f, -104.0f,
                                     -1e30f, -FLT_MAX};
    /* the inputs whose e^x lies nearest a float rounding boundary (an
     * error of 2^-43 in e^x rounds them the other way: the 30 that the
     * AVX-512 double form with e^r of degree 5 got wrong over all
     * non-positive floats), so that the sampled run sees an exponential
     * that is nearly but not quite good enough; then the 25 that the
     * AVX-512 float form (kern_elem.c, exp_neg16f) got wrong with its
     * rounding test's bound E = 2^-39 + 2^-23 r^2 instead of 2^-21.5 r^2,
     * so that a bound nearly but not quite large enough fails here too;
     * then the 12 more (of 14) that the AVX2 float form (exp_neg8f) got
     * wrong with 2^-22.5 r^2 in its E (with 2^-22, none) */
    static const uint32_t hard[] = {
        0xbbf0edf1u, 0xbcacc7c1u, 0xbcb8f40fu, 0xbcb8fe08u, 0xbcba0c14u, 0xbce017bbu, 0xbd816cc3u, 0xbdd8e3abu,
        0xbdde95b1u, 0xbdf128ebu, 0xbe1d3cfau, 0xbea4dfbcu, 0xbeed01afu, 0xbefffee9u, 0xbf157c82u, 0xbf420a04u,
        0xbf81eadfu, 0xbfc9d7deu, 0xbfd04462u, 0xbfd4cb8eu, 0xc0382e72u, 0xc03b092eu, 0xc05f383du, 0xc0a42efdu,
        0xc0e42c68u, 0xc0f76590u, 0xc11402a6u, 0xc126b7bcu, 0xc159fa1eu, 0xc16912cdu, 0xbc54f3e2u, 0xbc5ef12du,
        0xbc61220bu, 0xbda0365du, 0xbdcc9601u, 0xbdef1191u, 0xbdf648c2u, 0xbe10f4e3u, 0xbe3c3994u, 0xbf3e97ffu,
        0xbf4af4ccu, 0xbf5a77c3u, 0xbfc5ee03u, 0xc086bb73u, 0xc09e5097u, 0xc0cb8b48u, 0xc0de3e8bu, 0xc0e0d9dcu,
        0xc0f45b80u, 0xc10a7d93u, 0xc13f2c0au, 0xc153e3f2u, 0xc218a1c7u, 0xc23270f2u, 0xc29cedaeu, 0xbe723c98u,
        0xbf7acc44u, 0xc05f4730u, 0xc08a0903u, 0xc0cca8c0u, 0xc0e15826u, 0xc13e3b65u, 0xc1545c05u, 0xc18b8ebdu,
        0xc1d5020du, 0xc20b9888u, 0xc21e7a35u};
    /* first (a stray write past the end would corrupt what the sweep
     * uses): every length to 80 (each step's count and every tail),
     * written in place between guards left as they were */
    static float g[96];
    for (int64_t len = 1; len <= 80; len++) {
        for (int i = 0; i < 96; i++) g[i] = -0.37f * (float)i;
        float want[80];
        for (int64_t i = 0; i < len; i++) want[i] = ke_exp_neg(g[i + 8] - 0.25f);
        ke_exp_neg_map(g + 8, 0.25f, g + 8, len, vec);
        bool same = memcmp(want, g + 8, (size_t)len * sizeof *want) == 0;
        for (int i = 0; i < 96; i++) same = same && (i >= 8 && i < 8 + len ? true : g[i] == -0.37f * (float)i);
        CHECK_MSG(same, "ke_exp_neg_map (%s) over %ld values in place: wrong values or guards written", name, (long)len);
    }
    const bool all = exhaustive("exp_neg") && vec == ke_vec_now();
    const uint32_t lo = 0xc2ae0000u /* -87 */, hi = 0xc2de0000u /* -111 */;
    for (int pass = 0; pass < 2; pass++) {
        const float m = pass ? 1.5f : 0.0f;
        const bool every = all && pass == 0;
        long n = 0, bad = 0;
        uint32_t fb[3] = {0, 0, 0}; /* the first differing x - m, ke_exp_neg's and the map's bits */
        uint64_t u = 0x80000000u;
        for (bool first = true; u <= 0xffffffffu; first = false) {
            int64_t c = 0;
            if (first) {
                for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) x[c++] = specials[i] + m;
                for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++, c++) {
                    float v;
                    memcpy(&v, &hard[i], sizeof v);
                    x[c] = v + m; /* (with m = 1.5 no longer the hard inputs themselves) */
                }
            }
            for (; c < N && u <= 0xffffffffu; c++) {
                const uint32_t b = (uint32_t)u;
                float v;
                memcpy(&v, &b, sizeof v);
                x[c] = v + m;
                u += every ? 1 : b >= lo && b < hi ? 7 : 509;
            }
            ke_exp_neg_map(x, m, y, c, vec);
            for (int64_t i = 0; i < c; i++, n++) {
                const float want = ke_exp_neg(x[i] - m);
                if (memcmp(&want, &y[i], sizeof want) != 0 && !(isnan(want) && isnan(y[i])) && bad++ == 0) {
                    const float d = x[i] - m;
                    memcpy(&fb[0], &d, 4), memcpy(&fb[1], &want, 4), memcpy(&fb[2], &y[i], 4);
                }
            }
        }
        CHECK_MSG(bad == 0,
                  "ke_exp_neg_map (%s) differs from ke_exp_neg at %ld of %ld inputs (m = %g), the first at x - m = "
                  "0x%08x: 0x%08x, the map 0x%08x",
                  name, bad, n, (double)m, (unsigned)fb[0], (unsigned)fb[1], (unsigned)fb[2]);
        CHECK(n > (every ? 2000000000L : 4000000L));
    }
}

static void test_exp_neg_map(void) {
    const ke_vec best = ke_vec_now();
    if (best == KE_VEC_AVX512) test_exp_neg_map_in(KE_VEC_AVX512, "AVX-512");
    else printf("test_exp_neg_map: the AVX-512 form not run: this CPU has no AVX-512F\n");
    if (best >= KE_VEC_AVX2) test_exp_neg_map_in(KE_VEC_AVX2, "AVX2");
    test_exp_neg_map_in(KE_VEC_NONE, "clones");
}

static void test_unary_special(void) {
    /* tails that a naive formula overflows or flushes */
    node_reset("Sigmoid", 13);
    CHECK(fabs(un1("Sigmoid", -80.0f) / exp(-80.0) - 1) < 1e-5);
    CHECK(un1("Sigmoid", 100.0f) == 1.0f);
    CHECK(un1("Sigmoid", -200.0f) == 0.0f);
    node_reset("Softplus", 13);
    CHECK(un1("Softplus", 100.0f) == 100.0f);
    CHECK(fabs(un1("Softplus", -80.0f) / exp(-80.0) - 1) < 1e-5);
    node_reset("Mish", 18);
    CHECK(un1("Mish", 100.0f) == 100.0f);
    /* Round: half to even */
    node_reset("Round", 11);
    CHECK(un1("Round", 0.5f) == 0.0f && un1("Round", 1.5f) == 2.0f && un1("Round", 2.5f) == 2.0f);
    CHECK(un1("Round", -2.5f) == -2.0f && signbit(un1("Round", -0.5f)));
    /* NaN handling */
    node_reset("Relu", 14);
    CHECK(isnan(un1("Relu", NAN)));
    CHECK(signbit(un1("Relu", -0.0f)) && un1("Relu", -3.0f) == 0.0f);
    node_reset("Sign", 13);
    CHECK(isnan(un1("Sign", NAN)) && un1("Sign", -0.0f) == 0.0f && un1("Sign", -7.0f) == -1.0f);
    node_reset("ThresholdedRelu", 10);
    CHECK(un1("ThresholdedRelu", NAN) == 0.0f);
    /* attributes */
    node_reset("LeakyRelu", 16);
    attr_float("alpha", 0.25f);
    CHECK(un1("LeakyRelu", -4.0f) == -1.0f && un1("LeakyRelu", 3.0f) == 3.0f);
    node_reset("Elu", 6);
    attr_float("alpha", 2.0f);
    CHECK(fabs(un1("Elu", -1.0f) - 2.0 * expm1(-1.0)) < 1e-6);
    node_reset("Celu", 12);
    attr_float("alpha", 2.0f);
    CHECK(fabs(un1("Celu", -1.0f) - 2.0 * expm1(-0.5)) < 1e-6 && un1("Celu", 3.0f) == 3.0f);
    node_reset("ThresholdedRelu", 10);
    attr_float("alpha", 2.0f);
    CHECK(un1("ThresholdedRelu", 2.0f) == 0.0f && un1("ThresholdedRelu", 2.5f) == 2.5f);
    node_reset("HardSigmoid", 6);
    attr_float("alpha", 0.5f);
    attr_float("beta", 0.25f);
    CHECK(un1("HardSigmoid", 1.0f) == 0.75f && un1("HardSigmoid", 4.0f) == 1.0f &&
          un1("HardSigmoid", -4.0f) == 0.0f);
    node_reset("Selu", 6);
    attr_float("alpha", 2.0f);
    attr_float("gamma", 3.0f);
    CHECK(un1("Selu", 1.0f) == 3.0f && fabs(un1("Selu", -1.0f) - 6.0 * expm1(-1.0)) < 1e-5);
    node_reset("HardSwish", 14);
    CHECK(un1("HardSwish", 3.0f) == 3.0f && un1("HardSwish", -3.0f) == 0.0f &&
          un1("HardSwish", 1.5f) == 1.5f * 0.75f);
    /* Gelu, tanh approximation */
    node_reset("Gelu", 20);
    attr_str("approximate", "tanh");
    for (float v = -5.0f; v <= 5.0f; v += 0.37f) {
        double r = 0.5 * v * (1 + tanh(sqrt(2 / 3.141592653589793) * (v + 0.044715 * v * v * v)));
        CHECK_MSG(fabs(un1("Gelu", v) - r) <= 4e-6 * fabs(r) + 2e-7, "gelu tanh %g", (double)v);
    }
    node_reset("Gelu", 20);
    attr_str("approximate", "fast");
    mpx_value x = valf(1, DIMS(1), FV(1.0f)), y;
    CHECK(RUN1(&y, &x) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "approximate");
    CHECK_CONTAINS(err.msg, "node \"n1\" (Gelu)");
    mpx_value_free(&x);
}

static void test_unary_int_bool(void) {
    mpx_value x = vali(MPX_DT_INT8, 1, DIMS(5), IV(-128, -3, 0, 5, 127)), y;
    node_reset("Neg", 13);
    CHECK(RUN1(&y, &x) == MPX_OK && y.dtype == MPX_DT_INT8);
    CHECK(y.i[0] == -128 && y.i[1] == 3 && y.i[2] == 0 && y.i[3] == -5 && y.i[4] == -127);
    mpx_value_free(&y);
    node_reset("Abs", 13);
    CHECK(RUN1(&y, &x) == MPX_OK && y.i[0] == -128 && y.i[1] == 3 && y.i[4] == 127);
    mpx_value_free(&y);
    node_reset("Relu", 14);
    CHECK(RUN1(&y, &x) == MPX_OK && y.i[0] == 0 && y.i[3] == 5);
    mpx_value_free(&y);
    node_reset("Sign", 13);
    CHECK(RUN1(&y, &x) == MPX_OK && y.i[0] == -1 && y.i[2] == 0 && y.i[4] == 1);
    mpx_value_free(&y);
    /* float-only ops refuse integers, Not refuses non-bool */
    node_reset("Exp", 13);
    CHECK(RUN1(&y, &x) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "int8");
    node_reset("Not", 1);
    CHECK(RUN1(&y, &x) == MPX_E_INVALID);
    mpx_value_free(&x);
    mpx_value b = vali(MPX_DT_BOOL, 1, DIMS(2), IV(0, 1));
    CHECK(RUN1(&y, &b) == MPX_OK && y.dtype == MPX_DT_BOOL && y.i[0] == 1 && y.i[1] == 0);
    mpx_value_free(&y);
    mpx_value_free(&b);
    /* IsNaN, IsInf */
    mpx_value f = valf(1, DIMS(5), FV(1.0f, NAN, INFINITY, -INFINITY, -0.0f));
    node_reset("IsNaN", 13);
    CHECK(RUN1(&y, &f) == MPX_OK && y.dtype == MPX_DT_BOOL);
    CHECK(y.i[0] == 0 && y.i[1] == 1 && y.i[2] == 0 && y.i[3] == 0 && y.i[4] == 0);
    mpx_value_free(&y);
    node_reset("IsInf", 10);
    CHECK(RUN1(&y, &f) == MPX_OK && y.i[0] == 0 && y.i[1] == 0 && y.i[2] == 1 && y.i[3] == 1);
    mpx_value_free(&y);
    attr_int("detect_negative", 0);
    CHECK(RUN1(&y, &f) == MPX_OK && y.i[2] == 1 && y.i[3] == 0);
    mpx_value_free(&y);
    node_reset("IsInf", 10);
    attr_int("detect_positive", 0);
    CHECK(RUN1(&y, &f) == MPX_OK && y.i[2] == 0 && y.i[3] == 1);
    mpx_value_free(&y);
    /* missing input, no output slot */
    node_reset("Tanh", 13);
    CHECK(RUN1(&y, NULL) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "input 0 is missing");
    CHECK(run(&y, 0, NULL, NULL, NULL, NULL) == MPX_E_INVALID);
    mpx_kctx c = {.node = &node, .acc = acc, .err = &err};
    const mpx_value *in[1] = {&f};
    CHECK(mpx_kernel_for(MPX_OP_Tanh)(&c, in, 1, &y, 0) == MPX_E_INVALID);
    mpx_value_free(&f);
}

/* ---- Clip ------------------------------------------------------------------------------- */

static void test_clip(void) {
    mpx_value x = valf(1, DIMS(6), FV(-5.0f, -1.0f, 0.5f, 2.0f, 9.0f, NAN)), y;
    /* opset 6: attributes */
    node_reset("Clip", 6);
    attr_float("min", -1.5f);
    attr_float("max", 2.5f);
    CHECK(RUN1(&y, &x) == MPX_OK);
    CHECK(y.f[0] == -1.5f && y.f[1] == -1.0f && y.f[3] == 2.0f && y.f[4] == 2.5f && isnan(y.f[5]));
    mpx_value_free(&y);
    node_reset("Clip", 6); /* defaults: no clipping */
    CHECK(RUN1(&y, &x) == MPX_OK && y.f[0] == -5.0f && y.f[4] == 9.0f);
    mpx_value_free(&y);
    /* opset 11+: optional inputs */
    mpx_value lo = valf(0, NULL, FV(0.0f)), hi = valf(1, DIMS(1), FV(1.0f));
    node_reset("Clip", 13);
    CHECK(RUN3(&y, &x, &lo, &hi) == MPX_OK);
    CHECK(y.f[0] == 0.0f && y.f[2] == 0.5f && y.f[4] == 1.0f && isnan(y.f[5]));
    mpx_value_free(&y);
    CHECK(RUN3(&y, &x, NULL, &hi) == MPX_OK && y.f[0] == -5.0f && y.f[4] == 1.0f);
    mpx_value_free(&y);
    CHECK(RUN2(&y, &x, &lo) == MPX_OK && y.f[0] == 0.0f && y.f[4] == 9.0f);
    mpx_value_free(&y);
    CHECK(RUN3(&y, &x, &hi, &lo) == MPX_OK); /* min > max: everything is max */
    CHECK(y.f[0] == 0.0f && y.f[4] == 0.0f && y.f[2] == 0.0f);
    mpx_value_free(&y);
    mpx_value two = valf(1, DIMS(2), FV(0.0f, 1.0f));
    CHECK(RUN2(&y, &x, &two) == MPX_E_SHAPE);
    mpx_value_free(&two);
    /* integers (opset 12+) */
    mpx_value xi = vali(MPX_DT_INT32, 1, DIMS(4), IV(-9, 0, 4, 100)),
              li = vali(MPX_DT_INT32, 0, NULL, IV(-2));
    mpx_value hi_i = vali(MPX_DT_INT32, 0, NULL, IV(10));
    CHECK(RUN3(&y, &xi, &li, &hi_i) == MPX_OK && y.dtype == MPX_DT_INT32);
    CHECK(y.i[0] == -2 && y.i[1] == 0 && y.i[2] == 4 && y.i[3] == 10);
    mpx_value_free(&y);
    CHECK(RUN3(&y, &xi, &lo, &hi) == MPX_E_INVALID); /* float bounds for int x */
    node_reset("Clip", 6);
    CHECK(RUN1(&y, &xi) == MPX_E_INVALID); /* opset 6: float only */
    mpx_value_free(&xi);
    mpx_value_free(&li);
    mpx_value_free(&hi_i);
    mpx_value_free(&lo);
    mpx_value_free(&hi);
    mpx_value_free(&x);
}

/* ---- broadcasting binary ---------------------------------------------------------------- */

static double ref_binary(const char *op, float a, float b) {
    if (!strcmp(op, "Add")) return (double)(a + b);
    if (!strcmp(op, "Sub")) return (double)(a - b);
    if (!strcmp(op, "Mul")) return (double)(a * b);
    if (!strcmp(op, "Div")) return (double)(a / b);
    if (!strcmp(op, "Pow")) return pow(a, b);
    if (!strcmp(op, "Mod")) return fmod(a, b);
    if (!strcmp(op, "Max")) return a > b ? a : b;
    if (!strcmp(op, "Min")) return a < b ? a : b;
    if (!strcmp(op, "PRelu")) return a > 0 ? a : (double)(a * b);
    if (!strcmp(op, "Equal")) return a == b;
    if (!strcmp(op, "Greater")) return a > b;
    if (!strcmp(op, "Less")) return a < b;
    if (!strcmp(op, "GreaterOrEqual")) return a >= b;
    if (!strcmp(op, "LessOrEqual")) return a <= b;
    return NAN;
}

/* op on a (shape ra) and b (shape rb), checked element by element. */
static void check_binary(const char *op, int ra, const int64_t *da, int rb, const int64_t *db,
                         int rr, const int64_t *dr) {
    mpx_value a = val(MPX_DT_FLOAT, ra, da), b = val(MPX_DT_FLOAT, rb, db), y;
    bool pow_op = !strcmp(op, "Pow");
    fill_uniform(&a, pow_op ? 0.1 : -4.0, 4.0);
    fill_uniform(&b, pow_op ? -3.0 : 0.25, 3.0);
    for (int64_t i = 0; i < a.n && !pow_op; i += 7) a.f[i] = b.f[0]; /* some ties */
    node_reset(op, 13);
    if (!strcmp(op, "Mod")) attr_int("fmod", 1);
    mpx_status st = RUN2(&y, &a, &b);
    CHECK_MSG(st == MPX_OK, "%s: %s", op, err.msg);
    if (st != MPX_OK) goto done;
    CHECK_MSG(same_shape(&y, rr, dr), "%s: output shape", op);
    bool cmp = strstr(op, "Equal") || strstr(op, "Greater") || strstr(op, "Less");
    CHECK(y.dtype == (cmp ? MPX_DT_BOOL : MPX_DT_FLOAT));
    int bad = 0;
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t i = 0; i < y.n; i++) {
        coord(i, rr, dr, co);
        float av = a.f[bidx(&a, rr, co)], bv = b.f[bidx(&b, rr, co)];
        double r = ref_binary(op, av, bv), g = cmp ? (double)y.i[i] : (double)y.f[i];
        bool ok = pow_op ? fabs(g - r) <= 2e-6 * fabs(r) : (float)r == (float)g;
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s(%g, %g) = %g, expected %g\n", op, (double)av, (double)bv, g, r);
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld values off", op, bad, (long long)y.n);
    mpx_value_free(&y);
done:
    mpx_value_free(&a);
    mpx_value_free(&b);
}

static void test_binary_float(void) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min",
                                      "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const char *op = ops[k];
        check_binary(op, 3, DIMS(3, 1, 4), 2, DIMS(5, 1), 3, DIMS(3, 5, 4));
        check_binary(op, 2, DIMS(5, 1), 3, DIMS(3, 1, 4), 3, DIMS(3, 5, 4));
        check_binary(op, 4, DIMS(2, 3, 4, 5), 4, DIMS(2, 3, 4, 5), 4, DIMS(2, 3, 4, 5));
        check_binary(op, 4, DIMS(2, 3, 4, 5), 3, DIMS(3, 1, 1), 4, DIMS(2, 3, 4, 5));
        check_binary(op, 3, DIMS(2, 3, 4), 0, NULL, 3, DIMS(2, 3, 4));
        check_binary(op, 0, NULL, 2, DIMS(4, 3), 2, DIMS(4, 3));
        check_binary(op, 0, NULL, 0, NULL, 0, NULL);
        check_binary(op, 3, DIMS(1, 4, 1), 3, DIMS(3, 1, 5), 3, DIMS(3, 4, 5));
        check_binary(op, 2, DIMS(0, 4), 2, DIMS(1, 4), 2, DIMS(0, 4));
        check_binary(op, 3, DIMS(2, 0, 3), 1, DIMS(1), 3, DIMS(2, 0, 3));
    }
    check_binary("PRelu", 4, DIMS(2, 3, 4, 5), 3, DIMS(3, 1, 1), 4, DIMS(2, 3, 4, 5));
    check_binary("PRelu", 2, DIMS(4, 5), 1, DIMS(5), 2, DIMS(4, 5));
    check_binary("PRelu", 2, DIMS(4, 5), 0, NULL, 2, DIMS(4, 5));
}

static void test_binary_special(void) {
    mpx_value y;
    /* shape mismatch, named in the message */
    mpx_value a = val(MPX_DT_FLOAT, 2, DIMS(3, 4)), b = val(MPX_DT_FLOAT, 1, DIMS(5));
    node_reset("Add", 14);
    CHECK(RUN2(&y, &a, &b) == MPX_E_SHAPE);
    CHECK_CONTAINS(err.msg, "broadcast");
    CHECK_CONTAINS(err.msg, "node \"n1\" (Add)");
    CHECK(y.n == -1);
    CHECK(RUN2(&y, &a, NULL) == MPX_E_INVALID);
    CHECK(RUN1(&y, &a) == MPX_E_INVALID);
    mpx_value ai = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, 2, 3, 4));
    CHECK(RUN2(&y, &a, &ai) == MPX_E_INVALID); /* float + int */
    CHECK_CONTAINS(err.msg, "different types");
    mpx_value ai32 = vali(MPX_DT_INT32, 1, DIMS(4), IV(1, 2, 3, 4));
    CHECK(RUN2(&y, &ai, &ai32) == MPX_E_INVALID); /* int64 + int32 */
    /* PRelu's slope must not grow X */
    node_reset("PRelu", 16);
    mpx_value s = val(MPX_DT_FLOAT, 3, DIMS(2, 3, 4));
    CHECK(RUN2(&y, &a, &s) == MPX_E_SHAPE);
    mpx_value_free(&s);
    /* float Mod needs fmod=1; And wants bool */
    node_reset("Mod", 13);
    CHECK(RUN2(&y, &a, &a) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "fmod");
    node_reset("And", 7);
    CHECK(RUN2(&y, &a, &a) == MPX_E_INVALID);
    mpx_value_free(&a);
    mpx_value_free(&b);
    /* Max/Min propagate NaN from either side */
    mpx_value p = valf(1, DIMS(3), FV(NAN, 1.0f, 2.0f)), q = valf(1, DIMS(3), FV(1.0f, NAN, 1.0f));
    node_reset("Max", 13);
    CHECK(RUN2(&y, &p, &q) == MPX_OK && isnan(y.f[0]) && isnan(y.f[1]) && y.f[2] == 2.0f);
    mpx_value_free(&y);
    node_reset("Min", 13);
    CHECK(RUN2(&y, &p, &q) == MPX_OK && isnan(y.f[0]) && isnan(y.f[1]) && y.f[2] == 1.0f);
    mpx_value_free(&y);
    mpx_value_free(&p);
    mpx_value_free(&q);
    /* Pow: squares by multiplication; float ** int exponent; fp16 dtype kept */
    mpx_value x = val(MPX_DT_FLOAT16, 1, DIMS(4));
    x.f[0] = 3.0f, x.f[1] = -1.5f, x.f[2] = 0.1f, x.f[3] = -0.0f;
    mpx_value e2 = valf(0, NULL, FV(2.0f)), e3i = vali(MPX_DT_INT64, 1, DIMS(1), IV(3));
    node_reset("Pow", 15);
    CHECK(RUN2(&y, &x, &e2) == MPX_OK && y.dtype == MPX_DT_FLOAT16);
    CHECK(y.f[0] == 9.0f && y.f[1] == 2.25f && y.f[2] == 0.1f * 0.1f && y.f[3] == 0.0f);
    mpx_value_free(&y);
    CHECK(RUN2(&y, &x, &e3i) == MPX_OK && y.f[0] == 27.0f && y.f[1] == -3.375f);
    mpx_value_free(&y);
    mpx_value ev = vali(MPX_DT_INT32, 1, DIMS(4), IV(0, 3, -1, 2));
    CHECK(RUN2(&y, &x, &ev) == MPX_OK && y.f[0] == 1.0f && y.f[1] == -3.375f &&
          y.f[2] == (float)(1.0 / (double)0.1f) && y.f[3] == 0.0f);
    mpx_value_free(&y);
    mpx_value_free(&x);
    mpx_value_free(&e2);
    mpx_value_free(&e3i);
    mpx_value_free(&ev);
    mpx_value_free(&ai);
    mpx_value_free(&ai32);
}

/* Random integers through the broadcasting walk, against per-element C. */
static void check_binary_int_random(void) {
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Greater"};
    mpx_value a = val(MPX_DT_INT64, 3, DIMS(3, 1, 4)), b = val(MPX_DT_INT64, 2, DIMS(5, 1)), y;
    fill_int(&a, -1000, 1000);
    fill_int(&b, 1, 50);
    for (int k = 0; k < 8; k++) {
        node_reset(ops[k], 14);
        if (RUN2(&y, &a, &b) != MPX_OK) {
            CHECK_MSG(0, "%s: %s", ops[k], err.msg);
            continue;
        }
        int bad = 0;
        int64_t co[3];
        for (int64_t i = 0; i < y.n; i++) {
            coord(i, 3, y.dims, co);
            int64_t p = a.i[bidx(&a, 3, co)], q = b.i[bidx(&b, 3, co)];
            int64_t r = k == 0 ? p + q : k == 1 ? p - q : k == 2 ? p * q : k == 3 ? p / q
                      : k == 4 ? ((p % q) + q) % q : k == 5 ? (p > q ? p : q)
                      : k == 6 ? (p < q ? p : q) : p > q;
            bad += y.i[i] != r;
        }
        CHECK_MSG(bad == 0 && same_shape(&y, 3, DIMS(3, 5, 4)), "%s: %d off", ops[k], bad);
        mpx_value_free(&y);
    }
    mpx_value_free(&a);
    mpx_value_free(&b);
}

static void test_binary_int(void) {
    mpx_value y;
    /* shape arithmetic: int64 Add/Mul/Equal on shape tensors, broadcasting a scalar */
    mpx_value shp = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, 3, 640, 640));
    mpx_value two = vali(MPX_DT_INT64, 0, NULL, IV(2));
    node_reset("Mul", 14);
    CHECK(RUN2(&y, &shp, &two) == MPX_OK && y.dtype == MPX_DT_INT64 && y.rank == 1);
    CHECK(y.i[0] == 2 && y.i[1] == 6 && y.i[2] == 1280 && y.i[3] == 1280);
    mpx_value_free(&y);
    node_reset("Add", 14);
    CHECK(RUN2(&y, &shp, &two) == MPX_OK && y.i[2] == 642);
    mpx_value_free(&y);
    node_reset("Equal", 13);
    mpx_value neg = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, -1, 640, 0));
    CHECK(RUN2(&y, &shp, &neg) == MPX_OK && y.dtype == MPX_DT_BOOL);
    CHECK(y.i[0] == 1 && y.i[1] == 0 && y.i[2] == 1 && y.i[3] == 0);
    mpx_value_free(&y);
    /* Div truncates, Mod: sign of divisor (fmod=0) or of dividend (fmod=1) */
    mpx_value n = vali(MPX_DT_INT64, 1, DIMS(4), IV(-7, 7, -7, 7)),
              d = vali(MPX_DT_INT64, 1, DIMS(4), IV(2, -2, 3, -3));
    node_reset("Div", 14);
    CHECK(RUN2(&y, &n, &d) == MPX_OK && y.i[0] == -3 && y.i[1] == -3 && y.i[2] == -2 &&
          y.i[3] == -2);
    mpx_value_free(&y);
    node_reset("Mod", 13);
    CHECK(RUN2(&y, &n, &d) == MPX_OK && y.i[0] == 1 && y.i[1] == -1 && y.i[2] == 2 && y.i[3] == -2);
    mpx_value_free(&y);
    attr_int("fmod", 1);
    CHECK(RUN2(&y, &n, &d) == MPX_OK && y.i[0] == -1 && y.i[1] == 1 && y.i[2] == -1 && y.i[3] == 1);
    mpx_value_free(&y);
    mpx_value z = vali(MPX_DT_INT64, 1, DIMS(1), IV(0));
    node_reset("Div", 14);
    CHECK(RUN2(&y, &n, &z) == MPX_E_INVALID && y.n == -1);
    CHECK_CONTAINS(err.msg, "division by zero");
    node_reset("Mod", 13);
    CHECK(RUN2(&y, &n, &z) == MPX_E_INVALID);
    /* wrapping in the dtype's width */
    mpx_value big = vali(MPX_DT_INT32, 1, DIMS(2), IV(INT32_MAX, INT32_MIN));
    mpx_value one = vali(MPX_DT_INT32, 1, DIMS(1), IV(1));
    node_reset("Add", 14);
    CHECK(RUN2(&y, &big, &one) == MPX_OK && y.i[0] == INT32_MIN && y.i[1] == INT32_MIN + 1);
    mpx_value_free(&y);
    node_reset("Sub", 14);
    CHECK(RUN2(&y, &big, &one) == MPX_OK && y.i[0] == INT32_MAX - 1 && y.i[1] == INT32_MAX);
    mpx_value_free(&y);
    mpx_value i64max = vali(MPX_DT_INT64, 1, DIMS(1), IV(INT64_MAX));
    mpx_value i64one = vali(MPX_DT_INT64, 1, DIMS(1), IV(1));
    node_reset("Add", 14);
    CHECK(RUN2(&y, &i64max, &i64one) == MPX_OK && y.i[0] == INT64_MIN); /* no UB */
    mpx_value_free(&y);
    /* Pow on integers, exact */
    mpx_value base = vali(MPX_DT_INT64, 1, DIMS(4), IV(3, -2, 2, 5)),
              ex = vali(MPX_DT_INT64, 1, DIMS(4), IV(40, 3, -1, 0));
    node_reset("Pow", 15);
    CHECK(RUN2(&y, &base, &ex) == MPX_OK && y.dtype == MPX_DT_INT64);
    CHECK(y.i[0] == -6289078614652622815LL /* 3^40 wrapped mod 2^64 */ && y.i[1] == -8 &&
          y.i[2] == 0 && y.i[3] == 1);
    mpx_value_free(&y);
    mpx_value_free(&base);
    mpx_value_free(&ex);
    /* Max, Min of ints; comparisons */
    mpx_value p = vali(MPX_DT_INT64, 2, DIMS(2, 1), IV(-5, 9)),
              q = vali(MPX_DT_INT64, 1, DIMS(3), IV(0, 9, -7));
    node_reset("Max", 13);
    CHECK(RUN2(&y, &p, &q) == MPX_OK && same_shape(&y, 2, DIMS(2, 3)));
    CHECK(y.i[0] == 0 && y.i[1] == 9 && y.i[2] == -5 && y.i[3] == 9 && y.i[5] == 9);
    mpx_value_free(&y);
    node_reset("Less", 13);
    CHECK(RUN2(&y, &p, &q) == MPX_OK && y.i[0] == 1 && y.i[1] == 1 && y.i[2] == 0 && y.i[4] == 0);
    mpx_value_free(&y);
    node_reset("GreaterOrEqual", 16);
    CHECK(RUN2(&y, &p, &q) == MPX_OK && y.i[0] == 0 && y.i[4] == 1 && y.i[5] == 1);
    mpx_value_free(&y);
    node_reset("PRelu", 16);
    mpx_value sl = vali(MPX_DT_INT64, 1, DIMS(1), IV(3));
    CHECK(RUN2(&y, &q, &sl) == MPX_OK && y.i[0] == 0 && y.i[1] == 9 && y.i[2] == -21);
    mpx_value_free(&y);
    mpx_value_free(&sl);
    /* logic on bool, broadcast */
    mpx_value ba = vali(MPX_DT_BOOL, 2, DIMS(2, 1), IV(0, 1)),
              bb = vali(MPX_DT_BOOL, 1, DIMS(2), IV(0, 1));
    static const char *const lops[] = {"And", "Or", "Xor", "Equal"};
    static const int64_t truth[4][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}, {1, 0, 0, 1}};
    for (int k = 0; k < 4; k++) {
        node_reset(lops[k], 7);
        CHECK_MSG(RUN2(&y, &ba, &bb) == MPX_OK && y.dtype == MPX_DT_BOOL, "%s", lops[k]);
        CHECK_MSG(y.n == 4 && !memcmp(y.i, truth[k], sizeof truth[k]), "%s truth table", lops[k]);
        mpx_value_free(&y);
    }
    node_reset("And", 7);
    CHECK(RUN2(&y, &p, &q) == MPX_E_INVALID); /* int64 is not bool */
    mpx_value_free(&ba);
    mpx_value_free(&bb);
    mpx_value_free(&p);
    mpx_value_free(&q);
    mpx_value_free(&big);
    mpx_value_free(&one);
    mpx_value_free(&i64max);
    mpx_value_free(&i64one);
    mpx_value_free(&z);
    mpx_value_free(&n);
    mpx_value_free(&d);
    mpx_value_free(&neg);
    mpx_value_free(&shp);
    mpx_value_free(&two);
}

/* ---- variadic, Where ------------------------------------------------------------------- */

static void test_variadic(void) {
    mpx_value a = val(MPX_DT_FLOAT, 3, DIMS(3, 1, 4)), b = val(MPX_DT_FLOAT, 2, DIMS(5, 1));
    mpx_value c3 = val(MPX_DT_FLOAT, 1, DIMS(4)), y;
    fill_uniform(&a, -2, 2);
    fill_uniform(&b, -2, 2);
    fill_uniform(&c3, -2, 2);
    static const char *const ops[] = {"Sum", "Mean", "Max", "Min"};
    for (int k = 0; k < 4; k++) {
        node_reset(ops[k], 13);
        CHECK_MSG(RUN3(&y, &a, &b, &c3) == MPX_OK && same_shape(&y, 3, DIMS(3, 5, 4)), "%s",
                  ops[k]);
        int bad = 0;
        int64_t co[3];
        for (int64_t i = 0; i < y.n; i++) {
            coord(i, 3, y.dims, co);
            float u = a.f[bidx(&a, 3, co)], v = b.f[bidx(&b, 3, co)], w = c3.f[bidx(&c3, 3, co)];
            float r = k == 0 ? (u + v) + w
                      : k == 1 ? ((u + v) + w) / 3.0f
                      : k == 2 ? fmaxf(fmaxf(u, v), w)
                               : fminf(fminf(u, v), w);
            bad += !same_bits(r, y.f[i]);
        }
        CHECK_MSG(bad == 0, "%s: %d values off", ops[k], bad);
        mpx_value_free(&y);
    }
    /* one input is a copy; none is refused; types must agree */
    node_reset("Sum", 13);
    CHECK(RUN1(&y, &a) == MPX_OK && same_shape(&y, 3, a.dims) &&
          !memcmp(y.f, a.f, 12 * sizeof(float)));
    mpx_value_free(&y);
    CHECK(run(&y, 0, NULL, NULL, NULL, NULL) == MPX_E_INVALID);
    mpx_value ii = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, 2, 3, 4));
    CHECK(RUN3(&y, &a, &b, &ii) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "inputs 0 and 2");
    mpx_value jj = vali(MPX_DT_INT64, 2, DIMS(2, 1), IV(10, 20));
    node_reset("Max", 13);
    CHECK(RUN2(&y, &ii, &jj) == MPX_OK && y.i[0] == 10 && y.i[7] == 20);
    mpx_value_free(&y);
    node_reset("Mean", 13);
    CHECK(RUN2(&y, &ii, &jj) == MPX_E_INVALID); /* Mean is float only */
    mpx_value_free(&ii);
    mpx_value_free(&jj);
    /* Sum with fp16 accumulation: input 0 starts the sum, every addition rounds */
    mpx_value p = valf(1, DIMS(2), FV(2048.0f, 1.0f)), q = valf(1, DIMS(2), FV(1.0f, 0.0004f));
    node_reset("Sum", 13);
    acc.fmt = &mpx_format_fp16;
    CHECK(RUN3(&y, &p, &q, &q) == MPX_OK);
    CHECK(y.f[0] == 2048.0f);                       /* 2048 + 1 -> 2048 twice */
    CHECK(y.f[1] == 1.0f);                          /* 1 + 0.0004 -> 1 in fp16 */
    mpx_value_free(&y);
    acc.fmt = NULL;
    CHECK(RUN3(&y, &p, &q, &q) == MPX_OK && y.f[0] == 2050.0f);
    mpx_value_free(&y);
    mpx_value_free(&p);
    mpx_value_free(&q);
    mpx_value_free(&a);
    mpx_value_free(&b);
    mpx_value_free(&c3);
}

static void test_where(void) {
    mpx_value cd = vali(MPX_DT_BOOL, 3, DIMS(2, 1, 1), IV(1, 0));
    mpx_value x = val(MPX_DT_FLOAT, 3, DIMS(1, 3, 1)), yv = val(MPX_DT_FLOAT, 2, DIMS(1, 4)), o;
    fill_uniform(&x, -1, 1);
    fill_uniform(&yv, 5, 6);
    node_reset("Where", 16);
    CHECK(RUN3(&o, &cd, &x, &yv) == MPX_OK && same_shape(&o, 3, DIMS(2, 3, 4)) &&
          o.dtype == MPX_DT_FLOAT);
    int bad = 0;
    int64_t co[3];
    for (int64_t i = 0; i < o.n; i++) {
        coord(i, 3, o.dims, co);
        float r = cd.i[bidx(&cd, 3, co)] ? x.f[bidx(&x, 3, co)] : yv.f[bidx(&yv, 3, co)];
        bad += r != o.f[i];
    }
    CHECK(bad == 0);
    mpx_value_free(&o);
    mpx_value xi = vali(MPX_DT_INT64, 0, NULL, IV(7)),
              yi = vali(MPX_DT_INT64, 1, DIMS(3), IV(1, 2, 3));
    CHECK(RUN3(&o, &cd, &xi, &yi) == MPX_OK && same_shape(&o, 3, DIMS(2, 1, 3)));
    CHECK(o.i[0] == 7 && o.i[2] == 7 && o.i[3] == 1 && o.i[5] == 3);
    mpx_value_free(&o);
    CHECK(RUN3(&o, &cd, &x, &yi) == MPX_E_INVALID);   /* X float, Y int */
    CHECK(RUN3(&o, &x, &x, &yv) == MPX_E_INVALID);    /* condition not bool */
    CHECK_CONTAINS(err.msg, "input 0");
    mpx_value c2 = vali(MPX_DT_BOOL, 1, DIMS(2), IV(1, 0));
    CHECK(RUN3(&o, &c2, &x, &yv) == MPX_E_SHAPE);     /* 2 against 4 */
    mpx_value_free(&c2);
    mpx_value_free(&xi);
    mpx_value_free(&yi);
    mpx_value_free(&cd);
    mpx_value_free(&x);
    mpx_value_free(&yv);
}

/* ---- reductions ----------------------------------------------------------------------- */

/* Naive reduction of x over mask: terms in flat order, fp32 sequential. */
static void ref_reduce(const char *op, const mpx_value *x, const bool *mask, float *out,
                       int64_t nout) {
    int64_t cnt = 1;
    for (int i = 0; i < x->rank; i++)
        if (mask[i]) cnt *= x->dims[i];
    for (int64_t j = 0; j < nout; j++)
        out[j] = !strcmp(op, "ReduceProd") ? 1.0f : !strcmp(op, "ReduceMax") ? -INFINITY
                 : !strcmp(op, "ReduceMin") ? INFINITY : 0.0f;
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t i = 0; i < x->n; i++) {
        coord(i, x->rank, x->dims, co);
        int64_t j = 0;
        for (int d = 0; d < x->rank; d++)
            if (!mask[d]) j = j * x->dims[d] + co[d];
        float v = x->f[i];
        if (!strcmp(op, "ReduceProd")) out[j] *= v;
        else if (!strcmp(op, "ReduceMax")) out[j] = fmaxf(out[j], v);
        else if (!strcmp(op, "ReduceMin")) out[j] = fminf(out[j], v);
        else if (!strcmp(op, "ReduceL2") || !strcmp(op, "ReduceSumSquare")) out[j] += v * v;
        else out[j] += v;
    }
    for (int64_t j = 0; j < nout; j++) {
        if (!strcmp(op, "ReduceMean")) out[j] /= (float)cnt;
        if (!strcmp(op, "ReduceL2")) out[j] = sqrtf(out[j]);
    }
}

/* Axes given as an attribute (old opsets) or an input (new), checked against
 * ref_reduce bit for bit. */
static void check_reduce(const char *op, int opset, bool axes_input, int na, const int64_t *axes,
                         bool keep) {
    mpx_value x = val(MPX_DT_FLOAT, 4, DIMS(2, 3, 4, 5)), y;
    fill_uniform(&x, -2, 2);
    mpx_value av = vali(MPX_DT_INT64, 1, DIMS(na), axes);
    node_reset(op, opset);
    if (!axes_input && na) attr_ints("axes", na, axes);
    if (!keep) attr_int("keepdims", 0);
    mpx_status st = axes_input ? RUN2(&y, &x, &av) : RUN1(&y, &x);
    CHECK_MSG(st == MPX_OK, "%s: %s", op, err.msg);
    if (st == MPX_OK) {
        bool mask[4] = {na == 0, na == 0, na == 0, na == 0};
        for (int i = 0; i < na; i++) mask[axes[i] < 0 ? axes[i] + 4 : axes[i]] = true;
        int64_t dims[4];
        int r = 0;
        for (int i = 0; i < 4; i++)
            if (!mask[i] || keep) dims[r++] = mask[i] ? 1 : x.dims[i];
        CHECK_MSG(same_shape(&y, r, dims), "%s: output shape", op);
        float ref[120];
        ref_reduce(op, &x, mask, ref, y.n);
        int bad = 0;
        for (int64_t j = 0; j < y.n; j++) bad += !same_bits(ref[j], y.f[j]);
        CHECK_MSG(bad == 0, "%s opset %d: %d of %lld values differ from the flat-order sum", op,
                  opset, bad, (long long)y.n);
        mpx_value_free(&y);
    }
    mpx_value_free(&x);
    mpx_value_free(&av);
}

static void test_reduce_float(void) {
    static const char *const ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                      "ReduceProd", "ReduceL2", "ReduceSumSquare"};
    for (int k = 0; k < 7; k++) {
        const char *op = ops[k];
        int new_opset = k == 0 ? 13 : 18;
        check_reduce(op, 11, false, 1, IV(1), true);
        check_reduce(op, 11, false, 2, IV(0, -1), false);
        check_reduce(op, 11, false, 2, IV(3, 1), true);
        check_reduce(op, 11, false, 0, NULL, true);           /* all axes */
        check_reduce(op, 11, false, 0, NULL, false);
        check_reduce(op, new_opset, true, 1, IV(-2), false);
        check_reduce(op, new_opset, true, 3, IV(0, 2, 3), true);
        check_reduce(op, new_opset, true, 4, IV(0, 1, 2, 3), false);
        check_reduce(op, new_opset, true, 0, NULL, true);     /* empty axes input */
    }
    /* the sum really is taken in flat order, against double */
    mpx_value x = val(MPX_DT_FLOAT, 2, DIMS(64, 300)), y;
    fill_uniform(&x, 0, 1);
    node_reset("ReduceSum", 13);
    CHECK(RUN1(&y, &x) == MPX_OK && y.n == 1 && same_shape(&y, 2, DIMS(1, 1)));
    double s = 0;
    for (int64_t i = 0; i < x.n; i++) s += x.f[i];
    CHECK(fabs(y.f[0] - s) < 1e-3 * s);
    mpx_value_free(&y);
    /* noop_with_empty_axes: identity; omitted axes input */
    node_reset("ReduceSum", 13);
    attr_int("noop_with_empty_axes", 1);
    CHECK(RUN2(&y, &x, NULL) == MPX_OK && same_shape(&y, 2, x.dims) && y.f[77] == x.f[77]);
    mpx_value_free(&y);
    mpx_value empty = vali(MPX_DT_INT64, 1, DIMS(0), NULL);
    CHECK(RUN2(&y, &x, &empty) == MPX_OK && y.n == x.n);
    mpx_value_free(&y);
    mpx_value_free(&empty);
    /* bad axes */
    mpx_value ax = vali(MPX_DT_INT64, 1, DIMS(2), IV(1, -1));
    node_reset("ReduceSum", 13);
    CHECK(RUN2(&y, &x, &ax) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "twice");
    mpx_value ax2 = vali(MPX_DT_INT64, 1, DIMS(1), IV(2));
    CHECK(RUN2(&y, &x, &ax2) == MPX_E_SHAPE);
    CHECK_CONTAINS(err.msg, "out of range");
    mpx_value axf = valf(1, DIMS(1), FV(0.0f));
    CHECK(RUN2(&y, &x, &axf) == MPX_E_INVALID);
    mpx_value_free(&ax);
    mpx_value_free(&ax2);
    mpx_value_free(&axf);
    mpx_value_free(&x);
    /* empty reductions: sum 0, max -inf, mean NaN */
    mpx_value e = val(MPX_DT_FLOAT, 2, DIMS(0, 3));
    node_reset("ReduceSum", 11);
    attr_ints("axes", 1, IV(0));
    CHECK(RUN1(&y, &e) == MPX_OK && same_shape(&y, 2, DIMS(1, 3)) && y.f[0] == 0.0f);
    mpx_value_free(&y);
    node_reset("ReduceMax", 11);
    attr_ints("axes", 1, IV(0));
    CHECK(RUN1(&y, &e) == MPX_OK && y.f[2] == -INFINITY);
    mpx_value_free(&y);
    node_reset("ReduceMean", 11);
    attr_ints("axes", 1, IV(0));
    attr_int("keepdims", 0);
    CHECK(RUN1(&y, &e) == MPX_OK && same_shape(&y, 1, DIMS(3)) && isnan(y.f[1]));
    mpx_value_free(&y);
    mpx_value_free(&e);
    /* NaN wins in ReduceMax wherever it sits */
    mpx_value nn = valf(1, DIMS(3), FV(1.0f, NAN, 5.0f));
    node_reset("ReduceMax", 18);
    CHECK(RUN1(&y, &nn) == MPX_OK && isnan(y.f[0]));
    mpx_value_free(&y);
    mpx_value_free(&nn);
}

static void test_reduce_accum(void) {
    mpx_value ones = val(MPX_DT_FLOAT16, 1, DIMS(4096)), y;
    for (int i = 0; i < 4096; i++) ones.f[i] = 1.0f;
    node_reset("ReduceSum", 13);
    CHECK(RUN1(&y, &ones) == MPX_OK && y.f[0] == 4096.0f && y.dtype == MPX_DT_FLOAT16);
    mpx_value_free(&y);
    acc.fmt = &mpx_format_fp16;
    CHECK(RUN1(&y, &ones) == MPX_OK && y.f[0] == 2048.0f); /* 2048 + 1 rounds to 2048 */
    mpx_value_free(&y);
    acc.fmt = &mpx_format_bf16;
    CHECK(RUN1(&y, &ones) == MPX_OK && y.f[0] == 256.0f);
    mpx_value_free(&y);
    acc.fmt = &mpx_format_fp16;
    acc.block = 16; /* blocks of 16 summed in fp32: 16, 32, ... all exact in fp16 */
    CHECK(RUN1(&y, &ones) == MPX_OK && y.f[0] == 4096.0f);
    mpx_value_free(&y);
    acc.block = 0;
    /* along a middle axis, each output's own running sum is rounded */
    mpx_value x = val(MPX_DT_FLOAT, 3, DIMS(2, 4096, 3));
    for (int64_t i = 0; i < x.n; i++) x.f[i] = (float)(1 + i % 3);
    node_reset("ReduceSum", 11);
    attr_ints("axes", 1, IV(1));
    acc.fmt = &mpx_format_fp16;
    CHECK(RUN1(&y, &x) == MPX_OK && same_shape(&y, 3, DIMS(2, 1, 3)));
    /* 1s stop at 2048; 2s at 4096 (spacing 4 there); 3s at 4096 + 4 ... worked by hand below */
    float s3 = 0.0f;
    for (int i = 0; i < 4096; i++) s3 = mpx_round_scalar(&mpx_format_fp16, s3 + 3.0f);
    CHECK(y.f[0] == 2048.0f && y.f[1] == 4096.0f && y.f[2] == s3 && y.f[5] == s3);
    mpx_value_free(&y);
    node_reset("ReduceMean", 11);
    attr_ints("axes", 1, IV(1));
    acc.fmt = &mpx_format_fp16;
    CHECK(RUN1(&y, &x) == MPX_OK && y.f[0] == 0.5f && y.f[4] == 1.0f);
    mpx_value_free(&y);
    node_reset("ReduceSumSquare", 18);
    acc.fmt = &mpx_format_fp16;
    mpx_value v = valf(1, DIMS(3), FV(2048.0f, 1.0f, 1.0f));
    CHECK(RUN1(&y, &v) == MPX_OK && y.f[0] == INFINITY); /* 2048^2 overflows fp16 */
    mpx_value_free(&y);
    acc.fmt = NULL;
    mpx_value_free(&v);
    mpx_value_free(&x);
    mpx_value_free(&ones);
}

static void test_reduce_int(void) {
    mpx_value shp = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, 3, 640, 640)), y;
    node_reset("ReduceProd", 13);
    attr_int("keepdims", 0);
    CHECK(RUN1(&y, &shp) == MPX_OK && y.rank == 0 && y.dtype == MPX_DT_INT64 && y.i[0] == 1228800);
    mpx_value_free(&y);
    mpx_value m = vali(MPX_DT_INT32, 2, DIMS(2, 3), IV(1, -8, 3, 4, 5, 7)),
              ax = vali(MPX_DT_INT64, 1, DIMS(1), IV(1));
    node_reset("ReduceSum", 13);
    CHECK(RUN2(&y, &m, &ax) == MPX_OK && same_shape(&y, 2, DIMS(2, 1)) && y.i[0] == -4 &&
          y.i[1] == 16);
    mpx_value_free(&y);
    node_reset("ReduceMax", 18);
    CHECK(RUN2(&y, &m, &ax) == MPX_OK && y.i[0] == 3 && y.i[1] == 7 && y.dtype == MPX_DT_INT32);
    mpx_value_free(&y);
    node_reset("ReduceMin", 13);
    attr_ints("axes", 1, IV(0));
    CHECK(RUN1(&y, &m) == MPX_OK && y.i[0] == 1 && y.i[1] == -8 && y.i[2] == 3);
    mpx_value_free(&y);
    node_reset("ReduceMean", 13);
    attr_ints("axes", 1, IV(1));
    CHECK(RUN1(&y, &m) == MPX_OK && y.i[0] == -1 && y.i[1] == 5); /* -4/3 truncates */
    mpx_value_free(&y);
    node_reset("ReduceSumSquare", 13);
    attr_ints("axes", 1, IV(1));
    CHECK(RUN1(&y, &m) == MPX_OK && y.i[0] == 74 && y.i[1] == 90);
    mpx_value_free(&y);
    mpx_value bl = vali(MPX_DT_BOOL, 1, DIMS(3), IV(0, 1, 0));
    node_reset("ReduceMax", 20);
    CHECK(RUN1(&y, &bl) == MPX_OK && y.dtype == MPX_DT_BOOL && y.i[0] == 1);
    mpx_value_free(&y);
    node_reset("ReduceSum", 13);
    CHECK(RUN1(&y, &bl) == MPX_E_INVALID); /* bool sums are not ONNX */
    mpx_value_free(&bl);
    mpx_value_free(&m);
    mpx_value_free(&ax);
    mpx_value_free(&shp);
}

/* ---- ArgMax, ArgMin, CumSum ------------------------------------------------------------ */

static void test_arg(void) {
    /* 2x3x4, with ties */
    mpx_value x = val(MPX_DT_FLOAT, 3, DIMS(2, 3, 4)), y;
    for (int64_t i = 0; i < x.n; i++) x.f[i] = (float)((i * 7) % 5);
    for (int axis = -3; axis < 3; axis++) {
        for (int mode = 0; mode < 8; mode++) {
            bool max = mode & 1, keep = mode & 2, last = mode & 4;
            node_reset(max ? "ArgMax" : "ArgMin", 13);
            attr_int("axis", axis);
            attr_int("keepdims", keep);
            attr_int("select_last_index", last);
            if (RUN1(&y, &x) != MPX_OK) {
                CHECK_MSG(0, "%s", err.msg);
                continue;
            }
            int ax = axis < 0 ? axis + 3 : axis;
            CHECK(y.dtype == MPX_DT_INT64 && y.rank == (keep ? 3 : 2));
            int bad = 0;
            int64_t co[3];
            for (int64_t i = 0; i < x.n; i++) {
                coord(i, 3, x.dims, co);
                if (co[ax] != 0) continue;
                int64_t best = 0, stride = ax == 2 ? 1 : ax == 1 ? 4 : 12;
                for (int64_t k = 1; k < x.dims[ax]; k++) {
                    float v = x.f[i + k * stride], b = x.f[i + best * stride];
                    if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = k;
                }
                int64_t j = 0;
                for (int d = 0; d < 3; d++)
                    if (d != ax) j = j * x.dims[d] + co[d];
                bad += y.i[j] != best;
            }
            CHECK_MSG(bad == 0, "axis %d mode %d", axis, mode);
            mpx_value_free(&y);
        }
    }
    mpx_value_free(&x);
    /* NaN is the extreme; ints; bad axis; empty axis */
    mpx_value nn = valf(1, DIMS(4), FV(1.0f, NAN, 9.0f, NAN));
    node_reset("ArgMax", 13);
    CHECK(RUN1(&y, &nn) == MPX_OK && y.i[0] == 1);
    mpx_value_free(&y);
    attr_int("select_last_index", 1);
    CHECK(RUN1(&y, &nn) == MPX_OK && y.i[0] == 3);
    mpx_value_free(&y);
    node_reset("ArgMin", 13);
    CHECK(RUN1(&y, &nn) == MPX_OK && y.i[0] == 1);
    mpx_value_free(&y);
    mpx_value_free(&nn);
    mpx_value xi = vali(MPX_DT_INT32, 2, DIMS(2, 2), IV(5, -1, 5, 9));
    node_reset("ArgMin", 13);
    attr_int("axis", 1);
    attr_int("keepdims", 0);
    CHECK(RUN1(&y, &xi) == MPX_OK && same_shape(&y, 1, DIMS(2)) && y.i[0] == 1 && y.i[1] == 0);
    mpx_value_free(&y);
    node_reset("ArgMax", 13);
    attr_int("axis", 2);
    CHECK(RUN1(&y, &xi) == MPX_E_SHAPE);
    CHECK_CONTAINS(err.msg, "axis 2");
    mpx_value_free(&xi);
    mpx_value e = val(MPX_DT_FLOAT, 2, DIMS(3, 0));
    node_reset("ArgMax", 13);
    attr_int("axis", 1);
    CHECK(RUN1(&y, &e) == MPX_E_SHAPE);
    mpx_value_free(&e);
}

static void test_cumsum(void) {
    mpx_value x = val(MPX_DT_FLOAT, 3, DIMS(2, 5, 3)), y;
    fill_uniform(&x, -1, 1);
    for (int axis = -3; axis < 3; axis++) {
        for (int mode = 0; mode < 4; mode++) {
            bool excl = mode & 1, rev = mode & 2;
            mpx_value av =
                vali(mode & 1 ? MPX_DT_INT32 : MPX_DT_INT64, mode == 2 ? 1 : 0, DIMS(1), IV(axis));
            node_reset("CumSum", 14);
            attr_int("exclusive", excl);
            attr_int("reverse", rev);
            if (RUN2(&y, &x, &av) != MPX_OK) {
                CHECK_MSG(0, "%s", err.msg);
                mpx_value_free(&av);
                continue;
            }
            CHECK(same_shape(&y, 3, x.dims));
            int ax = axis < 0 ? axis + 3 : axis, bad = 0;
            int64_t stride = ax == 2 ? 1 : ax == 1 ? 3 : 15, len = x.dims[ax], co[3];
            for (int64_t i = 0; i < x.n; i++) {
                coord(i, 3, x.dims, co);
                float s = 0.0f;
                int64_t base = i - co[ax] * stride;
                for (int64_t t = 0; t < len; t++) {
                    int64_t k = rev ? len - 1 - t : t;
                    if (k == co[ax] && excl) break;
                    s += x.f[base + k * stride];
                    if (k == co[ax]) break;
                }
                bad += !same_bits(s, y.f[i]);
            }
            CHECK_MSG(bad == 0, "CumSum axis %d mode %d: %d off", axis, mode, bad);
            mpx_value_free(&y);
            mpx_value_free(&av);
        }
    }
    mpx_value_free(&x);
    /* integers; fp16 accumulation */
    mpx_value xi = vali(MPX_DT_INT64, 1, DIMS(4), IV(1, 2, 3, 4)),
              a0 = vali(MPX_DT_INT64, 0, NULL, IV(0));
    node_reset("CumSum", 11);
    CHECK(RUN2(&y, &xi, &a0) == MPX_OK && y.i[0] == 1 && y.i[1] == 3 && y.i[3] == 10);
    mpx_value_free(&y);
    attr_int("exclusive", 1);
    attr_int("reverse", 1);
    CHECK(RUN2(&y, &xi, &a0) == MPX_OK && y.i[0] == 9 && y.i[2] == 4 && y.i[3] == 0);
    mpx_value_free(&y);
    mpx_value ones = val(MPX_DT_FLOAT, 1, DIMS(3000));
    for (int i = 0; i < 3000; i++) ones.f[i] = 1.0f;
    node_reset("CumSum", 11);
    acc.fmt = &mpx_format_fp16;
    CHECK(RUN2(&y, &ones, &a0) == MPX_OK && y.f[2046] == 2047.0f && y.f[2047] == 2048.0f &&
          y.f[2999] == 2048.0f);
    mpx_value_free(&y);
    acc.block = 8; /* the partial block counts in each output */
    CHECK(RUN2(&y, &ones, &a0) == MPX_OK && y.f[4] == 5.0f && y.f[2999] == 3000.0f);
    mpx_value_free(&y);
    acc.fmt = NULL;
    acc.block = 0;
    /* bad inputs */
    CHECK(RUN1(&y, &ones) == MPX_E_INVALID);
    mpx_value a2 = vali(MPX_DT_INT64, 1, DIMS(2), IV(0, 0));
    CHECK(RUN2(&y, &ones, &a2) == MPX_E_SHAPE);
    mpx_value a5 = vali(MPX_DT_INT64, 0, NULL, IV(1));
    CHECK(RUN2(&y, &ones, &a5) == MPX_E_SHAPE);
    mpx_value_free(&a2);
    mpx_value_free(&a5);
    mpx_value_free(&ones);
    mpx_value_free(&xi);
    mpx_value_free(&a0);
}

/* ---- Cast ------------------------------------------------------------------------------- */

static mpx_value cast(mpx_dtype to, int saturate, const mpx_value *x, mpx_status *st) {
    node_reset("Cast", saturate >= 0 ? 19 : 13);
    attr_int("to", to);
    if (saturate >= 0) attr_int("saturate", saturate);
    mpx_value y;
    *st = RUN1(&y, x);
    return y;
}

static void test_cast(void) {
    mpx_status st;
    /* float -> float16: every value equals the FP16 library's conversion */
    mpx_value x = val(MPX_DT_FLOAT, 1, DIMS(2000));
    fill_uniform(&x, -70000, 70000);
    for (int i = 0; i < 1000; i++)
        x.f[i] = (float)(mpx_rng_normal(&rng, 0, 1) * pow(2, i % 40 - 28));
    x.f[0] = 65519.99f, x.f[1] = 65520.0f, x.f[2] = NAN, x.f[3] = -INFINITY, x.f[4] = -0.0f;
    mpx_value y = cast(MPX_DT_FLOAT16, -1, &x, &st);
    CHECK(st == MPX_OK && y.dtype == MPX_DT_FLOAT16 && y.n == 2000);
    int bad = 0;
    for (int64_t i = 0; i < x.n && st == MPX_OK; i++)
        bad += !same_bits(fp16_ieee_to_fp32_value(fp16_ieee_from_fp32_value(x.f[i])), y.f[i]);
    CHECK_MSG(bad == 0, "%d fp16 casts differ from fp16.h", bad);
    CHECK(y.f[0] == 65504.0f && y.f[1] == INFINITY && signbit(y.f[4]));
    mpx_value_free(&y);
    /* bfloat16: round to nearest even on the top 16 bits */
    mpx_value b =
        valf(1, DIMS(4), FV(1.00390625f, 1.01171875f, 3.0e38f, 1.0f + 0x1p-8f + 0x1p-20f));
    y = cast(MPX_DT_BFLOAT16, -1, &b, &st);
    CHECK(st == MPX_OK && y.f[0] == 1.0f && y.f[1] == 1.015625f && y.f[2] == 0x1.c4p+127f &&
          y.f[3] == 1.0078125f);
    mpx_value_free(&y);
    mpx_value_free(&b);
    /* fp8: saturate (default 1) vs not */
    mpx_value f8 = valf(1, DIMS(6), FV(500.0f, -1e9f, INFINITY, NAN, 0.3f, 460.0f));
    y = cast(MPX_DT_FLOAT8E4M3FN, -1, &f8, &st);
    CHECK(st == MPX_OK && y.f[0] == 448.0f && y.f[1] == -448.0f && y.f[2] == 448.0f &&
          isnan(y.f[3]));
    CHECK(y.f[4] == 0.3125f && y.f[5] == 448.0f);
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT8E4M3FN, 0, &f8, &st);
    CHECK(st == MPX_OK && isnan(y.f[0]) && isnan(y.f[1]) && isnan(y.f[2]) && y.f[5] == 448.0f);
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT8E5M2, 1, &f8, &st);
    CHECK(st == MPX_OK && y.f[0] == 512.0f && y.f[1] == -57344.0f && y.f[2] == 57344.0f &&
          isnan(y.f[3]));
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT8E5M2, 0, &f8, &st);
    CHECK(st == MPX_OK && y.f[1] == -INFINITY && y.f[2] == INFINITY && y.f[4] == 0.3125f);
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT8E4M3FNUZ, -1, &f8, &st);
    CHECK(st == MPX_E_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "float8e4m3fnuz");
    mpx_value_free(&f8);
    mpx_value_free(&x);
    /* float -> integers */
    mpx_value fi = valf(1, DIMS(8), FV(2.7f, -2.7f, NAN, INFINITY, 300.7f, -1.0f, 1e10f, -0.0f));
    y = cast(MPX_DT_INT64, -1, &fi, &st);
    CHECK(st == MPX_OK && y.dtype == MPX_DT_INT64 && y.i[0] == 2 && y.i[1] == -2);
    CHECK(y.i[2] == INT64_MIN && y.i[3] == INT64_MIN && y.i[6] == 10000000000LL && y.i[7] == 0);
    mpx_value_free(&y);
    y = cast(MPX_DT_INT32, -1, &fi, &st);
    CHECK(st == MPX_OK && y.i[0] == 2 && y.i[2] == INT32_MIN && y.i[4] == 300 &&
          y.i[6] == INT32_MIN);
    mpx_value_free(&y);
    y = cast(MPX_DT_UINT8, -1, &fi, &st);
    CHECK(st == MPX_OK && y.i[4] == 44 && y.i[5] == 255 && y.i[2] == 0);
    mpx_value_free(&y);
    y = cast(MPX_DT_INT8, -1, &fi, &st);
    CHECK(st == MPX_OK && y.i[4] == 44 && y.i[1] == -2);
    mpx_value_free(&y);
    y = cast(MPX_DT_UINT32, -1, &fi, &st);
    CHECK(st == MPX_OK && y.i[5] == UINT32_MAX &&
          y.i[6] == (int64_t)(10000000000ULL & 0xffffffffu));
    mpx_value_free(&y);
    y = cast(MPX_DT_BOOL, -1, &fi, &st);
    CHECK(st == MPX_OK && y.dtype == MPX_DT_BOOL && y.i[0] == 1 && y.i[2] == 1 && y.i[7] == 0);
    mpx_value_free(&y);
    mpx_value_free(&fi);
    /* integers -> integers and floats */
    mpx_value ii = vali(MPX_DT_INT64, 1, DIMS(5), IV(300, -1, 70000, 16777217, 0));
    y = cast(MPX_DT_INT8, -1, &ii, &st);
    CHECK(st == MPX_OK && y.dtype == MPX_DT_INT8 && y.i[0] == 44 && y.i[1] == -1 && y.i[2] == 112);
    mpx_value_free(&y);
    y = cast(MPX_DT_UINT16, -1, &ii, &st);
    CHECK(st == MPX_OK && y.i[1] == 65535 && y.i[2] == 4464);
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT, -1, &ii, &st);
    CHECK(st == MPX_OK && y.dtype == MPX_DT_FLOAT && y.f[0] == 300.0f && y.f[3] == 16777216.0f);
    mpx_value_free(&y);
    y = cast(MPX_DT_FLOAT16, -1, &ii, &st);
    CHECK(st == MPX_OK && y.f[0] == 300.0f && y.f[2] == INFINITY);
    mpx_value_free(&y);
    y = cast(MPX_DT_BOOL, -1, &ii, &st);
    CHECK(st == MPX_OK && y.i[0] == 1 && y.i[4] == 0);
    mpx_value_free(&y);
    mpx_value u = vali(MPX_DT_UINT64, 1, DIMS(1), IV(-1)); /* 2^64 - 1 */
    y = cast(MPX_DT_FLOAT, -1, &u, &st);
    CHECK(st == MPX_OK && y.f[0] == 0x1p64f);
    mpx_value_free(&y);
    mpx_value_free(&u);
    /* int32 to float through the vector conversion: each value rounded as
     * (float) of the int64 rounds it (ties and the type's ends included) */
    {
        const int64_t n32 = 1003;
        mpx_value w;
        CHECK(mpx_value_alloc(&w, MPX_DT_INT32, 1, &n32, NULL) == MPX_OK);
        for (int64_t k = 0; k < n32; k++)
            w.i[k] = k % 4 == 0 ? (int64_t)(16777217 + 2 * k) : k % 4 == 1 ? -(int64_t)(k * 2654435761u % 2147483648u)
                   : k % 4 == 2 ? (int64_t)(k * 40503u) : INT32_MAX - k;
        w.i[1] = INT32_MIN;
        y = cast(MPX_DT_FLOAT, -1, &w, &st);
        bool same = st == MPX_OK && y.n == n32;
        for (int64_t k = 0; same && k < n32; k++) same = y.f[k] == (float)w.i[k];
        CHECK_MSG(same, "Cast int32 to float differs from (float) of the value");
        mpx_value_free(&y);
        mpx_value_free(&w);
    }
    /* bad "to" */
    node_reset("Cast", 13);
    CHECK(RUN1(&y, &ii) == MPX_E_INVALID);
    CHECK_CONTAINS(err.msg, "\"to\"");
    y = cast(MPX_DT_STRING, -1, &ii, &st);
    CHECK(st == MPX_E_UNSUPPORTED);
    y = cast((mpx_dtype)99, -1, &ii, &st);
    CHECK(st == MPX_E_INVALID);
    mpx_value_free(&ii);
}

/* ---- the table ---------------------------------------------------------------------------- */

static void test_table(void) {
    static const char *const ops[] = {
        "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "Sigmoid", "HardSigmoid",
        "HardSwish", "Softplus", "Softsign", "Mish", "Tanh", "Erf", "Gelu", "Exp", "Log", "Sqrt",
        "Reciprocal", "Neg", "Abs", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos", "Clip", "Not",
        "IsNaN", "IsInf", "Cast", "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum",
        "Mean", "PRelu", "And", "Or", "Xor", "Equal", "Greater", "Less", "GreaterOrEqual",
        "LessOrEqual", "Where", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceL2", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum"};
    int missing = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!mpx_kernel_for(mpx_op_from_name(ops[i]))) {
            fprintf(stderr, "no kernel for %s\n", ops[i]);
            missing++;
        }
    CHECK(missing == 0);
}

/* Large broadcasts run on two threads in pieces of rows or of one long row;
 * every element must be the bits one thread computes. */
static void test_binary_threads(void) {
    static const struct {
        int ra, rb;
        int64_t da[4], db[4];
    } cases[] = {
        {4, 4, {1, 32, 128, 128}, {1, 32, 1, 1}},   /* per-channel scale: rows of 16K */
        {4, 4, {1, 8, 256, 256}, {1, 8, 256, 256}}, /* same shape: merged to one long row */
        {4, 1, {2, 3, 256, 256}, {256}},            /* short broadcast rows */
        {3, 3, {600, 1, 700}, {1, 500, 1}},         /* outer product: rows of 1 */
    };
    const char *ops[] = {"Add", "Mul", "Div", "Sub", "Max"};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            node_reset(ops[o], 14);
            mpx_value a = val(MPX_DT_FLOAT, cases[k].ra, cases[k].da), b = val(MPX_DT_FLOAT, cases[k].rb, cases[k].db);
            fill_uniform(&a, -3, 3);
            fill_uniform(&b, 0.5, 2);
            mpx_value y1, y2;
            setenv("MPX_KERN_THREADS", "1", 1);
            CHECK(RUN2(&y1, &a, &b) == MPX_OK);
            setenv("MPX_KERN_THREADS", "2", 1);
            CHECK(RUN2(&y2, &a, &b) == MPX_OK);
            unsetenv("MPX_KERN_THREADS");
            CHECK_MSG(y1.n == y2.n && y1.n >= (1 << 18) && memcmp(y1.f, y2.f, (size_t)y1.n * sizeof(float)) == 0,
                      "%s case %zu: two threads differ from one", ops[o], k);
            mpx_value_free(&a);
            mpx_value_free(&b);
            mpx_value_free(&y1);
            mpx_value_free(&y2);
        }
    /* Unary maps and Clip likewise, over a length that is not a multiple of the piece. */
    const char *uops[] = {"Relu", "Sigmoid", "HardSigmoid", "Tanh", "Clip"};
    for (size_t o = 0; o < sizeof uops / sizeof uops[0]; o++) {
        node_reset(uops[o], o == 4 ? 6 : 14);
        if (o == 4) {
            mpx_attr *lo = attr_new("min", MPX_ATTR_FLOAT), *hi = attr_new("max", MPX_ATTR_FLOAT);
            lo->f = -1.0f;
            hi->f = 1.5f;
        }
        mpx_value a = val(MPX_DT_FLOAT, 2, DIMS(3, 100003));
        fill_uniform(&a, -4, 4);
        mpx_value y1, y2;
        setenv("MPX_KERN_THREADS", "1", 1);
        CHECK(RUN1(&y1, &a) == MPX_OK);
        setenv("MPX_KERN_THREADS", "2", 1);
        CHECK(RUN1(&y2, &a) == MPX_OK);
        unsetenv("MPX_KERN_THREADS");
        CHECK_MSG(y1.n == a.n && y2.n == a.n && memcmp(y1.f, y2.f, (size_t)y1.n * sizeof(float)) == 0,
                  "%s: two threads differ from one", uops[o]);
        /* And against the element-by-element definition for Relu. */
        if (o == 0) {
            int64_t bad = 0;
            for (int64_t k = 0; k < a.n; k++) bad += y2.f[k] != (a.f[k] > 0 ? a.f[k] : 0.0f);
            CHECK(bad == 0);
        }
        mpx_value_free(&a);
        mpx_value_free(&y1);
        mpx_value_free(&y2);
    }
}

/* The accum options that mirror PyTorch 1.13's CPU bf16 (docs/fidelity.md),
 * over every finite bf16 value: Sigmoid's steps is 1/(1 + e^-x) with e^-x
 * and the sum rounded to bf16, so x * steps(x) rounded once (the Mul under
 * `fuse silu`) is torch's silu, bf16(x / bf16(1 + bf16(e^-x))), for every
 * x; without the option, or with fp32, Sigmoid is ke_sigmoid. Div's
 * reciprocal multiplies by bf16(1/b): bf16(sqrt 2) becomes bf16(1/sqrt 2). */
static void test_torch_steps(void) {
    const mpx_format *bf = &mpx_format_bf16;
    mpx_value x = val(MPX_DT_FLOAT, 1, DIMS(65536)), y, z;
    int64_t n = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        uint32_t u = b << 16;
        float v;
        memcpy(&v, &u, 4);
        if (isfinite(v)) x.f[n++] = v;
    }
    x.n = x.dims[0] = n;
    node_reset("Sigmoid", 13);
    acc.fmt = bf;
    acc.flags = MPX_ACC_STEPS;
    CHECK(RUN1(&y, &x) == MPX_OK);
    long bad_steps = 0, bad_silu = 0, differ = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = x.f[i], d = mpx_round_scalar(bf, 1.0f + mpx_round_scalar(bf, expf(-v)));
        if (!same_bits(y.f[i], 1.0f / d)) bad_steps++;
        if (!same_bits(mpx_round_scalar(bf, v * y.f[i]), mpx_round_scalar(bf, v / d))) bad_silu++;
        if (mpx_round_scalar(bf, y.f[i]) != mpx_round_scalar(bf, ke_sigmoid(v))) differ++;
    }
    CHECK_MSG(bad_steps == 0 && bad_silu == 0, "Sigmoid steps: %ld values not 1/d, %ld silu not x / d of %lld",
              bad_steps, bad_silu, (long long)n);
    CHECK(differ > 100); /* the steps are not one rounding */
    mpx_value_free(&y);
    acc.flags = 0; /* bf16 without the option, and the option with fp32: the plain sigmoid */
    CHECK(RUN1(&y, &x) == MPX_OK && same_bits(y.f[1000], ke_sigmoid(x.f[1000])) &&
          same_bits(y.f[40000], ke_sigmoid(x.f[40000])));
    mpx_value_free(&y);
    acc.fmt = NULL;
    acc.flags = MPX_ACC_STEPS;
    CHECK(RUN1(&y, &x) == MPX_OK && same_bits(y.f[40000], ke_sigmoid(x.f[40000])));
    mpx_value_free(&y);

    node_reset("Div", 14);
    mpx_value c = valf(0, DIMS(1), FV(1.4140625f)); /* sqrt 2 in bf16 */
    acc.fmt = bf;
    acc.flags = MPX_ACC_RECIPROCAL;
    CHECK(RUN2(&y, &x, &c) == MPX_OK);
    acc.flags = 0;
    CHECK(RUN2(&z, &x, &c) == MPX_OK);
    long bad_recip = 0;
    differ = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!same_bits(y.f[i], x.f[i] * 0.70703125f)) bad_recip++;
        if (mpx_round_scalar(bf, y.f[i]) != mpx_round_scalar(bf, z.f[i])) differ++;
    }
    CHECK_MSG(bad_recip == 0, "Div reciprocal: %ld values not x * bf16(1/sqrt 2)", bad_recip);
    CHECK(differ > 1000 && same_bits(z.f[40000], x.f[40000] / 1.4140625f));
    mpx_value_free(&y);
    mpx_value_free(&z);
    mpx_value_free(&c);
    acc.fmt = NULL;
    acc.flags = 0;
    mpx_value_free(&x);
}

int main(void) {
    mpx_numerics_init(); /* constant folding runs the kernels */
    mpx_rng_init(&rng, 20240611);
    test_table();
    test_binary_threads();
    test_unary_float();
    test_unary_special();
    test_sigmoid_accuracy();
    test_sigmoid_bits();
    test_sigmoid_map();
    test_erf_map();
    test_tanh_accuracy();
    test_tanh_bits();
    test_erf_accuracy();
    test_softmax_exp_exact();
    test_exp_neg_map();
    test_unary_int_bool();
    test_clip();
    test_binary_float();
    test_binary_special();
    test_binary_int();
    check_binary_int_random();
    test_variadic();
    test_where();
    test_reduce_float();
    test_reduce_accum();
    test_torch_steps();
    test_reduce_int();
    test_arg();
    test_cumsum();
    test_cast();
    return check_report("test_kern_elem");
}
