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
import concurrent.futures, math, os, sys, time, traceback
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops

from outerworld.tinygrad.export import export, ExportError, Export, DTYPE_NAMES, buffer_array, npy_dtype
from outerworld.tinygrad.importer import to_tinygrad, UopImportError

from outerworld import run, Error, Worker, BITS_DTYPES, bits_format, values


STATUSES = ("agree", "DISAGREE", "NaN as written", "refused", "uninitialized", "tinygrad failed")

# Why a realize was not compared: a closed set of stable names (Record.reason), so that runs can
# be counted and compared by reason whatever the messages say.
REASONS = {
  "export-unsupported-op": "the exporter has no outerworld form for a tinygrad op, arg or tag",
  "dtype": "a dtype outerworld has no equivalent of (tinygrad's image dtypes)",
  "const-range": "a constant a .uop integer arg cannot hold (a uint64 above 2^63-1)",
  "multi-device": "a tensor on several devices",
  "symbolic-shape": "outerworld refused a graph whose shapes hold a variable",
  "ow-rejected": "outerworld's verifier or interpreter refused the exported graph",
  "budget": "the interpreter ran out of its step or memory budget",
  "compiled-path-unsupported": "the compiled backend does not handle this graph (--backend interp does)",
  "uninitialized": "an output reads memory nothing wrote (Tensor.empty): tinygrad's values are whatever it held",
  "round-trip-error": "the exported text does not import back into tinygrad (a bug of the bridge)",
  "worker-error": "the ow worker could not be started, died or timed out",
  "ow-internal": "an internal error of ow (a bug of outerworld)",
  "oracle-error": "an exception in the oracle itself (a bug of the bridge)",
}
# Reasons that mean the oracle itself failed: a run with any of them is not a clean run.
FAILURE_REASONS = ("round-trip-error", "worker-error", "ow-internal", "oracle-error")


@dataclass
class Record:
  test: str
  index: int                 # the realize's number within its test
  status: str                # one of STATUSES
  detail: str = ""
  round_trip: bool | None = None   # None: not exported, so nothing to round-trip
  reason: str = ""           # a key of REASONS for "refused" and "uninitialized", else ""
  seconds: float = 0.0       # the time the oracle added to this realize (tinygrad's own excluded)

  def line(self) -> str:
    rt = {True: "", False: " [round trip NOT identical]", None: ""}[self.round_trip]
    why = f" [{self.reason}]" if self.reason and self.reason != "uninitialized" else ""
    return f"{self.test} realize {self.index}: {self.status}{why}{': ' + self.detail if self.detail else ''}{rt}"

  def oracle_failed(self) -> bool:
    """The oracle itself failed here: an error of its own, or a round trip that is not identical."""
    return self.reason in FAILURE_REASONS or self.round_trip is False

  def failed(self) -> bool:
    """A disagreement, or the oracle failing (which would hide one): what makes a run unclean."""
    return self.status == "DISAGREE" or self.oracle_failed()


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


def _terms(x) -> int:
  """How many terms a reduction over a size folds: a symbolic size at its bound value, else at
  its largest (more terms only widen the tolerance)."""
  try: return _bound_value(x)
  except SymbolicValue: return int(x.vmax)


def rounding_budget(root: UOp) -> int:
  k = 1
  for u in root.toposort():
    if u.op is Ops.REDUCE_AXIS: k += math.prod(_terms(u.src[0].shape[a]) for a in u.arg[1])
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


class SymbolicValue(Exception):
  """A size with a variable that is not bound to a value."""


def _bound_value(x) -> int:
  """A size, offset or pad width at the values its variables are bound to."""
  if isinstance(x, int): return x
  binds = {b: b.src[1] for b in x.toposort() if b.op is Ops.BIND}
  v = (x.substitute(binds) if binds else x).simplify()
  if v.op is not Ops.CONST: raise SymbolicValue(f"size {v.render() if hasattr(v, 'render') else v} has no bound value")
  return int(v.arg)


def _view(u: UOp) -> np.ndarray | None:
  """The values of a realized tensor's UOp, movement ops over a realized buffer, computed in
  numpy at the variables' bound values; None for anything else. Reading them this way runs no
  tinygrad kernel (tests count kernels), and works where Tensor.numpy() refuses: a symbolic
  shape (a[:, :vi] realized is a SHRINK of a buffer of the variable's largest size)."""
  if u.op is Ops.BUFFER:
    return buffer_array(u.realized) if u.realized is not None else None
  if u.op not in (Ops.RESHAPE, Ops.SHRINK, Ops.PERMUTE, Ops.EXPAND, Ops.FLIP, Ops.PAD): return None
  if (a := _view(u.src[0])) is None: return None
  if u.op is Ops.PERMUTE: return a.transpose(u.arg)
  if u.op is Ops.FLIP: return a[tuple(slice(None, None, -1 if f else None) for f in u.arg)]
  m = u.marg
  if u.op is Ops.RESHAPE: return a.reshape(tuple(_bound_value(x) for x in m))
  if u.op is Ops.EXPAND: return np.broadcast_to(a, tuple(_bound_value(x) for x in m))
  pairs = [(_bound_value(b), _bound_value(e)) for b, e in m]
  if u.op is Ops.SHRINK: return a[tuple(slice(b, e) for b, e in pairs)]
  return np.pad(a, pairs) if a.dtype.names is None else None  # PAD: a view's padding reads as 0


def tinygrad_array(t: Tensor) -> np.ndarray:
  """A realized tensor's values as ow gives them: bfloat16/fp8 as their bits, read from the buffer
  (Tensor.numpy() would cast them to float32 in another tinygrad kernel, which is then what is
  compared, and drop NaN payloads), and sizes with variables at their bound values."""
  if (a := _view(t.uop)) is not None: return np.ascontiguousarray(a)
  if DTYPE_NAMES.get(t.dtype.base) not in BITS_DTYPES: return t.numpy()
  if 0 in t.shape: return np.empty(t.shape, npy_dtype(t.dtype.base))
  return buffer_array(t._buffer()).reshape(t.shape)


def _reads_uninitialized(message: str, exp: Export) -> bool:
  """Poison at an output, or a read of a Tensor.empty buffer nothing writes: tinygrad's answer
  there is whatever the memory held, so it is not a disagreement."""
  if "uninitialized" in message: return True
  return "was given no data" in message and any(f"'{b}'" in message for b in exp.uninitialized)


_ERROR_KINDS = {"unsupported": "compiled-path-unsupported", "budget": "budget", "internal": "ow-internal",
                "died": "worker-error", "uninitialized": "uninitialized"}


def refusal_reason(e: BaseException, exp: Export | None = None) -> str:
  """The stable name (a key of REASONS) of why a realize could not be compared."""
  if isinstance(e, ExportError): return e.reason if e.reason in REASONS else "export-unsupported-op"
  if isinstance(e, UopImportError): return "round-trip-error"
  if isinstance(e, Error):
    if e.kind in _ERROR_KINDS: return _ERROR_KINDS[e.kind]
    if exp is not None and _reads_uninitialized(str(e), exp): return "uninitialized"
    if exp is not None and " DEFINE_VAR " in exp.text and "shape" in str(e): return "symbolic-shape"
    return "ow-rejected"
  if isinstance(e, OSError): return "worker-error"  # no ow binary, a broken pipe
  if isinstance(e, SymbolicValue): return "symbolic-shape"
  return "oracle-error"


def _describe(e: BaseException, reason: str) -> str:
  """A refusal's detail: the message, and for a bug of the oracle where it happened."""
  if isinstance(e, ExportError): return f"export: {e}"
  if isinstance(e, UopImportError): return f"round trip: {e}"
  if isinstance(e, Error): return f"outerworld: {_first_line(e)}"
  text = f"{type(e).__name__}: {_first_line(e)}"
  if reason == "oracle-error" and (tb := traceback.extract_tb(e.__traceback__)):
    # where in the bridge, and where it was raised if that is elsewhere (in tinygrad, numpy)
    ours = [f for f in tb if os.sep + "outerworld" + os.sep in f.filename]
    frames = [tb[-1]] + [f for f in ours[-1:] if f is not tb[-1]]
    text += " (at " + " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in frames) + ")"
  return text


@dataclass
class _Plan:
  """One realize being checked: what tinygrad is asked to realize and its export."""
  tensors: list
  sink: UOp
  exp: Export | None = None
  round_trip: bool | None = None


class Oracle:
  def __init__(self, backend: str = "interp", overlap: bool = False, max_memory: str | None = None):
    """overlap: send the graph to ow before tinygrad runs it, so outerworld computes (in its own
    process) while tinygrad schedules, compiles and runs; the snapshot is ow's input either way.
    max_memory: the memory ow may use per request ("4G"; default ow's, half of physical memory):
    its interpreter materializes views tinygrad never does (a 111x28 average pool of a 32x2x111x28
    tensor: a 2.6 GB EXPAND), so with several workers a smaller budget keeps the machine usable;
    a realize over it is refused with reason "budget"."""
    self.backend = backend
    self.overlap = overlap
    self.max_memory = max_memory
    self._worker = None
    self.records: list[Record] = []
    self.test = "<no test>"
    self.verbose = False
    self.seconds: dict[str, float] = {}  # time the oracle spent, by phase (profiling; "ow" may overlap tinygrad)
    self._busy = False
    self._count: dict[str, int] = {}
    self._pool = None

  def _record(self, status: str, detail: str = "", round_trip=None, reason: str = "") -> Record:
    self._count[self.test] = self._count.get(self.test, 0) + 1
    r = Record(self.test, self._count[self.test], status, detail, round_trip, reason)
    self.records.append(r)
    if self.verbose: print(r.line(), flush=True)
    return r

  def _refuse(self, e: BaseException, plan: _Plan | None = None) -> Record:
    reason = refusal_reason(e, plan.exp if plan else None)
    status = "uninitialized" if reason == "uninitialized" else "refused"
    return self._record(status, _describe(e, reason), plan.round_trip if plan else None, reason)

  @contextmanager
  def _timed(self, phase: str):
    start = time.perf_counter()
    try: yield
    finally: self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start

  def close(self):
    if self._pool is not None: self._pool.shutdown(wait=True)
    if self._worker is not None: self._worker.close()
    self._pool = self._worker = None

  def _ow(self, text: str, inputs: dict, **kw) -> dict:
    """One ow request: through the package's shared worker, or this oracle's own when it has
    serve options (a memory budget)."""
    if self.max_memory is None: return run(text, inputs, **kw)
    if self._worker is None: self._worker = Worker(args=["--max-memory", self.max_memory])
    return self._worker.run(text, inputs, **kw)

  def realize(self, original, this: Tensor, *lst: Tensor, **kw):
    if self._busy: return original(this, *lst, **kw)
    self._busy = True  # reading results back may realize again; those are not the user's realizes
    try: return self._check(original, this, lst, kw)
    finally: self._busy = False

  def _check(self, original, this, lst, kw):
    """tinygrad's realize, watched: whatever fails in the oracle becomes a refused record, and
    tinygrad's result or exception is what the caller gets."""
    start, first = time.perf_counter(), len(self.records)
    plan = self._prepare((this,) + lst)
    if plan is None: return original(this, *lst, **kw)
    pending = self._start_ow(plan.exp)
    tinygrad = time.perf_counter()
    try: result = original(this, *lst, **kw)
    except Exception as e:
      tinygrad = time.perf_counter() - tinygrad
      self._guarded(plan, self._tinygrad_failed, e, plan, pending)
      self._took(first, time.perf_counter() - start - tinygrad)
      raise
    tinygrad = time.perf_counter() - tinygrad
    self._guarded(plan, self._judge, plan, pending)
    self._took(first, time.perf_counter() - start - tinygrad)
    return result

  def _took(self, first: int, seconds: float):
    for r in self.records[first:]: r.seconds = round(seconds, 4)

  def _guarded(self, plan: _Plan, fn, *args):
    try: fn(*args)
    except Exception as e: self._refuse(e, plan)  # a bug of the oracle must not change the user's program

  def _prepare(self, tensors) -> _Plan | None:
    """The export and its round trip, taken before tinygrad runs (realize replaces the tensors'
    UOps and assigns overwrite buffers); None when there is nothing to check or it was refused."""
    plan = None
    try:
      tensors = [t for t in tensors if not t.uop.is_contiguous()]
      if not tensors: return None
      plan = _Plan(tensors, UOp.sink(*[t.uop for t in tensors]))
      with self._timed("export"): plan.exp = export(plan.sink)
      with self._timed("round trip"): plan.round_trip = to_tinygrad(plan.exp.text) is plan.sink
      return plan
    except Exception as e:
      self._refuse(e, plan)
      return None

  def _start_ow(self, exp: Export):
    """A function that returns ow's outputs (or raises its error); with overlap the request is
    already under way in a thread. The thread touches only the snapshot and the worker's pipe,
    never a tinygrad object."""
    if not self.overlap: return lambda: self._run(exp)
    if self._pool is None: self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ow-oracle")
    future = self._pool.submit(self._run, exp)
    def wait():
      with self._timed("ow wait"): return future.result()
    return wait

  def _tinygrad_failed(self, e: Exception, plan: _Plan, pending):
    """tinygrad itself raised (its expectedFailure tests do): record it with what outerworld
    makes of the same graph; the exception then goes on to the test."""
    try: pending(); ow = "outerworld runs it"
    except Exception as oe: ow = f"outerworld: {_first_line(oe)}"
    self._record("tinygrad failed", f"{type(e).__name__}: {_first_line(e)}; {ow}", plan.round_trip)

  def _run(self, exp: Export, error_bound: bool = False) -> dict:
    """outerworld's outputs; with error_bound (the interpreter only) also each output's bound and
    the origins of its invalid values (SEMANTICS S8.1)."""
    if not error_bound:
      with self._timed("ow"): return self._ow(exp.text, exp.inputs, backend=self.backend)
    with self._timed("ow error bound"): return self._ow(exp.text, exp.inputs, backend="interp", error_bound=True)

  def _judge(self, plan: _Plan, pending):
    exp, round_trip, tensors = plan.exp, plan.round_trip, plan.tensors
    try: ow_out = pending()
    except Error as e:
      msg = _first_line(e)
      if "used outside their scope" not in msg: return self._refuse(e, plan)
      # tinygrad's graph leaves a range free at an output, so it has no single value; yet
      # tinygrad returned one (it evaluates one binding: the vmap x.grad bug). That is a
      # disagreement about the answer, not a limit of outerworld.
      first = tinygrad_array(tensors[0]).reshape(-1)[0]
      return self._record("DISAGREE", f"tinygrad returned values (out0 first element {first!r}) for a graph "
                          f"outerworld rejects as ill-scoped: {msg}", round_trip)
    with self._timed("read"): tgs = [tinygrad_array(t) for t in tensors]
    status, detail = self._verdict(plan, tgs, ow_out)
    # The error bound only ever widens the tolerance (and names the node that made a NaN), and
    # costs ten times the plain run: asked for only when the plain rule finds a difference.
    if status != "agree" and self.backend == "interp":
      # without a bound (no rule for an op, or a graph with effects) the plain verdict stands, and says so
      try: status, detail = self._verdict(plan, tgs, self._run(exp, error_bound=True))
      except Error as e: detail += f" (without outerworld's error bound: {_first_line(e)})"
    self._record(status, detail, round_trip)

  def _verdict(self, plan: _Plan, tgs: list[np.ndarray], ow_out: dict) -> tuple[str, str]:
    """(status, detail) of tinygrad's outputs against ow's: agree, DISAGREE or NaN as written."""
    k, worst, bits_differ, verdicts = rounding_budget(plan.sink), 0.0, [], []
    for name, tg in zip(plan.exp.outputs, tgs):
      ow = ow_out[name]
      shaped = lambda a: a.reshape(tg.shape) if a is not None and a.size == tg.size else a
      with self._timed("compare"):
        origin = ow_out.get(name + ":invalid_origin")
        d, ratio, verdict = compare(name, tg, shaped(ow), k, shaped(ow_out.get(name + ":bound")), shaped(origin))
      if d: return "DISAGREE", d
      if verdict: verdicts.append(verdict)
      worst = max(worst, ratio)
      if ratio == 0 and (tg.dtype != ow.dtype or tg.tobytes() != ow.tobytes()): bits_differ.append(name)
    if verdicts:
      kind = "undefined conversion" if all("converted out of the integer's range" in v for v in verdicts) else "NaN as written"
      return kind, "; ".join(verdicts)
    # equal values may still differ in bits: a NaN's sign or payload, the sign of a zero
    how = ("bit-identical" if not bits_differ else f"equal values, bits differ in {', '.join(bits_differ)} (NaN payload or sign, or -0)") \
      if worst == 0 else f"within tolerance (worst {worst:.1%} of it)"
    return "agree", f"{len(tgs)} output(s), {how}"


def _first_line(e: BaseException) -> str:
  text = str(e).strip()
  return text.splitlines()[0] if text else "(no message)"


_active: list[Oracle] = []


@contextmanager
def oracle(backend: str = "interp", overlap: bool = False, max_memory: str | None = None):
  """Check every Tensor.realize inside the block; yields the Oracle with its .records."""
  o = Oracle(backend, overlap, max_memory)
  original = Tensor.realize
  def hooked(self, *lst, **kw): return o.realize(original, self, *lst, **kw)
  Tensor.realize = hooked  # runtime monkeypatch: tinygrad's files stay untouched
  _active.append(o)
  try: yield o
  finally:
    Tensor.realize = original
    _active.remove(o)
    o.close()


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


def run_file(path: str, backend: str = "interp", verbose: bool = True, max_memory: str | None = None):
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
  with oracle(backend, max_memory=max_memory) as o, _named_class_setups(suite, o):
    o.verbose = verbose
    result = Result()
    suite.run(result)
  for test, err in result.errors + result.failures:
    print(f"--- {type(test).__name__}.{test._testMethodName}:\n{err}", file=sys.stderr)
  for test, err in result.expectedFailures:  # say why, so an oracle bug cannot hide behind one
    print(f"--- {type(test).__name__}.{test._testMethodName} (expected failure): {err.strip().splitlines()[-1]}", file=sys.stderr)
  return o.records, outcomes


STATUSES = ("agree", "DISAGREE", "NaN as written", "undefined conversion", "refused", "uninitialized", "tinygrad failed")
def totals(records: list[Record]) -> dict:
  """The counts a run is judged by: realizes, each status, refusals by reason, round trips and
  failed (disagreements plus the oracle's own failures: the run is clean when it is 0)."""
  trips = [r.round_trip for r in records if r.round_trip is not None]
  reasons: dict[str, int] = {}
  for r in records:
    if r.status == "refused": reasons[r.reason] = reasons.get(r.reason, 0) + 1
  return {"realizes": len(records), **{s: sum(r.status == s for r in records) for s in STATUSES},
          "refused by reason": dict(sorted(reasons.items())), "round trips": len(trips), "round trips identical": sum(trips),
          "oracle failed": sum(r.oracle_failed() for r in records), "failed": sum(r.failed() for r in records)}


def totals_line(n: dict) -> str:
  """The last line of a summary (tests read it): the counts, refusals by reason."""
  why = ", ".join(f"{k} {v}" for k, v in n["refused by reason"].items())
  return (f"realizes checked {n['realizes']}, agreed {n['agree']}, disagreed {n['DISAGREE']}, refused {n['refused']}"
          f"{f' ({why})' if why else ''}, NaN as written {n['NaN as written']}, undefined conversion {n['undefined conversion']}, uninitialized {n['uninitialized']}, "
          f"tinygrad failed {n['tinygrad failed']}; round trips identical {n['round trips identical']}/{n['round trips']}")


def summary(records: list[Record], outcomes: dict[str, str]) -> str:
  rows = [("test", "outcome", "realizes", *STATUSES, "round trip")]
  tests = dict.fromkeys([r.test for r in records if r.test not in outcomes])
  for test, outcome in [(t, "(setup)") for t in tests] + list(outcomes.items()):
    rs = [r for r in records if r.test == test]
    trips = [r.round_trip for r in rs if r.round_trip is not None]
    rows.append((test, outcome, str(len(rs)), *(str(sum(r.status == s for r in rs)) for s in STATUSES),
                 f"{sum(trips)}/{len(trips)} identical"))
  return format_table(rows) + "\n" + totals_line(totals(records))


def summary_by_file(records: list, outcomes: dict[str, str], shown: int = 50) -> str:
  """A summary for many tests (pytest node ids, records as Records or dicts): one row per file,
  then every DISAGREE and the oracle's own failures (the first `shown` of each), then the totals."""
  records = [r if isinstance(r, Record) else Record(**r) for r in records]
  files: dict[str, list[Record]] = {}
  for r in records: files.setdefault(r.test.split("::")[0], []).append(r)
  for t in outcomes: files.setdefault(t.split("::")[0], [])
  rows = [("file", "tests", "realizes", *STATUSES, "round trip")]
  for f, rs in files.items():
    trips = [r.round_trip for r in rs if r.round_trip is not None]
    rows.append((f, str(sum(t.split("::")[0] == f for t in outcomes)), str(len(rs)),
                 *(str(sum(r.status == s for r in rs)) for s in STATUSES), f"{sum(trips)}/{len(trips)} identical"))
  lines = [format_table(rows)]
  for title, bad in (("DISAGREE", [r for r in records if r.status == "DISAGREE"]),
                     ("the oracle failed", [r for r in records if r.oracle_failed()])):
    if bad: lines += [f"{title}: {len(bad)}"] + [r.line() for r in bad[:shown]] + ([f"... and {len(bad) - shown} more"] if len(bad) > shown else [])
  return "\n".join(lines + [totals_line(totals(records))])


def format_table(rows: list[tuple]) -> str:
  widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
  return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def main(argv: list[str]) -> int:
  import argparse, json
  p = argparse.ArgumentParser(prog="python3 -m outerworld.tinygrad.oracle", description=__doc__.splitlines()[0])
  p.add_argument("testfile")
  p.add_argument("--backend", default="interp", help="outerworld backend: interp | tcc | cc | check")
  p.add_argument("--json", help="also write the records, test outcomes and totals to this file")
  p.add_argument("--max-memory", metavar="SIZE", help="memory ow may use per request (e.g. 4G; default: ow's)")
  args = p.parse_args(argv)
  records, outcomes = run_file(args.testfile, args.backend, max_memory=args.max_memory)
  print(summary(records, outcomes))
  n = totals(records)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"records": [r.__dict__ for r in records], "outcomes": outcomes, "totals": n}, f, indent=1)
  # non-zero when a realize disagrees or the oracle failed (a refusal of the bridge's own making,
  # a round trip that is not identical): CI can rely on it. The tests' outcomes are theirs.
  if n["failed"]:
    print(f"oracle: {n['failed']} realize(s) disagree or failed to be checked", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
