// Pass `cleanup`: forward-pass identities disappear and index math is simplified, so later
// passes see fewer op kinds.
#include <algorithm>

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

const PatternMatcher& cleanup_rules() {
  static const PatternMatcher pm = PatternMatcher({
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
