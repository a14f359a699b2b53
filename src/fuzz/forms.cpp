// ow fuzz's range forms (gen.h): range reductions, vmaps, collects, folds, scans, assign
// scans and effects inside them; each opens the ranges it closes.
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

Tensor Gen::range_form(const Shape& s, DType d, int depth) {
  uint64_t k = pick(100);
  if (k < 35 && !s.empty()) {
    size_t ax = pick(s.size());
    if (s[ax] >= 2 && chance(0.25)) return shifted_row_vmap(s, d, depth, ax);
    if (s[ax] >= 1) return vmap(s, d, depth, ax, [&](const Shape& s1, const Range&) { return expr(s1, d, depth - 1); });
  }
  if (k < 60 && !s.empty()) {
    size_t ax = pick(s.size());
    if (s[ax] >= 1) {
      // the verifier rejects reshaping (r, ...) to a static shape unless a dim is 0, so this
      // collect survives only then; collect_output makes the others
      Tensor out = collect(s, d, depth, ax);
      return same_shape(out, s) ? out : out.reshape(dims(s));
    }
  }
  if (k < 63) return nested_reduces(s, d, depth);
  // REDUCE over one or two ranges
  Range R = new_range(range_extent());
  std::vector<UOp> rs{R.r};
  scope_.push_back(R);
  bool two = chance(0.2);
  Range R2{};
  if (two) {
    R2 = new_range(1 + static_cast<int64_t>(pick(3)));
    scope_.push_back(R2);
    rs.push_back(R2.r);
  }
  Tensor inner = ensure_dep(expr(s, d, depth - 1), s, d, R);
  if (two) {
    inner = ensure_dep(inner, s, d, R2);
    scope_.pop_back();
  }
  scope_.pop_back();
  Ops op = rand_reduce_op(false);
  form(two ? "range-reduce-2" : ("range-reduce-" + std::string(op_name(op))).c_str());
  return inner.reduce(rs, op);
}

// 17 to 40 REDUCEs, each over its own range and nested in the next one's body: past the 16
// temporaries kernelize builds one inside another, the deeper ones are built from its loop
// (kernelize.cpp, build_temps). Extents are 1 but for a few 2s, so the terms stay few.
Tensor Gen::nested_reduces(const Shape& s, DType d, int depth) {
  form("range-reduce-nested");
  int n = 17 + static_cast<int>(pick(24));
  std::vector<Range> rs;
  for (int i = 0; i < n; ++i) {
    rs.push_back(new_range(pick(8) == 0 ? 2 : 1));
    scope_.push_back(rs.back());
  }
  Tensor t = expr(s, d, std::min(depth - 1, 1));
  for (int i = n; i-- > 0;) {
    t = ensure_dep(t, s, d, rs[static_cast<size_t>(i)]);
    scope_.pop_back();
    t = t.reduce({rs[static_cast<size_t>(i)].r}, rand_reduce_op(false));
  }
  return t;
}

Tensor Gen::collect(const Shape& s, DType d, int depth, size_t ax) {
  Range R = new_range(s[ax]);
  Shape s1 = s;
  s1.erase(s1.begin() + static_cast<std::ptrdiff_t>(ax));
  scope_.push_back(R);
  Tensor inner = ensure_dep(expr(s1, d, depth - 1), s1, d, R);
  scope_.pop_back();
  Shape one = s;
  one[ax] = 1;
  Dims to = dims(s);
  to[ax] = Dim(R.r);
  form("vmap-collect");
  return inner.reshape(dims(one)).expand(to);
}

Tensor Gen::collect_output(const Shape& s, DType d, int depth) {
  size_t ax = pick(s.size());
  if (s.empty() || s[ax] == 0) return expr(s, d, depth);
  form("collect-output");
  Tensor t = collect(s, d, depth, ax);
  if (chance(0.3)) t = Tensor(t.uop().alu(d == dtypes::bool_ ? Ops::XOR : Ops::ADD, {UOp::cnst(d, rand_value(d))}));
  return chance(0.5) ? t.contiguous() : t;
}

Tensor Gen::shifted_row_vmap(const Shape& s, DType d, int depth, size_t ax) {
  int64_t n = s[ax], m = 1 + static_cast<int64_t>(pick(static_cast<uint64_t>(n - 1))), k = 1 + static_cast<int64_t>(pick(2));
  Shape big = s;
  big[ax] = m + k;
  if (numel(big) > o_.max_elems) return expr(s, d, depth - 1);
  form("vmap-shifted-row");
  Tensor src = chance(0.5) && depth >= 3 ? vmap(big, d, depth - 1, ax, [&](const Shape& s1, const Range&) { return expr(s1, d, depth - 2); })
                                         : expr(big, d, depth - 1);
  if (chance(0.3)) src = src.contiguous();
  return vmap(s, d, depth, ax, [&](const Shape& s1, const Range& R) {
    std::vector<std::optional<std::pair<Dim, Dim>>> b(s.size());
    b[ax] = std::make_pair(Dim(simplify(R.r + k)), Dim(simplify(R.r + k + 1)));
    Tensor row = src.shrink(b);
    return chance(0.5) ? row : combine(row, expr(s1, d, depth - 1));
  }, m);
}

DType Gen::effect_dtype() {
return smooth_ ? dtypes::float64 : chance(0.8) ? dtypes::float32 : dtypes::int32;
}

Tensor Gen::fold(const Shape& s, DType, int depth) {
  DType d = effect_dtype();
  Tensor acc = target(s, d);
  Range R = new_range(range_extent(), true);
  if (range_axis(R.r) == AxisType::OUTER) form("fold-outer");
  else form("fold-parallel");
  Tensor acc_i = acc.after({R.r});
  scope_.push_back(R);
  special_ = {acc_i};
  Tensor v = expr(s, d, depth);
  if (depth >= 2 && chance(0.2)) v = combine(v, inner_fold(s, d, depth - 1));
  special_.clear();
  scope_.pop_back();
  Tensor val = chance(0.8) ? combine(acc_i, v) : v;
  Tensor st = acc_i.store(val).end({R.r});
  return acc.after({st.uop()});
}

// A fold inside a fold's value: its own target, folded again in every iteration of the outer
// fold (whose range its value may read). Over two OUTER ranges this lowers to a host loop nested
// in a host loop, which the compiled path runs as one C nest (backends/c/host_loop.cpp).
Tensor Gen::inner_fold(const Shape& s, DType d, int depth) {
  std::vector<Tensor> outer = special_;
  form("fold-in-fold");
  Tensor t = fold(s, d, depth);
  special_ = outer;
  return t;
}

Tensor Gen::effect_in_fold(const Shape& s, DType, int depth) {
  DType d = effect_dtype();
  Tensor side = target(s, d);
  Range R = new_range(range_extent(), true);
  form(range_axis(R.r) == AxisType::OUTER ? "effect-in-fold-outer" : "effect-in-fold-other");
  scope_.push_back(R);
  special_ = {side};
  Tensor h = expr(s, d, depth - 1);
  special_.clear();
  if (chance(0.75)) h = ensure_dep(h, s, d, R);
  Tensor val = chance(0.8) ? combine(side, h) : h;
  Tensor after = side.after({side.store(val).uop()});
  special_ = {after};
  Tensor g = expr(s, d, depth - 1);
  special_.clear();
  if (!mentions(g.uop(), after.uop())) g = combine(g, after);
  scope_.pop_back();
  return g.reduce({R.r}, rand_reduce_op(false));
}

// A target of n rows of shape s (n in 1..5) and a range over its rows, named as an OUTER scan or
// a parallel loop; nullopt when it would exceed max_elems.
std::optional<Gen::Rows> Gen::rows_target(const Shape& s, DType d, const char* outer_form, const char* parallel_form) {
  int64_t n = 1 + static_cast<int64_t>(pick(5));
  Shape big{n};
  big.insert(big.end(), s.begin(), s.end());
  if (numel(big) > o_.max_elems) return std::nullopt;
  Tensor t = target(big, d);
  Range R = new_range(n, true);
  form(range_axis(R.r) == AxisType::OUTER ? outer_form : parallel_form);
  return Rows{t, R, n};
}

Tensor Gen::scan(const Shape& s, DType, int depth) {
  DType d = effect_dtype();
  std::optional<Rows> rows = rows_target(s, d, "scan-store-outer", "scan-store-parallel");
  if (!rows) return expr(s, d, depth);
  auto [out, R, n] = *rows;
  UOp i = R.r;
  bool rev = chance(0.3);
  UOp prev_i = simplify((i - 1).maximum(0));
  UOp t_idx = rev ? simplify(UOp::index(n - 1) - i) : i;
  UOp p_idx = rev ? simplify(UOp::index(n - 1) - prev_i) : prev_i;
  scope_.push_back(R);
  Tensor init = expr(s, d, 1);
  Tensor src = chance(0.5) ? out : out.after({i});
  Tensor prev(i.eq(0).where(init.uop(), src.at({Dim(p_idx)}).uop()));
  special_ = {prev};
  Tensor comp = expr(s, d, depth);
  special_.clear();
  if (!mentions(comp.uop(), prev.uop())) comp = combine(comp, prev);
  scope_.pop_back();
  Tensor st = out.at({Dim(t_idx)}).store(comp).end({i});
  return out.after({st.uop()});
}

Tensor Gen::assign_form(const Shape& s, DType, int depth) {
  DType d = effect_dtype();
  uint64_t k = pick(100);
  if (k < 45) return assign_rows(s, d, depth);
  if (k < 65) return assign_overlap_window(s, d, depth);
  if (k < 85) return assign_overlap_whole(s, d, depth);
  if (k < 93) return assign_through_view(s, d, depth);
  if (k < 97) return assign_chain(s, d, depth);
  form("assign-plain");  // no range: evaluates the value (reading the old target), then writes
  Tensor tgt = target(s, d);
  special_ = {tgt};
  Tensor v = expr(s, d, depth);
  special_.clear();
  return Tensor(tgt.uop()).assign(v);
}

// x.assign(f(x)) 17 to 40 times, each value reading the ASSIGN before it: the interpreter runs
// it; the compiled tiers refuse it (one version of x per launch), after a lowering whose time
// grows like n^3 (2,000 assigns: minutes).
Tensor Gen::assign_chain(const Shape& s, DType d, int depth) {
  form("assign-chain");
  Tensor tgt = target(s, d);
  UOp last = tgt.uop();
  for (int i = 17 + static_cast<int>(pick(24)); i > 0; --i) {
    special_ = {Tensor(last)};
    Tensor v = combine(Tensor(last), expr(s, d, std::min(depth - 1, 1)));
    special_.clear();
    last = Tensor(tgt.uop()).assign(v).uop();
  }
  return Tensor(last);
}

// A plain assign to a view that is not a strided window of the buffer (SEMANTICS S5.1): tinygrad's
// setitem writes through a PAD (writes into the fill land nowhere) and through a RESHAPE of a
// permuted buffer (the elements renumbered row-major, not in memory order).
Tensor Gen::assign_through_view(const Shape& s, DType d, int depth) {
  std::vector<size_t> padable;
  for (size_t a = 0; a < s.size(); ++a)
    if (s[a] >= 2) padable.push_back(a);
  int64_t n = numel(s), p = 0;  // (p, n/p) transposed is (n/p, p): reshaped to s, renumbered
  for (int64_t f = 2; f * f <= n && !p; ++f)
    if (n % f == 0 && s != Shape{n / f, f}) p = f;
  std::optional<Tensor> view;
  if (!padable.empty() && (chance(0.5) || !p)) {
    form("assign-through-pad");
    size_t ax = padable[pick(padable.size())];
    int64_t lo = static_cast<int64_t>(pick(static_cast<uint64_t>(s[ax]))), hi = static_cast<int64_t>(pick(static_cast<uint64_t>(s[ax] - lo)));
    Shape inner = s;
    inner[ax] -= lo + hi;
    std::vector<std::optional<std::pair<Dim, Dim>>> w(s.size());
    w[ax] = std::make_pair(Dim(lo), Dim(hi));
    view = target(inner, d).pad(w);
  } else if (p) {
    form("assign-through-strided-reshape");
    view = target(Shape{p, n / p}, d).permute({1, 0}).reshape(dims(s));
  } else {
    form("assign-plain");
    view = target(s, d);
  }
  special_ = {*view};
  Tensor v = expr(s, d, depth);
  special_.clear();
  return view->assign(v);
}

// Iteration r contributes row r, reading rows r-1 (and r-2).
Tensor Gen::assign_rows(const Shape& s, DType d, int depth) {
  std::optional<Rows> rows = rows_target(s, d, "assign-scan-rows", "assign-rows-parallel");
  if (!rows) return expr(s, d, depth);
  auto [tgt, R, n] = *rows;
  UOp r = R.r;
  scope_.push_back(R);
  std::vector<Tensor> sp;
  if (chance(0.7)) {
    Tensor init = expr(s, d, 1);
    sp.push_back(Tensor(r.eq(0).where(init.uop(), tgt.at({Dim(simplify((r - 1).maximum(0)))}).uop())));
    if (chance(0.3)) {
      form("assign-read-two-back");
      sp.push_back(Tensor(r.lt(2).where(init.uop(), tgt.at({Dim(simplify((r - 2).maximum(0)))}).uop())));
    }
  }
  special_ = sp;
  Tensor f = expr(s, d, depth);
  special_.clear();
  if (!sp.empty() && !mentions(f.uop(), sp[0].uop())) f = combine(f, sp[0]);
  f = ensure_dep(f, s, d, R);
  scope_.pop_back();
  Shape one{1};
  one.insert(one.end(), s.begin(), s.end());
  std::vector<std::optional<std::pair<Dim, Dim>>> w(s.size() + 1);
  w[0] = std::make_pair(Dim(r), Dim(simplify(UOp::index(n - 1) - r)));
  Ops op = rand_reduce_op(true);
  return Tensor(tgt.uop()).assign(f.reshape(dims(one)).pad(w).reduce({r}, op));
}

// Overlapping windows: iteration r contributes rows r .. r+w-1.
Tensor Gen::assign_overlap_window(const Shape& s, DType d, int depth) {
  int64_t w = 1 + static_cast<int64_t>(pick(3)), n = 1 + static_cast<int64_t>(pick(4)), m = n + w - 1;
  Shape big{m}, win{w};
  big.insert(big.end(), s.begin(), s.end());
  win.insert(win.end(), s.begin(), s.end());
  if (numel(big) > o_.max_elems) return expr(s, d, depth);
  Tensor tgt = target(big, d);
  Range R = new_range(n, true);
  form("assign-overlap-window");
  scope_.push_back(R);
  special_ = {tgt.shrink(window_bounds(big.size(), R.r, w))};
  Tensor f = ensure_dep(expr(win, d, depth), win, d, R);
  special_.clear();
  scope_.pop_back();
  std::vector<std::optional<std::pair<Dim, Dim>>> pw(big.size());
  pw[0] = std::make_pair(Dim(R.r), Dim(simplify(UOp::index(n - 1) - R.r)));
  return Tensor(tgt.uop()).assign(f.pad(pw).reduce({R.r}, rand_reduce_op(true)));
}

// Whole-target contributions: every iteration adds to every element.
Tensor Gen::assign_overlap_whole(const Shape& s, DType d, int depth) {
  Tensor tgt = target(s, d);
  Range R = new_range(range_extent(), true);
  form("assign-overlap-whole");
  scope_.push_back(R);
  special_ = {tgt};
  Tensor f = ensure_dep(expr(s, d, depth), s, d, R);
  special_.clear();
  scope_.pop_back();
  return Tensor(tgt.uop()).assign(f.reduce({R.r}, rand_reduce_op(false)));
}

std::vector<std::optional<std::pair<Dim, Dim>>> Gen::window_bounds(size_t n, UOp r, int64_t w) {
  std::vector<std::optional<std::pair<Dim, Dim>>> b(n);
  b[0] = std::make_pair(Dim(r), Dim(simplify(r + w)));
  return b;
}

Tensor Gen::effect_then_expr(const Shape& s, DType d, int depth) {
  form("effect-then-expr");
  Tensor e = chance(0.5) ? assign_form(s, d, depth - 1) : (chance(0.5) ? scan(s, d, depth - 1) : fold(s, d, depth - 1));
  Shape es;
  for (UOp x : e.shape()) es.push_back(static_cast<int64_t>(x.const_value()));
  if (es != s) {
    if (es.size() == s.size() + 1 && es[0] >= 1) e = e.at({Dim(static_cast<int64_t>(pick(static_cast<uint64_t>(es[0]))))});
    else return e;
  }
  special_ = {e};
  Tensor t = expr(s, e.dtype(), depth);
  special_.clear();
  if (!mentions(t.uop(), e.uop())) t = combine(t, e);
  return t.cast(d);
}

}  // namespace ow::fuzz::detail
