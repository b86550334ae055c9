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
 - if_const: a condition that is an initializer (decided at load);
 - loop_accumulate, loop_while, loop_nested, loop_if, scan_reverse_axes:
   Loop and Scan (loops());
 - seq_split_concat, seq_stack, seq_construct, optional_chain: sequences and
   optionals between tensors (sequences()).
Bad models (each must be refused by name, never crash):
 - bad_if_inputs: a branch with graph inputs;
 - bad_if_outputs: branches with fewer outputs than the If;
 - bad_if_outer: a branch reading a tensor no scope defines;
 - bad_if_deep: Ifs nested 20 deep (mpx's limit is 16);
 - bad_loop_negative: a Loop with trip count -3 (refused when it runs);
 - bad_scan_lengths: two scan inputs of different lengths.

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


I64 = TensorProto.INT64
B1 = TensorProto.BOOL


def loops(out_dir):
    """Loop with a trip count, carried values, a scan output, the iteration
    number and an outer tensor read inside; a while-loop (no trip count, the
    body's condition stops it); a Loop in a Loop; a Loop whose body holds
    an If; Scan with a reversed scan input along axis 1 and scan outputs
    stacked along axis 1; a Loop of one iteration; a body reading a main-graph
    value."""
    rng = np.random.default_rng(7)
    vi64 = lambda n, s: helper.make_tensor_value_info(n, I64, s)  # noqa: E731
    vb = lambda n: helper.make_tensor_value_info(n, B1, [])  # noqa: E731
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["v", "half"], ["vh"]),
         helper.make_node("Mul", ["fi", "W"], ["iw"]),
         helper.make_node("Add", ["vh", "iw"], ["vo"]),
         helper.make_node("Mul", ["vo", "vo"], ["sq"]),
         helper.make_node("Identity", ["c"], ["co"])],
        "body", [vi64("i", []), vb("c"), vi("v", [3])], [vb("co"), vi("vo", [3]), vi("sq", [3])],
        [const("half", 0.5)])
    nodes = [helper.make_node("Loop", ["M", "T", "X"], ["V", "S"], body=body, name="acc")]
    write(out_dir, "loop_accumulate", nodes,
          [numpy_helper.from_array(np.array(4, np.int64), "M"), numpy_helper.from_array(np.array(True), "T"),
           const("W", rng.standard_normal(3))],
          [3], [vi("V", [3]), vi("S", [4, 3])], opset=13)
    print("loop_accumulate 3 -1,1")
    wbody = helper.make_graph(
        [helper.make_node("Mul", ["v", "k"], ["vo"]),
         helper.make_node("ReduceSum", ["vo"], ["sm"], keepdims=0),
         helper.make_node("Less", ["sm", "lim"], ["co"])],
        "wbody", [vi64("i", []), vb("c"), vi("v", [2, 2])], [vb("co"), vi("vo", [2, 2])], [const("k", 1.5)])
    write(out_dir, "loop_while", [helper.make_node("Loop", ["", "T", "X"], ["V"], body=wbody, name="grow")],
          [numpy_helper.from_array(np.array(True), "T"), const("lim", 50.0)], [2, 2], [vi("V", [2, 2])], opset=13)
    print("loop_while 2x2 1,2")
    inner = helper.make_graph(
        [helper.make_node("Add", ["u", "X"], ["uo"]), helper.make_node("Identity", ["c2"], ["co2"])],
        "inner", [vi64("j", []), vb("c2"), vi("u", [3])], [vb("co2"), vi("uo", [3])])
    outer = helper.make_graph(
        [helper.make_node("Loop", ["M2", "", "v"], ["w"], body=inner, name="inner"),
         helper.make_node("Tanh", ["w"], ["vo"]), helper.make_node("Identity", ["c"], ["co"])],
        "outer", [vi64("i", []), vb("c"), vi("v", [3])], [vb("co"), vi("vo", [3])],
        [numpy_helper.from_array(np.array(2, np.int64), "M2")])
    write(out_dir, "loop_nested", [helper.make_node("Loop", ["M", "", "X"], ["V"], body=outer, name="outer")],
          [numpy_helper.from_array(np.array(3, np.int64), "M")], [3], [vi("V", [3])], opset=13)
    print("loop_nested 3 -1,1")
    # a Loop whose body holds an If on the iteration number
    then = helper.make_graph([helper.make_node("Mul", ["v", "two"], ["r"])], "t", [], [vi("r", [3])],
                             [const("two", 2.0)])
    els = helper.make_graph([helper.make_node("Neg", ["v"], ["r"])], "e", [], [vi("r", [3])])
    ibody = helper.make_graph(
        [helper.make_node("Less", ["i", "one"], ["first"]),
         helper.make_node("If", ["first"], ["vo"], then_branch=then, else_branch=els, name="pick"),
         helper.make_node("Identity", ["c"], ["co"])],
        "ibody", [vi64("i", []), vb("c"), vi("v", [3])], [vb("co"), vi("vo", [3])],
        [numpy_helper.from_array(np.array(1, np.int64), "one")])
    write(out_dir, "loop_if", [helper.make_node("Loop", ["M", "", "X"], ["V"], body=ibody, name="alt")],
          [numpy_helper.from_array(np.array(3, np.int64), "M")], [3], [vi("V", [3])], opset=13)
    print("loop_if 3 -1,1")
    sbody = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["so"]), helper.make_node("Mul", ["so", "g"], ["y"])],
        "sbody", [vi("s", [3]), vi("x", [3])], [vi("so", [3]), vi("y", [3])])
    write(out_dir, "scan_reverse_axes", [
        helper.make_node("Scan", ["S0", "X"], ["S", "Y"], body=sbody, num_scan_inputs=1, scan_input_axes=[1],
                         scan_input_directions=[1], scan_output_axes=[1], name="cum")],
        [const("S0", np.zeros(3)), const("g", rng.standard_normal(3))], [3, 5], [vi("S", [3]), vi("Y", [3, 5])],
        opset=11)
    print("scan_reverse_axes 3x5 -1,1")
    # one iteration: the body's value is the Loop's output (the figures of
    # the value inside the body and of the node's output must agree)
    obody = helper.make_graph(
        [helper.make_node("Mul", ["v", "k"], ["vo"]), helper.make_node("Identity", ["c"], ["co"])],
        "obody", [vi64("i", []), vb("c"), vi("v", [3])], [vb("co"), vi("vo", [3])], [const("k", 1.1)])
    write(out_dir, "loop_once", [helper.make_node("Loop", ["M", "", "X"], ["V"], body=obody, name="once")],
          [numpy_helper.from_array(np.array(1, np.int64), "M")], [3], [vi("V", [3])], opset=13)
    print("loop_once 3 1,2")
    # a body reading a value of the main graph that a low plan holds in
    # fp16 (the export renames the body's read to the Cast's output)
    rbody = helper.make_graph(
        [helper.make_node("Add", ["v", "h"], ["a"]), helper.make_node("Tanh", ["a"], ["vo"]),
         helper.make_node("Identity", ["c"], ["co"])],
        "rbody", [vi64("i", []), vb("c"), vi("v", [3])], [vb("co"), vi("vo", [3])])
    write(out_dir, "loop_outer", [
        helper.make_node("Mul", ["X", "s"], ["h"]),
        helper.make_node("Loop", ["M", "", "X"], ["V"], body=rbody, name="carry"),
        helper.make_node("Relu", ["V"], ["Y"])],
        [numpy_helper.from_array(np.array(3, np.int64), "M"), const("s", [0.5, -1.5, 2.0])], [3], [vi("Y", [3])],
        opset=13)
    print("loop_outer 3 -1,1")


def sequences(out_dir):
    """Sequences and optionals between tensors: SplitToSequence (split
    lengths; and one slice per row without keepdims), SequenceAt, Erase,
    Insert, Length, ConcatFromSequence (concat and stack), SequenceEmpty and
    SequenceConstruct, Optional with OptionalHasElement/GetElement."""
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    nodes = [
        helper.make_node("SplitToSequence", ["X", "sp"], ["s"], axis=1),
        helper.make_node("SequenceAt", ["s", "one"], ["a"]),
        helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("SequenceErase", ["s", "zero"], ["s2"]),
        helper.make_node("SequenceInsert", ["s2", "ar", "zero"], ["s3"]),
        helper.make_node("SequenceLength", ["s3"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=F),
        helper.make_node("ConcatFromSequence", ["s3"], ["c"], axis=1),
        helper.make_node("Mul", ["c", "nf"], ["Y"])]
    write(out_dir, "seq_split_concat", nodes, [i64("sp", [1, 2, 3]), i64("one", 1), i64("zero", 0)], [4, 6],
          [vi("Y", [4, 7])], opset=13)
    print("seq_split_concat 4x6 -1,1")
    nodes = [
        helper.make_node("SplitToSequence", ["X"], ["s"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["s"], ["Y"], axis=1, new_axis=1)]
    write(out_dir, "seq_stack", nodes, [], [3, 4], [vi("Y", [4, 3])], opset=13)
    print("seq_stack 3x4 -1,1")
    nodes = [
        helper.make_node("Neg", ["X"], ["nx"]),
        helper.make_node("SequenceConstruct", ["X", "nx"], ["s"]),
        helper.make_node("SequenceEmpty", [], ["e"]),
        helper.make_node("SequenceAt", ["s", "last"], ["b"]),
        helper.make_node("SequenceInsert", ["e", "b"], ["e2"]),
        helper.make_node("SequenceInsert", ["e2", "X"], ["e3"]),
        helper.make_node("ConcatFromSequence", ["e3"], ["Y"], axis=0)]
    write(out_dir, "seq_construct", nodes, [i64("last", -1)], [2, 3], [vi("Y", [4, 3])], opset=13)
    print("seq_construct 2x3 -1,1")
    nodes = [
        helper.make_node("Optional", ["X"], ["o"]),
        helper.make_node("OptionalHasElement", ["o"], ["h"]),
        helper.make_node("OptionalGetElement", ["o"], ["g"]),
        helper.make_node("Cast", ["h"], ["hf"], to=F),
        helper.make_node("Mul", ["g", "hf"], ["Y"])]
    write(out_dir, "optional_chain", nodes, [], [5], [vi("Y", [5])], opset=18)
    print("optional_chain 5 -1,1")
    # SequenceMap: a body per item, with a tensor input beside the sequence
    # and an outer tensor read inside; two output sequences
    body = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "k"], ["m"]),
         helper.make_node("Add", ["m", "W"], ["y"]), helper.make_node("ReduceSum", ["x"], ["z"], keepdims=1)],
        "map", [vi("x", [4]), vi("k", [4])], [vi("y", [4]), vi("z", [1])])
    nodes = [
        helper.make_node("SplitToSequence", ["X"], ["s"], axis=0, keepdims=0),
        helper.make_node("SequenceMap", ["s", "K"], ["ys", "zs"], body=body, name="map"),
        helper.make_node("ConcatFromSequence", ["ys"], ["Y"], axis=0, new_axis=1),
        helper.make_node("ConcatFromSequence", ["zs"], ["Z"], axis=0)]
    write(out_dir, "seq_map", nodes, [const("K", [0.5, -1.0, 2.0, 1.5]), const("W", [0.1, 0.2, 0.3, 0.4])],
          [3, 4], [vi("Y", [3, 4]), vi("Z", [3])], opset=17)
    print("seq_map 3x4 -1,1")


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
    # a negative trip count, and two scan inputs of different lengths
    body = helper.make_graph([helper.make_node("Identity", ["v"], ["vo"]), helper.make_node("Identity", ["c"], ["co"])],
                             "b", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                   helper.make_tensor_value_info("c", TensorProto.BOOL, []), vi("v", [2])],
                             [helper.make_tensor_value_info("co", TensorProto.BOOL, []), vi("vo", [2])])
    write(out_dir, "bad_loop_negative", [helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body, name="neg")],
          [numpy_helper.from_array(np.array(-3, np.int64), "M")], [2], [vi("Y", [2])], opset=13)
    sb = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "sb", [vi("a", []), vi("b", [])],
                           [vi("y", [])])
    write(out_dir, "bad_scan_lengths", [
        helper.make_node("Scan", ["X", "Z"], ["Y"], body=sb, num_scan_inputs=2, name="mismatch")],
        [const("Z", np.zeros(3))], [2], [vi("Y", [2])], opset=11)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if_conv(out)
    if_nested(out)
    if_shapes(out)
    if_const(out)
    loops(out)
    sequences(out)
    bad(out)


if __name__ == "__main__":
    main()
