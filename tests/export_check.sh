#!/bin/sh
# ctest entry for `export` (issue 13): every real model (PP-OCRv4 det and rec,
# the PP-OCR direction classifier) and the bundled examples, exported under
# several plans (fp16 keep-io on and off, rules leaving some nodes fp32, bf16)
# and checked by scripts/verify-export.sh: onnx.checker accepts every file,
# ONNX Runtime (CPU) loads and runs every fp16 export, and mpx's predicted
# output error is within a factor of 2 of ORT's measured one. bf16: the
# export must pass the checker; ORT's CPU provider has no bf16 Conv, so the
# table says it cannot load it. rec and cls are opset 9: their bf16 exports
# are raised to 13 with Clip, Slice, Squeeze and Softmax rewritten to the new
# form (the checker validates them against opset 13; rec's loads back with
# the same plan and re-exports byte-identical).
#
# Inputs are seeded synthetic text images (numpy), so the detector's output
# is a real map, not the ~1e-7 it gives on noise (see tests/ort_compare.sh).
# det's first BatchNormalization has a variance of 9.8e7, beyond fp16: the
# default plan overflows it and the output collapses to 0 (rel_l2 1, which
# ORT confirms); the plans that check the prediction keep that node fp32.
#
# usage: export_check.sh <mpx> <python3> <cache_dir> <work_dir>
set -eu
MPX=$1
PY=$2
CACHE=$3
WORK=$4
HERE=$(cd "$(dirname "$0")" && pwd)
eval "$("$HERE/../scripts/fetch-models.sh" "$CACHE")"
rm -rf "$WORK"
mkdir -p "$WORK"
export MPX ORT_DIR="$ORT" PYTHON="$PY"

"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
def text_image(h, w, seed):
    # Dark strokes in lines on a light page, normalised as PP-OCR does.
    r = np.random.default_rng(seed)
    x = np.full((1, 3, h, w), 0.9, np.float32)
    for y in range(8, h - 8, 16):
        x0, x1 = int(r.integers(4, w // 4)), int(r.integers(w // 2, w - 4))
        for c in range(x0, x1, 6):
            x[0, :, y:y + 8, c:c + 4] = 0.1 + 0.1 * r.random()
    return ((x - 0.5) / 0.5).astype(np.float32)
np.save(sys.argv[1] + "/page.npy", text_image(160, 160, 1))
np.save(sys.argv[1] + "/line.npy", text_image(48, 320, 2))
np.save(sys.argv[1] + "/line192.npy", text_image(48, 192, 3))
PYEOF

plan() { printf '%s\n' "$@" > "$WORK/$name.mpx"; }
failed=0
runs=0
verify() { # label model input-arg
  runs=$((runs + 1))
  # $3 is one word or none on purpose.
  # shellcheck disable=SC2086
  if ! scripts_out=$(VERIFY_LABEL=$1 VERIFY_WORK="$WORK/$1" \
      "$HERE/../scripts/verify-export.sh" "$2" "$WORK/$name.mpx" $3 2>&1); then
    echo "$scripts_out"
    echo "export_check $1: FAIL"
    failed=$((failed + 1))
    return
  fi
  echo "$scripts_out" | grep -v "^$1: output |"
  [ "${VERIFY_KEEP:-0}" = 1 ] || rm -rf "${WORK:?}/$1"
}
refused() { # label model expected-message-part
  runs=$((runs + 1))
  if out=$("$MPX" -c "load $2; source $WORK/$name.mpx; export $WORK/$1.onnx" 2>&1) ||
     ! echo "$out" | grep -q "$3" || [ -e "$WORK/$1.onnx" ]; then
    echo "$out"
    echo "export_check $1: FAIL: expected a refusal saying \"$3\" and no file"
    failed=$((failed + 1))
    return
  fi
  echo "$1: refused: $(echo "$out" | grep error | sed 's/^.*error: //')"
}

DET="$MODELS/ch_PP-OCRv4_det_infer.onnx"
REC="$MODELS/ch_PP-OCRv4_rec_infer.onnx"
CLS="$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx"
BN='colour name:p2o.BatchNormalization.1 red'

name=det_default; plan ''
verify det-fp16-default "$DET" "x=$WORK/page.npy"
name=det_fp16; plan "$BN"
verify det-fp16 "$DET" "x=$WORK/page.npy"
name=det_kio; plan "$BN" 'keep-io off'
verify det-fp16-keepio-off "$DET" "x=$WORK/page.npy"
name=det_rule; plan "$BN" 'colour Conv red when out_ch >= 256' 'colour Sigmoid red'
verify det-fp16-rules "$DET" "x=$WORK/page.npy"
name=det_bf16; plan 'target bf16'
verify det-bf16 "$DET" "x=$WORK/page.npy"
name=det_bf16_kio; plan 'target bf16' 'keep-io off'
verify det-bf16-keepio-off "$DET" "x=$WORK/page.npy"

for m in rec cls; do
  if [ $m = rec ]; then M=$REC; IN="x=$WORK/line.npy"; else M=$CLS; IN="x=$WORK/line192.npy"; fi
  name=${m}_fp16; plan ''
  verify $m-fp16 "$M" "$IN"
  name=${m}_kio; plan 'keep-io off'
  verify $m-fp16-keepio-off "$M" "$IN"
  name=${m}_rule; plan 'colour MatMul,Softmax red' 'colour Conv red when out_ch >= 256'
  verify $m-fp16-rules "$M" "$IN"
  # opset 9: raised to 13 with Clip, Slice, Squeeze and Softmax rewritten
  name=${m}_bf16; plan 'target bf16'
  verify $m-bf16 "$M" "$IN"
done

name=tiny_cnn; plan 'input x shape 1x3x32x32'
verify tiny_cnn-fp16 "$HERE/../examples/tiny_cnn.json" ""
name=tiny_cnn_kio; plan 'input x shape 1x3x32x32' 'keep-io off'
verify tiny_cnn-fp16-keepio-off "$HERE/../examples/tiny_cnn.json" ""
name=tiny_transformer; plan 'colour Softmax red'
verify tiny_transformer-fp16 "$HERE/../examples/tiny_transformer.json" ""
name=tiny_transformer_bf16; plan 'target bf16'
verify tiny_transformer-bf16 "$HERE/../examples/tiny_transformer.json" ""

# CastLike takes its output type from its second input: where the plan makes
# its output fp16 against a float32 `like`, the export writes the Cast it
# stands for (to=fp16), which ORT runs with the predicted error.
name=castlike; plan 'colour MatMul green'
verify castlike-fp16 "$HERE/models/castlike.json" ""

# Outputs whose type the op fixes to float (LayerNormalization's Mean and
# InvStdDev, SkipLayerNormalization's mean and inv_std_var): ORT's fp16
# kernels write them in fp32; mpx's plan holds them fp32 and does not round
# them, and the export declares them float. Rounded, the predicted error of
# inv_std_var was 9.5x the measured one.
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T
r = np.random.default_rng(0)
def save(name, node, outs, inits, opsets):
    x = helper.make_tensor_value_info("X", T.FLOAT, [2, 3, 8])
    ys = [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in outs]
    g = helper.make_graph([node], name, [x], ys, [numpy_helper.from_array(v, k) for k, v in inits])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]),
              sys.argv[1] + "/" + name + ".onnx")
gamma, beta = r.normal(1, 0.5, 8).astype(np.float32), r.normal(0, 0.3, 8).astype(np.float32)
stats = [("Y", [2, 3, 8]), ("M", [2, 3, 1]), ("V", [2, 3, 1])]
save("ln_stats", helper.make_node("LayerNormalization", ["X", "gamma", "beta"], ["Y", "M", "V"], epsilon=1e-5),
     stats, [("gamma", gamma), ("beta", beta)], [("", 17)])
save("sln_stats", helper.make_node("SkipLayerNormalization", ["X", "skip", "gamma", "beta", "bias"],
                                   ["Y", "M", "V", "S"], domain="com.microsoft", epsilon=1e-5),
     stats + [("S", [2, 3, 8])],
     [("skip", (50 * r.normal(0, 1, (2, 3, 8))).astype(np.float32)), ("gamma", gamma), ("beta", beta),
      ("bias", r.normal(0, 0.3, 8).astype(np.float32))], [("", 17), ("com.microsoft", 1)])
PYEOF
name=norm_stats; plan 'input X random normal 3 40 seed 2' 'colour * green'
verify ln-stats-fp16 "$WORK/ln_stats.onnx" ""
verify sln-stats-fp16 "$WORK/sln_stats.onnx" ""

# A weight read by a low and an fp32 node is kept once per format, under a
# name that collides with nothing (the model already has a `w_fp16`).
name=shared; plan 'colour name:b red'
VERIFY_KEEP=1
verify shared-weight "$HERE/models/shared_weight.json" ""
runs=$((runs + 1))
if ! "$PY" - "$WORK/shared-weight/export.onnx" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1])
inits = sorted((t.name, t.data_type) for t in m.graph.initializer)
reads = {n.name: list(n.input) for n in m.graph.node}
ok = inits == [("w", 1), ("w_fp16", 1), ("w_fp16_2", 10)] and reads["a"][1] == "w_fp16_2" and reads["b"][1] == "w"
print("shared-weight:", inits, "a reads", reads["a"][1], "b reads", reads["b"][1])
sys.exit(0 if ok else 1)
PYEOF
then
  echo "export_check shared-weight: FAIL (one initializer per format expected)"
  failed=$((failed + 1))
fi
VERIFY_KEEP=0

# fp8: the export raises the opset to 19 and the IR version to 9 (FLOAT8
# types). Debian's python3-onnx 1.12 knows neither (IR 8, opset 17, no FLOAT8
# types): its checker refuses the file for its IR version alone, so here the
# file is read back with onnx.load and its types, opset and Casts checked.
fp8() { # label model format
  runs=$((runs + 1))
  d="$WORK/$1"
  mkdir -p "$d"
  if ! out=$("$MPX" -c "load $2; target $3; export $d/m.onnx" 2>&1) ||
     ! msg=$("$PY" - "$d/m.onnx" "$3" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1])
want = {"fp8e4m3": 17, "fp8e4m3nan": 17, "fp8e5m2": 19}[sys.argv[2]]
ops = {o.domain: o.version for o in m.opset_import}
types = {t.data_type for t in m.graph.initializer}
casts = [n for n in m.graph.node if n.op_type == "Cast"]
def attr(n, k):
    return [a.i for a in n.attribute if a.name == k]
to_low = [n for n in casts if attr(n, "to") == [want]]
sat = [attr(n, "saturate") for n in to_low]
ok = m.ir_version == 9 and ops.get("") == 19 and want in types and to_low
# Overflow to NaN (fp8e4m3nan) is saturate=0; the default saturates (as fp8e4m3).
ok = ok and sat == ([[0]] if sys.argv[2] == "fp8e4m3nan" else [[]]) * len(to_low)
try:
    onnx.checker.check_model(m)
    verdict = "checker ok"
except Exception as e:
    ok = ok and "ir_version is higher" in str(e)
    verdict = "checker (onnx %s) refuses: %s" % (onnx.__version__, str(e).splitlines()[0])
print(verdict)
sys.exit(0 if ok else 1)
PYEOF
); then
    echo "$out"
    echo "${msg:-}"
    echo "export_check $1: FAIL"
    failed=$((failed + 1))
    return
  fi
  echo "$1: IR 9, opset 19, FLOAT8 weights and Casts; $msg"
}
fp8 tiny_transformer-fp8e4m3 "$HERE/../examples/tiny_transformer.json" fp8e4m3
fp8 tiny_transformer-fp8e4m3nan "$HERE/../examples/tiny_transformer.json" fp8e4m3nan
fp8 tiny_transformer-fp8e5m2 "$HERE/../examples/tiny_transformer.json" fp8e5m2

# Round trip: the export loaded back shows the same compute and output
# format for every node the source had, `plan` adds no cast and converts no
# weight, and exporting it again gives the same bytes.
roundtrip() { # label model plan-commands
  runs=$((runs + 1))
  d="$WORK/rt-$1"
  mkdir -p "$d"
  if ! out=$("$MPX" -c "load $2; $3; plan --json $d/p1.json; export $d/a.onnx; load $d/a.onnx; $3; \
      plan --json $d/p2.json; assert casts == 0; export $d/b.onnx" 2>&1) ||
     ! cmp -s "$d/a.onnx" "$d/b.onnx" ||
     ! "$PY" - "$d/p1.json" "$d/p2.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
nb = {n["name"]: n for n in b["nodes"]}
bad = [n["name"] for n in a["nodes"] if n["name"] in nb and
       (n.get("compute"), n.get("output")) != (nb[n["name"]].get("compute"), nb[n["name"]].get("output"))]
missing = [n["name"] for n in a["nodes"] if n["name"] not in nb and n.get("compute")]
if bad or missing or b["counts"]["weights_converted"]:
    print("formats differ:", bad[:5], "missing:", missing[:5], "weights:", b["counts"]["weights_converted"])
    sys.exit(1)
PYEOF
  then
    echo "$out" | tail -5
    echo "export_check roundtrip $1: FAIL (formats, casts or bytes differ)"
    failed=$((failed + 1))
    return
  fi
  echo "roundtrip $1: same formats, 0 casts added, 0 weights converted, byte-identical re-export"
}
# The opset raise keeps the model's meaning: the bf16 export of an opset-9
# model (Clip, Slice, Squeeze rewritten), loaded back and run under the same
# plan, computes the same emulated output bit for bit as the source did.
same_output() { # label model input output
  runs=$((runs + 1))
  d="$WORK/so-$1"
  mkdir -p "$d"
  if ! out=$("$MPX" -c "load $2; input x file $3; target bf16; run; tensor $4 --save $d/a.npy; \
      export $d/e.onnx; load $d/e.onnx; input x file $3; target bf16; run; tensor $4 --save $d/b.npy" 2>&1) ||
     ! cmp -s "$d/a.npy" "$d/b.npy"; then
    echo "$out" | tail -5
    echo "export_check same-output $1: FAIL (the raised export computes another output)"
    failed=$((failed + 1))
    return
  fi
  echo "same output $1: the bf16 export raised to opset 13 computes the source's emulated $4 bit for bit"
}
same_output rec-bf16 "$REC" "$WORK/line.npy" softmax_11.tmp_0
same_output cls-bf16 "$CLS" "$WORK/line192.npy" softmax_0.tmp_0

roundtrip cls "$CLS" "keep-io on"
roundtrip rec-keepio-off "$REC" "keep-io off"
roundtrip det-bf16 "$DET" "target bf16"
roundtrip rec-bf16 "$REC" "target bf16"
roundtrip tiny_transformer "$HERE/../examples/tiny_transformer.json" "keep-io on"

echo "export_check: $runs exports, $failed failed"
[ "$failed" -eq 0 ]
