#!/bin/sh
# layers_check.sh - the include direction between folders (docs/ARCHITECTURE.md):
# a layer includes only the public headers of the layers below it, never a
# header of a layer above nor another folder's private header. Run from
# anywhere: $1 is the source tree.
#
#   graph < numerics < colour < explore < viz < repl
set -u
src=${1:-.}
fail=0
# layer folder, its rank, its public header
rank() {
    case $1 in
    graph) echo 1 ;; numerics) echo 2 ;; colour) echo 3 ;; explore) echo 4 ;; viz) echo 5 ;; repl) echo 6 ;;
    *) echo 0 ;;
    esac
}
# the folder whose header this is, "" for a system or generated header
owner() {
    for d in graph numerics colour explore viz repl; do
        [ -f "$src/$d/$1" ] && { echo "$d"; return; }
    done
    echo ""
}
public() {
    case $1 in
    mpx_graph.h | ops.def | mpx_numerics.h | metrics.def | mpx_colour.h | mpx_explore.h | mpx_viz.h | mpx.h | mpx_repl.h) return 0 ;;
    *) return 1 ;;
    esac
}
for dir in graph numerics colour explore viz repl; do
    r=$(rank "$dir")
    for f in "$src/$dir"/*.c "$src/$dir"/*.h; do
        [ -f "$f" ] || continue
        # quoted includes only: <...> are system headers
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            o=$(owner "$h")
            [ -n "$o" ] || continue
            [ "$o" = "$dir" ] && continue
            ro=$(rank "$o")
            if [ "$ro" -gt "$r" ]; then
                echo "layers_check: ${f#$src/} includes $o/$h, a layer above $dir/" >&2
                fail=1
            elif ! public "$h"; then
                echo "layers_check: ${f#$src/} includes $o/$h, private to $o/" >&2
                fail=1
            fi
        done
    done
done
[ $fail -eq 0 ] && echo "layers_check: every folder includes only the public headers of the layers below it"
exit $fail
