#!/bin/sh
# ctest entry: an export loaded back has the per-node formats of the plan that
# wrote it, rules included (issue 13). PP-OCRv4 rec in fp16 with nodes kept
# fp32 by rules (a MatMul, a Conv, the Softmax) is exported; loaded back with
# no rules, every node has the compute and output format it had, the plan adds
# no cast and converts no weight, and exporting it again gives the same bytes.
# usage: export_rules.sh <mpx> <python3> <cache> <work_dir>
set -eu
MPX=$1
PY=$2
CACHE=$3
W=$4
rm -rf "$W"
mkdir -p "$W"
eval "$(MPX_NEED_ORT=0 "$(dirname "$0")/../scripts/fetch-models.sh" "$CACHE")"
REC="$MODELS/ch_PP-OCRv4_rec_infer.onnx"
fail=0
no() { echo "export_rules: FAIL: $*"; fail=$((fail + 1)); }
"$MPX" -c "load $REC; input x shape 1x3x48x320; colour name:p2o.MatMul.24 red; colour name:p2o.Conv.5 red;
  colour Softmax red; plan --json $W/plan_a.json; export $W/rec16.onnx" > "$W/a.log" 2>&1 || { cat "$W/a.log"; exit 1; }
"$MPX" -c "load $W/rec16.onnx; input x shape 1x3x48x320; plan --json $W/plan_b.json;
  assert casts == 0 and weights_converted == 0; export $W/again.onnx" > "$W/b.log" 2>&1 ||
  no "loading the export back: $(grep error "$W/b.log")"
cmp -s "$W/rec16.onnx" "$W/again.onnx" || no "exporting the loaded export again changed its bytes"
"$PY" - "$W/plan_a.json" "$W/plan_b.json" <<'PY' || no "per-node formats differ after the round trip"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
fa = {n["name"]: (n.get("compute"), n.get("output")) for n in a["nodes"]}
fb = {n["name"]: (n.get("compute"), n.get("output")) for n in b["nodes"]}
assert sum(1 for v in fa.values() if v[0] == "fp32") >= 3 and sum(1 for v in fa.values() if v[0] == "fp16") > 100
red = [n for n in a["nodes"] if n["rule"] is not None]
assert len(red) >= 3, red
diff = [(k, fa[k], fb.get(k)) for k in fa if fa[k][0] is not None and fb.get(k) != fa[k]]
assert not diff, diff[:5]
print(f"export_rules: {len(fa)} nodes with the same formats after the round trip ({len(red)} set by rules)")
PY
# The accumulation an accum rule gives nodes is what their doc strings say,
# and the model's metadata counts them (both said the default, fp32).
"$MPX" -q -c "load $REC; input x shape 1x3x48x320; accum Conv fp16; export $W/acc.onnx" ||
  no "export with an accum rule"
"$PY" - "$W/acc.onnx" <<'PY' || no "the accumulation of accum-ruled nodes in the export"
import onnx, sys
m = onnx.load(sys.argv[1])
meta = {p.key: p.value for p in m.metadata_props}
conv = [n.doc_string for n in m.graph.node if n.op_type == "Conv"]
mm = [n.doc_string for n in m.graph.node if n.op_type == "MatMul"]
assert conv and all("mpx: accumulate fp16" in d for d in conv), conv[:3]
assert mm and all("mpx: accumulate fp32" in d for d in mm), mm[:3]
assert meta["mpx.accumulate"].startswith("fp32; %d nodes another" % len(conv)), meta
PY
[ $fail = 0 ] && echo "export_rules: ok"
exit $fail
