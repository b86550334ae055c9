// The ONNX Runtime half of scripts/verify-export.sh: run the original model
// and the exported one on the same inputs in onnxruntime-node (CPU) and
// write their outputs as raw little-endian files for verify_export.py.
//
// usage: node verify_export.js <ort_dir> <work_dir>
// Reads <work_dir>/manifest.json (written by verify_export.py prepare):
//   {"original": path, "exported": path,
//    "inputs": [{"name", "dims", "fp32": raw file, "fp16": raw file or null}
//               or {"name", "dims", "int64": raw file}],
//    "outputs": [name, ...]}
// Writes <work_dir>/ort.json: per model, either {"error": message} (ORT
// refused to load or run it: the table says so) or {"outputs": [{"name",
// "type", "dims", "file"}]}.
'use strict';
const fs = require('fs');
const path = require('path');

const [ortDir, work] = process.argv.slice(2);
if (!ortDir || !work) {
  console.error('usage: node verify_export.js <ort_dir> <work_dir>');
  process.exit(2);
}
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
const man = JSON.parse(fs.readFileSync(path.join(work, 'manifest.json'), 'utf8'));

function raw(file, Type) {
  const b = fs.readFileSync(file);
  return new Type(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

async function runModel(key, file) {
  let sess;
  try {
    // The exported model as ORT optimised it (its inserted Casts show which
    // nodes it computes in fp32), for verify_export.py's table.
    const opt = { intraOpNumThreads: 2, logSeverityLevel: 3 };
    if (key === 'exported') opt.optimizedModelFilePath = path.join(work, 'ort_optimized.onnx');
    sess = await ort.InferenceSession.create(file, opt);
  } catch (e) {
    return { error: `ORT cannot load it: ${String(e.message || e).split('\n')[0]}` };
  }
  const feeds = {};
  for (const inp of man.inputs) {
    // The exported model's input type decides (keep-io off: the low type).
    const meta = sess.inputMetadata ? sess.inputMetadata.find((m) => m.name === inp.name) : null;
    const type = meta && meta.type ? meta.type : 'float32';
    if (inp.int64) {
      feeds[inp.name] = new ort.Tensor('int64', raw(inp.int64, BigInt64Array), inp.dims);
    } else if (type === 'float16') {
      if (!inp.fp16) return { error: `input ${inp.name} is float16 and no float16 data was made` };
      feeds[inp.name] = new ort.Tensor('float16', raw(inp.fp16, Uint16Array), inp.dims);
    } else {
      feeds[inp.name] = new ort.Tensor('float32', raw(inp.fp32, Float32Array), inp.dims);
    }
  }
  let res;
  try {
    res = await sess.run(feeds);
  } catch (e) {
    return { error: `ORT cannot run it: ${String(e.message || e).split('\n')[0]}` };
  }
  const outs = [];
  for (const name of man.outputs) {
    const t = res[name];
    if (!t) return { error: `ORT returned no output ${name}` };
    const out = path.join(work, `ort_${key}_${outs.length}.raw`);
    const d = t.data;
    fs.writeFileSync(out, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    outs.push({ name, type: t.type, dims: t.dims.map(Number), file: out });
  }
  return { outputs: outs };
}

(async () => {
  const result = {
    original: await runModel('original', man.original),
    exported: await runModel('exported', man.exported),
  };
  fs.writeFileSync(path.join(work, 'ort.json'), JSON.stringify(result, null, 1));
})().catch((e) => {
  console.error(`verify_export.js: ${e.stack || e}`);
  process.exit(1);
});
