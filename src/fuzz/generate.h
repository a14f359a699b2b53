// Random tensor-level graphs for differential fuzzing (ow fuzz): the interpreter defines every
// graph's meaning, the compiled path must agree bit for bit. Graphs are deterministic in the
// seed (ow::Random), valid (the verifier accepts them) and small (tens of nodes, tensors of at
// most a few thousand elements), and cover elementwise ops on float32/int32/bool, CAST, every
// movement op with size-1 and empty dims, REDUCE_AXIS, CONTIGUOUS, and the range forms of the
// reference cases: x[r] and range-bounded slices, vmap by pad+reduce (also over fewer
// iterations than rows, reading row r+k of a realized value), collecting expands (as
// outputs: nothing else shares their range dimension),
// REDUCEs over ranges of every AxisType, AFTER/STORE/END folds and scans, and assign scans.
// A share of the seeds gives gradient graphs instead: the same forms (plus vmapped multi-layer
// perceptrons) built from smooth float64 ops only, so that central differences can check them,
// with outputs GRADIENT(loss, x) for the loss's input and target buffers (sometimes of a
// GRADIENT itself: second order).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ow::fuzz {

struct GenOptions {
  int max_ops = 40;          // upper bound of the random op budget of one graph
  int64_t max_elems = 2000;  // no tensor (input, intermediate or output) is larger
  int max_outputs = 3;
  int gradient_percent = 25;  // share of seeds that give gradient graphs (smaller: max_elems 256)
};

struct Generated {
  UOp root;                        // SINK naming its outputs out0, out1, ...
  std::vector<std::string> forms;  // the constructs used ("vmap-collect", "assign-scan", ...)
  int attempts = 1;                // tries until a graph verified (a rejected try is a generator bug)
  // Gradient graphs only: root's outputs are GRADIENT(loss, x) for each x in vars, a view of a
  // whole float64 buffer (so a finite difference perturbs one of its elements).
  UOp loss;
  std::vector<UOp> vars;
};

// Does this seed give a gradient graph? (A hash of the seed, so the other seeds' graphs do not
// change with the share.)
bool is_gradient_seed(uint64_t seed, const GenOptions& opts = {});

// The same seed gives the same graph (print_graph is byte-identical) in every process.
Generated generate(uint64_t seed, const GenOptions& opts = {});

// ---- shrinking ----

// Still a finding? Called with valid (verified) candidate graphs only.
using Predicate = std::function<bool(UOp)>;

struct ShrinkStats {
  int tries = 0, accepted = 0;
  size_t nodes_before = 0, nodes_after = 0;
};

// Greedy delta debugging on the graph: drop outputs, replace a node by one of its sources of the
// same shape and dtype, replace a value by a constant of its shape, shrink integer constants
// (sizes, pads, range extents) together; keeps a candidate when it verifies and `still` holds.
// Stops after max_tries predicate calls.
UOp shrink(UOp root, const Predicate& still, ShrinkStats* stats = nullptr, int max_tries = 4000);

// Graph size as the shrinker measures it: node count plus the sum of static buffer sizes / 16.
size_t graph_cost(UOp root);

}  // namespace ow::fuzz
