#!/usr/bin/env python3
"""A user's evaluation command for `search --eval` (tests/eval_check.sh), with
the standard library only: reads $MPX_EVAL_DIR/cand/<output>.npy and
ref/<output>.npy (float32, as mpx writes them) and prints a JSON object:
max_rel (the largest |cand - ref| over the largest |ref|) and sign_agree (the
share of elements on the same side of 0) of the output named in argv[1],
and lead (the file's first dimension) and samples ($MPX_EVAL_SAMPLES).
With a second argument "list", prints the files it found to stderr."""
import ast, json, os, struct, sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    major = data[6]
    hlen = struct.unpack("<H" if major == 1 else "<I", data[8:10] if major == 1 else data[8:12])[0]
    start = (10 if major == 1 else 12) + hlen
    header = ast.literal_eval(data[(10 if major == 1 else 12):start].decode("latin1"))
    assert header["descr"] == "<f4", header
    n = 1
    for d in header["shape"]:
        n *= d
    return struct.unpack("<%df" % n, data[start:start + 4 * n]), header["shape"]


d = os.environ["MPX_EVAL_DIR"]
if len(sys.argv) > 2 and sys.argv[2] == "list":
    print(" ".join(sorted(os.listdir(d + "/cand")) + sorted(os.listdir(d + "/ref"))), file=sys.stderr)
r, shape = load(os.path.join(d, "ref", sys.argv[1] + ".npy"))
c, _ = load(os.path.join(d, "cand", sys.argv[1] + ".npy"))
top = max(abs(v) for v in r) or 1.0
print(json.dumps({"max_rel": max(abs(a - b) for a, b in zip(r, c)) / top,
                  "sign_agree": sum((a > 0) == (b > 0) for a, b in zip(r, c)) / len(r),
                  "lead": shape[0], "samples": int(os.environ["MPX_EVAL_SAMPLES"])}))
