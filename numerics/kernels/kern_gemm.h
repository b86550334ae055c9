/* kern_gemm.h - the packed, blocked GEMM core under Conv, ConvTranspose, Gemm
 * and MatMul (kern_nn.c), and the direct depthwise convolution
 * (kern_depthwise.c). Private to kernels/.
 *
 * What it computes, for every output value, whatever the CPU and the number
 * of threads (the bits never depend on either):
 *
 *   C(m, q) = sum over k = 0 .. K-1, in increasing k, of A(m, k) * B(k, q),
 *             then + bias(m) when there is a bias,
 *
 * and the sum
 *  - KG_FP32: in blocks of MPX_ACC_FP32_BLOCK (64) consecutive k, each block
 *    summed from 0 in fp32 with one fused multiply-add a term (the block's sum
 *    + A * B rounded once: C99's fmaf), then added to the running sum (which
 *    starts at +0);
 *  - KG_FP16, KG_BF16, KG_TF32: each product an fp32 product, the running sum
 *    after every addition the exact sum (running sum + product) rounded once
 *    to the format (mpx_round_sum), starting at +0, as mpx_acc with block 0;
 *    the bias is one more rounded addition. With fp16 operands (the product
 *    exact) each step is the fp16 fused multiply-add of fp16 hardware.
 * Where A and B hold 16-bit or 8-bit values (a low compute format) the
 * products are exact in fp32, so fused or not the bits are the same: the
 * fusing changes only fp32 products (the reference, nodes kept fp32).
 * The callers map a convolution onto this with B a shifted view of the
 * (zero-padded) input, so a kernel tap in the padding is a k whose product is
 * +-0: with finite weights adding it changes no running sum (a sum that
 * starts at +0 is never -0, and s + +-0 = s), so the result is the one that
 * skips those taps, except that in fp32 the tap still takes its place in its
 * block of 64. Callers check the weights are finite (0 * inf would be NaN).
 *
 * Why this shape: a register-blocked micro-kernel is the only way to get
 * near the FPU's peak, and packing both operands into the order the
 * micro-kernel reads them makes every load contiguous and keeps the B panel
 * in L1 and the A block in L2 (the BLIS design; MR x NR = 6 x 16 fills 12 of
 * AVX2's 16 vector registers with sums). Fused multiply-add in fp32: one
 * instruction where a multiply and an add were two, so the micro-kernel
 * does twice the work per cycle; the AVX2 and AVX-512 builds use the FMA
 * instruction (and need a CPU with it), the portable build fmaf, which
 * rounds identically, so the bits still do not depend on the CPU
 * (kern_check). Rounded accumulation is bound by the rounding itself
 * (F16C's two conversions per vector and addition for fp16). The code is
 * written once with GCC vector extensions and compiled three times: for
 * AVX-512 (the micro-kernels on 16-lane vectors; MPX_KERN_AVX2=1 declines
 * it), for AVX2 (+F16C for fp16 rounding, FMA), chosen at run time with
 * __builtin_cpu_supports, and for the baseline ISA (the portable path).
 *
 * What each part is for (none of it changes an output value's operations
 * or their order):
 *  - the fp32 AVX-512 kernels keep 6 rows by 2 or 4 panels of sums (24 of
 *    the 32 registers: enough fused multiply-adds in flight for both FMA
 *    ports, where one panel's 6 left them idle), one family for any row
 *    count, B packed or where it lies, the last panel's C columns masked
 *    (ukr16d); each call fetches the next row panel's A block into L1 and
 *    its share of the next call group's B into L2;
 *  - a convolution reads B from one padded, phase-split copy of its input
 *    shared by the work items (filled once, instead of per item and row
 *    block), and sums its C tile in a per-thread tile copied out once (its
 *    grid rows are wider than its output rows);
 *  - weights the graph holds are packed once and kept on their tensor
 *    (mpx_tensor.derived: kern_kept.c), a MatMul's constant B too, and a
 *    Gemm's constant transB weights (every Linear layer's export) as B^T
 *    panels from where they lie (kg_gemm.b_ldt) rather than transposing A
 *    and Y around the product every call; a candidate's weights come
 *    unrounded with their format (kg_gemm.a_fmt, b_fmt; run/exec.c) and are
 *    rounded as they are packed, the packing kept under the format, so no
 *    rounded copy is kept beside it except for routes that read B where it
 *    lies (kern_rounded.c);
 *  - a rounded accumulation's step is the exact sum rounded once (rounding
 *    the fp32 sum again would round twice): the portable and AVX2 builds
 *    make the fp32 sum round-to-odd with Fast2Sum (ro8), the AVX-512 build
 *    with the rounding-mode instructions (ro16, round_odd.h), and the AVX2
 *    build with fp16 operands under a round-towards-zero MXCSR, where the
 *    sticky bit is one ordered comparison (roz8, ukrz); with fp16 operands
 *    and fp16 sums (kg_gemm.f16) the step is an fp16 fused multiply-add,
 *    which AVX512-FP16 has (ukrh and dw_h16: fp16 sums in registers, A's
 *    terms broadcast from an fp16 copy of its panel, B converted as read;
 *    MPX_KERN_NOFP16=1 declines it, and kern_check runs the AVX-512 build
 *    both ways); the rounded modes take two panels a call (ukr16rp);
 *  - work is cut so the threads finish together: a convolution's row
 *    blocks are the count whose items share out most evenly
 *    (kg_row_blocks), and a convolution with too few 512-column bands is
 *    cut into narrower bands (at least 256 columns) before its rows are
 *    cut into blocks, each of which would pack its band's B again (a
 *    product whose B is packed per item likewise, its bands down to 64
 *    columns where A is small: a 1x1 convolution with few input
 *    channels); in
 *    the AVX-512 build, which reads a convolution's B where it lies, its
 *    bands are whole 64-column groups of the grid rather than whole grid
 *    rows (kg_col_split: no band but the last ends in a partial group),
 *    its fp32 products with C's rows as runs (a 1x1 at stride 2) read B
 *    there too, straight into C, and a last K block of at most 64 terms
 *    joins the one before it;
 *  - a convolution on a narrow map (at most 512 outputs), or a product with
 *    few columns whose rows are runs, runs with its output channels in the
 *    lanes (kg_lanes_run, the AVX-512 and AVX2 fp32 builds): on the grid a
 *    7 x 7 map's 49 outputs are 64 columns; MPX_KERN_NOLANES=1 declines it;
 *    the AVX2 build fetches the next panel's weights (they come from
 *    memory, each line once) a share a call; unit-stride grids drop one
 *    padding column (kern_nn.c);
 *  - where C's rows are runs and a K block has at most 64 terms (1x1
 *    convolutions with few input channels), the AVX2 and portable builds
 *    take a row panel at a time across a chunk's panels, so each C row is
 *    written as one run rather than panel by panel to places far apart;
 *  - the depthwise kernels (kern_depthwise.c) keep several independent
 *    chains of fused multiply-adds in flight: the narrow one sums 6
 *    outputs of a row side by side, the wide one 3 rows, and the narrow
 *    one moves channels into and out of the lanes with 8 x 8 register
 *    transposes over the planes' flat positions.
 * Tried and not kept, because each was slower where it was measured: B
 * read where it lies in the AVX2 build (the packing it saves comes back as
 * slower unaligned loads in the kernel, also for products with few rows),
 * prefetching the next row panel's A in the AVX2 build (in a burst or a
 * line every other term), packing B a panel at a time instead of a term at
 * a time (no gain), prefetching a convolution's input for the packing 9 or
 * 18 terms ahead (AVX2, no gain), the lanes path for every map size, the
 * AVX2 lanes path with the outputs' panels outside the channels' (no gain;
 * slower on 14 x 14), its outputs cut into panels as even as they go (49
 * as 4 x 6 + 5 x 5, not 8 x 6 + 1: no gain), its weights' fetches into L2
 * only (prefetcht1) or only for weights larger than L2 (no difference
 * measured), its kept weights on 2 MB pages (no gain), K blocks of 64
 * terms for the wide products, two depthwise rows at a time (no gain);
 * in the AVX-512 build, a convolution's K blocks of 192 or 256 terms
 * instead of 128 (no gain on ResNet-18's shapes, slower on UNet's 256 x
 * 256 ones), and its shared copy made, filled and read a slab of grid
 * rows at a time where it exceeds 1 MB, to keep it in the caches (UNet's
 * 3x3 convolutions on 256 x 256 maps: within 2% on one thread, 1.3-1.5x
 * slower on two); a unit-stride 1x1 convolution's B (the input's planes)
 * read where it lies rather than packed (16 -> 72 on 56 x 56, one
 * thread: 0.042 -> 0.043 ms, the packing saved came back as the kernel's
 * loads from 16 planes). */
#ifndef MPX_KERN_GEMM_H
#define MPX_KERN_GEMM_H

#include "kern_internal.h"

typedef enum kg_mode { KG_FP32 = 0, KG_FP16 = 1, KG_BF16 = 2, KG_TF32 = 3 } kg_mode;
/* Inside the AVX2 micro-kernel only: KG_FP16 under a round-towards-zero
 * MXCSR (kern_gemm_body.h, ukrz). */
enum { KG_FP16Z = 4 };

/* The mode for an accumulation, or -1 when the core does not handle it
 * (rounding per block of terms; fp8 accumulation): the caller's general
 * path does. */
int kg_mode_of(const mpx_accum *m);

/* A convolution's input as B (Conv through the GEMM core, and the depthwise
 * kernel): output (oh, ow) of the grid is column q = oh * Wq + ow, and the
 * term k = (ci, kh, kw) (ci < cig, input channel g * cig + ci of group g)
 * reads the zero-padded input at row oh sh + kh dh - pt, column
 * ow sw + kw dw - pl (zero outside the input). Columns ow >= OW of the grid
 * are computed and dropped (the caller's gvalid). The core copies the input
 * rows each work item needs into a per-thread strip, zero-padded and split
 * into stride phases, where B(k, q) is a fixed shift per k: packing is then
 * copies of 16 floats. */
typedef struct kg_conv {
    const float *x;  /* input channel c at x + c * H * W */
    int64_t H, W, KH, KW, sh, sw, dh, dw, pt, pl;
    int64_t OH, Wq;  /* grid rows; grid width, ceil((W + pl + pr) / sw) >= OW */
    int64_t cig;
} kg_conv;

/* One GEMM (per group g of G, with its operands offset by g times the group
 * strides):
 *   A(m, k) = a[g * ga + m * ams + k * aks]
 *   B(k, q) = b[g * gb + boff[k] + q]          (contiguous in q), or with conv
 *             set, the convolution's input above (b, boff, gb unused; N must
 *             be conv->OH * conv->Wq and K conv->cig * KH * KW)
 *   C(m, q) = c[g * gc + crow[m] + cmap(q)], where with r = q / gw and
 *             col = q % gw: cmap(q) = r * rs + col * cs, and only columns with
 *             col < gvalid are written (the others are computed and dropped)
 *   bias(m) = bias[g * gbias + m]              (bias NULL: none)
 * M, N, K > 0. C's values before the call are not read. */
typedef struct kg_gemm {
    int64_t M, N, K, G;
    const float *a;
    int64_t ams, aks, ga;
    const float *b;
    const int64_t *boff;
    int64_t gb;
    const kg_conv *conv;
    float *c;
    const int64_t *crow;
    int64_t gc, gw, gvalid, rs, cs;
    const float *bias;
    int64_t gbias;
    kg_mode mode;
    /* A, B and the bias hold fp16 values (the node computes in fp16, so
     * the executor rounded its inputs): with mode KG_FP16 each step is an
     * fp16 fused multiply-add, which AVX512-FP16 does in one instruction. */
    bool f16;
    /* A must hold finite values only (a convolution's weights: a padding
     * tap is a 0 * w product, NaN for an infinite w). Checked while A is
     * packed, not in a pass of its own: on ResNet-18 a separate scan of the
     * weights was 18% of the forward. */
    bool finite_a;
    /* A is this constant's own value (the graph's weights, not a rounded
     * copy): A is packed once, kept on it (mpx_tensor.derived) and reused
     * by later calls with the same layout, as runtimes pack weights when a
     * session starts; NULL: packed for this call. */
    mpx_tensor *a_owner;
    /* B is this constant's own value (a MatMul's weights), read as rows
     * boff[k] = k * ldb apart (G 1, no conv): B is packed once into the
     * micro-kernel's panels, kept on it likewise and read from there by
     * every later fp32 call (BERT-style: packing B was a quarter of the
     * forward); NULL: B packed per call. */
    mpx_tensor *b_owner;
    /* With b_owner: B is given as its transpose, element (k, n) at
     * b[n * b_ldt + k] (a Gemm's transB weights as stored), packed once
     * from there and kept like B's own packing; boff unused. A call whose
     * packing cannot be made returns KG_NOMEM. 0: B as boff says. */
    int64_t b_ldt;
    /* With a_owner (b_owner): A (B) is that constant's own values, handed
     * unrounded, and the product reads them rounded to this format (a
     * candidate's weights: mpx_kctx.in_round). The packing kept is the
     * fp32 one, and each item rounds the part of it it reads, a K block at
     * a time, into a buffer of its own (kern_gemm_core.h: kb_fmt, ka_fmt),
     * so no rounded copy of the weights is held beside it and no packing
     * per format (a report's two formats' were twice the weights' bytes,
     * a sweep's every format's another copy, and all of it fresh memory for
     * a session's first run); whether A's values stay finite in the format
     * is found once and kept (KG_KEPT_FINITE). Rounding is per value, so
     * the products read the same bits as from a packing of the rounded
     * copy. The matrix-vector route's 16-row panels and the fp16 FMA
     * kernel's A are rounded as packed and kept per format; a path that
     * reads B where it lies takes the kept rounded copy instead
     * (mpx_k_kept_rounded). NULL: the values as they are. */
    const mpx_format *a_fmt, *b_fmt;
} kg_gemm;

typedef enum kg_result {
    KG_NOMEM = 0,     /* out of memory (C partly written) */
    KG_DONE = 1,
    KG_NONFINITE = 2, /* finite_a and A holds inf or NaN: C not written */
} kg_result;
kg_result kg_gemm_run(const kg_gemm *j);

/* Whether n floats are all finite (no exponent field all ones): the packing
 * pass's check of each panel, and the callers' of weights the core does not
 * pack (the depthwise kernel's, ConvTranspose's). */
bool kg_all_finite(const float *v, int64_t n);

/* Depthwise convolution (one input and one output channel per group, so
 * conv->cig = 1), C channels: for channel ch and grid column q,
 *   y[ch * yc + (q / Wq) * OW + q % Wq] (for q % Wq < OW)
 *     = sum over taps k = (kh, kw) of w[ch * KH * KW + k] * input, + bias[ch],
 * the input read as kg_conv says for channel ch. In fp32, maps up to 23
 * outputs wide (56 at column stride 1) take 16 channels in the lanes, and kernels 3, 5 or 7 wide at
 * column stride 1 or 2 (undilated along the row, at most 64 taps) there
 * take sliding rows, each pixel loaded once for every output that reads
 * it (MPX_KERN_NOSLIDE=1 declines them: the same bits). */
typedef struct kg_dw {
    int64_t C, OW;
    const kg_conv *conv;
    const float *w, *bias;
    float *y;
    int64_t yc;
    kg_mode mode;
    bool f16; /* as kg_gemm's */
} kg_dw;

/* false: out of memory. */
bool kg_dw_run(const kg_dw *j);

/* Threads the core uses: 2, or MPX_KERN_THREADS (1..8) from the environment
 * (read at each call; for measurements). MPX_KERN_PORTABLE=1 likewise makes
 * the core use its baseline-ISA build on any CPU (for tests: the two builds
 * must agree bit for bit). */
int kg_threads(void);

#endif
