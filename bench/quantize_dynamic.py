#!/usr/bin/python3
"""bench/quantize_dynamic.py IN.onnx OUT.onnx - a float model dynamically
quantised the way ONNX Runtime's quantize_dynamic writes it, with python3-onnx
and NumPy only (ONNX Runtime's Python package is not in Debian).

Every Conv and every MatMul whose weight is a constant (an initializer or a
Constant node) becomes
  DynamicQuantizeLinear(x) -> x_q (uint8), x_scale, x_zero_point
  ConvInteger / MatMulInteger(x_q, w_q, x_zero_point, w_zero_point) -> int32
  Cast(float) * (x_scale * w_scale) [+ bias]
with the weight quantised per tensor to int8, symmetric (zero point 0,
scale max|w| / 127), as quantize_dynamic's defaults (QInt8 weights, uint8
activations). What the runtime computes from it is exact integer sums and
a float rescale, which is what the benchmark's quantised variants exercise.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize(model):
    g = model.graph
    # weights are initializers or Constant nodes' values (PaddlePaddle's exporter)
    inits = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            inits[n.output[0]] = n.attribute[0].t
    nodes = []
    new_inits = []
    n_q = 0
    for node in g.node:
        w_name = node.input[1] if len(node.input) > 1 else None
        if node.op_type not in ("Conv", "MatMul") or w_name not in inits:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
        if node.op_type == "MatMul" and w.ndim != 2:
            nodes.append(node)
            continue
        n_q += 1
        p = f"{node.name or node.output[0]}_q"
        scale = float(np.max(np.abs(w))) / 127.0 or 1.0
        wq = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        new_inits += [
            numpy_helper.from_array(wq, p + "_w"),
            numpy_helper.from_array(np.array(0, dtype=np.int8), p + "_wzp"),
            numpy_helper.from_array(np.array(scale, dtype=np.float32), p + "_wscale"),
        ]
        x = node.input[0]
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [p + "_x", p + "_xs", p + "_xzp"], name=p + "_dql"))
        if node.op_type == "Conv":
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            nodes.append(helper.make_node("ConvInteger", [p + "_x", p + "_w", p + "_xzp", p + "_wzp"], [p + "_acc"],
                                          name=p + "_conv", **attrs))
        else:
            nodes.append(helper.make_node("MatMulInteger", [p + "_x", p + "_w", p + "_xzp", p + "_wzp"],
                                          [p + "_acc"], name=p + "_mm"))
        nodes.append(helper.make_node("Cast", [p + "_acc"], [p + "_accf"], to=TensorProto.FLOAT, name=p + "_cast"))
        nodes.append(helper.make_node("Mul", [p + "_xs", p + "_wscale"], [p + "_scale"], name=p + "_scale_mul"))
        has_bias = node.op_type == "Conv" and len(node.input) > 2 and node.input[2]
        y = node.output[0]
        nodes.append(helper.make_node("Mul", [p + "_accf", p + "_scale"], [p + "_y" if has_bias else y],
                                      name=p + "_mul"))
        if has_bias:
            b = numpy_helper.to_array(inits[node.input[2]]).astype(np.float32)
            new_inits.append(numpy_helper.from_array(b.reshape(1, -1, *([1] * (w.ndim - 2))), p + "_bias"))
            nodes.append(helper.make_node("Add", [p + "_y", p + "_bias"], [y], name=p + "_add"))
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    # the float weights no node reads any more
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    live = [n for n in g.node if n.op_type != "Constant" or n.output[0] in used]
    del g.node[:]
    g.node.extend(live)
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return n_q


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    # DynamicQuantizeLinear is opset 11: older models are converted first
    # (their ops' meanings change with the opset, e.g. Clip's min and max)
    if any(o.domain in ("", "ai.onnx") and o.version < 11 for o in model.opset_import):
        from onnx import version_converter
        model = version_converter.convert_version(model, 11)
    n = quantize(model)
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"{sys.argv[2]}: {n} Conv/MatMul nodes quantised")


if __name__ == "__main__":
    main()
