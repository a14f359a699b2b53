#include "grad/build.h"

#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"

namespace ow::grad {

namespace {
// A node whose shape inference failed is a bug of the transformation, not of the user's graph.
UOp checked(UOp u) {
  if (u->shape.kind == ShapeInfo::Kind::Invalid) throw InternalError("gradient: built an invalid " + std::string(op_name(u->op)) + ": " + u->shape.error);
  return u;
}

UOp movement(Ops op, UOp x, const std::vector<UOp>& sizes, Arg arg = {}) {
  std::vector<UOp> src{x};
  for (UOp s : sizes) src.push_back(simplify(s));
  return checked(UOp::make(op, x->dtype, src, std::move(arg)));
}
}  // namespace

bool shaped(UOp u) { return u->shape.kind == ShapeInfo::Kind::Shaped; }
std::vector<UOp> dims_of(UOp u) { return shaped(u) ? u->shape.dims : std::vector<UOp>{}; }

UOp reshape(UOp x, const std::vector<UOp>& dims) {
  if (shaped(x) && dims_of(x) == dims) return x;
  return movement(Ops::RESHAPE, x, dims);
}

UOp expand(UOp x, const std::vector<UOp>& dims) {
  if (dims_of(x) == dims) return x;
  return movement(Ops::EXPAND, x, dims);
}

UOp permute(UOp x, const std::vector<int64_t>& order) {
  ArgTuple a;
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) {
    a.emplace_back(order[i]);
    identity = identity && order[i] == static_cast<int64_t>(i);
  }
  return identity ? x : movement(Ops::PERMUTE, x, {}, Arg(a));
}

UOp flip(UOp x, const std::vector<bool>& axes) {
  ArgTuple a;
  for (bool f : axes) a.emplace_back(f);
  return movement(Ops::FLIP, x, {}, Arg(a));
}

UOp pad(UOp x, const std::vector<std::pair<UOp, UOp>>& widths) {
  std::vector<UOp> w;
  for (auto& [b, e] : widths) w.insert(w.end(), {b, e});
  return movement(Ops::PAD, x, w);
}

UOp shrink(UOp x, const std::vector<std::pair<UOp, UOp>>& bounds) {
  std::vector<UOp> b;
  bool whole = true;
  std::vector<UOp> d = dims_of(x);
  for (size_t i = 0; i < bounds.size(); ++i) {
    b.insert(b.end(), {bounds[i].first, bounds[i].second});
    whole = whole && simplify(bounds[i].first) == UOp::index(0) && simplify(bounds[i].second) == d[i];
  }
  return whole ? x : movement(Ops::SHRINK, x, b);
}

UOp sum(UOp x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  ArgTuple at;
  for (int64_t a : axes) at.emplace_back(a);
  return checked(UOp::make(Ops::REDUCE_AXIS, x->dtype, {x}, Arg(ArgTuple{Arg(Ops::ADD), Arg(at)})));
}

UOp cnst(DType dt, double v) { return UOp::cnst(dt, v); }
UOp full(const std::vector<UOp>& dims, DType dt, double v) { return dims.empty() ? reshape(cnst(dt, v), {}) : checked(broadcast(cnst(dt, v), dims)); }
UOp zeros_like(UOp x) { return full(dims_of(x), x->dtype, 0.0); }
UOp ones_like(UOp x) { return full(dims_of(x), x->dtype, 1.0); }
UOp alu(Ops op, UOp a, UOp b) { return checked(UOp::make(op, is_comparison(op) ? dtypes::bool_ : a->dtype, {a, b})); }
UOp add(UOp a, UOp b) { return alu(Ops::ADD, a, b); }
UOp mul(UOp a, UOp b) { return alu(Ops::MUL, a, b); }
UOp where(UOp c, UOp t, UOp f) { return checked(UOp::make(Ops::WHERE, t->dtype, {c, t, f})); }
UOp cast(UOp x, DType d) { return x->dtype == d ? x : checked(x.cast(d)); }

UOp view(UOp buffer, const std::vector<UOp>& dims) { return movement(Ops::RESHAPE, buffer, dims); }

UOp slot(UOp buffer, const std::vector<UOp>& extents, const std::vector<UOp>& at, const std::vector<UOp>& dims) {
  std::vector<UOp> all = extents;
  all.insert(all.end(), dims.begin(), dims.end());
  UOp v = view(buffer, all);
  std::vector<std::pair<UOp, UOp>> b;
  for (size_t i = 0; i < all.size(); ++i) b.push_back(i < at.size() ? std::make_pair(at[i], at[i] + 1) : std::make_pair(UOp::index(0), all[i]));
  return reshape(shrink(v, b), dims);
}

}  // namespace ow::grad
