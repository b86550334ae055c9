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
#                     [--ort-threads N] [--out FILE]
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
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --only|--rounds|--ort-reps|--mpx-reps|--heavy-reps|--ort-threads|--out)
      [ $# -ge 2 ] || { echo "bench/run.sh: $1 needs a value" >&2; exit 2; }
      PASS="$PASS $1 $2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# $PASS is a list of words on purpose.
# shellcheck disable=SC2086
exec node "$HERE/bench.js" --build "$BUILD" --ort "$ORT" --models "$MODELS" --py "$PY" --root "$ROOT" $PASS
