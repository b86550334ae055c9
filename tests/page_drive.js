// page_drive.js CHROMIUM PROFILE_DIR PAGE.html - a reviewer's clicks on a
// review page, in headless Chromium driven over the DevTools protocol
// (node --experimental-websocket: node 20's WebSocket; no npm package).
//
// Opens the page at 1400x900 and measures its first screen: the boxes of the
// graph on screen, the smallest rendered label font (CSS px), text outside
// its panel, whether the path from the worst output to its cause is one
// click away (printed as "page_drive: first screen: ..."; held to labels of
// 10 px or more, nothing outside its panel, and with a model view at most 24
// boxes). Then, as a person would: opens a scope of the model view in place
// and goes back by its path (a page folded by scopes), opens a box of the
// model view, comes back, searches a node by name, follows "row in the
// table", goes from a table row to the graph, filters the table by op and by
// overflow, sorts it, zooms and fits the graph, jumps to the worst layer.
// Each step checks what the page shows (the DOM, the view, the highlighted
// nodes, the SVG's viewBox). Any console message or uncaught exception fails
// the run. Prints one line per step; exit 1 on the first failure.
'use strict';
const { spawn } = require('child_process');

const [browser, profile, page] = process.argv.slice(2);
if (!page) {
  console.error('usage: page_drive.js CHROMIUM PROFILE_DIR PAGE.html');
  process.exit(2);
}

function fail(msg) {
  console.error('page_drive: FAIL: ' + msg);
  process.exit(1);
}
setTimeout(() => fail('timed out after 120 s'), 120000).unref();

const chrome = spawn(browser, ['--headless', '--no-sandbox', '--disable-gpu', '--user-data-dir=' + profile,
  '--remote-debugging-port=0', '--window-size=1400,900', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
process.on('exit', () => chrome.kill('SIGKILL'));

let seen = '';
chrome.stderr.on('data', (d) => {
  seen += d.toString();
  const m = /DevTools listening on (ws:\/\/\S+)/.exec(seen);
  if (m && !started) {
    started = true;
    run(m[1]).catch((e) => fail(e.stack || String(e)));
  }
});
let started = false;

async function run(url) {
  const ws = new WebSocket(url);
  await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = () => bad(new Error('no DevTools connection')); });
  let id = 0;
  const waiting = new Map();
  const events = [];
  const problems = [];
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && waiting.has(msg.id)) {
      const { ok, bad } = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) bad(new Error(JSON.stringify(msg.error)));
      else ok(msg.result);
    } else if (msg.method === 'Runtime.consoleAPICalled') {
      problems.push('console.' + msg.params.type + ': ' + msg.params.args.map((a) => a.value).join(' '));
    } else if (msg.method === 'Runtime.exceptionThrown') {
      problems.push('exception: ' + msg.params.exceptionDetails.exception.description);
    } else if (msg.method) {
      events.push(msg.method);
    }
  };
  const send = (method, params = {}, sessionId) => new Promise((ok, bad) => {
    const n = ++id;
    waiting.set(n, { ok, bad });
    ws.send(JSON.stringify({ id: n, method, params, sessionId }));
  });
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const cmd = (method, params) => send(method, params, sessionId);
  await cmd('Runtime.enable');
  await cmd('Page.enable');
  await cmd('Emulation.setDeviceMetricsOverride', { width: 1400, height: 900, deviceScaleFactor: 1, mobile: false });
  await cmd('Page.navigate', { url: 'file://' + page });
  const js = async (expr) => {
    const r = await cmd('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(expr + ': ' + r.exceptionDetails.exception.description);
    return r.result.value;
  };
  const clean = () => { if (problems.length) fail(problems.join('; ')); };
  for (let i = 0; i < 200 && (await js("document.body && document.body.dataset.ready || ''")) !== '1'; i++)
    await new Promise((r) => setTimeout(r, 50));
  if ((await js('document.body.dataset.ready')) !== '1') fail('the page script never finished');
  clean();
  const step = async (what, expr) => {
    const v = await js(expr);
    clean();
    if (v !== true) fail(what + ': ' + JSON.stringify(v));
    console.log('page_drive: ok: ' + what);
  };
  const click = (sel) => `(function(){var e=document.querySelector(${JSON.stringify(sel)});` +
    `if(!e)return 'no ' + ${JSON.stringify(sel)};` +
    `e.dispatchEvent(new MouseEvent('click',{bubbles:true,cancelable:true,view:window}));return true;})()`;
  const body = 'document.body.dataset';
  const model = await js("!!document.getElementById('view-model')");

  // the first screen, measured as the window shows it
  const measure = "(function(){var v=document.getElementById(document.body.dataset.view==='model'?'view-model':" +
    "'view-detail'),b=v.getBoundingClientRect(),svg=v.querySelector('svg'),k=svg.getScreenCTM().a;" +
    "function on(r){return r.width>0&&r.height>0&&r.right>b.left&&r.left<b.right&&r.bottom>b.top&&r.top<b.bottom&&" +
    "r.top<innerHeight;}" +
    "var boxes=[].slice.call(svg.querySelectorAll('g.node')).filter(function(g){return on(g.getBoundingClientRect());})" +
    ".length,least=Infinity;svg.querySelectorAll('text').forEach(function(t){if(!on(t.getBoundingClientRect()))return;" +
    "var f=parseFloat(t.getAttribute('font-size'))*k;if(f<least)least=f;});" +
    // text outside its panel: each text of the first screen's sections (the
    // SVG's own text is clipped by its viewer) within its section's box
    "var out=[];document.querySelectorAll('.top section').forEach(function(sec){var s=sec.getBoundingClientRect()," +
    "w=document.createTreeWalker(sec,NodeFilter.SHOW_TEXT);while(w.nextNode()){var n=w.currentNode;if(!n.textContent" +
    ".trim()||n.parentElement.closest('svg,datalist,template'))continue;var q=document.createRange();q.selectNodeContents(n);" +
    "[].slice.call(q.getClientRects()).forEach(function(r){if(r.top<innerHeight&&(r.right>s.right+0.5||" +
    "r.left<s.left-0.5||r.bottom>s.bottom+0.5))out.push(n.textContent.trim().slice(0,40));});}});" +
    "var p=document.querySelector('button[data-act=\"path\"]'),pr=p&&p.getBoundingClientRect();" +
    "return {boxes:boxes,font:Math.round(least*10)/10,overflow:out,path:!p?'none':pr.bottom<=innerHeight&&pr.top>=0?" +
    "'one click':'off screen',view:document.body.dataset.view,viewer:[Math.round(b.width),Math.round(b.height)]};})()";
  const first = await js(measure);
  console.log('page_drive: first screen: ' + first.view + ' view, ' + first.boxes + ' boxes, smallest label ' +
    first.font + ' px, viewer ' + first.viewer.join('x') + ', path to the cause: ' + first.path + ', text outside its panel: ' +
    (first.overflow.length ? JSON.stringify(first.overflow) : 'none'));
  if (first.overflow.length) fail('text outside its panel on the first screen: ' + JSON.stringify(first.overflow));
  if (first.path === 'off screen') fail('the path to the cause is not on the first screen');
  if (model && first.boxes > 24) fail('the first screen shows ' + first.boxes + ' boxes (at most 24)');
  if (!(first.font >= 10)) fail('the first screen has labels of ' + first.font + ' px (at least 10)');

  const scoped = await js("JSON.parse(document.getElementById('mpx-index').textContent).scopes.length>0");
  if (scoped) {
    // a scope box opens in place, one level down, and the path goes back
    const sbox = await js("(function(){var i=JSON.parse(document.getElementById('mpx-index').textContent);" +
      "var g=[].slice.call(document.querySelectorAll('#view-model g.node[id^=\"m-p\"]')).filter(function(g){" +
      "return i.scopes[+g.id.slice(3)][3];})[0];return g&&g.id;})()");
    if (!sbox) fail('the model view has no scope box with a view of its own');
    const k = +sbox.slice(3);
    await step('open scope ' + sbox, click('#' + sbox));
    await step('it opened in place', `${body}.view==='model' && ${body}.scope==='${k}' && ` +
      "document.querySelectorAll('#view-model svg').length===1 && " +
      `!!document.querySelector('#view-model g.cluster[id="m-cluster_scope:${k}"]') && ` +
      "document.querySelectorAll('#view-model g.node').length>0 && " +
      `document.getElementById('crumbs').textContent.indexOf(JSON.parse(document.getElementById('mpx-index')` +
      `.textContent).scopes[${k}][0])>=0`);
    const inner = await js(measure);
    console.log('page_drive: scope ' + k + ' opened: ' + inner.boxes + ' boxes on screen, smallest label ' + inner.font + ' px');
    if (!(inner.font >= 10)) fail('the opened scope has labels of ' + inner.font + ' px');
    await step('back by the path', click('#crumbs a[data-scope]'));
    await step('the top view again', `${body}.scope===String(JSON.parse(document.getElementById('mpx-index')` +
      ".textContent).top) && !!document.getElementById('" + sbox + "')");
    // a node deep in a collapsed scope is found by name
    const deep = await js("(function(){var i=JSON.parse(document.getElementById('mpx-index').textContent);" +
      "var n=i.nodes.filter(function(n){return n[2]&&n[7]>=0&&i.scopes[n[7]][1]>i.top&&n[7]!==i.top;})[0];return n&&n[0];})()");
    if (deep) {
      await step('search ' + deep + ' (inside a closed scope)', `(function(){document.getElementById('find').value=` +
        `${JSON.stringify(deep)};document.getElementById('find-form').requestSubmit();return true;})()`);
      await step('found', `${body}.view==='detail' && /^n\\d+$/.test(${body}.found) && ` +
        `document.getElementById(${body}.found).classList.contains('hl')`);
      await step('the model view again', click('button[data-view="model"]'));
    }
  }

  if (model) {
    // a box of the model view opens the detailed graph at its nodes
    const box = await js("(document.querySelector('#view-model g.node[id^=\"m-r\"]')||{}).id");
    if (!box) fail('the model view has no box');
    await step('open box ' + box, click('#' + box));
    await step('the box opened in the detailed graph',
      `${body}.view==='detail' && ${body}.found===${JSON.stringify(box.slice(2))} && ` +
      "document.querySelectorAll('#view-detail g.hl2').length>1 && !document.getElementById('view-detail').hidden");
    await step('its nodes are on screen', `(function(){var r=document.querySelector('#view-detail g.hl2')` +
      `.getBoundingClientRect(),b=document.getElementById('view-detail').getBoundingClientRect();` +
      `return r.right>b.left&&r.left<b.right&&r.bottom>b.top&&r.top<b.bottom||JSON.stringify([r,b]);})()`);
    await step('back to the model view', click('#info button[data-view="model"]'));
    await step('the model view is shown', `${body}.view==='model' && !document.getElementById('view-model').hidden`);
  }

  // search a node by name: the detailed graph centres it
  const name = await js("JSON.parse(document.getElementById('mpx-index').textContent).nodes" +
    ".filter(function(n){return n[5]!==null&&n[2];}).map(function(n){return n[0];})[3]");
  await step('search ' + name, `(function(){document.getElementById('find').value=${JSON.stringify(name)};` +
    "document.getElementById('find-form').requestSubmit();return true;})()");
  const found = await js(`${body}.found`);
  await step('found in the detailed graph', `${body}.view==='detail' && /^n\\d+$/.test(${body}.found) && ` +
    `document.getElementById(${body}.found).classList.contains('hl')`);
  await step('centred', `(function(){var r=document.getElementById(${body}.found).getBoundingClientRect(),` +
    `b=document.getElementById('view-detail').getBoundingClientRect(),cx=(r.left+r.right)/2,cy=(r.top+r.bottom)/2;` +
    `return Math.abs(cx-(b.left+b.right)/2)<b.width*0.1&&Math.abs(cy-(b.top+b.bottom)/2)<b.height*0.1||` +
    `JSON.stringify([cx,cy,b]);})()`);
  // graph -> table and back
  await step('follow "row in the table"', click('#info a[data-row]'));
  await step('the row is shown', `(function(){var r=document.getElementById('row-${found.slice(1)}');` +
    "var q=r.getBoundingClientRect();return r.classList.contains('flash')&&q.top>=0&&q.bottom<=innerHeight||" +
    'JSON.stringify(q);})()');
  await step('a table link goes to the graph', click(`#layer-table a[data-node="${found.slice(1)}"]`));
  await step('the graph shows it', `${body}.found===${JSON.stringify(found)} && ` +
    "Math.abs(document.getElementById('graph').getBoundingClientRect().top)<2");

  // the table: filter by op, by overflow, sort
  const op = await js("document.getElementById('row-" + found.slice(1) + "').dataset.op");
  await step('filter by op ' + op, `(function(){var s=document.getElementById('tf-op');s.value=${JSON.stringify(op)};` +
    "s.dispatchEvent(new Event('input',{bubbles:true}));return true;})()");
  await step('only ' + op + ' rows remain', "(function(){var rows=[].slice.call(document.querySelectorAll(" +
    "'#layer-table tbody tr')),shown=rows.filter(function(r){return !r.hidden;});return shown.length>0&&" +
    `shown.every(function(r){return r.dataset.op===${JSON.stringify(op)};})&&rows.filter(function(r){return ` +
    `r.dataset.op===${JSON.stringify(op)};}).length===shown.length&&document.getElementById('tf-count')` +
    ".textContent===shown.length+' of '+rows.length+' rows'||document.getElementById('tf-count').textContent;})()");
  await step('filter reset, only overflow', "(function(){var s=document.getElementById('tf-op');s.value='';" +
    "s.dispatchEvent(new Event('input',{bubbles:true}));var c=document.getElementById('tf-ovf');c.checked=true;" +
    "c.dispatchEvent(new Event('input',{bubbles:true}));var rows=[].slice.call(document.querySelectorAll(" +
    "'#layer-table tbody tr'));return rows.every(function(r){return r.hidden===(r.dataset.ovf!=='1');});})()");
  await step('sort by rel_l2', "(function(){var c=document.getElementById('tf-ovf');c.checked=false;" +
    "c.dispatchEvent(new Event('input',{bubbles:true}));var t=document.getElementById('layer-table')," +
    "th=[].slice.call(t.tHead.rows[0].cells),i=th.findIndex(function(h){return h.textContent==='rel_l2';});" +
    "th[i].dispatchEvent(new MouseEvent('click',{bubbles:true}));th[i].dispatchEvent(new MouseEvent('click'," +
    "{bubbles:true}));var v=[].slice.call(t.tBodies[0].rows).map(function(r){return parseFloat(r.cells[i]" +
    ".dataset.v);});for(var k=1;k<v.length;k++)if(v[k]>v[k-1])return 'not descending at row '+k;return true;})()");

  await step('# counts the rows shown, order is the graph\'s', "(function(){var t=document.getElementById(" +
    "'layer-table'),h=[].slice.call(t.tHead.rows[0].cells).map(function(c){return c.textContent;});if(h[0]!=='#'||" +
    "h[1]!=='order')return h.slice(0,3);var r=[].slice.call(t.tBodies[0].rows).filter(function(x){return !x.hidden;});" +
    "for(var k=0;k<r.length;k++)if(r[k].cells[0].textContent!==String(k+1))return 'row '+k+' numbered '+" +
    "r[k].cells[0].textContent;return true;})()");
  // zoom and fit the graph
  await step('zoom in', "(function(){var s=document.querySelector('#view-detail svg'),w0=+s.getAttribute('viewBox')" +
    ".split(' ')[2];document.querySelector('button[data-act=\"in\"]').dispatchEvent(new MouseEvent('click'," +
    "{bubbles:true}));var w1=+s.getAttribute('viewBox').split(' ')[2];return w1<w0||[w0,w1];})()");
  await step('wheel zooms out', "(function(){var s=document.querySelector('#view-detail svg'),w0=+s.getAttribute(" +
    "'viewBox').split(' ')[2],r=s.getBoundingClientRect();s.dispatchEvent(new WheelEvent('wheel',{deltaY:100," +
    "clientX:r.left+r.width/2,clientY:r.top+r.height/2,bubbles:true,cancelable:true}));var w1=+s.getAttribute(" +
    "'viewBox').split(' ')[2];return w1>w0||[w0,w1];})()");
  await step('fit shows the whole graph', "(function(){document.querySelector('button[data-act=\"fit\"]')" +
    ".dispatchEvent(new MouseEvent('click',{bubbles:true}));var s=document.querySelector('#view-detail svg')," +
    "r=s.getBoundingClientRect(),g=s.querySelector('g.graph').getBoundingClientRect();return g.left>=r.left-1&&" +
    "g.right<=r.right+1&&g.top>=r.top-1&&g.bottom<=r.bottom+1||JSON.stringify([r,g]);})()");
  if (await js("!!document.querySelector('button[data-act=\"worst\"]')")) {
    await step('jump to the worst layer', click('button[data-act="worst"]'));
    await step('the worst layer is highlighted', "(function(){var i=JSON.parse(document.getElementById(" +
      "'mpx-index').textContent);return " + body + ".found===i.nodes[i.worst][2]&&document.getElementById(" +
      body + ".found).classList.contains('hl');})()");
  }
  if (await js("!!document.querySelector('button[data-act=\"ovf\"]')")) {
    // each overflow in turn, in graph order, then round again
    const n = await js("JSON.parse(document.getElementById('mpx-index').textContent).overflow.length");
    for (let k = 1; k <= Math.min(n, 3); k++) {
      await step('next overflow (' + k + ' of ' + n + ')', click('button[data-act="ovf"]'));
      await step('overflow ' + k + ' is shown', "(function(){var i=JSON.parse(document.getElementById(" +
        "'mpx-index').textContent),want=i.nodes[i.overflow[" + (k - 1) + "]][2];return " + body + ".found===want&&" +
        "document.getElementById('info').textContent.indexOf('overflow " + k + " of " + n + "')===0&&" +
        "document.getElementById(want).classList.contains('hl')||[" + body + ".found,want];})()");
    }
  }
  clean();
  console.log('page_drive: ' + page + ': every step passed, no console message');
  process.exit(0);
}
