#!/usr/bin/env python3
"""tinygrad side of `ow bench --tinygrad`: the same graph, the same inputs, run by tinygrad.

Run by `ow bench` once per case (a benchmark, not a test):

    bench_tinygrad.py --kind CASE.uop --dir DIR [--repeat N] [--out OUT.npy]

CASE.uop is imported into tinygrad UOps (python/outerworld/tinygrad/importer.py); every BUFFER
gets the data of DIR/<buffer name>.npy, as `ow bench` wrote it. Timed in-process with
time.perf_counter, imports excluded, tinygrad's compiled-kernel disk cache off (CACHELEVEL=0, set
by the caller), on its CPU device (clang):
  first   build the tinygrad graph from the text + realize every output + copy the first one
          out: tinygrad's scheduling, code generation, compiles and the run;
  steady  the same again, N times (kernels are in tinygrad's in-memory cache by then: what is left
          is its Python scheduling and the runs); median and minimum.
The first output is saved to OUT.npy for `ow bench` to compare with the interpreter's.

stdout, one fact a line (`ow bench` parses the OW_BENCH_RESULT line, echoes the others):
    tinygrad: <where it was imported from>
    OW_BENCH_RESULT median_s=<float> min_s=<float> first_s=<float> repeat=<N>
A graph tinygrad cannot import or run exits 3 with the reason on stderr.
"""
import argparse
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
_BUFFER = re.compile(r'(= BUFFER [a-z0-9]+ \(\) \(")([^"]*)(")')
_FIRST_UNIQUE = 1 << 40  # far above the uniques tinygrad hands out itself


def numbered(text: str) -> tuple[str, dict[int, str]]:
  """The text with buffer k renamed b<_FIRST_UNIQUE + k> (the importer keeps such a name as the
  BUFFER's UNIQUE, so each tinygrad buffer can be told by its outerworld name)."""
  names: dict[int, str] = {}

  def rename(m):
    k = _FIRST_UNIQUE + len(names)
    names[k] = m.group(2)
    return f"{m.group(1)}b{k}{m.group(3)}"
  return _BUFFER.sub(rename, text), names


def run_once(text: str, names: dict[int, str], inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
  from tinygrad import Tensor
  from tinygrad.device import Buffer
  from tinygrad.uop.ops import Ops, buffers
  from outerworld.tinygrad.importer import to_tinygrad
  root = to_tinygrad(text, "CPU")
  for u in root.toposort():
    if u.op is Ops.BUFFER and u not in buffers:
      b = Buffer("CPU", u.arg, u.dtype).allocate()
      data = inputs.get(names[u.src[0].arg])
      if data is not None: b.copyin(memoryview(np.ascontiguousarray(data).reshape(-1)))
      buffers[u] = b
  outs = [Tensor(s) for s in root.src]
  Tensor.realize(*outs)
  return [o.numpy() for o in outs]


def main() -> int:
  ap = argparse.ArgumentParser()
  ap.add_argument("--kind", required=True, help="the .uop file")
  ap.add_argument("--dir", required=True, help="directory of the inputs, <buffer name>.npy")
  ap.add_argument("--repeat", type=int, default=10)
  ap.add_argument("--out", default="")
  a = ap.parse_args()
  try:
    import tinygrad
  except ImportError as e:
    print(f"tinygrad is not importable: {e}", file=sys.stderr)
    return 3
  print(f"tinygrad: {Path(tinygrad.__file__).parent}")
  text, names = numbered(Path(a.kind).read_text())
  inputs = {n: np.load(Path(a.dir) / f"{n}.npy") for n in names.values() if (Path(a.dir) / f"{n}.npy").exists()}
  try:
    t0 = time.perf_counter()
    outs = run_once(text, names, inputs)
    first = time.perf_counter() - t0
    times = []
    for _ in range(a.repeat):
      t0 = time.perf_counter()
      run_once(text, names, inputs)
      times.append(time.perf_counter() - t0)
  except Exception as e:  # tinygrad's own errors: a reason, not a traceback
    print(f"tinygrad failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}", file=sys.stderr)
    return 3
  if a.out: np.save(a.out, outs[0])
  print(f"OW_BENCH_RESULT median_s={statistics.median(times):.9f} min_s={min(times):.9f} first_s={first:.9f} repeat={a.repeat}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
