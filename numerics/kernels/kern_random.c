/* kern_random.c - the random generators: RandomNormal, RandomUniform, their
 * *Like forms, Bernoulli and Multinomial.
 *
 * Seeded and deterministic: the stream is mpx_rng (graph/random.c,
 * xoshiro256** seeded by splitmix64, the same numbers on every machine)
 * seeded with the node's `seed` attribute, or, without one, with a hash of
 * the node's name - so every run of a session (the fp32 reference and each
 * candidate, every sample, every search evaluation) draws the same values and
 * compares like with like. The values cannot be ONNX Runtime's or NumPy's
 * (each has its own generator): these ops are checked by their distribution,
 * not against another runtime. Normal values come from Box-Muller in double,
 * uniform ones from 53-bit draws, rounded once to fp32. Multinomial samples
 * from softmax(input) per row by inverse CDF over the classes in order. */
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed_of(const mpx_kctx *c) {
    const mpx_attr *s = mpx_node_attr(c->node, "seed");
    if (s) {
        /* the float's bits, so that 1.0 and 1.5 differ */
        float f = s->type == MPX_ATTR_INT ? (float)s->i : s->f;
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        return 0x5eed000000000000u ^ b;
    }
    uint64_t h = 1469598103934665603u; /* FNV-1a of the name */
    for (const char *p = c->node->name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211u;
    return h;
}

static mpx_status out_dtype(const mpx_kctx *c, mpx_dtype dflt, mpx_dtype *dt) {
    int64_t d = mpx_node_attr_int(c->node, "dtype", (int64_t)dflt);
    if (d <= 0 || d >= MPX_DT_COUNT_ || (!mpx_dtype_is_float((mpx_dtype)d) && !mpx_dtype_is_int_like((mpx_dtype)d)))
        return mpx_kernel_error(c, MPX_E_INVALID, "dtype %lld is not a numeric element type", (long long)d);
    *dt = (mpx_dtype)d;
    return MPX_OK;
}

static void put(mpx_value *v, int64_t k, double x) {
    if (v->f) v->f[k] = (float)x;
    else if (v->d) v->d[k] = x;
    else v->i[k] = (int64_t)x;
}

/* RandomNormal, RandomUniform (shape attribute) and their *Like forms (the
 * input's shape; its dtype unless dtype says). */
static mpx_status fill(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out, bool like,
                       bool normal) {
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    int rank;
    int64_t dims[MPX_MAX_RANK];
    mpx_dtype dt = MPX_DT_FLOAT;
    if (like) {
        const mpx_value *x = kn_opt(in, n_in, 0);
        if (!x) return mpx_kernel_error(c, MPX_E_INVALID, "input is required");
        rank = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        if ((st = out_dtype(c, x->dtype, &dt))) return st;
    } else {
        const int64_t *s;
        rank = mpx_node_attr_ints(c->node, "shape", &s);
        if (!s || rank > MPX_MAX_RANK) return mpx_kernel_error(c, MPX_E_INVALID, "attribute shape (rank 0 to %d) is required", MPX_MAX_RANK);
        for (int i = 0; i < rank; i++) {
            if (s[i] < 0 || s[i] > MPX_MAX_ELEMS) return mpx_kernel_error(c, MPX_E_SHAPE, "shape[%d] = %lld", i, (long long)s[i]);
            dims[i] = s[i];
        }
        if ((st = out_dtype(c, MPX_DT_FLOAT, &dt))) return st;
    }
    double a = mpx_node_attr_float(c->node, normal ? "mean" : "low", 0.0f);
    double b = mpx_node_attr_float(c->node, normal ? "scale" : "high", 1.0f);
    if ((st = mpx_k_alloc(c, &out[0], dt, rank, dims))) return st;
    mpx_rng r;
    mpx_rng_init(&r, seed_of(c));
    for (int64_t k = 0; k < out[0].n; k++) put(&out[0], k, normal ? mpx_rng_normal(&r, a, b) : a + (b - a) * mpx_rng_unit(&r));
    return MPX_OK;
}

mpx_status mpx_k_random_normal(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return fill(c, in, n_in, out, n_out, false, true);
}
mpx_status mpx_k_random_uniform(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return fill(c, in, n_in, out, n_out, false, false);
}
mpx_status mpx_k_random_normal_like(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                    int n_out) {
    return fill(c, in, n_in, out, n_out, true, true);
}
mpx_status mpx_k_random_uniform_like(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                     int n_out) {
    return fill(c, in, n_in, out, n_out, true, false);
}

/* Bernoulli: 1 where a uniform draw is below the probability (ONNX's
 * function: RandomUniformLike, Less, Cast). */
mpx_status mpx_k_bernoulli(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *p;
    mpx_status st = kn_need_out(c, n_out, 1);
    /* float64 probabilities (kernels_f64.def) are compared as doubles */
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", n_in > 0 && in[0] && in[0]->d, &p);
    if (st) return st;
    mpx_dtype dt = MPX_DT_FLOAT;
    if ((st = out_dtype(c, p->dtype, &dt)) || (st = mpx_k_alloc(c, &out[0], dt, p->rank, p->dims))) return st;
    mpx_rng r;
    mpx_rng_init(&r, seed_of(c));
    for (int64_t k = 0; k < p->n; k++) {
        const double pk = p->d ? p->d[k] : (double)p->f[k];
        if (!(pk >= 0.0 && pk <= 1.0)) {
            mpx_value_free(&out[0]);
            return mpx_kernel_error(c, MPX_E_INVALID, "probability %.17g (element %lld) is not in [0, 1]", pk,
                                    (long long)k);
        }
        put(&out[0], k, mpx_rng_unit(&r) < pk ? 1.0 : 0.0);
    }
    return MPX_OK;
}

/* Multinomial: sample_size class indices per row of [batch, classes]
 * unnormalised log-probabilities. */
mpx_status mpx_k_multinomial(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x;
    char s1[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "input", n_in > 0 && in[0] && in[0]->d, &x);
    if (st) return st;
    if (x->rank != 2 || x->dims[1] < 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "input %s must be [batch, classes]", kn_shape(x, s1));
    int64_t n = mpx_node_attr_int(c->node, "sample_size", 1), B = x->dims[0], C = x->dims[1];
    if (n < 1 || n > MPX_MAX_ELEMS / (B ? B : 1))
        return mpx_kernel_error(c, MPX_E_INVALID, "sample_size %lld must be positive", (long long)n);
    mpx_dtype dt = MPX_DT_FLOAT;
    int64_t od[2] = {B, n};
    if ((st = out_dtype(c, MPX_DT_INT32, &dt))) return st;
    if (dt != MPX_DT_INT32 && dt != MPX_DT_INT64) return mpx_kernel_error(c, MPX_E_INVALID, "dtype must be int32 or int64");
    double *cdf;
    if ((st = kn_scratch(c, (size_t)C, sizeof *cdf, (void **)&cdf))) return st;
    if ((st = mpx_k_alloc(c, &out[0], dt, 2, od))) {
        free(cdf);
        return st;
    }
    mpx_rng r;
    mpx_rng_init(&r, seed_of(c));
    for (int64_t b = 0; b < B; b++) {
        /* float64 log-probabilities (kernels_f64.def) are read as doubles */
#define ROW(k) (x->d ? x->d[b * C + (k)] : (double)x->f[b * C + (k)])
        double mx = -INFINITY, sum = 0.0;
        for (int64_t k = 0; k < C; k++) mx = ROW(k) > mx ? ROW(k) : mx;
        for (int64_t k = 0; k < C; k++) cdf[k] = sum += exp(ROW(k) - mx);
#undef ROW
        for (int64_t s = 0; s < n; s++) {
            double u = mpx_rng_unit(&r) * sum;
            int64_t k = 0;
            while (k < C - 1 && cdf[k] <= u) k++;
            out[0].i[b * n + s] = k;
        }
    }
    free(cdf);
    return MPX_OK;
}
