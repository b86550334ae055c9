#!/usr/bin/python3
"""bench/search_data.py OUTDIR - the samples bench/search.sh searches on and
validates with: for each shape, a search set and a held-out set, seeded, as
stacked .npz files (one sample per index of the leading axis; `data f.npz
stacked`). Images are standard normal (the suite's classifiers normalise
their input so), PP-OCR inputs uniform in [-1, 1] (its preprocessing's range).
Files that exist are kept.

  img32.npz  img32_held.npz      32 samples 1x3x224x224 (classifiers)
  emb32.npz  emb32_held.npz      32 samples 1x64x768 (the BERT-style encoder)
  cls32.npz  cls32_held.npz      32 samples 1x3x48x192 (PP-OCR cls)
  rec4_held.npz                  4 samples 1x3x48x320 (PP-OCR rec)
  det2_held.npz                  2 samples 1x3x640x640 (PP-OCR det)
  unet4_held.npz                 4 samples 1x3x256x256 (the suite's UNet)
"""
import os
import sys

import numpy as np

SETS = [
    ("img32", 32, (1, 3, 224, 224), "normal", 11),
    ("img32_held", 32, (1, 3, 224, 224), "normal", 12),
    ("emb32", 32, (1, 64, 768), "normal", 13),
    ("emb32_held", 32, (1, 64, 768), "normal", 14),
    ("cls32", 32, (1, 3, 48, 192), "uniform", 15),
    ("cls32_held", 32, (1, 3, 48, 192), "uniform", 16),
    ("rec4_held", 4, (1, 3, 48, 320), "uniform", 17),
    ("det2_held", 2, (1, 3, 640, 640), "uniform", 18),
    ("unet4_held", 4, (1, 3, 256, 256), "normal", 19),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, n, shape, dist, seed in SETS:
        path = os.path.join(out, name + ".npz")
        if os.path.exists(path):
            continue
        r = np.random.default_rng(seed)
        x = r.standard_normal((n,) + shape) if dist == "normal" else r.uniform(-1, 1, (n,) + shape)
        np.savez(path, x=x.astype(np.float32))
        print("search_data: wrote", path, file=sys.stderr)


if __name__ == "__main__":
    main()
