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
from tinygrad.dtype import dtypes, DType, _to_np_dtype
from tinygrad.uop.ops import UOp, Ops, AxisType

from outerworld.worker import BITS_DTYPES


class ExportError(Exception):
  """A tinygrad graph outerworld cannot express; the message names the tinygrad op. reason is a
  stable name of the limit (the oracle counts refusals by it): "export-unsupported-op", "dtype",
  "const-range" or "multi-device"."""

  def __init__(self, message: str, reason: str = "export-unsupported-op"):
    super().__init__(message)
    self.reason = reason


DTYPE_NAMES: dict[DType, str] = {
  dtypes.void: "void", dtypes.bool: "bool", dtypes.index: "index",
  dtypes.int8: "int8", dtypes.int16: "int16", dtypes.int32: "int32", dtypes.int64: "int64",
  dtypes.uint8: "uint8", dtypes.uint16: "uint16", dtypes.uint32: "uint32", dtypes.uint64: "uint64",
  dtypes.fp8e4m3: "fp8e4m3", dtypes.fp8e5m2: "fp8e5m2", dtypes.float16: "float16", dtypes.bfloat16: "bfloat16",
  dtypes.float32: "float32", dtypes.float64: "float64",
}
# The integer args a CONST of each integer dtype can hold (src/uop/verify.cpp check_const): a
# signed one its range; an unsigned one holds its arg modulo 2^bits, written unsigned or as two's
# complement, so from -2^(bits-1) (tinygrad writes uint32 2^32-1 as -1) to 2^bits-1; any dtype's
# arg is a 64-bit signed integer in the text. tinygrad allows any Python int.
_CONST_RANGE = {dtypes.int8: (-2**7, 2**7 - 1), dtypes.int16: (-2**15, 2**15 - 1), dtypes.int32: (-2**31, 2**31 - 1),
                dtypes.int64: (-2**63, 2**63 - 1), dtypes.index: (-2**63, 2**63 - 1),
                dtypes.uint8: (-2**7, 2**8 - 1), dtypes.uint16: (-2**15, 2**16 - 1), dtypes.uint32: (-2**31, 2**32 - 1),
                dtypes.uint64: (-2**63, 2**63 - 1)}

# Ops whose tinygrad form (sources and arg) is already outerworld's form.
_DIRECT = {
  "DEFINE_VAR", "BIND", "AFTER", "GROUP", "STORE", "END", "ASSIGN", "CONTIGUOUS", "CONTIGUOUS_BACKWARD",
  "DETACH", "REDUCE_AXIS", "REDUCE", "REDUCE_BACKWARD", "PERMUTE", "FLIP", "RANGE",
  "CAST", "BITCAST", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "NEG", "TRUNC",
  "ADD", "MUL", "SHL", "SHR", "IDIV", "MAX", "MOD", "CMPLT", "CMPNE", "CMPEQ",
  "XOR", "OR", "AND", "THREEFRY", "SUB", "FDIV", "POW", "WHERE", "MULACC",
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
    raise ExportError(f"{u.op}: dtype {u.dtype} has no outerworld equivalent", "dtype")
  return n


def npy_dtype(dt: DType) -> np.dtype:
  """How a buffer of dtype dt travels to and from ow: numpy's dtype, or for bfloat16 and the fp8s
  (which numpy lacks; tinygrad's _to_np_dtype gives float32, a different memory layout) their bits."""
  name = DTYPE_NAMES.get(dt)
  return BITS_DTYPES[name] if name in BITS_DTYPES else np.dtype(_to_np_dtype(dt))


def buffer_array(buf) -> np.ndarray:
  """A realized tinygrad Buffer's contents, flat, from its bytes: Buffer.numpy() reads bfloat16/fp8
  memory as float32, and a trip through float32 values would lose NaN payloads. A zero-size
  buffer has no bytes to read (tinygrad's copyout cannot cast an empty view). The bytes are read
  in place where the allocator allows it and copied once: the copy is the snapshot, which the
  realize about to run may overwrite."""
  dt = npy_dtype(buf.dtype.base)
  if buf.size == 0: return np.empty(0, dt)
  return np.frombuffer(buf.as_buffer(allow_zero_copy=True), dtype=dt).copy()


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
    if not (u.src[0].op is Ops.UNIQUE and u.src[1].op is Ops.DEVICE):
      raise ExportError(f"BUFFER: expected (UNIQUE, DEVICE) sources, got {[s.op for s in u.src]}")
    if not isinstance(u.src[1].arg, str): raise ExportError(f"BUFFER: multi-device {u.src[1].arg} is not exported", "multi-device")
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
      raise ExportError(f"COPY: only a copy to one device is exported, got sources {[s.op for s in u.src]} arg {u.arg!r}",
                        "multi-device" if len(u.src) == 2 and u.src[1].op is Ops.DEVICE else "export-unsupported-op")
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
  if u.op is Ops.DEFINE_VAR and len(u.src) == 1 and u.src[0].op is Ops.DEVICE:
    # Tensor(v.bind(n)) puts the variable on a device; outerworld's DEFINE_VAR has no sources,
    # so the device goes in the tag, as for a CONST.
    if not isinstance(u.src[0].arg, str): raise ExportError(f"DEFINE_VAR: multi-device {u.src[0].arg} is not exported", "multi-device")
    return w.emit("DEFINE_VAR", _dtype_name(u), [], u.arg, True, tag=(u.src[0].arg,))
  if u.op.name in _DIRECT:
    if u.op is Ops.RANGE and not (len(u.arg) >= 2 and isinstance(u.arg[-1], AxisType)):
      raise ExportError(f"RANGE: arg {u.arg!r} is not (id, ..., AxisType)")
    has_arg = u.arg is not None
    return w.emit(u.op.name, _dtype_name(u), [w.ref[s] for s in u.src], u.arg, has_arg)
  raise ExportError(f"{u.op}: no outerworld equivalent for this tinygrad op")


def _const(w: _Writer, u: UOp) -> str:
  if not isinstance(u.arg, (bool, int, float)): raise ExportError(f"CONST: value {u.arg!r} has no outerworld form")
  if (r := _CONST_RANGE.get(u.dtype)) is not None and not isinstance(u.arg, bool) and not r[0] <= u.arg <= r[1]:
    raise ExportError(f"CONST: value {u.arg} of {u.dtype} is outside [{r[0]}, {r[1]}], what an outerworld {DTYPE_NAMES[u.dtype]} CONST holds",
                      "const-range")
  ops = tuple(s.op for s in u.src)
  if ops == () and u.dtype is dtypes.index: return w.index_const(u.arg)
  if ops == (): tag = None
  elif ops == (Ops.DEVICE,): tag = (u.src[0].arg,)
  elif ops == (Ops.DEVICE, Ops.UNIQUE): tag = (u.src[0].arg, u.src[1].arg)
  else: raise ExportError(f"CONST: sources {ops} are not exported")
  if tag is not None and not isinstance(tag[0], str): raise ExportError(f"CONST: multi-device {tag[0]} is not exported", "multi-device")
  return w.emit("CONST", _dtype_name(u), [], u.arg, True, tag=tag)


def _roots(x) -> UOp:
  from tinygrad import Tensor
  items = x if isinstance(x, (list, tuple)) else [x]
  uops = [t.uop if isinstance(t, Tensor) else t for t in items]
  if len(uops) == 1 and uops[0].op is Ops.SINK: return uops[0]
  return UOp.sink(*uops)


def _toposort(root: UOp) -> list[UOp]:
  """tinygrad's order (depth first, sources in order)."""
  seen: dict[UOp, None] = {}
  stack = [(root, False)]
  while stack:
    u, done = stack.pop()
    if u in seen: continue
    if done: seen[u] = None; continue
    stack.append((u, True))
    stack.extend((s, False) for s in reversed(u.src))
  return list(seen)


def export(x, names: list[str] | None = None) -> Export:
  """Export a tinygrad Tensor, UOp, or a list of them (as realize would schedule them together)."""
  root = _roots(x)
  out_names = names if names is not None else [f"out{i}" for i in range(len(root.src))]
  w = _Writer()
  order = _toposort(root)
  for u in order:
    if (r := _node(w, u, root, out_names)) is not None: w.ref[u] = r
  inputs: dict[str, np.ndarray] = {}
  uninit = []
  for u in order:
    if u.op is not Ops.BUFFER: continue
    name = buffer_name(u)
    if u.realized is None: uninit.append(name); continue
    data = buffer_array(u.realized)
    shape = w.first_view.get(name)
    inputs[name] = data.reshape(shape) if shape is not None and -1 not in shape else data
  return Export("\n".join(w.lines) + "\n", inputs, out_names, uninit)
