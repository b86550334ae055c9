#!/bin/sh
# ctest entry for ONNX's operator test cases: generate them from python3-onnx's
# generators into the build folder (once; regenerated when onnx or the
# generator changes), then run every case through mpx's fp32 reference.
# usage: onnx_conformance.sh <onnx_conformance binary> <python3> <data_dir> [runner args...]
set -eu
RUNNER=$1
PY=$2
DATA=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
GEN="$HERE/gen_onnx_cases.py"

want="$("$PY" -c 'import onnx, numpy; print("onnx", onnx.__version__, "numpy", numpy.__version__)') $(cksum < "$GEN")"
if [ ! -f "$DATA/stamp" ] || [ "$(cat "$DATA/stamp")" != "$want" ]; then
  rm -rf "$DATA.new"
  "$PY" "$GEN" "$DATA.new/cases" --selfcheck "$DATA.new/damaged"
  echo "$want" > "$DATA.new/stamp"
  rm -rf "$DATA"
  mv "$DATA.new" "$DATA"
fi
# The runner must catch each damaged expectation (value beyond the
# tolerance, NaN, wrong index, wrong shape) before its passes mean anything.
if "$RUNNER" "$DATA/damaged" > "$DATA/damaged.log" 2>&1 \
   || ! grep -q "^onnx_conformance: 0 passed, 4 failed, 0 skipped (of 4)" "$DATA/damaged.log"; then
  echo "onnx_conformance.sh: the runner did not fail all 4 damaged cases:"
  cat "$DATA/damaged.log"
  exit 1
fi
echo "onnx_conformance: self-check ok (4 damaged cases failed as they must)"
exec "$RUNNER" "$DATA/cases" "$@"
