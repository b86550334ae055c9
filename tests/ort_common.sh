# Sourced by the ONNX Runtime test scripts (ops_ort.sh, control_ort.sh,
# opset_ort.sh, f64_ort.sh), which take the same five arguments:
#   <mpx_run_model> <mpx> <python3> <cache_dir> <work_dir>
# It names them, fetches ONNX Runtime and the models into the cache (ORT,
# MODELS...), starts an empty work folder and the pass/fail counters.
# The caller sets HERE (its own folder) and `set -eu` before sourcing.
RUN=$1
MPX=$2
PY=$3
CACHE=$4
WORK=$5
eval "$("$HERE/../scripts/fetch-models.sh" "$CACHE")"
rm -rf "$WORK"
mkdir -p "$WORK"
failed=0
n=0
