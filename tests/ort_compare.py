"""Python side of tests/ort_compare.sh.

all-outputs: make a copy of a model in which every node output is also a
graph output, so ONNX Runtime returns every intermediate tensor
(onnxruntime-node cannot edit a model itself). Writes
<work>/<stem>-<digest>-all.onnx and, next to it, <same>.json mapping each
tensor to [node name (or #<index> in the file when unnamed), op type]; prints
the model path. Cached: an existing pair for the same model bytes is reused.

fp64: a diagnosis for tensors where mpx and ORT disagree beyond the bound
(run only then). Evaluates the model in float64 with NumPy (the ops of the
three PP-OCR models, below) on mpx's inputs and prints, for each tensor
named in <mpx_dir>/over.tsv (written by ort_run.js with ORT's values), how far
mpx's and ORT's fp32 results are from the float64 one, so fp32 rounding noise
can be told from a wrong kernel. It never decides pass or fail.

usage: ort_compare.py all-outputs <model.onnx> <work_dir>
       ort_compare.py fp64 <model.onnx> <mpx_dir>
"""
import hashlib
import json
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper  # noqa: F401 (onnx.numpy_helper.to_array)
from onnx import shape_inference


def rel_l2(ref, x):
    ref = np.asarray(ref, dtype=np.float64).ravel()
    x = np.asarray(x, dtype=np.float64).ravel()
    num = float(np.sqrt(np.sum((x - ref) ** 2)))
    den = float(np.sqrt(np.sum(ref ** 2)))
    return 0.0 if num == 0 else (num / den if den else float("inf"))


# ---- float64 evaluation -------------------------------------------------------
# Written from the ONNX operator spec for the ops and attribute values the
# three PP-OCR models use; anything else raises Unsupported. Float tensors are
# float64, integer tensors int64.

class Unsupported(Exception):
    pass


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _pad_nchw(x, pads, value):
    k = x.ndim - 2
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + k]) for i in range(k)]
    return np.pad(x, width, constant_values=value)


def _windows(x, kernel, strides, dilations):
    """Yield (kernel offset, strided view) for every kernel position."""
    n, c, h, w = x.shape
    oh = (h - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (w - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r0, c0 = i * dilations[0], j * dilations[1]
            yield (i, j), x[:, :, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                            c0:c0 + strides[1] * (ow - 1) + 1:strides[1]]


def _conv(x, w, b, a):
    if _s(a.get("auto_pad", "NOTSET")) != "NOTSET" or x.ndim != 4:
        raise Unsupported("Conv with auto_pad or not 2-D")
    g = a.get("group", 1)
    kernel = w.shape[2:]
    xp = _pad_nchw(x, a.get("pads", [0] * 4), 0.0)
    strides, dil = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
    cin_g, cout_g = x.shape[1] // g, w.shape[0] // g
    out = None
    for (i, j), v in _windows(xp, kernel, strides, dil):
        if out is None:
            out = np.zeros((x.shape[0], w.shape[0]) + v.shape[2:])
        if cin_g == 1 and cout_g == 1:
            out += v * w[:, 0, i, j][None, :, None, None]
            continue
        for k in range(g):
            vk = v[:, k * cin_g:(k + 1) * cin_g]
            wk = w[k * cout_g:(k + 1) * cout_g, :, i, j]
            out[:, k * cout_g:(k + 1) * cout_g] += np.einsum("oc,nchw->nohw", wk, vk)
    if b is not None:
        out += b[None, :, None, None]
    return out


def _conv_transpose(x, w, b, a):
    if a.get("group", 1) != 1 or "output_shape" in a or x.ndim != 4 or \
            _s(a.get("auto_pad", "NOTSET")) != "NOTSET":
        raise Unsupported("ConvTranspose beyond group 1 with explicit pads")
    strides, dil = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
    pads, opad = a.get("pads", [0] * 4), a.get("output_padding", [0, 0])
    n, _, h, wd = x.shape
    kh, kw = w.shape[2:]
    full = [(h - 1) * strides[0] + (kh - 1) * dil[0] + 1 + opad[0],
            (wd - 1) * strides[1] + (kw - 1) * dil[1] + 1 + opad[1]]
    out = np.zeros((n, w.shape[1], full[0], full[1]))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dil[0], j * dil[1]
            out[:, :, r0:r0 + strides[0] * (h - 1) + 1:strides[0],
                c0:c0 + strides[1] * (wd - 1) + 1:strides[1]] += \
                np.einsum("co,nchw->nohw", w[:, :, i, j], x)
    out = out[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]]
    if b is not None:
        out = out + b[None, :, None, None]
    return out


def _pool(x, a, kind):
    if _s(a.get("auto_pad", "NOTSET")) != "NOTSET" or a.get("ceil_mode", 0) or x.ndim != 4:
        raise Unsupported("%s with auto_pad or ceil_mode" % kind)
    kernel, strides = a["kernel_shape"], a.get("strides", [1, 1])
    dil = a.get("dilations", [1, 1])
    pads = a.get("pads", [0] * 4)
    xp = _pad_nchw(x, pads, -np.inf if kind == "max" else 0.0)
    ones = _pad_nchw(np.ones((1, 1) + x.shape[2:]), pads, 0.0)
    acc = cnt = None
    for _, v in _windows(xp, kernel, strides, dil):
        acc = v.copy() if acc is None else (np.maximum(acc, v) if kind == "max" else acc + v)
    if kind == "max":
        return acc
    if a.get("count_include_pad", 0):
        return acc / (kernel[0] * kernel[1])
    for _, v in _windows(ones, kernel, strides, dil):
        cnt = v.copy() if cnt is None else cnt + v
    return acc / cnt


def _resize(x, a, scales, sizes):
    if _s(a.get("mode", "nearest")) != "nearest" or \
            _s(a.get("coordinate_transformation_mode", "half_pixel")) != "asymmetric" or \
            _s(a.get("nearest_mode", "round_prefer_floor")) != "floor":
        raise Unsupported("Resize other than nearest/asymmetric/floor")
    out_shape = sizes if sizes is not None and len(sizes) else \
        [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
    if sizes is not None and len(sizes):
        scales = [o / d for o, d in zip(out_shape, x.shape)]
    idx = [np.minimum(np.floor(np.arange(o) / s).astype(np.int64), d - 1)
           for o, s, d in zip(out_shape, scales, x.shape)]
    return x[np.ix_(*idx)]


def _softmax(x, axis, opset):
    if opset < 13:
        # Before opset 13 Softmax works on the input coerced to 2-D at axis.
        shape = x.shape
        x2 = x.reshape(int(np.prod(shape[:axis])), -1)
        e = np.exp(x2 - x2.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).reshape(shape)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _slice(x, starts, ends, axes, steps):
    idx = [slice(None)] * x.ndim
    for i, ax in enumerate(axes):
        idx[int(ax)] = slice(int(starts[i]), int(ends[i]), int(steps[i]) if steps is not None else 1)
    return x[tuple(idx)]


def _tensor(t):
    v = onnx.numpy_helper.to_array(t)
    return v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64)


def run_fp64(model, inputs, wanted):
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    env = {t.name: _tensor(t) for t in model.graph.initializer}
    for name, v in inputs.items():
        env[name] = v.astype(np.float64)
    for node in model.graph.node:
        a = _attrs(node)
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        x0 = x[0] if x else None
        if op == "Constant":
            y = _tensor(a["value"])
        elif op in ("Add", "Sub", "Mul", "Div", "Pow"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
                 "Pow": np.power}[op]
            y = f(x0, x[1])
            if x0.dtype.kind == "i" and op == "Div":
                raise Unsupported("integer Div")
        elif op == "Relu":
            y = np.maximum(x0, 0.0)
        elif op == "Sigmoid":
            y = 1.0 / (1.0 + np.exp(-x0))
        elif op == "Sqrt":
            y = np.sqrt(x0)
        elif op == "HardSigmoid":
            y = np.clip(a.get("alpha", 0.2) * x0 + a.get("beta", 0.5), 0.0, 1.0)
        elif op == "Clip":
            lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min", -np.inf)
            hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max", np.inf)
            y = np.minimum(np.maximum(x0, lo), hi)
        elif op == "Conv":
            y = _conv(x0, x[1], x[2] if len(x) > 2 else None, a)
        elif op == "ConvTranspose":
            y = _conv_transpose(x0, x[1], x[2] if len(x) > 2 else None, a)
        elif op == "BatchNormalization":
            sh = (1, -1) + (1,) * (x0.ndim - 2)
            scale, bias, mean, var = (v.reshape(sh) for v in x[1:5])
            y = (x0 - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale + bias
        elif op == "GlobalAveragePool":
            y = x0.mean(axis=tuple(range(2, x0.ndim)), keepdims=True)
        elif op == "MaxPool":
            y = _pool(x0, a, "max")
        elif op == "AveragePool":
            y = _pool(x0, a, "avg")
        elif op == "Resize":
            y = _resize(x0, a, x[2] if len(x) > 2 else None, x[3] if len(x) > 3 else None)
        elif op == "Concat":
            y = np.concatenate(x, axis=a["axis"])
        elif op == "MatMul":
            y = np.matmul(x0, x[1])
        elif op == "Softmax":
            ax = a.get("axis", 1 if opset < 13 else -1)
            y = _softmax(x0, ax + x0.ndim if ax < 0 else ax, opset)
        elif op == "ReduceMean":
            axes = a.get("axes")
            y = x0.mean(axis=tuple(axes) if axes is not None else None,
                        keepdims=bool(a.get("keepdims", 1)))
        elif op == "Transpose":
            y = np.transpose(x0, a.get("perm"))
        elif op == "Reshape":
            shape = [int(d) for d in x[1]]
            shape = [x0.shape[i] if d == 0 and not a.get("allowzero", 0) else d
                     for i, d in enumerate(shape)]
            y = x0.reshape(shape)
        elif op == "Shape":
            y = np.array(x0.shape, dtype=np.int64)
        elif op == "Cast":
            to = a["to"]
            if to in (6, 7):
                y = x0.astype(np.int64)
            elif to in (1, 11):
                y = x0.astype(np.float64)
            else:
                raise Unsupported("Cast to %d" % to)
        elif op == "Slice":
            if opset < 10:
                y = _slice(x0, a["starts"], a["ends"], a.get("axes", range(len(a["starts"]))), None)
            else:
                axes = x[3] if len(x) > 3 and x[3] is not None else range(len(x[1]))
                y = _slice(x0, x[1], x[2], axes, x[4] if len(x) > 4 else None)
        elif op == "Squeeze":
            axes = a.get("axes") if opset < 13 else (x[1] if len(x) > 1 else None)
            y = np.squeeze(x0, axis=tuple(int(v) for v in axes) if axes is not None else None)
        else:
            raise Unsupported("op %s" % op)
        env[node.output[0]] = np.asarray(y)
    missing = [n for n in wanted if n not in env]
    if missing:
        raise Unsupported("tensors not computed: %s" % ", ".join(missing[:3]))
    return env


def fp64(model_path, mpx_dir):
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(mpx_dir, "manifest.tsv"))]
    inputs = {r[1]: np.load(os.path.join(mpx_dir, r[2])) for r in rows if r[0] == "input"}
    mpx_files = {r[1]: r[2] for r in rows if r[0] == "tensor"}
    over = [line.rstrip("\n").split("\t") for line in open(os.path.join(mpx_dir, "over.tsv"))]
    try:
        exact = run_fp64(onnx.load(model_path), inputs, {o[0] for o in over})
    except Unsupported as e:
        print("  fp64 diagnosis unavailable: %s" % e)
        return
    print("  fp64 diagnosis (NumPy float64 evaluation of the same model and inputs):")
    for name, ort_file in over:
        ref = exact[name]
        m = np.load(os.path.join(mpx_dir, mpx_files[name]))
        o = np.load(os.path.join(mpx_dir, ort_file))
        print("    %s: rel_l2 to float64: mpx %.2e, ORT %.2e" % (name, rel_l2(ref, m), rel_l2(ref, o)))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "fp64":
        fp64(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 4 or sys.argv[1] != "all-outputs":
        sys.exit(__doc__)
    path, work = sys.argv[2:4]
    data = open(path, "rb").read()
    digest = hashlib.sha256(data).hexdigest()[:16]
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(work, "%s-%s-all.onnx" % (stem, digest))
    meta = out[:-len(".onnx")] + ".json"
    if os.path.exists(out) and os.path.exists(meta):
        print(out)
        return
    os.makedirs(work, exist_ok=True)
    m = onnx.load_from_string(data)
    # Output declarations need an element type; static inference knows most,
    # and anything it leaves out is a float tensor in these models (ORT
    # rejects the model at load if that guess is wrong, so it cannot pass
    # silently).
    typed = shape_inference.infer_shapes(m)
    elem = {v.name: v.type.tensor_type.elem_type
            for v in list(typed.graph.value_info) + list(typed.graph.output)}
    # sequences and optionals are no tensors to compare (their items are
    # compared where they come out of them as tensors)
    containers = {v.name for v in typed.graph.value_info if v.type.WhichOneof("value") != "tensor_type"}
    have = {o.name for o in m.graph.output} | containers
    producers = {}
    for idx, n in enumerate(m.graph.node):
        for o in n.output:
            if not o:
                continue
            producers[o] = [n.name or "#%d" % idx, n.op_type]
            if o not in have:
                m.graph.output.append(onnx.helper.make_tensor_value_info(
                    o, elem.get(o) or onnx.TensorProto.FLOAT, None))
                have.add(o)
    tmp = out + ".tmp"
    onnx.save(m, tmp)
    with open(meta + ".tmp", "w") as f:
        json.dump(producers, f)
    os.replace(meta + ".tmp", meta)
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    main()
