/* mpx_kernels.h - the op kernels: the accumulation every sum follows, the
 * context a kernel runs in, the kernel of each op (kernels.def), and the
 * start-up that registers them as graph/'s constant folder. Includes
 * mpx_formats.h.
 *
 * Kernels write into outputs they allocate; they allocate only scratch they
 * free before returning (and the derived forms of constants kept on the
 * graph: kern_kept.c). */
#ifndef MPX_KERNELS_H
#define MPX_KERNELS_H

#include "mpx_formats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== start-up (fold_eval.c) ================================================ */

/* Registers the kernels as graph/'s constant folder (mpx_graph_set_evaluator;
 * mpx_graph.h, "constant folding"), so shape inference folds every op that has
 * a kernel with the kernel's own arithmetic (fp32 reference accumulation) and
 * an op's meaning is written once, in its kernel. Call once at start, from one
 * thread, before mpx_graph_infer: the mpx program, the
 * benches and every test program do. Idempotent. */
void mpx_numerics_init(void);

/* Bytes of weights rounded to a low format and kept on their tensors for
 * later runs (kern_gemm.c: rounded once per weight and format,
 * freed with their graph; at most 1 GiB a process). Memory a report holds
 * beside its values, for the benches' accounting. */
size_t mpx_numerics_kept_rounded_bytes(void);

/* The forms of node n's constant weights that its kernel makes at its
 * first fp32 call and keeps on their tensors for later calls (the GEMM
 * core's packing of a MatMul's B, a recurrent op's W packed and R
 * transposed, a MatMulInteger's B in the integer core's rows), made now,
 * as a runtime packs weights when a session starts (kern_kept.c). About
 * the bytes made (0: none). Not for a node inside a body. */
size_t mpx_k_prepare_node(const mpx_node *n);

/* ==== reference kernels (kernels.c, kern_*.c) ====================== */

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
 * into its block's sum, one rounding: kern_gemm.h). With a low fmt the
 * running sum is rounded to fmt after every addition, the exact sum of the
 * running sum and the term rounded once (mpx_round_sum: as fp16 hardware
 * adds; rounding the fp32 sum would round twice) (block 0), or each block of `block` terms is summed in fp32, rounded to fmt,
 * and added to the running sum, which is rounded to fmt (block > 0). A bias is
 * one more addition. The kernel's output is rounded by the executor.
 * Flags (the `accum` rule's options, colour/rules.c) change these choices,
 * or an op's internal steps, where a runtime makes other ones (PyTorch's
 * CPU bf16: docs/fidelity.md); no flags is the behaviour above. */
#define MPX_ACC_FP32_BLOCK 64

enum {
    /* Conv and ConvTranspose with a rounded accumulate format: the running
     * sum starts at the bias (rounded to fmt) instead of adding it last. */
    MPX_ACC_BIAS_FIRST = 1,
    /* GlobalAveragePool: the sum is rounded to the node's compute format
     * (mpx_kctx.round) before the division, as a mean computed as a
     * low-precision sum then divided is. */
    MPX_ACC_ROUND_SUM = 2,
    /* LayerNormalization with a rounded accumulate format: the mean and
     * variance by Welford's algorithm over 16 interleaved lanes in chunks
     * of 16, merged by a cascade, every step rounded to fmt; 1/sqrt and the
     * affine factors rounded too (PyTorch 1.13's CPU RowwiseMoments and
     * layer_norm in bf16: kern_norm.c). */
    MPX_ACC_WELFORD = 4,
    /* Sigmoid with a rounded accumulate format: 1/(1 + e^-x) with e^-x and
     * the sum 1 + e^-x each rounded to fmt, the division in fp32 (the
     * executor rounds it, or a fuse rule hands it on unrounded): the steps
     * of PyTorch 1.13's CPU bf16 silu, x / (1 + exp(-x)) on bf16 vectors,
     * whose division the Mul after the Sigmoid then makes (kern_elem.c). */
    MPX_ACC_STEPS = 8,
    /* Div with a rounded accumulate format: a * r(1/b), the divisor's
     * reciprocal rounded to fmt, for a runtime that multiplies by a
     * low-precision constant where the exported graph divides (PyTorch's
     * CPU GELU: x * bf16(M_SQRT1_2), exported as Div by sqrt 2). */
    MPX_ACC_RECIPROCAL = 16,
    /* Gemm and MatMul with fp32 accumulation: the sum one term after another
     * in fp32 from +0, no blocks of MPX_ACC_FP32_BLOCK (the row updates of
     * kern_matmul.c, not the GEMM core), a bias after it: PyTorch 1.13's CPU
     * bf16 addmm and bmm with a transposed operand (cpublas's scalar loops). */
    MPX_ACC_SEQUENTIAL = 32,
    /* Softmax over the last axis, sums in fp32: each row as PyTorch 1.13's
     * AVX2 kernel (_vec_softmax_lastdim for bf16) computes it: exp by
     * Sleef's expf8_u10 over the first D - D % 8 values, summed in 8 lanes
     * reduced by AVX2's halving tree, the last D % 8 by the C library's
     * expf added after in order, each e multiplied by the fp32 1/sum
     * (kern_sleef.c). Needs an x86-64 CPU with AVX2 and FMA. */
    MPX_ACC_SLEEF_LANES = 64,
};

typedef struct mpx_accum {
    const mpx_format *fmt;   /* NULL means fp32 */
    int block;
    unsigned flags;          /* MPX_ACC_*; 0: as described above */
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
     * values inside the body go (run/kern_loop.c runs the reference
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
     * the executor keeping a rounded copy: run/exec.c). */
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
/* float64 (kern_f64.c, kernels_f64.def): a node that reads or writes a
 * float64 tensor (mpx_node_is_f64, by the tensors' dtypes) runs its op's
 * float64 kernel, computed in double; mpx_kernel_f64_for is NULL for an op
 * without one, which runs are refused for (never computed in fp32).
 * mpx_kernel_for_node is the kernel a node runs: the float64 one for a
 * float64 node, else its op's. */
mpx_kernel_fn mpx_kernel_f64_for(mpx_op op);
bool mpx_node_is_f64(const mpx_node *n);
mpx_kernel_fn mpx_kernel_for_node(const mpx_node *n);
/* Fill c->err naming the node and op, return st. */
mpx_status mpx_kernel_error(const mpx_kctx *c, mpx_status st, const char *fmt, ...);

/* A run's forms made before its values (kern_kept.c; a comparison makes
 * them at its start: run/compare.c). mpx_k_prepare_rounded: t's values
 * rounded to f, kept on t (as a run keeps them for a node that reads them
 * rounded in place), within the kept copies' budget. mpx_k_prepare_reads:
 * what n's kernel keeps of the constants a run hands it (given[k]: the
 * value of input k, a constant's own or its kept rounded copy, NULL for
 * any other input) with their formats (in_round, as mpx_kctx.in_round; may
 * be NULL) under accumulation acc and compute format round: the GEMM
 * core's packings (fp32; a matrix-vector product's in the rounded format
 * too), whether its weights stay finite in the format, and the rounded
 * copies a route reads in place. Its kernel is called as the run calls it, on
 * zeros of its other inputs' inferred shapes, its work items skipped; once
 * per node and formats (a mark kept on the weights), nothing where a shape
 * is not known. *zero, *zero_n: the zeros, grown as needed (start NULL, 0;
 * the caller frees *zero). Both return the count of forms made. */
size_t mpx_k_prepare_rounded(mpx_tensor *t, const mpx_format *f);
size_t mpx_k_prepare_reads(const mpx_node *n, const mpx_accum *acc, const mpx_format *round,
                           const mpx_format *const *in_round, const mpx_value *const *given, float **zero,
                           size_t *zero_n);
/* The count of forms kept on constants so far in the process (packings,
 * rounded copies): what the tests hold the prepared forms to. */
size_t mpx_numerics_kept_made(void);

#ifdef __cplusplus
}
#endif

#endif
