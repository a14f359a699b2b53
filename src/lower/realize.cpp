// Pass `realize`: decide which values get a buffer of their own, by wrapping them in
// CONTIGUOUS (which already means "materialize" at tensor level, so meaning is unchanged).
//  - outputs, unless they already are a whole buffer;
//  - reductions that something else reads (else every reader would recompute them);
//  - the value of a STORE that reads the buffer it writes (a kernel must not read what it
//    overwrites: the value is computed into a temporary first, then copied).
#include "lower/index_math.h"
#include "lower/lower.h"
#include "uop/error.h"
#include "uop/symbolic.h"

namespace ow::lower {

namespace {

UOp contiguous(UOp x) { return x->op == Ops::CONTIGUOUS ? x : UOp::make(Ops::CONTIGUOUS, x->dtype, {x}); }

bool whole_buffer(UOp x) {
  while (x->op == Ops::RESHAPE || x->op == Ops::AFTER) x = x->src[0];
  return x->op == Ops::BUFFER;
}

bool reads_buffer(UOp value, UOp buffer) {
  for (UOp u : toposort(value))
    if (u->op == Ops::BUFFER && u->arg == buffer->arg) return true;
  return false;
}

bool is_reduction(UOp u) { return (u->op == Ops::REDUCE_AXIS || u->op == Ops::REDUCE) && is_shaped(u); }

const PatternMatcher& realize_rules() {
  static const PatternMatcher pm = PatternMatcher({
      {"outputs are realized", Pat::ops({Ops::SINK}),
       [](const Match& m) {
         std::vector<UOp> src = m.node->src;
         for (UOp& s : src) {
           if (!s->dtype.is_void() && !is_shaped(s)) throw Error(unsupported("an unshaped (scalar) output " + std::string(op_name(s->op))));
           if (!s->dtype.is_void() && !whole_buffer(s)) s = contiguous(s);
         }
         return m.node.replace_src(src);
       }},
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

UOp realize(UOp root, Context& ctx) { return rewrite(root, realize_rules(), ctx, "realize"); }

}  // namespace ow::lower
