/* kern_rows.h - row updates, the inner loops the convolutions (kern_nn.c) and
 * the matrix products (kern_matmul.c) share on their reference paths: inline,
 * since they are the hot loops of both. Internal to numerics/. */
#ifndef MPX_KERN_ROWS_H
#define MPX_KERN_ROWS_H

#include "kern_internal.h"

#include <stdint.h>
#include <string.h>

/* Output columns per work item, and output rows per row update (1..4). */
enum { CONV_CHUNK = 256, CONV_MB = 4 };


/* y_j[i * ys] += w[j] * x[i * xs] for i < n and rows j < nm (1..4). The rows
 * and x never overlap. Each output value gets one addition per call, so the
 * order of terms per value is the order of the calls.
 *
 * GCC's -O2 vectoriser leaves these loops scalar, so the unit-stride output
 * case is written with 4-lane vectors (GCC/Clang vector extension). Lanes are
 * independent: every lane is the same fp32 multiply and add as the scalar
 * loop (no contraction: numerics/ builds with -ffp-contract=off). */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f ld4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

static inline v4f ld4s(const float *p, int64_t s) { return (v4f){p[0], p[s], p[2 * s], p[3 * s]}; }

static inline void axpy_rows(int nm, float *const *yr, int64_t ys, const float *w,
                      const float *restrict x, int64_t xs, int64_t n) {
    if (ys != 1) { /* ConvTranspose's strided scatter */
        for (int j = 0; j < nm; j++) {
            float *restrict y = yr[j];
            const float wj = w[j];
            for (int64_t i = 0; i < n; i++) y[i * ys] += wj * x[i * xs];
        }
        return;
    }
    float *restrict y0 = yr[0], *restrict y1 = yr[nm > 1 ? 1 : 0], *restrict y2 = yr[nm > 2 ? 2 : 0],
                    *restrict y3 = yr[nm > 3 ? 3 : 0];
    const float w0 = w[0], w1 = nm > 1 ? w[1] : 0.0f, w2 = nm > 2 ? w[2] : 0.0f,
                w3 = nm > 3 ? w[3] : 0.0f;
    const v4f v0 = {w0, w0, w0, w0}, v1 = {w1, w1, w1, w1}, v2 = {w2, w2, w2, w2},
              v3 = {w3, w3, w3, w3};
    int64_t i = 0;
    if (nm == 4) {
        for (; i + 4 <= n; i += 4) {
            const v4f v = xs == 1 ? ld4(x + i) : ld4s(x + i * xs, xs);
            st4(y0 + i, ld4(y0 + i) + v0 * v);
            st4(y1 + i, ld4(y1 + i) + v1 * v);
            st4(y2 + i, ld4(y2 + i) + v2 * v);
            st4(y3 + i, ld4(y3 + i) + v3 * v);
        }
        for (; i < n; i++) {
            const float v = x[i * xs];
            y0[i] += w0 * v;
            y1[i] += w1 * v;
            y2[i] += w2 * v;
            y3[i] += w3 * v;
        }
        return;
    }
    for (; i + 4 <= n; i += 4) {
        const v4f v = xs == 1 ? ld4(x + i) : ld4s(x + i * xs, xs);
        st4(y0 + i, ld4(y0 + i) + v0 * v);
        if (nm > 1) st4(y1 + i, ld4(y1 + i) + v1 * v);
        if (nm > 2) st4(y2 + i, ld4(y2 + i) + v2 * v);
    }
    for (; i < n; i++) {
        const float v = x[i * xs];
        y0[i] += w0 * v;
        if (nm > 1) y1[i] += w1 * v;
        if (nm > 2) y2[i] += w2 * v;
    }
}

/* The same through accumulators: acc row j, entry i * as. */
static inline void acc_rows(int nm, mpx_acc *const *ar, int64_t as, const float *w, const float *x,
                     int64_t xs, int64_t n) {
    for (int j = 0; j < nm; j++) {
        mpx_acc *a = ar[j];
        const float wj = w[j];
        for (int64_t i = 0; i < n; i++) mpx_acc_add(&a[i * as], wj * x[i * xs]);
    }
}

#endif
