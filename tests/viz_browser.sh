#!/bin/sh
# viz_browser.sh MPX PYTHON CACHE WORK - the review artefacts of a real
# exploration, checked in a real browser.
#
# PP-OCRv4 det at 640x640, threshold rule on Conv, run, overlay: DOT, SVG,
# the error plot and the HTML page; PP-OCRv4 rec: the cast graph with and
# without its Constant nodes (765 nodes), timed, and its page. Headless
# Chromium (Debian's chromium; --headless --no-sandbox --disable-gpu, a fresh
# --user-data-dir) renders the det page from disk to a PNG, which must have
# the window's size and show the page: the header's dark band, the colour
# fills of the cast graph and the plot's line, not a blank or error page.
# Then the pages of det, rec and the bundled tiny_cnn at 1400x900, as a
# reviewer opens them: the DOM after the script ran (--dump-dom) says the
# script finished without an error, which view opened and whether the whole
# model fits the first screen; the page's own search (#find=...) finds
# p2o.BatchNormalization.1 and shows it in the detailed graph, #path draws
# the path to the cause; Chromium's console log (--enable-logging) has no
# message at all; screenshots of each first screen stay in WORK (first-*.png)
# with the header, casts and colour fills checked. Last, tests/page_drive.js
# measures each first screen (boxes, the smallest label's font, text outside
# its panel, the path to the cause one click away) and clicks through each
# page as a reviewer would (node, DevTools protocol), on det and rec (names
# without scopes: the model view by regions; det-alt, a plan whose formats
# alternate, by regions of any formats), a 486-node model named as
# PyTorch names it (tests/scoped_models.py: the model view by scopes, a
# scope opened in place and closed by its path, a node found inside a closed
# scope) and Silero VAD v5 (its If's two branches as the top scopes).
# Sizes and times go to stdout (ctest -V shows them).
# Exit 77 (skipped) when chromium is not installed.
set -eu
MPX=$1
PY=$2
CACHE=$3
WORK=$4
MODELS=$CACHE/ocr-models-1.4.2/assets
fail() {
  echo "viz_browser: FAIL: $*" >&2
  exit 1
}
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
  echo "viz_browser: chromium not installed (scripts/bootstrap.sh installs it): skipped"
  exit 77
fi
[ -f "$MODELS/ch_PP-OCRv4_det_infer.onnx" ] || fail "models missing in $MODELS (scripts/fetch-models.sh)"
rm -rf "$WORK"
mkdir -p "$WORK"

cat >"$WORK/det.mpx" <<EOF
load $MODELS/ch_PP-OCRv4_det_infer.onnx
input x shape 1x3x640x640
input x random uniform 0 1 seed 1
colour Conv green when macs >= 100M else gray
run --local
dot $WORK/det.dot --overlay
svg $WORK/det.svg --overlay
plot $WORK/det_plot.svg
html $WORK/det.html
colour Conv green when macs >= 1M else gray
colour name:p2o.BatchNormalization.1 red
colour name:p2o.Sigmoid.0 red
run --local
html $WORK/det-alt.html
EOF
cat >"$WORK/rec.mpx" <<EOF
load $MODELS/ch_PP-OCRv4_rec_infer.onnx
input x shape 1x3x48x320
input x random uniform -1 1 seed 3
svg $WORK/rec.svg
svg $WORK/rec_all.svg --all
svg $WORK/rec_collapsed.svg --collapse
input x files $(cd "$(dirname "$0")/.." && pwd)/examples/data/lines/*.png image mean 0.5 std 0.5
run --local
html $WORK/rec.html
EOF
cat >"$WORK/tiny.mpx" <<EOF
load $(cd "$(dirname "$0")/.." && pwd)/examples/tiny_cnn.json
input x shape 1x3x64x64
input x random normal 0 1 seed 42
colour Conv green when macs >= 1M else gray
run --local
html $WORK/tiny.html
EOF
cat >"$WORK/tiny-ovf.mpx" <<EOF
load $(cd "$(dirname "$0")/.." && pwd)/examples/tiny_cnn.json
input x shape 1x3x64x64
input x random uniform 0 30000 seed 1
run
html $WORK/tiny-ovf.html
EOF
# a scoped model of the size where the first screen matters, and Silero VAD
"$PY" "$(dirname "$0")/scoped_models.py" "$WORK" >/dev/null || fail "tests/scoped_models.py failed"
cat >"$WORK/u2net.mpx" <<EOF
load $WORK/u2net_scoped.onnx
input input random uniform 0 1 seed 1
run --local
plan --scopes
html $WORK/u2net.html
EOF
VAD=$CACHE/vad-web-0.0.31/dist/silero_vad_v5.onnx
[ -f "$VAD" ] || fail "$VAD missing (scripts/fetch-models.sh)"
cat >"$WORK/vad.mpx" <<EOF
load $VAD
input input shape 1x512
input state shape 2x1x128
input input random uniform -0.5 0.5 seed 5
input state random normal 0 0.1 seed 6
input sr const 16000
run --local
html $WORK/vad.html
EOF
for m in det rec tiny tiny-ovf u2net vad; do
  "$MPX" "$WORK/$m.mpx" >"$WORK/$m.out" 2>&1 || fail "$m session: $(cat "$WORK/$m.out")"
  grep '^wrote' "$WORK/$m.out"
done
for f in det.svg det_plot.svg rec.svg rec_all.svg rec_collapsed.svg; do
  xmllint --noout "$WORK/$f" || fail "$f is not well-formed XML"
done
grep -q 'OVERFLOW\|rel_l2 ' "$WORK/det.svg" || fail "det.svg has no overlay figures"
grep -qF 'Cast' "$WORK/det.svg" || fail "det.svg has no cast nodes"
# Layout times are printed, not checked: a test on a loaded machine is no
# place to time anything (speed is the benchmarks' business).
grep -o 'wrote [^:]*\.svg: .*layout [0-9.]* s, render [0-9.]* s' "$WORK/rec.out" |
  sed 's/^wrote \([^:]*\):.*\(layout .*\)/viz_browser: \1: \2/' || true
ls -l "$WORK"/*.dot "$WORK"/*.svg "$WORK"/*.html | awk '{print "viz_browser:", $5, $9}'

# The screenshot: 1280 wide, tall enough for the header, model, plan, the
# graph box (at most 1400 px) and the top of the plot.
W=1280
H=3400
t0=$(date +%s)
timeout 180 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile-det-png" \
  --hide-scrollbars --window-size=$W,$H --screenshot="$WORK/det.png" "file://$WORK/det.html" \
  >"$WORK/chromium.log" 2>&1 || fail "chromium failed: $(tail -3 "$WORK/chromium.log")"
echo "viz_browser: screenshot in $(($(date +%s) - t0)) s: $WORK/det.png"
[ -s "$WORK/det.png" ] || fail "no screenshot written"

"$PY" "$(dirname "$0")/png_check.py" "$WORK/det.png" $W $H 'header band=#263238>1000' 'green fills=#a5d6a7>200' \
  'gray fills=#bdbdbd>200' 'cast fills=#ffd54f>100' 'plot line=#1565c0~30>20' 'nonwhite>0.05' 'colours>200' ||
  fail "the screenshot does not show the page"
# The pages as a reviewer opens them, 1400 px wide.
dom() { # $1 page, $2 URL suffix, $3 name: the DOM after the script ran
  t0=$(date +%s%N)
  timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile-dom-$3" \
    --window-size=1400,900 --enable-logging=stderr --v=0 --dump-dom "file://$WORK/$1$2" \
    >"$WORK/$3.dom" 2>"$WORK/$3.log" || fail "chromium on $1$2: $(tail -3 "$WORK/$3.log")"
  echo "viz_browser: $1$2 loaded and run in $((($(date +%s%N) - t0) / 1000000)) ms"
  if grep -q ':CONSOLE' "$WORK/$3.log"; then fail "$1$2: console messages: $(grep ':CONSOLE' "$WORK/$3.log" | head -3)"; fi
  body=$(grep -o '<body[^>]*>' "$WORK/$3.dom" | head -1)
  echo "viz_browser:   $body"
  case $body in *'data-ready="1"'*) ;; *) fail "$1$2: the script did not finish: $body" ;; esac
  case $body in *data-error*) fail "$1$2: script error: $body" ;; esac
}
want() { # $1 name, $2 attribute="value" the body must carry
  grep -o '<body[^>]*>' "$WORK/$1.dom" | head -1 | grep -qF -- "$2" || fail "$1: the page's body lacks $2"
}
# rec ran over the bundled data set: the table names each layer's worst sample
grep -qF '<th>sample</th>' "$WORK/rec.html" || fail "rec.html: no worst-sample column for the data set"
grep -qE 'data-v="[0-9]+">[0-9]+ [^<]*/examples/data/lines/[0-9]+\.png</td>' "$WORK/rec.html" ||
  fail "rec.html: the worst sample is not named by its file"
bn1=$(grep -o '\["p2o.BatchNormalization.1","BatchNormalization","[a-z0-9]*"' "$WORK/det.html" | cut -d'"' -f6)
[ -n "$bn1" ] || fail "det.html: p2o.BatchNormalization.1 is not in the page's index"
dom det.html "" det-first
want det-first 'data-view="model"'
want det-first 'data-fits="1"'
dom det.html "#find=p2o.BatchNormalization.1" det-find
want det-find 'data-view="detail"'
want det-find "data-found=\"$bn1\""
dom det.html "#find=Sigmoid" det-op
want det-op 'data-found="n'
dom det.html "#path" det-path
want det-path 'data-found="path"'
dom rec.html "" rec-first
want rec-first 'data-view="model"'
want rec-first 'data-fits="1"'
# a plan whose formats alternate (examples/threshold.mpx's): regions of one
# format each would be about 50 boxes, the page folds regions of any formats
grep -q 'casts on the edges between boxes' "$WORK/det-alt.html" || fail "det-alt.html: not folded across formats"
grep -q 'casts inside' "$WORK/rec.html" || fail "rec.html: the model view's boxes do not count their casts"
dom u2net.html "" u2net-first
want u2net-first 'data-view="model"'
want u2net-first 'data-scope="0"'
grep -q '^  stage1 ' "$WORK/u2net.out" || fail "u2net: plan --scopes lists no stage1: $(head -5 "$WORK/u2net.out")"
dom vad.html "" vad-first
want vad-first 'data-view="model"'
dom tiny.html "" tiny-first
want tiny-first 'data-view="detail"'
dom tiny.html "#find=/backbone/stage1/se/Mul" tiny-find
want tiny-find 'data-found="n'
shot() { # $1 page with URL suffix, $2 png name
  # Each screenshot has a profile of its own: a browser sharing the last
  # one's profile can find it still locked by that one's exiting processes
  # and hand its work over instead of doing it. A headless browser that
  # crashes on a loaded machine (no screenshot, non-zero exit) is tried once
  # more; a page that breaks it does so twice and fails with its log.
  t0=$(date +%s%N)
  for try in 1 2; do
    rm -f "$WORK/$2"
    rc=0
    timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile-shot-$2-$try" \
      --hide-scrollbars --window-size=1400,900 --screenshot="$WORK/$2" "file://$WORK/$1" \
      >"$WORK/chromium-$2.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] && [ -s "$WORK/$2" ] && break
    echo "viz_browser: screenshot of $1, try $try: exit $rc: $(tail -3 "$WORK/chromium-$2.log")"
    [ $try -eq 2 ] && fail "chromium screenshot of $1 failed twice (exit $rc): $(tail -3 "$WORK/chromium-$2.log")"
  done
  echo "viz_browser: first screen of $1 in $((($(date +%s%N) - t0) / 1000000)) ms: $WORK/$2"
}
shot det.html first-det.png
shot rec.html first-rec.png
shot tiny.html first-tiny.png
shot u2net.html first-u2net.png
shot vad.html first-vad.png
shot "det.html#find=p2o.BatchNormalization.1" first-det-find.png
for page in det rec tiny det-find; do
  # rec's plan alternates formats: its model view folds regions of any
  # formats, its casts counted in the boxes (checked below), not drawn
  casts='casts=#ffd54f>20'
  [ $page = rec ] && casts='colours>200'
  "$PY" "$(dirname "$0")/png_check.py" "$WORK/first-$page.png" 1400 900 'header band=#263238>1000' \
    "$casts" 'gray fills=#bdbdbd>50' || fail "first-$page.png does not show the page and its graph"
done
# A reviewer's clicks (tests/page_drive.js over the DevTools protocol): open
# a box, search, graph to table and back, filters, sorting, zoom, worst layer.
NODE=$(command -v node || command -v nodejs || true)
[ -n "$NODE" ] || fail "node missing (scripts/bootstrap.sh --test installs it)"
for page in det det-alt rec tiny tiny-ovf u2net vad; do
  "$NODE" --experimental-websocket --no-warnings "$(dirname "$0")/page_drive.js" "$BROWSER" "$WORK/profile-drive" \
    "$WORK/$page.html" >"$WORK/drive-$page.out" 2>&1 || fail "$page.html: $(tail -3 "$WORK/drive-$page.out")"
  grep 'first screen\|opened:' "$WORK/drive-$page.out" | sed "s/^page_drive:/viz_browser: $page:/"
  tail -1 "$WORK/drive-$page.out"
done
ls -l "$WORK"/det.html "$WORK"/rec.html "$WORK"/tiny.html | awk '{print "viz_browser: page", $5, "bytes", $9}'
echo "viz_browser: ok"

