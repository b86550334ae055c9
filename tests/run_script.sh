#!/bin/sh
# One script test: run `mpx tests/scripts/NAME.mpx` from the source root and
# compare stdout+stderr with NAME.out and the exit status with NAME.status
# (0 when absent). Wall times ("(3.2 ms)") are masked: they vary run to run.
# MPX_UPDATE=1 rewrites the expected files instead (review the diff!).
set -eu
MPX=$1
SRC=$2
NAME=$3
cd "$SRC"
exp_out="tests/scripts/$NAME.out"
exp_status=0
[ -f "tests/scripts/$NAME.status" ] && exp_status=$(cat "tests/scripts/$NAME.status")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
status=0
NO_COLOR=1 "$MPX" "tests/scripts/$NAME.mpx" >"$tmp" 2>&1 || status=$?
sed -i -E 's/\([0-9]+(\.[0-9]+)? ms\)/(T ms)/g; s/[0-9]+(\.[0-9]+)? ms\b/T ms/g' "$tmp"
if [ "${MPX_UPDATE:-0}" = 1 ]; then
  cp "$tmp" "$exp_out"
  [ "$status" = 0 ] && rm -f "tests/scripts/$NAME.status" || echo "$status" > "tests/scripts/$NAME.status"
  echo "updated $NAME"
  exit 0
fi
fail=0
if ! diff -u "$exp_out" "$tmp"; then
  echo "script $NAME: output differs from $exp_out (- expected, + got)"
  fail=1
fi
if [ "$status" != "$exp_status" ]; then
  echo "script $NAME: exit status $status, expected $exp_status"
  fail=1
fi
[ $fail = 0 ] && echo "script $NAME: ok"
exit $fail
