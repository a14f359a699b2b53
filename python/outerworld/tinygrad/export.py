"""tinygrad tensor-level UOp graph -> outerworld .uop text (reference/FORMAT.md).

The two IRs share op names; the differences this module bridges are:
- tinygrad's BUFFER has UNIQUE and DEVICE sources; outerworld's has a name. A buffer is named
  "b<unique>" and its device goes in the tag, so the way back can rebuild the same UOp.
- A tensor-level CONST sits on a DEVICE (and sometimes a UNIQUE); outerworld's CONST has no
  sources, so those also go in the tag: ("CPU",) or ("CPU", unique).
- Movement sizes are a VECTORIZE / vector CONST / VCONST in tinygrad; outerworld lists them as
  direct index sources (PAD and SHRINK interleave begin, end per axis).
"""
from __future__ import annotations
import math
from dataclasses import dataclass, field

import numpy as np
from tinygrad.dtype import dtypes, DType
from tinygrad.uop.ops import UOp, Ops, AxisType


class ExportError(Exception):
  """A tinygrad graph outerworld cannot express; the message names the tinygrad op."""


DTYPE_NAMES: dict[DType, str] = {
  dtypes.void: "void", dtypes.bool: "bool", dtypes.int32: "int32", dtypes.int64: "int64",
  dtypes.index: "index", dtypes.float16: "float16", dtypes.float32: "float32", dtypes.float64: "float64",
}

# Ops whose tinygrad form (sources and arg) is already outerworld's form.
_DIRECT = {
  "DEFINE_VAR", "BIND", "AFTER", "GROUP", "STORE", "END", "ASSIGN", "CONTIGUOUS", "CONTIGUOUS_BACKWARD",
  "DETACH", "REDUCE_AXIS", "REDUCE", "REDUCE_BACKWARD", "PERMUTE", "FLIP", "RANGE",
  "CAST", "BITCAST", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "NEG", "TRUNC",
  "ADD", "MUL", "SHL", "SHR", "IDIV", "MAX", "MOD", "CMPLT", "CMPNE", "CMPEQ",
  "XOR", "OR", "AND", "SUB", "FDIV", "POW", "WHERE", "MULACC",
}
_SIZED_MOVEMENT = {Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK}
# Consumed by the node that uses them (BUFFER, CONST, movement ops).
_FOLDED = {Ops.DEVICE, Ops.UNIQUE}


def format_arg(a) -> str:
  """A Python arg in the .uop arg syntax."""
  if a is None: return "None"
  if isinstance(a, bool): return "true" if a else "false"
  if isinstance(a, int): return str(a)
  if isinstance(a, float):
    if math.isnan(a): return "nan"
    return repr(a)  # shortest round-trip form; always has '.', 'e' or is inf
  if isinstance(a, str):
    out = a.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + "".join(c if 32 <= ord(c) < 127 or c in "\\\"" else f"\\x{ord(c):02x}" for c in out) + '"'
  if isinstance(a, Ops): return f"Ops.{a.name}"
  if isinstance(a, AxisType): return f"AxisType.{a.name}"
  if isinstance(a, tuple):
    if len(a) == 1: return f"({format_arg(a[0])},)"
    return "(" + ", ".join(format_arg(x) for x in a) + ")"
  raise ExportError(f"cannot write arg {a!r} of type {type(a).__name__}")


def _dtype_name(u: UOp) -> str:
  if (n := DTYPE_NAMES.get(u.dtype)) is None:
    raise ExportError(f"{u.op}: dtype {u.dtype} has no outerworld equivalent")
  return n


def size_elements(v: UOp) -> list[int | UOp]:
  """The elements of a tinygrad movement-size vector: ints or index UOps."""
  n = v.dtype.count
  if v.op is Ops.CONST: return [v.arg] * n
  if v.op is Ops.VCONST: return list(v.arg)
  if v.op is Ops.VECTORIZE: return [s.arg if s.op is Ops.CONST else s for s in v.src]
  raise ExportError(f"{v.op}: unexpected movement size (expected VECTORIZE or a vector CONST)")


@dataclass
class Export:
  text: str
  inputs: dict[str, np.ndarray]          # realized buffers' contents, shaped as first viewed
  outputs: list[str]                     # output names, in SINK order
  uninitialized: list[str] = field(default_factory=list)  # buffers never written (poison)
  cuts: list[str] = field(default_factory=list)  # inputs standing for subgraphs tinygrad computed


class _Writer:
  def __init__(self):
    self.lines: list[str] = []
    self.ref: dict[UOp, str] = {}
    self.index_consts: dict[int, str] = {}
    self.first_view: dict[str, tuple[int, ...]] = {}  # buffer name -> shape of its first RESHAPE

  def emit(self, op: str, dtype: str, srcs: list[str], arg=None, has_arg=False, tag=None) -> str:
    name = f"%{len(self.lines)}"
    line = f"{name} = {op} {dtype} ({', '.join(srcs)})"
    if has_arg: line += " " + format_arg(arg)
    if tag is not None: line += " tag=" + format_arg(tag)
    self.lines.append(line)
    return name

  def index_const(self, v: int) -> str:
    if v not in self.index_consts: self.index_consts[v] = self.emit("CONST", "index", [], v, True)
    return self.index_consts[v]

  def size_ref(self, x: int | UOp) -> str:
    return self.index_const(x) if isinstance(x, int) else self.ref[x]


def buffer_name(u: UOp) -> str:
  return f"b{u.src[0].arg}"


def _node(w: _Writer, u: UOp, root: UOp, out_names: list[str]) -> str | None:
  if u.op in _FOLDED: return None
  if u.tag is not None: raise ExportError(f"{u.op}: tinygrad tag {u.tag!r} is not exported")
  if u.op is Ops.BUFFER:
    if not (u.src[0].op is Ops.UNIQUE and u.src[1].op is Ops.DEVICE and isinstance(u.src[1].arg, str)):
      raise ExportError(f"BUFFER: expected (UNIQUE, DEVICE) sources on one device, got {[s.op for s in u.src]}")
    return w.emit("BUFFER", _dtype_name(u), [], (buffer_name(u), u.arg), True, tag=(u.src[1].arg,))
  if u.op in (Ops.VECTORIZE, Ops.VCONST) or u.dtype.count > 1:
    return None  # a movement size: its elements are written where it is used
  if u.op is Ops.CONST: return _const(w, u)
  if u.op in _SIZED_MOVEMENT:
    elems = [size_elements(v) for v in u.src[1:]]
    if u.op in (Ops.PAD, Ops.SHRINK): elems = [[x for pair in zip(*elems) for x in pair]]
    srcs = [w.ref[u.src[0]]] + [w.size_ref(x) for x in (elems[0] if elems else [])]
    name = w.emit(u.op.name, _dtype_name(u), srcs)
    if u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER:
      w.first_view.setdefault(buffer_name(u.src[0]), tuple(x if isinstance(x, int) else -1 for x in elems[0]))
    return name
  if u.op is Ops.COPY:
    # outerworld has one memory, so a copy between devices is the identity on values. It is
    # written as a CONTIGUOUS (a value-preserving op the interpreter runs) tagged with the
    # destination, which the importer turns back into the COPY.
    if len(u.src) != 2 or u.src[1].op is not Ops.DEVICE or not isinstance(u.src[1].arg, str) or u.arg is not None:
      raise ExportError(f"COPY: only a copy to one device is exported, got sources {[s.op for s in u.src]} arg {u.arg!r}")
    return w.emit("CONTIGUOUS", _dtype_name(u), [w.ref[u.src[0]]], tag=("COPY", u.src[1].arg))
  if u.op is Ops.ASSIGN and u.src[0].base.op is not Ops.BUFFER:
    # tinygrad's rangeify turns an assign to a non-buffer (`loss += x` on an unrealized loss)
    # into CONTIGUOUS(value); outerworld only assigns to buffers. The target rides along as
    # an AFTER dependency (a pure value: evaluating it changes nothing) so the importer can
    # rebuild the ASSIGN.
    value = w.emit("CONTIGUOUS", _dtype_name(u), [w.ref[u.src[1]]])
    return w.emit("AFTER", _dtype_name(u), [value, w.ref[u.src[0]]], tag=("ASSIGN",))
  if u.op is Ops.SINK:
    if u is not root: raise ExportError("SINK: a SINK inside the graph has no outerworld meaning")
    if u.arg is not None: raise ExportError(f"SINK: arg {u.arg!r} is not exported")
    return w.emit("SINK", "void", [w.ref[s] for s in u.src], tuple(out_names), True)
  if u.op.name in _DIRECT:
    if u.op is Ops.RANGE and not (len(u.arg) >= 2 and isinstance(u.arg[-1], AxisType)):
      raise ExportError(f"RANGE: arg {u.arg!r} is not (id, ..., AxisType)")
    has_arg = u.arg is not None
    return w.emit(u.op.name, _dtype_name(u), [w.ref[s] for s in u.src], u.arg, has_arg)
  raise ExportError(f"{u.op}: no outerworld equivalent for this tinygrad op")


def _const(w: _Writer, u: UOp) -> str:
  if not isinstance(u.arg, (bool, int, float)): raise ExportError(f"CONST: value {u.arg!r} has no outerworld form")
  ops = tuple(s.op for s in u.src)
  if ops == () and u.dtype is dtypes.index: return w.index_const(u.arg)
  if ops == (): tag = None
  elif ops == (Ops.DEVICE,): tag = (u.src[0].arg,)
  elif ops == (Ops.DEVICE, Ops.UNIQUE): tag = (u.src[0].arg, u.src[1].arg)
  else: raise ExportError(f"CONST: sources {ops} are not exported")
  if tag is not None and not isinstance(tag[0], str): raise ExportError(f"CONST: multi-device {tag[0]} is not exported")
  return w.emit("CONST", _dtype_name(u), [], u.arg, True, tag=tag)


def _roots(x) -> UOp:
  from tinygrad import Tensor
  items = x if isinstance(x, (list, tuple)) else [x]
  uops = [t.uop if isinstance(t, Tensor) else t for t in items]
  if len(uops) == 1 and uops[0].op is Ops.SINK: return uops[0]
  return UOp.sink(*uops)


_IMPURE = {Ops.RANGE, Ops.DEFINE_VAR, Ops.BIND, Ops.AFTER, Ops.STORE, Ops.END, Ops.ASSIGN}
_HANDLED = {"BUFFER", "CONST", "VCONST", "VECTORIZE", "COPY", "SINK", "DEVICE", "UNIQUE"} | _DIRECT | {o.name for o in _SIZED_MOVEMENT}


def local_problem(u: UOp) -> str | None:
  """Why this node alone cannot be exported (approximately what _node would refuse), or None."""
  if u.op.name not in _HANDLED: return f"{u.op}: no outerworld equivalent"
  if u.dtype.count > 1: return None if u.dtype.scalar() is dtypes.index else f"{u.op}: vector dtype {u.dtype}"
  return None if u.dtype in DTYPE_NAMES else f"{u.op}: dtype {u.dtype} has no outerworld equivalent"


def find_cuts(root: UOp) -> dict[UOp, str]:
  """The highest pure subgraphs that contain something outerworld cannot express (tinygrad's
  uint32 threefry behind Tensor.rand, say), each with the reason. A cut is a value of an
  exportable dtype and a concrete shape that depends on no range, variable, effect or
  uninitialized buffer, so computing it once in tinygrad and passing it in as an input does
  not change what the rest of the graph means."""
  problem: dict[UOp, str | None] = {}
  impure: dict[UOp, bool] = {}
  for u in root.toposort():
    problem[u] = local_problem(u) or next((problem[s] for s in u.src if problem[s]), None)
    impure[u] = u.op in _IMPURE or (u.op is Ops.BUFFER and u.realized is None) or any(impure[s] for s in u.src)
  cuts: dict[UOp, str] = {}
  def visit(u: UOp):
    if not problem[u] or u in cuts: return
    if (u.op is not Ops.SINK and local_problem(u) is None and u.dtype.count == 1 and u.dtype is not dtypes.void
        and not impure[u] and all(isinstance(d, int) for d in u.shape)):
      cuts[u] = problem[u]
      return
    for s in u.src: visit(s)
  visit(root)
  return cuts


def _toposort(root: UOp, leaves) -> list[UOp]:
  """tinygrad's order (depth first, sources in order), not entering the sources of leaves."""
  seen: dict[UOp, None] = {}
  stack = [(root, False)]
  while stack:
    u, done = stack.pop()
    if u in seen: continue
    if done or u in leaves: seen[u] = None; continue
    stack.append((u, True))
    stack.extend((s, False) for s in reversed(u.src))
  return list(seen)


def export(x, names: list[str] | None = None, cut=None) -> Export:
  """Export a tinygrad Tensor, UOp, or a list of them (as realize would schedule them together).

  cut: None, or a function computing a tinygrad UOp's value as a numpy array. Given it, the
  pure subgraphs outerworld cannot express (find_cuts) become input buffers "c0", "c1", ...
  holding that value; Export.cuts says what each replaced. That text is not the same tinygrad
  graph any more, so it does not round-trip to it."""
  root = _roots(x)
  out_names = names if names is not None else [f"out{i}" for i in range(len(root.src))]
  cuts = find_cuts(root) if cut is not None else {}
  w = _Writer()
  inputs: dict[str, np.ndarray] = {}
  cut_notes: list[str] = []
  for u in _toposort(root, cuts):
    if u in cuts:
      name = f"c{len(cut_notes)}"
      inputs[name] = np.asarray(cut(u)).reshape(u.shape)
      buf = w.emit("BUFFER", _dtype_name(u), [], (name, int(inputs[name].size)), True)
      w.ref[u] = w.emit("RESHAPE", _dtype_name(u), [buf] + [w.index_const(int(d)) for d in u.shape])
      w.first_view[name] = tuple(int(d) for d in u.shape)
      cut_notes.append(f"{name} = tinygrad's value of a {u.op.name} {u.shape} ({cuts[u]})")
      continue
    if (r := _node(w, u, root, out_names)) is not None: w.ref[u] = r
  uninit = []
  for u in _toposort(root, cuts):
    if u.op is not Ops.BUFFER or u in cuts: continue
    name = buffer_name(u)
    if u.realized is None: uninit.append(name); continue
    data = np.array(u.realized.numpy(), copy=True)
    shape = w.first_view.get(name)
    inputs[name] = data.reshape(shape) if shape is not None and -1 not in shape else data
  return Export("\n".join(w.lines) + "\n", inputs, out_names, uninit, cut_notes)
