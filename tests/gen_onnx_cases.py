"""Generate ONNX's operator test cases (onnx.backend.test.case.node) as data.

python3-onnx ships the generators but not their output. This writes, per case,
DIR/<case>/model.onnx and DIR/<case>/test_data_set_0/{input,output}_K.pb in
the layout of ONNX's own backend test data (onnx.backend.test.cmd_tools
generate-data), which tests/onnx_conformance.c reads.

Why not call cmd_tools directly:
 - Debian's python3-onnx 1.12 runs against NumPy 1.24, which removed the
   np.float/np.int/... aliases some generators still use; importing them
   fails. The aliases are put back (as the builtins NumPy 1.20-1.23 mapped
   them to) before the generators are imported.
 - cmd_tools also writes the "model" cases (whole networks to download);
   only node cases are wanted.
 - Many generators draw unseeded random data; seeding NumPy first makes the
   data (and so any failure) reproducible.

Opset rewrite: a generator stamps its model with the op's own since_version,
which is below 7 for ops unchanged since then (Not, Elu, GlobalAveragePool,
...). mpx reads older opsets by rewriting them to opset 7's forms
(graph/onnx_legacy.c, tested by tests/opset_ort.sh); these cases test the ops
themselves, so such a model's default-domain import is raised to 7, but only
when every node resolves to the same operator schema at 7 as at the original
version: the model then means exactly the same thing.

Two repairs of ONNX 1.12's data, both for the bfloat16 Cast/CastLike cases:
 - NumPy has no bfloat16, so those generators hold bf16 values as their
   uint16 bit patterns and the .pb files say UINT16 where the model says
   BFLOAT16. Such a tensor is written as BFLOAT16 with the same bits, which
   is what the case means.
 - The CastLike bf16 cases declare the "like" input 3x4 but feed a
   one-element tensor (only its type matters). A declared shape that
   contradicts the case's own data is replaced by the data's shape; every
   backend that checks input shapes against the model would refuse the case
   as written.
The repaired cases are printed.

With --selfcheck <dir>, also writes copies of a few cases whose expected
outputs are slightly wrong (one float just beyond the tolerance, a NaN where
a number is expected, an index off by one, a wrong shape): the runner must
fail each of them (tests/onnx_conformance.sh checks that it does).

usage: gen_onnx_cases.py <out_dir> [--selfcheck <dir>]
"""
import os
import sys

import numpy as np

for _alias, _builtin in (("float", float), ("int", int), ("bool", bool), ("object", object),
                         ("complex", complex), ("str", str)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _builtin)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

MIN_OPSET = 7
# ONNX's backend runner compares with the tolerances stored in each case; the
# C runner applies these (onnx/backend/test/case/node/__init__.py, expect()).
RTOL, ATOL = 1e-3, 1e-7


def same_schema(model, old, new):
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            a = onnx.defs.get_schema(node.op_type, old, node.domain).since_version
            b = onnx.defs.get_schema(node.op_type, new, node.domain).since_version
        except onnx.defs.SchemaError:
            return False
        if a != b:
            return False
    return True


def raise_opset(model):
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version < MIN_OPSET:
            if same_schema(model, imp.version, MIN_OPSET):
                imp.version = MIN_OPSET


def proto_for(value, vinfo, repairs):
    t = vinfo.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vinfo.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vinfo.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vinfo.name)
    value = np.asarray(value)
    if t.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 and value.dtype == np.uint16:
        repairs.append("%s holds bfloat16 bits as uint16" % vinfo.name)
        p = onnx.TensorProto()
        p.name = vinfo.name
        p.data_type = onnx.TensorProto.BFLOAT16
        p.dims.extend(value.shape)
        p.raw_data = value.astype("<u2").tobytes()
        return p
    return numpy_helper.from_array(value, vinfo.name)


def fit_declared_shape(vinfo, value, repairs):
    if not vinfo.type.HasField("tensor_type") or not vinfo.type.tensor_type.HasField("shape"):
        return
    dims = vinfo.type.tensor_type.shape.dim
    shape = np.shape(value)
    if len(dims) == len(shape) and all(not d.HasField("dim_value") or d.dim_value == v
                                       for d, v in zip(dims, shape)):
        return
    repairs.append("%s declared %s, data %s" % (
        vinfo.name, [d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims],
        list(shape)))
    del dims[:]
    for v in shape:
        dims.add().dim_value = v


def write_selfcheck(cases_dir, out):
    """Cases that must fail: expected outputs damaged in ways the runner must see."""
    import shutil

    def damage(case, fn):
        src = os.path.join(cases_dir, case)
        dst = os.path.join(out, case + "_damaged")
        shutil.copytree(src, dst)
        path = os.path.join(dst, "test_data_set_0", "output_0.pb")
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        a = fn(numpy_helper.to_array(t).copy())
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(a, t.name).SerializeToString())

    def beyond_tolerance(a):
        a.flat[0] = a.flat[0] * (1 + 2 * RTOL) + np.sign(a.flat[0]) * 10 * ATOL
        return a

    def nan(a):
        a.flat[1] = np.nan
        return a

    def off_by_one(a):
        a.flat[0] += 1
        return a

    os.makedirs(out, exist_ok=True)
    damage("test_add", beyond_tolerance)
    damage("test_relu", nan)
    damage("test_argmax_default_axis_example", off_by_one)
    damage("test_sigmoid", lambda a: a.reshape(-1))
    return 4


def main():
    out = sys.argv[1]
    np.random.seed(0)
    import onnx.backend.test.case.node as node_cases
    cases = node_cases.collect_testcases(None)
    os.makedirs(out, exist_ok=True)
    names = set()
    for case in cases:
        if (case.rtol, case.atol) != (RTOL, ATOL):
            sys.exit("case %s: tolerances rtol=%g atol=%g differ from the runner's %g, %g"
                     % (case.name, case.rtol, case.atol, RTOL, ATOL))
        # ONNX 1.12 names two different ReduceSum cases alike (the second is
        # really an empty-axes no-op case); cmd_tools lets the second
        # overwrite the first. Keep both.
        name = case.name
        while name in names:
            name += "__2"
        names.add(name)
        model = case.model
        raise_opset(model)
        repairs = []
        if len(case.data_sets) == 1:
            for vinfo, value in zip(model.graph.input, case.data_sets[0][0]):
                fit_declared_shape(vinfo, value, repairs)
        cdir = os.path.join(out, name)
        os.makedirs(cdir, exist_ok=True)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ddir = os.path.join(cdir, "test_data_set_%d" % i)
            os.makedirs(ddir, exist_ok=True)
            for kind, values, infos in (("input", inputs, model.graph.input),
                                        ("output", outputs, model.graph.output)):
                for j, value in enumerate(values):
                    with open(os.path.join(ddir, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(proto_for(value, infos[j], repairs).SerializeToString())
        with open(os.path.join(cdir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        if repairs:
            print("gen_onnx_cases: repaired %s: %s" % (name, "; ".join(repairs)))
    print("gen_onnx_cases: %d node cases (onnx %s) in %s" % (len(cases), onnx.__version__, out))
    if len(sys.argv) == 4 and sys.argv[2] == "--selfcheck":
        n = write_selfcheck(out, sys.argv[3])
        print("gen_onnx_cases: %d damaged cases in %s" % (n, sys.argv[3]))


if __name__ == "__main__":
    main()
