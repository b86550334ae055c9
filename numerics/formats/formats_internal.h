/* formats_internal.h - what the other folders of numerics/ use of formats/
 * beyond its public header: the round-to-odd sum and the accumulation's
 * inline fp16 step, a float's bits, the CPU-feature checks, and the
 * target-clone macros. Not installed; nothing outside numerics/ and its
 * tests includes it. */
#ifndef MPX_FORMATS_INTERNAL_H
#define MPX_FORMATS_INTERNAL_H

#include "mpx_formats.h"

#include <string.h>

/* A float's bits and the float of some bits (memcpy: the type pun C
 * allows), for format.c's rounding and the tests that check it bit by bit. */
static inline uint32_t mpx_f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float mpx_f32_of_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The accumulation's fp16 step inline (mpx_acc_add runs it per term, and
 * the calls into format.c were half of an fp16-accumulated BERT-style
 * encoder's LayerNormalization and Softmax sums): s + t made round-to-odd
 * in fp32 (Fast2Sum, as mpx_round_sum), then rounded to fp16 with integer
 * operations: to 13 fewer bits in fp16's normal range, to a multiple of
 * 2^-24 below it (through the float addition of 1.5 * 2^-1, exact there),
 * infinity from 65520; NaN and infinite sums through mpx_round_value.
 * Bit for bit mpx_round_sum(fp16): test_formats checks the rounding on all
 * 2^32 floats (MPX_EXHAUSTIVE=1) or a stride of them, the sum with
 * mpx_round_sum's tests. */
static inline float mpx_fp16_round_inline(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t a = u & 0x7fffffffu, sign = u & 0x80000000u;
    uint32_t r;
    if (a >= 0x7f800000u) return mpx_round_value(&mpx_format_fp16, x);
    if (a >= 0x477ff000u) { /* 65520 and above: beyond half an ulp past 65504 */
        r = sign | 0x7f800000u;
    } else if (a >= 0x38800000u) { /* fp16 normal: 10 mantissa bits */
        r = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    } else { /* fp16 subnormal or zero: a multiple of 2^-24 */
        float m;
        uint32_t am = a;
        memcpy(&m, &am, sizeof m);
        const float q = (m + 0x1p-1f) - 0x1p-1f; /* RNE to 2^-24: 0.5's ulp */
        memcpy(&r, &q, sizeof r);
        r |= sign;
    }
    float y;
    memcpy(&y, &r, sizeof y);
    return y;
}

/* s + t made round-to-odd in fp32 (format.c's mpx_round_sum explains). */
static inline float mpx_ro_sum(float s, float t) {
    float r = s + t;
    uint32_t ur, us, ut;
    memcpy(&ur, &r, sizeof ur);
    memcpy(&us, &s, sizeof us);
    memcpy(&ut, &t, sizeof ut);
    if ((ur & 0x7fffffffu) >= 0x7f800000u) {
        if ((us & 0x7fffffffu) < 0x7f800000u && (ut & 0x7fffffffu) < 0x7f800000u)
            ur = (ur & 0x80000000u) | 0x7f7fffffu; /* beyond fp32: the largest float */
    } else {
        const bool s_big = (us & 0x7fffffffu) >= (ut & 0x7fffffffu);
        const float big = s_big ? s : t, small = s_big ? t : s;
        const float e = small - (r - big);
        uint32_t ue;
        memcpy(&ue, &e, sizeof ue);
        if (e != 0.0f && !(ur & 1u)) ur = ((ue ^ ur) >> 31) ? ur - 1u : ur + 1u;
    }
    memcpy(&r, &ur, sizeof r);
    return r;
}

/* One copy of a function per ISA listed, picked when the program loads
 * (GCC's target clones; elsewhere the plain function): for loops whose each
 * element is the same IEEE operations whatever the vector width, so every
 * copy gives the same bits.
 *
 * Clones name CPU features or feature levels (x86-64-v3: AVX2, FMA, F16C,
 * BMI2...), never a CPU model: GCC picks an "arch=haswell" clone by the
 * model (__builtin_cpu_is), so it ran on Haswell alone and every AMD CPU,
 * and every later Intel one without AVX-512, took the baseline, whose fmaf
 * is a libm call (several times slower than the vector copy);
 * "arch=x86-64-v3" is picked by features. A lone "fma" clone is
 * no substitute: without AVX2's integer lanes GCC vectorised Sigmoid 4
 * lanes wide. MPX_K_CLONED says whether functions are cloned (test_clones
 * holds the FMA list's loops to their vector copies). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MPX_K_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#define MPX_K_CLONED 1
#else
#define MPX_K_CLONES(...)
#define MPX_K_CLONED 0
#endif
/* For loops with fused multiply-adds. */
#define MPX_K_CLONES_FMA MPX_K_CLONES("avx512f", "arch=x86-64-v3", "default")

/* The CPU has F16C (format.c; callers also check AVX). */
bool mpx_cpu_has_f16c(void);
/* The CPU has AVX512-FP16 (format.c; callers also check AVX-512F). */
bool mpx_cpu_has_avx512fp16(void);
/* The CPU has AVX512-VNNI, or AVX-VNNI (its VEX form on 256-bit vectors)
 * (format.c; callers also check AVX-512F, or AVX2, for the OS's support). */
bool mpx_cpu_has_avx512vnni(void);
bool mpx_cpu_has_avxvnni(void);

#endif
