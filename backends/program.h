// Running a kernel-level program (reference/LOWERING.md) on a backend:
//   interp  each kernel evaluated by the reference interpreter (interp::Kernel);
//   tcc/cc  each kernel rendered to C (backends/c), compiled (backends/compiler.h) and called;
//   check   both, in lockstep: after every launch the buffers the kernel wrote are compared, and
//           the first divergence is an error naming the kernel, the host-loop bindings, the
//           element and both values.
// All of them walk the program through walk_host (uop/host_program.h), which checks the BINDs.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/compiler.h"
#include "interp/inputs.h"
#include "interp/interp.h"
#include "uop/host_program.h"
#include "uop/error.h"
#include "uop/uop.h"

namespace ow::backend {

// Backend check found a kernel (or an output) that disagrees with the interpreter. An Error like
// any other, but a caller that reports agreement as data (ow serve's check) can tell it apart.
// `where` says which: a kernel's launch diverged, or every kernel agreed and an output still
// differs (a lowering pass changed the meaning).
struct CheckMismatch : Error {
  enum class Where { Kernel, Output };
  CheckMismatch(Where where, const std::string& what) : Error(what), where(where) {}
  Where where;
};

// A compiled kernel reported an error through its err[] slots (c/kernel_abi.h): an access out
// of bounds, a division by zero, ...; the message names the kernel and the node.
struct KernelFailed : Error {
  using Error::Error;
};

struct RunOptions {
  Backend backend = Backend::Tcc;
  Backend compiler = Backend::Tcc;  // for check: which compiled tier (Tcc or Cc) to compare against
  bool bounds_check = false;    // compiled kernels check every access
  // tcc/cc/check: "program" compiles every kernel of the program in one translation unit (one
  // compile), with its host loops of launches as C loops (used when no hook watches every
  // launch); "kernel" compiles each kernel alone (the old way, kept to compare: ow bench).
  std::string compile_mode = "program";
  uint64_t max_launches = 0;    // kernel launches allowed per run (0: unlimited)
  std::set<std::string> skip_passes;  // optional lowering passes not to run (lower::Context::skip)
  // Called after every kernel launch: kernel, host-loop bindings (name, value).
  std::function<void(UOp, const std::vector<std::pair<std::string, int64_t>>&)> on_launch;
  // Told of every point of the walk (not launch, which is the runner's), after the runner.
  HostHooks* observer = nullptr;
  // The caller has verified the graph (require_valid) and checks every run's buffers against
  // it (interp::check_inputs) itself, in its own words (ow run: the file's lines, --in hints):
  // a CompiledGraph then does neither again.
  bool graph_checked = false;
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

  // Buffers the tensor-level graph writes though the lowered program no longer does (a store in
  // a loop of zero iterations): they are not inputs, and when not given they are uninitialized,
  // exactly as the graph's interpreter sees them.
  void graph_writes(const std::vector<interp::BufferSpec>& graph_specs);

  const HostProgram& host() const;  // the program's steps, launches and outputs
  // The backend runs use: the backend asked for, except auto: Tcc until cc is ready, then Cc.
  Backend tier() const;
  std::string tier_error() const;  // auto: why cc could not compile the program ("" if it could)
  // The compile() calls made to prepare it (compiled backends; zeros for interp): one for the
  // whole program in compile mode "program", one per kernel in "kernel".
  CompileStats compile_stats() const;

 private:
  friend class CompiledGraph;
  // run() after its input check: for a CompiledGraph, which has checked the buffers against
  // the tensor-level graph (the inputs a graph needs do not depend on how it was lowered).
  std::vector<interp::Output> run_checked(interp::BufferMap& buffers);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot: Program(program, opts).run(buffers).
std::vector<interp::Output> run_program(UOp program, interp::BufferMap& buffers, const RunOptions& opts = {});

// A tensor-level graph lowered (src/lower) and made ready once, then run many times: what
// run_graph does per call, kept so a long-lived caller (ow serve) compiles each graph once.
// Backend interp has nothing to prepare: run is interp::run on the graph.
class CompiledGraph {
 public:
  // Lowers, renders and compiles at the first run (so check mode's interpreter speaks first: a
  // graph it refuses is refused with its message, not with a lowering's); throws ow::Error.
  CompiledGraph(UOp graph, RunOptions opts);
  std::vector<interp::Output> run(interp::BufferMap& buffers);

 private:
  UOp graph_;
  RunOptions opts_;
  std::vector<interp::BufferSpec> specs_;  // the graph's buffers: what a run accepts
  std::unique_ptr<Program> program_;  // none for backend interp
  std::vector<std::string> declared_; // buffers the lowered program still declares or outputs

  std::vector<interp::Output> run_lowered(interp::BufferMap& buffers);
  void prepare();  // lower and compile, once
};

// Lowers a tensor-level graph and runs it: CompiledGraph(graph, opts).run(buffers).
std::vector<interp::Output> run_graph(UOp graph, interp::BufferMap& buffers, const RunOptions& opts = {});

}  // namespace ow::backend
