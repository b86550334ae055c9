#!/bin/sh
# ctest entry: models of ONNX opsets 1-6 (issue 48) against ONNX Runtime.
#  1. tests/opset_models.py's models, each stamped with an old opset and
#     using that opset's op forms: mpx reads them in opset 7's form
#     (graph/onnx_legacy.c) and its fp32 reference must agree with ORT on
#     every tensor (rel_l2 < 1e-5, integers and bools exactly). ORT has no
#     kernels for most opset 1-6 forms (Add(6), BatchNormalization(6),
#     Concat(1), Pad(1)... "could not find an implementation"), so ORT runs
#     each model's opset-7 twin that opset_models.py writes beside it from
#     ONNX's changelog, with the same tensor names.
#  2. `load` says which opset was read and how; `info` too.
#  3. What mpx cannot rewrite is refused naming the node and the way out
#     (onnx.version_converter); export of an old-opset model is refused.
#
# usage: opset_ort.sh <mpx_run_model> <mpx> <python3> <cache_dir> <work_dir>
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ort_common.sh"
M=$WORK/models
"$PY" "$HERE/opset_models.py" "$M" > "$WORK/models.txt"

while read -r name shape; do
  n=$((n + 1))
  if ! "$RUN" "$M/$name.onnx" "$WORK/$name" "$shape" --seed 5 --range -2 2 > "$WORK/$name.log" 2>&1; then
    echo "opset_ort $name: FAIL: mpx_run_model:"; sed 's/^/  /' "$WORK/$name.log"
    failed=$((failed + 1)); continue
  fi
  all=$("$PY" "$HERE/ort_compare.py" all-outputs "$M/${name}_ref.onnx" "$WORK/all") || { failed=$((failed + 1)); continue; }
  if ! node "$HERE/ort_run.js" "$ORT" "$M/${name}_ref.onnx" "$all" "$WORK/$name" "$name" --bound 1e-5 --threads 1 \
       --repeat 1 > "$WORK/$name.ort" 2>&1; then
    cat "$WORK/$name.ort"; echo "opset_ort $name: FAIL (fp32 against ORT)"; failed=$((failed + 1)); continue
  fi
  grep -m1 '^ort_compare' "$WORK/$name.ort"
done < "$WORK/models.txt"

# expect <label> <mpx commands> <text>: the commands succeed and print text
expect() {
  n=$((n + 1))
  if ! out=$("$MPX" -c "$2" 2>&1); then
    echo "$out"; echo "opset_ort $1: FAIL (the commands failed)"; failed=$((failed + 1)); return
  fi
  case $out in
    *"$3"*) echo "$1: $3" ;;
    *) echo "$out"; echo "opset_ort $1: FAIL: no \"$3\""; failed=$((failed + 1)) ;;
  esac
}
expect load_v1 "load $M/binary_axis_v1.onnx" "opset 1 (read as 7)"
expect info_v6 "load $M/bn_conv_v6.onnx; info" "opset     6 (read as 7)"
# the fp16 report runs on an old model
expect report_v6 "load $M/bn_conv_v6.onnx; input X random seed 3; colour * green; run; assert output.rel_l2 > 0 and output.rel_l2 < 0.05" "rel_l2"

# refused <label> <model> <commands after load> <message>: mpx must fail, saying it
# (HINT: text the message must also hold; the way out for opsets 1-6)
refused() {
  n=$((n + 1))
  if out=$("$MPX" -c "load $M/$2.onnx$3" 2>&1); then
    echo "opset_ort $1: FAIL: not refused"; failed=$((failed + 1)); return
  fi
  case $out in
    *"$4"*"${HINT-onnx.version_converter}"*) echo "$1: refused: $(echo "$out" | tail -1 | cut -c1-200)" ;;
    *) echo "$out"; echo "opset_ort $1: FAIL: not the expected message ($4)"; failed=$((failed + 1)) ;;
  esac
}
refused bad_tile_v1 bad_tile_v1 "" "node \"Tile_2\" (Tile, opset 1): Tile of opset 1 takes tiles and axis as inputs 1 and 2; mpx reads them only as one-element constants"
refused bad_axis_v6 bad_axis_v6 "" "node \"Add_1\" (Add, opset 6): broadcast=1 with axis=1 aligns input B with input A's dims from that axis, which needs the rank of input A \"f\""
HINT=""
refused bad_crop_v8 bad_crop_v8 "" "node \"Crop_0\" (Crop, opset 8): border and scale must be counts from 0 to 2147483647, not -3"
unset HINT
n=$((n + 1))
if out=$("$MPX" -c "load $M/imagescaler_v8.onnx; colour * green; export $WORK/out8.onnx" 2>&1); then
  echo "opset_ort export_imagescaler: FAIL: not refused"; failed=$((failed + 1))
else
  case $out in
    *"node \"ImageScaler_1\" (ImageScaler, an experimental op of the model's opset) is read by mpx as standard ops"*)
      echo "export_imagescaler: refused" ;;
    *) echo "$out"; echo "opset_ort export_imagescaler: FAIL: not the expected message"; failed=$((failed + 1)) ;;
  esac
fi
refused export_v6 bn_conv_v6 "; colour * green; export $WORK/out.onnx" "the model is ONNX opset 6, which mpx reads in opset 7's form"

echo "opset_ort: $n checks, $failed failed"
[ "$failed" = 0 ]
