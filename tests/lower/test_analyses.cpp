// Per-node analyses that lowering asks about every node of big graphs, checked against the
// plain computations they replace, on every reference case at every stage of its lowering:
//  - free_ranges, computed once per node when it is built (UOpNode::free);
//  - walk_items (lower/walk.h), a toposort walk that reuses the answer for subgraphs.
#include <catch2/catch.hpp>

#include "test_support.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "lower/lower.h"
#include "lower/walk.h"
#include "uop/text.h"
#include "uop/verify.h"

using namespace ow;
namespace fs = std::filesystem;

namespace {

// Every graph a reference case passes through while it is lowered.
std::vector<UOp> stages() {
  std::vector<UOp> out;
  for (const auto& e : fs::directory_iterator(ow::test::source_root() / "reference" / "cases")) {
    if (e.path().extension() != ".uop") continue;
    UOp g = parse_graph(ow::test::slurp(e.path()), e.path().string()).root;
    out.push_back(g);
    lower::lower(g, [&](const lower::Pass&, UOp after) { out.push_back(after); });
  }
  return out;
}

// The free ranges as verify.cpp computed them before they were kept in the node.
std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> brute_free(UOp root) {
  std::unordered_map<const UOpNode*, std::vector<const UOpNode*>> memo;
  for (UOp u : toposort(root)) {
    std::vector<const UOpNode*> out;
    for (UOp s : u->src) {
      std::vector<const UOpNode*> merged;
      std::set_union(out.begin(), out.end(), memo.at(s.get()).begin(), memo.at(s.get()).end(), std::back_inserter(merged));
      out.swap(merged);
    }
    if (u->op == Ops::RANGE) out.insert(std::lower_bound(out.begin(), out.end(), u.get()), u.get());
    std::vector<const UOpNode*> closed;
    if (u->op == Ops::REDUCE || u->op == Ops::END || u->op == Ops::BUFFERIZE)
      for (size_t i = 1; i < u->src.size(); ++i) closed.push_back(u->src[i].get());
    if (u->shape.kind == ShapeInfo::Kind::Shaped)
      for (UOp d : u->shape.dims)
        if (d->op == Ops::RANGE) closed.push_back(d.get());
    for (const UOpNode* c : closed) out.erase(std::remove(out.begin(), out.end(), c), out.end());
    memo[u.get()] = out;
  }
  return memo;
}

template <class Items> std::vector<UOp> brute_walk(UOp root, const Items& items) {
  std::vector<UOp> out;
  std::unordered_set<const UOpNode*> have;
  for (UOp u : toposort(root))
    for (UOp x : items(u))
      if (have.insert(x.get()).second) out.push_back(x);
  return out;
}

}  // namespace

TEST_CASE("free_ranges kept in the node equals recomputing them over the graph, at every lowering stage") {
  size_t nodes = 0;
  for (UOp g : stages()) {
    auto memo = brute_free(g);
    for (UOp u : toposort(g)) {
      std::vector<const UOpNode*> got;
      for (UOp r : free_ranges(u)) got.push_back(r.get());
      // handed out by (hash, creation order), not by address: the order of a gradient's REDUCE
      // ranges (its summation order and its temporaries' names) must not follow the allocator
      REQUIRE(std::is_sorted(got.begin(), got.end(), StableLess()));
      std::sort(got.begin(), got.end());
      REQUIRE(got == memo.at(u.get()));
      ++nodes;
    }
  }
  CHECK(nodes > 10000);
}

TEST_CASE("walk_items equals the toposort walk it replaces, whatever subgraphs it reuses") {
  auto self = [](UOp u) { return std::vector<UOp>{u}; };
  auto operands = [](UOp u) { return is_alu(u->op) ? u->src : std::vector<UOp>{}; };
  std::vector<std::function<bool(UOp)>> cuts = {
      [](UOp u) { return u->op == Ops::REDUCE_AXIS || u->op == Ops::BUFFERIZE; },
      [](UOp u) { return is_alu(u->op); },
      [](UOp u) { return u->hash % 3 == 0; },
      [](UOp) { return true; },
  };
  size_t roots = 0;
  for (UOp g : stages()) {
    for (const auto& cut : cuts) {
      lower::WalkMemo memo_self, memo_ops;  // shared by every root of the graph, as in a pass
      std::vector<UOp> order = toposort(g);
      for (size_t k = 0; k < order.size(); k += 7) {  // every 7th node as a root, sources first
        UOp root = order[k];
        REQUIRE(lower::walk_items(root, memo_self, self, cut) == toposort(root));
        REQUIRE(lower::walk_items(root, memo_ops, operands, cut) == brute_walk(root, operands));
        ++roots;
      }
    }
  }
  CHECK(roots > 1000);
}

