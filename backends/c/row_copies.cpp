// Copies of a nest's values for each iteration of a blocked range (loop_shapes.cpp, tiles.cpp),
// made in time proportional to what is new: a row of a block differs from the kernel's graph
// only in the nodes that depend on the blocked range, and every traversal here stops at nodes
// seen before. (Walking, substituting, analyzing and numbering the whole nest once per row took
// most of the render time of a blocked kernel.)
#include "kernel_renderer.h"
#include "uop/pattern.h"
#include "uop/symbolic.h"

namespace ow::backend::detail {

// The nodes under `root` for which known() is false, in toposort(root)'s order. The known nodes
// must be closed under sources (analyze and number_new always take whole graphs), so skipping
// their subgraphs leaves the order of the others unchanged.
std::vector<UOp> KernelRenderer::fresh_nodes(UOp root, const std::function<bool(const UOpNode*)>& known) const {
  std::vector<UOp> order;
  if (known(root.get())) return order;
  std::unordered_set<const UOpNode*> seen{root.get()};
  std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    if (next < u->src.size()) {
      UOp c = u->src[next++];
      if (!known(c.get()) && seen.insert(c.get()).second) stack.emplace_back(c, 0);
      continue;
    }
    order.push_back(u);
    stack.pop_back();
  }
  return order;
}

// x with range r replaced by v: substitute(), rebuilding only the nodes that depend on r (no
// REDUCE in a blocked nest binds its store ranges). The copies are kept per (r, v), so the
// REDUCEs of a row, reached again from its store, cost nothing more.
UOp KernelRenderer::substituted(UOp x, UOp r, UOp v) {
  Copies& c = copies_[{r.get(), v.get()}];
  c.keep = {r, v};
  c.of[r.get()] = v;
  std::vector<std::pair<UOp, size_t>> stack{{x, 0}};
  auto ready = [&](UOp u) { return !depends(u, r) || c.of.count(u.get()); };
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
    for (UOp s : u->src) src.push_back(depends(s, r) ? c.of.at(s.get()) : s);
    c.of[u.get()] = u.replace_src(std::move(src));
    stack.pop_back();
  }
  return depends(x, r) ? c.of.at(x.get()) : x;
}

// x for each iteration of the block: r -> start + u. New nodes are analyzed and numbered.
std::vector<UOp> KernelRenderer::in_block(UOp x, UOp r, UOp start, int block) {
  std::vector<UOp> out;
  for (int u = 0; u < block; ++u) {
    UOp xu = substituted(x, r, u ? start + u : start);
    analyze(xu);
    number_new(xu);
    out.push_back(xu);
  }
  return out;
}

// simplify(substitute(x, at)), analyzed and numbered, made once per (x, at): the rows of a block
// share b's index (a row of b serves them all), and each row asks for its offset again.
UOp KernelRenderer::simplified_at(UOp x, const std::vector<std::pair<UOp, UOp>>& at) {
  std::vector<UOp> key{x};
  for (auto& [k, v] : at) key.insert(key.end(), {k, v});
  std::vector<const UOpNode*> ptrs;
  for (UOp k : key) ptrs.push_back(k.get());
  auto [it, fresh] = simplified_.try_emplace(ptrs);
  if (fresh) {
    it->second = {simplify(substitute(x, at)), std::move(key)};  // key: its nodes stay alive while they key the map
    analyze(it->second.first);
    number_new(it->second.first);
  }
  return it->second.first;
}

// Nodes made while rendering (blocking) get numbers after the kernel's own.
void KernelRenderer::number_new(UOp root) {
  for (UOp u : fresh_nodes(root, [&](const UOpNode* n) { return printed_.number.count(n) > 0; })) {
    printed_.number.emplace(u.get(), printed_.order.size());
    printed_.order.push_back(u);
  }
}

}  // namespace ow::backend::detail
