#!/bin/sh
# ctest entry for `export`'s refusals (issue 13): no model, a plan that runs
# nothing low, a folder that does not exist, the loaded model's own path, a
# place that cannot be written, tf32, an existing file without --force. Each
# is refused with a message naming the problem, leaves no file (nor a
# temporary one) and leaves the session as it was (same plan summary after
# the refusals, in the same session). Also: the same plan exported twice
# gives the same bytes, and --force replaces a file; missing folders are
# made below the current folder only, and taken back out on a refusal.
#
# usage: export_bad.sh <mpx> <source_dir> <work_dir>
set -eu
MPX=$1
SRC=$2
PY=/usr/bin/python3 # Debian's, with python3-onnx (scripts/bootstrap.sh)
W=$3
rm -rf "$W"
mkdir -p "$W"
fail=0
no() { echo "export_bad: FAIL: $*"; fail=$((fail + 1)); }

# An fp32 ONNX model to work on: tiny_cnn written from JSON by an all-fp32 plan.
"$MPX" -c "load $SRC/examples/tiny_cnn.json; colour * red; export $W/tiny32.onnx" > "$W/setup.log" 2>&1 ||
  { cat "$W/setup.log"; exit 1; }
sum0=$(md5sum < "$W/tiny32.onnx")

expect() { # log message-part
  grep -q -- "$2" "$1" || no "expected \"$2\" in $(basename "$1"): $(cat "$1")"
}

"$MPX" -c "export $W/a.onnx" > "$W/nomodel.log" 2>&1 && no "export without a model succeeded"
expect "$W/nomodel.log" "no model loaded"
"$MPX" -c "load $W/tiny32.onnx; export" > "$W/usage.log" 2>&1 && no "export without a file succeeded"
expect "$W/usage.log" "usage: export <file.onnx>"

echo "existing" > "$W/f.onnx"
cat > "$W/bad.mpx" <<MPX
load $W/tiny32.onnx
input x shape 1x3x16x16
set bail off
plan --json $W/plan_before.json
colour * red
export $W/b.onnx
undo
export $W/nope/c.onnx
export $W/tiny32.onnx --force
export /proc/mpx_export_test.onnx
export $W/f.onnx
export $W
target tf32
export $W/e.onnx
undo
plan --json $W/plan_after.json
export $W/g.onnx
export $W/g2.onnx
export $W/f.onnx --force --json $W/f.json
MPX
"$MPX" "$W/bad.mpx" > "$W/bad.log" 2>&1 && no "the script of refusals exited 0"
expect "$W/bad.log" "the plan runs no node in fp16"
expect "$W/bad.log" "the folder $W/nope does not exist"
expect "$W/bad.log" "is the model this session loaded"
expect "$W/bad.log" "cannot write in /proc"
expect "$W/bad.log" "f.onnx exists: add --force to replace it"
expect "$W/bad.log" "it is a folder"
expect "$W/bad.log" "ONNX has no tf32 type"
expect "$W/bad.log" "exported $W/g.onnx: "
n_err=$(grep -c "error:" "$W/bad.log" || true)
[ "$n_err" = 7 ] || no "expected 7 refusals, got $n_err: $(cat "$W/bad.log")"
for f in b.onnx nope e.onnx; do [ -e "$W/$f" ] && no "$f was written"; done
[ -e /proc/mpx_export_test.onnx ] && no "/proc file written"
ls "$W" | grep -q tmp && no "a temporary file was left: $(ls "$W")"
[ "$(md5sum < "$W/tiny32.onnx")" = "$sum0" ] || no "the loaded model was changed"
cmp -s "$W/plan_before.json" "$W/plan_after.json" || no "the plan changed across the refusals"
cmp -s "$W/g.onnx" "$W/g2.onnx" || no "the same plan exported twice differs"
grep -q existing "$W/f.onnx" && no "--force did not replace f.onnx"
grep -q '"casts"' "$W/f.json" || no "--json wrote no summary"

# Folders follow the rule of every command that writes (repl_make_parent):
# created below the current folder, refused elsewhere (the absolute
# $W/nope above); an export refused after its folders were made takes them
# back out (the all-fp32 plan of an .onnx file writes nothing).
(cd "$W" && "$MPX" -c "load tiny32.onnx; export made/deep/m.onnx --json made/m.json") > "$W/made.log" 2>&1 ||
  no "export into a missing folder below the current one failed: $(cat "$W/made.log")"
[ -s "$W/made/deep/m.onnx" ] && [ -s "$W/made/m.json" ] || no "made/deep/m.onnx or made/m.json not written"
(cd "$W" && "$MPX" -c "load tiny32.onnx; colour * red; export gone/deep/m.onnx") > "$W/gone.log" 2>&1 &&
  no "the all-fp32 plan was exported"
expect "$W/gone.log" "the plan runs no node in fp16"
[ -e "$W/gone" ] && no "the refused export left the folder gone/"

# Raising the opset for bf16: an opset-9 Softmax over axis 1 of a rank-3
# input flattens to 2-D, which opset 13's Softmax cannot say: refused, naming
# the node; with the last axis the same model exports, Clip's min/max and the
# raise said in the summary.
"$MPX" -c "load $SRC/tests/models/old_opset.json; target bf16; export $W/old.onnx" > "$W/old.log" 2>&1 &&
  no "the opset-9 Softmax over axis 1 was exported"
expect "$W/old.log" "node soft (Softmax) changed at opset 13 (axis no longer flattens to 2-D) and its axis is not the input's last"
[ -e "$W/old.onnx" ] && no "old.onnx was written"
sed 's/"axis": 1/"axis": 2/' "$SRC/tests/models/old_opset.json" > "$W/old2.json"
"$MPX" -c "load $W/old2.json; target bf16; export $W/old2.onnx; load $W/old2.onnx; target bf16; plan --json $W/old2_plan.json" > "$W/old2.log" 2>&1 ||
  no "the opset-9 model with a last-axis Softmax was not exported: $(cat "$W/old2.log")"
expect "$W/old2.log" "opset 13 (raised from 9; 1 node rewritten to its form)"
"$PY" - "$W/old2.onnx" <<'PYEOF' || no "old2.onnx: $(cat "$W/old2.log")"
import sys, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
assert m.opset_import[0].version == 13, m.opset_import
clip = [n for n in m.graph.node if n.op_type == "Clip"][0]
assert not clip.attribute and len(clip.input) == 3, clip
inits = {t.name: t for t in m.graph.initializer}
lo, hi = (inits[clip.input[k]] for k in (1, 2))
assert lo.data_type == hi.data_type == onnx.TensorProto.BFLOAT16, (lo.data_type, hi.data_type)
# bf16 6.0 is 0x40c0, 0.0 is 0x0000
assert hi.raw_data == bytes([0xc0, 0x40]) and lo.raw_data == bytes(2), (lo.raw_data, hi.raw_data)
PYEOF

# A folder without write permission (root writes anyway: then only /proc).
if [ "$(id -u)" != 0 ]; then
  mkdir "$W/ro" && chmod 555 "$W/ro"
  "$MPX" -c "load $W/tiny32.onnx; export $W/ro/h.onnx" > "$W/ro.log" 2>&1 && no "export into a read-only folder succeeded"
  expect "$W/ro.log" "cannot write in $W/ro: Permission denied"
  [ -z "$(ls "$W/ro")" ] || no "files left in the read-only folder"
  chmod 755 "$W/ro"
fi

echo "export_bad: $fail failed"
[ "$fail" -eq 0 ]
