// Scalar evaluation of one kernel-level ast (reference/LOWERING.md "Kernel-level program"):
//
//   ast   := SINK void (stmt...)       stmt := STORE(ptr, value) | END(stmt, r...) | GROUP(stmt...)
//   ptr   := INDEX T* (DEFINE_GLOBAL T*n () slot, linear[, gate]) | INDEX T* (DEFINE_REG T*n () k, linear)
//   value := CONST | DEFINE_VAR | RANGE | ALU/CAST/WHERE | LOAD T (ptr) | REDUCE T (value, r...) op
//
// The arithmetic is the tensor interpreter's (interp/scalar_ops.h, shared with elementwise.cpp), so a
// kernel and the tensor graph it came from agree bit for bit. Loads read every buffer as it was
// when the kernel was launched (buffers the kernel both loads and stores are copied first);
// stores land in loop order. Registers (DEFINE_REG) are the launch's own memory, zero at its
// start, read and written in statement order. Single-threaded and deterministic.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::interp {

struct KernelArgs {
  std::vector<BufferData*> buffers;         // DEFINE_GLOBAL slot i reads and writes *buffers[i] (in place)
  std::vector<std::string> names;           // optional: buffer names for diagnostics, per slot
  std::map<std::string, int64_t> vars;      // DEFINE_VAR values by name
};

struct KernelOptions {
  std::string name = "kernel";                // the kernel's name in diagnostics ("k0")
  std::function<std::string(UOp)> describe;   // names a node (default: its printed line in the ast)
  int64_t max_loop = 0;                       // largest range extent allowed (0: unlimited)
};

// A compiled kernel: compile once, run many times (e.g. once per host-loop iteration).
// Errors (ow::Error) name the node, the kernel and the loop bindings: out-of-bounds pointer
// index, integer division by zero, a poisoned index or gate used for an access, an unbound
// DEFINE_VAR, a DEFINE_GLOBAL slot with no buffer or of the wrong dtype.
class Kernel {
 public:
  explicit Kernel(UOp ast, KernelOptions opts = {});  // verifies and compiles; throws ow::Error
  ~Kernel();
  Kernel(Kernel&&) noexcept;
  Kernel& operator=(Kernel&&) noexcept;

  void run(const KernelArgs& args);
  uint64_t ops() const;           // scalar operations (node evaluations, folds, stores) of the last run

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience: Kernel(ast, opts).run(args).
void run_kernel(UOp ast, const KernelArgs& args, const KernelOptions& opts = {});

}  // namespace ow::interp
