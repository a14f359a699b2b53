// One graph of `ow fuzz` run each way (the interpreter, the compiled path in lockstep or alone,
// central differences), each run's result an Outcome whose kind comes from the type of what was
// thrown, never from its message: that kind crosses the fork of an isolated run as one character
// and names the finding's category.
#pragma once
#include <string>

#include "backends/backend.h"
#include "fuzz/gradcheck.h"
#include "interp/interp.h"
#include "uop/uop.h"

namespace ow::cli::fuzz_run {

enum class Kind : char {
  Ok = '1',
  User = '0',               // an ow::Error of no more specific type
  Unsupported = 'u',        // the compiled path's limits: counted by reason (the label), not a finding
  Uninitialized = 'p',
  Budget = 'b',
  NotDifferentiable = 'g',  // a gradient refused with its reason: counted, not a finding
  KernelDiverges = 'm',     // check: a kernel's launch disagrees with the interpreter
  OutputMismatch = 'o',     // check: every kernel agreed, an output did not
  KernelFailed = 'k',       // a compiled kernel reported an error (err[] slots)
  Internal = 'i',
};

struct Outcome {
  bool ok = true;
  std::string error;
  Kind kind = Kind::Ok;
  std::string label;  // the category, where the producer knows it better than the type (one line)
};

Outcome failed(const std::string& error, Kind kind = Kind::User, const std::string& label = "");

// A coarse class of a failure, so the shrinker keeps the same kind of failure.
std::string category(const Outcome& o);

// The buffers of `all` that the graph only reads: the ones it writes are left without data.
interp::BufferMap only_inputs(UOp g, const interp::BufferMap& all);

// The interpreter on the tensor graph (the definition).
Outcome interpret(UOp g, const interp::BufferMap& inputs);
// A gradient graph whose losses the interpreter evaluates but whose gradients it neither
// evaluates nor refuses: the expansion built something wrong.
Outcome expansion(UOp g, const interp::BufferMap& inputs);

// The interpreter with every REDUCE_AXIS operand folded without materializing it (S3.4) against
// the interpreter materializing them all: the same outputs bit for bit, or both an error.
Outcome virtual_folds(UOp g, const interp::BufferMap& inputs);
// ow fuzz --passes: every lowering pass's graph evaluated by the interpreter and compared with
// the input graph's outputs (ow check --passes); a stage that fails to evaluate or changes an
// output is a finding labelled "pass-NAME", the compiled path's refusals are Unsupported.
Outcome passes(UOp g, const interp::BufferMap& inputs);
// The gradients of a gradient graph against central differences (after the interpreter has
// evaluated it, so an error here is a finding).
Outcome finite_differences(UOp g, const interp::BufferMap& inputs, uint64_t seed, fuzz::FdCheck* stats = nullptr);

// How the compiled path runs: on which tier, in lockstep with the interpreter (check) or
// alone (direct, as `ow run --backend tcc`), in a child process or in this one.
struct CompiledRun {
  bool bounds_check = true;
  bool fork = true;
  int timeout_s = 30;  // a child taking longer is a hang finding
};
Outcome compiled(UOp g, const interp::BufferMap& inputs, backend::Backend tier, const CompiledRun& how, bool direct = false);

}  // namespace ow::cli::fuzz_run
