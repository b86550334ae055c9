#!/bin/sh
# Install the Debian packages mpx needs, only those that are missing.
# Idempotent: a machine that has everything runs no apt-get at all.
#
#   scripts/bootstrap.sh          what building and running mpx needs (make demo)
#   scripts/bootstrap.sh --test   that, plus what the tests need (make test):
#                                 python3-onnx/numpy (reference models), python3-pil
#                                 and flac (independent image and audio decoders),
#                                 espeak-ng (speech for the audio model test), xmllint
#                                 (SVG checks), tmux (the interactive test), npm
#                                 (onnxruntime-node and the real models), chromium
#                                 (the review page in a real browser), clang and its
#                                 runtime (the clang build, libFuzzer: make clang, fuzz),
#                                 dpkg-dev (dpkg-shlibdeps: the .deb's dependencies)
#   scripts/bootstrap.sh --bench  that, plus python3-torch and python3-torchvision:
#                                 bench/torch_models.py exports the benchmark's model
#                                 suite with them (bench/run.sh --suite)
set -eu

RUNTIME="cmake make gcc pkg-config
libgraphviz-dev libcjson-dev libfp16-dev libprotobuf-c-dev protobuf-c-compiler
libonnx-dev libedit-dev
libpng-dev libjpeg62-turbo-dev libsndfile1-dev libsamplerate0-dev libzip-dev zlib1g-dev"
# Sleef (x86-64 builds link it; the installed mpx then needs libsleef3, which
# libsleef-dev brings): the accum option sleef-lanes calls Sleef's exp as
# PyTorch's softmax does (numerics/kernels/kern_sleef.c).
case "$(uname -m)" in
  x86_64|amd64) RUNTIME="$RUNTIME libsleef-dev" ;;
esac
TEST="python3-onnx python3-numpy python3-pil flac espeak-ng libxml2-utils tmux npm chromium
clang libclang-rt-dev dpkg-dev"
BENCH="python3-torch python3-torchvision"

PKGS=$RUNTIME
case "${1:-}" in
  --test) PKGS="$RUNTIME $TEST" ;;
  --bench) PKGS="$RUNTIME $TEST $BENCH" ;;
  "") ;;
  *) echo "usage: scripts/bootstrap.sh [--test|--bench]" >&2; exit 64 ;;
esac

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    # npm may come with the machine's own Node.js rather than Debian's package
    if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
    missing="$missing $p"
  fi
done

[ -z "$missing" ] && exit 0

echo "bootstrap: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "bootstrap: done" >&2
