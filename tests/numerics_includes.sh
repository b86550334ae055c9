#!/bin/sh
# numerics/'s folders form a stack (docs/ARCHITECTURE.md): formats/ at the
# bottom, readers/ and kernels/ on it, run/ on kernels/. A file includes its
# own folder's headers and headers of folders below it, never one of a
# folder above (nor, for readers/, of kernels/ or run/). Every quoted
# include is looked up among numerics/'s headers by name.
# Usage: numerics_includes.sh <source root>
set -eu
cd "$1/numerics"
# may_use <folder>: the folders whose headers its files may include
may_use() {
  case $1 in
    formats) echo "formats" ;;
    readers) echo "readers formats" ;;
    kernels) echo "kernels formats" ;;
    run) echo "run kernels formats" ;;
  esac
}
fail=0
for dir in formats readers kernels run; do
  allowed=$(may_use $dir)
  for f in "$dir"/*.c "$dir"/*.h; do
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
      owner=""
      for d in formats readers kernels run; do
        [ -e "$d/$h" ] && owner=$d
      done
      [ -n "$owner" ] || continue # graph/, generated or system headers
      case " $allowed " in
        *" $owner "*) ;;
        *) echo "numerics_includes: $f includes $owner/$h (a folder above $dir/)"; fail=1 ;;
      esac
    done
  done
done
# Nothing in numerics/ includes the umbrella: each file names what it needs.
if grep -rln '#include "mpx_numerics.h"' formats readers kernels run; then
  echo "numerics_includes: the files above include the umbrella mpx_numerics.h"; fail=1
fi
[ $fail -eq 0 ] && echo "numerics_includes: ok"
exit $fail
