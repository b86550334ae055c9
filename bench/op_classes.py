#!/usr/bin/python3
"""bench/op_classes.py OUTDIR [NAME ...] - models of kinds the suite leaves out, exported to ONNX.

The suite (bench/torch_models.py) holds the architectures mpx is tuned on;
these are the op classes a user brings beside them, for
`bench/run.sh --profile OUTDIR/NAME.onnx --shape SHAPE` (the shapes are
printed, and listed in models() below): a wav2vec2-style feature extractor
(Conv1d, GroupNorm, GELU), a 3-D convolution video net (Conv3d, BatchNorm3d,
MaxPool3d), a decoder with ConvTranspose2d and nearest/bilinear Upsample, a
diffusion-UNet-like net with GroupNorm(32) and SiLU (exported as
InstanceNormalization between Reshapes), a causal transformer block,
grouped and dilated convolutions, a Conformer convolution module (GLU,
depthwise Conv1d), torchvision's ShuffleNetV2, MobileNetV2, SqueezeNet and
ConvNeXt-Tiny, pooling variants (ceil_mode, count_include_pad, LPPool,
adaptive pools), an MLP-Mixer and Einsum/TopK/ArgMax/CumSum/GatherElements.

Conventions of bench/torch_models.py: seed 0, random weights, BatchNorm
statistics from four random batches in training mode, then eval(); opset 17
with constant folding. Needs python3-torch and python3-torchvision
(scripts/bootstrap.sh --bench).
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision



# 2. wav2vec2-style feature extractor (Conv1d, GroupNorm on first, GELU)
class Wav2Vec(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2
        layers = []
        cin = 1
        for i, (c, k, s) in enumerate(cfg):
            layers.append(nn.Conv1d(cin, c, k, stride=s, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(512, 512))
            layers.append(nn.GELU())
            cin = c
        self.f = nn.Sequential(*layers)
        self.proj = nn.Linear(512, 256)
        self.ln = nn.LayerNorm(512)

    def forward(self, x):
        y = self.f(x).transpose(1, 2)
        return self.proj(self.ln(y))


# 2b. a BatchNorm1d variant with 1-D conv stacks (cheaper, 1x1x16000)
# 3. small 3-D conv video net
class Video3D(nn.Module):
    def __init__(self):
        super().__init__()

        def b(ci, co, s=1):
            return nn.Sequential(nn.Conv3d(ci, co, 3, stride=s, padding=1, bias=False), nn.BatchNorm3d(co),
                                 nn.ReLU(inplace=True))
        self.f = nn.Sequential(
            nn.Conv3d(3, 32, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False), nn.BatchNorm3d(32),
            nn.ReLU(inplace=True), nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)),
            b(32, 32), b(32, 64, 2), b(64, 64), nn.MaxPool3d(2), b(64, 128), nn.AdaptiveAvgPool3d(1))
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(self.f(x).flatten(1))


# 4. decoder with ConvTranspose2d and Upsample (nearest, bilinear)
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(64, 64, 4, stride=2, padding=1)
        self.c1 = nn.Conv2d(64, 64, 3, padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.c2 = nn.Conv2d(64, 32, 3, padding=1)
        self.up3 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.c3 = nn.Conv2d(32, 16, 3, padding=1)
        self.up4 = nn.ConvTranspose2d(16, 16, 3, stride=1, padding=1)
        self.c4 = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.c1(F.relu(self.up1(x))))        # 56
        x = F.relu(self.c2(self.up2(x)))                # 112
        x = F.relu(self.c3(self.up3(x)))                # 224
        x = self.c4(F.relu(self.up4(x)))
        return torch.tanh(x)


# 5. diffusion-UNet-like ResBlocks with GroupNorm(32) + SiLU, plus an InstanceNorm
class ResBlockGN(nn.Module):
    def __init__(self, ci, co):
        super().__init__()
        self.n1 = nn.GroupNorm(32, ci)
        self.c1 = nn.Conv2d(ci, co, 3, padding=1)
        self.n2 = nn.GroupNorm(32, co)
        self.c2 = nn.Conv2d(co, co, 3, padding=1)
        self.skip = nn.Conv2d(ci, co, 1) if ci != co else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class GNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = ResBlockGN(64, 64)
        self.b2 = ResBlockGN(64, 128)
        self.down = nn.Conv2d(128, 128, 3, stride=2, padding=1)
        self.b3 = ResBlockGN(128, 128)
        self.inorm = nn.InstanceNorm2d(128, affine=True)
        self.out = nn.Conv2d(128, 64, 1)

    def forward(self, x):
        x = self.b2(self.b1(x))
        x = self.b3(self.down(x))
        return self.out(self.inorm(x))


# 6. transformer decoder-ish block with causal mask
class CausalBlock(nn.Module):
    def __init__(self, d=512, h=8, layers=2, T=128):
        super().__init__()
        self.attn = nn.ModuleList([nn.MultiheadAttention(d, h, batch_first=True) for _ in range(layers)])
        self.ln1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.ln2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                 for _ in range(layers)])
        self.T = T

    def forward(self, x):
        T = x.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        for a, l1, l2, f in zip(self.attn, self.ln1, self.ln2, self.ff):
            h = l1(x)
            x = x + a(h, h, h, attn_mask=mask, need_weights=False)[0]
            x = x + f(l2(x))
        return x


# 7. grouped (ResNeXt groups=32) and dilated (ASPP) convolutions
class GroupedDilated(nn.Module):
    def __init__(self):
        super().__init__()

        def cbr(ci, co, k, g=1, d=1):
            return nn.Sequential(nn.Conv2d(ci, co, k, padding=d * (k // 2), dilation=d, groups=g, bias=False),
                                 nn.BatchNorm2d(co), nn.ReLU(inplace=True))
        self.rx = nn.ModuleList([nn.Sequential(cbr(256, 256, 1), cbr(256, 256, 3, g=32), cbr(256, 256, 1))
                                 for _ in range(2)])
        self.aspp = nn.ModuleList([cbr(256, 128, 1), cbr(256, 128, 3, d=2), cbr(256, 128, 3, d=4),
                                   cbr(256, 128, 3, d=6)])
        self.proj = cbr(512, 256, 1)

    def forward(self, x):
        for b in self.rx:
            x = F.relu(x + b(x))
        return self.proj(torch.cat([a(x) for a in self.aspp], 1))


# 8. Conformer conv module
class ConformerConv(nn.Module):
    def __init__(self, d=256, k=31, n=4):
        super().__init__()
        self.blocks = nn.ModuleList()
        for _ in range(n):
            self.blocks.append(nn.ModuleDict(dict(
                pw1=nn.Conv1d(d, 2 * d, 1), dw=nn.Conv1d(d, d, k, padding=k // 2, groups=d),
                bn=nn.BatchNorm1d(d), pw2=nn.Conv1d(d, d, 1))))

    def forward(self, x):  # x: 1 x d x T
        for b in self.blocks:
            h = F.glu(b["pw1"](x), dim=1)
            h = F.silu(b["bn"](b["dw"](h)))
            x = x + b["pw2"](h)
        return x


# 10. pooling variants
class Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(64, 64, 3, padding=1)
        self.p1 = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)  # 112->57?
        self.p2 = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=True)
        self.p3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.lp = nn.LPPool2d(2, 2, stride=2)
        self.ap = nn.AdaptiveAvgPool2d(7)
        self.amp = nn.AdaptiveMaxPool2d(1)

    def forward(self, x):
        x = F.relu(self.c(x))
        a = self.p1(x)
        a = self.p2(a)
        b = self.p3(x)
        c = self.lp(x)
        y = self.ap(a[:, :, :56, :56]) + self.ap(c)
        return y.flatten(1).sum(1, keepdim=True) + self.amp(b).flatten(1)


# 11. MLP-Mixer
class MixerBlock(nn.Module):
    def __init__(self, tokens=196, d=512, tok_h=256, ch_h=2048):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.tok = nn.Sequential(nn.Linear(tokens, tok_h), nn.GELU(), nn.Linear(tok_h, tokens))
        self.ln2 = nn.LayerNorm(d)
        self.ch = nn.Sequential(nn.Linear(d, ch_h), nn.GELU(), nn.Linear(ch_h, d))

    def forward(self, x):
        x = x + self.tok(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.ln2(x))


class Mixer(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.b = nn.Sequential(*[MixerBlock() for _ in range(n)])
        self.ln = nn.LayerNorm(512)

    def forward(self, x):
        return self.ln(self.b(x)).mean(1)


# 12. Einsum, TopK, ArgMax, CumSum, Gather, ScatterND-ish
class Misc(nn.Module):
    def __init__(self, d=256, e=512):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.codebook = nn.Parameter(torch.randn(e, d))
        self.out = nn.Linear(d, d)

    def forward(self, x):  # 1 x T x d
        q = self.q(x)
        k = self.k(x)
        s = torch.einsum("btd,bsd->bts", q, k) / 16.0
        s = torch.cumsum(s.softmax(-1), dim=-1)
        v, idx = torch.topk(s, 32, dim=-1)
        # vector-quantise: nearest codebook entry (ArgMin over distances) then Gather
        dist = torch.einsum("btd,ed->bte", x, self.codebook)
        code = dist.argmax(-1)
        qx = self.codebook[code]  # Gather
        m = torch.gather(x, 1, idx[:, :, :1].expand(-1, -1, x.shape[2]))  # GatherElements
        w = torch.einsum("bts,bsd->btd", v, x[:, :32, :])
        return self.out(qx + m + w)


def convnext():
    m = torchvision.models.convnext_tiny()
    return m


def squeeze():
    return torchvision.models.squeezenet1_1()


def models():
    tv = torchvision.models
    return [
        ("convnext_t", convnext, (1, 3, 128, 128)),
        ("wav2vec_fe", Wav2Vec, (1, 1, 16000)),
        ("video3d", Video3D, (1, 3, 8, 112, 112)),
        ("decoder_up", Decoder, (1, 64, 28, 28)),
        ("gn_unet", GNNet, (1, 64, 64, 64)),
        ("causal_tx", CausalBlock, (1, 128, 512)),
        ("grouped_dil", GroupedDilated, (1, 256, 32, 32)),
        ("conformer_conv", ConformerConv, (1, 256, 200)),
        ("shufflenet", lambda: tv.shufflenet_v2_x1_0(), (1, 3, 224, 224)),
        ("mobilenetv2", lambda: tv.mobilenet_v2(), (1, 3, 224, 224)),
        ("squeezenet", squeeze, (1, 3, 224, 224)),
        ("pools", Pools, (1, 64, 112, 112)),
        ("mixer", Mixer, (1, 196, 512)),
        ("misc_ops", Misc, (1, 128, 256)),
    ]


def build(make, shape):
    torch.manual_seed(0)
    model = make()
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn(8, *shape[1:]))
    model.eval()
    for m in model.modules():
        if isinstance(m, (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder)):
            m.training = True
    return model, torch.randn(*shape)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench/op_classes.py OUTDIR [NAME ...]")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[2:])
    for name, make, shape in models():
        if only and name not in only:
            continue
        path = os.path.join(out, name + ".onnx")
        model, x = build(make, shape)
        with torch.no_grad():
            torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"], output_names=["y"],
                              do_constant_folding=True, training=torch.onnx.TrainingMode.PRESERVE)
        print(name, "x".join(map(str, shape)), path)


if __name__ == "__main__":
    main()
