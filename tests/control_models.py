"""Models with control flow for tests/control_ort.sh.

Good models (each checked against ONNX Runtime on inputs that take each
branch):
 - if_conv: an If on mean(X) > 0 choosing between two Conv branches; the
   branches use the same names for their own tensors (ONNX forbids only
   redefining a name of an enclosing scope), one reads an outer weight, the
   other its own initializer;
 - if_nested: an If whose then_branch holds another If, on a condition
   computed inside the branch (max(X) < 0.9);
 - if_shapes: branches whose outputs differ in shape (a MaxPool or the
   input itself), followed by a node of the main graph;
 - if_const: a condition that is an initializer (decided at load).
Bad models (each must be refused by name, never crash):
 - bad_if_inputs: a branch with graph inputs;
 - bad_if_outputs: branches with fewer outputs than the If;
 - bad_if_outer: a branch reading a tensor no scope defines;
 - bad_if_deep: Ifs nested 20 deep (mpx's limit is 16).

usage: python3 control_models.py <out_dir>
  prints one line per good model: name, X's shape, and the input ranges to
  run it with ("lo,hi" pairs separated by '/'), one per branch to take
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F = TensorProto.FLOAT


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)


def write(out_dir, name, nodes, inits, xshape, outs, opset=16):
    g = helper.make_graph(nodes, name, [vi("X", xshape)], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    save(m, os.path.join(out_dir, name + ".onnx"))


def mean_positive(cond="cond"):
    """cond = mean(X) > 0, a bool scalar."""
    return [helper.make_node("ReduceMean", ["X"], ["m"], keepdims=0),
            helper.make_node("Greater", ["m", "zero"], [cond])]


def if_conv(out_dir):
    rng = np.random.default_rng(1)
    w = const("W", rng.standard_normal((4, 3, 3, 3)) * 0.3)
    w_then = const("Wt", rng.standard_normal((4, 3, 3, 3)) * 0.3)  # the branch's own weight
    b = const("B", rng.standard_normal(4) * 0.1)
    then = helper.make_graph(
        [helper.make_node("Conv", ["X", "Wt", "B"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        "then", [], [vi("y", [1, 4, 8, 8])], [w_then])
    els = helper.make_graph(
        [helper.make_node("Conv", ["X", "W"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Sigmoid", ["c"], ["y"])],
        "else", [], [vi("y", [1, 4, 8, 8])])
    nodes = mean_positive() + [
        helper.make_node("If", ["cond"], ["Y"], then_branch=then, else_branch=els, name="choose"),
        helper.make_node("Mul", ["Y", "B4"], ["Z"])]
    write(out_dir, "if_conv", nodes, [w, b, const("zero", 0.0), const("B4", np.ones((4, 1, 1)) * 1.5)],
          [1, 3, 8, 8], [vi("Z", [1, 4, 8, 8])])
    print("if_conv 1x3x8x8 0,1/-1,0")


def if_nested(out_dir):
    inner_then = helper.make_graph([helper.make_node("Mul", ["X", "two"], ["r"])], "it", [], [vi("r", [2, 5])],
                                   [const("two", 2.0)])
    inner_else = helper.make_graph([helper.make_node("Add", ["X", "one"], ["r"])], "ie", [], [vi("r", [2, 5])],
                                   [const("one", 1.0)])
    then = helper.make_graph(
        [helper.make_node("ReduceMax", ["X"], ["mx"], keepdims=0),
         helper.make_node("Less", ["mx", "lim"], ["c2"]),
         helper.make_node("If", ["c2"], ["r"], then_branch=inner_then, else_branch=inner_else, name="inner"),
         helper.make_node("Tanh", ["r"], ["t"])],
        "then", [], [vi("t", [2, 5])], [const("lim", 0.9)])
    els = helper.make_graph([helper.make_node("Neg", ["X"], ["t"])], "else", [], [vi("t", [2, 5])])
    nodes = mean_positive() + [
        helper.make_node("If", ["cond"], ["Y"], then_branch=then, else_branch=els, name="outer")]
    write(out_dir, "if_nested", nodes, [const("zero", 0.0)], [2, 5], [vi("Y", [2, 5])])
    print("if_nested 2x5 0,1/0,0.8/-1,0")


def if_shapes(out_dir):
    then = helper.make_graph([helper.make_node("MaxPool", ["X"], ["p"], kernel_shape=[2, 2], strides=[2, 2])],
                             "then", [], [vi("p", [1, 3, 4, 4])])
    els = helper.make_graph([helper.make_node("Identity", ["X"], ["p"])], "else", [], [vi("p", [1, 3, 8, 8])])
    nodes = mean_positive() + [
        helper.make_node("If", ["cond"], ["P"], then_branch=then, else_branch=els, name="pool_or_not"),
        helper.make_node("ReduceSum", ["P"], ["Y"], keepdims=0, axes=[2, 3])]
    write(out_dir, "if_shapes", nodes, [const("zero", 0.0)], [1, 3, 8, 8], [vi("Y", [1, 3])], opset=12)
    print("if_shapes 1x3x8x8 0,1/-1,0")


def if_const(out_dir):
    then = helper.make_graph([helper.make_node("Sqrt", ["X"], ["y"])], "then", [], [vi("y", [3, 4])])
    els = helper.make_graph([helper.make_node("Exp", ["X"], ["y"])], "else", [], [vi("y", [3, 4])])
    cond = numpy_helper.from_array(np.array(True), "flag")
    nodes = [helper.make_node("If", ["flag"], ["Y"], then_branch=then, else_branch=els, name="fixed")]
    write(out_dir, "if_const", nodes, [cond], [3, 4], [vi("Y", [3, 4])])
    print("if_const 3x4 0,1")


def bad(out_dir):
    one = helper.make_graph([helper.make_node("Neg", ["X"], ["y"])], "b", [], [vi("y", [2])])
    with_in = helper.make_graph([helper.make_node("Neg", ["X"], ["y"])], "b", [vi("q", [2])], [vi("y", [2])])
    cases = {
        "bad_if_inputs": (with_in, one, 1),
        "bad_if_outputs": (one, one, 2),
        "bad_if_outer": (helper.make_graph([helper.make_node("Neg", ["nowhere"], ["y"])], "b", [], [vi("y", [2])]),
                         one, 1),
    }
    for name, (t, e, k) in cases.items():
        outs = ["Y", "Y2"][:k]
        nodes = mean_positive() + [helper.make_node("If", ["cond"], outs, then_branch=t, else_branch=e, name="bad")]
        write(out_dir, name, nodes, [const("zero", 0.0)], [2], [vi(o, [2]) for o in outs])
    g = one
    for d in range(20):
        g = helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=g, else_branch=one,
                                                name=f"lvl{d}")], f"d{d}", [], [vi("y", [2])])
    nodes = mean_positive() + [helper.make_node("If", ["cond"], ["Y"], then_branch=g, else_branch=one, name="top")]
    write(out_dir, "bad_if_deep", nodes, [const("zero", 0.0)], [2], [vi("Y", [2])])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if_conv(out)
    if_nested(out)
    if_shapes(out)
    if_const(out)
    bad(out)


if __name__ == "__main__":
    main()
