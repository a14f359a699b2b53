// render_host_loop (render.h): a host loop whose body is only kernel launches, as a C function
// of the program's unit. A scan's step is a few small launches; walking them on the host costs
// more than the kernels. In C the loop does what the host walk does per launch, in its order:
// count the launch against the budget, evaluate every BIND and check it (its variable's bounds,
// the same value for a variable bound twice), call the kernel. Any refusal returns at once with
// the launch and iteration, and the runner words the very message the walk would have.
#include <optional>

#include "kernel_abi.h"
#include "render.h"
#include "uop/args.h"

namespace ow::backend {

namespace {

std::string c_int(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return "(" + std::to_string(v) + "LL)";
}

bool host_int(DType d) { return d == dtypes::index || d == dtypes::int64 || d.is_bool(); }

// u as C with the walk's meaning (uop/host_program.cpp eval, fold_int_alu: 64-bit wrap-around),
// or nullopt for anything else (the loop then stays on the host). ow_l_k is the loop's own
// range, ow_l_outer[j] the j-th enclosing loop's.
std::optional<std::string> host_c(UOp u, UOp loop, const std::vector<UOp>& outer) {
  if (!host_int(u->dtype)) return std::nullopt;
  if (u->op == Ops::CONST) return c_int(static_cast<int64_t>(u.const_value()));
  if (u->op == Ops::RANGE) {
    if (u == loop) return "ow_l_k";
    for (size_t j = outer.size(); j-- > 0;)
      if (outer[j] == u) return "ow_l_outer[" + std::to_string(j) + "]";
    return std::nullopt;
  }
  std::vector<std::string> s;
  for (UOp x : u->src) {
    std::optional<std::string> c = host_c(x, loop, outer);
    if (!c) return std::nullopt;
    s.push_back(*c);
  }
  auto wrap = [&](const char* op) { return "(long long)((unsigned long long)" + s[0] + " " + op + " (unsigned long long)" + s[1] + ")"; };
  bool two = s.size() == 2;
  switch (u->op) {
    case Ops::ADD: if (two) return wrap("+"); break;
    case Ops::SUB: if (two) return wrap("-"); break;
    case Ops::MUL: if (two) return wrap("*"); break;
    case Ops::NEG: if (s.size() == 1) return "(long long)(0ULL - (unsigned long long)" + s[0] + ")"; break;
    case Ops::MAX: if (two) return "ow_host_max(" + s[0] + ", " + s[1] + ")"; break;
    case Ops::CMPLT: if (two) return "(long long)(" + s[0] + " < " + s[1] + ")"; break;
    case Ops::CMPNE: if (two) return "(long long)(" + s[0] + " != " + s[1] + ")"; break;
    case Ops::CMPEQ: if (two) return "(long long)(" + s[0] + " == " + s[1] + ")"; break;
    case Ops::IDIV: case Ops::MOD: {  // only by a constant other than 0 and -1: C's / and % then agree
      if (!two || u->src[1]->op != Ops::CONST) break;
      int64_t d = static_cast<int64_t>(u->src[1].const_value());
      if (d == 0 || d == -1) break;
      return "(" + s[0] + (u->op == Ops::IDIV ? " / " : " % ") + s[1] + ")";
    }
    default: break;
  }
  return std::nullopt;
}

// One launch of the body, at position i: budget, BINDs (checked), the kernel call.
std::optional<std::string> launch_c(const HostLaunch& l, size_t i, const RenderedKernel& k, UOp loop, const std::vector<UOp>& outer) {
  std::string c = "    ow_l_err[" + std::to_string(abi::kLaunch) + "] = " + std::to_string(i) + ";  /* " + k.name + " */\n";
  c += "    if (ow_l_max && ++*ow_l_launches > ow_l_max) return " + std::to_string(abi::kBudgetExceeded) + ";\n";
  for (size_t b = 0; b < l.binds.size(); ++b) {
    std::optional<std::string> e = host_c(l.binds[b].value, loop, outer);
    if (!e) return std::nullopt;
    const ArgTuple& t = *l.binds[b].node->src[0]->arg.tuple();
    std::string x = "ow_l_x" + std::to_string(b), bad = x + " < " + c_int(t[1].as<int64_t>()) + " || " + x + " > " + c_int(t[2].as<int64_t>());
    for (size_t j = 0; j < b; ++j)
      if (var_name(l.binds[j].node->src[0]) == t[0].as<std::string>()) bad += " || " + x + " != ow_l_x" + std::to_string(j);
    c += "    " + x + " = " + *e + ";\n    if (" + bad + ") return " + std::to_string(abi::kBindRefused) + ";\n";
  }
  for (size_t j = 0; j < k.vars.size(); ++j) {
    int at = -1;
    for (size_t b = 0; b < l.binds.size(); ++b)
      if (var_name(l.binds[b].node->src[0]) == k.vars[j]) at = static_cast<int>(b);
    if (at < 0) return std::nullopt;  // unbound: the host walk's launch reports it
    c += "    ow_l_v[" + std::to_string(j) + "] = ow_l_x" + std::to_string(at) + ";\n";
  }
  return c + "    ow_l_rc = " + k.name + "(ow_l_bufs[" + std::to_string(i) + "], ow_l_v, ow_l_err);\n    if (ow_l_rc) return ow_l_rc;\n";
}

}  // namespace

const char* const kHostLoopHelpers = "static inline long long ow_host_max(long long a, long long b) { return a > b ? a : b; }\n";

std::optional<std::string> render_host_loop(const HostProgram& p, const HostStep& loop, const std::vector<UOp>& outer, const std::vector<RenderedKernel>& kernels,
                                            const std::string& name) {
  size_t binds = 1, vars = 1;
  std::string body;
  for (size_t i = 0; i < loop.body.size(); ++i) {
    const HostStep& s = loop.body[i];
    if (s.is_loop()) return std::nullopt;
    const HostLaunch& l = p.launches[s.launch];
    if (kernels[s.launch].name.rfind("ow_", 0) == 0) return std::nullopt;  // could be one of the loop's own names
    std::optional<std::string> c = launch_c(l, i, kernels[s.launch], loop.range, outer);
    if (!c) return std::nullopt;
    body += *c;
    binds = std::max(binds, l.binds.size());
    vars = std::max(vars, kernels[s.launch].vars.size());
  }
  std::string c = "int " + name + "(long long ow_l_n, const long long* ow_l_outer, void*** ow_l_bufs, long long* ow_l_launches, long long ow_l_max, long long* ow_l_err) {\n";
  c += "  long long ow_l_k, ow_l_v[" + std::to_string(vars) + "]";
  for (size_t b = 0; b < binds; ++b) c += ", ow_l_x" + std::to_string(b);
  c += ";\n  int ow_l_rc;\n  (void)ow_l_outer;\n  for (ow_l_k = 0; ow_l_k < ow_l_n; ow_l_k++) {\n    ow_l_err[" + std::to_string(abi::kIteration) + "] = ow_l_k;\n" + body + "  }\n  return 0;\n}\n";
  return c;
}

}  // namespace ow::backend
