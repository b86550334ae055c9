/* mpx_formats.h - number formats and values: the float formats mpx emulates,
 * rounding into them, their storage encodings, and the runtime value of a
 * tensor (mpx_value) with the memory budget that bounds what a file read may
 * claim. The bottom of numerics/: it includes graph/'s header alone.
 *
 * Ownership: format descriptors are static constants (never freed). Rounding
 * routines work in place on caller-owned arrays; values own their buffers
 * unless borrowed (see mpx_value).
 *
 * Nothing in numerics/ prints, exits or reads stdin. */
#ifndef MPX_FORMATS_H
#define MPX_FORMATS_H

#include "mpx_graph.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For programs that run models again and again (the mpx program, the
 * benches): sets the C library's allocator to keep freed activations in the
 * process rather than handing them back to the kernel and faulting them in
 * again on the next run (value.c says by how much). Process-wide:
 * call once at start, before any thread exists; a library host that manages
 * its own memory does not call it. No-op outside glibc. */
void mpx_numerics_keep_memory(void);
/* For the same programs, first thing in main (argv: main's): where glibc's
 * heap is not yet told to take the kernel's huge pages (value.c says why),
 * sets the tunable that tells it (GLIBC_TUNABLES, read at start only) and
 * executes the program again with the same arguments; returns where that
 * is done already, the environment says otherwise (glibc.malloc.hugetlb
 * set to anything), the process's file is not the program argv[0] names
 * (a tool running it, such as valgrind), the exec fails, or on another C
 * library. */
void mpx_numerics_huge_pages(char *const *argv);

/* ==== float formats (format.c) ============================================== */

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
    /* The ONNX element type whose values are exactly this format's
     * (MPX_DT_FLOAT16 for fp16, MPX_DT_FLOAT8E4M3FN for both e4m3 rows...);
     * MPX_DT_UNDEFINED for tf32, which ONNX has no type for. */
    mpx_dtype dtype;
} mpx_format;

extern const mpx_format mpx_format_fp32;
extern const mpx_format mpx_format_tf32;       /* 8-bit exp, 10-bit mantissa, in fp32 */
extern const mpx_format mpx_format_fp16;       /* IEEE binary16 */
extern const mpx_format mpx_format_bf16;       /* bfloat16 */
extern const mpx_format mpx_format_fp8e4m3_sat;/* OCP E4M3FN, overflow -> +-448 */
extern const mpx_format mpx_format_fp8e4m3_nan;/* OCP E4M3FN, overflow -> NaN */
extern const mpx_format mpx_format_fp8e5m2;    /* OCP E5M2, IEEE-like, overflow -> inf */

/* Names: "fp32", "tf32", "fp16", "bf16", "fp8e4m3" (saturating, as ONNX
 * Cast's default saturate=1; "fp8e4m3sat", its old name, is read too),
 * "fp8e4m3nan", "fp8e5m2".
 * Case-insensitive. NULL if unknown. */
const mpx_format *mpx_format_by_name(const char *name);
/* The format a float element type's values are, from the table's dtype
 * column (the one map between the two: the plan, Cast and export read it):
 * float8e4m3fn's saturating or NaN row as saturate says; double gives fp32,
 * which a plan reads as "not rounded" (a float64 tensor then keeps its
 * doubles: docs/float64.md); NULL for the FNUZ types (their bias and NaN are not OCP's: no
 * format here holds their values exactly, so they stay the fp32 values
 * they decode to) and for every other type. */
const mpx_format *mpx_format_of_dtype(mpx_dtype t, bool saturate);
/* f's name, "fp32" for NULL (the convention for "no rounding" everywhere). */
const char *mpx_format_name(const mpx_format *f);
/* The distinct descriptors above, i in [0, mpx_format_count()); NULL past the end. */
size_t mpx_format_count(void);
const mpx_format *mpx_format_at(size_t i);
/* The names of the formats above in table order, separated by sep; with
 * low_only, without fp32 (the formats a plan can target). Returns buf. */
const char *mpx_format_names(const char *sep, bool low_only, char *buf, size_t n);

/* Reference rounding, written from the definition and generic over the
 * descriptor (slow; the tests hold mpx_round_array to it). */
float mpx_round_scalar(const mpx_format *f, float x);
/* The same reference over n values (one call per array: what the exhaustive
 * test compares with, since a call per value costs more than the rounding). */
void mpx_round_reference_array(const mpx_format *f, float *dst, const float *src, size_t n);
/* n float64 values rounded once, from the double, into f (the same rule:
 * ties to even, f's overflow and NaN rules); dst may equal src. The values
 * stay doubles (a float64 tensor a plan holds low). */
void mpx_round_double_array(const mpx_format *f, double *dst, const double *src, size_t n);
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

/* What converting n fp32 values into f does to them, the one rule behind
 * every report of weights converted offline (plan, run, compare, sweep,
 * export) and of constants named as the cause of a non-finite value:
 * *overflow counts finite values that overflow f (the IEEE rule above: they
 * become +-inf, NaN, or +-max_finite in a saturating format), *flushed
 * non-zero values that become zero. Either pointer may be NULL. */
void mpx_format_count_damage(const mpx_format *f, const float *x, size_t n, int64_t *overflow, int64_t *flushed);

/* x is non-zero, finite and smaller in magnitude than f's min normal. */
bool mpx_format_is_subnormal(const mpx_format *f, float x);
float mpx_format_max(const mpx_format *f);

/* The fp16 fast paths (mpx_round_array, mpx_round_value) use F16C when the
 * CPU has it, else the FP16 library (fp16.h). Tests turn it off to cover the
 * portable path; returns whether F16C is in use afterwards.
 * Not thread-safe: call while no rounding runs. */
bool mpx_fp16_use_hw(bool on);


/* ==== end float formats ===================================================== */

/* ==== fast scalar rounding (format.c) ======================================= */

/* One value, bitwise equal to mpx_round_scalar but fast (the bit tricks of
 * mpx_round_array): what accumulation rounds with after every addition. */
float mpx_round_value(const mpx_format *f, float x);

/* s + t rounded once to f (the exact sum, not the fp32 sum, rounded): what
 * an accumulation in f does at each addition, as fp16 hardware would. */
float mpx_round_sum(const mpx_format *f, float s, float t);
/* sum[i] = mpx_round_sum(f, sum[i], t[i]) for i < n (running sums side by
 * side, rounded in one array pass). */
void mpx_round_sums(const mpx_format *f, float *sum, const float *t, size_t n);

/* ==== runtime values (value.c) ===================================== */

/* A tensor's value during a run. Float dtypes live in f (fp32 buffers holding
 * values of the tensor's format), float64 in d (double: the reference
 * computes it as float64; a plan's low format rounds it to that format's
 * values, still held in d), integer and bool dtypes in i (int64).
 * Ownership: the buffers are malloc'ed by mpx_value_alloc (or mapped by
 * mpx_value_alloc_mapped) and freed by mpx_value_free; a value with
 * borrowed = true points at data another owner holds (initializers, a
 * kernel's output written into a buffer it was offered) and is never
 * freed through it. */
typedef struct mpx_value {
    mpx_dtype dtype;
    int rank;
    int64_t dims[MPX_MAX_RANK];
    int64_t n;          /* element count; -1 when the value is absent */
    float *f;
    int64_t *i;
    double *d;
    bool borrowed;
    /* Bytes of f's own mapping (mpx_value_alloc_mapped), unmapped when freed;
     * 0: f was malloc'ed. */
    size_t mapped;
    /* A sequence (or optional: 0 or 1 items) of tensors: n items in seq
     * (owned), dtype their element type, rank -1; f and i NULL. Only the
     * sequence ops make them (kern_seq.c); no plan rounds them. */
    bool is_seq, is_opt;
    struct mpx_value *seq;
} mpx_value;


/* Allocate (zero-filled) for dtype and shape; refuses > MPX_MAX_ELEMS. */
mpx_status mpx_value_alloc(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims,
                           mpx_error *err);
/* The same, not cleared: for a writer that fills every element. */
mpx_status mpx_value_alloc_raw(mpx_value *v, mpx_dtype dtype, int rank, const int64_t *dims,
                               mpx_error *err);
/* Float values not cleared, in a mapping of their own where the system has
 * mremap (Linux), else as mpx_value_alloc_raw: for a value a Concat may
 * grow into its output (mpx_value_grow), which a heap block cannot do
 * without a copy. */
mpx_status mpx_value_alloc_mapped(mpx_value *v, int rank, const int64_t *dims, mpx_error *err);
/* Room for n float elements in the mapping of v (made by
 * mpx_value_alloc_mapped), its values and shape kept (the caller reshapes
 * it when it fills the rest): it grows or moves without copying (mremap).
 * A value not in a mapping of its own is refused. On failure v is as it
 * was. */
mpx_status mpx_value_grow(mpx_value *v, int64_t n, mpx_error *err);
void mpx_value_free(mpx_value *v);      /* leaves v absent (n = -1) */
/* Forget v without freeing (its buffers were handed to another value). */
static inline void mpx_value_clear(mpx_value *v) {
    memset(v, 0, sizeof *v);
    v->n = -1;
}
/* A borrowed view of a graph tensor's known value (initializer, Constant, folded). */
void mpx_value_view(mpx_value *v, const mpx_tensor *t);
/* Deep copy. */
mpx_status mpx_value_copy(mpx_value *dst, const mpx_value *src, mpx_error *err);
/* Seeded values for a model input no file or array gives (the program's
 * `input <name> random|const`, a binding's default): element k of v (any
 * shape, float or integer; already allocated) in order from one stream of
 * mpx_rng seeded with seed: MPX_FILL_NORMAL mpx_rng_normal(a = mean, b =
 * std), MPX_FILL_UNIFORM a + (b - a) * mpx_rng_unit, MPX_FILL_CONST a (no
 * stream). Each value is computed in double and rounded once to fp32 (an
 * integer value: floor). The same values on every machine, for every client. */
typedef enum mpx_fill_kind { MPX_FILL_NORMAL, MPX_FILL_UNIFORM, MPX_FILL_CONST } mpx_fill_kind;
void mpx_value_fill(mpx_value *v, mpx_fill_kind kind, double a, double b, uint64_t seed);
/* Whether a fill's parameters make values: finite, std >= 0, low < high.
 * MPX_E_ARG naming the one at fault ("std -1 is negative", "uniform range
 * [2, 1) is empty", "const: inf is not finite"). Every client asks it
 * before mpx_value_fill. */
mpx_status mpx_fill_check(mpx_fill_kind kind, double a, double b, mpx_error *err);
/* A float value (from a file, a fill) held as dtype wants it: fp32 values
 * moved into float64 storage (exact) for a float64 dtype, float64 values
 * rounded to the nearest fp32 for any other float dtype; v->dtype becomes
 * dtype. Integer values and integer dtypes are left alone (MPX_OK). */
mpx_status mpx_value_hold_as(mpx_value *v, mpx_dtype dtype, mpx_error *err);
/* Bytes a value owns: 0 for borrowed views and absent values (what
 * mpx_compare's peak_bytes counts). */
size_t mpx_value_bytes(const mpx_value *v);


#ifdef __cplusplus
}
#endif

#endif
