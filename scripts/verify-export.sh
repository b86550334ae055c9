#!/bin/sh
# Check an export against ONNX Runtime: mpx exports the plan, onnx.checker
# (Debian's python3-onnx) checks the file, onnxruntime-node runs the original
# and the exported model on the inputs mpx ran, and a table per model output
# compares mpx's predicted error with the measured one:
#
#   output | mpx predicted rel_l2 | ORT measured rel_l2 | mpx vs ORT low rel_l2 | ratio
#
# predicted: mpx's emulated output against its fp32 reference; measured: the
# exported model against the original, both run by ORT; the third column is
# how far the emulation is from ORT element-wise (ORT's CPU provider runs
# many fp16 nodes in fp32: see docs, so this is of the size of the error,
# not zero). Exit status 1 when predicted and measured differ by more than
# a factor of 2 (VERIFY_FACTOR; an output of fewer than 16 values, such as
# a single probability, is reported but not held to it: the ratio of two
# single rounding errors is chance; nor are errors both under 1e-6, fp32's
# own noise), when the checker refuses the file, or, for
# target fp16, when ORT cannot load or run it (bf16 and fp8: reported, since
# ORT's CPU provider has almost no such kernels).
#
# usage: scripts/verify-export.sh <model.onnx|model.json> <plan.mpx> [<input>=<x.npy> ...]
#   plan.mpx: mpx commands run after the model is loaded and the inputs are
#             set: target, keep-io, colour/accum rules; it may set inputs
#             itself (input x shape ...; input x random ...) when none are given.
# Environment: MPX (the mpx program; default: build/mpx, else mpx on PATH),
#   ORT_DIR (the folder holding node_modules/onnxruntime-node; default .cache/ort-*),
#   VERIFY_WORK (folder for the files; default a temporary one, removed after),
#   VERIFY_LABEL (the table's label; default the model's name), VERIFY_FACTOR.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
PY=${PYTHON:-/usr/bin/python3}
if [ $# -lt 2 ]; then
  sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 64
fi
MODEL=$1
PLAN=$2
shift 2
[ -f "$MODEL" ] || { echo "verify-export: $MODEL: no such model" >&2; exit 64; }
[ -f "$PLAN" ] || { echo "verify-export: $PLAN: no such plan script" >&2; exit 64; }
MPX=${MPX:-}
if [ -z "$MPX" ]; then
  if [ -x "$ROOT/build/mpx" ]; then MPX=$ROOT/build/mpx; else MPX=mpx; fi
fi
ORT_DIR=${ORT_DIR:-$(ls -d "$ROOT"/.cache/ort-* 2>/dev/null | tail -1)}
case $ORT_DIR in /*|'') ;; *) ORT_DIR=$PWD/$ORT_DIR ;; esac
[ -n "$ORT_DIR" ] && [ -d "$ORT_DIR/node_modules/onnxruntime-node" ] ||
  { echo "verify-export: no onnxruntime-node (set ORT_DIR; scripts/fetch-models.sh fetches it)" >&2; exit 64; }
if [ -n "${VERIFY_WORK:-}" ]; then
  WORK=$VERIFY_WORK
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
LABEL=${VERIFY_LABEL:-$(basename "${MODEL%.*}")}
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
MODEL=$(abs "$MODEL")
PLAN=$(abs "$PLAN")

# A JSON model: ORT runs its fp32 export (an all-red plan) as the original.
ORIG=$MODEL
case $MODEL in
  *.json)
    ORIG=$WORK/original.onnx
    if ! "$MPX" -c "load $MODEL; colour * red; export $ORIG --force" > "$WORK/mpx_fp32.log" 2>&1; then
      echo "verify-export $LABEL: mpx could not write the fp32 model:" >&2
      sed 's/^/  /' "$WORK/mpx_fp32.log" >&2
      exit 1
    fi ;;
esac
"$PY" "$HERE/verify_export.py" names "$ORIG" > "$WORK/names.txt"
{
  echo "load $MODEL"
  for a in "$@"; do
    echo "input ${a%%=*} file $(abs "${a#*=}")"
  done
  echo "source $PLAN"
  echo "run"
  i=0
  grep '^input ' "$WORK/names.txt" | cut -d' ' -f2- | while IFS= read -r n; do
    # the reference's values: the original model gets the input unrounded
    # (with keep-io off the candidate's input is the fp16-rounded one, which
    # verify_export.py makes again for an fp16 input of the export)
    echo "tensor $n --save-ref $WORK/in_$i.npy"
    i=$((i + 1))
  done
  k=0
  grep '^output ' "$WORK/names.txt" | cut -d' ' -f2- | while IFS= read -r n; do
    echo "tensor $n --save $WORK/mpx_low_$k.npy --save-ref $WORK/mpx_ref_$k.npy"
    k=$((k + 1))
  done
  echo "export $WORK/export.onnx --force --json $WORK/export.json"
  echo "export $WORK/export.onnx --force"
} > "$WORK/verify.mpx"
if ! "$MPX" "$WORK/verify.mpx" > "$WORK/mpx.log" 2>&1; then
  echo "verify-export $LABEL: mpx failed:" >&2
  sed 's/^/  /' "$WORK/mpx.log" >&2
  exit 1
fi
grep '^exported ' "$WORK/mpx.log" | sed "s/^/$LABEL: /"
target=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["target"])' "$WORK/export.json")
if ! msg=$("$PY" "$HERE/verify_export.py" check "$WORK/export.onnx"); then
  echo "$LABEL: $msg"
  exit 1
fi
echo "$LABEL: onnx.checker ok"
"$PY" "$HERE/verify_export.py" prepare "$WORK" "$ORIG" "$WORK/export.onnx"
node "$HERE/verify_export.js" "$ORT_DIR" "$WORK"
must=
[ "$target" = fp16 ] && must=--must-run
"$PY" "$HERE/verify_export.py" table "$WORK" "$LABEL" --factor "${VERIFY_FACTOR:-2}" $must
