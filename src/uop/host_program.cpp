// The host program of a lowered graph and its walk (host_program.h).
#include "uop/host_program.h"

#include <algorithm>
#include <set>

#include "uop/args.h"
#include "uop/error.h"
#include "uop/symbolic.h"
#include "uop/text.h"

namespace ow {

namespace {

// Reads the graph as the host runs it: GROUP and SINK in order, END as loops, an AFTER's
// dependencies (once: the outputs share one anchor) and then nothing of its value, which is a
// view the host reads at the end.
class Builder {
 public:
  explicit Builder(HostProgram& p) : p_(p) {}

  void add(UOp u, std::vector<HostStep>& into) {
    switch (u->op) {
      case Ops::GROUP: case Ops::SINK:
        for (UOp s : u->src) add(s, into);
        return;
      case Ops::END: return loop(u, 1, into);
      case Ops::KERNEL: return into.push_back(HostStep{launch_of(u), UOp(), {}});
      case Ops::AFTER:
        if (!afters_.insert(u.get()).second) return;
        for (size_t i = 1; i < u->src.size(); ++i) add(u->src[i], into);
        return;
      default: return;  // views and values: nothing to run
    }
  }

 private:
  HostProgram& p_;
  std::set<const UOpNode*> afters_;
  std::map<const UOpNode*, size_t> launches_;

  void loop(UOp end, size_t i, std::vector<HostStep>& into) {
    if (i == end->src.size()) return add(end->src[0], into);
    HostStep s{0, end->src[i], {}};
    loop(end, i + 1, s.body);
    into.push_back(std::move(s));
  }

  size_t launch_of(UOp k) {
    auto [it, fresh] = launches_.emplace(k.get(), p_.launches.size());
    if (!fresh) return it->second;
    HostLaunch l{k, "kernel", {}, {}, p_.launches.size()};
    if (const ArgTuple* t = k->arg.tuple(); t && !t->empty() && (*t)[0].is<std::string>()) l.name = (*t)[0].as<std::string>();
    for (size_t i = 1; i < k->src.size(); ++i) {
      UOp s = k->src[i];
      if (s->op == Ops::BUFFER) l.buffers.push_back(s);
      else if (s->op == Ops::BIND) l.binds.push_back(HostBind{s, s->src[1]});
      else throw Error(std::string("a KERNEL source must be a BUFFER or a BIND, got ") + std::string(op_name(s->op)));
    }
    p_.launches.push_back(std::move(l));
    return it->second;
  }
};

std::vector<HostOutput> outputs_of(UOp program) {
  std::vector<HostOutput> outs;
  std::vector<UOp> srcs = program->op == Ops::SINK ? program->src : std::vector<UOp>{program};
  for (size_t i = 0; i < srcs.size(); ++i) {
    UOp o = srcs[i];
    if (o->dtype.is_void()) continue;
    while (o->op == Ops::AFTER) o = o->src[0];
    UOp b = o;
    while (b->op == Ops::RESHAPE) b = b->src[0];
    if (b->op != Ops::BUFFER) throw Error("a program output must be a buffer seen through RESHAPE, got " + std::string(op_name(b->op)));
    HostOutput out{output_name(program, i), b, {}};
    for (UOp d : o->shape.dims) out.shape.push_back(static_cast<int64_t>(d.const_value()));
    outs.push_back(std::move(out));
  }
  return outs;
}

// Host-side index math: constants, the enclosing loops' ranges, integer ALU.
int64_t host_eval(UOp u, const HostBindings& b) {
  if (u->op == Ops::CONST) return static_cast<int64_t>(u.const_value());
  if (u->op == Ops::RANGE) {
    for (auto it = b.rbegin(); it != b.rend(); ++it)
      if (it->first == u) return it->second;
    throw Error("host loop variable " + range_name(u) + " is used outside its loop");
  }
  int64_t v[4];  // an ALU op has at most 3 operands
  if (u->src.size() > 4) throw Error(std::string("cannot evaluate ") + std::string(op_name(u->op)) + " in a host-side index expression");
  for (size_t i = 0; i < u->src.size(); ++i) v[i] = host_eval(u->src[i], b);
  int64_t out;
  if (!is_alu(u->op) || !fold_int_alu(u->op, u->dtype, v, u->src.size(), out))
    throw Error(std::string("cannot evaluate ") + std::string(op_name(u->op)) + " in a host-side index expression");
  return out;
}

// What the walk checks of a BIND, read once from its DEFINE_VAR: the bounds, and the earlier
// BIND of the same variable in the launch (-1: none), which must get the same value.
struct BindCheck {
  int64_t lo, hi;
  int earlier;
};

std::vector<std::vector<BindCheck>> bind_checks(const HostProgram& p) {
  std::vector<std::vector<BindCheck>> out;
  for (const HostLaunch& l : p.launches) {
    std::vector<BindCheck> cs;
    for (size_t i = 0; i < l.binds.size(); ++i) {
      const ArgTuple& t = *l.binds[i].node->src[0]->arg.tuple();
      BindCheck c{t[1].as<int64_t>(), t[2].as<int64_t>(), -1};
      for (size_t j = 0; j < i; ++j)
        if (var_name(l.binds[j].node->src[0]) == t[0].as<std::string>()) c.earlier = static_cast<int>(j);
      cs.push_back(c);
    }
    out.push_back(std::move(cs));
  }
  return out;
}

// Runs once per launch, so it allocates nothing there: the BIND checks are precomputed and the
// values go into one scratch array.
class Walker {
 public:
  Walker(const HostProgram& p, HostHooks& h, HostWalk mode) : p_(p), h_(h), run_(mode == HostWalk::Run), checks_(bind_checks(p)) {
    size_t most = 0;
    for (const HostLaunch& l : p.launches) most = std::max(most, l.binds.size());
    values_.resize(most);
  }

  void steps(const std::vector<HostStep>& s) {
    for (const HostStep& x : s) x.is_loop() ? loop(x) : launch(p_.launches[x.launch]);
  }

 private:
  const HostProgram& p_;
  HostHooks& h_;
  bool run_;
  std::vector<std::vector<BindCheck>> checks_;  // per launch, per BIND
  std::vector<int64_t> values_;                 // the current launch's BIND values
  HostBindings bindings_;

  void loop(const HostStep& s) {
    h_.loop_begin(s, bindings_);
    int64_t n = run_ ? eval(s.range->src[0]) : 1;
    if (!run_ || !h_.run_loop(s, n, bindings_)) {
      bindings_.push_back({s.range, 0});
      for (int64_t k = 0; k < n; ++k) {
        bindings_.back().second = k;
        steps(s.body);
      }
      bindings_.pop_back();
    }
    h_.loop_end(s, bindings_);
  }

  void launch(const HostLaunch& l) {
    h_.before_launch(l, bindings_);
    if (run_) {
      bind_values(l);
      h_.launch(l, values_.data(), bindings_);
    }
    h_.after_launch(l, bindings_);
  }

  void bind_values(const HostLaunch& l) {
    const std::vector<BindCheck>& cs = checks_[l.index];
    for (size_t i = 0; i < l.binds.size(); ++i) {
      int64_t x = values_[i] = eval(l.binds[i].value);
      const BindCheck& c = cs[i];
      if (x < c.lo || x > c.hi || (c.earlier >= 0 && values_[static_cast<size_t>(c.earlier)] != x)) refuse(l, i);
    }
  }

  // The refusal's message (only on this error path is a map built).
  [[noreturn]] void refuse(const HostLaunch& l, size_t) { throw Error(bind_error(p_, l, bindings_)); }

  int64_t eval(UOp u) { return host_eval(u, bindings_); }
};

}  // namespace

HostProgram host_program(UOp lowered) {
  HostProgram p;
  p.root = lowered;
  Builder(p).add(lowered, p.steps);
  p.outputs = outputs_of(lowered);
  return p;
}

void walk_host(const HostProgram& program, HostHooks& hooks, HostWalk mode) {
  hooks.begin_run();
  Walker(program, hooks, mode).steps(program.steps);
  hooks.end_run();
}

std::string bind_refusal(UOp bind, int64_t value, const HostVars& bound) {
  UOp var = bind->src[0];
  const ArgTuple& t = *var->arg.tuple();
  const std::string& name = t[0].as<std::string>();
  int64_t lo = t[1].as<int64_t>(), hi = t[2].as<int64_t>();
  if (value < lo || value > hi)
    return "variable '" + name + "' bound to " + std::to_string(value) + ", outside its bounds [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (auto it = bound.find(name); it != bound.end() && it->second != value) return "variable '" + name + "' is bound twice with different values";
  return "";
}

std::string bind_error(const HostProgram& p, const HostLaunch& l, const HostBindings& b) {
  HostVars bound;
  for (const HostBind& x : l.binds) {
    int64_t v = host_eval(x.value, b);
    if (std::string why = bind_refusal(x.node, v, bound); !why.empty())
      return why + "\n  at " + number_graph(p.root).line(x.node) + "\n  with " + bindings_text(b);
    bound.emplace(var_name(x.node->src[0]), v);
  }
  return "";
}

HostVars host_vars(const HostLaunch& launch, const int64_t* values) {
  HostVars v;
  for (size_t i = 0; i < launch.binds.size(); ++i) v.emplace(var_name(launch.binds[i].node->src[0]), values[i]);
  return v;
}

// Past 16 ranges (1,000 nested loops), the 4 outermost and the 8 innermost: the line stays
// readable and the innermost, where an error happens, are all there.
std::string bindings_text(const HostBindings& b) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.size() > 16 && i == 4) {
      s += ", ... (" + std::to_string(b.size() - 12) + " more)";
      i = b.size() - 9;
      continue;
    }
    s += (s.empty() ? "" : ", ") + range_name(b[i].first) + "=" + std::to_string(b[i].second);
  }
  return s.empty() ? "no ranges bound" : s;
}

}  // namespace ow
