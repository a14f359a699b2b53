"""outerworld .uop text -> tinygrad UOp graph: the inverse of export.

Every node is rebuilt the way tinygrad builds it (movement ops through UOp._mop, so sizes get
tinygrad's own vector CONST / VCONST / VECTORIZE packing), so exporting a graph and importing
it back gives the very same hash-consed tinygrad UOp.
"""
from __future__ import annotations
import math, re

from tinygrad.device import Device
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, Ops, AxisType

from outerworld.tinygrad.export import DTYPE_NAMES

_DTYPES = {v: k for k, v in DTYPE_NAMES.items()}
_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[(),])|(?P<word>[^\s(),"]+))')
_LINE = re.compile(r'^\s*%(?P<name>[A-Za-z0-9_.]+)\s*=\s*(?P<op>[A-Z_0-9]+)\s+(?P<dtype>[a-z0-9]+(?:\*\d*)?)\s*\((?P<srcs>[^)]*)\)(?P<rest>.*)$')


class UopImportError(Exception):
  """A .uop text this importer cannot turn into a tinygrad UOp."""


def _strip_comment(line: str) -> str:
  # '#' starts a comment unless it is inside a string.
  in_str, esc = False, False
  for i, c in enumerate(line):
    if in_str:
      if esc: esc = False
      elif c == "\\": esc = True
      elif c == '"': in_str = False
    elif c == '"': in_str = True
    elif c == "#": return line[:i]
  return line


def _unescape(s: str) -> str:
  return re.sub(r'\\(x[0-9a-fA-F]{2}|.)', lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x" and len(m.group(1)) == 3
                else {"n": "\n"}.get(m.group(1), m.group(1)), s[1:-1])


def _word(w: str):
  if w == "true": return True
  if w == "false": return False
  if w == "None": return None
  if w.startswith("Ops."): return Ops[w[4:]]
  if w.startswith("AxisType."): return AxisType[w[9:]]
  if re.fullmatch(r"[+-]?\d+", w): return int(w)
  return float(w)  # covers 1.5, 1e+30, inf, -inf, nan


def parse_args(text: str) -> list:
  """Parse a sequence of args (the arg and 'tag=' forms) into Python values."""
  toks = [m for m in _TOKEN.finditer(text) if m.group(0).strip()]
  pos = 0

  def one():
    nonlocal pos
    t = toks[pos]; pos += 1
    if t.group("str"): return _unescape(t.group("str"))
    if t.group("word"): return _word(t.group("word"))
    if t.group("punct") != "(": raise UopImportError(f"unexpected {t.group(0)!r} in arg {text!r}")
    items = []
    while toks[pos].group("punct") != ")":
      items.append(one())
      if toks[pos].group("punct") == ",": pos += 1
    pos += 1
    return tuple(items)

  out = []
  while pos < len(toks): out.append(one())
  return out


def _split_rest(rest: str):
  """(has_arg, arg, tag) from what follows the sources."""
  rest = rest.strip()
  tag = None
  if (i := rest.find("tag=")) >= 0 and not rest[:i].count('"') % 2:
    tag = parse_args(rest[i + 4:])[0]; rest = rest[:i]
  args = parse_args(rest)
  return (len(args) > 0, args[0] if args else None, tag)


def _sizes(srcs: list[UOp]) -> tuple:
  return tuple(s.arg if s.op is Ops.CONST and s.dtype is dtypes.index and not s.src else s for s in srcs)


def _build(op: Ops, dtype, srcs: list[UOp], arg, tag, default_device: str) -> UOp:
  if op is Ops.BUFFER:
    name, size = arg
    device = tag[0] if tag else default_device
    m = re.fullmatch(r"b(\d+)", name)
    return UOp(Ops.BUFFER, dtype, (UOp.unique(int(m.group(1)) if m else None), UOp(Ops.DEVICE, arg=device)), size)
  if op is Ops.CONST:
    value = dtypes.as_const(arg, dtype)
    if isinstance(value, float) and math.isnan(value): value = math.nan  # tinygrad's one NaN object: nan != nan
    if not tag: return UOp(Ops.CONST, dtype, (), value)
    src = (UOp(Ops.DEVICE, arg=tag[0]),) + ((UOp.unique(tag[1]),) if len(tag) > 1 else ())
    return UOp(Ops.CONST, dtype, src, value)
  if op is Ops.DEFINE_VAR and tag:  # see export's DEFINE_VAR on a device
    return UOp(Ops.DEFINE_VAR, dtype, (UOp(Ops.DEVICE, arg=tag[0]),), arg)
  if op in (Ops.RESHAPE, Ops.EXPAND): return srcs[0]._mop(op, _sizes(srcs[1:]))
  if op in (Ops.PAD, Ops.SHRINK):
    s = _sizes(srcs[1:])
    return srcs[0]._mop(op, tuple(zip(s[0::2], s[1::2])))
  if op is Ops.CONTIGUOUS and isinstance(tag, tuple) and tag[:1] == ("COPY",):  # see export's COPY
    return UOp(Ops.COPY, dtype, (srcs[0], UOp(Ops.DEVICE, arg=tag[1])))
  if op is Ops.AFTER and tag == ("ASSIGN",):  # see export's ASSIGN to a non-buffer
    return UOp(Ops.ASSIGN, dtype, (srcs[1], srcs[0].src[0]))
  if op is Ops.SINK: return UOp.sink(*srcs)  # output names are outerworld's, not tinygrad's
  return UOp(op, dtype, tuple(srcs), arg)


def to_tinygrad(text: str, device: str | None = None) -> UOp:
  """Build the tinygrad UOp graph of an outerworld graph; returns its root (last line)."""
  default_device = device or Device.DEFAULT
  nodes: dict[str, UOp] = {}
  last = None
  for lineno, raw in enumerate(text.splitlines(), 1):
    line = _strip_comment(raw).strip()
    if not line: continue
    m = _LINE.match(line)
    if m is None: raise UopImportError(f"line {lineno}: cannot parse {raw!r}")
    try: op = Ops[m.group("op")]
    except KeyError: raise UopImportError(f"line {lineno}: tinygrad has no op {m.group('op')}") from None
    dt = m.group("dtype")
    if dt not in _DTYPES: raise UopImportError(f"line {lineno}: dtype {dt} is not imported")
    srcs = [nodes[r.strip()[1:]] for r in m.group("srcs").split(",") if r.strip()]
    has_arg, arg, tag = _split_rest(m.group("rest"))
    nodes[m.group("name")] = last = _build(op, _DTYPES[dt], srcs, arg if has_arg else None, tag, default_device)
  if last is None: raise UopImportError("empty graph")
  return last
