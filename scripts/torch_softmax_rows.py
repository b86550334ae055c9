#!/usr/bin/python3
"""scripts/torch_softmax_rows.py - mpx's accum option sleef-lanes against PyTorch's CPU bf16 softmax.

  scripts/torch_softmax_rows.py [--mpx PROGRAM] [--out DIR] [--rows N] [--plan 'mpx commands']

For rows of 1, 7, 8, 9, 17, 64, 197 and 1000 values (each length: N rows of
bf16 logits, seeded), torch.softmax(x, -1) on a bf16 tensor against mpx
running a one-node ONNX Softmax(axis=-1) under `target bf16; keep-io off;
colour * green; accum Softmax fp32 sleef-lanes` (--plan replaces the rules
after the target): element by element, bit for bit. Prints per length how
many values differ; exits 1 if any does. The same rows under mpx's own
softmax (`accum Softmax fp32`) are counted too, and must differ somewhere,
or the rows could not tell the two apart.

torch on an AVX2 CPU runs its AVX2 kernel (Sleef's exp, 8-lane sums): the
option mirrors that one (docs/fidelity.md). Exits 77 with a message where
torch or onnx cannot be imported.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# torch's AVX2 softmax is what `sleef-lanes` mirrors; an AVX-512 CPU would
# run its 16-lane kernel instead (scripts/torch_bf16.py says more)
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    import torch
except ImportError as e:
    print(f"torch_softmax_rows: skipped: {e} (needs python3-torch and python3-onnx)", file=sys.stderr)
    sys.exit(77)

LENGTHS = (1, 7, 8, 9, 17, 64, 197, 1000)
PLAN = "accum Softmax fp32 sleef-lanes"


def model(path, rows, d):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, d])
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "softmax_rows", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def run_mpx(mpx, onnx_path, xfile, rules, out):
    script = out + ".mpx"
    with open(script, "w") as f:
        f.write(f"load {onnx_path}\ninput x file {xfile}\ntarget bf16\nkeep-io off\ncolour * green\n")
        f.write("".join(r.strip() + "\n" for r in rules.split(";") if r.strip()))
        f.write(f"run\ntensor y --save {out}\n")
    r = subprocess.run([mpx, script], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"torch_softmax_rows: mpx failed ({script}):\n{r.stderr[-2000:]}")
    return np.load(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpx", default=os.path.join(ROOT, "build", "mpx"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "torch_softmax_rows"))
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--plan", default=PLAN, help="the rules after target bf16, ';'-separated")
    a = ap.parse_args()
    cap = re.search(r"CPU capability usage: (\w+)", torch.__config__.show())
    if not cap or cap.group(1) != "AVX2":
        print(f"torch_softmax_rows: torch runs its {cap.group(1) if cap else 'unnamed'} kernels, not the AVX2 "
              "ones sleef-lanes mirrors: values will differ", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(48)
    bad = total = plain_differ = 0
    print("| row length | values | differ from torch | mpx's own softmax differs |")
    print("|---|---|---|---|")
    for d in LENGTHS:
        rows = max(8, a.rows * 8 // d) if d < 8 else a.rows
        x = torch.from_numpy((rng.standard_normal((rows, d)) * 4).astype(np.float32)).to(torch.bfloat16)
        want = torch.softmax(x, -1).float().numpy()
        base = os.path.join(a.out, f"d{d}")
        xfile = base + "_x.npy"
        np.save(xfile, x.float().numpy())
        model(base + ".onnx", rows, d)
        got = run_mpx(a.mpx, base + ".onnx", xfile, a.plan, base + "_y.npy").reshape(want.shape)
        plain = run_mpx(a.mpx, base + ".onnx", xfile, "accum Softmax fp32", base + "_plain.npy").reshape(want.shape)
        n_bad = int((got.view(np.uint32) != want.view(np.uint32)).sum())
        n_plain = int((plain.view(np.uint32) != want.view(np.uint32)).sum())
        print(f"| {d} | {want.size} | {n_bad} | {n_plain} |", flush=True)
        bad += n_bad
        total += want.size
        plain_differ += n_plain
    print(f"torch_softmax_rows: {bad} of {total} values differ from torch ({plain_differ} under mpx's own softmax)")
    if bad:
        sys.exit(1)
    if plain_differ == 0:
        sys.exit("torch_softmax_rows: mpx's own softmax differs nowhere either: the rows tell nothing")


if __name__ == "__main__":
    main()
