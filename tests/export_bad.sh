#!/bin/sh
# ctest entry for `export`'s refusals (issue 13): no model, a plan that runs
# nothing low, a folder that does not exist, the loaded model's own path, a
# place that cannot be written, tf32, an existing file without --force. Each
# is refused with a message naming the problem, leaves no file (nor a
# temporary one) and leaves the session as it was (same plan summary after
# the refusals, in the same session). Also: the same plan exported twice
# gives the same bytes, and --force replaces a file.
#
# usage: export_bad.sh <mpx> <source_dir> <work_dir>
set -eu
MPX=$1
SRC=$2
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
