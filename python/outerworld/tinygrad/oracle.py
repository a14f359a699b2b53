"""outerworld as an oracle for tinygrad: check every realize against outerworld's interpreter.

    with oracle() as o:
      ...tinygrad code...
    print(o.records)

    python3 -m outerworld.tinygrad.oracle TESTFILE.py   # a unittest file under the oracle

Each realize is exported *before* tinygrad runs it (realize replaces the tensors' UOps and
assigns overwrite buffers, so the graph and the inputs must be captured first), then tinygrad
computes, then outerworld evaluates the same graph on the snapshot and the outputs are compared.
"""
from __future__ import annotations
import math, sys
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops

from outerworld.tinygrad.export import export, ExportError, Export, DTYPE_NAMES, buffer_array, npy_dtype
from outerworld.tinygrad.importer import to_tinygrad

from outerworld import run, Error, BITS_DTYPES, bits_format, values


@dataclass
class Record:
  test: str
  index: int                 # the realize's number within its test
  status: str                # one of STATUSES
  detail: str = ""
  round_trip: bool | None = None   # None: not exported, so nothing to round-trip

  def line(self) -> str:
    rt = {True: "", False: " [round trip NOT identical]", None: ""}[self.round_trip]
    return f"{self.test} realize {self.index}: {self.status}{': ' + self.detail if self.detail else ''}{rt}"


# --- tolerance -------------------------------------------------------------------------------
# Both sides round every float op once, but tinygrad's kernels may reassociate sums (unrolled
# and upcast accumulators), contract a*b+c into one FMA (clang's default -ffp-contract=on), and
# compute exp2/log2/sin with their own polynomials, where outerworld folds sequentially and
# calls the C library. A sum of n terms in any order is within (n-1)*u*sum|x_i| of the exact
# sum (u = unit roundoff), so two orders differ by at most 2*(n-1)*u*sum|x_i|. We bound the
# number of roundings on any path by K = the terms folded by every reduction in the graph plus
# the number of ALU ops, and stand in for sum|x_i| with |value| + the output's largest
# magnitude. Integer and bool results must match exactly.
# u is half the format's epsilon (2^-mantissa bits): float64 eps 2^-52, float32 2^-23, float16
# 2^-10, bfloat16 2^-7, fp8e4m3 2^-3, fp8e5m2 2^-2. Every rounding of a narrow float loses that
# much, so the same K allows a float16 result 2^13 times the relative error of a float32 one,
# bfloat16 2^16 times, fp8e4m3 2^20 and fp8e5m2 2^21: each compared in its own precision.
_UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8,
                  "fp8e4m3": 2.0 ** -4, "fp8e5m2": 2.0 ** -3}


def rounding_budget(root: UOp) -> int:
  k = 1
  for u in root.toposort():
    if u.op is Ops.REDUCE_AXIS: k += math.prod(int(u.src[0].shape[a]) for a in u.arg[1])
    elif u.op in (Ops.REDUCE, Ops.END): k += math.prod(int(r.src[0].vmax) for r in u.src[1:] if r.op is Ops.RANGE)
    elif u.op.name in ("ADD", "MUL", "SUB", "FDIV", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "POW", "MAX"): k += 1
  return k


def _format(a: np.ndarray) -> str:
  return bits_format(a) or a.dtype.name


def _element(a: np.ndarray, idx: tuple) -> str:
  """One element for a message: a bfloat16/fp8 one as its value and its bits."""
  fmt = bits_format(a)
  if fmt is None: return repr(a[idx])
  bits = int(a[fmt][idx])
  return f"{float(values(a)[idx])!r} ({fmt} 0x{bits:0{2 * a.dtype.itemsize}x})"


def compare(name: str, tg: np.ndarray, ow: np.ndarray, k: int, bound: np.ndarray | None = None,
            origin: np.ndarray | None = None) -> tuple[str | None, float, str | None]:
  """(None if the outputs agree, else the first differing element described; the largest
  |difference| / tolerance seen, 0 when bit-identical; a verdict of an invalid operation as written, or None).
  bfloat16/fp8 arrays (their bits, as ow returns them) are compared by value, in their format's
  precision. With ow's error bound (SEMANTICS S8.1: |ow - exact| <= bound for any order of
  rounding, so any legal evaluation is within 2*bound of ow) the tolerance is the larger of the
  two. Where ow's graph did something invalid (origin >= 0: a NaN made of non-NaN operands, a
  float converted out of an integer's range) a differing element is that verdict, not a
  disagreement.""" 
  if tg.shape != ow.shape: return f"{name}: shape tinygrad {tg.shape} vs outerworld {ow.shape}", math.inf, None
  u = _UNIT_ROUNDOFF.get(_format(ow))
  shown = (tg, ow)
  tg, ow = values(tg), values(ow)
  if u is None:
    bad, tol, why = tg != ow, None, "exact (integer/bool dtype)"
    worst = 0.0 if not bad.any() else math.inf
    if bound is not None and bound.shape == bad.shape:  # an integer computed from floats may be off by its bound
      with np.errstate(invalid="ignore"):
        bad = bad & ~(np.abs(tg.astype(np.float64) - ow) <= bound)
      worst = 0.0 if not bad.any() else math.inf
  else:
    finite = np.abs(ow[np.isfinite(ow)])
    scale = float(finite.max()) if finite.size else 0.0  # an inf must not widen the tolerance
    same = (tg == ow) | (np.isnan(tg) & np.isnan(ow))
    with np.errstate(invalid="ignore"):  # widening a signalling NaN (bfloat16 0x7f81 is one) raises "invalid"
      tol = 2 * k * u * (np.abs(ow.astype(np.float64)) + scale)
      if bound is not None and bound.shape == tol.shape:
        tol = np.fmax(tol, 2 * bound * (1 + 2.0 ** -20))  # fmax: a NaN bound (inf - inf) leaves the old rule
      diff = np.where(same, 0.0, np.abs(tg.astype(np.float64) - ow))
      bad = ~same & ~(diff <= tol)
      ratio = np.where(same, 0.0, diff / np.maximum(tol, np.finfo(np.float64).tiny))
    worst = float(ratio.max()) if ratio.size else 0.0
    why = f"2*K*u*(|x|+max|out|), K={k} roundings, u=2^{int(math.log2(u))} ({_format(shown[1])})" + \
      (", or twice outerworld's error bound" if bound is not None else "")
  verdict = None
  if origin is not None and origin.shape == bad.shape:
    # integers: a float converted out of range; floats: a NaN made of non-NaN operands
    made = bad & (origin >= 0) & (True if u is None else np.isnan(ow))
    if made.any():
      at = tuple(int(i) for i in np.argwhere(made)[0])
      node = f"node %{int(origin[at])} (as ow print numbers the exported graph)"
      verdict = (f"{name}{list(at)}: a float converted out of the integer's range (or a NaN) at {node}, which C leaves "
                 f"undefined: outerworld saturates to {_element(shown[1], at)}, tinygrad gives {_element(shown[0], at)}") if u is None else \
                (f"{name}{list(at)}: outerworld NaN made at {node} of operands that were not NaN (inf*0, inf-inf, 0/0, ...), "
                 f"tinygrad {_element(shown[0], at)}: a rewrite exact in real numbers may remove that NaN")
      bad = bad & ~made
  if u is None: worst = 0.0 if not bad.any() else math.inf
  if not bad.any(): return None, worst, verdict
  idx = tuple(int(i) for i in np.argwhere(bad)[0])
  t = f", tolerance {float(tol[idx]):.3g} ({why})" if tol is not None else f" ({why})"
  return f"{name}{list(idx)}: tinygrad {_element(shown[0], idx)} vs outerworld {_element(shown[1], idx)}{t}", worst, verdict


def tinygrad_array(t: Tensor) -> np.ndarray:
  """A realized tensor's values as ow gives them: bfloat16/fp8 as their bits, read from the buffer
  (Tensor.numpy() would cast them to float32 in another tinygrad kernel, which is then what is
  compared, and drop NaN payloads)."""
  if DTYPE_NAMES.get(t.dtype.base) not in BITS_DTYPES: return t.numpy()
  if 0 in t.shape: return np.empty(t.shape, npy_dtype(t.dtype.base))
  return buffer_array(t._buffer()).reshape(t.shape)


def _reads_uninitialized(message: str, exp: Export) -> bool:
  """Poison at an output, or a read of a Tensor.empty buffer nothing writes: tinygrad's answer
  there is whatever the memory held, so it is not a disagreement."""
  if "uninitialized" in message: return True
  return "was given no data" in message and any(f"'{b}'" in message for b in exp.uninitialized)


class Oracle:
  def __init__(self, backend: str = "interp"):
    self.backend = backend
    self.records: list[Record] = []
    self.test = "<no test>"
    self.verbose = False
    self._busy = False
    self._count: dict[str, int] = {}

  def _record(self, status: str, detail: str = "", round_trip=None) -> Record:
    self._count[self.test] = self._count.get(self.test, 0) + 1
    r = Record(self.test, self._count[self.test], status, detail, round_trip)
    self.records.append(r)
    if self.verbose: print(r.line(), flush=True)
    return r

  def realize(self, original, this: Tensor, *lst: Tensor, **kw):
    tensors = [t for t in (this,) + lst if not t.uop.is_contiguous()]
    if self._busy or not tensors: return original(this, *lst, **kw)
    self._busy = True  # reading results back realizes again; those are not the user's realizes
    try: return self._check(original, this, lst, kw, tensors)
    finally: self._busy = False

  def _check(self, original, this, lst, kw, tensors):
    sink = UOp.sink(*[t.uop for t in tensors])
    try: exp, round_trip = self._export(sink)
    except ExportError as e:
      self._record("refused", f"export: {e}")
      return original(this, *lst, **kw)
    try: result = original(this, *lst, **kw)
    except Exception as e:
      self._tinygrad_failed(e, exp, round_trip)
      raise
    try: self._judge(exp, round_trip, sink, tensors)
    except Exception as e:  # a bug of the oracle must not change the user's program
      self._record("refused", f"oracle error: {type(e).__name__}: {e}", round_trip)
    return result

  def _export(self, sink: UOp) -> tuple[Export, bool]:
    """The export and whether it round-trips to the very same tinygrad graph."""
    exp = export(sink)
    return exp, to_tinygrad(exp.text) is sink

  def _tinygrad_failed(self, e: Exception, exp: Export, round_trip):
    """tinygrad itself raised (its expectedFailure tests do): record it with what outerworld
    makes of the same graph; the exception then goes on to the test."""
    try: run(exp.text, exp.inputs, backend=self.backend); ow = "outerworld runs it"
    except Error as oe: ow = f"outerworld: {_first_line(oe)}"
    self._record("tinygrad failed", f"{type(e).__name__}: {_first_line(e)}; {ow}", round_trip)

  def _run(self, exp: Export) -> dict:
    """outerworld's outputs, with error bounds where the interpreter has them (a graph with
    effects has none yet: then without)."""
    if self.backend == "interp":
      try: return run(exp.text, exp.inputs, backend="interp", error_bound=True)
      except Error as e:
        if not str(e).startswith("error bound: no rule"): raise
    return run(exp.text, exp.inputs, backend=self.backend)

  def _judge(self, exp: Export, round_trip, sink: UOp, tensors: list[Tensor]):
    try: ow_out = self._run(exp)
    except Error as e:
      msg = _first_line(e)
      if "used outside their scope" in msg:
        # tinygrad's graph leaves a range free at an output, so it has no single value; yet
        # tinygrad returned one (it evaluates one binding: the vmap x.grad bug). That is a
        # disagreement about the answer, not a limit of outerworld.
        first = tensors[0].numpy().reshape(-1)[0]
        self._record("DISAGREE", f"tinygrad returned values (out0 first element {first!r}) for a graph "
                     f"outerworld rejects as ill-scoped: {msg}", round_trip)
      else:
        self._record("uninitialized" if _reads_uninitialized(str(e), exp) else "refused", f"outerworld: {msg}", round_trip)
      return
    k, worst, bits_differ, verdicts = rounding_budget(sink), 0.0, [], []
    for name, t in zip(exp.outputs, tensors):
      tg, ow = tinygrad_array(t), ow_out[name]
      shaped = lambda a: a.reshape(tg.shape) if a is not None and a.size == tg.size else a
      d, ratio, verdict = compare(name, tg, shaped(ow), k, shaped(ow_out.get(name + ":bound")), shaped(ow_out.get(name + ":invalid_origin")))
      if d: return self._record("DISAGREE", d, round_trip)
      if verdict: verdicts.append(verdict)
      worst = max(worst, ratio)
      if ratio == 0 and (tg.dtype != ow.dtype or tg.tobytes() != ow.tobytes()): bits_differ.append(name)
    # equal values may still differ in bits: a NaN's sign or payload, the sign of a zero
    how = ("bit-identical" if not bits_differ else f"equal values, bits differ in {', '.join(bits_differ)} (NaN payload or sign, or -0)") \
      if worst == 0 else f"within tolerance (worst {worst:.1%} of it)"
    if verdicts:
      kind = "undefined conversion" if all("converted out of the integer's range" in v for v in verdicts) else "NaN as written"
      return self._record(kind, "; ".join(verdicts), round_trip)
    self._record("agree", f"{len(tensors)} output(s), {how}", round_trip)


def _first_line(e: Exception) -> str:
  text = str(e).strip()
  return text.splitlines()[0] if text else "(no message)"


_active: list[Oracle] = []


@contextmanager
def oracle(backend: str = "interp"):
  """Check every Tensor.realize inside the block; yields the Oracle with its .records."""
  o = Oracle(backend)
  original = Tensor.realize
  def hooked(self, *lst, **kw): return o.realize(original, self, *lst, **kw)
  Tensor.realize = hooked  # runtime monkeypatch: tinygrad's files stay untouched
  _active.append(o)
  try: yield o
  finally:
    Tensor.realize = original
    _active.remove(o)


# --- the runner: a unittest file under the oracle --------------------------------------------

def _load_tests(path: str):
  import importlib.util, os, unittest
  sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
  spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return unittest.defaultTestLoader.loadTestsFromModule(module)


def _tests(suite):
  for t in suite:
    if hasattr(t, "_testMethodName"): yield t
    else: yield from _tests(t)


@contextmanager
def _named_class_setups(suite, o: Oracle):
  """Realizes in setUpClass (TestOuterworldRange builds its data there) are named after it."""
  saved = {}
  for cls in {type(t) for t in _tests(suite)}:
    if "setUpClass" not in vars(cls): continue
    saved[cls] = vars(cls)["setUpClass"]
    def setup(c, _orig=saved[cls].__func__):
      o.test = f"{c.__name__}.setUpClass"
      _orig(c)
    cls.setUpClass = classmethod(setup)
  try: yield
  finally:
    for cls, orig in saved.items(): cls.setUpClass = orig


def run_file(path: str, backend: str = "interp", verbose: bool = True):
  """Run a unittest file under the oracle; returns (records, {test: outcome})."""
  import unittest
  outcomes: dict[str, str] = {}

  class Result(unittest.TestResult):
    def stopTest(self, test):
      super().stopTest(test)
      o.test = "<between tests>"
    def startTest(self, test):
      super().startTest(test)
      o.test = f"{type(test).__name__}.{test._testMethodName}"
      outcomes[o.test] = "ok"
    def addFailure(self, test, err): super().addFailure(test, err); outcomes[o.test] = "FAIL"
    def addError(self, test, err): super().addError(test, err); outcomes[o.test] = "ERROR"
    def addSkip(self, test, reason): super().addSkip(test, reason); outcomes[o.test] = "skipped"
    def addExpectedFailure(self, test, err): super().addExpectedFailure(test, err); outcomes[o.test] = "expected failure"
    def addUnexpectedSuccess(self, test): super().addUnexpectedSuccess(test); outcomes[o.test] = "unexpected success"

  suite = _load_tests(path)
  with oracle(backend) as o, _named_class_setups(suite, o):
    o.verbose = verbose
    result = Result()
    suite.run(result)
  for test, err in result.errors + result.failures:
    print(f"--- {type(test).__name__}.{test._testMethodName}:\n{err}", file=sys.stderr)
  for test, err in result.expectedFailures:  # say why, so an oracle bug cannot hide behind one
    print(f"--- {type(test).__name__}.{test._testMethodName} (expected failure): {err.strip().splitlines()[-1]}", file=sys.stderr)
  return o.records, outcomes


STATUSES = ("agree", "DISAGREE", "NaN as written", "undefined conversion", "refused", "uninitialized", "tinygrad failed")


def summary(records: list[Record], outcomes: dict[str, str]) -> str:
  rows = [("test", "outcome", "realizes", *STATUSES, "round trip")]
  tests = dict.fromkeys([r.test for r in records if r.test not in outcomes])
  for test, outcome in [(t, "(setup)") for t in tests] + list(outcomes.items()):
    rs = [r for r in records if r.test == test]
    trips = [r.round_trip for r in rs if r.round_trip is not None]
    rows.append((test, outcome, str(len(rs)), *(str(sum(r.status == s for r in rs)) for s in STATUSES),
                 f"{sum(trips)}/{len(trips)} identical"))
  widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
  table = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)
  trips = [r.round_trip for r in records if r.round_trip is not None]
  n = {s: sum(r.status == s for r in records) for s in STATUSES}
  last = (f"realizes checked {len(records)}, agreed {n['agree']}, disagreed {n['DISAGREE']}, refused {n['refused']}, "
          f"uninitialized {n['uninitialized']}, tinygrad failed {n['tinygrad failed']}; round trips identical {sum(trips)}/{len(trips)}")
  return table + "\n" + last


def main(argv: list[str]) -> int:
  import argparse, json
  p = argparse.ArgumentParser(prog="python3 -m outerworld.tinygrad.oracle", description=__doc__.splitlines()[0])
  p.add_argument("testfile")
  p.add_argument("--backend", default="interp", help="outerworld backend: interp | tcc | cc | check")
  p.add_argument("--json", help="also write the records and test outcomes to this file")
  args = p.parse_args(argv)
  records, outcomes = run_file(args.testfile, args.backend)
  print(summary(records, outcomes))
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"records": [r.__dict__ for r in records], "outcomes": outcomes}, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
