/* kern_binary.c - broadcasting kernels: arithmetic (Add ... Mod, Pow, PRelu),
 * variadic Max/Min/Sum/Mean, comparisons, logic, Where.
 *
 * Broadcasting is ONNX's multidirectional (numpy) rule; the loops walk the
 * output in rows of its innermost dimension after merging adjacent dims that
 * every input steps through alike, so [N,C,H,W] + [1,C,1,1] runs as rows of
 * H*W with a constant right operand.
 *
 * Integer values (int8 ... uint64, held as int64) wrap to their dtype's width
 * after arithmetic; Div truncates toward zero and Mod takes the divisor's sign
 * (fmod=0) or the dividend's (fmod=1), as ONNX Runtime computes them; integer
 * division or Mod by zero is refused (it traps in ORT). uint64 values above
 * INT64_MAX are held as their bit pattern, so Div, Mod, Max, Min and the
 * comparisons treat them as negative (no model seen uses them). */
#include "kern_elem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the broadcast walk ------------------------------------------------------------ */

/* The walk's type is kern_internal.h's (mpx_k_bwalk, shared with kern_f64.c);
 * the functions stay static here under the exported names' wrappers, so the
 * fp32 ops' calls are compiled as before. */
enum { WALK_MAX_IN = MPX_K_WALK_MAX_IN };
typedef mpx_k_bwalk bwalk;

static void bwalk_init(bwalk *w, int rank, const int64_t *dims, int nin,
                       const mpx_value *const *v) {
    int64_t st[WALK_MAX_IN][MPX_MAX_RANK];
    w->nin = nin;
    for (int k = 0; k < nin; k++) mpx_k_bcast_strides(v[k], rank, dims, st[k]);
    w->rank = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1) continue;
        int j = w->rank - 1;
        bool merge = j >= 0;
        for (int k = 0; k < nin && merge; k++) merge = w->st[k][j] == st[k][i] * dims[i];
        if (merge) {
            w->dims[j] *= dims[i];
            for (int k = 0; k < nin; k++) w->st[k][j] = st[k][i];
            continue;
        }
        w->dims[w->rank] = dims[i];
        for (int k = 0; k < nin; k++) w->st[k][w->rank] = st[k][i];
        w->rank++;
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->dims[0] = 1;
        for (int k = 0; k < nin; k++) w->st[k][0] = 0;
    }
}

/* One row: n outputs from y[yo]; input k starts at off[k] and steps by
 * step[k], which is 0 (broadcast) or 1: a dim's stride is the product of the
 * input's later dims, which are all 1 after the innermost non-1 output dim. */
typedef mpx_k_row_fn row_fn;

static void bwalk_run(const bwalk *w, void *ctx, row_fn fn) {
    int r = w->rank;
    int64_t inner = w->dims[r - 1], rows = 1;
    int64_t co[MPX_MAX_RANK] = {0}, off[WALK_MAX_IN] = {0}, step[WALK_MAX_IN] = {0};
    for (int k = 0; k < w->nin; k++) step[k] = w->st[k][r - 1];
    for (int i = 0; i < r - 1; i++) rows *= w->dims[i];
    if (inner == 0) return;
    for (int64_t row = 0; row < rows; row++) {
        fn(ctx, inner, row * inner, off, step);
        for (int i = r - 2; i >= 0; i--) {
            for (int k = 0; k < w->nin; k++) off[k] += w->st[k][i];
            if (++co[i] < w->dims[i]) break;
            for (int k = 0; k < w->nin; k++) off[k] -= w->st[k][i] * w->dims[i];
            co[i] = 0;
        }
    }
}

void mpx_k_bwalk_init(mpx_k_bwalk *w, int rank, const int64_t *dims, int nin, const mpx_value *const *v) {
    bwalk_init(w, rank, dims, nin, v);
}

void mpx_k_bwalk_run(const mpx_k_bwalk *w, void *ctx, mpx_k_row_fn fn) { bwalk_run(w, ctx, fn); }

/* The same walk split into items of whole rows or, for few long rows, row
 * pieces, on two threads: elementwise ops on large tensors are a third of an
 * fp32 forward of a CNN and bound by memory traffic one core cannot saturate.
 * Each output element is computed exactly as in bwalk_run (only who computes
 * it changes), so results are the same bits. From 2^16 output elements
 * (2^18 until the pool stopped waiting for sleeping workers). */
enum { PAR_MIN = 1 << 16, PAR_PIECE = 1 << 15 };

typedef struct bpar {
    const bwalk *w;
    void *ctx;
    row_fn fn;
    int64_t inner, rows;
    int64_t pieces;        /* pieces per row (long rows), or 1 */
    int64_t rows_per_item; /* rows per item (short rows), or 1 */
} bpar;

static void bpar_item(void *vc, int tid, long item) {
    (void)tid;
    const bpar *p = vc;
    const bwalk *w = p->w;
    int r = w->rank;
    int64_t row = (int64_t)item / p->pieces * p->rows_per_item, piece = (int64_t)item % p->pieces;
    int64_t i0 = 0, i1 = p->inner;
    if (p->pieces > 1) {
        i0 = piece * PAR_PIECE;
        i1 = i0 + PAR_PIECE < p->inner ? i0 + PAR_PIECE : p->inner;
    }
    int64_t row_end = row + p->rows_per_item < p->rows ? row + p->rows_per_item : p->rows;
    int64_t off[WALK_MAX_IN] = {0}, step[WALK_MAX_IN] = {0}, co[MPX_MAX_RANK] = {0}, rest = row;
    for (int i = r - 2; i >= 0; i--) {
        co[i] = rest % w->dims[i];
        rest /= w->dims[i];
        for (int k = 0; k < w->nin; k++) off[k] += co[i] * w->st[k][i];
    }
    for (int k = 0; k < w->nin; k++) step[k] = w->st[k][r - 1];
    for (; row < row_end; row++) {
        int64_t o[WALK_MAX_IN];
        for (int k = 0; k < w->nin; k++) o[k] = off[k] + i0 * step[k];
        p->fn(p->ctx, i1 - i0, row * p->inner + i0, o, step);
        for (int i = r - 2; i >= 0; i--) { /* next row, as bwalk_run */
            for (int k = 0; k < w->nin; k++) off[k] += w->st[k][i];
            if (++co[i] < w->dims[i]) break;
            for (int k = 0; k < w->nin; k++) off[k] -= w->st[k][i] * w->dims[i];
            co[i] = 0;
        }
    }
}

static void bwalk_run_par(const bwalk *w, int64_t n_out, void *ctx, row_fn fn) {
    int nt = kg_threads();
    if (n_out < PAR_MIN || nt < 2) {
        bwalk_run(w, ctx, fn);
        return;
    }
    int r = w->rank;
    bpar p = {w, ctx, fn, w->dims[r - 1], 0, 1, 1};
    if (p.inner == 0) return;
    p.rows = n_out / p.inner;
    if (p.inner > 2 * PAR_PIECE) p.pieces = (p.inner + PAR_PIECE - 1) / PAR_PIECE;
    else if (p.inner < PAR_PIECE) p.rows_per_item = PAR_PIECE / p.inner;
    int64_t items = (p.rows + p.rows_per_item - 1) / p.rows_per_item * p.pieces;
    mpx_k_parallel((long)items, nt, bpar_item, &p);
}

/* ---- operations ------------------------------------------------------------------------ */

typedef enum bop {
    B_ADD, B_SUB, B_MUL, B_DIV, B_RDIV, B_POW, B_POW2, B_POW3, B_MOD, B_FMOD, B_MAX, B_MIN, B_PRELU,
    B_SHL, B_SHR, /* BitShift: unsigned integers only */
    B_BAND, B_BOR, B_BXOR, /* BitwiseAnd, BitwiseOr, BitwiseXor: integers only */
    B_EQ, B_GT, B_LT, B_GE, B_LE, B_AND, B_OR, B_XOR
} bop;

/* Comparisons and logic: bool results. */
static bool bop_gives_bool(bop op) { return op >= B_EQ; }

typedef struct bctx {
    bop op;
    const mpx_format *round; /* float outputs rounded to it piece by piece (NULL: not) */
    const mpx_format *recip; /* B_RDIV: the divisor's reciprocal rounded to it */
    const float *fa, *fb;
    const int64_t *ia, *ib;
    float *fy;
    int64_t *iy;
    int64_t bad_at;    /* first element an integer op refused; -1: none */
} bctx;

/* A row of y = f(A, B) for the four stride patterns; steps are 0 or 1. */
#define ROW(T, y, a, b, expr)                                                       \
    do {                                                                            \
        if (sa && sb) {                                                             \
            for (int64_t i = 0; i < n; i++) {                                       \
                const T A = (a)[i], B = (b)[i];                                     \
                (y)[i] = (expr);                                                    \
            }                                                                       \
        } else if (sb) {                                                            \
            const T A = (a)[0];                                                     \
            for (int64_t i = 0; i < n; i++) {                                       \
                const T B = (b)[i];                                                 \
                (y)[i] = (expr);                                                    \
            }                                                                       \
        } else if (sa) {                                                            \
            const T B = (b)[0];                                                     \
            for (int64_t i = 0; i < n; i++) {                                       \
                const T A = (a)[i];                                                 \
                (y)[i] = (expr);                                                    \
            }                                                                       \
        } else {                                                                    \
            const T A = (a)[0], B = (b)[0];                                         \
            for (int64_t i = 0; i < n; i++) (y)[i] = (expr);                        \
        }                                                                           \
    } while (0)

/* Max and Min propagate NaN from either side (ORT since 1.19, numpy). */
static float fmax_nan(float a, float b) { return a != a || a > b ? a : b; }
static float fmin_nan(float a, float b) { return a != a || a < b ? a : b; }

/* Compiled for AVX-512, AVX2 and the baseline (each element is the same IEEE
 * operation in every copy, so the same bits): the baseline's 4-lane loops
 * were a fifth of rec's forward (per-channel scales and hard-swish chains). */
MPX_K_CLONES("avx512f", "avx2", "default")
static void frow_plain(void *vc, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    bctx *c = vc;
    /* b is an integer exponent for B_POW2/B_POW3, which do not read it */
    const float *a = c->fa + off[0], *b = c->fb ? c->fb + off[1] : NULL;
    int64_t sa = step[0], sb = step[1];
    if (bop_gives_bool(c->op)) {
        int64_t *y = c->iy + yo;
        switch (c->op) {
        case B_EQ: ROW(float, y, a, b, A == B); break;
        case B_GT: ROW(float, y, a, b, A > B); break;
        case B_LT: ROW(float, y, a, b, A < B); break;
        case B_GE: ROW(float, y, a, b, A >= B); break;
        case B_LE: ROW(float, y, a, b, A <= B); break;
        default: break; /* And, Or, Xor: refused for floats before the walk */
        }
        return;
    }
    float *y = c->fy + yo;
    switch (c->op) {
    case B_ADD: ROW(float, y, a, b, A + B); break;
    case B_SUB: ROW(float, y, a, b, A - B); break;
    case B_MUL: ROW(float, y, a, b, A * B); break;
    case B_DIV: ROW(float, y, a, b, A / B); break;
    case B_RDIV: ROW(float, y, a, b, A * mpx_round_value(c->recip, 1.0f / B)); break;
    case B_POW: ROW(float, y, a, b, powf(A, B)); break;
    case B_POW2: /* the exponent is one value */
        for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] * a[i * sa];
        break;
    case B_POW3:
        for (int64_t i = 0; i < n; i++) y[i] = a[i * sa] * a[i * sa] * a[i * sa];
        break;
    case B_FMOD: ROW(float, y, a, b, fmodf(A, B)); break;
    case B_MAX: ROW(float, y, a, b, fmax_nan(A, B)); break;
    case B_MIN: ROW(float, y, a, b, fmin_nan(A, B)); break;
    case B_PRELU: ROW(float, y, a, b, A > 0.0f ? A : A * B); break;
    default: break; /* comparisons above; Mod is B_FMOD for floats; BitShift refuses floats */
    }
}

/* A row, rounded to the output's format (a candidate's) piece by piece
 * (mpx_k_out_round). */
static void frow(void *vc, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    bctx *c = vc;
    if (!c->round) {
        frow_plain(vc, n, yo, off, step);
        return;
    }
    for (int64_t i = 0; i < n; i += MPX_K_ROUND_PIECE) {
        const int64_t m = n - i < MPX_K_ROUND_PIECE ? n - i : MPX_K_ROUND_PIECE;
        const int64_t o[2] = {off[0] + i * step[0], off[1] + i * step[1]};
        frow_plain(vc, m, yo + i, o, step);
        mpx_round_array(c->round, c->fy + yo + i, c->fy + yo + i, (size_t)m);
    }
}

/* Integer power by squaring, wrapping; b < 0 as ORT's truncated
 * std::pow: 1, +-1 for a = -1, 0 for |a| >= 2 (0 ** negative is refused). */
static int64_t ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    int64_t r = 1;
    for (; b > 0; b >>= 1) {
        if (b & 1) r = ke_mul(r, a);
        a = ke_mul(a, a);
    }
    return r;
}

static int64_t idiv(int64_t a, int64_t b) { return b == -1 ? ke_sub(0, a) : a / b; }

static int64_t imod(int64_t a, int64_t b, bool fmod_sign) {
    if (b == -1) return 0;
    int64_t m = a % b;
    if (!fmod_sign && m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

static void irow(void *vc, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    bctx *c = vc;
    if (c->bad_at >= 0) return;
    const int64_t *a = c->ia + off[0], *b = c->ib + off[1];
    int64_t sa = step[0], sb = step[1];
    int64_t *y = c->iy + yo;
    switch (c->op) {
    case B_DIV: case B_MOD: case B_FMOD: case B_POW:
        for (int64_t i = 0; i < n; i++) {
            int64_t A = a[i * sa], B = b[i * sb];
            if ((c->op == B_POW ? A == 0 && B < 0 : B == 0)) {
                c->bad_at = yo + i;
                return;
            }
            y[i] = c->op == B_DIV   ? idiv(A, B)
                   : c->op == B_POW ? ipow(A, B)
                                    : imod(A, B, c->op == B_FMOD);
        }
        break;
    case B_ADD: ROW(int64_t, y, a, b, ke_add(A, B)); break;
    case B_SUB: ROW(int64_t, y, a, b, ke_sub(A, B)); break;
    case B_MUL: ROW(int64_t, y, a, b, ke_mul(A, B)); break;
    case B_MAX: ROW(int64_t, y, a, b, A > B ? A : B); break;
    case B_MIN: ROW(int64_t, y, a, b, A < B ? A : B); break;
    case B_PRELU: ROW(int64_t, y, a, b, A > 0 ? A : ke_mul(A, B)); break;
    case B_EQ: ROW(int64_t, y, a, b, A == B); break;
    case B_GT: ROW(int64_t, y, a, b, A > B); break;
    case B_LT: ROW(int64_t, y, a, b, A < B); break;
    case B_GE: ROW(int64_t, y, a, b, A >= B); break;
    case B_LE: ROW(int64_t, y, a, b, A <= B); break;
    case B_AND: ROW(int64_t, y, a, b, (A != 0) & (B != 0)); break;
    case B_OR: ROW(int64_t, y, a, b, (A != 0) | (B != 0)); break;
    case B_XOR: ROW(int64_t, y, a, b, (A != 0) ^ (B != 0)); break;
    /* On the unsigned value (uint64 is held as its bit pattern); a shift by
     * the width or more gives 0, as in ORT (C leaves it undefined); the
     * result wraps to the type's width afterwards (ke_wrap_all). */
    case B_SHL: ROW(int64_t, y, a, b, (uint64_t)B >= 64 ? 0 : (int64_t)((uint64_t)A << (uint64_t)B)); break;
    case B_SHR: ROW(int64_t, y, a, b, (uint64_t)B >= 64 ? 0 : (int64_t)((uint64_t)A >> (uint64_t)B)); break;
    /* On the bits; the result stays in the type's range (both inputs hold it). */
    case B_BAND: ROW(int64_t, y, a, b, A & B); break;
    case B_BOR: ROW(int64_t, y, a, b, A | B); break;
    case B_BXOR: ROW(int64_t, y, a, b, A ^ B); break;
    case B_POW2: case B_POW3: case B_RDIV: break; /* float only */
    }
}
#undef ROW

/* Pow with mixed operand types: float base ** int exponent is computed in
 * double and rounded to fp32 (C++'s std::pow(float, int64_t) promotes, as in
 * ORT); int base ** float exponent likewise, then truncated like Cast. */
static void pow_mixed_row(void *vc, int64_t n, int64_t yo, const int64_t *off,
                          const int64_t *step) {
    bctx *c = vc;
    for (int64_t i = 0; i < n; i++) {
        int64_t ka = off[0] + i * step[0], kb = off[1] + i * step[1];
        double a = c->fa ? (double)c->fa[ka] : (double)c->ia[ka];
        double b = c->fb ? (double)c->fb[kb] : (double)c->ib[kb];
        double r = pow(a, b);
        if (c->fy) {
            c->fy[yo + i] = (float)r;
        } else {
            c->iy[yo + i] = r >= -0x1p63 && r < 0x1p63 ? (int64_t)r : INT64_MIN;
        }
    }
}

/* ---- kernels ------------------------------------------------------------------------------ */

static unsigned bop_kinds(bop op) {
    switch (op) {
    case B_EQ: return KE_ANY;
    case B_AND: case B_OR: case B_XOR: return KE_BOOL;
    default: return KE_NUM;
    }
}

static mpx_status same_type(const mpx_kctx *c, const mpx_value *a, int ka, const mpx_value *b,
                            int kb) {
    bool fa = ke_kind(a) == KE_FLOAT, fb = ke_kind(b) == KE_FLOAT;
    if (fa == fb && (fa || a->dtype == b->dtype)) return MPX_OK;
    return mpx_kernel_error(c, MPX_E_INVALID, "inputs %d and %d have different types (%s and %s)",
                            ka, kb, mpx_dtype_name(a->dtype), mpx_dtype_name(b->dtype));
}

/* y = a op b broadcast to y's shape (y may be a itself, for folds). */
static mpx_status apply(const mpx_kctx *c, bop op, const mpx_value *a, const mpx_value *b,
                        mpx_value *y, const mpx_format *round) {
    const mpx_value *v[2] = {a, b};
    bwalk w;
    bwalk_init(&w, y->rank, y->dims, 2, v);
    bctx bc = {op, NULL, NULL, a->f, b->f, a->i, b->i, y->f, y->i, -1};
    /* The accum rule's reciprocal (MPX_ACC_RECIPROCAL): a float Div with a
     * rounded format multiplies by the divisor's reciprocal rounded to it. */
    if (op == B_DIV && a->f && (c->acc.flags & MPX_ACC_RECIPROCAL) && !mpx_acc_is_fp32(&c->acc)) {
        bc.op = B_RDIV;
        bc.recip = c->acc.fmt;
    }
    if (y->n == 0) return MPX_OK;
    if (op == B_POW && !a->f != !b->f) { /* one operand float, the other int */
        bwalk_run(&w, &bc, pow_mixed_row);
    } else if (a->f) {
        bc.round = bop_gives_bool(op) ? NULL : round;
        bwalk_run_par(&w, y->n, &bc, frow); /* float rows never write bc's shared fields */
    } else {
        bwalk_run(&w, &bc, irow);
    }
    if (bc.bad_at >= 0)
        return mpx_kernel_error(c, MPX_E_INVALID, "integer %s at output element %lld",
                                op == B_POW ? "0 to a negative power" : "division by zero",
                                (long long)bc.bad_at);
    return MPX_OK;
}

static mpx_status binary(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                         int n_out, bop op) {
    const mpx_value *a, *b;
    unsigned kinds = bop_kinds(op);
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, kinds, false, &a);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 1, kinds, false, &b);
    if (st != MPX_OK) return st;
    if (op != B_POW && (st = same_type(c, a, 0, b, 1)) != MPX_OK) return st;
    if ((op == B_BAND || op == B_BOR || op == B_BXOR) && (a->f || b->f))
        return mpx_kernel_error(c, MPX_E_INVALID, "%s takes integers, not %s", c->node->op_type, mpx_dtype_name(a->dtype));
    if (op == B_SHL) {
        const char *dir = mpx_node_attr_string(c->node, "direction", "");
        if (strcmp(dir, "RIGHT") == 0) op = B_SHR;
        else if (strcmp(dir, "LEFT") != 0)
            return mpx_kernel_error(c, MPX_E_INVALID, "direction \"%s\" is not LEFT or RIGHT", dir);
        mpx_dtype t = a->dtype;
        if (t != MPX_DT_UINT8 && t != MPX_DT_UINT16 && t != MPX_DT_UINT32 && t != MPX_DT_UINT64)
            return mpx_kernel_error(c, MPX_E_INVALID, "BitShift takes unsigned integers, not %s", mpx_dtype_name(t));
    }
    if (op == B_MOD) {
        if (mpx_node_attr_int(c->node, "fmod", 0)) op = B_FMOD;
        else if (a->f)
            return mpx_kernel_error(c, MPX_E_INVALID,
                                    "Mod of float values needs fmod=1 (ONNX defines fmod=0 for "
                                    "integers only)");
    }
    /* ORT squares and cubes by multiplication when the exponent is one value. */
    if (op == B_POW && a->f && b->n == 1) {
        double e = b->f ? (double)b->f[0] : (double)b->i[0];
        if (e == 2.0) op = B_POW2;
        else if (e == 3.0) op = B_POW3;
    }
    const mpx_value *v[2] = {a, b};
    int rank;
    int64_t dims[MPX_MAX_RANK];
    if ((st = mpx_k_bcast_shape(c, 2, v, &rank, dims)) != MPX_OK) return st;
    if (op == B_PRELU) {
        /* slope broadcasts to X, never X to slope */
        bool same = rank == a->rank;
        for (int i = 0; same && i < rank; i++) same = dims[i] == a->dims[i];
        if (!same)
            return mpx_kernel_error(c, MPX_E_SHAPE,
                                    "slope (rank %d) does not broadcast to X (rank %d) without "
                                    "growing X",
                                    b->rank, a->rank);
    }
    mpx_dtype dt = bop_gives_bool(op) ? MPX_DT_BOOL : a->dtype;
    if ((st = mpx_k_alloc_raw(c, &out[0], dt, rank, dims)) != MPX_OK) return st;
    /* a float result rounded as it is made, for the executor (mpx_kctx.out_round) */
    const bool mixed_pow = op == B_POW && !a->f != !b->f; /* not through frow */
    const mpx_format *round = out[0].f && a->f && !mixed_pow ? mpx_k_out_round(c) : NULL;
    if ((st = apply(c, op, a, b, &out[0], round)) != MPX_OK) return ke_fail(&out[0], st);
    if (round) *c->out_rounded = true;
    ke_wrap_all(&out[0]);
    return MPX_OK;
}

#define BINARY_KERNEL(fn, op)                                                                \
    mpx_status fn(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,  \
                  int n_out) {                                                               \
        return binary(c, in, n_in, out, n_out, op);                                          \
    }

BINARY_KERNEL(mpx_k_add, B_ADD)
BINARY_KERNEL(mpx_k_sub, B_SUB)
BINARY_KERNEL(mpx_k_mul, B_MUL)
BINARY_KERNEL(mpx_k_div, B_DIV)
BINARY_KERNEL(mpx_k_pow, B_POW)
BINARY_KERNEL(mpx_k_mod, B_MOD)
BINARY_KERNEL(mpx_k_prelu, B_PRELU)
BINARY_KERNEL(mpx_k_bit_shift, B_SHL)
BINARY_KERNEL(mpx_k_bitwise_and, B_BAND)
BINARY_KERNEL(mpx_k_bitwise_or, B_BOR)
BINARY_KERNEL(mpx_k_bitwise_xor, B_BXOR)
BINARY_KERNEL(mpx_k_and, B_AND)
BINARY_KERNEL(mpx_k_or, B_OR)
BINARY_KERNEL(mpx_k_xor, B_XOR)
BINARY_KERNEL(mpx_k_equal, B_EQ)
BINARY_KERNEL(mpx_k_greater, B_GT)
BINARY_KERNEL(mpx_k_less, B_LT)
BINARY_KERNEL(mpx_k_greater_or_equal, B_GE)
BINARY_KERNEL(mpx_k_less_or_equal, B_LE)

/* ---- variadic ------------------------------------------------------------------------------- */

/* Sum and Mean with a rounding accumulator: per output element, input 0 is
 * the initial sum and inputs 1, 2, ... are added in order through mpx_acc. */
static mpx_status sum_acc(const mpx_kctx *c, const mpx_value *const *v, int n, mpx_value *y) {
    int r = y->rank;
    int64_t(*st)[MPX_MAX_RANK] = malloc((size_t)n * sizeof *st);
    int64_t *off = calloc((size_t)n, sizeof *off);
    if (!st || !off) {
        free(st);
        free(off);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    for (int k = 0; k < n; k++) mpx_k_bcast_strides(v[k], r, y->dims, st[k]);
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t i = 0; i < y->n; i++) {
        mpx_acc a;
        mpx_acc_init(&a, &c->acc, v[0]->f[off[0]]);
        for (int k = 1; k < n; k++) mpx_acc_add(&a, v[k]->f[off[k]]);
        y->f[i] = mpx_acc_result(&a);
        for (int d = r - 1; d >= 0; d--) {
            for (int k = 0; k < n; k++) off[k] += st[k][d];
            if (++co[d] < y->dims[d]) break;
            for (int k = 0; k < n; k++) off[k] -= st[k][d] * y->dims[d];
            co[d] = 0;
        }
    }
    free(st);
    free(off);
    return MPX_OK;
}

/* Max, Min, Sum, Mean of one or more inputs, broadcast together; folded left
 * (((x0 op x1) op x2) ...). Mean is that sum divided by n, as ONNX's test
 * cases compute it. */
static mpx_status variadic(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                           mpx_value *out, int n_out, bop op, bool mean) {
    mpx_status st = ke_need_out(c, n_out);
    if (st != MPX_OK) return st;
    if (n_in < 1) return mpx_kernel_error(c, MPX_E_INVALID, "the op needs at least one input");
    unsigned kinds = mean ? KE_FLOAT : KE_NUM;
    for (int k = 0; k < n_in; k++) {
        const mpx_value *v;
        if ((st = ke_input(c, in, n_in, k, kinds, false, &v)) != MPX_OK) return st;
        if (k > 0 && (st = same_type(c, in[0], 0, v, k)) != MPX_OK) return st;
    }
    int rank;
    int64_t dims[MPX_MAX_RANK];
    if ((st = mpx_k_bcast_shape(c, n_in, in, &rank, dims)) != MPX_OK) return st;
    if ((st = mpx_k_alloc(c, &out[0], in[0]->dtype, rank, dims)) != MPX_OK) return st;
    mpx_value *y = &out[0];
    if (op == B_ADD && y->f && !mpx_acc_is_fp32(&c->acc)) {
        st = sum_acc(c, in, n_in, y);
    } else if (n_in == 1) {
        if (y->f) memcpy(y->f, in[0]->f, (size_t)y->n * sizeof *y->f);
        else memcpy(y->i, in[0]->i, (size_t)y->n * sizeof *y->i);
    } else {
        st = apply(c, op, in[0], in[1], y, NULL);
        for (int k = 2; k < n_in && st == MPX_OK; k++) st = apply(c, op, y, in[k], y, NULL);
    }
    if (st != MPX_OK) return ke_fail(y, st);
    if (mean)
        for (int64_t i = 0; i < y->n; i++) y->f[i] /= (float)n_in;
    ke_wrap_all(y);
    return MPX_OK;
}

mpx_status mpx_k_max(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                     int n_out) {
    return variadic(c, in, n_in, out, n_out, B_MAX, false);
}

mpx_status mpx_k_min(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                     int n_out) {
    return variadic(c, in, n_in, out, n_out, B_MIN, false);
}

mpx_status mpx_k_sum(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                     int n_out) {
    return variadic(c, in, n_in, out, n_out, B_ADD, false);
}

mpx_status mpx_k_mean(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                      int n_out) {
    return variadic(c, in, n_in, out, n_out, B_ADD, true);
}

/* ---- Where ---------------------------------------------------------------------------------- */

typedef struct wctx {
    const int64_t *cond;
    const float *fx, *fy;
    const int64_t *ix, *iy;
    float *fo;
    int64_t *io;
} wctx;

static void where_row(void *vc, int64_t n, int64_t yo, const int64_t *off, const int64_t *step) {
    const wctx *w = vc;
    const int64_t *cd = w->cond + off[0];
    if (w->fo) {
        const float *x = w->fx + off[1], *y = w->fy + off[2];
        for (int64_t i = 0; i < n; i++)
            w->fo[yo + i] = cd[i * step[0]] ? x[i * step[1]] : y[i * step[2]];
    } else {
        const int64_t *x = w->ix + off[1], *y = w->iy + off[2];
        for (int64_t i = 0; i < n; i++)
            w->io[yo + i] = cd[i * step[0]] ? x[i * step[1]] : y[i * step[2]];
    }
}

mpx_status mpx_k_where(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                       int n_out) {
    const mpx_value *cd, *x, *y;
    mpx_status st = ke_need_out(c, n_out);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 0, KE_BOOL, false, &cd);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 1, KE_ANY, false, &x);
    if (st == MPX_OK) st = ke_input(c, in, n_in, 2, KE_ANY, false, &y);
    if (st == MPX_OK) st = same_type(c, x, 1, y, 2);
    if (st != MPX_OK) return st;
    const mpx_value *v[3] = {cd, x, y};
    int rank;
    int64_t dims[MPX_MAX_RANK];
    if ((st = mpx_k_bcast_shape(c, 3, v, &rank, dims)) != MPX_OK) return st;
    if ((st = mpx_k_alloc(c, &out[0], x->dtype, rank, dims)) != MPX_OK) return st;
    if (out[0].n == 0) return MPX_OK;
    bwalk w;
    bwalk_init(&w, rank, dims, 3, v);
    wctx wc = {cd->i, x->f, y->f, x->i, y->i, out[0].f, out[0].i};
    bwalk_run(&w, &wc, where_row);
    return MPX_OK;
}
