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
dot $WORK/cause.dot --around /head/Softmax 1 --upstream-to-cause
svg $WORK/fold.svg --fold regions --overlay
svg $WORK/scopes.svg --fold scopes --overlay
dot $WORK/scopes.dot --fold
html $WORK/fold.html --fold
plan --scopes
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
# --local: each run's own error dashed beside the run's line, and said so
cat >"$WORK/plot_local.mpx" <<EOF
load examples/tiny_cnn.json
input x shape 1x3x32x32
colour Conv green when macs >= 1M else gray
run --local
plot $WORK/plot_local.svg --local
EOF
"$MPX" "$WORK/plot_local.mpx" >/dev/null 2>"$WORK/plot_local.err" || fail "plot --local: $(cat "$WORK/plot_local.err")"
xml_ok "$WORK/plot_local.svg"
[ "$(count "$WORK/plot_local.svg" '<polyline class="local"')" -eq 1 ] || fail "plot_local.svg: expected one own-error line"
[ "$(count "$WORK/plot_local.svg" '<polyline class="run"')" -eq 1 ] || fail "plot_local.svg: expected the run's line"
has "$WORK/plot_local.svg" ">dashed: own error (local)</text>" "own-error legend"
[ "$(count "$WORK/plot.svg" '<polyline class="local"')" -eq 0 ] || fail "plot.svg: an own-error line without --local"
# marks only where something happens: no underflow triangle per point (the
# old "h8 l-4 7 z"), one to three names; the red bands (Softmax, the last
# node, is red) within the frame's left and right edges
for f in plot plot2 plot_local; do
  [ "$(count "$WORK/$f.svg" 'h8 l-4 7 z')" -eq 0 ] || fail "$f.svg: underflow marked per point"
  n=$(count "$WORK/$f.svg" '<text class="label"')
  [ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "$f.svg: $n worst layers named (1 to 3 expected)"
  perl -ne '
    if (/<rect class="frame" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/) { $x0 = $1; $x1 = $1 + $2 }
    $in = 1 if /<g id="plot-red-nodes"/;
    push @b, [$1, $1 + $2] if $in && /<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/;
    $in = 0 if $in && m{^</g>};
    END {
      die "no frame\n" unless defined $x0;
      die "no red band\n" unless @b;
      for (@b) { die "band $$_[0]..$$_[1] outside $x0..$x1\n" if $$_[0] < $x0 - 1e-9 || $$_[1] > $x1 + 0.11 }
    }' "$WORK/$f.svg" 2>"$WORK/bands.err" || fail "$f.svg: $(cat "$WORK/bands.err")"
done

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

# the path to the cause: from the Softmax back to the node with the largest
# own error, its edges red, however far it lies beyond --around's depth
has "$WORK/cause.dot" "CAUSE: own rel_l2" "the cause named on its node"
n_path=$(grep -o 'path to the cause ([0-9]* nodes' "$WORK/cause.dot" | grep -o '[0-9]*')
[ -n "$n_path" ] && [ "$n_path" -ge 2 ] || fail "cause.dot: no path in the title"
# one red edge per step, two where the step passes a runtime cast
[ "$(count "$WORK/cause.dot" 'color="#d50000"')" -ge $((n_path - 1)) ] ||
  fail "cause.dot: expected $((n_path - 1)) or more red edges along the path"
# the model-level view: boxes r<i>, no cast hidden, the page with both views
xml_ok "$WORK/fold.svg"
has "$WORK/fold.svg" '<g id="r' "a folded region"
[ "$(count "$WORK/fold.svg" '<polygon fill="#ffd54f" stroke="#e65100"')" -eq 4 ] || fail "fold.svg: expected the 4 casts"
has "$WORK/fold.html" 'id="view-model"' "the model view"
has "$WORK/fold.html" 'id="view-detail" hidden' "the detailed graph behind it"
has "$WORK/fold.html" 'id="m-p' "the model view's scope boxes with their own ids"
# by scopes (tiny_cnn's names: /backbone/stem/..., /head/...): the top scopes
# as boxes, the same in DOT, SVG, the page (each scope's view in place) and
# plan --scopes; casts on the edges, not as nodes
xml_ok "$WORK/scopes.svg"
has "$WORK/scopes.svg" '<title>p' "a scope box"
has "$WORK/scopes.dot" 'backbone' "the backbone scope"
[ "$(count "$WORK/scopes.svg" '<polygon fill="#ffd54f" stroke="#e65100"')" -eq 0 ] || fail "scopes.svg: casts drawn as nodes"
has "$WORK/fold.html" '<template id="mv-' "a scope's view to open in place"
has "$WORK/fold.html" 'id="crumbs"' "the path back"
grep -q '^  backbone ' "$WORK/session.out" || fail "plan --scopes: no backbone line: $(cat "$WORK/session.out")"
grep -q '^    stage1 ' "$WORK/session.out" || fail "plan --scopes: no stage1 line under the backbone"
has "$WORK/fold.html" '<script id="mpx-index" type="application/json">' "the node index"
has "$WORK/fold.html" '<select id="tf-op"' "the table's filters"
has "$WORK/look.html" 'data-act="path"' "the path to the cause on the page"

# what search found is on the page: the nodes it kept fp32, linked, and the
# condition they meet
"$MPX" -c "load examples/tiny_cnn.json; input x shape 1x3x32x32; search output.rel_l2 < 1e-4; html $WORK/search.html" \
  >/dev/null 2>"$WORK/search.err" || fail "search session: $(cat "$WORK/search.err")"
has "$WORK/search.html" "<li>search kept" "search's nodes"
has "$WORK/search.html" "to meet <code>output.rel_l2 &lt; 1e-4</code>" "search's condition"
grep -o '<li>search kept.*</li>' "$WORK/search.html" | grep -q 'data-node="' || fail "search.html: search's nodes are not linked"

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
refuse '--upstream-to-cause needs --around' "run --local; dot --upstream-to-cause"
refuse 'needs a run of the current plan with own errors' "run; dot --around /head/Softmax 1 --upstream-to-cause"
[ ! -e "$WORK/never.svg" ] || fail "a refused command wrote a file"
"$MPX" -c "help svg" | grep -qF -- "--watch" || fail "help svg does not mention --watch"
echo "viz_check: ok"
