#!/usr/bin/python3
"""ctest entry data_sets (issue 14): runs over many samples.

Six random inputs of examples/tiny_cnn.json are given as a folder of .npz
files, one stacked .npz, a glob, sample folders (x.npy each) and one input's
files (`input x files`). Each sample is also run alone (`input x file`): the
data-set run's per-layer worst, mean, per-sample figures, p95 gates and
--samples table must be what the six single runs give (the same bits: the
same computation, only aggregated). Then the refusals: an .npz missing the
input or holding an extra key, mixed shapes, an empty folder, a glob that
matches nothing, a non-.npz file, too many files without a limit; each names
the file or sample and leaves the earlier data set in place.

usage: data_sets.py <mpx> <source_dir> <work_dir>
"""
import io
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np

MPX, SRC, W = sys.argv[1], sys.argv[2], sys.argv[3]
MODEL = os.path.join(SRC, "examples", "tiny_cnn.json")
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
fails = 0
checks = 0


def fail(msg):
    global fails
    fails += 1
    print("data_sets: FAIL:", msg)


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        fail(msg)


def mpx(script):
    return subprocess.run([MPX, "-c", script], capture_output=True, text=True)


def ok(script, what):
    r = mpx(script)
    if r.returncode != 0:
        fail("%s: exit %d: %s" % (what, r.returncode, (r.stdout + r.stderr)[-2000:]))
    return r


N = 6
rng = np.random.default_rng(3)
xs = [rng.normal(0, 1 + 3 * k, (1, 3, 32, 32)).astype(np.float32) for k in range(N)]
os.makedirs(W + "/npz")
os.makedirs(W + "/npy")
for k, x in enumerate(xs):
    np.save("%s/npy/s%d.npy" % (W, k), x)
    np.savez("%s/npz/s%d.npz" % (W, k), x=x)
    os.makedirs("%s/folders/s%d" % (W, k))
    np.save("%s/folders/s%d/x.npy" % (W, k), x)
np.savez_compressed(W + "/stacked.npz", x=np.stack(xs))


def layers_of(path):
    with open(path) as f:
        d = json.load(f)
    return d, {L["tensor"]: L for L in d["layers"]}


# each sample alone
single = []
for k in range(N):
    ok("load %s; input x file %s/npy/s%d.npy; run; report --json %s/one%d.json" % (MODEL, W, k, W, k), "sample %d alone" % k)
    single.append(layers_of("%s/one%d.json" % (W, k))[1])


def num(v):
    return float(v) if not isinstance(v, str) else float(v.replace("inf", "inf"))


def check_set(how, path):
    d, L = layers_of(path)
    check(d.get("figures") == "worst" and len(d.get("samples", [])) == N, "%s: %s samples, figures %s" %
          (how, len(d.get("samples", [])), d.get("figures")))
    for t, lay in L.items():
        per = [num(single[k][t]["metrics"]["rel_l2"]) for k in range(N)]
        got = num(lay["metrics"]["rel_l2"])
        check(got == max(per), "%s: %s worst rel_l2 %r, the single runs' max %r" % (how, t, got, max(per)))
        check(lay["worst_sample"] == per.index(max(per)) + 1, "%s: %s worst sample %d, expected %d" %
              (how, t, lay["worst_sample"], per.index(max(per)) + 1))
        mean = sum(per) / N
        check(abs(num(lay["mean"]["rel_l2"]) - mean) <= 1e-15 * max(mean, 1e-300),
              "%s: %s mean %r, expected %r" % (how, t, lay["mean"]["rel_l2"], mean))
        cosw = min(num(single[k][t]["metrics"]["cos"]) for k in range(N))
        check(num(lay["metrics"]["cos"]) == cosw, "%s: %s worst cos %r, expected %r" % (how, t, lay["metrics"]["cos"], cosw))
        ps = [num(m["rel_l2"]) for m in lay["per_sample"]]
        check(ps == per, "%s: %s per-sample rel_l2 differ from the single runs" % (how, t))
    return d


ok("load %s; data %s/npz; run; report --json %s/set_npz.json" % (MODEL, W, W), "data folder of npz")
check_set("folder of .npz", W + "/set_npz.json")
ok("load %s; data %s/stacked.npz stacked; run; report --json %s/set_stacked.json" % (MODEL, W, W), "stacked")
check_set("stacked .npz", W + "/set_stacked.json")
ok("load %s; data %s/folders; run; report --json %s/set_folders.json" % (MODEL, W, W), "sample folders")
check_set("sample folders", W + "/set_folders.json")
ok("load %s; input x files %s/npy/s?.npy npy; run; report --json %s/set_files.json" % (MODEL, W, W), "input files")
check_set("input x files", W + "/set_files.json")

# output figures: the worst, mean, p95 (nearest rank) and one sample, by assert
out_t = [t for t in single[0] if single[0][t]["output"]][0]
outs = [num(single[k][out_t]["metrics"]["rel_l2"]) for k in range(N)]
p95 = sorted(outs)[math.ceil(0.95 * N) - 1]
base = "load %s; data %s/npz; run; " % (MODEL, W)
for fig, v in (("output.rel_l2", max(outs)), ("mean:output.rel_l2", sum(outs) / N), ("p95:output.rel_l2", p95),
               ("sample 3:output.rel_l2", outs[2])):
    hi, lo = v * (1 + 1e-9), v * (1 - 1e-9)
    r = mpx(base + "assert %s < %.17g" % (fig, hi))
    check(r.returncode == 0, "assert %s < %g (value %g) failed: %s" % (fig, hi, v, r.stdout + r.stderr))
    r = mpx(base + "assert %s < %.17g" % (fig, lo))
    check(r.returncode == 2, "assert %s < %g (value %g) passed or errored: exit %d" % (fig, lo, v, r.returncode))

r = ok(base + "report --samples", "report --samples")
rows = [l for l in r.stdout.splitlines() if l[:1].isdigit() and "/npz/s" in l]
check(len(rows) == N, "report --samples: %d rows, expected %d" % (len(rows), N))
r = ok(base + "report --sample 4 --json %s/s4.json" % W, "report --sample 4")
d4, L4 = layers_of(W + "/s4.json")
check(all(L4[t]["metrics"]["rel_l2"] == single[3][t]["metrics"]["rel_l2"] for t in L4), "report --sample 4 differs from sample 4 alone")

# compare over the samples: fp16's row is the run's worst output
r = ok(base + "compare fp16 bf16 --json", "compare over samples")
rows = json.loads(r.stdout[r.stdout.index("["):])
check(rows[0]["target"] == "fp16" and rows[0]["output"]["rel_l2"] == max(outs),
      "compare over samples: fp16 output %r, the samples' worst %r" % (rows[0]["output"]["rel_l2"], max(outs)))

# limit and shuffle: deterministic, the said count
r1 = ok("load %s; data %s/npz limit 3 shuffle 7; data" % (MODEL, W), "limit shuffle")
r2 = ok("load %s; data %s/npz limit 3 shuffle 7; data" % (MODEL, W), "limit shuffle again")
dl = lambda r: [l for l in (r.stdout + r.stderr).splitlines() if l.startswith("data:")]
check("3 samples (of 6 matched: limit 3)" in r1.stderr and dl(r1) == dl(r2) and "first: %s/npz/s3.npz" % W in r1.stdout,
      "limit 3 shuffle 7: %s / %s" % (r1.stdout, r2.stdout))

# calibration: absmax rules see the largest value over all samples
r = ok("load %s; data %s/npz; run; colour * red when absmax > 1e30; rules" % (MODEL, W), "absmax over samples")

# a glob that matches 100k files: the limit is respected and said, and only
# the samples taken are read
os.makedirs(W + "/many")
for i in range(100000):
    os.symlink(W + "/npz/s1.npz", "%s/many/f%06d.npz" % (W, i))
r = ok("load %s; data '%s/many/*.npz' limit 20 shuffle 5; run" % (MODEL, W), "100k files, limit 20")
check("20 samples (of 100000 matched: limit 20)" in r.stderr and "over 20 samples" in r.stderr,
      "a glob of 100k files with limit 20: " + r.stderr[-500:])
shutil.rmtree(W + "/many")

# each sample's run cache: a re-run after a plan change recomputes only what
# the change touched, in every sample, and reports what a fresh run reports
# (also when the budget holds only part of each sample's values)
for budget in (512, 1):
    r = ok("load %s; data %s/npz; set cache %d; run; colour Relu red; run; report --json %s/cached.json"
           % (MODEL, W, budget, W), "cached re-run")
    ok("load %s; data %s/npz; colour Relu red; run; report --json %s/fresh.json" % (MODEL, W, W), "fresh run")
    check(open(W + "/cached.json").read() == open(W + "/fresh.json").read(),
          "set cache %d: a re-run through the samples' caches differs from a fresh run" % budget)
    inc = [l for l in r.stderr.splitlines() if "incremental:" in l]
    check(budget == 1 or (len(inc) == 1 and "(one per sample)" in inc[0]
                          and int(inc[0].split()[1]) < 25 * N),
          "set cache %d: the second run over the samples was not incremental: %s" % (budget, r.stderr))

# shards: run --samples k/3 and report --json each; merge gives the unsharded
# run's report byte for byte, and gates work after the merge
for k in (1, 2, 3):
    ok("load %s; data %s/npz; run --samples %d/3; report --json %s/shard%d.json" % (MODEL, W, k, W, k), "shard %d" % k)
ok("load %s; data %s/npz; run; report --json %s/full.json" % (MODEL, W, W), "unsharded")
shards = " ".join("%s/shard%d.json" % (W, k) for k in (3, 1, 2))
r = subprocess.run([MPX, "merge"] + shards.split() + ["--json", W + "/merged.json"], capture_output=True, text=True)
check(r.returncode == 0 and open(W + "/merged.json").read() == open(W + "/full.json").read(),
      "mpx merge of 3 shards differs from the unsharded report: %s" % (r.stdout + r.stderr))
r = mpx("merge %s; assert p95:output.rel_l2 < %.17g; report --samples" % (shards, p95 * (1 + 1e-9)))
check(r.returncode == 0 and len([l for l in r.stdout.splitlines() if "/npz/s" in l and l[:1].isdigit()]) == N,
      "merge then assert and report --samples: " + r.stdout + r.stderr)
r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/shard2.json"], capture_output=True, text=True)
check(r.returncode == 1 and "no shard holds sample 3 of 6 (a shard is missing)" in r.stderr, "merge with a shard missing: " + r.stderr)
r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/shard1.json", W + "/shard2.json", W + "/shard3.json"],
                   capture_output=True, text=True)
check(r.returncode == 1 and "sample 1 is in" in r.stderr, "merge with a shard twice: " + r.stderr)
ok("load %s; data %s/npz; colour Conv red; run --samples 2/3; report --json %s/other.json" % (MODEL, W, W), "other rules")
r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/other.json", W + "/shard3.json"], capture_output=True, text=True)
check(r.returncode == 1 and "ran other rules than" in r.stderr, "merge of shards of other rules: " + r.stderr)
# another order of the data set (shuffle), keep-io off, local figures: each
# refused (merged, they would give a report over the wrong samples, or
# without the local figures)
for what, cmd, msg in (("shuffled", "data %s/npz shuffle 3; run --samples 2/3" % W, "ran from another session than"),
                       ("keep-io off", "data %s/npz; keep-io off; run --samples 2/3" % W, "ran from another session than"),
                       ("local", "data %s/npz; run --local --samples 2/3" % W, "ran with local figures")):
    ok("load %s; %s; report --json %s/odd.json" % (MODEL, cmd, W), what)
    r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/odd.json", W + "/shard3.json"], capture_output=True, text=True)
    check(r.returncode == 1 and msg in r.stderr, "merge with a shard %s: %s" % (what, r.stderr))
# a shard without the ids (an older mpx's) is refused, naming them
old = json.load(open(W + "/shard2.json"))
del old["model_id"], old["session_id"]
json.dump(old, open(W + "/old2.json", "w"))
r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/old2.json", W + "/shard3.json"], capture_output=True, text=True)
check(r.returncode == 1 and "names no model_id and session_id" in r.stderr, "merge with a shard without ids: " + r.stderr)
# the model by its content: the same file in another folder merges
os.makedirs(W + "/elsewhere", exist_ok=True)
shutil.copy(MODEL, W + "/elsewhere/model" + os.path.splitext(MODEL)[1])
ok("load %s/elsewhere/model%s; data %s/npz; run --samples 2/3; report --json %s/moved.json" %
   (W, os.path.splitext(MODEL)[1], W, W), "the model from another folder")
r = subprocess.run([MPX, "merge", W + "/shard1.json", W + "/moved.json", W + "/shard3.json", "--json", W + "/merged2.json"],
                   capture_output=True, text=True)
check(r.returncode == 0, "merge with the same model from another folder: " + r.stderr)
r = mpx("load %s; data %s/npz; merge %s; run" % (MODEL, W, shards))
check(r.returncode == 1 and "came from merged shards" in r.stderr, "a run after a merge: " + r.stderr)
r = mpx("load %s; run --samples 1/2" % MODEL)
check(r.returncode == 1 and "--samples 1/2: no data set" in r.stderr, "run --samples without a data set: " + r.stderr)

# stats: ranges over the data set are the widest of the samples' own; saved
# ranges plan as the measured ones do
per = []
for k in range(N):
    ok("load %s; input x file %s/npy/s%d.npy; stats --save %s/r%d.json" % (MODEL, W, k, W, k), "stats of sample %d" % k)
    per.append({t["tensor"]: t for t in json.load(open("%s/r%d.json" % (W, k)))["tensors"]})
ok("load %s; data %s/npz; stats --all --save %s/rall.json" % (MODEL, W, W), "stats over the data set")
rall = json.load(open(W + "/rall.json"))
check(rall["samples"] == N and len(rall["tensors"]) == len(per[0]), "stats over the set: %d samples, %d tensors" %
      (rall["samples"], len(rall["tensors"])))
for t in rall["tensors"]:
    name = t["tensor"]
    check(t["absmax"] == max(p[name]["absmax"] for p in per) and t["min"] == min(p[name]["min"] for p in per) and
          t["max"] == max(p[name]["max"] for p in per) and t["n"] == sum(p[name]["n"] for p in per),
          "stats %s: the set's range is not the samples' widest" % name)
    check(t["p99"] <= t["p999"] <= t["absmax"], "stats %s: p99 %g, p99.9 %g, absmax %g out of order" %
          (name, t["p99"], t["p999"], t["absmax"]))
thr = sorted(t["absmax"] for t in rall["tensors"])[len(rall["tensors"]) // 2]
a = ok("load %s; data %s/npz; stats; colour * red when absmax > %.17g; plan --json %s/plan_a.json" % (MODEL, W, thr, W), "plan a")
b = ok("load %s; stats --load %s/rall.json; colour * red when absmax > %.17g; plan --json %s/plan_b.json" % (MODEL, W, thr, W),
       "plan b")
pa, pb = json.load(open(W + "/plan_a.json")), json.load(open(W + "/plan_b.json"))
check(pa["nodes"] == pb["nodes"] and pa["counts"]["red"] > 0, "a plan from saved ranges differs from one from measured ranges")
r = mpx("load %s; stats --load %s/full.json" % (MODEL, W))
check(r.returncode == 1 and "is not a ranges file" in r.stderr, "stats --load of a report: " + r.stderr)

# ---- refusals, each leaving the data set that was there
np.savez(W + "/wrongkey.npz", y=xs[0])
np.savez(W + "/extra.npz", x=xs[0], z=xs[0])
os.makedirs(W + "/mixed")
np.savez(W + "/mixed/a.npz", x=xs[0])
np.savez(W + "/mixed/b.npz", x=np.zeros((1, 3, 16, 16), np.float32))
os.makedirs(W + "/empty")
open(W + "/text.npz", "w").write("not a zip\n")
raw = open(W + "/npz/s0.npz", "rb").read()
open(W + "/cut.npz", "wb").write(raw[: len(raw) // 2])
import zipfile
with zipfile.ZipFile(W + "/readme.npz", "w") as z:
    z.writestr("readme.txt", "hello")
bad = bytearray(raw)
bad[200:260] = b"\xff" * 60  # inside the member's data: its CRC no longer matches
open(W + "/crc.npz", "wb").write(bytes(bad))
# a member whose sizes (local header and central directory) claim 3.75 GiB:
# read as far as its data goes, refused without allocating for the claim
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("x.npy", open(W + "/npy/s0.npy", "rb").read())
claim = bytearray(buf.getvalue())
claim[22:26] = (0xF0000000).to_bytes(4, "little")
cd = claim.find(b"PK\x01\x02")
claim[cd + 24:cd + 28] = (0xF0000000).to_bytes(4, "little")
open(W + "/claim.npz", "wb").write(bytes(claim))


def refused(cmd, part, status=1):
    r = mpx("set bail off; load %s; data %s/npz; %s; data" % (MODEL, W, cmd))
    text = r.stdout + r.stderr
    check(r.returncode == status and part in text and "data: %s/npz, 6 samples (first" % W in r.stdout,
          "%s: exit %d, expected %d, \"%s\" and the old data set kept: %s" % (cmd, r.returncode, status, part, text[-1500:]))


refused("data %s/wrongkey.npz" % W, "wrongkey.npz holds \"y\", which is not an input of the model")
refused("data %s/extra.npz" % W, "extra.npz holds \"z\", which is not an input")
# mixed shapes are found when a run reaches the odd sample (files are not all
# read by `data`): the run fails naming it and the last run stays
r = mpx("set bail off; load %s; data %s/mixed; run; report --top 1" % (MODEL, W))
check(r.returncode == 1 and "sample 2 of 2 (%s/mixed/b.npz): %s/mixed/b.npz:x gives input x shape 1x3x16x16 but it is "
      "bound to 1x3x32x32" % (W, W) in r.stderr and "no run yet" in r.stderr, "mixed shapes: " + r.stdout + r.stderr)
refused("data %s/empty" % W, "the folder is empty")
refused("data %s/nothing*.npz" % W, "matches no file")
refused("data %s/text.npz" % W, "text.npz: not an .npz file")
refused("data %s/npy" % W, "is not named after an input of the model")
refused("data %s/cut.npz" % W, "cut.npz): not a readable .npz (zip) archive")
refused("data %s/readme.npz" % W, "member \"readme.txt\" is not an .npy array")
refused("data %s/crc.npz" % W, "crc.npz): member \"x.npy\" cannot be read: CRC error")
refused("data %s/claim.npz" % W, "claim.npz): member \"x.npy\" cannot be read: the archive gives 4026531840 bytes, "
        "the member holds %d" % os.path.getsize(W + "/npy/s0.npy"))
refused("data %s/npz limit 0" % W, "limit 0: expected a whole number from 1")

# holding every sample's values (task figures, --eval, run --keep over a data
# set) is checked against the memory budget before they are copied: the run
# fails naming the tensor, and the session's next run goes on as before
np.savez(W + "/big3.npz", x=rng.normal(0, 1, (3, 1, 3, 256, 256)).astype(np.float32))
r = mpx("set bail off; load %s; data %s/big3.npz stacked; set memory 1; run --keep /backbone/stem/conv/Conv; "
        "run --keep y; assert out[y].top1 >= 0" % (MODEL, W))
check(r.returncode == 1 and "the values of stem.conv for 1 sample pass the memory budget (1 MB; see: set memory)"
      in r.stderr and r.stderr.count("25 layers compared") == 1 and "assert" not in r.stderr,
      "held values over the budget: " + (r.stdout + r.stderr)[-1500:])

print("data_sets: %d checks, %d failed" % (checks, fails))
sys.exit(1 if fails else 0)
