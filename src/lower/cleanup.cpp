// Pass `cleanup`: forward-pass identities disappear and index math is simplified, so later
// passes see fewer op kinds.
#include <algorithm>

#include "lower/fuse_footprint.h"
#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower {

const PatternMatcher& view_rules() {
  static const PatternMatcher pm({
      // AFTER commutes with views, so reads of a buffer after its writes index the buffer itself.
      // (An AFTER that runs effects keeps its ranges: cleanup named them as dependencies first.)
      {"AFTER moves above a view", Pat::op(Ops::AFTER, {Pat::ops({Ops::RESHAPE, Ops::SHRINK, Ops::PERMUTE, Ops::FLIP, Ops::EXPAND, Ops::PAD}, "v")}).any_len(),
       [](const Match& m) {
         UOp v = m["v"];
         std::vector<UOp> deps(m.node->src.begin() + 1, m.node->src.end());
         std::vector<UOp> src = v->src;
         src[0] = v->src[0].after(deps);
         return UOp::make(v->op, v->dtype, src, v->arg);
       }},
  });
  return pm;
}

namespace {
UOp first_src(const Match& m) { return m.node->src[0]; }

// An AFTER runs its effects once per binding of its free ranges (SEMANTICS S5.4). Naming them
// as dependencies keeps that count when later rewrites simplify a range out of its sources
// (an empty reduction becomes a constant, r * 0 becomes 0).
UOp name_effect_ranges(const Match& m) {
  UOp a = m.node;
  if (!std::any_of(a->src.begin() + 1, a->src.end(), [](UOp d) { return runs_effect(d); })) return UOp();
  std::vector<UOp> src = a->src;
  for (UOp r : sorted_ranges(free_ranges(a)))
    if (std::find(src.begin() + 1, src.end(), r) == src.end()) src.push_back(r);
  return src.size() == a->src.size() ? UOp() : a.replace_src(src);
}

// AFTER(x, deps) orders x after the effects its deps run. A dependency that runs none orders
// nothing (tinygrad's assign to a non-buffer exports as AFTER(CONTIGUOUS(value), CONTIGUOUS(the
// old value))), and evaluating it matters only if it can fail: such dependencies are dropped,
// and kernels never see an AFTER of values (it reached lowering's loads as a BUFFERIZE).
bool cannot_fail(UOp dep) {
  for (UOp u : toposort(dep)) {
    Ops op = u->op;
    if (is_effect(op) || op == Ops::AFTER || op == Ops::REDUCE || op == Ops::GRADIENT || op == Ops::INDEX || op == Ops::SHRINK) return false;
    if (may_trap(u)) return false;
  }
  return true;
}

UOp drop_pure_dependencies(const Match& m) {
  UOp a = m.node;
  std::vector<UOp> src{a->src[0]};
  for (size_t i = 1; i < a->src.size(); ++i)
    if (a->src[i]->op == Ops::RANGE || !cannot_fail(a->src[i])) src.push_back(a->src[i]);
  if (src.size() == a->src.size()) return UOp();
  return src.size() == 1 ? a->src[0] : a.replace_src(src);
}

// REDUCE(f(r, REDUCE(g(r), r)), r) is a fine value (the inner REDUCE binds its own r, S3), but a
// host loop and a kernel loop have one variable per range: the inner one gets a fresh range.
// Rewrites run children first, so an inner REDUCE holds no deeper rebinding of r and renaming
// every r in it is exact. (One that runs effects is left alone: a renamed copy would run them
// apart from the original.)
UOp rename_shadowed_ranges(const Match& m) {
  UOp outer = m.node;
  std::vector<UOp> ranges(outer->src.begin() + 1, outer->src.end());
  std::vector<std::pair<UOp, UOp>> renamed;
  for (UOp u : toposort(outer->src[0])) {
    if (u->op != Ops::REDUCE) continue;
    std::vector<std::pair<UOp, UOp>> fresh;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (std::find(ranges.begin(), ranges.end(), u->src[i]) != ranges.end())
        fresh.push_back({u->src[i], m.context<Context>().fresh_range(u->src[i]->src[0], range_axis(u->src[i]))});
    if (fresh.empty()) continue;
    std::vector<UOp> inside = toposort(u);
    if (std::any_of(inside.begin(), inside.end(), [](UOp n) { return is_effect(n->op); })) continue;
    renamed.push_back({u, substitute(u, fresh)});
  }
  return renamed.empty() ? UOp() : outer.replace_src([&] {
    std::vector<UOp> src = outer->src;
    src[0] = substitute(src[0], renamed);
    return src;
  }());
}

const PatternMatcher& cleanup_rules() {
  static const PatternMatcher pm = PatternMatcher({
      {"a REDUCE inside a REDUCE over the same range gets a range of its own", Pat::ops({Ops::REDUCE}), rename_shadowed_ranges},
      {"an AFTER's dependencies that run no effect and cannot fail are dropped", Pat::ops({Ops::AFTER}), drop_pure_dependencies},
      {"DETACH is the identity", Pat::ops({Ops::DETACH}), first_src},
      {"CONTIGUOUS_BACKWARD is the identity", Pat::ops({Ops::CONTIGUOUS_BACKWARD}), first_src},
      {"REDUCE_BACKWARD is the identity forward", Pat::ops({Ops::REDUCE_BACKWARD}), first_src},
      {"a bound variable is its value", Pat::ops({Ops::BIND}), [](const Match& m) { return m.node->src[1]; }},
      {"reshape of a reshape", Pat::op(Ops::RESHAPE, {Pat::op(Ops::RESHAPE, {Pat::var("x")}).any_len()}).any_len(),
       [](const Match& m) {
         std::vector<UOp> src{m["x"]};
         src.insert(src.end(), m.node->src.begin() + 1, m.node->src.end());
         return UOp::make(Ops::RESHAPE, m.node->dtype, src);
       }},
      {"reshape to the same shape", Pat::ops({Ops::RESHAPE}),
       [](const Match& m) {
         UOp x = m.node->src[0];
         return is_shaped(x) && dims_of(x) == dims_of(m.node) ? x : UOp();
       }},
  }) + view_rules() + symbolic_rules();
  return pm;
}
}  // namespace

UOp cleanup(UOp root, Context& ctx) {
  // Ranges are named first, from the top, before any simplification below an AFTER.
  static const PatternMatcher naming({{"an AFTER that runs effects names its ranges", Pat::ops({Ops::AFTER}), name_effect_ranges}});
  root = rewrite(root, naming, ctx, "cleanup", /*parents_first=*/true);
  return rewrite(root, cleanup_rules(), ctx, "cleanup");
}

}  // namespace ow::lower
