/* qint_direct.c - MatMulInteger and QLinearMatMul by kern_qint.c's
 * direct loops alone: its shapes, broadcasting, zero points and
 * requantisation, every sum an exact int64 sum wrapped to int32 (the
 * definition the packed core's sums are held to modulo 2^32), one output
 * element at a time, no packing, no threads, nothing kept. test_qint holds
 * kern_qint.c to these bits.
 * Entries: direct_matmul_integer, direct_qlinear_matmul. */
#include "kern_data.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mpx_status direct_matmul_integer(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);
mpx_status direct_qlinear_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out);

static bool int8ish(mpx_dtype t) {
    return t == MPX_DT_UINT8 || t == MPX_DT_INT8 || t == MPX_DT_UINT16 || t == MPX_DT_INT16 || t == MPX_DT_INT32;
}

static mpx_status int_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what,
                         const mpx_value **v) {
    *v = kn_opt(in, n_in, i);
    if (!*v) return mpx_kernel_error(c, MPX_E_INVALID, "input %s is required", what);
    if (!(*v)->i || !int8ish((*v)->dtype))
        return mpx_kernel_error(c, MPX_E_INVALID, "%s is %s; 8- or 16-bit integers expected", what,
                                mpx_dtype_name((*v)->dtype));
    return MPX_OK;
}

/* A zero point (optional, 0 when omitted) or scale: one value, or one per
 * row/column/channel (`per` of them). */
static mpx_status per_vec(const mpx_kctx *c, const mpx_value *v, int64_t per, const char *what, bool flt) {
    char sb[160];
    if (!v) return MPX_OK;
    if (flt ? !v->f : !v->i)
        return mpx_kernel_error(c, MPX_E_INVALID, "%s is %s; %s expected", what, mpx_dtype_name(v->dtype),
                                flt ? "float" : "an integer type");
    if (v->n == 1 || v->n == per) return MPX_OK;
    return mpx_kernel_error(c, MPX_E_SHAPE, "%s has shape %s; one value or %lld expected", what, kn_shape(v, sb),
                            (long long)per);
}

static int64_t zp_at(const mpx_value *v, int64_t k) { return !v ? 0 : v->n == 1 ? v->i[0] : v->i[k]; }
static float scale_at(const mpx_value *v, int64_t k) { return v->n == 1 ? v->f[0] : v->f[k]; }

static void int_range(mpx_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case MPX_DT_INT8: *lo = -128, *hi = 127; break;
    case MPX_DT_UINT16: *lo = 0, *hi = 65535; break;
    case MPX_DT_INT16: *lo = -32768, *hi = 32767; break;
    case MPX_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    default: *lo = 0, *hi = 255; break;
    }
}

/* ORT's requantisation of one int32 sum (see the top of the file). */
static int64_t requant(int64_t acc, float mult, int64_t zp, int64_t lo, int64_t hi) {
    float f = nearbyintf((float)acc * mult);
    double y = (double)f + (double)zp;
    return y < (double)lo ? lo : y > (double)hi ? hi : (int64_t)y;
}

static int64_t wrap32(int64_t v) { return (int64_t)(int32_t)(uint32_t)(uint64_t)v; }

typedef struct mm {
    int64_t M, K, N, batch;
    int rank;               /* of the output */
    int64_t dims[MPX_MAX_RANK];
    int64_t *aoff, *boff;   /* per output batch: offsets of A's and B's matrices */
} mm;

/* numpy matmul's shapes: 1-D operands promoted, batch dims broadcast. */
static mpx_status mm_plan(const mpx_kctx *c, const mpx_value *a, const mpx_value *b, mm *p) {
    char s1[160], s2[160];
    memset(p, 0, sizeof *p);
    if (a->rank < 1 || b->rank < 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "operands %s and %s must not be scalars", kn_shape(a, s1),
                                kn_shape(b, s2));
    int64_t ad[MPX_MAX_RANK + 1], bd[MPX_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    for (int i = 0; i < ar; i++) ad[i] = a->dims[i];
    for (int i = 0; i < br; i++) bd[i] = b->dims[i];
    if (ar == 1) ad[1] = ad[0], ad[0] = 1, ar = 2;
    if (br == 1) bd[1] = 1, br = 2;
    p->M = ad[ar - 2], p->K = ad[ar - 1], p->N = bd[br - 1];
    if (bd[br - 2] != p->K)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ: %s times %s", kn_shape(a, s1), kn_shape(b, s2));
    int nb = (ar > br ? ar : br) - 2;
    int64_t od[MPX_MAX_RANK], as[MPX_MAX_RANK], bs[MPX_MAX_RANK];
    int64_t sa = p->M * p->K, sb = p->K * p->N;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - (ar - 2)), ib = i - (nb - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return mpx_kernel_error(c, MPX_E_SHAPE, "batch dims do not broadcast: %s times %s", kn_shape(a, s1),
                                    kn_shape(b, s2));
        od[i] = da > db ? da : db;
        as[i] = da == 1 ? 0 : sa;
        bs[i] = db == 1 ? 0 : sb;
        sa *= da, sb *= db;
    }
    p->batch = 1;
    for (int i = 0; i < nb; i++) p->batch *= od[i];
    p->aoff = calloc((size_t)(p->batch ? p->batch : 1), sizeof *p->aoff);
    p->boff = calloc((size_t)(p->batch ? p->batch : 1), sizeof *p->boff);
    if (!p->aoff || !p->boff) {
        free(p->aoff), free(p->boff);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t q = 0; q < p->batch; q++) {
        int64_t oa = 0, ob = 0;
        for (int i = 0; i < nb; i++) oa += co[i] * as[i], ob += co[i] * bs[i];
        p->aoff[q] = oa, p->boff[q] = ob;
        for (int i = nb - 1; i >= 0; i--) {
            if (++co[i] < od[i]) break;
            co[i] = 0;
        }
    }
    for (int i = 0; i < nb; i++) p->dims[p->rank++] = od[i];
    if (a->rank > 1) p->dims[p->rank++] = p->M;
    if (b->rank > 1) p->dims[p->rank++] = p->N;
    return MPX_OK;
}

/* The direct loops: int64 sums wrapped to int32. */
static void mm_direct(const mm *p, const mpx_value *a, const mpx_value *b, const mpx_value *azp,
                      const mpx_value *bzp, int64_t *acc) {
    for (int64_t q = 0; q < p->batch; q++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++) {
                int64_t s = 0, za = zp_at(azp, m), zb = zp_at(bzp, n);
                const int64_t *ar = a->i + p->aoff[q] + m * p->K, *bc = b->i + p->boff[q] + n;
                for (int64_t k = 0; k < p->K; k++) s += (ar[k] - za) * (bc[k * p->N] - zb);
                acc[(q * p->M + m) * p->N + n] = wrap32(s);
            }
}

/* (false never: kept so that the entries read as kern_qint.c's did) */
static bool mm_ref(const mm *p, const mpx_value *a, const mpx_value *b, const mpx_value *azp, const mpx_value *bzp,
                   int64_t *acc) {
    mm_direct(p, a, b, azp, bzp, acc);
    return true;
}

mpx_status direct_matmul_integer(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                int n_out) {
    const mpx_value *a, *b, *azp = kn_opt(in, n_in, 2), *bzp = kn_opt(in, n_in, 3);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "A", &a);
    if (!st) st = int_in(c, in, n_in, 1, "B", &b);
    if (st) return st;
    mm p;
    if ((st = mm_plan(c, a, b, &p))) return st;
    if (!(st = per_vec(c, azp, p.M, "a_zero_point", false)) && !(st = per_vec(c, bzp, p.N, "b_zero_point", false)) &&
        !(st = mpx_k_alloc(c, &out[0], MPX_DT_INT32, p.rank, p.dims)) && !mm_ref(&p, a, b, azp, bzp, out[0].i))
        st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    free(p.aoff), free(p.boff);
    return st;
}

mpx_status direct_qlinear_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                int n_out) {
    const mpx_value *a, *b, *as = kn_opt(in, n_in, 1), *azp = kn_opt(in, n_in, 2), *bs = kn_opt(in, n_in, 4),
                            *bzp = kn_opt(in, n_in, 5), *ys = kn_opt(in, n_in, 6), *yzp = kn_opt(in, n_in, 7);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "a", &a);
    if (!st) st = int_in(c, in, n_in, 3, "b", &b);
    if (st) return st;
    if (!as || !bs || !ys) return mpx_kernel_error(c, MPX_E_INVALID, "a_scale, b_scale and y_scale are required");
    mm p;
    if ((st = mm_plan(c, a, b, &p))) return st;
    int64_t *acc = NULL;
    if (!(st = per_vec(c, as, 1, "a_scale", true)) && !(st = per_vec(c, azp, 1, "a_zero_point", false)) &&
        !(st = per_vec(c, bs, p.N, "b_scale", true)) && !(st = per_vec(c, bzp, p.N, "b_zero_point", false)) &&
        !(st = per_vec(c, ys, 1, "y_scale", true)) && !(st = per_vec(c, yzp, 1, "y_zero_point", false)) &&
        !(st = kn_scratch(c, (size_t)(p.batch * p.M * p.N), sizeof *acc, (void **)&acc))) {
        mpx_dtype yt = yzp ? yzp->dtype : MPX_DT_UINT8;
        int64_t lo, hi;
        int_range(yt, &lo, &hi);
        if (!mm_ref(&p, a, b, azp, bzp, acc)) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
        if (!st && !(st = mpx_k_alloc(c, &out[0], yt, p.rank, p.dims)))
            for (int64_t k = 0; k < out[0].n; k++) {
                int64_t n = k % p.N;
                float mult = scale_at(as, 0) * scale_at(bs, n) / scale_at(ys, 0);
                out[0].i[k] = requant(acc[k], mult, zp_at(yzp, 0), lo, hi);
            }
    }
    free(acc);
    free(p.aoff), free(p.boff);
    return st;
}
