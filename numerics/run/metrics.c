/* metrics.c - per-tensor error of a candidate run against the fp32 reference
 * (DESIGN section 3, Error metrics; the non-finite rule is in the header). */
#include "kern_internal.h" /* mpx_env_on */
#include "mpx_run.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

static bool usable(const mpx_value *v) {
    return v && v->n >= 0 && v->rank >= 0 && v->rank <= MPX_MAX_RANK && (v->f || v->i || v->d);
}

/* ---- the float fast path ------------------------------------------------------------
 * Every layer of a report is float, and a report spends most of its time
 * here, so the sums are taken in ML lanes: element k goes to lane k % ML,
 * and the lanes are added at the end ((0+1)+(2+3), then 4..7 likewise, then
 * the two halves); a product joins its sum in one fused multiply-add (C99's
 * fma in the portable path, the instruction in the others). The order is
 * fixed by this code, not by the CPU: the AVX-512, AVX2 and portable paths
 * below give the same bits (test_compare's metrics_paths). A plain running
 * sum would be one long dependency chain of double additions (3.0 ns per
 * element on the machine here; AVX2's lanes 0.63-0.76, AVX-512's
 * 0.43-0.59, 72 K to 3 M elements). The fused sums cut the report's metrics
 * by a fifth or more (rec 82 -> 64 thread-ms, det 321 -> 223: fewer
 * operations on data that comes from L2 and beyond). */
enum { ML = 8 };
enum { MANY = 4 }; /* candidates in one pass at most (the AVX-512 one) */

typedef struct lanes {
    double se[ML], sa[ML], rr[ML], cc[ML], cr[ML], mx[ML], amax[ML];
    int64_t sub[ML], unf[ML];
} lanes;

/* Whole blocks of ML elements from k on, up to the first block holding a
 * non-finite value; returns where it stopped. */
static inline __attribute__((always_inline)) int64_t lanes_body(lanes *L, const float *rf,
                                                                const float *cf, int64_t k,
                                                                int64_t n, float tiny) {
    for (; k + ML <= n; k += ML) {
        bool finite = true;
        for (int l = 0; l < ML; l++)
            finite &= fabsf(rf[k + l]) <= FLT_MAX && fabsf(cf[k + l]) <= FLT_MAX;
        if (!finite) break;
        for (int l = 0; l < ML; l++) {
            const float xf = rf[k + l], yf = cf[k + l];
            const float ay = fabsf(yf);
            const double x = xf, y = yf, d = y - x, ad = fabs(d), ax = fabs(x);
            L->amax[l] = ax > L->amax[l] ? ax : L->amax[l];
            L->sub[l] += ay != 0.0f && ay < tiny;
            L->unf[l] += xf != 0.0f && yf == 0.0f;
            L->sa[l] += ad;
            L->se[l] = fma(d, d, L->se[l]);
            L->mx[l] = ad > L->mx[l] ? ad : L->mx[l];
            L->rr[l] = fma(x, x, L->rr[l]);
            L->cc[l] = fma(y, y, L->cc[l]);
            L->cr[l] = fma(x, y, L->cr[l]);
        }
    }
    return k;
}

static int64_t lanes_portable(lanes *L, const float *rf, const float *cf, int64_t n, float tiny) {
    return lanes_body(L, rf, cf, 0, n, tiny);
}

#if defined(__x86_64__) || defined(__i386__)
/* lanes_body for whole tensors of finite values with AVX-512, for nc
 * candidates against one reference in one pass (a report compares fp16 and
 * bf16 with the same reference: read once, its squares summed once). A
 * register of eight doubles is exactly the eight lanes, so each sum is one
 * instruction per block where AVX2 needs two, and sixteen floats are
 * loaded, compared and counted at once (two blocks, lanes 0-7 twice, in
 * order). It does not stop at non-finite values: it returns -1 when there
 * were any (a lane of x*x or y*y is then infinite or NaN, and only then: a
 * finite float's square is below 2^256) and the caller starts again on the
 * checking path. Checking every block cost a compare, a mask test and a
 * branch per block, on the report's hottest loop. L[q] is candidate q's
 * lanes (zero on entry); nc is a constant in each caller, and the loops
 * over the candidates are unrolled by pragma so that every sum stays in a
 * register: GCC 12 left them rolled for two candidates, and each sum went
 * through the stack on every block (PP-OCRv4 det's report, Zen 5: the
 * metrics 151-155 thread-ms, 80-98 unrolled; the report 278-294 ms, 237-258). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline int64_t
lanes512_body(lanes *L, const float *rf, const float *const *cf, const float *tiny, int64_t n, int nc) {
    const __m512 zf = _mm512_setzero_ps();
    __m512d rr = _mm512_setzero_pd(), se[MANY], sa[MANY], cc[MANY], cr[MANY], mx[MANY];
    __m512 am = zf, tinyv[MANY];
    int64_t sub[MANY], unf[MANY], k = 0;
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) {
        se[q] = sa[q] = cc[q] = cr[q] = mx[q] = _mm512_setzero_pd();
        tinyv[q] = _mm512_set1_ps(tiny[q]);
        sub[q] = unf[q] = 0;
    }
    /* One block of eight (lanes 0-7) from the floats of xh and yh. */
#define LANES8(q, x, yh)                                                                          \
    do {                                                                                          \
        const __m512d y = _mm512_cvtps_pd(yh);                                                    \
        const __m512d d = _mm512_sub_pd(y, x), ad = _mm512_abs_pd(d);                             \
        sa[q] = _mm512_add_pd(sa[q], ad);                                                         \
        se[q] = _mm512_fmadd_pd(d, d, se[q]);                                                     \
        mx[q] = _mm512_max_pd(ad, mx[q]);                                                         \
        cc[q] = _mm512_fmadd_pd(y, y, cc[q]);                                                     \
        cr[q] = _mm512_fmadd_pd(x, y, cr[q]);                                                     \
    } while (0)
    /* The counts of sixteen elements (or the first eight: valid). */
#define COUNTS(q, xf, yf, valid)                                                                  \
    do {                                                                                          \
        const __m512 ayf = _mm512_abs_ps(yf);                                                     \
        const __mmask16 ms = _mm512_mask_cmp_ps_mask(                                             \
            _mm512_cmp_ps_mask(ayf, zf, _CMP_NEQ_OQ) & (valid), ayf, tinyv[q], _CMP_LT_OQ);       \
        const __mmask16 mu = _mm512_mask_cmp_ps_mask(                                             \
            _mm512_cmp_ps_mask(yf, zf, _CMP_EQ_OQ) & (valid), xf, zf, _CMP_NEQ_OQ);               \
        sub[q] += __builtin_popcount((unsigned)ms);                                               \
        unf[q] += __builtin_popcount((unsigned)mu);                                               \
    } while (0)
    for (; k + 2 * ML <= n; k += 2 * ML) {
        const __m512 xf = _mm512_loadu_ps(rf + k);
        am = _mm512_max_ps(_mm512_abs_ps(xf), am);
        const __m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xf)),
                      x1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(xf, 1));
        rr = _mm512_fmadd_pd(x0, x0, rr);
        rr = _mm512_fmadd_pd(x1, x1, rr);
        _Pragma("GCC unroll 8")
        for (int q = 0; q < nc; q++) {
            const __m512 yf = _mm512_loadu_ps(cf[q] + k);
            COUNTS(q, xf, yf, 0xffff);
            LANES8(q, x0, _mm512_castps512_ps256(yf));
            LANES8(q, x1, _mm512_extractf32x8_ps(yf, 1));
        }
    }
    if (k + ML <= n) { /* one block of eight left */
        const __m512 xf = _mm512_castps256_ps512(_mm256_loadu_ps(rf + k));
        am = _mm512_mask_max_ps(am, 0xff, _mm512_abs_ps(xf), am);
        const __m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xf));
        rr = _mm512_fmadd_pd(x0, x0, rr);
        _Pragma("GCC unroll 8")
        for (int q = 0; q < nc; q++) {
            const __m512 yf = _mm512_castps256_ps512(_mm256_loadu_ps(cf[q] + k));
            COUNTS(q, xf, yf, 0xff);
            LANES8(q, x0, _mm512_castps512_ps256(yf));
        }
        k += ML;
    }
#undef LANES8
#undef COUNTS
    double chk[ML];
    _mm512_storeu_pd(chk, rr);
    for (int l = 0; l < ML; l++)
        if (!isfinite(chk[l])) return -1;
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) {
        _mm512_storeu_pd(chk, cc[q]);
        for (int l = 0; l < ML; l++)
            if (!isfinite(chk[l])) return -1;
    }
    float amf[2 * ML];
    _mm512_storeu_ps(amf, am);
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) {
        _mm512_storeu_pd(L[q].rr, rr);
        _mm512_storeu_pd(L[q].se, se[q]);
        _mm512_storeu_pd(L[q].sa, sa[q]);
        _mm512_storeu_pd(L[q].cc, cc[q]);
        _mm512_storeu_pd(L[q].cr, cr[q]);
        _mm512_storeu_pd(L[q].mx, mx[q]);
        for (int l = 0; l < ML; l++) /* lanes l and l + 8 are lane l's two halves */
            L[q].amax[l] = (double)(amf[l] > amf[l + ML] ? amf[l] : amf[l + ML]);
        L[q].sub[0] = sub[q];
        L[q].unf[0] = unf[q];
    }
    return k;
}

__attribute__((target("avx512f,avx512dq"))) static int64_t lanes_avx512(lanes *L, const float *rf,
                                                                        const float *const *cf,
                                                                        const float *tiny, int64_t n,
                                                                        int nc) {
    switch (nc) {
    case 1: return lanes512_body(L, rf, cf, tiny, n, 1);
    case 2: return lanes512_body(L, rf, cf, tiny, n, 2);
    case 3: return lanes512_body(L, rf, cf, tiny, n, 3);
    default: return lanes512_body(L, rf, cf, tiny, n, MANY);
    }
}

/* lanes_body with AVX2 intrinsics (GCC does not vectorise it by itself),
 * in chunks: lanes 0-3 are the low four floats of each block of eight, 4-7
 * the high four, the same IEEE operations per lane, so the same bits. One
 * loop over the block keeping the twelve double sums, the largest |x| and the
 * block's floats needs more than AVX2's sixteen registers: as it was
 * written first, three sums lived on the stack and each block waited for a
 * store and a reload on their chains. So a chunk of CHUNK elements
 * (4 KB of each array, in L1 while it is read again) is read in two passes:
 * the counts of every candidate with the reference's largest |x| and x*x
 * sums, then the sums of the comparison. The counts are integers, so their
 * order is free: each lane counts in a vector register (a compare's all-ones
 * lane is -1), added up once a chunk, where a mask, popcount and add a block
 * and candidate had cost as much as the double sums. The sums pass takes
 * lanes 0-3 over the chunk, then lanes 4-7 (each lane still takes its blocks
 * in order), two candidates at a time: a half's reference floats converted
 * once for both, and both candidates' sums in registers (ten: the largest
 * |d| is one register for both halves, since a maximum does not depend on
 * which lane holds what; finish takes the largest lane). That helps where
 * the arrays come from memory; from L2 each lane's sums are one chain of
 * fused multiply-adds, four cycles a block, and the order of a lane's terms
 * is the figures' definition (more chains would change the bits).
 *
 * Unchecked (nc candidates against one reference, as the AVX-512 pass): a
 * non-finite value shows as a non-finite lane of x*x or y*y, checked once at
 * the end (-1: the caller starts again on the checking path). Checked (one
 * candidate): the counts pass stops before the first block holding a
 * non-finite value and the sums stop there too; it returns where. L[q] zero
 * on entry. */
enum { CHUNK = 1024 };

/* The 8 int32 lanes' sum. */
__attribute__((target("avx2"), always_inline)) static inline int64_t hsum_epi32(__m256i v) {
    int32_t t[ML];
    _mm256_storeu_si256((__m256i *)t, v);
    int64_t s = 0;
    for (int l = 0; l < ML; l++) s += t[l];
    return s;
}

__attribute__((target("avx2,fma"), always_inline)) static inline int64_t
counts_avx2(const float *rf, const float *const *cf, int nc, const float *tiny, int64_t k0, int64_t k1, bool check,
            __m256 *am, __m256d *rr, lanes *L) {
    const __m256 zf = _mm256_setzero_ps(), fmax = _mm256_set1_ps(FLT_MAX),
                 absf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256i cs[MANY], cu[MANY];
    __m256 tv[MANY];
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) {
        cs[q] = cu[q] = _mm256_setzero_si256();
        tv[q] = _mm256_set1_ps(tiny[q]);
    }
    __m256 m = *am;
    __m256d rr0 = rr[0], rr1 = rr[1];
    int64_t k = k0;
    for (; k < k1; k += ML) {
        const __m256 xf = _mm256_loadu_ps(rf + k), axf = _mm256_and_ps(xf, absf);
        if (check && _mm256_movemask_ps(_mm256_and_ps(
                         _mm256_cmp_ps(axf, fmax, _CMP_LE_OQ),
                         _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(cf[0] + k), absf), fmax, _CMP_LE_OQ))) != 0xff)
            break;
        m = _mm256_max_ps(axf, m);
        const __m256d x0 = _mm256_cvtps_pd(_mm256_castps256_ps128(xf)),
                      x1 = _mm256_cvtps_pd(_mm256_extractf128_ps(xf, 1));
        rr0 = _mm256_fmadd_pd(x0, x0, rr0);
        rr1 = _mm256_fmadd_pd(x1, x1, rr1);
        const __m256 xnz = _mm256_cmp_ps(xf, zf, _CMP_NEQ_OQ);
        _Pragma("GCC unroll 8")
        for (int q = 0; q < nc; q++) {
            const __m256 yf = _mm256_loadu_ps(cf[q] + k), ayf = _mm256_and_ps(yf, absf);
            const __m256 s = _mm256_and_ps(_mm256_cmp_ps(ayf, zf, _CMP_NEQ_OQ), _mm256_cmp_ps(ayf, tv[q], _CMP_LT_OQ));
            const __m256 u = _mm256_and_ps(xnz, _mm256_cmp_ps(yf, zf, _CMP_EQ_OQ));
            cs[q] = _mm256_sub_epi32(cs[q], _mm256_castps_si256(s));
            cu[q] = _mm256_sub_epi32(cu[q], _mm256_castps_si256(u));
        }
    }
    *am = m;
    rr[0] = rr0;
    rr[1] = rr1;
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) { /* at most CHUNK / ML a lane: no overflow */
        L[q].sub[0] += hsum_epi32(cs[q]);
        L[q].unf[0] += hsum_epi32(cu[q]);
    }
    return k;
}

/* The sums of NC (1 or 2) candidates, cf[0..NC-1] into L[0..NC-1]. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
sums_avx2(lanes *L, const float *rf, const float *const *cf, const int NC, int64_t k0, int64_t k1) {
    const __m256d absd = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d mx[2];
    _Pragma("GCC unroll 8")
    for (int q = 0; q < NC; q++) mx[q] = _mm256_max_pd(_mm256_loadu_pd(L[q].mx), _mm256_loadu_pd(L[q].mx + 4));
    for (int h = 0; h < 2; h++) {
        __m256d se[2], sa[2], cc[2], cr[2];
        _Pragma("GCC unroll 8")
        for (int q = 0; q < NC; q++) {
            se[q] = _mm256_loadu_pd(L[q].se + 4 * h);
            sa[q] = _mm256_loadu_pd(L[q].sa + 4 * h);
            cc[q] = _mm256_loadu_pd(L[q].cc + 4 * h);
            cr[q] = _mm256_loadu_pd(L[q].cr + 4 * h);
        }
        for (int64_t k = k0 + 4 * h; k < k1; k += ML) {
            const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(rf + k));
            _Pragma("GCC unroll 8")
            for (int q = 0; q < NC; q++) {
                const __m256d y = _mm256_cvtps_pd(_mm_loadu_ps(cf[q] + k));
                const __m256d d = _mm256_sub_pd(y, x), ad = _mm256_and_pd(d, absd);
                sa[q] = _mm256_add_pd(sa[q], ad);
                se[q] = _mm256_fmadd_pd(d, d, se[q]);
                mx[q] = _mm256_max_pd(ad, mx[q]);
                cc[q] = _mm256_fmadd_pd(y, y, cc[q]);
                cr[q] = _mm256_fmadd_pd(x, y, cr[q]);
            }
        }
        _Pragma("GCC unroll 8")
        for (int q = 0; q < NC; q++) {
            _mm256_storeu_pd(L[q].se + 4 * h, se[q]);
            _mm256_storeu_pd(L[q].sa + 4 * h, sa[q]);
            _mm256_storeu_pd(L[q].cc + 4 * h, cc[q]);
            _mm256_storeu_pd(L[q].cr + 4 * h, cr[q]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int q = 0; q < NC; q++) _mm256_storeu_pd(L[q].mx, mx[q]); /* lanes 4-7 stay 0 */
}

__attribute__((target("avx2,fma"), always_inline)) static inline int64_t
lanes_avx2_body(lanes *L, const float *rf, const float *const *cf, const float *tiny, int64_t n, const int nc,
                bool check) {
    int64_t end = n - n % ML;
    __m256d rr[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256 am = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < end; k0 += CHUNK) {
        const int64_t k1 = end - k0 < CHUNK ? end : k0 + CHUNK;
        const int64_t stop = counts_avx2(rf, cf, nc, tiny, k0, k1, check, &am, rr, L);
        for (int q = 0; q < nc; q += 2) {
            if (nc - q >= 2) sums_avx2(L + q, rf, cf + q, 2, k0, stop);
            else sums_avx2(L + q, rf, cf + q, 1, k0, stop);
        }
        if (stop < k1) { /* a non-finite block (checked only) */
            end = stop;
            break;
        }
    }
    double rrs[ML];
    _mm256_storeu_pd(rrs, rr[0]);
    _mm256_storeu_pd(rrs + 4, rr[1]);
    for (int l = 0; !check && l < ML; l++)
        if (!isfinite(rrs[l])) return -1;
    for (int q = 0; !check && q < nc; q++)
        for (int l = 0; l < ML; l++)
            if (!isfinite(L[q].cc[l])) return -1;
    float amf[ML];
    _mm256_storeu_ps(amf, am);
    _Pragma("GCC unroll 8")
    for (int q = 0; q < nc; q++) {
        memcpy(L[q].rr, rrs, sizeof rrs);
        for (int l = 0; l < ML; l++) L[q].amax[l] = (double)amf[l];
    }
    return end;
}

/* nc a constant in each body, so the loops over the candidates unroll (by
 * pragma: GCC 12 did not by itself) and their counts and sums stay in
 * registers (two candidates of 64 K elements in L2: 1.21-1.51 -> 0.81-1.00
 * ns an element, the same hour; PP-OCRv4 det's report on this path, Zen 5:
 * the metrics 339-362 thread-ms rolled, 151-167 unrolled). */
__attribute__((target("avx2,fma"))) static int64_t lanes_avx2(lanes *L, const float *rf, const float *const *cf,
                                                           const float *tiny, int64_t n, int nc, bool check) {
    switch (nc) {
    case 1: return lanes_avx2_body(L, rf, cf, tiny, n, 1, check);
    case 2: return lanes_avx2_body(L, rf, cf, tiny, n, 2, check);
    case 3: return lanes_avx2_body(L, rf, cf, tiny, n, 3, check);
    default: return lanes_avx2_body(L, rf, cf, tiny, n, MANY, check);
    }
}
#endif

/* MPX_KERN_PORTABLE=1 takes the portable path and MPX_KERN_AVX2=1 the AVX2 one,
 * as the kernels do (tests). */
static bool getenv_portable(void) { return mpx_env_on("MPX_KERN_PORTABLE"); }

static double lsum(const double *v) {
    return (((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])));
}

static double lmax(const double *v) {
    double m = v[0];
    for (int l = 1; l < ML; l++) m = v[l] > m ? v[l] : m;
    return m;
}

static mpx_status check_pair(const mpx_value *r, const mpx_value *c, mpx_error *err) {
    if (!usable(r) || !usable(c))
        return mpx_error_set(err, MPX_E_ARG, "the %s has no value",
                             usable(r) ? "candidate" : "reference");
    bool same = r->rank == c->rank && r->n == c->n;
    for (int i = 0; same && i < r->rank; i++) same = r->dims[i] == c->dims[i];
    if (!same)
        return mpx_error_set(err, MPX_E_SHAPE,
                             "the candidate's shape differs from the reference's");
    if ((r->f != NULL) != (c->f != NULL) || (r->d != NULL) != (c->d != NULL))
        return mpx_error_set(err, MPX_E_ARG, "the candidate is %s, the reference %s",
                             mpx_dtype_name(c->dtype), mpx_dtype_name(r->dtype));
    return MPX_OK;
}

static bool use_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
    return !getenv_portable() && !mpx_env_on("MPX_KERN_AVX2") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

static bool use_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    return !getenv_portable() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/* The unchecked pass over whole tensors of finite values for nc candidates
 * (L[q] zero on entry); -1 when there is none here or a value was not
 * finite. */
static int64_t lanes_unchecked(lanes *L, const float *rf, const float *const *cf, const float *tiny, int64_t n,
                               int nc) {
#if defined(__x86_64__) || defined(__i386__)
    if (use_avx512()) return lanes_avx512(L, rf, cf, tiny, n, nc);
    if (use_avx2()) return lanes_avx2(L, rf, cf, tiny, n, nc, false);
#else
    (void)L, (void)rf, (void)cf, (void)tiny, (void)n, (void)nc;
#endif
    return -1;
}

/* The lanes on the paths that check every block (L zero on entry). */
static int64_t lanes_checked(lanes *L, const float *rf, const float *cf, int64_t n, float tiny) {
#if defined(__x86_64__) || defined(__i386__)
    if (use_avx2()) return lanes_avx2(L, rf, &cf, &tiny, n, 1, true);
#endif
    return lanes_portable(L, rf, cf, n, tiny);
}

/* ---- pieces ------------------------------------------------------------------------
 * The lanes of a tensor are taken piece by piece: piece p is elements
 * [p PIECE, (p + 1) PIECE), its lanes summed from zero as above, and the
 * pieces' lanes added lane by lane in piece order; the lanes stop at the
 * first block holding a non-finite value (or at a tail shorter than a
 * block, in the last piece) and the general loop (finish) takes the rest.
 * A tensor of one piece gets the lanes of the whole. Why: the pieces of a
 * large tensor go to the kernels' threads. A report computes its figures on
 * one job thread below 4 G multiply-adds a forward (compare_jobs.c), where
 * they were a third of its time (PP-OCRv4 det's report on Zen 5: 110 of 317
 * ms, rec's 30 of 77) with the pool's second thread idle; the order is
 * fixed by the pieces, not by the threads, so the figures are the same on
 * any number of them (test_compare's metrics_paths). */
enum { PIECE = 1 << 16 };

static void lanes_add(lanes *to, const lanes *from) {
    for (int l = 0; l < ML; l++) {
        to->se[l] = to->se[l] + from->se[l];
        to->sa[l] = to->sa[l] + from->sa[l];
        to->rr[l] = to->rr[l] + from->rr[l];
        to->cc[l] = to->cc[l] + from->cc[l];
        to->cr[l] = to->cr[l] + from->cr[l];
        to->mx[l] = from->mx[l] > to->mx[l] ? from->mx[l] : to->mx[l];
        to->amax[l] = from->amax[l] > to->amax[l] ? from->amax[l] : to->amax[l];
        to->sub[l] += from->sub[l];
        to->unf[l] += from->unf[l];
    }
}

static int64_t pieces_of(int64_t n) { return n > 0 ? (n + PIECE - 1) / PIECE : 1; }

/* Piece p's length in a tensor of n elements. */
static int64_t piece_len(int64_t n, int64_t p) { return n - p * PIECE < PIECE ? n - p * PIECE : PIECE; }

/* The pieces' unchecked passes on the kernels' threads: piece p's lanes of
 * candidate q in L[p MANY + q], where it stopped in stop[p] (-1: a
 * non-finite value, or no pass on this CPU). */
typedef struct piece_job {
    const float *rf;
    const float *const *cf;
    const float *tiny;
    int64_t n;
    int nc;
    lanes *L;
    int64_t *stop;
} piece_job;

/* Piece p's unchecked pass into L[0 .. nc): where it stopped in the piece, or -1. */
static int64_t piece_run(const piece_job *j, int64_t p, lanes *L) {
    const int64_t k0 = p * PIECE;
    const float *cf[MANY];
    for (int q = 0; q < j->nc; q++) cf[q] = j->cf[q] + k0;
    memset(L, 0, (size_t)j->nc * sizeof *L);
    return lanes_unchecked(L, j->rf + k0, cf, j->tiny, piece_len(j->n, p), j->nc);
}

static void piece_item(void *ctx, int tid, long p) {
    (void)tid;
    const piece_job *j = ctx;
    j->stop[p] = piece_run(j, p, j->L + (size_t)p * MANY);
}

/* Whether piece p's pass went through (a piece before the last ends on a
 * whole block: it stops early only at a non-finite value). */
static bool piece_whole(int64_t n, int64_t p, int64_t stop) {
    return stop >= 0 && (p + 1 == pieces_of(n) || stop == piece_len(n, p));
}

/* lanes_unchecked piece by piece (L[q] zero on entry): where the lanes
 * stopped, or -1 as lanes_unchecked, and without memory for the pieces'
 * lanes (the checking path then takes them one at a time: the same bits). */
static int64_t pieces_unchecked(lanes *L, const float *rf, const float *const *cf, const float *tiny, int64_t n,
                                int nc) {
    const int64_t np = pieces_of(n);
    if (np == 1) return lanes_unchecked(L, rf, cf, tiny, n, nc);
    piece_job j = {.rf = rf, .cf = cf, .tiny = tiny, .n = n, .nc = nc};
    j.L = malloc((size_t)np * MANY * sizeof *j.L);
    j.stop = malloc((size_t)np * sizeof *j.stop);
    int64_t k = -1;
    if (j.L && j.stop) {
        mpx_k_parallel((long)np, kg_threads(), piece_item, &j);
        for (int64_t p = 0; p < np && piece_whole(n, p, j.stop[p]); p++) {
            for (int q = 0; q < nc; q++) lanes_add(&L[q], &j.L[p * MANY + q]);
            k = p + 1 == np ? p * PIECE + j.stop[p] : -1;
        }
    }
    free(j.L);
    free(j.stop);
    return k;
}

/* lanes_checked piece by piece (L zero on entry): where the lanes stopped. */
static int64_t pieces_checked(lanes *L, const float *rf, const float *cf, int64_t n, float tiny) {
    const int64_t np = pieces_of(n);
    if (np == 1) return lanes_checked(L, rf, cf, n, tiny);
    for (int64_t p = 0; p < np; p++) {
        const int64_t k0 = p * PIECE, len = piece_len(n, p);
        lanes one;
        memset(&one, 0, sizeof one);
        const int64_t s = lanes_checked(&one, rf + k0, cf + k0, len, tiny);
        lanes_add(L, &one);
        if (s < len) return k0 + s;
    }
    return n;
}

/* The count and the reference's largest magnitude, both paths; a pair with
 * a non-finite value where the other is not (an overflow, a NaN made) has
 * infinite distances and no angle. Returns bad: the caller stops there. */
static bool finish_counts(mpx_metrics *m, int64_t n, double amax, bool bad) {
    m->n = n;
    m->absmax_ref = amax;
    if (bad) {
        m->max_abs = m->mean_abs = m->rel_l2 = INFINITY;
        m->sqnr_db = -INFINITY;
        m->cos = NAN;
    }
    return bad;
}

/* The figures from the lanes' sums over elements [0, k) (L NULL: none, an
 * integer pair) and the general loop over the rest, which adds to them. */
static void finish(const mpx_value *r, const mpx_value *c, const mpx_format *f, const lanes *L,
                   int64_t k, mpx_metrics *m) {
    double se = 0, sa = 0, rr = 0, cc = 0, cr = 0, mx = 0, amax = 0;
    bool bad = false;
    if (L) {
        se = lsum(L->se);
        sa = lsum(L->sa);
        rr = lsum(L->rr);
        cc = lsum(L->cc);
        cr = lsum(L->cr);
        mx = lmax(L->mx);
        amax = lmax(L->amax);
        for (int l = 0; l < ML; l++) {
            m->subnormal += L->sub[l];
            m->underflow += L->unf[l];
        }
    }
    for (; k < r->n; k++) {
        double x = r->f ? (double)r->f[k] : (double)r->i[k];
        double y = c->f ? (double)c->f[k] : (double)c->i[k];
        if (!isnan(x) && fabs(x) > amax) amax = fabs(x);
        if (c->f && mpx_format_is_subnormal(f, c->f[k])) m->subnormal++;
        if (x != 0 && !isnan(x) && y == 0) m->underflow++;
        if (isfinite(x) && isfinite(y)) {
            double d = y - x, ad = fabs(d);
            sa += ad;
            se = fma(d, d, se);
            if (ad > mx) mx = ad;
            rr = fma(x, x, rr);
            cc = fma(y, y, cc);
            cr = fma(x, y, cr);
        } else if (isfinite(x)) {
            m->overflow++;
            bad = true;
        } else if (!(x == y || (isnan(x) && isnan(y)))) {
            bad = true;
        }
    }
    if (finish_counts(m, r->n, amax, bad)) return;
    double nr = sqrt(rr), nc = sqrt(cc), ne = sqrt(se);
    m->max_abs = mx;
    m->mean_abs = r->n ? sa / (double)r->n : 0.0;
    m->rel_l2 = ne == 0 ? 0.0 : nr == 0 ? INFINITY : ne / nr;
    m->sqnr_db = ne == 0 ? INFINITY : nr == 0 ? -INFINITY : 20.0 * log10(nr / ne);
    if (nr == 0 && nc == 0)
        m->cos = 1.0;
    else if (nr == 0 || nc == 0)
        m->cos = 0.0;
    else
        m->cos = fmax(-1.0, fmin(1.0, cr / (nr * nc)));
}

/* float64 tensors: finish's figures from the doubles themselves. Their
 * squares may leave double's range (1e229 squared overflows, a difference
 * of 1e-4 beside values near 1e229 gives a rel_l2 near 1e-233), so each sum
 * is taken of values scaled by its own power of two (exact), that brings
 * the largest finite magnitude of the reference, the candidate or their
 * difference near 1, and the ratios are scaled back by the difference of
 * the exponents. Subnormal counts f's subnormals for a low f, double's own
 * for fp32 (the reference's precision: the values are not rounded). */
static int scale_of(double big) { return big > 0 && isfinite(big) ? -ilogb(big) : 0; }

static void finish_double(const mpx_value *r, const mpx_value *c, const mpx_format *f, mpx_metrics *m) {
    const double *x = r->d, *y = c->d;
    const bool own = f == &mpx_format_fp32;
    const double tiny = own ? DBL_MIN : (double)f->min_normal;
    double bx = 0, by = 0, bd = 0, amax = 0;
    bool bad = false;
    for (int64_t k = 0; k < r->n; k++) {
        if (!isnan(x[k]) && fabs(x[k]) > amax) amax = fabs(x[k]);
        if (y[k] != 0 && isfinite(y[k]) && fabs(y[k]) < tiny) m->subnormal++;
        if (x[k] != 0 && !isnan(x[k]) && y[k] == 0) m->underflow++;
        if (isfinite(x[k]) && isfinite(y[k])) {
            bx = fmax(bx, fabs(x[k]));
            by = fmax(by, fabs(y[k]));
            bd = fmax(bd, fabs(y[k] - x[k]));
        } else if (isfinite(x[k])) {
            m->overflow++;
            bad = true;
        } else if (!(x[k] == y[k] || (isnan(x[k]) && isnan(y[k])))) {
            bad = true;
        }
    }
    if (finish_counts(m, r->n, amax, bad)) return;
    const int sx = scale_of(bx), sy = scale_of(by), sd = scale_of(bd);
    double se = 0, sa = 0, rr = 0, cc = 0, cr = 0;
    for (int64_t k = 0; k < r->n; k++) {
        if (!isfinite(x[k]) || !isfinite(y[k])) continue;
        const double a = ldexp(x[k], sx), b = ldexp(y[k], sy), d = ldexp(y[k] - x[k], sd);
        sa += fabs(d);
        se = fma(d, d, se);
        rr = fma(a, a, rr);
        cc = fma(b, b, cc);
        cr = fma(a, b, cr);
    }
    const double nr = sqrt(rr), nc = sqrt(cc), ne = sqrt(se); /* scaled by 2^sx, 2^sy, 2^sd */
    m->max_abs = bd;
    m->mean_abs = r->n ? ldexp(sa / (double)r->n, -sd) : 0.0;
    m->rel_l2 = ne == 0 ? 0.0 : nr == 0 ? INFINITY : ldexp(ne / nr, sx - sd);
    m->sqnr_db = ne == 0 ? INFINITY : nr == 0 ? -INFINITY : 20.0 * (log10(nr / ne) + (sd - sx) * log10(2.0));
    if (nr == 0 && nc == 0) m->cos = 1.0;
    else if (nr == 0 || nc == 0) m->cos = 0.0;
    else m->cos = fmax(-1.0, fmin(1.0, cr / (nr * nc)));
}

mpx_status mpx_metrics_compute(const mpx_value *r, const mpx_value *c, const mpx_format *fmt,
                               mpx_metrics *m, mpx_error *err) {
    if (!m) return mpx_error_set(err, MPX_E_ARG, "no place for the metrics");
    memset(m, 0, sizeof *m);
    mpx_status st = check_pair(r, c, err);
    if (st != MPX_OK) return st;
    const mpx_format *f = fmt ? fmt : &mpx_format_fp32;
    if (r->d) {
        finish_double(r, c, f, m);
        return MPX_OK;
    }
    if (!r->f) {
        finish(r, c, f, NULL, 0, m);
        return MPX_OK;
    }
    /* The float case (lanes above). The checking paths stop at the first
     * block with a non-finite value and leave the rest, from there on, to
     * the general loop. */
    lanes L;
    memset(&L, 0, sizeof L);
    const float tiny = f->min_normal;
    const float *cf = c->f;
    int64_t k = pieces_unchecked(&L, r->f, &cf, &tiny, r->n, 1);
    if (k < 0) { /* not taken, or a non-finite value */
        memset(&L, 0, sizeof L);
        k = pieces_checked(&L, r->f, c->f, r->n, tiny);
    }
    finish(r, c, f, &L, k, m);
    return MPX_OK;
}

mpx_status mpx_metrics_compute_many(const mpx_value *r, const mpx_value *const *c,
                                    const mpx_format *const *fmt, int nc, mpx_metrics *m,
                                    mpx_error *err) {
    if (!m || !c || nc < 1) return mpx_error_set(err, MPX_E_ARG, "no candidates or no place for the metrics");
    /* (lanes_unchecked says whether this CPU has a pass for it: -1 if not) */
    bool shared = nc <= MANY && usable(r) && r->f;
    for (int q = 0; q < nc && shared; q++) shared = check_pair(r, c[q], NULL) == MPX_OK && c[q]->f;
    if (shared) {
        lanes L[MANY];
        const float *cf[MANY];
        float tiny[MANY];
        for (int q = 0; q < nc; q++) {
            cf[q] = c[q]->f;
            tiny[q] = (fmt && fmt[q] ? fmt[q] : &mpx_format_fp32)->min_normal;
        }
        memset(L, 0, sizeof L);
        const int64_t k = pieces_unchecked(L, r->f, cf, tiny, r->n, nc);
        if (k >= 0) {
            for (int q = 0; q < nc; q++) {
                memset(&m[q], 0, sizeof m[q]);
                finish(r, c[q], fmt && fmt[q] ? fmt[q] : &mpx_format_fp32, &L[q], k, &m[q]);
            }
            return MPX_OK;
        }
    }
    /* One at a time: where the shared pass does not apply, met a
     * non-finite value, or a pair is refused (the first refusal returned). */
    mpx_status first = MPX_OK;
    for (int q = 0; q < nc; q++) {
        mpx_error e = {0};
        mpx_status st = mpx_metrics_compute(r, c[q], fmt ? fmt[q] : NULL, &m[q], &e);
        if (st != MPX_OK && first == MPX_OK) {
            first = st;
            if (err) *err = e;
        }
    }
    return first;
}

/* ---- the metric table ------------------------------------------------------- */

#define REAL false
#define COUNT true
#define HIGH false
#define LOW true
static const mpx_metric_info metric_table[] = {
#define MPX_METRIC(name, kind, worse) {#name, kind, worse},
#include "metrics.def"
#undef MPX_METRIC
};
#undef REAL
#undef COUNT
#undef HIGH
#undef LOW
_Static_assert(sizeof metric_table / sizeof metric_table[0] == MPX_METRIC_COUNT, "metrics.def and the table agree");

const mpx_metric_info *mpx_metric_info_of(mpx_metric_id id) {
    return (int)id >= 0 && id < MPX_METRIC_COUNT ? &metric_table[id] : NULL;
}

bool mpx_metric_by_name(const char *name, mpx_metric_id *id) {
    for (int i = 0; name && i < MPX_METRIC_COUNT; i++)
        if (strcasecmp(name, metric_table[i].name) == 0) {
            *id = (mpx_metric_id)i;
            return true;
        }
    return false;
}

double mpx_metric_value(const mpx_metrics *m, mpx_metric_id id) {
    switch (id) {
#define MPX_METRIC(name, kind, worse) \
    case MPX_METRIC_##name: return (double)m->name;
#include "metrics.def"
#undef MPX_METRIC
    default: return NAN;
    }
}

void mpx_metric_set(mpx_metrics *m, mpx_metric_id id, double v) {
    switch (id) {
#define REAL_SET(name) m->name = v
#define COUNT_SET(name) m->name = isfinite(v) ? (int64_t)llround(v) : INT64_MAX
#define MPX_METRIC(name, kind, worse) \
    case MPX_METRIC_##name: kind##_SET(name); break;
#include "metrics.def"
#undef MPX_METRIC
#undef REAL_SET
#undef COUNT_SET
    default: break;
    }
}

const char *mpx_metric_names(const char *sep, char *buf, size_t n) {
    size_t o = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < MPX_METRIC_COUNT && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? sep : "", metric_table[i].name);
    return buf;
}
