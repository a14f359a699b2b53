// Pass `rangeify`: every realize point (CONTIGUOUS) becomes BUFFERIZE(INDEX(x, r...), r...) over
// fresh loop ranges, every tensor-level STORE stores such a BUFFERIZE, and the INDEX is pushed
// down through movement ops, elementwise ops and reductions until it reaches a buffer or another
// realized value. Movement ops thereby turn into index arithmetic, PAD into gates, REDUCE_AXIS
// into a REDUCE over fresh ranges: the value of an element, written as a scalar expression.
#include <algorithm>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

// Fresh ranges over dims; a symbolic dim loops to its largest value under a gate `r < dim`.
struct Loops {
  std::vector<UOp> ranges;
  UOp gate;
};

Loops loops_over(const std::vector<UOp>& dims, Context& ctx, AxisType axis) {
  Loops l;
  for (UOp d : dims) {
    UOp e = dim_extent(d);
    if (auto s = static_size(d)) {
      l.ranges.push_back(ctx.fresh_range(UOp::index(*s), axis));
    } else {
      UOp r = ctx.fresh_range(UOp::index(e.vmax()), axis);
      l.ranges.push_back(r);
      l.gate = gate_and(l.gate, simplify(r.lt(e)));
    }
  }
  return l;
}

UOp bufferize(const Match& m) {
  Context& ctx = m.context<Context>();
  UOp x = m.node->src[0];
  if (!is_shaped(x)) return x;
  std::vector<UOp> dims = dims_of(x), outer = free_loop_ranges(x);
  Loops l = loops_over(dims, ctx, AxisType::LOOP);
  std::vector<UOp> src{make_index(x, l.ranges, l.gate)};
  src.insert(src.end(), outer.begin(), outer.end());
  src.insert(src.end(), l.ranges.begin(), l.ranges.end());
  UOp buf = UOp::make(Ops::BUFFERIZE, x->dtype, src);
  if (outer.empty() && !l.gate) return buf;
  // The buffer holds every binding of the free ranges and the largest shape: view this one.
  std::vector<UOp> shrink{buf}, reshape{UOp()};
  for (UOp r : outer) shrink.insert(shrink.end(), {r, simplify(r + 1)});
  for (UOp d : dims) shrink.insert(shrink.end(), {UOp::index(0), dim_extent(d)});
  reshape[0] = UOp::make(Ops::SHRINK, x->dtype, shrink);
  reshape.insert(reshape.end(), dims.begin(), dims.end());
  return UOp::make(Ops::RESHAPE, x->dtype, reshape);
}

UOp store_bufferize(const Match& m) {
  // A realized value (CONTIGUOUS, already a BUFFERIZE here) gets its own temporary: the store
  // copies from it, so a value that reads the target is computed before the target is written.
  UOp target = m.node->src[0], value = m.node->src[1];
  if (is_store_value(value) || !is_shaped(target)) return UOp();
  for (UOp d : dims_of(target))
    if (!static_size(d)) throw unsupported(Reason::SymbolicShape, "a STORE into a view of symbolic shape " + render_shape(dims_of(target)));
  Loops l = loops_over(dims_of(target), m.context<Context>(), AxisType::LOOP);
  std::vector<UOp> src{make_index(value, l.ranges, UOp())};
  src.insert(src.end(), l.ranges.begin(), l.ranges.end());
  return target.store(UOp::make(Ops::BUFFERIZE, value->dtype, src, Arg(), Arg(std::string("store"))));
}

// ---- INDEX pushed through one op ----

using Push = UOp (*)(const IndexParts&, Context&);

UOp through_reshape(const IndexParts& p, Context&) {
  UOp src = p.x->src[0];
  return make_index(src, unlinearize(linearize(p.idx, dims_of(p.x)), dims_of(src)), p.gate);
}

UOp through_permute(const IndexParts& p, Context&) {
  const ArgTuple& perm = *p.x->arg.tuple();
  std::vector<UOp> in(p.idx.size());
  for (size_t i = 0; i < perm.size(); ++i) in[perm[i].as<int64_t>()] = p.idx[i];
  return make_index(p.x->src[0], in, p.gate);
}

UOp through_expand(const IndexParts& p, Context&) {
  UOp src = p.x->src[0];
  std::vector<UOp> in_dims = dims_of(src), out_dims = dims_of(p.x), in = p.idx;
  std::vector<std::pair<UOp, UOp>> collect;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    UOp d = out_dims[i];
    if (d->op == Ops::RANGE && has_free_range(src, d)) {
      collect.push_back({d, p.idx[i]});  // S4.1: slice k of this axis is src with r = k
      in[i] = UOp::index(0);
    } else if (i < in_dims.size() && static_size(in_dims[i]) == 1 && static_size(d) != 1) {
      in[i] = UOp::index(0);
    }
  }
  if (!collect.empty()) src = bind_ranges(src, collect);
  return make_index(src, in, p.gate);
}

UOp through_shrink(const IndexParts& p, Context&) {
  std::vector<UOp> in;
  for (size_t i = 0; i < p.idx.size(); ++i) in.push_back(p.idx[i] + p.x->src[1 + 2 * i]);
  return make_index(p.x->src[0], in, p.gate);
}

UOp through_flip(const IndexParts& p, Context&) {
  const ArgTuple& axes = *p.x->arg.tuple();
  std::vector<UOp> in = p.idx, dims = dims_of(p.x);
  for (size_t i = 0; i < in.size(); ++i)
    if (axes[i].as<bool>()) in[i] = dim_extent(dims[i]) - 1 - p.idx[i];
  return make_index(p.x->src[0], in, p.gate);
}

UOp through_pad(const IndexParts& p, Context&) {
  UOp src = p.x->src[0];
  std::vector<UOp> in, inner = dims_of(src);
  UOp gate = p.gate;
  for (size_t i = 0; i < p.idx.size(); ++i) {
    UOp b = p.x->src[1 + 2 * i];
    in.push_back(p.idx[i] - b);
    gate = gate_and(gate, in_range(p.idx[i], b, simplify(b + dim_extent(inner[i]))));
  }
  return make_index(src, in, gate);
}

UOp zero_unless(UOp gate, UOp v) { return gate ? gate.where(v, UOp::cnst(v->dtype, 0)) : v; }

UOp through_elementwise(const IndexParts& p, Context&) {
  std::vector<UOp> src;
  for (UOp s : p.x->src) src.push_back(is_shaped(s) ? make_index(s, p.idx, p.gate) : s);
  // Gated off, an element reads 0; a divisor must read 1 there, or the discarded branch would
  // divide by zero.
  bool divides = p.x->op == Ops::IDIV || p.x->op == Ops::MOD;
  if (p.gate && divides && is_shaped(p.x->src[1])) src[1] = p.gate.where(src[1], UOp::cnst(src[1]->dtype, 1));
  return zero_unless(p.gate, p.x.replace_src(src));
}


UOp through_reduce_axis(const IndexParts& p, Context& ctx) {
  const ArgTuple& t = *p.x->arg.tuple();
  Ops op = t[0].as<Ops>();
  UOp src = p.x->src[0];
  std::vector<UOp> in = p.idx, in_dims = dims_of(src), axis_dims;
  for (const Arg& a : *t[1].tuple()) axis_dims.push_back(in_dims[a.as<int64_t>()]);
  Loops l = loops_over(axis_dims, ctx, AxisType::REDUCE);
  size_t k = 0;
  for (const Arg& a : *t[1].tuple()) in[a.as<int64_t>()] = l.ranges[k++];
  UOp elem = make_index(src, in, gate_and(p.gate, l.gate));
  if (l.gate) elem = l.gate.where(elem, reduce_identity(op, p.x->dtype));
  // tag "axis": the terms were one value at tensor level, so they stay unordered (SEMANTICS S3.2)
  std::vector<UOp> terms{elem};
  terms.insert(terms.end(), l.ranges.begin(), l.ranges.end());
  return zero_unless(p.gate, UOp::make(Ops::REDUCE, p.x->dtype, terms, Arg(op), axis_fold_tag()));
}

// A vmap's element reads only its own slot's y: `0 + y(r = i - before)` (the other slots add
// the pad's zeros after it, which changes nothing; the first add turns -0.0 into +0.0).
UOp through_slot_map(const IndexParts& p, const SlotMap& map) {
  UOp pad = p.x->src[0];
  std::vector<UOp> in = p.idx, dims = dims_of(map.y);
  UOp gate = p.gate, slots = dim_extent(map.range->src[0]);
  for (size_t i = 0; i < in.size(); ++i) {
    UOp b = i == map.axis ? UOp::index(map.before) : pad->src[1 + 2 * i];
    UOp n = i == map.axis ? slots : dim_extent(dims[i]);
    gate = gate_and(gate, in_range(p.idx[i], b, simplify(b + n)));
    in[i] = i == map.axis ? UOp::index(0) : simplify(p.idx[i] - b);
  }
  UOp r = simplify(p.idx[map.axis] - map.before);
  UOp elem = make_index(bind_ranges(map.y, {{map.range, r}}), in, gate);
  UOp zero = reduce_identity(Ops::ADD, p.x->dtype);
  return gate.where(UOp::make(Ops::ADD, p.x->dtype, {zero, elem}), zero);
}

UOp through_reduce(const IndexParts& p, Context&) {
  if (auto map = slot_map(p.x); map && !has_effect_or_outer_fold(map->y)) return through_slot_map(p, *map);
  std::vector<UOp> ranges(p.x->src.begin() + 1, p.x->src.end());
  UOp elem = make_index(p.x->src[0], p.idx, p.gate);
  return zero_unless(p.gate, elem.reduce(ranges, p.x->arg.as<Ops>()));
}

// A gated INDEX reads nothing where its gate is false, so its indices only matter where the gate
// holds: simplified under it, a PAD's bounds let the div/mod of a RESHAPE behind it fold away.
// An index is replaced only by a simpler one (fewer div/mod, else fewer nodes), so the rule and
// the unconditional rules cannot undo each other forever.
std::pair<size_t, size_t> index_cost(UOp i) {
  std::vector<UOp> nodes = toposort(i);
  size_t divmod = std::count_if(nodes.begin(), nodes.end(), [](UOp u) { return u->op == Ops::IDIV || u->op == Ops::MOD; });
  return {divmod, nodes.size()};
}

UOp index_under_gate(const Match& m) {
  auto p = index_parts(m.node);
  if (!p || !p->gate) return UOp();
  std::vector<UOp> src{p->x};
  for (UOp i : p->idx) {
    UOp g = simplify(simplify_given(i, p->gate));
    src.push_back(index_cost(g) < index_cost(i) ? g : i);
  }
  src.push_back(p->gate);
  return src == m.node->src ? UOp() : m.node.replace_src(src);
}

Rule push_rule(const std::string& name, std::vector<Ops> ops, Push push) {
  return Rule{name, Pat::op(Ops::INDEX, {Pat::ops(ops)}).any_len(), [push](const Match& m) {
                auto p = index_parts(m.node);
                return p ? push(*p, m.context<Context>()) : UOp();
              }};
}

std::vector<Ops> elementwise_ops() {
  std::vector<Ops> ops;
  for (size_t i = 0; i < kNumOps; ++i)
    if (is_elementwise(static_cast<Ops>(i))) ops.push_back(static_cast<Ops>(i));
  return ops;
}

}  // namespace

const PatternMatcher& index_rules() {
  static const PatternMatcher pm = PatternMatcher({
      {"index math under its gate", Pat::ops({Ops::INDEX}), index_under_gate},
      push_rule("index through RESHAPE", {Ops::RESHAPE}, through_reshape),
      push_rule("index through PERMUTE", {Ops::PERMUTE}, through_permute),
      push_rule("index through EXPAND", {Ops::EXPAND}, through_expand),
      push_rule("index through SHRINK", {Ops::SHRINK}, through_shrink),
      push_rule("index through FLIP", {Ops::FLIP}, through_flip),
      push_rule("index through PAD (a gate)", {Ops::PAD}, through_pad),
      push_rule("index through elementwise ops", elementwise_ops(), through_elementwise),
      push_rule("index through REDUCE_AXIS (fresh REDUCE ranges)", {Ops::REDUCE_AXIS}, through_reduce_axis),
      push_rule("index through REDUCE", {Ops::REDUCE}, through_reduce),
  }) + symbolic_rules();
  return pm;
}

namespace {
const PatternMatcher& rangeify_rules() {
  static const PatternMatcher pm = PatternMatcher({
      {"realize point becomes BUFFERIZE", Pat::ops({Ops::CONTIGUOUS}), bufferize},
      {"store writes a BUFFERIZE of its value", Pat::ops({Ops::STORE}), store_bufferize},
  }) + index_rules();
  return pm;
}
}  // namespace

UOp rangeify(UOp root, Context& ctx) { return rewrite(root, rangeify_rules(), ctx, "rangeify"); }

}  // namespace ow::lower
