#!/bin/sh
# bench/search.sh - search and sweep on the PP-OCR models, in one run:
#   det 1x3x640x640 fp16, `search output.rel_l2 < 1e-2` (the default plan is
#   ruined: BatchNormalization.1's variances overflow fp16), and rec
#   1x3x48x320 fp16, `search output.rel_l2 < 1e-3`: mpx's auto against bisect
#   (onnxconverter-common's method) and sensitivity (Intel Neural
#   Compressor's): evaluations, wall time, size of the fp32 set, % of MACs
#   and of cost low; one per-layer report (fp16, the default plan, the
#   fp32 reference included) and an 8-point sweep of the Conv threshold on
#   det, for the ratios search/report and sweep/report.
# Evaluations are runs that computed something; sets tried adds the sets
# whose plan the run cache already held (no node ran), which a peer's tool
# would have run. Evaluations and sets are deterministic; times are noisy on a shared
# machine (compare the ratios of one run). Prints a Markdown table.
# usage: bench/search.sh [--build DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
[ "${1:-}" = --build ] && BUILD=$(cd "$2" && pwd)
MPX="$BUILD/mpx"
cd "$ROOT"
eval "$(scripts/fetch-models.sh .cache)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
DET="load $MODELS/ch_PP-OCRv4_det_infer.onnx; input x shape 1x3x640x640"
REC="load $MODELS/ch_PP-OCRv4_rec_infer.onnx; input x shape 1x3x48x320; input x random uniform -1 1 seed 3"
echo "| model | condition | method | evaluations | sets tried | wall s | fp32 set | % MACs low | % cost low |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in det rec; do
  if [ $m = det ]; then S=$DET; C="output.rel_l2 < 1e-2"; else S=$REC; C="output.rel_l2 < 1e-3"; fi
  for how in auto bisect sensitivity; do
    t0=$(now)
    # a search stopped by --max-evals (500) still writes its JSON: the row says so
    "$MPX" -c "$S; search $C --method $how --json $tmp/$m-$how.json" >/dev/null || true
    t1=$(now)
    [ $m-$how = det-auto ] && t_search=$(secs "$t0" "$t1")
    python3 - "$tmp/$m-$how.json" "$m" "$C" "$how" "$(secs "$t0" "$t1")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if d["fp32"] is None:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {d['n_evaluations']} | {d['n_evaluations'] + d['n_unchanged']} | {sys.argv[5]} | ended: {d['ended']}, no plan | - | - |")
else:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {d['n_evaluations']} | {d['n_evaluations'] + d['n_unchanged']} | {sys.argv[5]} | {len(d['fp32'])}{'' if d['ended'] == 'done' else ' (' + d['ended'] + ')'} | {d['low_macs_pct']:.1f} | {d['low_cost_pct']:.1f} |")
PY
  done
done
# the report: the median of three runs
reps=""
for k in 1 2 3; do
  t0=$(now); "$MPX" -c "$DET; run" >/dev/null; t1=$(now)
  reps="$reps $(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1")"
done
t_report=$(python3 -c "import sys; v = sorted(map(float, sys.argv[1:])); print(f'{v[1]:.2f}')" $reps)
t2=$(now)
"$MPX" -c "$DET; sweep t in 0,64k,256k,1M,4M,16M,64M,256M : colour Conv green when macs >= \$t else gray" >/dev/null
t3=$(now)
echo
t_sweep=$(secs "$t2" "$t3")
echo "det: one fp16 report (load, reference and candidate; median of 3) $t_report s; 8-point Conv-threshold sweep $t_sweep s (same load)"
python3 -c "import sys; r = float(sys.argv[3]); print(f'det: search / report {float(sys.argv[1]) / r:.2f} (target 10), sweep / report {float(sys.argv[2]) / r:.2f} (target 3)')" "$t_search" "$t_sweep" "$t_report"
for f in "$tmp"/*.json; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1][:-5] + ':', ', '.join(d['fp32']))" "$f"
done
