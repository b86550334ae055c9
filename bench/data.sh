#!/bin/sh
# bench/data.sh - runs over data sets (issue 14): PP-OCR cls over 256 samples
# and PP-OCRv4 rec over 32, each sample a real text-line PNG
# (examples/data/lines, repeated through links), decoded by mpx, run in fp16
# against its own fp32 reference. Against a one-sample run of the same
# model and image in the same script: time per sample (target <= 1.1x) and
# peak RSS (target <= 1.5x). Times are the wall time of the whole mpx
# process minus a load-only process (model load, image decode, plan), the
# fastest of --rounds (the least disturbed by other work on the machine); RSS
# is the process's maximum (wait4's ru_maxrss). The first run of a process
# pays for its thread pool and fresh pages, so a sample of a long set can
# cost less than a lone run. Prints a Markdown table.
# (The README's table and note come from: bench/data.sh --rounds 5.)
# usage: bench/data.sh [--build DIR] [--rounds N]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
ROUNDS=3
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: bench/data.sh [--build DIR] [--rounds N]" >&2; exit 64 ;;
  esac
done
MPX="$BUILD/mpx"
cd "$ROOT"
eval "$(scripts/fetch-models.sh .cache)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# n samples: links to the sixteen lines, round robin
samples() { # dir n
  mkdir -p "$1"
  i=0
  while [ $i -lt "$2" ]; do
    k=$((i % 16))
    ln -s "$ROOT/examples/data/lines/$(printf %02d $k).png" "$1/$(printf %04d $i).png"
    i=$((i + 1))
  done
}
# fastest wall seconds and max RSS (KB) of an mpx script over ROUNDS runs
measure() { # script
  python3 - "$MPX" "$1" "$ROUNDS" <<'PY'
import os, resource, subprocess, sys, time
best, rss = float("inf"), 0
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    pid = subprocess.Popen([sys.argv[1], "-c", sys.argv[2]], stdout=subprocess.DEVNULL).pid
    _, status, ru = os.wait4(pid, 0)
    best = min(best, time.perf_counter() - t0)
    rss = max(rss, ru.ru_maxrss)
    if status:
        sys.exit("bench/data.sh: mpx failed: " + sys.argv[2])
print(best, rss)
PY
}
echo "| model | samples | one sample: run s | data set: s per sample | ratio (target <= 1.1) | RSS one MB | RSS set MB | ratio (target <= 1.5) |"
echo "|---|---|---|---|---|---|---|---|"
for m in cls rec; do
  if [ $m = cls ]; then
    M="$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx"; N=256; OPT="size 48x192 mean 0.5 std 0.5"
  else
    M="$MODELS/ch_PP-OCRv4_rec_infer.onnx"; N=32; OPT="mean 0.5 std 0.5"
  fi
  samples "$tmp/$m" $N
  # The one-sample baseline streams as a data-set run does (set cache 0): the
  # run cache keeps every value of the first run for later incremental runs,
  # which costs that first run several times its time (see the README).
  ONE="set cache 0; load $M; input x image $ROOT/examples/data/lines/00.png $OPT"
  set -- $(measure "$ONE")
  t_load=$1
  set -- $(measure "$ONE; run")
  t_one=$1 rss_one=$2
  set -- $(measure "$ONE; input x files $tmp/$m/*.png image $OPT; run")
  t_set=$1 rss_set=$2
  python3 - "$m" "$N" "$t_load" "$t_one" "$rss_one" "$t_set" "$rss_set" <<'PY'
import sys
m, n, tl, t1, r1, ts, rs = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:])
one, per = t1 - tl, (ts - tl) / n
print(f"| {m} | {n} | {one:.3f} | {per:.3f} | {per / one:.2f} | {r1 / 1024:.0f} | {rs / 1024:.0f} | {rs / r1:.2f} |")
PY
done
