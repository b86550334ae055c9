/* kern_seq.c - sequences and optionals of tensors, to the extent exporters
 * emit them: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase,
 * SequenceAt, SequenceLength, SplitToSequence, ConcatFromSequence, and
 * Optional, OptionalHasElement, OptionalGetElement.
 *
 * A sequence value is an mpx_value with is_seq set holding n items (an
 * optional: at most one, is_opt). Sequences are containers: every op here
 * copies or moves values without arithmetic, so nothing is rounded (the
 * tensors they hold were rounded by the nodes that made them, and a plan
 * never gives a sequence a format: MPX_T_SEQUENCE). Positions follow ONNX:
 * negative ones count from the end. */
#include "kern_data.h"
#include "kern_nn.h"

#include <stdlib.h>
#include <string.h>

static mpx_status new_seq(const mpx_kctx *c, mpx_value *v, mpx_dtype dt, int64_t n) {
    memset(v, 0, sizeof *v);
    v->is_seq = true, v->dtype = dt, v->rank = -1, v->n = n;
    if (n > 0 && !(v->seq = calloc((size_t)n, sizeof *v->seq))) {
        v->n = -1;
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < n; k++) v->seq[k].n = -1;
    return MPX_OK;
}

static mpx_status seq_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const mpx_value **s) {
    *s = kn_opt(in, n_in, i);
    if (!*s || !(*s)->is_seq) return mpx_kernel_error(c, MPX_E_INVALID, "input %d must be a sequence", i);
    return MPX_OK;
}

static mpx_status copy_item(const mpx_kctx *c, mpx_value *dst, const mpx_value *src) {
    mpx_error e;
    if (mpx_value_copy(dst, src, &e) != MPX_OK) return mpx_kernel_error(c, e.status, "%s", e.msg);
    dst->borrowed = false;
    return MPX_OK;
}

/* A position input (one integer) in [-n, n - 1], or [-n, n] when `end` (an
 * insertion may go after the last); default: the end. */
static mpx_status position(const mpx_kctx *c, const mpx_value *p, int64_t n, bool end, int64_t *out) {
    if (!p) {
        *out = end ? n : n - 1;
        return n > 0 || end ? MPX_OK : mpx_kernel_error(c, MPX_E_INVALID, "the sequence is empty");
    }
    if (!p->i || p->n != 1) return mpx_kernel_error(c, MPX_E_INVALID, "position must be one integer");
    int64_t q = p->i[0], hi = end ? n : n - 1;
    if (q < -n || q > hi)
        return mpx_kernel_error(c, MPX_E_INVALID, "position %lld is outside [%lld, %lld] for a sequence of %lld",
                                (long long)q, (long long)-n, (long long)hi, (long long)n);
    *out = q < 0 ? q + n : q;
    return MPX_OK;
}

mpx_status mpx_k_sequence_empty(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    (void)in, (void)n_in;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    return new_seq(c, &out[0], (mpx_dtype)mpx_node_attr_int(c->node, "dtype", MPX_DT_FLOAT), 0);
}

mpx_status mpx_k_sequence_construct(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                    int n_out) {
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    if (n_in < 1 || !in[0] || in[0]->n < 0) return mpx_kernel_error(c, MPX_E_INVALID, "at least one tensor is needed");
    for (int i = 0; i < n_in; i++)
        if (!in[i] || in[i]->n < 0 || in[i]->is_seq || in[i]->dtype != in[0]->dtype)
            return mpx_kernel_error(c, MPX_E_INVALID, "input %d must be a tensor of input 0's type", i);
    if ((st = new_seq(c, &out[0], in[0]->dtype, n_in))) return st;
    for (int i = 0; i < n_in && !st; i++) st = copy_item(c, &out[0].seq[i], in[i]);
    if (st) mpx_value_free(&out[0]);
    return st;
}

mpx_status mpx_k_sequence_insert(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *s, *t = kn_opt(in, n_in, 1);
    int64_t at;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = seq_in(c, in, n_in, 0, &s);
    if (st) return st;
    if (!t || t->is_seq || (s->n > 0 && t->dtype != s->dtype))
        return mpx_kernel_error(c, MPX_E_INVALID, "the tensor to insert must be of the sequence's type");
    if ((st = position(c, kn_opt(in, n_in, 2), s->n, true, &at))) return st;
    if ((st = new_seq(c, &out[0], t->dtype, s->n + 1))) return st;
    for (int64_t k = 0, j = 0; k <= s->n && !st; k++) st = copy_item(c, &out[0].seq[k], k == at ? t : &s->seq[j++]);
    if (st) mpx_value_free(&out[0]);
    return st;
}

/* SequenceErase and SequenceAt take the same arguments: a sequence and the
 * position of one of its items (input 1), for one output. */
static mpx_status seq_item_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int n_out,
                              const mpx_value **s, int64_t *at) {
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = seq_in(c, in, n_in, 0, s);
    if (!st) st = position(c, kn_opt(in, n_in, 1), (*s)->n, false, at);
    return st;
}

mpx_status mpx_k_sequence_erase(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *s;
    int64_t at;
    mpx_status st = seq_item_in(c, in, n_in, n_out, &s, &at);
    if (st) return st;
    if ((st = new_seq(c, &out[0], s->dtype, s->n - 1))) return st;
    for (int64_t k = 0, j = 0; k < s->n && !st; k++)
        if (k != at) st = copy_item(c, &out[0].seq[j++], &s->seq[k]);
    if (st) mpx_value_free(&out[0]);
    return st;
}

mpx_status mpx_k_sequence_at(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *s;
    int64_t at;
    mpx_status st = seq_item_in(c, in, n_in, n_out, &s, &at);
    if (st) return st;
    if (!kn_opt(in, n_in, 1)) return mpx_kernel_error(c, MPX_E_INVALID, "position is required");
    return copy_item(c, &out[0], &s->seq[at]);
}

mpx_status mpx_k_sequence_length(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                 int n_out) {
    const mpx_value *s;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = seq_in(c, in, n_in, 0, &s);
    if (st) return st;
    int64_t one[1] = {1};
    if ((st = mpx_k_alloc(c, &out[0], MPX_DT_INT64, 0, one))) return st;
    out[0].i[0] = s->n;
    return MPX_OK;
}

/* SplitToSequence: pieces along axis - of the lengths split lists, of split
 * (a scalar) each with a shorter last one, or of 1 each without split (then
 * the axis is dropped unless keepdims). */
mpx_status mpx_k_split_to_sequence(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                   int n_out) {
    const mpx_value *x = kn_opt(in, n_in, 0), *sp = kn_opt(in, n_in, 1);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    if (!x || x->is_seq || x->n < 0 || x->rank < 1) return mpx_kernel_error(c, MPX_E_INVALID, "input must be a tensor of rank 1 or more");
    int a;
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), x->rank, 0, &a))) return st;
    int64_t len = x->dims[a], cnt, *sizes;
    bool keep = mpx_node_attr_int(c->node, "keepdims", 1) != 0 || sp;
    if (sp && (!sp->i || sp->rank > 1)) return mpx_kernel_error(c, MPX_E_INVALID, "split must be integers, a scalar or 1-D");
    if (!sp) cnt = len;
    else if (sp->rank == 0) {
        if (sp->i[0] < 1) return mpx_kernel_error(c, MPX_E_INVALID, "split %lld must be positive", (long long)sp->i[0]);
        cnt = (len + sp->i[0] - 1) / sp->i[0];
    } else cnt = sp->n;
    if ((st = kn_scratch(c, (size_t)(cnt ? cnt : 1), sizeof *sizes, (void **)&sizes))) return st;
    int64_t total = 0;
    for (int64_t k = 0; k < cnt; k++) {
        sizes[k] = !sp ? 1 : sp->rank == 0 ? (k < cnt - 1 ? sp->i[0] : len - sp->i[0] * (cnt - 1)) : sp->i[k];
        if (sizes[k] < 0) st = mpx_kernel_error(c, MPX_E_INVALID, "split[%lld] = %lld is negative", (long long)k, (long long)sizes[k]);
        total += sizes[k];
    }
    if (!st && total != len)
        st = mpx_kernel_error(c, MPX_E_SHAPE, "split adds up to %lld, the axis is %lld long", (long long)total, (long long)len);
    if (!st) st = new_seq(c, &out[0], x->dtype, cnt);
    int64_t outer = 1, inner = 1, from = 0;
    for (int i = 0; i < a; i++) outer *= x->dims[i];
    for (int i = a + 1; i < x->rank; i++) inner *= x->dims[i];
    for (int64_t k = 0; k < cnt && !st; k++) {
        int64_t d[MPX_MAX_RANK];
        int r = 0;
        for (int i = 0; i < x->rank; i++)
            if (i != a) d[r++] = x->dims[i];
            else if (keep) d[r++] = sizes[k];
        mpx_value *v = &out[0].seq[k];
        if ((st = mpx_k_alloc(c, v, x->dtype, r, d))) break;
        size_t es = esz(x);
        for (int64_t o = 0; o < outer; o++)
            memcpy(bytes(v) + (size_t)(o * sizes[k] * inner) * es,
                   cbytes(x) + (size_t)((o * len + from) * inner) * es, (size_t)(sizes[k] * inner) * es);
        from += sizes[k];
    }
    free(sizes);
    if (st) mpx_value_free(&out[0]);
    return st;
}

/* ConcatFromSequence: the items joined along axis, or stacked on a new
 * axis (new_axis 1). */
mpx_status mpx_k_concat_from_sequence(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                      int n_out) {
    const mpx_value *s;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = seq_in(c, in, n_in, 0, &s);
    if (st) return st;
    if (s->n < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the sequence is empty");
    bool stack = mpx_node_attr_int(c->node, "new_axis", 0) != 0;
    const mpx_value *f = &s->seq[0];
    int r = f->rank + (stack ? 1 : 0), a;
    if (r < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the items are scalars; concatenating needs new_axis 1");
    if ((st = mpx_k_axis(c, mpx_node_attr_int(c->node, "axis", 0), r, 0, &a))) return st;
    int64_t d[MPX_MAX_RANK], outer = 1, inner = 1, total = 0;
    for (int64_t k = 0; k < s->n; k++) {
        const mpx_value *v = &s->seq[k];
        bool ok = v->rank == f->rank && v->dtype == f->dtype;
        for (int i = 0; ok && i < f->rank; i++) ok = i == a && !stack ? true : v->dims[i] == f->dims[i];
        if (!ok) return mpx_kernel_error(c, MPX_E_SHAPE, "item %lld does not match item 0's shape and type", (long long)k);
        total += stack ? 1 : v->dims[a];
    }
    if (stack)
        for (int i = 0, j = 0; i < r; i++) d[i] = i == a ? total : f->dims[j++];
    else
        for (int i = 0; i < r; i++) d[i] = i == a ? total : f->dims[i];
    for (int i = 0; i < a; i++) outer *= d[i];
    for (int i = a + 1; i < r; i++) inner *= d[i];
    if ((st = mpx_k_alloc(c, &out[0], f->dtype, r, d))) return st;
    size_t es = esz(f);
    char *dst = bytes(&out[0]);
    int64_t at = 0;
    for (int64_t k = 0; k < s->n; k++) {
        const mpx_value *v = &s->seq[k];
        int64_t w = stack ? 1 : v->dims[a];
        const char *src = cbytes(v);
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (size_t)((o * total + at) * inner) * es, src + (size_t)(o * w * inner) * es, (size_t)(w * inner) * es);
        at += w;
    }
    return MPX_OK;
}

/* Optional: holds its input, or nothing. */
mpx_status mpx_k_optional(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out, int n_out) {
    const mpx_value *x = kn_opt(in, n_in, 0);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    if ((st = new_seq(c, &out[0], x ? x->dtype : MPX_DT_FLOAT, x ? 1 : 0))) return st;
    out[0].is_opt = true;
    if (x && (st = copy_item(c, &out[0].seq[0], x))) mpx_value_free(&out[0]);
    return st;
}

/* OptionalHasElement: whether an optional holds a value (a plain tensor or
 * sequence: true; an omitted input: false). */
mpx_status mpx_k_optional_has_element(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                      int n_out) {
    const mpx_value *x = kn_opt(in, n_in, 0);
    mpx_status st = kn_need_out(c, n_out, 1);
    int64_t one[1] = {1};
    if (st || (st = mpx_k_alloc(c, &out[0], MPX_DT_BOOL, 0, one))) return st;
    out[0].i[0] = x && (!x->is_opt || x->n > 0);
    return MPX_OK;
}

mpx_status mpx_k_optional_get_element(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                      int n_out) {
    const mpx_value *x = kn_opt(in, n_in, 0);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (st) return st;
    if (!x) return mpx_kernel_error(c, MPX_E_INVALID, "input is required");
    if (x->is_opt && x->n < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the optional holds no value");
    return copy_item(c, &out[0], x->is_opt ? &x->seq[0] : x);
}
