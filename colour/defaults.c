/* defaults.c - the default colour of every op: policy, kept in one table.
 *
 * Sources (read, not copied):
 *  - TensorFlow's grappler/optimizers/auto_mixed_precision_lists.h: the fp16
 *    lists (AutoMixedPrecisionListsFp16, formerly ...Cuda) and the bf16 lists
 *    (AutoMixedPrecisionListsMkl). allow -> green, infer -> gray,
 *    deny -> red, clear -> clear. TF names are mapped to ONNX ops below.
 *  - TVM's relay/transform/mixed_precision.py (ALWAYS / FOLLOW / NEVER), used
 *    where TF has no entry or where TVM's reason is numerical.
 *  - "mpx": an op neither list has; the comment gives the reasoning.
 *
 * Two columns: `narrow` for targets with a narrower exponent than fp32 (fp16,
 * fp8) and `wide` for targets with fp32's exponent range (bf16, tf32). They
 * differ exactly where the danger is range, not precision: TF's bf16 lists move
 * Mean and Sum from deny to infer, and mpx applies the same reasoning to every
 * op that is red only because long sums overflow fp16.
 *
 * Every op of graph/ops.def must have an entry: the table is made from
 * ops.def and names each op's entry, so an op without one does not compile.
 */
#include "mpx_colour.h"

#include <string.h>
#include <strings.h>

typedef struct entry {
    mpx_colour narrow, wide;
    const char *source;
} entry;

#define G MPX_COLOUR_GREEN
#define Y MPX_COLOUR_GRAY
#define C MPX_COLOUR_CLEAR
#define R MPX_COLOUR_RED
/* One named entry per op; the table below is made from graph/ops.def and
 * takes each op's entry by name, so an op without an entry does not compile
 * (the error names default_<op>). */
#define E(op, n, w, src) static const entry default_##op = {n, w, src}

/* An op mpx does not know cannot be reasoned about: keep it in fp32. */
static const entry default_unknown = {R, R, "mpx: unknown op, kept in fp32"};

/* Dot products. TF allow: Conv2D, Conv3D, DepthwiseConv2dNative,
 * Conv2DBackpropInput (the transposed convolution), MatMul, BatchMatMul,
 * Einsum; TVM always: conv*_transpose, dense. */
E(Conv, G, G, "TF AMP allow list (Conv2D)");
E(ConvTranspose, G, G, "TF AMP allow list (Conv2DBackpropInput); TVM always (conv2d_transpose)");
E(Gemm, G, G, "TF AMP allow list (MatMul); TVM always (dense)");
E(Det, R, R, "mpx: products of a whole matrix's pivots overflow and cancel (TVM never lists linalg)");
E(MatMul, G, G, "TF AMP allow list (MatMul, BatchMatMul)");
E(Einsum, G, G, "TF AMP allow list (Einsum)");

/* Normalisation. BatchNormalization at inference is an affine map: TF
 * infer (FusedBatchNormV3). LayerNormalization and InstanceNormalization
 * compute a mean and a variance over a whole row: TVM never (layer_norm,
 * "large summation"); with fp32's range (bf16) that is TF's Mean, infer.
 * LRN sums squares and raises to a power (TF deny: Pow, L2Loss). */
E(BatchNormalization, Y, Y, "TF AMP infer list (FusedBatchNormV3)");
E(LayerNormalization, R, Y, "TVM never (layer_norm: mean and variance of a row); gray for bf16 as TF's Mean");
E(InstanceNormalization, R, Y, "mpx: mean and variance over H*W, as TVM's layer_norm; gray for bf16 as TF's Mean");
/* The state carries each step's rounding into the next (kern_rnn.c):
 * over a long sequence the error grows with its length. TF AMP lists
 * cuDNN's RNNs as allow (they keep fp32 state internally, which ONNX's
 * ops do not promise); mpx starts them red and lets a rule say
 * otherwise. */
E(LSTM, R, R, "mpx: state carried across time steps in the output format (TF AMP allows CudnnRNN, whose state is fp32)");
E(GRU, R, R, "mpx: state carried across time steps in the output format (TF AMP allows CudnnRNN, whose state is fp32)");
E(RNN, R, R, "mpx: state carried across time steps in the output format (TF AMP allows CudnnRNN, whose state is fp32)");
E(LpNormalization, R, Y, "mpx: a sum of squares (p 2) or of magnitudes over the axis, as ReduceL2/ReduceL1");
E(RMSNormalization, R, Y, "mpx: a mean of squares over the normalised dims, as LayerNormalization");
E(GroupNormalization, R, Y, "mpx: mean and variance over each group, as InstanceNormalization");
E(MeanVarianceNormalization, R, Y, "mpx: as InstanceNormalization, and its variance is a difference of means (E[x^2] - E[x]^2) that cancels in fp16");
E(LRN, R, Y, "mpx: a sum of squares and a power, as TF's deny-listed L2Loss and Pow; gray for bf16");

/* Exact in any precision (a comparison, a select, a sign change, an
 * integer rounding of a value that is already in the format): TF clear
 * Relu, Relu6, Neg, Abs, Sign, Floor, Ceil, Round, ClipByValue, Identity,
 * IsNan, IsInf; TVM follow nn.dropout. */
E(Relu, C, C, "TF AMP clear list (Relu)");
E(ThresholdedRelu, C, C, "mpx: a comparison and a select, exact (as TF's clear Relu)");
E(Neg, C, C, "TF AMP clear list (Neg)");
E(Abs, C, C, "TF AMP clear list (Abs)");
E(Sign, C, C, "TF AMP clear list (Sign)");
E(Floor, C, C, "TF AMP clear list (Floor)");
E(Ceil, C, C, "TF AMP clear list (Ceil)");
E(Round, C, C, "TF AMP clear list (Round)");
E(Clip, C, C, "TF AMP clear list (ClipByValue)");
E(Identity, C, C, "TF AMP clear list (Identity)");
E(Dropout, C, C, "TVM follow (nn.dropout): the identity at inference");
E(Not, C, C, "mpx: boolean, no float values");
E(IsNaN, C, C, "TF AMP clear list (IsNan)");
E(IsInf, C, C, "TF AMP clear list (IsInf)");

/* Safe in low precision but rounding: TF infer LeakyRelu, Elu, Selu,
 * Sigmoid, Softplus, Softsign, Tanh, Log, Sqrt, Reciprocal (Inv), Erf. TVM
 * keeps erf in fp32 only because LLVM lacked an fp16 erf (a code
 * generation limit, not a numerical one), so Erf follows TF. */
E(LeakyRelu, Y, Y, "TF AMP infer list (LeakyRelu)");
E(Elu, Y, Y, "TF AMP infer list (Elu)");
E(Selu, Y, Y, "TF AMP infer list (Selu)");
E(Celu, Y, Y, "mpx: as Elu (TF AMP infer list)");
E(Sigmoid, Y, Y, "TF AMP infer list (Sigmoid)");
E(HardSigmoid, Y, Y, "mpx: an affine map and a clip (as TF's infer-listed Mul, Add)");
E(HardSwish, Y, Y, "mpx: x times HardSigmoid (as TF's infer-listed Mul)");
E(Softplus, Y, Y, "TF AMP infer list (Softplus)");
E(Softsign, Y, Y, "TF AMP infer list (Softsign)");
E(Mish, Y, Y, "mpx: x * tanh(softplus(x)), built from TF infer-listed ops");
E(Tanh, Y, Y, "TF AMP infer list (Tanh)");
E(Erf, Y, Y, "TF AMP infer list (Erf); TVM's never is a codegen limit");
E(Gelu, Y, Y, "mpx: x * Phi(x), built from TF infer-listed Erf/Tanh and Mul");
E(Log, Y, Y, "TF AMP infer list (Log)");
E(Sqrt, Y, Y, "TF AMP infer list (Sqrt)");
E(Reciprocal, Y, Y, "TF AMP infer list (Reciprocal, Inv)");
E(Sin, Y, Y, "mpx: bounded result; its error is the input's rounding");
E(Cos, Y, Y, "mpx: bounded result; its error is the input's rounding");
E(Asin, Y, Y, "mpx: bounded result; its error is the input's rounding (as Sin)");
E(Acos, Y, Y, "mpx: bounded result; its error is the input's rounding (as Sin)");
E(Atan, Y, Y, "mpx: bounded result; its error is the input's rounding (as Sin)");
E(Asinh, Y, Y, "mpx: grows like log|2x|, as Log (TF AMP infer list)");
E(Acosh, Y, Y, "mpx: grows like log(2x), as Log (TF AMP infer list)");
E(Atanh, Y, Y, "mpx: a difference of logs, as Log (TF AMP infer list)");
E(Shrink, Y, Y, "mpx: a comparison and an addition, as Add (TF AMP infer list)");

/* |f(x)| >> |x|: TF deny Exp, Pow; TVM never exp, power. Red for every
 * target: exp(x) overflows fp16 above x = 11 and loses bf16's precision in
 * its exponent. */
E(Exp, R, R, "TF AMP deny list (Exp)");
E(Pow, R, R, "TF AMP deny list (Pow)");
E(Sinh, R, R, "mpx: (exp(x) - exp(-x)) / 2, as Exp (TF AMP deny list)");
E(Cosh, R, R, "mpx: (exp(x) + exp(-x)) / 2, as Exp (TF AMP deny list)");
/* tan amplifies its input's rounding without bound near pi/2 (a matter
 * of precision, not range): red for every target. */
E(Tan, R, R, "mpx: unbounded near pi/2, where it amplifies the input's rounding");

/* Softmax-class: a sum of exponentials over a row. TF infers Softmax and
 * LogSoftmax, TVM never converts softmax: the row sum is what users find
 * broken in fp16 (attention rows longer than a few thousand overflow or
 * lose the small terms), so red for fp16, gray for bf16 (TF). CumSum is a
 * running sum over a whole axis (TF's deny-listed Sum). */
E(Softmax, R, Y, "TVM never (softmax: a row sum of exps); TF infer for bf16");
E(LogSoftmax, R, Y, "mpx: as Softmax (TVM never); TF infer for bf16");
E(Hardmax, C, C, "mpx: ArgMax as a one-hot row (TF AMP clear list: ArgMax)");
E(NegativeLogLikelihoodLoss, R, R, "mpx: a sum over the batch, as TF's deny-listed SparseSoftmaxCrossEntropyWithLogits");
E(SoftmaxCrossEntropyLoss, R, R, "TF AMP deny list (SoftmaxCrossEntropyWithLogits)");
E(CumSum, R, Y, "mpx: a running sum, as TF's deny-listed Sum; TF infer for bf16");

/* Binary arithmetic: TF infer Add/AddV2/AddN, Sub, Mul, RealDiv; TVM follow
 * nn.prelu (LeakyRelu with a slope tensor). */
E(Add, Y, Y, "TF AMP infer list (Add, AddV2, BiasAdd)");
E(Sub, Y, Y, "TF AMP infer list (Sub)");
E(Mul, Y, Y, "TF AMP infer list (Mul)");
E(Div, Y, Y, "TF AMP infer list (RealDiv)");
E(Sum, Y, Y, "TF AMP infer list (AddN)");
E(Mean, Y, Y, "mpx: elementwise mean of a few inputs, as TF's infer-listed AddN and RealDiv");
E(PRelu, Y, Y, "TF AMP infer list (LeakyRelu); TVM follow (nn.prelu)");
/* fmod of two values of a format is exactly representable in it. */
E(Mod, C, C, "mpx: fmod is exact");
E(Max, C, C, "TF AMP clear list (Maximum)");
E(Min, C, C, "TF AMP clear list (Minimum)");
E(And, C, C, "mpx: boolean, no float values");
E(BitShift, C, C, "mpx: unsigned integers, no float values");
E(BitwiseAnd, C, C, "mpx: integers, no float values");
E(BitwiseOr, C, C, "mpx: integers, no float values");
E(BitwiseXor, C, C, "mpx: integers, no float values");
E(BitwiseNot, C, C, "mpx: integers, no float values");
E(Or, C, C, "mpx: boolean, no float values");
E(Xor, C, C, "mpx: boolean, no float values");
E(Equal, C, C, "TF AMP clear list (Equal)");
E(Greater, C, C, "TF AMP clear list (Greater)");
E(Less, C, C, "TF AMP clear list (Less)");
E(GreaterOrEqual, C, C, "TF AMP clear list (GreaterEqual)");
E(LessOrEqual, C, C, "TF AMP clear list (LessEqual)");
E(Where, C, C, "TF AMP clear list (Select, SelectV2)");

/* Reductions. TF deny Mean, Sum, L2Loss for fp16 (a long sum overflows
 * 65504 or drops small terms), infer Mean and Sum for bf16; TVM never sum,
 * mean, variance. Prod is TF infer; Max/Min/ArgMax/ArgMin are TF clear. */
E(ReduceMean, R, Y, "TF AMP deny list (Mean); infer for bf16");
E(ReduceSum, R, Y, "TF AMP deny list (Sum); infer for bf16");
E(ReduceSumSquare, R, Y, "mpx: as TF's deny-listed L2Loss and Sum; gray for bf16");
E(ReduceL2, R, Y, "mpx: as TF's deny-listed L2Loss; gray for bf16");
E(ReduceL1, R, Y, "mpx: a long sum, as TF's deny-listed Sum; gray for bf16");
E(ReduceLogSum, R, Y, "mpx: a long sum, as TF's deny-listed Sum; gray for bf16");
E(ReduceLogSumExp, R, R, "mpx: a sum of exponentials over a row, as TF's deny-listed Exp");
E(ReduceProd, Y, Y, "TF AMP infer list (Prod)");
E(ReduceMax, C, C, "TF AMP clear list (Max)");
E(ReduceMin, C, C, "TF AMP clear list (Min)");
E(ArgMax, C, C, "TF AMP clear list (ArgMax)");
E(ArgMin, C, C, "TF AMP clear list (ArgMin)");

/* Pooling. TF clear MaxPool, infer AvgPool. A global average pool is TF's
 * Mean (deny for fp16, infer for bf16) and TVM's never-listed
 * global_avg_pool2d ("large summation"). LpPool sums powers (L2Loss). */
E(MaxPool, C, C, "TF AMP clear list (MaxPool)");
E(GlobalMaxPool, C, C, "TF AMP clear list (Max); TVM follow (global_max_pool2d)");
E(GlobalLpPool, R, Y, "mpx: a sum of p-th powers over the plane, as GlobalAveragePool's sum (TVM never)");
E(AveragePool, Y, Y, "TF AMP infer list (AvgPool)");
E(GlobalAveragePool, R, Y, "TVM never (global_avg_pool2d); TF deny (Mean), infer for bf16");
E(LpPool, R, Y, "mpx: a sum of powers, as TF's deny-listed L2Loss; gray for bf16");

/* Data movement and shape computation: TF clear ConcatV2, Split, Reshape,
 * Transpose, Squeeze, ExpandDims, StridedSlice/Slice, GatherV2, GatherNd,
 * Pad, BroadcastTo, Tile, DepthToSpace, SpaceToDepth, Shape, Size, Fill,
 * TopKV2, Where; TVM follow batch_flatten and cast. Resize copies values
 * when nearest (TF clear ResizeNearestNeighbor) but interpolates otherwise:
 * see mpx_colour_default_node. */
E(Resize, C, C, "TF AMP clear list (ResizeNearestNeighbor)");
E(GridSample, Y, Y, "mpx: interpolates like Resize in linear mode (gray, as TF's infer-listed resizes)");
E(Upsample, C, C, "TF AMP clear list (ResizeNearestNeighbor)");
E(Concat, C, C, "TF AMP clear list (ConcatV2)");
E(Split, C, C, "TF AMP clear list (Split, SplitV)");
E(Reshape, C, C, "TF AMP clear list (Reshape)");
E(Flatten, C, C, "TVM follow (nn.batch_flatten); a Reshape");
E(Transpose, C, C, "TF AMP clear list (Transpose)");
E(Squeeze, C, C, "TF AMP clear list (Squeeze)");
E(Unsqueeze, C, C, "TF AMP clear list (ExpandDims)");
E(Slice, C, C, "TF AMP clear list (Slice, StridedSlice)");
E(Gather, C, C, "TF AMP clear list (GatherV2)");
E(GatherElements, C, C, "TF AMP clear list (GatherNd)");
E(GatherND, C, C, "TF AMP clear list (GatherNd)");
/* With the default reduction (none) a scatter copies values: clear, as a
 * gather. A model that scatters with add or mul computes, and can colour
 * those nodes gray by a rule. */
E(ScatterElements, C, C, "mpx: a copy of values (reduction none), as TF's clear-listed Gather");
E(Scatter, C, C, "mpx: a copy of values, as TF's clear-listed Gather");
E(ScatterND, C, C, "mpx: a copy of values (reduction none), as TF's clear-listed Gather");
E(Pad, C, C, "TF AMP clear list (Pad, PadV2)");
E(Expand, C, C, "TF AMP clear list (BroadcastTo)");
E(Tile, C, C, "TF AMP clear list (Tile)");
E(DepthToSpace, C, C, "TF AMP clear list (DepthToSpace)");
E(Trilu, C, C, "mpx: a copy with zeros (as TF's clear-listed MatrixBandPart)");
E(SpaceToDepth, C, C, "TF AMP clear list (SpaceToDepth)");
E(Shape, C, C, "TF AMP clear list (Shape)");
E(Size, C, C, "TF AMP clear list (Size)");
E(Cast, C, C, "TVM follow (cast)");
E(CastLike, C, C, "TVM follow (cast): a Cast whose type comes from an input");
E(Constant, C, C, "mpx: a constant, converted offline");
E(ConstantOfShape, C, C, "TF AMP clear list (Fill)");
E(TopK, C, C, "TF AMP clear list (TopKV2)");
E(NonZero, C, C, "TF AMP clear list (Where)");
E(NonMaxSuppression, R, R, "mpx: which boxes survive turns on score and IoU comparisons that rounding can flip; ORT's CPU kernel is fp32 only");
/* TVM never (arange): the end of a range may not fit fp16, and bf16 holds
 * integers exactly only up to 256. */
E(Range, R, R, "TVM never (arange)");
/* Constants made from a size: they fold at load, so their colour
 * matters only where the size is data (then they make float values from
 * no float input, which the plan keeps in fp32). */
E(EyeLike, C, C, "mpx: zeros and ones, no float arithmetic (as TF's clear-listed Fill)");
E(OneHot, C, C, "mpx: copies of its two values (TF AMP clear list: OneHot)");
E(ReverseSequence, C, C, "mpx: reorders values, a copy (TF AMP clear list: ReverseSequence)");
/* The boundary of a QDQ model's integer arithmetic: its scale decides
 * the float type, and runtimes compute it in fp32 (ORT's QDQ kernels). */
E(QuantizeLinear, R, R, "mpx: rounds x / scale to integers; fp32 as ORT's QDQ kernels");
E(DequantizeLinear, R, R, "mpx: integers times a float scale; fp32 as ORT's QDQ kernels");
E(DynamicQuantizeLinear, R, R, "mpx: a min/max over the tensor, then QuantizeLinear; fp32 as ORT's");
E(Compress, C, C, "mpx: selects slices, a copy (as TF's clear-listed Gather)");
E(HannWindow, R, R, "mpx: a constant from an integer size (as TVM's never-listed arange)");
E(HammingWindow, R, R, "mpx: a constant from an integer size (as TVM's never-listed arange)");
E(BlackmanWindow, R, R, "mpx: a constant from an integer size (as TVM's never-listed arange)");
E(MelWeightMatrix, R, R, "mpx: a constant from integer sizes (as the windows)");
E(CenterCropPad, C, C, "mpx: copies values and pads with zeros (as TF's clear-listed Pad, Slice)");
E(Col2Im, Y, Y, "mpx: adds a few overlapping block values (as TF's infer-listed Add)");
E(AffineGrid, R, R, "mpx: sampling coordinates in [-1, 1]; fp16 resolves them to 1/2048, a quarter pixel at 1024 px");
E(MaxRoiPool, C, C, "mpx: the largest value in each bin (as MaxPool, TF AMP clear list)");
E(DeformConv, G, G, "mpx: a Conv with moved taps (TF AMP allow list: Conv2D)");
/* Containers: they move tensors, never compute on them (a plan gives a
 * sequence no format; the tensors in it keep their producers'). */
E(SequenceEmpty, C, C, "mpx: a container, no arithmetic");
E(SequenceConstruct, C, C, "mpx: a container, no arithmetic");
E(SequenceInsert, C, C, "mpx: a container, no arithmetic");
E(SequenceErase, C, C, "mpx: a container, no arithmetic");
E(SequenceAt, C, C, "mpx: hands on a tensor it holds, a copy");
E(SequenceLength, C, C, "mpx: an integer count");
E(SplitToSequence, C, C, "mpx: slices, a copy (as TF's clear-listed Split)");
E(ConcatFromSequence, C, C, "mpx: joins tensors, a copy (as TF's clear-listed ConcatV2)");
E(Optional, C, C, "mpx: a container, no arithmetic");
E(OptionalHasElement, C, C, "mpx: a boolean, no float values");
E(OptionalGetElement, C, C, "mpx: hands on what it holds, a copy");
E(SequenceMap, R, R, "mpx: runs a body per item (in the node's formats when low, as Loop)");
/* Random values: the same draws in every run (seeded), rounded to the
 * output format like any value; sampling decisions (Bernoulli's
 * comparison, Multinomial's classes) are made on fp32 inputs. */
E(RandomNormal, C, C, "mpx: makes values from no float input (as TF's clear-listed random ops)");
E(RandomUniform, C, C, "mpx: makes values from no float input (as TF's clear-listed random ops)");
E(RandomNormalLike, C, C, "mpx: reads only its input's shape (as TF's clear-listed random ops)");
E(RandomUniformLike, C, C, "mpx: reads only its input's shape (as TF's clear-listed random ops)");
E(Bernoulli, R, R, "mpx: a draw compared with a probability, which rounding can flip");
E(Multinomial, R, R, "mpx: classes drawn from a softmax (a row sum of exps, TVM never)");
/* A transform sums over its whole length, as a reduction does: red for
 * fp16 (TF's deny-listed Sum), gray for bf16. */
E(DFT, R, Y, "mpx: sums over the transform length, as TF's deny-listed Sum; gray for bf16");
E(STFT, R, Y, "mpx: a DFT per frame (sums over the frame, as TF's deny-listed Sum); gray for bf16");
/* Integer products of quantised models: int32 sums of integers, no
 * float values to plan; the QLinear forms requantise with float scales,
 * which a runtime keeps in fp32 (rounding them would move every
 * output). */
E(MatMulInteger, C, C, "mpx: integers in, int32 out, no float values");
E(ConvInteger, C, C, "mpx: integers in, int32 out, no float values");
E(QLinearMatMul, R, R, "mpx: integers in and out; its float scales stay fp32, as ORT's QLinear kernels");
E(QLinearConv, R, R, "mpx: integers in and out; its float scales stay fp32, as ORT's QLinear kernels");
E(MaxUnpool, C, C, "mpx: copies values into zeros (as MaxPool, TF AMP clear list)");
E(Unique, C, C, "mpx: copies and counts values (as TF's clear-listed UniqueV2)");
E(RoiAlign, Y, Y, "mpx: bilinear samples averaged (as GridSample, gray)");
/* An If hands on its taken branch's values: a copy. Its branches'
 * nodes are coloured as any other node. */
E(If, C, C, "mpx: selects one branch's outputs, a copy (as TF's clear-listed Select)");
/* A loop carries its state from iteration to iteration (its body runs in
 * the node's format): the rounding accumulates, as in the recurrent
 * ops, so fp32 unless a rule says otherwise. */
E(Loop, R, R, "mpx: state carried across iterations accumulates rounding (as LSTM, TVM never)");
E(Scan, R, R, "mpx: state carried across iterations accumulates rounding (as LSTM, TVM never)");
/* ONNX Runtime's contrib ops are fused forms of ONNX ops: each takes
 * the colour of the op it fuses. */
E(FusedMatMul, G, G, "mpx: MatMul with transposes and a scale (TF AMP allow list: MatMul)");
E(FastGelu, Y, Y, "mpx: as Gelu (tanh form), built from TF infer-listed Tanh, Mul, Add");
E(BiasGelu, Y, Y, "mpx: Add then Gelu, both gray (TF AMP infer list: Add, Erf)");
E(QuickGelu, Y, Y, "mpx: x * sigmoid(alpha x), as TF's infer-listed Sigmoid and Mul");
E(BiasAdd, Y, Y, "TF AMP infer list (BiasAdd, Add)");
E(SkipLayerNormalization, R, Y, "mpx: Add then LayerNormalization (TVM never: layer_norm); gray for bf16");
E(SkipSimplifiedLayerNormalization, R, Y, "mpx: Add then RMS normalisation, as LayerNormalization; gray for bf16");
E(SimplifiedLayerNormalization, R, Y, "mpx: ORT's name for RMSNormalization, as LayerNormalization");
E(MatMulNBits, G, G, "mpx: a MatMul with block-quantised weights (TF AMP allow list: MatMul)");
E(RotaryEmbedding, Y, Y, "mpx: x cos + x' sin per pair, as TF's infer-listed Mul and Add");
/* Fused attention: its two products are MatMuls (allow-listed), and its
 * softmax runs in fp32 inside the kernel (kern_attention.c), as fused
 * low-precision attention kernels do: green. */
E(Attention, G, G, "mpx: two MatMuls (TF AMP allow list) around an fp32 softmax, as fused attention kernels");
E(MultiHeadAttention, G, G, "mpx: as Attention (two MatMuls around an fp32 softmax)");
E(GroupQueryAttention, G, G, "mpx: as Attention (two MatMuls around an fp32 softmax), its cache in the low format");

static const entry *const table[MPX_OP_COUNT] = {
    [MPX_OP_UNKNOWN] = &default_unknown,
#define MPX_OP(name, shape, cost, fold) [MPX_OP_##name] = &default_##name,
#include "ops.def"
#undef MPX_OP
};

#undef G
#undef Y
#undef C
#undef R
#undef E

static bool wide_exponent(const mpx_format *target) {
    return target && target->exp_bits >= mpx_format_fp32.exp_bits;
}

mpx_colour mpx_colour_default(mpx_op op, const mpx_format *target, const char **source) {
    if ((unsigned)op >= MPX_OP_COUNT) op = MPX_OP_UNKNOWN;
    const entry *e = table[op];
    if (source) *source = e->source;
    return wide_exponent(target) ? e->wide : e->narrow;
}

mpx_colour mpx_colour_default_node(const mpx_node *n, const mpx_format *target,
                                   const char **source) {
    mpx_colour c = mpx_colour_default(n->op, target, source);
    if (n->op == MPX_OP_Resize || n->op == MPX_OP_Upsample) {
        const char *mode = mpx_node_attr_string(n, "mode", "nearest");
        if (strcmp(mode, "nearest") != 0) {
            if (source) *source = "mpx: Resize that interpolates rounds (as TF's infer-listed AvgPool)";
            return MPX_COLOUR_GRAY;
        }
    }
    return c;
}

static const char *const names[MPX_COLOUR_COUNT] = {"none", "green", "gray", "clear", "red"};

const char *mpx_colour_name(mpx_colour c) {
    return (unsigned)c < MPX_COLOUR_COUNT ? names[c] : "none";
}

mpx_colour mpx_colour_from_name(const char *s) {
    if (!s) return MPX_COLOUR_NONE;
    if (strcasecmp(s, "grey") == 0) return MPX_COLOUR_GRAY;
    for (int i = 1; i < MPX_COLOUR_COUNT; i++)
        if (strcasecmp(s, names[i]) == 0) return (mpx_colour)i;
    return MPX_COLOUR_NONE;
}
