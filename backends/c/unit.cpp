// render_unit (render.h): every kernel of a program in one C translation unit. One compile for
// the whole program costs far less than one per kernel (cc: one process instead of dozens, the
// prelude parsed once), and the functions are the same text render_kernel writes, so the code
// and its results do not change.
#include <optional>
#include <set>

#include "kernel_abi.h"
#include "prelude.h"
#include "render.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::backend {

std::string prelude(Target t) {
  return std::string(detail::kPrelude) + (t == Target::tcc ? detail::kPreludeTcc : detail::kPreludeCc) + abi::kFailHelper + "\n";
}

namespace {

// A function name not yet in `taken`: `name`, else name_2, name_3, ...
std::string unique_name(const std::string& name, std::set<std::string>& taken) {
  std::string n = name;
  for (int i = 2; !taken.insert(n).second; ++i) n = name + "_" + std::to_string(i);
  return n;
}

}  // namespace

RenderedUnit render_unit(const std::vector<UOp>& kernels, const RenderOptions& opts) {
  RenderedUnit u;
  u.source = prelude(opts.target);
  std::set<std::string> taken;
  for (UOp k : kernels) {
    const ArgTuple* a = k->arg.tuple();
    bool named = a && !a->empty() && (*a)[0].is<std::string>();  // else render_kernel says what is wrong
    RenderedKernel r = render_kernel(k, opts, named ? unique_name(c_identifier(kernel_name(k)), taken) : "");
    u.source += "\n" + r.function;
    u.kernels.push_back(std::move(r));
  }
  return u;
}

namespace {

// Every outermost loop of `steps` that renders (launches and such loops, to any depth), as one
// function with its inner loops nested in it; a loop that does not render is walked, and its
// inner loops are tried on their own. `outer`: the loops around them.
void add_loops(const HostProgram& p, const std::vector<HostStep>& steps, std::vector<UOp>& outer, RenderedUnit& u, std::set<std::string>& taken) {
  for (const HostStep& s : steps) {
    if (!s.is_loop()) continue;
    std::string name = unique_name("ow_loop_" + std::to_string(u.loops.size()), taken);
    if (std::optional<RenderedLoop> r = render_host_loop(p, s, outer, u.kernels, name)) {
      u.source += "\n" + r->function;
      u.loops.push_back(std::move(*r));
      continue;
    }
    taken.erase(name);
    outer.push_back(s.range);
    add_loops(p, s.body, outer, u, taken);
    outer.pop_back();
  }
}

}  // namespace

RenderedUnit render_program_unit(const HostProgram& p, const RenderOptions& opts) {
  std::vector<UOp> ks;
  for (const HostLaunch& l : p.launches) ks.push_back(l.kernel);
  RenderedUnit u = render_unit(ks, opts);
  std::set<std::string> taken;
  for (const RenderedKernel& k : u.kernels) taken.insert(k.name);
  size_t before = u.source.size();
  std::vector<UOp> outer;
  add_loops(p, p.steps, outer, u, taken);
  if (u.source.size() != before) u.source.insert(before, std::string("\n") + kHostLoopHelpers);
  return u;
}

}  // namespace ow::backend
