#!/usr/bin/python3
"""tests/scoped_models.py OUTDIR - a 400+ node model named as PyTorch names it.

The review page's model view folds a model by the scopes of its node names
(`/stage1/rebnconv3/conv_s1/Conv`); the browser test needs such a model of the
size where that matters, made the same way every time and without torch. This
writes OUTDIR/u2net_scoped.onnx: a U^2-Net-shaped network (nested U blocks
RSU7..RSU4F, an encoder of six stages, a decoder of five, six side outputs
fused by a 1x1 Conv and a Sigmoid) with PyTorch's exporter's naming
(`/<module>/<submodule>/<Op>`, a `_<n>` suffix for repeats, root-level nodes
`/Concat`, `/Resize_3`), small widths (8 channels) and seeded weights, input
1x3x64x64. About 480 nodes.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
nodes = []
inits = []
counts = {}


def uniq(name):
    """PyTorch's exporter: the second node of a scope's op gets _1, then _2."""
    n = counts.get(name, 0)
    counts[name] = n + 1
    return name if n == 0 else "%s_%d" % (name, n)


def weight(name, arr):
    inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
    return name


def node(scope, op, inputs, attrs=None):
    name = uniq(scope + "/" + op)
    out = name + "_output_0"
    nodes.append(helper.make_node(op, inputs, [out], name=name, **(attrs or {})))
    return out


def rebnconv(scope, x, cin, cout, dirate=1):
    w = weight(scope + ".conv_s1.weight", rng.normal(0, (2.0 / (9 * cin)) ** 0.5, (cout, cin, 3, 3)))
    b = weight(scope + ".conv_s1.bias", np.zeros(cout))
    y = node(scope + "/conv_s1", "Conv", [x, w, b],
             {"kernel_shape": [3, 3], "pads": [dirate] * 4, "dilations": [dirate, dirate]})
    g = weight(scope + ".bn_s1.weight", np.ones(cout))
    bb = weight(scope + ".bn_s1.bias", np.zeros(cout))
    m = weight(scope + ".bn_s1.running_mean", rng.normal(0, 0.1, cout))
    v = weight(scope + ".bn_s1.running_var", np.ones(cout))
    y = node(scope + "/bn_s1", "BatchNormalization", [y, g, bb, m, v], {"epsilon": 1e-5})
    return node(scope + "/relu_s1", "Relu", [y])


def pool(scope, x):
    return node(scope, "MaxPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})


def upsample(scope, x, factor):
    sc = weight(uniq(scope + "/scales"), np.array([1, 1, factor, factor]))
    return node(scope, "Resize", [x, "", sc], {"mode": "nearest"})


def concat(scope, a, b):
    return node(scope, "Concat", [a, b], {"axis": 1})


def rsu(scope, x, height, cin, mid, cout, dilated=False):
    """RSU-L (U^2-Net): an encoder-decoder of `height` levels inside one stage."""
    hxin = rebnconv(scope + "/rebnconvin", x, cin, cout)
    enc = []
    h = rebnconv(scope + "/rebnconv1", hxin, cout, mid)
    enc.append(h)
    for k in range(2, height):
        if dilated:
            h = rebnconv(scope + "/rebnconv%d" % k, h, mid, mid, dirate=2 ** (k - 1))
        else:
            h = pool(scope + "/pool%d" % (k - 1), h)
            h = rebnconv(scope + "/rebnconv%d" % k, h, mid, mid)
        enc.append(h)
    top = rebnconv(scope + "/rebnconv%d" % height, h, mid, mid, dirate=2 if not dilated else 2 ** (height - 1))
    d = top
    for k in range(height - 1, 0, -1):
        d = rebnconv(scope + "/rebnconv%dd" % k, concat(scope, d, enc[k - 1]), 2 * mid, cout if k == 1 else mid)
        if k > 1 and not dilated:
            d = upsample(scope, d, 2)
    return node(scope, "Add", [d, hxin])


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    x = "input"
    c, m = 8, 4
    hx1 = rsu("/stage1", x, 7, 3, m, c)
    hx2 = rsu("/stage2", pool("/pool12", hx1), 6, c, m, c)
    hx3 = rsu("/stage3", pool("/pool23", hx2), 5, c, m, c)
    hx4 = rsu("/stage4", pool("/pool34", hx3), 4, c, m, c)
    hx5 = rsu("/stage5", pool("/pool45", hx4), 4, c, m, c, dilated=True)
    hx6 = rsu("/stage6", pool("/pool56", hx5), 4, c, m, c, dilated=True)
    d5 = rsu("/stage5d", concat("", upsample("", hx6, 2), hx5), 4, 2 * c, m, c, dilated=True)
    d4 = rsu("/stage4d", concat("", upsample("", d5, 2), hx4), 4, 2 * c, m, c)
    d3 = rsu("/stage3d", concat("", upsample("", d4, 2), hx3), 5, 2 * c, m, c)
    d2 = rsu("/stage2d", concat("", upsample("", d3, 2), hx2), 6, 2 * c, m, c)
    d1 = rsu("/stage1d", concat("", upsample("", d2, 2), hx1), 7, 2 * c, m, c)
    sides = []
    for k, (h, f) in enumerate([(d1, 1), (d2, 2), (d3, 4), (d4, 8), (d5, 16), (hx6, 32)], start=1):
        w = weight("side%d.weight" % k, rng.normal(0, 0.3, (1, c, 3, 3)))
        s = node("/side%d" % k, "Conv", [h, w], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
        if f > 1:
            s = upsample("", s, f)
        sides.append(s)
    fused = sides[0]
    for s in sides[1:]:
        fused = concat("", fused, s)
    w = weight("outconv.weight", rng.normal(0, 0.3, (1, 6, 1, 1)))
    d0 = node("/outconv", "Conv", [fused, w], {"kernel_shape": [1, 1]})
    outs = [node("", "Sigmoid", [d0])] + [node("", "Sigmoid", [s]) for s in sides[:2]]
    names = ["d0", "d1", "d2"]
    for o, n in zip(outs, names):
        nodes.append(helper.make_node("Identity", [o], [n], name=uniq("/" + n + "/Identity")))
    graph = helper.make_graph(nodes, "u2net_scoped",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 64, 64])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, 64, 64]) for n in names], inits)
    model = helper.make_model(graph, producer_name="pytorch", producer_version="1.13",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, "u2net_scoped.onnx"))
    print("u2net_scoped.onnx: %d nodes" % len(nodes))


if __name__ == "__main__":
    main()
