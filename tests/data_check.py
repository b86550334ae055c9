#!/usr/bin/python3
"""ctest entry data_check (issue 14): images, audio and .npy files as model
inputs, checked against independent decoders bit for bit.

Generated files: PNGs (RGB, RGBA, gray, palette, 16-bit gray, interlaced),
JPEGs (colour, gray), a stereo int16 WAV, a mono FLAC (encoded by the flac
tool from a WAV python's wave module wrote). mpx decodes each into an Identity
model's input; `tensor y --save-ref` writes what mpx made. The expected values
come from PIL (same libjpeg-turbo, independent PNG path) and python's wave
module, put through the documented arithmetic in numpy (float64, one rounding
to float32). Then the refusals: truncated and corrupt files, a folder, a text
file, a CMYK JPEG, channels that do not fit, integer .npy without `convert`.

usage: data_check.py <mpx> <work_dir>
"""
import os
import shutil
import subprocess
import sys
import wave

import numpy as np
from PIL import Image

MPX, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
fails = 0
checks = 0


def fail(msg):
    global fails
    fails += 1
    print("data_check: FAIL:", msg)


def model(name, shape):
    path = os.path.join(W, name + ".json")
    with open(path, "w") as f:
        f.write('{"format": "mpx-model", "version": 1, "name": "%s", "opset": 17,\n'
                ' "inputs": [{"name": "x", "type": "float32", "shape": %s}],\n'
                ' "outputs": [{"name": "y", "type": "float32", "shape": %s}],\n'
                ' "nodes": [{"name": "id", "op": "Identity", "inputs": ["x"], "outputs": ["y"]}]}\n'
                % (name, shape, shape))
    return path


NCHW = model("nchw", '[1, 3, "h", "w"]')
NHWC = model("nhwc", '[1, "h", "w", 3]')
GRAY = model("gray", '[1, 1, "h", "w"]')
AUDIO = model("audio", '[1, "n"]')


def mpx(script):
    return subprocess.run([MPX, "-c", script], capture_output=True, text=True)


def got(model_path, input_cmd):
    out = os.path.join(W, "got.npy")
    if os.path.exists(out):
        os.remove(out)
    r = mpx("load %s; %s; run; tensor y --save-ref %s" % (model_path, input_cmd, out))
    if r.returncode != 0:
        fail("%s: exit %d: %s" % (input_cmd, r.returncode, r.stdout + r.stderr))
        return None
    return np.load(out)


def same(what, a, b):
    global checks
    checks += 1
    if a is None:
        return
    if a.shape != b.shape:
        fail("%s: shape %s, expected %s" % (what, a.shape, b.shape))
    elif a.dtype != np.float32 or not np.array_equal(a.view(np.uint32), b.astype(np.float32).view(np.uint32)):
        d = np.abs(a.astype(np.float64) - b)
        fail("%s: %d of %d values differ (max %g)" % (what, int((d > 0).sum()), d.size, d.max()))


def pixels_rgb(path):
    """8-bit RGB pixels as PIL decodes them (alpha dropped, palette expanded)."""
    im = Image.open(path)
    if im.mode in ("I;16", "I"):
        return np.repeat((np.asarray(im).astype(np.uint16) >> 8)[:, :, None], 3, axis=2).astype(np.float64)
    if im.mode == "L":
        return np.repeat(np.asarray(im)[:, :, None], 3, axis=2).astype(np.float64)
    return np.asarray(im.convert("RGB")).astype(np.float64)


def gray_of(rgb, path):
    im = Image.open(path)
    if im.mode in ("L", "I;16", "I"):
        return rgb[:, :, 0]
    return 0.299 * rgb[:, :, 0] + 0.587 * rgb[:, :, 1] + 0.114 * rgb[:, :, 2]


def resize(p, h, w):
    """Bilinear, half-pixel centres, no antialiasing; p is HxWxC float64."""
    ih, iw = p.shape[:2]

    def axis(n_out, n_in):
        s = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
        s = np.clip(s, 0, n_in - 1)
        i0 = np.floor(s).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, s - i0

    y0, y1, wy = axis(h, ih)
    x0, x1, wx = axis(w, iw)
    wy, wx = wy[:, None, None], wx[None, :, None]
    p00, p01 = p[y0][:, x0], p[y0][:, x1]
    p10, p11 = p[y1][:, x0], p[y1][:, x1]
    return (1 - wy) * ((1 - wx) * p00 + wx * p01) + wy * ((1 - wx) * p10 + wx * p11)


def expect_image(path, layout="nchw", channels="rgb", size=None, scale=1.0, mean=(0, 0, 0), std=(1, 1, 1)):
    rgb = pixels_rgb(path)
    p = gray_of(rgb, path)[:, :, None] if channels == "gray" else rgb[:, :, ::-1] if channels == "bgr" else rgb
    if size:
        p = resize(p, size[0], size[1])
    c = p.shape[2]
    v = ((p / 255.0) * scale - np.array(mean[:c], np.float64)) / np.array(std[:c], np.float64)
    v = v.astype(np.float32)
    return v.transpose(2, 0, 1)[None] if layout == "nchw" else v[None]


rng = np.random.default_rng(7)
rgb = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
smooth = np.clip(np.add.outer(np.arange(40) * 3, np.arange(60) * 2)[:, :, None] + np.array([0, 40, 90]), 0, 255).astype(np.uint8)
files = {}
Image.fromarray(rgb).save(os.path.join(W, "rgb.png")); files["rgb.png"] = "RGB"
Image.fromarray(rgb).save(os.path.join(W, "inter.png"), interlace=1); files["inter.png"] = "RGB interlaced"
Image.fromarray(np.dstack([rgb, rgb[:, :, :1]])).save(os.path.join(W, "rgba.png")); files["rgba.png"] = "RGBA"
Image.fromarray(rgb[:, :, 1]).save(os.path.join(W, "gray.png")); files["gray.png"] = "gray"
Image.fromarray(rgb).convert("P", palette=Image.ADAPTIVE, colors=16).save(os.path.join(W, "pal.png")); files["pal.png"] = "palette"
Image.fromarray(rng.integers(0, 65536, (21, 17), dtype=np.uint16)).save(os.path.join(W, "g16.png")); files["g16.png"] = "16-bit gray"
Image.fromarray(smooth).save(os.path.join(W, "rgb.jpg"), quality=85); files["rgb.jpg"] = "JPEG colour"
Image.fromarray(smooth[:, :, 0]).save(os.path.join(W, "gray.jpg"), quality=90); files["gray.jpg"] = "JPEG gray"

for f in files:
    p = os.path.join(W, f)
    same(f + " nchw rgb", got(NCHW, "input x image " + p), expect_image(p))
same("rgb.png bgr nhwc scale mean std",
     got(NHWC, "input x image %s/rgb.png channels bgr scale 2 mean 0.485,0.456,0.406 std 0.229,0.224,0.225" % W),
     expect_image(W + "/rgb.png", "nhwc", "bgr", None, 2.0, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))
same("rgb.png gray (auto from a 1-channel input)", got(GRAY, "input x image %s/rgb.png" % W),
     expect_image(W + "/rgb.png", channels="gray"))
same("rgb.jpg gray mean std", got(GRAY, "input x image %s/rgb.jpg channels gray mean 0.5 std 0.5" % W),
     expect_image(W + "/rgb.jpg", channels="gray", mean=(0.5,) * 3, std=(0.5,) * 3))
same("rgb.png channels grey (gray's other spelling)", got(GRAY, "input x image %s/rgb.png channels grey" % W),
     expect_image(W + "/rgb.png", channels="gray"))
same("rgb.png resized up 48x80", got(NCHW, "input x image %s/rgb.png size 48x80" % W),
     expect_image(W + "/rgb.png", size=(48, 80)))
same("rgb.jpg resized down 17x25 nhwc", got(NHWC, "input x image %s/rgb.jpg size 17x25 layout nhwc" % W),
     expect_image(W + "/rgb.jpg", "nhwc", size=(17, 25)))
# layout auto: [1, h, w, 3] is nhwc without saying so
same("rgb.png nhwc by the input's shape", got(NHWC, "input x image %s/rgb.png" % W), expect_image(W + "/rgb.png", "nhwc"))

# ---- audio: a stereo int16 WAV by python's wave module, a FLAC by the flac tool
sig = rng.integers(-32768, 32768, (1500, 2), dtype=np.int16)
with wave.open(os.path.join(W, "st.wav"), "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(16000); w.writeframes(sig.tobytes())
with wave.open(os.path.join(W, "st.wav"), "rb") as w:
    back = np.frombuffer(w.readframes(w.getnframes()), np.int16).reshape(-1, 2).astype(np.float64) / 32768.0
mono = (back[:, 0] + back[:, 1]) / 2
same("stereo wav", got(AUDIO, "input x audio %s/st.wav" % W), mono.astype(np.float32)[None])
same("stereo wav scale 32768 length 1000", got(AUDIO, "input x audio %s/st.wav scale 32768 length 1000" % W),
     (mono[:1000] * 32768).astype(np.float32)[None])
pad = np.zeros(2000); pad[:1500] = mono
same("stereo wav padded to 2000", got(AUDIO, "input x audio %s/st.wav length 2000" % W), pad.astype(np.float32)[None])
m16 = sig[:, 0].copy()
with wave.open(os.path.join(W, "m.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(m16.tobytes())
r = subprocess.run(["flac", "-s", "-f", "-o", os.path.join(W, "m.flac"), os.path.join(W, "m.wav")], capture_output=True)
if r.returncode != 0:
    fail("flac could not encode: %s" % r.stderr)
else:
    same("flac (flac tool) against the wav (wave module)", got(AUDIO, "input x audio %s/m.flac" % W),
         (m16.astype(np.float64) / 32768.0).astype(np.float32)[None])
# resampling: a 440 Hz sine at 44.1 kHz to 16 kHz stays that sine
t = np.arange(44100) / 44100.0
sine = np.round(np.sin(2 * np.pi * 440 * t) * 16000).astype(np.int16)
with wave.open(os.path.join(W, "sine.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(44100); w.writeframes(sine.tobytes())
a = got(AUDIO, "input x audio %s/sine.wav rate 16000" % W)
checks += 1
if a is not None:
    want = np.sin(2 * np.pi * 440 * np.arange(a.shape[1]) / 16000.0) * 16000 / 32768.0
    mid = slice(200, a.shape[1] - 200)  # the filter's edges
    err = np.abs(a[0, mid] - want[mid]).max()
    if a.shape != (1, 16000) or err > 2e-3:
        fail("resampled sine: shape %s, max error %g" % (a.shape, err))

# ---- .npy: integers for a float input need `convert`
np.save(os.path.join(W, "u8.npy"), rng.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8))
same("uint8 npy converted", got(NCHW, "input x file %s/u8.npy convert" % W),
     np.load(os.path.join(W, "u8.npy")).astype(np.float32))


# ---- refusals: a message naming the file, exit status 1, no crash
def refused(model_path, cmd, part):
    global checks
    checks += 1
    r = mpx("load %s; %s" % (model_path, cmd))
    text = r.stdout + r.stderr
    if r.returncode != 1 or part not in text:
        fail("%s: exit %d, expected 1 and \"%s\" in: %s" % (cmd, r.returncode, part, text.strip()))


with open(os.path.join(W, "rgb.png"), "rb") as f:
    png = f.read()
with open(os.path.join(W, "rgb.jpg"), "rb") as f:
    jpg = f.read()
with open(os.path.join(W, "st.wav"), "rb") as f:
    wav = f.read()
open(os.path.join(W, "cut.png"), "wb").write(png[: len(png) // 2])
open(os.path.join(W, "cut.jpg"), "wb").write(jpg[: len(jpg) // 2])
open(os.path.join(W, "end.jpg"), "wb").write(jpg[: len(jpg) * 9 // 10])
open(os.path.join(W, "cut.wav"), "wb").write(wav[: len(wav) // 2])
bad = bytearray(png); bad[40:60] = b"\0" * 20
open(os.path.join(W, "crc.png"), "wb").write(bytes(bad))
open(os.path.join(W, "text.png"), "w").write("not an image\n")
Image.fromarray(smooth).convert("CMYK").save(os.path.join(W, "cmyk.jpg"))
refused(NCHW, "input x image %s/cut.png" % W, "cut.png: not a readable PNG: truncated")
refused(NCHW, "input x image %s/cut.jpg" % W, "cut.jpg: not a readable JPEG: ")
refused(NCHW, "input x image %s/end.jpg" % W, "end.jpg: not a readable JPEG: Premature end of JPEG file")
refused(NCHW, "input x image %s/crc.png" % W, "crc.png: not a readable PNG")
refused(NCHW, "input x image %s/text.png" % W, "text.png: not a PNG or JPEG")
refused(NCHW, "input x image %s" % W, "not a regular file")
refused(NCHW, "input x image %s/cmyk.jpg" % W, "cmyk.jpg: a CMYK JPEG")
refused(NCHW, "input x image %s/rgb.png channels gray" % W, "rgb.png: channels gray gives 1 channel but the input has 3")
refused(GRAY, "input x image %s/rgb.png channels rgb" % W, "channels rgb gives 3 channels but the input has 1")
refused(NCHW, "input x image %s/rgb.png std 0" % W, "std of channel 0 is 0")
refused(NCHW, "input x image %s/rgb.png size 10" % W, "size: \"10\" is not <H>x<W>")
refused(AUDIO, "input x audio %s/cut.wav" % W, "cut.wav: truncated")
# a 169-byte FLAC whose header claims 486M frames (found by the audio fuzzer):
# refused as truncated without allocating for the claim
refused(AUDIO, "input x audio %s/fuzz/corpus/audio/oom-flac-claims-486M-frames.flac"
        % os.path.dirname(os.path.abspath(__file__)),
        "truncated: the header gives 486474240 frames, the file holds 0")
refused(AUDIO, "input x audio %s/rgb.png" % W, "rgb.png: not a readable sound file")
refused(AUDIO, "input x audio %s/st.wav rate 0" % W, "rate 0: expected a whole number from 1")
refused(NCHW, "input x file %s/u8.npy" % W, "u8.npy holds uint8 values but input x is float32; add `convert`")
refused(NCHW, "input x file %s/rgb.png" % W, "rgb.png is a png file, not .npy")
# a failed input leaves the earlier binding: the run still uses rgb.png
r = mpx("set bail off; load %s; input x image %s/rgb.png; input x image %s/cut.png; run" % (NCHW, W, W))
checks += 1
if "1x3x37x53" not in r.stderr or "run:" not in r.stderr:
    fail("a refused image changed the session: " + r.stdout + r.stderr)

print("data_check: %d checks, %d failed" % (checks, fails))
sys.exit(1 if fails else 0)
