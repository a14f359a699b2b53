#!/usr/bin/python3
"""Per-call overhead of outerworld from Python: Worker.run (one persistent `ow serve`, the graph
compiled once) against a fresh `ow run` process per call, side by side in one run.

  PYTHONPATH=python /usr/bin/python3 tools/bench/bench_python.py [--calls N] [--backend interp|tcc|cc]

The graph is the bundled scan_with_assign (3 steps of a 10x10 matrix-vector product): small
enough that what is measured is the per-call cost (process start, parse, lowering, compile,
.npy transfer), not the arithmetic. Times are medians over N calls.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import outerworld  # noqa: E402

CASE = ROOT / "reference" / "cases" / "scan_with_assign.uop"
DATA = ROOT / "reference" / "expected" / "scan_with_assign"


def median_seconds(call, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--backends", default="interp,tcc,cc")
    args = ap.parse_args()
    graph = outerworld.load(CASE)
    inputs = {n: np.load(DATA / f"in_{n}.npy") for n in ["vec", "mats"]}
    with outerworld.Worker() as w, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.npy"
        print(f"scan_with_assign, median of {args.calls} calls; ow = {w.ow}")
        print(f"{'backend':8} {'Worker.run':>12} {'ow run process':>16} {'ratio':>8}")
        for backend in args.backends.split(","):
            cmd = [w.ow, "run", str(CASE), "--backend", backend, "--in", f"vec={DATA / 'in_vec.npy'}",
                   "--in", f"mats={DATA / 'in_mats.npy'}", "--out", f"out={out}"]
            w.run(graph, inputs, backend=backend)  # the first call compiles; the rest are served from the cache
            served = median_seconds(lambda: w.run(graph, inputs, backend=backend), args.calls)
            fresh = median_seconds(lambda: (subprocess.run(cmd, check=True), np.load(out)), max(3, args.calls // 5 if backend == "cc" else args.calls))
            print(f"{backend:8} {served * 1e6:10.0f} us {fresh * 1e6:14.0f} us {fresh / served:7.0f}x")
        print(f"worker stats: {w.stats()}")


if __name__ == "__main__":
    main()
