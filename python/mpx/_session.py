"""Session, Plan and Run: the mpx program's session for Python, on libmpx.

Everything that computes is libmpx's (loading, shape inference, rules, the
plan, the paired runs and their metrics, the writers); this module holds
the session's state (the model, the undo history of rules and options, the
inputs, the current plan, the last run) and turns C results into Python
values and NumPy arrays.
"""
import ctypes
import json
import os
import shlex
import signal
import threading
import warnings
from ctypes import POINTER, byref, c_bool, c_int, c_int64, c_uint, c_void_p

import numpy as np

from . import _lib as L

__all__ = ["Error", "Session", "Plan", "Run", "SearchResult", "version", "formats", "metrics"]


class Error(Exception):
    """An error from mpx: the message libmpx gave (naming the file, line,
    node or input at fault), with its parts as attributes: status (mpx's
    name of the kind: "i/o error", "parse error", "shape error", "bad
    argument", "cancelled", ...), code (the C library's mpx_status number;
    0 for refusals the package makes itself), file, line and column (""
    and 0 when unknown)."""

    def __init__(self, message, status="bad argument", file="", line=0, column=0, code=0):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.result = None  # Session.search(): what the search found before it failed (a SearchResult)


def _raise(err):
    buf = ctypes.create_string_buffer(2048)
    msg = L.error_format(byref(err), buf, len(buf)).decode("utf-8", "replace")
    raise Error(msg, L.status_name(err.status).decode(), err.file.decode("utf-8", "replace"), err.line, err.column,
                err.status)


def _check(st, err):
    if st:
        _raise(err)


def version():
    """libmpx's version ("0.1.0"), as `mpx --version` shows it."""
    return L.version().decode()


def formats(low_only=False):
    """The formats mpx emulates, in its table's order ("fp32", "tf32",
    "fp16", "bf16", "fp8e4m3", "fp8e4m3nan", "fp8e5m2"); low_only: the ones
    a plan can target."""
    names = [L.format_name(L.format_at(i)).decode() for i in range(L.format_count())]
    return [n for n in names if not (low_only and n == "fp32")]


def metrics():
    """The per-layer metrics, in the order of every report."""
    return list(_METRICS)


_METRICS = L.metric_names()
_fmt_name = lambda p: L.format_name(p).decode()  # noqa: E731 (NULL is fp32)
_IMAGE_LAYOUT = {"auto": 0, "nchw": 1, "nhwc": 2}
_IMAGE_CHANNELS = {"auto": 0, "rgb": 1, "bgr": 2, "gray": 3, "grey": 3}

# Ctrl-C's flag, process-wide as Ctrl-C is (the program's is the same):
# libmpx checks it inside Loop and Scan bodies and long kernels (mpx_set_cancel_flag). Each
# run also has a flag of its own (mpx_compare_opts.cancel), which a
# progress callback's exception sets without stopping other threads' runs.
_CANCEL = c_int(0)
L.set_cancel_flag(byref(_CANCEL))
# Graphviz keeps global state (viz/mpx_viz.h: not thread-safe): the
# writers take turns, whichever session calls them.
_VIZ = threading.Lock()


def _call_interruptibly(fn, flag):
    """fn() on a worker thread, the caller waiting for it: a KeyboardInterrupt
    (Ctrl-C, a notebook's interrupt) in the wait sets the run's cancel flag
    and Ctrl-C's, the run stops between nodes with MPX_E_CANCELLED, and the
    interrupt is raised again once the run has ended (never while libmpx
    still works on the session's objects). Returns fn's result or raises its
    exception."""
    box = {}
    # The wait is on a lock the worker releases when it is done, not on
    # Thread.join: a join interrupted by KeyboardInterrupt marks a running
    # thread as stopped in CPython 3.11 (its tstate-lock handling of
    # bpo-45274), and a second join would return while the run still used
    # the inputs and assignment the caller then frees.
    done = threading.Lock()
    done.acquire()

    def work():
        try:
            box["r"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["e"] = e
        finally:
            done.release()

    t = threading.Thread(target=work, name="mpx-run", daemon=True)
    interrupted = False
    # SIGINT is blocked while the worker starts: an interrupt raised inside
    # Thread.start (waiting for the thread to run) would otherwise leave the
    # run going while the caller frees what it reads. The worker, and the
    # threads libmpx starts from it, inherit the mask, so a Ctrl-C reaches
    # the waiting thread, which handles it.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        t.start()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    unblock = True
    while True:
        try:
            if unblock:
                unblock = False
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            done.acquire()
            break
        except KeyboardInterrupt:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            interrupted = True
            flag.value = 1
            _CANCEL.value = 1
    t.join()
    if interrupted:
        _CANCEL.value = 0
        raise KeyboardInterrupt("mpx: run cancelled")
    if "e" in box:
        raise box["e"]
    return box["r"]


class _Graph:
    """Owns an mpx_graph and the file guard of its session (the model and
    the files read, which no write may replace); plans and runs keep a
    reference, so that both outlive them whatever order Python frees them
    in."""

    def __init__(self, ptr):
        self.ptr = ptr
        self.guard = L.file_guard_new()
        if not self.guard:
            raise MemoryError("out of memory")
        err = L.Error_()
        _check(L.file_guard_add_model(self.guard, ptr, byref(err)), err)

    def __del__(self):
        if getattr(self, "guard", None):
            L.file_guard_free(self.guard)
            self.guard = None
        if self.ptr:
            L.graph_free(self.ptr)
            self.ptr = None

    @property
    def g(self):
        return self.ptr.contents


def _tensor_shape(t):
    return tuple(int(t.dims[i]) for i in range(t.rank)) if t.rank >= 0 else None


def _value_to_array(v):
    """A copy of an mpx_value's elements as a NumPy array (float64 for
    float64, float32 for the other float dtypes, which mpx holds as fp32;
    int64 otherwise)."""
    if v.n < 0:
        return None
    if v.n > 0 and not v.f and not v.i and not v.d:
        raise Error("values of type %s are not held by mpx (only numbers are)" % L.dtype_name(v.dtype).decode())
    shape = tuple(int(v.dims[i]) for i in range(v.rank))
    if v.d:
        a = np.empty(shape, np.float64)
        if v.n:
            ctypes.memmove(a.ctypes.data, v.d, int(v.n) * 8)
    elif v.f:
        a = np.empty(shape, np.float32)
        if v.n:
            ctypes.memmove(a.ctypes.data, v.f, int(v.n) * 4)
    else:
        a = np.empty(shape, np.int64)
        if v.n:
            ctypes.memmove(a.ctypes.data, v.i, int(v.n) * 8)
    return a


def _find_tensor(graph, name):
    """The tensor called name, or a node's first output."""
    t = L.graph_find_tensor(graph.ptr, name.encode())
    if t:
        return t.contents
    n = L.graph_find_node(graph.ptr, name.encode())
    if n and n.contents.n_outputs > 0 and n.contents.outputs[0]:
        return n.contents.outputs[0].contents
    raise Error('no tensor or node named "%s"' % name)


def _pair(c, t, name):
    if c.ref[t.index].is_seq:
        raise Error('tensor "%s" is a sequence or optional: its tensors are compared where they come out of it '
                    '(SequenceAt, OptionalGetElement)' % name)
    return _value_to_array(c.ref[t.index]), _value_to_array(c.cand[t.index])


class Records(list):
    """Rows (report(), nodes()): a list of dicts, the same type whether or
    not pandas is installed, so code written on one machine runs on the
    next (a DataFrame iterates over its column names). frame() is the
    pandas DataFrame of it; a notebook shows it as that table."""

    def frame(self):
        try:
            import pandas  # optional: not a dependency
        except ImportError:
            raise Error("frame() needs pandas (Debian: python3-pandas)") from None
        return pandas.DataFrame(list(self))

    def _repr_html_(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            return None
        return self.frame()._repr_html_()


def _file_id(path):
    """A model file's content as the program names it in shards
    (repl_file_id): its size and CRC-32; "" when it cannot be read."""
    import zlib
    crc, size = 0, 0
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    except OSError:
        return ""
    return "%d bytes, crc32 %08x" % (size, crc)


def _records(rows):
    return Records(rows)


def _write(path, text, guard):
    err = L.Error_()
    data = text.encode("utf-8")
    _check(L.file_write_all(os.fsencode(path), guard, data, len(data), byref(err)), err)


def _viz_opts(overlay=None, around=None, depth=2, collapse=False, fold=0, cluster=0, shapes=False, weights=False,
              title=None, local=False, rules=None):
    o = L.VizOpts()
    L.viz_opts_default(byref(o))
    keep = []
    if around is not None:
        keep.append(around.encode())
        o.around = keep[-1]
        o.depth = depth
    o.collapse, o.fold, o.cluster, o.shapes, o.weights = collapse, fold, cluster, shapes, weights
    if title is not None:
        keep.append(title.encode())
        o.title = keep[-1]
    if overlay is not None:
        o.overlay = ctypes.cast(overlay, c_void_p)
        o.overlay_local = local
    if rules:
        o.rules = rules
    return o, keep


class Plan:
    """A precision plan (Session.plan()): each node's colour and formats, the
    casts, the counts. In a notebook it shows itself as its cast graph.

    Methods: summary(), counts(), nodes(changed=False), casts(), why(node),
    dot(path=None, **opts), svg(path=None, **opts)."""

    def __init__(self, session, ptr, rules, generation):
        self._session = session
        self._graph = session._graph
        self._ptr = ptr
        self._rules = L.rules_copy(rules)
        self._generation = generation

    def __del__(self):
        if getattr(self, "_ptr", None):
            L.plan_free(self._ptr)
            self._ptr = None
        if getattr(self, "_rules", None):
            L.rules_free(self._rules)
            self._rules = None

    @property
    def _p(self):
        return self._ptr.contents

    def _check_current(self):
        if self._generation != self._session._generation:
            raise Error("this plan was made before an input's shape changed; make a new one with Session.plan()")

    @property
    def target(self):
        """The low-precision format ("fp16")."""
        return _fmt_name(self._p.opts.target)

    def summary(self):
        """One line: colours, casts, weights converted, the share of MACs low."""
        buf = ctypes.create_string_buffer(1024)
        L.plan_summary(self._ptr, buf, len(buf))
        return buf.value.decode()

    def counts(self):
        """The plan's figures as a dict: green/gray/clear/red node counts,
        float and low nodes, casts, weights converted and their bytes, MACs
        (total, low, percent) and the low share of the work."""
        c = self._p.counts
        d = {L.colour_name(k).decode(): c.nodes[k] for k in range(1, L.COLOUR_COUNT)}
        for f in ("float_nodes", "low_nodes", "casts", "weights_converted", "weight_bytes_before",
                  "weight_bytes_after", "macs_total", "macs_low", "macs_unknown", "low_macs_pct", "cost_total",
                  "cost_low", "low_cost_pct"):
            d[f] = getattr(c, f)
        d["target"] = self.target
        return d

    def nodes(self, changed=False):
        """One record per node in graph order, with the keys of the
        program's `plan --json`: name, op, colour, default, rule (the number
        of the rule that set the colour, from 1 as Session.rules() counts;
        None: the default), compute/accum/output formats and accum_options
        (the accum rule's options by name; None where precision does not
        apply); and order (the node's index), the
        default's source and low (computes narrower than fp32). changed: only the nodes a rule
        decided or whose colour differs from its default (`plan --changed`).
        Records: a list of dicts; .frame() the pandas DataFrame."""
        g, p, rows = self._graph.g, self._p, []
        for i in range(p.n_nodes):
            if changed and not L.plan_node_changed(self._ptr, i):
                continue
            n, pn = g.nodes[i].contents, p.nodes[i]
            rows.append({
                "name": n.name.decode(), "op": n.op_type.decode(), "order": i,
                "colour": L.colour_name(pn.colour).decode(), "default": L.colour_name(pn.dflt).decode(),
                "default_source": pn.dflt_source.decode() if pn.dflt_source else None,
                "rule": pn.colour_rule + 1 if pn.colour_rule >= 0 else None,
                "compute": _fmt_name(pn.compute) if pn.is_float else None,
                "accum": _fmt_name(pn.accum) if pn.is_float else None,
                "accum_options": _accum_options(pn.accum_flags) if pn.is_float else None,
                "output": _fmt_name(pn.output) if pn.is_float else None,
                "low": bool(pn.low)})
        return _records(rows)

    def casts(self):
        """The runtime casts: tensor, from and to formats, consumer nodes
        (None: the model output kept in its type)."""
        g, p, rows = self._graph.g, self._p, []
        for j in range(p.n_casts):
            c = p.casts[j]
            rows.append({"tensor": g.tensors[c.tensor].contents.name.decode(), "from": _fmt_name(c.from_),
                         "to": _fmt_name(c.to),
                         "consumers": [g.nodes[k].contents.name.decode() if k >= 0 else None
                                       for k in c.consumers[:c.n_consumers]]})
        return rows

    def why(self, node):
        """How node got its colour and formats (`why <node>`): default, rules,
        propagation, accumulation, the casts on its inputs."""
        self._check_current()
        n = L.graph_find_node(self._graph.ptr, node.encode())
        if not n:
            raise Error('no node named "%s"' % node)
        size = L.plan_why(self._ptr, n.contents.index, None, 0) + 1
        buf = ctypes.create_string_buffer(size)
        L.plan_why(self._ptr, n.contents.index, buf, size)
        return buf.value.decode()

    def _draw(self, fn, path, overlay, opts):
        self._check_current()
        o, keep = _viz_opts(overlay=overlay, rules=self._rules, **opts)
        out, err = c_void_p(), L.Error_()
        with _VIZ:
            _check(fn(self._ptr, byref(o), byref(out), None, byref(err)), err)
        text = L.take_text(out)
        if path is not None:
            _write(path, text, self._graph.guard)
        del keep
        return text

    def dot(self, path=None, **opts):
        """The cast graph as DOT text (written to path when given). Options:
        around=<node> and depth=<n> (a neighbourhood), collapse, fold=<boxes>,
        cluster=<levels>, shapes, weights, title."""
        return self._draw(L.viz_dot, path, None, opts)

    def svg(self, path=None, **opts):
        """The cast graph laid out as SVG (written to path when given); the
        options of dot()."""
        return self._draw(L.viz_svg, path, None, opts)

    def _repr_svg_(self):
        try:
            return self.svg()
        except Error:
            return None  # (a graph too large to lay out: the notebook shows repr)

    def __repr__(self):
        return "<mpx.Plan %s: %s>" % (self.target, self.summary())


class SearchResult:
    """What Session.search() found, read from libmpx's own JSON of the
    search (mpx_search_json, what `search --json` writes):

      fp32          the nodes kept in fp32 (names, graph order; [] when the
                    plan as it was already met the condition)
      figures       {figure: value} of the condition, for that plan
      low_macs_pct, low_cost_pct   the share of MACs / of cost low there
      evaluations   plans planned and run; unchanged: sets whose plan
                    computed as an earlier one's; candidates: nodes tried
      ended         "done", or "max_evals" / "time" (the best set so far)
      applied       whether its rules were applied (one undo step)
      condition, method, ms, json (the whole JSON as a dict: its
                    "evaluations" key is the log of every evaluation)
    """

    def __init__(self, d):
        self.json = d
        self.condition, self.method, self.ended = d["condition"], d["method"], d["ended"]
        self.fp32 = d.get("fp32")
        self.figures = d.get("figures")
        self.low_macs_pct, self.low_cost_pct = d.get("low_macs_pct"), d.get("low_cost_pct")
        self.evaluations, self.unchanged = d["n_evaluations"], d["n_unchanged"]
        self.candidates, self.applied, self.ms = d["candidates"], d["applied"], d["ms"]

    def __repr__(self):
        if self.fp32 is None:
            return "<mpx.SearchResult %s: no plan; %d evaluations>" % (self.ended, self.evaluations)
        return "<mpx.SearchResult %s: %d fp32 %s; %.1f%% of cost low; %d evaluations%s>" % (
            self.ended, len(self.fp32), self.figures, self.low_cost_pct, self.evaluations,
            "; applied" if self.applied else "")


def _fill_error(err, code, msg):
    e = err.contents
    e.status = code
    e.file = b""
    e.line = e.column = 0
    e.msg = msg.encode("utf-8", "replace")[:1023]


class _Host:
    """libmpx's explore/ host (mpx_explore_host) over a session: a trial's
    plan is built as the session builds its own (its rules' measured
    figures too), its run goes through the session's run cache on inputs
    made once for the whole search, a failed trial is taken back out of the
    cache, and the cancel flag stops the search between evaluations. The
    callbacks run on the search's worker thread; an exception in one (the
    caller's progress, a KeyboardInterrupt) is kept, sets the flag, and is
    raised by the caller once the search has ended."""

    def __init__(self, session, flag, progress):
        self.s, self.flag, self.user_progress = session, flag, progress
        self.failure = []
        self.inputs = None
        self.c = L.ExploreHost(plan=L.HOST_PLAN(self._plan), run=L.HOST_RUN(self._run), undo=L.HOST_UNDO(self._undo),
                               progress=L.HOST_PROGRESS(self._progress), point=L.HOST_POINT(self._point),
                               cancelled=L.HOST_CANCELLED(self._cancelled))

    def _fail(self, e, err):
        self.failure.append(e)
        self.flag.value = 1
        if isinstance(e, Error) and e.code:
            _fill_error(err, e.code, e.message)
            return e.code
        _fill_error(err, L.STATUS_CANCELLED, "stopped by an exception in a callback: %r" % (e,))
        return L.STATUS_CANCELLED

    def _plan(self, ctx, rules, opts, out, err):
        try:
            s = self.s
            o = opts if opts else L.history_opts(s._hist)
            m = L.PlanMeasured(len(s._absmax), s._absmax) if s._absmax is not None else None
            return L.plan_build(s._graph.ptr, rules, o, byref(m) if m else None, out, err)
        except BaseException as e:
            return self._fail(e, err)

    def _run(self, ctx, plan, local, undoable, measure, keep, out, err):
        try:
            s = self.s
            if self.inputs is None:
                self.inputs = s._make_inputs()
            a = L.plan_to_assign(plan, err)
            if not a:
                return err.contents.status or 6  # MPX_E_NOMEM
            try:
                o = L.CompareOpts(local=bool(local), cancel=ctypes.pointer(self.flag), undoable=bool(undoable))
                if keep:
                    o.keep = ctypes.cast(keep, POINTER(c_bool))
                if measure:
                    o.measure = ctypes.cast(measure, POINTER(c_bool))
                if s._cache and not local:  # local runs neither use nor touch the cache (numerics' rule)
                    o.cache = s._cache
                return L.compare_run(s._graph.ptr, a, self.inputs, byref(o), out, err)
            finally:
                L.assign_free(a)
        except BaseException as e:
            return self._fail(e, err)

    def _undo(self, ctx):
        if self.s._cache:
            L.compare_cache_undo(self.s._cache)

    def _progress(self, ctx, pr):
        if self.user_progress is None:
            return
        p = pr.contents
        try:
            self.user_progress({"evaluations": p.n_evals, "best_fp32": p.best_k if p.have_best else None,
                                "best": p.best_got0 if p.have_best else None, "figure": p.fig.decode(),
                                "best_low_cost_pct": p.best_low_cost_pct if p.have_best else None,
                                "left_s": p.left_ms / 1000 if p.left_ms >= 0 else None})
        except BaseException as e:
            self.failure.append(e)
            self.flag.value = 1

    def _point(self, ctx, d, i):
        if self.user_progress is None:
            return
        sw = ctypes.cast(d, POINTER(L.Sweep)).contents
        try:
            self.user_progress({"point": i, "of": sw.n, "value": sw.values[i].value.decode()})
        except BaseException as e:
            self.failure.append(e)
            self.flag.value = 1

    def _cancelled(self, ctx):
        return bool(self.flag.value) or bool(self.failure)

    def raise_failure(self, cmd):
        """The first exception a callback raised, if any: an mpx.Error or a
        KeyboardInterrupt as it is, anything else as an mpx.Error caused by it."""
        if not self.failure:
            return
        e = self.failure[0]
        if isinstance(e, (Error, KeyboardInterrupt)):
            raise e
        raise Error("%s stopped: %s: %s (raised in a callback)" % (cmd, type(e).__name__, e), "cancelled",
                    code=L.STATUS_CANCELLED) from e

    def free_inputs(self):
        if self.inputs is not None:
            for i in range(self.s._g.n_inputs):
                L.value_free(byref(self.inputs[i]))
            self.inputs = None


class Run:
    """A run of a plan against the fp32 reference (Session.run()): per-layer
    metrics and the kept values. In a notebook it shows itself as mpx's
    review page (plan, cast graph with the error overlay, error plot,
    per-layer table) and, as SVG, as its error plot.

    Methods: report(sort=None, top=None, local=False), outputs(),
    tensor(name), plot(path=None, metric="rel_l2"), svg(path=None),
    html(path=None)."""

    def __init__(self, session, ptr, plan, local, label):
        self._session = session
        self._graph = session._graph
        self._specs = dict(session._specs)  # what the inputs held (tensor() reruns on them)
        self._ptr = ptr
        self.plan = plan
        self.local = local
        self.label = label

    def __del__(self):
        if getattr(self, "_ptr", None):
            L.compare_free(self._ptr)
            self._ptr = None

    @property
    def _c(self):
        return self._ptr.contents

    @property
    def target(self):
        """The low-precision format of the plan this run ran ("fp16")."""
        return self.plan.target

    def _rows(self):
        g, c, rows = self._graph.g, self._c, []
        outs = {g.outputs[i].contents.index for i in range(g.n_outputs)}
        for i in range(c.n_layers):
            Ly = c.layers[i]
            n = g.nodes[Ly.node].contents
            r = {"tensor": g.tensors[Ly.tensor].contents.name.decode(), "node": n.name.decode(),
                 "op": n.op_type.decode(), "order": Ly.node, "format": _fmt_name(Ly.fmt),
                 "output": Ly.tensor in outs}
            for k, name in enumerate(_METRICS):
                v = L.metric_value(byref(Ly.m), k)
                r[name] = int(v) if name in _COUNTS else v
            # and the two facts the program's report --json adds beside them
            r["n"], r["absmax_ref"] = int(Ly.m.n), Ly.m.absmax_ref
            if Ly.has_local:
                for k, name in enumerate(_METRICS):
                    v = L.metric_value(byref(Ly.local), k)
                    r["local_" + name] = int(v) if name in _COUNTS else v
            rows.append(r)
        return rows

    def report(self, sort=None, top=None, local=False):
        """One record per compared layer (every float tensor a node computes),
        in graph order: tensor, node, op, order, format, output (a model
        output), every metric of mpx's table (metrics()), and with a local
        run (run(local=True)) the same as local_<metric>: the node's own
        error. sort=<metric> puts the worst first (local=True: by the local
        figure); top=<n> keeps the first n. Records: a list of dicts;
        .frame() the pandas DataFrame."""
        rows = self._rows()
        if sort is not None:
            idx = c_int()
            if not L.metric_by_name(sort.encode(), byref(idx)):
                raise Error('unknown metric "%s" (%s)' % (sort, " ".join(_METRICS)))
            if local and not self.local:
                raise Error("local=True: this run has no local figures (use run(local=True))")
            key = ("local_" if local else "") + _METRICS[idx.value]
            low_worse = _METRICS[idx.value] in _LOW_IS_WORSE

            def badness(r):
                v = r[key]
                return float("inf") if v != v else (-v if low_worse else v)
            rows.sort(key=badness, reverse=True)
        if top is not None:
            if isinstance(top, bool) or not isinstance(top, int) or top < 0:
                raise Error("report: top is a count of rows (an int >= 0), not %r" % (top,))
            rows = rows[:top]
        return _records(rows)

    def outputs(self):
        """The model outputs' records (as report())."""
        return [r for r in self._rows() if r["output"]]

    def worst(self, of="any"):
        """The record of the worst layer by rel_l2 (NaN worst), as the
        program's run line names it (numerics' mpx_compare_worst_layer):
        of="any" every layer, "output" the model outputs, "own" by the
        layer's own error (a local run). None when there is none."""
        if of not in L.WORST:
            raise Error('worst: of is one of %s, not "%s"' % (", ".join(L.WORST), of))
        w = L.compare_worst_layer(self._ptr, L.WORST[of])
        if not w:
            return None
        i = (ctypes.addressof(w.contents) - ctypes.addressof(self._c.layers[0])) // ctypes.sizeof(L.Layer)
        return self._rows()[i]

    def tensor(self, name):
        """(reference, candidate): the fp32 reference's and the plan's values
        of a tensor (or of a node's first output) as NumPy arrays (float32
        for float tensors: mpx holds every format's values as fp32; int64
        otherwise). Model outputs are kept by every run; another tensor is
        taken from a fresh run of this run's plan that keeps it, refused once
        the session's inputs changed (run(keep=[...]) keeps it in the run)."""
        t = _find_tensor(self._graph, name)
        c = self._c
        if c.ref[t.index].n >= 0:
            return _pair(c, t, name)
        with self._session._use():
            self.plan._check_current()
            # the rerun computes on the session's inputs: only while they are
            # this run's (input() makes a new spec each call)
            now = self._session._specs
            if now.keys() != self._specs.keys() or any(now[k] is not self._specs[k] for k in now):
                raise Error('tensor "%s": this run did not keep it, and the session\'s inputs changed since it ran; '
                            'run(keep=["%s"]) keeps it' % (name, name))
            keep = (c_bool * self._graph.g.n_tensors)()
            keep[t.index] = True
            fresh = self._session._compare(self.plan, False, keep, None)
            try:
                if fresh.contents.ref[t.index].n < 0:
                    raise Error('tensor "%s" has no value in a run (not computed)' % name)
                return _pair(fresh.contents, t, name)
            finally:
                L.compare_free(fresh)

    def plot(self, path=None, metric="rel_l2", local=False, others=()):
        """The error along the graph as SVG (mpx's `plot`): metric per layer
        in graph order, casts and red nodes marked; others: more runs of the
        same model (Session.compare()) as lines of their own."""
        po = L.PlotOpts()
        L.viz_plot_opts_default(byref(po))
        idx = c_int()
        if not L.metric_by_name(metric.encode(), byref(idx)):
            raise Error('unknown metric "%s" (%s)' % (metric, " ".join(_METRICS)))
        po.metric, po.local = idx.value, local
        if self.plan._generation == self._session._generation:
            po.marks = ctypes.cast(self.plan._ptr, c_void_p)
        runs = [self] + list(others)
        for r in runs:
            if r._graph is not self._graph:
                raise Error("plot: runs of different models")
        labels = [r.label.encode() for r in runs]
        series = (L.VizSeries * len(runs))(*[L.VizSeries(labels[k], ctypes.cast(r._ptr, c_void_p))
                                             for k, r in enumerate(runs)])
        out, err = c_void_p(), L.Error_()
        with _VIZ:
            _check(L.viz_plot(series, len(runs), byref(po), byref(out), byref(err)), err)
        text = L.take_text(out)
        if path is not None:
            _write(path, text, self._graph.guard)
        return text

    def svg(self, path=None, local=False, **opts):
        """The cast graph of this run's plan with the error overlay (`svg
        --overlay`); the options of Plan.dot()."""
        self.plan._check_current()
        return self.plan._draw(L.viz_svg, path, self._ptr, dict(opts, local=local))

    def html(self, path=None, others=()):
        """mpx's self-contained review page of this run (`html`): written to
        path when given; the text is returned."""
        return self._session._page(self.plan, [self] + list(others), path)

    def _repr_svg_(self):
        try:
            return self.plot()
        except Error:
            return None

    def _repr_html_(self):
        import html as _html
        try:
            page = self.html()
        except Error:
            return None
        # An iframe keeps the page's script and style to itself.
        return ('<iframe srcdoc="%s" style="width:100%%;height:640px;border:1px solid #ccc"></iframe>'
                % _html.escape(page, quote=True))

    def __repr__(self):
        outs = ", ".join("%s rel_l2 %.3g" % (r["tensor"], r["rel_l2"]) for r in self.outputs())
        return "<mpx.Run %s: %d layers; %s>" % (self.label, self._c.n_layers, outs)


_COUNTS = {"overflow", "underflow", "subnormal", "n"}
_END_NO_PLAN, _END_MAX_EVALS, _END_TIME, _END_FAILED = (L.SEARCH_ENDS.index(e) for e in ("no_plan", "max_evals", "time",
                                                                                       "failed"))
_LOW_IS_WORSE = {"cos", "sqnr_db"}


class Session:
    """A model and its precision plan, as the mpx program's session:

        s = mpx.Session("model.onnx")
        s.input("x", shape=(1, 3, 224, 224), random="normal", seed=42)
        s.target("fp16")
        s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
        p = s.plan()               # Plan: counts(), nodes(), why(), svg()
        r = s.run()                # Run: report(), tensor(), plot(), html()
        s.export("model_fp16.onnx")
        s.html("review.html")

    Every method either does all it says or raises mpx.Error with mpx's
    message and leaves the session as it was. A session is used by one
    thread at a time: a call from a second thread while one is running
    raises mpx.Error. Ctrl-C (KeyboardInterrupt) stops a run between nodes
    and leaves the session usable. close() (or a with block) frees the
    model; plans and runs already taken stay readable.

    search() and sweep() are libmpx's (explore/), driven through a host
    made of this session's plan and run steps, not a second
    implementation."""

    def __init__(self, model, cache_mb=512):
        """Load an ONNX (.onnx) or mpx JSON (.json) model, infer its shapes,
        and plan it with the default colours (target fp16, keep-io on).
        cache_mb: the run cache's budget (0: every run in full)."""
        self._lock = threading.RLock()
        self._closed = True
        self._graph = None
        self._hist = None
        self._cache = None
        err = L.Error_()
        ptr = L.graph_load(os.fsencode(model), byref(err))
        if not ptr:
            _raise(err)
        try:
            self._graph = _Graph(ptr)
        except BaseException:
            L.graph_free(ptr)
            raise
        _check(L.graph_infer(ptr, byref(err)), err)
        # the weights packed now, as `load` does (a session's first run then
        # does not pack them: mpx_exec_prepare)
        L.exec_prepare(ptr)
        self._hist = L.history_new(None)
        if not self._hist:
            raise MemoryError("out of memory")
        self._cache = L.compare_cache_new(cache_mb << 20) if cache_mb > 0 else None
        self.model = os.fspath(model)
        self._generation = 0
        self._specs = {}
        self._last = None
        self._absmax = None  # the last run's figures for `when absmax ...` rules
        self._closed = False
        self._plan = self._build(L.history_rules(self._hist), L.history_opts(self._hist).contents)

    # ---- state and its guard ------------------------------------------------

    def close(self):
        """Free the session's model, plan and caches. Further calls raise
        mpx.Error (close() again does nothing, as a file's); plans and runs
        already taken stay readable."""
        if getattr(self, "_closed", False):
            return
        with self._use():
            self._free()

    def _free(self):
        self._closed = True
        self._plan = self._last = None
        if self._cache:
            L.compare_cache_free(self._cache)
            self._cache = None
        if self._hist:
            L.history_free(self._hist)
            self._hist = None
        self._graph = None

    def __del__(self):
        if not getattr(self, "_closed", True):
            self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._closed:
            self.close()

    class _Use:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            if not self.s._lock.acquire(blocking=False):
                raise Error("this session is in use by another thread (a session serves one thread at a time; "
                            "make a Session per thread)")
            if self.s._closed:
                self.s._lock.release()
                raise Error("the session is closed")

        def __exit__(self, *exc):
            self.s._lock.release()

    def _use(self):
        return Session._Use(self)

    @property
    def _g(self):
        return self._graph.g

    def _find_tensor(self, name):
        return _find_tensor(self._graph, name)

    def _input_tensor(self, name):
        g = self._g
        names = []
        for i in range(g.n_inputs):
            t = g.inputs[i].contents
            if t.name.decode() == name:
                return t
            names.append(t.name.decode())
        raise Error('no model input named "%s" (inputs: %s)' % (name, ", ".join(names)))

    # ---- the model ------------------------------------------------------------

    def inputs(self):
        """The model inputs: a list of (name, dtype, shape), shape a tuple
        with -1 for an unbound dim (None when the rank is unknown)."""
        with self._use():
            g = self._g
            return [(t.name.decode(), L.dtype_name(t.dtype).decode(), _tensor_shape(t))
                    for t in (g.inputs[i].contents for i in range(g.n_inputs))]

    def outputs(self):
        """The model outputs, as inputs()."""
        with self._use():
            g = self._g
            return [(t.name.decode(), L.dtype_name(t.dtype).decode(), _tensor_shape(t))
                    for t in (g.outputs[i].contents for i in range(g.n_outputs))]

    def info(self):
        """The model's figures: path, name, opset, nodes, tensors, params,
        MACs (-1 while unknown)."""
        with self._use():
            g = self._g
            return {"model": self.model, "name": (g.name or b"").decode(), "opset": g.opset,
                    "nodes": g.n_nodes, "tensors": g.n_tensors,
                    "params": L.graph_param_count(self._graph.ptr), "macs": L.graph_macs(self._graph.ptr)}

    # ---- inputs ---------------------------------------------------------------

    def _bind(self, t, shape):
        """Bind input t to shape and plan again; on any failure the old
        bindings are put back (as the program's `input <name> shape`)."""
        shape = tuple(int(d) for d in shape)
        if _tensor_shape(t) == shape:
            return
        g, err = self._g, L.Error_()
        was = []
        for i in range(g.n_inputs):
            u = g.inputs[i].contents
            was.append((u.rank, u.nelem, tuple(u.dims), tuple(u.sym)))
        dims = (c_int64 * max(1, len(shape)))(*shape)
        try:
            _check(L.graph_bind_input(self._graph.ptr, t.name, len(shape), dims, byref(err)), err)
            _check(L.graph_infer(self._graph.ptr, byref(err)), err)
            plan = self._build(L.history_rules(self._hist), L.history_opts(self._hist).contents)
        except BaseException:
            for i in range(g.n_inputs):
                u = g.inputs[i].contents
                u.rank, u.nelem = was[i][0], was[i][1]
                u.dims[:] = was[i][2]
                u.sym[:] = was[i][3]
            again = L.Error_()
            L.graph_infer(self._graph.ptr, byref(again))  # it inferred before with these bindings
            raise
        L.exec_prepare(self._graph.ptr)  # what the new shapes allow (a Gemm's transB weights)
        self._generation += 1
        plan._generation = self._generation
        self._plan = plan
        if self._cache:
            L.compare_cache_clear(self._cache)

    def _array_for(self, t, a, source, convert):
        want_int = L.dtype_is_int_like(t.dtype)
        tname, dt = t.name.decode(), L.dtype_name(t.dtype).decode()
        fdt = np.float64 if dt == "float64" else np.float32  # (mpx holds float64 as float64, other floats as fp32)
        if not isinstance(a, np.ndarray):
            raise Error("input %s: a NumPy array, a file name or shape= expected, not %s" % (tname, type(a).__name__))
        if a.dtype.kind in "fc" and a.dtype.kind == "c":
            raise Error("%s holds complex values; input %s is %s" % (source, tname, dt))
        if a.dtype.kind == "f":
            if want_int:
                raise Error("%s holds float values (%s) but input %s is %s (integer)" % (source, a.dtype, tname, dt))
            want = fdt
        elif a.dtype.kind in "iub":
            if not want_int and not convert:
                raise Error("%s holds %s values but input %s is %s; pass convert=True to convert each integer "
                            "to the nearest %s" % (source, a.dtype, tname, dt, dt))
            want = fdt if not want_int else np.int64
        else:
            raise Error("%s holds %s values; input %s is %s" % (source, a.dtype, tname, dt))
        if a.ndim > L.MAX_RANK:
            raise Error("%s has rank %d; mpx takes at most %d" % (source, a.ndim, L.MAX_RANK))
        # the session's own C-ordered copy (later changes to the caller's
        # array do not leak in); np.array keeps a 0-d array's rank, where
        # np.ascontiguousarray makes it (1,)
        return np.array(a, dtype=want, order="C", copy=True)

    def _decode(self, t, path, opts):
        p = os.fsencode(path)
        kind = L.data_kind(p)
        kind = kind.decode() if kind else None
        err, v = L.Error_(), L.Value()
        tname = t.name.decode()
        if kind in ("png", "jpeg"):
            o = L.ImageOpts()
            L.image_opts_default(byref(o))
            if "size" in opts:
                o.height, o.width = (int(x) for x in opts.pop("size"))
            if "layout" in opts:
                o.layout = _choice("layout", opts.pop("layout"), _IMAGE_LAYOUT)
            if "channels" in opts:
                o.channels = _choice("channels", opts.pop("channels"), _IMAGE_CHANNELS)
            if "scale" in opts:
                o.scale = float(opts.pop("scale"))
            for k in ("mean", "std"):
                if k in opts:
                    vals = [float(x) for x in np.broadcast_to(np.asarray(opts.pop(k), float), (3,))]
                    getattr(o, k)[:] = vals
            _no_more(opts, kind)
            if t.rank < 0:
                raise Error("input %s has no known rank; bind its shape first (shape=...)" % tname)
            st = L.image_read(p, byref(o), t.rank, t.dims, byref(v), byref(err))
        elif kind == "audio":
            o = L.AudioOpts()
            L.audio_opts_default(byref(o))
            if "rate" in opts:
                o.rate = int(opts.pop("rate"))
            if "length" in opts:
                o.length = int(opts.pop("length"))
            if "scale" in opts:
                o.scale = float(opts.pop("scale"))
            _no_more(opts, kind)
            rank = t.rank if t.rank >= 0 else 1
            st = L.audio_read(p, byref(o), rank, byref(v), None, byref(err))
        elif kind == "npz":
            raise Error("%s is an .npz file: it holds several arrays; pass one of them "
                        "(numpy.load(file)[key])" % path)
        else:
            _no_more(opts, kind or "npy")
            st = L.npy_read(p, byref(v), byref(err))
        _check(st, err)
        try:
            a = _value_to_array(v)
        finally:
            L.value_free(byref(v))
        return a

    def input(self, name, value=None, *, shape=None, random=None, seed=0, const=None, convert=False, **file_opts):
        """Say what model input `name` holds in runs:

          input("x", array)            a NumPy array (its shape is bound)
          input("x", "page.png")       a file: .npy, PNG/JPEG (file_opts:
                                       size=(h, w), layout="nchw"|"nhwc",
                                       channels="rgb"|"bgr"|"gray", scale,
                                       mean, std), audio (rate, length, scale)
          input("x", shape=(1, 3, 64, 64))          bind the shape; values
                                       seeded random normal(0, 1), seed 0
          input("x", shape=..., random="normal"|("normal", mean, std)
                |"uniform"|("uniform", lo, hi), seed=42)
          input("x", const=0.5)        every element 0.5

        Arrays: float arrays of any width go to a float input as float32
        (as mpx reads .npy files); integer arrays go to an integer input,
        and to a float one only with convert=True; anything else is
        refused. A non-contiguous array is copied, so any array view is
        accepted. The session keeps its own copy of the values. A shape the
        model's declared dims refuse raises mpx.Error naming the input and
        dim, and leaves the session as it was."""
        with self._use():
            t = self._input_tensor(name)
            if value is not None and (shape is not None or random is not None or const is not None):
                raise Error("input %s: give values (an array or a file) or shape=/random=/const=, not both" % name)
            if value is None and (convert or file_opts):
                raise Error("input %s: convert= and file options go with an array or a file" % name)
            if value is not None:
                if isinstance(value, (str, bytes, os.PathLike)):
                    source = os.fsdecode(value)
                    a = self._decode(t, value, dict(file_opts))
                    a = self._array_for(t, a, source, convert)
                else:
                    if file_opts:
                        raise Error("input %s: %s are options of files" % (name, ", ".join(sorted(file_opts))))
                    a = self._array_for(t, value, "the array", convert)
                self._bind(t, a.shape)
                self._specs[name] = ("array", a)
                return
            spec = ("fill", "normal", 0.0, 1.0, 0)
            if const is not None:
                if random is not None:
                    raise Error("input %s: random= or const=, not both" % name)
                spec = ("fill", "const", float(const), 0.0, 0)
            elif random is not None:
                r = (random,) if isinstance(random, str) else tuple(random)
                if r[0] not in ("normal", "uniform") or len(r) not in (1, 3):
                    raise Error('input %s: random is "normal", "uniform", ("normal", mean, std) or '
                                '("uniform", low, high), not %r' % (name, random))
                pa, pb = (float(r[1]), float(r[2])) if len(r) == 3 else (0.0, 1.0)
                spec = ("fill", r[0], pa, pb, 0)
            elif self._specs.get(name, ("",))[0] == "fill":
                spec = self._specs[name]  # a new shape keeps the values' kind
            err = L.Error_()
            _check(L.fill_check(L.FILL[spec[1]], spec[2], spec[3], byref(err)), err)  # as the program refuses them
            if int(seed) < 0:
                raise Error("input %s: seed must be >= 0, not %d" % (name, seed))
            if random is not None or const is not None or seed:
                spec = spec[:4] + (int(seed),)
            if shape is not None:
                self._bind(t, shape)
            self._specs[name] = spec

    def _make_inputs(self):
        g, err = self._g, L.Error_()
        vals = (L.Value * max(1, g.n_inputs))()
        made = 0
        try:
            for i in range(g.n_inputs):
                t = g.inputs[i].contents
                name = t.name.decode()
                spec = self._specs.get(name, ("fill", "normal", 0.0, 1.0, 0))
                shape = _tensor_shape(t)
                if spec[0] == "array":
                    a = spec[1]
                    if shape != a.shape:
                        raise Error("input %s holds an array of shape %s but is bound to %s" % (name, a.shape, shape))
                elif t.nelem < 0:
                    raise Error('input %s has no shape yet (use: input("%s", shape=...))' % (name, name))
                _check(L.value_alloc(byref(vals[i]), t.dtype, t.rank, t.dims, byref(err)), err)
                made += 1
                v = vals[i]
                if spec[0] == "array":
                    if v.n:
                        ctypes.memmove(v.d if v.d else v.f if v.f else v.i, spec[1].ctypes.data, spec[1].nbytes)
                else:
                    L.value_fill(byref(v), L.FILL[spec[1]], spec[2], spec[3], spec[4])
            return vals
        except BaseException:
            for i in range(made):
                L.value_free(byref(vals[i]))
            raise

    # ---- rules and options ------------------------------------------------------

    def _build(self, rules, opts):
        out, err = POINTER(L.Plan)(), L.Error_()
        measured = L.PlanMeasured(len(self._absmax), self._absmax) if self._absmax is not None else None
        _check(L.plan_build(self._graph.ptr, rules, byref(opts), byref(measured) if measured else None, byref(out),
                            byref(err)), err)
        return Plan(self, out, rules, self._generation)

    def _apply(self, rules, opts):
        """Plan (rules, opts) and, once that worked, make it the current
        state (one undo step)."""
        plan = self._build(rules, opts)
        err = L.Error_()
        _check(L.history_push(self._hist, rules, byref(opts), byref(err)), err)
        self._plan = plan

    def _opts(self):
        o = L.PlanOpts()
        ctypes.pointer(o)[0] = L.history_opts(self._hist).contents
        return o

    def rule(self, text):
        """Add a rule in the program's language (`colour <selector> <colour>
        [when <expr> [else <colour>]]` or `accum <selector> <format> ...`);
        an error names the column and what was expected there."""
        with self._use():
            rules = L.rules_copy(L.history_rules(self._hist))
            if not rules:
                raise MemoryError("out of memory")
            try:
                err = L.Error_()
                _check(L.rules_add(rules, text.encode(), self._graph.ptr, byref(err)), err)
                self._apply(rules, self._opts())
            finally:
                L.rules_free(rules)

    def colour(self, selector, colour, when=None, otherwise=None):
        """colour(selector, colour, when=None, otherwise=None): nodes the
        selector names (an op type, "*", "name:<glob>", comma-separated) take
        colour ("green", "gray", "clear", "red") where `when` holds
        ("macs >= 1M and k > 64"), otherwise `otherwise`."""
        self.rule(_rule_text("colour", selector, colour, when, otherwise))

    color = colour

    def accum(self, selector, format, when=None, otherwise=None):
        """accum(selector, format, when=None, otherwise=None): the
        accumulation format of the nodes the selector names."""
        self.rule(_rule_text("accum", selector, format, when, otherwise))

    def rules(self):
        """The rules in order, as typed (rule n is rules()[n - 1])."""
        with self._use():
            r = L.history_rules(self._hist)
            return [L.rules_text(r, i).decode() for i in range(L.rules_count(r))]

    def unrule(self, n):
        """Remove rule n (from 1, as the program's `unrule <n>`: rules()[n - 1])."""
        with self._use():
            count = L.rules_count(L.history_rules(self._hist))
            if not isinstance(n, int) or not 1 <= n <= count:
                raise Error("no rule %r: the rules are numbered 1 to %d" % (n, count))
            rules = L.rules_copy(L.history_rules(self._hist))
            try:
                err = L.Error_()
                _check(L.rules_remove(rules, n - 1, byref(err)), err)
                self._apply(rules, self._opts())
            finally:
                L.rules_free(rules)

    def target(self, format=None, block=None):
        """Set the low-precision format ("fp16", "bf16", "tf32", "fp8e4m3",
        ...; formats(low_only=True)) and, with block=k, low accumulation in
        blocks of k terms; returns the target's name (no argument: only
        that)."""
        with self._use():
            o = self._opts()
            if format is None and block is None:
                return _fmt_name(o.target)
            if format is not None:
                f = L.format_by_name(format.encode())
                if not f or _fmt_name(f) == "fp32":
                    raise Error('unknown target format "%s" (%s)' % (format, " ".join(formats(True))))
                o.target = f
            if block is not None:
                if int(block) < 0:
                    raise Error("block must be >= 0, not %d" % block)
                o.accum_block = int(block)
            self._apply(L.history_rules(self._hist), o)
            return _fmt_name(o.target)

    def keep_io(self, on=True):
        """Keep model inputs and outputs in their declared type (default on)."""
        with self._use():
            o = self._opts()
            o.keep_io = bool(on)
            self._apply(L.history_rules(self._hist), o)

    def undo(self):
        """Back to the rules and options before the last change; False when
        there is nothing to undo."""
        return self._move(L.history_undo, L.history_redo)

    def redo(self):
        """Forward again after undo(); False when there is nothing to redo."""
        return self._move(L.history_redo, L.history_undo)

    def _move(self, step, back):
        with self._use():
            if not step(self._hist):
                return False
            try:
                self._plan = self._build(L.history_rules(self._hist), L.history_opts(self._hist).contents)
            except BaseException:
                back(self._hist)
                raise
            return True

    # ---- plan and runs -------------------------------------------------------------

    def plan(self):
        """The current precision plan (a Plan)."""
        with self._use():
            return self._plan

    def _compare(self, plan, local, keep, progress):
        g, err = self._graph, L.Error_()
        inputs = self._make_inputs()
        a = L.plan_to_assign(plan._ptr, byref(err))
        if not a:
            for i in range(g.g.n_inputs):
                L.value_free(byref(inputs[i]))
            _raise(err)
        failure, flag = [], c_int(0)

        def cb(ctx, done, total):
            try:
                progress(done, total)
            except BaseException as e:  # stops the run; raised once it has ended
                failure.append(e)
                flag.value = 1
        o = L.CompareOpts(local=local, cancel=ctypes.pointer(flag))
        if keep is not None:
            o.keep = ctypes.cast(keep, POINTER(c_bool))
        if progress is not None:
            o.progress = L.PROGRESS(cb)
        if self._cache and not local:
            o.cache = self._cache
        out = POINTER(L.Compare)()

        def work():
            return L.compare_run(g.ptr, a, inputs, byref(o), byref(out), byref(err))
        try:
            st = _call_interruptibly(work, flag)
        finally:
            L.assign_free(a)
            for i in range(g.g.n_inputs):
                L.value_free(byref(inputs[i]))
        if failure:
            if out:
                L.compare_free(out)
            raise failure[0]
        _check(st, err)
        return out

    def run(self, local=False, keep=(), progress=None):
        """Run the current plan against the fp32 reference on the inputs
        (input()) and return the Run: per-layer metrics (report()), kept
        values (tensor()). local=True adds each node's own error (the
        program's `run --local`). keep: names of tensors whose values to
        keep besides the model outputs. progress(done, total) is called
        between nodes (an exception it raises stops the run and is raised
        here). Ctrl-C stops the run (KeyboardInterrupt); the session is as
        before the call."""
        with self._use():
            g = self._g
            kp = None
            if keep:
                kp = (c_bool * g.n_tensors)()
                for name in ([keep] if isinstance(keep, str) else keep):  # one name, or several
                    kp[self._find_tensor(name).index] = True
            plan = self._plan
            out = self._compare(plan, bool(local), kp, progress)
            run = Run(self, out, plan, bool(local), plan.target)
            self._take_run(run)
            return run

    def _take_run(self, run):
        """The last run, and its figures for rules on measured ones: the
        largest |fp32 value| of each node's outputs (NaN where none was
        measured), handed to every plan built from now on; a plan whose rules
        use them is built again (as the program does after `run`); the run
        keeps the plan it ran."""
        g, c = self._g, run._c
        absmax = (ctypes.c_double * max(1, g.n_nodes))(*([float("nan")] * max(1, g.n_nodes)))
        for i in range(c.n_layers):
            Ly = c.layers[i]
            v = Ly.m.absmax_ref
            if absmax[Ly.node] != absmax[Ly.node] or v > absmax[Ly.node]:
                absmax[Ly.node] = v
        self._last, self._absmax = run, absmax
        rules = L.history_rules(self._hist)
        if any(L.rules_uses_measured(rules, i) for i in range(L.rules_count(rules))):
            self._plan = self._build(rules, L.history_opts(self._hist).contents)

    def last_run(self):
        """The last run (None before the first)."""
        with self._use():
            return self._last

    def compare(self, *targets, local=False):
        """The current rules under several formats (`compare fp16 bf16
        fp8e4m3`), against one shared fp32 reference run: a list of Runs, one
        per format."""
        with self._use():
            if not 1 <= len(targets) <= 8:
                raise Error("compare takes 1 to 8 formats")
            rules = L.history_rules(self._hist)
            plans = []
            for name in targets:
                o = self._opts()
                f = L.format_by_name(name.encode())
                if not f or _fmt_name(f) == "fp32":
                    raise Error('unknown target format "%s" (%s)' % (name, " ".join(formats(True))))
                o.target = f
                plans.append(self._build(rules, o))
            err, g = L.Error_(), self._graph
            assigns = (c_void_p * len(plans))()
            try:
                for k, p in enumerate(plans):
                    assigns[k] = L.plan_to_assign(p._ptr, byref(err))
                    if not assigns[k]:
                        _raise(err)
                inputs = self._make_inputs()
                outs = (POINTER(L.Compare) * len(plans))()
                flag = c_int(0)
                o = L.CompareOpts(local=bool(local), cancel=ctypes.pointer(flag))
                try:
                    st = _call_interruptibly(lambda: L.compare_run_many(g.ptr, assigns, len(plans), inputs, byref(o),
                                                                        outs, byref(err)), flag)
                finally:
                    for i in range(g.g.n_inputs):
                        L.value_free(byref(inputs[i]))
                _check(st, err)
                return [Run(self, outs[k], p, bool(local), p.target) for k, p in enumerate(plans)]
            finally:
                for a in assigns:
                    if a:
                        L.assign_free(a)

    # ---- search --------------------------------------------------------------------

    def _cond(self, cmd, condition):
        """A condition's text parsed by libmpx (mpx_cond_parse) and its
        figures' names checked against the model, as the program's."""
        if not isinstance(condition, str):
            raise Error("%s: the condition is a string (\"output.rel_l2 < 1e-3\"), not %s"
                        % (cmd, type(condition).__name__))
        try:
            words = [w.encode() for w in shlex.split(condition)]
        except ValueError as e:
            raise Error("%s: %s in the condition %r" % (cmd, e, condition)) from None
        if not words:
            raise Error("%s: the condition comes first (e.g. \"output.rel_l2 < 1e-3\")" % cmd)
        argv = (ctypes.c_char_p * len(words))(*words)
        cond, err = L.Cond(), L.Error_()
        _check(L.cond_parse(cmd.encode(), len(words), argv, byref(cond), byref(err)), err)
        for i in range(cond.n):
            fig = cond.c[i].fig
            _check(L.figure_check(self._graph.ptr, fig, byref(err)), err)
            f = fig.decode()
            if f == "eval" or f.startswith("eval."):
                raise Error("%s is the figure of a command (the program's search --eval), which the package does "
                            "not offer" % f)
        return cond

    def search(self, condition, method="auto", max_evals=None, time=None, apply_best=False, progress=None):
        """The nodes to keep in fp32 so that condition holds ("output.rel_l2
        < 1e-3 and casts <= 40", the program's `search` and `assert`
        figures), with as much of the model low as possible: libmpx's
        search (explore/), every evaluation a real plan of the current rules
        plus `colour name:<node> red` per node kept, run through this
        session's run cache. method: "auto", "greedy", "bisect" or
        "sensitivity"; max_evals (default 500) and time (seconds) stop it
        early with the best plan found so far.

        The found rules are applied as one undo step (undo() takes them
        back) when the search ends with a set; stopped by max_evals or time,
        the best set so far is applied only with apply_best=True. Returns a
        SearchResult (fp32, figures, low_macs_pct, low_cost_pct,
        evaluations, ended, applied, json). A condition no plan meets, a
        stop before any plan met it, or an evaluation's error raises
        mpx.Error (with .result, the search's SearchResult; after an error,
        apply_best=True applies and returns the best set so far instead),
        as does an unknown figure or name (checked before any run).

        progress(d) is called after each evaluation with a dict:
        evaluations, best_fp32 and best (the first figure's value) of the
        best plan so far (None while none met the condition),
        best_low_cost_pct, left_s. An exception it raises stops the search
        (mpx.Error, raised from it); Ctrl-C stops it with KeyboardInterrupt.
        Either way nothing is applied: the session is as before the call."""
        with self._use():
            if method not in L.SEARCH_METHODS:
                raise Error('search: unknown method "%s" (%s)' % (method, " ".join(L.SEARCH_METHODS)))
            so = L.SearchOpts(method=L.SEARCH_METHODS.index(method), max_evals=500, log=True)
            if max_evals is not None:
                if isinstance(max_evals, bool) or not isinstance(max_evals, int) or not 1 <= max_evals <= 1000000:
                    raise Error("max_evals=%r: a count from 1 up" % (max_evals,))
                so.max_evals = max_evals
            if time is not None:
                try:
                    t = float(time)
                except (TypeError, ValueError):
                    t = float("nan")
                if not t > 0 or t > 1e9:
                    raise Error("time=%r: seconds, more than 0" % (time,))
                so.max_ms = t * 1000
            cond = self._cond("search", condition)
            amb = L.cond_output_ambiguity(self._graph.ptr, byref(cond))
            if amb:
                f = amb.decode()
                warnings.warn("%s is the worst over all %d model outputs; the output named \"output\" is "
                              "out[output].%s" % (f, self._g.n_outputs, f[7:]), stacklevel=2)
            # The figures read from the current plan (and last run) first, as
            # the program does: a figure that cannot be read fails here.
            last = self._last if self._last is not None and self._last.plan._generation == self._generation else None
            fc = L.FigureCtx(plan=ctypes.cast(self._plan._ptr, c_void_p),
                             cmp=ctypes.cast(last._ptr, c_void_p) if last else None, local=bool(last and last.local))
            for i in range(cond.n):
                fig, v, e = cond.c[i].fig, ctypes.c_double(), L.Error_()
                if (not L.figure_needs_run(fig) or last) and L.figure_read(byref(fc), fig, byref(v), byref(e)):
                    if b"compared no such" not in e.msg:
                        _raise(e)
            flag = c_int(0)
            host = _Host(self, flag, progress)
            x, err = c_void_p(), L.Error_()
            _check(L.search_new(self._graph.ptr, self._plan._ptr, L.history_rules(self._hist), byref(cond), byref(so),
                                byref(host.c), byref(x), byref(err)), err)
            try:
                r = L.SearchResult()
                try:
                    st = _call_interruptibly(lambda: L.search_run(x, byref(r), byref(err)), flag)
                finally:
                    host.free_inputs()
                host.raise_failure("search")
                msg = None
                if st:
                    buf = ctypes.create_string_buffer(2048)
                    msg = L.error_format(byref(err), buf, len(buf)).decode("utf-8", "replace")
                apply = not st or (apply_best and bool(r.set))
                text = L.search_json(x, byref(r), err.msg if st else None, apply, None)
                if not text:
                    raise MemoryError("out of memory")
                try:
                    result = SearchResult(json.loads(ctypes.string_at(text).decode("utf-8")))
                finally:
                    L.free(text)
                # A stop at a limit gives the best set so far (applied with
                # apply_best); any other failure raises unless apply_best asked
                # for what was found (the program's --apply-best).
                if st and not (r.set and (apply_best or r.end in (_END_MAX_EVALS, _END_TIME))):
                    if not r.set and r.end not in (_END_FAILED, _END_NO_PLAN):
                        msg = "%s; no plan met %s in %d evaluation%s" % (msg, cond.text.decode(), r.n_evals,
                                                                         "" if r.n_evals == 1 else "s")
                    ex = Error(msg, L.status_name(err.status).decode(), err.file.decode("utf-8", "replace"), err.line,
                               err.column, err.status)
                    ex.result = result
                    raise ex
                if apply and r.k > 0:
                    rules = c_void_p()
                    _check(L.search_rules(x, r.set, True, r.end, byref(rules), byref(err)), err)
                    try:
                        self._apply(rules.value, self._opts())
                    finally:
                        L.rules_free(rules)
                return result
            finally:
                L.search_free(x)

    def sweep(self, name, values, command, progress=None):
        """One command tried with each of several values, every point planned
        and run (the program's `sweep <name> in <values> : <command>`,
        libmpx's sweep through this session as its host: the reference run
        once through the run cache, each point recomputing what its plan
        changes). command is a colour, accum, target or keep-io command with
        $name where the value goes; values a list (or "v1,v2,..."). Nothing
        is applied. Returns the program's `sweep --json` document as a dict:
        {"sweep": {name, command, values, model, target}, "points": [{index,
        value, green, gray, clear, red, casts, low_macs_pct, low_cost_pct,
        weight_bytes, weights_overflow, output_rel_l2, overflow, underflow,
        worst_layer, worst_rel_l2}, ...]} (pandas.DataFrame(d["points"]) is
        its table). progress(d) is called before each point with point, of
        and value; an exception it raises stops the sweep (mpx.Error), as
        Ctrl-C does (KeyboardInterrupt)."""
        with self._use():
            if not isinstance(values, str):
                values = ",".join(str(v) for v in values)
            d, err = L.Sweep(), L.Error_()
            o = L.history_opts(self._hist)
            _check(L.sweep_define(byref(d), str(name).encode(), command.encode(), values.encode(),
                                  os.fsencode(self.model), o.contents.target, byref(err)), err)
            d.model_id = _file_id(self.model).encode()  # as the program's (its shards merge by content)
            flag = c_int(0)
            host = _Host(self, flag, progress)
            try:
                st = _call_interruptibly(lambda: L.sweep_run(byref(d), self._graph.ptr, L.history_rules(self._hist), o,
                                                             byref(host.c), 0, 0, byref(err)), flag)
            finally:
                host.free_inputs()
            host.raise_failure("sweep")
            _check(st, err)
            text = L.sweep_json(byref(d), None)
            if not text:
                raise MemoryError("out of memory")
            try:
                return json.loads(ctypes.string_at(text).decode("utf-8"))
            finally:
                L.free(text)

    # ---- artefacts -----------------------------------------------------------------

    def _page(self, plan, runs, path):
        plan._check_current()
        labels = [r.label.encode() for r in runs]
        series = (L.VizSeries * max(1, len(runs)))(*[L.VizSeries(labels[k], ctypes.cast(r._ptr, c_void_p))
                                                     for k, r in enumerate(runs)])
        o, keep = _viz_opts(overlay=runs[0]._ptr if runs else None, rules=plan._rules)
        po = L.PlotOpts()
        L.viz_plot_opts_default(byref(po))
        if runs and runs[0].plan is plan:
            po.marks = ctypes.cast(plan._ptr, c_void_p)
        model = self.model.encode()
        pg = L.VizPage(ctypes.cast(plan._ptr, c_void_p), plan._rules, model, series, len(runs), ctypes.pointer(o),
                       ctypes.pointer(po), None, 0)
        out, err = c_void_p(), L.Error_()
        with _VIZ:
            _check(L.viz_html(byref(pg), byref(out), None, byref(err)), err)
        text = L.take_text(out)
        if path is not None:
            _write(path, text, self._graph.guard)
        return text

    def html(self, path=None):
        """mpx's self-contained review page (`html`) of the current plan and,
        when the last run ran it, that run: written to path when given; the
        text is returned."""
        with self._use():
            runs = [self._last] if self._last is not None and self._last.plan is self._plan else []
            return self._page(self._plan, runs, path)

    def svg(self, path=None, overlay=True, **opts):
        """The current plan's cast graph as SVG (`svg`), with the last run's
        error overlay when it ran this plan and overlay is True; options as
        Plan.dot()."""
        with self._use():
            if overlay and self._last is not None and self._last.plan is self._plan:
                return self._last.svg(path, **opts)
            return self._plan.svg(path, **opts)

    def dot(self, path=None, **opts):
        """The current plan's cast graph as DOT text (`dot`)."""
        with self._use():
            return self._plan.dot(path, **opts)

    def export(self, path, force=False, external=False):
        """Write the current plan as an ONNX model (`export`): weights stored
        in their formats, a Cast per cast of the plan. Refuses an existing
        file unless force, the loaded model and the files read. Returns what
        was written: nodes, casts, weights, bytes before and after, opset,
        the weights that overflow or flush and the nodes whose accum
        options (bias-first, round-sum) ONNX cannot carry."""
        with self._use():
            s, err = L.ExportSummary(), L.Error_()
            _check(L.export_onnx(self._plan._ptr, os.fsencode(path), bool(force), bool(external), self._graph.guard,
                                     byref(s), byref(err)), err)
            d = {f: getattr(s, f) for f in ("nodes", "casts", "casts_retyped", "weights", "weight_elems",
                                            "bytes_before", "bytes_after", "opset_before", "opset", "upgraded",
                                            "n_overflow", "n_flushed", "n_kept", "n_accum_options",
                                            "external_bytes")}
            for f in ("overflow", "flushed", "kept", "accum_options", "external"):
                d[f] = getattr(s, f).decode()
            d["path"] = os.fspath(path)
            return d

    def __repr__(self):
        if self._closed:
            return "<mpx.Session (closed)>"
        return "<mpx.Session %s: %s>" % (self.model, self._plan.summary())


def _accum_options(flags):
    """The accum rule's options in flags by their names (plan --json's accum_options)."""
    names, k, f = [], 0, c_uint(0)
    while True:
        name = L.rules_accum_option(k, byref(f))
        if name is None:
            return names
        if flags & f.value:
            names.append(name.decode())
        k += 1


def _rule_text(verb, selector, what, when, otherwise):
    text = "%s %s %s" % (verb, selector, what)
    if when is not None:
        text += " when " + when
        if otherwise is not None:
            text += " else " + otherwise
    elif otherwise is not None:
        raise Error("%s: otherwise= goes with when=" % verb)
    return text


def _choice(what, value, table):
    try:
        return table[str(value).lower()]
    except KeyError:
        raise Error('%s is one of %s, not "%s"' % (what, ", ".join(sorted(table)), value)) from None


def _no_more(opts, kind):
    if opts:
        raise Error("%s: not an option of %s files: %s" % (kind, kind, ", ".join(sorted(opts))))
