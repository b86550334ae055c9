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
 * in double and the sum in index order in double. */
#include "kern_internal.h"
#include "kern_nn.h"

#include <stdlib.h>

/* The equation's labels and sizes are graph/geom.c's (mpx_einsum_parse),
 * which shape inference reads too. */
enum { EIN_MAX_IN = 8, EIN_MAX_LABELS = MPX_EINSUM_LABELS };

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
