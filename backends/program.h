// Running a kernel-level program (reference/LOWERING.md) on a backend:
//   interp  each kernel evaluated by the reference interpreter (interp::Kernel);
//   tcc/cc  each kernel rendered to C (backends/c), compiled (backends/compiler.h) and called;
//   check   both, in lockstep: after every launch the buffers the kernel wrote are compared, and
//           the first divergence is an error naming the kernel, the host-loop bindings, the
//           element and both values.
// The host walk (GROUP in order, END over OUTER ranges as loops) is the same for all of them.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::backend {

struct RunOptions {
  std::string backend = "tcc";  // interp | tcc | cc | check (check compiles with `compiler`)
  std::string compiler = "tcc"; // for check: which compiled tier to compare against
  bool bounds_check = false;    // compiled kernels check every access
  // Called after every kernel launch: kernel, host-loop bindings (name, value).
  std::function<void(UOp, const std::vector<std::pair<std::string, int64_t>>&)> on_launch;
};

// Runs a lowered program: `buffers` supplies inputs by name and receives every buffer the
// program writes; buffers it reads but that were not given start zeroed (compiled) or
// uninitialized (interp). Returns the outputs named by the program's SINK.
std::vector<interp::Output> run_program(UOp program, interp::BufferMap& buffers, const RunOptions& opts = {});

// Lowers a tensor-level graph (src/lower) and runs it: the compiled path in one call.
std::vector<interp::Output> run_graph(UOp graph, interp::BufferMap& buffers, const RunOptions& opts = {});

}  // namespace ow::backend
