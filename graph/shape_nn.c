/* shape_nn.c - the shapes of the network ops with arithmetic of their own:
 * windows (Conv, ConvTranspose, pools), dot products (Gemm, MatMul, Einsum)
 * and reductions. The table that dispatches to them is shape.c's. */
#include "shape_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- windows: Conv, ConvTranspose, pools --------------------------------------- */

/* The window geometry is graph/geom.c's (mpx_window_*), which the kernels
 * call too; errors get the node's name here. */
static mpx_status window_err(const mpx_sctx *c, const mpx_error *e) { return mpx_node_error(c, e->status, "%s", e->msg); }

static mpx_status window_of(const mpx_sctx *c, const mpx_tensor *x, const mpx_tensor *wt, mpx_window *w) {
    mpx_error e;
    if (mpx_window_read(c->n, x->rank, x->dims + 2, wt ? wt->dims + 2 : NULL, w, &e)) return window_err(c, &e);
    return MPX_OK;
}

static mpx_status spatial_rank(const mpx_sctx *c, const mpx_tensor *x) {
    if (x->rank < 3)
        return mpx_node_error(c, MPX_E_SHAPE,
                              "input \"%s\" has shape %s; expected N x C x spatial dims", x->name, mpx_sh_TS(x));
    return MPX_OK;
}

/* What Conv and ConvTranspose check first: input and weights present, of
 * one rank with spatial dims, and the group. *x NULL: a shape is unknown
 * (the output is set unknown). */
/* The element type of a product's output: int32 for the integer products,
 * y_zero_point's type (uint8 without one) for the QLinear ones, else the
 * input's. */
static mpx_dtype product_dt(const mpx_sctx *c, const mpx_tensor *x) {
    switch (c->n->op) {
    case MPX_OP_MatMulInteger: case MPX_OP_ConvInteger: return MPX_DT_INT32;
    case MPX_OP_QLinearMatMul: case MPX_OP_QLinearConv: {
        const mpx_tensor *zp = mpx_sh_in(c, 7);
        return zp && mpx_sh_dt(zp) != MPX_DT_UNDEFINED ? mpx_sh_dt(zp) : MPX_DT_UINT8;
    }
    default: return mpx_sh_dt(x);
    }
}

static mpx_status conv_inputs(mpx_sctx *c, const mpx_tensor **x, const mpx_tensor **w,
                              int64_t *group) {
    *x = NULL;
    int wi = mpx_node_weight_input(c->n);
    mpx_status st = mpx_sh_need(c, wi + 1);
    if (st) return st;
    const mpx_tensor *in = mpx_sh_in(c, 0), *wt = mpx_sh_in(c, wi);
    if (!mpx_sh_known(in) || !mpx_sh_known(wt)) return mpx_sh_set_out(c, 0, product_dt(c, in), NULL);
    if ((st = spatial_rank(c, in))) return st;
    if (wt->rank != in->rank)
        return mpx_node_error(c, MPX_E_SHAPE, "weights \"%s\" of shape %s do not match input %s",
                              wt->name, mpx_sh_TS(wt), mpx_sh_TS(in));
    *group = mpx_node_attr_int(c->n, "group", 1);
    if (*group < 1 || *group > MPX_MAX_ELEMS)
        return mpx_node_error(c, MPX_E_SHAPE, "group %lld", (long long)*group);
    *x = in;
    *w = wt;
    return MPX_OK;
}

mpx_status mpx_shape_conv(mpx_sctx *c) {
    const mpx_tensor *x, *w;
    int64_t group;
    mpx_status st = conv_inputs(c, &x, &w, &group);
    if (st || !x) return st;
    int64_t cin = x->dims[1], wc = w->dims[1], m = w->dims[0];
    if (cin >= 0 && wc >= 0 && cin != wc * group)
        return mpx_node_error(c, MPX_E_SHAPE,
                              "input \"%s\" has %lld channels (shape %s) but weights \"%s\" of shape %s "
                              "with group %lld expect %lld",
                              x->name, (long long)cin, mpx_sh_TS(x), w->name, mpx_sh_TS(w), (long long)group,
                              (long long)(wc * group));
    if (m >= 0 && m % group)
        return mpx_node_error(c, MPX_E_SHAPE, "%lld output channels do not divide into %lld groups",
                              (long long)m, (long long)group);
    int bi = mpx_node_bias_input(c->n);
    const mpx_tensor *b = bi >= 0 ? mpx_sh_in(c, bi) : NULL;
    if (mpx_sh_known(b) && m >= 0 && (b->rank != 1 || (b->dims[0] >= 0 && b->dims[0] != m)))
        return mpx_node_error(c, MPX_E_SHAPE, "bias \"%s\" of shape %s does not match %lld output channels",
                              b->name, mpx_sh_TS(b), (long long)m);
    mpx_window win;
    mpx_error e;
    if ((st = window_of(c, x, w, &win))) return st;
    if (mpx_window_out(&win, false, &e)) return window_err(c, &e);
    shp o = mpx_sh_shp_of(x);
    o.d[1] = m;
    o.s[1] = NULL;
    for (int i = 0; i < win.nsp; i++) {
        o.d[2 + i] = win.out[i];
        o.s[2 + i] = NULL; /* a new length, not the input's symbol */
    }
    return mpx_sh_set_out(c, 0, product_dt(c, x), &o);
}

mpx_status mpx_shape_conv_transpose(mpx_sctx *c) {
    const mpx_tensor *x, *w;
    int64_t group;
    mpx_status st = conv_inputs(c, &x, &w, &group);
    if (st || !x) return st;
    if (x->dims[1] >= 0 && w->dims[0] >= 0 && x->dims[1] != w->dims[0])
        return mpx_node_error(c, MPX_E_SHAPE,
                              "input \"%s\" has %lld channels (shape %s) but weights \"%s\" have shape %s",
                              x->name, (long long)x->dims[1], mpx_sh_TS(x), w->name, mpx_sh_TS(w));
    mpx_window win;
    mpx_error e;
    if ((st = window_of(c, x, w, &win))) return st;
    if (mpx_window_transpose_out(c->n, &win, &e)) return window_err(c, &e);
    shp o = mpx_sh_shp_of(x);
    o.d[1] = w->dims[1] >= 0 ? w->dims[1] * group : -1;
    o.s[1] = NULL;
    for (int i = 0; i < win.nsp; i++) {
        o.d[2 + i] = win.out[i];
        o.s[2 + i] = NULL;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_pool(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    if ((st = spatial_rank(c, x))) return st;
    mpx_window win;
    mpx_error e;
    if ((st = window_of(c, x, NULL, &win))) return st;
    if (mpx_window_out(&win, mpx_node_attr_int(c->n, "ceil_mode", 0) != 0, &e)) return window_err(c, &e);
    shp o = mpx_sh_shp_of(x);
    for (int i = 0; i < win.nsp; i++) {
        o.d[2 + i] = win.out[i];
        o.s[2 + i] = NULL;
    }
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o))) return st;
    return mpx_sh_set_out(c, 1, MPX_DT_INT64, &o); /* MaxPool's Indices */
}

mpx_status mpx_shape_global_pool(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    if ((st = spatial_rank(c, x))) return st;
    shp o = mpx_sh_shp_of(x);
    for (int i = 2; i < o.rank; i++) {
        o.d[i] = 1;
        o.s[i] = NULL;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* ---- dot products ---------------------------------------------------------------- */

mpx_status mpx_shape_gemm(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *a = mpx_sh_in(c, 0), *b = mpx_sh_in(c, 1);
    if (!mpx_sh_known(a) || !mpx_sh_known(b)) return mpx_sh_set_out(c, 0, mpx_sh_dt(a), NULL);
    if (a->rank != 2 || b->rank != 2)
        return mpx_node_error(c, MPX_E_SHAPE, "A %s and B %s must both be matrices", mpx_sh_TS(a), mpx_sh_TS(b));
    bool ta = mpx_node_attr_int(c->n, "transA", 0) != 0, tb = mpx_node_attr_int(c->n, "transB", 0) != 0;
    shp sa = mpx_sh_shp_of(a), sb = mpx_sh_shp_of(b);
    int64_t ka = sa.d[ta ? 0 : 1], kb = sb.d[tb ? 1 : 0];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return mpx_node_error(c, MPX_E_SHAPE,
                              "inner dims differ: A %s (transA %d) and B %s (transB %d)", mpx_sh_S(&sa), ta,
                              mpx_sh_S(&sb), tb);
    shp o = mpx_sh_shp_rank(2);
    o.d[0] = sa.d[ta ? 1 : 0];
    o.s[0] = sa.s[ta ? 1 : 0];
    o.d[1] = sb.d[tb ? 0 : 1];
    o.s[1] = sb.s[tb ? 0 : 1];
    const mpx_tensor *cc = mpx_sh_in(c, 2);
    if (mpx_sh_known(cc)) {
        shp sc = mpx_sh_shp_of(cc), r;
        if ((st = mpx_sh_bcast2(c, &o, &sc, &r))) return st;
        if (r.rank != 2 || (r.d[0] >= 0 && o.d[0] >= 0 && r.d[0] != o.d[0]) ||
            (r.d[1] >= 0 && o.d[1] >= 0 && r.d[1] != o.d[1]))
            return mpx_node_error(c, MPX_E_SHAPE, "C %s does not broadcast to %s", mpx_sh_S(&sc), mpx_sh_S(&o));
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(a), &o);
}

mpx_status mpx_shape_matmul(mpx_sctx *c) {
    int wi = mpx_node_weight_input(c->n);
    mpx_status st = mpx_sh_need(c, wi + 1);
    if (st) return st;
    const mpx_tensor *a = mpx_sh_in(c, 0), *b = mpx_sh_in(c, wi);
    if (!mpx_sh_known(a) || !mpx_sh_known(b)) return mpx_sh_set_out(c, 0, product_dt(c, a), NULL);
    if (a->rank < 1 || b->rank < 1)
        return mpx_node_error(c, MPX_E_SHAPE, "operands %s and %s must not be scalars", mpx_sh_TS(a), mpx_sh_TS(b));
    shp sa = mpx_sh_shp_of(a), sb = mpx_sh_shp_of(b);
    if (c->n->op == MPX_OP_FusedMatMul) { /* ORT's MatMul with transposed operands */
        if (mpx_node_attr_int(c->n, "transBatchA", 0) || mpx_node_attr_int(c->n, "transBatchB", 0))
            return mpx_node_error(c, MPX_E_UNSUPPORTED, "transBatchA/transBatchB are not supported");
        shp *t[2] = {&sa, &sb};
        const char *attr[2] = {"transA", "transB"};
        for (int k = 0; k < 2; k++)
            if (mpx_node_attr_int(c->n, attr[k], 0) && t[k]->rank >= 2) {
                int r = t[k]->rank;
                int64_t d = t[k]->d[r - 1];
                const char *s = t[k]->s[r - 1];
                t[k]->d[r - 1] = t[k]->d[r - 2], t[k]->s[r - 1] = t[k]->s[r - 2];
                t[k]->d[r - 2] = d, t[k]->s[r - 2] = s;
            }
    }
    /* 1-D operands: a vector is a 1xK row on the left, a Kx1 column on the right. */
    bool va = sa.rank == 1, vb = sb.rank == 1;
    if (va) {
        sa.rank = 2;
        sa.d[1] = sa.d[0];
        sa.s[1] = sa.s[0];
        sa.d[0] = 1;
        sa.s[0] = NULL;
    }
    if (vb) {
        sb.rank = 2;
        sb.d[1] = 1;
        sb.s[1] = NULL;
    }
    int64_t ka = sa.d[sa.rank - 1], kb = sb.d[sb.rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return mpx_node_error(c, MPX_E_SHAPE, "inner dims differ: %s times %s", mpx_sh_TS(a), mpx_sh_TS(b));
    shp ba = sa, bb = sb, bo;
    ba.rank -= 2;
    bb.rank -= 2;
    if ((st = mpx_sh_bcast2(c, &ba, &bb, &bo)))
        return mpx_node_error(c, MPX_E_SHAPE, "batch dims do not broadcast: %s times %s", mpx_sh_TS(a), mpx_sh_TS(b));
    shp o = bo;
    if (!va) {
        o.d[o.rank] = sa.d[sa.rank - 2];
        o.s[o.rank++] = sa.s[sa.rank - 2];
    }
    if (!vb) {
        o.d[o.rank] = sb.d[sb.rank - 1];
        o.s[o.rank++] = sb.s[sb.rank - 1];
    }
    return mpx_sh_set_out(c, 0, product_dt(c, a), &o);
}

/* Einsum: the equation is graph/geom.c's (mpx_einsum_parse), which the
 * kernel reads too. *ok false: an input's shape is unknown. */
static mpx_status einsum_of(const mpx_node *n, mpx_einsum *e, bool *ok, mpx_error *err) {
    const char *eq = mpx_node_attr_string(n, "equation", NULL);
    if (!eq) return mpx_error_set(err, MPX_E_INVALID, "attribute equation is required");
    int ranks[MPX_EINSUM_MAX_IN];
    const int64_t *dims[MPX_EINSUM_MAX_IN];
    int n_in = n->n_inputs;
    for (int k = 0; k < n_in && k < MPX_EINSUM_MAX_IN; k++) {
        const mpx_tensor *x = n->inputs[k];
        bool known = x && x->rank >= 0;
        ranks[k] = known ? x->rank : -1;
        dims[k] = known ? x->dims : NULL;
    }
    return mpx_einsum_parse(eq, n_in, ranks, dims, e, ok, err);
}

int64_t mpx_einsum_terms(const mpx_node *n) {
    mpx_einsum e;
    mpx_error err;
    bool ok;
    if (einsum_of(n, &e, &ok, &err) != MPX_OK || !ok) return -1;
    /* Saturates like the other cost figures. */
    int64_t total = 1;
    for (int id = 0; id < MPX_EINSUM_LABELS; id++) {
        if (e.size[id] == -2) continue;
        if (e.size[id] < 0) return -1;
        if (!mpx_sh_mul(total, e.size[id], &total)) total = INT64_MAX;
    }
    return total;
}

mpx_status mpx_shape_einsum(mpx_sctx *c) {
    mpx_einsum e;
    mpx_error err;
    bool ok;
    if (einsum_of(c->n, &e, &ok, &err)) return mpx_node_error(c, err.status, "%s", err.msg);
    if (!ok) return mpx_sh_set_out(c, 0, mpx_sh_dt(mpx_sh_in(c, 0)), NULL);
    shp o = mpx_sh_shp_rank(e.n_out);
    for (int k = 0; k < e.n_out; k++) {
        int id = e.out_label[k];
        o.d[k] = e.size[id];
        o.s[k] = NULL;
        if (id < 52 || o.d[k] >= 0) continue;
        /* An unknown "..." dim keeps the symbolic name its inputs agree on
         * (shape's own concern: values have no symbols). */
        bool first = true;
        for (int i = 0; i < e.n_in; i++)
            for (int p = 0; p < e.in_rank[i]; p++) {
                const mpx_tensor *x = c->n->inputs[i];
                if (e.in_label[i][p] != id || x->dims[p] == 1) continue;
                const char *sym = x->sym[p];
                if (first) o.s[k] = sym, first = false;
                else if (!sym || !o.s[k] || strcmp(sym, o.s[k]) != 0) o.s[k] = NULL;
            }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(mpx_sh_in(c, 0)), &o);
}

/* ---- reductions ----------------------------------------------------------------- */

mpx_status mpx_shape_reduce(mpx_sctx *c) {
    const mpx_tensor *x;
    int64_t axes[LIST_MAX];
    int na, v;
    mpx_status st = mpx_sh_axes_arg(c, &x, axes, &na, &v);
    if (st) return st;
    bool keep = mpx_node_attr_int(c->n, "keepdims", 1) != 0;
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp o = mpx_sh_shp_of(x);
    if (v == V_UNKNOWN) {
        if (!keep) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
        for (int i = 0; i < o.rank; i++) o.d[i] = -1;
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    bool mask[MPX_MAX_RANK] = {false};
    if (na == 0) {
        /* noop_with_empty_axes exists only where axes is an input. */
        if (mpx_node_attr_int(c->n, "noop_with_empty_axes", 0)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
        for (int i = 0; i < o.rank; i++) mask[i] = true;
    }
    for (int i = 0; i < na; i++) {
        int ax;
        if ((st = mpx_sh_norm_axis(c, axes[i], x->rank, "axis", x, &ax))) return st;
        mask[ax] = true;
    }
    shp r = mpx_sh_shp_rank(0);
    for (int i = 0; i < o.rank; i++) {
        if (!mask[i]) {
            r.d[r.rank] = o.d[i];
            r.s[r.rank++] = o.s[i];
        } else if (keep) {
            r.s[r.rank] = NULL;
            r.d[r.rank++] = 1;
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &r);
}

mpx_status mpx_shape_argreduce(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, MPX_DT_INT64, NULL);
    int ax;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", 0), x->rank, "axis", x, &ax))) return st;
    shp o = mpx_sh_shp_of(x);
    if (mpx_node_attr_int(c->n, "keepdims", 1)) {
        o.d[ax] = 1;
        o.s[ax] = NULL;
    } else {
        for (int i = ax; i + 1 < o.rank; i++) {
            o.d[i] = o.d[i + 1];
            o.s[i] = o.s[i + 1];
        }
        o.rank--;
    }
    return mpx_sh_set_out(c, 0, MPX_DT_INT64, &o);
}


/* LSTM, GRU, RNN: X [seq, batch, input] (layout 1: [batch, seq, input]);
 * Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]),
 * Y_h (and LSTM's Y_c) [dirs, batch, hidden] (layout 1: [batch, dirs,
 * hidden]). hidden_size may be omitted: R's last dimension says it. */
mpx_status mpx_shape_rnn(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *r = mpx_sh_in(c, 2);
    const char *dir = mpx_node_attr_string(c->n, "direction", "forward");
    int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
        return mpx_node_error(c, MPX_E_INVALID, "direction \"%s\" is not forward, reverse or bidirectional", dir);
    int64_t layout = mpx_node_attr_int(c->n, "layout", 0);
    if (layout != 0 && layout != 1) return mpx_node_error(c, MPX_E_INVALID, "layout %lld is not 0 or 1", (long long)layout);
    int64_t hidden = mpx_node_attr_int(c->n, "hidden_size", -1);
    if (hidden < 0 && mpx_sh_known(r) && r->rank == 3) hidden = r->dims[2];
    if (mpx_sh_known(x) && x->rank != 3)
        return mpx_node_error(c, MPX_E_SHAPE, "input X has shape %s; rank 3 expected", mpx_sh_TS(x));
    int64_t seq = -1, batch = -1;
    const char *sseq = NULL, *sbatch = NULL;
    if (mpx_sh_known(x)) {
        seq = x->dims[layout ? 1 : 0];
        batch = x->dims[layout ? 0 : 1];
        sseq = x->sym[layout ? 1 : 0];
        sbatch = x->sym[layout ? 0 : 1];
    }
    shp y = mpx_sh_shp_rank(4), h = mpx_sh_shp_rank(3);
    int64_t yd[4] = {seq, dirs, batch, hidden}, hd[3] = {dirs, batch, hidden};
    const char *ys[4] = {sseq, NULL, sbatch, NULL}, *hs[3] = {NULL, sbatch, NULL};
    if (layout) {
        yd[0] = batch, yd[1] = seq, yd[2] = dirs, ys[0] = sbatch, ys[1] = sseq, ys[2] = NULL;
        hd[0] = batch, hd[1] = dirs, hs[0] = sbatch, hs[1] = NULL;
    }
    for (int i = 0; i < 4; i++) y.d[i] = yd[i], y.s[i] = ys[i];
    for (int i = 0; i < 3; i++) h.d[i] = hd[i], h.s[i] = hs[i];
    mpx_dtype dt = mpx_sh_dt(x);
    if ((st = mpx_sh_set_out(c, 0, dt, &y))) return st;
    for (int i = 1; i < c->n->n_outputs && !st; i++) st = mpx_sh_set_out(c, i, dt, &h);
    return st;
}

/* GridSample: [N, C, Ho, Wo] from X [N, C, H, W] and grid [N, Ho, Wo, 2]. */
mpx_status mpx_shape_grid_sample(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *g = mpx_sh_in(c, 1);
    if (!mpx_sh_known(x) || !mpx_sh_known(g)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    if (x->rank != 4 || g->rank != 4)
        return mpx_node_error(c, MPX_E_SHAPE, "X %s and grid %s: 2-D sampling needs rank 4 for both", mpx_sh_TS(x), mpx_sh_TS(g));
    shp o = mpx_sh_shp_of(x), gs = mpx_sh_shp_of(g);
    o.d[2] = gs.d[1], o.s[2] = gs.s[1];
    o.d[3] = gs.d[2], o.s[3] = gs.s[2];
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* SkipLayerNormalization, SkipSimplifiedLayerNormalization (com.microsoft):
 * output and input_skip_bias_sum shaped as the input; mean and inv_std_var
 * with the last dim 1. */
mpx_status mpx_shape_skip_norm(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s = mpx_sh_shp_of(x), m = s;
    if (m.rank > 0) m.d[m.rank - 1] = 1, m.s[m.rank - 1] = NULL;
    for (int i = 0; i < c->n->n_outputs && !st; i++)
        st = mpx_sh_set_out(c, i, mpx_sh_dt(x), i == 1 || i == 2 ? &m : &s);
    return st;
}

/* SimplifiedLayerNormalization (ORT): Y shaped as X, the optional
 * inv_std_var with the normalised dims (axis..end) 1. */
mpx_status mpx_shape_simplified_norm(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s = mpx_sh_shp_of(x), m = s;
    int64_t ax = mpx_node_attr_int(c->n, "axis", -1);
    if (m.rank > 0 && (ax < -m.rank || ax >= m.rank))
        return mpx_node_error(c, MPX_E_INVALID, "axis %lld is out of range for X %s", (long long)ax, mpx_sh_TS(x));
    if (ax < 0) ax += m.rank;
    for (int i = (int)ax; i < m.rank; i++) m.d[i] = 1, m.s[i] = NULL;
    for (int i = 0; i < c->n->n_outputs && !st; i++) st = mpx_sh_set_out(c, i, mpx_sh_dt(x), i == 1 ? &m : &s);
    return st;
}

/* MaxUnpool: X's shape with each spatial dim (in - 1) * stride + kernel -
 * pads, or the output_shape input's value when given. */
mpx_status mpx_shape_max_unpool(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *os = mpx_sh_in(c, 2);
    if (os) {
        int64_t v[MPX_MAX_RANK];
        int n;
        if (mpx_sh_ints_of(os, v, MPX_MAX_RANK, &n) != V_KNOWN) {
            shp u = os->rank == 1 && os->dims[0] >= 0 && os->dims[0] <= MPX_MAX_RANK
                        ? mpx_sh_shp_rank((int)os->dims[0]) : mpx_sh_shp_unknown();
            return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &u);
        }
        shp o = mpx_sh_shp_rank(n);
        for (int i = 0; i < n; i++) o.d[i] = v[i];
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    if ((st = spatial_rank(c, x))) return st;
    mpx_window win;
    if ((st = window_of(c, x, NULL, &win))) return st;
    shp o = mpx_sh_shp_of(x);
    for (int i = 0; i < win.nsp; i++) {
        o.s[2 + i] = NULL;
        o.d[2 + i] = mpx_window_unpool_len(&win, i);
        if (x->dims[2 + i] >= 0 && o.d[2 + i] < 1)
            return mpx_node_error(c, MPX_E_SHAPE, "spatial dim %d: the output length %lld is not positive", i,
                                  (long long)o.d[2 + i]);
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* Unique: Y is X flattened (no axis) or X with the axis dim, holding the
 * distinct values or slices (how many is data); indices and counts one per
 * distinct one; inverse_indices one per element or slice of X. */
mpx_status mpx_shape_unique(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    const mpx_attr *ax = mpx_node_attr(c->n, "axis");
    shp y = mpx_sh_shp_rank(1), inv = mpx_sh_shp_rank(1), one = mpx_sh_shp_rank(1);
    if (!mpx_sh_known(x)) {
        if (ax) y = mpx_sh_shp_unknown();
    } else if (ax) {
        int a;
        if ((st = mpx_sh_norm_axis(c, ax->i, x->rank, "axis", x, &a))) return st;
        y = mpx_sh_shp_of(x);
        y.d[a] = -1, y.s[a] = NULL;
        inv.d[0] = x->dims[a];
    } else {
        inv.d[0] = x->nelem;
    }
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), &y))) return st;
    if ((st = mpx_sh_set_out(c, 1, MPX_DT_INT64, &one))) return st;
    if ((st = mpx_sh_set_out(c, 2, MPX_DT_INT64, &inv))) return st;
    return mpx_sh_set_out(c, 3, MPX_DT_INT64, &one);
}

/* RoiAlign: (num_rois, C, output_height, output_width). */
mpx_status mpx_shape_roi_align(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *r = mpx_sh_in(c, 1);
    int64_t oh = mpx_node_attr_int(c->n, "output_height", 1), ow = mpx_node_attr_int(c->n, "output_width", 1);
    if (oh < 1 || ow < 1 || oh > MPX_MAX_ELEMS || ow > MPX_MAX_ELEMS)
        return mpx_node_error(c, MPX_E_INVALID, "output_height %lld and output_width %lld must be positive",
                              (long long)oh, (long long)ow);
    if (mpx_sh_known(x) && x->rank != 4)
        return mpx_node_error(c, MPX_E_SHAPE, "X has shape %s; N x C x H x W expected", mpx_sh_TS(x));
    if (mpx_sh_known(r) && (r->rank != 2 || (r->dims[1] >= 0 && r->dims[1] != 4)))
        return mpx_node_error(c, MPX_E_SHAPE, "rois has shape %s; num_rois x 4 expected", mpx_sh_TS(r));
    shp o = mpx_sh_shp_rank(4);
    if (mpx_sh_known(r)) o.d[0] = r->dims[0], o.s[0] = r->sym[0];
    if (mpx_sh_known(x)) o.d[1] = x->dims[1], o.s[1] = x->sym[1];
    o.d[2] = oh, o.d[3] = ow;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* MatMulNBits (com.microsoft): A [.., K] -> [.., N]; B must be
 * [N, ceil(K / block_size), block_size * bits / 8]. */
mpx_status mpx_shape_matmul_nbits(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *a = mpx_sh_in(c, 0), *b = mpx_sh_in(c, 1);
    int64_t K = mpx_node_attr_int(c->n, "K", -1), N = mpx_node_attr_int(c->n, "N", -1);
    int64_t bits = mpx_node_attr_int(c->n, "bits", 4), bs = mpx_node_attr_int(c->n, "block_size", -1);
    if (K < 1 || N < 1 || K > MPX_MAX_ELEMS || N > MPX_MAX_ELEMS)
        return mpx_node_error(c, MPX_E_INVALID, "attributes K (%lld) and N (%lld) must be positive", (long long)K,
                              (long long)N);
    if ((bits != 2 && bits != 4 && bits != 8) || bs < 16 || bs > 65536 || (bs & (bs - 1)))
        return mpx_node_error(c, MPX_E_INVALID, "bits %lld must be 2, 4 or 8 and block_size %lld a power of 2 from 16",
                              (long long)bits, (long long)bs);
    int64_t blocks = (K + bs - 1) / bs, blob = bs * bits / 8;
    if (mpx_sh_known(b) && (b->rank != 3 || (b->dims[0] >= 0 && b->dims[0] != N) ||
                            (b->dims[1] >= 0 && b->dims[1] != blocks) || (b->dims[2] >= 0 && b->dims[2] != blob)))
        return mpx_node_error(c, MPX_E_SHAPE, "B has shape %s; [%lld, %lld, %lld] expected (N, K blocks, bytes a block)",
                              mpx_sh_TS(b), (long long)N, (long long)blocks, (long long)blob);
    if (!mpx_sh_known(a)) return mpx_sh_set_out(c, 0, mpx_sh_dt(a), NULL);
    if (a->rank < 1 || (a->dims[a->rank - 1] >= 0 && a->dims[a->rank - 1] != K))
        return mpx_node_error(c, MPX_E_SHAPE, "A has shape %s; its last dim must be K = %lld", mpx_sh_TS(a),
                              (long long)K);
    shp o = mpx_sh_shp_of(a);
    o.d[o.rank - 1] = N, o.s[o.rank - 1] = NULL;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(a), &o);
}

/* Attention (ONNX, opset 23; com.microsoft's BERT form) and
 * MultiHeadAttention (com.microsoft): Y and the present key/value (and ONNX's
 * qk_matmul_output) from the inputs' dims; a dim that depends on an unknown
 * one stays unknown. */
static int64_t dm(const mpx_tensor *t, int i) {
    return t && t->rank > i && i >= 0 ? t->dims[i] : -1;
}
static int64_t dsum(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a + b; }
static int64_t dmul(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a * b; }
static int64_t ddiv(int64_t a, int64_t b) { return a < 0 || b <= 0 ? -1 : a / b; }

static mpx_status set_dims(mpx_sctx *c, int i, mpx_dtype dt, int rank, const int64_t *d) {
    shp o = mpx_sh_shp_rank(rank);
    for (int k = 0; k < rank; k++) o.d[k] = d[k];
    return mpx_sh_set_out(c, i, dt, &o);
}

mpx_status mpx_shape_attention(mpx_sctx *c) {
    bool ms = c->n->domain && strcmp(c->n->domain, "com.microsoft") == 0;
    mpx_status st = mpx_sh_need(c, c->n->op == MPX_OP_MultiHeadAttention ? 1 : ms ? 2 : 3);
    if (st) return st;
    const mpx_tensor *q = mpx_sh_in(c, 0), *k = mpx_sh_in(c, 1), *v = mpx_sh_in(c, 2);
    mpx_dtype dt = mpx_sh_dt(q);
    if (c->n->op == MPX_OP_Attention && !ms) {
        const mpx_tensor *pk = mpx_sh_in(c, 4);
        int64_t P = pk ? dm(pk, 2) : 0;
        if (mpx_sh_known(q) && q->rank == 4) {
            int64_t T = dsum(P, dm(k, 2)), y[4] = {dm(q, 0), dm(q, 1), dm(q, 2), dm(v, 3)};
            int64_t pkd[4] = {dm(q, 0), dm(k, 1), T, dm(k, 3)}, pvd[4] = {dm(q, 0), dm(v, 1), T, dm(v, 3)};
            int64_t qk[4] = {dm(q, 0), dm(q, 1), dm(q, 2), T};
            if ((st = set_dims(c, 0, dt, 4, y)) || (st = set_dims(c, 1, dt, 4, pkd)) || (st = set_dims(c, 2, dt, 4, pvd)))
                return st;
            return set_dims(c, 3, dt, 4, qk);
        }
        int64_t hq = mpx_node_attr_int(c->n, "q_num_heads", 0), hkv = mpx_node_attr_int(c->n, "kv_num_heads", 0);
        if (!mpx_sh_known(q) || q->rank != 3 || hq < 1 || hkv < 1) {
            for (int i = 0; i < 4 && !st; i++) st = mpx_sh_set_out(c, i, dt, NULL);
            return st;
        }
        int64_t T = dsum(P, dm(k, 1)), dv = ddiv(dm(v, 2), hkv);
        int64_t y[3] = {dm(q, 0), dm(q, 1), dmul(hq, dv)};
        int64_t pkd[4] = {dm(q, 0), hkv, T, ddiv(dm(k, 2), hkv)}, pvd[4] = {dm(q, 0), hkv, T, dv};
        int64_t qk[4] = {dm(q, 0), hq, dm(q, 1), T};
        if ((st = set_dims(c, 0, dt, 3, y)) || (st = set_dims(c, 1, dt, 4, pkd)) || (st = set_dims(c, 2, dt, 4, pvd)))
            return st;
        return set_dims(c, 3, dt, 4, qk);
    }
    int64_t N = mpx_node_attr_int(c->n, "num_heads", 0);
    if (N < 1) return mpx_node_error(c, MPX_E_INVALID, "attribute num_heads (at least 1) is required");
    if (c->n->op == MPX_OP_MultiHeadAttention) {
        const mpx_tensor *pk = mpx_sh_in(c, 6);
        int64_t P = pk ? dm(pk, 2) : 0, H = ddiv(dm(q, 2), N);
        int64_t T = dsum(P, k && k->rank == 4 ? dm(k, 2) : dm(k, 1));
        int64_t dv = v && v->rank == 4 ? dm(v, 3) : ddiv(dm(v, 2), N);
        int64_t y[3] = {dm(q, 0), dm(q, 1), dmul(N, dv)}, pkd[4] = {dm(q, 0), N, T, H}, pvd[4] = {dm(q, 0), N, T, dv};
        if ((st = set_dims(c, 0, dt, 3, y)) || (st = set_dims(c, 1, dt, 4, pkd))) return st;
        return set_dims(c, 2, dt, 4, pvd);
    }
    /* com.microsoft Attention: input [B, S, D_in], weights [D_in, Dq + Dk + Dv] */
    const mpx_tensor *w = k, *past = mpx_sh_in(c, 4);
    const int64_t *qkv;
    int nq = mpx_node_attr_ints(c->n, "qkv_hidden_sizes", &qkv);
    int64_t hq = qkv && nq == 3 ? qkv[0] : ddiv(dm(w, 1), 3), hv = qkv && nq == 3 ? qkv[2] : hq;
    int64_t T = dsum(past ? dm(past, 3) : 0, dm(q, 1));
    int64_t y[3] = {dm(q, 0), dm(q, 1), hv}, pr[5] = {2, dm(q, 0), N, T, ddiv(hq, N)};
    if ((st = set_dims(c, 0, dt, 3, y))) return st;
    return set_dims(c, 1, dt, 5, pr);
}

/* GroupQueryAttention (com.microsoft): Y [B, S, num_heads * H]; the present
 * caches [B, kv_num_heads, max(past buffer, total_sequence_length), H]. */
mpx_status mpx_shape_gqa(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *q = mpx_sh_in(c, 0), *k = mpx_sh_in(c, 1), *pk = mpx_sh_in(c, 3), *ts = mpx_sh_in(c, 6);
    int64_t N = mpx_node_attr_int(c->n, "num_heads", 0), KV = mpx_node_attr_int(c->n, "kv_num_heads", 0);
    if (N < 1 || KV < 1 || N % KV)
        return mpx_node_error(c, MPX_E_INVALID, "num_heads %lld must be a multiple of kv_num_heads %lld", (long long)N,
                              (long long)KV);
    int64_t H = ddiv(dm(q, 2), k ? N : N + 2 * KV), tot = -1;
    if (ts && ts->i64 && ts->nelem == 1) tot = ts->i64[0];
    int64_t pb = pk ? dm(pk, 2) : 0, tp = tot < 0 || pb < 0 ? -1 : tot > pb ? tot : pb;
    int64_t y[3] = {dm(q, 0), dm(q, 1), dmul(N, H)}, p[4] = {dm(q, 0), KV, tp, H};
    mpx_dtype dt = mpx_sh_dt(q);
    if ((st = set_dims(c, 0, dt, 3, y)) || (st = set_dims(c, 1, dt, 4, p))) return st;
    return set_dims(c, 2, dt, 4, p);
}
