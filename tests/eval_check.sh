#!/bin/sh
# search --eval: the user's command reads the outputs mpx writes
# ($MPX_EVAL_DIR/cand/<output>.npy and ref/<output>.npy) and prints figures
# that search makes hold (tests/eval_npy.py, standard library only); the
# folder is gone after the search; a command that is missing, fails, prints
# nothing, prints NaN or hangs past --eval-timeout is an error naming it,
# with the session's rules unchanged and the JSON written.
# Usage: eval_check.sh <mpx> <source root>
set -eu
MPX=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
export TMPDIR="$tmp"
S="load tests/models/named_output.json; input x random normal 0 1 seed 2; target fp16; colour Mul green"
# side flushes to zero in fp16: its max_rel is 1 until the Mul making it is fp32.
"$MPX" -c "$S; search eval.max_rel < 1e-3 and eval.sign_agree == 1 --eval \"python3 tests/eval_npy.py side list\" --json $tmp/ok.json; rules" >"$tmp/ok.out" 2>"$tmp/ok.err" ||
  { echo "eval_check: the search failed: $(cat "$tmp/ok.err")"; fail=1; }
grep -q "colour name:shrink red  # search: eval.max_rel < 1e-3" "$tmp/ok.out" || { echo "eval_check: shrink not kept fp32: $(cat "$tmp/ok.out")"; fail=1; }
# the command saw both outputs on both sides
grep -q "^output.npy side.npy output.npy side.npy$" "$tmp/ok.err" || { echo "eval_check: the folder's files: $(cat "$tmp/ok.err")"; fail=1; }
python3 - "$tmp/ok.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["evaluations"]
if d["ended"] != "done" or d["figures"] != {"eval.max_rel": 0, "eval.sign_agree": 1} or ev[0]["holds"]:
    print("eval_check: figures %s, first evaluation %s" % (d["figures"], ev[0]))
    sys.exit(1)
if not (ev[0]["figures"]["eval.max_rel"] == 1):
    print("eval_check: the plan as it is should give max_rel 1 (side flushed), got %s" % ev[0]["figures"])
    sys.exit(1)
PY
[ -z "$(ls "$tmp" | grep mpx-eval || true)" ] || { echo "eval_check: the eval folder was left behind"; fail=1; }
# over a data set (3 samples of 4x8: side is all positive, all negative, half
# and half): every sample's output stacked on a leading axis, one command run
# per evaluation; with side flushed, half of the 96 elements agree in sign
D="load tests/models/named_output.json; data tests/data/signs.npz stacked; target fp16; colour Mul green"
"$MPX" -c "$D; search eval.sign_agree == 1 and eval.lead == 3 and eval.samples == 3 --eval \"python3 tests/eval_npy.py side\" --json $tmp/data.json; rules" >"$tmp/data.out" 2>"$tmp/data.err" ||
  { echo "eval_check: the search over a data set failed: $(cat "$tmp/data.err")"; fail=1; }
grep -q "colour name:shrink red  # search: eval.sign_agree == 1" "$tmp/data.out" || { echo "eval_check: data set: shrink not kept fp32: $(cat "$tmp/data.out")"; fail=1; }
python3 - "$tmp/data.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["evaluations"]
if ev[0]["figures"].get("eval.sign_agree") != 0.5 or d["figures"].get("eval.lead") != 3:
    print("eval_check: data set: first evaluation %s, found %s" % (ev[0], d["figures"]))
    sys.exit(1)
PY
# refusals: each an error naming the command, nothing applied, the JSON says failed
bad() { # command, expected text in the error, extra options
  status=0
  "$MPX" -c "$S; search eval < 1 --eval \"$1\" ${3:-} --json $tmp/bad.json; rules" >"$tmp/bad.out" 2>"$tmp/bad.err" || status=$?
  [ "$status" != 0 ] || { echo "eval_check: --eval \"$1\" did not fail"; fail=1; }
  grep -qF -- "$2" "$tmp/bad.err" || { echo "eval_check: --eval \"$1\": want \"$2\" in: $(cat "$tmp/bad.err")"; fail=1; }
  grep -q "# search" "$tmp/bad.out" && { echo "eval_check: --eval \"$1\" applied rules"; fail=1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ev=d["evaluations"]; sys.exit(d["ended"] != "failed" or d["fp32"] is not None or not ev or "holds" in ev[-1] or sys.argv[2] not in ev[-1].get("error", ""))' "$tmp/bad.json" "$2" ||
    { echo "eval_check: --eval \"$1\": the JSON does not say failed, with the failed evaluation and its error: $(cat "$tmp/bad.json")"; fail=1; }
}
bad "no_such_command_mpx" "no_such_command_mpx: command not found"
bad "exit 3" "exit 3 failed (exit status 3)"
bad "true" "true printed nothing"
bad "echo nan" "echo nan printed nan, not a finite number"
bad "echo 1,5" "echo 1,5 printed \"1,5\": text after its first value"
bad "echo 1; echo 2" "printed \"1\" and more lines: text after its first value"
bad "echo twelve" "echo twelve printed \"twelve\", not a number nor a JSON object of numbers"
bad "python3 tests/eval_npy.py side" "printed an object; name one of its figures: eval.<key>"
bad "sleep 30" "sleep 30 ran past --eval-timeout 0.2 s and was stopped" "--eval-timeout 0.2"
# A script run stopped by SIGINT or SIGTERM (a CI job's timeout) while its
# command runs: the search stops as Ctrl-C stops it at a prompt (the JSON
# written, ended interrupted; the command stopped; the folder removed), then
# mpx ends by the signal (exit status 128 + its number).
for sig in INT TERM; do
  rm -f "$tmp/started" "$tmp/sig.json"
  # (a background job of a script starts with SIGINT ignored: restored first)
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$MPX" -c "$S; search eval < 1 --eval \"touch $tmp/started; sleep 47.25\" --eval-timeout 600 --json $tmp/sig.json" >"$tmp/sig.out" 2>"$tmp/sig.err" &
  pid=$!
  n=0
  while [ ! -e "$tmp/started" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  kill -s $sig $pid
  status=0
  wait $pid || status=$?
  want=130
  [ $sig = TERM ] && want=143
  [ "$status" = $want ] || { echo "eval_check: SIG$sig: exit status $status, not $want: $(cat "$tmp/sig.err")"; fail=1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["ended"] != "interrupted" or d["applied"])' "$tmp/sig.json" ||
    { echo "eval_check: SIG$sig: the JSON does not say interrupted: $(cat "$tmp/sig.json" 2>&1)"; fail=1; }
  [ -z "$(ls "$tmp" | grep mpx-eval || true)" ] || { echo "eval_check: SIG$sig: the eval folder was left behind"; fail=1; }
  pgrep -f "sleep 47.25" >/dev/null && { echo "eval_check: SIG$sig: the --eval command still runs"; pkill -f "sleep 47.25"; fail=1; }
done
# figures of a command need the command
out=$("$MPX" -c "$S; search eval < 1" 2>&1 || true)
case "$out" in *"eval is the figure of a command: search ... --eval"*) ;; *) echo "eval_check: eval without --eval: $out"; fail=1 ;; esac
[ $fail = 0 ] && echo "eval_check: ok"
exit $fail
