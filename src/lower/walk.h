// A toposort walk whose answer for a subgraph is computed once per lowering. Rules that look at
// everything under a node (a reduction's operands, the buffers a kernel reads) would otherwise
// walk every earlier layer again for each layer: quadratic in the depth of the graph.
#pragma once
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow::lower {

using WalkMemo = std::unordered_map<const UOpNode*, std::vector<UOp>>;

// The list that
//     for (UOp u : toposort(root)) for (UOp x : items(u)) if (x is new) out.push_back(x);
// gives, without entering the nodes `cut` accepts (but root): the list of such a node, kept in
// `memo` (one per lowering and per kind of items), is spliced in where toposort would emit it.
// That is the same list: toposort emits a node's sources before it, and dropping from a node's
// own toposort what was emitted before (a set closed under sources) leaves the order unchanged.
template <class Items, class Cut>
std::vector<UOp> walk_items(UOp root, WalkMemo& memo, const Items& items, const Cut& cut) {
  std::vector<UOp> out;
  std::unordered_set<const UOpNode*> have, seen{root.get()};
  auto add = [&](const std::vector<UOp>& xs) {
    for (UOp x : xs)
      if (have.insert(x.get()).second) out.push_back(x);
  };
  std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    UOp u = stack.back().first;
    size_t i = stack.back().second++;
    if (i == u->src.size()) {
      add(items(u));
      stack.pop_back();
      continue;
    }
    UOp c = u->src[i];
    if (!seen.insert(c.get()).second) continue;
    if (!cut(c)) {
      stack.emplace_back(c, 0);
      continue;
    }
    auto it = memo.find(c.get());
    if (it == memo.end()) it = memo.emplace(c.get(), walk_items(c, memo, items, cut)).first;
    add(it->second);
  }
  return out;
}

}  // namespace ow::lower
