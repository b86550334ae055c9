#!/bin/sh
# search --validate <data spec>: the plan found on the session's input, run
# on held-out samples; reported as holding there or not (and in the JSON);
# held-out samples of another shape are refused before the search runs.
# Usage: validate_check.sh <mpx> <source root>
set -eu
MPX=$1
cd "$2"
tmp=$(mktemp -d)
trap "rm -rf $tmp" EXIT
fail=0
# sample folders of x.npy (float32, standard library only): ok/ like the
# session's input, big/ beyond fp16's range (x * 1.1 overflows), odd/ 2x8.
python3 - "$tmp" <<'PY'
import os, random, struct, sys
def npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%df" % len(values), *values))
rng = random.Random(5)
for name, shape, scale in (("ok", (4, 8), 1.0), ("big", (4, 8), 1e5), ("odd", (2, 8), 1.0)):
    for k in range(3):
        d = os.path.join(sys.argv[1], name, "s%d" % k)
        os.makedirs(d)
        n = shape[0] * shape[1]
        npy(os.path.join(d, "x.npy"), shape, [rng.gauss(0, 1) * scale for _ in range(n)])
PY
S="load tests/models/named_output.json; input x random normal 0 1 seed 2; target fp16; colour Mul green"
C="output.rel_l2 < 1e-3"
"$MPX" -c "$S; search $C --validate $tmp/ok --json $tmp/ok.json" >"$tmp/ok.out" 2>&1 || { echo "validate_check: ok: $(cat "$tmp/ok.out")"; fail=1; }
grep -q "search: on the held-out samples ($tmp/ok, 3): output.rel_l2 .*; output.rel_l2 < 1e-3 holds there too" "$tmp/ok.out" ||
  { echo "validate_check: held-out ok: $(cat "$tmp/ok.out")"; fail=1; }
"$MPX" -c "$S; search $C --validate $tmp/big --json $tmp/big.json" >"$tmp/big.out" 2>&1 || { echo "validate_check: big: $(cat "$tmp/big.out")"; fail=1; }
grep -q "does NOT hold there: the plan meets it on the search's samples only" "$tmp/big.out" ||
  { echo "validate_check: held-out big: $(cat "$tmp/big.out")"; fail=1; }
python3 - "$tmp/ok.json" "$tmp/big.json" <<'PY' || fail=1
import json, sys
ok, big = (json.load(open(p)) for p in sys.argv[1:3])
for d, holds in ((ok, True), (big, False)):
    v = d.get("validation")
    if not v or v["holds"] != holds or v["samples"] != 3 or "output.rel_l2" not in v["figures"]:
        print("validate_check: validation %s, want holds %s" % (v, holds))
        sys.exit(1)
if ok["fp32"] != ["shrink"]:
    print("validate_check: the set found: %s" % ok["fp32"])
    sys.exit(1)
PY
status=0
"$MPX" -c "$S; search $C --validate $tmp/odd --json $tmp/odd.json; rules" >"$tmp/odd.out" 2>&1 || status=$?
grep -q "validate $tmp/odd: .*gives input x the shape 2x8, the session's is 4x8" "$tmp/odd.out" ||
  { echo "validate_check: another shape: $(cat "$tmp/odd.out")"; fail=1; }
[ "$status" != 0 ] && [ ! -e "$tmp/odd.json" ] || { echo "validate_check: another shape: exit $status, or a search ran"; fail=1; }
grep -q "# search" "$tmp/odd.out" && { echo "validate_check: another shape applied rules"; fail=1; }
[ $fail = 0 ] && echo "validate_check: ok"
exit $fail
