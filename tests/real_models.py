"""Check mpx's loader and shape inference on the real PP-OCR models.

For each model, mpx (tests/model_info) must report the same per-op-type node
counts and parameter count as python3-onnx, and every tensor's shape must
equal the shape ONNX Runtime produces when every tensor is requested as an
output (ONNX's static shape inference cannot resolve the shape chains these
exports carry, so the runtime is the oracle).

usage: real_models.py <model_info> <models_dir> <ort_dir> <work_dir>
"""
import collections
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import shape_inference

MODELS = [
    ("det", "ch_PP-OCRv4_det_infer.onnx", [1, 3, 640, 640]),
    ("rec", "ch_PP-OCRv4_rec_infer.onnx", [1, 3, 48, 320]),
    ("cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", [1, 3, 48, 192]),
]


def expected_counts(model):
    ops = collections.Counter(n.op_type for n in model.graph.node)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    params += int(np.prod(a.t.dims))
                elif a.name in ("value_floats", "value_ints"):
                    params += len(a.floats) + len(a.ints)
                elif a.name in ("value_float", "value_int"):
                    params += 1
    return dict(ops), params


def ort_shapes(path, shape, ort_dir, work):
    """Shapes of every node output, from ONNX Runtime; cached by model hash."""
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
    cache = os.path.join(work, "ort-shapes-%s-%s.json" % (digest, "x".join(map(str, shape))))
    if os.path.exists(cache):
        return json.load(open(cache))
    m = onnx.load(path)
    inp = m.graph.input[0]
    for d, v in zip(inp.type.tensor_type.shape.dim, shape):
        d.ClearField("dim_param")
        d.dim_value = v
    typed = shape_inference.infer_shapes(m)
    elem = {v.name: v.type.tensor_type.elem_type
            for v in list(typed.graph.value_info) + list(typed.graph.output)}
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(onnx.helper.make_tensor_value_info(
                    o, elem.get(o, onnx.TensorProto.FLOAT), None))
                have.add(o)
    tmp_model = os.path.join(work, "all-outputs-%s.onnx" % digest)
    onnx.save(m, tmp_model)
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        ["node", os.path.join(here, "ort_shapes.js"), ort_dir, tmp_model,
         "%s=%s" % (inp.name, "x".join(map(str, shape)))],
        check=True, capture_output=True, text=True).stdout
    shapes = json.loads(out)
    with open(cache, "w") as f:
        json.dump(shapes, f)
    os.remove(tmp_model)
    return shapes


def main():
    model_info, models_dir, ort_dir, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    failures = 0
    checks = 0
    for key, fname, shape in MODELS:
        path = os.path.join(models_dir, fname)
        model = onnx.load(path)
        ops, params = expected_counts(model)
        spec = "%s=%s" % (model.graph.input[0].name, "x".join(map(str, shape)))
        res = subprocess.run([model_info, path, spec], capture_output=True, text=True)
        if res.returncode != 0:
            print("%s: model_info failed: %s" % (key, res.stderr.strip()))
            failures += 1
            continue
        got = json.loads(res.stdout)
        problems = []
        checks += 1
        if got["op_counts"] != ops:
            problems.append("op counts: mpx %s, onnx %s" % (got["op_counts"], ops))
        checks += 1
        if got["params"] != params:
            problems.append("params: mpx %d, onnx %d" % (got["params"], params))
        checks += 1
        if got["nodes"] != len(model.graph.node):
            problems.append("nodes: mpx %d, onnx %d" % (got["nodes"], len(model.graph.node)))
        oracle = ort_shapes(path, shape, ort_dir, work)
        bad = []
        for name, dims in oracle.items():
            checks += 1
            mine = got["tensors"].get(name)
            if mine != dims:
                bad.append("%s: mpx %s, onnxruntime %s" % (name, mine, dims))
        if bad:
            problems.append("%d of %d tensor shapes differ, e.g. %s" % (len(bad), len(oracle), "; ".join(bad[:5])))
        checks += 1
        if got["unknown"] != 0:
            problems.append("%d tensors left with unknown shape" % got["unknown"])
        status = "ok" if not problems else "FAIL"
        print("%s %s: %d nodes, %d params, %d tensor shapes checked, %.3f GMACs, load %.1f ms, infer %.1f ms"
              % (status, key, got["nodes"], got["params"], len(oracle), got["macs"] / 1e9,
                 got["load_ms"], got["infer_ms"]))
        for p in problems:
            print("   " + p)
        failures += len(problems)
    print("real_models: %d checks, %d failed" % (checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
