/* shape_ops.c - shape functions of the data-movement and shape-computing
 * families (Resize ... NonZero); the rest, the table and the driver are in
 * shape.c. Same rules: attribute when the node has it, input otherwise. */
#include "shape_internal.h"

#include <math.h>
#include <string.h>

/* ---- data movement and shape computation ------------------------------------------ */

mpx_status mpx_shape_resize(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    bool upsample = c->n->op == MPX_OP_Upsample;
    /* Resize-10 and Upsample-9 take scales as input 1; Resize-11+ takes
     * (roi, scales, sizes); Upsample-7 has a scales attribute. An empty
     * tensor stands for an omitted input. */
    const mpx_tensor *scales = upsample || mpx_sh_opset(c) <= 10 ? mpx_sh_in(c, 1) : mpx_sh_in(c, 2);
    const mpx_tensor *sizes = upsample || mpx_sh_opset(c) <= 10 ? NULL : mpx_sh_in(c, 3);
    if (scales && scales->nelem == 0) scales = NULL;
    if (sizes && sizes->nelem == 0) sizes = NULL;
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp o = mpx_sh_shp_of(x);
    float fs[LIST_MAX];
    int64_t is[LIST_MAX];
    int n = 0, v;
    const mpx_attr *sa = upsample ? mpx_node_attr(c->n, "scales") : NULL;
    bool by_sizes = false;
    if (sa && sa->type == MPX_ATTR_FLOATS) {
        v = sa->n <= LIST_MAX ? V_KNOWN : V_UNKNOWN;
        n = sa->n;
        for (int i = 0; i < n && v == V_KNOWN; i++) fs[i] = sa->floats[i];
    } else if (sizes) {
        v = mpx_sh_ints_of(sizes, is, LIST_MAX, &n);
        by_sizes = true;
    } else if (scales) {
        v = mpx_sh_floats_of(scales, fs, LIST_MAX, &n);
    } else {
        return mpx_node_error(c, MPX_E_SHAPE, "neither scales nor sizes is given");
    }
    /* The lengths are graph/geom.c's (mpx_resize_geom), which the kernel
     * computes with too; unknown values leave the resized axes unknown. */
    mpx_resize_geometry gm;
    mpx_error e;
    bool legacy = upsample || mpx_sh_opset(c) <= 10;
    if (v != V_KNOWN) {
        if (mpx_resize_axes(c->n, legacy, x->rank, gm.axes, &gm.na, &e)) return mpx_node_error(c, e.status, "%s", e.msg);
        for (int i = 0; i < gm.na; i++) o.d[gm.axes[i]] = -1, o.s[gm.axes[i]] = NULL;
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if (mpx_resize_geom(c->n, legacy, upsample, x->rank, x->dims, by_sizes ? NULL : fs, by_sizes ? is : NULL, n, &gm,
                        &e))
        return mpx_node_error(c, e.status, "%s", e.msg);
    for (int i = 0; i < gm.na; i++) {
        int a = gm.axes[i];
        o.d[a] = gm.out[a];
        if (o.d[a] >= 0 || x->dims[a] != o.d[a]) o.s[a] = NULL;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_concat(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    const mpx_attr *aa = mpx_node_attr(c->n, "axis");
    if (!aa) return mpx_node_error(c, MPX_E_INVALID, "attribute axis is required");
    for (int i = 0; i < c->n->n_inputs; i++)
        if (!mpx_sh_known(mpx_sh_in(c, i))) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    int r = x->rank, ax;
    if (r == 0) return mpx_node_error(c, MPX_E_SHAPE, "cannot concatenate scalars");
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", 0), r, "axis", x, &ax))) return st;
    shp o = mpx_sh_shp_of(x);
    for (int i = 1; i < c->n->n_inputs; i++) {
        const mpx_tensor *t = mpx_sh_in(c, i);
        if (!t) continue;
        if (t->rank != r)
            return mpx_node_error(c, MPX_E_SHAPE, "input %d \"%s\" of shape %s has a different rank from %s",
                                  i, t->name, mpx_sh_TS(t), mpx_sh_TS(x));
        for (int k = 0; k < r; k++) {
            int64_t d = t->dims[k];
            if (k == ax) {
                o.d[k] = o.d[k] < 0 || d < 0 ? -1 : o.d[k] + d;
                o.s[k] = NULL;
            } else if (o.d[k] < 0) {
                if (d >= 0) o.d[k] = d;
            } else if (d >= 0 && d != o.d[k]) {
                return mpx_node_error(c, MPX_E_SHAPE,
                                      "input %d \"%s\" of shape %s differs from %s in dim %d (axis is %d)", i,
                                      t->name, mpx_sh_TS(t), mpx_sh_TS(x), k, ax);
            }
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_split(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int nout = c->n->n_outputs;
    if (!mpx_sh_known(x)) {
        for (int i = 0; i < nout; i++)
            if ((st = mpx_sh_set_out(c, i, mpx_sh_dt(x), NULL))) return st;
        return MPX_OK;
    }
    int ax;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", 0), x->rank, "axis", x, &ax))) return st;
    int64_t d = x->dims[ax], sizes[LIST_MAX];
    int ns;
    int v = mpx_sh_list_arg(c, "split", 1, sizes, LIST_MAX, &ns);
    if (v == V_KNOWN && ns > 0) {
        if (ns != nout)
            return mpx_node_error(c, MPX_E_SHAPE, "split has %d values for %d outputs", ns, nout);
        int64_t sum = 0;
        for (int i = 0; i < ns; i++) {
            if (sizes[i] < 0) return mpx_node_error(c, MPX_E_SHAPE, "split size %lld", (long long)sizes[i]);
            if (!mpx_sh_add(sum, sizes[i], &sum))
                return mpx_node_error(c, MPX_E_SHAPE, "split sizes add up to more than %lld",
                                      (long long)INT64_MAX);
        }
        if (d >= 0 && sum != d)
            return mpx_node_error(c, MPX_E_SHAPE, "split sizes add up to %lld but axis %d of %s is %lld",
                                  (long long)sum, ax, mpx_sh_TS(x), (long long)d);
    } else if (v == V_UNKNOWN || d < 0) {
        for (int i = 0; i < nout; i++) sizes[i] = -1;
    } else {
        int64_t parts = mpx_node_attr_int(c->n, "num_outputs", nout);
        if (parts != nout || nout < 1)
            return mpx_node_error(c, MPX_E_SHAPE, "num_outputs %lld but %d outputs", (long long)parts, nout);
        if (mpx_node_attr(c->n, "num_outputs")) {
            /* Opset 18: the last chunk may be smaller. */
            int64_t chunk = (d + nout - 1) / nout;
            for (int i = 0; i < nout; i++) {
                int64_t left = d - chunk * i;
                sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
            }
        } else {
            if (d % nout)
                return mpx_node_error(c, MPX_E_SHAPE, "axis %d of %s (%lld) does not split into %d equal parts",
                                      ax, mpx_sh_TS(x), (long long)d, nout);
            for (int i = 0; i < nout; i++) sizes[i] = d / nout;
        }
    }
    for (int i = 0; i < nout; i++) {
        shp o = mpx_sh_shp_of(x);
        o.d[ax] = sizes[i];
        o.s[ax] = NULL;
        if ((st = mpx_sh_set_out(c, i, mpx_sh_dt(x), &o))) return st;
    }
    return MPX_OK;
}

mpx_status mpx_shape_reshape(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *s = mpx_sh_in(c, 1);
    int64_t v[LIST_MAX];
    int n;
    int kind = mpx_sh_list_arg(c, "shape", 1, v, LIST_MAX, &n);
    if (kind == V_ABSENT) return mpx_node_error(c, MPX_E_INVALID, "no shape input");
    if (kind == V_UNKNOWN) {
        /* The target's rank is known from the length of the shape tensor. */
        if (mpx_sh_known(s) && s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= MPX_MAX_RANK) {
            shp o = mpx_sh_shp_rank((int)s->dims[0]);
            return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
        }
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    }
    if ((st = mpx_sh_check_rank(c, n))) return st;
    bool allowzero = mpx_node_attr_int(c->n, "allowzero", 0) != 0;
    shp xs = mpx_sh_shp_of(x), o = mpx_sh_shp_rank(n);
    int infer = -1;
    for (int i = 0; i < n; i++) {
        if (v[i] == 0 && !allowzero) {
            if (xs.rank >= 0 && i >= xs.rank)
                return mpx_node_error(c, MPX_E_SHAPE, "shape[%d] is 0 (copy) but input \"%s\" has shape %s", i,
                                      x->name, mpx_sh_S(&xs));
            o.d[i] = xs.rank >= 0 ? xs.d[i] : -1;
            o.s[i] = xs.rank >= 0 ? xs.s[i] : NULL;
        } else if (v[i] == -1) {
            if (infer >= 0)
                return mpx_node_error(c, MPX_E_SHAPE, "shape has more than one -1");
            infer = i;
        } else if (v[i] < 0) {
            return mpx_node_error(c, MPX_E_SHAPE, "shape[%d] is %lld", i, (long long)v[i]);
        } else {
            o.d[i] = v[i];
        }
    }
    char want[160]; /* the target as asked, before -1 is resolved */
    mpx_dims_str(n, o.d, want, sizeof want);
    int64_t rest = 1;
    bool rest_known = true;
    for (int i = 0; i < n; i++) {
        if (i == infer) continue;
        if (o.d[i] < 0) rest_known = false;
        else if (o.d[i] && rest > MPX_MAX_ELEMS / o.d[i])
            return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o); /* reports the element limit */
        else rest *= o.d[i];
    }
    int64_t total = x ? x->nelem : -1;
    if (xs.rank < 0) total = -1;
    if (infer >= 0) {
        if (total >= 0 && rest_known) {
            if (rest == 0 || total % rest)
                return mpx_node_error(c, MPX_E_SHAPE, "cannot reshape %s (%lld elements) to %s", mpx_sh_S(&xs),
                                      (long long)total, want);
            o.d[infer] = total / rest;
        } else if (xs.rank >= 0) {
            /* Keep a symbolic name when the other dims are the input's own. */
            for (int k = 0; k < xs.rank && !o.s[infer]; k++) {
                bool used = false;
                for (int i = 0; i < n; i++) used |= i != infer && o.s[i] == xs.s[k] && xs.s[k];
                if (xs.d[k] < 0 && xs.s[k] && !used && rest_known) {
                    int64_t others = 1;
                    bool ok = true;
                    for (int j = 0; j < xs.rank; j++)
                        if (j != k) {
                            if (xs.d[j] < 0) ok = false;
                            else others *= xs.d[j];
                        }
                    if (ok && others == rest) o.s[infer] = xs.s[k];
                }
            }
        }
    } else if (total >= 0 && rest_known && rest != total) {
        return mpx_node_error(c, MPX_E_SHAPE, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                              mpx_sh_S(&xs), (long long)total, want, (long long)rest);
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_flatten(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    int r = x->rank;
    int64_t ax = mpx_node_attr_int(c->n, "axis", 1);
    if (ax < -r || ax > r)
        return mpx_node_error(c, MPX_E_SHAPE, "axis %lld is out of range for input \"%s\" of shape %s",
                              (long long)ax, x->name, mpx_sh_TS(x));
    if (ax < 0) ax += r;
    shp o = mpx_sh_shp_rank(2);
    mpx_error sub;
    if (mpx_dims_product((int)ax, x->dims, &o.d[0], &sub) ||
        mpx_dims_product(r - (int)ax, x->dims + ax, &o.d[1], &sub))
        return mpx_node_error(c, MPX_E_LIMIT, "%s", sub.msg);
    if (ax == 1 && x->dims[0] < 0) o.s[0] = x->sym[0];
    if (ax == r - 1 && x->dims[r - 1] < 0) o.s[1] = x->sym[r - 1];
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_transpose(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    int r = x->rank;
    const int64_t *perm;
    int np = mpx_node_attr_ints(c->n, "perm", &perm);
    if (perm && np != r)
        return mpx_node_error(c, MPX_E_SHAPE, "perm has %d values for input \"%s\" of shape %s", np, x->name,
                              mpx_sh_TS(x));
    bool seen[MPX_MAX_RANK] = {false};
    shp xs = mpx_sh_shp_of(x), o = mpx_sh_shp_rank(r);
    for (int i = 0; i < r; i++) {
        int64_t p = perm ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r || seen[p])
            return mpx_node_error(c, MPX_E_SHAPE, "perm is not a permutation of 0..%d", r - 1);
        seen[p] = true;
        o.d[i] = xs.d[p];
        o.s[i] = xs.s[p];
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_squeeze(mpx_sctx *c) {
    const mpx_tensor *x;
    int64_t axes[LIST_MAX];
    int na, v;
    mpx_status st = mpx_sh_axes_arg(c, &x, axes, &na, &v);
    if (st) return st;
    if (!mpx_sh_known(x) || v == V_UNKNOWN) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp xs = mpx_sh_shp_of(x), o = mpx_sh_shp_rank(0);
    bool drop[MPX_MAX_RANK] = {false};
    if (na == 0) {
        for (int i = 0; i < xs.rank; i++) {
            if (xs.d[i] < 0) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL); /* might be 1 */
            drop[i] = xs.d[i] == 1;
        }
    }
    for (int i = 0; i < na; i++) {
        int ax;
        if ((st = mpx_sh_norm_axis(c, axes[i], xs.rank, "axis", x, &ax))) return st;
        if (xs.d[ax] >= 0 && xs.d[ax] != 1)
            return mpx_node_error(c, MPX_E_SHAPE, "cannot squeeze axis %d of input \"%s\" of shape %s", ax,
                                  x->name, mpx_sh_S(&xs));
        drop[ax] = true;
    }
    for (int i = 0; i < xs.rank; i++)
        if (!drop[i]) {
            o.d[o.rank] = xs.d[i];
            o.s[o.rank++] = xs.s[i];
        }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_unsqueeze(mpx_sctx *c) {
    const mpx_tensor *x;
    int64_t axes[LIST_MAX];
    int na, v;
    mpx_status st = mpx_sh_axes_arg(c, &x, axes, &na, &v);
    if (st) return st;
    if (v == V_ABSENT) return mpx_node_error(c, MPX_E_INVALID, "axes are required");
    if (!mpx_sh_known(x) || v == V_UNKNOWN) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    int r = x->rank + na;
    if ((st = mpx_sh_check_rank(c, r))) return st;
    bool ins[MPX_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        if (axes[i] < -r || axes[i] >= r)
            return mpx_node_error(c, MPX_E_SHAPE, "axis %lld is out of range for output rank %d (input %s)",
                                  (long long)axes[i], r, mpx_sh_TS(x));
        int ax = (int)(axes[i] < 0 ? axes[i] + r : axes[i]);
        if (ins[ax]) return mpx_node_error(c, MPX_E_SHAPE, "axis %d is repeated", ax);
        ins[ax] = true;
    }
    shp xs = mpx_sh_shp_of(x), o = mpx_sh_shp_rank(r);
    for (int i = 0, k = 0; i < r; i++) {
        if (ins[i]) {
            o.d[i] = 1;
        } else {
            o.d[i] = xs.d[k];
            o.s[i] = xs.s[k++];
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_slice(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t starts[LIST_MAX], ends[LIST_MAX], axes[LIST_MAX], steps[LIST_MAX];
    int ns, ne, na, nst;
    int vs, ve, va, vst;
    if (mpx_node_attr(c->n, "starts") || mpx_sh_opset(c) < 10) {
        vs = mpx_sh_list_arg(c, "starts", -1, starts, LIST_MAX, &ns);
        ve = mpx_sh_list_arg(c, "ends", -1, ends, LIST_MAX, &ne);
        va = mpx_sh_list_arg(c, "axes", -1, axes, LIST_MAX, &na);
        vst = V_ABSENT;
        nst = 0;
    } else {
        vs = mpx_sh_ints_of(mpx_sh_in(c, 1), starts, LIST_MAX, &ns);
        ve = mpx_sh_ints_of(mpx_sh_in(c, 2), ends, LIST_MAX, &ne);
        va = mpx_sh_ints_of(mpx_sh_in(c, 3), axes, LIST_MAX, &na);
        vst = mpx_sh_ints_of(mpx_sh_in(c, 4), steps, LIST_MAX, &nst);
    }
    if (vs == V_ABSENT || ve == V_ABSENT) return mpx_node_error(c, MPX_E_INVALID, "starts and ends are required");
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp xs = mpx_sh_shp_of(x), o = xs;
    int r = xs.rank;
    if (vs == V_UNKNOWN || ve == V_UNKNOWN || va == V_UNKNOWN || vst == V_UNKNOWN) {
        /* Only the sliced axes become unknown, when the axes are known. */
        if (va == V_KNOWN) {
            for (int i = 0; i < na; i++) {
                int ax;
                if ((st = mpx_sh_norm_axis(c, axes[i], r, "axis", x, &ax))) return st;
                o.d[ax] = -1;
                o.s[ax] = NULL;
            }
        } else if (va == V_ABSENT && vs == V_UNKNOWN && mpx_sh_known(mpx_sh_in(c, 1)) && mpx_sh_in(c, 1)->rank == 1 &&
                   mpx_sh_in(c, 1)->dims[0] >= 0 && mpx_sh_in(c, 1)->dims[0] <= r) {
            /* No axes: the first len(starts) axes. */
            for (int i = 0; i < mpx_sh_in(c, 1)->dims[0]; i++) {
                o.d[i] = -1;
                o.s[i] = NULL;
            }
        } else {
            o = mpx_sh_shp_rank(r);
        }
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if (ne != ns || (va == V_KNOWN && na != ns) || (vst == V_KNOWN && nst != ns))
        return mpx_node_error(c, MPX_E_SHAPE, "starts, ends, axes and steps differ in length (%d, %d, %d, %d)",
                              ns, ne, va == V_KNOWN ? na : ns, vst == V_KNOWN ? nst : ns);
    bool seen[MPX_MAX_RANK] = {false};
    for (int i = 0; i < ns; i++) {
        int ax;
        if ((st = mpx_sh_norm_axis(c, va == V_KNOWN ? axes[i] : i, r, "axis", x, &ax))) return st;
        if (seen[ax]) return mpx_node_error(c, MPX_E_SHAPE, "axis %d is repeated", ax);
        seen[ax] = true;
        int64_t step = vst == V_KNOWN ? steps[i] : 1;
        if (step == 0) return mpx_node_error(c, MPX_E_SHAPE, "step 0 on axis %d", ax);
        int64_t d = xs.d[ax];
        if (d < 0) {
            o.d[ax] = -1;
            o.s[ax] = NULL;
            continue;
        }
        int64_t start;
        o.d[ax] = mpx_slice_axis(d, starts[i], ends[i], step, &start);
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_gather(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *idx = mpx_sh_in(c, 1);
    if (!mpx_sh_known(x) || !mpx_sh_known(idx)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    if (x->rank == 0) return mpx_node_error(c, MPX_E_SHAPE, "cannot gather from a scalar \"%s\"", x->name);
    int ax;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", 0), x->rank, "axis", x, &ax))) return st;
    int r = x->rank - 1 + idx->rank;
    if ((st = mpx_sh_check_rank(c, r))) return st;
    shp xs = mpx_sh_shp_of(x), is = mpx_sh_shp_of(idx), o = mpx_sh_shp_rank(0);
    for (int i = 0; i < ax; i++) {
        o.d[o.rank] = xs.d[i];
        o.s[o.rank++] = xs.s[i];
    }
    for (int i = 0; i < is.rank; i++) {
        o.d[o.rank] = is.d[i];
        o.s[o.rank++] = is.s[i];
    }
    for (int i = ax + 1; i < xs.rank; i++) {
        o.d[o.rank] = xs.d[i];
        o.s[o.rank++] = xs.s[i];
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_gather_elements(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *idx = mpx_sh_in(c, 1);
    if (!mpx_sh_known(x) || !mpx_sh_known(idx)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    if (x->rank != idx->rank)
        return mpx_node_error(c, MPX_E_SHAPE, "indices %s and data %s differ in rank", mpx_sh_TS(idx), mpx_sh_TS(x));
    int ax;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", 0), x->rank, "axis", x, &ax))) return st;
    shp o = mpx_sh_shp_of(idx);
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* GatherND: indices.shape[:-1] + data.shape[batch_dims + k:], k the
 * indices' last dim. */
mpx_status mpx_shape_gather_nd(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *idx = mpx_sh_in(c, 1);
    if (!mpx_sh_known(x) || !mpx_sh_known(idx) || idx->rank < 1 || idx->dims[idx->rank - 1] < 0)
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    int64_t b = mpx_node_attr_int(c->n, "batch_dims", 0), k = idx->dims[idx->rank - 1];
    if (b < 0 || b >= idx->rank || k < 1 || b + k > x->rank)
        return mpx_node_error(c, MPX_E_SHAPE, "batch_dims %lld and index length %lld do not fit data %s",
                              (long long)b, (long long)k, mpx_sh_TS(x));
    shp xs = mpx_sh_shp_of(x), is = mpx_sh_shp_of(idx), o = mpx_sh_shp_rank(0);
    for (int i = 0; i < is.rank - 1; i++) {
        o.d[o.rank] = is.d[i];
        o.s[o.rank++] = is.s[i];
    }
    for (int i = (int)(b + k); i < xs.rank; i++) {
        if ((st = mpx_sh_check_rank(c, o.rank + 1))) return st;
        o.d[o.rank] = xs.d[i];
        o.s[o.rank++] = xs.s[i];
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_pad(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t pads[LIST_MAX], axes[LIST_MAX];
    int np, na;
    int v = mpx_sh_list_arg(c, "pads", 1, pads, LIST_MAX, &np);
    int va = mpx_sh_ints_of(mpx_sh_in(c, 3), axes, LIST_MAX, &na);
    if (v == V_ABSENT) return mpx_node_error(c, MPX_E_INVALID, "pads are required");
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp o = mpx_sh_shp_of(x);
    int r = o.rank;
    if (v == V_UNKNOWN || va == V_UNKNOWN) {
        o = mpx_sh_shp_rank(r);
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if (va == V_ABSENT) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na)
        return mpx_node_error(c, MPX_E_SHAPE, "pads has %d values for %d axes of input \"%s\" of shape %s", np,
                              na, x->name, mpx_sh_TS(x));
    for (int i = 0; i < na; i++) {
        int ax;
        if ((st = mpx_sh_norm_axis(c, axes[i], r, "axis", x, &ax))) return st;
        if (o.d[ax] < 0) continue;
        int64_t nd;
        if (!mpx_sh_add(o.d[ax], pads[i], &nd) || !mpx_sh_add(nd, pads[i + na], &nd))
            return mpx_node_error(c, MPX_E_LIMIT, "pads %lld and %lld overflow axis %d of %s",
                                  (long long)pads[i], (long long)pads[i + na], ax, mpx_sh_TS(x));
        if (nd < 0)
            return mpx_node_error(c, MPX_E_SHAPE, "pads make axis %d of %s negative (%lld)", ax, mpx_sh_TS(x),
                                  (long long)nd);
        o.d[ax] = nd;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* Shape as a list of dims from a 1-D shape tensor. */
static int shape_arg(const mpx_sctx *c, int idx, shp *out) {
    int64_t v[LIST_MAX];
    int n;
    const mpx_tensor *s = mpx_sh_in(c, idx);
    int kind = mpx_sh_ints_of(s, v, LIST_MAX, &n);
    if (kind == V_KNOWN) {
        if (n > MPX_MAX_RANK) return V_ABSENT;
        *out = mpx_sh_shp_rank(n);
        for (int i = 0; i < n; i++) out->d[i] = v[i];
        return V_KNOWN;
    }
    *out = mpx_sh_shp_unknown();
    if (mpx_sh_known(s) && s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= MPX_MAX_RANK)
        *out = mpx_sh_shp_rank((int)s->dims[0]);
    return kind;
}

mpx_status mpx_shape_expand(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s, o, xs = mpx_sh_shp_of(x);
    int kind = shape_arg(c, 1, &s);
    if (kind == V_ABSENT) return mpx_node_error(c, MPX_E_UNSUPPORTED, "shape input too long");
    if (kind == V_KNOWN)
        for (int i = 0; i < s.rank; i++)
            if (s.d[i] < 0) return mpx_node_error(c, MPX_E_SHAPE, "shape[%d] is %lld", i, (long long)s.d[i]);
    if (kind == V_UNKNOWN && s.rank >= 0 && xs.rank >= 0) {
        /* Rank is known; a dim stays the input's only where the shape could be 1. */
        int r = s.rank > xs.rank ? s.rank : xs.rank;
        o = mpx_sh_shp_rank(r);
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if ((st = mpx_sh_bcast2(c, &xs, &s, &o))) return st;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_tile(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t rep[LIST_MAX];
    int n;
    int v = mpx_sh_ints_of(mpx_sh_in(c, 1), rep, LIST_MAX, &n);
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    shp o = mpx_sh_shp_of(x);
    if (v != V_KNOWN) {
        o = mpx_sh_shp_rank(o.rank);
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
    }
    if (n != o.rank)
        return mpx_node_error(c, MPX_E_SHAPE, "repeats has %d values for input \"%s\" of shape %s", n, x->name,
                              mpx_sh_TS(x));
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0) return mpx_node_error(c, MPX_E_SHAPE, "repeats[%d] is %lld", i, (long long)rep[i]);
        if (o.d[i] >= 0) {
            if (rep[i] && o.d[i] > MPX_MAX_ELEMS / rep[i])
                return mpx_node_error(c, MPX_E_LIMIT, "tiling %s by %lld exceeds the element limit", mpx_sh_TS(x),
                                      (long long)rep[i]);
            o.d[i] *= rep[i];
            if (rep[i] != 1) o.s[i] = NULL;
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

static mpx_status depth_space(mpx_sctx *c, bool to_space) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    if (x->rank != 4)
        return mpx_node_error(c, MPX_E_SHAPE, "input \"%s\" of shape %s is not 4-D", x->name, mpx_sh_TS(x));
    int64_t b = mpx_node_attr_int(c->n, "blocksize", 0);
    /* Bounded so that b * b neither overflows nor wraps to 0 (a division by zero). */
    if (b < 1 || b > MPX_MAX_ELEMS) return mpx_node_error(c, MPX_E_SHAPE, "blocksize %lld", (long long)b);
    int64_t bb = b * b;
    shp o = mpx_sh_shp_of(x);
    for (int i = 1; i < 4; i++) o.s[i] = NULL;
    if (to_space) {
        if (o.d[1] >= 0 && o.d[1] % bb)
            return mpx_node_error(c, MPX_E_SHAPE, "%lld channels do not divide by blocksize^2 = %lld",
                                  (long long)o.d[1], (long long)bb);
        o.d[1] = o.d[1] < 0 ? -1 : o.d[1] / bb;
        o.d[2] = o.d[2] < 0 ? -1 : o.d[2] * b;
        o.d[3] = o.d[3] < 0 ? -1 : o.d[3] * b;
    } else {
        for (int i = 2; i < 4; i++)
            if (o.d[i] >= 0 && o.d[i] % b)
                return mpx_node_error(c, MPX_E_SHAPE, "dim %d of %s does not divide by blocksize %lld", i, mpx_sh_TS(x),
                                      (long long)b);
        if (o.d[1] >= 0 && !mpx_sh_mul(o.d[1], bb, &o.d[1]))
            return mpx_node_error(c, MPX_E_LIMIT, "%s with blocksize %lld has too many channels", mpx_sh_TS(x),
                                  (long long)b);
        o.d[2] = o.d[2] < 0 ? -1 : o.d[2] / b;
        o.d[3] = o.d[3] < 0 ? -1 : o.d[3] / b;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

mpx_status mpx_shape_depth_to_space(mpx_sctx *c) { return depth_space(c, true); }
mpx_status mpx_shape_space_to_depth(mpx_sctx *c) { return depth_space(c, false); }

mpx_status mpx_shape_shape(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, MPX_DT_INT64, NULL);
    shp o = mpx_sh_shp_rank(1);
    o.d[0] = mpx_shape_op_range(c->n, x->rank, &c->shape_start);
    return mpx_sh_set_out(c, 0, MPX_DT_INT64, &o);
}

mpx_status mpx_shape_size(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    shp o = mpx_sh_shp_rank(0);
    return mpx_sh_set_out(c, 0, MPX_DT_INT64, &o);
}

mpx_status mpx_shape_cast(mpx_sctx *c) {
    bool like = c->n->op == MPX_OP_CastLike;
    mpx_status st = mpx_sh_need(c, like ? 2 : 1);
    if (st) return st;
    int64_t to = mpx_node_cast_to(c->n);
    if (like && to == MPX_DT_UNDEFINED)
        return mpx_node_error(c, MPX_E_INVALID, "the type of input 2 (target_type), which CastLike converts to, is unknown");
    if (!like) to = mpx_node_attr_int(c->n, "to", 0);
    if (to <= 0 || to >= MPX_DT_COUNT_)
        return mpx_node_error(c, MPX_E_INVALID, "attribute to (%lld) is not an element type", (long long)to);
    shp o = mpx_sh_shp_of(mpx_sh_in(c, 0));
    return mpx_sh_set_out(c, 0, (mpx_dtype)to, &o);
}

mpx_status mpx_shape_constant_of_shape(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_attr *a = mpx_node_attr(c->n, "value");
    mpx_dtype t = a && a->type == MPX_ATTR_TENSOR && a->t ? a->t->dtype : MPX_DT_FLOAT;
    shp s;
    int kind = shape_arg(c, 0, &s);
    if (kind == V_ABSENT) return mpx_sh_check_rank(c, MPX_MAX_RANK + 1);
    for (int i = 0; kind == V_KNOWN && i < s.rank; i++)
        if (s.d[i] < 0) return mpx_node_error(c, MPX_E_SHAPE, "shape[%d] is %lld", i, (long long)s.d[i]);
    return mpx_sh_set_out(c, 0, t, &s);
}

/* A one-element value in double, whatever it is held as. */
static double scalar(const mpx_tensor *t) {
    return t->f32 ? t->f32[0] : t->f64 ? t->f64[0] : (double)t->i64[0];
}

mpx_status mpx_shape_range(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *a = mpx_sh_in(c, 0), *b = mpx_sh_in(c, 1), *d = mpx_sh_in(c, 2);
    shp o = mpx_sh_shp_rank(1);
    if (a->nelem == 1 && b->nelem == 1 && d->nelem == 1 && (a->i64 || a->f32 || a->f64) &&
        (b->i64 || b->f32 || b->f64) && (d->i64 || d->f32 || d->f64)) {
        if (a->i64 && b->i64 && d->i64) {
            int64_t s = a->i64[0], l = b->i64[0], dl = d->i64[0];
            if (dl == 0) return mpx_node_error(c, MPX_E_SHAPE, "delta is 0");
            double n = ceil(((double)l - (double)s) / (double)dl);
            if (!(n < 9e18)) return mpx_node_error(c, MPX_E_LIMIT, "range too long");
            o.d[0] = n > 0 ? (int64_t)n : 0;
        } else {
            double s = scalar(a), l = scalar(b), dl = scalar(d);
            if (dl == 0) return mpx_node_error(c, MPX_E_SHAPE, "delta is 0");
            double n = ceil((l - s) / dl);
            if (!(n < 9e18)) return mpx_node_error(c, MPX_E_LIMIT, "range too long");
            o.d[0] = n > 0 ? (int64_t)n : 0;
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(a), &o);
}

/* EyeLike: the input's shape, dtype from the attribute (else the input's). */
mpx_status mpx_shape_eye_like(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    shp s = mpx_sh_shp_of(x);
    if (s.rank >= 0 && s.rank != 2) return mpx_node_error(c, MPX_E_SHAPE, "EyeLike needs a 2-D input, not %s", mpx_sh_TS(x));
    int64_t dt = mpx_node_attr_int(c->n, "dtype", mpx_sh_dt(x));
    if (dt < 0 || dt >= MPX_DT_COUNT_)
        return mpx_node_error(c, MPX_E_INVALID, "attribute dtype (%lld) is not an element type", (long long)dt);
    return mpx_sh_set_out(c, 0, (mpx_dtype)dt, &s);
}

/* OneHot: the indices' shape with depth inserted at axis; the values' dtype.
 * The depth is known when its value is. */
mpx_status mpx_shape_one_hot(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *idx = mpx_sh_in(c, 0), *depth = mpx_sh_in(c, 1), *vals = mpx_sh_in(c, 2);
    if (!mpx_sh_known(idx)) return mpx_sh_set_out(c, 0, mpx_sh_dt(vals), NULL);
    int r = idx->rank + 1, ax;
    if ((st = mpx_sh_check_rank(c, r))) return st;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", -1), r, "axis", idx, &ax))) return st;
    int64_t d = -1;
    if (depth->nelem == 1 && (depth->i64 || depth->f32 || depth->f64)) {
        double v = scalar(depth);
        if (!(v >= 1 && v <= (double)MPX_MAX_ELEMS))
            return mpx_node_error(c, MPX_E_SHAPE, "depth %g is not from 1 to %lld", v, (long long)MPX_MAX_ELEMS);
        d = (int64_t)v;
    }
    shp is = mpx_sh_shp_of(idx), o = mpx_sh_shp_rank(0);
    for (int i = 0, k = 0; i < r; i++) {
        if (i == ax) {
            o.d[o.rank] = d;
            o.s[o.rank++] = NULL;
        } else {
            o.d[o.rank] = is.d[k];
            o.s[o.rank++] = is.s[k++];
        }
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(vals), &o);
}

/* Compress: without axis a 1-D output, with it the input's rank; the
 * selected length is known only from the condition's values. */
mpx_status mpx_shape_compress(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *cond = mpx_sh_in(c, 1);
    const mpx_attr *a = mpx_node_attr(c->n, "axis");
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    int ax = -1;
    if (a && (st = mpx_sh_norm_axis(c, a->i, x->rank, "axis", x, &ax))) return st;
    int64_t kept = -1;
    if (cond->nelem >= 0 && cond->i64) {
        kept = 0;
        int64_t len = ax >= 0 ? x->dims[ax] : x->nelem;
        for (int64_t i = 0; i < cond->nelem && (len < 0 || i < len); i++) kept += cond->i64[i] != 0;
    }
    shp o = ax >= 0 ? mpx_sh_shp_of(x) : mpx_sh_shp_rank(1);
    o.d[ax >= 0 ? ax : 0] = kept;
    o.s[ax >= 0 ? ax : 0] = NULL;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the targets' shape
 * with reduction none, else a scalar; SoftmaxCrossEntropyLoss's second
 * output (log_prob) has the scores' shape. */
mpx_status mpx_shape_loss(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *t = mpx_sh_in(c, 1);
    const char *red = mpx_node_attr_string(c->n, "reduction", "mean");
    if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0)
        return mpx_node_error(c, MPX_E_INVALID, "reduction \"%s\" is not none, sum or mean", red);
    shp o = strcmp(red, "none") == 0 ? mpx_sh_shp_of(t) : mpx_sh_shp_rank(0);
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o))) return st;
    if (c->n->n_outputs > 1) {
        shp s = mpx_sh_shp_of(x);
        st = mpx_sh_set_out(c, 1, mpx_sh_dt(x), &s);
    }
    return st;
}

/* Det: the batch axes of [..., M, M]. */
mpx_status mpx_shape_det(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    if (x->rank < 2) return mpx_node_error(c, MPX_E_SHAPE, "Det needs rank 2 or more, not %s", mpx_sh_TS(x));
    shp s = mpx_sh_shp_of(x);
    s.rank -= 2;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &s);
}

/* QuantizeLinear: x's shape in the zero point's type (uint8 without one);
 * DequantizeLinear: x's shape in the scale's float type. */
mpx_status mpx_shape_quantize(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *zp = mpx_sh_in(c, 2);
    shp s = mpx_sh_shp_of(x);
    mpx_dtype dt = c->n->op == MPX_OP_DequantizeLinear ? mpx_sh_dt(mpx_sh_in(c, 1)) : zp ? mpx_sh_dt(zp) : MPX_DT_UINT8;
    return mpx_sh_set_out(c, 0, dt, &s);
}

/* DynamicQuantizeLinear: y (x's shape, uint8), y_scale (float), y_zero_point (uint8). */
mpx_status mpx_shape_dynamic_quantize(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    shp s = mpx_sh_shp_of(mpx_sh_in(c, 0)), scalar = mpx_sh_shp_rank(0);
    if ((st = mpx_sh_set_out(c, 0, MPX_DT_UINT8, &s))) return st;
    if (c->n->n_outputs > 1 && (st = mpx_sh_set_out(c, 1, MPX_DT_FLOAT, &scalar))) return st;
    if (c->n->n_outputs > 2) st = mpx_sh_set_out(c, 2, MPX_DT_UINT8, &scalar);
    return st;
}

/* HannWindow, HammingWindow, BlackmanWindow: [size], of output_datatype
 * (default float); the length is known when size is. */
mpx_status mpx_shape_window(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *n = mpx_sh_in(c, 0);
    shp o = mpx_sh_shp_rank(1);
    if (n->nelem == 1 && n->i64) {
        if (n->i64[0] < 0) return mpx_node_error(c, MPX_E_SHAPE, "size %lld is negative", (long long)n->i64[0]);
        o.d[0] = n->i64[0];
    }
    int64_t dt = mpx_node_attr_int(c->n, "output_datatype", MPX_DT_FLOAT);
    if (dt <= 0 || dt >= MPX_DT_COUNT_)
        return mpx_node_error(c, MPX_E_INVALID, "attribute output_datatype (%lld) is not an element type", (long long)dt);
    return mpx_sh_set_out(c, 0, (mpx_dtype)dt, &o);
}

mpx_status mpx_shape_topk(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t kv[LIST_MAX];
    int nk;
    const mpx_attr *ka = mpx_node_attr(c->n, "k");
    int v = ka ? V_KNOWN : mpx_sh_ints_of(mpx_sh_in(c, 1), kv, LIST_MAX, &nk);
    if (ka) kv[0] = mpx_node_attr_int(c->n, "k", 0);
    else if (v == V_KNOWN && nk != 1) return mpx_node_error(c, MPX_E_SHAPE, "K has %d values", nk);
    if (v == V_ABSENT) return mpx_node_error(c, MPX_E_INVALID, "K is required");
    if (!mpx_sh_known(x)) {
        if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL))) return st;
        return mpx_sh_set_out(c, 1, MPX_DT_INT64, NULL);
    }
    int ax;
    if ((st = mpx_sh_norm_axis(c, mpx_node_attr_int(c->n, "axis", -1), x->rank, "axis", x, &ax))) return st;
    shp o = mpx_sh_shp_of(x);
    o.s[ax] = NULL;
    if (v == V_KNOWN) {
        if (kv[0] < 0 || (o.d[ax] >= 0 && kv[0] > o.d[ax]))
            return mpx_node_error(c, MPX_E_SHAPE, "k = %lld but axis %d of \"%s\" (%s) has %lld elements",
                                  (long long)kv[0], ax, x->name, mpx_sh_TS(x), (long long)o.d[ax]);
        o.d[ax] = kv[0];
    } else {
        o.d[ax] = -1;
    }
    if ((st = mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o))) return st;
    return mpx_sh_set_out(c, 1, MPX_DT_INT64, &o);
}

mpx_status mpx_shape_nonzero(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    if (!mpx_sh_known(x)) return mpx_sh_set_out(c, 0, MPX_DT_INT64, NULL);
    shp o = mpx_sh_shp_rank(2);
    o.d[0] = x->rank;
    return mpx_sh_set_out(c, 0, MPX_DT_INT64, &o);
}


/* NonMaxSuppression: selected_indices [num_selected, 3] (batch, class, box),
 * num_selected known only when the graph runs. */
mpx_status mpx_shape_nms(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    int64_t cpb = mpx_node_attr_int(c->n, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return mpx_node_error(c, MPX_E_INVALID, "center_point_box %lld is not 0 or 1", (long long)cpb);
    shp o = mpx_sh_shp_rank(2);
    o.d[1] = 3;
    return mpx_sh_set_out(c, 0, MPX_DT_INT64, &o);
}

/* If, as the ONNX loader flattens it: [cond, then outputs..., else
 * outputs...]. A condition known at load (folded) picks its branch's shapes;
 * otherwise each output has the dims both branches agree on, the others
 * unknown (which branch runs is data). */
mpx_status mpx_shape_if(mpx_sctx *c) {
    int k = c->n->n_outputs;
    if (c->n->n_inputs != 1 + 2 * k)
        return mpx_node_error(c, MPX_E_INVALID,
                              "an If reads its condition and the outputs of both branches (%d inputs for %d outputs, "
                              "not %d); the ONNX loader makes it from then_branch and else_branch",
                              c->n->n_inputs, k, 1 + 2 * k);
    mpx_status st = mpx_sh_need(c, 1);
    if (st) return st;
    int pick = mpx_node_if_pick(c->n);
    for (int j = 0; j < k && !st; j++) {
        const mpx_tensor *a = mpx_sh_in(c, 1 + j), *b = mpx_sh_in(c, 1 + k + j);
        if (pick >= 0 || !a || !b) {
            const mpx_tensor *t = pick == 1 || !a ? b : a;
            shp s = t ? mpx_sh_shp_of(t) : mpx_sh_shp_unknown();
            st = mpx_sh_set_out(c, j, t ? mpx_sh_dt(t) : MPX_DT_UNDEFINED, &s);
            continue;
        }
        shp sa = mpx_sh_shp_of(a), sb = mpx_sh_shp_of(b), o = mpx_sh_shp_unknown();
        if (sa.rank >= 0 && sa.rank == sb.rank) {
            o = mpx_sh_shp_rank(sa.rank);
            for (int d = 0; d < sa.rank; d++)
                if (sa.d[d] == sb.d[d]) o.d[d] = sa.d[d], o.s[d] = sa.s[d];
        }
        mpx_dtype dt = mpx_sh_dt(a) != MPX_DT_UNDEFINED ? mpx_sh_dt(a) : mpx_sh_dt(b);
        st = mpx_sh_set_out(c, j, dt, &o);
    }
    return st;
}

/* A scalar integer input's value (1 element), or -1 when absent/unknown. */
static int64_t scalar_int(const mpx_tensor *t) {
    int64_t v[1];
    int n;
    return mpx_sh_ints_of(t, v, 1, &n) == V_KNOWN && n == 1 ? v[0] : -1;
}

/* DFT: the input with the transform axis dft_length long (dft_length / 2 + 1
 * when onesided) and the last dim 2 (real, imaginary). The axis: attribute
 * (opset 17, default 1) or input 2 (opset 20, default -2). */
mpx_status mpx_shape_dft(mpx_sctx *c) {
    mpx_status st;
    const mpx_tensor *x = mpx_sh_in0_known(c, &st);
    if (!x) return st;
    if (x->rank < 2 || (x->dims[x->rank - 1] >= 0 && x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return mpx_node_error(c, MPX_E_SHAPE, "input %s: the last dim must be 1 (real) or 2 (complex)", mpx_sh_TS(x));
    int64_t ax = mpx_sh_opset(c) >= 20 ? (mpx_sh_in(c, 2) ? scalar_int(mpx_sh_in(c, 2)) : -2)
                                       : mpx_node_attr_int(c->n, "axis", 1);
    if (mpx_sh_opset(c) >= 20 && mpx_sh_in(c, 2) && ax == -1 && !mpx_sh_in(c, 2)->i64) {
        shp u = mpx_sh_shp_rank(x->rank);
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &u);
    }
    int a;
    if ((st = mpx_sh_norm_axis(c, ax, x->rank, "axis", x, &a))) return st;
    if (a == x->rank - 1) return mpx_node_error(c, MPX_E_INVALID, "axis %lld is the real/imaginary dim", (long long)ax);
    int64_t n = mpx_sh_in(c, 1) ? scalar_int(mpx_sh_in(c, 1)) : x->dims[a];
    bool onesided = mpx_node_attr_int(c->n, "onesided", 0) != 0;
    shp o = mpx_sh_shp_of(x);
    o.d[a] = n < 0 ? -1 : onesided ? n / 2 + 1 : n, o.s[a] = NULL;
    o.d[x->rank - 1] = 2, o.s[x->rank - 1] = NULL;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* STFT: [batch, frames, bins, 2]; frames (length - frame_length) /
 * frame_step + 1, bins frame_length (/ 2 + 1 when onesided, the default). */
mpx_status mpx_shape_stft(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *w = mpx_sh_in(c, 2);
    int64_t step = scalar_int(mpx_sh_in(c, 1));
    int64_t fl = mpx_sh_in(c, 3) ? scalar_int(mpx_sh_in(c, 3)) : mpx_sh_known(w) && w->rank == 1 ? w->dims[0] : -1;
    bool onesided = mpx_node_attr_int(c->n, "onesided", 1) != 0;
    shp o = mpx_sh_shp_rank(4);
    if (mpx_sh_known(x) && x->rank != 3)
        return mpx_node_error(c, MPX_E_SHAPE, "signal %s must be [batch, length, 1 or 2]", mpx_sh_TS(x));
    if (mpx_sh_known(x)) o.d[0] = x->dims[0], o.s[0] = x->sym[0];
    int64_t len = mpx_sh_known(x) ? x->dims[1] : -1;
    if (len >= 0 && step > 0 && fl > 0) {
        if (fl > len)
            return mpx_node_error(c, MPX_E_SHAPE, "frame_length %lld is longer than the signal (%lld)", (long long)fl,
                                  (long long)len);
        o.d[1] = (len - fl) / step + 1;
    }
    if (fl > 0) o.d[2] = onesided ? fl / 2 + 1 : fl;
    o.d[3] = 2;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of output_datatype. */
mpx_status mpx_shape_mel(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 5);
    if (st) return st;
    int64_t bins = scalar_int(mpx_sh_in(c, 0)), n = scalar_int(mpx_sh_in(c, 1));
    shp o = mpx_sh_shp_rank(2);
    if (n >= 0) o.d[0] = n / 2 + 1;
    if (bins >= 0) o.d[1] = bins;
    int64_t dt = mpx_node_attr_int(c->n, "output_datatype", MPX_DT_FLOAT);
    if (dt <= 0 || dt >= MPX_DT_COUNT_)
        return mpx_node_error(c, MPX_E_INVALID, "attribute output_datatype (%lld) is not an element type", (long long)dt);
    return mpx_sh_set_out(c, 0, (mpx_dtype)dt, &o);
}

/* ---- Loop and Scan: shapes through the body ---------------------------------------- */

/* Bind body input i to the shape (and dtype) of tensor t; false when t's
 * shape is unknown. */
static bool bind_like(mpx_graph *b, int i, const mpx_tensor *t, mpx_error *e) {
    if (t && (t->flags & MPX_T_SEQUENCE)) return true; /* a container: no shape */
    if (!t || t->rank < 0) return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k] < 0) return false;
    mpx_tensor *bi = b->inputs[i];
    if (bi->dtype == MPX_DT_UNDEFINED) bi->dtype = t->dtype;
    return mpx_graph_bind_input(b, bi->name, t->rank, t->dims, e) == MPX_OK;
}

static bool bind_scalar(mpx_graph *b, int i, mpx_dtype dt, mpx_error *e) {
    mpx_tensor *bi = b->inputs[i];
    if (bi->dtype == MPX_DT_UNDEFINED) bi->dtype = dt;
    return mpx_graph_bind_input(b, bi->name, 0, NULL, e) == MPX_OK;
}

/* Body inputs from `first` on are the enclosing graphs' tensors the body
 * reads: the node's inputs after its explicit ones. */
static bool bind_outer(mpx_sctx *c, mpx_graph *b, int first, mpx_error *e) {
    for (int i = first, j = c->n->n_explicit; i < b->n_inputs; i++, j++)
        if (!bind_like(b, i, j < c->n->n_inputs ? c->n->inputs[j] : NULL, e)) return false;
    return true;
}

/* Loop(M, cond, v...) -> (v_final..., scan outputs...); the body maps
 * (iter, cond, v...) to (cond, v..., scan...). Carried values keep the
 * dims the body keeps; a scan output gains a leading dim, the trip count
 * when M is known and no condition can stop the loop early, else unknown. */
mpx_status mpx_shape_loop(mpx_sctx *c) {
    mpx_node *n = c->n;
    mpx_graph *b = n->body;
    if (!b) return mpx_node_error(c, MPX_E_UNSUPPORTED, "a Loop without a body graph");
    int nv = n->n_explicit - 2;
    if (nv < 0 || b->n_inputs < 2 + nv || b->n_outputs < 1 + nv || n->n_outputs != b->n_outputs - 1)
        return mpx_node_error(c, MPX_E_INVALID, "the body has %d inputs and %d outputs; with %d loop-carried values "
                              "it needs %d inputs and 1 + %d + scan outputs, and the node one output each but the "
                              "condition (it has %d)", b->n_inputs, b->n_outputs, nv < 0 ? 0 : nv, 2 + (nv < 0 ? 0 : nv),
                              nv < 0 ? 0 : nv, n->n_outputs);
    mpx_error e = {0};
    bool ok = bind_scalar(b, 0, MPX_DT_INT64, &e) && bind_scalar(b, 1, MPX_DT_BOOL, &e);
    for (int i = 0; ok && i < nv; i++) ok = bind_like(b, 2 + i, n->inputs[2 + i], &e);
    ok = ok && bind_outer(c, b, 2 + nv, &e) && mpx_graph_infer(b, &e) == MPX_OK;
    const mpx_tensor *m = mpx_sh_in(c, 0), *cond = mpx_sh_in(c, 1);
    int64_t trip = -1;
    if (m && m->i64 && m->nelem == 1 && !cond) trip = m->i64[0] < 0 ? 0 : m->i64[0];
    mpx_status st = MPX_OK;
    for (int j = 0; j < n->n_outputs && !st; j++) {
        const mpx_tensor *bo = b->outputs[1 + j];
        mpx_dtype dt = bo->dtype != MPX_DT_UNDEFINED ? bo->dtype : j < nv ? mpx_sh_dt(n->inputs[2 + j]) : MPX_DT_UNDEFINED;
        if (n->outputs[j] && (bo->flags & MPX_T_SEQUENCE)) { /* a carried container */
            n->outputs[j]->flags |= bo->flags & (MPX_T_SEQUENCE | MPX_T_OPTIONAL | MPX_T_INNER_SEQ);
            st = mpx_sh_set_out(c, j, dt, NULL);
            continue;
        }
        if (!ok || bo->rank < 0) {
            st = mpx_sh_set_out(c, j, dt, NULL);
            continue;
        }
        shp s = mpx_sh_shp_of(bo);
        if (j < nv) {
            const mpx_tensor *vi = n->inputs[2 + j];
            for (int d = 0; d < s.rank; d++)
                if (!vi || vi->rank != s.rank || vi->dims[d] != s.d[d]) s.d[d] = -1, s.s[d] = NULL;
        } else {
            if (s.rank + 1 > MPX_MAX_RANK) return mpx_node_error(c, MPX_E_LIMIT, "scan output %d has rank above %d", j,
                                                                 MPX_MAX_RANK - 1);
            for (int d = s.rank; d > 0; d--) s.d[d] = s.d[d - 1], s.s[d] = s.s[d - 1];
            s.rank++, s.d[0] = trip, s.s[0] = NULL;
        }
        st = mpx_sh_set_out(c, j, dt, &s);
    }
    return st;
}

/* Scan(state..., scan inputs...) -> (final state..., scan outputs...): the
 * body maps (state..., one slice of each scan input) to (state..., one slice
 * of each scan output); the slices are taken along scan_input_axes (default
 * 0) and stacked along scan_output_axes. */
mpx_status mpx_shape_scan(mpx_sctx *c) {
    mpx_node *n = c->n;
    mpx_graph *b = n->body;
    if (!b) return mpx_node_error(c, MPX_E_UNSUPPORTED, "a Scan without a body graph");
    if (mpx_sh_opset(c) < 9) { /* Scan-8 (batched): shapes are the run's */
        mpx_status st = MPX_OK;
        for (int j = 0; j < n->n_outputs && !st; j++) st = mpx_sh_set_out(c, j, b->outputs[j]->dtype, NULL);
        return st;
    }
    int64_t ns = mpx_node_attr_int(c->n, "num_scan_inputs", -1);
    int nst = n->n_explicit - (int)ns;
    if (ns < 1 || nst < 0 || b->n_inputs < n->n_explicit || b->n_outputs != n->n_outputs || b->n_outputs < nst)
        return mpx_node_error(c, MPX_E_INVALID, "num_scan_inputs %lld does not fit %d inputs, a body of %d inputs and "
                              "%d outputs, and %d node outputs", (long long)ns, n->n_explicit, b->n_inputs,
                              b->n_outputs, n->n_outputs);
    int64_t in_ax[MPX_MAX_RANK * 8], out_ax[MPX_MAX_RANK * 8];
    int nsi = (int)ns, nso = b->n_outputs - nst;
    if (nsi > MPX_MAX_RANK * 8 || nso > MPX_MAX_RANK * 8) return mpx_node_error(c, MPX_E_LIMIT, "too many scan inputs");
    mpx_status st;
    if ((st = mpx_sh_ints_attr(c, "scan_input_axes", nsi, 0, in_ax)) ||
        (st = mpx_sh_ints_attr(c, "scan_output_axes", nso, 0, out_ax)))
        return st;
    mpx_error e = {0};
    bool ok = true;
    int64_t len = -1;
    for (int i = 0; ok && i < nst; i++) ok = bind_like(b, i, n->inputs[i], &e);
    for (int i = 0; ok && i < nsi; i++) {
        const mpx_tensor *x = n->inputs[nst + i];
        if (!x || x->rank < 1) {
            ok = false;
            break;
        }
        int64_t a = in_ax[i] < 0 ? in_ax[i] + x->rank : in_ax[i];
        if (a < 0 || a >= x->rank)
            return mpx_node_error(c, MPX_E_INVALID, "scan_input_axes[%d] = %lld is out of range for %s", i,
                                  (long long)in_ax[i], mpx_sh_TS(x));
        if (len >= 0 && x->dims[a] >= 0 && x->dims[a] != len)
            return mpx_node_error(c, MPX_E_SHAPE, "scan input %d has %lld slices along axis %lld, another %lld", i,
                                  (long long)x->dims[a], (long long)a, (long long)len);
        len = x->dims[a];
        shp sl = mpx_sh_shp_of(x);
        for (int d = (int)a; d < sl.rank - 1; d++) sl.d[d] = sl.d[d + 1];
        sl.rank--;
        for (int d = 0; ok && d < sl.rank; d++) ok = sl.d[d] >= 0;
        mpx_tensor *bi = b->inputs[nst + i];
        if (bi->dtype == MPX_DT_UNDEFINED) bi->dtype = x->dtype;
        ok = ok && mpx_graph_bind_input(b, bi->name, sl.rank, sl.d, &e) == MPX_OK;
    }
    ok = ok && bind_outer(c, b, n->n_explicit, &e) && mpx_graph_infer(b, &e) == MPX_OK;
    st = MPX_OK;
    for (int j = 0; j < n->n_outputs && !st; j++) {
        const mpx_tensor *bo = b->outputs[j];
        if (!ok || bo->rank < 0) {
            st = mpx_sh_set_out(c, j, bo->dtype, NULL);
            continue;
        }
        shp s = mpx_sh_shp_of(bo);
        if (j >= nst) {
            int64_t a = out_ax[j - nst] < 0 ? out_ax[j - nst] + s.rank + 1 : out_ax[j - nst];
            if (a < 0 || a > s.rank || s.rank + 1 > MPX_MAX_RANK)
                return mpx_node_error(c, MPX_E_INVALID, "scan_output_axes[%d] = %lld is out of range", j - nst,
                                      (long long)out_ax[j - nst]);
            for (int d = s.rank; d > a; d--) s.d[d] = s.d[d - 1], s.s[d] = s.s[d - 1];
            s.rank++, s.d[a] = len, s.s[a] = NULL;
        }
        st = mpx_sh_set_out(c, j, bo->dtype, &s);
    }
    return st;
}

/* CenterCropPad: the input with each dim of `axes` (all by default) set to
 * the matching value of `shape`. */
mpx_status mpx_shape_center_crop_pad(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t v[MPX_MAX_RANK];
    int nv;
    if (!mpx_sh_known(x) || mpx_sh_ints_of(mpx_sh_in(c, 1), v, MPX_MAX_RANK, &nv) != V_KNOWN) {
        shp u = mpx_sh_known(x) ? mpx_sh_shp_rank(x->rank) : mpx_sh_shp_unknown();
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &u);
    }
    const int64_t *ax;
    int na = mpx_node_attr_ints(c->n, "axes", &ax);
    if (!ax) na = x->rank;
    if (na != nv)
        return mpx_node_error(c, MPX_E_SHAPE, "shape has %d values for %d axes", nv, na);
    shp o = mpx_sh_shp_of(x);
    for (int i = 0; i < na; i++) {
        int a;
        if ((st = mpx_sh_norm_axis(c, ax ? ax[i] : i, x->rank, "axes", x, &a))) return st;
        if (v[i] < 0) return mpx_node_error(c, MPX_E_SHAPE, "shape[%d] = %lld is negative", i, (long long)v[i]);
        o.d[a] = v[i], o.s[a] = NULL;
    }
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* Col2Im: [N, C * prod(block_shape), L] -> [N, C, image_shape...]. */
mpx_status mpx_shape_col2im(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 3);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    int64_t img[MPX_MAX_RANK], blk[MPX_MAX_RANK];
    int ni, nb;
    if (!mpx_sh_known(x) || mpx_sh_ints_of(mpx_sh_in(c, 1), img, MPX_MAX_RANK - 2, &ni) != V_KNOWN ||
        mpx_sh_ints_of(mpx_sh_in(c, 2), blk, MPX_MAX_RANK - 2, &nb) != V_KNOWN)
        return mpx_sh_set_out(c, 0, mpx_sh_dt(x), NULL);
    if (x->rank != 3 || ni != nb || ni < 1)
        return mpx_node_error(c, MPX_E_SHAPE, "input %s must be [N, C x block, L] and image_shape and block_shape of "
                              "one length", mpx_sh_TS(x));
    int64_t bp = 1;
    for (int i = 0; i < nb; i++) bp *= blk[i] > 0 ? blk[i] : 1;
    shp o = mpx_sh_shp_rank(2 + ni);
    o.d[0] = x->dims[0], o.s[0] = x->sym[0];
    o.d[1] = x->dims[1] >= 0 ? x->dims[1] / bp : -1;
    for (int i = 0; i < ni; i++) o.d[2 + i] = img[i];
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* AffineGrid: size [N, C, H, W] -> [N, H, W, 2]; [N, C, D, H, W] -> [N, D, H, W, 3]. */
mpx_status mpx_shape_affine_grid(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *th = mpx_sh_in(c, 0);
    int64_t sz[MPX_MAX_RANK];
    int n;
    if (mpx_sh_ints_of(mpx_sh_in(c, 1), sz, MPX_MAX_RANK, &n) != V_KNOWN)
        return mpx_sh_set_out(c, 0, mpx_sh_dt(th), NULL);
    if (n != 4 && n != 5) return mpx_node_error(c, MPX_E_SHAPE, "size has %d values; 4 or 5 expected", n);
    shp o = mpx_sh_shp_rank(n);
    o.d[0] = sz[0];
    for (int i = 2; i < n; i++) o.d[i - 1] = sz[i];
    o.d[n - 1] = n - 2;
    return mpx_sh_set_out(c, 0, mpx_sh_dt(th), &o);
}

/* MaxRoiPool: [num_rois, C, pooled_shape...]. */
mpx_status mpx_shape_max_roi_pool(mpx_sctx *c) {
    mpx_status st = mpx_sh_need(c, 2);
    if (st) return st;
    const mpx_tensor *x = mpx_sh_in(c, 0), *r = mpx_sh_in(c, 1);
    int64_t ps[2];
    if ((st = mpx_sh_ints_attr(c, "pooled_shape", 2, -1, ps))) return st;
    if (ps[0] < 1 || ps[1] < 1) return mpx_node_error(c, MPX_E_INVALID, "pooled_shape must be two positive values");
    shp o = mpx_sh_shp_rank(4);
    if (mpx_sh_known(r)) o.d[0] = r->dims[0], o.s[0] = r->sym[0];
    if (mpx_sh_known(x)) o.d[1] = x->dims[1], o.s[1] = x->sym[1];
    o.d[2] = ps[0], o.d[3] = ps[1];
    return mpx_sh_set_out(c, 0, mpx_sh_dt(x), &o);
}

/* The random generators: RandomNormal/RandomUniform from the shape
 * attribute, the *Like forms and Bernoulli shaped as their input, each of
 * the dtype attribute (default float, the input's for *Like and Bernoulli);
 * Multinomial [batch, sample_size] of dtype (default int32). */
mpx_status mpx_shape_random(mpx_sctx *c) {
    mpx_op op = c->n->op;
    const mpx_tensor *x = mpx_sh_in(c, 0);
    bool from_input = op != MPX_OP_RandomNormal && op != MPX_OP_RandomUniform;
    mpx_status st = from_input ? mpx_sh_need(c, 1) : MPX_OK;
    if (st) return st;
    mpx_dtype dflt = op == MPX_OP_Multinomial ? MPX_DT_INT32 : from_input ? mpx_sh_dt(x) : MPX_DT_FLOAT;
    int64_t dt = mpx_node_attr_int(c->n, "dtype", (int64_t)dflt);
    if (dt < 0 || dt >= MPX_DT_COUNT_)
        return mpx_node_error(c, MPX_E_INVALID, "attribute dtype (%lld) is not an element type", (long long)dt);
    if (op == MPX_OP_Multinomial) {
        shp o = mpx_sh_shp_rank(2);
        if (mpx_sh_known(x)) o.d[0] = x->dims[0], o.s[0] = x->sym[0];
        o.d[1] = mpx_node_attr_int(c->n, "sample_size", 1);
        return mpx_sh_set_out(c, 0, (mpx_dtype)dt, &o);
    }
    if (from_input) {
        shp o = mpx_sh_shp_of(x);
        return mpx_sh_set_out(c, 0, (mpx_dtype)dt, mpx_sh_known(x) ? &o : NULL);
    }
    const int64_t *s;
    int r = mpx_node_attr_ints(c->n, "shape", &s);
    if (!s || r > MPX_MAX_RANK) return mpx_node_error(c, MPX_E_INVALID, "attribute shape (rank 0 to %d) is required", MPX_MAX_RANK);
    shp o = mpx_sh_shp_rank(r);
    for (int i = 0; i < r; i++) o.d[i] = s[i];
    return mpx_sh_set_out(c, 0, (mpx_dtype)dt, &o);
}

/* ---- sequences and optionals --------------------------------------------------------- */

/* Output i: a sequence (or optional) of dt tensors: flagged, so that no plan
 * gives it a format. */
static mpx_status set_seq(mpx_sctx *c, int i, mpx_dtype dt) {
    mpx_status st = mpx_sh_set_out(c, i, dt, NULL);
    if (!st && i < c->n->n_outputs && c->n->outputs[i]) c->n->outputs[i]->flags |= MPX_T_SEQUENCE;
    return st;
}

static bool is_seq_t(const mpx_tensor *t) { return t && (t->flags & MPX_T_SEQUENCE); }

mpx_status mpx_shape_seq(mpx_sctx *c) {
    const mpx_tensor *x = mpx_sh_in(c, 0);
    mpx_dtype dt = x ? mpx_sh_dt(x) : MPX_DT_UNDEFINED;
    shp scalar = mpx_sh_shp_rank(0);
    switch (c->n->op) {
    case MPX_OP_SequenceEmpty: {
        int64_t d = mpx_node_attr_int(c->n, "dtype", MPX_DT_FLOAT);
        if (d <= 0 || d >= MPX_DT_COUNT_) return mpx_node_error(c, MPX_E_INVALID, "dtype %lld is not an element type", (long long)d);
        return set_seq(c, 0, (mpx_dtype)d);
    }
    case MPX_OP_SequenceConstruct: case MPX_OP_SequenceInsert: case MPX_OP_SequenceErase:
    case MPX_OP_SplitToSequence: case MPX_OP_Optional: {
        if (c->n->op != MPX_OP_Optional && !x) return mpx_node_error(c, MPX_E_INVALID, "input 0 is required");
        mpx_status st = set_seq(c, 0, dt);
        if (!st && c->n->op == MPX_OP_Optional && c->n->outputs[0])
            c->n->outputs[0]->flags |= MPX_T_OPTIONAL | (is_seq_t(x) ? MPX_T_INNER_SEQ : 0u);
        return st;
    }
    case MPX_OP_SequenceLength: return mpx_sh_set_out(c, 0, MPX_DT_INT64, &scalar);
    case MPX_OP_OptionalHasElement: return mpx_sh_set_out(c, 0, MPX_DT_BOOL, &scalar);
    case MPX_OP_OptionalGetElement: {
        /* an optional's element: a tensor, or the sequence an Optional made
         * of one; a sequence given directly (opset 18) is handed on */
        const mpx_node *p = x ? x->producer : NULL;
        bool inner_seq = (x && (x->flags & MPX_T_INNER_SEQ)) ||
                         (p && p->op == MPX_OP_Optional && p->n_inputs > 0 && is_seq_t(p->inputs[0]));
        bool plain_seq = is_seq_t(x) && !(x->flags & MPX_T_OPTIONAL);
        if (inner_seq || plain_seq) return set_seq(c, 0, dt);
        return mpx_sh_set_out(c, 0, dt, NULL);
    }
    default: /* SequenceAt, ConcatFromSequence: a tensor whose shape is the run's */
        return mpx_sh_set_out(c, 0, dt, NULL);
    }
}

/* SequenceMap: one sequence per body output, of the body output's declared
 * (else inferred, else input 0's) element type; how many items is data. */
mpx_status mpx_shape_sequence_map(mpx_sctx *c) {
    mpx_graph *b = c->n->body;
    if (!b) return mpx_node_error(c, MPX_E_UNSUPPORTED, "a SequenceMap without a body graph");
    if (b->n_outputs != c->n->n_outputs || b->n_inputs < c->n->n_explicit)
        return mpx_node_error(c, MPX_E_INVALID, "the body has %d inputs and %d outputs for %d inputs and %d outputs",
                              b->n_inputs, b->n_outputs, c->n->n_explicit, c->n->n_outputs);
    mpx_status st = MPX_OK;
    for (int k = 0; k < c->n->n_outputs && !st; k++) {
        mpx_dtype dt = b->outputs[k]->dtype != MPX_DT_UNDEFINED ? b->outputs[k]->dtype : mpx_sh_dt(mpx_sh_in(c, 0));
        st = set_seq(c, k, dt);
    }
    return st;
}
