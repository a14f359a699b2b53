// Pass `realize`: decide which values get a buffer of their own, by wrapping them in
// CONTIGUOUS (which already means "materialize" at tensor level, so meaning is unchanged).
//  - outputs, unless they already are a whole buffer;
//  - reductions that something else reads (else every reader would recompute them);
//  - the value of a STORE that reads the buffer it writes (a kernel must not read what it
//    overwrites: the value is computed into a temporary first, then copied).
//  - an input a reduction reads strided (a transposed copy), and a costly value a reduction
//    reads broadcast along an output axis (computed once, not once per output element).
#include <algorithm>
#include <set>
#include <unordered_map>

#include "lower/index_math.h"
#include "lower/lower.h"
#include "lower/walk.h"
#include "uop/error.h"
#include "uop/shape.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ow::lower {

namespace {

UOp contiguous(UOp x) { return x->op == Ops::CONTIGUOUS ? x : UOp::make(Ops::CONTIGUOUS, x->dtype, {x}); }

bool whole_buffer(UOp x) {
  while (x->op == Ops::RESHAPE || x->op == Ops::AFTER) x = x->src[0];
  return x->op == Ops::BUFFER;
}

// Does `value` read `buffer` in the kernel that computes it? A realized value (CONTIGUOUS) inside
// is computed by a kernel of its own, which the schedule runs before the store's kernel writes.
bool reads_buffer(UOp value, UOp buffer) {
  std::vector<UOp> stack{value};
  std::set<const UOpNode*> seen;
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (!seen.insert(u.get()).second || u->op == Ops::CONTIGUOUS) continue;
    if (u->op == Ops::BUFFER && u->arg == buffer->arg) return true;
    stack.insert(stack.end(), u->src.begin(), u->src.end());
  }
  return false;
}

bool is_reduction(UOp u) { return (u->op == Ops::REDUCE_AXIS || u->op == Ops::REDUCE) && is_shaped(u); }

// ---- a reduction reads a strided input through a transposed copy ----
//
// `sum_k x[k] * W[j, k]` reads W along k, its contiguous axis: every output j is a dot product
// of a strided stream, which no C compiler vectorizes without reordering the sum. Reading a
// copy laid out with the reduced axes first makes j the contiguous axis instead; the renderer
// then runs k outside j with j vectorized, and each output still sums in the same order, so
// results stay bit for bit. The copy costs one pass over W, so it is made only where W is
// reused: broadcast along an axis, or read again for every binding of a loop (a vmap).

// The stride of each axis of `view` in the buffer it reads, where constant.
std::vector<std::optional<int64_t>> strides(UOp view) {
  Context probe;  // its fresh ranges never reach the program
  std::vector<UOp> dims = dims_of(view), idx;
  for (UOp d : dims) idx.push_back(probe.fresh_range(d, AxisType::LOOP));
  UOp at = rewrite(make_index(view, idx, UOp()), index_rules(), probe, "stride probe");
  auto p = index_parts(at);
  std::vector<std::optional<int64_t>> out(dims.size());
  if (!p || p->x->op != Ops::BUFFER || p->gate || p->idx.size() != 1) return out;
  for (size_t i = 0; i < idx.size(); ++i) {
    UOp step = simplify(substitute(p->idx[0], {{idx[i], idx[i] + 1}}) - p->idx[0]);
    if (step->op == Ops::CONST) out[i] = static_cast<int64_t>(step.const_value());
  }
  return out;
}

bool plain_view_of_buffer(UOp v) {
  for (; v->op != Ops::BUFFER; v = v->src[0])
    if (v->op != Ops::RESHAPE && v->op != Ops::PERMUTE && v->op != Ops::SHRINK) return false;
  return true;
}

// `view` (a plain view of a BUFFER, the same rank as the reduce source, with strides `st`) as a
// view of a copy with the reduced axes outermost, if it reads `last` (the innermost output axis,
// the one the renderer vectorizes) with a stride and a reduced axis contiguously; else null.
// An EXPAND on top stays outside the copy; its broadcast axes have size 1 below it, so their
// strides in `st` (0) are never consulted.
UOp transposed_copy(UOp view, const std::vector<std::optional<int64_t>>& st, const std::vector<int64_t>& reduced, size_t last,
                    bool reused) {
  UOp base = view->op == Ops::EXPAND ? view->src[0] : view;
  if (!plain_view_of_buffer(base) || !free_ranges(base).empty() || !(reused || base != view)) return UOp();
  auto sd = static_dims(dims_of(base));
  if (!sd) return UOp();
  bool contiguous_reduce = false;
  int64_t count = 1;
  std::vector<int64_t> perm(reduced.begin(), reduced.end());
  for (size_t i = 0; i < st.size(); ++i) {
    count *= (*sd)[i];
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(i)) == reduced.end()) perm.push_back(static_cast<int64_t>(i));
    else contiguous_reduce = contiguous_reduce || ((*sd)[i] > 1 && st[i] == 1);
  }
  bool strided_last = (*sd)[last] > 1 && st[last] && *st[last] > 1;
  if (!contiguous_reduce || !strided_last || count < 1024) return UOp();
  ArgTuple to(perm.size()), back(perm.size());  // sized, not push_back: GCC 12 warns falsely on moving an Arg into a vector
  for (size_t i = 0; i < perm.size(); ++i) {
    to[i] = Arg(perm[i]);
    back[static_cast<size_t>(perm[i])] = Arg(static_cast<int64_t>(i));
  }
  UOp copy = contiguous(UOp::make(Ops::PERMUTE, base->dtype, {base}, Arg(to)));
  UOp seen = UOp::make(Ops::PERMUTE, base->dtype, {copy}, Arg(back));
  if (base == view) return seen;
  std::vector<UOp> src = view->src;  // the EXPAND stays outside: only the unbroadcast data is copied
  src[0] = seen;
  return view.replace_src(src);
}

// The shaped operands of ALU ops under `body` that view a buffer, in toposort order; each
// earlier reduction's list is computed once (a deep MLP reaches every earlier layer from each).
// The pass's memos (UOps are immutable: a node's answer never changes).
struct RealizeState {
  std::map<const UOpNode*, std::vector<std::optional<int64_t>>> strides;  // constant strides of a view
  WalkMemo buffer_operands;  // ALU operands viewing a buffer under a reduction (walk.h)
};

std::vector<UOp> buffer_operands(UOp body, RealizeState& st) {
  auto items = [](UOp u) {
    std::vector<UOp> out;
    if (is_alu(u->op))
      for (UOp s : u->src)
        if (is_shaped(s) && base_buffer(s)) out.push_back(s);
    return out;
  };
  return walk_items(body, st.buffer_operands, items, [](UOp u) { return u->op == Ops::REDUCE_AXIS; });
}

// The innermost output axis of a reduction that has more than one element, if any.
std::optional<size_t> innermost_kept_axis(UOp body, const std::vector<int64_t>& reduced) {
  auto sd = static_dims(dims_of(body));
  for (size_t i = sd ? sd->size() : 0; i-- > 0;)
    if ((*sd)[i] > 1 && std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(i)) == reduced.end()) return i;
  return std::nullopt;
}

UOp reduce_reads_transposed(const Match& m) {
  UOp red = m.node, body = red->src[0];
  std::vector<int64_t> reduced;
  for (const Arg& a : *red->arg.tuple()->at(1).tuple()) reduced.push_back(a.as<int64_t>());
  auto last = innermost_kept_axis(body, reduced);
  if (!last) return UOp();
  RealizeState& state = m.context<RealizeState>();
  std::vector<UOp> views;  // the operands of the same shape that read a buffer through a view
  for (UOp s : buffer_operands(body, state))
    if (dims_of(s) == dims_of(body)) views.push_back(s);
  // Some operand already reads the innermost output axis contiguously (A @ B reads B along its
  // rows): the renderer vectorizes that axis as it is, and a copy would only cost.
  std::vector<std::vector<std::optional<int64_t>>> st;
  auto& memo = state.strides;  // a view reached from every later layer's reduction is probed once
  for (UOp v : views) {
    auto it = memo.find(v.get());
    st.push_back(it != memo.end() ? it->second : memo.emplace(v.get(), strides(v)).first->second);
    if (st.back()[*last] == 1) return UOp();
  }
  bool reused = !free_loop_ranges(red).empty();
  std::vector<std::pair<UOp, UOp>> swap;
  for (size_t k = 0; k < views.size(); ++k)
    if (UOp t = transposed_copy(views[k], st[k], reduced, *last, reused)) swap.push_back({views[k], t});
  return swap.empty() ? UOp() : red.replace_src({substitute(body, swap)});
}

// ---- a reduction reads a costly broadcast value through a copy ----
//
// `sum_k f[k] * W[j, k]` with `f` broadcast along j computes f again for every j. When f is
// long elementwise work (a convolution's im2col: nine gated taps, each with its bias and relu),
// that is most of the kernel: realized once, every j reads it back. Each element of the copy is
// computed by the same ops in the same order, so results stay bit for bit.

// The ops an element of `v` costs: its ALU ops counted once per path (a tap read through nine
// pads costs nine times); views are free but a PAD's gate costs one, constants nothing, and
// reading a buffer or a realized value costs one.
//
// Iterative (a value under a reduction can be a chain of 100,000 elementwise ops): a node's cost is
// set once the costs of its counted sources are.
size_t element_cost(UOp v, std::unordered_map<const UOpNode*, size_t>& memo) {
  auto read = [](UOp u) { return u->op == Ops::CONTIGUOUS || u->op == Ops::REDUCE_AXIS || u->op == Ops::REDUCE || u->op == Ops::BUFFER; };
  auto counted = [&](UOp u) -> size_t {  // how many of u's first sources add their cost to u's
    if (read(u)) return 0;
    if (is_alu(u->op)) return u->src.size();
    return is_movement(u->op) || u->op == Ops::AFTER ? 1 : 0;  // a view's other sources are its arguments
  };
  std::vector<std::pair<UOp, size_t>> stack;  // (node, its next source to cost)
  if (!memo.count(v.get())) stack.emplace_back(v, 0);
  while (!stack.empty()) {
    UOp u = stack.back().first;
    size_t i = stack.back().second++;
    if (i < counted(u)) {
      UOp s = u->src[i];
      if (s->op != Ops::CONST && !memo.count(s.get())) stack.emplace_back(s, 0);
      continue;
    }
    size_t c = read(u) || is_alu(u->op) || u->op == Ops::PAD ? 1 : 0;
    for (size_t k = 0; k < counted(u); ++k)
      if (u->src[k]->op != Ops::CONST) c += memo.at(u->src[k].get());
    memo[u.get()] = std::min<size_t>(c, 1 << 20);
    stack.pop_back();
  }
  return memo.at(v.get());
}

// `v` realized under the RESHAPEs on top of it: a row-major copy reads back the same through
// them, and its kernel loops over the value's own axes (8 x 9 taps, not 72 split by div/mod).
// (A loop, not a recursion: RESHAPEs may be stacked as deep as the graph.)
UOp realized_below_reshapes(UOp v) {
  std::vector<UOp> reshapes;  // the RESHAPEs on top of the value realized, outermost first
  for (; v->op == Ops::RESHAPE && v->src[0]->op != Ops::CONTIGUOUS && is_shaped(v->src[0]); v = v->src[0]) reshapes.push_back(v);
  UOp out = contiguous(v);
  for (auto r = reshapes.rbegin(); r != reshapes.rend(); ++r) {
    std::vector<UOp> src = (*r)->src;
    src[0] = out;
    out = r->replace_src(src);
  }
  return out;
}

constexpr size_t kCostlyElement = 16;  // well above reading the copy back (one load)

UOp reduce_reads_costly_broadcast(const Match& m) {
  UOp red = m.node, body = red->src[0];
  std::vector<int64_t> reduced;
  for (const Arg& a : *red->arg.tuple()->at(1).tuple()) reduced.push_back(a.as<int64_t>());
  std::unordered_map<const UOpNode*, size_t> memo;
  std::vector<std::pair<UOp, UOp>> swap;
  for (UOp s : body->src) {
    if (s->op != Ops::EXPAND || dims_of(s) != dims_of(body)) continue;
    UOp src = s->src[0];
    auto in = static_dims(dims_of(src)), out = static_dims(dims_of(s));
    if (!in || !out || src->op == Ops::CONTIGUOUS || runs_effect(src)) continue;
    bool kept_broadcast = false;  // the value is recomputed for every binding of an output axis
    for (size_t i = 0; i < in->size(); ++i)
      if ((*in)[i] == 1 && (*out)[i] > 1 && std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(i)) == reduced.end()) kept_broadcast = true;
    if (kept_broadcast && element_cost(src, memo) >= kCostlyElement) swap.push_back({s, s.replace_src([&] {
      std::vector<UOp> v = s->src;
      v[0] = realized_below_reshapes(src);
      return v;
    }())});
  }
  return swap.empty() ? UOp() : red.replace_src({body.replace_src([&] {
    std::vector<UOp> v = body->src;
    for (UOp& x : v)
      for (auto& [from, to] : swap)
        if (x == from) x = to;
    return v;
  }())});
}

// Does an effect that `out` does not reach write the buffer `out` views? Then the host, reading
// the buffer after the whole program, would see that write, which the output is not ordered
// after (SEMANTICS S5.5): the output is copied where it is computed instead.
bool written_elsewhere(UOp sink, UOp out) {
  UOp buf = base_buffer(out);
  std::vector<UOp> mine = toposort(out);
  std::set<const UOpNode*> reached;
  for (UOp u : mine) reached.insert(u.get());
  for (UOp u : toposort(sink))
    if (is_write(u->op) && !reached.count(u.get()) && base_buffer(u->src[0]) == buf) return true;
  return false;
}

const PatternMatcher& realize_rules() {
  static const PatternMatcher pm = PatternMatcher({
      {"outputs are realized", Pat::ops({Ops::SINK}),
       [](const Match& m) {
         std::vector<UOp> src = m.node->src;
         for (UOp& s : src) {
           if (!s->dtype.is_void() && !is_shaped(s)) throw unsupported(Reason::UnshapedValue, "an unshaped (scalar) output " + std::string(op_name(s->op)));
           if (!s->dtype.is_void() && (!whole_buffer(s) || written_elsewhere(m.node, s))) s = contiguous(s);
         }
         return m.node.replace_src(src);
       }},
      {"a reduction reads a strided, reused input through a transposed copy", Pat::ops({Ops::REDUCE_AXIS}), reduce_reads_transposed},
      {"a reduction reads a costly broadcast value through a copy", Pat::ops({Ops::REDUCE_AXIS}), reduce_reads_costly_broadcast},
      {"reductions are realized where they are read", Pat::any(),
       [](const Match& m) {
         Ops op = m.node->op;
         if (op == Ops::CONTIGUOUS || op == Ops::STORE || op == Ops::SINK) return UOp();
         std::vector<UOp> src = m.node->src;
         bool changed = false;
         for (UOp& s : src)
           if (is_reduction(s)) s = contiguous(s), changed = true;
         return changed ? m.node.replace_src(src) : UOp();
       }},
      {"a store that reads its target computes the value first", Pat::ops({Ops::STORE}),
       [](const Match& m) {
         UOp target = m.node->src[0], value = m.node->src[1];
         UOp buf = base_buffer(target);
         if (!buf || value->op == Ops::CONTIGUOUS || !is_shaped(value) || !reads_buffer(value, buf)) return UOp();
         return target.store(contiguous(value));
       }},
      {"contiguous of contiguous", Pat::op(Ops::CONTIGUOUS, {Pat::op(Ops::CONTIGUOUS, {Pat::var("x")})}),
       [](const Match& m) { return m.node->src[0]; }},
  }) + view_rules();
  return pm;
}

}  // namespace

UOp realize(UOp root, Context& ctx) {
  RealizeState state;
  return rewrite_with(root, realize_rules(), state, ctx, "realize");
}

}  // namespace ow::lower
