// Kernel-opt pass `transposes` (tcc and cc): a transposing copy, a store nest without REDUCEs
// whose store runs along its inner range j while a load runs along the outer range i, gets its
// rows blocked. The plain nest's loads jump a row per inner step, so a 128^2 float copy touches 128
// lines 512 bytes apart, more than L1's sets hold (9.6 us); blocked, one pass of j reads a line
// for several rows:
//  - 16 rows at a time: END(STORE, ..., i, j) -> END(GROUP(STORE[i := 16*ib + u] for u < 16),
//    ..., ib, j) (6 us);
//  - a pure copy of 4-byte elements with both extents multiples of 8 and unchecked accesses
//    moves in 8x8 tiles: END(STORE[i := 8*ib + a, j := 8*jb + b], ..., ib, jb, a, b) marked
//    "transpose8" (a, b < 8), whose loops a, b the renderer writes as one ow_transpose8_u32
//    call, a transpose in registers (1.8 us on cc, from its prelude; tcc calls a build compiled
//    ahead of time, backends/tcc/vector_loops.h).
// A GROUP runs its stores in order and a marked END is a loop nest, so the interpreter evaluates
// every form; the blocking conditions (loop_shapes.h) make the order of the stores free: results
// are bit-identical.
#include <cstdlib>

#include "opt/loop_shapes.h"
#include "opt/opt.h"
#include "uop/args.h"
#include "uop/symbolic.h"

namespace ow::opt {

namespace {

// The one LOAD a transposing nest stores unchanged, when it can move in 8x8 tiles: 4-byte
// elements, the load ungated at index i + c*j + rest (rest free of i and j), both extents
// multiples of 8 and no bounds checks (a tile's accesses are not checked one by one).
bool tile_copy(UOp end, bool bounds_check) {
  UOp st = end->src[0], v = st->src[1], i = end->src[end->src.size() - 2], j = end->src.back();
  if (bounds_check || v->op != Ops::LOAD || v->dtype != st->src[0]->dtype.base() || v->dtype.itemsize() != 4) return false;
  UOp at = v->src[0];
  if (at->op != Ops::INDEX || at->src.size() != 2) return false;
  for (UOp r : {i, j})
    if (const int64_t* e = const_extent(r); !e || *e % 8 != 0) return false;
  return coefficient(at->src[1], i) == 1 && coefficient(at->src[1], j).has_value();
}

// `end` with its ranges from `pos` on replaced by `ranges` and its body by `body`, marked `form`.
UOp nest(UOp end, size_t pos, UOp body, const std::vector<UOp>& ranges, Arg form = Arg()) {
  std::vector<UOp> src(end->src.begin(), end->src.begin() + static_cast<std::ptrdiff_t>(pos));
  src[0] = std::move(body);
  src.insert(src.end(), ranges.begin(), ranges.end());
  return UOp::make(Ops::END, end->dtype, std::move(src), std::move(form));
}

// The statement `end` blocked, or `end` itself when it is no transposing nest or may not be.
UOp blocked(UOp ast, UOp end, const Options& o) {
  if (end->op != Ops::END || !end->arg.none() || end->src.size() < 3 || end->src[0]->op != Ops::STORE || end->src[0]->src.size() != 2) return end;  // (a tile is marked)
  size_t pos = end->src.size() - 2;
  UOp i = end->src[pos], j = end->src.back(), st = end->src[0], idx = st->src[0];
  if (idx->op != Ops::INDEX || idx->src.size() != 2 || coefficient(idx->src[1], j) != 1) return end;
  bool gathers = false;  // some load reads along i and jumps along j
  for (UOp u : toposort(st->src[1])) {
    if (u->op == Ops::REDUCE) return end;
    if (u->op != Ops::LOAD || u->src.size() != 1 || u->src[0]->op != Ops::INDEX || u->src[0]->src.size() < 2) continue;
    auto ci = coefficient(u->src[0]->src[1], i), cj = coefficient(u->src[0]->src[1], j);
    gathers = gathers || (ci == 1 && cj && std::abs(*cj) >= 16);
  }
  int block = gathers ? block_size(ast, end, pos, {}, 16, true, o.bounds_check) : 1;
  if (block < 8) return end;
  if (tile_copy(end, o.bounds_check)) {
    UOp ib = block_range(i, 8), jb = block_range(j, 8), a = lane_range(i, 8), b = lane_range(j, 8);
    return nest(end, pos, substitute(st, {{i, ib * 8 + a}, {j, jb * 8 + b}}), {ib, jb, a, b}, loop_arg(LoopForm::transpose8));
  }
  UOp ib = block_range(i, block);
  std::vector<UOp> stores;
  for (int u = 0; u < block; ++u) stores.push_back(substitute(st, {{i, u ? ib * block + u : ib * block}}));
  return nest(end, pos, UOp::make(Ops::GROUP, dtypes::void_, std::move(stores)), {ib, j}, end->arg);
}

UOp block_transposes(const Match& m) {
  const Options& o = m.context<Options>();
  UOp ast = m.node->src[0];
  return with_statements(m.node, [&](UOp s) { return blocked(ast, s, o); });
}

}  // namespace

const PatternMatcher& transposes_rules() {
  static const PatternMatcher pm({{"a transposing copy is blocked: 16 rows per pass, or 8x8 tiles of 4-byte elements", Pat::ops({Ops::KERNEL}), block_transposes}});
  return pm;
}

}  // namespace ow::opt
