#include "uop/shape.h"

#include <algorithm>

#include "uop/symbolic.h"

namespace ow {

namespace {

using Kind = ShapeInfo::Kind;

ShapeInfo unshaped() { return {}; }
ShapeInfo shaped(std::vector<UOp> dims) { return {Kind::Shaped, std::move(dims), ""}; }
ShapeInfo invalid(std::string why) { return {Kind::Invalid, {}, std::move(why)}; }

const ShapeInfo& of(UOp u) { return u->shape; }

bool dims_equal(const std::vector<UOp>& a, const std::vector<UOp>& b) { return a == b; }

// A size operand (a dim, pad width, shrink bound): index-typed, simplified, never negative.
std::optional<std::string> check_size(UOp d, const char* what) {
  if (!d->dtype.is_index() && !d->dtype.is_int()) return std::string(what) + " must be an index value, got " + to_string(d->dtype);
  if (d.vmin() < 0) return std::string(what) + " " + render_expr(d) + " can be negative (minimum " + std::to_string(d.vmin()) + ")";
  return std::nullopt;
}

// Stored values (BUFFER, BUFFERIZE) hold at most 2^32 elements, views at most 2^56 (S2.4).
ShapeInfo limit(std::vector<UOp> dims, int64_t most = kMaxElements) {
  __int128 n = 1;
  for (UOp d : dims) {
    n *= std::max<int64_t>(d.vmax(), 0);
    if (n > most) return invalid("shape " + render_shape(dims) + " has more than 2^" + (most == kMaxElements ? "32" : "56") + " elements");
  }
  return shaped(std::move(dims));
}
ShapeInfo view_limit(std::vector<UOp> dims) { return limit(std::move(dims), kMaxVirtualElements); }

std::vector<UOp> simplified(const std::vector<UOp>& src, size_t from) {
  std::vector<UOp> out;
  for (size_t i = from; i < src.size(); ++i) out.push_back(simplify(src[i]));
  return out;
}

UOp product(const std::vector<UOp>& dims) {
  UOp p = UOp::index(1);
  for (UOp d : dims) p = p * d;
  return simplify(p);
}

ShapeInfo elementwise(const UOpNode& n, size_t first, size_t count) {
  const ShapeInfo* found = nullptr;
  for (size_t i = first; i < std::min(n.src.size(), first + count); ++i) {
    const ShapeInfo& s = of(n.src[i]);
    if (s.kind != Kind::Shaped) continue;
    if (found && !dims_equal(found->dims, s.dims))
      return invalid("sources have different shapes " + render_shape(found->dims) + " and " + render_shape(s.dims));
    found = &s;
  }
  return found ? *found : unshaped();
}

ShapeInfo reshape(const UOpNode& n, const ShapeInfo& in) {
  std::vector<UOp> dims = simplified(n.src, 1);
  for (UOp d : dims)
    if (auto e = check_size(d, "new dimension")) return invalid(*e);
  if (in.kind == Kind::Shaped && product(in.dims) != product(dims))
    return invalid("element count changes: " + render_shape(in.dims) + " -> " + render_shape(dims));
  return view_limit(std::move(dims));
}

ShapeInfo expand(const UOpNode& n, const ShapeInfo& in) {
  std::vector<UOp> dims = simplified(n.src, 1);
  if (dims.size() != in.dims.size())
    return invalid("expand to " + std::to_string(dims.size()) + " dims from " + std::to_string(in.dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (auto e = check_size(dims[i], "new dimension")) return invalid(*e);
    bool one = in.dims[i]->op == Ops::CONST && in.dims[i].const_value() == 1;
    if (!one && in.dims[i] != dims[i])
      return invalid("can't expand " + render_shape(in.dims) + " to " + render_shape(dims) + ": dim " + std::to_string(i) + " is not 1");
  }
  return view_limit(std::move(dims));
}

ShapeInfo pad_or_shrink(const UOpNode& n, const ShapeInfo& in) {
  bool pad = n.op == Ops::PAD;
  std::vector<UOp> w = simplified(n.src, 1);
  if (w.size() != 2 * in.dims.size())
    return invalid("needs 2 bounds per dim (" + std::to_string(2 * in.dims.size()) + "), got " + std::to_string(w.size()));
  std::vector<UOp> dims;
  for (size_t i = 0; i < in.dims.size(); ++i) {
    UOp b = w[2 * i], e = w[2 * i + 1], s = in.dims[i];
    if (!pad && s->op == Ops::RANGE) s = s->src[0];  // a bare range as a dimension has its extent as size (S4.1)
    for (UOp x : {b, e})
      if (auto err = check_size(x, pad ? "pad width" : "shrink bound")) return invalid(*err);
    if (pad) {
      dims.push_back(simplify(s + b + e));
      continue;
    }
    // 0 <= b <= e <= s for every binding of the ranges involved.
    if (simplify(e - b).vmin() < 0 || simplify(s - e).vmin() < 0)
      return invalid("shrink (" + render_expr(b) + ", " + render_expr(e) + ") does not fit dim " + std::to_string(i) + " of size " + render_expr(s));
    dims.push_back(simplify(e - b));
  }
  return view_limit(std::move(dims));
}

std::optional<std::vector<int64_t>> int_tuple(const Arg& a) {
  const ArgTuple* t = a.tuple();
  if (!t) return std::nullopt;
  std::vector<int64_t> out;
  for (const Arg& x : *t) {
    if (!x.is<int64_t>()) return std::nullopt;
    out.push_back(x.as<int64_t>());
  }
  return out;
}

ShapeInfo permute(const UOpNode& n, const ShapeInfo& in) {
  auto perm = int_tuple(n.arg);
  if (!perm || perm->size() != in.dims.size()) return invalid("arg must be a permutation of " + std::to_string(in.dims.size()) + " axes");
  std::vector<int64_t> sorted = *perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) {
      std::string a = to_string(n.arg);
      return invalid("arg " + (a.size() > 60 ? a.substr(0, 57) + "..." : a) + " is not a permutation");
    }
  std::vector<UOp> dims;
  for (int64_t p : *perm) dims.push_back(in.dims[static_cast<size_t>(p)]);
  return shaped(std::move(dims));
}

ShapeInfo flip(const UOpNode& n, const ShapeInfo& in) {
  const ArgTuple* t = n.arg.tuple();
  if (!t || t->size() != in.dims.size() || !std::all_of(t->begin(), t->end(), [](const Arg& a) { return a.is<bool>(); }))
    return invalid("arg must be one bool per axis (" + std::to_string(in.dims.size()) + ")");
  return in;
}

ShapeInfo reduce_axis(const UOpNode& n, const ShapeInfo& in) {
  const ArgTuple* t = n.arg.tuple();
  auto axes = t && t->size() == 2 ? int_tuple((*t)[1]) : std::nullopt;
  if (!axes) return invalid("arg must be (Ops.X, (axes...))");
  std::vector<UOp> dims = in.dims;
  for (int64_t a : *axes) {
    if (a < 0 || a >= static_cast<int64_t>(dims.size())) return invalid("axis " + std::to_string(a) + " out of range for " + render_shape(dims));
    dims[static_cast<size_t>(a)] = UOp::index(1);
  }
  return shaped(std::move(dims));
}

ShapeInfo movement(const UOpNode& n) {
  const ShapeInfo& in = of(n.src[0]);
  if (n.op == Ops::RESHAPE) return reshape(n, in);
  if (in.kind != Kind::Shaped) return invalid(std::string(op_name(n.op)) + " needs a shaped source");
  switch (n.op) {
    case Ops::EXPAND: return expand(n, in);
    case Ops::PAD: case Ops::SHRINK: return pad_or_shrink(n, in);
    case Ops::PERMUTE: return permute(n, in);
    case Ops::FLIP: return flip(n, in);
    default: return reduce_axis(n, in);
  }
}

}  // namespace

ShapeInfo infer_shape(const UOpNode& n) {
  for (UOp s : n.src)
    if (s->shape.kind == Kind::Invalid) return invalid("a source has an invalid shape");
  switch (n.op) {
    case Ops::BUFFER: {
      const ArgTuple* t = n.arg.tuple();
      if (t && t->size() == 2 && (*t)[1].is<int64_t>() && (*t)[1].as<int64_t>() >= 0) return limit({UOp::index((*t)[1].as<int64_t>())});
      return unshaped();
    }
    case Ops::BUFFERIZE: {
      std::vector<UOp> dims;
      for (size_t i = 1; i < n.src.size(); ++i) {
        if (n.src[i].vmax() >= kMaxElements) return invalid("BUFFERIZE over a range with more than 2^32 values");
        dims.push_back(UOp::index(n.src[i].vmax() + 1));
      }
      return limit(std::move(dims));
    }
    case Ops::REDUCE: case Ops::REDUCE_BACKWARD: case Ops::DETACH: case Ops::CONTIGUOUS:
    case Ops::CONTIGUOUS_BACKWARD: case Ops::AFTER: case Ops::END: case Ops::COPY:
      return n.src.empty() ? unshaped() : of(n.src[0]);
    case Ops::STORE: case Ops::ASSIGN: {
      if (n.src.size() < 2) return unshaped();
      ShapeInfo s = elementwise(n, 0, 2);
      return s.kind == Kind::Invalid ? s : of(n.src[0]);
    }
    case Ops::GRADIENT:  // shaped like the variable
      return n.src.size() == 2 ? of(n.src[1]) : invalid("GRADIENT takes (loss, x)");
    case Ops::RESHAPE: case Ops::EXPAND: case Ops::PAD: case Ops::SHRINK: case Ops::PERMUTE:
    case Ops::FLIP: case Ops::REDUCE_AXIS:
      return n.src.empty() ? invalid("missing source") : movement(n);
    default:
      if (is_elementwise(n.op)) return elementwise(n, 0, n.src.size());
      return unshaped();
  }
}

namespace {
// A static extent: a CONST, or a RANGE with a constant end (a range as a dimension means its extent).
std::optional<int64_t> extent(UOp d) {
  if (d->op == Ops::CONST) return static_cast<int64_t>(d.const_value());
  if (d->op == Ops::RANGE && !d->src.empty() && d->src[0]->op == Ops::CONST) return static_cast<int64_t>(d->src[0].const_value());
  return std::nullopt;
}
}  // namespace

bool is_static(const std::vector<UOp>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](UOp d) { return extent(d).has_value(); });
}

std::optional<std::vector<int64_t>> static_dims(const std::vector<UOp>& dims) {
  std::vector<int64_t> out;
  for (UOp d : dims) {
    auto e = extent(d);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::string render_shape(const std::vector<UOp>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + render_expr(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

UOp broadcast(UOp value, const std::vector<UOp>& dims) {
  std::vector<UOp> ones{value}, full{UOp()};
  for (UOp d : dims) {
    ones.push_back(UOp::index(1));
    full.push_back(d);
  }
  full[0] = UOp::make(Ops::RESHAPE, value->dtype, ones);
  return UOp::make(Ops::EXPAND, value->dtype, full);
}

UOp base_buffer(UOp view) {
  while (is_movement(view->op) || view->op == Ops::AFTER) view = view->src[0];
  return view->op == Ops::BUFFER ? view : UOp();
}

}  // namespace ow
