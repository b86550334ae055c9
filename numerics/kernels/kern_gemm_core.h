/* kern_gemm_core.h - what the GEMM core (kern_gemm.c) and the depthwise
 * kernels (kern_depthwise.c) share: the builds (portable, AVX2, AVX-512,
 * AVX512-FP16), the tile constants, the vector types, one call's context
 * and the choice of the build the CPU takes. Private to those two files. */
#ifndef MPX_KERN_GEMM_CORE_H
#define MPX_KERN_GEMM_CORE_H

#include "kern_gemm.h"

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
 * rows are output planes, read back from L3 after a block), which makes
 * convolutions faster; the MatMuls of transformers gain nothing from 256,
 * so they keep 128, as does the AVX-512 build (where 4 panels of 128 terms
 * fit the L1 of the CPUs that have it). */
enum { KG_KC_CONV = 256 };
/* Floats between the panels of B packed per chunk in the AVX2 and portable
 * builds (kern_gemm_body.h, gemm_item's pstr). Why: a panel is kc x 16
 * floats, 8 KiB at kc 128 and 16 KiB at KG_KC_CONV, so the panels of a
 * chunk lie a multiple of 4 KiB apart, and the packing's stores of each k
 * (one a panel) all fell in one L1 set of 8 ways. A line's padding moves
 * each panel to the next set, which about halves the packing's time for
 * such convolutions. (The AVX-512 build reads several panels a call at the
 * plain stride.) */
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

/* Lanes 1, 3, ..., 15 of the 16 lanes of a and b. */
#define KG_ODDS(a, b) KG_SHUF(a, b, 1, 3, 5, 7, 9, 11, 13, 15)

/* Lanes of a and b (0-7 a's, 8-15 b's) in the order the eight indices give. */
#if defined(__clang__)
#define KG_SHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define KG_SHUF(a, b, i0, i1, i2, i3, i4, i5, i6, i7) __builtin_shuffle(a, b, (v8i){i0, i1, i2, i3, i4, i5, i6, i7})
#endif

/* The vector helpers the inner loops use (ld8, st8, splat, rne8) are defined
 * in kern_gemm_vec.h, once per build: a helper compiled for the baseline ISA
 * and inlined into AVX2 code keeps its baseline lowering (a broadcast became
 * two halves and four inserts). */

/* Bands of the shared copy's fill a thread (kg_ctx.frow): several, so that
 * a thread whose range empties first can take some of another's. */
enum { KG_FILL_SUB = 4 };

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
    /* The shared copy's fill by bands of rows (fnb of them, band b rows
     * frow[b] .. frow[b + 1] - 1 of every channel, an item a band's
     * channel, band by band), cut where the threads' home ranges of the
     * product's items begin (kern_threads.c): each thread fills the rows
     * its own items read, and reads them from its own cache (0: an item a
     * channel, grouped convolutions, whose items go by group). */
    int64_t frow[8 * KG_FILL_SUB + 1];
    int fnb;
    /* Items (group, row block, band), the band fastest, so that a thread's
     * home range is blocks of A's rows across every band (kern_gemm.c
     * kg_run: where A is larger than the input's copy); else (group,
     * band, row block). */
    bool amajor;
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
    /* With kb, the format the call reads B in (a candidate's weights,
     * kg_gemm.b_fmt), or NULL. The packing is kept in fp32 only, and each
     * chunk of it is rounded into bp as an item reaches it: rounding is per
     * value, so the products read the bits a rounded packing would hold,
     * and no packing per format is kept beside the fp32 one (ViT-B/16's
     * were 324 MB a format, first touched in a session's first run, at
     * 1.4-3 ms a MB on a KVM machine). */
    const mpx_format *kb_fmt;
    /* The same for A (a convolution's weights): ap is A's kept fp32 panels
     * and each item rounds its rows' panels of each K block into abuf[tid]
     * (mpb panels of up to kc + MPX_ACC_FP32_BLOCK terms) before its
     * products read them; NULL: ap read as it is. */
    const mpx_format *ka_fmt;
    float *abuf[8];
    /* A narrow map's convolution with the output channels in the lanes
     * (kg_lanes_run): A kept in 16-row panels ([panel][K][16]), the
     * outputs' terms in 6-output panels ([K block][panel][kc][6]), N
     * outputs, npp panels of them, 16-channel panels per item. */
    const float *t_w16, *t_pix;
    float *t_pix_w;
    int64_t t_n, t_npp, t_cpi, t_kc; /* t_kc: terms a K block */
    /* Or (t_pix NULL, the AVX-512 build) the outputs' terms where they lie:
     * output q's term k at t_from[t_at[q] + boff[k]] (ukro). */
    const float *t_from;
    const int64_t *t_at;
    /* Or each thread's own copy of a convolution's input (t_copy[tid],
     * filled by the thread's first item: t_filled[tid]), where the items
     * split the output channels and so each reads every input row: from a
     * copy the two threads had filled half each, half of every item's
     * reads crossed to the other core's cache (where two vCPUs share no cache),
     * and a stride-2 convolution reads four times the input a stride-1 one
     * does per output. NULL: t_from. */
    float *t_copy[8];
    unsigned char *t_filled;
    bool avx2, avx512;
    bool alies; /* A read where it lies, not packed (kg_run; ap NULL) */
    bool h16; /* fp16 accumulation of fp16 operands on AVX512-FP16 (ukrh) */
    unsigned char *a_bad;  /* [thread]: the packing pass met a non-finite A value */
} kg_ctx;

/* The stride phases some tap of a kernel k taps wide reads, dilation d,
 * stride s, as bits (phase p: bit p; every phase where there are more than
 * 32): tap t's phase is t d % s. The fills write only these phases' planes
 * (kern_gemm_vec.h) and a copy spans them (kern_gemm.c kg_phase_planes). */
static inline uint32_t kg_fill_phases(int64_t k, int64_t d, int64_t s) {
    if (s > 32) return 0xffffffffu;
    uint32_t m = 0;
    for (int64_t t = 0; t < k && t < s; t++) m |= 1u << (t * d % s);
    return m;
}

static inline int64_t kg_cdiv(int64_t a, int64_t b) { /* ceil(a / b), b > 0 */
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

/* Whether C's rows are runs of whole panels: no column dropped inside a
 * grid row, unit column step, and grid rows contiguous where there are
 * several (a MatMul's C, a 1x1 convolution's); elsewhere the core sums
 * into a tile first. */
static inline bool kg_c_runs(const kg_gemm *j) {
    return j->cs == 1 && j->gw == j->gvalid && (j->N <= j->gw || j->rs == j->gw);
}

/* Whether the CPU takes the AVX2 build, the AVX-512 build, and the fp16
 * fused multiply-add kernel for this mode and operands (kern_gemm.c). */
bool kg_use_avx2(void);
bool kg_use_avx512(void);
bool kg_use_h16(kg_mode mode, bool f16);
/* Threads for a job of `macs` multiply-adds (kern_gemm.c). */
int kg_threads_for(double macs);
/* Free a call's per-thread buffers. */
void kg_free_bufs(kg_ctx *x);

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

/* The build the CPU takes: 2 AVX-512, 1 AVX2, 0 the baseline. KG_PICK(type,
 * fn) is fn's copy of that build, any function type (chosen once a call,
 * not an item: each choice reads the environment). */
int kg_isa(void);
#if KG_HAVE_X86
#define KG_PICK(type, fn) ((type[3]){fn##_gen, fn##_avx2, fn##_avx512})[kg_isa()]
#else
#define KG_PICK(type, fn) ((void)kg_isa(), fn##_gen) /* (type: the x86 form's) */
#endif

#endif
