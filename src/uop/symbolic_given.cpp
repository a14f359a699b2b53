// simplify_given: index math simplified under a condition that holds wherever its value is used
// (a gated read's index). Split from symbolic.cpp, whose rules it runs.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "uop/symbolic.h"

namespace ow {

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

}  // namespace

namespace {

// Pure integer index math: constants, ranges, variables and integer ALU ops over them.
bool is_index_math(UOp e) {
  for (UOp u : toposort(e)) {
    bool leaf = u->op == Ops::CONST || u->op == Ops::RANGE || u->op == Ops::DEFINE_VAR || u->op == Ops::SPECIAL;
    if (!intlike(u->dtype) || (!leaf && !is_alu(u->op))) return false;
  }
  return true;
}

using Interval = std::pair<int64_t, int64_t>;

void narrow(std::vector<std::pair<UOp, Interval>>& out, UOp x, int64_t lo, int64_t hi) {
  auto it = std::find_if(out.begin(), out.end(), [&](auto& b) { return b.first == x; });
  if (it == out.end()) it = out.insert(out.end(), {x, {x.vmin(), x.vmax()}});
  it->second = {std::max(it->second.first, lo), std::min(it->second.second, hi)};
}

// The bounds a bool condition implies for the integer nodes it compares: the clauses of an AND
// tree of the forms a < b (a <= b.vmax - 1 and b >= a.vmin + 1) and a != c at an end of a's range.
std::vector<std::pair<UOp, Interval>> implied_bounds(UOp cond) {
  std::vector<std::pair<UOp, Interval>> out;
  std::vector<UOp> stack{cond};
  while (!stack.empty()) {
    UOp c = stack.back();
    stack.pop_back();
    if (c->op == Ops::AND && c->dtype.is_bool()) {
      stack.insert(stack.end(), c->src.begin(), c->src.end());
      continue;
    }
    if (c->src.size() != 2 || !intlike(c->src[0]->dtype) || c->src[0]->dtype.is_bool()) continue;
    UOp a = c->src[0], b = c->src[1];
    if (c->op == Ops::CMPLT && b.vmax() > kMin && a.vmin() < kMax) {
      if (a->op != Ops::CONST) narrow(out, a, kMin, b.vmax() - 1);
      if (b->op != Ops::CONST) narrow(out, b, a.vmin() + 1, kMax);
    } else if (c->op == Ops::CMPNE && b->op == Ops::CONST && a->op != Ops::CONST) {
      if (b.vmin() == a.vmin()) narrow(out, a, a.vmin() + 1, kMax);
      if (b.vmin() == a.vmax()) narrow(out, a, kMin, a.vmax() - 1);
    }
  }
  return out;
}

}  // namespace

UOp simplify_given(UOp expr, UOp cond) {
  if (!cond || !is_index_math(expr) || !is_index_math(cond)) return simplify(expr);
  std::vector<std::pair<UOp, UOp>> in, back;  // node -> stand-in with its narrowed bounds, and back
  for (auto& [x, b] : implied_bounds(cond)) {
    auto [lo, hi] = b;
    if (lo > hi) return simplify(expr);  // never true: any value does, keep this one
    if (lo == x.vmin() && hi == x.vmax()) continue;
    if (lo == hi) {
      in.push_back({x, UOp::int_const(x->dtype, lo)});
      continue;
    }
    UOp v = UOp::variable("given." + std::to_string(x->serial), lo, hi, x->dtype);
    in.push_back({x, v});
    back.push_back({v, x});
  }
  if (in.empty()) return simplify(expr);
  return substitute(simplify(substitute(expr, in)), back);
}

}  // namespace ow
