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
//
// Iterative: a cut node met for the first time suspends the walk that met it (a frame of its own
// on `frames`, not a C++ call), since cut nodes nest as deeply as the graph (a chain of 30,000
// realized values is 30,000 nested BUFFERIZEs). The suspended walk splices the finished list in
// at the point where it stopped, so the order is the recursive definition's.
template <class Items, class Cut>
std::vector<UOp> walk_items(UOp root, WalkMemo& memo, const Items& items, const Cut& cut) {
  struct Frame {
    UOp root;
    std::vector<UOp> out;
    std::unordered_set<const UOpNode*> have, seen;
    std::vector<std::pair<UOp, size_t>> stack;
  };
  auto add = [](Frame& f, const std::vector<UOp>& xs) {
    for (UOp x : xs)
      if (f.have.insert(x.get()).second) f.out.push_back(x);
  };
  std::vector<Frame> frames;
  auto begin = [&](UOp r) { frames.push_back(Frame{r, {}, {}, {r.get()}, {{r, 0}}}); };
  begin(root);
  for (;;) {
    Frame& f = frames.back();
    if (f.stack.empty()) {
      if (frames.size() == 1) return std::move(f.out);
      const std::vector<UOp>& list = memo.emplace(f.root.get(), std::move(f.out)).first->second;
      frames.pop_back();
      add(frames.back(), list);
      continue;
    }
    UOp u = f.stack.back().first;
    size_t i = f.stack.back().second++;
    if (i == u->src.size()) {
      add(f, items(u));
      f.stack.pop_back();
      continue;
    }
    UOp c = u->src[i];
    if (!f.seen.insert(c.get()).second) continue;
    if (!cut(c)) {
      f.stack.emplace_back(c, 0);
      continue;
    }
    if (auto it = memo.find(c.get()); it != memo.end()) add(f, it->second);
    else begin(c);  // f is not used after this: begin may move the frames
  }
}

}  // namespace ow::lower
