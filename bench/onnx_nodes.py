"""bench/onnx_nodes.py - the nodes of an ONNX model as JSON, for bench.js
--profile: each node's name, op type, domain, input and output tensor names
(main graph only; initializers are not listed). Reads the model without its
external data.

usage: onnx_nodes.py <model.onnx>
"""
import json
import sys

import onnx


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_nodes.py <model.onnx>")
    m = onnx.load(sys.argv[1], load_external_data=False)
    nodes = [{"name": n.name, "op": n.op_type, "domain": n.domain,
              "inputs": list(n.input), "outputs": list(n.output)} for n in m.graph.node]
    json.dump(nodes, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
