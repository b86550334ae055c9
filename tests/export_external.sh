#!/bin/sh
# ctest entry for export's external data (issue 13, "large models"): PP-OCRv4
# det exported with --external is a small model plus <model>.data holding
# every weight of 1 KiB and more; onnx.checker accepts it, its weights and
# nodes equal the inline export's, mpx loads it back with the same plan, and
# exporting that again inline gives the inline export's bytes. A data file
# that exists is refused without --force, and nothing is left behind.
# usage: export_external.sh <mpx> <python3> <cache> <work_dir>
set -eu
MPX=$1
PY=$2
CACHE=$3
W=$4
rm -rf "$W"
mkdir -p "$W"
eval "$("$(dirname "$0")/../scripts/fetch-models.sh" "$CACHE")"
DET="$MODELS/ch_PP-OCRv4_det_infer.onnx"
fail=0
no() { echo "export_external: FAIL: $*"; fail=$((fail + 1)); }
S="load $DET; input x shape 1x3x160x160; colour name:p2o.BatchNormalization.1 red"
"$MPX" -c "$S; export $W/in.onnx; export $W/ex.onnx --external" > "$W/export.log" 2>&1 ||
  { cat "$W/export.log"; exit 1; }
grep -q "weights as external data in $W/ex.onnx.data" "$W/export.log" || no "the summary does not name the data file: $(cat "$W/export.log")"
[ -s "$W/ex.onnx.data" ] || no "no $W/ex.onnx.data"
in_size=$(wc -c < "$W/in.onnx")
ex_size=$(wc -c < "$W/ex.onnx")
[ "$ex_size" -lt $((in_size / 4)) ] || no "the external model is $ex_size bytes against $in_size inline"
"$PY" - "$W/in.onnx" "$W/ex.onnx" <<'PY' || no "onnx: the external export differs from the inline one"
import sys
import numpy as np
import onnx
from onnx import numpy_helper
inline, ext = sys.argv[1], sys.argv[2]
onnx.checker.check_model(ext)  # a path: the checker follows the external data
a, b = onnx.load(inline), onnx.load(ext)
def norm(m):  # onnx.load marks loaded external tensors' location explicitly DEFAULT
    for n in m.graph.node:
        for at in n.attribute:
            if at.HasField("t"):
                at.t.ClearField("data_location")
    for t in m.graph.initializer:
        t.ClearField("data_location")
    return m
a, b = norm(a), norm(b)
assert [n.SerializeToString() for n in a.graph.node] == [n.SerializeToString() for n in b.graph.node]
ia = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
ib = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
assert ia.keys() == ib.keys()
for k in ia:
    assert ia[k].dtype == ib[k].dtype and np.array_equal(ia[k].view(np.uint8), ib[k].view(np.uint8)), k
raw = onnx.load(ext, load_external_data=False)
tensors = list(raw.graph.initializer) + [at.t for n in raw.graph.node for at in n.attribute if at.HasField("t")]
external = [t.name for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL]
assert len(external) > 10, external
print(f"export_external: nodes and {len(ia)} initializers equal; {len(external)} tensors external")
PY
# ONNX Runtime loads the data file beside the model: the same outputs as inline.
node - "$ORT" "$W/in.onnx" "$W/ex.onnx" <<'JS' || no "ONNX Runtime: the external export's output differs from the inline one"
const [ortDir, a, b] = process.argv.slice(2);
const ort = require(ortDir + '/node_modules/onnxruntime-node');
(async () => {
  const x = new ort.Tensor('float32', Float32Array.from({length: 3 * 160 * 160}, (_, i) => Math.sin(i)), [1, 3, 160, 160]);
  const ra = await (await ort.InferenceSession.create(a)).run({x});
  const rb = await (await ort.InferenceSession.create(b)).run({x});
  const k = Object.keys(ra)[0];
  if (ra[k].data.length === 0 || ra[k].data.some((v, i) => !Object.is(v, rb[k].data[i]))) process.exit(1);
  console.log(`export_external: ONNX Runtime runs it: ${ra[k].data.length} output values equal to the inline export's`);
})().catch((e) => { console.error(String(e)); process.exit(1); });
JS
# Loaded back: the plan that wrote it (no cast added, no weight converted);
# exported again inline: the inline export's bytes.
"$MPX" -c "load $W/ex.onnx; input x shape 1x3x160x160; assert casts == 0 and weights_converted == 0; export $W/again.onnx" \
  > "$W/again.log" 2>&1 || no "loading the external export back: $(cat "$W/again.log")"
cmp -s "$W/in.onnx" "$W/again.onnx" || no "re-exporting the external export inline does not give the inline export's bytes"
# A data file in the way: refused without --force, nothing written.
echo "someone else's" > "$W/new.onnx.data"
"$MPX" -c "$S; export $W/new.onnx --external" > "$W/refuse.log" 2>&1 && no "export over an existing data file succeeded"
grep -q "new.onnx.data exists: add --force" "$W/refuse.log" || no "refusal message: $(cat "$W/refuse.log")"
[ ! -e "$W/new.onnx" ] || no "a refused export left $W/new.onnx"
[ "$(cat "$W/new.onnx.data")" = "someone else's" ] || no "a refused export changed the data file"
ls "$W" | grep -q tmp && no "temporary files left: $(ls "$W")"
[ $fail = 0 ] && echo "export_external: ok"
exit $fail
