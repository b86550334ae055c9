/* kern_gemm.c - the GEMM core (kern_gemm.h): operand packing, the routes
 * (matrix-vector, output channels in the lanes, the blocked grid), and the
 * choice of the portable, AVX2 or AVX-512 build of the inner loops
 * (kern_gemm_vec.h, kern_gemm_body.h). The depthwise kernels are
 * kern_depthwise.c, the threads kern_threads.c, the packings and rounded
 * weights kept on the graph kern_kept.c and kern_rounded.c.
 *
 * Blocking (BLIS order): A is packed once per call into panels of 6 rows,
 * [K][6] each (all of A: the models' M x K are at most a few hundred KiB, L2).
 * Work items are (group, a run of about 512 output columns; for a
 * convolution whole rows of the output grid). For each K block of 256 terms
 * a thread packs B for a chunk of 16-column panels (about 128 KiB, [kc][16]
 * per panel, each k's run of columns read in one go), then runs the
 * micro-kernel for every panel (16 KiB, in L1) against every 6-row panel of A
 * (from L2). K blocks are a multiple of the fp32 block of 64, so the fp32
 * order is blocks of 64 k whatever the blocking. The running sum lives in C
 * between K blocks.
 *
 * Threads (mpx_k_parallel): each writes only its own items' outputs and its
 * own packing buffer, so the result does not depend on who ran what. Calls
 * below 250 K multiply-adds run on the calling thread alone
 * (kg_threads_for). Nothing static is mutable. */
#include "kern_gemm_core.h"
#include "kern_kept.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sums of at most this many terms (a K block) take a row panel at a time
 * across a chunk's panels where C's rows are runs (gemm_item). */
enum { KG_ROWS_FIRST_KC = 64 };

/* Row panel i of a GEMM item at K block k0 (gemm_item): its rows, its A
 * terms from the block's first, its rows' places in C, its bias (NULL: none). */
typedef struct kg_rows {
    int mr;
    const float *ap, *bi;
    const int64_t *crow;
} kg_rows;

/* Row panel i of an item whose first is i0: its A at apk + (i - i0) * 6 ask
 * (apk: panel i0's terms of this K block; ask: terms from one panel to
 * the next, K in the kept panels, the block's in a rounded copy). */
static inline kg_rows kg_rows_of(const kg_gemm *j, const float *apk, int64_t ask, int64_t i0, const float *bs,
                                 int64_t i) {
    const int64_t M = j->M;
    return (kg_rows){.mr = (int)(M - i * KG_MR < KG_MR ? M - i * KG_MR : KG_MR),
                     .ap = apk + (i - i0) * KG_MR * ask,
                     .bi = bs ? bs + i * KG_MR : NULL,
                     .crow = j->crow + i * KG_MR};
}

/* A call group's B where it lies, for prefetching: term k's 64 columns
 * at b + off[k], k < kc. */
typedef struct kg_bnext {
    const float *b;
    const int64_t *off;
    int64_t kc;
} kg_bnext;

/* Panels a micro-kernel call takes of `left` (4, 2 or 1). */
static int kg_group(int64_t left) { return left >= 4 ? 4 : left >= 2 ? 2 : 1; }

/* How long the items of a split take on nt threads as mpx_k_parallel
 * runs them (kern_threads.c): thread t takes its home range's items
 * (items * t / nt on) from the front, a quarter of what is left at a
 * time (at least one), and a thread whose range is empty takes the same
 * from the back of the range with the most left. Items are (group, band,
 * row block), the row block fastest (amajor: the band fastest); a cost is
 * units x panels: OH units (grid rows, or 64-column groups for
 * kg_col_split) in bands of R, and nmb blocks of A's mpan row panels. */
typedef struct {
    int64_t mpan, mpb, nmbr, nb, OH, R;
    bool amajor; /* items (group, row block, band), the band fastest (kg_ctx.amajor) */
} kg_split;

static int64_t kg_item_cost(const kg_split *sp, int64_t i) {
    const int64_t per_g = sp->nb * sp->nmbr;
    const int64_t b = sp->amajor ? i % per_g % sp->nb : i / sp->nmbr % sp->nb;
    const int64_t m = sp->amajor ? i % per_g / sp->nb : i % sp->nmbr;
    const int64_t rows = b + 1 < sp->nb ? sp->R : sp->OH - b * sp->R;
    const int64_t pans = (m + 1) * sp->mpb <= sp->mpan ? sp->mpb : sp->mpan - m * sp->mpb;
    return rows * pans;
}

static int64_t kg_makespan(int64_t mpan, int64_t nmb, int64_t G, int64_t OH, int64_t R, int nt, bool amajor) {
    const kg_split sp = {.mpan = mpan, .mpb = kg_cdiv(mpan, nmb), .nb = kg_cdiv(OH, R), .OH = OH, .R = R,
                         .nmbr = kg_cdiv(mpan, kg_cdiv(mpan, nmb)), .amajor = amajor};
    const int64_t n = G * sp.nb * sp.nmbr;
    if (nt > n) nt = (int)n;
    int64_t lo[8], hi[8], busy[8];
    bool idle[8];
    for (int t = 0; t < nt; t++)
        lo[t] = kg_home_first(n, t, nt), hi[t] = kg_home_first(n, t + 1, nt), busy[t] = 0, idle[t] = false;
    for (;;) {
        int t = -1; /* the thread free first */
        for (int u = 0; u < nt; u++)
            if (!idle[u] && (t < 0 || busy[u] < busy[t])) t = u;
        if (t < 0) break;
        if (lo[t] < hi[t]) {
            for (int64_t i = 0, k = kg_claim_run(hi[t] - lo[t]); i < k; i++) busy[t] += kg_item_cost(&sp, lo[t]++);
            continue;
        }
        int v = -1;
        for (int u = 0; u < nt; u++)
            if (hi[u] - lo[u] > 0 && (v < 0 || hi[u] - lo[u] > hi[v] - lo[v])) v = u;
        if (v < 0) {
            idle[t] = true;
            continue;
        }
        for (int64_t i = 0, k = kg_claim_run(hi[v] - lo[v]); i < k; i++) busy[t] += kg_item_cost(&sp, --hi[v]);
    }
    int64_t most = 0;
    for (int u = 0; u < nt; u++) most = busy[u] > most ? busy[u] : most;
    return most;
}

/* Row blocks for a convolution with few bands: about `want` of them, at
 * least 4 panels each, the count whose items share out most evenly on the
 * threads (ties: the most items): cut into equal counts of blocks alone,
 * a 256 x 14 x 14 convolution's panels went 24 to one thread, 19 to the
 * other. */
static int64_t kg_row_blocks(int64_t mpan, int64_t G, int64_t OH, int64_t R, int64_t want, int nt) {
    int64_t best = 1, best_t = -1;
    const int64_t hi = want < mpan / 4 ? want : mpan / 4;
    for (int64_t nmb = 1; nmb <= hi; nmb++) {
        if (kg_cdiv(mpan, kg_cdiv(mpan, nmb)) != nmb) continue; /* the same split as a smaller count */
        const int64_t t = kg_makespan(mpan, nmb, G, OH, R, nt, false);
        if (best_t < 0 || t <= best_t) best = nmb, best_t = t;
    }
    return best;
}

/* A convolution's split where its B is the shared copy and the AVX-512
 * build reads it where it lies (64 columns a call): bands of whole
 * 64-column groups of the grid, not of whole grid rows, so a band ends in
 * a partial group only at the grid's end (bands of 9 rows of a 56 x 56
 * map's 57-column grid were 513 columns: 8 groups and a call for one
 * column, a third of a group's time on 6 sums; 18 rows of 28 x 28, 522).
 * The count of groups a band (4 to 8: a band's tile is mpb * 6 rows of
 * it) and of row blocks whose items share out most evenly on the threads,
 * among the splits with 4 items a thread where there are any (on a
 * shared machine a thread may lose its core for a while: 2 items a
 * thread made a 128 x 28 x 28 3x3 convolution 1.5x slower on two); ties:
 * the fewest items (each re-reads A's or B's share from L2). Row blocks
 * only where the bands alone are fewer than 4 items a thread. */
static void kg_col_split(int64_t N, int64_t mpan, int64_t G, int nt, bool amajor, int64_t *icols, int64_t *nmb) {
    const int64_t ngr = kg_cdiv(N, 4 * KG_NR), lo = ngr < 4 ? ngr : 4, hi = ngr < 8 ? ngr : 8;
    int64_t best_t = -1, best_items = 0;
    for (int64_t gpb = lo; gpb <= hi; gpb++) {
        const int64_t bands = G * kg_cdiv(ngr, gpb), w4 = kg_cdiv(4 * nt, bands), want = amajor && w4 < nt ? nt : w4;
        for (int64_t m = 1; m <= (want < mpan / 4 ? want : mpan / 4) || m == 1; m++) {
            if (kg_cdiv(mpan, kg_cdiv(mpan, m)) != m) continue; /* the same split as a smaller count */
            const int64_t t = kg_makespan(mpan, m, G, ngr, gpb, nt, amajor), items = bands * m;
            const bool few = items < 4 * nt, best_few = best_items < 4 * nt;
            if (best_t < 0 || (best_few && !few) ||
                (few == best_few && (t < best_t || (t == best_t && items < best_items)))) {
                best_t = t, best_items = items;
                *icols = gpb * 4 * KG_NR;
                *nmb = m;
            }
        }
    }
}
#define KG_BODY "kern_gemm_body.h"
#include "kern_builds.h"

bool kg_use_avx2(void) {
#if KG_HAVE_X86
    if (mpx_env_on("MPX_KERN_PORTABLE")) return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && mpx_cpu_has_f16c();
#else
    return false;
#endif
}

/* AVX-512 where the CPU has it, unless MPX_KERN_AVX2 asks for the AVX2 build
 * (kern_check runs each build against the documented order). */
bool kg_use_avx512(void) {
#if KG_HAVE_X86
    if (mpx_env_on("MPX_KERN_AVX2")) return false;
    return kg_use_avx2() && __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

/* The fp16 fused multiply-add kernel (AVX512-FP16) for an fp16-accumulated
 * GEMM of fp16 operands, unless MPX_KERN_NOFP16 declines it (kern_check runs
 * the AVX-512 build without it too: both must give the same bits). */
bool kg_use_h16(kg_mode mode, bool f16) {
#if KG_HAVE_H16
    return mode == KG_FP16 && f16 && kg_use_avx512() && mpx_cpu_has_avx512fp16() &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") && !mpx_env_on("MPX_KERN_NOFP16");
#else
    (void)mode, (void)f16;
    return false;
#endif
}
int kg_mode_of(const mpx_accum *m) {
    if (mpx_acc_is_fp32(m)) return KG_FP32;
    if (m->block > 0) return -1;
    switch (m->fmt->kind) {
    case MPX_FMT_FP16: return KG_FP16;
    case MPX_FMT_BF16: return KG_BF16;
    case MPX_FMT_TF32: return KG_TF32;
    default: return -1;
    }
}

/* Threads for a job of `macs` multiply-adds. 250 K (about 10 us of one
 * core's work): the pool's workers spin between jobs and the caller never
 * waits for a sleeping one, so a second thread pays from there; a higher
 * threshold leaves most of a small network's convolutions (MobileNetV3-
 * Small's) on one core. One, too, while a comparison's two job threads are
 * both busy (kg_alone_now): the call then runs alone, and a split planned
 * for two (row blocks, narrower bands) would only cost it. */
int kg_threads_for(double macs) {
    return macs < 2.5e5 || kg_alone_now() ? 1 : kg_threads();
}
/* ---- GEMM ------------------------------------------------------------------------------------- */

KG_ITEM_FN(kg_gemm_fn, gemm_item)
KG_ITEM_FN(kg_fill_fn, fill_chan)
void kg_free_bufs(kg_ctx *x) {
    free(x->shared);
    for (int t = 0; t < 8; t++) {
        free(x->bp[t]);
        free(x->strip[t]);
        free(x->tile[t]);
        free(x->abuf[t]);
        free(x->t_copy[t]);
    }
}
/* No early exit, so the loop vectorises (kern_gemm.h). */
bool kg_all_finite(const float *v, int64_t n) {
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

/* Pack panel p (of all groups' panels) of A: [g][panel][k][6], zero rows past M. */
static void kg_pack_a_fn(void *ctx, int tid, long p) {
    const kg_ctx *x = ctx;
    const kg_gemm *j = x->j;
    const int64_t M = j->M, K = j->K, mpan = (M + KG_MR - 1) / KG_MR, g = p / mpan, i = p % mpan;
    float *dst = x->ap_w + (g * mpan + i) * KG_MR * K;
    /* k outer, the 6 rows inner: the panel is written in order (row by row
     * it was written with a stride of 6 floats; packing was 17% of
     * ResNet-18's forward, which in order got 7% faster); rows past M read
     * a row of zeros. */
    static const float zeros[1] = {0.0f};
    const float *src[KG_MR];
    int64_t step[KG_MR];
    for (int r = 0; r < KG_MR; r++) {
        const int64_t m = i * KG_MR + r;
        src[r] = m < M ? j->a + g * j->ga + m * j->ams : zeros;
        step[r] = m < M ? j->aks : 0;
    }
    if (step[KG_MR - 1] == 1)
        for (int64_t k = 0; k < K; k++) {
            float *d = dst + k * KG_MR;
            d[0] = src[0][k], d[1] = src[1][k], d[2] = src[2][k];
            d[3] = src[3][k], d[4] = src[4][k], d[5] = src[5][k];
        }
    else
        for (int64_t k = 0; k < K; k++)
            for (int r = 0; r < KG_MR; r++) dst[k * KG_MR + r] = src[r][k * step[r]];
    /* (zeros stay zeros; with ka_fmt the fp32 panels are kept and rounded per item) */
    if (j->a_fmt && !x->ka_fmt) mpx_round_array(j->a_fmt, dst, dst, (size_t)(KG_MR * K));
    if (j->finite_a && !kg_all_finite(dst, KG_MR * K)) x->a_bad[tid] = 1;
}

/* One column (N = 1) in fp32 (a classifier's Gemm after kern_matmul.c's
 * transB swap, MatMul by a vector, a squeeze-excitation block's 1x1
 * convolutions on a 1x1 map): a matrix times a vector, summed as the core
 * sums (blocks of MPX_ACC_FP32_BLOCK fused multiply-adds, each from 0 in
 * order, added to a running sum from +0, then the bias as one more
 * addition), eight rows an item, with no packing: the core packs all of A
 * first, which for a 1000 x 1280 classifier was most of the time. An FMA
 * clone makes fmaf one instruction (the default clone calls libm's, the
 * same operation). */
MPX_K_CLONES("fma", "default")
static void kg_mv_fn(void *ctx, int tid, long item) {
    (void)tid;
    const kg_gemm *j = ctx;
    const int64_t per_g = (j->M + 7) / 8, g = item / per_g, i0 = item % per_g * 8;
    const int64_t n = j->M - i0 < 8 ? j->M - i0 : 8;
    const float *a = j->a + g * j->ga, *b = j->b + g * j->gb;
    float sum[8] = {0}, blk[8];
    for (int64_t k0 = 0; k0 < j->K; k0 += MPX_ACC_FP32_BLOCK) {
        const int64_t k1 = k0 + MPX_ACC_FP32_BLOCK < j->K ? k0 + MPX_ACC_FP32_BLOCK : j->K;
        for (int r = 0; r < 8; r++) blk[r] = 0.0f;
        for (int64_t k = k0; k < k1; k++) {
            const float xv = b[j->boff[k]];
            for (int r = 0; r < n; r++) blk[r] = fmaf(a[(i0 + r) * j->ams + k * j->aks], xv, blk[r]);
        }
        for (int r = 0; r < n; r++) sum[r] += blk[r];
    }
    for (int r = 0; r < n; r++) {
        float v = sum[r];
        if (j->bias) v += j->bias[g * j->gbias + i0 + r];
        j->c[g * j->gc + j->crow[i0 + r]] = v;
    }
}

/* The keys of A's and B's packings kept on their constant (kern_kept.h). */
static kg_key kg_key_a(const kg_gemm *j, int kind) {
    return (kg_key){.k = {.kind = kind, .a = j->a, .M = j->M, .K = j->K, .G = j->G, .ams = j->ams, .aks = j->aks,
                          .ga = j->ga, .fmt = j->a_fmt},
                    .owner = j->a_owner, .check = j->finite_a};
}

/* B's kept packing is fp32 whatever format the call reads B in (kg_run
 * rounds each chunk of it as it is read: gemm_item). */
static kg_key kg_key_b(const kg_gemm *j, int64_t ldb) {
    if (j->b_ldt)
        return (kg_key){.k = {.kind = KG_KEPT_BTPANELS, .a = j->b, .M = j->N, .K = j->K, .G = 1, .ams = 1,
                              .aks = j->b_ldt},
                        .owner = j->b_owner};
    return (kg_key){.k = {.kind = KG_KEPT_BPANELS, .a = j->b, .M = j->N, .K = j->K, .G = 1, .ams = ldb, .aks = 1},
                    .owner = j->b_owner};
}

/* B packed whole for keeping: K block kb (KG_KC terms; the last may be
 * shorter) at k0 * npad, its panel p (columns 16p ..) at + p * kc * 16, term
 * k's 16 values at + k * 16, zeros past N: the order gemm_item packs a
 * chunk in, so the micro-kernels read the same values. An item a K block. */
typedef struct kg_bpack {
    const kg_gemm *j;
    int64_t ldb, npad;
    float *dst;
} kg_bpack;

static void kg_bpack_fn(void *ctx, int tid, long item) {
    (void)tid;
    const kg_bpack *w = ctx;
    const int64_t K = w->j->K, N = w->j->N, k0 = (int64_t)item * KG_KC, kc = K - k0 < KG_KC ? K - k0 : KG_KC;
    float *blk = w->dst + k0 * w->npad;
    const int64_t ldt = w->j->b_ldt;
    if (ldt) { /* B given transposed: a column of the panel is a run of W's row */
        for (int64_t q = 0; q < w->npad; q += KG_NR) {
            float *d = blk + q * kc;
            const int64_t n = N - q < KG_NR ? N - q : KG_NR;
            for (int64_t l = 0; l < KG_NR; l++)
                for (int64_t k = 0; k < kc; k++) d[k * KG_NR + l] = l < n ? w->j->b[(q + l) * ldt + k0 + k] : 0.0f;
        }
        return;
    }
    /* Row by row of B, each row's 16-value runs to their panels: B is read
     * in order (panel by panel, B is read down a column of rows N floats
     * apart, one scalar load at a time: most of a transformer's first run,
     * when every weight is packed). */
    const int64_t full = N / KG_NR * KG_NR;
    for (int64_t k = 0; k < kc; k++) {
        const float *src = w->j->b + (k0 + k) * w->ldb;
        float *d = blk + k * KG_NR;
        for (int64_t q = 0; q < full; q += KG_NR) memcpy(d + q * kc, src + q, KG_NR * sizeof *d);
        for (int64_t q = full; q < w->npad; q += KG_NR)
            for (int64_t l = 0; l < KG_NR; l++) d[q * kc + l] = q + l < N ? src[q + l] : 0.0f;
    }
}

/* B's kept packing for this product, made and kept on first use; NULL where
 * B is not a constant's own values read as evenly spaced rows (or memory
 * ran out: the caller packs per chunk). */
static const float *kg_kept_b(const kg_gemm *j, int nt, int64_t *npad) {
    if (!j->b_owner || j->conv || j->G != 1 || (!j->b_ldt && j->boff[0] != 0)) return NULL;
    const bool own = kg_kept_holds(j->b_owner, j->b); /* (else a packing kept of it would be dropped as stale) */
    if (!own) return NULL;
    const int64_t ldb = j->b_ldt ? 0 : j->K > 1 ? j->boff[1] : j->N;
    for (int64_t k = 0; !j->b_ldt && k < j->K; k++)
        if (j->boff[k] != k * ldb) return NULL;
    *npad = (j->N + KG_NR - 1) / KG_NR * KG_NR;
    const kg_key key = kg_key_b(j, ldb);
    const kg_kept *kept = kg_kept_find(&key);
    if (kept) return kept->ap;
    kg_bpack w = {.j = j, .ldb = ldb, .npad = *npad, .dst = kg_alloc((size_t)(j->K * *npad))};
    if (!w.dst) return NULL;
    mpx_k_parallel((long)((j->K + KG_KC - 1) / KG_KC), nt, kg_bpack_fn, &w);
    if (kg_kept_add(&key, w.dst, true)) return w.dst;
    free(w.dst); /* another thread kept one meanwhile */
    kept = kg_kept_find(&key);
    return kept ? kept->ap : NULL;
}

/* kg_mv_fn on A kept in 16-row panels ([K][16] a panel): item = a panel;
 * each row's operations and their order are kg_mv_fn's (blocks of 64 fused
 * multiply-adds from 0, added to the running sum, then the bias), the 16
 * rows in lanes. */
typedef void (*kg_lanes_fn)(int64_t K, const float *, const float *, const int64_t *, const float *, float *);

typedef struct kg_mv16 {
    const kg_gemm *j;
    const float *ap;
    kg_lanes_fn f; /* mv16 of the build the CPU takes */
} kg_mv16;

/* The build the CPU takes: 2 AVX-512, 1 AVX2, 0 the baseline. KG_PICK(type,
 * fn) is fn's copy of that build, any function type (chosen once a call,
 * not an item: each choice reads the environment). */
int kg_isa(void) {
#if KG_HAVE_X86
    if (kg_use_avx512()) return 2;
    if (kg_use_avx2()) return 1;
#endif
    return 0;
}

static void kg_mv16_fn(void *ctx, int tid, long item) {
    (void)tid;
    const kg_mv16 *w = ctx;
    const kg_gemm *j = w->j;
    const int64_t np16 = (j->M + 15) / 16, g = item / np16, p = item % np16, i0 = p * 16;
    const int64_t n = j->M - i0 < 16 ? j->M - i0 : 16, K = j->K;
    float bias16[16] = {0}, out[16];
    for (int64_t r = 0; j->bias && r < n; r++) bias16[r] = j->bias[g * j->gbias + i0 + r];
    w->f(K, w->ap + (g * np16 + p) * K * 16, j->b + g * j->gb, j->boff, j->bias ? bias16 : NULL, out);
    for (int64_t r = 0; r < n; r++) j->c[g * j->gc + j->crow[i0 + r]] = out[r];
}

/* Whether A's values (n floats of a kept fp32 packing of them at ap, any
 * layout: zeros pad it) are all finite once rounded to f (fp16 turns a
 * weight past 65504 into inf, which the core declines as it declines an
 * infinite weight: a padding tap's 0 * inf), found once and kept on A's
 * constant as an entry with no values (KG_KEPT_FINITE). */
static bool kg_a_finite_in(const kg_gemm *j, const float *ap, int64_t n, const mpx_format *f) {
    kg_key vkey = kg_key_a(j, KG_KEPT_FINITE);
    vkey.k.fmt = f;
    vkey.check = false;
    const kg_kept *v = kg_kept_find(&vkey);
    if (v) return v->finite;
    float buf[1024];
    bool fin = true;
    for (int64_t o = 0; o < n && fin; o += 1024) {
        const int64_t m = n - o < 1024 ? n - o : 1024;
        mpx_round_array(f, buf, ap + o, (size_t)m);
        fin = kg_all_finite(buf, m);
    }
    (void)kg_kept_add(&vkey, NULL, fin); /* (found again by the next call; lost on out of memory) */
    return fin;
}

/* A in 16-row panels ([g][panel][K][16], the rows as lanes), kept on the
 * graph's constant (mpx_tensor.derived) when a_owner says it is one; NULL:
 * out of memory. *owned: a packing the caller frees (not kept); *finite:
 * false when finite_a and A holds inf or NaN. */
static const float *kg_rows16(const kg_gemm *j, float **owned, bool *finite) {
    const int64_t M = j->M, K = j->K, np16 = (M + 15) / 16;
    const kg_key key = kg_key_a(j, KG_KEPT_ROWS16);
    const kg_kept *kept = j->a_owner ? kg_kept_find(&key) : NULL;
    *owned = NULL;
    if (kept) {
        *finite = !j->finite_a || kept->finite;
        return kept->ap;
    }
    float *ap = kg_alloc((size_t)(j->G * np16 * K * 16));
    if (!ap) return NULL;
    /* Read A along its unit stride: a weight matrix's rows (aks 1, the
     * usual layout: a classifier's, an SE block's) in 16 x 16 blocks, a
     * block's line of each row into its 1 KB of the panel (L1's); rows
     * apart by ams read 16 at a time per k missed the cache on every value
     * (MobileNetV3-Small's two classifier matrices: 2.3 ms of a session's
     * first run, ten times the products). */
    const bool by_rows = j->aks == 1 && j->ams != 1;
    for (int64_t g = 0; g < j->G; g++)
        for (int64_t p = 0; p < np16; p++) {
            float *d = ap + (g * np16 + p) * K * 16;
            const float *ag = j->a + g * j->ga;
            for (int64_t k0 = 0; by_rows && k0 < K; k0 += 16) {
                const int64_t k1 = k0 + 16 < K ? k0 + 16 : K;
                for (int64_t r = 0; r < 16; r++) {
                    const int64_t m = p * 16 + r;
                    const float *row = m < M ? ag + m * j->ams : NULL;
                    for (int64_t k = k0; k < k1; k++) d[k * 16 + r] = row ? row[k] : 0.0f;
                }
            }
            for (int64_t k = 0; !by_rows && k < K; k++)
                for (int64_t r = 0; r < 16; r++) {
                    const int64_t m = p * 16 + r;
                    d[k * 16 + r] = m < M ? ag[m * j->ams + k * j->aks] : 0.0f;
                }
        }
    if (j->a_fmt) mpx_round_array(j->a_fmt, ap, ap, (size_t)(j->G * np16 * K * 16));
    *finite = !j->finite_a || kg_all_finite(ap, j->G * np16 * K * 16);
    if (!j->a_owner || !kg_kept_add(&key, ap, *finite)) *owned = ap;
    return ap;
}

/* A convolution's whole padded, phase-split input, shared by the work
 * items, when it holds at most this many floats (else per-item strips). */
enum { KG_SHARED_MAX = 64 << 20 };
/* Floats of a narrow map's input copy that each thread may hold a copy of
 * (kg_lanes_run): 512 KiB, half of L2. */
enum { KG_OWN_COPY_MAX = 128 << 10 };

/* Floats of that copy for G groups: every grid row, the rows the taps
 * reach below them and one more for the dropped columns' reads. */
static double kg_shared_floats(const kg_conv *v, int64_t G) {
    const int64_t full = v->OH + (v->KH - 1) * v->dh / v->sh + 1;
    return (double)G * (double)v->cig * (double)(v->sh * v->sw * full * v->Wq);
}

/* The phase planes a channel's copy spans: up to the last one some tap
 * reads (phase (ph, pw) is plane ph sw + pw; the fills write only the
 * planes taps read, kg_fill_phases). A 1x1 convolution at stride 2
 * (ResNet's downsampling) reads one of four: its copy was four times the
 * floats it fills, every call a fresh block of that size between the
 * planes it used. */
static int64_t kg_phase_planes(const kg_conv *v) {
    if (v->sh > 32 || v->sw > 32) return v->sh * v->sw;
    const uint32_t hs = kg_fill_phases(v->KH, v->dh, v->sh), ws = kg_fill_phases(v->KW, v->dw, v->sw);
    return (31 - __builtin_clz(hs)) * v->sw + (31 - __builtin_clz(ws)) + 1;
}

/* Allocate that copy (x->shared) and set its shape (x->srows, splane,
 * schan); false: out of memory. The kg_fill_fn pass fills it. (+ 80: a
 * 64-column group's reads past the last row's end, dropped; zeroed. The
 * rest is written whole by the fill, every row of every phase plane a tap
 * reads (the others are never read but past a row's end, dropped), so
 * it is not cleared first: that was a pass over the copy per
 * convolution.) */
static float *kg_copy_alloc(size_t body) {
    float *c = malloc((body + 80) * sizeof(float));
    if (c) memset(c + body, 0, 80 * sizeof(float));
    return c;
}

static bool kg_shared_make(const kg_conv *v, int64_t G, kg_ctx *x) {
    x->srows = v->OH + (v->KH - 1) * v->dh / v->sh + 1;
    x->splane = x->srows * v->Wq;
    x->schan = kg_phase_planes(v) * x->splane;
    x->shared = kg_copy_alloc((size_t)(G * v->cig * x->schan));
    return x->shared != NULL;
}

/* The fill's bands (kg_ctx.frow) for a product of `items` items on nt
 * threads: thread t's home items (kern_threads.c: items * t / nt on)
 * begin at grid row r_t, so its fill takes rows r_t .. r_(t+1) - 1 (the
 * last thread's to the copy's end), in KG_FILL_SUB bands for the balancing. */
static void kg_fill_bands(kg_ctx *x, long items, int nt) {
    const int64_t Wq = x->j->conv->Wq;
    int64_t r[9];
    for (int t = 0; t < nt; t++) {
        const int64_t q = kg_home_first(items, t, nt) / x->nmb * x->icols;
        r[t] = q / Wq < x->srows ? q / Wq : x->srows;
    }
    r[nt] = x->srows;
    x->fnb = KG_FILL_SUB * nt;
    for (int t = 0; t < nt; t++)
        for (int s = 0; s < KG_FILL_SUB; s++) x->frow[KG_FILL_SUB * t + s] = r[t] + (r[t + 1] - r[t]) * s / KG_FILL_SUB;
    x->frow[KG_FILL_SUB * nt] = x->srows;
}

/* The offsets of a convolution's terms in its padded, phase-split copy
 * (x->schan, x->splane set). */
static void kg_conv_boff(const kg_conv *v, const kg_ctx *x, int64_t *boff) {
    for (int64_t ci = 0; ci < v->cig; ci++)
        for (int64_t kh = 0; kh < v->KH; kh++)
            for (int64_t kw = 0; kw < v->KW; kw++) {
                const int64_t ph = kh * v->dh % v->sh, pw = kw * v->dw % v->sw;
                boff[(ci * v->KH + kh) * v->KW + kw] = ci * x->schan + (ph * v->sw + pw) * x->splane +
                                                       kh * v->dh / v->sh * v->Wq + kw * v->dw / v->sw;
            }
}

#if KG_HAVE_X86
/* The outputs' terms in 6-output panels from the shared copy: K block
 * item at k0 * npp * 6, panel pp at + pp * kc * 6, term k's 6 at + k * 6,
 * zeros past the last output. */
static void kg_tpix_fn(void *ctx, int tid, long item) {
    (void)tid;
    kg_ctx *x = ctx;
    const kg_gemm *j = x->j;
    const int64_t K = j->K, OW = j->gvalid, Wq = j->conv ? j->conv->Wq : OW, N = x->t_n, npp = x->t_npp;
    const float *from = j->conv ? x->shared : j->b;
    const int64_t k0 = (int64_t)item * x->t_kc, kc = K - k0 < x->t_kc ? K - k0 : x->t_kc;
    const int64_t *bo = x->boff + k0;
    float *dst = x->t_pix_w + k0 * npp * KG_MR;
    /* a panel's terms in a run (its writes in order); its 6 outputs'
     * places on the grid, one run of 6 where they share an output row */
    for (int64_t pp = 0; pp < npp; pp++) {
        int64_t at[KG_MR];
        for (int64_t i = 0; i < KG_MR; i++) {
            const int64_t q = pp * KG_MR + i < N ? pp * KG_MR + i : N - 1;
            at[i] = q / OW * Wq + q % OW;
        }
        float *d = dst + pp * kc * KG_MR;
        if (pp * KG_MR + KG_MR <= N && at[KG_MR - 1] - at[0] == KG_MR - 1) {
            for (int64_t k = 0; k < kc; k++, d += KG_MR) memcpy(d, from + bo[k] + at[0], KG_MR * sizeof *d);
        } else {
            const int64_t n = N - pp * KG_MR < KG_MR ? N - pp * KG_MR : KG_MR;
            for (int64_t k = 0; k < kc; k++, d += KG_MR)
                for (int64_t i = 0; i < KG_MR; i++) d[i] = i < n ? from[bo[k] + at[i]] : 0.0f;
        }
    }
}

static void kg_tlanes_fn(void *ctx, int tid, long item) {
    const kg_ctx *x = ctx;
    if (x->avx512) lanes_item_avx512(x, tid, item);
    else lanes_item_avx2(x, tid, item);
}

/* A 1x1 convolution whose outputs read no padding (ResNet's stride-2
 * downsamplings): on the AVX-512 build's lanes route each output's terms
 * are read where they lie in the input itself (output (r, c) at r sh W +
 * c sw, channel k H W on), with no copy. The grid route copies the one
 * stride phase it reads first (kg_fill_fn): for ResNet-18's 64 -> 128 on
 * 56 x 56 a pass over the whole input and a write and a read of a quarter
 * of it, for a product of 6.4 M multiply-adds. */
static bool kg_lanes_direct(const kg_gemm *j) {
    const kg_conv *v = j->conv;
    return v && kg_use_avx512() && v->KH == 1 && v->KW == 1 && v->pt == 0 && v->pl == 0 &&
           (v->OH - 1) * v->sh < v->H && (j->gvalid - 1) * v->sw < v->W && !mpx_env_on("MPX_KERN_NODIRECT");
}

/* A convolution on a narrow map (or a product with few columns whose B
 * and C rows are runs) with its output channels in the lanes and its
 * outputs broadcast (lanes_item): on the grid a 7 x 7 map's 49 outputs
 * are 9 x 7 columns rounded to 64 (23% computed and dropped), 14 x 14's
 * 196 are 210 rounded to 224; here 49 outputs are 9 panels of 6 and 512
 * channels 32 lanes of 16. The AVX-512 and AVX2 fp32 builds (their
 * micro-kernels); the portable build takes the grid, with the same bits.
 * false: not taken. */
static bool kg_lanes_worth(const kg_gemm *j, int nt) {
    const kg_conv *v = j->conv;
    if (j->G != 1 || j->mode != KG_FP32 || !(kg_use_avx512() || kg_use_avx2()) || mpx_env_on("MPX_KERN_NOLANES"))
        return false;
    /* (without a grid: B's rows are runs and so are C's, as a 1x1
     * convolution's; a 7 x 7 map's 49 columns were 64) */
    if (!v && (!j->boff || j->b_owner || !kg_c_runs(j)))
        return false;
    const int64_t M = j->M, N = v ? v->OH * j->gvalid : j->N, cols = v ? v->OH * v->Wq : j->N;
    if (M < 32 || N > 512 || N < KG_MR || (double)j->K * (double)N > (double)(16 << 20)) return false;
    if (v && kg_shared_floats(v, 1) > (double)KG_SHARED_MAX) return false;
    /* Where the items would each hold one 16-channel panel (kg_lanes_run
     * halves t_cpi until there are two items a thread: M at most 96 on
     * two threads), every AVX-512 call keeps 6 sums in flight, too few to
     * cover the fused multiply-add's latency; the grid's calls keep 24.
     * Zen 5, two threads: EfficientNet-B0's 480 -> 80 1x1 convolutions on
     * 14 x 14 0.128 -> 0.086 ms, MobileNetV3-Small's convolutions 1.61 ->
     * 1.55 ms a forward, the direction classifier's 0.62 -> 0.59 (node
     * medians of three interleaved profiles). The AVX2 build's calls keep
     * 12 sums either way, and its grid was the slower (MobileNetV3-Small's
     * 576 -> 96 on 7 x 7, 0.047 against 0.080 ms on the AVX2 path there). */
    if (kg_use_avx512() && kg_cdiv(kg_cdiv(M, KG_NR), 2) < 2 * (int64_t)nt) return false;
    const double grid = (double)(kg_cdiv(M, KG_MR) * KG_MR) * (double)(kg_cdiv(cols, KG_NR) * KG_NR);
    const double lanes = (double)(kg_cdiv(M, KG_NR) * KG_NR) * (double)(kg_cdiv(N, KG_MR) * KG_MR);
    /* (read where they lie, a 1x1 convolution's outputs need no copy: the
     * lanes whatever the shapes' rounding. ResNet-18's 128 -> 256 on 28 x
     * 28 and 256 -> 512 on 14 x 14 at stride 2, two threads: 0.088 -> 0.071
     * and 0.073 -> 0.061 ms; its 64 -> 128 on 56 x 56, 784 outputs, took
     * 0.124 ms this way against the grid's 0.098, and stays there) */
    return kg_lanes_direct(j) || lanes * 100.0 < grid * 92.0;
}

static kg_result kg_lanes_run(const kg_gemm *j, int nt) {
    const kg_conv *v = j->conv;
    const bool direct = kg_lanes_direct(j);
    const int64_t K = j->K, M = j->M, np16 = (M + 15) / 16;
    kg_ctx x = {.j = j, .avx2 = true, .avx512 = kg_use_avx512()};
    x.t_n = v ? v->OH * j->gvalid : j->N;
    x.t_npp = kg_cdiv(x.t_n, KG_MR);
    x.t_cpi = 4;
    /* K blocks of 64 terms (one fp32 block) in the AVX2 build: a block's
     * weights for 64 channels (16 KiB) and its terms of 49 outputs (14
     * KiB) stay in L1 together, as 128's do not. The AVX-512 build takes
     * 128 (two fp32 blocks, the same sums): half the trips of each sum
     * through the tile, which on Zen 5 made ResNet-18's 14 x 14 and 7 x 7
     * convolutions about 5% faster (one thread and two; 256 no better) */
    x.t_kc = x.avx512 ? 2 * MPX_ACC_FP32_BLOCK : MPX_ACC_FP32_BLOCK;
    while (x.t_cpi > 1 && kg_cdiv(np16, x.t_cpi) < 2 * nt) x.t_cpi /= 2;
    const long items = (long)kg_cdiv(np16, x.t_cpi);
    if (nt > items) nt = (int)items;
    int64_t *boff = NULL;
    bool ok = true, finite = true;
    if (v) {
        if (!direct) ok = kg_shared_make(v, 1, &x);
        ok = (boff = malloc((size_t)K * sizeof *boff)) != NULL && ok;
    }
    float *own = NULL;
    /* A candidate's weights (a_fmt): the fp32 panels, each item's rounded
     * per K block into its buffer (kg_ctx.ka_fmt), none kept per format */
    kg_gemm j32 = *j;
    x.ka_fmt = j->a_fmt && j->a_owner ? j->a_fmt : NULL;
    if (x.ka_fmt) j32.a_fmt = NULL;
    const float *a16 = kg_rows16(&j32, &own, &finite);
    if (a16 && finite && x.ka_fmt && j->finite_a)
        finite = kg_a_finite_in(j, a16, j->G * np16 * K * 16, x.ka_fmt);
    /* The AVX-512 build reads each output's terms where they lie (ukro:
     * output q's place t_at[q], a term's shift boff[k]); the AVX2 build
     * packs them in 6-output panels first (kg_tpix_fn), as its kernel
     * reads its A. */
    const bool lie = x.avx512;
    int64_t *at = NULL;
    if (lie) {
        const int64_t OW = j->gvalid, Wq = v ? v->Wq : OW;
        if ((at = malloc((size_t)x.t_n * sizeof *at)) != NULL)
            for (int64_t q = 0; q < x.t_n; q++)
                at[q] = direct ? q / OW * v->sh * v->W + q % OW * v->sw : q / OW * Wq + q % OW;
        ok = ok && at;
    } else {
        x.t_pix_w = kg_alloc((size_t)(K * x.t_npp * KG_MR));
        ok = ok && x.t_pix_w;
    }
    ok = ok && a16;
    for (int t = 0; ok && t < nt; t++) {
        ok = (x.tile[t] = kg_alloc((size_t)(x.t_npp * KG_MR * x.t_cpi * KG_NR))) != NULL;
        if (ok && x.ka_fmt) ok = (x.abuf[t] = kg_alloc((size_t)(x.t_cpi * KG_NR * x.t_kc))) != NULL;
    }
    /* A copy per thread (kg_ctx.t_copy) where reading from the other
     * core's half of one shared copy costs more than filling the whole
     * again: a kernel of several taps (each input value read by each tap
     * that reaches it; a 1x1 convolution's runs were as fast from the
     * shared copy, and the second fill cost it 3-4%), its copy small enough
     * to stay in L2 beside an item's weights. Zen 5 (KVM), two threads,
     * fp32, while its two vCPUs shared no cache: 128 -> 256 3x3 stride 2 on
     * 28 x 28 0.61 -> 0.46 ms, 256 -> 512 on 14 x 14 0.64 -> 0.53, 256 ->
     * 256 stride 1 on 14 x 14 0.77 -> 0.71, ResNet-18's forward 14.1 ->
     * 13.6; while they shared one (the host moves them), 0.34 -> 0.33,
     * 0.39 -> 0.40, 0.64 -> 0.64 and 11.94 -> 12.00: the same within noise. */
    unsigned char filled[8] = {0};
    const bool own_copy = ok && lie && v && nt > 1 && v->KH * v->KW > 1 &&
                          (double)v->cig * (double)x.schan <= KG_OWN_COPY_MAX;
    if (own_copy) {
        x.t_copy[0] = x.shared;
        x.shared = NULL;
        x.t_filled = filled;
        for (int t = 1; ok && t < nt; t++) ok = (x.t_copy[t] = kg_copy_alloc((size_t)(v->cig * x.schan))) != NULL;
    }
    if (ok && finite) {
        x.t_w16 = a16;
        x.t_pix = x.t_pix_w;
        x.boff = j->boff;
        if (v && direct) {
            for (int64_t k = 0; k < K; k++) boff[k] = k * v->H * v->W;
            x.boff = boff;
        } else if (v) {
            kg_conv_boff(v, &x, boff);
            x.boff = boff;
            if (!own_copy) mpx_k_parallel((long)v->cig, nt, kg_fill_fn, &x);
        }
        if (lie) {
            x.t_from = direct ? v->x : v ? x.shared : j->b;
            x.t_at = at;
        } else
            mpx_k_parallel((long)kg_cdiv(K, x.t_kc), nt, kg_tpix_fn, &x);
        mpx_k_parallel_stoppable(items, nt, kg_tlanes_fn, &x);
    }
    free(at);
    free(x.t_pix_w);
    kg_free_bufs(&x);
    free(boff);
    free(own);
    return !ok ? KG_NOMEM : !finite ? KG_NONFINITE : KG_DONE;
}
#else
static bool kg_lanes_worth(const kg_gemm *j, int nt) { (void)j, (void)nt; return false; }
static kg_result kg_lanes_run(const kg_gemm *j, int nt) { (void)j, (void)nt; return KG_NOMEM; }
#endif

/* The matrix-vector routes (no packing of B). */
static bool kg_mv_route(const kg_gemm *j) {
    return j->N == 1 && !j->conv && !j->b_ldt && j->mode == KG_FP32 && j->gvalid >= 1;
}

static kg_result kg_run(const kg_gemm *j, int nt);

kg_result kg_gemm_run(const kg_gemm *j) {
    const int nt = kg_threads_for((double)j->G * (double)j->M * (double)j->N * (double)j->K);
    if ((j->a_fmt && !j->a_owner) || (j->b_fmt && !j->b_owner)) return KG_NOMEM; /* (a caller's slip) */
    /* A is packed on every route, B only on the main one and only whole
     * (kg_kept_b): elsewhere B is read where it lies, so it is read from
     * its rounded copy, kept on the constant (or, past that budget, one for
     * this call). */
    int64_t npad;
    if (!j->b_fmt || (!kg_mv_route(j) && kg_kept_b(j, nt, &npad))) return kg_run(j, nt);
    const mpx_tensor *t = j->b_owner;
    const int64_t at = t->f32 && j->b >= t->f32 && j->b < t->f32 + t->nelem ? j->b - t->f32 : -1;
    if (at < 0) return KG_NOMEM;
    kg_gemm r = *j;
    float *own;
    const float *rounded = mpx_k_rounded_values(j->b_owner, j->b_fmt, &own);
    if (!rounded) return KG_NOMEM;
    if (own) r.b_owner = NULL; /* (not the constant's: nothing of it is kept) */
    r.b = rounded + at;
    r.b_fmt = NULL;
    const kg_result res = r.b_ldt && !r.b_owner ? KG_NOMEM : kg_run(&r, nt);
    free(own);
    return res;
}

enum { KG_MV_PAR_MIN = 1 << 19 }; /* multiply-adds of a kept-A matrix-vector product worth two threads */
/* Floats of A (M x K) small enough that narrow bands of a product, each
 * reading all of A, cost less than blocks of rows (kg_run): 64 KiB, L2's
 * share a band reads again, where a 1x1 convolution's B packed again per
 * block was the larger cost. */
enum { KG_SMALL_A = 16384 };

static kg_result kg_run(const kg_gemm *j, int nt) {
    const int64_t M = j->M, N = j->N, K = j->K, mpan = (M + KG_MR - 1) / KG_MR;
    if (kg_mv_route(j) && j->a_owner) {
        /* The graph's own A: packed once into 16-row panels and kept (the
         * rows as lanes, each k's 16 values one load). */
        float *own = NULL;
        bool finite = true;
        const float *a16 = kg_rows16(j, &own, &finite);
        if (!a16) return KG_NOMEM;
        kg_mv16 w = {.j = j, .ap = a16, .f = KG_PICK(kg_lanes_fn, mv16)};
        /* (a large A is read from memory at the speed of both cores' loads:
         * a classifier's 1000 x 1024 weights are 4 MB a run.) From 2^19
         * multiply-adds (2 MB of A) on the threads: MobileNetV3-Small's two
         * classifier products (1024 x 576, 1000 x 1024) were a ninth of its
         * forward on one thread (Zen 5, two threads, paired processes: the
         * forward 0.88-0.92 of its time with them on the calling thread
         * alone). ResNet-18's 1000 x 512 stays on the calling
         * thread: on two, its node took 0.20-0.22 ms in the quantised
         * ResNet-18 against 0.09-0.16 on one (profile medians). On a shared
         * machine a worker woken for a product may be preempted inside an
         * item and the caller waits for it: with three busy processes
         * beside it on the two cores MobileNetV3-Small's forward took 6.57
         * ms against 6.30 (at a load average of 11, ResNet-18's classifier
         * alone took 0.5-5.6 ms against 0.16-0.24 on one thread); a quiet
         * machine is the case this is tuned for. */
        if (finite) mpx_k_parallel_stoppable((long)(j->G * ((M + 15) / 16)), (double)j->G * (double)M * (double)K > KG_MV_PAR_MIN ? kg_threads() : 1,
                                   kg_mv16_fn, &w);
        free(own);
        return finite ? KG_DONE : KG_NONFINITE;
    }
    if (kg_mv_route(j)) {
        /* No packing to check A in: a pass of its own (these A are small:
         * squeeze-excitation 1x1 convolutions). */
        for (int64_t g = 0; j->finite_a && g < j->G; g++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t k = 0; k < K; k++)
                    if (!isfinite(j->a[g * j->ga + m * j->ams + k * j->aks])) return KG_NONFINITE;
        mpx_k_parallel_stoppable((long)(j->G * ((M + 7) / 8)), nt, kg_mv_fn, (void *)j);
        return KG_DONE;
    }
    if (kg_lanes_worth(j, nt)) return kg_lanes_run(j, nt);
    unsigned char a_bad[8] = {0};
    kg_ctx x = {.j = j, .avx2 = kg_use_avx2(), .avx512 = kg_use_avx512(), .h16 = kg_use_h16(j->mode, j->f16), .a_bad = a_bad};
    int64_t *boff = NULL;
    /* A constant's A read in a low format (a candidate's weights) reads its
     * fp32 panels, rounded per item (kg_ctx.ka_fmt), as B is read (kb_fmt):
     * no panels kept per format. (Not for the fp16 FMA kernel, whose
     * operands the executor rounded.) */
    x.ka_fmt = j->a_fmt && j->a_owner && !x.h16 ? j->a_fmt : NULL;
    kg_key akey = kg_key_a(j, KG_KEPT_PANELS);
    if (x.ka_fmt) akey.k.fmt = NULL;
    const kg_kept *kept = j->a_owner ? kg_kept_find(&akey) : NULL;
    /* A read where it lies (ukrl): an fp32 product's A whose terms are runs,
     * kept nowhere (a packing would be made once and kept), not rounded
     * and not checked for finite values (the packing pass does both), whose
     * C rows are runs (the only path that takes it: gemm_item), on the
     * AVX-512 build: attention's products, a per-call packing of A less. */
    /* A tile where C's rows are not runs of whole panels (columns dropped
     * inside, or strided). */
    const bool tiled = !kg_c_runs(j);
    x.alies = x.avx512 && j->mode == KG_FP32 && !x.h16 && !j->conv && !j->a_owner && !j->a_fmt && !j->finite_a &&
              j->aks == 1 && !tiled;
    float *ap = kept || x.alies ? NULL : kg_alloc((size_t)(j->G * mpan * KG_MR * K));
    bool ok = kept || x.alies || ap != NULL, bad = false;
    /* Work items are (group, column band, block of rows of A). Bands of
     * about 512 columns give a thread 4 or more items where there are
     * columns enough; where there are few columns and many rows (ResNet's
     * last stage: 512 x 4608 weights, a 7 x 7 output) the rows are split
     * instead, so that no thread streams all of A (9 MB there) once per
     * narrow band (narrow bands run at a fraction of wide ones' rate).
     * Each output value is the same sum in the same order however it is
     * cut. */
    const int64_t want = 4 * (int64_t)nt;
    x.nmb = 1;
    x.mpb = mpan;
    if (j->conv) {
        /* Bands of R grid rows. The strip holds R rows, the rows the taps
         * reach below them, and one more for the dropped columns' reads. */
        const kg_conv *v = j->conv;
        const bool shared = kg_shared_floats(v, j->G) <= (double)KG_SHARED_MAX;
        int64_t R = kg_cdiv(512, v->Wq), most = kg_cdiv(v->OH, 4 * nt);
        if (R > v->OH) R = v->OH;
        /* Too few bands of 512 columns: narrower bands where they keep 256
         * columns or more, rather than blocks of rows, which pack every
         * band's B once per block (a 64 x 56 x 56 convolution: 8 bands of
         * 7 rows rather than 7 bands in 2 row blocks, B packed twice);
         * bands narrower than 256 columns cost more than they save */
        const int64_t R2 = kg_cdiv(v->OH, kg_cdiv(want, j->G));
        if (j->G * kg_cdiv(v->OH, R) < want && R2 * v->Wq >= 256) R = R2;
        if (j->G * kg_cdiv(v->OH, R) < want && mpan >= 8)
            x.nmb = kg_row_blocks(mpan, j->G, v->OH, R, kg_cdiv(want, j->G * kg_cdiv(v->OH, R)), nt);
        if (x.nmb < 2) {
            x.nmb = 1;
            if (R > most) R = most;
        }
        if (R < 1) R = 1;
        x.icols = R * v->Wq;
        /* Which operand the threads split (kg_ctx.amajor): A's rows where
         * A is the larger (each thread then reads half of A and all of
         * B), else B's columns (all of A, and the half of B its own fill
         * wrote). Two 128 x 28 x 28 3x3 convolutions (A 590 KB, B 460),
         * two threads, interleaved medians: B's columns 1.66 ms, A's rows
         * 1.50, the shared counter's order before home ranges 1.46. */
        x.amajor = shared && x.avx512 && j->G == 1 && nt > 1 && (double)M * (double)K > kg_shared_floats(v, 1);
        if (shared && x.avx512) kg_col_split(N, mpan, j->G, nt, x.amajor, &x.icols, &x.nmb);
        if (x.amajor && x.nmb < nt) x.amajor = false;
        if (shared) {
            ok = kg_shared_make(v, j->G, &x) && ok;
        } else { /* per-item strips of the band's rows */
            x.srows = R + (v->KH - 1) * v->dh / v->sh + 1;
            x.splane = x.srows * v->Wq;
            x.schan = kg_phase_planes(v) * x.splane;
        }
        boff = malloc((size_t)K * sizeof *boff);
        ok = ok && boff;
        if (ok) kg_conv_boff(v, &x, boff);
        x.boff = boff;
    } else {
        /* Bands of whole 4-panel groups (64 columns): a band of 96 would
         * end in a 2-panel call, whose 12 sums keep the FMA ports less busy
         * than 24. */
        int64_t nc = (kg_cdiv(N, 4 * nt) + 4 * KG_NR - 1) / (4 * KG_NR) * (4 * KG_NR);
        /* Where those bands are too few to go without blocks of rows and
         * B is packed per item, bands a group narrower, as many as the
         * items wanted, rather than blocks of rows, each of which packs its
         * band's B again: bands of 256 columns or more, or of 64 where A is
         * small (a narrow band streams all of A once; the convolutions'
         * rule above is 256 alike). 1x1 convolutions with few input
         * channels, two threads, medians of the fastest tenth: 16 -> 72 on
         * 56 x 56, 7 bands of 448 columns in 2 row blocks -> 9 bands of
         * 384, 0.049 -> 0.044 ms with the other core busy, 0.028 -> 0.025
         * with it free; 24 -> 88 on 28 x 28, 7 bands of 128 in 2 blocks ->
         * 13 of 64, 0.0200 -> 0.0187 ms (busy). */
        const int64_t nd = kg_cdiv(N, 4 * nt) / (4 * KG_NR) * (4 * KG_NR);
        const int64_t nd_min = M * K <= KG_SMALL_A ? 4 * KG_NR : 256;
        if (!j->b_owner && !j->b_ldt && mpan >= 8 && j->G * kg_cdiv(N, nc) < want && nd >= nd_min &&
            j->G * kg_cdiv(N, nd) >= want)
            nc = nd;
        x.icols = nc < 64 ? 64 : nc > 512 ? 512 : nc;
        x.boff = j->boff;
        if (j->G * kg_cdiv(N, x.icols) < want && mpan >= 8) {
            x.nmb = kg_cdiv(want, j->G * kg_cdiv(N, x.icols));
            if (x.nmb > mpan / 4) x.nmb = mpan / 4;
            if (x.nmb < 1) x.nmb = 1;
        }
    }
    x.mpb = kg_cdiv(mpan, x.nmb);
    x.nmb = kg_cdiv(mpan, x.mpb);
    x.nqb = kg_cdiv(N, x.icols);
    const long items = (long)(j->G * x.nqb * x.nmb);
    if (nt > items) nt = (int)items;
    x.ldt = (x.icols + 4 * KG_NR - 1) / KG_NR * KG_NR + 3 * KG_NR;
    /* Packed B: at most KG_PACK floats, less for small products. */
    x.kc = j->conv && !x.avx512 ? KG_KC_CONV : KG_KC;
    x.bpad = x.avx512 ? 0 : KG_BPAD;
    const int64_t kcm = K < x.kc ? K : x.kc, colm = (x.icols + KG_NR - 1) / KG_NR * KG_NR;
    const int64_t bpn = (kcm * colm < KG_PACK ? kcm * colm : KG_PACK) + colm / KG_NR * x.bpad;
    if (ok) x.kb = kg_kept_b(j, nt, &x.kb_npad);
    x.kb_fmt = x.kb ? j->b_fmt : NULL;
    ok = ok && (x.kb || !j->b_ldt); /* (B given transposed is read from its packing only) */
    for (int t = 0; ok && t < nt; t++) {
        ok = (x.bp[t] = kg_alloc((size_t)bpn)) != NULL;
        if (ok && j->conv && !x.shared) /* zeroed: columns past the last grid row are read (and dropped) */
            ok = (x.strip[t] = calloc((size_t)(j->conv->cig * x.schan + 16), sizeof(float))) != NULL;
        if (ok && tiled) ok = (x.tile[t] = kg_alloc((size_t)(x.mpb * KG_MR * x.ldt))) != NULL;
        if (ok && x.ka_fmt) ok = (x.abuf[t] = kg_alloc((size_t)(x.mpb * KG_MR * (x.kc + MPX_ACC_FP32_BLOCK)))) != NULL;
    }
    if (ok && x.shared) {
        /* (By channels where the bands are fewer than the threads: every
         * item then reads all of B, and the bands would give one thread
         * the whole fill while the other waits: ResNet's 1x1 stride-2
         * convolutions, one band in 8 blocks of rows.) */
        if (j->G == 1 && nt > 1 && !x.amajor && x.nqb >= nt) kg_fill_bands(&x, items, nt);
        mpx_k_parallel(x.fnb ? (long)x.fnb * (long)j->conv->cig : (long)(j->G * j->conv->cig), nt, kg_fill_fn, &x);
    }
    if (ok && (kept || x.alies)) { /* A packed and kept, or read where it lies */
        if (kept) x.ap = kept->ap;
        bad = kept && j->finite_a && !kept->finite;
        bad = bad || (kept && x.ka_fmt && j->finite_a && !kg_a_finite_in(j, kept->ap, j->G * mpan * KG_MR * K, x.ka_fmt));
        if (!bad) mpx_k_parallel_stoppable(items, nt, kg_gemm_fn, &x);
    } else if (ok) {
        /* Pack A, a panel an item, on the same threads (ResNet-18's last
         * convolutions pack 9 MB each call). */
        x.ap = x.ap_w = ap;
        mpx_k_parallel((long)(j->G * mpan), nt, kg_pack_a_fn, &x);
        bool fbad = false; /* (the packing's own verdict, kept with it) */
        for (int t = 0; t < 8; t++) fbad = fbad || a_bad[t];
        bad = fbad || (x.ka_fmt && j->finite_a && !kg_a_finite_in(j, ap, j->G * mpan * KG_MR * K, x.ka_fmt));
        if (!bad) mpx_k_parallel_stoppable(items, nt, kg_gemm_fn, &x);
        /* Kept with the finite check's verdict, when it ran. */
        if (j->a_owner && kg_kept_add(&akey, ap, !fbad)) ap = NULL;
    }
    kg_free_bufs(&x);
    free(boff);
    free(ap);
    return !ok ? KG_NOMEM : bad ? KG_NONFINITE : KG_DONE;
}
