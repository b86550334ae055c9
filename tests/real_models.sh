#!/bin/sh
# ctest entry for the real-model checks: fetch (cached), then compare.
set -eu
MODEL_INFO=$1
PY=$2
CACHE=$3
HERE=$(cd "$(dirname "$0")" && pwd)
eval "$("$HERE/../scripts/fetch-models.sh" "$CACHE")"
exec "$PY" "$HERE/real_models.py" "$MODEL_INFO" "$MODELS" "$ORT" "$CACHE/work"
