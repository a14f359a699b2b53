// The runner's launchers (backends/program.cpp): one way each of running a lowered program's
// kernels, behind one interface. Internal to backends/: program.cpp walks the program and owns
// the buffers; compiled_launcher.cpp renders, compiles and calls the C.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/compiler.h"
#include "interp/interp.h"
#include "uop/host_program.h"

namespace ow::backend {

// "step budget exceeded: ..." for the launch of l with the host loops at b.
std::string budget_message(uint64_t max, const HostLaunch& l, const HostBindings& b);

// What a launcher running a whole host loop needs of the run (Host).
class LoopHost {
 public:
  virtual ~LoopHost() = default;
  virtual interp::BufferData* const* slots(const HostLaunch& l) = 0;  // l's buffers in this run
  virtual uint64_t& launches() = 0;                                    // launches so far
  virtual uint64_t max_launches() const = 0;                           // 0: no limit
  virtual const HostProgram& program() const = 0;
};

// One way of running a kernel on a set of buffers. slots[i] is the buffer of the launch's
// DEFINE_GLOBAL slot i, values[j] the value of its BIND j (HostHooks::launch).
class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual void prepare(const HostProgram& p) = 0;  // render/compile ahead of the first launch
  virtual void begin_run(const interp::BufferMap& /*caller*/) {}  // the caller's buffers, as given
  virtual void launch(const HostLaunch& l, interp::BufferData* const* slots, const int64_t* values, const HostBindings& loops) = 0;
  // Whether its runs track uninitialized memory themselves; compiled kernels do not, so a
  // compiled run that may read some runs the interpreter first (check_uninitialized).
  virtual bool tracks_poison() const { return false; }
  virtual CompileStats compile_stats() const { return {}; }  // its compiler's (none: zeros)
  // Runs all n iterations of a host loop itself, or returns false (the walk runs them).
  virtual bool run_loop(const HostStep& /*loop*/, int64_t /*n*/, const HostBindings& /*outer*/, LoopHost& /*host*/) { return false; }
};

// Compiled kernels on compiler Tcc or Cc; mode "program" (one unit, one compile, host loops
// of launches in C) or "kernel" (one compile per kernel). ow::Error for another mode.
std::unique_ptr<Launcher> make_compiled_launcher(Backend compiler, bool bounds_check, const std::string& mode);

}  // namespace ow::backend
