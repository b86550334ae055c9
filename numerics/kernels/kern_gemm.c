/* kern_gemm.c - the GEMM core and the depthwise kernel (kern_gemm.h): operand
 * packing, the choice of the AVX2 or the portable build of the inner loops
 * (kern_gemm_body.h), and the threads.
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
 * Threads: each call starts up to kg_threads() - 1 helpers (pthreads), which
 * take work items from a shared atomic counter with the calling thread; each
 * writes only its own items' outputs and its own packing buffer, so the
 * result does not depend on who ran what. Calls below 250 K
 * multiply-adds run on the calling thread alone (kg_threads_for). Nothing
 * static is mutable. */
#include "kern_gemm.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include "round_odd.h"
#define KG_HAVE_X86 1
#else
#define KG_HAVE_X86 0
#endif
/* Compilers with _Float16 and the AVX512-FP16 intrinsics on x86-64 (GCC 12,
 * Clang 15; Clang 14 has the intrinsics but not the type): the fp16
 * accumulation kernel of the AVX-512 build (kern_gemm_body.h, ukrh). */
#if KG_HAVE_X86 && defined(__x86_64__) && \
    ((defined(__clang__) && __clang_major__ >= 15) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define KG_HAVE_H16 1
#define KG_H16_TARGET __attribute__((target("avx512fp16,avx512vl,avx512bw,avx512dq,avx512f,avx2,f16c,fma")))
__extension__ typedef _Float16 kg_half; /* (a GCC and Clang extension in C11) */
#else
#define KG_HAVE_H16 0
#endif

/* 32-byte vectors in the portable build are passed in memory: only
 * always-inline helpers take or return them, so the ABI note does not apply. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

enum { KG_MR = 6, KG_NR = 16, KG_KC = 128, KG_PACK = 32768 /* floats of packed B */ };
/* K blocks of a convolution (kg_gemm.conv set) in the AVX2 and portable
 * builds: half as many trips of C through the caches (a convolution's C
 * rows are output planes, read back from L3 after a block). Conv time,
 * mpx_bench profile (min per node), alternating runs, AMD EPYC of 2026-11:
 * UNet, median of 10, 175.9 -> 169.2 ms on two threads; median of 4, 348 ->
 * 324 on one. With 256 for every product (measured first): det 84.1 ->
 * 81.5 on one thread, the same on two; ResNet-18, EfficientNet-B0,
 * MobileNetV3-Small and rec the same; ViT-B/16's and BERT-style's MatMuls
 * the same, so they keep 128, as does the AVX-512 build (set on the
 * Xeon's L1, where 4 panels of 128 terms fit). */
enum { KG_KC_CONV = 256 };
/* Floats between the panels of B packed per chunk in the AVX2 and portable
 * builds (kern_gemm_body.h, gemm_item's pstr). Why: a panel is kc x 16
 * floats, 8 KiB at kc 128 and 16 KiB at KG_KC_CONV, so the panels of a
 * chunk lie a multiple of 4 KiB apart, and the packing's stores of each k
 * (one a panel) all fell in one L1 set of 8 ways. A line's padding moves
 * each panel to the next set: in a copy of the loop, packing a 64 -> 32
 * channel 3 x 3 convolution's B on a 256 x 64 map took 2.05 -> 1.04 ms; in
 * UNet's forward the packing's function fell from 17% to 10% of the
 * samples (perf, AMD EPYC of 2026-11). (The AVX-512 build reads several
 * panels a call at the plain stride.) */
enum { KG_BPAD = 16 };
_Static_assert(KG_MR == 6, "kg_pack_a_fn writes a panel's 6 rows by hand");
_Static_assert(KG_KC % MPX_ACC_FP32_BLOCK == 0 && KG_KC_CONV % MPX_ACC_FP32_BLOCK == 0,
               "K blocks must hold whole fp32 blocks");

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* Lanes 0, 2, ..., 14 of the 16 lanes of a and b. */
#if defined(__clang__)
#define KG_EVENS(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#else
#define KG_EVENS(a, b) __builtin_shuffle(a, b, (v8i){0, 2, 4, 6, 8, 10, 12, 14})
#endif

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

static inline kg_rows kg_rows_of(const kg_gemm *j, const float *apg, int64_t k0, const float *bs, int64_t i) {
    const int64_t M = j->M, K = j->K;
    return (kg_rows){.mr = (int)(M - i * KG_MR < KG_MR ? M - i * KG_MR : KG_MR),
                     .ap = apg + i * KG_MR * K + k0 * KG_MR,
                     .bi = bs ? bs + i * KG_MR : NULL,
                     .crow = j->crow + i * KG_MR};
}

/* Lanes of a and b (0-7 a's, 8-15 b's) in the order the eight indices give. */
#if defined(__clang__)
#define KG_SHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define KG_SHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) __builtin_shuffle(a, b, (v8i){i0, i1, i2, i3, i4, i5, i6, i7})
#endif

/* The vector helpers the inner loops use (ld8, st8, splat, rne8) are defined
 * in kern_gemm_body.h, once per build: a helper compiled for the baseline ISA
 * and inlined into AVX2 code keeps its baseline lowering (a broadcast became
 * two halves and four inserts). */

/* What one call's work items share. Per-thread buffers are indexed by the
 * thread's number. */
typedef struct kg_ctx {
    const kg_gemm *j;
    const kg_dw *d;
    const float *ap;       /* packed A: [g][panel][K][6] */
    float *ap_w;           /* the same, for the packing pass */
    const int64_t *boff;   /* B offsets per k (conv: into the strip) */
    int64_t nqb, icols;    /* column bands per group; grid columns per band */
    int64_t nmb, mpb;      /* row blocks per band; 6-row panels per block */
    int64_t srows, splane, schan; /* strip: rows, phase plane, channel (floats) */
    /* A convolution's whole padded, phase-split input, shared by the items
     * (filled once, a channel an item, before them): per-item strips
     * filled each band's rows again for every block of A's rows, and the
     * rows the taps reach below a band twice (15% of ResNet-18's forward).
     * NULL: per-item strips (an input too large for one copy). */
    float *shared;
    float *bp[8], *strip[8];
    /* This call's K block (KG_KC_CONV for a convolution outside the AVX-512
     * build, else KG_KC) and the floats between panels of B packed per
     * chunk (KG_BPAD outside the AVX-512 build, else 0): decided in kg_run,
     * read by the packing buffer's size and by gemm_item. */
    int64_t kc, bpad;
    /* Per thread, where the item's C tile is summed when C's columns are
     * not one run a panel (a convolution's grid rows are wider than its
     * output rows: every panel straddling two went through a scalar copy
     * in and out at each K block); copied out once, after the last. Rows:
     * the item's panels' 6 each; ldt floats a row. NULL: straight into C. */
    float *tile[8];
    int64_t ldt;
    /* B's kept packing ([K block][16-column panel][kc][16], kb_npad columns
     * with the last panel's padding), or NULL: packed per chunk into bp. */
    const float *kb;
    int64_t kb_npad;
    /* A narrow map's convolution with the output channels in the lanes
     * (kg_lanes_run): A kept in 16-row panels ([panel][K][16]), the
     * outputs' terms in 6-output panels ([K block][panel][kc][6]), N
     * outputs, npp panels of them, 16-channel panels per item. */
    const float *t_w16, *t_pix;
    float *t_pix_w;
    int64_t t_n, t_npp, t_cpi, t_kc; /* t_kc: terms a K block */
    bool avx2, avx512;
    bool h16; /* fp16 accumulation of fp16 operands on AVX512-FP16 (ukrh) */
    unsigned char *a_bad;  /* [thread]: the packing pass met a non-finite A value */
} kg_ctx;

/* A call group's B where it lies, for prefetching: term k's 64 columns
 * at b + off[k], k < kc. */
typedef struct kg_bnext {
    const float *b;
    const int64_t *off;
    int64_t kc;
} kg_bnext;

/* Panels a micro-kernel call takes of `left` (4, 2 or 1). */
static int kg_group(int64_t left) { return left >= 4 ? 4 : left >= 2 ? 2 : 1; }

static int64_t kg_cdiv(int64_t a, int64_t b) { /* ceil(a / b), b > 0 */
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

/* How long the items of a split take on nt threads, each taking the next
 * item when it is free (mpx_k_parallel's order: items are (group, band,
 * row block), the row block fastest), in rows x panels. */
static int64_t kg_makespan(int64_t mpan, int64_t nmb, int64_t G, int64_t OH, int64_t R, int nt) {
    const int64_t mpb = kg_cdiv(mpan, nmb), nb = kg_cdiv(OH, R);
    int64_t load[8] = {0};
    for (int64_t g = 0; g < G; g++)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t m = 0; m * mpb < mpan; m++) {
                const int64_t rows = b + 1 < nb ? R : OH - b * R;
                const int64_t pans = (m + 1) * mpb <= mpan ? mpb : mpan - m * mpb;
                int t = 0;
                for (int u = 1; u < nt; u++) t = load[u] < load[t] ? u : t;
                load[t] += rows * pans;
            }
    int64_t most = 0;
    for (int u = 0; u < nt; u++) most = load[u] > most ? load[u] : most;
    return most;
}

/* Row blocks for a convolution with few bands: about `want` of them, at
 * least 4 panels each, the count whose items share out most evenly on the
 * threads (ties: the most items). ResNet-18's 256 x 14 x 14 convolutions
 * had been cut into 8 blocks of 43 panels, 7 of 6 and one of 1: one
 * thread took 24 panels, the other 19. */
static int64_t kg_row_blocks(int64_t mpan, int64_t G, int64_t OH, int64_t R, int64_t want, int nt) {
    int64_t best = 1, best_t = -1;
    const int64_t hi = want < mpan / 4 ? want : mpan / 4;
    for (int64_t nmb = 1; nmb <= hi; nmb++) {
        if (kg_cdiv(mpan, kg_cdiv(mpan, nmb)) != nmb) continue; /* the same split as a smaller count */
        const int64_t t = kg_makespan(mpan, nmb, G, OH, R, nt);
        if (best_t < 0 || t <= best_t) best = nmb, best_t = t;
    }
    return best;
}

/* The portable build. */
#define KG_F(x) x##_gen
#define KG_SIMD 0
#define KG_TARGET
#include "kern_gemm_body.h"
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET

/* The AVX2 build (F16C for fp16 rounding); used only when the CPU has both.
 * Every function of it carries the target attribute (GCC and Clang), so the
 * build needs no -m flags. */
#if KG_HAVE_X86
#define KG_F(x) x##_avx2
#define KG_SIMD 1
#define KG_TARGET __attribute__((target("avx2,f16c,fma")))
#include "kern_gemm_body.h"
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET
#endif

/* The AVX-512 build: the AVX2 build's code with the fp32 micro-kernel on
 * 16-lane vectors (one register per row of the 6 x 16 tile instead of two).
 * The same products and sums per lane, so the same bits; on this machine's
 * Xeon 16-lane multiplies and adds run 1.6 times the 8-lane ones' rate. */
#if KG_HAVE_X86
#define KG_F(x) x##_avx512
#define KG_SIMD 2
#define KG_TARGET __attribute__((target("avx512f,avx2,f16c,fma")))
#include "kern_gemm_body.h"
#undef KG_F
#undef KG_SIMD
#undef KG_TARGET
#endif

static bool kg_use_avx2(void) {
#if KG_HAVE_X86
    if (mpx_env_on("MPX_KERN_PORTABLE")) return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && mpx_cpu_has_f16c();
#else
    return false;
#endif
}

/* AVX-512 where the CPU has it, unless MPX_KERN_AVX2 asks for the AVX2 build
 * (kern_check runs each build against the documented order). */
static bool kg_use_avx512(void) {
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
static bool kg_use_h16(kg_mode mode, bool f16) {
#if KG_HAVE_H16
    return mode == KG_FP16 && f16 && kg_use_avx512() && mpx_cpu_has_avx512fp16() &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") && !mpx_env_on("MPX_KERN_NOFP16");
#else
    (void)mode, (void)f16;
    return false;
#endif
}

int kg_threads(void) {
    const char *e = getenv("MPX_KERN_THREADS");
    if (e && *e) {
        int n = atoi(e);
        if (n >= 1 && n <= 8) return n;
    }
    return 2;
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

/* ---- threads --------------------------------------------------------------------------------- */

typedef struct kg_par {
    atomic_long next;
    long n;
    void (*fn)(void *ctx, int tid, long item);
    void *ctx;
} kg_par;

typedef struct kg_worker {
    kg_par *p;
    int tid;
    pthread_t th;
} kg_worker;

/* Whether this thread is running an item of a parallel job: a job started
 * from inside one (a batch of small products side by side, each through
 * the GEMM core, which would split it again) runs on the calling thread.
 * The pool is held by the outer job, so such a call used to start threads
 * of its own, a pthread_create per product: BERT's per-head attention
 * products (12 of 64 x 64 x 64 a MatMul) ran at 4 GMAC/s. */
static _Thread_local bool kg_in_job;

static void kg_par_loop(kg_par *p, int tid) {
    long i;
    while ((i = atomic_fetch_add(&p->next, 1)) < p->n) p->fn(p->ctx, tid, i);
}

/* kg_par_loop as one of a job's threads (a job on one thread leaves its
 * items free to split: a batch of one product gets the threads). */
static void kg_par_loop_shared(kg_par *p, int tid) {
    const bool outer = kg_in_job;
    kg_in_job = true;
    kg_par_loop(p, tid);
    kg_in_job = outer;
}

static void *kg_par_main(void *arg) {
    kg_worker *w = arg;
    kg_par_loop_shared(w->p, w->tid);
    return NULL;
}

/* A pool of worker threads kept for the process: a det forward calls this
 * about a thousand times, and creating and joining a thread per call cost
 * more than some of the calls' work. One caller at a time holds the pool;
 * a second, concurrent caller (compare.c runs a node's reference and
 * candidate on two threads, each with its own kernels) runs its items on
 * its own thread: the cores are already both busy, and threads of its own
 * (as it once started) only shared them, at a thread's start-up cost per
 * call. Workers sleep on a condition variable between jobs.
 *
 * The caller waits only for workers that joined its job: when it has run
 * out of items it closes the job (closed = its gen), and a worker that
 * arrives after that skips it. Before, the caller waited for every worker
 * to arrive, so a job that found its worker asleep (no job for the length
 * of its spin) cost the wake-up, tens of microseconds on a VM, even where the
 * caller had run every item itself: small calls could not go parallel
 * (MobileNetV3-Small's 1x1 convolutions, a few hundred thousand
 * multiply-adds each, were slower on two threads). The handshake: a
 * worker counts itself in `active`, then reads `closed`; the caller
 * stores `closed`, then reads `active` (both sequentially consistent), so
 * either the caller sees the worker and waits for it, or the worker sees
 * the job closed and never touches it (the job lives on the caller's
 * stack). */
enum { KG_POOL_MAX = 7 };

static struct {
    pthread_mutex_t hold; /* held by the caller whose job the pool runs */
    pthread_mutex_t m;
    pthread_cond_t go, done;
    kg_par *job;
    int job_nt;           /* workers 1 .. job_nt-1 take part */
    atomic_ulong gen;     /* bumped for every job */
    atomic_ulong closed;  /* the gen of the last job whose items ran out */
    atomic_int active;    /* workers inside a job */
    int started;          /* workers alive */
    kg_worker w[KG_POOL_MAX];
} kg_pool = {.hold = PTHREAD_MUTEX_INITIALIZER,
             .m = PTHREAD_MUTEX_INITIALIZER,
             .go = PTHREAD_COND_INITIALIZER,
             .done = PTHREAD_COND_INITIALIZER};

/* Spin this long (ns) on a job's start or end before sleeping on the
 * condition variable: a sleeping thread took tens of microseconds to wake
 * on this VM, and a forward makes a few hundred parallel calls, a few
 * hundred microseconds of work each (ResNet-18's convolutions). A bounded
 * spin wastes at most this much CPU per call where no job follows. 200 us
 * since the eleventh session (50 before): small models leave gaps of
 * serial nodes longer than 50 us between parallel calls (the PP-OCR
 * classifier's forward 1.78 -> 1.71 ms, 9 of 12 alternating rounds, on
 * the AMD EPYC of 2026-11). */
enum { KG_SPIN_NS = 200000 };

/* Threads running kernels beside the pool's caller (a comparison's second
 * job thread, mpx_k_concurrent): while there are any, nothing spins. There
 * a spinning worker took a core from the other caller's own threads (det's
 * report 552 -> 581 ms). */
static atomic_int kg_concurrent;

void mpx_k_concurrent(bool enter) { atomic_fetch_add(&kg_concurrent, enter ? 1 : -1); }

static uint64_t kg_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Spin until ready(arg), for at most KG_SPIN_NS and only while no other
 * thread runs kernels; true when it happened (false: the caller sleeps on
 * the condition variable). */
static bool kg_spin(bool (*ready)(const void *), const void *arg) {
    const uint64_t end = kg_now_ns() + KG_SPIN_NS;
    for (int i = 0;; i++) {
        if (ready(arg)) return true;
        if ((i & 255) == 255 && (kg_now_ns() > end || atomic_load(&kg_concurrent) > 0)) return false;
#if KG_HAVE_X86
        __builtin_ia32_pause();
#endif
    }
}

static bool kg_new_job(const void *seen) {
    return atomic_load_explicit(&kg_pool.gen, memory_order_acquire) != *(const unsigned long *)seen;
}

static bool kg_job_done(const void *unused) {
    (void)unused;
    return atomic_load(&kg_pool.active) == 0;
}

static void *kg_pool_main(void *arg) {
    kg_worker *w = arg;
    unsigned long seen = 0;
    for (;;) {
        (void)kg_spin(kg_new_job, &seen);
        /* job, job_nt and gen read together under the lock the caller
         * writes them under (a worker outside a job may see a later one's) */
        pthread_mutex_lock(&kg_pool.m);
        while (atomic_load(&kg_pool.gen) == seen) pthread_cond_wait(&kg_pool.go, &kg_pool.m);
        seen = atomic_load(&kg_pool.gen);
        kg_par *p = kg_pool.job;
        bool mine = w->tid < kg_pool.job_nt;
        pthread_mutex_unlock(&kg_pool.m);
        if (!mine) continue;
        atomic_fetch_add(&kg_pool.active, 1);
        /* (closed only grows: a later job's closing closes this one too) */
        if (atomic_load(&kg_pool.closed) < seen) kg_par_loop_shared(p, w->tid);
        if (atomic_fetch_sub(&kg_pool.active, 1) == 1) {
            pthread_mutex_lock(&kg_pool.m); /* (the caller may be about to sleep) */
            pthread_cond_signal(&kg_pool.done);
            pthread_mutex_unlock(&kg_pool.m);
        }
    }
    return NULL;
}

/* Runs p on the pool with nt threads (the caller is thread 0); false when
 * another caller holds the pool or its threads cannot be started. */
static bool kg_pool_run(kg_par *p, int nt) {
    if (pthread_mutex_trylock(&kg_pool.hold) != 0) return false;
    pthread_mutex_lock(&kg_pool.m);
    while (kg_pool.started < nt - 1) {
        kg_worker *w = &kg_pool.w[kg_pool.started];
        w->tid = kg_pool.started + 1;
        if (pthread_create(&w->th, NULL, kg_pool_main, w) != 0) break;
        pthread_detach(w->th);
        kg_pool.started++;
    }
    if (kg_pool.started < nt - 1) {
        pthread_mutex_unlock(&kg_pool.m);
        pthread_mutex_unlock(&kg_pool.hold);
        return false;
    }
    kg_pool.job = p;
    kg_pool.job_nt = nt;
    const unsigned long g = atomic_fetch_add_explicit(&kg_pool.gen, 1, memory_order_release) + 1;
    pthread_cond_broadcast(&kg_pool.go);
    pthread_mutex_unlock(&kg_pool.m);
    kg_par_loop_shared(p, 0);
    atomic_store(&kg_pool.closed, g);
    if (!kg_spin(kg_job_done, NULL)) {
        pthread_mutex_lock(&kg_pool.m);
        while (atomic_load(&kg_pool.active) > 0) pthread_cond_wait(&kg_pool.done, &kg_pool.m);
        pthread_mutex_unlock(&kg_pool.m);
    }
    kg_pool.job = NULL;
    pthread_mutex_unlock(&kg_pool.hold);
    return true;
}

/* fn(ctx, tid, item) for every item < n, on up to nt threads (tid < nt).
 * Shared with the elementwise kernels as mpx_k_parallel (kern_internal.h). */
void mpx_k_parallel(long n, int nt, void (*fn)(void *, int, long), void *ctx) {
    kg_par p = {.n = n, .fn = fn, .ctx = ctx};
    atomic_init(&p.next, 0);
    if (nt > n) nt = (int)n;
    if (nt > KG_POOL_MAX + 1) nt = KG_POOL_MAX + 1;
    if (nt < 2 || kg_in_job) {
        kg_par_loop(&p, 0);
        return;
    }
    if (kg_pool_run(&p, nt)) return;
    if (atomic_load(&kg_concurrent) > 0) {
        kg_par_loop(&p, 0);
        return;
    }
    kg_worker w[KG_POOL_MAX];
    int started = 0;
    for (int t = 1; t < nt; t++) {
        w[started].p = &p;
        w[started].tid = t;
        if (pthread_create(&w[started].th, NULL, kg_par_main, &w[started]) != 0) break;
        started++;
    }
    kg_par_loop_shared(&p, 0);
    for (int t = 0; t < started; t++) pthread_join(w[t].th, NULL);
}

/* Threads for a job of `macs` multiply-adds. 250 K (about 10 us of one
 * core's work): the pool's workers spin between jobs and the caller no
 * longer waits for a sleeping one, so a second thread pays from there. It
 * had been 4 M (from when each call started its threads), which left most
 * of MobileNetV3-Small's convolutions on one core: its forward 6.4 -> 5.1
 * ms on the AMD EPYC of 2026-11 (alternating runs, medians). */
static int kg_threads_for(double macs) {
    return macs < 2.5e5 ? 1 : kg_threads();
}

static float *kg_alloc(size_t n) {
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

/* ---- GEMM ------------------------------------------------------------------------------------- */

/* A work-item function over kg_ctx calling fn's build the CPU takes
 * (x->avx512, x->avx2: chosen once a call). */
#if KG_HAVE_X86
#define KG_ITEM_FN(wrapper, fn)                                                                     \
    static void wrapper(void *ctx, int tid, long item) {                                           \
        kg_ctx *x = ctx;                                                                           \
        if (x->avx512) fn##_avx512(x, tid, item);                                                  \
        else if (x->avx2) fn##_avx2(x, tid, item);                                                 \
        else fn##_gen(x, tid, item);                                                               \
    }
#else
#define KG_ITEM_FN(wrapper, fn)                                                                     \
    static void wrapper(void *ctx, int tid, long item) { fn##_gen(ctx, tid, item); }
#endif

KG_ITEM_FN(kg_gemm_fn, gemm_item)
KG_ITEM_FN(kg_fill_fn, fill_chan)

static void kg_free_bufs(kg_ctx *x) {
    free(x->shared);
    for (int t = 0; t < 8; t++) {
        free(x->bp[t]);
        free(x->strip[t]);
        free(x->tile[t]);
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
    if (j->a_fmt) mpx_round_array(j->a_fmt, dst, dst, (size_t)(KG_MR * K)); /* (zeros stay zeros) */
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

/* ---- packed weights kept on their tensor ------------------------------------------------------
 * A constant's A packed once (mpx_tensor.derived): a list of packings, one
 * per layout a node reads it in (almost always one). The packing is a copy
 * of the values in the micro-kernel's order, so a kept one is the same bits
 * as a fresh one; an entry remembers the source pointer and layout and is
 * used only for the same. Packing was a quarter of ResNet-18's last-stage
 * convolutions (9 MB of weights repacked a call). A lock guards the lists
 * (a comparison's two threads may run the same node); a packing made while
 * another thread kept one is used once and freed. */
typedef struct kg_kept {
    int kind;           /* KG_KEPT_PANELS (the GEMM's [g][panel][K][6]), KG_KEPT_ROWS16 (the mv's
                         * [g][panel][K][16]), KG_KEPT_BPANELS (B's [K block][panel][kc][16]),
                         * KG_KEPT_BTPANELS (the same, of B given transposed: kg_gemm.b_ldt) or
                         * KG_KEPT_ROUNDED (the tensor's values rounded to fmt) */
    const float *a;     /* the values packed (A's, or B's for KG_KEPT_BPANELS; the tensor's own
                         * for KG_KEPT_ROUNDED) */
    int64_t M, K, G, ams, aks, ga; /* their layout (for B: N, K, 1, ldb, 1, 0) */
    const mpx_format *fmt; /* KG_KEPT_ROUNDED: the format; a packing: the format its values
                            * were rounded to as packed (kg_gemm.a_fmt, b_fmt), or NULL */
    bool checked, finite; /* whether the finite check ran, and its verdict */
    float *ap;
    struct kg_kept *next;
} kg_kept;

static pthread_mutex_t kg_kept_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_llong kg_rounded_bytes; /* the kept rounded copies' bytes (mpx_k_kept_rounded) */

enum { KG_KEPT_PANELS = 0, KG_KEPT_ROWS16 = 1, KG_KEPT_BPANELS = 2, KG_KEPT_ROUNDED = 3, KG_KEPT_BTPANELS = 4 };

static void kg_kept_del(kg_kept *k) {
    if (k->kind == KG_KEPT_ROUNDED) atomic_fetch_sub(&kg_rounded_bytes, k->M * (long long)sizeof(float));
    free(k->ap);
    free(k);
}

static void kg_kept_free(void *p) {
    for (kg_kept *k = p, *n; k; k = n) {
        n = k->next;
        kg_kept_del(k);
    }
}

/* Whether p is the tensor's own values or a rounded copy of them kept on it
 * (called with the lock held). */
static bool kg_kept_current(const mpx_tensor *t, const float *p) {
    if (p == t->f32) return true;
    for (const kg_kept *o = t->derived_free == kg_kept_free ? t->derived : NULL; o; o = o->next)
        if (o->kind == KG_KEPT_ROUNDED && o->ap == p && o->a == t->f32) return true;
    return false;
}

/* What a packing is looked up by: its kind, values and layout, the tensor
 * that owns the values, and whether it must have been checked finite. */
typedef struct kg_key {
    kg_kept k;
    mpx_tensor *owner;
    bool check;
} kg_key;

static kg_key kg_key_a(const kg_gemm *j, int kind) {
    return (kg_key){.k = {.kind = kind, .a = j->a, .M = j->M, .K = j->K, .G = j->G, .ams = j->ams, .aks = j->aks,
                          .ga = j->ga, .fmt = j->a_fmt},
                    .owner = j->a_owner, .check = j->finite_a};
}

static kg_key kg_key_b(const kg_gemm *j, int64_t ldb) {
    if (j->b_ldt)
        return (kg_key){.k = {.kind = KG_KEPT_BTPANELS, .a = j->b, .M = j->N, .K = j->K, .G = 1, .ams = 1,
                              .aks = j->b_ldt, .fmt = j->b_fmt},
                        .owner = j->b_owner};
    return (kg_key){.k = {.kind = KG_KEPT_BPANELS, .a = j->b, .M = j->N, .K = j->K, .G = 1, .ams = ldb, .aks = 1,
                          .fmt = j->b_fmt},
                    .owner = j->b_owner};
}

static bool kg_kept_match(const kg_kept *k, const kg_key *q) {
    return k->kind == q->k.kind && k->a == q->k.a && k->M == q->k.M && k->K == q->k.K && k->G == q->k.G &&
           k->ams == q->k.ams && k->aks == q->k.aks && k->ga == q->k.ga && k->fmt == q->k.fmt &&
           (k->checked || !q->check);
}

static const kg_kept *kg_kept_find(const kg_key *q) {
    pthread_mutex_lock(&kg_kept_lock);
    const kg_kept *k = q->owner->derived_free == kg_kept_free ? q->owner->derived : NULL;
    while (k && !kg_kept_match(k, q)) k = k->next;
    pthread_mutex_unlock(&kg_kept_lock);
    return k;
}

/* Keep ap (true: the tensor owns it now). */
static bool kg_kept_add(const kg_key *q, float *ap, bool finite) {
    kg_kept *k = malloc(sizeof *k);
    if (!k) return false;
    *k = q->k;
    k->checked = q->check;
    k->finite = finite;
    k->ap = ap;
    k->next = NULL;
    mpx_tensor *t = q->owner;
    pthread_mutex_lock(&kg_kept_lock);
    bool ok = !t->derived || t->derived_free == kg_kept_free;
    /* Packings of values the tensor no longer holds (a folded weight gets a
     * new buffer when shapes are bound again) go, and rounded copies of
     * them: no kernel can be using one, since a kernel keeps only what
     * matches the tensor's values (the rounded copies are dropped last:
     * whether a packing is current is looked up among them). */
    for (int pass = 0; pass < 2; pass++)
        for (kg_kept **pp = ok ? (kg_kept **)&t->derived : NULL; pp && *pp;) {
            kg_kept *o = *pp;
            if ((o->kind == KG_KEPT_ROUNDED) != (pass == 1) || kg_kept_current(t, o->a)) {
                pp = &o->next;
                continue;
            }
            *pp = o->next;
            kg_kept_del(o);
        }
    for (const kg_kept *o = ok ? t->derived : NULL; o && ok; o = o->next) ok = !kg_kept_match(o, q);
    if (ok) {
        k->next = t->derived;
        t->derived = k;
        t->derived_free = kg_kept_free;
    }
    pthread_mutex_unlock(&kg_kept_lock);
    if (!ok) free(k);
    return ok;
}

/* ---- rounded weights kept on their tensor ---------------------------------------------------
 * A candidate run rounds each weight it reads in a low compute format: a
 * copy rounded per node call (exec.c), then packed by the GEMM core, every
 * call (a tenth and more of ResNet-18's report). The graph's own values
 * rounded to a format are kept on the tensor instead (an entry of the same
 * list, so they go with the tensor and are dropped when its values move),
 * and the packing of that copy is kept like the weights' own. Bounded:
 * rounded copies total at most KG_ROUNDED_MAX_MB in the process (their
 * packings as much again); past it, copies are made per call as before. */
enum { KG_ROUNDED_MAX_MB = 1024 };

size_t mpx_numerics_kept_rounded_bytes(void) {
    const long long b = atomic_load(&kg_rounded_bytes);
    return b > 0 ? (size_t)b : 0;
}

const float *mpx_k_kept_rounded(mpx_tensor *t, const mpx_format *f) {
    if (!t || !f || !t->f32 || t->nelem <= 0) return NULL;
    const kg_key key = {.k = {.kind = KG_KEPT_ROUNDED, .a = t->f32, .M = t->nelem, .fmt = f}, .owner = t};
    const kg_kept *k = kg_kept_find(&key);
    if (k) return k->ap;
    const long long bytes = (long long)t->nelem * (long long)sizeof(float);
    /* MPX_KERN_NOKEPT=1: no budget at all (the tests' way to take every
     * route that copies per call instead) */
    const long long budget = mpx_env_on("MPX_KERN_NOKEPT") ? 0 : (long long)KG_ROUNDED_MAX_MB << 20;
    if (atomic_fetch_add(&kg_rounded_bytes, bytes) + bytes > budget) {
        atomic_fetch_sub(&kg_rounded_bytes, bytes);
        return NULL;
    }
    float *r = kg_alloc((size_t)t->nelem);
    if (!r) {
        atomic_fetch_sub(&kg_rounded_bytes, bytes);
        return NULL;
    }
    mpx_round_array(f, r, t->f32, (size_t)t->nelem);
    if (kg_kept_add(&key, r, true)) return r;
    /* another thread kept one meanwhile (or the tensor's derived slot is
     * not the list's) */
    free(r);
    atomic_fetch_sub(&kg_rounded_bytes, bytes);
    k = kg_kept_find(&key);
    return k ? k->ap : NULL;
}

const float *mpx_k_rounded_values(mpx_tensor *t, const mpx_format *f, float **owned) {
    *owned = NULL;
    const float *kept = mpx_k_kept_rounded(t, f);
    if (kept || !t || !t->f32 || t->nelem <= 0) return kept;
    if (!(*owned = kg_alloc((size_t)t->nelem))) return NULL;
    mpx_round_array(f, *owned, t->f32, (size_t)t->nelem);
    return *owned;
}

mpx_tensor *mpx_k_value_owner(const mpx_kctx *c, int k, const float *data) {
    mpx_tensor *t = c && c->node && k < c->node->n_inputs ? c->node->inputs[k] : NULL;
    /* (a bounded walk: Identity chains are short, and a malformed graph's
     * cycle must not hang it) */
    for (int depth = 0; t && data && depth < 16; depth++) {
        pthread_mutex_lock(&kg_kept_lock);
        const bool own = kg_kept_current(t, data);
        pthread_mutex_unlock(&kg_kept_lock);
        if (own) return t;
        const mpx_node *p = t->producer;
        if (!p || p->op != MPX_OP_Identity || p->n_inputs < 1) break;
        t = p->inputs[0];
    }
    return NULL;
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
    for (int64_t q = 0; q < w->npad; q += KG_NR) {
        float *d = blk + q * kc;
        const int64_t n = N - q < KG_NR ? N - q : KG_NR;
        if (ldt) { /* B given transposed: a column of the panel is a run of W's row */
            for (int64_t l = 0; l < KG_NR; l++)
                for (int64_t k = 0; k < kc; k++) d[k * KG_NR + l] = l < n ? w->j->b[(q + l) * ldt + k0 + k] : 0.0f;
            continue;
        }
        for (int64_t k = 0; k < kc; k++, d += KG_NR) {
            const float *src = w->j->b + (k0 + k) * w->ldb + q;
            for (int64_t l = 0; l < KG_NR; l++) d[l] = l < n ? src[l] : 0.0f;
        }
    }
    if (w->j->b_fmt) mpx_round_array(w->j->b_fmt, blk, blk, (size_t)(kc * w->npad));
}

/* B's kept packing for this product, made and kept on first use; NULL where
 * B is not a constant's own values read as evenly spaced rows (or memory
 * ran out: the caller packs per chunk). */
static const float *kg_kept_b(const kg_gemm *j, int nt, int64_t *npad) {
    if (!j->b_owner || j->conv || j->G != 1 || (!j->b_ldt && j->boff[0] != 0)) return NULL;
    pthread_mutex_lock(&kg_kept_lock);
    const bool own = kg_kept_current(j->b_owner, j->b); /* (else a packing kept of it would be dropped as stale) */
    pthread_mutex_unlock(&kg_kept_lock);
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
static int kg_isa(void) {
#if KG_HAVE_X86
    if (kg_use_avx512()) return 2;
    if (kg_use_avx2()) return 1;
#endif
    return 0;
}
#if KG_HAVE_X86
#define KG_PICK(type, fn) ((type[3]){fn##_gen, fn##_avx2, fn##_avx512})[kg_isa()]
#else
#define KG_PICK(type, fn) ((void)kg_isa(), fn##_gen) /* (type: the x86 form's) */
#endif

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
    for (int64_t g = 0; g < j->G; g++)
        for (int64_t p = 0; p < np16; p++) {
            float *d = ap + (g * np16 + p) * K * 16;
            for (int64_t k = 0; k < K; k++)
                for (int64_t r = 0; r < 16; r++) {
                    const int64_t m = p * 16 + r;
                    d[k * 16 + r] = m < M ? j->a[g * j->ga + m * j->ams + k * j->aks] : 0.0f;
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

/* Floats of that copy for G groups: every grid row, the rows the taps
 * reach below them and one more for the dropped columns' reads. */
static double kg_shared_floats(const kg_conv *v, int64_t G) {
    const int64_t full = v->OH + (v->KH - 1) * v->dh / v->sh + 1;
    return (double)G * (double)v->cig * (double)(v->sh * v->sw * full * v->Wq);
}

/* Allocate that copy (x->shared) and set its shape (x->srows, splane,
 * schan); false: out of memory. The kg_fill_fn pass fills it. (+ 80: a
 * 64-column group's reads past the last row's end, dropped; zeroed. The
 * rest is written whole by the fill, every row of every phase plane, so
 * it is not cleared first: that was a pass over the copy per
 * convolution.) */
static bool kg_shared_make(const kg_conv *v, int64_t G, kg_ctx *x) {
    x->srows = v->OH + (v->KH - 1) * v->dh / v->sh + 1;
    x->splane = x->srows * v->Wq;
    x->schan = v->sh * v->sw * x->splane;
    const size_t body = (size_t)(G * v->cig * x->schan);
    x->shared = malloc((body + 80) * sizeof(float));
    if (x->shared) memset(x->shared + body, 0, 80 * sizeof(float));
    return x->shared != NULL;
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

/* A convolution on a narrow map (or a product with few columns whose B
 * and C rows are runs) with its output channels in the lanes and its
 * outputs broadcast (lanes_item): on the grid a 7 x 7 map's 49 outputs
 * are 9 x 7 columns rounded to 64 (23% computed and dropped), 14 x 14's
 * 196 are 210 rounded to 224; here 49 outputs are 9 panels of 6 and 512
 * channels 32 lanes of 16. The AVX-512 and AVX2 fp32 builds (their
 * micro-kernels; AVX2's since the eleventh session: on the AMD EPYC of
 * 2026-11 ResNet-18's forward 48.1 -> 40.3 ms, EfficientNet-B0's 24.7 ->
 * 21.7, alternating runs, medians); the portable build takes the grid,
 * with the same bits. false: not taken. */
static bool kg_lanes_worth(const kg_gemm *j) {
    const kg_conv *v = j->conv;
    if (j->G != 1 || j->mode != KG_FP32 || !(kg_use_avx512() || kg_use_avx2()) || mpx_env_on("MPX_KERN_NOLANES"))
        return false;
    /* (without a grid: B's rows are runs and so are C's, as a 1x1
     * convolution's; a 7 x 7 map's 49 columns were 64) */
    if (!v && (!j->boff || j->b_owner || j->cs != 1 || j->gw != j->gvalid || (j->N > j->gw && j->rs != j->gw)))
        return false;
    const int64_t M = j->M, N = v ? v->OH * j->gvalid : j->N, cols = v ? v->OH * v->Wq : j->N;
    if (M < 32 || N > 512 || N < KG_MR || (double)j->K * (double)N > (double)(16 << 20)) return false;
    if (v && kg_shared_floats(v, 1) > (double)KG_SHARED_MAX) return false;
    const double grid = (double)(kg_cdiv(M, KG_MR) * KG_MR) * (double)(kg_cdiv(cols, KG_NR) * KG_NR);
    const double lanes = (double)(kg_cdiv(M, KG_NR) * KG_NR) * (double)(kg_cdiv(N, KG_MR) * KG_MR);
    return lanes * 100.0 < grid * 92.0;
}

static kg_result kg_lanes_run(const kg_gemm *j, int nt) {
    const kg_conv *v = j->conv;
    const int64_t K = j->K, M = j->M, np16 = (M + 15) / 16;
    kg_ctx x = {.j = j, .avx2 = true, .avx512 = kg_use_avx512()};
    x.t_n = v ? v->OH * j->gvalid : j->N;
    x.t_npp = kg_cdiv(x.t_n, KG_MR);
    x.t_cpi = 4;
    /* K blocks of 64 terms (one fp32 block): a block's weights for 64
     * channels (16 KiB) and its terms of 49 outputs (14 KiB) stay in L1
     * together, as 128's did not (the 512 x 7 x 7 convolutions 1.04 ->
     * 0.99 ms apart from that) */
    x.t_kc = MPX_ACC_FP32_BLOCK;
    while (x.t_cpi > 1 && kg_cdiv(np16, x.t_cpi) < 2 * nt) x.t_cpi /= 2;
    const long items = (long)kg_cdiv(np16, x.t_cpi);
    if (nt > items) nt = (int)items;
    int64_t *boff = NULL;
    bool ok = true, finite = true;
    if (v) {
        ok = kg_shared_make(v, 1, &x);
        ok = (boff = malloc((size_t)K * sizeof *boff)) != NULL && ok;
    }
    float *own = NULL;
    const float *a16 = kg_rows16(j, &own, &finite);
    x.t_pix_w = kg_alloc((size_t)(K * x.t_npp * KG_MR));
    ok = ok && a16 && x.t_pix_w;
    for (int t = 0; ok && t < nt; t++)
        ok = (x.tile[t] = kg_alloc((size_t)(x.t_npp * KG_MR * x.t_cpi * KG_NR))) != NULL;
    if (ok && finite) {
        x.t_w16 = a16;
        x.t_pix = x.t_pix_w;
        x.boff = j->boff;
        if (v) {
            kg_conv_boff(v, &x, boff);
            x.boff = boff;
            mpx_k_parallel((long)v->cig, nt, kg_fill_fn, &x);
        }
        mpx_k_parallel((long)kg_cdiv(K, x.t_kc), nt, kg_tpix_fn, &x);
        mpx_k_parallel(items, nt, kg_tlanes_fn, &x);
    }
    free(x.t_pix_w);
    kg_free_bufs(&x);
    free(boff);
    free(own);
    return !ok ? KG_NOMEM : !finite ? KG_NONFINITE : KG_DONE;
}
#else
static bool kg_lanes_worth(const kg_gemm *j) { (void)j; return false; }
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
         * a classifier's 1000 x 1024 weights are 4 MB a run) */
        if (finite) mpx_k_parallel((long)(j->G * ((M + 15) / 16)), (double)j->G * (double)M * (double)K > 262144.0 ? kg_threads() : nt,
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
        mpx_k_parallel((long)(j->G * ((M + 7) / 8)), nt, kg_mv_fn, (void *)j);
        return KG_DONE;
    }
    if (kg_lanes_worth(j)) return kg_lanes_run(j, nt);
    unsigned char a_bad[8] = {0};
    kg_ctx x = {.j = j, .avx2 = kg_use_avx2(), .avx512 = kg_use_avx512(), .h16 = kg_use_h16(j->mode, j->f16), .a_bad = a_bad};
    int64_t *boff = NULL;
    const kg_key akey = kg_key_a(j, KG_KEPT_PANELS);
    const kg_kept *kept = j->a_owner ? kg_kept_find(&akey) : NULL;
    float *ap = kept ? NULL : kg_alloc((size_t)(j->G * mpan * KG_MR * K));
    bool ok = kept || ap != NULL, bad = false;
    /* Work items are (group, column band, block of rows of A). Bands of
     * about 512 columns give a thread 4 or more items where there are
     * columns enough; where there are few columns and many rows (ResNet's
     * last stage: 512 x 4608 weights, a 7 x 7 output) the rows are split
     * instead, so that no thread streams all of A (9 MB there) once per
     * narrow band: narrow bands ran at 8 GMAC/s against 50 for wide ones.
     * Each output value is the same sum in the same order however it is
     * cut. */
    const int64_t want = 4 * (int64_t)nt;
    x.nmb = 1;
    x.mpb = mpan;
    if (j->conv) {
        /* Bands of R grid rows. The strip holds R rows, the rows the taps
         * reach below them, and one more for the dropped columns' reads. */
        const kg_conv *v = j->conv;
        int64_t R = kg_cdiv(512, v->Wq), most = kg_cdiv(v->OH, 4 * nt);
        if (R > v->OH) R = v->OH;
        /* Too few bands of 512 columns: narrower bands where they keep 256
         * columns or more, rather than blocks of rows, which pack every
         * band's B once per block (ResNet-18's 64 x 56 x 56 convolutions:
         * 7 bands in 2 row blocks, B packed twice; now 8 bands of 7 rows,
         * 2.64 -> 2.44 ms each on the AMD EPYC of 2026-11, alternating
         * runs; 4 bands of 120 columns on 28 x 28 were slower) */
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
        if (kg_shared_floats(v, j->G) <= (double)KG_SHARED_MAX) {
            ok = kg_shared_make(v, j->G, &x) && ok;
        } else { /* per-item strips of the band's rows */
            x.srows = R + (v->KH - 1) * v->dh / v->sh + 1;
            x.splane = x.srows * v->Wq;
            x.schan = v->sh * v->sw * x.splane;
        }
        boff = malloc((size_t)K * sizeof *boff);
        ok = ok && boff;
        if (ok) kg_conv_boff(v, &x, boff);
        x.boff = boff;
    } else {
        /* Bands of whole 4-panel groups (64 columns): a band of 96 had
         * ended in a 2-panel call, whose 12 sums keep the FMA ports less busy
         * than 24 (ViT-B/16's 768-wide products: 228 -> 216 ms). */
        int64_t nc = (kg_cdiv(N, 4 * nt) + 4 * KG_NR - 1) / (4 * KG_NR) * (4 * KG_NR);
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
    /* A tile where C's rows are not runs of whole panels (columns dropped
     * inside, or strided). */
    const bool tiled = j->cs != 1 || j->gw != j->gvalid || (j->N > j->gw && j->rs != j->gw);
    x.ldt = (x.icols + 4 * KG_NR - 1) / KG_NR * KG_NR + 3 * KG_NR;
    /* Packed B: at most KG_PACK floats, less for small products. */
    x.kc = j->conv && !x.avx512 ? KG_KC_CONV : KG_KC;
    x.bpad = x.avx512 ? 0 : KG_BPAD;
    const int64_t kcm = K < x.kc ? K : x.kc, colm = (x.icols + KG_NR - 1) / KG_NR * KG_NR;
    const int64_t bpn = (kcm * colm < KG_PACK ? kcm * colm : KG_PACK) + colm / KG_NR * x.bpad;
    if (ok) x.kb = kg_kept_b(j, nt, &x.kb_npad);
    ok = ok && (x.kb || !j->b_ldt); /* (B given transposed is read from its packing only) */
    for (int t = 0; ok && t < nt; t++) {
        ok = (x.bp[t] = kg_alloc((size_t)bpn)) != NULL;
        if (ok && j->conv && !x.shared) /* zeroed: columns past the last grid row are read (and dropped) */
            ok = (x.strip[t] = calloc((size_t)(j->conv->cig * x.schan + 16), sizeof(float))) != NULL;
        if (ok && tiled) ok = (x.tile[t] = kg_alloc((size_t)(x.mpb * KG_MR * x.ldt))) != NULL;
    }
    if (ok && x.shared) mpx_k_parallel((long)(j->G * j->conv->cig), nt, kg_fill_fn, &x);
    if (ok && kept) {
        x.ap = kept->ap;
        bad = j->finite_a && !kept->finite;
        if (!bad) mpx_k_parallel(items, nt, kg_gemm_fn, &x);
    } else if (ok) {
        /* Pack A, a panel an item, on the same threads (ResNet-18's last
         * convolutions pack 9 MB each call). */
        x.ap = x.ap_w = ap;
        mpx_k_parallel((long)(j->G * mpan), nt, kg_pack_a_fn, &x);
        for (int t = 0; t < 8; t++) bad = bad || a_bad[t];
        if (!bad) mpx_k_parallel(items, nt, kg_gemm_fn, &x);
        /* Kept with the finite check's verdict, when it ran. */
        if (j->a_owner && kg_kept_add(&akey, ap, !bad)) ap = NULL;
    }
    kg_free_bufs(&x);
    free(boff);
    free(ap);
    return !ok ? KG_NOMEM : bad ? KG_NONFINITE : KG_DONE;
}

/* ---- depthwise -------------------------------------------------------------------------------- */

KG_ITEM_FN(kg_dw_fn, dw_item)

/* fp32 depthwise on narrow maps (MobileNet's and EfficientNet's 7 x 7 and
 * 14 x 14 stages, where dw_chan's 32-wide rows were mostly dropped
 * columns): 16 channels an item in the lanes, over a zero-padded
 * channels-last copy of their input, each output's taps in order (blocks
 * of 64 fused multiply-adds from 0, added to the sum from 0, then the
 * bias): dw_chan's operations per output, padding taps included as its
 * zero strip has them, so the same bits. */
typedef void (*kg_row_fn)(int64_t K, const float *w16, const float *p, const int64_t *off, int64_t step,
                          int64_t n, const float *bias16, float *out16);
typedef void (*kg_in_fn)(const float *const *xs, int64_t nc, int64_t H, int64_t W, float *p, int64_t Wp,
                         int64_t pt, int64_t pl);
typedef void (*kg_out_fn)(const float *y16, int64_t n, int64_t nc, float *const *ys);

typedef struct kg_dw16 {
    const kg_dw *j;
    int64_t Hp, Wp;     /* padded input */
    const int64_t *off; /* [K]: each tap's place in it, from an output's first */
    kg_row_fn row;      /* taps16_row, lanes_in and lanes_out of the build the CPU takes */
    kg_in_fn in;
    kg_out_fn out;
    float *buf[8];      /* per thread: the padded input, the weights, the output's lanes */
} kg_dw16;

enum { KG_DW16_MAX_OW = 23 }; /* narrow maps: outputs up to this wide */

static void kg_dw16_fn(void *ctx, int tid, long item) {
    (void)tid;
    const kg_dw16 *d = ctx;
    const kg_dw *j = d->j;
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW, c0 = item * 16, nc = j->C - c0 < 16 ? j->C - c0 : 16;
    const int64_t Wp = d->Wp;
    float *p = d->buf[tid], *wt = p + d->Hp * Wp * 16;
    memset(p, 0, (size_t)(d->Hp * Wp * 16) * sizeof *p);
    memset(wt, 0, (size_t)(K * 16) * sizeof *wt);
    float *o16 = wt + K * 16;
    const float *xs[16];
    float *ys[16];
    for (int64_t l = 0; l < nc; l++) xs[l] = v->x + (c0 + l) * v->H * v->W, ys[l] = j->y + (c0 + l) * j->yc;
    d->in(xs, nc, v->H, v->W, p, Wp, v->pt, v->pl);
    for (int64_t l = 0; l < nc; l++)
        for (int64_t k = 0; k < K; k++) wt[k * 16 + l] = j->w[(c0 + l) * K + k];
    float bias16[16] = {0};
    for (int64_t l = 0; j->bias && l < nc; l++) bias16[l] = j->bias[c0 + l];
    for (int64_t oh = 0; oh < v->OH; oh++)
        d->row(K, wt, p + oh * v->sh * Wp * 16, d->off, v->sw * 16, j->OW, j->bias ? bias16 : NULL,
               o16 + oh * j->OW * 16);
    d->out(o16, v->OH * j->OW, nc, ys);
}

bool kg_dw_run(const kg_dw *j) {
    const kg_conv *v = j->conv;
    const int64_t K = v->KH * v->KW;
    int nt = kg_threads_for((double)j->C * (double)v->OH * (double)j->OW * (double)K * 4.0);
    if (j->mode == KG_FP32 && j->OW <= KG_DW16_MAX_OW && j->C >= 16) {
        /* The padded map: every tap a grid position reads (pads as zero). */
        kg_dw16 d = {.j = j, .Hp = (v->OH - 1) * v->sh + (v->KH - 1) * v->dh + 1,
                     .Wp = (j->OW - 1) * v->sw + (v->KW - 1) * v->dw + 1};
        if (d.Hp < v->H + v->pt) d.Hp = v->H + v->pt;
        if (d.Wp < v->W + v->pl) d.Wp = v->W + v->pl;
        const long items = (long)((j->C + 15) / 16);
        if (nt > items) nt = (int)items;
        int64_t *off = malloc((size_t)K * sizeof *off);
        bool ok = off != NULL;
        for (int64_t k = 0; ok && k < K; k++) off[k] = ((k / v->KW) * v->dh * d.Wp + (k % v->KW) * v->dw) * 16;
        d.off = off, d.row = KG_PICK(kg_row_fn, taps16_row);
        d.in = KG_PICK(kg_in_fn, lanes_in), d.out = KG_PICK(kg_out_fn, lanes_out);
        for (int t = 0; ok && t < nt; t++)
            ok = (d.buf[t] = malloc((size_t)(d.Hp * d.Wp * 16 + K * 16 + v->OH * j->OW * 16) * sizeof(float))) !=
                 NULL;
        if (ok) mpx_k_parallel(items, nt, kg_dw16_fn, &d);
        for (int t = 0; t < 8; t++) free(d.buf[t]);
        free(off);
        return ok;
    }
    if (nt > j->C) nt = (int)j->C;
    kg_ctx x = {.d = j, .avx2 = kg_use_avx2(), .avx512 = kg_use_avx512(), .h16 = kg_use_h16(j->mode, j->f16)};
    /* The whole channel: the grid's rows, the rows the taps reach below
     * them, one more for the dropped columns; 32 floats of slack for the
     * last vectors. */
    x.srows = v->OH + (v->KH - 1) * v->dh / v->sh + 1;
    x.splane = x.srows * v->Wq;
    x.schan = v->sh * v->sw * x.splane;
    int64_t *off = malloc((size_t)K * sizeof *off);
    bool ok = off != NULL;
    for (int64_t kh = 0; ok && kh < v->KH; kh++)
        for (int64_t kw = 0; kw < v->KW; kw++) {
            const int64_t ph = kh * v->dh % v->sh, pw = kw * v->dw % v->sw;
            off[kh * v->KW + kw] = (ph * v->sw + pw) * x.splane + kh * v->dh / v->sh * v->Wq + kw * v->dw / v->sw;
        }
    x.boff = off;
    for (int t = 0; ok && t < nt; t++)
        ok = (x.strip[t] = calloc((size_t)(x.schan + 32), sizeof(float))) != NULL;
    if (ok) mpx_k_parallel((long)j->C, nt, kg_dw_fn, &x);
    kg_free_bufs(&x);
    free(off);
    return ok;
}
