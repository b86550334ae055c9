#!/usr/bin/env python3
"""bench_check.py MPX_BENCH SRC - bench/run.sh's mpx half: the peak mode
(the machine's fused multiply-add rate that the floor column 4lo/2 divides
by) and the report's multiply-add counts (report_gmacs: the reference's
terms and again each candidate's low nodes'), and their refusals."""
import json
import subprocess
import sys

bench, src = sys.argv[1], sys.argv[2]
fails = 0


def check(ok, what):
    global fails
    if not ok:
        fails += 1
        print("bench_check: FAIL " + what)


def run(*args):
    p = subprocess.run([bench, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


rc, out, err = run("peak", "--threads", "1")
check(rc == 0, "peak --threads 1 exits 0 (%d: %s)" % (rc, err))
if rc == 0:
    r = json.loads(out.strip().splitlines()[-1])
    check(r["mode"] == "peak" and r["threads"] == 1, "peak names its mode and threads: %s" % r)
    check((r["isa"], r["lanes"]) in {("avx512f", 16), ("avx2+fma", 8), ("scalar fmaf", 1)},
          "peak says which vectors it used: %s" % r)
    check(r["gmacs"] > 0 and r["seconds"] > 0, "peak gives a rate: %s" % r)
for bad in (["--threads", "0"], ["--threads", "65"], ["--threads", "x"], ["--bogus"]):
    rc, out, err = run("peak", *bad)
    check(rc == 2 and "usage: mpx_bench peak" in err and out == "", "peak %s refused with usage (%d)" % (bad, rc))

# tiny_cnn's default plans make every Conv and the Gemm low in both formats,
# so the report multiplies and adds every term three times.
rc, out, err = run(src + "/examples/tiny_cnn.json", "1x3x32x32", "report", "--repeat", "1", "--image", "none")
check(rc == 0, "report on tiny_cnn exits 0 (%d: %s)" % (rc, err))
if rc == 0:
    r = json.loads(out.strip().splitlines()[-1])
    check(r["gmacs"] > 0, "report gives the forward's multiply-adds: %s" % r.get("gmacs"))
    check(abs(r["report_gmacs"] - 3 * r["gmacs"]) <= 1e-12 + 1e-9 * r["gmacs"],
          "report_gmacs is three forwards' on tiny_cnn: %s against %s" % (r.get("report_gmacs"), r.get("gmacs")))
rc, out, err = run(src + "/examples/tiny_cnn.json", "1x3x32x32", "fp32", "--repeat", "1", "--image", "none")
check(rc == 0 and "report_gmacs" not in out, "fp32 mode says nothing of the report's multiply-adds")

print("bench_check: %s" % ("ok" if fails == 0 else "%d failed" % fails))
sys.exit(1 if fails else 0)
