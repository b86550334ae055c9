// bench.js - the driver bench/run.sh starts: mpx against ONNX Runtime on the
// PP-OCR models, measured in one run, interleaved, several rounds, medians.
//
// Per model and round, in this order (so drifting machine load hits every
// measurement alike):
//   (1) ort_fp32   ONNX Runtime, the model as shipped, all graph optimisations,
//                  --ort-threads intra-op threads (default 2), --ort-reps runs
//   (3) mpx_fp32   the fp32 reference forward (mpx_bench fp32: mpx_run_graph,
//                  streaming: each value freed after its last reader)
//   (2) ort_all    ONNX Runtime on the same model with every node output made
//                  a graph output (tests/ort_compare.py all-outputs)
//   (4) mpx_report fp32 reference + fp16 + bf16 per-layer comparisons, every
//                  metric, one shared reference (mpx_bench report)
//   (4b) mpx_report1  the same, one format at a time (mpx_bench report1:
//                  the reference runs twice; two live activation sets at the
//                  peak instead of three)
//   (5) mpx_acc16  every node in fp16, fp16 accumulation rounded after every
//                  addition (mpx_bench acc16)
//   (6) mpx_rerun  the fp16 comparison again after recolouring the last
//                  Conv/Gemm/MatMul red (mpx_bench rerun: with the run cache,
//                  only the nodes downstream of the change are recomputed)
//   (7) mpx_run    the REPL's `run` as a user runs it (mpx_bench run): the
//                  default fp16 plan, fp32 reference + fp16 candidate, every
//                  layer's metrics, a run cache of the default budget; load
//                  not timed; a process of its own with no untimed run before,
//                  so each sample is a session's first run (fresh memory)
//   (3b) mpx_fp32_nofuse  (3) with MPX_FUSE=0: every elementwise node on
//                  its own instead of chains run by tiles (numerics/fuse.c);
//                  what the fusion gives, measured in the same run
// and once a round, the machine's fused multiply-add peak on --ort-threads
// threads (mpx_bench peak, the best of all rounds): (4)'s multiply-adds
// (report_gmacs: the reference's and each candidate's low nodes') at that
// peak are a floor no implementation of (4) on this machine beats; 4lo/2
// is that floor over (2), and above 1.0 the target (4) <= 1.0 is out of
// reach on this machine by arithmetic alone.
// Each mpx measurement is its own process (the peak RSS is that mode's);
// its JSON line carries its samples. Every timed run follows an untimed one
// in the same process, as ONNX Runtime's follow a warm-up run: the first run
// of a fresh process pays for memory the machine has not handed it yet (on
// this VM the first fp16 run of det took 2.4 s, the next ones 0.9 s). For
// (6) the untimed run is the first report, before the recolouring. Medians
// are over all samples of all rounds.
//
// usage: node bench.js --build DIR --ort DIR --models DIR --py PYTHON --root DIR
//                      [--only det,rec,cls] [--rounds 3] [--ort-reps 10]
//                      [--mpx-reps 3] [--heavy-reps 1] [--ort-threads 2]
//                      [--out FILE] [--work DIR] [--suite DIR]
//        node bench.js ... --profile MODEL [--shape AxBxC] [--rounds 3] [--mpx-reps N] [--alone 1]
//
// --profile MODEL (a model's key: det, rec, cls or a suite model's name; or a
// file.onnx with --shape): the per-op comparison with ONNX Runtime instead of
// the table above. mpx: `mpx_bench profile` (every node timed as the fp32
// forward runs it: mpx_run_graph streaming, a node writing over an input
// that dies at it, a chain of elementwise nodes by tiles sharing its time;
// --mpx-reps runs a round, each node's samples, by default as many as
// ORT's --ort-reps, after 3 untimed runs in its fresh process: ORT's one
// session stays warm through every round, and 5 runs after one untimed
// left a small model's medians to the host's slow spells (MobileNetV3-
// Small's node sum 2.1-3.7 ms from process to process, 2.1 over 100
// runs); --alone 1: every node on
// its own instead, into fresh memory, mpx_bench profile --alone). ORT: the
// same model, input and session options with enableProfiling: its
// Chrome-trace JSON has one event per node of ORT's optimised graph a run
// (--ort-reps runs a round after one untimed). Rounds interleave the two;
// each node's time is the median of all its samples. ORT fuses nodes
// (Conv+BatchNormalization+activation into one Conv, the NCHWc layout,
// LayerNormalization, attention, ...) and names the fused node after none
// of the original ones reliably, so the groups come from the optimised
// graph itself (optimizedModelFilePath, read by bench/onnx_nodes.py; formGroups
// below): an original node belongs to the ORT node that produces one of its
// outputs (through ReorderInput/ReorderOutput and the Reshapes around a Gemm
// ORT made of a MatMul and its Add; an NCHWc node stands for the
// tensor its name gives, a "<node>/<Kind>Fusion/" for that node's output);
// a node ORT fused away joins the elementwise (or LayerNormalization) ORT
// node after it when that node reads its input (or its fused-away
// predecessors'; a residual Add in SkipLayerNormalization), else its
// producer's group if it is of a kind ORT folds into the node before it
// (FOLLOWERS), else its first consumer's. A group's label is its original nodes' kinds in order
// ("Conv[dw]" a depthwise Conv); the table sums groups of the same label.
// ORT's layout reorders have no mpx node: a row of their own.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const opt = {
  only: 'det,rec,cls', rounds: 3, 'ort-reps': 10, 'mpx-reps': 3, 'heavy-reps': 1,
  'ort-threads': 2, out: '', work: '', suite: '', profile: '', shape: '', alone: '',
};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (!args[i].startsWith('--') || i + 1 >= args.length) {
    console.error(`bench.js: bad argument ${args[i]}`);
    process.exit(2);
  }
  opt[args[i].slice(2)] = args[++i];
}
for (const k of ['rounds', 'ort-reps', 'mpx-reps', 'heavy-reps', 'ort-threads']) opt[k] = Number(opt[k]);
if (opt.profile && !args.includes('--mpx-reps')) opt['mpx-reps'] = opt['ort-reps'];
for (const k of ['build', 'ort', 'models', 'py', 'root'])
  if (!opt[k]) { console.error(`bench.js: --${k} is required`); process.exit(2); }
const work = opt.work || path.join(opt.build, 'bench');
const outFile = opt.out || path.join(opt.root, 'out', 'bench', opt.profile ? 'profile.json' : 'results.json');
fs.mkdirSync(work, { recursive: true });
fs.mkdirSync(path.dirname(outFile), { recursive: true });
const ort = require(path.join(opt.ort, 'node_modules', 'onnxruntime-node'));
const mpxBench = path.join(opt.build, 'mpx_bench');

const MODELS = {
  det: { file: 'ch_PP-OCRv4_det_infer.onnx', shape: '1x3x640x640', image: 'page' },
  rec: { file: 'ch_PP-OCRv4_rec_infer.onnx', shape: '1x3x48x320', image: 'line' },
  cls: { file: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', shape: '1x3x48x192', image: 'line' },
};
// --suite DIR: the models bench/torch_models.py exported (DIR/suite.json),
// fed seeded normal noise (their weights are random too), after the PP-OCR ones.
if (opt.suite) {
  for (const e of JSON.parse(fs.readFileSync(path.join(opt.suite, 'suite.json'), 'utf8'))) {
    MODELS[e.name] = { file: e.file, dir: opt.suite, shape: e.shape, image: 'none' };
    if (!args.includes('--only')) opt.only += ',' + e.name; /* --only names what to run, suite models too */
  }
}

if (opt.profile && opt.profile.endsWith('.onnx')) {
  if (!opt.shape) { console.error('bench.js: --profile FILE.onnx needs --shape AxBxC'); process.exit(2); }
  MODELS[opt.profile] = { file: path.resolve(opt.profile), dir: '/', shape: opt.shape, image: 'none' };
}

function median(v) {
  if (!v.length) return NaN;
  const s = [...v].sort((a, b) => a - b), h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

function readNpyF32(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${file}: not float32`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset + start + hlen, n * 4).slice();
  return { dims, data: new Float32Array(bytes.buffer) };
}

// ONNX Runtime's intra-op pool threads spin after a run before they sleep
// (about 50 ms on the 2-vCPU EPYC VM; /proc/self/stat's CPU time grew at
// two CPUs' rate that long after the last run): an mpx process started
// then shares the CPUs with them, and a small model's whole measurement
// (load, warm-up, 3 runs of 1.5 ms) fell inside that window (MobileNetV3-
// Small's forward 2.2-6.0 ms there against 1.5 alone). So before each mpx
// process, this waits until this process's threads (ORT's among them) have
// used under a tenth of a CPU over 20 ms (their run times from each
// thread's /proc/self/task/<tid>/schedstat), for at most 5 s.
function threadsCpuNs() {
  let ns = 0;
  for (const t of fs.readdirSync('/proc/self/task')) {
    try {
      ns += Number(fs.readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch (e) { /* a thread that ended */ }
  }
  return ns;
}

async function ortSettle() {
  if (!fs.existsSync('/proc/self/task')) return;
  const t0 = performance.now();
  let prev = threadsCpuNs();
  while (performance.now() - t0 < 5000) {
    await new Promise((r) => setTimeout(r, 20));
    const now = threadsCpuNs();
    if (now - prev < 2e6) return;
    prev = now;
  }
}

function runMpx(modelPath, m, mode, reps, warmup, env) {
  const a = [modelPath, m.shape, mode, '--image', m.image, '--repeat', String(reps), '--warmup', String(warmup)];
  const r = spawnSync(mpxBench, a, { encoding: 'utf8', env: { ...process.env, ...(env || {}) }, maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`mpx_bench ${mode} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

async function timeOrt(session, feeds, reps) {
  await session.run(feeds); // warm-up
  const t = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    t.push(performance.now() - t0);
  }
  await ortSettle();
  return t;
}

function loadavg() { return os.loadavg().map((x) => Number(x.toFixed(2))); }

// ---- --profile: per-op comparison ----------------------------------------------------------

function onnxNodes(file) {
  const r = spawnSync(opt.py, [path.join(opt.root, 'bench', 'onnx_nodes.py'), file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`onnx_nodes.py ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const isReorder = (n) => n.domain === 'com.microsoft.nchwc' && /^Reorder(Input|Output)$/.test(n.op);
// The Reshapes ORT's MatMul+Add fusion puts around the Gemm it makes of a
// 3-D MatMul and its bias Add: the last one outputs the Add's tensor, which
// the Gemm computed, so they pass their tensor through as the reorders do
// (else the Add formed a group of its own against a Reshape's time).
const isGemmReshape = (n) => n.op === 'Reshape' && /^gemm_(input|output)_reshape/.test(n.name);

// Ops ORT folds into the node before them (Conv/Gemm/MatMul + BatchNormalization,
// activations, a residual Add as the Conv's sum input, the Cast and Mul after
// ConvInteger/MatMulInteger, the tail of LayerNormalization/GELU patterns).
const FOLLOWERS = new Set(['BatchNormalization', 'Relu', 'Clip', 'HardSwish', 'HardSigmoid', 'Sigmoid',
  'LeakyRelu', 'Tanh', 'Add', 'Sum', 'Mul', 'Div', 'Cast', 'Sqrt', 'Erf', 'Identity']);

// Consumers whose ORT node may have taken in the follower before them.
const INTO = new Set([...FOLLOWERS, 'LayerNormalization']);

// Groups: original node (by its first output) -> ORT node name. See the top.
function formGroups(orig, optim) {
  const parent = new Map();
  const find = (t) => { while (parent.has(t) && parent.get(t) !== t) t = parent.get(t); return t; };
  const union = (a, b) => { const ra = find(a), rb = find(b); if (ra !== rb) parent.set(ra, rb); };
  for (const n of optim) if (isReorder(n) || isGemmReshape(n)) union(n.outputs[0], n.inputs[0]);
  // An NCHWc node's output is a blocked tensor of its own; the node is named
  // after an original tensor inside its group ("<tensor>_nchwc": the one
  // before an activation fused later).
  for (const n of optim)
    if (n.domain === 'com.microsoft.nchwc' && !isReorder(n) && n.name.endsWith('_nchwc') && n.outputs[0])
      union(n.outputs[0], n.name.slice(0, -'_nchwc'.length));
  // A fusion's node is named "<the original node it ends at>/<Kind>Fusion/"
  // (QuickGeluFusion: Sigmoid and Mul; in NCHWc its output is blocked too).
  const origOut = new Map(orig.map((n) => [n.name, n.outputs[0]]));
  for (const n of optim) {
    const mm = /^(.*)\/[A-Za-z]*Fusion\/?(_\d+)?$/.exec(n.name);
    if (mm && origOut.get(mm[1]) && n.outputs[0]) union(n.outputs[0], origOut.get(mm[1]));
  }
  const producer = new Map(); // root tensor -> ORT node name
  for (const n of optim)
    if (!isReorder(n) && !isGemmReshape(n)) for (const t of n.outputs) if (t) producer.set(find(t), n.name);
  const made = new Map(), consumers = new Map();
  orig.forEach((n, i) => {
    n.outputs.forEach((t) => { if (t) made.set(t, i); });
    n.inputs.forEach((t) => { if (t) (consumers.get(t) || consumers.set(t, []).get(t)).push(i); });
  });
  // 1. anchors: a node one of whose outputs ORT computes belongs to that ORT node
  const group = orig.map((n) => {
    for (const t of n.outputs) if (t && producer.has(find(t))) return producer.get(find(t));
    return null;
  });
  // 2. the rest, to a fixed point: a follower joins its first input's
  // producer's group, any other node its first grouped consumer's; then
  // followers left over (nothing grouped before them) look forward too
  const fromProducer = (i) => {
    for (const t of orig[i].inputs) if (made.has(t)) return group[made.get(t)];
    return null;
  };
  const fromConsumer = (i) => {
    for (const t of orig[i].outputs) for (const c of consumers.get(t) || []) if (group[c] !== null) return group[c];
    return null;
  };
  // a follower whose input the ORT node of its consumer's group reads went
  // into that node (Sigmoid + Mul as QuickGelu reads what the Sigmoid read)
  const reads = new Map();
  for (const n of optim) if (!isReorder(n)) reads.set(n.name, new Set(n.inputs.filter((t) => t).map(find)));
  const intoConsumer = (i) => {
    const g = fromConsumer(i);
    if (g === null || !reads.get(g)) return null;
    // (only into an elementwise consumer's, or a LayerNormalization's, which
    // ORT's SkipLayerNormalization computes with the residual Add before it:
    // a pool after a Conv with a fused activation reads the tensor the NCHWc
    // Conv is named after too)
    if (!orig[i].outputs.some((t) => (consumers.get(t) || []).some((c) => group[c] === g && INTO.has(orig[c].op))))
      return null;
    // the ORT node reads what this node, or the ungrouped nodes before it,
    // read (GELU's Add(1, Erf(Div(x))): Gelu reads x)
    const seen = new Set(), todo = [i];
    while (todo.length && seen.size < 16) {
      const k = todo.pop();
      if (seen.has(k)) continue;
      seen.add(k);
      for (const t of orig[k].inputs) {
        if (!t || !made.has(t)) continue;
        if (reads.get(g).has(find(t))) return g;
        if (group[made.get(t)] === null) todo.push(made.get(t));
      }
    }
    return null;
  };
  // first, consumers before producers: fused patterns join the ORT node that
  // reads their input; then the rest
  for (let changed = true; changed;) {
    changed = false;
    for (let i = orig.length - 1; i >= 0; i--) {
      if (group[i] !== null || !FOLLOWERS.has(orig[i].op)) continue;
      const g = intoConsumer(i);
      if (g !== null) { group[i] = g; changed = true; }
    }
  }
  for (const followersForward of [false, true]) {
    for (let changed = true; changed;) {
      changed = false;
      for (let i = 0; i < orig.length; i++) {
        if (group[i] !== null) continue;
        const f = FOLLOWERS.has(orig[i].op);
        const g = f ? intoConsumer(i) || fromProducer(i) || (followersForward ? fromConsumer(i) : null) : fromConsumer(i);
        if (g !== null) { group[i] = g; changed = true; }
      }
    }
  }
  const byOutput = new Map();
  orig.forEach((n, i) => { if (n.outputs[0]) byOutput.set(n.outputs[0], group[i]); });
  // An ORT node none of whose outputs is an original tensor (a piece of a
  // function ORT inlined: HardSwish as HardSigmoid and Mul) counts in the
  // group of the ORT node that reads its output.
  const origRoots = new Set([...made.keys()].map(find));
  const optConsumer = new Map();
  for (const n of optim) for (const t of n.inputs) if (t && !optConsumer.has(find(t))) optConsumer.set(find(t), n);
  const ortGroup = new Map();
  for (const n of optim) {
    let m = n;
    for (let hops = 0; hops < 8 && !isReorder(m) && !m.outputs.some((t) => t && origRoots.has(find(t))); hops++) {
      const c = optConsumer.get(find(m.outputs[0]));
      if (!c) break;
      m = c;
    }
    // (a Gemm's Reshape counts in the Gemm's group, as its tensor does)
    ortGroup.set(n.name, isGemmReshape(m) ? producer.get(find(m.outputs[0])) || m.name : m.name);
  }
  return { byOutput, ortGroup };
}

// ORT's trace: node name -> durations in ms, the first `skip` of each dropped.
function ortNodeTimes(traceFile, skip) {
  const ev = JSON.parse(fs.readFileSync(traceFile, 'utf8'));
  const seen = new Map(), out = new Map(), opOf = new Map();
  for (const e of ev) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    const k = (seen.get(name) || 0) + 1;
    seen.set(name, k);
    opOf.set(name, e.args && e.args.op_name);
    if (k > skip) (out.get(name) || out.set(name, []).get(name)).push(e.dur / 1000);
  }
  return { times: out, opOf };
}

async function profileMode() {
  const key = opt.profile, m = MODELS[key];
  if (!m) throw new Error(`--profile ${key}: not a model key (${Object.keys(MODELS).join(', ')}) nor a .onnx file`);
  const modelPath = path.join(m.dir || opt.models, m.file);
  const stem = path.basename(modelPath, '.onnx');
  const npy = path.join(work, `${stem}_input.npy`);
  const w = spawnSync(mpxBench, [modelPath, m.shape, 'input', '--image', m.image, '--out', npy], { encoding: 'utf8' });
  if (w.status !== 0) throw new Error(`mpx_bench input: ${w.stderr}`);
  const x = readNpyF32(npy);
  const optFile = path.join(work, `${stem}_ort_optimised.onnx`);
  const prefix = path.join(work, `${stem}_ort_profile`);
  for (const f of fs.readdirSync(work)) if (f.startsWith(`${stem}_ort_profile`)) fs.unlinkSync(path.join(work, f));
  const so = { intraOpNumThreads: opt['ort-threads'], interOpNumThreads: 1, graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: prefix, optimizedModelFilePath: optFile };
  const sess = await ort.InferenceSession.create(modelPath, so);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.dims) };
  await sess.run(feeds); // untimed: dropped from the trace below
  const mpxSamples = new Map(); // first output -> {node, ms[]}
  const ortWall = [];
  for (let round = 0; round < opt.rounds; round++) {
    process.stderr.write(`bench: profile round ${round + 1}/${opt.rounds} ${key} `);
    for (let i = 0; i < opt['ort-reps']; i++) {
      const t0 = performance.now();
      await sess.run(feeds);
      ortWall.push(performance.now() - t0);
    }
    await ortSettle();
    process.stderr.write('.');
    const jf = path.join(work, `${stem}_mpx_profile.json`);
    const r = spawnSync(mpxBench, [modelPath, m.shape, 'profile', '--image', m.image, '--repeat', String(opt['mpx-reps']),
      '--warmup', '3', '--top', '0', '--out', jf, ...(opt.alone ? ['--alone'] : [])],
      { encoding: 'utf8', maxBuffer: 1 << 24 });
    if (r.status !== 0) throw new Error(`mpx_bench profile failed (${r.status}): ${r.stderr}`);
    for (const n of JSON.parse(fs.readFileSync(jf, 'utf8')).nodes) {
      const k = n.outputs[0] || n.name;
      if (!mpxSamples.has(k)) mpxSamples.set(k, { node: n, ms: [] });
      mpxSamples.get(k).ms.push(...n.ms);
    }
    process.stderr.write('.\n');
  }
  sess.endProfiling();
  await sess.release();
  const traces = fs.readdirSync(work).filter((f) => f.startsWith(`${stem}_ort_profile`) && f.endsWith('.json'));
  if (!traces.length) throw new Error('ONNX Runtime wrote no profile');
  const { times: ortTimes, opOf } = ortNodeTimes(path.join(work, traces.sort().pop()), 1);
  const optim = onnxNodes(optFile), orig = onnxNodes(modelPath);
  const optByName = new Map(optim.filter((n) => n.name).map((n) => [n.name, n]));
  // ORT's trace names an unnamed node "<op>_<node index>", an index the saved
  // model does not keep: pair them per op type, in index order against the
  // saved graph's order (one a type, as usual, leaves no doubt)
  const unnamed = new Map(), events = new Map();
  for (const n of optim) if (!n.name) (unnamed.get(n.op) || unnamed.set(n.op, []).get(n.op)).push(n);
  for (const name of ortTimes.keys()) {
    const mm = /^(.*)_(\d+)$/.exec(name);
    if (!optByName.has(name) && mm && unnamed.has(mm[1])) (events.get(mm[1]) || events.set(mm[1], []).get(mm[1])).push([Number(mm[2]), name]);
  }
  for (const [op, ev] of events) {
    ev.sort((a, b) => a[0] - b[0]);
    ev.forEach(([, name], i) => { const n = unnamed.get(op)[i]; if (n) { n.name = name; optByName.set(name, n); } });
  }

  const { byOutput: groupOf, ortGroup } = formGroups(orig, optim);
  // groups: ORT node name -> {kinds[], mpx ms, ort ms}
  const groups = new Map();
  const G = (name) => groups.get(name) || groups.set(name, { kinds: [], mpx: 0, ort: 0, ortOps: new Set() }).get(name);
  for (const [k, s] of mpxSamples) {
    const gname = groupOf.has(k) && groupOf.get(k) !== null ? groupOf.get(k) : `(no ORT node) ${k}`;
    const g = G(gname);
    g.kinds.push(s.node.kind);
    g.mpx += median(s.ms);
  }
  let reorderMs = 0, reorders = 0;
  for (const [name, ms] of ortTimes) {
    const on = optByName.get(name);
    if (on && isReorder(on)) { reorderMs += median(ms); reorders++; continue; }
    const g = G(ortGroup.get(name) || name);
    g.ort += median(ms);
    g.ortOps.add((on && on.domain === 'com.microsoft.nchwc' ? `${on.op}(nchwc)` : on ? on.op : opOf.get(name)) || '?');
  }
  const rows = new Map();
  for (const g of groups.values()) {
    // Identity nodes (the exporter's on weights) take no time: not in labels
    const kinds = g.kinds.filter((k) => k !== 'Identity' || g.kinds.every((q) => q === 'Identity'));
    const label = kinds.length ? [...new Set(kinds)].join('+') : `(ORT only) ${[...g.ortOps].join('+')}`;
    const r = rows.get(label) || rows.set(label, { count: 0, mpx: 0, ort: 0, ortOps: new Set() }).get(label);
    r.count++;
    r.mpx += g.mpx;
    r.ort += g.ort;
    for (const o of g.ortOps) r.ortOps.add(o);
  }
  if (reorders) rows.set('(ORT only) NCHWc layout reorders', { count: reorders, mpx: 0, ort: reorderMs, ortOps: new Set(['ReorderInput/Output']) });
  const sorted = [...rows.entries()].sort((a, b) => b[1].mpx - a[1].mpx);
  const tm = sorted.reduce((a, [, r]) => a + r.mpx, 0), to = sorted.reduce((a, [, r]) => a + r.ort, 0);
  const lines = [];
  const p = (t) => lines.push(t);
  const ortVersion = require(path.join(opt.ort, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  p(`per-op profile of ${key} (${m.shape}): mpx vs ONNX Runtime ${ortVersion} (${opt['ort-threads']} threads) on ` +
    `${os.cpus()[0] ? os.cpus()[0].model : '?'}, ${os.cpus().length} CPUs; load average ${loadavg().join(' ')}`);
  p(`${opt.rounds} interleaved rounds: ${opt['mpx-reps']} mpx runs and ${opt['ort-reps']} ORT runs a round; ms are each node's median over all samples, summed`);
  p('');
  const w0 = Math.max(28, ...sorted.map(([l]) => l.length));
  const head = `${'group (original nodes\' kinds)'.padEnd(w0)} count   mpx ms   ORT ms  ratio  ORT node(s)`;
  p(head);
  p('-'.repeat(head.length + 10));
  const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : a > 0 ? 'inf' : '-').padStart(6);
  for (const [label, r] of sorted)
    p(`${label.padEnd(w0)} ${String(r.count).padStart(5)} ${r.mpx.toFixed(3).padStart(8)} ${r.ort.toFixed(3).padStart(8)} ` +
      `${ratio(r.mpx, r.ort)}  ${[...r.ortOps].join(', ')}`);
  p('-'.repeat(head.length + 10));
  p(`${'total (sum of nodes)'.padEnd(w0)} ${''.padStart(5)} ${tm.toFixed(3).padStart(8)} ${to.toFixed(3).padStart(8)} ${ratio(tm, to)}`);
  p(`ORT's whole run with profiling on: median ${median(ortWall).toFixed(3)} ms`);
  p('');
  p('Groups: ORT\'s optimised graph (optimizedModelFilePath) names the tensors each of its nodes produces; an original');
  p('node belongs to the ORT node producing one of its outputs (through ReorderInput/ReorderOutput and the Reshapes around');
  p('a Gemm made of a MatMul and its Add; an NCHWc node by its name, "<tensor>_nchwc", a fusion\'s by "<node>/<Kind>Fusion/");');
  p('a node ORT fused away joins the elementwise or LayerNormalization ORT node');
  p('after it when that node reads its input or its fused-away predecessors\' (QuickGelu, Gelu, SkipLayerNormalization), else its producer\'s group');
  p('if it is of a kind ORT folds into the node before it (BatchNormalization, activations, Add, Mul, Cast, ...), else its');
  p('first consumer\'s; an ORT node that computes no original tensor counts in the group that reads it. A row sums the');
  p('groups of one label: the kinds of their original nodes, in order, once each ("Conv[dw]": a depthwise Conv); "count"');
  if (opt.alone) {
    p('is groups. mpx times every node on its own (mpx_bench profile --alone: into fresh memory, every value kept), a');
    p('chain of elementwise nodes run by tiles as mpx_run_graph runs it sharing its time among its nodes; ORT\'s NCHWc');
    p('reorders have no mpx node and are a row of their own; "(no ORT node)": nodes ORT removed with no consumer in a');
    p('group. Both sides\' per-node timing adds overhead: the totals exceed a plain forward.');
  } else {
    p('is groups. mpx times every node as its fp32 forward runs it (mpx_bench profile: mpx_run_graph streaming, a node');
    p('writing over an input that dies at it), a chain of elementwise nodes run by tiles sharing its time among its');
    p('nodes; ORT\'s NCHWc reorders have no mpx node and are a row of their own; "(no ORT node)": nodes ORT removed with');
    p('no consumer in a group. Both sides\' per-node timing adds overhead: the totals exceed a plain forward.');
  }
  const text = lines.join('\n');
  console.log(text);
  const rowsOut = Object.fromEntries(sorted.map(([l, r]) => [l, { count: r.count, mpx_ms: r.mpx, ort_ms: r.ort, ort_nodes: [...r.ortOps] }]));
  fs.writeFileSync(outFile, JSON.stringify({ when: new Date().toISOString(), model: key, shape: m.shape,
    cpu: os.cpus()[0] ? os.cpus()[0].model : '?', rounds: opt.rounds, mpx_timing: opt.alone ? 'alone' : 'as run',
    rows: rowsOut, table: text }, null, 1) + '\n');
  console.log(`\nresults: ${outFile}`);
}

(async () => {
  if (opt.profile) { await profileMode(); process.exit(0); }
  const keys = opt.only.split(',').filter((k) => MODELS[k]);
  const res = {
    when: new Date().toISOString(),
    machine: { cpu: os.cpus()[0] ? os.cpus()[0].model : '?', cpus: os.cpus().length, load_before: loadavg() },
    config: { rounds: opt.rounds, ort_reps: opt['ort-reps'], mpx_reps: opt['mpx-reps'],
      heavy_reps: opt['heavy-reps'], ort_threads: opt['ort-threads'],
      ort_version: require(path.join(opt.ort, 'node_modules', 'onnxruntime-node', 'package.json')).version,
      mpx_kern_threads: process.env.MPX_KERN_THREADS || '2 (default)' },
    models: {},
  };
  const state = {};
  for (const k of keys) {
    const m = MODELS[k], modelPath = path.join(m.dir || opt.models, m.file);
    const npy = path.join(work, `${k}_input.npy`);
    const w = spawnSync(mpxBench, [modelPath, m.shape, 'input', '--image', m.image, '--out', npy], { encoding: 'utf8' });
    if (w.status !== 0) throw new Error(`mpx_bench input: ${w.stderr}`);
    const all = spawnSync(opt.py, [path.join(opt.root, 'tests', 'ort_compare.py'), 'all-outputs', modelPath,
      path.join(work, 'models')], { encoding: 'utf8' });
    if (all.status !== 0) throw new Error(`ort_compare.py all-outputs: ${all.stderr}`);
    const x = readNpyF32(npy);
    const so = { intraOpNumThreads: opt['ort-threads'], interOpNumThreads: 1, graphOptimizationLevel: 'all' };
    const plain = await ort.InferenceSession.create(modelPath, so);
    const allSess = await ort.InferenceSession.create(all.stdout.trim(), so);
    const feeds = { [plain.inputNames[0]]: new ort.Tensor('float32', x.data, x.dims) };
    state[k] = { m, modelPath, plain, allSess, feeds, outputs: allSess.outputNames.length };
    res.models[k] = { shape: m.shape, file: m.file, ort_all_outputs: allSess.outputNames.length, samples: {}, runs: {} };
  }
  const add = (k, name, ms) => { (res.models[k].samples[name] ||= []).push(...ms); };
  const peaks = [];
  for (let round = 0; round < opt.rounds; round++) {
    const pk = spawnSync(mpxBench, ['peak', '--threads', String(opt['ort-threads'])], { encoding: 'utf8' });
    if (pk.status !== 0) throw new Error(`mpx_bench peak failed (${pk.status}): ${pk.stderr}`);
    peaks.push(JSON.parse(pk.stdout.trim().split('\n').pop()));
    for (const k of keys) {
      const s = state[k];
      process.stderr.write(`bench: round ${round + 1}/${opt.rounds} ${k} `);
      add(k, 'ort_fp32', await timeOrt(s.plain, s.feeds, opt['ort-reps']));
      process.stderr.write('.');
      // One mpx measurement: its samples, and its last process's record.
      const mpx = (name, mode, reps, warmup, env) => {
        const r = runMpx(s.modelPath, s.m, mode, reps, warmup, env);
        add(k, name, r.ms);
        res.models[k].runs[name] = r;
        process.stderr.write('.');
      };
      mpx('mpx_fp32', 'fp32', opt['mpx-reps'], 1);
      add(k, 'ort_all', await timeOrt(s.allSess, s.feeds, Math.max(1, opt['ort-reps'] >> 1)));
      process.stderr.write('.');
      mpx('mpx_report', 'report', opt['heavy-reps'], 1);
      mpx('mpx_report1', 'report1', opt['heavy-reps'], 1);
      mpx('mpx_acc16', 'acc16', opt['mpx-reps'], 1);
      mpx('mpx_rerun', 'rerun', opt['heavy-reps'], 0);
      mpx('mpx_fp32_nofuse', 'fp32', opt['mpx-reps'], 1, { MPX_FUSE: '0' });
      for (let i = 0; i < opt['heavy-reps']; i++) mpx('mpx_run', 'run', 1, 0);
      process.stderr.write('\n');
    }
  }
  res.machine.load_after = loadavg();
  const peak = peaks.reduce((a, b) => (b.gmacs > a.gmacs ? b : a));
  res.machine.fma_peak = { isa: peak.isa, threads: peak.threads, gmacs: peak.gmacs, rounds: peaks.map((x) => x.gmacs) };

  // ---- medians, ratios, table ----
  const lines = [];
  const p = (s) => lines.push(s);
  const fmtMs = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1)).padStart(8);
  const fmtR = (x) => x.toFixed(2).padStart(6);
  p(`mpx vs ONNX Runtime ${res.config.ort_version} (${res.config.ort_threads} threads) on ${res.machine.cpu}, ${res.machine.cpus} CPUs; ` +
    `${opt.rounds} rounds; load average ${res.machine.load_before.join(' ')} -> ${res.machine.load_after.join(' ')}`);
  p('median wall times in ms (all samples of all rounds); peak RSS of the mpx process in MB');
  p('');
  const head = 'model          shape         (1)ORT  (2)ORTall  (3)mpx32  (4)report (4b)report1  (5)acc16  (6)rerun (3b)nofuse   (7)run' +
    '   3/1    4/2   4b/2    5/3    6/4    7/2  4lo/2   RSS3   RSS4  RSS4b  val4  val4b  bound val4/bd';
  p(head);
  p('-'.repeat(head.length));
  for (const k of keys) {
    const M = res.models[k];
    const med = {};
    for (const [name, v] of Object.entries(M.samples)) med[name] = median(v);
    M.median_ms = med;
    M.ratios = {
      mpx_fp32_over_ort_fp32: med.mpx_fp32 / med.ort_fp32,
      mpx_report_over_ort_all: med.mpx_report / med.ort_all,
      mpx_report1_over_ort_all: med.mpx_report1 / med.ort_all,
      acc16_over_mpx_fp32: med.mpx_acc16 / med.mpx_fp32,
      rerun_over_report: med.mpx_rerun / med.mpx_report,
      mpx_fp32_nofuse_over_ort_fp32: med.mpx_fp32_nofuse / med.ort_fp32,
      mpx_run_over_ort_all: med.mpx_run / med.ort_all,
    };
    // (4)'s multiply-adds at the machine's peak: the floor of (4), over (2)
    M.report_gmacs = M.runs.mpx_report.report_gmacs;
    M.report_floor_ms = (1000 * M.report_gmacs) / peak.gmacs;
    M.ratios.report_floor_over_ort_all = M.report_floor_ms / med.ort_all;
    M.peak_rss_mb = { mpx_fp32: M.runs.mpx_fp32.peak_rss_mb, mpx_report: M.runs.mpx_report.peak_rss_mb,
      mpx_report1: M.runs.mpx_report1.peak_rss_mb, mpx_acc16: M.runs.mpx_acc16.peak_rss_mb };
    // values alive at once plus the weights' rounded copies kept on the graph
    // for the run (held all along; not values of the run, but its memory)
    const held = (r) => r.peak_value_mb + (r.kept_rounded_mb || 0);
    M.peak_value_mb = { mpx_report: held(M.runs.mpx_report),
      mpx_report1: held(M.runs.mpx_report1), bound: M.runs.mpx_report.bound_mb };
    const R = M.ratios;
    p(`${k.padEnd(14)} ${M.shape.padEnd(12)} ${fmtMs(med.ort_fp32)} ${fmtMs(med.ort_all).padStart(10)} ` +
      `${fmtMs(med.mpx_fp32).padStart(9)} ${fmtMs(med.mpx_report).padStart(10)} ${fmtMs(med.mpx_report1).padStart(12)} ` +
      `${fmtMs(med.mpx_acc16).padStart(9)} ` +
      `${fmtMs(med.mpx_rerun).padStart(9)} ${fmtMs(med.mpx_fp32_nofuse).padStart(10)} ${fmtMs(med.mpx_run)} ` +
      `${fmtR(R.mpx_fp32_over_ort_fp32)} ${fmtR(R.mpx_report_over_ort_all)} ${fmtR(R.mpx_report1_over_ort_all)} ` +
      `${fmtR(R.acc16_over_mpx_fp32)} ` +
      `${fmtR(R.rerun_over_report)} ${fmtR(R.mpx_run_over_ort_all)} ${fmtR(R.report_floor_over_ort_all)} ${String(Math.round(M.peak_rss_mb.mpx_fp32)).padStart(6)} ` +
      `${String(Math.round(M.peak_rss_mb.mpx_report)).padStart(6)} ` +
      `${String(Math.round(M.peak_rss_mb.mpx_report1)).padStart(6)} ` +
      `${M.peak_value_mb.mpx_report.toFixed(1).padStart(5)} ${M.peak_value_mb.mpx_report1.toFixed(1).padStart(6)} ` +
      `${M.peak_value_mb.bound.toFixed(1).padStart(6)} ${fmtR(M.peak_value_mb.mpx_report / M.peak_value_mb.bound).padStart(8)}`);
  }
  p('');
  p('(1) ORT fp32, model as shipped   (2) ORT fp32, every node output a graph output');
  p('(3) mpx fp32 reference forward (mpx_run_graph, streaming: each value freed after its last reader)');
  p('(4) mpx per-layer report: fp32 reference + fp16 and bf16 runs of the default plan, all metrics (one mpx_compare_run_many)');
  p('(5) mpx all-fp16 with fp16 accumulation rounded after every addition   (6) (4)\'s fp16 run again after recolouring');
  p('    the last Conv/ConvTranspose/Gemm/MatMul red: only what depends on the change is recomputed (run cache)   (3b) (3) with MPX_FUSE=0 (no elementwise chains run by tiles)');
  p('(4b) (4) one format at a time: two mpx_compare_run, the reference run twice');
  p('(7) the REPL\'s `run` as a user runs it: default fp16 plan, fp32 reference + fp16 candidate, every layer\'s metrics, default run');
  p('    cache; load not timed; each sample the first run of a fresh process (mpx_bench run); 7/2 target <= 1.0 (issue 47)');
  p('ratios (issue 20): 3/1 target <= 1.0 on det, rec and cls, <= 1.5 on the suite; 4/2 target <= 1.0; 5/3 target <= 2.0;');
  p('6/4 target <= 0.1; 4lo/2: (4)\'s multiply-adds (the reference\'s and each candidate\'s low nodes\') at the machine\'s fused');
  p(`multiply-add peak (${peak.isa}, ${peak.threads} threads, ${peak.gmacs.toFixed(1)} G/s, mpx_bench peak) over (2): above 1.0, (4) <= 1.0 is out of reach here;`);
  p('RSS: peak RSS of (3), (4), (4b) in MB;');
  p('val4/val4b: most value bytes (MB) alive at once in (4) and (4b) (mpx_compare peak_bytes) plus the weights rounded and kept on the graph; bound: 2 x (weights +');
  p('the largest live activation set of one fp32 forward on the streaming schedule, from the inferred shapes; mpx_bench');
  p('fp32_bound), target val4/bound <= 1.0');
  for (const k of keys) {
    const e = res.models[k].runs.mpx_rerun;
    p(`${k}: re-run recoloured node ${e.recoloured} (${e.node_index + 1} of ${e.nodes} in topological order)`);
  }
  const text = lines.join('\n');
  console.log(text);
  res.table = text;
  fs.writeFileSync(outFile, JSON.stringify(res, null, 1) + '\n');
  console.log(`\nresults: ${outFile}`);
  process.exit(0);
})().catch((e) => { console.error(`bench.js: ${e.stack || e}`); process.exit(1); });
