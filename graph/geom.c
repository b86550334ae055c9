/* geom.c - the geometry of ops that shape inference and the kernels both
 * need, computed here once: sliding windows (Conv, ConvTranspose, the pools,
 * MaxUnpool) and Einsum's labels. Shape inference calls these with dims that
 * may be unknown (-1) and the kernels with their values' dims, so a shape and
 * the values a kernel makes agree by construction. Messages carry no node
 * name: the caller's error function adds it (mpx_node_error in graph/,
 * mpx_kernel_error in the kernels). */
#include "graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- sliding windows --------------------------------------------------------- */

/* An INTS attribute of exactly n values in [lo, MPX_WINDOW_ATTR_MAX], or dflt
 * for each when absent. */
static mpx_status ints_attr(const mpx_node *n, const char *name, int count, int64_t lo, int64_t dflt, int64_t *out,
                            mpx_error *err) {
    const mpx_attr *a = mpx_node_attr(n, name);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (!a) return MPX_OK;
    if (a->type != MPX_ATTR_INTS)
        return mpx_error_set(err, MPX_E_INVALID, "attribute %s must be a list of integers", name);
    if (a->n != count)
        return mpx_error_set(err, MPX_E_INVALID, "attribute %s has %d values; %d expected", name, a->n, count);
    for (int i = 0; i < count; i++) {
        if (a->ints[i] < lo || a->ints[i] > MPX_WINDOW_ATTR_MAX)
            return mpx_error_set(err, a->ints[i] > MPX_WINDOW_ATTR_MAX ? MPX_E_LIMIT : MPX_E_INVALID,
                                 "attribute %s[%d] = %lld is %s", name, i, (long long)a->ints[i],
                                 a->ints[i] > MPX_WINDOW_ATTR_MAX ? "beyond mpx's limit of 2^30" : "out of range");
        out[i] = a->ints[i];
    }
    return MPX_OK;
}

mpx_status mpx_window_read(const mpx_node *n, int rank, const int64_t *in, const int64_t *kernel, mpx_window *w,
                           mpx_error *err) {
    mpx_status st;
    memset(w, 0, sizeof *w);
    if (rank < 3 || rank > MPX_MAX_RANK)
        return mpx_error_set(err, MPX_E_SHAPE, "the input has rank %d; N x C x D1 x ... (rank 3 or more) expected",
                             rank);
    int nsp = w->nsp = rank - 2;
    for (int i = 0; i < nsp; i++) w->in[i] = in[i];
    const mpx_attr *ka = mpx_node_attr(n, "kernel_shape");
    if (ka || !kernel) {
        if (!ka) return mpx_error_set(err, MPX_E_INVALID, "attribute kernel_shape is required");
        if ((st = ints_attr(n, "kernel_shape", nsp, 1, 1, w->k, err))) return st;
        for (int i = 0; kernel && i < nsp; i++)
            if (kernel[i] >= 0 && kernel[i] != w->k[i])
                return mpx_error_set(err, MPX_E_SHAPE,
                                     "kernel_shape[%d] = %lld does not match the weights' kernel length %lld", i,
                                     (long long)w->k[i], (long long)kernel[i]);
    } else {
        for (int i = 0; i < nsp; i++) {
            if (kernel[i] == 0 || kernel[i] < -1)
                return mpx_error_set(err, MPX_E_SHAPE, "the weights' kernel length %d is %lld", i, (long long)kernel[i]);
            w->k[i] = kernel[i];
        }
    }
    if ((st = ints_attr(n, "strides", nsp, 1, 1, w->s, err))) return st;
    if ((st = ints_attr(n, "dilations", nsp, 1, 1, w->d, err))) return st;
    int64_t pads[2 * MPX_WINDOW_MAX_SP];
    if ((st = ints_attr(n, "pads", 2 * nsp, 0, 0, pads, err))) return st;
    for (int i = 0; i < nsp; i++) {
        w->pb[i] = pads[i];
        w->pe[i] = pads[nsp + i];
    }
    const char *ap = mpx_node_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0') w->auto_pad = MPX_AUTOPAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0) w->auto_pad = MPX_AUTOPAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0) w->auto_pad = MPX_AUTOPAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0) w->auto_pad = MPX_AUTOPAD_VALID;
    else
        return mpx_error_set(err, MPX_E_INVALID, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
    return MPX_OK;
}

static bool same_pad(const mpx_window *w) {
    return w->auto_pad == MPX_AUTOPAD_SAME_UPPER || w->auto_pad == MPX_AUTOPAD_SAME_LOWER;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

mpx_status mpx_window_out(mpx_window *w, bool ceil_mode, mpx_error *err) {
    /* mpx_window_read bounded the attributes by 2^30 and dims are below 2^31,
     * so none of this overflows. */
    for (int i = 0; i < w->nsp; i++) {
        int64_t in = w->in[i], s = w->s[i];
        if (in < 0 || w->k[i] < 0) {
            w->out[i] = -1;
            continue;
        }
        int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
        if (same_pad(w)) {
            /* out = ceil(in / stride), the odd unit of padding at the end
             * (UPPER) or the beginning (LOWER); the total clamped at 0
             * (TensorFlow's SAME, which ONNX's text follows). */
            int64_t o = ceil_div(in, s);
            int64_t total = (o - 1) * s + ek - in;
            if (total < 0) total = 0;
            w->pb[i] = w->auto_pad == MPX_AUTOPAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pe[i] = total - w->pb[i];
            w->out[i] = o;
            continue;
        }
        if (w->auto_pad == MPX_AUTOPAD_VALID) w->pb[i] = w->pe[i] = 0;
        int64_t num = in + w->pb[i] + w->pe[i] - ek;
        if (num < 0)
            return mpx_error_set(err, MPX_E_SHAPE,
                                 "spatial dim %d: input length %lld (pads %lld+%lld) is smaller than the kernel "
                                 "extent %lld", i, (long long)in, (long long)w->pb[i], (long long)w->pe[i],
                                 (long long)ek);
        int64_t o = num / s + 1;
        if (ceil_mode) {
            o = ceil_div(num, s) + 1;
            /* The last window must start inside the input or the leading
             * padding (ONNX Runtime, PyTorch). */
            if ((o - 1) * s >= in + w->pb[i]) o--;
        }
        w->out[i] = o;
    }
    return MPX_OK;
}

mpx_status mpx_window_transpose_out(const mpx_node *n, mpx_window *w, mpx_error *err) {
    int nsp = w->nsp;
    int64_t opad[MPX_WINDOW_MAX_SP];
    mpx_status st = ints_attr(n, "output_padding", nsp, 0, 0, opad, err);
    if (st) return st;
    const mpx_attr *osa = mpx_node_attr(n, "output_shape");
    const int64_t *os = NULL;
    if (osa) {
        if (osa->type != MPX_ATTR_INTS || (osa->n != nsp && osa->n != nsp + 2))
            return mpx_error_set(err, MPX_E_INVALID, "output_shape must list %d spatial lengths (or %d dims)", nsp,
                                 nsp + 2);
        os = osa->ints + (osa->n - nsp);
        for (int i = 0; i < nsp; i++)
            if (os[i] < 0 || os[i] > MPX_WINDOW_ATTR_MAX)
                return mpx_error_set(err, MPX_E_INVALID, "output_shape value %lld is negative or beyond mpx's limit",
                                     (long long)os[i]);
    }
    for (int i = 0; i < nsp; i++) {
        /* The output length, and pads as the operator text says: from
         * output_shape or SAME_* split with the odd unit at the end for
         * SAME_UPPER and at the beginning otherwise (a negative total extends
         * the output with values no input reaches). Each term is below 2^61. */
        if (w->in[i] < 0 || w->k[i] < 0) {
            w->out[i] = os ? os[i] : -1;
            continue;
        }
        int64_t full = w->s[i] * (w->in[i] - 1) + opad[i] + (w->k[i] - 1) * w->d[i] + 1;
        int64_t o;
        if (os || same_pad(w)) {
            o = os ? os[i] : w->in[i] * w->s[i];
            int64_t total = full - o, half = floor_div(total, 2);
            w->pb[i] = w->auto_pad == MPX_AUTOPAD_SAME_UPPER ? half : total - half;
            w->pe[i] = total - w->pb[i];
        } else {
            if (w->auto_pad == MPX_AUTOPAD_VALID) w->pb[i] = w->pe[i] = 0;
            o = full - w->pb[i] - w->pe[i];
            if (o < 1)
                return mpx_error_set(err, MPX_E_SHAPE, "spatial dim %d would have length %lld", i, (long long)o);
        }
        w->out[i] = o;
    }
    return MPX_OK;
}

int64_t mpx_window_unpool_len(const mpx_window *w, int i) {
    if (w->in[i] < 0) return -1;
    return (w->in[i] - 1) * w->s[i] + w->k[i] - w->pb[i] - w->pe[i];
}

/* ---- Einsum ---------------------------------------------------------------------- */

/* Label ids: 'a'-'z' 0-25, 'A'-'Z' 26-51, "..." dims 52.. (right-aligned). */
static int letter_id(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

static void label_name(int id, char *buf, size_t n) {
    if (id < 26) snprintf(buf, n, "label '%c'", 'a' + id);
    else if (id < 52) snprintf(buf, n, "label '%c'", 'A' + id - 26);
    else snprintf(buf, n, "a \"...\" dim");
}

mpx_status mpx_einsum_parse(const char *eq, int n_in, const int *ranks, const int64_t *const *dims, mpx_einsum *e,
                            bool *complete, mpx_error *err) {
    *complete = false;
    char buf[512];
    size_t j = 0;
    for (const char *q = eq; *q; q++) {
        if (*q == ' ') continue;
        if (j + 1 >= sizeof buf) return mpx_error_set(err, MPX_E_LIMIT, "equation too long");
        buf[j++] = *q;
    }
    buf[j] = '\0';
    memset(e, 0, sizeof *e);
    for (int i = 0; i < MPX_EINSUM_LABELS; i++) e->size[i] = -2, e->first[i] = -1;
    if (n_in > MPX_EINSUM_MAX_IN)
        return mpx_error_set(err, MPX_E_LIMIT, "%d inputs (at most %d)", n_in, MPX_EINSUM_MAX_IN);
    char *arrow = strstr(buf, "->");
    if (arrow) *arrow = '\0';
    /* First pass: the syntax, the terms against the inputs' ranks, and the
     * rank "..." stands for (the largest over the inputs). */
    int term = 0, letters_of[MPX_EINSUM_MAX_IN] = {0};
    bool known = true;
    for (char *t = buf;; term++) {
        char *next = strchr(t, ',');
        int letters = 0;
        bool ell = false;
        for (char *q = t; *q && q != next; q++) {
            if (strncmp(q, "...", 3) == 0) {
                /* A second "..." would make the term claim more dims than the input has. */
                if (ell) return mpx_error_set(err, MPX_E_INVALID, "equation \"%s\": \"...\" twice in one term", eq);
                ell = true;
                q += 2;
            } else if (letter_id(*q) >= 0) {
                letters++;
            } else {
                return mpx_error_set(err, MPX_E_INVALID, "equation \"%s\": unexpected '%c'", eq, *q);
            }
        }
        if (term >= n_in) return mpx_error_set(err, MPX_E_SHAPE, "equation \"%s\" has more terms than inputs", eq);
        int r = ranks[term];
        letters_of[term] = letters;
        if (r < 0) known = false;
        else if (ell ? r < letters : r != letters)
            return mpx_error_set(err, MPX_E_SHAPE, "equation term %d of \"%s\" does not fit input %d of rank %d", term, eq,
                                 term, r);
        else if (ell && r - letters > e->ell_rank) e->ell_rank = r - letters;
        if (!next) break;
        t = next + 1;
    }
    if (term + 1 != n_in)
        return mpx_error_set(err, MPX_E_SHAPE, "equation \"%s\" has %d terms for %d inputs", eq, term + 1, n_in);
    e->n_in = n_in;
    if (!known) return MPX_OK;
    /* Second pass: labels and sizes (a 1 broadcasts; -1 is unknown). */
    int order = 0;
    char *t = buf;
    for (int k = 0; k < n_in; k++) {
        char *next = strchr(t, ',');
        int pos = 0;
        for (char *q = t; *q && q != next; q++) {
            int ids[MPX_MAX_RANK], n_ids = 0;
            if (*q == '.') {
                int er = ranks[k] - letters_of[k];
                for (int i = 0; i < er; i++) ids[n_ids++] = 52 + e->ell_rank - er + i;
                q += 2;
            } else {
                ids[n_ids++] = letter_id(*q);
            }
            for (int i = 0; i < n_ids; i++) {
                int id = ids[i];
                int64_t d = dims[k][pos], merged = e->size[id] == -2 ? d : mpx_bcast_dim(e->size[id], d);
                e->in_label[k][pos++] = id;
                e->count[id]++;
                if (e->first[id] < 0) e->first[id] = order++;
                if (merged == MPX_BCAST_NO) {
                    char what[32];
                    label_name(id, what, sizeof what);
                    return mpx_error_set(err, MPX_E_SHAPE, "equation \"%s\": %s is %lld in one input and %lld in input %d",
                                         eq, what, (long long)e->size[id], (long long)d, k);
                }
                e->size[id] = merged;
            }
        }
        e->in_rank[k] = pos;
        if (next) t = next + 1;
    }
    /* The output labels: as written, or "..." then the labels that occur
     * once in character order ('A'-'Z', then 'a'-'z'), as numpy and ONNX. */
    if (arrow) {
        for (char *q = arrow + 2; *q; q++) {
            int ids[MPX_MAX_RANK], n_ids = 0;
            if (strncmp(q, "...", 3) == 0) {
                for (int i = 0; i < e->ell_rank; i++) ids[n_ids++] = 52 + i;
                q += 2;
            } else if (letter_id(*q) >= 0 && e->first[letter_id(*q)] >= 0) {
                ids[n_ids++] = letter_id(*q);
            } else {
                return mpx_error_set(err, MPX_E_SHAPE, "equation \"%s\": output label '%c' is in no input", eq, *q);
            }
            for (int i = 0; i < n_ids; i++) {
                if (e->n_out == MPX_MAX_RANK)
                    return mpx_error_set(err, MPX_E_LIMIT, "output rank beyond %d", MPX_MAX_RANK);
                for (int o = 0; o < e->n_out; o++)
                    if (e->out_label[o] == ids[i])
                        return mpx_error_set(err, MPX_E_INVALID, "equation \"%s\": output label repeated", eq);
                e->out_label[e->n_out++] = ids[i];
            }
        }
    } else {
        for (int i = 0; i < e->ell_rank; i++) e->out_label[e->n_out++] = 52 + i;
        for (int rnk = 0; rnk < 52; rnk++) {
            int id = rnk < 26 ? 26 + rnk : rnk - 26;
            if (e->count[id] != 1) continue;
            if (e->n_out == MPX_MAX_RANK) return mpx_error_set(err, MPX_E_LIMIT, "output rank beyond %d", MPX_MAX_RANK);
            e->out_label[e->n_out++] = id;
        }
    }
    *complete = true;
    return MPX_OK;
}

/* ---- Resize and Upsample ---------------------------------------------------------- */

static int policy_of(const char *p) {
    static const char *const names[] = {"stretch", "not_larger", "not_smaller"};
    for (int i = 0; i < 3; i++)
        if (strcmp(p, names[i]) == 0) return i;
    return -1;
}

mpx_status mpx_resize_axes(const mpx_node *n, bool legacy, int rank, int *axes, int *na, mpx_error *err) {
    for (int i = 0; i < rank; i++) axes[i] = i;
    *na = rank;
    /* Resize-18's axes: the axes scales or sizes speak of, in their order. */
    const int64_t *av;
    int nav = legacy ? 0 : mpx_node_attr_ints(n, "axes", &av);
    if (nav <= 0) return MPX_OK;
    if (nav > rank) return mpx_error_set(err, MPX_E_INVALID, "%d axes for input X of rank %d", nav, rank);
    bool seen[MPX_MAX_RANK] = {false};
    for (int i = 0; i < nav; i++) {
        if (av[i] < -rank || av[i] >= rank)
            return mpx_error_set(err, MPX_E_INVALID, "axis %lld is out of range for rank %d", (long long)av[i], rank);
        int a = (int)(av[i] < 0 ? av[i] + rank : av[i]);
        if (seen[a]) return mpx_error_set(err, MPX_E_INVALID, "axis %lld is listed twice", (long long)av[i]);
        seen[a] = true;
        axes[i] = a;
    }
    *na = nav;
    return MPX_OK;
}

mpx_status mpx_resize_geom(const mpx_node *n, bool legacy, bool upsample, int rank, const int64_t *dims,
                           const float *scales, const int64_t *sizes, int64_t n_given, mpx_resize_geometry *g,
                           mpx_error *err) {
    memset(g, 0, sizeof *g);
    if (rank < 0 || rank > MPX_MAX_RANK) return mpx_error_set(err, MPX_E_SHAPE, "input X has rank %d", rank);
    g->rank = rank;
    for (int i = 0; i < rank; i++) {
        g->out[i] = dims[i];
        g->scale[i] = 1.0f;
    }
    mpx_status st = mpx_resize_axes(n, legacy, rank, g->axes, &g->na, err);
    if (st) return st;
    int na = g->na;
    if (n_given != na)
        return mpx_error_set(err, MPX_E_SHAPE, "%s has %lld values for %d axes of input X", sizes ? "sizes" : "scales",
                             (long long)n_given, na);
    const char *policy = mpx_node_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    int keep = sizes ? policy_of(policy) : 0;
    if (keep < 0) return mpx_error_set(err, MPX_E_INVALID, "keep_aspect_ratio_policy \"%s\" is unknown", policy);
    /* not_larger / not_smaller: one scale for all the axes, then
     * sizes = round(in * scale). */
    float common = keep == 1 ? INFINITY : 0.0f;
    bool unknown = false;
    for (int i = 0; keep > 0 && i < na; i++) {
        int64_t d = dims[g->axes[i]];
        if (d < 0) {
            unknown = true;
            continue;
        }
        if (d == 0) return mpx_error_set(err, MPX_E_SHAPE, "cannot keep the aspect ratio of an empty axis");
        float f = (float)sizes[i] / (float)d;
        common = keep == 1 ? fminf(common, f) : fmaxf(common, f);
    }
    for (int i = 0; i < na; i++) {
        int a = g->axes[i];
        int64_t in = dims[a];
        if (sizes && keep == 0) {
            int64_t s = sizes[i];
            if (s < 0 || s > MPX_MAX_ELEMS)
                return mpx_error_set(err, MPX_E_SHAPE, "sizes[%d] = %lld is not a length", i, (long long)s);
            if (in == 0 && s != 0)
                return mpx_error_set(err, MPX_E_SHAPE, "axis %d is empty and cannot become %lld long", a, (long long)s);
            g->out[a] = s;
            g->scale[a] = in > 0 ? (float)s / (float)in : 1.0f;
            g->exact[a] = true;
            continue;
        }
        if (sizes && unknown) {
            g->out[a] = -1;
            continue;
        }
        float f = sizes ? common : scales[i];
        if (!(f > 0.0f) || !isfinite(f) || (upsample && f < 1.0f))
            return mpx_error_set(err, MPX_E_INVALID, "scale %g for axis %d is not %s", (double)f, a,
                                 upsample ? "at least 1" : "positive");
        g->scale[a] = f;
        if (in < 0) {
            g->out[a] = -1;
            continue;
        }
        /* As ONNX and ONNX Runtime compute it: the float product, floored
         * (rounded for a kept aspect ratio). A float beyond int64 does not
         * convert (undefined behaviour), hence the bound first. */
        float len = sizes ? roundf(f * (float)in) : floorf((float)in * f);
        if (!(len <= (float)MPX_MAX_ELEMS))
            return mpx_error_set(err, MPX_E_LIMIT, "scale %g makes axis %d of length %lld %g long", (double)f, a,
                                 (long long)in, (double)len);
        g->out[a] = (int64_t)len;
    }
    return MPX_OK;
}
