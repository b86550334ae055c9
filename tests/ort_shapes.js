// Run a model in ONNX Runtime with every tensor requested as an output and
// print {"tensor": [dims], ...}: the oracle for mpx's shape inference on
// tensors whose shapes ONNX's static inference cannot resolve.
// usage: node ort_shapes.js <ort_dir> <model.onnx> <input>=<AxBxC> ...
const path = require('path');
const ort = require(path.join(process.argv[2], 'node_modules', 'onnxruntime-node'));
(async () => {
  const session = await ort.InferenceSession.create(process.argv[3]);
  const feeds = {};
  let seed = 12345;
  for (const spec of process.argv.slice(4)) {
    const [name, shape] = spec.split('=');
    const dims = shape.split('x').map(Number);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) { seed = (seed * 1103515245 + 12345) % 2147483648; data[i] = seed / 2147483648; }
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  const out = await session.run(feeds);
  const shapes = {};
  for (const k of Object.keys(out)) shapes[k] = out[k].dims;
  process.stdout.write(JSON.stringify(shapes));
})().catch((e) => { console.error(String(e)); process.exit(1); });
