"""The Python package (python/mpx) against the mpx program and its promises.

    MPX_LIBRARY=build/libmpx.so.0 PYTHONPATH=python \\
        /usr/bin/python3 tests/python/test_mpx.py <mpx program> <source dir> <work dir>

Figures are compared with the program's own JSON and .npy output for the
same model, inputs and rules, bit for bit: the package must be the same
engine, not an imitation (a ctypes structure out of step with the C
headers, an input made differently or a rule text built wrongly shows up
here). The bad inputs of issue 51: clear mpx.Error, no crash, the session
as it was.
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

import numpy as np

import mpx
from mpx import _session

PROGRAM, SRC, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
del sys.argv[1:4]
MODEL = os.path.join(SRC, "examples", "tiny_cnn.json")
NPY = os.path.join(SRC, "examples", "tiny_cnn_input.npy")
PNG = os.path.join(SRC, "examples", "data", "lines", "00.png")
RULE = "colour Conv green when macs >= 1M else gray"


def program(commands, cwd):
    """Run the mpx program on `commands` (joined by ;) in cwd."""
    p = subprocess.run([PROGRAM, "-c", "; ".join(commands)], cwd=cwd, capture_output=True, text=True)
    if p.returncode:
        raise AssertionError("mpx failed: %s\n%s" % (commands, p.stderr))
    return p.stdout


def work(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def same(a, b):
    """Equal figures: NaN equal to NaN (the program's JSON writes "inf", "-inf" and "nan" as strings),
    and within cJSON's printing (15 significant digits where it judges them enough)."""
    a, b = (float(x) if isinstance(x, str) else x for x in (a, b))
    return a == b or (a != a and b != b) or math.isclose(a, b, rel_tol=1e-14)


def session(**kw):
    s = mpx.Session(MODEL, **kw)
    s.input("x", shape=(1, 3, 64, 64), random=("normal", 0, 1), seed=42)
    return s


def figures(run):
    return [(r["tensor"], r["format"], [r[m] for m in mpx.metrics()]) for r in run.report()]


class ProgramAgreement(unittest.TestCase):
    """The package's figures are the program's."""

    def test_report_plan_and_counts_match_the_program(self):
        d = work("agree")
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "input x random normal 0 1 seed 42", RULE,
                 "run --local", "report --json r.json", "plan --json p.json"], d)
        rep = json.load(open(os.path.join(d, "r.json")))
        pj = json.load(open(os.path.join(d, "p.json")))
        s = session()
        s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
        r = s.run(local=True)
        mine = {row["tensor"]: row for row in r.report()}
        self.assertEqual(len(mine), len(rep["layers"]))
        for L in rep["layers"]:
            row = mine[L["tensor"]]
            for k in ("node", "op", "order", "format", "output"):
                self.assertEqual(row[k], L[k], (L["tensor"], k))
            for m in mpx.metrics():
                self.assertTrue(same(row[m], L["metrics"][m]), (L["tensor"], m, row[m], L["metrics"][m]))
                self.assertTrue(same(row["local_" + m], L["local"][m]), (L["tensor"], "local", m))
        p = s.plan()
        nodes = p.nodes()
        self.assertEqual(len(nodes), len(pj["nodes"]))
        for a, b in zip(nodes, pj["nodes"]):
            for k in b:
                self.assertEqual(a[k], b[k], (b["name"], k))
        c = p.counts()
        for k, v in pj["counts"].items():
            self.assertTrue(same(c[k], v), (k, c[k], v))
        self.assertEqual([(x["tensor"], x["from"], x["to"], len(x["consumers"])) for x in p.casts()],
                         [(x["tensor"], x["from"], x["to"], x["consumers"]) for x in pj["casts"]])
        # sort and top as the program's report --sort --top
        worst = r.report(sort="rel_l2", top=3)
        self.assertEqual([w["tensor"] for w in worst], [L["tensor"] for L in rep["layers"][:3]])
        self.assertEqual(r.worst()["tensor"], rep["layers"][0]["tensor"])
        self.assertEqual(r.worst("output")["tensor"], "y")
        own = max(r.report(), key=lambda row: row["local_rel_l2"])
        self.assertEqual(r.worst("own")["tensor"], own["tensor"])
        with self.assertRaisesRegex(mpx.Error, 'worst: of is one of any, output, own, not "all"'):
            r.worst("all")

    def test_rules_on_measured_figures_match_the_program(self):
        d = work("absmax")
        rule = "colour * red when absmax > 4"
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "input x random normal 0 1 seed 42", "run", rule,
                 "plan --json p.json"], d)
        pj = json.load(open(os.path.join(d, "p.json")))
        s = session()
        with self.assertRaisesRegex(mpx.Error, "uses absmax, a figure measured by the reference run"):
            s.rule(rule)
        self.assertEqual(s.rules(), [])
        s.run()
        s.rule(rule)
        nodes = s.plan().nodes()
        self.assertEqual([(n["name"], n["colour"], n["rule"]) for n in nodes],
                         [(n["name"], n["colour"], n["rule"]) for n in pj["nodes"]])
        self.assertIn("red", [n["colour"] for n in nodes if n["rule"] == 1])

    def test_tensor_values_match_the_program(self):
        d = work("tensor")
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "input x random normal 0 1 seed 42", "run",
                 "tensor s1.se.out --save c.npy --save-ref r.npy", "tensor y --save yc.npy --save-ref yr.npy"], d)
        s = session()
        r = s.run()
        ref, cand = r.tensor("s1.se.out")  # not kept by the run: a fresh run keeps it
        np.testing.assert_array_equal(ref, np.load(os.path.join(d, "r.npy")))
        np.testing.assert_array_equal(cand, np.load(os.path.join(d, "c.npy")))
        self.assertEqual(ref.dtype, np.float32)
        yr, yc = r.tensor("/head/Softmax")  # a node names its first output (y, kept)
        np.testing.assert_array_equal(yr, np.load(os.path.join(d, "yr.npy")))
        np.testing.assert_array_equal(yc, np.load(os.path.join(d, "yc.npy")))
        kept = s.run(keep=["s1.se.out"])
        np.testing.assert_array_equal(kept.tensor("s1.se.out")[1], cand)
        with self.assertRaisesRegex(mpx.Error, 'no tensor or node named "nope"'):
            r.tensor("nope")

    def test_compare_is_each_target_run(self):
        s = session()
        runs = s.compare("fp16", "bf16")
        self.assertEqual([x.target for x in runs], ["fp16", "bf16"])
        one = {}
        for f in ("fp16", "bf16"):
            s.target(f)
            one[f] = figures(s.run())
        self.assertEqual(figures(runs[0]), one["fp16"])
        self.assertEqual(figures(runs[1]), one["bf16"])
        with self.assertRaisesRegex(mpx.Error, 'unknown target format "fp12"'):
            s.compare("fp16", "fp12")

    def test_inputs_from_arrays_files_and_images(self):
        d = work("inputs")
        program(["load '%s'" % MODEL, "input x file '%s'" % NPY, "run", "report --json npy.json",
                 "input x image '%s'" % PNG, "run", "report --json png.json"], d)
        a = np.load(NPY)
        s = mpx.Session(MODEL)
        s.input("x", NPY)
        from_file = figures(s.run())
        s.input("x", a)
        self.assertEqual(figures(s.run()), from_file)
        rep = json.load(open(os.path.join(d, "npy.json")))
        mine = {row["tensor"]: row for row in s.run().report()}
        for L in rep["layers"]:
            self.assertEqual(mine[L["tensor"]]["rel_l2"], L["metrics"]["rel_l2"])
        s.input("x", PNG)
        self.assertEqual(s.inputs()[0][2][:2], (1, 3))
        rep = json.load(open(os.path.join(d, "png.json")))
        mine = {row["tensor"]: row for row in s.run().report()}
        for L in rep["layers"]:
            self.assertEqual(mine[L["tensor"]]["rel_l2"], L["metrics"]["rel_l2"], L["tensor"])
        # image options reach the decoder: another size is another binding
        s.input("x", PNG, size=(16, 24))
        self.assertEqual(s.inputs()[0][2], (1, 3, 16, 24))
        with self.assertRaisesRegex(mpx.Error, "not an option of png files: rate"):
            s.input("x", PNG, rate=16000)


    def test_audio_input(self):
        d = work("audio")
        m, wav = (os.path.join(SRC, "tests", "models", f) for f in ("logmel.json", "speech.wav"))
        program(["load '%s'" % m, "input x audio '%s' rate 8000 length 4000" % wav, "run", "tensor x --save x.npy"], d)
        s = mpx.Session(m)
        s.input("x", wav, rate=8000, length=4000)
        ref, cand = s.run(keep=["x"]).tensor("x")
        np.testing.assert_array_equal(ref, np.load(os.path.join(d, "x.npy")))
        with self.assertRaisesRegex(mpx.Error, "not an option of audio files: size"):
            s.input("x", wav, size=(2, 2))


class BadInput(unittest.TestCase):
    """Issue 51's bad inputs: a clear mpx.Error, no crash, the session as it was."""

    def assert_unchanged(self, s, before):
        self.assertEqual((s.inputs(), s.plan().summary(), s.rules(), figures(s.run())), before)

    def state(self, s):
        return (s.inputs(), s.plan().summary(), s.rules(), figures(s.run()))

    def test_dtype(self):
        s = session()
        before = self.state(s)
        ints = np.arange(3 * 64 * 64, dtype=np.int32).reshape(1, 3, 64, 64) % 7 - 3
        with self.assertRaisesRegex(mpx.Error, r"holds int32 values but input x is float32; pass convert=True"):
            s.input("x", ints)
        for bad in (ints.astype(np.complex64), ints.astype(object), ints.astype(str)):
            with self.assertRaises(mpx.Error):
                s.input("x", bad)
        with self.assertRaisesRegex(mpx.Error, "a NumPy array, a file name or shape= expected, not list"):
            s.input("x", [[1.0]])
        self.assert_unchanged(s, before)
        s.input("x", ints, convert=True)
        converted = figures(s.run())
        s.input("x", ints.astype(np.float64))  # float arrays of any width: as float32
        self.assertEqual(figures(s.run()), converted)

    def test_integer_input(self):
        d = work("intmodel")
        m = os.path.join(d, "ids.json")
        with open(m, "w") as f:
            json.dump({"format": "mpx-model", "version": 1, "name": "ids", "opset": 17,
                       "inputs": [{"name": "ids", "type": "int64", "shape": [1, 4]}],
                       "outputs": [{"name": "y", "type": "float32", "shape": [1, 4]}],
                       "nodes": [{"name": "cast", "op": "Cast", "inputs": ["ids"], "outputs": ["f"],
                                  "attrs": {"to": 1}},
                                 {"name": "relu", "op": "Relu", "inputs": ["f"], "outputs": ["y"]}]}, f)
        s = mpx.Session(m)
        with self.assertRaisesRegex(mpx.Error, r"holds float values \(float32\) but input ids is int64"):
            s.input("ids", np.zeros((1, 4), np.float32))
        s.input("ids", np.array([[-2, 0, 3, 70000]], np.int32))
        ref, cand = s.run().tensor("y")
        np.testing.assert_array_equal(ref, [[0, 0, 3, 70000]])
        np.testing.assert_array_equal(cand, ref)  # no float input: fp32 throughout

    def test_float64(self):
        # float64 in and out as float64: 1e229 and 1e-300 survive, which fp32 holds as inf and 0
        d = work("f64model")
        m = os.path.join(d, "f64.json")
        with open(m, "w") as f:
            json.dump({"format": "mpx-model", "version": 1, "name": "f64", "opset": 17,
                       "inputs": [{"name": "x", "type": "float64", "shape": [1, 3]}],
                       "outputs": [{"name": "y", "type": "float64", "shape": [1, 3]}],
                       "nodes": [{"name": "mul", "op": "Mul", "inputs": ["x", "x"], "outputs": ["y"]}]}, f)
        s = mpx.Session(m)
        x = np.array([[1e150, 1e-160, 3.0]])
        s.input("x", x)
        ref, cand = s.run().tensor("y")
        self.assertEqual(ref.dtype, np.float64)
        np.testing.assert_array_equal(ref, x * x)
        np.testing.assert_array_equal(cand, ref)  # the defaults keep float64

    def test_shape(self):
        s = session()
        before = self.state(s)
        with self.assertRaisesRegex(mpx.Error, r'input "x" has rank 4 \(declared batchx3xheightxwidth\), not 3'):
            s.input("x", np.zeros((3, 64, 64), np.float32))
        self.assert_unchanged(s, before)
        with self.assertRaisesRegex(mpx.Error, 'input "x": dim 1 is fixed at 3'):
            s.input("x", shape=(1, 5, 64, 64))
        self.assert_unchanged(s, before)
        # bound, then refused by shape inference: the old binding is put back
        with self.assertRaisesRegex(mpx.Error, r'node "/backbone/stem/conv/Conv" \(Conv\): spatial dim 0: input '
                                               'length 0'):
            s.input("x", np.zeros((1, 3, 0, 64), np.float32))
        self.assert_unchanged(s, before)
        with self.assertRaisesRegex(mpx.Error, "beyond mpx's limit"):
            s.input("x", shape=(1, 3, 1 << 40, 1 << 40))
        self.assert_unchanged(s, before)
        with self.assertRaisesRegex(mpx.Error, 'no model input named "X" \\(inputs: x\\)'):
            s.input("X", shape=(1, 3, 8, 8))
        fresh = mpx.Session(MODEL)
        with self.assertRaisesRegex(mpx.Error, r'input x has no shape yet \(use: input\("x", shape=...\)\)'):
            fresh.run()
        fresh.input("x", shape=(1, 3, 8, 8))
        self.assertEqual(len(fresh.run().report()), 25)

    def test_bad_model_files(self):
        d = work("models")
        with self.assertRaises(mpx.Error) as e:
            mpx.Session(os.path.join(d, "missing.onnx"))
        self.assertEqual((e.exception.status, e.exception.code, e.exception.file),
                         ("i/o error", 1, os.path.join(d, "missing.onnx")))
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write('{"format": "mpx-model",\n "version": 1,\n "nodes": [}\n')
        with self.assertRaises(mpx.Error) as e:
            mpx.Session(bad)
        self.assertEqual(e.exception.file, bad)
        self.assertEqual(e.exception.line, 3)
        self.assertIn("bad.json:3", str(e.exception))

    def test_non_contiguous_arrays_are_copied(self):
        s = mpx.Session(MODEL)
        big = np.random.default_rng(3).standard_normal((1, 64, 64, 3)).astype(np.float32)
        view = big.transpose(0, 3, 1, 2)  # NHWC data seen as NCHW: not C-contiguous
        self.assertFalse(view.flags.c_contiguous)
        s.input("x", view)
        a = figures(s.run())
        s.input("x", np.ascontiguousarray(view))
        self.assertEqual(figures(s.run()), a)
        strided = np.zeros((1, 3, 128, 128), np.float32)[:, :, ::2, ::2]
        strided[...] = view
        s.input("x", strided)
        self.assertEqual(figures(s.run()), a)
        # the session holds its own copy: changing the caller's array changes nothing
        mine = np.ascontiguousarray(view)
        s.input("x", mine)
        mine[...] = 0
        self.assertEqual(figures(s.run()), a)

    def test_closed_session(self):
        s = session()
        p = s.plan()
        r = s.run()
        s.close()
        for call in (lambda: s.plan(), lambda: s.run(), lambda: s.input("x", shape=(1, 3, 8, 8)),
                     lambda: s.colour("Conv", "red"), lambda: s.export(os.path.join(WORK, "closed.onnx")),
                     lambda: s.html()):
            with self.assertRaisesRegex(mpx.Error, "the session is closed"):
                call()
        s.close()  # again: nothing, as a file's close
        # what was taken stays readable: the graph lives while they do
        self.assertIn("casts", p.summary())
        self.assertTrue(p.svg().startswith("<?xml") or "<svg" in p.svg())
        self.assertEqual(len(r.report()), 25)
        self.assertEqual(r.tensor("y")[0].shape, (1, 10))
        with self.assertRaisesRegex(mpx.Error, "model"):
            p.dot(MODEL)  # the model stays guarded while a plan of it lives
        with mpx.Session(MODEL) as t:
            t.input("x", shape=(1, 3, 8, 8))
        with self.assertRaisesRegex(mpx.Error, "closed"):
            t.run()

    def test_second_thread_is_refused(self):
        s = session(cache_mb=0)  # every run runs its nodes (and calls progress)
        before = figures(s.run())
        inside, release = threading.Event(), threading.Event()
        seen = []

        def progress(done, total):
            if done == 1:
                inside.set()
                release.wait(60)

        t = threading.Thread(target=lambda: seen.append(figures(s.run(progress=progress))))
        t.start()
        self.assertTrue(inside.wait(60))
        for call in (s.plan, s.run, s.rules, lambda: s.colour("Conv", "red")):
            with self.assertRaisesRegex(mpx.Error, "in use by another thread"):
                call()
        release.set()
        t.join()
        self.assertEqual(seen, [before])
        self.assertEqual(figures(s.run()), before)

    def test_exception_in_a_callback(self):
        s = session(cache_mb=0)  # every run runs its nodes (and calls progress)
        before = figures(s.run())
        calls = []

        def progress(done, total):
            calls.append(done)
            if done == 2:
                raise ValueError("user's bug")

        with self.assertRaisesRegex(ValueError, "user's bug"):
            s.run(progress=progress)
        self.assertLess(max(calls), 25)  # the run stopped
        self.assertEqual(figures(s.run()), before)
        self.assertEqual(figures(s.run(progress=lambda d, t: None)), before)

    def test_ctrl_c_stops_a_run(self):
        s = session(cache_mb=0)  # every run runs its nodes (and calls progress)
        before = figures(s.run())
        main = threading.main_thread().ident
        calls = []

        def progress(done, total):
            calls.append(done)
            if done == 1:
                signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C, delivered to the waiting thread
                deadline = time.monotonic() + 30
                while not _session._CANCEL.value and time.monotonic() < deadline:
                    time.sleep(0.001)  # until the interrupt has reached mpx's cancel flag

        with self.assertRaises(KeyboardInterrupt):
            s.run(progress=progress)
        self.assertLess(max(calls), 25)  # stopped between nodes, not run to the end
        self.assertEqual(_session._CANCEL.value, 0)
        self.assertEqual(figures(s.run()), before)

    def test_rules_and_options(self):
        s = session()
        before = self.state(s)
        with self.assertRaises(mpx.Error) as e:
            s.colour("Conx", "green")
        self.assertIn("Conv", e.exception.message)  # did you mean
        self.assertGreater(e.exception.column, 0)
        with self.assertRaisesRegex(mpx.Error, "otherwise= goes with when="):
            s.colour("Conv", "gray", otherwise="red")
        with self.assertRaisesRegex(mpx.Error, 'unknown target format "fp12"'):
            s.target("fp12")
        with self.assertRaisesRegex(mpx.Error, "no rule 1: the rules are numbered 1 to 0"):
            s.unrule(1)
        self.assert_unchanged(s, before)
        s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
        s.rule("colour name:/head/* red")
        self.assertEqual(s.rules(), [RULE, "colour name:/head/* red"])
        self.assertEqual(s.plan().nodes()[23]["colour"], "red")  # /head/fc/Gemm
        self.assertEqual(s.plan().nodes()[23]["rule"], 2)
        s.unrule(1)
        self.assertEqual(s.rules(), ["colour name:/head/* red"])
        self.assertTrue(s.undo())
        self.assertEqual(len(s.rules()), 2)
        self.assertTrue(s.redo())
        self.assertFalse(s.redo())
        self.assertEqual(s.target("bf16", block=16), "bf16")
        self.assertEqual(s.plan().target, "bf16")
        self.assertEqual(s.target(), "bf16")
        s.undo()
        self.assertEqual(s.target(), "fp16")
        s.keep_io(False)
        self.assertNotIn("x", [c["tensor"] for c in s.plan().casts()])  # the input arrives in fp16
        s.accum("Conv", "fp16")
        self.assertEqual([n["accum"] for n in s.plan().nodes() if n["op"] == "Conv" and n["compute"] == "fp16"],
                         ["fp16"] * len([n for n in s.plan().nodes() if n["op"] == "Conv" and n["compute"] == "fp16"]))
        why = s.plan().why("/backbone/stage1/se/fc1/Conv")
        self.assertIn("rule #2 `accum Conv fp16`", why)
        with self.assertRaisesRegex(mpx.Error, 'no node named "nope"'):
            s.plan().why("nope")
        with self.assertRaisesRegex(mpx.Error, 'unknown metric "rel"'):
            s.run().report(sort="rel")


class NewUserFindings(unittest.TestCase):
    """What a first user of the package hit: each a refusal the program
    makes too, or the type and values a user's code relies on."""

    def test_fill_parameters_refused_as_the_program_refuses_them(self):
        s = session()
        for kw, msg in ((dict(random=("uniform", 1, 0)), r"uniform range \[1, 0\) is empty"),
                        (dict(random=("normal", 0, -1)), "std -1 is negative"),
                        (dict(random=("normal", float("nan"), 1)), "mean nan is not finite"),
                        (dict(const=float("inf")), "const: inf is not finite")):
            with self.assertRaisesRegex(mpx.Error, msg):
                s.input("x", shape=(1, 3, 64, 64), **kw)
        self.assertEqual(figures(s.run()), figures(session().run()))  # the refusals changed nothing

    def test_a_run_does_not_read_tensors_of_later_inputs(self):
        s = session()
        r1 = s.run()
        kept = r1.tensor("s1.out")
        self.assertTrue(np.array_equal(kept[0], r1.tensor("s1.out")[0]))
        s.input("x", shape=(1, 3, 64, 64), random=("normal", 0, 2), seed=7)
        with self.assertRaisesRegex(mpx.Error, r'this run did not keep it.*run\(keep=\["s1.out"\]\)'):
            r1.tensor("s1.out")
        r2 = s.run(keep="s1.out")  # one name as a string
        self.assertFalse(np.array_equal(kept[0], r2.tensor("s1.out")[0]))

    def test_records_are_lists_of_dicts_and_top_is_a_count(self):
        r = session().run()
        rows = r.report(top=3)
        self.assertIsInstance(rows, list)
        self.assertIsInstance(rows, mpx.Records)
        self.assertEqual(len(rows), 3)
        self.assertIn("rel_l2", rows[0])
        for bad in (-1, "3", 1.5):
            with self.assertRaisesRegex(mpx.Error, "top is a count"):
                r.report(top=bad)

    def test_a_0d_array_for_a_scalar_input(self):
        from onnx import helper as h, TensorProto as T
        path = os.path.join(work("scalar"), "scalar.onnx")
        g = h.make_graph([h.make_node("Mul", ["x", "k"], ["y"])], "g",
                         [h.make_tensor_value_info("x", T.FLOAT, [4]), h.make_tensor_value_info("k", T.FLOAT, [])],
                         [h.make_tensor_value_info("y", T.FLOAT, [4])])
        with open(path, "wb") as f:
            f.write(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString())
        s = mpx.Session(path)
        s.input("k", np.array(3.0, np.float32))
        s.input("x", np.arange(4, dtype=np.float32))
        ref, _ = s.run().tensor("y")
        self.assertEqual(ref.tolist(), [0.0, 3.0, 6.0, 9.0])

    def test_dropping_a_session_with_its_runs_in_any_order(self):
        import gc
        for _ in range(3):  # a cycle (session <-> run) the collector frees in its own order
            s = session()
            r = s.run()
            r.report()
            del s, r
            gc.collect()


class Search(unittest.TestCase):
    """Session.search is libmpx's search (explore/) with the session as its
    host: the program's result for the same session, the rules applied as
    one undo step, and a stop of any kind leaves the session as it was."""

    COND = "output.rel_l2 < 1e-4"

    def state(self, s):
        return (s.rules(), s.plan().summary(), [n["colour"] for n in s.plan().nodes()])

    def test_search_matches_the_program(self):
        d = work("search")
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "input x random normal 0 1 seed 42", RULE,
                 "search %s --json s.json" % self.COND, "plan --json p.json"], d)
        with open(os.path.join(d, "s.json")) as f:
            j = json.load(f)
        with open(os.path.join(d, "p.json")) as f:
            pj = json.load(f)
        s = session()
        s.rule(RULE)
        res = s.search(self.COND)
        self.assertTrue(j["fp32"])  # a condition the plan as it was does not meet
        self.assertEqual(res.fp32, j["fp32"])
        self.assertEqual(res.figures, j["figures"])  # every digit
        self.assertEqual((res.low_macs_pct, res.low_cost_pct), (j["low_macs_pct"], j["low_cost_pct"]))
        self.assertEqual((res.ended, res.applied, res.evaluations, res.unchanged, res.candidates),
                         ("done", True, j["n_evaluations"], j["n_unchanged"], j["candidates"]))
        for k in ("condition", "method", "ended", "fp32", "applied", "candidates", "n_evaluations", "n_unchanged"):
            self.assertEqual(res.json[k], j[k], k)
        # each evaluation: the same set and figures, and the same nodes run (what the run cache did not
        # answer: the trials go through the session's cache, failed ones undone, local ones past it)
        keys = ("set", "holds", "figures", "nodes_run", "local")
        self.assertEqual([[e.get(k) for k in keys] for e in res.json["evaluations"]],
                         [[e.get(k) for k in keys] for e in j["evaluations"]])
        # applied: the program's plan after its search, and the figure a run of it reads
        self.assertEqual([(n["name"], n["colour"], n["rule"]) for n in s.plan().nodes()],
                         [(n["name"], n["colour"], n["rule"]) for n in pj["nodes"]])
        self.assertEqual(s.plan().counts()["low_cost_pct"], res.low_cost_pct)
        self.assertEqual(s.run().outputs()[0]["rel_l2"], res.figures["output.rel_l2"])
        # one undo step
        self.assertEqual(s.rules()[0], RULE)
        self.assertEqual(len(s.rules()), 1 + len(res.fp32))
        self.assertTrue(s.undo())
        self.assertEqual(s.rules(), [RULE])
        self.assertTrue(s.redo())
        self.assertEqual(len(s.rules()), 1 + len(res.fp32))

    def test_stopped_search_applies_only_with_apply_best(self):
        s = session()
        s.rule(RULE)
        before = self.state(s)
        res = s.search(self.COND, max_evals=5)  # stops with a set that holds, not the smallest
        self.assertEqual((res.ended, res.applied, res.evaluations), ("max_evals", False, 5))
        self.assertTrue(res.fp32)
        self.assertLess(res.figures["output.rel_l2"], 1e-4)
        self.assertEqual(self.state(s), before)
        best = s.search(self.COND, max_evals=5, apply_best=True)
        self.assertEqual((best.ended, best.applied, best.fp32), ("max_evals", True, res.fp32))
        self.assertEqual([r.split("  #")[0] for r in s.rules()], [RULE] + ["colour name:%s red" % n for n in res.fp32])
        self.assertEqual([n["name"] for n in s.plan().nodes() if n["rule"] and n["rule"] > 1], res.fp32)
        self.assertTrue(s.undo())
        self.assertEqual(self.state(s), before)
        with self.assertRaisesRegex(mpx.Error, "no plan met output.rel_l2 < 1e-4 in 1 evaluation") as e:
            s.search(self.COND, max_evals=1)  # stopped before any plan met it
        self.assertEqual((e.exception.result.ended, e.exception.result.fp32), ("max_evals", None))
        self.assertEqual(self.state(s), before)

    def test_bad_conditions_are_the_programs_errors(self):
        d = work("search_bad")
        s = session()
        before = self.state(s)
        for cond in ("output.rel_l3 < 1e-3", "nosuch < 3", "out[nope].rel_l2 < 1"):
            p = subprocess.run([PROGRAM, "-c", "load '%s'; input x shape 1x3x64x64; search %s" % (MODEL, cond)],
                               cwd=d, capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            with self.assertRaises(mpx.Error) as e:
                s.search(cond)
            self.assertTrue(e.exception.message, cond)
            self.assertIn(e.exception.message, p.stderr, cond)
            # refused before any run: by the names' check, or (a metric's name) by the search's first reading
            r = e.exception.result
            self.assertTrue(r is None or (r.ended, r.evaluations) == ("failed", 0), (cond, r))
            self.assertEqual(r is None, cond != "output.rel_l3 < 1e-3", cond)
        with self.assertRaisesRegex(mpx.Error, 'unknown figure "nosuch"'):
            s.search("nosuch < 3")
        with self.assertRaisesRegex(mpx.Error, 'search: unknown method "magic"'):
            s.search(self.COND, method="magic")
        with self.assertRaisesRegex(mpx.Error, "max_evals=0: a count from 1 up"):
            s.search(self.COND, max_evals=0)
        with self.assertRaisesRegex(mpx.Error, "time='soon': seconds, more than 0"):
            s.search(self.COND, time="soon")
        self.assertEqual(self.state(s), before)

    def test_output_named_output_is_warned_of(self):
        s = mpx.Session(os.path.join(SRC, "tests", "models", "named_output.json"))
        with self.assertWarnsRegex(UserWarning, r'output.rel_l2 is the worst over all 2 model outputs; the output '
                                                r'named "output" is out\[output\].rel_l2'):
            r = s.search("output.rel_l2 < 1e-9")
        self.assertEqual((r.ended, r.fp32), ("done", []))

    def test_exception_in_progress_stops_the_search(self):
        s = session()
        s.rule(RULE)
        before = self.state(s)
        seen = []

        def progress(p):
            seen.append(p["evaluations"])
            if p["evaluations"] == 3:
                raise ValueError("user's bug")

        with self.assertRaisesRegex(mpx.Error, "ValueError: user's bug") as e:
            s.search(self.COND, progress=progress)
        self.assertIsInstance(e.exception.__cause__, ValueError)
        self.assertEqual(seen, [1, 2, 3])  # no evaluation after the exception
        self.assertEqual(self.state(s), before)
        # the session searches as before
        fresh = session()
        fresh.rule(RULE)
        self.assertEqual(s.search(self.COND).fp32, fresh.search(self.COND).fp32)

    def test_ctrl_c_stops_the_search(self):
        s = session()
        s.rule(RULE)
        before = self.state(s)
        main = threading.main_thread().ident
        seen = []

        def progress(p):
            seen.append(p["evaluations"])
            if p["evaluations"] == 2:
                signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C, delivered to the waiting thread
                deadline = time.monotonic() + 30
                while not _session._CANCEL.value and time.monotonic() < deadline:
                    time.sleep(0.001)  # until the interrupt has reached mpx's cancel flag

        with self.assertRaises(KeyboardInterrupt):
            s.search(self.COND, progress=progress)
        self.assertEqual(seen, [1, 2])
        self.assertEqual(_session._CANCEL.value, 0)
        self.assertEqual(self.state(s), before)


class Sweep(unittest.TestCase):
    """Session.sweep is libmpx's sweep through the same host: the program's JSON, nothing applied."""

    SWEEP = "colour Conv green when macs >= $t else gray"

    def test_sweep_matches_the_program(self):
        d = work("sweep")
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "input x random normal 0 1 seed 42",
                 "sweep t in 0,1M,4M : %s --json a.json" % self.SWEEP, "sweep f in fp16,bf16 : target $f --json b.json"],
                d)
        s = session()
        before = (s.rules(), s.target(), s.plan().summary())
        seen = []
        for args, path in (((("t", [0, "1M", "4M"], self.SWEEP)), "a.json"), (("f", "fp16,bf16", "target $f"), "b.json")):
            with open(os.path.join(d, path)) as f:
                j = json.load(f)
            mine = s.sweep(*args, progress=lambda p: seen.append((p["point"], p["value"])))
            # every point's figures, to the last digit; the session's id is
            # the program's alone (a CRC of its saved script)
            self.assertIn("session_id", j["sweep"])
            del j["sweep"]["session_id"]
            self.assertEqual(mine, j)
        self.assertEqual(seen, [(0, "0"), (1, "1M"), (2, "4M"), (0, "fp16"), (1, "bf16")])
        self.assertNotEqual(mine["points"][0]["output_rel_l2"], mine["points"][1]["output_rel_l2"])
        self.assertEqual((s.rules(), s.target(), s.plan().summary()), before)  # nothing applied

    def test_sweep_errors(self):
        s = session()
        with self.assertRaisesRegex(mpx.Error, r'sweep: "\$u" is not the swept name'):
            s.sweep("t", [1, 2], "colour Conv green when macs >= $u")

        def progress(p):
            if p["point"] == 1:
                raise ValueError("user's bug")
        seen = []
        with self.assertRaisesRegex(mpx.Error, "sweep stopped: ValueError: user's bug"):
            s.sweep("t", [0, "1M", "4M"], self.SWEEP, progress=lambda p: (seen.append(p["point"]), progress(p)))
        self.assertEqual(seen, [0, 1])
        self.assertEqual(s.rules(), [])


class Facts(unittest.TestCase):
    def test_model_facts_match_info(self):
        d = work("info")
        text = program(["load '%s'" % MODEL, "input x shape 1x3x64x64", "info"], d)
        s = mpx.Session(MODEL)
        self.assertEqual(s.inputs(), [("x", "float32", (-1, 3, -1, -1))])
        s.input("x", shape=(1, 3, 64, 64))
        self.assertEqual(s.outputs(), [("y", "float32", (1, 10))])
        i = s.info()
        self.assertEqual((i["name"], i["nodes"], i["tensors"], i["opset"]), ("tiny_cnn", 25, 57, 17))
        self.assertIn("nodes     25", text)
        self.assertIn("MACs      6.46M", text)
        self.assertEqual(round(i["macs"] / 1e4) / 100, 6.46)
        self.assertIsNone(s.last_run())
        r = s.run()
        self.assertIs(s.last_run(), r)
        s.color("Gemm", "red")  # the alias
        self.assertEqual(s.rules(), ["colour Gemm red"])
        self.assertIn("tiny_cnn.json", repr(s))


class Artefacts(unittest.TestCase):
    def test_export(self):
        d = work("export")
        s = session()
        s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
        out = os.path.join(d, "m16.onnx")
        x = s.export(out)
        self.assertEqual(x["casts"], s.plan().counts()["casts"])
        self.assertEqual(x["bytes_after"], os.path.getsize(out))
        import onnx
        onnx.checker.check_model(onnx.load(out))
        with self.assertRaisesRegex(mpx.Error, "exists"):
            s.export(out)
        s.export(out, force=True)
        with self.assertRaises(mpx.Error):
            s.export(MODEL, force=True)  # the loaded model is never written over
        program(["load '%s'" % MODEL, "input x shape 1x3x64x64", RULE, "export p16.onnx"], d)
        self.assertEqual(open(out, "rb").read(), open(os.path.join(d, "p16.onnx"), "rb").read())
        # accum options: in the plan's records, and named by export (ONNX cannot carry them)
        s.accum("GlobalAveragePool", "fp16 round-sum")
        self.assertEqual([n["accum_options"] for n in s.plan().nodes() if n["op"] == "GlobalAveragePool"],
                         [["round-sum"]] * 2)
        x = s.export(out, force=True)
        self.assertEqual(x["n_accum_options"], 2)
        self.assertIn("/head/pool/GlobalAveragePool (round-sum)", x["accum_options"])

    def test_pictures_and_page(self):
        d = work("pictures")
        s = session()
        p = s.plan()
        self.assertIn("digraph", s.dot())
        self.assertIn("digraph", p.dot(os.path.join(d, "p.dot"), around="/head/fc/Gemm", depth=1))
        self.assertTrue(os.path.getsize(os.path.join(d, "p.dot")) > 0)
        svg = p._repr_svg_()
        self.assertIn("<svg", svg)
        r = s.run()
        self.assertIn("<svg", s.svg(os.path.join(d, "p.svg")))
        self.assertIn("<svg", r._repr_svg_())  # the error plot
        page = s.html(os.path.join(d, "review.html"))
        self.assertIn("<html", page)
        self.assertEqual(open(os.path.join(d, "review.html")).read(), page)
        self.assertTrue(r._repr_html_().startswith("<iframe srcdoc="))
        others = s.compare("bf16")
        self.assertIn("bf16", r.plot(others=others))
        with self.assertRaisesRegex(mpx.Error, "model"):
            s.html(MODEL)  # the guard: the loaded model is not written over
        with self.assertRaises(mpx.Error):
            p.dot(around="nope")


class Documentation(unittest.TestCase):
    def test_every_public_method_is_documented(self):
        for cls in (mpx.Session, mpx.Plan, mpx.Run):
            for name in dir(cls):
                if name.startswith("_"):
                    continue
                doc = getattr(cls, name).__doc__
                self.assertTrue(doc and len(doc) > 20, "%s.%s has no docstring" % (cls.__name__, name))
        import pydoc
        text = pydoc.render_doc(mpx.Session)
        for name in ("input", "colour", "target", "plan", "run", "search", "sweep", "export", "html", "svg", "dot",
                     "close"):
            self.assertIn(name, text)
        self.assertEqual(mpx.version(), mpx.__version__)
        self.assertIn("fp16", mpx.formats(low_only=True))
        self.assertNotIn("fp32", mpx.formats(low_only=True))
        self.assertEqual(mpx.metrics()[0], "rel_l2")


if __name__ == "__main__":
    unittest.main(verbosity=2)
