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
# clicks through each page as a reviewer would (node, DevTools protocol).
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
for m in det rec tiny tiny-ovf; do
  "$MPX" "$WORK/$m.mpx" >"$WORK/$m.out" 2>&1 || fail "$m session: $(cat "$WORK/$m.out")"
  grep '^wrote' "$WORK/$m.out"
done
for f in det.svg det_plot.svg rec.svg rec_all.svg rec_collapsed.svg; do
  xmllint --noout "$WORK/$f" || fail "$f is not well-formed XML"
done
grep -q 'OVERFLOW\|rel_l2 ' "$WORK/det.svg" || fail "det.svg has no overlay figures"
grep -qF 'Cast' "$WORK/det.svg" || fail "det.svg has no cast nodes"
# the rec graph with all 765 nodes must lay out in a few seconds
"$PY" - "$WORK/rec.out" <<'EOF' || fail "rec SVG too slow"
import re, sys
for line in open(sys.argv[1]):
    m = re.search(r'wrote (\S+): .*layout ([0-9.]+) s, render ([0-9.]+) s', line)
    if m and float(m.group(2)) + float(m.group(3)) > 5.0:
        sys.exit("%s took %.2f s" % (m.group(1), float(m.group(2)) + float(m.group(3))))
EOF
ls -l "$WORK"/*.dot "$WORK"/*.svg "$WORK"/*.html | awk '{print "viz_browser:", $5, $9}'

# The screenshot: 1280 wide, tall enough for the header, model, plan, the
# graph box (at most 1400 px) and the top of the plot.
W=1280
H=3400
t0=$(date +%s)
timeout 180 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile" \
  --hide-scrollbars --window-size=$W,$H --screenshot="$WORK/det.png" "file://$WORK/det.html" \
  >"$WORK/chromium.log" 2>&1 || fail "chromium failed: $(tail -3 "$WORK/chromium.log")"
echo "viz_browser: screenshot in $(($(date +%s) - t0)) s: $WORK/det.png"
[ -s "$WORK/det.png" ] || fail "no screenshot written"

"$PY" - "$WORK/det.png" $W $H <<'EOF' || fail "the screenshot does not show the page"
# Decode the PNG with the standard library only (zlib, struct) and check it.
import struct, sys, zlib
path, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, hdr = 8, b'', None
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR': hdr = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT': idat += body
    pos += 12 + n
w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
if (w, h) != (W, H): sys.exit('size %dx%d, expected %dx%d' % (w, h, W, H))
assert depth == 8 and ctype in (2, 6), 'unexpected PNG format %d/%d' % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
rows, prev, i = [], bytearray(stride), 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
def px(x, y): r = rows[y]; return tuple(r[x * bpp:x * bpp + 3])
counts, nonwhite = {}, 0
for y in range(0, h, 2):
    for x in range(0, w, 2):
        p = px(x, y); counts[p] = counts.get(p, 0) + 1
        if sum(p) < 720: nonwhite += 1
total = (w // 2) * (h // 2)
def near(rgb, tol=6): return sum(n for p, n in counts.items() if all(abs(p[k] - rgb[k]) <= tol for k in range(3)))
checks = {
    'header band (#263238)': near((0x26, 0x32, 0x38)) > 1000,
    'green fills (#a5d6a7)': near((0xa5, 0xd6, 0xa7)) > 200,
    'gray fills (#bdbdbd)': near((0xbd, 0xbd, 0xbd)) > 200,
    'cast fills (#ffd54f)': near((0xff, 0xd5, 0x4f)) > 100,
    'plot line (#1565c0)': near((0x15, 0x65, 0xc0), 30) > 20,
    'not blank (>5% non-white)': nonwhite > total * 0.05,
    'many colours (>200)': len(counts) > 200,
}
print('viz_browser: screenshot %dx%d, %d colours, %.1f%% non-white' % (w, h, len(counts), 100.0 * nonwhite / total))
bad = [k for k, ok in checks.items() if not ok]
if bad: sys.exit('missing in the screenshot: ' + ', '.join(bad))
EOF
# The pages as a reviewer opens them, 1400 px wide.
dom() { # $1 page, $2 URL suffix, $3 name: the DOM after the script ran
  t0=$(date +%s%N)
  timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile" \
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
dom tiny.html "" tiny-first
want tiny-first 'data-view="detail"'
dom tiny.html "#find=/backbone/stage1/se/Mul" tiny-find
want tiny-find 'data-found="n'
shot() { # $1 page with URL suffix, $2 png name
  t0=$(date +%s%N)
  timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$WORK/profile" --hide-scrollbars \
    --window-size=1400,900 --screenshot="$WORK/$2" "file://$WORK/$1" >"$WORK/chromium.log" 2>&1 ||
    fail "chromium screenshot of $1 failed"
  echo "viz_browser: first screen of $1 in $((($(date +%s%N) - t0) / 1000000)) ms: $WORK/$2"
}
shot det.html first-det.png
shot rec.html first-rec.png
shot tiny.html first-tiny.png
shot "det.html#find=p2o.BatchNormalization.1" first-det-find.png
for page in det rec tiny det-find; do
  "$PY" - "$WORK/first-$page.png" <<'EOF' || fail "first-$page.png does not show the page and its graph"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
pos, idat, hdr = 8, b'', None
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR': hdr = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT': idat += body
    pos += 12 + n
w, h, ctype = hdr[0], hdr[1], hdr[3]
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
rows, prev, i = [], bytearray(stride), 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
counts = {}
for y in range(0, h, 2):
    r = rows[y]
    for x in range(0, w, 2):
        p = tuple(r[x * bpp:x * bpp + 3]); counts[p] = counts.get(p, 0) + 1
def near(rgb, tol=6): return sum(n for p, n in counts.items() if all(abs(p[k] - rgb[k]) <= tol for k in range(3)))
checks = {'size 1400x900': (w, h) == (1400, 900), 'header band': near((0x26, 0x32, 0x38)) > 1000,
          'casts (#ffd54f)': near((0xff, 0xd5, 0x4f)) > 20, 'gray fills (#bdbdbd)': near((0xbd, 0xbd, 0xbd)) > 50}
bad = [k for k, ok in checks.items() if not ok]
if bad: sys.exit('missing: ' + ', '.join(bad))
EOF
done
# A reviewer's clicks (tests/page_drive.js over the DevTools protocol): open
# a box, search, graph to table and back, filters, sorting, zoom, worst layer.
NODE=$(command -v node || command -v nodejs || true)
[ -n "$NODE" ] || fail "node missing (scripts/bootstrap.sh --test installs it)"
for page in det rec tiny tiny-ovf; do
  "$NODE" --experimental-websocket --no-warnings "$(dirname "$0")/page_drive.js" "$BROWSER" "$WORK/profile-drive" \
    "$WORK/$page.html" >"$WORK/drive-$page.out" 2>&1 || fail "$page.html: $(tail -3 "$WORK/drive-$page.out")"
  tail -1 "$WORK/drive-$page.out"
done
ls -l "$WORK"/det.html "$WORK"/rec.html "$WORK"/tiny.html | awk '{print "viz_browser: page", $5, "bytes", $9}'
echo "viz_browser: ok"

