#!/bin/sh
# viz_check.sh MPX SRC WORK - the picture commands through the REPL on the
# bundled tiny_cnn: dot gives the same text as the unit test's expected files
# (tests/viz/*.dot), the SVG files parse as XML (xmllint) and hold the nodes,
# colours and cast labels, plot and html after a run, svg --watch follows
# plan changes, and the refusals say what is wrong.
set -eu
MPX=$1
SRC=$2
WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"

fail() {
  echo "viz_check: FAIL: $*" >&2
  exit 1
}
command -v xmllint >/dev/null 2>&1 || fail "xmllint missing (scripts/bootstrap.sh installs libxml2-utils)"

# $1 file, $2 pattern (fixed string), $3 what
has() { grep -qF -- "$2" "$1" || fail "$1: no $3 ($2)"; }
count() { grep -oF -- "$2" "$1" | wc -l; }
xml_ok() { xmllint --noout "$1" 2>"$WORK/xmllint.err" || fail "$1 is not well-formed XML: $(head -3 "$WORK/xmllint.err")"; }

cat >"$WORK/session.mpx" <<EOF
load examples/tiny_cnn.json
input x shape 1x3x32x32
colour Conv green when macs >= 1M else gray
dot $WORK/tiny_cnn.dot
dot $WORK/tiny_cnn_collapse.dot --collapse --cluster 2
dot $WORK/tiny_cnn_around.dot --around /backbone/stage1/se/Mul 1 --weights --shapes
svg $WORK/plan.svg
html $WORK/plan.html
run
svg $WORK/overlay.svg --overlay
plot $WORK/plot.svg
plot $WORK/sqnr.svg sqnr_db
compare fp16 bf16
plot $WORK/plot2.svg
html $WORK/review.html
svg $WORK/watch.svg --watch
colour Relu red
undo
svg --unwatch
colour Relu red
run --local
html $WORK/look.html
EOF
"$MPX" "$WORK/session.mpx" >"$WORK/session.out" 2>"$WORK/session.err" ||
  fail "the session failed: $(cat "$WORK/session.err")"
# stderr holds what the commands did (wrote ...); Graphviz's own warnings
# and errors there would mean a bad DOT.
grep -E "^(Warning|Error|warning|error)" "$WORK/session.err" && fail "unexpected messages on stderr: $(cat "$WORK/session.err")"

# 1. DOT: the same text as the library's, for the same plan (deterministic)
for f in tiny_cnn tiny_cnn_collapse tiny_cnn_around; do
  cmp -s "tests/viz/$f.dot" "$WORK/$f.dot" ||
    fail "$f.dot differs from tests/viz/$f.dot: $(diff "tests/viz/$f.dot" "$WORK/$f.dot" | head -5)"
done
has "$WORK/session.err" "wrote $WORK/tiny_cnn.dot: 32 nodes (25 ops), 32 edges, 4 casts" "dot summary"

# 2. SVG: XML, every op node by id, colours, cast labels, legend
for f in plan overlay watch plot plot2 sqnr; do xml_ok "$WORK/$f.svg"; done
svg=$WORK/plan.svg
for i in $(seq 0 24); do has "$svg" "<g id=\"n$i\" class=\"node\">" "node n$i"; done
for c in '#a5d6a7' '#bdbdbd' '#ef9a9a' '#ffd54f' '#cfe2f3'; do has "$svg" "fill=\"$c\"" "fill $c"; done
has "$svg" "fp32→fp16" "cast label"
has "$svg" "fp16→fp32" "cast label"
[ "$(count "$svg" '<polygon fill="#ffd54f" stroke="#e65100"')" -eq 4 ] || fail "$svg: expected 4 cast hexagons"
has "$svg" "/backbone/stage1/conv1/Conv" "node name"
has "$svg" ">legend<" "legend"
has "$WORK/overlay.svg" "rel_l2 of the last run" "overlay legend"
has "$WORK/overlay.svg" "rel_l2 " "per-node error"

# 3. plots
has "$WORK/plot.svg" "<polyline" "line"
has "$WORK/plot.svg" "rel_l2 (log scale)" "y axis label"
has "$WORK/plot.svg" "layers in topological order" "x axis label"
has "$WORK/plot.svg" "<title>Cast " "cast marks"
has "$WORK/plot.svg" "<title>red: " "red node marks"
has "$WORK/sqnr.svg" "sqnr_db (dB)" "linear axis"
[ "$(count "$WORK/plot2.svg" '<polyline')" -eq 2 ] || fail "plot2.svg: expected an fp16 and a bf16 line"
has "$WORK/plot2.svg" ">bf16 (compare)</text>" "bf16 legend"

# 4. pages: self-contained, every section; the plan-only page says there is no run
for f in plan review; do
  h=$WORK/$f.html
  for id in model plan graph plot layers; do has "$h" "<section id=\"$id\">" "section $id"; done
  if grep -qE '<link|src=|href="https?:|@import' "$h"; then fail "$h fetches something"; fi
done
has "$WORK/plan.html" "No run yet" "no-run note"
has "$WORK/review.html" "Worst layers" "worst layers"
# "what to look at" opens the page: the worst output and layer; own errors
# once a local run measured them (the layer to fix first), linked to the graph
has "$WORK/review.html" "<section id=\"look\"><h2>What to look at</h2>" "what to look at"
has "$WORK/review.html" "own errors: not measured" "own errors need a local run"
has "$WORK/look.html" "<li>largest own error <a href=\"#n" "the largest own error, linked"
has "$WORK/look.html" "the cause to fix first" "the cause named"
has "$WORK/review.html" "bf16 (compare)" "the bf16 run"
# numbers never wrap inside table cells ("3.47e-\n04" on narrow screens)
has "$WORK/review.html" "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}" "numbers kept on one line"
# the inline SVGs are well-formed on their own
perl -0777 -ne 'my $n = 0; while (/(<svg.*?<\/svg>)/sg) { $n++; open(my $f, ">", "$ARGV.inline$n.svg") or die; print $f $1; close $f }' "$WORK/review.html"
[ -e "$WORK/review.html.inline2.svg" ] || fail "review.html: expected two inline SVGs"
for f in "$WORK"/review.html.inline*.svg; do xml_ok "$f"; done

# 5. svg --watch: re-written on colour (Relu red) and undo, not after --unwatch
has "$WORK/session.err" "watching: $WORK/watch.svg" "watch notice"
reds_watch=$(count "$WORK/watch.svg" 'fill="#ef9a9a"')
reds_plan=$(count "$WORK/plan.svg" 'fill="#ef9a9a"')
[ "$reds_watch" -eq "$reds_plan" ] || fail "watch.svg was not re-written after undo ($reds_watch red fills, plan has $reds_plan)"
cat >"$WORK/watch.mpx" <<EOF
load examples/tiny_cnn.json
input x shape 1x3x32x32
svg $WORK/watch2.svg --watch
colour Relu red
EOF
"$MPX" "$WORK/watch.mpx" >/dev/null 2>"$WORK/watch.err" || fail "watch session: $(cat "$WORK/watch.err")"
[ "$(count "$WORK/watch2.svg" 'fill="#ef9a9a"')" -gt "$reds_plan" ] || fail "watch2.svg not re-written after colour"
xml_ok "$WORK/watch2.svg"

# 6. refusals name the problem and leave no file
refuse() { # $1 expected message, $2... commands
  want=$1
  shift
  if "$MPX" -c "load examples/tiny_cnn.json; input x shape 1x3x32x32; $*" >/dev/null 2>"$WORK/refuse.err"; then
    fail "accepted: $*"
  fi
  grep -qF -- "$want" "$WORK/refuse.err" || fail "\"$*\": expected \"$want\", got: $(cat "$WORK/refuse.err")"
}
refuse 'no node or tensor named "/no/such"' "dot --around /no/such 1"
refuse 'unknown option "--bogus"' "dot --bogus"
refuse 'usage: svg <file.svg>' "svg"
refuse 'nothing to plot yet' "plot $WORK/never.svg"
refuse 'unknown metric "relative"' "run; plot $WORK/never.svg relative"
refuse '--overlay needs a run first' "svg $WORK/never.svg --overlay"
refuse 'the last run used another plan' "run; colour Relu red; svg $WORK/never.svg --overlay"
refuse '--around depth' "dot --around /head/Softmax x"
[ ! -e "$WORK/never.svg" ] || fail "a refused command wrote a file"
"$MPX" -c "help svg" | grep -qF -- "--watch" || fail "help svg does not mention --watch"
echo "viz_check: ok"
