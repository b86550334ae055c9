"""The options torch_bf16.py and ort_cuda_fp16.py share (the same comparison
against two runtimes): the benchmark suite, the mpx binary, the models, where
the values go, the plan and the gap/err limit. Each script adds its own."""
import argparse
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser(doc, out_name, default_plan):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(ROOT, ".cache", "bench-suite"))
    ap.add_argument("--mpx", default=os.path.join(ROOT, "build", "mpx"))
    ap.add_argument("--models", default="resnet18,mobilenetv3s,efficientnetb0,vitb16,bert4,unet")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", out_name))
    ap.add_argument("--plan", default=default_plan, help="mpx commands after load and input, ';'-separated")
    ap.add_argument("--check", type=float, default=None, help="exit 1 when a model's gap/err exceeds this")
    return ap
