#!/bin/sh
# search's promises, checked with mpx itself on the bundled CNN (bf16):
#  - the set it applies meets the condition, and the applied rules reproduce
#    the figure it reported exactly (assert ... == <reported value>);
#  - auto's set is 1-minimal: giving any one node back to low breaks the
#    budget (each checked by a plan without that node's rule);
#  - greedy, bisect and sensitivity sets meet the condition too.
# Usage: search_check.sh <mpx> <source root>
set -eu
MPX=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SETUP="load examples/tiny_cnn.json; input x shape 1x3x32x32; input x random normal 0 1 seed 7; target bf16"
COND="output.rel_l2 < 1e-3"
fail=0
for method in auto greedy bisect sensitivity; do
  "$MPX" -c "$SETUP; search $COND --method $method --json $tmp/$method.json" >/dev/null
  python3 - "$tmp/$method.json" > "$tmp/$method.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(repr(d["figures"]["output.rel_l2"]))
for n in d["fp32"]:
    print(n)
PY
  want=$(head -1 "$tmp/$method.txt")
  tail -n +2 "$tmp/$method.txt" > "$tmp/$method.set"
  n=$(wc -l < "$tmp/$method.set")
  rules=""
  while read -r node; do rules="$rules; colour name:$node red"; done < "$tmp/$method.set"
  # The applied rules (the session after search) give the reported figure exactly.
  if ! "$MPX" -c "$SETUP; search $COND --method $method; run; assert output.rel_l2 == $want and $COND" >/dev/null; then
    echo "search_check: $method: the applied rules do not reproduce output.rel_l2 = $want"; fail=1
  fi
  # The same set as rules typed by hand: the same figure (plans are pure functions of the rules).
  if ! "$MPX" -c "$SETUP$rules; run; assert output.rel_l2 == $want" >/dev/null; then
    echo "search_check: $method: the set as typed rules does not give output.rel_l2 = $want"; fail=1
  fi
  echo "search_check: $method: $n nodes fp32, output.rel_l2 $want"
  # An evaluation is a pure function of its set: auto and greedy never
  # evaluate a set twice, and the figures they report are those of the one
  # evaluation of the final set. bisect is the peers' method as they run it, repeats
  # included.
  if [ "$method" != bisect ] && ! python3 - "$tmp/$method.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sets = [tuple(sorted(e["set"])) for e in d["evaluations"]]
dup = len(sets) - len(set(sets))
if dup:
    print("search_check: %s evaluated %d sets twice" % (d["method"], dup))
    sys.exit(1)
final = [e for e in d["evaluations"] if sorted(e["set"]) == sorted(d["fp32"])]
if len(final) != 1 or not final[0]["holds"] or final[0]["figures"] != d["figures"]:
    print("search_check: the reported figures are not those of the one evaluation of the final set")
    sys.exit(1)
PY
  then fail=1; fi
  [ "$method" = auto ] || continue
  [ "$n" -ge 1 ] || { echo "search_check: auto found an empty set for a budget the default plan misses"; fail=1; }
  # 1-minimal: without any one of its rules the budget breaks (assert fails: exit 2).
  while read -r drop; do
    others=""
    while read -r node; do [ "$node" = "$drop" ] || others="$others; colour name:$node red"; done < "$tmp/$method.set"
    status=0
    "$MPX" -c "$SETUP$others; run; assert $COND" >/dev/null 2>&1 || status=$?
    if [ "$status" != 2 ]; then
      echo "search_check: auto's set is not 1-minimal: without $drop the condition still holds (exit $status)"; fail=1
    fi
  done < "$tmp/$method.set"
done
# Weights that overflow the target: known without a run, they go fp32
# before the ranking's local run, but only once a plain run of the plan as
# it is has failed; a condition the plan as it is meets adds nothing.
sed 's|"low": 0.5, "high": 1.5, "seed": 5|"low": 70000, "high": 80000, "seed": 5|' examples/tiny_cnn.json > "$tmp/ovf.json"
grep -q '"low": 70000' "$tmp/ovf.json" || { echo "search_check: could not make the overflowing model"; fail=1; }
OVF="load $tmp/ovf.json; input x shape 1x3x32x32; input x random normal 0 1 seed 7; target fp16"
"$MPX" -c "$OVF; search output.rel_l2 < 1e-4 --json $tmp/ovf-auto.json; run; assert output.rel_l2 < 1e-4" >/dev/null
if ! python3 - "$tmp/ovf-auto.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["evaluations"]
bn = "/backbone/stem/bn/BatchNormalization"
if (len(ev) < 2 or ev[0]["set"] != [] or ev[0]["holds"] or ev[0].get("local") or ev[1]["set"] != [bn]
        or not ev[1].get("local")):
    print("search_check: overflowing weights: want a plain run of the plan, then a local one with %s fp32; got %s"
          % (bn, [(e["set"], e.get("local", False)) for e in ev[:2]]))
    sys.exit(1)
if bn not in d["fp32"]:
    print("search_check: overflowing weights: %s not kept fp32" % bn)
    sys.exit(1)
PY
then fail=1; fi
out=$("$MPX" -c "$OVF; search output.rel_l2 < 1e-2; rules" 2>&1)
case "$out" in
  *"already meets output.rel_l2 < 1e-2; nothing added"*) ;;
  *) echo "search_check: overflowing weights, a condition the plan meets: $out"; fail=1 ;;
esac
case "$out" in *"# search"*) echo "search_check: a condition the plan meets added rules"; fail=1 ;; esac
# A search that stops early leaves what it learned: the JSON (every
# evaluation, how it ended, the best set so far) is written on a limit, on
# --time and when no plan meets the condition; --apply-best applies the best
# set so far, without it nothing is applied; `search --json` alone on stdout
# is the JSON alone (the human line goes to stderr), with -q or without.
BASE="load examples/tiny_cnn.json; input x shape 1x3x32x32; input x random normal 0 1 seed 7; target bf16"
check_json() { # file, expected "ended", whether a best set is expected (yes/no), applied (true/false)
  python3 - "$@" <<'PY'
import json, sys
path, ended, best, applied = sys.argv[1:5]
d = json.load(open(path))
errs = []
if d.get("ended") != ended: errs.append("ended %r, want %r" % (d.get("ended"), ended))
if (d.get("fp32") is not None) != (best == "yes"): errs.append("fp32 %r, want a set: %s" % (d.get("fp32"), best))
if str(d.get("applied")).lower() != applied: errs.append("applied %r, want %s" % (d.get("applied"), applied))
if len(d.get("evaluations", [])) != d.get("n_evaluations", -1) + d.get("n_unchanged", 0):
    errs.append("%d evaluations logged, %d counted" % (len(d.get("evaluations", [])), d.get("n_evaluations", -1)))
if ended != "done" and not d.get("error"): errs.append("no error message")
for k in ("fp32", "figures", "low_macs_pct", "low_cost_pct"):
    if k not in d: errs.append("no key %s" % k)
    elif best != "yes" and d[k] is not None: errs.append("%s %r without a plan, want null" % (k, d[k]))
if best == "yes":
    held = [e for e in d["evaluations"] if e["holds"]]
    top = max(held, key=lambda e: e["low_cost_pct"])
    if sorted(top["set"]) != sorted(d["fp32"]) or top["figures"] != d["figures"]:
        errs.append("fp32 is not the held evaluation with the most cost low")
if errs:
    print("search_check: %s: %s" % (path, "; ".join(errs)))
    sys.exit(1)
PY
}
# bisect evaluates the plan as it is (fails), then all fp32 (holds): stopped at 3, the best so far is all fp32.
status=0
"$MPX" -c "$BASE; search $COND --method bisect --max-evals 3 --json $tmp/stop.json" >"$tmp/stop.out" 2>"$tmp/stop.err" || status=$?
[ "$status" = 1 ] || { echo "search_check: a search stopped at --max-evals exits $status, not 1"; fail=1; }
check_json "$tmp/stop.json" max_evals yes false || fail=1
grep -q "the best plan so far: 25 nodes kept fp32" "$tmp/stop.out" || { echo "search_check: no best plan so far reported: $(cat "$tmp/stop.out")"; fail=1; }
out=$("$MPX" -c "$BASE; search $COND --method bisect --max-evals 3; rules" 2>&1 || true)
case "$out" in *"# search"*) echo "search_check: a stopped search without --apply-best applied rules"; fail=1 ;; esac
"$MPX" -c "$BASE; search $COND --method bisect --max-evals 3 --apply-best --json $tmp/best.json; run; assert $COND and low_nodes == 0" >/dev/null ||
  { echo "search_check: --apply-best did not apply the best plan so far"; fail=1; }
check_json "$tmp/best.json" max_evals yes true || fail=1
# Stopped before anything held: the JSON has no set, and says so.
"$MPX" -c "$BASE; search $COND --max-evals 1 --json $tmp/none.json" >/dev/null 2>&1 && { echo "search_check: --max-evals 1 succeeded"; fail=1; }
check_json "$tmp/none.json" max_evals no false || fail=1
"$MPX" -c "$BASE; search output.rel_l2 < 0 --json $tmp/noplan.json" >/dev/null 2>&1 && { echo "search_check: an impossible condition succeeded"; fail=1; }
check_json "$tmp/noplan.json" no_plan no false || fail=1
# --time: checked before every evaluation; a microsecond is over before the first.
"$MPX" -c "$BASE; search $COND --time 1e-6 --json $tmp/time.json" >/dev/null 2>&1 && { echo "search_check: --time 1e-6 succeeded"; fail=1; }
check_json "$tmp/time.json" time no false || fail=1
# --json's file is checked before any evaluation: a missing folder, the
# loaded model itself, a folder: refused at once.
for target in /nonexistent_mpx_dir/x.json examples/tiny_cnn.json examples '~/x.json'; do
  out=$("$MPX" -c "$BASE; search $COND --json $target" 2>&1) && { echo "search_check: --json $target passed"; fail=1; }
  case "$out" in
    *"does not exist"* | *"the model this session loaded"* | *"is a folder"* | *"does not expand ~"*) ;;
    *) echo "search_check: --json $target: $out"; fail=1 ;;
  esac
  case "$out" in *"evaluation"*) echo "search_check: --json $target: evaluated before refusing: $out"; fail=1 ;; esac
done
# stdout: the JSON alone.
for q in "" -q; do
  "$MPX" $q -c "$BASE; search $COND --json" 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' ||
    { echo "search_check: search --json (mpx $q) printed more than the JSON on stdout"; fail=1; }
  "$MPX" $q -c "$BASE; search $COND --max-evals 2 --json" 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' ||
    { echo "search_check: a stopped search --json (mpx $q) printed more than the JSON on stdout"; fail=1; }
done
[ $fail = 0 ] && echo "search_check: ok"
exit $fail
