#!/bin/sh
# ctest entry for the ONNX Runtime agreement on the real models: for each of
# PP-OCRv4 det, rec and the PP-OCR direction classifier, mpx runs its fp32
# reference on a seeded input and writes every tensor (tests/mpx_run_model),
# and ORT runs the same input with every node output requested
# (tests/ort_compare.py makes that model, tests/ort_run.js runs and compares).
# Models and onnxruntime-node come from scripts/fetch-models.sh.
#
# Inputs are seeded synthetic text images (a page for det, a text line for
# rec and cls; mpx_run_model --image), not uniform noise: on noise the
# detector answers ~1e-7 everywhere, and the relative error of that map only
# measures the far tail of its final Sigmoid. There ORT's Sigmoid (an
# approximation) is off from float64 by 4e-5..1e-3 in rel_l2, depending on
# the seed, and the tail turns an absolute error e of its input into a
# relative error of about e in the output, so fp32 noise alone nears 1e-5.
# MPX_ORT_INPUT=uniform uses uniform [-1, 1) values instead.
#
# usage: ort_compare.sh <mpx_run_model> <python3> <cache_dir> <work_dir>
# Environment: MPX_ORT_DET, MPX_ORT_REC, MPX_ORT_CLS input shapes (defaults
# keep the test under a minute on two cores; MPX_ORT_DET=1x3x640x640 for the
# full-size timing), MPX_ORT_SEED, MPX_ORT_REPEAT (timed runs of each side),
# MPX_ORT_THREADS (ORT intra-op threads), MPX_ORT_KEEP=1 keeps the tensors.
set -eu
RUN=$1
PY=$2
CACHE=$3
WORK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
eval "$("$HERE/../scripts/fetch-models.sh" "$CACHE")"

SEED=${MPX_ORT_SEED:-20240601}
REPEAT=${MPX_ORT_REPEAT:-3}
THREADS=${MPX_ORT_THREADS:-2}
mkdir -p "$WORK"
failed=0

compare() {
  key=$1 file=$2 shape=$3 image=$4
  dir="$WORK/$key"
  rm -rf "$dir"
  if [ "${MPX_ORT_INPUT:-image}" = uniform ]; then
    input="--range -1 1"
  else
    input="--image $image"
  fi
  # $input is two words on purpose.
  # shellcheck disable=SC2086
  if ! "$RUN" "$MODELS/$file" "$dir" "$shape" --seed "$SEED" $input --repeat "$REPEAT" \
      > "$WORK/$key.mpx.log" 2>&1; then
    echo "ort_compare $key: FAIL: mpx_run_model failed:"
    sed 's/^/  /' "$WORK/$key.mpx.log"
    return 1
  fi
  sed "s/^/  $key: /" "$WORK/$key.mpx.log"
  all=$("$PY" "$HERE/ort_compare.py" all-outputs "$MODELS/$file" "$WORK/models") || return 1
  if ! node "$HERE/ort_run.js" "$ORT" "$MODELS/$file" "$all" "$dir" "$key" \
      --bound 1e-5 --threads "$THREADS" --repeat "$REPEAT"; then
    # Tensors over the bound: how far each side is from a float64 evaluation.
    [ -f "$dir/over.tsv" ] && "$PY" "$HERE/ort_compare.py" fp64 "$MODELS/$file" "$dir"
    echo "  (tensors kept in $dir)"
    return 1
  fi
  # The tensors are large (det: about 45 M floats at 320x320); keep them only
  # when something failed or when asked.
  [ "${MPX_ORT_KEEP:-0}" = 1 ] || rm -rf "$dir"
}

compare det ch_PP-OCRv4_det_infer.onnx "${MPX_ORT_DET:-1x3x320x320}" page || failed=$((failed + 1))
compare rec ch_PP-OCRv4_rec_infer.onnx "${MPX_ORT_REC:-1x3x48x320}" line || failed=$((failed + 1))
compare cls ch_ppocr_mobile_v2.0_cls_infer.onnx "${MPX_ORT_CLS:-1x3x48x192}" line || failed=$((failed + 1))
echo "ort_compare: 3 models, $failed failed"
[ "$failed" -eq 0 ]
