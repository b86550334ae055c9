#!/usr/bin/python3
"""Render the text-line images of examples/dataset.mpx (examples/data/lines/).

Sixteen 320x48 PNG lines, the size PP-OCRv4 rec reads: dark on light and
light on dark, several text sizes, words, digits and symbols, a little noise
and blur on some, so the set has the spread of real crops. Seeded: running it
again gives the same files. Needs Debian's python3-pil (a test package; the
PNGs are committed, so examples do not need it).

usage: examples/data/render_lines.py [out_dir]
"""
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "lines")
TEXTS = ["Invoice 2026-11-25", "TOTAL 1,234.56 EUR", "mixed precision", "fp16 overflow at 65504",
         "bfloat16 keeps the range", "Order #A7-339-0041", "hello, world!", "PRECISION EXPLORER",
         "tel. +49 30 1234 5678", "3.14159 2.71828 1.41421", "The quick brown fox", "jumps over the lazy dog",
         "www.example.org/mpx", "Qty 12 x 7.99", "ERROR: NaN in layer 42", "ok"]
rng = np.random.default_rng(2026)
os.makedirs(OUT, exist_ok=True)
for i, text in enumerate(TEXTS):
    dark_bg = i % 5 == 3
    bg, fg = ((30, 32, 40), (235, 235, 225)) if dark_bg else ((248, 246, 238), (15, 15, 25))
    width = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength(text) + 4
    scale = max(1, min((2, 3, 3, 4)[i % 4], int(316 // width)))
    small = Image.new("RGB", (320 // scale, 12), bg)
    ImageDraw.Draw(small).text((2, 0), text, fill=fg)
    im = Image.new("RGB", (320, 48), bg)
    im.paste(small.resize((320, 12 * scale), Image.BILINEAR), (0, (48 - 12 * scale) // 2))
    if i % 3 == 1:
        im = im.filter(ImageFilter.GaussianBlur(0.8))
    if i % 4 == 2:
        a = np.asarray(im).astype(np.int16) + rng.integers(-18, 19, (48, 320, 1))
        im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    im.save(os.path.join(OUT, "%02d.png" % i), optimize=True)
