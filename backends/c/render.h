// C renderer for kernel-level asts (reference/LOWERING.md "Kernel-level program").
//
// render_kernel turns one KERNEL into a self-contained C translation unit (no #include) with
//   int <name>(void** bufs, const long long* vars, long long* err);
// bufs[slot] is the buffer of DEFINE_GLOBAL slot, vars[j] the value of the variable
// RenderedKernel::vars[j]. It returns 0 on success, or an error kind with err[] filled as
// kernel_abi.h defines (division by zero, out-of-bounds access; the node, the bad index).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opt/opt.h"
#include "uop/host_program.h"
#include "uop/uop.h"

namespace ow::backend {

// The compiler a unit is written for (opt::Target). Each gets only its own loop shapes: tcc,
// which never unrolls or vectorizes, unrolled inner loops and calls to loops compiled ahead of
// time (backends/tcc/vector_loops.h); cc register tiles and transposing copies. Results are the
// same bits on both (backends/README.md).
using opt::Target;

struct RenderOptions {
  bool bounds_check = false;  // check 0 <= index < size on every (ungated or enabled) access
  Target target = Target::cc;
};

// The prelude's optional parts (prelude.cpp): what a kernel's nodes need beyond the helpers
// every kernel gets. Decided on the kernel's nodes as the renderer reads them.
struct PreludeParts {
  bool narrow = false;    // a node of float16, bfloat16 or an fp8: their conversions
  bool threefry = false;  // a THREEFRY
  PreludeParts& operator|=(PreludeParts o) {
    narrow = narrow || o.narrow, threefry = threefry || o.threefry;
    return *this;
  }
};

struct RenderedKernel {
  std::string name;               // the C function's name (the KERNEL's arg, as an identifier)
  std::string own_name;           // the kernel's own function name: `name` unless it runs another kernel's (render_unit)
  std::string source;             // complete C translation unit, prelude included
  std::string function;           // the function alone: `source` is prelude(target, parts) + function
  PreludeParts parts;             // the prelude's parts the function needs
  std::vector<DType> params;      // per DEFINE_GLOBAL slot: its pointer dtype (void if unused)
  std::vector<std::string> vars;  // DEFINE_VAR names in the order of `vars`
  std::map<long long, std::string> fail_nodes;  // err[abi::kNode] -> that node's printed line
};

// kernel = KERNEL void (ast, buf..., BIND...) ("k3",), as the C function `name` (empty: the
// kernel's name as an identifier). A kernel for two threads ("k3", 2) is one for cc (tcc: its
// statements in order, one thread). Throws ow::Error naming the node for anything unsupported
// (float16, ops the interpreter lacks) or malformed.
RenderedKernel render_kernel(UOp kernel, const RenderOptions& opts = {}, const std::string& name = "");

// All kernels of a program in one C translation unit: the prelude once, then one function per
// kernel. Compiling it is one compiler call for the whole program (tcc: one in-process compile;
// cc: one process), instead of one per kernel.
// One launch of a compiled loop nest, at its position in the nest (err[abi::kLaunch]).
struct NestLaunch {
  size_t launch = 0;        // HostProgram::launches[launch]
  std::vector<UOp> loops;   // the nest's loops around it, outermost first (loops[0]: the compiled loop's range)
};
struct RenderedLoop {
  const HostStep* step = nullptr;  // the host loop (in the HostProgram rendered)
  std::string name;                // its function in the unit
  std::vector<UOp> outer;          // the ranges of the loops around it, outermost first
  std::string function;            // its C text
  std::vector<NestLaunch> launches;  // every launch of the nest, depth first (bufs[i] is launches[i]'s)
  size_t depth = 1;                  // the nest's loops, itself included: err needs abi::loop_slots(depth)
};
struct RenderedUnit {
  std::string source;
  // Per kernel, in the order given: `name` is its function in `source`, unique in the unit (a
  // second kernel whose name renders the same gets "_2", ...); `source` is its own, standalone.
  // A kernel whose C is an earlier one's but for names and comments runs that one's function:
  // its name, function and source are the earlier kernel's (own_name stays its own).
  std::vector<RenderedKernel> kernels;
  size_t shared = 0;  // kernels that run an earlier kernel's function
  PreludeParts parts;  // the prelude's parts of `source`: those its kernels need
  std::vector<RenderedLoop> loops;  // render_program_unit: the host loops compiled into the unit
};
RenderedUnit render_unit(const std::vector<UOp>& kernels, const RenderOptions& opts = {});

// The unit of a whole program as the runner compiles it: render_unit of its launches' kernels
// (kernels[i] is HostLaunch i's), then every outermost host loop made only of launches and such
// loops, as a function (render_host_loop) the runner may call instead of walking the loop.
RenderedUnit render_program_unit(const HostProgram& p, const RenderOptions& opts = {});

// A host loop whose body is launches and host loops of the same kind (to any depth), as the C
// function
//   int <name>(long long n, const long long* outer, void*** bufs, long long* launches,
//              long long max_launches, long long* err, unsigned char* ran)
// running iterations 0..n-1, its inner loops as nested C loops: outer[j] is the value of
// outer[j]'s range, bufs[i] the buffer array of RenderedLoop::launches[i], *launches counts
// launches against max_launches (0: no limit), err has abi::loop_slots(depth) entries, ran[i] is
// set to 1 when launches[i] completes (the runner then marks what it stored as data). Per launch
// it does what the host walk does, in its order. Returns 0, a kernel's error kind,
// abi::kBindRefused or abi::kBudgetExceeded (err: where, kernel_abi.h). nullopt when a BIND or an
// inner loop's extent is host math it does not render or a kernel variable has no BIND (the walk
// then runs the whole loop). Needs kHostLoopHelpers before it.
std::optional<RenderedLoop> render_host_loop(const HostProgram& p, const HostStep& loop, const std::vector<UOp>& outer, const std::vector<RenderedKernel>& kernels,
                                             const std::string& name);
extern const char* const kHostLoopHelpers;

// What a translation unit for `t` starts with: declarations and helper functions, with the
// optional parts `parts` asks for.
const std::string& prelude(Target t, PreludeParts parts);

// Human-readable host schedule of a kernel-level program (for `ow show-c`): host loops over
// OUTER ranges and kernel launches with their buffers and variable bindings (host_text.cpp).
std::string render_program(UOp program);

// ow show-c: the host schedule, then each kernel's function and the prelude they share, once;
// `full`: the translation unit exactly as the runner compiles it (render_unit).
std::string show_c(UOp program, const RenderOptions& opts = {}, bool full = false);

// `s` with every character that is not [A-Za-z0-9_] replaced by '_', never starting with a digit.
std::string c_identifier(const std::string& s);

}  // namespace ow::backend
