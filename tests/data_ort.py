#!/usr/bin/python3
"""ctest entry data_ort (issue 14): real inputs through real models, mpx's
fp32 reference against ONNX Runtime fed the same decoded values.

PP-OCRv4 det reads a rendered page (PNG), rec a rendered text line (JPEG),
the direction classifier a text line resized by `size`; a small audio model
(a learned filterbank: strided Conv1d, power, log, 1x1 Conv, mean over time;
seeded weights, built here with python3-onnx) reads speech that espeak-ng
spoke, resampled by mpx from 22050 to 16000 Hz. mpx decodes and runs; its
decoded input (tensor <input> --save-ref) is fed to onnxruntime-node
(tests/ort_feed.js); every model output must agree: rel_l2 < 1e-5. (That the
decoding itself is right is data_check's: bit for bit against PIL, wave and
flac.)

usage: data_ort.py <mpx> <source_dir> <cache_dir> <work_dir>
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image, ImageDraw

MPX, SRC, CACHE, W = sys.argv[1:5]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
env = dict(l.split("=", 1) for l in subprocess.run([SRC + "/scripts/fetch-models.sh", CACHE], capture_output=True,
                                                    text=True, check=True).stdout.split())
MODELS, ORT = (os.path.abspath(env[k].strip("'")) for k in ("MODELS", "ORT"))
fails = 0


def text_image(path, size, lines, scale):
    im = Image.new("RGB", size, (250, 248, 240))
    d = ImageDraw.Draw(im)
    y = 4
    for t in lines:
        small = Image.new("RGB", (size[0] // scale, 12), (250, 248, 240))
        ImageDraw.Draw(small).text((2, 0), t, fill=(20, 20, 30))
        im.paste(small.resize((size[0], 12 * scale), Image.NEAREST), (0, y))
        y += 12 * scale + 6
    if path.endswith(".jpg"):
        im.save(path, quality=92)
    else:
        im.save(path)


def agree(label, model, script_inputs, input_name, outputs):
    global fails
    d = os.path.join(W, label)
    os.makedirs(d)
    saves = "; ".join("tensor %s --save-ref %s/out%d.npy" % (o, d, i) for i, o in enumerate(outputs))
    script = "load %s; %s; target fp16; run; tensor %s --save-ref %s/in.npy; %s" % (model, script_inputs, input_name, d, saves)
    r = subprocess.run([MPX, "-c", script], capture_output=True, text=True)
    if r.returncode != 0:
        fails += 1
        print("data_ort %s: FAIL: mpx: %s" % (label, (r.stdout + r.stderr)[-1500:]))
        return
    r = subprocess.run(["node", SRC + "/tests/ort_feed.js", ORT, model, d + "/ort", "%s=%s/in.npy" % (input_name, d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fails += 1
        print("data_ort %s: FAIL: ORT: %s" % (label, r.stderr))
        return
    x = np.load(d + "/in.npy")
    for i, o in enumerate(outputs):
        m, t = np.load("%s/out%d.npy" % (d, i)).astype(np.float64), np.load("%s/ort/%d.npy" % (d, i)).astype(np.float64)
        rel = np.linalg.norm(m - t) / np.linalg.norm(t) if m.shape == t.shape else float("inf")
        ok = rel < 1e-5
        fails += not ok
        print("data_ort %s: input %s %s (range %.3g..%.3g), output %s %s: rel_l2 %.3g against ORT %s" %
              (label, input_name, "x".join(map(str, x.shape)), x.min(), x.max(), o, "x".join(map(str, m.shape)), rel,
               "ok" if ok else "FAIL (bound 1e-5)"))


def outputs_of(path):
    return [o.name for o in onnx.load(path, load_external_data=False).graph.output]


def input_of(path):
    return onnx.load(path, load_external_data=False).graph.input[0].name


text_image(W + "/page.png", (320, 256), ["mpx reads images", "through libpng", "PRECISION 16 bit", "float vs half"], 2)
text_image(W + "/line.jpg", (320, 48), ["Mixed precision 123"], 3)
text_image(W + "/cls.png", (400, 60), ["upside down?"], 4)
DET = MODELS + "/ch_PP-OCRv4_det_infer.onnx"
REC = MODELS + "/ch_PP-OCRv4_rec_infer.onnx"
CLS = MODELS + "/ch_ppocr_mobile_v2.0_cls_infer.onnx"
agree("det", DET, "input %s image %s/page.png mean 0.485,0.456,0.406 std 0.229,0.224,0.225" % (input_of(DET), W),
      input_of(DET), outputs_of(DET))
agree("rec", REC, "input %s image %s/line.jpg mean 0.5 std 0.5" % (input_of(REC), W), input_of(REC), outputs_of(REC))
agree("cls", CLS, "input %s image %s/cls.png size 48x192 mean 0.5 std 0.5" % (input_of(CLS), W), input_of(CLS),
      outputs_of(CLS))

# ---- speech through an audio model
r = subprocess.run(["espeak-ng", "-w", W + "/speech.wav", "mixed precision keeps the model accurate"], capture_output=True)
if r.returncode != 0:
    fails += 1
    print("data_ort audio: FAIL: espeak-ng: %s" % r.stderr)
else:
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.normal(0, 0.05, (16, 1, 400)).astype(np.float32), "fb"),
             numpy_helper.from_array(rng.normal(0, 0.3, (8, 16, 1)).astype(np.float32), "proj"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array(1e-3, np.float32), "eps")]
    nodes = [helper.make_node("Unsqueeze", ["audio", "axis1"], ["a3"]),
             helper.make_node("Conv", ["a3", "fb"], ["frames"], strides=[160]),
             helper.make_node("Mul", ["frames", "frames"], ["power"]),
             helper.make_node("Add", ["power", "eps"], ["power_eps"]),
             helper.make_node("Log", ["power_eps"], ["logp"]),
             helper.make_node("Conv", ["logp", "proj"], ["h"]),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("ReduceMean", ["hr"], ["emb"], axes=[2], keepdims=0)]
    g = helper.make_graph(nodes, "speech_fb", [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "n"])],
                          [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [1, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="mpx tests/data_ort.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, W + "/speech_fb.onnx")
    agree("audio", W + "/speech_fb.onnx", "input audio audio %s/speech.wav rate 16000" % W, "audio", ["emb"])

print("data_ort: %d failed" % fails)
sys.exit(1 if fails else 0)
