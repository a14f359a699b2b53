// The pipeline: read it top to bottom (reference/LOWERING.md describes each stage's forms).
#include "lower/lower.h"

#include <algorithm>
#include <set>

#include "uop/args.h"
#include "uop/text.h"
#include "uop/verify.h"

namespace ow::lower {

UOp Context::fresh_range(UOp extent, AxisType axis) { return UOp::range(extent, next_range++, axis); }

Context through_kernel_opt(opt::Target t, bool bounds_check) {
  Context ctx;
  ctx.kernel_opt = opt::options_for(t, bounds_check);
  return ctx;
}

void Context::take_names(UOp root) {
  for (UOp u : toposort(root))
    if (u->op == Ops::BUFFER) taken.insert(buffer_name(u));
}

namespace {

std::vector<Pass> pipeline() {
  std::vector<Pass> list{
      {"gradient", "GRADIENT nodes become the graphs that compute them (reverse mode, through effects)", gradient},
      {"cleanup", "drop forward identities (DETACH, REDUCE_BACKWARD, ...), fold reshape chains, simplify", cleanup},
      {"empty", "tensors without elements become zeros, reductions over nothing their identity, empty loops nothing", empty},
      {"scans", "REDUCE over OUTER ranges and assign scans become sequential loops over buffers", scans},
      {"realize", "mark realize points with CONTIGUOUS: outputs, reductions, stores that read their target", realize},
      {"rangeify", "realize points become BUFFERIZE over fresh ranges; movement ops become index math", rangeify},
      {"kernelize", "every BUFFERIZE and STORE becomes a KERNEL over DEFINE_GLOBAL buffers", kernelize},
      {"schedule", "order kernels into host steps; OUTER ranges become host loops", schedule},
      {"fuse", "a value kernel read only by the next launch is computed inside it, where provably the same", fuse, true},
  };
  for (const opt::Pass& k : opt::passes()) {
    std::string targets;
    for (opt::Target t : k.targets) targets += (targets.empty() ? "" : ", ") + std::string(opt::target_name(t));
    auto run = [&k](UOp root, Context& ctx) { return opt::run_pass(k, root, *ctx.kernel_opt, ctx.on_fire); };
    list.push_back({k.name, k.what + " (kernel-opt, for " + targets + ")", run, true, &k});
  }
  return list;
}

// Does the pipeline run p: any pass but the kernel-opt stage's, and those for the target asked.
bool runs(const Pass& p, const Context& ctx) {
  if (ctx.skip.count(p.name)) return false;
  if (!p.kernel_opt) return true;
  const auto& t = p.kernel_opt->targets;
  return ctx.kernel_opt && std::find(t.begin(), t.end(), ctx.kernel_opt->target) != t.end();
}

}  // namespace

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list = pipeline();
  return list;
}

const std::vector<OptionalStep>& optional_steps() {
  static const std::vector<OptionalStep> list{
      {"scan-in-place", "scans", "an assign scan of one slot per step writes the target in place, not through an accumulator"},
  };
  return list;
}

UOp rewrite(UOp root, const PatternMatcher& pm, Context& ctx, const std::string& name, bool parents_first) {
  return rewrite_with(root, pm, ctx, ctx, name, parents_first);
}

Unsupported unsupported(Reason reason, const std::string& what) { return Unsupported(reason, "lowering: " + what); }

namespace {

// Every name in ctx.skip must be an optional pass or step: a typo must not silently run the
// pipeline whole.
void check_skips(const Context& ctx) {
  for (const std::string& name : ctx.skip) {
    const auto& steps = optional_steps();
    if (std::any_of(steps.begin(), steps.end(), [&](const OptionalStep& s) { return s.name == name; })) continue;
    auto p = std::find_if(passes().begin(), passes().end(), [&](const Pass& q) { return q.name == name; });
    if (p == passes().end()) throw Error("lowering: cannot skip pass '" + name + "': there is no such pass (ow lower --list)");
    if (!p->optional) throw Error("lowering: cannot skip pass '" + name + "': later passes need its output (only optimisations can be skipped)");
  }
}

// Only a BIND gives a variable a value: the interpreter refuses a DEFINE_VAR it evaluates, so the
// compiled path refuses one used as anything but a BIND's variable (kernels would take it as a
// parameter that nothing binds).
void require_bound_variables(UOp root) {
  for (UOp u : toposort(root))
    for (size_t i = 0; i < u->src.size(); ++i)
      if (u->src[i]->op == Ops::DEFINE_VAR && !(u->op == Ops::BIND && i == 0))
        throw Error("variable is not bound to a value (use BIND)\n  at " + number_graph(root).line(u->src[i]));
}

// Lowering takes a tensor-level graph: a buffer slot (DEFINE_GLOBAL) and a LOAD through it are
// forms of a kernel's ast (LOWERING.md "Kernel-level program"), the user's error outside one.
void require_tensor_level(UOp root) {
  std::vector<UOp> todo{root};
  std::set<const UOpNode*> seen;
  while (!todo.empty()) {
    UOp u = todo.back();
    todo.pop_back();
    if (!seen.insert(u.get()).second) continue;
    if (u->op == Ops::DEFINE_GLOBAL || u->op == Ops::LOAD)
      throw Error("lowering takes a tensor-level graph: " + std::string(op_name(u->op)) + " belongs in a kernel's ast, and this one is outside any KERNEL\n  at " +
                  number_graph(root).line(u));
    for (size_t i = u->op == Ops::KERNEL ? 1 : 0; i < u->src.size(); ++i) todo.push_back(u->src[i]);
  }
}

UOp run_passes(UOp root, Context& ctx, const std::function<void(const Pass&, UOp)>& after_each) {
  require_tensor_level(root);
  require_bound_variables(root);
  ctx.take_names(root);
  for (const Pass& p : passes()) {
    if (!runs(p, ctx)) continue;
    root = p.run(root, ctx);
    if (after_each) after_each(p, root);
  }
  return root;
}

}  // namespace

UOp lower(UOp root, Context& ctx, const std::function<void(const Pass&, UOp)>& after_each) {
  check_skips(ctx);
  require_valid(root);  // the interpreter refuses an invalid graph: so does the compiled path
  return run_passes(root, ctx, after_each);
}

UOp lower_verified(UOp root, Context& ctx) {
  check_skips(ctx);
  return run_passes(root, ctx, {});
}

UOp lower(UOp root, const std::function<void(const Pass&, UOp)>& after_each) {
  Context ctx;
  return lower(root, ctx, after_each);
}

}  // namespace ow::lower
