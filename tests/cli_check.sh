#!/bin/sh
# cli_check.sh MPX PYTHON WORK - the conventions of the mpx command line
# (issue 17): --help/-h/--version and long options, options after script
# names, stdout holding only what was asked for (JSON, CSV, DOT through a
# pipe), -q, quoting in -c, exit statuses with `set bail off`, the script
# line limit, where output files may be written.
set -eu
MPX=$1
PY=$2
WORK=$3
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
rm -rf "$WORK"
mkdir -p "$WORK"
n=0
fail() {
  echo "cli_check: FAIL: $*" >&2
  exit 1
}
ok() { n=$((n + 1)); }
M=examples/tiny_cnn.json
SETUP="load $M; input x shape 1x3x8x8"

# --help, -h, --version; exit 0, usage on stdout
for o in -h --help; do
  out=$("$MPX" $o) || fail "$o: exit $?"
  echo "$out" | grep -q "^usage: mpx \[options\]" || fail "$o: no usage line"
  for w in --command --interactive --quiet --version "exit status" NO_COLOR MPX_HISTORY PAGER stderr; do
    echo "$out" | grep -q -- "$w" || fail "$o does not mention $w"
  done
  ok
done
v=$("$MPX" --version) || fail "--version: exit $?"
echo "$v" | grep -Eq '^mpx [0-9]+\.[0-9]+\.[0-9]+( \(git [0-9a-f]+(-dirty)?\))?$' || fail "--version printed: $v"
[ "$("$MPX" -V)" = "$v" ] || fail "-V and --version differ"
ok
st=0; "$MPX" --bogus >/dev/null 2>"$WORK/bogus.err" || st=$?
[ $st = 64 ] && grep -q "usage: mpx" "$WORK/bogus.err" || fail "unknown option: status $st, $(cat "$WORK/bogus.err")"
ok

# long options, and options after the script name
printf 'load %s\ninfo\n' "$M" >"$WORK/info.mpx"
"$MPX" "$WORK/info.mpx" --command "ops" >"$WORK/after.out" 2>"$WORK/after.err" || fail "options after the script: $(cat "$WORK/after.err")"
grep -q "^model .*tiny_cnn.json" "$WORK/after.out" && grep -q "^op  *nodes" "$WORK/after.out" ||
  fail "script then --command: $(cat "$WORK/after.out")"
ok

# stdout is only what was asked for: JSON through a pipe
"$MPX" -c "$SETUP; plan --json" 2>"$WORK/plan.err" | "$PY" -m json.tool >"$WORK/plan.json" ||
  fail "plan --json through a pipe is not JSON alone"
grep -q '"target": "fp16"' "$WORK/plan.json" || fail "plan JSON: $(head -3 "$WORK/plan.json")"
grep -q "^loaded $M" "$WORK/plan.err" && grep -q "^input x: 1x3x8x8" "$WORK/plan.err" ||
  fail "the informational lines are not on stderr: $(cat "$WORK/plan.err")"
ok
"$MPX" -c "$SETUP; run; report --json" 2>/dev/null | "$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["layers"]' ||
  fail "report --json through a pipe"
"$MPX" -c "$SETUP; run; report --csv" 2>/dev/null >"$WORK/r.csv"
head -1 "$WORK/r.csv" | grep -q "," && ! grep -q "^run:\|^loaded" "$WORK/r.csv" || fail "report --csv: $(head -2 "$WORK/r.csv")"
"$MPX" -c "$SETUP; dot" 2>/dev/null | head -1 | grep -q "^digraph" || fail "dot without a file does not start stdout"
ok
# -q: nothing but what was asked for, on either stream
"$MPX" -q -c "$SETUP; colour Conv red; svg $WORK/q.svg; info" >"$WORK/q.out" 2>"$WORK/q.err" || fail "-q session failed"
[ -s "$WORK/q.err" ] && fail "-q: stderr not empty: $(cat "$WORK/q.err")"
grep -q "^model " "$WORK/q.out" && ! grep -q "^wrote\|^plan:\|^loaded" "$WORK/q.out" || fail "-q: stdout: $(cat "$WORK/q.out")"
[ -s "$WORK/q.svg" ] || fail "-q: the svg was not written"
ok
# errors stay on stderr with -q
st=0; "$MPX" -q -c "$SETUP; frobnicate" >/dev/null 2>"$WORK/qe.err" || st=$?
[ $st = 1 ] && grep -q 'unknown command "frobnicate"' "$WORK/qe.err" || fail "-q hid an error (status $st)"
ok

# quoting in -c: ; and # inside quotes are part of the word
"$MPX" -c "$SETUP; run; tensor x --save '$WORK/a;b #c.npy'" >/dev/null 2>&1 || fail "quoted ; and # in -c"
[ -f "$WORK/a;b #c.npy" ] || fail "quoted file name not kept whole"
st=0; "$MPX" -c "load 'examples/tiny_cnn.json" 2>"$WORK/quote.err" || st=$?
[ $st = 1 ] && grep -q "unterminated single quote (opened at column 6)" "$WORK/quote.err" || fail "unterminated quote: $(cat "$WORK/quote.err")"
ok

# mpx merge quotes its file names into one command; a line break cannot be
st=0; "$MPX" merge "$(printf 'a\nb.json')" >/dev/null 2>"$WORK/merge.err" || st=$?
[ $st = 64 ] && grep -q "mpx merge: a file name with a line break" "$WORK/merge.err" || fail "merge of a name with a line break: status $st, $(cat "$WORK/merge.err")"
ok
# usage errors of the command line: no shard to merge, a script that is not there
st=0; "$MPX" merge >/dev/null 2>"$WORK/merge0.err" || st=$?
[ $st = 64 ] && grep -q "usage: merge" "$WORK/merge0.err" || fail "mpx merge without shards: status $st, $(cat "$WORK/merge0.err")"
st=0; "$MPX" "$WORK/no-such-script.mpx" >/dev/null 2>"$WORK/noscript.err" || st=$?
[ $st = 64 ] && grep -q "script .*no-such-script.mpx: cannot open" "$WORK/noscript.err" || fail "missing script: status $st, $(cat "$WORK/noscript.err")"
ok

# exit statuses with bail off: 2 when only asserts failed, 1 when anything else did
st=0; "$MPX" -c "set bail off; $SETUP; run; assert output.rel_l2 < 1e-12; info" >/dev/null 2>&1 || st=$?
[ $st = 2 ] || fail "only an assert failed: exit $st, expected 2"
st=0; "$MPX" -c "set bail off; $SETUP; run; assert output.rel_l2 < 1e-12; colour Conv purple" >/dev/null 2>&1 || st=$?
[ $st = 1 ] || fail "an assert and a command failed: exit $st, expected 1"
ok

# a script line over 1 MiB is refused by file:line and its memory is not kept
"$PY" - "$WORK/long.mpx" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("set bail off\n")
    f.write("info " + "x" * (64 << 20) + "\n")
    f.write("load examples/tiny_cnn.json\n")
    f.write("info \\\n" + ("y" * (600 << 10) + " \\\n") * 2 + "\n")
PYEOF
# (the peak memory of the child from getrusage: /usr/bin/time is not on every machine)
st=0; "$PY" - "$MPX" "$WORK/long.mpx" "$WORK/long.out" "$WORK/long.rss" <<'PYEOF' || st=$?
import resource, subprocess, sys
with open(sys.argv[3], "w") as out:
    rc = subprocess.call([sys.argv[1], sys.argv[2]], stdout=out, stderr=subprocess.STDOUT)
open(sys.argv[4], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
PYEOF
[ $st = 1 ] || fail "long lines: exit $st"
grep -q "long.mpx:2: error: line longer than 1048576 bytes (1 MiB): not run" "$WORK/long.out" || fail "long line: $(head -c 300 "$WORK/long.out")"
grep -q "long.mpx:4: error: line longer than 1048576 bytes" "$WORK/long.out" || fail "long continued line not refused"
grep -q "^loaded examples/tiny_cnn.json" "$WORK/long.out" || fail "the script did not go on after the long line"
rss=$(cat "$WORK/long.rss")
[ "$rss" -lt 60000 ] || fail "a 64 MiB line cost $rss KB of memory"
ok

# output paths: folders made only below the current folder; never the model
cd "$WORK"
cp "$SRC/$M" model.json
st=0; "$MPX" -c "load model.json; dot /nonexistent-mpx-dir/sub/x.dot" >/dev/null 2>"$WORK/p1.err" || st=$?
[ $st = 1 ] && grep -q "the folder /nonexistent-mpx-dir does not exist (mpx creates folders only below the current one)" "$WORK/p1.err" ||
  fail "absolute path with a missing folder: $(cat "$WORK/p1.err")"
[ -e /nonexistent-mpx-dir ] && fail "a folder was created under /"
st=0; "$MPX" -c "load model.json; dot ../cli-up/x.dot" >/dev/null 2>"$WORK/p2.err" || st=$?
[ $st = 1 ] && grep -q "the folder ../cli-up does not exist" "$WORK/p2.err" || fail "../ path: $(cat "$WORK/p2.err")"
"$MPX" -c "load model.json; dot out/deep/x.dot" 2>/dev/null && [ -s out/deep/x.dot ] || fail "a folder below the current one was not made"
cp model.json before.json
st=0; "$MPX" -c "load model.json; save model.json" >/dev/null 2>"$WORK/p3.err" || st=$?
[ $st = 1 ] && grep -q "model.json is the model this session loaded" "$WORK/p3.err" && cmp -s model.json before.json ||
  fail "save over the model: $(cat "$WORK/p3.err")"
ln -s model.json link.json
st=0; "$MPX" -c "load model.json; dot link.json" >/dev/null 2>"$WORK/p4.err" || st=$?
[ $st = 1 ] && cmp -s model.json before.json || fail "dot over the model through a link"
ok
echo "cli_check: $n checks passed"
