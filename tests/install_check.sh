#!/bin/sh
# install_check.sh BUILD SRC WORK [PYTHON3] - mpx as a user installs it (issue 19):
# `cmake --install` into a prefix with a blank in its name, over an older
# install; the installed mpx runs the installed example; the man page, the
# bash completion and mpx.pc are there and sound; libmpx exports only mpx_
# names (exactly which: the test api_symbols); examples/client.c builds
# against the installed library with pkg-config (shared and static) and
# runs; a C++ program includes mpx.h and links (the headers' extern "C").
# The Python package (issue 51) imports from the prefix in a fresh python3
# (PYTHON3, with NumPy), loads the prefix's libmpx, and runs the installed
# examples/python/quickstart.py.
# Prints the installed files and the exported symbol count.
set -eu
BUILD=$1
SRC=$2
WORK=$3
PY=${4:-}
fail() {
  echo "install_check: FAIL: $*" >&2
  exit 1
}
rm -rf "$WORK"
mkdir -p "$WORK"
P="$WORK/pre fix"
# an older install with a stale file: installing over it replaces what mpx owns
mkdir -p "$P/lib" "$P/bin"
echo "old" >"$P/bin/mpx"
cmake --install "$BUILD" --prefix "$P" >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$WORK/install.log")"
LIBDIR=$(cd "$P" && ls -d lib*/libmpx.so.0 2>/dev/null | head -1 | xargs dirname || true)
[ -n "$LIBDIR" ] || LIBDIR=$(cd "$P" && dirname "$(find . -name 'libmpx.so.0' | head -1)")
echo "installed files:"
(cd "$P" && find . -type f -o -type l | grep -v '^./share/mpx/examples/.' | sort | sed 's|^\./|  |')
echo "  share/mpx/examples/: $(cd "$P/share/mpx/examples" && find . -type f | wc -l) files"
for f in bin/mpx "$LIBDIR/libmpx.so.0" "$LIBDIR/libmpx.a" "$LIBDIR/pkgconfig/mpx.pc" include/mpx/mpx.h \
  include/mpx/mpx_graph.h include/mpx/mpx_export.h include/mpx/ops.def include/mpx/metrics.def share/man/man1/mpx.1 \
  share/bash-completion/completions/mpx share/mpx/examples/tiny_cnn.json share/mpx/examples/client.c; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done

# the installed program, on the installed example, from another folder
cd "$WORK"
v=$("$P/bin/mpx" --version) || fail "installed mpx --version"
case $v in "mpx "*) ;; *) fail "installed --version: $v" ;; esac
"$P/bin/mpx" -c "load '$P/share/mpx/examples/tiny_cnn.json'; input x shape 1x3x16x16; run; assert output.rel_l2 < 1e-2" \
  >"$WORK/run.out" 2>&1 || fail "installed mpx on the installed example: $(cat "$WORK/run.out")"
# the installed examples that need no fetched model, run where they are
# installed from another folder (the files they read are found beside them;
# what they write goes to the current folder)
mkdir -p "$WORK/examples_run"
for ex in quickstart export; do
  (cd "$WORK/examples_run" && "$P/bin/mpx" "$P/share/mpx/examples/$ex.mpx") >"$WORK/$ex.out" 2>&1 ||
    fail "installed example $ex.mpx from another folder: $(tail -5 "$WORK/$ex.out")"
done
ldd "$P/bin/mpx" | grep -q "libmpx.so.0 => $P/" || fail "installed mpx does not use the installed libmpx: $(ldd "$P/bin/mpx" | grep mpx)"

# man page and completion
if command -v man >/dev/null 2>&1; then
  page=$(MANWIDTH=100 man -l "$P/share/man/man1/mpx.1" 2>"$WORK/man.err") || fail "man -l mpx.1"
  [ -s "$WORK/man.err" ] && fail "man warnings: $(cat "$WORK/man.err")"
  # (justified text may widen a blank: the words are matched with any run of blanks)
  for w in SYNOPSIS OPTIONS COMMANDS "exit status" "search <figure>" "export <file.onnx>"; do
    echo "$page" | grep -qE -- "$(echo "$w" | sed 's/ / +/g')" || fail "man page lacks \"$w\""
  done
else
  echo "install_check: man not installed: the page's text not checked"
fi
bash -n "$P/share/bash-completion/completions/mpx" || fail "bash completion does not parse"
out=$(bash -c ". '$P/share/bash-completion/completions/mpx'; COMP_WORDS=(mpx --ver); COMP_CWORD=1; _mpx; echo \"\${COMPREPLY[*]}\"")
[ "$out" = "--version" ] || fail "completion of --ver: \"$out\""

# symbols: only mpx_ names exported
nm -D --defined-only "$P/$LIBDIR/libmpx.so.0" | awk '{print $3}' >"$WORK/syms"
n=$(wc -l <"$WORK/syms")
bad=$(grep -v '^mpx_' "$WORK/syms" | head -5 || true)
[ -z "$bad" ] || fail "libmpx exports non-mpx_ names: $bad"
[ "$n" -gt 100 ] || fail "libmpx exports only $n symbols"
objdump -p "$P/$LIBDIR/libmpx.so.0" | grep -q "SONAME *libmpx.so.0" || fail "no SONAME libmpx.so.0"
echo "libmpx.so exports $n symbols, all mpx_"

# a client built with pkg-config, against libmpx.so and against libmpx.a
# (with the system's shared libraries that mpx.pc requires) (a prefix with a blank: pkg-config escapes it
# for a shell that evaluates the words, hence eval)
export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig"
[ "$(pkg-config --modversion mpx)" = "$(echo "$v" | cut -d' ' -f2)" ] || fail "mpx.pc version differs from mpx --version"
# (a sanitizer build's library needs its runtime in the client too)
CF=${MPX_CLIENT_CFLAGS:-}
eval "cc $CF -std=c11 -Wall -Wextra -Werror -o '$WORK/client' '$P/share/mpx/examples/client.c' $(pkg-config --cflags --libs mpx) -Wl,-rpath,'$P/$LIBDIR'" ||
  fail "examples/client.c does not build against the installed libmpx"
"$WORK/client" "$P/share/mpx/examples/tiny_cnn.json" x 1x3x16x16 "$WORK/client.onnx" >"$WORK/client.out" 2>&1 ||
  fail "client: $(cat "$WORK/client.out")"
grep -q "^exported" "$WORK/client.out" && [ -s "$WORK/client.onnx" ] || fail "client output: $(cat "$WORK/client.out")"
eval "cc $CF -std=c11 -o '$WORK/client_static' '$P/share/mpx/examples/client.c' $(pkg-config --cflags mpx) '$P/$LIBDIR/libmpx.a' $(pkg-config --libs $(pkg-config --print-requires-private mpx)) -lm -lpthread" ||
  fail "examples/client.c does not link against libmpx.a"
"$WORK/client_static" "$P/share/mpx/examples/tiny_cnn.json" x 1x3x16x16 "$WORK/client2.onnx" >"$WORK/client2.out" 2>&1 ||
  fail "static client: $(cat "$WORK/client2.out")"
[ "$(head -3 "$WORK/client.out")" = "$(head -3 "$WORK/client2.out")" ] || fail "shared and static clients differ"
cmp -s "$WORK/client.onnx" "$WORK/client2.onnx" || fail "shared and static clients export different models"
echo "client (shared and static): $(sed -n 2,3p "$WORK/client.out" | tr '\n' ' ')"

# C++: the installed headers declare C names (extern "C"), so a C++ program
# links against them; without the guards the names are mangled and the link
# fails. Skipped without a C++ compiler.
if command -v c++ >/dev/null 2>&1; then
  cat >"$WORK/client.cc" <<'EOF_CC'
#include <mpx.h>
#include <cstdio>
int main() {
    mpx_error err;
    mpx_error_clear(&err);
    mpx_rules *r = mpx_rules_new();
    std::printf("libmpx %s from C++\n", mpx_version());
    mpx_rules_free(r);
    return mpx_format_by_name("fp16") == &mpx_format_fp16 ? 0 : 1;
}
EOF_CC
  eval "c++ $CF -Wall -Wextra -Werror -o '$WORK/client_cc' '$WORK/client.cc' $(pkg-config --cflags --libs mpx) -Wl,-rpath,'$P/$LIBDIR'" ||
    fail "a C++ program does not build against the installed headers (extern \"C\")"
  "$WORK/client_cc" >"$WORK/client_cc.out" 2>&1 || fail "C++ client: $(cat "$WORK/client_cc.out")"
  cat "$WORK/client_cc.out"
else
  echo "install_check: no C++ compiler: the headers' extern \"C\" not checked"
fi

# the Python package, from the prefix, in a fresh python3 that is told
# nothing but where the package lies (no MPX_LIBRARY: it finds the prefix's
# libmpx beside it)
if [ -n "$PY" ]; then
  init=$(cd "$P" && find . -path '*/dist-packages/mpx/__init__.py' | head -1)
  [ -n "$init" ] || fail "the Python package is not installed"
  for f in _lib.py _session.py _install.py; do [ -e "$P/$(dirname "$init")/$f" ] || fail "not installed: mpx/$f"; done
  PYP="$P/$(dirname "$(dirname "$init")")"
  mkdir -p "$WORK/python_run"
  # MPX_PY_SANITIZER_ENV (sanitizer builds): python3 is not built with ASan,
  # so its runtime is preloaded and the interpreter's own leaks not counted.
  # shellcheck disable=SC2086
  (cd "$WORK/python_run" && env -u MPX_LIBRARY ${MPX_PY_SANITIZER_ENV:-} PYTHONPATH="$PYP" "$PY" -c "
import mpx, mpx._lib, os, sys
lib = os.path.realpath(mpx._lib.LIBRARY)
assert lib.startswith(os.path.realpath(sys.argv[1])), 'libmpx loaded from ' + lib
s = mpx.Session(os.path.join(sys.argv[1], 'share/mpx/examples/tiny_cnn.json'))
s.input('x', shape=(1, 3, 16, 16))
r = s.run()
assert r.outputs()[0]['rel_l2'] < 1e-2, r.outputs()
print('python: mpx', mpx.__version__, 'from', os.path.dirname(mpx.__file__), 'with', lib)
" "$P") >"$WORK/python.out" 2>&1 || fail "the installed Python package: $(cat "$WORK/python.out")"
  [ "$(sed -n 's/^python: mpx \([^ ]*\) .*/\1/p' "$WORK/python.out")" = "$(echo "$v" | cut -d' ' -f2)" ] ||
    fail "the Python package's version differs from mpx --version: $(cat "$WORK/python.out")"
  # shellcheck disable=SC2086
  (cd "$WORK/python_run" && env -u MPX_LIBRARY ${MPX_PY_SANITIZER_ENV:-} PYTHONPATH="$PYP" "$PY" \
    "$P/share/mpx/examples/python/quickstart.py" out) \
    >"$WORK/python_quickstart.out" 2>&1 || fail "installed examples/python/quickstart.py: $(tail -5 "$WORK/python_quickstart.out")"
  [ -s "$WORK/python_run/out/review.html" ] || fail "installed quickstart.py wrote no review.html"
  cat "$WORK/python.out"
else
  echo "install_check: no python3 with NumPy: the Python package not checked"
fi
echo "install_check: ok"
