// ow step's breakpoints: break NODE | RANGE=VALUE | poison | divergence, delete, the list.
#include <algorithm>
#include <ostream>

#include "backends/program.h"
#include "cli.h"
#include "session.h"
#include "uop/args.h"
#include "uop/error.h"
#include "uop/shape.h"

namespace ow::cli::stepping {

void Session::add_break(const std::string& arg) {
  Break b;
  b.id = next_break_;
  b.text = arg;
  if (arg == "poison") {
    if (o_.lowered) throw Error("break poison: not available with --lowered (kernels do not report poison per node); print BUFFER shows a buffer's poison mask");
    b.kind = Break::Poison;
  } else if (arg == "divergence") {
    if (!o_.lowered) throw Error("break divergence: needs --lowered (it compares compiled kernel launches with the interpreter)");
    if (!find_divergence()) return;
    b.kind = Break::Divergence;
    b.text = "divergence at launch " + std::to_string(divergent_launch_);
  } else if (arg.find('=') != std::string::npos) {
    range_break(arg, b);
  } else if (arg[0] == '%' || output_nodes_.count(arg)) {
    UOp u = find_node("break", arg);
    if (o_.lowered && u->op != Ops::KERNEL)
      throw Error("break: with --lowered only KERNEL launches are steps, and " + printable(arg) + " is a " + std::string(op_name(u->op)));
    b.kind = Break::Node;
    b.node = u.get();
    b.text = node_name(p_, u) + " " + std::string(op_name(u->op)) + (arg != node_name(p_, u) ? " (" + arg + ")" : "");
  } else {
    throw Error("break: expected %N, %NAME, an output name, RANGE=VALUE, poison or divergence, got '" + printable(arg) + "'");
  }
  ++next_break_;
  breaks_.push_back(b);
  out_ << "breakpoint " << b.id << ": " << b.text << "\n";
}

void Session::range_break(const std::string& arg, Break& b) {
  size_t eq = arg.find('=');
  std::string name = arg.substr(0, eq), val = arg.substr(eq + 1);
  if (name[0] == '%') {  // a RANGE node by its %N or the file's %NAME
    UOp u = find_node("break", name);
    if (u->op != Ops::RANGE) throw Error("break: " + name + " is " + node_name(p_, u) + " " + std::string(op_name(u->op)) + ", not a RANGE");
    name = range_name(u);
  }
  if (!range_names_.count(name))
    throw Error("break: no range named '" + printable(name) + "' (ranges: " + join({range_names_.begin(), range_names_.end()}) + ")");
  int64_t v = 0;
  size_t used = leading_number(val, v);
  if (val.empty() || used != val.size()) throw Error("break: '" + printable(val) + "' is not an integer (break RANGE=VALUE, e.g. break m1=2)");
  b.kind = Break::Range;
  if (name != arg.substr(0, eq)) b.text = name + "=" + val + " (" + arg + ")";
  b.range = name;
  b.value = v;
  b.held = std::any_of(cur_bind_.begin(), cur_bind_.end(), [&](const auto& x) { return x.second == v && range_name(x.first) == name; });
}

void Session::delete_break(const std::string& arg) {
  if (arg.empty()) {
    breaks_.clear();
    out_ << "deleted all breakpoints\n";
    return;
  }
  auto it = std::find_if(breaks_.begin(), breaks_.end(), [&](const Break& b) { return std::to_string(b.id) == arg; });
  if (it == breaks_.end()) throw Error("delete: no breakpoint " + printable(arg) + " (break lists them)");
  out_ << "deleted breakpoint " << arg << "\n";
  breaks_.erase(it);
}

bool Session::find_divergence() {
  if (!divergence_checked_) {
    divergence_checked_ = true;
    interp::BufferMap copy = interp::copy_buffers(o_.initial);
    backend::RunOptions ro;
    ro.backend = backend::Backend::Check;
    ro.compiler = backend::Backend::Tcc;
    int64_t ok = 0;
    ro.on_launch = [&](UOp, const std::vector<std::pair<std::string, int64_t>>&) { ++ok; };
    try {
      backend::run_program(root_, copy, ro);
      out_ << "break divergence: a checked run found none: all " << ok << " kernel launches store the same bits with tcc as with the interpreter; breakpoint not set\n";
      return false;
    } catch (const backend::CheckMismatch& e) {  // a lowered program: only a kernel can diverge
      std::string what = e.what();
      divergent_launch_ = ok + 1;  // on_launch runs after a launch's comparison succeeded
      divergence_ = what.substr(0, what.find('\n'));
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& e) {
      out_ << "break divergence: the checked run failed before any divergence: " << e.what() << "\n";
      return false;
    }
  }
  if (divergent_launch_ < 0) {
    out_ << "break divergence: no divergence (checked already)\n";
    return false;
  }
  if (static_cast<int64_t>(launches_) >= divergent_launch_) out_ << "note: launch " << divergent_launch_ << " has already run (current: " << launches_ << ")\n";
  out_ << "a checked run diverges at kernel launch " << divergent_launch_ << ": " << divergence_ << "\n";
  return true;
}

void Session::list_breaks() {
  if (breaks_.empty()) out_ << "no breakpoints\n";
  for (const Break& b : breaks_) out_ << "breakpoint " << b.id << ": " << b.text << "\n";
}

}  // namespace ow::cli::stepping
