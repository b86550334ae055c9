#!/bin/sh
# deb_check.sh BUILD WORK - the Debian packages (issue 19): CPack makes mpx
# and libmpx-dev; both unpack (dpkg-deb -x) into a temporary root, where the
# packaged mpx runs the packaged example and the packaged headers, library and
# mpx.pc build the example client. Their control files name the version and
# the libraries mpx needs (dpkg-shlibdeps). Exit 77 (skipped) without
# dpkg-deb / dpkg-shlibdeps.
set -eu
BUILD=$(cd "$1" && pwd)
WORK=$2
fail() {
  echo "deb_check: FAIL: $*" >&2
  exit 1
}
for t in dpkg-deb dpkg-shlibdeps; do
  command -v $t >/dev/null 2>&1 || { echo "deb_check: $t not installed (dpkg-dev): skipped"; exit 77; }
done
rm -rf "$WORK"
mkdir -p "$WORK/root"
cpack --config "$BUILD/CPackConfig.cmake" -B "$WORK" >"$WORK/cpack.log" 2>&1 || fail "cpack: $(tail -20 "$WORK/cpack.log")"
ver=$("$BUILD/mpx" --version | cut -d' ' -f2)
mpx_deb=$(ls "$WORK"/mpx_"$ver"_*.deb 2>/dev/null | head -1)
dev_deb=$(ls "$WORK"/libmpx-dev_"$ver"_*.deb 2>/dev/null | head -1)
[ -f "$mpx_deb" ] && [ -f "$dev_deb" ] || fail "packages not made: $(ls "$WORK")"
for d in "$mpx_deb" "$dev_deb"; do
  echo "$(basename "$d"): $(du -k "$d" | cut -f1) KB"
  dpkg-deb -x "$d" "$WORK/root"
done
dpkg-deb -f "$mpx_deb" Version | grep -qx "$ver" || fail "mpx package version is not $ver"
deps=$(dpkg-deb -f "$mpx_deb" Depends)
echo "mpx Depends: $deps"
libs="libcjson libgvc libpng libsndfile libzip libedit"
# x86-64 builds link Sleef (kern_sleef.c)
case "$(uname -m)" in x86_64|amd64) libs="$libs libsleef" ;; esac
for lib in $libs; do
  echo "$deps" | grep -q "$lib" || fail "mpx's Depends lack $lib"
done
dpkg-deb -f "$dev_deb" Depends | grep -q "mpx (= $ver)" || fail "libmpx-dev does not depend on mpx (= $ver)"
R="$WORK/root/usr"
"$R/bin/mpx" --version | grep -q "^mpx $ver" || fail "the packaged mpx does not run"
"$R/bin/mpx" -q -c "load $R/share/mpx/examples/tiny_cnn.json; input x shape 1x3x16x16; run; assert output.rel_l2 < 1e-2" ||
  fail "the packaged mpx on the packaged example"
ldd "$R/bin/mpx" | grep -q "libmpx.so.0 => $R/" || fail "the packaged mpx does not find the packaged libmpx"
[ -f "$R/share/man/man1/mpx.1" ] && [ -f "$R/include/mpx/mpx.h" ] && [ -f "$R/lib/pkgconfig/mpx.pc" ] ||
  fail "man page, headers or mpx.pc missing: $(cd "$R" && find . | head -30)"
PKG_CONFIG_PATH="$R/lib/pkgconfig" cc ${MPX_CLIENT_CFLAGS:-} -std=c11 -o "$WORK/client" "$R/share/mpx/examples/client.c" \
  $(PKG_CONFIG_PATH="$R/lib/pkgconfig" pkg-config --cflags --libs mpx) -Wl,-rpath,"$R/lib" ||
  fail "the client does not build against libmpx-dev"
"$WORK/client" "$R/share/mpx/examples/tiny_cnn.json" x 1x3x16x16 "$WORK/c.onnx" >/dev/null || fail "the client does not run"
echo "deb_check: ok"
