#!/bin/sh
# make demo: run mpx on the bundled example script and say where its outputs went.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p out/demo
"$BUILD/mpx" examples/quickstart.mpx
echo
echo "demo outputs are in $ROOT/out/demo/:"
ls -1 out/demo | sed 's/^/  /'
