/* fold.c - constant folding of small values, so shape-computing chains
 * (Shape -> Cast -> Slice -> Concat -> Reshape, as exporters emit them) give
 * Reshape, Expand, Tile, ConstantOfShape and Resize known shape arguments.
 *
 * Runs after the node's shape function, which has set the output shapes and
 * resolved the arguments (mpx_sctx.planned and its fields). Values follow the
 * IR's convention: float dtypes as fp32, integer and bool dtypes as int64.
 * Folding is best effort: anything unusual leaves the value unknown. Integer
 * arithmetic wraps (as two's complement) instead of invoking undefined
 * behaviour; a Cast to a narrower float type is not rounded (shape chains do
 * not depend on it; numerics/ owns formats). */
#include "shape_internal.h"

#include <math.h>
#include <string.h>

static mpx_tensor *in(const mpx_sctx *c, int i) {
    return i < c->n->n_inputs ? c->n->inputs[i] : NULL;
}

static bool has_value(const mpx_tensor *t) {
    return t && t->nelem >= 0 && (t->f32 || t->i64);
}

/* Give output i a value buffer matching its dtype; false when it cannot hold one. */
static mpx_status alloc_out(mpx_sctx *c, int i, bool *ok) {
    *ok = false;
    mpx_tensor *t = i < c->n->n_outputs ? c->n->outputs[i] : NULL;
    if (!t || t->rank < 0 || t->nelem < 0 || t->nelem > MPX_FOLD_MAX_ELEMS || (t->flags & MPX_T_CONSTANT))
        return MPX_OK;
    size_t n = (size_t)(t->nelem ? t->nelem : 1);
    if (mpx_dtype_is_float(t->dtype)) t->f32 = mpx_arena_calloc(c->g->arena, n, sizeof(float));
    else if (mpx_dtype_is_int_like(t->dtype)) t->i64 = mpx_arena_calloc(c->g->arena, n, sizeof(int64_t));
    else return MPX_OK;
    if (!t->f32 && !t->i64) return mpx_node_error(c, MPX_E_NOMEM, "out of memory folding \"%s\"", t->name);
    t->flags |= MPX_T_FOLDED;
    *ok = true;
    return MPX_OK;
}

/* Undo alloc_out when a value turns out not to be computable. */
static void drop(mpx_tensor *t) {
    t->f32 = NULL;
    t->i64 = NULL;
    t->flags &= ~(uint32_t)MPX_T_FOLDED;
}

static double getf(const mpx_tensor *t, int64_t i) {
    return t->f32 ? (double)t->f32[i] : (double)t->i64[i];
}

static int64_t geti(const mpx_tensor *t, int64_t i) {
    if (t->i64) return t->i64[i];
    float f = t->f32[i];
    if (!(f == f)) return 0;
    if (f >= 9.2e18f) return INT64_MAX;
    if (f <= -9.2e18f) return INT64_MIN;
    return (int64_t)f;
}

/* Narrow an integer to its dtype's range, as a Cast (or an int32 op) would. */
static int64_t wrap_int(int64_t v, mpx_dtype t) {
    switch (t) {
    case MPX_DT_BOOL: return v != 0;
    case MPX_DT_UINT8: return (int64_t)(uint8_t)v;
    case MPX_DT_INT8: return (int64_t)(int8_t)(uint8_t)v;
    case MPX_DT_UINT16: return (int64_t)(uint16_t)v;
    case MPX_DT_INT16: return (int64_t)(int16_t)(uint16_t)v;
    case MPX_DT_UINT32: return (int64_t)(uint32_t)v;
    case MPX_DT_INT32: return (int64_t)(int32_t)(uint32_t)v;
    default: return v;
    }
}

static void put(mpx_tensor *t, int64_t i, double f, int64_t v, bool is_float) {
    if (t->f32) t->f32[i] = is_float ? (float)f : (float)v;
    else t->i64[i] = is_float ? wrap_int((int64_t)f, t->dtype) : wrap_int(v, t->dtype);
}

/* Copy one element, same storage kind on both sides. */
static void copy1(mpx_tensor *d, int64_t di, const mpx_tensor *s, int64_t si) {
    if (d->f32) d->f32[di] = (float)getf(s, si);
    else d->i64[di] = geti(s, si);
}

/* Row-major strides of t, aligned to an output of rank r: 0 for broadcast dims. */
static void bstrides(const mpx_tensor *t, int r, int64_t *st) {
    int64_t s = 1;
    int off = r - t->rank;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - off;
        if (j < 0) {
            st[i] = 0;
            continue;
        }
        st[i] = t->dims[j] == 1 ? 0 : s;
        s *= t->dims[j];
    }
}

/* Advance a row-major coordinate. */
static void next_coord(int r, const int64_t *dims, int64_t *co) {
    for (int i = r - 1; i >= 0; i--) {
        if (++co[i] < dims[i]) return;
        co[i] = 0;
    }
}

static int64_t dot_idx(int r, const int64_t *co, const int64_t *st) {
    int64_t k = 0;
    for (int i = 0; i < r; i++) k += co[i] * st[i];
    return k;
}

static uint64_t u(int64_t v) { return (uint64_t)v; }

/* Wrapping int64 arithmetic (two's complement, via unsigned). */
static int64_t s64(uint64_t v) {
    if (v <= (uint64_t)INT64_MAX) return (int64_t)v;
    return -(int64_t)(~v) - 1;
}

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_POW, B_MAX, B_MIN, B_EQ, B_LT, B_GT, B_LE, B_GE,
               B_AND, B_OR, B_XOR, B_NONE } binop;

static binop binop_of(mpx_op op) {
    switch (op) {
    case MPX_OP_Add: case MPX_OP_Sum: return B_ADD;
    case MPX_OP_Sub: return B_SUB;
    case MPX_OP_Mul: return B_MUL;
    case MPX_OP_Div: return B_DIV;
    case MPX_OP_Mod: return B_MOD;
    case MPX_OP_Pow: return B_POW;
    case MPX_OP_Max: return B_MAX;
    case MPX_OP_Min: return B_MIN;
    case MPX_OP_Equal: return B_EQ;
    case MPX_OP_Less: return B_LT;
    case MPX_OP_Greater: return B_GT;
    case MPX_OP_LessOrEqual: return B_LE;
    case MPX_OP_GreaterOrEqual: return B_GE;
    case MPX_OP_And: return B_AND;
    case MPX_OP_Or: return B_OR;
    case MPX_OP_Xor: return B_XOR;
    default: return B_NONE;
    }
}

/* false: not foldable (integer division by zero). */
static bool apply_i(binop op, int64_t a, int64_t b, bool fmod_sign, int64_t *r) {
    switch (op) {
    case B_ADD: *r = s64(u(a) + u(b)); return true;
    case B_SUB: *r = s64(u(a) - u(b)); return true;
    case B_MUL: *r = s64(u(a) * u(b)); return true;
    case B_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *r = a / b; /* truncates, as ONNX integer Div */
        return true;
    case B_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *r = a % b;
        if (!fmod_sign && *r != 0 && ((*r < 0) != (b < 0))) *r += b; /* sign of the divisor */
        return true;
    case B_POW: {
        if (b < 0) return false;
        uint64_t acc = 1, base = u(a);
        for (int64_t e = b; e > 0; e >>= 1) {
            if (e & 1) acc *= base;
            base *= base;
        }
        *r = s64(acc);
        return true;
    }
    case B_MAX: *r = a > b ? a : b; return true;
    case B_MIN: *r = a < b ? a : b; return true;
    case B_EQ: *r = a == b; return true;
    case B_LT: *r = a < b; return true;
    case B_GT: *r = a > b; return true;
    case B_LE: *r = a <= b; return true;
    case B_GE: *r = a >= b; return true;
    case B_AND: *r = (a != 0) && (b != 0); return true;
    case B_OR: *r = (a != 0) || (b != 0); return true;
    case B_XOR: *r = (a != 0) != (b != 0); return true;
    case B_NONE: return false;
    }
    return false;
}

static double apply_f(binop op, double a, double b, bool fmod_sign) {
    switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_MOD: {
        double m = fmod(a, b);
        if (!fmod_sign && m != 0 && ((m < 0) != (b < 0))) m += b;
        return m;
    }
    case B_POW: return pow(a, b);
    case B_MAX: return a > b || a != a ? a : b;
    case B_MIN: return a < b || a != a ? a : b;
    case B_EQ: return a == b;
    case B_LT: return a < b;
    case B_GT: return a > b;
    case B_LE: return a <= b;
    case B_GE: return a >= b;
    case B_AND: return (a != 0) && (b != 0);
    case B_OR: return (a != 0) || (b != 0);
    case B_XOR: return (a != 0) != (b != 0);
    case B_NONE: return 0;
    }
    return 0;
}

/* Elementwise over broadcast inputs first..n_inputs-1 (variadic Sum/Max/Min fold left). */
static bool fold_binary(mpx_sctx *c, mpx_tensor *o, binop op) {
    int r = o->rank;
    int64_t st[MPX_MAX_RANK][MPX_MAX_RANK], co[MPX_MAX_RANK] = {0};
    int ni = c->n->n_inputs;
    if (ni > MPX_MAX_RANK) return false;
    bool flt = false;
    for (int k = 0; k < ni; k++) {
        const mpx_tensor *t = in(c, k);
        if (!t) return false;
        flt |= t->f32 != NULL;
        bstrides(t, r, st[k]);
    }
    bool fm = mpx_node_attr_int(c->n, "fmod", 0) != 0;
    for (int64_t i = 0; i < o->nelem; i++) {
        if (flt) {
            double acc = getf(in(c, 0), dot_idx(r, co, st[0]));
            for (int k = 1; k < ni; k++) acc = apply_f(op, acc, getf(in(c, k), dot_idx(r, co, st[k])), fm);
            if (o->i64 && !(fabs(acc) < 9.2e18)) return false;
            put(o, i, acc, 0, true);
        } else {
            int64_t acc = geti(in(c, 0), dot_idx(r, co, st[0]));
            for (int k = 1; k < ni; k++)
                if (!apply_i(op, acc, geti(in(c, k), dot_idx(r, co, st[k])), fm, &acc)) return false;
            put(o, i, 0, acc, false);
        }
        next_coord(r, o->dims, co);
    }
    if (c->n->op == MPX_OP_Mean) {
        if (!o->f32) return false;
        for (int64_t i = 0; i < o->nelem; i++) o->f32[i] /= (float)ni;
    }
    return true;
}

static bool fold_unary(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    for (int64_t i = 0; i < o->nelem; i++) {
        if (x->f32) {
            double v = x->f32[i], r;
            switch (c->n->op) {
            case MPX_OP_Floor: r = floor(v); break;
            case MPX_OP_Ceil: r = ceil(v); break;
            case MPX_OP_Round: r = nearbyint(v); break; /* half to even, as ONNX */
            case MPX_OP_Neg: r = -v; break;
            case MPX_OP_Abs: r = fabs(v); break;
            case MPX_OP_Sqrt: r = sqrt(v); break;
            case MPX_OP_Reciprocal: r = 1.0 / v; break;
            case MPX_OP_Sign: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
            case MPX_OP_Relu: r = v > 0 ? v : 0; break;
            case MPX_OP_Identity: r = v; break;
            default: return false;
            }
            if (!o->f32) return false;
            o->f32[i] = (float)r;
        } else {
            int64_t v = x->i64[i], r;
            switch (c->n->op) {
            case MPX_OP_Neg: r = s64(0 - u(v)); break;
            case MPX_OP_Abs: r = v < 0 ? s64(0 - u(v)) : v; break;
            case MPX_OP_Sign: r = v > 0 ? 1 : v < 0 ? -1 : 0; break;
            case MPX_OP_Relu: r = v > 0 ? v : 0; break;
            case MPX_OP_Not: r = !v; break;
            case MPX_OP_Identity: case MPX_OP_Floor: case MPX_OP_Ceil: case MPX_OP_Round: r = v; break;
            default: return false;
            }
            if (!o->i64) return false;
            o->i64[i] = r;
        }
    }
    return true;
}

static bool fold_cast(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    for (int64_t i = 0; i < o->nelem; i++) {
        if (o->f32) {
            o->f32[i] = (float)getf(x, i);
        } else if (x->f32) {
            float f = x->f32[i];
            if (o->dtype == MPX_DT_BOOL) {
                o->i64[i] = f != 0.0f;
                continue;
            }
            if (!(fabsf(f) < 9.2e18f)) return false; /* NaN, inf, huge: implementation-defined */
            o->i64[i] = wrap_int((int64_t)f, o->dtype);
        } else {
            o->i64[i] = wrap_int(x->i64[i], o->dtype);
        }
    }
    return true;
}

/* Output shape == input's element order: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout. */
static bool fold_copy(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    if (x->nelem != o->nelem || (!x->f32 != !o->f32)) return false;
    for (int64_t i = 0; i < o->nelem; i++) copy1(o, i, x, i);
    return true;
}

static bool fold_gather(mpx_sctx *c, mpx_tensor *o, mpx_status *st) {
    const mpx_tensor *x = in(c, 0), *idx = in(c, 1);
    int ax = c->axis;
    int64_t outer = 1, inner = 1, d = x->dims[ax];
    for (int i = 0; i < ax; i++) outer *= x->dims[i];
    for (int i = ax + 1; i < x->rank; i++) inner *= x->dims[i];
    int64_t ni = idx->nelem, k = 0;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t v = geti(idx, j);
            if (v < -d || v >= d) {
                *st = mpx_node_error(c, MPX_E_SHAPE, "index %lld is out of range for axis %d of \"%s\" (length %lld)",
                                     (long long)v, ax, x->name, (long long)d);
                return false;
            }
            if (v < 0) v += d;
            for (int64_t b = 0; b < inner; b++) copy1(o, k++, x, (a * d + v) * inner + b);
        }
    return true;
}

static bool fold_slice(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    int r = x->rank;
    int64_t xs[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0}, s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->dims[i];
    }
    for (int64_t i = 0; i < o->nelem; i++) {
        int64_t k = 0;
        for (int a = 0; a < r; a++) k += (c->p[a] + co[a] * c->q[a]) * xs[a];
        copy1(o, i, x, k);
        next_coord(r, o->dims, co);
    }
    return true;
}

static bool fold_concat(mpx_sctx *c, mpx_tensor *o) {
    int ax = c->axis;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= o->dims[i];
    for (int i = ax + 1; i < o->rank; i++) inner *= o->dims[i];
    int64_t k = 0;
    for (int64_t a = 0; a < outer; a++)
        for (int j = 0; j < c->n->n_inputs; j++) {
            const mpx_tensor *t = in(c, j);
            if (!t) continue;
            int64_t blk = t->dims[ax] * inner;
            for (int64_t b = 0; b < blk; b++) copy1(o, k++, t, a * blk + b);
        }
    return true;
}

static bool fold_transpose(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    int r = x->rank;
    int64_t xs[MPX_MAX_RANK], st[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0}, s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->dims[i];
    }
    for (int i = 0; i < r; i++) st[i] = xs[c->p[i]];
    for (int64_t i = 0; i < o->nelem; i++) {
        copy1(o, i, x, dot_idx(r, co, st));
        next_coord(r, o->dims, co);
    }
    return true;
}

/* Expand and Where's data path: broadcast copy of input k. */
static bool fold_expand(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    int64_t st[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0};
    bstrides(x, o->rank, st);
    for (int64_t i = 0; i < o->nelem; i++) {
        copy1(o, i, x, dot_idx(o->rank, co, st));
        next_coord(o->rank, o->dims, co);
    }
    return true;
}

static bool fold_where(mpx_sctx *c, mpx_tensor *o) {
    int r = o->rank;
    int64_t st[3][MPX_MAX_RANK], co[MPX_MAX_RANK] = {0};
    for (int k = 0; k < 3; k++) bstrides(in(c, k), r, st[k]);
    for (int64_t i = 0; i < o->nelem; i++) {
        bool cond = getf(in(c, 0), dot_idx(r, co, st[0])) != 0;
        int k = cond ? 1 : 2;
        copy1(o, i, in(c, k), dot_idx(r, co, st[k]));
        next_coord(r, o->dims, co);
    }
    return true;
}

static bool fold_tile(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    int r = x->rank;
    int64_t xs[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0}, s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->dims[i];
    }
    for (int64_t i = 0; i < o->nelem; i++) {
        int64_t k = 0;
        for (int a = 0; a < r; a++) k += (co[a] % x->dims[a]) * xs[a];
        copy1(o, i, x, k);
        next_coord(r, o->dims, co);
    }
    return true;
}

static bool fold_reduce(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *x = in(c, 0);
    int r = x->rank;
    mpx_op op = c->n->op;
    if (op != MPX_OP_ReduceProd && op != MPX_OP_ReduceSum && op != MPX_OP_ReduceMin && op != MPX_OP_ReduceMax)
        return false;
    /* Output position of each input element: strides of the kept axes. */
    int64_t st[MPX_MAX_RANK], co[MPX_MAX_RANK] = {0}, s = 1;
    for (int i = r - 1; i >= 0; i--) {
        st[i] = c->p[i] ? 0 : s;
        if (!c->p[i]) s *= x->dims[i];
    }
    if (s != o->nelem) return false;
    bool *seen = mpx_arena_calloc(c->g->arena, (size_t)(o->nelem ? o->nelem : 1), sizeof *seen);
    if (!seen) return false;
    for (int64_t i = 0; i < x->nelem; i++) {
        int64_t k = dot_idx(r, co, st);
        next_coord(r, x->dims, co);
        if (o->f32) {
            double v = getf(x, i), a = o->f32[k];
            if (!seen[k]) a = v;
            else if (op == MPX_OP_ReduceProd) a *= v;
            else if (op == MPX_OP_ReduceSum) a += v;
            else if (op == MPX_OP_ReduceMin) a = v < a ? v : a;
            else a = v > a ? v : a;
            o->f32[k] = (float)a;
        } else {
            int64_t v = geti(x, i), a = o->i64[k];
            if (!seen[k]) a = v;
            else if (op == MPX_OP_ReduceProd) a = s64(u(a) * u(v));
            else if (op == MPX_OP_ReduceSum) a = s64(u(a) + u(v));
            else if (op == MPX_OP_ReduceMin) a = v < a ? v : a;
            else a = v > a ? v : a;
            o->i64[k] = a;
        }
        seen[k] = true;
    }
    /* Empty reductions: the identity element (min/max of nothing is not defined). */
    for (int64_t k = 0; k < o->nelem; k++) {
        if (seen[k]) continue;
        if (op == MPX_OP_ReduceMin || op == MPX_OP_ReduceMax) return false;
        put(o, k, op == MPX_OP_ReduceProd ? 1.0 : 0.0, op == MPX_OP_ReduceProd, o->f32 != NULL);
    }
    return true;
}

static bool fold_split(mpx_sctx *c, mpx_status *st) {
    const mpx_tensor *x = in(c, 0);
    int ax = c->axis;
    if (x->nelem == 0) { /* every part is empty; see mpx_fold_node */
        bool ok;
        for (int j = 0; j < c->n->n_outputs && *st == MPX_OK; j++) *st = alloc_out(c, j, &ok);
        return *st == MPX_OK;
    }
    int64_t outer = 1, inner = 1, off = 0;
    for (int i = 0; i < ax; i++) outer *= x->dims[i];
    for (int i = ax + 1; i < x->rank; i++) inner *= x->dims[i];
    for (int j = 0; j < c->n->n_outputs; j++) {
        mpx_tensor *o = c->n->outputs[j];
        if (!o || o->rank < 0 || o->dims[ax] < 0) return false;
        int64_t len = o->dims[ax];
        bool ok;
        if ((*st = alloc_out(c, j, &ok)) || !ok) {
            off += len;
            continue;
        }
        int64_t k = 0;
        for (int64_t a = 0; a < outer; a++)
            for (int64_t b = 0; b < len * inner; b++) copy1(o, k++, x, (a * x->dims[ax] + off) * inner + b);
        off += len;
    }
    return true;
}

static bool fold_range(mpx_sctx *c, mpx_tensor *o) {
    const mpx_tensor *a = in(c, 0), *d = in(c, 2);
    for (int64_t i = 0; i < o->nelem; i++) {
        if (o->i64) o->i64[i] = s64(u(geti(a, 0)) + u(i) * u(geti(d, 0)));
        else o->f32[i] = (float)(getf(a, 0) + (double)i * getf(d, 0));
    }
    return true;
}

static bool fold_constant_of_shape(mpx_sctx *c, mpx_tensor *o) {
    const mpx_attr *a = mpx_node_attr(c->n, "value");
    const mpx_tensor *v = a && a->type == MPX_ATTR_TENSOR ? a->t : NULL;
    if (v && v->nelem != 1) return false;
    for (int64_t i = 0; i < o->nelem; i++) {
        if (!v) o->f32[i] = 0.0f;
        else if (v->f32 && o->f32) o->f32[i] = v->f32[0];
        else if (v->i64 && o->i64) o->i64[i] = v->i64[0];
        else return false;
    }
    return true;
}

mpx_status mpx_fold_node(mpx_sctx *c) {
    mpx_node *n = c->n;
    mpx_op op = n->op;
    mpx_tensor *o = n->n_outputs > 0 ? n->outputs[0] : NULL;
    if (!o || op == MPX_OP_Constant) return MPX_OK;
    mpx_status st = MPX_OK;
    bool ok;

    /* Shape and Size need only the input's shape. */
    if (op == MPX_OP_Shape || op == MPX_OP_Size) {
        const mpx_tensor *x = in(c, 0);
        if (!x || x->rank < 0) return MPX_OK;
        if (op == MPX_OP_Shape) {
            for (int64_t i = 0; i < o->nelem; i++)
                if (x->dims[c->p[0] + i] < 0) return MPX_OK;
        } else if (x->nelem < 0) {
            return MPX_OK;
        }
        if ((st = alloc_out(c, 0, &ok)) || !ok) return st;
        if (op == MPX_OP_Size) o->i64[0] = x->nelem;
        else
            for (int64_t i = 0; i < o->nelem; i++) o->i64[i] = x->dims[c->p[0] + i];
        return MPX_OK;
    }

    /* Everything else needs every present input's value. Inputs that only
     * carry shape arguments (Reshape's shape, ...) are values too. */
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !has_value(n->inputs[i])) return MPX_OK;
    if (n->n_inputs == 0 || !in(c, 0)) return MPX_OK;

    if (op == MPX_OP_Split) {
        if (!c->planned) return MPX_OK;
        if (!fold_split(c, &st))
            for (int j = 0; j < n->n_outputs; j++)
                if (n->outputs[j] && (n->outputs[j]->flags & MPX_T_FOLDED)) drop(n->outputs[j]);
        return st;
    }
    if ((st = alloc_out(c, 0, &ok)) || !ok) return st;
    /* An empty result is known without computing anything. It is also the
     * only case where the folders' products of dims could overflow: a 0 dim
     * lets the other dims be 2^31 each, while for a non-empty output every
     * product they take is bounded by an element count. */
    if (o->nelem == 0) return MPX_OK;
    bool done = false;
    binop b = binop_of(op);
    if (b != B_NONE) {
        done = fold_binary(c, o, b);
    } else {
        switch (op) {
        case MPX_OP_Floor: case MPX_OP_Ceil: case MPX_OP_Round: case MPX_OP_Neg: case MPX_OP_Abs:
        case MPX_OP_Sqrt: case MPX_OP_Reciprocal: case MPX_OP_Sign: case MPX_OP_Relu: case MPX_OP_Not:
            done = fold_unary(c, o);
            break;
        case MPX_OP_Identity: case MPX_OP_Dropout: case MPX_OP_Reshape: case MPX_OP_Flatten:
        case MPX_OP_Squeeze: case MPX_OP_Unsqueeze:
            done = fold_copy(c, o);
            break;
        case MPX_OP_Cast: done = fold_cast(c, o); break;
        case MPX_OP_Gather: done = c->planned && fold_gather(c, o, &st); break;
        case MPX_OP_Slice: done = c->planned && fold_slice(c, o); break;
        case MPX_OP_Concat: done = c->planned && fold_concat(c, o); break;
        case MPX_OP_Transpose: done = c->planned && fold_transpose(c, o); break;
        case MPX_OP_Expand: done = fold_expand(c, o); break;
        case MPX_OP_Where: done = fold_where(c, o); break;
        case MPX_OP_Tile: done = fold_tile(c, o); break;
        case MPX_OP_ReduceProd: case MPX_OP_ReduceSum: case MPX_OP_ReduceMin: case MPX_OP_ReduceMax:
            done = c->planned && fold_reduce(c, o);
            break;
        case MPX_OP_Range: done = fold_range(c, o); break;
        case MPX_OP_ConstantOfShape: done = fold_constant_of_shape(c, o); break;
        default: break;
        }
    }
    if (!done) drop(o);
    return st;
}
