"""The float64 nn ops ONNX Runtime has no double kernel for, checked against
numpy in double (tests/f64_ort.sh): Conv, ConvTranspose, AveragePool,
LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool,
InstanceNormalization and LRN of f64_models.py's f64_np model, and Resize
of its f64_resize model, whose input holds values near 1e150 (inf in fp32). Each reference is the op's defining sum,
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


def lrn(x, a):
    size = a["size"]
    # the attributes are floats: their defaults too (fp32 1e-4, not double 1e-4)
    alpha, beta, bias = (float(np.float32(a.get(k, d))) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    C = x.shape[1]
    sq = np.zeros_like(x)
    for c in range(C):
        lo, hi = max(0, c - (size - 1) // 2), min(C - 1, c + size - 1 - (size - 1) // 2)
        sq[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


def cubic(r, A):
    return [((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
            ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A]


def resize(x, node, w):
    """ONNX's Resize (opset 19, no axes) in double, one axis at a time: a
    matrix of each output coordinate's weights over the input."""
    a = attrs(node)
    s = lambda k, d: a.get(k, d).decode() if isinstance(a.get(k, d), bytes) else a.get(k, d)
    mode, ct, nm = s("mode", "nearest"), s("coordinate_transformation_mode", "half_pixel"), \
        s("nearest_mode", "round_prefer_floor")
    A, excl, ext = a.get("cubic_coeff_a", -0.75), a.get("exclude_outside", 0), a.get("extrapolation_value", 0.0)
    ins = list(node.input) + [""] * 4
    roi, scales, sizes = (w.get(ins[k]) for k in (1, 2, 3))
    y, valid = x, []
    for ax in range(x.ndim):
        n = x.shape[ax]
        if sizes is not None:
            out = int(sizes[ax]); sc = out / n; lr = float(out)
        else:
            sc = float(scales[ax]); out = int(np.floor(n * sc)); lr = sc * n
        rs, re = (roi[ax], roi[x.ndim + ax]) if roi is not None else (0.0, 1.0)
        m, ok = np.zeros((out, n)), np.ones(out, bool)
        for i in range(out):
            if ct == "half_pixel":
                xo = (i + 0.5) / sc - 0.5
            elif ct == "half_pixel_symmetric":
                xo = n / 2 * (1 - out / lr) + (i + 0.5) / sc - 0.5
            elif ct == "pytorch_half_pixel":
                xo = (i + 0.5) / sc - 0.5 if lr > 1 else 0.0
            elif ct == "align_corners":
                xo = 0.0 if lr == 1 else i * (n - 1) / (lr - 1)
            elif ct == "asymmetric":
                xo = i / sc
            elif ct == "tf_half_pixel_for_nn":
                xo = (i + 0.5) / sc
            else:  # tf_crop_and_resize
                xo = rs * (n - 1) + i * (re - rs) * (n - 1) / (lr - 1) if lr > 1 else 0.5 * (rs + re) * (n - 1)
                if xo < 0 or xo > n - 1:
                    ok[i] = False
                    continue
            x0 = int(np.floor(xo)); r = xo - x0
            if mode == "nearest":
                k = {"round_prefer_floor": x0 + (r > 0.5), "round_prefer_ceil": x0 + (r >= 0.5), "floor": x0,
                     "ceil": x0 + (r > 0)}[nm]
                taps = [(k, 1.0)]
            elif mode == "linear":
                taps = [(x0, 1 - r), (x0 + 1, r)]
            else:
                cf = cubic(r, A)
                if excl:
                    cf = [c if 0 <= x0 - 1 + j < n else 0.0 for j, c in enumerate(cf)]
                    cf = [c / sum(cf) for c in cf]
                taps = [(x0 - 1 + j, c) for j, c in enumerate(cf)]
            for k, c in taps:
                m[i, min(max(k, 0), n - 1)] += c
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, ax, 0), axes=(1, 0)), 0, ax)
        valid.append(ok)
    inside = np.ones(y.shape, bool)
    for ax, ok in enumerate(valid):
        inside &= ok.reshape([-1 if k == ax else 1 for k in range(y.ndim)])
    return np.where(inside, y, ext)


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
    if op == "LRN":
        return lrn(x, a)
    if op == "Resize":
        return resize(x, node, w)
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
