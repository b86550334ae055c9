#!/bin/sh
# ctest entry (label torch): mpx's bf16 emulation against a runtime that
# computes in bf16, PyTorch's CPU bf16 (issue 48; docs/fidelity.md).
# scripts/torch_bf16.py builds ResNet-18, MobileNetV3-Small and UNet of the
# benchmark suite with the exported weights, runs it in torch in fp32 and bf16 and runs mpx on the
# ONNX file under the plan that mirrors torch; it fails when the element-wise
# gap between mpx's and torch's bf16 values is above 0.3 of torch's own bf16
# error, at the model output or at any of the first 12 module outputs of
# each (where the mirroring is bit for bit, so a rounding that differs shows
# there first: ResNet-18 and MobileNetV3-Small are bit for bit to the output,
# through MobileNetV3-Small's squeeze-excitation means (round-sum)); UNet's
# output, after its head (a Conv with a bias: bias-first), within 0.15; the
# BERT-style encoder's first 5 module outputs within 0.3 (fuse linear,
# welford). Skips (77) with a message where python3 cannot import torch.
#
# usage: torch_bf16.sh <mpx> <python3> <cache_dir> <work_dir>
set -eu
MPX=$1
PY=$2
CACHE=$3
WORK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
if ! "$PY" -c "import torch, torchvision, onnx, numpy" 2>/dev/null; then
  echo "torch_bf16: skipped: $PY cannot import torch, torchvision, onnx and numpy" \
       "(Debian's python3-torch, python3-torchvision, python3-onnx)"
  exit 77
fi
rm -rf "$WORK"
mkdir -p "$WORK"
SUITE=$CACHE/bench-suite
if [ ! -f "$SUITE/resnet18.onnx" ] || [ ! -f "$SUITE/mobilenetv3s.onnx" ] || [ ! -f "$SUITE/unet.onnx" ]; then
  SUITE=$WORK/suite
  "$PY" "$HERE/../bench/torch_models.py" "$SUITE" resnet18 mobilenetv3s unet
fi
"$PY" "$HERE/../scripts/torch_bf16.py" --suite "$SUITE" --mpx "$MPX" --models resnet18,mobilenetv3s \
  --out "$WORK/out" --layers --check 0.3 --check-layers 12
# UNet: bit for bit through its encoder; its output is 0.09 of the error with
# the head's bias first, 0.30 with it added last, so 0.15 tells them apart.
"$PY" "$HERE/../scripts/torch_bf16.py" --suite "$SUITE" --mpx "$MPX" --models unet \
  --out "$WORK/out" --layers --check 0.15 --check-layers 12
# The BERT-style encoder: its first layer is mirrored (linear1 0.06 of the
# error with the Linear's MatMul and Add fused, 0.53 without; norm1 0.02
# with welford, 0.92 without), its output is not yet (GELU's constant:
# docs/fidelity.md), so the first 5 module outputs are checked.
BSUITE=$SUITE
if [ ! -f "$BSUITE/bert4.onnx" ]; then
  BSUITE=$WORK/suite-bert
  "$PY" "$HERE/../bench/torch_models.py" "$BSUITE" bert4
fi
"$PY" "$HERE/../scripts/torch_bf16.py" --suite "$BSUITE" --mpx "$MPX" --models bert4 \
  --out "$WORK/out" --layers --check 0.3 --check-layers 5 --check-output off
