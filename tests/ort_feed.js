// Run one model in onnxruntime-node (CPU) on inputs given as .npy files
// (float32 or int64, little-endian, C order: what mpx's tensor --save-ref
// writes) and write each model output as <out_dir>/<index>.npy (float32).
// Used by tests/data_ort.py: ONNX Runtime fed exactly the values mpx decoded.
//
// usage: node ort_feed.js <ort_dir> <model.onnx> <out_dir> <input>=<x.npy> ...
'use strict';
const fs = require('fs');
const path = require('path');

const [ortDir, model, outDir, ...feedsArgs] = process.argv.slice(2);
if (!ortDir || !model || !outDir || feedsArgs.length === 0) {
  console.error('usage: node ort_feed.js <ort_dir> <model.onnx> <out_dir> <input>=<x.npy> ...');
  process.exit(2);
}
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));

// The .npy reader this needs: version 1.0 headers, '<f4' or '<i8', C order.
function readNpy(file) {
  const b = fs.readFileSync(file);
  const hlen = b.readUInt16LE(8);
  const header = b.toString('latin1', 10, 10 + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length);
  if (descr === '<f4') return new ort.Tensor('float32', new Float32Array(data), shape);
  if (descr === '<i8') return new ort.Tensor('int64', new BigInt64Array(data), shape);
  throw new Error(`${file}: dtype ${descr} not handled`);
}

function writeNpy(file, arr, dims) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength)]));
}

(async () => {
  const sess = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, logSeverityLevel: 3 });
  const feeds = {};
  for (const a of feedsArgs) {
    const eq = a.indexOf('=');
    feeds[a.slice(0, eq)] = readNpy(a.slice(eq + 1));
  }
  const res = await sess.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  sess.outputNames.forEach((name, i) => {
    const t = res[name];
    writeNpy(path.join(outDir, `${i}.npy`), Float32Array.from(t.data, Number), t.dims);
  });
})().catch((e) => {
  console.error(`ort_feed: ${e.message || e}`);
  process.exit(1);
});
