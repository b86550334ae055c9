#!/bin/sh
# Each kind of name is spelled once (numerics/run/metrics.def for the metrics):
# report (its --sort keys, JSON and CSV), assert, plot and help list the same
# metric names in the same order. Completion is checked in interactive.sh.
# Usage: names_check.sh <mpx> <source root>
set -eu
MPX=$1
cd "$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
S="load examples/tiny_cnn.json; input x shape 1x3x32x32; set bail off; run"
"$MPX" -c "$S; report --sort nosuch; assert output.nosuch < 1; plot $tmp/p.svg nosuch; report --json $tmp/r.json --top 1; report --csv $tmp/r.csv --top 1" >/dev/null 2>"$tmp/err" || true
help=$("$MPX" -c "help report" | sed -n 's/^metrics: //p')
help_plot=$("$MPX" -c "help plot" | sed -n 's/^metrics: //p')
report=$(sed -n 's/.*--sort: "nosuch" is not \(.*\), local or order.*/\1/p' "$tmp/err" | sed 's/, / /g')
assert=$(sed -n 's/.*unknown metric "nosuch" (\(.*\) absmax[;)].*/\1/p' "$tmp/err")
plot=$(sed -n 's/.*plot .*unknown metric "nosuch" (\(.*\))$/\1/p; s/^.*error: unknown metric "nosuch" (\([a-z0-9_ ]*\))$/\1/p' "$tmp/err" | tail -n 1)
json=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
keys = list(d['layers'][0]['metrics'].keys())
print(' '.join(k for k in keys if k in sys.argv[2].split()))" "$tmp/r.json" "$help")
csv=$(head -1 "$tmp/r.csv" | tr ',' '\n' | grep -xF -f "$(printf '%s\n' $help > "$tmp/names"; echo "$tmp/names")" | tr '\n' ' ' | sed 's/ $//')
fail=0
[ -n "$help" ] || { echo "names_check: help report lists no metrics"; fail=1; }
for what in help_plot report assert plot csv; do
  eval "got=\$$what"
  [ "$got" = "$help" ] || { echo "names_check: $what lists \"$got\", help lists \"$help\""; fail=1; }
done
# JSON keeps the real metrics before absmax_ref and the counts after it: the
# table's order within each group.
[ "$(echo "$json" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$(echo "$help" | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
  { echo "names_check: report --json has metrics \"$json\""; fail=1; }
[ $fail = 0 ] && echo "names_check: ok ($help)"
exit $fail
