// The host side of a lowered program (reference/LOWERING.md "Kernel-level program") as plain
// structs, built once from the graph by host_program(), and the one walk over it, walk_host().
// Every consumer of a lowered program walks it here: the runner of every backend and its
// observers (backends/program.cpp: compiled, interp, check, the report's timeline) and the host
// schedule text of `ow show-c` (backends/c/host_text.cpp). The walk checks every BIND (inside its
// variable's bounds, one value per variable in a launch) with the interpreter's messages; the
// interpreter, which evaluates every stage of lowering and not only this form, makes the same
// check through bind_refusal(). Here, below every layer that uses it: it needs only the UOp core.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ow {

struct HostBind {
  UOp node;   // BIND index (DEFINE_VAR ("name", lo, hi), value)
  UOp value;  // index math over the ranges of the enclosing host loops
};

struct HostLaunch {
  UOp kernel;                   // KERNEL void (ast, buf..., bind...)
  std::string name;             // the KERNEL's name ("kernel" if it has none)
  std::vector<UOp> buffers;     // the BUFFER bound to DEFINE_GLOBAL slot 0, 1, ...
  std::vector<HostBind> binds;
  size_t index = 0;             // its position in HostProgram::launches (runners keep per-launch state by it)
};

// A launch, or a host loop over one OUTER range (an END over several ranges is a nest of
// loops, its first range outermost) whose body runs once per value of the range, in order.
struct HostStep {
  size_t launch = 0;  // a launch: HostProgram::launches[launch]
  UOp range;          // a loop: its RANGE (the extent is range->src[0]); null for a launch
  std::vector<HostStep> body;
  bool is_loop() const { return static_cast<bool>(range); }
};

struct HostOutput {
  std::string name;            // the SINK's name for it
  UOp buffer;                  // the BUFFER holding it
  std::vector<int64_t> shape;  // the shape the program's view gives it
};

struct HostProgram {
  UOp root;                          // the lowered graph (messages number its nodes)
  std::vector<HostStep> steps;       // the top level, in order
  std::vector<HostLaunch> launches;  // one per KERNEL node, in the order first launched
  std::vector<HostOutput> outputs;   // the SINK's values, read after every step (void ones skipped)
};

// Throws ow::Error when `lowered` is not in the form (a KERNEL source that is neither a BUFFER
// nor a BIND, an output that is not a view of a BUFFER).
HostProgram host_program(UOp lowered);

using HostBindings = std::vector<std::pair<UOp, int64_t>>;  // host-loop range -> value, outermost first
using HostVars = std::map<std::string, int64_t>;            // a launch's variables by name

// What a consumer does at each point of the walk; every hook is optional.
class HostHooks {
 public:
  virtual ~HostHooks() = default;
  virtual void begin_run() {}
  virtual void loop_begin(const HostStep& /*loop*/, const HostBindings& /*outer*/) {}
  virtual void before_launch(const HostLaunch&, const HostBindings&) {}
  // Runs the kernel; values[i] is the value of launch.binds[i], already checked (a plain array,
  // so a launch costs no allocation; host_vars() makes the map). Not called by an outline walk.
  virtual void launch(const HostLaunch&, const int64_t* /*values*/, const HostBindings&) {}
  virtual void after_launch(const HostLaunch&, const HostBindings&) {}
  // A loop of n iterations about to run (after loop_begin): true if the hooks ran all of it
  // themselves (a loop compiled into the program's C), so the walk skips its iterations.
  virtual bool run_loop(const HostStep& /*loop*/, int64_t /*n*/, const HostBindings& /*outer*/) { return false; }
  virtual void loop_end(const HostStep& /*loop*/, const HostBindings& /*outer*/) {}
  virtual void end_run() {}
};

// Run: loops iterate and every launch's BINDs are evaluated and checked. Outline: each step
// once, as written (a text of the schedule): bindings list the enclosing loops' ranges, all 0.
enum class HostWalk { Run, Outline };

void walk_host(const HostProgram& program, HostHooks& hooks, HostWalk mode = HostWalk::Run);

// Why a BIND of `value` is refused ("" when it is not): outside its variable's bounds, or a
// second value for a variable `bound` already holds in the same launch.
std::string bind_refusal(UOp bind, int64_t value, const HostVars& bound);

// The walk's error for launch l's BINDs with the host loops at `b` ("" when it accepts them): for
// a runner that ran a loop itself and was refused a BIND, to say it in the walk's words.
std::string bind_error(const HostProgram& p, const HostLaunch& l, const HostBindings& b);

// A launch's variables by name, from the values the walk hands to HostHooks::launch.
HostVars host_vars(const HostLaunch& launch, const int64_t* values);

// Range bindings for messages, every runner and tool alike: "m1=2, m2=0", or "no ranges bound".
std::string bindings_text(const HostBindings& b);

}  // namespace ow
