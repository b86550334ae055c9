#!/usr/bin/python3
"""scripts/ort_cuda_fp16.py - mpx's fp16 emulation against ONNX Runtime's CUDA fp16, element-wise.

  scripts/ort_cuda_fp16.py [--suite DIR] [--mpx PROGRAM] [--models a,b,...] [--out DIR]
                           [--plan 'mpx commands'] [--check RATIO]

The fp16 twin of scripts/torch_bf16.py. No runtime on a CPU here computes in
fp16 (ONNX Runtime's CPU provider wraps fp16 nodes in Casts to fp32), but its
CUDA provider runs fp16 Conv/MatMul/Gemm on the GPU (cuDNN and cuBLAS, which
read fp16 and accumulate in fp32 by default). For each suite model this
exports mpx's fp16 plan (every op fp16, inputs and outputs fp16, fp32
accumulation), runs the original fp32 model and the export in ONNX Runtime
with CUDAExecutionProvider on the suite's input, and prints per model

  model | mpx predicted | ORT CUDA measured | gap | gap/err

as torch_bf16.py does (gap: rel_l2 of mpx's fp16 output against ORT's fp16
output, relative to ORT's fp32 output; err: ORT fp16 against ORT fp32).
Where onnxruntime (the onnxruntime-gpu package) or a CUDA device is absent
it exits 77 with a message. Not run on the machines this was written on
(no GPU): untested.
"""
import os
import subprocess
import sys

import fidelity_args

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"ort_cuda_fp16: skipped: {e} (needs the onnxruntime-gpu package)", file=sys.stderr)
    sys.exit(77)
if "CUDAExecutionProvider" not in ort.get_available_providers():
    print("ort_cuda_fp16: skipped: ONNX Runtime has no CUDAExecutionProvider here "
          f"(providers: {', '.join(ort.get_available_providers())})", file=sys.stderr)
    sys.exit(77)

DEFAULT_PLAN = "target fp16; keep-io off; colour * green"


def rel_l2(a, b, ref):
    d = np.linalg.norm((a.astype(np.float64) - b.astype(np.float64)).ravel())
    n = np.linalg.norm(ref.astype(np.float64).ravel())
    return float(d / n) if n > 0 else float(d)


def run_ort(path, feeds):
    s = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
    if s.get_providers()[0] != "CUDAExecutionProvider":
        sys.exit(f"ort_cuda_fp16: {path}: ONNX Runtime did not take the CUDA provider")
    name = s.get_inputs()[0].name
    want = np.float16 if s.get_inputs()[0].type == "tensor(float16)" else np.float32
    return s.run(None, {name: feeds.astype(want)})[0].astype(np.float32)


def main():
    ap = fidelity_args.parser(__doc__, "ort_cuda_fp16", DEFAULT_PLAN)
    a = ap.parse_args()
    failed = []
    print("| model | mpx predicted | ORT CUDA measured | gap | gap/err |")
    print("|---|---|---|---|---|")
    for name in a.models.split(","):
        src = os.path.join(a.suite, name + ".onnx")
        out = os.path.join(a.out, name)
        os.makedirs(out, exist_ok=True)
        import onnx
        m = onnx.load(src, load_external_data=False)
        dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
        x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
        xf = os.path.join(out, "x.npy")
        np.save(xf, x)
        exp, lo, ref = (os.path.join(out, f) for f in ("fp16.onnx", "mpx_fp16.npy", "mpx_ref.npy"))
        cmds = [f"load {src}", f"input {m.graph.input[0].name} file {xf}"]
        cmds += [c.strip() for c in a.plan.split(";") if c.strip()]
        out_name = m.graph.output[0].name
        cmds += ["run", f"tensor {out_name} --save {lo} --save-ref {ref}", f"export {exp} --force"]
        r = subprocess.run([a.mpx, "-c", "; ".join(cmds)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ort_cuda_fp16: mpx failed on {src}:\n{r.stderr[-3000:]}")
        y32, y16 = run_ort(src, x), run_ort(exp, x)
        mlo, mref = np.load(lo).reshape(y32.shape), np.load(ref).reshape(y32.shape)
        err, gap = rel_l2(y16, y32, y32), rel_l2(mlo, y16, y32)
        ratio = gap / err if err > 0 else float("inf")
        print(f"| {name} | {rel_l2(mlo, mref, mref):.2e} | {err:.2e} | {gap:.2e} | {ratio:.2f} |", flush=True)
        if a.check is not None and not ratio <= a.check:
            failed.append(f"{name}: gap/err {ratio:.2f} > {a.check}")
    if failed:
        sys.exit("ort_cuda_fp16: " + "; ".join(failed))


if __name__ == "__main__":
    main()
