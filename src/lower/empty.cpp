// Pass `empty`: tensors with no elements (a dimension of size 0) and loops that never run are
// settled before anything is lowered, so later passes never see a zero-sized buffer, an index
// over an empty dimension or a fold over nothing. Nothing here changes a defined value:
//  - an empty value has no element anyone can read: any value of that shape will do, so it
//    becomes zeros (a broadcast CONST), and whatever it read is no longer evaluated — unless
//    that includes an effect, which must still run (those stay, and are refused below);
//  - a reduction over nothing is its identity (SEMANTICS S3: a fold starts from it), and a pad
//    of nothing is all fill (so no later pass makes an empty box of it);
//  - a store into an empty target, and an END over a range with no values, do nothing.
// What is still empty afterwards (an effect that reaches an empty value) is refused up front.
#include <algorithm>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/shape.h"

namespace ow::lower {

namespace {

bool is_empty_dim(UOp d) { return d->op == Ops::CONST && d.const_value() == 0; }
bool has_empty_dim(UOp u) { return is_shaped(u) && std::any_of(u->shape.dims.begin(), u->shape.dims.end(), is_empty_dim); }

UOp nothing() { return UOp::make(Ops::GROUP, dtypes::void_, {}); }
bool is_nothing(UOp u) { return u->op == Ops::GROUP && u->src.empty(); }

bool is_broadcast_const(UOp u) {
  while (u->op == Ops::EXPAND || u->op == Ops::RESHAPE) u = u->src[0];
  return u->op == Ops::CONST;
}

UOp empty_value_is_zeros(const Match& m) {
  UOp u = m.node;
  if (u->dtype.is_void() || u->op == Ops::BUFFER || is_effect(u->op)) return UOp();
  if (!has_empty_dim(u) || is_broadcast_const(u) || runs_effect(u)) return UOp();
  return broadcast(UOp::cnst(u->dtype, 0), u->shape.dims);
}

UOp reduce_axis_over_nothing(const Match& m) {
  UOp u = m.node, src = u->src[0];
  if (has_empty_dim(u) || !has_empty_dim(src) || runs_effect(src)) return UOp();
  return broadcast(reduce_identity(reduce_op(u), u->dtype), u->shape.dims);
}

UOp pad_of_nothing(const Match& m) {
  UOp u = m.node;
  if (has_empty_dim(u) || !has_empty_dim(u->src[0]) || runs_effect(u->src[0])) return UOp();
  return broadcast(UOp::cnst(u->dtype, 0), u->shape.dims);
}

bool any_range_without_values(UOp u) {
  return std::any_of(u->src.begin() + 1, u->src.end(), [](UOp r) { return r->op == Ops::RANGE && is_empty_dim(r->src[0]); });
}

UOp reduce_over_nothing(const Match& m) {
  UOp u = m.node;
  if (!any_range_without_values(u)) return UOp();
  UOp identity = reduce_identity(u->arg.as<Ops>(), u->dtype);
  return is_shaped(u) ? broadcast(identity, u->shape.dims) : identity;
}

UOp end_over_nothing(const Match& m) {
  return any_range_without_values(m.node) || is_nothing(m.node->src[0]) ? nothing() : UOp();
}

UOp store_into_nothing(const Match& m) {
  UOp u = m.node;
  if (!has_empty_dim(u->src[0]) || runs_effect(u->src[1])) return UOp();
  return u->op == Ops::STORE ? nothing() : u->src[0];  // an ASSIGN is its (unchanged) target
}

UOp drop_nothing(const Match& m) {
  UOp u = m.node;
  std::vector<UOp> src;
  for (UOp s : u->src)
    if (!is_nothing(s)) src.push_back(s);
  if (src.size() == u->src.size()) return UOp();
  if (u->op == Ops::AFTER && src.size() == 1) return src[0];  // no dependency left
  return u->op == Ops::GROUP && src.empty() ? nothing() : u.replace_src(src);
}

const PatternMatcher& empty_rules() {
  static const PatternMatcher pm({
      {"a reduction over an empty axis is its identity", Pat::ops({Ops::REDUCE_AXIS}), reduce_axis_over_nothing},
      {"a pad of an empty value is all fill", Pat::ops({Ops::PAD}), pad_of_nothing},
      {"a REDUCE over a range without values is its identity", Pat::ops({Ops::REDUCE}), reduce_over_nothing},
      {"an END over a range without values, or of nothing, does nothing", Pat::ops({Ops::END}), end_over_nothing},
      {"a store into an empty target does nothing", Pat::ops({Ops::STORE, Ops::ASSIGN}), store_into_nothing},
      {"steps that do nothing are dropped", Pat::ops({Ops::AFTER, Ops::GROUP}), drop_nothing},
      {"an empty value is zeros", Pat::any(), empty_value_is_zeros},
  });
  return pm;
}

// What the compiled path does not handle is refused rather than lowered wrongly: an empty
// tensor that an effect still reaches.
void check_supported(UOp root) {
  for (UOp u : toposort(root))
    if (has_empty_dim(u) && u->op != Ops::BUFFER && !is_broadcast_const(u))
      throw unsupported(Reason::EmptyDimension, std::string(op_name(u->op)) + " of shape " + render_shape(u->shape.dims) +
                              " has an empty dimension and reaches an effect");
}

}  // namespace

UOp empty(UOp root, Context& ctx) {
  root = rewrite(root, empty_rules(), ctx, "empty");
  check_supported(root);
  return root;
}

}  // namespace ow::lower
