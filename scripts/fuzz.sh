#!/bin/sh
# Run every libFuzzer harness of tests/fuzz for a time each, two at a time,
# from its checked-in corpus (seeds and past crashes), new inputs kept in the
# build folder. Prints executions, coverage and crashes per harness; exit 1
# when a harness crashed (its input is saved as <build>/fuzz-<name>/crash-*:
# add it to tests/fuzz/corpus/<name>/ once fixed, so `make test` replays it).
# usage: scripts/fuzz.sh <build-dir> <seconds> [harness ...]
set -eu
B=$(cd "$1" && pwd)
SECS=$2
shift 2
SRC=$(cd "$(dirname "$0")/.." && pwd)
HARNESSES=${*:-"onnx json tensor image audio npz cmd"}
JOBS=${JOBS:-2}
run_one() {
  h=$1
  d="$B/fuzz-$h"
  mkdir -p "$d/new"
  # libFuzzer writes crash files into its working folder
  # Graphviz and the text stack under it leak by themselves (as in the tests)
  (cd "$d" && LSAN_OPTIONS="suppressions=$SRC/tests/viz/lsan.supp:print_suppressions=0" \
      "$B/tests/fuzz_$h" -artifact_prefix="$d/" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2560 -max_len=65536 \
      -print_final_stats=1 "$d/new" "$SRC/tests/fuzz/corpus/$h" > log.txt 2>&1) || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log.txt" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$d/log.txt" | tail -1 | cut -d' ' -f2)
  crashes=$(ls "$d" | grep -c '^\(crash\|leak\|timeout\|oom\)-' || true)
  echo "fuzz $h: ${execs:-0} executions in ${SECS} s, coverage ${cov:-?} edges, $crashes crashes"
  if [ "$crashes" != 0 ]; then
    ls "$d"/crash-* "$d"/leak-* "$d"/timeout-* "$d"/oom-* 2>/dev/null | sed 's/^/  input: /'
    grep -m1 -A12 'ERROR: \|deadly signal\|ALARM\|out-of-memory' "$d/log.txt" | sed 's/^/  /'
    return 1
  fi
}
fail=0
set -- $HARNESSES
while [ $# -gt 0 ]; do
  pids=""
  i=0
  while [ $# -gt 0 ] && [ $i -lt "$JOBS" ]; do
    run_one "$1" > "$B/fuzz-$1.out" 2>&1 &
    pids="$pids $!:$1"
    shift
    i=$((i + 1))
  done
  for p in $pids; do
    wait "${p%%:*}" || fail=1
    cat "$B/fuzz-${p#*:}.out"
  done
done
exit $fail
