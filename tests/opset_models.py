"""Models stamped with ONNX opsets 1-6 for tests/opset_ort.sh.

Each good model uses the op forms of its opset (attributes that later became
inputs or were dropped, the old broadcast rules); mpx reads them in opset 7's
form (graph/onnx_legacy.c) and its fp32 reference must agree with ONNX
Runtime on every tensor. onnx.checker is not run: python3-onnx 1.12 checks
against its own newest rules, and ORT is the judge here.

Good models (opset in the name):
 - unary_v1: the element-wise ops of opset 1 with consumed_inputs (Abs, Ceil,
   Floor, Neg, Exp, Log, Sqrt, Reciprocal, Relu, LeakyRelu, Elu, Selu,
   Sigmoid, Tanh, HardSigmoid, Clip) and Sum/Max/Min/Mean of equal shapes;
 - bn_conv_v1 / bn_conv_v6: Conv, BatchNormalization (consumed_inputs,
   is_test=1, spatial=1), Relu, MaxPool, AveragePool (pads: padding not
   counted), GlobalAveragePool, Dropout (is_test=1), Reshape with the shape
   attribute, Gemm with broadcast=1, Softmax;
 - bn_nonspatial_v6: BatchNormalization spatial=0 (per-element statistics);
 - binary_axis_v6 / binary_axis_v1: Add/Sub/Mul/Div/Pow with broadcast=1 and
   an axis (B aligned with A's dims from axis on), with broadcast=1 and no
   axis (trailing alignment), and between equal shapes;
 - logic_axis_v1: Greater/Less with broadcast and axis, And/Or/Xor/Not,
   Cast with the opset-1 string `to` and opset-6 integer `to`, Equal on ints;
 - data_v2: Concat without axis (default 1, opset < 4), Pad with `paddings`
   (opset 1) and with `pads` (opset 2, reflect), Slice with attributes, Split
   with the split attribute, Transpose, Flatten, Squeeze/Unsqueeze;
 - split_input_v1: Split with the split sizes as input 1 (opset 1);
 - tile_v1: Tile with tiles and axis inputs (opset 1); tile_v6: repeats;
 - pools_v1: LpPool and GlobalLpPool with a float p, LRN, InstanceNormalization,
   PRelu, Upsample with height_scale/width_scale, NEAREST and BILINEAR (opset 1);
 - rnn_v1 / rnn_v3: LSTM, RNN (reverse) and GRU with output_sequence, GRU
   with linear_before_reset (opset 3);
 - imagescaler_v6 / imagescaler_v8: ImageScaler (experimental through opset
   9), which mpx reads as Mul and Add;
 - mvn_v6 / mvn_v8: MeanVarianceNormalization's experimental form with each
   across_channels and normalize_variance;
 - experimental_v3 / experimental_v9: Scale, Affine, ScaledTanh,
   ParametricSoftplus, Crop (with and without scale).
Bad models (refused with the node named and a way out):
 - bad_tile_v1: Tile whose tiles input is computed, not a constant;
 - bad_axis_v6: Add with broadcast=1 and axis whose input A comes from an op
   of another domain (its rank cannot be followed at load);
 - bad_crop_v8: Crop with a negative border.

usage: python3 opset_models.py <out_dir>
  prints one line per good model: name and X's shape
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F = TensorProto.FLOAT
rng = np.random.default_rng(7)


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, arr, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dtype=dtype), name)


def rand(name, shape, lo=-1.0, hi=1.0):
    return const(name, rng.uniform(lo, hi, size=shape))


BINARY = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"}
CAST = {"FLOAT": 1, "UINT8": 2, "INT8": 3, "UINT16": 4, "INT16": 5, "INT32": 6, "INT64": 7, "BOOL": 9,
        "FLOAT16": 10, "DOUBLE": 11}


def attrs(n):
    return {a.name: helper.get_attribute_value(a) for a in n.attribute}


def twin(nodes, inits, xrank):
    """The same graph in opset 7's forms, written here from ONNX's changelog
    for ONNX Runtime to run (it has no kernels for most opset 1-6 forms, and
    onnx.version_converter has no adapter for many of them). Tensor names
    stay, so every node output compares; where a weight must change shape or
    an attribute becomes an input, a new initializer does it (not a node, as
    mpx does it). Every A of an old broadcast with axis has X's rank here."""
    vals = {t.name: numpy_helper.to_array(t) for t in inits}
    new_nodes, new_inits = [], list(inits)
    for n in nodes:
        a = attrs(n)
        for k in ("consumed_inputs", "is_test", "output_sequence"):
            a.pop(k, None)
        ins = list(n.input)
        if n.op_type in BINARY or n.op_type == "Gemm":
            bc, axis = a.pop("broadcast", 0), a.pop("axis", None)
            if n.op_type in BINARY and bc and axis is not None:
                b = vals[ins[1]]
                shape = list(b.shape) + [1] * (xrank - axis - b.ndim)
                new_inits.append(const(ins[1] + "_twin", b.reshape(shape), b.dtype))
                ins[1] = ins[1] + "_twin"
        elif n.op_type == "Reshape" and "shape" in a:
            new_inits.append(const(n.output[0] + "_shape", a.pop("shape"), np.int64))
            ins.append(n.output[0] + "_shape")
        elif n.op_type == "Concat":
            a.setdefault("axis", 1)
        elif n.op_type == "Pad" and "paddings" in a:
            a["pads"] = a.pop("paddings")
        elif n.op_type == "Cast" and isinstance(a["to"], bytes):
            a["to"] = CAST[a["to"].decode().upper()]
        elif n.op_type == "Split" and len(ins) > 1:
            a["split"] = [int(v) for v in vals[ins[1]]]
            ins = ins[:1]
        elif n.op_type == "Tile" and len(ins) == 3:
            reps = [1] * xrank
            reps[int(vals[ins[2]])] = int(vals[ins[1]])
            new_inits.append(const(n.output[0] + "_reps", reps, np.int64))
            ins = [ins[0], n.output[0] + "_reps"]
        elif n.op_type == "Upsample" and "height_scale" in a:
            a["scales"] = [1.0, 1.0, a.pop("height_scale"), a.pop("width_scale")]
            a["mode"] = {"NEAREST": "nearest", "BILINEAR": "linear"}[a["mode"].decode().upper()]
        elif n.op_type in ("LpPool", "GlobalLpPool") and isinstance(a.get("p"), float):
            a["p"] = int(a["p"])
        new_nodes.append(helper.make_node(n.op_type, ins, list(n.output), **a))
    used = {i for n in new_nodes for i in n.input}
    return new_nodes, [t for t in new_inits if t.name in used]


def write(out_dir, name, opset, nodes, inits, xshape, outs, extra_inputs=(), ref=True):
    forms = [("", opset, (nodes, inits))] + ([("_ref", 7, twin(nodes, inits, len(xshape)))] if ref else [])
    for suffix, op, (nn, ii) in forms:
        # Weights are also graph inputs, as IR 3 required (and onnx's version
        # converter still expects).
        ins = [vi("X", xshape)] + list(extra_inputs) + [
            helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in ii]
        g = helper.make_graph(nn, name, ins, [vi(o, None) if isinstance(o, str) else o for o in outs], ii)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", op)])
        m.ir_version = 3
        save(m, os.path.join(out_dir, name + suffix + ".onnx"))
    return name, xshape


N = helper.make_node


def unary_v1(out_dir):
    ops = [("Abs", {}), ("Neg", {}), ("Floor", {}), ("Ceil", {}), ("Relu", {}),
           ("LeakyRelu", {"alpha": 0.1}), ("Elu", {"alpha": 0.7}), ("Selu", {}),
           ("Sigmoid", {}), ("Tanh", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
           ("Exp", {}), ("Clip", {"min": -0.5, "max": 0.6})]
    nodes, outs = [], []
    for op, at in ops:
        nodes.append(N(op, ["X"], [op.lower()], consumed_inputs=[0], **at))
        outs.append(op.lower())
    # positive inputs for Log, Sqrt, Reciprocal
    nodes.append(N("Exp", ["X"], ["pos"]))
    for op in ("Log", "Sqrt", "Reciprocal"):
        nodes.append(N(op, ["pos"], [op.lower()], consumed_inputs=[0]))
        outs.append(op.lower())
    nodes += [N("Sum", ["abs", "neg", "tanh"], ["sum"], consumed_inputs=[0, 0, 0]),
              N("Max", ["abs", "relu"], ["max"]), N("Min", ["abs", "elu"], ["min"]),
              N("Mean", ["sigmoid", "tanh", "exp"], ["mean"])]
    outs += ["sum", "max", "min", "mean"]
    return write(out_dir, "unary_v1", 1, nodes, [], [2, 3, 4], outs)


def bn_conv(out_dir, opset):
    c = 4
    bn = {"is_test": 1, "epsilon": 1e-3}
    if opset < 6:
        bn["consumed_inputs"] = [0, 0, 0, 1, 1]
    drop = {"is_test": 1, "ratio": 0.3}
    nodes = [N("Conv", ["X", "w", "cb"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             N("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], **bn),
             N("Relu", ["bn"], ["r"]),
             N("MaxPool", ["r"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
             N("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             N("GlobalAveragePool", ["ap"], ["gp"]),
             N("Dropout", ["ap"], ["dr"], **drop),
             N("Reshape", ["dr"], ["flat"], shape=[0, -1]),
             N("Gemm", ["flat", "gw", "gb"], ["fc"], transB=1, broadcast=1),
             N("Softmax", ["fc"], ["prob"])]
    inits = [rand("w", [c, 3, 3, 3]), rand("cb", [c]), rand("s", [c], 0.5, 1.5), rand("b", [c]),
             rand("m", [c], -0.2, 0.2), rand("v", [c], 0.5, 2.0), rand("gw", [5, c * 16]), rand("gb", [5])]
    return write(out_dir, "bn_conv_v%d" % opset, opset, nodes, inits, [2, 3, 8, 8], ["prob", "gp"])


def bn_nonspatial_v6(out_dir):
    shp = [3, 4, 5]
    nodes = [N("BatchNormalization", ["X", "s", "b", "m", "v"], ["y"], is_test=1, spatial=0)]
    inits = [rand("s", shp, 0.5, 1.5), rand("b", shp), rand("m", shp, -0.2, 0.2), rand("v", shp, 0.5, 2.0)]
    return write(out_dir, "bn_nonspatial_v6", 6, nodes, inits, [2] + shp, ["y"])


def binary_axis(out_dir, opset):
    ci = {"consumed_inputs": [0, 0]} if opset < 6 else {}
    nodes = [N("Add", ["X", "b1"], ["a1"], broadcast=1, axis=1, **ci),          # [C] on axis 1
             N("Mul", ["a1", "b2"], ["a2"], broadcast=1, axis=1),               # [C, H] on axis 1
             N("Sub", ["a2", "b3"], ["a3"], broadcast=1),                       # [W], trailing
             N("Div", ["a3", "b4"], ["a4"], broadcast=1, axis=0),               # [N] on axis 0
             N("Add", ["a4", "X"], ["a5"]),                                     # equal shapes
             N("Sub", ["a5", "b5"], ["a6"], broadcast=1, axis=2),               # [H, W] on axis 2
             N("Mul", ["a6", "b6"], ["a7"], broadcast=1, axis=1),               # [C, H, W] on axis 1
             N("Abs", ["a7"], ["p0"]),
             N("Pow", ["p0", "e1"], ["a8"], broadcast=1, axis=1)]               # [C] on axis 1
    inits = [rand("b1", [3]), rand("b2", [3, 4]), rand("b3", [5]), rand("b4", [2], 1.0, 2.0),
             rand("b5", [4, 5]), rand("b6", [3, 4, 5]), rand("e1", [3], 0.5, 2.0)]
    return write(out_dir, "binary_axis_v%d" % opset, opset, nodes, inits, [2, 3, 4, 5], ["a8", "a5"])


def logic_axis_v1(out_dir):
    nodes = [N("Greater", ["X", "t1"], ["g"], broadcast=1, axis=1),
             N("Less", ["X", "t2"], ["l"], broadcast=1, axis=2),
             N("And", ["g", "l"], ["and"]),
             N("Or", ["g", "l"], ["or"]),
             N("Xor", ["g", "l"], ["xor"]),
             N("Not", ["xor"], ["nxor"]),
             N("Cast", ["and"], ["andf"], to="FLOAT"),
             N("Cast", ["X"], ["xi"], to="INT32"),
             N("Equal", ["xi", "zero"], ["eq"], broadcast=1),
             N("Cast", ["eq"], ["eqf"], to="float")]
    inits = [rand("t1", [3], -0.3, 0.3), rand("t2", [4], 0.0, 0.6), const("zero", [0], np.int32)]
    return write(out_dir, "logic_axis_v1", 1, nodes, inits, [2, 3, 4],
                 ["andf", "eqf", vi("or", None, TensorProto.BOOL), vi("nxor", None, TensorProto.BOOL)])


def data_v2(out_dir):
    nodes = [N("Transpose", ["X"], ["t"], perm=[0, 2, 1]),
             N("Concat", ["X", "X"], ["cat"]),                                  # axis 1 by default
             N("Pad", ["cat"], ["pc"], pads=[0, 1, 2, 0, 2, 1], value=0.25),
             N("Pad", ["t"], ["pr"], pads=[0, 1, 1, 0, 2, 1], mode="reflect"),
             N("Slice", ["pc"], ["sl"], starts=[1, -4], ends=[100, -1], axes=[1, 2]),
             N("Split", ["sl"], ["s1", "s2"], axis=1, split=[2, 6]),
             N("Unsqueeze", ["s1"], ["u"], axes=[0, 3]),
             N("Squeeze", ["u"], ["sq"], axes=[0, 3]),
             N("Flatten", ["pr"], ["fl"], axis=2)]
    return write(out_dir, "data_v2", 2, nodes, [], [2, 3, 4], ["sq", "s2", "fl"])


def pad_v1(out_dir):
    nodes = [N("Pad", ["X"], ["p"], paddings=[0, 1, 2, 1, 0, 3], value=-0.5),
             N("Pad", ["X"], ["e"], paddings=[0, 0, 2, 0, 0, 1], mode="edge")]
    return write(out_dir, "pad_v1", 1, nodes, [], [2, 3, 4], ["p", "e"])


def split_input_v1(out_dir):
    nodes = [N("Split", ["X", "sizes"], ["a", "b", "c"], axis=2),
             N("Concat", ["c", "a"], ["ca"], axis=2)]
    return write(out_dir, "split_input_v1", 1, nodes, [const("sizes", [1, 2, 3], np.int64)], [2, 3, 6],
                 ["b", "ca"])


def tile_v1(out_dir):
    nodes = [N("Tile", ["X", "tiles", "axis"], ["t"])]
    inits = [const("tiles", 3, np.int64), const("axis", 1, np.int64)]
    return write(out_dir, "tile_v1", 1, nodes, inits, [2, 3, 4], ["t"])


def tile_v6(out_dir):
    nodes = [N("Tile", ["X", "reps"], ["t"])]
    return write(out_dir, "tile_v6", 6, nodes, [const("reps", [2, 1, 3], np.int64)], [2, 3, 4], ["t"])


def pools_v1(out_dir):
    nodes = [N("LpPool", ["X"], ["lp"], kernel_shape=[2, 2], strides=[2, 2], p=2.0),
             N("GlobalLpPool", ["X"], ["glp"], p=3.0),
             N("LRN", ["X"], ["lrn"], size=3, alpha=1e-3, beta=0.75, bias=1.0),
             N("InstanceNormalization", ["X", "is", "ib"], ["in"], consumed_inputs=[0, 0, 0], epsilon=1e-4),
             N("PRelu", ["in", "slope"], ["pr"], consumed_inputs=[0, 0]),
             N("Upsample", ["pr"], ["up"], height_scale=2.0, width_scale=3.0, mode="NEAREST"),
             N("Upsample", ["pr"], ["ub"], height_scale=2.0, width_scale=2.0, mode="BILINEAR")]
    inits = [rand("is", [3], 0.5, 1.5), rand("ib", [3]), rand("slope", [3, 1, 1], 0.0, 0.5)]
    return write(out_dir, "pools_v1", 1, nodes, inits, [2, 3, 4, 6], ["lp", "glp", "lrn", "up", "ub"])


def rnn_v1(out_dir, opset):
    """LSTM, GRU and RNN with output_sequence (opset 1); GRU's
    linear_before_reset from opset 3."""
    h = 5
    seq = {"output_sequence": 1}
    nodes = [N("LSTM", ["X", "lw", "lr", "lb"], ["ly", "lh"], hidden_size=h, **seq),
             N("RNN", ["X", "rw", "rr", "rb"], ["ry", "rh"], hidden_size=h, direction="reverse", **seq),
             N("GRU", ["X", "gw", "gr", "gb"], ["gy", "gh"], hidden_size=h, direction="forward",
               **({"linear_before_reset": 1} if opset >= 3 else {}))]
    inits = [rand("lw", [1, 4 * h, 3], -0.5, 0.5), rand("lr", [1, 4 * h, h], -0.5, 0.5), rand("lb", [1, 8 * h], -0.5, 0.5),
             rand("rw", [1, h, 3], -0.5, 0.5), rand("rr", [1, h, h], -0.5, 0.5), rand("rb", [1, 2 * h], -0.5, 0.5),
             rand("gw", [1, 3 * h, 3], -0.5, 0.5), rand("gr", [1, 3 * h, h], -0.5, 0.5), rand("gb", [1, 6 * h], -0.5, 0.5)]
    return write(out_dir, "rnn_v%d" % opset, opset, nodes, inits, [4, 2, 3], ["ly", "lh", "ry", "rh", "gy", "gh"])


def image_scaler(out_dir, opset):
    """ImageScaler (experimental through opset 9; ORT runs it itself, so the
    twin keeps it) after a Conv, before a Relu."""
    nodes = [N("Conv", ["X", "w"], ["c"], kernel_shape=[1, 1]),
             N("ImageScaler", ["c"], ["is"], scale=0.75, bias=[0.1, -0.2, 0.3, 0.05]),
             N("Relu", ["is"], ["y"])]
    inits = [rand("w", [4, 3, 1, 1])]
    if opset < 7:  # a broadcast axis on its output: its rank is followed through the rewrite
        nodes += [N("Add", ["y", "ab"], ["y2"], broadcast=1, axis=1)]
        inits += [rand("ab", [4])]
    return write(out_dir, "imagescaler_v%d" % opset, opset, nodes, inits, [2, 3, 5, 4], ["y"] + (["y2"] if opset < 7 else []))


def mvn(out_dir, opset):
    """MeanVarianceNormalization's experimental form (before opset 9):
    across_channels and normalize_variance (ORT runs it itself, so the twin
    keeps it)."""
    nodes = [N("MeanVarianceNormalization", ["X"], ["m00"], across_channels=0, normalize_variance=0),
             N("MeanVarianceNormalization", ["X"], ["m01"]),
             N("MeanVarianceNormalization", ["X"], ["m11"], across_channels=1, normalize_variance=1),
             N("MeanVarianceNormalization", ["X"], ["m10"], across_channels=1, normalize_variance=0)]
    return write(out_dir, "mvn_v%d" % opset, opset, nodes, [], [2, 3, 4, 5], ["m00", "m01", "m11", "m10"])


def experimental(out_dir, opset):
    """The other experimental ops of opsets 1-9 that ORT runs itself (the
    twin keeps them): Scale, Affine, ScaledTanh, ParametricSoftplus, Crop
    with and without scale."""
    nodes = [N("Scale", ["X"], ["sc"], scale=-1.5),
             N("Affine", ["sc"], ["af"], alpha=0.5, beta=0.25),
             N("ScaledTanh", ["af"], ["st"], alpha=1.5, beta=0.75),
             N("ParametricSoftplus", ["st"], ["ps"], alpha=0.5, beta=2.0),
             N("Crop", ["ps"], ["cr"], border=[1, 2, 0, 1]),
             N("Crop", ["ps"], ["cs"], border=[2, 1, 0, 0], scale=[3, 2])]
    return write(out_dir, "experimental_v%d" % opset, opset, nodes, [], [2, 3, 6, 5], ["cr", "cs"])


def bad_tile_v1(out_dir):
    nodes = [N("Shape", ["X"], ["s"]),
             N("Slice", ["s"], ["n"], starts=[0], ends=[1]),
             N("Tile", ["X", "n", "axis"], ["t"])]
    write(out_dir, "bad_tile_v1", 1, nodes, [const("axis", 1, np.int64)], [2, 3, 4], ["t"], ref=False)


def bad_axis_v6(out_dir):
    """A broadcast axis whose input A comes from an op of another domain:
    its rank cannot be followed at load."""
    nodes = [N("Foo", ["X"], ["f"], domain="test.legacy"),
             N("Add", ["f", "b"], ["y"], broadcast=1, axis=1)]
    g = helper.make_graph(nodes, "bad_axis_v6", [vi("X", [2, 3, 4])], [vi("y", None)], [rand("b", [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 6), helper.make_opsetid("test.legacy", 1)])
    m.ir_version = 3
    save(m, os.path.join(out_dir, "bad_axis_v6.onnx"))


def bad_crop_v8(out_dir):
    """Crop with a negative border."""
    write(out_dir, "bad_crop_v8", 8, [N("Crop", ["X"], ["y"], border=[1, -3, 1, 1])], [], [2, 3, 4, 5], ["y"],
          ref=False)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    good = [unary_v1(out_dir), bn_conv(out_dir, 1), bn_conv(out_dir, 6), bn_nonspatial_v6(out_dir),
            binary_axis(out_dir, 6), binary_axis(out_dir, 1), logic_axis_v1(out_dir), data_v2(out_dir),
            pad_v1(out_dir), split_input_v1(out_dir), tile_v1(out_dir), tile_v6(out_dir), pools_v1(out_dir), rnn_v1(out_dir, 1),
            rnn_v1(out_dir, 3), image_scaler(out_dir, 6), image_scaler(out_dir, 8),
            mvn(out_dir, 6), mvn(out_dir, 8), experimental(out_dir, 3), experimental(out_dir, 9)]
    bad_tile_v1(out_dir)
    bad_axis_v6(out_dir)
    bad_crop_v8(out_dir)
    for name, shape in good:
        print(name, "x".join(str(d) for d in shape))


if __name__ == "__main__":
    main()
