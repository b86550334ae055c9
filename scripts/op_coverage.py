"""The operator coverage table (docs/op-coverage.md): every operator of
ONNX's default domain through opset 23 and the com.microsoft ops real exports
contain, with what mpx does with it.

Sources, so the table cannot drift from the code:
 - the ops mpx runs: graph/ops.def (the registry; an op there has shape
   inference, cost, kernel and default colour, static_asserts see to that);
 - ONNX's operators through opset 17: python3-onnx 1.12's schemas; the ones
   added in opsets 18-23 are listed below by hand (ONNX's Changelog.md);
 - ONNX's operator test cases passed per op: the "ops exercised by passing
   cases" line of build/tests/onnx_conformance's output (pass the file).

usage: python3 scripts/op_coverage.py [onnx_conformance_output.txt] > docs/op-coverage.md
"""
import re
import sys
from pathlib import Path

import onnx.defs

ROOT = Path(__file__).resolve().parent.parent

# Added to the default domain in opsets 18-23 (not in python3-onnx 1.12).
NEWER = {
    "BitwiseAnd": 18, "BitwiseNot": 18, "BitwiseOr": 18, "BitwiseXor": 18, "CenterCropPad": 18,
    "Col2Im": 18, "GroupNormalization": 18, "Mish": 18, "DeformConv": 19, "AffineGrid": 20,
    "Gelu": 20, "ImageDecoder": 20, "RegexFullMatch": 20, "StringConcat": 20, "StringSplit": 20,
    "Attention": 23, "RMSNormalization": 23, "RotaryEmbedding": 23,
}
# Ops on strings only, or training-only: may stay unsupported (refused by name).
STRING = {"StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat", "StringSplit",
          "ImageDecoder", "LabelEncoder"}
TRAINING = {"Adagrad", "Adam", "Momentum", "Gradient"}
SEQUENCE = {"ConcatFromSequence", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
            "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence", "Optional",
            "OptionalGetElement", "OptionalHasElement"}
CONTROL = set()  # If, Loop and Scan run
CONTRIB = ["FusedMatMul", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd", "SkipLayerNormalization",
           "SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization", "Attention",
           "MultiHeadAttention", "GroupQueryAttention", "RotaryEmbedding", "MatMulNBits"]


def registry():
    """(default-domain ops, com.microsoft ops) of graph/ops.def."""
    ops, ms = set(), set()
    for line in (ROOT / "graph" / "ops.def").read_text().splitlines():
        m = re.match(r"MPX_OP(_MS)?\((\w+),", line)
        if m:
            (ms if m.group(1) else ops).add(m.group(2))
    return ops, ms


def passed_cases(path):
    if not path:
        return {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("ops exercised by passing cases:"):
            return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line.split(":", 1)[1])}
    return {}


def main():
    mpx, ms = registry()
    cases = passed_cases(sys.argv[1] if len(sys.argv) > 1 else None)
    since, deprecated = {}, set()
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            since[s.name] = min(since.get(s.name, 99), s.since_version)
            if s.deprecated:
                deprecated.add(s.name)
    for name, v in NEWER.items():
        since.setdefault(name, v)
    rows, counts = [], {"runs": 0, "refused": 0, "missing": 0}
    for name in sorted(since, key=str.lower):
        if name in mpx:
            status = "runs"
        elif name in STRING:
            status = "strings only: refused by name"
        elif name in TRAINING:
            status = "training only: refused by name"
        elif name in CONTROL:
            status = "not yet (control flow)"
        elif name in SEQUENCE:
            status = "not yet (runs a body per item)"
        else:
            status = "not yet"
        counts["runs" if status == "runs" else "refused" if "refused" in status else "missing"] += 1
        dep = " (deprecated)" if name in deprecated else ""
        rows.append(f"| {name} | {since[name]}{dep} | {status} | {cases.get(name, '')} |")
    print("# Operator coverage")
    print()
    print("Made by `scripts/op_coverage.py` from graph/ops.def (the registry), python3-onnx 1.12's")
    print("schemas (opsets up to 17) with the ops of opsets 18-23 listed in the script, and the")
    print("ONNX operator cases each op passes (`build/tests/onnx_conformance`). \"runs\": shape")
    print("inference, cost, an fp32 kernel checked against ONNX's cases or ONNX Runtime, emulation")
    print("under every format, a default colour with its source.")
    print()
    print(f"Default domain: {counts['runs']} of {len(since)} operators run; {counts['refused']} compute on "
          f"strings or train only and are refused by name; {counts['missing']} do not run yet.")
    print()
    print("| operator | since opset | mpx | ONNX cases passed |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("## com.microsoft (ONNX Runtime's contrib ops)")
    print()
    print("| operator | mpx |")
    print("|---|---|")
    # ORT's com.microsoft Gelu, RotaryEmbedding and Attention share the row
    # of ONNX's op of that name (the kernel reads the domain);
    # SimplifiedLayerNormalization ORT registers in the default domain
    # (graph/ops.c says so)
    ms |= {"Gelu"} | ({"SimplifiedLayerNormalization", "RotaryEmbedding", "Attention"} & mpx)
    for name in CONTRIB:
        note = ""
        if name == "BiasAdd":
            note = " (checked against the same sum in ONNX ops: ORT's CPU build has no BiasAdd)"
        print(f"| {name} | {'runs' + note if name in ms else 'not yet'} |")
    print()
    print("The contrib ops that run are checked against onnxruntime-node by `ctest -R ops_ort`.")


if __name__ == "__main__":
    main()
