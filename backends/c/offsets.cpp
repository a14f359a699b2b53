// Index arithmetic the vector folds make while rendering (folds.cpp, tiles.cpp): b's offsets per
// row and column, simplified in one rewrite, then analyzed and numbered like the kernel's own
// nodes, in time proportional to what is new (every traversal here stops at nodes seen before).
#include "kernel_renderer.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

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
    roots.push_back(at.size() == 1 ? substitute_range(x, at[0].first, at[0].second) : substitute(x, at));
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

// The nodes of root made while rendering, analyzed and numbered after the kernel's
// own, in one walk: nodes analyzed before are numbered too, and numbered ones not analyzed are
// only the kernel's nodes outside its ast (which rendering reaches only as leaves of new nodes).
void KernelRenderer::adopt(UOp root) {
  for (UOp u : fresh_nodes(root, [&](const UOpNode* n) { return analyzed_.count(n) > 0; })) {
    analyze_node(u);
    if (printed_.number.emplace(u.get(), printed_.order.size()).second) printed_.order.push_back(u);
  }
}

}  // namespace ow::backend::detail
