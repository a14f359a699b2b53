// render_unit (render.h): every kernel of a program in one C translation unit. One compile for
// the whole program costs far less than one per kernel (cc: one process instead of dozens, the
// prelude parsed once), and the functions are the same text render_kernel writes, so the code
// and its results do not change.
#include <optional>
#include <set>

#include "kernel_abi.h"
#include "prelude.h"
#include "render.h"
#include "uop/error.h"

namespace ow::backend {

std::string_view target_name(Target t) { return t == Target::tcc ? "tcc" : "cc"; }

Target target_named(const std::string& compiler) {
  if (compiler == "tcc") return Target::tcc;
  if (compiler == "cc") return Target::cc;
  throw Error("no C compiler '" + compiler + "' to render for (tcc or cc)");
}

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

// Every occurrence of `from` in s replaced by `to`; how many.
int replace_all(std::string& s, const std::string& from, const std::string& to) {
  int n = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()), ++n) s.replace(at, from.size(), to);
  return n;
}

// k's function renamed to `to`: its signature (the line render.cpp writes; a two-thread kernel
// has it twice, cc's and tcc's) and its helpers' names (parallel.cpp: ow_par_<name>_...).
void rename_function(RenderedKernel& k, const std::string& to, const RenderOptions& opts) {
  std::string sig = "int " + k.name + "(void** bufs, const long long* vars, long long* err) {\n";
  std::string renamed = "int " + to + "(void** bufs, const long long* vars, long long* err) {\n";
  if (replace_all(k.function, sig, renamed) == 0) throw InternalError("render_unit: no signature of " + k.name + " in its function");
  replace_all(k.function, "ow_par_" + k.name + "_", "ow_par_" + to + "_");
  k.source = prelude(opts.target) + k.function;
  k.name = to;
}

}  // namespace

RenderedUnit render_unit(const std::vector<UOp>& kernels, const RenderOptions& opts) {
  RenderedUnit u;
  u.source = prelude(opts.target);
  std::set<std::string> taken;
  for (UOp k : kernels) {
    RenderedKernel r = render_kernel(k, opts);
    if (std::string n = unique_name(r.name, taken); n != r.name) rename_function(r, n, opts);
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
