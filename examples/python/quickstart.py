"""quickstart.py - examples/quickstart.mpx in Python, step for step:

    python3 examples/python/quickstart.py [out-folder]

A small CNN in mpx's JSON format; what it writes lands in out/demo/ (or
the folder given). Written as a notebook's cells: each block is one.
"""
import json
import os
import sys

import mpx

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("out", "demo")
os.makedirs(out, exist_ok=True)

# load tiny_cnn.json; input x shape 1x3x64x64; input x random normal 0 1 seed 42
s = mpx.Session(os.path.join(here, "..", "tiny_cnn.json"))
s.input("x", shape=(1, 3, 64, 64), random=("normal", 0, 1), seed=42)

# The default colouring (TensorFlow AMP's lists): Conv and Gemm green,
# elementwise ops gray, data movement clear, pools and Softmax red.
p = s.plan()
print("plan:", p.summary())

# Small convolutions are not worth their casts: keep only the big ones green.
s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
for n in s.plan().nodes(changed=True):
    print("  changed: %-40s %-6s -> %s" % (n["name"], n["default"], n["colour"]))
print(s.plan().why("/backbone/stage1/se/fc1/Conv"))

# Run fp16 against the fp32 reference and look at the worst layers; local
# figures separate a layer's own error from what it inherited.
r = s.run(local=True)
for row in r.report(sort="rel_l2", top=8):
    print("  %-40s %-8s %-5s rel_l2 %.3g" % (row["tensor"], row["op"], row["format"], row["rel_l2"]))
for row in r.report(sort="rel_l2", local=True, top=5):
    print("  %-40s own rel_l2 %.3g" % (row["tensor"], row["local_rel_l2"]))
ref, cand = r.tensor("/head/fc/Gemm")
import numpy as np  # noqa: E402 (a cell of its own)
np.save(os.path.join(out, "logits_fp16.npy"), cand)
np.save(os.path.join(out, "logits_fp32.npy"), ref)
print("logits: max |fp16 - fp32| = %.3g" % float(np.max(np.abs(cand - ref))))

# The same rules under other formats.
runs = s.compare("fp16", "bf16", "fp8e4m3")
for c in runs:
    o = c.outputs()[0]
    print("  %-8s output rel_l2 %.3g" % (c.target, o["rel_l2"]))

# Machine-readable artefacts.
with open(os.path.join(out, "plan.json"), "w") as f:
    json.dump({"counts": p.counts(), "nodes": list(s.plan().nodes())}, f, indent=1)
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(list(r.report()), f, indent=1)

# Pictures for a review: the cast graph with the error overlay, the error
# along the graph (fp16, bf16 and fp8 lines from compare), one HTML page.
s.dot(os.path.join(out, "plan.dot"))
s.svg(os.path.join(out, "plan.svg"))
runs[0].plot(os.path.join(out, "error.svg"), others=runs[1:])
s.html(os.path.join(out, "review.html"))
print("wrote", ", ".join(sorted(os.listdir(out))))
