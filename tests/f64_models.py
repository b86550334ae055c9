"""float64 models for tests/f64_ort.sh (issue 48: float64 computed as float64).

f64_ops: float64 inputs X (values up to 1e229 and down to 1e-300, where an
fp32 copy gives inf and 0) and Z (moderate values, for the transcendental
ops), a float32 input F cast to float64, and float64 initializers, through
the ops mpx computes in double (numerics/kernels/kernels_f64.def):
element-wise unary and binary ops with broadcasting, the variadic ones,
comparisons and Where, Cast both ways, MatMul, Gemm, the reductions,
Softmax and LogSoftmax, and data movement (Reshape, Transpose, Concat,
Split, Slice, Gather, Unsqueeze, Squeeze, Flatten, Expand, Tile, Pad with a
float64 pad value, Identity, Dropout), ArgMax and ArgMin. Outputs keep 1e229 and 1e-300 alive to the
end, so a narrowing anywhere shows in the outputs as well as in the layer.

f64_nn: the float64 nn ops ONNX Runtime has double kernels for (pools,
normalisations, CumSum, TopK, EyeLike, Einsum) on values near 1e150; f64_np:
those it has none for (Conv, ConvTranspose, AveragePool, LpPool, the global
pools, InstanceNormalization, LRN), and f64_resize: Resize (opset 19: every
mode, coordinate transformation and nearest mode), which f64_np_check.py
checks against numpy; f64_loop: a Loop whose body computes in float64 (its
body figures).

f64_elem_ort and f64_elem_np: the element-wise, normalisation, loss and
attention ops (Gelu, Mish, HardSwish, Shrink, ThresholdedRelu, Hardmax, Det,
MeanVarianceNormalization, RMSNormalization, NegativeLogLikelihoodLoss,
SoftmaxCrossEntropyLoss, Attention; RoiAlign in f64_roi_ort) on values near 1e150 and on moderate values with
bits fp32 cannot hold (elem_model): f64_elem_ort the ones ONNX Runtime
computes in double (for ort_run.js), f64_elem_np the others and again
Gelu's tanh form and RMSNormalization (for f64_np_check.py).

f64_deform: DeformConv (group and offset_group 2, strides, pads, a mask,
a bias, offsets to fractional positions) on values near 1e150 and on
moderate values with bits fp32 cannot hold (deform_model), against ONNX
Runtime's double kernel.

f64_random: Bernoulli and Multinomial of float64 values (their draws).

f64_bn_train: a training-mode float64 BatchNormalization (against numpy);
f64_refused_ms_attention: a float64 com.microsoft Attention, refused when it
runs; f64_refused_celu: a float64 Celu (ONNX defines it for float only), refused
before the run.

f64_move, f64_scatter10, f64_signal, f64_control (against ONNX Runtime) and
f64_index (against numpy): the data movement, index, signal, control-flow
and sequence ops (write_signal_inputs, the models' docstrings).

Writes <out>/f64_ops.onnx, f64_nn.onnx, f64_np.onnx, f64_resize.onnx,
f64_loop.onnx, f64_bn_train.onnx, f64_elem_ort.onnx, f64_elem_np.onnx,
f64_roi_ort.onnx, f64_random.onnx, f64_refused_celu.onnx, f64_refused_ms_attention.onnx, f64_deform.onnx (and f64_rnn, f32_rnn, f64_up9,
f64_up7) and the inputs x.npy, z.npy, f.npy (<f8, <f8, <f4), n.npy, n2.npy,
elem_n.npy, elem_m.npy, deform_n.npy, deform_m.npy, rnd_p.npy, rnd_p_bad.npy, rnd_l.npy (<f8), e.npy (<i8), v.npy
(<f4), xr.npy, xr32.npy.

usage: python3 f64_models.py <out_dir>
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save, shape_inference

D, F, I, B = TensorProto.DOUBLE, TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(48)


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def adder(nodes):
    """n(op, inputs, output or [outputs], **attributes): a node named after
    its first output, appended to nodes."""
    def n(op, ins, outs, **kw):
        outs = outs if isinstance(outs, list) else [outs]
        nodes.append(helper.make_node(op, ins, outs, name=outs[0] + "_n", **kw))
    return n


def with_outputs(nodes, name, ins, inits, outs):
    """An opset 17 model whose outputs outs get the types and shapes ONNX
    infers for them (ORT wants them declared)."""
    g = helper.make_graph(nodes, name, ins, [], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    known = {v.name: v for v in shape_inference.infer_shapes(m).graph.value_info}
    m.graph.output.extend(known[o] for o in outs)
    return m


def ops_model():
    nodes, inits = [], []
    n = adder(nodes)

    inits += [init("W", rng.uniform(-2, 2, (4, 5))), init("Bv", rng.uniform(-1, 1, (5,))),
              init("two", np.array(2.0)), init("tiny", np.array([1e-300])),
              init("shape6x4", np.array([6, 4], np.int64)), init("idx", np.array([2, 0], np.int64)),
              init("ax2", np.array([2], np.int64)), init("ax0", np.array([0], np.int64)),
              init("pads", np.array([0, 1, 0, 0, 1, 0], np.int64)), init("reps", np.array([1, 2, 1], np.int64)),
              init("exp_shape", np.array([2, 2, 3, 4], np.int64)), init("starts", np.array([1], np.int64)),
              init("ends", np.array([4], np.int64)), init("sl_axes", np.array([2], np.int64)),
              init("split", np.array([1, 2], np.int64))]
    # element-wise on the extreme values (exact operations: bit for bit)
    n("Add", ["X", "Z"], "add")
    n("Sub", ["X", "Z"], "sub")
    n("Mul", ["X", "Z"], "mul")
    n("Div", ["X", "Z"], "div")
    n("Neg", ["X"], "neg")
    n("Abs", ["X"], "abs")
    n("Sqrt", ["abs"], "sqrt")
    n("Relu", ["X"], "relu")
    n("Max", ["X", "Z", "tiny"], "max")
    n("Min", ["X", "Z"], "min")
    n("Sum", ["X", "Z", "tiny"], "sum")
    n("Mul", ["X", "tiny"], "x_tiny")           # 1e-300 * 1e229: 1e-71, 0 in fp32
    n("Less", ["X", "Z"], "less")
    n("Greater", ["X", "Z"], "greater")
    n("Equal", ["X", "X"], "equal")
    n("Where", ["less", "X", "Z"], "where")
    n("Cast", ["F"], "f64", to=D)
    n("Add", ["X", "f64"], "x_plus_f")
    n("Cast", ["X"], "x32", to=F)                # 1e229 -> inf, as ORT
    n("Cast", ["Z"], "z_int", to=I)
    # transcendental, on moderate values
    n("Exp", ["Z"], "exp")
    n("Log", ["abs"], "log")
    n("Tanh", ["Z"], "tanh")
    n("Sigmoid", ["Z"], "sigmoid")
    n("Pow", ["Z", "two"], "pow")
    n("Sin", ["Z"], "sin")
    n("Cos", ["Z"], "cos")
    # products and reductions
    n("MatMul", ["Z", "W"], "matmul")
    n("Reshape", ["Z", "shape6x4"], "z2d")
    n("Gemm", ["z2d", "W", "Bv"], "gemm", alpha=0.5, beta=2.0)
    n("ReduceSum", ["X", "ax2"], "rsum", keepdims=1)
    n("ReduceMean", ["Z"], "rmean", axes=[1], keepdims=0)
    n("ReduceMax", ["X"], "rmax", axes=[0, 2], keepdims=1)
    n("ReduceMin", ["X"], "rmin", axes=[2], keepdims=0)
    n("ReduceProd", ["Z"], "rprod", axes=[2], keepdims=0)
    n("ReduceL2", ["Z"], "rl2", axes=[1], keepdims=1)
    n("ReduceLogSumExp", ["Z"], "rlse", axes=[2], keepdims=0)
    n("Softmax", ["Z"], "softmax", axis=-1)
    n("LogSoftmax", ["Z"], "logsoftmax", axis=1)
    # data movement of the extreme values
    n("Transpose", ["X"], "tr", perm=[2, 0, 1])
    n("Concat", ["X", "Z"], "cat", axis=1)
    n("Split", ["X", "split"], ["sp0", "sp1"], axis=1)
    n("Slice", ["X", "starts", "ends", "sl_axes"], "slice")
    n("Gather", ["X", "idx"], "gather", axis=1)
    n("Unsqueeze", ["X", "ax0"], "unsq")
    n("Squeeze", ["unsq", "ax0"], "sq")
    n("Flatten", ["X"], "flat", axis=1)
    n("Expand", ["X", "exp_shape"], "expand")
    n("Tile", ["X", "reps"], "tile")
    n("Pad", ["X", "pads", "tiny"], "pad", mode="constant")
    n("Identity", ["x_tiny"], "ident")
    n("ArgMax", ["X"], "argmax", axis=2, keepdims=0)
    n("ArgMin", ["Z"], "argmin", axis=1, keepdims=1, select_last_index=1)
    n("Dropout", ["X"], "drop")
    outs = ["add", "sub", "mul", "div", "neg", "sqrt", "relu", "max", "min", "sum", "ident", "where",
            "equal", "greater", "x_plus_f", "x32", "z_int", "exp", "log", "tanh", "sigmoid", "pow", "sin", "cos",
            "matmul", "gemm", "rsum", "rmean", "rmax", "rmin", "rprod", "rl2", "rlse", "softmax", "logsoftmax",
            "tr", "cat", "sp0", "sp1", "slice", "gather", "sq", "flat", "expand", "tile", "pad", "argmax", "argmin", "drop"]
    ins = [vi("X", D, [2, 3, 4]), vi("Z", D, [2, 3, 4]), vi("F", F, [2, 3, 4])]
    return with_outputs(nodes, "f64_ops", ins, inits, outs)


def bn_train_model():
    """A training-mode BatchNormalization of float64 values (opset 15: Y and
    the running mean and variance), on N (values near 1e150, one channel of
    moderate ones): against numpy (ONNX Runtime's inference build has no
    training mode)."""
    node = helper.make_node("BatchNormalization", ["N", "s", "b", "m", "v"], ["Y", "Ym", "Yv"], name="bn_train",
                            training_mode=1, momentum=0.8)
    inits = [init("s", rng.uniform(0.5, 2, 3)), init("b", rng.uniform(-1, 1, 3)), init("m", rng.uniform(-1, 1, 3)),
             init("v", rng.uniform(0.5, 2, 3))]
    g = helper.make_graph([node], "f64_bn_train", [vi("N", D, [1, 3, 5, 5])],
                          [vi("Y", D, [1, 3, 5, 5]), vi("Ym", D, [3]), vi("Yv", D, [3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    return m


def rnn_model(dtype=D, name="f64_rnn"):
    """LSTM, GRU and RNN of float64 values (ONNX Runtime 1.30's CPU provider
    computes none of them in double: it registers LSTM and GRU for double
    but refuses to run them, "does not support double yet", and has no
    double RNN): tests/f64_ort.sh checks them against numpy in double
    (f64_np_check.py). X [5, 3, 4] (layout 1: a Transpose of it), hidden 3,
    weights and inputs doubles fp32 cannot hold (one rounding anywhere in
    float moves the results by ~1e-8); the attributes in several
    combinations: directions, sequence_lens with bidirectional, initial
    states, peepholes, clip (below the largest pre-activations), input_forget,
    linear_before_reset 0 and 1, activations with alphas and betas, layout 1.
    With dtype float, the same model in float32 (f64_ort.sh's low-colouring
    check)."""
    npd = np.float64 if dtype == D else np.float32
    nodes = []
    n = adder(nodes)
    S, Bt, I_, H = 5, 3, 4, 3
    r = np.random.default_rng(4848)

    def u(shape, lo=-1.0, hi=1.0):
        return r.uniform(lo, hi, shape).astype(npd)

    inits = [init("lens", np.array([5, 2, 4], np.int32)), init("perm", np.array([1, 0, 2], np.int64))]
    for pre, G in (("l", 4), ("g", 3), ("r", 1)):
        for d in (1, 2):
            inits += [init("%sW%d" % (pre, d), u((d, G * H, I_))), init("%sR%d" % (pre, d), u((d, G * H, H), -0.8, 0.8)),
                      init("%sB%d" % (pre, d), u((d, 2 * G * H), -0.5, 0.5)), init("%sH%d" % (pre, d), u((d, Bt, H)))]
        inits += [init("%sHl" % pre, u((Bt, 1, H)))]
    inits += [init("lC2", u((2, Bt, H))), init("lP2", u((2, 3 * H), -0.5, 0.5)), init("lCl", u((Bt, 1, H))),
              init("lP1", u((1, 3 * H), -0.5, 0.5))]
    n("Transpose", ["X"], "xl", perm=[1, 0, 2])
    # LSTM
    n("LSTM", ["X", "lW1", "lR1", "lB1"], ["lstm_f", "lstm_f_h", "lstm_f_c"], hidden_size=H)
    n("LSTM", ["X", "lW2", "lR2", "lB2", "lens", "lH2", "lC2", "lP2"], ["lstm_b", "lstm_b_h", "lstm_b_c"],
      hidden_size=H, direction="bidirectional", clip=0.9)
    n("LSTM", ["X", "lW1", "lR1", "", "", "", "", "lP1"], ["lstm_r", "lstm_r_h", "lstm_r_c"], hidden_size=H,
      direction="reverse", input_forget=1, activations=["HardSigmoid", "Softsign", "Elu"],
      activation_alpha=[0.3, 0.7], activation_beta=[0.45])
    n("LSTM", ["xl", "lW1", "lR1", "lB1", "", "lHl", "lCl"], ["lstm_l1", "lstm_l1_h", "lstm_l1_c"], hidden_size=H,
      layout=1)
    # GRU
    n("GRU", ["X", "gW1", "gR1", "gB1", "", "gH1"], ["gru_0", "gru_0_h"], hidden_size=H)
    n("GRU", ["X", "gW2", "gR2", "gB2", "lens", "gH2"], ["gru_1", "gru_1_h"], hidden_size=H,
      direction="bidirectional", linear_before_reset=1, clip=1.1)
    n("GRU", ["xl", "gW1", "gR1", "gB1", "", "gHl"], ["gru_l1", "gru_l1_h"], hidden_size=H, layout=1,
      direction="reverse", activations=["HardSigmoid", "ScaledTanh"], activation_alpha=[0.25, 1.3],
      activation_beta=[0.55, 0.8])
    # RNN
    n("RNN", ["X", "rW1", "rR1", "rB1"], ["rnn_f", "rnn_f_h"], hidden_size=H)
    n("RNN", ["X", "rW2", "rR2", "rB2", "lens", "rH2"], ["rnn_b", "rnn_b_h"], hidden_size=H,
      direction="bidirectional", activations=["LeakyRelu", "Tanh"], activation_alpha=[0.1], clip=1.2)
    n("RNN", ["xl", "rW1", "rR1", "", "", "rHl"], ["rnn_l1", "rnn_l1_h"], hidden_size=H, layout=1,
      activations=["Softplus"])
    outs = [o for nd in nodes for o in nd.output if o]
    g = helper.make_graph(nodes, name, [vi("X", dtype, [S, Bt, I_])], [vi(o, dtype, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 7
    return m


def upsample_model(opset):
    """Upsample of float64 values (opset 9: scales as input 1; 7: the scales
    attribute), nearest and linear; no double kernel in ONNX Runtime, so
    f64_np_check.py checks it against numpy. Scales whose source
    coordinates (asymmetric: out / scale) fp32 and double hold alike."""
    nodes = []
    n = adder(nodes)
    inits = []
    for name, mode, sc in (("up_near", "nearest", [1, 1, 2, 3]), ("up_lin", "linear", [1, 1, 2, 4]),
                           ("up_lin_c", "linear", [1, 2, 1, 2])):
        if opset >= 9:
            inits.append(init(name + "_s", np.array(sc, np.float32)))
            n("Upsample", ["N", name + "_s"], name, mode=mode)
        else:
            n("Upsample", ["N"], name, mode=mode, scales=[float(v) for v in sc])
    outs = [o.output[0] for o in nodes]
    g = helper.make_graph(nodes, "f64_up%d" % opset, [vi("N", D, [1, 3, 5, 5])], [vi(o, D, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 4
    return m

def nn_ort_model():
    """The float64 nn ops ONNX Runtime has double kernels for (opset 18, for
    GroupNormalization): MaxPool (with Indices), BatchNormalization,
    LayerNormalization, LpNormalization, GroupNormalization, CumSum, TopK,
    EyeLike, Einsum. N holds values near 1e150, which fp32 holds as inf."""
    nodes = []
    n = adder(nodes)

    inits = [init("bn_s", rng.uniform(0.5, 2, 3)), init("bn_b", rng.uniform(-1, 1, 3)),
             init("bn_m", rng.uniform(-1, 1, 3) * 1e150), init("bn_v", rng.uniform(0.5, 2, 3) * 1e300),
             init("ln_s", rng.uniform(0.5, 2, 5)), init("ln_b", rng.uniform(-1, 1, 5)),
             init("gn_s", rng.uniform(0.5, 2, 3)), init("gn_b", rng.uniform(-1, 1, 3)),
             init("cs_ax", np.array(2, np.int64)), init("cs_ax1", np.array(-1, np.int64)),
             init("k3", np.array([3], np.int64)), init("ein_v", rng.uniform(-1, 1, 5) * 1e150)]
    n("MaxPool", ["N"], ["maxpool", "maxpool_idx"], kernel_shape=[3, 3], strides=[2, 1], pads=[1, 1, 1, 0])
    n("MaxPool", ["N"], "maxpool_d", kernel_shape=[2, 2], dilations=[2, 2], ceil_mode=1)
    n("BatchNormalization", ["N", "bn_s", "bn_b", "bn_m", "bn_v"], "bn")
    n("LayerNormalization", ["N", "ln_s", "ln_b"], "ln", axis=-1)
    n("LayerNormalization", ["N"] + ["ln_s"], "ln2", axis=-1, epsilon=1e-3)
    n("LpNormalization", ["N"], "lpn2", axis=1, p=2)
    n("LpNormalization", ["N"], "lpn1", axis=-1, p=1)
    n("GroupNormalization", ["N", "gn_s", "gn_b"], "gn", num_groups=3)
    n("CumSum", ["N", "cs_ax"], "cumsum")
    n("CumSum", ["N", "cs_ax1"], "cumsum_er", exclusive=1, reverse=1)
    n("TopK", ["N", "k3"], ["topk", "topk_idx"], axis=-1)
    n("TopK", ["N", "k3"], ["topk_s", "topk_s_idx"], axis=1, largest=0)
    n("EyeLike", ["E"], "eye", dtype=D, k=1)
    n("EyeLike", ["N2"], "eye_d", k=-1)
    n("Einsum", ["N", "N"], "ein_bmm", equation="ncij,ncjk->ncik")
    n("Einsum", ["N", "ein_v"], "ein_vec", equation="nchw,w->nch")
    n("Einsum", ["N"], "ein_diag", equation="...ii->...i")
    n("Einsum", ["N", "N2"], "ein_outer", equation="nchw,ij")
    outs = [("maxpool", D), ("maxpool_idx", I), ("maxpool_d", D), ("bn", D), ("ln", D), ("ln2", D), ("lpn2", D),
            ("lpn1", D), ("gn", D), ("cumsum", D), ("cumsum_er", D), ("topk", D), ("topk_idx", I), ("topk_s", D),
            ("topk_s_idx", I), ("eye", D), ("eye_d", D), ("ein_bmm", D), ("ein_vec", D), ("ein_diag", D),
            ("ein_outer", D)]
    ins = [vi("N", D, [1, 3, 5, 5]), vi("E", TensorProto.INT64, [3, 4]), vi("N2", D, [4, 3])]
    g = helper.make_graph(nodes, "f64_nn", ins, [vi(o, t, None) for o, t in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def nn_np_model():
    """The float64 nn ops ONNX Runtime has no double kernel for (Conv,
    ConvTranspose, AveragePool, LpPool, the global pools,
    InstanceNormalization, LRN): tests/f64_ort.sh checks them against numpy
    (f64_np_check.py)."""
    nodes = []
    n = adder(nodes)

    inits = [init("cw", rng.uniform(-1, 1, (4, 3, 3, 3))), init("cb", rng.uniform(-1, 1, 4) * 1e150),
             init("gw", rng.uniform(-1, 1, (6, 1, 2, 3))),
             init("tw", rng.uniform(-1, 1, (3, 2, 3, 3))), init("tb", rng.uniform(-1, 1, 2) * 1e150),
             init("in_s", rng.uniform(0.5, 2, 3)), init("in_b", rng.uniform(-1, 1, 3))]
    n("Conv", ["N", "cw", "cb"], "conv", pads=[1, 1, 1, 1])
    n("Conv", ["N", "gw"], "conv_g", group=3, strides=[2, 1], dilations=[1, 2], pads=[0, 2, 1, 0])
    n("ConvTranspose", ["N", "tw", "tb"], "convt", strides=[2, 2], pads=[1, 0, 0, 1])
    n("AveragePool", ["N"], "avgpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    n("AveragePool", ["N"], "avgpool_p", kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    n("LpPool", ["N"], "lppool", kernel_shape=[2, 2], p=2)
    n("LpPool", ["N"], "lppool1", kernel_shape=[3, 1], p=1, pads=[1, 0, 1, 0])
    n("GlobalAveragePool", ["N"], "gap")
    n("GlobalMaxPool", ["N"], "gmp")
    n("GlobalLpPool", ["N"], "glp", p=2)
    n("InstanceNormalization", ["N", "in_s", "in_b"], "inorm", epsilon=1e-3)
    n("LRN", ["N"], "lrn", size=3)
    n("LRN", ["N"], "lrn4", size=4, alpha=2e-3, beta=0.6, bias=2.0)
    outs = ["conv", "conv_g", "convt", "avgpool", "avgpool_p", "lppool", "lppool1", "gap", "gmp", "glp", "inorm",
            "lrn", "lrn4"]
    return with_outputs(nodes, "f64_np", [vi("N", D, [1, 3, 5, 5])], inits, outs)


def resize_model():
    """Resize of float64 values (no double kernel in ONNX Runtime's CPU
    provider): every mode, coordinate transformation and nearest mode mpx
    supports, at opset 19 (half_pixel_symmetric). The scales and sizes put
    every source coordinate on a number fp32 and double both hold exactly,
    so that numpy's coordinates in double are mpx's (fp32, as ORT's) and
    the comparison sees only the values' arithmetic. The roi is float64."""
    nodes = []
    n = adder(nodes)

    inits = [init("s_up", np.array([1, 1, 2, 2], np.float32)), init("s_down", np.array([1, 1, 0.5, 0.5], np.float32)),
             init("s_mix", np.array([1, 1, 0.5, 2], np.float32)), init("s_mix2", np.array([1, 1, 2, 0.5], np.float32)),
             init("sz_ac", np.array([1, 3, 3, 9], np.int64)), init("sz_crop", np.array([1, 3, 5, 6], np.int64)),
             init("roi", np.array([0, 0, 0.25, 0, 1, 1, 0.75, 1.25], np.float64))]
    n("Resize", ["N", "", "s_up"], "rs_near")
    n("Resize", ["N", "", "s_up"], "rs_near_pc", coordinate_transformation_mode="asymmetric",
      nearest_mode="round_prefer_ceil")
    n("Resize", ["N", "", "s_up"], "rs_near_pf", coordinate_transformation_mode="asymmetric")
    n("Resize", ["N", "", "s_mix"], "rs_near_fl", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    n("Resize", ["N", "", "s_up"], "rs_near_ce", coordinate_transformation_mode="tf_half_pixel_for_nn",
      nearest_mode="ceil")
    n("Resize", ["N", "", "s_up"], "rs_lin", mode="linear")
    n("Resize", ["N", "", "s_down"], "rs_lin_d", mode="linear")
    n("Resize", ["N", "", "", "sz_ac"], "rs_lin_ac", mode="linear", coordinate_transformation_mode="align_corners")
    n("Resize", ["N", "", "s_mix2"], "rs_lin_pt", mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
    n("Resize", ["N", "", "s_up"], "rs_lin_sym", mode="linear", coordinate_transformation_mode="half_pixel_symmetric")
    n("Resize", ["N", "", "s_up"], "rs_cub", mode="cubic")
    n("Resize", ["N", "", "s_mix"], "rs_cub_m", mode="cubic")
    n("Resize", ["N", "", "s_up"], "rs_cub_x", mode="cubic", coordinate_transformation_mode="asymmetric",
      cubic_coeff_a=-0.5, exclude_outside=1)
    n("Resize", ["N", "roi", "", "sz_crop"], "rs_crop", mode="linear",
      coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.5)
    n("Resize", ["N", "roi", "", "sz_crop"], "rs_crop_n", coordinate_transformation_mode="tf_crop_and_resize")
    outs = [o.output[0] for o in nodes]
    g = helper.make_graph(nodes, "f64_resize", [vi("N", D, [1, 3, 5, 5])], [vi(o, D, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return m


def loop_model():
    """A Loop over a float32 value whose body computes in float64: v * 1e200
    (fp32 and fp16 hold it as inf), then * 1e-200 and back to float32; the
    body's float64 values are compared iteration by iteration."""
    body_nodes = [
        helper.make_node("Cast", ["v_in"], ["vd"], name="vd_n", to=D),
        helper.make_node("Constant", [], ["big"], name="big_n", value=numpy_helper.from_array(np.array(1e200))),
        helper.make_node("Constant", [], ["small"], name="small_n", value=numpy_helper.from_array(np.array(1e-200))),
        helper.make_node("Mul", ["vd", "big"], ["huge"], name="huge_n"),
        helper.make_node("Mul", ["huge", "small"], ["back"], name="back_n"),
        helper.make_node("Cast", ["back"], ["v_out"], name="v_out_n", to=F),
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond_n"),
    ]
    body = helper.make_graph(body_nodes, "body",
                             [vi("i", I, []), vi("cond_in", B, []), vi("v_in", F, [4])],
                             [vi("cond_out", B, []), vi("v_out", F, [4])])
    loop = helper.make_node("Loop", ["trips", "", "V"], ["V_out"], name="loop", body=body)
    g = helper.make_graph([loop], "f64_loop", [vi("V", F, [4])], [vi("V_out", F, [4])],
                          [init("trips", np.array(3, np.int64))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def move_model():
    """Data movement and index ops of float64 values against ONNX Runtime,
    exactly (tests/f64_ort.sh, the f64_move group): ScatterND and
    ScatterElements with every reduction (none, add, mul, max, min: each
    update meets the data in double in index order, as ORT's), duplicate
    indices included; CenterCropPad; Unique (sorted, unsorted, along an
    axis). S holds values near 1e150 and bit patterns fp32 would change."""
    nodes = []
    n = adder(nodes)
    inits = [init("nd_i", np.array([[1], [3], [1]], np.int64)), init("nd_u", rng.uniform(-2, 2, (3, 5)) * 1e150),
             init("nd_i2", np.array([[0, 4], [2, 1], [0, 4]], np.int64)), init("nd_u2", rng.uniform(-2, 2, 3) * 1e-150),
             init("el_i", np.array([[0, 4, 4], [1, 1, 3], [2, 0, 2], [4, 3, 3]], np.int64)),
             init("el_u", rng.uniform(-2, 2, (4, 3)) * 1e150),
             init("el_i0", np.array([[0, 3, 3], [1, 1, 2], [2, 0, 2], [3, 3, 0]], np.int64)),
             init("cc_sh", np.array([6, 3], np.int64))]
    for r in ("none", "add", "mul", "max", "min"):
        kw = {} if r == "none" else {"reduction": r}
        n("ScatterND", ["S", "nd_i", "nd_u"], "snd_" + r, **kw)
        n("ScatterElements", ["S", "el_i", "el_u"], "sel_" + r, axis=1, **kw)
    n("ScatterND", ["S", "nd_i2", "nd_u2"], "snd_pt", reduction="add")
    n("ScatterElements", ["S", "el_i0", "el_u"], "sel_ax0", axis=0, reduction="add")
    n("CenterCropPad", ["S", "cc_sh"], "ccp")
    n("Unique", ["U"], ["uq", "uq_i", "uq_inv", "uq_c"])
    n("Unique", ["U"], ["uqn", "uqn_i", "uqn_inv", "uqn_c"], sorted=0)
    n("Unique", ["S"], ["uqa", "uqa_i", "uqa_inv", "uqa_c"], axis=0)
    outs = [o for nd in nodes for o in nd.output]
    types = {o: I for o in outs if o.endswith(("_i", "_inv", "_c"))}
    g = helper.make_graph(nodes, "f64_move", [vi("S", D, [4, 5]), vi("U", D, [9])],
                          [vi(o, types.get(o, D), None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def elem_model(name, ops, opset):
    """The element-wise and normalisation ops added to kernels_f64.def, as
    nodes of an opset `opset` model over two float64 inputs: N (2x3x4x4,
    values near 1e150, inf in fp32) and M (the same shape, moderate values
    with bits fp32 cannot hold, and rows whose largest value only double
    tells apart, for Hardmax). ops: (op, inputs, output, attributes). Every
    tensor is declared float64 (ONNX 1.12's shape inference does not know
    Gelu, Mish or RMSNormalization, and ort_compare.py's all-outputs copy
    reads the declared types); the losses' targets (2x4x4, two of them
    ignore_index -1) and class weights are initializers."""
    nodes = []
    n = adder(nodes)
    erng = np.random.default_rng(4848)
    targets = erng.integers(0, 3, (2, 4, 4))
    targets[0, 1, 2] = targets[1, 3, 0] = -1       # ignore_index
    inits = [init("det_scale", np.array([1e-130, 1e-100, 1e-80])[:, None, None]),
             init("rms_s", erng.uniform(0.5, 2, 4)), init("rms_s2", erng.uniform(0.5, 2, (3, 4, 4))),
             init("targets", targets.astype(np.int64)), init("cls_w", erng.uniform(0.5, 2, 3)),
             init("att_mask", erng.uniform(-1, 1, (4, 4))),
             init("rois", np.array([[0.3, 0.2, 3.1, 2.7], [1.0, 0.5, 2.25, 3.9], [-0.4, 1.3, 5.5, 3.2]])),
             init("roi_b", np.array([0, 1, 1], np.int64))]
    outs = []
    for op, ins, out, kw in ops:
        n(op, ins, out, **kw)
        outs += out if isinstance(out, list) else [out]
    shape = [2, 3, 4, 4]
    g = helper.make_graph(nodes, name, [vi("N", D, shape), vi("M", D, shape)], [vi(o, D, None) for o in outs],
                          [i for i in inits if any(i.name in ins for _, ins, _, _ in ops)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


# Run by ONNX Runtime in double (its CPU provider: Gelu's tanh form as a
# function of double ops, RMSNormalization's, the losses', Attention's and
# RoiAlign's own double kernels; at opset 23 it has no double Softplus, which Mish-22 expands to).
ELEM_ORT = [(op, [x], "%s_%s" % (out, x.lower()), kw) for x in ("N", "M") for op, out, kw in (
    ("Gelu", "gelu_t", {"approximate": "tanh"}),)] + [
    ("RMSNormalization", ["N", "rms_s"], "rms_n", {}),
    ("RMSNormalization", ["M", "rms_s"], "rms_m", {"epsilon": 1e-3}),
    ("RMSNormalization", ["M", "rms_s2"], "rms_m1", {"axis": 1}),
    ("NegativeLogLikelihoodLoss", ["M", "targets", "cls_w"], "nll_m", {"reduction": "none", "ignore_index": -1}),
    ("NegativeLogLikelihoodLoss", ["N", "targets"], "nll_n", {"ignore_index": -1}),
    ("SoftmaxCrossEntropyLoss", ["M", "targets"], ["sce_m", "sce_m_lp"], {"ignore_index": -1}),
    # on log-probabilities, as in a model: a weighted mean of losses of one
    # sign (M's mixed signs cancel in the sum, where another order moves
    # the last bits of a small mean)
    ("NegativeLogLikelihoodLoss", ["sce_m_lp", "targets", "cls_w"], "nll_mw", {"ignore_index": -1}),
    ("SoftmaxCrossEntropyLoss", ["N", "targets", "cls_w"], "sce_n", {"reduction": "sum", "ignore_index": -1}),
    ("SoftmaxCrossEntropyLoss", ["M", "targets", "cls_w"], "sce_mw", {"reduction": "none", "ignore_index": -1}),
    # Attention (opset 23) on [B 2, heads 3, tokens 4, 4]: plain, near 1e150
    # (scores near 1e300), with a float64 additive mask, is_causal, a soft
    # cap and a scale (ORT 1.30 cannot run a double mask with is_causal: its
    # function body mixes float and double)
    ("Attention", ["M", "M", "M"], "att_m", {}), ("Attention", ["N", "N", "N"], "att_n", {}),
    ("Attention", ["M", "N", "M", "att_mask"], "att_mk", {}), ("Attention", ["M", "M", "N"], "att_c", {"is_causal": 1}),
    ("Attention", ["M", "M", "N"], "att_cap", {"softcap": 2.0, "scale": 0.3})]
# RoiAlign (opset 17: ORT 1.30 has no double RoiAlign-22): avg and max, both
# coordinate modes, sampling_ratio 0 and 2
ROI_ORT = [
    ("RoiAlign", ["M", "rois", "roi_b"], "roi_m", {"output_height": 2, "output_width": 3}),
    ("RoiAlign", ["N", "rois", "roi_b"], "roi_n", {"output_height": 3, "output_width": 2, "sampling_ratio": 2,
                                                   "spatial_scale": 0.75}),
    ("RoiAlign", ["M", "rois", "roi_b"], "roi_mx", {"mode": "max", "coordinate_transformation_mode": "output_half_pixel",
                                                    "output_height": 2, "output_width": 2})]
# Without a double kernel in ONNX Runtime (it has no double Hardmax, Erf,
# HardSigmoid, ThresholdedRelu or Det, MeanVarianceNormalization's function
# mixes float and double, and its double Shrink computes in fp32: 1e39
# gives inf): against numpy (f64_np_check.py).
ELEM_NP = [(op, [x], "%s_%s" % (out, x.lower()), kw) for x in ("N", "M") for op, out, kw in (
    ("Gelu", "gelu", {}), ("Gelu", "gelu_t", {"approximate": "tanh"}), ("Mish", "mish", {}),
    ("HardSwish", "hswish", {}), ("Shrink", "shrink", {"lambd": 0.7, "bias": 0.2}), ("Shrink", "shrink0", {}),
    ("ThresholdedRelu", "thr", {"alpha": 0.3}), ("ThresholdedRelu", "thr1", {}), ("Hardmax", "hardmax", {}),
    ("Hardmax", "hardmax1", {"axis": 1}), ("MeanVarianceNormalization", "mvn", {}),
    ("MeanVarianceNormalization", "mvn_a", {"axes": [1, 3]}))] + [
    ("Mul", ["N", "det_scale"], "n_det_in", {}), ("Det", ["n_det_in"], "det_n", {}), ("Det", ["M"], "det_m", {}),
    ("RMSNormalization", ["N", "rms_s"], "rms_n", {}), ("RMSNormalization", ["M", "rms_s2"], "rms_m1", {"axis": 1})]


def random_model():
    """Bernoulli of float64 probabilities P (4000) and Multinomial of float64
    logits L (3x3, sample_size 3000): f64_ort.sh checks what their draws
    must show (mpx's generator is its own)."""
    nodes = []
    n = adder(nodes)
    n("Bernoulli", ["P"], "bern", seed=5.0)
    n("Multinomial", ["L"], "multi", sample_size=3000, seed=6.0, dtype=I)
    g = helper.make_graph(nodes, "f64_random", [vi("P", D, [4000]), vi("L", D, [3, 3])],
                          [vi("bern", D, [4000]), vi("multi", I, [3, 3000])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    return m


def scatter10_model():
    """Scatter (opset 10, ScatterElements' name before 11) of float64 data."""
    nodes = []
    n = adder(nodes)
    n("Scatter", ["S", "el_i", "el_u"], "scatter", axis=1)
    inits = [init("el_i", np.array([[0, 4, 4], [1, 1, 3], [2, 0, 2], [4, 3, 3]], np.int64)),
             init("el_u", rng.uniform(-2, 2, (4, 3)) * 1e150)]
    g = helper.make_graph(nodes, "f64_scatter10", [vi("S", D, [4, 5])], [vi("scatter", D, [4, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)])
    m.ir_version = 5
    return m


def signal_model():
    """The float64 ops that compute coordinates, weights or transforms,
    against ONNX Runtime's double kernels (rel_l2 < 1e-14): RoiAlign (avg
    and max, both coordinate modes, rois fp32 cannot hold), GridSample
    (linear, nearest, cubic; zeros, border, reflection;
    align_corners), AffineGrid (2-D and 3-D), DFT (real and complex input,
    inverse, onesided, dft_length shorter and longer than the signal), STFT
    (a float64 window, onesided and not), HannWindow and MelWeightMatrix
    with output_datatype double (opset 20). ORT's double HammingWindow and
    BlackmanWindow use fp32 coefficients (25/46 rounded to fp32: 2e-8 from
    ONNX's formula), so those two are checked against numpy (f64_index). G holds values near 1e150,
    the grid and theta doubles fp32 cannot hold."""
    nodes = []
    n = adder(nodes)
    inits = [init("sz2", np.array([2, 3, 4, 5], np.int64)), init("sz3", np.array([2, 1, 3, 2, 4], np.int64)),
             init("th2", rng.uniform(-1.2, 1.2, (2, 2, 3))), init("th3", rng.uniform(-1, 1, (2, 3, 4))),
             init("len6", np.array(6, np.int64)), init("len12", np.array(12, np.int64)),
             init("ax1", np.array(1, np.int64)), init("ax2", np.array(2, np.int64)),
             init("step3", np.array(3, np.int64)), init("fl6", np.array(6, np.int64)),
             init("win", rng.uniform(0.2, 1, 6)), init("wsz", np.array(10, np.int64)),
             init("mel_n", np.array(5, np.int64)), init("mel_dft", np.array(32, np.int64)),
             init("mel_sr", np.array(8000, np.int64)), init("mel_lo", np.array(60.0, np.float32)),
             init("mel_hi", np.array(3500.0, np.float32)),
             init("grid", rng.uniform(-1.3, 1.3, (1, 3, 4, 2))),
             init("rois", np.array([[0.3, 0.1, 5.7, 4.9], [1.1, 2.2, 3.3, 4.4], [-1.5, -0.5, 2.0, 1.0]]) +
                  rng.uniform(0, 1e-9, (3, 4))),
             init("roi_b", np.array([0, 0, 0], np.int64))]
    for mode in ("linear", "nearest", "cubic"):
        for pad in ("zeros", "border", "reflection"):
            for al in (0, 1):
                n("GridSample", ["G", "grid"], "gs_%s_%s_%d" % (mode, pad, al), mode=mode, padding_mode=pad,
                  align_corners=al)
    n("RoiAlign", ["G", "rois", "roi_b"], "ra", output_height=2, output_width=3, spatial_scale=0.5)
    n("RoiAlign", ["G", "rois", "roi_b"], "ra_max", output_height=3, output_width=2, sampling_ratio=2, mode="max",
      coordinate_transformation_mode="output_half_pixel")
    n("AffineGrid", ["th2", "sz2"], "ag2")
    n("AffineGrid", ["th2", "sz2"], "ag2_al", align_corners=1)
    n("AffineGrid", ["th3", "sz3"], "ag3")
    n("DFT", ["Q"], "dft")
    n("DFT", ["Q", "len6"], "dft_cut", onesided=1)
    n("DFT", ["Q", "len12", "ax1"], "dft_pad")
    n("DFT", ["dft"], "dft_inv", inverse=1)
    n("DFT", ["QC", "", "ax2"], "dft_c")
    n("STFT", ["QS", "step3", "win"], "stft")
    n("STFT", ["QS", "step3", "", "fl6"], "stft_two", onesided=0)
    n("HannWindow", ["wsz"], "hann", output_datatype=D)
    n("HannWindow", ["wsz"], "hann_s", output_datatype=D, periodic=0)
    n("MelWeightMatrix", ["mel_n", "mel_dft", "mel_sr", "mel_lo", "mel_hi"], "mel", output_datatype=D)
    outs = [o for nd in nodes for o in nd.output]
    ins = [vi("G", D, [1, 2, 3, 4]), vi("Q", D, [2, 8, 1]), vi("QC", D, [2, 3, 7, 2]), vi("QS", D, [2, 16, 1])]
    g = helper.make_graph(nodes, "f64_signal", ins, [vi(o, D, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    return m


def index_np_model():
    """The float64 index ops ONNX Runtime has no double kernel for, against
    numpy (f64_np_check.py): OneHot (float64 values, and float64 indices
    and depth), NonZero (1e-300 and -0.0 among the values: fp32 would make
    the first zero), MaxUnpool (values near 1e150, an output_shape), Col2Im
    (overlapping blocks summed in double, strides, pads, dilations),
    HammingWindow and BlackmanWindow (ONNX's formulas in double), MaxRoiPool
    (values near 1e150, corners rounded half away from zero), and
    Multinomial of float64 log-probabilities whose draws are certain (one
    class ahead by 1e150 or more: fp32 holds them as infinities, whose
    difference is NaN), and Bernoulli of probabilities 0 and 1 (float64, and
    float32 drawn into a float64 output): ONNX Runtime 1.30's Bernoulli gives
    1 where p is 0 and 0 where it is 1 (float and double), against ONNX's
    definition, so these are checked against the definition."""
    nodes = []
    n = adder(nodes)
    inits = [init("oh_i", np.array([[1, -1, 3], [0, 5, -4]], np.int64)), init("oh_d", np.array(4, np.int64)),
             init("oh_v", np.array([-1e-200, 3.0000000000000004e150])),
             init("oh_id", np.array([2.7, -0.5, -3.2])), init("oh_dd", np.array(5.0)),
             init("up_i", np.array([0, 3, 6, 9, 12, 15, 26, 29, 32, 35, 38, 41, 49, 51, 53, 55, 57, 59],
                                   np.int64).reshape(1, 3, 2, 3)),
             init("up_os", np.array([1, 3, 5, 7], np.int64)),
             init("ci_img", np.array([5, 6], np.int64)), init("ci_blk", np.array([2, 3], np.int64)),
             init("ci_img2", np.array([4, 5], np.int64)), init("ci_blk2", np.array([2, 2], np.int64)),
             init("w_sz", np.array(11, np.int64)),
             init("mrp_rois", np.array([[0, 0.4, 0.2, 5.2, 3.0], [0, 2.0, 1.0, 2.9, 1.1], [0, -3.0, -1.0, 9.0, 7.0]]))]
    n("OneHot", ["oh_i", "oh_d", "oh_v"], "onehot", axis=1)
    n("OneHot", ["oh_id", "oh_dd", "oh_v"], "onehot_d")
    n("NonZero", ["Z"], "nonzero")
    n("MaxUnpool", ["P", "up_i"], "unpool", kernel_shape=[2, 2], strides=[2, 2])
    n("MaxUnpool", ["P", "up_i", "up_os"], "unpool_os", kernel_shape=[2, 2], strides=[2, 2])
    n("Col2Im", ["CI", "ci_img", "ci_blk"], "col2im")
    n("Col2Im", ["CI2", "ci_img2", "ci_blk2"], "col2im_s", strides=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 2])
    n("HammingWindow", ["w_sz"], "hamming", output_datatype=D)
    n("HammingWindow", ["w_sz"], "hamming_s", output_datatype=D, periodic=0)
    n("BlackmanWindow", ["w_sz"], "blackman", output_datatype=D)
    n("BlackmanWindow", ["w_sz"], "blackman_s", output_datatype=D, periodic=0)
    n("Multinomial", ["ML"], "multi", seed=5.0, sample_size=6, dtype=I)
    n("MaxRoiPool", ["P", "mrp_rois"], "mrp", pooled_shape=[2, 3], spatial_scale=0.5)
    n("Bernoulli", ["BP"], "bern", seed=3.0)
    n("Cast", ["BP"], "bp32", to=F)
    n("Bernoulli", ["bp32"], "bern_d", seed=4.0, dtype=D)
    outs = [o for nd in nodes for o in nd.output]
    ins = [vi("Z", D, [3, 4]), vi("P", D, [1, 3, 2, 3]), vi("CI", D, [2, 6, 16]), vi("CI2", D, [1, 8, 8]),
           vi("ML", D, [3, 4]), vi("BP", D, [2, 4])]
    types = {"nonzero": I, "multi": I, "bp32": F}
    g = helper.make_graph(nodes, "f64_index", ins, [vi(o, types.get(o, D), None) for o in outs],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def random_inputs(out):
    """P: 1000 zeros, 1000 ones, 2000 of 0.25; rnd_p_bad.npy: one of them
    1 + 2^-40, outside [0, 1] only in double. L: row 0 holds 1e150 (class 1
    always; fp32 would hold inf), row 1 equal logits, row 2 two logits of
    1e150 and one of -1e150 (classes 0 and 1 half each, never 2)."""
    p = np.concatenate([np.zeros(1000), np.ones(1000), np.full(2000, 0.25)])
    np.save(os.path.join(out, "rnd_p.npy"), p.astype("<f8"))
    p[1500] = 1.0 + 2.0 ** -40
    np.save(os.path.join(out, "rnd_p_bad.npy"), p.astype("<f8"))
    lg = np.array([[0.0, 1e150, -1e150], [0.5, 0.5, 0.5], [1e150, 1e150 + 0.0, -1e150]])
    np.save(os.path.join(out, "rnd_l.npy"), lg.astype("<f8"))


def deform_model():
    """DeformConv (opset 19) of float64 values against ONNX Runtime's double
    kernel (rel_l2 < 1e-14): on DN (2x4x6x7, values near 1e150, inf in fp32)
    and DM (moderate values with bits fp32 cannot hold), with group 2,
    offset_group 2, strides, asymmetric pads and a dilation, a mask and a
    bias; offsets that move the taps to fractional positions, some a pixel
    or more outside X; and on DM plainly (one group, no mask, no bias).
    The weights, offsets, mask and bias are doubles fp32 cannot hold."""
    nodes = []
    n = adder(nodes)
    drng = np.random.default_rng(4851)
    attrs = {"group": 2, "offset_group": 2, "strides": [2, 1], "pads": [1, 1, 2, 0], "dilations": [1, 2]}
    n("DeformConv", ["DN", "dc_w", "dc_off", "dc_b", "dc_mask"], "dc_n", **attrs)
    n("DeformConv", ["DM", "dc_w", "dc_off", "dc_b", "dc_mask"], "dc_m", **attrs)
    n("DeformConv", ["DM", "dc_w1", "dc_off1"], "dc_m1")
    # the first two nodes' output: 4x4 (OH (6 + 3 - 3) / 2 + 1, OW 7 + 1 - 5 + 1)
    inits = [init("dc_w", drng.uniform(-1, 1, (4, 2, 3, 3))),
             init("dc_off", drng.uniform(-1.6, 1.6, (2, 2 * 2 * 9, 4, 4))),
             init("dc_b", drng.uniform(-1, 1, 4)),
             init("dc_mask", drng.uniform(0, 1, (2, 2 * 9, 4, 4))),
             init("dc_w1", drng.uniform(-1, 1, (3, 4, 2, 2))),
             init("dc_off1", drng.uniform(-2.5, 2.5, (2, 2 * 4, 5, 6)))]
    outs = [vi(o, D, None) for o in ("dc_n", "dc_m", "dc_m1")]
    g = helper.make_graph(nodes, "f64_deform", [vi("DN", D, [2, 4, 6, 7]), vi("DM", D, [2, 4, 6, 7])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return m


def deform_inputs(out):
    """DN and DM of f64_deform (deform_n.npy, deform_m.npy)."""
    drng = np.random.default_rng(4852)
    np.save(os.path.join(out, "deform_n.npy"), (drng.uniform(-3, 3, (2, 4, 6, 7)) * 1e150).astype("<f8"))
    mv = drng.uniform(-3, 3, (2, 4, 6, 7)) + drng.uniform(-1, 1, (2, 4, 6, 7)) * 2.0 ** -35
    np.save(os.path.join(out, "deform_m.npy"), mv.astype("<f8"))


def refused_ms_attention_model():
    """A float64 com.microsoft Attention (ONNX Runtime's contrib op, float
    only there), which the float64 kernel refuses when it runs, naming the
    node; ONNX's own Attention is float64 (f64_elem_ort)."""
    n = helper.make_node("Attention", ["X", "aw", "ab"], ["att"], name="ms_att", domain="com.microsoft", num_heads=2)
    g = helper.make_graph([n], "f64_refused_ms_attention", [vi("X", D, [1, 3, 4])], [vi("att", D, None)],
                          [init("aw", rng.uniform(-1, 1, (4, 12))), init("ab", rng.uniform(-1, 1, 12))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 10
    return m


def refused_celu_model():
    """A float64 Celu (ONNX defines Celu for float only; ONNX Runtime refuses
    the model), which has no float64 kernel: refused before the run, naming
    the node."""
    n = helper.make_node("Celu", ["X"], ["celu"], name="celu")
    g = helper.make_graph([n], "f64_refused_celu", [vi("X", D, [2, 3])], [vi("celu", D, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m


def elem_inputs(out):
    """N and M of the elem models (elem_n.npy, elem_m.npy)."""
    erng = np.random.default_rng(4849)
    nv = erng.uniform(-3, 3, (2, 3, 4, 4)) * 1e150
    mv = erng.uniform(-3, 3, (2, 3, 4, 4)) + erng.uniform(-1, 1, (2, 3, 4, 4)) * 2.0 ** -35
    mv[0, 0, 0] = [1.0, 1.0 + 2.0 ** -40, 1.0 - 2.0 ** -41, 1.0]   # fp32: a tie, taken at 0
    mv[1, 2, 3] = [-2.0, 2.5, 2.5 + 2.0 ** -38, 2.5]
    mv[0, 1, 2, 1] = 0.7 + 2.0 ** -45                              # Shrink's lambd, just past it
    mv[0, 1, 2, 2] = 0.3 + 2.0 ** -45                              # ThresholdedRelu's alpha (0.3f is above 0.3)
    np.save(os.path.join(out, "elem_n.npy"), nv.astype("<f8"))
    np.save(os.path.join(out, "elem_m.npy"), mv.astype("<f8"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(ops_model(), os.path.join(out, "f64_ops.onnx"))
    save(bn_train_model(), os.path.join(out, "f64_bn_train.onnx"))
    save(nn_ort_model(), os.path.join(out, "f64_nn.onnx"))
    save(nn_np_model(), os.path.join(out, "f64_np.onnx"))
    save(resize_model(), os.path.join(out, "f64_resize.onnx"))
    save(loop_model(), os.path.join(out, "f64_loop.onnx"))
    save(rnn_model(), os.path.join(out, "f64_rnn.onnx"))
    save(rnn_model(F, "f32_rnn"), os.path.join(out, "f32_rnn.onnx"))
    save(upsample_model(9), os.path.join(out, "f64_up9.onnx"))
    save(upsample_model(7), os.path.join(out, "f64_up7.onnx"))
    write_signal_inputs(out)
    # the recurrent ops' input: doubles fp32 cannot hold, and its float32
    # rounding for f32_rnn
    xr = np.random.default_rng(4849).uniform(-1.5, 1.5, (5, 3, 4))
    np.save(os.path.join(out, "xr.npy"), xr.astype("<f8"))
    np.save(os.path.join(out, "xr32.npy"), xr.astype("<f4"))
    # the nn models' input: values near 1e150 (inf in fp32), ties for TopK
    # and MaxPool, moderate values between
    nv = rng.uniform(-3, 3, (1, 3, 5, 5)) * 1e150
    nv[0, 1] = rng.uniform(-3, 3, (5, 5))
    nv[0, 0, 2, 1] = nv[0, 0, 2, 3]
    np.save(os.path.join(out, "n.npy"), nv.astype("<f8"))
    np.save(os.path.join(out, "e.npy"), np.zeros((3, 4), np.int64))
    np.save(os.path.join(out, "n2.npy"), rng.uniform(-1, 1, (4, 3)).astype("<f8"))
    np.save(os.path.join(out, "v.npy"), np.array([1.5, -2.0, 3e-3, 7.0], "<f4"))
    x = rng.uniform(-3, 3, (2, 3, 4))
    x.flat[0], x.flat[1], x.flat[5], x.flat[7] = 1e229, -3.7e229, 1e-300, -2.5e-300
    x.flat[10] = 1.0 + 2.0 ** -40   # a bit fp32 cannot hold
    z = rng.uniform(-2, 2, (2, 3, 4))
    z[np.abs(z) < 0.1] = 0.5
    x[1, 2, 1] = x[1, 2, 3] = 5.0    # ties: ArgMax takes the first, ArgMin with select_last_index the last
    z[0, 0, 0] = z[0, 2, 0] = -2.5
    np.save(os.path.join(out, "x.npy"), x.astype("<f8"))
    np.save(os.path.join(out, "z.npy"), z.astype("<f8"))
    np.save(os.path.join(out, "f.npy"), rng.uniform(-1, 1, (2, 3, 4)).astype("<f4"))
    save(elem_model("f64_elem_ort", ELEM_ORT, 23), os.path.join(out, "f64_elem_ort.onnx"))
    save(elem_model("f64_elem_np", ELEM_NP, 23), os.path.join(out, "f64_elem_np.onnx"))
    save(elem_model("f64_roi_ort", ROI_ORT, 17), os.path.join(out, "f64_roi_ort.onnx"))
    elem_inputs(out)
    save(random_model(), os.path.join(out, "f64_random.onnx"))
    save(refused_celu_model(), os.path.join(out, "f64_refused_celu.onnx"))
    save(refused_ms_attention_model(), os.path.join(out, "f64_refused_ms_attention.onnx"))
    random_inputs(out)
    save(deform_model(), os.path.join(out, "f64_deform.onnx"))
    deform_inputs(out)


def control_model():
    """If, Loop, Scan, SequenceMap and the sequence and optional ops carrying
    float64 values (opset 17), against ONNX Runtime bit for bit: every value
    is moved or computed with exact operations (products by powers of two,
    sums of values that fit), so the doubles must match. S holds values near
    1e150 and a bit fp32 drops; CD > 0 selects If's branch."""
    def g(nodes, name, ins, outs):
        return helper.make_graph(nodes, name, ins, outs)

    def node(op, ins, outs, **kw):
        return helper.make_node(op, ins, outs if isinstance(outs, list) else [outs], name=(
            outs if isinstance(outs, str) else outs[0]) + "_n", **kw)
    then_b = g([node("Mul", ["S", "two"], "if_then")], "then", [], [vi("if_then", D, None)])
    else_b = g([node("Neg", ["S"], "if_else")], "else", [], [vi("if_else", D, None)])
    loop_b = g([node("Mul", ["lv_in", "quarter"], "lv_out"), node("Identity", ["lc_in"], "lc_out"),
                node("Add", ["lv_out", "S"], "l_scan")], "loop_body",
               [vi("li", I, []), vi("lc_in", B, []), vi("lv_in", D, [4, 5])],
               [vi("lc_out", B, []), vi("lv_out", D, [4, 5]), vi("l_scan", D, [4, 5])])
    scan_b = g([node("Add", ["ss_in", "sx"], "ss_out"), node("Mul", ["sx", "two"], "sy")], "scan_body",
               [vi("ss_in", D, [5]), vi("sx", D, [5])], [vi("ss_out", D, [5]), vi("sy", D, [5])])
    map_b = g([node("Mul", ["mx", "mx"], "my")], "map_body", [vi("mx", D, None)], [vi("my", D, None)])
    nodes = [
        node("Greater", ["CD", "zero_d"], "C"),
        node("If", ["C"], "if_out", then_branch=then_b, else_branch=else_b),
        node("Loop", ["trips", "", "S"], ["loop_v", "loop_scan"], body=loop_b),
        node("Scan", ["S0", "S"], ["scan_s", "scan_y"], body=scan_b, num_scan_inputs=1),
        node("SplitToSequence", ["S"], "seq", axis=1, keepdims=0),
        node("SequenceAt", ["seq", "one"], "seq_at"),
        node("SequenceLength", ["seq"], "seq_len"),
        node("SequenceInsert", ["seq", "S0", "one"], "seq_ins"),
        node("SequenceAt", ["seq_ins", "one"], "seq_ins_at"),
        node("SequenceErase", ["seq", "zero"], "seq_er"),
        node("ConcatFromSequence", ["seq_er"], "seq_cat", axis=0),
        node("ConcatFromSequence", ["seq"], "seq_stack", axis=1, new_axis=1),
        node("SequenceConstruct", ["S", "if_out"], "seq_c"),
        node("SequenceMap", ["seq_c"], "seq_sq", body=map_b),
        node("ConcatFromSequence", ["seq_sq"], "seq_sq_cat", axis=0),
        node("SequenceEmpty", [], "seq_e", dtype=D),
        node("SequenceInsert", ["seq_e", "S0"], "seq_e1"),
        node("ConcatFromSequence", ["seq_e1"], "seq_e_cat", axis=0),
        node("Optional", ["S"], "opt"),
        node("OptionalHasElement", ["opt"], "opt_has"),
        node("OptionalGetElement", ["opt"], "opt_get"),
    ]
    inits = [init("two", np.array(2.0)), init("quarter", np.array(0.25)), init("trips", np.array(3, np.int64)),
             init("one", np.array(1, np.int64)), init("zero", np.array(0, np.int64)), init("zero_d", np.array(0.0))]
    outs = [("if_out", D), ("loop_v", D), ("loop_scan", D), ("scan_s", D), ("scan_y", D), ("seq_at", D),
            ("seq_len", I), ("seq_ins_at", D), ("seq_cat", D), ("seq_stack", D), ("seq_sq_cat", D), ("seq_e_cat", D),
            ("opt_has", B), ("opt_get", D)]
    gr = helper.make_graph(nodes, "f64_control", [vi("S", D, [4, 5]), vi("S0", D, [5]), vi("CD", D, [])],
                           [vi(o, t, None) for o, t in outs], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m


def write_signal_inputs(out):
    """The data movement, index and signal models and their inputs: values
    near 1e150 (inf in fp32), tiny ones (0 in fp32) and doubles whose low
    bits fp32 drops."""
    save(move_model(), os.path.join(out, "f64_move.onnx"))
    save(scatter10_model(), os.path.join(out, "f64_scatter10.onnx"))
    save(signal_model(), os.path.join(out, "f64_signal.onnx"))
    save(index_np_model(), os.path.join(out, "f64_index.onnx"))
    save(control_model(), os.path.join(out, "f64_control.onnx"))
    r = np.random.default_rng(4850)
    s = r.uniform(-3, 3, (4, 5)) * 1e150
    s[1, 2] = 1.0 + 2.0 ** -40
    u = np.array([3e150, -1e-300, 3e150, 1.0 + 2.0 ** -40, 1.0, -0.0, 1.0, -1e-300, 2.5])
    z = r.uniform(-1, 1, (3, 4))
    z[0, 1] = z[2, 0] = 0.0
    z[1, 1], z[1, 3], z[2, 2] = 1e-300, -0.0, -2e-310
    for name, a in (("s", s), ("u", u), ("g", r.uniform(-3, 3, (1, 2, 3, 4)) * 1e150),
                    ("q", r.uniform(-3, 3, (2, 8, 1)) * 1e150), ("qc", r.uniform(-1, 1, (2, 3, 7, 2))),
                    ("qs", r.uniform(-3, 3, (2, 16, 1)) * 1e150), ("zz", z),
                    ("p", r.uniform(-3, 3, (1, 3, 2, 3)) * 1e150), ("ci", r.uniform(-3, 3, (2, 6, 16)) * 1e150),
                    ("ci2", r.uniform(-3, 3, (1, 8, 8)) * 1e150), ("s0", r.uniform(-3, 3, 5) * 1e150)):
        np.save(os.path.join(out, name + ".npy"), a.astype("<f8"))
    bp = (r.uniform(0, 1, (2, 4)) < 0.5).astype(np.float64)
    np.save(os.path.join(out, "bp.npy"), bp.astype("<f8"))
    ml = np.full((3, 4), -1e300)
    ml[0, 2], ml[1, 0], ml[2, 3] = 0.0, 1e150, -1e150
    np.save(os.path.join(out, "ml.npy"), ml.astype("<f8"))
    for name, c in (("c1", 1.0), ("c0", -1.0)):
        np.save(os.path.join(out, name + ".npy"), np.array(c, "<f8"))


if __name__ == "__main__":
    main()
