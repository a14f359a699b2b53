// fuse_footprint.h: the proofs behind pass `fuse`. A kernel's C runs its iterations in order, so
// a load of a buffer the kernel also stores to may see an earlier iteration's store, where the
// interpreter (and the unfused kernels) read the buffer as it was at launch. The two agree when
// no store writes an element such a load reads: shown here from the index bounds.
#include "lower/fuse_footprint.h"

#include <set>

#include "lower/index_math.h"
#include "uop/symbolic.h"

namespace ow::lower {

namespace {

bool has_load(UOp u) {
  if (!u) return false;
  for (UOp x : toposort(u))
    if (x->op == Ops::LOAD) return true;
  return false;
}

}  // namespace

// An integer op by a divisor, shift count or exponent that may trap (division by zero, a shift
// count outside the width, a negative exponent of a signed POW): anything but such a constant.
bool may_trap(UOp u) {
  if (u->src.size() != 2 || !can_fail(u->op, u->src[0]->dtype)) return false;
  if (u->op == Ops::POW) return u->src[1].vmin() < 0;
  bool shift = u->op == Ops::SHL || u->op == Ops::SHR;
  UOp k = u->src[1];
  if (!k.is_const() || !k->arg.get_if<int64_t>()) return true;
  int64_t c = *k->arg.get_if<int64_t>();
  return shift ? c < 0 || c >= 8 * static_cast<int64_t>(u->dtype.itemsize()) : c == 0;
}

namespace {

// The negation of a WHERE condition, where the simplifier can read it (simplify_given); else null.
UOp negated(UOp c) {
  if (c->op == Ops::CMPEQ) return UOp::make(Ops::CMPNE, c->dtype, c->src);
  if (c->op == Ops::CMPNE) return UOp::make(Ops::CMPEQ, c->dtype, c->src);
  return UOp();
}

// Every LOAD under `u` with the condition it is read under: the conditions of the WHEREs it is a
// branch of, and its own gate (null: always). A node reached under two conditions is visited
// under each; false when that exceeds `budget` visits.
bool loads_under(UOp u, UOp cond, std::vector<std::pair<UOp, UOp>>& out, std::set<std::pair<const UOpNode*, const UOpNode*>>& seen, size_t& budget) {
  if (!seen.insert({u.get(), cond.get()}).second) return true;
  if (budget-- == 0) return false;
  if (u->op == Ops::LOAD && u->src[0]->op == Ops::INDEX) {
    UOp idx = u->src[0];
    out.push_back({u, idx->src.size() > 2 ? gate_and(cond, idx->src[2]) : cond});
  }
  if (u->op == Ops::WHERE && !has_load(u->src[0])) {
    UOp c = u->src[0], n = negated(c);
    return loads_under(c, cond, out, seen, budget) && loads_under(u->src[1], gate_and(cond, c), out, seen, budget) &&
           loads_under(u->src[2], n ? gate_and(cond, n) : cond, out, seen, budget);
  }
  for (UOp s : u->src)
    if (!loads_under(s, cond, out, seen, budget)) return false;
  return true;
}

// Does the store at `w` (gate `wgate`, over `ranges`) miss the load at `r` read under `cond`, in
// every pair of iterations? The store's ranges get fresh copies, so one iteration's store is
// compared with every iteration's load; the difference of the indices must keep one sign.
bool misses(UOp w, UOp wgate, const std::vector<UOp>& ranges, UOp r, UOp cond, Context& ctx) {
  std::vector<std::pair<UOp, UOp>> fresh;
  for (UOp q : ranges) fresh.push_back({q, ctx.fresh_range(q->src[0], AxisType::LOOP)});
  UOp c = gate_and(cond, wgate ? substitute(wgate, fresh) : UOp());
  UOp d = simplify_given(substitute(w, fresh) - r, c);
  return d.vmin() > 0 || d.vmax() < 0;
}

}  // namespace

bool value_cannot_fail(UOp value) {
  for (UOp u : toposort(value)) {
    if (may_trap(u)) return false;
    if (u->op != Ops::INDEX) continue;
    if (u->src.size() < 2 || u->src[0]->op != Ops::DEFINE_GLOBAL || has_load(u->src[1]) || (u->src.size() > 2 && has_load(u->src[2]))) return false;
    int64_t size = u->src[0]->dtype.size;
    if (size < 0 || u->src[1].vmin() < 0 || u->src[1].vmax() >= size) return false;
  }
  return true;
}

bool stores_miss_loads(UOp ast, UOp value, Context& ctx) {
  std::vector<std::pair<UOp, UOp>> loads;
  std::set<std::pair<const UOpNode*, const UOpNode*>> seen;
  size_t budget = 100000;
  if (!loads_under(value, UOp(), loads, seen, budget)) return false;
  for (UOp end : ast->src) {
    UOp st = end->op == Ops::END ? end->src[0] : end;
    if (st->op != Ops::STORE || st->src[0]->op != Ops::INDEX) return false;
    UOp w = st->src[0];
    std::vector<UOp> ranges(end->op == Ops::END ? end->src.begin() + 1 : end->src.end(), end->src.end());
    for (auto& [load, cond] : loads) {
      UOp r = load->src[0];
      if (r->src[0]->arg.as<int64_t>() != w->src[0]->arg.as<int64_t>()) continue;  // another slot: another buffer (fuse gives each buffer one slot)
      if (!misses(w->src[1], w->src.size() > 2 ? w->src[2] : UOp(), ranges, r->src[1], cond, ctx)) return false;
    }
  }
  return true;
}

}  // namespace ow::lower
