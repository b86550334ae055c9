#!/usr/bin/python3
"""Write the seed corpora of tests/fuzz/corpus/ (small valid inputs the
fuzzers start from; inputs that once crashed are added beside them by hand).
Needs Debian's python3-onnx, python3-numpy, python3-pil and flac.

usage: tests/fuzz/make_seeds.py
"""
import io
import os
import subprocess
import wave
import zipfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
C = os.path.join(HERE, "corpus")
ROOT = os.path.dirname(os.path.dirname(HERE))


def put(kind, name, data):
    os.makedirs(os.path.join(C, kind), exist_ok=True)
    with open(os.path.join(C, kind, name), "wb") as f:
        f.write(data)


rng = np.random.default_rng(1)
# onnx: a conv block, a shape chain that folds, a model with an attribute zoo
w = numpy_helper.from_array(rng.normal(0, 1, (4, 3, 3, 3)).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                       helper.make_node("Relu", ["c"], ["r"]),
                       helper.make_node("GlobalAveragePool", ["r"], ["y"])], "conv",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
put("onnx", "conv.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"]),
                       helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
                       helper.make_node("Concat", ["d", "m"], ["shp"], axis=0),
                       helper.make_node("Reshape", ["x", "shp"], ["y"])], "fold",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(np.array([0], np.int64), "i"),
                       numpy_helper.from_array(np.array([-1], np.int64), "m")])
put("onnx", "fold.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
g = helper.make_graph([helper.make_node("MatMul", ["x", "b"], ["m"]),
                       helper.make_node("Softmax", ["m"], ["s"], axis=-1),
                       helper.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=1),
                       helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT16)], "mix",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT16, None)],
                      [numpy_helper.from_array(rng.normal(0, 1, (5, 7)).astype(np.float32), "b")])
put("onnx", "mix.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
def varint(v):
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def field(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def nested_ifs(depth):
    """A ModelProto of depth Ifs, each in the last one's then_branch, in raw
    wire format (helper.make_model would recurse as deep as the loader once
    did): the loader must refuse it by its nesting scan, not overflow the stack."""
    g = b""
    for k in range(depth - 1, -1, -1):
        attr = field(1, b"then_branch") + varint(20 << 3) + varint(5) + field(6, g)
        node = field(3, b"n%d" % k) + field(4, b"If") + field(5, attr)
        g = field(1, node)
    return varint(1 << 3) + varint(8) + field(8, varint(2 << 3) + varint(13)) + field(7, g)


# structure the fuzzer does not reach by mutation: 3000 nested subgraphs
put("onnx", "if_deep_3000.onnx", nested_ifs(3000))

# onnx: opset 6 forms read in opset 7's (graph/onnx_legacy.c): broadcast with
# axis, Reshape's shape attribute, BatchNormalization's is_test, ImageScaler
g = helper.make_graph([helper.make_node("ImageScaler", ["x"], ["s"], scale=0.5, bias=[0.1, 0.2, 0.3]),
                       helper.make_node("Add", ["s", "b"], ["a"], broadcast=1, axis=1),
                       helper.make_node("BatchNormalization", ["a", "b", "b", "b", "v"], ["n"], is_test=1),
                       helper.make_node("Reshape", ["n"], ["y"], shape=[0, -1])], "legacy",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(np.array([0.5, -1, 2], np.float32), "b"),
                       numpy_helper.from_array(np.array([1, 2, 3], np.float32), "v")])
put("onnx", "legacy.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)]).SerializeToString())
# json: the repository's own small models
for p in ("tests/models/shared_weight.json", "examples/tiny_transformer.json"):
    with open(os.path.join(ROOT, p), "rb") as f:
        put("json", os.path.basename(p), f.read())
# tensor: .npy of several dtypes and versions, a TensorProto
for name, arr in (("f4.npy", rng.normal(0, 1, (2, 3)).astype(np.float32)), ("i8.npy", np.arange(6).reshape(3, 2)),
                  ("f2.npy", np.array([1.5, -2, 65504], np.float16)), ("u1.npy", np.array([[0, 255]], np.uint8)),
                  ("scalar.npy", np.array(3.0))):
    b = io.BytesIO()
    np.save(b, arr)
    put("tensor", name, b.getvalue())
put("tensor", "t.pb", numpy_helper.from_array(rng.normal(0, 1, (3, 2)).astype(np.float32), "t").SerializeToString())
# a SequenceProto, and an OptionalProto holding one (the container readers)
items = [np.random.default_rng(2).normal(0, 1, (2, 3)).astype(np.float32), np.arange(4, dtype=np.float32)]  # (own generator: the seeds after it stay as they were)
put("tensor", "seq.pb", numpy_helper.from_list(items, "s").SerializeToString())
put("tensor", "opt_seq.pb", numpy_helper.from_optional(items, "o").SerializeToString())
# image: PNG colour types, interlace, JPEG colour and gray
px = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
for name, im, kw in (("rgb.png", Image.fromarray(px), {}), ("gray.png", Image.fromarray(px[:, :, 0]), {}),
                     ("pal.png", Image.fromarray(px).convert("P", palette=Image.ADAPTIVE, colors=4), {}),
                     ("rgba.png", Image.fromarray(np.dstack([px, px[:, :, :1]])), {}),
                     ("inter.png", Image.fromarray(px), {"interlace": 1}),
                     ("rgb.jpg", Image.fromarray(px), {"quality": 70}), ("gray.jpg", Image.fromarray(px[:, :, 1]), {})):
    b = io.BytesIO()
    im.save(b, format="PNG" if name.endswith(".png") else "JPEG", **kw)
    put("image", name, b.getvalue())
# audio: WAV 16-bit stereo, 8-bit mono; FLAC by the flac tool
for name, ch, width, n in (("st16.wav", 2, 2, 200), ("m8.wav", 1, 1, 300)):
    b = io.BytesIO()
    with wave.open(b, "wb") as wv:
        wv.setnchannels(ch)
        wv.setsampwidth(width)
        wv.setframerate(8000)
        wv.writeframes(rng.integers(0, 256, n * ch * width, dtype=np.uint8).tobytes())
    put("audio", name, b.getvalue())
tmp = os.path.join(C, "audio", "st16.wav")
subprocess.run(["flac", "-s", "-f", "-o", os.path.join(C, "audio", "st16.flac"), tmp], check=True)
# npz: stored and deflated, two keys
for name, fn in (("plain.npz", np.savez), ("deflated.npz", np.savez_compressed)):
    b = io.BytesIO()
    fn(b, x=rng.normal(0, 1, (1, 2, 3)).astype(np.float32), sr=np.array(16000, np.int64))
    put("npz", name, b.getvalue())
# cmd: sessions of commands
for i, text in enumerate([
        "run\nreport --top 3\nassert output.rel_l2 < 1\n",
        "colour Conv green when macs >= 1K else gray\nrules\nplan --changed\nundo\nredo\ndiff\n",
        "target bf16\naccum * fp16\nrun --local\nreport --sort local --csv\ntensor relu --save t.npy\n",
        "input x random uniform -1 1 seed 3\ncompare fp16 bf16 fp8e4m3\nwhy conv\nshow gap\n",
        "sweep t in 0,1,2 : colour Conv green when macs >= $t else gray --json s.json\nsearch output.rel_l2 < 1e-3 --max-evals 5\n",
        "dot d.dot --shapes\nsvg g.svg\nhtml r.html\nplot p.svg\nexport e.onnx\nsave sess.mpx\nsource sess.mpx\n",
        "input x const 70000\ntarget fp16\nrun\nstats --save r.json\nstats --load r.json\n"]):
    put("cmd", "s%d.mpx" % i, text.encode())
