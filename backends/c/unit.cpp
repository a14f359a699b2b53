// render_unit (render.h): every kernel of a program in one C translation unit. One compile for
// the whole program costs far less than one per kernel (cc: one process instead of dozens, the
// prelude parsed once), and the functions are the same text render_kernel writes, so the code
// and its results do not change. Kernels whose C differs only in their names and comments (the
// layers of a deep model: the same bodies over other buffers) share one function.
#include <array>
#include <cctype>
#include <optional>
#include <set>
#include <unordered_map>

#include "c_code.h"

#include "kernel_abi.h"
#include "prelude.h"
#include "render.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::backend {

const std::string& prelude(Target t, PreludeParts parts) {
  static const auto all = [] {
    std::array<std::string, 8> v;  // [target][narrow][threefry]
    for (int i = 0; i < 8; ++i)
      v[i] = std::string(detail::kPrelude) + (i & 2 ? detail::kPreludeNarrow : "") + (i & 1 ? detail::kPreludeThreefry : "") +
             (i & 4 ? detail::kPreludeTcc : detail::kPreludeCc) + abi::kFailHelper + "\n";
    return v;
  }();
  return all[(t == Target::tcc ? 4 : 0) + (parts.narrow ? 2 : 0) + (parts.threefry ? 1 : 0)];
}

namespace {

// A function name not yet in `taken`: `name`, else name_2, name_3, ...
std::string unique_name(const std::string& name, std::set<std::string>& taken) {
  std::string n = name;
  for (int i = 2; !taken.insert(n).second; ++i) n = name + "_" + std::to_string(i);
  return n;
}

// What decides what r's function computes: its code (code_of: no comments) without its name,
// or none when the name is an identifier of the code more than once. Two kernels with the same
// body may run one function: the buffers and variables come in through its arguments, the node
// numbers of its errors are in the text.
std::optional<std::string> body_of(const RenderedKernel& r) {
  std::string code = code_of(r.function);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::optional<size_t> at;
  for (size_t i = code.find(r.name); i != std::string::npos; i = code.find(r.name, i + 1)) {
    bool whole = (i == 0 || !word(code[i - 1])) && (i + r.name.size() == code.size() || !word(code[i + r.name.size()]));
    if (whole && at) return std::nullopt;
    if (whole) at = i;
  }
  if (!at) return std::nullopt;
  return code.erase(*at, r.name.size());
}

}  // namespace

RenderedUnit render_unit(const std::vector<UOp>& kernels, const RenderOptions& opts) {
  RenderedUnit u;
  std::set<std::string> taken;
  std::unordered_map<std::string, size_t> first;  // body -> the kernel whose function it is
  for (UOp k : kernels) {
    const ArgTuple* a = k->arg.tuple();
    bool named = a && !a->empty() && (*a)[0].is<std::string>();  // else render_kernel says what is wrong
    RenderedKernel r = render_kernel(k, opts, named ? unique_name(c_identifier(kernel_name(k)), taken) : "");
    std::optional<std::string> body = kernels.size() > 1 ? body_of(r) : std::nullopt;
    auto seen = body ? first.find(*body) : first.end();
    if (seen == first.end()) {
      if (body) first.emplace(std::move(*body), u.kernels.size());
      u.source += "\n" + r.function;
    } else {  // its own params, variables and error nodes (numbered alike: the text says so), the other's function
      const RenderedKernel& f = u.kernels[seen->second];
      u.source += "\n// " + r.own_name + ": runs " + f.name + ", the same C but for names and comments\n";
      r.name = f.name, r.function = f.function, r.source = f.source;
      ++u.shared;
    }
    u.parts |= r.parts;
    u.kernels.push_back(std::move(r));
  }
  u.source.insert(0, prelude(opts.target, u.parts));
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
