/* kern_matmul.c - Gemm and MatMul (and Det): the dot-product kernels, on the GEMM core
 * (kern_gemm.h) or the row updates (kern_rows.h); their summation order is
 * documented with the convolutions' at the top of kern_nn.c. */
#include "kern_gemm.h"
#include "kern_kept.h"
#include "kern_nn.h"
#include "kern_rows.h"
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Gemm and MatMul ------------------------------------------------------------------ */

/* Whether mm_run_t takes a product of K terms to the GEMM core (which writes
 * every value of Y) rather than the row updates (which add into Y: in fp32
 * one term after another, the accum rule's sequential). */
static bool mm_on_core(const mpx_kctx *c, int64_t K) {
    return K > 0 && !(c->acc.flags & MPX_ACC_SEQUENTIAL) && kg_mode_of(&c->acc) >= 0;
}

/* G products on the GEMM core (mm_on_core): Y_g (M x N, row-major, at
 * Y + g M N) = A_g B_g, with A_g[i][k] = A[g ga + i * ars + k * acs] and
 * B_g row-major K x N at B + g gb (ga, gb 0: one matrix for every g), or
 * with b_ldt (and b_owner; G 1) B given as its transpose (kg_gemm.b_ldt).
 * a_owner, b_owner: the constant whose own values A (B) are (the GEMM core
 * keeps them packed; kern_gemm.h), or NULL. */
static mpx_status mm_core(const mpx_kctx *c, int64_t G, int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
                          int64_t acs, int64_t ga, const float *B, int64_t gb, int64_t b_ldt, float *Y,
                          mpx_tensor *a_owner, mpx_tensor *b_owner) {
    int64_t *boff = NULL, *crow = NULL;
    mpx_status st = kn_scratch(c, (size_t)K, sizeof *boff, (void **)&boff);
    if (!st) st = kn_scratch(c, (size_t)M, sizeof *crow, (void **)&crow);
    if (!st) {
        for (int64_t k = 0; k < K; k++) boff[k] = k * N;
        for (int64_t i = 0; i < M; i++) crow[i] = i * N;
        kg_gemm g = {.M = M, .N = N, .K = K, .G = G, .a = A, .ams = ars, .aks = acs, .ga = ga,
                     .b = B, .boff = boff, .gb = gb, .c = Y, .crow = crow, .gc = M * N,
                     .gw = N, .gvalid = N, .rs = 0, .cs = 1, .mode = (kg_mode)kg_mode_of(&c->acc),
                     .f16 = mpx_k_f16_operands(c), .a_owner = a_owner,
                     .b_owner = b_owner, .b_ldt = b_ldt,
                     /* (an owner here is always input 1's: the weights) */
                     .a_fmt = a_owner ? mpx_k_in_round(c, 1) : NULL,
                     .b_fmt = b_owner ? mpx_k_in_round(c, 1) : NULL};
        if (kg_gemm_run(&g) != KG_DONE)
            st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory for the product's buffers");
    }
    free(crow);
    free(boff);
    return st;
}

/* Y (M x N, row-major, zero on entry unless mm_on_core) = A B, with A[i][k] = A[i * ars + k * acs]
 * and B row-major K x N, or with b_ldt (and b_owner; the GEMM core's
 * accumulations only) B given as its transpose (kg_gemm.b_ldt). a_owner,
 * b_owner: as mm_core's. */
static mpx_status mm_run_t(const mpx_kctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
                           int64_t acs, const float *B, int64_t b_ldt, float *Y, mpx_tensor *a_owner,
                           mpx_tensor *b_owner) {
    if (M == 0 || N == 0) return MPX_OK;
    if (mm_on_core(c, K)) return mm_core(c, 1, M, N, K, A, ars, acs, 0, B, 0, b_ldt, Y, a_owner, b_owner);
    if (mpx_acc_is_fp32(&c->acc)) {
        for (int64_t j0 = 0; j0 < N; j0 += CONV_CHUNK) {
            int64_t nj = N - j0 < CONV_CHUNK ? N - j0 : CONV_CHUNK;
            for (int64_t i0 = 0; i0 < M; i0 += CONV_MB) {
                int nm = (int)(M - i0 < CONV_MB ? M - i0 : CONV_MB);
                float *yr[CONV_MB];
                for (int q = 0; q < nm; q++) yr[q] = Y + (i0 + q) * N + j0;
                for (int64_t k = 0; k < K; k++) {
                    float wv[CONV_MB];
                    for (int q = 0; q < nm; q++) wv[q] = A[(i0 + q) * ars + k * acs];
                    axpy_rows(nm, yr, 1, wv, B + k * N + j0, 1, nj);
                }
            }
        }
        return MPX_OK;
    }
    mpx_acc *acc;
    mpx_status st = kn_scratch(c, (size_t)N, sizeof *acc, (void **)&acc);
    if (st) return st;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) mpx_acc_init(&acc[j], &c->acc, 0.0f);
        for (int64_t k = 0; k < K; k++) {
            const float a = A[i * ars + k * acs], *br = B + k * N;
            for (int64_t j = 0; j < N; j++) mpx_acc_add(&acc[j], a * br[j]);
        }
        for (int64_t j = 0; j < N; j++) Y[i * N + j] = mpx_acc_result(&acc[j]);
    }
    free(acc);
    return MPX_OK;
}

static mpx_status mm_run(const mpx_kctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
                         int64_t acs, const float *B, float *Y, mpx_tensor *a_owner, mpx_tensor *b_owner) {
    return mm_run_t(c, M, N, K, A, ars, acs, B, 0, Y, a_owner, b_owner);
}

/* The product's buffer. On the GEMM core every value is written by its
 * first K block, so the buffer is not cleared first (ViT-B/16's MLP
 * products are 2.4 MB each); the row updates (blocked or fp8 accumulation)
 * add into zeros, and K = 0 leaves the zeros as the result. */
static mpx_status mm_alloc(const mpx_kctx *c, mpx_value *out, mpx_dtype dt, int rank, const int64_t *dims,
                           int64_t K) {
    return mm_on_core(c, K) ? mpx_k_alloc_raw(c, out, dt, rank, dims) : mpx_k_alloc(c, out, dt, rank, dims);
}

/* Gemm: Y = alpha * A' B' + beta * C, A' = transA ? A^T : A (likewise B');
 * C broadcasts unidirectionally to M x N and is optional from opset 11. With
 * beta = 0, C is not read (as ONNX Runtime: 0 * inf would otherwise be NaN). */
mpx_status mpx_k_gemm(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    const mpx_value *a, *b, *cc;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "A", &a);
    if (!st) st = kn_float_in(c, in, n_in, 1, "B", &b);
    if (!st) st = kn_float_opt(c, in, n_in, 2, "C", &cc);
    if (st) return st;
    if (!cc && kn_opset(c) < 11)
        return mpx_kernel_error(c, MPX_E_INVALID, "input C is required before opset 11");
    if (a->rank != 2 || b->rank != 2)
        return mpx_kernel_error(c, MPX_E_SHAPE, "A %s and B %s must both be matrices",
                                kn_shape(a, s1), kn_shape(b, s2));
    bool ta = mpx_node_attr_int(c->node, "transA", 0) != 0;
    bool tb = mpx_node_attr_int(c->node, "transB", 0) != 0;
    float alpha = mpx_node_attr_float(c->node, "alpha", 1.0f);
    float beta = mpx_node_attr_float(c->node, "beta", 1.0f);
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1];
    int64_t Kb = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
    if (K != Kb)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ: A %s (transA %d) and B %s (transB %d)",
                                kn_shape(a, s1), ta, kn_shape(b, s2), tb);
    int64_t csr = 0, csc = 0;
    if (cc) {
        bool ok = cc->rank <= 2;
        if (ok && cc->rank >= 1) {
            int64_t cn = cc->dims[cc->rank - 1];
            ok = cn == 1 || cn == N;
            csc = cn == 1 ? 0 : 1;
        }
        if (ok && cc->rank == 2) {
            ok = cc->dims[0] == 1 || cc->dims[0] == M;
            csr = cc->dims[0] == 1 ? 0 : cc->dims[1];
        }
        if (!ok)
            return mpx_kernel_error(c, MPX_E_SHAPE, "C of shape %s does not broadcast to %lldx%lld",
                                    kn_shape(cc, s1), (long long)M, (long long)N);
    }
    int64_t dims[2] = {M, N};
    if ((st = mm_alloc(c, &out[0], a->dtype, 2, dims, K))) return st;
    int64_t copy_swap = (ta ? 0 : (M == 1 ? 0 : M * K)) + (M == 1 ? 0 : M * N);
    /* B handed unrounded (mpx_kctx.in_round) is read rounded by the GEMM
     * core's packing on the first two routes below (B as the kept B^T, or
     * as the swapped product's A); the others read it where it lies, so
     * they take the rounded values. */
    const bool kept_t = tb && M >= GEMM_KEPT_T_MIN_M && N >= 2 && mm_on_core(c, K);
    const bool swap = tb && K > 0 && N > 0 && M > 0 && copy_swap < N * K;
    mpx_kctx lc;
    mpx_value lb;
    float *b_held = NULL;
    if (!(kept_t || (swap && mm_on_core(c, K))) &&
        (st = mpx_k_in_rounded(&c, &lc, 1, &b, &lb, &b_held)))
        goto fail;
    float *y = out[0].f, *bt = NULL;
    const float *bm = b->f;
    /* With transB (every Linear layer's export) the product needs B' = B^T
     * row-major. Where copying A and the result costs less than copying B
     * (a few rows against a large weight: a classifier's 1 x 1024 by
     * 1000 x 1024 took 10 ms to transpose), Y^T = B A'^T is computed
     * instead: B is then the product's left operand as it is, and each value
     * is the same products (commuted, which is exact) summed in the same
     * order. Otherwise B is transposed in tiles that stay in cache. */
    /* B a constant (the graph's weights, or their rounded copy) and rows
     * enough for the 6-row micro-kernel: B^T is packed once from where it
     * lies and kept on the weight, as a MatMul's B is, and the product runs
     * as a MatMul's (the same products in the same order as both ways
     * below). The transposes of A and Y around Y^T = B A'^T had made
     * ViT-B/16's 197 x 768 by 768 x 768 out-projections 37 GMAC/s against
     * 54 for its MatMuls. */
    mpx_tensor *b_own = kept_t ? mpx_k_value_owner(c, 1, b->f) : NULL;
    if (b_own) {
        st = mm_run_t(c, M, N, K, a->f, ta ? 1 : K, ta ? M : 1, b->f, K, y, NULL, b_own);
        if (st) goto fail;
    } else if (swap) {
        float *at = NULL, *yt = NULL;
        const float *bprime = a->f; /* A'^T row-major, K x M */
        if (!ta && M > 1) {
            if ((st = kn_scratch(c, (size_t)(K * M), sizeof *at, (void **)&at))) goto fail;
            for (int64_t i = 0; i < M; i++)
                for (int64_t k = 0; k < K; k++) at[k * M + i] = a->f[i * K + k];
            bprime = at;
        }
        float *yp = y;
        if (M > 1 && !(st = kn_scratch(c, (size_t)(M * N), sizeof *yt, (void **)&yt))) yp = yt;
        if (!st) st = mm_run(c, N, M, K, b->f, K, 1, bprime, yp, mpx_k_value_owner(c, 1, b->f), NULL);
        if (!st && yt)
            for (int64_t j = 0; j < N; j++)
                for (int64_t i = 0; i < M; i++) y[i * N + j] = yt[j * M + i];
        free(at);
        free(yt);
        if (st) goto fail;
    } else {
        if (tb && K > 0 && N > 0) { /* B' row-major, for contiguous rows */
            if ((st = kn_scratch(c, (size_t)(K * N), sizeof *bt, (void **)&bt))) goto fail;
            for (int64_t j0 = 0; j0 < N; j0 += 32)
                for (int64_t k0 = 0; k0 < K; k0 += 32)
                    for (int64_t j = j0; j < j0 + 32 && j < N; j++)
                        for (int64_t k = k0; k < k0 + 32 && k < K; k++) bt[k * N + j] = b->f[j * K + k];
            bm = bt;
        }
        st = mm_run(c, M, N, K, a->f, ta ? 1 : K, ta ? M : 1, bm, y, NULL, mpx_k_value_owner(c, 1, bm));
        free(bt);
        if (st) goto fail;
    }
    if (mpx_acc_is_fp32(&c->acc)) {
        /* mpx_acc's fp32 steps written out (its block starts at +0: the
         * term goes through 0 + t, which turns -0 into +0), per row: the
         * accumulator per element was 2% of ViT-B/16's forward */
        for (int64_t i = 0; i < M; i++) {
            float *yr = y + i * N;
            if (cc && beta != 0.0f) {
                const float *cr = cc->f + i * csr;
                for (int64_t j = 0; j < N; j++) yr[j] = alpha * yr[j] + (0.0f + beta * cr[j * csc]);
            } else {
                for (int64_t j = 0; j < N; j++) yr[j] = alpha * yr[j];
            }
        }
        free(b_held);
        return MPX_OK;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float s = alpha * y[i * N + j];
            if (cc && beta != 0.0f) {
                mpx_acc acc;
                mpx_acc_init(&acc, &c->acc, s);
                mpx_acc_add(&acc, beta * cc->f[i * csr + j * csc]);
                s = mpx_acc_result(&acc);
            }
            y[i * N + j] = s;
        }
    free(b_held);
    return MPX_OK;
fail:
    free(b_held);
    mpx_value_free(&out[0]);
    return st;
}

/* One product of a MatMul's batch an item (mpx_k_matmul): the batch index
 * read as digits over the batch dims; each item has its own kernel context
 * and message, the first failure kept; a batched constant B is kept packed
 * only for the slice at its start. */
typedef struct mm_batch {
    const mpx_kctx *c;
    int64_t M, N, K;
    const float *a, *b;
    float *y;
    mpx_tensor *b_own;
    int ro;
    const int64_t *od, *sa, *sb;
    atomic_int failed;
    mpx_status st;
    mpx_error err;
} mm_batch;

static void mm_batch_item(void *ctx, int tid, long item) {
    (void)tid;
    mm_batch *w = ctx;
    if (atomic_load(&w->failed)) return;
    int64_t oa = 0, ob = 0, rest = item;
    for (int i = w->ro - 1; i >= 0; i--) {
        const int64_t d = rest % w->od[i];
        rest /= w->od[i];
        oa += d * w->sa[i];
        ob += d * w->sb[i];
    }
    mpx_error e = {0};
    mpx_kctx ck = *w->c;
    ck.err = &e;
    const int64_t M = w->M, N = w->N, K = w->K;
    mpx_status st = mm_run(&ck, M, N, K, w->a + oa * M * K, K, 1, w->b + ob * K * N, w->y + (int64_t)item * M * N,
                           NULL, ob == 0 ? w->b_own : NULL);
    int expect = 0;
    if (st != MPX_OK && atomic_compare_exchange_strong(&w->failed, &expect, 1)) {
        w->st = st;
        w->err = e;
    }
}

/* MatMul as numpy.matmul: a 1-D A is a row (the dim is dropped from the
 * result), a 1-D B a column; batch dims broadcast. */
mpx_status mpx_k_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    const mpx_value *a, *b;
    char s1[160], s2[160];
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_float_in(c, in, n_in, 0, "A", &a);
    if (!st) st = kn_float_in(c, in, n_in, 1, "B", &b);
    if (st) return st;
    if (a->rank < 1 || b->rank < 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "operands %s and %s must not be scalars",
                                kn_shape(a, s1), kn_shape(b, s2));
    bool va = a->rank == 1, vb = b->rank == 1;
    int64_t M = va ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t Kb = vb ? b->dims[0] : b->dims[b->rank - 2], N = vb ? 1 : b->dims[b->rank - 1];
    if (K != Kb)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ: A %s times B %s",
                                kn_shape(a, s1), kn_shape(b, s2));
    int ra = va ? 0 : a->rank - 2, rb = vb ? 0 : b->rank - 2;
    int ro = ra > rb ? ra : rb;
    int64_t od[MPX_MAX_RANK], sa[MPX_MAX_RANK], sb[MPX_MAX_RANK];
    /* Batch strides in matrices; 0 on broadcast dims. */
    int64_t pa = 1, pb = 1;
    for (int i = ro - 1; i >= 0; i--) {
        int ia = i - (ro - ra), ib = i - (ro - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return mpx_kernel_error(c, MPX_E_SHAPE, "batch dims do not broadcast: A %s times B %s",
                                    kn_shape(a, s1), kn_shape(b, s2));
        od[i] = da == 1 ? db : da;
        sa[i] = da == 1 ? 0 : pa;
        sb[i] = db == 1 ? 0 : pb;
        pa *= da;
        pb *= db;
    }
    int64_t dims[MPX_MAX_RANK];
    int r = 0;
    for (int i = 0; i < ro; i++) dims[r++] = od[i];
    if (!va) dims[r++] = M;
    if (!vb) dims[r++] = N;
    if (r > MPX_MAX_RANK)
        return mpx_kernel_error(c, MPX_E_LIMIT, "result rank %d is beyond %d", r, MPX_MAX_RANK);
    if ((st = mm_alloc(c, &out[0], a->dtype, r, dims, K))) return st;
    int64_t nb = 1;
    for (int i = 0; i < ro; i++) nb *= od[i];
    /* B handed unrounded (mpx_kctx.in_round) is read rounded by the GEMM
     * core's packing where the core takes the product and B is one matrix;
     * the row updates and a batch's slices read it where it lies, so they
     * take the rounded values. */
    mpx_kctx lc;
    mpx_value lb;
    float *b_held = NULL;
    if ((!mm_on_core(c, K) || rb > 0) && (st = mpx_k_in_rounded(&c, &lc, 1, &b, &lb, &b_held))) {
        mpx_value_free(&out[0]);
        return st;
    }
    /* B the graph's own weights: the core keeps them packed (a product
     * whose B starts where they do; a batch's other slices pack per call). */
    mpx_tensor *b_own = mpx_k_value_owner(c, 1, b->f);
    if (!vb && rb == 0 && nb > 1) {
        /* A batch of rows times one matrix (a Linear on [L, N, E]: torch's
         * attention exports [197, 1, 768] x [768, 2304]) is one product of
         * nb * M rows: A and the result are contiguous, and each output value
         * is the same sum in the same order (kern_gemm.h: the bits do not
         * depend on how rows are blocked), but B is packed once instead of
         * nb times (ViT-B/16: 197 products of one row each, 3.5 GMAC/s). */
        st = mm_run(c, nb * M, N, K, a->f, K, 1, b->f, out[0].f, NULL, b_own);
        free(b_held);
        if (st) mpx_value_free(&out[0]);
        return st;
    }
    /* A batch whose A is one matrix a slice or one for all of them (and
     * B likewise), B not the graph's own: one call of the GEMM core with a
     * group a slice, which cuts the work into (slice, column band) items
     * and packs A once, B once a band. Each value is the same sum in the
     * same order as a product a call gives (kern_gemm.h). Why: a call a
     * slice allocated and packed per slice and, on its one thread, cut
     * each 64-row product into two row blocks that packed B twice
     * (BERT-style attention: 12 products of 64 x 64 x 64 a MatMul). */
    if (mm_on_core(c, K) && !b_own && (pa == nb || pa == 1) && (pb == nb || pb == 1)) {
        st = M == 0 || N == 0 ? MPX_OK
                              : mm_core(c, nb, M, N, K, a->f, K, 1, pa == nb ? M * K : 0, b->f, pb == nb ? K * N : 0,
                                        0, out[0].f, NULL, NULL);
        free(b_held);
        if (st) mpx_value_free(&out[0]);
        return st;
    }
    /* The batch a product an item. Many small products (attention's
     * per-head Q K^T and P V: 197 x 64 x 197 each, one thread apiece in the
     * GEMM core) go side by side on the kernel threads, each whole on one
     * (the same sums); larger ones one after another, each on all threads. */
    mm_batch w = {.c = c, .M = M, .N = N, .K = K, .a = a->f, .b = b->f, .y = out[0].f, .b_own = b_own,
                  .ro = ro, .od = od, .sa = sa, .sb = sb};
    atomic_init(&w.failed, 0);
    mpx_k_parallel_stoppable((long)nb, (double)M * (double)N * (double)K < 4e6 ? kg_threads() : 1, mm_batch_item, &w);
    free(b_held);
    if (atomic_load(&w.failed)) {
        if (c->err) *c->err = w.err; /* (already names the node) */
        mpx_value_free(&out[0]);
        return w.st;
    }
    return MPX_OK;
}

/* Det: the determinant of each M x M matrix of the last two axes, by
 * Gaussian elimination with partial pivoting in double (as numpy's LAPACK
 * route, which ORT's reference matches), rounded once to float; a float64
 * Det (kern_f64.c's table: f64) reads and writes the doubles themselves. */
static mpx_status det_run(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                          bool f64) {
    const mpx_value *x;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = kn_values_in(c, in, n_in, 0, "X", f64, &x);
    if (st) return st;
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return mpx_kernel_error(c, MPX_E_SHAPE, "Det needs square matrices in the last two axes");
    int64_t m = x->dims[x->rank - 1];
    if (m > 4096) return mpx_kernel_error(c, MPX_E_LIMIT, "matrices of %lld x %lld are beyond mpx's Det", (long long)m, (long long)m);
    if ((st = mpx_k_alloc(c, &out[0], f64 ? MPX_DT_DOUBLE : x->dtype, x->rank - 2, x->dims))) return st;
    double *a = malloc((size_t)(m > 0 ? m * m : 1) * sizeof *a);
    if (!a) {
        mpx_value_free(&out[0]); /* a failed kernel leaves its outputs absent */
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < out[0].n; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = f64 ? x->d[b * m * m + i] : (double)x->f[b * m * m + i];
        double det = 1.0;
        for (int64_t k = 0; k < m && det != 0.0; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++)
                if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
            if (a[p * m + k] == 0.0) {
                det = 0.0;
                break;
            }
            if (p != k) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[k * m + j];
                    a[k * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[k * m + k];
            for (int64_t i = k + 1; i < m; i++) {
                double f = a[i * m + k] / a[k * m + k];
                for (int64_t j = k; j < m; j++) a[i * m + j] -= f * a[k * m + j];
            }
        }
        if (f64) out[0].d[b] = det;
        else out[0].f[b] = (float)det;
    }
    free(a);
    return MPX_OK;
}

mpx_status mpx_k_det(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return det_run(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_det_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return det_run(c, in, n_in, out, n_out, true);
}
