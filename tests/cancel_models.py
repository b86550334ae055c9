#!/usr/bin/env python3
"""cancel_models.py OUT_DIR - models whose one node runs for minutes or hours,
for the tests of Ctrl-C and the loop budget (interactive.sh, hostile_inputs.sh):

- loop.onnx: x [256, 256] -> Loop of 1,000,000 trips (under the 2^20 cap),
  its body v -> MatMul(v, W) with W an input of the main graph ([256, 256]):
  a 256 x 256 x 256 product per iteration, hours in all.
- matmul.onnx: x [4096, 4096] x w [4096, 4096] -> y, one MatMul node as the
  graph's last: seconds of work, which no check between nodes can stop.

Inputs rather than initializers keep the files small (`input` makes the
values)."""
import os
import sys

from onnx import TensorProto, helper, save


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("MatMul", ["v", "W"], ["v2"], name="mm"),
         helper.make_node("Identity", ["c"], ["co"], name="keep")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", f, [256, 256])],
        [helper.make_tensor_value_info("co", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v2", f, [256, 256])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "T", "x"], ["y"], body=body, name="loop")],
        "loop",
        [helper.make_tensor_value_info("x", f, [256, 256]), helper.make_tensor_value_info("W", f, [256, 256])],
        [helper.make_tensor_value_info("y", f, [256, 256])],
        [helper.make_tensor("M", TensorProto.INT64, [], [1000000]),
         helper.make_tensor("T", TensorProto.BOOL, [], [True])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "loop.onnx"))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "matmul",
        [helper.make_tensor_value_info("x", f, [4096, 4096]), helper.make_tensor_value_info("w", f, [4096, 4096])],
        [helper.make_tensor_value_info("y", f, [4096, 4096])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(out, "matmul.onnx"))


if __name__ == "__main__":
    main()
