"""mpx: the precision explorer for neural-network models, in Python.

A thin layer over libmpx (the library under the mpx program; ctypes, NumPy
arrays in and out): the same engine, rules language, plans, runs and
writers as the program, so a notebook or a CI job gets the figures
`mpx` prints, bit for bit.

    import mpx
    s = mpx.Session("model.onnx")
    s.input("x", shape=(1, 3, 224, 224), random="normal", seed=42)
    s.colour("Conv", "green", when="macs >= 1M", otherwise="gray")
    r = s.run()
    r.report(sort="rel_l2", top=8)
    s.export("model_fp16.onnx")

Errors are mpx.Error, carrying mpx's message. See help(mpx.Session),
help(mpx.Plan), help(mpx.Run) and docs/python.md.
"""
from ._session import Error, Plan, Records, Run, SearchResult, Session, formats, metrics, version

__version__ = version()
__all__ = ["Error", "Session", "Plan", "Run", "Records", "SearchResult", "version", "formats", "metrics"]
