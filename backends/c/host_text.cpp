// render_program (render.h): the host schedule as text, one line per loop and launch, from an
// outline walk of the program (uop/host_program.h).
#include "render.h"

#include "uop/args.h"
#include "uop/host_program.h"

namespace ow::backend {

namespace {

std::string host_expr(UOp u) {
  auto bin = [&](const char* s) { return "(" + host_expr(u->src[0]) + s + host_expr(u->src[1]) + ")"; };
  switch (u->op) {
    case Ops::CONST: return to_string(u->arg);
    case Ops::RANGE: return range_name(u);
    case Ops::DEFINE_VAR: return u->arg.tuple() && u->arg.tuple()->at(0).is<std::string>() ? u->arg.tuple()->at(0).as<std::string>() : "?";
    case Ops::ADD: return bin(" + ");
    case Ops::SUB: return bin(" - ");
    case Ops::MUL: return bin(" * ");
    case Ops::IDIV: return bin(" // ");
    case Ops::MOD: return bin(" % ");
    default: return std::string(op_name(u->op)) + "(...)";
  }
}

// "for m1 in 0..3:" per loop, "k1(out, x; m1=m1)" per launch, indented by loop depth.
class Text : public HostHooks {
 public:
  std::string out;

  void loop_begin(const HostStep& loop, const HostBindings& outer) override {
    out += pad(outer) + "for " + range_name(loop.range) + " in 0.." + host_expr(loop.range->src.at(0)) + ":\n";
  }

  void before_launch(const HostLaunch& l, const HostBindings& loops) override {
    std::string bufs, binds;
    for (UOp b : l.buffers) bufs += (bufs.empty() ? "" : ", ") + buffer_name(b);
    for (const HostBind& b : l.binds) binds += (binds.empty() ? "" : ", ") + host_expr(b.node->src[0]) + "=" + host_expr(b.value);
    out += pad(loops) + l.name + "(" + bufs + (binds.empty() ? "" : "; " + binds) + ")\n";
  }

 private:
  static std::string pad(const HostBindings& loops) { return std::string(loops.size() * 2, ' '); }
};

}  // namespace

std::string render_program(UOp program) {
  Text t;
  walk_host(host_program(program), t, HostWalk::Outline);
  return t.out;
}

// The unit is rendered by the very function the runner compiles (render_unit), so what is
// shown is what runs: the same functions, names and order.
std::string show_c(UOp program, const RenderOptions& opts, bool full) {
  std::string out = "// ---- host schedule ----\n" + render_program(program) + "\n";
  HostProgram p = host_program(program);
  RenderedUnit u = render_program_unit(p, opts);
  if (full) return out + "// ---- the translation unit, as compiled (one compile for the whole program) ----\n" + u.source;
  for (const RenderedKernel& k : u.kernels)
    out += k.own_name == k.name ? "// ---- kernel " + k.name + " ----\n" + k.function + "\n"
                                : "// ---- kernel " + k.own_name + ": runs " + k.name + ", the same C but for names and comments ----\n\n";
  if (!u.loops.empty()) {  // the loop functions: the unit's text after its last kernel
    size_t at = u.source.find(kHostLoopHelpers);
    out += "// ---- host loops run in C (when no hook watches every launch) ----\n" + u.source.substr(at) + "\n";
  }
  if (!u.kernels.empty()) out += "// ---- declared before every kernel, once at the top of the translation unit (--full prints the unit as compiled) ----\n" + prelude(opts.target, u.parts);
  return out;
}

}  // namespace ow::backend
