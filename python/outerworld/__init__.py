"""outerworld from Python: run and check tinygrad-style UOp graphs (.uop text) on numpy arrays.

    import outerworld
    graph = outerworld.load("reference/cases/scan_with_assign.uop")
    outs = outerworld.run(graph, {"vec": vec, "mats": mats}, backend="tcc")

Calls go to a persistent `ow serve` worker (outerworld.Worker), which keeps compiled graphs:
the module-level run and check share one, started on first use. bfloat16 and fp8 arrays travel
as their bits (BITS_DTYPES); values(a) reads them as float32.
"""
import atexit
import os
import threading

from .worker import BITS_DTYPES, CheckReport, Error, Worker, WorkerDied, bits_format, find_ow, values

__all__ = ["Worker", "Error", "WorkerDied", "CheckReport", "Graph", "load", "run", "check", "find_ow",
           "values", "bits_format", "BITS_DTYPES"]


class Graph(str):
    """A graph's .uop text that remembers the file it came from, so messages name that file."""

    def __new__(cls, text, path=None):
        g = super().__new__(cls, text)
        g.path = os.fspath(path) if path is not None else None
        return g


def load(path):
    """The .uop file's text (a Graph: a str with .path)."""
    with open(path, encoding="utf-8") as f:
        return Graph(f.read(), path)


_default = None
_default_lock = threading.Lock()


def default_worker():
    """The worker shared by the module-level run and check, started on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Worker()
            atexit.register(_default.close)
        return _default


def run(graph, inputs=None, backend="interp", flat_inputs=False, error_bound=False):
    """Worker.run on the default worker."""
    return default_worker().run(graph, inputs, backend=backend, flat_inputs=flat_inputs, error_bound=error_bound)


def check(graph, inputs=None, compiler="tcc", flat_inputs=False):
    """Worker.check on the default worker."""
    return default_worker().check(graph, inputs, compiler=compiler, flat_inputs=flat_inputs)
