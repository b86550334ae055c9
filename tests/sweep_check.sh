#!/bin/sh
# A sweep split into shards and merged (in any order, also by `mpx merge`)
# equals the unsharded sweep: the same points with the same figures, digit
# for digit; merging shards of different sweeps or models is refused by name.
# Usage: sweep_check.sh <mpx> <source root>
set -eu
MPX=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
S="load examples/tiny_cnn.json; input x shape 1x3x64x64; input x random normal 0 1 seed 5"
C='sweep t in 0,64k,256k,1M,4M : colour Conv green when macs >= $t else gray'
"$MPX" -c "$S; $C --json $tmp/full.json --csv $tmp/full.csv --plot $tmp/full.svg" >/dev/null
for k in 1 2 3; do "$MPX" -c "$S; $C --shard $k/3 --json $tmp/s$k.json" >/dev/null; done
"$MPX" merge "$tmp/s3.json" "$tmp/s1.json" "$tmp/s2.json" --json "$tmp/merged.json" --csv "$tmp/merged.csv" >/dev/null
"$MPX" -c "merge $tmp/s2.json $tmp/s3.json $tmp/s1.json --plot $tmp/merged.svg" >/dev/null
fail=0
python3 - "$tmp/full.json" "$tmp/merged.json" <<'PY' || fail=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("name", "command", "values", "model", "target"):
    assert a["sweep"][k] == b["sweep"][k], k
assert len(a["points"]) == 5 and a["points"] == b["points"], "points differ"
assert len({p["output_rel_l2"] for p in a["points"]}) > 1, "every point has the same error: the sweep swept nothing"
PY
cmp -s "$tmp/full.csv" "$tmp/merged.csv" || { echo "sweep_check: merged CSV differs"; fail=1; }
cmp -s "$tmp/full.svg" "$tmp/merged.svg" || { echo "sweep_check: merged plot differs"; fail=1; }
xmllint --noout "$tmp/full.svg" 2>/dev/null || { command -v xmllint >/dev/null && { echo "sweep_check: plot is not XML"; fail=1; }; }
# A missing shard, another sweep, another model: refused, naming the file.
out=$("$MPX" merge "$tmp/s1.json" "$tmp/s2.json" 2>&1) && { echo "sweep_check: merge without shard 3 passed"; fail=1; }
echo "$out" | grep -q "a shard is missing" || { echo "sweep_check: missing shard: $out"; fail=1; }
"$MPX" -c "$S; sweep u in 0,1M : colour Conv green when macs >= \$u else gray --json $tmp/other.json" >/dev/null
out=$("$MPX" merge "$tmp/s1.json" "$tmp/other.json" 2>&1) && { echo "sweep_check: merge of two sweeps passed"; fail=1; }
echo "$out" | grep -q "other.json is another sweep" || { echo "sweep_check: other sweep: $out"; fail=1; }
"$MPX" -c "load examples/tiny_transformer.json; $C --shard 2/3 --json $tmp/model2.json" >/dev/null 2>&1 || true
if [ -f "$tmp/model2.json" ]; then
  out=$("$MPX" merge "$tmp/s1.json" "$tmp/model2.json" "$tmp/s3.json" 2>&1) && { echo "sweep_check: merge across models passed"; fail=1; }
  echo "$out" | grep -q "another model" || { echo "sweep_check: other model: $out"; fail=1; }
fi
# Outputs to files leave stdout empty (a CI job's log, a pipe); --table asks
# for the table beside them; a bare sweep prints it.
out=$("$MPX" -q -c "$S; $C --json $tmp/quiet.json --csv $tmp/quiet.csv")
[ -z "$out" ] || { echo "sweep_check: sweep --json/--csv to files printed: $out"; fail=1; }
out=$("$MPX" merge "$tmp/s1.json" "$tmp/s2.json" "$tmp/s3.json" --csv "$tmp/quiet2.csv" 2>/dev/null)
[ -z "$out" ] || { echo "sweep_check: merge --csv to a file printed: $out"; fail=1; }
"$MPX" -q -c "$S; $C --plot $tmp/quiet.svg --table" | grep -q "%MACs" || { echo "sweep_check: --table printed no table"; fail=1; }
"$MPX" -q -c "$S; $C" | grep -q "%MACs" || { echo "sweep_check: a bare sweep printed no table"; fail=1; }
# Shards are of one model by its content (a worker may hold it in another
# folder) and of one session: another model under the same name, an extra
# rule or another input seed is refused (merged, it would pass for the
# unsharded sweep).
mkdir -p "$tmp/A" "$tmp/B"
cp examples/tiny_cnn.json "$tmp/A/m.json"
cp examples/tiny_cnn.json "$tmp/B/m.json"
SA="load $tmp/A/m.json; input x shape 1x3x64x64; input x random normal 0 1 seed 5"
SB="load $tmp/B/m.json; input x shape 1x3x64x64; input x random normal 0 1 seed 5"
"$MPX" -c "$SA; $C --shard 1/2 --json $tmp/a1.json" >/dev/null
"$MPX" -c "$SB; $C --shard 2/2 --json $tmp/b2.json" >/dev/null
"$MPX" merge "$tmp/a1.json" "$tmp/b2.json" --json "$tmp/ab.json" >/dev/null 2>&1 ||
  { echo "sweep_check: the same model from another folder did not merge"; fail=1; }
python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); sys.exit(a["points"] != b["points"])' "$tmp/ab.json" "$tmp/full.json" ||
  { echo "sweep_check: shards from two folders differ from the unsharded sweep"; fail=1; }
cp examples/tiny_transformer.json "$tmp/B/m.json"
"$MPX" -c "load $tmp/B/m.json; $C --shard 2/2 --json $tmp/other_model.json" >/dev/null 2>&1 || true
"$MPX" -c "$S; colour name:/head/* red; $C --shard 2/3 --json $tmp/rule2.json" >/dev/null
"$MPX" -c "load examples/tiny_cnn.json; input x shape 1x3x64x64; input x random normal 0 1 seed 6; $C --shard 2/3 --json $tmp/seed2.json" >/dev/null
for bad in other_model:"another model" rule2:"another session" seed2:"another session"; do
  f=${bad%%:*} msg=${bad#*:}
  [ -s "$tmp/$f.json" ] || { echo "sweep_check: no shard $f"; fail=1; continue; }
  out=$("$MPX" merge "$tmp/s1.json" "$tmp/$f.json" "$tmp/s3.json" 2>&1) && { echo "sweep_check: a shard $f merged"; fail=1; }
  case "$out" in *"$msg"*) ;; *) echo "sweep_check: shard $f: $out"; fail=1 ;; esac
done
# Output files are checked before the points run: a missing folder, the
# loaded model itself: refused at once, nothing swept.
for target in "--json /nonexistent_mpx_dir/s.json" "--plot examples/tiny_cnn.json"; do
  out=$("$MPX" -c "$S; $C $target" 2>&1) && { echo "sweep_check: sweep $target passed"; fail=1; }
  case "$out" in
    *"does not exist"* | *"the model this session loaded"*) ;;
    *) echo "sweep_check: sweep $target: $out"; fail=1 ;;
  esac
  case "$out" in *"points in"*) echo "sweep_check: sweep $target ran its points before refusing"; fail=1 ;; esac
done
[ $fail = 0 ] && echo "sweep_check: ok"
exit $fail
