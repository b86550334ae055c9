/* kern_qint.c - the integer products of quantised models: MatMulInteger,
 * ConvInteger (int32 sums of zero-point-shifted 8-bit integers) and their
 * requantising forms QLinearMatMul and QLinearConv.
 *
 * They hold no float values, so no plan changes them: mpx runs them so that
 * a quantised model's float parts (before QuantizeLinear, after
 * DequantizeLinear) can be explored. Sums are exact (int64, stored as the
 * int32 a runtime's accumulator holds: 8-bit products wrap only past 2^31,
 * K above 33,000). Requantisation follows ONNX Runtime's CPU kernels
 * (MlasRequantizeOutput): the multiplier a_scale * b_scale / y_scale in
 * float, acc * multiplier in float, rounded half to even, plus y's zero
 * point, saturated to y's type.
 *
 * The sums go through the 16-bit integer core (kern_igemm.c: packed rows,
 * AVX2 where the CPU has it, on the kernel threads) whenever every operand
 * (MatMulInteger's B: its raw values) less its zero point fits 16 bits, as
 * it does for 8-bit types (a constant B's packing, a convolution's constant
 * weights less a zero point shared by every filter, kept on their tensor
 * and made at load: kern_kept.h); the direct loops remain for the rest (16-bit
 * operands far from their zero point). Both give the same int32 sums (the
 * core sums modulo 2^32, which is what the wrap to int32 keeps of the
 * exact sum; tests/test_qint.c holds the matrix products to the direct
 * loops, test_kern_data the convolutions to a naive sum). */
#include "kern_data.h"
#include "kern_kept.h"
#include "kern_nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- operands ------------------------------------------------------------------------ */

static bool int8ish(mpx_dtype t) {
    return t == MPX_DT_UINT8 || t == MPX_DT_INT8 || t == MPX_DT_UINT16 || t == MPX_DT_INT16 || t == MPX_DT_INT32;
}

static mpx_status int_in(const mpx_kctx *c, const mpx_value *const *in, int n_in, int i, const char *what,
                         const mpx_value **v) {
    *v = kn_opt(in, n_in, i);
    if (!*v) return mpx_kernel_error(c, MPX_E_INVALID, "input %s is required", what);
    if (!(*v)->i || !int8ish((*v)->dtype))
        return mpx_kernel_error(c, MPX_E_INVALID, "%s is %s; 8- or 16-bit integers expected", what,
                                mpx_dtype_name((*v)->dtype));
    return MPX_OK;
}

/* A zero point (optional, 0 when omitted) or scale: one value, or one per
 * row/column/channel (`per` of them). */
static mpx_status per_vec(const mpx_kctx *c, const mpx_value *v, int64_t per, const char *what, bool flt) {
    char sb[160];
    if (!v) return MPX_OK;
    if (flt ? !v->f : !v->i)
        return mpx_kernel_error(c, MPX_E_INVALID, "%s is %s; %s expected", what, mpx_dtype_name(v->dtype),
                                flt ? "float" : "an integer type");
    if (v->n == 1 || v->n == per) return MPX_OK;
    return mpx_kernel_error(c, MPX_E_SHAPE, "%s has shape %s; one value or %lld expected", what, kn_shape(v, sb),
                            (long long)per);
}

static int64_t zp_at(const mpx_value *v, int64_t k) { return !v ? 0 : v->n == 1 ? v->i[0] : v->i[k]; }
static float scale_at(const mpx_value *v, int64_t k) { return v->n == 1 ? v->f[0] : v->f[k]; }

static void int_range(mpx_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case MPX_DT_INT8: *lo = -128, *hi = 127; break;
    case MPX_DT_UINT16: *lo = 0, *hi = 65535; break;
    case MPX_DT_INT16: *lo = -32768, *hi = 32767; break;
    case MPX_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    default: *lo = 0, *hi = 255; break;
    }
}

/* ORT's requantisation of one int32 sum (see the top of the file). */
static int64_t requant(int64_t acc, float mult, int64_t zp, int64_t lo, int64_t hi) {
    float f = nearbyintf((float)acc * mult);
    double y = (double)f + (double)zp;
    return y < (double)lo ? lo : y > (double)hi ? hi : (int64_t)y;
}

static int64_t wrap32(int64_t v) { return (int64_t)(int32_t)(uint32_t)(uint64_t)v; }

/* ---- MatMulInteger, QLinearMatMul ----------------------------------------------------- */

typedef struct mm {
    int64_t M, K, N, batch;
    int rank;               /* of the output */
    int64_t dims[MPX_MAX_RANK];
    int64_t *aoff, *boff;   /* per output batch: offsets of A's and B's matrices */
} mm;

/* numpy matmul's shapes: 1-D operands promoted, batch dims broadcast. */
static mpx_status mm_plan(const mpx_kctx *c, const mpx_value *a, const mpx_value *b, mm *p) {
    char s1[160], s2[160];
    memset(p, 0, sizeof *p);
    if (a->rank < 1 || b->rank < 1)
        return mpx_kernel_error(c, MPX_E_SHAPE, "operands %s and %s must not be scalars", kn_shape(a, s1),
                                kn_shape(b, s2));
    int64_t ad[MPX_MAX_RANK + 1], bd[MPX_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    for (int i = 0; i < ar; i++) ad[i] = a->dims[i];
    for (int i = 0; i < br; i++) bd[i] = b->dims[i];
    if (ar == 1) ad[1] = ad[0], ad[0] = 1, ar = 2;
    if (br == 1) bd[1] = 1, br = 2;
    p->M = ad[ar - 2], p->K = ad[ar - 1], p->N = bd[br - 1];
    if (bd[br - 2] != p->K)
        return mpx_kernel_error(c, MPX_E_SHAPE, "inner dims differ: %s times %s", kn_shape(a, s1), kn_shape(b, s2));
    int nb = (ar > br ? ar : br) - 2;
    int64_t od[MPX_MAX_RANK], as[MPX_MAX_RANK], bs[MPX_MAX_RANK];
    int64_t sa = p->M * p->K, sb = p->K * p->N;
    for (int i = nb - 1; i >= 0; i--) {
        int ia = i - (nb - (ar - 2)), ib = i - (nb - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return mpx_kernel_error(c, MPX_E_SHAPE, "batch dims do not broadcast: %s times %s", kn_shape(a, s1),
                                    kn_shape(b, s2));
        od[i] = da > db ? da : db;
        as[i] = da == 1 ? 0 : sa;
        bs[i] = db == 1 ? 0 : sb;
        sa *= da, sb *= db;
    }
    p->batch = 1;
    for (int i = 0; i < nb; i++) p->batch *= od[i];
    p->aoff = calloc((size_t)(p->batch ? p->batch : 1), sizeof *p->aoff);
    p->boff = calloc((size_t)(p->batch ? p->batch : 1), sizeof *p->boff);
    if (!p->aoff || !p->boff) {
        free(p->aoff), free(p->boff);
        return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    }
    int64_t co[MPX_MAX_RANK] = {0};
    for (int64_t q = 0; q < p->batch; q++) {
        int64_t oa = 0, ob = 0;
        for (int i = 0; i < nb; i++) oa += co[i] * as[i], ob += co[i] * bs[i];
        p->aoff[q] = oa, p->boff[q] = ob;
        for (int i = nb - 1; i >= 0; i--) {
            if (++co[i] < od[i]) break;
            co[i] = 0;
        }
    }
    for (int i = 0; i < nb; i++) p->dims[p->rank++] = od[i];
    if (a->rank > 1) p->dims[p->rank++] = p->M;
    if (b->rank > 1) p->dims[p->rank++] = p->N;
    return MPX_OK;
}

/* Kp: K rounded up to the 16-bit core's 16 terms, or the 8-bit core's 64. */
static int64_t pad16(int64_t k) { return (k + 15) / 16 * 16; }
static int64_t pad64(int64_t k) { return (k + 63) / 64 * 64; }

/* v - zp as a 16-bit operand, or false when it does not fit. */
static bool to16(int64_t v, int64_t zp, int16_t *out) {
    int64_t d = v - zp;
    if (d < INT16_MIN || d > INT16_MAX) return false;
    *out = (int16_t)d;
    return true;
}

/* The direct loops: int64 sums wrapped to int32. */
static void mm_direct(const mm *p, const mpx_value *a, const mpx_value *b, const mpx_value *azp,
                      const mpx_value *bzp, int64_t *acc) {
    for (int64_t q = 0; q < p->batch; q++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++) {
                int64_t s = 0, za = zp_at(azp, m), zb = zp_at(bzp, n);
                const int64_t *ar = a->i + p->aoff[q] + m * p->K, *bc = b->i + p->boff[q] + n;
                for (int64_t k = 0; k < p->K; k++) s += (ar[k] - za) * (bc[k * p->N] - zb);
                acc[(q * p->M + m) * p->N + n] = wrap32(s);
            }
}

/* ---- the packed path ----------------------------------------------------------------
 * Every batch that reads the same matrix of B is one product: their rows of
 * A stacked as one tall A (a 3-D activation times a 2-D weight, as
 * quantize_dynamic writes a transformer's projections, is one GEMM, not a
 * batch of one-row products each packing B again). B is packed once per
 * call as 16-bit rows of its columns (B^T), from its raw values: the zero
 * points come in as a correction, sum (a - za)(b - zb) = sum (a - za) b -
 * zb sum (a - za), exact modulo 2^32 like the sums themselves, so a
 * constant B's packing does not depend on them and is kept on its tensor
 * (kern_kept.h: KG_KEPT_IGEMM_BT), as runtimes pack weights once. A's rows
 * are shifted by their zero point as each item packs them. Items: blocks of
 * rows times chunks of columns, on the kernel threads. */

/* Rows of A per item: a block of 24 rows of K terms (the core's tiles take
 * three at a time) stays in L2 while the core passes the item's columns of
 * B over it. */
#define MM_ROWS 24

/* B's matrix at b (K x N, row-major) as N rows of Kp 16-bit values, less
 * zb (one value, or one per column; NULL: its raw values): a transpose, in
 * items of BT_KT rows of B by at most BT_COLS columns. An item reads its
 * rows' runs in order into a tile (its 16-bit values, on the thread's
 * buffer), then writes one 64-byte line of each bt row from the tile: B is
 * read as long runs, bt written line by line. Read in place column by
 * column, B's rows lie N * 8 bytes apart, a multiple of 4 KiB for the usual
 * widths, so the lines of a step fell in one L1 set and every read missed:
 * half a quantised BERT-style encoder's first run (perf; 768 x 3072 and
 * 3072 x 768 weights). The tile's rows are padded by a line for the same
 * reason. */
enum { BT_KT = 32, BT_COLS = 4096, BT_TSTR = BT_COLS + 32 };

typedef struct bt_job {
    const int64_t *b;
    int64_t K, N, Kp, cblocks;
    const mpx_value *zb;
    int64_t off;    /* taken from every value too (the 8-bit core's B: 128 for uint8, else 0) */
    int16_t *bt;    /* the 16-bit rows, or NULL: */
    int8_t *bt8;    /* the 8-bit rows (values less off within int8) */
    int16_t *tiles; /* per thread: BT_KT x BT_TSTR */
    volatile int bad;
} bt_job;

/* n values of a row of B less zb then off into dst (16-bit); false: one
 * is outside [lo, lo + 2^bits). One zero point for the row (zb NULL or a
 * single value) is one subtraction a lane: the loop is branch-free and
 * cloned for the vector units; with the zero point's test and the two
 * ranges' choice inside it, it ran one value at a time and was most of a
 * quantised encoder's packing (18% of its first run's samples, perf). */
MPX_K_CLONES("avx512f", "avx2", "default")
static bool bt_row(const int64_t *br, int64_t n, int64_t zb, int64_t off, int64_t lo, int bits, int16_t *dst) {
    uint64_t out = 0;
    for (int64_t c = 0; c < n; c++) {
        const int64_t d = br[c] - zb - off;
        out |= ((uint64_t)d - (uint64_t)lo) >> bits; /* (below lo wraps far above the range) */
        dst[c] = (int16_t)d;
    }
    return out == 0;
}

static void bt_item(void *ctx, int tid, long item) {
    bt_job *j = ctx;
    const int64_t k0 = (int64_t)item / j->cblocks * BT_KT, n0 = (int64_t)item % j->cblocks * BT_COLS;
    const int64_t kn = j->K - k0 < BT_KT ? j->K - k0 : BT_KT, cn = j->N - n0 < BT_COLS ? j->N - n0 : BT_COLS;
    int16_t *tile = j->tiles + (size_t)tid * BT_KT * BT_TSTR;
    const int64_t lo = j->bt8 ? INT8_MIN : INT16_MIN;
    const int bits = j->bt8 ? 8 : 16;
    const bool one_zp = !j->zb || j->zb->n == 1;
    bool fits = true;
    for (int64_t i = 0; i < kn; i++) {
        const int64_t *br = j->b + (k0 + i) * j->N + n0;
        int16_t *tr = tile + i * BT_TSTR;
        if (one_zp) {
            fits &= bt_row(br, cn, zp_at(j->zb, 0), j->off, lo, bits, tr);
            continue;
        }
        for (int64_t c = 0; c < cn; c++) { /* a zero point per column */
            const int64_t d = br[c] - zp_at(j->zb, n0 + c) - j->off;
            fits &= ((uint64_t)d - (uint64_t)lo) >> bits == 0;
            tr[c] = (int16_t)d;
        }
    }
    /* (the last tile zeroes the row's padding up to Kp) */
    const int64_t end = k0 + kn == j->K ? j->Kp - k0 : kn;
    for (int64_t c = 0; c < cn; c++) {
        if (j->bt8) {
            int8_t *dst = j->bt8 + (n0 + c) * j->Kp + k0;
            for (int64_t i = 0; i < kn; i++) dst[i] = (int8_t)tile[i * BT_TSTR + c];
            for (int64_t i = kn; i < end; i++) dst[i] = 0;
        } else {
            int16_t *dst = j->bt + (n0 + c) * j->Kp + k0;
            for (int64_t i = 0; i < kn; i++) dst[i] = tile[i * BT_TSTR + c];
            for (int64_t i = kn; i < end; i++) dst[i] = 0;
        }
    }
    if (!fits) j->bad = 1;
}

/* The 8-bit rows' sums (the correction for A's zero point), rows of bt8
 * a block at a time. */
enum { BT_SUM_ROWS = 256 };

/* The sum of a row's n values modulo 2^32, as the correction takes it:
 * summed in 32 bits, the same value as a 64-bit sum wrapped once, in
 * vector lanes (cloned; a 64-bit scalar loop was a sixth of a quantised
 * encoder's packing). */
MPX_K_CLONES("avx512f", "avx2", "default")
static uint32_t bt_sum(const int8_t *r, int64_t n) {
    uint32_t s = 0;
    for (int64_t k = 0; k < n; k++) {
        const int32_t v = r[k];
        s += (uint32_t)v; /* (sign-extended, then wrapped) */
    }
    return s;
}

static void bt_sum_item(void *ctx, int tid, long item) {
    (void)tid;
    bt_job *j = ctx;
    uint32_t *csum = (uint32_t *)(void *)(j->bt8 + j->N * j->Kp);
    const int64_t n0 = (int64_t)item * BT_SUM_ROWS, nn = j->N - n0 < BT_SUM_ROWS ? j->N - n0 : BT_SUM_ROWS;
    for (int64_t n = n0; n < n0 + nn; n++) csum[n] = bt_sum(j->bt8 + n * j->Kp, j->K);
}

/* B's matrix packed (above) on the kernel threads (not stoppable: a kept
 * packing must be whole): into bt (16-bit, less zb), or into bt8 (8-bit,
 * less off) followed by the rows' sums (N uint32). false: a value does not
 * fit, or out of memory (*oom). */
static bool pack_bt_all(const int64_t *b, int64_t K, int64_t N, int64_t Kp, const mpx_value *zb, int64_t off,
                        int16_t *bt, int8_t *bt8, bool *oom) {
    const int nt = K * N >= 1 << 16 ? (int)kg_threads() : 1;
    bt_job j = {b,  K,   N,   Kp, (N + BT_COLS - 1) / BT_COLS, zb, off, bt, bt8,
                malloc((size_t)nt * BT_KT * BT_TSTR * sizeof(int16_t)), 0};
    if (!j.tiles) {
        *oom = true;
        return false;
    }
    const long items = (long)((K + BT_KT - 1) / BT_KT * j.cblocks);
    if (K) mpx_k_parallel(items, nt, bt_item, &j);
    else if (bt8) memset(bt8, 0, (size_t)(N * Kp));
    else memset(bt, 0, (size_t)(N * Kp) * sizeof *bt);
    if (bt8) mpx_k_parallel((long)((N + BT_SUM_ROWS - 1) / BT_SUM_ROWS), nt, bt_sum_item, &j);
    free(j.tiles);
    return !j.bad;
}

/* The rows of B^T the 8-bit core on path8 reads before their sums: N, or on
 * AVX512-VNNI N rounded up to its panels of 16 (mpx_k_igemm8_panels). */
static int64_t bt8_rows(int64_t N, int path8) { return path8 == 2 ? (N + 15) / 16 * 16 : N; }

/* The key B's raw rows are kept under on owner, and their bytes (8-bit:
 * the rows, in panels on path 2, then their N sums, uint32; 16-bit: the
 * rows). path8: the 8-bit core's path, 0 for the 16-bit one. */
static kg_key bt_raw_key(const mm *p, const mpx_value *b, int64_t boff, int path8, int64_t off8, mpx_tensor *owner) {
    const int kind = path8 == 2 ? KG_KEPT_IGEMM_BT8P : path8 ? KG_KEPT_IGEMM_BT8 : KG_KEPT_IGEMM_BT;
    return (kg_key){.k = {.kind = kind, .a = b->i, .M = p->N, .K = p->K, .ga = boff, .aks = path8 ? off8 : 0},
                    .owner = owner};
}

static int64_t bt_raw_bytes(const mm *p, int path8) {
    return path8 ? bt8_rows(p->N, path8) * pad64(p->K) + p->N * 4 : p->N * pad16(p->K) * 2;
}

/* B's matrix at offset boff packed raw (16-bit), or less off8 (8-bit,
 * with its rows' sums after them) on path8: kept on owner (a constant B)
 * under the offset, else made for this call into *owned. NULL: out of
 * memory (*oom) or a value does not fit. */
static const void *mm_bt_raw(const mm *p, const mpx_value *b, int64_t boff, int path8, int64_t off8,
                             mpx_tensor *owner, float **owned, bool *oom) {
    const bool eight = path8 != 0;
    const int64_t Kp = eight ? pad64(p->K) : pad16(p->K);
    const kg_key key = bt_raw_key(p, b, boff, path8, off8, owner);
    const kg_kept *kept = owner ? kg_kept_find(&key) : NULL;
    if (kept) return kept->ap;
    /* (the values in the kept list's float buffers, 64-byte aligned) */
    const int64_t bytes = bt_raw_bytes(p, eight ? 1 : 0);
    float *buf = kg_alloc((size_t)(bytes / 4 + 1));
    if (!buf) {
        *oom = true;
        return NULL;
    }
    if (!pack_bt_all(b->i + boff, p->K, p->N, Kp, NULL, eight ? off8 : 0, eight ? NULL : (int16_t *)(void *)buf,
                     eight ? (int8_t *)(void *)buf : NULL, oom)) {
        free(buf);
        return NULL;
    }
    if (path8 == 2) { /* the rows into panels, the sums after them (a copy: made once for a constant) */
        float *pan = kg_alloc((size_t)(bt_raw_bytes(p, 2) / 4 + 1));
        if (!pan) {
            free(buf);
            *oom = true;
            return NULL;
        }
        const int8_t *rows = (const int8_t *)(void *)buf;
        int8_t *dst = (int8_t *)(void *)pan;
        mpx_k_igemm8_panels(rows, p->N, Kp, dst);
        memcpy(dst + bt8_rows(p->N, 2) * Kp, rows + p->N * Kp, (size_t)p->N * 4);
        free(buf);
        buf = pan;
    }
    if (owner && kg_kept_add(&key, buf, true)) return buf;
    *owned = buf;
    return buf;
}

typedef struct mm_job {
    const mm *p;
    const int64_t *a;       /* A's values */
    const mpx_value *azp;   /* A's zero point: one, or one per row of a batch (M) */
    const int64_t *qs;      /* the batches that read this B, in order */
    int64_t rows;           /* their rows: (number of them) x M */
    const void *bt;         /* B^T: N rows of Kp (16-bit; 8-bit: then their N sums, uint32) */
    const mpx_value *zb;    /* the zero point to take away as a correction (B packed raw), or NULL */
    int64_t Kp, rblocks, cw; /* items: rblocks blocks of MM_ROWS rows times chunks of cw columns */
    void *abuf;             /* the rows' terms less A's zero point (16-bit), or less offa (8-bit): rows x Kp */
    uint32_t *rsum;         /* the rows' sums of their terms less A's zero point */
    int32_t *cbuf;          /* per thread: MM_ROWS x cw */
    int64_t *acc;           /* batch x M x N */
    bool avx2;
    int path8;              /* the 8-bit core's (mpx_k_igemm8_path), or 0: the 16-bit one */
    int64_t offa, offb;     /* the 8-bit core's: taken from A's values (to uint8) and B's (to int8) */
    volatile int bad;       /* an operand of A that does not fit */
} mm_job;

/* A row of n values less off as bytes into dst, their sum into *sum
 * (modulo 2^32); false: a value less off is not within [0, 255]. (Cloned
 * for the vector units: one pass, no branch.) */
MPX_K_CLONES("avx512f", "avx2", "default")
static bool row8(const int64_t *a, int64_t n, int64_t off, uint8_t *dst, uint32_t *sum) {
    uint64_t out = 0;
    uint32_t s = 0;
    for (int64_t k = 0; k < n; k++) {
        const uint64_t u = (uint64_t)(a[k] - off);
        out |= u >> 8; /* (a negative u wraps far above 255) */
        dst[k] = (uint8_t)u;
        s += (uint32_t)a[k];
    }
    *sum = s;
    return out == 0;
}

/* Rows [r0, r0 + MM_ROWS) of A less its zero point, 16-bit, into abuf,
 * and their sums, once for every column chunk: packing in each chunk's
 * item would repeat it per chunk (six chunks a row block at a BERT-style
 * encoder's 64 rows: a sixth of its MatMulInteger CPU time under perf). */
static void mm_pack_item(void *ctx, int tid, long item) {
    (void)tid;
    mm_job *j = ctx;
    const mm *p = j->p;
    const int64_t K = p->K, Kp = j->Kp, M = p->M;
    const int64_t r0 = (int64_t)item * MM_ROWS, rr = j->rows - r0 < MM_ROWS ? j->rows - r0 : MM_ROWS;
    bool fits = true;
    for (int64_t i = 0; i < rr; i++) {
        const int64_t r = r0 + i, q = j->qs[r / M], m = r % M, za = zp_at(j->azp, m);
        const int64_t *ar = j->a + p->aoff[q] + m * K;
        uint32_t s = 0;
        if (j->path8) {
            uint8_t *dst = (uint8_t *)j->abuf + r * Kp;
            fits &= row8(ar, K, j->offa, dst, &s);
            s -= (uint32_t)K * (uint32_t)za; /* sum (a - za) */
            for (int64_t k = K; k < Kp; k++) dst[k] = 0;
        } else {
            int16_t *dst = (int16_t *)j->abuf + r * Kp;
            for (int64_t k = 0; k < K; k++) {
                const int64_t d = ar[k] - za;
                fits &= d >= INT16_MIN && d <= INT16_MAX;
                dst[k] = (int16_t)d;
                s += (uint32_t)d; /* (modulo 2^32: d's own value where it fits) */
            }
            for (int64_t k = K; k < Kp; k++) dst[k] = 0;
        }
        j->rsum[r] = s;
    }
    if (!fits) j->bad = 1;
}

/* One row of mm_fix8 (below): src less za * csum and zb' * rs, zb' per
 * column (zb[k] - offb) or one (zb NULL: zb0); cloned for the vector
 * units. */
MPX_K_CLONES("avx512f", "avx2", "default")
static void fix8_row(const int32_t *src, const uint32_t *csum, const int64_t *zb, uint32_t zb0, int64_t offb,
                     uint32_t za, uint32_t rs, int64_t n, int64_t *dst) {
    if (!zb)
        for (int64_t k = 0; k < n; k++) dst[k] = (int32_t)((uint32_t)src[k] - za * csum[k] - zb0 * rs);
    else
        for (int64_t k = 0; k < n; k++) dst[k] = (int32_t)((uint32_t)src[k] - za * csum[k] - (uint32_t)(zb[k] - offb) * rs);
}

/* The 8-bit core's sums S = sum a' b' of a' = a - offa and b' = b - offb
 * to the wanted sum (a - za)(b - zb) = (a' - za')(b' - zb'), za' = za -
 * offa, zb' = zb - offb: S - za' sum b' - zb' sum (a' - za'), where sum
 * (a' - za') = sum (a - za) is the row's rsum and sum b' the column's sum
 * kept after B's rows; every term modulo 2^32 like the sums. */
static void mm_fix8(const mm_job *j, int64_t r0, int64_t rr, int64_t c0, int64_t cn, const int32_t *C) {
    const mm *p = j->p;
    const int64_t N = p->N, M = p->M;
    const uint32_t *csum = (const uint32_t *)(const void *)((const int8_t *)j->bt + bt8_rows(N, j->path8) * j->Kp) + c0;
    const mpx_value *zb = j->zb;
    const bool zb_one = !zb || zb->n == 1;
    const uint32_t zb0 = (uint32_t)(zp_at(zb, 0) - j->offb);
    for (int64_t i = 0; i < rr; i++) {
        const int64_t r = r0 + i, q = j->qs[r / M], m = r % M;
        const uint32_t za = (uint32_t)(zp_at(j->azp, m) - j->offa), rs = j->rsum[r];
        fix8_row(C + i * j->cw, csum, zb_one ? NULL : zb->i + c0, zb0, j->offb, za, rs, cn,
                 j->acc + (q * M + m) * N + c0);
    }
}

static void mm_item(void *ctx, int tid, long item) {
    mm_job *j = ctx;
    const mm *p = j->p;
    const int64_t Kp = j->Kp, N = p->N, M = p->M;
    const int64_t rb = (int64_t)item % j->rblocks, cc = (int64_t)item / j->rblocks;
    const int64_t r0 = rb * MM_ROWS, rr = j->rows - r0 < MM_ROWS ? j->rows - r0 : MM_ROWS;
    const int64_t c0 = cc * j->cw, cn = N - c0 < j->cw ? N - c0 : j->cw;
    const uint32_t *rs = j->rsum + r0;
    int32_t *C = j->cbuf + (size_t)tid * MM_ROWS * (size_t)j->cw;
    if (j->path8) {
        mpx_k_igemm8_nt((const uint8_t *)j->abuf + r0 * Kp, (const int8_t *)j->bt + c0 * Kp, rr, cn, Kp, C, j->cw,
                        j->path8);
        mm_fix8(j, r0, rr, c0, cn, C);
        return;
    }
    mpx_k_igemm_nt((const int16_t *)j->abuf + r0 * Kp, (const int16_t *)j->bt + c0 * Kp, rr, cn, Kp, C, j->cw,
                   j->avx2);
    for (int64_t i = 0; i < rr; i++) {
        const int64_t r = r0 + i, q = j->qs[r / M], m = r % M;
        int64_t *dst = j->acc + (q * M + m) * N + c0;
        const int32_t *src = C + i * j->cw;
        if (j->zb)
            for (int64_t n = 0; n < cn; n++)
                dst[n] = (int32_t)((uint32_t)src[n] - (uint32_t)zp_at(j->zb, c0 + n) * rs[i]);
        else
            for (int64_t n = 0; n < cn; n++) dst[n] = src[n];
    }
}

/* Whether v's type keeps every value in 16 bits. */
static bool fits16_type(const mpx_value *v) {
    return v->dtype == MPX_DT_UINT8 || v->dtype == MPX_DT_INT8 || v->dtype == MPX_DT_INT16;
}

/* Whether v's type is an 8-bit one. */
static bool is8(const mpx_value *v) { return v->dtype == MPX_DT_UINT8 || v->dtype == MPX_DT_INT8; }

/* Whether every zero point of v is 0 (or v absent). */
static bool all_zero(const mpx_value *v) {
    for (int64_t k = 0; v && k < v->n; k++)
        if (v->i[k]) return false;
    return true;
}

/* The products of every batch through the core, into acc (batch x M x N);
 * b_owner: the constant B's values belong to (its packing kept there), or
 * NULL. MM_NOFIT: an operand less its zero point does not fit 16 bits (the
 * caller takes the direct loops). */
typedef enum mm_result { MM_DONE, MM_NOFIT, MM_NOMEM } mm_result;

static mm_result mm_packed(const mm *p, const mpx_value *a, const mpx_value *b, const mpx_value *azp,
                            const mpx_value *bzp, mpx_tensor *b_owner, int64_t *acc) {
    /* 8-bit operands on the 8-bit core where the CPU has one: A's values
     * as uint8 (int8 ones plus 128), B's as int8 (uint8 ones less 128),
     * both zero points and the offsets as a correction (mm_fix8) */
    const int path8 = is8(a) && is8(b) ? mpx_k_igemm8_path() : 0;
    const int64_t offa = a->dtype == MPX_DT_INT8 ? -128 : 0, offb = b->dtype == MPX_DT_UINT8 ? 128 : 0;
    const int64_t Kp = path8 ? pad64(p->K) : pad16(p->K), nt = kg_threads();
    /* B raw (its zero points as the correction) when its values fit 16 bits
     * as they are; else B less its zero point, packed for this call */
    const bool raw = path8 || fits16_type(b), corr = raw && !all_zero(bzp);
    int64_t *qs = malloc((size_t)(p->batch + 1) * sizeof *qs);
    bool *done = calloc((size_t)(p->batch + 1), sizeof *done);
    int64_t cw = p->N;
    const int64_t rows_max = p->batch * p->M;
    /* columns in chunks when the rows give the threads too few items */
    const int64_t rblocks_max = (rows_max + MM_ROWS - 1) / MM_ROWS;
    if (rblocks_max < 8 * nt) {
        const int64_t chunks = (8 * nt + rblocks_max - 1) / rblocks_max;
        cw = (p->N + chunks - 1) / chunks;
        cw = (cw + 63) / 64 * 64;
        if (cw > p->N) cw = p->N;
    }
    if (cw < 1) cw = 1;
    void *abuf = malloc((size_t)(rows_max * Kp + 1) * (path8 ? 1 : sizeof(int16_t)));
    uint32_t *rsum = malloc((size_t)(rows_max + 1) * sizeof *rsum);
    int32_t *cbuf = malloc((size_t)(nt * MM_ROWS * cw) * sizeof *cbuf);
    mm_result st = qs && done && abuf && rsum && cbuf ? MM_DONE : MM_NOMEM;
    for (int64_t q0 = 0; !st && q0 < p->batch; q0++) {
        if (done[q0]) continue;
        /* the batches reading the matrix of B at boff[q0] */
        int64_t nq = 0;
        for (int64_t q = q0; q < p->batch; q++)
            if (!done[q] && p->boff[q] == p->boff[q0]) qs[nq++] = q, done[q] = true;
        float *owned = NULL;
        bool oom = false;
        const void *bt = NULL;
        if (raw) {
            bt = mm_bt_raw(p, b, p->boff[q0], path8, offb, b_owner, &owned, &oom);
        } else {
            owned = kg_alloc((size_t)((p->N * Kp + 1) / 2 + 1));
            oom = !owned;
            if (owned && pack_bt_all(b->i + p->boff[q0], p->K, p->N, Kp, bzp, 0, (int16_t *)(void *)owned, NULL, &oom))
                bt = owned;
        }
        if (!bt) {
            free(owned);
            st = oom ? MM_NOMEM : MM_NOFIT;
            break;
        }
        const int64_t rows = nq * p->M, rblocks = (rows + MM_ROWS - 1) / MM_ROWS, chunks = (p->N + cw - 1) / cw;
        mm_job j = {.p = p, .a = a->i, .azp = azp, .qs = qs, .rows = rows, .bt = bt,
                    .zb = path8 || corr ? bzp : NULL, .Kp = Kp, .rblocks = rblocks, .cw = cw, .abuf = abuf,
                    .rsum = rsum, .cbuf = cbuf, .acc = acc, .avx2 = mpx_k_igemm_avx2(), .path8 = path8,
                    .offa = offa, .offb = offb};
        /* (tiny products on one thread: a hand-off costs more than they do) */
        const int threads = rows * p->N * p->K >= 1 << 15 ? (int)nt : 1;
        if (mpx_k_parallel_stoppable((long)rblocks, rows * p->K >= 1 << 15 ? (int)nt : 1, mm_pack_item, &j) && !j.bad)
            mpx_k_parallel_stoppable((long)(rblocks * chunks), threads, mm_item, &j);
        free(owned);
        if (j.bad) st = MM_NOFIT;
    }
    free(qs), free(done), free(abuf), free(rsum), free(cbuf);
    return st;
}

/* The int32 products of every output element, into acc (batch*M*N). A's
 * zero point is per row (M values) or one, B's per column (N) or one.
 * false: out of memory. */
static bool mm_run(const mm *p, const mpx_value *a, const mpx_value *b, const mpx_value *azp,
                   const mpx_value *bzp, mpx_tensor *b_owner, int64_t *acc) {
    const mm_result st = p->M && p->N ? mm_packed(p, a, b, azp, bzp, b_owner, acc) : MM_DONE;
    if (st == MM_NOMEM) return false;
    if (st == MM_NOFIT) mm_direct(p, a, b, azp, bzp, acc);
    return true;
}

/* B's rows as mm_packed keeps them, before the first run (kern_kept.c:
 * mpx_k_prepare_node): B a constant 8-bit matrix, A's type as inferred;
 * raw rows only (a B packed less its zero point is made per call). */
size_t kg_prep_qmm(const mpx_node *n) {
    mpx_tensor *t = kg_prep_owner(n, 1);
    const mpx_tensor *at = n->n_inputs > 0 ? n->inputs[0] : NULL;
    if (!t || !t->i64 || t->rank != 2 || !at || t->dims[0] < 1 || t->dims[1] < 1) return 0;
    mpx_value a = {.dtype = at->dtype}, b;
    mpx_value_view(&b, t);
    const int path8 = is8(&a) && is8(&b) ? mpx_k_igemm8_path() : 0;
    if (!is8(&b) || (!path8 && !fits16_type(&b))) return 0;
    const mm p = {.K = t->dims[0], .N = t->dims[1]};
    const int64_t offb = b.dtype == MPX_DT_UINT8 ? 128 : 0;
    const kg_key key = bt_raw_key(&p, &b, 0, path8, offb, t);
    if (kg_kept_find(&key)) return 0;
    float *owned = NULL;
    bool oom = false;
    const void *bt = mm_bt_raw(&p, &b, 0, path8, offb, t, &owned, &oom);
    free(owned); /* (not kept: another thread kept one meanwhile) */
    return bt && !owned ? (size_t)bt_raw_bytes(&p, path8) : 0;
}

mpx_status mpx_k_matmul_integer(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                int n_out) {
    const mpx_value *a, *b, *azp = kn_opt(in, n_in, 2), *bzp = kn_opt(in, n_in, 3);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "A", &a);
    if (!st) st = int_in(c, in, n_in, 1, "B", &b);
    if (st) return st;
    mm p;
    if ((st = mm_plan(c, a, b, &p))) return st;
    if (!(st = per_vec(c, azp, p.M, "a_zero_point", false)) && !(st = per_vec(c, bzp, p.N, "b_zero_point", false)) &&
        !(st = mpx_k_alloc_raw(c, &out[0], MPX_DT_INT32, p.rank, p.dims)) &&
        !mm_run(&p, a, b, azp, bzp, mpx_k_value_owner(c, 1, b->i), out[0].i))
        st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
    free(p.aoff), free(p.boff);
    return st;
}

mpx_status mpx_k_qlinear_matmul(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                                int n_out) {
    const mpx_value *a, *b, *as = kn_opt(in, n_in, 1), *azp = kn_opt(in, n_in, 2), *bs = kn_opt(in, n_in, 4),
                            *bzp = kn_opt(in, n_in, 5), *ys = kn_opt(in, n_in, 6), *yzp = kn_opt(in, n_in, 7);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "a", &a);
    if (!st) st = int_in(c, in, n_in, 3, "b", &b);
    if (st) return st;
    if (!as || !bs || !ys) return mpx_kernel_error(c, MPX_E_INVALID, "a_scale, b_scale and y_scale are required");
    mm p;
    if ((st = mm_plan(c, a, b, &p))) return st;
    int64_t *acc = NULL;
    if (!(st = per_vec(c, as, 1, "a_scale", true)) && !(st = per_vec(c, azp, 1, "a_zero_point", false)) &&
        !(st = per_vec(c, bs, p.N, "b_scale", true)) && !(st = per_vec(c, bzp, p.N, "b_zero_point", false)) &&
        !(st = per_vec(c, ys, 1, "y_scale", true)) && !(st = per_vec(c, yzp, 1, "y_zero_point", false)) &&
        !(st = kn_scratch(c, (size_t)(p.batch * p.M * p.N), sizeof *acc, (void **)&acc))) {
        mpx_dtype yt = yzp ? yzp->dtype : MPX_DT_UINT8;
        int64_t lo, hi;
        int_range(yt, &lo, &hi);
        if (!mm_run(&p, a, b, azp, bzp, mpx_k_value_owner(c, 3, b->i), acc)) st = mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
        if (!st && !(st = mpx_k_alloc(c, &out[0], yt, p.rank, p.dims)))
            for (int64_t k = 0; k < out[0].n; k++) {
                int64_t n = k % p.N;
                float mult = scale_at(as, 0) * scale_at(bs, n) / scale_at(ys, 0);
                out[0].i[k] = requant(acc[k], mult, zp_at(yzp, 0), lo, hi);
            }
    }
    free(acc);
    free(p.aoff), free(p.boff);
    return st;
}

/* ---- ConvInteger, QLinearConv --------------------------------------------------------- */

/* The geometry one convolution's sums need. */
typedef struct qconv {
    const kn_window *win;
    int64_t N, C, M, G, cg, mg, op, kp, ip, K, Kp;
} qconv;

/* Direct convolution of (x - x_zp) with (w - w_zp[m]) into acc (N x M x
 * out plane), padding contributing nothing (the padded value is x's zero
 * point). */
static void conv_direct(const qconv *q, const mpx_value *x, const mpx_value *w, const mpx_value *xzp,
                        const mpx_value *wzp, int64_t *acc) {
    const kn_window *win = q->win;
    int nsp = win->nsp;
    int64_t zx = zp_at(xzp, 0);
    for (int64_t n = 0; n < q->N; n++)
        for (int64_t m = 0; m < q->M; m++) {
            int64_t g = m / q->mg, zw = zp_at(wzp, m);
            for (int64_t o = 0; o < q->op; o++) {
                int64_t oc[KN_MAX_SP], r = o, s = 0;
                for (int i = nsp - 1; i >= 0; i--) oc[i] = r % win->out[i], r /= win->out[i];
                for (int64_t ci = 0; ci < q->cg; ci++) {
                    const int64_t *xp = x->i + (n * q->C + g * q->cg + ci) * q->ip, *wp = w->i + (m * q->cg + ci) * q->kp;
                    for (int64_t t = 0; t < q->kp; t++) {
                        int64_t tc = t, pos = 0;
                        bool inside = true;
                        for (int i = nsp - 1; i >= 0 && inside; i--) {
                            int64_t ki = tc % win->k[i];
                            tc /= win->k[i];
                            int64_t at = oc[i] * win->s[i] + ki * win->d[i] - win->pb[i];
                            inside = at >= 0 && at < win->in[i];
                            int64_t stride = 1;
                            for (int j = i + 1; j < nsp; j++) stride *= win->in[j];
                            pos += at * stride;
                        }
                        if (inside) s += (xp[pos] - zx) * (wp[t] - zw);
                    }
                }
                acc[(n * q->M + m) * q->op + o] = s;
            }
        }
}

/* Output positions per item of the packed path: their rows of K input
 * terms (the "im2row" block, 64 x Kp x 2 bytes) stay in L2 while every
 * filter of the group passes over them. */
#define QC_BLOCK 64

typedef struct qc_job {
    const qconv *q;
    const int16_t *xs;   /* x - x_zp, N x C x in plane */
    const int16_t *ws;   /* w - w_zp[m], M rows of Kp */
    const int64_t *tap;  /* [nsp][kp]: each tap's offset along each dim (k * dilation) */
    int64_t *acc;
    bool avx2;
    volatile int oom;
} qc_job;

static void qc_item(void *ctx, int tid, long item) {
    (void)tid;
    qc_job *j = ctx;
    const qconv *q = j->q;
    const kn_window *win = q->win;
    int nsp = win->nsp;
    int64_t nb = (q->op + QC_BLOCK - 1) / QC_BLOCK;
    int64_t blk = (int64_t)item % nb, ng = (int64_t)item / nb, g = ng % q->G, n = ng / q->G;
    int64_t o0 = blk * QC_BLOCK, orows = q->op - o0 < QC_BLOCK ? q->op - o0 : QC_BLOCK;
    int16_t *rows = malloc((size_t)(QC_BLOCK * q->Kp) * sizeof *rows);
    int32_t *sums = malloc((size_t)(q->mg * QC_BLOCK) * sizeof *sums);
    if (!rows || !sums) {
        free(rows), free(sums);
        j->oom = 1;
        return;
    }
    int64_t stride[KN_MAX_SP];
    stride[nsp - 1] = 1;
    for (int i = nsp - 2; i >= 0; i--) stride[i] = stride[i + 1] * win->in[i + 1];
    /* 2-D, dilation 1 along the rows: an output whose window lies inside
     * the input copies each channel's window row (KW values, contiguous
     * in the input and in its row of terms, k = ci kp + kh KW + kw) as one
     * run, the values the tap-by-tap loop below stores; only the terms
     * past K are cleared. The tap-by-tap loop, value by value through the
     * tap table, was a fifth of the quantised ResNet-18's forward. Rows
     * the loop fills start cleared (padding: x's zero point, 0 once
     * shifted). */
    const bool runs = nsp == 2 && win->d[1] == 1;
    if (!runs) memset(rows, 0, (size_t)(QC_BLOCK * q->Kp) * sizeof *rows);
    else if (orows < QC_BLOCK) memset(rows + orows * q->Kp, 0, (size_t)((QC_BLOCK - orows) * q->Kp) * sizeof *rows);
    for (int64_t r = 0; r < orows; r++) {
        int64_t base[KN_MAX_SP], o = o0 + r;
        for (int i = nsp - 1; i >= 0; i--) {
            base[i] = (o % win->out[i]) * win->s[i] - win->pb[i];
            o /= win->out[i];
        }
        int16_t *row = rows + r * q->Kp;
        if (runs) {
            const int64_t W = win->in[1], KH = win->k[0], KW = win->k[1], dh = win->d[0];
            if (base[0] >= 0 && base[0] + (KH - 1) * dh < win->in[0] && base[1] >= 0 && base[1] + KW <= W) {
                const int16_t *xp = j->xs + (n * q->C + g * q->cg) * q->ip + base[0] * W + base[1];
                /* (3 and 1 wide spelled out: a memcpy of a variable size
                 * was a call a run) */
                if (KW == 3)
                    for (int64_t ci = 0; ci < q->cg; ci++)
                        for (int64_t kh = 0; kh < KH; kh++) {
                            int16_t *d = row + ci * q->kp + kh * 3;
                            const int16_t *x = xp + ci * q->ip + kh * dh * W;
                            d[0] = x[0], d[1] = x[1], d[2] = x[2];
                        }
                else if (KW == 1)
                    for (int64_t ci = 0; ci < q->cg; ci++)
                        for (int64_t kh = 0; kh < KH; kh++) row[ci * q->kp + kh] = xp[ci * q->ip + kh * dh * W];
                else
                    for (int64_t ci = 0; ci < q->cg; ci++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            memcpy(row + ci * q->kp + kh * KW, xp + ci * q->ip + kh * dh * W, (size_t)KW * sizeof *row);
                /* (the weights' rows are 0 past K too: cleared for the
                 * sanitizers, not for the sums) */
                memset(row + q->K, 0, (size_t)(q->Kp - q->K) * sizeof *row);
                continue;
            }
            memset(row, 0, (size_t)q->Kp * sizeof *row);
        }
        for (int64_t t = 0; t < q->kp; t++) {
            int64_t pos = 0;
            bool inside = true;
            for (int i = 0; i < nsp && inside; i++) {
                int64_t at = base[i] + j->tap[i * q->kp + t];
                inside = at >= 0 && at < win->in[i];
                pos += at * stride[i];
            }
            if (!inside) continue; /* padding: x's zero point, 0 once shifted (calloc) */
            const int16_t *xp = j->xs + (n * q->C + g * q->cg) * q->ip + pos;
            for (int64_t ci = 0; ci < q->cg; ci++) row[ci * q->kp + t] = xp[ci * q->ip];
        }
    }
    mpx_k_igemm_nt(j->ws + g * q->mg * q->Kp, rows, q->mg, orows, q->Kp, sums, QC_BLOCK, j->avx2);
    for (int64_t m = 0; m < q->mg; m++) {
        int64_t *dst = j->acc + (n * q->M + g * q->mg + m) * q->op + o0;
        for (int64_t r = 0; r < orows; r++) dst[r] = sums[m * QC_BLOCK + r];
    }
    free(rows), free(sums);
}

/* Depthwise (one input channel per group) in two spatial dims: the window
 * rows are too short for the core, so each tap adds its weight times the
 * shifted input plane to the channel's sums, the output row's inner loop
 * contiguous in the input for stride 1 (the compiler's vectors). uint32
 * sums: the same residues in another order. Items: (image, input channel). */
typedef struct dw_job {
    const qconv *q;
    const int16_t *xs, *ws; /* ws: M rows of Kp */
    int64_t *acc;
    volatile int oom;
} dw_job;

static void dw_item(void *ctx, int tid, long item) {
    (void)tid;
    dw_job *j = ctx;
    const qconv *q = j->q;
    const kn_window *win = q->win;
    int64_t g = (int64_t)item % q->G, n = (int64_t)item / q->G;
    int64_t H = win->in[0], W = win->in[1], OH = win->out[0], OW = win->out[1], KH = win->k[0], KW = win->k[1];
    uint32_t *sum = malloc((size_t)(OH * OW) * sizeof *sum);
    if (!sum) {
        j->oom = 1;
        return;
    }
    const int16_t *plane = j->xs + (n * q->C + g) * H * W;
    for (int64_t mi = 0; mi < q->mg; mi++) {
        int64_t m = g * q->mg + mi;
        memset(sum, 0, (size_t)(OH * OW) * sizeof *sum);
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                int32_t wv = j->ws[m * q->Kp + kh * KW + kw];
                if (!wv) continue;
                int64_t off = kw * win->d[1] - win->pb[1], s1 = win->s[1];
                /* ow with 0 <= ow * s1 + off < W */
                int64_t lo = off >= 0 ? 0 : (-off + s1 - 1) / s1, hi = W - off <= 0 ? 0 : (W - off - 1) / s1 + 1;
                if (hi > OW) hi = OW;
                for (int64_t oh = 0; oh < OH; oh++) {
                    int64_t ih = oh * win->s[0] + kh * win->d[0] - win->pb[0];
                    if (ih < 0 || ih >= H) continue;
                    const int16_t *xr = plane + ih * W + off;
                    uint32_t *sr = sum + oh * OW;
                    if (s1 == 1)
                        for (int64_t ow = lo; ow < hi; ow++) sr[ow] += (uint32_t)(wv * (int32_t)xr[ow]);
                    else
                        for (int64_t ow = lo; ow < hi; ow++) sr[ow] += (uint32_t)(wv * (int32_t)xr[ow * s1]);
                }
            }
        int64_t *dst = j->acc + (n * q->M + m) * q->op;
        for (int64_t o = 0; o < q->op; o++) dst[o] = (int32_t)sum[o];
    }
    free(sum);
}

/* The weights less their zero point, w - w_zp[m], as the packed path's
 * 16-bit operand: M rows of Kp values, zeros past K. A constant w's (owner,
 * its tensor) are kept on it under the zero point where that is one value
 * for every filter (absent or per tensor, as quantize_dynamic writes it),
 * as runtimes prepare weights once: made afresh, they read every int64
 * weight each call (the quantised ResNet-18: 88 MB a forward, a sixth of
 * its time). Else made for this call into *owned, which the caller frees.
 * NULL: a value does not fit 16 bits, or out of memory (*oom). */
static kg_key conv_weights_key(const qconv *q, const mpx_value *w, const mpx_value *wzp, mpx_tensor *owner,
                                bool *keep) {
    bool one = true;
    for (int64_t m = 1; wzp && m < q->M && one; m++) one = zp_at(wzp, m) == zp_at(wzp, 0);
    *keep = owner && one;
    return (kg_key){.k = {.kind = KG_KEPT_QCONV_W, .a = w->i, .M = q->M, .K = q->K, .ga = zp_at(wzp, 0)},
                    .owner = owner};
}

static const int16_t *conv_weights(const qconv *q, const mpx_value *w, const mpx_value *wzp, mpx_tensor *owner,
                                   int16_t **owned, bool *oom) {
    bool keep;
    const kg_key key = conv_weights_key(q, w, wzp, owner, &keep);
    const kg_kept *kept = keep ? kg_kept_find(&key) : NULL;
    if (kept) return (const int16_t *)kept->ap;
    /* (16-bit values in the kept list's float buffers, 64-byte aligned) */
    const size_t n16 = (size_t)(q->M * q->Kp);
    float *buf = kg_alloc(n16 / 2 + 1);
    if (!buf) {
        *oom = true;
        return NULL;
    }
    int16_t *ws = (int16_t *)buf;
    memset(ws, 0, n16 * sizeof *ws);
    bool fits = true;
    for (int64_t m = 0; fits && m < q->M; m++) {
        const int64_t zw = zp_at(wzp, m);
        for (int64_t k = 0; fits && k < q->K; k++) fits = to16(w->i[m * q->K + k], zw, &ws[m * q->Kp + k]);
    }
    if (!fits) {
        free(buf);
        return NULL;
    }
    if (keep && kg_kept_add(&key, buf, true)) return ws;
    *owned = ws; /* (not kept: no owner, or another thread kept one meanwhile) */
    return ws;
}

size_t kg_prep_qconv(const mpx_node *n, int wi, int zi) {
    mpx_tensor *t = kg_prep_owner(n, wi);
    if (!t || !t->i64 || t->rank < 3 || t->dims[0] < 1 || t->nelem < t->dims[0]) return 0;
    mpx_value w, z;
    mpx_value_view(&w, t);
    const mpx_value *wzp = NULL;
    if (zi < n->n_inputs && n->inputs[zi]) { /* a zero point the run would read from elsewhere: none made */
        mpx_tensor *zt = kg_prep_owner(n, zi);
        if (!zt || !zt->i64 || (zt->nelem != 1 && zt->nelem != t->dims[0])) return 0;
        mpx_value_view(&z, zt);
        wzp = &z;
    }
    const qconv q = {.M = t->dims[0], .K = t->nelem / t->dims[0], .Kp = pad16(t->nelem / t->dims[0])};
    bool keep;
    const kg_key key = conv_weights_key(&q, &w, wzp, t, &keep);
    if (!keep || kg_kept_find(&key)) return 0;
    int16_t *owned = NULL;
    bool oom = false;
    const int16_t *ws = conv_weights(&q, &w, wzp, t, &owned, &oom);
    free(owned);
    return ws && !owned ? (size_t)(q.M * q.Kp) * sizeof *ws : 0;
}

/* The packed path: false when an operand does not fit 16 bits (*oom set
 * when memory ran out). w_owner: the tensor a constant w's values are
 * (conv_weights keeps its operand there), or NULL. */
static bool conv_packed(const qconv *q, const mpx_value *x, const mpx_value *w, const mpx_value *xzp,
                        const mpx_value *wzp, mpx_tensor *w_owner, int64_t *acc, bool *oom) {
    const kn_window *win = q->win;
    int nsp = win->nsp;
    int16_t *xs = malloc((size_t)(q->N * q->C * q->ip + 1) * sizeof *xs), *ws_owned = NULL;
    int64_t *tap = malloc((size_t)(nsp * q->kp + 1) * sizeof *tap);
    *oom = !xs || !tap;
    const int16_t *ws = *oom ? NULL : conv_weights(q, w, wzp, w_owner, &ws_owned, oom);
    bool fits = ws != NULL;
    int64_t zx = zp_at(xzp, 0);
    for (int64_t k = 0; fits && k < q->N * q->C * q->ip; k++) fits = to16(x->i[k], zx, &xs[k]);
    if (fits) {
        for (int64_t t = 0; t < q->kp; t++)
            for (int64_t i = nsp - 1, r = t; i >= 0; i--) {
                tap[i * q->kp + t] = (r % win->k[i]) * win->d[i];
                r /= win->k[i];
            }
        if (q->cg == 1 && nsp == 2) {
            dw_job j = {q, xs, ws, acc, 0};
            mpx_k_parallel_stoppable((long)(q->N * q->G), kg_threads(), dw_item, &j);
            if (j.oom) *oom = true;
        } else {
            qc_job j = {q, xs, ws, tap, acc, mpx_k_igemm_avx2(), 0};
            int64_t items = q->N * q->G * ((q->op + QC_BLOCK - 1) / QC_BLOCK);
            mpx_k_parallel_stoppable((long)items, kg_threads(), qc_item, &j);
            if (j.oom) *oom = true;
        }
    }
    free(xs), free(ws_owned), free(tap);
    return fits && !*oom;
}

/* The int64 sums of (x - x_zp) and (w - w_zp[m]) into acc (N x M x out
 * plane), each as its int32 wrap (see the top of the file). */
static mpx_status conv_int(const mpx_kctx *c, const mpx_value *x, const mpx_value *w, int wk, const mpx_value *xzp,
                           const mpx_value *wzp, kn_window *win, int64_t **acc_out, int64_t *ydims) {
    char s1[160], s2[160];
    mpx_status st;
    if (w->rank != x->rank)
        return mpx_kernel_error(c, MPX_E_SHAPE, "weights %s do not match input %s", kn_shape(w, s1), kn_shape(x, s2));
    if ((st = kn_window_attrs(c, x, w->dims + 2, win)) || (st = kn_window_out(c, win, false))) return st;
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], G = mpx_node_attr_int(c->node, "group", 1);
    if (G < 1 || C % G || M % G || w->dims[1] != C / G)
        return mpx_kernel_error(c, MPX_E_SHAPE, "group %lld does not fit input %s and weights %s", (long long)G,
                                kn_shape(x, s1), kn_shape(w, s2));
    if ((st = per_vec(c, xzp, 1, "x_zero_point", false)) || (st = per_vec(c, wzp, M, "w_zero_point", false)))
        return st;
    int nsp = win->nsp;
    qconv q = {.win = win, .N = N, .C = C, .M = M, .G = G, .cg = C / G, .mg = M / G, .op = 1, .kp = 1, .ip = 1};
    for (int i = 0; i < nsp; i++) q.op *= win->out[i], q.kp *= win->k[i], q.ip *= win->in[i];
    q.K = q.cg * q.kp, q.Kp = pad16(q.K);
    ydims[0] = N, ydims[1] = M;
    for (int i = 0; i < nsp; i++) ydims[2 + i] = win->out[i];
    int64_t *acc;
    if ((st = kn_scratch(c, (size_t)(N * M * q.op), sizeof *acc, (void **)&acc))) return st;
    bool oom = false;
    if (!conv_packed(&q, x, w, xzp, wzp, mpx_k_value_owner(c, wk, w->i), acc, &oom)) {
        if (oom) {
            free(acc);
            return mpx_kernel_error(c, MPX_E_NOMEM, "out of memory");
        }
        conv_direct(&q, x, w, xzp, wzp, acc);
    }
    *acc_out = acc;
    return MPX_OK;
}

mpx_status mpx_k_conv_integer(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                              int n_out) {
    const mpx_value *x, *w;
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "x", &x);
    if (!st) st = int_in(c, in, n_in, 1, "w", &w);
    if (st) return st;
    kn_window win;
    int64_t *acc = NULL, yd[MPX_MAX_RANK];
    if ((st = conv_int(c, x, w, 1, kn_opt(in, n_in, 2), kn_opt(in, n_in, 3), &win, &acc, yd))) return st;
    if (!(st = mpx_k_alloc_raw(c, &out[0], MPX_DT_INT32, x->rank, yd)))
        for (int64_t k = 0; k < out[0].n; k++) out[0].i[k] = wrap32(acc[k]);
    free(acc);
    return st;
}

mpx_status mpx_k_qlinear_conv(const mpx_kctx *c, const mpx_value *const *in, int n_in, mpx_value *out,
                              int n_out) {
    const mpx_value *x, *w, *xs = kn_opt(in, n_in, 1), *ws = kn_opt(in, n_in, 4), *ys = kn_opt(in, n_in, 6),
                            *yzp = kn_opt(in, n_in, 7), *b = kn_opt(in, n_in, 8);
    mpx_status st = kn_need_out(c, n_out, 1);
    if (!st) st = int_in(c, in, n_in, 0, "x", &x);
    if (!st) st = int_in(c, in, n_in, 3, "w", &w);
    if (st) return st;
    if (!xs || !ws || !ys) return mpx_kernel_error(c, MPX_E_INVALID, "x_scale, w_scale and y_scale are required");
    int64_t M = w->rank >= 1 ? w->dims[0] : 0;
    if ((st = per_vec(c, xs, 1, "x_scale", true)) || (st = per_vec(c, ws, M, "w_scale", true)) ||
        (st = per_vec(c, ys, 1, "y_scale", true)) || (st = per_vec(c, yzp, 1, "y_zero_point", false)))
        return st;
    if (b && (!b->i || b->n != M))
        return mpx_kernel_error(c, MPX_E_SHAPE, "B must hold %lld int32 values, one per output channel", (long long)M);
    kn_window win;
    int64_t *acc = NULL, yd[MPX_MAX_RANK];
    if ((st = conv_int(c, x, w, 3, kn_opt(in, n_in, 2), kn_opt(in, n_in, 5), &win, &acc, yd))) return st;
    mpx_dtype yt = yzp ? yzp->dtype : MPX_DT_UINT8;
    int64_t lo, hi, op = 1;
    int_range(yt, &lo, &hi);
    for (int i = 0; i < win.nsp; i++) op *= win.out[i];
    if (!(st = mpx_k_alloc(c, &out[0], yt, x->rank, yd)))
        for (int64_t k = 0; k < out[0].n; k++) {
            int64_t m = (k / op) % M;
            float mult = scale_at(xs, 0) * scale_at(ws, m) / scale_at(ys, 0);
            out[0].i[k] = requant(wrap32(acc[k] + (b ? b->i[m] : 0)), mult, zp_at(yzp, 0), lo, hi);
        }
    free(acc);
    return st;
}
