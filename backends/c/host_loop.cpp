// render_host_loop (render.h): a host loop whose body is kernel launches and host loops of the
// same kind, to any depth, as one C function of the program's unit with nested for-loops. A
// scan's step is a few small launches; walking them on the host costs more than the kernels, and
// an outer loop walked on the host would still pay that per iteration of its inner loops. In C
// the nest does what the host walk does per launch, in its order: count the launch against the
// budget, evaluate every BIND and check it (its variable's bounds, the same value for a variable
// bound twice), call the kernel; an inner loop's extent is evaluated once as it starts. Any
// refusal returns at once with the launch's position in the nest and every loop's value, and the
// runner words the very message the walk would have.
#include <algorithm>
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

// The ranges a BIND or an extent may read: the nest's loops open here (nest[d] is ow_l_k<d>,
// nest[0] the function's own loop), then the walked loops around the nest (ow_l_outer[j]).
struct Scope {
  const std::vector<UOp>& outer;
  std::vector<UOp> nest;
};

// A range as C, searched innermost first as the walk's bindings are; nullopt if not in scope.
std::optional<std::string> range_c(UOp u, const Scope& sc) {
  for (size_t d = sc.nest.size(); d-- > 0;)
    if (sc.nest[d] == u) return "ow_l_k" + std::to_string(d);
  for (size_t j = sc.outer.size(); j-- > 0;)
    if (sc.outer[j] == u) return "ow_l_outer[" + std::to_string(j) + "]";
  return std::nullopt;
}

// u as C with the walk's meaning (uop/host_program.cpp eval, fold_int_alu: 64-bit wrap-around),
// or nullopt for anything else (the loop then stays on the host).
std::optional<std::string> host_c(UOp u, const Scope& sc) {
  if (!host_int(u->dtype)) return std::nullopt;
  if (u->op == Ops::CONST) return c_int(static_cast<int64_t>(u.const_value()));
  if (u->op == Ops::RANGE) return range_c(u, sc);
  std::vector<std::string> s;
  for (UOp x : u->src) {
    std::optional<std::string> c = host_c(x, sc);
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

// The nest as C, built depth first: the statements, the launches in the order they are numbered
// (err[abi::kLaunch], bufs[i], ran[i]) and what the function must declare.
class Nest {
 public:
  Nest(const HostProgram& p, const std::vector<RenderedKernel>& kernels, const std::vector<UOp>& outer) : p_(p), kernels_(kernels), scope_{outer, {}} {}

  // The loop at depth d = the loops open here: its extent (d = 0: the parameter ow_l_n, which
  // the walk evaluated), then its iterations, each recording its value for the error report.
  bool loop(const HostStep& s, const std::string& pad) {
    size_t d = scope_.nest.size();
    std::string k = "ow_l_k" + std::to_string(d), n = d == 0 ? "ow_l_n" : "ow_l_n" + std::to_string(d);
    if (d > 0) {
      std::optional<std::string> e = host_c(s.range->src[0], scope_);
      if (!e) return false;
      body_ += pad + n + " = " + *e + ";\n";
    }
    body_ += pad + "for (" + k + " = 0; " + k + " < " + n + "; " + k + "++) {\n";
    body_ += pad + "  ow_l_err[" + std::to_string(abi::kIteration + d) + "] = " + k + ";\n";
    scope_.nest.push_back(s.range);
    depth_ = std::max(depth_, scope_.nest.size());
    for (const HostStep& x : s.body)
      if (!(x.is_loop() ? loop(x, pad + "  ") : launch(x.launch, pad + "  "))) return false;
    scope_.nest.pop_back();
    body_ += pad + "}\n";
    return true;
  }

  RenderedLoop rendered(const HostStep& s, const std::vector<UOp>& outer, const std::string& name) {
    std::string c = "int " + name + "(long long ow_l_n, const long long* ow_l_outer, void*** ow_l_bufs, long long* ow_l_launches, long long ow_l_max, long long* ow_l_err, unsigned char* ow_l_ran) {\n";
    c += "  long long ow_l_v[" + std::to_string(vars_) + "]";
    for (size_t d = 0; d < depth_; ++d) c += ", ow_l_k" + std::to_string(d) + (d ? ", ow_l_n" + std::to_string(d) : "");
    for (size_t b = 0; b < binds_; ++b) c += ", ow_l_x" + std::to_string(b);
    c += ";\n  int ow_l_rc;\n  (void)ow_l_outer;\n" + body_ + "  return 0;\n}\n";
    return RenderedLoop{&s, name, outer, c, std::move(launches_), depth_};
  }

 private:
  const HostProgram& p_;
  const std::vector<RenderedKernel>& kernels_;
  Scope scope_;
  std::string body_;
  std::vector<NestLaunch> launches_;
  size_t depth_ = 0, binds_ = 1, vars_ = 1;

  // One launch, the nest's i-th: budget, BINDs (checked), the kernel call.
  bool launch(size_t li, const std::string& pad) {
    const RenderedKernel& k = kernels_[li];
    if (k.name.rfind("ow_", 0) == 0) return false;  // could be one of the loop's own names
    const HostLaunch& l = p_.launches[li];
    std::string i = std::to_string(launches_.size());
    std::string c = pad + "ow_l_err[" + std::to_string(abi::kLaunch) + "] = " + i + ";  /* " + k.name + " */\n";
    c += pad + "if (ow_l_max && ++*ow_l_launches > ow_l_max) return " + std::to_string(abi::kBudgetExceeded) + ";\n";
    std::optional<std::string> b = binds_c(l, k, pad);
    if (!b) return false;
    body_ += c + *b + pad + "ow_l_rc = " + k.name + "(ow_l_bufs[" + i + "], ow_l_v, ow_l_err);\n" + pad + "if (ow_l_rc) return ow_l_rc;\n" + pad + "ow_l_ran[" + i + "] = 1;\n";
    launches_.push_back(NestLaunch{li, scope_.nest});
    binds_ = std::max(binds_, l.binds.size());
    vars_ = std::max(vars_, k.vars.size());
    return true;
  }

  // Every BIND of l evaluated and checked in order, then the kernel's variables from them.
  std::optional<std::string> binds_c(const HostLaunch& l, const RenderedKernel& k, const std::string& pad) const {
    std::string c;
    for (size_t b = 0; b < l.binds.size(); ++b) {
      std::optional<std::string> e = host_c(l.binds[b].value, scope_);
      if (!e) return std::nullopt;
      const ArgTuple& t = *l.binds[b].node->src[0]->arg.tuple();
      std::string x = "ow_l_x" + std::to_string(b), bad = x + " < " + c_int(t[1].as<int64_t>()) + " || " + x + " > " + c_int(t[2].as<int64_t>());
      for (size_t j = 0; j < b; ++j)
        if (var_name(l.binds[j].node->src[0]) == t[0].as<std::string>()) bad += " || " + x + " != ow_l_x" + std::to_string(j);
      c += pad + x + " = " + *e + ";\n" + pad + "if (" + bad + ") return " + std::to_string(abi::kBindRefused) + ";\n";
    }
    for (size_t j = 0; j < k.vars.size(); ++j) {
      int at = -1;
      for (size_t b = 0; b < l.binds.size(); ++b)
        if (var_name(l.binds[b].node->src[0]) == k.vars[j]) at = static_cast<int>(b);
      if (at < 0) return std::nullopt;  // unbound: the host walk's launch reports it
      c += pad + "ow_l_v[" + std::to_string(j) + "] = ow_l_x" + std::to_string(at) + ";\n";
    }
    return c;
  }
};

}  // namespace

const char* const kHostLoopHelpers = "static inline long long ow_host_max(long long a, long long b) { return a > b ? a : b; }\n";

std::optional<RenderedLoop> render_host_loop(const HostProgram& p, const HostStep& loop, const std::vector<UOp>& outer, const std::vector<RenderedKernel>& kernels,
                                             const std::string& name) {
  Nest n(p, kernels, outer);
  if (!n.loop(loop, "  ")) return std::nullopt;
  return n.rendered(loop, outer, name);
}

}  // namespace ow::backend
