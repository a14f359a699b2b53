// A reduction over a value no one stores (SEMANTICS S3.4). tinygrad builds arange, cumsum,
// one-hot indexing and Tensor.rand's counters as a REDUCE_AXIS over a window: a broadcast
// constant, padded, expanded to (n+1, 2n-1), reshaped and shrunk. Materialized, that window has
// n^2 elements (5*10^11 for a dropout mask of 10^6); read where the fold reads it, it is a few
// runs of equal values per output.
//
// The operand's tree of movement and elementwise nodes is kept as a tree (VirtualTree); its
// other nodes are leaves, evaluated as usual. fold_virtual folds each output's reduced indices in
// the order of reduce_axes, a run at a time: a run is a stretch of consecutive reduced indices
// along which every node reads its source at an affine index and every PAD is wholly inside or
// outside its source, so the run's value is one constant, or a strided read of a leaf pushed
// through the tree's ops once. A constant run folds in closed form where that is exact (integer
// sums and products modulo 2^bits, MAX, float sums whose partial sums are all representable),
// and term by term otherwise. The result is bit-identical to reduce_axes on the materialized
// operand; memory is the output and one run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "interp/value.h"

namespace ow::interp {

struct VirtualNode {
  enum class Kind { Leaf, Same, Reshape, Expand, Pad, Shrink, Permute, Flip, Alu, Cast, Bitcast };
  Kind kind = Kind::Leaf;
  Ops op = Ops::NOOP;                // Alu
  DType dtype;                       // the node's dtype
  std::vector<int64_t> shape;        // empty and unshaped for an unshaped node (broadcasts)
  bool unshaped = false;
  std::vector<int64_t> lo, hi;       // Pad: leading and trailing widths; Shrink: starts and ends
  std::vector<int64_t> perm;         // Permute
  std::vector<bool> flip;            // Flip
  std::vector<size_t> kids;          // value sources, in order (later in the tree than this node)
  Value leaf;                        // Leaf: the evaluated value (no poison, no footprint)
};

// Nodes in preorder: node 0 is the root, every node's kids come after it.
struct VirtualTree {
  std::vector<VirtualNode> nodes;
  // Checks and sets the shapes of every node but the leaves (already set), kids first; false
  // when they do not fit (the graph is then evaluated as usual, which names the error).
  bool infer_shapes();
  // The largest value evaluating the tree node by node would allocate (elements).
  int64_t materialized_elements(Ops reduce_op) const;
  // About how many runs REDUCE_AXIS over `axes` folds (from a sample of its outputs): the
  // fold's time, where materializing takes time in materialized_elements.
  int64_t estimate_runs(const std::vector<int64_t>& axes) const;
};

// REDUCE_AXIS(op, tree) (the same value as reduce_axes(op, materialized tree, axes)).
Value fold_virtual(Ops op, const VirtualTree& t, const std::vector<int64_t>& axes);

}  // namespace ow::interp
