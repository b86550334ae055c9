/* metrics.c - per-tensor error of a candidate run against the fp32 reference
 * (DESIGN section 3, Error metrics; the non-finite rule is in the header). */
#include "mpx_numerics.h"

#include <float.h>
#include <math.h>
#include <string.h>

static bool usable(const mpx_value *v) {
    return v && v->n >= 0 && v->rank >= 0 && v->rank <= MPX_MAX_RANK && (v->f || v->i);
}

mpx_status mpx_metrics_compute(const mpx_value *r, const mpx_value *c, const mpx_format *fmt,
                               mpx_metrics *m, mpx_error *err) {
    if (!m) return mpx_error_set(err, MPX_E_ARG, "no place for the metrics");
    memset(m, 0, sizeof *m);
    if (!usable(r) || !usable(c))
        return mpx_error_set(err, MPX_E_ARG, "the %s has no value",
                             usable(r) ? "candidate" : "reference");
    bool same = r->rank == c->rank && r->n == c->n;
    for (int i = 0; same && i < r->rank; i++) same = r->dims[i] == c->dims[i];
    if (!same)
        return mpx_error_set(err, MPX_E_SHAPE,
                             "the candidate's shape differs from the reference's");
    if ((r->f != NULL) != (c->f != NULL))
        return mpx_error_set(err, MPX_E_ARG, "the candidate is %s, the reference %s",
                             mpx_dtype_name(c->dtype), mpx_dtype_name(r->dtype));
    const mpx_format *f = fmt ? fmt : &mpx_format_fp32;
    double se = 0, sa = 0, rr = 0, cc = 0, cr = 0, mx = 0, amax = 0;
    bool bad = false;
    int64_t k = 0;
    if (r->f && c->f) {
        /* The float case, which is every layer of a report (over half a
         * report's time went here): the same sums in the same order as the
         * general loop below, without its per-element calls and conversions.
         * It stops at the first non-finite value and leaves the rest, from
         * there on, to the general loop. */
        const float *rf = r->f, *cf = c->f;
        const float tiny = f->min_normal;
        int64_t sub = 0, unf = 0;
        float famax = 0.0f;
        for (; k < r->n; k++) {
            const float xf = rf[k], yf = cf[k];
            const float ax = fabsf(xf), ay = fabsf(yf);
            if (!(ax <= FLT_MAX && ay <= FLT_MAX)) break; /* inf or NaN: general loop */
            famax = ax > famax ? ax : famax;
            sub += ay != 0.0f && ay < tiny;
            unf += xf != 0.0f && yf == 0.0f;
            const double x = xf, y = yf, d = y - x, ad = fabs(d);
            sa += ad;
            se += d * d;
            mx = ad > mx ? ad : mx;
            rr += x * x;
            cc += y * y;
            cr += x * y;
        }
        amax = famax;
        m->subnormal = sub;
        m->underflow = unf;
    }
    for (; k < r->n; k++) {
        double x = r->f ? (double)r->f[k] : (double)r->i[k];
        double y = c->f ? (double)c->f[k] : (double)c->i[k];
        if (!isnan(x) && fabs(x) > amax) amax = fabs(x);
        if (c->f && mpx_format_is_subnormal(f, c->f[k])) m->subnormal++;
        if (x != 0 && !isnan(x) && y == 0) m->underflow++;
        if (isfinite(x) && isfinite(y)) {
            double d = y - x, ad = fabs(d);
            sa += ad;
            se += d * d;
            if (ad > mx) mx = ad;
            rr += x * x;
            cc += y * y;
            cr += x * y;
        } else if (isfinite(x)) {
            m->overflow++;
            bad = true;
        } else if (!(x == y || (isnan(x) && isnan(y)))) {
            bad = true;
        }
    }
    m->n = r->n;
    m->absmax_ref = amax;
    if (bad) {
        m->max_abs = m->mean_abs = m->rel_l2 = INFINITY;
        m->sqnr_db = -INFINITY;
        m->cos = NAN;
        return MPX_OK;
    }
    double nr = sqrt(rr), nc = sqrt(cc), ne = sqrt(se);
    m->max_abs = mx;
    m->mean_abs = r->n ? sa / (double)r->n : 0.0;
    m->rel_l2 = ne == 0 ? 0.0 : nr == 0 ? INFINITY : ne / nr;
    m->sqnr_db = ne == 0 ? INFINITY : nr == 0 ? -INFINITY : 20.0 * log10(nr / ne);
    if (nr == 0 && nc == 0)
        m->cos = 1.0;
    else if (nr == 0 || nc == 0)
        m->cos = 0.0;
    else
        m->cos = fmax(-1.0, fmin(1.0, cr / (nr * nc)));
    return MPX_OK;
}
