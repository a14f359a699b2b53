// The reference interpreter: evaluates a tensor-level graph directly and so defines what every
// op means (reference/SEMANTICS.md). Single-threaded and deterministic.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "interp/value.h"
#include "uop/host_program.h"
#include "uop/uop.h"

namespace ow::interp {

// A named buffer's contents: flat storage plus a poison mask (null: fully initialized).
struct BufferData {
  DType dtype;
  StoragePtr data;
  StoragePtr poison;
};
using BufferMap = std::map<std::string, BufferData>;

// Deep copies (data and poison masks): run() writes buffers in place.
BufferData copy_buffer(const BufferData& d);
BufferMap copy_buffers(const BufferMap& b);

// One evaluation step, for --trace and the stepper.
struct Step {
  UOp node;
  std::vector<std::pair<UOp, int64_t>> bindings;  // range -> value, outermost first
  const Value* value;
};

struct Options {
  std::function<void(const Step&)> on_step;     // called after every node evaluation
  // Called right before a node is computed (after the memo lookup, so each call is followed by
  // on_step for the same node unless evaluation throws) and at the start of a KERNEL launch.
  // Lets a debugger keep the evaluation stack (ow step's `where`); it never changes a value.
  std::function<void(UOp)> on_enter;
  std::function<std::string(UOp)> describe;     // names a node in diagnostics (default: printed line)
  size_t max_depth = 3000;                      // recursion guard for very deep graphs
  uint64_t max_evals = 0;                       // node evaluations allowed (0: unlimited)
  int64_t max_loop = 0;                         // largest range extent allowed (0: unlimited)
  // A REDUCE_AXIS whose operand would materialize more elements than this is folded without
  // materializing it (SEMANTICS S3.4, interp/virtual_fold.h); the value is the same bit for bit.
  // 0: wherever it can be; -1: never.
  int64_t virtual_fold_min = int64_t{1} << 22;
};

struct Output {
  std::string name;
  Value value;  // contiguous, poison-free (poison reaching an output is an error)
};

// Evaluates the graph under root (usually a SINK naming its outputs). `buffers` supplies the
// inputs by name; buffers the graph writes are updated in place, and buffers it reads but that
// are absent start uninitialized (poison). Throws ow::Error naming the node and the bindings.
std::vector<Output> run(UOp root, BufferMap& buffers, const Options& opts = {});

using ow::bindings_text;  // "m1=2, m2=0" (uop/host_program.h)

}  // namespace ow::interp
