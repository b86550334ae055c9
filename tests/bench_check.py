#!/usr/bin/env python3
"""bench_check.py MPX_BENCH SRC - bench/run.sh's mpx half: the peak mode
(the machine's fused multiply-add rate that the floor column 4lo/2 divides
by) and the report's multiply-add counts (report_gmacs: the reference's
terms and again each candidate's low nodes'), and their refusals."""
import json
import os
import subprocess
import sys
import tempfile

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

# profile --out: every node run (none skipped here) with --repeat samples,
# named by its first output, what bench.js --profile joins with ONNX
# Runtime's graph.
with tempfile.TemporaryDirectory() as tmp:
    jf = os.path.join(tmp, "p.json")
    rc, out, err = run(src + "/examples/tiny_cnn.json", "1x3x32x32", "profile", "--repeat", "3", "--image", "none",
                       "--top", "2", "--out", jf)
    check(rc == 0 and os.path.exists(jf), "profile --out exits 0 and writes its file (%d: %s)" % (rc, err))
    if rc == 0 and os.path.exists(jf):
        p = json.load(open(jf))
        nodes = p["nodes"]
        check(p["repeat"] == 3 and len(nodes) > 0, "profile names its repeat and lists nodes: %s" % p.get("repeat"))
        check(all(len(n["ms"]) == 3 and all(x >= 0 for x in n["ms"]) for n in nodes),
              "every node has 3 samples, none negative")
        check(all(n["outputs"] and n["op"] and n["kind"] for n in nodes), "every node has outputs, op and kind")
        check(any(n["op"] == "Conv" for n in nodes) and any(n["op"] == "Gemm" for n in nodes),
              "tiny_cnn's Conv and Gemm are profiled")
        check("total" in err and "Conv" in err, "profile prints the per-type table to stderr")
# run: the REPL's run, one comparison (every node run, as a session's first)
rc, out, err = run(src + "/examples/tiny_cnn.json", "1x3x32x32", "run", "--repeat", "2", "--warmup", "0",
                   "--image", "none")
check(rc == 0, "run on tiny_cnn exits 0 (%d: %s)" % (rc, err))
if rc == 0:
    r = json.loads(out.strip().splitlines()[-1])
    check(r["mode"] == "run" and len(r["ms"]) == 2 and r["layers"] > 0, "run gives its samples and layers: %s" % r)
    check(r["nodes_run"] == r["layers"] and r["worst_rel_l2_fp16"] > 0,
          "each run is a first run (nothing from a cache) with fp16 errors: %s" % r)
# rerun: the recoloured plan through the session's cache, only what depends
# on the recoloured node run again, with where its time went
rc, out, err = run(src + "/examples/tiny_cnn.json", "1x3x32x32", "rerun", "--repeat", "2", "--warmup", "0",
                   "--image", "none")
check(rc == 0, "rerun on tiny_cnn exits 0 (%d: %s)" % (rc, err))
if rc == 0:
    r = json.loads(out.strip().splitlines()[-1])
    check(r["mode"] == "rerun" and len(r["ms"]) == 2 and r["incremental"] is True,
          "rerun gives its samples, incremental: %s" % r)
    check(0 < r["nodes_recomputed"] < r["nodes"], "rerun recomputes some nodes, not all: %s" % r)
    t = r.get("thread_ms", {})
    check(set(t) == {"ref", "fp16", "metrics"} and all(v >= 0 for v in t.values()),
          "rerun gives its thread_ms split: %s" % t)

print("bench_check: %s" % ("ok" if fails == 0 else "%d failed" % fails))
sys.exit(1 if fails else 0)
