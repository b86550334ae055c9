/* kern_einsum.c - Einsum: sums of products over labelled axes.
 *
 * Written as one general loop rather than by rewriting equations into
 * MatMul/Transpose: the emulation has to fix the order of the sum, and this
 * way the order is simply stated. Each output element is a sum over the
 * summed labels (those not in the output) in row-major order of the summed
 * labels taken by first appearance in the equation; each term is the product
 * of the inputs' elements in input order, in fp32; the sum follows mpx_accum
 * like every dot product. Repeated labels in one term take diagonals; "..."
 * stands for broadcast batch dims (right-aligned across inputs). Without
 * "->" the output is "..." then the labels that occur once, in character
 * order (as numpy and ONNX). Integer inputs are summed exactly in int64;
 * float64 inputs (kernels_f64.def) take the same walk, each term a product
 * in double and the sum in index order in double.
 *
 * Two float inputs whose equation is a (batched) matrix product - every
 * label in both inputs and the output (batch), or in one input and the
 * output (rows, columns), or in both inputs and not the output (summed),
 * no diagonal, no broadcast dim - are a MatMul (ein_matmul): each output
 * element the same terms in the same order (the summed labels row-major by
 * first appearance), summed as MatMul sums (kern_nn.c: with fp32
 * accumulation the products fused into blocks of 64, as every GEMM-core
 * dot product; a rounded accumulation the same as the general loop). Why:
 * the general loop ran at about 0.06 G multiply-adds/s; "btd,ed->bte" over
 * 128 x 256 and 512 x 256 took 260 ms where ONNX Runtime, which also runs
 * such equations as MatMul, takes 0.8 (AMD EPYC Zen 3). */
#include "kern_internal.h"
#include "kern_nn.h"

#include <stdlib.h>
#include <string.h>

/* The equation's labels and sizes are graph/geom.c's (mpx_einsum_parse),
 * which shape inference reads too. */
enum { EIN_MAX_IN = 8, EIN_MAX_LABELS = MPX_EINSUM_LABELS };

/* A contiguous copy of x with its axes in the order of the labels lab[0..n)
 * (each of x's labels once). */
static mpx_status ein_permute(const mpx_kctx *c, const mpx_value *x, const int *xlab, const int *lab, int n,
                              const int64_t *size, mpx_value *out) {
    int64_t dims[MPX_MAX_RANK], st[MPX_MAX_RANK], xs[MPX_MAX_RANK];
    int64_t acc = 1;
    for (int p = x->rank - 1; p >= 0; p--) xs[p] = acc, acc *= x->dims[p];
    for (int i = 0; i < n; i++) {
        dims[i] = size[lab[i]];
        st[i] = 0;
        for (int p = 0; p < x->rank; p++)
            if (xlab[p] == lab[i]) st[i] = xs[p];
    }
    mpx_status stt = mpx_k_alloc_raw(c, out, MPX_DT_FLOAT, n, dims);
    if (stt) return stt;
    int64_t idx[MPX_MAX_RANK] = {0}, off = 0;
    for (int64_t y = 0; y < out->n; y++) {
        out->f[y] = x->f[off];
        for (int i = n - 1; i >= 0; i--) {
            off += st[i];
            if (++idx[i] < dims[i]) break;
            off -= st[i] * dims[i];
            idx[i] = 0;
        }
    }
    return MPX_OK;
}

/* The equation as a batched MatMul (the header), or MPX_E_UNSUPPORTED when
 * it is not one (the general loop then). */
static mpx_status ein_matmul(const mpx_kctx *c, const mpx_value *const *in, const mpx_einsum *e, mpx_value *out) {
    enum { NONE = 0, BATCH, ROW, COL, SUM };
    int role[EIN_MAX_LABELS] = {0};
    bool in_out[EIN_MAX_LABELS] = {false};
    for (int o = 0; o < e->n_out; o++) in_out[e->out_label[o]] = true;
    int seen[2][EIN_MAX_LABELS] = {{0}};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < e->in_rank[k]; p++) {
            const int l = e->in_label[k][p];
            if (seen[k][l]++ || in[k]->dims[p] != e->size[l]) return MPX_E_UNSUPPORTED; /* diagonal, broadcast */
        }
    int lab[4][MPX_MAX_RANK], nl[4] = {0};
    for (int l = 0; l < EIN_MAX_LABELS; l++) {
        const bool a = seen[0][l], b = seen[1][l];
        if (!a && !b) continue;
        role[l] = a && b ? (in_out[l] ? BATCH : SUM) : in_out[l] ? (a ? ROW : COL) : NONE;
        if (role[l] == NONE) return MPX_E_UNSUPPORTED; /* a sum over one input's axis alone */
    }
    /* batch, row and column labels in output order; summed ones by first appearance */
    for (int o = 0; o < e->n_out; o++) {
        const int l = e->out_label[o], r = role[l] - 1;
        if (role[l] == NONE || role[l] == SUM) return MPX_E_UNSUPPORTED;
        lab[r][nl[r]++] = l;
    }
    for (int ord = 0;; ord++) {
        int id = -1;
        for (int l = 0; l < EIN_MAX_LABELS; l++)
            if (e->first[l] == ord) id = l;
        if (id < 0) break;
        if (role[id] == SUM) lab[3][nl[3]++] = id;
    }
    int64_t G = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < nl[0]; i++) G *= e->size[lab[0][i]];
    for (int i = 0; i < nl[1]; i++) M *= e->size[lab[1][i]];
    for (int i = 0; i < nl[2]; i++) N *= e->size[lab[2][i]];
    for (int i = 0; i < nl[3]; i++) K *= e->size[lab[3][i]];
    if (G * M * N == 0 || K == 0) return MPX_E_UNSUPPORTED;
    /* A as [batch, rows, summed], B as [batch, summed, columns] */
    int la[3 * MPX_MAX_RANK], lb[3 * MPX_MAX_RANK], lp[3 * MPX_MAX_RANK], na = 0, nb = 0, np = 0;
    for (int i = 0; i < nl[0]; i++) la[na++] = lab[0][i], lb[nb++] = lab[0][i];
    for (int i = 0; i < nl[1]; i++) la[na++] = lab[1][i];
    for (int i = 0; i < nl[3]; i++) la[na++] = lab[3][i], lb[nb++] = lab[3][i];
    for (int i = 0; i < nl[2]; i++) lb[nb++] = lab[2][i];
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < nl[r]; i++) lp[np++] = lab[r][i];
    if (na > MPX_MAX_RANK || nb > MPX_MAX_RANK) return MPX_E_UNSUPPORTED;
    /* the product is [batch, rows, columns] in lp's order; the output's own
     * order when it is that, else a copy permuted into the output */
    int outl[MPX_MAX_RANK];
    bool same = true;
    for (int o = 0; o < e->n_out; o++) outl[o] = e->out_label[o], same = same && outl[o] == lp[o];
    /* the copies are scratch: not the executor's offered output buffer, and
     * not rounded on its behalf (the in_round inputs: the kernels reading
     * Einsum's inputs get them rounded, kernels.def) */
    mpx_kctx tc = *c, mc = *c;
    tc.dest = NULL, tc.dest_n = 0, tc.dest_taken = NULL, tc.out_round = NULL, tc.out_rounded = NULL;
    tc.in_round = NULL;
    if (!same) mc = tc;
    mc.in_round = NULL;
    mpx_value a, b, y, a3, b3;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&y, 0, sizeof y);
    mpx_status st = ein_permute(&tc, in[0], e->in_label[0], la, na, e->size, &a);
    if (!st) st = ein_permute(&tc, in[1], e->in_label[1], lb, nb, e->size, &b);
    if (!st) {
        a3 = a, b3 = b; /* the same values as [G, M, K] and [G, K, N] */
        a3.rank = b3.rank = 3;
        a3.dims[0] = b3.dims[0] = G, a3.dims[1] = M, a3.dims[2] = b3.dims[1] = K, b3.dims[2] = N;
        a3.n = G * M * K, b3.n = G * K * N;
        const mpx_value *mm_in[2] = {&a3, &b3};
        st = mpx_k_matmul(&mc, mm_in, 2, &y, 1);
    }
    mpx_value_free(&a);
    mpx_value_free(&b);
    if (st) return st;
    y.rank = np;
    for (int i = 0; i < np; i++) y.dims[i] = e->size[lp[i]];
    if (same) {
        *out = y;
        return MPX_OK;
    }
    st = ein_permute(c, &y, lp, outl, e->n_out, e->size, out);
    mpx_value_free(&y);
    return st;
}

static mpx_status einsum(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out,
                         bool f64) {
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    if (n_in < 1 || n_in > EIN_MAX_IN)
        return mpx_kernel_error(c, MPX_E_INVALID, "%d inputs (1 to %d supported)", n_in, EIN_MAX_IN);
    bool is_float = in[0] && in[0]->f, is_double = f64 && in[0] && in[0]->d;
    for (int k = 0; k < n_in; k++) {
        if (!in[k] || in[k]->n < 0) return mpx_kernel_error(c, MPX_E_INVALID, "input %d is missing", k);
        if ((in[k]->f != NULL) != is_float || (in[k]->d != NULL) != is_double)
            return mpx_kernel_error(c, MPX_E_INVALID, "inputs 0 and %d have different types", k);
    }
    const char *eq = mpx_node_attr_string(c->node, "equation", NULL);
    if (!eq) return mpx_kernel_error(c, MPX_E_INVALID, "attribute equation is required");
    int ranks[EIN_MAX_IN];
    const int64_t *dims_of[EIN_MAX_IN];
    for (int k = 0; k < n_in; k++) ranks[k] = in[k]->rank, dims_of[k] = in[k]->dims;
    mpx_einsum e;
    mpx_error pe;
    bool complete;
    if (mpx_einsum_parse(eq, n_in, ranks, dims_of, &e, &complete, &pe)) return mpx_kernel_error(c, pe.status, "%s", pe.msg);
    /* Loop labels: output labels (row-major), then summed labels by first appearance. */
    int loop[EIN_MAX_LABELS], n_loop = 0;
    bool in_out[EIN_MAX_LABELS] = {false};
    for (int o = 0; o < e.n_out; o++) loop[n_loop++] = e.out_label[o], in_out[e.out_label[o]] = true;
    int n_sum = 0;
    for (int ord = 0;; ord++) {
        int id = -1;
        for (int l = 0; l < EIN_MAX_LABELS; l++)
            if (e.first[l] == ord) id = l;
        if (id < 0) break;
        if (!in_out[id]) loop[n_loop++] = id, n_sum++;
    }
    if (is_float && !is_double && n_in == 2) {
        st = ein_matmul(c, in, &e, &out[0]);
        if (st != MPX_E_UNSUPPORTED) return st;
    }
    int64_t dims[MPX_MAX_RANK];
    for (int o = 0; o < e.n_out; o++) dims[o] = e.size[e.out_label[o]];
    if ((st = mpx_k_alloc(c, &out[0], in[0]->dtype, e.n_out, dims))) return st;
    /* Per input, the element stride of each loop label (summed over a
     * repeated label: a diagonal; 0 where the input broadcasts it). */
    int64_t stride[EIN_MAX_IN][EIN_MAX_LABELS];
    for (int k = 0; k < n_in; k++) {
        int64_t s = 1;
        int64_t st_l[EIN_MAX_LABELS] = {0};
        for (int p = e.in_rank[k] - 1; p >= 0; p--) {
            if (in[k]->dims[p] != 1) st_l[e.in_label[k][p]] += s;
            s *= in[k]->dims[p];
        }
        for (int l = 0; l < n_loop; l++) stride[k][l] = st_l[loop[l]];
    }
    int64_t sum_n = 1;
    for (int l = e.n_out; l < n_loop; l++) sum_n *= e.size[loop[l]];
    int64_t idx[EIN_MAX_LABELS] = {0}, off[EIN_MAX_IN] = {0}, terms = 0;
    for (int64_t y = 0; y < out[0].n; y++) {
        /* a cancel check every million terms or so (the executor drops
         * the output of a kernel that stopped) */
        if ((terms += sum_n + 1) >= (1 << 20)) {
            terms = 0;
            if (mpx_k_cancelled()) return mpx_kernel_error(c, MPX_E_CANCELLED, "cancelled");
        }
        /* off[] points at the output element's first term; walk the summed labels. */
        int64_t so[EIN_MAX_IN], sidx[EIN_MAX_LABELS] = {0};
        for (int k = 0; k < n_in; k++) so[k] = off[k];
        mpx_acc a;
        int64_t isum = 0;
        double dsum = 0.0;
        mpx_acc_init(&a, &c->acc, 0.0f);
        for (int64_t t = 0; t < sum_n; t++) {
            if (is_double) {
                double p = in[0]->d[so[0]];
                for (int k = 1; k < n_in; k++) p *= in[k]->d[so[k]];
                dsum += p;
            } else if (is_float) {
                float p = in[0]->f[so[0]];
                for (int k = 1; k < n_in; k++) p *= in[k]->f[so[k]];
                mpx_acc_add(&a, p);
            } else {
                int64_t p = in[0]->i[so[0]];
                for (int k = 1; k < n_in; k++) p = (int64_t)((uint64_t)p * (uint64_t)in[k]->i[so[k]]);
                isum = (int64_t)((uint64_t)isum + (uint64_t)p);
            }
            for (int l = n_loop - 1; l >= e.n_out; l--) {
                for (int k = 0; k < n_in; k++) so[k] += stride[k][l];
                if (++sidx[l] < e.size[loop[l]]) break;
                for (int k = 0; k < n_in; k++) so[k] -= stride[k][l] * e.size[loop[l]];
                sidx[l] = 0;
            }
        }
        if (is_double) out[0].d[y] = dsum;
        else if (is_float) out[0].f[y] = sum_n ? mpx_acc_result(&a) : 0.0f;
        else out[0].i[y] = isum;
        for (int l = e.n_out - 1; l >= 0; l--) {
            for (int k = 0; k < n_in; k++) off[k] += stride[k][l];
            if (++idx[l] < e.size[loop[l]]) break;
            for (int k = 0; k < n_in; k++) off[k] -= stride[k][l] * e.size[loop[l]];
            idx[l] = 0;
        }
    }
    return MPX_OK;
}

mpx_status mpx_k_einsum(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return einsum(c, in, n_in, out, n_out, false);
}

mpx_status mpx_k_einsum_f64(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    return einsum(c, in, n_in, out, n_out, true);
}
