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

f64_conv: a float64 Conv, which mpx has no float64 kernel for: refused.

Writes <out>/f64_ops.onnx, f64_conv.onnx and the inputs x.npy, z.npy,
f.npy (<f8, <f8, <f4).

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


def ops_model():
    nodes, inits = [], []

    def n(op, ins, outs, **kw):
        nodes.append(helper.make_node(op, ins, outs if isinstance(outs, list) else [outs],
                                      name=(outs if isinstance(outs, str) else outs[0]) + "_n", **kw))

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
    g = helper.make_graph(nodes, "f64_ops", ins, [], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    # the outputs' types and shapes as ONNX infers them (ORT wants them declared)
    known = {v.name: v for v in shape_inference.infer_shapes(m).graph.value_info}
    m.graph.output.extend(known[o] for o in outs)
    return m


def conv_model():
    w = init("Wc", rng.uniform(-1, 1, (2, 1, 3, 3)))
    node = helper.make_node("Conv", ["X", "Wc"], ["Y"], name="conv_d", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "f64_conv", [vi("X", D, [1, 1, 5, 5])], [vi("Y", D, [1, 2, 5, 5])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(ops_model(), os.path.join(out, "f64_ops.onnx"))
    save(conv_model(), os.path.join(out, "f64_conv.onnx"))
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


if __name__ == "__main__":
    main()
