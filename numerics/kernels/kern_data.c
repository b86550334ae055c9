/* kern_data.c - data-movement kernels (ONNX semantics, opsets 7 and newer):
 * Concat, Split, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout,
 * Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth. Gather, Pad,
 * TopK, NonZero and the shape and constant ops are in kern_index.c.
 *
 * Arguments that moved from attributes to inputs across opsets (Split's split,
 * Squeeze/Unsqueeze axes, Slice's starts/ends/axes, Reshape's shape, and in
 * kern_index.c Pad's pads and value and TopK's k) are read as shape inference
 * reads them: the attribute when the node has one (a node can only hold its
 * opset's form, and hand-written JSON models often leave the opset out), else
 * the input. Defaults that changed between opsets follow node->opset.
 *
 * Apart from Range nothing here does arithmetic on values, so float and integer
 * tensors move alike: a value holds either f (fp32) or i (int64) and the copies
 * work on whichever it holds. Index lists (shapes, axes, pads, indices) must be
 * integer tensors; every index is range-checked before anything is read. */
#include "kern_data.h"

#include <stdlib.h>

/* ---- Concat, Split --------------------------------------------------------------- */

typedef struct concat_job {
    const mpx_value *const *in;
    int n_in, ax;
    int64_t inner;
    size_t es, row; /* element size; bytes of the output per index of the dims before ax */
    size_t total;   /* the output's bytes */
    char *out;
} concat_job;

enum { CONCAT_PIECE = 1 << 16 };

/* Output bytes [item, item + 1) x CONCAT_PIECE: for each row of the dims
 * before ax the inputs' chunks in turn, as much of each as the piece holds. */
static void concat_item(void *ctx, int tid, long item) {
    (void)tid;
    const concat_job *j = ctx;
    const size_t lo = (size_t)item * CONCAT_PIECE;
    size_t o = lo / j->row, at = o * j->row, end = lo + CONCAT_PIECE < j->total ? lo + CONCAT_PIECE : j->total;
    for (; at < end; o++)
        for (int k = 0; k < j->n_in && at < end; k++) {
            const size_t chunk = (size_t)(j->in[k]->dims[j->ax] * j->inner) * j->es;
            if (at + chunk > lo && chunk > 0) {
                const size_t a = at > lo ? at : lo, b = at + chunk < end ? at + chunk : end;
                const char *from = cbytes(j->in[k]) + o * chunk + (a - at);
                /* A comparison grows input 0's buffer into the output where it
                 * is the output's first part (compare.c): it is in place. */
                if (from != j->out + a) memcpy(j->out + a, from, b - a);
            }
            at += chunk;
        }
}

mpx_status mpx_k_concat(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    mpx_status st = need(c, in, n_in, n_in > 0 ? n_in : 1, n_out, 1);
    if (st != MPX_OK) return st;
    if (!mpx_node_attr(c->node, "axis"))
        return mpx_kernel_error(c, MPX_E_INVALID, "attribute axis is required");
    const mpx_value *x = in[0];
    int r = x->rank, ax;
    if (r == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "cannot concatenate scalars");
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), r, 0, &ax)) != MPX_OK) return st;
    int64_t dims[MPX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[ax] = 0;
    char b1[96], b2[96];
    for (int k = 0; k < n_in; k++) {
        const mpx_value *t = in[k];
        if (t->rank != r || (t->f != NULL) != (x->f != NULL))
            return mpx_kernel_error(c, MPX_E_SHAPE, "input %d (%s %s) does not fit input 0 (%s %s)",
                                    k, mpx_dtype_name(t->dtype),
                                    mpx_dims_str(t->rank, t->dims, b1, sizeof b1),
                                    mpx_dtype_name(x->dtype), mpx_dims_str(r, x->dims, b2, sizeof b2));
        for (int i = 0; i < r; i++)
            if (i != ax && t->dims[i] != x->dims[i])
                return mpx_kernel_error(c, MPX_E_SHAPE,
                                        "input %d of shape %s does not fit input 0 of shape %s "
                                        "(concatenating on axis %d)",
                                        k, mpx_dims_str(r, t->dims, b1, sizeof b1),
                                        mpx_dims_str(r, x->dims, b2, sizeof b2), ax);
        dims[ax] += t->dims[ax];
    }
    /* every element is written below: not cleared (and a buffer the
     * executor offers may be taken: mpx_kctx.dest) */
    if ((st = mpx_k_alloc_raw(c, &out[0], x->dtype, r, dims)) != MPX_OK) return st;
    concat_job j = {.in = in, .n_in = n_in, .ax = ax, .inner = prod(ax + 1, r, dims), .es = esz(x),
                    .out = bytes(&out[0])};
    j.row = (size_t)(dims[ax] * j.inner) * j.es;
    const size_t total = j.total = (size_t)prod(0, ax, dims) * j.row;
    /* Large copies in pieces of CONCAT_PIECE bytes on the kernel threads
     * (as copy_view: UNet's Concats of 4 to 16 MB ran on one thread, at
     * 1.8 times ONNX Runtime's time on two; the page faults of a fresh
     * output are taken on both threads too). Every byte is copied once
     * from the same place whichever thread copies it. */
    const long pieces = (long)((total + CONCAT_PIECE - 1) / CONCAT_PIECE);
    mpx_k_parallel(pieces, total < ((size_t)1 << 18) ? 1 : kg_threads(), concat_item, &j);
    return MPX_OK;
}

mpx_status mpx_k_split(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int r = x->rank, ax;
    if (r == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "cannot split a scalar");
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), r, 0, &ax)) != MPX_OK) return st;
    int64_t d = x->dims[ax];
    int64_t *sizes = calloc((size_t)n_out, sizeof *sizes);
    if (!sizes) return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    const int64_t *av;
    int na = mpx_node_attr_ints(c->node, "split", &av);
    const mpx_value *sv = NULL;
    if (!av && (st = opt_in(c, in, n_in, 1, &sv)) != MPX_OK) goto done;
    if (sv && sv->n == 0) sv = NULL; /* an empty split input stands for none */
    if (sv && !sv->i) {
        st = mpx_kernel_error(c, MPX_E_INVALID, "split must be an integer tensor");
        goto done;
    }
    if (av || sv) {
        int64_t cnt = av ? na : sv->n, sum = 0;
        if (cnt != n_out) {
            st = mpx_kernel_error(c, MPX_E_SHAPE, "split has %lld values for %d outputs",
                                  (long long)cnt, n_out);
            goto done;
        }
        for (int j = 0; j < n_out; j++) {
            sizes[j] = av ? av[j] : sv->i[j];
            if (sizes[j] < 0 || sizes[j] > d) {
                st = mpx_kernel_error(c, MPX_E_SHAPE, "split size %lld is out of range",
                                      (long long)sizes[j]);
                goto done;
            }
            sum += sizes[j];
        }
        if (sum != d) {
            st = mpx_kernel_error(c, MPX_E_SHAPE, "split sizes add up to %lld, axis %d has %lld",
                                  (long long)sum, ax, (long long)d);
            goto done;
        }
    } else if (mpx_node_attr(c->node, "num_outputs")) {
        /* Opset 18: chunks of ceil(d / n), the last one smaller. */
        int64_t nn = mpx_node_attr_int(c->node, "num_outputs", 0);
        if (nn != n_out) {
            st = mpx_kernel_error(c, MPX_E_SHAPE, "num_outputs is %lld but the node has %d outputs",
                                  (long long)nn, n_out);
            goto done;
        }
        int64_t chunk = (d + nn - 1) / nn, last = d - chunk * (nn - 1);
        if (last < 0) {
            st = mpx_kernel_error(c, MPX_E_SHAPE, "cannot split %lld into %lld chunks of %lld",
                                  (long long)d, (long long)nn, (long long)chunk);
            goto done;
        }
        for (int j = 0; j < n_out; j++) sizes[j] = j < n_out - 1 ? chunk : last;
    } else {
        if (d % n_out) {
            st = mpx_kernel_error(c, MPX_E_SHAPE,
                                  "axis %d of length %lld does not split evenly "
                                  "into %d outputs",
                                  ax, (long long)d, n_out);
            goto done;
        }
        for (int j = 0; j < n_out; j++) sizes[j] = d / n_out;
    }
    int64_t outer = prod(0, ax, x->dims), inner = prod(ax + 1, r, x->dims);
    size_t es = esz(x);
    int64_t at = 0;
    for (int j = 0; j < n_out; j++) {
        int64_t dims[MPX_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[ax] = sizes[j];
        if ((st = alloc_whole(c, &out[j], x, r, dims)) != MPX_OK) {
            free_outs(out, j);
            goto done;
        }
        size_t chunk = (size_t)(sizes[j] * inner) * es;
        for (int64_t o = 0; o < outer; o++)
            memcpy(bytes(&out[j]) + (size_t)o * chunk,
                   cbytes(x) + ((size_t)(o * d + at) * (size_t)inner) * es, chunk);
        at += sizes[j];
    }
done:
    free(sizes);
    return st;
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout --------------------- */

mpx_status mpx_k_reshape(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t shape[LIST_MAX], dims[MPX_MAX_RANK];
    int ns;
    bool given;
    if ((st = list_arg(c, in, n_in, "shape", 1, shape, MPX_MAX_RANK, &ns, &given)) != MPX_OK)
        return st;
    if (!given) return mpx_kernel_error(c, MPX_E_INVALID, "the shape input is missing");
    bool allowzero = mpx_node_attr_int(c->node, "allowzero", 0) != 0, zero = false;
    int neg = -1;
    char b1[96], b2[96];
    for (int i = 0; i < ns; i++) {
        int64_t s = shape[i];
        dims[i] = s;
        if (s == -1) {
            if (neg >= 0)
                return mpx_kernel_error(c, MPX_E_SHAPE, "shape %s has more than one -1",
                                        mpx_dims_str(ns, shape, b1, sizeof b1));
            neg = i;
            dims[i] = 1;
        } else if (s == 0 && !allowzero) {
            if (i >= x->rank)
                return mpx_kernel_error(c, MPX_E_SHAPE,
                                        "shape %s copies dim %d (0) from an input of rank %d",
                                        mpx_dims_str(ns, shape, b1, sizeof b1), i, x->rank);
            dims[i] = x->dims[i];
        } else if (s < 0) {
            return mpx_kernel_error(c, MPX_E_SHAPE, "shape %s has a negative dim",
                                    mpx_dims_str(ns, shape, b1, sizeof b1));
        } else if (s == 0) {
            zero = true;
        }
    }
    if (zero && neg >= 0)
        return mpx_kernel_error(c, MPX_E_SHAPE, "shape %s has both 0 and -1 with allowzero=1",
                                mpx_dims_str(ns, shape, b1, sizeof b1));
    int64_t p;
    mpx_error e = {0};
    if (mpx_dims_product(ns, dims, &p, &e) != MPX_OK)
        return mpx_kernel_error(c, MPX_E_LIMIT, "shape %s: %s", mpx_dims_str(ns, shape, b1, sizeof b1),
                                e.msg);
    if (neg >= 0) {
        if (p == 0 || x->n % p)
            return mpx_kernel_error(c, MPX_E_SHAPE, "cannot reshape %s (%lld elements) to %s",
                                    mpx_dims_str(x->rank, x->dims, b2, sizeof b2), (long long)x->n,
                                    mpx_dims_str(ns, shape, b1, sizeof b1));
        dims[neg] = x->n / p;
    } else if (p != x->n) {
        return mpx_kernel_error(c, MPX_E_SHAPE, "cannot reshape %s (%lld elements) to %s",
                                mpx_dims_str(x->rank, x->dims, b2, sizeof b2), (long long)x->n,
                                mpx_dims_str(ns, shape, b1, sizeof b1));
    }
    return copy_whole(c, &out[0], x, ns, dims);
}

mpx_status mpx_k_flatten(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    /* axis in [-r, r]; a negative one counts from the back (-1 is r - 1). */
    int64_t a = mpx_node_attr_int(c->node, "axis", 1), r = x->rank;
    if (a < -r || a > r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "axis %lld is out of range for rank %d",
                                (long long)a, x->rank);
    int ax = (int)(a < 0 ? a + r : a);
    int64_t dims[2] = {prod(0, ax, x->dims), prod(ax, x->rank, x->dims)};
    return copy_whole(c, &out[0], x, 2, dims);
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input 1 from 13. */
static mpx_status axes_arg(const mpx_kctx *c, const mpx_value *const *in, int n_in, int64_t *axes,
                           int *na, bool *given) {
    return list_arg(c, in, n_in, "axes", 1, axes, LIST_MAX, na, given);
}

mpx_status mpx_k_squeeze(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t axes[LIST_MAX], dims[MPX_MAX_RANK];
    int na, r = 0;
    bool given, drop[MPX_MAX_RANK] = {false};
    if ((st = axes_arg(c, in, n_in, axes, &na, &given)) != MPX_OK) return st;
    if (given && na > 0) {
        for (int i = 0; i < na; i++) {
            int ax;
            if ((st = mpx_k_axis(c, axes[i], x->rank, 0, &ax)) != MPX_OK) return st;
            if (x->dims[ax] != 1)
                return mpx_kernel_error(c, MPX_E_SHAPE, "cannot squeeze axis %d of length %lld", ax,
                                        (long long)x->dims[ax]);
            drop[ax] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++) drop[i] = x->dims[i] == 1;
    }
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) dims[r++] = x->dims[i];
    return copy_whole(c, &out[0], x, r, dims);
}

mpx_status mpx_k_unsqueeze(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                           int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t axes[LIST_MAX], dims[MPX_MAX_RANK];
    int na;
    bool given, ins[MPX_MAX_RANK] = {false};
    if ((st = axes_arg(c, in, n_in, axes, &na, &given)) != MPX_OK) return st;
    if (!given) return mpx_kernel_error(c, MPX_E_INVALID, "axes are required");
    int r = x->rank + na;
    if (r > MPX_MAX_RANK)
        return mpx_kernel_error(c, MPX_E_LIMIT, "output rank %d is beyond mpx's limit of %d", r,
                                MPX_MAX_RANK);
    for (int i = 0; i < na; i++) {
        int ax;
        if ((st = mpx_k_axis(c, axes[i], r, 0, &ax)) != MPX_OK) return st;
        if (ins[ax]) return mpx_kernel_error(c, MPX_E_SHAPE, "axis %d is repeated", ax);
        ins[ax] = true;
    }
    for (int i = 0, k = 0; i < r; i++) dims[i] = ins[i] ? 1 : x->dims[k++];
    return copy_whole(c, &out[0], x, r, dims);
}

/* A value, or a whole container, copied. */
static mpx_status copy_any(const mpx_kctx *c, mpx_value *out, const mpx_value *x) {
    if (!x->is_seq) return copy_whole(c, out, x, x->rank, x->dims);
    mpx_error e;
    if (mpx_value_copy(out, x, &e) != MPX_OK) return mpx_kernel_error(c, e.status, "%s", e.msg);
    return MPX_OK;
}

mpx_status mpx_k_identity(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                          int n_out) {
    if (n_in >= 1 && in[0] && in[0]->is_seq && n_out >= 1) return copy_any(c, &out[0], in[0]);
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    return copy_whole(c, &out[0], in[0], in[0]->rank, in[0]->dims);
}

/* If (flattened by the ONNX loader: [cond, then outputs..., else
 * outputs...]): the outputs of the branch the condition selects, copied.
 * Only that branch's nodes ran (exec.c), so the other's values are absent. */
mpx_status mpx_k_if(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    if (n_in != 1 + 2 * n_out)
        return mpx_kernel_error(c, MPX_E_INVALID, "an If reads its condition and both branches' outputs (%d inputs "
                                "for %d outputs); the ONNX loader makes it from then_branch and else_branch",
                                n_in, n_out);
    const mpx_value *cv = in[0];
    if (!cv || cv->n < 0 || (!cv->i && !cv->f))
        return mpx_kernel_error(c, MPX_E_INVALID, "the condition has no value");
    if (cv->n != 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "the condition has %lld elements; it must hold one",
                                (long long)cv->n);
    bool then = cv->i ? cv->i[0] != 0 : cv->f[0] != 0.0f;
    for (int j = 0; j < n_out; j++) {
        const mpx_value *x = in[1 + (then ? 0 : n_out) + j];
        mpx_status st = MPX_OK;
        if (!x || x->n < 0 || (!x->i && !x->f && !x->is_seq))
            st = mpx_kernel_error(c, MPX_E_INVALID, "%s output %d has no value", then ? "then_branch" : "else_branch", j);
        else
            st = copy_any(c, &out[j], x);
        if (st != MPX_OK) {
            for (int q = 0; q < j; q++) mpx_value_free(&out[q]);
            return st;
        }
    }
    return MPX_OK;
}

/* Inference only: the data passes through and the mask is all true. A node
 * that asks for training-mode dropout is refused rather than run wrong. */
mpx_status mpx_k_dropout(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *ratio, *train;
    if ((st = opt_in(c, in, n_in, 1, &ratio)) != MPX_OK) return st;
    if ((st = opt_in(c, in, n_in, 2, &train)) != MPX_OK) return st;
    double p = ratio && ratio->n > 0 ? (ratio->f ? (double)ratio->f[0] : ratio->d ? ratio->d[0] : (double)ratio->i[0])
                                     : (double)mpx_node_attr_float(c->node, "ratio", 0.5f);
    bool training = train && train->n > 0 && (train->i ? train->i[0] != 0 : train->f[0] != 0.0f);
    if (training && p != 0.0)
        return mpx_kernel_error(
            c, MPX_E_UNSUPPORTED,
            "training-mode dropout (ratio %g) is random; mpx runs inference only", p);
    if ((st = copy_whole(c, &out[0], x, x->rank, x->dims)) != MPX_OK) return st;
    if (n_out > 1) {
        /* Before opset 10 the mask has the data's type. */
        mpx_dtype mt = opset_of(c) >= 10 ? MPX_DT_BOOL : x->dtype;
        if ((st = mpx_k_alloc(c, &out[1], mt, x->rank, x->dims)) != MPX_OK) {
            mpx_value_free(&out[0]);
            return st;
        }
        for (int64_t k = 0; k < out[1].n; k++) {
            if (out[1].f)
                out[1].f[k] = 1.0f;
            else
                out[1].i[k] = 1;
        }
    }
    return MPX_OK;
}

/* ---- Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth ------------------ */

mpx_status mpx_k_transpose(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                           int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int r = x->rank;
    const int64_t *pv;
    int np = mpx_node_attr_ints(c->node, "perm", &pv);
    int64_t perm[MPX_MAX_RANK], xs[MPX_MAX_RANK];
    bool seen[MPX_MAX_RANK] = {false};
    if (pv && np != r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "perm has %d values for an input of rank %d", np,
                                r);
    for (int i = 0; i < r; i++) {
        perm[i] = pv ? pv[i] : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return mpx_kernel_error(c, MPX_E_SHAPE, "perm is not a permutation of 0..%d", r - 1);
        seen[perm[i]] = true;
    }
    row_strides(r, x->dims, xs);
    view v = {.rank = r, .base = 0};
    for (int i = 0; i < r; i++) {
        v.dims[i] = x->dims[perm[i]];
        v.str[i] = xs[perm[i]];
    }
    if ((st = alloc_whole(c, &out[0], x, r, v.dims)) != MPX_OK) return st;
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

mpx_status mpx_k_slice(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t starts[LIST_MAX], ends[LIST_MAX], axes[LIST_MAX], steps[LIST_MAX];
    int ns, ne, na, nst;
    bool gs, ge, ga, gst;
    if (mpx_node_attr(c->node, "starts") || opset_of(c) < 10) {
        if ((st = list_arg(c, in, n_in, "starts", -1, starts, LIST_MAX, &ns, &gs)) ||
            (st = list_arg(c, in, n_in, "ends", -1, ends, LIST_MAX, &ne, &ge)) ||
            (st = list_arg(c, in, n_in, "axes", -1, axes, LIST_MAX, &na, &ga)))
            return st;
        gst = false;
        nst = 0;
    } else {
        if ((st = list_arg(c, in, n_in, "starts", 1, starts, LIST_MAX, &ns, &gs)) ||
            (st = list_arg(c, in, n_in, "ends", 2, ends, LIST_MAX, &ne, &ge)) ||
            (st = list_arg(c, in, n_in, "axes", 3, axes, LIST_MAX, &na, &ga)) ||
            (st = list_arg(c, in, n_in, "steps", 4, steps, LIST_MAX, &nst, &gst)))
            return st;
    }
    if (!gs || !ge) return mpx_kernel_error(c, MPX_E_INVALID, "starts and ends are required");
    if (ne != ns || (ga && na != ns) || (gst && nst != ns))
        return mpx_kernel_error(c, MPX_E_SHAPE,
                                "starts, ends, axes and steps differ in length (%d, %d, %d, %d)",
                                ns, ne, ga ? na : ns, gst ? nst : ns);
    int r = x->rank;
    view v = {.rank = r, .base = 0};
    int64_t xs[MPX_MAX_RANK];
    row_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        v.dims[i] = x->dims[i];
        v.str[i] = xs[i];
    }
    bool seen[MPX_MAX_RANK] = {false};
    for (int i = 0; i < ns; i++) {
        int ax;
        if ((st = mpx_k_axis(c, ga ? axes[i] : i, r, 0, &ax)) != MPX_OK) return st;
        if (seen[ax]) return mpx_kernel_error(c, MPX_E_SHAPE, "axis %d is repeated", ax);
        seen[ax] = true;
        int64_t step = gst ? steps[i] : 1, start;
        if (step == 0) return mpx_kernel_error(c, MPX_E_SHAPE, "step 0 on axis %d", ax);
        v.dims[ax] = mpx_slice_axis(x->dims[ax], starts[i], ends[i], step, &start);
        v.base += start * xs[ax];
        /* With two or more elements |step| < d, so the stride cannot overflow. */
        v.str[ax] = v.dims[ax] > 1 ? xs[ax] * step : 0;
    }
    if ((st = alloc_whole(c, &out[0], x, r, v.dims)) != MPX_OK) return st;
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

mpx_status mpx_k_expand(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                        int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    mpx_value shape = {.rank = 0, .n = 0};
    int ns;
    if ((st = ints_of(c, in[1], "shape", shape.dims, MPX_MAX_RANK, &ns)) != MPX_OK) return st;
    shape.rank = ns;
    for (int i = 0; i < ns; i++)
        if (shape.dims[i] < 0)
            return mpx_kernel_error(c, MPX_E_SHAPE, "shape has a negative dim %lld",
                                    (long long)shape.dims[i]);
    const mpx_value *pair[2] = {x, &shape};
    view v = {.base = 0};
    if ((st = mpx_k_bcast_shape(c, 2, pair, &v.rank, v.dims)) != MPX_OK) return st;
    mpx_k_bcast_strides(x, v.rank, v.dims, v.str);
    if ((st = alloc_whole(c, &out[0], x, v.rank, v.dims)) != MPX_OK) return st;
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

mpx_status mpx_k_tile(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t rep[LIST_MAX], xs[MPX_MAX_RANK], dims[MPX_MAX_RANK];
    int nr, r = x->rank;
    if ((st = ints_of(c, in[1], "repeats", rep, LIST_MAX, &nr)) != MPX_OK) return st;
    if (nr != r)
        return mpx_kernel_error(c, MPX_E_SHAPE, "repeats has %d values for an input of rank %d", nr,
                                r);
    row_strides(r, x->dims, xs);
    /* Output coordinate t * d + j is the view coordinate (t, j) with stride (0, s). */
    view v = {.rank = 2 * r, .base = 0};
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0)
            return mpx_kernel_error(c, MPX_E_SHAPE, "repeats has a negative value %lld",
                                    (long long)rep[i]);
        if (rep[i] > 0 && x->dims[i] > MPX_MAX_ELEMS / rep[i])
            return mpx_kernel_error(c, MPX_E_LIMIT, "tiling axis %d %lld times is too large", i,
                                    (long long)rep[i]);
        dims[i] = x->dims[i] * rep[i];
        v.dims[2 * i] = rep[i];
        v.str[2 * i] = 0;
        v.dims[2 * i + 1] = x->dims[i];
        v.str[2 * i + 1] = xs[i];
    }
    if ((st = alloc_whole(c, &out[0], x, r, dims)) != MPX_OK) return st;
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

/* Trilu: the upper (default) or lower triangle of each matrix of the last two
 * axes, diagonal k (input 1, default 0) included; the rest are zeros. Upper
 * keeps column - row >= k, lower column - row <= k. A copy, exact in any
 * format. */
mpx_status mpx_k_trilu(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    if (x->rank < 2)
        return mpx_kernel_error(c, MPX_E_SHAPE, "Trilu needs an input of rank 2 or more, not %d", x->rank);
    int64_t k = 0;
    if (n_in > 1 && in[1]) {
        int64_t ks[LIST_MAX];
        int nk;
        if ((st = ints_of(c, in[1], "k", ks, LIST_MAX, &nk)) != MPX_OK) return st;
        if (nk != 1) return mpx_kernel_error(c, MPX_E_SHAPE, "k has %d values, not 1", nk);
        k = ks[0];
    }
    bool upper = mpx_node_attr_int(c->node, "upper", 1) != 0;
    if ((st = alloc_like(c, &out[0], x, x->rank, x->dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    for (int64_t e = 0; e < x->n; e++) {
        int64_t col = e % cols, row = cols ? (e / cols) % rows : 0;
        bool keep = upper ? col - row >= k : col - row <= k;
        if (y->f) y->f[e] = keep ? x->f[e] : 0.0f;
        else y->i[e] = keep ? x->i[e] : 0;
    }
    return MPX_OK;
}

/* DepthToSpace / SpaceToDepth are a reshape, a transpose and a reshape: one
 * 6-D view of the NCHW input. */
mpx_status mpx_k_depth_to_space(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t b = mpx_node_attr_int(c->node, "blocksize", 0);
    const char *mode = mpx_node_attr_string(c->node, "mode", "DCR");
    bool crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "mode \"%s\" is not DCR or CRD", mode);
    if (x->rank != 4) return mpx_kernel_error(c, MPX_E_SHAPE, "input must be 4-D (NCHW)");
    /* Real models use small blocks; the bound keeps b*b*C far from overflow. */
    if (b <= 0 || b > 4096)
        return mpx_kernel_error(c, MPX_E_INVALID, "blocksize %lld is out of range (1..4096)",
                                (long long)b);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], HW = H * W;
    if (C % (b * b))
        return mpx_kernel_error(c, MPX_E_SHAPE, "%lld channels do not divide by blocksize^2 = %lld",
                                (long long)C, (long long)(b * b));
    int64_t Co = C / (b * b), dims[4] = {N, Co, H * b, W * b};
    if ((st = alloc_whole(c, &out[0], x, 4, dims)) != MPX_OK) return st;
    if (out[0].n == 0) return MPX_OK;
    /* Output order (n, c, h, i, w, j); source channel (i*b + j)*Co + c (DCR)
     * or c*b*b + i*b + j (CRD). */
    view v = {.rank = 6, .base = 0, .dims = {N, Co, H, b, W, b}};
    int64_t s[6] = {C * HW, crd ? b * b * HW : HW, W, crd ? b * HW : b * Co * HW,
                    1,      crd ? HW : Co * HW};
    memcpy(v.str, s, sizeof s);
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

mpx_status mpx_k_space_to_depth(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 1, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0];
    int64_t b = mpx_node_attr_int(c->node, "blocksize", 0);
    if (x->rank != 4) return mpx_kernel_error(c, MPX_E_SHAPE, "input must be 4-D (NCHW)");
    /* Real models use small blocks; the bound keeps b*b*C far from overflow. */
    if (b <= 0 || b > 4096)
        return mpx_kernel_error(c, MPX_E_INVALID, "blocksize %lld is out of range (1..4096)",
                                (long long)b);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (H % b || W % b)
        return mpx_kernel_error(c, MPX_E_SHAPE, "%lldx%lld does not divide by blocksize %lld",
                                (long long)H, (long long)W, (long long)b);
    int64_t dims[4] = {N, C * b * b, H / b, W / b};
    /* Output channel (i*b + j)*C + c takes x[n][c][h*b + i][w*b + j]. */
    if ((st = alloc_whole(c, &out[0], x, 4, dims)) != MPX_OK) return st;
    if (out[0].n == 0) return MPX_OK;
    view v = {.rank = 6, .base = 0, .dims = {N, b, b, C, H / b, W / b}};
    int64_t s[6] = {C * H * W, W, 1, H * W, b * W, b};
    memcpy(v.str, s, sizeof s);
    copy_view(&out[0], x, &v);
    return MPX_OK;
}

/* CenterCropPad: each dim of `axes` (all by default) cut or zero-padded to
 * the matching `shape` value around its centre (the odd unit at the end:
 * cut start (d - t) / 2, pad before (t - d) / 2, as ONNX's function). */
mpx_status mpx_k_center_crop_pad(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    mpx_status st = need(c, in, n_in, 2, n_out, 1);
    if (st != MPX_OK) return st;
    const mpx_value *x = in[0], *sh = in[1];
    if (!sh->i) return mpx_kernel_error(c, MPX_E_INVALID, "shape must be integers");
    const int64_t *ax;
    int na = mpx_node_attr_ints(c->node, "axes", &ax);
    if (!ax) na = x->rank;
    if (na != sh->n) return mpx_kernel_error(c, MPX_E_SHAPE, "shape has %lld values for %d axes", (long long)sh->n, na);
    int64_t od[MPX_MAX_RANK], shift[MPX_MAX_RANK] = {0};
    memcpy(od, x->dims, sizeof od);
    for (int i = 0; i < na; i++) {
        int64_t a = ax ? ax[i] : i;
        if (a < 0) a += x->rank;
        if (a < 0 || a >= x->rank)
            return mpx_kernel_error(c, MPX_E_INVALID, "axes[%d] is out of range for rank %d", i, x->rank);
        int64_t t = sh->i[i], d = x->dims[a];
        if (t < 0 || t > MPX_MAX_ELEMS) return mpx_kernel_error(c, MPX_E_SHAPE, "shape[%d] = %lld", i, (long long)t);
        od[a] = t;
        /* input coordinate = output coordinate + shift */
        shift[a] = d > t ? (d - t) / 2 : -((t - d) / 2);
    }
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, x->rank, od)) != MPX_OK) return st;
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t k = 0; k < out[0].n; k++) {
        int64_t src = 0;
        bool inside = true;
        for (int q = 0; q < x->rank && inside; q++) {
            int64_t p = co[q] + shift[q];
            inside = p >= 0 && p < x->dims[q];
            src = src * x->dims[q] + p;
        }
        if (inside) {
            if (x->f) out[0].f[k] = x->f[src];
            else out[0].i[k] = x->i[src];
        }
        for (int q = x->rank - 1; q >= 0; q--) {
            if (++co[q] < od[q]) break;
            co[q] = 0;
        }
    }
    return MPX_OK;
}
