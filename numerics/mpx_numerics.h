/* mpx_numerics.h - float formats, rounding, the fp32 reference kernels.
 *
 * Ownership: format descriptors are static constants (never freed). Rounding
 * routines work in place on caller-owned arrays. Kernels write into output
 * buffers the caller allocated; they allocate only scratch they free before
 * returning.
 *
 * Nothing in numerics/ prints, exits or reads stdin.
 */
#ifndef MPX_NUMERICS_H
#define MPX_NUMERICS_H

#include "mpx_graph.h"

/* ==== float formats (numerics/format.c) ==================================== */

/* Every emulated value lives in an fp32 buffer; a buffer "in format F" holds
 * only values exactly representable in F. The routines below round fp32 values
 * into F (round-to-nearest, ties-to-even, as IEEE 754 roundTiesToEven with the
 * overflow rule of F) and return the fp32 value of the result.
 *
 * Overflow is decided as IEEE 754 does: round with an unbounded exponent, and
 * overflow if the result exceeds max_finite. Hence fp16 65519.99 -> 65504 but
 * 65520 -> inf; e4m3 464 (a tie between 448 and the would-be 480) -> 448 but
 * anything above 464 overflows.
 *
 * NaNs: the result of rounding a NaN is a quiet NaN with the input's sign.
 *  - formats with IEEE NaNs (fp32, tf32, fp16, bf16, e5m2) keep the top
 *    man_bits bits of the payload and set the quiet bit, as F16C's vcvtps2ph
 *    does for fp16: result bits = (x & ~low_bits) | 0x00400000;
 *  - e4m3 has one NaN pattern (S.1111.111); it decodes to the canonical
 *    quiet NaN 0x7FC00000 with the sign.
 * A NaN never becomes an infinity or a finite value, and nothing else becomes
 * a NaN except overflow/infinity in an e4m3 "nan" setting.
 * Signed zero is kept; values below half the smallest subnormal go to a zero
 * of the same sign.
 *
 * Assumes the default floating-point environment (no FTZ/DAZ). */

typedef enum mpx_nan_rule {
    MPX_NAN_IEEE,     /* exponent all ones, mantissa != 0 (fp32, fp16, bf16, ...) */
    MPX_NAN_ONE       /* exponent and mantissa all ones is the only NaN (e4m3) */
} mpx_nan_rule;

typedef enum mpx_overflow_rule {
    MPX_OVF_INF,      /* overflow gives +-inf (IEEE) */
    MPX_OVF_SATURATE, /* overflow and +-inf give +-max_finite */
    MPX_OVF_NAN       /* overflow and +-inf give NaN (with the sign) */
} mpx_overflow_rule;

/* Selects the fast path of mpx_round_array; the descriptor fields still say
 * everything about the format (the scalar reference reads only those). */
typedef enum mpx_format_kind {
    MPX_FMT_FP32, MPX_FMT_TF32, MPX_FMT_FP16, MPX_FMT_BF16,
    MPX_FMT_FP8E4M3, MPX_FMT_FP8E5M2
} mpx_format_kind;

typedef struct mpx_format {
    const char *name;          /* "fp16", "fp8e4m3", "fp8e4m3nan", ... */
    mpx_format_kind kind;
    int exp_bits;              /* exponent field width */
    int man_bits;              /* stored mantissa bits (precision - 1) */
    int bias;                  /* exponent bias; min normal is 2^(1-bias) */
    int storage_bits;          /* width of the storage encoding (tf32: 32) */
    bool has_inf;
    mpx_nan_rule nan;
    mpx_overflow_rule overflow;
    float max_finite;
    float min_normal;
    float min_subnormal;
} mpx_format;

extern const mpx_format mpx_format_fp32;
extern const mpx_format mpx_format_tf32;       /* 8-bit exp, 10-bit mantissa, in fp32 */
extern const mpx_format mpx_format_fp16;       /* IEEE binary16 */
extern const mpx_format mpx_format_bf16;       /* bfloat16 */
extern const mpx_format mpx_format_fp8e4m3_sat;/* OCP E4M3FN, overflow -> +-448 */
extern const mpx_format mpx_format_fp8e4m3_nan;/* OCP E4M3FN, overflow -> NaN */
extern const mpx_format mpx_format_fp8e5m2;    /* OCP E5M2, IEEE-like, overflow -> inf */

/* Names: "fp32", "tf32", "fp16", "bf16", "fp8e4m3" (= saturating, as ONNX
 * Cast's default saturate=1), "fp8e4m3sat", "fp8e4m3nan", "fp8e5m2".
 * Case-insensitive. NULL if unknown. */
const mpx_format *mpx_format_by_name(const char *name);
/* The distinct descriptors above, i in [0, mpx_format_count()); NULL past the end. */
size_t mpx_format_count(void);
const mpx_format *mpx_format_at(size_t i);

/* Reference rounding, written from the definition and generic over the
 * descriptor (slow; the tests hold mpx_round_array to it). */
float mpx_round_scalar(const mpx_format *f, float x);
/* Fast rounding of n values; dst may equal src (in place), no other overlap.
 * Bitwise equal to mpx_round_scalar for every input, NaNs included. */
void mpx_round_array(const mpx_format *f, float *dst, const float *src, size_t n);

/* Storage encodings. Encoders round (as mpx_round_scalar) and pack; decoders
 * are exact. The generic pair works for every format: the code is the low
 * storage_bits bits (fp32 and tf32: the fp32 bit pattern). */
uint32_t mpx_format_encode(const mpx_format *f, float x);
float mpx_format_decode(const mpx_format *f, uint32_t code);
uint16_t mpx_fp16_bits_from_f32(float x);
float mpx_fp16_bits_to_f32(uint16_t h);
uint16_t mpx_bf16_bits_from_f32(float x);
float mpx_bf16_bits_to_f32(uint16_t b);
uint8_t mpx_fp8_bits_from_f32(const mpx_format *f, float x);   /* f: an fp8 format */
float mpx_fp8_bits_to_f32(const mpx_format *f, uint8_t b);

/* x is non-zero, finite and smaller in magnitude than f's min normal. */
bool mpx_format_is_subnormal(const mpx_format *f, float x);
float mpx_format_max(const mpx_format *f);

/* The fp16 fast path uses F16C when the CPU has it. Tests turn it off to
 * cover the portable path; returns whether F16C is in use afterwards.
 * Not thread-safe: call before rounding starts. */
bool mpx_fp16_use_hw(bool on);


/* ==== end float formats ===================================================== */

/* ==== reference kernels (numerics/kernels.c) ================================ */

/* ==== end reference kernels ================================================= */

#endif
