/* round_odd.h - c + p on 16 lanes made round-to-odd in fp32 with AVX-512's
 * per-instruction rounding modes: the step of a rounded accumulation before
 * the format's own rounding (format.c's mpx_round_sum says why and proves
 * it; its scalar and portable vector forms use Fast2Sum instead and give
 * the same value on every input). Included by format.c (mpx_round_sums) and
 * by the GEMM core's AVX-512 build; callers are compiled for AVX-512F and
 * run only where the CPU has it. Private to numerics/. */
#ifndef MPX_ROUND_ODD_H
#define MPX_ROUND_ODD_H

#include <immintrin.h>

/* The sum rounded towards zero, its last bit set where rounding down and up
 * differ (inexact). An fp32 overflow of finite terms gives the largest
 * float (round-to-odd of a value beyond it), which every format's rounding
 * takes where the exact sum goes; NaNs and infinite operands give the plain
 * sum. Four instructions. */
static inline __attribute__((target("avx512f"), always_inline)) __m512 mpx_ro16(__m512 c, __m512 p) {
    const __m512 lo = _mm512_add_round_ps(c, p, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 hi = _mm512_add_round_ps(c, p, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    const __m512 tz = _mm512_add_round_ps(c, p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 inexact = _mm512_cmp_ps_mask(lo, hi, _CMP_NEQ_OQ);
    const __m512i u = _mm512_castps_si512(tz);
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(u, inexact, u, _mm512_set1_epi32(1)));
}

#endif
