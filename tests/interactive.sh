#!/bin/sh
# interactive.sh MPX SRC - mpx at a terminal, driven through tmux: tab
# completion (commands, paths, node names, op types, colours, formats,
# paths with blanks quoted),
# Ctrl-C abandoning a line, a refused command leaving the session as it was,
# history kept across sessions (MPX_HISTORY and the XDG default), Ctrl-D.
# First a few checks without a terminal (stdin, usage).
#
# Every step waits for the screen to show what it expects, polling with a
# time limit instead of sleeping a fixed time: a loaded machine makes the
# test slower, not flaky. Keys are sent only once the previous step shows on
# screen (Ctrl-C makes the terminal drop input typed before it).
# Skips (exit 0, "SKIP") only when tmux is missing; scripts/bootstrap.sh
# installs it.
set -eu
MPX=$1
SRC=$2
PY=${3:-/usr/bin/python3} # with onnx, for the models of the Ctrl-C checks
LIMIT=${MPX_TEST_TIMEOUT:-60} # seconds per wait

tmp=$(mktemp -d)
sock="$tmp/tmux.sock"
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $*"
  if [ -S "$sock" ]; then
    echo "--- screen:"
    screen
  fi
  exit 1
}

# ---- without a terminal --------------------------------------------------

cd "$SRC"
out=$(echo 'help quit' | "$MPX" 2>&1) || fail "stdin commands: exit status $?"
case $out in
  "usage: quit"*) ;;
  *) fail "stdin commands: expected help's text and no prompt, got: $out" ;;
esac
status=0
out=$(printf 'frobnicate\nhelp quit\n' | "$MPX" 2>&1) || status=$?
[ "$status" = 1 ] || fail "stdin error: exit status $status, expected 1"
[ "$out" = '<stdin>:1: error: unknown command "frobnicate" (try: help)' ] ||
  fail "stdin error: expected one error and a stop, got: $out"
status=0
"$MPX" -Z >/dev/null 2>&1 || status=$?
[ "$status" = 64 ] || fail "bad option: exit status $status, expected 64"
"$MPX" -h | grep -q "exit status: 0 ok; 1 a command failed; 2 only asserts failed; 64 usage" ||
  fail "mpx -h does not document the exit statuses"
echo "without a terminal: ok"

# ---- at a terminal -----------------------------------------------------------

if ! command -v tmux >/dev/null 2>&1; then
  echo "SKIP: tmux is not installed (scripts/bootstrap.sh installs it)"
  exit 0
fi

tm() { tmux -S "$sock" -f /dev/null "$@"; }
screen() { tm capture-pane -p -J -S - -t mpx 2>/dev/null || true; }
last() { screen | sed 's/[[:space:]]*$//; /^$/d' | tail -n 1; }
last_is() { [ "$(last)" = "$1" ]; }
has() { screen | grep -qF -- "$1"; }
gone() { ! tm has-session -t mpx 2>/dev/null; }
keys() { tm send-keys -t mpx "$@"; }

# wait_for WHAT CMD...: run CMD every 0.1 s until it succeeds.
wait_for() {
  what=$1
  shift
  n=0
  until "$@"; do
    n=$((n + 1))
    [ $n -le $((LIMIT * 10)) ] || fail "timed out waiting for $what"
    sleep 0.1
  done
}
# The line being edited, without trailing blanks ("mpx> load " is "mpx> load";
# the text typed after it shows whether the blank was there).
expect_line() { wait_for "the line \"$1\"" last_is "$1"; }
# Type a command, wait for its output and the next prompt.
run() {
  if [ -n "$1" ]; then keys "$1" Enter; else keys Enter; fi
  wait_for "the output of \"$1\"" has "$2"
  expect_line "mpx>"
}
# start VAR=VALUE...: mpx in a fresh window (the environment cleaned of the
# caller's MPX_HISTORY), at its first prompt.
start() {
  tm new-session -d -s mpx -x 160 -y 50 -c "$SRC" "env -u MPX_HISTORY NO_COLOR=1 $* '$MPX'"
  expect_line "mpx>"
}
quit_with_ctrl_d() {
  keys C-d
  wait_for "mpx to leave on Ctrl-D" gone
}

# One session that outlives mpx's keeps the tmux server up between them.
tm new-session -d -s keep "sleep 86400"
hist="$tmp/history"

start "MPX_HISTORY='$hist'"

# Commands, then paths: a unique match gets a blank after it, several
# complete to their common part.
keys lo Tab
expect_line "mpx> load"
keys examples/ti
expect_line "mpx> load examples/ti"
keys Tab
expect_line "mpx> load examples/tiny_"
keys c Tab
expect_line "mpx> load examples/tiny_cnn"
keys .j Tab
expect_line "mpx> load examples/tiny_cnn.json"
run "" "loaded examples/tiny_cnn.json"
echo "completion of commands and paths: ok"

# Node names, op types in a selector list, colours, formats.
keys "show /backbone/stage1/dwc" Tab
expect_line "mpx> show /backbone/stage1/dwconv/Conv"
run "" "node /backbone/stage1/dwconv/Conv"
keys "colour Relu,Gem" Tab
expect_line "mpx> colour Relu,Gemm"
keys re Tab
expect_line "mpx> colour Relu,Gemm red"
# Ctrl-C abandons the line: nothing runs.
keys C-c
expect_line "mpx>"
keys "target bf" Tab
expect_line "mpx> target bf16"
keys C-c
expect_line "mpx>"
# Every format of numerics' table completes, the NaN variant of fp8 e4m3 too.
keys "target fp8e4m3n" Tab
expect_line "mpx> target fp8e4m3nan"
keys C-c
expect_line "mpx>"
# Metrics complete from their table: report --sort lists exactly the metrics
# `help report` names (numerics/run/metrics.def), then local and order.
keys "report --sort sq" Tab
expect_line "mpx> report --sort sqnr_db"
keys C-c
expect_line "mpx>"
keys "report --sort " Tab Tab
want=$("$MPX" -c "help report" | sed -n 's/^metrics: //p')
[ -n "$want" ] || fail "help report lists no metrics"
for m in $want local order; do
  wait_for "the completion list to show $m" has " $m"
done
keys C-c
expect_line "mpx>"
# Data inputs and sets: kinds, their options and values, data's words, settings.
keys "input x im" Tab
expect_line "mpx> input x image"
keys "f.png chan" Tab
expect_line "mpx> input x image f.png channels"
keys "bg" Tab
expect_line "mpx> input x image f.png channels bgr"
keys C-c
expect_line "mpx>"
keys "input x files 'a/*.wav' audio ra" Tab
expect_line "mpx> input x files 'a/*.wav' audio rate"
keys C-c
expect_line "mpx>"
keys "data examples/data/lines sh" Tab
expect_line "mpx> data examples/data/lines shuffle"
keys C-c
expect_line "mpx>"
keys "set pa" Tab
expect_line "mpx> set pager"
keys "of" Tab
expect_line "mpx> set pager off"
keys C-c
expect_line "mpx>"
run "rules" "no rules: every node has its default colour"
has "plan:" && fail "a line abandoned with Ctrl-C ran"
echo "completion of nodes, op types, colours, formats, data inputs and sets, settings; Ctrl-C at the prompt: ok"

# Refused commands leave the session exactly as it was: the same `save`
# before and after, the same input shape.
run "input x shape 1x3x32x32" "input x: 1x3x32x32"
run "colour Conv green when macs >= 100K" "plan:"
run "save $tmp/before.mpx" "saved $tmp/before.mpx"
run "input x shape 1x4x32x32" "dim 1 is fixed at 3"
run "colour Conv purple" 'found "purple"'
run "set top 0" "set top: expected a row count"
run "save $tmp/after.mpx" "saved $tmp/after.mpx"
cmp -s "$tmp/before.mpx" "$tmp/after.mpx" || fail "refused commands changed the session: $(diff "$tmp/before.mpx" "$tmp/after.mpx")"
grep -qx "input x shape 1x3x32x32" "$tmp/after.mpx" || fail "the saved session lost the input shape"
grep -qx "colour Conv green when macs >= 100K" "$tmp/after.mpx" || fail "the saved session lost the rule"
echo "refused commands leave the session unchanged: ok"

# History: kept in MPX_HISTORY, recalled with Up after a restart.
run "help quit" "leave mpx"
quit_with_ctrl_d
grep -q "help" "$hist" || fail "history file $hist does not hold the commands"
start "MPX_HISTORY='$hist'"
keys Up
expect_line "mpx> help quit"
keys Up
expect_line "mpx> save $tmp/after.mpx"
keys C-c
expect_line "mpx>"
keys quit Enter
wait_for "mpx to leave on quit" gone
echo "history across sessions: ok"

# The default place: $XDG_DATA_HOME/mpx/history, its folder made.
start "XDG_DATA_HOME='$tmp/xdg'"
run "help set" "change a setting"
quit_with_ctrl_d
grep -q "help" "$tmp/xdg/mpx/history" || fail "no history in \$XDG_DATA_HOME/mpx/history"

# A history that cannot be kept is a warning, not the end of the session.
: >"$tmp/plain_file"
start "MPX_HISTORY='$tmp/plain_file/history'"
has "warning: cannot read history" || fail "no warning for an unusable history file"
run "help quit" "leave mpx"
quit_with_ctrl_d
echo "history in the XDG folder; unusable history file: ok"

# The pager: output taller than the terminal goes through $PAGER (here a
# sed that marks its lines), short output does not, `set pager off` stops
# it. Mistyped names get a did-you-mean.
tm new-session -d -s mpx -x 160 -y 20 -c "$SRC" "env -u MPX_HISTORY NO_COLOR=1 PAGER='sed s/^/PAGED:/' '$MPX'"
expect_line "mpx>"
run "load examples/tiny_cnn.json" "loaded"
run "plan" "PAGED:cast"
paged=$(screen | grep -c "^PAGED:cast" || true)
run "info" "producer"
has "PAGED:producer" && fail "a short output went through the pager"
run "set pager off" "set pager off"
run "plan" "MACs in fp16"
[ "$(screen | grep -c "^PAGED:cast" || true)" = "$paged" ] || fail "set pager off: the plan still went through the pager"
screen | grep -q "^cast " || fail "set pager off: the plan was not printed"
run "colr Conv red" "did you mean colour?"
run "show /backbone/stage1/dwconv/conv" "did you mean /backbone/stage1/dwconv/Conv?"
run "target fp61" "did you mean fp16?"
quit_with_ctrl_d
echo "pager, set pager off, did-you-mean: ok"

# Ctrl-C stops a search between or inside its evaluations, applies
# nothing, and leaves what it learned: the JSON of every evaluation, saying
# it was interrupted (PP-OCRv4 det: an evaluation takes seconds; skipped
# when the models have not been fetched).
DET="$SRC/.cache/ocr-models-1.4.2/assets/ch_PP-OCRv4_det_infer.onnx"
if [ -f "$DET" ]; then
  start
  run "load $DET" "loaded"
  run "input x shape 1x3x640x640" "tensors shaped"
  run "save $tmp/search_before.mpx" "saved"
  keys "search output.rel_l2 < 1e-2 --json $tmp/interrupted.json" Enter
  # the progress line appears once the first evaluation is done
  # (the first evaluation of det at 640x640 takes minutes in a sanitizer
  # build on a loaded machine: this one wait may take ten of them)
  limit_was=$LIMIT
  LIMIT=600
  wait_for "the search's progress line" has "evaluations; "
  LIMIT=$limit_was
  keys C-c
  # inside an evaluation the run reports "cancelled", between two of them
  # the search "interrupted" (which one depends on the engine's speed)
  search_stopped() { has "cancelled" || has "search: interrupted"; }
  wait_for "the search to stop" search_stopped
  expect_line "mpx>"
  screen | grep "kept fp32" | grep -qv "the best plan so far" && fail "an interrupted search printed a result"
  # stopped inside an evaluation's run: that evaluation is listed as
  # interrupted, with no verdict; between two: every one listed has one
  inside=0
  has "cancelled" && inside=1
  interrupted_json() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ev, inside = d["evaluations"], sys.argv[2] == "1"
ok = d["ended"] == "interrupted" and not d["applied"] and len(ev) >= 1
ok = ok and all("holds" in e for e in ev[:-1])
ok = ok and ((ev[-1].get("interrupted") is True and "holds" not in ev[-1]) if inside else "holds" in ev[-1])
sys.exit(not ok)' "$tmp/interrupted.json" "$inside" 2>/dev/null
  }
  interrupted_json || fail "an interrupted search did not write its JSON (ended: interrupted, every evaluation, the one stopped inside its run with no verdict): $(cat "$tmp/interrupted.json")"
  run "save $tmp/search_after.mpx" "saved"
  cmp -s "$tmp/search_before.mpx" "$tmp/search_after.mpx" ||
    fail "an interrupted search changed the session: $(diff "$tmp/search_before.mpx" "$tmp/search_after.mpx")"
  run "rules" "no rules"
  quit_with_ctrl_d
  echo "Ctrl-C stops a search, nothing applied, its JSON written: ok"
else
  echo "SKIP: Ctrl-C during search (no $DET; scripts/fetch-models.sh fetches it)"
fi

# A run over a data set shows "sample i of n, node j of m" and Ctrl-C stops
# it, the session as it was (no run; the data set still bound). The set is
# the example lines linked 25 times over (400 samples): the run must still
# be going when the key arrives, however slowly a loaded machine shows the
# progress to this script (16 samples took under a second: the run could
# end between the progress showing and Ctrl-C).
REC="$SRC/.cache/ocr-models-1.4.2/assets/ch_PP-OCRv4_rec_infer.onnx"
if [ -f "$REC" ]; then
  mkdir "$tmp/lines"
  for k in $(seq 25); do
    for f in "$SRC"/examples/data/lines/*.png; do
      ln -s "$f" "$tmp/lines/${k}_$(basename "$f")"
    done
  done
  start
  run "load $REC" "loaded"
  run "input x files '$tmp/lines/*.png' image mean 0.5 std 0.5" "400 samples"
  keys "run" Enter
  # any sample's progress: the line is rewritten for every sample, so one
  # sample's own number shows only for that sample's time (60 ms on a
  # quiet machine), shorter than a poll can be sure to catch
  run_progress() { screen | grep -qE "sample [0-9]+ of 400, node"; }
  wait_for "the run's progress" run_progress
  keys C-c
  wait_for "the run to stop" has "cancelled"
  expect_line "mpx>"
  run "report" "no run yet"
  run "data" "400 samples"
  quit_with_ctrl_d
  echo "progress over a data set, Ctrl-C stops it, session unchanged: ok"
else
  echo "SKIP: Ctrl-C during a data-set run (no $REC)"
fi

# Ctrl-C inside one node: a Loop of a million 256 x 256 products (hours;
# the loop budget off), and one 4096 x 4096 x 4096 MatMul, the model's last
# node (seconds: no check between nodes follows it). Each run is
# interrupted once mpx has spent a second of CPU on it (read from
# /proc: a condition, not a sleep), reports "cancelled", and the session
# goes on with no run kept.
if "$PY" -c "import onnx" 2>/dev/null; then
  "$PY" "$SRC/tests/cancel_models.py" "$tmp/cancel" || fail "cancel_models.py"
  # mpx's process: the pane's, or its child when a shell runs it
  mpx_pid() {
    p=$(tm display -p -t mpx '#{pane_pid}')
    [ "$(cat "/proc/$p/comm")" = mpx ] || p=$(pgrep -P "$p" | head -n 1)
    echo "$p"
  }
  cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  busy() { [ $(($(cpu_ticks "$pid") - ticks0)) -ge "$(getconf CLK_TCK)" ]; }
  interrupt_run() {
    pid=$(mpx_pid)
    ticks0=$(cpu_ticks "$pid")
    keys "run" Enter
    wait_for "mpx to compute for a second" busy
    keys C-c
    wait_for "the run to stop" has "$1"
    expect_line "mpx>"
    run "report" "no run yet"
  }
  start
  run "load $tmp/cancel/loop.onnx" "loaded"
  run "input W const 0" "input W"
  run "set loops 0" "set loops 0"
  # (between two iterations, or inside the body's product)
  interrupt_run 'cancelled'
  has 'error: node "loop" (Loop): ' || fail "the Loop's cancel does not name the node"
  quit_with_ctrl_d
  start
  run "load $tmp/cancel/matmul.onnx" "loaded"
  # (inside the kernel or, on the other thread, as the run picks its next
  # job: either way "cancelled")
  interrupt_run 'cancelled'
  quit_with_ctrl_d
  echo "Ctrl-C inside a Loop and inside one MatMul, the session goes on: ok"
else
  echo "SKIP: Ctrl-C inside one node (no python3 with onnx to write the models)"
fi

# Paths with blanks complete quoted, as the command lexer reads them back:
# the whole word quoted when nothing was quoted yet, a quote the user opened
# kept (single or double), left open after a folder so that Tab goes on
# into it, closed after a file; the completed line runs.
mkdir -p "$tmp/blank/my data/sub dir"
cp "$SRC/examples/tiny_cnn.json" "$tmp/blank/my data/tiny cnn.json"
: >"$tmp/blank/my data/sub dir/x y.json"
: >"$tmp/blank/my data/it's.json"
tm new-session -d -s mpx -x 160 -y 50 -c "$tmp/blank" "env -u MPX_HISTORY NO_COLOR=1 '$MPX'"
expect_line "mpx>"
keys "load my" Tab
expect_line "mpx> load 'my data/"
keys "ti" Tab
expect_line "mpx> load 'my data/tiny cnn.json'"
run "" "loaded my data/tiny cnn.json"
keys "load 'my data/s" Tab
expect_line "mpx> load 'my data/sub dir/"
keys Tab
expect_line "mpx> load 'my data/sub dir/x y.json'"
keys C-c
expect_line "mpx>"
keys 'load "my data/s' Tab
expect_line 'mpx> load "my data/sub dir/'
keys x Tab
expect_line 'mpx> load "my data/sub dir/x y.json"'
keys C-c
expect_line "mpx>"
keys "load my" Tab
expect_line "mpx> load 'my data/"
keys "it" Tab
expect_line "mpx> load 'my data/it'\"'\"'s.json'"
keys C-c
expect_line "mpx>"
quit_with_ctrl_d
echo "completion of paths with blanks and quotes: ok"

echo "interactive: ok"
