#!/usr/bin/python3
"""bench/torch_models.py OUTDIR [NAME ...] - the benchmark's model suite, exported to ONNX.

The PP-OCR models are what mpx was tuned on; users bring others. This makes
the architectures people use most, with Debian's python3-torch and
python3-torchvision (scripts/bootstrap.sh --bench), so that anyone can
regenerate the same files:

  resnet18      torchvision ResNet-18, 1x3x224x224
  mobilenetv3s  torchvision MobileNetV3-Small, 1x3x224x224 (depthwise, squeeze-excitation)
  efficientnetb0  torchvision EfficientNet-B0, 1x3x224x224
  vitb16        torchvision ViT-B/16, 1x3x224x224 (attention MatMuls, large Gemms)
  bert4         a 4-layer BERT-style encoder (768 wide, 12 heads, GELU), sequence 64,
                fed embeddings 1x64x768
  unet          a small UNet (32..256 channels, ConvTranspose up, skip concats), 1x3x256x256
  lstm_bi       a bidirectional LSTM (hidden 128) over 50 steps of 40 features and a
                linear head (32 per step), 1x50x40
  gru           a GRU (hidden 128) over the same input and the same head, 1x50x40
  unet_any      the same UNet (same weights) with its height and width left free,
                for the large-input search of bench/search.sh (1x3x1024x1024, 148
                GMACs); not in suite.json
  resnet18_dq, bert4_dq  ResNet-18 and the encoder dynamically quantised as ONNX
                Runtime's quantize_dynamic writes them (bench/quantize_dynamic.py:
                DynamicQuantizeLinear, ConvInteger / MatMulInteger, Cast, Mul)

Weights are random (torch's default initialisation, seed 0); BatchNormalization
statistics are set from a few random batches in training mode, so activations
keep a normal scale instead of growing layer after layer. Opset 17 (ONNX's
LayerNormalization). Writes OUTDIR/<name>.onnx and OUTDIR/suite.json (name,
file, input shape). Files that exist are kept (delete them to regenerate).
With NAMEs, only those models are written (no suite.json).
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quantize_dynamic  # noqa: E402  (beside this file)


class Encoder(nn.Module):
    """BERT-base's layer shape, four layers, on embeddings."""

    def __init__(self, layers=4, width=768, heads=12):
        super().__init__()
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        # the layers are copies of one; fresh weights for each, or the export
        # (which shares equal initializers) would hold one layer's weights
        for m in self.enc.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(self.enc(x))


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, chans=(32, 64, 128, 256)):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for c in chans:
            self.down.append(block(cin, c))
            cin = c
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        for c in reversed(chans[:-1]):
            self.up.append(nn.ConvTranspose2d(cin, c, 2, stride=2))
            self.dec.append(block(2 * c, c))
            cin = c
        self.head = nn.Conv2d(cin, 1, 1)

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = self.pool(x)
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], 1))
        return torch.sigmoid(self.head(x))


class Recurrent(nn.Module):
    """One recurrent layer over a sequence, batch first, and a linear head on
    every step's output (a tagger's shape; the head is the layer the
    benchmark's re-run recolours: the recurrent op is red by default)."""

    def __init__(self, cell, width):
        super().__init__()
        self.cell = cell
        self.head = nn.Linear(width, 32)

    def forward(self, x):
        return self.head(self.cell(x)[0])


def vit():
    m = torchvision.models.vit_b_16()
    # torchvision starts the classifier at zero: every output would be 0
    nn.init.normal_(m.heads.head.weight, std=0.02)
    return m


def suite():
    tv = torchvision.models
    return [
        ("resnet18", lambda: tv.resnet18(), (1, 3, 224, 224)),
        ("mobilenetv3s", lambda: tv.mobilenet_v3_small(), (1, 3, 224, 224)),
        ("efficientnetb0", lambda: tv.efficientnet_b0(), (1, 3, 224, 224)),
        ("vitb16", vit, (1, 3, 224, 224)),
        ("bert4", lambda: Encoder(), (1, 64, 768)),
        ("unet", lambda: UNet(), (1, 3, 256, 256)),
        ("lstm_bi", lambda: Recurrent(nn.LSTM(40, 128, batch_first=True, bidirectional=True), 256), (1, 50, 40)),
        ("gru", lambda: Recurrent(nn.GRU(40, 128, batch_first=True), 128), (1, 50, 40)),
    ]


def build(make, shape):
    """The model and its input as the suite exports them: seed 0, weights,
    BatchNormalization statistics, eval mode, then the input. Also what
    scripts/torch_bf16.py runs in torch, so it computes the exported weights."""
    torch.manual_seed(0)
    model = make()
    # BatchNormalization statistics from random batches of the input's scale
    if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(8, *shape[1:]))
    model.eval()
    # torch 1.13 runs attention in eval mode through a fused kernel that
    # has no ONNX export (aten::_native_multi_head_attention); flagged as
    # training (these modules alone, their dropouts stay eval and every
    # dropout probability is 0) they take the plain path, same values.
    for m in model.modules():
        if isinstance(m, (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder)):
            m.training = True
    return model, torch.randn(*shape)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, only = sys.argv[1], set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    index = []
    for name, make, shape in suite() + [("unet_any", lambda: UNet(), (1, 3, 256, 256))]:
        path = os.path.join(out, name + ".onnx")
        if name != "unet_any":
            index.append({"name": name, "file": name + ".onnx", "shape": "x".join(map(str, shape))})
        if os.path.exists(path) or (only and name not in only):
            continue
        model, x = build(make, shape)
        tmp = path + ".tmp"
        with torch.no_grad():
            free = {"x": {2: "h", 3: "w"}, "y": {2: "h", 3: "w"}} if name == "unet_any" else None
            torch.onnx.export(model, (x,), tmp, opset_version=17, input_names=["x"], output_names=["y"],
                              do_constant_folding=True, training=torch.onnx.TrainingMode.PRESERVE,
                              dynamic_axes=free)
        os.replace(tmp, path)
        print(f"torch_models: wrote {path}", file=sys.stderr)
    if only:
        return
    for base in ("resnet18", "bert4"):
        src = next(e for e in index if e["name"] == base)
        name = base + "_dq"
        path = os.path.join(out, name + ".onnx")
        index.append({"name": name, "file": name + ".onnx", "shape": src["shape"]})
        if not os.path.exists(path):
            model = onnx.load(os.path.join(out, src["file"]))
            quantize_dynamic.quantize(model)
            onnx.save(model, path + ".tmp")
            os.replace(path + ".tmp", path)
            print(f"torch_models: wrote {path}", file=sys.stderr)
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main()
