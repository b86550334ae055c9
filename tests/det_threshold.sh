#!/bin/sh
# The canonical threshold rule on a real model: after
#   colour Conv green when macs >= 1M else gray
# the green Convs of PP-OCRv4 det (1x3x640x640) must be exactly those whose
# MACs, computed independently by python3-onnx's shape inference, reach 1M.
set -eu
MPX=$1; PY=$2; CACHE=$3; WORK=$4
MODEL="$CACHE/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx"
mkdir -p "$WORK"
"$MPX" -c "load $MODEL; input x shape 1x3x640x640; colour Conv green when macs >= 1M else gray; plan --json $WORK/plan.json" >/dev/null
"$PY" - "$MODEL" "$WORK/plan.json" <<'PYEOF'
import json, sys
import onnx
from onnx import shape_inference

model = onnx.load(sys.argv[1])
inp = model.graph.input[0]
for d, v in zip(inp.type.tensor_type.shape.dim, (1, 3, 640, 640)):
    d.ClearField("dim_param")
    d.dim_value = v
inferred = shape_inference.infer_shapes(model)
shapes = {}
for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
    shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
for t in model.graph.initializer:
    shapes[t.name] = list(t.dims)
want = set()
for n in model.graph.node:
    if n.op_type != "Conv":
        continue
    w, y = shapes[n.input[1]], shapes[n.output[0]]
    k = 1
    for d in w[1:]:
        k *= d
    out = 1
    for d in y:
        out *= d
    if out * k >= 1_000_000:
        want.add(n.name)
plan = json.load(open(sys.argv[2]))
got = {e["name"] for e in plan["nodes"] if e["op"] == "Conv" and e["colour"] == "green"}
convs = sum(1 for e in plan["nodes"] if e["op"] == "Conv")
print("det_threshold: %d Convs, python3-onnx says %d reach 1M MACs, mpx made %d green" % (convs, len(want), len(got)))
if got != want:
    print("  only python:", sorted(want - got)[:5], " only mpx:", sorted(got - want)[:5])
    sys.exit(1)
PYEOF
