/* test_formats.c - float format descriptors, encodings and rounding, checked
 * against numbers written from the definitions (IEEE 754 binary16, bfloat16,
 * OCP FP8 E4M3FN / E5M2) rather than against the code under test.
 *
 * The exhaustive fast-path-equals-reference check over all 2^32 inputs is
 * tests/test_formats_all.c. */
#include "check.h"
#include "mpx_numerics.h"
#include "kern_internal.h" /* mpx_fp16_round_inline, mpx_ro_sum: the accumulator's inline step */

#include <fp16.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* Rounding x in f gives exactly the fp32 pattern want, by the reference,
 * the array routine (both fp16 paths) and the one-value routine. */
#define CHECK_ROUND(f, x, want) check_round((f), (x), (want), __LINE__)

static void check_round(const mpx_format *f, float x, uint32_t want, int line) {
    uint32_t in = mpx_f32_bits(x);
    uint32_t s = mpx_f32_bits(mpx_round_scalar(f, x));
    CHECK_MSG(s == want, "line %d: %s scalar(0x%08" PRIx32 ") = 0x%08" PRIx32
              ", want 0x%08" PRIx32, line, f->name, in, s, want);
    for (int hw = 1; hw >= 0; hw--) {
        if (f->kind != MPX_FMT_FP16 && hw == 0) break;
        if (f->kind == MPX_FMT_FP16) mpx_fp16_use_hw(hw);
        float out;
        mpx_round_array(f, &out, &x, 1);
        CHECK_MSG(mpx_f32_bits(out) == want, "line %d: %s array%s(0x%08" PRIx32 ") = 0x%08" PRIx32
                  ", want 0x%08" PRIx32, line, f->name, hw ? "" : " portable", in, mpx_f32_bits(out),
                  want);
        uint32_t v = mpx_f32_bits(mpx_round_value(f, x));
        CHECK_MSG(v == want, "line %d: %s value%s(0x%08" PRIx32 ") = 0x%08" PRIx32
                  ", want 0x%08" PRIx32, line, f->name, hw ? "" : " portable", in, v, want);
    }
    mpx_fp16_use_hw(true);
}

static uint32_t pos(float x) { return mpx_f32_bits(x); }
static uint32_t neg(float x) { return mpx_f32_bits(x) | 0x80000000u; }
#define INF 0x7f800000u
#define QNAN 0x7fc00000u

/* ---- the element-type table and the format-to-type map --------------------------- */

/* One map between formats and element types (mpx_format_of_dtype, the
 * formats' dtype column) and one decoder (mpx_dtype_decode): every format
 * with a type round-trips through it and stores in that type's size; the
 * FNUZ types have no format; and a format's codes decode as its type's. */
static void test_dtype_table(void) {
    for (size_t i = 0; i < mpx_format_count(); i++) {
        const mpx_format *f = mpx_format_at(i);
        if (f->dtype == MPX_DT_UNDEFINED) {
            CHECK_MSG(f->kind == MPX_FMT_TF32, "%s has no element type", f->name);
            continue;
        }
        CHECK_MSG(mpx_dtype_is_float(f->dtype), "%s: its type is not a float", f->name);
        CHECK_MSG(mpx_dtype_size(f->dtype) * 8 == (size_t)f->storage_bits, "%s: %d bits, its type %zu bytes",
                  f->name, f->storage_bits, mpx_dtype_size(f->dtype));
        const mpx_format *back = mpx_format_of_dtype(f->dtype, f->overflow != MPX_OVF_NAN);
        CHECK_MSG(back == f, "%s: its type maps to %s", f->name, back ? back->name : "nothing");
        for (uint32_t c = 0; f->storage_bits <= 16 && c < (1u << f->storage_bits); c++) {
            const uint32_t a = mpx_f32_bits(mpx_format_decode(f, c)), b = mpx_f32_bits(mpx_dtype_decode(f->dtype, c));
            if (a != b) CHECK_MSG(a == b, "%s code 0x%x: 0x%08x, its type 0x%08x", f->name, c, a, b);
        }
    }
    CHECK(mpx_format_of_dtype(MPX_DT_DOUBLE, true) == &mpx_format_fp32);
    CHECK(mpx_format_of_dtype(MPX_DT_FLOAT8E4M3FN, false) == &mpx_format_fp8e4m3_nan);
    CHECK(mpx_format_of_dtype(MPX_DT_FLOAT8E4M3FNUZ, true) == NULL);
    CHECK(mpx_format_of_dtype(MPX_DT_FLOAT8E5M2FNUZ, true) == NULL);
    CHECK(mpx_format_of_dtype(MPX_DT_INT8, true) == NULL);
    /* The decoder against fp16.h (the FP16 library) on every code, NaN payloads included;
     * the two zeros by hand (the library's bit conversion counts leading zeros of a zero,
     * undefined behaviour that UBSan reports). */
    for (uint32_t h = 0; h < 65536; h++)
        if (mpx_f32_bits(mpx_dtype_decode(MPX_DT_FLOAT16, h)) !=
            ((h & 0x7fff) ? fp16_ieee_to_fp32_bits((uint16_t)h) : (h & 0x8000u) << 16))
            CHECK_MSG(false, "float16 0x%04x: 0x%08x", h, mpx_f32_bits(mpx_dtype_decode(MPX_DT_FLOAT16, h)));
    /* The types without a format of their own: FNUZ (bias 8 and 16, 0x80 the one NaN, no -0). */
    CHECK(mpx_dtype_decode(MPX_DT_FLOAT8E4M3FNUZ, 0x40) == 1.0f);
    CHECK(mpx_dtype_decode(MPX_DT_FLOAT8E5M2FNUZ, 0x40) == 1.0f);
    CHECK(isnan(mpx_dtype_decode(MPX_DT_FLOAT8E4M3FNUZ, 0x80)));
    CHECK(mpx_dtype_decode(MPX_DT_FLOAT8E4M3FNUZ, 0x01) == ldexpf(1, -10));
    CHECK(mpx_dtype_decode(MPX_DT_DOUBLE, 0x3ff0000000000001ull) == 1.0f);
    CHECK(mpx_dtype_size(MPX_DT_COMPLEX128) == 16 && mpx_dtype_size(MPX_DT_STRING) == 0);
}

/* ---- descriptors and names ----------------------------------------------- */

static void test_descriptors(void) {
    const mpx_format *f16 = &mpx_format_fp16, *b16 = &mpx_format_bf16;
    CHECK(f16->max_finite == 65504.0f && f16->min_normal == ldexpf(1, -14) &&
          f16->min_subnormal == ldexpf(1, -24));
    CHECK(b16->max_finite == ldexpf(255, 120) && b16->min_subnormal == ldexpf(1, -133));
    CHECK(mpx_format_tf32.max_finite == ldexpf(2047, 117) &&
          mpx_format_tf32.min_subnormal == ldexpf(1, -136));
    CHECK(mpx_format_fp32.max_finite == 0x1.fffffep127f);
    /* OCP FP8: E4M3FN max S.1111.110 = 448, min subnormal 2^-9, no inf;
     * E5M2 max S.11110.11 = 57344, min subnormal 2^-16. */
    CHECK(mpx_format_fp8e4m3_sat.max_finite == 448.0f && !mpx_format_fp8e4m3_sat.has_inf);
    CHECK(mpx_format_fp8e4m3_nan.max_finite == 448.0f && !mpx_format_fp8e4m3_nan.has_inf);
    CHECK(mpx_format_fp8e4m3_sat.min_normal == ldexpf(1, -6) &&
          mpx_format_fp8e4m3_sat.min_subnormal == ldexpf(1, -9));
    CHECK(mpx_format_fp8e5m2.max_finite == 57344.0f && mpx_format_fp8e5m2.has_inf &&
          mpx_format_fp8e5m2.min_subnormal == ldexpf(1, -16));
    CHECK(mpx_format_max(f16) == 65504.0f);

    CHECK(mpx_format_count() == 7);
    for (size_t i = 0; i < mpx_format_count(); i++) {
        const mpx_format *f = mpx_format_at(i);
        CHECK(f != NULL && mpx_format_by_name(f->name) == f);
        /* The descriptor's numbers follow from its field widths. */
        int emin = 1 - f->bias;
        CHECK_MSG(f->min_normal == ldexpf(1, emin), "%s min_normal", f->name);
        CHECK_MSG(f->min_subnormal == ldexpf(1, emin - f->man_bits), "%s min_subnormal",
                  f->name);
        CHECK_MSG(f->storage_bits == (f->kind == MPX_FMT_TF32 ? 32 : 1 + f->exp_bits + f->man_bits),
                  "%s storage_bits", f->name);
    }
    CHECK(mpx_format_at(mpx_format_count()) == NULL);

    CHECK(mpx_format_by_name("fp16") == f16);
    CHECK(mpx_format_by_name("BF16") == b16);
    CHECK(mpx_format_by_name("Fp8E4M3") == &mpx_format_fp8e4m3_sat);
    CHECK(mpx_format_by_name("fp8e4m3sat") == &mpx_format_fp8e4m3_sat);
    /* one spelling printed: what users type */
    CHECK(strcmp(mpx_format_name(&mpx_format_fp8e4m3_sat), "fp8e4m3") == 0);
    CHECK(mpx_format_by_name("fp8e4m3nan") == &mpx_format_fp8e4m3_nan);
    CHECK(mpx_format_by_name("fp8e5m2") == &mpx_format_fp8e5m2);
    CHECK(mpx_format_by_name("tf32") == &mpx_format_tf32);
    CHECK(mpx_format_by_name("FP32") == &mpx_format_fp32);
    CHECK(mpx_format_by_name("fp") == NULL);
    CHECK(mpx_format_by_name("fp16x") == NULL);
    CHECK(mpx_format_by_name("float16") == NULL);
    CHECK(mpx_format_by_name("") == NULL);
    CHECK(mpx_format_by_name(NULL) == NULL);

    CHECK(mpx_format_is_subnormal(f16, ldexpf(1, -15)));
    CHECK(mpx_format_is_subnormal(f16, -ldexpf(1, -24)));
    CHECK(!mpx_format_is_subnormal(f16, ldexpf(1, -14)));
    CHECK(!mpx_format_is_subnormal(f16, 0.0f) && !mpx_format_is_subnormal(f16, -0.0f));
    CHECK(mpx_format_is_subnormal(&mpx_format_fp8e4m3_sat, 0.01f));
    CHECK(!mpx_format_is_subnormal(&mpx_format_fp8e4m3_sat, 0.02f));
}

/* ---- every 16-bit pattern ----------------------------------------------- */

/* binary16 from its fields, as the standard defines it. */
static float fp16_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

static void test_fp16_patterns(void) {
    int bad_rt = 0, bad_val = 0, bad_lib = 0, bad_fix = 0, nans = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        float x = mpx_fp16_bits_to_f32(h);
        uint32_t u = mpx_f32_bits(x);
        uint16_t back = mpx_fp16_bits_from_f32(x);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan) {
            nans++;
            /* Decoding keeps the payload (a signalling NaN stays signalling);
             * encoding quiets it and keeps the sign and the payload. */
            if (!is_nan_bits(u) || (u >> 31) != (uint32_t)(h >> 15) ||
                ((u >> 13) & 0x3ff) != (h & 0x3ffu) || back != (h | 0x200))
                bad_rt++;
            continue;
        }
        if (back != h) bad_rt++;
        bool inf = (h & 0x7fff) == 0x7c00;
        float want = inf ? ((h & 0x8000) ? -INFINITY : INFINITY) : fp16_value(h);
        if (u != mpx_f32_bits(want)) bad_val++;
        /* The FP16 library's bit-exact decoder agrees (except on zeros, which
         * it must not see: it calls __builtin_clz(0), undefined behaviour that
         * UBSan reports). */
        if ((h & 0x7fff) && u != fp16_ieee_to_fp32_bits(h)) bad_lib++;
        /* A value of the format is a fixed point of every rounding path. */
        float r;
        mpx_round_array(&mpx_format_fp16, &r, &x, 1);
        if (mpx_f32_bits(mpx_round_scalar(&mpx_format_fp16, x)) != u || mpx_f32_bits(r) != u ||
            mpx_f32_bits(mpx_round_value(&mpx_format_fp16, x)) != u)
            bad_fix++;
    }
    CHECK_MSG(bad_rt == 0, "%d fp16 patterns do not round-trip", bad_rt);
    CHECK_MSG(bad_val == 0, "%d fp16 patterns decode to the wrong value", bad_val);
    CHECK_MSG(bad_lib == 0, "%d fp16 patterns decode unlike fp16.h", bad_lib);
    CHECK_MSG(bad_fix == 0, "%d fp16 values are not fixed points of rounding", bad_fix);
    CHECK(nans == 2 * 1023);
}

static void test_bf16_patterns(void) {
    int bad_rt = 0, bad_val = 0, bad_fix = 0, nans = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t b = (uint16_t)c;
        float x = mpx_bf16_bits_to_f32(b);
        uint32_t u = mpx_f32_bits(x);
        uint16_t back = mpx_bf16_bits_from_f32(x);
        /* bfloat16 is the top half of binary32. */
        if (u != (uint32_t)b << 16) bad_val++;
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) {
            nans++;
            if (back != (b | 0x40)) bad_rt++;
            continue;
        }
        if (back != b) bad_rt++;
        float r;
        mpx_round_array(&mpx_format_bf16, &r, &x, 1);
        if (mpx_f32_bits(mpx_round_scalar(&mpx_format_bf16, x)) != u || mpx_f32_bits(r) != u ||
            mpx_f32_bits(mpx_round_value(&mpx_format_bf16, x)) != u)
            bad_fix++;
    }
    CHECK_MSG(bad_rt == 0, "%d bf16 patterns do not round-trip", bad_rt);
    CHECK_MSG(bad_val == 0, "%d bf16 patterns decode to the wrong value", bad_val);
    CHECK_MSG(bad_fix == 0, "%d bf16 values are not fixed points of rounding", bad_fix);
    CHECK(nans == 2 * 127);
}

/* ---- every fp8 pattern --------------------------------------------------------- */

/* OCP FP8 from the fields. E4M3FN: bias 7, S.1111.111 is NaN, no inf.
 * E5M2: bias 15, IEEE specials. */
static uint32_t fp8_value_bits(bool e4m3, uint8_t c) {
    int mb = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emax_field = e4m3 ? 15 : 31;
    int e = (c & 0x7f) >> mb, m = c & ((1 << mb) - 1);
    uint32_t sign = (uint32_t)(c >> 7) << 31;
    if (e4m3 && e == emax_field && m == 7) return sign | QNAN;
    if (!e4m3 && e == emax_field) return sign | (m ? QNAN | ((uint32_t)m << 21) : INF);
    float v = e == 0 ? ldexpf((float)m, 1 - bias - mb)
                     : ldexpf((float)((1 << mb) + m), e - bias - mb);
    return sign | mpx_f32_bits(v);
}

static void test_fp8_patterns(const mpx_format *f) {
    bool e4m3 = f->kind == MPX_FMT_FP8E4M3;
    int bad = 0, nans = 0;
    float prev = -1.0f;
    for (uint32_t c = 0; c < 256; c++) {
        uint8_t b = (uint8_t)c;
        float x = mpx_fp8_bits_to_f32(f, b);
        uint32_t u = mpx_f32_bits(x), want = fp8_value_bits(e4m3, b);
        bool nan = is_nan_bits(want);
        if (nan) {
            nans++;
            /* E5M2 keeps the quiet bit of the code as fp32's: both of its
             * top payload bits survive decoding. */
            bool ok = is_nan_bits(u) && (u >> 31) == (c >> 7) &&
                      (e4m3 || ((u >> 21) & 3u) == (c & 3u));
            uint8_t back = mpx_fp8_bits_from_f32(f, x);
            ok = ok && (e4m3 ? back == b : back == (b | 2u));
            if (!ok) {
                bad++;
                fprintf(stderr, "%s NaN code 0x%02x decodes to 0x%08" PRIx32
                        ", encodes back to 0x%02x\n", f->name, c, u, back);
            }
            continue;
        }
        uint8_t back = mpx_fp8_bits_from_f32(f, x);
        float r;
        mpx_round_array(f, &r, &x, 1);
        bool ok = u == want && back == b && mpx_f32_bits(mpx_round_scalar(f, x)) == u &&
                  mpx_f32_bits(r) == u && mpx_f32_bits(mpx_round_value(f, x)) == u;
        if (!ok) {
            bad++;
            fprintf(stderr, "%s code 0x%02x: decodes to 0x%08" PRIx32 " (want 0x%08" PRIx32
                    "), encodes back to 0x%02x\n", f->name, c, u, want, back);
        }
        /* Positive codes increase in value up to the max. */
        if (c < 0x80 && !isinf(x)) {
            if (!(x > prev || c == 0)) bad++;
            prev = x;
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of 256 codes wrong", f->name, bad);
    CHECK_MSG(nans == (e4m3 ? 2 : 6), "%s: %d NaN codes", f->name, nans);
    CHECK(prev == f->max_finite);
    CHECK(mpx_fp8_bits_from_f32(f, -0.0f) == 0x80 && mpx_fp8_bits_from_f32(f, 0.0f) == 0);
}

/* ---- ties between neighbours ---------------------------------------------------- */

/* For consecutive positive finite values a < b of f (codes lo, lo+1): the
 * midpoint goes to the one with the even code, the fp32 neighbours of the
 * midpoint to the nearer one. Tests the rounding against the definition over
 * every pair of adjacent values up to max_code (the largest finite one).
 * decode maps a code to its fp32 value. */
static void test_ties(const mpx_format *f, uint32_t max_code,
                      float (*decode)(const mpx_format *, uint32_t)) {
    int bad = 0;
    for (uint32_t lo = 0; lo < max_code; lo++) {
        float a = decode(f, lo), b = decode(f, lo + 1);
        float mid = a / 2 + b / 2; /* exact: one bit more than the format; no overflow */
        float even = (lo & 1) ? b : a;
        float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
        float r_mid = mpx_round_scalar(f, mid), r_lo = mpx_round_scalar(f, below),
              r_hi = mpx_round_scalar(f, above);
        if (mpx_f32_bits(r_mid) != mpx_f32_bits(even) || mpx_f32_bits(r_lo) != mpx_f32_bits(a) ||
            mpx_f32_bits(r_hi) != mpx_f32_bits(b)) {
            if (bad++ < 5)
                fprintf(stderr, "%s ties %g|%g: mid %a -> %a, below -> %a, above -> %a\n",
                        f->name, (double)a, (double)b, (double)mid, (double)r_mid,
                        (double)r_lo, (double)r_hi);
        }
        /* Negative side mirrors it. */
        if (mpx_f32_bits(mpx_round_scalar(f, -mid)) != (mpx_f32_bits(even) | 0x80000000u)) bad++;
    }
    CHECK_MSG(bad == 0, "%s: %d adjacent pairs round wrongly", f->name, bad);
}

static float decode_code(const mpx_format *f, uint32_t c) { return mpx_format_decode(f, c); }

/* ---- named edge cases ------------------------------------------------------------ */

static void test_fp16_edges(void) {
    const mpx_format *f = &mpx_format_fp16;
    CHECK_ROUND(f, 65504.0f, pos(65504.0f));
    CHECK_ROUND(f, 65519.99f, pos(65504.0f));
    CHECK_ROUND(f, nextafterf(65520.0f, 0), pos(65504.0f));
    CHECK_ROUND(f, 65520.0f, INF);          /* the tie past max overflows (IEEE) */
    CHECK_ROUND(f, -65520.0f, neg(INFINITY));
    CHECK_ROUND(f, 1e10f, INF);
    CHECK_ROUND(f, 0x1.fffffep127f, INF);
    CHECK_ROUND(f, INFINITY, INF);
    CHECK_ROUND(f, -INFINITY, neg(INFINITY));
    CHECK_ROUND(f, ldexpf(1, -24), pos(ldexpf(1, -24)));
    CHECK_ROUND(f, ldexpf(1, -25), pos(0.0f));              /* tie: 0 is even */
    CHECK_ROUND(f, -ldexpf(1, -25), neg(0.0f));
    CHECK_ROUND(f, nextafterf(ldexpf(1, -25), 1), pos(ldexpf(1, -24)));
    CHECK_ROUND(f, 3 * ldexpf(1, -26), pos(ldexpf(1, -24)));
    CHECK_ROUND(f, 3 * ldexpf(1, -25), pos(ldexpf(1, -23))); /* tie 1|2 ulps -> 2 */
    CHECK_ROUND(f, 5 * ldexpf(1, -25), pos(ldexpf(1, -23))); /* tie 2|3 ulps -> 2 */
    CHECK_ROUND(f, ldexpf(1023, -24), pos(ldexpf(1023, -24))); /* largest subnormal */
    CHECK_ROUND(f, ldexpf(2047, -25), pos(ldexpf(1, -14)));    /* tie -> min normal */
    CHECK_ROUND(f, ldexpf(1, -140), pos(0.0f));  /* fp32 subnormal */
    CHECK_ROUND(f, -ldexpf(1, -149), neg(0.0f));
    CHECK_ROUND(f, 0.0f, pos(0.0f));
    CHECK_ROUND(f, -0.0f, neg(0.0f));
    CHECK_ROUND(f, 1.0f + ldexpf(1, -11), pos(1.0f));                 /* tie -> even */
    CHECK_ROUND(f, 1.0f + 3 * ldexpf(1, -11), pos(1.0f + ldexpf(1, -9)));
    CHECK_ROUND(f, 2049.0f, pos(2048.0f));
    CHECK_ROUND(f, 2051.0f, pos(2052.0f));
    CHECK_ROUND(f, 0.1f, pos(0x1.998p-4f));
    /* NaNs: quiet, sign and the top 10 payload bits kept (as F16C). */
    CHECK_ROUND(f, mpx_f32_of_bits(0x7fc12345u), 0x7fc12000u);
    CHECK_ROUND(f, mpx_f32_of_bits(0xffc00001u), 0xffc00000u);
    CHECK_ROUND(f, mpx_f32_of_bits(0x7f802000u), 0x7fc02000u);   /* signalling, payload 1 */
    CHECK_ROUND(f, mpx_f32_of_bits(0x7f800001u), 0x7fc00000u);   /* payload below fp16's bits */
    CHECK_ROUND(f, mpx_f32_of_bits(0xffbfe000u), 0xffffe000u);
    CHECK(mpx_fp16_bits_from_f32(1.0f) == 0x3c00);
    CHECK(mpx_fp16_bits_from_f32(-2.0f) == 0xc000);
    CHECK(mpx_fp16_bits_from_f32(65504.0f) == 0x7bff);
    CHECK(mpx_fp16_bits_from_f32(65520.0f) == 0x7c00);
    CHECK(mpx_fp16_bits_from_f32(ldexpf(1, -24)) == 0x0001);
    CHECK(mpx_fp16_bits_from_f32(-0.0f) == 0x8000);
    CHECK(mpx_fp16_bits_from_f32(mpx_f32_of_bits(0x7fc12345u)) == 0x7e09);
    CHECK(mpx_fp16_bits_from_f32(mpx_f32_of_bits(0xff800001u)) == 0xfe00);
    CHECK(mpx_f32_bits(mpx_fp16_bits_to_f32(0x7c01)) == 0x7f802000u); /* decoding is exact */
}

static void test_bf16_edges(void) {
    const mpx_format *f = &mpx_format_bf16;
    float max = 0x1.fep127f;
    CHECK_ROUND(f, max, pos(max));
    CHECK_ROUND(f, nextafterf(0x1.ffp127f, 0), pos(max));
    CHECK_ROUND(f, 0x1.ffp127f, INF);           /* tie with 2^128: max's code is odd */
    CHECK_ROUND(f, 0x1.fffffep127f, INF);
    CHECK_ROUND(f, -0x1.fffffep127f, neg(INFINITY));
    CHECK_ROUND(f, INFINITY, INF);
    CHECK_ROUND(f, 1.0f + ldexpf(1, -8), pos(1.0f));
    CHECK_ROUND(f, 1.0f + 3 * ldexpf(1, -8), pos(1.0f + ldexpf(1, -6)));
    CHECK_ROUND(f, 3.14159265f, pos(3.140625f));
    /* fp32 subnormals: bf16 shares fp32's exponent, so it has them too. */
    CHECK_ROUND(f, mpx_f32_of_bits(0x00008000u), pos(0.0f));          /* tie -> 0 */
    CHECK_ROUND(f, mpx_f32_of_bits(0x00018000u), 0x00020000u);        /* tie -> even */
    CHECK_ROUND(f, mpx_f32_of_bits(0x80008001u), 0x80010000u);
    CHECK_ROUND(f, mpx_f32_of_bits(0x007fffffu), 0x00800000u);        /* up to min normal */
    CHECK_ROUND(f, -0.0f, neg(0.0f));
    CHECK_ROUND(f, mpx_f32_of_bits(0x7f812345u), 0x7fc10000u);
    CHECK_ROUND(f, mpx_f32_of_bits(0xff800001u), 0xffc00000u);
    CHECK(mpx_bf16_bits_from_f32(1.0f) == 0x3f80);
    CHECK(mpx_bf16_bits_from_f32(-INFINITY) == 0xff80);
    CHECK(mpx_bf16_bits_from_f32(0x1.ffp127f) == 0x7f80);
}

static void test_tf32_fp32_edges(void) {
    const mpx_format *t = &mpx_format_tf32, *f = &mpx_format_fp32;
    CHECK_ROUND(t, 1.0f + ldexpf(1, -11), pos(1.0f));
    CHECK_ROUND(t, 1.0f + 3 * ldexpf(1, -11), pos(1.0f + ldexpf(1, -9)));
    CHECK_ROUND(t, 0x1.ffep127f, INF);
    CHECK_ROUND(t, 0x1.ffdp127f, pos(0x1.ffcp127f));
    CHECK_ROUND(t, mpx_f32_of_bits(0x00001000u), pos(0.0f));
    CHECK_ROUND(t, mpx_f32_of_bits(0x00003000u), 0x00004000u);
    CHECK_ROUND(t, mpx_f32_of_bits(0x7f800001u), 0x7fc00000u);
    CHECK(mpx_format_encode(t, 1.0f) == 0x3f800000u);
    CHECK_ROUND(f, 0.1f, pos(0.1f));
    CHECK_ROUND(f, mpx_f32_of_bits(0x00000001u), 0x00000001u);
    CHECK_ROUND(f, -0.0f, neg(0.0f));
    CHECK_ROUND(f, mpx_f32_of_bits(0x7f800001u), 0x7fc00001u);    /* quieted, payload kept */
    CHECK_ROUND(f, mpx_f32_of_bits(0xffc00005u), 0xffc00005u);
    CHECK_ROUND(f, -INFINITY, neg(INFINITY));
}

static void test_fp8_edges(void) {
    const mpx_format *s = &mpx_format_fp8e4m3_sat, *n = &mpx_format_fp8e4m3_nan,
                     *e5 = &mpx_format_fp8e5m2;
    /* E4M3: 448 is max; 464 is the tie between 448 and the would-be 480, and
     * goes to 448 (even code) in both settings; anything above overflows. */
    for (int k = 0; k < 2; k++) {
        const mpx_format *f = k ? n : s;
        uint32_t ovf = k ? QNAN : pos(448.0f);
        CHECK_ROUND(f, 448.0f, pos(448.0f));
        CHECK_ROUND(f, 464.0f, pos(448.0f));
        CHECK_ROUND(f, -464.0f, neg(448.0f));
        CHECK_ROUND(f, 465.0f, ovf);
        CHECK_ROUND(f, nextafterf(464.0f, 1000.0f), ovf);
        CHECK_ROUND(f, 480.0f, ovf);
        CHECK_ROUND(f, 1e30f, ovf);
        CHECK_ROUND(f, -1e30f, ovf | 0x80000000u);
        CHECK_ROUND(f, INFINITY, ovf);                  /* no inf in E4M3FN */
        CHECK_ROUND(f, -INFINITY, ovf | 0x80000000u);
        CHECK_ROUND(f, NAN, QNAN);
        CHECK_ROUND(f, mpx_f32_of_bits(0xff812345u), 0xffc00000u); /* the one NaN, signed */
        CHECK_ROUND(f, ldexpf(1, -9), pos(ldexpf(1, -9)));  /* min subnormal */
        CHECK_ROUND(f, ldexpf(1, -10), pos(0.0f));          /* tie -> 0 */
        CHECK_ROUND(f, -ldexpf(1, -10), neg(0.0f));
        CHECK_ROUND(f, 3 * ldexpf(1, -11), pos(ldexpf(1, -9)));
        CHECK_ROUND(f, 3 * ldexpf(1, -10), pos(ldexpf(1, -8))); /* tie 1|2 -> 2 */
        CHECK_ROUND(f, ldexpf(15, -10), pos(ldexpf(1, -6)));    /* tie 7|8 -> min normal */
        CHECK_ROUND(f, 17.0f, pos(16.0f));
        CHECK_ROUND(f, 19.0f, pos(20.0f));
        CHECK(mpx_fp8_bits_from_f32(f, 448.0f) == 0x7e);
        CHECK(mpx_fp8_bits_from_f32(f, -448.0f) == 0xfe);
        CHECK(mpx_fp8_bits_from_f32(f, NAN) == 0x7f);
        CHECK(mpx_fp8_bits_from_f32(f, 1.0f) == 0x38);
        CHECK(mpx_fp8_bits_from_f32(f, ldexpf(1, -9)) == 0x01);
    }
    CHECK(mpx_fp8_bits_from_f32(s, INFINITY) == 0x7e);
    CHECK(mpx_fp8_bits_from_f32(n, INFINITY) == 0x7f);
    CHECK(mpx_fp8_bits_from_f32(n, -1e9f) == 0xff);

    /* E5M2: IEEE-like; 61440 is the tie between max 57344 and 2^16 -> inf. */
    CHECK_ROUND(e5, 57344.0f, pos(57344.0f));
    CHECK_ROUND(e5, 61439.0f, pos(57344.0f));
    CHECK_ROUND(e5, 61440.0f, INF);
    CHECK_ROUND(e5, -61440.0f, neg(INFINITY));
    CHECK_ROUND(e5, INFINITY, INF);
    CHECK_ROUND(e5, ldexpf(1, -16), pos(ldexpf(1, -16)));
    CHECK_ROUND(e5, ldexpf(1, -17), pos(0.0f));
    CHECK_ROUND(e5, 3 * ldexpf(1, -18), pos(ldexpf(1, -16)));
    CHECK_ROUND(e5, 1.125f, pos(1.0f));
    CHECK_ROUND(e5, 1.375f, pos(1.5f));
    CHECK_ROUND(e5, mpx_f32_of_bits(0x7fa00000u), 0x7fe00000u);  /* top 2 payload bits kept */
    CHECK_ROUND(e5, mpx_f32_of_bits(0xff900000u), 0xffc00000u);
    CHECK(mpx_fp8_bits_from_f32(e5, 57344.0f) == 0x7b);
    CHECK(mpx_fp8_bits_from_f32(e5, 61440.0f) == 0x7c);
    CHECK(mpx_fp8_bits_from_f32(e5, -INFINITY) == 0xfc);
    CHECK(mpx_fp8_bits_from_f32(e5, mpx_f32_of_bits(0x7fa00000u)) == 0x7f);
    CHECK(mpx_fp8_bits_from_f32(e5, NAN) == 0x7e);
}

/* ---- fast paths against the reference on a random sample -------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(void) {
    /* xorshift64*: enough to spread bit patterns. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545f4914f6cdd1du) >> 32);
}

static void test_random_sample(void) {
    enum { N = 1 << 20 };
    float *src = malloc(N * sizeof *src), *arr = malloc(N * sizeof *arr),
          *ref = malloc(N * sizeof *ref);
    if (!src || !arr || !ref) {
        CHECK_MSG(0, "out of memory");
        free(src);
        free(arr);
        free(ref);
        return;
    }
    for (size_t i = 0; i < N; i++) {
        uint32_t u = rnd();
        /* Half raw patterns, half values near 1, where the formats' ulps and
         * ties are (random patterns are mostly huge or tiny). */
        if (i & 1) u = (u & 0x80ffffffu) | (((u >> 24) % 48 + 100) << 23);
        src[i] = mpx_f32_of_bits(u);
    }
    for (size_t k = 0; k < mpx_format_count(); k++) {
        const mpx_format *f = mpx_format_at(k);
        for (int hw = 1; hw >= 0; hw--) {
            if (f->kind != MPX_FMT_FP16 && hw == 0) break;
            mpx_fp16_use_hw(hw);
            int bad_a = 0, bad_v = 0, bad_r = 0;
            mpx_round_array(f, arr, src, N);
            mpx_round_reference_array(f, ref, src, N);
            for (size_t i = 0; i < N; i++) {
                uint32_t want = mpx_f32_bits(mpx_round_scalar(f, src[i]));
                if (mpx_f32_bits(ref[i]) != want) bad_r++;
                if (mpx_f32_bits(arr[i]) != want) bad_a++;
                if (mpx_f32_bits(mpx_round_value(f, src[i])) != want) bad_v++;
            }
            CHECK_MSG(bad_a == 0 && bad_v == 0 && bad_r == 0,
                      "%s%s: of %d random inputs, array differs on %d, value on %d, "
                      "reference array on %d", f->name, hw ? "" : " (portable)", N, bad_a,
                      bad_v, bad_r);
            /* In place (dst == src) gives the same. */
            memcpy(arr, src, N * sizeof *arr);
            mpx_round_array(f, arr, arr, N);
            CHECK_MSG(memcmp(arr, ref, N * sizeof *arr) == 0, "%s: in-place rounding differs",
                      f->name);
        }
        mpx_fp16_use_hw(true);
    }
    /* Odd lengths exercise the F16C tail. */
    for (size_t n = 0; n < 20; n++) {
        float a[20], b[20];
        mpx_round_array(&mpx_format_fp16, a, src, n);
        mpx_round_reference_array(&mpx_format_fp16, b, src, n);
        CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "fp16 length %zu", n);
    }
    free(src);
    free(arr);
    free(ref);
}


/* ---- one rounding of a sum (mpx_round_sum) ---------------------------------- */

/* s + t rounded to 24 bits by round-to-odd, in integers (no floating-point
 * addition): both as 24-bit integers times powers of two, a term more
 * than 100 binades below the other replaced by one bit of its sign there
 * (it only ever decides the sticky bit), the sum exact in 128 bits. Then
 * rounded to f by the reference rounding. Operands and sums stay within
 * fp32's normal range. */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static float ref_round_sum(const mpx_format *f, float s, float t) {
    int es, et;
    double fs = frexp(s, &es), ft = frexp(t, &et);
    int64_t ms = (int64_t)ldexp(fs, 24), mt = (int64_t)ldexp(ft, 24);
    es -= 24, et -= 24;
    if (ms == 0) es = et;
    if (mt == 0) et = es;
    if (ms != 0 && mt != 0) {
        if (es - et > 100) mt = mt < 0 ? -1 : 1, et = es - 100;
        if (et - es > 100) ms = ms < 0 ? -1 : 1, es = et - 100;
    }
    const int e0 = es < et ? es : et;
    i128 m = (i128)ms * ((i128)1 << (es - e0)) + (i128)mt * ((i128)1 << (et - e0));
    const bool neg = m < 0;
    u128 u = (u128)(neg ? -m : m);
    int e = e0, h = -1;
    for (u128 v = u; v; v >>= 1) h++;
    if (h >= 24) {
        const int sh = h - 23;
        const bool sticky = (u & ((((u128)1) << sh) - 1)) != 0;
        u >>= sh;
        if (sticky) u |= 1;
        e += sh;
    }
    const float r = (float)ldexp((double)(uint64_t)u, e);
    return mpx_round_scalar(f, neg ? -r : r);
}

#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 15) || \
                            (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#include <cpuid.h>
#include <immintrin.h>
/* The CPU's own fp16 fused multiply-add: c + a * b rounded once to fp16 */
__attribute__((target("avx512fp16,avx512vl,avx512f"))) static float hw_fma16(float a, float b, float c) {
    const __m128h ha = _mm_cvtss_sh(_mm_setzero_ph(), _mm_set_ss(a));
    const __m128h hb = _mm_cvtss_sh(_mm_setzero_ph(), _mm_set_ss(b));
    const __m128h hc = _mm_cvtss_sh(_mm_setzero_ph(), _mm_set_ss(c));
    return _mm_cvtss_f32(_mm_cvtsh_ss(_mm_setzero_ps(), _mm_fmadd_sh(ha, hb, hc)));
}
static bool have_fp16_fma(void) {
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
           (d & (1u << 23));
}
#else
static float hw_fma16(float a, float b, float c) { return a * b + c; }
static bool have_fp16_fma(void) { return false; }
#endif

static float fp16_at(uint16_t h) { return fp16_ieee_to_fp32_value(h); }

static void test_round_sum(void) {
    const mpx_format *b16 = &mpx_format_bf16, *h16 = &mpx_format_fp16;
    /* Twice rounded, (1 + 2^-8) + 2^-100 is a tie in fp32 and goes to 1
     * (even); the exact sum is above the midpoint. */
    CHECK(mpx_round_sum(b16, 0x1.01p0f, 0x1p-100f) == 0x1.02p0f);
    CHECK(mpx_round_sum(b16, 0x1.01p0f, -0x1p-100f) == 0x1p0f);
    CHECK(mpx_round_value(b16, 0x1.01p0f + 0x1p-100f) == 0x1p0f);
    /* fp16: a running sum of 1 and a term 2^-11 + 2^-36 (a 26-bit value, so
     * an fp32 term, not an fp16 product): the fp32 sum is the midpoint
     * 1 + 2^-11 */
    CHECK(mpx_round_sum(h16, 1.0f, 0x1p-11f + 0x1p-34f) == 0x1.004p0f);
    CHECK(mpx_round_value(h16, 1.0f + (0x1p-11f + 0x1p-34f)) == 1.0f);
    CHECK(mpx_round_sum(h16, 1.0f, 0x1p-11f) == 1.0f); /* a real tie: even */
    CHECK(mpx_round_sum(h16, 2048.0f, 1.0f) == 2048.0f);
    CHECK(mpx_round_sum(h16, 2048.0f, 0x1.000002p0f) == 2050.0f);
    CHECK(mpx_round_sum(h16, 2048.0f, -0x1.000002p-1f) == 2047.0f); /* fp32: 2047.5, even 2048 */
    /* overflow, zeros, non-finite operands */
    CHECK(isinf(mpx_round_sum(h16, 65504.0f, 16.0f)));
    CHECK(mpx_round_sum(h16, 65504.0f, 15.0f) == 65504.0f);
    CHECK(isinf(mpx_round_sum(b16, 0x1.fep127f, 0x1p120f)));
    CHECK(mpx_round_sum(&mpx_format_fp8e4m3_sat, 0x1.fffffep127f, 0x1p127f) == 448.0f);
    CHECK(mpx_f32_bits(mpx_round_sum(h16, 0.0f, -0.0f)) == 0u);
    CHECK(mpx_f32_bits(mpx_round_sum(h16, -0.0f, -0.0f)) == 0x80000000u);
    CHECK(mpx_f32_bits(mpx_round_sum(h16, 1.5f, -1.5f)) == 0u);
    CHECK(isnan(mpx_round_sum(h16, INFINITY, -INFINITY)));
    CHECK(mpx_round_sum(b16, -INFINITY, 1.0f) == -INFINITY);
    CHECK(isnan(mpx_round_sum(b16, NAN, 1.0f)));
    CHECK(mpx_round_sum(&mpx_format_fp32, 1.0f, 0x1p-24f) == 1.0f);

    /* Random sums against the integer reference: every format the
     * accumulation takes, terms of every magnitude relation (equal
     * exponents to 120 binades apart), both signs. */
    const mpx_format *fmts[] = {h16, b16, &mpx_format_tf32, &mpx_format_fp8e4m3_sat,
                                &mpx_format_fp8e5m2};
    srand(7);
    int bad = 0;
    for (size_t fi = 0; fi < sizeof fmts / sizeof *fmts; fi++)
        for (int i = 0; i < 400000; i++) {
            const mpx_format *f = fmts[fi];
            int lo = f == h16 ? -24 : f == &mpx_format_fp8e5m2 ? -16 : f == &mpx_format_fp8e4m3_sat ? -9 : -60;
            int hi = f == h16 ? 14 : f == &mpx_format_fp8e5m2 ? 14 : f == &mpx_format_fp8e4m3_sat ? 7 : 60;
            float s = mpx_round_scalar(f, ldexpf((float)rand() / (float)RAND_MAX + 1.0f, lo + rand() % (hi - lo + 1)));
            float t = ldexpf(1.0f + (float)rand() / (float)RAND_MAX, lo - 60 + rand() % (hi - lo + 80));
            if (rand() & 1) t = -t;
            if (rand() & 1) s = -s;
            if (rand() % 4 == 0) /* near a midpoint of s's neighbourhood */
                t = (s * (float)(1 + rand() % 9)) * 0x1p-11f + ldexpf((float)(rand() % 3) - 1.0f, -30 - rand() % 60);
            float want = ref_round_sum(f, s, t), got = mpx_round_sum(f, s, t);
            if (mpx_f32_bits(want) != mpx_f32_bits(got) && !(isnan(want) && isnan(got))) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: %a + %a: got %a want %a\n", f->name, (double)s, (double)t,
                            (double)got, (double)want);
            }
        }
    CHECK_MSG(bad == 0, "%d random sums differ from the integer reference", bad);

    /* The side-by-side form gives each lane mpx_round_sum's value, the
     * edge cases among them. */
    enum { NS = 4096 };
    static float ss[NS], ts[NS], want_s[NS];
    const float edge[] = {0.0f, -0.0f, 65504.0f, -65504.0f, 0x1.fffffep127f, -0x1.fffffep127f, INFINITY,
                          -INFINITY, NAN, 0x1p-24f, 0x1p-149f, 1.0f, 0x1.01p0f, 0x1p-11f};
    const int nedge = (int)(sizeof edge / sizeof *edge);
    int sbad = 0;
    for (size_t fi = 0; fi < sizeof fmts / sizeof *fmts; fi++) {
        for (int i = 0; i < NS; i++) {
            if (i < nedge * nedge) {
                ss[i] = edge[i / nedge], ts[i] = edge[i % nedge];
            } else {
                ss[i] = mpx_round_scalar(fmts[fi], ldexpf((float)rand() / (float)RAND_MAX, rand() % 30 - 15));
                ts[i] = ldexpf((float)rand() / (float)RAND_MAX - 0.5f, rand() % 60 - 40);
            }
            want_s[i] = mpx_round_sum(fmts[fi], ss[i], ts[i]);
        }
        mpx_round_sums(fmts[fi], ss, ts, NS);
        for (int i = 0; i < NS; i++)
            if (mpx_f32_bits(ss[i]) != mpx_f32_bits(want_s[i]) && !(isnan(ss[i]) && isnan(want_s[i])) && sbad++ < 5)
                fprintf(stderr, "%s: lane %d: %a, one at a time %a\n", fmts[fi]->name, i, (double)ss[i],
                        (double)want_s[i]);
    }
    CHECK_MSG(sbad == 0, "%d lanes of mpx_round_sums differ from mpx_round_sum", sbad);

    /* The accumulator's inline fp16 step: its rounding equals
     * mpx_round_value on every float (every 7th without MPX_EXHAUSTIVE=1,
     * and every value near fp16's boundaries), the whole step
     * mpx_round_sum on the random sums and the edges above. */
    const char *ex = getenv("MPX_EXHAUSTIVE");
    const uint64_t stride = ex && *ex == '1' ? 1 : 7;
    uint64_t ibad = 0, nchk = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += stride) {
        const float x = mpx_f32_of_bits((uint32_t)u);
        nchk++;
        if (mpx_f32_bits(mpx_fp16_round_inline(x)) != mpx_f32_bits(mpx_round_value(h16, x)) && ibad++ < 5)
            fprintf(stderr, "fp16 inline: %08x gives %08x, mpx_round_value %08x\n", (unsigned)u,
                    mpx_f32_bits(mpx_fp16_round_inline(x)), mpx_f32_bits(mpx_round_value(h16, x)));
    }
    const uint32_t near[] = {0x38800000u, 0x477ff000u, 0x33000000u, 0x33800000u, 0x387fc000u, 0x477fe000u};
    for (size_t k = 0; k < sizeof near / sizeof *near; k++)
        for (uint32_t d = 0; d < 0x4000u; d++)
            for (int sg = 0; sg < 2; sg++) {
                const uint32_t v = ((near[k] - 0x2000u + d) & 0x7fffffffu) | (sg ? 0x80000000u : 0u);
                nchk++;
                if (mpx_f32_bits(mpx_fp16_round_inline(mpx_f32_of_bits(v))) != mpx_f32_bits(mpx_round_value(h16, mpx_f32_of_bits(v))))
                    ibad++;
            }
    CHECK_MSG(ibad == 0, "%llu of %llu floats: the inline fp16 rounding differs", (unsigned long long)ibad,
              (unsigned long long)nchk);
    int stepbad = 0;
    srand(11);
    for (int i = 0; i < 2000000; i++) {
        float s = mpx_round_scalar(h16, ldexpf((float)rand() / (float)RAND_MAX + 1.0f, rand() % 40 - 25));
        float t = ldexpf(1.0f + (float)rand() / (float)RAND_MAX, rand() % 70 - 50);
        if (rand() & 1) s = -s;
        if (rand() & 1) t = -t;
        if (i < nedge * nedge) s = mpx_round_scalar(h16, edge[i / nedge]), t = edge[i % nedge];
        const float want = mpx_round_sum(h16, s, t), got = mpx_fp16_round_inline(mpx_ro_sum(s, t));
        if (mpx_f32_bits(want) != mpx_f32_bits(got) && !(isnan(want) && isnan(got)) && stepbad++ < 5)
            fprintf(stderr, "fp16 step: %a + %a: inline %a, mpx_round_sum %a\n", (double)s, (double)t, (double)got,
                    (double)want);
    }
    CHECK_MSG(stepbad == 0, "%d inline fp16 steps differ from mpx_round_sum", stepbad);

    /* fp16: the running sum plus a product of two fp16 values, against the
     * CPU's fp16 fused multiply-add (one rounding in hardware): every
     * product of 512 x 512 operand codes with 64 sums each, and random
     * triples over all codes. */
    if (!have_fp16_fma()) {
        printf("AVX512-FP16 not available: the hardware comparison skipped\n");
        return;
    }
    int hbad = 0;
    long n = 0;
    for (uint32_t ia = 0x3c00; ia < 0x3e00; ia++)
        for (uint32_t ib = 0x3800; ib < 0x3a00; ib++) {
            const float a = fp16_at((uint16_t)ia), b = fp16_at((uint16_t)ib);
            for (int k = 0; k < 64; k++) {
                const float c = fp16_at((uint16_t)((k & 1 ? 0x8000u : 0u) | (uint32_t)(0x3000 + rand() % 0x1800)));
                const float want = hw_fma16(a, b, c), got = mpx_round_sum(h16, c, a * b);
                n++;
                if (mpx_f32_bits(want) != mpx_f32_bits(got) && hbad++ < 5)
                    fprintf(stderr, "fp16: %a + %a * %a: got %a, fp16 FMA %a\n", (double)c, (double)a,
                            (double)b, (double)got, (double)want);
            }
        }
    for (int i = 0; i < 4000000; i++) {
        const float a = fp16_at((uint16_t)(rand() & 0xffff)), b = fp16_at((uint16_t)(rand() & 0xffff)),
                    c = fp16_at((uint16_t)(rand() & 0xffff));
        const float want = hw_fma16(a, b, c), got = mpx_round_sum(h16, c, a * b);
        n++;
        if (mpx_f32_bits(want) != mpx_f32_bits(got) && !(isnan(want) && isnan(got)) && hbad++ < 5)
            fprintf(stderr, "fp16: %a + %a * %a: got %a, fp16 FMA %a\n", (double)c, (double)a, (double)b,
                    (double)got, (double)want);
    }
    CHECK_MSG(hbad == 0, "%d of %ld fp16 sums differ from the CPU's fp16 FMA", hbad, n);
}

/* float64 rounded once into a format (a float64 tensor a plan holds low):
 * on every fp32 value it agrees with the fp32 reference rounding; a double
 * that fp32 would round onto a tie first rounds away from it, once; values
 * fp32 cannot hold (1e229, 1e-300) overflow and flush as the format says. */
static void test_round_double(void) {
    const mpx_format *fmts[] = {&mpx_format_fp32, &mpx_format_tf32, &mpx_format_fp16, &mpx_format_bf16,
                                &mpx_format_fp8e4m3_sat, &mpx_format_fp8e4m3_nan, &mpx_format_fp8e5m2};
    mpx_rng r;
    mpx_rng_init(&r, 48);
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        int bad = 0;
        for (int i = 0; i < 200000; i++) {
            uint32_t b = (uint32_t)(mpx_rng_next(&r) >> 32);
            float x;
            memcpy(&x, &b, sizeof x);
            double y;
            mpx_round_double_array(fmts[k], &y, &(double){(double)x}, 1);
            float want = mpx_round_scalar(fmts[k], x);
            /* (signbit's non-zero values differ between float and double) */
            const bool same_sign = !signbit(y) == !signbit(want);
            if (!(isnan(want) ? isnan(y) && same_sign : y == (double)want && same_sign))
                bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d fp32 values rounded from double differ from the fp32 rounding", fmts[k]->name, bad);
    }
    /* 1 + 2^-11 + 2^-40 is above fp16's tie between 1 and 1 + 2^-10: once
     * from the double it rounds up; through fp32 (which drops 2^-40) it
     * would round to even, down to 1. */
    double x = 1.0 + 0x1p-11 + 0x1p-40, y;
    mpx_round_double_array(&mpx_format_fp16, &y, &x, 1);
    CHECK(y == 1.0 + 0x1p-10);
    double big[4] = {1e229, -1e229, 1e-300, -1e-300}, out[4];
    mpx_round_double_array(&mpx_format_fp16, out, big, 4);
    CHECK(isinf(out[0]) && out[0] > 0 && isinf(out[1]) && out[1] < 0);
    CHECK(out[2] == 0 && !signbit(out[2]) && out[3] == 0 && signbit(out[3]));
    mpx_round_double_array(&mpx_format_fp8e4m3_sat, out, big, 2);
    CHECK(out[0] == 448.0 && out[1] == -448.0);
    mpx_round_double_array(&mpx_format_fp32, out, big, 4);
    CHECK(isinf(out[0]) && out[2] == 0.0);
}

int main(void) {
    printf("F16C %s\n", mpx_fp16_use_hw(true) ? "in use" : "not available");
    test_round_double();
    test_descriptors();
    test_dtype_table();
    test_fp16_patterns();
    test_bf16_patterns();
    test_fp8_patterns(&mpx_format_fp8e4m3_sat);
    test_fp8_patterns(&mpx_format_fp8e4m3_nan);
    test_fp8_patterns(&mpx_format_fp8e5m2);
    test_ties(&mpx_format_fp16, 0x7bff, decode_code);
    test_ties(&mpx_format_bf16, 0x7f7f, decode_code);
    test_ties(&mpx_format_fp8e4m3_sat, 0x7e, decode_code);
    test_ties(&mpx_format_fp8e4m3_nan, 0x7e, decode_code);
    test_ties(&mpx_format_fp8e5m2, 0x7b, decode_code);
    test_fp16_edges();
    test_bf16_edges();
    test_tf32_fp32_edges();
    test_fp8_edges();
    test_random_sample();
    test_round_sum();
    return check_report("test_formats");
}
