"""The float64 nn ops ONNX Runtime has no double kernel for, checked against
numpy in double (tests/f64_ort.sh): Conv, ConvTranspose, AveragePool,
LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool and
InstanceNormalization of f64_models.py's f64_np model, whose input holds
values near 1e150 (inf in fp32). Each reference is the op's defining sum,
written here from the ONNX operator text with the node's own attributes and
weights; mpx's tensors (mpx_run_model's folder) must be float64 files and
agree to rel_l2 < 1e-14 (sums in another order: a few ulps).

usage: python3 f64_np_check.py <model.onnx> <mpx_dir>
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def padded(x, pads, value=0.0):
    h0, w0, h1, w1 = pads
    return np.pad(x, ((0, 0), (0, 0), (h0, h1), (w0, w1)), constant_values=value)


def conv(x, w, b, a):
    s, d, p, g = a.get("strides", [1, 1]), a.get("dilations", [1, 1]), a.get("pads", [0] * 4), a.get("group", 1)
    xp = padded(x, p)
    N, C, H, W = xp.shape
    M, cg, kh, kw = w.shape
    oh, ow = (H - d[0] * (kh - 1) - 1) // s[0] + 1, (W - d[1] * (kw - 1) - 1) // s[1] + 1
    y = np.zeros((N, M, oh, ow))
    for m in range(M):
        gi = m // (M // g)
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, gi * cg:(gi + 1) * cg, i * s[0]:i * s[0] + d[0] * (kh - 1) + 1:d[0],
                           j * s[1]:j * s[1] + d[1] * (kw - 1) + 1:d[1]]
                y[:, m, i, j] = (patch * w[m]).sum(axis=(1, 2, 3)) + (b[m] if b is not None else 0.0)
    return y


def conv_transpose(x, w, b, a):
    s, p = a.get("strides", [1, 1]), a.get("pads", [0] * 4)
    N, C, H, W = x.shape
    _, M, kh, kw = w.shape
    full = np.zeros((N, M, (H - 1) * s[0] + kh, (W - 1) * s[1] + kw))
    for i in range(H):
        for j in range(W):
            full[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw] += np.einsum("nc,cmhw->nmhw", x[:, :, i, j], w)
    y = full[:, :, p[0]:full.shape[2] - p[2], p[1]:full.shape[3] - p[3]]
    return y + (b[None, :, None, None] if b is not None else 0.0)


def pool(x, a, kind):
    k, s, p = a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0] * 4)
    inside = padded(np.ones_like(x), p)
    xp = padded(x, p)
    H, W = xp.shape[2:]
    oh, ow = (H - k[0]) // s[0] + 1, (W - k[1]) // s[1] + 1
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            if kind == "avg":
                cnt = k[0] * k[1] if a.get("count_include_pad", 0) else \
                    inside[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum(axis=(2, 3))
                y[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
            else:
                pw = a.get("p", 2)
                y[:, :, i, j] = (np.abs(win) ** pw).sum(axis=(2, 3)) ** (1.0 / pw)
    return y


def reference(node, x, w):
    a = attrs(node)
    op = node.op_type
    arg = [w[i] if i in w else None for i in list(node.input[1:]) + [None, None]]
    if op == "Conv":
        return conv(x, arg[0], arg[1], a)
    if op == "ConvTranspose":
        return conv_transpose(x, arg[0], arg[1], a)
    if op == "AveragePool":
        return pool(x, a, "avg")
    if op == "LpPool":
        return pool(x, a, "lp")
    if op == "GlobalAveragePool":
        return x.mean(axis=(2, 3), keepdims=True)
    if op == "GlobalMaxPool":
        return x.max(axis=(2, 3), keepdims=True)
    if op == "GlobalLpPool":
        pw = a.get("p", 2)
        return (np.abs(x) ** pw).sum(axis=(2, 3), keepdims=True) ** (1.0 / pw)
    if op == "InstanceNormalization":
        mean = x.mean(axis=(2, 3), keepdims=True)
        var = ((x - mean) ** 2).mean(axis=(2, 3), keepdims=True)
        return arg[0][None, :, None, None] * (x - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) + \
            arg[1][None, :, None, None]
    raise SystemExit("no reference for " + op)


def main():
    model, out = sys.argv[1], sys.argv[2]
    m = onnx.load(model)
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    files = {}
    for line in open(out + "/manifest.tsv"):
        f = line.rstrip("\n").split("\t")
        if f[0] in ("input", "tensor"):
            files[f[1]] = out + "/" + f[2]
    x = np.load(files["N"])
    assert x.dtype == np.float64 and np.abs(x).max() > 1e150, "the input is not the float64 one"
    bad = 0
    for node in m.graph.node:
        got = np.load(files[node.output[0]])
        want = reference(node, x, w)
        ok = got.dtype == np.float64 and got.shape == want.shape and np.all(np.isfinite(got))
        rel = np.sqrt(((got - want) ** 2).sum()) / np.sqrt((want ** 2).sum()) if ok else float("inf")
        ok = ok and rel < 1e-14
        print("%-10s %-22s %s rel_l2 %.3g absmax %.3g" % (node.output[0], node.op_type, "ok  " if ok else "FAIL",
                                                           rel, np.abs(want).max()))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
