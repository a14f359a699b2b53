// Copies of a nest's values for each iteration of a blocked range (loop_shapes.cpp, tiles.cpp),
// made in time proportional to what is new: a row of a block differs from the kernel's graph
// only in the nodes that depend on the blocked range, and every traversal here stops at nodes
// seen before. (Walking, substituting, analyzing and numbering the whole nest once per row took
// most of the render time of a blocked kernel.)
#include "kernel_renderer.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

// x with range r replaced by v: substitute(), rebuilding only the nodes that depend on r (no
// REDUCE in a blocked nest binds its store ranges). The copies are kept per (r, v), so the
// REDUCEs of a row, reached again from its store, cost nothing more.
UOp KernelRenderer::substituted(UOp x, UOp r, UOp v) {
  Copies& c = copies_[{r.get(), v.get()}];
  c.keep = {r, v};
  c.of[r.get()] = v;
  std::vector<std::pair<UOp, size_t>> stack{{x, 0}};
  auto ready = [&](UOp u) { return c.of.count(u.get()) || !has_free_range(u, r); };
  if (ready(x)) stack.clear();
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u->src.size()) {
      UOp s = u->src[next++];
      if (!ready(s)) stack.emplace_back(s, 0);
      continue;
    }
    std::vector<UOp> src;
    src.reserve(u->src.size());
    for (UOp s : u->src) {  // of holds every source that depends on r by now, and only those
      auto it = c.of.find(s.get());
      src.push_back(it == c.of.end() ? s : it->second);
    }
    c.of[u.get()] = u.replace_src(std::move(src));
    stack.pop_back();
  }
  return has_free_range(x, r) ? c.of.at(x.get()) : x;
}

// x for each iteration of the block: r -> start + u. New nodes are analyzed and numbered.
std::vector<UOp> KernelRenderer::in_block(UOp x, UOp r, UOp start, int block) {
  std::vector<UOp> out;
  for (int u = 0; u < block; ++u) {
    UOp xu = substituted(x, r, u ? start + u : start);
    adopt(xu);
    out.push_back(xu);
  }
  return out;
}

// simplify(substitute(x, at)) for each item not made before, all in one rewrite: the rows of a
// block share most of their index arithmetic, which one rewrite simplifies once. Each result is
// what simplify() makes of that item alone (a rewrite's result for a node depends on the node
// only). Not yet analyzed or numbered: simplified_at() does that in the order it is asked.
void KernelRenderer::simplify_ahead(const std::vector<std::pair<UOp, At>>& items) {
  std::vector<UOp> roots;
  std::vector<UOp*> slots;
  for (const auto& [x, at] : items) {
    std::vector<UOp> key{x};
    for (auto& [k, v] : at) key.insert(key.end(), {k, v});
    std::vector<const UOpNode*> ptrs;
    for (UOp k : key) ptrs.push_back(k.get());
    auto [it, fresh] = simplified_.try_emplace(std::move(ptrs));
    if (!fresh) continue;
    it->second.second = std::move(key);  // its nodes stay alive while they key the map
    roots.push_back(at.size() == 1 ? substituted(x, at[0].first, at[0].second) : substitute(x, at));
    slots.push_back(&it->second.first);
  }
  if (roots.empty()) return;
  UOp all = simplify(UOp::sink(roots));
  if (all->op != Ops::SINK || all->src.size() != roots.size()) throw InternalError("render: simplify rewrote a SINK of index expressions");
  for (size_t q = 0; q < roots.size(); ++q) *slots[q] = all->src[q];
}

// simplify(substitute(x, at)), analyzed and numbered; made once per (x, at): the rows of a tile
// block share b's index when a row of b serves them all, and each row asks for its offset again.
UOp KernelRenderer::simplified_at(UOp x, const At& at) {
  simplify_ahead({{x, at}});
  std::vector<const UOpNode*> ptrs{x.get()};
  for (auto& [k, v] : at) ptrs.insert(ptrs.end(), {k.get(), v.get()});
  UOp out = simplified_.at(ptrs).first;
  adopt(out);
  return out;
}

// The nodes of root made while rendering (blocking), analyzed and numbered after the kernel's
// own, in one walk: nodes analyzed before are numbered too, and numbered ones not analyzed are
// only the kernel's nodes outside its ast (which rendering reaches only as copies' leaves).
void KernelRenderer::adopt(UOp root) {
  for (UOp u : fresh_nodes(root, [&](const UOpNode* n) { return analyzed_.count(n) > 0; })) {
    analyze_node(u);
    if (printed_.number.emplace(u.get(), printed_.order.size()).second) printed_.order.push_back(u);
  }
}

}  // namespace ow::backend::detail
