// Running a kernel-level program (reference/LOWERING.md) on a backend:
//   interp  each kernel evaluated by the reference interpreter (interp::Kernel);
//   tcc/cc  each kernel rendered to C (backends/c), compiled (backends/compiler.h) and called;
//   check   both, in lockstep: after every launch the buffers the kernel wrote are compared, and
//           the first divergence is an error naming the kernel, the host-loop bindings, the
//           element and both values.
// The host walk (GROUP in order, END over OUTER ranges as loops) is the same for all of them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::backend {

struct RunOptions {
  std::string backend = "tcc";  // interp | tcc | cc | check (check compiles with `compiler`)
  std::string compiler = "tcc"; // for check: which compiled tier to compare against
  bool bounds_check = false;    // compiled kernels check every access
  uint64_t max_launches = 0;    // kernel launches allowed per run (0: unlimited)
  // Called after every kernel launch: kernel, host-loop bindings (name, value).
  std::function<void(UOp, const std::vector<std::pair<std::string, int64_t>>&)> on_launch;
};

// A lowered program made ready to run many times: every kernel is rendered and compiled (or
// prepared for the interpreter) once, in the constructor, and the program's private
// temporaries (buffers named "_...") are kept from one run to the next.
class Program {
 public:
  explicit Program(UOp lowered, RunOptions opts = {});  // throws ow::Error (render, compile)
  ~Program();
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;

  // `buffers` supplies inputs by name and receives every named buffer the program writes;
  // buffers it reads but that were not given start zeroed (compiled) or uninitialized (interp).
  // Returns the outputs named by the program's SINK. An output computed into a temporary is
  // written in place into buffers[its name] when the caller put a buffer of that name, dtype
  // and size there and the program declares no buffer of that name (numpy's out=); the
  // returned value then shares that memory. Otherwise each run returns fresh memory.
  std::vector<interp::Output> run(interp::BufferMap& buffers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot: Program(program, opts).run(buffers).
std::vector<interp::Output> run_program(UOp program, interp::BufferMap& buffers, const RunOptions& opts = {});

// Lowers a tensor-level graph (src/lower) and runs it: the compiled path in one call.
std::vector<interp::Output> run_graph(UOp graph, interp::BufferMap& buffers, const RunOptions& opts = {});

}  // namespace ow::backend
