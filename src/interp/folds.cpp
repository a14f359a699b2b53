// The interpreter's folds (SEMANTICS S3): REDUCE_AXIS, its operand materialized or folded
// without materializing it (virtual_fold.h), whichever pays, and REDUCE over the bindings of
// ranges, in order, from the identity.
#include <algorithm>

#include "interp/budget.h"
#include "interp/dispatch.h"
#include "interp/evaluator.h"
#include "uop/args.h"
#include "uop/shape.h"
#include "uop/verify.h"

namespace ow::interp {

namespace {

// The kind of node a VirtualTree keeps unevaluated: movement, elementwise and pass-through
// nodes; everything else is a leaf. Ops that can fail (can_fail: integer IDIV, MOD, shifts,
// signed POW) are leaves too: a failure anywhere in a value is an error even where the fold never
// reads it. `collects`: u is an EXPAND that collects (S4.1), evaluated as usual.
VirtualNode::Kind virtual_kind(UOp u, bool collects) {
  using K = VirtualNode::Kind;
  if (u->src.size() == 2 && can_fail(u->op, u->src[0]->dtype)) return K::Leaf;
  switch (u->op) {
    case Ops::RESHAPE: return K::Reshape;
    case Ops::PAD: return K::Pad;
    case Ops::SHRINK: return K::Shrink;
    case Ops::PERMUTE: return K::Permute;
    case Ops::FLIP: return K::Flip;
    case Ops::CAST: return K::Cast;
    case Ops::BITCAST: return K::Bitcast;
    case Ops::CONTIGUOUS_BACKWARD: case Ops::DETACH: case Ops::REDUCE_BACKWARD: return K::Same;
    case Ops::EXPAND: return collects ? K::Leaf : K::Expand;
    default: return is_elementwise(u->op) ? K::Alu : K::Leaf;
  }
}
}  // namespace

// The number of elements of x's static shape at the largest value of its symbols (saturating).
static int64_t static_elements(UOp x) {
  if (x->shape.kind != ShapeInfo::Kind::Shaped) return 0;
  __int128 n = 1;
  for (UOp d : x->shape.dims) n = std::min<__int128>(n * std::max<int64_t>(d.vmax(), 0), INT64_MAX);
  return static_cast<int64_t>(n);
}

// x as a VirtualTree (virtual_fold.h), its leaves evaluated; nullopt, to materialize x instead,
// when a leaf holds poison or a footprint, the shapes do not fit (evaluating x names the error),
// or the tree, a DAG unfolded, grows past 4096 nodes.
std::optional<VirtualTree> Interpreter::virtual_operand(UOp x) {
  using K = VirtualNode::Kind;
  VirtualTree t;
  std::vector<std::pair<UOp, size_t>> todo{{x, SIZE_MAX}};  // (node, parent): preorder, no recursion
  while (!todo.empty()) {
    auto [u, parent] = todo.back();
    todo.pop_back();
    if (t.nodes.size() == 4096) return std::nullopt;
    if (parent != SIZE_MAX) t.nodes[parent].kids.push_back(t.nodes.size());
    VirtualNode n;
    n.kind = virtual_kind(u, u->op == Ops::EXPAND && !collected_axes(u).empty());
    n.op = u->op;
    n.dtype = u->dtype;
    size_t sources = 1;
    switch (n.kind) {
      case K::Leaf:
        n.leaf = eval(u);
        if (n.leaf.poison || n.leaf.footprint) return std::nullopt;
        n.shape = n.leaf.shape(), n.unshaped = n.leaf.unshaped;
        sources = 0;
        break;
      case K::Reshape: case K::Expand:
        for (size_t i = 1; i < u->src.size(); ++i) n.shape.push_back(dim(u->src[i]));
        break;
      case K::Pad: case K::Shrink:
        for (auto [lo, hi] : pairs(u)) n.lo.push_back(lo), n.hi.push_back(hi);
        break;
      case K::Permute:
        for (const Arg& a : *u->arg.tuple()) n.perm.push_back(a.as<int64_t>());
        break;
      case K::Flip:
        for (const Arg& a : *u->arg.tuple()) n.flip.push_back(a.as<bool>());
        break;
      case K::Same: break;
      default: sources = u->src.size();
    }
    t.nodes.push_back(std::move(n));
    for (size_t i = sources; i-- > 0;) todo.push_back({u->src[i], t.nodes.size() - 1});
  }
  if (!t.infer_shapes()) return std::nullopt;
  return t;
}

// Both ways give the same bits (S3.4); they differ in cost. A virtual fold costs about as much
// per run as materializing costs per 8 elements, so by default it folds virtually what cannot
// be stored (over 2^32 elements, or over a quarter of the memory budget) and
// what has runs of 8 terms or more on average, and materializes the rest: the gradient of a
// 111x28 average pool reads its 6.5e8-element window in runs of 1 to 2 terms (130 s folded
// virtually, a few materialized), tinygrad's arange window in 2 runs per row of n.
bool Interpreter::worth_folding_virtually(const VirtualTree& t, Ops op, const std::vector<int64_t>& axes) const {
  const int64_t m = t.materialized_elements(op);
  if (m <= opts_.virtual_fold_min) return false;
  if (opts_.virtual_fold_min == 0) return true;  // wherever it can be (tests, the fuzzer)
  const uint64_t limit = memory_limit();
  const uint64_t bytes = static_cast<uint64_t>(m) * static_cast<uint64_t>(std::max(1, t.nodes[0].dtype.itemsize()));
  if (m > kMaxElements || (limit && bytes > limit / 4)) return true;
  return t.estimate_runs(axes) <= m / 8;
}

Value Interpreter::reduce_axis(UOp u) {
  const ArgTuple& t = *u->arg.tuple();
  Ops op = t[0].as<Ops>();
  std::vector<int64_t> axes;
  for (const Arg& a : *t[1].tuple()) axes.push_back(a.as<int64_t>());
  UOp x = u->src[0];
  // An operand no one stores, larger than the limit: fold it without materializing it (S3.4).
  if (opts_.virtual_fold_min >= 0 && !info_.at(x.get()).effect && static_elements(x) > opts_.virtual_fold_min)
    if (auto t = virtual_operand(x); t && worth_folding_virtually(*t, op, axes)) return fold_virtual(op, *t, axes);
  // REDUCE_AXIS(ADD, MUL(a, b)): fold the products without materializing them.
  if (op == Ops::ADD && x->op == Ops::MUL && !info_.at(x.get()).effect) {
    Value a = eval(x->src[0]), b = eval(x->src[1]);
    std::vector<int64_t> shape = concrete_shape({a, b});
    if (!a.unshaped && !b.unshaped && a.shape() == b.shape() && !shape.empty()) return reduce_mul_add(a, b, axes);
  }
  Value v = eval(x);
  if (v.unshaped) v = contiguous(broadcast_to(v, {}));
  return reduce_axes(op, v, axes);
}

// A contribution to a range fold. REDUCE(PAD(y), ..., ADD) with a clean y is kept as y plus
// the box it lands in: adding the pad's zeros elsewhere would not change any element (the
// running sum starts at +0.0 and, in round-to-nearest, never becomes -0.0), so only the box
// is touched. This is an evaluation shortcut, not a different meaning.
Interpreter::Contribution Interpreter::contribution(UOp x, Ops op) {
  Contribution c;
  if (op == Ops::ADD && x->op == Ops::PAD && !info_.at(x.get()).effect) {
    Value inner = eval(x->src[0]);
    if (!inner.unshaped && !inner.poison && !inner.footprint) {
      auto widths = pairs(x);
      c.shape = inner.shape();
      for (size_t i = 0; i < c.shape.size(); ++i) {
        c.box.push_back({widths[i].first, widths[i].first + c.shape[i]});
        c.shape[i] += widths[i].first + widths[i].second;
      }
      c.inner = inner;
      c.boxed = true;
      return c;
    }
  }
  c.full = eval(x);
  c.shape = c.full.unshaped ? std::vector<int64_t>{} : c.full.shape();
  return c;
}

void Interpreter::add_into(Ops op, Value& acc, const Contribution& c) {
  if (!c.boxed) return accumulate(op, acc, c.full);
  Value box = shrink_view(acc, c.box);
  accumulate(op, box, c.inner);
}

// REDUCE folds over every binding of its ranges, in order, starting from the identity. An axis
// reduction (tag "axis", made by rangeify from REDUCE_AXIS) folds terms that were one value:
// they are unordered (each reads what the fold's start is ordered after).
Value Interpreter::reduce(UOp u) {
  Ops op = u->arg.as<Ops>();
  std::vector<UOp> ranges(u->src.begin() + 1, u->src.end());
  Value acc;
  bool first = true;
  Unordered terms(*this, is_axis_fold(u));
  loop(ranges, 0, [&] {
    terms.next();
    if (!terms.on) run_iteration_effects(u->src[0]);
    Contribution c = contribution(u->src[0], op);
    if (first) {
      acc = identity_like(op, u->dtype, c.shape);
      acc.unshaped = !c.boxed && c.full.unshaped;
      first = false;
    } else if (c.shape != acc.shape() && !(!c.boxed && c.full.unshaped)) {
      fail(u, "the reduced value's shape changes across the range: " + shape_text(acc.shape()) + " then " + shape_text(c.shape));
    }
    add_into(op, acc, c);
  });
  if (first) {  // an empty range: the identity, shaped like the node says when that is static
    auto dims = u->shape.kind == ShapeInfo::Kind::Shaped ? static_dims(u->shape.dims) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    acc = identity_like(op, u->dtype, dims.value_or(std::vector<int64_t>{}));
  }
  return acc;
}

}  // namespace ow::interp
