#!/bin/sh
# ctest entry: ops against ONNX Runtime where ONNX's own cases (python3-onnx
# 1.12) say nothing: the recurrent ops' attribute variants (bidirectional,
# reverse, sequence_lens, initial states, peepholes, clip, input_forget,
# linear_before_reset, activation lists with alphas and betas; layout 1 only
# in ONNX's case, ORT's CPU kernels refuse it) and ops of opsets 18-23 or
# without cases, and ONNX Runtime's contrib ops (tests/ops_models.py makes
# the models; an op ORT's CPU build lacks is checked against the same
# function written in ONNX ops). mpx's fp32 reference
# (tests/mpx_run_model) and ORT (tests/ort_run.js) run the same seeded
# input; every tensor must agree within rel_l2 1e-5 (integers exactly). Then
# each float model's fp16 report runs with the op coloured green (a
# recurrent op's state held in fp16 between steps): a finite error, larger
# than zero.
#
# usage: ops_ort.sh <mpx_run_model> <mpx> <python3> <cache_dir> <work_dir>
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ort_common.sh"
"$PY" "$HERE/ops_models.py" "$WORK/models" > "$WORK/models.txt"
while read -r name shape op ref; do
  n=$((n + 1))
  m="$WORK/models/$name.onnx"
  if ! "$RUN" "$m" "$WORK/$name" "$shape" --seed 7 --range -1 1 > "$WORK/$name.log" 2>&1; then
    echo "ops_ort $name: FAIL: mpx_run_model:"; sed 's/^/  /' "$WORK/$name.log"
    failed=$((failed + 1)); continue
  fi
  if [ -n "$ref" ]; then
    # ORT's CPU build lacks the op: it runs the same function in ONNX ops
    om="$WORK/models/$ref.onnx"; all=$om
  else
    om=$m
    all=$("$PY" "$HERE/ort_compare.py" all-outputs "$m" "$WORK/all") || { failed=$((failed + 1)); continue; }
  fi
  if ! node "$HERE/ort_run.js" "$ORT" "$om" "$all" "$WORK/$name" "$name" --bound 1e-5 --threads 1 --repeat 1; then
    echo "ops_ort $name: FAIL (fp32 against ORT)"; failed=$((failed + 1)); continue
  fi
  [ "$op" = - ] && { echo "$name: fp32 agrees with ORT (integer ops: no fp16 report)"; continue; }
  if ! out=$("$MPX" -c "load $m; input X random uniform -1 1 seed 7; colour $op green; run; assert output.rel_l2 > 0 and output.rel_l2 < 0.05" 2>&1); then
    echo "$out"; echo "ops_ort $name: FAIL (fp16 report)"; failed=$((failed + 1)); continue
  fi
  echo "$name: fp16 with $op green: $(echo "$out" | grep -m1 'output Y' | sed 's/^ *//')"
done < "$WORK/models.txt"
echo "ops_ort: $n models, $failed failed"
[ "$failed" -eq 0 ]
