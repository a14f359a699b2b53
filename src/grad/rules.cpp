// Reverse mode over a graph of values: one rule per op, applied from the root down.
//
// Ranges make one twist: a node used under a range r gets one gradient contribution per
// binding of r. When its user depends on a range, or folds over one (REDUCE), that the source
// does not depend on (or the contribution mentions one), the contributions of all bindings are
// summed (REDUCE over r) before they are added to the source's gradient. That is the true
// derivative, and no free range is ever left behind (S9.2).
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "grad/build.h"
#include "grad/gradient.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::grad {

namespace {

using Grads = std::vector<UOp>;  // per source; null: no gradient

std::vector<int64_t> axes_of(UOp reduce_axis) {
  std::vector<int64_t> axes;
  for (const Arg& a : *reduce_axis->arg.tuple()->at(1).tuple()) axes.push_back(a.as<int64_t>());
  return axes;
}

// The gradient of a shrink is the pad back to full size. On an axis that collects range r
// (size r, whether or not the values depend on r), the only window is row r, and its adjoint
// is collecting again: EXPAND to r.
UOp shrink_grad(UOp ret, UOp g, const std::vector<UOp>& xs) {
  std::vector<std::pair<UOp, UOp>> w;
  bool collects = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    UOp b = ret->src[1 + 2 * i], e = ret->src[2 + 2 * i];
    bool range_axis = xs[i]->op == Ops::RANGE;
    if (range_axis && (simplify(b) != xs[i] || simplify(e) != simplify(xs[i] + 1)))
      throw NotDifferentiable(NotDifferentiable::Reason::CollectedWindow, "a SHRINK of an axis that collects range " + range_name(xs[i]) + " to a window other than its own row (at " +
                              number_graph(ret).line(ret) + ")");
    w.push_back(range_axis ? std::make_pair(UOp::index(0), UOp::index(0)) : std::make_pair(b, xs[i] - e));
    collects = collects || range_axis;
  }
  UOp padded = pad(g, w);
  if (!collects) return padded;
  std::vector<UOp> full = dims_of(padded);
  for (size_t i = 0; i < xs.size(); ++i) if (xs[i]->op == Ops::RANGE) full[i] = xs[i];
  return expand(padded, full);
}

Grads movement_grad(UOp ret, UOp g, const std::vector<UOp>& x_free) {
  UOp x = ret->src[0];
  std::vector<UOp> xs = dims_of(x);
  Grads out(ret->src.size());
  switch (ret->op) {
    case Ops::RESHAPE: out[0] = reshape(g, xs); break;
    case Ops::PERMUTE: {
      const ArgTuple& p = *ret->arg.tuple();
      std::vector<int64_t> inv(p.size());
      for (size_t i = 0; i < p.size(); ++i) inv[static_cast<size_t>(p[i].as<int64_t>())] = static_cast<int64_t>(i);
      out[0] = permute(g, inv);
      break;
    }
    case Ops::FLIP: {
      std::vector<bool> axes;
      for (const Arg& a : *ret->arg.tuple()) axes.push_back(a.as<bool>());
      out[0] = flip(g, axes);
      break;
    }
    case Ops::PAD: {  // the gradient of a pad is the window it padded
      std::vector<std::pair<UOp, UOp>> b;
      for (size_t i = 0; i < xs.size(); ++i) b.push_back({ret->src[1 + 2 * i], ret->src[1 + 2 * i] + xs[i]});
      out[0] = shrink(g, b);
      break;
    }
    case Ops::SHRINK: out[0] = shrink_grad(ret, g, xs); break;
    default: {  // EXPAND: sum over broadcast axes; a collected range axis un-collects to row r
      std::vector<int64_t> summed;
      std::vector<bool> collected;
      for (size_t i = 0; i < xs.size(); ++i) {
        UOp d = ret->src[1 + i];
        collected.push_back(d->op == Ops::RANGE && std::find(x_free.begin(), x_free.end(), d) != x_free.end());
        if (!collected.back() && d != xs[i]) summed.push_back(static_cast<int64_t>(i));
      }
      UOp r = sum(g, summed);
      std::vector<std::pair<UOp, UOp>> pick;
      for (size_t i = 0; i < xs.size(); ++i)
        pick.push_back(collected[i] ? std::make_pair(ret->src[1 + i], ret->src[1 + i] + 1) : std::make_pair(UOp::index(0), dims_of(r)[i]));
      out[0] = shrink(r, pick);
    }
  }
  return out;
}

Grads reduce_grad(UOp ret, UOp g) {
  UOp x = ret->src[0];
  Grads out(ret->src.size());
  std::vector<UOp> ranges(ret->src.begin() + 1, ret->src.end());
  Ops op = ret->arg.as<Ops>();
  if (op == Ops::ADD) out[0] = g;
  else if (op == Ops::MUL) out[0] = alu(Ops::FDIV, mul(g, ret), x);
  else {  // MAX: split evenly among the positions that attain the max (as tinygrad does)
    UOp hit = cast(alu(Ops::CMPEQ, x, ret), x->dtype);
    out[0] = mul(hit, alu(Ops::FDIV, g, hit.reduce(ranges, Ops::ADD)));
  }
  return out;
}

Grads reduce_axis_grad(UOp ret, UOp g) {
  UOp x = ret->src[0];
  Ops op = reduce_op(ret);
  std::vector<UOp> xs = dims_of(x);
  if (op == Ops::ADD) return {expand(g, xs)};
  if (op == Ops::MUL) return {alu(Ops::FDIV, mul(expand(g, xs), expand(ret, xs)), x)};
  UOp hit = cast(alu(Ops::CMPEQ, x, expand(ret, xs)), x->dtype);
  return {mul(hit, expand(alu(Ops::FDIV, g, sum(hit, axes_of(ret))), xs))};
}

// The ranges a node gives its sources one contribution per binding of: those it depends on, and
// those a REDUCE folds over (REDUCE(x, r) with x free of r folds x once per binding, none for an
// empty r); not those REDUCE_BACKWARD marks (its rule sums over them itself).
std::vector<UOp> contribution_ranges(UOp u, const std::vector<UOp>& u_free) {
  std::vector<UOp> out;
  std::vector<UOp> own(u->src.begin() + 1, u->src.end());
  for (UOp r : u_free)
    if (u->op != Ops::REDUCE_BACKWARD || std::find(own.begin(), own.end(), r) == own.end()) out.push_back(r);
  if (u->op == Ops::REDUCE) out.insert(out.end(), own.begin(), own.end());
  return out;
}

Grads rule(UOp ret, UOp g, const std::vector<UOp>& x_free) {
  auto s = [&](size_t i) { return ret->src[i]; };
  auto k = [&](double v) { return cnst(g->dtype, v); };
  const double ln2 = std::log(2.0);
  switch (ret->op) {
    case Ops::ADD: return {g, g};
    case Ops::SUB: return {g, g.neg()};
    case Ops::MUL: return {mul(g, s(1)), mul(g, s(0))};
    case Ops::FDIV: return {alu(Ops::FDIV, g, s(1)), alu(Ops::FDIV, mul(g.neg(), s(0)), mul(s(1), s(1)))};
    case Ops::NEG: return {g.neg()};
    case Ops::MAX: {  // ties share the gradient equally, as in tinygrad
      UOp a = s(0), b = s(1), zero = zeros_like(g), half = mul(g, k(0.5));
      UOp tie = alu(Ops::CMPEQ, a, b);
      return {where(alu(Ops::CMPLT, b, a), g, where(tie, half, zero)), where(alu(Ops::CMPLT, a, b), g, where(tie, half, zero))};
    }
    case Ops::WHERE: return {UOp(), where(s(0), g, zeros_like(g)), where(s(0), zeros_like(g), g)};
    case Ops::RECIPROCAL: return {mul(g.neg(), mul(ret, ret))};
    case Ops::SQRT: return {alu(Ops::FDIV, g, mul(ret, k(2.0)))};
    case Ops::EXP2: return {mul(mul(g, ret), k(ln2))};
    case Ops::LOG2: return {alu(Ops::FDIV, g, mul(s(0), k(ln2)))};
    case Ops::SIN: return {mul(g, add(s(0).neg(), k(M_PI / 2)).alu(Ops::SIN, {}))};
    case Ops::POW: {  // d a^b = b a^(b-1) da + a^b ln(a) db
      UOp a = s(0), b = s(1);
      return {mul(g, mul(b, alu(Ops::POW, a, add(b, k(-1.0))))), mul(g, mul(ret, mul(a.alu(Ops::LOG2, {}), k(ln2))))};
    }
    case Ops::CAST: return {cast(g, s(0)->dtype)};
    case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: return Grads(ret->src.size());
    case Ops::CONTIGUOUS: case Ops::CONTIGUOUS_BACKWARD: case Ops::AFTER: {
      Grads out(ret->src.size());
      out[0] = g;  // an AFTER's value is its source's, read after its dependencies
      return out;
    }
    case Ops::ASSIGN: {  // as a value, the target right after the write: the value written
      Grads out(ret->src.size());
      out[1] = g;
      return out;
    }
    case Ops::DETACH: return {UOp()};
    case Ops::REDUCE: return reduce_grad(ret, g);
    case Ops::REDUCE_BACKWARD: {  // identity forward; backward sums over the marked ranges
      Grads out(ret->src.size());
      out[0] = g.reduce(std::vector<UOp>(ret->src.begin() + 1, ret->src.end()), ret->arg.as<Ops>());
      return out;
    }
    case Ops::REDUCE_AXIS: return reduce_axis_grad(ret, g);
    default:
      if (is_movement(ret->op)) return movement_grad(ret, g, x_free);
      throw NotDifferentiable(NotDifferentiable::Reason::NoRule, "no rule for " + std::string(op_name(ret->op)) + " (it is not differentiable here)");
  }
}

}  // namespace

std::vector<UOp> reverse(UOp root, UOp root_grad, const std::vector<UOp>& leaves, const std::function<bool(UOp)>& stop) {
  std::vector<UOp> topo = toposort(root);
  std::unordered_set<const UOpNode*> on_path;  // nodes through which a leaf reaches the root
  for (UOp t : leaves) on_path.insert(t.get());
  for (UOp u : topo)
    if (!(stop && stop(u)))
      for (UOp s : u->src)
        if (on_path.count(s.get())) on_path.insert(u.get());
  std::unordered_map<const UOpNode*, UOp> grads{{root.get(), root_grad}};
  std::unordered_map<const UOpNode*, std::vector<UOp>> free;
  auto free_of = [&](UOp u) -> const std::vector<UOp>& {
    auto it = free.find(u.get());
    return it != free.end() ? it->second : free.emplace(u.get(), free_ranges(u)).first->second;
  };
  std::vector<UOp> bound = free_ranges(root);  // the gradient is one per binding of these
  for (UOp r : free_ranges(root_grad)) bound.push_back(r);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    UOp u = *it;
    auto g = grads.find(u.get());
    if (g == grads.end() || !on_path.count(u.get()) || u->src.empty() || (stop && stop(u))) continue;
    Grads sg = rule(u, g->second, u->src.empty() ? std::vector<UOp>{} : free_of(u->src[0]));
    for (size_t i = 0; i < sg.size() && i < u->src.size(); ++i) {
      UOp s = u->src[i];
      if (!sg[i] || !on_path.count(s.get())) continue;
      if (!shaped(s)) throw NotDifferentiable(NotDifferentiable::Reason::UnshapedValue, "the value flows through an unshaped " + std::string(op_name(s->op)) + ", which has no gradient");
      // One contribution per binding of u's ranges (and of any the contribution mentions): summed
      // over those s does not depend on, even where the contribution itself happens not to
      // mention them (a bound simplified away: then each binding adds the same amount).
      UOp c = sg[i];
      std::vector<UOp> extra;
      auto add_extra = [&](UOp r) {
        if (!has_free_range(s, r) && std::find(bound.begin(), bound.end(), r) == bound.end() &&
            std::find(extra.begin(), extra.end(), r) == extra.end())
          extra.push_back(r);
      };
      for (UOp r : contribution_ranges(u, free_of(u))) add_extra(r);
      for (UOp r : free_ranges(c)) add_extra(r);
      if (!extra.empty()) c = c.reduce(extra, Ops::ADD);
      auto prev = grads.find(s.get());
      grads[s.get()] = prev == grads.end() ? c : add(prev->second, c);
    }
  }
  std::vector<UOp> out;
  for (UOp t : leaves) {
    auto it = grads.find(t.get());
    out.push_back(it == grads.end() ? UOp() : it->second);
  }
  return out;
}

}  // namespace ow::grad
