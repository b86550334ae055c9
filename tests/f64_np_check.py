"""The float64 ops ONNX Runtime has no double kernel for, checked against
numpy in double (tests/f64_ort.sh): Conv, ConvTranspose, AveragePool,
LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool,
InstanceNormalization and LRN of f64_models.py's f64_np model, Resize of
its f64_resize model and Upsample of f64_up9 and f64_up7, whose input holds
values near 1e150 (inf in fp32); LSTM, GRU and RNN of its f64_rnn model
(every output: Y, Y_h, Y_c); OneHot, NonZero, MaxUnpool (bit for bit) and
Col2Im, HammingWindow and BlackmanWindow (ONNX's formulas in double: ONNX
Runtime's use fp32 coefficients), MaxRoiPool, Multinomial and Bernoulli
(certain draws) of its f64_index model; Gelu, Mish, HardSwish, Shrink,
ThresholdedRelu, Hardmax, MeanVarianceNormalization, Det and
RMSNormalization of its f64_elem_np model (inputs N near 1e150 and M, moderate
values with bits fp32 cannot hold). Each reference is the op's definition,
written here from the ONNX operator text with the node's own attributes and
weights; mpx's tensors (mpx_run_model's folder) must be float64 files and
agree to rel_l2 < 1e-14 (sums in another order: a few ulps).

usage: python3 f64_np_check.py <model.onnx> <mpx_dir>
"""
import math
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


def upsample(x, node, w):
    """Upsample (opsets 7-9): Resize with asymmetric coordinates, nearest
    taking floor (every scale here is at least 1)."""
    a = attrs(node)
    sc = w[node.input[1]] if len(node.input) > 1 else np.array(a["scales"])
    mode = a.get("mode", b"nearest").decode()
    nd = helper.make_node("Resize", ["X", "", "sc"], ["Y"], mode=mode, coordinate_transformation_mode="asymmetric",
                          nearest_mode="floor")
    return resize(x, nd, {"sc": sc})


def act(name, alpha, beta):
    """A recurrent op's activation in double; alpha, beta: None for the
    defaults ONNX Runtime uses (and mpx)."""
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))
    dflt = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, 0), "ThresholdedRelu": (1.0, 0), "ScaledTanh": (1.0, 1.0),
            "HardSigmoid": (0.2, 0.5), "Elu": (1.0, 0)}.get(name, (0, 0))
    al = dflt[0] if alpha is None else alpha
    be = dflt[1] if beta is None else beta
    return {"Sigmoid": sig, "Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0.0),
            "Affine": lambda v: al * v + be, "LeakyRelu": lambda v: np.where(v >= 0, v, al * v),
            "ThresholdedRelu": lambda v: np.where(v > al, v, 0.0), "ScaledTanh": lambda v: al * np.tanh(be * v),
            "HardSigmoid": lambda v: np.clip(al * v + be, 0.0, 1.0),
            "Elu": lambda v: np.where(v >= 0, v, al * (np.exp(np.minimum(v, 0)) - 1.0)),
            "Softsign": lambda v: v / (1.0 + np.abs(v)), "Softplus": lambda v: np.log1p(np.exp(v))}[name]


def recurrent(node, vals):
    """LSTM, GRU, RNN (ONNX's equations, gates iofc / zrh), every output."""
    a = attrs(node)
    op = node.op_type
    G, per = {"LSTM": (4, 3), "GRU": (3, 2), "RNN": (1, 1)}[op]
    ins = list(node.input) + [""] * 8
    get = lambda k: vals[ins[k]] if ins[k] else None
    X, W, R, B, lens, h0 = (get(k) for k in range(6))
    c0, P = (get(6), get(7)) if op == "LSTM" else (None, None)
    layout = a.get("layout", 0)
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = h0.transpose(1, 0, 2) if h0 is not None else None
        c0 = c0.transpose(1, 0, 2) if c0 is not None else None
    S, N, _ = X.shape
    D, H = W.shape[0], R.shape[2]
    direction = a.get("direction", b"forward").decode()
    names = [v.decode() for v in a.get("activations", [])] or \
        {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[op] * D
    alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
    fns = []
    for nm in names:  # alphas and betas taken in order by the functions that use them
        al = alphas.pop(0) if nm in ("Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid",
                                     "Elu") and alphas else None
        be = betas.pop(0) if nm in ("Affine", "ScaledTanh", "HardSigmoid") and betas else None
        fns.append(act(nm, al, be))
    clip = a.get("clip")
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y, Yh, Yc = np.zeros((S, D, N, H)), np.zeros((D, N, H)), np.zeros((D, N, H))
    for d in range(D):
        rev = direction == "reverse" or d == 1
        f, g, h = fns[d * per:(d + 1) * per] + [None] * (3 - per)
        Wd, Rd = W[d], R[d]
        Wb, Rb = (B[d, :G * H], B[d, G * H:]) if B is not None else (np.zeros(G * H), np.zeros(G * H))
        for b in range(N):
            L = int(lens[b]) if lens is not None else S
            hs = h0[d, b].copy() if h0 is not None else np.zeros(H)
            cs = c0[d, b].copy() if c0 is not None else np.zeros(H)
            for step in range(L):
                t = L - 1 - step if rev else step
                x = X[t, b]
                if op == "LSTM":
                    z = Wd @ x + Rd @ hs + Wb + Rb
                    pi, po, pf, pc = (P[d, :H], P[d, H:2 * H], P[d, 2 * H:]) + (None,) if P is not None else (0, 0, 0, 0)
                    i = f(cl(z[:H] + pi * cs))
                    fg = 1.0 - i if a.get("input_forget", 0) else f(cl(z[2 * H:3 * H] + pf * cs))
                    cs = fg * cs + i * g(cl(z[3 * H:]))
                    o = f(cl(z[H:2 * H] + po * cs))
                    hs = o * h(cs)
                elif op == "GRU":
                    zx, zh = Wd @ x + Wb, Rd[:2 * H] @ hs + Rb[:2 * H]
                    zt = f(cl(zx[:H] + zh[:H]))
                    rt = f(cl(zx[H:2 * H] + zh[H:]))
                    if a.get("linear_before_reset", 0):
                        ht = g(cl(zx[2 * H:] + rt * (Rd[2 * H:] @ hs + Rb[2 * H:])))
                    else:
                        ht = g(cl(zx[2 * H:] + Rd[2 * H:] @ (rt * hs) + Rb[2 * H:]))
                    hs = (1.0 - zt) * ht + zt * hs
                else:
                    hs = f(cl(Wd @ x + Rd @ hs + Wb + Rb))
                Y[t, d, b] = hs
            Yh[d, b], Yc[d, b] = hs, cs
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return [Y, Yh, Yc][:len(node.output)]


def one_hot(idx, depth, vals, axis):
    """OneHot: indices truncated to integers (negative ones count from depth);
    values[1] at the index along axis, values[0] elsewhere."""
    depth = int(depth)
    k = np.trunc(idx).astype(np.int64)
    k = np.where(k < 0, k + depth, k)
    axis = axis if axis >= 0 else axis + idx.ndim + 1
    pos = np.arange(depth).reshape([depth if i == axis else 1 for i in range(idx.ndim + 1)])
    return np.where(np.expand_dims(k, axis) == pos, vals[1], vals[0])


def max_unpool(x, idx, a, out_shape):
    """MaxUnpool: each value at its flat index in the unpooled shape (the
    attributes' lengths), which keeps its coordinates in out_shape."""
    k, s, p = a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0] * 4)
    dflt = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * s[i] + k[i] - p[i] - p[i + 2] for i in range(2)]
    shape = dflt if out_shape is None else [int(v) for v in out_shape]
    y = np.zeros(shape)
    for v, r in zip(x.ravel(), idx.ravel()):
        y[np.unravel_index(r, dflt)] = v
    return y


def col2im(x, img, blk, a):
    """Col2Im: block values added back at their window positions, in order
    of kernel offset."""
    nsp = len(img)
    s, d, p = a.get("strides", [1] * nsp), a.get("dilations", [1] * nsp), a.get("pads", [0] * 2 * nsp)
    nb = [(img[i] + p[i] + p[nsp + i] - (d[i] * (blk[i] - 1) + 1)) // s[i] + 1 for i in range(nsp)]
    K = int(np.prod(blk))
    N, CK, L = x.shape
    C = CK // K
    y = np.zeros((N, C) + tuple(int(v) for v in img))
    for k in range(K):
        kc = np.unravel_index(k, blk)
        for l in range(L):
            lc = np.unravel_index(l, nb)
            pos = [lc[i] * s[i] - p[i] + kc[i] * d[i] for i in range(nsp)]
            if all(0 <= pos[i] < img[i] for i in range(nsp)):
                y[(slice(None), slice(None)) + tuple(pos)] += x[:, np.arange(C) * K + k, l]
    return y


def max_roi_pool(x, rois, a):
    """MaxRoiPool as ORT's CPU kernel (Caffe's RoIPooling): corners scaled
    and rounded half away from zero, the roi at least 1x1, bins from the
    floor of their start to the ceiling of their end clipped to the image;
    the largest value of each bin, 0 for an empty one."""
    PH, PW = a["pooled_shape"]
    scale = a.get("spatial_scale", 1.0)
    N, C, H, W = x.shape
    y = np.zeros((rois.shape[0], C, PH, PW))
    rnd = lambda v: int(np.sign(v) * np.floor(abs(v) + 0.5))
    for r, ro in enumerate(rois):
        b = int(ro[0])
        x1, y1, x2, y2 = (rnd(v * scale) for v in ro[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / PH, rw / PW
        for ph in range(PH):
            for pw in range(PW):
                hs, he = [min(max(v, 0), H) for v in (int(np.floor(ph * bh)) + y1, int(np.ceil((ph + 1) * bh)) + y1)]
                ws, we = [min(max(v, 0), W) for v in (int(np.floor(pw * bw)) + x1, int(np.ceil((pw + 1) * bw)) + x1)]
                if he > hs and we > ws:
                    y[r, :, ph, pw] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return y


# data movement and index ops: mpx's values must be these bit for bit
EXACT = ("OneHot", "NonZero", "MaxUnpool", "Multinomial", "Bernoulli", "Cast", "MaxRoiPool")
def mvn(x, a):
    axes = tuple(a.get("axes", [0, 2, 3]))
    mean = x.mean(axis=axes, keepdims=True)
    var = (x * x).mean(axis=axes, keepdims=True) - mean * mean
    # the function body's epsilon: a float constant, cast to double
    return (x - mean) / (np.sqrt(np.maximum(var, 0)) + f32(1e-9))


def rms(x, a, scale):
    ax = a.get("axis", -1) % x.ndim
    ms = (x * x).mean(axis=tuple(range(ax, x.ndim)), keepdims=True)
    return x / np.sqrt(ms + a.get("epsilon", f32(1e-5))) * scale


def hardmax(x, a):
    ax = a.get("axis", -1) % x.ndim
    return (np.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)]) ==
            np.expand_dims(x.argmax(axis=ax), ax)).astype(np.float64)


def f32(v):
    """A float Constant of a function body, cast to double (CastLike)."""
    return float(np.float32(v))


def gelu(x, a):
    """Gelu's function body (opset 20): its constants are floats."""
    if a.get("approximate", b"none") in ("tanh", b"tanh"):
        return 0.5 * x * (1 + np.tanh(np.sqrt(f32(0.63661977236)) * (x + f32(0.044715) * (x * x * x))))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2.0)))


def det(x):
    """numpy's det is exp(log|det|), whose error grows with log|det| (4e-14
    near 1e281): each matrix is scaled by a power of two first, exactly."""
    k = np.round(np.log2(np.abs(x).max(axis=(-2, -1)))).astype(int)
    return np.ldexp(np.linalg.det(x / np.ldexp(1.0, k)[..., None, None]), k * x.shape[-1])


# The element-wise and normalisation ops of f64_models.py's f64_elem_np
# (ONNX's definitions; attributes are the nodes' float values).
ELEM = {
    "Gelu": lambda x, a, arg: gelu(x, a),
    "Mish": lambda x, a, arg: x * np.tanh(np.logaddexp(0, x)),
    # its function body: HardSigmoid with alpha 1/6 as a float
    "HardSwish": lambda x, a, arg: x * np.clip(f32(1 / 6) * x + 0.5, 0, 1),
    "Shrink": lambda x, a, arg: np.where(x < -a.get("lambd", 0.5), x + a.get("bias", 0.0),
                                         np.where(x > a.get("lambd", 0.5), x - a.get("bias", 0.0), 0.0)),
    "ThresholdedRelu": lambda x, a, arg: np.where(x > a.get("alpha", 1.0), x, 0.0),
    "Hardmax": lambda x, a, arg: hardmax(x, a),
    "MeanVarianceNormalization": lambda x, a, arg: mvn(x, a),
    "RMSNormalization": lambda x, a, arg: rms(x, a, arg[0]),
    "Det": lambda x, a, arg: det(x),
    "Mul": lambda x, a, arg: x * arg[0],
}


def reference(node, x, w):
    a = attrs(node)
    op = node.op_type
    if op in ("LSTM", "GRU", "RNN"):
        return recurrent(node, w)
    if op == "Transpose":
        return x.transpose(a["perm"])
    if op == "Upsample":
        return upsample(x, node, w)
    arg = [w[i] if i in w else None for i in list(node.input[1:]) + [None, None]]
    if op == "BatchNormalization" and a.get("training_mode", 0):
        # the batch's mean and population variance per channel (opset 14+:
        # Y, running_mean, running_var)
        # (the sums exactly rounded, math.fsum: numpy's pairwise order moves
        # a mean's last bits, which the normalisation's cancellation grows)
        xc = np.moveaxis(x, 1, 0).reshape(x.shape[1], -1)
        bm = np.array([math.fsum(r) / r.size for r in xc])
        bv = np.array([math.fsum((r - m) ** 2) / r.size for r, m in zip(xc, bm)])
        sh = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - bm.reshape(sh)) / np.sqrt(bv.reshape(sh) + float(np.float32(a.get("epsilon", 1e-5)))) * arg[0].reshape(sh) + \
            arg[1].reshape(sh)
        mo = float(np.float32(a.get("momentum", 0.9)))   # float attributes, defaults too
        return [y, arg[2] * mo + bm * (1 - mo), arg[3] * mo + bv * (1 - mo)][:len(node.output)]
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
    if op == "OneHot":
        return one_hot(x, arg[0], arg[1], a.get("axis", -1))
    if op == "NonZero":
        return np.array(np.nonzero(x), np.int64)
    if op == "MaxUnpool":
        return max_unpool(x, arg[0], a, arg[1])
    if op == "Col2Im":
        return col2im(x, list(arg[0]), list(arg[1]), a)
    if op == "MaxRoiPool":
        return max_roi_pool(x, arg[0], a)
    if op == "Bernoulli":  # probabilities 0 and 1: certain draws
        return x.astype(np.float64)
    if op == "Cast":
        return x.astype({onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64}[a["to"]])
    if op == "Multinomial":  # the inputs make every draw certain: the row's best class
        return np.repeat(np.argmax(x, axis=1)[:, None], a.get("sample_size", 1), axis=1).astype(np.int64)
    if op in ("HammingWindow", "BlackmanWindow"):
        n = int(x)
        t = 2 * np.pi * np.arange(n) / (n if a.get("periodic", 1) else n - 1)
        if op == "HammingWindow":
            return 25.0 / 46.0 - 21.0 / 46.0 * np.cos(t)
        return 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t)
    if op in ELEM:
        with np.errstate(over="ignore", invalid="ignore"):
            return ELEM[op](x, a, arg)
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
    # the graph's inputs, then each node's reference outputs, for the nodes after it
    for i in m.graph.input:
        w[i.name] = np.load(files[i.name])
        assert w[i.name].dtype == np.float64, "input %s is not float64" % i.name
    assert "N" not in w or np.abs(w["N"]).max() > 1e150, "the input is not the float64 one"
    assert "M" not in w or w["M"][0, 0, 0, 1] == 1.0 + 2.0 ** -40, "the input M is not the float64 one"
    bad = 0
    for node in m.graph.node:
        want = reference(node, w[node.input[0]], w)
        want = want if isinstance(want, list) else [want]
        for name, ref in zip(node.output, want):
            w[name] = ref
            got = np.load(files[name])
            if node.op_type in EXACT:
                ok = got.dtype == ref.dtype and got.shape == ref.shape and got.tobytes() == ref.tobytes()
                rel = 0.0 if ok else float("inf")
                print("%-10s %-22s %s exact %s" % (name, node.op_type, "ok  " if ok else "FAIL", got.dtype))
                bad += not ok
                continue
            ok = got.dtype == np.float64 and got.shape == ref.shape and np.all(np.isfinite(got))
            # scaled by the largest value: squares of 1e281 (a Det) overflow
            sc = np.abs(ref).max() or 1.0
            rel = np.sqrt((((got - ref) / sc) ** 2).sum()) / np.sqrt(((ref / sc) ** 2).sum()) if ok else float("inf")
            ok = ok and rel < 1e-14
            print("%-10s %-22s %s rel_l2 %.3g absmax %.3g" % (name, node.op_type, "ok  " if ok else "FAIL", rel,
                                                               np.abs(ref).max()))
            bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
