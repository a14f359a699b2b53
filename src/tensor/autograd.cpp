// Reverse-mode autodiff over UOp graphs: one rule per op, applied from the root down.
//
// Ranges make one twist: a node used under a range r gets one gradient contribution per
// binding of r. When a contribution mentions a range that its source does not depend on, the
// contributions of all bindings are summed (REDUCE over r) before they are added to the
// source's gradient. That is the true derivative, and no free range is ever left behind.
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "tensor/tensor.h"
#include "uop/error.h"
#include "uop/verify.h"

namespace ow {

namespace {

using Grads = std::vector<std::optional<Tensor>>;

Tensor src(UOp u, size_t i) { return Tensor(u->src[i]); }

Dims dims_of(const Tensor& t) {
  Dims d;
  for (UOp x : t.shape()) d.push_back(x);
  return d;
}

Grads movement_grad(UOp ret, const Tensor& g) {
  Tensor x = src(ret, 0);
  Grads out(ret->src.size());
  std::vector<UOp> xs = x.shape();
  switch (ret->op) {
    case Ops::RESHAPE: out[0] = g.reshape(dims_of(x)); break;
    case Ops::PERMUTE: {
      const ArgTuple& p = *ret->arg.tuple();
      std::vector<int64_t> inv(p.size());
      for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i].as<int64_t>())] = static_cast<int64_t>(i);
      out[0] = g.permute(inv);
      break;
    }
    case Ops::FLIP: {
      std::vector<int64_t> axes;
      const ArgTuple& f = *ret->arg.tuple();
      for (size_t i = 0; i < f.size(); ++i)
        if (f[i].as<bool>()) axes.push_back(static_cast<int64_t>(i));
      out[0] = g.flip(axes);
      break;
    }
    case Ops::PAD: {  // the gradient of a pad is the window it padded
      std::vector<std::optional<std::pair<Dim, Dim>>> b;
      for (size_t i = 0; i < xs.size(); ++i) b.push_back(std::make_pair(Dim(ret->src[1 + 2 * i]), Dim(ret->src[1 + 2 * i] + xs[i])));
      out[0] = g.shrink(b);
      break;
    }
    case Ops::SHRINK: {  // ... and of a shrink, the pad back to full size
      std::vector<std::optional<std::pair<Dim, Dim>>> w;
      for (size_t i = 0; i < xs.size(); ++i) w.push_back(std::make_pair(Dim(ret->src[1 + 2 * i]), Dim(xs[i] - ret->src[2 + 2 * i])));
      out[0] = g.pad(w);
      break;
    }
    default: {  // EXPAND: sum over broadcast axes; a collected range axis un-collects to row r
      std::vector<UOp> free = free_ranges(x.uop());
      std::vector<int64_t> summed;
      std::vector<std::optional<std::pair<Dim, Dim>>> pick(xs.size());
      for (size_t i = 0; i < xs.size(); ++i) {
        UOp d = ret->src[1 + i];
        if (d->op == Ops::RANGE && std::find(free.begin(), free.end(), d) != free.end()) pick[i] = std::make_pair(Dim(d), Dim(d + 1));
        else if (d != xs[i]) summed.push_back(static_cast<int64_t>(i));
      }
      Tensor r = summed.empty() ? g : g.sum(summed, true);
      out[0] = r.shrink(pick);
    }
  }
  return out;
}

Grads reduce_grad(UOp ret, const Tensor& g) {
  Tensor x = src(ret, 0), r(ret);
  Grads out(ret->src.size());
  std::vector<UOp> ranges(ret->src.begin() + 1, ret->src.end());
  Ops op = ret->arg.as<Ops>();
  if (op == Ops::ADD) out[0] = g;
  else if (op == Ops::MUL) out[0] = g * r / x;
  else {  // MAX: split the gradient evenly among the positions that attain the max
    Tensor hit = x.eq(r).cast(x.dtype());
    Tensor count = hit.reduce(ranges, Ops::ADD);
    out[0] = hit * g / count;
  }
  return out;
}

Grads reduce_axis_grad(UOp ret, const Tensor& g) {
  Tensor x = src(ret, 0);
  Ops op = ret->arg.tuple()->at(0).as<Ops>();
  std::vector<int64_t> axes;
  for (const Arg& a : *ret->arg.tuple()->at(1).tuple()) axes.push_back(a.as<int64_t>());
  if (op == Ops::ADD) return {g.expand(dims_of(x))};
  if (op == Ops::MAX) {
    Tensor hit = x.eq(Tensor(ret).expand(dims_of(x))).cast(x.dtype());
    Tensor count = hit.sum(axes, true);
    return {hit * (g / count).expand(dims_of(x))};
  }
  throw Error("no gradient rule for REDUCE_AXIS over MUL");
}

Grads rule(UOp ret, const Tensor& g) {
  Ops op = ret->op;
  auto s = [&](size_t i) { return src(ret, i); };
  const double ln2 = std::log(2.0);
  switch (op) {
    case Ops::ADD: return {g, g};
    case Ops::SUB: return {g, -g};
    case Ops::MUL: return {g * s(1), g * s(0)};
    case Ops::FDIV: return {g / s(1), -g * s(0) / (s(1) * s(1))};
    case Ops::NEG: return {-g};
    case Ops::MAX: {  // ties share the gradient equally, as in tinygrad
      Tensor a = s(0), b = s(1), zero = Tensor(UOp::cnst(g.dtype(), 0));
      return {a.gt(b).where(g, a.eq(b).where(g * 0.5, zero)), b.gt(a).where(g, a.eq(b).where(g * 0.5, zero))};
    }
    case Ops::WHERE: {
      Tensor zero(UOp::cnst(g.dtype(), 0));
      return {std::nullopt, s(0).where(g, zero), s(0).where(zero, g)};
    }
    case Ops::RECIPROCAL: return {-g * Tensor(ret) * Tensor(ret)};
    case Ops::SQRT: return {g / (Tensor(ret) * 2.0)};
    case Ops::EXP2: return {g * Tensor(ret) * ln2};
    case Ops::LOG2: return {g / (s(0) * ln2)};
    case Ops::SIN: return {g * Tensor(((s(0) * -1.0) + M_PI / 2).uop().alu(Ops::SIN, {}))};
    case Ops::CAST: return {g.cast(ret->src[0]->dtype)};
    case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: return Grads(ret->src.size());
    case Ops::CONTIGUOUS: return {g};
    case Ops::CONTIGUOUS_BACKWARD: return {g.contiguous()};
    case Ops::DETACH: return {std::nullopt};
    case Ops::REDUCE: return reduce_grad(ret, g);
    case Ops::REDUCE_BACKWARD: {  // identity forward; backward sums over the marked ranges
      Grads out(ret->src.size());
      out[0] = g.reduce(std::vector<UOp>(ret->src.begin() + 1, ret->src.end()), ret->arg.as<Ops>());
      return out;
    }
    case Ops::REDUCE_AXIS: return reduce_axis_grad(ret, g);
    default:
      if (is_movement(op)) return movement_grad(ret, g);
      throw Error("no gradient rule for " + std::string(op_name(op)));
  }
}

}  // namespace

std::vector<UOp> compute_gradient(UOp root, UOp root_grad, const std::vector<UOp>& targets) {
  std::vector<UOp> topo = toposort(root);
  std::unordered_set<const UOpNode*> on_path;  // nodes through which a target reaches the root
  for (UOp t : targets) on_path.insert(t.get());
  for (UOp u : topo)
    for (UOp s : u->src)
      if (on_path.count(s.get())) on_path.insert(u.get());
  std::unordered_map<const UOpNode*, UOp> grads{{root.get(), root_grad}};
  std::unordered_map<const UOpNode*, std::vector<UOp>> free;
  auto free_of = [&](UOp u) -> const std::vector<UOp>& {
    auto it = free.find(u.get());
    return it != free.end() ? it->second : free.emplace(u.get(), free_ranges(u)).first->second;
  };
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    UOp u = *it;
    auto g = grads.find(u.get());
    if (g == grads.end() || !on_path.count(u.get()) || u->src.empty()) continue;
    Grads sg = rule(u, Tensor(g->second));
    for (size_t i = 0; i < sg.size() && i < u->src.size(); ++i) {
      UOp s = u->src[i];
      if (!sg[i] || !on_path.count(s.get())) continue;
      Tensor c = *sg[i];
      std::vector<UOp> extra;
      for (UOp r : free_ranges(c.uop()))
        if (std::find(free_of(s).begin(), free_of(s).end(), r) == free_of(s).end()) extra.push_back(r);
      if (!extra.empty()) c = c.reduce(extra, Ops::ADD);
      auto prev = grads.find(s.get());
      grads[s.get()] = prev == grads.end() ? c.uop() : (Tensor(prev->second) + c).uop();
    }
  }
  std::vector<UOp> out;
  for (UOp t : targets) {
    auto it = grads.find(t.get());
    out.push_back(it == grads.end() ? UOp() : it->second);
  }
  return out;
}

}  // namespace ow
