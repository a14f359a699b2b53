// NodeSet: a set of nodes for graph walks (toposort and the like), which ask "seen?" once per edge.
// Open addressing with linear probing over a power-of-two table of pointers: one array, no
// allocation per element. std::unordered_set allocates a list node per insert, and in a lowering
// those walks are a tenth of all instructions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ow {

struct UOpNode;

class NodeSet {
 public:
  explicit NodeSet(size_t expected = 0) { grow(expected < 8 ? 16 : 2 * expected); }

  // True when n was not in the set (and now is).
  bool insert(const UOpNode* n) {
    if (2 * (size_ + 1) > slots_.size()) grow(2 * slots_.size());
    size_t i = probe(n);
    if (slots_[i] == n) return false;
    slots_[i] = n;
    ++size_;
    return true;
  }
  bool contains(const UOpNode* n) const { return slots_[probe(n)] == n; }
  size_t size() const { return size_; }

 private:
  std::vector<const UOpNode*> slots_;  // nullptr: empty
  size_t size_ = 0;

  // The slot holding n, or the empty slot where it would go.
  size_t probe(const UOpNode* n) const {
    size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((reinterpret_cast<uintptr_t>(n) >> 4) * 0x9e3779b97f4a7c15ULL >> 20) & mask;
    while (slots_[i] && slots_[i] != n) i = (i + 1) & mask;
    return i;
  }
  void grow(size_t capacity) {
    size_t c = 16;
    while (c < capacity) c *= 2;
    std::vector<const UOpNode*> old = std::move(slots_);
    slots_.assign(c, nullptr);
    size_ = 0;
    for (const UOpNode* n : old)
      if (n) slots_[probe(n)] = n, ++size_;
  }
};

}  // namespace ow
