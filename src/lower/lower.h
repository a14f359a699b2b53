// Lowering: tensor graph -> kernel-level program (reference/LOWERING.md), as a flat list of
// named passes. Each pass is a rule table run by graph_rewrite; every intermediate graph is one
// the interpreter evaluates, so a pass that changes an output can be named (ow check --passes).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lower/walk.h"
#include "opt/opt.h"
#include "uop/error.h"
#include "uop/pattern.h"
#include "uop/uop.h"

namespace ow::lower {

// State shared by the passes of one lowering: counters for fresh names, what to skip, the
// kernel-opt target. State private to a pass lives in the pass (realize, scans, kernelize).
struct Context {
  int64_t next_range = 1000;  // fresh loop ranges are 1000, 1001, ... (user ranges are small)
  int next_buffer = 0;        // temporaries _t0, _acc1, _w2, ...
  int next_kernel = 0;        // kernels k0, k1, ...
  std::function<void(const Rule&, UOp, UOp)> on_fire;   // every rule firing (ow explain)
  // Optional passes and steps not to run (ow run/lower --skip-pass): to see what one buys, and to
  // keep the pipeline as it was before it for side-by-side measurements (ow bench).
  std::set<std::string> skip;
  // Set: the pipeline ends with the kernel-opt stage's passes for this target (ow lower, check
  // --passes, explain). Unset: it ends at fuse, and a backend runs the stage for its compiler.
  std::optional<opt::Options> kernel_opt;

  UOp fresh_range(UOp extent, AxisType axis);
  std::set<std::string> taken;  // buffer names in use: the input's, the gradient pass's, and fresh ones
  void take_names(UOp root);     // marks the buffer names of a graph as in use
  std::string fresh_buffer(const std::string& prefix) {
    std::string name;
    do name = "_" + prefix + std::to_string(next_buffer++);
    while (!taken.insert(name).second);
    return name;
  }
};

struct Pass {
  std::string name;
  std::string what;  // one line for --help and ow explain
  std::function<UOp(UOp, Context&)> run;
  bool optional = false;  // an optimisation: the pipeline is correct without it (Context::skip)
  const opt::Pass* kernel_opt = nullptr;  // a pass of the kernel-opt stage: runs when Context::kernel_opt asks for its target
};

// The pipeline, in order: gradient, cleanup, empty, scans, realize, rangeify, kernelize, schedule,
// fuse, then the kernel-opt stage (opt::passes(): threads).
const std::vector<Pass>& passes();

// An optimisation inside a pass, skippable like an optional pass (Context::skip): without it the
// pass takes its general route for the same nodes.
struct OptionalStep {
  std::string name;
  std::string pass;  // the pass that asks Context::skip for it
  std::string what;
};
const std::vector<OptionalStep>& optional_steps();

// The error for a graph the compiled path does not handle yet:
// `throw unsupported(Reason::SymbolicShape, "a STORE into ...")`.
using Reason = Unsupported::Reason;
Unsupported unsupported(Reason reason, const std::string& what);

// A context whose pipeline ends with the kernel-opt stage for `t`, with the options a run for t
// uses (opt::options_for): what the tools that show or check every pass run.
Context through_kernel_opt(opt::Target t, bool bounds_check = false);

// Runs the whole pipeline; after_each(pass, graph) sees every intermediate graph.
UOp lower(UOp root, const std::function<void(const Pass&, UOp)>& after_each = {});
UOp lower(UOp root, Context& ctx, const std::function<void(const Pass&, UOp)>& after_each = {});
// lower() of a graph its caller has verified (require_valid) already, so it is verified once: a
// compiled run (backends/program.cpp) verifies before it checks the inputs, and lowers after.
UOp lower_verified(UOp root, Context& ctx);

// The passes themselves (one file each).
UOp gradient(UOp root, Context& ctx);
UOp cleanup(UOp root, Context& ctx);
UOp empty(UOp root, Context& ctx);
UOp scans(UOp root, Context& ctx);
UOp realize(UOp root, Context& ctx);
UOp rangeify(UOp root, Context& ctx);
UOp kernelize(UOp root, Context& ctx);
UOp schedule(UOp root, Context& ctx);
UOp fuse(UOp root, Context& ctx);

// Shared rules: AFTER moves above views, so a read after a write indexes the buffer itself.
const PatternMatcher& view_rules();
// INDEX pushed through movement, elementwise and reduce ops (rangeify; kernelize reuses it for
// the address a STORE writes).
const PatternMatcher& index_rules();

// Runs a rule table over a graph with the context's firing hook and a name for errors.
UOp rewrite(UOp root, const PatternMatcher& pm, Context& ctx, const std::string& name, bool parents_first = false);
// ... whose rules read a pass's own state (m.context<State>()) instead of the Context.
template <class State>
UOp rewrite_with(UOp root, const PatternMatcher& pm, State& state, const Context& ctx, const std::string& name, bool parents_first = false) {
  RewriteOptions opts;
  opts.name = name;
  opts.ctx = &state;
  opts.bottom_up = parents_first;
  opts.on_fire = ctx.on_fire;
  return graph_rewrite(root, pm, opts);
}

}  // namespace ow::lower
