#!/bin/sh
# bench/run.sh - mpx against ONNX Runtime on PP-OCRv4 det (1x3x640x640), rec
# (1x3x48x320) and the PP-OCR direction classifier (1x3x48x192): ORT fp32,
# ORT with every intermediate tensor as an output, the mpx fp32 reference,
# the mpx per-layer report (fp16 and bf16), fp16 with fp16 accumulation, a
# re-run after recolouring one layer; interleaved rounds, medians, ratios and
# peak RSS. Prints a table and writes JSON (out/bench/results.json). See
# bench/README.md.
#
# usage: bench/run.sh [--build DIR] [--only det,rec,cls] [--rounds N]
#                     [--ort-reps N] [--mpx-reps N] [--heavy-reps N]
#                     [--ort-threads N] [--out FILE] [--suite]
#        bench/run.sh --profile MODEL [--shape AxBxC] [--rounds N]
#                     [--ort-reps N] [--mpx-reps N] [--out FILE] [--alone]
# --suite adds the model suite bench/torch_models.py exports (ResNet-18,
# MobileNetV3-Small, EfficientNet-B0, ViT-B/16, a 4-layer BERT-style encoder,
# a small UNet, a bidirectional LSTM and a GRU; random weights) into
# .cache/bench-suite, with Debian's
# python3-torch and python3-torchvision (scripts/bootstrap.sh --bench).
# --profile MODEL: the per-op comparison with ONNX Runtime instead (time per
# op type, or per group of nodes ONNX Runtime fuses, in mpx and in ORT's own
# per-node profile; out/bench/profile.json): MODEL is det, rec, cls, a suite
# model's name (once the suite is exported) or a .onnx file with --shape;
# mpx's nodes are timed as its fp32 forward runs them, or with --alone each
# on its own into fresh memory (mpx_bench profile --alone).
# Needs: `make build` (mpx_bench is built with the rest), the models and
# onnxruntime-node (scripts/fetch-models.sh; fetched here if missing), node,
# and python3 with the onnx package (Debian's /usr/bin/python3 with
# python3-onnx, as the tests use) for the all-outputs model.
# Environment: MPX_KERN_THREADS (threads of mpx's dot-product kernels,
# default 2), MPX_BENCH_PY (the python3 to use).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD="$ROOT/build"
PASS=""
SUITE=0
PROFILE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --only|--rounds|--ort-reps|--mpx-reps|--heavy-reps|--ort-threads|--out|--shape)
      [ $# -ge 2 ] || { echo "bench/run.sh: $1 needs a value" >&2; exit 2; }
      PASS="$PASS $1 $2"; shift 2 ;;
    --suite) SUITE=1; shift ;;
    --alone) PASS="$PASS --alone 1"; shift ;;
    --profile)
      [ $# -ge 2 ] || { echo "bench/run.sh: --profile needs a model" >&2; exit 2; }
      case "$2" in *.onnx) PROFILE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") ;; *) PROFILE=$2 ;; esac
      shift 2 ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$BUILD/mpx_bench" ]; then
  echo "bench/run.sh: $BUILD/mpx_bench not found: run \`make build\` first (or give --build DIR)" >&2
  exit 1
fi
command -v node >/dev/null 2>&1 || { echo "bench/run.sh: node is needed (ONNX Runtime runs in onnxruntime-node)" >&2; exit 1; }
PY=${MPX_BENCH_PY:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
if ! "$PY" -c 'import onnx' 2>/dev/null; then
  echo "bench/run.sh: $PY cannot import onnx (Debian: apt-get install python3-onnx; or set MPX_BENCH_PY)" >&2
  exit 1
fi
eval "$("$ROOT/scripts/fetch-models.sh" "$ROOT/.cache")"
if [ "$SUITE" = 1 ]; then
  if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
    echo "bench/run.sh: --suite needs python3-torch and python3-torchvision (scripts/bootstrap.sh --bench)" >&2
    exit 1
  fi
  /usr/bin/python3 "$HERE/torch_models.py" "$ROOT/.cache/bench-suite" 2>&1 | grep -v -i warn >&2 || true
  [ -f "$ROOT/.cache/bench-suite/suite.json" ] || { echo "bench/run.sh: the suite was not exported" >&2; exit 1; }
  PASS="$PASS --suite $ROOT/.cache/bench-suite"
elif [ -n "$PROFILE" ] && [ -f "$ROOT/.cache/bench-suite/suite.json" ]; then
  PASS="$PASS --suite $ROOT/.cache/bench-suite" # the suite's names, as exported
fi
[ -z "$PROFILE" ] || PASS="$PASS --profile $PROFILE"
# $PASS is a list of words on purpose.
# shellcheck disable=SC2086
exec node "$HERE/bench.js" --build "$BUILD" --ort "$ORT" --models "$MODELS" --py "$PY" --root "$ROOT" $PASS
