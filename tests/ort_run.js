// The ONNX Runtime half of tests/ort_compare.sh: run a model in ORT on the
// inputs mpx generated (read from mpx's .npy files), time it, and compare
// every tensor ORT can return with the one mpx's fp32 reference computed.
//
//  - timing: the unmodified model, default graph optimisations, after one
//    warm-up run, minimum of --repeat runs;
//  - agreement: the model with every node output made a graph output
//    (tests/ort_compare.py); float tensors need rel_l2 = |mpx - ort| / |ort|
//    below --bound, integer and bool tensors must be equal; every tensor ORT
//    returns must have been kept by mpx, with the same shape.
//
// usage: node ort_run.js <ort_dir> <model.onnx> <all_outputs.onnx> <mpx_dir> <label>
//                        [--bound 1e-5] [--threads 2] [--repeat 5]
// Exit status 0 when everything agrees.
'use strict';
const fs = require('fs');
const path = require('path');

const args = process.argv.slice(2);
const opt = { bound: 1e-5, threads: 2, repeat: 5 };
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith('--') && i + 1 < args.length) opt[args[i].slice(2)] = Number(args[++i]);
  else pos.push(args[i]);
}
if (pos.length !== 5 || !(opt.bound > 0) || !(opt.threads >= 1) || !(opt.repeat >= 1)) {
  console.error('usage: node ort_run.js <ort_dir> <model.onnx> <all_outputs.onnx> <mpx_dir> <label> ' +
    '[--bound 1e-5] [--threads 2] [--repeat 5]');
  process.exit(2);
}
const [ortDir, modelPath, allPath, mpxDir, label] = pos;
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));

// ---- .npy (NumPy format 1.0-3.0, little-endian, C order) ----------------------

const NPY_TYPES = {
  '<f4': Float32Array, '<f8': Float64Array, '<i8': BigInt64Array, '<i4': Int32Array,
  '<i2': Int16Array, '|i1': Int8Array, '|u1': Uint8Array, '|b1': Uint8Array,
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) throw new Error(`${file}: bad .npy header ${header}`);
  if (order[1] === 'True') throw new Error(`${file}: Fortran order`);
  const Type = NPY_TYPES[descr[1]];
  if (!Type) throw new Error(`${file}: dtype ${descr[1]} not handled`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const off = start + hlen;
  if (buf.length - off < n * Type.BYTES_PER_ELEMENT) throw new Error(`${file}: short data`);
  // Copy so the typed array is aligned whatever the header length.
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset + off, n * Type.BYTES_PER_ELEMENT).slice();
  return { descr: descr[1], dims, data: new Type(bytes.buffer) };
}

function writeNpyF32(file, data, dims) {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  h += ' '.repeat((64 - ((10 + h.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 255, h.length >> 8]);
  const f32 = Float32Array.from(data);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(h, 'latin1'), Buffer.from(f32.buffer)]));
}

// ---- comparison -----------------------------------------------------------------

const FLOAT_TYPES = new Set(['float32', 'float64']);
const INT_TYPES = new Set(['int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'bool']);

function sameDims(a, b) {
  return a.length === b.length && a.every((d, i) => Number(d) === Number(b[i]));
}

// rel_l2 of mpx (c) against ORT (r): |c - r|_2 / |r|_2 in double; a NaN or
// infinity anywhere that is not matched exactly makes it Infinity. The
// values are scaled by a power of two (exact: the ratio is unchanged) that
// brings the largest finite magnitude near 1, so that float64 tensors
// holding 1e229 do not overflow the sums of squares.
function relL2(r, c) {
  let big = 0;
  for (let i = 0; i < r.length; i++) {
    if (Number.isFinite(r[i])) big = Math.max(big, Math.abs(r[i]));
    if (Number.isFinite(c[i])) big = Math.max(big, Math.abs(c[i]));
  }
  const e = big > 0 ? Math.max(-1000, Math.min(1000, Math.floor(Math.log2(big)))) : 0;
  const sc = Math.pow(2, -e);
  let num = 0, den = 0, maxAbs = 0;
  for (let i = 0; i < r.length; i++) {
    const x = r[i] * sc, y = c[i] * sc;
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y))) continue;
      return { rel: Infinity, maxAbs: Infinity };
    }
    const d = y - x;
    num += d * d;
    den += x * x;
    if (Math.abs(d) / sc > maxAbs) maxAbs = Math.abs(d) / sc;
  }
  const rel = num === 0 ? 0 : den === 0 ? Infinity : Math.sqrt(num / den);
  return { rel, maxAbs };
}

function intsEqual(r, c) {
  for (let i = 0; i < r.length; i++) if (BigInt(r[i]) !== BigInt(c[i])) return i;
  return -1;
}

function readManifest(dir) {
  const m = { inputs: [], tensors: new Map(), run: null };
  for (const line of fs.readFileSync(path.join(dir, 'manifest.tsv'), 'utf8').split('\n')) {
    if (!line) continue;
    const f = line.split('\t');
    if (f[0] === 'input') m.inputs.push({ name: f[1], file: f[2] });
    else if (f[0] === 'tensor') m.tensors.set(f[1], { file: f[2], dtype: f[3] });
    else if (f[0] === 'run') m.run = { firstMs: Number(f[1]), minMs: Number(f[2]), repeat: Number(f[3]) };
  }
  return m;
}

function fmt(x) { return x === 0 ? '0' : x.toExponential(2); }

// ---- main -----------------------------------------------------------------------

(async () => {
  const man = readManifest(mpxDir);
  const producers = JSON.parse(fs.readFileSync(allPath.replace(/\.onnx$/, '.json'), 'utf8'));
  const where = (name) => (producers[name] ? `node "${producers[name][0]}" ${producers[name][1]}` : 'no node');
  const feeds = {};
  let shapeText = '';
  for (const inp of man.inputs) {
    const v = readNpy(path.join(mpxDir, inp.file));
    // float inputs, and int64 ones (a sample rate, a length)
    const kind = { '<f4': 'float32', '<f8': 'float64', '<i8': 'int64' }[v.descr];
    if (!kind) throw new Error(`input ${inp.name}: mpx wrote ${v.descr}, expected float32, float64 or int64`);
    feeds[inp.name] = new ort.Tensor(kind, v.data, v.dims);
    shapeText += (shapeText ? ',' : '') + v.dims.join('x');
  }
  const sessOpts = { intraOpNumThreads: opt.threads, interOpNumThreads: 1 };

  // Timing on the model as shipped.
  const plain = await ort.InferenceSession.create(modelPath, sessOpts);
  const finalOut = await plain.run(feeds);
  let ortMs = Infinity;
  for (let i = 0; i < opt.repeat; i++) {
    const t = performance.now();
    await plain.run(feeds);
    ortMs = Math.min(ortMs, performance.now() - t);
  }

  // Every tensor.
  const all = await ort.InferenceSession.create(allPath, sessOpts);
  const out = await all.run(feeds);
  const over = [], missing = [], problems = [];
  let nFloat = 0, nInt = 0, nOther = 0;
  let worst = { rel: -1, name: '' };
  const outputsReport = [];
  for (const name of all.outputNames) {
    const t = out[name];
    const isFloat = FLOAT_TYPES.has(t.type), isInt = INT_TYPES.has(t.type);
    if (!isFloat && !isInt) { nOther++; continue; }
    const entry = man.tensors.get(name);
    if (!entry) { missing.push(`${name} (${where(name)})`); continue; }
    const v = readNpy(path.join(mpxDir, entry.file));
    if (!sameDims(t.dims, v.dims)) {
      problems.push(`${name} (${where(name)}): mpx shape ${v.dims.join('x')}, ORT ${t.dims.join('x')}`);
      continue;
    }
    if (isFloat) {
      nFloat++;
      // float64 is computed and written as float64 (<f8), every other float as fp32
      if (!(v.data instanceof (t.type === 'float64' ? Float64Array : Float32Array))) {
        problems.push(`${name} (${where(name)}): ORT ${t.type}, mpx wrote ${v.descr}`);
        continue;
      }
      const { rel, maxAbs } = relL2(t.data, v.data);
      if (rel > worst.rel) worst = { rel, name };
      if (!(rel < opt.bound)) over.push({ name, rel, maxAbs, dims: t.dims, spread: NaN });
      if (finalOut[name]) {
        // ORT fuses more in the model as shipped, so its output moves by
        // rounding; a large difference would mean the all-outputs model
        // computes something else.
        const s = relL2(finalOut[name].data, t.data);
        outputsReport.push(`${name} rel_l2 ${fmt(rel)} (ORT shipped model vs all-outputs model: ${fmt(s.rel)})`);
        if (!(s.rel < 1e-3)) problems.push(`${name}: ORT's runs of the shipped and all-outputs models differ (rel_l2 ${fmt(s.rel)})`);
      }
    } else {
      nInt++;
      if (v.data instanceof Float32Array || v.data instanceof Float64Array) {
        problems.push(`${name} (${where(name)}): ORT ${t.type}, mpx wrote ${v.descr}`);
        continue;
      }
      const at = intsEqual(t.data, v.data);
      if (at >= 0) problems.push(`${name} (${where(name)}): ${t.type} differs at flat index ${at}: mpx ${v.data[at]}, ORT ${t.data[at]}`);
    }
  }
  for (const name of plain.outputNames)
    if (!all.outputNames.includes(name)) problems.push(`model output ${name} missing from the all-outputs model`);

  // When something is over the bound: ORT's own spread on the same model with
  // graph optimisations off (other kernels, other summation orders). Not part
  // of the verdict; printed to help tell fp32 rounding noise from a bug.
  let noisy = 0;
  if (over.length) {
    const noOpt = await (await ort.InferenceSession.create(allPath,
      { ...sessOpts, graphOptimizationLevel: 'disabled' })).run(feeds);
    for (const o of over) o.spread = relL2(out[o.name].data, noOpt[o.name].data).rel;
    for (const name of all.outputNames)
      if (FLOAT_TYPES.has(out[name].type) && !(relL2(out[name].data, noOpt[name].data).rel < opt.bound)) noisy++;
  }

  const compared = nFloat + nInt;
  const ok = over.length === 0 && missing.length === 0 && problems.length === 0 && nFloat > 0;
  console.log(`ort_compare ${label} (${shapeText}): ${ok ? 'ok' : 'FAIL'}: ${compared} tensors compared ` +
    `(${nFloat} float with rel_l2 < ${opt.bound.toExponential()}, ${nInt} integer/bool exactly)` +
    (nOther ? `, ${nOther} of other types not compared` : ''));
  if (worst.rel >= 0) console.log(`  worst rel_l2 ${fmt(worst.rel)}: ${worst.name} (${where(worst.name)})`);
  console.log(`  model outputs: ${outputsReport.join(', ') || '(none compared)'}`);
  // ORT's values of the tensors over the bound, for ort_compare.py's float64
  // diagnosis (ort_compare.sh runs it when this run fails).
  const overList = over.map((o, k) => {
    const file = `ort_over_${k}.npy`;
    writeNpyF32(path.join(mpxDir, file), out[o.name].data, o.dims);
    return `${o.name}\t${file}\n`;
  });
  if (overList.length) fs.writeFileSync(path.join(mpxDir, 'over.tsv'), overList.join(''));
  for (const o of over.sort((a, b) => b.rel - a.rel))
    console.log(`  OVER BOUND: ${o.name} (${where(o.name)}) ${o.dims.join('x')}: rel_l2 ${fmt(o.rel)}, ` +
      `max_abs ${fmt(o.maxAbs)}; ORT against itself unoptimised: rel_l2 ${fmt(o.spread)}`);
  if (noisy)
    console.log(`  note: on ${noisy} tensors ORT's optimised and unoptimised runs differ by rel_l2 >= ${opt.bound.toExponential()} themselves`);
  if (missing.length)
    console.log(`  ${missing.length} tensors ORT returns were not kept by mpx, e.g. ${missing.slice(0, 5).join('; ')}`);
  for (const p of problems) console.log(`  ${p}`);
  const mpxMs = man.run ? man.run.minMs : NaN;
  console.log(`  timing ${label} ${shapeText}: mpx fp32 reference ${mpxMs.toFixed(1)} ms` +
    (man.run ? ` (min of ${man.run.repeat})` : '') +
    `, ONNX Runtime ${ortMs.toFixed(1)} ms (onnxruntime-node, ${opt.threads} threads, min of ${opt.repeat} after a warm-up)`);
  process.exit(ok ? 0 : 1);
})().catch((e) => { console.error(`ort_compare ${label}: ${e.stack || e}`); process.exit(1); });
