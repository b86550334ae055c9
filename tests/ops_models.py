"""Small models for tests/ops_ort.sh, each checked against ONNX Runtime:
 - LSTM, GRU and RNN with the attribute variants ONNX's own cases leave out
   (bidirectional, reverse, sequence_lens shorter than the sequence, initial
   states, peepholes, clip, input_forget, linear_before_reset, non-default
   activations with alphas and betas);
 - ops that python3-onnx 1.12 has no cases for: those of opsets 18-23
   (BitwiseAnd/Or/Xor/Not, GroupNormalization 18 and 21, RMSNormalization),
   older ones whose cases it lacks (LpNormalization, GlobalLpPool) and
   GridSample's mode and padding pairs beyond its cases, and the variants
   of RoiAlign, MaxUnpool, Unique and the integer products (MatMulInteger,
   ConvInteger, QLinearMatMul, QLinearConv) beyond theirs;
 - ONNX Runtime's contrib ops (com.microsoft) that its exporters and
   transformer optimiser write, and SimplifiedLayerNormalization.
Each graph's only input is X (float); weights and other inputs are seeded
initializers.

usage: python3 ops_models.py <out_dir>
  prints one line per model: name, X's shape, the op to colour green
  for the fp16 report ("-" for integer ops) and, where ORT's CPU build lacks
  the op, the model of ONNX ops ORT runs instead (its output Y only)
"""
import json
import os
import sys
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def model(name, op, out_dir, seq=5, batch=3, inp=4, hid=6, dirs=1, layout=0, lens=None,
          init_h=False, init_c=False, peep=False, opset=14, **attrs):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    inits = [
        numpy_helper.from_array((rng.standard_normal((dirs, gates * hid, inp)) * 0.5).astype(np.float32), "W"),
        numpy_helper.from_array((rng.standard_normal((dirs, gates * hid, hid)) * 0.5).astype(np.float32), "R"),
        numpy_helper.from_array((rng.standard_normal((dirs, 2 * gates * hid)) * 0.3).astype(np.float32), "B"),
    ]
    ins = ["X", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, dtype=np.int32), "seq_lens"))
        ins[4] = "seq_lens"
    state = (batch, dirs, hid) if layout else (dirs, batch, hid)
    if init_h:
        inits.append(numpy_helper.from_array(rng.standard_normal(state).astype(np.float32) * 0.5, "h0"))
        ins[5] = "h0"
    if init_c:
        inits.append(numpy_helper.from_array(rng.standard_normal(state).astype(np.float32) * 0.5, "c0"))
        ins[6] = "c0"
    if peep:
        inits.append(numpy_helper.from_array(rng.standard_normal((dirs, 3 * hid)).astype(np.float32) * 0.3, "P"))
        ins[7] = "P"
    n_in = 8 if op == "LSTM" else 6
    ins = ins[:n_in]
    while ins and ins[-1] == "":
        ins.pop()
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    direction = {1: attrs.pop("direction", "forward"), 2: "bidirectional"}[dirs]
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, ins, outs, hidden_size=hid, direction=direction, **attrs)
    xshape = [batch, seq, inp] if layout else [seq, batch, inp]
    yshape = [batch, seq, dirs, hid] if layout else [seq, dirs, batch, hid]
    g = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, xshape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, yshape)]
        + [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(state)) for o in outs[1:]],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    save(m, os.path.join(out_dir, name + ".onnx"))
    print(name, "x".join(str(d) for d in xshape), op)


def single(name, op, out_dir, xshape, opset, inits=(), outs=1, domain="", **attrs):
    """One node: op(X, *inits) -> Y (and more outputs when outs > 1; an
    outs list of booleans omits the outputs marked False)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    tensors = [numpy_helper.from_array((rng.standard_normal(s) * sc + off).astype(np.float32), f"I{k}")
               for k, (s, sc, off) in enumerate(inits)]
    keep = outs if isinstance(outs, list) else [True] * outs
    names = ["Y" if k == 0 else f"Y{k}" if on else "" for k, on in enumerate(keep)]
    node = helper.make_node(op, ["X"] + [t.name for t in tensors], names, domain=domain or None, **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(xshape))],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names if n], tensors)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 10 if opset >= 21 else 8
    save(m, os.path.join(out_dir, name + ".onnx"))
    print(name, "x".join(str(d) for d in xshape), op)


def bitwise(out_dir):
    """X*100 cast to int32, then BitwiseAnd/Or/Xor with an int32 constant and
    BitwiseNot (opset 18); each result cast back to float as an output."""
    rng = np.random.default_rng(18)
    k = numpy_helper.from_array(rng.integers(-100, 100, (3, 4)).astype(np.int32), "K")
    h = numpy_helper.from_array(np.array([100.0], dtype=np.float32), "H")
    nodes = [helper.make_node("Mul", ["X", "H"], ["xs"]), helper.make_node("Cast", ["xs"], ["xi"], to=TensorProto.INT32)]
    outs = []
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]:
        ins = ["xi"] if op == "BitwiseNot" else ["xi", "K"]
        nodes.append(helper.make_node(op, ins, [op + "_i"]))
        nodes.append(helper.make_node("Cast", [op + "_i"], [op], to=TensorProto.FLOAT))
        outs.append(helper.make_tensor_value_info(op, TensorProto.FLOAT, [3, 4]))
    ints = [helper.make_tensor_value_info(n, TensorProto.INT32, [3, 4])
            for n in ["xi", "BitwiseAnd_i", "BitwiseOr_i", "BitwiseXor_i", "BitwiseNot_i"]]
    g = helper.make_graph(nodes, "bitwise", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 4])], outs,
                          [k, h], value_info=ints)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    save(m, os.path.join(out_dir, "bitwise.onnx"))
    print("bitwise 3x4 -")


def chain(name, out_dir, xshape, nodes, inits, opset=13, green="-", ms=False):
    """A small graph from X through nodes to Y (float), for ops whose inputs
    are not floats (quantised ones: X is quantised first) or that need
    helper nodes around them; ms: the graph imports com.microsoft too."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(xshape))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 10 if opset >= 21 else 8
    save(m, os.path.join(out_dir, name + ".onnx"))
    print(name, "x".join(str(d) for d in xshape), green)


def arr(name, a, dtype):
    return numpy_helper.from_array(np.asarray(a).astype(dtype), name)


def quantised(out_dir):
    """The integer products inside QuantizeLinear -> op -> DequantizeLinear
    (or Cast), with per-channel/per-column scales and zero points."""
    rng = np.random.default_rng(31)
    q = [arr("xs", 0.02, np.float32), arr("xzp", 128, np.uint8)]
    quant = helper.make_node("QuantizeLinear", ["X", "xs", "xzp"], ["xq"])
    # QLinearConv: uint8 x, int8 weights with per-output-channel scales, int32 bias
    w = arr("w", rng.integers(-60, 60, (4, 3, 3, 3)), np.int8)
    ws = arr("ws", rng.uniform(0.005, 0.02, 4), np.float32)
    chain("qlinearconv", out_dir, (1, 3, 7, 7), [
        quant,
        helper.make_node("QLinearConv", ["xq", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"], ["yq"],
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yzp"], ["Y"])],
        q + [w, ws, arr("wzp", 0, np.int8), arr("ys", 0.05, np.float32), arr("yzp", 120, np.uint8),
             arr("b", rng.integers(-500, 500, 4), np.int32)])
    # QLinearMatMul: batched a, b with one scale (ORT's CPU kernel takes per-tensor b)
    chain("qlinearmatmul", out_dir, (2, 3, 8), [
        quant,
        helper.make_node("QLinearMatMul", ["xq", "xs", "xzp", "bm", "bs", "bzp", "ys", "yzp"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yzp"], ["Y"])],
        q + [arr("bm", rng.integers(0, 255, (8, 5)), np.uint8), arr("bs", 0.01, np.float32),
             arr("bzp", 130, np.uint8), arr("ys", 0.04, np.float32), arr("yzp", 100, np.uint8)])
    # MatMulInteger with a per-column zero point for b
    chain("matmulinteger", out_dir, (2, 3, 8), [
        quant,
        helper.make_node("MatMulInteger", ["xq", "bm", "xzp", "bzp"], ["yi"]),
        helper.make_node("Cast", ["yi"], ["Y"], to=TensorProto.FLOAT)],
        q + [arr("bm", rng.integers(0, 255, (8, 5)), np.uint8), arr("bzp", rng.integers(100, 150, 5), np.uint8)])
    # ConvInteger, grouped, strided, padded
    chain("convinteger", out_dir, (1, 4, 6, 6), [
        quant,
        helper.make_node("ConvInteger", ["xq", "w2", "xzp", "wzp2"], ["yi"], group=2, pads=[1, 0, 1, 0],
                         strides=[1, 2]),
        helper.make_node("Cast", ["yi"], ["Y"], to=TensorProto.FLOAT)],
        q + [arr("w2", rng.integers(0, 255, (4, 2, 3, 3)), np.uint8), arr("wzp2", 128, np.uint8)])


def detect_pool_unique(out_dir):
    rng = np.random.default_rng(32)
    rois = arr("rois", [[0.5, 0.5, 6.0, 5.0], [1.0, 2.0, 7.5, 7.5], [-1.0, 3.0, 4.0, 9.0]], np.float32)
    bidx = arr("bi", [0, 1, 1], np.int64)
    chain("roialign_max", out_dir, (2, 3, 8, 8), [
        helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], mode="max", output_height=3, output_width=2,
                         sampling_ratio=2)], [rois, bidx], opset=16, green="RoiAlign")
    chain("roialign_avg_scaled", out_dir, (2, 3, 8, 8), [
        helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], output_height=2, output_width=3,
                         spatial_scale=0.75)], [rois, bidx], opset=16, green="RoiAlign")
    chain("roialign_opset10", out_dir, (2, 3, 8, 8), [
        helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], output_height=2, output_width=2,
                         sampling_ratio=1)], [rois, bidx], opset=10, green="RoiAlign")
    chain("maxunpool", out_dir, (1, 2, 6, 6), [
        helper.make_node("MaxPool", ["X"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["p", "i"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])], [], opset=11,
        green="MaxUnpool")
    # values on a coarse grid, so that there are repeats (integers: exact in
    # fp16, so no fp16 report)
    grid = [helper.make_node("Mul", ["X", "four"], ["x4"]), helper.make_node("Floor", ["x4"], ["xf"])]
    four = arr("four", 2.0, np.float32)
    chain("unique_sorted", out_dir, (4, 5), grid + [
        helper.make_node("Unique", ["xf"], ["Y", "idx", "inv", "cnt"])], [four], opset=11)
    chain("unique_axis_unsorted", out_dir, (6, 2), grid + [
        helper.make_node("Unique", ["xf"], ["Y", "idx", "inv", "cnt"], axis=0, sorted=0)], [four], opset=11)


def nbits_rotary(out_dir):
    """MatMulNBits (block-quantised weights: 4 and 8 bits, packed and absent
    zero points, K not a multiple of the block) and RotaryEmbedding in both
    its forms (com.microsoft; ONNX opset 23)."""
    rng = np.random.default_rng(33)
    ms = "com.microsoft"
    for name, K, N, bits, bs, zp in [("matmulnbits_4bit_zp", 64, 5, 4, 32, True),
                                     ("matmulnbits_4bit_k40", 40, 3, 4, 16, False),
                                     ("matmulnbits_8bit_zp", 48, 4, 8, 16, True)]:
        blocks = (K + bs - 1) // bs
        b = arr("B", rng.integers(0, 256, (N, blocks, bs * bits // 8)), np.uint8)
        sc = arr("sc", rng.uniform(0.01, 0.05, N * blocks), np.float32)
        ins, inits = ["X", "B", "sc"], [b, sc]
        if zp:
            zpb = (blocks * bits + 7) // 8
            inits.append(arr("zp", rng.integers(0, 256, N * zpb), np.uint8))
            ins.append("zp")
        else:
            ins.append("")
        ins += ["", "bias"]
        inits.append(arr("bias", rng.standard_normal(N) * 0.1, np.float32))
        chain(name, out_dir, (2, 3, K), [helper.make_node("MatMulNBits", ins, ["Y"], domain=ms, K=K, N=N, bits=bits,
                                                          block_size=bs)], inits, opset=17, green="MatMulNBits",
              ms=True)
    ang = np.arange(10)[:, None] * (1.0 / 10000 ** (np.arange(4) / 4))[None, :]
    cos, sin = arr("cos", np.cos(ang), np.float32), arr("sin", np.sin(ang), np.float32)
    pos = arr("pos", [[3, 0, 7, 9]], np.int64)
    chain("rotary_ms_3d", out_dir, (1, 4, 16), [
        helper.make_node("RotaryEmbedding", ["X", "pos", "cos", "sin"], ["Y"], domain=ms, num_heads=2,
                         rotary_embedding_dim=8)], [pos, cos, sin], opset=17, green="RotaryEmbedding", ms=True)
    chain("rotary_ms_4d_interleaved_offset", out_dir, (1, 2, 4, 8), [
        helper.make_node("RotaryEmbedding", ["X", "off", "cos", "sin"], ["Y"], domain=ms, interleaved=1)],
        [arr("off", [5], np.int64), cos, sin], opset=17, green="RotaryEmbedding", ms=True)
    chain("rotary_onnx23_4d", out_dir, (1, 2, 4, 8), [
        helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"])], [pos, cos, sin], opset=23,
        green="RotaryEmbedding")
    cos2, sin2 = arr("cos2", np.cos(ang[:2, :2]), np.float32), arr("sin2", np.sin(ang[:2, :2]), np.float32)
    chain("rotary_onnx23_partial_interleaved", out_dir, (1, 2, 12), [
        helper.make_node("RotaryEmbedding", ["X", "cos2", "sin2", "pos2"], ["Y"], num_heads=2, interleaved=1,
                         rotary_embedding_dim=4)], [arr("pos2", [[1, 0]], np.int64), cos2, sin2], opset=23,
        green="RotaryEmbedding")


def attention(out_dir):
    """ONNX's Attention (opset 23: 4-D, causal, GQA with 3-D inputs and a
    float mask, a boolean mask with a past cache and the present outputs,
    softcap) and com.microsoft MultiHeadAttention (projection bias, key
    padding mask, attention bias, causal) and Attention (the BERT form with
    its projection, key counts as mask_index)."""
    rng = np.random.default_rng(34)
    ms = "com.microsoft"

    def r(name, shape, sc=0.5):
        return arr(name, rng.standard_normal(shape) * sc, np.float32)
    chain("attention23_4d_causal", out_dir, (2, 2, 3, 4), [
        helper.make_node("Attention", ["X", "K", "V"], ["Y"], is_causal=1)],
        [r("K", (2, 2, 3, 4)), r("V", (2, 2, 3, 5))], opset=23, green="Attention")
    chain("attention23_gqa_3d_mask", out_dir, (2, 3, 16), [
        helper.make_node("Attention", ["X", "K", "V", "M"], ["Y"], q_num_heads=4, kv_num_heads=2, scale=0.3)],
        [r("K", (2, 5, 8)), r("V", (2, 5, 6)), r("M", (3, 5))], opset=23, green="Attention")
    mask = arr("M", rng.integers(0, 2, (2, 1, 3, 6)).astype(bool) | np.eye(3, 6, 3, dtype=bool)[None, None], bool)
    chain("attention23_past_boolmask", out_dir, (2, 2, 3, 4), [
        helper.make_node("Attention", ["X", "K", "V", "M", "PK", "PV"], ["Y", "pk", "pv"])],
        [r("K", (2, 2, 3, 4)), r("V", (2, 2, 3, 4)), mask, r("PK", (2, 2, 3, 4)), r("PV", (2, 2, 3, 4))], opset=23,
        green="Attention")
    chain("attention23_softcap", out_dir, (1, 2, 4, 4), [
        helper.make_node("Attention", ["X", "K", "V"], ["Y"], softcap=2.0, scale=1.5)],
        [r("K", (1, 2, 4, 4), 1.0), r("V", (1, 2, 4, 4))], opset=23, green="Attention")
    chain("mha_bias_masks", out_dir, (2, 3, 8), [
        helper.make_node("MultiHeadAttention", ["X", "K", "V", "b", "kpm", "ab"], ["Y"], domain=ms, num_heads=2)],
        [r("K", (2, 4, 8)), r("V", (2, 4, 8)), r("b", (24,), 0.2), arr("kpm", [[1, 1, 1, 0], [1, 0, 1, 1]], np.int32),
         r("ab", (1, 2, 3, 4))], opset=17, green="MultiHeadAttention", ms=True)
    chain("mha_causal_4d_kv", out_dir, (1, 3, 8), [
        helper.make_node("MultiHeadAttention", ["X", "K", "V"], ["Y"], domain=ms, num_heads=2, unidirectional=1,
                         scale=0.4)],
        [r("K", (1, 2, 3, 4)), r("V", (1, 2, 3, 4))], opset=17, green="MultiHeadAttention", ms=True)
    chain("ms_attention_bert", out_dir, (2, 3, 8), [
        helper.make_node("Attention", ["X", "W", "b", "mi"], ["Y"], domain=ms, num_heads=2)],
        [r("W", (8, 24)), r("b", (24,), 0.2), arr("mi", [3, 2], np.int32)], opset=17, green="Attention", ms=True)
    chain("ms_attention_causal_2dmask", out_dir, (2, 4, 8), [
        helper.make_node("Attention", ["X", "W", "b", "mi"], ["Y"], domain=ms, num_heads=4, unidirectional=1)],
        [r("W", (8, 24)), r("b", (24,), 0.2), arr("mi", [[1, 1, 1, 1], [1, 1, 0, 1]], np.int32)], opset=17,
        green="Attention", ms=True)


def gqa(out_dir):
    """com.microsoft GroupQueryAttention as LLM exports use it: a first prompt
    (4 query heads over 2 key/value heads), a decoding step with a past cache,
    rotary embedding inside (plain and interleaved), a local window with
    softcap and smooth softmax, and packed QKV."""
    rng = np.random.default_rng(35)
    ms = "com.microsoft"

    def r(name, shape, sc=0.5):
        return arr(name, rng.standard_normal(shape) * sc, np.float32)
    i32 = lambda name, v: arr(name, v, np.int32)  # noqa: E731
    # ORT's CPU kernel rotates heads of a multiple of 16 values only
    ang = np.arange(16)[:, None] * (1.0 / 10000 ** (np.arange(8) / 8))[None, :]
    cos, sin = arr("cos", np.cos(ang), np.float32), arr("sin", np.sin(ang), np.float32)
    common = dict(domain=ms, num_heads=4, kv_num_heads=2)
    chain("gqa_prompt", out_dir, (2, 4, 32), [
        helper.make_node("GroupQueryAttention", ["X", "K", "V", "", "", "sl", "ts"], ["Y", "pk", "pv"], **common)],
        [r("K", (2, 4, 16)), r("V", (2, 4, 16)), i32("sl", [3, 3]), i32("ts", 4)], opset=17,
        green="GroupQueryAttention", ms=True)
    chain("gqa_decode_past", out_dir, (2, 1, 32), [
        helper.make_node("GroupQueryAttention", ["X", "K", "V", "PK", "PV", "sl", "ts"], ["Y", "pk", "pv"],
                         **common)],
        [r("K", (2, 1, 16)), r("V", (2, 1, 16)), r("PK", (2, 2, 5, 8)), r("PV", (2, 2, 5, 8)), i32("sl", [5, 5]),
         i32("ts", 6)], opset=17, green="GroupQueryAttention", ms=True)
    chain("gqa_rotary", out_dir, (1, 5, 64), [
        helper.make_node("GroupQueryAttention", ["X", "K", "V", "", "", "sl", "ts", "cos", "sin"], ["Y"],
                         do_rotary=1, **common)],
        [r("K", (1, 5, 32)), r("V", (1, 5, 32)), i32("sl", [4]), i32("ts", 5), cos, sin], opset=17,
        green="GroupQueryAttention", ms=True)
    chain("gqa_rotary_interleaved_decode", out_dir, (1, 2, 64), [
        helper.make_node("GroupQueryAttention", ["X", "K", "V", "PK", "PV", "sl", "ts", "cos", "sin"], ["Y", "pk", "pv"],
                         do_rotary=1, rotary_interleaved=1, **common)],
        [r("K", (1, 2, 32)), r("V", (1, 2, 32)), r("PK", (1, 2, 3, 16)), r("PV", (1, 2, 3, 16)), i32("sl", [4]),
         i32("ts", 5), cos, sin], opset=17, green="GroupQueryAttention", ms=True)
    chain("gqa_window_softcap_smooth", out_dir, (1, 6, 32), [
        helper.make_node("GroupQueryAttention", ["X", "K", "V", "", "", "sl", "ts"], ["Y"], local_window_size=2,
                         softcap=3.0, smooth_softmax=1, scale=0.5, **common)],
        [r("K", (1, 6, 16), 1.0), r("V", (1, 6, 16)), i32("sl", [5]), i32("ts", 6)], opset=17,
        green="GroupQueryAttention", ms=True)
    chain("gqa_packed", out_dir, (2, 3, 64), [
        helper.make_node("GroupQueryAttention", ["X", "", "", "", "", "sl", "ts"], ["Y"], **common)],
        [i32("sl", [2, 2]), i32("ts", 3)], opset=17, green="GroupQueryAttention", ms=True)


def newer_ops(out_dir):
    """CenterCropPad (crop and pad, on chosen axes), Col2Im (strides,
    dilations, pads), AffineGrid feeding GridSample (2-D, align_corners both
    ways; 3-D), MaxRoiPool (scaled rois)."""
    rng = np.random.default_rng(36)
    i64 = lambda name, v: arr(name, v, np.int64)  # noqa: E731
    chain("centercroppad", out_dir, (3, 8, 5), [
        helper.make_node("CenterCropPad", ["X", "sh"], ["Y"], axes=[1, 2])], [i64("sh", [5, 8])], opset=18,
        green="CenterCropPad")
    chain("col2im", out_dir, (1, 12, 9), [
        helper.make_node("Col2Im", ["X", "img", "blk"], ["Y"], strides=[2, 1], dilations=[1, 2], pads=[1, 0, 1, 1])],
        [i64("img", [5, 6]), i64("blk", [2, 3])], opset=18, green="Col2Im")
    theta = arr("th", rng.standard_normal((2, 2, 3)) * 0.5 + np.array([[1, 0, 0], [0, 1, 0]]), np.float32)
    for align in (0, 1):
        chain(f"affinegrid_align{align}", out_dir, (2, 3, 4, 5), [
            helper.make_node("AffineGrid", ["th", "sz"], ["g"], align_corners=align),
            helper.make_node("GridSample", ["X", "g"], ["Y"], align_corners=align)],
            [theta, i64("sz", [2, 3, 6, 7])], opset=20, green="AffineGrid")
    chain("affinegrid_3d", out_dir, (1, 2), [
        helper.make_node("AffineGrid", ["th3", "sz3"], ["g"]),
        helper.make_node("ReduceSum", ["g", "ax"], ["s"], keepdims=0),
        helper.make_node("MatMul", ["X", "s2"], ["Y"])],
        [arr("th3", rng.standard_normal((1, 3, 4)), np.float32), i64("sz3", [1, 1, 2, 3, 4]), i64("ax", [4]),
         arr("s2", rng.standard_normal((2, 3)), np.float32)], opset=20)
    chain("deformconv", out_dir, (1, 4, 7, 6), [
        helper.make_node("DeformConv", ["X", "w", "off", "b", "m"], ["Y"], pads=[1, 1, 1, 1], strides=[1, 2],
                         group=2, offset_group=2)],
        [arr("w", rng.standard_normal((6, 2, 3, 3)) * 0.3, np.float32),
         arr("off", rng.standard_normal((1, 2 * 2 * 9, 7, 3)) * 1.5, np.float32),
         arr("b", rng.standard_normal(6) * 0.1, np.float32),
         arr("m", rng.uniform(0, 1, (1, 2 * 9, 7, 3)), np.float32)], opset=19, green="DeformConv")
    chain("deformconv_plain", out_dir, (2, 3, 5, 5), [
        helper.make_node("DeformConv", ["X", "w2", "off2"], ["Y"], dilations=[2, 1])],
        [arr("w2", rng.standard_normal((4, 3, 2, 2)) * 0.3, np.float32),
         arr("off2", rng.standard_normal((2, 8, 3, 4)), np.float32)], opset=19, green="DeformConv")
    chain("maxroipool", out_dir, (2, 3, 10, 12), [
        helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], pooled_shape=[3, 2], spatial_scale=0.5)],
        [arr("rois", [[0, 2, 2, 15, 12], [1, 0, 5, 9, 19], [1, 20, 1, 23, 3]], np.float32)], opset=16,
        green="MaxRoiPool")


def spectral(out_dir):
    """DFT (opset 17 axis attribute; opset 20 axis input; one-sided; inverse
    of a complex signal; dft_length padding and cutting), STFT (a Hann
    window, complex signal, two-sided) and MelWeightMatrix feeding a MatMul."""
    i64 = lambda name, v: arr(name, v, np.int64)  # noqa: E731
    chain("dft17_onesided_pad", out_dir, (2, 12, 1), [
        helper.make_node("DFT", ["X", "n"], ["Y"], axis=1, onesided=1)], [i64("n", 16)], opset=17, green="DFT")
    chain("dft20_axis_inverse_cut", out_dir, (2, 3, 10, 2), [
        helper.make_node("DFT", ["X", "n", "ax"], ["Y"], inverse=1)], [i64("n", 7), i64("ax", 2)], opset=20,
        green="DFT")
    chain("stft_hann", out_dir, (1, 64, 1), [
        helper.make_node("HannWindow", ["wl"], ["w"]),
        helper.make_node("STFT", ["X", "step", "w"], ["Y"])], [i64("wl", 16), i64("step", 6)], opset=17, green="STFT")
    chain("stft_complex_twosided", out_dir, (2, 40, 2), [
        helper.make_node("STFT", ["X", "step", "", "fl"], ["Y"], onesided=0)], [i64("step", 5), i64("fl", 10)],
        opset=17, green="STFT")
    # a log-mel front end: |STFT|^2 @ mel weights
    chain("logmel", out_dir, (1, 400, 1), [
        helper.make_node("HannWindow", ["wl"], ["w"]),
        helper.make_node("STFT", ["X", "step", "w"], ["s"]),
        helper.make_node("ReduceSumSquare", ["s", "last"], ["p"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["nmel", "wl", "rate", "lo", "hi"], ["mw"]),
        helper.make_node("MatMul", ["p", "mw"], ["Y"])],
        [i64("wl", 64), i64("step", 32), i64("last", [-1]), i64("nmel", 10), i64("rate", 16000),
         arr("lo", 20.0, np.float32), arr("hi", 7600.0, np.float32)], opset=18, green="STFT")


def biasadd(out_dir):
    """BiasAdd (X + bias + skip), which ORT has for CUDA only: ORT checks it
    through the same sum written as two ONNX Adds with the same weights
    (the fourth column names that model)."""
    name = "ms_biasadd"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    bias = numpy_helper.from_array((rng.standard_normal((8,)) * 0.5).astype(np.float32), "I0")
    skip = numpy_helper.from_array(rng.standard_normal((2, 3, 8)).astype(np.float32), "I1")
    x = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8])]
    y = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3, 8])]
    for stem, nodes, opsets in [
            (name, [helper.make_node("BiasAdd", ["X", "I0", "I1"], ["Y"], domain="com.microsoft")],
             [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]),
            (name + "_ref", [helper.make_node("Add", ["X", "I0"], ["t"]), helper.make_node("Add", ["t", "I1"], ["Y"])],
             [helper.make_opsetid("", 17)])]:
        m = helper.make_model(helper.make_graph(nodes, stem, x, y, [bias, skip]), opset_imports=opsets)
        m.ir_version = 8
        save(m, os.path.join(out_dir, stem + ".onnx"))
    # the tensor-to-producer map ort_run.js reads beside an all-outputs model
    with open(os.path.join(out_dir, name + "_ref.json"), "w") as f:
        json.dump({"Y": ["#1", "Add"]}, f)
    print(name, "2x3x8", "BiasAdd", name + "_ref")


def fast_paths(out_dir):
    """The shapes that take kern_resize.c's separable linear path,
    kern_norm.c's long InstanceNormalization planes, kern_einsum.c's MatMul
    route, kern_nn.c's 3-D Conv on the GEMM core and kern_pool.c's 3-D
    MaxPool by planes, each against ONNX Runtime."""
    single("maxpool3d_pads_ceil", "MaxPool", out_dir, (1, 3, 5, 9, 10), 13, kernel_shape=[2, 3, 3],
           strides=[2, 2, 1], pads=[1, 1, 0, 0, 1, 1], ceil_mode=1)
    single("maxpool3d_dil", "MaxPool", out_dir, (2, 2, 6, 7, 8), 13, kernel_shape=[3, 2, 2], dilations=[2, 1, 2])
    single("conv3d_pads_strides", "Conv", out_dir, (1, 4, 5, 9, 8), 13, [((6, 4, 3, 3, 3), 0.3, 0.0), ((6,), 0.2, 0.0)],
           strides=[2, 1, 2], pads=[1, 1, 0, 1, 0, 1], dilations=[1, 2, 1])
    single("conv3d_groups", "Conv", out_dir, (2, 6, 4, 6, 6), 13, [((4, 3, 2, 3, 3), 0.3, 0.0)], group=2,
           pads=[0, 1, 1, 1, 1, 1])
    single("conv3d_depthwise", "Conv", out_dir, (1, 5, 4, 7, 7), 13, [((5, 1, 3, 3, 3), 0.3, 0.0)], group=5,
           pads=[1, 1, 1, 1, 1, 1])
    single("convtranspose_k4s2p1", "ConvTranspose", out_dir, (1, 6, 7, 9), 13,
           [((6, 5, 4, 4), 0.3, 0.0), ((5,), 0.2, 0.0)], strides=[2, 2], pads=[1, 1, 1, 1])
    single("convtranspose_groups_outpad", "ConvTranspose", out_dir, (2, 4, 5, 6), 13, [((4, 3, 3, 5), 0.3, 0.0)],
           group=2, strides=[2, 3], pads=[0, 1, 2, 0], output_padding=[1, 2])
    single("convtranspose_1d", "ConvTranspose", out_dir, (1, 3, 11), 13, [((3, 4, 5), 0.3, 0.0)], strides=[3],
           pads=[2, 1])
    single("instancenorm_long", "InstanceNormalization", out_dir, (2, 3, 37, 61), 13,
           [((3,), 0.5, 1.0), ((3,), 0.3, 0.0)], epsilon=1e-4)
    single("einsum_btd_ed", "Einsum", out_dir, (2, 7, 70), 12, [((9, 70), 0.3, 0.0)], equation="btd,ed->bte")
    single("einsum_perm", "Einsum", out_dir, (3, 5, 4), 12, [((5, 4, 6), 0.3, 0.0)], equation="ijk,jkl->li")
    single("einsum_bts", "Einsum", out_dir, (2, 6, 8), 12, [((2, 5, 8), 0.3, 0.0)], equation="btd,bsd->bst")
    # in x scale whole: ORT's align_corners maps onto the output's length,
    # the operator text onto in x scale (kern_resize.c)
    for ct in ("half_pixel", "align_corners", "pytorch_half_pixel", "asymmetric"):
        chain("resize_linear_" + ct, out_dir, (1, 3, 8, 12), [
            helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode="linear",
                             coordinate_transformation_mode=ct)],
            [arr("scales", [1, 1, 2.5, 0.75], np.float32)])
    chain("resize_cubic_sizes", out_dir, (2, 2, 11, 7), [
        helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], mode="cubic")],
        [arr("sizes", [2, 2, 20, 16], np.int64)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    model("lstm_bidir_lens", "LSTM", out, dirs=2, lens=[5, 3, 1], init_h=True, init_c=True, peep=True)
    model("lstm_reverse_clip_forget", "LSTM", out, direction="reverse", clip=0.8, input_forget=1, init_c=True)
    model("lstm_acts", "LSTM", out, activations=["HardSigmoid", "LeakyRelu", "Softsign"],
          activation_alpha=[0.3, 0.05], activation_beta=[0.4], lens=[2, 5, 4])
    # layout 1 is left to ONNX's case test_lstm_batchwise: ORT's CPU kernels
    # refuse it ("Batchwise recurrent operations (layout == 1) are not
    # supported", onnxruntime-node 1.30).
    model("gru_bidir_lens_lbr", "GRU", out, dirs=2, lens=[4, 5, 2], init_h=True, linear_before_reset=1)
    model("gru_reverse_clip", "GRU", out, direction="reverse", clip=1.5, lens=[5, 1, 3])
    model("gru_acts", "GRU", out, activations=["Sigmoid", "Relu"], init_h=True)
    model("rnn_bidir_lens", "RNN", out, dirs=2, lens=[3, 5, 4], init_h=True, activations=["Tanh", "Relu"])
    model("rnn_affine", "RNN", out, activations=["ScaledTanh"], activation_alpha=[0.7], activation_beta=[1.3])
    fast_paths(out)
    single("lpnorm_p2_axis1", "LpNormalization", out, (3, 4, 5), 17, axis=1, p=2)
    single("lpnorm_p1", "LpNormalization", out, (3, 4, 5), 17, axis=-1, p=1)
    single("globallppool_p3", "GlobalLpPool", out, (2, 3, 4, 5), 17, p=3)
    single("groupnorm18", "GroupNormalization", out, (2, 6, 4, 4), 18, [((3,), 0.5, 1.0), ((3,), 0.3, 0.0)],
           num_groups=3)
    single("groupnorm21", "GroupNormalization", out, (2, 6, 4, 4), 21, [((6,), 0.5, 1.0), ((6,), 0.3, 0.0)],
           num_groups=2, epsilon=1e-3)
    single("rmsnorm", "RMSNormalization", out, (2, 3, 8), 23, [((8,), 0.5, 1.0)])
    single("rmsnorm_axis1", "RMSNormalization", out, (2, 3, 8), 23, [((3, 8), 0.5, 1.0)], axis=1)
    # grid points partly outside [-1, 1], so that every padding mode acts
    single("gridsample_bicubic_reflection", "GridSample", out, (1, 2, 5, 6), 16, [((1, 3, 4, 2), 0.7, 0.0)],
           mode="bicubic", padding_mode="reflection")
    single("gridsample_nearest_border_align", "GridSample", out, (1, 2, 5, 6), 16, [((1, 3, 4, 2), 0.7, 0.0)],
           mode="nearest", padding_mode="border", align_corners=1)
    single("gridsample_bilinear_reflection_align", "GridSample", out, (2, 1, 4, 3), 16, [((2, 2, 5, 2), 0.8, 0.0)],
           mode="bilinear", padding_mode="reflection", align_corners=1)
    bitwise(out)
    quantised(out)
    detect_pool_unique(out)
    # ONNX Runtime's contrib ops (com.microsoft), as its transformer
    # optimiser writes them
    ms = "com.microsoft"
    single("ms_fusedmatmul_transA", "FusedMatMul", out, (2, 5, 3), 17, [((5, 4), 0.5, 0.0)], domain=ms,
           transA=1, alpha=0.5)
    single("ms_fusedmatmul_transB", "FusedMatMul", out, (2, 3, 5), 17, [((2, 4, 5), 0.5, 0.0)], domain=ms,
           transB=1, alpha=1.25)
    single("ms_fusedmatmul_both", "FusedMatMul", out, (5, 3), 17, [((4, 5), 0.5, 0.0)], domain=ms,
           transA=1, transB=1)
    single("ms_gelu", "Gelu", out, (3, 8), 17, domain=ms)
    single("ms_fastgelu", "FastGelu", out, (3, 8), 17, domain=ms)
    single("ms_fastgelu_bias", "FastGelu", out, (2, 3, 8), 17, [((8,), 0.5, 0.0)], domain=ms)
    single("ms_biasgelu", "BiasGelu", out, (2, 3, 8), 17, [((8,), 0.5, 0.0)], domain=ms)
    single("ms_quickgelu", "QuickGelu", out, (3, 8), 17, domain=ms, alpha=1.25)
    biasadd(out)
    nbits_rotary(out)
    attention(out)
    spectral(out)
    gqa(out)
    newer_ops(out)
    single("ms_skiplayernorm", "SkipLayerNormalization", out, (2, 3, 8), 17,
           [((2, 3, 8), 1.0, 0.0), ((8,), 0.5, 1.0), ((8,), 0.3, 0.0), ((8,), 0.3, 0.0)], outs=4, domain=ms,
           epsilon=1e-5)
    single("ms_skiplayernorm_plain", "SkipLayerNormalization", out, (2, 3, 8), 17,
           [((2, 3, 8), 1.0, 0.0), ((8,), 0.5, 1.0)], domain=ms)
    single("ms_skipsimplified", "SkipSimplifiedLayerNormalization", out, (2, 3, 8), 17,
           [((2, 3, 8), 1.0, 0.0), ((8,), 0.5, 1.0), ((8,), 0.3, 0.0)], outs=[True, False, True, True],
           domain=ms, epsilon=1e-5)
    single("simplifiedlayernorm", "SimplifiedLayerNormalization", out, (2, 3, 8), 17, [((8,), 0.5, 1.0)], outs=2)
    single("simplifiedlayernorm_axis1", "SimplifiedLayerNormalization", out, (2, 3, 8), 17, [((3, 8), 0.5, 1.0)],
           axis=1, epsilon=1e-3)


if __name__ == "__main__":
    main()
