#!/bin/sh
# Elementwise fp16 arithmetic in mpx equals NumPy float16 arithmetic bit for
# bit (NaNs compared as NaNs): + - * / sqrt on 65,536 operand pairs drawn from
# every fp16 bit pattern (subnormals, infinities, overflowing products and
# quotients included), run end to end through the REPL: an all-fp16 plan of a
# small JSON model, `run`, `tensor <out> --save`.
set -eu
MPX=$1; PY=$2; WORK=$3
mkdir -p "$WORK"
cd "$WORK"
"$PY" - <<'PYEOF'
import json
import numpy as np
rng = np.random.default_rng(5)
bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
a = bits.view(np.float16).copy()
b = rng.permutation(bits).view(np.float16).copy()
np.save("a.npy", a.reshape(1, -1))
np.save("b.npy", b.reshape(1, -1))
with np.errstate(all="ignore"):
    want = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "sqrt": np.sqrt(np.abs(a))}
for k, v in want.items():
    np.save("want_%s.npy" % k, v.reshape(1, -1))
n = 65536
model = {
    "format": "mpx-model", "version": 1, "name": "fp16_elementwise", "opset": 17,
    "inputs": [{"name": "a", "type": "float32", "shape": [1, n]}, {"name": "b", "type": "float32", "shape": [1, n]}],
    "outputs": [{"name": k, "type": "float32", "shape": [1, n]} for k in want],
    "initializers": [],
    "nodes": [
        {"name": "add", "op": "Add", "inputs": ["a", "b"], "outputs": ["add"]},
        {"name": "sub", "op": "Sub", "inputs": ["a", "b"], "outputs": ["sub"]},
        {"name": "mul", "op": "Mul", "inputs": ["a", "b"], "outputs": ["mul"]},
        {"name": "div", "op": "Div", "inputs": ["a", "b"], "outputs": ["div"]},
        {"name": "abs", "op": "Abs", "inputs": ["a"], "outputs": ["abs_a"]},
        {"name": "sqrt", "op": "Sqrt", "inputs": ["abs_a"], "outputs": ["sqrt"]},
    ],
}
json.dump(model, open("model.json", "w"))
PYEOF
"$MPX" -c 'load model.json; input a file a.npy; input b file b.npy; colour * green; run;
  tensor add --save got_add.npy; tensor sub --save got_sub.npy; tensor mul --save got_mul.npy;
  tensor div --save got_div.npy; tensor sqrt --save got_sqrt.npy' >mpx.log
"$PY" - <<'PYEOF'
import sys
import numpy as np
bad = 0
for k in ("add", "sub", "mul", "div", "sqrt"):
    want = np.load("want_%s.npy" % k).astype(np.float16).ravel()
    got32 = np.load("got_%s.npy" % k).ravel()
    got = got32.astype(np.float16)
    exact = np.array_equal(got.astype(np.float32), got32, equal_nan=True)  # mpx held fp16 values
    nan = np.isnan(want) & np.isnan(got)
    same = (want.view(np.uint16) == got.view(np.uint16)) | nan
    n_bad = int((~same).sum())
    print("numpy_fp16: %-4s %d values, %d differ from NumPy float16, %s" %
          (k, want.size, n_bad, "all representable in fp16" if exact else "NOT all fp16 values"))
    if n_bad:
        i = int(np.flatnonzero(~same)[0])
        print("  first: index %d, NumPy %r (0x%04x), mpx %r (0x%04x)" %
              (i, want[i], want.view(np.uint16)[i], got[i], got.view(np.uint16)[i]))
    bad += n_bad + (0 if exact else 1)
sys.exit(1 if bad else 0)
PYEOF
