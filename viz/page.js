/* page.js - the review page's script (html.c embeds it; CMake turns it into a
 * C string, see viz/embed.cmake). No network, no libraries: the page must
 * work from disk for a reviewer who does not have mpx.
 *
 * It reads the index html.c writes (<script id="mpx-index">: per node its
 * name, op, the id of its box in each view, colour, error, scope; the scope
 * tree and each scope view's regions), and gives: pan and zoom of the two
 * graph views (wheel, drag, buttons), both opening at a readable size (the
 * smallest text READABLE px; the rest a pan away); a model view by scopes
 * whose boxes open in place (the view of that scope, a <template> html.c
 * wrote) with a path above it to go back; regions opening the detailed graph
 * at their nodes; a search box (node, tensor or op), jumps to the worst
 * layer, to each overflow and along the path from the worst output to its
 * cause, links between the per-layer table and the graph both ways, and the
 * table's filters and sorting (# renumbered as rows are sorted and filtered).
 *
 * For tests (tests/viz_browser.sh drives it headless): a URL ending in
 * #find=<text> searches on load; #path shows the path to the cause. The body's
 * data-* attributes report what happened: data-ready, data-view, data-found,
 * data-scope (the scope the model view shows), data-fits (the model view lies
 * within the first screen), data-error (a script error, also sent to the
 * console). */
(function () {
  'use strict';
  var body = document.body;
  window.addEventListener('error', function (e) { body.dataset.error = String(e.message || e); });
  var idx = JSON.parse(document.getElementById('mpx-index').textContent);
  var N = idx.nodes; /* [name, op, detail id, model id, colour, rel_l2|null, overflow, scope] */
  var S = idx.scopes || []; /* [label, parent, nodes, has its view] */
  var views = {};

  /* ---- a pannable, zoomable SVG ---- */
  function Viewer(box) {
    this.box = box;
    this.take(box.querySelector('svg'));
    var self = this, drag = null;
    box.addEventListener('wheel', function (e) {
      e.preventDefault();
      self.zoom(e.deltaY < 0 ? 1 / 1.25 : 1.25, e.clientX, e.clientY);
    }, {passive: false});
    box.addEventListener('mousedown', function (e) {
      if (e.button !== 0) return;
      drag = {x: e.clientX, y: e.clientY, vx: self.vb.x, vy: self.vb.y, moved: false};
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var s = self.scale();
      if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
      self.set(drag.vx - (e.clientX - drag.x) / s, drag.vy - (e.clientY - drag.y) / s, self.vb.w, self.vb.h);
    });
    window.addEventListener('mouseup', function () { if (drag) self.dragged = drag.moved; drag = null; });
  }
  /* Show svg (the box's own, or a scope's view put in its place). */
  Viewer.prototype.take = function (svg) {
    this.svg = svg;
    if (!svg) return;
    var vb = svg.getAttribute('viewBox').split(/[\s,]+/).map(Number);
    this.full = {x: vb[0], y: vb[1], w: vb[2], h: vb[3]};
    this.vb = {x: vb[0], y: vb[1], w: vb[2], h: vb[3]};
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    /* the smallest text, in viewBox units: what a readable scale is measured by */
    var least = Infinity;
    svg.querySelectorAll('text').forEach(function (t) {
      var f = parseFloat(t.getAttribute('font-size'));
      if (f > 0 && f < least) least = f;
    });
    this.least = least === Infinity ? 10 : least;
  };
  Viewer.prototype.scale = function () { /* screen pixels per viewBox unit */
    var r = this.svg.getBoundingClientRect();
    return Math.min(r.width / this.vb.w, r.height / this.vb.h) || 1;
  };
  Viewer.prototype.set = function (x, y, w, h) {
    this.vb = {x: x, y: y, w: w, h: h};
    this.svg.setAttribute('viewBox', [x, y, w, h].join(' '));
  };
  Viewer.prototype.fit = function () { var f = this.full; this.set(f.x, f.y, f.w, f.h); };
  /* The whole picture when its smallest text is then READABLE px or more;
   * else that scale, from the picture's top left (the rest a pan away). */
  var READABLE = 10;
  Viewer.prototype.fitReadable = function () {
    var f = this.full, r = this.svg.getBoundingClientRect();
    var k = Math.min(r.width / f.w, r.height / f.h), need = READABLE / this.least;
    /* a few boxes are not blown up past twice the readable size */
    if (k > 2 * need) {
      var w2 = r.width / (2 * need), h2 = r.height / (2 * need);
      this.set(f.x + f.w / 2 - w2 / 2, f.y + f.h / 2 - h2 / 2, w2, h2);
      return;
    }
    if (!(k < need)) { this.fit(); return; }
    var w = r.width / need, h = r.height / need;
    this.set(f.x + Math.max(0, (f.w - w) / 2) * (f.w > w ? 0 : 1), f.y, w, h);
  };
  Viewer.prototype.toSvg = function (cx, cy) {
    var p = this.svg.createSVGPoint();
    p.x = cx; p.y = cy;
    return p.matrixTransform(this.svg.getScreenCTM().inverse());
  };
  Viewer.prototype.zoom = function (f, cx, cy) {
    var r = this.svg.getBoundingClientRect();
    if (cx === undefined) { cx = r.left + r.width / 2; cy = r.top + r.height / 2; }
    var p = this.toSvg(cx, cy), v = this.vb;
    var w = Math.max(20, Math.min(v.w * f, this.full.w * 4)), h = w * v.h / v.w;
    this.set(p.x - (p.x - v.x) * w / v.w, p.y - (p.y - v.y) * h / v.h, w, h);
  };
  /* The box of elements in viewBox units, from their on-screen rectangles. */
  Viewer.prototype.bbox = function (els) {
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity, self = this;
    els.forEach(function (el) {
      var r = el.getBoundingClientRect(), a = self.toSvg(r.left, r.top), b = self.toSvg(r.right, r.bottom);
      x0 = Math.min(x0, a.x); y0 = Math.min(y0, a.y); x1 = Math.max(x1, b.x); y1 = Math.max(y1, b.y);
    });
    return {x: x0, y: y0, w: x1 - x0, h: y1 - y0};
  };
  /* Show elements: centred at a readable size (the smallest text READABLE
   * px), zoomed out to hold them all only as far as that allows; what does
   * not fit is a pan away, around the first. */
  Viewer.prototype.show = function (els) {
    if (!els.length) return;
    var b = this.bbox(els), r = this.svg.getBoundingClientRect();
    var k = Math.min(this.least / READABLE, Math.max(1 / 1.25, b.w * 1.3 / r.width, b.h * 1.3 / r.height));
    var w = r.width * k, h = r.height * k;
    if (b.w * 1.3 > w || b.h * 1.3 > h) b = this.bbox([els[0]]);
    this.set(b.x + b.w / 2 - w / 2, b.y + b.h / 2 - h / 2, w, h);
  };

  var boxes = {model: document.getElementById('view-model'), detail: document.getElementById('view-detail')};
  var current = boxes.model ? 'model' : 'detail';
  function setView(name) {
    if (!boxes[name]) return;
    Object.keys(boxes).forEach(function (k) { if (boxes[k]) boxes[k].hidden = k !== name; });
    document.querySelectorAll('button[data-view]').forEach(function (b) {
      b.classList.toggle('on', b.dataset.view === name);
    });
    current = name;
    body.dataset.view = name;
    if (!views[name]) views[name] = new Viewer(boxes[name]);
    if (name === 'model' && crumbs) crumbs.hidden = false;
    else if (crumbs) crumbs.hidden = true;
  }
  function viewer() { return views[current]; }
  function el(view, id) { return id ? document.getElementById(view === 'model' ? 'm-' + id : id) : null; }

  var marked = [];
  function mark(els, cls) {
    marked.forEach(function (e) { e.classList.remove('hl', 'hl2'); });
    marked = els;
    els.forEach(function (e) { e.classList.add(cls || 'hl'); });
  }
  function info(html) { var i = document.getElementById('info'); if (i) i.innerHTML = html; }
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]; }); }
  function fig(v) { return v === null ? '-' : typeof v === 'string' ? v : v === 0 ? '0' : Math.abs(v) >= 0.01 && Math.abs(v) < 1e4 ? v.toPrecision(3) : v.toExponential(2); }

  /* ---- the model view by scopes: a box opens in place, the path above
   * the view (model > stage1 > ...) goes back ---- */
  var openAt = idx.top, topSvg = boxes.model ? boxes.model.querySelector('svg') : null, made = {};
  var crumbs = document.getElementById('crumbs');
  function within(s, a) { for (var d = 0; s >= 0 && d <= S.length; d++, s = S[s][1]) if (s === a) return true; return false; }
  function drawCrumbs() {
    if (!crumbs) return;
    var chain = [];
    for (var s = openAt; s >= 0 && s !== idx.top; s = S[s][1]) chain.unshift(s);
    var h = '<a href="#" data-scope="' + idx.top + '">' + (idx.top > 0 ? esc(S[idx.top][0]) : 'model') + '</a>';
    chain.forEach(function (k) { h += ' &#8250; <a href="#" data-scope="' + k + '">' + esc(S[k][0]) + '</a>'; });
    if (chain.length) h += ' <button data-scope="' + (chain.length > 1 ? chain[chain.length - 2] : idx.top) + '">collapse</button>';
    h += ' <span class="note">' + (chain.length ? S[openAt][2] + ' nodes; ' : '') + 'click a box to open it</span>';
    crumbs.innerHTML = h;
  }
  /* Open scope k in place (its view), or the top; false when the page has
   * no view of it (its nodes open in the detailed graph instead). */
  function openScope(k) {
    if (!boxes.model || !S.length) return false;
    if (k !== idx.top && !within(k, idx.top)) k = idx.top;
    var svg = topSvg;
    if (k !== idx.top) {
      if (!S[k] || !S[k][3]) return false;
      if (!made[k]) {
        var tpl = document.getElementById('mv-' + k);
        if (!tpl) return false;
        made[k] = document.importNode(tpl.content, true).querySelector('svg');
      }
      svg = made[k];
    }
    setView('model');
    var old = boxes.model.querySelector('svg');
    if (old !== svg) boxes.model.replaceChild(svg, old);
    views.model.take(svg);
    views.model.fitReadable();
    openAt = k;
    body.dataset.scope = String(k);
    drawCrumbs();
    return true;
  }
  /* The nodes under scope k, in the detailed graph. */
  function scopeDetail(k) {
    var members = [];
    N.forEach(function (n, i) { if (n[2] && within(n[7], k)) members.push(i); });
    showDetail(members, 'p' + k, esc(S[k][0]));
  }

  /* Go to node i in the detailed graph (or its box when the detail view has
   * no box of its own for it). */
  function go(i, why) {
    var n = N[i];
    if (!n) return false;
    var view = boxes.detail && n[2] ? 'detail' : 'model';
    if (view === 'model' && openAt !== idx.top && S.length) openScope(idx.top);
    setView(view);
    var e = el(view, view === 'detail' ? n[2] : n[3]);
    if (!e) return false;
    viewer().show([e]);
    mark([e]);
    body.dataset.found = view === 'detail' ? n[2] : n[3];
    var row = document.getElementById('row-' + i);
    info((why ? esc(why) + ': ' : '') + '<b>' + esc(n[0]) + '</b> (' + esc(n[1]) + ', ' + esc(n[4]) +
         (n[5] !== null ? ', rel_l2 ' + fig(n[5]) : '') + (n[6] ? ', OVERFLOW ' + n[6] : '') + ')' +
         (row ? ' <a href="#row-' + i + '" data-row="' + i + '">row in the table</a>' : ''));
    return true;
  }
  /* A box of the model view: the detailed graph at its nodes (a region of
   * a scope's view: the members the index lists for that view). */
  function expand(id) {
    var members = [], vr = openAt !== idx.top && idx.regions && idx.regions[openAt];
    if (vr) vr.forEach(function (r) { if ('r' + r[0] === id) members = r.filter(function (i) { return N[i][2]; }); });
    else N.forEach(function (n, i) { if (n[3] === id && n[2]) members.push(i); });
    showDetail(members, id, 'the box');
  }
  function showDetail(members, id, what) {
    if (!members.length || !boxes.detail) return;
    setView('detail');
    var els = members.map(function (i) { return el('detail', N[i][2]); }).filter(Boolean);
    viewer().show(els);
    mark(els, 'hl2');
    body.dataset.found = id;
    info('<b>' + members.length + ' nodes</b> of ' + what + ': ' + esc(N[members[0]][0]) + ' &#8230; ' +
         esc(N[members[members.length - 1]][0]) + ' <button data-view="model">back to the model view</button>');
  }

  var hits = [], hit = 0, lastQuery = null;
  function find(q) {
    q = q.trim();
    if (!q) return false;
    if (q !== lastQuery) {
      lastQuery = q;
      hits = [];
      var lq = q.toLowerCase(), i;
      for (i = 0; i < N.length; i++) if (N[i][0] === q) hits.push(i);
      if (!hits.length && idx.tensors[q] !== undefined) hits.push(idx.tensors[q]);
      if (!hits.length) for (i = 0; i < N.length; i++) if (N[i][1].toLowerCase() === lq) hits.push(i);
      if (!hits.length) for (i = 0; i < N.length; i++) if (N[i][0].toLowerCase().indexOf(lq) >= 0) hits.push(i);
      hit = 0;
    } else {
      hit = (hit + 1) % Math.max(1, hits.length);
    }
    if (!hits.length) {
      info('nothing named <b>' + esc(q) + '</b> (a node, a tensor or an op type)');
      body.dataset.found = '';
      return false;
    }
    return go(hits[hit], hits.length > 1 ? (hit + 1) + ' of ' + hits.length : 'found');
  }

  var ovf = 0;
  function act(a) {
    var v = viewer();
    if (a === 'fit') v.fit();
    else if (a === 'in') v.zoom(1 / 1.5);
    else if (a === 'out') v.zoom(1.5);
    else if (a === 'worst' && idx.worst >= 0) go(idx.worst, 'worst layer');
    else if (a === 'ovf' && idx.overflow.length) {
      go(idx.overflow[ovf % idx.overflow.length], 'overflow ' + (ovf % idx.overflow.length + 1) + ' of ' + idx.overflow.length);
      ovf++;
    } else if (a === 'path' && idx.path.length) {
      setView('detail');
      var els = idx.path.map(function (i) { return el('detail', N[i][2]); }).filter(Boolean);
      viewer().show(els);
      mark(els, 'hl');
      body.dataset.found = 'path';
      info('path from the worst output back to its cause (' + idx.path.length + ' nodes): ' +
           idx.path.map(function (i) { return esc(N[i][0]); }).join(' &#8592; '));
    }
  }

  document.addEventListener('click', function (e) {
    var t = e.target.closest('[data-view],[data-act],[data-node],[data-row],[data-scope],g.node,g.cluster');
    if (!t || t === body) return; /* the body's data-* attributes report to tests */
    if (t.dataset.scope) { e.preventDefault(); openScope(+t.dataset.scope); return; }
    if (t.dataset.view) { setView(t.dataset.view); return; }
    if (t.dataset.act) { act(t.dataset.act); return; }
    if (t.dataset.node) { /* a link of the table or of "what to look at" */
      e.preventDefault();
      go(+t.dataset.node);
      document.getElementById('graph').scrollIntoView({block: 'start'});
      return;
    }
    if (t.dataset.row) {
      e.preventDefault();
      var row = document.getElementById('row-' + t.dataset.row);
      if (row) {
        row.scrollIntoView({block: 'center'});
        row.classList.remove('flash'); void row.offsetWidth; row.classList.add('flash');
      }
      return;
    }
    var v = viewer();
    if (v && v.dragged) return; /* the end of a pan, not a click */
    var id = t.id.replace(/^m-/, '');
    var sm = /^p(\d+)$/.exec(id), cm = /^cluster_scope:(\d+)$/.exec(id);
    if (current === 'model' && sm) { e.preventDefault(); if (!openScope(+sm[1])) scopeDetail(+sm[1]); return; }
    /* a click on an open scope's frame closes it */
    if (current === 'model' && cm) { e.preventDefault(); openScope(S[+cm[1]][1]); return; }
    if (current === 'model' && /^[rc]\d/.test(id)) { e.preventDefault(); expand(id); return; }
    var m = /^n(\d+)$/.exec(id);
    if (m) { e.preventDefault(); go(+m[1]); }
  });
  var form = document.getElementById('find-form');
  if (form) form.addEventListener('submit', function (e) {
    e.preventDefault();
    find(document.getElementById('find').value);
  });

  /* ---- the per-layer table: filters (sorting is below) ---- */
  var table = document.getElementById('layer-table');
  function filter() {
    if (!table) return;
    var get = function (id) { var x = document.getElementById(id); return x ? x.value : ''; };
    var text = get('tf-text').toLowerCase(), op = get('tf-op'), col = get('tf-colour'), fmt = get('tf-format');
    var only = document.getElementById('tf-ovf'), shown = 0, rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], d = r.dataset;
      var ok = (!op || d.op === op) && (!col || d.colour === col) && (!fmt || d.fmt === fmt) &&
               (!only || !only.checked || d.ovf === '1') && (!text || r.textContent.toLowerCase().indexOf(text) >= 0);
      r.hidden = !ok;
      shown += ok;
    }
    var c = document.getElementById('tf-count');
    if (c) c.textContent = shown + ' of ' + rows.length + ' rows';
    renumber(table);
  }
  /* # counts the rows shown, in the order shown */
  function renumber(t) {
    var n = 0, rows = t.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      var c = rows[i].cells[0];
      if (!rows[i].hidden && c && c.classList.contains('rowno')) c.textContent = ++n;
    }
  }
  ['tf-text', 'tf-op', 'tf-colour', 'tf-format', 'tf-ovf'].forEach(function (id) {
    var x = document.getElementById(id);
    if (x) x.addEventListener('input', filter);
  });
  document.querySelectorAll('table.sortable').forEach(function (t) {
    t.querySelectorAll('th').forEach(function (th, i) {
      th.title = 'click to sort';
      th.addEventListener('click', function () {
        var b = t.tBodies[0], r = Array.prototype.slice.call(b.rows), d = th.dataset.dir === 'a' ? -1 : 1;
        th.dataset.dir = d > 0 ? 'a' : 'd';
        function val(x) { var c = x.cells[i]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; }
        r.sort(function (x, y) {
          var a = val(x), c = val(y), na = parseFloat(a), nc = parseFloat(c);
          if (!isNaN(na) && !isNaN(nc)) return na === nc ? 0 : (na < nc ? -d : d);
          return a.localeCompare(c) * d;
        });
        r.forEach(function (x) { b.appendChild(x); });
        renumber(t);
      });
    });
  });

  /* ---- start ---- */
  /* the graph fills the rest of the first screen (both views: the one shown
   * first sets the height) */
  var first = boxes[current];
  if (crumbs && current === 'model') drawCrumbs();
  if (first) {
    var hpx = Math.max(360, window.innerHeight - (first.getBoundingClientRect().top + window.scrollY) - 16) + 'px';
    Object.keys(boxes).forEach(function (k) { if (boxes[k]) boxes[k].style.height = hpx; });
  }
  setView(current);
  /* the first screen at a readable size, whichever view opens */
  if (viewer()) viewer().fitReadable();
  if (current === 'model' && S.length) { body.dataset.scope = String(idx.top); drawCrumbs(); }
  if (boxes.model && views.model && views.model.svg) {
    var r = views.model.svg.getBoundingClientRect();
    body.dataset.fits = r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth ? '1' : '0';
  }
  var h = decodeURIComponent(location.hash || '');
  if (h.indexOf('#find=') === 0) find(h.slice(6));
  else if (h === '#path') act('path');
  else if (/^#n\d+$/.test(h)) go(+h.slice(2));
  body.dataset.ready = '1';
})();
