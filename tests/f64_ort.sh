#!/bin/sh
# ctest entry: float64 computed and stored as float64 (issue 48).
#  1. tests/f64_models.py's f64_ops (float64 inputs holding 1e229 and
#     1e-300, a float32 input cast to float64, float64 weights, the float64
#     ops: kernels_f64.def): mpx's reference against ONNX Runtime on every
#     tensor, rel_l2 < 1e-15 (most are bit for bit: rel_l2 0), and every
#     float64 tensor written as <f8 (ort_run.js refuses a float64 tensor
#     that mpx wrote as <f4).
#  2. `tensor --save` writes <f8 holding 1e229 and 1e-71 (1e229 * 1e-300),
#     which fp32 holds as inf and 0.
#  3. The defaults keep float64 (why: red, float64); coloured green the
#     float64 nodes run in fp16 and the report says 1e229 overflows there,
#     with figures computed in double (the default plan's report: rel_l2 0).
#  4. Export keeps DOUBLE where the plan does not hold a tensor low: ONNX's
#     strict shape inference accepts the exported model, its inputs,
#     outputs and weights are still DOUBLE, and mpx loads and runs it.
#  1b. tests/f64_models.py's f64_nn (the pools, normalisations, CumSum, TopK,
#     EyeLike and Einsum ONNX Runtime has double kernels for, on values near
#     1e150) against ONNX Runtime; 1c. f64_np (Conv, ConvTranspose,
#     AveragePool, LpPool, the global pools, InstanceNormalization, LRN),
#     f64_resize (Resize: every mode and coordinate transformation), f64_up9
#     and f64_up7 (Upsample) and f64_rnn (LSTM, GRU, RNN: directions,
#     sequence_lens, initial states, peepholes, clip, input_forget,
#     linear_before_reset, activations, layout 1; every output): no double
#     kernel in ORT (its CPU provider registers LSTM and GRU for double but
#     refuses to run them, and has no double RNN or Upsample), against numpy
#     in double (f64_np_check.py).
#  1d. tests/f64_models.py's f64_move, f64_scatter10, f64_signal (the data
#     movement, index and signal ops) and f64_control (If, Loop, Scan,
#     SequenceMap, sequences and optionals) against ONNX Runtime, f64_index
#     against numpy (signal_checks below).
#  1e. f64_elem_ort (Gelu's tanh form, RMSNormalization,
#     NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Attention;
#     f64_roi_ort: RoiAlign; f64_deform: DeformConv with group and
#     offset_group 2, strides, pads, a mask, a bias and fractional offsets,
#     rel_l2 < 1e-14; ONNX Runtime computes them in double) against
#     ONNX Runtime, and f64_elem_np (Gelu,
#     Mish, HardSwish, Shrink, ThresholdedRelu, Hardmax, Det,
#     MeanVarianceNormalization, RMSNormalization) against numpy in double:
#     ORT has no double kernel for most of them, and its double Shrink
#     computes in fp32.
#  1f. Bernoulli and Multinomial of float64 values (f64_random): the
#     draws show what they must, and a probability above 1 only in double
#     is refused.
#  3b. Task figures (top1, topk_overlap, iou, sign_agree) of float64 tensors;
#  3c. a Loop body's float64 values in the report's body figures;
#  3d. the recurrent ops coloured fp16 round as in float32: f64_rnn and the
#     same model in float32 (f32_rnn), both green, give the same values
#     (the gates in the compute format and the state carried in the output
#     format at every step) and the same rel_l2.
#  5. A float64 Celu (no row: ONNX defines Celu for float only) is refused
#     before the run, naming the node; 5b. a float64 com.microsoft
#     Attention when it runs.
#
# usage: f64_ort.sh <mpx_run_model> <mpx> <python3> <cache_dir> <work_dir>
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/ort_common.sh"
M=$WORK/models
"$PY" "$HERE/f64_models.py" "$M"
fail() { echo "f64_ort $1: FAIL${2:+: $2}"; failed=$((failed + 1)); }
INPUTS="input X file $M/x.npy; input Z file $M/z.npy; input F file $M/f.npy"

# ort_check <label> <model> <mpx_run_model's file arguments>...: mpx's
# reference against ONNX Runtime on every tensor, rel_l2 < $BOUND (1e-15;
# 1e-300: bit for bit)
BOUND=1e-15
ort_check() {
  n=$((n + 1))
  label=$1 model=$2
  shift 2
  if ! "$RUN" "$M/$model.onnx" "$WORK/$label" "$@" > "$WORK/$label.log" 2>&1; then
    sed 's/^/  /' "$WORK/$label.log"; fail "$label" "mpx_run_model"; return
  fi
  all=$("$PY" "$HERE/ort_compare.py" all-outputs "$M/$model.onnx" "$WORK/all_$label")
  if node "$HERE/ort_run.js" "$ORT" "$M/$model.onnx" "$all" "$WORK/$label" "$model" --bound $BOUND --threads 1 \
       --repeat 1 > "$WORK/$label.ort" 2>&1; then
    head -2 "$WORK/$label.ort"
  else
    cat "$WORK/$label.ort"; fail "$label" "the reference against ORT"
  fi
}

# 1. against ONNX Runtime
ort_check ort f64_ops --file "X=$M/x.npy" --file "Z=$M/z.npy" --file "F=$M/f.npy"
# 1b. the nn ops against ONNX Runtime (its double kernels), on values near 1e150
ort_check nn_ort f64_nn --file "N=$M/n.npy" --file "E=$M/e.npy" --file "N2=$M/n2.npy"

# 1c. the nn ops ONNX Runtime has no double kernel for, against numpy in double
# np_check <label> <model> [<input>=<file>]...: every node's output against
# f64_np_check.py's reference (the input: N, n.npy unless given)
np_check() {
  n=$((n + 1))
  label=$1 model=$2
  shift 2
  [ $# -gt 0 ] || set -- "N=$M/n.npy"
  files=""
  for f in "$@"; do files="$files --file $f"; done
  # shellcheck disable=SC2086 # the work paths hold no spaces
  if ! "$RUN" "$M/$model.onnx" "$WORK/$label" $files > "$WORK/$label.log" 2>&1; then
    sed 's/^/  /' "$WORK/$label.log"; fail "$label" "mpx_run_model"
  elif "$PY" "$HERE/f64_np_check.py" "$M/$model.onnx" "$WORK/$label" > "$WORK/$label.check" 2>&1; then
    echo "$label: ok ($(wc -l < "$WORK/$label.check") ops)"
  else
    cat "$WORK/$label.check"; fail "$label" "the ops against numpy"
  fi
}
np_check nn_numpy f64_np
np_check resize_numpy f64_resize
np_check upsample9_numpy f64_up9
np_check upsample7_numpy f64_up7
np_check rnn_numpy f64_rnn "X=$M/xr.npy"
np_check bn_train_numpy f64_bn_train

# 1d. the data movement, index and signal ops (kernels_f64.def's last
# block), on values near 1e150, 1e-300 and doubles fp32 would change:
# ScatterND, ScatterElements (every reduction), Scatter, CenterCropPad and
# Unique against ONNX Runtime bit for bit; GridSample, AffineGrid, RoiAlign, DFT,
# STFT, HannWindow and MelWeightMatrix against its double kernels, rel_l2
# < 1e-14; If (both branches), Loop, Scan, SequenceMap and the sequence
# and optional ops carrying doubles against it bit for bit; OneHot,
# NonZero, MaxUnpool, MaxRoiPool (bit for bit), Col2Im, HammingWindow and
# BlackmanWindow (rel_l2 < 1e-14; ORT has no double kernel for the first
# five and computes the windows with fp32 coefficients), Multinomial and
# Bernoulli (certain draws; ORT's Bernoulli inverts them) against numpy.
signal_checks() {
  BOUND=1e-300
  ort_check move_ort f64_move --file "S=$M/s.npy" --file "U=$M/u.npy"
  ort_check scatter10_ort f64_scatter10 --file "S=$M/s.npy"
  ort_check control_ort f64_control --file "S=$M/s.npy" --file "S0=$M/s0.npy" --file "CD=$M/c1.npy"
  ort_check control_else_ort f64_control --file "S=$M/s.npy" --file "S0=$M/s0.npy" --file "CD=$M/c0.npy"
  BOUND=1e-14
  ort_check signal_ort f64_signal --file "G=$M/g.npy" --file "Q=$M/q.npy" --file "QC=$M/qc.npy" --file "QS=$M/qs.npy"
  BOUND=1e-15
  np_check index_numpy f64_index "Z=$M/zz.npy" "P=$M/p.npy" "CI=$M/ci.npy" "CI2=$M/ci2.npy" "ML=$M/ml.npy" \
    "BP=$M/bp.npy"
}
signal_checks
# 1e. the element-wise, normalisation, loss and attention ops on N near 1e150 and M,
# moderate values with bits fp32 cannot hold: those ONNX Runtime computes in
# double against it, the others against numpy in double
ELEM="N=$M/elem_n.npy M=$M/elem_m.npy"
ort_check elem_ort f64_elem_ort --file "N=$M/elem_n.npy" --file "M=$M/elem_m.npy"
ort_check roi_ort f64_roi_ort --file "N=$M/elem_n.npy" --file "M=$M/elem_m.npy"
# DeformConv against ONNX Runtime's double kernel (its sums run in another
# order: rel_l2 < 1e-14)
BOUND=1e-14
ort_check deform_ort f64_deform --file "DN=$M/deform_n.npy" --file "DM=$M/deform_m.npy"
BOUND=1e-15
# shellcheck disable=SC2086
np_check elem_numpy f64_elem_np $ELEM

# 1f. Bernoulli and Multinomial of float64 values: mpx's generator is its
# own, so the draws are checked by what they must show (probabilities 0 and
# 1 exactly, 0.25 on average; logits of 1e150, inf in fp32, always win),
# and a probability of 1 + 2^-40 (1 in fp32) is refused
n=$((n + 1))
if ! "$RUN" "$M/f64_random.onnx" "$WORK/random" --file "P=$M/rnd_p.npy" --file "L=$M/rnd_l.npy" > "$WORK/random.log" 2>&1; then
  sed 's/^/  /' "$WORK/random.log"; fail random "mpx_run_model"
elif "$PY" - "$WORK/random" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
files = {}
for line in open(d + "/manifest.tsv"):
    f = line.rstrip("\n").split("\t")
    if f[0] in ("input", "tensor"):
        files[f[1]] = d + "/" + f[2]
b, m = np.load(files["bern"]), np.load(files["multi"])
assert b.dtype == np.float64 and set(np.unique(b)) <= {0.0, 1.0}, b.dtype
assert (b[:1000] == 0).all() and (b[1000:2000] == 1).all() and 0.22 < b[2000:].mean() < 0.28, b[2000:].mean()
assert (m[0] == 1).all(), "row 0"
cnt = np.bincount(m[1], minlength=3)
assert all(900 < k < 1100 for k in cnt), cnt
c2 = np.bincount(m[2], minlength=3)
assert c2[2] == 0 and 1350 < c2[0] < 1650, c2
PYEOF
then echo "random: ok"; else fail random "the draws"; fi
n=$((n + 1))
if out=$("$MPX" -c "load $M/f64_random.onnx; input P file $M/rnd_p_bad.npy; input L file $M/rnd_l.npy; run" 2>&1); then
  fail random_bad "a probability above 1 ran"
else
  case $out in
    *'probability 1.0000000000009095 (element 1500) is not in [0, 1]'*) echo "random_bad: ok" ;;
    *) echo "$out"; fail random_bad "not the expected message" ;;
  esac
fi

# expect <label> <mpx commands> <text>...: the commands succeed and print each text
expect() {
  n=$((n + 1))
  label=$1 cmds=$2
  shift 2
  if ! out=$("$MPX" -c "$cmds" 2>&1); then
    echo "$out"; fail "$label" "the commands failed"; return
  fi
  for want in "$@"; do
    case $out in
      *"$want"*) ;;
      *) echo "$out" | grep -v '^  output'; fail "$label" "no \"$want\""; return ;;
    esac
  done
  echo "$label: ok"
}

# 2. tensor --save writes <f8
expect save "load $M/f64_ops.onnx; $INPUTS; run; tensor add --save $WORK/add.npy; tensor ident --save $WORK/ident.npy" \
  "tensor add float64 2x3x4, held in fp32" "reference min -3.7e+229, max 1e+229" "reference min -3.7e-71, max 1e-71"
n=$((n + 1))
if "$PY" - "$WORK" "$M" <<'PYEOF'
import sys
import numpy as np
w, m = sys.argv[1], sys.argv[2]
for name in ("add", "ident"):
    head = open("%s/%s.npy" % (w, name), "rb").read(128)
    assert b"'descr': '<f8'" in head, (name, head)
x, z = np.load(m + "/x.npy"), np.load(m + "/z.npy")
add, ident = np.load(w + "/add.npy"), np.load(w + "/ident.npy")
assert add.dtype == np.float64 and np.array_equal(add, x + z), "add"
assert np.array_equal(ident, x * 1e-300), "ident"
assert add.flat[0] == 1e229 and 0 < abs(ident.flat[0]) < 1e-70
PYEOF
then echo "save_f8: ok"; else fail save_f8 "the saved files are not <f8 or not the float64 values"; fi

# 3. the plan and the report
expect default_plan "load $M/f64_ops.onnx; why add_n; $INPUTS; run; assert add.rel_l2 == 0 and ident.rel_l2 == 0" \
  "default: red (mpx: float64 stays float64 unless a rule colours it)" "red: computes in float64"
expect green_report "load $M/f64_ops.onnx; $INPUTS; colour * green; run; report --json $WORK/green.json; tensor x_tiny" \
  "first at add (Add): float64 values up to 3.7e+229 do not fit fp16" "tensor x_tiny float64 2x3x4, held in fp16" \
  "underflow 20"
# only the float32 input's Cast to float64 low: X + f64 stays float64 around 1e229, with
# an error of fp16's size in F's values: rel_l2 near 1e-233, whose sums of squares
# need the figures' scaling (unscaled, |1e229|^2 overflows and rel_l2 reads 0)
expect scaled_figures "load $M/f64_ops.onnx; $INPUTS; colour name:f64_n green; run; assert x_plus_f.rel_l2 > 1e-240 and x_plus_f.rel_l2 < 1e-225 and add.rel_l2 == 0" \
  "plan:"
n=$((n + 1))
if "$PY" - "$WORK/green.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = {l["tensor"]: l["metrics"] for l in r["layers"]}
# exp of moderate values in fp16: a finite error of fp16's size, from figures in double
e = rows["exp"]
assert 1e-5 < e["rel_l2"] < 1e-2, e
assert rows["add"]["overflow"] == 2 and rows["add"]["absmax_ref"] == 3.7e229, rows["add"]
PYEOF
then echo "green_json: ok"; else fail green_json "the report's float64 figures"; fi

# 3b. task figures of float64 tensors: in the default plan every one agrees;
# coloured green, X * 1e-300 flushes to 0 in fp16 (sign_agree@0 below 1)
expect task_default "load $M/f64_ops.onnx; $INPUTS; run --keep softmax,x_tiny; assert softmax.top1 == 1 and softmax.topk_overlap@2 == 1 and x_tiny.sign_agree@0 == 1 and x_tiny.iou@0 == 1" \
  "run: fp16 plan"
expect task_green "load $M/f64_ops.onnx; $INPUTS; colour * green; run --keep softmax,x_tiny; assert softmax.top1 == 1 and x_tiny.sign_agree@0 < 1 and x_tiny.iou@0 == 0" \
  "run: fp16 plan"

# 3c. a Loop body's float64 values get their figures: 3 iterations of
# v * 1e200, which fp16 overflows (green) and float64 holds (default)
expect loop_body "load $M/f64_loop.onnx; input V file $M/v.npy; colour * green; run; report --json $WORK/loop.json" "plan:"
n=$((n + 1))
if "$PY" - "$WORK/loop.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
body = {b["tensor"]: b for b in r.get("body", [])}
h = body["huge"]
assert h["runs"] == 3 and h["metrics"]["overflow"] == 4 and h["metrics"]["absmax_ref"] >= 7e200, h
PYEOF
then echo "loop_body_json: ok"; else fail loop_body_json "the body's float64 figures"; fi

# 3d. LSTM, GRU and RNN coloured fp16 round as in float32: the float64 model
# and the float32 one (its weights and input rounded to fp32, then to fp16 by
# the plan: the same fp16 values) give the same outputs, but for the rare
# element whose double sum and fp32 sum round to neighbouring fp16 values
RNN_OUTS="lstm_f lstm_f_c lstm_b lstm_b_h lstm_b_c lstm_r lstm_l1 gru_0 gru_1 gru_1_h gru_l1 rnn_f rnn_b rnn_l1"
for k in 32 64; do
  saves=""
  for t in $RNN_OUTS; do saves="$saves; tensor $t --save $WORK/low${k}_$t.npy"; done
  x=$M/xr.npy
  [ $k = 32 ] && x=$M/xr32.npy
  expect rnn_low$k "load $M/f${k}_rnn.onnx; input X file $x; colour * green; run; report --json $WORK/rnn_low$k.json$saves" \
    "run: fp16 plan"
done
n=$((n + 1))
if "$PY" - "$WORK" "$RNN_OUTS" <<'PYEOF'
import json, sys
import numpy as np
w, outs = sys.argv[1], sys.argv[2].split()
rel = [{l["tensor"]: l["metrics"]["rel_l2"] for l in json.load(open("%s/rnn_low%d.json" % (w, k)))["layers"]}
       for k in (32, 64)]
differ = total = 0
for t in outs:
    a, b = np.load("%s/low32_%s.npy" % (w, t)), np.load("%s/low64_%s.npy" % (w, t))
    assert a.dtype == np.float32 and b.dtype == np.float64, t
    assert b.astype(np.float16).astype(np.float64).tolist() == b.tolist(), t + ": not fp16 values"
    differ += int((a.astype(np.float64) != b).sum())
    total += a.size
    # the error of fp16 (rounding at every step) in both, within 2%
    assert 2e-4 < rel[0][t] < 3e-3 and abs(rel[1][t] / rel[0][t] - 1) < 0.02, (t, rel[0][t], rel[1][t])
print("rnn_low: %d of %d elements differ" % (differ, total))
assert differ <= total // 50, "the float64 recurrent ops do not round as the float32 ones"
PYEOF
then echo "rnn_low_same: ok"; else fail rnn_low_same "float64 coloured fp16 does not round as float32"; fi

# 4. export keeps DOUBLE
expect export "load $M/f64_ops.onnx; colour Add green; export $WORK/green.onnx; load $WORK/green.onnx; $INPUTS; run; tensor add" \
  "tensor add float64 2x3x4"
n=$((n + 1))
if "$PY" - "$WORK/green.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto
m = onnx.load(sys.argv[1])
onnx.shape_inference.infer_shapes(m, strict_mode=True)
types = {v.name: v.type.tensor_type.elem_type for v in list(m.graph.input) + list(m.graph.output)}
inits = {i.name: i.data_type for i in m.graph.initializer}
for name in ("X", "Z", "add", "matmul", "softmax", "pad"):
    assert types[name] == TensorProto.DOUBLE, (name, types[name])
assert inits["W"] == TensorProto.DOUBLE and inits["tiny"] == TensorProto.DOUBLE
casts = [n for n in m.graph.node if n.op_type == "Cast" and n.output[0] == "add"]
assert casts and casts[0].attribute[0].i == TensorProto.DOUBLE, casts
PYEOF
then echo "export_double: ok"; else fail export_double "the exported model does not keep DOUBLE"; fi

# refused NAME MODEL WHAT MESSAGE: `run` on MODEL (float64 input X) fails
# and its message holds MESSAGE, which names the node
refused() {
  n=$((n + 1))
  if out=$("$MPX" -c "load $M/$2; input X random; run" 2>&1); then
    fail "$1" "a float64 $3 ran"
  else
    case $out in
      *"$4"*) echo "$1: ok" ;;
      *) echo "$out"; fail "$1" "not the expected message" ;;
    esac
  fi
}

# 5. an op without a float64 row is refused before the run, naming the node
refused refused_celu f64_refused_celu.onnx Celu \
  'node "celu" (Celu): no float64 kernel for Celu; mpx computes float64 as float64'

# 5b. a float64 com.microsoft Attention (ONNX's own runs in double) is
# refused when it runs, naming the node
refused refused_ms_attention f64_refused_ms_attention.onnx "com.microsoft Attention" \
  'node "ms_att" (Attention): a float64 com.microsoft Attention is not supported'

echo "f64_ort: $n checks, $failed failed"
[ "$failed" = 0 ]
