#!/usr/bin/python3
"""scripts/torch_bf16.py - mpx's bf16 emulation against PyTorch's CPU bf16, element-wise.

  scripts/torch_bf16.py [--suite DIR] [--mpx PROGRAM] [--models a,b,...] [--out DIR]
                        [--plan 'mpx commands'] [--layers] [--check RATIO [--check-layers N]
                        [--check-output on|off]]
                        [--json FILE]

PyTorch's CPU bf16 is a runtime that computes in low precision: a model moved
to torch.bfloat16 holds every weight and activation in bf16, and oneDNN's
convolutions and matrix products read bf16 and accumulate in fp32. For each
model of the benchmark suite (bench/torch_models.py, exported to ONNX in
.cache/bench-suite/) this builds the torch model with the exported weights
(the suite's construction and seed), runs it in fp32 and in bf16 on the
exported input, then runs mpx on the ONNX file under a plan that mirrors torch
(DEFAULT_PLAN below unless --plan says otherwise) and prints per model
output:

  model | mpx predicted | torch measured | gap | gap/err | fp32 agreement

predicted: rel_l2(mpx bf16 - mpx fp32 reference); measured (err):
rel_l2(torch bf16 - torch fp32); gap: rel_l2(mpx bf16 - torch bf16), relative
to torch fp32's norm, so gap/err says how much of torch's error the emulation
does not reproduce element for element. fp32 agreement: rel_l2(mpx fp32
reference - torch fp32), which shows the weights are the same.

--layers compares the intermediates too: every module whose output is one
ONNX tensor (its scope's last node, e.g. /layer1/layer1.0/conv1/Conv) is
caught with a forward hook and printed in graph order with the same figures,
so the first tensor where the gap jumps names the op whose rounding differs.
--check RATIO exits 1 when a model output's gap/err exceeds RATIO, or with
--check-layers N one of the first N compared intermediates' does (the ctest
test: where torch's bf16 is mirrored exactly the gap stays 0 until a value
rounds differently, then grows layer after layer; docs/fidelity.md).
Values are written as .npy under --out (default out/torch_bf16/<model>/):
x.npy, and per compared tensor torch_fp32, torch_bf16, mpx_bf16, mpx_ref.

Needs /usr/bin/python3 with torch, torchvision and onnx (Debian's
python3-torch); exits 77 with a message when torch is missing.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# torch picks its CPU kernels by the CPU it runs on. The profile mirrors
# what it computes on an AVX2 CPU without AVX-512 (Zen 3, say): its AVX2
# kernels (softmax, ...), and its own loops for bf16 convolutions and
# matrix products, since oneDNN's bf16 needs AVX-512 (BW, VL, DQ). On a CPU
# that has AVX-512, torch would hand those to oneDNN (products summed in
# fp32, rounded once), so torch is held to the AVX2 configuration on every
# CPU: its kernels by ATEN_CPU_CAPABILITY (read when torch loads; a value
# the environment sets is kept), oneDNN off for the bf16 forward
# (run_torch).
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
try:
    import numpy as np
    import torch
except ImportError as e:  # the ctest test skips on 77
    print(f"torch_bf16: skipped: {e} (needs python3-torch)", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch_models  # noqa: E402

import fidelity_args  # noqa: E402

# What torch's CPU bf16 computes, in mpx's plan: mpx's profile torch-cpu-bf16
# (colour/profiles.c; `help profile`, docs/fidelity.md say why each rule):
# every op in bf16 on bf16 inputs and weights, model input and output held in
# bf16; convolutions and the products of two activations as torch's scalar
# loop (each product rounded, then the running sum; a convolution's from its
# bias); attention's Q K^T and products with a weight (Linear) in fp32, a
# Linear that ONNX splits into MatMul and Add rounded once; the mean's sum
# rounded before dividing; layer_norm's statistics Welford's in bf16; silu as
# x / (1 + exp(-x)) and gelu's x * bf16(1/sqrt 2), each step rounded.
DEFAULT_PLAN = "profile torch-cpu-bf16"


def rel_l2(a, b, ref):
    d = np.linalg.norm((a.astype(np.float64) - b.astype(np.float64)).ravel())
    n = np.linalg.norm(ref.astype(np.float64).ravel())
    return float(d / n) if n > 0 else float(d)


def scope_of(node_name):
    """The module path of an exported node name: '/layer1/layer1.0/conv1/Conv'
    -> 'layer1.0.conv1'; '/enc/layers.0/self_attn/MatMul' -> 'enc.layers.0.self_attn'.
    torch's exporter names each scope level by the module's name relative to
    the nearest traced ancestor or by its whole path; either joins the same."""
    path = []
    for c in node_name.strip("/").split("/")[:-1]:
        for k in range(len(path)):
            if c.startswith(".".join(path[k:]) + "."):
                path = path[:k] + c.split(".")
                break
        else:
            path += c.split(".")
    return ".".join(path)


def module_outputs(onnx_path):
    """For each module path, the output of its scope's last float node, in graph order."""
    import onnx
    m = onnx.load(onnx_path, load_external_data=False)
    last = {}
    for i, n in enumerate(m.graph.node):
        if n.op_type in ("Constant", "Shape", "Gather", "Identity") or not n.output:
            continue
        q = scope_of(n.name)
        # a module's output is the last node of its whole subtree
        # (a BasicBlock's is its relu_1, not its Add)
        while q:
            last[q] = (i, n.output[0])
            q = q.rpartition(".")[0]
    return last


def conv_transpose_fp32(self, x):
    """torch 1.13 has no CPU bf16 ConvTranspose2d (slow_conv_transpose2d): computed
    in fp32 on the bf16 values and rounded once, as oneDNN would; mpx's plan gives
    ConvTranspose fp32 accumulation, the same."""
    w = self.weight.float()
    b = self.bias.float() if self.bias is not None else None
    y = torch.nn.functional.conv_transpose2d(x.float(), w, b, self.stride, self.padding, self.output_padding,
                                             self.groups, self.dilation)
    return y.to(x.dtype)


def with_onednn(f, inp):
    with torch.backends.mkldnn.flags(enabled=True):
        return f(inp)


def run_torch(model, x, dtype, hook_names):
    """Model outputs and the outputs of the hooked modules (called once) as fp32 numpy."""
    model = model.to(dtype)
    for m in model.modules():
        if isinstance(m, torch.nn.ConvTranspose2d):
            m.forward = (lambda mod: (lambda inp: conv_transpose_fp32(mod, inp)))(m)
    seen, calls, hooks = {}, {}, []
    mods = dict(model.named_modules())
    for q in hook_names:
        if q not in mods:
            continue

        def hook(mod, inp, out, q=q):
            calls[q] = calls.get(q, 0) + 1
            if isinstance(out, tuple):
                out = out[0]
            if torch.is_tensor(out) and out.is_floating_point():
                seen[q] = out.detach().float().numpy().copy()
        hooks.append(mods[q].register_forward_hook(hook))
    # bf16 as on a CPU without AVX-512 (above): oneDNN off for the forward,
    # but batch norm keeps torch's default (oneDNN on), whose bf16 kernel on
    # such a CPU is the one the profile mirrors; with oneDNN off torch takes
    # another that rounds some values otherwise (ResNet-18's layer2.0.bn1:
    # 472 of 100352)
    undo = []
    if dtype == torch.bfloat16:
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                undo.append((m, m.forward))
                m.forward = (lambda f: (lambda inp: with_onednn(f, inp)))(m.forward)
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=dtype != torch.bfloat16):
        y = model(x.to(dtype)).float().numpy()
    for m, f in undo:
        m.forward = f
    for h in hooks:
        h.remove()
    # a module called twice (ResNet's shared ReLU) has no single tensor
    return y, {q: v for q, v in seen.items() if calls[q] == 1}


def quote(s):
    return '"' + s + '"' if any(c in s for c in " ,;#\"'") else s


def run_mpx(mpx, onnx_path, xfile, plan, tensors, outdir):
    """mpx's emulated and reference values of `tensors` (names) as numpy."""
    lines = [f"load {quote(onnx_path)}", f"input x file {quote(xfile)}"]
    lines += [c.strip() for c in plan.split(";") if c.strip()]
    keep = [t for t in tensors if t != "y"]
    lines.append("run" + (" --keep " + ",".join(keep) if keep else ""))
    files = {}
    for i, t in enumerate(tensors):
        lo, ref = os.path.join(outdir, f"mpx_bf16_{i}.npy"), os.path.join(outdir, f"mpx_ref_{i}.npy")
        lines.append(f"tensor {quote(t)} --save {quote(lo)} --save-ref {quote(ref)}")
        files[t] = (lo, ref)
    script = os.path.join(outdir, "mpx_script.mpx")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([mpx, script], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"torch_bf16: mpx failed on {onnx_path} ({script}):\n{r.stderr[-3000:]}")
    return {t: (np.load(lo), np.load(ref)) for t, (lo, ref) in files.items()}


def main():
    ap = fidelity_args.parser(__doc__, "torch_bf16", DEFAULT_PLAN)
    ap.add_argument("--layers", action="store_true", help="compare every module output that is one ONNX tensor")
    ap.add_argument("--check-layers", type=int, default=0, help="--check also the first N intermediates")
    ap.add_argument("--check-output", choices=("on", "off"), default="on",
                    help="off: --check only the intermediates (a model mirrored exactly only so far)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    suite = {name: (make, shape) for name, make, shape in torch_models.suite()}
    results, failed = [], []
    print("| model | mpx predicted | torch measured | gap | gap/err | fp32 agreement |")
    print("|---|---|---|---|---|---|")
    for name in a.models.split(","):
        if name not in suite:
            sys.exit(f"torch_bf16: no suite model '{name}' (have: {', '.join(suite)})")
        onnx_path = os.path.join(a.suite, name + ".onnx")
        if not os.path.exists(onnx_path):
            sys.exit(f"torch_bf16: {onnx_path} is missing (make it with bench/torch_models.py {a.suite})")
        outdir = os.path.join(a.out, name)
        os.makedirs(outdir, exist_ok=True)
        make, shape = suite[name]
        model, x = torch_models.build(make, shape)
        xfile = os.path.join(outdir, "x.npy")
        np.save(xfile, x.numpy())
        mods = module_outputs(onnx_path) if a.layers else {}
        y32, h32 = run_torch(model, x, torch.float32, mods)
        y16, h16 = run_torch(model, x, torch.bfloat16, mods)
        np.save(os.path.join(outdir, "torch_fp32.npy"), y32)
        np.save(os.path.join(outdir, "torch_bf16.npy"), y16)
        layers = sorted((mods[q][0], mods[q][1], q) for q in h32 if q in h16 and h32[q].size > 1)
        names = ["y"] + [t for _, t, _ in layers if t != "y"]
        got = run_mpx(a.mpx, onnx_path, xfile, a.plan, names, outdir)

        def figures(t, t32, t16):
            lo, ref = got[t]
            if lo.shape != t32.shape:
                lo, ref = lo.reshape(t32.shape), ref.reshape(t32.shape)
            err = rel_l2(t16, t32, t32)
            gap = rel_l2(lo, t16, t32)
            return {"predicted": rel_l2(lo, ref, ref), "measured": err, "gap": gap,
                    "ratio": gap / err if err > 0 else float("inf"), "fp32": rel_l2(ref, t32, t32)}
        f = figures("y", y32, y16)
        f["model"] = name
        if a.layers:
            f["layers"] = []
            print(f"{name}: tensor | op scope | predicted | measured | gap | gap/err", file=sys.stderr)
            for _, t, q in layers:
                if t == "y" or got[t][0].size != h32[q].size:
                    continue
                g = figures(t, h32[q], h16[q])
                g["tensor"], g["module"] = t, q
                f["layers"].append(g)
                print(f"  {t} | {q} | {g['predicted']:.3e} | {g['measured']:.3e} | {g['gap']:.3e} | "
                      f"{g['ratio']:.2f}", file=sys.stderr)
        results.append(f)
        print(f"| {name} | {f['predicted']:.2e} | {f['measured']:.2e} | {f['gap']:.2e} | {f['ratio']:.2f} | "
              f"{f['fp32']:.1e} |", flush=True)
        if a.check is not None and a.check_layers > 0:
            first = f.get("layers", [])[:a.check_layers]
            if len(first) < a.check_layers:
                failed.append(f"{name}: {len(first)} intermediates compared, {a.check_layers} asked (--layers?)")
            failed += [f"{name}: {g['tensor']}: gap/err {g['ratio']:.2f} > {a.check}" for g in first
                       if not g["ratio"] <= a.check]
        if a.check is not None and a.check_output == "on" and not f["ratio"] <= a.check:
            failed.append(f"{name}: output: gap/err {f['ratio']:.2f} > {a.check}")
    if a.json:
        with open(a.json, "w") as fj:
            json.dump({"plan": a.plan, "models": results}, fj, indent=1)
    if failed:
        sys.exit("torch_bf16: " + "; ".join(failed))


if __name__ == "__main__":
    main()
