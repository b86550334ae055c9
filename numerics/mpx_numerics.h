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

#include <string.h>

/* ==== start-up (numerics/fold_eval.c) ======================================= */

/* Registers the kernels as graph/'s constant folder (mpx_graph_set_evaluator;
 * mpx_graph.h, "constant folding"), so shape inference folds every op that has
 * a kernel with the kernel's own arithmetic (fp32 reference accumulation) and
 * an op's meaning is written once, in its kernel. Call once at start, from one
 * thread, before mpx_graph_infer: the mpx program, the
 * benches and every test program do. Idempotent. */
void mpx_numerics_init(void);

/* For programs that run models again and again (the mpx program, the
 * benches): sets the C library's allocator to keep freed activations in the
 * process rather than handing them back to the kernel and faulting them in
 * again on the next run (numerics/value.c says by how much). Process-wide:
 * call once at start, before any thread exists; a library host that manages
 * its own memory does not call it. No-op outside glibc. */
void mpx_numerics_keep_memory(void);

/* Bytes of weights rounded to a low format and kept on their tensors for
 * later runs (numerics/kern_gemm.c: rounded once per weight and format,
 * freed with their graph; at most 1 GiB a process). Memory a report holds
 * beside its values, for the benches' accounting. */
size_t mpx_numerics_kept_rounded_bytes(void);

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

/* Names: "fp32", "tf32", "fp16", "bf16", "fp8e4m3" (saturating, as ONNX
 * Cast's default saturate=1; "fp8e4m3sat", its old name, is read too),
 * "fp8e4m3nan", "fp8e5m2".
 * Case-insensitive. NULL if unknown. */
const mpx_format *mpx_format_by_name(const char *name);
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

/* ==== fast scalar rounding (numerics/format.c) ============================= */

/* One value, bitwise equal to mpx_round_scalar but fast (the bit tricks of
 * mpx_round_array): what accumulation rounds with after every addition. */
float mpx_round_value(const mpx_format *f, float x);

/* s + t rounded once to f (the exact sum, not the fp32 sum, rounded): what
 * an accumulation in f does at each addition, as fp16 hardware would. */
float mpx_round_sum(const mpx_format *f, float s, float t);
/* sum[i] = mpx_round_sum(f, sum[i], t[i]) for i < n (running sums side by
 * side, rounded in one array pass). */
void mpx_round_sums(const mpx_format *f, float *sum, const float *t, size_t n);

/* ==== runtime values (numerics/value.c) ===================================== */

/* A tensor's value during a run. Float dtypes live in f (fp32 buffers holding
 * values of the tensor's format), integer and bool dtypes in i (int64).
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

/* The memory budget (process-wide, in bytes): what a file read may claim
 * before anything is allocated for it (an .npz member's size, an image's
 * width x height, a sound's frames), so that a small compressed file cannot
 * take the machine's memory. Default: half the machine's physical memory
 * (sysconf), 1 GiB when that is unknown. mpx_set_memory_budget(0) restores
 * the default. */
void mpx_set_memory_budget(uint64_t bytes);
uint64_t mpx_memory_budget(void);
/* MPX_E_LIMIT naming path and what claims bytes, when bytes exceed the
 * budget ("x.npz: 4.0 GB claimed for its members, more than the memory
 * budget of 7.8 GB (set memory <MB>)"); MPX_OK otherwise. */
mpx_status mpx_check_budget(const char *path, const char *what, uint64_t bytes, mpx_error *err);

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
/* Bytes a value owns: 0 for borrowed views and absent values (what
 * mpx_compare's peak_bytes counts). */
size_t mpx_value_bytes(const mpx_value *v);

/* ==== tensor files (numerics/tensor_io.c) =================================== */

/* NumPy .npy (versions 1.0-3.0, little-endian, C order; float16/32/64, int8-64,
 * uint8-64, bool in; float32 or int64 out) and ONNX TensorProto .pb (as in
 * ONNX's test data). Errors name the file and what is wrong with it. */
mpx_status mpx_npy_read(const char *path, mpx_value *out, mpx_error *err);
/* Written whole or not at all, never over a file guard protects (may be
 * NULL; see mpx_file_open_write). */
mpx_status mpx_npy_write(const char *path, const mpx_file_guard *guard, const mpx_value *v, mpx_error *err);
mpx_status mpx_pb_read(const char *path, mpx_value *out, char *name, size_t name_len,
                       mpx_error *err);
/* A SequenceProto or OptionalProto file of tensors (ONNX's test data for
 * sequence and optional values) as a sequence value (is_opt for an
 * optional, which holds at most one tensor). */
mpx_status mpx_pb_read_container(const char *path, bool optional, mpx_value *out, char *name, size_t name_len,
                                 mpx_error *err);
/* The same .npy reader on bytes in memory (an .npz member); name is what
 * messages call it ("x.npz:image.npy"). */
mpx_status mpx_npy_read_mem(const char *name, const void *data, size_t len, mpx_value *out,
                            mpx_error *err);

/* ==== data files: images, audio, .npz (numerics/data_image.c, data_audio.c,
 * data_npz.c) ==================================================================
 * Each is decoded by the Debian library made for it (libpng, libjpeg-turbo,
 * libsndfile + libsamplerate, libzip); mpx writes only the arithmetic that
 * turns decoded samples into an input tensor, documented here so a test (or a
 * user's own pipeline) can reproduce it bit for bit. Values are computed in
 * double and rounded once to fp32. Errors name the file and what is wrong. */

typedef enum mpx_image_layout { MPX_LAYOUT_AUTO, MPX_LAYOUT_NCHW, MPX_LAYOUT_NHWC } mpx_image_layout;
typedef enum mpx_image_channels {
    MPX_CHANNELS_AUTO, /* from the input's channel dim: 1 gray, else rgb */
    MPX_CHANNELS_RGB,
    MPX_CHANNELS_BGR,
    MPX_CHANNELS_GRAY,
} mpx_image_channels;

typedef struct mpx_image_opts {
    int64_t height, width;       /* 0: the file's (resized only when they differ) */
    mpx_image_layout layout;     /* AUTO: nhwc when the input's last dim is 1 or 3 and its
                                    second is not, else nchw */
    mpx_image_channels channels;
    double scale;                /* default 1 */
    double mean[3], std[3];      /* per channel in the output order; default 0 and 1 */
} mpx_image_opts;

void mpx_image_opts_default(mpx_image_opts *o);

/* Decodes a PNG or JPEG (by its first bytes, not its name) into an fp32
 * tensor for an input of rank `rank` (4: batch 1 added; 3: no batch; 2: gray
 * only, HxW) whose bound dims are `dims` (may be NULL or hold -1 where
 * unknown: AUTO options look at them, and a bound channel dim that differs
 * from the image's channels is refused).
 * Pixels: 8 bits per sample (16-bit PNG samples keep their high byte, as
 * libpng's png_set_strip_16 and PIL do; palettes expanded; alpha dropped, not
 * composited). gray from a colour image is 0.299 R + 0.587 G + 0.114 B (ITU-R
 * 601) in double, not rounded to 8 bits; rgb from a gray image repeats it.
 * Resize (only when height/width differ from the file): bilinear with
 * half-pixel centres, no antialiasing (ONNX Resize linear/half_pixel, OpenCV
 * INTER_LINEAR): x_src = (x + 0.5) * in / out - 0.5 clamped to [0, in - 1].
 * Value of channel c: ((p / 255) * scale - mean[c]) / std[c]. */
mpx_status mpx_image_read(const char *path, const mpx_image_opts *o, int rank, const int64_t *dims,
                          mpx_value *out, mpx_error *err);

typedef struct mpx_audio_opts {
    int rate;        /* 0: the file's; otherwise resampled to it (libsamplerate, best sinc) */
    int64_t length;  /* 0: all samples; otherwise zero-padded or truncated to it */
    double scale;    /* default 1 (32768 gives int16-range values) */
} mpx_audio_opts;

void mpx_audio_opts_default(mpx_audio_opts *o);

/* Decodes a WAV, FLAC, OGG or any other file libsndfile reads into a mono
 * fp32 tensor for an input of rank `rank` (1: [n], 2: [1, n], 3: [1, 1, n]).
 * Samples are libsndfile's normalised doubles (an int16 sample s is s/32768,
 * so values lie in [-1, 1)); channels are averaged in double; value =
 * mean * scale, rounded once. With resampling, the mono signal is rounded to
 * fp32 first (libsamplerate works in float). A file shorter than its header
 * says is refused (truncated). rate_out (may be NULL) gets the rate used. */
mpx_status mpx_audio_read(const char *path, const mpx_audio_opts *o, int rank, mpx_value *out,
                          int *rate_out, mpx_error *err);

/* An .npz (NumPy's zip of .npy files, stored or deflated): every member,
 * key = member name without ".npy", in the archive's order. */
typedef struct mpx_npz {
    int n;
    char **keys;
    mpx_value *values;
} mpx_npz;
mpx_status mpx_npz_read(const char *path, mpx_npz *out, mpx_error *err);
void mpx_npz_free(mpx_npz *z);

/* What kind of data file path is, from its first bytes (png, jpeg, npy,
 * npz) or, failing those, whether libsndfile opens it (audio); NULL when none
 * (or it cannot be opened). */
const char *mpx_data_kind(const char *path);

/* ==== reference kernels (numerics/kernels.c, kern_*.c) ====================== */

/* Accumulation (DESIGN section 3): dot products and reductions sum their terms
 * in a documented order (the reduction index in increasing order: for Conv
 * input channel, then kernel row, then kernel column). With fmt fp32 the
 * sum is fp32 and blocked: each block of MPX_ACC_FP32_BLOCK terms is summed,
 * then added to the running sum. A plain running sum loses small terms
 * against a large one systematically (a 6625-class Softmax was 4e-5 off in
 * rel_l2 against float64, ONNX Runtime's vector lanes 6e-6); blocking bounds
 * the error by (n/64 + 64) ulps and matches ORT there. Conv, ConvTranspose,
 * Gemm and MatMul follow the same blocks over their reduction index (a padding
 * tap keeps its place in its block; on their fast paths each product is fused
 * into its block's sum, one rounding: numerics/kern_gemm.h). With a low fmt the
 * running sum is rounded to fmt after every addition, the exact sum of the
 * running sum and the term rounded once (mpx_round_sum: as fp16 hardware
 * adds; rounding the fp32 sum would round twice) (block 0), or each block of `block` terms is summed in fp32, rounded to fmt,
 * and added to the running sum, which is rounded to fmt (block > 0). A bias is
 * one more addition. The kernel's output is rounded by the executor. */
#define MPX_ACC_FP32_BLOCK 64

typedef struct mpx_accum {
    const mpx_format *fmt;   /* NULL means fp32 */
    int block;
} mpx_accum;

typedef struct mpx_kctx {
    const mpx_node *node;    /* attributes, opset, name for messages */
    mpx_accum acc;
    /* Kernels that hold values across steps (the recurrent ops): the format
     * their intermediate results are rounded to (the node's compute format)
     * and the one their carried state is held in (its output format); NULL:
     * fp32, as in the reference. Other kernels ignore them: the executor
     * rounds their inputs and outputs. */
    const mpx_format *round, *state;
    mpx_error *err;          /* messages name the node (mpx_kernel_error) */
    /* A buffer of dest_n floats the executor offers for the output (NULL:
     * none): a kernel that allocates its output uncleared takes it when
     * the size matches, once (*dest_taken), as a borrowed value. fuse.c
     * offers the place in a whole tensor where a tile's result goes. */
    float *dest;
    int64_t dest_n;
    bool *dest_taken;
    /* Loop, Scan and SequenceMap in a comparison's candidate step (NULL
     * otherwise): the reference's values and where the figures of the
     * values inside the body go (numerics/kern_loop.c runs the reference
     * body beside the candidate's, iteration by iteration). */
    const struct mpx_body_probe *probe;
    /* The one format the executor would round output 0 to afterwards (NULL:
     * none, or two in turn): a kernel that writes its output in pieces may
     * round each piece while it is in cache instead, and says so
     * (*out_rounded); the executor then skips its pass over the output.
     * The same values either way (each element rounded once, to it). */
    const mpx_format *out_round;
    bool *out_rounded;
    /* [n_in] or NULL: in_round[k] non-NULL means input k is a constant's own
     * values, handed unrounded, which the node reads rounded to that format
     * (only inputs kernels.def's MPX_KERNEL_READS_ROUNDED rows name; the
     * kernel rounds them as its GEMM packing is made and kept, instead of
     * the executor keeping a rounded copy: numerics/exec.c). */
    const mpx_format *const *in_round;
} mpx_kctx;

/* A kernel reads in[0..n_in) (NULL for an omitted optional input) and
 * allocates and fills out[0..n_out) with mpx_value_alloc (an out slot whose
 * graph output is omitted is still filled, or left absent). Output shapes
 * come from the input values, not from shape inference, so data-dependent
 * shapes are right. Float outputs are exact fp32 results of fp32 arithmetic
 * on the inputs, except that sums follow mpx_accum. */
typedef mpx_status (*mpx_kernel_fn)(const mpx_kctx *c, const mpx_value *const *in, int n_in,
                                    mpx_value *out, int n_out);

/* The kernel for an op, or NULL: the table in kernels.c is indexed by the op
 * enum (static_assert on its size). */
mpx_kernel_fn mpx_kernel_for(mpx_op op);
/* Fill c->err naming the node and op, return st. */
mpx_status mpx_kernel_error(const mpx_kctx *c, mpx_status st, const char *fmt, ...);

/* ==== executor (numerics/exec.c) ============================================ */

/* What a precision plan hands the executor: the format every tensor is held
 * in, and per node the format its float inputs are converted to before it
 * computes (fp32 for a red node) and its accumulation. Arrays indexed by
 * tensor->index and node->index; NULL format means fp32. */
typedef struct mpx_node_prec {
    const mpx_format *compute;
    mpx_accum acc;
    /* The format the node writes its float outputs in before they are stored
     * in their tensors' formats (NULL: straight into the tensor's format).
     * It matters where a low node's output tensor is wider than the node:
     * with keep-io an fp16 node producing an fp32 model output writes fp16
     * values, which the cast the plan puts before the output keeps exactly. */
    const mpx_format *output;
} mpx_node_prec;

typedef struct mpx_assign {
    int n_tensors, n_nodes;
    const mpx_format **tensor;
    mpx_node_prec *node;
} mpx_assign;

/* Everything fp32 (the reference: f NULL or fp32), or all-green: every float
 * tensor held in f, every node with a float input computing and writing in f
 * with accumulate format acc (NULL: fp32), nodes without float inputs in
 * fp32. keep_io holds model inputs and outputs in fp32 (a low consumer rounds
 * an input on entry; a low producer still writes f, see output above). NULL
 * on out of memory. */
mpx_assign *mpx_assign_uniform(const mpx_graph *g, const mpx_format *f,
                               const mpx_format *acc, bool keep_io);
void mpx_assign_free(mpx_assign *a);

typedef struct mpx_run_opts {
    /* "local" error: when set, every node reads the reference run's values of
     * its inputs (converted to its formats) instead of this run's. */
    const struct mpx_run *local_ref;
    /* Stream: free every value once its last consumer has run, keeping only
     * model outputs and the tensors marked in keep ([g->n_tensors], may be
     * NULL). A forward pass then holds one live activation set, as a runtime
     * does, and its buffers are reused instead of faulting in fresh pages
     * (keeping every tensor of PP-OCRv4 det is 680 MB, and the kernel's page
     * clearing was half of that run's time). Values are the same bits. */
    bool stream;
    const bool *keep;
    /* Called with every node's float outputs as soon as they exist (before
     * streaming frees them): `stats` reads each tensor's range this way.
     * Elementwise chains then run node by node (no fusion: every value is
     * made whole); the values are the same bits. */
    void (*on_value)(void *ctx, const mpx_tensor *t, const mpx_value *v);
    void *on_value_ctx;
    /* numerics-internal (kern_loop.c): a candidate body run whose own Loop,
     * Scan and SequenceMap nodes take their bodies' figures too; NULL. */
    const struct mpx_body_probe *probe;
} mpx_run_opts;

/* The values of every tensor of one run. Owns vals[i] (borrowed views for
 * constants). */
typedef struct mpx_run {
    const mpx_graph *g;
    int n;
    mpx_value *vals;         /* [g->n_tensors]; n = -1 where not computed */
    double ms;               /* wall time of the run */
} mpx_run;

/* Runs every node in topological order (DESIGN section 3, Emulation): model
 * inputs and constants are rounded to their tensors' formats (constants as
 * rounded copies, or borrowed views when nothing needs rounding; Constant
 * nodes are not run, their values come from the graph); each node gets its
 * float inputs rounded to its compute format, runs its kernel with its
 * accumulation, and its float outputs are rounded to its output format and
 * then their tensors' formats. Every tensor's value is kept (unless
 * opts->stream). Chains of elementwise nodes run tile by tile (fuse.c; the
 * same kernels, the same bits; MPX_FUSE=0 turns it off), except with
 * opts->local_ref.
 * Refuses, before running anything, a graph with a node that has no kernel
 * (message names the node and op), an unbound input, or an input value whose
 * shape or type differs from the bound input. inputs are in g->inputs order.
 * An assignment a of NULL means everything fp32. On an error mid-run nothing
 * is returned and the message names the node. */
/* The flag (NULL: none) a Ctrl-C handler sets, process-wide as Ctrl-C is:
 * every graph run, a Loop's or Scan's body runs included, checks it between
 * nodes and every Loop, Scan and SequenceMap between iterations, so that a
 * long loop inside one top-level node stops too (MPX_E_CANCELLED naming the
 * node and the iteration). The comparison's own opts.cancel is checked as
 * before, between top-level nodes. */
void mpx_set_cancel_flag(const volatile int *flag);
bool mpx_cancel_requested(void);
mpx_status mpx_run_graph(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                         const mpx_run_opts *opts, mpx_run **out, mpx_error *err);
void mpx_run_free(mpx_run *r);

/* ==== error metrics (numerics/metrics.c) ==================================== */

/* Sums are taken in double, in eight lanes (element k in lane k % 8 up to
 * the first non-finite value, the lanes then added pairwise; metrics.c), the
 * same order on every CPU. Non-finite values follow one rule: an element
 * where c and r differ and one of them is not finite (an overflow: r finite,
 * c +-inf or NaN; or r +-inf/NaN and c something else) makes the error infinite:
 * max_abs, mean_abs and rel_l2 are +inf, sqnr_db is -inf and cos is NaN. A
 * tensor that overflowed so never looks accurate in a table sorted by rel_l2
 * and never passes a gate like "rel_l2 < 1e-2"; the overflow count says how
 * many elements did it. Elements where c and r are the same infinity or both
 * NaN agree: they add no error and are left out of the norms. */
typedef struct mpx_metrics {
    int64_t n;
    double max_abs, mean_abs;
    double rel_l2;     /* ||c - r|| / ||r|| (0 when both are 0, +inf when only r is) */
    double cos;        /* cosine similarity (1 when both are all zero, 0 when one is) */
    double sqnr_db;    /* 20 log10(||r|| / ||c - r||); +inf when equal */
    int64_t overflow;  /* finite in r, +-inf or NaN in c */
    int64_t underflow; /* non-zero in r, zero in c */
    int64_t subnormal; /* subnormal in fmt among c's values */
    double absmax_ref; /* largest |r| (NaNs left out) */
} mpx_metrics;

/* The metrics by name and in one order (numerics/metrics.def): every list
 * of metrics (report, assert, completion, plots) iterates this table. */
typedef enum mpx_metric_id {
#define MPX_METRIC(name, kind, worse) MPX_METRIC_##name,
#include "metrics.def"
#undef MPX_METRIC
    MPX_METRIC_COUNT
} mpx_metric_id;

typedef struct mpx_metric_info {
    const char *name;
    bool count;        /* an int64 count of elements (else a double) */
    bool low_is_worse; /* cos, sqnr_db */
} mpx_metric_info;

/* The row of id (NULL when out of range). */
const mpx_metric_info *mpx_metric_info_of(mpx_metric_id id);
/* The metric named name (case-insensitive); false if none. */
bool mpx_metric_by_name(const char *name, mpx_metric_id *id);
/* Its value in m (a count as a double). */
double mpx_metric_value(const mpx_metrics *m, mpx_metric_id id);
/* "rel_l2 max_abs ... subnormal": the names in order, separated by sep. */
const char *mpx_metric_names(const char *sep, char *buf, size_t n);

/* Candidate c against reference r (same shape, both float or both integer);
 * fmt (NULL: fp32) decides "subnormal". */
mpx_status mpx_metrics_compute(const mpx_value *r, const mpx_value *c, const mpx_format *fmt,
                               mpx_metrics *m, mpx_error *err);
/* mpx_metrics_compute of nc candidates c[q] (fmt[q]; fmt NULL: all fp32)
 * against one reference, m[q] each, bit for bit the same; the reference is
 * read once where it can be. Returns the first candidate's refusal (the
 * others' metrics are still taken). */
mpx_status mpx_metrics_compute_many(const mpx_value *r, const mpx_value *const *c,
                                    const mpx_format *const *fmt, int nc, mpx_metrics *m,
                                    mpx_error *err);

/* ==== task figures (numerics/task.c) ========================================= */

/* What a user checks of one output against its fp32 reference, each a share
 * in [0, 1], higher better: top1 (rows, along the last axis, whose argmax
 * agrees), topk_overlap@k (the mean share of a row's k largest that are the
 * reference's; k 5 when not given), iou@t (per sample, the first axis: the
 * intersection over union of the elements above t, a sample with none in
 * either counting 1; the mean over samples), sign_agree@t (elements on the
 * same side of t). Ties go to the lower index. */
typedef enum { MPX_TASK_TOP1, MPX_TASK_TOPK_OVERLAP, MPX_TASK_IOU, MPX_TASK_SIGN_AGREE, MPX_TASK_COUNT } mpx_task_id;
typedef struct mpx_task_figure {
    mpx_task_id id;
    double param; /* k (topk_overlap) or t (iou, sign_agree) */
} mpx_task_figure;
const char *mpx_task_name(mpx_task_id id);
/* name ("top1", "topk_overlap@3", "iou@0.5", "sign_agree@0"): *is_task false
 * when it names no task figure (no error); an error when it does but is
 * badly written (iou or sign_agree without @t, a bad number, k < 1). */
mpx_status mpx_task_parse(const char *name, bool *is_task, mpx_task_figure *f, mpx_error *err);
/* The figure of candidate c against reference r (float, one shape). Errors:
 * top1 or topk_overlap on an output whose last axis has fewer than 2
 * elements, k beyond the last axis, an empty output. */
mpx_status mpx_task_compute(const mpx_value *r, const mpx_value *c, const mpx_task_figure *f, double *out,
                            mpx_error *err);

/* ==== paired runs: per-layer comparison (numerics/compare.c) ================ */

/* One float tensor computed by a node (not constants, not model inputs), as
 * compared: the candidate's format and metrics against the reference, and
 * with local mode the node's own error (reference inputs, converted to its
 * formats). Kept for every such tensor whatever keep says. */
typedef struct mpx_layer {
    int tensor, node;            /* graph indices */
    const mpx_format *fmt;       /* the candidate tensor's format (NULL: fp32) */
    mpx_metrics m;               /* candidate run vs reference run */
    bool has_local;
    mpx_metrics local;           /* node fed reference inputs vs reference */
    /* Left out by mpx_compare_opts.measure: m's figures are NaN, its counts
     * 0; nothing may be read from it. */
    bool unmeasured;
} mpx_layer;

/* A float value computed inside the body of a Loop, Scan or SequenceMap
 * (nested bodies too), compared iteration by iteration: the candidate's
 * body run against the reference's body run of the same iteration (each
 * side's loop carrying its own state, as the two runs do). Iterations are
 * compared while both runs iterate with values of one shape; a run where
 * the two differ in trip count or shape compares the iterations before. */
typedef struct mpx_body_layer {
    const mpx_node *owner;       /* the node of g whose body holds it (the one the plan colours) */
    const mpx_node *node;        /* the body node that computes it (name "<owner>/body/...") */
    const mpx_tensor *tensor;    /* a tensor of that body's graph */
    const mpx_format *fmt;       /* the candidate's format for it (NULL: fp32) */
    int64_t runs;                /* body runs compared */
    /* The run of its worst rel_l2: the iteration, counted from 0 (for a
     * body nested in another, its runs are counted across the outer
     * iterations). */
    int64_t worst_run;
    mpx_metrics worst;           /* each metric's worst over the runs */
    /* The mean over the runs (counts: their total; n: one run's). */
    mpx_metrics mean;
    /* With local figures: each run's body node fed the reference run's
     * values of that iteration (converted to its formats). */
    bool has_local;
    int64_t local_worst_run;
    mpx_metrics local_worst, local_mean;
} mpx_body_layer;

typedef struct mpx_compare_opts {
    bool local;                  /* also compute local metrics (a third, per-node run) */
    /* [g->n_tensors] or NULL: tensors whose reference and candidate values are
     * kept after the run (for `tensor`, plots); model outputs are always kept. */
    const bool *keep;
    /* Checked between nodes; when it becomes non-zero the run stops with
     * MPX_E_CANCELLED (a Ctrl-C handler sets it). */
    const volatile int *cancel;
    /* Called between nodes (may be NULL): done of total nodes. */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    /* 1: everything on the calling thread, node by node. Otherwise (0,
     * the default) a second thread shares the work: each node's reference,
     * candidate and local steps and its metrics are jobs that run as soon
     * as their inputs exist, a few nodes ahead of the first unfinished one
     * where a thread would otherwise wait (results are the same bits either
     * way; the progress callback is called on the caller's thread, and the
     * run ends at the node after the one it was last told of when cancel is
     * set). */
    int threads;
    /* An incremental cache (may be NULL; see mpx_compare_cache_new). A run
     * with a cache keeps every computed value in it (within its budget) with
     * the assignment it ran under; the next run with the same cache, graph
     * and input values recomputes only the nodes whose precision or tensor
     * formats changed and everything downstream of them, reusing the cached
     * values and the other layers' metrics. The result is bit for bit what a
     * run without the cache gives. Local runs do not use it (nor touch it). */
    struct mpx_compare_cache *cache;
    /* [g->n_tensors] or NULL (every layer): the layers whose metrics are
     * taken. The others are listed, marked unmeasured, and cost nothing:
     * `search` reads only its condition's figures, and measuring det's 330
     * layers was half of each evaluation. A run with a cache keeps no
     * reference value of a layer it does not measure (its incremental
     * successors need only candidate values there: half the bytes). A later
     * run through the same cache that wants an unmeasured layer measures it
     * from the cached values when both are there, else runs in full. Local
     * runs measure every layer. */
    const bool *measure;
    /* With a cache, an incremental run keeps what it replaces there until
     * the next run through the cache, so that mpx_compare_cache_undo can
     * bring back the run before it: a search trial that fails is undone, and
     * the next trial, one node away from the set that holds, recomputes that
     * node's cone alone instead of the failed trial's too. */
    bool undoable;
} mpx_compare_opts;

typedef struct mpx_compare {
    const mpx_graph *g;
    int n_layers;
    mpx_layer *layers;           /* in node order, then output order */
    /* [g->n_tensors]: kept values (n = -1 where not kept); owned. */
    mpx_value *ref, *cand;
    /* Time spent in each kind of work; on two threads they overlap, so
     * their sum may exceed the run's wall time. */
    double ms_ref, ms_cand, ms_local, ms_metrics;
    /* Most value bytes alive at once during the run: the runs' live values,
     * a step's outputs and input copies (on two threads also the input
     * copies of a step the other thread finished meanwhile). Kernels' own
     * scratch is not counted. On two threads it depends on how the jobs
     * met in time, within a few nodes' outputs. */
    size_t peak_bytes;
    /* Nodes run by this call: all of them for a full run, only the
     * recomputed ones when a cache made the run incremental (values held
     * by the cache are not counted in peak_bytes). */
    int n_run;
    bool incremental;
    /* When this comparison stands for a run over several samples (a data
     * set): every sample's figures (owned; freed with it). layers then hold
     * each layer's worst over the samples (mpx_samples_reduce), and ref/cand
     * the kept values of the sample whose worst model output is worst. NULL
     * for a one-input run. */
    struct mpx_samples *samples;
    /* The values inside Loop, Scan and SequenceMap bodies (owned), in the
     * order their owners run, body order within: taken by full runs that
     * measure every layer (opts.measure NULL). A data set's combined result
     * holds those of the sample it keeps (the one whose worst model output
     * is worst), not a reduction over the samples. */
    int n_body;
    mpx_body_layer *body;
} mpx_compare;

/* Runs the fp32 reference and the candidate assignment a (NULL: fp32) side by
 * side, node by node in topological order, computes every layer's metrics as
 * soon as both values exist, and frees each value once its last consumer has
 * run in both runs unless it is kept: memory stays near two live activation
 * sets, not two copies of the whole model. The same executor semantics as
 * mpx_run_graph (section "executor"); errors name the node. On error or
 * cancel nothing is returned. */
mpx_status mpx_compare_run(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                           const mpx_compare_opts *opts, mpx_compare **out, mpx_error *err);
/* Several candidates (n <= MPX_COMPARE_MAX_CANDS) against one reference
 * run, all streamed together: the reference is computed once, not once per
 * candidate (`compare fp16 bf16`). out[k] is a[k]'s result, the same as
 * mpx_compare_run(a[k]) gives bit for bit, except that peak_bytes is the
 * joint run's and ms_ref the shared reference's time. The cache is used
 * only when n is 1. On error nothing is returned. */
enum { MPX_COMPARE_MAX_CANDS = 8 };
mpx_status mpx_compare_run_many(const mpx_graph *g, const mpx_assign *const *a, int n,
                                const mpx_value *inputs, const mpx_compare_opts *opts,
                                mpx_compare **out, mpx_error *err);
void mpx_compare_free(mpx_compare *c);
/* The layer of a tensor, or NULL. */
const mpx_layer *mpx_compare_layer(const mpx_compare *c, int tensor);

/* ---- many samples (numerics/samples.c) ----------------------------------------
 * The figures of one plan run on several samples, layer by layer, and their
 * statistics. A layer's "worst" is taken per metric (the largest of a HIGH
 * metric, the smallest of a LOW one, NaN worst of all), so the worst rel_l2
 * and the worst cos of a layer may come from different samples. */
typedef enum mpx_stat {
    MPX_STAT_WORST,
    MPX_STAT_MEAN,   /* arithmetic mean (an infinite sample makes it infinite) */
    MPX_STAT_P95,    /* nearest rank: the ceil(0.95 n)-th best sample */
    MPX_STAT_SAMPLE, /* one sample's own figures */
} mpx_stat;

typedef struct mpx_samples {
    int n_layers, n_samples;
    int *tensor;           /* [n_layers] each layer's tensor (the first sample's order) */
    int *id;               /* [n_samples] the caller's number of each sample (e.g. its
                              index in a data set; a shard holds some of them) */
    bool local;            /* local figures held too */
    mpx_metrics *m;        /* [n_samples * n_layers], sample by sample */
    mpx_metrics *lm;       /* the same for local figures, or NULL */
    int cap;
    int kept;              /* the row of the sample whose values a comparison kept */
} mpx_samples;

mpx_samples *mpx_samples_new(void);
void mpx_samples_free(mpx_samples *S);
/* Appends c's figures as the next sample; c must have the same layers, in
 * the same order, as the first sample added. */
mpx_status mpx_samples_add(mpx_samples *S, const mpx_compare *c, int id, mpx_error *err);
/* The row of the sample numbered id, or -1. */
int mpx_samples_row(const mpx_samples *S, int id);
/* Writes stat over the samples (the sample of row k for MPX_STAT_SAMPLE) into
 * layers[0..n_layers) (their tensor, node and fmt are left as they are: the
 * caller's copy of the layers); worst_sample (may be NULL) [n_layers] gets, per
 * layer, the row of the sample with the worst rel_l2. */
mpx_status mpx_samples_reduce(const mpx_samples *S, mpx_stat stat, int k, mpx_layer *layers,
                              int *worst_sample, mpx_error *err);
/* Set a metric of m (a count is rounded). */
void mpx_metric_set(mpx_metrics *m, mpx_metric_id id, double v);

/* The incremental cache of mpx_compare_opts.cache: owned by the caller, one
 * per graph and input set in use (a run with other input values or another
 * graph does a full run and refills it; local runs leave it alone; the
 * caller clears it when a graph is freed, since a new one may reuse its
 * address). budget_bytes caps the values
 * it holds (0: 512 MB); over it, the values earliest in topological order
 * are dropped first (late recolours are the common case); a later run
 * needing a dropped candidate value makes it again from the values still
 * held (candidate work only), one needing a dropped reference value runs
 * in full. Peak memory of a cached run is about
 * the budget plus a run without it. NULL on out of memory. */
typedef struct mpx_compare_cache mpx_compare_cache;
mpx_compare_cache *mpx_compare_cache_new(size_t budget_bytes);
/* Forget everything held (e.g. when the inputs or the model change). */
void mpx_compare_cache_clear(mpx_compare_cache *k);
void mpx_compare_cache_free(mpx_compare_cache *k);
/* Bytes of values it holds now. */
size_t mpx_compare_cache_bytes(const mpx_compare_cache *k);
/* Back to the run before the last one, when the last was an incremental
 * run made with opts.undoable; false (nothing changes) otherwise. Either way
 * the cache describes a run it can continue from. */
bool mpx_compare_cache_undo(mpx_compare_cache *k);


/* ---- the executor's steps (numerics/exec.c) ----------------------------------
 * mpx_run_graph and mpx_compare_run are both built from these, so the two
 * follow one set of rules (section "executor"); a driver that runs nodes in
 * its own order (streaming, threads) uses them too. vals is always an array
 * of g->n_tensors values indexed by tensor->index. */

/* mpx_run_graph's refusals before anything runs (no kernel, unbound or
 * mismatched inputs, an assignment of another graph, a node input nothing
 * computes). */
mpx_status mpx_exec_check(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_error *err);
/* A node that is not run: every output is a constant the graph holds. */
bool mpx_exec_skipped(const mpx_node *n);
/* Whether a node runs in a run with these values: false for the nodes of
 * an If's branch its condition does not take (mpx_exec_node then computes
 * nothing and returns MPX_OK with every output absent). */
bool mpx_exec_active(const mpx_node *n, const mpx_value *vals);
/* Fill vals with what a run under a starts from: constants as borrowed views,
 * or rounded copies where a's format needs rounding; model inputs as copies
 * in their tensors' formats; everything else absent. On error every value is
 * freed (absent). */
mpx_status mpx_exec_start(const mpx_graph *g, const mpx_assign *a, const mpx_value *inputs,
                          mpx_value *vals, mpx_error *err);
/* One node under a: its float inputs, read from vals, converted to its compute
 * format (ref_inputs: vals are fp32 reference values, the local mode, so
 * every float input is converted); its kernel with its accumulation; its
 * float outputs rounded to its output format, then their tensors' formats.
 * outs[n->n_outputs] receives the outputs (owned by the caller; absent for
 * an omitted output). scratch_bytes (may be NULL): bytes of the converted
 * input copies held while the kernel ran. Reads vals and writes only outs,
 * its scratch and err: two calls may run at once on different outs and err.
 * On error outs are all absent and the message names the node. */
mpx_status mpx_exec_node(const mpx_node *n, const mpx_assign *a, const mpx_value *vals,
                         bool ref_inputs, mpx_value *outs, size_t *scratch_bytes,
                         mpx_error *err);

#endif
