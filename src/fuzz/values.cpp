// ow fuzz's value ops (gen.h): elementwise ops, casts, movement, reductions over axes, matmul.
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>

#include "fuzz/gen.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::fuzz::detail {

Tensor Gen::unary(const Shape& s, DType d, int depth) {
  if (d == dtypes::bool_) {
    form("not");
    return Tensor(expr(s, d, depth - 1).uop().ne(UOp::cnst(d, 1)));
  }
  Tensor x = expr(s, d, depth - 1);
  if (smooth_) return smooth_unary(x);
  if (d.is_int()) {
    form("NEG");
    return -x;
  }
  static const Ops ops[] = {Ops::NEG, Ops::RECIPROCAL, Ops::SQRT, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::TRUNC};
  uint64_t k = pick(8);
  if (k == 7) {
    form("relu");
    return x.relu();
  }
  form(op_name(ops[k]).data());
  return Tensor(x.uop().alu(ops[k], {}));
}

Tensor Gen::smooth_unary(const Tensor& x) {
  static const Ops ops[] = {Ops::NEG, Ops::SIN, Ops::EXP2, Ops::SQRT, Ops::LOG2, Ops::RECIPROCAL};
  Ops op = ops[pick(6)];
  form(("smooth-" + std::string(op_name(op))).c_str());
  UOp a = op == Ops::SQRT || op == Ops::LOG2 || op == Ops::RECIPROCAL ? x.uop() * x.uop() + UOp::cnst(x.dtype(), 1) : x.uop();
  return Tensor(a.alu(op, {}));
}

UOp Gen::operand(const Shape& s, DType d, int depth, bool nonzero) {
  uint64_t k = pick(100);
  if (k < 15) {
    double v = rand_value(d);
    if (nonzero && v == 0) v = 3;
    form("scalar-operand");
    return UOp::cnst(d, v);
  }
  UOp u;
  if (k < 35 && !s.empty()) {
    Shape sb = s;
    for (int64_t& x : sb)
      if (chance(0.5)) x = 1;
    size_t drop = pick(sb.size() + 1);
    sb.erase(sb.begin(), sb.begin() + static_cast<std::ptrdiff_t>(drop));
    form("broadcast");
    u = expr(sb, d, depth - 1).expand(dims(s)).uop();
  } else {
    u = expr(s, d, depth - 1).uop();
  }
  if (!nonzero) return u;
  form("safe-divisor");
  if (chance(0.5) && !smooth_) return u.eq(UOp::cnst(d, 0)).where(UOp::cnst(d, 1), u);
  return u * u + UOp::cnst(d, 1);  // x*x+1 is never 0 mod 2^32
}

Tensor Gen::binary(const Shape& s, DType d, int depth) {
  if (d == dtypes::bool_ && chance(0.6)) {
    DType od = chance(0.6) ? dtypes::float32 : chance(0.3) ? rand_dtype() : (chance(0.7) ? dtypes::int32 : dtypes::bool_);
    static const Ops cmps[] = {Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ};
    Ops op = cmps[pick(3)];
    form(op_name(op).data());
    UOp a = expr(s, od, depth - 1).uop();
    UOp b = operand(s, od, depth, false);
    if (chance(0.2)) std::swap(a, b);
    if (a->shape.kind != ShapeInfo::Kind::Shaped && b->shape.kind != ShapeInfo::Kind::Shaped) std::swap(a, b);
    return Tensor(a.alu(op, {b}));
  }
  Ops op;
  if (d == dtypes::bool_) {
    static const Ops ops[] = {Ops::AND, Ops::OR, Ops::XOR, Ops::ADD, Ops::MUL, Ops::MAX, Ops::CMPNE, Ops::CMPEQ};
    op = ops[pick(8)];
  } else if (d.is_int()) {
    static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::MAX, Ops::IDIV, Ops::MOD, Ops::AND, Ops::OR, Ops::XOR, Ops::POW, Ops::THREEFRY};
    op = ops[pick(d == dtypes::uint64 ? 11 : 10)];
  } else if (smooth_) {
    static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV};
    op = ops[pick(4)];
  } else {
    static const Ops ops[] = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV, Ops::MAX, Ops::ADD, Ops::MUL, Ops::POW};
    op = ops[pick(8)];
  }
  form(op_name(op).data());
  UOp a = expr(s, d, depth - 1).uop();
  if (op == Ops::POW && d.is_int()) {
    // a^b with a tensor exponent that may be negative (an error, S2.1): where it may, the error
    // must stay where loop order puts it (no hoisting out of an empty loop, no blocking).
    if (d.is_signed_int() && chance(0.15)) return Tensor(a.alu(op, {operand(s, d, depth, false)}));
    return Tensor(a.alu(op, {UOp::cnst(d, static_cast<double>(pick(31)))}));  // a^n, n in [0, 30] (tinygrad's x ** n; wraps)
  }
  UOp b = operand(s, d, depth, op == Ops::IDIV || op == Ops::MOD || (smooth_ && op == Ops::FDIV));
  if (d.is_int() && !smooth_ && chance(0.05)) return self_cancel(Tensor(a));
  if (op != Ops::IDIV && op != Ops::MOD && b->shape.kind != ShapeInfo::Kind::Shaped && chance(0.3)) std::swap(a, b);
  return Tensor(a.alu(op, {b}));
}

Tensor Gen::where(const Shape& s, DType d, int depth) {
  form("WHERE");
  UOp c = (chance(0.15) || smooth_) && !scope_.empty() ? scope_[pick(scope_.size())].r.eq(0) : expr(s, dtypes::bool_, depth - 1).uop();
  UOp t = expr(s, d, depth - 1).uop();
  UOp f = chance(0.2) ? UOp::cnst(d, rand_value(d)) : expr(s, d, depth - 1).uop();
  if (c->shape.kind != ShapeInfo::Kind::Shaped && f->shape.kind != ShapeInfo::Kind::Shaped && chance(0.5)) std::swap(t, f);
  return Tensor(UOp::make(Ops::WHERE, d, {c, t, f}));
}

DType Gen::same_size(DType d, bool second) {
  if (d == dtypes::float32) return second ? dtypes::int32 : dtypes::uint32;
  if (d == dtypes::uint32) return second ? dtypes::int32 : dtypes::float32;
  if (d == dtypes::int32) return second ? dtypes::uint32 : dtypes::float32;
  if (d == dtypes::uint64) return dtypes::float64;
  if (d == dtypes::float64) return dtypes::uint64;
  if (d.itemsize() == 2 && !d.is_bool()) {  // int16 uint16 float16 bfloat16
    static const DType two[] = {dtypes::int16, dtypes::uint16, dtypes::float16, dtypes::bfloat16};
    for (int k = second ? 3 : 0; k >= 0 && k < 4; k += second ? -1 : 1)
      if (two[k] != d) return two[k];
  }
  if (d.itemsize() == 1 && !d.is_bool()) {  // int8 uint8 fp8e4m3 fp8e5m2
    static const DType one[] = {dtypes::int8, dtypes::uint8, dtypes::fp8e4m3, dtypes::fp8e5m2};
    for (int k = second ? 3 : 0; k >= 0 && k < 4; k += second ? -1 : 1)
      if (one[k] != d) return one[k];
  }
  return d;
}

Tensor Gen::cast(const Shape& s, DType d, int depth) {
  if (!smooth_ && same_size(d, false) != d && chance(0.25)) {
    form("BITCAST");
    return expr(s, same_size(d, chance(0.5)), depth - 1).bitcast(d);
  }
  DType from = rand_dtype();
  if (from == d) from = d == dtypes::float32 ? dtypes::int32 : dtypes::float32;
  form("CAST");
  return expr(s, from, depth - 1).cast(d);
}

Tensor Gen::movement(const Shape& s, DType d, int depth) {
  size_t n = s.size();
  uint64_t k = pick(6);
  if (k == 0 || n == 0) return reshape_to(s, d, depth);
  if (k == 1 && n >= 2) return permute_to(s, d, depth);
  if (k == 2) return expand_to(s, d, depth);
  if (k == 3) return pad_to(s, d, depth);
  if (k == 4) return shrink_to(s, d, depth);
  return flip_of(s, d, depth);
}

// RESHAPE from another factorization of the same count (an empty one: any shape with a 0).
Tensor Gen::reshape_to(const Shape& s, DType d, int depth) {
  form("RESHAPE");
  int64_t total = numel(s);
  Shape s2;
  if (total == 0) {
    s2 = rand_shape(3, 64);
    if (numel(s2) != 0) s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(pick(s2.size() + 1)), 0);
  } else {
    int64_t rest = total;
    for (int64_t f = 2; f <= rest && s2.size() < 3;)
      if (rest % f == 0 && chance(0.6)) {
        s2.push_back(f);
        rest /= f;
      } else {
        ++f;
      }
    if (rest > 1 || s2.empty()) s2.push_back(rest);
    if (chance(0.3)) s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(pick(s2.size() + 1)), 1);
    for (size_t i = s2.size(); i > 1; --i) std::swap(s2[i - 1], s2[pick(i)]);
  }
  return expr(s2, d, depth - 1).reshape(dims(s));
}

Tensor Gen::permute_to(const Shape& s, DType d, int depth) {
  form("PERMUTE");
  size_t n = s.size();
  std::vector<int64_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
  for (size_t i = n - 1; i > 0; --i) std::swap(p[i], p[pick(i + 1)]);
  Shape s2(n);
  for (size_t i = 0; i < n; ++i) s2[static_cast<size_t>(p[i])] = s[i];
  return expr(s2, d, depth - 1).permute(p);
}

Tensor Gen::wide_transpose(DType d, int depth) {
  form("wide-transpose");
  static const int64_t sides[] = {8, 16, 24, 32, 40};
  Shape from{sides[pick(5)], sides[pick(5)]};
  if (chance(0.3)) from.insert(from.begin(), 2);
  size_t n = from.size();
  std::vector<int64_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
  std::swap(p[n - 1], p[n - 2]);
  return expr(from, d, chance(0.5) ? 0 : depth - 1).permute(p);  // depth 0: a leaf, often a plain copy
}

// EXPAND of some axes set to 1, and sometimes of fewer leading axes.
Tensor Gen::expand_to(const Shape& s, DType d, int depth) {
  form("EXPAND");
  Shape s2 = s;
  for (int64_t& x : s2)
    if (chance(0.5)) x = 1;
  if (chance(0.3)) s2.erase(s2.begin(), s2.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)));
  return expr(s2, d, depth - 1).expand(dims(s));
}

// PAD of up to 3 elements on each side of each axis.
Tensor Gen::pad_to(const Shape& s, DType d, int depth) {
  form("PAD");
  Shape s2 = s;
  std::vector<std::optional<std::pair<Dim, Dim>>> w(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t b = static_cast<int64_t>(pick(static_cast<uint64_t>(std::min<int64_t>(s[i], 3) + 1)));
    int64_t e = static_cast<int64_t>(pick(static_cast<uint64_t>(std::min<int64_t>(s[i] - b, 3) + 1)));
    s2[i] = s[i] - b - e;
    w[i] = std::make_pair(Dim(b), Dim(e));
  }
  return expr(s2, d, depth - 1).pad(w);
}

// SHRINK of a value up to 3 larger on each axis (not at all once it is large).
Tensor Gen::shrink_to(const Shape& s, DType d, int depth) {
  form("SHRINK");
  Shape s2 = s;
  std::vector<std::optional<std::pair<Dim, Dim>>> b(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t extra = static_cast<int64_t>(pick(4));
    if (numel(s2) > o_.max_elems / 4) extra = 0;
    int64_t lo = static_cast<int64_t>(pick(static_cast<uint64_t>(extra + 1)));
    s2[i] = s[i] + extra;
    b[i] = std::make_pair(Dim(lo), Dim(lo + s[i]));
  }
  return expr(s2, d, depth - 1).shrink(b);
}

Tensor Gen::flip_of(const Shape& s, DType d, int depth) {
  form("FLIP");
  std::vector<int64_t> axes;
  for (size_t i = 0; i < s.size(); ++i)
    if (chance(0.5)) axes.push_back(static_cast<int64_t>(i));
  if (axes.empty()) axes.push_back(static_cast<int64_t>(pick(s.size())));
  return expr(s, d, depth - 1).flip(axes);
}

Ops Gen::rand_reduce_op(bool bias_add) {
  uint64_t k = rng_.next() % 100;
  if (k < (bias_add ? 70u : 45u)) return Ops::ADD;
  return k < 85 && !smooth_ ? Ops::MAX : Ops::MUL;
}

Tensor Gen::reduce_axis(const Shape& s, DType d, int depth) {
  Ops op = rand_reduce_op(false);
  form(("REDUCE_AXIS-" + std::string(op_name(op))).c_str());
  Shape s2 = s;
  ArgTuple axes;
  std::vector<size_t> ones;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == 1) ones.push_back(i);
  bool keep = !ones.empty() && chance(0.4);
  if (keep) {
    size_t a = ones[pick(ones.size())];
    s2[a] = rand_dim();
    axes.emplace_back(static_cast<int64_t>(a));
  } else {
    int k = 1 + static_cast<int>(pick(2));
    std::vector<size_t> pos;
    for (int i = 0; i < k; ++i) {
      size_t p = pick(s2.size() + 1);
      s2.insert(s2.begin() + static_cast<std::ptrdiff_t>(p), std::min<int64_t>(rand_dim(), 6));
      for (size_t& q : pos)
        if (q >= p) ++q;
      pos.push_back(p);
    }
    std::sort(pos.begin(), pos.end());
    for (size_t p : pos) axes.emplace_back(static_cast<int64_t>(p));
  }
  if (numel(s2) > o_.max_elems) return expr(s, d, depth - 1);
  Tensor x = expr(s2, d, depth - 1);
  Tensor r(UOp::make(Ops::REDUCE_AXIS, d, {x.uop()}, Arg(ArgTuple{Arg(op), Arg(axes)})));
  return keep ? r : r.reshape(dims(s));
}

Tensor Gen::cumsum_window(const Shape& s, DType d, int depth) {
  int64_t n = s.size() == 1 ? s[0] : 0;
  if (n < 1 || (n + 1) * (2 * n - 1) > o_.max_elems) return reduce_axis(s, d, depth);
  form("cumsum-window");
  Ops op = rand_reduce_op(false);
  // arange's ones, or a small power of two times 1..3: float sums of these are exact, folded in
  // closed form; other values are folded term by term
  Tensor x = chance(0.4) ? Tensor::full({n}, std::ldexp(static_cast<double>(1 + pick(3)), static_cast<int>(pick(4)) - 2), d)
             : chance(0.3) ? constant({n}, d) : expr({n}, d, depth - 1);
  Tensor w = x.pad({std::pair<Dim, Dim>{n - 1, 0}})
                 .reshape({1, 2 * n - 1})
                 .expand({n + 1, 2 * n - 1})
                 .reshape({(n + 1) * (2 * n - 1)})
                 .shrink({std::pair<Dim, Dim>{0, 2 * n * n}})
                 .reshape({n, 2 * n})
                 .shrink({std::pair<Dim, Dim>{0, n}, std::pair<Dim, Dim>{0, n}})
                 .permute({1, 0});
  if (chance(0.3)) w = w.flip({1});
  Tensor r(UOp::make(Ops::REDUCE_AXIS, d, {w.uop()}, Arg(ArgTuple{Arg(op), Arg(ArgTuple{Arg(int64_t{1})})})));
  return r.reshape({n});
}

Tensor Gen::matmul(const Shape& s, DType d, int depth) {
  if (s.empty() || d == dtypes::bool_) return reduce_axis(s, d, depth);
  form("matmul");
  int64_t k = std::max<int64_t>(rand_dim(), 1), n = s.back();
  Shape xs = s;
  xs.back() = k;
  if (numel(xs) * n > o_.max_elems || k * n > o_.max_elems) return expr(s, d, depth - 1);
  auto operand = [&](const Shape& os) { return chance(0.5) ? input(os, d) : expr(os, d, depth - 1); };
  Tensor x = operand(xs);
  Tensor w = chance(0.5) ? operand({k, n}) : operand({n, k}).T();
  return x.matmul(w);
}

}  // namespace ow::fuzz::detail
