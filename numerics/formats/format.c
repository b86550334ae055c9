/* format.c - float format descriptors and exact round-to-nearest-even.
 *
 * Implementations that must agree bit for bit (tests/test_formats_all.c checks
 * all 2^32 inputs for every format but fp32, and both fp16 paths):
 *  - mpx_round_scalar: the reference, written from the definition of rounding
 *    (scale by the target's ulp at x's binade, round the quotient to the
 *    nearest integer with ties to even, scale back) and generic over the
 *    descriptor fields;
 *  - mpx_round_array: the fast paths (F16C for fp16, else the FP16 library;
 *    integer rounding on the fp32 bit pattern for everything else);
 *  - mpx_round_value: the same fast paths for one value.
 */
#include "formats_internal.h"

#include <stdio.h>

#include <fp16.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdatomic.h>
#include <immintrin.h>
#include "round_odd.h"
#define MPX_HAVE_X86 1
#else
#define MPX_HAVE_X86 0
#endif

/* F16C from CPUID (leaf 1, ECX bit 29) rather than
 * __builtin_cpu_supports("f16c"), which clang 14 does not know. F16C's
 * instructions are VEX-encoded: callers also require AVX (whose
 * __builtin_cpu_supports check includes the OS's saving of the registers).
 * Asked once: CPUID traps to the hypervisor in a VM (microseconds), and
 * this is asked per rounded value. */
#if MPX_HAVE_X86
/* Bit `bit` of register reg (0 EAX .. 3 EDX) of CPUID leaf/subleaf, asked
 * once per flag (*known: -1 until then; every thread that asks writes the
 * same). */
static bool cpuid_has(_Atomic int *known, unsigned leaf, unsigned sub, int reg, unsigned bit) {
    int k = atomic_load_explicit(known, memory_order_relaxed);
    if (k < 0) {
        unsigned r[4];
        k = __get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3]) && (r[reg] & bit);
        atomic_store_explicit(known, k, memory_order_relaxed);
    }
    return k != 0;
}
#endif

bool mpx_cpu_has_f16c(void) {
#if MPX_HAVE_X86
    static _Atomic int known = -1;
    return cpuid_has(&known, 1, 0, 2, bit_F16C);
#else
    return false;
#endif
}

/* AVX512-FP16 (CPUID leaf 7, subleaf 0, EDX bit 23), asked once as F16C
 * is; callers also check AVX-512F with __builtin_cpu_supports (which
 * includes the OS's saving of the registers). */
bool mpx_cpu_has_avx512fp16(void) {
#if MPX_HAVE_X86
    static _Atomic int known = -1;
    return cpuid_has(&known, 7, 0, 3, 1u << 23);
#else
    return false;
#endif
}

/* AVX512-VNNI (CPUID leaf 7, subleaf 0, ECX bit 11) and AVX-VNNI (leaf 7,
 * subleaf 1, EAX bit 4): clang 14's __builtin_cpu_supports knows neither
 * name in every version, so asked as F16C is. */
bool mpx_cpu_has_avx512vnni(void) {
#if MPX_HAVE_X86
    static _Atomic int known = -1;
    return cpuid_has(&known, 7, 0, 2, 1u << 11);
#else
    return false;
#endif
}

bool mpx_cpu_has_avxvnni(void) {
#if MPX_HAVE_X86
    static _Atomic int known = -1;
    return cpuid_has(&known, 7, 1, 0, 1u << 4);
#else
    return false;
#endif
}

/* ---- descriptors ---------------------------------------------------------- */

/* max_finite = (2 - 2^-m) * 2^emax, min_normal = 2^(1-bias),
 * min_subnormal = 2^(1-bias-m); spelled as hex floats so they are exact. */
const mpx_format mpx_format_fp32 = {
    "fp32", MPX_FMT_FP32, 8, 23, 127, 32, true, MPX_NAN_IEEE, MPX_OVF_INF,
    0x1.fffffep127f, 0x1p-126f, 0x1p-149f, MPX_DT_FLOAT};
const mpx_format mpx_format_tf32 = {
    "tf32", MPX_FMT_TF32, 8, 10, 127, 32, true, MPX_NAN_IEEE, MPX_OVF_INF,
    0x1.ffcp127f, 0x1p-126f, 0x1p-136f, MPX_DT_UNDEFINED};
const mpx_format mpx_format_fp16 = {
    "fp16", MPX_FMT_FP16, 5, 10, 15, 16, true, MPX_NAN_IEEE, MPX_OVF_INF,
    65504.0f, 0x1p-14f, 0x1p-24f, MPX_DT_FLOAT16};
const mpx_format mpx_format_bf16 = {
    "bf16", MPX_FMT_BF16, 8, 7, 127, 16, true, MPX_NAN_IEEE, MPX_OVF_INF,
    0x1.fep127f, 0x1p-126f, 0x1p-133f, MPX_DT_BFLOAT16};
/* OCP E4M3FN: the top binade keeps its mantissa codes (max 1.75 * 2^8 = 448);
 * only S.1111.111 is NaN; no infinities. */
const mpx_format mpx_format_fp8e4m3_sat = {
    "fp8e4m3", MPX_FMT_FP8E4M3, 4, 3, 7, 8, false, MPX_NAN_ONE, MPX_OVF_SATURATE,
    448.0f, 0x1p-6f, 0x1p-9f, MPX_DT_FLOAT8E4M3FN};
const mpx_format mpx_format_fp8e4m3_nan = {
    "fp8e4m3nan", MPX_FMT_FP8E4M3, 4, 3, 7, 8, false, MPX_NAN_ONE, MPX_OVF_NAN,
    448.0f, 0x1p-6f, 0x1p-9f, MPX_DT_FLOAT8E4M3FN};
const mpx_format mpx_format_fp8e5m2 = {
    "fp8e5m2", MPX_FMT_FP8E5M2, 5, 2, 15, 8, true, MPX_NAN_IEEE, MPX_OVF_INF,
    57344.0f, 0x1p-14f, 0x1p-16f, MPX_DT_FLOAT8E5M2};

static const mpx_format *const all_formats[] = {
    &mpx_format_fp32, &mpx_format_tf32, &mpx_format_fp16, &mpx_format_bf16,
    &mpx_format_fp8e4m3_sat, &mpx_format_fp8e4m3_nan, &mpx_format_fp8e5m2,
};

static int name_eq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char ca = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        if (ca != *b) return 0;
    }
    return *a == *b;
}

const mpx_format *mpx_format_by_name(const char *name) {
    if (!name) return NULL;
    /* "fp8e4m3" (saturating: ONNX Cast's default saturate=1) was once
     * printed "fp8e4m3sat"; scripts written then still load. */
    if (name_eq(name, "fp8e4m3sat")) return &mpx_format_fp8e4m3_sat;
    for (size_t i = 0; i < sizeof all_formats / sizeof all_formats[0]; i++)
        if (name_eq(name, all_formats[i]->name)) return all_formats[i];
    return NULL;
}

const mpx_format *mpx_format_of_dtype(mpx_dtype t, bool saturate) {
    if (t == MPX_DT_DOUBLE) return &mpx_format_fp32;
    for (size_t i = 0; t != MPX_DT_UNDEFINED && i < sizeof all_formats / sizeof all_formats[0]; i++)
        if (all_formats[i]->dtype == t &&
            (t != MPX_DT_FLOAT8E4M3FN || (all_formats[i]->overflow == MPX_OVF_SATURATE) == saturate))
            return all_formats[i];
    return NULL;
}

size_t mpx_format_count(void) { return sizeof all_formats / sizeof all_formats[0]; }

const mpx_format *mpx_format_at(size_t i) {
    return i < mpx_format_count() ? all_formats[i] : NULL;
}

const char *mpx_format_names(const char *sep, bool low_only, char *buf, size_t n) {
    size_t o = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < mpx_format_count() && o < n; i++) {
        if (low_only && all_formats[i]->kind == MPX_FMT_FP32) continue;
        o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? sep : "", all_formats[i]->name);
    }
    return buf;
}

float mpx_format_max(const mpx_format *f) { return f->max_finite; }

const char *mpx_format_name(const mpx_format *f) { return f ? f->name : "fp32"; }

bool mpx_format_is_subnormal(const mpx_format *f, float x) {
    float a = fabsf(x);
    return a != 0.0f && a < f->min_normal;
}

/* ---- bit helpers ------------------------------------------------------------ */

#define SIGN32 0x80000000u
#define ABS32 0x7fffffffu
#define INF32 0x7f800000u
#define QUIET32 0x00400000u

/* The fp32 NaN a NaN input rounds to (see the header for the rule). */
static uint32_t nan_bits(const mpx_format *f, uint32_t u) {
    if (f->nan == MPX_NAN_ONE) return (u & SIGN32) | INF32 | QUIET32;
    uint32_t low = (1u << (23 - f->man_bits)) - 1u;
    return (u & ~low) | QUIET32;
}

/* The positive fp32 result of an overflow, or of an infinite input in a
 * format without infinities. */
static uint32_t overflow_bits(const mpx_format *f) {
    switch (f->overflow) {
    case MPX_OVF_SATURATE: return mpx_f32_bits(f->max_finite);
    case MPX_OVF_NAN: return INF32 | QUIET32;
    case MPX_OVF_INF: break;
    }
    return INF32;
}

/* ---- scalar reference --------------------------------------------------------- */

/* 2^k as a double, for k in the double normal range (|k| < 1000 here). */
static double pow2(int k) {
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline float round_ref(const mpx_format *f, float x) {
    uint32_t u = mpx_f32_bits(x);
    uint32_t sign = u & SIGN32;
    if (isnan(x)) return mpx_f32_of_bits(nan_bits(f, u));
    if (isinf(x)) return f->has_inf ? x : mpx_f32_of_bits(sign | overflow_bits(f));
    if (x == 0.0f) return x;

    /* x = 2^e * 1.f. In the target, values in binade e (or below the normal
     * range, in the subnormal range at emin) are multiples of
     * ulp = 2^(max(e, emin) - man_bits). An fp32 subnormal has e < -126, below
     * every format's emin, so only the clamp to emin matters for it. */
    int emin = 1 - f->bias;
    int biased = (int)((u >> 23) & 0xffu);
    int e = biased ? biased - 127 : -127;
    if (e < emin) e = emin;
    int ulp_exp = e - f->man_bits;

    /* |x| / ulp < 2^(man_bits + 1) <= 2^24 and the scaling is by a power of
     * two, so v is exact and fits an int64. */
    double v = fabs((double)x) * pow2(-ulp_exp);
    int64_t n = (int64_t)v;
    double frac = v - (double)n;
    if (frac > 0.5 || (frac == 0.5 && (n & 1)))
        n++;
    /* The exponent is unbounded here, so n * ulp may lie beyond max_finite:
     * that is exactly IEEE 754's definition of overflow. */
    double r = (double)n * pow2(ulp_exp);
    if (r > (double)f->max_finite) return mpx_f32_of_bits(sign | overflow_bits(f));
    return mpx_f32_of_bits(sign | mpx_f32_bits((float)r)); /* exact: r is in the format */
}

/* Whether finite x overflows f by the rule above: its rounding with an
 * unbounded exponent lies beyond max_finite (whatever f then makes of it: inf,
 * NaN or max_finite). Only values beyond max_finite can, so only they pay for
 * the reference rounding. */
static bool overflows(const mpx_format *f, float x) {
    if (!isfinite(x) || fabsf(x) <= f->max_finite) return false;
    if (!f->has_inf || f->overflow != MPX_OVF_INF) {
        /* The result does not say (saturation, NaN): round x in an IEEE
         * twin of f, which overflows exactly where f does. */
        mpx_format twin = *f;
        twin.overflow = MPX_OVF_INF;
        twin.has_inf = true;
        return isinf(round_ref(&twin, x));
    }
    return isinf(round_ref(f, x));
}

void mpx_format_count_damage(const mpx_format *f, const float *x, size_t n, int64_t *overflow, int64_t *flushed) {
    int64_t o = 0, z = 0;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a == 0.0f || !isfinite(a)) continue;
        if (a > f->max_finite) o += overflows(f, x[i]);
        else if (a < f->min_normal) z += mpx_round_value(f, x[i]) == 0.0f;
    }
    if (overflow) *overflow = o;
    if (flushed) *flushed = z;
}

float mpx_round_scalar(const mpx_format *f, float x) { return round_ref(f, x); }

/* round_ref's steps on a double: the binade of x (clamped to f's emin),
 * the multiple of that binade's ulp nearest |x| (ties to even), overflow
 * where that multiple lies beyond max_finite. One rounding from the double:
 * going through fp32 first would round twice. */
static double round_ref_double(const mpx_format *f, double x) {
    if (isnan(x) || isinf(x)) return (double)round_ref(f, (float)x);
    if (x == 0.0) return x;
    int emin = 1 - f->bias, e = ilogb(x);
    if (e < emin) e = emin;
    int ulp_exp = e - f->man_bits;
    double v = ldexp(fabs(x), -ulp_exp); /* exact: a power-of-two scaling, |v| < 2^(man_bits + 1) */
    double n = floor(v), frac = v - n;
    if (frac > 0.5 || (frac == 0.5 && fmod(n, 2.0) != 0.0)) n += 1.0;
    double r = ldexp(n, ulp_exp);
    if (r > (double)f->max_finite) return (double)mpx_f32_of_bits((x < 0 ? SIGN32 : 0u) | overflow_bits(f));
    return copysign(r, x);
}

void mpx_round_double_array(const mpx_format *f, double *dst, const double *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = round_ref_double(f, src[i]);
}

void mpx_round_reference_array(const mpx_format *f, float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = round_ref(f, src[i]);
}

/* ---- fast paths ------------------------------------------------------------------ */

/* fp32 -> fp32: only quiets NaNs, so every format obeys the same NaN rule. */
static inline uint32_t quiet_fp32(uint32_t u) {
    return u | ((u & ABS32) > INF32 ? QUIET32 : 0u);
}

static void round_fp32(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mpx_f32_of_bits(quiet_fp32(mpx_f32_bits(src[i])));
}

/* Formats with fp32's 8-bit exponent (bf16, tf32) are fp32 with a shorter
 * mantissa, so RNE is integer arithmetic on the bit pattern: add half an ulp
 * minus one plus the kept LSB, then clear the dropped bits. A carry walks into
 * the exponent as it should (and into inf past the max), and fp32 subnormals
 * are handled because the encoding is linear there. bf16 is written here
 * because the FP16 library (fp16.h) has no bf16. SHIFT is a constant in each
 * caller, so a value costs a few integer operations (GCC vectorises the
 * loops at -O3; its -O2 cost model leaves them scalar, about 1 ns a value). */
static inline uint32_t rne_exp8(uint32_t u, unsigned shift) {
    uint32_t low = (1u << shift) - 1u;
    uint32_t r = (u + (low >> 1) + ((u >> shift) & 1u)) & ~low;
    uint32_t nan = (u & ~low) | QUIET32;
    return (u & ABS32) > INF32 ? nan : r;
}

/* Compiled for AVX-512 and AVX2 too: integer operations, the same bits in
 * every copy; a candidate's activations are rounded in these passes (the
 * baseline's 4 lanes were 9% of det's report). */
MPX_K_CLONES("avx512f", "avx2", "default")
static void round_bf16(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mpx_f32_of_bits(rne_exp8(mpx_f32_bits(src[i]), 16));
}

MPX_K_CLONES("avx512f", "avx2", "default")
static void round_tf32(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mpx_f32_of_bits(rne_exp8(mpx_f32_bits(src[i]), 13));
}

/* Narrow-exponent formats (the fp8 ones; the method suits fp16 too, which the
 * issue sends through F16C or fp16.h instead): the parameters of
 * round_narrow, derived from the descriptor once per call. */
typedef struct narrow {
    unsigned shift;      /* 23 - man_bits: dropped fp32 mantissa bits */
    uint32_t emin_b;     /* fp32 biased exponent of the target's min normal */
    uint32_t max_bits;   /* fp32 bits of max_finite */
    uint32_t ovf_bits;   /* positive result of a finite overflow */
    uint32_t inf_bits;   /* positive result of an infinite input */
    uint32_t nan_low;    /* IEEE NaN: payload bits dropped */
    bool nan_one;
    float min_sub;       /* 2^(emin - man_bits), an fp32 normal number here */
} narrow;

static inline narrow narrow_of(const mpx_format *f) {
    narrow p;
    p.shift = (unsigned)(23 - f->man_bits);
    p.emin_b = (uint32_t)(1 - f->bias + 127);
    p.max_bits = mpx_f32_bits(f->max_finite);
    p.ovf_bits = overflow_bits(f);
    p.inf_bits = f->has_inf ? INF32 : overflow_bits(f);
    p.nan_low = (1u << p.shift) - 1u;
    p.nan_one = f->nan == MPX_NAN_ONE;
    p.min_sub = f->min_subnormal;
    return p;
}

static inline uint32_t round_narrow(const narrow *p, uint32_t u) {
    uint32_t sign = u & SIGN32;
    uint32_t a = u ^ sign;
    if (a > INF32) return p->nan_one ? (sign | INF32 | QUIET32) : ((u & ~p->nan_low) | QUIET32);
    if (a == INF32) return sign | p->inf_bits;
    uint32_t be = a >> 23;
    if (be >= p->emin_b) {
        /* Target normal range: as rne_exp8, but the exponent range is narrow,
         * so check overflow after the carry. */
        uint32_t low = (1u << p->shift) - 1u;
        uint32_t r = (a + (low >> 1) + ((a >> p->shift) & 1u)) & ~low;
        return sign | (r > p->max_bits ? p->ovf_bits : r);
    }
    /* Target subnormal range: round the significand (implicit bit included)
     * to a multiple of min_sub. The quotient k <= 2^man_bits; k * min_sub is
     * exact in fp32. Past a shift of 25 everything rounds to zero (sig < 2^24),
     * so clamp to keep the shift defined. */
    uint32_t sig = (a & 0x7fffffu) | (be ? 0x800000u : 0u);
    uint32_t sh = p->shift + p->emin_b - (be ? be : 1u);
    if (sh > 25) sh = 25;
    uint32_t k = (sig + ((1u << (sh - 1)) - 1u) + ((sig >> sh) & 1u)) >> sh;
    return sign | mpx_f32_bits((float)k * p->min_sub);
}

static void round_narrow_array(const mpx_format *f, float *dst, const float *src, size_t n) {
    narrow p = narrow_of(f);
    for (size_t i = 0; i < n; i++) dst[i] = mpx_f32_of_bits(round_narrow(&p, mpx_f32_bits(src[i])));
}

/* fp16 without F16C: the FP16 library (fp16.h). Its fp32 -> fp16 conversion
 * is RNE with IEEE overflow and subnormals for every non-NaN input, and fp16
 * -> fp32 is exact. But it turns every NaN into the canonical 0x7E00 (sign
 * kept, payload dropped), where the rule here, like F16C's, keeps the top 10
 * payload bits; so NaNs take the rule's own branch. */
static inline uint32_t round_fp16_lib(uint32_t u) {
    if ((u & ABS32) > INF32) return (u & ~0x1fffu) | QUIET32;
    return mpx_f32_bits(fp16_ieee_to_fp32_value(fp16_ieee_from_fp32_value(mpx_f32_of_bits(u))));
}

static void round_fp16_portable(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = mpx_f32_of_bits(round_fp16_lib(mpx_f32_bits(src[i])));
}

#if MPX_HAVE_X86
/* vcvtps2ph with an immediate rounding mode of 0 is RNE whatever MXCSR says,
 * handles fp16 subnormals and overflow to inf, and quiets NaNs keeping the
 * top payload bits; vcvtph2ps is exact. Compiled for F16C here so the build
 * needs no -m flags; called only after the run-time check. */
static bool avx512_hw(void);

__attribute__((target("f16c,avx")))
static void round_fp16_f16c(float *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        __m128i h = _mm256_cvtps_ph(v, 0);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    if (i < n) {
        float buf[8] = {0};
        memcpy(buf, src + i, (n - i) * sizeof *buf);
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(buf), 0);
        _mm256_storeu_ps(buf, _mm256_cvtph_ps(h));
        memcpy(dst + i, buf, (n - i) * sizeof *buf);
    }
}

/* The same conversions 16 lanes at a time where the CPU has AVX-512 (the
 * fp16 candidate's inputs and outputs of every node pass here: cls's
 * fp16-accumulated run spent 15% in the 8-lane loop). */
__attribute__((target("avx512f,f16c,avx")))
static void round_fp16_avx512(float *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm512_maskz_cvtps_ph((__mmask16)0xffff, _mm512_loadu_ps(src + i), 0)));
    if (i < n) round_fp16_f16c(dst + i, src + i, n - i);
}

__attribute__((target("f16c,avx")))
static float round_fp16_f16c_one(float x) {
    return _cvtsh_ss(_cvtss_sh(x, 0));
}
#endif

static bool fp16_hw_allowed = true;

static bool fp16_hw(void) {
#if MPX_HAVE_X86
    return fp16_hw_allowed && __builtin_cpu_supports("avx") && mpx_cpu_has_f16c();
#else
    return false;
#endif
}

bool mpx_fp16_use_hw(bool on) {
    fp16_hw_allowed = on;
    return fp16_hw();
}

void mpx_round_array(const mpx_format *f, float *dst, const float *src, size_t n) {
    switch (f->kind) {
    case MPX_FMT_FP32: round_fp32(dst, src, n); return;
    case MPX_FMT_BF16: round_bf16(dst, src, n); return;
    case MPX_FMT_TF32: round_tf32(dst, src, n); return;
    case MPX_FMT_FP16:
#if MPX_HAVE_X86
        if (fp16_hw()) {
            if (avx512_hw()) round_fp16_avx512(dst, src, n);
            else round_fp16_f16c(dst, src, n);
            return;
        }
#endif
        round_fp16_portable(dst, src, n);
        return;
    case MPX_FMT_FP8E4M3:
    case MPX_FMT_FP8E5M2: round_narrow_array(f, dst, src, n); return;
    }
    /* An unknown kind (a descriptor built elsewhere): the reference is exact. */
    for (size_t i = 0; i < n; i++) dst[i] = mpx_round_scalar(f, src[i]);
}

/* ---- storage encodings --------------------------------------------------------- */

uint32_t mpx_format_encode(const mpx_format *f, float x) {
    uint32_t u = mpx_f32_bits(mpx_round_scalar(f, x));
    int m = f->man_bits;
    /* Same exponent field as fp32: the code is the top bits of the pattern
     * (rounding cleared the rest). */
    if (f->exp_bits == 8) return f->storage_bits == 32 ? u : u >> (23 - m);

    unsigned width = (unsigned)(1 + f->exp_bits + m);
    uint32_t sign = (u >> 31) << (width - 1);
    uint32_t emask = ((1u << f->exp_bits) - 1u) << m;
    uint32_t mmask = (1u << m) - 1u;
    uint32_t a = u & ABS32;
    if (a > INF32) {
        if (f->nan == MPX_NAN_ONE) return sign | emask | mmask;
        return sign | emask | ((a >> (23 - m)) & mmask);
    }
    if (a == INF32) return sign | emask; /* only reached when has_inf */
    if (a == 0) return sign;
    /* a is an fp32 normal: every narrow format's min subnormal is >= 2^-24. */
    int e = (int)(a >> 23) - 127;
    int emin = 1 - f->bias;
    uint32_t frac = a & 0x7fffffu;
    if (e >= emin)
        return sign | ((uint32_t)(e + f->bias) << m) | (frac >> (23 - m));
    uint32_t sig = frac | 0x800000u;
    return sign | (sig >> (unsigned)(23 - m + emin - e));
}

/* fp32 and tf32 codes are fp32 bit patterns; the narrower formats' codes
 * are their element type's, decoded by graph/'s one decoder. */
float mpx_format_decode(const mpx_format *f, uint32_t code) {
    return f->storage_bits == 32 ? mpx_f32_of_bits(code) : mpx_dtype_decode(f->dtype, code);
}

uint16_t mpx_fp16_bits_from_f32(float x) {
    return (uint16_t)mpx_format_encode(&mpx_format_fp16, x);
}

float mpx_fp16_bits_to_f32(uint16_t h) { return mpx_format_decode(&mpx_format_fp16, h); }

uint16_t mpx_bf16_bits_from_f32(float x) {
    return (uint16_t)mpx_format_encode(&mpx_format_bf16, x);
}

float mpx_bf16_bits_to_f32(uint16_t b) { return mpx_format_decode(&mpx_format_bf16, b); }

uint8_t mpx_fp8_bits_from_f32(const mpx_format *f, float x) {
    return (uint8_t)mpx_format_encode(f, x);
}

float mpx_fp8_bits_to_f32(const mpx_format *f, uint8_t b) { return mpx_format_decode(f, b); }

/* The rarer formats, kept out of mpx_round_value's way: a switch compiles to
 * a jump table, and its indirect jump costs more than the rounding itself. */
static float round_value_other(const mpx_format *f, uint32_t u) {
    switch (f->kind) {
    case MPX_FMT_FP32: return mpx_f32_of_bits(quiet_fp32(u));
    case MPX_FMT_TF32: return mpx_f32_of_bits(rne_exp8(u, 13));
    case MPX_FMT_FP8E4M3:
    case MPX_FMT_FP8E5M2: {
        narrow p = narrow_of(f);
        return mpx_f32_of_bits(round_narrow(&p, u));
    }
    case MPX_FMT_FP16: case MPX_FMT_BF16: break;
    }
    return round_ref(f, mpx_f32_of_bits(u));
}

/* s + t, the exact sum, rounded once to f: an accumulation's step (DESIGN
 * section 3). Rounding the fp32 sum to f instead would round twice, and the
 * fp32 sum can land on a midpoint of f that the exact sum is not on (bf16:
 * (1 + 2^-8) + 2^-100 is 1 that way, 1 + 2^-7 exactly; fp16: the running
 * sum plus a product of two fp16 values needs up to 40 bits), where fp16
 * hardware (a fused multiply-add or adder in the format) rounds once. So
 * the fp32 sum is made round-to-odd first: the exact error of the addition
 * (Fast2Sum, larger magnitude first: exact in round-to-nearest, no
 * overflow of its own) tells whether the sum was inexact, and an inexact
 * sum with an even last bit moves one step towards the exact value. fp32
 * has at least two bits more than every format here, and round-to-odd
 * followed by round-to-nearest-even then equals one rounding of the exact
 * value (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums:
 * proved algorithms using rounding to odd", 2008). The step is
 * kern_internal.h's mpx_ro_sum (inline for mpx_acc); finite terms whose sum
 * is beyond fp32 give the largest float there (round-to-odd of a value past
 * it: a saturating fp8 then saturates, as the exact sum would). The GEMM
 * core's vector forms are kern_gemm_body.h's ro8/ro16. */
float mpx_round_sum(const mpx_format *f, float s, float t) {
    if (f->kind == MPX_FMT_FP32) return mpx_round_value(f, s + t);
    return mpx_round_value(f, mpx_ro_sum(s, t));
}

/* n sums side by side, sum[i] = mpx_round_sum(f, sum[i], t[i]): the
 * round-to-odd steps (16 at a time with AVX-512), then one array
 * rounding. */
#if MPX_HAVE_X86
/* The round-to-odd sums of the first whole 16s (round_odd.h); how many. */
__attribute__((target("avx512f"))) static size_t ro_sums_avx512(float *sum, const float *t, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(sum + i, mpx_ro16(_mm512_loadu_ps(sum + i), _mm512_loadu_ps(t + i)));
    return i;
}

/* (__builtin_cpu_supports reads a table the runtime fills at start-up, no
 * CPUID: as fp16_hw's "avx" check) */
static bool avx512_hw(void) { return __builtin_cpu_supports("avx512f"); }
#endif

void mpx_round_sums(const mpx_format *f, float *sum, const float *t, size_t n) {
    if (f->kind == MPX_FMT_FP32) {
        for (size_t i = 0; i < n; i++) sum[i] += t[i];
        return;
    }
    size_t i0 = 0;
#if MPX_HAVE_X86
    if (avx512_hw()) i0 = ro_sums_avx512(sum, t, n);
#endif
    for (size_t i = i0; i < n; i++) sum[i] = mpx_ro_sum(sum[i], t[i]);
    mpx_round_array(f, sum, sum, n);
}

/* Called after every addition of an fp16/bf16 accumulation: those two are
 * tested first, with plain compares. For fp16 a one-value F16C conversion
 * (in its own target-attributed function, behind the CPU check) beats the
 * FP16 library here: about 5 ns per call against 10-16 ns on the development
 * machine (the library's Debian build routes every value through a volatile
 * float, and fp32 subnormal inputs hit microcode assists in its float
 * multiplications). Without F16C the library does it, NaNs handled first as in
 * round_fp16_lib. */
float mpx_round_value(const mpx_format *f, float x) {
    uint32_t u = mpx_f32_bits(x);
    mpx_format_kind k = f->kind;
    if (k == MPX_FMT_FP16) {
#if MPX_HAVE_X86
        if (fp16_hw()) return round_fp16_f16c_one(x);
#endif
        return mpx_f32_of_bits(round_fp16_lib(u));
    }
    if (k == MPX_FMT_BF16) return mpx_f32_of_bits(rne_exp8(u, 16));
    return round_value_other(f, u);
}
